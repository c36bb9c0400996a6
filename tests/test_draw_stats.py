"""`draw_stats`, the NumPy summary of draws that `summary` and `predict` use, held to ArviZ's numbers."""

import warnings

import arviz as az
import numpy as np
import pytest
import xarray as xr

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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = az.summary(az.InferenceData(posterior=posterior), var_names=["rho", "pi"], hdi_prob=0.9,
                            kind="all" if chains > 1 else "stats", round_to="none")
    assert list(ours.index) == list(theirs.index) == ["rho[b1]", "rho[b2]", "rho[b3]", "rho[b4]", "pi"]
    assert list(ours.columns) == list(theirs.columns)
    np.testing.assert_allclose(ours.to_numpy(), theirs.to_numpy(), rtol=1e-9, atol=1e-12, equal_nan=True)


def test_hdi_is_arviz_hdi():
    samples = correlated_draws(1, 333, 5, seed=3)[0]
    ours = inference.hdi(samples, 0.94)
    theirs = az.hdi(samples[None], hdi_prob=0.94)
    np.testing.assert_array_equal(ours, theirs)
    assert np.isnan(inference.hdi(samples[:1], 0.94)).all()  # a single draw has no interval
    assert draw_stats.hdi_columns(0.94) == ("hdi_3%", "hdi_97%")
