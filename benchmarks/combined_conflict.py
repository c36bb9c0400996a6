"""False alarms and power of the combined model's held-out-source conflict check (issue 41).

Data from the model (`simulate_combined`: 200 items, 2 features, 2 classes; 10 hand labels, three annotators
of accuracy 0.9, 0.75, 0.6 each voting on 30% of the items, two experts of accuracy 0.9 and 0.7 on 40 pairs
each, 4 bags of 6 items, 4 groups of 6 items), honest or with one source corrupted:

* flipped_annotator: annotator1's votes all swapped (an adversarial annotator);
* wrong_bags: two of the four bags' counts swapped between the classes (a bag with as many of each class is
  unchanged by it: the `counts_moved` column says how many items' worth of counts the swap moved);
* reversed_bags: every bag's counts given in the wrong class order (the proportions table's class columns
  exchanged: a user's mistake; with two classes a bag's reversed order is the swap of wrong_bags, on all four
  bags, so only bags with as many of each class are unchanged);
* flipped_labels: half the hand labels swapped;
* random_expert: expert1 answers every pair at random (the model can describe it: alpha = beta = 0.5).

For each replicate the model is fitted by MAP and `checks.source_conflict` run (one fit of the rest per held-out
source: Laplace by default, the rest's MAP plugged in with `--predictive map`, both with `--predictive
map,laplace`, scoring the same fit of the case); a case counts as detected when the conflict row flags, and as
naming the corrupted source when its message names it. A random expert is not a conflict: the columns
`near_chance` and `names_near_chance` hold the check's second row, the sources it finds near chance.

    python benchmarks/combined_conflict.py --reps 10
    python benchmarks/combined_conflict.py --first-rep 10 --reps 5 --out benchmarks/out/combined_conflict_10.csv
    python benchmarks/combined_conflict.py --first-rep 200 --reps 12 --predictive map,laplace
    python benchmarks/combined_conflict.py --bag-size 12 --scenarios honest,reversed_bags --first-rep 500 --reps 10

Writes benchmarks/out/combined_conflict.csv and prints the rates. `--bags-detail` diagnoses the wrong-bags
cases instead (`bags_detail`), writing one row per replicate and bag:

    python benchmarks/combined_conflict.py --bags-detail --first-rep 5 --reps 10 --out benchmarks/out/combined_conflict_bags.csv

`--groups-detail` prints, per group, the observed average against the true and the rest's class shares (at
`--prior-sd`). `--truth-only` prints what the true class model says of each replicate's honest group averages
and wrong bags (the check's statistics with the rest replaced by the truth; no fit). `--pair-weighting` fits
with the pairs' item weights; `--calibration` (`pair_calibration`) and `--magnitude` (`pairs_magnitude`) measure
what the pairs' composite likelihood does:

    python benchmarks/combined_conflict.py --calibration --first-rep 400 --reps 25 --out benchmarks/out/combined_calibration400.csv
    python benchmarks/combined_conflict.py --magnitude --first-rep 400 --reps 100 --out benchmarks/out/combined_magnitude400.csv
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

SCENARIOS = ("honest", "flipped_annotator", "wrong_bags", "flipped_labels", "random_expert")
BAG_SCENARIOS = ("wrong_bags", "reversed_bags")
CORRUPTED = {"flipped_annotator": "votes:annotator1", "wrong_bags": "bags", "reversed_bags": "bags",
             "flipped_labels": "labels", "random_expert": "pairs:expert1"}


def swap(values: pd.Series, rows) -> pd.Series:
    out = values.copy()
    out.loc[rows] = out.loc[rows].map({"c0": "c1", "c1": "c0"})
    return out


def corrupt(tables: dict, scenario: str, rng: np.random.Generator) -> dict:
    tables = {k: v.copy() for k, v in tables.items()}
    if scenario == "flipped_annotator":
        votes = tables["votes"]
        rows = votes.index[(votes["source"] == "annotator1") & votes["vote"].notna()]
        votes["vote"] = swap(votes["vote"], rows)
    elif scenario == "wrong_bags":
        bags = tables["bags"]
        c0, c1 = bags["c0"].to_numpy().copy(), bags["c1"].to_numpy().copy()
        bags["c0"], bags["c1"] = np.r_[c1[:2], c0[2:]], np.r_[c0[:2], c1[2:]]
    elif scenario == "reversed_bags":
        bags = tables["bags"]
        bags["c0"], bags["c1"] = bags["c1"].to_numpy().copy(), bags["c0"].to_numpy().copy()
    elif scenario == "flipped_labels":
        items = tables["items"]
        labelled = items.index[items["label"].notna()]
        items["label"] = swap(items["label"], rng.choice(labelled, labelled.size // 2, replace=False))
    elif scenario == "random_expert":
        pairs = tables["pairs"]
        rows = pairs["expert"] == "expert1"
        pairs.loc[rows, "link"] = rng.integers(0, 2, rows.sum())
    return tables


def counts_moved(honest, data) -> int:
    """How wrong the bags are: the number of items' worth of class counts the corruption moved (half the sum of
    absolute differences from the true counts; 0 when the swapped bags held as many of each class)."""
    return int(np.abs(data.bag_counts - honest.bag_counts).sum() // 2) if data.n_bags else 0


def exact_tail(r: np.ndarray, observed: int) -> float:
    """Two-sided P(a bag's class-1 count as far out as `observed`) when its items are of class 1 with
    probabilities r independently (two classes): 2 min(P(count <= observed), P(count >= observed)), at most 1."""
    from bayes_wsc.models.combined.model import count_logp

    log_r = np.log(np.clip(np.stack([1 - r, r], axis=1), 1e-300, 1.0))[None]
    table = np.exp([count_logp(log_r, np.array([r.size - c, c]))[0] for c in range(r.size + 1)])
    return float(min(1.0, 2 * min(table[:observed + 1].sum(), table[observed:].sum())))


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a rate seen k times in n cases (scipy's binomtest)."""
    from scipy.stats import binomtest

    interval = binomtest(k, n).proportion_ci(level, method="exact")
    return interval.low, interval.high


def true_model_bags_p(tables, truth, data, rep: int) -> float:
    """The bags' surprise p-value (Bonferroni over 8 sources, as the check) when the rest is replaced by the
    true class model softmax(x W^T + b), features only: what the counts alone can show against the truth."""
    from scipy.special import softmax

    from bayes_wsc.criticism import p_value_upper
    from bayes_wsc.models.combined.checks import CONFLICT_REPLICATES, bag_surprise

    x = tables["items"][[c for c in tables["items"].columns if c.startswith("x")]].to_numpy(float)
    observed, replicated = bag_surprise(data, softmax(x @ truth.W.T + truth.b, axis=1),
                                        np.random.default_rng(rep), CONFLICT_REPLICATES)
    return min(1.0, 8 * float(p_value_upper(observed, replicated)))


def true_model_groups_p(tables, truth, data, rep: int) -> tuple[float, float]:
    """(p after Bonferroni over 8 sources, phi) of the groups' averages when the rest is replaced by the true
    class model: the check's chi-square discrepancy against averages drawn around the true shares' logits."""
    from scipy.special import softmax

    from bayes_wsc.criticism import omnibus
    from bayes_wsc.models.combined.checks import CONFLICT_REPLICATES

    x = tables["items"][[c for c in tables["items"].columns if c.startswith("x")]].to_numpy(float)
    q1 = softmax(x @ truth.W.T + truth.b, axis=1)[:, 1]
    member = data.item_group >= 0
    share = (np.bincount(data.item_group[member], weights=q1[member], minlength=data.n_groups)
             / np.bincount(data.item_group[member], minlength=data.n_groups))
    replicated = (np.log(share) - np.log1p(-share)
                  + np.random.default_rng(rep).normal(0, 1 / np.sqrt(10.0), (CONFLICT_REPLICATES, data.n_groups)))
    row = omnibus("groups", data.group_he, replicated, list(data.group_names), "group", "", "")
    return min(1.0, 8 * row.p_value), row.effect


def groups_detail(reps, prior_sd: float, also_without=()) -> pd.DataFrame:
    """Why honest group averages are flagged: per replicate and group, the observed average, the logit of the
    group's share under the true class model, and under the rest's fit (Laplace, the groups held out, at
    `prior_sd`, and the sources `also_without` left out too): the draws' mean and sd and the MAP's value (the
    plug-in)."""
    from scipy.special import softmax

    from bayes_wsc.models.combined.checks import _rest_classes, rest_fit
    from bayes_wsc.models.combined.model import CombinedClassifier
    from bayes_wsc.models.combined.simulate import data_from_tables, simulate_combined

    def logit_shares(q, data):
        member = data.item_group >= 0
        share = np.stack([np.bincount(data.item_group[member], weights=qq[member, 1], minlength=data.n_groups)
                          for qq in q]) / np.bincount(data.item_group[member], minlength=data.n_groups)
        return np.log(share) - np.log1p(-share)

    rows = []
    for rep in reps:
        tables, truth, _ = simulate_combined(200, 2, 2, seed=1000 + rep, n_groups=4)
        data = data_from_tables(tables)
        rest = data.without("groups")
        for source in also_without:
            rest = rest.without(source)
        est = CombinedClassifier(progressbar=False, checks=False, conflict_check=True, prior_sd=prior_sd)
        laplace = logit_shares(_rest_classes(rest_fit(est, rest, "laplace"), rest)[1], data)
        plug_in = logit_shares(_rest_classes(rest_fit(est, rest, "map"), rest)[1], data)[0]
        x = tables["items"][[c for c in tables["items"].columns if c.startswith("x")]].to_numpy(float)
        true = logit_shares(softmax(x @ truth.W.T + truth.b, axis=1)[None], data)[0]
        for g in range(data.n_groups):
            rows.append({"rep": rep, "prior_sd": prior_sd, "also_without": ",".join(also_without), "group": g,
                         "observed": data.group_he[g], "true": true[g], "rest_map": plug_in[g],
                         "rest_mean": laplace[:, g].mean(), "rest_sd": laplace[:, g].std()})
        print(pd.DataFrame(rows[-data.n_groups:]).round(2).to_string(index=False), flush=True)
    return pd.DataFrame(rows)


def pair_calibration(reps, n_pseudo_bags: int = 5, bag_size: int = 6, ci: float = 0.9) -> pd.DataFrame:
    """What the pairs' weighting does to the full fit (honest data, Laplace, 400 draws), both ways on the same
    data: the accuracy and log loss of each item's class (given its features, labels and votes, the posterior
    mean) against the true classes of the items without a hand label; the 90% central interval and the
    randomized PIT of the class-1 count of pseudo-bags of `bag_size` items in no bag (their counts unseen by
    the fit: the predictive is the draws' mixture of each item's class, exact per draw); and how far the
    posterior is from the truth in its own sds (the groups' class shares on the logit scale, the weights W).
    One row per replicate, weighting and pseudo-bag."""
    from scipy.special import softmax

    from bayes_wsc.models.combined.checks import _rest_classes
    from bayes_wsc.models.combined.model import CombinedClassifier, count_logp
    from bayes_wsc.models.combined.simulate import data_from_tables, simulate_combined

    rows = []
    for rep in reps:
        tables, truth, names = simulate_combined(200, 2, 2, seed=1000 + rep, n_groups=4)
        data = data_from_tables(tables)
        z = np.searchsorted(np.asarray(data.classes), np.asarray(names, dtype=str))
        rng = np.random.default_rng(rep)
        free = rng.permutation(np.flatnonzero(data.item_bag < 0))[:n_pseudo_bags * bag_size]
        pseudo = free.reshape(n_pseudo_bags, bag_size)
        unlabelled = data.label < 0
        x = tables["items"][[c for c in tables["items"].columns if c.startswith("x")]].to_numpy(float)
        true_q1 = softmax(x @ truth.W.T + truth.b, axis=1)[:, 1]
        member = data.item_group >= 0

        def logit_shares(q1):
            share = (np.bincount(data.item_group[member], weights=q1[member], minlength=data.n_groups)
                     / np.bincount(data.item_group[member], minlength=data.n_groups))
            return np.log(share) - np.log1p(-share)

        for weighting in (False, True):
            est = CombinedClassifier(progressbar=False, checks=False, method="laplace", draws=400, seed=rep,
                                     pair_weighting=weighting).fit(data)
            r, q = _rest_classes(est, data)
            mean = r.mean(axis=0)
            p_true = np.clip(mean[np.arange(data.n_items), z], 1e-12, 1)[unlabelled]
            accuracy = float((mean.argmax(axis=1) == z)[unlabelled].mean())
            shares = np.stack([logit_shares(qq[:, 1]) for qq in q])
            share_error = np.abs(shares.mean(axis=0) - logit_shares(true_q1)) / shares.std(axis=0)
            W = np.asarray(est.idata_.posterior["W"].values, float).reshape(-1, *truth.W.shape)
            W_error = np.abs(W.mean(axis=0) - truth.W) / W.std(axis=0)
            for g, items in enumerate(pseudo):
                log_r = np.log(np.clip(r[:, items], 1e-300, 1))
                pmf = np.exp([count_logp(log_r, np.array([bag_size - c, c])) for c in range(bag_size + 1)]).mean(1)
                cdf = np.cumsum(pmf)
                observed = int(z[items].sum())
                low, high = int(np.searchsorted(cdf, (1 - ci) / 2)), int(np.searchsorted(cdf, 1 - (1 - ci) / 2))
                pit = (cdf[observed] - pmf[observed]) + rng.random() * pmf[observed]
                rows.append({"rep": rep, "pair_weighting": weighting, "pseudo_bag": g, "observed": observed,
                             "low": low, "high": high, "covered": low <= observed <= high,
                             "pit": pit, "pit_in_band": (1 - ci) / 2 <= pit <= 1 - (1 - ci) / 2,
                             "accuracy": accuracy, "log_loss": float(-np.log(p_true).mean()),
                             "share_error_sds": float(share_error.mean()), "W_error_sds": float(W_error.mean()),
                             "alpha": est.idata_.posterior["alpha"].values.mean(axis=(0, 1)).round(3).tolist()})
        print(pd.DataFrame(rows[-2 * n_pseudo_bags:]).groupby("pair_weighting")[
            ["accuracy", "log_loss", "covered", "pit_in_band", "share_error_sds", "W_error_sds"]].mean().round(3)
            .to_string(), flush=True)
    return pd.DataFrame(rows)


def pairs_magnitude(reps, step: float = 1e-4) -> pd.DataFrame:
    """The composite-likelihood magnitude adjustment of the pairs' term, at the true parameters of each
    replicate (honest data; the class model's weights and intercept on the standardized features, the experts'
    alpha and beta; the annotators' confusion held at the truth): the pairs' scores s_p (finite differences of
    each pair's unit), H = minus the Hessian of their sum, J = sum over clusters of pairs linked by shared items
    of (sum of the cluster's scores)(...)^T (what the scores' dependence adds), and J_indep = sum_p s_p s_p^T (as
    if independent). Printed: k = p / tr(H^-1 J), the adjustment that makes the composite posterior's curvature
    match the scores' variability, over the replicates' means of H and J (each replicate's is noisy)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from bayes_wsc.models.combined.model import unit_log_likelihood, unit_names
    from bayes_wsc.models.combined.simulate import _confusion, data_from_tables, simulate_combined

    rows, H_all, J_all, J_indep_all = [], [], [], []
    for rep in reps:
        tables, truth, _ = simulate_combined(200, 2, 2, seed=1000 + rep, n_groups=4)
        data = data_from_tables(tables)
        is_pair = np.array([n.startswith("pair") for n in unit_names(data)])
        mean, scale = data.scaling.mean, data.scaling.scale
        W_std, b_std = truth.W * scale[None, :], truth.b + truth.W @ mean
        confusion = np.stack([_confusion(a, 2) for a in truth.accuracy])[None]
        theta0 = np.r_[W_std[1], b_std[1], truth.alpha, truth.beta]

        def pair_units(theta):
            w1, b1 = theta[:2], theta[2]
            params = {"W": np.stack([-w1, w1])[None], "b": np.array([[-b1, b1]]) , "confusion": confusion,
                      "alpha": theta[3:5][None], "beta": theta[5:7][None]}
            return unit_log_likelihood(data, params)[0, is_pair]

        def scores(theta):
            out = np.empty((is_pair.sum(), theta.size))
            for i in range(theta.size):
                e = np.zeros(theta.size)
                e[i] = step
                out[:, i] = (pair_units(theta + e) - pair_units(theta - e)) / (2 * step)
            return out

        s = scores(theta0)
        H = np.empty((theta0.size, theta0.size))
        for i in range(theta0.size):
            e = np.zeros(theta0.size)
            e[i] = 1e-3
            H[:, i] = -(scores(theta0 + e).sum(0) - scores(theta0 - e).sum(0)) / 2e-3
        H = (H + H.T) / 2
        n_pairs = data.pairs.shape[0]
        graph = coo_matrix((np.ones(n_pairs), (data.pairs[:, 0], data.pairs[:, 1])), shape=(data.n_items,) * 2)
        _, component = connected_components(graph, directed=False)
        cluster = component[data.pairs[:, 0]]
        summed = np.stack([s[cluster == c].sum(0) for c in np.unique(cluster)])
        J, J_indep = summed.T @ summed, s.T @ s
        H_all.append(H), J_all.append(J), J_indep_all.append(J_indep)
        rows.append({"rep": rep, "pairs": n_pairs, "clusters": np.unique(cluster).size,
                     "largest_cluster": int(np.bincount(cluster).max()),
                     "k": theta0.size / np.trace(np.linalg.solve(H, J)),
                     "k_indep": theta0.size / np.trace(np.linalg.solve(H, J_indep))})
    H_all, J_all, J_indep_all = (np.asarray(m) for m in (H_all, J_all, J_indep_all))
    p = H_all.shape[1]

    def k_of(chosen):
        H = H_all[chosen].mean(axis=0)
        return (p / np.trace(np.linalg.solve(H, J_all[chosen].mean(axis=0))),
                p / np.trace(np.linalg.solve(H, J_indep_all[chosen].mean(axis=0))))

    everything = np.arange(len(rows))
    k, k_indep = k_of(everything)
    rng = np.random.default_rng(0)
    boot = np.array([k_of(rng.choice(everything, everything.size)) for _ in range(1000)])
    low, high = np.percentile(boot, [2.5, 97.5], axis=0)
    print(f"over {len(rows)} replicates: k = {k:.3f} (bootstrap over replicates 95%: {low[0]:.3f}-{high[0]:.3f}; "
          f"scores summed within clusters of pairs that share items), {k_indep:.3f} ({low[1]:.3f}-{high[1]:.3f}; "
          f"scores as if independent)")
    return pd.DataFrame(rows)


def truth_only(reps) -> pd.DataFrame:
    """Per replicate, what the true class model says of the honest groups' averages and of the wrong bags (no
    fit): the check's statistics with the rest replaced by the truth."""
    from bayes_wsc.models.combined.simulate import data_from_tables, simulate_combined

    rows = []
    for rep in reps:
        tables, truth, _ = simulate_combined(200, 2, 2, seed=1000 + rep, n_groups=4)
        honest = data_from_tables(tables)
        wrong = data_from_tables(corrupt(tables, "wrong_bags", np.random.default_rng(rep)))
        groups_p, groups_phi = true_model_groups_p(tables, truth, honest, rep)
        rows.append({"rep": rep, "groups_p": groups_p, "groups_phi": groups_phi,
                     "bags_p": true_model_bags_p(tables, truth, wrong, rep),
                     "counts_moved": counts_moved(honest, wrong)})
    return pd.DataFrame(rows)


def bags_detail(reps) -> pd.DataFrame:
    """Why a wrong-bags case is missed: per replicate and bag, the observed and true class-1 counts, the other
    sources' predictive of the count (the MAP without the bags: mean and sd), its exact two-sided tail
    probability of the observed count, the same under the true class model softmax(x W^T) (features only),
    and the source's p-values (before Bonferroni) by the chi-square discrepancy the check used before and by
    the counts' surprise it uses now."""
    from scipy.special import softmax

    from bayes_wsc.criticism import omnibus
    from bayes_wsc.models.combined.checks import (CONFLICT_REPLICATES, _draw, _rest_classes, rest_fit,
                                                  score_source)
    from bayes_wsc.models.combined.model import CombinedClassifier
    from bayes_wsc.models.combined.simulate import data_from_tables, simulate_combined

    rows = []
    for rep in reps:
        tables, truth, _ = simulate_combined(200, 2, 2, seed=1000 + rep, n_groups=4)
        honest = data_from_tables(tables)
        data = data_from_tables(corrupt(tables, "wrong_bags", np.random.default_rng(rep)))
        rest = data.without("bags")
        fit = rest_fit(CombinedClassifier(progressbar=False, checks=False, conflict_check=True), rest, "map")
        r = _rest_classes(fit, rest)[0][0]
        x = tables["items"][[c for c in tables["items"].columns if c.startswith("x")]].to_numpy(float)
        true_q = softmax(x @ truth.W.T + truth.b, axis=1)
        rng = np.random.default_rng(rep)
        inside = data.item_bag >= 0
        drawn = _draw(np.broadcast_to(r[inside], (CONFLICT_REPLICATES, *r[inside].shape)), rng)
        replicated = np.stack([np.stack([np.bincount(drawn[s, data.item_bag[inside] == g], minlength=2)
                                         for g in range(data.n_bags)]) for s in range(CONFLICT_REPLICATES)])
        chi_square = omnibus("bags", data.bag_counts, replicated.astype(float), list(range(2 * data.n_bags)),
                             "count", "", "")
        surprise_p, surprise, *_ = score_source("bags", data, fit, rest, np.random.default_rng(rep))
        for g in range(data.n_bags):
            members = data.item_bag == g
            observed = int(data.bag_counts[g, 1])
            rows.append({"rep": rep, "bag": g, "observed": observed, "true": int(honest.bag_counts[g, 1]),
                         "rest_mean": r[members, 1].sum(), "rest_sd": np.sqrt((r[members, 1] * r[members, 0]).sum()),
                         "tail_rest": exact_tail(r[members, 1], observed),
                         "tail_true_model": exact_tail(true_q[members, 1], observed),
                         "chi_square_phi": chi_square.effect, "chi_square_p": chi_square.p_value,
                         "surprise_nats": surprise, "surprise_p": surprise_p})
        print(pd.DataFrame(rows[-data.n_bags:]).round(3).to_string(index=False), flush=True)
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--first-rep", type=int, default=0, help="replicates first-rep .. first-rep + reps - 1")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--out", default=str(Path(__file__).parent / "out" / "combined_conflict.csv"))
    parser.add_argument("--bags-detail", action="store_true", help="only the wrong-bags diagnosis (`bags_detail`)")
    parser.add_argument("--predictive", default="laplace",
                        help="the rest's predictive, comma-separated: laplace (the check's default), map (plug-in)")
    parser.add_argument("--truth-only", action="store_true", help="only the true class model's verdicts (`truth_only`)")
    parser.add_argument("--groups-detail", action="store_true", help="only the groups' diagnosis (`groups_detail`)")
    parser.add_argument("--prior-sd", type=float, default=1.0, help="the fit's prior_sd for --groups-detail")
    parser.add_argument("--pair-weighting", action="store_true",
                        help="fit with the pairs' item weights (`CombinedClassifier(pair_weighting=True)`)")
    parser.add_argument("--magnitude", action="store_true",
                        help="only the pairs' composite-likelihood magnitude adjustment at the truth (`pairs_magnitude`)")
    parser.add_argument("--calibration", action="store_true",
                        help="only the pairs' weighting's calibration (`pair_calibration`), both ways")
    parser.add_argument("--also-without", default="", help="--groups-detail: sources left out of the rest too")
    parser.add_argument("--bag-size", type=int, default=6,
                        help="items per bag in the simulated data (the study's 6 unless given): how the bags' power "
                             "grows with what a swap can move")
    args = parser.parse_args()
    if args.groups_detail:
        groups_detail(range(args.first_rep, args.first_rep + args.reps), args.prior_sd,
                      [w for w in args.also_without.split(",") if w]).to_csv(args.out, index=False)
        return
    if args.magnitude:
        frame = pairs_magnitude(range(args.first_rep, args.first_rep + args.reps))
        print(frame.describe().round(3).to_string())
        frame.to_csv(args.out, index=False)
        return
    if args.calibration:
        frame = pair_calibration(range(args.first_rep, args.first_rep + args.reps))
        frame.to_csv(args.out, index=False)
        print(frame.groupby("pair_weighting")[["accuracy", "log_loss", "covered", "pit_in_band",
                                               "share_error_sds", "W_error_sds"]].mean().round(3).to_string())
        return
    if args.truth_only:
        frame = truth_only(range(args.first_rep, args.first_rep + args.reps))
        print(frame.round(4).to_string(index=False))
        frame.to_csv(args.out, index=False)
        return
    if args.bags_detail:
        bags_detail(range(args.first_rep, args.first_rep + args.reps)).to_csv(args.out, index=False)
        return
    from bayes_wsc.models.combined.checks import source_conflict
    from bayes_wsc.models.combined.model import CombinedClassifier
    from bayes_wsc.models.combined.simulate import data_from_tables, simulate_combined

    rows = []
    for rep in range(args.first_rep, args.first_rep + args.reps):
        tables, truth, _ = simulate_combined(200, 2, 2, seed=1000 + rep, n_groups=4, bag_size=args.bag_size)
        for scenario in args.scenarios.split(","):
            data = data_from_tables(corrupt(tables, scenario, np.random.default_rng(rep)))
            honest = data_from_tables(tables)
            est = CombinedClassifier(progressbar=False, checks=False, conflict_check=True,
                                     pair_weighting=args.pair_weighting).fit(data)
            target = CORRUPTED.get(scenario)
            truth_p = true_model_bags_p(tables, truth, data, rep) if scenario in BAG_SCENARIOS else np.nan
            for predictive in args.predictive.split(","):
                start = time.time()
                row, *information = source_conflict(est, data, seed=rep, predictive=predictive)
                near = information[0].message if information and information[0].message.startswith("Near") else ""
                rows.append({"rep": rep, "scenario": scenario, "predictive": predictive, "bag_size": args.bag_size,
                             "pair_weighting": args.pair_weighting, "flagged": row.flagged,
                             "p_value": row.p_value, "effect": row.effect,
                             "names_source": bool(target and f"Source {target} " in row.message),
                             "near_chance": near, "names_near_chance": bool(target and f" {target} (" in near),
                             "counts_moved": counts_moved(honest, data), "true_model_bags_p": truth_p,
                             "seconds": time.time() - start, "message": row.message})
                print(f"{rep} {scenario} {predictive}: flagged={row.flagged} {row.message[:120]} | {near[:100]}",
                      flush=True)
                pd.DataFrame(rows).to_csv(args.out, index=False)
    table = pd.DataFrame(rows).groupby(["predictive", "scenario"]).agg(
        cases=("flagged", "size"), flagged=("flagged", "sum"), names_corrupted_source=("names_source", "sum"),
        near_chance=("near_chance", lambda m: int((m != "").sum())), names_it_near_chance=("names_near_chance", "sum"),
        seconds=("seconds", "median"))
    print(table.to_string())
    frame = pd.DataFrame(rows)
    for scenario in BAG_SCENARIOS:
        bags = frame[frame["scenario"] == scenario].assign(
            true_model_sees=lambda f: f["true_model_bags_p"] < 0.05)
        if len(bags):
            print(f"{scenario} by how wrong the bags are (items' worth of counts moved):")
            print(bags.groupby(["predictive", "counts_moved"]).agg(
                cases=("flagged", "size"), flagged=("flagged", "sum"), named=("names_source", "sum")).to_string())
            print(f"{scenario} by whether the true class model finds the counts improbable (p < 0.05 after "
                  "Bonferroni over 8):")
            print(bags.groupby(["predictive", "true_model_sees"]).agg(
                cases=("flagged", "size"), flagged=("flagged", "sum"), named=("names_source", "sum")).to_string())
    for (predictive, scenario), part in frame.groupby(["predictive", "scenario"]):
        low, high = clopper_pearson(int(part["flagged"].sum()), len(part))
        print(f"{predictive} {scenario}: flagged {int(part['flagged'].sum())} of {len(part)}, "
              f"Clopper-Pearson 95% {low:.3f}-{high:.3f}")


if __name__ == "__main__":
    main()
