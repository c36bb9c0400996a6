"""Fixtures shared by the test files: the table of models the contract suite runs on, and each
model's fits on its small example data, made once per session (`model_fits`).

`registry` below has the interface of `bayes_wsc.registry` (`MODELS`, `get`, and per model `name`,
`estimator_class()`, `data_class()`, `example(seed=0)`): the contract suite (test_contract.py) reads
only that, so that a model registered in the package is tested by registering it.
"""

from __future__ import annotations

import functools
import importlib
import types
import warnings
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSpec:
    """One model: its name, and where its estimator, data container and small example live."""

    name: str
    estimator: str  # "module:Class"
    data: str  # "module:Class"
    make_example: str  # "module:function", function(seed) -> the data container

    def estimator_class(self):
        return _resolve(self.estimator)

    def data_class(self):
        return _resolve(self.data)

    def example(self, seed: int = 0):
        """Small data simulated from the model's study: a fit in seconds."""
        return _resolve(self.make_example)(seed)


def _resolve(target: str):
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


def _wsc_example(seed):
    from bayes_wsc.simulate import simulate_wsc

    return simulate_wsc(n_groups=40, items_per_group=30, n_bins=5, seed=seed)[0]


def _pcmix_example(seed):
    from bayes_wsc.simulate.pcmix import simulate_intervals, toy_items

    return toy_items(simulate_intervals(70, 40, 30, seed=seed)[0])


def _experts_example(seed):
    from bayes_wsc.data.pairwise import PairwiseConstraints
    from bayes_wsc.simulate.experts import simulate_experts_model

    accuracy = (0.9, 0.8, 0.7)
    items, constraints, _ = simulate_experts_model(40, 2, 2, accuracy, accuracy, 80, seed=seed)
    return PairwiseConstraints.from_frames(items, constraints)


def _proportions_example(seed):
    from bayes_wsc.simulate.proportions import simulate_proportions

    return simulate_proportions("gaussian", n_groups=16, group_size=6, n_features=2, seed=seed)[0]


def _perception_example(seed):
    from bayes_wsc.simulate.perception import simulate_model

    return simulate_model(80, n_features=3, seeds_per_cluster=10, seed=seed)[0].data()


def _spec(name, estimator, data, example):
    return ModelSpec(name, estimator, data, f"{__name__}:{example}")


_MODELS = (
    _spec("wsc", "bayes_wsc.models.wsc:WSC", "bayes_wsc.data.grouped:GroupedCounts", "_wsc_example"),
    _spec("pcmix", "bayes_wsc.models.pcmix:PCMixture", "bayes_wsc.data.labeled:LabeledItems", "_pcmix_example"),
    _spec("experts", "bayes_wsc.models.experts:NoisyExperts", "bayes_wsc.data.pairwise:PairwiseConstraints",
          "_experts_example"),
    _spec("proportions", "bayes_wsc.models.proportions:ProportionsClassifier",
          "bayes_wsc.data.proportions:LabelProportions", "_proportions_example"),
    _spec("perception", "bayes_wsc.models.perception:PerceptionClustering", "bayes_wsc.data.seeded:SeedSets",
          "_perception_example"),
)


def _get(name: str) -> ModelSpec:
    for spec in _MODELS:
        if spec.name == name:
            return spec
    raise KeyError(name)


#: stands in for `bayes_wsc.registry` until the package has it
registry = types.SimpleNamespace(MODELS=_MODELS, get=_get)


#: the short fits the tests of a model share: enough draws for LOO and intervals, not for inference
FIT_SETTINGS = {"map": {}, "laplace": {"draws": 100}, "nuts": {"draws": 60, "tune": 60, "chains": 2}}


class ModelFits:
    """A model's example data, new items to predict (contract_cases.py) and its fits by method, each
    made on first use."""

    def __init__(self, spec):
        from contract_cases import CASES

        self.spec, self.case = spec, CASES[spec.name]
        self.data = spec.example(seed=0)
        self.items = self.case.new_items(self.data)

    def estimator(self, method="map", **settings):
        return self.spec.estimator_class()(method=method, progressbar=False, **{**FIT_SETTINGS[method], **settings})

    @functools.cache
    def __getitem__(self, method):
        from bayes_wsc.errors import FitWarning

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)  # short chains: low ESS, said so in the fit
            return self.estimator(method).fit(self.data)


@functools.cache
def model_fits(name: str) -> ModelFits:
    """The fits of model `name`, shared by every test file of the session."""
    return ModelFits(registry.get(name))
