"""MAP against the paper's EM, parameter recovery, and the fitted InferenceData layout."""

import warnings

import numpy as np
import pytest

from bayes_wsc import inference
from bayes_wsc.baselines.wsc import em_fit, em_log_posterior, half_sample_se, moments_rho, naive_rho
from bayes_wsc.errors import FitWarning
from bayes_wsc.models.wsc import WSC
from bayes_wsc.simulate import simulate_wsc


def rmse(a, b):
    return float(np.sqrt(np.mean((np.asarray(a) - np.asarray(b)) ** 2)))


@pytest.fixture(scope="module")
def sec5_j100():
    return simulate_wsc(n_groups=500, items_per_group=100, n_bins=15, sigma_h=0.5, seed=11)


@pytest.fixture(scope="module")
def sec5_j5():
    return simulate_wsc(n_groups=500, items_per_group=5, n_bins=15, sigma_h=0.5, seed=12)


@pytest.mark.parametrize("which", ["sec5_j100", "sec5_j5"])
def test_map_equals_em_fixed_point(which, request):
    """Flat mu prior, WH = 10, Dirichlet(2): the posterior mode is the EM fixed point of Sec. 4."""
    data, _ = request.getfixturevalue(which)
    em = em_fit(data, wh=10.0, tol=1e-12, max_iter=20000)
    assert em.converged
    est = WSC(wh=10.0, mu_prior="flat", w_concentration=2.0, method="map").fit(data)
    post = est.idata_.posterior
    np.testing.assert_allclose(post["rho"].values[0, 0], em.rho, atol=0.005)
    np.testing.assert_allclose(post["w1"].values[0, 0], em.w1, atol=0.005)
    np.testing.assert_allclose(post["mu"].values[0, 0], em.mu, atol=0.05)
    # and the optimizer did not stop short of EM's objective
    mode = em_log_posterior(data, post["mu"].values[0, 0], post["w0"].values[0, 0], post["w1"].values[0, 0], 10.0)
    assert mode >= em_log_posterior(data, em.mu, em.w0, em.w1, 10.0) - 1e-3


def test_em_climbs_its_objective(sec5_j5):
    data, _ = sec5_j5
    values = [em_log_posterior(data, r.mu, r.w0, r.w1, 10.0)
              for r in (em_fit(data, 10.0, max_iter=k) for k in (1, 2, 5, 20, 100))]
    assert np.all(np.diff(values) >= -1e-8)


def test_map_recovers_rho_like_em(sec5_j100):
    data, truth = sec5_j100
    est = WSC(method="map").fit(data)
    map_error = rmse(est.idata_.posterior["rho"].values[0, 0], truth.rho)
    em_error = rmse(em_fit(data, 10.0).rho, truth.rho)
    assert map_error < 0.04
    assert map_error < em_error + 0.01
    # the baselines behave as the paper reports: naive underfits, EM does not
    assert rmse(naive_rho(data), truth.rho) > 2 * em_error


def test_method_of_moments_left_unclipped(sec5_j100):
    data, truth = sec5_j100
    mom = moments_rho(data)
    assert mom.shape == truth.rho.shape and np.all(np.isfinite(mom))


def test_half_sampling_se_tracks_the_spread_of_estimates():
    data, _ = simulate_wsc(n_groups=200, items_per_group=20, n_bins=6, seed=3)
    reps, se = half_sample_se(data, lambda d: naive_rho(d), n_reps=30, seed=0)
    assert reps.shape == (30, 6)
    np.testing.assert_allclose(se, reps.std(axis=0, ddof=1))
    assert np.all(se > 0)


def test_nuts_recovers_rho_and_covers_truth():
    """Small Sec. 5 setting, model correctly specified (sigma_H matched to WH)."""
    data, truth = simulate_wsc(n_groups=200, items_per_group=100, n_bins=8, sigma_h=0.5, seed=5)
    est = WSC(wh=4.0, method="nuts", draws=400, tune=400, chains=2, seed=5, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        est.fit(data)
    rho = est.idata_.posterior["rho"]
    assert rmse(rho.mean(("chain", "draw")).values, truth.rho) < 0.05
    bounds = inference.hdi(rho.values.reshape(-1, rho.shape[-1]), 0.94)
    covered = np.mean((bounds[:, 0] <= truth.rho) & (truth.rho <= bounds[:, 1]))
    assert covered >= 0.75
    conv = inference.convergence(est.idata_, ["rho"])["rho"]
    assert conv["rhat"] < 1.05


def test_inference_data_layout():
    data, _ = simulate_wsc(n_groups=40, items_per_group=20, n_bins=4, seed=1)
    est = WSC(method="map").fit(data)
    idata = est.idata_
    assert {"posterior", "sample_stats", "observed_data", "constant_data"} <= set(inference.group_names(idata))
    post = idata.posterior
    assert post.sizes["chain"] == 1 and post.sizes["draw"] == 1
    assert post["rho"].dims == ("chain", "draw", "bin") and post["mu"].dims == ("chain", "draw", "group")
    assert list(post["bin"].values) == data.bins.labels
    assert "rho" not in idata.observed_data and idata.observed_data["counts"].dims == ("group", "bin")
    attrs = inference.get_attrs(idata)
    assert attrs["model"] == "wsc" and attrs["method"] == "map"
    assert attrs["settings"]["wh"] == 10.0 and attrs["settings"]["mu_prior"] == "hierarchical"
    assert "package_version" in attrs and attrs["fit_info"]["map"]["converged"]
    table = est.summary()
    assert "map" in table.columns and "rho[b01]" in table.index


def test_known_proportions_fix_mu():
    data, _ = simulate_wsc(n_groups=50, items_per_group=30, n_bins=5, sigma_h=0.0, seed=2)
    est = WSC(wh=float("inf"), method="map").fit(data)
    np.testing.assert_allclose(est.idata_.posterior["mu"].values[0, 0], data.he)


def test_weak_wh_warns_about_bimodality():
    data, _ = simulate_wsc(n_groups=30, items_per_group=10, n_bins=4, seed=2)
    with pytest.warns(FitWarning, match="bimodal"):
        WSC(wh=0.0, method="map").fit(data)


def test_map_stopping_rule_ignores_an_additive_constant():
    """L-BFGS-B's own test is relative to |log density|; the MAP's must not move with a constant
    (under it, the wsc model's centring constant took 56% more iterations at 10,000 groups)."""
    import pymc as pm

    from bayes_wsc.fit import fit_map
    from bayes_wsc.models.wsc import build_model

    data, _ = simulate_wsc(n_groups=200, items_per_group=50, n_bins=8, seed=2)
    est = WSC()
    fits = []
    for constant in (0.0, -1e7):
        model = build_model(data)
        with model:
            pm.Potential("constant", pm.math.constant(constant))
        free = {rv.name for rv in model.free_RVs}
        start = {k: v for k, v in est.initial_values(data).items() if k in free}
        fits.append(fit_map(model, start, fixed=est.map_fixed(data))[0])
    iterations = [f.info["iterations"] for f in fits]
    assert abs(iterations[0] - iterations[1]) <= 0.2 * iterations[0], iterations
    np.testing.assert_allclose(fits[0].posterior["rho"], fits[1].posterior["rho"], atol=1e-4)



def test_class_probability_from_draws_is_each_cells_mean_and_hdi():
    """`class_probability` (cells as rows, the sigmoid in place, `posterior.summarize_rows`) gives the mean and
    `inference.hdi` of sigmoid(mu_i + log w1_k - log w0_k) over the draws, taken column by column as before that
    change, on a stored NUTS fit (tests/data): the same HDI bounds exactly (they are draws), the same mean but
    for the order of its sum (1e-15). The sigmoid is `maths.expit` (scipy's within 4 ulp: tests/test_maths.py)."""
    from pathlib import Path

    import bayes_wsc
    from bayes_wsc.maths import expit

    est = bayes_wsc.load(Path(__file__).resolve().parent / "data" / "fit-pymc5.nc")
    post = est.idata_.posterior
    mu, w0, w1 = (post[n].values.reshape(-1, *post[n].shape[2:]) for n in ("mu", "w0", "w1"))
    draws = expit(mu[:, :, None] + (np.log(w1) - np.log(w0))[:, None, :])  # (draw, group, bin)
    for ci in (0.94, 0.5):
        table = est.class_probability(ci=ci)
        np.testing.assert_allclose(table["mean"].values, draws.mean(axis=0), rtol=1e-15, atol=0)
        bounds = inference.hdi(draws, ci)
        assert np.array_equal(table["low"].values, bounds[..., 0]) and np.array_equal(table["high"].values,
                                                                                       bounds[..., 1])
    groups = list(post["group"].values[[3, 0]])
    part = est.class_probability(groups, ci=0.94)
    np.testing.assert_allclose(part["mean"].values, draws[:, [3, 0]].mean(axis=0), rtol=1e-15, atol=0)
    assert np.array_equal(part["low"].values, inference.hdi(draws[:, [3, 0]], 0.94)[..., 0])
    n_bins = draws.shape[2]  # cells as `predict` asks: some bins of a group only, consecutive or not
    cells = np.array([2, 5, 6, n_bins + 1, n_bins + 2, 3 * n_bins])
    mean, low, high = est._group_bin_summary(cells, 0.94)
    picked = draws.reshape(draws.shape[0], -1)[:, cells]
    np.testing.assert_allclose(mean, picked.mean(axis=0), rtol=1e-15, atol=0)
    assert np.array_equal(np.stack([low, high], axis=-1), inference.hdi(picked, 0.94))
