"""The public contract suite (`bayes_wsc.testing`) run on every registered model, one pytest case per model
and check, on the model's `example` data and its case in contract_cases.py; and on a model written here,
outside the package and not registered, which must pass `check_model` as a user's own model would.

The fits of one model are made once and shared by its checks (`conftest.model_fits`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayes_wsc import registry
from bayes_wsc.testing import Case, all_checks, check_model, parametrize_with_checks
from conftest import model_fits
from contract_cases import CASES


def test_every_model_has_a_contract_case():
    assert sorted(CASES) == sorted(registry.NAMES)


@parametrize_with_checks([model_fits(name) for name in registry.NAMES])
def test_contract(model, check):
    check(model)


# ---------------------------------------------------------------------- a model of a user's own
def two_blobs(seed=0):
    """A small data set of the model below: two Gaussian blobs in two features, a fifth of the items labeled."""
    from bayes_wsc.data.labeled import LabeledItems

    rng = np.random.default_rng(seed)
    z = rng.integers(0, 2, 80)
    x = rng.normal(np.where(z[:, None] == 1, 2.0, -2.0), 1.0, (80, 2))
    return LabeledItems.from_arrays(x, np.where(np.arange(80) < 16, z, np.nan), features=["f1", "f2"])


def gaussian_mixture_class():
    """A two-class Gaussian mixture with unit spread built from the package's blocks, as a user writes one
    in her own code: an `Estimator` subclass, not registered; its labeled items pin the classes."""
    import pymc as pm
    import pytensor.tensor as pt

    from bayes_wsc import likelihoods
    from bayes_wsc.data.labeled import LabeledItems
    from bayes_wsc.estimator import Estimator
    from bayes_wsc.posterior import check_ci, summarize_columns

    class TwoBlobs(Estimator):
        model_name = "two_blobs"
        estimands = ["pi", "mean"]
        data_class = LabeledItems

        def build_model(self, data):
            with pm.Model(coords={"item": data.item_ids, "class": list(data.classes),
                                  "feature": list(data.features)}) as model:
                pi = pm.Dirichlet("pi", np.ones(2), dims="class")
                mean = pm.Normal("mean", np.array([[-1.0], [1.0]]), 3.0, dims=("class", "feature"))
                x = pm.Data("x", data.x, dims=("item", "feature"))
                log_f = pt.log(pi)[None, :] + pm.logp(pm.Normal.dist(mean[None], 1.0), x[:, None, :]).sum(axis=-1)
                labeled = np.flatnonzero(data.labeled)
                per_item = likelihoods.mixture_logp(pt.zeros((1, 2)), log_f)
                per_item = pt.set_subtensor(per_item[labeled], log_f[labeled, data.y[labeled]])
                pm.Potential("items", likelihoods.record_pointwise("items", per_item, dims="item").sum())
            return model

        def initial_values(self, data):
            return {"pi": np.array([0.5, 0.5]), "mean": np.array([[-1.0, -1.0], [1.0, 1.0]])}

        def data_groups(self, data):
            return {"observed_data": {"y": data.y}, "constant_data": {"x": data.x},
                    "dims": {"x": ["item", "feature"], "y": ["item"]},
                    "attrs": {"data": {"features": list(data.features), "classes": list(data.classes),
                                       "center": data.center.tolist(), "scale": data.scale.tolist()}}}

        def data_from_fit(self):
            from bayes_wsc import inference

            fitted = self._fitted()
            saved = inference.get_attrs(fitted)["data"]
            x = fitted.constant_data["x"]
            return LabeledItems(x.values, fitted.observed_data["y"].values, saved["features"], saved["classes"],
                                np.array(saved["center"]), np.array(saved["scale"]), x["item"].values)

        def predict(self, items, *, ci=0.9):
            self._check_fitted()
            check_ci(ci)
            x = self.data_from_fit().standardize(items)
            post = self._fitted().posterior
            pi, mean = (post[n].values.reshape(-1, *post[n].shape[2:]) for n in ("pi", "mean"))

            def positive(cols):  # P(class 1 | x) per draw
                log_f = -0.5 * ((x[cols][None, :, None, :] - mean[:, None]) ** 2).sum(-1) + np.log(pi)[:, None]
                return 1 / (1 + np.exp(log_f[..., 0] - log_f[..., 1]))

            prob, low, high = summarize_columns(len(x), positive, len(pi), ci)  # a MAP's point: no interval
            return items.assign(prob=prob, prob_low=low, prob_high=high)

    return TwoBlobs


def test_a_model_written_outside_the_package_passes_check_model():
    model = gaussian_mixture_class()
    data = two_blobs()
    items = pd.DataFrame({"f1": [-2.0, 0.1, 2.5], "f2": [-1.5, 0.0, 2.0]})
    outcome = check_model(model, data, Case(new_items=lambda data: items))
    assert set(outcome) == {c.name for c in all_checks()}
    passed = [name for name, result in outcome.items() if result == "passed"]
    assert "check_predict[nuts]" in passed and "check_save_and_load_round_trip[laplace]" in passed
    assert all(r == "passed" or r.startswith("skipped:") for r in outcome.values())
    assert outcome["check_run_checks[map]"].startswith("skipped: the model has no checks module")


def test_check_model_names_each_failed_check_and_keeps_expected_failures_true():
    base = gaussian_mixture_class()

    class WideIntervals(base):
        def predict(self, items, *, ci=0.9):  # intervals that do not narrow with the level
            out = super().predict(items, ci=ci)
            return out if self.method == "map" else out.assign(prob_low=0.0, prob_high=1.0)

    data, items = two_blobs(), pd.DataFrame({"f1": [-2.0, 2.5], "f2": [-1.5, 2.0]})
    only = ("check_predict[map]", "check_predict[laplace]")
    with pytest.raises(AssertionError, match=r"fails 1 contract check\(s\):\ncheck_predict\[laplace\]: Assertion"):
        check_model(WideIntervals, data, items, only=only)
    outcome = check_model(WideIntervals, data, items, only=only,
                          expected_failures={"check_predict[laplace]": "intervals do not narrow"})
    assert outcome == {"check_predict[map]": "passed", "check_predict[laplace]": "expected failure: intervals do not narrow"}
    with pytest.raises(AssertionError, match=r"check_predict\[map\]: passed, but is listed"):
        check_model(base, data, items, only=only[:1], expected_failures={"check_predict": "wrongly listed"})
