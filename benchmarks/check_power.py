"""Power and false-alarm rate of every shipped check, each against a planted misfit of the kind it exists for.

Each simulation draws one data set from the model (the sizes of `checks_calibration.py`, smaller for the
first model) and one with a planted misfit, fits both with the defaults (MAP, checks at fit time) and
records every check row: p-value, effect against its tolerance, flagged. On data from the model a flag is a
false alarm; on the planted data it is a hit for the checks aimed at that misfit.

  wsc          500 groups of 100 clicks, 15 bins, sigma_H = 0.5, fitted with WH = 4 (the truth)
    he_noise       HE four times noisier than WH says (sigma_H = 2)            -> aggregation_bias
    group_behavior each group's w0, w1 drawn around the shared ones (Dirichlet, concentration 30 w):
                   behavior that depends on the group beyond the class        -> aggregation_bias
  experts      300 items, 4 features, K = 3, four experts x 500 pairs
    adversarial    the first expert's links all turned around                 -> expert_agreement
    real_iris      iris's features, experts rating 600 pairs by the paper's Sec. 3.2 protocol (Case 1): real
                   data where the model does well, so a flag is a false alarm
  pcmix        1000 items in 3 features, two components, half labeled, lam = 1
    skewed         the third feature replaced by exp(2 x): a skewed marginal  -> feature_marginal
  proportions  the default fit (logistic, exact counts), 100 groups of 16, 3 classes, 5 features
    real_breast_cancer  breast_cancer in random groups of 8 (Sec. 4, where the default fit reaches 0.979):
                   real data where the model does well, so a flag is a false alarm
    wrong_counts   ten groups' counts rolled by one class (their largest class moved on)
                                                                               -> group_misfit (and ppc_group_class_share,
                                                                                  measured before it was dropped)
  perception   `simulate_model`: 2000 items, 10 features, 3 clusters, 10 seeds each
    split_cluster  cluster A's 20 seeds on both sides of B's (C apart), 100 unseeded items, 2 features:
                   a cluster no linear rule picks out                          -> seed_neighbours

    python benchmarks/check_power.py --model wsc --sims 10      # out/check_power.csv (resumable)
    python benchmarks/check_power.py --summarize                # results/check_power_summary.csv
    python benchmarks/check_power.py --cces                     # the first model's group shares on CCES 2016

`--cces` measures the statistic that was the first model's `ppc_group_share` row (each group's share of
items in the class-1-leaning bins against 200 replicates; the ratio of the chi-square discrepancy to the
replicates') on 5 halvings of the states of CCES 2016, grouped by state x age x gender (where the model
nearly reaches the oracle) and by state (where aggregation bias makes rho wrong), with the settings of
`aggregation_check.py`. It is why that row is gone (see `bayes_wsc/checks/wsc.py`).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
from output_paths import HERE, OUT, RESULTS, require  # noqa: E402

CASES = {"wsc": ("he_noise", "group_behavior"), "experts": ("adversarial",), "pcmix": ("skewed",),
         "proportions": ("wrong_counts",), "perception": ("split_cluster",)}
#: which checks each planted misfit is aimed at (the hits that count as power)
AIMED = {"he_noise": ("aggregation_bias",), "group_behavior": ("aggregation_bias",),
         "adversarial": ("expert_agreement",), "skewed": ("feature_marginal", "ppc_class_feature_mean"),
         "wrong_counts": ("group_misfit", "ppc_group_class_share"), "split_cluster": ("seed_neighbours",)}


def script(name: str):
    """benchmarks/<name>.py, imported by path once (benchmarks/ is no package)."""
    key = f"benchmarks_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, HERE / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


def calibration():
    return script("checks_calibration")


def data_sets(model: str, seed: int):
    """[(case, data, make estimator)]: the null first, then each planted misfit."""
    rng = np.random.default_rng(9000 + seed)
    if model == "wsc":
        from bayes_wsc.data.grouped import GroupedCounts
        from bayes_wsc.models.wsc import WSC
        from bayes_wsc.simulate import simulate_wsc
        from bayes_wsc.simulate.wsc import simulate_counts

        make = lambda **kw: WSC(wh=4.0, **kw)  # noqa: E731
        null, truth = simulate_wsc(n_groups=500, items_per_group=100, n_bins=15, sigma_h=0.5, seed=9000 + seed)
        noisy, _ = simulate_wsc(n_groups=500, items_per_group=100, n_bins=15, sigma_h=2.0, seed=9000 + seed)
        counts = np.stack([simulate_counts(truth.mu[i:i + 1], rng.dirichlet(30 * truth.w0), rng.dirichlet(30 * truth.w1),
                                           [100], rng)[0] for i in range(truth.mu.size)])
        varied = GroupedCounts.from_counts(counts, null.he, group_ids=null.group_ids, bin_labels=null.bins.labels)
        return [("from_model", null, make), ("he_noise", noisy, make), ("group_behavior", varied, make)]
    if model == "experts":
        from bayes_wsc.data.pairwise import PairwiseConstraints
        from bayes_wsc.models.experts import NoisyExperts
        from bayes_wsc.simulate.experts import simulate_experts_model

        items, constraints, _ = simulate_experts_model(n_items=300, n_features=4, n_clusters=3, pairs_per_expert=500,
                                                       seed=9000 + seed)
        first = constraints["expert"] == constraints["expert"].iloc[0]
        turned = constraints.assign(link=np.where(first, 1 - constraints["link"], constraints["link"]))
        from bayes_wsc.simulate.experts import load_uci, simulate_uci_experts

        make = lambda **kw: NoisyExperts(n_clusters=3, **kw)  # noqa: E731
        iris, labels = load_uci("iris")
        rated, _ = simulate_uci_experts(labels, 600, item_ids=iris["id"], seed=9000 + seed)
        return [("from_model", PairwiseConstraints.from_frames(items, constraints), make),
                ("adversarial", PairwiseConstraints.from_frames(items, turned), make),
                ("real_iris", PairwiseConstraints.from_frames(iris, rated), make)]
    if model == "pcmix":
        from bayes_wsc.data.labeled import LabeledItems

        null, make = calibration().simulate("pcmix", 9000 + seed)
        frame = pd.DataFrame(null.x_raw, columns=list(null.features))
        frame["x3"] = np.exp(2 * frame["x3"])
        frame["y"] = pd.array(np.where(null.y >= 0, null.y, 0), dtype="Int64")
        frame.loc[null.y < 0, "y"] = pd.NA
        return [("from_model", null, make), ("skewed", LabeledItems.from_frame(frame, label_col="y", classes=[0, 1]), make)]
    if model == "proportions":
        null, make = calibration().simulate("proportions_logistic", 9000 + seed)
        counts = np.array(null.counts)
        wrong = np.argsort(-counts.max(axis=1), kind="stable")[:10]
        planted = counts.copy()
        planted[wrong] = np.roll(planted[wrong], 1, axis=1)
        from bayes_wsc.data.proportions import LabelProportions
        from bayes_wsc.models.proportions import ProportionsClassifier
        from bayes_wsc.simulate.proportions import uci_proportion_tables

        items, shares, _ = uci_proportion_tables("breast_cancer", 8, seed=9000 + seed)
        real = LabelProportions.from_frames(items, shares, id_col="id")
        return [("from_model", null, make),
                ("wrong_counts", null.with_proportions(planted / planted.sum(axis=1, keepdims=True), planted), make),
                ("real_breast_cancer", real, lambda **kw: ProportionsClassifier(**kw))]
    if model == "perception":
        from bayes_wsc.data.seeded import SeedSets

        null, make = calibration().simulate("perception", 9000 + seed)
        centres = {"A": [(-3.0, 0.0), (3.0, 0.0)], "B": [(0.0, 0.0)], "C": [(0.0, 3.0)]}
        x = np.vstack([np.array(c[j % len(c)]) + 0.5 * rng.standard_normal(2) for c in centres.values()
                       for j in range(20)] + [rng.normal(0, 2, (100, 2))])
        items = pd.DataFrame(x, columns=["x1", "x2"])
        items.insert(0, "id", [f"i{j}" for j in range(len(x))])
        seeds = pd.DataFrame({"cluster": np.repeat(list(centres), 20), "id": [f"i{j}" for j in range(60)]})
        perception = pd.DataFrame({"cluster": list(centres), "p1": [1.0, 0, 0], "p2": [0, 1.0, 0], "p3": [0, 0, 1.0]})
        return [("from_model", null, make), ("split_cluster", SeedSets.from_frames(items, seeds, perception), make)]
    raise SystemExit(f"unknown model {model!r}")


def one(model: str, seed: int) -> list[dict]:
    from bayes_wsc.errors import FitWarning

    rows = []
    for case, data, make in data_sets(model, seed):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            est = make(seed=seed).fit(data)
        seconds = time.perf_counter() - start
        for r in est.checks_.to_dict("records"):
            rows.append({"model": model, "sim": seed, "case": case, "check": r["check"], "p_value": r["p_value"],
                         "effect": r.get("effect", np.nan), "tolerance": r.get("tolerance", np.nan),
                         "flagged": bool(r["flagged"]), "aimed": r["check"] in AIMED.get(case, ()),
                         "fit_seconds": seconds})
    return rows


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per model, check and case: what a flag there is (a false alarm on data from the model or on
    real data, a hit where the misfit is the check's, else a side effect), how often, and the effects."""
    out = []
    for (model, check, case), rows in frame.groupby(["model", "check", "case"], sort=False):
        role = ("false alarm" if case == "from_model" or case.startswith("real_")
                else "hit" if rows["aimed"].any() else "other misfit")
        out.append({"model": model, "check": check, "tolerance": rows["tolerance"].iloc[0], "case": case,
                    "a flag is": role, "flagged": f"{int(rows['flagged'].sum())} of {len(rows)}",
                    "effect (min-median-max)": f"{rows['effect'].min():.3g}-{rows['effect'].median():.3g}-"
                                               f"{rows['effect'].max():.3g}"})
    return pd.DataFrame(out)


def cces_group_shares(splits: int = 5) -> pd.DataFrame:
    """The group-share discrepancy ratio on CCES 2016 halvings (see the module docstring)."""
    from bayes_wsc import criticism as checks

    agg = script("aggregation_check")
    table1 = agg.table1()
    frame = table1.prepare()
    behavior = list(table1.SPECS["paper"].columns)
    rows = []
    for grouping in ("state_age_gender", "state"):
        for split, (train_ids, _) in enumerate(table1.group_splits(frame["state"], splits, 0)):
            data = table1.training_counts(frame[frame["state"].isin(set(train_ids))], behavior, grouping)
            est = agg.fit_map(data, **agg.CCES_SETTINGS)
            replicates, _ = checks.draw_replicates(est, data, draws=200, seed=split)
            row = checks.omnibus("group_share", replicates.observed["group_share"],
                                 replicates.replicated["group_share"], data.group_ids, "group", "", "")
            rows.append({"grouping": grouping, "split": split, "groups": data.n_groups, "ratio": row.effect,
                         "p_value": row.p_value})
            print(rows[-1], flush=True)
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=sorted(CASES), action="append")
    parser.add_argument("--sims", type=int, default=10)
    parser.add_argument("--out", type=Path, default=OUT / "check_power.csv", help="per-simulation rows")
    parser.add_argument("--summarize", action="store_true")
    parser.add_argument("--cces", action="store_true", help="the group-share ratio on CCES 2016 halvings")
    args = parser.parse_args(argv)
    if args.cces:
        print(cces_group_shares().to_string(index=False))
        return 0
    if args.summarize:
        require(args.out, "python benchmarks/check_power.py --model wsc --sims 20")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    done = pd.read_csv(args.out, keep_default_na=False, na_values=[""]) if args.out.exists() else pd.DataFrame(columns=["model", "sim"])
    if not args.summarize:
        for model in args.model or sorted(CASES):
            for seed in range(args.sims):
                if ((done["model"] == model) & (done["sim"] == seed)).any():
                    continue
                start = time.perf_counter()
                rows = pd.DataFrame(one(model, seed))
                rows.to_csv(args.out, mode="a", header=not args.out.exists(), index=False, float_format="%.6g")
                done = pd.concat([done, rows])
                print(f"{model} sim {seed}: {time.perf_counter() - start:.1f} s; flagged "
                      f"{sorted(set(rows.loc[rows['flagged'], 'case'] + ':' + rows.loc[rows['flagged'], 'check']))}",
                      flush=True)
    summary = summarize(pd.read_csv(args.out, keep_default_na=False, na_values=[""]))
    print(summary.to_string(index=False))
    if args.out == OUT / "check_power.csv":
        RESULTS.mkdir(exist_ok=True)
        summary.to_csv(RESULTS / "check_power_summary.csv", index=False)
        print("wrote", RESULTS / "check_power_summary.csv")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
