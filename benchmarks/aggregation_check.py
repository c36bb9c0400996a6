"""The first model's aggregation-bias check (`bayes_wsc.checks.aggregation`) against its targets.

    python benchmarks/aggregation_check.py                    # all parts, about 15 minutes on 2 cores
    python benchmarks/aggregation_check.py --parts cces,sims --alternatives
    python benchmarks/aggregation_check.py --parts cces --specs paper,religion,ideology \\
        --groupings state,state_gender,state_age,state_age_gender \\
        --cces-out benchmarks/out/aggregation_check_cces_sweep.csv
    python benchmarks/aggregation_check.py --parts cost --repeats 3

Parts:
cces    CCES 2016 (`load_cces2016`), the protocol of table1_real_data.py: 10 random halvings of the
        states; on each training half the check runs before any individual label is looked at
        (exact shares, WH = inf, Dirichlet(2) as in that benchmark), and then the latent model's
        predictions of the held-out states' respondents are scored against the null model, to show
        what a flag foretells. Groupings: `state`, and `state_age_gender` (state x age band x gender;
        age bands 18-29, 30-44, 45-64, 65+), optionally `state_gender` and `state_age`.
        `--alternatives` adds the label-free checks the issue measured, for comparison: the
        decision-flip share of rho between fits on two halves of the groups (5 halvings; the issue's
        fixed threshold 0.13) and the same with a reference from the model (the flip share on 20 data
        sets simulated from the fit, fitted alike), both with the paper's EM as the fitter.
sims    data simulated from the first model at the Sec. 5 sizes (500 groups of 100 items, 15 bins,
        HE noise matched to WH = 10, `bayes_wsc.simulate`), 40 replicates, default settings.
cost    seconds of one MAP fit of the full data (its program built, as for new data) and of the
        check run after it (which refits the MAP from the cached program), and of the check handed
        the fit's MAP (`map_point`, no refit), at the Sec. 5 size and the headline scale (10,000
        groups, 1M items, 30 bins); median of `--repeats` runs.

Groups and HE (logit of each group's vote share) are built as in table1_real_data.py.

Rows per split and per simulation go to benchmarks/out/aggregation_check_{cces,sims}.csv (git-ignored),
the summary tables to benchmarks/results/aggregation_check_{cces_summary,cost}.csv; the figures are in
benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from bayes_wsc.checks.aggregation import PHI_MAX, aggregation_bias_check
from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.errors import FitWarning
from bayes_wsc.models.wsc import WSC

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
from output_paths import HERE, OUT, RESULTS  # noqa: E402

CCES_SETTINGS = {"wh": float("inf"), "w_concentration": 2.0}


def table1():
    """benchmarks/table1_real_data.py, imported by path (benchmarks/ is no package)."""
    name = "benchmarks_table1_real_data"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE / "table1_real_data.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def fit_map(data: GroupedCounts, **settings):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return WSC(method="map", seed=0, progressbar=False, **settings).fit(data)


# ---------------------------------------------------------------------- alternatives (for comparison)
def flip_share(data: GroupedCounts, n_halvings: int, rng, pseudo_count: float = 1.0) -> float:
    """Item-weighted share of bins whose rho crosses 0.5 between EM fits on two halves of the groups."""
    from bayes_wsc.baselines.wsc import em_fit

    weights = data.counts.sum(axis=0) / data.counts.sum()
    shares = []
    for _ in range(n_halvings):
        perm = rng.permutation(data.n_groups)
        a, b = (em_fit(data.subset(np.sort(part)), wh=np.inf, pseudo_count=pseudo_count).rho
                for part in (perm[: data.n_groups // 2], perm[data.n_groups // 2:]))
        shares.append(float(np.sum(weights * ((a > 0.5) != (b > 0.5)))))
    return float(np.mean(shares))


def stability_alternatives(data: GroupedCounts, seed: int, n_halvings: int = 5, n_sims: int = 20) -> dict:
    """The issue's flip share, and its ratio to the flip share on data simulated from the EM fit."""
    from bayes_wsc.baselines.wsc import em_fit
    from bayes_wsc.simulate.wsc import simulate_counts

    rng = np.random.default_rng(seed)
    observed = flip_share(data, n_halvings, rng)
    fit = em_fit(data, wh=np.inf)
    items = np.rint(data.counts.sum(axis=1)).astype(np.int64)
    simulated = np.array([flip_share(GroupedCounts.from_counts(simulate_counts(fit.mu, fit.w0, fit.w1, items, rng),
                                                               data.he), n_halvings, rng)
                          for _ in range(n_sims)])
    return {"flip_share": observed, "flip_share_sim": float(simulated.mean()),
            "flip_ratio": observed / max(float(simulated.mean()), 1e-12),
            "flip_p_value": float((1 + np.sum(simulated >= observed)) / (n_sims + 1))}


# ---------------------------------------------------------------------- parts
def run_cces(specs, groupings, n_splits: int, seed: int, alternatives: bool, log) -> pd.DataFrame:
    frame = table1().prepare()
    splits = table1().group_splits(frame["state"], n_splits, seed)
    rows = []
    for spec in specs:
        behavior = list(table1().SPECS[spec].columns)
        for grouping in groupings:
            for split, (train_ids, test_ids) in enumerate(splits):
                train = frame[frame["state"].isin(set(train_ids))]
                test = frame[frame["state"].isin(set(test_ids))]
                data = table1().training_counts(train, behavior, grouping)
                start = time.perf_counter()
                row = aggregation_bias_check(data, model=WSC, settings=dict(CCES_SETTINGS), seed=split)
                seconds = time.perf_counter() - start
                # only now the held-out respondents' votes: what the flag foretold
                rho = fit_map(data, **CCES_SETTINGS).idata_.posterior["rho"].values[0, 0]
                prob = rho[data.bins.index(test, "held-out respondents")]
                y = test["vote_trump"].to_numpy(float)
                null = np.full(len(test), train["vote_trump"].mean())
                out = {"spec": spec, "grouping": grouping, "split": split, "groups": data.n_groups,
                       "phi": row["statistic"], "p_value": row["p_value"], "flagged": row["flagged"],
                       "check_seconds": seconds,
                       "latent_rmse": float(np.sqrt(np.mean((prob - y) ** 2))),
                       "null_rmse": float(np.sqrt(np.mean((null - y) ** 2))),
                       "latent_error": float(np.mean((prob > 0.5) != (y == 1))),
                       "null_error": float(np.mean((null > 0.5) != (y == 1)))}
                if alternatives:
                    out.update(stability_alternatives(data, seed=split))
                rows.append(out)
                log(f"[{spec} {grouping}] split {split + 1}/{n_splits}: phi {out['phi']:.2f} "
                    f"flagged {out['flagged']}; latent RMSE {out['latent_rmse']:.3f} vs null {out['null_rmse']:.3f}"
                    + (f"; flip {out['flip_share']:.3f} (x{out['flip_ratio']:.2f} the model's)" if alternatives else ""))
            # all 51 states at once: phi should not move with the number of groups
            counts = table1().training_counts(frame, behavior, grouping)
            row = aggregation_bias_check(counts, model=WSC, settings=dict(CCES_SETTINGS))
            rows.append({"spec": spec, "grouping": grouping, "split": "all", "groups": frame[grouping].nunique(),
                         "phi": row["statistic"], "p_value": row["p_value"], "flagged": row["flagged"]})
            log(f"[{spec} {grouping}] all states: phi {row['statistic']:.2f} flagged {row['flagged']}")
    return pd.DataFrame(rows)


def run_sims(n_sims: int, seed: int, log, wh: float = 10.0, n_groups: int = 500, items: int = 100,
             n_bins: int = 15) -> pd.DataFrame:
    from bayes_wsc.simulate import simulate_wsc

    rows = []
    for rep in range(n_sims):
        data, _ = simulate_wsc(n_groups=n_groups, items_per_group=items, n_bins=n_bins, sigma_h=1 / np.sqrt(wh),
                               seed=seed * 1000 + rep)
        start = time.perf_counter()
        row = aggregation_bias_check(data, model=WSC, settings={"wh": wh}, seed=rep)
        rows.append({"replicate": rep, "groups": n_groups, "items": items, "bins": n_bins, "wh": wh,
                     "phi": row["statistic"], "p_value": row["p_value"], "flagged": row["flagged"],
                     "check_seconds": time.perf_counter() - start})
        log(f"[sims] {rep + 1}/{n_sims}: phi {row['statistic']:.3f} p {row['p_value']:.3f} flagged {row['flagged']}")
    return pd.DataFrame(rows)


def run_cost(sizes, repeats: int, log) -> pd.DataFrame:
    from bayes_wsc.simulate import simulate_wsc

    rows = []
    for n_groups, items, n_bins in sizes:
        fits, checks, given = [], [], []
        for rep in range(repeats):  # new data each repeat: the first run of this command builds each MAP program
            # (as for a user's new data); a second run finds them all in the disk cache
            data, _ = simulate_wsc(n_groups=n_groups, items_per_group=items, n_bins=n_bins,
                                   sigma_h=1 / np.sqrt(10), seed=5000 + rep)
            start = time.perf_counter()
            posterior = fit_map(data)._fitted().posterior
            fits.append(time.perf_counter() - start)
            start = time.perf_counter()
            aggregation_bias_check(data, model=WSC, settings={"wh": 10.0}, seed=0)
            checks.append(time.perf_counter() - start)
            point = {n: posterior[n].values[0, 0] for n in ("mu", "w0", "w1", "mu_scale")}
            start = time.perf_counter()
            aggregation_bias_check(data, model=WSC, settings={"wh": 10.0}, map_point=point)
            given.append(time.perf_counter() - start)
        fit_s, check_s, given_s = (statistics.median(t) for t in (fits, checks, given))
        rows.append({"groups": n_groups, "items_per_group": items, "bins": n_bins, "map_seconds": fit_s,
                     "check_seconds": check_s, "ratio": check_s / fit_s, "check_given_map_seconds": given_s,
                     "repeats": repeats})
        log(f"[cost] {n_groups} x {items} x {n_bins}: MAP {fit_s:.2f}s, check {check_s:.2f}s "
            f"({check_s / fit_s:.2f}x), check given the fit's MAP {given_s:.3f}s")
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="cces,sims,cost")
    parser.add_argument("--specs", default="paper", help="table1_real_data.py's behavior bins")
    parser.add_argument("--groupings", default="state,state_age_gender",
                        help="of table1_real_data.py's GROUPINGS")
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--sims", type=int, default=40)
    parser.add_argument("--sizes", default="500x100x15,10000x100x30")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--alternatives", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cces-out", type=Path, default=OUT / "aggregation_check_cces.csv")
    args = parser.parse_args(argv)
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]

    def log(message):
        print(message, flush=True)

    OUT.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    if "cces" in parts:
        cces = run_cces(args.specs.split(","), args.groupings.split(","), args.splits, args.seed,
                        args.alternatives, log)
        cces.to_csv(args.cces_out, index=False, float_format="%.4f")
        log("\nall 51 states: " + ", ".join(f"{r.spec} {r.grouping} phi {r.phi:.2f}"
                                            for r in cces[cces["split"] == "all"].itertuples()))
        cces = cces[cces["split"] != "all"]
        summary = cces.groupby(["spec", "grouping"], sort=False).agg(
            groups=("groups", "median"), flagged=("flagged", "sum"), splits=("split", "count"),
            phi_min=("phi", "min"), phi_median=("phi", "median"), phi_max=("phi", "max"),
            latent_rmse=("latent_rmse", "mean"), null_rmse=("null_rmse", "mean"),
            latent_error=("latent_error", "mean"), null_error=("null_error", "mean"))
        if args.alternatives:
            extra = cces.groupby(["spec", "grouping"], sort=False).agg(
                flip_share=("flip_share", "mean"), flip_over_013=("flip_share", lambda s: int((s > 0.13).sum())),
                flip_ratio=("flip_ratio", "mean"), flip_p_below_005=("flip_p_value", lambda s: int((s < 0.05).sum())))
            summary = summary.join(extra)
        log(f"\nCCES 2016, {args.splits} halvings of the states (flag: phi > {PHI_MAX:g}, p < 0.01)\n"
            + summary.round(3).to_string())
        summary_csv = (RESULTS if args.cces_out.parent == OUT else args.cces_out.parent) / args.cces_out.name.replace(
            ".csv", "_summary.csv")
        summary.to_csv(summary_csv, float_format="%.4f")
        log(f"wrote {args.cces_out} and {summary_csv}")
    if "sims" in parts:
        sims = run_sims(args.sims, args.seed, log)
        sims.to_csv(OUT / "aggregation_check_sims.csv", index=False, float_format="%.4f")
        log(f"\nsimulated from the model: flagged {int(sims['flagged'].sum())} of {len(sims)}; phi "
            f"{sims['phi'].min():.3f}-{sims['phi'].max():.3f}; p < 0.05 in {int((sims['p_value'] < 0.05).sum())}")
    if "cost" in parts:
        sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
        cost = run_cost(sizes, args.repeats, log)
        cost.to_csv(RESULTS / "aggregation_check_cost.csv", index=False, float_format="%.4f")
    return 0


if __name__ == "__main__":
    sys.exit(main())
