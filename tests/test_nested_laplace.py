"""Nested Laplace (`bayes_wsc.nested_laplace`): the globals' marginal density against the joint one
integrated by scipy, the locals drawn from their exact conditionals, the fit's record of its form, and
the warning that says when a Laplace approximation may not cover."""

import math
import warnings

import numpy as np
import pymc as pm
import pytest
from scipy.integrate import quad
from scipy.stats import kstest

from bayes_wsc import inference
from bayes_wsc.errors import FitWarning
from bayes_wsc.fit import build_map_program, fit_laplace
from bayes_wsc.models.wsc import WSC, build_model, draw_group_qualities
from bayes_wsc.nested_laplace import importance_check, laplace_warnings, pareto_k, reliability
from bayes_wsc.simulate import simulate_wsc

from test_model_wsc_integrated_mu import log_integrand

VARIANT = str(__import__("pathlib").Path(__file__).resolve().parents[1] / "models" / "learned_rater_noise.py")


@pytest.fixture(scope="module")
def tiny():
    return simulate_wsc(n_groups=5, items_per_group=np.array([0, 4, 15, 40, 120]), n_bins=3, seed=11)


def fit_info(est):
    return inference.get_attrs(est._fitted())["fit_info"]


def quiet_fit(est, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return est.fit(data)


def nested_model(data, learned: bool, nodes: int):
    """The model with every local integrated out by `nodes`-point quadrature: the first model's
    (`mu="integrated"`, WH = 4) or the learned-noise variant's, as their build_model writes them."""
    from bayes_wsc.models.wsc import add_emissions, add_integrated_clicks

    with pm.Model(coords=data.coords) as model:
        sigma_h = pm.HalfNormal("sigma_h", 1.0) if learned else None
        add_integrated_clicks(data, add_emissions(data), wh=4.0, sigma_h=sigma_h, nodes=nodes)
    return model


@pytest.mark.parametrize("learned", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_the_marginal_density_is_the_joint_one_with_each_local_integrated_out(tiny, learned):
    """The nested program's density (negative log, with the globals' Jacobian) against the sampled
    model's joint log density (with Jacobian) with each group's local integrated out one at a time by
    scipy's adaptive quadrature: to 1e-6 nats with 15 nodes, and with the model's default 5 to 2e-5 per
    group. With sigma_H learned the locals are the variant's rater errors e_i (mu_i = HE_i + sigma_H e_i),
    whose integral is the same; and the variant's own build_model(mu="integrated") is that model."""
    from bayes_wsc.estimator import load_variant
    from bayes_wsc.models.wsc import MODEL_GH_NODES

    data, truth = tiny
    variant = load_variant(VARIANT)
    joint = variant.build_model(data) if learned else build_model(data, wh=4.0)
    local = "rater_error" if learned else "mu"
    joint_logp = joint.compile_logp(jacobian=True)
    w0 = truth.w0 * [1.2, 0.9, 0.9]
    point = {"w0": w0 / w0.sum(), "w1": truth.w1, "mu_loc": 0.3, "mu_scale": 0.8, **({"sigma_h": 0.6} if learned else {})}
    built = variant.build_model(data, mu="integrated") if learned else build_model(data, wh=4.0, mu="integrated")
    for nodes, tolerance in ((15, 1e-6), (MODEL_GH_NODES, 2e-5 * data.n_groups)):
        model = nested_model(data, learned, nodes)
        if nodes == MODEL_GH_NODES:
            assert sorted(model.named_vars) == sorted(built.named_vars)
        program, inputs = build_map_program(model, laplace={"jacobian": True, "local": []})
        given = program.device_inputs(inputs)
        x = np.asarray(program.start(program.complete(point), given))
        ours = -float(program.laplace_value_and_grad(x, given)[0])
        values = program.unravel(x)

        def at(i, m):
            u = np.zeros(data.n_groups)
            u[i] = m
            return float(joint_logp({**values, local: u}))

        base = at(0, 0.0)
        total = base
        for i in range(data.n_groups):
            integral = quad(lambda m: math.exp(at(i, m) - base), -12, 12, limit=400, epsabs=0, epsrel=1e-11)[0]
            total += math.log(integral)
        assert ours == pytest.approx(total, abs=tolerance)


def test_the_locals_are_drawn_from_their_exact_conditionals_with_a_learned_noise(tiny):
    """mu_i drawn for 4000 copies of one draw of the globals with sigma_H per draw (a learned rater
    noise): Kolmogorov-Smirnov against the conditional computed on a fine grid, in the group with no
    clicks and the one with 120; and draws with differing sigma_H give each its own conditional."""
    data, truth = tiny
    n = 4000
    w0, w1 = np.tile(truth.w0, (n, 1)), np.tile(truth.w1, (n, 1))
    sigma = np.full(n, 0.6)
    mu, rate = draw_group_qualities(data.counts, data.he, w0, w1, np.full(n, 0.3), np.full(n, 0.8), sigma, seed=2)
    assert mu.shape == (n, data.n_groups) and rate > 0.5
    grid = np.linspace(-7, 7, 28001)
    for i in (0, 4):
        density = np.exp(log_integrand(data, i, grid, truth.w0, truth.w1, 0.3, 0.8, 0.6))
        cdf = np.concatenate([[0], np.cumsum((density[1:] + density[:-1]) / 2)])
        assert kstest(mu[:, i], lambda x: np.interp(x, grid, cdf / cdf[-1])).pvalue > 1e-3
    # half the draws with a far noisier rater: the group without clicks spreads as its own conditional says
    sigma[: n // 2] = 3.0
    mu, _ = draw_group_qualities(data.counts, data.he, w0, w1, np.full(n, 0.3), np.full(n, 0.8), sigma, seed=3)
    for s, part in ((3.0, mu[: n // 2, 0]), (0.6, mu[n // 2:, 0])):
        precision = 1 / 0.8**2 + 1 / s**2
        assert part.std() == pytest.approx(1 / math.sqrt(precision), rel=0.08)


def test_a_laplace_fit_is_nested_by_default_and_says_so(tiny):
    """WSC(method="laplace") integrates mu out and says so in fit_info; its mu are the exact conditionals'
    draws given its globals (the same function, the same seed). Only MAP and NUTS keep mu sampled by default."""
    data, _ = tiny
    est = quiet_fit(WSC(method="laplace", wh=4.0, seed=5, draws=300, checks=False), data)
    info = fit_info(est)
    assert est.mu_used == "integrated"
    assert info["laplace"]["form"] == "nested" and "integrated out" in info["laplace"]["form_words"]
    assert info["laplace"]["structure"] == "dense" and "held_fixed" not in info["map"]
    assert "mu" not in info["free_variables"] and "mu_scale" in info["free_variables"]
    post = est._fitted().posterior
    assert post["mu"].shape == (1, 300, data.n_groups) and post["rho"].shape == (1, 300, data.n_bins)
    flat = {n: post[n].values[0] for n in ("w0", "w1", "mu_loc", "mu_scale")}
    expected, _ = draw_group_qualities(data.counts, data.he, flat["w0"], flat["w1"], flat["mu_loc"],
                                       flat["mu_scale"], 0.5, seed=5)
    np.testing.assert_allclose(post["mu"].values[0], expected)
    assert WSC(method="map").mu_used == "sampled" and WSC(method="nuts").mu_used == "grid"


def test_a_saved_laplace_fit_leaves_its_log_likelihood_to_first_use(tiny, tmp_path):
    """Saved straight after the fit, a nested Laplace fit's file holds no log_likelihood group and says so;
    loaded with bayes_wsc.load, LOO computes it from the draws and data (the default model's formula, in
    float32), within 1e-5 of the fit's own values (relative); read without the package, LOO says in one line how to get it.
    A fit whose log-likelihood was already computed keeps it in the file."""
    import h5netcdf

    from bayes_wsc import load
    from bayes_wsc.estimator import LOG_LIKELIHOOD_LEFT_OUT

    data, _ = tiny
    est = quiet_fit(WSC(method="laplace", wh=4.0, seed=5, draws=300, checks=False), data)
    path = est.save(tmp_path / "fit.nc")
    with h5netcdf.File(path, "r") as handle:
        assert "log_likelihood" not in handle.groups
    raw = inference.load(path)
    assert inference.get_attrs(raw)[LOG_LIKELIHOOD_LEFT_OUT] is True
    assert "bayes_wsc.load" in inference.loo_unavailable(raw)
    back = load(path)
    assert np.isfinite(inference.elpd_values(back.loo()).elpd)
    ours, theirs = est.idata_.log_likelihood["groups"].values, back.idata_.log_likelihood["groups"].values
    np.testing.assert_allclose(theirs, ours, rtol=1e-5, atol=1e-4)  # float32 against float64
    assert "computed from the saved draws" in back.log_likelihood_notes()[0]
    again = back.save(tmp_path / "again.nc")
    with h5netcdf.File(again, "r") as handle:
        assert "log_likelihood" in handle.groups
    assert inference.get_attrs(inference.load(again))[LOG_LIKELIHOOD_LEFT_OUT] is False
    joint = quiet_fit(WSC(method="laplace", wh=4.0, mu="sampled", seed=5, draws=50, checks=False), data)
    with h5netcdf.File(joint.save(tmp_path / "joint.nc"), "r") as handle:  # its formula needs the model
        assert "log_likelihood" in handle.groups


@pytest.mark.slow
def test_the_joint_form_stays_available_and_the_learned_noise_variant_is_nested(tiny):
    """mu="sampled" is the joint form (mu_scale held, as the MAP holds it); the learned-noise variant
    is nested, with nothing held and without the warning its joint mode earns (START_NUTS_AT_MAP)."""
    data, _ = tiny
    joint = quiet_fit(WSC(method="laplace", wh=4.0, mu="sampled", seed=5, draws=300, checks=False), data)
    assert fit_info(joint)["laplace"]["form"] == "joint" and "held_fixed" in fit_info(joint)["map"]
    variant = quiet_fit(WSC(method="laplace", model_file=VARIANT, seed=5, draws=300, checks=False), data)
    vinfo = fit_info(variant)
    assert vinfo["laplace"]["form"] == "nested" and "sigma_h" in vinfo["free_variables"]
    assert "held_fixed" not in vinfo["map"]
    assert not any("START_NUTS_AT_MAP" in m for m in variant.diagnostics_)
    assert variant._fitted().posterior["mu"].shape == (1, 300, data.n_groups)


def student_t(nu: float, dims: int = 4):
    with pm.Model() as model:
        pm.StudentT("x", nu=nu, mu=0.0, sigma=1.0, shape=dims)
    return model


def test_the_warning_fires_on_heavy_tails_and_not_on_a_nearly_gaussian_posterior():
    """Four independent Cauchy coordinates: the Gaussian at the mode has far lighter tails, the importance
    ratios are uneven (a few draws carry the weight) with a heavy tail, and the fit warns; Student-t with
    50 degrees of freedom is nearly Gaussian, and it does not. (At 200 draws the check is noisy: with
    another seed the Cauchy case gave k = 0.38 and went unwarned; benchmarks/RESULTS.md has its rates.)"""
    draws, _, messages = fit_laplace(student_t(1.0), {"x": np.full(4, 0.1)}, draws=1000, seed=0)
    assert draws.info["importance_ess_share"] < 0.5 and draws.info["pareto_k"] > 0.7
    assert any("may not cover" in m for m in messages)
    draws, _, messages = fit_laplace(student_t(50.0), {"x": np.full(4, 0.1)}, draws=1000, seed=0)
    assert draws.info["importance_ess_share"] > 0.9
    assert not any("may not cover" in m for m in messages)


def test_each_check_fires_alone_on_its_own_evidence():
    assert reliability({"pareto_k": 0.3, "mode_shift_sd": 0.2, "condition_number": 50.0, "at_bound": []}) == []
    assert "Pareto k" in reliability({"pareto_k": 0.9})[0] and "Pareto k" in reliability({"pareto_k": 0.9,
                                                                                        "importance_ess_share": 0.2})[0]
    assert reliability({"pareto_k": 0.9, "importance_ess_share": 0.8}) == []  # nearly even ratios
    assert "inf" in reliability({"pareto_k": float("inf")})[0]
    assert reliability({"mode_shift_sd": 25.0}) == []  # recorded, but measured not to tell (module docstring)
    assert "nearly flat" in reliability({"condition_number": 1e12})[0]
    assert "bound" in reliability({"at_bound": ["w1 sits at a bound of its range"]})[0]
    assert "acceptance" in reliability({"mu_draws": {"acceptance_rate": 0.2}})[0]
    from bayes_wsc.models.pcmix import PCMixture
    from bayes_wsc.models.perception import PerceptionClustering

    assert laplace_warnings({"pareto_k": 0.2}) == [] == laplace_warnings({"pareto_k": 0.2},
                                                                           PerceptionClustering.laplace_coverage)
    # a model measured to cover less than NUTS says so on every Laplace fit, with its figures
    said = laplace_warnings({"pareto_k": 0.2}, PCMixture.laplace_coverage)
    assert len(said) == 1 and "0.77" in said[0] and "0.90" in said[0]


def test_importance_ratios_tell_a_matching_gaussian_from_a_heavy_tailed_density():
    """Ratios of a density to itself are constant (k <= 0, all draws count); a Student-t(2) density
    against a normal proposal has a heavy right tail of ratios (k well above 0.5)."""
    from scipy.stats import norm, t

    z = np.random.default_rng(0).standard_normal(4000)
    same = importance_check(norm.logpdf(z), norm.logpdf(z))
    assert same["importance_ess_share"] == pytest.approx(1.0) and same["pareto_k"] <= 0.0
    assert pareto_k(t.logpdf(z, 2) - norm.logpdf(z)) > 0.5
