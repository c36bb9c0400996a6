"""Model criticism (`bayes_wsc.checks`): pointwise log-likelihoods against the models' formulas, the
first model's integrated LOO, replicated statistics that recover the generating ones, and the targeted
checks flagging what they are for. (What every model's LOO, replicates, checks and `check`/`ppc`
commands must do is in test_contract.py.)"""

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.integrate import quad
from scipy.special import expit, logsumexp
from scipy.stats import norm

from bayes_wsc import criticism as checks
from bayes_wsc import inference
from bayes_wsc.checks.wsc import aggregation_rows
from bayes_wsc.cli import main
from bayes_wsc.data.labeled import LabeledItems
from bayes_wsc.data.pairwise import PairwiseConstraints
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.estimator import load
from bayes_wsc.models import experts as experts_model
from bayes_wsc.models import pcmix as pcmix_model
from bayes_wsc.models.experts import NoisyExperts
from bayes_wsc.models.pcmix import PCMixture
from bayes_wsc.models.wsc import WSC, build_model, integrated_group_loglik, pooled_bin_frequencies
from bayes_wsc.simulate import simulate_wsc
from bayes_wsc.simulate.experts import simulate_experts_model
from test_likelihoods import brute_force_loglik

PREFIX = inference.LOG_LIKELIHOOD_PREFIX
NUTS = dict(method="nuts", draws=100, tune=150, chains=2, seed=3, progressbar=False)


def quietly(est, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return est.fit(data)


def cli(argv):
    try:
        return main(argv)
    except SystemExit as exit_:
        return exit_.code


def evaluate(model, names, point):
    """Model variables (Deterministics, potentials, log-probabilities) at a point of the value variables."""
    import pytensor

    outputs = model.replace_rvs_by_values([model[n] if isinstance(n, str) else n for n in names])
    fn = pytensor.function(model.value_vars, outputs, on_unused_input="ignore", mode="FAST_COMPILE")
    return fn(*[point[v.name] for v in model.value_vars])


# ---------------------------------------------------------------------- data and fits
@pytest.fixture(scope="module")
def wsc_data():
    return simulate_wsc(n_groups=40, items_per_group=25, n_bins=4, sigma_h=0.5, seed=21)


@pytest.fixture(scope="module")
def wsc_fits(wsc_data):
    data, _ = wsc_data
    # NUTS sampling every mu_i (not the default grid): the fit whose recorded values the integrated ones replace,
    # and which starts from the joint MAP that the aggregation check reuses
    return {"map": quietly(WSC(wh=4.0), data), "nuts": quietly(WSC(wh=4.0, mu="sampled", **NUTS), data)}


@pytest.fixture(scope="module")
def experts_data():
    items, constraints, truth = simulate_experts_model(n_items=60, n_features=2, n_clusters=2, alpha=(0.9, 0.8, 0.7),
                                                       beta=(0.9, 0.8, 0.7), pairs_per_expert=80, separation=3.0, seed=5)
    return PairwiseConstraints.from_frames(items, constraints), items, constraints, truth


@pytest.fixture(scope="module")
def experts_fits(experts_data):
    data = experts_data[0]
    return {"map": quietly(NoisyExperts(n_clusters=2, restarts=4, seed=1), data),
            "nuts": quietly(NoisyExperts(n_clusters=2, restarts=4, **NUTS), data)}


@pytest.fixture(scope="module")
def pcmix_data():
    rng = np.random.default_rng(8)
    z = rng.random(240) < 0.4
    x = np.where(z[:, None], [2.0, -1.0], [-1.0, 0.5]) + rng.standard_normal((240, 2))
    y = np.where(rng.random(240) < 0.5, np.where(rng.random(240) < np.where(z, 0.85, 0.1), 1, 0), -1)
    return LabeledItems(x, y, ("a", "b"), ("0", "1"), np.zeros(2), np.ones(2), np.arange(240).astype(str)), z


@pytest.fixture(scope="module")
def pcmix_fits(pcmix_data):
    data = pcmix_data[0]
    return {"map": quietly(PCMixture(components=2, restarts=3, seed=1), data),
            "nuts": quietly(PCMixture(components=2, restarts=3, **NUTS), data)}


# ---------------------------------------------------------------------- pointwise log-likelihood
def test_wsc_pointwise_is_the_data_loglik(wsc_data):
    """Per group: clicks (centring added back) plus HE; sums to the model's own terms and to enumeration."""
    data, truth = wsc_data
    model = build_model(data, wh=4.0, mu_prior="flat")
    point = {v.name: np.asarray(p) for v, p in zip(model.value_vars, _values_at(model, truth))}
    pointwise, clicks, he = evaluate(model, [PREFIX + "groups", "clicks", model.logp(vars=[model["he"]], sum=False)[0]],
                                     point)
    centring = float(np.sum(data.counts @ np.log(pooled_bin_frequencies(data.counts))))
    assert pointwise.shape == (data.n_groups,)
    np.testing.assert_allclose(pointwise.sum(), clicks + centring + he.sum(), rtol=0, atol=1e-8)
    tiny = data.subset(np.arange(3))
    tiny.counts = np.array([[2.0, 0, 1, 0], [0, 1, 1, 0], [1, 0, 0, 2]])
    tiny_model = build_model(tiny, wh=4.0, mu_prior="flat")
    tiny_point = {v.name: np.asarray(p) for v, p in zip(tiny_model.value_vars, _values_at(tiny_model, truth, 3))}
    tiny_pointwise, tiny_he = evaluate(tiny_model, [PREFIX + "groups", tiny_model.logp(vars=[tiny_model["he"]],
                                                                                     sum=False)[0]], tiny_point)
    probs = np.stack([expit(-truth.mu[:3]), expit(truth.mu[:3])], axis=1)
    enumerated = [brute_force_loglik(tiny.counts[i:i + 1], probs[i:i + 1], np.stack([truth.w0, truth.w1]))
                  for i in range(3)]
    np.testing.assert_allclose(tiny_pointwise - tiny_he, enumerated, rtol=0, atol=1e-10)


def _values_at(model, truth, n=None):
    """The value variables at the truth (unconstrained)."""
    from bayes_wsc.fit import transformed_start

    start = transformed_start(model, {"mu": truth.mu[:n] if n else truth.mu, "w0": truth.w0, "w1": truth.w1})
    return [start[v.name] for v in model.value_vars]


def test_wsc_integrated_loglik_matches_quadrature(wsc_data):
    data, truth = wsc_data
    rng = np.random.default_rng(0)
    mu = truth.mu + 0.3 * rng.standard_normal((2, data.n_groups))
    w0, w1 = np.stack([truth.w0] * 2), np.stack([truth.w1] * 2)
    loc, scale = np.array([0.1, -0.2]), np.array([1.1, 0.8])
    for sigma in (np.array([0.5, 0.6]), None):
        got = integrated_group_loglik(data.counts, data.he, mu, w0, w1, loc, scale, sigma)
        for s, i in ((0, 0), (1, 33)):
            def log_integrand(m):
                clicks = data.counts[i] @ np.log(expit(-m) * w0[s] + expit(m) * w1[s])
                he = 0.0 if sigma is None else norm.logpdf(data.he[i], m, sigma[s])
                return clicks + he + norm.logpdf(m, loc[s], scale[s]) - got[s, i]
            assert quad(lambda m: np.exp(log_integrand(m)), -12, 12, points=[mu[s, i]], limit=200)[0] == \
                pytest.approx(1.0, abs=5e-4)


def test_experts_pointwise_is_the_composite_loglik(experts_data):
    data = experts_data[0]
    model = experts_model.build_model(data, n_clusters=2)
    rng = np.random.default_rng(1)
    point = {k: v + rng.normal(0, 0.5, size=np.shape(v)) for k, v in model.initial_point().items()}
    pointwise, potential, W, b, alpha, beta = evaluate(model, [PREFIX + "pairs", "constraints", "W", "b", "alpha",
                                                               "beta"], point)
    assert pointwise.shape == (data.n_pairs,)
    np.testing.assert_allclose(pointwise.sum(), potential, rtol=0, atol=1e-8)
    probs = experts_model.membership_probabilities(data.features, W, b)
    for p in (0, 5, data.n_pairs - 1):  # each pair: both clusters enumerated, all its experts' links
        cells = np.flatnonzero(data.cell_pair == p)
        i, j = data.pairs[p]
        total = 0.0
        for zi, zj in itertools.product(range(2), repeat=2):
            term = probs[i, zi] * probs[j, zj]
            for c in cells:
                a, bb, link = alpha[data.cell_expert[c]], beta[data.cell_expert[c]], data.link[c]
                term *= (a if link else 1 - a) if zi == zj else (1 - bb if link else bb)
            total += term
        assert pointwise[p] == pytest.approx(np.log(total), abs=1e-10)


def test_pcmix_pointwise_is_the_joint_loglik(pcmix_data):
    data = pcmix_data[0]
    for lam in (1.0, 4.0):
        model = pcmix_model.build_model(data, components=2, lam=lam)
        rng = np.random.default_rng(2)
        point = {k: v + rng.normal(0, 0.3, size=np.shape(v)) for k, v in model.initial_point().items()}
        pointwise, data_term, label_term, potential, pi, mean_z, sd_excess, rho = evaluate(
            model, [PREFIX + "items", "data_loglik", "label_loglik", "pc_objective", "pi", "mean_z", "sd_excess",
                    "rho"], point)
        np.testing.assert_allclose(pointwise.sum(), data_term + label_term, rtol=0, atol=1e-8)
        np.testing.assert_allclose(potential, data_term + lam * label_term, rtol=0, atol=1e-8)
        sd = 0.001 + sd_excess
        joint = np.log(pi) + norm.logpdf(data.x[:, None, :], mean_z, sd).sum(-1)  # (n, K)
        labels = np.where(data.y[:, None] == 1, np.log(rho), np.where(data.y[:, None] == 0, np.log1p(-rho), 0.0))
        np.testing.assert_allclose(pointwise, logsumexp(joint + labels, axis=1), rtol=0, atol=1e-9)


def test_hierarchical_wsc_loo_is_reliable(wsc_fits):
    """mu_i integrated out: every Pareto k below 0.7 (conditional on mu_i, most groups exceed it). The
    row's own threshold depends on the draws (0.57 at the 200 draws here), so it is not the test's."""
    row = checks.loo_rows(wsc_fits["nuts"])[0]
    assert row.check == "loo_pareto_k" and row.statistic < 0.7


def test_saved_fits_keep_the_group_and_old_fits_say_refit(wsc_fits, tmp_path):
    path = wsc_fits["nuts"].save(tmp_path / "fit.nc")
    again = load(path)
    np.testing.assert_array_equal(again.idata_.log_likelihood["groups"].values,
                                  wsc_fits["nuts"].idata_.log_likelihood["groups"].values)
    assert not again.checks_.empty
    old = load(path)
    old.idata_ = inference.Groups((name, group) for name, group in inference.groups_of(old.idata_).items()
                                  if name != "log_likelihood")
    with pytest.raises(InputError, match="no pointwise log-likelihood .*refit"):
        old.loo()


def test_a_fit_saved_before_checks_had_effect_sizes_loads(wsc_fits, tmp_path):
    """Check rows stored without `effect` and `tolerance` (fits of earlier versions) load, read as NaN."""
    est = load(wsc_fits["map"].save(tmp_path / "fit.nc"))
    idata = est._fitted()
    rows = [{k: v for k, v in row.items() if k not in ("effect", "tolerance")}
            for row in inference.get_attrs(idata)["checks"]]
    inference.set_attrs(idata, {"checks": rows})
    inference.save(idata, tmp_path / "old.nc")
    old = load(tmp_path / "old.nc")
    assert list(old.checks_["check"]) == list(est.checks_["check"]) and old.checks_["effect"].isna().all()


# ---------------------------------------------------------------------- posterior predictive


def test_ppc_recovers_the_generating_statistics(wsc_data, wsc_fits, experts_data, experts_fits, pcmix_data,
                                                pcmix_fits):
    data, truth = wsc_data
    p = expit(truth.mu)[:, None]
    expected = (data.n_items[:, None] * ((1 - p) * truth.w0 + p * truth.w1)).sum(0) / data.n_items.sum()
    replicated = wsc_fits["nuts"].posterior_predictive().posterior_predictive["bin_share"].mean(("chain", "draw"))
    np.testing.assert_allclose(replicated, expected, atol=0.03)
    pairs, truth_e = experts_data[0], experts_data[3]
    same = truth_e.labels[pairs.pairs[pairs.cell_pair, 0]] == truth_e.labels[pairs.pairs[pairs.cell_pair, 1]]
    p_link = np.where(same, truth_e.alpha[pairs.cell_expert], 1 - truth_e.beta[pairs.cell_expert])
    expected = np.bincount(pairs.cell_expert, weights=p_link) / np.bincount(pairs.cell_expert)
    replicated = experts_fits["nuts"].posterior_predictive().posterior_predictive["link_rate"].mean(("chain", "draw"))
    np.testing.assert_allclose(replicated, expected, atol=0.08)
    items, z = pcmix_data
    expected = 0.4 * np.array([2.0, -1.0]) + 0.6 * np.array([-1.0, 0.5])
    replicated = pcmix_fits["nuts"].posterior_predictive().posterior_predictive["feature_mean"].mean(("chain", "draw"))
    np.testing.assert_allclose(replicated, expected, atol=0.25)


# ---------------------------------------------------------------------- checks


def test_a_flagged_check_is_a_fit_warning():
    """HE eight times noisier than WH says: mu follows HE, and the bin counts vary around the fitted
    mixture more than the multinomial allows (the aggregation-bias check's dispersion, 2.9 > 2.5)."""
    data, _ = simulate_wsc(n_groups=40, items_per_group=100, n_bins=4, sigma_h=2.0, seed=4)
    with pytest.warns(FitWarning, match=r"check aggregation_bias flagged"):
        est = WSC(wh=16.0).fit(data)
    assert any(m.startswith("check aggregation_bias flagged") for m in est.diagnostics_)
    row = est.checks_.set_index("check").loc["aggregation_bias"]
    assert row["flagged"] and row["effect"] > row["tolerance"] == 2.5
    assert not WSC(wh=16.0, checks=False).fit(data).checks_.shape[0]


def test_class_feature_means_flag_a_skewed_feature():
    """`ppc_class_feature_mean` against the misfit of benchmarks/check_power.py (a feature exp(2 x), two
    Gaussian components): the labeled classes' means are far beyond their replicates (effect about 8
    against the tolerance 2); on data from the model it never flagged (0 of 8 there)."""
    rng = np.random.default_rng(0)
    n = 300
    z = (rng.random(n) < 0.4).astype(int)
    means, sds = np.array([[-0.9, 0.6, 0.0], [0.6, -0.4, 0.5]]), np.array([[1.0, 0.7, 1.2], [0.8, 1.0, 0.9]])
    x = means[z] + sds[z] * rng.standard_normal((n, 3))
    x[:, 2] = np.exp(2 * x[:, 2])
    y = np.where(rng.random(n) < 0.5, (rng.random(n) < np.where(z, 0.85, 0.15)).astype(int), -1)
    frame = pd.DataFrame(x, columns=["x1", "x2", "x3"])
    frame["y"] = pd.array(np.where(y >= 0, y, 0), dtype="Int64")
    frame.loc[y < 0, "y"] = pd.NA
    est = quietly(PCMixture(components=2, lam=1.0, restarts=2), LabeledItems.from_frame(frame, label_col="y",
                                                                                        classes=[0, 1]))
    row = est.checks_.set_index("check").loc["ppc_class_feature_mean"]
    assert row["flagged"] and row["effect"] > 2 * row["tolerance"], row


def test_targeted_checks_catch_an_adversarial_expert_and_a_skewed_feature(experts_data):
    data, items, constraints, _ = experts_data
    turned = constraints.copy()
    first = turned["expert"] == turned["expert"].iloc[0]
    turned.loc[first, "link"] = 1 - turned.loc[first, "link"]
    est = quietly(NoisyExperts(n_clusters=2, restarts=4, seed=1), PairwiseConstraints.from_frames(items, turned))
    row = est.checks_.set_index("check").loc["expert_agreement"]
    assert row["flagged"] and str(turned["expert"].iloc[0]) in row["message"]
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.normal(size=400), "b": rng.exponential(size=400) ** 2,
                          "y": pd.array(np.where(rng.random(400) < 0.5, rng.integers(0, 2, 400), -1), dtype="Int64")})
    frame.loc[frame["y"] == -1, "y"] = pd.NA
    est = quietly(PCMixture(components=1, restarts=1, seed=0), LabeledItems.from_frame(frame, label_col="y"))
    row = est.checks_.set_index("check").loc["feature_marginal"]
    assert row["flagged"] and "feature b" in row["message"]


def test_aggregation_check_is_wired_and_its_refits_do_not_check(wsc_data, wsc_fits):
    """The first model's targeted check through a stand-in with its signature."""
    data, _ = wsc_data
    calls = []

    def stand_in(data, settings, *, model, seed=0, map_point=None):
        assert model is WSC
        refit = model(method="map", seed=seed, **settings).fit(data)  # the real check refits without a map_point
        calls.append((settings, refit.checks_.shape[0], checks.running(), sorted(map_point)))
        return {"check": "aggregation_bias", "statistic": 0.2, "reference": 0.1, "p_value": 0.001, "flagged": True,
                "message": "behavior depends on the group beyond the class"}

    rows = checks.run(wsc_fits["map"], data, draws=50,
                      targeted=[lambda e, d, seed: aggregation_rows(e, d, seed, check=stand_in)])
    assert calls == [({"wh": 4.0, "mu_prior": "hierarchical", "w_concentration": 1.0}, 0, True,
                      ["mu", "mu_scale", "w0", "w1"])]
    assert rows[-1].check == "aggregation_bias" and rows[-1].flagged
    # a NUTS fit hands the check the MAP it started from, so the check needs no refit
    nuts_point, map_point = wsc_fits["nuts"].map_point_, wsc_fits["map"].map_point_
    for name in ("mu", "w0", "w1", "mu_scale"):
        np.testing.assert_allclose(nuts_point[name], map_point[name], rtol=1e-6)
    assert checks.flagged_messages(rows) == ["check aggregation_bias flagged: behavior depends on the group beyond "
                                             "the class"]


def test_a_saved_nuts_fit_keeps_the_map_it_started_from(wsc_data, wsc_fits, tmp_path, monkeypatch):
    """The file of a NUTS fit holds the MAP the fit started from (`fit_files.MODE_GROUP`), so that the
    aggregation check of the loaded fit refits nothing and gives the in-process fit's row; a file written
    before it was kept (no such group) leaves the check to refit the MAP, as it did then."""
    from bayes_wsc import fit_files
    from bayes_wsc.checks import aggregation

    data, _ = wsc_data
    est = wsc_fits["nuts"]
    path = est.save(tmp_path / "nuts.nc")
    loaded = load(path)
    assert fit_files.MODE_GROUP not in inference.group_names(loaded._fitted())  # beside the fit, not in it
    for name, value in est.map_point_.items():
        np.testing.assert_array_equal(loaded.map_point_[name], value)
    before = aggregation_rows(est, data, 0)
    with monkeypatch.context() as patched:
        patched.setattr(aggregation, "_map_point", lambda *a: pytest.fail("the check fitted a MAP"))
        assert aggregation_rows(loaded, data, 0) == before
    from bayes_wsc.models.wsc.checks import map_point

    old = inference.Groups((g, ds) for g, ds in inference.load(path).items() if g != fit_files.MODE_GROUP)
    refitted = WSC.from_idata(old)
    assert refitted.map_point_ is None and map_point(refitted, data) is None  # the check refits, as it did


# ---------------------------------------------------------------------- command line


def test_cluster_labels_do_not_overlap():
    """Three clusters on one point: their labels are moved apart, none hides another."""
    from matplotlib.text import Text

    from bayes_wsc.report.pcmix import Mixture, plot_mixture

    rng = np.random.default_rng(0)
    data = LabeledItems(rng.normal(size=(200, 2)), np.where(rng.random(200) < 0.3, rng.integers(0, 2, 200), -1),
                        ("a", "b"), ("0", "1"), np.zeros(2), np.ones(2), np.arange(200).astype(str))
    mixture = Mixture(np.array([0.3, 0.3, 0.4]), np.array([[0.0, 0.0], [0.01, 0.02], [0.02, -0.01]]), np.ones((3, 2)),
                      np.array([[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]]))
    fig = plot_mixture(data, mixture)
    fig.canvas.draw()
    boxes = [Text.get_window_extent(t, fig.canvas.get_renderer()) for t in fig.axes[0].texts]
    assert len(boxes) == 3
    assert not any(a.overlaps(b) for a, b in itertools.combinations(boxes, 2))
