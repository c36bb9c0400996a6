"""The HTML report of perception fits (seed 004): the user's clusters, memberships, the embedding, scores.

The clusters table is the centre: each of the user's clusters with its perception vector, its
seeds, its share of the items (pi) and how many items the hard rule and the overlap rule put in
it. A figure shows how sure the memberships of the items that are no seed are; a heat map shows
the embedding W (which features raise which perception feature). Given the true memberships (a
simulation, the digits example), the report adds the paper's F-score per user cluster, the Brier
score and a reliability plot of the membership probabilities, beside the baselines (LPE + k-means,
k-means on X, the seeded mixture), recomputed from the data saved in the fit. The sections every
model's report has follow (`report.criticism`): rank plots after NUTS, the posterior predictive check
of the seeds' clusters, LOO over the seeded items with its Pareto k values, and the checks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from bayes_wsc import inference
from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.errors import InputError
from bayes_wsc.report.criticism import write_fit_report
from bayes_wsc.report.html import (Section, diagnostics_section, estimands_section, fit_method, method_words,
                                   new_figure, variant_words)

FIT_COLOR = "#1f5fa8"
#: features shown in the heat map of W (largest row norms)
TOP_FEATURES = 20


def _checked(est):
    if getattr(est, "_fitted", lambda: None)() is None or not hasattr(est, "memberships"):
        raise InputError("the report needs a fitted PerceptionClustering: call fit(data) first")
    return est


def _probabilities(frame: pd.DataFrame, clusters) -> np.ndarray:
    return frame[[f"prob_{c}" for c in clusters]].to_numpy()


def _truth_matrix(truth, n_items: int, n_clusters: int) -> np.ndarray | None:
    if truth is None:
        return None
    matrix = np.asarray(getattr(truth, "membership", truth), dtype=bool)
    if matrix.shape != (n_items, n_clusters):
        raise InputError(f"truth must be an (items x clusters) membership table of shape {(n_items, n_clusters)}, "
                         f"got {matrix.shape}")
    return matrix


# ---------------------------------------------------------------------- figures
def plot_memberships(est, *, members: pd.DataFrame | None = None):
    """Histogram per cluster of P(z = k | x) over the items that are no seed, with the overlap threshold."""
    members = est.memberships() if members is None else members
    clusters = est.clusters_
    probs = _probabilities(members, clusters)[members["seed_of"].to_numpy() == ""]
    fig, axes = new_figure(width=7.5, height=3.8)
    ax = axes[0, 0]
    bins = np.linspace(0, 1, 21)
    for k, name in enumerate(clusters):
        ax.hist(probs[:, k], bins=bins, histtype="step", linewidth=1.5, label=str(name))
    ax.axvline(float(est.overlap_threshold), color="grey", linestyle="--", linewidth=1)
    ax.set_yscale("log")
    ax.set_xlabel("posterior mean P(item in cluster)")
    ax.set_ylabel("items (log scale)")
    ax.legend(title="cluster", fontsize=8)
    return fig


def plot_weights(est, *, top: int = TOP_FEATURES, ci: float = DEFAULT_CI):
    """Heat map of W (posterior mean) on the standardized features: rows are the `top` features with
    the largest weights, columns the perception features. With draws, a dot marks each entry whose `ci`
    HDI excludes zero (the sign of that weight is settled)."""
    name = _weights_name(est)
    W = est._fitted().posterior[name].mean(("chain", "draw"))
    values = W.values
    rows = np.argsort(-np.linalg.norm(values, axis=1), kind="stable")[:top]
    settled = weights_away_from_zero(est, ci)
    fig, axes = new_figure(width=1.2 + 0.6 * values.shape[1], height=1.0 + 0.28 * rows.size)
    ax = axes[0, 0]
    bound = float(np.abs(values[rows]).max()) or 1.0
    image = ax.imshow(values[rows], cmap="RdBu_r", vmin=-bound, vmax=bound, aspect="auto")
    ax.set_yticks(range(rows.size), [str(f) for f in W["feature"].values[rows]], fontsize=7)
    ax.set_xticks(range(values.shape[1]), [str(p) for p in W["perception_feature"].values], rotation=45,
                  ha="right", fontsize=8)
    if settled is not None:
        y, x = np.nonzero(settled[rows])
        ax.scatter(x, y, s=14, c="black", marker="o", linewidths=0,
                   label=f"{ci:.0%} HDI excludes 0")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0, -0.12 if rows.size < 8 else -0.04), frameon=False)
    fig.colorbar(image, ax=ax, label=f"{name} (per standardized unit)")
    return fig


def _weights_name(est) -> str:
    """W of the conditional model, A (the perception features' shifts of the features) of the mixture."""
    return "W" if "W" in est._fitted().posterior else "A"


def weights_away_from_zero(est, ci: float = DEFAULT_CI):
    """(features, perception features) booleans: W's `ci` HDI excludes zero; None for a fit without draws."""
    if not inference.has_draws(est._fitted()):
        return None
    draws = est._fitted().posterior[_weights_name(est)].values
    bounds = inference.hdi(draws.reshape(-1, *draws.shape[2:]), ci)
    return (bounds[..., 0] > 0) | (bounds[..., 1] < 0)


def plot_reliability(curves: dict[str, pd.DataFrame]):
    """Reliability plot: observed share of members against the mean predicted probability, per bin of the
    (item, cluster) cells, one line per method (`baselines.perception.reliability_table`)."""
    fig, axes = new_figure(width=5.2, height=4.6)
    ax = axes[0, 0]
    ax.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1)
    for name, table in curves.items():
        ax.plot(table["predicted"], table["observed"], marker="o", label=name)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("predicted probability")
    ax.set_ylabel("observed share of members")
    ax.legend(fontsize=8)
    return fig


# ---------------------------------------------------------------------- report
def write_report(est, out_dir, *, truth=None, ci: float = DEFAULT_CI, title: str | None = None, baselines: bool = True,
                 seed: int | None = 0) -> Path:
    """Write `out_dir/report.html` for a fitted `PerceptionClustering`.

    truth : optional (n, K) true memberships of the training items (or an object with `membership`,
        such as `simulate.perception.PerceptionStudy`): adds F-scores, Brier score and a reliability plot.
    baselines : with a truth, also score LPE + k-means (10 restarts), k-means on X and the seeded mixture.
    """
    _checked(est)
    data = est.data_from_fit()
    matrix = _truth_matrix(truth, data.n_items, data.n_clusters)
    members = est.memberships(ci)
    sections = [_clusters_section(est, data, members, ci), _weights_section(est, ci)]
    if matrix is not None:
        sections.append(_scores_section(est, data, matrix, baselines, seed))
    return write_fit_report(est, out_dir, title or "The user's clusters from seed sets and perceptions",
                            _intro(est, data), [*sections, _summary_section(est, ci)],
                            lambda fits: _diagnostics_section(est, fits))


def _intro(est, data) -> list[str]:
    how = method_words(est)
    first = (f"{data.n_items} items with {data.n_features} features; {data.n_clusters} user clusters with "
             f"{data.n_seeds} seeds ({data.n_overlapping_seeds} items are seeds of more than one cluster) and "
             f"perception vectors over {data.n_perception} perception features; fitted {how}.")
    overlap = (f"Overlap rule: an item is in every cluster whose posterior mean probability reaches "
               f"{float(est.overlap_threshold):g}, and always in its most probable one.")
    variant = variant_words(est)
    if variant:  # the default model's prose describes the default model only
        return [first, *variant, overlap]
    if _weights_name(est) == "A":
        return [first, MIXTURE_WORDS, overlap]
    return [
        first,
        "Model (after Cheng et al. 2016): every item has a place in perception space, e = x W + b, and belongs "
        "to cluster k with probability softmax(-||e - p_k||^2 / 2): the cluster whose perception vector p_k is "
        "nearest, softly. Clusters that share perception features share directions in feature space. The seeds "
        "are the data: a seed is known to be in its set (in one of its sets, when the user put it in several). "
        "Items that are no seed are predicted, not modelled, so the features' own clusters cannot pull the "
        "user's clusters towards them.",
        overlap,
    ]


def _clusters_section(est, data, members, ci) -> Section:
    clusters = est.clusters_
    probs = _probabilities(members, clusters)
    hard = members["cluster"].to_numpy()
    overlap = members["clusters"].str.split(";")
    pi = est._fitted().posterior["pi"]
    pi_draws = pi.values.reshape(-1, pi.shape[-1])
    bounds = inference.hdi(pi_draws, ci)
    rows = []
    for k, name in enumerate(clusters):
        in_k = hard == name
        rows.append({
            "cluster": name,
            "perception": ", ".join(f"{f}={v:g}" for f, v in zip(data.perception_names, data.perception[k]) if v) or "(none)",
            "seeds": int(data.seeds_per_cluster[k]),
            "pi": round(float(pi_draws[:, k].mean()), 3),
            "pi_low": round(float(bounds[k, 0]), 3), "pi_high": round(float(bounds[k, 1]), 3),
            "items (most probable)": int(in_k.sum()),
            "items (overlap rule)": int(overlap.apply(lambda names, n=name: n in names).sum()),
            "mean P(chosen)": round(float(probs[in_k, k].mean()), 3) if in_k.any() else np.nan,
        })
    table = pd.DataFrame(rows)
    if fit_method(est) == "map":
        table = table.drop(columns=["pi_low", "pi_high"])
    in_two = int((overlap.str.len() > 1).sum())
    return Section(
        "The user's clusters",
        paragraphs=[
            "pi is the share of all items the model puts in each cluster (the mean of the items' membership "
            "probabilities). An item's probabilities are computed on demand from the draws; a seed's are "
            "conditioned on its own sets.",
            f"{in_two} items are in more than one cluster under the overlap rule.",
        ],
        figures=[(plot_memberships(est, members=members),
                  "How sure the memberships of the items that are no seed are; the dashed line is the overlap "
                  "threshold.")],
        tables=[(table, "One row per user cluster.")])


MIXTURE_WORDS = (
    "Model (a seeded mixture of the features, PerceptionMixture): every item, seeded or not, is in one "
    "of the user's clusters k and in one of G groups she does not care about; its features are normal around "
    "A p_k plus the group's centre. Clusters that share perception features share shifts A. A seed is known to "
    "be in its set. Every item enters the likelihood, so the clusters are learned from all of them; the groups "
    "take the features' own structure.")


def _weights_section(est, ci: float) -> Section:
    settled = weights_away_from_zero(est, ci)
    if _weights_name(est) == "A":
        words = ("A is how far each perception feature shifts each standardized feature: the mean of cluster k "
                 "is A p_k plus the centre of the item's group.")
        dots = (f" Each dot marks an entry whose {ci:.0%} HDI excludes zero." if settled is not None
                else " A MAP fit has no intervals, so no entry is marked as settled.")
        return Section("The perception shifts", paragraphs=[words], figures=[(
            plot_weights(est, ci=ci), f"Posterior mean of A, the {TOP_FEATURES} features with the largest shifts.{dots}")])
    marks = (" Each dot marks an entry whose {:.0%} HDI excludes zero ({} of {}); the others may have either "
             "sign.".format(ci, int(settled.sum()), settled.size) if settled is not None else
             " A MAP fit has no intervals, so no entry is marked as settled.")
    return Section(
        "The embedding",
        paragraphs=["W maps the standardized features to perception space: a positive weight means that more of "
                    "the feature moves an item towards the clusters whose perception vectors hold that perception "
                    "feature."],
        figures=[(plot_weights(est, ci=ci),
                  f"Posterior mean of W, the {TOP_FEATURES} features with the largest weights.{marks}")])


def _scores_section(est, data, truth, baselines, seed) -> Section:
    from bayes_wsc.models.perception import baselines as bp

    rows = data.unseeded_items
    k = data.n_clusters
    members = est.memberships(use_seeds=False)
    probs = _probabilities(members, est.clusters_)
    methods = {
        "this fit, overlap rule": (bp.threshold_clusters(probs, float(est.overlap_threshold)), probs),
        "this fit, most probable": (bp.one_hot(probs.argmax(axis=1), k), probs),
    }
    if baselines:
        lpe = bp.lpe(data, seed=seed)
        lpe_m = bp.perception_memberships(lpe.F, data.perception)
        lpe_overlap = bp.threshold_clusters(lpe_m, float(est.overlap_threshold))
        methods["LPE + k-means"] = (bp.one_hot(bp.embedding_kmeans(lpe, data, seed=seed), k), None)
        methods["LPE, thresholded memberships"] = (lpe_overlap, lpe_overlap.astype(float))
        methods["k-means on X"] = (bp.one_hot(bp.kmeans_clusters(data.features, data, seed=seed), k), None)
        gmm = bp.seeded_gmm(data)
        methods["seeded mixture on X"] = (bp.one_hot(gmm.memberships.argmax(axis=1), k), gmm.memberships)
    table_rows, curves = [], {}
    for name, (assigned, p) in methods.items():
        scores = bp.f_scores(assigned, truth, rows)
        row = {"method": name, "mean F-score": round(float(scores.mean()), 3),
               **{f"F {c}": round(float(s), 3) for c, s in zip(est.clusters_, scores)}}
        row["Brier"] = round(bp.brier_score(p if p is not None else assigned, truth, rows), 4)
        table_rows.append(row)
        if p is not None and name != "this fit, most probable" and not name.startswith("LPE"):
            curves[name.replace(", overlap rule", "")] = bp.reliability_table(p, truth, rows)
    return Section(
        "Against the truth",
        paragraphs=[
            "Scored on the items that are no seed. F-score per user cluster (the paper's metric): 2PR / (P + R) "
            "with P the share of the items assigned to the cluster that belong to it and R the share of its "
            "members assigned to it. The Brier score is the mean squared difference between the membership "
            "probability (0 or 1 for a hard assignment) and membership, over items and clusters. "
            "k-means clusters are matched to the seed sets by the Hungarian method on the seeds they hold.",
        ],
        figures=[(plot_reliability(curves), "Reliability of the membership probabilities: a calibrated model "
                  "lies on the diagonal.")],
        tables=[(pd.DataFrame(table_rows), "F-score per user cluster and Brier score.")])


def _summary_section(est, ci) -> Section:
    what = ("pi[cluster], then the embedding W[feature, perception_feature] and b[perception_feature] on the "
            "standardized features, and a variant's own parameters." if _weights_name(est) == "W" else
            "pi[cluster], the shifts A[feature, perception_feature], the features' sd, the groups' centres "
            "B[group, feature] and shares pi_group, on the standardized features.")
    return estimands_section(est, ci, what)


def _diagnostics_section(est, fits: dict) -> Section:
    fit_info = inference.get_attrs(est._fitted()).get("fit_info", {})
    paragraphs = []
    lps = fit_info.get("map", {}).get("restart_log_densities")
    if lps:
        paragraphs.append(f"MAP: best log density {np.nanmax(np.asarray(lps, dtype=float)):.2f} over {len(lps)} "
                          "starts.")
    nuts = fit_info.get("nuts")
    if nuts:
        paragraphs.append(f"NUTS: {nuts.get('chains')} chains x {nuts.get('draws')} draws after {nuts.get('tune')} "
                          f"tuning steps, started at the MAP, {nuts.get('seconds', float('nan')):.0f} s.")
    return diagnostics_section(fits, paragraphs)
