"""Full-size parameter recovery on the Sec. 5 study (slow tier: pytest -m slow)."""

import warnings
from pathlib import Path

import numpy as np
import pytest

from bayes_wsc import inference
from bayes_wsc.baselines.wsc import em_fit
from bayes_wsc.errors import FitWarning
from bayes_wsc.models.wsc import WSC
from bayes_wsc.simulate import simulate_wsc

pytestmark = pytest.mark.slow


def rmse(a, b):
    return float(np.sqrt(np.mean((a - b) ** 2)))


@pytest.mark.parametrize("items", [100, 5])
def test_nuts_full_size_recovers_rho_like_em_and_covers(items):
    """Correctly specified (sigma_H = 0.5 simulated, WH = 4 fitted), I = 500, K = 15, 4 chains."""
    data, truth = simulate_wsc(n_groups=500, items_per_group=items, n_bins=15, sigma_h=0.5, seed=77)
    est = WSC(wh=4.0, method="nuts", draws=1000, tune=1000, chains=4, seed=77, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        est.fit(data)
    rho = est.idata_.posterior["rho"].values.reshape(-1, 15)
    em_error = rmse(em_fit(data, 4.0).rho, truth.rho)
    assert rmse(rho.mean(axis=0), truth.rho) <= em_error + 0.01
    bounds = inference.hdi(rho, 0.9)
    covered = int(np.sum((bounds[:, 0] <= truth.rho) & (truth.rho <= bounds[:, 1])))
    assert covered >= 10, f"90% intervals covered {covered} of 15 bins"
    assert inference.convergence(est.idata_, ["rho"])["rho"]["rhat"] < 1.01
    assert not [m for m in est.diagnostics_ if "diverged" in m]


def test_learned_rater_noise_full_size():
    data, truth = simulate_wsc(n_groups=500, items_per_group=100, n_bins=15, sigma_h=0.5, seed=78)
    variant = Path(__file__).resolve().parents[1] / "models" / "learned_rater_noise.py"
    est = WSC(model_file=str(variant), method="nuts", draws=1000, tune=1000, chains=4,
              seed=78, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        est.fit(data)
    sigma_h = est.idata_.posterior["sigma_h"].values.ravel()
    low, high = np.quantile(sigma_h, [0.03, 0.97])
    assert low < 0.5 < high
