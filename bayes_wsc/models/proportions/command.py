"""`bayes-wsc fit proportions` and `bayes-wsc baseline llp`: learning from label proportions (Stolpe & Morik)."""

from __future__ import annotations

import argparse

from bayes_wsc.commands.common import (add_sampling_options, add_sep_option, add_setting_options, add_simulate_options,
                                      add_variant_options, columns, positive_int, sampling_settings, setting_values)
from bayes_wsc.models.proportions.settings import ProportionsSettings
from bayes_wsc.outputs import input_table, output_file

HELP = "class proportions (or counts) per group, several classes: a classifier for single items (Stolpe & Morik)"
SIMULATE_HELP = ("label proportions (Stolpe & Morik): groups of items with each group's class shares, from the "
                 "model or from a UCI data set in random groups (Sec. 4, --dataset)")
#: what `simulate proportions --out DIR` writes in DIR
SIMULATE_FILES = ("items.csv", "proportions.csv", "truth.csv", "truth.json")
#: the data sets of Sec. 4, bundled with scikit-learn
UCI_DATASETS = ("breast_cancer", "wine")
LLP_HELP = "the LLP algorithm of Stolpe & Morik (k-means, evolutionary feature weights, cluster labeling)"


def _add_data_options(parser: argparse.ArgumentParser, out_type, out_help: str) -> None:
    data = parser.add_argument_group("data")
    data.add_argument("--items", required=True, type=input_table("items file"),
                      help="CSV or Parquet, one row per item: the group column, an optional id column, the features")
    data.add_argument("--proportions", required=True, type=input_table("proportions file"),
                      help="CSV or Parquet, one row per group: the group column and one column per class")
    data.add_argument("--out", required=True, type=out_type, help=out_help)
    add_sep_option(data)
    data.add_argument("--group-col", default="group", help="the group column of both tables (default: group)")
    data.add_argument("--id-col", default="id", help="the item id column, kept out of the features (default: id, "
                                                     "when ITEMS has one; else the rows are numbered)")
    data.add_argument("--features", type=columns, default=None,
                      help="feature columns (default: every numeric column but the group and id columns; every "
                           "column for --emission categorical)")
    data.add_argument("--counts", action="store_true",
                      help="the class columns hold counts of items (adding up to the group's items), not proportions")


def add_parser(parser: argparse.ArgumentParser) -> None:
    _add_data_options(parser, output_file("fit file"), "where to write the fit (netCDF)")
    model = parser.add_argument_group("model")
    add_setting_options(model, ProportionsSettings, "emission", "bag_likelihood")
    shares = model.add_mutually_exclusive_group()
    shares.add_argument("--exact", action="store_true",
                        help="the proportions are known exactly (the default)")
    add_setting_options(shares, ProportionsSettings, "concentration")
    add_setting_options(model, ProportionsSettings, "mean_prior_sd", "sd_prior_rate", "w_concentration", "prior_sd",
                        "feature_map", "n_basis", "restarts")
    add_variant_options(parser)
    add_sampling_options(parser)


def read_items(args):
    from bayes_wsc.data.tables import read_table

    keys = [c for c in (args.group_col, getattr(args, "id_col", "id")) if c]
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
        features = [c for c in items.columns if c in keep and c not in (args.group_col, getattr(args, "id_col", "id"))]
    return LabelProportions.from_frames(items, proportions, group_col=args.group_col,
                                        id_col=getattr(args, "id_col", "id"), features=features, counts=args.counts,
                                        categorical=categorical)


def run(args) -> None:
    from bayes_wsc.commands.common import fit_save_report

    data = read_data(args, args.emission == "categorical")
    print(f"{data.n_items} items in {data.n_groups} groups, classes {', '.join(data.classes)}, "
          f"features {', '.join(data.features)}", flush=True)
    from bayes_wsc.models.proportions.model import ProportionsClassifier  # PyMC loads once the data are known to be good

    est = ProportionsClassifier(**setting_values(args, ProportionsSettings), **sampling_settings(args))
    fit_save_report(est, data, args)


# ---------------------------------------------------------------------- bayes-wsc simulate proportions
def add_simulate_parser(parser: argparse.ArgumentParser) -> None:
    add_simulate_options(parser, SIMULATE_FILES)
    source = parser.add_argument_group("items")
    source.add_argument("--dataset", choices=UCI_DATASETS, default=None,
                        help="a UCI data set bundled with scikit-learn, features scaled to [0, 1] and items split "
                             "into random groups (Sec. 4.1) (default: items drawn from the model)")
    source.add_argument("--group-size", type=positive_int, default=None, metavar="SIGMA",
                        help="items per group (default 8; with --dataset 16, the last group smaller)")
    source.add_argument("--n-groups", type=positive_int, default=None, help="simulated groups (default 50)")
    source.add_argument("--emission", choices=("logistic", "gaussian", "categorical"), default=None,
                        help="how simulated features depend on the class (default logistic: x ~ N(0, I), "
                             "z ~ softmax(x W + b); gaussian: x ~ N(mean_z, sd_z); categorical: one column bin)")
    source.add_argument("--n-classes", type=positive_int, default=None, help="simulated classes (default 2)")
    source.add_argument("--n-features", type=positive_int, default=None,
                        help="simulated features, logistic or gaussian (default 3)")
    source.add_argument("--n-bins", type=positive_int, default=None, help="categorical: levels of bin (default 6)")


def run_simulate(args) -> None:
    import pandas as pd

    from bayes_wsc.errors import InputError
    from bayes_wsc.simulate.files import in_folder, named, named_matrix, report, write_simulation
    from bayes_wsc.models.proportions.simulate import (differs_from_the_fit, simulate_proportion_tables,
                                                     uci_proportion_tables)

    fit = f"bayes-wsc fit proportions --items {in_folder(args.out, 'items.csv')} " \
          f"--proportions {in_folder(args.out, 'proportions.csv')}"
    if args.dataset is not None:
        for option in ("n_groups", "emission", "n_classes", "n_features", "n_bins"):
            if getattr(args, option) is not None:
                raise InputError(f"--{option.replace('_', '-')} is for simulated items; --dataset {args.dataset} "
                                 "has its own (give --group-size)")
        size = 16 if args.group_size is None else args.group_size
        items, proportions, classes = uci_proportion_tables(args.dataset, size, seed=args.seed)
        truth_table = pd.DataFrame({"id": items["id"], "group": items["group"], "class": classes})
        facts = {"model": "proportions", "generator": "bayes_wsc.models.proportions.simulate.uci_proportion_tables",
                 "study": f"Stolpe & Morik (2011), Sec. 4.1: the UCI data set {args.dataset} (scikit-learn), every "
                          f"feature scaled to [0, 1], the items split uniformly at random into groups of {size} (the "
                          "last one smaller), each group keeping only its label proportions",
                 "seed": args.seed, "settings": {"dataset": args.dataset, "group_size": size},
                 "classes": list(proportions.columns[1:]),
                 "class_shares": named(pd.Series(classes).value_counts(normalize=True)
                                       .reindex(proportions.columns[1:]).to_numpy(), proportions.columns[1:]),
                 "differs_from_the_fit": "the items and their classes are a real data set: no parameter of the "
                                         "fit generated them, and nothing is drawn from its prior; only the "
                                         "grouping is random. `sbc_case` of bayes_wsc.models.proportions.simulate "
                                         "draws from the fit's own prior."}
    else:
        settings = {"emission": args.emission or "logistic", "n_groups": args.n_groups or 50,
                    "group_size": args.group_size or 8, "n_classes": args.n_classes or 2}
        if settings["n_classes"] < 2:
            raise InputError(f"--n-classes must be at least 2, got {settings['n_classes']}")
        if settings["emission"] == "categorical":
            if args.n_features is not None:
                raise InputError("--n-features is for --emission logistic or gaussian; categorical items have one "
                                 "column, bin (give --n-bins)")
            settings["n_bins"] = args.n_bins or 6
        else:
            if args.n_bins is not None:
                raise InputError("--n-bins is for --emission categorical")
            settings["n_features"] = args.n_features or 3
        items, proportions, truth = simulate_proportion_tables(**settings, seed=args.seed)
        classes = list(proportions.columns[1:])
        truth_table = pd.DataFrame({"id": items["id"], "group": items["group"],
                                    "class": pd.Series(classes).to_numpy()[truth.z]})
        features = [c for c in items.columns if c not in ("id", "group")]
        params = dict(truth.params)
        if "W" in params:  # logistic: the zero-sum representative, on the simulated (standard normal) features
            parameters = {"W": named_matrix(params["W"], classes, features), "b": named(params["b"], classes)}
        elif "mean" in params:
            parameters = {"mean": named_matrix(params["mean"], classes, features),
                          "sd": named_matrix(params["sd"], classes, features)}
        else:
            levels = [f"b{k + 1}" for k in range(settings["n_bins"])]
            parameters = {"w": named_matrix(params["w"], classes, levels)}
        facts = {"model": "proportions", "generator": "bayes_wsc.models.proportions.simulate.simulate_proportion_tables",
                 "study": "Stolpe & Morik (2011), data from the model: group class shares theta_i ~ Dirichlet(0.5) "
                          "(logistic: the classes drawn from softmax(x W + b) instead), each group's proportions "
                          "the exact shares of its items' classes",
                 "seed": args.seed, "settings": settings, "classes": classes, **parameters,
                 "theta": named_matrix(truth.theta, proportions["group"], classes),
                 "differs_from_the_fit": differs_from_the_fit(settings["emission"])}
        if settings["emission"] != "logistic":
            fit += f" --emission {settings['emission']}"
    tables = {"items.csv": items, "proportions.csv": proportions}
    written = write_simulation(args.out, tables, facts, truth_table)
    report(written, tables, f"{fit} --out {in_folder(args.out, 'fit.nc')}")


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
    from bayes_wsc.models.proportions.baselines import fit_llp_data
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


def read_baseline_model(path):
    """`bayes-wsc predict` from an LLP model written by `bayes-wsc baseline llp` (JSON)."""
    from bayes_wsc.models.proportions.baselines import LLPModel

    return LLPModel.load(path)
