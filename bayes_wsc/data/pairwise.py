"""Items with features, and must-link / cannot-link constraints from several experts (seed 002).

Two tables describe the data:

* **items**: one row per item, an id column and numeric feature columns. The
  features are standardized (training mean and standard deviation) by
  default; the same scaling is applied to new items at prediction time.
* **constraints**: rows ``expert, i, j, link`` with ``link`` 1 (must-link:
  same cluster) or 0 (cannot-link), ``i`` and ``j`` item ids; or, instead,
  **expert labels**: rows ``expert, id, label``, a partial clustering by each
  expert, turned here into every pairwise constraint it implies (same label:
  must-link, different labels: cannot-link).

The container validates once (every failure is a one-line `InputError`
naming the table, column, row and value) and keeps the sufficient
statistics: the unique item pairs, each computed once however many experts
rated it, and one cell per (pair, expert) with that expert's link.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from bayes_wsc.data.tables import (ItemFeatures, index_array, key_column, numeric_column, read_items, require_columns,
                                   require_rows)
from bayes_wsc.errors import InputError

CONSTRAINT_COLUMNS = ("expert", "i", "j", "link")
LABEL_COLUMNS = ("expert", "id", "label")


@dataclass
class PairwiseConstraints(ItemFeatures):
    """Features of n items and the constraints of M experts on their pairs.

    Attributes
    ----------
    item_ids, features, scaling : the items (`ItemFeatures`).
    expert_names : (M,) expert names as text, in order of first appearance.
    pairs : (P, 2) item indices of each unique pair, i < j.
    cell_pair, cell_expert : (N,) the pair and the expert of each constraint (one per pair and expert).
    link : (N,) 1 = must-link, 0 = cannot-link.
    settings : how the tables were read (kept in the fit so that it can be rebuilt).
    """

    expert_names: np.ndarray
    pairs: np.ndarray
    cell_pair: np.ndarray
    cell_expert: np.ndarray
    link: np.ndarray
    settings: dict = field(default_factory=dict)

    def __post_init__(self):
        super().__post_init__()
        self.expert_names = np.asarray(self.expert_names).astype(str)
        self.pairs = index_array(self.pairs, "pairs").reshape(-1, 2)
        self.cell_pair = index_array(self.cell_pair, "cell pairs")
        self.cell_expert = index_array(self.cell_expert, "cell experts")
        self.link = np.asarray(self.link, dtype=np.int8)
        n = self.item_ids.size
        if self.pairs.size == 0 or self.link.size == 0:
            raise InputError("there are no constraints")
        if (self.pairs < 0).any() or (self.pairs >= n).any() or (self.pairs[:, 0] >= self.pairs[:, 1]).any():
            raise InputError("pairs must hold two different item indices, the smaller first")
        sizes = {self.cell_pair.size, self.cell_expert.size, self.link.size}
        if len(sizes) != 1:
            raise InputError("cell_pair, cell_expert and link must have the same length")
        if (self.cell_pair < 0).any() or (self.cell_pair >= len(self.pairs)).any():
            raise InputError("cell_pair refers to a pair that does not exist")
        if (self.cell_expert < 0).any() or (self.cell_expert >= self.expert_names.size).any():
            raise InputError("cell_expert refers to an expert that does not exist")
        if not np.isin(self.link, (0, 1)).all():
            raise InputError("link must be 0 (cannot-link) or 1 (must-link)")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_frames(
        cls,
        items: pd.DataFrame,
        constraints: pd.DataFrame | None = None,
        expert_labels: pd.DataFrame | None = None,
        *,
        id_col: str = "id",
        features: Sequence[str] | None = None,
        standardize: bool = True,
        max_pairs_per_expert: int | None = None,
        seed: int | None = 0,
    ) -> PairwiseConstraints:
        """Validate the items and either the constraints or the expert labels (exactly one).

        features : feature columns (default: every items column except `id_col`).

        max_pairs_per_expert : with expert labels, keep at most this many of each expert's
            implied pairs, drawn at random with `seed` (an expert who labels m items implies
            m (m - 1) / 2 pairs; all are kept by default).
        """
        if (constraints is None) == (expert_labels is None):
            raise InputError("give either constraints (expert, i, j, link) or expert labels (expert, id, label), "
                             "not both and not neither")
        if max_pairs_per_expert is not None and (isinstance(max_pairs_per_expert, bool)
                                                 or int(max_pairs_per_expert) != max_pairs_per_expert
                                                 or max_pairs_per_expert < 1):
            raise InputError(f"max_pairs_per_expert must be a positive whole number, got {max_pairs_per_expert!r}")
        item_ids, scaling, matrix = read_items(items, id_col, features, standardize)
        index = pd.Index(item_ids)
        if constraints is not None:
            source = "constraints"
            experts, lo, hi, link = _read_constraints(constraints, index)
        else:
            source = "expert labels"
            experts, lo, hi, link = _pairs_from_labels(expert_labels, index, max_pairs_per_expert, seed)
        expert_names = pd.unique(experts)
        expert_code = pd.Index(expert_names).get_indexer(experts)
        pair_key, cell_pair = np.unique(lo * len(item_ids) + hi, return_inverse=True)
        pairs = np.stack(np.divmod(pair_key, len(item_ids)), axis=1)
        settings = {"id_col": id_col, "features": list(scaling.names), "standardize": bool(standardize),
                    "source": source, "max_pairs_per_expert": max_pairs_per_expert,
                    "seed": seed if max_pairs_per_expert is not None else None}
        return cls(item_ids, matrix, scaling, np.asarray(expert_names), pairs, cell_pair, expert_code, link,
                   settings)

    # ------------------------------------------------------------------ views (and `ItemFeatures`')
    @property
    def n_experts(self) -> int:
        return self.expert_names.size

    @property
    def n_pairs(self) -> int:
        return self.pairs.shape[0]

    @property
    def n_constraints(self) -> int:
        return self.link.size

    @property
    def linked_items(self) -> np.ndarray:
        """Indices of the items that appear in at least one constraint (sorted)."""
        return np.unique(self.pairs)

    @property
    def coords(self) -> dict[str, list]:
        return {"item": list(self.item_ids), "feature": self.feature_names, "expert": list(self.expert_names)}

    def expert_counts(self) -> pd.DataFrame:
        """Per expert: the number of must-links, cannot-links and pairs rated."""
        must = np.bincount(self.cell_expert, weights=self.link, minlength=self.n_experts).astype(np.int64)
        total = np.bincount(self.cell_expert, minlength=self.n_experts)
        return pd.DataFrame({"must_link": must, "cannot_link": total - must, "pairs": total},
                            index=pd.Index(self.expert_names, name="expert"))

    def link_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """(P, M) numbers of must-links and of cannot-links that each expert gave each pair."""
        return link_counts(self.cell_pair, self.cell_expert, self.link, self.n_pairs, self.n_experts)

    def pair_votes(self) -> np.ndarray:
        """(P, 2) counts over experts of cannot-links (column 0) and must-links (column 1) per pair."""
        must, cannot = self.link_counts()
        return np.stack([cannot.sum(axis=1), must.sum(axis=1)], axis=1).astype(np.int64)

    def to_frame(self) -> pd.DataFrame:
        """The constraints as rows expert, i, j, link (item ids), one per pair and expert."""
        return pd.DataFrame({
            "expert": self.expert_names[self.cell_expert],
            "i": self.item_ids[self.pairs[self.cell_pair, 0]],
            "j": self.item_ids[self.pairs[self.cell_pair, 1]],
            "link": self.link.astype(np.int64),
        })


def link_counts(cell_pair, cell_expert, link, n_pairs: int, n_experts: int) -> tuple[np.ndarray, np.ndarray]:
    """(P, M) numbers of must-links and of cannot-links that each expert gave each pair, from one row per
    (pair, expert) cell."""
    must = np.zeros((n_pairs, n_experts))
    cannot = np.zeros((n_pairs, n_experts))
    np.add.at(must, (cell_pair, cell_expert), link)
    np.add.at(cannot, (cell_pair, cell_expert), 1 - np.asarray(link))
    return must, cannot


# ---------------------------------------------------------------------- reading
def _item_index(frame: pd.DataFrame, column: str, index: pd.Index, what: str) -> np.ndarray:
    ids = key_column(frame, column, what)
    pos = index.get_indexer(ids)
    if (pos < 0).any():
        row = int(np.flatnonzero(pos < 0)[0])
        raise InputError(f"{what} column {column!r} has item id {ids.iloc[row]!r} (row {row + 1}), "
                         "which is not in items")
    return pos.astype(np.int64)


def _read_constraints(frame: pd.DataFrame, index: pd.Index):
    what = "constraints"
    require_rows(frame, what)
    require_columns(frame, CONSTRAINT_COLUMNS, what)
    experts = key_column(frame, "expert", what).to_numpy()
    i = _item_index(frame, "i", index, what)
    j = _item_index(frame, "j", index, what)
    link = numeric_column(frame, "link", what)
    bad = ~np.isin(link, (0.0, 1.0))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(f"{what} column 'link' has value {link[row]:g} (row {row + 1}); "
                         "it must be 1 (must-link) or 0 (cannot-link)")
    same = i == j
    if same.any():
        row = int(np.flatnonzero(same)[0])
        raise InputError(f"{what} row {row + 1} pairs item {index[i[row]]!r} with itself (i = j)")
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    keys = pd.DataFrame({"expert": experts, "lo": lo, "hi": hi})
    repeated = keys.duplicated(keep="first").to_numpy()
    if repeated.any():
        row = int(np.flatnonzero(repeated)[0])
        match = (keys["expert"].to_numpy() == experts[row]) & (lo == lo[row]) & (hi == hi[row])
        first = int(np.flatnonzero(match)[0])
        pair = (index[lo[row]], index[hi[row]])
        if link[first] != link[row]:
            kinds = {1.0: "must-link", 0.0: "cannot-link"}
            raise InputError(f"{what}: expert {experts[row]!r} gives pair {pair} both {kinds[link[first]]} "
                             f"(row {first + 1}) and {kinds[link[row]]} (row {row + 1})")
        raise InputError(f"{what}: expert {experts[row]!r} rates pair {pair} twice (rows {first + 1} and "
                         f"{row + 1}); keep one row per expert and pair")
    return experts, lo, hi, link.astype(np.int8)


def _pairs_from_labels(frame: pd.DataFrame, index: pd.Index, max_pairs: int | None, seed):
    """Every pair of items that an expert labelled: must-link when the labels agree."""
    what = "expert labels"
    require_rows(frame, what)
    require_columns(frame, LABEL_COLUMNS, what)
    experts = key_column(frame, "expert", what).to_numpy()
    item = _item_index(frame, "id", index, what)
    raw_label = frame["label"]
    if raw_label.isna().any():
        row = int(np.flatnonzero(raw_label.isna().to_numpy())[0])
        raise InputError(f"{what} column 'label' has a missing value (row {row + 1})")
    labels = raw_label.astype(str).to_numpy()
    keys = pd.DataFrame({"expert": experts, "item": item, "label": labels})
    repeated = keys.duplicated(["expert", "item"], keep=False).to_numpy()
    if repeated.any():
        rows = np.flatnonzero(repeated)
        first = int(rows[0])
        clash = rows[(experts[rows] == experts[first]) & (item[rows] == item[first])
                     & (labels[rows] != labels[first])]
        if clash.size:
            raise InputError(f"{what}: expert {experts[first]!r} gives item {index[item[first]]!r} two labels, "
                             f"{labels[first]!r} (row {first + 1}) and {labels[clash[0]]!r} (row {clash[0] + 1})")
        keys = keys.drop_duplicates(["expert", "item"])  # the same label twice implies the same pairs
    rng = np.random.default_rng(seed)
    out_experts, out_lo, out_hi, out_link = [], [], [], []
    for name, rows in keys.groupby("expert", sort=False).indices.items():
        members = keys["item"].to_numpy()[rows]
        member_labels = keys["label"].to_numpy()[rows]
        m = members.size
        if m < 2:
            raise InputError(f"{what}: expert {name!r} labels only one item, which implies no pair; "
                             "drop the expert or label more items")
        a, b = np.triu_indices(m, 1)
        if max_pairs is not None and a.size > max_pairs:
            keep = np.sort(rng.choice(a.size, int(max_pairs), replace=False))
            a, b = a[keep], b[keep]
        lo, hi = np.minimum(members[a], members[b]), np.maximum(members[a], members[b])
        out_experts.append(np.full(a.size, name, dtype=object))
        out_lo.append(lo)
        out_hi.append(hi)
        out_link.append((member_labels[a] == member_labels[b]).astype(np.int8))
    return (np.concatenate(out_experts).astype(str), np.concatenate(out_lo), np.concatenate(out_hi),
            np.concatenate(out_link))
