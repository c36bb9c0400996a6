"""`bayes-wsc fit wsc`: noisy group averages (Wager et al.): clicks plus a per-group HE."""

from __future__ import annotations

import argparse

from bayes_wsc.commands.common import (add_sampling_options, add_sep_option, add_setting_options, add_simulate_options,
                                      add_variant_options, columns, non_negative_float, number, positive_float,
                                      positive_int, sampling_settings, setting_values)
from bayes_wsc.models.wsc.settings import WSCSettings
from bayes_wsc.errors import InputError
from bayes_wsc.outputs import input_table, output_file

HELP = "noisy group averages (Wager et al.): clicks + per-group HE"
SIMULATE_HELP = "the simulation study of Wager et al., Sec. 5: clicks in groups with a noisy HE per group"
#: what `simulate wsc --out DIR` writes in DIR
SIMULATE_FILES = ("clicks.csv", "groups.csv", "truth.json")


def wh_value(text: str) -> float:
    return number(text, infinite=True, name="WH")


def add_parser(parser: argparse.ArgumentParser) -> None:
    data = parser.add_argument_group("data")
    data.add_argument("--clicks", required=True, type=input_table("clicks file", source=True),
                      help="CSV or Parquet, one row per item (click); a folder or glob of Parquet files "
                           "streams through Dask, for logs bigger than memory")
    data.add_argument("--scheduler", default=None, metavar="ADDRESS",
                      help="Dask distributed scheduler for Parquet clicks (default: local threads)")
    data.add_argument("--groups", required=True, type=input_table("groups file"),
                      help="CSV or Parquet, one row per group with he or he_prob")
    data.add_argument("--out", required=True, type=output_file("fit file"), help="where to write the fit (netCDF)")
    add_sep_option(data)
    data.add_argument("--group-col", default="group")
    data.add_argument("--behavior", type=columns, default=None,
                      help="behavior columns, crossed into bins (default: all but group and weight)")
    data.add_argument("--weight-col", default=None, help="per-item weights")
    he = data.add_mutually_exclusive_group()
    he.add_argument("--he-col", default=None, help="HE on the logit scale (default column: he)")
    he.add_argument("--he-prob-col", default=None, help="HE as a probability in (0, 1)")
    data.add_argument("--max-group-weight", type=positive_float, default=None, metavar="M",
                      help="down-weight each group to at most M items (Sec. 6.2)")
    model = parser.add_argument_group("model")
    model.add_argument("--wh", type=wh_value, default=10.0, help="weight of HE, 1/sigma_H^2; 'inf' fixes mu = HE (so does any WH above 1e5, with a note)")
    add_setting_options(model, WSCSettings)
    add_variant_options(parser)
    add_sampling_options(parser)


def run(args) -> None:
    from bayes_wsc.commands.common import fit_save_report
    from bayes_wsc.data.grouped import GroupedCounts
    from bayes_wsc.data.stream import grouped_counts_from_parquet, is_parquet_source, parts_read
    from bayes_wsc.data.tables import read_table

    if args.scheduler is not None and not is_parquet_source(args.clicks):
        raise InputError(f"--scheduler {args.scheduler!r} streams Parquet clicks through Dask; the clicks "
                         f"{str(args.clicks)!r} are a text table, read in memory: leave --scheduler out")
    keys = [args.group_col]  # ids are text: '001' stays '001'
    groups = read_table(args.groups, "groups", sep=args.sep, text_columns=keys)
    options = dict(group_col=args.group_col, behavior=args.behavior, weight_col=args.weight_col,
                   he_col=args.he_col, he_prob_col=args.he_prob_col, max_group_weight=args.max_group_weight)
    if is_parquet_source(args.clicks):
        data = grouped_counts_from_parquet(args.clicks, groups, scheduler=args.scheduler, **options)
        print(parts_read(args.clicks), flush=True)
    else:
        clicks = read_table(args.clicks, "clicks", sep=args.sep, text_columns=keys)
        data = GroupedCounts.from_frames(clicks, groups, **options)
    empty = int((data.group_totals <= 0).sum())
    print(f"{data.n_groups} groups{f' ({empty} without items)' if empty else ''}, {int(data.n_items.sum())} items, "
          f"{data.n_bins} behavior bins", flush=True)
    from bayes_wsc.models.wsc.model import WSC  # PyMC loads only once the data are known to be good

    est = WSC(**setting_values(args, WSCSettings), **sampling_settings(args))
    fit_save_report(est, data, args)


# ---------------------------------------------------------------------- bayes-wsc simulate wsc
def add_simulate_parser(parser: argparse.ArgumentParser) -> None:
    add_simulate_options(parser, SIMULATE_FILES)
    sizes = parser.add_argument_group("simulation (Sec. 5: mu ~ N(0, 1), HE ~ N(mu, sigma_H), rho(k) from 0.1 to 0.9)")
    sizes.add_argument("--n-groups", type=positive_int, default=500, metavar="I", help="groups (default 500)")
    sizes.add_argument("--group-size", type=positive_int, default=100, metavar="J",
                       help="clicks per group (default 100)")
    sizes.add_argument("--n-bins", type=positive_int, default=15, metavar="K", help="behavior bins (default 15)")
    sizes.add_argument("--sigma-h", type=non_negative_float, default=0.5,
                       help="sd of HE around mu (default 0.5; the fit's default --wh 10 assumes 0.32)")


def run_simulate(args) -> None:
    from bayes_wsc.models.wsc.simulate import counts_to_clicks, differs_from_the_fit, simulate_wsc
    from bayes_wsc.simulate.files import in_folder, named, report, write_simulation

    data, truth = simulate_wsc(n_groups=args.n_groups, items_per_group=args.group_size, n_bins=args.n_bins,
                               sigma_h=args.sigma_h, seed=args.seed)
    clicks, groups = counts_to_clicks(data)
    bins = list(data.bins.labels)
    facts = {
        "model": "wsc",
        "study": "Wager et al. (2015), Sec. 5: mu_i ~ N(0, 1), HE_i ~ N(mu_i, sigma_H), Z_ij ~ Bernoulli(sigmoid(mu_i)), "
                 "X_ij ~ Categorical(w_Z); rho(k) = P(Z = 1 | X = k) with pi the click-weighted mean of sigmoid(mu_i)",
        "generator": "bayes_wsc.simulate.simulate_wsc",
        "seed": args.seed,
        "settings": {"n_groups": args.n_groups, "group_size": args.group_size, "n_bins": args.n_bins,
                     "sigma_h": args.sigma_h, "mu_loc": 0.0, "mu_scale": 1.0},
        "pi": truth.pi,
        "rho": named(truth.rho, bins),
        "w0": named(truth.w0, bins),
        "w1": named(truth.w1, bins),
        "mu": named(truth.mu, data.group_ids),
        "differs_from_the_fit": differs_from_the_fit(args.sigma_h),
    }
    tables = {"clicks.csv": clicks, "groups.csv": groups}
    written = write_simulation(args.out, tables, facts)
    report(written, tables, f"bayes-wsc fit wsc --clicks {in_folder(args.out, 'clicks.csv')} "
                            f"--groups {in_folder(args.out, 'groups.csv')} --out {in_folder(args.out, 'fit.nc')}")
