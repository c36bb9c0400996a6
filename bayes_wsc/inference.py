"""Every ArviZ call of the package lives here.

Two ArviZ families are supported, paired with the PyMC family of the Python
version (pyproject.toml): ArviZ 0.2x (Python 3.11, PyMC 5), whose fits are
`InferenceData`, and ArviZ 1 (Python >= 3.12, PyMC 6: arviz-base,
arviz-stats, arviz-plots), whose fits are `xarray.DataTree` with the same
groups, dims and coords. This module is the one place that knows which is
installed (`arviz_1`); the rest of the package passes fits around, names
their groups with `group_names`, reads a LOO result with `elpd_values` and
asks this module for summaries, intervals, diagnostics and files. R-hat, ESS,
HDI and the summary table are computed in NumPy (`draw_stats`, held to both
families' numbers by tests/test_draw_stats.py), so both stacks give the same
figures for the same draws; PSIS-LOO and `compare` are ArviZ's, their tables
put in one layout (0.2x's column names) whichever ArviZ made them.

ArviZ takes 4-5 s to import (it loads its plotting stack and compiles numba
functions), as long as the whole MAP of the paper's headline workload. So a
fit is first assembled as `Groups`, plain xarray Datasets that read like an
InferenceData (`groups.posterior["rho"]`), which this module saves and
summarizes without ArviZ (`draw_stats` has its summary arithmetic in NumPy);
`load` reads a saved fit back as `Groups`, and `to_inference_data` wraps them
when ArviZ is wanted.
"""

from __future__ import annotations

import functools
import json
import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pandas as pd
import xarray as xr

from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.errors import InputError

if TYPE_CHECKING:
    from arviz import InferenceData

SETTINGS_ATTR = "bayes_wsc_settings"
#: a posterior variable named with this prefix holds pointwise log-likelihood terms
#: (`likelihoods.record_pointwise`); `from_draws` moves it to the `log_likelihood` group, unprefixed
LOG_LIKELIHOOD_PREFIX = "log_likelihood__"
#: a fit saved without its pointwise log-likelihood says so in this attr (`Estimator.save`)
LOG_LIKELIHOOD_LEFT_OUT = "log_likelihood_left_out"


def _az():
    import arviz  # its once-a-day refactor notice is filtered by bayes_wsc._runtime

    return arviz


@functools.cache
def arviz_1() -> bool:
    """Whether the installed ArviZ is 1.x (fits are DataTree), read from its metadata: no import."""
    from importlib.metadata import version

    return int(version("arviz").split(".")[0]) >= 1


def __getattr__(name):
    if name == "InferenceData":
        return xr.DataTree if arviz_1() else _az().InferenceData
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Groups(dict):
    """A fit's InferenceData groups (name -> xarray Dataset), read like an InferenceData:
    `groups.posterior`, `groups.groups()`, `groups["posterior"]`."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def groups(self) -> list[str]:
        return list(self)


def group_names(idata) -> list[str]:
    """The names of a fit's groups, whether it is `Groups`, an InferenceData or a DataTree."""
    if isinstance(idata, Groups):
        return list(idata)
    if isinstance(idata, xr.DataTree):
        return list(idata.children)
    groups = getattr(idata, "groups", None)
    return list(groups()) if callable(groups) else []


def groups_of(idata) -> Groups:
    """The groups of an InferenceData or DataTree (or of `Groups`), as `Groups`."""
    if isinstance(idata, Groups):
        return idata
    if isinstance(idata, xr.DataTree):
        return Groups((name, node.to_dataset()) for name, node in idata.children.items())
    return Groups((g, idata[g]) for g in idata.groups())


def to_inference_data(groups: Groups):
    """The fit as the installed ArviZ works with it: a DataTree (ArviZ 1) or an InferenceData (0.2x),
    over the same Datasets."""
    if arviz_1():
        return xr.DataTree.from_dict(dict(_labels_beside_draws(groups)))
    return _az().InferenceData(**groups)


def _labels_beside_draws(groups: Groups) -> Groups:
    """The groups as ArviZ 1 can summarize them. Its `summary` stacks a group's variables and refuses a
    coordinate that not all of them carry (a bin's level labels on rho[bin] beside a scalar pi), so the
    groups of draws keep their dimension coordinates, and any other coordinate (labels) is kept once in
    `constant_data`, beside the data."""
    out, labels = Groups(groups), {}
    for name, ds in groups.items():
        extra = [c for c in ds.coords if c not in ds.dims] if name in DRAW_GROUPS else []
        if extra:
            labels.update({c: ds.coords[c].variable for c in extra})
            out[name] = ds.drop_vars(extra)
    if labels:
        constant = out.get("constant_data", xr.Dataset())
        out["constant_data"] = constant.assign_coords({c: v for c, v in labels.items() if c not in constant.variables})
    return out


def _for_arviz(idata):
    return to_inference_data(idata) if isinstance(idata, Groups) else idata


def _dataset(values: dict[str, np.ndarray], coords: dict, dims: dict, sampled: bool) -> xr.Dataset:
    """Variables with their dims (`name_dim_i` where none are given, as ArviZ names them) and the
    coordinates of the dims they use; sampled groups lead with (chain, draw)."""
    variables, used = {}, set()
    for name, array in values.items():
        array = np.asarray(array)
        lead = ["chain", "draw"] if sampled else []
        shape = array.shape[len(lead):]
        named = list(dims.get(name, []))[:len(shape)]
        var_dims = lead + named + [f"{name}_dim_{i}" for i in range(len(named), len(shape))]
        variables[name] = (var_dims, array)
        used.update(var_dims)
    ds_coords = {k: v for k, v in coords.items() if k in used}
    if sampled and values:
        chains, draws = np.shape(next(iter(values.values())))[:2]
        ds_coords.update(chain=np.arange(chains), draw=np.arange(draws))
    return xr.Dataset(variables, coords=ds_coords)


def from_draws(
    posterior: dict[str, np.ndarray],
    *,
    sample_stats: dict[str, np.ndarray] | None = None,
    coords: dict | None = None,
    dims: dict[str, list[str]] | None = None,
    observed_data: dict[str, np.ndarray] | None = None,
    constant_data: dict[str, np.ndarray] | None = None,
    attrs: dict | None = None,
    extra_coords: dict | None = None,
) -> Groups:
    """Labelled InferenceData groups from (chain, draw, ...) arrays; settings go to attrs as JSON.

    Posterior variables named `LOG_LIKELIHOOD_PREFIX + name` go to the `log_likelihood` group as `name`.
    """
    coords = {k: np.asarray(v) for k, v in (coords or {}).items()}
    dims = dict(dims or {})
    pointwise = {k[len(LOG_LIKELIHOOD_PREFIX):]: v for k, v in posterior.items() if k.startswith(LOG_LIKELIHOOD_PREFIX)}
    posterior = {k: v for k, v in posterior.items() if not k.startswith(LOG_LIKELIHOOD_PREFIX)}
    dims.update({name: dims[LOG_LIKELIHOOD_PREFIX + name] for name in pointwise if LOG_LIKELIHOOD_PREFIX + name in dims})
    groups = Groups()
    for name, values, sampled in (("posterior", posterior, True), ("log_likelihood", pointwise, True),
                                  ("sample_stats", sample_stats, True),
                                  ("observed_data", observed_data, False),
                                  ("constant_data", constant_data, False)):
        if values:
            ds = _dataset(values, coords, dims, sampled)
            if extra_coords:
                ds = ds.assign_coords({k: v for k, v in extra_coords.items() if v[0] in ds.dims})
            groups[name] = ds
    if attrs:
        set_attrs(groups, attrs)
    return groups


def add_log_likelihood(groups: Groups, recorded: dict[str, np.ndarray], dims: dict[str, list[str]]) -> None:
    """Add the `log_likelihood` group to a fit assembled without it: `recorded` holds (chain, draw, ...)
    arrays under their `LOG_LIKELIHOOD_PREFIX` names, `dims` their dims; attrs come from the posterior, coords
    from the posterior or, for a dim it lacks (units named by the data), the data's groups."""
    posterior = groups["posterior"]
    values = {k[len(LOG_LIKELIHOOD_PREFIX):]: v for k, v in recorded.items()}
    var_dims = {k[len(LOG_LIKELIHOOD_PREFIX):]: v for k, v in dims.items() if k in recorded}
    ds = _dataset(values, {}, var_dims, sampled=True)
    coords = {}
    for group in ("constant_data", "observed_data", "posterior"):
        if group in groups:
            coords.update(groups[group].coords.items())
    ds = ds.assign_coords({name: coord for name, coord in coords.items()
                           if name not in ("chain", "draw") and set(coord.dims) <= set(ds.dims)
                           and all(coord.sizes[d] == ds.sizes[d] for d in coord.dims)})
    ds.attrs.update(posterior.attrs)
    groups["log_likelihood"] = ds


def set_attrs(idata: InferenceData, attrs: dict) -> None:
    """Store settings on every group as netCDF-safe attributes (nested values as JSON)."""
    flat = {k: (v if isinstance(v, (str, int, float)) and not isinstance(v, bool) else json.dumps(v))
            for k, v in attrs.items()}
    for group in group_names(idata):
        idata[group].attrs.update(flat)


def with_attrs(idata, attrs: dict) -> Groups:
    """The fit's groups with `attrs` set as `set_attrs` does, on copies: the fit itself is unchanged
    (its arrays are shared, not copied)."""
    copied = Groups((name, ds.copy(deep=False)) for name, ds in groups_of(idata).items())
    for ds in copied.values():
        ds.attrs = dict(ds.attrs)
    set_attrs(copied, attrs)
    return copied


def get_attrs(idata: InferenceData) -> dict:
    attrs = dict(idata.posterior.attrs)
    out = {}
    for key, value in attrs.items():
        if isinstance(value, str):
            try:
                out[key] = json.loads(value)
                continue
            except ValueError:
                pass
        out[key] = value.item() if isinstance(value, np.generic) else value
    return out


def select_draws(idata, draws: np.ndarray):
    """The fit with only these draw indices, in every group that has draws (renumbered 0, 1, ...)."""
    groups = Groups()
    for name, ds in groups_of(idata).items():
        if "draw" in ds.dims:
            ds = ds.isel(draw=np.asarray(draws)).assign_coords(draw=np.arange(len(draws)))
        groups[name] = ds
    return groups if isinstance(idata, Groups) else to_inference_data(groups)


# ---------------------------------------------------------------------- summaries
def has_draws(idata) -> bool:
    """Whether the fit holds more than one draw, and so has intervals (a MAP holds one point)."""
    return idata.posterior.sizes["chain"] * idata.posterior.sizes["draw"] > 1


def summary(idata: InferenceData, var_names: list[str], hdi_prob: float = DEFAULT_CI) -> pd.DataFrame:
    """`az.summary`'s table, computed in NumPy (`draw_stats`: the same arithmetic, without importing
    ArviZ): mean, sd and HDI, and after more than one chain mcse_mean, mcse_sd, ess_bulk, ess_tail
    and r_hat. A MAP fit (a single draw) gets one column, `map`, and no intervals. Rows are labelled
    as ArviZ labels them (`rho[3]`, `rho[b01]`)."""
    posterior = idata.posterior
    if not has_draws(idata):
        rows = {label: float(values[0, 0][index]) for name in var_names
                for label, index, values in _elements(posterior, name)}
        return pd.DataFrame({"map": pd.Series(rows, dtype=float)})
    from bayes_wsc import draw_stats

    # one chain (a Laplace fit's independent draws): no R-hat, and no ESS of chains, as ArviZ's kind="stats"
    diagnose = posterior.sizes["chain"] > 1
    columns = ["mean", "sd", *draw_stats.hdi_columns(hdi_prob), *(draw_stats.DIAGNOSTICS if diagnose else ())]
    rows = {}
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in var_names:
            elements = _elements(posterior, name)
            values = elements[0][2]
            flat = values.reshape(values.shape[0] * values.shape[1], -1)
            mean, sd = flat.mean(axis=0), flat.std(axis=0, ddof=1)
            bounds = draw_stats.hdi(flat, hdi_prob)
            if diagnose:  # every element of the variable at once
                stats = draw_stats.chain_statistics_columns(values.reshape(values.shape[0], values.shape[1], -1))
            for j, (label, index, _) in enumerate(elements):
                row = [mean[j], sd[j], bounds[j, 0], bounds[j, 1]]
                if diagnose:
                    row += stats[j].tolist()
                rows[label] = row
    return pd.DataFrame.from_dict(rows, orient="index", columns=columns, dtype=float)


def _elements(posterior, name: str) -> list[tuple[str, tuple, np.ndarray]]:
    """(label, index, values) of every element of a posterior variable, in C order, labelled as
    ArviZ labels them: `name[coord, coord]` by coordinate values, or positions where a dim has none;
    `values` is the whole (chain, draw, ...) array."""
    variable = posterior[name].transpose("chain", "draw", ...)
    values = np.asarray(variable.values)
    dims = variable.dims[2:]
    labels = [variable.coords[d].values if d in variable.coords else np.arange(n)
              for d, n in zip(dims, values.shape[2:])]
    out = []
    for index in np.ndindex(*values.shape[2:]):
        label = ", ".join(str(labels[axis][i]) for axis, i in enumerate(index))
        out.append((f"{name}[{label}]" if index else name, index, values))
    return out


def hdi(samples: np.ndarray, prob: float) -> np.ndarray:
    """Highest-density interval along the first axis of a (draws, ...) array: (..., 2).

    A single draw (a MAP) has no interval: its bounds are NaN, never a zero-width interval that
    would read as certainty. Any fit with more draws (NUTS, or draws around a mode) gets its HDI.
    """
    samples = np.asarray(samples)
    if samples.shape[0] == 1:
        return np.full((*samples.shape[1:], 2), np.nan)
    from bayes_wsc.draw_stats import hdi as numpy_hdi  # az.hdi's arithmetic, without importing ArviZ

    return numpy_hdi(samples.reshape(samples.shape[0], -1), prob).reshape(*samples.shape[1:], 2)


def convergence(idata, var_names: list[str]) -> dict[str, dict[str, float]]:
    """Worst R-hat (rank-normalized), smallest bulk and tail ESS per variable (`draw_stats`: the same
    figures on both ArviZ families; a constant variable, pi with mu fixed at HE, has NaN R-hat and ESS)."""
    from bayes_wsc import draw_stats

    out = {}
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in var_names:
            values = _chain_draw_columns(idata.posterior[name])
            stats = draw_stats.convergence_statistics_columns(values)
            out[name] = {"rhat": float(np.nanmax(stats[:, 0])) if np.isfinite(stats[:, 0]).any() else np.nan,
                         "ess_bulk": float(np.nanmin(stats[:, 1])) if np.isfinite(stats[:, 1]).any() else np.nan,
                         "ess_tail": float(np.nanmin(stats[:, 2])) if np.isfinite(stats[:, 2]).any() else np.nan}
    return out


def _chain_draw_columns(variable: xr.DataArray) -> np.ndarray:
    """A posterior variable's draws as (chain, draw, elements)."""
    values = np.asarray(variable.transpose("chain", "draw", ...).values, dtype=float)
    return values.reshape(values.shape[0], values.shape[1], -1)


# ---------------------------------------------------------------------- model comparison
def loo_unavailable(idata, what: str = "this fit") -> str | None:
    """Why LOO cannot be computed for a fit, in one line, or None when it can."""
    posterior = idata.posterior
    if posterior.sizes["chain"] * posterior.sizes["draw"] == 1:
        return (f"LOO needs posterior draws, and {what} is a MAP fit (one point, the posterior mode): "
                "refit it with method='nuts'")
    names = group_names(idata)
    if "log_likelihood" not in names and get_attrs(idata).get(LOG_LIKELIHOOD_LEFT_OUT):
        return (f"{what} was saved without its pointwise log-likelihood, which costs as much as the fit to compute: "
                "load the file with bayes_wsc.load (or the model's load), which computes it on first use")
    if "log_likelihood" not in names or not idata["log_likelihood"].data_vars:
        version = posterior.attrs.get("package_version", "unknown")
        return (f"{what} has no pointwise log-likelihood (written by bayes_wsc {version}, before fits kept "
                "one): refit it to compute LOO")
    return None


def loo(idata, pointwise: bool = True):
    """`az.loo` (PSIS-LOO) on the fit's `log_likelihood` group, as the installed ArviZ returns it (read it
    with `elpd_values`); ArviZ's warnings are left to the caller, who reads the Pareto k values
    (`pareto_k_summary`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _az().loo(_for_arviz(idata), pointwise=pointwise)


def psis_loo(idata):
    """PSIS-LOO of the fit's `log_likelihood` group computed in NumPy (`psis.py`: `az.loo`'s arithmetic,
    without importing ArviZ), read as `loo`'s result is read: `elpd_loo`, `se`, `p_loo`, `good_k`, and
    `pareto_k` and `loo_i` as DataArrays over the units. What `check` and the report's LOO use."""
    from bayes_wsc import psis

    variables = list(idata["log_likelihood"].data_vars.values())
    if len(variables) != 1:
        raise ValueError(f"LOO needs one pointwise log-likelihood variable, the fit has {len(variables)}")
    pointwise = variables[0].transpose("chain", "draw", ...)
    posterior = idata.posterior
    n_samples = posterior.sizes["chain"] * posterior.sizes["draw"]
    r_eff = psis.relative_efficiency([v.transpose("chain", "draw", ...).values for v in posterior.data_vars.values()],
                                     n_samples)
    result = psis.loo(pointwise.values, r_eff)
    units = pointwise.isel(chain=0, draw=0, drop=True)
    result.pareto_k = units.copy(data=result.pareto_k).rename("pareto_shape")
    result.loo_i = units.copy(data=result.loo_i).rename("loo_i")
    return result


class ELPD(NamedTuple):
    """A LOO result in one layout whichever ArviZ computed it (0.2x: elpd_loo, p_loo, loo_i; 1.x: elpd, p,
    elpd_i)."""

    elpd: float
    se: float
    p: float
    pareto_k: xr.DataArray
    good_k: float
    pointwise: xr.DataArray | None


def elpd_values(elpd) -> ELPD:
    """The figures of a `loo` result, named the same on both ArviZ families."""
    first = "elpd" if hasattr(elpd, "p") and not hasattr(elpd, "p_loo") else "elpd_loo"
    if first == "elpd":
        return ELPD(float(elpd.elpd), float(elpd.se), float(elpd.p), elpd.pareto_k, float(elpd.good_k),
                    getattr(elpd, "elpd_i", None))
    return ELPD(float(elpd.elpd_loo), float(elpd.se), float(elpd.p_loo), elpd.pareto_k,
                float(getattr(elpd, "good_k", 0.7)), getattr(elpd, "loo_i", None))


def waic(idata, pointwise: bool = True) -> pd.Series:
    """WAIC (Watanabe 2010, as Vehtari, Gelman and Gabry 2017 compute it) on the fit's `log_likelihood`
    group, in NumPy: ArviZ 1 dropped it. The fields are ArviZ 0.2x's (`elpd_waic`, `se`, `p_waic`,
    `waic_i`), held to `az.waic` by tests/test_draw_stats.py."""
    from bayes_wsc import draw_stats

    variables = list(idata["log_likelihood"].data_vars.values())
    if len(variables) != 1:
        raise InputError(f"WAIC needs one log-likelihood variable, the fit has {len(variables)}")
    values = variables[0].transpose("chain", "draw", ...)
    flat = np.asarray(values.values, dtype=float).reshape(values.shape[0] * values.shape[1], -1)
    elpd, se, p_waic, elpd_i, warn = draw_stats.waic(flat)
    out = {"elpd_waic": elpd, "se": se, "p_waic": p_waic, "n_samples": flat.shape[0],
           "n_data_points": flat.shape[1], "warning": warn, "scale": "log"}
    if pointwise:
        out["waic_i"] = xr.DataArray(elpd_i.reshape(values.shape[2:]), dims=values.dims[2:],
                                     coords={d: values.coords[d] for d in values.dims[2:] if d in values.coords})
    return pd.Series(out)


#: `compare`'s columns, ArviZ 0.2x's names and signs whichever ArviZ computed the table: elpd_diff is the best
#: fit's elpd_loo minus this one's, >= 0 (ArviZ 1 writes it as this one's minus the best's)
COMPARE_COLUMNS = ["rank", "elpd_loo", "p_loo", "elpd_diff", "weight", "se", "dse", "warning", "scale"]


def compare(fits: dict, ic: str = "loo") -> pd.DataFrame:
    """`az.compare` of labelled fits (label -> fit), best first, in one layout on both ArviZ families
    (`COMPARE_COLUMNS`; ArviZ 1's further columns, such as p_worse, follow them). ArviZ 1 compares by
    PSIS-LOO only, so `ic="waic"` is refused there in one line."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        converted = {label: _for_arviz(idata) for label, idata in fits.items()}
        if not arviz_1():
            return _az().compare(converted, ic=ic)
        if ic != "loo":
            raise InputError("ic='waic': ArviZ 1 (installed here) compares fits by PSIS-LOO only; use ic='loo'")
        elpds = {label: _az().loo(fit, pointwise=True) for label, fit in converted.items()}
        table = _az().compare(elpds, round_to="none")
    table = table.rename(columns={"elpd": "elpd_loo", "p": "p_loo"})
    table["elpd_diff"] = -table["elpd_diff"]
    table["warning"] = [bool(np.any(np.asarray(elpds[label].pareto_k) > elpds[label].good_k))
                        for label in table.index]
    table["scale"] = "log"
    return table[COMPARE_COLUMNS + [c for c in table.columns if c not in COMPARE_COLUMNS]]


def pareto_k_summary(elpd, threshold: float | None = None) -> dict:
    """The Pareto k values of a `loo` result: how many units exceed ArviZ's threshold for this number of
    draws (min(1 - 1/log10(S), 0.7); or `threshold`) and which unit is worst."""
    values = elpd_values(elpd)
    k = np.asarray(values.pareto_k)
    threshold = values.good_k if threshold is None else threshold
    worst = int(np.nanargmax(k)) if k.size else -1
    dims = getattr(values.pareto_k, "dims", ())
    labels = values.pareto_k.coords[dims[0]].values if dims and dims[0] in values.pareto_k.coords else None
    return {"max_k": float(np.nanmax(k)) if k.size else float("nan"), "threshold": threshold,
            "bad": int(np.sum(k > threshold)), "units": int(k.size),
            "worst": str(labels[worst]) if labels is not None and worst >= 0 else str(worst)}


# ---------------------------------------------------------------------- plots
# Drawn with matplotlib here rather than by ArviZ: arviz-plots (ArviZ 1) draws on a PlotCollection of its own
# and cannot draw into a report's axes, and one drawing on both stacks keeps the reports alike.
def plot_ppc(idata, axes, *, var_names: list[str] | None = None, num_pp_samples: int = 50, seed: int = 0):
    """The posterior predictive check of variables with many elements (groups, items), one per axis of
    `axes`, as `az.plot_ppc` draws it: the observed statistic's distribution over its elements (a density
    on shared bins) against `num_pp_samples` replicates' and the replicates' mean."""
    names = list(idata.posterior_predictive.data_vars) if var_names is None else list(var_names)
    rng = np.random.default_rng(seed)
    for name, ax in zip(names, axes):
        observed = np.asarray(idata.observed_data[name].values, dtype=float).ravel()
        replicated = idata.posterior_predictive[name]
        draws = np.asarray(replicated.values, dtype=float)
        draws = draws.reshape(draws.shape[0] * draws.shape[1], -1)
        chosen = draws[rng.choice(len(draws), size=min(num_pp_samples, len(draws)), replace=False)]
        finite = np.concatenate([observed, chosen.ravel()])
        finite = finite[np.isfinite(finite)]
        edges = np.histogram_bin_edges(finite, bins=min(40, max(10, int(np.sqrt(observed.size)))))
        centres = (edges[:-1] + edges[1:]) / 2
        densities = np.array([np.histogram(row, bins=edges, density=True)[0] for row in chosen])
        for i, row in enumerate(densities):
            ax.plot(centres, row, color="C0", alpha=0.2, lw=0.8, label="Posterior predictive" if i == 0 else None)
        ax.plot(centres, np.histogram(observed, bins=edges, density=True)[0], color="k", lw=1.5, label="Observed")
        ax.plot(centres, densities.mean(axis=0), color="C1", ls="--", lw=1.2, label="Posterior predictive mean")
        ax.set_xlabel(name)
        ax.legend(frameon=False)
    return names


def plot_rank(idata, name: str, selection: dict, ax) -> None:
    """The rank plot of one element of a posterior variable (`selection`: dim -> label), as `az.plot_rank`
    draws it: every draw ranked among all chains' draws, one histogram of ranks per chain, stacked, with
    the uniform count dashed."""
    variable = idata.posterior[name]
    if selection:
        variable = variable.sel({d: v for d, v in selection.items()})
    values = np.asarray(variable.transpose("chain", "draw").values, dtype=float)
    from bayes_wsc.draw_stats import average_ranks

    ranks = average_ranks(values)
    chains, draws = values.shape
    bins = max(5, min(20, draws // 10))
    edges = np.linspace(0.5, chains * draws + 0.5, bins + 1)
    expected = draws / bins
    for c in range(chains):
        counts = np.histogram(ranks[c], bins=edges)[0]
        offset = c * expected * 1.8
        ax.bar(edges[:-1], counts, width=np.diff(edges), bottom=offset, align="edge", color=f"C{c % 10}",
               edgecolor="white", alpha=0.8)
        ax.axhline(offset + expected, color="k", ls="--", lw=0.8)
    ax.set_yticks([c * expected * 1.8 for c in range(chains)], [str(c) for c in range(chains)])
    ax.set_xlabel("rank (all chains)")
    ax.set_ylabel("chain")


def rhat_elements(idata, name: str) -> xr.DataArray:
    """Rank-normalized R-hat of every element of a posterior variable (`draw_stats`)."""
    from bayes_wsc import draw_stats

    variable = idata.posterior[name].transpose("chain", "draw", ...)
    values = _chain_draw_columns(variable)
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        rhat = draw_stats.convergence_statistics_columns(values)[:, 0]
    return xr.DataArray(rhat.reshape(variable.shape[2:]), dims=variable.dims[2:],
                        coords={d: variable.coords[d] for d in variable.dims[2:] if d in variable.coords})


# ---------------------------------------------------------------------- files
def save(idata: InferenceData, path: str | Path) -> Path:
    """Write netCDF atomically (`outputs.write_file`: a temporary file in the same folder, then
    renamed), so an interrupted write never leaves a truncated fit behind."""
    from bayes_wsc import outputs

    return outputs.write_file(path, lambda tmp: _write_groups(groups_of(idata), tmp), "fit file")


def _write_groups(groups: Groups, path: str) -> None:
    """One netCDF group per InferenceData group, numbers compressed: the layout of ArviZ's
    `InferenceData.to_netcdf`, which `az.from_netcdf` reads back.

    HDF5 does not survive a full disk: a write that fails half-way may end the process (a
    segmentation fault) before Python sees an error. So unless the disk has room for the fit
    uncompressed, twice over, the file is made in memory and written as plain bytes, whose
    failure is an ordinary OSError (No space left on device).
    """
    import io

    from bayes_wsc.outputs import free_bytes

    bound = sum(v.nbytes for ds in groups.values() for v in ds.variables.values()) + 2**20
    free = free_bytes(os.path.dirname(os.path.abspath(path)))
    if free is not None and free < 2 * bound:
        buffer = io.BytesIO()
        _write_netcdf(groups, buffer)
        with open(path, "wb") as handle:
            handle.write(buffer.getbuffer())
            handle.flush()
            os.fsync(handle.fileno())  # a late failure of the disk is an error here, not after the rename
    else:
        _write_netcdf(groups, path)


#: draws are dense floats that zlib barely shrinks: 1000 x 10,000 draws of mu by 4%, at 12 times the
#: time of writing them plain (2.0 s against 0.17 s). Arrays of draws this large are written plain.
PLAIN_DRAWS = 2**20
DRAW_GROUPS = ("posterior", "log_likelihood", "posterior_predictive", "sample_stats")


def _write_netcdf(groups: Groups, target) -> None:
    mode = "w"
    for name, ds in groups.items():
        encoding = {var: {"zlib": True} for var, values in ds.variables.items() if values.dtype.kind in "biufc"
                    and not (name in DRAW_GROUPS and values.dtype.kind == "f" and values.size >= PLAIN_DRAWS)}
        try:
            ds.to_netcdf(target, mode=mode, group=name, engine="h5netcdf", encoding=encoding)
        except (OSError, RuntimeError) as exc:
            if isinstance(exc, OSError) and exc.errno is not None:
                raise
            raise _hdf5_error(exc) from None
        mode = "a"


def _hdf5_error(exc: Exception) -> OSError:
    """HDF5 reports a failed write (a full disk) as a RuntimeError or an OSError without an errno,
    in several lines that name the temporary file and hold the system's errno: the OSError it was."""
    import errno
    import re

    found = re.search(r"errno = (\d+)", str(exc))
    if found and int(found.group(1)):
        code = int(found.group(1))
        return OSError(code, os.strerror(code))
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return OSError(errno.EIO, f"the netCDF writer failed ({first})")


def load(path: str | Path, leave: Iterable[str] = ()) -> Groups:
    """Read a fit as `Groups` (one xarray Dataset per netCDF group, as `az.from_netcdf` reads them,
    but without importing ArviZ; `to_inference_data` wraps them), except the groups named in `leave`
    (`load_group` reads one later); a missing file or a file that is not a bayes_wsc fit is an
    `InputError`."""
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(f"a fit file's path must be a str or pathlib.Path, got {type(path).__name__}")
    path = Path(path)
    if not path.exists():
        raise InputError(f"fit file {str(path)!r} does not exist")
    try:
        groups = Groups(_read_groups(path, lambda name: name not in leave))
    except Exception as exc:  # noqa: BLE001 - any reader failure means "not a fit"
        raise InputError(f"fit file {str(path)!r} is not a netCDF fit ({type(exc).__name__})") from None
    if "posterior" not in groups or "model" not in groups.posterior.attrs:
        raise InputError(f"fit file {str(path)!r} is not a bayes_wsc fit (no posterior with a model name)")
    return groups


def load_group(path: str | Path, name: str) -> xr.Dataset | None:
    """One group of a fit file, read into memory as `load` reads it; None when the file has no such group."""
    return _read_groups(path, lambda group: group == name).get(name)


def has_group(path: str | Path, name: str) -> bool:
    """Whether a fit file (one `load` has read) holds a group of this name."""
    from bayes_wsc import netcdf_reader

    return name in netcdf_reader.group_names(path)


def _read_groups(path, wanted) -> dict[str, xr.Dataset]:
    """The groups `wanted` names, in memory: read by `netcdf_reader` (the layout xarray's h5netcdf engine
    writes, in a third of the time), else by that engine, which decides what a file that reader does not
    know holds."""
    from bayes_wsc import netcdf_reader

    try:
        return netcdf_reader.read_groups(path, wanted)
    except Exception:  # noqa: BLE001 - xarray's engine reads it, or says why not
        pass
    import h5netcdf

    groups = {}
    with h5netcdf.File(path, mode="r") as handle:
        names = [name for name in handle.groups if wanted(name)]
    for name in names:
        with xr.open_dataset(path, group=name, engine="h5netcdf") as ds:
            groups[name] = ds.load()
    return groups


# ---------------------------------------------------------------------- calibration (sbc.py)
def ess_of_draws(draws: np.ndarray) -> float:
    """The smaller of bulk and tail ESS of one scalar quantity's draws shaped (chain, draw)."""
    from bayes_wsc import draw_stats

    _, bulk, tail = draw_stats.convergence_statistics(np.asarray(draws, dtype=float))
    return float(min(bulk, tail))


def rhat_of_draws(draws: np.ndarray) -> float:
    """Rank-normalized R-hat of one scalar quantity's draws shaped (chain, draw)."""
    from bayes_wsc import draw_stats

    return float(draw_stats.convergence_statistics(np.asarray(draws, dtype=float))[0])
