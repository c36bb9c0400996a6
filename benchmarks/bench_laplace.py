"""Intervals in seconds: `method="laplace"` against the paper's EM and its half-sampling error bars,
and the coverage of its intervals against NUTS's on the Sec. 5 study.

--timing (default): at the headline scale (10,000 groups, 100 clicks each, 30 bins), every round
simulates a new data set (seeds 4, 5, ...) and times on it, in one process:
  * the paper's per-click EM point estimate (NumPy, 200 iterations; bench_map.per_click_em);
  * `WSC(method="laplace")` in-process from the loaded data (MAP, centre, Hessian, 1000 draws),
    its program from the structure's cache (a warm-up fit on seed 3 comes first, timed apart);
  * once, on the first round's data, the paper's error bars: grouped half-sampling (50 half-samples)
    with the count-table EM (`baselines.wsc.em_fit`, the package's EM), and, to show what the
    paper's own per-click EM costs there, `--click-half-samples` refits of it on half-samples
    (default 5), whose mean time times 50 is reported as an estimate, labelled so.

    python benchmarks/bench_laplace.py --timing --repeats 3

--coverage: the Sec. 5 study (I = 500, K = 15, 50 replicates at J = 5 and J = 100) with the three
models of coverage_sec5.py fitted by Laplace (out/coverage_sec5_laplace_J<J>.csv; resumable),
compared with the NUTS fits of the same replicates (out/coverage_sec5_J<J>.csv, made first by
`python benchmarks/coverage_sec5.py --items <J> --reps 50 --resume --tune 500 --draws 500`):

    python benchmarks/bench_laplace.py --coverage --items 5 --reps 50
    python benchmarks/bench_laplace.py --coverage --items 100 --reps 50
    python benchmarks/bench_laplace.py --coverage --items 5 --summarize
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
from output_paths import OUT, require  # noqa: E402


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def run_timing(n_groups: int, items: int, n_bins: int, repeats: int, click_half_samples: int) -> dict:
    from bench_map import per_click_em

    from bayes_wsc.baselines.wsc import em_fit, half_sample_se
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.wsc import WSC
    from bayes_wsc.simulate import simulate_wsc

    def simulate(seed):
        return simulate_wsc(n_groups=n_groups, items_per_group=items, n_bins=n_bins, seed=seed)[0]

    def click_em(data):
        counts = data.counts.astype(np.int64)
        k = data.n_bins
        group = np.repeat(np.repeat(np.arange(data.n_groups), k), counts.ravel())
        bins = np.repeat(np.tile(np.arange(k), data.n_groups), counts.ravel())
        return per_click_em(group, bins, data.he, k)

    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        t_warm, warm = timed(lambda: WSC(method="laplace", seed=0).fit(simulate(3)))
        for round_ in range(repeats):
            data = simulate(4 + round_)  # new data every round
            t_em, _ = timed(lambda: click_em(data))
            t_laplace, est = timed(lambda: WSC(method="laplace", seed=round_).fit(data))
            info = json.loads(est._fitted().posterior.attrs["fit_info"])
            rows.append({"per_click_em_s": t_em, "laplace_s": t_laplace, "map_s": info["map"]["seconds"],
                         "laplace_part_s": info["laplace"]["seconds"], "program": info["map"]["compiled_program"],
                         "positive_definite": info["laplace"]["positive_definite"]})
        first = simulate(4)
        t_half_table, _ = timed(lambda: half_sample_se(first, lambda d: em_fit(d, 10.0).rho, n_reps=50, seed=0))
        t_half_click, _ = timed(lambda: half_sample_se(first, click_em, n_reps=click_half_samples, seed=0))
    median = {k: statistics.median(r[k] for r in rows) for k in ("per_click_em_s", "laplace_s", "map_s", "laplace_part_s")}
    return {
        "size": f"I={n_groups} J={items} K={n_bins} ({n_groups * items} clicks), new data every round",
        **median,
        "laplace_over_em": median["laplace_s"] / median["per_click_em_s"],
        "per_round": rows,
        "warm_up_fit_s": t_warm,
        "warm_up_program": json.loads(warm._fitted().posterior.attrs["fit_info"])["map"]["compiled_program"],
        "half_sampling_50_table_em_s": t_half_table,
        f"half_sampling_{click_half_samples}_per_click_em_s": t_half_click,
        "half_sampling_50_per_click_em_estimated_s": t_half_click * 50 / click_half_samples,
    }


def run_coverage(items: int, reps: int, summarize_only: bool) -> None:
    import pandas as pd

    import coverage_sec5

    nuts_csv = require(OUT / f"coverage_sec5_J{items}.csv", f"python benchmarks/coverage_sec5.py --items {items} "
                       f"--reps {reps} --resume --tune 500 --draws 500")
    out = OUT / f"coverage_sec5_laplace_J{items}.csv"
    if summarize_only:
        require(out, f"python benchmarks/bench_laplace.py --coverage --items {items} --reps {reps}")
    argv = ["--items", str(items), "--reps", str(reps), "--fits", ",".join(coverage_sec5.LAPLACE_FITS),
            "--out", str(out), "--summarize" if summarize_only else "--resume"]
    coverage_sec5.main(argv)
    laplace = pd.read_csv(out)
    nuts = pd.read_csv(nuts_csv)
    rows = []
    for variant in ("wh10", "learned", "matched"):
        ours = laplace[laplace["fit"] == f"laplace_{variant}"]
        theirs = nuts[(nuts["fit"] == f"nuts_{variant}") & nuts["rep"].isin(ours["rep"])]
        if ours.empty or theirs.empty:
            continue
        rows.append({"model": variant, "reps": len(ours), "laplace_coverage90": ours["coverage90"].mean(),
                     "nuts_coverage90": theirs["coverage90"].mean(),
                     "difference": ours["coverage90"].mean() - theirs["coverage90"].mean(),
                     "laplace_rmse": ours["rmse"].mean(), "nuts_rmse": theirs["rmse"].mean(),
                     "laplace_width": ours["mean_width"].mean(), "nuts_width": theirs["mean_width"].mean(),
                     "laplace_seconds": ours["seconds"].median(), "nuts_seconds": theirs["seconds"].median()})
    print(f"\nLaplace against NUTS, J = {items}, the same replicates (90% HDIs of rho):")
    print(pd.DataFrame(rows).round(3).to_string(index=False))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timing", action="store_true")
    parser.add_argument("--coverage", action="store_true")
    parser.add_argument("--size", default="10000x100x30", help="IxJxK for --timing")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--click-half-samples", type=int, default=5)
    parser.add_argument("--items", type=int, default=100, help="J for --coverage")
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--summarize", action="store_true", help="--coverage: only compare what is in the files")
    args = parser.parse_args(argv)
    if args.coverage:
        return run_coverage(args.items, args.reps, args.summarize)
    row = run_timing(*map(int, args.size.split("x")), args.repeats, args.click_half_samples)
    for key, value in row.items():
        print(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}")
    return row


if __name__ == "__main__":
    main()
