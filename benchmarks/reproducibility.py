"""Reproducible fits and canonical cluster numbers, at the papers' sizes (issue 16).

For each workload the model is fitted by MAP twice with no seed given (the package's fixed default
seed) and once with each of seeds 1..4, first with the clusters in the canonical order (the
package's default: `relabel.canonical_permutation`, largest first), then with that ordering switched
off (the numbering of whichever restart won, as before it existed). Each fit is compared with the
first fit of its ordering:

  identical      every posterior variable equal to the first fit's
  log_density    the mode's log density (a different value: another optimum, not another numbering)
  agreement      share of items whose cluster number is the first fit's
  shares         the clusters' shares of the items (pcmix: pi), in cluster order

Workloads: noisy experts on breast_cancer (569 items, K = 2) with 2000 constraints from the paper's
five Case-1 experts, and on wine (178 items, K = 3) with 1000; the PC mixture on the 5000-point toy
of seed 003 Sec. 3.3 (b = 10% labels) at lam = 16, K = 2, and the 350-point interval toy of Sec. 3.2
at lam = 4, K = 3.

    python benchmarks/reproducibility.py      # about 10 minutes on 2 busy cores

writes benchmarks/out/reproducibility.csv (git-ignored) and prints the table.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from bayes_wsc import inference
from bayes_wsc.data.pairwise import PairwiseConstraints
from bayes_wsc.errors import FitWarning
from bayes_wsc.estimator import Estimator
from bayes_wsc.models.experts import NoisyExperts
from bayes_wsc.models.pcmix import PCMixture
from bayes_wsc.simulate import simulate_intervals, simulate_two_blobs, toy_items
from bayes_wsc.simulate.experts import CASE_1, load_uci, simulate_uci_experts

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
from output_paths import OUT  # noqa: E402

RUNS = [("no seed", {}), ("no seed, again", {}), *((f"seed {s}", {"seed": s}) for s in range(1, 5))]


def experts_workload(name: str, k: int, n_constraints: int):
    items, labels = load_uci(name)
    constraints, _ = simulate_uci_experts(labels, n_constraints, CASE_1, item_ids=items["id"], seed=2017)
    data = PairwiseConstraints.from_frames(items, constraints)

    def fit(**seed):
        est = NoisyExperts(n_clusters=k, restarts=20, **seed).fit(data)
        members = est.memberships(use_constraints=False)
        probs = members[[f"prob_{c}" for c in range(k)]].to_numpy()
        return est, members["cluster"].to_numpy(), probs.mean(axis=0)

    return f"experts, {name}, K = {k}, {n_constraints} constraints, 20 restarts", fit


def pcmix_workload(frame, label: str, k: int, lam: float):
    data = toy_items(frame)

    def fit(**seed):
        est = PCMixture(components=k, lam=lam, restarts=10, **seed).fit(data)
        return est, est.predict(frame)["cluster"].to_numpy(), est.idata_.posterior["pi"].values[0, 0]

    return f"pcmix, {label}, K = {k}, lam = {lam:g}, 10 restarts", fit


def workloads():
    blobs, _ = simulate_two_blobs(5000, 0.10, seed=0)
    intervals, _ = simulate_intervals(seed=0)
    return [experts_workload("breast_cancer", 2, 2000), experts_workload("wine", 3, 1000),
            pcmix_workload(blobs, "two blobs (5000 items, b = 10%)", 2, 16.0),
            pcmix_workload(intervals, "intervals (350 items)", 3, 4.0)]


def main(argv=None) -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    rows = []
    canonical = {cls: cls.order_clusters for cls in (NoisyExperts, PCMixture)}
    for workload, fit in workloads():
        for ordering in ("canonical", "the winning restart's"):
            for cls, method in canonical.items():  # switch the canonical order off for the second pass
                cls.order_clusters = method if ordering == "canonical" else Estimator.order_clusters
            first = None
            for run, seed in RUNS:
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", FitWarning)
                    est, clusters, shares = fit(**seed)
                post = est.idata_.posterior
                if first is None:
                    first = (post, clusters)
                identical = all(np.array_equal(post[n].values, first[0][n].values) for n in post.data_vars)
                rows.append({"workload": workload, "ordering": ordering, "run": run, "identical": identical,
                             "log_density": inference.get_attrs(est.idata_)["fit_info"]["map"]["log_density"],
                             "agreement": float(np.mean(clusters == first[1])),
                             "shares": " ".join(f"{s:.3f}" for s in shares),
                             "seconds": time.perf_counter() - t0})
                print(rows[-1], flush=True)
    for cls, method in canonical.items():
        cls.order_clusters = method
    table = pd.DataFrame(rows)
    OUT.mkdir(parents=True, exist_ok=True)
    table.to_csv(OUT / "reproducibility.csv", index=False)
    print(table.drop(columns="seconds").round(3).to_string(index=False))


if __name__ == "__main__":
    main()
