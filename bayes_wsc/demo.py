"""The demo: the simulation study of seed 000, Sec. 5, fitted every way, with a report.

I = 500 groups of J = 100 clicks, K = 15 behavior bins, mu ~ N(0, 1),
HE = mu + N(0, 0.5^2), fitted with WH = 10 as in the paper. The data are
simulated from a fixed seed (nothing is downloaded), written out as the
CSV files a user would have, fitted by MAP and NUTS, compared with the
paper's baselines, and summarized in DIR/report.html.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

#: what the demo writes in its folder
FILES = ("clicks.csv", "groups.csv", "fit_map.nc", "fit_nuts.nc", "report.html")


def _step(message: str, t0: float) -> None:
    print(f"[{time.perf_counter() - t0:6.1f}s] {message}", flush=True)


def run_demo(out="bayes-wsc-demo", *, n_groups=500, items_per_group=100, n_bins=15, draws=1000, tune=1000,
             chains=4, seed=2015, progressbar=True) -> Path:
    import numpy as np

    from bayes_wsc import outputs
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.wsc.model import WSC
    from bayes_wsc.models.wsc.report import write_report
    from bayes_wsc.simulate import counts_to_clicks, simulate_wsc

    t0 = time.perf_counter()
    out = Path(out)
    _step(f"simulating Sec. 5: {n_groups} groups x {items_per_group} clicks, {n_bins} bins, sigma_H = 0.5", t0)
    data, truth = simulate_wsc(n_groups=n_groups, items_per_group=items_per_group, n_bins=n_bins,
                               sigma_h=0.5, seed=seed)
    clicks, groups = counts_to_clicks(data)
    outputs.write_csv(clicks, out / "clicks.csv", "clicks")
    outputs.write_csv(groups, out / "groups.csv", "groups")
    _step(f"wrote {out / 'clicks.csv'} ({len(clicks)} rows) and {out / 'groups.csv'}", t0)

    fits = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FitWarning)
        _step("fitting the posterior mode (MAP, started from the paper's naive solution)", t0)
        fits["MAP"] = WSC(method="map").fit(data)
        fits["MAP"].save(out / "fit_map.nc")
        _step(f"NUTS: {chains} chains x ({tune} tune + {draws} draws)", t0)
        fits["NUTS"] = WSC(method="nuts", draws=draws, tune=tune, chains=chains, seed=seed,
                           progressbar=progressbar).fit(data)
        fits["NUTS"].save(out / "fit_nuts.nc")
    for w in caught:
        print(f"  warning: {w.message}")
    _step("baselines (naive, moments, EM, half-sampling) and the report", t0)
    path = write_report(fits, out, truth_rho=truth.rho,
                        title="bayes_wsc demo: the simulation study of Wager et al. (2015), Sec. 5")
    nuts_rho = fits["NUTS"].idata_.posterior["rho"]
    rmse = float(np.sqrt(np.mean((nuts_rho.mean(("chain", "draw")).values - truth.rho) ** 2)))
    _step(f"done: NUTS posterior-mean RMSE of rho against the truth = {rmse:.4f}", t0)
    print(fits["NUTS"].summary(var_names=["rho", "pi"]).round(3).to_string())
    return path
