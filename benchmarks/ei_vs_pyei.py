"""The ecological-inference variant against PyEI on CCES 2016, as a user of aggregate data would run them.

Each state's bin mix (race: White / Black / Other or White / Black / Hispanic / Other, college degree,
born-again, age in three bands) and Trump share are the only input; the respondents' votes are the truth: each level's pooled P(Trump | level) and each state's
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
the state-level MAE (weighted likewise), the state cells' 90% coverage (weighted by respondents, and
unweighted) and the intervals' mean width, the worst R-hat and smallest bulk ESS over the
levels' estimands and over the state cells, ESS per second (smallest bulk ESS of the levels over the
fit's wall time) and seconds. Also the variant's collinearity check (`checks.composition`) on each
split and on halves of the states.

PyEI is an optional dependency (`pip install bayes-wsc[bench]`). Raw per-cell output goes to
benchmarks/out/ei_vs_pyei/; the summary to benchmarks/results/ei_vs_pyei.csv and
benchmarks/results/ei_collinearity.csv.

    python benchmarks/ei_vs_pyei.py                       # issue 42's splits (race4, born_again, age3), every method
    python benchmarks/ei_vs_pyei.py --splits race,college --methods ei_nuts,pyei
    python benchmarks/ei_vs_pyei.py --methods ei_nuts,before_nuts,pyei --others before=benchmarks/out/ei_before.py \
        --seed 42 --loo                                   # another version beside it; PSIS-LOO over states
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
SPLITS = {"race": "race3", "college": "college", "race4": "race4", "born_again": "born_again_level",
          "age3": "age3"}
#: the splits of issue 42 (race in 4 levels, born-again, age in 3 levels), run by default
DEFAULT_SPLITS = ("race4", "born_again", "age3")
#: age in three bands (the package's 18-29 and 30-44 bands joined)
AGE3 = ([17, 44, 64, 200], ["18-44", "45-64", "65+"])
METHODS = ("default", "ei_map", "ei_nuts", "pyei")
CI = 0.9
#: Monte Carlo draws of a held-out state's own effects per posterior draw, and posterior draws used, for LOO
LOO_EFFECT_DRAWS = 2000
LOO_POSTERIOR_DRAWS = 1000


def table1():
    """benchmarks/table1_real_data.py (benchmarks/ is no package: imported from its folder)."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    return importlib.import_module("table1_real_data")


def with_levels(frame: pd.DataFrame) -> pd.DataFrame:
    """table1_real_data's extract plus the levels of the splits it does not derive: race in four
    (White / Black / Hispanic / Other), born-again as no / yes, age in three bands (AGE3)."""
    out = frame.copy()
    out["race4"] = np.where(out["race"].isin(["White", "Black", "Hispanic"]), out["race"].astype(str), "Other")
    out["born_again_level"] = np.where(out["born_again"].astype(int) == 1, "yes", "no")
    out["age3"] = pd.cut(out["age"], AGE3[0], labels=AGE3[1]).astype(str)
    return out


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
    if "cell_logit" in post:
        cells = expit(post["cell_logit"].values)
    elif "group_logit" in post:
        cells = expit(post["group_logit"].values[..., :, None] + post["bin_logit"].values[..., None, :])
    else:
        log_ratio = np.log(post["w1"].values) - np.log(post["w0"].values)
        cells = expit(post["mu"].values[..., :, None] + log_ratio[..., None, :])
    checks = est.checks_
    warned = [str(w.message) for w in caught if type(w.message).__name__ == "FitWarning"]
    stats = est.idata_.get("sample_stats")
    divergent = int(stats["diverging"].values.sum()) if stats is not None and "diverging" in stats else 0
    effects = {n: post[n].values for n in ("a", "tau", "cell_scale") if n in post}
    return {"levels": post["rho"].values, "cells": cells, "warnings": warned, "divergent": divergent,
            "checks": checks[["check", "effect", "tolerance", "flagged"]].to_dict("records"),
            "effects": effects, "hyper": {n: post[n].values for n in ("tau", "cell_scale") if n in post}}, seconds


def fit_pyei(data, truth, seed: int) -> tuple[dict, float]:
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
               candidate_names=["Trump", "other"], progressbar=False, random_seed=seed)
    seconds = time.perf_counter() - start
    b = ei.sim_trace["posterior"]["b"].values[..., 0]  # (chain, draw, state, level): P(Trump | level, state)
    counts = np.asarray(data.counts, float)
    levels = (b * counts).sum(axis=2) / counts.sum(axis=0)  # PyEI's district-wide preference, per draw
    check = ei.sampled_voting_prefs[:, :, 0].reshape(levels.shape)  # the same, as PyEI computes it
    assert np.allclose(check, levels), "district-wide preferences differ from PyEI's own"
    divergent = int(ei.sim_trace["sample_stats"]["diverging"].values.sum())
    conc = ei.sim_trace["posterior"]["conc_params"].values  # (chain, draw, level, candidate)
    return {"levels": levels, "cells": b, "warnings": [], "checks": [], "divergent": divergent,
            "concentration": conc}, seconds


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
    mae = float(np.sum(n[used] * np.abs(cell_mean[used] - share[used])) / n[used].sum())
    row = {"split": split, "method": method, "seconds": seconds, "state_rmse": rmse, "state_mae": mae}
    cell_frame = pd.DataFrame({"split": split, "method": method, "state": np.repeat(truth["groups"], len(truth["levels"])),
                               "level": np.tile(truth["levels"], len(truth["groups"])), "n": n.ravel(),
                               "truth": share.ravel(), "estimate": cell_mean.ravel()})
    if one_point:
        low = high = np.full_like(estimate, np.nan)
        row.update(coverage_levels=np.nan, coverage_cells=np.nan, width_cells=np.nan, rhat_levels=np.nan,
                   ess_levels=np.nan,
                   rhat_cells=np.nan, ess_cells=np.nan, ess_per_second=np.nan)
    else:
        low, high = hdi(flat_levels, CI).T
        cell_hdi = hdi(flat_cells.reshape(flat_cells.shape[0], -1), CI).reshape(*cell_mean.shape, 2)
        covered = (cell_hdi[..., 0] <= share) & (share <= cell_hdi[..., 1])
        width = cell_hdi[..., 1] - cell_hdi[..., 0]
        rhat, ess = diagnostics(levels)
        rhat_cells, ess_cells = diagnostics(cells.reshape(*cells.shape[:2], -1))
        row.update(coverage_levels=float(np.mean((low <= truth["pooled"]) & (truth["pooled"] <= high))),
                   coverage_cells=float(np.sum(n[used] * covered[used]) / n[used].sum()),
                   width_cells=float(np.sum(n[used] * width[used]) / n[used].sum()),
                   coverage_cells_unweighted=float(np.mean(covered[used])),
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


def state_log_likelihood(data, fit: dict, seed: int) -> np.ndarray | None:
    """Each state's log-likelihood with its own effects integrated out, per posterior draw: (chain, draw,
    state), what PSIS-LOO over states needs (given its own effects a state's likelihood outweighs their
    prior and the Pareto k exceed 0.7). The integral is a Monte Carlo mean over LOO_EFFECT_DRAWS draws of
    the state's effects from their prior given the draw's hyperparameters, the same draws for every
    state and posterior draw: the EI variant's shift tau e (e ~ Normal(0, 1), the zero-sum constraint's
    1/51 ignored) and departures cell_scale_k z_k; PyEI's P(Trump | level) ~ Beta(its concentrations).
    None for a fit without draws. On LOO_POSTERIOR_DRAWS draws thinned evenly."""
    from scipy.special import gammaln, logsumexp

    totals = np.asarray(data.group_totals, float)
    y = expit(data.he) * totals
    composition = np.asarray(data.counts, float) / totals[:, None]
    binomln = gammaln(totals + 1) - gammaln(y + 1) - gammaln(totals - y + 1)
    rng = np.random.default_rng(seed)
    n_levels = composition.shape[1]
    if "a" in fit.get("effects", {}):
        a = fit["effects"]["a"]
        tau = fit["effects"].get("tau", np.zeros(a.shape[:2]))  # a variant without the shared shift: none
        scale = fit["effects"].get("cell_scale", np.zeros(a.shape[:2]))
        scale = scale if scale.ndim == a.ndim else np.broadcast_to(scale[..., None], a.shape)  # one for every bin
        chains, draws = tau.shape
        e = rng.standard_normal(LOO_EFFECT_DRAWS)
        z = rng.standard_normal((LOO_EFFECT_DRAWS, n_levels))

        def cell_draws(c, d):
            return expit(a[c, d][None, :] + tau[c, d] * e[:, None] + scale[c, d][None, :] * z)
    elif "concentration" in fit:
        conc = fit["concentration"]
        chains, draws = conc.shape[:2]
        gamma = rng.standard_gamma  # Beta(x, y) = G_x / (G_x + G_y), redrawn per posterior draw

        def cell_draws(c, d):
            g = gamma(conc[c, d], size=(LOO_EFFECT_DRAWS, *conc.shape[2:]))
            return g[..., 0] / g.sum(axis=-1)
    else:
        return None
    keep = np.unique(np.linspace(0, draws - 1, max(LOO_POSTERIOR_DRAWS // chains, 1)).astype(int))
    out = np.empty((chains, len(keep), len(totals)))
    for c in range(chains):
        for j, d in enumerate(keep):
            p = np.clip(cell_draws(c, d) @ composition.T, 1e-12, 1 - 1e-12)  # (effect draw, state)
            term = binomln[None, :] + y[None, :] * np.log(p) + (totals - y)[None, :] * np.log1p(-p)
            out[c, j] = logsumexp(term, axis=0) - np.log(LOO_EFFECT_DRAWS)
    return out


def loo_rows(split: str, pointwise: dict[str, np.ndarray]) -> list[dict]:
    """PSIS-LOO over states of each method's integrated log-likelihood, and each method's elpd difference
    from the first (the current variant) with its standard error (paired over states)."""
    from bayes_wsc import psis

    results = {m: psis.loo(v) for m, v in pointwise.items()}
    reference = next(iter(results))
    rows = []
    for method, result in results.items():
        diff = result.loo_i - results[reference].loo_i
        rows.append({"split": split, "method": method, "elpd_loo": result.elpd_loo, "se": result.se,
                     "p_loo": result.p_loo, "elpd_diff_vs_" + reference: float(diff.sum()),
                     "se_diff": float(np.sqrt(diff.size * np.var(diff))),
                     "max_pareto_k": float(np.max(result.pareto_k)),
                     "bad_k": int(np.sum(result.pareto_k > result.good_k)), "draws": result.n_samples})
    return rows


def truth_decomposition(split: str, truth: dict) -> list[dict]:
    """The states' true cells on the logit scale split as level + state shift + departure, by
    least squares weighted by the cells' binomial information (n p (1 - p), shares kept off 0 and 1 by
    half a respondent): the spread of the shifts (what one shift per state can follow) against each
    level's spread of the departures (what it cannot), each weighted by the cells' respondents."""
    n, share = truth["cell_n"], truth["cell_share"]
    used = n > 0
    p = np.where(used, (np.nan_to_num(share) * n + 0.5) / (n + 1), 0.5)
    target = np.log(p / (1 - p))
    weight = np.where(used, n * p * (1 - p), 0.0)
    n_groups, n_levels = n.shape
    design = np.concatenate([np.tile(np.eye(n_levels), (n_groups, 1)),
                             np.repeat(np.eye(n_groups), n_levels, axis=0)[:, 1:]], axis=1)
    root = np.sqrt(weight.ravel())
    coef = np.linalg.lstsq(design * root[:, None], target.ravel() * root, rcond=None)[0]
    shift = np.concatenate([[0.0], coef[n_levels:]])
    departure = (target.ravel() - design @ coef).reshape(n.shape)
    state_n = n.sum(axis=1)
    shift_sd = float(np.sqrt(np.cov(shift, aweights=state_n)))
    rows = [{"split": split, "level": "(state shift)", "sd": shift_sd, "respondents": float(state_n.sum())}]
    for k, level in enumerate(truth["levels"]):
        w = n[:, k]
        rows.append({"split": split, "level": level, "sd": float(np.sqrt(np.sum(w * departure[:, k] ** 2) / w.sum())),
                     "respondents": float(w.sum())})
    return rows


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
    parser.add_argument("--splits", default=",".join(DEFAULT_SPLITS), help=", ".join(SPLITS))
    parser.add_argument("--methods", default=",".join(METHODS), help=", ".join(METHODS))
    parser.add_argument("--halvings", type=int, default=20, help="halves of the states for the collinearity check")
    parser.add_argument("--out", default=str(RESULTS / "ei_vs_pyei.csv"))
    parser.add_argument("--variant", default=str(VARIANT), help="another version of the variant's file (its ei_ rows)")
    parser.add_argument("--no-collinearity", action="store_true", help="skip the collinearity table")
    parser.add_argument("--others", default="", help="other versions of the variant's file, LABEL=PATH,...: "
                                                     "methods LABEL_map / LABEL_nuts fit them beside it")
    parser.add_argument("--seed", type=int, default=0, help="the seed of every fit's sampler and of LOO's draws")
    parser.add_argument("--loo", action="store_true", help="PSIS-LOO over states of the NUTS fits and PyEI")
    args = parser.parse_args(argv)
    splits, methods = args.splits.split(","), args.methods.split(",")
    others = dict(item.split("=", 1) for item in args.others.split(",") if item)
    frame = with_levels(table1().prepare())
    OUT.mkdir(parents=True, exist_ok=True)
    rows, cells, loos, decomposition = [], [], [], []
    for split in splits:
        data, truth = split_data(frame, SPLITS[split])
        decomposition += truth_decomposition(split, truth)
        pointwise = {}
        for method in methods:
            if method == "pyei":
                fit, seconds = fit_pyei(data, truth, args.seed)
            elif method == "default":
                fit, seconds = fit_wsc(data, "map", seed=args.seed)
            else:
                variant = others.get(method.rsplit("_", 1)[0], args.variant)
                fit, seconds = fit_wsc(data, method.rsplit("_", 1)[1], model_file=variant, seed=args.seed)
            if args.loo and not method.endswith("map") and method != "default":
                pointwise[method] = state_log_likelihood(data, fit, args.seed)
            row, cell = score(method, split, fit, seconds, truth)
            for name, values in fit.get("hyper", {}).items():
                mean = np.asarray(values).reshape(-1, *np.shape(values)[2:]).mean(axis=0)
                row[f"{name}_mean"] = ";".join(f"{v:.3f}" for v in np.atleast_1d(mean))
            row["noise_floor"] = noise_floor(truth)
            row["load_1min"] = os.getloadavg()[0]
            rows.append(row)
            cells.append(cell)
            for message in fit["warnings"]:
                print(f"    warned: {message}", flush=True)
            print(f"{split:8s} {method:8s} {seconds:6.1f} s  mae {row['state_mae']:.3f}  rmse {row['state_rmse']:.3f}  "
                  f"cells covered {row['coverage_cells']:.2f} width {row['width_cells']:.3f}  "
                  f"R-hat {row['rhat_levels']:.3f}  ESS {row['ess_levels']:.0f}  ESS/s {row['ess_per_second']:.2f}  "
                  + "  ".join(f"{lv} {row[f'estimate[{lv}]']:.3f} [{row[f'low[{lv}]']:.3f}, {row[f'high[{lv}]']:.3f}]"
                              f" ({row[f'truth[{lv}]']:.3f})" for lv in truth["levels"])
                  + (f"  flagged: {row['flagged_checks']}" if row["flagged_checks"] else ""), flush=True)
        if pointwise:
            loos += loo_rows(split, pointwise)
            print(pd.DataFrame(loos[-len(pointwise):]).to_string(index=False), flush=True)
    summary = pd.DataFrame(rows)
    summary.to_csv(args.out, index=False, float_format="%.4g")
    stem = Path(args.out).with_suffix("")
    pd.DataFrame(decomposition).to_csv(f"{stem}_truth_spread.csv", index=False, float_format="%.4g")
    print(pd.DataFrame(decomposition).to_string(index=False))
    if loos:
        pd.DataFrame(loos).to_csv(f"{stem}_loo.csv", index=False, float_format="%.4g")
    pd.concat(cells).to_csv(OUT / f"{Path(args.out).stem}_cells.csv", index=False, float_format="%.4g")
    if args.no_collinearity:
        return 0
    collinearity = collinearity_rows(frame, args.halvings, seed=0)
    collinearity.to_csv(RESULTS / "ei_collinearity.csv", index=False, float_format="%.4g")
    print(collinearity.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
