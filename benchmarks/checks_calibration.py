"""How often each model's checks flag on data simulated from the model itself (issue 16's target for the
first model: no check flags in more than 10% of 40 simulations at the Sec. 5 sizes).

Each simulation draws a data set from the model, fits it with the default settings (checks run at fit
time) and records every check's row. The models and sizes:

  wsc      Sec. 5 of seed 000: I = 500 groups of J = 100 clicks, K = 15 bins, mu ~ N(0, 1),
           HE = mu + N(0, 0.5^2), fitted with WH = 4 (the generating value)
  experts  `simulate_experts_model`: 300 items, 4 features, K = 3, four experts with alpha
           0.95..0.65, beta 0.9..0.6, 500 pairs each (z drawn per item, shared by its pairs)
  pcmix    a two-component Gaussian mixture in 3 features (weights 0.4, 0.6; means 1.5 apart in sd
           units), n = 1000 items, half of them labeled with P(y = 1 | z) = 0.85 and 0.15, lam = 1
  proportions  `simulate_proportions`: 3 classes, groups of 16 items with shares ~ Dirichlet(0.5):
           `proportions_logistic`, the default fit (logistic, exact counts; 100 groups, 5 features);
           `proportions` (gaussian, independent, the default before the Sec. 4 sweep chose; 100 groups,
           5 features) and `proportions_categorical` (exact counts, 200 groups, 6 bins)
  perception  `simulate_model`: 2000 items, 10 features, K = 3 clusters over 3 perception features
           (each pair shares one), W and b from the prior, 10 seeds per cluster (seed 004's 3-10), a
           tenth of them also put in a second set (overlap)

    python benchmarks/checks_calibration.py --model wsc --sims 40
    python benchmarks/checks_calibration.py --model wsc --sims 10 --method nuts
    python benchmarks/checks_calibration.py --model experts --sims 40
    python benchmarks/checks_calibration.py --model pcmix --sims 40
    python benchmarks/checks_calibration.py --model proportions --sims 40   (also proportions_logistic, _categorical)
    python benchmarks/checks_calibration.py --model perception --sims 40

Rows are appended to benchmarks/out/checks_<model>_<method>.csv (git-ignored) as simulations finish (`--resume`
skips finished ones; `--summarize` prints the table of a file).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
from output_paths import OUT, require  # noqa: E402


def simulate(model: str, seed: int):
    """(data, estimator) for one simulation."""
    if model == "wsc":
        from bayes_wsc.models.wsc import WSC
        from bayes_wsc.simulate import simulate_wsc

        data, _ = simulate_wsc(n_groups=500, items_per_group=100, n_bins=15, sigma_h=0.5, seed=7000 + seed)
        return data, lambda **kw: WSC(wh=4.0, **kw)
    if model == "experts":
        from bayes_wsc.data.pairwise import PairwiseConstraints
        from bayes_wsc.models.experts import NoisyExperts
        from bayes_wsc.simulate.experts import simulate_experts_model

        items, constraints, _ = simulate_experts_model(n_items=300, n_features=4, n_clusters=3, pairs_per_expert=500,
                                                       separation=3.0, seed=7000 + seed)
        return PairwiseConstraints.from_frames(items, constraints), lambda **kw: NoisyExperts(n_clusters=3, **kw)
    if model == "pcmix":
        from bayes_wsc.data.labeled import LabeledItems
        from bayes_wsc.models.pcmix import PCMixture

        rng = np.random.default_rng(7000 + seed)
        n = 1000
        z = rng.random(n) < 0.4
        means = np.array([[-0.9, 0.6, 0.0], [0.6, -0.4, 0.5]])
        sds = np.array([[1.0, 0.7, 1.2], [0.8, 1.0, 0.9]])
        x = means[z.astype(int)] + sds[z.astype(int)] * rng.standard_normal((n, 3))
        y = np.where(rng.random(n) < 0.5, (rng.random(n) < np.where(z, 0.85, 0.15)).astype(int), -1)
        frame = pd.DataFrame(x, columns=["x1", "x2", "x3"])
        frame["y"] = pd.array(np.where(y >= 0, y, 0), dtype="Int64")
        frame.loc[y < 0, "y"] = pd.NA
        return LabeledItems.from_frame(frame, label_col="y", classes=[0, 1]), \
            lambda **kw: PCMixture(components=2, lam=1.0, **kw)
    if model in PROPORTIONS:
        from bayes_wsc.models.proportions import ProportionsClassifier
        from bayes_wsc.simulate.proportions import simulate_proportions

        emission, bag, n_groups = PROPORTIONS[model]
        data, _ = simulate_proportions(emission, n_groups=n_groups, group_size=16, n_classes=3, n_features=5,
                                       seed=7000 + seed)
        return data, lambda **kw: ProportionsClassifier(emission=emission, bag_likelihood=bag, **kw)
    if model == "perception":
        from bayes_wsc.models.perception import PerceptionClustering
        from bayes_wsc.simulate.perception import simulate_model

        study, _ = simulate_model(n_items=2000, n_features=10, seeds_per_cluster=10, seed=7000 + seed)
        return study.data(), lambda **kw: PerceptionClustering(**kw)
    raise SystemExit(f"unknown model {model!r}")


#: label proportions, groups of 16 items: gaussian/independent (the first default), the default (logistic, exact
#: counts) and the categorical emission with exact counts
PROPORTIONS = {"proportions": ("gaussian", "independent", 100),
               "proportions_logistic": ("logistic", "exact-counts", 100),
               "proportions_categorical": ("categorical", "exact-counts", 200)}


def one_simulation(model: str, seed: int, method: str, draws: int, tune: int, chains: int) -> list[dict]:
    from bayes_wsc.errors import FitWarning

    data, make = simulate(model, seed)
    settings = {"seed": seed} if method == "map" else dict(seed=seed, method="nuts", draws=draws, tune=tune,
                                                            chains=chains, progressbar=False)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        est = make(**settings).fit(data)
    seconds = time.perf_counter() - t0
    return [{"sim": seed, "model": model, "method": method, "check": r["check"], "statistic": r["statistic"],
             "p_value": r["p_value"], "flagged": bool(r["flagged"]), "fit_seconds": seconds}
            for r in est.checks_.to_dict("records")]


def summarize(frame: pd.DataFrame) -> str:
    sims = frame["sim"].nunique()
    per_check = frame.groupby("check", sort=False).agg(flagged=("flagged", "sum"), sims=("sim", "nunique"),
                                                       median_p=("p_value", "median"))
    per_check["flag_rate"] = per_check["flagged"] / per_check["sims"]
    ppc = frame[frame["check"] != "loo_pareto_k"]
    any_flag = ppc.groupby("sim")["flagged"].any()
    lines = [per_check.round(3).to_string(), "",
             f"{sims} simulations; some check other than LOO's Pareto k flagged in {int(any_flag.sum())} "
             f"({any_flag.mean():.0%}); mean fit time (with its checks) {frame.groupby('sim')['fit_seconds'].first().mean():.1f} s."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=("wsc", "experts", "pcmix", *PROPORTIONS, "perception"), required=True)
    parser.add_argument("--sims", type=int, default=40)
    parser.add_argument("--method", choices=("map", "nuts"), default="map")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--summarize", action="store_true")
    args = parser.parse_args()
    out = OUT / f"checks_{args.model}_{args.method}.csv"
    if args.summarize:
        require(out, f"python benchmarks/checks_calibration.py --model {args.model} --method {args.method} "
                     f"--sims {args.sims}")
        print(summarize(pd.read_csv(out)))
        return
    done = set(pd.read_csv(out)["sim"]) if args.resume and out.exists() else set()
    if not args.resume and out.exists():
        out.unlink()
    out.parent.mkdir(parents=True, exist_ok=True)
    for sim in range(args.sims):
        if sim in done:
            continue
        rows = one_simulation(args.model, sim, args.method, args.draws, args.tune, args.chains)
        pd.DataFrame(rows).to_csv(out, mode="a", header=not out.exists(), index=False)
        flagged = [r["check"] for r in rows if r["flagged"]]
        print(f"simulation {sim}: {len(rows)} checks, flagged: {flagged or 'none'}", flush=True)
    print(summarize(pd.read_csv(out)))


if __name__ == "__main__":
    main()
