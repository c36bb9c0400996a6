"""What the exact-counts bag likelihood gains over the independent one, by group size, on data simulated
from the model (issue 14: "show by measurement how much it gains at each group size").

Each replicate simulates 480 training and 2000 test items from a gaussian emission (2 or 3 classes, 4
features, class means ~ N(0, 1): overlapping classes), groups of sigma items whose class shares vary
(Dirichlet(0.5)) and whose counts are the data; both bag likelihoods are fitted by MAP and scored by
held-out accuracy and by the error of the class means (standardized units), and so is the logistic
emission. The same replicate's data serve every method (paired differences).

    nice -n 10 python benchmarks/proportions_exact_gain.py --reps 20

Appends to benchmarks/out/proportions_exact_gain.csv (git-ignored); prints the mean paired gains with their
standard errors and writes benchmarks/results/proportions_exact_gain_summary.csv.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
from output_paths import OUT, RESULTS  # noqa: E402

SIGMAS = (2, 4, 8, 16, 32, 64)


def replicate(sigma: int, n_classes: int, rep: int) -> list[dict]:
    from bayes_wsc.data.proportions import LabelProportions
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.proportions import ProportionsClassifier

    rng = np.random.default_rng([sigma, n_classes, rep])
    n_train, n_test, n_features = 480, 2000, 4
    mean = rng.normal(0, 1.0, (n_classes, n_features))
    groups = np.arange(n_train) // sigma
    theta = rng.dirichlet(np.full(n_classes, 0.5), groups.max() + 1)
    z = (rng.random((n_train, 1)) > np.cumsum(theta[groups], axis=1)).sum(axis=1).clip(0, n_classes - 1)
    z_test = rng.integers(0, n_classes, n_test)
    x = mean[z] + rng.standard_normal((n_train, n_features))
    x_test = mean[z_test] + rng.standard_normal((n_test, n_features))
    counts = np.bincount(groups * n_classes + z, minlength=(groups.max() + 1) * n_classes).reshape(-1, n_classes)
    if (counts.sum(axis=0) == 0).any():
        return []
    data = LabelProportions.from_arrays(x, groups, counts / counts.sum(axis=1, keepdims=True), counts=counts,
                                        standardize=False)
    rows = []
    for emission, bag in (("gaussian", "independent"), ("gaussian", "exact-counts"), ("logistic", "independent"),
                          ("logistic", "exact-counts")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            est = ProportionsClassifier(emission=emission, bag_likelihood=bag).fit(data)
        prob = est.class_probabilities(x_test)["mean"]
        row = {"sigma": sigma, "classes": n_classes, "rep": rep, "method": f"{emission}/{bag}",
               "accuracy": float(np.mean(prob.argmax(axis=1) == z_test))}
        if emission == "gaussian":
            row["mean_error"] = float(np.abs(est.idata_.posterior["mean"].values[0, 0] - mean).mean())
        rows.append(row)
    # the Bayes rule with the true parameters (equal class shares in the test set)
    log_density = -0.5 * ((x_test[:, None, :] - mean[None]) ** 2).sum(axis=2)
    rows.append({"sigma": sigma, "classes": n_classes, "rep": rep, "method": "true parameters",
                 "accuracy": float(np.mean(log_density.argmax(axis=1) == z_test))})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--classes", default="2,3")
    parser.add_argument("--out", default=str(OUT / "proportions_exact_gain.csv"))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(exist_ok=True)
    done = set()
    if out.exists():
        previous = pd.read_csv(out)
        done = set(zip(previous["sigma"], previous["classes"], previous["rep"]))
    for n_classes in [int(c) for c in args.classes.split(",")]:
        for sigma in SIGMAS:
            for rep in range(args.reps):
                if (sigma, n_classes, rep) in done:
                    continue
                rows = replicate(sigma, n_classes, rep)
                if rows:
                    pd.DataFrame(rows).to_csv(out, mode="a", header=not out.exists(), index=False)
                print(f"classes {n_classes} sigma {sigma} rep {rep}", flush=True)
    table = pd.read_csv(out)
    wide = table.pivot_table(index=["classes", "sigma", "rep"], columns="method", values="accuracy")
    gain = (wide["gaussian/exact-counts"] - wide["gaussian/independent"]).rename("gaussian exact - independent")
    gain_l = (wide["logistic/exact-counts"] - wide["logistic/independent"]).rename("logistic exact - independent")
    summary = pd.concat([wide.groupby(["classes", "sigma"]).mean(),
                         gain.groupby(["classes", "sigma"]).agg(["mean", "sem"]).add_prefix("gaussian gain "),
                         gain_l.groupby(["classes", "sigma"]).agg(["mean", "sem"]).add_prefix("logistic gain ")], axis=1)
    errors = table.pivot_table(index=["classes", "sigma"], columns="method", values="mean_error").add_prefix("mean error ")
    summary = summary.join(errors)
    summary_csv = (RESULTS / "proportions_exact_gain_summary.csv" if out == OUT / "proportions_exact_gain.csv"
                   else out.with_name(out.stem + "_summary.csv"))  # rows of another run: their summary beside them
    summary.to_csv(summary_csv)
    print("command: python benchmarks/proportions_exact_gain.py " + " ".join(map(shlex.quote, sys.argv[1:] if argv is None else argv)))
    with pd.option_context("display.width", 220, "display.max_columns", 20):
        print(summary.round(4).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
