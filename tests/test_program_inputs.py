"""A MAP program cached for one data set runs another of the same shapes exactly as a program
built for it, for every model: the data are runtime inputs, and none is left in the graph as a
constant. The data sets differ in every data-derived array, so a missed one changes the numbers.
The programs carry the Laplace functions too, which are compared alike, and the Laplace fits
of `test_a_laplace_fit_saves_loads_and_predicts` reuse them from the cache."""

import warnings

import numpy as np
import pytest

from bayes_wsc import inference
from bayes_wsc.errors import FitWarning
from bayes_wsc.estimator import load
from bayes_wsc.map_program import run_map
from bayes_wsc.models.experts import NoisyExperts
from bayes_wsc.models.pcmix import PCMixture
from bayes_wsc.models.proportions import ProportionsClassifier
from bayes_wsc.models.wsc import WSC
from bayes_wsc.simulate import simulate_two_blobs, simulate_wsc, toy_items

#: inputs that are equal in both data sets by design: dim lengths (the structure), settings, and the
#: group sizes, with what they fix of the exact-counts recursion: its starting state, which groups share
#: its one block (all), and the layout of their states (each cell's group, the cells one count apart)
SAME_BY_DESIGN = {"lam", "group_sizes", "cp0_init", "cp0_groups", "cp0_cell_row", "cp0_shift"}


def wsc_data(seed):
    sizes = np.random.default_rng(seed).integers(20, 40, 30)
    return simulate_wsc(n_groups=30, items_per_group=sizes, n_bins=4, seed=seed)[0]


def experts_data(seed):
    from bayes_wsc.data.pairwise import PairwiseConstraints
    from bayes_wsc.simulate.experts import simulate_experts_model

    items, constraints, _ = simulate_experts_model(n_items=20, n_features=3, n_clusters=2, alpha=(0.9, 0.8),
                                                   beta=(0.85, 0.7), pairs_per_expert=80, common_pairs=True,
                                                   separation=3.0, seed=seed)
    return PairwiseConstraints.from_frames(items, constraints)


def pcmix_data(seed):
    return toy_items(simulate_two_blobs(n=60, labeled_fraction=0.5, band=0.7, seed=seed)[0])


def proportions_data(seed):
    """Three classes with exact counts, groups of the same sizes in both data sets: new counts, new
    members (the items shuffled) and new features run in the program built for the other."""
    from bayes_wsc.data.proportions import LabelProportions
    from bayes_wsc.simulate.proportions import simulate_proportions

    data, _ = simulate_proportions("gaussian", n_groups=16, group_size=6, n_classes=3, n_features=2, seed=seed)
    order = np.random.default_rng(seed).permutation(data.n_items)
    return LabelProportions.from_arrays(data.x[order], data.item_group[order], data.proportions, counts=data.counts)


CASES = {
    "wsc": (lambda: WSC(method="laplace", seed=0), wsc_data),  # nested: every mu_i integrated out
    "wsc_joint": (lambda: WSC(method="laplace", mu="sampled", seed=0), wsc_data),
    "experts": (lambda: NoisyExperts(method="laplace", restarts=2, seed=0), experts_data),
    "pcmix": (lambda: PCMixture(method="laplace", components=2, restarts=2, seed=0), pcmix_data),
    "proportions": (lambda: ProportionsClassifier(emission="gaussian", bag_likelihood="exact-counts",
                                                  method="laplace", seed=0), proportions_data),
}


@pytest.fixture(scope="module")
def cache_home(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        home = tmp_path_factory.mktemp("cache")
        patch.setenv("XDG_CACHE_HOME", str(home))
        yield home


def programs(est, data):
    starts = est.initial_values(data)
    starts = [starts] if isinstance(starts, dict) else starts
    laplace = {"jacobian": True, "local": list(est._laplace_local())}
    est._model, est._model_recipe = None, (est.build_model, data)
    return est._map_program(data, starts, est.map_fixed(data), laplace), starts


@pytest.fixture(scope="module", params=list(CASES))
def case(request, cache_home):
    """(name, estimator, data A, data B, program cached from A run on B with B's inputs, program
    freshly built on B with the inputs read from B's model)."""
    from bayes_wsc.fit import build_map_program

    name = request.param
    make, simulate = CASES[name]
    data_a, data_b = simulate(1), simulate(2)
    (built_a, _, inputs_a, _), _ = programs(make(), data_a)
    assert built_a.origin == "built"
    est = make()
    (cached, fixed, inputs_b, coords_b), starts = programs(est, data_b)
    assert cached.origin == "cache"
    assert coords_b == {k: list(v) for k, v in est.model_.coords.items()}  # labels from the data, not the program
    fresh, fresh_inputs = build_map_program(est.model_, [{k: v for k, v in s.items() if k in cached.free}
                                                         for s in starts], fixed=fixed,
                                            laplace={"jacobian": True, "local": list(est._laplace_local())})
    return name, est, data_a, data_b, (cached, inputs_a, inputs_b, starts), (fresh, fresh_inputs)


def test_the_data_sets_differ_in_every_data_derived_input(case):
    name, est, _, _, (cached, inputs_a, inputs_b, _), _ = case
    data_inputs = [n for n in cached.inputs if n not in est.model_.coords and n not in SAME_BY_DESIGN]
    assert data_inputs
    for input_name in data_inputs:
        assert np.shape(inputs_a[input_name]) == np.shape(inputs_b[input_name])
        assert not np.array_equal(inputs_a[input_name], inputs_b[input_name]), (name, input_name)


def test_a_cached_program_runs_new_data_as_a_fresh_build(case):
    name, est, _, _, (cached, _, inputs_b, starts), (fresh, fresh_inputs) = case
    assert set(inputs_b) == set(fresh_inputs)
    for key in fresh_inputs:  # model_inputs computes what the model holds, exactly
        np.testing.assert_array_equal(np.asarray(inputs_b[key]).astype(fresh_inputs[key].dtype), fresh_inputs[key])
    given_cached, given_fresh = cached.device_inputs(inputs_b), fresh.device_inputs(fresh_inputs)
    start = cached.complete({k: v for k, v in starts[0].items() if k in cached.free})
    x = np.asarray(fresh.start(start, given_fresh))
    np.testing.assert_allclose(cached.start(start, given_cached), x, rtol=1e-12, atol=0)
    x = x + 0.05 * np.random.default_rng(0).standard_normal(x.size)

    def same(a, b):
        for u, v in zip(a, b) if isinstance(a, tuple) else [(a, b)]:
            np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-12, atol=1e-12)

    for function in ("value_and_grad", "laplace_value_and_grad"):
        same(getattr(cached, function)(x, given_cached), getattr(fresh, function)(x, given_fresh))
    for label, value in cached.values(x, given_cached).items():
        same(value, fresh.values(x, given_fresh)[label])
    hessian = "laplace_arrow" if cached.laplace["structure"] == "arrow" else "laplace_hessian"
    same(getattr(cached, hessian)(x, given_cached), getattr(fresh, hessian)(x, given_fresh))
    chunk = np.tile(x, (cached.laplace["chunk"], 1))
    for label, value in cached.draw_values(chunk, given_cached).items():
        same(value, fresh.draw_values(chunk, given_fresh)[label])
    free = [{k: v for k, v in s.items() if k in cached.free} for s in starts]
    ours, theirs = run_map(cached, free, inputs_b)[0], run_map(fresh, free, fresh_inputs)[0]
    for label in theirs.posterior:
        np.testing.assert_array_equal(ours.posterior[label], theirs.posterior[label])


def test_a_laplace_fit_saves_loads_and_predicts(case, tmp_path):
    """From the cached program: no PyMC model is built, and every reported variable has draws."""
    name, _, _, data_b, _, _ = case
    est = CASES[name][0]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        est.fit(data_b)
    assert est._model is None
    info = inference.get_attrs(est._fitted())["fit_info"]
    assert info["map"]["compiled_program"] == "cache" and info["laplace"]["centre_converged"]
    posterior = est._fitted().posterior
    assert posterior.sizes["chain"] == 1 and posterior.sizes["draw"] == 1000
    # the pointwise log-likelihood waits for first use, and the fit-time checks leave out LOO's row
    assert "log_likelihood" not in inference.group_names(est._fitted())
    assert "loo_pareto_k" not in set(est.checks_["check"])
    path = est.save(tmp_path / "fit.nc")
    loaded = load(path)
    loglik = inference.groups_of(loaded.idata_)["log_likelihood"]
    assert set(loglik.data_vars) and loglik.sizes["draw"] == 1000 and np.isfinite(loglik.to_array()).all()
    if name.startswith("wsc"):  # every group's mu_i integrated out, as NUTS's log-likelihood has it
        from bayes_wsc.models.wsc import integrated_group_loglik

        flat = {n: posterior[n].values[0] for n in ("mu", "w0", "w1", "mu_loc", "mu_scale")}
        expected = integrated_group_loglik(data_b.counts, data_b.he, flat["mu"], flat["w0"], flat["w1"],
                                           flat["mu_loc"], flat["mu_scale"], np.full(1000, 1 / np.sqrt(est.wh)))
        # nested: the model's own integral (5 nodes, float64) against the 9-node float32 one
        np.testing.assert_allclose(loglik["groups"].values[0], expected, **({"rtol": 1e-10} if name == "wsc_joint"
                                                                            else {"atol": 2e-3}))
        assert list(loglik["groups"].dims) == ["chain", "draw", "group"]
    assert inference.get_attrs(loaded.idata_)["method"] == "laplace"
    for var in posterior.data_vars:
        np.testing.assert_array_equal(loaded.idata_.posterior[var].values, posterior[var].values)
    table = loaded.summary()
    assert (table["sd"] > 0).any() and "r_hat" not in table.columns
    if name.startswith("wsc"):
        if name == "wsc_joint":
            assert info["laplace"]["structure"] == "arrow" and info["laplace"]["form"] == "joint"
            assert info["laplace"]["held_fixed"] == info["map"]["held_fixed"]
        else:
            assert info["laplace"]["structure"] == "dense" and info["laplace"]["form"] == "nested"
            assert "held_fixed" not in info["map"] and "mu" not in info["free_variables"]
        loaded.loo()
        assert len(loaded.run_checks()) > 0
        out = loaded.class_probability(ci=0.9)
        assert (out["high"] - out["low"]).values.min() > 0
    elif name == "experts":
        out = loaded.predict(data_b_items(data_b))
        assert (out["prob_high"] > out["prob_low"]).all()
    else:
        out = loaded.predict(data_b_frame(data_b))
        assert (out["prob_high"] > out["prob_low"]).all()


def data_b_items(data):
    import pandas as pd

    return pd.DataFrame(data.features * data.scaling.scale + data.scaling.mean, columns=data.feature_names)


def data_b_frame(data):
    import pandas as pd

    return pd.DataFrame(data.x_raw, columns=list(data.features))


@pytest.mark.parametrize("case", ["wsc_joint"], indirect=True)  # the model with local variables
def test_the_arrow_hessian_equals_the_dense_one_on_a_small_wsc_model(case):
    from bayes_wsc.fit import build_map_program
    from bayes_wsc.laplace import _arrow_draws

    _, est, _, data_b, _, (arrow, inputs) = case
    fixed = est.map_fixed(data_b)
    start = {k: v for k, v in est.initial_values(data_b).items() if k not in fixed}
    dense, _ = build_map_program(est.model_, [start], fixed, laplace={"jacobian": True, "local": []})
    assert (arrow.laplace["structure"], dense.laplace["structure"]) == ("arrow", "dense")
    given = arrow.device_inputs(inputs)
    x = np.asarray(arrow.start(arrow.complete(start), given)) + 0.1
    hessian = np.asarray(dense.laplace_hessian(x, given))
    diagonal, coupling, block, off_diagonal = (np.asarray(a) for a in arrow.laplace_arrow(x, given))
    local = np.asarray(arrow.laplace["positions"]["local"])
    glob = np.setdiff1d(np.arange(x.size), local)
    assert local.size == 30 and glob.size == 1 + 2 * 3  # mu_loc and two 4-bin simplexes (mu_scale held)
    np.testing.assert_allclose(np.diag(hessian)[local], diagonal, rtol=1e-10)
    np.testing.assert_array_equal(hessian[np.ix_(local, local)] - np.diag(np.diag(hessian)[local]), 0)
    np.testing.assert_allclose(hessian[np.ix_(local, glob)], coupling, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(hessian[np.ix_(glob, glob)], block, rtol=1e-10, atol=1e-10)
    assert off_diagonal < 1e-12
    # the arrow's draws have the dense inverse as their covariance
    deviations, report = _arrow_draws(arrow, x, given, arrow.laplace, 40000, np.random.default_rng(0), {})
    assert report["positive_definite"]
    covariance = np.linalg.inv(hessian)
    np.testing.assert_allclose(np.cov(deviations.T), covariance, atol=0.03 * np.abs(covariance).max())


@pytest.mark.parametrize("case", ["wsc"], indirect=True)
def test_the_command_line_fits_laplace(case, tmp_path, capsys):
    from bayes_wsc.cli import main
    from bayes_wsc.simulate import counts_to_clicks

    data_b = case[3]
    clicks, groups = counts_to_clicks(data_b)
    clicks.to_csv(tmp_path / "clicks.csv", index=False)
    groups.to_csv(tmp_path / "groups.csv", index=False)
    assert main(["fit", "wsc", "--clicks", str(tmp_path / "clicks.csv"), "--groups", str(tmp_path / "groups.csv"),
                 "--method", "laplace", "--draws", "200", "--seed", "3", "--out", str(tmp_path / "fit.nc")]) == 0
    printed = capsys.readouterr().out
    assert "hdi_5%" in printed and "r_hat" not in printed
    fit = load(tmp_path / "fit.nc")
    info = inference.get_attrs(fit.idata_)["fit_info"]
    assert info["map"]["compiled_program"] == "cache" and info["laplace"]["draws"] == 200


def test_a_model_inputs_that_misses_a_value_fails_the_build(cache_home, monkeypatch):
    """The safety net under the cache: an input the model reads but `model_inputs` does not compute
    (here the pooled frequencies, as if a new block forgot to list its pm.Data) stops the build."""
    from bayes_wsc.models.wsc import model as wsc

    original = wsc.model_data
    monkeypatch.setattr(wsc, "model_data", lambda data: {k: v for k, v in original(data).items()
                                                         if k != "pooled_bin_frequencies"})
    with pytest.raises(RuntimeError, match="does not compute 'pooled_bin_frequencies'"):
        WSC(mu_prior="flat").fit(wsc_data(3))
