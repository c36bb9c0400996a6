"""Fit files: what a fit holds when it is saved, and how a saved fit is read back and checked.

A fit is written as netCDF with its draws, its data and every setting (`assemble` makes the attrs,
`save` writes them), so that it is reloaded, predicted from and reported without the original files.
Reading one back (`load`, `from_idata`) checks what another version or a damaged file may hold: its
groups and attrs (`ATTR_KINDS`), its settings, and its draws (`_usable_draws`). Apart from the fit's
lifecycle because it is the one place that knows the file's layout; the estimator's `save`, `load`
and `from_idata` delegate here.
"""

from __future__ import annotations

import datetime
import inspect
import os
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from bayes_wsc import criticism, inference, registry
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.value_checks import _described, _is_mapping, _is_texts, _shown, check_path, is_count
from bayes_wsc.variant_files import VARIANT_ATTR, VariantFacts
from bayes_wsc.version import package_version

#: the ways a fit is made (`Estimator.method`), which a saved fit's attrs name
METHODS = ("map", "nuts", "laplace")
#: the attr of a fit saved without its pointwise log-likelihood, which `load` computes on first use
LOG_LIKELIHOOD_LEFT_OUT = inference.LOG_LIKELIHOOD_LEFT_OUT
#: what a loaded fit keeps pending when its file left the log-likelihood out (`Estimator.save`)
SAVED_WITHOUT_LOG_LIKELIHOOD = "saved without it"
#: the group of a saved Laplace or NUTS fit holding the MAP the fit started from (`Estimator.map_point_`), so
#: that a check reading the file needs no MAP of its own (the first model's aggregation check refitted it)
MODE_GROUP = "posterior_mode"


def _is_check_rows(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) and set(criticism.REQUIRED_COLUMNS) <= set(v)
                                           for v in value)


def _is_fit_info(value) -> bool:
    """{"map": {...}, "nuts": {...}, "laplace": {...}, "free_variables": [...]}: each stage's record a mapping."""
    return isinstance(value, dict) and all(isinstance(value[k], dict) for k in ("map", "nuts", "laplace") if k in value)


#: what `model_terms.likelihood_terms` says of each term
TERM_ANSWERS = ("default", "own", "unverified")
#: what every saved fit's attrs must be, when present (`Estimator.from_idata`); a model adds `attr_kinds`
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


def assemble(est, coords, dims, draws, data, fit_info) -> inference.Groups:
    """The fit's groups: the draws, the data's groups (`data_groups`), and the attrs every fit file holds
    (`ATTR_KINDS` says what each must be when it is read back)."""
    groups = est.data_groups(data)
    attrs = {
        "model": est.model_name,
        "package_version": package_version(),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "method": est.method,
        "settings": est.get_params(),
        "settings_used": est.settings_for(data),
        "fit_info": fit_info,
        **groups.get("attrs", {}),
    }
    if est.model_file is not None:
        facts = est.variant_facts()
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


def save(est, path) -> Path:
    """`Estimator.save`: the fit as netCDF, without a pending log-likelihood the file can rebuild."""
    est._check_fitted()
    check_path(path, "save", "a fit file")
    pending = est.__dict__.get("_pending_log_likelihood")  # one still in the file it was loaded from is copied
    if pending is not None and not isinstance(pending, LogLikelihoodInFile) \
            and est.log_likelihood_from_file() is not None:
        groups = inference.with_attrs(est._fitted(), {LOG_LIKELIHOOD_LEFT_OUT: True})
    else:
        groups = inference.Groups(inference.groups_of(est._complete_log_likelihood()))
    mode = mode_group(est)
    if mode is not None:
        groups[MODE_GROUP] = mode
    return inference.save(groups, path)


def mode_group(est):
    """The MAP a Laplace or NUTS fit started from, what `map_point_` gives in the process that made the
    fit, as a Dataset over the posterior's dims without chain and draw; None for a MAP fit (its posterior
    is that point) or a fit without one (NUTS started elsewhere, a loaded fit of an older file)."""
    import numpy as np
    import xarray as xr

    mode = getattr(est, "_mode", None)
    posterior = est._fitted().posterior
    if mode is None or not inference.has_draws(est._fitted()):
        return None
    variables = {}
    for name, values in mode.posterior.items():
        if name.startswith(inference.LOG_LIKELIHOOD_PREFIX):
            continue
        point = np.asarray(values)[0, 0]
        dims = list(posterior[name].dims[2:]) if name in posterior.data_vars else []
        if name not in posterior.data_vars or posterior[name].shape[2:] != point.shape:
            dims = [f"{name}_dim_{i}" for i in range(point.ndim)]
        variables[name] = xr.Variable(dims, point)
    coords = {d: posterior[d] for v in variables.values() for d in v.dims if d in posterior.coords}
    return xr.Dataset(variables, coords=coords)


class _SavedMode:
    """A saved fit's MAP (the file's `MODE_GROUP`) as the fit's own MAP draws read: (1, 1, ...) arrays."""

    def __init__(self, ds):
        self.posterior = {str(name): variable.values[None, None] for name, variable in ds.data_vars.items()}


def load(path, *, log_likelihood_on_first_use: bool = False):
    """Load any saved fit; the model named in the file picks the estimator class.
    `log_likelihood_on_first_use`: leave the file's `log_likelihood` group (draws x units, often most of
    the file: 160 MB of pcmix's 5,000 items at 4,000 draws) in the file until something reads it
    (`LogLikelihoodInFile`), for the commands that may not (`predict`, `summary`, `ppc`); `check` and
    `report` read it on first use. The file must then stay as it is while the fit is in use."""
    check_path(path, "load")
    later = ("log_likelihood",) if log_likelihood_on_first_use else ()
    idata = inference.load(path, leave=later)
    name = idata.posterior.attrs["model"]
    if not isinstance(name, str) or name not in registry.NAMES:
        raise InputError(f"fit file {str(path)!r} holds a model {name!r} that this version does not know")
    cls = registry.get(name).estimator_class()
    estimator = cls.from_idata(idata, source=f"fit file {str(path)!r}")
    if later and "_pending_log_likelihood" not in estimator.__dict__ and inference.has_group(path, later[0]):
        estimator._pending_log_likelihood = LogLikelihoodInFile.of(path)
    return estimator


class LogLikelihoodInFile(NamedTuple):
    """A loaded fit's `log_likelihood` group left in its file until first use (`load`), with the file's size
    and modification time when it was loaded: a file changed or removed since then is an `InputError` on
    reading, never another fit's values."""

    path: str
    stamp: tuple[int, int]

    @classmethod
    def of(cls, path) -> LogLikelihoodInFile:
        return cls(os.path.abspath(path), _stamp(path))

    def read(self, source: str):
        """The group as `inference.load` reads it (a Dataset)."""
        try:
            changed = _stamp(self.path) != self.stamp
        except OSError:
            raise InputError(f"{source} was removed after it was loaded: its log-likelihood, left in the file "
                             "until first use, cannot be read; load the fit again") from None
        if changed:
            raise InputError(f"{source} changed after it was loaded: its log-likelihood, left in the file until "
                             "first use, would not be this fit's; load the fit again")
        return inference.load_group(self.path, "log_likelihood")


def _stamp(path) -> tuple[int, int]:
    stat = os.stat(path)
    return stat.st_size, stat.st_mtime_ns


def load_as(cls, path):
    """`Estimator.load`: the fit at `path`, checked to be one of `cls`."""
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


def from_idata(cls, idata, source: str = "this fit", base_settings: Iterable[str] = ()):
    """`Estimator.from_idata`: an estimator of `cls` around a saved fit, checked; `base_settings` are
    the keyword settings every estimator takes (`Estimator.__init__`'s)."""
    if "posterior" not in inference.group_names(idata):
        raise InputError(f"{source} is not a bayes_wsc fit (no posterior group), got {_described(idata)}")
    idata = inference.groups_of(idata)
    mode = idata.get(MODE_GROUP)
    if mode is not None:  # not a group ArviZ knows: kept beside the fit (`map_point_`), not in it
        idata = inference.Groups((name, ds) for name, ds in idata.items() if name != MODE_GROUP)
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
    known = set(inspect.signature(cls.__init__).parameters) | set(base_settings)
    unknown = set(params) - known
    if unknown:
        warnings.warn(f"{source} ({written_by}) has settings this version does not know and ignores: "
                      f"{sorted(unknown)}", FitWarning, stacklevel=3)  # the caller of Estimator.from_idata
    estimator = cls(**{k: v for k, v in params.items() if k in known})
    if estimator.model_file is not None:  # what reading the variant's fit needs, never from its file
        estimator._variant_stored = VariantFacts.from_attrs(attrs)
    try:
        estimator.check_params()
    except InputError as exc:
        raise InputError(f"{source} ({written_by}) holds a setting this version refuses: {exc}") from None
    estimator.idata_, estimator._source_draws = _usable_draws(idata, cls.bounds, source)
    estimator._source = source
    if mode is not None:
        estimator._mode = _SavedMode(mode)
    if attrs.get(LOG_LIKELIHOOD_LEFT_OUT) and "log_likelihood" not in idata \
            and estimator.log_likelihood_from_file() is not None:
        estimator._pending_log_likelihood = SAVED_WITHOUT_LOG_LIKELIHOOD
    return estimator


def _usable_draws(idata, bounds: dict, source: str):
    """The fit without the draws that hold a value the model cannot have produced (not finite, or
    outside `bounds`), with one `FitWarning` per variable holding such values, and the indices of the
    draws kept (None: all of them); an `InputError` when no draw is left."""
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
        return idata, None
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
                      FitWarning, stacklevel=4)  # the caller of Estimator.from_idata
    return inference.select_draws(idata, kept), kept
