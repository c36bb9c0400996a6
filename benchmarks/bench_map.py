"""MAP against the paper's EM (Sec. 4), timed in one run on the same data, new data every round.

References, both plain NumPy:
  * per-click EM: the algorithm as the paper states it, one responsibility per
    click (eq. 4.5), bincount M-steps (eq. 4.3-4.4) and Newton for eq. 4.7,
    a fixed number of iterations (200);
  * count-table EM: `bayes_wsc.baselines.wsc.em_fit`, the same algorithm on the
    I x K sufficient statistics, run to convergence.
Candidate: `WSC(method="map")`, in-process. Every round simulates a new data
set of the same shapes (seeds 4, 5, ...) and times all three on it, so the
MAP never fits data it has seen: its compiled program is the one kept on disk
for the model's structure (`bayes_wsc.map_program`), with the data as inputs.
A warm-up fit on another data set (seed 3) comes first; it builds the program
if the cache lacks it and is timed and reported too, with where its program
came from. A refit of the last round's data is reported beside, labelled as
such. Each timing is the median over `--repeats` rounds.
Also reported: how far the MAP rho is from EM's (with the paper's priors,
flat mu, Dirichlet(2), they are the same fixed point).

    python benchmarks/bench_map.py --sizes 500x100x15,10000x100x30
    python benchmarks/bench_map.py --cli --sizes 10000x100x30 --repeats 3

With --cli, the issue's command-line target instead: for every round a new
data set is written to CSV (clicks, one row per click: group, bin; groups:
group, he), then whole processes are timed from the outside: the per-click EM
reading the CSVs with pandas, and `bayes-wsc fit wsc ... --method map` with
the paper's priors and with the defaults. A warm-up run of each on another
data set comes first (a user's earlier fit of the same structure), and a rerun
of the defaults on the last round's data is reported beside, labelled.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings

import numpy as np
from scipy.special import expit


def per_click_em(group: np.ndarray, bins: np.ndarray, he: np.ndarray, n_bins: int, wh: float = 10.0,
                 iterations: int = 200) -> np.ndarray:
    """The paper's EM on click arrays (group index and bin of every click); returns rho."""
    n_groups = he.size
    clicks_per_group = np.bincount(group, minlength=n_groups).astype(float)
    mu = he.copy()
    z = expit(mu)[group]
    for _ in range(iterations + 1):
        happy = np.bincount(bins, weights=z, minlength=n_bins)
        sad = np.bincount(bins, weights=1 - z, minlength=n_bins)
        w1 = (1 + happy) / (n_bins + happy.sum())
        w0 = (1 + sad) / (n_bins + sad.sum())
        happy_per_group = np.bincount(group, weights=z, minlength=n_groups)
        for _ in range(20):  # Newton on eq. 4.7
            p = expit(mu)
            step = (wh * (mu - he) + clicks_per_group * p - happy_per_group) / (wh + clicks_per_group * p * (1 - p))
            mu -= step
        p = expit(mu)[group]
        z = p * w1[bins] / (p * w1[bins] + (1 - p) * w0[bins])
    pi = float(np.mean(expit(mu)[group]))
    return pi * w1 / (pi * w1 + (1 - pi) * w0)


def median_time(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def run_size(n_groups: int, items: int, n_bins: int, repeats: int) -> dict:
    from bayes_wsc.baselines.wsc import em_fit
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.wsc import WSC
    from bayes_wsc.simulate import simulate_wsc

    def simulate(seed):
        return simulate_wsc(n_groups=n_groups, items_per_group=items, n_bins=n_bins, seed=seed)

    def clicks_of(data):
        counts = data.counts.astype(np.int64)
        return (np.repeat(np.repeat(np.arange(n_groups), n_bins), counts.ravel()),
                np.repeat(np.tile(np.arange(n_bins), n_groups), counts.ravel()))

    def timed(fn):
        t0 = time.perf_counter()
        out = fn()
        return time.perf_counter() - t0, out

    times = {k: [] for k in ("click", "table", "paper", "default")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        warm = simulate(3)[0]
        t_first, first = timed(lambda: WSC(mu_prior="flat", w_concentration=2.0).fit(warm))
        first_program = first.idata_.posterior.attrs["fit_info"]
        WSC().fit(warm)
        for round_ in range(repeats):
            data, truth = simulate(4 + round_)  # new data every round
            group, bins = clicks_of(data)
            t, rho_click = timed(lambda: per_click_em(group, bins, data.he, n_bins))
            times["click"].append(t)
            t, em = timed(lambda: em_fit(data, 10.0))
            times["table"].append(t)
            t, fitted = timed(lambda: WSC(mu_prior="flat", w_concentration=2.0).fit(data))
            times["paper"].append(t)
            t, fitted_default = timed(lambda: WSC().fit(data))
            times["default"].append(t)
        t_same, _ = timed(lambda: WSC().fit(data))  # a refit of data it has just fitted
    median = {k: statistics.median(v) for k, v in times.items()}
    rho_map = fitted.idata_.posterior["rho"].values[0, 0]
    rho_default = fitted_default.idata_.posterior["rho"].values[0, 0]
    programs = {json.loads(f.idata_.posterior.attrs["fit_info"])["map"]["compiled_program"]
                for f in (fitted, fitted_default)}
    rmse = lambda r: float(np.sqrt(np.mean((r - truth.rho) ** 2)))  # noqa: E731
    return {
        "size": f"I={n_groups} J={items} K={n_bins} ({len(group)} clicks)",
        "per_click_em_s": median["click"], "table_em_s": median["table"], "map_paper_priors_s": median["paper"],
        "map_default_s": median["default"], "map_paper_first_fit_s": t_first,
        "first_fit_program": json.loads(first_program)["map"]["compiled_program"],
        "new_data_programs": "/".join(sorted(programs)), "map_default_same_data_again_s": t_same,
        "ratio_map_paper_to_click_em": median["paper"] / median["click"],
        "ratio_map_default_to_click_em": median["default"] / median["click"],
        "max_abs_rho_map_vs_em": float(np.abs(rho_map - em.rho).max()),
        "max_abs_rho_click_em_vs_table_em": float(np.abs(rho_click - em.rho).max()),
        "rmse_map_default": rmse(rho_default), "rmse_em": rmse(em.rho),
    }


def em_from_csv(clicks_csv: str, groups_csv: str) -> np.ndarray:
    """The per-click EM as a user would run it on the CSV files: read with pandas, then Sec. 4."""
    import pandas as pd

    clicks = pd.read_csv(clicks_csv)
    groups = pd.read_csv(groups_csv)
    index = pd.Index(groups["group"])
    return per_click_em(index.get_indexer(clicks["group"]), clicks["bin"].to_numpy(), groups["he"].to_numpy(float),
                        int(clicks["bin"].max()) + 1)


def run_cli(n_groups: int, items: int, n_bins: int, repeats: int) -> dict:
    """Whole-process wall clock of the CLI MAP against the per-click EM on the same CSV files, new
    files every round (written to a temporary folder that is removed afterwards)."""
    import tempfile
    from pathlib import Path

    from bayes_wsc.simulate import simulate_wsc

    with tempfile.TemporaryDirectory(prefix="bench_cli_map_") as tmp:
        tables = [simulate_wsc(n_groups=n_groups, items_per_group=items, n_bins=n_bins, seed=seed)[0]
                  for seed in range(3, 4 + repeats)]
        return _time_cli(tables, Path(tmp))


def write_csv(data, folder) -> tuple:
    """The data as a user's two CSV files: one row per click (group, bin), one row per group (group, he)."""
    import pandas as pd

    n_groups, n_bins = data.counts.shape
    counts = data.counts.astype(np.int64)
    folder.mkdir(parents=True, exist_ok=True)
    clicks, groups = folder / "clicks.csv", folder / "groups.csv"
    pd.DataFrame({"group": np.repeat(np.repeat(np.arange(n_groups), n_bins), counts.ravel()),
                  "bin": np.repeat(np.tile(np.arange(n_bins), n_groups), counts.ravel())}).to_csv(clicks, index=False)
    pd.DataFrame({"group": np.arange(n_groups), "he": data.he}).to_csv(groups, index=False)
    return clicks, groups


def _time_cli(tables, tmp) -> dict:
    """Round 0 (tables[0]) warms up; rounds 1.. each time every command on a new table."""
    import subprocess
    import sys

    n_groups, n_bins = tables[0].counts.shape
    items = int(round(tables[0].counts.sum() / n_groups))

    def commands(clicks, groups, out):
        cli = [sys.executable, "-m", "bayes_wsc.cli", "fit", "wsc", "--clicks", str(clicks), "--groups",
               str(groups), "--method", "map", "--no-progress"]
        return {
            "per-click EM (pandas + NumPy)": [sys.executable, __file__, "--em-worker", str(clicks), str(groups)],
            "CLI MAP, paper's priors": cli + ["--mu-prior", "flat", "--w-concentration", "2", "--out", str(out / "a.nc")],
            "CLI MAP, defaults": cli + ["--out", str(out / "b.nc")],
        }

    def wall(cmd) -> float:
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        return time.perf_counter() - t0

    files = [write_csv(table, tmp / f"data{i}") for i, table in enumerate(tables)]
    for name, cmd in commands(*files[0], tmp / "data0").items():
        if name.startswith("CLI"):
            wall(cmd)  # an earlier fit of the same structure, on other data
    times = {}
    for i, (clicks, groups) in enumerate(files[1:], start=1):
        for name, cmd in commands(clicks, groups, tmp / f"data{i}").items():
            times.setdefault(name, []).append(wall(cmd))
    same = wall(commands(*files[-1], tmp / f"data{len(files) - 1}")["CLI MAP, defaults"])
    row = {"size": f"I={n_groups} J={items} K={n_bins} ({int(tables[0].counts.sum())} clicks), new data every round"}
    row.update({name: statistics.median(t) for name, t in times.items()})
    row["CLI MAP, defaults, rerun on the same data"] = same
    em = row["per-click EM (pandas + NumPy)"]
    for name in list(row):
        if name.startswith("CLI"):
            row[f"{name} / EM"] = row[name] / em
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="500x100x15,10000x100x30", help="IxJxK,...")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cli", action="store_true", help="time whole processes on CSV files (the P1 CLI target)")
    parser.add_argument("--em-worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.em_worker:
        em_from_csv(*args.em_worker)
        return None
    if args.cli:
        rows = [run_cli(*map(int, size.split("x")), args.repeats) for size in args.sizes.split(",")]
        for r in rows:
            print("  ".join(f"{k}: {v:.2f}" if isinstance(v, float) else f"{k}: {v}" for k, v in r.items()))
        return rows
    rows = [run_size(*map(int, size.split("x")), args.repeats) for size in args.sizes.split(",")]
    print(f"{'workload':42s} {'click EM':>9s} {'table EM':>9s} {'MAP(paper)':>10s} {'MAP(default)':>12s} "
          f"{'MAP/clickEM':>11s} {'|rho MAP-EM|':>12s}")
    for r in rows:
        print(f"{r['size']:42s} {r['per_click_em_s']:8.2f}s {r['table_em_s']:8.3f}s {r['map_paper_priors_s']:9.3f}s "
              f"{r['map_default_s']:11.3f}s {r['ratio_map_paper_to_click_em']:10.3f}x {r['max_abs_rho_map_vs_em']:12.1e}")
        print(f"{'':42s} warm-up fit, paper's priors: {r['map_paper_first_fit_s']:.2f} s (program "
              f"{r['first_fit_program']}); new data: program from {r['new_data_programs']}; defaults refit on the "
              f"same data: {r['map_default_same_data_again_s']:.3f} s")
    return rows


if __name__ == "__main__":
    main()
