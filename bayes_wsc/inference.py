"""Every ArviZ call of the package lives here.

ArviZ 1 (Python >= 3.12) replaces InferenceData with DataTree; keeping the
calls in one module keeps that migration to one file. The rest of the
package passes `InferenceData` objects around and asks this module for
summaries, intervals, diagnostics and files.

ArviZ takes 4-5 s to import (it loads its plotting stack and compiles numba
functions), as long as the whole MAP of the paper's headline workload. So a
fit is first assembled as `Groups`, plain xarray Datasets that read like an
InferenceData (`groups.posterior["rho"]`), which this module saves and
summarizes without ArviZ (`draw_stats` has its summary arithmetic in NumPy);
`load` reads a saved fit back as `Groups`, and `to_inference_data` wraps them
when ArviZ is wanted.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

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


def __getattr__(name):
    if name == "InferenceData":
        return _az().InferenceData
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


def groups_of(idata) -> Groups:
    """The groups of an InferenceData (or of `Groups`), as `Groups`."""
    return idata if isinstance(idata, Groups) else Groups((g, idata[g]) for g in idata.groups())


def to_inference_data(groups: Groups):
    """ArviZ's InferenceData over the same Datasets."""
    return _az().InferenceData(**groups)


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
    arrays under their `LOG_LIKELIHOOD_PREFIX` names, `dims` their dims; coords and attrs come from the
    posterior."""
    posterior = groups["posterior"]
    values = {k[len(LOG_LIKELIHOOD_PREFIX):]: v for k, v in recorded.items()}
    var_dims = {k[len(LOG_LIKELIHOOD_PREFIX):]: v for k, v in dims.items() if k in recorded}
    ds = _dataset(values, {}, var_dims, sampled=True)
    ds = ds.assign_coords({name: coord for name, coord in posterior.coords.items()
                           if name not in ("chain", "draw") and set(coord.dims) <= set(ds.dims)})
    ds.attrs.update(posterior.attrs)
    groups["log_likelihood"] = ds


def set_attrs(idata: InferenceData, attrs: dict) -> None:
    """Store settings on every group as netCDF-safe attributes (nested values as JSON)."""
    flat = {k: (v if isinstance(v, (str, int, float)) and not isinstance(v, bool) else json.dumps(v))
            for k, v in attrs.items()}
    for group in idata.groups():
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
    for name in idata.groups():
        ds = idata[name]
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
            for j, (label, index, _) in enumerate(elements):
                row = [mean[j], sd[j], bounds[j, 0], bounds[j, 1]]
                if diagnose:
                    row += draw_stats.chain_statistics(values[(slice(None), slice(None), *index)])
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


def hdi_dataset(idata: InferenceData, var_names: list[str], prob: float) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _az().hdi(_for_arviz(idata), var_names=var_names, hdi_prob=prob)


def convergence(idata: InferenceData, var_names: list[str]) -> dict[str, dict[str, float]]:
    """Worst R-hat (rank-normalized), smallest bulk and tail ESS per variable, by `draw_stats`: the
    arithmetic of `summary`'s table, so that the status line and the table print one figure."""
    from bayes_wsc import draw_stats

    posterior, out = idata.posterior, {}
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        # a constant variable (pi with mu fixed at HE) has NaN R-hat: reported as NaN, not warned
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in var_names:
            values = posterior[name].transpose("chain", "draw", ...).values
            flat = values.reshape(values.shape[0], values.shape[1], -1)
            stats = np.array([draw_stats.chain_statistics(flat[:, :, j]) for j in range(flat.shape[2])])
            out[name] = {"rhat": float(np.nanmax(stats[:, 4])), "ess_bulk": float(np.nanmin(stats[:, 2])),
                         "ess_tail": float(np.nanmin(stats[:, 3]))}
    return out


# ---------------------------------------------------------------------- model comparison
def loo_unavailable(idata, what: str = "this fit") -> str | None:
    """Why LOO cannot be computed for a fit, in one line, or None when it can."""
    posterior = idata.posterior
    if posterior.sizes["chain"] * posterior.sizes["draw"] == 1:
        return (f"LOO needs posterior draws, and {what} is a MAP fit (one point, the posterior mode): "
                "refit it with method='nuts'")
    if "log_likelihood" not in idata.groups() and get_attrs(idata).get(LOG_LIKELIHOOD_LEFT_OUT):
        return (f"{what} was saved without its pointwise log-likelihood, which costs as much as the fit to compute: "
                "load the file with bayes_wsc.load (or the model's load), which computes it on first use")
    if "log_likelihood" not in idata.groups() or not idata["log_likelihood"].data_vars:
        version = posterior.attrs.get("package_version", "unknown")
        return (f"{what} has no pointwise log-likelihood (written by bayes_wsc {version}, before fits kept "
                "one): refit it to compute LOO")
    return None


def loo(idata, pointwise: bool = True):
    """`az.loo` (PSIS-LOO) on the fit's `log_likelihood` group; ArviZ's warnings are left to the caller,
    who reads the Pareto k values (`pareto_k_summary`)."""
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


def waic(idata, pointwise: bool = True):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _az().waic(_for_arviz(idata), pointwise=pointwise)


def compare(fits: dict, ic: str = "loo") -> pd.DataFrame:
    """`az.compare` of labelled fits (label -> InferenceData), best first."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _az().compare({label: _for_arviz(idata) for label, idata in fits.items()}, ic=ic)


def pareto_k_summary(elpd) -> dict:
    """The Pareto k values of a `loo` result: how many units exceed ArviZ's threshold for this number of
    draws (min(1 - 1/log10(S), 0.7)) and which unit is worst."""
    k = np.asarray(elpd.pareto_k)
    threshold = float(getattr(elpd, "good_k", 0.7))
    worst = int(np.nanargmax(k)) if k.size else -1
    labels = elpd.pareto_k.coords[elpd.pareto_k.dims[0]].values if getattr(elpd.pareto_k, "dims", ()) else None
    return {"max_k": float(np.nanmax(k)) if k.size else float("nan"), "threshold": threshold,
            "bad": int(np.sum(k > threshold)), "units": int(k.size),
            "worst": str(labels[worst]) if labels is not None and worst >= 0 else str(worst)}


# ---------------------------------------------------------------------- plots
def plot_forest(idata: InferenceData, var_names: list[str], hdi_prob: float, ax=None):
    return _az().plot_forest(_for_arviz(idata), var_names=var_names, hdi_prob=hdi_prob, combined=True, ax=ax)


def plot_ppc(idata, axes, *, var_names: list[str] | None = None, num_pp_samples: int = 50, seed: int = 0):
    """`az.plot_ppc` of posterior predictive variables (default: all), one per axis of `axes`: the observed
    statistic's distribution over its elements against the replicates'."""
    names = list(idata.posterior_predictive.data_vars) if var_names is None else list(var_names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, ax in zip(names, axes):
            _az().plot_ppc(_for_arviz(idata), var_names=[name], num_pp_samples=num_pp_samples, random_seed=seed,
                           ax=ax, legend=True)
    return names


def plot_rank(idata, name: str, selection: dict, ax) -> None:
    """`az.plot_rank` of one element of a posterior variable (`selection`: dim -> label)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _az().plot_rank(_for_arviz(idata), var_names=[name], coords={d: [v] for d, v in selection.items()}, ax=ax)


def rhat_elements(idata, name: str) -> xr.DataArray:
    """Rank-normalized R-hat of every element of a posterior variable."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _az().rhat(_for_arviz(idata), var_names=[name])[name]


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


def load(path: str | Path) -> Groups:
    """Read a fit as `Groups` (one xarray Dataset per netCDF group, as `az.from_netcdf` reads them,
    but without importing ArviZ; `to_inference_data` wraps them); a missing file or a file that is
    not a bayes_wsc fit is an `InputError`."""
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(f"a fit file's path must be a str or pathlib.Path, got {type(path).__name__}")
    path = Path(path)
    if not path.exists():
        raise InputError(f"fit file {str(path)!r} does not exist")
    try:
        import h5netcdf

        with h5netcdf.File(path, mode="r") as handle:
            names = list(handle.groups)
        groups = Groups()
        for name in names:
            with xr.open_dataset(path, group=name, engine="h5netcdf") as ds:
                groups[name] = ds.load()
    except Exception as exc:  # noqa: BLE001 - any reader failure means "not a fit"
        raise InputError(f"fit file {str(path)!r} is not a netCDF fit ({type(exc).__name__})") from None
    if "posterior" not in groups or "model" not in groups.posterior.attrs:
        raise InputError(f"fit file {str(path)!r} is not a bayes_wsc fit (no posterior with a model name)")
    return groups


# ---------------------------------------------------------------------- calibration (sbc.py)
def ess_of_draws(draws: np.ndarray) -> float:
    """The smaller of bulk and tail ESS of one scalar quantity's draws shaped (chain, draw)."""
    draws = np.asarray(draws, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(min(_az().ess(draws, method="bulk"), _az().ess(draws, method="tail")))


def rhat_of_draws(draws: np.ndarray) -> float:
    """Rank-normalized R-hat of one scalar quantity's draws shaped (chain, draw)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(_az().rhat(np.asarray(draws, dtype=float)))
