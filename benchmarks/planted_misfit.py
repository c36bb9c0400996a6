"""Power of the label-proportions model's targeted check, `group_misfit`, against planted wrong counts.

Each simulation draws data from the model (`simulate_proportions`: 60 groups of 6 items, 3 classes,
2 features or 6 bins), fits the exact-counts MAP twice, on the data as drawn and with three groups'
counts wrong (the three groups with the largest class, that class's count moved on to the next class,
as in `tests/test_model_proportions.py::test_group_misfit_flags_wrong_proportions`), and records whether
`group_misfit` flagged and whether the group it names is one of the planted ones.

    python benchmarks/planted_misfit.py --sims 10          # out/planted_misfit.csv (resumable)
    python benchmarks/planted_misfit.py --summarize        # results/planted_misfit_summary.csv
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
from output_paths import OUT, RESULTS, require  # noqa: E402

ROWS_CSV = OUT / "planted_misfit.csv"
EMISSIONS = ("gaussian", "logistic", "categorical")


def one(emission: str, seed: int) -> list[dict]:
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.proportions import ProportionsClassifier
    from bayes_wsc.simulate.proportions import simulate_proportions

    data, _ = simulate_proportions(emission, n_groups=60, group_size=6, n_classes=3, n_features=2, n_bins=6,
                                   seed=seed)
    counts = np.array(data.counts)
    wrong = np.argsort(-counts.max(axis=1), kind="stable")[:3]
    planted = counts.copy()
    planted[wrong] = np.roll(planted[wrong], 1, axis=1)
    rows = []
    for case, given in (("as drawn", counts), ("3 groups wrong", planted)):
        est = ProportionsClassifier(emission=emission, bag_likelihood="exact-counts")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            est.fit(data.with_proportions(given / given.sum(axis=1, keepdims=True), given))
        row = est.checks_.set_index("check").loc["group_misfit"]
        named = re.search(r"group (\S+) ", row["message"])
        rows.append({"emission": emission, "seed": seed, "case": case, "flagged": bool(row["flagged"]),
                     "p_value": float(row["p_value"]),
                     "names_a_planted_group": bool(named and named.group(1) in {str(data.group_ids[g]) for g in wrong})})
    return rows


def summarize() -> pd.DataFrame:
    table = pd.read_csv(require(ROWS_CSV, "python benchmarks/planted_misfit.py --sims 10"))
    out = (table.groupby(["emission", "case"])
           .agg(simulations=("seed", "count"), flagged=("flagged", "sum"), median_p=("p_value", "median"),
                named_planted=("names_a_planted_group", "sum")).reset_index())
    print(out.to_string(index=False))
    RESULTS.mkdir(exist_ok=True)
    out.to_csv(RESULTS / "planted_misfit_summary.csv", index=False)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sims", type=int, default=10)
    parser.add_argument("--emissions", default=",".join(EMISSIONS))
    parser.add_argument("--summarize", action="store_true")
    args = parser.parse_args()
    if args.summarize:
        summarize()
        return
    done = set()
    ROWS_CSV.parent.mkdir(parents=True, exist_ok=True)
    if ROWS_CSV.exists():
        done = set(zip(*pd.read_csv(ROWS_CSV)[["emission", "seed"]].to_numpy().T)) if len(pd.read_csv(ROWS_CSV)) else set()
    for seed in range(args.sims):
        for emission in args.emissions.split(","):
            if (emission, seed) in done:
                continue
            frame = pd.DataFrame(one(emission, seed))
            frame.to_csv(ROWS_CSV, mode="a", header=not ROWS_CSV.exists(), index=False)
            print(frame.to_string(index=False, header=False), flush=True)
    summarize()


if __name__ == "__main__":
    main()
