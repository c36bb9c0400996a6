"""`bayes-wsc fit perception` and `bayes-wsc baseline lpe`: the user's clusters from seed sets with
perception vectors (feature-level supervision, Cheng et al.)."""

from __future__ import annotations

import argparse

from bayes_wsc.commands.common import (add_sampling_options, add_sep_option, add_setting_options, add_simulate_options,
                                      add_variant_options, columns, non_negative_float, non_negative_int,
                                      positive_float, positive_int, probability, sampling_settings)
from bayes_wsc.models.perception.settings import DEFAULT_GROUPS, PerceptionSettings
from bayes_wsc.outputs import input_table, output_file

HELP = "seed sets with perception vectors (Cheng et al.): items + seeds + perception"
SIMULATE_HELP = ("seed sets with perception vectors (Cheng et al.): the simulated study, whose features' own "
                 "clusters are not the user's, or the handwritten digits (--dataset digits)")
#: what `simulate perception --out DIR` writes in DIR
SIMULATE_FILES = ("items.csv", "seeds.csv", "perception.csv", "truth.csv", "truth.json")
#: `bayes-wsc predict` options of perception fits only (the estimator's `predict_options`)
PREDICT_OPTIONS = {"overlap_threshold": ("--overlap-threshold", {
    "type": probability, "metavar": "T",
    "help": "perception fits: an item is in every cluster with probability >= T (default: the fit's, 0.3)"})}
LPE_HELP = "LPE or NPE (Cheng et al., Alg. 1-2): perception embedding, k-means and thresholded memberships"


def unit_interval(text: str) -> float:
    value = positive_float(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}")
    return value


def _add_data_options(parser: argparse.ArgumentParser, out_what: str, out_help: str) -> None:
    data = parser.add_argument_group("data")
    data.add_argument("--items", required=True, type=input_table("items file"),
                      help="CSV or Parquet: an id column and numeric feature columns")
    data.add_argument("--seeds", required=True, type=input_table("seeds file"),
                      help="CSV or Parquet with rows cluster, id: the items of each seed set (an id may be in several)")
    data.add_argument("--perception", required=True, type=input_table("perception file"),
                      help="CSV or Parquet with rows cluster, <perception columns> (non-negative), one per cluster")
    data.add_argument("--out", required=True, type=output_file(out_what), help=out_help)
    add_sep_option(data)
    data.add_argument("--id-col", default="id", help="item id column of ITEMS and SEEDS (default: id)")
    data.add_argument("--features", type=columns, default=None,
                      help="feature columns, comma-separated (default: every numeric column but the id)")
    data.add_argument("--overlap-threshold", type=unit_interval, default=None, metavar="T",
                      help="an item is in every cluster whose membership reaches T, and in its most probable one "
                           "(default 0.3)")


def add_parser(parser: argparse.ArgumentParser) -> None:
    _add_data_options(parser, "fit file", "where to write the fit (netCDF)")
    model = parser.add_argument_group("model")
    add_setting_options(model, PerceptionSettings)
    model.add_argument("--formulation", choices=("auto", "conditional", "mixture"), default="auto",
                       help="auto (default): fit both and keep the one whose seeds, held out, score better (it says "
                            "which and both scores); conditional: a model of the seed sets given the features, "
                            "fitted on the seeds; mixture: a seeded mixture of the features of every item "
                            "(PerceptionMixture, models/perception/model.py) (README, Perception)")
    model.add_argument("--groups", type=positive_int, default=None,
                       help=f"--formulation mixture: groups of the features' own structure (default {DEFAULT_GROUPS})")
    model.add_argument("--seed-weight", type=positive_float, default=None, metavar="LAM",
                       help="--formulation mixture: PC weight on the seeds, >= 1 (default 1: the joint model)")
    add_variant_options(parser)
    add_sampling_options(parser)


def read_data(args):
    """The three tables, validated (one line naming the file, column, row or value), before any model."""
    from bayes_wsc.models.perception.data import CLUSTER_COL, SeedSets
    from bayes_wsc.data.tables import read_table

    # ids and cluster names are text: '001' stays '001'
    text = {"items": [args.id_col], "seeds": [CLUSTER_COL, args.id_col], "perception": [CLUSTER_COL]}
    tables = {what: read_table(getattr(args, what), what, sep=args.sep, text_columns=text[what]) for what in text}
    data = SeedSets.from_frames(tables["items"], tables["seeds"], tables["perception"], id_col=args.id_col,
                                features=args.features)
    print(f"{data.n_items} items, {data.n_features} features, {data.n_clusters} clusters, {data.n_seeds} seeds "
          f"({data.n_overlapping_seeds} in more than one set), {data.n_perception} perception features", flush=True)
    return tables["items"], data


def run(args) -> None:
    from bayes_wsc.commands.common import fit_save_report

    _, data = read_data(args)
    from bayes_wsc.models.perception.model import PerceptionClustering  # PyMC loads after the data
    from bayes_wsc.models.perception.settings import OVERLAP_THRESHOLD

    threshold = OVERLAP_THRESHOLD if args.overlap_threshold is None else args.overlap_threshold
    from bayes_wsc.errors import InputError
    from bayes_wsc.models.perception.model import PerceptionAuto, PerceptionMixture

    defaults = PerceptionSettings()
    if args.formulation == "mixture" and (args.weight_scale != defaults.weight_scale
                                          or args.intercept_sd != defaults.intercept_sd):
        raise InputError("--weight-scale and --intercept-sd are settings of --formulation conditional (or auto)")
    if args.formulation == "conditional" and (args.groups is not None or args.seed_weight is not None):
        raise InputError("--groups and --seed-weight are settings of --formulation mixture (or auto)")
    common = {"overlap_threshold": threshold, "restarts": args.restarts, **sampling_settings(args)}
    variant = {k: common.pop(k) for k in ("model_file", "model_settings") if k in common}
    formulation = args.formulation
    if variant.get("model_file") is not None:  # a variant file is a model of its own: it is fitted as given
        if formulation == "auto":
            print("--model-file: the variant is fitted as it is (--formulation auto compares the package's two "
                  "formulations, not a variant)", flush=True)
            formulation = "conditional"
        if formulation == "mixture":
            raise InputError("--model-file replaces the conditional model; it is not a setting of "
                             "--formulation mixture")
    conditional = PerceptionClustering(weight_scale=args.weight_scale, intercept_sd=args.intercept_sd, **common,
                                       **variant)
    mixture = PerceptionMixture(groups=args.groups or DEFAULT_GROUPS,
                                seed_weight=1.0 if args.seed_weight is None else args.seed_weight, **common)
    est = {"conditional": conditional, "mixture": mixture}.get(formulation) or PerceptionAuto(conditional, mixture)
    fit_save_report(est, data, args)


# ---------------------------------------------------------------------- bayes-wsc simulate perception
def add_simulate_parser(parser: argparse.ArgumentParser) -> None:
    add_simulate_options(parser, SIMULATE_FILES)
    source = parser.add_argument_group("items")
    source.add_argument("--dataset", choices=("digits",), default=None,
                        help="scikit-learn's 8 x 8 digits (1797 items), the user's clusters closed loop, straight "
                             "strokes and open curves (default: the simulated study)")
    source.add_argument("--n-items", type=positive_int, default=None, help="simulated items (default 1000)")
    source.add_argument("--n-features", type=positive_int, default=None,
                        help="simulated features, at least 2 per perception feature (default 20)")
    source.add_argument("--clusters", type=positive_int, default=None, metavar="K",
                        help="the user's clusters (default 4)")
    source.add_argument("--n-perception", type=positive_int, default=None,
                        help="perception features, two of them per cluster (default 6)")
    source.add_argument("--seeds-per-cluster", type=positive_int, default=None,
                        help="seeds of each cluster (digits: default 5; distractor: default 5; model: default 50; "
                             "simulated: 3 to 10 at random)")
    family = parser.add_argument_group("the distractor study (--study distractor)")
    family.add_argument("--study", choices=("simulated", "distractor", "model"), default="simulated",
                        help="simulated (default): Cheng et al.'s study; distractor: strong nuisance clusters in "
                             "features of their own, the user's clusters in others (simulate_distractor_study); "
                             "model: data from the conditional model itself, W and b drawn from its prior, 3 "
                             "clusters over 3 perception features (simulate_model; --n-items, --n-features, "
                             "--seeds-per-cluster)")
    family.add_argument("--family", type=non_negative_int, default=None, metavar="INDEX",
                        help="the knobs of data set INDEX of the family of distractor studies (distractor_family); "
                             "options given below override them")
    family.add_argument("--nuisance-clusters", type=positive_int, default=None, help="nuisance clusters (default 4)")
    family.add_argument("--nuisance-separation", type=non_negative_float, default=None,
                        help="distance between the nuisance clusters' centres (default 8)")
    family.add_argument("--user-separation", type=non_negative_float, default=None,
                        help="shift of an attribute's features in the user's clusters (default 2.5)")
    family.add_argument("--overlap", type=unit_fraction, default=None,
                        help="share of items in a second cluster that shares an attribute (default 0.2)")
    family.add_argument("--distractor-features", type=positive_int, default=None,
                        help="features of the nuisance clusters (default 10)")
    family.add_argument("--noise-features", type=non_negative_int, default=None, help="noise features (default 30)")


def unit_fraction(text: str) -> float:
    value = non_negative_float(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}")
    return value


#: `simulate perception --study distractor`: option -> simulate_distractor_study's argument
DISTRACTOR_OPTIONS = {"n_items": "n_items", "clusters": "n_clusters", "n_perception": "n_perception",
                      "nuisance_clusters": "n_dominant", "nuisance_separation": "dominant_separation",
                      "user_separation": "user_separation", "overlap": "overlap",
                      "distractor_features": "n_distractor_features", "noise_features": "n_noise_features",
                      "seeds_per_cluster": "seeds_per_cluster"}


def distractor_settings(args) -> dict:
    """simulate_distractor_study's arguments: the family's knobs of data set --family (if given), then the
    options given."""
    from bayes_wsc.errors import InputError
    from bayes_wsc.models.perception.simulate import distractor_knobs

    settings = {"n_items": 400}
    if args.family is not None:
        settings.update(distractor_knobs(args.family, args.seed))
    settings.update({key: getattr(args, option) for option, key in DISTRACTOR_OPTIONS.items()
                     if getattr(args, option) is not None})
    if args.n_features is not None:
        raise InputError("--n-features is for the simulated study; --study distractor takes --distractor-features "
                         "and --noise-features (the user's features are 2 per perception attribute)")
    if settings.get("n_clusters", 3) < 2:
        raise InputError(f"--clusters must be at least 2, got {settings['n_clusters']}")
    return settings


def run_simulate(args) -> None:
    import pandas as pd

    from bayes_wsc.errors import InputError
    from bayes_wsc.simulate.files import in_folder, named, named_matrix, report, write_simulation
    from bayes_wsc.models.perception.simulate import (DIGIT_CONCEPTS, differs_from_the_fit, digits_example,
                                                      simulate_study)

    distractor_only = [o for o in ("family", *list(DISTRACTOR_OPTIONS)[3:-1]) if getattr(args, o) is not None]
    if args.study != "distractor" and distractor_only:
        raise InputError(f"--{distractor_only[0].replace('_', '-')} is an option of --study distractor")
    if args.dataset == "digits" and args.study != "simulated":
        raise InputError(f"--dataset digits and --study {args.study} are two different data sets: give one")
    if args.dataset == "digits":
        for option in ("n_items", "n_features", "clusters", "n_perception"):
            if getattr(args, option) is not None:
                raise InputError(f"--{option.replace('_', '-')} is for the simulated study; --dataset digits has "
                                 "its own (give --seeds-per-cluster)")
        settings = {"dataset": "digits", "seeds_per_cluster": args.seeds_per_cluster or 5}
        study_data = digits_example(settings["seeds_per_cluster"], seed=args.seed)
        study = ("Cheng et al. (2016), the digits example: scikit-learn's 8 x 8 handwritten digits, the user's "
                 "clusters " + "; ".join(f"{name} (digits {', '.join(map(str, digits))})"
                                         for name, (digits, _) in DIGIT_CONCEPTS.items()))
        generator = "bayes_wsc.models.perception.simulate.digits_example"
        dominant = "digit"
    elif args.study == "model":
        from bayes_wsc.models.perception.simulate import model_probabilities, simulate_model

        for option in ("clusters", "n_perception"):
            if getattr(args, option) is not None:
                raise InputError(f"--{option.replace('_', '-')} is not an option of --study model (3 clusters over 3 "
                                 "perception features, each pair sharing one)")
        settings = {"study": "model", "n_items": args.n_items or 1000, "n_features": args.n_features or 5,
                    "seeds_per_cluster": args.seeds_per_cluster or 50, "weight_scale": 3.0, "intercept_sd": 1.0}
        if settings["n_items"] < 10:
            raise InputError(f"--n-items must be at least 10, got {settings['n_items']}")
        study_data, generating = simulate_model(settings["n_items"], n_features=settings["n_features"],
                                                seeds_per_cluster=settings["seeds_per_cluster"], seed=args.seed)
        study = ("data from the perception model itself (the conditional formulation): x ~ N(0, I), W and b drawn "
                 "from the fit's default prior, each item's cluster drawn from P(z | x), seeds drawn from each "
                 "cluster's members, each also put in one other set with probability 0.1")
        generator = "bayes_wsc.models.perception.simulate.simulate_model"
        dominant = "z"
    elif args.study == "distractor":
        from bayes_wsc.models.perception.simulate import simulate_distractor_study

        settings = distractor_settings(args)
        from bayes_wsc.models.perception.simulate import family_data_seed

        data_seed = args.seed if args.family is None else family_data_seed(args.family, args.seed)
        study_data = simulate_distractor_study(seed=data_seed, **settings)
        study = ("the distractor study: nuisance clusters in features of their own, independent of the user's "
                 "clusters, which shift other features (simulate_distractor_study"
                 + (f", knobs of data set {args.family} of distractor_family" if args.family is not None else "")
                 + ")")
        generator = "bayes_wsc.models.perception.simulate.simulate_distractor_study"
        dominant = "nuisance"
    else:
        if args.seeds_per_cluster is not None:
            raise InputError("--seeds-per-cluster is for --dataset digits, --study distractor and --study model; the "
                             "simulated study draws 3 to 10 seeds per cluster")
        settings = {"n_items": args.n_items or 1000, "n_features": args.n_features or 20,
                    "n_clusters": args.clusters or 4, "n_perception": args.n_perception or 6}
        lowest = {"n_items": 10, "n_clusters": 2, "n_perception": 2, "n_features": 2 * settings["n_perception"]}
        for key, low in lowest.items():
            if settings[key] < low:
                option = "--clusters" if key == "n_clusters" else f"--{key.replace('_', '-')}"
                why = " (2 per perception feature)" if key == "n_features" else ""
                raise InputError(f"{option} must be at least {low}{why}, got {settings[key]}")
        study_data = simulate_study(settings["n_items"], n_features=settings["n_features"],
                                    n_clusters=settings["n_clusters"], n_perception=settings["n_perception"],
                                    seed=args.seed)
        study = ("Cheng et al. (2016), the simulated study: the features' dominant clusters (3 groups) are not the "
                 "user's; each of her clusters is a set of perception attributes that raise their own features, "
                 "15% of the items are in two clusters, 3 to 10 seeds per cluster")
        generator = "bayes_wsc.models.perception.simulate.simulate_study"
        dominant = "dominant"
    names = study_data.clusters
    members = [[names[k] for k in ([row.argmax()] + [k for k in range(len(names)) if row[k] and k != row.argmax()])]
               for row in study_data.membership]
    truth_table = pd.DataFrame({"id": study_data.items["id"], "cluster": [m[0] for m in members],
                                "clusters": [";".join(m) for m in members], dominant: study_data.dominant})
    perception = study_data.perception
    facts = {"model": "perception", "study": study, "generator": generator, "seed": args.seed,
             "settings": settings, "clusters": list(names),
             "perception": named_matrix(perception.iloc[:, 1:].to_numpy(), perception["cluster"],
                                        perception.columns[1:]),
             "cluster_sizes": {name: int(study_data.membership[:, k].sum()) for k, name in enumerate(names)},
             "items_in_two_clusters": int((study_data.membership.sum(axis=1) > 1).sum()),
             "differs_from_the_fit": differs_from_the_fit(args.study)}
    if args.study == "model":
        data = study_data.data()
        W, b = generating.standardized(data)
        facts.update({
            "pi": named(model_probabilities(data.features, W, b, data.perception).mean(axis=0), names),
            "W": named_matrix(W, data.scaling.names, data.perception_names),
            "b": named(b, data.perception_names),
            "parameters": ("pi, W and b generated the items, named as the conditional fit's posterior variables "
                           "(fit with --formulation conditional): W and b were drawn from the fit's default prior "
                           "(weight_scale 3, intercept_sd 1) on the features as simulated, x ~ N(0, I), and are "
                           "given here on the features standardized as the fit standardizes them (x W + b "
                           "unchanged); pi is the mean over the items of P(z = k | x) at them, as the fit defines "
                           "it. The clusters are named by the perception table, so no relabeling is needed")})
    else:
        share = study_data.membership / study_data.membership.sum(axis=1, keepdims=True)
        facts.update({
            "pi": named(share.mean(axis=0), names),
            "parameters": ("pi only: the share of the items in each cluster (an item in two clusters counts half "
                           "to each), the fit's pi as the data hold it; the items are a study, not draws from the "
                           "perception model, so no true W or b exists to compare a fit with (--study model "
                           "simulates from the model itself); truth.csv holds every item's clusters to score "
                           "memberships")})
    tables = {"items.csv": study_data.items, "seeds.csv": study_data.seeds, "perception.csv": perception}
    written = write_simulation(args.out, tables, facts, truth_table)
    report(written, tables, f"bayes-wsc fit perception --items {in_folder(args.out, 'items.csv')} --seeds "
                            f"{in_folder(args.out, 'seeds.csv')} --perception {in_folder(args.out, 'perception.csv')} "
                            + ("--formulation conditional " if args.study == "model" else "")
                            + f"--out {in_folder(args.out, 'fit.nc')}")


# ---------------------------------------------------------------------- bayes-wsc baseline lpe
def add_lpe_parser(parser: argparse.ArgumentParser) -> None:
    _add_data_options(parser, "LPE file", "CSV to write: the items with their LPE clusters and memberships")
    model = parser.add_argument_group("LPE")
    model.add_argument("--kernel", choices=("linear", "rbf"), default="linear",
                       help="linear: LPE (Alg. 1); rbf: NPE with the self-tuning RBF kernel (Alg. 2)")
    model.add_argument("--beta", type=non_negative_float, default=10.0, help="weight of the seed term (default 10)")
    model.add_argument("--gamma", type=non_negative_float, default=1.0,
                       help="weight of the ||W||^2 (LPE) or tr(C^T K C) (NPE) penalty (default 1)")
    model.add_argument("--restarts", type=positive_int, default=10, help="random starts; best objective wins (10)")
    model.add_argument("--seed", type=int, default=0, help="random seed of the starts and of k-means (default 0)")


def run_lpe(args) -> None:
    import numpy as np

    from bayes_wsc.models.perception import baselines as bp
    from bayes_wsc.data.tables import restore_names
    from bayes_wsc.errors import InputError
    from bayes_wsc.models.perception.model import CLUSTER_SEPARATOR, OVERLAP_THRESHOLD
    from bayes_wsc.outputs import write_csv

    items, data = read_data(args)
    if args.seed < 0:
        raise InputError(f"--seed must be >= 0, got {args.seed}")
    threshold = OVERLAP_THRESHOLD if args.overlap_threshold is None else args.overlap_threshold
    algorithm = bp.lpe if args.kernel == "linear" else bp.npe
    result = algorithm(data, beta=args.beta, gamma=args.gamma, restarts=args.restarts, seed=args.seed)
    labels = bp.embedding_kmeans(result, data, seed=args.seed)
    weights = bp.perception_memberships(result.F, data.perception)
    assigned = bp.threshold_clusters(weights, threshold)
    added = {"cluster": data.clusters[labels]}
    for k, name in enumerate(data.clusters):
        added[f"membership_{name}"] = weights[:, k]
    added["clusters"] = [CLUSTER_SEPARATOR.join(data.clusters[row]) for row in assigned]
    for j, name in enumerate(data.perception_names):
        added[f"embedding_{name}"] = result.F[:, j]
    clash = [c for c in added if c in items.columns]
    if clash:
        raise InputError(f"items already has a column {clash[0]!r}, which the output would overwrite; rename it")
    out = items.assign(**added)
    write_csv(restore_names(out, items), args.out, "LPE file")
    name = "LPE" if args.kernel == "linear" else "NPE"
    state = "converged" if result.converged else f"stopped after {result.iterations} iterations without converging"
    print(f"{name}: best objective {result.objective:.4g} of {len(result.objectives)} starts ({state}); "
          f"cluster sizes {dict(zip(data.clusters.tolist(), np.bincount(labels, minlength=data.n_clusters).tolist()))}")
    print(f"wrote {len(out)} items to {args.out}")


BASELINES = {"lpe": (LPE_HELP, add_lpe_parser, run_lpe)}
