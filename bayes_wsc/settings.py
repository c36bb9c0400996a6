"""A model's settings, declared once: a frozen dataclass whose fields (`setting`) say each setting's default,
the values it takes (`Rule`), whether `build_model` gets it, and its command-line option's help.

From that one declaration come the estimator's keyword-only `__init__`, `get_params`, `build_settings` and
the check of every value before any work (`Estimator.Settings`; one `InputError` line naming the setting
and the value), and the `bayes-wsc fit` options of the plain settings (`commands.common.add_setting_options`).
A setting whose value is parsed (a number given as text, WH's "inf") declares its parser (`parse`). Standard
library only: a model's command declares its options from it at start-up without loading the model.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from bayes_wsc.errors import InputError

#: the key of a field's metadata that holds its `Spec`
SPEC = "bayes_wsc"


@dataclasses.dataclass(frozen=True)
class Rule:
    """The values a setting takes: `words`, as an error says them ("a positive number"), and `test` of a value;
    `kind` says what the command line parses for it (`commands.common.OPTION_TYPES`; None: no plain option),
    `choices` the values of a choice."""

    words: str
    test: Callable[[Any], bool]
    kind: str | None = None
    choices: tuple = ()


def is_real(value) -> bool:
    """A finite real number (not a bool)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def is_whole(value) -> bool:
    """A whole number (not a bool)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


POSITIVE = Rule("a positive number", lambda v: is_real(v) and v > 0, "positive")
BOOLEAN = Rule("True or False", lambda v: isinstance(v, bool), "flag")


def whole(lowest: int = 1) -> Rule:
    """A whole number >= `lowest` (a count: restarts, clusters)."""
    return Rule(f"a whole number >= {lowest}", lambda v: is_whole(v) and v >= lowest,
                "positive_int" if lowest == 1 else None)


def at_least(lowest: float, note: str = "") -> Rule:
    """A finite number >= `lowest`; `note` follows the words ("(1.01 in the paper)"). Its option reads a positive
    number when `lowest` > 0 (the estimator's check then names the bound)."""
    return Rule(f"a number >= {lowest:g}{f' {note}' if note else ''}", lambda v: is_real(v) and v >= lowest,
                "positive" if lowest > 0 else None)


def one_of(choices, words: str | None = None) -> Rule:
    """One of the texts `choices`."""
    choices = tuple(choices)
    return Rule(words or f"one of {choices!r}", lambda v: isinstance(v, str) and v in choices, "choices", choices)


def or_none(rule: Rule, meaning: str | None = None, *, said: bool = True) -> Rule:
    """`rule`, or None (the default: `meaning` says what None means). `said=False` keeps the words as they were."""
    words = rule.words if not said else f"None{f' ({meaning})' if meaning else ''} or {rule.words}"
    return dataclasses.replace(rule, words=words, test=lambda v: v is None or rule.test(v))


def real(name: str, value, *, infinite: bool = False) -> float:
    """A real setting as a float, given as a number or as text ("4", "inf" where `infinite` allows it): >= 0,
    finite unless `infinite`; else one line naming it (the Python API's twin of the command line's `number`)."""
    given, what = value, "a number or inf" if infinite else "a number >= 0"
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise InputError(f"{name} must be {what}, got {given!r}") from None
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise InputError(f"{name} must be {what}, got {given!r}")
    if math.isnan(value) or value < 0 or (math.isinf(value) and not infinite):
        raise InputError(f"{name} must be {'>= 0 or inf' if infinite else 'a finite number >= 0'}, got {given!r}")
    return float(value)


@dataclasses.dataclass(frozen=True)
class Spec:
    """What a field of a settings dataclass declares beyond its name, type and default (`setting`)."""

    rule: Rule | None = None
    label: str | None = None
    parse: Callable[[str, Any], Any] | None = None
    build: bool = True
    as_built: Callable[[Any], Any] | None = None
    help: str | None = None
    metavar: str | None = None
    required: bool = False
    option: str | None = None

    def checked(self, name: str, value):
        """The value as the estimator keeps it (`parse`d), or one `InputError` line naming the setting."""
        label = self.label or name
        if self.parse is not None:
            value = self.parse(label, value)
        if self.rule is not None and not self.rule.test(value):
            raise InputError(f"{label} must be {self.rule.words}, got {value!r}")
        return value


def setting(default, rule: Rule | None = None, *, help: str | None = None, label: str | None = None,  # noqa: A002
            parse: Callable[[str, Any], Any] | None = None, build: bool = True,
            as_built: Callable[[Any], Any] | None = None, metavar: str | None = None, required: bool = False,
            option: str | None = None):
    """One setting of a settings dataclass: its default, the values it takes (`rule`, after `parse` when its
    value is parsed: `parse(label, value)` returns the value kept or raises `InputError`), how errors name it
    (`label`, default its name), whether `build_model` takes it (`build`, as `as_built(value)`: float...), and
    its `bayes-wsc fit` option, --name-with-dashes (`help`; None: no plain option; `metavar`, `required` on the
    command line though Python has a default; `option`, the option's name without its dashes when it is not
    the setting's name with dashes: an option written by hand, such as experts' --clusters for n_clusters)."""
    spec = Spec(rule, label, parse, build, as_built, help, metavar, required, option)
    return dataclasses.field(default=default, metadata={SPEC: spec})


@dataclasses.dataclass(frozen=True)
class NoSettings:
    """A model without settings of its own (the default of `Estimator.Settings`)."""


class Declared(NamedTuple):
    """One declared setting: its name, default and `Spec`."""

    name: str
    default: Any
    spec: Spec


def declared(settings_class: type) -> tuple[Declared, ...]:
    """The settings a dataclass declares, in order: (name, default, `Spec`) each."""
    return tuple(Declared(f.name, f.default, f.metadata.get(SPEC, Spec())) for f in dataclasses.fields(settings_class))


def option_of(settings_class: type, name: str) -> str:
    """The `bayes-wsc fit` option of setting `name`, without its dashes: its declared `option`, else its name with
    dashes (also for a name the class does not declare)."""
    found = {d.name: d.spec.option for d in declared(settings_class)}.get(name)
    return found or name.replace("_", "-")


def checked(settings_class: type, values: Mapping[str, Any]) -> dict:
    """Each value of `values` checked by its declared setting, in the declared order: the values as kept
    (parsed), or the first one's `InputError`."""
    return {d.name: d.spec.checked(d.name, values[d.name]) for d in declared(settings_class) if d.name in values}


def built(settings_class: type, values: Mapping[str, Any]) -> dict:
    """The settings `build_model` takes (`build`), as it takes them (`as_built`)."""
    return {d.name: d.spec.as_built(values[d.name]) if d.spec.as_built else values[d.name]
            for d in declared(settings_class) if d.spec.build}
