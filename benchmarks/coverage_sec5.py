"""Recovery and interval coverage on the simulation study of seed 000, Sec. 5.

Replicates of I = 500 groups, J clicks each, K = 15 bins, mu ~ N(0, 1),
HE = mu + N(0, sigma_H^2) with sigma_H = 0.5 (the paper's setting). For each
replicate and each fit, the RMSE of rho(k) against the truth and how many of
the 15 bins have a 90% interval that contains the truth:

  nuts_wh10      NUTS, WH = 10 as in the paper (sigma_H = 0.32 assumed, 0.5 true: misspecified)
  nuts_learned   NUTS with sigma_H learned (models/learned_rater_noise.py)
  nuts_matched   NUTS, WH = 4 = 1 / 0.5^2: the model that generated the data (correctly specified)
  em             the paper's EM, WH = 10, with its grouped half-sampling
                 interval EM +- 1.64 SE (50 half-samples)
  laplace_wh10, laplace_learned, laplace_matched
                 the same three models fitted with method="laplace" (nested: the
                 globals' marginal mode with every mu_i integrated out, mu_i drawn
                 from its conditional, `bayes_wsc.nested_laplace`; not run unless
                 asked for with --fits, see benchmarks/bench_laplace.py)
  joint_wh10, joint_learned, joint_matched
                 method="laplace" with mu="sampled": one Gaussian at the joint mode
                 of globals and mu_i (`bayes_wsc.laplace`)

The intervals of the NUTS and Laplace fits are 90% HDIs of the draws of rho(k).

The baselines of the paper's Fig. 4, point estimates without intervals (their coverage is empty):

  naive          the direct estimate, eq. 3.1 (every click of group i happy with sigmoid(HE_i))
  moments        the method of moments, eq. 3.3, unclipped (bins outside [0, 1] are counted)
  em_wh0         the paper's EM with WH = 0: HE only initializes it (the overfit Sec. 5 describes)
  em_wh10        the paper's EM with WH = 10, without the half-sampling of `em`

    python benchmarks/coverage_sec5.py --reps 50 --items 5 --fits naive,moments,em_wh0,em_wh10 --fig4
    python benchmarks/coverage_sec5.py --reps 50 --items 100 --fits naive,moments,em_wh0,em_wh10 --fig4

write out/sec5_fig4_J<items>.csv and, from both, results/sec5_fig4.csv: per fit and J the RMSE of rho,
the bins outside [0, 1], the estimated range rho(15) - rho(1) against the true 0.80 and the SD across
replicates (the paper's error bars), averaged over bins.

    python benchmarks/coverage_sec5.py --reps 50 --items 100
    python benchmarks/coverage_sec5.py --reps 50 --items 5

Rows are appended to benchmarks/out/coverage_sec5_J<items>.csv (git-ignored) after
every replicate (one row per replicate and fit, with the covered bins as a
0/1 string), so an interrupted run keeps what it finished; `--resume` skips
replicates already in the file. `--summarize` only prints the table of a
finished (or partial) file.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
from output_paths import HERE, OUT, RESULTS, require  # noqa: E402

FITS = ("nuts_wh10", "nuts_learned", "nuts_matched", "em")
FIG4_FITS = ("naive", "moments", "em_wh0", "em_wh10")
LAPLACE_FITS = ("laplace_wh10", "laplace_learned", "laplace_matched")
JOINT_FITS = ("joint_wh10", "joint_learned", "joint_matched")
#: what a Laplace fit's record says about itself (`nested_laplace.reliability`), kept per replicate
LAPLACE_CHECKS = ("pareto_k", "pareto_k_method", "importance_ess_share", "mode_shift_sd", "condition_number",
                  "positive_definite")
LEVEL = 0.90
Z_SE = 1.64  # the paper's bars are +- 1 SE; +- 1.64 SE is the normal 90% interval


def one_replicate(rep: int, items: int, draws: int, tune: int, chains: int, fits, sigma_h: float = 0.5,
                  n_groups: int = 500, n_bins: int = 15, half_samples: int = 50, checks: bool = True) -> list[dict]:
    from bayes_wsc import inference
    from bayes_wsc.baselines.wsc import em_fit, half_sample_se
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.wsc import WSC
    from bayes_wsc.simulate import simulate_wsc

    data, truth = simulate_wsc(n_groups=n_groups, items_per_group=items, n_bins=n_bins, sigma_h=sigma_h,
                               seed=1000 + rep)
    rows = []

    def score(name, mean, low, high, seconds, extra=None):
        covered = (low <= truth.rho) & (truth.rho <= high)
        rows.append({"rep": rep, "items": items, "fit": name,
                     "rmse": float(np.sqrt(np.mean((mean - truth.rho) ** 2))),
                     "covered": int(covered.sum()), "bins": int(covered.size),
                     "coverage90": float(np.mean(covered)), "covered_bins": "".join("01"[int(c)] for c in covered),
                     "mean_width": float(np.mean(high - low)), "seconds": seconds, "checks": checks, **(extra or {})})

    settings = {"wh10": {"wh": 10.0}, "matched": {"wh": 1.0 / sigma_h**2},
                "learned": {"model_file": str(HERE.parent / "models" / "learned_rater_noise.py")}}
    for name in fits:
        t0 = time.perf_counter()
        if name in FIG4_FITS:
            from bayes_wsc.baselines.wsc import moments_rho, naive_rho

            converged = np.nan
            if name.startswith("em_"):
                fitted = em_fit(data, float(name[5:]))
                estimate, converged = fitted.rho, fitted.converged
            else:
                estimate = naive_rho(data) if name == "naive" else moments_rho(data)
            nan = np.full(truth.rho.size, np.nan)
            score(name, estimate, nan, nan, time.perf_counter() - t0,
                  {"outside01": int(np.sum((estimate < 0) | (estimate > 1))), "converged": converged,
                   "range": float(estimate[-1] - estimate[0]), "rho_hat": " ".join(f"{v:.5f}" for v in estimate)})
            rows[-1].update(covered=np.nan, coverage90=np.nan, covered_bins="", mean_width=np.nan)
            continue
        if name == "em":
            em = em_fit(data, 10.0)
            _, se = half_sample_se(data, lambda d: em_fit(d, 10.0).rho, n_reps=half_samples, seed=rep)
            score(name, em.rho, em.rho - Z_SE * se, em.rho + Z_SE * se, time.perf_counter() - t0)
            continue
        method, variant = name.split("_")
        extra = {"mu": "sampled", "method": "laplace"} if method == "joint" else {"method": method}
        est = WSC(draws=draws, tune=tune, chains=chains, seed=rep, progressbar=False, checks=checks, **extra,
                  **settings[variant])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            est.fit(data)
        rho = est.idata_.posterior["rho"].values.reshape(-1, truth.rho.size)
        bounds = inference.hdi(rho, LEVEL)
        if method in ("laplace", "joint"):
            from bayes_wsc.nested_laplace import laplace_warnings

            info = inference.get_attrs(est._fitted())["fit_info"]["laplace"]
            score(name, rho.mean(axis=0), bounds[:, 0], bounds[:, 1], time.perf_counter() - t0,
                  {"warnings": len(est.diagnostics_), "draws": draws, "form": info.get("form"),
                   "laplace_warns": bool(laplace_warnings(info)),
                   **{k: info.get(k) for k in LAPLACE_CHECKS}, "at_bound": len(info.get("at_bound") or []),
                   "mu_acceptance": (info.get("mu_draws") or {}).get("acceptance_rate"),
                   "laplace_seconds": info.get("seconds")})
            continue
        conv = inference.convergence(est.idata_, ["rho"])["rho"]
        n_div = int(np.asarray(est.idata_.sample_stats["diverging"]).sum())
        score(name, rho.mean(axis=0), bounds[:, 0], bounds[:, 1], time.perf_counter() - t0,
              {"rhat_max": conv["rhat"], "ess_bulk_min": conv["ess_bulk"], "divergences": n_div,
               "warnings": len(est.diagnostics_), "chains": chains, "tune": tune, "draws": draws})
    return rows


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    """Per fit: mean RMSE, coverage over all (replicate, bin) intervals with its Monte Carlo SE
    across replicates, the range of bins covered per replicate, width, seconds."""
    def one(g):
        per_rep = g["coverage90"].to_numpy()
        return pd.Series({
            "reps": len(g),
            "rmse": g["rmse"].mean(),
            "coverage90": per_rep.mean(),
            "coverage_se": per_rep.std(ddof=1) / np.sqrt(len(g)) if len(g) > 1 else np.nan,
            "bins_covered_min": g["covered"].min(),
            "bins_covered_median": g["covered"].median(),
            "mean_width": g["mean_width"].mean(),
            "seconds": g["seconds"].mean(),
            "rhat_max": g["rhat_max"].max() if "rhat_max" in g else np.nan,
        })

    return table.groupby("fit", sort=False)[list(table.columns)].apply(one)


def fig4_summary(table: pd.DataFrame, true_rho: np.ndarray) -> pd.DataFrame:
    """Per (J, fit) of the Fig. 4 baselines: RMSE of rho, bins outside [0, 1] per replicate, the estimated
    range rho(K) - rho(1) (true: `true_rho[-1] - true_rho[0]`) and the SD across replicates averaged over bins."""
    rows = []
    for (items, fit), g in table[table["fit"].isin(FIG4_FITS)].groupby(["items", "fit"], sort=False):
        estimates = np.array([np.array(r.split(), dtype=float) for r in g["rho_hat"]])
        rows.append({"J": int(items), "fit": fit, "reps": len(g), "rmse": round(float(g["rmse"].mean()), 3),
                     "bins_outside_01": round(float(g["outside01"].mean()), 1),
                     "range": round(float(g["range"].mean()), 2),
                     "true_range": round(float(true_rho[-1] - true_rho[0]), 2),
                     "em_converged": "" if g["converged"].isna().all() else f"{int(g['converged'].sum())}/{len(g)}",
                     "sd_across_reps": round(float(estimates.std(axis=0, ddof=1).mean()), 3)})
    return pd.DataFrame(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--items", type=int, default=100, help="clicks per group (the paper used 5 and 100)")
    parser.add_argument("--sigma-h", type=float, default=0.5, help="rater noise of the simulation (paper: 0.5)")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--fits", default=",".join(FITS))
    parser.add_argument("--out", default=None, help="CSV (default out/coverage_sec5_J<items>.csv)")
    parser.add_argument("--resume", action="store_true", help="append, skipping replicates already in --out")
    parser.add_argument("--summarize", action="store_true", help="only print the summary of --out")
    parser.add_argument("--fig4", action="store_true",
                        help="rows to out/sec5_fig4_J<items>.csv; results/sec5_fig4.csv from both J")
    args = parser.parse_args(argv)
    stem = "sec5_fig4" if args.fig4 else "coverage_sec5"
    out = Path(args.out) if args.out else OUT / f"{stem}_J{args.items}.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if args.summarize:
        require(out, f"python benchmarks/coverage_sec5.py --items {args.items} --reps {args.reps} --resume")
    if args.summarize or args.resume:
        if out.exists():
            done = set(pd.read_csv(out)["rep"])
    elif out.exists():
        out.unlink()
    if not args.summarize:
        for rep in range(args.reps):
            if rep in done:
                continue
            rows = one_replicate(rep, args.items, args.draws, args.tune, args.chains, args.fits.split(","),
                                 sigma_h=args.sigma_h)
            pd.DataFrame(rows).to_csv(out, mode="a", header=not out.exists(), index=False)
            print(f"replicate {rep + 1}/{args.reps} done: "
                  + ", ".join(f"{r['fit']} {r['covered']}/{r['bins']}" for r in rows), flush=True)
    table = pd.read_csv(out)
    summary = summarize(table)
    print(f"\nSec. 5, I=500, J={args.items}, K=15, sigma_H={args.sigma_h}, {table['rep'].nunique()} replicates; "
          f"{LEVEL:.0%} intervals")
    print(summary.round(3).to_string())
    print(f"\n{out}")
    if args.fig4:
        from bayes_wsc.simulate.wsc import sec5_rho

        parts = [pd.read_csv(p) for p in sorted(OUT.glob("sec5_fig4_J*.csv"))]
        fig4 = fig4_summary(pd.concat(parts), sec5_rho(15))
        fig4.to_csv(RESULTS / "sec5_fig4.csv", index=False)
        print(fig4.to_string(index=False))
    return table


if __name__ == "__main__":
    main()
