"""The Laplace approximation (`bayes_wsc.laplace`): exact on a Gaussian posterior, centred with
the Jacobian, pymc-extras' `fit_laplace` reproduced without it, a flat direction warned about.
The arrow Hessian against the dense one, and saving, loading and predicting from a Laplace fit
of each model: tests/test_program_inputs.py (they share its programs)."""

import warnings

import numpy as np
import pymc as pm
import pytest

from bayes_wsc.fit import build_map_program, fit_laplace
from bayes_wsc.map_program import run_map


def test_a_gaussian_posterior_is_recovered_exactly_and_a_bounded_one_centred_with_its_jacobian():
    """Conjugate linear regression with known noise, whose posterior is N(m, S) in closed form,
    beside an independent Beta-binomial p (logit scale), in one model: the posterior factorizes."""
    from bayes_wsc.laplace import run_laplace

    rng = np.random.default_rng(0)
    design = rng.standard_normal((12, 3))
    y = design @ np.array([1.0, -0.5, 2.0]) + 0.7 * rng.standard_normal(12)
    successes = np.array([3, 9, 14])
    prior_sd, noise = 2.0, 0.7
    precision = np.eye(3) / prior_sd**2 + design.T @ design / noise**2
    exact_cov = np.linalg.inv(precision)
    exact_mean = exact_cov @ design.T @ y / noise**2
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, prior_sd, shape=3)
        pm.Normal("y", design @ beta, noise, observed=y)
        pm.Deterministic("total", beta.sum())
        p = pm.Beta("p", 2, 3, shape=3)
        pm.Binomial("k", 20, p, observed=successes)
    program, inputs = build_map_program(model, laplace={"jacobian": True, "local": []})
    assert [name for name, _ in program.layout] == ["beta", "p_logodds__"]
    map_draws, x_map = run_map(program, [None], inputs)
    draws, messages = run_laplace(program, inputs, x_map, draws=20000, seed=1)
    assert messages == []
    assert draws.info["structure"] == "dense" and draws.info["positive_definite"]
    np.testing.assert_allclose(map_draws.posterior["beta"][0, 0], exact_mean, atol=1e-6)
    samples = draws.posterior["beta"][0]
    assert samples.shape == (20000, 3)
    se = np.sqrt(np.diag(exact_cov) / samples.shape[0])
    assert np.all(np.abs(samples.mean(axis=0) - exact_mean) < 4 * se)
    np.testing.assert_allclose(np.cov(samples.T), exact_cov, rtol=0.05, atol=0.02 * exact_cov.max())
    np.testing.assert_allclose(draws.posterior["total"][0], samples.sum(axis=1))  # Deterministics per draw
    # the Hessian's regression block is the posterior precision, exactly
    hessian = np.asarray(program.laplace_hessian(x_map, program.device_inputs(inputs)))
    np.testing.assert_allclose(hessian[:3, :3], precision, rtol=1e-10)
    # p: the MAP is the mode, (a + k - 1) / (a + b + n - 2); the Gaussian sits where the logit's
    # density peaks, (a + k) / (a + b + n), which is the median of the draws of p
    np.testing.assert_allclose(map_draws.posterior["p"][0, 0], (1 + successes) / 23, atol=1e-6)
    np.testing.assert_allclose(np.median(draws.posterior["p"][0], axis=0), (2 + successes) / 25, atol=0.005)


def test_without_jacobian_it_is_pymc_extras_fit_laplace():
    """pymc-extras centres at the mode of the density without Jacobian (our MAP) and takes that
    function's Hessian; `jacobian=False` does the same (its trust-ncg path, which uses the exact
    Hessian: with L-BFGS it keeps the optimizer's approximate one)."""
    pmx = pytest.importorskip("pymc_extras")
    rng = np.random.default_rng(0)
    successes, x = rng.binomial(20, 0.3, size=4), rng.normal(1.0, 0.5, size=15)
    with pm.Model() as model:
        p = pm.Beta("p", 2, 3, shape=4)
        pm.Binomial("y", 20, p, observed=successes)
        s = pm.HalfNormal("s", 1.0)
        mu = pm.Normal("mu", 0, 3)
        pm.Normal("x", mu, s, observed=x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = pmx.fit_laplace(model=model, optimize_method="trust-ncg", progressbar=False, draws=10,
                                 random_seed=1, gradient_backend="jax", compile_kwargs={"mode": "JAX"},
                                 optimizer_kwargs={"tol": 1e-12})
    rows = list(theirs.fit["mean_vector"].coords["rows"].values)
    order = [rows.index(f"p_logodds__[{i}]") for i in range(4)] + [rows.index("s_log__"), rows.index("mu")]
    mean = theirs.fit["mean_vector"].values[order]
    covariance = theirs.fit["covariance_matrix"].values[np.ix_(order, order)]
    program, inputs = build_map_program(model, laplace={"jacobian": False, "local": []})
    assert [name for name, _ in program.layout] == ["p_logodds__", "s_log__", "mu"]
    _, x_map = run_map(program, [None], inputs, tol=1e-12)
    np.testing.assert_allclose(x_map, mean, atol=1e-5)
    hessian = np.asarray(program.laplace_hessian(x_map, program.device_inputs(inputs)))
    np.testing.assert_allclose(np.linalg.inv(hessian), covariance, rtol=1e-4, atol=1e-8)


def test_a_flat_direction_is_a_warning_and_a_documented_fallback():
    """y ~ N(a + b, 1) with flat priors: a - b is not identified, the Hessian is singular."""
    with pm.Model() as model:
        a = pm.Flat("a")
        b = pm.Flat("b")
        pm.Normal("y", a + b, 1.0, observed=np.array([0.3, -0.1, 0.4]))
    draws, _, messages = fit_laplace(model, {"a": 0.1, "b": 0.0}, draws=500, seed=0)
    assert not draws.info["positive_definite"]
    assert len(messages) == 1 and "not positive definite" in messages[0]
    total = draws.posterior["a"][0] + draws.posterior["b"][0]
    assert abs(total.std() - 1 / np.sqrt(3)) < 0.1  # the identified direction keeps its curvature
    assert draws.posterior["a"][0].std() > 100  # the flat one spreads


def test_the_centre_search_moves_the_transformed_variables_first_then_all():
    """`find_centre`: from the MAP, the transformed variables (names ending in "__") alone with the rest
    held, then every variable; on a concave quadratic it ends at the exact optimum either way, and a
    layout with one kind of variable only (or no Jacobian) gets the one joint search."""
    from bayes_wsc.laplace import find_centre

    precision = np.array([[2.0, 0.3, 0.5], [0.3, 1.0, -0.4], [0.5, -0.4, 3.0]])
    mode = np.array([1.0, -2.0, 0.5])
    seen = []

    def value_and_grad(x):
        seen.append(np.array(x))
        d = x - mode
        return 0.5 * d @ precision @ d, precision @ d

    x_map = np.array([0.0, 0.0, -30.0])  # the transformed coordinate far out, as at a bound
    result, first = find_centre(value_and_grad, [("u", (2,)), ("y_log__", (1,))], x_map)
    np.testing.assert_allclose(result.x, mode, atol=1e-5)
    assert first > 0
    held = [x for x in seen if np.array_equal(x[:2], x_map[:2])]
    assert len(held) > first and any(x[2] > -1 for x in held)  # the first stage moved y alone
    for layout, jacobian in (([("u", (3,))], True), ([("y_log__", (3,))], True),
                             ([("u", (2,)), ("y_log__", (1,))], False)):
        result, first = find_centre(value_and_grad, layout, x_map, jacobian=jacobian)
        assert first == 0
        np.testing.assert_allclose(result.x, mode, atol=1e-5)
