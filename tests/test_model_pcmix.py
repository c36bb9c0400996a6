"""Prediction-constrained mixture (seed 003): likelihood against enumeration, PC training, ML+rep,
missing labels, predictions with intervals, relabeling, the command line, every bad input, and (slow)
both toy studies of the paper."""

import itertools
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import logsumexp

from bayes_wsc import inference
from bayes_wsc.baselines.pcmix import (
    Params,
    Priors,
    error_rate,
    item_logps,
    log_prior,
    ml_rep_em,
    ml_rep_objective,
    pc_objective,
    random_starts,
)
from bayes_wsc.cli import main
from bayes_wsc.data.labeled import LabeledItems
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.estimator import load
from bayes_wsc.fit import Draws, transformed_start
from bayes_wsc.models.pcmix import PCMixture, PCPath, basins, build_model, params_to_point, point_to_params
from bayes_wsc.simulate import simulate_intervals, simulate_two_blobs, toy_items


def cli(argv):
    try:
        return main(argv)
    except SystemExit as exit_:
        return exit_.code


def fit_quietly(est, data, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return est.fit(data, **kwargs)


@pytest.fixture(scope="module")
def intervals():
    frame, truth = simulate_intervals(seed=0)
    return frame, truth, toy_items(frame)


@pytest.fixture(scope="module")
def map_lam4(intervals):
    return fit_quietly(PCMixture(components=2, lam=4.0, restarts=6, seed=1), intervals[2])


# ---------------------------------------------------------------------- likelihood against enumeration
def brute_force_pc(x, y, pi, mean, sd, rho, lam):
    """log p(x), log p(y_L | x) and the PC objective by summing over every joint assignment z in K^n."""
    n, components = x.shape[0], pi.size
    f = np.array([[stats.norm.logpdf(x[d], mean[k], sd[k]).sum() for k in range(components)] for d in range(n)])
    joint_x, joint_xy = [], []
    for z in itertools.product(range(components), repeat=n):
        base = sum(np.log(pi[z[d]]) + f[d, z[d]] for d in range(n))
        joint_x.append(base)
        joint_xy.append(base + sum(np.log(rho[z[d], y[d]]) for d in range(n) if y[d] >= 0))
    log_px, log_pxy = logsumexp(joint_x), logsumexp(joint_xy)
    return log_px, log_pxy - log_px, log_px + lam * (log_pxy - log_px)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_potential_equals_enumeration(n_classes):
    rng = np.random.default_rng(n_classes)
    labels = [0, 1, np.nan, n_classes - 1, np.nan]
    data = LabeledItems.from_arrays(rng.normal(size=(5, 2)) * [1.0, 3.0] + [0.0, 5.0], labels,
                                    classes=list(range(n_classes)))
    components, lam = 3, 2.5
    params = Params(rng.dirichlet(np.ones(components)), rng.normal(size=(components, 2)),
                    rng.uniform(0.3, 2.0, size=(components, 2)), rng.dirichlet(np.ones(n_classes), size=components))
    log_px, log_py, objective = brute_force_pc(data.x, data.y, params.pi, params.mean, params.sd, params.rho, lam)

    model = build_model(data, components=components, lam=lam)
    point = transformed_start(model, params_to_point(params, 0.001))
    outputs = model.replace_rvs_by_values([model["data_loglik"], model["label_loglik"], model["pc_objective"]])
    values = model.compile_fn(outputs, inputs=model.value_vars, on_unused_input="ignore")(point)
    np.testing.assert_allclose(values, [log_px, log_py, objective], rtol=1e-10)
    # the whole log density is the prior plus the objective (no Jacobian: what the MAP maximizes)
    logp = model.compile_logp(jacobian=False)(point)
    np.testing.assert_allclose(logp, log_prior(params) + objective, rtol=1e-8)
    # and the NumPy version used by the baselines agrees
    assert pc_objective(data, params, lam)["objective"] == pytest.approx(objective, rel=1e-10)
    # unlabeled items contribute to log p(x) only
    per_x, per_y = item_logps(data, params)
    assert np.all(per_y[~data.labeled] == 0) and np.all(per_y[data.labeled] < 0)


def test_ml_rep_objective_equals_enumeration_of_replicated_labels():
    """Eq. 10 with integer r: the label factor raised to r is r copies of the label."""
    rng = np.random.default_rng(5)
    data = LabeledItems.from_arrays(rng.normal(size=(4, 1)), [1, 0, np.nan, 1])
    params = Params(np.array([0.3, 0.7]), rng.normal(size=(2, 1)), np.array([[0.8], [1.3]]),
                    np.array([[0.2, 0.8], [0.6, 0.4]]))
    replicated = 3
    total = 0.0
    for d in range(4):
        terms = [np.log(params.pi[k]) + stats.norm.logpdf(data.x[d, 0], params.mean[k, 0], params.sd[k, 0])
                 + (replicated * np.log(params.rho[k, data.y[d]]) if data.y[d] >= 0 else 0.0) for k in range(2)]
        total += logsumexp(terms)
    assert ml_rep_objective(data, params, replicated) == pytest.approx(total + log_prior(params), rel=1e-12)


def test_em_climbs_its_objective(intervals):
    data = intervals[2]
    start = random_starts(data, 2, 3, seed=4)[2]
    values = [ml_rep_em(data, 2, 4.0, starts=[start], max_iter=k).objective for k in (1, 2, 5, 20, 100)]
    assert np.all(np.diff(values) >= -1e-9)


# ---------------------------------------------------------------------- PC training
def test_map_is_pc_training_and_lam1_matches_joint_em(intervals):
    """At lam = 1 the PC objective is the joint likelihood, which EM (ML+rep with r = 1) also climbs:
    the MAP is a fixed point of EM, and L-BFGS started at EM's best solution cannot improve on it."""
    data = intervals[2]
    est = fit_quietly(PCMixture(components=2, lam=1.0, restarts=6, seed=3), data)
    post = est.idata_.posterior
    mode = inference.get_attrs(est.idata_)["fit_info"]["map"]["log_density"]
    fitted = point_to_params(est.map_point_, 0.001)
    assert mode == pytest.approx(ml_rep_objective(data, fitted, 1.0), abs=1e-6)
    em = ml_rep_em(data, 2, 1.0, starts=[fitted])
    assert em.objective == pytest.approx(mode, abs=0.05)
    np.testing.assert_allclose(em.params.mean, fitted.mean, atol=0.01)
    np.testing.assert_allclose(em.params.sd, fitted.sd, atol=0.01)
    np.testing.assert_allclose(em.params.rho, fitted.rho, atol=0.01)
    em_best = ml_rep_em(data, 2, 1.0, restarts=6, seed=3)
    again = fit_quietly(PCMixture(components=2, lam=1.0, restarts=1, seed=3), data,
                        start=params_to_point(em_best.params, 0.001))
    assert inference.get_attrs(again.idata_)["fit_info"]["map"]["log_density"] >= em_best.objective - 1e-3
    # the layout: named dims and coords, estimands in data units, az.summary works
    assert post["mean"].dims == ("chain", "draw", "component", "feature")
    assert list(post["feature"].values) == ["x"] and list(post["component"].values) == [0, 1]
    np.testing.assert_allclose(post["mean"].values[0, 0], data.center + data.scale * post["mean_z"].values[0, 0])
    assert set(est.summary().columns) == {"map"}
    assert est.idata_.observed_data["y"].dims == ("item",)


def test_all_labels_missing_equals_the_unsupervised_mixture():
    """Without labels lam has nothing to weigh: the MAP is the unsupervised mixture whatever lam,
    equal to EM on x alone, close to scikit-learn's maximum likelihood fit, and rho stays at 1/2."""
    from sklearn.mixture import GaussianMixture

    rng = np.random.default_rng(2)
    x = rng.normal(size=(600, 3)) * [1.0, 0.5, 2.0]
    x[:, 0] += np.where(rng.random(600) < 0.4, -3.0, 3.0)  # two well-separated clusters: one mode up to labels
    data = LabeledItems.from_arrays(x, [None] * 600, classes=[0, 1])
    assert data.n_labeled == 0
    with pytest.warns(FitWarning, match="no item has a label"):
        est = PCMixture(components=2, lam=16.0, restarts=4, seed=0).fit(data)
    assert any("no item has a label" in m for m in est.diagnostics_)
    fitted = point_to_params(est.map_point_, 0.001)
    em = ml_rep_em(data, 2, 0.0, starts=[fitted])  # EM on x alone does not move from the MAP
    assert est.idata_.posterior.attrs["n_labeled"] == 0
    assert inference.get_attrs(est.idata_)["fit_info"]["map"]["log_density"] == pytest.approx(em.objective, abs=0.05)
    np.testing.assert_allclose(em.params.mean, fitted.mean, atol=0.01)
    order = np.argsort(fitted.mean[:, 0])
    np.testing.assert_allclose(fitted.rho[:, 1], 0.5, atol=1e-6)
    gm = GaussianMixture(2, covariance_type="diag", n_init=4, random_state=0).fit(data.x)
    np.testing.assert_allclose(fitted.mean[order], gm.means_[np.argsort(gm.means_[:, 0])], atol=0.05)


def test_semi_supervised_missing_labels(intervals):
    """Hidden labels drop out of the label term only; the fit still predicts them."""
    frame, truth, full = intervals
    rng = np.random.default_rng(7)
    hidden = rng.random(full.n_items) < 0.6
    data = full.with_labels(np.where(hidden, -1, full.y))
    est = fit_quietly(PCMixture(components=2, lam=8.0, restarts=6, seed=2), data)
    params = point_to_params(est.map_point_, 0.001)
    terms = pc_objective(data, params, 8.0)
    post = est.idata_.posterior
    assert post["label_loglik"].values[0, 0] == pytest.approx(terms["label_loglik"], rel=1e-8)
    assert post["data_loglik"].values[0, 0] == pytest.approx(terms["data_loglik"], rel=1e-8)
    assert inference.get_attrs(est.idata_)["n_labeled"] == int((~hidden).sum())
    # the clusters still predict the hidden labels (the trivial rate is about 0.5)
    assert est.scores(y=np.where(hidden, full.y, -1))["error_rate"] < 0.35
    assert (est.idata_.observed_data["y"].values == -1).sum() == hidden.sum()


def test_restart_basins_are_reported(map_lam4):
    table = map_lam4.restart_basins_
    assert table["restarts"].sum() == 6 and table["log_density"].is_monotonic_decreasing
    info = inference.get_attrs(map_lam4.idata_)["fit_info"]["map"]
    assert table["log_density"].iloc[0] == pytest.approx(info["log_density"])
    assert basins([-10.0, -10.01, -12.0, -np.inf])["restarts"].tolist() == [2, 1, 1]


# ---------------------------------------------------------------------- predictions and NUTS
@pytest.fixture(scope="module")
def nuts_fit(intervals):
    est = PCMixture(components=2, lam=4.0, restarts=6, seed=1, method="nuts", draws=150, tune=200, chains=2,
                    progressbar=False)
    return fit_quietly(est, intervals[2])


def test_nuts_predict_with_intervals(nuts_fit, tmp_path):
    items = pd.DataFrame({"x": [-0.5, 1.25, 1.8], "note": ["a", "b", "c"]})
    pred = nuts_fit.predict(items, ci=0.9)
    assert list(pred.columns) == ["x", "note", "prob", "prob_low", "prob_high", "cluster", "cluster_prob_0",
                                  "cluster_prob_1"]
    assert np.all(pred.prob_low <= pred.prob) and np.all(pred.prob <= pred.prob_high)
    assert np.all(pred.prob_high - pred.prob_low > 1e-4)  # draws, not a point
    np.testing.assert_allclose(pred[["cluster_prob_0", "cluster_prob_1"]].sum(axis=1), 1.0)
    # interval B is positive, C negative: the clusters predict them
    assert pred.prob[1] > 0.7 and pred.prob[2] < pred.prob[1]
    # P(y | x) by hand from the draws
    post = nuts_fit.idata_.posterior
    pi = post["pi"].values.reshape(-1, 2)
    mean, sd = post["mean"].values.reshape(-1, 2), post["sd"].values.reshape(-1, 2)
    rho = post["rho"].values.reshape(-1, 2)
    weights = pi * stats.norm.pdf(1.25, mean, sd)
    assert pred.prob[1] == pytest.approx(np.mean((weights * rho).sum(1) / weights.sum(1)), rel=1e-8)
    nuts_fit.save(tmp_path / "nuts.nc")
    again = load(tmp_path / "nuts.nc")
    pd.testing.assert_frame_equal(again.predict(items, ci=0.9), pred)
    assert "r_hat" in again.summary().columns
    assert "map_point" in again.idata_.posterior.attrs


def test_component_logp_draws_is_the_expression_it_replaced():
    """`component_logp_draws` makes its (S, m, K) steps in place: bit for bit the expression it replaced
    (written out here)."""
    from bayes_wsc.maths.pcmix import LOG_2PI, component_logp_draws

    rng = np.random.default_rng(4)
    x, mean_z, sd_z = rng.normal(size=(13, 3)), rng.normal(size=(6, 2, 3)), rng.uniform(0.2, 2.0, size=(6, 2, 3))
    precision = 1.0 / sd_z**2
    quad = (np.einsum("md,skd->smk", x**2, precision, optimize=True)
            - 2 * np.einsum("md,skd->smk", x, mean_z * precision, optimize=True)
            + np.sum(mean_z**2 * precision, axis=-1)[:, None, :])
    before = -0.5 * np.maximum(quad, 0.0) - np.sum(np.log(sd_z), axis=-1)[:, None, :] - 0.5 * LOG_2PI * x.shape[1]
    assert np.array_equal(component_logp_draws(x, mean_z, sd_z), before)


def test_component_logp_rows_is_component_logp_draws_laid_out_per_component():
    """`component_logp_rows` (one matrix product per component, (K, m, S)) gives `component_logp_draws`'s values
    to float rounding, and with log pi added the joint log density."""
    from bayes_wsc.maths.pcmix import component_logp_draws, component_logp_rows

    rng = np.random.default_rng(5)
    x, mean_z, sd_z = rng.normal(size=(13, 3)), rng.normal(size=(6, 2, 3)), rng.uniform(0.2, 2.0, size=(6, 2, 3))
    expected = component_logp_draws(x, mean_z, sd_z).transpose(2, 1, 0)
    np.testing.assert_allclose(component_logp_rows(x, mean_z, sd_z), expected, rtol=1e-13, atol=1e-13)
    log_pi = np.log(rng.dirichlet(np.ones(2), size=6))  # (S, K): the joint log density
    np.testing.assert_allclose(component_logp_rows(x, mean_z, sd_z, log_pi), expected + log_pi.T[:, None, :],
                               rtol=1e-13, atol=1e-13)


@pytest.fixture(scope="module")
def laplace_three(intervals):
    """Three components with draws: `predict_arrays`' general path (two components take a logistic shortcut)."""
    est = PCMixture(components=3, lam=4.0, restarts=4, seed=1, method="laplace", draws=200, progressbar=False)
    return fit_quietly(est, intervals[2])


@pytest.mark.parametrize("which", ["nuts_fit", "laplace_three"])
def test_predict_arrays_are_the_draws_means_and_hdis(which, request, monkeypatch):
    """`predict_arrays` takes intervals of the label probabilities only (the clusters' were computed and
    dropped before): the label means and HDIs of every draw's P(y | x) as the code before computed them
    (written out here: `component_logp_draws`, a log-sum-exp, `inference.hdi` of the (draws, items) columns), and
    the clusters' mean memberships, to float rounding (the rows' layout changes the order of the sums), with
    two components (P(z = 1 | x) as a logistic of the log densities' difference) and with three."""
    from bayes_wsc import maths
    from bayes_wsc.maths.pcmix import component_logp_draws

    fit = request.getfixturevalue(which)
    x = np.linspace(-2.0, 2.0, 9)[:, None]
    pi, mean_z, sd_z, rho = fit._draws()
    assert pi.shape[1] == (2 if which == "nuts_fit" else 3)
    joint = np.log(pi)[:, None, :] + component_logp_draws(x, mean_z, sd_z)
    resp = np.exp(joint - maths.logsumexp(joint, axis=2, keepdims=True))
    labels = np.einsum("smk,skc->smc", resp, rho, optimize=True)
    got = fit.predict_arrays(x, ci=0.9)
    np.testing.assert_allclose(got["label_mean"], labels.mean(axis=0), rtol=1e-13)
    bounds = inference.hdi(labels, 0.9)
    np.testing.assert_allclose(got["label_low"], bounds[..., 0], rtol=1e-13)
    np.testing.assert_allclose(got["label_high"], bounds[..., 1], rtol=1e-13)
    np.testing.assert_allclose(got["cluster_mean"], resp.mean(axis=0), rtol=1e-13, atol=1e-15)
    monkeypatch.setattr("bayes_wsc.posterior.CACHE_CHUNK_FLOATS", 3 * pi.shape[0])  # chunks of 3 rows: items split
    again = fit.predict_arrays(x, ci=0.9)
    for name, values in got.items():
        np.testing.assert_array_equal(again[name], values)


def test_predict_arrays_of_chosen_classes_are_those_columns_bit_for_bit(nuts_fit):
    """`classes` (what `predict` of two classes asks for: the positive one) gives those classes' label
    columns, in that order, bit for bit as computed with every class; the clusters' means the same."""
    x = np.linspace(-2.0, 2.0, 9)[:, None]
    every = nuts_fit.predict_arrays(x, ci=0.9)
    for classes in ([1], [1, 0]):
        some = nuts_fit.predict_arrays(x, ci=0.9, classes=classes)
        for name in ("label_mean", "label_low", "label_high"):
            np.testing.assert_array_equal(some[name], every[name][:, classes])
        np.testing.assert_array_equal(some["cluster_mean"], every["cluster_mean"])


def test_nuts_chains_are_relabeled_to_the_map(nuts_fit):
    """The narrow positive cluster keeps one label in every chain and draw (relabeled against the MAP)."""
    post = nuts_fit.idata_.posterior
    map_rho = nuts_fit.map_point_["rho"]
    narrow = int(np.argmax(map_rho))
    assert np.all(post["rho"].values[..., narrow] > post["rho"].values[..., 1 - narrow])
    info = inference.get_attrs(nuts_fit.idata_)["fit_info"]["nuts"]
    assert info["chain_agreement"] == pytest.approx([1.0, 1.0], abs=0.02)


def test_align_draws_undoes_label_switching_and_reports_other_modes(map_lam4, intervals):
    data = intervals[2]
    # memberships are read from the reported mean and sd (which every variant has), so the draws carry them
    post = map_lam4.idata_.posterior
    point = {k: post[k].values[0, 0] for k in ("pi", "mean_z", "sd_excess", "rho", "mean", "sd")}
    map_draws = Draws({k: v[None, None] for k, v in point.items()})
    swapped = {k: v[::-1] for k, v in point.items()}
    draws = Draws({k: np.stack([np.stack([point[k]] * 3), np.stack([swapped[k]] * 3)])
                   for k in point})  # chain 0 as the MAP, chain 1 with the labels swapped
    labels = {"free": ["pi", "mean_z", "sd_excess", "rho"],
              "dims": {k: list(post[k].dims[2:]) for k in point}}
    assert map_lam4.align_draws(draws, map_draws, data, **labels) == []
    for name in point:
        np.testing.assert_allclose(draws.posterior[name][1], np.stack([point[name]] * 3))
    assert draws.info["relabeled_draws"] == 3
    # a chain in another partition (both clusters on the same place) cannot be relabeled: warned
    other = dict(point, mean_z=np.array([[0.0], [0.05]]), sd_excess=np.array([[1.0], [0.05]]))
    other.update(mean=data.center + data.scale * other["mean_z"], sd=data.scale * (0.001 + other["sd_excess"]))
    draws = Draws({k: np.stack([np.stack([point[k]] * 2), np.stack([other[k]] * 2)]) for k in point})
    messages = map_lam4.align_draws(draws, map_draws, data, **labels)
    assert len(messages) == 1 and messages[0].startswith("chain 1") and "different mode" in messages[0]


def test_categorical_labels_predict_every_class():
    rng = np.random.default_rng(3)
    centers = np.array([[-3.0, 0.0], [0.0, 3.0], [3.0, 0.0]])
    which = rng.integers(0, 3, 240)
    x = centers[which] + 0.6 * rng.normal(size=(240, 2))
    labels = np.array(["low", "mid", "high"], dtype=object)[which]
    labels[rng.random(240) < 0.5] = None
    data = LabeledItems.from_frame(pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "kind": labels}), label_col="kind")
    assert data.classes == ("high", "low", "mid")
    est = fit_quietly(PCMixture(components=3, lam=2.0, restarts=4, seed=0), data)
    assert est.idata_.posterior["rho"].dims == ("chain", "draw", "component", "class")
    pred = est.predict(pd.DataFrame({"a": [-3.0, 3.0], "b": [0.0, 0.0]}))
    assert {"prob_high", "prob_low", "prob_mid", "prob_mid_low", "prob_mid_high", "cluster_prob_2"} <= set(pred)
    assert "prob" not in pred
    assert pred.loc[0, "prob_low"] > 0.9 and pred.loc[1, "prob_high"] > 0.9
    np.testing.assert_allclose(pred[["prob_high", "prob_low", "prob_mid"]].sum(axis=1), 1.0)


# ---------------------------------------------------------------------- lam path
def test_fit_path_warm_starts_and_tradeoff(intervals, tmp_path):
    data = intervals[2]
    path = PCMixture(components=2, restarts=4, seed=5).fit_path(data, [8, 1], warm_start=True)
    assert path.lams == [1.0, 8.0]
    table = path.table()
    assert list(table["lam"]) == [1.0, 8.0]
    assert {"objective", "log_density", "basins", "restarts_at_best", "best_start", "error_rate",
            "data_nll_per_item"} <= set(table.columns)
    # the second fit started from the first's optimum as well as from its own restarts
    assert inference.get_attrs(path.fits[1].idata_)["warm_starts"] == 1
    assert inference.get_attrs(path.fits[1].idata_)["fit_info"]["map"]["restarts"] == 5
    # more weight on prediction never explains the labels worse
    assert table["label_loglik"].iloc[1] >= table["label_loglik"].iloc[0] - 1e-6
    out = path.save(tmp_path / "path")
    again = PCPath.load(out)
    assert again.lams == path.lams and again.warm_start
    report = path.report(tmp_path / "report")
    text = report.read_text()
    assert "Trade-off" in text and text.count("data:image/png;base64") == 2


# ---------------------------------------------------------------------- command line
def test_cli_fit_predict_summary_report_path(intervals, tmp_path, capsys):
    frame = intervals[0].assign(item=[f"i{k}" for k in range(len(intervals[0]))])
    frame.loc[::3, "y"] = pd.NA  # a third unlabeled: empty cells in the CSV
    frame.to_csv(tmp_path / "items.csv", index=False)
    assert ",," in (tmp_path / "items.csv").read_text() or ",\n" in (tmp_path / "items.csv").read_text()
    fit = tmp_path / "fit.nc"
    code = cli(["fit", "pcmix", "--items", str(tmp_path / "items.csv"), "--label-col", "y", "--id-col", "item",
                "--components", "2", "--lam", "4", "--restarts", "4", "--seed", "1", "--out", str(fit),
                "--report", str(tmp_path / "rep")])
    out = capsys.readouterr().out
    assert code == 0 and fit.exists() and (tmp_path / "rep" / "report.html").exists()
    assert "233 labeled" in out and "rho[0]" in out and "Diagnostics" in out
    new = pd.DataFrame({"x": [0.0, 1.2], "extra": ["kept", "kept"]})
    new.to_csv(tmp_path / "new.csv", index=False)
    assert cli(["predict", str(fit), "--items", str(tmp_path / "new.csv"), "--out", str(tmp_path / "p.csv")]) == 0
    pred = pd.read_csv(tmp_path / "p.csv")
    assert list(pred.columns) == ["x", "extra", "prob", "prob_low", "prob_high", "cluster", "cluster_prob_0",
                                  "cluster_prob_1"]
    # a MAP fit has no interval: empty cells (they used to equal the probability itself)
    assert pred.prob.between(0, 1).all() and pred.prob_low.isna().all() and pred.prob_high.isna().all()
    assert load(fit).idata_.observed_data["item"].values[0] == "i0"
    assert cli(["summary", str(fit)]) == 0 and "model: pcmix" in capsys.readouterr().out
    assert cli(["report", str(fit), "--out", str(tmp_path / "again")]) == 0

    out_dir = tmp_path / "path"
    code = cli(["path", "pcmix", "--items", str(tmp_path / "items.csv"), "--label-col", "y", "--id-col", "item",
                "--components", "2", "--lams", "1,4", "--restarts", "3", "--seed", "1", "--out", str(out_dir)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert {p.name for p in out_dir.iterdir()} >= {"lam_1.nc", "lam_4.nc", "path.csv", "report.html"}
    table = pd.read_csv(out_dir / "path.csv")
    assert list(table["lam"]) == [1.0, 4.0] and "error_rate" in out
    # the report holds the trade-off figure (error and -log p(x)/N against lam) and the clusters at each lam
    page = (out_dir / "report.html").read_text()
    assert "Trade-off: prediction against data fit" in page and "-log p(x) / N against lam" in page
    assert page.count("data:image/png;base64") == 2 and "lam = 4" in page
    assert PCPath.load(out_dir).lams == [1.0, 4.0]
    assert cli(["predict", str(out_dir / "lam_4.nc"), "--items", str(tmp_path / "new.csv"),
                "--out", str(tmp_path / "p4.csv")]) == 0


# ---------------------------------------------------------------------- bad input
@pytest.fixture
def good(tmp_path):
    frame = pd.DataFrame({"a": [0.1, 0.5, 1.3, 2.0, 2.2, 0.7], "b": [1.0, 0.0, 2.0, 1.5, 0.3, 0.9],
                          "y": [0, 1, None, 1, 0, None]})
    return tmp_path, frame


def run_fit(tmp_path, frame, *extra, lam="4", components="2"):
    frame.to_csv(tmp_path / "items.csv", index=False)
    return cli(["fit", "pcmix", "--items", str(tmp_path / "items.csv"), "--components", components, "--lam", lam,
                "--restarts", "2", "--out", str(tmp_path / "fit.nc"), *extra])


BAD = {
    "label outside the classes": (lambda f: f.assign(y=pd.array([0, 1, 2, 1, 0, None], dtype="Int64")),
                                  ["--classes", "0,1"], {},
                                  "has value '2' (row 3), which is not one of the classes ['0', '1']"),
    "non-whole label": (lambda f: f.assign(y=[0, 0.5, None, 1, 0, None]), [], {}, "labels must be classes"),
    "one text class": (lambda f: f.assign(y=["yes", None, "yes", None, None, "yes"]), [], {},
                       "holds only the class 'yes'"),
    "negative lam": (lambda f: f, [], {"lam": "-1"}, "lam must be a finite number >= 0"),
    "lam not a number": (lambda f: f, [], {"lam": "lots"}, "expected a number >= 0"),
    "K of 0": (lambda f: f, [], {"components": "0"}, "expected a positive whole number"),
    "K above the items": (lambda f: f, [], {"components": "7"}, "exceeds the number of items (6)"),
    "NaN feature": (lambda f: f.assign(a=[0.1, np.nan, 1.3, 2.0, 2.2, 0.7]), [], {},
                    "feature column 'a' has a missing value (row 2)"),
    "infinite feature": (lambda f: f.assign(b=[1.0, 0.0, np.inf, 1.5, 0.3, 0.9]), [], {},
                         "feature column 'b' has a non-finite value"),
    "text feature": (lambda f: f.assign(b=["1", "x", "2", "1", "0", "1"]), [], {}, "non-numeric value 'x' (row 2)"),
    "missing label column": (lambda f: f.rename(columns={"y": "label"}), ["--features", "a,b"], {}, "no column 'y'"),
    "missing feature column": (lambda f: f, ["--features", "a,c"], {}, "no column 'c'"),
    "label used as a feature": (lambda f: f, ["--features", "a,y"], {}, "is also the label or id column"),
    "duplicate ids": (lambda f: f.assign(id=[1, 2, 3, 3, 4, 5]), ["--id-col", "id"], {}, "duplicate id '3'"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line(case, good, capsys):
    tmp_path, frame = good
    mutate, extra, options, expected = BAD[case]
    code = run_fit(tmp_path, mutate(frame.copy()), *extra, **options)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert expected in err, err
    assert len(err.splitlines()) == 1, err
    assert not (tmp_path / "fit.nc").exists()


def test_no_labels_with_positive_lam_is_a_warning(good, capsys):
    tmp_path, frame = good
    code = run_fit(tmp_path, frame.assign(y=None), "--classes", "0,1")
    out = capsys.readouterr().out
    assert code == 0 and "0 labeled" in out and "no item has a label" in out


def test_path_bad_lams(good, capsys):
    tmp_path, frame = good
    frame.to_csv(tmp_path / "items.csv", index=False)
    code = cli(["path", "pcmix", "--items", str(tmp_path / "items.csv"), "--components", "2", "--lams", "1,-4",
                "--out", str(tmp_path / "p")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "lam must be a finite number >= 0, got '-4'" in err and len(err.splitlines()) == 1


def test_path_lams_that_print_alike_get_their_own_files(good, capsys):
    """lam = 1 and 1.0000001 are two fits: two files, each listed once in path.csv and loading back as
    its own lam (`:g` used to name both lam_1.nc, the second replacing the first)."""
    tmp_path, frame = good
    frame.to_csv(tmp_path / "items.csv", index=False)
    out = tmp_path / "path"
    code = cli(["path", "pcmix", "--items", str(tmp_path / "items.csv"), "--components", "2", "--lams",
                "1,1.0000001", "--restarts", "1", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    table = pd.read_csv(out / "path.csv")
    assert list(table["file"]) == ["lam_1.nc", "lam_1.0000001.nc"]
    assert sorted(p.name for p in out.glob("lam_*.nc")) == ["lam_1.0000001.nc", "lam_1.nc"]
    assert [load(out / name).lam for name in table["file"]] == [1.0, 1.0000001]
    assert PCPath.load(out).lams == [1.0, 1.0000001]


def test_api_errors_name_the_setting(intervals):
    data = intervals[2]
    for kwargs, expected in (({"lam": -0.5}, "lam must be a finite number >= 0"),
                             ({"components": 0}, "components \\(K\\) must be a whole number >= 1"),
                             ({"components": 2.5}, "components \\(K\\) must be a whole number"),
                             ({"restarts": 0}, "restarts must be a whole number >= 1"),
                             ({"sd_floor": 0}, "sd_floor must be a positive number"),
                             ({"concentration": 0.5}, "concentration must be a number >= 1")):
        with pytest.raises(InputError, match=expected):
            PCMixture(**kwargs).fit(data)
    with pytest.raises(InputError, match="expects LabeledItems"):
        PCMixture().fit(pd.DataFrame({"x": [1.0]}))
    with pytest.raises(InputError, match="give at least one lam"):
        PCMixture().fit_path(data, [])
    with pytest.raises(InputError, match="not fitted yet"):
        PCMixture().predict(pd.DataFrame({"x": [1.0]}))


def test_predict_bad_items(map_lam4):
    with pytest.raises(InputError, match="items has no column 'x'"):
        map_lam4.predict(pd.DataFrame({"z": [1.0]}))
    with pytest.raises(InputError, match="feature column 'x' has a missing value"):
        map_lam4.predict(pd.DataFrame({"x": [1.0, np.nan]}))


def test_no_traceback_from_a_real_process(good):
    tmp_path, frame = good
    frame.assign(b=["1", "x", "2", "1", "0", "1"]).to_csv(tmp_path / "items.csv", index=False)
    proc = subprocess.run([sys.executable, "-m", "bayes_wsc.cli", "fit", "pcmix", "--items", str(tmp_path / "items.csv"),
                           "--components", "2", "--lam", "4", "--out", str(tmp_path / "fit.nc")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "non-numeric value 'x'" in proc.stderr


# ---------------------------------------------------------------------- the paper's claim, small
def test_pc_beats_joint_and_ml_rep_on_a_small_sec33_toy():
    """Seed 003's claim at the paper's settings (Sec. 3.3: 10% labeled, lam = 64), on 1500 items instead of 5000.

    PC training isolates the thin band of positives (|x_2| < 0.1); the joint model (lam = 1) and ML+rep
    (labels replicated 64 times, EM) keep the two blobs and predict y from x at about the trivial rate.
    Error rates on every item (the simulation knows the hidden labels)."""
    frame, truth = simulate_two_blobs(n=1500, labeled_fraction=0.10, seed=0)
    data = toy_items(frame)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        path = PCMixture(components=2, restarts=4, seed=0).fit_path(data, [1.0, 64.0])
    joint, pc = path.table(y=truth.y)["error_rate"]
    ml_rep = error_rate(data, ml_rep_em(data, 2, 64.0, restarts=4, seed=0).params, truth.y)
    assert joint == pytest.approx(truth.error_floor, abs=0.01)  # about 0.085
    assert ml_rep > truth.error_floor - 0.02  # the two-blob solution
    assert pc < 0.5 * min(joint, ml_rep)  # measured: 0.025 against 0.085 and 0.079


# ---------------------------------------------------------------------- the paper's toy studies (slow)
PAPER_LAMS = [1.0, 4.0, 16.0, 64.0]


@pytest.mark.slow
def test_toy_sec32_intervals():
    """Sec. 3.2: PC at lam >= 4 predicts y better than ML+rep at any replication weight."""
    frame, truth = simulate_intervals(seed=0)
    data = toy_items(frame)
    path = PCMixture(components=2, restarts=10, seed=0).fit_path(data, PAPER_LAMS)
    table = path.table()
    pc4 = float(table.loc[table.lam == 4, "error_rate"].iloc[0])
    ml_rep = [error_rate(data, ml_rep_em(data, 2, lam, restarts=10, seed=0).params) for lam in PAPER_LAMS]
    assert pc4 < 0.28  # the paper: about 0.25
    assert pc4 < min(ml_rep)
    assert min(ml_rep[1:]) > 0.25  # the paper: about 0.4 for every lam > 1
    # the prediction improves with lam only at some cost in how well x is explained
    assert table["data_nll_per_item"].iloc[-1] > table["data_nll_per_item"].iloc[0]


@pytest.mark.slow
@pytest.mark.parametrize("labeled_fraction", [0.1, 1.0])
def test_toy_sec33_blobs(labeled_fraction):
    """Sec. 3.3: at lam = 1 with few labels the fit explains x and predicts y at the trivial rate; PC with
    large lam finds the thin band of positives; ML+rep with few labels does not (benchmarks/RESULTS.md)."""
    frame, truth = simulate_two_blobs(n=5000, labeled_fraction=labeled_fraction, seed=0)
    data = toy_items(frame)
    path = PCMixture(components=2, restarts=10, seed=0).fit_path(data, [1.0, 16.0, 64.0])
    table = path.table(y=truth.y)
    if labeled_fraction <= 0.2:  # with every label the joint fit already has a cluster on the band (0.035)
        assert table["error_rate"].iloc[0] == pytest.approx(truth.error_floor, abs=0.01)
    assert table["error_rate"].iloc[-1] < 0.5 * table["error_rate"].iloc[0]
    assert table["error_rate"].iloc[-1] < 0.03
    assert table["data_nll_per_item"].iloc[-1] > table["data_nll_per_item"].iloc[0]
    ml_rep = ml_rep_em(data, 2, 64.0, restarts=10, seed=0)
    ml_error = error_rate(data, ml_rep.params, truth.y)
    if labeled_fraction <= 0.2:
        assert ml_error > 0.06  # the pathological two-blob solution
    assert table["error_rate"].iloc[-1] < ml_error + 1e-9
