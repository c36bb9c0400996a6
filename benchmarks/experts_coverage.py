"""Coverage of the noisy experts' 90% intervals of W and b on data simulated from the model (issue 38).

Each replicate draws W and b from the fit's prior (`simulate_experts_model`'s default) for 150 items
with 2 features in K = 2 clusters, three experts (alpha = beta = 0.9, 0.8, 0.7) rating 300 random
pairs each, fits the Laplace approximation (1000 draws) and asks whether the equal-tailed 90%
intervals of the free entries of [b; W] (those of cluster 1; cluster 0's are their negatives) hold
the truth after the fit's clusters are matched to the truth's (`truth_covered`). Two ways to draw the
links: `item` (the default: each item's cluster drawn once, the paper's model) and `pair` (each rated
pair's "same cluster" drawn once from sum_k p_ik p_jk, the fit's pairwise likelihood exactly). The
slow test `test_intervals_of_w_and_b_cover_the_simulated_truth_at_their_level` runs the `pair` half.

    nice -n 10 python benchmarks/experts_coverage.py --reps 12

Prints, per mode, the entries covered out of all and the 99% range of Binomial(n, 0.9).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy.stats import binom


def coverage(same_cluster: str, reps: int) -> list[bool]:
    from bayes_wsc.data.pairwise import PairwiseConstraints
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.experts import NoisyExperts
    from bayes_wsc.simulate.experts import simulate_experts_model, truth_covered

    covered = []
    for seed in range(reps):
        items, constraints, truth = simulate_experts_model(n_items=150, n_features=2, n_clusters=2,
                                                           alpha=(0.9, 0.8, 0.7), beta=(0.9, 0.8, 0.7),
                                                           pairs_per_expert=300, same_cluster=same_cluster, seed=seed)
        data = PairwiseConstraints.from_frames(items, constraints)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            est = NoisyExperts(n_clusters=2, seed=seed, method="laplace", draws=1000).fit(data)
        post = est.idata_.posterior
        hit = truth_covered(post["W"].values.reshape(-1, *truth.W.shape), post["b"].values.reshape(-1, truth.b.size),
                            truth, ci=0.9)
        print(f"  {same_cluster} seed {seed}: covered {hit.astype(int).tolist()}", flush=True)
        covered += list(hit)
    return covered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=12)
    parser.add_argument("--modes", default="pair,item")
    args = parser.parse_args()
    for mode in args.modes.split(","):
        start = time.perf_counter()
        covered = coverage(mode, args.reps)
        low, high = binom.ppf([0.005, 0.995], len(covered), 0.9)
        print(f"{mode}: {sum(covered)} of {len(covered)} covered ({np.mean(covered):.2f}); 99% range of "
              f"Binomial({len(covered)}, 0.9): {low:.0f}..{high:.0f}; {time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
