"""`bayes-wsc fit experts`: clustering from the pairwise constraints of several uncertain experts (Chang et al.)."""

from __future__ import annotations

import argparse

from bayes_wsc.commands.common import (add_sampling_options, add_sep_option, add_variant_options, columns,
                                      positive_float, positive_int, sampling_settings)
from bayes_wsc.outputs import input_table, output_file

HELP = "noisy experts' must-link / cannot-link constraints (Chang et al.): items + constraints or labels"


def accuracy_prior(text: str) -> tuple[float, float]:
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"expected two numbers A,B, got {text!r}")
    return positive_float(parts[0]), positive_float(parts[1])


def add_parser(parser: argparse.ArgumentParser) -> None:
    data = parser.add_argument_group("data")
    data.add_argument("--items", required=True, type=input_table("items file"),
                      help="CSV or Parquet: an id column and numeric feature columns")
    source = data.add_mutually_exclusive_group(required=True)
    source.add_argument("--constraints", type=input_table("constraints file"),
                        help="CSV or Parquet with rows expert, i, j, link (1 must-link, 0 cannot-link)")
    source.add_argument("--expert-labels", type=input_table("expert labels file"),
                        help="CSV or Parquet with rows expert, id, label (partial clusterings)")
    data.add_argument("--out", required=True, type=output_file("fit file"), help="where to write the fit (netCDF)")
    add_sep_option(data)
    data.add_argument("--id-col", default="id", help="item id column of ITEMS (default: id)")
    data.add_argument("--features", type=columns, default=None,
                      help="feature columns, comma-separated (default: every column but the id)")
    data.add_argument("--no-standardize", action="store_true",
                      help="use the features as given instead of standardizing them")
    data.add_argument("--max-pairs-per-expert", type=positive_int, default=None, metavar="N",
                      help="with --expert-labels, keep at most N random pairs per expert (default: all)")
    model = parser.add_argument_group("model")
    model.add_argument("--clusters", type=int, required=True, metavar="K", help="number of clusters (>= 2)")
    model.add_argument("--prior-sd", type=positive_float, default=1.0,
                       help="sd of the Gaussian prior on W (the paper's lambda = 1 / (2 sd^2)); default 1")
    model.add_argument("--intercept-sd", type=positive_float, default=2.0, help="sd of the prior on b (default 2)")
    model.add_argument("--accuracy-prior", type=accuracy_prior, default=(2.0, 2.0), metavar="A,B",
                       help="alpha, beta ~ 0.5 + 0.5 Beta(A, B) (default 2,2; 1,1 is uniform on [0.5, 1])")
    model.add_argument("--restarts", type=positive_int, default=20, help="random restarts of the MAP (default 20)")
    add_variant_options(parser)
    add_sampling_options(parser)


def run(args) -> None:
    from bayes_wsc.commands.common import fit_save_report
    from bayes_wsc.data.pairwise import CONSTRAINT_COLUMNS, LABEL_COLUMNS, PairwiseConstraints
    from bayes_wsc.data.tables import read_table
    from bayes_wsc.estimator import DEFAULT_SEED

    # ids, experts and labels are text: '001' stays '001'
    items = read_table(args.items, "items", sep=args.sep, text_columns=[args.id_col])
    constraints = (read_table(args.constraints, "constraints", sep=args.sep, text_columns=CONSTRAINT_COLUMNS[:3])
                   if args.constraints else None)
    labels = (read_table(args.expert_labels, "expert labels", sep=args.sep, text_columns=LABEL_COLUMNS)
              if args.expert_labels else None)
    data = PairwiseConstraints.from_frames(
        items, constraints, labels, id_col=args.id_col, features=args.features,
        standardize=not args.no_standardize, max_pairs_per_expert=args.max_pairs_per_expert,
        seed=DEFAULT_SEED if args.seed is None else args.seed,
    )
    print(f"{data.n_items} items ({data.linked_items.size} in a constraint), {data.n_features} features, "
          f"{data.n_experts} experts, {data.n_constraints} constraints on {data.n_pairs} pairs", flush=True)
    from bayes_wsc.models.experts import NoisyExperts  # PyMC loads only once the data are known to be good

    a, b = args.accuracy_prior
    est = NoisyExperts(n_clusters=args.clusters, prior_sd=args.prior_sd, intercept_sd=args.intercept_sd,
                       accuracy_a=a, accuracy_b=b, restarts=args.restarts, **sampling_settings(args))
    fit_save_report(est, data, args)
