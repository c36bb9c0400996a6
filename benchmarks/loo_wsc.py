"""LOO picks the correctly specified first model (issue 16's LOO target).

Replicates of the Sec. 5 simulation of seed 000: I = 500 groups of J = 100 clicks, K = 15 bins,
mu ~ N(0, 1) and HE = mu + N(0, 0.5^2), so the model that generated the data has WH = 1 / 0.5^2 = 4.
Each replicate is fitted by NUTS with WH = 4 (correct) and WH = 10 (the paper's value: HE assumed
less noisy than it is), and the two fits are compared by `bayes_wsc.compare` (PSIS-LOO over groups,
each group's mu integrated out). Target: WH = 4 preferred in at least 9 of 10 replicates.

    python benchmarks/loo_wsc.py --reps 10

Rows (one per replicate) are appended to benchmarks/out/loo_wsc.csv (git-ignored) as they finish; `--resume`
skips finished replicates and `--summarize` prints the table of a finished file.

With `--conditional`, each fit's LOO is also computed from each group's likelihood conditional on its
own mu_i (clicks and HE at the drawn mu_i), the quantity the package integrates mu_i out of: columns
`*_cond_*` and `preferred_conditional` (written to loo_wsc_conditional.csv).

    python benchmarks/loo_wsc.py --reps 3 --conditional
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
from output_paths import OUT, require  # noqa: E402


def conditional_loo(est, data, wh: float):
    """PSIS-LOO from log p(clicks_i, HE_i | mu_i, w) at every draw (mu_i not integrated out)."""
    import numpy as np
    import xarray as xr
    from scipy.special import expit
    from scipy.stats import norm

    from bayes_wsc import inference

    post = est.idata_.posterior
    mu, w0, w1 = (post[n].values for n in ("mu", "w0", "w1"))  # (chain, draw, ...)
    mix = expit(-mu)[..., None] * w0[:, :, None, :] + expit(mu)[..., None] * w1[:, :, None, :]
    values = np.einsum("gk,cdgk->cdg", data.counts, np.log(mix)) + norm.logpdf(data.he, mu, 1 / np.sqrt(wh))
    groups = inference.Groups(posterior=post, log_likelihood=xr.Dataset(
        {"groups": (("chain", "draw", "group"), values)}, coords={"chain": post["chain"], "draw": post["draw"],
                                                                  "group": post["group"]}))
    return inference.loo(groups)


def one_replicate(rep: int, draws: int, tune: int, chains: int, groups: int, items: int,
                  conditional: bool = False) -> dict:
    import numpy as np

    from bayes_wsc import compare, inference
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.wsc import WSC
    from bayes_wsc.simulate import simulate_wsc

    data, _ = simulate_wsc(n_groups=groups, items_per_group=items, n_bins=15, sigma_h=0.5, seed=5000 + rep)
    fits, row = {}, {"rep": rep}
    for wh in (4.0, 10.0):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            est = WSC(wh=wh, method="nuts", draws=draws, tune=tune, chains=chains, seed=rep, progressbar=False)
            est.fit(data)
        fits[f"WH={wh:g}"] = est
        elpd = inference.elpd_values(est.loo())
        k = np.asarray(elpd.pareto_k)
        row.update({f"elpd_wh{wh:g}": elpd.elpd, f"se_wh{wh:g}": elpd.se,
                    f"max_k_wh{wh:g}": float(k.max()), f"bad_k_wh{wh:g}": int((k > elpd.good_k).sum()),
                    f"seconds_wh{wh:g}": time.perf_counter() - t0})
        if conditional:
            cond = inference.elpd_values(conditional_loo(est, data, wh))
            k = np.asarray(cond.pareto_k)
            row.update({f"elpd_cond_wh{wh:g}": cond.elpd, f"bad_k_cond_wh{wh:g}": int((k > cond.good_k).sum()),
                        f"median_k_cond_wh{wh:g}": float(np.median(k))})
    if conditional:
        row["preferred_conditional"] = "WH=4" if row["elpd_cond_wh4"] > row["elpd_cond_wh10"] else "WH=10"
    table = compare(fits)
    row.update({"preferred": table.index[0], "elpd_diff": float(table["elpd_diff"].iloc[1]),
                "dse": float(table["dse"].iloc[1])})
    return row


def summarize(frame: pd.DataFrame) -> str:
    won = int((frame["preferred"] == "WH=4").sum())
    lines = [frame.round(2).to_string(index=False), "",
             f"WH = 4 (correct) preferred in {won} of {len(frame)} replicates; elpd difference "
             f"{frame['elpd_diff'].mean():.1f} on average (its standard error {frame['dse'].mean():.1f}); "
             f"largest Pareto k {frame[['max_k_wh4', 'max_k_wh10']].to_numpy().max():.2f}."]
    if "preferred_conditional" in frame:
        bad = frame[["bad_k_cond_wh4", "bad_k_cond_wh10"]].to_numpy().mean() / frame["groups"].iloc[0]
        lines.append(f"Conditional on mu_i: WH = 4 preferred in {int((frame['preferred_conditional'] == 'WH=4').sum())} "
                     f"of {len(frame)}; {bad:.0%} of the groups' Pareto k above the threshold.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--groups", type=int, default=500)
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--out", type=Path, default=None, help="default out/loo_wsc[_conditional].csv")
    parser.add_argument("--conditional", action="store_true", help="also LOO conditional on each group's mu_i")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--summarize", action="store_true")
    args = parser.parse_args()
    args.out = args.out or OUT / ("loo_wsc_conditional.csv" if args.conditional else "loo_wsc.csv")
    if args.summarize:
        require(args.out, f"python benchmarks/loo_wsc.py --reps {args.reps}" + (" --conditional" * args.conditional))
        print(summarize(pd.read_csv(args.out)))
        return
    done = set(pd.read_csv(args.out)["rep"]) if args.resume and args.out.exists() else set()
    if not args.resume and args.out.exists():
        args.out.unlink()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for rep in range(args.reps):
        if rep in done:
            continue
        row = one_replicate(rep, args.draws, args.tune, args.chains, args.groups, args.items, args.conditional)
        row["groups"] = args.groups
        pd.DataFrame([row]).to_csv(args.out, mode="a", header=not args.out.exists(), index=False)
        print(f"replicate {rep}: {row['preferred']} preferred, elpd difference {row['elpd_diff']:.1f} "
              f"(se {row['dse']:.1f})", flush=True)
    print(summarize(pd.read_csv(args.out)))


if __name__ == "__main__":
    main()
