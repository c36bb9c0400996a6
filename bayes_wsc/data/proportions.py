"""Items in groups, and each group's class proportions or counts (seed 001: learning from label proportions).

Two tables describe the data:

* **items**: one row per item, a group column, an optional id column and the
  features. Numeric features (for the `gaussian` and `logistic` emissions) are
  standardized and the centre and scale kept, so that new items are put on the
  same scale at prediction time; categorical features (the `categorical`
  emission) are crossed into bins, as in the first model.
* **proportions**: one row per group, the group column and one column per
  class holding that class's proportion in the group (each row sums to 1), or
  its count of items (`counts=True`; each row then sums to the group's number
  of items).

The container validates once (every failure is a one-line `InputError`
naming the table, column, row and value) and keeps what the model needs: the
items' features and groups, the L-class proportion matrix Pi (I x L), the
class counts when they are whole numbers, and for categorical features the
group x bin count table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from bayes_wsc.data.grouped import BehaviorBins
from bayes_wsc.data.tables import (DEFAULT_ID_COL, FeatureScaling, check_scaled_features, feature_columns, float_array,
                                   index_array, key_column, numeric_column, optional_id_column, read_ids, require_columns,
                                   require_id_column, require_rows, require_unique, standardize)
from bayes_wsc.defaults import LOG_ZERO
from bayes_wsc.errors import InputError

#: proportions of a group must sum to 1 within this
SUM_TOLERANCE = 1e-6
#: a group's share times its size is taken as a whole count when it is this close to one
WHOLE_TOLERANCE = 0.05


@dataclass
class LabelProportions:
    """Features of items in groups, and the groups' class proportions.

    Attributes
    ----------
    item_group : (n,) the group index of every item.
    proportions : (I, L) each group's class shares Pi (rows sum to 1).
    group_ids, classes : names of the I groups and the L classes (text).
    item_ids : (n,) item identifiers as text (row numbers when the items have no id column).
    x : (n, D) numeric features on the standardized scale, (raw - center) / scale; None for
        categorical features.
    features, center, scale : the D feature names and the standardization; for categorical
        features, the behavior columns and empty arrays.
    bins : the crossing of categorical feature columns into K bins, None for numeric features.
    item_bin : (n,) the bin of every item (categorical features), None otherwise.
    counts : (I, L) whole class counts when they are known: given (`counts_given`) or the
        proportions times the group sizes when those are whole numbers; None otherwise.
    """

    item_group: np.ndarray
    proportions: np.ndarray
    group_ids: np.ndarray
    classes: tuple[str, ...]
    item_ids: np.ndarray
    x: np.ndarray | None = None
    features: tuple[str, ...] = ()
    center: np.ndarray = field(default_factory=lambda: np.zeros(0))
    scale: np.ndarray = field(default_factory=lambda: np.zeros(0))
    bins: BehaviorBins | None = None
    item_bin: np.ndarray | None = None
    counts: np.ndarray | None = None
    counts_given: bool = False
    settings: dict = field(default_factory=dict)

    def __post_init__(self):
        self.item_group = index_array(self.item_group, "item groups").reshape(-1)
        self.proportions = np.asarray(self.proportions, dtype=float)
        self.group_ids = np.asarray(self.group_ids).astype(str)
        self.classes = tuple(str(c) for c in self.classes)
        self.item_ids = np.asarray(self.item_ids).astype(str)
        self.features = tuple(str(f) for f in self.features)
        n = self.item_group.size
        if self.proportions.ndim != 2:
            raise InputError(f"proportions must be a groups x classes table, got shape {self.proportions.shape}")
        n_groups, n_classes = self.proportions.shape
        if n_classes < 2 or len(self.classes) != n_classes:
            raise InputError(f"label proportions need at least 2 classes, got {list(self.classes)}")
        if len(set(self.classes)) != n_classes:
            raise InputError(f"class names repeat: {list(self.classes)}")
        if self.group_ids.shape != (n_groups,) or len(set(self.group_ids)) != n_groups:
            raise InputError(f"{n_groups} groups need {n_groups} distinct group ids, got {self.group_ids.size}")
        if self.item_ids.shape != (n,):
            raise InputError(f"{n} items but {self.item_ids.size} item ids")
        require_unique(self.item_ids, "item id")
        if n < 2:
            raise InputError(f"there are {n} items; learning from label proportions needs at least 2")
        if ((self.item_group < 0) | (self.item_group >= n_groups)).any():
            raise InputError(f"item groups must be indices 0..{n_groups - 1}")
        if not np.isfinite(self.proportions).all() or (self.proportions < 0).any() or (self.proportions > 1).any():
            raise InputError("proportions must be finite and in [0, 1]")
        sums = self.proportions.sum(axis=1)
        bad = np.abs(sums - 1) > SUM_TOLERANCE
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"the proportions of group {self.group_ids[i]!r} sum to {sums[i]:.8g}, not 1 "
                             f"(within {SUM_TOLERANCE:g})")
        sizes = self.group_sizes
        if (sizes == 0).any():
            i = int(np.flatnonzero(sizes == 0)[0])
            raise InputError(f"group {self.group_ids[i]!r} has no items")
        empty = ~(self.proportions > 0).any(axis=0)
        if empty.any():
            raise InputError(f"class {self.classes[int(np.flatnonzero(empty)[0])]!r} has proportion 0 in every "
                             "group: no item can be learned to be of it; leave the class out")
        if (self.x is None) == (self.bins is None):
            raise InputError("give either numeric features (x) or categorical bins, not both or neither")
        if self.x is not None:
            self.x, self.center, self.scale = check_scaled_features(self.x, self.features, self.center, self.scale,
                                                                    n)
        else:
            self.item_bin = index_array(self.item_bin, "item bins").reshape(-1)
            if self.item_bin.shape != (n,) or ((self.item_bin < 0) | (self.item_bin >= self.bins.n_bins)).any():
                raise InputError(f"item bins must be {n} indices 0..{self.bins.n_bins - 1}")
            self.features = tuple(self.bins.columns)
        if self.counts is not None:
            self.counts = float_array(self.counts, "counts")
            if self.counts.shape != self.proportions.shape or (self.counts < 0).any() \
                    or (self.counts != np.round(self.counts)).any():
                raise InputError("class counts must be whole numbers >= 0, one per group and class")
            if (self.counts.sum(axis=1) != sizes).any():
                i = int(np.flatnonzero(self.counts.sum(axis=1) != sizes)[0])
                raise InputError(f"the class counts of group {self.group_ids[i]!r} add up to "
                                 f"{self.counts[i].sum():g}, but it has {sizes[i]} items")
            self.counts = self.counts.astype(np.int64)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_frames(
        cls,
        items: pd.DataFrame,
        proportions: pd.DataFrame,
        *,
        group_col: str = "group",
        id_col: str | None = DEFAULT_ID_COL,
        features: Sequence[str] | None = None,
        counts: bool = False,
        categorical: bool = False,
        items_what: str = "items",
        proportions_what: str = "proportions",
    ) -> LabelProportions:
        """Validate one row per item and one row per group; every failure is one line naming the
        table, column, row and value.

        id_col : the items' id column: by default `id` when the items have one, else the rows are
            numbered; None numbers the rows whatever the columns.

        features : the feature columns. By default every column of the items other than the group
            and id columns; a default column whose cells are not numbers is an error naming it.

        counts : the class columns hold counts of items (whole numbers adding up to the group's
            number of items) instead of proportions (adding up to 1).

        categorical : the features are categories, crossed into bins (the `categorical` emission).
        """
        require_rows(items, items_what)
        require_rows(proportions, proportions_what)
        require_columns(items, [group_col], items_what)
        require_columns(proportions, [group_col], proportions_what)
        id_col = optional_id_column(items, id_col)
        require_id_column(items, id_col, items_what, group_col, "group")
        features, hint = feature_columns(items, features, (group_col, id_col), items_what, role="group or id")

        group_ids = key_column(proportions, group_col, proportions_what)
        duplicated = group_ids.duplicated()
        if duplicated.any():
            row = int(np.flatnonzero(duplicated.to_numpy())[0])
            raise InputError(f"{proportions_what} has a second row for group {group_ids.iloc[row]!r} (row {row + 1})")
        classes = [c for c in proportions.columns if c != group_col]
        if len(classes) < 2:
            raise InputError(f"{proportions_what} has {len(classes)} class column{'s' * (len(classes) != 1)} "
                             f"besides {group_col!r}; label proportions need at least 2 classes")
        table = _read_class_columns(proportions, classes, counts, proportions_what, group_ids)

        item_groups = key_column(items, group_col, items_what)
        item_group = pd.Index(group_ids).get_indexer(item_groups)
        if (item_group < 0).any():
            row = int(np.flatnonzero(item_group < 0)[0])
            raise InputError(f"{items_what} row {row + 1} is in group {item_groups.iloc[row]!r}, which is absent "
                             f"from {proportions_what}")
        sizes = np.bincount(item_group, minlength=len(group_ids))
        if (sizes == 0).any():
            i = int(np.flatnonzero(sizes == 0)[0])
            raise InputError(f"{proportions_what} row {i + 1}: group {group_ids.iloc[i]!r} has no items in "
                             f"{items_what}")
        if counts:
            totals = table.sum(axis=1)
            bad = totals != sizes
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise InputError(f"{proportions_what} row {i + 1}: the counts of group {group_ids.iloc[i]!r} add "
                                 f"up to {totals[i]:g}, but {items_what} has {sizes[i]} items in it")
            shares, whole = table / sizes[:, None], table
        else:
            sums = table.sum(axis=1)
            bad = np.abs(sums - 1) > SUM_TOLERANCE
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise InputError(f"{proportions_what} row {i + 1}: the proportions of group {group_ids.iloc[i]!r} "
                                 f"sum to {sums[i]:.8g}, not 1 (within {SUM_TOLERANCE:g})")
            shares, whole = table / sums[:, None], whole_counts(table, sizes)
        for j, name in enumerate(classes):
            if not (table[:, j] > 0).any():
                raise InputError(f"{proportions_what} class column {name!r} is 0 in every row: no item can be "
                                 "learned to be of that class; leave the column out")

        ids = read_ids(items, id_col, items_what)
        settings = {"group_col": group_col, "id_col": id_col, "features": list(features), "counts": bool(counts),
                    "categorical": bool(categorical)}
        common = dict(item_group=item_group, proportions=shares, group_ids=group_ids.to_numpy(),
                      classes=tuple(str(c) for c in classes), item_ids=ids, counts=whole, counts_given=bool(counts),
                      settings=settings)
        if categorical:
            bins = BehaviorBins.from_frame(items, features, items_what)
            return cls(bins=bins, item_bin=bins.index(items, items_what), **common)
        scaling, x = FeatureScaling.read(items, features, f"{items_what} feature", hint=hint)
        return cls(x=x, features=scaling.names, center=scaling.mean, scale=scaling.scale, **common)

    @classmethod
    def from_arrays(
        cls,
        x: np.ndarray,
        groups: Sequence,
        proportions: np.ndarray,
        *,
        group_ids: Sequence | None = None,
        classes: Sequence | None = None,
        features: Sequence[str] | None = None,
        standardize: bool = True,
        counts: np.ndarray | None = None,
    ) -> LabelProportions:
        """From numeric features (n, D), each item's group index (0..I-1) and the (I, L) proportions
        (simulations, experiments). `standardize=False` keeps the features as they are (centre 0,
        scale 1), for data simulated on the model's own scale. `counts` gives whole class counts."""
        x = float_array(x, "features")
        x = x[:, None] if x.ndim == 1 else x
        proportions = float_array(proportions, "proportions")
        names = [f"x{j + 1}" for j in range(x.shape[1])] if features is None else list(features)
        if len(names) != x.shape[1]:
            raise InputError(f"{x.shape[1]} feature columns but {len(names)} names")
        n_groups = proportions.shape[0] if proportions.ndim == 2 else 0
        group_ids = [f"g{i}" for i in range(n_groups)] if group_ids is None else list(group_ids)
        classes = [str(c) for c in range(proportions.shape[-1])] if classes is None else list(classes)
        item_group = index_array(groups, "groups")
        scaling, z = FeatureScaling.fit(x, names, "feature", standardize)
        sizes = np.bincount(item_group, minlength=n_groups) if item_group.size and item_group.min() >= 0 else None
        if counts is None and sizes is not None and proportions.ndim == 2 and sizes.size == n_groups:
            counts = whole_counts(proportions, sizes)
        settings = {"group_col": "group", "id_col": None, "features": names, "counts": False, "categorical": False}
        return cls(item_group=item_group, proportions=proportions, group_ids=group_ids, classes=classes,
                   item_ids=np.arange(item_group.size).astype(str), x=z, features=names,
                   center=scaling.mean, scale=scaling.scale, counts=counts, settings=settings)

    @classmethod
    def from_bins(cls, item_bin: np.ndarray, groups: Sequence, proportions: np.ndarray, n_bins: int, *,
                  classes: Sequence | None = None, behavior: str = "behavior",
                  counts: np.ndarray | None = None) -> LabelProportions:
        """From each item's bin (0..K-1) of one categorical feature, its group and the proportions."""
        proportions = float_array(proportions, "proportions")
        item_group = index_array(groups, "groups")
        n_groups = proportions.shape[0]
        classes = [str(c) for c in range(proportions.shape[-1])] if classes is None else list(classes)
        if counts is None and item_group.size and item_group.min() >= 0:
            counts = whole_counts(proportions, np.bincount(item_group, minlength=n_groups))
        bins = BehaviorBins((behavior,), (tuple(str(k) for k in range(int(n_bins))),))
        settings = {"group_col": "group", "id_col": None, "features": [behavior], "counts": False,
                    "categorical": True}
        return cls(item_group=item_group, proportions=proportions, group_ids=[f"g{i}" for i in range(n_groups)],
                   classes=classes, item_ids=np.arange(item_group.size).astype(str), bins=bins,
                   item_bin=item_bin, counts=counts, settings=settings)

    # ------------------------------------------------------------------ views
    @property
    def kind(self) -> str:
        """"numeric" (standardized features) or "categorical" (bins)."""
        return "numeric" if self.x is not None else "categorical"

    @property
    def n_items(self) -> int:
        return int(self.item_group.size)

    @property
    def n_groups(self) -> int:
        return int(self.proportions.shape[0])

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def n_features(self) -> int:
        return len(self.features)

    @property
    def n_bins(self) -> int:
        return 0 if self.bins is None else self.bins.n_bins

    @property
    def group_sizes(self) -> np.ndarray:
        """n_i, the number of items in each group."""
        return np.bincount(self.item_group, minlength=self.proportions.shape[0])

    @property
    def expected_counts(self) -> np.ndarray:
        """(I, L) n_i Pi_il: the class counts, whole or not."""
        return self.group_sizes[:, None] * self.proportions

    @property
    def eta(self) -> np.ndarray:
        """eta_l, the share of class l over all items (seed 001, eq. 2)."""
        return self.expected_counts.sum(axis=0) / self.n_items

    @property
    def bin_counts(self) -> np.ndarray:
        """(I, K) number of items of group i in bin k (categorical features)."""
        if self.bins is None:
            raise InputError("these data have numeric features, not categorical bins")
        flat = self.item_group * self.n_bins + self.item_bin
        return np.bincount(flat, minlength=self.n_groups * self.n_bins).reshape(self.n_groups, self.n_bins).astype(float)

    @property
    def coords(self) -> dict[str, list]:
        coords = {"group": list(self.group_ids), "class": list(self.classes)}
        if self.bins is None:
            coords["feature"] = list(self.features)
        else:
            coords["bin"] = self.bins.labels
        return coords

    @property
    def x_raw(self) -> np.ndarray:
        """Numeric features on the scale of the data."""
        return self.x * self.scale + self.center

    def whole_counts_or_fail(self) -> np.ndarray:
        """The class counts, which the exact-counts likelihood needs; one line naming the first group
        whose proportions times its size are not whole numbers."""
        if self.counts is not None:
            return self.counts
        expected = self.expected_counts
        off = np.abs(expected - np.round(expected))
        i, j = np.unravel_index(int(np.argmax(off)), off.shape)
        raise InputError(f"group {self.group_ids[i]!r}: its proportion of class {self.classes[j]!r} times its "
                         f"{self.group_sizes[i]} items is {expected[i, j]:.4g}, not a whole number of items; the "
                         "exact-counts likelihood needs the class counts (give them with counts / --counts)")

    def features_of(self, frame: pd.DataFrame, what: str = "items") -> np.ndarray:
        """New items' features as the model sees them: standardized numbers (n, D) or bin indices (n,)."""
        require_rows(frame, what)
        if self.bins is not None:
            return self.bins.index(frame, what)
        return standardize(frame, self.features, self.center, self.scale, what)

    def with_proportions(self, proportions: np.ndarray, counts: np.ndarray | None = None) -> LabelProportions:
        """The same items with other proportions (simulations)."""
        return LabelProportions(self.item_group, proportions, self.group_ids, self.classes, self.item_ids, self.x,
                                self.features, self.center, self.scale, self.bins, self.item_bin, counts,
                                self.counts_given, dict(self.settings))


# ---------------------------------------------------------------------- helpers
def whole_counts(proportions: np.ndarray, sizes: np.ndarray) -> np.ndarray | None:
    """n_i Pi_il rounded, when every one is within `WHOLE_TOLERANCE` of a whole number and each row then
    adds up to n_i (proportions rounded to a few decimals, like 0.33 of 3 items); None otherwise."""
    expected = np.asarray(sizes, dtype=float)[:, None] * np.asarray(proportions, dtype=float)
    rounded = np.round(expected)
    if (np.abs(expected - rounded) > WHOLE_TOLERANCE).any() or (rounded.sum(axis=1) != sizes).any():
        return None
    return rounded.astype(np.int64)


def _read_class_columns(frame: pd.DataFrame, classes: Sequence[str], counts: bool, what: str,
                        keys: pd.Series) -> np.ndarray:
    """The class columns as an (I, L) float array: proportions in [0, 1], or whole counts >= 0; a bad
    cell is named by its row and its group (`keys`)."""
    columns = []
    for name in classes:
        if counts:
            values = numeric_column(frame, name, f"{what} count", lower=0.0, keys=keys)
            fraction = np.abs(values - np.round(values)) > 1e-9
            if fraction.any():
                row = int(np.flatnonzero(fraction)[0])
                raise InputError(f"{what} count column {name!r} has value {float(values[row])!r} (row {row + 1}, "
                                 f"group {str(keys.iloc[row])!r}); counts must be whole numbers")
            values = np.round(values)
        else:
            values = numeric_column(frame, name, f"{what} proportion", lower=0.0, upper=1.0, keys=keys)
        columns.append(values)
    return np.column_stack(columns)


# ---------------------------------------------------------------------- the exact-counts recursion's layout
#: a group's recursion may hold at most this many (item, state) cells; larger groups use the normal approximation
GROUP_BUDGET = 2_000_000
#: all groups' recursions together: reverse-mode differentiation keeps a few copies of every cell
#: (8 bytes each), so 10^7 cells stay under a GB
TOTAL_BUDGET = 10_000_000
#: buckets of different padded sizes run as one recursion (`CountBlock`) when that costs, with every group
#: padded to the longest one's steps, at most this many times their cells run apart ...
MERGE_WASTE = 4
#: ... or at most this many cells in all (about a millisecond a pass): one compiled loop for every group size
MERGE_CELLS = 2**18


@dataclass(frozen=True)
class CountBucket:
    """Groups whose items are padded to the same length `steps`, for one vectorized recursion.

    groups : (G,) group indices. items : (G, steps) item indices, padded with `n_items` (a row of
    no item). order : (G, L) the classes of each group with the most frequent first: it is the one
    the recursion does not track, so its state holds the other classes' counts, the t-th of them (t = 1, 2, ...)
    at most n // (t + 1) of the group's n items. shape : the state's extent per tracked class (a power of two
    above that bound, so that it depends on the group's size alone).
    target : (G,) each group's counts of the tracked classes as a flat index into the state.
    """

    groups: np.ndarray
    items: np.ndarray
    order: np.ndarray
    shape: tuple[int, ...]
    target: np.ndarray

    @property
    def steps(self) -> int:
        return int(self.items.shape[1])

    def initial_state(self) -> np.ndarray:
        """The recursion's state before any item, (G, *shape): log 1 at no counts, log 0 (finite) elsewhere."""
        state = np.full((self.groups.size, *self.shape), LOG_ZERO)
        state[(slice(None), *([0] * len(self.shape)))] = 0.0
        return state

    @property
    def cells(self) -> int:
        return int(self.items.size * np.prod(self.shape, dtype=np.int64))


@dataclass(frozen=True)
class CountBlock:
    """Buckets whose recursions run as one (`likelihoods.poisson_multinomial_logp`), their states flattened.

    Every group's state (its bucket's `shape`) is laid out as a run of cells of one vector, so that groups
    of any size share one loop of `steps` item steps (the longest bucket's; a shorter group's extra steps
    are padding, which leaves its state as it is). groups, items (padded to `steps` with `n_items`), order:
    as in `CountBucket`, bucket after bucket. cell_row : (C,) the row (in `groups`) each cell belongs to.
    shift : (L - 1, C) for each tracked class, the cell holding one count fewer of it in the same group, or
    C (a cell of log 0) at no count of it. first : (G,) each group's cell of no counts. target : (G,) each
    group's cell of its counts.
    """

    groups: np.ndarray
    items: np.ndarray
    order: np.ndarray
    cell_row: np.ndarray
    shift: np.ndarray
    first: np.ndarray
    target: np.ndarray

    @property
    def steps(self) -> int:
        return int(self.items.shape[1])

    @property
    def n_cells(self) -> int:
        return int(self.cell_row.size)

    @property
    def cells(self) -> int:
        """What the block's recursion costs: its cells times its steps."""
        return self.n_cells * self.steps

    def initial_state(self) -> np.ndarray:
        """The flat state before any item, (C,): log 1 at each group's cell of no counts, log 0 (finite) elsewhere."""
        state = np.full(self.n_cells, LOG_ZERO)
        state[self.first] = 0.0
        return state

    @classmethod
    def of(cls, buckets: Sequence[CountBucket], n_items: int, n_classes: int) -> CountBlock:
        """The buckets' groups one after the other, each group's cells in its bucket's shape (C order)."""
        steps = max(b.steps for b in buckets)
        items, cell_rows, shifts, firsts, targets = [], [], [], [], []
        offset, row = 0, 0
        for bucket in buckets:
            n_rows, size = bucket.groups.size, int(np.prod(bucket.shape, dtype=np.int64))
            local = np.arange(size)
            index = np.unravel_index(local, bucket.shape)
            first = offset + size * np.arange(n_rows)  # each group's cell of no counts
            cell_rows.append(np.repeat(row + np.arange(n_rows), size))
            piece = np.empty((n_classes - 1, n_rows, size), dtype=np.int64)
            for t in range(n_classes - 1):
                stride = int(np.prod(bucket.shape[t + 1:], dtype=np.int64))
                piece[t] = np.where(index[t] > 0, first[:, None] + local - stride, -1)
            shifts.append(piece.reshape(n_classes - 1, -1))
            firsts.append(first)
            targets.append(first + bucket.target)
            padded = np.full((n_rows, steps), n_items, dtype=np.int64)
            padded[:, :bucket.steps] = bucket.items
            items.append(padded)
            offset, row = offset + n_rows * size, row + n_rows
        if offset < 2:  # a spare cell, never read: a state of one cell would be a static 1 in the loop's types
            cell_rows.append(np.zeros(1, dtype=np.int64))
            shifts.append(np.full((n_classes - 1, 1), -1, dtype=np.int64))
            offset += 1
        shift = np.concatenate(shifts, axis=1)
        shift[shift < 0] = offset  # the cell of log 0 after the state
        return cls(np.concatenate([b.groups for b in buckets]), np.concatenate(items),
                   np.concatenate([b.order for b in buckets]), np.concatenate(cell_rows).astype(np.int64), shift,
                   np.concatenate(firsts).astype(np.int64), np.concatenate(targets).astype(np.int64))


def merge_buckets(buckets: Sequence[CountBucket], total_budget: int = TOTAL_BUDGET) -> list[list[CountBucket]]:
    """The buckets (shortest first) gathered into blocks: the next bucket joins the current block when the
    block, padded to the longest steps, stays within `total_budget` and costs at most `MERGE_WASTE` times its
    buckets run apart, or `MERGE_CELLS` in all. Groups of similar sizes (and small groups of any sizes) so run
    as one recursion, which XLA compiles once; very different sizes stay apart, where padding would cost."""
    blocks: list[list[CountBucket]] = []
    for bucket in sorted(buckets, key=lambda b: b.steps):
        if blocks:
            merged = [*blocks[-1], bucket]
            padded = max(b.steps for b in merged) * sum(b.cells // b.steps for b in merged)
            apart = sum(b.cells for b in merged)
            if padded <= total_budget and (padded <= MERGE_WASTE * apart or padded <= MERGE_CELLS):
                blocks[-1] = merged
                continue
        blocks.append([bucket])
    return blocks


@dataclass(frozen=True)
class CountPlan:
    """How the exact-counts likelihood is computed for each group (`likelihoods.poisson_multinomial_logp`).

    Groups small enough are computed exactly, bucketed by padded size (`buckets`), the buckets run
    together in as few recursions as their padding allows (`blocks`, `merge_buckets`); the others
    (`approx_groups`) by the normal approximation of their class counts, with `approx_order`
    (most frequent class first, dropped) and their tracked counts `approx_counts`.
    """

    n_items: int
    n_groups: int
    n_classes: int
    buckets: tuple[CountBucket, ...]
    blocks: tuple[CountBlock, ...]
    approx_groups: np.ndarray
    approx_order: np.ndarray
    approx_counts: np.ndarray
    approx_items: np.ndarray
    approx_item_group: np.ndarray

    @property
    def n_exact(self) -> int:
        return int(sum(b.groups.size for b in self.buckets))

    def inputs(self) -> dict[str, np.ndarray]:
        """Every array of the plan by a stable name (the model reads them as data)."""
        out = {}
        for b, block in enumerate(self.blocks):
            out.update({f"cp{b}_items": block.items, f"cp{b}_order": block.order, f"cp{b}_target": block.target,
                        f"cp{b}_groups": block.groups, f"cp{b}_init": block.initial_state(),
                        f"cp{b}_cell_row": block.cell_row, f"cp{b}_shift": block.shift})
        if self.approx_groups.size:
            out.update({"cpa_groups": self.approx_groups, "cpa_order": self.approx_order,
                        "cpa_counts": self.approx_counts, "cpa_items": self.approx_items,
                        "cpa_item_group": self.approx_item_group})
        return out

    def structure(self) -> list:
        """What the computation's shapes depend on (for keys of compiled programs)."""
        return [[b.groups.size, b.steps, b.n_cells] for b in self.blocks] + [int(self.approx_groups.size)]


def _next_power_of_two(values: np.ndarray) -> np.ndarray:
    return (2 ** np.ceil(np.log2(np.maximum(values, 1)))).astype(np.int64)


def count_plan(item_group: np.ndarray, counts: np.ndarray, *, group_budget: int = GROUP_BUDGET,
               total_budget: int = TOTAL_BUDGET) -> CountPlan:
    """Lay out the exact-counts recursion: which groups are exact, in which bucket, and the rest.

    A group of n items runs n steps over a state that holds the counts of every class but its most
    frequent: O(n^2) for two classes. The layout depends on the group sizes alone, never on the
    counts, so that one compiled program serves every data set whose groups have the same sizes (new
    groupings, cross-validation folds, bootstrap draws): the class in position t + 1 of a group's
    order (most frequent first) has at most n // (t + 2) items, and that bound + 1, rounded up to a
    power of two, is the state's extent along its axis. Groups share a bucket when their sizes round
    up to the same power of two, and that padded cost is what the budgets count; the buckets then run
    as one recursion (`merge_buckets`: one loop for XLA to compile, whatever the sizes) unless their
    sizes are so different that padding to the longest would cost too much. Groups within `group_budget` are exact, cheapest first while the total stays within
    `total_budget` (what reverse-mode differentiation keeps per state copy); the rest use the normal
    approximation. The counts give each group's class order and its target cell.
    """
    item_group = np.asarray(item_group, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    n_items, (n_groups, n_classes) = item_group.size, counts.shape
    sizes = np.bincount(item_group, minlength=n_groups)
    order = np.argsort(-counts, axis=1, kind="stable")  # most frequent class first
    tracked = np.take_along_axis(counts, order, axis=1)[:, 1:]
    padded = _next_power_of_two(sizes)
    extents = _next_power_of_two(sizes[:, None] // np.arange(2, n_classes + 1) + 1)  # >= tracked + 1
    cost = padded * np.prod(extents, axis=1)
    exact = cost <= group_budget
    by_cost = np.argsort(np.where(exact, cost, np.iinfo(np.int64).max), kind="stable")
    running = np.cumsum(np.where(exact, cost, 0)[by_cost])
    exact[by_cost[running > total_budget]] = False
    members = np.argsort(item_group, kind="stable")
    starts = np.concatenate([[0], np.cumsum(sizes)])
    keys = np.column_stack([padded, extents])
    buckets = []
    for key in np.unique(keys[exact], axis=0):
        groups = np.flatnonzero(exact & (keys == key).all(axis=1))
        steps, shape = int(key[0]), tuple(int(e) for e in key[1:])
        items = np.full((groups.size, steps), n_items, dtype=np.int64)
        for row, g in enumerate(groups):
            items[row, :sizes[g]] = members[starts[g]:starts[g + 1]]
        target = np.ravel_multi_index(tuple(tracked[groups].T), shape).astype(np.int64) if shape \
            else np.zeros(groups.size, dtype=np.int64)
        buckets.append(CountBucket(groups, items, order[groups], shape, target))
    approx = np.flatnonzero(~exact)
    in_approx = np.isin(item_group, approx)
    approx_items = np.flatnonzero(in_approx)
    blocks = tuple(CountBlock.of(b, n_items, n_classes) for b in merge_buckets(buckets, total_budget))
    return CountPlan(n_items, n_groups, n_classes, tuple(buckets), blocks, approx, order[approx], tracked[approx],
                     approx_items, np.searchsorted(approx, item_group[approx_items]).astype(np.int64))
