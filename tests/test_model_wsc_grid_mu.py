"""The first model with every mu_i integrated out on one grid of nodes shared by all groups
(`WSC(mu="grid")`): the integral against scipy's quad, the check that fires when the grid does not
hold a group, the settings it refuses, and a fit. Its posterior against NUTS sampling every mu_i:
tests/test_model_wsc_integrated_mu.py (slow)."""

import math
import warnings

import numpy as np
import pytest

from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.models.wsc import (GRID_END_WEIGHT, MAX_GRID_NODES, WSC, build_model, data_grid, grid_check,
                                  grid_message, grid_plan, pooled_bin_frequencies)
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


def test_default_mu_by_method_and_model():
    """NUTS on the default model integrates on the grid by default; NUTS on a variant whose build_model
    takes mu by per-group quadrature (the grid is the default model's); Laplace by per-group quadrature
    (nested); a MAP and WH = inf sample every mu_i; `mu` given is kept."""
    assert WSC(method="nuts").mu_used == "grid"
    assert WSC(method="nuts", model_file="models/learned_rater_noise.py").mu_used == "integrated"
    assert WSC(method="laplace").mu_used == "integrated"
    assert WSC(method="map").mu_used == "sampled" and WSC(method="nuts", wh=math.inf).mu_used == "sampled"
    assert WSC(method="nuts", mu="sampled").mu_used == "sampled"


@pytest.fixture(scope="module")
def heavy():
    """Three groups of 10 clicks and one of 20,000: on one grid it would need thousands of nodes."""
    return simulate_wsc(n_groups=4, items_per_group=np.array([10, 10, 10, 20000]), n_bins=3, seed=1)


def test_heavy_group_by_per_group_quadrature_matches_scipy(heavy):
    """A group too heavy for the shared grid is integrated by per-group quadrature (the rest stay on a
    grid within MAX_GRID_NODES), and every group's value, in the groups' order, is its integral."""
    import pytensor

    from bayes_wsc.fit import transformed_start

    data, truth = heavy
    plan = grid_plan(data, 10.0, "hierarchical")
    assert plan.on_grid.tolist() == [True, True, True, False] and 10 < plan.nodes.size <= MAX_GRID_NODES
    point = point_of(truth, "hierarchical")
    expected = [brute_force(data, i, point["w0"], point["w1"], 0.3, 0.8, 1 / math.sqrt(10))
                for i in range(data.n_groups)]
    model = build_model(data, mu="grid")
    fn = pytensor.function(model.value_vars, model.replace_rvs_by_values([model[PREFIX + "groups"]]),
                           on_unused_input="ignore", mode="FAST_COMPILE")
    start = transformed_start(model, point)
    (pointwise,) = fn(*[start[v.name] for v in model.value_vars])
    np.testing.assert_allclose(pointwise[:3], expected[:3], rtol=0, atol=TOLERANCE)
    assert pointwise[3] == pytest.approx(expected[3], abs=1e-4)  # 5-node Gauss-Hermite on a near-Gaussian integrand


def test_grid_fit_by_default_records_its_check_split_and_integrated_likelihood(tmp_path, monkeypatch):
    """A NUTS fit with the default mu on data with one heavy group: the grid, that group by per-group
    quadrature; mu, pi and rho drawn after sampling, the per-group log-likelihood is the integrated one,
    the check's figures are kept with the fit, it raised no warning, the summary's notes say how mu was
    treated, and a loaded fit knows it. The pointwise log-likelihood waits for first use; the Pareto k
    check at fit time took half the draws, and fires as LOO on all of them does (the heavy group moves
    the emissions)."""
    from bayes_wsc import criticism, fit_log_likelihood, inference
    from bayes_wsc.estimator import load

    monkeypatch.setattr(fit_log_likelihood, "FIT_TIME_LOO_DRAWS", 30)
    data, _ = simulate_wsc(n_groups=30, items_per_group=np.array([40] * 29 + [20000]), n_bins=4, seed=7)
    est = WSC(method="nuts", draws=60, tune=60, chains=2, seed=1, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        est.fit(data)
    assert "_pending_log_likelihood" in est.__dict__ and "log_likelihood" not in est._fitted()
    at_fit = est.checks_.set_index("check").loc["loo_pareto_k"]
    assert "on 60 of the 120 draws" in at_fit["message"]
    post = est.idata_.posterior  # first use: the log-likelihood of every draw
    assert post["mu"].dims == ("chain", "draw", "group") and post["rho"].dims == ("chain", "draw", "bin")
    assert est.idata_.log_likelihood["groups"].shape == (2, 60, 30)
    (every,) = criticism.loo_rows(est)
    assert bool(at_fit["flagged"]) and every.flagged and at_fit["reference"] == pytest.approx(every.reference)
    attrs = inference.get_attrs(est.idata_)
    check = attrs["fit_info"]["nuts"]["mu_grid"]
    assert check["ok"] and check["draws_checked"] == 100 and check["nodes"] > 10
    assert check["groups_on_grid"] == 29 and check["groups_by_quadrature"] == 1 and check["heaviest_on_grid"] == 40
    assert "mu='grid'" in attrs["log_likelihood_holds"] and attrs["settings_used"]["mu"] == "grid"
    assert not any("mu='grid'" in m for m in attrs["diagnostics"])
    note = est.summary_notes()[-1]
    assert "grid of" in note and "except the 1 heaviest (more than 40 clicks)" in note and "the default" in note
    # the nodes come from the data: no MAP program is cached for other data of the same shapes
    assert est.model_inputs(data) is None and WSC(method="nuts", mu="sampled").model_inputs(data) is not None
    est.save(tmp_path / "fit.nc")
    back = load(tmp_path / "fit.nc")
    assert back.mu is None and back.mu_used == "grid" and back.summary_notes()[-1] == note


@pytest.mark.slow  # three NUTS fits, each compiled anew
def test_default_grid_that_does_not_hold_is_redone_by_per_group_quadrature(monkeypatch):
    """With the default mu, a grid fit whose check fails (here: every check, by a limit of 0) is redone with
    mu="integrated", without the discarded fit's warnings; the fit and its notes say so. Asked for
    explicitly, mu="grid" keeps its fit and warns."""
    from bayes_wsc import inference
    from bayes_wsc.models import wsc

    monkeypatch.setattr(wsc, "GRID_SPACING_LIMIT", 0.0)
    data, _ = simulate_wsc(n_groups=12, items_per_group=20, n_bins=3, seed=3)
    settings = dict(method="nuts", draws=40, tune=40, chains=1, seed=2, progressbar=False, checks=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = WSC(**settings).fit(data)
    attrs = inference.get_attrs(est._fitted())
    assert est.mu_used == "integrated" and attrs["settings_used"]["mu"] == "integrated"
    assert attrs["mu_grid_refused"]["spacing_over_finest_width"] > 0 and "mu_grid" not in attrs["fit_info"]["nuts"]
    assert not any("mu='grid'" in str(w.message) for w in caught)
    assert "did not hold every group" in est.summary_notes()[-1] and "so it was redone" in est.summary_notes()[-1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asked = WSC(mu="grid", **settings).fit(data)
    assert asked.mu_used == "grid" and any("mu='grid'" in str(w.message) for w in caught)
