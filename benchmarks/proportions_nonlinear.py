"""Does the label-proportions classifier want a non-linear emission? (issue 42: DLLP's MLP led the linear
logistic emission at bags of 2 on digits, 0.936 against 0.897.)

The Sec. 4 protocol of `proportions_sec4.py` (the same splits and random groups for a given --seed), with
the package's default fit (logistic emission, exact counts, MAP, 4 starts; fit-time checks off) on two sets of
features, beside llp-learn's DLLP and EM-LR:

* bayes/linear: `ProportionsClassifier(checks=False)` on the features;
* bayes/rff<D>: `ProportionsClassifier(feature_map="rff", n_basis=D, checks=False)`: the softmax on D random
  Fourier features of the standardized features (`models.proportions.fourier_basis`: a fixed random basis,
  Gaussian kernel of width the median distance between training items, each basis function standardized),
  the package's prior (Normal(0, 1) on the weights), the same bag likelihood;
* llp-learn/dllp, llp-learn/em-lr: as `proportions_sec4.llp_learn_predict` runs them.

The two bayes fits are compared on the same units, every training group's log P(m_i | X_i), by cross-validation
over the groups: the MAP refitted without each of 5 folds of the groups (`held_out_predictions`, the fit's own
starts, no recompilation), each held-out group's counts scored by the Poisson-binomial probability under its
refit (`models.combined.model.count_logp`). PSIS-LOO on Laplace draws was tried first and is unreliable here
(digits in 51 groups: Pareto k above 0.7 for 12 of 51 groups with the linear features, 51 of 51 with 256
Fourier features). Columns: held-out accuracy, seconds of the fit, elpd_cv and its se, and for bayes/rff<D>
the difference elpd_cv(rff) - elpd_cv(linear) over the same groups with its standard error (sqrt(I) sd of the
per-group differences).

    nice -n 10 python benchmarks/proportions_nonlinear.py --datasets digits --sigmas 2,32 --folds 3 --seed 91733

Rows are appended to benchmarks/out/proportions_nonlinear.csv (--out) as each finishes; a rerun continues.
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
from output_paths import OUT  # noqa: E402
from proportions_sec4 import llp_learn_predict, scaled_dataset  # noqa: E402

COLUMNS = ["dataset", "sigma", "fold", "method", "accuracy", "seconds", "elpd_cv", "elpd_cv_se", "elpd_diff",
           "elpd_diff_se", "cv_seconds", "warnings"]
#: folds of the groups for the cross-validated elpd
CV_FOLDS = 5


def map_fit(x_train, groups, proportions, counts, x_test, y_test, seed: int, **settings) -> tuple[dict, np.ndarray]:
    """The default MAP fit (fit-time checks off), its held-out accuracy, and each group's log P(m_i | X_i)
    under the MAP refitted without the group's fold (`held_out_predictions`, folds of `held_out_folds`)."""
    from bayes_wsc.data.proportions import LabelProportions
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.combined.model import count_logp
    from bayes_wsc.models.proportions import ProportionsClassifier
    from bayes_wsc.models.proportions.checks import held_out_folds

    data = LabelProportions.from_arrays(x_train, groups, proportions, counts=counts)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FitWarning)
        est = ProportionsClassifier(checks=False, progressbar=False, seed=seed, **settings).fit(data)
    predicted = est.class_probabilities((x_test - data.center) / data.scale)["mean"].argmax(axis=1)
    t0 = time.perf_counter()
    folds = held_out_folds(np.arange(data.n_groups), CV_FOLDS, seed)
    probs, _, _ = est.held_out_predictions(data, folds)
    with np.errstate(divide="ignore"):
        log_probs = np.log(probs)
    pointwise = np.array([count_logp(log_probs[None, data.item_group == g], data.counts[g])[0]
                          for g in range(data.n_groups)])
    row = {"accuracy": float(np.mean(predicted == y_test)), "elpd_cv": round(float(pointwise.sum()), 2),
           "elpd_cv_se": round(float(np.sqrt(pointwise.size) * pointwise.std(ddof=1)), 2),
           "cv_seconds": round(time.perf_counter() - t0, 1),
           "warnings": " | ".join(str(w.message)[:80] for w in caught if issubclass(w.category, FitWarning))}
    return row, pointwise


def run_fold(name, x, labels, sigma, fold, train, test, done, out_csv, seed, args):
    from bayes_wsc.simulate.proportions import class_counts, random_groups

    rng = np.random.default_rng([seed, sigma, fold])  # the groups of proportions_sec4.py's run_fold
    groups = random_groups(train.size, sigma, rng)
    counts = class_counts(labels[train], groups, int(labels.max()) + 1)
    proportions = counts / counts.sum(axis=1, keepdims=True)
    x_train, x_test, y_test = x[train], x[test], labels[test]

    def record(method, seconds, **extra):
        row = {"dataset": name, "sigma": sigma, "fold": fold, "method": method, "seconds": round(seconds, 2), **extra}
        pd.DataFrame([row], columns=COLUMNS).to_csv(out_csv, mode="a", header=not out_csv.exists(), index=False)
        done.add((name, sigma, fold, method))
        print(f"{name} sigma={sigma} fold={fold} {method}: {row.get('accuracy', float('nan')):.3f} "
              f"({seconds:.1f} s) elpd {row.get('elpd_cv', '')} diff {row.get('elpd_diff', '')} "
              f"+- {row.get('elpd_diff_se', '')}", flush=True)

    linear_pointwise = None
    for method in args.methods.split(","):
        label = f"bayes/rff{args.basis}" if method == "rff" else (
            "bayes/linear" if method == "linear" else f"llp-learn/{method}")
        if (name, sigma, fold, label) in done:
            continue
        t0 = time.perf_counter()
        if method in ("linear", "rff"):
            fit_seed = int(np.random.default_rng([seed, sigma, fold, 3]).integers(2**31))
            settings = {"feature_map": "rff", "n_basis": args.basis} if method == "rff" else {}
            row, pointwise = map_fit(x_train, groups, proportions, counts, x_test, y_test, fit_seed, **settings)
            if method == "linear":
                linear_pointwise = pointwise
            elif linear_pointwise is not None:
                diff = pointwise - linear_pointwise
                row.update(elpd_diff=round(float(diff.sum()), 2),
                           elpd_diff_se=round(float(np.sqrt(diff.size) * diff.std(ddof=1)), 2))
            record(label, time.perf_counter() - t0, **row)
        else:
            own_seed = int(np.random.default_rng([seed, sigma, fold, 7 + ("em-lr", "alter-svm", "dllp").index(method)])
                           .integers(2**31))
            predicted = llp_learn_predict(method, x_train, groups, proportions, x_test, seed=own_seed)
            record(label, time.perf_counter() - t0, accuracy=float(np.mean(predicted == y_test)))


def main(argv=None) -> int:
    from sklearn.model_selection import StratifiedKFold

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="digits")
    parser.add_argument("--sigmas", default="2,32")
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=91733)
    parser.add_argument("--basis", type=int, default=256, help="random Fourier features (D)")
    parser.add_argument("--methods", default="linear,rff,dllp,em-lr",
                        help="linear (the bayes fit linear in the features; run it before rff for the elpd "
                             "difference), rff, and llp-learn's dllp, em-lr")
    parser.add_argument("--out", default=str(OUT / "proportions_nonlinear.csv"))
    args = parser.parse_args(argv)
    print("command: python benchmarks/proportions_nonlinear.py "
          + " ".join(map(shlex.quote, sys.argv[1:] if argv is None else argv)), flush=True)
    out_csv = Path(args.out)
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if out_csv.exists():
        previous = pd.read_csv(out_csv)
        done = set(zip(previous["dataset"], previous["sigma"], previous["fold"], previous["method"]))
    for name in args.datasets.split(","):
        x, labels = scaled_dataset(name)
        folds = list(StratifiedKFold(10, shuffle=True, random_state=args.seed).split(x, labels))
        for sigma in [int(s) for s in args.sigmas.split(",")]:
            for fold in range(args.folds):
                train, test = folds[fold]
                run_fold(name, x, labels, sigma, fold, train, test, done, out_csv, args.seed, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
