"""`bayes-wsc fit experts`: clustering from the pairwise constraints of several uncertain experts (Chang et al.)."""

from __future__ import annotations

import argparse

from bayes_wsc.commands.common import (add_sampling_options, add_sep_option, add_setting_options, add_simulate_options,
                                      add_variant_options, columns, positive_float, positive_int, sampling_settings,
                                      setting_values)
from bayes_wsc.models.experts.settings import ExpertsSettings
from bayes_wsc.outputs import input_table, output_file

HELP = "noisy experts' must-link / cannot-link constraints (Chang et al.): items + constraints or labels"
SIMULATE_HELP = ("noisy experts (Chang et al.): items and constraints from the model itself, or a UCI data set with "
                 "the experts of Sec. 3.2 (--dataset)")
#: what `simulate experts --out DIR` writes in DIR
SIMULATE_FILES = ("items.csv", "constraints.csv", "truth.csv", "truth.json")
#: the data sets of Sec. 3.2, bundled with scikit-learn (`bayes_wsc.models.experts.simulate.UCI_DATASETS`)
UCI_DATASETS = ("breast_cancer", "wine", "iris")
#: the defaults of `simulate experts`: the model's own simulation, and Sec. 3.2's Case 1 for --dataset
MODEL_ALPHA, MODEL_BETA = (0.95, 0.85, 0.75, 0.65), (0.9, 0.8, 0.7, 0.6)
CASE_1 = (0.95, 0.85, 0.75, 0.65, 0.55)


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
    add_setting_options(model, ExpertsSettings, "prior_sd", "intercept_sd")
    defaults = ExpertsSettings()
    model.add_argument("--accuracy-prior", type=accuracy_prior, default=(defaults.accuracy_a, defaults.accuracy_b),
                       metavar="A,B", help="alpha, beta ~ 0.5 + 0.5 Beta(A, B) (default 2,2; 1,1 is uniform on "
                                           "[0.5, 1])")
    add_setting_options(model, ExpertsSettings, "restarts")
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
    from bayes_wsc.models.experts.model import NoisyExperts  # PyMC loads only once the data are known to be good

    a, b = args.accuracy_prior
    est = NoisyExperts(**setting_values(args, ExpertsSettings), n_clusters=args.clusters, accuracy_a=a, accuracy_b=b,
                       **sampling_settings(args))
    fit_save_report(est, data, args)


# ---------------------------------------------------------------------- bayes-wsc simulate experts
def accuracies(text: str) -> list[float]:
    """alpha or beta of every expert, comma-separated, each in [0.5, 1]."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("expected one number per expert, separated by commas, like 0.9,0.8")
    values = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None
        if not 0.5 <= value <= 1:
            raise argparse.ArgumentTypeError(f"each accuracy must be in [0.5, 1], got {part!r}")
        values.append(value)
    return values


def add_simulate_parser(parser: argparse.ArgumentParser) -> None:
    add_simulate_options(parser, SIMULATE_FILES)
    source = parser.add_argument_group("items")
    source.add_argument("--dataset", choices=UCI_DATASETS, default=None,
                        help="a UCI data set bundled with scikit-learn, rated by the experts of Sec. 3.2 (default: "
                             "items drawn from the model: x ~ N(0, I), z ~ softmax(x W + b))")
    source.add_argument("--n-items", type=positive_int, default=None, help="simulated items (default 300)")
    source.add_argument("--n-features", type=positive_int, default=None, help="simulated features (default 4)")
    source.add_argument("--clusters", type=positive_int, default=None, metavar="K",
                        help="simulated clusters (default 3)")
    source.add_argument("--prior-sd", type=positive_float, default=None,
                        help="simulated items: W drawn from the fit's prior N(0, sd^2) at this sd (default 1, the "
                             "fit's default --prior-sd)")
    source.add_argument("--intercept-sd", type=positive_float, default=None,
                        help="simulated items: b drawn from N(0, sd^2) at this sd (default 2, the fit's default)")
    source.add_argument("--separation", type=positive_float, default=None, metavar="SD",
                        help="simulated items: W drawn at sd SD on the raw features and b = 0 instead of from the "
                             "fit's prior (clear clusters, not the fit's prior; the scale used before 2026-11)")
    source.add_argument("--same-cluster", choices=("item", "pair"), default=None,
                        help="simulated items: item (default) draws each item's cluster once, the paper's model; pair "
                             "draws each rated pair's 'same cluster' once from sum_k p_ik p_jk, the pairwise "
                             "likelihood the fit uses, exact for those data")
    experts = parser.add_argument_group("experts")
    experts.add_argument("--alpha", type=accuracies, default=None, metavar="A1,A2,...",
                         help="each expert's sensitivity P(must-link | same cluster), one per expert (default "
                              f"{','.join(map(str, MODEL_ALPHA))}; with --dataset Case 1, "
                              f"{','.join(map(str, CASE_1))})")
    experts.add_argument("--beta", type=accuracies, default=None, metavar="B1,B2,...",
                         help="each expert's specificity P(cannot-link | different clusters) (default "
                              f"{','.join(map(str, MODEL_BETA))}; with --dataset the same as --alpha)")
    experts.add_argument("--pairs-per-expert", type=positive_int, default=None,
                         help="simulated items: random pairs each expert rates (default 1000)")
    experts.add_argument("--n-constraints", type=positive_int, default=None, metavar="2Q",
                         help="--dataset: q true must-links and q true cannot-links, rated by every expert "
                              "(default 200)")


def run_simulate(args) -> None:
    import numpy as np
    import pandas as pd

    from bayes_wsc.errors import InputError
    from bayes_wsc.models.experts.simulate import (load_uci, omega_of, simulate_experts_model, simulate_uci_experts,
                                           uci_class_names)
    from bayes_wsc.simulate.files import in_folder, named, report, write_simulation

    settings = {}
    if args.dataset is not None:
        for option in ("n_items", "n_features", "clusters", "pairs_per_expert", "prior_sd", "intercept_sd",
                       "separation", "same_cluster"):
            if getattr(args, option) is not None:
                raise InputError(f"--{option.replace('_', '-')} is for simulated items; --dataset {args.dataset} "
                                 "has its own (give --n-constraints)")
        alpha = args.alpha or list(CASE_1)
        beta = args.beta or alpha
        if len(alpha) != len(beta):
            raise InputError(f"--alpha gives {len(alpha)} experts but --beta {len(beta)}; give one value per expert")
        n_constraints = 200 if args.n_constraints is None else args.n_constraints
        if n_constraints % 2:
            raise InputError(f"--n-constraints must be even (q must-links and q cannot-links), got {n_constraints}")
        items, labels = load_uci(args.dataset)
        constraints, truth = simulate_uci_experts(labels, n_constraints, alpha, beta, item_ids=items["id"],
                                                  seed=args.seed)
        clusters = uci_class_names(args.dataset)[labels]
        settings.update(dataset=args.dataset, n_constraints=n_constraints)
        study = (f"Chang et al. (2017), Sec. 3.2: the UCI data set {args.dataset} (scikit-learn); q = "
                 f"{n_constraints // 2} true must-link and q true cannot-link pairs rated by every expert, expert m "
                 "flipping floor(q (1 - alpha_m)) must-links and floor(q (1 - beta_m)) cannot-links")
        generator = "bayes_wsc.models.experts.simulate.simulate_uci_experts"
    else:
        if args.n_constraints is not None:
            raise InputError("--n-constraints is for --dataset; simulated items take --pairs-per-expert")
        alpha = args.alpha or list(MODEL_ALPHA)
        beta = args.beta or (list(MODEL_BETA) if args.alpha is None else alpha)
        if len(alpha) != len(beta):
            raise InputError(f"--alpha gives {len(alpha)} experts but --beta {len(beta)}; give one value per expert")
        k = 3 if args.clusters is None else args.clusters
        if k < 2:
            raise InputError(f"--clusters must be at least 2, got {k}")
        if (args.n_items or 300) > 3000:
            raise InputError(f"--n-items is at most 3000 (the simulation enumerates every pair), got {args.n_items}")
        if args.separation is not None and (args.prior_sd is not None or args.intercept_sd is not None):
            raise InputError("--separation draws W at its own scale and b = 0: give it or --prior-sd/--intercept-sd, "
                             "not both")
        settings.update(n_items=args.n_items or 300, n_features=args.n_features or 4, clusters=k,
                        pairs_per_expert=args.pairs_per_expert or 1000, same_cluster=args.same_cluster or "item")
        if args.separation is None:
            settings.update(prior_sd=args.prior_sd or 1.0, intercept_sd=args.intercept_sd or 2.0)
        else:
            settings.update(separation=args.separation)
        items, constraints, truth = simulate_experts_model(
            settings["n_items"], settings["n_features"], k, alpha, beta, settings["pairs_per_expert"],
            **{key: settings[key] for key in ("prior_sd", "intercept_sd", "separation") if key in settings},
            same_cluster=settings["same_cluster"],
            seed=args.seed)
        clusters = truth.labels
        study = ("Chang et al. (2017), data from the model: x ~ N(0, I), z ~ softmax(x W + b); each expert links "
                 "random pairs with probability alpha_m if they share a cluster, 1 - beta_m if not")
        generator = "bayes_wsc.models.experts.simulate.simulate_experts_model"
    settings.update(alpha=alpha, beta=beta)
    experts = list(dict.fromkeys(constraints["expert"]))
    facts = {
        "model": "experts", "study": study, "generator": generator, "seed": args.seed, "settings": settings,
        "alpha": named(truth.alpha, experts), "beta": named(truth.beta, experts),
        "omega": named(omega_of(truth.alpha, truth.beta), experts),
        "realized_alpha": named(truth.realized_alpha, experts), "realized_beta": named(truth.realized_beta, experts),
    }
    if truth.W is not None:
        facts["W"] = {name: named(row, range(truth.W.shape[1])) for name, row in
                      zip(items.columns[1:], truth.W)}
        facts["b"] = named(truth.b, range(truth.b.size))
        facts["weight_scale"] = truth.weight_scale
        if truth.weight_scale == "prior":
            facts["differs_from_the_fit"] = (
                f"W and b are one draw from the fit's prior at prior_sd={settings['prior_sd']:g}, "
                f"intercept_sd={settings['intercept_sd']:g} (fit with those settings to match; every entry of a "
                "full W and b drawn, then centred over the clusters as the fit reports them), acting on the "
                "features standardized as the fit standardizes them, so they compare with the fit's W and b "
                "directly; alpha and beta are the values given, not draws from their prior. "
                + ("Each item's cluster is drawn once, so pairs that share an item are dependent, which the fit's "
                   "pairwise (composite) likelihood ignores: its 90% intervals of W and b are narrower than these "
                   "data warrant (benchmarks/RESULTS.md; --same-cluster pair simulates the data for which the "
                   "fit's likelihood is exact). " if settings["same_cluster"] == "item" else
                   "Each rated pair's 'same cluster' is drawn once from sum_k p_ik p_jk (--same-cluster pair), the "
                   "fit's pairwise likelihood exactly; truth.csv's clusters are one draw the links do not use. ")
                + "Clusters are exchangeable: compare W and b after matching the fit's clusters to these. "
                "`sbc_case` of bayes_wsc.models.experts.simulate draws alpha and beta from their prior too, with "
                "links drawn per pair (what tests/test_truth_coverage_slow.py fits).")
        else:
            facts["differs_from_the_fit"] = (
                f"W is drawn with entries of sd {settings['separation']:g} on the raw features (then centred over "
                "the clusters, so that the clusters are clear) and b = 0, while the fit's default prior is W ~ "
                "N(0, 1), b ~ N(0, 4) (prior_sd, intercept_sd) on standardized features: a fit shrinks W toward "
                "0, and its intervals are not expected to cover this W at their nominal rate; alpha and beta "
                "are the values given, not draws from their prior. Clusters are exchangeable: compare W after "
                "matching the fit's clusters to these. `sbc_case` of bayes_wsc.models.experts.simulate draws "
                "from the fit's own prior.")
    else:
        facts["differs_from_the_fit"] = (
            "the items and their classes are a real data set: no W or b generated them, so nothing is drawn from "
            "the fit's prior; each expert links random pairs of items with the accuracies given (alpha, beta: "
            "values, not draws from their prior), by the items' true classes. `sbc_case` of "
            "bayes_wsc.models.experts.simulate draws from the fit's own prior.")
    truth_table = pd.DataFrame({"id": items["id"], "cluster": clusters})
    tables = {"items.csv": items, "constraints.csv": constraints}
    written = write_simulation(args.out, tables, facts, truth_table)
    k = len(np.unique(clusters))
    prior = "".join(f" --{key.replace('_', '-')} {settings[key]:g}" for key, default in
                    (("prior_sd", 1.0), ("intercept_sd", 2.0)) if settings.get(key, default) != default)
    report(written, tables, f"bayes-wsc fit experts --items {in_folder(args.out, 'items.csv')} --constraints "
                            f"{in_folder(args.out, 'constraints.csv')} --clusters {k}{prior} "
                            f"--out {in_folder(args.out, 'fit.nc')}")
