"""Coverage of the label-proportions model's 90% intervals on data simulated from the model (issue 14).

Each replicate draws new parameters and data with `simulate_proportions` (class shares per group
~ Dirichlet(0.5), classes drawn from them, their counts the proportions, features from the emission),
fits NUTS (2 chains x (600 tune + 600 draws)) and asks whether each class-conditional parameter's
90% highest-density interval holds its true value: mean and sd[class, feature] (gaussian), w[class, bin]
(categorical), W[class, feature] (logistic). Target: coverage 0.85-0.95.

For the logistic emission the truth is drawn from the model's own prior (W and b ~ N(0, 1): the simulator's
`separation=1` and the fit's `intercept_sd=1`, with the default `prior_sd=1`), which is when 90% intervals must
cover 90% of the truths on average; an earlier run drew W from N(0, 2^2), which the N(0, 1) prior shrinks, and
is not a test of calibration. The gaussian truths (means ~ N(0, 2^2), sds ~ U(0.5, 1.5)) sit well inside its
wider priors.

    nice -n 10 python benchmarks/proportions_calibration.py --reps 40 --configs gaussian/exact-counts,gaussian/independent,logistic/exact-counts

Every replicate is appended to benchmarks/out/proportions_calibration.csv (git-ignored) at once (rerunning continues);
the summary (coverage per configuration and parameter, with its binomial standard error) is printed and
written to benchmarks/results/proportions_calibration_summary.csv.
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

ESTIMANDS = {"gaussian": ("mean", "sd"), "categorical": ("w",), "logistic": ("W",)}


def one_replicate(emission: str, bag: str, rep: int, args) -> list[dict]:
    from bayes_wsc import inference
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.proportions import ProportionsClassifier
    from bayes_wsc.posterior import stacked
    from bayes_wsc.simulate.proportions import simulate_proportions

    n_groups = args.groups * (3 if emission == "categorical" else 1)
    from_prior = {"separation": 1.0} if emission == "logistic" else {}  # W ~ N(0, 1): the model's prior
    data, truth = simulate_proportions(emission, n_groups=n_groups, group_size=args.group_size, n_classes=2,
                                       n_features=2, n_bins=4, seed=1000 + rep, **from_prior)
    priors = {"intercept_sd": 1.0} if emission == "logistic" else {}  # b ~ N(0, 1), as simulated
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FitWarning)
        est = ProportionsClassifier(emission=emission, bag_likelihood=bag, method="nuts", draws=args.draws,
                                    tune=args.draws, chains=2, seed=rep, progressbar=False, **priors).fit(data)
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
    parser.add_argument("--out", default=str(OUT / "proportions_calibration.csv"))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(exist_ok=True)
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
    summary_csv = (RESULTS / "proportions_calibration_summary.csv" if out == OUT / "proportions_calibration.csv"
                   else out.with_name(out.stem + "_summary.csv"))  # rows of another run: their summary beside them
    summary.to_csv(summary_csv, index=False)
    print("command: python benchmarks/proportions_calibration.py " + " ".join(map(shlex.quote, sys.argv[1:] if argv is None else argv)))
    print(summary.round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
