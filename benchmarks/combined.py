"""The combined model on real features with supervision drawn from the true labels (issue 41's study, a first
version).

Data: scikit-learn's breast_cancer (2 classes, 30 features), wine (3, 13) and digits (10 classes; its 64
pixels reduced to 16 principal components, fitted on the training items), standardized; each split puts 30%
of the items aside as the test set. On the training items the supervision is drawn from the true labels:
`--labels` hand labels; three annotators of accuracy 0.8, 0.7, 0.6 (errors spread evenly over the other
classes) each voting on 30% of the items and abstaining on the rest; two experts of accuracy 0.9 and 0.75
rating 150 random pairs each; 10 bags of 10 items with their exact class counts; for the binary task 10 groups
of 10 items with a noisy average (logit of the group's class share + N(0, 1/sqrt(10))).

Arms, in the same run and on the same supervision:
* lr_labels: scikit-learn's logistic regression (C = 1) on the hand labels;
* majority_lr: majority vote of the annotators (ties to the first class) on the items with a vote, then the
  logistic regression on those;
* combined_<source>: the combined model with that source alone (pairs alone: classes matched to the truth by
  the Hungarian method on the test items, which flatters it);
* combined_all: every source at once.
Each combined arm is a MAP (posterior mean class probabilities are not used: the MAP's softmax predicts).
Scores: test accuracy and log loss (probabilities clipped at 1e-6).

    python benchmarks/combined.py --splits 3

Writes benchmarks/out/combined.csv and prints the mean of each arm per data set.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment

DATASETS = ("breast_cancer", "wine", "digits")


def load(name: str):
    from sklearn import datasets

    bunch = getattr(datasets, f"load_{name}")()
    return bunch.data.astype(float), bunch.target.astype(int)


def supervision(z: np.ndarray, n_classes: int, rng, n_labels: int) -> dict:
    from bayes_wsc.models.combined.simulate import _confusion, supervision_tables

    confusions = [_confusion(a, n_classes) for a in (0.8, 0.7, 0.6)]
    return supervision_tables(z, None, [f"c{c}" for c in range(n_classes)], rng, ids=[f"i{j}" for j in range(z.size)],
                              n_labels=n_labels, accuracy=(0.8, 0.7, 0.6), vote_rate=0.3, alpha=(0.9, 0.75),
                              beta=(0.9, 0.75), pairs_per_expert=150, n_bags=10, bag_size=10, n_groups=0,
                              confusions=confusions)


def group_averages(z, x_train, rng, n_groups=10, size=10, wh=10.0):
    """Groups of items with a noisy logit of their true class-1 share (binary tasks)."""
    order = rng.permutation(z.size)
    group = np.full(z.size, None, dtype=object)
    he = []
    for g in range(n_groups):
        members = order[g * size:(g + 1) * size]
        group[members] = f"g{g}"
        share = np.clip(z[members].mean(), 0.5 / size, 1 - 0.5 / size)
        he.append(np.log(share / (1 - share)) + rng.normal(0, 1 / np.sqrt(wh)))
    return group, pd.DataFrame({"group": [f"g{g}" for g in range(n_groups)], "he": he})


def scores(probs: np.ndarray, truth: np.ndarray, permute: bool = False) -> tuple[float, float]:
    if permute:  # pairs alone name no class: match them to the truth (optimistic)
        cost = -np.array([[probs[truth == t, c].sum() for c in range(probs.shape[1])] for t in range(probs.shape[1])])
        rows, cols = linear_sum_assignment(cost)
        probs = probs[:, cols[np.argsort(rows)]]
    clipped = np.clip(probs, 1e-6, 1)
    clipped /= clipped.sum(axis=1, keepdims=True)
    return float((probs.argmax(axis=1) == truth).mean()), float(-np.log(clipped[np.arange(truth.size), truth]).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--labels", type=int, default=20)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--out", default=str(Path(__file__).parent / "out" / "combined.csv"))
    args = parser.parse_args()
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.combined.data import CombinedSupervision
    from bayes_wsc.models.combined.model import CombinedClassifier

    rows = []
    for name in args.datasets.split(","):
        x_all, y_all = load(name)
        k = int(y_all.max() + 1)
        for split in range(args.splits):
            rng = np.random.default_rng([split, 41])
            x_train, x_test, y_train, y_test = train_test_split(x_all, y_all, test_size=0.3, random_state=split,
                                                                stratify=y_all)
            scaler = StandardScaler().fit(x_train)
            x_train, x_test = scaler.transform(x_train), scaler.transform(x_test)
            if name == "digits":
                pca = PCA(16, random_state=0).fit(x_train)
                x_train, x_test = pca.transform(x_train), pca.transform(x_test)
            tables = supervision(y_train, k, rng, args.labels)
            columns = [f"f{d}" for d in range(x_train.shape[1])]
            items = pd.DataFrame(x_train, columns=columns)
            items.insert(0, "id", [f"i{j}" for j in range(y_train.size)])
            items = pd.concat([items, tables["item_columns"]], axis=1)
            groups = None
            if k == 2:
                items["group"], groups = group_averages(y_train, x_train, rng)
            test = pd.DataFrame(x_test, columns=columns)
            classes = [f"c{c}" for c in range(k)]

            def record(arm, probs, seconds, permute=False):
                accuracy, log_loss = scores(probs, y_test, permute)
                rows.append({"dataset": name, "split": split, "arm": arm, "accuracy": accuracy, "log_loss": log_loss,
                             "seconds": seconds})
                print(f"{name} {split} {arm}: accuracy {accuracy:.3f} log loss {log_loss:.3f} ({seconds:.0f} s)",
                      flush=True)
                pd.DataFrame(rows).to_csv(args.out, index=False)

            labelled = items["label"].notna().to_numpy()
            start = time.time()
            lr = LogisticRegression(C=1.0, max_iter=5000).fit(x_train[labelled], items["label"][labelled])
            probs = np.zeros((y_test.size, k))
            probs[:, [classes.index(c) for c in lr.classes_]] = lr.predict_proba(x_test)
            record("lr_labels", probs, time.time() - start)
            votes = tables["votes"].dropna(subset=["vote"])
            majority = votes.groupby("item")["vote"].agg(lambda v: v.value_counts().sort_index().idxmax())
            rows_of = pd.Index(items["id"]).get_indexer(majority.index)
            start = time.time()
            lr = LogisticRegression(C=1.0, max_iter=5000).fit(x_train[rows_of], majority.to_numpy())
            probs = np.zeros((y_test.size, k))
            probs[:, [classes.index(c) for c in lr.classes_]] = lr.predict_proba(x_test)
            record("majority_lr", probs, time.time() - start)
            arms = {"labels": {}, "votes": {"votes": tables["votes"]}, "pairs": {"pairs": tables["pairs"]},
                    "bags": {"bags": tables["bags"]}}
            if groups is not None:
                arms["groups"] = {"groups": groups}
            arms["all"] = {"votes": tables["votes"], "pairs": tables["pairs"], "bags": tables["bags"],
                           **({"groups": groups} if groups is not None else {})}
            for arm, given in arms.items():
                frame = items.copy()
                if arm not in ("labels", "all"):
                    frame["label"] = None
                if "bags" not in given:
                    frame = frame.drop(columns="bag")
                if "groups" not in given and "group" in frame:
                    frame = frame.drop(columns="group")
                data = CombinedSupervision.from_frames(frame, classes=classes, **given)
                start = time.time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", FitWarning)
                    est = CombinedClassifier(progressbar=False, checks=False, restarts=2).fit(data)
                probs = est.predict(test)[[f"prob_{c}" for c in classes]].to_numpy()
                record(f"combined_{arm}", probs, time.time() - start, permute=arm == "pairs")
    table = pd.DataFrame(rows).groupby(["dataset", "arm"])[["accuracy", "log_loss", "seconds"]].mean()
    print(table.round(3).to_string())


if __name__ == "__main__":
    main()
