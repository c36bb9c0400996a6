"""Power and false-alarm rate of every shipped check, each against a planted misfit of the kind it exists for.

Each simulation draws one data set from the model (the sizes of `checks_calibration.py`, smaller for the
first model) and one with a planted misfit, fits both with the defaults (MAP, checks at fit time) and
records every check row: p-value, effect against its tolerance, flagged. On data from the model a flag is a
false alarm; on the planted data it is a hit for the checks aimed at that misfit.

  wsc          500 groups of 100 clicks, 15 bins, sigma_H = 0.5, fitted with WH = 4 (the truth)
    he_noise       HE four times noisier than WH says (sigma_H = 2)            -> aggregation_bias
    group_behavior each group's w0, w1 drawn around the shared ones (Dirichlet, concentration 30 w):
                   behavior that depends on the group beyond the class        -> aggregation_bias
    real_cces      CCES 2016 on a random half of the states, grouped by state x age x gender (the settings
                   of aggregation_check.py): real data where the model nearly reaches the oracle
    cces_state     the same halves grouped by state, where aggregation bias is real -> aggregation_bias
  experts      300 items, 4 features, K = 3, four experts x 500 pairs
    adversarial    the first expert's links all turned around                 -> expert_agreement
    real_iris      iris's features, experts rating 600 pairs by the paper's Sec. 3.2 protocol (Case 1): real
                   data where the model does well, so a flag is a false alarm
  pcmix        1000 items in 3 features, two components, half labeled, lam = 1
    skewed         the third feature replaced by exp(2 x): a skewed marginal  -> feature_marginal
    real_iris, real_wine_log, real_wine_log_all   iris; wine with its skewed features logged (80% of the
                   items, or all of them), half labeled: real data where the model predicts as well as GaussianNB
    wine_as_shipped  wine without the log: a real skewed feature (malic acid), labels still predicted well
  proportions  the default fit (logistic, exact counts), 100 groups of 16, 3 classes, 5 features
    real_breast_cancer  breast_cancer in random groups of 8 (Sec. 4, where the default fit reaches 0.979):
                   real data where the model does well, so a flag is a false alarm
    wrong_counts   ten groups' counts rolled by one class (their largest class moved on)
                                                                               -> group_misfit (and ppc_group_class_share,
                                                                                  measured before it was dropped)
  perception   `simulate_model`: 2000 items, 10 features, 3 clusters, 10 seeds each
    split_cluster  cluster A's 20 seeds on both sides of B's (C apart), 100 unseeded items, 2 features:
                   a cluster no linear rule picks out                          -> seed_neighbours
    real_digits, real_digits10   perception.py's digits study, 5 or 10 seeds per concept drawn anew: real data
                   where the model beats k-means and LPE

On real data each fit is also scored against a reference (`fit_ok`): a flag where the fit did as well is a
false alarm, a flag where it fell short is a hit (the fit's answer is wrong there).

    python benchmarks/check_power.py --model wsc --sims 10      # out/check_power.csv (resumable)
    python benchmarks/check_power.py --model pcmix --case real_iris --sims 20   # some cases only
    python benchmarks/check_power.py --summarize                # results/check_power_summary.csv (merged)
    python benchmarks/check_power.py --cces                     # the first model's group shares on CCES 2016

`--cces` measures the statistic that was the first model's `ppc_group_share` row (each group's share of
items in the class-1-leaning bins against 200 replicates; the ratio of the chi-square discrepancy to the
replicates') on 5 halvings of the states of CCES 2016, grouped by state x age x gender (where the model
nearly reaches the oracle) and by state (where aggregation bias makes rho wrong), with the settings of
`aggregation_check.py`. It is why that row is gone (see `bayes_wsc/checks/wsc.py`).
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
from output_paths import HERE, OUT, RESULTS, require  # noqa: E402

#: every case of each model, the null first (`data_sets` builds them in this order)
CASES = {"wsc": ("from_model", "he_noise", "group_behavior", "real_cces", "cces_state"),
         "experts": ("from_model", "adversarial", "real_iris"),
         "pcmix": ("from_model", "skewed", "real_iris", "real_wine_log", "real_wine_log_all", "wine_as_shipped"),
         "proportions": ("from_model", "wrong_counts", "real_breast_cancer"),
         "perception": ("from_model", "split_cluster", "real_digits", "real_digits10")}
#: which checks each planted misfit is aimed at (the hits that count as power)
AIMED = {"he_noise": ("aggregation_bias",), "group_behavior": ("aggregation_bias",),
         "adversarial": ("expert_agreement",), "skewed": ("feature_marginal", "ppc_class_feature_mean"),
         "wrong_counts": ("group_misfit", "ppc_group_class_share"), "split_cluster": ("seed_neighbours",),
         "cces_state": ("aggregation_bias",)}
#: what a flag is on real data with a known misfit that is no planted one (a real_* case's flag is a false alarm)
ROLES = {"wine_as_shipped": "real skew (labels fine)"}


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
        return [("from_model", null, make), ("he_noise", noisy, make), ("group_behavior", varied, make),
                *cces_cases(seed)]
    if model == "experts":
        from bayes_wsc.data.pairwise import PairwiseConstraints
        from bayes_wsc.models.experts import NoisyExperts
        from bayes_wsc.simulate.experts import simulate_experts_model

        items, constraints, _ = simulate_experts_model(n_items=300, n_features=4, n_clusters=3, pairs_per_expert=500,
                                                       separation=3.0, seed=9000 + seed)
        first = constraints["expert"] == constraints["expert"].iloc[0]
        turned = constraints.assign(link=np.where(first, 1 - constraints["link"], constraints["link"]))
        from bayes_wsc.simulate.experts import load_uci, simulate_uci_experts

        make = lambda **kw: NoisyExperts(n_clusters=3, **kw)  # noqa: E731
        iris, labels = load_uci("iris")
        rated, _ = simulate_uci_experts(labels, 600, item_ids=iris["id"], seed=9000 + seed)
        return [("from_model", PairwiseConstraints.from_frames(items, constraints), make),
                ("adversarial", PairwiseConstraints.from_frames(items, turned), make),
                ("real_iris", PairwiseConstraints.from_frames(iris, rated), make, iris_clustering(iris, labels, seed))]
    if model == "pcmix":
        from bayes_wsc.data.labeled import LabeledItems

        null, make = calibration().simulate("pcmix", 9000 + seed)
        real = [pcmix_case(name, seed) for name in CASES["pcmix"][2:]]
        frame = pd.DataFrame(null.x_raw, columns=list(null.features))
        frame["x3"] = np.exp(2 * frame["x3"])
        frame["y"] = pd.array(np.where(null.y >= 0, null.y, 0), dtype="Int64")
        frame.loc[null.y < 0, "y"] = pd.NA
        return [("from_model", null, make), ("skewed", LabeledItems.from_frame(frame, label_col="y", classes=[0, 1]), make),
                *real]
    if model == "proportions":
        null, make = calibration().simulate("proportions_logistic", 9000 + seed)
        counts = np.array(null.counts)
        wrong = np.argsort(-counts.max(axis=1), kind="stable")[:10]
        planted = counts.copy()
        planted[wrong] = np.roll(planted[wrong], 1, axis=1)
        from bayes_wsc.data.proportions import LabelProportions
        from bayes_wsc.models.proportions import ProportionsClassifier
        from bayes_wsc.simulate.proportions import uci_proportion_tables

        items, shares, truth = uci_proportion_tables("breast_cancer", 8, seed=9000 + seed)
        real = LabelProportions.from_frames(items, shares, id_col="id")
        return [("from_model", null, make),
                ("wrong_counts", null.with_proportions(planted / planted.sum(axis=1, keepdims=True), planted), make),
                ("real_breast_cancer", real, lambda **kw: ProportionsClassifier(**kw),
                 breast_cancer_classes(items, truth))]
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
        return [("from_model", null, make), ("split_cluster", SeedSets.from_frames(items, seeds, perception), make),
                digits_case("real_digits", 5, seed), digits_case("real_digits10", 10, seed)]
    raise SystemExit(f"unknown model {model!r}")


# ---------------------------------------------------------------------- real data where the model does well
@functools.lru_cache(maxsize=1)
def cces_frame() -> pd.DataFrame:
    """CCES 2016 with the bins and groupings of table1_real_data.py (read once)."""
    return script("aggregation_check").table1().prepare()


def cces_cases(seed: int) -> list[tuple]:
    """CCES 2016 (income x college x race bins, exact shares WH = inf, Dirichlet(2): aggregation_check.py's
    settings), trained on a random half of the states (halving `seed`, seeded 9000 + seed): grouped by
    state x age x gender, where the model nearly reaches the oracle (`real_cces`), and by state, where the
    bins' vote shares differ between states and aggregation bias is real (`cces_state`, a hit). Scored by
    the 0-1 error of the held-out states' respondents: the model's rho against the null model's and the
    oracle's (the training respondents' per-bin vote share, which uses the individual labels)."""
    from bayes_wsc.models.wsc import WSC

    agg = script("aggregation_check")
    table1, frame = agg.table1(), cces_frame()
    behavior = list(table1.SPECS["paper"].columns)
    train_ids, test_ids = table1.group_splits(frame["state"], 1, 9000 + seed)[0]
    train, test = frame[frame["state"].isin(set(train_ids))], frame[frame["state"].isin(set(test_ids))]
    y_train, y_test = train[table1.OUTCOME].to_numpy(float), test[table1.OUTCOME].to_numpy(float)
    make = lambda **kw: WSC(method="map", progressbar=False, **agg.CCES_SETTINGS, **kw)  # noqa: E731
    out = []
    for case, grouping in (("real_cces", "state_age_gender"), ("cces_state", "state")):
        data = table1.training_counts(train, behavior, grouping)
        bins_train, bins_test = data.bins.index(train, "training"), data.bins.index(test, "held-out")
        n1 = np.bincount(bins_train, weights=y_train, minlength=data.n_bins)
        oracle = ((1.0 + n1) / (2.0 + np.bincount(bins_train, minlength=data.n_bins)))[bins_test]

        def score(est, bins_test=bins_test, oracle=oracle):
            rho = est.idata_.posterior["rho"].values[0, 0]
            model, null = error(rho[bins_test], y_test), error(np.full(y_test.size, y_train.mean()), y_test)
            return {"score_what": "0-1 error, held-out states", "score_model": model, "score_null": null,
                    "score_oracle": error(oracle, y_test), "fit_ok": model < null}
        out.append((case, data, make, score))
    return out


def error(prob: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((prob > 0.5) != (y == 1)))


#: the share of iris's or wine's items each resample keeps (drawn without replacement)
PCMIX_KEEP = 0.8
#: a PC mixture fit did well when its accuracy is at most this far below GaussianNB's
PCMIX_SHORT = 0.05
#: the wine features a log makes near-symmetric: skewness above 0.5 over all 178 wines (no label used)
WINE_SKEW = 0.5


def pcmix_case(case: str, seed: int) -> tuple:
    """scikit-learn's iris (4 features, K = 3) or wine (13 features, K = 3): a random PCMIX_KEEP of the
    items, half of them labeled (seeded 9000 + seed), fitted with K = the number of classes, lam = 1.
    `real_wine_log` takes the log of the wine features whose skewness exceeds WINE_SKEW, as the check's
    message advises (`real_wine_log_all`: every wine, only the labeled half drawn anew); `wine_as_shipped`
    leaves them be (malic acid, skewness 1.0, is then far from any
    3-Gaussian mixture). Scored by the accuracy on the unlabeled half: the fit's most probable class
    against scikit-learn's GaussianNB trained on the labeled half (the supervised form of the same
    diagonal Gaussian classes)."""
    from scipy.stats import skew
    from sklearn import datasets
    from sklearn.naive_bayes import GaussianNB

    from bayes_wsc.data.labeled import LabeledItems
    from bayes_wsc.models.pcmix import PCMixture

    bunch = datasets.load_iris() if case == "real_iris" else datasets.load_wine()
    names = [n.replace(" (cm)", "").replace(" ", "_").replace("/", "_") for n in bunch.feature_names]
    x = pd.DataFrame(bunch.data, columns=names)
    if case.startswith("real_wine_log"):
        skewed = [c for c in names if skew(x[c]) > WINE_SKEW]
        x[skewed] = np.log(x[skewed])
        x = x.rename(columns={c: f"log_{c}" for c in skewed})
    classes = sorted(set(bunch.target.tolist()))
    rng = np.random.default_rng(9000 + seed)
    kept = np.sort(rng.permutation(len(x))[:round((1.0 if case.endswith("_all") else PCMIX_KEEP) * len(x))])
    x, y = x.iloc[kept].reset_index(drop=True), np.asarray(bunch.target)[kept]
    labeled = rng.random(y.size) < 0.5
    frame = x.assign(y=pd.array(np.where(labeled, y, 0), dtype="Int64"))
    frame.loc[~labeled, "y"] = pd.NA
    data = LabeledItems.from_frame(frame, label_col="y", classes=classes)

    def score(est):
        probs = est.predict(x[~labeled].reset_index(drop=True))[[f"prob_{c}" for c in classes]].to_numpy()
        bayes = GaussianNB().fit(x[labeled], y[labeled]).predict(x[~labeled])
        model, reference = float(np.mean(probs.argmax(1) == y[~labeled])), float(np.mean(bayes == y[~labeled]))
        return {"score_what": "accuracy, unlabeled half", "score_model": model, "score_gaussian_nb": reference,
                "fit_ok": model >= reference - PCMIX_SHORT}
    return case, data, lambda **kw: PCMixture(components=len(classes), **kw), score


def digits_case(case: str, seeds_per_concept: int, seed: int) -> tuple:
    """perception.py's digits study (`digits_example`: closed loop, straight strokes, open curves), its seeds
    drawn anew (seeded 9000 + seed), fitted with the defaults. Scored by the mean F-score on the items that
    are no seed: the fit's overlap rule (as perception.py's bayes_map) against k-means on X."""
    from bayes_wsc.baselines import perception as bp
    from bayes_wsc.models.perception import PerceptionClustering

    from bayes_wsc.simulate.perception import digits_example

    study = digits_example(seeds_per_cluster=seeds_per_concept, seed=9000 + seed)
    data = study.data()

    def score(est):
        rows = data.unseeded_items
        probs = est.memberships(use_seeds=False)[[f"prob_{c}" for c in data.clusters]].to_numpy()
        threshold = script("perception").THRESHOLD
        kmeans = bp.one_hot(bp.kmeans_clusters(data.features, data, seed=seed), data.n_clusters)
        model = float(bp.f_scores(bp.threshold_clusters(probs, threshold), study.membership, rows).mean())
        reference = float(bp.f_scores(kmeans, study.membership, rows).mean())
        return {"score_what": "mean F, unseeded items", "score_model": model, "score_kmeans": reference,
                "fit_ok": model > reference}
    return case, data, lambda **kw: PerceptionClustering(**kw), score


def iris_clustering(iris: pd.DataFrame, labels: np.ndarray, seed: int):
    """The experts' iris case scored by the NMI of the fit's clusters (features and own links, the default
    for training items) against k-means on the standardized features, experts_uci.py's reference."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import normalized_mutual_info_score as nmi
    from sklearn.preprocessing import StandardScaler

    def score(est):
        clusters = est.memberships().loc[iris["id"].astype(str), "cluster"].to_numpy()
        x = StandardScaler().fit_transform(iris.drop(columns="id"))
        kmeans = KMeans(3, n_init=10, random_state=seed).fit_predict(x)
        model, reference = float(nmi(labels, clusters)), float(nmi(labels, kmeans))
        return {"score_what": "NMI", "score_model": model, "score_kmeans": reference, "fit_ok": model > reference}
    return score


def breast_cancer_classes(items: pd.DataFrame, truth: np.ndarray):
    """The proportions case scored by the accuracy of the fit's most probable class on its own items (their
    labels unseen, only their groups' proportions) against a logistic regression trained on those labels
    (the supervised ceiling); the fit did well within PCMIX_SHORT of it."""
    from sklearn.linear_model import LogisticRegression

    x = items.drop(columns=["id", "group"])

    def score(est):
        model = float(np.mean(est.predict(x)["class"].astype(str).to_numpy() == truth.astype(str)))
        reference = float(np.mean(LogisticRegression(max_iter=2000).fit(x, truth).predict(x) == truth))
        return {"score_what": "accuracy, the items' own classes", "score_model": model,
                "score_supervised": reference, "fit_ok": model >= reference - PCMIX_SHORT}
    return score


def one(model: str, seed: int, skip=frozenset()) -> list[dict]:
    """Every case of `model` at simulation `seed` but those in `skip`: one row per check."""
    from bayes_wsc.errors import FitWarning

    rows = []
    for case, data, make, *scorer in data_sets(model, seed):
        if case in skip:
            continue
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            est = make(seed=seed).fit(data)
        seconds = time.perf_counter() - start
        scores = scorer[0](est) if scorer else {}
        for r in est.checks_.to_dict("records"):
            rows.append({"model": model, "sim": seed, "case": case, "check": r["check"], "p_value": r["p_value"],
                         "effect": r.get("effect", np.nan), "tolerance": r.get("tolerance", np.nan),
                         "flagged": bool(r["flagged"]), "aimed": r["check"] in AIMED.get(case, ()),
                         "fit_seconds": seconds, **scores})
    return rows


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per model, check and case: what a flag there is (a false alarm on data from the model or on
    real data, a hit where the misfit is the check's, else a side effect), how often, and the effects."""
    out = []
    frame = frame.assign(role=[role(case, aimed, ok) for case, aimed, ok in
                               zip(frame["case"], frame["aimed"], frame.get("fit_ok", pd.Series(np.nan, frame.index)))])
    for (model, check, case, role_), rows in frame.groupby(["model", "check", "case", "role"], sort=False):
        scored = [c for c in rows.columns if c.startswith("score_") and c != "score_what" and rows[c].notna().any()]
        out.append({"model": model, "check": check, "tolerance": f"{rows['tolerance'].iloc[0]:g}", "case": case,
                    "a flag is": role_, "flagged": f"{int(rows['flagged'].sum())} of {len(rows)}",
                    "effect (min-median-max)": f"{rows['effect'].min():.3g}-{rows['effect'].median():.3g}-"
                                               f"{rows['effect'].max():.3g}",
                    "fit's score, median": (f"{rows['score_what'].iloc[0]}: " + ", ".join(
                        f"{c[len('score_'):]} {rows[c].median():.3f}" for c in scored)) if scored else ""})
    return pd.DataFrame(out)


def role(case: str, aimed: bool, fit_ok) -> str:
    """What a flag is: a false alarm on data from the model and on real data where the fit did as well as
    its case's reference; on real data where it fell short, a hit (the fit is wrong there); else a hit for
    the checks aimed at the planted misfit."""
    fell_short = str(fit_ok) == "False"  # True, False or NaN (no score) as read back from the CSV
    if case == "from_model" or (case.startswith("real_") and not fell_short):
        return "false alarm"
    if case.startswith("real_"):
        return "hit (fit fell short)"
    return ROLES.get(case, "hit" if aimed else "other misfit")


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
    parser.add_argument("--case", action="append", help="only these cases (default: every case of the model)")
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
                mine = (done["model"] == model) & (done["sim"] == seed)
                skip = set(done.loc[mine, "case"]) if "case" in done else set()
                if args.case:
                    skip |= {c for c in CASES[model] if c not in args.case}
                if set(CASES[model]) <= skip:
                    continue
                start = time.perf_counter()
                rows = pd.DataFrame(one(model, seed, frozenset(skip)))
                done = pd.concat([done, rows], ignore_index=True)  # rewritten whole: real cases add score columns
                done.to_csv(args.out, index=False, float_format="%.6g")
                print(f"{model} sim {seed}: {time.perf_counter() - start:.1f} s; flagged "
                      f"{sorted(set(rows.loc[rows['flagged'], 'case'] + ':' + rows.loc[rows['flagged'], 'check']))}",
                      flush=True)
    summary = summarize(pd.read_csv(args.out, keep_default_na=False, na_values=[""]))
    print(summary.to_string(index=False))
    if args.out == OUT / "check_power.csv":
        RESULTS.mkdir(exist_ok=True)
        merged = merge_summary(summary, RESULTS / "check_power_summary.csv")
        merged.to_csv(RESULTS / "check_power_summary.csv", index=False)
        print("wrote", RESULTS / "check_power_summary.csv")
    return 0


def merge_summary(summary: pd.DataFrame, path: Path) -> pd.DataFrame:
    """The summary rows of this per-run file, dated today, over the rows of `path` for the other (model,
    check, case) triples (measured by earlier runs, their dates kept), so that running some cases anew
    leaves the others' figures in place. Ordered by model and then by case as in CASES."""
    summary = summary.assign(measured=time.strftime("%Y-%m-%d", time.gmtime()))
    if path.exists():
        old = pd.read_csv(path, keep_default_na=False, dtype=str)
        key = ["model", "check", "case"]
        fresh = pd.MultiIndex.from_frame(summary[key].astype(str))
        summary = pd.concat([old[~pd.MultiIndex.from_frame(old[key]).isin(fresh)], summary.astype(str)],
                            ignore_index=True)
    order = {model: i for i, model in enumerate(("wsc", "pcmix", "perception", "proportions", "experts"))}
    rank = summary.apply(lambda r: (order.get(r["model"], len(order)),
                                    CASES.get(r["model"], ()).index(r["case"]) if r["case"] in CASES.get(r["model"], ())
                                    else len(CASES.get(r["model"], ()))), axis=1)
    return summary.iloc[sorted(range(len(summary)), key=lambda i: rank.iloc[i])].reset_index(drop=True)


if __name__ == "__main__":
    raise SystemExit(main())
