"""Every estimator's settings, and what a model's declaration of its own gives it.

`CommonSettings` declares how any model fits (method, draws, seed...), as a model declares its own
(`bayes_wsc.settings`, `models/<name>/settings.py`). `DeclaredSettings`, a base of `Estimator`, makes from
the two declarations the keyword-only `__init__`, `get_params`, `check_params` and `build_settings`; a model
class declaring its own `Settings` gets an `__init__` of its own signature (`_settings_init`, which
`Estimator.__init_subclass__` installs). Kept apart from the fit's lifecycle, which only reads the settings;
every name here is still importable from `bayes_wsc.estimator`.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path
from typing import ClassVar

from bayes_wsc import contract
from bayes_wsc.backends import NUTS_BACKENDS, PRECISIONS
from bayes_wsc.errors import InputError
from bayes_wsc.fit_files import METHODS
from bayes_wsc.settings import BOOLEAN, NoSettings, Rule, built, checked, declared, one_of, or_none, setting, whole
from bayes_wsc.value_checks import _is_real

#: where NUTS chains start: all at the best MAP, or chain c at the optimum of MAP restart c
CHAIN_STARTS = ("map", "restarts")
#: the seed of a fit given none: identical data and settings give identical results (seed=None draws a fresh one)
DEFAULT_SEED = 0


@dataclasses.dataclass(frozen=True)
class CommonSettings:
    """The settings of every estimator (how it fits), declared as a model declares its own (`Estimator.Settings`);
    a model's own come first in its constructor and `get_params`."""

    method: str = setting("map", one_of(METHODS))
    draws: int = setting(1000, whole(1))
    tune: int = setting(1000, whole(0))
    chains: int = setting(4, whole(1))
    seed: int | None = setting(DEFAULT_SEED, or_none(whole(0)))
    backend: str | None = setting(None, or_none(one_of(NUTS_BACKENDS), said=False))
    target_accept: float = setting(0.8, Rule("in (0, 1)", lambda v: _is_real(v) and 0 < v < 1))
    model_file: str | Path | None = setting(None, Rule("a path", lambda v: v is None or isinstance(v, (str, Path))))
    model_settings: dict | None = setting(None)  # a variant's own: `Estimator._check_model_settings`
    progressbar: bool = setting(True)
    chain_starts: str = setting("map", one_of(CHAIN_STARTS))
    precision: str | None = setting(None, or_none(one_of(PRECISIONS)))
    checks: bool = setting(True, BOOLEAN)


def _names(declaration: type) -> tuple[str, ...]:
    return tuple(d.name for d in declared(declaration))


def setting_names(cls: type) -> dict:
    """name -> default of every setting an estimator class declares: its own `Settings`, then `CommonSettings`."""
    return {d.name: d.default for d in (*declared(cls.Settings), *declared(CommonSettings))}


def _settings_signature(cls: type) -> inspect.Signature:
    """`self` and a keyword-only parameter per declared setting, with its default: what `inspect` (and `help`,
    and `from_idata`'s reading of a saved fit's settings) sees of a constructor made from the declaration."""
    keywords = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d) for n, d in setting_names(cls).items()]
    return inspect.Signature([inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD), *keywords])


def _settings_init(cls: type):
    """The `__init__` of a class that declares its `Settings`: `Estimator.__init__` under its own signature."""
    def __init__(self, **settings):
        DeclaredSettings.__init__(self, **settings)

    __init__.__signature__ = _settings_signature(cls)
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__doc__ = DeclaredSettings.__init__.__doc__
    __init__._from_settings = True
    return __init__


def _check_settings_class(cls: type) -> None:
    """A model's `Settings` is a dataclass whose names are not those of `CommonSettings`: one `ContractError` line."""
    if not dataclasses.is_dataclass(cls.Settings):
        raise contract.ContractError(f"model class {cls.__qualname__}: Settings must be a dataclass of its settings "
                                     f"(bayes_wsc.settings), got {cls.Settings!r}")
    clash = sorted(set(_names(cls.Settings)) & set(_names(CommonSettings)))
    if clash:
        raise contract.ContractError(f"model class {cls.__qualname__}: its Settings declare {', '.join(clash)}, "
                                     "a setting of every estimator (CommonSettings)")


class DeclaredSettings:
    """The settings part of `Estimator`: its constructor, `get_params`, `check_params` and `build_settings`,
    all from the declarations (`CommonSettings` and the model's `Settings`)."""

    #: the model's own settings, declared once (`bayes_wsc.settings`): a frozen dataclass whose fields are the
    #: constructor's keywords beyond every estimator's (`CommonSettings`), with their defaults, the values each
    #: takes, whether `build_model` gets it and its command-line help. `__init__`, `get_params`,
    #: `build_settings` and `check_params` come from it; a subclass declaring its own gets an `__init__` of
    #: its own settings and the common ones (not its base class's)
    Settings: ClassVar[type] = NoSettings

    def __init__(self, **settings):
        """Every declared setting (the class's `Settings` and `CommonSettings`) from its keyword, or its
        default: keyword-only, nothing checked until `check_params` (scikit-learn style)."""
        names = setting_names(type(self))
        unknown = [name for name in settings if name not in names]
        if unknown:
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {unknown[0]!r}")
        for name, default in names.items():
            setattr(self, name, settings.get(name, default))

    __init__._from_settings = True

    def get_params(self) -> dict:
        """Every constructor argument by name, as scikit-learn does: the declared settings, and the keywords of
        any `__init__` a subclass writes by hand (a model declared the older way)."""
        names = []
        for cls in type(self).__mro__:
            init = vars(cls).get("__init__")
            if getattr(init, "_from_settings", False):
                names += list(setting_names(type(self)))
                break
            if init is not None:
                names += _keyword_names(init)
        return {n: getattr(self, n) for n in dict.fromkeys(names)}

    def check_params(self) -> None:
        """Every setting in range, before any data is touched: each declared one by its rule (`CommonSettings`,
        then the model's `Settings`: one line naming the first wrong setting and its value; a parsed value kept
        as parsed), then the rules between settings (a subclass adds its own after `super()`)."""
        from bayes_wsc.backends import check_precision_backend, default_backend

        for declaration in (CommonSettings, type(self).Settings):
            for name, value in checked(declaration, {n: getattr(self, n) for n in _names(declaration)}).items():
                if value is not getattr(self, name):
                    setattr(self, name, value)
        if self.method == "nuts":  # before the MAP start, not after it
            check_precision_backend(self.precision, self.backend or default_backend())
        self._check_model_settings()

    def _check_model_settings(self) -> None:
        """A variant's own settings: a mapping of names to JSON values (stored in the fit), and none
        at all without a variant file (`_recipe` checks them against the variant's build_model)."""
        settings = self.model_settings
        if settings is None:
            return
        if not isinstance(settings, dict) or not all(isinstance(k, str) and k.isidentifier() for k in settings):
            raise InputError(f"model_settings must be a mapping of setting names to values, got {settings!r}")
        if settings and self.model_file is None:
            raise InputError(f"the {self.model_name} model takes no setting {next(iter(settings))!r}: "
                             "model_settings (--set) are for a variant file (model_file, --model)")
        try:
            json.dumps(settings, allow_nan=True)
        except (TypeError, ValueError):
            raise InputError(f"model_settings values must be numbers, booleans, None or text, got {settings!r}") \
                from None

    def build_settings(self) -> dict:
        """The model's own settings that `build_model` takes (a variant file receives them too): those its
        `Settings` declare with `build=True`, as `build_model` takes them (`as_built`)."""
        return built(type(self).Settings, {n: getattr(self, n) for n in _names(type(self).Settings)})


DeclaredSettings.__init__.__signature__ = _settings_signature(DeclaredSettings)


def _keyword_names(function) -> list[str]:
    return [p.name for p in inspect.signature(function).parameters.values() if p.kind is p.KEYWORD_ONLY]
