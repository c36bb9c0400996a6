"""The installed ArviZ's own summary and HDI, called as its family spells them (0.2x: `hdi_prob`,
`InferenceData`; 1.x: `ci_prob`, `ci_kind`, DataTree), with 0.2x's column names: what the package's
NumPy arithmetic (`draw_stats`) is held to on either stack."""

import warnings

import numpy as np
import xarray as xr

from bayes_wsc import draw_stats, inference


def summary(groups, var_names, hdi_prob=0.9, kind="all"):
    import arviz as az

    data = inference.to_inference_data(inference.groups_of(groups))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if not inference.arviz_1():
            return az.summary(data, var_names=var_names, hdi_prob=hdi_prob, kind=kind, round_to="none")
        table = az.summary(data, var_names=var_names, kind=kind, ci_prob=hdi_prob, ci_kind="hdi", round_to="none")
        if "ess_tail" in table:
            # ArviZ 1's summary takes tail ESS at the quantiles of its ci_prob (0.11 and 0.89 by default); the
            # package keeps Vehtari et al.'s 0.05 and 0.95 (ArviZ 0.2x's and Stan's): ArviZ 1 at prob=0.95
            tail = az.ess(data, var_names=var_names, method="tail", prob=0.95)
            table["ess_tail"] = np.concatenate([np.ravel(tail[name].values) for name in var_names])
    label = f"hdi{100 * hdi_prob:g}"
    low, high = draw_stats.hdi_columns(hdi_prob)
    table = table.rename(columns={f"{label}_lb": low, f"{label}_ub": high})
    order = ["mean", "sd", low, high, *draw_stats.DIAGNOSTICS]
    return table[[c for c in order if c in table.columns]]


def hdi(samples: np.ndarray, prob: float) -> np.ndarray:
    """ArviZ's HDI of (chain, draw, n) samples: (n, 2)."""
    import arviz as az

    if not inference.arviz_1():
        return az.hdi(samples, hdi_prob=prob)
    array = xr.DataArray(samples, dims=("chain", "draw", "element"))
    return np.asarray(az.hdi(array, prob=prob).transpose("element", ...).values)
