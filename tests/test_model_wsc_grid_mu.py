"""The first model with every mu_i integrated out on one grid of nodes shared by all groups
(`WSC(mu="grid")`): the integral against scipy's quad, the check that fires when the grid does not
hold a group, the settings it refuses, and a fit. Its posterior against NUTS sampling every mu_i:
tests/test_model_wsc_integrated_mu.py (slow)."""

import math
import warnings

import numpy as np
import pytest

from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.models.wsc import (GRID_END_WEIGHT, WSC, build_model, data_grid, grid_check, grid_message,
                                  pooled_bin_frequencies)
from bayes_wsc.simulate import simulate_wsc
from test_model_wsc_integrated_mu import PREFIX, brute_force

#: the grid's error stated in `models/wsc.py` (GRID_SPACING = 1: 2e-8 nats on Sec. 5 data); here in
#: float64 on sharply different bins and groups of 0 to 200 clicks
TOLERANCE = 1e-6


@pytest.fixture(scope="module")
def tiny():
    return simulate_wsc(n_groups=6, items_per_group=np.array([0, 3, 10, 30, 80, 200]), n_bins=3, seed=4)


def point_of(truth, mu_prior):
    w0 = truth.w0 * [1.2, 0.9, 0.9]
    point = {"w0": w0 / w0.sum(), "w1": truth.w1}
    if mu_prior == "hierarchical":
        point.update(mu_loc=0.3, mu_scale=0.8)
    return point


@pytest.mark.parametrize("wh, mu_prior", [(10.0, "hierarchical"), (0.0, "hierarchical"), (4.0, "flat")])
def test_grid_group_likelihood_matches_scipy(tiny, wh, mu_prior):
    """The model's per-group value (its Potential sums the same tensor, centred) is the integral over
    mu_i to `TOLERANCE`: with HE, without it (WH = 0) and under the flat F0."""
    import pytensor

    from bayes_wsc.fit import transformed_start

    data, truth = tiny
    point = point_of(truth, mu_prior)
    sigma = 1 / math.sqrt(wh) if wh > 0 else None
    expected = [brute_force(data, i, point["w0"], point["w1"], point.get("mu_loc"), point.get("mu_scale"), sigma)
                for i in range(data.n_groups)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)  # WH = 0 is weak supervision, and says so
        model = build_model(data, wh=wh, mu_prior=mu_prior, mu="grid")
    assert "mu" not in model.named_vars
    outputs = model.replace_rvs_by_values([model[PREFIX + "groups"], model["clicks"]])
    fn = pytensor.function(model.value_vars, outputs, on_unused_input="ignore", mode="FAST_COMPILE")
    start = transformed_start(model, point)
    pointwise, potential = fn(*[start[v.name] for v in model.value_vars])
    np.testing.assert_allclose(pointwise, expected, rtol=0, atol=TOLERANCE)
    centring = data.counts @ np.log(pooled_bin_frequencies(data.counts))
    assert potential == pytest.approx(pointwise.sum() - centring.sum(), abs=1e-8)


def test_grid_check_fires_when_a_group_reaches_past_the_grid(tiny):
    """The check passes on the grid the data give, and fires (with a plain message) on a grid cut at
    the middle, where the groups of high HE reach past its end, and on a draw whose F0 is narrower than
    the spacing resolves."""
    data, truth = tiny
    point = point_of(truth, "hierarchical")
    nodes = data_grid(data, 10.0, "hierarchical")
    draw = {"w0": point["w0"][None], "w1": point["w1"][None], "mu_loc": np.array([0.3]),
            "mu_scale": np.array([0.8]), "sigma_h": 1 / math.sqrt(10)}
    held = grid_check(data, nodes, **draw)
    assert held["ok"] and held["largest_end_weight"] < GRID_END_WEIGHT and grid_message(held) == []
    cut = nodes[nodes < np.median(data.he)]
    missed = grid_check(data, cut, **draw)
    assert not missed["ok"] and missed["largest_end_weight"] > 0.01
    assert "end node" in grid_message(missed)[0] and "mu='integrated'" in grid_message(missed)[0]
    coarse = grid_check(data, nodes, **{**draw, "mu_scale": np.array([0.01])})
    assert not coarse["ok"] and "finest width" in grid_message(coarse)[0]


def test_grid_settings_refused(tiny):
    data, _ = tiny
    for method in ("map", "laplace"):
        with pytest.raises(InputError, match="mu='grid' is a NUTS setting"):
            WSC(mu="grid", method=method).check_params()
    with pytest.raises(InputError, match="default model's"):
        WSC(mu="grid", method="nuts", model_file="models/learned_rater_noise.py").check_params()
    heavy = simulate_wsc(n_groups=4, items_per_group=np.array([10, 10, 10, 20000]), n_bins=3, seed=1)[0]
    with pytest.raises(InputError, match="mu='integrated'"):
        build_model(heavy, mu="grid")


def test_grid_fit_records_its_check_and_integrated_likelihood():
    """A NUTS fit with mu="grid": mu, pi and rho drawn after sampling, the per-group log-likelihood
    is the integrated one, the check's figures are kept with the fit and it raised no warning."""
    from bayes_wsc import inference

    data, _ = simulate_wsc(n_groups=30, items_per_group=40, n_bins=4, seed=7)
    est = WSC(method="nuts", mu="grid", draws=60, tune=60, chains=2, seed=1, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        est.fit(data)
    post = est.idata_.posterior
    assert post["mu"].dims == ("chain", "draw", "group") and post["rho"].dims == ("chain", "draw", "bin")
    assert est.idata_.log_likelihood["groups"].shape == (2, 60, 30)
    attrs = inference.get_attrs(est.idata_)
    check = attrs["fit_info"]["nuts"]["mu_grid"]
    assert check["ok"] and check["draws_checked"] == 100 and check["nodes"] > 10
    assert "mu='grid'" in attrs["log_likelihood_holds"]
    assert not any("mu='grid'" in m for m in attrs["diagnostics"])
    # the nodes come from the data: no MAP program is cached for other data of the same shapes
    assert est.model_inputs(data) is None and WSC(method="nuts").model_inputs(data) is not None
