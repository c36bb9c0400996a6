"""Sec. 3.2 of seed 002 (Chang et al. 2017): UCI data sets with simulated experts.

For each data set bundled with scikit-learn (breast_cancer 569 x 30, K = 2; wine 178 x 13, K = 3;
iris 150 x 4, K = 3), each case (1: alpha = beta = 0.95, 0.85, 0.75, 0.65, 0.55; 2: all 0.9),
each number of constraints 2q and each repeat, the experts are simulated by the paper's protocol
(q must-link and q cannot-link true pairs, common to the five experts, flipped per alpha and beta;
`bayes_wsc.simulate.experts.simulate_uci_experts`) and the items are clustered by

  kmeans      KMeans on the standardized features (no experts)
  pckmeans    the experts' majority vote per pair, fed to PCKMeans
  paper       the paper's own objective (eq. 8) by alternating L-BFGS, 20 restarts
  bayes_map   NoisyExperts, posterior mode, 20 restarts
  bayes_nuts  NoisyExperts, NUTS (4 chains x 1000 draws after 1000 tuning steps, started at the
              MAP), clusters from the posterior mean memberships (only at --nuts-at sizes)
  mpckmeans   with --mpckmeans: the experts' majority vote per pair, fed to MPCKMeans (one diagonal
              metric) of the PyPI package active-semi-supervised-clustering 0.0.1, the paper's
              competitor (Sec. 3.1); that implementation takes the transitive closure of the
              must-links and refuses constraints that contradict it, and such a set is recorded as
              failed (NMI empty)

  copkmeans   with --mpckmeans: the experts' majority vote per pair, fed to COPKMeans of the same
              package (hard constraints: a set it cannot satisfy is recorded as failed)
  bayes_map_random, bayes_map_r100, bayes_map_density  with --variants random,r100,density:
              NoisyExperts MAP with random starts only (kmeans_start=False, the default before
              issue 42), with 100 starts, or with a density of the features (the trial variant
              benchmarks/experts_feature_density.py)

Issue 42 adds `digits` (a random subset of --digits-items of scikit-learn's 1797 8x8 digits, K = 10,
the pixels constant within the subset dropped), `--seed` (a new base seed per run; by default one is
drawn and printed, and every row records it), `--protocol own` (each expert rates its own pairs, a
1/M share of the 2q, so that a pair has one rating: majority votes are single votes) and the
"+graph" rule (the links propagated through the constraint graph by 10 sweeps of belief
propagation, `memberships(sweeps=10)`).

paper, bayes_map and bayes_nuts cluster every item by the features-only rule P(z | x), the
paper's clustering. Each also has a "+links" row: the same fit, with every item conditioned on
the experts' links of its own pairs as well (`NoisyExperts.memberships()`, the default for
training items; for the paper's estimate the same formula at its W, b, alpha, beta).

NMI (geometric normalization, as in the paper's reference [19]) is computed against the true
classes. For paper, bayes_map and bayes_nuts the recovered omega of every expert is recorded
against the true omega (Fig. 3), with the 90% HDI for NUTS.

    python benchmarks/experts_uci.py                  # default grid (about an hour on 2 busy cores)
    python benchmarks/experts_uci.py --full           # the paper's grid: 100, 200, 500, 1000, 1500, 2000
                                                      # constraints, 10 repeats, NUTS at every size

Rows are appended after every fit set to benchmarks/out/experts_uci_nmi.csv and
experts_uci_omega.csv (git-ignored; `--resume` skips finished ones); `--timing` also times the issue's
P4 workload (breast_cancer, 2000 constraints x 5 experts: MAP with 20 restarts three times, NUTS once)
into out/experts_uci_timing.csv. The figures out/experts_uci_nmi.png and out/experts_uci_omega.png,
the summary tables results/experts_uci_nmi_summary.csv and results/experts_uci_omega_summary.csv and
the Markdown tables printed at the end are made from the CSV files (`--summarize` only does that).
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
from output_paths import OUT, RESULTS, require  # noqa: E402

DATASETS = ("breast_cancer", "wine", "iris", "digits")
CASES = {1: (0.95, 0.85, 0.75, 0.65, 0.55), 2: (0.9, 0.9, 0.9, 0.9, 0.9)}
METHODS = ("kmeans", "pckmeans", "mpckmeans", "copkmeans", "paper", "bayes_map", "bayes_map_random", "bayes_map_r100",
           "bayes_map_density", "bayes_nuts", "paper+links", "bayes_map+links", "bayes_map_random+links",
           "bayes_map_r100+links", "bayes_map_density+links", "bayes_nuts+links", "paper+graph", "bayes_map+graph",
           "bayes_map_random+graph", "bayes_map_r100+graph", "bayes_map_density+graph", "bayes_nuts+graph",
           "bayes_map+default")
GRAPH_SWEEPS = 10
PEERS = ("kmeans", "pckmeans", "mpckmeans", "copkmeans")
LABELS = {"kmeans": "KMeans", "pckmeans": "majority vote + PCKMeans", "mpckmeans": "majority vote + MPCKMeans",
          "copkmeans": "majority vote + COPKMeans", "paper": "paper's eq. 8 (point estimate)",
          "bayes_map": "Bayesian, MAP", "bayes_map_random": "Bayesian, MAP, random starts only",
          "bayes_map_r100": "Bayesian, MAP, 100 starts",
          "bayes_map_density": "Bayesian, MAP, + a density of the features (trial variant)",
          "bayes_nuts": "Bayesian, NUTS"}
FITS = ("paper", "bayes_map", "bayes_map_random", "bayes_map_r100", "bayes_map_density", "bayes_nuts")
LABELS.update({f"{m}+links": f"{LABELS[m]}, + own links" for m in FITS})
LABELS.update({f"{m}+graph": f"{LABELS[m]}, + links through the graph" for m in FITS})
LABELS["bayes_map+default"] = "Bayesian, MAP, memberships() default rule"
COLORS = {"kmeans": "black", "pckmeans": "#2ca02c", "mpckmeans": "#9467bd", "copkmeans": "#8c564b", "paper": "#7f7f7f",
          "bayes_map": "#ff7f0e", "bayes_map_random": "#e377c2", "bayes_map_r100": "#bcbd22", "bayes_map_density": "#17becf", "bayes_nuts": "#1f5fa8"}
COLORS.update({f"{m}+{rule}": COLORS[m] for m in FITS for rule in ("links", "graph")})
COLORS["bayes_map+default"] = "#d62728"
CI = 0.90
NMI_COLUMNS = ["dataset", "case", "n_constraints", "rep", "method", "nmi", "seconds", "map_seconds", "nuts_seconds",
               "warnings", "max_rhat", "best_start", "starts_at_best", "log_density", "base_seed", "protocol"]
OMEGA_COLUMNS = ["dataset", "case", "n_constraints", "rep", "method", "expert", "true_omega", "omega", "low", "high"]


def seed_of(dataset: str, case: int, n_constraints: int, rep: int, base: int | None = None) -> int:
    """The seed of one constraint set; `base` (--seed) gives a new set of seeds per run (None: the first run's)."""
    key = [DATASETS.index(dataset), case, n_constraints, rep] + ([] if base is None else [base])
    return int(np.random.SeedSequence(key).generate_state(1)[0])


def load_dataset(dataset: str, seed: int, digits_items: int):
    """(items table, true classes): a UCI data set as `load_uci` gives it, or a random subset of
    `digits_items` of scikit-learn's digits (seeded), its pixels constant within the subset dropped."""
    from bayes_wsc.simulate.experts import load_uci

    if dataset != "digits":
        return load_uci(dataset)
    from sklearn.datasets import load_digits

    bunch = load_digits()
    rows = np.sort(np.random.default_rng(seed).choice(len(bunch.target), digits_items, replace=False))
    x = bunch.data[rows]
    keep = x.std(axis=0) > 0
    items = pd.DataFrame(x[:, keep], columns=[f"pixel{j}" for j in np.flatnonzero(keep)])
    items.insert(0, "id", [f"digits{i}" for i in rows])
    return items, np.asarray(bunch.target[rows], dtype=np.int64)


def own_pairs_experts(labels, n_constraints: int, accuracies, item_ids, seed: int):
    """Each expert rates its own pairs, 1/M of the 2q (half from one class, half from two), flipping a
    share 1 - alpha_m of each kind as the paper's protocol does: every pair has about one rating."""
    from bayes_wsc.simulate.experts import simulate_uci_experts

    frames, truth = [], None
    per_expert = max(2, 2 * (n_constraints // (2 * len(accuracies))))
    for m, a in enumerate(accuracies):
        one, truth_m = simulate_uci_experts(labels, per_expert, (a,), item_ids=item_ids, seed=seed + 7919 * m)
        frames.append(one.assign(expert=f"expert{m + 1}"))
    truth = truth_m
    truth.alpha = truth.beta = np.asarray(accuracies, dtype=float)
    return pd.concat(frames, ignore_index=True), truth


def mpckmeans_labels(data, k: int, seed: int, algorithm: str = "MPCKMeans"):
    """Majority-vote constraints fed to active-semi-supervised-clustering's MPCKMeans (or COPKMeans); None
    when it refuses them as inconsistent (or ends with an empty cluster, or COPKMeans finds no assignment
    that keeps every constraint). The package sets NumPy's floating-point errors to raise when imported:
    that setting is undone at once, and is in force only while it runs."""
    from bayes_wsc.baselines.experts import majority_vote

    before = np.geterr()
    from active_semi_clustering.exceptions import (ClusteringNotFoundException, EmptyClustersException,
                                                   InconsistentConstraintsException)
    from active_semi_clustering.semi_supervised import pairwise_constraints

    pairs, link = majority_vote(data)
    ml = [tuple(p) for p in pairs[link == 1].tolist()]
    cl = [tuple(p) for p in pairs[link == 0].tolist()]
    np.random.seed(seed)  # the package draws from NumPy's global generator
    try:
        with np.errstate(all="raise"):
            model = getattr(pairwise_constraints, algorithm)(n_clusters=k)
            return model.fit(np.asarray(data.features, dtype=float), ml=ml, cl=cl).labels_
    except (InconsistentConstraintsException, EmptyClustersException, ClusteringNotFoundException):
        return None
    finally:
        np.seterr(**before)


def one_setting(dataset, case, n_constraints, rep, *, nuts, draws, tune, chains, mpckmeans=False, base_seed=None,
                protocol="common", variants=(), paper=True, digits_items=500):
    """Simulate one constraint set and fit every method; returns (nmi rows, omega rows)."""
    from sklearn.metrics import normalized_mutual_info_score

    from bayes_wsc.baselines.experts import kmeans_labels, majority_vote_pckmeans, point_estimate
    from bayes_wsc.data.pairwise import PairwiseConstraints
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.experts import NoisyExperts
    from bayes_wsc.simulate.experts import simulate_uci_experts

    seed = seed_of(dataset, case, n_constraints, rep, base_seed)
    items, labels = load_dataset(dataset, seed, digits_items)
    k = len(np.unique(labels))
    if protocol == "own":
        constraints, truth = own_pairs_experts(labels, n_constraints, CASES[case], items["id"], seed)
    else:
        constraints, truth = simulate_uci_experts(labels, n_constraints, CASES[case], item_ids=items["id"], seed=seed)
    data = PairwiseConstraints.from_frames(items, constraints)
    key = {"dataset": dataset, "case": case, "n_constraints": n_constraints, "rep": rep}
    nmi_rows, omega_rows = [], []

    def record(method, labels_hat, seconds, omega=None, low=None, high=None, extra=None):
        nmi_rows.append({**key, "method": method,
                         "nmi": normalized_mutual_info_score(labels, labels_hat, average_method="geometric"),
                         "seconds": seconds, "base_seed": base_seed, "protocol": protocol, **(extra or {})})
        if omega is not None:
            for m in range(len(omega)):
                omega_rows.append({**key, "method": method, "expert": m + 1, "true_omega": truth.omega[m],
                                   "omega": omega[m], "low": np.nan if low is None else low[m],
                                   "high": np.nan if high is None else high[m]})

    t0 = time.perf_counter()
    record("kmeans", kmeans_labels(data.features, k, seed=seed % 2**31), time.perf_counter() - t0)
    t0 = time.perf_counter()
    record("pckmeans", majority_vote_pckmeans(data, k, seed=seed % 2**31).labels, time.perf_counter() - t0)
    for name, algorithm in (("mpckmeans", "MPCKMeans"), ("copkmeans", "COPKMeans")) if mpckmeans else ():
        t0 = time.perf_counter()
        found = mpckmeans_labels(data, k, seed % 2**31, algorithm)
        if found is None:
            nmi_rows.append({**key, "method": name, "nmi": np.nan, "seconds": time.perf_counter() - t0,
                             "base_seed": base_seed, "protocol": protocol,
                             "warnings": "failed: inconsistent constraints, an empty cluster or no assignment"})
        else:
            record(name, found, time.perf_counter() - t0)
    if paper:
        t0 = time.perf_counter()
        estimate = point_estimate(data, k, seed=seed % 2**31)
        record("paper", estimate.labels(data.features), time.perf_counter() - t0, estimate.omega)
        record("paper+links", estimate.linked_memberships(data).argmax(axis=1), nmi_rows[-1]["seconds"])
        record("paper+graph", estimate.linked_memberships(data, GRAPH_SWEEPS).argmax(axis=1), nmi_rows[-1]["seconds"])
    methods = [("bayes_map", "map", {})]
    if "random" in variants:
        methods.append(("bayes_map_random", "map", {"kmeans_start": False}))
    if "r100" in variants:
        methods.append(("bayes_map_r100", "map", {"restarts": 100}))
    if "density" in variants:
        methods.append(("bayes_map_density", "map",
                        {"model_file": str(Path(__file__).resolve().parent / "experts_feature_density.py")}))
    if nuts:
        methods.append(("bayes_nuts", "nuts", {}))
    for name, method, settings in methods:
        est = NoisyExperts(n_clusters=k, seed=seed % 2**31, method=method, draws=draws, tune=tune, chains=chains,
                           progressbar=False, **settings)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            est.fit(data)
        seconds = time.perf_counter() - t0
        from bayes_wsc import inference

        info = inference.get_attrs(est.idata_)["fit_info"]
        table = est.expert_table(CI).loc[[f"expert{m + 1}" for m in range(len(CASES[case]))]]
        lps = np.asarray(info["map"].get("restart_log_densities", [np.nan]), dtype=float)
        extra = {"map_seconds": info["map"]["seconds"], "nuts_seconds": info.get("nuts", {}).get("seconds", np.nan),
                 "warnings": len(est.diagnostics_), "best_start": int(np.nanargmax(lps)),
                 "starts_at_best": int(np.sum(np.nanmax(lps) - lps <= 1e-3 * max(1.0, abs(np.nanmax(lps)) * 1e-6))),
                 "log_density": float(np.nanmax(lps))}
        if method == "nuts":
            extra["max_rhat"] = float(est.summary()["r_hat"].max())
        record(name, est.memberships(use_constraints=False)["cluster"].to_numpy(), seconds,
               table["omega"].to_numpy(), table["omega_low"].to_numpy() if method == "nuts" else None,
               table["omega_high"].to_numpy() if method == "nuts" else None, extra)
        record(f"{name}+links", est.memberships(sweeps=0)["cluster"].to_numpy(), seconds, extra=extra)
        record(f"{name}+graph", est.memberships(sweeps=GRAPH_SWEEPS)["cluster"].to_numpy(), seconds, extra=extra)
        if name == "bayes_map":  # what a user gets: memberships() with its default rule
            record("bayes_map+default", est.memberships()["cluster"].to_numpy(), seconds, extra=extra)
    return nmi_rows, omega_rows


def append(rows, path: Path, columns) -> None:
    if rows:
        frame = pd.DataFrame(rows).reindex(columns=columns)
        frame.to_csv(path, mode="a", header=not path.exists(), index=False)


def markdown(frame: pd.DataFrame, index: bool = True) -> str:
    """A pipe table (pandas' to_markdown needs the optional tabulate package)."""
    frame = frame.reset_index() if index else frame
    cells = [[str(c) for c in frame.columns]] + [["" if pd.isna(v) else str(v) for v in row]
                                                 for row in frame.itertuples(index=False)]
    lines = ["| " + " | ".join(row) + " |" for row in cells]
    lines.insert(1, "|" + "|".join("---" for _ in frame.columns) + "|")
    return "\n".join(lines)


def timing(draws, tune, chains, precision=None) -> pd.DataFrame:
    """The P4 workload: breast_cancer, Case 1, 2000 constraints x 5 experts."""
    from bayes_wsc import inference
    from bayes_wsc.data.pairwise import PairwiseConstraints
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.experts import NoisyExperts
    from bayes_wsc.simulate.experts import load_uci, simulate_uci_experts

    items, labels = load_uci("breast_cancer")
    constraints, _ = simulate_uci_experts(labels, 2000, CASES[1], item_ids=items["id"], seed=2017)
    data = PairwiseConstraints.from_frames(items, constraints)
    rows = []
    for run, method in enumerate(["map", "map", "map", "nuts"]):
        est = NoisyExperts(n_clusters=2, seed=run, method=method, draws=draws, tune=tune, chains=chains,
                           precision=precision, progressbar=False)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            est.fit(data)
        info = inference.get_attrs(est.idata_)["fit_info"]
        row = {"run": run, "method": method, "fit_seconds": time.perf_counter() - t0,
               "optimizer_seconds": info["map"]["seconds"], "restarts": info["map"]["restarts"]}
        if method == "nuts":
            stats = est.idata_.sample_stats
            row.update(sampler_seconds=info["nuts"]["seconds"], precision=info["nuts"]["precision"], chains=chains, draws=draws, tune=tune,
                       mean_tree_depth=float(stats["tree_depth"].mean()), divergences=int(stats["diverging"].sum()),
                       max_rhat=float(est.summary()["r_hat"].max()),
                       min_ess_bulk=float(est.summary()["ess_bulk"].min()))
        rows.append(row)
        print(row, flush=True)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------- summaries
def nmi_table(nmi: pd.DataFrame) -> pd.DataFrame:
    stats = nmi.groupby(["dataset", "case", "n_constraints", "method"])["nmi"].agg(["mean", "std", "count", "size"])

    def cell(r):
        failed = int(r["size"] - r["count"])
        if not r["count"]:
            return f"failed ({failed})"
        text = f"{r['mean']:.3f} ± {0 if np.isnan(r['std']) else r['std']:.3f} ({int(r['count'])})"
        return text + (f", {failed} failed" if failed else "")

    text = stats.apply(cell, axis=1)
    table = text.unstack("method")
    return table[[m for m in METHODS if m in table.columns]]


PAIRINGS = [("bayes_map", "paper"), ("bayes_map+links", "paper"), ("bayes_map+links", "paper+links"),
            ("bayes_nuts+links", "paper")]


def head_to_head(nmi: pd.DataFrame, tol: float = 0.005) -> pd.DataFrame:
    """For each pairing, over the constraint sets where both ran: how often the first is ahead of the
    second by more than `tol`, within `tol`, or behind."""
    wide = nmi.pivot_table(index=["dataset", "case", "n_constraints", "rep"], columns="method", values="nmi")
    rows = []
    for ours, theirs in PAIRINGS:
        if ours not in wide or theirs not in wide:
            continue
        diff = (wide[ours] - wide[theirs]).dropna()
        rows.append({"ours": ours, "theirs": theirs, "sets": len(diff), "ahead": int((diff > tol).sum()),
                     "within": int((diff.abs() <= tol).sum()), "behind": int((diff < -tol).sum()),
                     "mean difference": round(float(diff.mean()), 4)})
    return pd.DataFrame(rows).set_index(["ours", "theirs"])


def peer_table(nmi: pd.DataFrame, ours=("bayes_map+default", "bayes_map", "bayes_map+links", "bayes_map+graph"),
               tol: float = 0.01) -> pd.DataFrame:
    """Per setting: the mean NMI of every peer that ran and of `ours`, the best peer, and the first of
    `ours` (the default) minus the best peer, flagged when it is behind by more than `tol`."""
    means = nmi.groupby(["dataset", "case", "n_constraints", "method"])["nmi"].mean().unstack("method")
    sets = nmi[nmi.method == "kmeans"].groupby(["dataset", "case", "n_constraints"]).size().rename("sets")
    peers = [p for p in PEERS if p in means]
    table = pd.concat([sets, means[peers + [m for m in ours if m in means]].round(3)], axis=1)
    table["best peer"] = means[peers].idxmax(axis=1)
    gap = means[ours[0]] - means[peers].max(axis=1) if ours[0] in means else np.nan
    table["default - best peer"] = np.round(gap, 3)
    table["behind by > 0.01"] = np.where(gap < -tol, "yes", "")
    return table


def kruskal_table(nmi: pd.DataFrame, ours: str, theirs: str) -> pd.DataFrame:
    """Per (dataset, case, constraints): mean NMI of `ours` minus `theirs` and the Kruskal-Wallis p-value."""
    from scipy.stats import kruskal

    rows = {}
    for key, g in nmi.groupby(["dataset", "case", "n_constraints"]):
        a, b = g.loc[g.method == ours, "nmi"].to_numpy(), g.loc[g.method == theirs, "nmi"].to_numpy()
        if len(a) and len(b):
            same = np.allclose(np.concatenate([a, b]), a[0])
            rows[key] = {"difference": round(float(a.mean() - b.mean()), 3),
                         "p": 1.0 if same else round(float(kruskal(a, b).pvalue), 3)}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index = pd.MultiIndex.from_tuples(table.index, names=["dataset", "case", "n_constraints"])
    return table["difference"].astype(str).str.cat(table["p"].map(" (p {:.2f})".format)).unstack("n_constraints")


def omega_table(omega: pd.DataFrame, n_constraints: int) -> pd.DataFrame:
    part = omega[(omega["case"] == 1) & (omega["n_constraints"] == n_constraints)]
    rows = []
    for (dataset, method), g in part.groupby(["dataset", "method"]):
        ranks_ok = [np.array_equal(np.argsort(-r["omega"].to_numpy(), kind="stable"), np.arange(5))
                    for _, r in g.groupby("rep")]
        row = {"dataset": dataset, "method": method, "repeats": len(ranks_ok),
               "true order": f"{sum(ranks_ok)}/{len(ranks_ok)}",
               "mean abs error": round(float(np.mean(np.abs(g["omega"] - g["true_omega"]))), 3)}
        for m in range(1, 6):
            row[f"omega{m} (true {g[g.expert == m]['true_omega'].iloc[0]:.2f})"] = round(
                float(g[g.expert == m]["omega"].mean()), 2)
        if g["low"].notna().any():
            inside = (g["low"] <= g["true_omega"]) & (g["true_omega"] <= g["high"])
            row[f"{CI:.0%} HDI covers truth"] = f"{int(inside.sum())}/{len(inside)}"
        rows.append(row)
    return pd.DataFrame(rows)


def plot_nmi(nmi: pd.DataFrame, path: Path) -> None:
    from bayes_wsc.report.html import new_figure

    datasets = [d for d in DATASETS if d in set(nmi["dataset"])]
    cases = sorted(set(nmi["case"]))
    fig, axes = new_figure(len(cases), len(datasets), width=4.4 * len(datasets), height=3.6 * len(cases),
                           sharey=True)
    for r, case in enumerate(cases):
        for c, dataset in enumerate(datasets):
            ax = axes[r, c]
            part = nmi[(nmi.dataset == dataset) & (nmi.case == case)]
            for method in METHODS:
                g = part[part.method == method].groupby("n_constraints")["nmi"]
                if not len(g):
                    continue
                mean, std = g.mean(), g.std().fillna(0)
                if method == "kmeans":
                    ax.axhline(mean.mean(), color="black", ls="--", lw=1, label=LABELS[method])
                    continue
                links = "+" in method
                ax.errorbar(mean.index, mean.values, yerr=std.values, marker="s" if links else "o", ms=4,
                            capsize=3, lw=1.2, color=COLORS[method], label=LABELS[method],
                            ls="none" if method.startswith("bayes_nuts") and len(mean) < 3 else ("--" if links else "-"))
            ax.set_title(f"{dataset}, case {case}", fontsize=10)
            ax.set_xlabel("number of constraints")
            ax.grid(alpha=0.3)
            if c == 0:
                ax.set_ylabel("NMI with the true classes")
    axes[0, min(1, axes.shape[1] - 1)].legend(fontsize=7, frameon=False, loc="lower right")
    fig.savefig(path, dpi=110)


def plot_omega(omega: pd.DataFrame, n_constraints: int, path: Path) -> None:
    from bayes_wsc.report.html import new_figure

    part = omega[(omega["case"] == 1) & (omega["n_constraints"] == n_constraints)]
    datasets = [d for d in DATASETS if d in set(part["dataset"])]
    fig, axes = new_figure(1, len(datasets), width=4.4 * len(datasets), height=3.8, sharey=True)
    offsets = {"paper": -0.2, "bayes_map": 0.0, "bayes_nuts": 0.2}
    for ax, dataset in zip(axes[0], datasets):
        g = part[part.dataset == dataset]
        truth = g.groupby("expert")["true_omega"].first()
        ax.plot(truth.index, truth.values, "s", color="#d62728", ms=7, label="true omega", zorder=3)
        for method, dx in offsets.items():
            h = g[g.method == method]
            if not len(h):
                continue
            x = h["expert"].to_numpy() + dx + np.random.default_rng(0).uniform(-0.05, 0.05, len(h))
            if method == "bayes_nuts":
                ax.vlines(x, h["low"], h["high"], color=COLORS[method], lw=1.5, alpha=0.7)
            ax.plot(x, h["omega"], "o" if method == "bayes_nuts" else ("D" if method == "bayes_map" else "^"),
                    color=COLORS[method], ms=4, mfc="white" if method != "bayes_nuts" else COLORS[method],
                    label=LABELS[method] + (f" ({CI:.0%} HDI)" if method == "bayes_nuts" else ""))
        ax.set_xticks(range(1, 6), [f"{a:.2f}" for a in CASES[1]])
        ax.set_xlabel("expert (alpha = beta)")
        ax.set_title(f"{dataset}, case 1, {n_constraints} constraints", fontsize=10)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("expert weight omega")
    axes[0, 0].legend(fontsize=7, frameon=False)
    fig.savefig(path, dpi=110)


def summarize(omega_at: int, name: str = "experts_uci") -> None:
    make = "python benchmarks/experts_uci.py --resume" + ("" if name == "experts_uci" else f" --name {name}")
    nmi = pd.read_csv(require(OUT / f"{name}_nmi.csv", make))
    omega = pd.read_csv(require(OUT / f"{name}_omega.csv", make))
    has_omega = bool(((omega["case"] == 1) & (omega["n_constraints"] == omega_at)).any())
    plot_nmi(nmi, OUT / f"{name}_nmi.png")
    if has_omega:
        plot_omega(omega, omega_at, OUT / f"{name}_omega.png")
    RESULTS.mkdir(exist_ok=True)
    nmi_table(nmi).to_csv(RESULTS / f"{name}_nmi_summary.csv")
    peer_table(nmi).to_csv(RESULTS / f"{name}_peers_summary.csv")
    if has_omega:
        omega_table(omega, omega_at).to_csv(RESULTS / f"{name}_omega_summary.csv", index=False)
    print("\nNMI against the true classes (mean ± sd over repeats, number of repeats):\n")
    print(markdown(nmi_table(nmi)))
    print("\nThe package's default against its peers (mean NMI over the sets):\n")
    print(markdown(peer_table(nmi)))
    if "paper" in set(nmi["method"]):  # --no-paper runs have no eq. 8 to compare with
        print("\nBayesian against the paper's eq. 8, per constraint set (ahead, within 0.005, behind):\n")
        print(markdown(head_to_head(nmi)))
        print("\nBayesian MAP + own links against the paper's clustering per setting: mean NMI difference and the "
              "Kruskal-Wallis p-value over repeats (the paper's test):\n")
        print(markdown(kruskal_table(nmi, "bayes_map+links", "paper")))
    if has_omega:
        print(f"\nRecovered omega, case 1, {omega_at} constraints (mean over repeats):\n")
        print(markdown(omega_table(omega, omega_at), index=False))
    fits = nmi[~nmi["method"].str.contains("+", regex=False)]  # a "+rule" row is the same fit as its plain row
    seconds = fits.groupby(["dataset", "method"])["seconds"].median().unstack()
    print("\nMedian seconds per fit (whole fit, including compilation):\n")
    print(markdown(seconds.round(1)))
    timing_path = OUT / f"{name}_timing.csv"
    if timing_path.exists():
        print("\nP4 workload (breast_cancer, 2000 constraints x 5 experts):\n")
        print(markdown(pd.read_csv(timing_path).round(2), index=False))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--cases", default="1,2")
    parser.add_argument("--constraints", default="100,500,1000,2000", help="numbers of constraints 2q")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--nuts-at", default="500", help="constraint numbers at which NUTS also runs")
    parser.add_argument("--nuts-repeats", type=int, default=1, help="repeats (the first ones) that also run NUTS")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--omega-at", type=int, default=500, help="constraints of the omega figure (Fig. 3: 500)")
    parser.add_argument("--full", action="store_true",
                        help="the paper's grid: 100,200,500,1000,1500,2000 constraints, 10 repeats, NUTS everywhere")
    parser.add_argument("--timing", action="store_true", help="also time the P4 workload")
    parser.add_argument("--precision", choices=("float32", "float64"), default=None,
                        help="NUTS arithmetic for --timing (default: the model's)")
    parser.add_argument("--resume", action="store_true", help="keep the CSV files and skip finished settings")
    parser.add_argument("--summarize", action="store_true", help="only make the figures and tables from the CSVs")
    parser.add_argument("--mpckmeans", action="store_true", help="also majority vote + MPCKMeans (its package needed)")
    parser.add_argument("--seed", type=int, default=None,
                        help="base seed of this run's constraint sets (default: a new one, printed)")
    parser.add_argument("--protocol", choices=("common", "own"), default="common",
                        help="common: the paper's (every expert rates the same 2q pairs); own: each its own")
    parser.add_argument("--variants", default="",
                        help="also fit: random (random starts only), r100 (100 starts), density (trial variant)")
    parser.add_argument("--no-paper", action="store_true", help="skip the paper's eq. 8")
    parser.add_argument("--digits-items", type=int, default=500, help="size of the random digits subset")
    parser.add_argument("--name", default="experts_uci",
                        help="stem of the out/ and results/ files (another stem keeps a separate run's summaries apart)")
    args = parser.parse_args(argv)
    if args.full:
        args.constraints, args.repeats = "100,200,500,1000,1500,2000", 10
        args.nuts_at, args.nuts_repeats = args.constraints, 10
    OUT.mkdir(parents=True, exist_ok=True)
    if args.seed is None and not args.summarize:
        args.seed = int(np.random.SeedSequence().generate_state(1)[0] % 2**31)
        print(f"base seed {args.seed} (--seed {args.seed} repeats this run)", flush=True)
    nmi_path, omega_path = OUT / f"{args.name}_nmi.csv", OUT / f"{args.name}_omega.csv"
    if not args.summarize:
        if not args.resume:
            for path in (nmi_path, omega_path, OUT / f"{args.name}_timing.csv"):
                path.unlink(missing_ok=True)
        done = set()
        if args.resume and nmi_path.exists():
            done = set(map(tuple, pd.read_csv(nmi_path)[["dataset", "case", "n_constraints", "rep"]].values.tolist()))
        nuts_at = {int(n) for n in args.nuts_at.split(",") if n}
        for dataset in args.datasets.split(","):
            for case in (int(c) for c in args.cases.split(",")):
                for n in (int(n) for n in args.constraints.split(",")):
                    for rep in range(args.repeats):
                        if (dataset, case, n, rep) in done:
                            continue
                        t0 = time.perf_counter()
                        nmi_rows, omega_rows = one_setting(
                            dataset, case, n, rep, nuts=n in nuts_at and rep < args.nuts_repeats,
                            draws=args.draws, tune=args.tune, chains=args.chains, mpckmeans=args.mpckmeans,
                            base_seed=args.seed, protocol=args.protocol,
                            variants=[v for v in args.variants.split(",") if v], paper=not args.no_paper,
                            digits_items=args.digits_items)
                        append(nmi_rows, nmi_path, NMI_COLUMNS)
                        append(omega_rows, omega_path, OMEGA_COLUMNS)
                        scores = " ".join(f"{r['method']}={r['nmi']:.3f}" for r in nmi_rows)
                        print(f"{dataset} case {case} n={n} rep {rep}: {scores} ({time.perf_counter() - t0:.0f} s)",
                              flush=True)
        if args.timing:
            timing(args.draws, args.tune, args.chains, args.precision).to_csv(OUT / f"{args.name}_timing.csv", index=False)
    summarize(args.omega_at, args.name)


if __name__ == "__main__":
    main()
