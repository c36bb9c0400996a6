"""`psis`, the NumPy PSIS-LOO that `check` and the report use, held to `inference.loo` (ArviZ's LOO, whichever
ArviZ the package runs on): elpd_loo, its standard error, p_loo, each unit's Pareto k and the threshold."""

import numpy as np
import pytest
import xarray as xr
from conftest import model_fits, registry

from bayes_wsc import criticism, inference, psis


def _field(elpd, *names):
    """A field of a LOO result under the name of either ArviZ (0.x: elpd_loo, p_loo; 1.x: elpd, p)."""
    for name in names:
        value = getattr(elpd, name, None)
        if value is not None:
            return value
    raise AttributeError(f"the LOO result has none of {names}")


def assert_same_loo(ours, theirs):
    """`psis.py` is ArviZ 0.2x's `az.loo`, step by step: equal to it to rounding. ArviZ 1 (arviz-stats) fits
    the tails its own way (measured here: Pareto k up to 0.07 apart on the models' fits, NaN for a unit with
    ties, elpd 1e-5 apart), so the comparison runs where ArviZ 0.2x is installed (Python 3.11): the NumPy
    arithmetic `check` and the reports use is then the same on both stacks."""
    if inference.arviz_1():
        pytest.skip("psis.py is held to ArviZ 0.2x's az.loo (Python 3.11); ArviZ 1 smooths the tails otherwise")
    np.testing.assert_allclose(ours.elpd_loo, float(_field(theirs, "elpd_loo", "elpd")), rtol=1e-9)
    np.testing.assert_allclose(ours.se, float(theirs.se), rtol=1e-9)
    np.testing.assert_allclose(ours.p_loo, float(_field(theirs, "p_loo", "p")), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(np.asarray(ours.pareto_k), np.asarray(theirs.pareto_k), rtol=1e-9, atol=1e-12)
    assert ours.good_k == pytest.approx(float(theirs.good_k))


def fit_of(log_likelihood: np.ndarray, posterior: dict[str, np.ndarray]) -> inference.Groups:
    chains, draws, units = log_likelihood.shape
    coords = {"chain": np.arange(chains), "draw": np.arange(draws)}
    return inference.Groups(
        posterior=xr.Dataset({k: (("chain", "draw", *[f"{k}_dim_{i}" for i in range(v.ndim - 2)]), v)
                              for k, v in posterior.items()}, coords=coords),
        log_likelihood=xr.Dataset({"obs": (("chain", "draw", "unit"), log_likelihood)},
                                  coords={**coords, "unit": [f"u{i}" for i in range(units)]}))


@pytest.mark.parametrize("chains, draws", [(4, 250), (2, 100), (1, 300)])
def test_loo_is_inference_loo_on_heavy_tailed_units(chains, draws):
    """A normal model's pointwise log-likelihood with outlying units (Pareto k well above 0.7 and
    near 0), correlated chains (r_eff below 1), a constant posterior element and ties."""
    rng = np.random.default_rng(chains * draws)
    theta = np.empty((chains, draws))
    theta[:, 0] = rng.normal(size=chains)
    for t in range(1, draws):
        theta[:, t] = 0.6 * theta[:, t - 1] + 0.8 * rng.normal(size=chains)
    theta *= 0.3
    y = np.concatenate([rng.normal(size=30), [6.0, -9.0, 15.0]])
    log_lik = -0.5 * (y - theta[..., None]) ** 2 - 0.5 * np.log(2 * np.pi)
    log_lik[..., 5] = np.round(log_lik[..., 5], 1)  # ties within a unit
    groups = fit_of(log_lik, {"theta": theta, "fixed": np.full((chains, draws, 2), 0.5)})
    ours, theirs = inference.psis_loo(groups), inference.loo(groups)
    assert_same_loo(ours, theirs)
    assert np.max(ours.pareto_k.values) > ours.good_k  # the outliers are past the threshold
    assert list(ours.pareto_k.coords["unit"].values) == list(groups["log_likelihood"]["unit"].values)


@pytest.mark.parametrize("model", [spec.name for spec in registry.MODELS])
def test_loo_is_inference_loo_on_every_model(model):
    """The NUTS fit of every registered model (its example data), as `check` computes its LOO row (a
    log-likelihood left to first use, the first model's with mu integrated out, computed first)."""
    fitted = model_fits(model)["nuts"]._complete_log_likelihood()
    assert_same_loo(inference.psis_loo(fitted), inference.loo(fitted))


def test_gpd_fit_recovers_a_pareto_shape():
    rng = np.random.default_rng(0)
    k_true, n = 0.5, 4000
    excess = np.sort((rng.uniform(size=n) ** -k_true - 1) / k_true)  # generalized Pareto, sigma 1
    k, sigma = psis.gpd_fit(excess)
    assert k == pytest.approx(k_true, abs=0.05) and sigma == pytest.approx(1, abs=0.1)


def test_pareto_row_never_reads_equal_figures_as_above():
    """A k just above the threshold is printed with the decimals that tell the two apart."""
    assert criticism.distinct_figures(0.6389, 0.6412) == ("0.639", "0.641")
    assert criticism.distinct_figures(0.7, 0.91) == ("0.70", "0.91")
    assert criticism.distinct_figures(0.5, 0.5) == ("0.50", "0.50")


@pytest.mark.parametrize("chains, draws", [(4, 300), (2, 51), (1, 80), (3, 5)])
def test_smoothing_and_ess_in_bulk_are_the_one_by_one_arithmetic(chains, draws):
    """`smooth_rows` and `ess_mean_columns` (what `loo` and r_eff use on thousands of units and elements)
    give `smooth` and `ess_mean` row by row: ties at the cutoff, a constant row, a stuck chain."""
    from bayes_wsc import draw_stats

    rng = np.random.default_rng(chains * draws)
    values = rng.normal(size=(chains, draws, 12))
    for t in range(1, draws):
        values[:, t] += 0.8 * values[:, t - 1]
    values[..., 3] = 0.5
    values[..., 4] = np.round(values[..., 4])
    values[0, :, 5] += 4
    np.testing.assert_allclose(draw_stats.ess_mean_columns(values),
                               [draw_stats.ess_mean(values[..., j]) for j in range(12)], rtol=1e-12, equal_nan=True)
    log_lik = values.reshape(chains * draws, 12).T * rng.uniform(0.2, 3, size=(12, 1))
    smoothed, k = psis.smooth_rows(-log_lik, 0.8)
    one_by_one = [psis.smooth(-row, 0.8) for row in log_lik]
    # equal raw weights in the tail share its smoothed values in another order: compare each row's values sorted
    np.testing.assert_allclose(np.sort(smoothed, axis=1), np.sort([w for w, _ in one_by_one], axis=1),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(k, [k for _, k in one_by_one], rtol=1e-12, atol=1e-14)
    in_place, k_in_place = psis.smooth_rows(-log_lik, 0.8, overwrite=True)  # what `loo` does: the same, bit for bit
    assert np.array_equal(in_place, smoothed) and np.array_equal(k_in_place, k)
