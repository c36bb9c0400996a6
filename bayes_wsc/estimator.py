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
`variant_files.recipe`).

This module keeps the contract and the fit's lifecycle; each job around them is a module of its own:
the settings (`estimator_settings.py`, `DeclaredSettings`), the hooks' defaults (`model_hooks.py`,
`ModelHooks`) and what a fit says of itself (`fit_criticism.py`, `FitCriticism`: summary, report, checks,
LOO), the three bases of `Estimator`; and, which the methods of the same names delegate to, what a
model class is held to when it is defined (`class_checks.py`), variant files (`variant_files.py`),
saving and reading fits (`fit_files.py`), the pointwise log-likelihood (`fit_log_likelihood.py`), the
MAP's program and the starts (`fit_starts.py`), and the checks of single values (`value_checks.py`).
The names that lived here before are still importable from here.
"""

from __future__ import annotations

import abc
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from bayes_wsc import criticism
from bayes_wsc import diagnostics, fit_files, fit_log_likelihood, fit_starts, inference, registry, variant_files
from bayes_wsc.class_checks import (_check_contract, _check_levels, _checking_data, _naming_damaged_source,
                                    _naming_missing_variables)
from bayes_wsc.comparison import compare  # noqa: F401  (bayes_wsc.compare, kept importable from here)
from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.errors import FitWarning, InputError, SamplingWarning
from bayes_wsc.estimator_settings import (CHAIN_STARTS, DEFAULT_SEED, CommonSettings,  # noqa: F401
                                          DeclaredSettings, _check_settings_class, _keyword_names, _names,
                                          _settings_init, _settings_signature, setting_names)
from bayes_wsc.fit_criticism import FitCriticism, _check_draws_and_seed  # noqa: F401
from bayes_wsc.fit_files import LOG_LIKELIHOOD_LEFT_OUT, METHODS  # noqa: F401
from bayes_wsc.fit_starts import _restricted, nondegenerate_start
from bayes_wsc.model_hooks import ModelHooks
from bayes_wsc.value_checks import (_described, _is_real, _is_whole, check_finite, check_path,  # noqa: F401
                                    check_whole, is_count, is_labels)  # (the models' too)
from bayes_wsc.variant_files import Recipe, VariantFacts, load_variant  # noqa: F401
from bayes_wsc.backends import NUTS_BACKENDS, PRECISIONS  # noqa: F401
from bayes_wsc.settings import (BOOLEAN, NoSettings, Rule, built, checked, declared, one_of,  # noqa: F401
                                or_none, setting, whole)

#: model name -> "module:Class", imported only when needed (from `registry.MODELS`)
REGISTRY = {spec.name: spec.estimator for spec in registry.MODELS}


#: the class attributes every model defines (`Estimator.__init_subclass__` checks them with the abstract methods)
REQUIRED_ATTRIBUTES = ("model_name", "estimands", "data_class")


class Estimator(DeclaredSettings, ModelHooks, FitCriticism, abc.ABC):
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
    #: `fit_files.ATTR_KINDS`, which every fit's attrs follow
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
            _check_contract(cls, Estimator, REQUIRED_ATTRIBUTES)
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

    # ------------------------------------------------------------------ hooks (defaults: `ModelHooks`)
    @abc.abstractmethod
    def build_model(self, data):
        """The model as a `pm.Model` with named dims, built on validated `data` (its `data_class`)."""

    @abc.abstractmethod
    def data_groups(self, data) -> dict:
        """observed_data, constant_data, their dims, extra_coords and attrs describing the data: what
        `data_from_fit` rebuilds the data from, so that a saved fit is checked, reported and predicted
        from without the original files."""



    def _recipe(self) -> Recipe:
        """How this fit builds and starts its model: its own hooks, or a variant's (`variant_files.recipe`)."""
        return variant_files.recipe(self)





    def variant_errors(self, stage: str):
        """A variant's failure in `stage` as one `InputError` line naming its file (the cause chained,
        for the API); the package's own models raise as they are."""
        return variant_files.variant_errors(self, stage)


    def variant_checks(self) -> list | None:
        """A variant file's own checks, which replace the model's (`criticism.run`): its `CHECKS`,
        functions (est, data, seed) -> list of `Check` (models/ecological_inference.py, which does not
        model the bins given the class, declares its own). None without a variant file (`model_file`)
        or when it declares none: then the model's checks run where the fit's terms are the default's
        (`model_terms`). A loaded fit whose variant declares checks runs them only from a file the user
        names (`use_variant_file`; `bayes-wsc check FIT.nc --model FILE.py`): a fit file never runs code."""
        return variant_files.variant_checks(self)

    def variant_facts(self) -> VariantFacts:
        """What reading a variant's fit needs (`VariantFacts`): from the fit file when the fit was loaded
        (never importing the variant), else from the variant file itself, loaded once per fit."""
        return variant_files.variant_facts(self)

    def _loaded_variant(self) -> tuple:
        """(module, facts) of `model_file`, imported once (`variant_files.loaded_variant`)."""
        return variant_files.loaded_variant(self)

    def _variant_code(self, purpose: str):
        """The variant's module, to run its code for `purpose` (`variant_files.variant_code`)."""
        return variant_files.variant_code(self, purpose)

    def use_variant_file(self, path) -> None:
        """Let this loaded fit run its variant's own code (its `CHECKS`) from `path`, a file the user
        names: it must be the file the fit was made with (the sha256 the fit stored, or for a fit written
        before fits stored it, the same source), else one line and nothing is imported."""
        return variant_files.use_variant_file(self, path)

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
        warned = len(early)  # messages[:warned] are warned already
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
            with self.variant_errors("nuts_warnings"):
                before = list(self.nuts_warnings(start))
            for message in before:  # said now, before the run, not after it
                warnings.warn(message, SamplingWarning, stacklevel=2)
            messages[warned:warned] = before
            warned += len(before)
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
        self._fit_terms, found = fit_log_likelihood.likelihood_terms(self, draws, data)
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
            holds = holds or fit_log_likelihood.recorded_words(self)
            inference.set_attrs(self._fitted(), {"log_likelihood_holds": holds})
        with self.variant_errors("the diagnostics"):
            if self.method == "nuts":
                messages += diagnostics.nuts_messages(self._fitted(), self.diagnosed_names())
        with self.variant_errors("model_checks"):
            messages += self.model_checks(self._fitted())
        # a check's own refits do not check again; a model without a checks module has none
        if self.checks and not criticism.running() and self.model_name in criticism.MODULES:
            messages += self._fit_time_checks(data)
        inference.set_attrs(self._fitted(), {"diagnostics": messages})
        for message in messages[warned:]:
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



    def _map_program(self, data, starts: list[dict], fixed: dict, laplace: dict | None = None):
        """The MAP's compiled program, the held values, its inputs and the coords (`fit_starts.program_for`)."""
        return fit_starts.program_for(self, data, starts, fixed, laplace)

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
        from (in this process, or kept in its file: `fit_files.MODE_GROUP`; checks use it instead of refitting); None
        when the fit has no such point."""
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
        """The fit with its `log_likelihood` group, computed now if it waited (`fit_log_likelihood.complete`)."""
        return fit_log_likelihood.complete(self)

    def _fitted(self):
        """The fit as InferenceData when it exists, else as `inference.Groups` (same Datasets)."""
        return self.__dict__.get("_idata", getattr(self, "_groups", None))













    def _assemble(self, coords, dims, draws, data, fit_info) -> inference.Groups:
        """The fit's groups with the attrs every fit file holds (`fit_files.assemble`)."""
        return fit_files.assemble(self, coords, dims, draws, data, fit_info)

    def _check_fitted(self):
        if self._fitted() is None:
            raise InputError(f"this {type(self).__name__} is not fitted yet: call fit(data) first")

    # ------------------------------------------------------------------ predictions
    @abc.abstractmethod
    def data_from_fit(self):
        """The data the fit saw (a `data_class` container), rebuilt from the fit's groups (`data_groups`):
        what the checks replicate and the reports show."""

    @abc.abstractmethod
    def predict(self, items, *, ci: float = DEFAULT_CI):
        """Per-item answers for new `items` (a DataFrame of the model's item columns), with intervals at
        credible level `ci` where the fit has draws: what `bayes-wsc predict` writes."""

    # ------------------------------------------------------------------ persistence
    def save(self, path) -> Path:
        """Write the fit as netCDF: draws, data, coords and every setting (no pickle). A fit whose
        pointwise log-likelihood is still pending (Laplace, NUTS) and can be rebuilt from the file
        (`log_likelihood_from_file`) is written without it, saying so: `load` computes it on first use
        (at 10,000 groups it costs as much as the fit, and most fits saved are never compared)."""
        return fit_files.save(self, path)

    @classmethod
    def load(cls, path):
        """A saved fit of this model (`load` of any model, then checked to be this one's); a model that is
        not registered (a user's own, `bayes_wsc.testing`) reads its own fits."""
        return fit_files.load_as(cls, path)

    @classmethod
    def from_idata(cls, idata, source: str = "this fit"):
        """An estimator around a saved fit. A fit written by another version either works, warns
        about settings this version ignores, or is a one-line `InputError` naming what is missing.

        A fit that was edited or damaged after it was written is checked the same way: its groups and
        attrs (each of the kind `fit_files.ATTR_KINDS` and the model's `attr_kinds` say), its settings (as
        `check_params` checks a new estimator's), and its draws: a draw holding a value that is not
        finite or is outside the variable's `bounds` is left out with a `FitWarning` per variable, and
        a fit with no draw left (a MAP's single point) is an `InputError`."""
        return fit_files.from_idata(cls, idata, source, _keyword_names(Estimator.__init__))


_check_levels(Estimator)


#: any saved fit, its class found in the registry (`bayes_wsc.load`; the registry names it here)
load = fit_files.load
