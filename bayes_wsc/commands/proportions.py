"""`bayes-wsc fit proportions` and `bayes-wsc baseline llp`: learning from label proportions (Stolpe & Morik)."""

from __future__ import annotations

import argparse

from bayes_wsc.commands.common import (add_sampling_options, add_sep_option, add_variant_options, columns,
                                      positive_float, positive_int, sampling_settings)
from bayes_wsc.outputs import input_table, output_file

HELP = "class proportions (or counts) per group, several classes: a classifier for single items (Stolpe & Morik)"
LLP_HELP = "the LLP algorithm of Stolpe & Morik (k-means, evolutionary feature weights, cluster labeling)"
#: the defaults, chosen by accuracy on the Sec. 4 experiment (README, benchmarks/RESULTS.md); the model's own,
#: repeated here so that `--help` does not import it
DEFAULT_EMISSION = "logistic"
DEFAULT_BAG_LIKELIHOOD = "auto"


def _add_data_options(parser: argparse.ArgumentParser, out_type, out_help: str) -> None:
    data = parser.add_argument_group("data")
    data.add_argument("--items", required=True, type=input_table("items file"),
                      help="CSV or Parquet, one row per item: the group column, an optional id column, the features")
    data.add_argument("--proportions", required=True, type=input_table("proportions file"),
                      help="CSV or Parquet, one row per group: the group column and one column per class")
    data.add_argument("--out", required=True, type=out_type, help=out_help)
    add_sep_option(data)
    data.add_argument("--group-col", default="group", help="the group column of both tables (default: group)")
    data.add_argument("--id-col", default=None, help="an item id column (kept out of the features)")
    data.add_argument("--features", type=columns, default=None,
                      help="feature columns (default: every numeric column but the group and id columns; every "
                           "column for --emission categorical)")
    data.add_argument("--counts", action="store_true",
                      help="the class columns hold counts of items (adding up to the group's items), not proportions")


def add_parser(parser: argparse.ArgumentParser) -> None:
    _add_data_options(parser, output_file("fit file"), "where to write the fit (netCDF)")
    model = parser.add_argument_group("model")
    model.add_argument("--emission", choices=("logistic", "gaussian", "categorical"), default=DEFAULT_EMISSION,
                       help=f"how features depend on the class (default: {DEFAULT_EMISSION})")
    model.add_argument("--bag-likelihood", choices=("independent", "exact-counts", "auto"),
                       default=DEFAULT_BAG_LIKELIHOOD,
                       help="items' classes independent given the group's shares, or the group's counts known "
                            "exactly; auto (the default): exact-counts when the proportions are whole counts and "
                            "no --concentration is given, independent otherwise")
    shares = model.add_mutually_exclusive_group()
    shares.add_argument("--exact", action="store_true",
                        help="the proportions are known exactly (the default)")
    shares.add_argument("--concentration", type=positive_float, default=None, metavar="C",
                        help="noisy proportions: theta_i ~ Dirichlet(C Pi_i + 1) (independent bag likelihood)")
    model.add_argument("--mean-prior-sd", type=positive_float, default=3.0,
                       help="gaussian: sd of the Normal prior on standardized class means (default 3)")
    model.add_argument("--sd-prior-rate", type=positive_float, default=1.0,
                       help="gaussian: rate of the Gamma(2, rate) prior on standardized class sds (default 1)")
    model.add_argument("--w-concentration", type=positive_float, default=1.0,
                       help="categorical: Dirichlet concentration of each class's bin probabilities (default 1)")
    model.add_argument("--prior-sd", type=positive_float, default=1.0,
                       help="logistic: sd of the Normal prior on the weights of standardized features (default 1)")
    add_variant_options(parser)
    add_sampling_options(parser)


def read_items(args):
    from bayes_wsc.data.tables import read_table

    keys = [c for c in (args.group_col, getattr(args, "id_col", None)) if c]
    return read_table(args.items, "items", sep=args.sep, text_columns=keys)


def read_data(args, categorical: bool, items=None, exclude=()):
    """The two tables as `LabelProportions`; `exclude` names item columns that are not features by default."""
    from bayes_wsc.data.proportions import LabelProportions
    from bayes_wsc.data.tables import read_table

    items = read_items(args) if items is None else items
    proportions = read_table(args.proportions, "proportions", sep=args.sep, text_columns=[args.group_col])
    features = args.features
    if features is None and exclude:
        keep = set(items.columns) - set(exclude)
        features = [c for c in items.columns if c in keep and c not in (args.group_col, getattr(args, "id_col", None))]
    return LabelProportions.from_frames(items, proportions, group_col=args.group_col,
                                        id_col=getattr(args, "id_col", None), features=features, counts=args.counts,
                                        categorical=categorical)


def run(args) -> None:
    from bayes_wsc.commands.common import fit_save_report

    data = read_data(args, args.emission == "categorical")
    print(f"{data.n_items} items in {data.n_groups} groups, classes {', '.join(data.classes)}, "
          f"features {', '.join(data.features)}", flush=True)
    from bayes_wsc.models.proportions import ProportionsClassifier  # PyMC loads once the data are known to be good

    est = ProportionsClassifier(emission=args.emission, bag_likelihood=args.bag_likelihood,
                                concentration=args.concentration, mean_prior_sd=args.mean_prior_sd,
                                sd_prior_rate=args.sd_prior_rate, w_concentration=args.w_concentration,
                                prior_sd=args.prior_sd, **sampling_settings(args))
    fit_save_report(est, data, args)


# ---------------------------------------------------------------------- bayes-wsc baseline llp
def add_llp_parser(parser: argparse.ArgumentParser) -> None:
    _add_data_options(parser, output_file("LLP model file"),
                      "where to write the LLP model (JSON; `bayes-wsc predict` reads it)")
    llp = parser.add_argument_group("LLP (Alg. 1, with the paper's evolutionary settings)")
    llp.add_argument("--k", type=positive_int, default=None,
                     help="clusters (default: each k in 2..12, the lowest Err_Pi kept)")
    llp.add_argument("--labeling", choices=("exhaustive", "greedy"), default="exhaustive",
                     help="cluster labeling: all l^k labelings, or greedy (Alg. 2) (default: exhaustive)")
    llp.add_argument("--label-col", default=None,
                     help="a column of the items with the class of some items (empty elsewhere), used by eq. 8")
    llp.add_argument("--seed", type=int, default=0, help="random seed (default 0)")


def run_llp(args) -> None:
    from bayes_wsc.baselines.proportions import fit_llp_data
    from bayes_wsc.errors import InputError

    items = read_items(args)
    if args.label_col is not None and args.label_col not in items.columns:
        raise InputError(f"items has no column {args.label_col!r} (--label-col)")
    data = read_data(args, False, items, exclude=() if args.label_col is None else (args.label_col,))
    labels = None
    if args.label_col is not None:
        from bayes_wsc.data.labeled import read_labels

        labels, _ = read_labels(items, args.label_col, "items", data.classes)
    print(f"{data.n_items} items in {data.n_groups} groups, classes {', '.join(data.classes)}", flush=True)
    model = fit_llp_data(data, k=args.k, labeling=args.labeling, labels=labels, seed=args.seed)
    path = model.save(args.out)
    print(f"k = {model.k}, labeling {model.labeling}: Err_Pi = {model.err_pi:.4g}, Err_MSE = {model.err_mse:.4g}; "
          f"cluster labels {[model.classes[c] for c in model.labels]}")
    print(f"wrote {path}")


BASELINES = {"llp": (LLP_HELP, add_llp_parser, run_llp)}
