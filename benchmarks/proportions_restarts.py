"""How many MAP restarts the label-proportions landscape needs with few groups (issue 30).

The Sec. 4 protocol of seed 001 on breast_cancer, wine and digits (>= 5 against < 5), features scaled to
[0, 1], shuffled 10-fold splits (splits 10-19 from a second shuffle), the training items in random groups of
`sigma` (`proportions_sec4.run_fold`'s groups: the same seeds). Per split, the default model's MAP from the
soft-label start and from `--random` random starts (the logistic weights and intercepts drawn from their
priors, `ProportionsClassifier(restarts=...)`'s own draws); every optimum's log density and held-out
accuracy. From these: for R = 1, 2, 4, ... restarts (the first R starts), the accuracy of the best of them by
log density, and how often it is more than 0.05 below the best optimum found from any start; and the
landscape: how often a poor mode (0.1 below the best accuracy) comes within 3 nats of the best, against the
groups' chi-square (`models.proportions.between_group_chi_square`, which the names warning read until issue 42 removed it).

    nice -n 10 python benchmarks/proportions_restarts.py --datasets breast_cancer --sigma 128 --splits 20 --random 15

Per-start rows go to benchmarks/out/proportions_restarts.csv; the summary to
benchmarks/results/proportions_restarts_summary.csv.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def run(args) -> pd.DataFrame:
    from sklearn.model_selection import StratifiedKFold

    from bayes_wsc.data.proportions import LabelProportions
    from bayes_wsc.models.proportions import ProportionsClassifier, between_group_chi_square
    from bayes_wsc.simulate.proportions import class_counts, random_groups
    from proportions_sec4 import scaled_dataset

    rows = []
    for name in args.datasets.split(","):
        x, labels = scaled_dataset(name)
        n_classes = int(labels.max()) + 1
        folds = [fold for repeat in range(-(-args.splits // 10))
                 for fold in StratifiedKFold(10, shuffle=True, random_state=args.seed + repeat).split(x, labels)]
        for split in range(args.splits):
            train, test = folds[split]
            rng = np.random.default_rng([args.seed, args.sigma, split])
            groups = random_groups(train.size, args.sigma, rng)
            counts = class_counts(labels[train], groups, n_classes)
            data = LabelProportions.from_arrays(x[train], groups, counts / counts.sum(axis=1, keepdims=True),
                                                counts=counts)
            x_test = (x[test] - data.center) / data.scale
            chi_square = between_group_chi_square(data)
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = ProportionsClassifier(restarts=1 + args.random, checks=False, progressbar=False).fit(data)
            seconds = time.perf_counter() - t0
            info = est._mode.info
            for r, optimum in enumerate(est._mode.optima):
                logits = x_test @ optimum["W_raw"] + optimum["b_raw"]
                predicted = logits.argmax(axis=1)
                rows.append({"dataset": name, "sigma": args.sigma, "split": split, "start": r,
                             "log_density": info["restart_log_densities"][r],
                             "accuracy": float(np.mean(predicted == labels[test])),
                             "predicted_classes": int(np.unique(predicted).size),
                             "majority_share": float(np.bincount(labels[test]).max() / test.size),
                             "chi_square": round(chi_square, 3),
                             "fit_seconds": round(seconds, 2)})
            part = pd.DataFrame(rows[-len(est._mode.optima):])
            print(f"{name} split {split}: first start {part['accuracy'].iloc[0]:.3f}, best by density "
                  f"{part.loc[part['log_density'].idxmax(), 'accuracy']:.3f}, best {part['accuracy'].max():.3f} "
                  f"({seconds:.1f} s)", flush=True)
    return pd.DataFrame(rows)


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    out = []
    for (name, sigma), part in table.groupby(["dataset", "sigma"]):
        n_starts = int(part["start"].max()) + 1
        r = 1
        while r <= n_starts:
            picked = []
            for _, split in part.groupby("split"):
                first = split[split["start"] < r]
                chosen = first.loc[first["log_density"].idxmax()]
                picked.append((chosen["accuracy"], split["accuracy"].max(), chosen["predicted_classes"],
                               chosen["majority_share"]))
            picked = np.array(picked, dtype=float)
            out.append({"dataset": name, "sigma": sigma, "starts": r, "splits": len(picked),
                        "mean_accuracy": round(picked[:, 0].mean(), 4), "sd_accuracy": round(picked[:, 0].std(ddof=1), 4),
                        "min_accuracy": round(picked[:, 0].min(), 4),
                        "below_best_by_0.05": int((picked[:, 0] < picked[:, 1] - 0.05).sum()),
                        "one_class_predicted": int((picked[:, 2] < 2).sum()),
                        "at_or_below_majority": int((picked[:, 0] <= picked[:, 3] + 1e-9).sum())})
            r = r * 2 if r * 2 <= n_starts or r == n_starts else n_starts
    return pd.DataFrame(out)


def landscape(table: pd.DataFrame) -> pd.DataFrame:
    """Per data set and sigma: the groups' chi-square (`between_group_chi_square`) over the splits, and in how
    many splits some start's optimum more than 0.1 below the best held-out accuracy came within 3 nats of the
    best log density (a wrong mode nearly as probable as the right one)."""
    out = []
    for (name, sigma), part in table.groupby(["dataset", "sigma"]):
        gaps, chi = [], []
        for _, split in part.groupby("split"):
            poor = split[split["accuracy"] < split["accuracy"].max() - 0.1]
            gaps.append(split["log_density"].max() - poor["log_density"].max() if len(poor) else np.inf)
            chi.append(split["chi_square"].iloc[0] if "chi_square" in split else np.nan)
        gaps, chi = np.array(gaps), np.array(chi, dtype=float)
        if np.isnan(chi).all():
            chi = np.full(1, np.nan)
        known = chi[np.isfinite(chi)]  # rows written before the chi-square was kept have none
        stats = (np.min(known), np.median(known), np.max(known)) if known.size else (np.nan,) * 3
        out.append({"dataset": name, "sigma": sigma, "splits": gaps.size, "chi_square_min": round(stats[0], 2),
                    "chi_square_median": round(stats[1], 2), "chi_square_max": round(stats[2], 2),
                    "splits_with_a_poor_mode": int(np.isfinite(gaps).sum()),
                    "poor_mode_within_3_nats": int((gaps < 3).sum())})
    return pd.DataFrame(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="breast_cancer")
    parser.add_argument("--sigma", type=int, default=128)
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--random", type=int, default=15, help="random starts beside the soft-label one")
    parser.add_argument("--seed", type=int, default=2011)
    parser.add_argument("--summary-only", action="store_true", help="summarize the per-start rows already run")
    args = parser.parse_args(argv)
    print("command: python benchmarks/proportions_restarts.py " + " ".join(map(shlex.quote, sys.argv[1:] if argv is None else argv)))
    raw = HERE / "out" / "proportions_restarts.csv"
    if not args.summary_only:
        raw.parent.mkdir(parents=True, exist_ok=True)
        table = run(args)
        if raw.exists():
            old = pd.read_csv(raw)
            keep = ~(old["dataset"].isin(table["dataset"].unique()) & (old["sigma"] == args.sigma))
            table = pd.concat([old[keep], table])
        table.to_csv(raw, index=False)
    table = pd.read_csv(raw)
    summary = summarize(table)
    summary.to_csv(HERE / "results" / "proportions_restarts_summary.csv", index=False)
    print(summary.to_string(index=False))
    modes = landscape(table)
    modes.to_csv(HERE / "results" / "proportions_restarts_landscape.csv", index=False)
    print(modes.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
