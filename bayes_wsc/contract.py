"""The contract of a model's parts, in code: what each per-model module must define, and the rules a fit's
answers keep.

A model is an `Estimator` subclass (whose own contract `Estimator.__init_subclass__` checks when the class
is defined; its settings are declared once, as its `Settings`, `bayes_wsc.settings`) and, when registered
(`registry.py`), four modules found by role: its command line (`CommandsModule`), its checks
(`ChecksModule`), its report (`ReportModule`) and its simulations (`SimulateModule`). Each role is declared below as a `typing.Protocol`: the names every such module
defines, and groups of optional names that come all together or not at all (`OPTIONAL`). The registry
checks a module against its role when it first imports it (`check_module`): a module lacking a name is
one `ContractError` line naming the model, the module and what is missing.

Two rules that every model's answers keep are stated here too, as functions the public contract suite
(`bayes_wsc.testing`) runs on any model:

* `prediction_problems`: `predict` gives one row per input row, every input column as given, `prob*`
  columns in [0, 1], and `*_low`/`*_high` interval columns in pairs, empty after a MAP (a single point has
  no interval) and ordered low <= high otherwise;
* `unclassified_variables`: every posterior variable of the model's own fit is an estimand (summarized),
  internal (`internal_variables`: sampler coordinates) or per unit of the data (along `unit_dims`): none
  is shown as if it were a variant's own.

Nothing here imports more than the standard library at import time (the registry reads it at start-up).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class ContractError(TypeError):
    """A model, or one of its parts, does not keep the contract: a fault of the model's code, not of the
    user's input (that is `InputError`)."""


class CommandsModule(Protocol):
    """`bayes-wsc fit NAME` and `bayes-wsc simulate NAME` (models/<name>/command.py): options and runs.
    Optional groups: `path` (`bayes-wsc path NAME`, a weight swept over a grid), `baselines`
    (`bayes-wsc baseline KEY`: `BASELINES = {key: (help, add_parser, run)}`), `predict_options` and
    `baseline_model` (what `bayes-wsc predict` takes of this model only)."""

    HELP: str
    SIMULATE_HELP: str
    SIMULATE_FILES: tuple[str, ...]

    def add_parser(self, parser) -> None: ...

    def run(self, args) -> None: ...

    def add_simulate_parser(self, parser) -> None: ...

    def run_simulate(self, args) -> None: ...


class PathCommand(Protocol):
    """Optional part of a commands module: `bayes-wsc path NAME`."""

    PATH_HELP: str

    def add_path_parser(self, parser) -> None: ...

    def run_path(self, args) -> None: ...


class BaselineCommands(Protocol):
    """Optional part of a commands module: the paper's own algorithms as `bayes-wsc baseline KEY`."""

    BASELINES: dict[str, tuple[str, Callable, Callable]]


class PredictOptions(Protocol):
    """Optional part of a commands module: options of `bayes-wsc predict` that only this model's fits take,
    setting of its `predict` (listed in its estimator's `predict_options`) -> (flag, argparse keywords)."""

    PREDICT_OPTIONS: dict[str, tuple[str, dict]]


class BaselineModelReader(Protocol):
    """Optional part of a commands module: `bayes-wsc predict` from a baseline's saved model (JSON) rather than
    a fit; `read_baseline_model(path)` gives an object with `key_columns()` and `predict(items)`, or raises
    `InputError` for a file that is not its baseline's."""

    def read_baseline_model(self, path): ...


class ChecksModule(Protocol):
    """A model's checks (models/<name>/checks.py), run by `criticism.py`, and one of `DefaultLikelihood` or
    `LikelihoodTerms` (how `model_terms.py` tells a variant's terms from the default model's). Optional:
    `unit_label(idata, label)` (a unit of the log-likelihood named as the user knows it), `REPLICATE_ROWS`."""

    def variates(self, data) -> int: ...

    def parameters(self, posterior) -> list[str]: ...

    def replicate(self, est, data, params: dict, rng) -> Any: ...

    def rows(self, est, data, replicates) -> list: ...

    def targeted(self) -> list: ...


class DefaultLikelihood(Protocol):
    """A checks module's default model's pointwise log-likelihood in NumPy, one term."""

    def default_log_likelihood(self, est, data, params: dict) -> Any: ...


class LikelihoodTerms(Protocol):
    """A checks module's likelihood of several terms (`TERMS`), each said default, own or unverified."""

    TERMS: tuple[str, ...]

    def likelihood_terms(self, est, data, params: dict, recorded: dict, model) -> dict[str, str]: ...


class ReportModule(Protocol):
    """A model's HTML report (models/<name>/report.py)."""

    def write_report(self, est, out_dir, **kwargs): ...


class SimulateModule(Protocol):
    """A model's simulations (models/<name>/simulate.py): small example data for tests and `sbc_case` for SBC."""

    def example(self, seed: int = 0): ...

    def sbc_case(self, *args, **kwargs): ...


#: role (a `registry.ModelSpec` field) -> the protocol its module follows
ROLES: dict[str, type] = {"commands": CommandsModule, "checks": ChecksModule, "report": ReportModule,
                          "simulate": SimulateModule}
#: role -> {group: protocol}: optional names, all of a group or none of it
OPTIONAL: dict[str, dict[str, type]] = {"commands": {"path": PathCommand, "baselines": BaselineCommands,
                                                    "predict_options": PredictOptions,
                                                    "baseline_model": BaselineModelReader}}
#: role -> protocols of which a module defines one whole
ONE_OF: dict[str, tuple[type, ...]] = {"checks": (DefaultLikelihood, LikelihoodTerms)}


def members(protocol: type) -> tuple[str, ...]:
    """The names a protocol declares: its methods and its annotated attributes."""
    names = [n for n, v in vars(protocol).items() if callable(v) and not n.startswith("_")]
    names += [n for n in vars(protocol).get("__annotations__", {}) if not n.startswith("_")]
    return tuple(dict.fromkeys(names))


def missing(protocol: type, module) -> list[str]:
    """The names of `protocol` that `module` does not define (a method must be callable)."""
    out = []
    for name in members(protocol):
        value = getattr(module, name, None)
        if value is None or (callable(getattr(protocol, name, None)) and not callable(value)):
            out.append(name)
    return out


def offers(module, role: str, group: str) -> bool:
    """Whether a module of `role` has the optional `group` (`OPTIONAL`): the command line asks this instead
    of probing names one by one."""
    return not missing(OPTIONAL[role][group], module)


def module_problems(role: str, module) -> list[str]:
    """What a module of `role` lacks: its protocol's names, and the part-present optional groups."""
    problems = missing(ROLES[role], module)
    choices = ONE_OF.get(role, ())
    if choices and all(missing(p, module) for p in choices):
        problems.append(" or ".join(f"{p.__name__} ({', '.join(members(p))})" for p in choices))
    for group, protocol in OPTIONAL.get(role, {}).items():
        lacking = missing(protocol, module)
        if lacking and len(lacking) < len(members(protocol)):
            problems += [f"{name} (the rest of its optional {group} part)" for name in lacking]
    return problems


def check_module(model: str, role: str, module) -> None:
    """One `ContractError` line naming the model, its module and every name of its role it lacks."""
    problems = module_problems(role, module)
    if problems:
        raise ContractError(f"model {model!r}: its {role} module {module.__name__} does not define "
                            f"{', '.join(problems)}, which every {role} module must "
                            f"(bayes_wsc.contract.{ROLES[role].__name__})")


# ---------------------------------------------------------------------- rules a fit's answers keep


def probability_columns(pred, items) -> list[str]:
    """The `prob*` columns `predict` added (not the intervals, not an input column)."""
    bounds = {c for pair in interval_columns(pred) for c in pair}
    return [c for c in pred.columns if str(c).startswith("prob") and c not in items.columns and c not in bounds]


def interval_columns(pred) -> list[tuple[str, str]]:
    """(low, high) column pairs of a prediction table, by their `_low` columns. A column with an interval of
    its own is an estimate, not a bound: a class named "low" gives `prob_low` with `prob_low_low` and
    `prob_low_high` beside it, while `prob_low` of a chosen class's probability has none."""
    return [(c, c[:-len("_low")] + "_high") for c in pred.columns
            if str(c).endswith("_low") and f"{c}_low" not in pred.columns]


def prediction_problems(pred, items, *, has_draws: bool) -> list[str]:
    """What a `predict` table breaks of the contract, in words (empty when it keeps it): one row per input
    row in the input's order, every input column as given, at least one `prob*` column within [0, 1], and
    `*_low`/`*_high` columns in pairs, empty when the fit has no draws (a MAP) and low <= high otherwise."""
    import numpy as np
    import pandas as pd

    if not isinstance(pred, pd.DataFrame):
        return [f"predict returned a {type(pred).__name__}, not a pandas DataFrame"]
    problems = []
    if len(pred) != len(items):
        problems.append(f"predict gave {len(pred)} rows for {len(items)} input rows (one row per input row)")
    elif not pred.index.equals(items.index):
        problems.append("predict changed the index of the input rows (one row per input row, in order)")
    for column in items.columns:
        if column not in pred.columns:
            problems.append(f"predict dropped the input column {column!r}")
        elif len(pred) == len(items) and not pred[column].equals(items[column]):
            problems.append(f"predict changed the values of the input column {column!r}")
    probs = probability_columns(pred, items)
    if not probs:
        problems.append("predict gave no prob* column")
    for column in probs:
        values = pd.to_numeric(pred[column], errors="coerce").to_numpy(dtype=float)
        if not ((values >= 0) & (values <= 1)).all():
            problems.append(f"predict's {column!r} holds values outside [0, 1] (or not numbers)")
    pairs = interval_columns(pred)
    highs = {c for c in pred.columns if str(c).endswith("_high") and f"{c}_low" not in pred.columns}
    for column in sorted(highs - {high for _, high in pairs}, key=str):
        problems.append(f"predict's {column!r} has no matching _low column")
    if not pairs:
        problems.append("predict gave no *_low/*_high interval columns")
    for low, high in pairs:
        if high not in pred.columns:
            problems.append(f"predict's {low!r} has no matching _high column")
            continue
        lo, hi = (pred[c].to_numpy(dtype=float) for c in (low, high))
        if not has_draws:
            if not (np.isnan(lo).all() and np.isnan(hi).all()):
                problems.append(f"predict filled {low!r}/{high!r} from a fit without draws (a MAP has no interval)")
        elif not (lo <= hi + 1e-12)[np.isfinite(lo) & np.isfinite(hi)].all():
            problems.append(f"predict's {low!r} exceeds its {high!r}")
    return problems


def unclassified_variables(variables: dict[str, tuple[str, ...]], estimands, internal, unit_dims) -> list[str]:
    """The posterior variables (name -> dims) of a model's own fit that are neither an estimand, nor
    internal, nor per unit of the data: the contract says there are none (`summary` would show them as a
    variant's own)."""
    known = set(estimands) | set(internal)
    return [name for name, dims in variables.items()
            if name not in known and not any(d in unit_dims for d in dims)]
