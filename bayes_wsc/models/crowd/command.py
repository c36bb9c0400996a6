"""`bayes-wsc fit crowd` and `bayes-wsc simulate crowd`: each item's class from crowd votes (Dawid-Skene)."""

from __future__ import annotations

import argparse

from bayes_wsc.commands.common import (add_sampling_options, add_sep_option, add_setting_options, add_simulate_options,
                                      add_variant_options, columns, non_negative_int, positive_int, probability,
                                      sampling_settings, setting_values)
from bayes_wsc.models.crowd.settings import CrowdSettings
from bayes_wsc.outputs import input_table, output_file

HELP = "crowd labelling (Dawid-Skene): each item's class from annotators' or rules' votes, with abstentions"
SIMULATE_HELP = "crowd votes drawn from the Dawid-Skene model, optionally with adversarial annotators"
SIMULATE_FILES = ("votes.csv", "items.csv", "truth.csv", "truth.json")


def add_parser(parser: argparse.ArgumentParser) -> None:
    data = parser.add_argument_group("data")
    data.add_argument("--votes", required=True, type=input_table("votes file"),
                      help="CSV or Parquet with rows item, source, vote (an empty vote is an abstention)")
    data.add_argument("--out", required=True, type=output_file("fit file"), help="where to write the fit (netCDF)")
    add_sep_option(data)
    data.add_argument("--classes", type=columns, default=None,
                      help="the classes, comma-separated (default: those the votes name, sorted)")
    add_setting_options(parser.add_argument_group("model"), CrowdSettings)
    add_variant_options(parser)
    add_sampling_options(parser)


def run(args) -> None:
    from bayes_wsc.commands.common import fit_save_report
    from bayes_wsc.data.tables import read_table
    from bayes_wsc.models.crowd.data import VOTE_COLUMNS, CrowdVotes

    votes = read_table(args.votes, "votes", sep=args.sep, text_columns=VOTE_COLUMNS)
    data = CrowdVotes.from_frame(votes, classes=args.classes)
    print(f"{data.n_items} items, {data.n_sources} sources, {int(data.cast.sum())} votes "
          f"({int((~data.cast).sum())} abstentions), classes {', '.join(data.classes)}", flush=True)
    from bayes_wsc.models.crowd.model import CrowdClassifier

    est = CrowdClassifier(**setting_values(args, CrowdSettings), **sampling_settings(args))
    fit_save_report(est, data, args)


def add_simulate_parser(parser: argparse.ArgumentParser) -> None:
    add_simulate_options(parser, SIMULATE_FILES)
    sim = parser.add_argument_group("simulation")
    sim.add_argument("--n-items", type=positive_int, default=200, help="items (default 200)")
    sim.add_argument("--classes", type=positive_int, default=3, metavar="K", help="classes (default 3)")
    sim.add_argument("--sources", type=positive_int, default=5, help="honest annotators (default 5)")
    sim.add_argument("--adversarial", type=non_negative_int, default=0,
                     help="annotators that never give the true class (default 0)")
    sim.add_argument("--vote-rate", type=probability_or_one, default=0.6,
                     help="share of the items each annotator votes on; abstains on the rest (default 0.6)")


def probability_or_one(text: str) -> float:
    """A share in (0, 1]."""
    return 1.0 if text.strip() in ("1", "1.0") else probability(text)


def run_simulate(args) -> None:
    from bayes_wsc.errors import InputError
    from bayes_wsc.models.crowd.simulate import differs_from_the_fit, simulate_crowd
    from bayes_wsc.simulate.files import in_folder, named, named_matrix, report, write_simulation

    if args.classes < 2:
        raise InputError(f"--classes must be at least 2, got {args.classes}")
    votes, truth = simulate_crowd(args.n_items, args.classes, args.sources, vote_rate=args.vote_rate,
                                  adversarial=args.adversarial, seed=args.seed)
    from bayes_wsc.models.crowd.data import CrowdVotes

    items = CrowdVotes.from_frame(votes, classes=list(truth.classes)).wide()
    files = {"votes.csv": votes, "items.csv": items}
    facts = {"model": "crowd", "seed": args.seed, "generator": "bayes_wsc.models.crowd.simulate.simulate_crowd",
             "pi": named(truth.pi, truth.classes), "accuracy": named(truth.accuracy, truth.sources),
             "confusion": {str(s): named_matrix(m, truth.classes, truth.classes)
                           for s, m in zip(truth.sources, truth.confusion)},
             "differs_from_the_fit": differs_from_the_fit()}
    truth_table = items[["item"]].assign(**{"class": truth.classes[truth.z]})
    written = write_simulation(args.out, files, facts, truth_table)
    report(written, files, f"bayes-wsc fit crowd --votes {in_folder(args.out, 'votes.csv')} "
                           f"--out {in_folder(args.out, 'fit.nc')}")
