"""The ecological-inference variant (models/ecological_inference.py): its likelihood and its recovery.

Its MAP and a short NUTS run, predict and the shared estimands are covered with every other variant by
tests/test_variants.py.
"""

import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.special import expit, logit
from scipy.stats import betabinom

from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.errors import FitWarning
from bayes_wsc.estimator import load_variant
from bayes_wsc.models.wsc import WSC

VARIANT = Path(__file__).resolve().parents[1] / "models" / "ecological_inference.py"


def simulate_ei(rho, *, n_groups=300, items=200, phi=80.0, seed=0):
    """Groups with Dirichlet(1) bin compositions whose class-1 counts are drawn from the variant itself."""
    rng = np.random.default_rng(seed)
    rho = np.asarray(rho, float)
    counts = np.stack([rng.multinomial(items, rng.dirichlet(np.ones(rho.size))) for _ in range(n_groups)])
    p = counts @ rho / items
    y = betabinom.rvs(items, phi * p, phi * (1 - p), random_state=rng)
    he = logit(np.clip(y / items, 0.5 / items, 1 - 0.5 / items))
    return GroupedCounts.from_counts(counts, he, group_ids=[f"g{i}" for i in range(n_groups)]), y


def test_group_term_is_the_beta_binomial():
    """With whole counts the Potential equals scipy's beta-binomial pmf summed over groups."""
    data, y = simulate_ei([0.2, 0.5, 0.8], n_groups=6, items=30, seed=1)
    model = load_variant(VARIANT).build_model(data)
    point = {"a0": 0.3, "sigma_a_log__": np.log(0.7), "z": np.array([-1.0, 0.2, 1.5]), "phi_log__": np.log(25.0)}
    value = model.compile_logp(vars=[model["group_counts"]], jacobian=False)(point)
    rho = expit(0.3 + 0.7 * point["z"])
    p = data.counts @ rho / data.group_totals
    y_model = expit(data.he) * data.group_totals  # the variant reads y from HE
    np.testing.assert_allclose(y_model, y, atol=1e-9)
    expected = betabinom.logpmf(y, data.group_totals, 25.0 * p, 25.0 * (1 - p)).sum()
    np.testing.assert_allclose(value, expected, rtol=1e-10)


def test_map_recovers_rho_and_reports_consistent_estimands():
    truth = np.array([0.1, 0.3, 0.6, 0.85])
    data, _ = simulate_ei(truth, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        post = WSC(model_file=str(VARIANT), method="map").fit(data).idata_.posterior
    rho = post["rho"].values[0, 0]
    assert np.abs(rho - truth).max() < 0.06
    pi, w0, w1 = (post[n].values[0, 0] for n in ("pi", "w0", "w1"))
    np.testing.assert_allclose(w0.sum(), 1.0, rtol=1e-9)
    np.testing.assert_allclose(w1.sum(), 1.0, rtol=1e-9)
    np.testing.assert_allclose(pi * w1 / (pi * w1 + (1 - pi) * w0), rho, rtol=1e-9)
    np.testing.assert_allclose(post["mu"].values[0, 0], logit(pi), rtol=1e-9)  # every group: rho
    assert 20 < float(post["phi"].values[0, 0]) < 400


@pytest.mark.parametrize("bad", ["wh", "mu_prior"])
def test_ignored_settings_do_not_break_the_variant(bad):
    """The variant reads HE as exact: the default model's settings are accepted and ignored."""
    data, _ = simulate_ei([0.3, 0.7], n_groups=20, items=20, seed=3)
    settings = {"wh": 10.0} if bad == "wh" else {"mu_prior": "flat"}
    model = load_variant(VARIANT).build_model(data, **settings)
    assert {"rho", "pi", "w0", "w1", "mu", "share"} <= set(model.named_vars)
