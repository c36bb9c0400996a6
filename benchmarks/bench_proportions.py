"""Speed of the label-proportions model (issue 14's targets), every figure a ratio or a time taken in one run.

* llp: a MAP fit with the default settings on breast_cancer in random groups of 16 against one run of the
  LLP algorithm with the paper's settings (k = 6, maxgen = 10, psize = 25, mutvar = 1.0, crossprob = 0.3,
  tournsize = 0.25, exhaustive labeling), alternated over new groupings. The process's first MAP fit (which builds the
  compiled program) is reported apart from the later ones (new data of the same structure: the
  program is reused). Target: MAP <= 0.5 x LLP.
* scale: 1M items in 10,000 groups, 10 features, 3 classes, gaussian emission: one MAP fit in a fresh
  process, its wall time and the process's peak memory (maxrss). Targets: <= 30 s, <= 4 GB.
* nuts: 100,000 items (1,000 groups of 100), the same model, NUTS with the default 4 chains x (1000 tune
  + 1000 draws): wall time and the largest R-hat. Targets: <= 10 minutes, R-hat < 1.01.

    python benchmarks/bench_proportions.py --part llp --rounds 5
    python benchmarks/bench_proportions.py --part scale [--bag exact-counts]
    python benchmarks/bench_proportions.py --part nuts [--precision float32]
    python benchmarks/bench_proportions.py --part nuts-sec4

* nuts-sec4: NUTS with the default chains, tune and draws on breast_cancer in groups of 16, for the default
  fit, the logistic emission with the bag-mean likelihood and the gaussian emission with exact counts:
  sampler seconds, leapfrog steps per draw and milliseconds per leapfrog step.

Appends rows to benchmarks/out/bench_proportions.csv (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import resource
import shlex
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
from output_paths import OUT  # noqa: E402

ROWS_CSV = OUT / "bench_proportions.csv"


def record(rows: list[dict], command: str) -> None:
    frame = pd.DataFrame(rows).assign(command=command)
    ROWS_CSV.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(ROWS_CSV, mode="a", header=not ROWS_CSV.exists(), index=False)
    print(frame.drop(columns="command").to_string(index=False))


def breast_cancer_groups(seed: int):
    """breast_cancer scaled to [0, 1] as in Sec. 4, in a random grouping of 16 with its counts:
    (x, (data, groups, counts))."""
    from bayes_wsc.data.proportions import LabelProportions
    from bayes_wsc.simulate.proportions import class_counts, load_uci, random_groups

    items, labels = load_uci("breast_cancer")
    x = items.drop(columns="id").to_numpy()
    x = (x - x.min(axis=0)) / (x.max(axis=0) - x.min(axis=0))
    groups = random_groups(len(labels), 16, np.random.default_rng(seed))
    counts = class_counts(labels, groups, 2)
    data = LabelProportions.from_arrays(x, groups, counts / counts.sum(axis=1, keepdims=True), counts=counts)
    return x, (data, groups, counts)


def part_nuts_sec4(args) -> list[dict]:
    """NUTS (default chains, tune and draws) on breast_cancer in groups of 16: the default fit and the two
    nearest alternatives, in one process; sampler time, leapfrog steps and the time per step."""
    from bayes_wsc import inference
    from bayes_wsc.models.proportions import ProportionsClassifier

    data = breast_cancer_groups(0)[1][0]
    rows = []
    for settings in ({}, {"bag_likelihood": "independent"}, {"emission": "gaussian"}):
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True):
            est = ProportionsClassifier(method="nuts", progressbar=False, seed=1, **settings).fit(data)
        seconds = time.perf_counter() - t0
        sampler = float(inference.get_attrs(est._fitted())["fit_info"]["nuts"].get("seconds", float("nan")))
        steps = est._fitted().sample_stats["n_steps"].values
        rows.append({"part": "nuts-sec4", "emission": est.emission, "bag": est.bag_likelihood_,
                     "nuts_seconds": round(seconds, 1), "sampler_seconds": round(sampler, 1),
                     "mean_leapfrog_steps": round(float(steps.mean()), 1),
                     "ms_per_step": round(1000 * sampler / float(steps.sum()), 3),
                     "max_rhat": round(float(est.summary()["r_hat"].max()), 4)})
        print(rows[-1], flush=True)
    return rows


def part_llp(args) -> list[dict]:
    from bayes_wsc.baselines.proportions import fit_llp
    from bayes_wsc.models.proportions import ProportionsClassifier

    rows = []
    for r in range(args.rounds + 1):
        x, (data, groups, counts) = breast_cancer_groups(100 + r)
        t0 = time.perf_counter()
        est = ProportionsClassifier(emission=args.emission, bag_likelihood=args.bag).fit(data)
        map_seconds = time.perf_counter() - t0
        origin = json.loads(est.idata_.posterior.attrs["fit_info"])["map"].get("compiled_program")
        t0 = time.perf_counter()
        fit_llp(x, groups, counts / counts.sum(axis=1, keepdims=True), k=6, labeling="exhaustive", seed=r)
        llp_seconds = time.perf_counter() - t0
        rows.append({"part": "llp", "round": r, "fit": "first in process" if r == 0 else "new data, same structure",
                     "program": origin,
                     "map_seconds": round(map_seconds, 3), "llp_seconds": round(llp_seconds, 3),
                     "ratio": round(map_seconds / llp_seconds, 3), "emission": args.emission,
                     "bag": est.bag_likelihood_})
        print(rows[-1], flush=True)
    return rows


def simulated(n_items: int, n_groups: int, n_features: int = 10, n_classes: int = 3, seed: int = 0):
    from bayes_wsc.data.proportions import LabelProportions

    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(n_groups), n_items // n_groups)
    theta = rng.dirichlet(np.full(n_classes, 0.7), n_groups)
    z = (rng.random((groups.size, 1)) > np.cumsum(theta[groups], axis=1)).sum(axis=1).clip(0, n_classes - 1)
    mean = rng.normal(0, 1.5, (n_classes, n_features))
    x = mean[z] + rng.standard_normal((groups.size, n_features))
    counts = np.bincount(groups * n_classes + z, minlength=n_groups * n_classes).reshape(n_groups, n_classes)
    return LabelProportions.from_arrays(x, groups, counts / counts.sum(axis=1, keepdims=True), counts=counts), mean


def part_scale_child(args) -> None:
    """In a fresh process: build the data, fit the MAP, print its time and the peak memory as JSON."""
    from bayes_wsc.models.proportions import ProportionsClassifier

    data, truth = simulated(1_000_000, 10_000)
    t0 = time.perf_counter()
    est = ProportionsClassifier(emission=args.emission, bag_likelihood=args.bag).fit(data)
    seconds = time.perf_counter() - t0
    info = json.loads(est.idata_.posterior.attrs["fit_info"])["map"]
    error = float(np.abs((est.idata_.posterior["mean"].values[0, 0] - data.center) / data.scale
                         - (truth - data.center) / data.scale).max())
    print(json.dumps({"part": "scale", "bag": args.bag, "map_seconds": round(seconds, 2),
                      "peak_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3),
                      "iterations": info["iterations"], "converged": info["converged"],
                      "program": info.get("compiled_program"), "largest_mean_error_sd": round(error, 4),
                      "diagnostics": len(est.diagnostics_)}))


def part_scale(args) -> list[dict]:
    rows = []
    for run in range(args.rounds):
        done = subprocess.run([sys.executable, __file__, "--part", "scale-child", "--bag", args.bag, "--emission", args.emission],
                              capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(done.stderr[-2000:])
        row = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append({**row, "round": run})
        print(rows[-1], flush=True)
    return rows


def part_nuts(args) -> list[dict]:
    from bayes_wsc.models.proportions import ProportionsClassifier

    data, _ = simulated(100_000, 1_000)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True):
        est = ProportionsClassifier(emission=args.emission, bag_likelihood=args.bag, method="nuts",
                                    precision=args.precision, progressbar=False).fit(data)
    seconds = time.perf_counter() - t0
    summary = est.summary()
    from bayes_wsc import inference

    info = inference.get_attrs(est._fitted())["fit_info"]["nuts"]
    steps = est._fitted().sample_stats["n_steps"].values
    return [{"part": "nuts", "bag": args.bag, "precision": args.precision or "default", "nuts_seconds": round(seconds, 1),
             "sampler_seconds": round(float(info.get("seconds", float("nan"))), 1),
             "mean_leapfrog_steps": round(float(steps.mean()), 1),
             "max_rhat": round(float(summary["r_hat"].max()), 4), "min_ess_bulk": round(float(summary["ess_bulk"].min())),
             "diagnostics": " | ".join(est.diagnostics_)[:300]}]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("llp", "scale", "scale-child", "nuts", "nuts-sec4"), required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--emission", default=None,
                        help="default: the model's own (logistic) for llp, gaussian (the issue's) for scale and nuts")
    parser.add_argument("--bag", default=None,
                        help="default: the model's own (auto: exact counts here) for llp, independent for scale and nuts")
    parser.add_argument("--precision", default=None, help="NUTS arithmetic (--part nuts): float32 or float64")
    args = parser.parse_args(argv)
    if args.part == "llp":
        from bayes_wsc.models.proportions import DEFAULT_BAG_LIKELIHOOD, DEFAULT_EMISSION

        args.emission, args.bag = args.emission or DEFAULT_EMISSION, args.bag or DEFAULT_BAG_LIKELIHOOD
    else:
        args.emission, args.bag = args.emission or "gaussian", args.bag or "independent"
    if args.part == "scale-child":
        part_scale_child(args)
        return 0
    command = "python benchmarks/bench_proportions.py " + " ".join(map(shlex.quote, sys.argv[1:] if argv is None else argv))
    rows = {"llp": part_llp, "scale": part_scale, "nuts": part_nuts, "nuts-sec4": part_nuts_sec4}[args.part](args)
    record(rows, command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
