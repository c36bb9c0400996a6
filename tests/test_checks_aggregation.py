"""The first model's aggregation-bias check (bayes_wsc.checks.aggregation).

Fast: it flags data whose behavior depends on the group beyond the class, not data from the model, and
bad settings are one line before any fit. Slow: a reduced benchmarks/aggregation_check.py on CCES 2016.
"""

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.special import expit

from bayes_wsc.checks.aggregation import PHI_MAX, aggregation_bias_check, dispersion
from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.errors import InputError
from bayes_wsc.models.wsc import WSC
from bayes_wsc.simulate.wsc import emissions_from_rho, sec5_rho

KEYS = {"check", "statistic", "reference", "p_value", "effect", "tolerance", "flagged", "message"}


def grouped_behavior(n_groups=60, items=200, n_bins=6, concentration=None, seed=0):
    """Data from the model (`concentration=None`), or with each group's w0, w1 drawn around the shared
    ones from Dirichlet(concentration * w): behavior that depends on the group beyond the class."""
    rng = np.random.default_rng(seed)
    w0, w1 = emissions_from_rho(sec5_rho(n_bins))
    mu = rng.normal(0.0, 1.0, n_groups)
    counts = np.zeros((n_groups, n_bins))
    for i in range(n_groups):
        g0, g1 = (w0, w1) if concentration is None else (rng.dirichlet(concentration * w0),
                                                           rng.dirichlet(concentration * w1))
        happy = rng.binomial(items, expit(mu[i]))
        counts[i] = rng.multinomial(happy, g1) + rng.multinomial(items - happy, g0)
    return GroupedCounts.from_counts(counts, mu, group_ids=[f"g{i}" for i in range(n_groups)])


def test_flags_group_dependent_behavior_and_names_groups():
    row = aggregation_bias_check(grouped_behavior(concentration=30.0), {"wh": float("inf")}, model=WSC)
    assert set(row) == KEYS
    assert row["check"] == "aggregation_bias" and row["reference"] == PHI_MAX
    assert row["flagged"] is True and row["statistic"] > PHI_MAX and row["p_value"] < 1e-6
    assert "aggregation bias" in row["message"] and "'g" in row["message"] and "\n" not in row["message"]


def test_does_not_flag_data_from_the_model_and_takes_a_fits_map():
    data = grouped_behavior(seed=4)
    row = aggregation_bias_check(data, {"wh": 10.0}, model=WSC)
    assert set(row) == KEYS
    assert row["flagged"] is False and 0.8 < row["statistic"] < 1.2  # 0.83-1.17 over seeds 1-10
    assert 0 < row["p_value"] < 1 and row["message"].startswith("no sign of aggregation bias")
    posterior = WSC(wh=10.0, method="map").fit(data).idata_.posterior
    given = {n: posterior[n].values[0, 0] for n in ("mu", "w0", "w1", "mu_scale")}
    assert aggregation_bias_check(data, {"wh": 10.0}, model=WSC, map_point=given) == row


def test_conditional_modes_are_where_the_log_integrand_is_flat():
    """`group_quadrature.conditional_modes`: each mu_i's conditional mode given the globals, against
    scipy's bounded search on the same 1-D log integrand."""
    from scipy.optimize import minimize_scalar

    from bayes_wsc import group_quadrature as gq

    data = grouped_behavior(n_groups=8, items=40, n_bins=5, seed=2)
    w0, w1 = emissions_from_rho(sec5_rho(5))
    for loc, scale, sigma in ((0.3, 1.2, 0.5), (None, None, 0.5), (-0.2, 0.8, None)):
        g = gq.Integrand(data.counts, data.he, w0, w1, loc, scale, sigma)
        modes = gq.conditional_modes(g)
        for i in range(data.n_groups):
            one = g._replace(counts=data.counts[i:i + 1], he=data.he[i:i + 1])
            best = minimize_scalar(lambda m: -gq.log_integrand(gq.numpy_ops(), one, np.array([m]))[0],
                                   bounds=(-10, 10), method="bounded", options={"xatol": 1e-10})
            assert modes[i] == pytest.approx(best.x, abs=1e-6)


def test_map_point_of_a_fit_without_mu_is_the_conditional_modes():
    """`models.wsc.checks.map_point` fills in mu from the globals' mode of a fit that integrated mu out
    (a stand-in for the fit: what map_point reads of it), and leaves a fit that sampled mu, or a variant's,
    as they were."""
    from types import SimpleNamespace

    from bayes_wsc import group_quadrature as gq
    from bayes_wsc.models.wsc.checks import map_point

    data = grouped_behavior(n_groups=20, items=50, n_bins=6, seed=3)
    w0, w1 = emissions_from_rho(sec5_rho(6))
    globals_ = {"w0": w0, "w1": w1, "mu_loc": 0.1, "mu_scale": 0.9}
    fit = SimpleNamespace(model_file=None, map_point_=globals_, wh_used=4.0, _integrates_mu=lambda: True)
    point = map_point(fit, data)
    expected = gq.conditional_modes(gq.Integrand(data.counts, data.he, w0, w1, 0.1, 0.9, 0.5))
    np.testing.assert_allclose(point["mu"], expected)
    assert set(point) == {"mu", "w0", "w1", "mu_scale"} and map_point(fit) is None  # no data: no modes
    sampled = SimpleNamespace(model_file=None, map_point_={**globals_, "mu": data.he}, wh_used=4.0,
                              _integrates_mu=lambda: False)
    np.testing.assert_array_equal(map_point(sampled, data)["mu"], data.he)
    assert map_point(SimpleNamespace(**{**vars(fit), "model_file": "variant.py"}), data) is None


@pytest.mark.slow
def test_a_fit_that_integrated_mu_hands_the_check_its_modes_without_a_map(monkeypatch):
    """A nested Laplace fit started from the globals' marginal mode (no mu): the check takes each mu_i's
    conditional mode there instead of fitting the joint MAP, and says what the MAP's point says (phi
    within 0.03; behavior that depends on the group flagged, data from the model not)."""
    from bayes_wsc.checks import aggregation
    from bayes_wsc.models.wsc.checks import map_point

    for data, flagged in ((grouped_behavior(concentration=30.0, seed=1), True), (grouped_behavior(seed=1), False)):
        joint = aggregation_bias_check(data, {"wh": 10.0}, model=WSC)
        with monkeypatch.context() as patched:
            patched.setattr(aggregation, "_map_point", lambda *a: pytest.fail("the check fitted a MAP"))
            est = WSC(wh=10.0, method="laplace", draws=50, seed=0, progressbar=False).fit(data)
            assert "mu" not in est.map_point_ and set(map_point(est, data)) == {"mu", "w0", "w1", "mu_scale"}
            row = est.checks_.set_index("check").loc["aggregation_bias"]
        assert bool(row["flagged"]) is flagged is joint["flagged"]
        assert row["statistic"] == pytest.approx(joint["statistic"], abs=0.03)


def test_too_few_groups_is_said_not_flagged():
    data = grouped_behavior(n_groups=2, items=30, n_bins=3)
    point = {"mu": data.he, "w0": np.full(3, 1 / 3), "w1": np.full(3, 1 / 3)}
    row = aggregation_bias_check(data, {"wh": float("inf")}, model=WSC, map_point=point)
    assert row["flagged"] is False and math.isnan(row["statistic"]) and math.isnan(row["p_value"])
    assert row["message"].startswith("aggregation bias not checked")


def test_dispersion_is_zero_at_the_expected_counts_and_ignores_down_weighting():
    w0, w1 = emissions_from_rho(sec5_rho(4))
    mu = np.array([-1.0, 0.0, 0.5, 2.0])
    expected = 100 * (expit(mu)[:, None] * w1 + (1 - expit(mu)[:, None]) * w0)
    data = GroupedCounts.from_counts(expected, mu)
    phi, df, x2, _ = dispersion(data, mu, w0, w1, wh=math.inf)
    assert x2 == pytest.approx(0.0, abs=1e-20) and df == (4 - 2) * 3
    counts = np.array([[30, 20, 30, 20], [10, 40, 40, 10], [25, 25, 25, 25], [5, 15, 30, 50]], float)
    full = dispersion(GroupedCounts.from_counts(counts, mu), mu, w0, w1, wh=math.inf)
    weighted = dispersion(GroupedCounts.from_counts(counts, mu, max_group_weight=40), mu, w0, w1, wh=math.inf)
    assert weighted[0] == pytest.approx(full[0], rel=1e-12)


@pytest.mark.parametrize("settings, named", [
    ({"wh": -1.0}, "wh"), ({"wh": "many"}, "wh"), ({"mu_prior": "wide"}, "mu_prior"),
    ({"w_concentration": 0}, "w_concentration"), ({"nu": 3}, "'nu'"), ([("wh", 10)], "settings"),
])
def test_bad_settings_are_one_line(settings, named):
    with pytest.raises(InputError) as caught:
        aggregation_bias_check(grouped_behavior(n_groups=4, items=5), settings, model=WSC)
    assert named in str(caught.value) and "\n" not in str(caught.value)


def test_bad_seed_is_one_line():
    with pytest.raises(InputError, match="seed"):
        aggregation_bias_check(grouped_behavior(n_groups=4, items=5), {"wh": 10.0}, model=WSC, seed=-1)


# ---------------------------------------------------------------------- slow: CCES 2016
BENCHMARK = Path(__file__).resolve().parents[1] / "benchmarks" / "aggregation_check.py"


def load_benchmark():
    name = "benchmarks_aggregation_check"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, BENCHMARK)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.mark.slow
def test_cces_flags_state_groups_not_state_age_gender_groups():
    """3 of the benchmark's 10 halvings of the states (income x college x race bins, WH = inf)."""
    bench = load_benchmark()
    table = bench.run_cces(["paper"], ["state", "state_age_gender"], 3, 0, False, lambda message: None)
    every_state = table[table["split"] == "all"].set_index("grouping")["flagged"]
    assert every_state["state"] and not every_state["state_age_gender"]  # 51 states at once: the same verdict
    table = table[table["split"] != "all"]
    flagged = table.groupby("grouping")["flagged"].sum()
    assert flagged["state"] == 3 and flagged["state_age_gender"] == 0
    state = table[table["grouping"] == "state"]
    assert (state["latent_rmse"] > state["null_rmse"]).all()  # what the flags foretold
