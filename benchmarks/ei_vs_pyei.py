"""The ecological-inference variant against PyEI on CCES 2016, as a user of aggregate data would run them.

Each state's bin mix (race: White / Black / Other, or college degree: no / yes) and Trump share are the
only input; the respondents' votes are the truth: each level's pooled P(Trump | level) and each state's
P(Trump | level, state). Methods, each timed in this run on the same data:

  default    the first model, `WSC()` (WH = 10), MAP: the model the variant replaces
  ei_map     models/ecological_inference.py, MAP
  ei_nuts    the same, NUTS at the estimator's defaults (4 chains x (1000 + 1000))
  pyei       PyEI's R x C multinomial-Dirichlet (`RowByColumnEI("multinomial-dirichlet").fit`) at its
             defaults: PyMC's NUTS through NumPyro, target_accept 0.99, 1500 tuning and 1000 draws per
             chain, PyMC's default chains (2 on a 2-core machine)

Reported per method and split: each level's estimate and 90% HDI against the truth, whether the HDI
covers it, the state-level RMSE (over states x levels, weighted by respondents, of the estimated
P(Trump | level, state) against the state's respondents; its noise floor is the RMSE that the true
cell probabilities would show against the cells' binomial noise, sqrt(sum n p (1 - p) / n) / sum n),
the state cells' 90% coverage (weighted by respondents), the worst R-hat and smallest bulk ESS over the
levels' estimands and over the state cells, ESS per second (smallest bulk ESS of the levels over the
fit's wall time) and seconds. Also the variant's collinearity check (`checks.composition`) on each
split and on halves of the states.

PyEI is an optional dependency (`pip install bayes-wsc[bench]`). Raw per-cell output goes to
benchmarks/out/ei_vs_pyei/; the summary to benchmarks/results/ei_vs_pyei.csv and
benchmarks/results/ei_collinearity.csv.

    python benchmarks/ei_vs_pyei.py                       # both splits, every method
    python benchmarks/ei_vs_pyei.py --splits race --methods ei_nuts,pyei
    git show REV:models/ecological_inference.py > benchmarks/out/ei_before.py    # an earlier version
    python benchmarks/ei_vs_pyei.py --methods ei_nuts --variant benchmarks/out/ei_before.py \
        --out benchmarks/results/ei_vs_pyei_before.csv --no-collinearity
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit

from bayes_wsc.checks.composition import VIF_MAX, variance_inflation
from bayes_wsc.draw_stats import chain_statistics, hdi

HERE = Path(__file__).resolve().parent
VARIANT = HERE.parent / "models" / "ecological_inference.py"
OUT = HERE / "out" / "ei_vs_pyei"
RESULTS = HERE / "results"
SPLITS = {"race": "race3", "college": "college"}
METHODS = ("default", "ei_map", "ei_nuts", "pyei")
CI = 0.9


def table1():
    """benchmarks/table1_real_data.py (benchmarks/ is no package: imported from its folder)."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    return importlib.import_module("table1_real_data")


def split_data(frame: pd.DataFrame, column: str):
    """The states' GroupedCounts (HE = logit of the Trump share) and the truth: pooled per level, and per
    state and level (share and respondents), in the data's group and bin order."""
    data = table1().training_counts(frame, [column], "state")
    levels = [str(b) for b in data.coords["bin"]]
    groups = [str(g) for g in data.group_ids]
    cells = frame.assign(level=frame[column].astype(str)).groupby(["state", "level"])["vote_trump"].agg(["sum", "size"])
    wins = cells["sum"].unstack().reindex(index=groups, columns=levels).fillna(0).to_numpy(float)
    size = cells["size"].unstack().reindex(index=groups, columns=levels).fillna(0).to_numpy(float)
    return data, {"levels": levels, "groups": groups, "pooled": wins.sum(0) / size.sum(0),
                  "cell_share": np.where(size > 0, wins / np.maximum(size, 1), np.nan), "cell_n": size}


def diagnostics(draws: np.ndarray) -> tuple[float, float]:
    """(worst R-hat, smallest bulk ESS) over the columns of (chain, draw, n) draws."""
    stats = [chain_statistics(draws[:, :, j]) for j in range(draws.shape[2])]
    return max(s[4] for s in stats), min(s[2] for s in stats)


def fit_wsc(data, method: str, **settings) -> tuple[dict, float]:
    """A WSC fit (the default model or the variant): levels' and cells' draws, (chain, draw, ...)."""
    from bayes_wsc.models.wsc import WSC

    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = WSC(method=method, progressbar=False, **settings).fit(data)
    seconds = time.perf_counter() - start
    post = est.idata_.posterior
    if "group_logit" in post:
        cells = expit(post["group_logit"].values[..., :, None] + post["bin_logit"].values[..., None, :])
    else:
        log_ratio = np.log(post["w1"].values) - np.log(post["w0"].values)
        cells = expit(post["mu"].values[..., :, None] + log_ratio[..., None, :])
    checks = est.checks_
    warned = [str(w.message) for w in caught if type(w.message).__name__ == "FitWarning"]
    stats = est.idata_.get("sample_stats")
    divergent = int(stats["diverging"].values.sum()) if stats is not None and "diverging" in stats else 0
    return {"levels": post["rho"].values, "cells": cells, "warnings": warned, "divergent": divergent,
            "checks": checks[["check", "effect", "tolerance", "flagged"]].to_dict("records")}, seconds


def fit_pyei(data, truth) -> tuple[dict, float]:
    """PyEI's R x C multinomial-Dirichlet at its defaults; its district-wide preferences as the levels."""
    from pyei.r_by_c import RowByColumnEI

    totals = np.asarray(data.group_totals, float)
    trump = np.rint(expit(data.he) * totals)
    group_fractions = (data.counts / totals[:, None]).T  # levels x states
    votes = np.stack([trump / totals, 1 - trump / totals])  # (Trump, other) x states
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ei = RowByColumnEI(model_name="multinomial-dirichlet")
        ei.fit(group_fractions, votes, totals.astype(int), demographic_group_names=truth["levels"],
               candidate_names=["Trump", "other"], progressbar=False)
    seconds = time.perf_counter() - start
    b = ei.sim_trace["posterior"]["b"].values[..., 0]  # (chain, draw, state, level): P(Trump | level, state)
    counts = np.asarray(data.counts, float)
    levels = (b * counts).sum(axis=2) / counts.sum(axis=0)  # PyEI's district-wide preference, per draw
    check = ei.sampled_voting_prefs[:, :, 0].reshape(levels.shape)  # the same, as PyEI computes it
    assert np.allclose(check, levels), "district-wide preferences differ from PyEI's own"
    divergent = int(ei.sim_trace["sample_stats"]["diverging"].values.sum())
    return {"levels": levels, "cells": b, "warnings": [], "checks": [], "divergent": divergent}, seconds


def score(method: str, split: str, fit: dict, seconds: float, truth: dict) -> tuple[dict, pd.DataFrame]:
    """One summary row and the per-cell table of a fit."""
    levels, cells = np.asarray(fit["levels"]), np.asarray(fit["cells"])
    one_point = levels.shape[0] * levels.shape[1] == 1
    flat_levels = levels.reshape(-1, levels.shape[-1])
    flat_cells = cells.reshape(-1, *cells.shape[2:])
    estimate, cell_mean = flat_levels.mean(0), flat_cells.mean(0)
    n, share = truth["cell_n"], truth["cell_share"]
    used = n > 0
    rmse = float(np.sqrt(np.sum(n[used] * (cell_mean[used] - share[used]) ** 2) / n[used].sum()))
    row = {"split": split, "method": method, "seconds": seconds, "state_rmse": rmse}
    cell_frame = pd.DataFrame({"split": split, "method": method, "state": np.repeat(truth["groups"], len(truth["levels"])),
                               "level": np.tile(truth["levels"], len(truth["groups"])), "n": n.ravel(),
                               "truth": share.ravel(), "estimate": cell_mean.ravel()})
    if one_point:
        low = high = np.full_like(estimate, np.nan)
        row.update(coverage_levels=np.nan, coverage_cells=np.nan, rhat_levels=np.nan, ess_levels=np.nan,
                   rhat_cells=np.nan, ess_cells=np.nan, ess_per_second=np.nan)
    else:
        low, high = hdi(flat_levels, CI).T
        cell_hdi = hdi(flat_cells.reshape(flat_cells.shape[0], -1), CI).reshape(*cell_mean.shape, 2)
        covered = (cell_hdi[..., 0] <= share) & (share <= cell_hdi[..., 1])
        rhat, ess = diagnostics(levels)
        rhat_cells, ess_cells = diagnostics(cells.reshape(*cells.shape[:2], -1))
        row.update(coverage_levels=float(np.mean((low <= truth["pooled"]) & (truth["pooled"] <= high))),
                   coverage_cells=float(np.sum(n[used] * covered[used]) / n[used].sum()),
                   rhat_levels=rhat, ess_levels=ess, rhat_cells=rhat_cells, ess_cells=ess_cells,
                   ess_per_second=ess / seconds)
        cell_frame["low"], cell_frame["high"] = cell_hdi[..., 0].ravel(), cell_hdi[..., 1].ravel()
    for j, level in enumerate(truth["levels"]):
        row.update({f"truth[{level}]": truth["pooled"][j], f"estimate[{level}]": estimate[j],
                    f"low[{level}]": low[j], f"high[{level}]": high[j]})
    row["flagged_checks"] = ";".join(c["check"] for c in fit["checks"] if c["flagged"])
    row["warnings"] = len(fit["warnings"])
    row["divergent"] = fit["divergent"]
    return row, cell_frame


def noise_floor(truth: dict) -> float:
    """The state-level RMSE of the cells' true probabilities against their respondents' binomial noise
    (the cells' shares standing in for the probabilities)."""
    n, p = truth["cell_n"], truth["cell_share"]
    used = n > 0
    return float(np.sqrt(np.sum(p[used] * (1 - p[used])) / n[used].sum()))


def collinearity_rows(frame: pd.DataFrame, n_halvings: int, seed: int) -> pd.DataFrame:
    """The largest VIF of each split by state, on all states and on `n_halvings` halves of them, and
    by finer groupings (state x gender, x age band, x both)."""
    t1 = table1()
    rows = []
    for split, column in SPLITS.items():
        for grouping in ("state", "state_gender", "state_age", "state_age_gender"):
            data = t1.training_counts(frame, [column], grouping)
            rows.append({"split": split, "grouping": grouping, "groups": data.n_groups, "part": "all",
                         "max_vif": float(variance_inflation(data.counts).max())})
        data = t1.training_counts(frame, [column], "state")
        halves = [float(variance_inflation(data.subset(data.group_positions(train)).counts).max())
                  for train, _ in t1.group_splits(data.group_ids, n_halvings, seed=seed)]
        rows.append({"split": split, "grouping": "state", "groups": len(data.group_ids) // 2,
                     "part": f"{n_halvings} halves: min", "max_vif": min(halves)})
        rows.append({"split": split, "grouping": "state", "groups": len(data.group_ids) // 2,
                     "part": f"{n_halvings} halves: max", "max_vif": max(halves)})
        rows.append({"split": split, "grouping": "state", "groups": len(data.group_ids) // 2,
                     "part": f"{n_halvings} halves: flagged", "max_vif": float(np.sum(np.array(halves) > VIF_MAX))})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", default=",".join(SPLITS), help="race, college")
    parser.add_argument("--methods", default=",".join(METHODS), help=", ".join(METHODS))
    parser.add_argument("--halvings", type=int, default=20, help="halves of the states for the collinearity check")
    parser.add_argument("--out", default=str(RESULTS / "ei_vs_pyei.csv"))
    parser.add_argument("--variant", default=str(VARIANT), help="another version of the variant's file (its ei_ rows)")
    parser.add_argument("--no-collinearity", action="store_true", help="skip the collinearity table")
    args = parser.parse_args(argv)
    splits, methods = args.splits.split(","), args.methods.split(",")
    frame = table1().prepare()
    OUT.mkdir(parents=True, exist_ok=True)
    rows, cells = [], []
    for split in splits:
        data, truth = split_data(frame, SPLITS[split])
        for method in methods:
            if method == "pyei":
                fit, seconds = fit_pyei(data, truth)
            elif method == "default":
                fit, seconds = fit_wsc(data, "map")
            else:
                fit, seconds = fit_wsc(data, method.split("_")[1], model_file=args.variant)
            row, cell = score(method, split, fit, seconds, truth)
            row["noise_floor"] = noise_floor(truth)
            row["load_1min"] = os.getloadavg()[0]
            rows.append(row)
            cells.append(cell)
            print(f"{split:8s} {method:8s} {seconds:6.1f} s  rmse {row['state_rmse']:.3f}  "
                  f"R-hat {row['rhat_levels']:.3f}  ESS {row['ess_levels']:.0f}  ESS/s {row['ess_per_second']:.2f}  "
                  + "  ".join(f"{lv} {row[f'estimate[{lv}]']:.3f} [{row[f'low[{lv}]']:.3f}, {row[f'high[{lv}]']:.3f}]"
                              f" ({row[f'truth[{lv}]']:.3f})" for lv in truth["levels"])
                  + (f"  flagged: {row['flagged_checks']}" if row["flagged_checks"] else ""), flush=True)
    summary = pd.DataFrame(rows)
    summary.to_csv(args.out, index=False, float_format="%.4g")
    pd.concat(cells).to_csv(OUT / f"{Path(args.out).stem}_cells.csv", index=False, float_format="%.4g")
    if args.no_collinearity:
        return 0
    collinearity = collinearity_rows(frame, args.halvings, seed=0)
    collinearity.to_csv(RESULTS / "ei_collinearity.csv", index=False, float_format="%.4g")
    print(collinearity.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
