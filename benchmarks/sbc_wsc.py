"""Simulation-based calibration of the WSC model (seed 000), with `bayes_wsc.sbc`.

Every simulation draws (mu_loc, mu_scale, mu, w0, w1) and HE ~ N(mu, 1/sqrt(WH))
from the model's own prior, simulates J clicks per group given them, fits by
NUTS through `WSC.fit` (MAP start included) and ranks the truth of every
rho(k), pi, mu_loc, mu_scale, three mu[i], w0[0] and w1[0] among 99 draws
thinned from the chains.

    python benchmarks/sbc_wsc.py --sims 100 --groups 40 --items 20 --bins 5

Writes benchmarks/results/sbc_wsc[_<tag>]_{ranks,uniformity}.csv, the rank
histograms and ECDF plots as PNG and an HTML report; every finished
simulation is appended to the ranks CSV at once (`--resume` continues).
Exit status 1 when some quantity fails the Bonferroni chi-square test.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sims", type=int, default=100)
    parser.add_argument("--groups", type=int, default=40)
    parser.add_argument("--items", type=int, default=20)
    parser.add_argument("--bins", type=int, default=5)
    parser.add_argument("--wh", type=float, default=10.0)
    parser.add_argument("--model", default=None, help="a variant file from models/ instead of the default model")
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=2018)
    parser.add_argument("--tag", default="", help="suffix of the output files")
    parser.add_argument("--out", default=str(HERE / "results"))
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args(argv)

    from bayes_wsc.sbc import SBCResult, run_sbc
    from bayes_wsc.simulate.wsc import sbc_case

    case = sbc_case(args.groups, args.items, args.bins, wh=args.wh, model_file=args.model, draws=args.draws,
                    tune=args.tune, chains=args.chains)
    prefix = "sbc_wsc" + (f"_{args.tag}" if args.tag else "")
    ranks_csv = Path(args.out) / f"{prefix}_ranks.csv"

    def progress(row):
        print(f"sim {row['sim'] + 1}/{args.sims}: {row['seconds']:.0f} s, min ESS {row['ess_min']:.0f}, "
              f"{row['divergences']} divergences", flush=True)

    result = run_sbc(case, args.sims, seed=args.seed, out_csv=ranks_csv, resume=args.resume, progress=progress)
    result = SBCResult(result.table, result.quantities, result.n_rank_draws, case.name, case.description)
    command = "python benchmarks/sbc_wsc.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    paths = result.write(args.out, prefix=prefix, command=command)
    table = result.uniformity()
    print(f"\n{case.description}; {result.n_sims} simulations")
    print(table.round(4).to_string(index=False))
    for line in result.problems():
        print("note:", line)
    for path in paths.values():
        print("wrote", path)
    return 0 if table["passes"].all() else 1


if __name__ == "__main__":
    sys.exit(main())
