"""Where the first MAP of a new shape spends its time, and what later fits of new data cost (issue 30).

breast_cancer (features scaled to [0, 1]) in random groups of sigma items with their counts, the default
`ProportionsClassifier()` MAP (fit-time checks included), each sigma in a fresh process with an empty cache
folder (XDG_CACHE_HOME: no compiled MAP program, no XLA cache). In that process: importing PyMC, then the
cold fit, its phases timed by wrapping the functions that run them (building the PyMC model, PyTensor's
rewrites and conversion of the graph to JAX, JAX's tracing and lowering for export, XLA's compilation,
the optimizer with the first calls that compile, the checks), then `--rounds` fits of new groupings of the same sizes (the program reused:
warm, new data) each beside llp-learn's EM with logistic regression on the same data, timed in the same
process. Wall and CPU seconds (the process's, every thread's): on a machine shared by many processes the
wall time measures the others; the CPU time is what the fit costs, close to its wall time on a quiet machine.

    nice -n 10 python benchmarks/proportions_cold.py --sigmas 2,8,32,128 --rounds 3

Rows go to benchmarks/results/proportions_cold.csv (one per sigma and fit; each run replaces the last).

--cli: whole processes on a user's CSV files, timed from outside, with an empty cache folder: the first
`bayes-wsc fit proportions --counts` ever (breast_cancer in random groups of 16, the issue's target), then a
second data set whose group sizes the cache has never seen (the same items in groups of 8 to 24 items, sizes
drawn at random), then that one again (its program now cached); each beside llp-learn's EM-LR as a whole
process on the same files; wall and CPU seconds of each process (user + system, every thread: on a shared
machine the wall time measures the other processes) (pandas, standardized features, `EM(LogisticRegression())`). `--baseline DIR`
runs the same commands, in the same rounds, with the package's source taken from DIR (another checkout),
its own empty cache folder: before and after in one run. Rows: benchmarks/results/proportions_cold_cli.csv.

    python benchmarks/proportions_cold.py --cli --rounds 3 [--baseline /tmp/base]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
#: phase -> (module, attribute) of the function whose time is that phase's (the time of each call summed)
PHASES = {
    "build_model": ("bayes_wsc.models.proportions", "build_model"),
    "pytensor_to_jax": ("pymc.sampling.jax", "get_jaxified_graph"),
    "xla_compile": ("jax._src.compiler", "backend_compile_and_load"),
    "optimizer_and_first_calls": ("bayes_wsc.map_program", "run_map"),
    "checks": ("bayes_wsc.estimator", "Estimator._fit_time_checks"),
}


class PhaseTimer:
    """Wraps the functions of `PHASES` (and JAX's export, whose traced function is a closure) to sum the
    process's CPU seconds spent in each (every thread's; on a shared machine the wall time mostly measures the
    other processes); a phase that runs inside another counts in both."""

    def __init__(self):
        self.seconds = {name: 0.0 for name in (*PHASES, "jax_trace_export")}

    def timed(self, name, function):
        def wrapper(*args, **kwargs):
            t0 = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[name] += time.process_time() - t0
        return wrapper

    def install(self) -> None:
        import importlib

        import jax

        for name, (module, attribute) in PHASES.items():
            owner = importlib.import_module(module)
            path = attribute.split(".")
            for part in path[:-1]:
                owner = getattr(owner, part)
            setattr(owner, path[-1], self.timed(name, getattr(owner, path[-1])))
        export = jax.export.export
        jax.export.export = lambda *a, **k: self.timed("jax_trace_export", export(*a, **k))


def grouping(sigma: int, seed: int):
    from bayes_wsc.data.proportions import LabelProportions
    from bayes_wsc.models.proportions.simulate import class_counts, random_groups
    from proportions_sec4 import scaled_dataset

    x, labels = scaled_dataset("breast_cancer")
    groups = random_groups(len(labels), sigma, np.random.default_rng(seed))
    counts = class_counts(labels, groups, 2)
    data = LabelProportions.from_arrays(x, groups, counts / counts.sum(axis=1, keepdims=True), counts=counts)
    return x, groups, counts, data


def child(sigma: int, rounds: int) -> None:
    t_start = time.perf_counter()
    from llp_learn.em import EM
    from sklearn.linear_model import LogisticRegression

    _, _, _, data = grouping(sigma, 0)
    t0, c0 = time.perf_counter(), time.process_time()
    import pymc  # noqa: F401  (what a first fit imports, timed apart)

    imports, imports_cpu = time.perf_counter() - t0, time.process_time() - c0
    timer = PhaseTimer()
    timer.install()
    from bayes_wsc.models.proportions import ProportionsClassifier

    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = ProportionsClassifier(progressbar=False).fit(data)
    cold, cold_cpu = time.perf_counter() - t0, time.process_time() - c0
    info = est._mode.info
    rows = [{"sigma": sigma, "fit": "cold (empty cache, first in process)", "seconds": round(cold, 2),
             "cpu_seconds": round(cold_cpu, 2), "import_pymc_seconds": round(imports, 2),
             "import_pymc_cpu": round(imports_cpu, 2), "program": info.get("compiled_program"),
             **{f"{k}_cpu": round(v, 2) for k, v in timer.seconds.items()}}]
    for r in range(1, rounds + 1):
        x, groups, counts, data = grouping(sigma, r)
        t0, c0 = time.perf_counter(), time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = ProportionsClassifier(progressbar=False).fit(data)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        t0, c0 = time.perf_counter(), time.process_time()
        EM(LogisticRegression(), init_y="random", random_state=r).fit(x, groups, counts[:, 1] / counts.sum(axis=1))
        em, em_cpu = time.perf_counter() - t0, time.process_time() - c0
        rows.append({"sigma": sigma, "fit": "warm (new grouping, same sizes)", "seconds": round(seconds, 3),
                     "cpu_seconds": round(cpu, 3), "program": est._mode.info.get("compiled_program"),
                     "em_lr_seconds": round(em, 3), "em_lr_cpu": round(em_cpu, 3),
                     "ratio_to_em_lr": round(seconds / em, 2), "cpu_ratio_to_em_lr": round(cpu / em_cpu, 2)})
    print(json.dumps({"rows": rows, "process_seconds": round(time.perf_counter() - t_start, 2)}))


def write_csv(x, groups, counts, folder: Path) -> tuple[Path, Path]:
    """The data as a user's two files: items (id, group, features) and each group's class counts."""
    folder.mkdir(parents=True, exist_ok=True)
    items = pd.DataFrame(x, columns=[f"x{j + 1}" for j in range(x.shape[1])])
    items.insert(0, "group", [f"g{g}" for g in groups])
    items.insert(0, "id", [f"i{i}" for i in range(len(items))])
    items.to_csv(folder / "items.csv", index=False)
    pd.DataFrame({"group": [f"g{g}" for g in range(len(counts))], "malignant": counts[:, 0],
                  "benign": counts[:, 1]}).to_csv(folder / "counts.csv", index=False)
    return folder / "items.csv", folder / "counts.csv"


def mixed_sizes(n: int, low: int, high: int, rng: np.random.Generator) -> np.ndarray:
    """Group index of n items in random groups whose sizes are drawn uniformly from low..high."""
    sizes = []
    while sum(sizes) < n:
        sizes.append(int(rng.integers(low, high + 1)))
    sizes[-1] -= sum(sizes) - n
    groups = np.empty(n, dtype=np.int64)
    groups[rng.permutation(n)] = np.repeat(np.arange(len(sizes)), sizes)
    return groups


def em_worker(items_file: str, counts_file: str) -> None:
    """llp-learn's EM-LR as a user would run it on the two files: read, standardize, fit."""
    from llp_learn.em import EM
    from sklearn.linear_model import LogisticRegression

    items, counts = pd.read_csv(items_file), pd.read_csv(counts_file)
    x = items.drop(columns=["id", "group"]).to_numpy(float)
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    groups = pd.Index(counts["group"]).get_indexer(items["group"])
    shares = counts["benign"].to_numpy(float) / counts[["malignant", "benign"]].to_numpy(float).sum(axis=1)
    EM(LogisticRegression(), init_y="random", random_state=0).fit(x, groups, shares)


def run_cli(rounds: int, baseline: str | None) -> list[dict]:
    """See the module docstring (--cli)."""
    from bayes_wsc.models.proportions.simulate import class_counts, random_groups
    from proportions_sec4 import scaled_dataset

    x, labels = scaled_dataset("breast_cancer")
    versions = {"this": None, **({"baseline": baseline} if baseline else {})}

    def wall(command, env) -> tuple[float, float]:
        """Wall seconds and the process's CPU seconds (user + system, every thread)."""
        import resource

        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"{' '.join(map(str, command))} failed: {done.stderr[-2000:]}")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.perf_counter() - t0, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime

    rows = []
    with tempfile.TemporaryDirectory(prefix="cold-cli-") as tmp:
        tmp = Path(tmp)
        for round_ in range(rounds):
            rng = np.random.default_rng(100 + round_)
            sixteen = random_groups(len(labels), 16, rng)
            mixed = mixed_sizes(len(labels), 8, 24, rng)
            files = {name: write_csv(x, g, class_counts(labels, g, 2), tmp / f"r{round_}" / name)
                     for name, g in (("groups of 16", sixteen), ("groups of 8-24", mixed))}
            for version, source in versions.items():
                cache = tmp / f"cache-{version}-{round_}"  # empty: nothing compiled, no XLA cache
                env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
                if source:
                    env["PYTHONPATH"] = os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))
                steps = [("groups of 16", "cold: first fit, empty cache"),
                         ("groups of 8-24", "new group sizes (cache holds the first fit's program)"),
                         ("groups of 8-24", "same data again (its program cached)")]
                for data, fit in steps:
                    items, counts = files[data]
                    out = tmp / f"r{round_}" / f"{version}-{len(rows)}.nc"
                    seconds, cpu = wall([sys.executable, "-m", "bayes_wsc.cli", "fit", "proportions", "--items",
                                         str(items), "--proportions", str(counts), "--counts", "--no-progress",
                                         "--out", str(out)], env)
                    em, em_cpu = wall([sys.executable, __file__, "--em-worker", str(items), str(counts)], env)
                    row = {"round": round_, "version": version, "data": data, "fit": fit, "cli_seconds": round(seconds, 2),
                           "cli_cpu": round(cpu, 2), "em_lr_process_seconds": round(em, 2),
                           "em_lr_process_cpu": round(em_cpu, 2), "ratio_to_em_lr": round(seconds / em, 2),
                           "cpu_ratio_to_em_lr": round(cpu / em_cpu, 2), "load": round(os.getloadavg()[0], 2)}
                    print(row, flush=True)
                    rows.append(row)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sigmas", default="2,8,32,128")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cli", action="store_true", help="whole processes on CSV files (see above)")
    parser.add_argument("--baseline", default=None, help="--cli: the package's source from this checkout too")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--em-worker", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        child(args.child, args.rounds)
        return 0
    if args.em_worker is not None:
        em_worker(*args.em_worker)
        return 0
    if args.cli:
        command = "python benchmarks/proportions_cold.py " + " ".join(map(shlex.quote, sys.argv[1:] if argv is None else argv))
        print("command:", command, flush=True)
        frame = pd.DataFrame(run_cli(args.rounds, args.baseline))
        frame = frame.assign(date=time.strftime("%Y-%m-%d %H:%M"), command=command)
        frame.to_csv(HERE / "results" / "proportions_cold_cli.csv", index=False)
        print(frame.groupby(["version", "fit"], sort=False)[["cli_seconds", "cli_cpu", "em_lr_process_seconds",
                                                             "em_lr_process_cpu", "cpu_ratio_to_em_lr"]]
              .median().to_string())
        return 0
    command = "python benchmarks/proportions_cold.py " + " ".join(map(shlex.quote, sys.argv[1:] if argv is None else argv))
    print("command:", command, flush=True)
    rows = []
    for sigma in [int(s) for s in args.sigmas.split(",")]:
        with tempfile.TemporaryDirectory(prefix="cold-cache-") as cache:
            done = subprocess.run([sys.executable, __file__, "--child", str(sigma), "--rounds", str(args.rounds)],
                                  capture_output=True, text=True, env={**os.environ, "XDG_CACHE_HOME": cache})
        if done.returncode:
            raise SystemExit(done.stderr[-3000:])
        result = json.loads(done.stdout.strip().splitlines()[-1])
        for row in result["rows"]:
            print(row, flush=True)
        rows += result["rows"]
    load = os.getloadavg()[0]
    frame = pd.DataFrame(rows).assign(load=round(load, 1), date=time.strftime("%Y-%m-%d %H:%M"), command=command)
    out = HERE / "results" / "proportions_cold.csv"
    frame.to_csv(out, index=False)  # one current table: the latest run
    return 0


if __name__ == "__main__":
    sys.exit(main())
