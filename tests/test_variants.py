"""Every model variant in models/ builds, fits and reports the shared estimands."""

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.errors import FitWarning
from bayes_wsc.models.wsc import WSC
from bayes_wsc.simulate import simulate_wsc

VARIANTS = sorted((Path(__file__).resolve().parents[1] / "models").glob("*.py"))


def crossed_data(seed=0, n_groups=80, per_group=40):
    """Two behavior columns (3 x 2 levels) whose class-conditional distributions are independent."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(0, 1, n_groups)
    rows = []
    p_speed = {0: [0.6, 0.3, 0.1], 1: [0.1, 0.3, 0.6]}
    p_colour = {0: [0.7, 0.3], 1: [0.3, 0.7]}
    for g in range(n_groups):
        z = rng.random(per_group) < 1 / (1 + np.exp(-mu[g]))
        for zi in z.astype(int):
            rows.append((f"g{g}", ["slow", "mid", "fast"][rng.choice(3, p=p_speed[zi])],
                         ["red", "blue"][rng.choice(2, p=p_colour[zi])]))
    clicks = pd.DataFrame(rows, columns=["group", "speed", "colour"])
    groups = pd.DataFrame({"group": [f"g{g}" for g in range(n_groups)], "he": mu + rng.normal(0, 0.3, n_groups)})
    return GroupedCounts.from_frames(clicks, groups), clicks


def test_there_are_variants():
    names = {p.stem for p in VARIANTS}
    assert {"learned_rater_noise", "product_emissions"} <= names


@pytest.mark.parametrize("path", VARIANTS, ids=lambda p: p.stem)
def test_variant_fits_by_map_and_nuts(path):
    data, clicks = crossed_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)  # a variant's mode may be a poor summary; it says so
        est = WSC(model_file=str(path), method="map").fit(data)
    rho = est.idata_.posterior["rho"].values[0, 0]
    assert rho.shape == (6,) and np.all((rho > 0) & (rho < 1))
    # the fast speed level is the 'happy' one in the simulation
    assert rho[data.bins.labels.index("speed=fast, colour=blue")] > rho[data.bins.labels.index("speed=slow, colour=red")]
    assert "model_source" in est.idata_.posterior.attrs
    pred = est.predict(clicks.head(3))
    assert {"prob", "prob_low", "prob_high"} <= set(pred.columns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        nuts = WSC(model_file=str(path), method="nuts", draws=60, tune=60, chains=1, seed=1,
                   progressbar=False).fit(data)
    assert np.all(np.isfinite(nuts.idata_.posterior["rho"].values))


def test_learned_rater_noise_recovers_sigma_h():
    data, _ = simulate_wsc(n_groups=300, items_per_group=20, n_bins=6, sigma_h=0.5, seed=4)
    path = next(p for p in VARIANTS if p.stem == "learned_rater_noise")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        est = WSC(model_file=str(path), method="nuts", draws=300, tune=300, chains=2, seed=3,
                  progressbar=False).fit(data)
    sigma_h = est.idata_.posterior["sigma_h"].values
    assert 0.35 < float(np.median(sigma_h)) < 0.7


def test_product_emissions_factorize():
    data, _ = crossed_data(seed=1)
    path = next(p for p in VARIANTS if p.stem == "product_emissions")
    post = WSC(model_file=str(path), method="map").fit(data).idata_.posterior
    w1 = post["w1"].values[0, 0].reshape(3, 2)  # speed x colour, row-major crossing
    np.testing.assert_allclose(w1, np.outer(w1.sum(1), w1.sum(0)), rtol=1e-8)
