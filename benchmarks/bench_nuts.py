"""NUTS throughput on the first model: bayes_wsc's backends against a hand-written NumPyro model.

Workload (issue 2 / issue 5 P2): the Sec. 5 simulation at I groups, J = 100
clicks per group, K = 30 bins; 2 chains x (tune + draws) iterations. Every
candidate runs in its own fresh process, timed from the outside (imports,
compilation, MAP start, sampling and post-processing all count), in
alternating rounds so that machine noise hits all of them alike. The figure
of merit is the minimum bulk ESS over rho(k) per second of wall time, and
each candidate is reported as a ratio to the hand-written NumPyro model of
the same round.

    python benchmarks/bench_nuts.py --groups 1000 --rounds 3 --candidates handwritten-numpyro,bayes_wsc,bayes_wsc-integrated

Round r simulates new data and seeds its chains with seed + r (users fit new
data; `--same-data` repeats round 1's data in every round, a refit, labelled
as such), so the ratio is not one data set's luck; the geometric mean of the
per-round ratios is printed at the end. The bayes_wsc candidates also report
where their time went (imports, MAP start, sampling, the rest) and the mean
number of leapfrog steps per draw. `bayes_wsc-integrated` is `WSC(mu="integrated")`:
every mu_i integrated out of NUTS's density and drawn afterwards; `bayes_wsc-grid` is `WSC(mu="grid")`,
the same integrals on one grid of nodes shared by all groups.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CANDIDATES = ("handwritten-numpyro", "bayes_wsc", "bayes_wsc-integrated", "bayes_wsc-grid", "bayes_wsc-float64",
              "bayes_wsc-pymc", "bayes_wsc-nutpie")


def worker(name: str, groups: int, draws: int, tune: int, chains: int, seed: int) -> dict:
    """Run one candidate in this process and return its ESS figures (and, for bayes_wsc, its phases)."""
    import numpy as np

    from bayes_wsc.simulate import simulate_wsc

    data, truth = simulate_wsc(n_groups=groups, items_per_group=100, n_bins=30, seed=seed)
    if name == "handwritten-numpyro":
        sys.path.insert(0, str(HERE))
        from handwritten_numpyro import run

        out = run(data.counts, data.he, draws=draws, tune=tune, chains=chains, seed=seed)
        rho = out["rho"]
    else:
        t0 = time.perf_counter()
        from bayes_wsc.models.wsc import WSC

        imported = time.perf_counter() - t0
        backend = {"bayes_wsc-pymc": "pymc", "bayes_wsc-nutpie": "nutpie"}.get(name)
        precision = "float64" if name == "bayes_wsc-float64" else None
        mu = {"bayes_wsc-integrated": "integrated", "bayes_wsc-grid": "grid"}.get(name, "sampled")
        est = WSC(method="nuts", draws=draws, tune=tune, chains=chains, seed=seed, backend=backend,
                  precision=precision, progressbar=False, mu=mu)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(data)
        fitted = time.perf_counter() - t0 - imported
        rho = est.idata_.posterior["rho"].values
        from bayes_wsc import inference

        info = inference.get_attrs(est.idata_)["fit_info"]
        phases = {"import_seconds": imported, "map_seconds": info["map"]["seconds"],
                  "sampling_seconds": info["nuts"]["seconds"],
                  "other_fit_seconds": fitted - info["map"]["seconds"] - info["nuts"]["seconds"],
                  "steps_per_draw": float(est.idata_.sample_stats["n_steps"].mean())}
    from bayes_wsc import inference

    idata = inference.from_draws({"rho": rho})
    conv = inference.convergence(idata, ["rho"])["rho"]
    rmse = float(np.sqrt(np.mean((rho.mean(axis=(0, 1)) - truth.rho) ** 2)))
    out = {"ess_bulk_min": conv["ess_bulk"], "rhat_max": conv["rhat"], "rmse": rmse}
    if name != "handwritten-numpyro":
        out.update({k: round(v, 2) for k, v in phases.items()})
    return out


def run_candidate(name: str, args, seed: int) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name, "--groups", str(args.groups),
           "--draws", str(args.draws), "--tune", str(args.tune), "--chains", str(args.chains),
           "--seed", str(seed)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"name": name, "error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result.update(name=name, seconds=seconds, ess_per_second=result["ess_bulk_min"] / seconds)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--candidates", default=",".join(CANDIDATES))
    parser.add_argument("--same-data", action="store_true",
                        help="every round refits round 1's data (default: round r simulates new data with seed + r)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.groups, args.draws, args.tune, args.chains, args.seed)))
        return
    names = args.candidates.split(",")
    rows = []
    for round_ in range(args.rounds):
        seed = args.seed if args.same_data else args.seed + round_
        results = {name: run_candidate(name, args, seed) for name in names}
        ref = results.get("handwritten-numpyro", {}).get("ess_per_second")
        for name, r in results.items():
            r["round"], r["seed"] = round_ + 1, seed
            r["ratio_to_handwritten"] = r["ess_per_second"] / ref if ref and "ess_per_second" in r else None
            rows.append(r)
            print(json.dumps(r), flush=True)
    print()
    print(f"NUTS, I={args.groups}, J=100, K=30, {args.chains} chains x ({args.tune} tune + {args.draws} draws), "
          + ("the same data in every round (a refit)" if args.same_data else "new data in every round"))
    print(f"{'candidate':22s} {'round':>5s} {'seconds':>8s} {'min ESS':>8s} {'ESS/s':>7s} {'R-hat':>6s} "
          f"{'RMSE':>6s} {'vs hand':>8s}")
    for r in rows:
        if "error" in r:
            print(f"{r['name']:22s} {r['round']:5d}  failed: {r['error']}")
            continue
        ratio = f"{r['ratio_to_handwritten']:.2f}x" if r["ratio_to_handwritten"] else "-"
        print(f"{r['name']:22s} {r['round']:5d} {r['seconds']:8.1f} {r['ess_bulk_min']:8.0f} "
              f"{r['ess_per_second']:7.1f} {r['rhat_max']:6.3f} {r['rmse']:6.3f} {ratio:>8s}")
    print()
    for name in names:
        ratios = [r["ratio_to_handwritten"] for r in rows if r["name"] == name and r.get("ratio_to_handwritten")]
        phases = [r for r in rows if r["name"] == name and "sampling_seconds" in r]
        line = f"{name:22s} geometric mean ratio {math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f}x" if ratios else name
        if phases:
            mean = {k: sum(r[k] for r in phases) / len(phases)
                    for k in ("import_seconds", "map_seconds", "sampling_seconds", "other_fit_seconds")}
            line += "; mean seconds: " + ", ".join(f"{k.removesuffix('_seconds')} {v:.1f}" for k, v in mean.items())
            line += f"; leapfrog steps per draw {sum(r['steps_per_draw'] for r in phases) / len(phases):.1f}"
        print(line)


if __name__ == "__main__":
    main()
