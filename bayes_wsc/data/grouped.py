"""Grouped click data with a noisy group-level label (seed 000).

Items (clicks) belong to groups; each item has one behavior bin, the crossing
of one or more categorical behavior columns. Each group has a noisy logit
estimate HE of its share of class-1 items. The container validates once and
keeps only the sufficient statistics: the I x K table of weighted counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from bayes_wsc._lazy import LazyModule
from bayes_wsc.data.tables import (float_array, key_column, numeric_column, require_columns, require_rows,
                                   require_unique, text_column)
from bayes_wsc.errors import InputError

special = LazyModule("scipy.special")

MAX_BINS = 100_000
#: a logit beyond this is a probability of 1 - 4e-44: surely a probability or percentage given as a logit
MAX_ABS_HE = 100.0
#: the most weighted items one group may hold (after down-weighting): scaling a data set up, the MAP
#: settles smoothly to 1e6 items in the heaviest group and was seen to jump, while reporting
#: convergence, from 3e6 to 1e7 on (benchmarks/map_weight_limit.py); --max-group-weight caps groups
MAX_GROUP_WEIGHT = 1e6


def _sorted_levels(values: pd.Series) -> list[str]:
    """Distinct levels as text (as `BehaviorBins.index` matches them: 1 and 1.0 in one object column
    are two levels), in natural order: numeric when every level is a number."""
    uniques = pd.unique(values.astype(str))
    numeric = pd.to_numeric(pd.Series(uniques), errors="coerce")
    if numeric.notna().all():
        return [uniques[i] for i in np.argsort(numeric.to_numpy(), kind="stable")]
    return sorted(uniques)


def _label_part(text: str) -> str:
    """A column name or level as it appears in a crossed bin's label: as written, or quoted (JSON) when it
    holds what the label's syntax uses."""
    import json

    plain = not any(ch in text for ch in ',="') and text == text.strip() and text != ""
    return text if plain else json.dumps(text, ensure_ascii=False)


@dataclass(frozen=True)
class BehaviorBins:
    """The crossing of behavior columns into K bins.

    `levels[c]` lists the levels of column `columns[c]` as text; bin k is the
    row-major crossing, so `bin_levels[k, c]` is the level index of column c.
    """

    columns: tuple[str, ...]
    levels: tuple[tuple[str, ...], ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(lv) for lv in self.levels)

    @property
    def n_bins(self) -> int:
        return int(np.prod(self.shape))

    @property
    def bin_levels(self) -> np.ndarray:
        rest, columns = np.arange(self.n_bins), []
        for size in reversed(self.shape):  # row-major, as np.unravel_index (which stops at 64 columns)
            rest, code = np.divmod(rest, size)
            columns.append(code)
        return np.stack(columns[::-1], axis=1) if columns else np.zeros((self.n_bins, 0), dtype=np.int64)

    @property
    def labels(self) -> list[str]:
        """Each bin's name: its level, or for crossed columns "a=x, b=y", a name or level that holds the
        separators (',' or '=') or a quote, or spaces at its ends, written as a quoted JSON string, so that
        two bins never share a name (levels "x" and "x, b=y" of a, "y, b=z" and "z" of b)."""
        if len(self.columns) == 1:
            return list(self.levels[0])
        names = [_label_part(c) for c in self.columns]
        levels = [[_label_part(v) for v in lv] for lv in self.levels]
        return [", ".join(f"{names[j]}={levels[j][i]}" for j, i in enumerate(row)) for row in self.bin_levels]

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, columns: Sequence[str], what: str) -> BehaviorBins:
        levels = []
        for column in columns:
            values = frame[column]
            if values.isna().any():
                row = int(np.flatnonzero(values.isna().to_numpy())[0])
                raise InputError(f"{what} behavior column {column!r} has a missing value (row {row + 1})")
            text_column(values, column, f"{what} behavior")
            levels.append(tuple(str(v) for v in _sorted_levels(values)))
        bins = cls(tuple(columns), tuple(levels))
        if bins.n_bins > MAX_BINS:
            raise InputError(
                f"crossing behavior columns {list(columns)} gives {bins.n_bins} bins (more than {MAX_BINS}); "
                "use fewer columns or coarser levels"
            )
        return bins

    def index(self, frame: pd.DataFrame, what: str) -> np.ndarray:
        """Bin index of every row; a level not seen in training is an error that names it."""
        require_columns(frame, self.columns, what)
        codes = []
        for column, levels in zip(self.columns, self.levels):
            text = frame[column].astype(str)
            if frame[column].isna().any():
                row = int(np.flatnonzero(frame[column].isna().to_numpy())[0])
                raise InputError(f"{what} behavior column {column!r} has a missing value (row {row + 1})")
            code = pd.Index(list(levels)).get_indexer(text)
            if (code < 0).any():
                row = int(np.flatnonzero(code < 0)[0])
                raise InputError(
                    f"{what} behavior column {column!r} has level {text.iloc[row]!r} (row {row + 1}) "
                    "that the fit never saw"
                )
            codes.append(code.astype(np.int64))
        index = np.zeros(len(frame), dtype=np.int64)
        for code, size in zip(codes, self.shape):  # row-major, as np.ravel_multi_index (which stops at 64 columns)
            index = index * size + code
        return index


@dataclass
class GroupedCounts:
    """Sufficient statistics for the HE -> mu -> Z -> X model.

    Attributes
    ----------
    counts : (I, K) weighted item counts per group and bin, after down-weighting.
    he : (I,) noisy logit-scale estimate of each group's class-1 share.
    group_ids : (I,) group identifiers as text.
    bins : how the K bins cross the behavior columns.
    n_items : (I,) raw number of items per group (unweighted).
    group_scale : (I,) down-weighting factor applied to each group's counts.
    """

    counts: np.ndarray
    he: np.ndarray
    group_ids: np.ndarray
    bins: BehaviorBins
    n_items: np.ndarray
    group_scale: np.ndarray
    settings: dict = field(default_factory=dict)

    def __post_init__(self):
        self.counts = _floats(self.counts, "counts")
        self.he = _floats(self.he, "he")
        if self.counts.ndim != 2:
            raise InputError(f"counts must be a 2-D groups x bins table, got shape {self.counts.shape}")
        n_groups, n_bins = self.counts.shape
        ids = np.asarray(self.group_ids, dtype=object).reshape(-1)
        if ids.shape != (n_groups,):
            raise InputError(f"there are {ids.size} group ids but {n_groups} groups")
        if pd.isna(pd.Series(ids, dtype=object)).any():
            raise InputError("group ids have a missing value")
        self.group_ids = np.asarray(self.group_ids).astype(str)
        if self.he.shape != (n_groups,):
            raise InputError(f"he has {self.he.size} values but there are {n_groups} groups")
        if n_bins != self.bins.n_bins:
            raise InputError(f"counts have {n_bins} bins but the behavior crossing has {self.bins.n_bins}")
        if not np.isfinite(self.he).all():
            raise InputError(f"he has a non-finite value {float(self.he[~np.isfinite(self.he)][0])!r}")
        if (np.abs(self.he) > MAX_ABS_HE).any():
            bad = int(np.flatnonzero(np.abs(self.he) > MAX_ABS_HE)[0])
            raise InputError(f"he of group {self.group_ids[bad]!r} is {float(self.he[bad])!r}, not a plausible logit "
                             f"(|he| <= {MAX_ABS_HE:g}); give probabilities as he_prob")
        if not np.isfinite(self.counts).all() or (self.counts < 0).any():
            raise InputError("counts must be finite and non-negative")
        if not np.isfinite(self.counts.sum()):
            raise InputError("counts are too large: their total overflows")
        tiny = (self.counts > 0) & (self.counts < np.finfo(float).tiny)
        if tiny.any():
            group, column = np.argwhere(tiny)[0]
            raise InputError(f"group {str(self.group_ids[group])!r} holds {float(self.counts[group, column]):.3g} "
                             f"weighted items in bin {str(self.bins.labels[column])!r}, a positive weight below the "
                             f"smallest the arithmetic holds ({np.finfo(float).tiny:.3g}); rescale the weights")
        heaviest = int(np.argmax(self.counts.sum(axis=1)))
        if self.counts[heaviest].sum() > MAX_GROUP_WEIGHT:
            raise InputError(f"group {str(self.group_ids[heaviest])!r} holds {self.counts[heaviest].sum():.4g} "
                             f"weighted items, more than the {MAX_GROUP_WEIGHT:g} per group that the MAP's arithmetic holds; "
                             f"cap each group with max_group_weight (at most {MAX_GROUP_WEIGHT:g})")
        if self.counts.sum() <= 0:
            raise InputError("there are no items (all counts are zero)")
        require_unique(self.group_ids, "group id")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_frames(
        cls,
        clicks: pd.DataFrame,
        groups: pd.DataFrame,
        *,
        group_col: str = "group",
        behavior: Sequence[str] | None = None,
        weight_col: str | None = None,
        he_col: str | None = None,
        he_prob_col: str | None = None,
        max_group_weight: float | None = None,
        count_col: str | None = None,
        what: str = "clicks",
    ) -> GroupedCounts:
        """Validate one-row-per-item clicks and one-row-per-group HE, and count.

        By default the behavior columns are all click columns other than the
        group, weight and count columns; HE is read from `he` (logit scale)
        or, if absent, from `he_prob` (a probability in (0, 1)). With
        `count_col`, each clicks row stands for that many items (an
        aggregated table, as `data.stream` produces) and `weight_col`, if
        given, holds their summed weight.
        """
        require_rows(clicks, what)
        require_rows(groups, "groups")
        require_columns(clicks, [group_col], what)
        require_columns(groups, [group_col], "groups")
        he, he_col, he_prob_col = _read_he(groups, he_col, he_prob_col)
        group_ids = key_column(groups, group_col, "groups")
        duplicated = group_ids.duplicated()
        if duplicated.any():
            row = int(np.flatnonzero(duplicated.to_numpy())[0])
            raise InputError(f"groups has a duplicate row for group {group_ids.iloc[row]!r} (row {row + 1})")

        items = np.ones(len(clicks))
        if count_col is not None:
            require_columns(clicks, [count_col], what)
            items = numeric_column(clicks, count_col, what, lower=0.0)
        if weight_col is not None:
            require_columns(clicks, [weight_col], what)
            weights = numeric_column(clicks, weight_col, what, lower=0.0)
        else:
            weights = items
        not_behavior = (group_col, weight_col, count_col)
        if behavior is None:
            behavior = [c for c in clicks.columns if c not in not_behavior]
            if not behavior:
                raise InputError(f"{what} has no behavior columns besides the group and weight columns")
        behavior = list(behavior)
        require_columns(clicks, behavior, what)
        for column in behavior:
            if column in not_behavior:
                raise InputError(f"behavior column {column!r} is also the group, weight or count column")

        click_groups = key_column(clicks, group_col, what)
        group_index = pd.Index(group_ids).get_indexer(click_groups)
        if (group_index < 0).any():
            row = int(np.flatnonzero(group_index < 0)[0])
            raise InputError(
                f"{what} row {row + 1} is in group {click_groups.iloc[row]!r}, which is absent from groups"
            )
        bins = BehaviorBins.from_frame(clicks, behavior, what)
        bin_index = bins.index(clicks, what)
        n_groups, n_bins = len(group_ids), bins.n_bins
        flat = group_index.astype(np.int64) * n_bins + bin_index
        counts = np.bincount(flat, weights=weights, minlength=n_groups * n_bins).reshape(n_groups, n_bins)
        n_items = np.rint(np.bincount(group_index, weights=items, minlength=n_groups)).astype(np.int64)
        counts, scale = downweight(counts, max_group_weight)
        heavy = ~(counts.sum(axis=1) <= MAX_GROUP_WEIGHT)
        if weight_col is not None and heavy.any():
            in_group = heavy[group_index]
            row = int(np.flatnonzero(in_group)[np.argmax(weights[in_group])])
            raise InputError(
                f"{what} column {weight_col!r} has value {float(weights[row])!r} (row {row + 1}): group "
                f"{click_groups.iloc[row]!r} weighs {float(counts[group_index[row]].sum()):.4g} in all, more than "
                f"the {MAX_GROUP_WEIGHT:g} per group that the MAP's arithmetic holds; rescale the weights, or cap "
                f"each group with --max-group-weight (at most {MAX_GROUP_WEIGHT:g})")
        settings = {
            "group_col": group_col,
            "behavior": behavior,
            "weight_col": weight_col,
            "he_col": he_col,
            "he_prob_col": he_prob_col,
            "max_group_weight": max_group_weight,
        }
        return cls(counts, he, group_ids.to_numpy(), bins, n_items, scale, settings)

    @classmethod
    def from_counts(
        cls,
        counts: np.ndarray,
        he: np.ndarray,
        *,
        group_ids: Sequence | None = None,
        bin_labels: Sequence | None = None,
        behavior: str = "behavior",
        max_group_weight: float | None = None,
    ) -> GroupedCounts:
        """Build directly from an I x K count table (simulations, tests, pre-aggregated data)."""
        counts = _floats(counts, "counts")
        if counts.ndim != 2:
            raise InputError(f"counts must be a 2-D groups x bins table, got shape {counts.shape}")
        n_groups, n_bins = counts.shape
        group_ids = np.arange(n_groups) if group_ids is None else np.asarray(group_ids, dtype=object)
        bin_labels = [str(k) for k in (range(n_bins) if bin_labels is None else bin_labels)]
        if len(bin_labels) != n_bins:
            raise InputError(f"there are {len(bin_labels)} bin labels but {n_bins} bins")
        require_unique(bin_labels, "bin label")
        bins = BehaviorBins((behavior,), (tuple(bin_labels),))
        with np.errstate(invalid="ignore"):  # non-finite counts are rejected with a message by __post_init__
            n_items = np.rint(counts.sum(axis=1)).astype(np.int64)
        counts, scale = downweight(counts, max_group_weight)
        settings = {"group_col": "group", "behavior": [behavior], "weight_col": None,
                    "he_col": "he", "he_prob_col": None, "max_group_weight": max_group_weight}
        return cls(counts, he, group_ids, bins, n_items, scale, settings)

    # ------------------------------------------------------------------ views
    @property
    def n_groups(self) -> int:
        return self.counts.shape[0]

    @property
    def n_bins(self) -> int:
        return self.counts.shape[1]

    @property
    def group_totals(self) -> np.ndarray:
        """Weighted items per group: the weights of the click-weighted mean pi."""
        return self.counts.sum(axis=1)

    @property
    def coords(self) -> dict[str, list]:
        return {"group": list(self.group_ids), "bin": self.bins.labels}

    def bin_factor_coords(self) -> dict[str, tuple[str, list[str]]]:
        """Non-dimension coordinates along `bin`: the level of each behavior column."""
        bin_levels = self.bins.bin_levels
        return {
            f"level_{c}": ("bin", [self.bins.levels[j][i] for i in bin_levels[:, j]])
            for j, c in enumerate(self.bins.columns)
        }

    def subset(self, group_index: np.ndarray) -> GroupedCounts:
        """The same data restricted to some groups (half-sampling, cross-validation)."""
        group_index = np.asarray(group_index)
        return GroupedCounts(
            self.counts[group_index], self.he[group_index], self.group_ids[group_index], self.bins,
            self.n_items[group_index], self.group_scale[group_index], dict(self.settings),
        )

    def group_positions(self, ids: Sequence) -> np.ndarray:
        """Position of each id among the groups, -1 where unknown."""
        return pd.Index(self.group_ids).get_indexer(pd.Index(np.asarray(ids).astype(str)))


def downweight(counts: np.ndarray, max_group_weight: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Scale each group so that its total weight is at most M (seed 000, Sec. 6.2)."""
    totals = counts.sum(axis=1)
    if max_group_weight is None:
        return counts, np.ones(len(totals))
    if (isinstance(max_group_weight, bool) or not isinstance(max_group_weight, (int, float, np.number))
            or not np.isfinite(max_group_weight) or max_group_weight <= 0):
        raise InputError(f"max_group_weight must be a positive number, got {max_group_weight!r}")
    scale = np.minimum(1.0, max_group_weight / np.maximum(totals, np.finfo(float).tiny))
    return counts * scale[:, None], scale


def _floats(values, name: str) -> np.ndarray:
    """`values` as a float array, or an InputError naming them (`float_array`)."""
    return float_array(values, name)


def _read_he(groups, he_col: str | None, he_prob_col: str | None) -> tuple[np.ndarray, str | None, str | None]:
    """HE on the logit scale, and which column it came from."""
    if he_col is not None and he_prob_col is not None:
        raise InputError("give either he_col or he_prob_col, not both")
    if he_col is None and he_prob_col is None:
        if "he" in groups.columns:
            he_col = "he"
        elif "he_prob" in groups.columns:
            he_prob_col = "he_prob"
        else:
            raise InputError("groups has neither an 'he' (logit) nor an 'he_prob' (probability) column")
    column = he_col if he_col is not None else he_prob_col
    require_columns(groups, [column], "groups")
    if he_col is not None:
        given = he = numeric_column(groups, he_col, "groups")
    else:
        given = numeric_column(groups, he_prob_col, "groups", lower=0.0, upper=1.0, lower_open=True, upper_open=True)
        he = special.logit(given)
    extreme = np.abs(he) > MAX_ABS_HE
    if extreme.any():
        row = int(np.flatnonzero(extreme)[0])
        why = (f"not a plausible logit (|he| <= {MAX_ABS_HE:g}); give probabilities as he_prob" if he_col is not None
               else f"a logit of {float(he[row]):.4g}: closer to 0 or 1 than any estimate can be "
                    f"(|logit| <= {MAX_ABS_HE:g})")
        raise InputError(f"groups column {column!r} has value {float(given[row])!r} (row {row + 1}), {why}")
    return he, he_col, he_prob_col
