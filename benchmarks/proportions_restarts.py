"""How many MAP restarts the label-proportions landscape needs with few groups (issue 30).

The Sec. 4 protocol of seed 001 on breast_cancer, wine and digits (>= 5 against < 5), features scaled to
[0, 1], shuffled 10-fold splits (splits 10-19 from a second shuffle), the training items in random groups of
`sigma` (`proportions_sec4.run_fold`'s groups: the same seeds). Per split, the default model's MAP from the
soft-label start and from `--random` random starts (the logistic weights and intercepts drawn from their
priors, `ProportionsClassifier(restarts=...)`'s own draws); every optimum's log density and held-out
accuracy. From these: for R = 1, 2, 4, ... restarts (the first R starts), the accuracy of the best of them by
log density, and how often it is more than 0.05 below the best optimum found from any start.

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
    from bayes_wsc.models.proportions import ProportionsClassifier
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
                             "fit_seconds": round(seconds, 2)})
            part = pd.DataFrame(rows[-len(est._mode.optima):])
            print(f"{name} split {split}: first start {part['accuracy'].iloc[0]:.3f}, best by density "
                  f"{part.loc[part['log_density'].idxmax(), 'accuracy']:.3f}, best {part['accuracy'].max():.3f} "
                  f"({seconds:.1f} s)", flush=True)
    return pd.DataFrame(rows)


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    out = []
    n_starts = int(table["start"].max()) + 1
    for (name, sigma), part in table.groupby(["dataset", "sigma"]):
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
    summary = summarize(pd.read_csv(raw))
    summary.to_csv(HERE / "results" / "proportions_restarts_summary.csv", index=False)
    print(summary.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
