"""A label-proportions fit whose predicted classes ignore the features is flagged (`class_collapse`), on MAP
and NUTS alike; a good fit is not; and proportions that differ little are no longer warned about before the
fit (the chi-square warning fired on most good fits: `held_out_groups` says it after the fit)."""

import warnings

import numpy as np
import pytest

from bayes_wsc.criticism import Replicates
from bayes_wsc.checks.proportions import COLLAPSE_TOLERANCE, collapse_discrepancy, collapse_row
from bayes_wsc.data.proportions import LabelProportions
from bayes_wsc.errors import FitWarning
from bayes_wsc.models.proportions import ProportionsClassifier, between_group_chi_square
from bayes_wsc.simulate.proportions import simulate_proportions


def _data(seed=5):
    data, truth = simulate_proportions("logistic", n_groups=60, group_size=6, n_classes=2, n_features=2, seed=seed)
    assert data.eta.min() > 0.25  # the minority class is far more than the tolerance
    return data, truth


def _row(data, probs, seed=0):
    found = collapse_discrepancy(data, probs, np.random.default_rng(seed))
    replicates = Replicates({}, {}, realized={"class_collapse": found["predicted"],
                                              "class_collapse_shares": found["shares"],
                                              "predicted_shares": (found["predicted_shares"],) * 2})
    return collapse_row(data, replicates)


def test_the_row_flags_probabilities_that_ignore_the_features_and_passes_confident_ones():
    data, truth = _data()
    flat = np.broadcast_to(data.eta, (200, data.n_items, 2)).copy()  # every item at the overall shares
    row = _row(data, flat)
    assert row.flagged and row.p_value < 0.01 and row.effect == pytest.approx(data.eta.min(), abs=1e-9)
    assert row.tolerance == COLLAPSE_TOLERANCE
    assert "never predicts class" in row.message and "restarts" in row.message
    confident = np.broadcast_to(np.eye(2)[truth.z] * 0.9 + 0.05, (200, data.n_items, 2)).copy()
    good = _row(data, confident)
    assert not good.flagged and good.effect < 1e-9
    swapped = _row(data, confident[:, :, ::-1].copy())  # every item's class swapped
    assert swapped.flagged and "not the classes the proportions hold" in swapped.message


def test_a_good_map_fit_is_not_flagged():
    data, _ = _data()
    est = ProportionsClassifier().fit(data)
    row = est.checks_.set_index("check").loc["class_collapse"]
    assert not row["flagged"] and row["effect"] < COLLAPSE_TOLERANCE


@pytest.mark.parametrize("method", ["map", pytest.param("nuts", marks=pytest.mark.slow)])
def test_a_fit_whose_weights_cannot_move_is_flagged(method):
    """A prior that holds the weights at 0 leaves only the intercepts: every item gets the overall shares, and
    the most probable class is the majority for all of them, a collapsed fit built on purpose."""
    data, _ = _data()
    settings = {"draws": 40, "tune": 40, "chains": 1, "progressbar": False} if method == "nuts" else {}
    est = ProportionsClassifier(prior_sd=1e-4, method=method, **settings)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FitWarning)
        est.fit(data)
    row = est.checks_.set_index("check").loc["class_collapse"]
    assert row["flagged"] and row["p_value"] < 0.01 and row["effect"] > COLLAPSE_TOLERANCE
    assert any("check class_collapse flagged" in str(w.message) for w in caught)


def test_proportions_that_differ_little_are_not_warned_about_before_the_fit():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((512, 2))
    groups = np.repeat(np.arange(4), 128)
    counts = np.array([[45, 83], [48, 80], [47, 81], [50, 78]])  # four groups of 128, at random from 37 : 63
    alike = LabelProportions.from_arrays(x, groups, counts / 128, counts=counts)
    assert between_group_chi_square(alike) < 1.0  # (I - 1)(L - 1) = 3 on average for groups formed at random
    assert ProportionsClassifier().data_messages(alike) == []


def test_restarts_is_checked_before_any_work():
    from bayes_wsc.errors import InputError

    data, _ = _data()
    for bad in (0, 1.5, True, "4"):
        with pytest.raises(InputError, match="restarts must be"):
            ProportionsClassifier(restarts=bad).fit(data)
