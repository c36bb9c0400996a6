"""`draw_stats`, the NumPy summary of draws that `summary` and `predict` use, held to ArviZ's numbers."""

import warnings

import numpy as np
import pytest
import xarray as xr

import arviz_family
from bayes_wsc import draw_stats, inference


def correlated_draws(chains: int, draws: int, size: int, seed: int) -> np.ndarray:
    """AR(1) chains with different levels, a few ties and one constant element."""
    rng = np.random.default_rng(seed)
    out = np.empty((chains, draws, size))
    out[:, 0] = rng.normal(size=(chains, size))
    for t in range(1, draws):
        out[:, t] = 0.7 * out[:, t - 1] + rng.normal(size=(chains, size))
    out += np.arange(chains)[:, None, None] * 0.1
    out[..., 1] = np.round(out[..., 1])  # ties
    out[..., 2] = 0.5  # constant
    return out


@pytest.mark.parametrize("chains, draws", [(4, 100), (2, 51), (1, 80), (3, 5)])
def test_summary_is_arviz_summary(chains, draws):
    values = correlated_draws(chains, draws, 4, seed=chains * draws)
    posterior = xr.Dataset({"rho": (("chain", "draw", "bin"), values), "pi": (("chain", "draw"), values[..., 0])},
                           coords={"chain": np.arange(chains), "draw": np.arange(draws),
                                   "bin": np.array(["b1", "b2", "b3", "b4"], dtype=object)})
    groups = inference.Groups(posterior=posterior)
    ours = inference.summary(groups, ["rho", "pi"], hdi_prob=0.9)
    theirs = arviz_family.summary(groups, ["rho", "pi"], hdi_prob=0.9, kind="all" if chains > 1 else "stats")
    assert list(ours.index) == list(theirs.index) == ["rho[b1]", "rho[b2]", "rho[b3]", "rho[b4]", "pi"]
    assert list(ours.columns) == list(theirs.columns)
    np.testing.assert_allclose(ours.to_numpy(), theirs.to_numpy(), rtol=1e-9, atol=1e-12, equal_nan=True)


def test_hdi_is_arviz_hdi():
    samples = correlated_draws(1, 333, 5, seed=3)[0]
    ours = inference.hdi(samples, 0.94)
    theirs = arviz_family.hdi(samples[None], 0.94)
    np.testing.assert_array_equal(ours, theirs)
    assert np.isnan(inference.hdi(samples[:1], 0.94)).all()  # a single draw has no interval
    assert draw_stats.hdi_columns(0.94) == ("hdi_3%", "hdi_97%")


def test_convergence_is_arviz_rhat_and_ess():
    """R-hat and ESS of the fit-time diagnostics and the report's rank plots, held to the installed ArviZ."""
    import arviz as az

    values = correlated_draws(4, 120, 4, seed=11)
    posterior = xr.Dataset({"rho": (("chain", "draw", "bin"), values)},
                           coords={"chain": np.arange(4), "draw": np.arange(120), "bin": ["a", "b", "c", "d"]})
    groups = inference.Groups(posterior=posterior)
    data = inference.to_inference_data(groups)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rhat = np.asarray(az.rhat(data, var_names=["rho"])["rho"].values)
        bulk = np.asarray(az.ess(data, var_names=["rho"], method="bulk")["rho"].values)
        tail_prob = {"prob": 0.95} if inference.arviz_1() else {}  # Vehtari et al.'s 0.05 and 0.95 quantiles
        tail = np.asarray(az.ess(data, var_names=["rho"], method="tail", **tail_prob)["rho"].values)
    np.testing.assert_allclose(inference.rhat_elements(groups, "rho").values, rhat, rtol=1e-9, equal_nan=True)
    ours = inference.convergence(groups, ["rho"])["rho"]
    np.testing.assert_allclose([ours["rhat"], ours["ess_bulk"], ours["ess_tail"]],
                               [np.nanmax(rhat), np.nanmin(bulk), np.nanmin(tail)], rtol=1e-9)
    np.testing.assert_allclose(inference.rhat_of_draws(values[..., 0]), rhat[0], rtol=1e-9)
    np.testing.assert_allclose(inference.ess_of_draws(values[..., 0]), min(bulk[0], tail[0]), rtol=1e-9)


def log_likelihood_groups(seed: int, scale: float = 1.0) -> inference.Groups:
    rng = np.random.default_rng(seed)
    coords = {"chain": np.arange(2), "draw": np.arange(200)}
    posterior = xr.Dataset({"mu": (("chain", "draw"), rng.normal(size=(2, 200)))}, coords=coords)
    values = scale * (rng.normal(size=(2, 200, 30)) * 0.3 - 1.0 - 0.05 * np.arange(30))
    log_lik = xr.Dataset({"y": (("chain", "draw", "unit"), values)}, coords={**coords, "unit": np.arange(30)})
    return inference.Groups(posterior=posterior, log_likelihood=log_lik)


def test_waic_is_arviz_waic():
    import arviz as az

    if inference.arviz_1():
        pytest.skip("ArviZ 1 has no WAIC to compare with (the package computes it in NumPy on both stacks)")
    groups = log_likelihood_groups(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = az.waic(inference.to_inference_data(groups), pointwise=True)
    ours = inference.waic(groups)
    for field in ("elpd_waic", "se", "p_waic"):
        np.testing.assert_allclose(ours[field], theirs[field], rtol=1e-10)
    np.testing.assert_allclose(ours["waic_i"].values, theirs["waic_i"].values, rtol=1e-10)
    assert ours["warning"] == theirs["warning"]


def test_loo_and_compare_read_alike_on_both_families():
    """The LOO figures and the comparison table have one layout whichever ArviZ computed them."""
    a, b = log_likelihood_groups(5), log_likelihood_groups(5, scale=1.2)
    values = inference.elpd_values(inference.loo(a))
    assert np.isfinite(values.elpd) and values.se > 0 and values.p > 0
    assert np.asarray(values.pareto_k).shape == (30,) and values.pointwise.shape == (30,)
    table = inference.compare({"a": a, "b": b})
    assert list(table.columns[:len(inference.COMPARE_COLUMNS)]) == inference.COMPARE_COLUMNS
    assert list(table.index) == ["a", "b"] and table["elpd_diff"].iloc[0] == 0 and table["elpd_diff"].iloc[1] > 0
    np.testing.assert_allclose(table.loc["a", "elpd_loo"], values.elpd, rtol=1e-9)


def test_summarize_memberships_is_the_summary_of_every_clusters_columns(monkeypatch):
    """`posterior.summarize_memberships` sorts only the chosen cluster's draws for its interval: the same means,
    choices and bounds, bit for bit, as the code before (every row's K columns summarized by `inference.hdi`,
    written out here), in one chunk or in chunks of a few rows."""
    from bayes_wsc import inference, posterior

    rng = np.random.default_rng(11)
    logits = rng.normal(size=(400, 37, 3)) + rng.normal(size=(37, 3))
    probabilities = np.exp(logits) / np.exp(logits).sum(axis=2, keepdims=True)
    mean_before = probabilities.mean(axis=0)
    chosen_before = mean_before.argmax(axis=1)
    bounds = inference.hdi(probabilities.reshape(400, -1), 0.9).reshape(37, 3, 2)[np.arange(37), chosen_before]
    for chunk_floats in (posterior.CHUNK_FLOATS, 400 * 3 * 5):
        monkeypatch.setattr(posterior, "CHUNK_FLOATS", chunk_floats)
        mean, chosen, low, high = posterior.summarize_memberships(37, 3, lambda rows: probabilities[:, rows], 400, 0.9)
        assert np.array_equal(mean, mean_before) and np.array_equal(chosen, chosen_before)
        assert np.array_equal(low, bounds[:, 0]) and np.array_equal(high, bounds[:, 1])
    mean, chosen, low, high = posterior.summarize_memberships(37, 3, lambda rows: probabilities[:1, rows], 1, 0.9)
    assert np.array_equal(mean, probabilities[0]) and np.isnan(low).all() and np.isnan(high).all()


@pytest.mark.parametrize("chains, draws", [(4, 100), (2, 51), (1, 80), (3, 5), (2, 3)])
def test_statistics_of_columns_are_those_of_each_column(chains, draws):
    """`chain_statistics_columns` and `convergence_statistics_columns` (every element of a variable at once, what
    `summary` and the fit's diagnostics use) give each column's `chain_statistics` and `convergence_statistics`
    (one element at a time, as before) to float rounding: ties, a constant, a NaN and an indicator column."""
    values = correlated_draws(chains, draws, 6, seed=chains * draws + 1)
    values[..., 3] = np.nan
    values[..., 4] = (values[..., 4] > 0).astype(float)
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        before = np.array([draw_stats.chain_statistics(values[..., j]) for j in range(6)])
        after = draw_stats.chain_statistics_columns(values)
        np.testing.assert_allclose(after, before, rtol=1e-12, equal_nan=True)
        before = np.array([draw_stats.convergence_statistics(values[..., j]) for j in range(6)])
        np.testing.assert_allclose(draw_stats.convergence_statistics_columns(values), before, rtol=1e-12, equal_nan=True)
        assert np.isnan(draw_stats.chain_statistics_columns(np.full((chains, draws, 2), np.nan))).all()


@pytest.mark.parametrize("n", [1, 2, 7, 4000])
def test_blom_quantiles_are_scipys_normal_quantiles(n):
    """The table that rank normalization looks its quantiles up in holds scipy's `ndtri` of Blom's
    (r - 3/8) / (n + 1/4) at every whole and half rank r from 1 to n."""
    from scipy.special import ndtri

    ranks = np.arange(2, 2 * n + 1) / 2
    want = ndtri((ranks - 3 / 8) / (n + 1 / 4))
    np.testing.assert_allclose(draw_stats.blom_quantiles(n), want, rtol=1e-14, atol=1e-14)
