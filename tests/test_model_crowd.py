"""The crowd model (Dawid-Skene): its likelihood against brute-force enumeration of every item's class,
parameter recovery on data from `bayes-wsc simulate crowd`, bad input in one line (exit 2), the agreement
check on an adversarial annotator, and the votes reader the combined model shares. Its simulation-based
calibration runs in the slow tier from tests/contract_cases.py's SBC_SETTINGS."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_wsc.cli import main
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.models.crowd.data import CrowdVotes
from bayes_wsc.models.crowd.simulate import simulate_crowd


def tiny_votes(k: int) -> pd.DataFrame:
    """4 items, 3 sources, abstentions (and an item on which every source abstains)."""
    classes = [f"c{c}" for c in range(k)]
    return pd.DataFrame({"item": ["i0", "i0", "i1", "i1", "i1", "i2", "i3", "i3"],
                         "source": ["s1", "s2", "s1", "s2", "s3", "s3", "s1", "s2"],
                         "vote": [classes[1], classes[k - 1], classes[0], None, classes[1], classes[0], None, None]})


def random_point(data, rng) -> dict:
    return {"pi": rng.dirichlet(np.ones(data.n_classes)),
            "confusion": rng.dirichlet(np.ones(data.n_classes) * 2, size=(data.n_sources, data.n_classes))}


def brute_force(data, point) -> float:
    """log sum over every assignment z of all items' classes of prod_j pi[z_j] prod_(cast votes) confusion[s, z_j, v],
    over the items with a cast vote (an item without one sums to 1)."""
    voted = data.voted_items()
    cast = data.vote >= 0
    total = []
    for z in itertools.product(range(data.n_classes), repeat=voted.size):
        klass = dict(zip(voted, z))
        value = sum(np.log(point["pi"][c]) for c in z)
        for j, s, v in zip(data.vote_item[cast], data.vote_source[cast], data.vote[cast]):
            value += np.log(point["confusion"][s, klass[j], v])
        total.append(value)
    return float(np.logaddexp.reduce(total))


@pytest.mark.parametrize("k", [2, 3])
def test_the_likelihood_is_the_sum_over_every_items_class(k):
    """The recorded units (the PyMC graph) and the NumPy formula both sum to the brute-force marginal."""
    from bayes_wsc.inference import LOG_LIKELIHOOD_PREFIX
    from bayes_wsc.model_terms import evaluate
    from bayes_wsc.models.crowd.model import build_model, unit_log_likelihood

    rng = np.random.default_rng(k)
    data = CrowdVotes.from_frame(tiny_votes(k), classes=[f"c{c}" for c in range(k)])
    assert list(data.item_ids[data.voted_items()]) == ["i0", "i1", "i2"]  # i3: every source abstained
    model = build_model(data)
    point = random_point(data, rng)
    [units] = evaluate(model, [model[LOG_LIKELIHOOD_PREFIX + "items"]], {n: v[None] for n, v in point.items()})
    np.testing.assert_allclose(units.sum(), brute_force(data, point), rtol=1e-10)
    np.testing.assert_allclose(unit_log_likelihood(data, {n: v[None] for n, v in point.items()}), units, rtol=1e-10)


def test_the_combined_model_reads_votes_and_scores_them_as_the_crowd_model():
    """One vote term for both models: with votes alone and no feature weight, the combined model's units are
    the crowd model's at pi uniform."""
    from bayes_wsc.maths.dawid_skene import vote_evidence
    from bayes_wsc.models.combined.data import CombinedSupervision
    from bayes_wsc.models.crowd.model import unit_log_likelihood

    votes = tiny_votes(3)
    crowd = CrowdVotes.from_frame(votes, classes=["c0", "c1", "c2"])
    items = pd.DataFrame({"id": ["i0", "i1", "i2", "i3"], "x1": [0.0, 1.0, 2.0, 3.0]})
    combined = CombinedSupervision.from_frames(items, votes=votes, classes=["c0", "c1", "c2"])
    np.testing.assert_array_equal(combined.vote, crowd.vote)
    point = {"pi": np.full((1, 3), 1 / 3), "confusion": random_point(crowd, np.random.default_rng(0))["confusion"][None]}
    np.testing.assert_allclose(vote_evidence(combined, point["confusion"]), vote_evidence(crowd, point["confusion"]))
    from bayes_wsc.models.combined.model import unit_log_likelihood as combined_units

    params = {"W": np.zeros((1, 3, 1)), "b": np.zeros((1, 3)), "confusion": point["confusion"]}
    np.testing.assert_allclose(combined_units(combined, params), unit_log_likelihood(crowd, point), rtol=1e-10)


# ---------------------------------------------------------------------- recovery
def test_parameters_are_recovered_from_data_simulated_by_the_command_line(tmp_path):
    from bayes_wsc.models.crowd.model import CrowdClassifier

    code = main(["simulate", "crowd", "--n-items", "400", "--classes", "3", "--sources", "5", "--seed", "3",
                 "--out", str(tmp_path)])
    assert code in (0, None)
    import json

    truth = json.loads((tmp_path / "truth.json").read_text())
    votes = pd.read_csv(tmp_path / "votes.csv", dtype=str, keep_default_na=False, na_values=[""])
    data = CrowdVotes.from_frame(votes, classes=["c0", "c1", "c2"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        est = CrowdClassifier(checks=False).fit(data)
    post = est.idata_.posterior
    truth_table = pd.read_csv(tmp_path / "truth.csv", dtype=str)
    assert list(truth_table["item"]) == list(data.item_ids)
    true_class = truth_table["class"].to_numpy()
    # what the simulated data hold: each source's confusion matrix counted from its votes and the true classes
    z = pd.Index(data.classes).get_indexer(true_class)
    cast = data.cast
    counted = np.zeros((data.n_sources, data.n_classes, data.n_classes))
    np.add.at(counted, (data.vote_source[cast], z[data.vote_item[cast]], data.vote[cast]), 1.0)
    counted /= counted.sum(axis=2, keepdims=True)
    np.testing.assert_allclose(post["pi"].values.ravel(), np.bincount(z, minlength=3) / z.size, atol=0.04)
    np.testing.assert_allclose(post["pi"].values.ravel(), [truth["pi"][c] for c in data.classes], atol=0.08)
    accuracy = post["accuracy"].values.ravel()
    np.testing.assert_allclose(accuracy, np.diagonal(counted, axis1=1, axis2=2).mean(axis=1), atol=0.05)
    np.testing.assert_allclose(accuracy, [truth["accuracy"][s] for s in data.source_names], atol=0.12)
    assert np.abs(post["confusion"].values[0, 0] - counted).max() < 0.12
    found = est.item_probabilities()["class"].to_numpy()
    from bayes_wsc.models.crowd.baselines import majority_vote

    chosen = majority_vote(data)
    majority = np.where(chosen >= 0, data.classes[np.maximum(chosen, 0)], "")
    assert (found == true_class).mean() > 0.8 and (found == true_class).mean() >= (majority == true_class).mean()
    predicted = est.predict(pd.read_csv(tmp_path / "items.csv", dtype=str, keep_default_na=False, na_values=[""]))
    np.testing.assert_array_equal(predicted["class"].to_numpy(), found)


# ---------------------------------------------------------------------- the agreement check
def test_the_agreement_check_names_an_adversarial_annotator_and_passes_honest_ones():
    from bayes_wsc.models.crowd.model import CrowdClassifier

    for adversarial, flags in ((1, True), (0, False)):
        votes, _ = simulate_crowd(150, 3, 4, adversarial=adversarial, vote_rate=0.7, seed=5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            est = CrowdClassifier().fit(CrowdVotes.from_frame(votes))
        [row] = est.checks_[est.checks_["check"] == "source_agreement"].to_dict("records")
        assert row["flagged"] == flags, row["message"]
        if flags:
            assert "'adversary1'" in row["message"] and row["effect"] > row["tolerance"]


# ---------------------------------------------------------------------- bad input
BAD = [
    (lambda v: v.assign(vote=["zz", *v["vote"][1:]]), {"classes": ["c0", "c1"]}, "class 'zz'"),
    (lambda v: pd.concat([v, v.iloc[:1]]), {}, "votes on item 'i0' twice"),
    (lambda v: v.drop(columns="source"), {}, "source"),
    (lambda v: v.assign(vote=None), {"classes": ["c0", "c1"]}, "every vote is an abstention"),
    (lambda v: v.assign(vote="c0"), {}, "1 class"),
    (lambda v: v.iloc[:2].assign(vote=["c0", "c1"]), {}, "1 item"),
    (lambda v: v.assign(item=[None, *v["item"][1:]]), {}, "item"),
    (lambda v: v.iloc[:0], {}, "votes"),
    (lambda v: v, {"classes": ["c0", "c0", "c1"]}, "'c0' twice"),
]


@pytest.mark.parametrize("change, kwargs, message", BAD)
def test_bad_input_is_one_line_naming_it(change, kwargs, message):
    with pytest.raises(InputError, match=message) as info:
        CrowdVotes.from_frame(change(tiny_votes(2)), **kwargs)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("table, words", [
    ("item,source\ni0,s1\n", "votes"),
    ("item,source,vote\ni0,s1,a\ni0,s1,b\ni1,s1,a\n", "twice"),
    ("item,source,vote\ni0,s1,a\ni0,s2,b\n", "1 item"),
])
def test_the_command_line_refuses_bad_votes_with_exit_code_2(tmp_path, capsys, table, words):
    (tmp_path / "votes.csv").write_text(table)
    try:
        code = main(["fit", "crowd", "--votes", str(tmp_path / "votes.csv"), "--out", str(tmp_path / "fit.nc")])
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and words in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert not (tmp_path / "fit.nc").exists()


def test_predict_refuses_an_unknown_source_or_class_in_one_line():
    from bayes_wsc.models.crowd.model import CrowdClassifier

    data = CrowdVotes.from_frame(tiny_votes(2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        est = CrowdClassifier(checks=False).fit(data)
    with pytest.raises(InputError, match="'s9' is not a source"):
        est.predict(pd.DataFrame({"item": ["a"], "s9": ["c0"]}))
    with pytest.raises(InputError, match="vote 'c7' is not a class"):
        est.predict(pd.DataFrame({"item": ["a"], "s1": ["c7"]}))
    silent = est.predict(pd.DataFrame({"item": ["a"], "s1": [None]}))
    np.testing.assert_allclose(silent[["prob_c0", "prob_c1"]].to_numpy().ravel(), est.idata_.posterior["pi"].values.ravel())
