"""The combined model: its likelihood against brute-force enumeration of every item's class, the fit with
one source against the package's (or scikit-learn's) model for that source, parameter recovery, bad input,
and (slow) simulation-based calibration."""

from __future__ import annotations

import itertools
import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy.special import log_softmax, logsumexp
from scipy.stats import norm

from bayes_wsc.cli import main
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.models.combined.data import CombinedSupervision
from bayes_wsc.models.combined.simulate import data_from_tables, simulate_combined


# ---------------------------------------------------------------------- tiny data, every source
def tiny_tables(k: int, rng) -> dict:
    """7 items: labels on two, votes from two sources (with abstentions), one bag of three items (one of them
    labelled and voted on), two pairs on items in no other pair and no bag, two groups (two classes only)."""
    ids = [f"i{j}" for j in range(7)]
    classes = [f"c{c}" for c in range(k)]
    items = pd.DataFrame({"id": ids, "x1": rng.normal(size=7), "x2": rng.normal(size=7),
                          "label": [classes[1], None, None, classes[0], None, None, None],
                          "bag": ["b1", "b1", "b1", None, None, None, None]})
    votes = pd.DataFrame({"item": ["i0", "i1", "i1", "i2", "i3", "i4", "i5"],
                          "source": ["s1", "s1", "s2", "s2", "s1", "s2", "s1"],
                          "vote": [classes[1], classes[0], classes[k - 1], None, classes[0], classes[1], classes[0]]})
    pairs = pd.DataFrame({"expert": ["e1", "e2", "e1"], "i": ["i3", "i3", "i5"], "j": ["i4", "i4", "i6"],
                          "link": [1, 0, 1]})
    counts = {classes[0]: 1, classes[1]: 2, **({classes[2]: 0} if k == 3 else {})}
    bags = pd.DataFrame({"bag": ["b1"], **{c: [v] for c, v in counts.items()}})
    tables = {"items": items, "votes": votes, "pairs": pairs, "bags": bags}
    if k == 2:
        tables["items"] = items.assign(group=["g1", "g1", "g2", "g2", "g2", None, "g1"])
        tables["groups"] = pd.DataFrame({"group": ["g1", "g2"], "he": [0.3, -0.8]})
    return tables


SOURCE_SETS = [("labels",), ("votes",), ("bags",), ("pairs",), ("groups",), ("labels", "bags"),
               ("votes", "bags"), ("labels", "votes", "pairs"), ("labels", "votes", "pairs", "bags", "groups")]


def subset(tables: dict, sources) -> CombinedSupervision:
    items = tables["items"].copy()
    if "labels" not in sources:
        items["label"] = None
    if "bags" not in sources:
        items = items.drop(columns="bag")
    if "groups" not in sources and "group" in items:
        items = items.drop(columns="group")
    return CombinedSupervision.from_frames(
        items, votes=tables["votes"] if "votes" in sources else None,
        pairs=tables["pairs"] if "pairs" in sources else None, bags=tables["bags"] if "bags" in sources else None,
        groups=tables.get("groups") if "groups" in sources else None,
        classes=sorted(tables["bags"].columns[1:]))


def random_point(data, rng) -> dict:
    k, d = data.n_classes, data.n_features
    point = {"W_raw": rng.normal(size=(d, k)), "b_raw": rng.normal(size=k)}
    if data.cast.any():
        point["confusion"] = rng.dirichlet(np.ones(k) * 2, size=(data.n_sources, k))
    if data.n_pairs:
        point["alpha_raw"], point["beta_raw"] = rng.uniform(0.1, 0.9, data.n_experts), rng.uniform(0.1, 0.9, data.n_experts)
    return point


def brute_force(data, point, wh) -> float:
    """log sum over every assignment z of all items' classes of p(z | x) p(every source | z), the groups'
    term added (it depends on the parameters alone)."""
    log_q = log_softmax(data.features @ point["W_raw"] + point["b_raw"], axis=-1)
    alpha = 0.5 + 0.5 * point.get("alpha_raw", np.zeros(0))
    beta = 0.5 + 0.5 * point.get("beta_raw", np.zeros(0))
    total = []
    for z in itertools.product(range(data.n_classes), repeat=data.n_items):
        z = np.array(z)
        lp = log_q[np.arange(data.n_items), z].sum()
        labelled = data.label >= 0
        if (z[labelled] != data.label[labelled]).any():
            continue
        for j, s, v in zip(data.vote_item, data.vote_source, data.vote):
            if v >= 0:
                lp += np.log(point["confusion"][s, z[j], v])
        for g in range(data.n_bags):
            if not np.array_equal(np.bincount(z[data.item_bag == g], minlength=data.n_classes), data.bag_counts[g]):
                lp = -np.inf
        for (a, b), e, link in zip(data.pairs[data.cell_pair], data.cell_expert, data.link):
            p = alpha[e] if z[a] == z[b] else 1 - beta[e]
            lp += np.log(p if link else 1 - p)
        total.append(lp)
    out = logsumexp(total)
    for g in range(data.n_groups):
        share = np.exp(log_q[data.item_group == g, 1]).mean()
        out += norm.logpdf(data.group_he[g], np.log(share / (1 - share)), 1 / np.sqrt(wh))
    return float(out)


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("sources", SOURCE_SETS, ids="+".join)
def test_the_likelihood_is_the_sum_over_every_items_class(k, sources):
    """The recorded units (the PyMC graph) and the NumPy formula both sum to the brute-force marginal: exact
    here, where every pair's items are in no other pair and no bag."""
    if k == 3 and "groups" in sources:
        pytest.skip("group averages are of a binary class")
    from bayes_wsc.inference import LOG_LIKELIHOOD_PREFIX
    from bayes_wsc.model_terms import evaluate
    from bayes_wsc.models.combined.model import build_model, unit_log_likelihood, unit_slots

    rng = np.random.default_rng(k)
    data = subset(tiny_tables(k, rng), sources)
    assert data.present_sources() == [s for s in ("labels", "votes", "pairs", "bags", "groups") if s in sources]
    model = build_model(data, wh=4.0)
    point = random_point(data, rng)
    [slots] = evaluate(model, [model[LOG_LIKELIHOOD_PREFIX + "units"]], {n: v[None] for n, v in point.items()})
    real = unit_slots(data)
    assert (slots[:, ~real] == 0).all()  # padding adds exactly nothing
    units = slots[:, real]
    expected = brute_force(data, point, 4.0)
    np.testing.assert_allclose(units.sum(), expected, rtol=1e-8)
    params = {"W": (point["W_raw"] - point["W_raw"].mean(axis=1, keepdims=True)).T[None],
              "b": (point["b_raw"] - point["b_raw"].mean())[None]}
    if "confusion" in point:
        params["confusion"] = point["confusion"][None]
    if "alpha_raw" in point:
        params.update(alpha=(0.5 + 0.5 * point["alpha_raw"])[None], beta=(0.5 + 0.5 * point["beta_raw"])[None])
    np.testing.assert_allclose(unit_log_likelihood(data, params, wh=4.0), units, rtol=1e-8)


def test_padding_the_units_to_slots_leaves_every_unit_as_it_was(monkeypatch):
    """The graph with items and pairs in bucketed slots records, on its real slots, the units of the graph
    without padding, at the same point; and draws of the same design with a few more or fewer evidence items
    get the same shapes (one compiled program)."""
    from bayes_wsc.inference import LOG_LIKELIHOOD_PREFIX
    from bayes_wsc.model_terms import evaluate
    from bayes_wsc.models.combined import model as combined
    from bayes_wsc.models.combined.model import build_model, model_coords, model_data, unit_slots

    rng = np.random.default_rng(5)
    data = subset(tiny_tables(2, rng), ("labels", "votes", "pairs", "bags", "groups"))
    point = {n: v[None] for n, v in random_point(data, rng).items()}

    def units(model):
        return evaluate(model, [model[LOG_LIKELIHOOD_PREFIX + "units"]], point)[0]

    padded = units(build_model(data, wh=4.0))[:, unit_slots(data)]
    with monkeypatch.context() as patch:
        patch.setattr(combined, "slots", lambda n: int(n))
        assert unit_slots(data).all()
        np.testing.assert_allclose(padded, units(build_model(data, wh=4.0)), rtol=1e-12)

    def structure(seed):
        tables, _, _ = simulate_combined(120, 2, 2, seed=seed, n_groups=2, vote_rate=0.1)
        data = data_from_tables(tables)
        return (repr(sorted({k: len(v) for k, v in model_coords(data).items()}.items()))
                + repr(sorted({k: np.shape(v) for k, v in model_data(data).items()}.items())),
                combined.item_units(data).size)

    shapes = [structure(seed) for seed in range(6)]
    assert len({n for _, n in shapes}) >= 3  # the number of evidence items moves between draws
    assert max(Counter(s for s, _ in shapes).values()) >= 4  # and most draws share one structure


def test_a_labelled_items_class_is_known_inside_its_bag():
    """With the labelled bag member's label, its bag's count leaves one way to fill the rest: the unit moves."""
    from bayes_wsc.models.combined.model import unit_log_likelihood

    rng = np.random.default_rng(0)
    tables = tiny_tables(2, rng)
    with_label, without = subset(tables, ("labels", "bags")), subset(tables, ("bags",))
    params = {"W": rng.normal(size=(1, 2, 2)), "b": rng.normal(size=(1, 2))}
    assert not np.isclose(unit_log_likelihood(with_label, params)[0, -1], unit_log_likelihood(without, params)[0, -1])


# ---------------------------------------------------------------------- one source: the package's model for it
def fit_quietly(est, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return est.fit(data)


def test_labels_alone_is_a_penalized_logistic_regression():
    """Hand labels only: the MAP is scikit-learn's multinomial logistic regression with C = 1 (the N(0, 1)
    prior on every class's weights) and an intercept left nearly free."""
    from sklearn.linear_model import LogisticRegression

    from bayes_wsc.models.combined.model import CombinedClassifier

    tables, _, truth = simulate_combined(80, 3, 3, seed=3, n_labels=80, accuracy=(), alpha=(), n_bags=0)
    data = data_from_tables(tables)
    assert data.present_sources() == ["labels"]
    est = fit_quietly(CombinedClassifier(intercept_sd=1e3, checks=False), data)
    reference = LogisticRegression(C=1.0, tol=1e-10, max_iter=10_000).fit(data.features, data.classes[data.label])
    items = tables["items"][["x1", "x2", "x3"]]
    ours = est.predict(items)[[f"prob_{c}" for c in data.classes]].to_numpy()
    np.testing.assert_allclose(ours, reference.predict_proba(data.features), atol=2e-3)


def test_bags_alone_is_the_proportions_models_exact_counts_fit():
    from bayes_wsc.data.proportions import LabelProportions
    from bayes_wsc.models.combined.model import CombinedClassifier
    from bayes_wsc.models.proportions import ProportionsClassifier

    tables, _, _ = simulate_combined(48, 2, 2, seed=5, n_labels=0, accuracy=(), alpha=(), n_bags=8)
    data = data_from_tables(tables)
    assert data.present_sources() == ["bags"]
    ours = fit_quietly(CombinedClassifier(checks=False, restarts=4), data)
    items = tables["items"]
    inside = items[items["bag"].notna()]
    counts = tables["bags"].set_index("bag")
    proportions = counts.div(counts.sum(axis=1), axis=0).reset_index().rename(columns={"bag": "group"})
    theirs_data = LabelProportions.from_frames(inside.drop(columns=["id"]).rename(columns={"bag": "group"}),
                                               proportions, group_col="group", features=["x1", "x2"])
    theirs = fit_quietly(ProportionsClassifier(emission="logistic", bag_likelihood="exact-counts", checks=False),
                         theirs_data)
    new = items[["x1", "x2"]]
    np.testing.assert_allclose(ours.predict(new)[["prob_c0", "prob_c1"]].to_numpy(),
                               theirs.predict(new)[["prob_c0", "prob_c1"]].to_numpy(), atol=5e-3)


# ---------------------------------------------------------------------- recovery
def test_parameters_are_recovered_from_data_simulated_from_the_model():
    from bayes_wsc.models.combined.model import CombinedClassifier

    tables, truth, classes = simulate_combined(400, 2, 2, seed=11, n_labels=20, accuracy=(0.9, 0.75, 0.6),
                                               vote_rate=0.5, pairs_per_expert=150, n_bags=10, n_groups=10)
    data = data_from_tables(tables)
    est = fit_quietly(CombinedClassifier(checks=False), data)
    post = est.idata_.posterior
    np.testing.assert_allclose(post["accuracy"].values.ravel(), truth.accuracy, atol=0.08)
    np.testing.assert_allclose(post["alpha"].values.ravel(), truth.alpha, atol=0.12)
    true_w = truth.W * data.scaling.scale  # the truth's weights per standardized feature, zero-sum over classes
    assert np.corrcoef(post["W"].values[0, 0].ravel(), true_w.ravel())[0, 1] > 0.95
    predicted = est.predict(tables["items"][["x1", "x2"]])["class"].to_numpy()
    assert (predicted == classes).mean() > 0.85


# ---------------------------------------------------------------------- bad input
BAD = [
    (lambda t: {**t, "votes": t["votes"].assign(vote=["zz"] + list(t["votes"]["vote"][1:]))},
     {"classes": ["c0", "c1"]}, "class 'zz'"),
    (lambda t: {**t, "bags": t["bags"].assign(c0=[1.5], c1=[1.5])}, {}, "bags row 1: bag 'b1'"),
    (lambda t: {**t, "votes": pd.concat([t["votes"], t["votes"].iloc[:1]])}, {}, "votes on item 'i0' twice"),
    (lambda t: {k: v for k, v in t.items() if k != "bags"}, {}, "no bags table"),
    (lambda t: {**t, "groups": t["groups"].assign(he=["x", "1"])}, {}, "groups column 'he'"),
    (lambda t: {**t, "pairs": t["pairs"].assign(link=[1, 2, 0])}, {}, "link"),
    (lambda t: {**t, "votes": t["votes"].assign(item=["nobody"] + list(t["votes"]["item"][1:]))}, {}, "'nobody'"),
]


@pytest.mark.parametrize("change, kwargs, message", BAD)
def test_bad_input_is_one_line_naming_it(change, kwargs, message):
    tables = change(tiny_tables(2, np.random.default_rng(0)))
    with pytest.raises(InputError, match=message) as info:
        CombinedSupervision.from_frames(tables["items"], votes=tables.get("votes"), pairs=tables.get("pairs"),
                                        bags=tables.get("bags"), groups=tables.get("groups"), **kwargs)
    assert "\n" not in str(info.value)


def test_no_supervision_and_averages_of_three_classes_are_refused():
    tables = tiny_tables(3, np.random.default_rng(0))
    with pytest.raises(InputError, match="no supervision"):
        CombinedSupervision.from_frames(tables["items"][["id", "x1", "x2"]], classes=["a", "b"])
    with pytest.raises(InputError, match="binary class"):
        CombinedSupervision.from_frames(tables["items"].assign(group="g1"), bags=tables["bags"],
                                        groups=pd.DataFrame({"group": ["g1"], "he": [0.0]}))


def test_the_command_line_refuses_bad_input_with_exit_code_2(tmp_path, capsys):
    tables = tiny_tables(2, np.random.default_rng(0))
    tables["items"].to_csv(tmp_path / "items.csv", index=False)
    tables["votes"].to_csv(tmp_path / "votes.csv", index=False)
    try:
        code = main(["fit", "combined", "--items", str(tmp_path / "items.csv"), "--votes", str(tmp_path / "votes.csv"),
                     "--out", str(tmp_path / "fit.nc")])
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and "no bags table" in err and "Traceback" not in err and not (tmp_path / "fit.nc").exists()


# ---------------------------------------------------------------------- calibration
@pytest.mark.slow
def test_sbc_ranks_are_uniform():
    from bayes_wsc.models.combined.simulate import sbc_case
    from bayes_wsc.sbc import run_sbc

    case = sbc_case(draws=400, tune=400, chains=2)
    result = run_sbc(case, 60, seed=7)
    table = result.uniformity()
    failed = table.loc[~table["passes"], ["quantity", "chi2", "p_value"]]
    assert failed.empty, failed.to_string()


# ---------------------------------------------------------------------- the conflict check
def test_each_source_can_be_held_out():
    from bayes_wsc.models.combined.checks import held_out_sources

    data = subset(tiny_tables(2, np.random.default_rng(0)), ("labels", "votes", "pairs", "bags", "groups"))
    sources = held_out_sources(data)
    assert sources == ["labels", "votes:s1", "votes:s2", "pairs:e1", "pairs:e2", "bags", "groups"]
    assert "labels" not in data.without("labels").present_sources()
    assert set(data.without("votes:s1").source_names[data.without("votes:s1").vote_source]) == {"s2"}
    assert set(data.without("pairs:e2").cell_expert) == {0}
    assert data.without("bags").n_bags == 0 and data.without("groups").n_groups == 0
    with pytest.raises(InputError, match="no source 'nope'"):
        data.without("nope")


@pytest.mark.parametrize("k", [2, 3])
def test_held_out_bags_are_scored_by_the_exact_probability_of_their_counts(k):
    """The bags' surprise is -log of the brute-force probability of their counts given the items' classes r,
    and its replicates average the entropy of the counts (their expected surprise)."""
    from bayes_wsc.models.combined.checks import bag_surprise

    rng = np.random.default_rng(k)
    data = subset(tiny_tables(k, rng), ("bags",))
    r = rng.dirichlet(np.ones(k), size=data.n_items)
    rows = np.flatnonzero(data.item_bag == 0)

    def probability(counts) -> float:
        return sum(np.prod(r[rows, z]) for z in itertools.product(range(k), repeat=rows.size)
                   if np.array_equal(np.bincount(z, minlength=k), counts))

    observed, replicated = bag_surprise(data, r, np.random.default_rng(0), 4000)
    np.testing.assert_allclose(observed, -np.log(probability(data.bag_counts[0])), rtol=1e-10)
    table = [probability(c) for c in itertools.product(range(rows.size + 1), repeat=k) if sum(c) == rows.size]
    entropy = -sum(p * np.log(p) for p in table if p > 0)
    assert abs(replicated.mean() - entropy) < 4 * replicated.std() / np.sqrt(replicated.size)


def test_held_out_bags_are_scored_under_the_predictive_averaged_over_the_rests_draws():
    """With draws r_s of the items' classes, a bag's predictive probability of its counts is the mean over the
    draws of the exact probability given r_s (brute force), not the probability under the mean r."""
    from bayes_wsc.models.combined.checks import bag_surprise

    rng = np.random.default_rng(3)
    data = subset(tiny_tables(2, rng), ("bags",))
    rows = np.flatnonzero(data.item_bag == 0)
    r = rng.dirichlet(np.ones(2), size=(2, data.n_items))  # two draws

    def probability(r_s, counts) -> float:
        return sum(np.prod(r_s[rows, z]) for z in itertools.product(range(2), repeat=rows.size)
                   if np.array_equal(np.bincount(z, minlength=2), counts))

    observed, replicated = bag_surprise(data, r, np.random.default_rng(0), 2000)
    mixture = np.mean([probability(r_s, data.bag_counts[0]) for r_s in r])
    np.testing.assert_allclose(observed, -np.log(mixture), rtol=1e-10)
    assert abs(observed + np.log(probability(r.mean(axis=0), data.bag_counts[0]))) > 1e-3  # not the plug-in
    table = [np.mean([probability(r_s, (rows.size - c, c)) for r_s in r]) for c in range(rows.size + 1)]
    entropy = -sum(p * np.log(p) for p in table if p > 0)
    assert abs(replicated.mean() - entropy) < 4 * replicated.std() / np.sqrt(replicated.size)


def rest_draws(W, b):
    """A stand-in for the rest's fit: draws of the class model (S, K, D), (S, K) as a posterior of one chain."""
    import xarray as xr

    posterior = xr.Dataset({"W": (("chain", "draw", "class", "feature"), np.asarray(W)[None]),
                            "b": (("chain", "draw", "class"), np.asarray(b)[None])})
    return type("RestFit", (), {"idata_": type("Idata", (), {"posterior": posterior}), "wh": 10.0})


def test_the_groups_are_scored_against_a_predictive_that_carries_the_rests_uncertainty():
    """Averages far from the class model's shares at its centre flag against the plug-in predictive (one draw)
    and not against draws of the class model spread around that centre, whose shares' spread covers them;
    with one draw the replicates are the plug-in's exactly."""
    from bayes_wsc.models.combined.checks import score_source

    tables = tiny_tables(2, np.random.default_rng(0))
    tables["groups"] = tables["groups"].assign(he=[1.2, -1.2])  # 3.8 sd of the averages' noise (1 / sqrt(10)) from 0
    data = subset(tables, ("groups",))
    centre_W, centre_b = np.array([[0.0, 0.0], [0.0, 0.0]]), np.zeros(2)  # every share 1/2, logit 0
    spread = np.random.default_rng(1).normal(0, 1.0, (400, 2, 3))  # draws of W and b around the centre
    plug_in = score_source("groups", data, rest_draws(centre_W[None], centre_b[None]), data,
                           np.random.default_rng(0))
    carried = score_source("groups", data, rest_draws(centre_W + spread[..., :2], centre_b + spread[..., 2]), data,
                           np.random.default_rng(0))
    assert plug_in[0] < 0.01 and plug_in[1] > 5
    assert carried[0] > 0.05 and carried[1] < plug_in[1] / 2


def test_a_source_near_chance_is_named_as_uninformative_never_as_a_conflict():
    from bayes_wsc.criticism import ALPHA
    from bayes_wsc.models.combined.checks import source_information

    rows = [("votes:a1", 0.001, 0.999, 0.2), ("pairs:e1", 0.4, 0.6, 0.01), ("votes:a2", 0.999, 0.0001, -0.3)]
    [row] = source_information(rows)
    assert not row.flagged and row.check == "source_information"
    assert "pairs:e1 (" in row.message and "votes:a1" not in row.message and "votes:a2" not in row.message
    assert row.message.startswith("Near chance")
    [row] = source_information([rows[0], ("pairs:e1", ALPHA / 2, 1 - ALPHA / 2, 0.04)])
    assert not row.flagged and not row.message.startswith("Near chance")
    assert source_information([]) == []


@pytest.mark.slow
def test_the_conflict_check_names_an_adversarial_annotator_and_passes_honest_sources():
    from bayes_wsc.models.combined.checks import source_conflict
    from bayes_wsc.models.combined.model import CombinedClassifier

    tables, _, _ = simulate_combined(200, 2, 2, seed=1, n_groups=4)
    honest = data_from_tables(tables)
    votes = tables["votes"].copy()
    rows = (votes["source"] == "annotator1") & votes["vote"].notna()
    votes.loc[rows, "vote"] = votes.loc[rows, "vote"].map({"c0": "c1", "c1": "c0"})
    flipped = data_from_tables({**tables, "votes": votes})
    for data, flags in ((honest, False), (flipped, True)):
        est = fit_quietly(CombinedClassifier(checks=False, conflict_check=True), data)
        row, information = source_conflict(est, data)
        assert information.check == "source_information" and not information.flagged
        assert row.flagged == flags, row.message
        assert ("Source votes:annotator1 contradicts" in row.message) == flags


def weighted_pairs_case():
    """Simulated data whose pairs share items, a random point, and its parameters as `unit_log_likelihood`
    takes them."""
    from bayes_wsc.models.combined.model import unit_names

    rng = np.random.default_rng(3)
    tables, _, _ = simulate_combined(40, 2, 2, seed=3, n_groups=2, pairs_per_expert=15)
    data = data_from_tables(tables)
    point = {n: v[None] for n, v in random_point(data, rng).items()}
    params = {"W": (point["W_raw"] - point["W_raw"].mean(axis=2, keepdims=True)).transpose(0, 2, 1),
              "b": point["b_raw"] - point["b_raw"].mean(axis=1, keepdims=True),
              "confusion": point["confusion"], "alpha": 0.5 + 0.5 * point["alpha_raw"],
              "beta": 0.5 + 0.5 * point["beta_raw"]}
    return data, point, params, np.array([name.startswith("pair") for name in unit_names(data)])


def test_the_pairs_item_weights_scale_each_pairs_term():
    """With `pair_weighting` a pair's unit is its unweighted unit times (1/n_i + 1/n_j) / 2, n_i the pairs item
    i is in (below 1 where pairs share an item); every other unit unchanged (NumPy; the graph: the slow test
    below)."""
    from bayes_wsc.models.combined.model import pair_weights, unit_log_likelihood

    data, _, params, is_pair = weighted_pairs_case()
    weights = pair_weights(data, True)
    per_item = np.bincount(data.pairs.ravel(), minlength=data.n_items)
    for p, (i, j) in enumerate(data.pairs):
        assert weights[p] == pytest.approx((1 / per_item[i] + 1 / per_item[j]) / 2)
    assert (weights < 1).any() and (pair_weights(data, False) == 1).all()
    plain = unit_log_likelihood(data, params, wh=4.0)
    weighted = unit_log_likelihood(data, params, wh=4.0, pair_weighting=True)
    np.testing.assert_allclose(weighted[:, is_pair], plain[:, is_pair] * weights, rtol=1e-12)
    np.testing.assert_allclose(weighted[:, ~is_pair], plain[:, ~is_pair], rtol=1e-12)


@pytest.mark.slow
def test_the_graphs_weighted_pairs_are_the_numpy_formulas():
    """The PyMC graph with `pair_weighting` records the NumPy formula's weighted units (~6 s: two compiles)."""
    from bayes_wsc.inference import LOG_LIKELIHOOD_PREFIX
    from bayes_wsc.model_terms import evaluate
    from bayes_wsc.models.combined.model import build_model, unit_log_likelihood, unit_slots

    data, point, params, _ = weighted_pairs_case()
    for weighting in (False, True):
        model = build_model(data, wh=4.0, pair_weighting=weighting)
        units = evaluate(model, [model[LOG_LIKELIHOOD_PREFIX + "units"]], point)[0][:, unit_slots(data)]
        np.testing.assert_allclose(unit_log_likelihood(data, params, wh=4.0, pair_weighting=weighting), units,
                                   rtol=1e-8)
