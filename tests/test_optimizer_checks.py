"""Every optimizer result is checked, not trusted (issues 25 and 26): a MAP that stalls or stops with a
gradient that is not small says so, a WH beyond what the optimizer resolves is fitted as its limit,
data that cannot identify the estimand are said before the fit, and a degenerate mode is named (and
NUTS does not start there unsaid)."""

import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_wsc import diagnostics, inference
from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.draws import Draws
from bayes_wsc.errors import FitWarning
from bayes_wsc.estimator import nondegenerate_start
from bayes_wsc.map_program import minimize
from bayes_wsc.simulate import simulate_wsc

SHRUNK_MEANS = '''"""PC mixture whose component means are shrunk towards 0 by a learned scale tau (centred)."""
import pymc as pm

from bayes_wsc.models.pcmix import (add_component_sds, add_estimands, add_label_probabilities,
                                    add_mixture_weights, add_pc_objective, model_coords, priors_from)


def build_model(data, *, components=2, lam=1.0, sd_floor=0.001, mean_prior_sd=3.0, sd_prior_rate=1.0,
                concentration=1.01):
    priors = priors_from(sd_floor, mean_prior_sd, sd_prior_rate, concentration)
    with pm.Model(coords=model_coords(data, components)) as model:
        pi = add_mixture_weights(priors)
        tau = pm.HalfNormal("tau", 1.0)
        mean_z = pm.Normal("mean_z", 0.0, tau, dims=("component", "feature"))
        sd_z = add_component_sds(priors)
        add_pc_objective(data, pi, mean_z, sd_z, add_label_probabilities(data.n_classes, priors), lam)
        add_estimands(data, mean_z, sd_z)
    return model


def initial_values(data, estimator):
    return estimator.initial_values(data)
'''


def fit_quietly(est, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return est.fit(data)


def map_info(est) -> dict:
    return inference.get_attrs(est._fitted())["fit_info"]["map"]


@pytest.fixture(scope="module")
def small_wsc():
    return simulate_wsc(n_groups=40, items_per_group=20, n_bins=4, seed=1)[0]


# ---------------------------------------------------------------------- rule 1: the optimizer's stop is checked
def test_a_map_stopped_short_of_its_mode_says_so(small_wsc):
    """WH = 1e10 in the model itself: L-BFGS 'converges' with rho near 0.5 (WH = inf gives 0.13 to 0.82);
    the gradient there is far from small, so the fit says so instead of 'no problems found'."""
    from bayes_wsc.fit import fit_map
    from bayes_wsc.models.wsc import build_model

    draws, _ = fit_map(build_model(small_wsc, wh=1e10), {"mu": small_wsc.he}, fixed={"mu_scale": 1.0})
    assert draws.info["converged"]  # what the optimizer claims
    assert draws.info["relative_gradient"] > diagnostics.RELATIVE_GRADIENT_MAX
    messages = diagnostics.map_messages(draws.info)
    assert len(messages) == 1 and "gradient" in messages[0] and "not small" in messages[0]


def test_a_stall_at_the_start_is_named():
    info = {"converged": True, "iterations": 1, "start_gain": 1e-9, "tolerance_nats": 1e-7,
            "relative_gradient": 0.02, "optimizer_message": "CONVERGENCE: RELATIVE REDUCTION OF F <= FACTR*EPSMCH"}
    [message] = diagnostics.map_messages(info)
    assert "stalled at its start" in message and "1 iteration" in message
    # a start already at a mode gains nothing too, but its gradient is small: no alarm
    assert diagnostics.map_messages({**info, "relative_gradient": 1e-6}) == []


def test_the_abnormal_stop_gives_its_reason_in_words():
    """A gradient that disagrees with the values (here its sign) makes L-BFGS-B's line search fail with
    the message 'ABNORMAL: ', whose reason is empty; the fit says why in words."""
    def wrong(x):
        return np.sum(x ** 2), -2 * x

    result = minimize(wrong, np.ones(3))
    assert not result.success and str(result.message).strip().startswith("ABNORMAL")
    assert "line search" in result.reason and "gradient disagrees" in result.reason
    [message] = diagnostics.map_messages({"converged": False, "optimizer_message": result.reason})
    assert "()" not in message and "line search" in message


def test_the_laplace_centre_is_checked_like_a_map():
    from bayes_wsc import laplace

    assert diagnostics.laplace_messages({"centre_converged": True, "centre_relative_gradient": 0.5})
    assert diagnostics.laplace_messages({"centre_converged": True, "centre_relative_gradient": 1e-7}) == []
    assert "laplace_messages" in vars(laplace)  # run_laplace adds them to its warnings


# ---------------------------------------------------------------------- rule 2: a WH the arithmetic cannot hold
def test_a_huge_wh_is_fitted_as_its_limit_with_a_note(small_wsc):
    from bayes_wsc.models.wsc import WH_LIMIT, WSC

    with pytest.warns(FitWarning, match=r"WH=1e\+10 is beyond .* used WH = inf"):
        huge = WSC(wh=1e10, checks=False).fit(small_wsc)
    limit = fit_quietly(WSC(wh=np.inf, checks=False), small_wsc)
    np.testing.assert_allclose(huge.idata_.posterior["rho"].values, limit.idata_.posterior["rho"].values)
    assert any("WH = inf" in m for m in huge.diagnostics_)
    assert huge.wh == 1e10 and huge.wh_used == np.inf  # the setting is kept as given, and said
    at_limit = fit_quietly(WSC(wh=WH_LIMIT, checks=False), small_wsc)
    assert at_limit.wh_used == WH_LIMIT and at_limit.diagnostics_ == []


# ---------------------------------------------------------------------- rule 3: data that cannot identify the estimand
def test_one_group_cannot_identify_rho_and_says_so_before_the_fit(monkeypatch):
    from bayes_wsc import map_program
    from bayes_wsc.models.wsc import WSC

    data = GroupedCounts.from_counts(np.array([[5.0, 3.0, 2.0]]), np.array([0.4]))

    def no_fit(*args, **kwargs):
        raise RuntimeError("the fit started")

    monkeypatch.setattr(map_program, "run_map", no_fit)
    with warnings.catch_warnings(record=True) as caught, pytest.raises(RuntimeError, match="the fit started"):
        warnings.simplefilter("always")
        WSC(checks=False).fit(data)
    said = [str(w.message) for w in caught if issubclass(w.category, FitWarning)]
    assert any("one group cannot identify" in m for m in said)


def test_one_group_keeps_the_note_with_the_fit():
    from bayes_wsc.models.wsc import WSC

    data = GroupedCounts.from_counts(np.array([[5.0, 3.0, 2.0]]), np.array([0.4]))
    est = fit_quietly(WSC(checks=False), data)
    assert any("one group cannot identify" in m for m in est.diagnostics_)


def test_labels_of_one_class_and_constant_features_are_said():
    from bayes_wsc.data.labeled import LabeledItems
    from bayes_wsc.data.pairwise import PairwiseConstraints
    from bayes_wsc.models.experts import NoisyExperts
    from bayes_wsc.models.pcmix import PCMixture

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=12), "y": ["a"] * 6 + [None] * 6})
    items = LabeledItems.from_frame(frame, features=["x"], label_col="y", classes=["a", "b"])
    [message] = PCMixture(components=2).data_messages(items)
    assert "every labelled item (6) has the same class, 'a'" in message
    flat = LabeledItems.from_frame(frame.assign(y=["a", "b"] * 6, flat=3.0), label_col="y")  # kept, as zeros
    np.testing.assert_array_equal(flat.x[:, 1], 0.0)
    [message] = PCMixture(components=2).data_messages(flat)
    assert "1 of 2 feature columns take one value on every item ('flat')" in message
    assert "every Gaussian sd on them shrinks to its floor" in message

    points = pd.DataFrame({"id": list("abcdef"), "x": rng.normal(size=6), "flat": 1.0})
    links = pd.DataFrame({"expert": ["e1"] * 3, "i": ["a", "c", "e"], "j": ["b", "d", "f"], "link": [1, 1, 1]})
    said = NoisyExperts(n_clusters=2).data_messages(PairwiseConstraints.from_frames(points, links))
    assert any("feature columns take one value on every item ('flat')" in m for m in said)
    assert any("every constraint (3) has the same class, 'must-link'" in m for m in said)


def test_a_constant_feature_of_the_perception_model_is_said():
    from bayes_wsc.data.seeded import SeedSets
    from bayes_wsc.models.perception import PerceptionClustering

    rng = np.random.default_rng(0)
    items = pd.DataFrame(rng.normal(size=(8, 2)), columns=["x0", "x1"]).assign(id=[f"i{j}" for j in range(8)],
                                                                               flat=2.0)
    seeds = pd.DataFrame({"cluster": ["A", "B"], "id": ["i0", "i1"]})
    perception = pd.DataFrame({"cluster": ["A", "B"], "loop": [1.0, 0.0], "line": [0.0, 1.0]})
    data = SeedSets.from_frames(items, seeds, perception)
    [message] = PerceptionClustering().data_messages(data)
    assert "1 of 3 feature columns take one value on every item ('flat')" in message


def test_a_constant_feature_of_label_proportions_is_kept_and_said():
    """The one standardization policy (`data.tables.FeatureScaling`): a constant column is kept as zeros,
    from a table or from arrays, and the model says before the fit what it does with it."""
    from bayes_wsc.data.proportions import LabelProportions
    from bayes_wsc.models.proportions import ProportionsClassifier

    rng = np.random.default_rng(0)
    items = pd.DataFrame({"id": [f"i{j}" for j in range(8)], "group": ["g1", "g2"] * 4, "x": rng.normal(size=8),
                          "flat": 7.0})
    shares = pd.DataFrame({"group": ["g1", "g2"], "a": [0.25, 0.75], "b": [0.75, 0.25]})
    data = LabelProportions.from_frames(items, shares, id_col="id")
    arrays = LabelProportions.from_arrays(items[["x", "flat"]].to_numpy(), np.tile([0, 1], 4),
                                          [[0.25, 0.75], [0.75, 0.25]])
    for each in (data, arrays):
        np.testing.assert_array_equal(each.x[:, 1], 0.0)
        np.testing.assert_array_equal(each.scale[1], 1.0)
    def constant_words(emission):
        said = ProportionsClassifier(emission=emission).data_messages(data)
        [words] = [m for m in said if "take one value on every item ('flat')" in m]
        return words

    assert "shrinks to its floor" in constant_words("gaussian")
    assert "their weights in the classes' softmax" in constant_words("logistic")


def test_proportions_that_cannot_tell_classes_apart_are_said_before_the_fit(monkeypatch):
    from bayes_wsc import map_program
    from bayes_wsc.data.proportions import LabelProportions
    from bayes_wsc.models.proportions import ProportionsClassifier

    x = np.random.default_rng(0).normal(size=(40, 2))
    same = LabelProportions.from_arrays(x, np.repeat(np.arange(8), 5), np.tile([0.4, 0.6], (8, 1)))

    def no_fit(*args, **kwargs):
        raise RuntimeError("the fit started")

    monkeypatch.setattr(map_program, "run_map", no_fit)
    with pytest.warns(FitWarning, match="every group has the same class proportions"), \
            pytest.raises(RuntimeError, match="the fit started"):
        ProportionsClassifier(bag_likelihood="independent").fit(same)


# ---------------------------------------------------------------------- rule 4: degenerate modes
@pytest.fixture(scope="module")
def shrunk_fit(tmp_path_factory):
    """Two blobs 2 sds apart, means shrunk by a HalfNormal tau: the best of 6 restarts has tau -> 0 (an
    unbounded density), the others keep tau near the blobs' spread."""
    from bayes_wsc.data.labeled import LabeledItems
    from bayes_wsc.models.pcmix import PCMixture

    path = tmp_path_factory.mktemp("variant") / "shrunk_means.py"
    path.write_text(SHRUNK_MEANS)
    rng = np.random.default_rng(0)
    z = rng.integers(0, 2, 40)
    data = LabeledItems.from_frame(pd.DataFrame({"x": rng.normal(size=40) + 2.0 * z, "y": z}),
                                   features=["x"], label_col="y")
    est = fit_quietly(PCMixture(components=2, lam=1.0, restarts=6, seed=1, checks=False, model_file=str(path)), data)
    return est, data


def test_a_map_at_a_degenerate_mode_says_so(shrunk_fit):
    est, _ = shrunk_fit
    assert est.idata_.posterior["tau"].values.item() < 1e-4
    info = map_info(est)
    assert info["degenerate"] and info["degenerate"][0].startswith("tau fell to") and "still rises" in info["degenerate"][0]
    assert not all(info["restart_degenerate"])
    assert any("degenerate mode" in m and "tau" in m for m in est.diagnostics_)


def test_nuts_starts_at_the_best_nondegenerate_restart(shrunk_fit):
    est, _ = shrunk_fit
    info = map_info(est)
    best_ok = max((i for i, bad in enumerate(info["restart_degenerate"]) if not bad),
                  key=lambda i: info["restart_log_densities"][i])
    optima = [{"tau": np.float64(1e-8 if bad else 0.7 + i)} for i, bad in enumerate(info["restart_degenerate"])]
    draws = Draws({}, {}, info, optima)
    start, [said] = nondegenerate_start({"tau": 1e-8}, draws, "map", 4)
    assert start is optima[best_ok] and f"restart {best_ok}" in said
    starts, _ = nondegenerate_start([optima[c % 6] for c in range(4)], draws, "restarts", 4)
    assert all(s["tau"] > 0.5 for s in starts)
    # every restart degenerate: the chains start at the MAP's initial values, never at the degenerate point
    stuck = Draws({}, {}, {**info, "restart_degenerate": [True] * 6}, optima)
    initial = [{"tau": 0.5 + i} for i in range(6)]
    start, [said] = nondegenerate_start({"tau": 1e-8}, stuck, "map", 4, initial)
    assert start == {"tau": 0.5} and "start at the MAP's start (the model's initial values" in said
    assert "degenerate in every restart" in said
    starts, [said] = nondegenerate_start([{"tau": 1e-8}] * 4, stuck, "restarts", 4, initial)
    assert starts == initial[:4] and "the MAP's 6 starts" in said
    # one start (no restarts), as a variant with a learned noise scale has: the same
    single = Draws({}, {}, {"degenerate": ["tau fell to 1e-08"]}, [])
    start, [said] = nondegenerate_start({"tau": 1e-8}, single, "map", 4, [{}])
    assert start == {} and "not at the MAP, which is degenerate:" in said
    # a healthy MAP: nothing changes
    assert nondegenerate_start({"tau": 1.0}, Draws({}, {}, {"degenerate": []}, optima), "map", 4) == ({"tau": 1.0}, [])


def test_the_nuts_fit_takes_the_nondegenerate_start(shrunk_fit, monkeypatch):
    """The estimator hands NUTS the non-degenerate start (fit_nuts replaced: only where it starts matters)."""
    from bayes_wsc import fit as fitting
    from bayes_wsc.models.pcmix import PCMixture

    est, data = shrunk_fit
    seen = {}

    def record(model, **kwargs):
        seen.update(kwargs)
        raise RuntimeError("NUTS reached")

    monkeypatch.setattr(fitting, "fit_nuts", record)
    nuts = PCMixture(components=2, lam=1.0, restarts=6, seed=1, checks=False, method="nuts",
                     model_file=est.model_file)
    with pytest.raises(Exception, match="NUTS reached"), warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        nuts.fit(data)
    assert float(seen["initvals"]["tau"]) > 0.1


def test_nuts_never_starts_at_a_degenerate_map_of_one_start(monkeypatch, tmp_path):
    """A variant with one MAP start whose scale collapses (as a learned rater noise did, issue 38): NUTS gets
    the MAP's start (the variant's initial values), not the degenerate point (the message: the test above)."""
    from bayes_wsc import fit as fitting
    from bayes_wsc.data.labeled import LabeledItems
    from bayes_wsc.models.pcmix import PCMixture

    path = tmp_path / "shrunk_one_start.py"
    path.write_text(SHRUNK_MEANS.replace("import pymc as pm", "import numpy as np\nimport pymc as pm").replace(
        "    return estimator.initial_values(data)", "    return {'tau': 1e-3, 'mean_z': np.zeros((2, 1))}"))
    rng = np.random.default_rng(0)
    z = rng.integers(0, 2, 40)
    data = LabeledItems.from_frame(pd.DataFrame({"x": rng.normal(size=40) + 2.0 * z, "y": z}),
                                   features=["x"], label_col="y")
    seen = {}

    def record(model, **kwargs):
        seen.update(kwargs)
        raise RuntimeError("NUTS reached")

    monkeypatch.setattr(fitting, "fit_nuts", record)
    nuts = PCMixture(components=2, lam=1.0, seed=1, checks=False, method="nuts", model_file=str(path))
    with pytest.raises(Exception, match="NUTS reached"), warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        nuts.fit(data)
    assert float(seen["initvals"]["tau"]) == 1e-3


def test_what_the_nuts_start_says_is_warned_before_sampling_and_kept_once(monkeypatch):
    """A model's `nuts_warnings` (here one line, whatever the start) is a `SamplingWarning` issued before NUTS
    runs, kept in the fit's diagnostics, and not warned again when the fit ends; the command line prints it
    at once (`fit_save_report` lets it through where it holds other fit warnings back)."""
    from bayes_wsc import fit as fitting
    from bayes_wsc.data.labeled import LabeledItems
    from bayes_wsc.errors import SamplingWarning
    from bayes_wsc.models.pcmix import PCMixture

    rng = np.random.default_rng(0)
    z = rng.integers(0, 2, 40)
    data = LabeledItems.from_frame(pd.DataFrame({"x": rng.normal(size=40) + 2.0 * z, "y": z}),
                                   features=["x"], label_col="y")
    monkeypatch.setattr(PCMixture, "nuts_warnings", lambda self, start: ["the start says the run will be slow"])
    run_nuts, at_nuts = fitting.fit_nuts, []

    def record(model, **kwargs):
        at_nuts.append(len(caught))
        return run_nuts(model, **kwargs)

    monkeypatch.setattr(fitting, "fit_nuts", record)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = PCMixture(components=2, seed=1, checks=False, method="nuts", draws=30, tune=30, chains=1,
                        progressbar=False).fit(data)
    said = [w.category for w in caught if "will be slow" in str(w.message)]
    assert said == [SamplingWarning]  # once
    first = next(i for i, w in enumerate(caught) if "will be slow" in str(w.message))
    assert first < at_nuts[0]  # before NUTS ran
    assert est.diagnostics_.count("the start says the run will be slow") == 1
