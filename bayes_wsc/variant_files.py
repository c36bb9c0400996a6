"""Variant files: a user's model file (`model_file`, `--model FILE.py`), read, checked and run.

A variant replaces the model and its hooks (`recipe`); its settings are checked against its
`build_model` before any work, and its failures, `sys.exit()` included, are one `InputError` line
naming the file (`variant_errors`). What reading its fit needs (`VariantFacts`: sha256, build_model's
settings, how many `CHECKS`) is stored in the fit, so that a loaded fit never imports a file: its own
checks run only from a file the user names whose hash matches (`use_variant_file`). Apart from the
estimator's lifecycle because it runs user code and has rules of its own; the estimator's methods of the
same names delegate here.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.util
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from bayes_wsc import inference
from bayes_wsc.errors import InputError
from bayes_wsc.settings import option_of
from bayes_wsc.value_checks import _shown

#: the attr of a variant's fit holding its `VariantFacts`
VARIANT_ATTR = "variant"


class VariantFacts(NamedTuple):
    """What reading a variant's fit needs, stored in the fit when it is made (`VARIANT_ATTR`), so that
    `load` and every read-only command never import the file: its source and that source's sha256 (a
    file named later must match it), the settings its `build_model` takes by name, and how many
    `CHECKS` it declares (None: none declared)."""

    source: str
    sha256: str | None
    build_model_takes: tuple[str, ...]
    checks: int | None

    def stored(self) -> dict:
        return {"sha256": self.sha256, "build_model_takes": list(self.build_model_takes), "checks": self.checks}

    @classmethod
    def from_attrs(cls, attrs: dict) -> VariantFacts:
        """A saved fit's facts; a fit written before fits stored them is read from the source it kept,
        parsed without running it (`ast`), or, without one, as a variant taking no setting and no checks."""
        source = attrs.get("model_source") if isinstance(attrs.get("model_source"), str) else ""
        stored = attrs.get(VARIANT_ATTR)
        if isinstance(stored, dict):
            return cls(source, stored["sha256"], tuple(stored["build_model_takes"]), stored.get("checks"))
        return cls(source, None, *_parsed_variant(source))


class Recipe(NamedTuple):
    """How a fit builds and starts its model (`Estimator._recipe`)."""

    build: Callable
    initial_values: Callable
    start_nuts_at_map: bool
    map_fixed: Callable


def recipe(est) -> Recipe:
    """How this fit builds and starts its model: the class's own hooks, or a variant's.

    A variant file in `model_file` must define `build_model(data, **settings)`, which gets the
    model's settings (`build_settings`) and the variant's own (`model_settings`). Its
    `initial_values` and `map_fixed` are its own or none at all, never the class's (a variant's
    parameters are not the base model's): each is `hook(data)` or `hook(data, estimator)`, the
    second to read the estimator's settings or reuse its hooks. `START_NUTS_AT_MAP = False`
    starts the chains from the initial values instead of the MAP, for a variant whose posterior
    mode is degenerate (a learned noise scale collapsing to 0).
    """
    if est.model_file is None:
        return Recipe(est.build_model, est.initial_values, True, est.map_fixed)
    own = est.model_settings or {}
    clash = sorted(set(own) & set(est.build_settings()))
    if clash:
        option = option_of(type(est).Settings, clash[0])
        raise InputError(f"--set {clash[0]} (model_settings): {clash[0]!r} is a setting of the {est.model_name} "
                         f"model itself: give it with --{option} on the command line, or as the estimator's "
                         f"{clash[0]}= in Python")
    variant = est._variant_code("fit it")
    _check_accepts(variant.build_model, {**est.build_settings(), **own}, est.model_file)

    def build(data):
        settings = {**est.settings_for(data), **own}
        with est.variant_errors("build_model"):
            model = variant.build_model(data, **settings)
        if not (getattr(model, "observed_RVs", None) or getattr(model, "potentials", None)):
            raise InputError(f"model file {str(est.model_file)!r}: its build_model's model observes nothing (no "
                             "observed variable and no pm.Potential), so the data never enter: its fit would be "
                             "its prior. Give the likelihood observed=... or add it as a pm.Potential")
        return model

    def hook(name):
        function = getattr(variant, name, None)
        if function is None:
            return lambda data: {}
        return lambda data: function(data, est) if _takes_two(function) else function(data)

    return Recipe(build, hook("initial_values"), bool(getattr(variant, "START_NUTS_AT_MAP", True)),
                  hook("map_fixed"))


@contextlib.contextmanager
def variant_errors(est, stage: str):
    """`Estimator.variant_errors`: a variant's failure in `stage` as one `InputError` line naming its file."""
    if est.model_file is None:
        yield
        return
    try:
        yield
    except InputError:
        raise
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code: one line here, even sys.exit()
        raise InputError(f"model file {str(est.model_file)!r}: {stage} failed: {_one_line(exc)}") from exc


def variant_checks(est) -> list | None:
    """`Estimator.variant_checks`: a variant file's own `CHECKS`, or None."""
    if est.model_file is None:
        return None
    count = est.variant_facts().checks
    if count is None or count == 0:
        return None if count is None else []
    return list(est._variant_code("run its own checks (CHECKS)").CHECKS)


def variant_facts(est) -> VariantFacts:
    """`Estimator.variant_facts`: from the fit file when the fit was loaded, else from the variant file."""
    stored = est.__dict__.get("_variant_stored")
    if stored is not None:
        return stored
    return est._loaded_variant()[1]


def loaded_variant(est) -> tuple:
    """(module, facts) of `model_file`, imported once (it runs as code: only at fit time, or from a
    file the user named for a loaded fit)."""
    loaded = est.__dict__.get("_variant_module")
    if loaded is None or loaded[0] != str(est.model_file):
        module, facts = read_variant(est.model_file)
        loaded = est._variant_module = (str(est.model_file), module, facts)
    return loaded[1], loaded[2]


def variant_code(est, purpose: str):
    """The variant's module, to run its code for `purpose`: a fit being made imports its file; a loaded
    fit only a file the user named (`use_variant_file`), else one line saying how to name it."""
    if "_variant_stored" in est.__dict__ and "_variant_module" not in est.__dict__:
        raise InputError(f"this fit was made with the variant file {str(est.model_file)!r}; to {purpose}, "
                         "name that file (bayes-wsc check FIT.nc --model FILE.py, or est.use_variant_file(path) "
                         "in Python): a fit file never runs code")
    return est._loaded_variant()[0]


def use_variant_file(est, path) -> None:
    """`Estimator.use_variant_file`: the fit's variant's code from `path`, the file it was made with."""
    est._check_fitted()
    if est.model_file is None:
        raise InputError(f"model file {str(path)!r}: this fit is of the default {est.model_name} model, not "
                         "of a variant file: it has no model file to name")
    path = Path(path)
    if not path.is_file():
        raise InputError(f"model file {str(path)!r} does not exist")
    content = path.read_bytes()
    stored = est.variant_facts().sha256
    source = inference.get_attrs(est._fitted()).get("model_source")
    if stored is not None:
        same = hashlib.sha256(content).hexdigest() == stored
    else:
        same = isinstance(source, str) and _source_text(content) == source
    if not same:
        what = f"sha256 {stored[:12]}..." if stored else "source"
        raise InputError(f"model file {str(path)!r} is not the file this fit was made with (its {what} differs "
                         "from the one the fit stored): nothing of it was run")
    module, facts = read_variant(path)
    est._variant_module = (str(est.model_file), module, facts)


def read_variant(path) -> tuple:
    """Import a model-variant file (it runs as code, like any Python module), check it, and say what a
    fit of it stores (`VariantFacts`): (module, facts). Its `CHECKS` are checked here, before any fit."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"model file {str(path)!r} does not exist")
    if path.suffix != ".py":
        raise InputError(f"model file {str(path)!r} is not a Python file: a variant is a .py file defining "
                         "build_model(data, **settings) (see models/)")
    content = path.read_bytes()
    spec = importlib.util.spec_from_file_location(f"bayes_wsc_variant_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - any failure of user code in one line, even sys.exit()
        raise InputError(f"model file {str(path)!r} failed to load: {_one_line(exc)}") from None
    if not callable(getattr(module, "build_model", None)):
        raise InputError(f"model file {str(path)!r} defines no build_model(data, **settings) function")
    checks = getattr(module, "CHECKS", None)
    if checks is not None and (not isinstance(checks, (tuple, list)) or not all(callable(c) for c in checks)):
        raise InputError(f"model file {str(path)!r}: CHECKS must be a tuple of functions check(est, data, seed) "
                         f"returning a list of Check rows, got {_shown(checks)}")
    try:
        takes = tuple(inspect.signature(module.build_model).parameters)
    except (TypeError, ValueError):
        takes = ()
    facts = VariantFacts(_source_text(content), hashlib.sha256(content).hexdigest(), takes, None if checks is None else len(checks))
    return module, facts


def load_variant(path):
    """Import a model-variant file (it runs as code, like any Python module) and check it."""
    return read_variant(path)[0]


def _parsed_variant(source: str) -> tuple[tuple[str, ...], int | None]:
    """(build_model's parameter names, how many CHECKS) read from a variant's source without running it."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return (), None
    takes, checks = (), None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "build_model":
            args = node.args
            takes = tuple(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "CHECKS" for t in targets):
            value = node.value
            checks = (None if isinstance(value, ast.Constant) and value.value is None
                      else len(value.elts) if isinstance(value, (ast.Tuple, ast.List)) else 1)
    return takes, checks


def _source_text(content: bytes) -> str:
    """A variant's source as a fit keeps it: UTF-8 text with newlines as Python reads them."""
    return content.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")


def _takes_two(function) -> bool:
    """Whether a variant's hook takes (data, estimator) rather than (data)."""
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params)


def _check_accepts(build_model, settings: dict, path) -> None:
    """A variant's `build_model` takes every setting it will be given (one line if not)."""
    try:
        params = inspect.signature(build_model).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    missing = [k for k in settings if k not in params or params[k].kind is params[k].POSITIONAL_ONLY]
    if missing:
        takes = [n for n, p in params.items() if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)][1:]
        raise InputError(f"model file {str(path)!r}: build_model takes no setting {missing[0]!r} "
                         f"(it takes {', '.join(takes) or 'none'}; add {missing[0]}=... or **settings)")


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):  # a variant is not the program: its sys.exit() ends nothing
        return f"it called sys.exit({exc.code!r})"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__
