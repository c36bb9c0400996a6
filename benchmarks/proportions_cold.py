"""Where the first MAP of a new shape spends its time, and what later fits of new data cost (issue 30).

breast_cancer (features scaled to [0, 1]) in random groups of sigma items with their counts, the default
`ProportionsClassifier()` MAP (fit-time checks included), each sigma in a fresh process with an empty cache
folder (XDG_CACHE_HOME: no compiled MAP program, no XLA cache). In that process: the cold fit, profiled
(cProfile; the phases by the functions that run them: building the PyMC model, PyTensor's rewrites and
JAX conversion of the graph, JAX's tracing and lowering for export, XLA's compilation at the first call,
the optimizer, the checks), then `--rounds` fits of new groupings of the same sizes (the program reused:
warm, new data) each beside llp-learn's EM with logistic regression on the same data, timed in the same
process.

    nice -n 10 python benchmarks/proportions_cold.py --sigmas 2,8,32,128 --rounds 3

Rows go to benchmarks/results/proportions_cold.csv (one per sigma and fit).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
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
#: phase -> functions (file fragment, function name) whose cumulative time is that phase's
PHASES = {
    "import_pymc": [("pymc/__init__.py", "<module>")],
    "build_model": [("models/proportions.py", "build_model")],
    "pytensor_to_jax": [("pymc/sampling/jax.py", "get_jaxified_graph")],
    "jax_trace_export": [("jax/_src/export/_export.py", "do_export")],
    "xla_compile": [("jax/_src/compiler.py", "backend_compile_and_load"), ("jax/_src/compiler.py", "backend_compile")],
    "optimizer": [("bayes_wsc/map_program.py", "run_map")],
    "checks": [("bayes_wsc/estimator.py", "_fit_time_checks")],
}


def grouping(sigma: int, seed: int):
    from bayes_wsc.data.proportions import LabelProportions
    from bayes_wsc.simulate.proportions import class_counts, random_groups
    from proportions_sec4 import scaled_dataset

    x, labels = scaled_dataset("breast_cancer")
    groups = random_groups(len(labels), sigma, np.random.default_rng(seed))
    counts = class_counts(labels, groups, 2)
    data = LabelProportions.from_arrays(x, groups, counts / counts.sum(axis=1, keepdims=True), counts=counts)
    return x, groups, counts, data


def phase_seconds(stats: pstats.Stats) -> dict:
    out = {}
    for phase, functions in PHASES.items():
        total = 0.0
        for (file, line, name), (cc, nc, tt, ct, callers) in stats.stats.items():
            if any(file.endswith(f) and name == n for f, n in functions):
                # a recursive or nested entry counts once: only entries not called by another of the phase's
                if not any(any(c[0].endswith(f) and c[2] == n for f, n in functions) for c in callers):
                    total += ct
        out[phase] = round(total, 3)
    return out


def child(sigma: int, rounds: int) -> None:
    t_start = time.perf_counter()
    from llp_learn.em import EM
    from sklearn.linear_model import LogisticRegression

    profile = cProfile.Profile()
    _, _, _, data = grouping(sigma, 0)
    profile.enable()
    t0 = time.perf_counter()
    from bayes_wsc.models.proportions import ProportionsClassifier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = ProportionsClassifier(progressbar=False).fit(data)
    cold = time.perf_counter() - t0
    profile.disable()
    info = est._mode.info
    rows = [{"sigma": sigma, "fit": "cold (empty cache, first in process, imports included)", "seconds": round(cold, 2),
             "program": info.get("compiled_program"), **phase_seconds(pstats.Stats(profile))}]
    for r in range(1, rounds + 1):
        x, groups, counts, data = grouping(sigma, r)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = ProportionsClassifier(progressbar=False).fit(data)
        seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        EM(LogisticRegression(), init_y="random", random_state=r).fit(x, groups, counts[:, 1] / counts.sum(axis=1))
        em = time.perf_counter() - t0
        rows.append({"sigma": sigma, "fit": "warm (new grouping, same sizes)", "seconds": round(seconds, 3),
                     "program": est._mode.info.get("compiled_program"), "em_lr_seconds": round(em, 3),
                     "ratio_to_em_lr": round(seconds / em, 2)})
    print(json.dumps({"rows": rows, "process_seconds": round(time.perf_counter() - t_start, 2)}))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sigmas", default="2,8,32,128")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        child(args.child, args.rounds)
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
    frame.to_csv(out, mode="a", header=not out.exists(), index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
