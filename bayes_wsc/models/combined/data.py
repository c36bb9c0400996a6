"""`CombinedSupervision`: items with features and every kind of supervision a user has on them.

Up to five tables, any subset of the supervision ones:

* **items** (required): an id column, numeric feature columns, and optionally a `label` column (a hand
  label; an empty cell means unlabelled), a `bag` column (the bag whose class counts are known; empty:
  in no bag) and a `group` column (the group whose noisy average is known; empty: in no group).
* **votes**: rows `item, source, vote` from annotators or labelling rules; an empty `vote` is an
  abstention (kept and counted, carries no likelihood).
* **pairs**: rows `expert, i, j, link` (1 must-link, 0 cannot-link), read as the noisy-experts model
  reads them (`data.pairwise`).
* **bags**: rows `bag`, then one column per class: the bag's class counts (whole numbers summing to the
  bag's size in items) or proportions (summing to 1, times the bag's size whole numbers).
* **groups**: rows `group, he`: a noisy average of a binary class per group, on the logit scale of the
  class share (the first model's HE).

The classes are the `classes` given, else every class named by the labels, the votes and the bags'
columns, sorted. Every failure is a one-line `InputError` naming the table, column, row and value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from bayes_wsc.data.pairwise import CONSTRAINT_COLUMNS, _read_constraints, link_counts
from bayes_wsc.data.tables import (FeatureScaling, ItemFeatures, feature_columns, key_column, key_text,
                                   numeric_column, read_ids, require_columns, require_rows, text_column)
from bayes_wsc.data.votes import VOTE_COLUMNS, VoteViews, class_codes, read_votes, vote_classes
from bayes_wsc.errors import InputError

GROUP_COLUMNS = ("group", "he")
#: a bag's counts (proportions times its size) must be this close to whole numbers
WHOLE_TOLERANCE = 1e-6
SOURCES = ("labels", "votes", "pairs", "bags", "groups")


@dataclass
class CombinedSupervision(ItemFeatures, VoteViews):
    """Items (`ItemFeatures`) and their supervision; index arrays point into `item_ids` and `classes`.

    classes : (K,) class names.  label : (n,) class index of each item's hand label, -1 without.
    vote_item, vote_source, vote : (V,) every row of the votes table; vote -1 is an abstention.
    source_names : (S,) annotators / rules.
    pairs, cell_pair, cell_expert, link, expert_names : the experts' links (as `PairwiseConstraints`).
    item_bag : (n,) bag of each item, -1 without; bag_names (B,); bag_counts (B, K) whole class counts.
    item_group : (n,) group of each item, -1 without; group_names (G,); group_he (G,).
    """

    classes: np.ndarray
    label: np.ndarray
    vote_item: np.ndarray
    vote_source: np.ndarray
    vote: np.ndarray
    source_names: np.ndarray
    pairs: np.ndarray
    cell_pair: np.ndarray
    cell_expert: np.ndarray
    link: np.ndarray
    expert_names: np.ndarray
    item_bag: np.ndarray
    bag_names: np.ndarray
    bag_counts: np.ndarray
    item_group: np.ndarray
    group_names: np.ndarray
    group_he: np.ndarray
    settings: dict = field(default_factory=dict)

    def __post_init__(self):
        super().__post_init__()
        n = self.n_items
        self.classes = np.asarray(self.classes).astype(str)
        k = self.classes.size
        if k < 2:
            raise InputError(f"the supervision names {k} class(es); the combined model needs at least 2 "
                             "(give classes=, or labels, votes or bags of two classes or more)")
        self.label = _indices(self.label, n, k, "label", allow_none=True)
        self.vote_item = _indices(self.vote_item, None, n, "vote_item")
        self.source_names = np.asarray(self.source_names).astype(str)
        self.vote_source = _indices(self.vote_source, self.vote_item.size, self.source_names.size, "vote_source")
        self.vote = _indices(self.vote, self.vote_item.size, k, "vote", allow_none=True)
        self.expert_names = np.asarray(self.expert_names).astype(str)
        self.pairs = np.asarray(self.pairs, dtype=np.int64).reshape(-1, 2)
        if ((self.pairs < 0) | (self.pairs >= n)).any() or (self.pairs[:, 0] >= self.pairs[:, 1]).any():
            raise InputError("pairs must hold two different item indices, the smaller first")
        self.cell_pair = _indices(self.cell_pair, None, len(self.pairs), "cell_pair")
        self.cell_expert = _indices(self.cell_expert, self.cell_pair.size, self.expert_names.size, "cell_expert")
        self.link = np.asarray(self.link, dtype=np.int8)
        if self.link.size != self.cell_pair.size or not np.isin(self.link, (0, 1)).all():
            raise InputError("link must hold one 0 (cannot-link) or 1 (must-link) per constraint")
        self.bag_names = np.asarray(self.bag_names).astype(str)
        self.item_bag = _indices(self.item_bag, n, self.bag_names.size, "item_bag", allow_none=True)
        self.bag_counts = np.asarray(self.bag_counts, dtype=float).reshape(self.bag_names.size, k)
        sizes = np.bincount(self.item_bag[self.item_bag >= 0], minlength=self.bag_names.size)
        if not np.array_equal(self.bag_counts.sum(axis=1), sizes) or (self.bag_counts < 0).any():
            raise InputError("each bag's class counts must be whole numbers >= 0 that sum to its number of items")
        self.group_names = np.asarray(self.group_names).astype(str)
        self.item_group = _indices(self.item_group, n, self.group_names.size, "item_group", allow_none=True)
        self.group_he = np.asarray(self.group_he, dtype=float)
        if self.group_he.shape != (self.group_names.size,) or not np.isfinite(self.group_he).all():
            raise InputError("group_he must hold one finite number per group")
        if self.n_groups and k != 2:
            raise InputError(f"group averages are of a binary class, but there are {k} classes "
                             f"({', '.join(self.classes)})")
        empty = np.flatnonzero(np.bincount(self.item_group[self.item_group >= 0], minlength=self.n_groups) == 0)
        if empty.size:
            raise InputError(f"group {self.group_names[empty[0]]!r} has an average but no item")
        if not self.present_sources():
            raise InputError("there is no supervision: give labels, votes, pairs, bags or group averages")

    # ------------------------------------------------------------------ reading
    @classmethod
    def from_frames(cls, items: pd.DataFrame, *, votes: pd.DataFrame | None = None,
                    pairs: pd.DataFrame | None = None, bags: pd.DataFrame | None = None,
                    groups: pd.DataFrame | None = None, id_col: str = "id", label_col: str | None = "label",
                    bag_col: str | None = "bag", group_col: str | None = "group",
                    features: Sequence[str] | None = None, classes: Sequence[str] | None = None,
                    standardize: bool = True) -> CombinedSupervision:
        """Validate every table once. The label, bag and group columns are used when the items table has
        them (None: never); `features` default to every other column."""
        require_rows(items, "items")
        require_columns(items, [id_col], "items")
        roles = {c: role for c, role in ((label_col, "label"), (bag_col, "bag"), (group_col, "group"))
                 if c is not None and c in items.columns}
        for column, role in roles.items():
            if column == id_col:
                raise InputError(f"the id column {id_col!r} is also the {role} column")
        ids = read_ids(items, id_col, "items")
        if len(items) < 2:
            raise InputError("items has a single row: the combined model needs at least two items")
        names, hint = feature_columns(items, features, (id_col, *roles), "items", "id, label, bag or group")
        scaling, matrix = FeatureScaling.read(items, names, "items", standardize, hint)
        index = pd.Index(ids)
        by_role = {role: column for column, role in roles.items()}
        raw_label = _optional_text(items, by_role.get("label"), "items")
        raw_bag = _optional_text(items, by_role.get("bag"), "items")
        raw_group = _optional_text(items, by_role.get("group"), "items")
        vote_rows = read_votes(votes, index) if votes is not None else None
        bag_table = _read_bags(bags) if bags is not None else None
        named = set(raw_label.dropna()) | (set(vote_rows[2].dropna()) if vote_rows is not None else set())
        named |= set(bag_table[1]) if bag_table is not None else set()
        class_names = vote_classes(named, classes)
        class_index = pd.Index(class_names)
        label = class_codes(raw_label, class_index)
        if vote_rows is not None:
            vote_item, sources, vote_text = vote_rows
            source_names = np.asarray(pd.unique(sources), dtype=str)
            vote_source = pd.Index(source_names).get_indexer(sources)
            vote = class_codes(vote_text, class_index)
        else:
            vote_item = vote_source = vote = np.zeros(0, dtype=np.int64)
            source_names = np.zeros(0, dtype=str)
        if pairs is not None:
            experts, lo, hi, link = _read_constraints(pairs, index)
            expert_names = np.asarray(pd.unique(experts), dtype=str)
            cell_expert = pd.Index(expert_names).get_indexer(experts)
            key, cell_pair = np.unique(lo * len(ids) + hi, return_inverse=True)
            pair_items = np.stack(np.divmod(key, len(ids)), axis=1)
        else:
            expert_names, pair_items = np.zeros(0, dtype=str), np.zeros((0, 2), dtype=np.int64)
            cell_pair = cell_expert = link = np.zeros(0, dtype=np.int64)
        bag_names, item_bag, bag_counts = _bag_counts(raw_bag, bag_table, class_index)
        group_names, item_group, group_he = _groups(raw_group, groups)
        settings = {"id_col": id_col, "label_col": by_role.get("label"), "bag_col": by_role.get("bag"),
                    "group_col": by_role.get("group"), "features": list(scaling.names),
                    "standardize": bool(standardize)}
        return cls(ids, matrix, scaling, class_names, label, vote_item, vote_source, vote, source_names, pair_items,
                   cell_pair, cell_expert, link, expert_names, item_bag, bag_names, bag_counts, item_group,
                   group_names, group_he, settings)

    # ------------------------------------------------------------------ views
    @property
    def n_experts(self) -> int:
        return self.expert_names.size

    @property
    def n_pairs(self) -> int:
        return self.pairs.shape[0]

    @property
    def n_bags(self) -> int:
        return self.bag_names.size

    @property
    def n_groups(self) -> int:
        return self.group_names.size

    def present_sources(self) -> list[str]:
        """The kinds of supervision these data hold, in `SOURCES` order."""
        present = {"labels": (self.label >= 0).any(), "votes": bool(self.cast.any()), "pairs": self.n_pairs > 0,
                   "bags": self.n_bags > 0, "groups": self.n_groups > 0}
        return [s for s in SOURCES if present[s]]

    def link_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """(P, M) numbers of must-links and of cannot-links that each expert gave each pair."""
        return link_counts(self.cell_pair, self.cell_expert, self.link, self.n_pairs, self.n_experts)

    def evidence_items(self) -> np.ndarray:
        """Items whose class some item-level source speaks to: a hand label or a cast vote, or a bag."""
        has = (self.label >= 0) | (self.item_bag >= 0)
        has[self.vote_item[self.cast]] = True
        return np.flatnonzero(has)

    @property
    def coords(self) -> dict[str, list]:
        return {"item": list(self.item_ids), "feature": self.feature_names, "class": list(self.classes),
                "source": list(self.source_names), "expert": list(self.expert_names),
                "bag": list(self.bag_names), "group": list(self.group_names)}

    def without(self, source: str) -> CombinedSupervision:
        """The same items with one kind of supervision (`SOURCES`) left out, or one annotator
        ("votes:NAME") or expert ("pairs:NAME"): what a held-out-source check refits on."""
        kind, _, name = source.partition(":")
        parts = {f: getattr(self, f) for f in self.__dataclass_fields__}
        if kind == "labels":
            parts["label"] = np.full(self.n_items, -1)
        elif kind == "votes":
            keep = self.source_names[self.vote_source] != name if name else np.zeros(self.vote.size, bool)
            parts.update(vote_item=self.vote_item[keep], vote_source=self.vote_source[keep], vote=self.vote[keep])
        elif kind == "pairs":
            keep = self.expert_names[self.cell_expert] != name if name else np.zeros(self.link.size, bool)
            parts.update(cell_pair=self.cell_pair[keep], cell_expert=self.cell_expert[keep], link=self.link[keep])
        elif kind == "bags":
            parts.update(item_bag=np.full(self.n_items, -1), bag_names=np.zeros(0, str),
                         bag_counts=np.zeros((0, self.n_classes)))
        elif kind == "groups":
            parts.update(item_group=np.full(self.n_items, -1), group_names=np.zeros(0, str), group_he=np.zeros(0))
        else:
            raise InputError(f"no source {source!r}: one of {', '.join(SOURCES)}, or votes:NAME, pairs:NAME")
        return type(self)(**parts)


# ---------------------------------------------------------------------- reading helpers
def _indices(values, size: int | None, bound: int, what: str, allow_none: bool = False) -> np.ndarray:
    out = np.asarray(values, dtype=np.int64).reshape(-1)
    if size is not None and out.size != size:
        raise InputError(f"{what} must hold {size} entries, got {out.size}")
    low = -1 if allow_none else 0
    if ((out < low) | (out >= bound)).any():
        raise InputError(f"{what} refers to an entry that does not exist")
    return out


def _optional_text(frame: pd.DataFrame, column: str | None, what: str) -> pd.Series:
    """A column of names where an empty cell means none (labels, bags, groups), as text."""
    if column is None:
        return pd.Series([None] * len(frame), index=frame.index, dtype=object)
    return text_column(key_text(frame[column]), column, what)


def _read_bags(frame: pd.DataFrame):
    what = "bags"
    require_rows(frame, what)
    require_columns(frame, ["bag"], what)
    names = key_column(frame, "bag", what).astype(str).to_numpy()
    repeated = pd.Index(names).duplicated()
    if repeated.any():
        row = int(np.flatnonzero(repeated)[0])
        raise InputError(f"{what} column 'bag' has bag {names[row]!r} twice (row {row + 1})")
    class_columns = [str(c) for c in frame.columns if str(c) != "bag"]
    if not class_columns:
        raise InputError(f"{what} has no class columns besides 'bag': give one column of counts or proportions "
                         "per class")
    values = np.column_stack([numeric_column(frame, c, what, lower=0.0, keys=pd.Series(names), key_name="bag")
                              for c in class_columns])
    return names, class_columns, values


def _refuse_without_table(raw: pd.Series, unit: str, gives: str) -> None:
    """An item put in a `unit` (bag, group) when no table of them is given: one line naming its row."""
    present = raw.notna().to_numpy()
    if present.any():
        row = int(np.flatnonzero(present)[0])
        raise InputError(f"items row {row + 1} is in {unit} {raw.iloc[row]!r}, but no {unit}s table gives {gives}")


def _item_units(raw: pd.Series, names, unit: str) -> np.ndarray:
    """Each item's index among the table's `names` (-1: in no `unit`); an item in a `unit` the table does not
    list: one line naming its row."""
    present = raw.notna().to_numpy()
    index = np.full(len(raw), -1, dtype=np.int64)
    index[present] = pd.Index(names).get_indexer(raw[present].astype(str))
    unknown = np.flatnonzero(present & (index < 0))
    if unknown.size:
        raise InputError(f"items row {unknown[0] + 1} is in {unit} {raw.iloc[unknown[0]]!r}, which the {unit}s "
                         "table does not list")
    return index


def _bag_counts(raw_bag: pd.Series, table, classes: pd.Index):
    present = raw_bag.notna().to_numpy()
    if table is None:
        _refuse_without_table(raw_bag, "bag", "the bags' class counts")
        return np.zeros(0, dtype=str), np.full(len(raw_bag), -1), np.zeros((0, classes.size))
    names, columns, values = table
    item_bag = _item_units(raw_bag, names, "bag")
    sizes = np.bincount(item_bag[present], minlength=names.size)
    empty = np.flatnonzero(sizes == 0)
    if empty.size:
        raise InputError(f"bags row {empty[0] + 1}: bag {names[empty[0]]!r} has no item in the items table")
    counts = np.zeros((names.size, classes.size))
    counts[:, classes.get_indexer(columns)] = values
    totals = counts.sum(axis=1)
    proportions = np.isclose(totals, 1.0, atol=1e-6) & (sizes != 1)
    counts[proportions] *= sizes[proportions, None]
    whole = np.round(counts)
    off = np.flatnonzero((np.abs(counts - whole) > WHOLE_TOLERANCE * np.maximum(1, sizes[:, None])).any(axis=1)
                         | (whole.sum(axis=1) != sizes))
    if off.size:
        b = off[0]
        raise InputError(f"bags row {b + 1}: bag {names[b]!r} has {sizes[b]} items, but its class columns "
                         f"({', '.join(f'{v:g}' for v in values[b])}) are neither whole counts summing to "
                         f"{sizes[b]} nor proportions summing to 1 whose counts are whole numbers")
    return names, item_bag, whole


def _groups(raw_group: pd.Series, frame: pd.DataFrame | None):
    if frame is None:
        _refuse_without_table(raw_group, "group", "the groups' averages")
        return np.zeros(0, dtype=str), np.full(len(raw_group), -1), np.zeros(0)
    what = "groups"
    require_rows(frame, what)
    require_columns(frame, GROUP_COLUMNS, what)
    names = key_column(frame, "group", what).astype(str).to_numpy()
    repeated = pd.Index(names).duplicated()
    if repeated.any():
        row = int(np.flatnonzero(repeated)[0])
        raise InputError(f"{what} column 'group' has group {names[row]!r} twice (row {row + 1})")
    he = numeric_column(frame, "he", what, keys=pd.Series(names))
    return names, _item_units(raw_group, names, "group"), he


__all__ = ["CombinedSupervision", "CONSTRAINT_COLUMNS", "VOTE_COLUMNS", "GROUP_COLUMNS", "SOURCES"]
