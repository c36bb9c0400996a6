"""Power of the label-proportions model's targeted check, `group_misfit`, against planted wrong counts.

Each simulation draws data from the model (`simulate_proportions`: 60 groups of 6 items, 3 classes,
2 features or 6 bins), fits the exact-counts MAP twice, on the data as drawn and with three groups'
counts wrong (the three groups with the largest class, that class's count moved on to the next class,
as in `tests/test_model_proportions.py::test_group_misfit_flags_wrong_proportions`), and records whether
`group_misfit` flagged and whether the group it names is one of the planted ones.

    python benchmarks/planted_misfit.py --sims 10          # out/planted_misfit.csv (resumable)
    python benchmarks/planted_misfit.py --summarize        # results/planted_misfit_summary.csv

Groups formed by class (issue 42: `group_misfit` flagged every fit of four groups with a skewed class mix whose
proportions were exact): `--class-formed SEEDS` takes two classes from digits (>= 5 against < 5, features
scaled to [0, 1]) and from a simulated logistic task (5 features, `simulate_proportions("logistic")`), draws
four groups of equal size holding 10, 30, 70 and 90% of class 1 from the items by their labels, and fits the
default `ProportionsClassifier` twice: on the exact proportions, and with the second group's counts swapped
for the third's (30% given as 70%). Seeds are new each run unless given (`--class-formed 3` draws three).

    nice -n 10 python benchmarks/planted_misfit.py --class-formed 3     # out/planted_misfit_class_formed.csv
"""

from __future__ import annotations

import argparse
import re
import sys
import time
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


CLASS_FORMED_CSV = OUT / "planted_misfit_class_formed.csv"
#: the share of class 1 in each of the four groups formed by class
CLASS_FORMED_MIX = (0.1, 0.3, 0.7, 0.9)


def class_formed(task: str, seed: int) -> list[dict]:
    from bayes_wsc.data.proportions import LabelProportions
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.proportions import ProportionsClassifier
    from bayes_wsc.simulate.proportions import class_counts, class_formed_groups, simulate_proportions
    from proportions_sec4 import scaled_dataset

    if task == "digits":
        x, labels = scaled_dataset("digits")
    else:
        pool, truth = simulate_proportions("logistic", n_groups=1, group_size=2000, n_classes=2, n_features=5,
                                           seed=seed)
        x, labels = pool.x, truth.z
    rng = np.random.default_rng(seed)
    size = min(np.bincount(labels, minlength=2)) // 2  # the mixes sum to two groups' worth of each class
    items, groups = class_formed_groups(labels, CLASS_FORMED_MIX, size, rng)
    counts = class_counts(labels[items], groups, 2)
    planted = counts.copy()
    planted[1] = counts[2]
    rows = []
    for case, given in (("exact", counts), ("group 1 given group 2's counts", planted)):
        data = LabelProportions.from_arrays(x[items], groups, given / given.sum(axis=1, keepdims=True), counts=given)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            est = ProportionsClassifier(progressbar=False, seed=seed).fit(data)
        seconds = time.perf_counter() - start
        row = est.checks_.set_index("check").loc["group_misfit"]
        kappa = re.search(r"kappa = ([0-9.]+)", row["message"])
        predicted = est.class_probabilities(data.x)["mean"].argmax(axis=1)
        named = re.search(r"group (g\d+)", row["message"])
        rows.append({"task": task, "seed": seed, "case": case, "flagged": bool(row["flagged"]),
                     "p_value": float(row["p_value"]), "names_group": named.group(1) if named else "",
                     "kappa": float(kappa.group(1)) if kappa else 0.0,
                     "train_accuracy": float(np.mean(predicted == labels[items])),
                     "seconds": round(seconds, 1)})
    return rows


def run_class_formed(n_seeds: int) -> None:
    seeds = np.random.default_rng().integers(10_000, 2**31, n_seeds)
    CLASS_FORMED_CSV.parent.mkdir(parents=True, exist_ok=True)
    for seed in seeds:
        for task in ("digits", "simulated"):
            frame = pd.DataFrame(class_formed(task, int(seed)))
            frame.to_csv(CLASS_FORMED_CSV, mode="a", header=not CLASS_FORMED_CSV.exists(), index=False)
            print(frame.to_string(index=False, header=False), flush=True)
    summarize_class_formed()


def summarize_class_formed() -> pd.DataFrame:
    """Every class-formed fit so far (out/planted_misfit_class_formed.csv) into results/planted_misfit_class_formed.csv."""
    table = pd.read_csv(require(CLASS_FORMED_CSV, "python benchmarks/planted_misfit.py --class-formed 2"))
    out = (table.groupby(["task", "case"]).agg(fits=("seed", "count"), flagged=("flagged", "sum"),
                                               median_p=("p_value", "median"), median_kappa=("kappa", "median"),
                                               accuracy=("train_accuracy", "mean")).reset_index())
    print(out.to_string(index=False))
    RESULTS.mkdir(exist_ok=True)
    out.to_csv(RESULTS / "planted_misfit_class_formed.csv", index=False, float_format="%.4g")
    return out


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
    parser.add_argument("--class-formed", type=int, default=0, metavar="SEEDS",
                        help="the four groups formed by class, on this many new seeds (see above)")
    args = parser.parse_args()
    if args.class_formed:
        run_class_formed(args.class_formed)
        return
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
