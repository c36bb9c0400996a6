"""The group-size experiment of Stolpe & Morik (2011), Sec. 4, for the label-proportions model.

Data that ship with scikit-learn: breast_cancer (569 items, 30 features, 2 classes) and wine (178,
13, 3 classes), every feature scaled to [0, 1] as in the paper. 10-fold cross-validation; in each
fold the training items are split uniformly at random into groups of sigma items (the last one
smaller), each group keeps only its label proportions, and every method is scored by its accuracy
on the held-out fold's individual labels:

* bayes/<emission>/<bag>: `ProportionsClassifier` MAP with the gaussian, categorical and logistic
  emissions, each with the independent and the exact-counts bag likelihood. The categorical
  emission sees the first two principal components of the training features, each cut at its
  training quintiles, crossed into 25 bins (a label-free discretization).
* llp/exhaustive, llp/greedy: LLP (Alg. 1) with the paper's settings (maxgen = 10, psize = 25,
  mutvar = 1.0, crossprob = 0.3, tournsize = 0.25), k chosen from [2, 12] by Err_Pi on the training
  groups (the exhaustive labeling tries the k with l^k <= 3^8); llp-best-k/<labeling>: the k whose
  test accuracy was highest, as the paper's Fig. 2 reports its best models (optimistic: chosen on the test labels).
* direct: logistic regression on soft labels (the group's proportions); oracle: logistic regression on
  the true training labels.

    nice -n 10 python benchmarks/proportions_sec4.py --datasets breast_cancer,wine          # all, resumable
    nice -n 10 python benchmarks/proportions_sec4.py --methods bayes,baselines             # the fast ones first
    python benchmarks/proportions_sec4.py --report                                        # table and plot

Every finished (data set, sigma, fold, method) is appended to
benchmarks/out/proportions_sec4_<dataset>.csv (git-ignored) at once (rerunning continues where it
stopped; one process per data set can run side by side); --report reads them all and writes
benchmarks/results/proportions_sec4_summary.csv and benchmarks/out/proportions_sec4.png.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
from output_paths import OUT, RESULTS, require  # noqa: E402

SIGMAS = (2, 4, 8, 16, 32, 64, 128)
BAYES = [("gaussian", "independent"), ("gaussian", "exact-counts"), ("categorical", "independent"),
         ("categorical", "exact-counts"), ("logistic", "independent"), ("logistic", "exact-counts")]
FAMILIES = ("bayes", "llp", "baselines")
COLUMNS = ["dataset", "sigma", "fold", "method", "accuracy", "seconds", "k", "err_pi", "warnings"]


def scaled_dataset(name: str):
    from bayes_wsc.simulate.proportions import load_uci

    items, labels = load_uci(name)
    x = items.drop(columns=["id"]).to_numpy(dtype=float)
    low, high = x.min(axis=0), x.max(axis=0)
    return (x - low) / np.where(high > low, high - low, 1.0), labels


def pca_bins(x_train: np.ndarray, x_test: np.ndarray, components: int = 2, per_component: int = 5):
    """Bins of the first principal components of the training features, cut at training quantiles."""
    from sklearn.decomposition import PCA

    pca = PCA(components).fit(x_train)
    train, test = pca.transform(x_train), pca.transform(x_test)
    codes_train, codes_test = [], []
    for j in range(components):
        cuts = np.quantile(train[:, j], np.linspace(0, 1, per_component + 1)[1:-1])
        codes_train.append(np.searchsorted(cuts, train[:, j]))
        codes_test.append(np.searchsorted(cuts, test[:, j]))
    shape = (per_component,) * components
    return np.ravel_multi_index(codes_train, shape), np.ravel_multi_index(codes_test, shape), int(np.prod(shape))


def run_fold(name, x, labels, sigma, fold, train, test, done, out_csv, seed, families=FAMILIES):
    from bayes_wsc.baselines.proportions import K_RANGE, direct_classifier, fit_llp, oracle_classifier
    from bayes_wsc.data.proportions import LabelProportions
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.proportions import ProportionsClassifier
    from bayes_wsc.simulate.proportions import class_counts, random_groups

    n_classes = int(labels.max()) + 1
    rng = np.random.default_rng([seed, sigma, fold])
    groups = random_groups(train.size, sigma, rng)
    counts = class_counts(labels[train], groups, n_classes)
    proportions = counts / counts.sum(axis=1, keepdims=True)
    x_train, x_test, y_test = x[train], x[test], labels[test]

    def record(method, accuracy, seconds, **extra):
        row = {"dataset": name, "sigma": sigma, "fold": fold, "method": method, "accuracy": accuracy,
               "seconds": round(seconds, 3), **extra}
        pd.DataFrame([row], columns=COLUMNS).to_csv(out_csv, mode="a", header=not out_csv.exists(), index=False)
        done.add((name, sigma, fold, method))
        print(f"{name} sigma={sigma} fold={fold} {method}: {accuracy:.3f} ({seconds:.1f} s)", flush=True)

    numeric = LabelProportions.from_arrays(x_train, groups, proportions, counts=counts)
    bins_train, bins_test, n_bins = pca_bins(x_train, x_test)
    categorical = LabelProportions.from_bins(bins_train, groups, proportions, n_bins, counts=counts)
    for emission, bag in BAYES if "bayes" in families else ():
        method = f"bayes/{emission}/{bag}"
        if (name, sigma, fold, method) in done:
            continue
        data = categorical if emission == "categorical" else numeric
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FitWarning)
            est = ProportionsClassifier(emission=emission, bag_likelihood=bag, progressbar=False).fit(data)
        features = bins_test if emission == "categorical" else (x_test - numeric.center) / numeric.scale
        predicted = est.class_probabilities(features)["mean"].argmax(axis=1)
        record(method, float(np.mean(predicted == y_test)), time.perf_counter() - t0,
               warnings=sum(issubclass(w.category, FitWarning) for w in caught))
    for labeling in ("exhaustive", "greedy") if "llp" in families else ():
        method = f"llp/{labeling}"
        if (name, sigma, fold, method) in done:
            continue
        t0 = time.perf_counter()
        runs = []
        for k in K_RANGE:
            if labeling == "exhaustive" and n_classes**k > 3**8:
                continue
            model = fit_llp(x_train, groups, proportions, k=k, labeling=labeling, seed=int(rng.integers(2**31)))
            runs.append((model.err_pi, model.err_mse, k, float(np.mean(model.predict_codes(x_test) == y_test))))
        seconds = time.perf_counter() - t0
        chosen = min(runs)
        record(method, chosen[3], seconds, k=chosen[2], err_pi=chosen[0])
        best = max(runs, key=lambda r: r[3])
        record(f"llp-best-k/{labeling}", best[3], seconds, k=best[2], err_pi=best[0])
    for method in ("direct", "oracle") if "baselines" in families else ():
        if (name, sigma, fold, method) in done:
            continue
        t0 = time.perf_counter()
        model = (direct_classifier(x_train, groups, proportions) if method == "direct"
                 else oracle_classifier(x_train, labels[train]))
        record(method, float(np.mean(model.predict(x_test) == y_test)), time.perf_counter() - t0)


def run(args) -> None:
    from sklearn.model_selection import StratifiedKFold

    Path(args.out).mkdir(parents=True, exist_ok=True)  # before any fold's work, not after it
    for name in args.datasets.split(","):
        out_csv = Path(args.out) / f"proportions_sec4_{name}.csv"
        done = set()
        if out_csv.exists():
            previous = pd.read_csv(out_csv)
            done = set(zip(previous["dataset"], previous["sigma"], previous["fold"], previous["method"]))
        x, labels = scaled_dataset(name)
        folds = list(StratifiedKFold(10, shuffle=True, random_state=args.seed).split(x, labels))
        for sigma in [int(s) for s in args.sigmas.split(",")]:
            for fold in range(args.folds):
                train, test = folds[fold]
                run_fold(name, x, labels, sigma, fold, train, test, done, out_csv, args.seed,
                         families=args.methods.split(","))


def report(args) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    parts = [p for p in sorted(Path(args.out).glob("proportions_sec4_*.csv")) if not p.name.endswith("_summary.csv")]
    if not parts:
        require(Path(args.out) / "proportions_sec4_<dataset>.csv",
                "python benchmarks/proportions_sec4.py --datasets breast_cancer,wine")
    table = pd.concat([pd.read_csv(p) for p in parts])
    summary = (table.groupby(["dataset", "method", "sigma"])["accuracy"]
               .agg(mean="mean", se=lambda a: a.std(ddof=1) / np.sqrt(len(a)), folds="count").reset_index())
    summary_csv = RESULTS / "proportions_sec4_summary.csv" if Path(args.out) == OUT else Path(args.out) / "summary.csv"
    summary_csv.parent.mkdir(exist_ok=True)
    summary.to_csv(summary_csv, index=False)
    datasets = list(dict.fromkeys(table["dataset"]))
    fig = Figure(figsize=(6.5 * len(datasets), 4.8), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(datasets), squeeze=False)[0]
    styles = {"bayes": "-", "llp": "--", "llp-best-k": ":", "direct": "-.", "oracle": "-"}
    for ax, name in zip(axes, datasets):
        part = summary[summary["dataset"] == name]
        for method in sorted(set(part["method"])):
            rows = part[part["method"] == method].sort_values("sigma")
            family = method.split("/")[0]
            ax.errorbar(rows["sigma"], rows["mean"], yerr=rows["se"], label=method, linestyle=styles.get(family, "-"),
                        marker="o", markersize=3, capsize=2, color="black" if method == "oracle" else None)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("group size sigma")
        ax.set_ylabel("held-out accuracy (mean over folds, +- 1 SE)")
        ax.set_title(name)
        ax.legend(fontsize=7, ncol=2)
    fig.savefig(Path(args.out) / "proportions_sec4.png", dpi=110)
    wide = summary.pivot_table(index=["dataset", "method"], columns="sigma", values="mean").round(3)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(wide.to_string())
    print("wrote", summary_csv, "and", Path(args.out) / "proportions_sec4.png")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="breast_cancer,wine")
    parser.add_argument("--sigmas", default=",".join(map(str, SIGMAS)))
    parser.add_argument("--folds", type=int, default=10, help="folds to run of the 10 (fewer for a pilot)")
    parser.add_argument("--seed", type=int, default=2011)
    parser.add_argument("--methods", default=",".join(FAMILIES),
                        help="families to run: bayes, llp, baselines (direct and oracle); the groups and LLP's "
                             "seeds do not depend on which, so a later run fills in the rest")
    parser.add_argument("--out", default=str(OUT), help="folder of the per-data-set CSV files")
    parser.add_argument("--report", action="store_true", help="summarize the CSV into a table and a plot")
    args = parser.parse_args(argv)
    print("command: python benchmarks/proportions_sec4.py " + " ".join(map(shlex.quote, sys.argv[1:] if argv is None else argv)))
    if args.report:
        report(args)
    else:
        run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
