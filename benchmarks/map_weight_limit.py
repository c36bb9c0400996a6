"""How heavy a group the first model's MAP holds: the evidence for `data.grouped.MAX_GROUP_WEIGHT`.

The same count table is scaled so that the heaviest group holds W weighted items, for W from 1e5
up; the data's proportions do not change, so as W grows the posterior mode settles to a limit
and the step from one W to the next shrinks with it (the prior's pull falls like 1/W). Printed:
the largest change of any rho(k) from the fit at the previous W. A step that grows again while
the optimizer reports convergence is a silent drift: the log density (of order W) is then too
large for its changes near the optimum to show in float64, and L-BFGS stops early.

    python benchmarks/map_weight_limit.py
"""

from __future__ import annotations

import warnings

import numpy as np

from bayes_wsc import inference
from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.models.wsc import WSC
from bayes_wsc.simulate import simulate_wsc

SCALES = (1e5, 1e6, 3e6, 1e7, 2.5e7, 5e7, 1e8)
SIMULATED = {  # name: (groups, items per group, bins, seed)
    "4 groups x 15, 3 bins": (4, 15, 3, 1),
    "200 groups x 50, 5 bins": (200, 50, 5, 1),
}


def weighted_clicks() -> GroupedCounts:
    """60 clicks with uniform(0.5, 2) weights in 4 groups and 3 bins (the issue's weighted case)."""
    import pandas as pd

    rng = np.random.default_rng(0)
    clicks = pd.DataFrame({"group": rng.choice(list("abcd"), 60), "bounce": rng.choice(["y", "n", "m"], 60),
                           "w": rng.uniform(0.5, 2, 60)})
    groups = pd.DataFrame({"group": list("abcd"), "he": [0.5, -0.2, 1.0, -1.0]})
    return GroupedCounts.from_frames(clicks, groups, weight_col="w")


def data_sets() -> dict[str, GroupedCounts]:
    out = {"60 weighted clicks, 4 groups, 3 bins": weighted_clicks()}
    for name, (n_groups, items, n_bins, seed) in SIMULATED.items():
        out[name] = simulate_wsc(n_groups=n_groups, items_per_group=items, n_bins=n_bins, seed=seed)[0]
    return out


def main() -> None:
    import bayes_wsc.data.grouped as grouped

    grouped.MAX_GROUP_WEIGHT = np.inf  # measure past the limit
    warnings.simplefilter("ignore")
    print("| data | mu prior | " + " | ".join(f"{a:g} -> {b:g}" for a, b in zip(SCALES, SCALES[1:])) + " |")
    print("|---|---|" + "---|" * (len(SCALES) - 1))
    for name, data in data_sets().items():
        for prior in ("flat", "hierarchical"):
            cells, previous = [], None
            for weight in SCALES:
                counts = data.counts * (weight / data.counts.sum(axis=1).max())
                est = WSC(method="map", mu_prior=prior).fit(GroupedCounts.from_counts(counts, data.he))
                rho = est.idata_.posterior["rho"].values.ravel()
                info = inference.get_attrs(est.idata_)["fit_info"]["map"]
                if previous is not None:
                    cells.append(f"{np.abs(rho - previous).max():.5f}{'' if info['converged'] else ' (not converged)'}")
                previous = rho
            print(f"| {name} | {prior} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
