"""The registry (`bayes_wsc/registry.py`) and the contract a model class declares (`Estimator`).

Every model is registered once; the loader, the checks, the command line and `bayes_wsc.__all__`
read that one table. A model class that lacks a method or class attribute every model must define
fails when it is defined, naming the class and what it lacks.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import types

import pytest

import bayes_wsc
from bayes_wsc import contract, registry
from bayes_wsc.criticism import MODULES
from bayes_wsc.errors import InputError
from bayes_wsc.commands import FIT_COMMANDS
from bayes_wsc.estimator import REGISTRY, Estimator


def test_models_in_order_and_found_by_name():
    assert len(set(registry.NAMES)) == len(registry.NAMES) == len(registry.MODELS) > 0
    assert [registry.get(name).name for name in registry.NAMES] == list(registry.NAMES)
    with pytest.raises(KeyError, match="no model 'quantum' is registered"):
        registry.get("quantum")


def test_every_table_comes_from_the_registry():
    assert FIT_COMMANDS == registry.NAMES
    assert list(MODULES) == list(registry.NAMES) == list(REGISTRY)
    assert {name: registry.get(name).checks for name in registry.NAMES} == MODULES


@pytest.mark.parametrize("spec", registry.MODELS, ids=lambda s: s.name)
def test_each_spec_names_its_parts_and_they_keep_the_contract(spec):
    spec.check()  # every part imported and held to its role's interface (contract.py)
    cls = spec.estimator_class()
    assert issubclass(cls, Estimator) and cls.model_name == spec.name
    assert cls.data_class is spec.data_class()
    for part, protocol in contract.ROLES.items():
        assert contract.missing(protocol, spec.module(part)) == [], part


def test_a_module_lacking_part_of_its_role_is_refused_in_one_line():
    checks = types.ModuleType("my_checks")
    checks.rows = checks.targeted = lambda *a: []
    checks.replicate = "not a function"
    with pytest.raises(contract.ContractError) as caught:
        contract.check_module("mine", "checks", checks)
    words = str(caught.value)
    assert "\n" not in words and "'mine'" in words and "my_checks" in words
    for name in ("variates", "parameters", "(default_log_likelihood) or LikelihoodTerms", "replicate"):
        assert name in words
    assert "rows," not in words and "targeted" not in words


def test_an_optional_part_comes_whole_or_not_at_all():
    commands = types.ModuleType("my_commands")
    for name in contract.members(contract.CommandsModule):
        setattr(commands, name, (lambda *a: None) if name.islower() else "text")
    contract.check_module("mine", "commands", commands)
    assert not contract.offers(commands, "commands", "path")
    commands.add_path_parser = lambda parser: None
    with pytest.raises(contract.ContractError, match="run_path .*PATH_HELP .*optional path part"):
        contract.check_module("mine", "commands", commands)


def test_a_spec_whose_estimator_is_another_models_is_refused():
    first, second = registry.MODELS[0], registry.MODELS[-1]
    wrong = dataclasses.replace(first, name="elsewhere")
    with pytest.raises(contract.ContractError, match="model_name"):
        wrong.estimator_class()
    if first is not second:
        crossed = dataclasses.replace(first, data=second.data)
        with pytest.raises(contract.ContractError, match="data_class"):
            crossed.check()


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
    first = registry.MODELS[0]
    assert getattr(bayes_wsc, first.estimator.partition(":")[2]) is first.estimator_class()


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
    """`bayes-wsc predict`'s model options come from the command modules (`PREDICT_OPTIONS`); a fit whose
    estimator lists the setting in `predict_options` takes it, any other refuses it in one line."""
    from types import SimpleNamespace

    from bayes_wsc.cli import _model_predict_options, _predict_options

    declared = _model_predict_options()
    for spec in registry.MODELS:
        module, cls = spec.module("commands"), spec.estimator_class()
        assert set(getattr(module, "PREDICT_OPTIONS", {})) <= set(cls.predict_options) <= set(declared), spec.name
    if not declared:
        pytest.skip("no registered model declares a predict option")
    name, (flag, _) = next(iter(declared.items()))
    takers = [s for s in registry.MODELS if name in s.estimator_class().predict_options]
    others = [s for s in registry.MODELS if name not in s.estimator_class().predict_options]
    args = SimpleNamespace(**{name: 0.4}, fit="fit.nc")
    assert _predict_options(args, takers[0].estimator_class()()) == {name: 0.4}
    if others:
        words = f"^{flag} is for {' and '.join(s.name for s in takers)} fits; 'fit.nc' holds a '{others[0].name}' fit$"
        with pytest.raises(InputError, match=words):
            _predict_options(args, others[0].estimator_class()())
        assert _predict_options(SimpleNamespace(**{name: None}, fit="fit.nc"), others[0].estimator_class()()) == {}


def test_every_public_method_taking_ci_checks_it_first():
    """`Estimator._check_levels`: a model's methods with a `ci` parameter, or taking `**kwargs` (reports), check
    a given level before their own first line, and run as written without one."""
    calls = []

    class Levels(Estimator):
        model_name, estimands, data_class = "levels", [], object

        def build_model(self, data):
            return None

        def data_groups(self, data):
            return {}

        def data_from_fit(self):
            return None

        def predict(self, items, *, ci=0.9):
            return ci

        def write_report(self, out_dir, **kwargs):
            calls.append(kwargs)
            return kwargs

        def table(self, ci=0.9, *, other=1):
            calls.append(ci)
            return ci

    est = Levels()
    assert est.write_report("out") == {} and est.write_report("out", title="t") == {"title": "t"}
    assert est.table() == 0.9 and est.table(0.5) == 0.5
    calls.clear()
    for call in (lambda: est.write_report("out", ci=2), lambda: est.table(1.5), lambda: est.table(ci="0.9"),
                 lambda: est.report("out", ci=0)):
        with pytest.raises(InputError, match="^ci must be a number in \\(0, 1\\)"):
            call()
    assert calls == []  # refused before any work
