"""Coverage of the label-proportions model's 90% intervals on data simulated from the model (issue 14).

Each replicate draws new parameters and data with `simulate_proportions` (class shares per group
~ Dirichlet(0.5), classes drawn from them, their counts the proportions, features from the emission),
fits NUTS (2 chains x (600 tune + 600 draws)) and asks whether each class-conditional parameter's
90% highest-density interval holds its true value: mean and sd[class, feature] (gaussian), w[class, bin]
(categorical), W[class, feature] (logistic). Target: coverage 0.85-0.95.

    nice -n 10 python benchmarks/proportions_calibration.py --reps 40 --configs gaussian/exact-counts,gaussian/independent,logistic/exact-counts

Every replicate is appended to benchmarks/results/proportions_calibration.csv at once (rerunning continues);
the summary (coverage per configuration and parameter, with its binomial standard error) is printed and
written to proportions_calibration_summary.csv.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
ESTIMANDS = {"gaussian": ("mean", "sd"), "categorical": ("w",), "logistic": ("W",)}


def one_replicate(emission: str, bag: str, rep: int, args) -> list[dict]:
    from bayes_wsc import inference
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.proportions import ProportionsClassifier
    from bayes_wsc.posterior import stacked
    from bayes_wsc.simulate.proportions import simulate_proportions

    n_groups = args.groups * (3 if emission == "categorical" else 1)
    data, truth = simulate_proportions(emission, n_groups=n_groups, group_size=args.group_size, n_classes=2,
                                       n_features=2, n_bins=4, seed=1000 + rep)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FitWarning)
        est = ProportionsClassifier(emission=emission, bag_likelihood=bag, method="nuts", draws=args.draws,
                                    tune=args.draws, chains=2, seed=rep, progressbar=False).fit(data)
    rhat = float(est.summary()["r_hat"].max())
    rows = []
    for name in ESTIMANDS[emission]:
        draws = stacked(est.idata_, name)
        bounds = inference.hdi(draws, 0.9)
        true = truth.params[name]
        for index in np.ndindex(true.shape):
            low, high = bounds[index]
            rows.append({"emission": emission, "bag": bag, "rep": rep, "parameter": f"{name}{list(index)}",
                         "estimand": name, "truth": float(true[index]), "low": float(low), "high": float(high),
                         "covered": bool(low <= true[index] <= high), "rhat_max": round(rhat, 4),
                         "warnings": sum(issubclass(w.category, FitWarning) for w in caught)})
    return rows


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    out = (table.groupby(["emission", "bag", "estimand"])["covered"]
           .agg(coverage="mean", intervals="count").reset_index())
    reps = table.groupby(["emission", "bag"])["rep"].nunique().rename("replicates")
    out = out.join(reps, on=["emission", "bag"])
    out["se"] = np.sqrt(out["coverage"] * (1 - out["coverage"]) / out["intervals"])
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--configs", default="gaussian/exact-counts,gaussian/independent,logistic/exact-counts")
    parser.add_argument("--groups", type=int, default=40)
    parser.add_argument("--group-size", type=int, default=6)
    parser.add_argument("--draws", type=int, default=600)
    parser.add_argument("--out", default=str(RESULTS / "proportions_calibration.csv"))
    args = parser.parse_args(argv)
    out = Path(args.out)
    done = set()
    if out.exists():
        previous = pd.read_csv(out)
        done = set(zip(previous["emission"], previous["bag"], previous["rep"]))
    for config in args.configs.split(","):
        emission, bag = config.split("/")
        for rep in range(args.reps):
            if (emission, bag, rep) in done:
                continue
            rows = one_replicate(emission, bag, rep, args)
            pd.DataFrame(rows).to_csv(out, mode="a", header=not out.exists(), index=False)
            print(f"{config} rep {rep}: {np.mean([r['covered'] for r in rows]):.2f} covered, "
                  f"R-hat {rows[0]['rhat_max']}", flush=True)
    summary = summarize(pd.read_csv(out))
    summary.to_csv(RESULTS / "proportions_calibration_summary.csv", index=False)
    print("command: python benchmarks/proportions_calibration.py " + " ".join(map(shlex.quote, sys.argv[1:] if argv is None else argv)))
    print(summary.round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
