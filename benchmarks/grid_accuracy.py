"""Accuracy of `WSC(mu="grid")`: each group's log integral over mu_i on the shared grid against
per-group adaptive quadrature, on Sec. 5 data.

For each cell (J clicks a group, WH, K bins) new data of `--groups` groups, and parameter points: the
truth and `--points` - 1 perturbed ones (w0, w1 ~ Dirichlet around the truth, F0's location and
scale moved). Reference: Gauss-Hermite quadrature per group with 40 nodes centred by 10 Newton steps
(`group_quadrature.integrated_loglik`, float64), itself checked against scipy's `quad` on
`--quad-groups` groups per point. Reported: the largest absolute error over groups and points of
the grid at the model's spacing (`GRID_SPACING`) and at coarser ones, beside the model's per-group
quadrature of `mu="integrated"` (MODEL_GH_NODES nodes, MODEL_NEWTON_STEPS steps), and the grid's nodes.

    python benchmarks/grid_accuracy.py
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SPACINGS = (1.0, 1.5, 2.0)


def quad_loglik(counts_i, he_i, w0, w1, loc, scale, sigma) -> float:
    """log of one group's integral by scipy's adaptive quadrature, scaled at the integrand's peak."""
    from scipy.integrate import quad
    from scipy.special import expit
    from scipy.stats import norm

    def log_f(m):
        m = np.asarray(m, dtype=float)
        value = np.log(expit(-m)[..., None] * w0 + expit(m)[..., None] * w1) @ counts_i
        return value + norm.logpdf(m, loc, scale) + norm.logpdf(he_i, m, sigma)

    grid = np.linspace(-15, 15, 3001)
    logs = log_f(grid)
    peak, top = grid[np.argmax(logs)], logs.max()
    value = quad(lambda m: math.exp(float(log_f(m)) - top), -15, 15, points=[peak], limit=400, epsabs=0,
                 epsrel=1e-12)[0]
    return top + math.log(value)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--points", type=int, default=4)
    parser.add_argument("--quad-groups", type=int, default=50)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "grid_accuracy.csv")
    args = parser.parse_args(argv)
    from bayes_wsc import group_quadrature as gq
    from bayes_wsc.models.wsc import (GRID_REACH, GRID_SPACING, MODEL_GH_NODES, MODEL_NEWTON_STEPS, data_grid,
                                      pooled_bin_frequencies)
    from bayes_wsc.simulate import simulate_wsc

    ops, rng, rows = gq.numpy_ops(), np.random.default_rng(args.seed), []
    for j in (5, 100):
        for wh in (4.0, 10.0):
            for k in (15, 30):
                sigma = 1 / math.sqrt(wh)
                data, truth = simulate_wsc(n_groups=args.groups, items_per_group=j, n_bins=k, sigma_h=sigma,
                                           seed=int(rng.integers(1 << 30)))
                counts, q = data.counts.astype(float), pooled_bin_frequencies(data.counts)
                nodes = data_grid(data, wh, "hierarchical")
                finest = nodes[1] - nodes[0]
                errors = {s: 0.0 for s in SPACINGS} | {"gh": 0.0, "reference_vs_quad": 0.0, "end_weight": 0.0}
                for p in range(args.points):
                    w0, w1, loc, scale = truth.w0, truth.w1, 0.0, 1.0
                    if p:
                        w0, w1 = rng.dirichlet(300 * truth.w0), rng.dirichlet(300 * truth.w1)
                        loc, scale = rng.normal(0, 0.2), rng.uniform(0.8, 1.25)
                    g = gq.Integrand(counts, data.he, w0 / q, w1 / q, loc, scale, sigma)
                    reference = gq.integrated_loglik(ops, g, gq.gaussian_start(g), nodes=40, steps=10)
                    for s in SPACINGS:
                        grid = nodes[0] + finest * s * np.arange(int(math.ceil((nodes[-1] - nodes[0]) / (finest * s))) + 1)
                        errors[s] = max(errors[s], float(np.abs(gq.grid_loglik(ops, g, grid) - reference).max()))
                    errors["end_weight"] = max(errors["end_weight"],
                                               float(gq.grid_end_weight(gq.grid_log_terms(ops, g, nodes)).max()))
                    gh = gq.integrated_loglik(ops, g, gq.gaussian_start(g), nodes=MODEL_GH_NODES,
                                              steps=MODEL_NEWTON_STEPS[True])
                    errors["gh"] = max(errors["gh"], float(np.abs(gh - reference).max()))
                    for i in rng.choice(data.n_groups, size=min(args.quad_groups, data.n_groups), replace=False):
                        exact = quad_loglik(counts[i], data.he[i], w0 / q, w1 / q, loc, scale, sigma)
                        errors["reference_vs_quad"] = max(errors["reference_vs_quad"], abs(reference[i] - exact))
                row = {"J": j, "WH": wh, "K": k, "groups": data.n_groups, "points": args.points,
                       "nodes": nodes.size, "spacing": round(float(finest), 4),
                       "range": f"{nodes[0]:.2f}..{nodes[-1]:.2f}",
                       **{f"grid_error_x{s:g}": f"{errors[s]:.1e}" for s in SPACINGS},
                       f"gh{MODEL_GH_NODES}_error": f"{errors['gh']:.1e}",
                       "reference_vs_quad": f"{errors['reference_vs_quad']:.1e}",
                       "largest_end_weight": f"{errors['end_weight']:.1e}"}
                rows.append(row)
                print(row, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"grid spacing {GRID_SPACING} x the finest width, reach {GRID_REACH}; wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
