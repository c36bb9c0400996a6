"""Recovery and interval coverage on the simulation study of seed 000, Sec. 5.

Replicates of I = 500 groups, J clicks each, K = 15 bins, mu ~ N(0, 1),
HE = mu + N(0, sigma_H^2) with sigma_H = 0.5 (the paper's setting). For each
replicate and each fit, the RMSE of rho(k) against the truth and the share of
bins whose 90% interval contains the truth:

  nuts_wh10      NUTS, WH = 10 as in the paper (sigma_H = 0.32: misspecified)
  nuts_matched   NUTS, WH = 4 (sigma_H = 0.5: correctly specified)
  nuts_learned   NUTS with sigma_H learned (models/learned_rater_noise.py)
  em             the paper's EM, WH = 10, with the grouped half-sampling
                 interval EM +- 1.64 SE (50 half-samples)

    python benchmarks/coverage_sec5.py --reps 5 --items 100

Writes benchmarks/results/coverage_sec5_J<items>.csv and prints the means.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
FITS = ("nuts_wh10", "nuts_matched", "nuts_learned", "em")


def one_replicate(rep: int, items: int, draws: int, tune: int, chains: int, fits) -> list[dict]:
    from bayes_wsc import inference
    from bayes_wsc.baselines.wsc import em_fit, half_sample_se
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.wsc import WSC
    from bayes_wsc.simulate import simulate_wsc

    data, truth = simulate_wsc(n_groups=500, items_per_group=items, n_bins=15, sigma_h=0.5, seed=1000 + rep)
    rows = []

    def score(name, mean, low, high, seconds, extra=None):
        rows.append({"rep": rep, "fit": name, "rmse": float(np.sqrt(np.mean((mean - truth.rho) ** 2))),
                     "coverage90": float(np.mean((low <= truth.rho) & (truth.rho <= high))),
                     "mean_width": float(np.mean(high - low)), "seconds": seconds, **(extra or {})})

    settings = {"nuts_wh10": {"wh": 10.0}, "nuts_matched": {"wh": 4.0},
                "nuts_learned": {"model_file": str(HERE.parent / "models" / "learned_rater_noise.py")}}
    for name in fits:
        t0 = time.perf_counter()
        if name == "em":
            em = em_fit(data, 10.0)
            _, se = half_sample_se(data, lambda d: em_fit(d, 10.0).rho, n_reps=50, seed=rep)
            score(name, em.rho, em.rho - 1.64 * se, em.rho + 1.64 * se, time.perf_counter() - t0)
            continue
        est = WSC(method="nuts", draws=draws, tune=tune, chains=chains, seed=rep, progressbar=False,
                  **settings[name])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            est.fit(data)
        rho = est.idata_.posterior["rho"].values.reshape(-1, truth.rho.size)
        bounds = inference.hdi(rho, 0.9)
        conv = inference.convergence(est.idata_, ["rho"])["rho"]
        score(name, rho.mean(axis=0), bounds[:, 0], bounds[:, 1], time.perf_counter() - t0,
              {"rhat_max": conv["rhat"], "warnings": len(est.diagnostics_)})
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--items", type=int, default=100, help="clicks per group (the paper used 5 and 100)")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--fits", default=",".join(FITS))
    args = parser.parse_args(argv)
    rows = []
    for rep in range(args.reps):
        rows += one_replicate(rep, args.items, args.draws, args.tune, args.chains, args.fits.split(","))
        print(f"replicate {rep + 1}/{args.reps} done", flush=True)
    table = pd.DataFrame(rows)
    out = HERE / "results" / f"coverage_sec5_J{args.items}.csv"
    out.parent.mkdir(exist_ok=True)
    table.to_csv(out, index=False)
    summary = table.groupby("fit", sort=False)[["rmse", "coverage90", "mean_width", "seconds"]].mean()
    print(f"\nSec. 5, I=500, J={args.items}, K=15, sigma_H=0.5, {args.reps} replicates; 90% intervals")
    print(summary.round(3).to_string())
    print(f"\nwrote {out}")
    return table


if __name__ == "__main__":
    main()
