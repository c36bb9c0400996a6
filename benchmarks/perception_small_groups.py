"""How often the seeded mixture's small-groups warning fires (`PerceptionMixture.nuts_warnings`, said before NUTS).

The warning names the groups whose MAP share is under a quarter of an even one: NUTS then builds long trees
(benchmarks/RESULTS.md). This fits the MAP (the point NUTS starts from) of data whose own number of groups is
known, with that many groups (all is well: the warning should stay silent) and with more (the case the warning
is for), and records whether it fired and the MAP's smallest share:

* `simulate`'s study (`simulate_study`, 3 dominant groups), seeds 1..N, with --groups 3 and the default 5;
* the distractor study (`simulate_distractor_study`, 4 dominant groups), seeds 1..N, with 4 and 5 groups;
* the digits example (10 digits, more groups than 5), with the default 5 groups.

    python benchmarks/perception_small_groups.py [--replicates 6]

Writes benchmarks/out/perception_small_groups.csv and prints the firing counts per case.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
from output_paths import OUT  # noqa: E402

from bayes_wsc.data.seeded import SeedSets  # noqa: E402
from bayes_wsc.errors import FitWarning  # noqa: E402
from bayes_wsc.models.perception import PerceptionMixture  # noqa: E402
from bayes_wsc.models.perception.simulate import digits_example, simulate_distractor_study, simulate_study  # noqa: E402


def one(study, name: str, seed, true_groups: int, groups: int) -> dict:
    data = SeedSets.from_frames(study.items, study.seeds, study.perception)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        est = PerceptionMixture(groups=groups, method="map", seed=0, checks=False).fit(data)
    share = np.asarray(est.idata_.posterior["pi_group"]).reshape(-1)
    said = est.nuts_warnings({"pi_group": share})
    return {"data": name, "seed": seed, "true_groups": true_groups, "groups": groups, "fired": bool(said),
            "smallest_share": float(share.min()), "threshold": 0.25 / groups,
            "shares": " ".join(f"{v:.3f}" for v in np.sort(share)), "seconds": time.perf_counter() - started}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=6)
    args = parser.parse_args(argv)
    rows = []
    for seed in range(1, args.replicates + 1):
        study = simulate_study(seed=seed)
        for groups in (3, 5):
            rows.append(one(study, "simulate_study", seed, 3, groups))
            print(rows[-1], flush=True)
    for seed in range(1, max(2, args.replicates // 2) + 1):
        study = simulate_distractor_study(seed=seed)
        for groups in (4, 5):
            rows.append(one(study, "distractor", seed, 4, groups))
            print(rows[-1], flush=True)
    rows.append(one(digits_example(seed=0), "digits", 0, 10, 5))
    print(rows[-1], flush=True)
    frame = pd.DataFrame(rows)
    OUT.mkdir(exist_ok=True)
    frame.to_csv(OUT / "perception_small_groups.csv", index=False)
    print(frame.groupby(["data", "true_groups", "groups"])["fired"].agg(["sum", "count"]).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
