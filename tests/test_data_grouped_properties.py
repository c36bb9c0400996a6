"""Property-based tests of the WSC validators: any table gives valid data or an InputError.

Valid data means nothing was silently dropped: every click row is counted,
the counts add up to the total item weight (before down-weighting), and
every group of the groups table is kept once.
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import (WEIGHTS, colliding_levels, corrupted, group_indices, messy_frame, total_weight,
                        valid_or_input_error)

from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.data.tables import read_table
from bayes_wsc.errors import InputError

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

CLICK_KINDS = {"group": ["clean_id", "clean_id", "int", "text", "mixed"],
               "bounce": ["clean_level", "clean_level", "int", "bool", "float", "mixed"],
               "speed": ["clean_level", "int", "mixed"],
               "w": ["clean_float", "clean_float", "float", "int", "text", "mixed"]}
GROUP_KINDS = {"group": ["clean_id", "clean_id", "int", "mixed"],
               "he": ["clean_float", "clean_float", "float", "int", "text", "mixed"],
               "he_prob": ["clean_float", "float", "mixed"]}


def check_counts(clicks, groups, weight_col, max_group_weight):
    def check(data: GroupedCounts):
        assert np.isfinite(data.counts).all() and (data.counts >= 0).all()
        assert np.isfinite(data.he).all()
        assert data.counts.shape == (len(groups), data.bins.n_bins)
        assert len(set(data.group_ids)) == data.n_groups == len(groups)
        assert int(data.n_items.sum()) == len(clicks)
        assert (data.group_scale > 0).all() and (data.group_scale <= 1).all()
        raw = data.counts / data.group_scale[:, None]
        np.testing.assert_allclose(raw.sum(), total_weight(clicks, weight_col), rtol=1e-9)
        if max_group_weight is not None:
            assert (data.counts.sum(axis=1) <= max_group_weight * (1 + 1e-9)).all()
        # every click lands in the bin of its own levels: re-indexing the clicks reproduces the totals
        index = data.bins.index(clicks, "clicks")
        assert index.min() >= 0 and index.max() < data.bins.n_bins
    return check


@st.composite
def wsc_tables(draw):
    """Click and group tables that are valid before `corrupted` (which leaves about a third clean):
    random sizes, groups with no clicks, unused levels, integer or text levels, weights."""
    n_groups = draw(st.integers(1, 5))
    ids = draw(st.sampled_from([[f"g{i}" for i in range(n_groups)], list(range(n_groups))]))
    n = draw(st.integers(1, 15))
    clicks = pd.DataFrame({
        "group": draw(st.lists(st.sampled_from(ids), min_size=n, max_size=n)),
        "bounce": draw(st.lists(st.sampled_from(["y", "n"]), min_size=n, max_size=n)),
        "speed": draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)),
        "w": draw(st.lists(st.floats(0, 10), min_size=n, max_size=n)),
    })
    he = draw(st.lists(st.floats(-20, 20), min_size=n_groups, max_size=n_groups))
    groups = pd.DataFrame({"group": ids, "he": he})
    if draw(st.booleans()):
        groups = groups.assign(he_prob=1 / (1 + np.exp(-groups.pop("he").to_numpy())))
    return draw(corrupted(clicks)), draw(corrupted(groups))


@SETTINGS
@given(tables=st.one_of(wsc_tables(), wsc_tables(), st.tuples(
           messy_frame(["group", "bounce", "speed", "w"], kinds=CLICK_KINDS),
           messy_frame(["group", "he", "he_prob"], kinds=GROUP_KINDS))),
       use_weight=st.booleans(), behavior=st.sampled_from([None, None, ["bounce"], ["bounce", "speed"], ["group"]]),
       max_group_weight=st.one_of(st.none(), st.none(), st.sampled_from([0.5, 3.0, 0.0, -1.0, float("nan")])))
def test_from_frames_is_valid_or_input_error(tables, use_weight, behavior, max_group_weight):
    clicks, groups = tables
    weight_col = "w" if use_weight else None
    valid_or_input_error(
        lambda: GroupedCounts.from_frames(clicks, groups, weight_col=weight_col, behavior=behavior,
                                          max_group_weight=max_group_weight),
        check_counts(clicks, groups, weight_col, max_group_weight))


CELLS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 50),
                  st.sampled_from(["1", "a", None]))


@SETTINGS
@given(n_groups=st.integers(0, 5), n_bins=st.integers(0, 4), data=st.data())
def test_from_counts_is_valid_or_input_error(n_groups, n_bins, data):
    clean = data.draw(st.booleans())
    cell = st.integers(0, 20) if clean else CELLS
    counts = data.draw(st.lists(st.lists(cell, min_size=n_bins, max_size=n_bins), min_size=n_groups,
                                max_size=n_groups))
    if n_groups and not n_bins:
        counts = [[] for _ in range(n_groups)]
    he_len = n_groups if data.draw(st.integers(0, 5)) else data.draw(st.integers(0, 6))
    he = data.draw(st.lists(st.floats(-30, 30) if clean else CELLS, min_size=he_len, max_size=he_len))
    ids = data.draw(st.one_of(st.none(), st.lists(st.sampled_from(["a", "b", "c", "d", "e", 1, 2, None]),
                                                  min_size=max(0, n_groups - 1), max_size=n_groups + 1)))
    labels = data.draw(st.one_of(st.none(), st.lists(st.sampled_from(["x", "y", "z", "w", 0, 1]),
                                                     min_size=max(0, n_bins - 1), max_size=n_bins + 1)))
    max_group_weight = data.draw(st.one_of(st.none(), st.sampled_from([2.0, 0.0, -1.0, float("nan"), "5"])))

    def check(result: GroupedCounts):
        raw = np.asarray(counts, dtype=float).reshape(n_groups, n_bins)
        assert result.counts.shape == raw.shape
        np.testing.assert_allclose(result.counts / result.group_scale[:, None], raw, rtol=1e-12)
        assert len(set(result.group_ids)) == n_groups and len(result.bins.labels) == n_bins
        assert len(set(result.bins.labels)) == n_bins

    valid_or_input_error(lambda: GroupedCounts.from_counts(counts, he, group_ids=ids, bin_labels=labels,
                                                           max_group_weight=max_group_weight), check)


@settings(max_examples=60, deadline=None)
@given(content=st.one_of(st.binary(max_size=64), st.text(max_size=64).map(str.encode)),
       suffix=st.sampled_from([".csv", ".parquet", ".pq", ".txt", ".nc", ""]))
def test_read_table_of_any_bytes(tmp_path_factory, content, suffix):
    path = tmp_path_factory.mktemp("bytes") / f"table{suffix}"
    path.write_bytes(content)
    valid_or_input_error(lambda: read_table(path, "clicks"), lambda frame: len(frame) > 0)


@SETTINGS
@given(items=messy_frame(["group", "bounce"], min_rows=0,
                         kinds={"group": ["clean_id", "mixed"], "bounce": ["clean_level", "mixed", "int"]}))
def test_bins_index_of_any_items(items):
    """Looking up the bins of new items (what predict does) names the bad value or succeeds."""
    clicks = pd.DataFrame({"group": ["g0", "g1", "g1"], "bounce": ["x", "y", "z"]})
    groups = pd.DataFrame({"group": ["g0", "g1"], "he": [0.0, 1.0]})
    data = GroupedCounts.from_frames(clicks, groups)

    def check(index):
        assert index.shape == (len(items),) and (index >= 0).all() and (index < data.n_bins).all()
        expected = pd.Index(list(data.bins.levels[0])).get_indexer(items["bounce"].astype(str))
        np.testing.assert_array_equal(index, expected)

    valid_or_input_error(lambda: data.bins.index(items, "items"), check)


def test_valid_or_input_error_lets_other_exceptions_through():
    """The helper itself can fail: a crash is not mistaken for a clear error."""
    def crash():
        raise KeyError("boom")

    with pytest.raises(KeyError):
        valid_or_input_error(crash, lambda r: None)
    with pytest.raises(AssertionError):
        valid_or_input_error(lambda: (_ for _ in ()).throw(InputError("two\nlines")), lambda r: None)
    with pytest.raises(AssertionError):
        valid_or_input_error(lambda: 1, lambda r: (_ for _ in ()).throw(AssertionError("bad result")))


# ---------------------------------------------------------------------- the classes of issue 37
@SETTINGS
@given(first=colliding_levels(), second=colliding_levels(), names=st.lists(colliding_levels(1), min_size=2, max_size=2))
def test_crossed_bins_never_share_a_label(first, second, names):
    """Levels and column names written with the label's own characters (", ", "=", quotes, spaces): every
    bin of the crossing keeps its own label, so the estimand table lists one row per bin."""
    from bayes_wsc.data.grouped import BehaviorBins

    columns = (names[0][0], names[1][0] + ("_" if names[1][0] == names[0][0] else ""))
    bins = BehaviorBins(columns, (tuple(first), tuple(second)))
    assert len(set(bins.labels)) == bins.n_bins == len(first) * len(second), bins.labels


@SETTINGS
@given(data=st.data(), n=st.integers(2, 6))
def test_from_arrays_takes_whole_indices_exactly_or_refuses(data, n):
    """Group indices of any kind (fractions, NaN, text, booleans, whole floats): a container whose groups
    are exactly the given whole numbers, or one line; never a fraction truncated to a group."""
    from bayes_wsc.data.proportions import LabelProportions

    groups = data.draw(group_indices(n))
    x = np.arange(2.0 * n).reshape(n, 2) % 5
    shares = np.full((4, 2), 0.5)
    result = valid_or_input_error(lambda: LabelProportions.from_arrays(x, groups, shares), lambda d: None)
    if result is not None:
        given = np.asarray(groups, dtype=float)
        assert np.array_equal(result.item_group, given) and all(not isinstance(g, (str, bool)) for g in groups)


@SETTINGS
@given(weight=WEIGHTS, cap=st.one_of(st.none(), WEIGHTS.filter(lambda w: w > 0)))
def test_data_weighing_almost_nothing_are_said_or_refused(weight, cap):
    """Weights near zero (or a cap near zero): data that the arithmetic cannot hold are refused, and data
    whose clicks weigh less than one click in all are said to barely move the posterior, before the fit."""
    from bayes_wsc.models.wsc import WSC

    rng = np.random.default_rng(0)
    clicks = pd.DataFrame({"group": rng.choice(["a", "b", "c"], 30), "x": rng.choice(["p", "q"], 30), "w": weight})
    groups = pd.DataFrame({"group": ["a", "b", "c"], "he": [-1.0, 0.0, 1.0]})
    data = valid_or_input_error(
        lambda: GroupedCounts.from_frames(clicks, groups, weight_col="w", max_group_weight=cap), lambda d: None)
    if data is None:
        return
    said = any("less than one click" in m for m in WSC().data_messages(data))
    assert said == (data.counts.sum() < 1.0), (weight, cap, data.counts.sum())


def test_a_boolean_among_group_indices_is_refused():
    """The case hypothesis found on Python 3.12: [0, 2, 3, True] became groups 0, 2, 3, 1 in NumPy's array."""
    from bayes_wsc.data.proportions import LabelProportions

    with pytest.raises(InputError, match="groups must be whole-number indices, got True at position 3"):
        LabelProportions.from_arrays(np.arange(8.0).reshape(4, 2), [0, 2, 3, True], np.full((4, 2), 0.5))
