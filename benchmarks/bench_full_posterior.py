"""P3' (issue 18): the full posterior at the headline scale with the command a user runs.

New data (Sec. 5 simulation, 10,000 groups x 100 clicks, K = 30, seed --seed) written as the
user's two CSV files, then, as a whole process timed from outside:

    bayes-wsc fit wsc --clicks clicks.csv --groups groups.csv --method nuts --chains 4 --out fit.nc [--mu M]

with otherwise default settings (1000 tune + 1000 draws per chain), for each `--mu` asked for.
Reports the wall time, the largest R-hat and smallest bulk ESS over rho(k), and from the saved
fit where the time went (MAP start, sampling, drawing the mu_i after sampling, the grid's check), the mean leapfrog steps per draw and tree depth,
and the adapted step size.

    python benchmarks/bench_full_posterior.py                      # default settings (no --mu: the grid)
    python benchmarks/bench_full_posterior.py --mu default sampled   # the default, then every mu_i sampled
    python benchmarks/bench_full_posterior.py --mu integrated --draws 200 --tune 200   # shortened: labelled so

Each row also holds the machine's load average (`os.getloadavg`) before and after the command.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mu", nargs="+", default=["default"], choices=("default", "sampled", "integrated", "grid"),
                        help="default: no --mu (the CLI's default)")
    parser.add_argument("--groups", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--draws", type=int, default=None, help="default: the CLI's (1000)")
    parser.add_argument("--tune", type=int, default=None, help="default: the CLI's (1000)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from bench_map import write_csv

    from bayes_wsc.simulate import simulate_wsc

    data, truth = simulate_wsc(n_groups=args.groups, items_per_group=100, n_bins=30, seed=args.seed)
    with tempfile.TemporaryDirectory(prefix="bench_full_posterior_") as tmp:
        clicks, groups = write_csv(data, Path(tmp))
        for mu in args.mu:
            out = Path(tmp) / f"fit_{mu}.nc"
            cmd = [sys.executable, "-m", "bayes_wsc.cli", "fit", "wsc", "--clicks", str(clicks), "--groups",
                   str(groups), "--method", "nuts", "--chains", "4", "--out", str(out), "--no-progress"]
            cmd += ["--mu", mu] if mu != "default" else []
            cmd += ["--draws", str(args.draws)] if args.draws else []
            cmd += ["--tune", str(args.tune)] if args.tune else []
            load_before = os.getloadavg()
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True)
            seconds = time.perf_counter() - t0
            load = {"load_before": [round(x, 2) for x in load_before],
                    "load_after": [round(x, 2) for x in os.getloadavg()]}
            if proc.returncode != 0:
                print(json.dumps({"mu": mu, "error": proc.stderr.strip().splitlines()[-3:]}), flush=True)
                continue
            print(json.dumps({"mu": mu, "command": " ".join(["bayes-wsc", *cmd[3:]]), **describe(out, truth),
                              "seconds": round(seconds, 1), **load}), flush=True)


def describe(path, truth) -> dict:
    import numpy as np

    from bayes_wsc import inference

    idata = inference.load(path)
    conv = inference.convergence(idata, ["rho"])["rho"]
    info = inference.get_attrs(idata)["fit_info"]
    stats = idata.sample_stats
    rho = idata.posterior["rho"].mean(("chain", "draw")).values
    return {"rhat_max_rho": round(conv["rhat"], 4), "ess_bulk_min_rho": round(conv["ess_bulk"]),
            "draws": int(stats.sizes["draw"]), "tune": info["nuts"]["tune"],
            "map_seconds": round(info["map"]["seconds"], 1), "sampling_seconds": round(info["nuts"]["seconds"], 1),
            "mu_used": inference.get_attrs(idata).get("settings_used", {}).get("mu", "sampled"),
            "mu_draw_seconds": round(info["nuts"].get("mu_draws", {}).get("seconds", float("nan")), 1),
            "grid": info["nuts"].get("mu_grid"),
            "steps_per_draw": round(float(stats["n_steps"].mean()), 1),
            "tree_depth": round(float(stats["tree_depth"].mean()), 2),
            "step_size": round(float(stats["step_size"].mean()), 3),
            "divergences": int(stats["diverging"].sum()),
            "rmse_rho": round(float(np.sqrt(np.mean((rho - truth.rho) ** 2))), 4)}


if __name__ == "__main__":
    main()
