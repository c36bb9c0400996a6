"""Coverage of `method="laplace"` on the models without local parameters, against NUTS, on data from the model.

The models whose Laplace approximation has no locals to integrate out (noisy experts, the PC
mixture at lam = 1, perception, label proportions with the groups' class counts known) are
fitted by Laplace on the simulations of their SBC runs (`bayes_wsc.simulate.<model>.sbc_case`,
the same seed and simulation numbers as `benchmarks/sbc.py`, so the same prior draws and data
sets), and every SBC quantity is ranked among 99 draws thinned evenly from the Laplace draws,
exactly as SBC ranks NUTS's. A 90% central interval of the 99 draws covers the truth when the
rank is in 5..94 (90 of the 100 possible ranks); for NUTS the ranks come from the recorded SBC
run (`benchmarks/out/sbc_<model>[_<tag>]_ranks.csv`, written by benchmarks/sbc.py). `--nuts-check N` refits NUTS on the
first N simulations in the same run, to time it beside Laplace and to confirm that the recorded
run's data are the ones simulated now (its coverage of those simulations is printed beside the
recorded one).

    python benchmarks/laplace_coverage_models.py --sims 40 --nuts-check 2

Raw rows go to benchmarks/out/laplace_coverage_<model>.csv (appended per simulation; `--resume`
skips those done); the summary to benchmarks/results/laplace_coverage_models.csv.
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
from output_paths import HERE, OUT, require  # noqa: E402
#: model -> (sbc.py arguments of the recorded run, its ranks file's tag)
CASES = {
    "proportions": ([], ""),
    "perception": ([], ""),
    "experts": (["--tag", "pairlik"], "pairlik"),
    "pcmix": ([], ""),
    "proportions_logistic": (["--emission", "logistic", "--tag", "logistic"], "logistic"),
}
LOW, HIGH = 5, 94  # a rank among 99 draws in 5..94: inside the 90% central interval
SBC_SIMS = 100  # the recorded runs drew 100 prior draws; the first --sims of them are used


def case_of(name: str):
    """The model's SBC case and benchmarks/sbc.py's parsed arguments (the recorded run's sizes and seed)."""
    import sbc

    args = _sbc_args(["--model", name.split("_")[0], *CASES[name][0]])
    return sbc.build_case(args), args


class _Parsed(Exception):
    pass


def _sbc_args(argv):
    """benchmarks/sbc.py's own parser's result for `argv`: its `build_case` is stood in for while its
    `main` parses, and nothing runs."""
    import sbc

    captured, original = {}, sbc.build_case

    def build(args):
        captured["args"] = args
        raise _Parsed

    sbc.build_case = build
    try:
        sbc.main(argv)
    except _Parsed:
        pass
    finally:
        sbc.build_case = original
    return captured["args"]


def ranks(case, posterior, truth, seed, sim) -> dict:
    from bayes_wsc.sbc import parse_quantity, rank_of, select, thin_indices

    rng = np.random.default_rng([seed, sim, 4])
    out = {}
    for quantity in case.quantities:
        name, _ = parse_quantity(quantity)
        samples = select({name: np.asarray(posterior[name])}, quantity, sample_dims=2).reshape(-1)
        keep = thin_indices(samples.size, 99)
        out[quantity] = rank_of(float(select(truth, quantity)), samples[keep], rng)
    return out


def one(case, draw, sim, seed, method):
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.sbc import simulate_accepted, true_deterministics

    draw, data, _ = simulate_accepted(case, draw, sim, seed)
    est = case.estimator(int(np.random.SeedSequence([seed, sim, 3]).generate_state(1)[0] % 2**31))
    if method == "laplace":
        est.method = "laplace"
        est.draws = 1000
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FitWarning)
        est.fit(data)
    seconds = time.perf_counter() - t0
    truth = {**draw, **true_deterministics(est.model_, draw)}
    posterior = {n: est._fitted().posterior[n].values for n in est._fitted().posterior.data_vars}
    messages = [str(w.message) for w in caught if issubclass(w.category, FitWarning)]
    info = {}
    if method == "laplace":
        from bayes_wsc import inference

        record = inference.get_attrs(est._fitted())["fit_info"]["laplace"]
        info = {k: record.get(k) for k in ("pareto_k", "importance_ess_share", "mode_shift_sd", "condition_number",
                                           "positive_definite")}
        info["at_bound"] = len(record.get("at_bound") or [])
    return ranks(case, posterior, truth, seed, sim), seconds, messages, info


def raw_path(name: str, tag: str = "") -> Path:
    return OUT / f"laplace_coverage_{name}{'_' + tag if tag else ''}.csv"


def run(name: str, sims: int, nuts_check: int, resume: bool, tag: str = "") -> pd.DataFrame:
    from bayes_wsc.sbc import prior_draws

    case, args = case_of(name)
    seed = args.seed
    out = raw_path(name, tag)
    OUT.mkdir(exist_ok=True)
    if out.exists() and not resume:
        out.unlink()
    draws = prior_draws(case, SBC_SIMS, seed)
    for sim in range(sims):
        methods = ["laplace"] + (["nuts"] if sim < nuts_check else [])
        for method in methods:
            if (sim, method) in set(_done_pairs(out)):
                continue
            try:
                got, seconds, messages, info = one(case, draws[sim], sim, seed, method)
            except Exception as exc:  # noqa: BLE001 - a failed fit is a result: recorded, not hidden
                got, seconds, messages, info = {}, float("nan"), [f"fit failed: {type(exc).__name__}: {exc}"], {}
            row = {"model": name, "sim": sim, "method": method, "seconds": round(seconds, 2),
                   "warnings": len(messages), "messages": " | ".join(m[:200] for m in messages),
                   "may_not_cover": any("may not cover" in m for m in messages), **info,
                   **{f"rank:{q}": r for q, r in got.items()}}
            pd.DataFrame([row]).to_csv(out, mode="a", header=not out.exists(), index=False)
            inside = np.mean([LOW <= r <= HIGH for r in got.values()]) if got else float("nan")
            print(f"{name} sim {sim} {method}: {seconds:.1f} s, {inside:.2f} of quantities inside, "
                  f"{len(messages)} warnings", flush=True)
    return pd.read_csv(out)


def _done_pairs(out: Path):
    if not out.exists():
        return []
    table = pd.read_csv(out, usecols=["sim", "method"])
    return list(zip(table["sim"], table["method"]))


def summarize(name: str, table: pd.DataFrame) -> list[dict]:
    tag = CASES[name][1]
    ranks_csv = f"sbc_{name.split('_')[0]}{'_' + tag if tag else ''}_ranks.csv"
    recorded = pd.read_csv(require(OUT / ranks_csv, f"python benchmarks/sbc.py --model {name.split('_')[0]} --sims 100 "
                                   + " ".join(CASES[name][0]) + " --resume"))
    quantities = [c[5:] for c in table.columns if c.startswith("rank:")]
    rows = []
    lap = table[(table["method"] == "laplace") & table[f"rank:{quantities[0]}"].notna()]
    nuts = recorded[recorded["sim"].isin(lap["sim"])]
    check = table[table["method"] == "nuts"]
    if check.empty and raw_path(name).exists():  # a Laplace-only rerun: the NUTS refits of the first run
        first = pd.read_csv(raw_path(name))
        check = first[first["method"] == "nuts"]
    for q in quantities:
        lap_in = ((lap[f"rank:{q}"] >= LOW) & (lap[f"rank:{q}"] <= HIGH)).to_numpy()
        nuts_in = ((nuts[f"rank:{q}"] >= LOW) & (nuts[f"rank:{q}"] <= HIGH)).to_numpy()
        rows.append({"model": name, "quantity": q, "sims": len(lap), "laplace_coverage90": lap_in.mean(),
                     "nuts_coverage90": nuts_in.mean() if len(nuts) else np.nan,
                     "difference": lap_in.mean() - (nuts_in.mean() if len(nuts) else np.nan)})
    failed = int((table["method"] == "laplace").sum() - len(lap))
    both = lap.merge(nuts, on="sim", suffixes=("_l", "_n"))
    rows.append({"model": name, "quantity": "(all)", "sims": len(lap),
                 "laplace_coverage90": np.mean([r["laplace_coverage90"] for r in rows]),
                 "nuts_coverage90": np.mean([r["nuts_coverage90"] for r in rows]),
                 "difference": np.mean([r["difference"] for r in rows]),
                 "laplace_failed_fits": failed,
                 "laplace_seconds_median": lap["seconds"].median(),
                 "nuts_seconds_median_this_run": check["seconds"].median() if len(check) else np.nan,
                 "nuts_seconds_median_recorded": nuts["seconds"].median() if len(nuts) else np.nan,
                 "laplace_fits_warning_share": float((lap["warnings"] > 0).mean()),
                 "laplace_may_not_cover_share": float(lap["may_not_cover"].mean()) if "may_not_cover" in lap
                 else np.nan,
                 "nuts_rerun_rank_agreement": _rank_agreement(check, recorded, quantities),
                 "sims_compared": len(both)})
    return rows


#: a simulation's coverage is poor when under this share of its quantities' intervals cover
POOR_BELOW = 0.75


def warning_rates(name: str, table: pd.DataFrame) -> dict:
    """How often the Laplace fits warned "may not cover" among the simulations whose coverage was poor
    (`POOR_BELOW`) and among the others."""
    lap = table[(table["method"] == "laplace") & table["may_not_cover"].notna()] if "may_not_cover" in table \
        else table.iloc[:0]
    ranks = lap[[c for c in lap.columns if c.startswith("rank:")]]
    poor = (((ranks >= LOW) & (ranks <= HIGH)).mean(axis=1) < POOR_BELOW).to_numpy()
    warned = lap["may_not_cover"].astype(bool).to_numpy() if len(lap) else np.array([], bool)
    return {"model": name, "sims": len(lap), "poor": int(poor.sum()),
            "warns_when_poor": warned[poor].mean() if poor.any() else np.nan,
            "warns_otherwise": warned[~poor].mean() if (~poor).any() else np.nan}


def _rank_agreement(check: pd.DataFrame, recorded: pd.DataFrame, quantities) -> float:
    """Mean |rank this run - rank recorded| / 99 over the NUTS refits: near 0 when the data are the same
    (ranks of the same posterior differ only by Monte Carlo error), near 1/3 when they are not."""
    if check.empty:
        return np.nan
    merged = check.merge(recorded, on="sim", suffixes=("", "_rec"))
    gaps = [abs(merged[f"rank:{q}"] - merged[f"rank:{q}_rec"]).mean() / 99 for q in quantities]
    return float(np.mean(gaps))


def main(argv=None):
    sys.path.insert(0, str(HERE))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="proportions,perception,experts,pcmix")
    parser.add_argument("--sims", type=int, default=40)
    parser.add_argument("--nuts-check", type=int, default=2)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--summarize", action="store_true")
    parser.add_argument("--tag", default="", help="suffix of the raw files (a rerun beside the first)")
    args = parser.parse_args(argv)
    rows, rates = [], []
    for name in args.models.split(","):
        table = pd.read_csv(raw_path(name, args.tag)) if args.summarize else \
            run(name, args.sims, args.nuts_check, args.resume, args.tag)
        rows += summarize(name, table)
        rates.append(warning_rates(name, table))
        summary = pd.DataFrame(rows)
        (HERE / "results").mkdir(exist_ok=True)
        summary.round(4).to_csv(HERE / "results" / "laplace_coverage_models.csv", index=False)
    print(pd.DataFrame(rows).round(3).to_string(index=False))
    pd.DataFrame(rates).round(4).to_csv(HERE / "results" / "laplace_warning_rates_models.csv", index=False)
    print(pd.DataFrame(rates).round(3).to_string(index=False))


if __name__ == "__main__":
    main()
