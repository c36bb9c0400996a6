"""`bayes-wsc fit pcmix` and `bayes-wsc path pcmix`: the prediction-constrained mixture (Hughes et al.)."""

from __future__ import annotations

import argparse

from bayes_wsc.commands.common import (add_sampling_options, add_sep_option, add_setting_options, add_simulate_options,
                                      add_variant_options, columns, non_negative_float, number, positive_int,
                                      sampling_settings, setting_values)
from bayes_wsc.models.pcmix.settings import PCMixSettings
from bayes_wsc.outputs import REPORT_CONTENTS, input_table, output_file, output_folder

#: what `path pcmix --out DIR` writes in DIR
PATH_CONTENTS = ("lam_*.nc", "path.csv", *REPORT_CONTENTS)

HELP = "a few labels among many items: prediction-constrained Gaussian mixture (Hughes et al.)"
PATH_HELP = "prediction-constrained mixture at a grid of lam, warm-started, with the trade-off report"
SIMULATE_HELP = "the toy studies of Hughes et al.: two 5-D blobs labeled by a thin band (Sec. 3.3) or 1-D intervals"
#: what `simulate pcmix --out DIR` writes in DIR
SIMULATE_FILES = ("items.csv", "truth.csv", "truth.json")


def lam_value(text: str) -> float:
    return number(text, name="lam")


def lam_list(text: str) -> list[float]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("expected lam values separated by commas, like 1,4,16,64")
    return [lam_value(p) for p in parts]


def _add_data_options(parser: argparse.ArgumentParser, out_type, out_help: str) -> None:
    data = parser.add_argument_group("data")
    data.add_argument("--items", required=True, type=input_table("items file"),
                      help="CSV or Parquet, one row per item: features and a label column")
    data.add_argument("--label-col", default="y", help="label column; an empty cell means unlabeled (default: y)")
    data.add_argument("--out", required=True, type=out_type, help=out_help)
    add_sep_option(data)
    data.add_argument("--features", type=columns, default=None,
                      help="feature columns (default: every column but the label and id columns)")
    data.add_argument("--classes", type=columns, default=None,
                      help="the label classes in order, the positive one last (default: the labels seen, sorted)")
    data.add_argument("--id-col", default="id", help="the item id column, kept out of the features (default: id, "
                                                     "when ITEMS has one; else the rows are numbered)")


def _add_model_options(parser: argparse.ArgumentParser):
    model = parser.add_argument_group("model")
    add_setting_options(model, PCMixSettings)
    return model


def add_parser(parser: argparse.ArgumentParser) -> None:
    _add_data_options(parser, output_file("fit file"), "where to write the fit (netCDF)")
    _add_model_options(parser).add_argument(
        "--lam", type=lam_value, required=True, metavar="L",
        help="weight of sum log p(y | x) in the PC objective (1 = the joint model)")
    add_variant_options(parser)
    add_sampling_options(parser)


def add_path_parser(parser: argparse.ArgumentParser) -> None:
    _add_data_options(parser, output_folder("path folder", PATH_CONTENTS),
                      "folder for one fit per lam (lam_<L>.nc), path.csv and report.html")
    model = _add_model_options(parser)
    model.add_argument("--lams", type=lam_list, required=True, metavar="L1,L2,...", help="the lam grid, like 1,4,16,64")
    model.add_argument(
        "--no-warm-start", action="store_true",
        help="do not start each lam from the previous lam's optimum (random restarts only)")
    add_variant_options(parser)
    add_sampling_options(parser)


def _data_and_estimator(args, lam: float):
    from bayes_wsc.data.labeled import LabeledItems
    from bayes_wsc.data.tables import read_table

    items = read_table(args.items, "items", sep=args.sep, text_columns=[args.id_col] if args.id_col else [])
    data = LabeledItems.from_frame(items, label_col=args.label_col,
                                   features=args.features, classes=args.classes, id_col=args.id_col)
    print(f"{data.n_items} items, {data.n_features} features, {data.n_labeled} labeled "
          f"(classes {', '.join(data.classes)})", flush=True)
    from bayes_wsc.models.pcmix.model import PCMixture  # PyMC loads only once the data are known to be good

    est = PCMixture(**{**setting_values(args, PCMixSettings), "lam": lam}, **sampling_settings(args))
    return data, est


def run(args) -> None:
    from bayes_wsc.commands.common import fit_save_report

    data, est = _data_and_estimator(args, args.lam)
    fit_save_report(est, data, args)


def run_path(args) -> None:
    import warnings

    import pandas as pd

    from bayes_wsc.errors import FitWarning
    from bayes_wsc.maths.pcmix import lam_text

    data, est = _data_and_estimator(args, args.lams[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        path = est.fit_path(data, args.lams, warm_start=not args.no_warm_start)
    out = path.save(args.out)
    table = pd.read_csv(out / "path.csv")
    with pd.option_context("display.max_columns", 20, "display.width", 140):
        print(table.drop(columns=["data_loglik", "label_loglik", "file"]).round(4).to_string(index=False))
    for lam, fit in zip(path.lams, path.fits):
        for message in fit.diagnostics_:
            print(f"  - lam = {lam_text(lam)}: {message}")
    print(f"\nwrote {len(path.fits)} fits and path.csv to {out}")
    print(f"wrote {path.report(args.report or out)}")


# ---------------------------------------------------------------------- bayes-wsc simulate pcmix
def fraction(text: str) -> float:
    value = non_negative_float(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}")
    return value


def add_simulate_parser(parser: argparse.ArgumentParser) -> None:
    add_simulate_options(parser, SIMULATE_FILES)
    study = parser.add_argument_group("simulation")
    study.add_argument("--study", choices=("blobs", "intervals"), default="blobs",
                       help="blobs (Sec. 3.3, the default): x in R^5 from two Gaussian blobs, y = 1 iff |x2| < 0.1; "
                            "intervals (Sec. 3.2): 350 points on three intervals of the line, every label kept")
    study.add_argument("--n-items", type=positive_int, default=None, help="blobs: items (default 5000)")
    study.add_argument("--labeled-fraction", type=fraction, default=None, metavar="B",
                       help="blobs: the share of items that keep their label; the others' is empty (default: all)")


def run_simulate(args) -> None:
    import numpy as np
    import pandas as pd

    from bayes_wsc.errors import InputError
    from bayes_wsc.simulate.files import in_folder, named, named_matrix, report, write_simulation
    from bayes_wsc.models.pcmix.simulate import (BLOB_MEANS, BLOB_VARIANCES, differs_from_the_fit, simulate_intervals,
                                                 simulate_two_blobs)

    if args.study == "blobs":
        settings = {"study": "blobs", "n_items": args.n_items or 5000,
                    "labeled_fraction": 1.0 if args.labeled_fraction is None else args.labeled_fraction, "band": 0.1}
        if settings["n_items"] < 2:
            raise InputError(f"--n-items must be at least 2, got {settings['n_items']}")
        items, truth = simulate_two_blobs(settings["n_items"], settings["labeled_fraction"], seed=args.seed)
        study = ("Hughes et al., Sec. 3.3: x in R^5 from 1/2 N(m1, S1) + 1/2 N(m2, S2) (diagonal), y = 1 iff "
                 "|x2| < 0.1, a random share of the labels kept")
        generator = "bayes_wsc.models.pcmix.simulate.simulate_two_blobs"
        sources = {"blob 1": {"mean": BLOB_MEANS[0], "variance": BLOB_VARIANCES[0]},
                   "blob 2": {"mean": BLOB_MEANS[1], "variance": BLOB_VARIANCES[1]}}
    else:
        for option in ("n_items", "labeled_fraction"):
            if getattr(args, option) is not None:
                raise InputError(f"--{option.replace('_', '-')} is for --study blobs; the intervals study has "
                                 "175 + 100 + 75 points, every one labeled")
        settings = {"study": "intervals", "n_a": 175, "n_b": 100, "n_c": 75, "positive_share_a": 0.5}
        items, truth = simulate_intervals(seed=args.seed)
        study = ("Hughes et al., Sec. 3.2: A, 175 points on [-1, 1] labeled Bernoulli(1/2); B, 100 points on [1, 1.5] "
                 "all positive; C, 75 points on [1.5, 2] all negative")
        generator = "bayes_wsc.models.pcmix.simulate.simulate_intervals"
        sources = {"A": {"interval": [-1.0, 1.0], "positive_share": 0.5}, "B": {"interval": [1.0, 1.5],
                   "positive_share": 1.0}, "C": {"interval": [1.5, 2.0], "positive_share": 0.0}}
    ids = [f"item{i}" for i in range(len(items))]
    items.insert(0, "id", ids)
    truth_table = pd.DataFrame({"id": ids, "y": truth.y, "source": truth.source,
                                "labeled": truth.labeled.astype(int)})
    facts = {"model": "pcmix", "study": study, "generator": generator, "seed": args.seed, "settings": settings,
             "sources": sources, "positive_share": float(np.mean(truth.y)), "n_labeled": int(truth.labeled.sum()),
             "error_floor": truth.error_floor,
             "components": list(truth.sources), "differs_from_the_fit": differs_from_the_fit(args.study)}
    features = [c for c in items.columns if c not in ("id", "y")]
    facts.update({"pi": named(truth.parameters["pi"], truth.sources),
                  "mean": named_matrix(truth.parameters["mean"], truth.sources, features),
                  "sd": named_matrix(truth.parameters["sd"], truth.sources, features),
                  "rho": named(truth.parameters["rho"], truth.sources),
                  "parameters": ("pi, mean, sd and rho are those of the sources that generated the items, "
                                 "named as the fit's posterior variables (rho = P(y = 1 | source)), one "
                                 "component per source"
                                 + (": the blobs are Gaussian, so a fit with --components 2 and --lam 0 "
                                    "estimates them; a fit with lam > 0 trades them for the labels (the study's "
                                    "point). " if args.study == "blobs" else
                                    ": the sources are uniform on their intervals, not Gaussian, so mean and sd "
                                    "are each interval's mean and sd, and no Gaussian mixture holds them exactly; "
                                    "compare with a fit of --components 3. ")
                                 + "Components are exchangeable: match the fit's to these before comparing. "
                                 "truth.csv holds every item's label, also the hidden ones, to score predictions")})
    tables = {"items.csv": items}
    written = write_simulation(args.out, tables, facts, truth_table)
    report(written, tables, f"bayes-wsc fit pcmix --items {in_folder(args.out, 'items.csv')} "
                            f"--components 2 --lam 4 --out {in_folder(args.out, 'fit.nc')}")
