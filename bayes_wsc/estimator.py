"""The lifecycle every model shares: settings in `__init__`, `fit`, `summary`, `save`, `load`.

`Estimator` is the contract of a model. A subclass must define what no
default can give, declared here with `abc.abstractmethod`:
`build_model(data)` (a `pm.Model`), `data_groups(data)` (what of the data
goes into the fit, so that a saved fit can be reloaded, predicted from and
checked), `data_from_fit()` (that data rebuilt from the fit, which the checks
and reports read) and `predict(items, *, ci)` (per-item answers for new items,
what `bayes-wsc predict` writes), and the class attributes `model_name`,
`estimands` and `data_class` (`REQUIRED_ATTRIBUTES`). A class that lacks one fails when it is
defined, naming what it lacks (`__init_subclass__`); a class meant as a base
of models says `class Base(Estimator, abstract=True)`. Every other hook has
a default that is right for any model.

Constructing an estimator never touches data or samples; `fit` does, and
sets the attributes with a trailing underscore (scikit-learn style). A
variant file (`model_file`) replaces the model and its hooks; it never
inherits the class's `initial_values` or `map_fixed` (see
`Estimator._recipe`).
"""

from __future__ import annotations

import abc
import ast
import contextlib
import dataclasses
import datetime
import hashlib
import importlib.util
import inspect
import json
import math
import numbers
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar, NamedTuple

from bayes_wsc import criticism
from bayes_wsc import contract, diagnostics, inference, registry
from bayes_wsc.comparison import compare  # noqa: F401  (bayes_wsc.compare, kept importable from here)
from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.backends import NUTS_BACKENDS, PRECISIONS
from bayes_wsc.settings import BOOLEAN, NoSettings, Rule, built, checked, declared, one_of, or_none, setting, whole
from bayes_wsc.version import package_version

METHODS = ("map", "nuts", "laplace")
#: where NUTS chains start: all at the best MAP, or chain c at the optimum of MAP restart c
CHAIN_STARTS = ("map", "restarts")
#: model name -> "module:Class", imported only when needed (from `registry.MODELS`)
REGISTRY = {spec.name: spec.estimator for spec in registry.MODELS}
#: the seed of a fit given none: identical data and settings give identical results (seed=None draws a fresh one)
DEFAULT_SEED = 0


#: the class attributes every model defines (`Estimator.__init_subclass__` checks them with the abstract methods)
REQUIRED_ATTRIBUTES = ("model_name", "estimands", "data_class")
#: the attr of a fit saved without its pointwise log-likelihood, which `load` computes on first use
LOG_LIKELIHOOD_LEFT_OUT = inference.LOG_LIKELIHOOD_LEFT_OUT
#: what a loaded fit keeps pending when its file left the log-likelihood out (`Estimator.save`)
SAVED_WITHOUT_LOG_LIKELIHOOD = "saved without it"
#: draws per chain whose pointwise log-likelihood a NUTS fit computes at fit time, for its Pareto k check
#: (`_thinned_fit`); the rest wait for first use (at 10,000 groups with mu integrated out, all 4000 draws
#: cost 30-50 s, a fifth of the run)
FIT_TIME_LOO_DRAWS = 250


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
        Estimator.__init__(self, **settings)

    __init__.__signature__ = _settings_signature(cls)
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__doc__ = Estimator.__init__.__doc__
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


class Estimator(abc.ABC):
    """Shared fit/summary/save/load; subclasses add the model and its predictions (the module docstring
    says what a subclass must define)."""

    model_name: ClassVar[str]
    #: variables shown by `summary` and checked by the diagnostics
    estimands: ClassVar[list[str]]
    #: what a saved fit must hold for `load` to use it: attrs, groups, and variables per InferenceData group
    required_attrs: ClassVar[tuple[str, ...]] = ("model", "method", "settings")
    required_groups: ClassVar[tuple[str, ...]] = ("posterior",)
    required_variables: ClassVar[dict[str, tuple[str, ...]]] = {}
    #: what a model's own attrs of a saved fit must be when present, name -> (words, test), besides
    #: `ATTR_KINDS`, which every fit's attrs follow
    attr_kinds: ClassVar[dict[str, tuple[str, Callable]]] = {}
    #: the closed range of every value of a posterior variable (probabilities, scales): a saved draw
    #: outside it, or not finite, is one the model cannot have produced (`load` leaves it out, warning)
    bounds: ClassVar[dict[str, tuple[float, float]]] = {}
    #: arithmetic of NumPyro's NUTS when `precision` is None: the measured choice per model
    #: (benchmarks/RESULTS.md); the other backends always run float64
    nuts_precision: ClassVar[str] = "float64"
    #: variables of the model itself deliberately left out of `summary` (sampler coordinates, per-unit values);
    #: every other posterior variable, a variant's own included, is summarized
    internal_variables: ClassVar[tuple[str, ...]] = ()
    #: dims that index the data's units (groups, items, pairs): variables along them are named in
    #: `summary_notes` instead of printed row by row
    unit_dims: ClassVar[tuple[str, ...]] = ()
    #: the model's Laplace intervals measured to cover less than NUTS's (`nested_laplace.Coverage`: Laplace's
    #: and NUTS's coverage and of what), which every Laplace fit of it says; None when not measured short
    laplace_coverage: ClassVar[tuple[float, float, str] | None] = None
    #: free variables coupled to each other only through the others (`laplace`: an arrow Hessian)
    laplace_local: ClassVar[tuple[str, ...]] = ()
    #: the command-line option of a model setting whose option is not its name with dashes (`--set` errors)
    setting_options: ClassVar[dict[str, str]] = {}
    #: settings of this model's `predict` beyond `ci` that `bayes-wsc predict` may pass (its model-specific options)
    predict_options: ClassVar[tuple[str, ...]] = ()
    #: the data container `fit` takes (`GroupedCounts`...): anything else is refused before any work
    data_class: ClassVar[type | None] = None

    def __init_subclass__(cls, abstract: bool = False, **kwargs):
        """A model class is checked when it is defined: every abstract method and required class attribute
        (`REQUIRED_ATTRIBUTES`) present, else a `TypeError` naming the class and what it lacks; a base
        of models says `abstract=True`. A model's own `fit` checks what it is given before its first
        line, as the base `fit` does: one place for every model (`check_data_type`)."""
        super().__init_subclass__(**kwargs)
        if not abstract:
            _check_contract(cls)
        if "Settings" in vars(cls):
            _check_settings_class(cls)
            if "__init__" not in vars(cls):
                cls.__init__ = _settings_init(cls)
        if "fit" in vars(cls) and not getattr(cls.fit, "_checks_data", False):
            cls.fit = _checking_data(cls.fit)
        if "predict" in vars(cls) and not getattr(cls.predict, "_names_missing", False):
            cls.predict = _naming_missing_variables(cls.predict)
        if "data_from_fit" in vars(cls) and not getattr(cls.data_from_fit, "_names_source", False):
            cls.data_from_fit = _naming_damaged_source(cls.data_from_fit)
        _check_levels(cls)

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

    # ------------------------------------------------------------------ settings
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

    # ------------------------------------------------------------------ hooks
    @abc.abstractmethod
    def build_model(self, data):
        """The model as a `pm.Model` with named dims, built on validated `data` (its `data_class`)."""

    @abc.abstractmethod
    def data_groups(self, data) -> dict:
        """observed_data, constant_data, their dims, extra_coords and attrs describing the data: what
        `data_from_fit` rebuilds the data from, so that a saved fit is checked, reported and predicted
        from without the original files."""

    def initial_values(self, data) -> dict | list[dict]:
        """Where the MAP starts (constrained scale); a list of starts means random restarts,
        of which the best log density is kept (and starts NUTS)."""
        return {}

    def map_fixed(self, data) -> dict:
        """Free variables held at these values (constrained scale) while the MAP is sought.

        The joint mode of a hierarchical model is degenerate: its density grows
        without bound as a group-level scale goes to 0 with every group at the
        common location, and L-BFGS can slide there (seen by simulation-based
        calibration: chains started at such a mode never leave it). Holding the
        scale at an estimate gives the conditional mode instead. None by default.
        """
        return {}

    def _recipe(self) -> Recipe:
        """How this fit builds and starts its model: the class's own hooks, or a variant's.

        A variant file in `model_file` must define `build_model(data, **settings)`, which gets the
        model's settings (`build_settings`) and the variant's own (`model_settings`). Its
        `initial_values` and `map_fixed` are its own or none at all, never the class's (a variant's
        parameters are not the base model's): each is `hook(data)` or `hook(data, estimator)`, the
        second to read the estimator's settings or reuse its hooks. `START_NUTS_AT_MAP = False`
        starts the chains from the initial values instead of the MAP, for a variant whose posterior
        mode is degenerate (a learned noise scale collapsing to 0).
        """
        if self.model_file is None:
            return Recipe(self.build_model, self.initial_values, True, self.map_fixed)
        own = self.model_settings or {}
        clash = sorted(set(own) & set(self.build_settings()))
        if clash:
            option = self.setting_options.get(clash[0], clash[0].replace("_", "-"))
            raise InputError(f"--set {clash[0]} (model_settings): {clash[0]!r} is a setting of the {self.model_name} "
                             f"model itself: give it with --{option} on the command line, or as the estimator's "
                             f"{clash[0]}= in Python")
        variant = self._variant_code("fit it")
        _check_accepts(variant.build_model, {**self.build_settings(), **own}, self.model_file)

        def build(data):
            settings = {**self.settings_for(data), **own}
            with self.variant_errors("build_model"):
                model = variant.build_model(data, **settings)
            if not (getattr(model, "observed_RVs", None) or getattr(model, "potentials", None)):
                raise InputError(f"model file {str(self.model_file)!r}: its build_model's model observes nothing (no "
                                 "observed variable and no pm.Potential), so the data never enter: its fit would be "
                                 "its prior. Give the likelihood observed=... or add it as a pm.Potential")
            return model

        def hook(name):
            function = getattr(variant, name, None)
            if function is None:
                return lambda data: {}
            return lambda data: function(data, self) if _takes_two(function) else function(data)

        return Recipe(build, hook("initial_values"), bool(getattr(variant, "START_NUTS_AT_MAP", True)),
                      hook("map_fixed"))

    def data_messages(self, data) -> list[str]:
        """Plain words, before anything is fitted, for data (or settings) that cannot identify what the
        model estimates: one group, one class in every label, a constant feature. `fit` warns with them
        at once and keeps them with the fit's diagnostics; a model raises `InputError` instead where no
        fit could mean anything. None by default."""
        return []

    def build_settings(self) -> dict:
        """The model's own settings that `build_model` takes (a variant file receives them too): those its
        `Settings` declare with `build=True`, as `build_model` takes them (`as_built`)."""
        return built(type(self).Settings, {n: getattr(self, n) for n in _names(type(self).Settings)})

    def settings_for(self, data) -> dict:
        """The settings `build_model` takes for these data: `build_settings`, with any setting that the
        model resolves against its data (proportions' bag likelihood "auto") resolved. What builds the
        model, keys its cached program and reaches a variant's `build_model`."""
        return self.build_settings()

    def check_data(self, data) -> None:
        """The model's own checks of `data` against its settings (a container validates itself when
        built; an emission that needs numeric features, or a likelihood that needs whole counts, is the
        model's to check): one `InputError` line. `fit` runs it after `check_data_type` and
        `check_params`, before any work. Nothing by default."""

    @contextlib.contextmanager
    def variant_errors(self, stage: str):
        """A variant's failure in `stage` as one `InputError` line naming its file (the cause chained,
        for the API); the package's own models raise as they are."""
        if self.model_file is None:
            yield
            return
        try:
            yield
        except InputError:
            raise
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code: one line here, even sys.exit()
            raise InputError(f"model file {str(self.model_file)!r}: {stage} failed: {_one_line(exc)}") from exc

    def model_inputs(self, data) -> tuple[dict, dict] | None:
        """(coords, values): the model's coordinates and every data-derived value its graph reads
        as `pm.Data`, by name, computed in NumPy without PyMC, with the data's checks. With them a
        MAP program is cached by structure and runs on new data of the same shapes (`map_program`).
        None (the default): no program is cached."""
        return None

    def variant_checks(self) -> list | None:
        """A variant file's own checks, which replace the model's (`criticism.run`): its `CHECKS`,
        functions (est, data, seed) -> list of `Check` (models/ecological_inference.py, which does not
        model the bins given the class, declares its own). None without a variant file (`model_file`)
        or when it declares none: then the model's checks run where the fit's terms are the default's
        (`model_terms`). A loaded fit whose variant declares checks runs them only from a file the user
        names (`use_variant_file`; `bayes-wsc check FIT.nc --model FILE.py`): a fit file never runs code."""
        if self.model_file is None:
            return None
        count = self.variant_facts().checks
        if count is None or count == 0:
            return None if count is None else []
        return list(self._variant_code("run its own checks (CHECKS)").CHECKS)

    def variant_facts(self) -> VariantFacts:
        """What reading a variant's fit needs (`VariantFacts`): from the fit file when the fit was loaded
        (never importing the variant), else from the variant file itself, loaded once per fit."""
        stored = self.__dict__.get("_variant_stored")
        if stored is not None:
            return stored
        return self._loaded_variant()[1]

    def _loaded_variant(self) -> tuple:
        """(module, facts) of `model_file`, imported once (it runs as code: only at fit time, or from a
        file the user named for a loaded fit)."""
        loaded = self.__dict__.get("_variant_module")
        if loaded is None or loaded[0] != str(self.model_file):
            module, facts = read_variant(self.model_file)
            loaded = self._variant_module = (str(self.model_file), module, facts)
        return loaded[1], loaded[2]

    def _variant_code(self, purpose: str):
        """The variant's module, to run its code for `purpose`: a fit being made imports its file; a loaded
        fit only a file the user named (`use_variant_file`), else one line saying how to name it."""
        if "_variant_stored" in self.__dict__ and "_variant_module" not in self.__dict__:
            raise InputError(f"this fit was made with the variant file {str(self.model_file)!r}; to {purpose}, "
                             "name that file (bayes-wsc check FIT.nc --model FILE.py, or est.use_variant_file(path) "
                             "in Python): a fit file never runs code")
        return self._loaded_variant()[0]

    def use_variant_file(self, path) -> None:
        """Let this loaded fit run its variant's own code (its `CHECKS`) from `path`, a file the user
        names: it must be the file the fit was made with (the sha256 the fit stored, or for a fit written
        before fits stored it, the same source), else one line and nothing is imported."""
        self._check_fitted()
        if self.model_file is None:
            raise InputError(f"model file {str(path)!r}: this fit is of the default {self.model_name} model, not "
                             "of a variant file: it has no model file to name")
        path = Path(path)
        if not path.is_file():
            raise InputError(f"model file {str(path)!r} does not exist")
        content = path.read_bytes()
        stored = self.variant_facts().sha256
        source = inference.get_attrs(self._fitted()).get("model_source")
        if stored is not None:
            same = hashlib.sha256(content).hexdigest() == stored
        else:
            same = isinstance(source, str) and _source_text(content) == source
        if not same:
            what = f"sha256 {stored[:12]}..." if stored else "source"
            raise InputError(f"model file {str(path)!r} is not the file this fit was made with (its {what} differs "
                             "from the one the fit stored): nothing of it was run")
        module, facts = read_variant(path)
        self._variant_module = (str(self.model_file), module, facts)

    def _laplace_local(self) -> tuple[str, ...]:
        """`laplace_local`, or a variant file's `LAPLACE_LOCAL`."""
        if self.model_file is None:
            return tuple(self.laplace_local)
        return tuple(getattr(self._variant_code("fit it"), "LAPLACE_LOCAL", ()))

    # ------------------------------------------------------------------ fitting
    def fit(self, data):
        """Build the model on validated `data`, fit it, diagnose it; sets `idata_` and `model_`.

        A MAP runs from a compiled program kept on disk (`map_program`) when
        this model, with these settings, was fitted to these data before: then
        PyMC is not loaded, and `model_` is built on first use.
        """
        from bayes_wsc.backends import default_backend

        self.check_data_type(data)
        for name in ("_variant_stored", "_variant_module", "_source"):  # a refit reads the variant file as it is now
            self.__dict__.pop(name, None)
        self.check_params()
        self.check_data(data)
        recipe = self._recipe()
        self._model, self._model_recipe = None, (recipe.build, data)
        with self.variant_errors("initial_values"):
            starts = recipe.initial_values(data)
        starts = [starts] if isinstance(starts, dict) else list(starts)  # a list means random restarts
        # what the data or settings cannot give, said before the fit starts (and kept with it)
        with self.variant_errors("data_messages"):
            early = list(self.data_messages(data))
        for message in early:
            warnings.warn(message, FitWarning, stacklevel=2)
        messages, fit_info, map_draws = list(early), {}, None
        coords, dims = None, None
        if self.method != "nuts" or recipe.start_nuts_at_map:
            with self.variant_errors("map_fixed"):
                fixed = recipe.map_fixed(data)
            laplace = {"jacobian": True, "local": list(self._laplace_local())} if self.method == "laplace" else None
            with self.variant_errors("the MAP"):
                program, fixed, inputs, coords = self._map_program(data, starts, fixed, laplace)
                from bayes_wsc.map_program import run_map

                draws, x_map = run_map(program, _restricted(starts, program.free), inputs, fixed=fixed)
                map_draws = draws
                self.order_clusters(draws, program.dims, data)
            messages += diagnostics.map_messages(draws.info)
            fit_info["map"] = draws.info
            fit_info["free_variables"] = [*program.free, *fixed]
            dims = program.dims
            start = {n: draws.posterior[n][0, 0] for n in (*program.free, *fixed)}
            if self.chain_starts == "restarts" and draws.optima:
                # chain c at restart c's optimum: other labelings, maybe other modes, for relabeling to face
                start = [draws.optima[c % len(draws.optima)] for c in range(self.chains)]
            if self.method == "nuts":
                held = {n: draws.posterior[n][0, 0] for n in fixed}
                initial = [{**dict(s or {}), **held} for s in starts]
                start, said = nondegenerate_start(start, draws, self.chain_starts, self.chains, initial)
                messages += said
        else:
            start = starts[0] if len(starts) == 1 else starts
        if self.method == "laplace":
            from bayes_wsc.laplace import run_laplace

            draws, found = run_laplace(program, inputs, x_map, draws=self.draws, seed=self.seed, fixed=fixed,
                                       defer_log_likelihood=True)
            fit_info["laplace"] = draws.info
            dims = {**(dims or {}), **self.complete_draws(draws, data)}  # nested: the locals from their conditionals
            from bayes_wsc.nested_laplace import laplace_warnings

            found += laplace_warnings(draws.info, self.laplace_coverage)
            messages += found + self.align_draws(draws, map_draws, data, free=fit_info["free_variables"], dims=dims)
            if not recipe.start_nuts_at_map and draws.info.get("form") != "nested":
                messages.append("this model's file says its posterior mode is not a useful summary "
                                "(START_NUTS_AT_MAP = False), and the Laplace approximation is a Gaussian at "
                                "that mode: do not trust its intervals; fit with NUTS.")
        if self.method == "nuts":
            from bayes_wsc.fit import fit_nuts, model_labels

            model = self.model_
            free = [rv.name for rv in model.free_RVs]
            start = _restricted(start, set(free))
            start = [self.nuts_start(s) for s in start] if isinstance(start, list) else self.nuts_start(start)
            backend = self.backend or default_backend()
            precision = self.precision or (self.nuts_precision if backend == "numpyro" else "float64")
            with self.variant_errors("NUTS"):
                draws = fit_nuts(model, draws=self.draws, tune=self.tune, chains=self.chains, seed=self.seed,
                                 initvals=start, backend=backend, target_accept=self.target_accept,
                                 progressbar=self.progressbar, precision=precision, **self.nuts_options())
                labels = model_labels(model)
                coords, dims = labels["coords"], {**labels["dims"], **self.complete_draws(draws, data)}
                fit_info["nuts"] = draws.info
                fit_info["free_variables"] = free
                messages += self.align_draws(draws, map_draws, data, free=free, dims=dims)
        self.__dict__.pop("_idata", None)
        self.__dict__.pop("_pending_log_likelihood", None)
        self._mode = map_draws
        self._fit_terms, found = self._likelihood_terms(draws, data)
        messages += found
        holds = None
        if draws.deferred is not None:  # Laplace, and NUTS where asked: the pointwise log-likelihood waits for first use
            self._pending_log_likelihood = (draws, data, dims)
        else:
            holds = self.pointwise_log_likelihood(draws, data)
        check_finite(draws.posterior)
        self._groups = self._assemble(coords, dims, draws, data, fit_info)
        if self._fit_terms is not None:
            inference.set_attrs(self._fitted(), {"likelihood_terms": self._fit_terms})
        if "log_likelihood" in self._groups and draws.deferred is None:
            inference.set_attrs(self._fitted(), {"log_likelihood_holds": holds or self._recorded_words()})
        with self.variant_errors("the diagnostics"):
            if self.method == "nuts":
                messages += diagnostics.nuts_messages(self._fitted(), self.diagnosed_names())
        with self.variant_errors("model_checks"):
            messages += self.model_checks(self._fitted())
        # a check's own refits do not check again; a model without a checks module has none
        if self.checks and not criticism.running() and self.model_name in criticism.MODULES:
            messages += self._fit_time_checks(data)
        inference.set_attrs(self._fitted(), {"diagnostics": messages})
        for message in messages[len(early):]:
            warnings.warn(message, FitWarning, stacklevel=2)
        return self

    def check_data_type(self, data) -> None:
        """`data` is this model's container (`data_class`), else one line naming what `fit` expects,
        what it got and how to build the container (a DataFrame is the usual mistake)."""
        cls = self.data_class
        if cls is None or isinstance(data, cls):
            return
        builders = sorted((n for n, v in vars(cls).items() if n.startswith("from_") and isinstance(v, classmethod)),
                          key=lambda n: (not n.startswith("from_frame"), n))
        how = f"; build it with {' or '.join(f'{cls.__name__}.{n}(...)' for n in builders)}" if builders else ""
        raise InputError(f"{type(self).__name__}.fit expects {cls.__name__} ({cls.__module__}), "
                         f"got {_described(data)}{how}")

    def _likelihood_terms(self, draws, data) -> tuple[dict | None, list[str]]:
        """Which of the fitted model's terms are the default model's (`model_terms`), and warnings.
        The package's own model is the default by construction; a variant is compared at its draws
        (a Laplace fit of a variant computes its pointwise log-likelihood now, for the comparison)."""
        from bayes_wsc import model_terms

        if self.model_name not in criticism.MODULES:
            return None, []
        module = criticism.module_of(self)
        names = getattr(module, "TERMS", ("likelihood",))
        if self.model_file is None and type(self).build_model.__module__.startswith("bayes_wsc."):
            return {t: model_terms.DEFAULT for t in names}, []
        if draws.deferred is not None:
            draws.posterior.update(draws.deferred())
            draws.deferred = None
        try:
            return model_terms.likelihood_terms(self, draws.posterior, data, self.model_), []
        except Exception as exc:  # noqa: BLE001 - user code: say so, and trust nothing of the default's
            return {t: model_terms.UNVERIFIED for t in names}, [
                f"the variant's terms could not be compared with the default model's ({_one_line(exc)}): its "
                "log-likelihood is kept as it recorded it, and checks that replicate from the default model's "
                "formula do not run"]

    def _recorded_words(self) -> str:
        """What the `log_likelihood` group holds when the model keeps what it recorded."""
        from bayes_wsc import model_terms

        replaced = model_terms.replaced(getattr(self, "_fit_terms", None))
        if not replaced:
            return "the log-likelihood of each unit as the fitted model recorded it (its terms are the default model's)"
        return (f"the log-likelihood of each unit as the fitted model recorded it, from its own terms (its "
                f"{', '.join(replaced)} {'is' if len(replaced) == 1 else 'are'} not the default model's)")

    def log_likelihood_notes(self) -> list[str]:
        """Plain words on what LOO scores for this fit (the fit's `log_likelihood_holds`), or none."""
        self._check_fitted()
        holds = inference.get_attrs(self._fitted()).get("log_likelihood_holds")
        return [f"LOO scores {holds}."] if holds else []

    def _fit_time_checks(self, data) -> list[str]:
        """Run the model's checks, store their rows in the fit, and return the flagged ones as messages.
        A variant whose variables the checks cannot use gets one line saying so, not a failed fit."""
        try:
            rows = criticism.run(self, data, draws=None, loo="_pending_log_likelihood" not in self.__dict__
                                 or self._thinned_fit())
        except (InputError, KeyError, IndexError, ValueError) as exc:
            if self.model_file is None:
                raise
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return [f"the model checks did not run on this variant ({type(exc).__name__}: {reason})"]
        inference.set_attrs(self._fitted(), {"checks": [r.as_dict() for r in rows]})
        return criticism.flagged_messages(rows)

    def _thinned_fit(self):
        """For the Pareto k check at fit time of a NUTS fit whose log-likelihood waits for first use: the fit
        at `FIT_TIME_LOO_DRAWS` draws of each chain, evenly spaced, with their log-likelihood (the waiting
        function at those draws only, then `pointwise_log_likelihood`, as on first use). False for a
        Laplace fit, whose check waits with its log-likelihood."""
        import numpy as np

        pending = self.__dict__.get("_pending_log_likelihood")
        if self.method != "nuts" or not isinstance(pending, tuple):
            return False
        draws, data, dims = pending
        n = self._groups["posterior"].sizes["draw"]
        keep = np.unique(np.linspace(0, n - 1, min(n, FIT_TIME_LOO_DRAWS)).round().astype(int))
        values, _ = self._deferred_log_likelihood(draws, data, keep)
        fit = inference.select_draws(self._groups, keep)
        inference.add_log_likelihood(fit, values, dims or {})
        return fit

    def _deferred_log_likelihood(self, draws, data, keep=None) -> tuple[dict, str | None]:
        """The pointwise log-likelihood that waited in `draws.deferred`, at every draw or at the draws
        `keep` of each chain, completed by `pointwise_log_likelihood`: its values (checked finite) and what
        they hold. One path for first use and for the fit-time check on some draws."""
        import numpy as np

        from bayes_wsc.draws import Draws

        recorded = draws.deferred() if keep is None else draws.deferred(keep)
        target = draws if keep is None else Draws({k: np.asarray(v)[:, keep] for k, v in draws.posterior.items()},
                                                  info=draws.info)
        target.posterior.update(recorded)
        holds = self.pointwise_log_likelihood(target, data)
        values = {name: target.posterior.pop(name) for name in recorded}
        check_finite(values)
        return values, holds

    def _map_program(self, data, starts: list[dict], fixed: dict, laplace: dict | None = None):
        """The MAP's compiled program, the held values, the program's inputs (data and held values)
        and the coords: the program from the cache, or built and stored.

        Programs are keyed by structure (`map_program.cache_key`), with the data as inputs that
        `model_inputs` computes without PyMC. Only the package's own models are cached: the key holds
        the package's source, but not a variant file's imports (`model_file`) or a subclass's
        `build_model` written elsewhere.
        """
        from bayes_wsc import map_program

        key, known = None, None
        own = all(getattr(type(self), hook).__module__.startswith("bayes_wsc.")
                  for hook in ("build_model", "model_inputs"))
        if self.model_file is None and own:
            known = self.model_inputs(data)
        if known is not None:
            coords, values = known
            key = map_program.cache_key(f"{type(self).__module__}.{type(self).__qualname__}", self.settings_for(data),
                                        coords, {**values, **fixed}, sorted({k for s in starts for k in s}), laplace)
            program = map_program.load(key)
            if program is not None:
                fixed = _restricted(fixed, program.held)
                return program, fixed, _restricted(_inputs(coords, values, fixed), program.inputs), coords
        from bayes_wsc.fit import build_map_program, map_starts, model_labels

        free = {rv.name for rv in self.model_.free_RVs}
        fixed = _restricted(fixed, free)
        start = map_starts(_restricted(starts, free), fixed)
        program, inputs = build_map_program(self.model_, start, fixed=fixed, laplace=laplace)
        model_coords = model_labels(self.model_)["coords"]
        if known is None:
            return program, fixed, inputs, model_coords
        _check_model_inputs(type(self).__name__, inputs, _inputs(coords, values, fixed), coords, model_coords)
        if program.reusable:
            map_program.store(key, program)
        return program, fixed, inputs, coords

    @property
    def model_(self):
        """The fitted `pm.Model`; built on first use when the MAP ran from a cached program."""
        if getattr(self, "_model", None) is None:
            if getattr(self, "_model_recipe", None) is None:
                raise AttributeError(f"this {type(self).__name__} has no model: call fit(data) first")
            build, data = self._model_recipe
            self._model = build(data)
        return self._model

    @property
    def idata_(self):
        """The fit as the installed ArviZ works with it: an `xarray.DataTree` under ArviZ 1 (Python >= 3.12),
        an InferenceData under ArviZ 0.2x, with the same groups, dims and coords (ArviZ is imported on first
        use: it takes 4-5 s)."""
        if "_idata" not in self.__dict__:
            if getattr(self, "_groups", None) is None:
                raise AttributeError(f"this {type(self).__name__} is not fitted yet")
            self._complete_log_likelihood()
            self._idata = inference.to_inference_data(self._groups)
        return self._idata

    @idata_.setter
    def idata_(self, idata) -> None:
        """A fit as InferenceData or DataTree, or as `inference.Groups` (a loaded fit: wrapped on first use
        of `idata_`, so that predict and summary never import ArviZ)."""
        if isinstance(idata, inference.Groups):
            self.__dict__.pop("_idata", None)
            self._groups, self._mode = idata, None
        else:
            self._idata, self._groups, self._mode = idata, None, None
        self.__dict__.pop("_pending_log_likelihood", None)

    @property
    def map_point_(self) -> dict | None:
        """The posterior mode, by variable: a MAP fit's point, or the MAP a Laplace or NUTS fit started
        from in this process (checks use it instead of refitting); None when the fit has no such point."""
        import numpy as np

        self._check_fitted()
        mode = getattr(self, "_mode", None)
        if mode is not None:
            return {n: np.asarray(v)[0, 0] for n, v in mode.posterior.items()
                    if not n.startswith(inference.LOG_LIKELIHOOD_PREFIX)}
        posterior = self._fitted().posterior
        if posterior.sizes["chain"] * posterior.sizes["draw"] == 1:
            return {n: posterior[n].values[0, 0] for n in posterior.data_vars}
        return None

    def _complete_log_likelihood(self):
        """The fit with its `log_likelihood` group. A Laplace fit, made for intervals in seconds, leaves
        that group to first use (`idata_`, `loo`, `waic`, `compare`, `save`, `run_checks`): for the first
        model it integrates every group's mu_i out for every draw, longer than the approximation itself
        at 10,000 groups."""
        pending = self.__dict__.pop("_pending_log_likelihood", None)
        if pending == SAVED_WITHOUT_LOG_LIKELIHOOD:
            values, dims, holds = self.log_likelihood_from_file()()
            check_finite(values)
            inference.add_log_likelihood(self._groups, values, dims)
            inference.set_attrs(self._groups, {"log_likelihood_holds": holds, LOG_LIKELIHOOD_LEFT_OUT: False})
        elif pending is not None:
            draws, data, dims = pending
            values, holds = self._deferred_log_likelihood(draws, data)
            inference.add_log_likelihood(self._groups, values, dims or {})
            inference.set_attrs(self._groups, {"log_likelihood_holds": holds or self._recorded_words()})
        return self._fitted()

    def _fitted(self):
        """The fit as InferenceData when it exists, else as `inference.Groups` (same Datasets)."""
        return self.__dict__.get("_idata", getattr(self, "_groups", None))

    def diagnosed_names(self) -> list[str]:
        """What `summary` shows and the diagnostics check: the model's estimands, then every other
        posterior variable that is not internal to the model (a variant's own), except the ones per
        unit of the data (see `summary_notes`)."""
        post = self._fitted().posterior
        own = [n for n in self._other_variables() if not self._per_unit(post[n])]
        return [n for n in self.estimands if n in post] + own

    def summary_notes(self) -> list[str]:
        """Plain words naming the variables left out of `summary` because they hold one value per
        unit of the data (a variant's per-group or per-item parameters); empty when there are none."""
        post = self._fitted().posterior
        long = [f"{n}[{', '.join(map(str, post[n].dims[2:]))}]" for n in self._other_variables()
                if self._per_unit(post[n])]
        if not long:
            return []
        return [f"Not in the table, with one value per unit of the data: {', '.join(long)}. They are in the "
                "fit's posterior (est.idata_.posterior, or the saved netCDF file)."]

    def _other_variables(self) -> list[str]:
        post = self._fitted().posterior
        return [str(n) for n in post.data_vars if n not in self.estimands and n not in self.internal_variables]

    def _per_unit(self, variable) -> bool:
        return any(d in self.unit_dims for d in variable.dims)

    def nuts_start(self, start: dict) -> dict:
        """Where a NUTS chain starts, given the MAP's point (constrained scale): by default that point.
        A model whose MAP may sit on a boundary of a parameter's support (a simplex share of 0) moves
        it inside, where the sampler can adapt."""
        return start

    def order_clusters(self, draws, dims: dict, data) -> None:
        """Put the clusters of a MAP (`draws`, a single point) in the canonical order, in place
        (`relabel.canonical_permutation`), so that two fits number them alike; NUTS then relabels
        its draws against this point. Models without exchangeable clusters keep this no-op."""

    def align_draws(self, draws, map_draws, data, *, free: list[str], dims: dict) -> list[str]:
        """Relabel exchangeable clusters in `draws.posterior` in place (see `relabel.py`) before
        diagnostics; returns warnings. `free` names the fit's free variables and `dims` every
        variable's dims (from the program or the model, so that a cached fit builds no model).
        Models without exchangeable labels keep this no-op."""
        return []

    def model_checks(self, idata) -> list[str]:
        """Model-specific warnings (orientation, label switching); none by default."""
        return []

    def nuts_options(self) -> dict:
        """Further settings of `fit.fit_nuts` for this model (e.g. `dense_mass`); none by default."""
        return {}

    def complete_draws(self, draws, data) -> dict:
        """Add to the draws of NUTS or Laplace (`draws.posterior`), in place, variables the model
        integrated out (drawn from their conditionals); returns their dims. None by default."""
        return {}

    def pointwise_log_likelihood(self, draws, data) -> str | None:
        """Rework, in place, the per-unit log-likelihood the model recorded (`likelihoods.record_pointwise`)
        before it becomes the `log_likelihood` group, and say in words what it then holds (kept in the
        fit's attrs as `log_likelihood_holds`); by default it is kept as the graph computed it (None).
        A rework may only use the default model's formulas where `self._fit_terms` (`model_terms`) says
        the fitted model's terms are the default's."""
        return None

    def log_likelihood_from_file(self):
        """How to rebuild this fit's `log_likelihood` group from its saved draws and data alone: a function
        returning ({LOG_LIKELIHOOD_PREFIX + name: (chain, draw, ...) array}, their dims, what they hold in
        words), or None when the model cannot (the default). Where it can, a fit whose log-likelihood is
        still pending (a Laplace fit) is saved without it, and a loaded fit computes it on first use."""
        return None

    def _assemble(self, coords, dims, draws, data, fit_info) -> inference.Groups:
        groups = self.data_groups(data)
        attrs = {
            "model": self.model_name,
            "package_version": package_version(),
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "method": self.method,
            "settings": self.get_params(),
            "settings_used": self.settings_for(data),
            "fit_info": fit_info,
            **groups.get("attrs", {}),
        }
        if self.model_file is not None:
            facts = self.variant_facts()
            attrs["model_source"] = facts.source
            attrs[VARIANT_ATTR] = facts.stored()
        return inference.from_draws(
            draws.posterior,
            sample_stats=draws.sample_stats,
            coords=coords,
            dims={**dims, **groups.get("dims", {})},
            observed_data=groups.get("observed_data"),
            constant_data=groups.get("constant_data"),
            extra_coords=groups.get("extra_coords"),
            attrs=attrs,
        )

    def _check_fitted(self):
        if self._fitted() is None:
            raise InputError(f"this {type(self).__name__} is not fitted yet: call fit(data) first")

    # ------------------------------------------------------------------ reporting
    @property
    def settings_used_(self) -> dict:
        """The settings the fitted model was built with (`settings_for` its data: what the model resolved,
        such as a WH above its limit fitted as inf), as the fit stores them; what reports describe, rather
        than the settings asked for. A fit written before they were stored gives `build_settings`."""
        self._check_fitted()
        return dict(inference.get_attrs(self._fitted()).get("settings_used") or self.build_settings())

    @property
    def diagnostics_(self) -> list[str]:
        self._check_fitted()
        return list(inference.get_attrs(self._fitted()).get("diagnostics", []))

    def summary(self, var_names: list[str] | None = None, hdi_prob: float = DEFAULT_CI):
        """`az.summary` of the estimands and a variant's own variables (mean, sd, HDI, and R-hat/ESS
        after NUTS); `summary_notes` names what is too long for the table."""
        from bayes_wsc.posterior import check_ci

        self._check_fitted()
        check_ci(hdi_prob, "hdi_prob")
        if var_names is not None:
            names = [var_names] if isinstance(var_names, str) else var_names
            have = list(self._fitted().posterior.data_vars)
            unknown = [n for n in names if not isinstance(n, str) or n not in have] if isinstance(names, list) \
                else [names]
            if unknown:
                raise InputError(f"summary: var_names holds {unknown[0]!r}, which is not a variable of this fit "
                                 f"(its variables: {', '.join(map(str, have[:12]))})")
            var_names = names
        with self.variant_errors("summary"):
            return inference.summary(self._fitted(), var_names or self.diagnosed_names(), hdi_prob)

    def report(self, out_dir, **kwargs):
        """Write `out_dir/report.html` (the model's `write_report`)."""
        self._check_fitted()
        check_path(out_dir, "report", "a report folder")
        with self.variant_errors("report"):
            return self.write_report(out_dir, **kwargs)

    def write_report(self, out_dir, **kwargs):
        """The model's report; a model without its own gets the estimands, the criticism sections and
        the warnings (`report.basic`)."""
        from bayes_wsc.report.basic import write_report

        return write_report(self, out_dir, **kwargs)

    # ------------------------------------------------------------------ predictions
    @abc.abstractmethod
    def data_from_fit(self):
        """The data the fit saw (a `data_class` container), rebuilt from the fit's groups (`data_groups`):
        what the checks replicate and the reports show."""

    @abc.abstractmethod
    def predict(self, items, *, ci: float = DEFAULT_CI):
        """Per-item answers for new `items` (a DataFrame of the model's item columns), with intervals at
        credible level `ci` where the fit has draws: what `bayes-wsc predict` writes."""

    def key_columns(self) -> list[str]:
        """The columns of new items that hold ids (the fit's group or id column), which readers
        keep as text: '001' stays '001' (`data.tables.read_table(text_columns=...)`)."""
        self._check_fitted()
        settings = inference.get_attrs(self._fitted()).get("data_settings", {})
        return [settings[k] for k in ("group_col", "id_col") if isinstance(settings.get(k), str)]

    # ------------------------------------------------------------------ criticism
    @property
    def checks_(self):
        """The checks run when the fit was made (a DataFrame, one row per check; empty when the fit ran
        with checks=False or was written before fits kept them)."""
        self._check_fitted()
        return criticism.table(criticism.rows_from_attrs(inference.get_attrs(self._fitted()).get("checks")))

    def run_checks(self, *, draws: int = criticism.PPC_DRAWS, seed: int = 0):
        """Run the model's checks now (posterior predictive checks, its targeted check, LOO's Pareto k):
        a DataFrame with columns check, statistic, reference, p_value, flagged, message."""
        self._check_fitted()
        _check_draws_and_seed(draws, seed)
        self._complete_log_likelihood()
        return criticism.table(criticism.run(self, draws=draws, seed=seed))

    def posterior_predictive(self, *, draws: int = criticism.PPC_DRAWS, seed: int = 0):
        """Replicated data from the fit, summarized by the model's statistics: InferenceData with
        `posterior_predictive` (chain, draw, ...) and `observed_data` groups holding the same variables,
        ready for `az.plot_ppc`. About `draws` posterior draws are used (evenly spaced in each chain; a
        MAP's point `draws` times), every latent class drawn anew."""
        self._check_fitted()
        _check_draws_and_seed(draws, seed)
        return inference.to_inference_data(criticism.posterior_predictive(self, draws=draws, seed=seed))

    def loo(self, pointwise: bool = True):
        """PSIS-LOO (`az.loo`) on the fit's pointwise log-likelihood; a FitWarning in plain words when
        some Pareto k values are too large for it to be trusted. A MAP fit raises `InputError`: LOO needs
        posterior draws."""
        self._check_fitted()
        fitted = self._complete_log_likelihood()
        reason = inference.loo_unavailable(fitted)
        if reason:
            raise InputError(reason)
        elpd = inference.loo(fitted, pointwise)
        row = criticism.pareto_row(elpd, criticism.unit_noun(fitted), fitted)
        if row.flagged:
            warnings.warn(row.message, FitWarning, stacklevel=2)
        return elpd

    def waic(self, pointwise: bool = True):
        """WAIC (`az.waic`) on the fit's pointwise log-likelihood; a MAP fit raises `InputError`."""
        self._check_fitted()
        fitted = self._complete_log_likelihood()
        reason = inference.loo_unavailable(fitted)
        if reason:
            raise InputError(reason.replace("LOO", "WAIC"))
        return inference.waic(fitted, pointwise)

    # ------------------------------------------------------------------ persistence
    def save(self, path) -> Path:
        """Write the fit as netCDF: draws, data, coords and every setting (no pickle). A fit whose
        pointwise log-likelihood is still pending (Laplace, NUTS) and can be rebuilt from the file
        (`log_likelihood_from_file`) is written without it, saying so: `load` computes it on first use
        (at 10,000 groups it costs as much as the fit, and most fits saved are never compared)."""
        self._check_fitted()
        check_path(path, "save", "a fit file")
        if "_pending_log_likelihood" in self.__dict__ and self.log_likelihood_from_file() is not None:
            return inference.save(inference.with_attrs(self._fitted(), {LOG_LIKELIHOOD_LEFT_OUT: True}), path)
        return inference.save(self._complete_log_likelihood(), path)

    @classmethod
    def load(cls, path):
        """A saved fit of this model (`load` of any model, then checked to be this one's); a model that is
        not registered (a user's own, `bayes_wsc.testing`) reads its own fits."""
        if cls.model_name not in registry.NAMES:
            check_path(path, "load")
            idata = inference.load(path)
            if idata.posterior.attrs.get("model") != cls.model_name:
                raise InputError(f"fit file {str(path)!r} holds a {idata.posterior.attrs.get('model')!r} fit, not a "
                                 f"{cls.model_name!r} one")
            return cls.from_idata(idata, source=f"fit file {str(path)!r}")
        estimator = load(path)
        if not isinstance(estimator, cls):
            raise InputError(f"fit file {str(path)!r} holds a {estimator.model_name!r} fit, not a "
                             f"{cls.model_name!r} one: load it with bayes_wsc.load or {type(estimator).__name__}.load")
        return estimator

    @classmethod
    def from_idata(cls, idata, source: str = "this fit"):
        """An estimator around a saved fit. A fit written by another version either works, warns
        about settings this version ignores, or is a one-line `InputError` naming what is missing.

        A fit that was edited or damaged after it was written is checked the same way: its groups and
        attrs (each of the kind `ATTR_KINDS` and the model's `attr_kinds` say), its settings (as
        `check_params` checks a new estimator's), and its draws: a draw holding a value that is not
        finite or is outside the variable's `bounds` is left out with a `FitWarning` per variable, and
        a fit with no draw left (a MAP's single point) is an `InputError`."""
        if "posterior" not in inference.group_names(idata):
            raise InputError(f"{source} is not a bayes_wsc fit (no posterior group), got {_described(idata)}")
        idata = inference.groups_of(idata)
        attrs = inference.get_attrs(idata)
        version = attrs.get("package_version", "unknown")
        written_by = f"written by bayes_wsc {version if isinstance(version, str) else 'unknown'}"
        missing = [f"attribute {a!r}" for a in cls.required_attrs if a not in attrs]
        missing += [f"group {g!r}" for g in cls.required_groups if g not in idata]
        for group, names in cls.required_variables.items():
            have = set(idata[group].variables) if group in idata else set()
            missing += [f"{group} variable {n!r}" for n in names if n not in have]
        if missing:
            raise InputError(f"{source} ({written_by}) lacks {', '.join(missing)}, which bayes_wsc "
                             f"{package_version()} needs for a {cls.model_name!r} fit")
        wrong = [f"attribute {name!r} is {_shown(attrs[name])}, not {words}"
                 for name, (words, test) in {**ATTR_KINDS, **cls.attr_kinds}.items()
                 if name in attrs and not test(attrs[name])]
        if wrong:
            raise InputError(f"{source} ({written_by}) is damaged: {'; '.join(wrong)}")
        params = attrs["settings"]
        known = set(inspect.signature(cls.__init__).parameters) | set(_keyword_names(Estimator.__init__))
        unknown = set(params) - known
        if unknown:
            warnings.warn(f"{source} ({written_by}) has settings this version does not know and ignores: "
                          f"{sorted(unknown)}", FitWarning, stacklevel=2)
        estimator = cls(**{k: v for k, v in params.items() if k in known})
        if estimator.model_file is not None:  # what reading the variant's fit needs, never from its file
            estimator._variant_stored = VariantFacts.from_attrs(attrs)
        try:
            estimator.check_params()
        except InputError as exc:
            raise InputError(f"{source} ({written_by}) holds a setting this version refuses: {exc}") from None
        estimator.idata_ = _usable_draws(idata, cls.bounds, source)
        estimator._source = source
        if attrs.get(LOG_LIKELIHOOD_LEFT_OUT) and "log_likelihood" not in idata \
                and estimator.log_likelihood_from_file() is not None:
            estimator._pending_log_likelihood = SAVED_WITHOUT_LOG_LIKELIHOOD
        return estimator


def _check_contract(cls) -> None:
    """A model class lacking an abstract method of `Estimator` or a required class attribute: one
    `TypeError` when the class is defined, naming the class and what it lacks."""
    missing = [name for name in sorted(Estimator.__abstractmethods__)
               if getattr(cls, name, None) is None or getattr(getattr(cls, name), "__isabstractmethod__", False)]
    missing += [name for name in REQUIRED_ATTRIBUTES if getattr(cls, name, None) is None]
    if missing:
        raise contract.ContractError(f"model class {cls.__qualname__} ({cls.__module__}) does not define "
                                     f"{', '.join(missing)}, which every model must (see bayes_wsc.estimator."
                                     f"Estimator); a base class of models is declared with class "
                                     f"{cls.__name__}(Estimator, abstract=True)")


def _check_levels(cls) -> None:
    """Every public method of `cls` taking a credible level `ci` (predict, reports, per-item tables),
    wrapped to check it first (`posterior.check_ci`): one rule, at the one place every entry point
    passes through, before any work."""
    import functools

    from bayes_wsc.posterior import check_ci

    for name, method in list(vars(cls).items()):
        if (name.startswith("_") or not inspect.isfunction(method) or getattr(method, "_checks_ci", False)
                or getattr(method, "__isabstractmethod__", False)):
            continue
        signature = inspect.signature(method)
        params = signature.parameters
        if "ci" not in params and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            continue

        def checked(self, *args, __method=method, __signature=signature, **kwargs):
            given = __signature.bind(self, *args, **kwargs).arguments
            extra = next((given.get(p.name, {}) for p in __signature.parameters.values()
                          if p.kind is p.VAR_KEYWORD), {})
            if "ci" in given or "ci" in extra:
                check_ci(given["ci"] if "ci" in given else extra["ci"])
            return __method(self, *args, **kwargs)

        checked = functools.wraps(method)(checked)
        checked._checks_ci = True
        setattr(cls, name, checked)


_check_levels(Estimator)
Estimator.__init__.__signature__ = _settings_signature(Estimator)


def _keyword_names(function) -> list[str]:
    return [p.name for p in inspect.signature(function).parameters.values() if p.kind is p.KEYWORD_ONLY]


def _checking_data(fit):
    """A subclass's `fit` that first checks its data's type (`Estimator.check_data_type`)."""
    import functools

    @functools.wraps(fit)
    def checked(self, data, *args, **kwargs):
        self.check_data_type(data)
        return fit(self, data, *args, **kwargs)

    checked._checks_data = True
    return checked


def _naming_missing_variables(predict):
    """A model's `predict` that, on a variant's fit lacking a variable it reads, says so in one line
    naming the variant instead of raising the bare KeyError; and whose table is held to the contract's
    rules (`contract.prediction_problems`: a model that breaks them is a `ContractError`, not output)."""
    import functools

    @functools.wraps(predict)
    def named(self, *args, **kwargs):
        try:
            out = predict(self, *args, **kwargs)
        except KeyError as exc:
            if self.model_file is None:
                raise
            import re

            name = str(exc.args[0]) if exc.args else ""
            found = re.search(r"No variable named '([^']+)'", name)  # xarray's words for a missing variable
            name = found.group(1) if found else name
            raise InputError(f"model file {str(self.model_file)!r}: its fit has no variable {name!r}, which "
                             f"the {self.model_name} model's predict reads; report it from the variant (see the "
                             "README, Writing a model variant)") from exc
        items = args[0] if args else kwargs.get("items")
        problems = contract.prediction_problems(out, items, has_draws=self.method != "map") \
            if hasattr(items, "columns") else []
        if problems:
            raise contract.ContractError(f"{type(self).__name__}.predict breaks the contract: {'; '.join(problems)}")
        return out

    named._names_missing = True
    return named


def _naming_damaged_source(data_from_fit):
    """A model's `data_from_fit` that, on a loaded fit whose saved data its container refuses (NaN HE,
    negative counts), says the fit file is damaged, naming it."""
    import functools

    @functools.wraps(data_from_fit)
    def named(self, *args, **kwargs):
        try:
            return data_from_fit(self, *args, **kwargs)
        except InputError as exc:
            source = self.__dict__.get("_source")
            if source is None:
                raise
            raise InputError(f"{source} is damaged: the data it holds are refused: {exc}") from None

    named._names_source = True
    return named


def _described(value) -> str:
    """What a value is, for a message: None, 'a pandas DataFrame', 'a str ('clicks.csv')'..."""
    if value is None:
        return "None"
    kind = type(value)
    module = "" if kind.__module__ == "builtins" else f"{kind.__module__.split('.')[0]} "
    text = f"a {module}{kind.__name__}"
    if isinstance(value, (str, Path, numbers.Number)):
        shown = repr(str(value) if isinstance(value, Path) else value)
        text += f" ({shown[:60]})"
    return text


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_mapping(value) -> bool:
    return isinstance(value, dict)


def _is_texts(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def is_labels(value) -> bool:
    """Class names: a non-empty list of text or numbers (never booleans or containers)."""
    return (isinstance(value, list) and len(value) > 0
            and all(isinstance(v, (str, numbers.Real)) and not isinstance(v, bool) for v in value))


def _is_check_rows(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) and set(criticism.REQUIRED_COLUMNS) <= set(v)
                                           for v in value)


def _is_fit_info(value) -> bool:
    """{"map": {...}, "nuts": {...}, "laplace": {...}, "free_variables": [...]}: each stage's record a mapping."""
    return isinstance(value, dict) and all(isinstance(value[k], dict) for k in ("map", "nuts", "laplace") if k in value)


def check_whole(name: str, value, lowest: int = 1) -> None:
    """A setting that counts something (draws, restarts): a whole number >= `lowest`, or one line naming it."""
    if not (_is_whole(value) and value >= lowest):
        raise InputError(f"{name} must be a whole number >= {lowest}, got {value!r}")


def is_count(value) -> bool:
    return _is_whole(value) and value >= 0


#: what every saved fit's attrs must be, when present (`Estimator.from_idata`); a model adds `attr_kinds`
#: what `model_terms.likelihood_terms` says of each term
TERM_ANSWERS = ("default", "own", "unverified")
ATTR_KINDS: dict[str, tuple[str, Callable]] = {
    "model": ("text", lambda v: isinstance(v, str)),
    "method": (f"one of {', '.join(map(repr, METHODS))}", lambda v: isinstance(v, str) and v in METHODS),
    "settings": ("a mapping of settings", _is_mapping),
    "settings_used": ("a mapping of settings", _is_mapping),
    "fit_info": ("a mapping with one record per stage (map, nuts, laplace)", _is_fit_info),
    "data_settings": ("a mapping of the data's settings", _is_mapping),
    "diagnostics": ("a list of messages (text)", _is_texts),
    "checks": (f"a list of check rows, each with {', '.join(criticism.REQUIRED_COLUMNS)}", _is_check_rows),
    "package_version": ("text", lambda v: isinstance(v, str)),
    "likelihood_terms": ("a mapping of terms to 'default', 'own' or 'unverified'",
                         lambda v: _is_mapping(v) and all(isinstance(k, str) and v[k] in TERM_ANSWERS for k in v)),
    "log_likelihood_holds": ("text", lambda v: isinstance(v, str)),
    "model_source": ("text", lambda v: isinstance(v, str)),
    "variant": ("a mapping of the variant file's sha256, build_model settings and checks",
                lambda v: _is_mapping(v) and isinstance(v.get("sha256"), str) and _is_texts(v.get("build_model_takes"))
                and (v.get("checks") is None or is_count(v.get("checks")))),
}


def _usable_draws(idata, bounds: dict, source: str):
    """The fit without the draws that hold a value the model cannot have produced (not finite, or
    outside `bounds`), with one `FitWarning` per variable holding such values; an `InputError` when no
    draw is left."""
    import numpy as np

    problems, bad = [], None
    for group in ("posterior", "log_likelihood"):
        if group not in inference.group_names(idata):
            continue
        for name, variable in idata[group].data_vars.items():
            if "draw" not in variable.dims or variable.dtype.kind not in "biufc":
                continue
            values = variable.transpose("draw", ...).values
            low, high = bounds.get(name, (-np.inf, np.inf)) if group == "posterior" else (-np.inf, np.inf)
            with np.errstate(invalid="ignore"):
                wrong = ~np.isfinite(values) | (values < low - 1e-9) | (values > high + 1e-9)
            if not wrong.any():
                continue
            draws = wrong.reshape(wrong.shape[0], -1).any(axis=1)
            bad = draws if bad is None else bad | draws
            kinds = [w for w, n in (("NaN", np.isnan(values).sum()), ("infinite", np.isinf(values).sum()),
                                    (f"outside [{low:g}, {high:g}]",
                                     (np.isfinite(values) & wrong).sum())) if n]
            problems.append((f"{group} variable {str(name)!r}", int(wrong.sum()), " or ".join(kinds), int(draws.sum())))
    if bad is None:
        return idata
    total = bad.size
    kept = np.flatnonzero(~bad)
    if not kept.size:
        what, count, kinds, _ = problems[0]
        where = "its only draw (a MAP's point)" if total == 1 else f"every one of its {total} draws"
        raise InputError(f"{source}: {what} holds {count} value{'s' * (count > 1)} the model cannot produce "
                         f"({kinds}) in {where}: no draw of the fit is usable")
    chains = idata.posterior.sizes.get("chain", 1)
    every = " in every chain" if chains > 1 else ""
    for what, count, kinds, draws in problems:
        warnings.warn(f"{source}: {what} holds {count} value{'s' * (count > 1)} the model cannot produce ({kinds}) "
                      f"in {draws} of {total} draws; those draws are left out{every} ({kept.size} of {total} used)",
                      FitWarning, stacklevel=3)
    return inference.select_draws(idata, kept)


def nondegenerate_start(start, draws, chain_starts: str, chains: int, initial: Sequence[dict] = ({},)) -> tuple:
    """Where NUTS starts when the MAP is degenerate (`draws.info["degenerate"]`, see
    `map_program.degenerate_values`): the best restart whose optimum is not, if there is one (every chain
    there, or in `chain_starts="restarts"` the chains cycling over such optima); else the MAP's own
    starts, `initial` (the model's initial values, constrained scale; a variable they leave out at the
    model's initial point; jittered by `fit_nuts`), never the degenerate point, where chains stay stuck.
    A message says which; the start unchanged and no message when the MAP is not degenerate."""
    info = draws.info
    if not info.get("degenerate"):
        return start, []
    flags = info.get("restart_degenerate") or []
    good = [i for i, bad in enumerate(flags) if not bad]
    if not good or not draws.optima:
        initial = [dict(s or {}) for s in initial] or [{}]
        start = [initial[c % len(initial)] for c in range(chains)] if chain_starts == "restarts" else initial[0]
        where = (f"the MAP's {len(initial)} starts" if chain_starts == "restarts" and len(initial) > 1
                 else "the MAP's start")
        return start, [f"NUTS chains start at {where} (the model's initial values, jittered), not at the MAP, which is "
                       f"degenerate{' in every restart' if flags else ''}: chains started there stay stuck at its "
                       "edge. Check R-hat; a prior that keeps the variable from that edge, or a fit with the "
                       "variable held (map_fixed), may help."]
    good.sort(key=lambda i: -info["restart_log_densities"][i])
    if chain_starts == "restarts":
        start = [draws.optima[good[c % len(good)]] for c in range(chains)]
    else:
        start = draws.optima[good[0]]
    return start, [f"NUTS chains start at the optimum of MAP restart {good[0]} instead of the degenerate best "
                   f"one (log density {info['restart_log_densities'][good[0]]:.6g} against "
                   f"{info['log_density']:.6g}), so that they do not begin stuck at its edge."]


class Recipe(NamedTuple):
    """How a fit builds and starts its model (`Estimator._recipe`)."""

    build: Callable
    initial_values: Callable
    start_nuts_at_map: bool
    map_fixed: Callable


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


def check_finite(posterior: dict) -> None:
    """Refuse a fit whose draws hold NaN or infinity: a number the arithmetic could not hold is
    never saved or reported as a result."""
    import numpy as np

    for name, values in posterior.items():
        values = np.asarray(values)
        if values.dtype.kind in "fc" and not np.isfinite(values).all():
            bad = int((~np.isfinite(values)).sum())
            raise InputError(f"the fit produced {bad} non-finite value{'s' if bad > 1 else ''} of {name!r} "
                             f"(of {values.size}): the data are beyond what the model's arithmetic holds "
                             "(look for extreme values); nothing was saved")


def _restricted(values, names):
    """A start (a dict, or a list of them) with only the variables in `names`: the model's own."""
    if isinstance(values, dict):
        return {k: v for k, v in values.items() if k in names}
    return [_restricted(v, names) for v in values]


def _inputs(coords: dict, values: dict, fixed: dict) -> dict:
    """What a program may read: the length of each dim (PyMC keeps them as shared variables named
    by the dim), the data and the held values."""
    return {**{dim: len(labels) for dim, labels in coords.items()}, **values, **fixed}


def _check_model_inputs(name: str, inputs: dict, computed: dict, coords: dict, model_coords: dict) -> None:
    """A model's `model_inputs` must compute every input its graph reads, and its coords, exactly:
    a cached program would otherwise run on wrong data. Checked whenever a program is built."""
    import numpy as np

    for key, value in inputs.items():
        if key not in computed:
            raise RuntimeError(f"{name}.model_inputs does not compute {key!r}, which the model reads")
        if not np.array_equal(np.asarray(computed[key]).astype(value.dtype), value):
            raise RuntimeError(f"{name}.model_inputs computes {key!r} otherwise than the model")
    if {k: list(v) for k, v in coords.items()} != {k: list(v) for k, v in model_coords.items()}:
        raise RuntimeError(f"{name}.model_inputs gives other coords than the model's")


def _is_whole(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def load(path):
    """Load any saved fit; the model named in the file picks the estimator class."""
    check_path(path, "load")
    idata = inference.load(path)
    name = idata.posterior.attrs["model"]
    if not isinstance(name, str) or name not in registry.NAMES:
        raise InputError(f"fit file {str(path)!r} holds a model {name!r} that this version does not know")
    cls = registry.get(name).estimator_class()
    return cls.from_idata(idata, source=f"fit file {str(path)!r}")


def check_path(path, what: str, kind: str = "a fit file") -> None:
    """A file path (text or a path object), else one line naming what `what` got."""
    import os

    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise InputError(f"{what} expects the path of {kind} (a str or pathlib.Path), got {_described(path)}")


def _check_draws_and_seed(draws, seed) -> None:
    """The replicates' settings of `run_checks` and `posterior_predictive`: whole numbers, draws >= 1."""
    check_whole("draws", draws, 1)
    check_whole("seed", seed, 0)


def load_variant(path):
    """Import a model-variant file (it runs as code, like any Python module) and check it."""
    return read_variant(path)[0]


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
