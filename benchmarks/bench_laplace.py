"""Intervals in seconds: `method="laplace"` against the paper's EM and its half-sampling error bars,
and the coverage of its intervals against NUTS's on the Sec. 5 study.

--timing (default): at the headline scale (10,000 groups, 100 clicks each, 30 bins), every round
simulates a new data set (seeds 4, 5, ..., or from --first-seed) and times on it, in one process:
  * the paper's per-click EM point estimate (NumPy, 200 iterations; bench_map.per_click_em);
  * `WSC(method="laplace")` in-process from the loaded data (nested: marginal MAP, centre, Hessian,
    1000 draws, each mu_i drawn from its conditional), its program from the structure's cache (a
    warm-up fit on seed 3 comes first, timed apart), and the joint form, `mu="sampled"`, alike;
  * once, on the first round's data, the paper's error bars: grouped half-sampling (50 half-samples)
    with the count-table EM (`baselines.wsc.em_fit`, the package's EM), and, to show what the
    paper's own per-click EM costs there, `--click-half-samples` refits of it on half-samples
    (default 5), whose mean time times 50 is reported as an estimate, labelled so.

    python benchmarks/bench_laplace.py --timing --repeats 3 [--no-half-sampling]

--cli: the command-line target, whole processes timed from the outside on CSV files: every round writes
a new data set (seeds 4, 5, ..., or from --first-seed) as a user's two CSV files (bench_map.write_csv) and times the per-click
EM reading them with pandas (bench_map.py --em-worker) and `bayes-wsc fit wsc --method laplace --out
FIT.nc`; then, on the saved fit, what a user who later asks for LOO pays (`bayes_wsc.load(FIT).loo()` in
a new process: the pointwise log-likelihood is computed on that first use). A warm-up fit on seed 3
comes first (a user's earlier fit of the same structure); a rerun on the last round's data is
reported beside, labelled. Summary: results/laplace_cli.csv.

    python benchmarks/bench_laplace.py --cli --repeats 3 [--baseline OTHER_CHECKOUT] [--no-loo]

`--baseline` times the same command with the package's source from another checkout in the same rounds
(its own warm-up first), for before/after figures from one run; `--no-loo` leaves the LOO process out.

--coverage: the Sec. 5 study (I = 500, K = 15, 50 replicates at J = 5 and J = 100) with the three
models of coverage_sec5.py fitted by nested Laplace (the default of method="laplace") on every
replicate, and, in the same run, by joint Laplace (mu="sampled") on the first --joint-reps and by
NUTS on the first --nuts-reps (their seconds; NUTS's coverage there against the recorded run's).
Coverage is compared with the recorded NUTS fits of the same replicates
(out/coverage_sec5_J<J>.csv, from coverage_sec5.py) and the recorded joint Laplace fits
(out/coverage_sec5_laplace_J<J>.csv; their fits are named laplace_* there, from before the nested
form). Raw rows: out/coverage_sec5_nested_J<J>.csv (resumable); summaries:
results/coverage_sec5_nested_J<J>.csv and results/laplace_warning_rates.csv.

    python benchmarks/bench_laplace.py --coverage --items 100,5 --reps 50 --joint-reps 1 --nuts-reps 1
    python benchmarks/bench_laplace.py --coverage --items 100,5 --summarize
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
from output_paths import OUT, RESULTS, require  # noqa: E402


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def run_timing(n_groups: int, items: int, n_bins: int, repeats: int, click_half_samples: int,
               half_sampling: bool = True) -> dict:
    from bench_map import per_click_em

    from bayes_wsc.baselines.wsc import em_fit, half_sample_se
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.wsc import WSC
    from bayes_wsc.simulate import simulate_wsc

    def simulate(seed):
        return simulate_wsc(n_groups=n_groups, items_per_group=items, n_bins=n_bins, seed=seed)[0]

    def click_em(data):
        counts = data.counts.astype(np.int64)
        k = data.n_bins
        group = np.repeat(np.repeat(np.arange(data.n_groups), k), counts.ravel())
        bins = np.repeat(np.tile(np.arange(k), data.n_groups), counts.ravel())
        return per_click_em(group, bins, data.he, k)

    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        t_warm, warm = timed(lambda: WSC(method="laplace", seed=0).fit(simulate(3)))
        t_warm_joint, _ = timed(lambda: WSC(method="laplace", mu="sampled", seed=0).fit(simulate(3)))
        for round_ in range(repeats):
            data = simulate(4 + round_)  # new data every round
            t_em, _ = timed(lambda: click_em(data))
            t_laplace, est = timed(lambda: WSC(method="laplace", seed=round_).fit(data))
            t_joint, joint = timed(lambda: WSC(method="laplace", mu="sampled", seed=round_).fit(data))
            info = json.loads(est._fitted().posterior.attrs["fit_info"])
            rows.append({"per_click_em_s": t_em, "laplace_s": t_laplace, "map_s": info["map"]["seconds"],
                         "laplace_part_s": info["laplace"]["seconds"], "joint_laplace_s": t_joint,
                         "form": info["laplace"]["form"], "program": info["map"]["compiled_program"],
                         "positive_definite": info["laplace"]["positive_definite"],
                         "warned": any("may not cover" in m for m in est.diagnostics_),
                         "joint_warned": any("may not cover" in m for m in joint.diagnostics_)})
        if half_sampling:
            first = simulate(4)
            t_half_table, _ = timed(lambda: half_sample_se(first, lambda d: em_fit(d, 10.0).rho, n_reps=50, seed=0))
            t_half_click, _ = timed(lambda: half_sample_se(first, click_em, n_reps=click_half_samples, seed=0))
    keys = ("per_click_em_s", "laplace_s", "map_s", "laplace_part_s", "joint_laplace_s")
    median = {k: statistics.median(r[k] for r in rows) for k in keys}
    out = {
        "size": f"I={n_groups} J={items} K={n_bins} ({n_groups * items} clicks), new data every round",
        **median,
        "laplace_over_em": median["laplace_s"] / median["per_click_em_s"],
        "joint_laplace_over_em": median["joint_laplace_s"] / median["per_click_em_s"],
        "per_round": rows,
        "warm_up_fit_s": t_warm,
        "warm_up_joint_fit_s": t_warm_joint,
        "warm_up_program": json.loads(warm._fitted().posterior.attrs["fit_info"])["map"]["compiled_program"],
    }
    if half_sampling:
        out.update({"half_sampling_50_table_em_s": t_half_table,
                    f"half_sampling_{click_half_samples}_per_click_em_s": t_half_click,
                    "half_sampling_50_per_click_em_estimated_s": t_half_click * 50 / click_half_samples})
    return out


def run_cli(n_groups: int, items: int, n_bins: int, repeats: int, baseline: str | None = None,
            with_loo: bool = True, first_seed: int = 4) -> dict:
    """Whole processes on CSV files, new data every round (see the module docstring). `baseline`: a checkout
    whose package source the same commands also run with, in the same rounds (before and after in one run)."""
    import os
    import subprocess
    import tempfile

    from bench_map import write_csv

    from bayes_wsc.simulate import simulate_wsc

    env = None
    if baseline:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [baseline, os.environ.get("PYTHONPATH")]))}

    cpu = {}

    def wall(cmd, environment=None) -> float:
        """Wall seconds; the process's CPU seconds (user + system, every thread) go to `cpu["last"]`."""
        import resource

        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=environment)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu["last"] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return time.perf_counter() - t0

    def fit(clicks, groups, out):
        return [sys.executable, "-m", "bayes_wsc.cli", "fit", "wsc", "--clicks", str(clicks), "--groups", str(groups),
                "--method", "laplace", "--no-progress", "--out", str(out)]

    em_worker = [sys.executable, str(Path(__file__).resolve().parent / "bench_map.py"), "--em-worker"]
    loo = [sys.executable, "-c", "import sys, bayes_wsc; bayes_wsc.load(sys.argv[1]).loo()"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        warm_files = write_csv(simulate_wsc(n_groups=n_groups, items_per_group=items, n_bins=n_bins, seed=3)[0],
                               tmp / "warm")
        warm = wall(fit(*warm_files, tmp / "warm" / "fit.nc"))
        if baseline:
            wall(fit(*warm_files, tmp / "warm" / "fit_baseline.nc"), env)
        for round_ in range(repeats):
            folder = tmp / f"round{round_}"
            data = simulate_wsc(n_groups=n_groups, items_per_group=items, n_bins=n_bins, seed=first_seed + round_)[0]
            clicks, groups = write_csv(data, folder)
            row = {"em_process_s": wall(em_worker + [str(clicks), str(groups)])}
            row["em_process_cpu"] = cpu["last"]
            row["laplace_cli_s"] = wall(fit(clicks, groups, folder / "fit.nc"))
            row["laplace_cli_cpu"] = cpu["last"]
            row["cpu_over_em_process"] = row["laplace_cli_cpu"] / row["em_process_cpu"]
            if baseline:
                row["baseline_laplace_cli_s"] = wall(fit(clicks, groups, folder / "fit_baseline.nc"), env)
                row["baseline_laplace_cli_cpu"] = cpu["last"]
                row["baseline_over_em_process"] = row["baseline_laplace_cli_s"] / row["em_process_s"]
                row["baseline_cpu_over_em_process"] = row["baseline_laplace_cli_cpu"] / row["em_process_cpu"]
            row["laplace_cli_over_em_process"] = row["laplace_cli_s"] / row["em_process_s"]
            row["load"] = os.getloadavg()[0]
            row["fit_file_mb"] = (folder / "fit.nc").stat().st_size / 2**20
            if with_loo:
                row["first_loo_process_s"] = wall(loo + [str(folder / "fit.nc")])
            print(row, flush=True)
            rows.append(row)
        same = wall(fit(clicks, groups, folder / "again.nc"))
    median = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    return {"size": f"I={n_groups} J={items} K={n_bins} ({n_groups * items} clicks), new data every round",
            **median, "laplace_cli_over_em_process": median["laplace_cli_s"] / median["em_process_s"],
            "warm_up_cli_s": warm, "laplace_cli_same_data_again_s": same, "per_round": rows}


def run_coverage(sizes: list[int], reps: int, summarize_only: bool, joint_reps: int, nuts_reps: int) -> None:
    """Nested Laplace (the default) on every replicate; joint Laplace and NUTS on the first `joint_reps`
    and `nuts_reps` of them in the same run (time, and a check that the recorded runs' data are these);
    coverage compared with the recorded NUTS fits of the same replicates (results/coverage_sec5_J<J>.csv).
    The sizes J take turns replicate by replicate, so that a run cut short has as many of each. The fits
    run without the fit-time model checks (`checks=False`, column `checks`), which do not change draws."""
    import pandas as pd

    import coverage_sec5

    reuse_variant_programs()

    def out(items):
        return OUT / f"coverage_sec5_nested_J{items}.csv"

    OUT.mkdir(exist_ok=True)
    for rep in range(0 if summarize_only else reps):
        for items in sizes:
            done = set(zip(*[pd.read_csv(out(items))[c] for c in ("rep", "fit")])) if out(items).exists() else set()
            fits = [*coverage_sec5.LAPLACE_FITS, *(coverage_sec5.JOINT_FITS if rep < joint_reps else ()),
                    *(("nuts_wh10", "nuts_matched", "nuts_learned") if rep < nuts_reps else ())]
            fits = [f for f in fits if (rep, f) not in done]
            if not fits:
                continue
            rows = coverage_sec5.one_replicate(rep, items, 500, 500, 4, fits, checks=False)
            pd.DataFrame(rows).to_csv(out(items), mode="a", header=not out(items).exists(), index=False)
            print(f"J={items} replicate {rep}: " + ", ".join(f"{r['fit']} {r['covered']}/{r['bins']} "
                                                            f"{r['seconds']:.1f}s" for r in rows), flush=True)
    rates = warning_rates(pd.concat([pd.read_csv(out(items)) for items in sizes if out(items).exists()]))
    rates.round(4).to_csv(RESULTS / "laplace_warning_rates.csv", index=False)
    print("\nHow often the Laplace warning fires, by replicates whose coverage was poor or fine:")
    print(rates.round(3).to_string(index=False))
    for items in sizes:
        summary = coverage_summary(items, pd.read_csv(out(items)))
        path = RESULTS / f"coverage_sec5_nested_J{items}.csv"
        summary.round(4).to_csv(path, index=False)
        print(f"\nNested Laplace against NUTS, J = {items}, the same replicates (90% HDIs of rho):")
        print(summary.round(3).to_string(index=False))
        print(path)


def reuse_variant_programs() -> None:
    """In this process only, a variant file's nested program is built once per (file, settings, shapes)
    and reused on the next replicate, as the package's own models reuse theirs from the disk cache (a
    variant's is not cached there: the key cannot cover the file's imports). The variant's integrated
    model reads the default model's data by the same names (`models.wsc.model_data`). Without this each
    learned-noise fit compiles its program anew (about 14 s on a quiet machine), which the seconds of
    the learned rows would then be."""
    from bayes_wsc.estimator import Estimator
    from bayes_wsc.models.wsc import model_data

    original, memo = Estimator._map_program, {}

    def memoized(self, data, starts, fixed, laplace=None):
        if self.model_file is None or fixed:
            return original(self, data, starts, fixed, laplace)
        key = (str(self.model_file), json.dumps(self.build_settings(), sort_keys=True), data.counts.shape,
               json.dumps(laplace, sort_keys=True))
        if key not in memo:
            memo[key] = original(self, data, starts, fixed, laplace)
            return memo[key]
        program, held, _, _ = memo[key]
        readable = {**{dim: len(labels) for dim, labels in data.coords.items()}, **model_data(data)}
        missing = set(program.inputs) - set(readable)
        if missing:
            raise KeyError(f"the variant's program reads {sorted(missing)}, which model_data does not compute")
        return program, held, {k: readable[k] for k in program.inputs}, data.coords

    Estimator._map_program = memoized


#: a replicate's coverage is poor when at most this many of its 15 intervals cover (11 of 15 = 0.73; with
#: independent bins at 90% that happens with probability 0.056)
POOR_AT_MOST = 11
#: ... and worse than NUTS's when it covers at least this many bins fewer than NUTS on the same replicate
#: (the recorded NUTS fit): what a warning about the approximation can hope to see (a misspecified
#: model, WH = 10, makes NUTS's intervals miss too)
WORSE_BY = 3


def warning_rates(table):
    """For each form (nested, joint) and J, and for the nested fits together: how many replicates had poor
    coverage (`POOR_AT_MOST`), or coverage worse than NUTS's (`WORSE_BY`), and how often the warning fired
    among them (the hit rate) and among the others (the false-alarm rate). The warning is recomputed from
    the numbers each fit recorded with the package's current checks (`nested_laplace.reliability`), each
    check also alone; `warned_at_fit` is what the fit itself said when it ran. Only records whose k was
    estimated as the package now does count (`nested_laplace.PARETO_K_METHOD`)."""
    import pandas as pd

    from bayes_wsc.nested_laplace import PARETO_K_METHOD, reliability

    laplace = table[table["fit"].str.startswith(("laplace_", "joint_"))].copy()
    # records made before the current estimator of k are left out (their k is not comparable)
    laplace = laplace[laplace["pareto_k_method"].fillna("") == PARETO_K_METHOD]
    laplace["form_name"] = np.where(laplace["fit"].str.startswith("joint_"), "joint", "nested")
    laplace["poor"] = laplace["covered"] <= POOR_AT_MOST
    nuts = pd.concat([pd.read_csv(recorded(j, "nuts")) for j in laplace["items"].unique()])
    nuts = nuts[nuts["fit"].str.startswith("nuts_")].assign(model=lambda t: t["fit"].str[5:])
    laplace["model"] = laplace["fit"].str.split("_").str[1]
    laplace = laplace.merge(nuts[["rep", "items", "model", "covered"]], on=["rep", "items", "model"], how="left",
                            suffixes=("", "_nuts"))
    laplace["worse"] = laplace["covered"] <= laplace["covered_nuts"] - WORSE_BY

    def record(row, only=None):
        full = {"pareto_k": row["pareto_k"], "importance_ess_share": row["importance_ess_share"],
                "condition_number": row["condition_number"],
                "at_bound": ["a value"] * int(row["at_bound"] or 0),
                "mu_draws": {"acceptance_rate": row["mu_acceptance"]} if pd.notna(row["mu_acceptance"]) else {}}
        full = {k: v for k, v in full.items() if not (isinstance(v, float) and np.isnan(v))}
        if only == "pareto_k":
            return {k: full[k] for k in ("pareto_k", "importance_ess_share") if k in full}
        return full if only is None else {only: full[only]} if only in full else {}

    checks = ("pareto_k", "condition_number", "at_bound", "mu_draws")
    laplace["warns"] = [bool(reliability(record(r))) for _, r in laplace.iterrows()]
    for name in checks:
        laplace[f"fires_{name}"] = [bool(reliability(record(r, name))) for _, r in laplace.iterrows()]
    rows = []
    groups = [(f, j, laplace[(laplace["form_name"] == f) & (laplace["items"] == j)])
              for f in ("nested", "joint") for j in sorted(laplace["items"].unique())]
    groups += [("nested", "all", laplace[laplace["form_name"] == "nested"])]
    for form, items, part in groups:
        if part.empty:
            continue
        row = {"form": form, "J": items, "fits": len(part)}
        for label, flag in (("poor", "poor"), ("worse_than_nuts", "worse")):
            bad, good = part[part[flag]], part[~part[flag]]
            row[label] = len(bad)
            row[f"warns_when_{label}"] = bad["warns"].mean() if len(bad) else np.nan
            row[f"warns_otherwise_{label}"] = good["warns"].mean() if len(good) else np.nan
        for name in checks:
            bad, good = part[part["worse"]], part[~part["worse"]]
            row[f"{name}_when_worse"] = bad[f"fires_{name}"].mean() if len(bad) else np.nan
            row[f"{name}_otherwise"] = good[f"fires_{name}"].mean() if len(good) else np.nan
        row["warned_at_fit"] = part["laplace_warns"].mean()
        rows.append(row)
    return pd.DataFrame(rows)


def recorded(items: int, fits: str):
    """The recorded per-replicate rows the nested fits are compared with: NUTS's (coverage_sec5.py) or
    the joint Laplace fits' (this script's earlier --coverage), in benchmarks/out/."""
    if fits == "nuts":
        return require(OUT / f"coverage_sec5_J{items}.csv", f"python benchmarks/coverage_sec5.py --items {items} "
                       "--reps 50 --resume --tune 500 --draws 500")
    return require(OUT / f"coverage_sec5_laplace_J{items}.csv", "this script's --coverage as it was before nested "
                   "Laplace (git history: the joint form's fits, named laplace_*), or coverage_sec5.py --fits "
                   f"joint_wh10,joint_learned,joint_matched --items {items} --reps 50 with the fits renamed")


def coverage_summary(items: int, table):
    """Per model: nested Laplace's coverage on its replicates against the recorded NUTS's and the recorded
    joint Laplace's on the same replicates, and the seconds of each, those timed in this run labelled."""
    import pandas as pd

    nuts = pd.read_csv(recorded(items, "nuts"))
    joint_recorded = pd.read_csv(recorded(items, "joint"))
    rows = []
    for variant in ("wh10", "matched", "learned"):
        ours = table[table["fit"] == f"laplace_{variant}"]
        reps = ours["rep"]
        theirs = nuts[(nuts["fit"] == f"nuts_{variant}") & nuts["rep"].isin(reps)]
        joint = joint_recorded[(joint_recorded["fit"] == f"laplace_{variant}") & joint_recorded["rep"].isin(reps)]
        joint_now = table[table["fit"] == f"joint_{variant}"]
        nuts_now = table[table["fit"] == f"nuts_{variant}"]
        if ours.empty:
            continue
        same = nuts_now.merge(theirs, on="rep", suffixes=("", "_rec"))
        rows.append({
            "model": variant, "J": items, "reps": len(ours),
            "nested_coverage90": ours["coverage90"].mean(),
            "nested_coverage_se": ours["coverage90"].std(ddof=1) / np.sqrt(len(ours)) if len(ours) > 1 else np.nan,
            "nuts_coverage90_recorded": theirs["coverage90"].mean(),
            "difference": ours["coverage90"].mean() - theirs["coverage90"].mean(),
            "joint_coverage90_recorded": joint["coverage90"].mean(),
            "nested_rmse": ours["rmse"].mean(), "nuts_rmse": theirs["rmse"].mean(),
            "nested_width": ours["mean_width"].mean(), "nuts_width": theirs["mean_width"].mean(),
            "nested_seconds_median": ours["seconds"].median(),
            "joint_seconds_median_this_run": joint_now["seconds"].median() if len(joint_now) else np.nan,
            "joint_reps_this_run": len(joint_now),
            "nuts_seconds_median_this_run": nuts_now["seconds"].median() if len(nuts_now) else np.nan,
            "nuts_reps_this_run": len(nuts_now),
            "nuts_rerun_coverage_gap": float((same["coverage90"] - same["coverage90_rec"]).abs().mean())
            if len(same) else np.nan,
            "nested_warned_share": ours["laplace_warns"].mean(),
        })
    return pd.DataFrame(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timing", action="store_true")
    parser.add_argument("--coverage", action="store_true")
    parser.add_argument("--cli", action="store_true", help="whole processes on CSV files (see above)")
    parser.add_argument("--size", default="10000x100x30", help="IxJxK for --timing")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--click-half-samples", type=int, default=5)
    parser.add_argument("--no-half-sampling", action="store_true", help="--timing: leave out the paper's error bars")
    parser.add_argument("--items", default="100", help="J for --coverage (several, comma-separated, take turns)")
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--summarize", action="store_true", help="--coverage: only compare what is in the files")
    parser.add_argument("--joint-reps", type=int, default=5, help="--coverage: joint Laplace on this many replicates")
    parser.add_argument("--nuts-reps", type=int, default=1, help="--coverage: NUTS on this many replicates")
    parser.add_argument("--baseline", default=None, help="--cli: also run the package's source from this checkout")
    parser.add_argument("--no-loo", action="store_true", help="--cli: leave out the first LOO on the saved fit")
    parser.add_argument("--first-seed", type=int, default=4, help="--cli: the first round's data seed (new data)")
    args = parser.parse_args(argv)
    if args.coverage:
        return run_coverage([int(j) for j in args.items.split(",")], args.reps, args.summarize, args.joint_reps,
                            args.nuts_reps)
    if args.cli:
        row = run_cli(*map(int, args.size.split("x")), args.repeats, args.baseline, not args.no_loo,
                      args.first_seed)
        import pandas as pd

        summary = {k: v for k, v in row.items() if k != "per_round"}
        pd.DataFrame([summary]).to_csv(RESULTS / "laplace_cli.csv", index=False)
    else:
        row = run_timing(*map(int, args.size.split("x")), args.repeats, args.click_half_samples,
                         not args.no_half_sampling)
    for key, value in row.items():
        print(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}")
    return row


if __name__ == "__main__":
    main()
