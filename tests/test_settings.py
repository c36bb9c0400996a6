"""A model's settings declared once (`bayes_wsc.settings`): the estimator's constructor, `get_params`,
`build_settings` and checks, and the command line's options, all from one dataclass. No fit here."""

from __future__ import annotations

import argparse
import inspect
from dataclasses import dataclass

import pytest

from bayes_wsc import registry
from bayes_wsc.commands.common import add_setting_options, positive_float, positive_int, setting_values
from bayes_wsc.contract import ContractError
from bayes_wsc.errors import InputError
from bayes_wsc.estimator import CommonSettings, Estimator
from bayes_wsc.settings import BOOLEAN, POSITIVE, declared, one_of, or_none, real, setting, whole


@dataclass(frozen=True)
class ToySettings:
    scale: float = setting(1.0, POSITIVE, as_built=float, help="prior sd (default 1)")
    kind: str = setting("a", one_of(("a", "b")), help="which kind")
    weight: float = setting(1.0, parse=real)
    restarts: int | None = setting(None, or_none(whole(1), "one start"), build=False, help="MAP starts")
    verbose: bool = setting(False, BOOLEAN, build=False, help="say more")


def toy_class(settings=ToySettings, base=Estimator):
    class Toy(base):
        model_name, estimands, data_class = "toy", ["theta"], object
        Settings = settings

        def build_model(self, data):
            return None

        def data_groups(self, data):
            return {}

        def data_from_fit(self):
            return None

        def predict(self, items, *, ci=0.9):
            return items

    return Toy


def test_the_declaration_makes_the_constructor_get_params_and_build_settings():
    Toy = toy_class()
    common = [d.name for d in declared(CommonSettings)]
    params = list(inspect.signature(Toy.__init__).parameters)
    assert params == ["self", "scale", "kind", "weight", "restarts", "verbose", *common]
    assert all(p.kind is p.KEYWORD_ONLY for p in list(inspect.signature(Toy.__init__).parameters.values())[1:])
    est = Toy(scale=2, seed=3)
    assert list(est.get_params()) == params[1:]
    assert est.get_params()["scale"] == 2 and est.seed == 3 and est.kind == "a"
    assert est.build_settings() == {"scale": 2.0, "kind": "a", "weight": 1.0}
    with pytest.raises(TypeError, match="unexpected keyword argument 'scales'"):
        Toy(scales=2)
    with pytest.raises(TypeError):
        Toy(2.0)  # keyword-only, as before


@pytest.mark.parametrize("settings, words", [
    ({"scale": 0}, "^scale must be a positive number, got 0$"),
    ({"scale": True}, "^scale must be a positive number, got True$"),
    ({"kind": "c"}, r"^kind must be one of \('a', 'b'\), got 'c'$"),
    ({"weight": "x"}, "^weight must be a number >= 0, got 'x'$"),
    ({"weight": -1}, "^weight must be a finite number >= 0, got -1$"),
    ({"restarts": 0}, r"^restarts must be None \(one start\) or a whole number >= 1, got 0$"),
    ({"verbose": 1}, "^verbose must be True or False, got 1$"),
    ({"draws": 0}, "^draws must be a whole number >= 1, got 0$"),
])
def test_a_value_no_rule_takes_is_one_line_naming_it(settings, words):
    with pytest.raises(InputError, match=words):
        toy_class()(**settings).check_params()


def test_a_parsed_value_is_kept_as_parsed():
    est = toy_class()(weight="2.5")
    est.check_params()
    assert est.weight == 2.5 and est.build_settings()["weight"] == 2.5


def test_a_subclass_declaring_its_own_settings_leaves_out_its_bases():
    @dataclass(frozen=True)
    class Other:
        groups: int = setting(5, whole(1))

    Child = toy_class(Other, base=toy_class())
    assert "scale" not in Child().get_params() and Child().get_params()["groups"] == 5
    assert Child().build_settings() == {"groups": 5}


def test_a_hand_written_init_keeps_working():
    """A model declared the older way: its own keywords, then every estimator's."""
    Toy = toy_class()

    class Older(Toy):
        def __init__(self, *, extra=1, **kwargs):
            super().__init__(**kwargs)
            self.extra = extra

    est = Older(extra=2, scale=3.0)
    assert est.get_params()["extra"] == 2 and est.get_params()["scale"] == 3.0
    assert Older(**est.get_params()).get_params() == est.get_params()


def test_a_wrong_declaration_fails_when_the_class_is_defined():
    with pytest.raises(ContractError, match="Settings must be a dataclass"):
        toy_class(settings=dict)

    @dataclass(frozen=True)
    class Clashing:
        seed: int = setting(1, whole(0))

    with pytest.raises(ContractError, match="its Settings declare seed, a setting of every estimator"):
        toy_class(settings=Clashing)


def test_the_command_line_options_come_from_the_declaration():
    parser = argparse.ArgumentParser()
    add_setting_options(parser, ToySettings)
    actions = {a.dest: a for a in parser._actions if a.dest != "help"}
    assert list(actions) == ["scale", "kind", "restarts", "verbose"]  # weight has no help: written by hand
    assert actions["scale"].type is positive_float and actions["scale"].default == 1.0
    assert actions["kind"].choices == ("a", "b") and actions["restarts"].type is positive_int
    args = parser.parse_args(["--scale", "2", "--verbose"])
    assert setting_values(args, ToySettings) == {"scale": 2.0, "kind": "a", "restarts": None, "verbose": True}
    with pytest.raises(ValueError, match="'weight' of ToySettings has no plain option"):
        add_setting_options(argparse.ArgumentParser(), ToySettings, "weight")


def test_every_registered_model_declares_its_settings():
    """Every model's constructor comes from its declaration, none hand-written: a sixth model follows suit."""
    for spec in registry.MODELS:
        cls = spec.estimator_class()
        assert "Settings" in vars(cls) and getattr(cls.__init__, "_from_settings", False), spec.name


def test_every_declared_option_is_an_option_of_the_models_fit_command():
    """A setting whose option is written by hand declares its name (`option`, which `--set` errors name): that
    option is one of `bayes-wsc fit <name>`'s, and `option_of` gives it (else the name with dashes)."""
    from bayes_wsc.cli import build_parser
    from bayes_wsc.settings import option_of

    parser = build_parser()
    fit = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["fit"]
    models = next(a for a in fit._actions if isinstance(a, argparse._SubParsersAction)).choices
    declaring = 0
    for spec in registry.MODELS:
        options = {o for a in models[spec.name]._actions for o in a.option_strings}
        for name, _, setting_spec in declared(spec.estimator_class().Settings):
            if setting_spec.option is not None:
                declaring += 1
                assert option_of(spec.estimator_class().Settings, name) == setting_spec.option
                assert f"--{setting_spec.option}" in options, (spec.name, name, setting_spec.option)
    assert declaring  # experts' --clusters and --accuracy-prior
    assert option_of(ToySettings, "scale") == "scale" and option_of(ToySettings, "not_declared") == "not-declared"
