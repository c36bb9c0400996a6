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

DATASETS = ("breast_cancer", "wine", "iris")
CASES = {1: (0.95, 0.85, 0.75, 0.65, 0.55), 2: (0.9, 0.9, 0.9, 0.9, 0.9)}
METHODS = ("kmeans", "pckmeans", "mpckmeans", "paper", "bayes_map", "bayes_nuts", "paper+links", "bayes_map+links",
           "bayes_nuts+links")
LABELS = {"kmeans": "KMeans", "pckmeans": "majority vote + PCKMeans", "mpckmeans": "majority vote + MPCKMeans",
          "paper": "paper's eq. 8 (point estimate)", "bayes_map": "Bayesian, MAP", "bayes_nuts": "Bayesian, NUTS"}
LABELS.update({f"{m}+links": f"{LABELS[m]}, + own links" for m in ("paper", "bayes_map", "bayes_nuts")})
COLORS = {"kmeans": "black", "pckmeans": "#2ca02c", "mpckmeans": "#9467bd", "paper": "#7f7f7f", "bayes_map": "#ff7f0e",
          "bayes_nuts": "#1f5fa8"}
COLORS.update({f"{m}+links": COLORS[m] for m in ("paper", "bayes_map", "bayes_nuts")})
CI = 0.90
NMI_COLUMNS = ["dataset", "case", "n_constraints", "rep", "method", "nmi", "seconds", "map_seconds", "nuts_seconds",
               "warnings", "max_rhat"]
OMEGA_COLUMNS = ["dataset", "case", "n_constraints", "rep", "method", "expert", "true_omega", "omega", "low", "high"]


def seed_of(dataset: str, case: int, n_constraints: int, rep: int) -> int:
    return int(np.random.SeedSequence([DATASETS.index(dataset), case, n_constraints, rep]).generate_state(1)[0])


def mpckmeans_labels(data, k: int, seed: int):
    """Majority-vote constraints fed to active-semi-supervised-clustering's MPCKMeans; None when it refuses
    them as inconsistent (or ends with an empty cluster). The package sets NumPy's floating-point errors to
    raise when imported: that setting is undone at once, and is in force only while it runs."""
    from bayes_wsc.baselines.experts import majority_vote

    before = np.geterr()
    from active_semi_clustering.exceptions import EmptyClustersException, InconsistentConstraintsException
    from active_semi_clustering.semi_supervised.pairwise_constraints import MPCKMeans

    pairs, link = majority_vote(data)
    ml = [tuple(p) for p in pairs[link == 1].tolist()]
    cl = [tuple(p) for p in pairs[link == 0].tolist()]
    np.random.seed(seed)  # the package draws from NumPy's global generator
    try:
        with np.errstate(all="raise"):
            return MPCKMeans(n_clusters=k).fit(np.asarray(data.features, dtype=float), ml=ml, cl=cl).labels_
    except (InconsistentConstraintsException, EmptyClustersException):
        return None
    finally:
        np.seterr(**before)


def one_setting(dataset, case, n_constraints, rep, *, nuts, draws, tune, chains, mpckmeans=False):
    """Simulate one constraint set and fit every method; returns (nmi rows, omega rows)."""
    from sklearn.metrics import normalized_mutual_info_score

    from bayes_wsc.baselines.experts import kmeans_labels, majority_vote_pckmeans, point_estimate
    from bayes_wsc.data.pairwise import PairwiseConstraints
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.experts import NoisyExperts
    from bayes_wsc.simulate.experts import load_uci, simulate_uci_experts

    items, labels = load_uci(dataset)
    k = len(np.unique(labels))
    seed = seed_of(dataset, case, n_constraints, rep)
    constraints, truth = simulate_uci_experts(labels, n_constraints, CASES[case], item_ids=items["id"], seed=seed)
    data = PairwiseConstraints.from_frames(items, constraints)
    key = {"dataset": dataset, "case": case, "n_constraints": n_constraints, "rep": rep}
    nmi_rows, omega_rows = [], []

    def record(method, labels_hat, seconds, omega=None, low=None, high=None, extra=None):
        nmi_rows.append({**key, "method": method,
                         "nmi": normalized_mutual_info_score(labels, labels_hat, average_method="geometric"),
                         "seconds": seconds, **(extra or {})})
        if omega is not None:
            for m in range(len(omega)):
                omega_rows.append({**key, "method": method, "expert": m + 1, "true_omega": truth.omega[m],
                                   "omega": omega[m], "low": np.nan if low is None else low[m],
                                   "high": np.nan if high is None else high[m]})

    t0 = time.perf_counter()
    record("kmeans", kmeans_labels(data.features, k, seed=seed % 2**31), time.perf_counter() - t0)
    t0 = time.perf_counter()
    record("pckmeans", majority_vote_pckmeans(data, k, seed=seed % 2**31).labels, time.perf_counter() - t0)
    if mpckmeans:
        t0 = time.perf_counter()
        found = mpckmeans_labels(data, k, seed % 2**31)
        if found is None:
            nmi_rows.append({**key, "method": "mpckmeans", "nmi": np.nan, "seconds": time.perf_counter() - t0,
                             "warnings": "failed: inconsistent constraints or an empty cluster"})
        else:
            record("mpckmeans", found, time.perf_counter() - t0)
    t0 = time.perf_counter()
    paper = point_estimate(data, k, seed=seed % 2**31)
    record("paper", paper.labels(data.features), time.perf_counter() - t0, paper.omega)
    record("paper+links", paper.linked_memberships(data).argmax(axis=1), nmi_rows[-1]["seconds"])
    methods = [("bayes_map", "map")] + ([("bayes_nuts", "nuts")] if nuts else [])
    for name, method in methods:
        est = NoisyExperts(n_clusters=k, seed=seed % 2**31, method=method, draws=draws, tune=tune, chains=chains,
                           progressbar=False)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            est.fit(data)
        seconds = time.perf_counter() - t0
        from bayes_wsc import inference

        info = inference.get_attrs(est.idata_)["fit_info"]
        table = est.expert_table(CI).loc[[f"expert{m + 1}" for m in range(5)]]
        extra = {"map_seconds": info["map"]["seconds"], "nuts_seconds": info.get("nuts", {}).get("seconds", np.nan),
                 "warnings": len(est.diagnostics_)}
        if method == "nuts":
            extra["max_rhat"] = float(est.summary()["r_hat"].max())
        record(name, est.memberships(use_constraints=False)["cluster"].to_numpy(), seconds,
               table["omega"].to_numpy(), table["omega_low"].to_numpy() if method == "nuts" else None,
               table["omega_high"].to_numpy() if method == "nuts" else None, extra)
        record(f"{name}+links", est.memberships()["cluster"].to_numpy(), seconds, extra=extra)
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
                links = method.endswith("+links")
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
    plot_nmi(nmi, OUT / f"{name}_nmi.png")
    plot_omega(omega, omega_at, OUT / f"{name}_omega.png")
    RESULTS.mkdir(exist_ok=True)
    nmi_table(nmi).to_csv(RESULTS / f"{name}_nmi_summary.csv")
    omega_table(omega, omega_at).to_csv(RESULTS / f"{name}_omega_summary.csv", index=False)
    print("\nNMI against the true classes (mean ± sd over repeats, number of repeats):\n")
    print(markdown(nmi_table(nmi)))
    print("\nBayesian against the paper's eq. 8, per constraint set (ahead, within 0.005, behind):\n")
    print(markdown(head_to_head(nmi)))
    print("\nBayesian MAP + own links against the paper's clustering per setting: mean NMI difference and the "
          "Kruskal-Wallis p-value over repeats (the paper's test):\n")
    print(markdown(kruskal_table(nmi, "bayes_map+links", "paper")))
    print(f"\nRecovered omega, case 1, {omega_at} constraints (mean over repeats):\n")
    print(markdown(omega_table(omega, omega_at), index=False))
    fits = nmi[~nmi["method"].str.endswith("+links")]  # a "+links" row is the same fit as its plain row
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
    parser.add_argument("--name", default="experts_uci",
                        help="stem of the out/ and results/ files (another stem keeps a separate run's summaries apart)")
    args = parser.parse_args(argv)
    if args.full:
        args.constraints, args.repeats = "100,200,500,1000,1500,2000", 10
        args.nuts_at, args.nuts_repeats = args.constraints, 10
    OUT.mkdir(parents=True, exist_ok=True)
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
                            draws=args.draws, tune=args.tune, chains=args.chains, mpckmeans=args.mpckmeans)
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
