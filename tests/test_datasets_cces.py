"""The paper's Table 1 protocol (seed 000, Sec. 6.1) on real data: CCES 2016 vote by state.

The fast tests check the shipped data set; the slow ones run a reduced
benchmarks/table1_real_data.py (10 halvings of the states, MAP only) and check
the orderings of the paper where they hold on this data. Where they do not
(latent's RMSE; the income x college x race bins), the tests are marked
xfail with the reason, so that a change in either direction shows.
"""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayes_wsc.datasets import CCES2016_COLUMNS, load_cces2016

BENCHMARK = Path(__file__).resolve().parents[1] / "benchmarks" / "table1_real_data.py"
N_SPLITS = 10


def load_benchmark():
    """benchmarks/ is no package: import the script by path (registered, as its dataclass needs)."""
    name = "benchmarks_table1_real_data"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, BENCHMARK)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


# ---------------------------------------------------------------------- fast: the data set
def test_cces2016_loader_columns_rows_no_missing():
    frame = load_cces2016()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == list(CCES2016_COLUMNS)
    assert len(frame) == 38932
    assert not frame.isna().any().any()
    assert frame["state"].nunique() == 51
    assert frame.groupby("state").size().min() >= 50
    assert set(frame["vote_trump"].unique()) == {0, 1}
    assert 0.35 < frame["vote_trump"].mean() < 0.5
    assert frame["income"].between(1, 12).all()
    assert set(frame["college"].unique()) == {0, 1}
    assert set(frame["female"].unique()) == {0, 1}
    assert set(frame["born_again"].unique()) == {0, 1}
    assert frame["religion_importance"].between(1, 4).all()
    assert frame["ideology"].between(1, 5).all()
    assert frame["age"].between(18, 99).all() and 45 < frame["age"].mean() < 58
    assert set(frame["race"].unique()) == {"White", "Black", "Hispanic", "Asian", "Mixed", "Other",
                                           "Native_American", "Middle_Eastern"}


def test_group_splits_are_halvings_of_the_states():
    bench = load_benchmark()
    frame = bench.prepare()
    splits = bench.group_splits(frame["state"], 3, seed=0)
    states = set(frame["state"])
    for train, test in splits:
        assert len(train) == 25 and len(test) == 26
        assert set(train) | set(test) == states and not set(train) & set(test)
    assert not np.array_equal(splits[0][0], splits[1][0])
    assert frame["income5"].between(0, 4).all() and set(frame["race3"]) == {"White", "Black", "Other"}


# ---------------------------------------------------------------------- slow: the reduced Table 1
@pytest.fixture(scope="module")
def table():
    bench = load_benchmark()
    frame = bench.prepare()
    per_split = pd.concat([bench.run_table1(frame, spec, n_splits=N_SPLITS, seed=0, nuts_splits=0)
                           for spec in ("paper", "religion", "ideology")], ignore_index=True)
    summary = bench.summarize(per_split)
    return {(r.spec, r.method): r for r in summary.itertuples()}


def err(table, spec, method):
    return table[(spec, method)].error_mean


def rmse(table, spec, method):
    return table[(spec, method)].rmse_mean


@pytest.mark.slow
def test_direct_is_barely_better_than_null(table):
    """As in the paper, regressing on the coarse labels hardly helps: every direct estimate stays
    near the population share (here below 0.5, so its 0-1 error equals the null's)."""
    for spec in ("paper", "religion", "ideology"):
        assert err(table, spec, "direct") <= err(table, spec, "null") + 1e-12
        assert rmse(table, spec, "direct") < rmse(table, spec, "null")
        assert rmse(table, spec, "null") - rmse(table, spec, "direct") < 0.02


@pytest.mark.slow
def test_latent_beats_direct_and_nears_oracle_in_error_religion_bins(table):
    """born-again x religion x college: null = direct > latent ~ oracle in 0-1 error."""
    assert err(table, "religion", "latent_map") < err(table, "religion", "direct") - 0.02
    assert err(table, "religion", "latent_map") - err(table, "religion", "oracle") < 0.04
    assert err(table, "religion", "oracle") < err(table, "religion", "direct")


@pytest.mark.slow
def test_latent_beats_direct_on_the_near_outcome_control(table):
    """ideology x college (nearly the outcome): latent recovers most of the oracle's gain."""
    gain_latent = err(table, "ideology", "direct") - err(table, "ideology", "latent_map")
    gain_oracle = err(table, "ideology", "direct") - err(table, "ideology", "oracle")
    assert gain_latent > 0.5 * gain_oracle
    assert rmse(table, "ideology", "latent_map") < rmse(table, "ideology", "direct") - 0.03


@pytest.mark.slow
def test_map_with_dirichlet_2_is_the_papers_em(table):
    """WSC(wh=inf, w_concentration=2) MAP and the paper's EM (+1 smoothing) give the same predictions."""
    for spec in ("paper", "religion", "ideology"):
        assert abs(rmse(table, spec, "latent_map") - rmse(table, spec, "latent_em")) < 0.003
        assert abs(err(table, spec, "latent_map") - err(table, spec, "latent_em")) < 0.003


@pytest.mark.slow
@pytest.mark.xfail(reason="CCES 2016 breaks the WSC assumption X indep. of state given the vote: states "
                   "differ in religiosity more than their Trump share implies, so the latent rho is "
                   "overconfident (near 0 and 1) and its RMSE is worse than the null's", strict=False)
def test_latent_rmse_beats_direct_religion_bins(table):
    assert rmse(table, "religion", "latent_map") < rmse(table, "religion", "direct")


@pytest.mark.slow
@pytest.mark.xfail(reason="income x college x race: Black voters are most numerous in Southern states that "
                   "Trump won, so the state-level (ecological) association of race and vote has the "
                   "opposite sign of the individual one and the latent model inverts race", strict=False)
def test_latent_beats_direct_paper_bins(table):
    assert err(table, "paper", "latent_map") < err(table, "paper", "direct")
    assert rmse(table, "paper", "latent_map") < rmse(table, "paper", "direct")
