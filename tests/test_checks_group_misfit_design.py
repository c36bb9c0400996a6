"""`group_misfit` (logistic emission) on groups formed by class: quiet on their exact proportions, and still
flagging a group given another group's counts; groups formed from the items keep the classifier as it is
(`checks.proportions.design_shift`). No fit: the classifier is the truth that drew the classes."""

import numpy as np
import pytest
from scipy.special import softmax

from bayes_wsc.checks import proportions as proportions_checks
from bayes_wsc.checks.proportions import _replicate_logistic, collapse_discrepancy, design_shift, rows
from bayes_wsc.data.proportions import LabelProportions
from bayes_wsc.simulate.proportions import class_counts, class_formed_groups

W_TRUE = np.array([[-1.5, 0.0], [1.5, 0.0]])  # (class, feature): accuracy about 0.85, calibrated


def _class_formed(seed, mix=(0.1, 0.3, 0.7, 0.9), size=300):
    """Four groups drawn from a pool by label, each with its share `mix` of class 1."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((4000, 2))
    labels = (rng.random(4000) < softmax(x @ W_TRUE.T, axis=1)[:, 1]).astype(int)
    items, groups = class_formed_groups(labels, mix, size, rng)
    return x[items], labels[items], groups


def _misfit_row(x, groups, counts, seed=0):
    data = LabelProportions.from_arrays(x, groups, counts / counts.sum(axis=1, keepdims=True), counts=counts,
                                        standardize=False)
    params = {"W": W_TRUE[None], "b": np.zeros((1, 2))}
    sizes = data.group_sizes.astype(float)
    replicates = _replicate_logistic(data, params, np.random.default_rng(seed), sizes,
                                     {"group": list(data.group_ids), "class": list(data.classes)})
    probs = np.broadcast_to(softmax(x @ W_TRUE.T, axis=1), (20, len(x), 2))  # the collapse row needs a few draws
    found = collapse_discrepancy(data, probs, np.random.default_rng(seed))
    replicates.realized.update({"class_collapse": found["predicted"], "class_collapse_shares": found["shares"],
                                "predicted_shares": (found["predicted_shares"],) * 2})
    return data, rows(None, data, replicates)[0]


@pytest.mark.parametrize("seed", [0, 1])
def test_exact_proportions_of_groups_formed_by_class_are_not_flagged(seed, monkeypatch):
    x, labels, groups = _class_formed(seed)
    data, row = _misfit_row(x, groups, class_counts(labels, groups, 2))
    # the classifier alone expects far less skewed groups: the check that ignored the design flagged them
    expected = np.bincount(groups, weights=softmax(x @ W_TRUE.T, axis=1)[:, 1]) / np.bincount(groups)
    assert expected[0] > 0.15 and expected[3] < 0.85
    assert not row.flagged, row.message
    assert "kappa = " in row.message
    monkeypatch.setattr(proportions_checks, "DESIGN_SHIFT_GRID", np.zeros(1))  # the classifier alone, as before
    _, unshifted = _misfit_row(x, groups, class_counts(labels, groups, 2))
    assert unshifted.flagged, unshifted.message


def test_a_group_given_another_groups_counts_is_still_flagged():
    x, labels, groups = _class_formed(2)
    counts = class_counts(labels, groups, 2)
    counts[1] = counts[2]  # the group of 30% given the counts of the group of 70%
    _, row = _misfit_row(x, groups, counts)
    assert row.flagged and "group g1 " in row.message, row.message


def test_groups_formed_from_the_items_keep_the_classifier():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((600, 2))
    probs = softmax(x @ W_TRUE.T, axis=1)
    labels = (rng.random(600) < probs[:, 1]).astype(int)
    groups = np.repeat(np.arange(100), 6)
    counts = class_counts(labels, groups, 2)
    data = LabelProportions.from_arrays(x, groups, counts / 6.0, counts=counts, standardize=False)
    shifted, kappa = design_shift(data, probs)
    assert kappa == 0.0 and np.allclose(shifted, probs, rtol=0, atol=1e-12)
