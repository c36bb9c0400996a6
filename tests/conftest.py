"""Fixtures shared by the test files: each registered model's fits on its small example data, made
once per session (`model_fits`). The contract suite (test_contract.py) reads the models from
`bayes_wsc.registry` alone, so that a model registered in the package is tested by registering it.
"""

from __future__ import annotations

import functools
import warnings

from bayes_wsc import registry


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
