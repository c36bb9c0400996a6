"""The first model with every mu_i integrated out (`WSC(mu="integrated")`): the quadrature against
scipy's, the draws of mu_i against their conditional, and the posterior against the sampled model's."""

import math
import warnings

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import expit
from scipy.stats import kstest, norm

from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.models.wsc import (MODEL_GH_NODES, WSC, add_emissions, add_integrated_clicks, build_model,
                                  draw_group_qualities, pooled_bin_frequencies)
from bayes_wsc.simulate import simulate_wsc

PREFIX = "log_likelihood__"


@pytest.fixture(scope="module")
def tiny():
    return simulate_wsc(n_groups=6, items_per_group=np.array([0, 3, 10, 30, 80, 200]), n_bins=3, seed=4)


def log_integrand(data, i, m, w0, w1, loc, scale, sigma):
    """log of the integrand of group i at m (a number or an array of them)."""
    m = np.asarray(m, dtype=float)
    value = np.log(expit(-m)[..., None] * w0 + expit(m)[..., None] * w1) @ data.counts[i]
    if loc is not None:
        value += norm.logpdf(m, loc, scale)
    if sigma is not None:
        value += norm.logpdf(data.he[i], m, sigma)
    return value


def brute_force(data, i, w0, w1, loc, scale, sigma):
    """log of the integral over mu_i by adaptive quadrature (scipy), scaled at the integrand's peak."""
    grid = np.linspace(-15, 15, 3001)
    logs = log_integrand(data, i, grid, w0, w1, loc, scale, sigma)
    peak, top = grid[np.argmax(logs)], logs.max()
    value = quad(lambda m: math.exp(float(log_integrand(data, i, m, w0, w1, loc, scale, sigma)) - top), -15, 15,
                 points=[peak], limit=400, epsabs=0, epsrel=1e-12)[0]
    return top + math.log(value)


@pytest.mark.parametrize("wh, mu_prior, default_error", [(10.0, "hierarchical", 1e-5), (0.0, "hierarchical", 1e-3),
                                                         (4.0, "flat", 5e-4)])
def test_integrated_group_likelihood_matches_scipy(tiny, wh, mu_prior, default_error):
    """The model's per-group value (its Potential sums the same tensor, centred) is the integral
    over mu_i: to 1e-6 nats with 15 nodes, and within the error that `MODEL_GH_NODES` states with
    the default nodes; with HE, without it (WH = 0) and under the flat F0."""
    import pymc as pm
    import pytensor

    from bayes_wsc.fit import transformed_start

    data, truth = tiny
    w0 = truth.w0 * [1.2, 0.9, 0.9]
    point = {"w0": w0 / w0.sum(), "w1": truth.w1}
    if mu_prior == "hierarchical":
        point.update(mu_loc=0.3, mu_scale=0.8)
    sigma = 1 / math.sqrt(wh) if wh > 0 else None
    expected = [brute_force(data, i, point["w0"], point["w1"], point.get("mu_loc"), point.get("mu_scale"), sigma)
                for i in range(data.n_groups)]
    for nodes, tolerance in ((15, 1e-6), (MODEL_GH_NODES, default_error)):
        with pm.Model(coords=data.coords) as model:
            add_integrated_clicks(data, add_emissions(data), wh=wh, mu_prior=mu_prior, nodes=nodes)
        outputs = model.replace_rvs_by_values([model[PREFIX + "groups"], model["clicks"]])
        fn = pytensor.function(model.value_vars, outputs, on_unused_input="ignore", mode="FAST_COMPILE")
        start = transformed_start(model, point)
        pointwise, potential = fn(*[start[v.name] for v in model.value_vars])
        np.testing.assert_allclose(pointwise, expected, rtol=0, atol=tolerance)
        centring = data.counts @ np.log(pooled_bin_frequencies(data.counts))
        assert potential == pytest.approx(pointwise.sum() - centring.sum(), abs=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)  # WH = 0 is weak supervision, and says so
        model = build_model(data, wh=wh, mu_prior=mu_prior, mu="integrated")
    assert "mu" not in model.named_vars and "clicks" in model.named_vars


def test_drawn_qualities_follow_their_conditional(tiny):
    """mu_i drawn for 4000 copies of one parameter draw: their distribution is the conditional,
    computed by scipy (Kolmogorov-Smirnov), in the group with no clicks and the one with 200."""
    data, truth = tiny
    n = 4000
    w0, w1 = np.tile(truth.w0, (n, 1)), np.tile(truth.w1, (n, 1))
    loc, scale, sigma = np.full(n, 0.3), np.full(n, 0.8), 1 / math.sqrt(10)
    mu, rate = draw_group_qualities(data.counts, data.he, w0, w1, loc, scale, sigma, seed=1)
    assert mu.shape == (n, data.n_groups) and rate > 0.5
    grid = np.linspace(-6, 6, 24001)
    for i in (0, 5):
        density = np.exp(log_integrand(data, i, grid, truth.w0, truth.w1, 0.3, 0.8, sigma))
        cdf = np.concatenate([[0], np.cumsum((density[1:] + density[:-1]) / 2)])
        assert kstest(mu[:, i], lambda x: np.interp(x, grid, cdf / cdf[-1])).pvalue > 1e-3


def test_draws_and_group_likelihood_are_right_for_many_groups():
    """60 groups (the vectorized code paths: in float32, XLA's CPU code got the drawing loop's log
    integrand wrong by tens of nats from 8 groups on, which the 6 groups above never showed): for
    3000 copies of one parameter draw, each group's drawn mu_i have its conditional's mean and sd
    (on a grid), and the integrated log-likelihood of 20 parameter draws is the grid's integral."""
    from bayes_wsc.models.wsc import integrated_group_loglik

    data, _ = simulate_wsc(n_groups=60, items_per_group=40, n_bins=4, seed=7)
    rng = np.random.default_rng(1)
    n, sigma, grid = 3000, 1 / math.sqrt(10), np.linspace(-8, 8, 3201)

    def conditional(w0, w1, loc, scale):
        logs = np.log(expit(-grid)[:, None] * w0 + expit(grid)[:, None] * w1) @ data.counts.T
        logs += norm.logpdf(grid, loc, scale)[:, None] + norm.logpdf(data.he[None], grid[:, None], sigma)
        weights = np.exp(logs - logs.max(axis=0))
        return weights / weights.sum(axis=0), logs.max(axis=0) + np.log(weights.sum(axis=0) * (grid[1] - grid[0]))

    w0, w1 = np.array([0.4, 0.2, 0.2, 0.2]), np.array([0.1, 0.2, 0.3, 0.4])
    mu, rate = draw_group_qualities(data.counts, data.he, np.tile(w0, (n, 1)), np.tile(w1, (n, 1)), np.full(n, -0.25),
                                    np.full(n, 0.96), sigma, seed=3)
    density, _ = conditional(w0, w1, -0.25, 0.96)
    mean = grid @ density
    sd = np.sqrt((grid**2) @ density - mean**2)
    assert rate > 0.5
    assert np.abs((mu.mean(axis=0) - mean) / (sd / np.sqrt(n))).max() < 4.5
    np.testing.assert_allclose(mu.std(axis=0), sd, rtol=0.1)
    w0s, w1s = rng.dirichlet(np.full(4, 5.0), 20), rng.dirichlet(np.full(4, 5.0), 20)
    locs, scales = rng.normal(-0.2, 0.1, 20), rng.uniform(0.8, 1.1, 20)
    expected = np.array([conditional(*args)[1] for args in zip(w0s, w1s, locs, scales)])
    got = integrated_group_loglik(data.counts, data.he, rng.normal(size=(20, 60)), w0s, w1s, locs, scales,
                                  np.full(20, sigma))
    np.testing.assert_allclose(got, expected, atol=1e-3)


def test_integrated_settings_refused_or_trivial(tiny):
    data, _ = tiny
    with pytest.raises(InputError, match="mu must be one of"):
        WSC(mu="marginal").check_params()
    with pytest.raises(InputError, match="NUTS or Laplace setting"):
        WSC(mu="integrated", method="map").check_params()
    # WH = inf: mu = HE, nothing to integrate; the model is the default one
    model = build_model(data, wh=math.inf, mu="integrated")
    assert "mu" in model.named_vars and "mu" not in [rv.name for rv in model.free_RVs]


@pytest.mark.slow
@pytest.mark.parametrize("integrated", ["integrated", "grid"])
def test_integrated_posterior_matches_sampled(integrated):
    """rho, w0, w1 and mu under NUTS with mu integrated out (per group, or on the shared grid) agree with
    NUTS sampling every mu_i (means within 4 Monte Carlo standard errors of the difference, sds within 15%)."""
    data, _ = simulate_wsc(n_groups=60, items_per_group=40, n_bins=4, seed=7)
    fits = {}
    for mu in ("sampled", integrated):
        est = WSC(method="nuts", mu=mu, draws=2000, tune=1000, chains=4, seed=2, progressbar=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            fits[mu] = est.fit(data).idata_.posterior
        assert est.idata_.posterior["mu"].dims == ("chain", "draw", "group")
    for name in ("rho", "w0", "w1", "mu", "pi", "mu_scale"):
        a, b = (az_summary(fits[m], name) for m in ("sampled", integrated))
        z = (a["mean"] - b["mean"]) / np.sqrt(a["mcse_mean"] ** 2 + b["mcse_mean"] ** 2)
        assert np.all(np.abs(z) < 4), (name, z.round(2).to_dict())
        np.testing.assert_allclose(b["sd"], a["sd"], rtol=0.15, err_msg=name)


def az_summary(posterior, name):
    from bayes_wsc import inference

    return inference.summary(inference.from_draws({name: posterior[name].values}), [name], 0.9)


def test_integrated_fit_from_the_command_line(tmp_path):
    """`--mu integrated` end to end on weighted clicks, the fit-time checks included (the aggregation
    check gets no MAP of mu from this fit, so it makes its own): the saved fit has mu[group], pi, rho
    drawn after NUTS, a per-group log-likelihood, and loads back."""
    from bayes_wsc.cli import main
    from bayes_wsc.estimator import load
    from bayes_wsc.simulate import counts_to_clicks

    data, _ = simulate_wsc(n_groups=12, items_per_group=15, n_bins=3, seed=5)
    clicks, groups = counts_to_clicks(data)
    clicks.assign(w=np.linspace(0.5, 1.5, len(clicks))).to_csv(tmp_path / "clicks.csv", index=False)
    groups.to_csv(tmp_path / "groups.csv", index=False)
    fit = tmp_path / "fit.nc"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        code = main(["fit", "wsc", "--clicks", str(tmp_path / "clicks.csv"), "--groups", str(tmp_path / "groups.csv"),
                     "--weight-col", "w", "--method", "nuts", "--mu", "integrated", "--draws", "40", "--tune", "40",
                     "--chains", "2", "--no-progress", "--out", str(fit)])
    assert code == 0
    est = load(fit)
    post = est.idata_.posterior
    assert est.mu == "integrated" and post["mu"].dims == ("chain", "draw", "group")
    assert post["rho"].dims == ("chain", "draw", "bin") and post["pi"].shape == (2, 40)
    assert float(post["mu"].std()) > 0 and est.idata_.log_likelihood["groups"].shape == (2, 40, 12)
    from bayes_wsc import inference

    draws_info = inference.get_attrs(est.idata_)["fit_info"]["nuts"]["mu_draws"]
    assert draws_info["steps"] > 0 and 0.3 < draws_info["acceptance_rate"] <= 1


def test_click_term_derivatives_are_the_expressions():
    """The click term's own derivative (group_quadrature.click_term, matrix-vector products) against
    autodiff of the plain expression: JAX's gradient and Hessian, and PyTensor's gradient."""
    import pytensor
    import pytensor.tensor as pt

    from bayes_wsc import group_quadrature as gq
    from bayes_wsc.jax_setup import jax_runtime

    jax = jax_runtime()
    jnp = jax.numpy
    rng = np.random.default_rng(3)
    counts = rng.poisson(2.0, (7, 4)).astype(float)
    w0, w1 = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
    m = rng.normal(size=7)
    ours = gq.jax_ops(jax).click_term

    def total(click, x):
        p1 = jax.nn.sigmoid(x[8:])
        return (click(counts, x[:4], x[4:8], 1 - p1, p1) * jnp.arange(1.0, 8.0)).sum()

    def plain(counts, w0, w1, p0, p1):
        return (counts * jnp.log(p0[:, None] * w0 + p1[:, None] * w1)).sum(axis=-1)

    x = jnp.concatenate([w0, w1, m])
    for derivative in (jax.grad, jax.hessian):
        np.testing.assert_allclose(derivative(lambda x: total(ours, x))(x), derivative(lambda x: total(plain, x))(x),
                                   rtol=1e-10, atol=1e-10)
    vectors = [pt.vector(n) for n in ("w0", "w1", "p0", "p1")]
    value = (gq.pytensor_ops().click_term(counts, *vectors) * np.arange(1.0, 8.0)).sum()
    grads = pytensor.function(vectors, pytensor.grad(value, vectors))(w0, w1, 1 - expit(m), expit(m))
    expected = jax.grad(lambda *a: (plain(counts, *a) * jnp.arange(1.0, 8.0)).sum(), argnums=(0, 1, 2, 3))(
        w0, w1, 1 - expit(m), expit(m))
    for got, want in zip(grads, expected):
        np.testing.assert_allclose(got, want, rtol=1e-10)
