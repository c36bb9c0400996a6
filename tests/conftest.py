"""Fixtures shared by the test files: each registered model's fits on its small example data, made
once per session (`model_fits`). The contract suite (test_contract.py) reads the models from
`bayes_wsc.registry` alone, so that a model registered in the package is tested by registering it.
"""

from __future__ import annotations

import functools

from bayes_wsc import registry


@functools.cache
def model_fits(name: str):
    """The fits of registered model `name` (`bayes_wsc.testing.ModelFits`), shared by every test file of the
    session."""
    from bayes_wsc.testing import ModelFits
    from contract_cases import CASES

    return ModelFits.registered(registry.get(name), CASES[name])
