"""What a model class is held to when it is defined (`Estimator.__init_subclass__`), and the wrappers
that put its rules where every call passes.

A class lacking a required method or class attribute fails at once, naming them (`_check_contract`);
every public method taking a credible level `ci` checks it first (`_check_levels`); a model's own
`fit` checks its data's type (`_checking_data`), its `predict` is held to the contract's rules
(`_naming_missing_variables`) and its `data_from_fit` names a damaged fit file (`_naming_damaged_source`).
Kept apart from the estimator's lifecycle, which they only guard; they never import the estimator (it
passes itself where they need it).
"""

from __future__ import annotations

import inspect

from bayes_wsc import contract
from bayes_wsc.errors import InputError


def _check_contract(cls, base: type, required: tuple[str, ...]) -> None:
    """A model class lacking an abstract method of `base` (`Estimator`) or a class attribute of `required`
    (`REQUIRED_ATTRIBUTES`): one `TypeError` when the class is defined, naming the class and what it lacks."""
    missing = [name for name in sorted(base.__abstractmethods__)
               if getattr(cls, name, None) is None or getattr(getattr(cls, name), "__isabstractmethod__", False)]
    missing += [name for name in required if getattr(cls, name, None) is None]
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
