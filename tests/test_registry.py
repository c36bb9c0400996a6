"""The registry (`bayes_wsc/registry.py`) and the contract a model class declares (`Estimator`).

Every model is registered once; the loader, the checks, the command line and `bayes_wsc.__all__`
read that one table. A model class that lacks a method or class attribute every model must define
fails when it is defined, naming the class and what it lacks.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import bayes_wsc
from bayes_wsc import registry
from bayes_wsc.criticism import MODULES
from bayes_wsc.commands import FIT_COMMANDS
from bayes_wsc.estimator import REGISTRY, Estimator


def test_models_in_order_and_found_by_name():
    assert registry.NAMES == ("wsc", "pcmix", "experts", "proportions", "perception", "combined")
    assert [registry.get(name).name for name in registry.NAMES] == list(registry.NAMES)
    with pytest.raises(KeyError, match="no model 'quantum' is registered"):
        registry.get("quantum")


def test_every_table_comes_from_the_registry():
    assert FIT_COMMANDS == registry.NAMES
    assert list(MODULES) == list(registry.NAMES) == list(REGISTRY)
    assert {name: registry.get(name).checks for name in registry.NAMES} == MODULES


@pytest.mark.parametrize("spec", registry.MODELS, ids=lambda s: s.name)
def test_each_spec_names_its_parts(spec):
    cls = spec.estimator_class()
    assert issubclass(cls, Estimator) and cls.model_name == spec.name
    assert cls.data_class is spec.data_class()
    for part, needs in (("commands", ("add_parser", "run", "add_simulate_parser", "run_simulate")),
                        ("checks", ("replicate", "rows", "targeted")), ("report", ("write_report",)),
                        ("simulate", ("example", "sbc_case"))):
        module = spec.module(part)
        assert all(callable(getattr(module, n, None)) for n in needs), (part, needs)


@pytest.mark.parametrize("spec", registry.MODELS, ids=lambda s: s.name)
def test_example_is_small_data_of_the_model_and_reproducible(spec):
    data = spec.example(seed=0)
    assert isinstance(data, spec.data_class())
    again, other = spec.example(seed=0), spec.example(seed=1)
    assert repr(vars(again)) == repr(vars(data)) and repr(vars(other)) != repr(vars(data))


def test_public_api_imports_from_the_package_without_pymc():
    code = ("import sys, bayes_wsc; names = sorted(bayes_wsc.__all__); "
            "assert 'pymc' not in sys.modules and 'arviz' not in sys.modules; print(' '.join(names))")
    names = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    for spec in registry.MODELS:
        for target in (spec.estimator, spec.data):
            assert target.partition(":")[2] in names
    assert {"load", "compare", "InputError", "FitWarning"} <= set(names)
    assert bayes_wsc.InputError is registry.resolve("bayes_wsc.errors:InputError")
    assert bayes_wsc.WSC is registry.get("wsc").estimator_class()


def test_a_model_class_lacking_part_of_the_contract_fails_when_defined():
    with pytest.raises(TypeError) as caught:
        class Incomplete(Estimator):
            model_name = "incomplete"
            estimands = ["theta"]

            def build_model(self, data):
                return None

    words = str(caught.value)
    assert "Incomplete" in words and "\n" not in words
    for name in ("data_from_fit", "data_groups", "predict", "data_class"):
        assert name in words
    assert "build_model" not in words and "estimands" not in words


def test_a_base_of_models_may_be_abstract_and_its_models_are_checked():
    class Base(Estimator, abstract=True):
        def data_groups(self, data):
            return {}

    with pytest.raises(TypeError, match="Child .* build_model, data_from_fit, predict, model_name"):
        class Child(Base):
            estimands, data_class = [], object
    with pytest.raises(TypeError):
        Base()


def test_predict_passes_a_model_option_only_to_a_model_that_declares_it():
    """`bayes-wsc predict --overlap-threshold`: the models taking it are those whose estimator lists it in
    `predict_options`; any other fit refuses it in one line."""
    from types import SimpleNamespace

    from bayes_wsc import InputError, PerceptionClustering, WSC
    from bayes_wsc.cli import _predict_options

    args = SimpleNamespace(overlap_threshold=0.4, fit="fit.nc")
    with pytest.raises(InputError, match="^--overlap-threshold is for perception fits; 'fit.nc' holds a 'wsc' fit$"):
        _predict_options(args, WSC())
    assert _predict_options(args, PerceptionClustering()) == {"overlap_threshold": 0.4}
    assert _predict_options(SimpleNamespace(overlap_threshold=None, fit="fit.nc"), WSC()) == {}
