"""Every ArviZ call of the package lives here.

ArviZ 1 (Python >= 3.12) replaces InferenceData with DataTree; keeping the
calls in one module keeps that migration to one file. The rest of the
package passes `InferenceData` objects around and asks this module for
summaries, intervals, diagnostics and files.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from bayes_wsc.errors import InputError

import arviz as az  # its once-a-day refactor notice is filtered by bayes_wsc._runtime

InferenceData = az.InferenceData
SETTINGS_ATTR = "bayes_wsc_settings"


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
) -> InferenceData:
    """Labelled InferenceData from (chain, draw, ...) arrays; settings go to attrs as JSON."""
    # ArviZ deep-copies the coordinates for every variable: arrays copy in one step, lists item by item
    coords = {k: np.asarray(v) for k, v in (coords or {}).items()}
    idata = az.from_dict(
        posterior=posterior,
        sample_stats=sample_stats or None,
        observed_data=observed_data or None,
        constant_data=constant_data or None,
        coords=coords,
        dims=dims,
    )
    if extra_coords:
        idata.map(lambda ds: ds.assign_coords({k: v for k, v in extra_coords.items() if v[0] in ds.dims}),
                  inplace=True)
    if attrs:
        set_attrs(idata, attrs)
    return idata


def set_attrs(idata: InferenceData, attrs: dict) -> None:
    """Store settings on every group as netCDF-safe attributes (nested values as JSON)."""
    flat = {k: (v if isinstance(v, (str, int, float)) and not isinstance(v, bool) else json.dumps(v))
            for k, v in attrs.items()}
    for group in idata.groups():
        idata[group].attrs.update(flat)


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


# ---------------------------------------------------------------------- summaries
def summary(idata: InferenceData, var_names: list[str], hdi_prob: float = 0.94) -> pd.DataFrame:
    """`az.summary`; a MAP fit (a single draw) gets one column, `map`, and no intervals."""
    n_draws = idata.posterior.sizes["chain"] * idata.posterior.sizes["draw"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if n_draws == 1:
            table = az.summary(idata, var_names=var_names, kind="stats", round_to="none")[["mean"]]
            return table.rename(columns={"mean": "map"})
        return az.summary(idata, var_names=var_names, hdi_prob=hdi_prob, kind="all", round_to="none")


def hdi(samples: np.ndarray, prob: float) -> np.ndarray:
    """Highest-density interval along the first axis of a (draws, ...) array: (..., 2)."""
    samples = np.asarray(samples)
    if samples.shape[0] == 1:
        return np.stack([samples[0], samples[0]], axis=-1)
    flat = samples.reshape(samples.shape[0], -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bounds = az.hdi(flat[None], hdi_prob=prob)  # (1, draws, n) is (chain, draw, n)
    return np.asarray(bounds).reshape(*samples.shape[1:], 2)


def hdi_dataset(idata: InferenceData, var_names: list[str], prob: float) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return az.hdi(idata, var_names=var_names, hdi_prob=prob)


def convergence(idata: InferenceData, var_names: list[str]) -> dict[str, dict[str, float]]:
    """Worst R-hat (rank-normalized), smallest bulk and tail ESS per variable."""
    out = {}
    with warnings.catch_warnings():
        # a constant variable (pi with mu fixed at HE) has NaN R-hat and ESS: reported as NaN, not warned
        warnings.simplefilter("ignore")
        rhat = az.rhat(idata, var_names=var_names)
        ess_bulk = az.ess(idata, var_names=var_names, method="bulk")
        ess_tail = az.ess(idata, var_names=var_names, method="tail")
        for name in var_names:
            out[name] = {
                "rhat": float(np.nanmax(rhat[name].values)),
                "ess_bulk": float(np.nanmin(ess_bulk[name].values)),
                "ess_tail": float(np.nanmin(ess_tail[name].values)),
            }
    return out


# ---------------------------------------------------------------------- plots
def plot_forest(idata: InferenceData, var_names: list[str], hdi_prob: float, ax=None):
    return az.plot_forest(idata, var_names=var_names, hdi_prob=hdi_prob, combined=True, ax=ax)


# ---------------------------------------------------------------------- files
def save(idata: InferenceData, path: str | Path) -> Path:
    """Write netCDF atomically: to a temporary file in the same folder, then rename.

    An interrupted write never leaves a truncated fit behind.
    """
    path = Path(path)
    tmp = None
    try:
        if path.is_dir():
            raise IsADirectoryError(21, "Is a directory")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        idata.to_netcdf(tmp, engine="h5netcdf")
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot write fit file {str(path)!r}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
    return path


def load(path: str | Path) -> InferenceData:
    """Read a fit; a missing file or a file that is not a bayes_wsc fit is an `InputError`."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"fit file {str(path)!r} does not exist")
    try:
        idata = az.from_netcdf(path, engine="h5netcdf")
    except Exception as exc:  # noqa: BLE001 - any reader failure means "not a fit"
        raise InputError(f"fit file {str(path)!r} is not a netCDF fit ({type(exc).__name__})") from None
    if "posterior" not in idata.groups() or "model" not in idata.posterior.attrs:
        raise InputError(f"fit file {str(path)!r} is not a bayes_wsc fit (no posterior with a model name)")
    for group in idata.groups():
        idata[group].load()
    return idata


# ---------------------------------------------------------------------- calibration (sbc.py)
def ess_of_draws(draws: np.ndarray) -> float:
    """The smaller of bulk and tail ESS of one scalar quantity's draws shaped (chain, draw)."""
    draws = np.asarray(draws, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(min(az.ess(draws, method="bulk"), az.ess(draws, method="tail")))


def rhat_of_draws(draws: np.ndarray) -> float:
    """Rank-normalized R-hat of one scalar quantity's draws shaped (chain, draw)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(az.rhat(np.asarray(draws, dtype=float)))
