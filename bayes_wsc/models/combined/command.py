"""`bayes-wsc fit combined` and `bayes-wsc simulate combined`: one posterior from every kind of supervision."""

from __future__ import annotations

import argparse

from bayes_wsc.commands.common import (add_sampling_options, add_sep_option, add_setting_options, add_simulate_options,
                                      add_variant_options, columns, positive_int, sampling_settings, setting_values)
from bayes_wsc.models.combined.settings import CombinedSettings
from bayes_wsc.outputs import input_table, output_file

HELP = ("every kind of supervision at once: hand labels, crowd votes, expert pairs, bag counts, group averages "
        "(items + any of votes, pairs, bags, groups)")
SIMULATE_HELP = "combined supervision: items, labels, votes, pairs, bags and group averages drawn from the model"
SIMULATE_FILES = ("items.csv", "votes.csv", "pairs.csv", "bags.csv", "groups.csv", "truth.csv", "truth.json")


def add_parser(parser: argparse.ArgumentParser) -> None:
    data = parser.add_argument_group("data")
    data.add_argument("--items", required=True, type=input_table("items file"),
                      help="CSV or Parquet: an id column, numeric features, and optional label, bag and group "
                           "columns (an empty cell: none)")
    data.add_argument("--votes", type=input_table("votes file"), default=None,
                      help="rows item, source, vote (an empty vote is an abstention)")
    data.add_argument("--pairs", type=input_table("pairs file"), default=None,
                      help="rows expert, i, j, link (1 must-link, 0 cannot-link)")
    data.add_argument("--bags", type=input_table("bags file"), default=None,
                      help="rows bag, then one column per class: counts, or proportions summing to 1")
    data.add_argument("--groups", type=input_table("groups file"), default=None,
                      help="rows group, he: a noisy average of the binary class, on the logit scale")
    data.add_argument("--out", required=True, type=output_file("fit file"), help="where to write the fit (netCDF)")
    add_sep_option(data)
    data.add_argument("--id-col", default="id", help="item id column of ITEMS (default: id)")
    data.add_argument("--features", type=columns, default=None,
                      help="feature columns, comma-separated (default: every column but id, label, bag, group)")
    data.add_argument("--classes", type=columns, default=None,
                      help="the classes, comma-separated (default: those the supervision names, sorted)")
    data.add_argument("--no-standardize", action="store_true", help="use the features as given")
    add_setting_options(parser.add_argument_group("model"), CombinedSettings)
    add_variant_options(parser)
    add_sampling_options(parser)


def run(args) -> None:
    from bayes_wsc.commands.common import fit_save_report
    from bayes_wsc.data.tables import read_table
    from bayes_wsc.models.combined.data import CONSTRAINT_COLUMNS, GROUP_COLUMNS, VOTE_COLUMNS, CombinedSupervision

    items = read_table(args.items, "items", sep=args.sep, text_columns=[args.id_col, "label", "bag", "group"])
    votes = read_table(args.votes, "votes", sep=args.sep, text_columns=VOTE_COLUMNS) if args.votes else None
    pairs = read_table(args.pairs, "pairs", sep=args.sep, text_columns=CONSTRAINT_COLUMNS[:3]) if args.pairs else None
    bags = read_table(args.bags, "bags", sep=args.sep, text_columns=["bag"]) if args.bags else None
    groups = read_table(args.groups, "groups", sep=args.sep, text_columns=GROUP_COLUMNS[:1]) if args.groups else None
    data = CombinedSupervision.from_frames(items, votes=votes, pairs=pairs, bags=bags, groups=groups,
                                           id_col=args.id_col, features=args.features, classes=args.classes,
                                           standardize=not args.no_standardize)
    print(f"{data.n_items} items, {data.n_features} features, classes {', '.join(data.classes)}; sources: "
          f"{', '.join(data.present_sources())}", flush=True)
    from bayes_wsc.models.combined.model import CombinedClassifier

    est = CombinedClassifier(**setting_values(args, CombinedSettings), **sampling_settings(args))
    fit_save_report(est, data, args)


def add_simulate_parser(parser: argparse.ArgumentParser) -> None:
    add_simulate_options(parser, SIMULATE_FILES)
    sim = parser.add_argument_group("simulation")
    sim.add_argument("--n-items", type=positive_int, default=200, help="items (default 200)")
    sim.add_argument("--n-features", type=positive_int, default=3, help="features (default 3)")
    sim.add_argument("--classes", type=positive_int, default=2, metavar="K", help="classes (default 2)")
    sim.add_argument("--labels", type=int, default=10, help="hand-labelled items (default 10)")
    sim.add_argument("--bags", type=int, default=4, help="bags of 6 items with known counts (default 4)")
    sim.add_argument("--groups", type=int, default=4, help="groups of 6 items with noisy averages, 2 classes only "
                                                           "(default 4)")


def run_simulate(args) -> None:
    from bayes_wsc.errors import InputError
    from bayes_wsc.models.combined.simulate import differs_from_the_fit, simulate_combined
    from bayes_wsc.simulate.files import in_folder, named, named_matrix, report, write_simulation

    if args.classes < 2:
        raise InputError(f"--classes must be at least 2, got {args.classes}")
    for option in ("labels", "bags", "groups"):
        if getattr(args, option) < 0:
            raise InputError(f"--{option} must be 0 or more, got {getattr(args, option)}")
    n_groups = args.groups if args.classes == 2 else 0
    tables, truth, classes = simulate_combined(args.n_items, args.n_features, args.classes, seed=args.seed,
                                               n_labels=args.labels, n_bags=args.bags, n_groups=n_groups)
    files = {f"{name}.csv": frame for name, frame in tables.items()}
    facts = {"model": "combined", "seed": args.seed, "generator": "bayes_wsc.models.combined.simulate.simulate_combined",
             "W": named_matrix(truth.W, truth.classes, tables["items"].columns[1:1 + args.n_features]),
             "b": named(truth.b, truth.classes), "accuracy": named(truth.accuracy, ["annotator1", "annotator2",
                                                                               "annotator3"]),
             "alpha": named(truth.alpha, ["expert1", "expert2"]), "beta": named(truth.beta, ["expert1", "expert2"]),
             "differs_from_the_fit": differs_from_the_fit()}
    written = write_simulation(args.out, files, facts, tables["items"][["id"]].assign(**{"class": classes}))
    command = f"bayes-wsc fit combined --items {in_folder(args.out, 'items.csv')}"
    for name in ("votes", "pairs", "bags", "groups"):
        if name in tables:
            command += f" --{name} {in_folder(args.out, name + '.csv')}"
    report(written, files, command + f" --out {in_folder(args.out, 'fit.nc')}")
