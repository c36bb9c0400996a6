"""Why NPE + k-means fell far below LPE + k-means in the perception study (issue 15), by measurement.

    python benchmarks/npe_diagnosis.py            # out/npe_diagnosis.csv, results/npe_diagnosis_summary.csv

On simulated data sets 0-4 and digits seed draws 0-2, one start each (NPE's objective is jointly convex
in F and C when K is positive definite, as it is here: the starts end at the same optimum), defaults
beta 10, gamma 1 unless a row says otherwise:

  optimizer   the multiplicative updates' final objective against the exact optimum of the same
              objective over C >= 0 (F eliminated in closed form, L-BFGS-B with bounds), and against
              its kernel-ridge relaxation (C of either sign, closed form: C = (W K_SS + gamma I)^-1 W P
              on the seeds, 0 elsewhere, W = beta c / (1 + beta c)), a lower bound
  final step  k-means on raw F (the old rule) against k-means on F's rows scaled to length 1, for NPE,
              LPE and the kernel-ridge embedding
  settings    NPE with the self-tuning width doubled (and that objective's exact optimum), and with
              gamma 0.01
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize

from bayes_wsc.baselines import perception as bp
from bayes_wsc.simulate.perception import digits_example, simulate_study

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
from output_paths import OUT, RESULTS  # noqa: E402

BETA, GAMMA = 10.0, 1.0


def f_score(F, data, truth, normalize):
    labels = bp.kmeans_clusters(bp.unit_rows(F) if normalize else F, data, seed=0)
    return float(bp.f_scores(bp.one_hot(labels, data.n_clusters), truth, data.unseeded_items).mean())


def eliminate_f(K, C, data, beta):
    """The F that minimizes the objective for this C: K C off the seeds, pulled to the perception on them."""
    counts, targets = bp.seed_targets(data)
    return np.maximum((K @ C + beta * targets) / (1 + beta * counts)[:, None], 0.0)


def kernel_ridge(K, data, beta, gamma):
    """The optimum over C of either sign (and F free): kernel ridge regression of the seeds' perception."""
    counts, targets = bp.seed_targets(data)
    seeds = counts > 0
    w = beta * counts[seeds] / (1 + beta * counts[seeds])
    C = np.zeros_like(targets)
    C[seeds] = np.linalg.solve(w[:, None] * K[np.ix_(seeds, seeds)] + gamma * np.eye(seeds.sum()),
                               w[:, None] * targets[seeds] / counts[seeds, None])
    return C


def exact_non_negative(K, data, beta, gamma, start):
    """The optimum over C >= 0 of the objective with F eliminated (L-BFGS-B with bounds)."""
    counts, targets = bp.seed_targets(data)
    n, q = targets.shape
    w = (beta * counts / (1 + beta * counts))[:, None]
    mean_p = np.divide(targets, counts[:, None], out=np.zeros_like(targets), where=counts[:, None] > 0)

    def value_and_gradient(c):
        C = c.reshape(n, q)
        KC = K @ C
        residual = w * (KC - mean_p)
        return (float(np.sum(residual * (KC - mean_p)) + gamma * np.sum(C * KC)),
                (2 * K @ residual + 2 * gamma * KC).ravel())

    res = minimize(value_and_gradient, np.maximum(start, 0).ravel(), jac=True, method="L-BFGS-B",
                   bounds=[(0, None)] * (n * q), options={"maxiter": 20000, "maxfun": 40000, "ftol": 1e-15,
                                                          "gtol": 1e-12})
    return res.x.reshape(n, q)


def main(argv=None) -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(exist_ok=True)
    studies = [(f"sim{s}", simulate_study(seed=s)) for s in range(5)]
    studies += [(f"digits{s}", digits_example(seed=s)) for s in range(3)]
    rows = []

    def record(name, method, F, objective=None, seconds=None, **extra):
        row = {"dataset": name, "method": method, "f_raw": f_score(F, data, truth, False),
               "f_unit_rows": f_score(F, data, truth, True), "objective": objective, "seconds": seconds, **extra}
        rows.append(row)
        print({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}, flush=True)

    for name, study in studies:
        data, truth = study.data(), study.membership
        K = bp.self_tuning_kernel(data.features)
        t0 = time.perf_counter()
        lpe = bp.lpe(data, restarts=1)
        record(name, "LPE", lpe.F, lpe.objective, time.perf_counter() - t0, iterations=lpe.iterations)
        t0 = time.perf_counter()
        npe = bp.npe(data, restarts=1, kernel=K)
        record(name, "NPE (multiplicative)", npe.F, npe.objective, time.perf_counter() - t0,
               iterations=npe.iterations, converged=npe.converged, min_eig_K=float(np.linalg.eigvalsh(K)[0]))
        C = kernel_ridge(K, data, BETA, GAMMA)
        F = eliminate_f(K, C, data, BETA)
        record(name, "kernel ridge (C of either sign), closed form", F, bp.npe_objective(K, F, C, data, BETA, GAMMA))
        if name in ("sim0", "digits0"):
            t0 = time.perf_counter()
            C = exact_non_negative(K, data, BETA, GAMMA, C)
            F = eliminate_f(K, C, data, BETA)
            record(name, "exact optimum over C >= 0 (L-BFGS-B)", F, bp.npe_objective(K, F, C, data, BETA, GAMMA),
                   time.perf_counter() - t0)
        t0 = time.perf_counter()
        wide = bp.npe(data, restarts=1, kernel=K**0.25)
        record(name, "NPE, self-tuning width x 2", wide.F, wide.objective, time.perf_counter() - t0,
               iterations=wide.iterations, converged=wide.converged)
        if name in ("sim0", "digits0"):
            t0 = time.perf_counter()
            C = exact_non_negative(K**0.25, data, BETA, GAMMA, kernel_ridge(K**0.25, data, BETA, GAMMA))
            F = eliminate_f(K**0.25, C, data, BETA)
            record(name, "exact optimum over C >= 0, width x 2", F,
                   bp.npe_objective(K**0.25, F, C, data, BETA, GAMMA), time.perf_counter() - t0)
        t0 = time.perf_counter()
        weak = bp.npe(data, restarts=1, kernel=K, gamma=0.01)
        record(name, "NPE, gamma 0.01", weak.F, weak.objective, time.perf_counter() - t0,
               iterations=weak.iterations, converged=weak.converged)
        pd.DataFrame(rows).to_csv(OUT / "npe_diagnosis.csv", index=False)
    table = pd.DataFrame(rows)
    by = table.assign(part=table["dataset"].str.rstrip("0123456789")).groupby(["part", "method"], sort=False)
    summary = by[["f_raw", "f_unit_rows"]].mean()
    summary.to_csv(RESULTS / "npe_diagnosis_summary.csv", float_format="%.4f")
    print(summary.round(3).to_string())


if __name__ == "__main__":
    main()
