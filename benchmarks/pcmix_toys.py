"""Seed 003's two toy studies (Hughes et al., Sec. 3.2 and 3.3): PC training against ML+rep.

    python benchmarks/pcmix_toys.py                     # both studies, basins, figures, timing
    python benchmarks/pcmix_toys.py --nuts              # also the generalized posterior by NUTS
    python benchmarks/pcmix_toys.py --study intervals --interval-seeds 5
    python benchmarks/pcmix_toys.py --study nuts --draws 500 --tune 500 --chains 2
    python benchmarks/pcmix_toys.py --study mlrep-check  # Sec. 3.3: ML+rep's objective at PC's solution

Sec. 3.2: 1-D, intervals A (175 points on [-1, 1], about half positive), B
(100 on [1, 1.5], positive), C (75 on [1.5, 2], negative); K = 2.
Sec. 3.3: 5000 points in 5-D from two Gaussians, y = 1 iff |x_2| < 0.1, a
fraction b of the labels kept; K = 2.

PC training is `PCMixture.fit_path` (10 restarts per lam plus the previous
lam's optimum). ML+rep is `baselines.pcmix.ml_rep_em` (EM, the same 10
starts and priors). Error rates are those of predicting y from x alone
(most probable class); in Sec. 3.3 they are scored on all 5000 items
(true labels known), -log p(x) / N in the data's units.

Basins: every restart is also optimized on its own (one `fit_map` call per
start) and the restarts are grouped by the log density they reach, with the
error rate and data fit of each basin's solution, so that the objective
value of every solution the optimizer can land in is on the record. Nothing
here is tuned to the paper's figures: priors, restarts and seeds are the
package defaults (seed 0).

Sec. 3.2 also scores the AUC of P(y = 1 given x) on the training items (the paper's Fig. 2 plots both),
for the main data draw and, averaged, for the other draws (pcmix_sec32_draws.csv).

Writes the per-lam tables pcmix_sec32.csv, pcmix_sec32_draws.csv, pcmix_sec33.csv, pcmix_sec33_mlrep_check.csv and
pcmix_nuts.csv under benchmarks/results/,
and the basins, per-draw, timing and PNG files (pcmix_*) under benchmarks/out/ (git-ignored).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from bayes_wsc import inference
from bayes_wsc.baselines.pcmix import data_nll_per_item, error_rate, ml_rep_em, pc_objective, predict_proba
from bayes_wsc.errors import FitWarning
from bayes_wsc.fit import fit_map
from bayes_wsc.models.pcmix import BASIN_ATOL, BASIN_TOL, PCMixture, point_to_params
from bayes_wsc.report.html import new_figure
from bayes_wsc.report.pcmix import Mixture, plot_mixture
from bayes_wsc.simulate import simulate_intervals, simulate_two_blobs, toy_items

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
from output_paths import OUT, RESULTS  # noqa: E402

SEC32_LAMS = [1.0, 4.0, 16.0, 64.0]
SEC33_LAMS = [1.0, 4.0, 16.0, 64.0, 256.0]
SEC33_FRACTIONS = [0.03, 0.10, 0.20, 0.50, 1.00]
FREE = ("pi", "mean_z", "sd_excess", "rho")


# ---------------------------------------------------------------------- helpers
def describe(mixture: Mixture, features) -> str:
    """One line per solution: each cluster's weight, label probability and its narrowest feature."""
    parts = []
    for k in range(mixture.pi.size):
        j = int(np.argmin(mixture.sd[k] / np.maximum(mixture.sd.max(axis=0), 1e-12)))
        parts.append(f"[pi={mixture.pi[k]:.2f} rho={mixture.rho[k, 1]:.2f} "
                     f"{features[j]}: mean={mixture.mean[k, j]:.2f} sd={mixture.sd[k, j]:.3f}]")
    return " ".join(parts)


def group_basins(rows: list[dict]) -> pd.DataFrame:
    """Restarts grouped by their final log density (the package's tolerance), best first."""
    frame = pd.DataFrame(rows).sort_values("log_density", ascending=False, ignore_index=True)
    basin, current = [], None
    for value in frame["log_density"]:
        if current is None or abs(current - value) > max(BASIN_ATOL, BASIN_TOL * abs(value)):
            current = value
            basin.append(len(set(basin)) + 1)
        else:
            basin.append(basin[-1])
    frame["basin"] = basin
    first = frame.groupby("basin", sort=True).first()
    first["restarts"] = frame.groupby("basin").size()
    return first.reset_index()


def pc_basins(data, lam: float, y_true, restarts: int = 10, seed: int = 0) -> pd.DataFrame:
    """PC training's restarts grouped into basins, with each basin's solution, objective and scores.

    One `fit_map` call with every start gives each restart's final log density; the restarts are
    grouped by it, and the first restart of each basin is optimized again on its own to recover the
    basin's solution (its log density is checked against the first value).
    """
    est = PCMixture(components=2, lam=lam, restarts=restarts, seed=seed)
    model = est.build_model(data)
    starts = est.initial_values(data)
    values = fit_map(model, starts)[0].info["restart_log_densities"]
    rows = [{"method": "PC", "lam": lam, "start": "k-means" if i == 0 else f"random {i}", "log_density": v}
            for i, v in enumerate(values)]
    table = group_basins(rows)
    solutions = []
    for start_name, expected in zip(table["start"], table["log_density"]):
        i = 0 if start_name == "k-means" else int(start_name.split()[1])
        draws = fit_map(model, starts[i])[0]
        if abs(draws.info["log_density"] - expected) > max(BASIN_ATOL, BASIN_TOL * abs(expected)):
            raise RuntimeError(f"restart {start_name} reached {draws.info['log_density']} alone, {expected} before")
        params = point_to_params({k: draws.posterior[k][0, 0] for k in FREE}, est.sd_floor)
        solutions.append({"objective": pc_objective(data, params, lam)["objective"],
                          "error_rate": error_rate(data, params, y_true),
                          "data_nll_per_item": data_nll_per_item(data, params),
                          "solution": describe(Mixture.of_params(params, data), data.features)})
    return pd.concat([table, pd.DataFrame(solutions)], axis=1).assign(starts=len(starts))


def ml_rep(data, lam: float, y_true, restarts: int = 10, seed: int = 0):
    """ML+rep by EM: the best fit and the basins of its restarts."""
    t0 = time.perf_counter()
    result = ml_rep_em(data, 2, lam, restarts=restarts, seed=seed)
    seconds = time.perf_counter() - t0
    rows = [{"method": "ML+rep", "lam": lam, "start": "k-means" if i == 0 else f"random {i}",
             "log_density": value, "objective": value,
             "error_rate": error_rate(data, params, y_true), "data_nll_per_item": data_nll_per_item(data, params),
             "solution": describe(Mixture.of_params(params, data), data.features)}
            for i, (value, params) in enumerate(zip(result.restart_objectives, result.restart_params))]
    summary = {"method": "ML+rep", "lam": lam, "error_rate": error_rate(data, result.params, y_true),
               "data_nll_per_item": data_nll_per_item(data, result.params), "objective": result.objective,
               "converged": result.converged, "seconds": seconds,
               "solution": describe(Mixture.of_params(result.params, data), data.features)}
    return result, summary, group_basins(rows).assign(starts=restarts)


def pc_path(data, lams, y_true, restarts: int = 10, seed: int = 0):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        path = PCMixture(components=2, restarts=restarts, seed=seed).fit_path(data, lams)
    seconds = time.perf_counter() - t0
    table = path.table(y=y_true).assign(method="PC", seconds_path=seconds)
    table["solution"] = [describe(Mixture.of_fit(f), data.features) for f in path.fits]
    return path, table


def auc(probability_of_one: np.ndarray, y_true) -> float:
    """Area under the ROC curve of P(y = 1 given x) against the labels, as in the paper's Fig. 2."""
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(np.asarray(y_true), probability_of_one))


def pc_auc(path, data, y_true) -> list[float]:
    return [auc(fit.predict_arrays(data.x, 0.9)["label_mean"][:, 1], y_true) for fit in path.fits]


def ml_rep_auc(data, params, y_true) -> float:
    return auc(predict_proba(data.x, params)[1][:, 1], y_true)


def save_figure(fig, name: str) -> Path:
    path = OUT / name
    fig.savefig(path, dpi=110)
    return path


# ---------------------------------------------------------------------- Sec. 3.2
def study_intervals(n_seeds: int, restarts: int, landscape_restarts: int) -> None:
    frame, truth = simulate_intervals(seed=0)
    data = toy_items(frame)
    path, pc_table = pc_path(data, SEC32_LAMS, truth.y, restarts)
    pc_table["auc"] = pc_auc(path, data, truth.y)
    ml_rows, ml_fits, basins = [], [], []
    for lam in SEC32_LAMS:
        result, summary, ml_basins = ml_rep(data, lam, truth.y, restarts)
        summary["auc"] = ml_rep_auc(data, result.params, truth.y)
        ml_rows.append(summary)
        ml_fits.append(result)
        basins += [pc_basins(data, lam, truth.y, restarts), ml_basins]
        if landscape_restarts > restarts:  # the same objective explored from more starts, for the record
            basins.append(pc_basins(data, lam, truth.y, landscape_restarts).assign(method="PC, landscape"))
        print(f"Sec. 3.2 lam={lam:g}: PC error {pc_table.loc[pc_table.lam == lam, 'error_rate'].iloc[0]:.3f}, "
              f"ML+rep error {summary['error_rate']:.3f}", flush=True)
    table = pd.concat([pc_table, pd.DataFrame(ml_rows)], ignore_index=True)
    table.to_csv(RESULTS / "pcmix_sec32.csv", index=False)
    pd.concat(basins, ignore_index=True).to_csv(OUT / "pcmix_sec32_basins.csv", index=False)

    fig, axes = new_figure(2, len(SEC32_LAMS), width=4.2 * len(SEC32_LAMS), height=7.4)
    for j, lam in enumerate(SEC32_LAMS):
        plot_mixture(data, Mixture.of_fit(path.fits[j]), ax=axes[0, j], legend=j == 0,
                     title=f"PC, lam = {lam:g}: error {pc_table.error_rate.iloc[j]:.3f}")
        plot_mixture(data, Mixture.of_params(ml_fits[j].params, data), ax=axes[1, j], legend=j == 0,
                     title=f"ML+rep, lam = {lam:g}: error {ml_rows[j]['error_rate']:.3f}")
    save_figure(fig, "pcmix_sec32_clusters.png")
    fig = path.plot_tradeoff(table=pc_table, baseline=pd.DataFrame(ml_rows))
    save_figure(fig, "pcmix_sec32_tradeoff.png")

    rows = []
    for seed in range(n_seeds):  # other draws of the same data: how stable is the picture?
        frame, truth = simulate_intervals(seed=seed)
        data = toy_items(frame)
        seed_path, pc = pc_path(data, SEC32_LAMS, truth.y, restarts)
        pc_aucs = pc_auc(seed_path, data, truth.y)
        for j, lam in enumerate(SEC32_LAMS):
            ml = ml_rep_em(data, 2, lam, restarts=restarts, seed=0)
            rows.append({"data_seed": seed, "lam": lam,
                         "pc_error": float(pc.loc[pc.lam == lam, "error_rate"].iloc[0]),
                         "pc_auc": pc_aucs[j],
                         "pc_data_nll": float(pc.loc[pc.lam == lam, "data_nll_per_item"].iloc[0]),
                         "ml_rep_error": error_rate(data, ml.params, truth.y),
                         "ml_rep_auc": ml_rep_auc(data, ml.params, truth.y),
                         "ml_rep_data_nll": data_nll_per_item(data, ml.params)})
        print(f"Sec. 3.2 data seed {seed} done", flush=True)
    seeds = pd.DataFrame(rows)
    seeds.to_csv(OUT / "pcmix_sec32_seeds.csv", index=False)
    means = seeds.groupby("lam")[["pc_error", "pc_auc", "ml_rep_error", "ml_rep_auc"]].mean().round(3)
    means.assign(data_draws=n_seeds).reset_index().to_csv(RESULTS / "pcmix_sec32_draws.csv", index=False)


# ---------------------------------------------------------------------- Sec. 3.3
def study_blobs(restarts: int, basin_fractions) -> None:
    rows, basins, kept = [], [], {}
    for b in SEC33_FRACTIONS:
        frame, truth = simulate_two_blobs(5000, b, seed=0)
        data = toy_items(frame)
        path, pc_table = pc_path(data, SEC33_LAMS, truth.y, restarts)
        pc_table.insert(0, "labeled_fraction", b)
        rows.append(pc_table)
        kept[b] = (data, path, {})
        for lam in SEC33_LAMS:
            result, summary, ml_basins = ml_rep(data, lam, truth.y, restarts)
            rows.append(pd.DataFrame([{"labeled_fraction": b, **summary}]))
            kept[b][2][lam] = result
            if b in basin_fractions:
                basins += [pc_basins(data, lam, truth.y, restarts).assign(labeled_fraction=b),
                           ml_basins.assign(labeled_fraction=b)]
        errors = ", ".join(f"{e:.3f}" for e in pc_table.error_rate)
        print(f"Sec. 3.3 b={b:.0%}: PC errors {errors}; path {pc_table.seconds_path.iloc[0]:.1f} s", flush=True)
    table = pd.concat(rows, ignore_index=True)
    table.to_csv(RESULTS / "pcmix_sec33.csv", index=False)
    if basins:
        pd.concat(basins, ignore_index=True).to_csv(OUT / "pcmix_sec33_basins.csv", index=False)

    fig, axes = new_figure(2, len(SEC33_FRACTIONS), width=3.3 * len(SEC33_FRACTIONS), height=6.0, sharey="row")
    for j, b in enumerate(SEC33_FRACTIONS):
        part = table[table.labeled_fraction == b]
        for method, color, style in (("PC", "#b2182b", "o-"), ("ML+rep", "#2166ac", "s--")):
            rows_m = part[part.method == method]
            axes[0, j].plot(rows_m.lam, rows_m.error_rate, style, color=color, label=method, ms=4)
            axes[1, j].plot(rows_m.lam, rows_m.data_nll_per_item, style, color=color, label=method, ms=4)
        axes[0, j].set_title(f"b = {b:.0%} labeled", fontsize=10)
        for i in range(2):
            axes[i, j].set_xscale("log", base=2)
            axes[i, j].grid(alpha=0.3)
            axes[i, j].set_xlabel("lam")
    axes[0, 0].set_ylabel("error rate (all 5000 items)")
    axes[1, 0].set_ylabel("-log p(x) / N")
    axes[0, 0].legend(fontsize=8, frameon=False)
    save_figure(fig, "pcmix_sec33_tradeoff.png")

    shown = [0.03, 0.10, 1.00]
    fig, axes = new_figure(len(shown), 4, width=16, height=3.9 * len(shown))
    for i, b in enumerate(shown):
        data, path, ml_fits = kept[b]
        for j, lam in enumerate((1.0, 16.0, 256.0)):
            est = path.fits[path.lams.index(lam)]
            plot_mixture(data, Mixture.of_fit(est), ax=axes[i, j], legend=(i, j) == (0, 0),
                         title=f"PC, b = {b:.0%}, lam = {lam:g}")
        plot_mixture(data, Mixture.of_params(ml_fits[64.0].params, data), ax=axes[i, 3], legend=False,
                     title=f"ML+rep, b = {b:.0%}, lam = 64")
    save_figure(fig, "pcmix_sec33_clusters.png")


# ---------------------------------------------------------------------- timing (issue 5, P4)
def timing(repeats: int) -> None:
    """The 5000-point toy of Sec. 3.3 (b = 10%): one 10-restart MAP, and a warm-started path over 5 lams.

    Wall time in this process, model building, compilation (PyTensor's disk cache is warm after the
    first repeat) and the k-means start included; the first repeat is reported apart."""
    frame, truth = simulate_two_blobs(5000, 0.10, seed=0)
    data = toy_items(frame)
    rows = []
    for repeat in range(repeats):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            est = PCMixture(components=2, lam=16.0, restarts=10, seed=0).fit(data)
        total = time.perf_counter() - t0
        optimize = float(inference.get_attrs(est.idata_)["fit_info"]["map"]["seconds"])
        rows.append({"workload": "MAP, 10 restarts, lam = 16", "repeat": repeat, "seconds": total,
                     "optimizer_seconds": optimize})
        t0 = time.perf_counter()
        pc_path(data, SEC33_LAMS, truth.y, 10)
        rows.append({"workload": "path over 5 lams (10 restarts + warm start each)", "repeat": repeat,
                     "seconds": time.perf_counter() - t0, "optimizer_seconds": np.nan})
        t0 = time.perf_counter()
        ml_rep_em(data, 2, 16.0, restarts=10, seed=0)
        rows.append({"workload": "ML+rep EM, 10 restarts, lam = 16 (reference)", "repeat": repeat,
                     "seconds": time.perf_counter() - t0, "optimizer_seconds": np.nan})
        print(rows[-3:], flush=True)
    pd.DataFrame(rows).to_csv(OUT / "pcmix_timing.csv", index=False)


# ---------------------------------------------------------------------- the generalized posterior
def nuts_runs(draws: int, tune: int, chains: int) -> None:
    """NUTS on the generalized posterior of both toys at a PC setting; convergence and intervals."""
    runs = []
    frame, truth = simulate_intervals(seed=0)
    runs.append(("Sec. 3.2", 4.0, toy_items(frame), truth, pd.DataFrame({"x": [-0.5, 1.25, 1.75]})))
    frame, truth = simulate_two_blobs(5000, 0.10, seed=0)
    probe = pd.DataFrame({"x1": [0.0, 0.0], "x2": [0.0, 0.5], "x3": [0.0, 0.0], "x4": [0.0, 0.0], "x5": [0.0, 0.0]})
    runs.append(("Sec. 3.3, b = 10%", 16.0, toy_items(frame), truth, probe))
    rows = []
    for name, lam, data, truth, probe in runs:
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FitWarning)
            est = PCMixture(components=2, lam=lam, restarts=10, seed=0, method="nuts", draws=draws, tune=tune,
                            chains=chains, progressbar=False).fit(data)
        seconds = time.perf_counter() - t0
        summary = est.summary(hdi_prob=0.9)
        pred = est.predict(probe, ci=0.9)
        rows.append({"study": name, "lam": lam, "seconds": seconds, "max_rhat": summary.r_hat.max(),
                     "min_ess_bulk": summary.ess_bulk.min(), "min_ess_tail": summary.ess_tail.min(),
                     "error_rate": est.scores(y=truth.y)["error_rate"],
                     "rho": "; ".join(f"{m:.3f} [{lo:.3f}, {hi:.3f}]" for m, lo, hi in
                                      summary.loc[[i for i in summary.index if i.startswith("rho")],
                                                  ["mean", "hdi_5%", "hdi_95%"]].values),
                     "prob_at_probe": "; ".join(f"{p:.3f} [{lo:.3f}, {hi:.3f}]" for p, lo, hi in
                                                pred[["prob", "prob_low", "prob_high"]].values),
                     "warnings": " | ".join(str(w.message) for w in caught)})
        print(rows[-1], flush=True)
    pd.DataFrame(rows).to_csv(RESULTS / "pcmix_nuts.csv", index=False)


# ---------------------------------------------------------------------- Sec. 3.3: why ML+rep stays put
def study_mlrep_check(restarts: int, fractions=(0.2, 0.5, 1.0), lam: float = 64.0) -> None:
    """Does the ML+rep objective prefer PC's near-zero-error solution to the one its EM finds (then EM's
    search fails), or not (then the objective itself keeps ML+rep away)? For each labeled fraction: the ML+rep
    objective (eq. 10 with the log prior) at PC's MAP, at ML+rep's best of `restarts` starts, and at the end of
    an EM run started from PC's MAP, with each solution's error on all 5000 items."""
    from bayes_wsc.baselines.pcmix import ml_rep_objective

    rows = []
    for b in fractions:
        frame, truth = simulate_two_blobs(5000, b, seed=0)
        data = toy_items(frame)
        est = PCMixture(components=2, lam=lam, restarts=restarts, seed=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            est.fit(data)
        pc = point_to_params({k: est.idata_.posterior[k].values[0, 0] for k in FREE}, est.sd_floor)
        best = ml_rep_em(data, 2, lam, restarts=restarts, seed=0)
        from_pc = ml_rep_em(data, 2, lam, starts=[pc])
        rows.append({"labeled_fraction": b, "lam": lam,
                     "mlrep_objective_at_pc_map": ml_rep_objective(data, pc, lam),
                     "mlrep_objective_at_mlrep_best": ml_rep_objective(data, best.params, lam),
                     "mlrep_objective_em_from_pc_map": ml_rep_objective(data, from_pc.params, lam),
                     "error_pc_map": error_rate(data, pc, truth.y),
                     "error_mlrep_best": error_rate(data, best.params, truth.y),
                     "error_em_from_pc_map": error_rate(data, from_pc.params, truth.y)})
        print(rows[-1], flush=True)
    pd.DataFrame(rows).round(4).to_csv(RESULTS / "pcmix_sec33_mlrep_check.csv", index=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", choices=("all", "intervals", "blobs", "timing", "nuts", "mlrep-check"),
                        default="all", help="nuts: only the NUTS runs (as --nuts alone); mlrep-check: whether the "
                                            "ML+rep objective prefers PC's solution in Sec. 3.3")
    parser.add_argument("--restarts", type=int, default=10)
    parser.add_argument("--interval-seeds", type=int, default=5, help="data draws of Sec. 3.2 summarized")
    parser.add_argument("--landscape-restarts", type=int, default=40,
                        help="Sec. 3.2: also explore each lam's basins from this many starts (not used by the fits)")
    parser.add_argument("--basin-fractions", default="0.1", help="labeled fractions of Sec. 3.3 with basin tables")
    parser.add_argument("--timing-repeats", type=int, default=3)
    parser.add_argument("--nuts", action="store_true", help="also NUTS on the generalized posterior")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(exist_ok=True)
    if args.study in ("all", "timing"):
        timing(args.timing_repeats)
    if args.study in ("all", "intervals"):
        study_intervals(args.interval_seeds, args.restarts, args.landscape_restarts)
    if args.study in ("all", "blobs"):
        study_blobs(args.restarts, [float(b) for b in args.basin_fractions.split(",") if b])
    if args.study == "mlrep-check":
        study_mlrep_check(args.restarts)
    if args.nuts or args.study == "nuts":
        nuts_runs(args.draws, args.tune, args.chains)


if __name__ == "__main__":
    main()
