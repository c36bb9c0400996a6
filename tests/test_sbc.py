"""The SBC machinery itself (`bayes_wsc.sbc`) on a conjugate model whose posterior is drawn exactly.

theta ~ N(0, 1), y_1..y_5 ~ N(theta, 1): the posterior is N(sum y / 6, 1 / 6). With exact
draws the ranks are uniform; with an overconfident posterior (half the sd) they are not. (Draws
from the prior would pass: SBC cannot see a fit that ignores the data.)
"""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from bayes_wsc import inference
from bayes_wsc.errors import InputError
from bayes_wsc.sbc import SBCCase, prior_draws, run_sbc

N_OBS = 5


class ExactNormal:
    """An estimator stand-in: `fit` draws from the exact posterior (if `wrong`, with half its sd)."""

    def __init__(self, seed, wrong=False):
        self.rng = np.random.default_rng(seed)
        self.wrong = wrong

    def fit(self, y):
        precision = 1.0 + y.size
        loc, scale = y.sum() / precision, precision**-0.5 * (0.5 if self.wrong else 1.0)
        self.model_ = SimpleNamespace(deterministics=[])  # nothing derived to evaluate at the truth
        self.idata_ = inference.from_draws({"theta": loc + scale * self.rng.standard_normal((2, 200))})
        return self


def normal_case(wrong=False):
    return SBCCase(
        "normal", template=np.zeros(N_OBS),
        simulate=lambda draw, rng: draw["theta"] + rng.standard_normal(N_OBS),
        estimator=lambda seed: ExactNormal(seed, wrong),
        quantities=["theta"],
        draw_prior=lambda rng: {"theta": rng.standard_normal()},
    )


def test_exact_posterior_gives_uniform_ranks_and_an_overconfident_one_does_not():
    exact = run_sbc(normal_case(), 200, seed=1)
    assert exact.uniformity()["passes"].all()
    wrong = run_sbc(normal_case(wrong=True), 200, seed=1)
    assert not wrong.uniformity()["passes"].any()


def test_shards_sharing_one_file_give_the_unsharded_run(tmp_path):
    whole = run_sbc(normal_case(), 30, seed=2, out_csv=tmp_path / "whole.csv")
    shared = tmp_path / "shared.csv"
    for index in range(3):
        run_sbc(normal_case(), 30, seed=2, out_csv=shared, resume=True, shard=(index, 3))
    merged = run_sbc(normal_case(), 30, seed=2, out_csv=shared, resume=True)
    columns = ["sim", "rank:theta"]
    pd.testing.assert_frame_equal(merged.table[columns], whole.table[columns])
    assert sorted(pd.read_csv(shared)["sim"]) == list(range(30))


def test_a_shard_never_deletes_another_shards_work(tmp_path):
    shared = tmp_path / "shared.csv"
    run_sbc(normal_case(), 4, seed=3, out_csv=shared, resume=True, shard=(0, 2))
    with pytest.raises(InputError, match="shard only continues"):
        run_sbc(normal_case(), 4, seed=3, out_csv=shared, shard=(1, 2))
    with pytest.raises(InputError, match="shard must be"):
        run_sbc(normal_case(), 4, seed=3, shard=(2, 2))


def test_one_prior_draw_from_a_model_is_the_first_of_many():
    """pm.draw drops the draws axis for a single draw; prior_draws must not hand back a parameter's
    elements as if they were draws."""
    from bayes_wsc.simulate.pcmix import sbc_case

    case = sbc_case()
    one, two = prior_draws(case, 1, seed=5), prior_draws(case, 2, seed=5)
    assert len(one) == 1
    for name, value in two[0].items():
        assert one[0][name].shape == value.shape, name


def refusing_case(always=False):
    """The conjugate case whose data container refuses data with a mean above 0.3 (or any data)."""

    def simulate(draw, rng):
        y = draw["theta"] + rng.standard_normal(N_OBS)
        if always or y.mean() > 0.3:
            raise InputError("the mean is too high")
        return y

    return SBCCase("refusing", template=np.zeros(N_OBS), simulate=simulate, estimator=lambda seed: ExactNormal(seed),
                   quantities=["theta"], draw_prior=lambda rng: {"theta": rng.standard_normal()})


def test_refused_data_are_redrawn_with_new_parameters_and_the_ranks_stay_uniform():
    """Redrawing the parameters with the data conditions on an event of the data alone: the ranks stay
    uniform (redrawing only the data, with theta kept, would not: the kept data would sit below theta)."""
    result = run_sbc(refusing_case(), 200, seed=4)
    assert (result.table["redraws"] > 0).sum() > 40
    assert result.uniformity()["passes"].all()
    with pytest.raises(InputError, match="simulation 0: 21 draws of the prior gave data the model cannot take"):
        run_sbc(refusing_case(always=True), 1, seed=4)
