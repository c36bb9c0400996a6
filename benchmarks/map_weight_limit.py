"""How heavy a group the first model's MAP holds: the evidence for `data.grouped.MAX_GROUP_WEIGHT`.

The same count table is scaled so that the heaviest group holds W weighted items, for W from 1e5
up; the data's proportions do not change, so the posterior mode should settle to a limit as W
grows. Printed: the largest change of any rho(k) from the fit at the smallest W, and what the
optimizer said. A change that appears while the optimizer reports convergence is a silent
drift: the log density (order W) is then too large for its changes near the optimum to be seen
in float64, and L-BFGS stops early.

    python benchmarks/map_weight_limit.py
"""

from __future__ import annotations

import warnings

import numpy as np

from bayes_wsc import inference
from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.models.wsc import WSC
from bayes_wsc.simulate import simulate_wsc

SCALES = (1e5, 1e6, 1e7, 2.5e7, 5e7, 1e8)
DATA = {  # name: (groups, items per group, bins, seed)
    "4 groups x 15, 3 bins": (4, 15, 3, 1),
    "4 groups x 15, 5 bins": (4, 15, 5, 7),
    "200 groups x 50, 5 bins": (200, 50, 5, 1),
}


def main() -> None:
    import bayes_wsc.data.grouped as grouped

    grouped.MAX_GROUP_WEIGHT = np.inf  # measure past the limit
    warnings.simplefilter("ignore")
    print("| data | mu prior | " + " | ".join(f"{w:g}" for w in SCALES[1:]) + " |")
    print("|---|---|" + "---|" * (len(SCALES) - 1))
    for name, (n_groups, items, n_bins, seed) in DATA.items():
        data, _ = simulate_wsc(n_groups=n_groups, items_per_group=items, n_bins=n_bins, seed=seed)
        for prior in ("flat", "hierarchical"):
            cells, reference = [], None
            for weight in SCALES:
                counts = data.counts * (weight / data.counts.sum(axis=1).max())
                est = WSC(method="map", mu_prior=prior).fit(GroupedCounts.from_counts(counts, data.he))
                rho = est.idata_.posterior["rho"].values.ravel()
                info = inference.get_attrs(est.idata_)["fit_info"]["map"]
                if reference is None:
                    reference = rho
                    continue
                flag = "" if info["converged"] else " (not converged)"
                cells.append(f"{np.abs(rho - reference).max():.4f}{flag}")
            print(f"| {name} | {prior} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
