"""`held_out_groups` (label proportions, logistic emission) on given class probabilities, no fit: quiet on the
classifier that drew the classes, flagging a confident classifier without skill ("may not have been found"),
and saying in another sentence when the groups are too alike to tell (too few: not run)."""

import numpy as np
from scipy.special import softmax

from bayes_wsc.data.proportions import LabelProportions
from bayes_wsc.models.proportions.checks import (HELD_OUT_MIN_GROUPS, HELD_OUT_TOLERANCE, held_out_folds,
                                                 held_out_row, held_out_scores)
from bayes_wsc.models.proportions.simulate import class_counts, class_formed_groups

W_TRUE = np.array([[-2.0, 0.0], [2.0, 0.0]])  # (class, feature)
MIX = (0.1, 0.2, 0.35, 0.45, 0.55, 0.65, 0.8, 0.9)


def _groups(seed, mix=MIX, size=100):
    """Groups of `size` formed by class with these shares of class 1, or (mix None) 8 groups formed at random."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((6000, 2))
    labels = (rng.random(6000) < softmax(x @ W_TRUE.T, axis=1)[:, 1]).astype(int)
    if mix is None:
        items, groups = np.arange(8 * size), np.repeat(np.arange(8), size)
    else:
        items, groups = class_formed_groups(labels, mix, size, rng)
    counts = class_counts(labels[items], groups, 2)
    data = LabelProportions.from_arrays(x[items], groups, counts / counts.sum(axis=1, keepdims=True), counts=counts,
                                        standardize=False)
    return data, x[items]


def _row(data, probs, seed=0):
    held = np.ones(data.n_groups, dtype=bool)
    no_skill = np.broadcast_to(data.eta, (data.n_groups, data.n_classes))
    scores = held_out_scores(data, probs, no_skill, held, seed)
    return scores, held_out_row({**scores, "folds": 4}, data.n_groups)


def test_the_true_classifier_is_quiet():
    for seed in (0, 1):
        data, x = _groups(seed)
        scores, row = _row(data, softmax(x @ W_TRUE.T, axis=1))
        assert scores["explained"] > 0.8 and not row.flagged, row.message
        assert row.effect == scores["explained"] and row.tolerance == HELD_OUT_TOLERANCE


def test_a_confident_classifier_without_skill_is_flagged():
    data, x = _groups(2)
    rng = np.random.default_rng(3)
    guess = rng.integers(0, 2, data.n_items)  # confident, and unrelated to the classes
    probs = np.where(np.eye(2, dtype=bool)[guess], 0.97, 0.03)
    scores, row = _row(data, probs)
    assert scores["explained"] < HELD_OUT_TOLERANCE <= scores["resolution"] and scores["p_value"] < 0.01
    assert row.flagged and row.message.startswith("The held-out groups' proportions are predicted no better than "
                                                  "by the overall mix: the classes may not have been found"), row.message


def test_groups_too_alike_to_tell_say_so_in_another_sentence():
    # groups formed at random differ by chance only; a classifier at the overall mix for every item says that it
    # cannot tell them apart, and so would a right one this uncertain
    data, _ = _groups(4, mix=None)
    scores, row = _row(data, np.broadcast_to(data.eta, (data.n_items, 2)))
    assert scores["resolution"] < HELD_OUT_TOLERANCE and scores["explained"] < HELD_OUT_TOLERANCE
    assert row.flagged and row.message.startswith("The held-out groups are too few or too alike"), row.message
    # the same classifier on groups whose proportions differ widely has not found the classes: they say so
    data, _ = _groups(4)
    scores, row = _row(data, np.broadcast_to(data.eta, (data.n_items, 2)))
    assert scores["resolution"] > HELD_OUT_TOLERANCE and row.message.startswith("The held-out groups' proportions")


def test_too_few_groups_and_the_folds():
    data, x = _groups(5, mix=(0.1, 0.5, 0.9))
    row = held_out_row(None, data.n_groups)
    assert HELD_OUT_MIN_GROUPS > 3 and not row.flagged and row.message.startswith("not run: too few groups"), row.message
    folds = held_out_folds(np.array([0, 2, 3, 5, 7, 8]), 4, seed=0)
    assert len(folds) == 4 and sorted(np.concatenate(folds).tolist()) == [0, 2, 3, 5, 7, 8]


def test_predictions_too_uncertain_to_tell_are_flagged_whatever_they_explained():
    # a right fit this uncertain would explain 0.3 of the spread: 0.8 explained by chance does not show skill
    row = held_out_row({"groups": 8, "folds": 4, "explained": 0.8, "resolution": 0.3, "p_value": 0.9}, 8)
    assert row.flagged and row.message.startswith("The held-out groups are too few or too alike"), row.message
    quiet = held_out_row({"groups": 8, "folds": 4, "explained": 0.8, "resolution": 0.9, "p_value": 0.4}, 8)
    assert not quiet.flagged and quiet.message.startswith("Held-out groups: "), quiet.message
