"""Simulation-based calibration of any model of the package, with `bayes_wsc.sbc`.

Every simulation draws the parameters from the model's own prior, simulates a
data set given them, fits it by NUTS through the model's estimator (MAP start,
transforms and relabeling included) and ranks the truth of every chosen
quantity among 99 draws thinned from the chains. The cases live next to each
model's simulator (`bayes_wsc.simulate.<model>.sbc_case`), which says what is
drawn, what is held fixed and what is ranked:

* wsc: every rho(k), pi, mu_loc, mu_scale, three mu[i], w0[0] and w1[0];
* experts: each expert's alpha, beta, omega, the co-clustering probability of
  three fixed item pairs and |[b; W]| (all invariant to relabeling clusters);
* pcmix (lam = 1, the ordinary posterior): the larger weight, the components
  sorted by their mean on the first feature (weight, mean, sd, P(y = 1)),
  P(y = 1 | x) of four fixed items and the two log-likelihood terms;
* proportions (--emission, --bag): the emission's parameters of every class on the
  first feature (gaussian mean and sd; categorical w of every bin; logistic W and b),
  with the groups' class counts fixed (12 groups of 4 items, 2 classes by default).
* perception: every entry of W and b, and pi (3 clusters over 3 perception
  features, 2 features, 45 of 60 items seeds, a fifth of them in two sets).

    python benchmarks/sbc.py --model wsc --sims 100 --groups 40 --items 20 --bins 5
    python benchmarks/sbc.py --model experts --sims 100 --resume
    python benchmarks/sbc.py --model pcmix --sims 100 --resume
    python benchmarks/sbc.py --model proportions --sims 100 --resume
    python benchmarks/sbc.py --model perception --sims 100 --resume

Two processes can share one run (each takes every other simulation and
appends to the same ranks file); a last call without --shard writes the
report:

    python benchmarks/sbc.py --model pcmix --seed 2019 --tag seed2019 --resume --shard 0/2 &
    python benchmarks/sbc.py --model pcmix --seed 2019 --tag seed2019 --resume --shard 1/2
    python benchmarks/sbc.py --model pcmix --seed 2019 --tag seed2019 --resume

Writes benchmarks/out/sbc_<model>[_<tag>]_{ranks,uniformity}.csv, the rank
histograms and ECDF plots as PNG and an HTML report (git-ignored), and the
uniformity table again to benchmarks/results/ (committed); every finished
simulation is appended to the ranks CSV at once (`--resume` continues).
Exit status 1 when some quantity fails the Bonferroni chi-square test.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
from output_paths import OUT, RESULTS  # noqa: E402

MODELS = ("wsc", "experts", "pcmix", "proportions", "perception")


def build_case(args):
    """The model's `SBCCase` with the sizes and sampler settings of the command line."""
    nuts = {"draws": args.draws, "tune": args.tune, "chains": args.chains}
    if args.model == "wsc":
        from bayes_wsc.simulate.wsc import sbc_case

        return sbc_case(args.groups, args.items or 20, args.bins, wh=args.wh, model_file=args.variant, mu=args.mu,
                        **nuts)
    if args.variant:
        raise SystemExit(f"--variant is only supported with --model wsc, not {args.model}")
    if args.model == "proportions":
        from bayes_wsc.simulate.proportions import sbc_case

        return sbc_case(args.emission, args.bag, n_groups=args.groups if args.groups != 40 else 12,
                        group_size=args.items or 4, n_classes=args.clusters or 2, n_features=args.features or 1,
                        n_bins=args.bins if args.bins != 5 else 4, **nuts)
    if args.model == "experts":
        from bayes_wsc.simulate.experts import sbc_case

        return sbc_case(args.items or 30, args.features or 2, args.clusters or 2, args.experts,
                        args.pairs, restarts=args.restarts or 4, **nuts)
    if args.model == "perception":
        from bayes_wsc.simulate.perception import sbc_case

        return sbc_case(args.items or 60, args.features or 2, n_seeded=args.seeded, **nuts)
    from bayes_wsc.simulate.pcmix import sbc_case

    return sbc_case(args.items or 40, args.features or 1, args.clusters or 2, args.labeled,
                    restarts=args.restarts or 4, **nuts)


def main(argv=None, program: str = "benchmarks/sbc.py", prefix: str | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=MODELS, default="wsc")
    parser.add_argument("--sims", type=int, default=100)
    sizes = parser.add_argument_group("data sizes (defaults per model in its sbc_case)")
    sizes.add_argument("--items", type=int, default=None,
                       help="wsc: clicks per group (20); experts: items (30); pcmix: items (40); perception: items (60)")
    sizes.add_argument("--groups", type=int, default=40, help="wsc: groups")
    sizes.add_argument("--bins", type=int, default=5, help="wsc: behavior bins")
    sizes.add_argument("--wh", type=float, default=10.0, help="wsc: weight of the rater's HE")
    sizes.add_argument("--features", type=int, default=None, help="experts (2), pcmix (1), perception (2): features")
    sizes.add_argument("--clusters", type=int, default=None, help="experts: clusters; pcmix: components (2)")
    sizes.add_argument("--experts", type=int, default=3, help="experts: experts")
    sizes.add_argument("--pairs", type=int, default=60, help="experts: pairs rated by each expert")
    sizes.add_argument("--labeled", type=float, default=0.5, help="pcmix: share of items with a label")
    sizes.add_argument("--seeded", type=int, default=45, help="perception: seeded items (of --items, 60)")
    sizes.add_argument("--restarts", type=int, default=None, help="experts, pcmix: MAP restarts (4)")
    sizes.add_argument("--emission", default="gaussian", help="proportions: gaussian, categorical or logistic")
    sizes.add_argument("--bag", default="exact-counts", help="proportions: independent or exact-counts")
    parser.add_argument("--variant", default=None, help="wsc: a variant file from models/ instead of the default model")
    parser.add_argument("--mu", default=None, choices=("sampled", "integrated", "grid"),
                        help="wsc: how NUTS treats the group qualities (default: the estimator's, the grid)")
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=2018)
    parser.add_argument("--tag", default="", help="suffix of the output files")
    parser.add_argument("--out", default=str(OUT), help="folder of the ranks, figures and report")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--shard", default="0/1", metavar="I/N",
                        help="run simulations I, I+N, I+2N, ... only (with --resume; N processes share one run)")
    args = parser.parse_args(argv)

    from bayes_wsc.sbc import SBCResult, run_sbc

    case = build_case(args)
    prefix = (prefix or f"sbc_{args.model}") + (f"_{args.tag}" if args.tag else "")
    ranks_csv = Path(args.out) / f"{prefix}_ranks.csv"

    def progress(row):
        print(f"sim {row['sim'] + 1}/{args.sims}: {row['seconds']:.0f} s, min ESS {row['ess_min']:.0f}, "
              f"{row['divergences']} divergences", flush=True)

    try:
        shard = tuple(int(part) for part in args.shard.split("/"))
        if len(shard) != 2:
            raise ValueError
    except ValueError:
        parser.error(f"--shard must be I/N, got {args.shard!r}")
    result = run_sbc(case, args.sims, seed=args.seed, out_csv=ranks_csv, resume=args.resume, progress=progress,
                     shard=shard)
    if shard[1] > 1:
        print(f"shard {args.shard} done; run again with --resume and no --shard for the report")
        return 0
    result = SBCResult(result.table, result.quantities, result.n_rank_draws, case.name, case.description)
    command = f"python {program} " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    paths = result.write(args.out, prefix=prefix, command=command)
    table = result.uniformity()
    if Path(args.out) == OUT:
        RESULTS.mkdir(exist_ok=True)
        paths["summary"] = RESULTS / f"{prefix}_uniformity.csv"
        table.to_csv(paths["summary"], index=False)
    print(f"\n{case.description}; {result.n_sims} simulations")
    print(table.round(4).to_string(index=False))
    for line in result.problems():
        print("note:", line)
    for path in paths.values():
        print("wrote", path)
    return 0 if table["passes"].all() else 1


if __name__ == "__main__":
    sys.exit(main())
