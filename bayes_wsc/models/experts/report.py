"""The HTML report of noisy-experts fits (seed 002): the experts' reliability, the clustering, baselines.

The expert table is the centre: alpha (sensitivity), beta (specificity) and
the weight omega of every expert with credible intervals, sorted by omega
and drawn as a forest plot. The clustering section gives the cluster sizes,
how sure the memberships are, and how often each expert agrees with the
clustering (a model-free check of the ranking). Baselines are recomputed
from the data saved in the fit, so a report can be written from a fit file
alone.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import normalized_mutual_info_score

from bayes_wsc import inference
from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.errors import InputError
from bayes_wsc.report.criticism import write_fit_report
from bayes_wsc.report.html import (Section, diagnostics_section, estimands_section, fit_label, fit_method, method_words,
                                   new_figure, variant_words)

FIT_COLOR, TRUTH_COLOR = "#1f5fa8", "black"
CLUSTER_CMAP = "tab10"
#: a training item whose chosen cluster has a posterior mean probability below this is called uncertain
UNCERTAIN_BELOW = 0.8


def nmi(a, b) -> float:
    """Normalized mutual information with the geometric mean (Strehl & Ghosh 2002, the paper's [19])."""
    return float(normalized_mutual_info_score(a, b, average_method="geometric"))


def _checked(est):
    if getattr(est, "_fitted", lambda: None)() is None or not hasattr(est, "expert_table"):
        raise InputError("the report needs a fitted NoisyExperts: call fit(data) first")
    return est


def _truth_values(truth, n_experts: int):
    if truth is None:
        return None
    alpha, beta = np.asarray(truth.alpha, dtype=float), np.asarray(truth.beta, dtype=float)
    if alpha.shape != (n_experts,) or beta.shape != (n_experts,):
        raise InputError(f"truth has {alpha.size} experts but the fit has {n_experts}")
    return alpha, beta


# ---------------------------------------------------------------------- figures
def plot_experts(est, *, ci: float = DEFAULT_CI, truth=None):
    """Forest plot of omega, alpha and beta per expert, most reliable (highest omega) on top.

    Bars are `ci` highest-density intervals (NUTS); a MAP fit shows open diamonds (no interval).
    `truth` (an object with alpha and beta per expert, e.g. `ExpertsTruth`) adds the true values.
    """
    _checked(est)
    table = est.expert_table(ci)
    order = est.expert_order()
    true = _truth_values(truth, len(table))
    n = len(table)
    fig, axes = new_figure(1, 3, width=11.0, height=1.2 + 0.38 * n, sharey=True)
    y = np.arange(n)[::-1]
    has_interval = inference.has_draws(est._fitted())
    panels = [("omega", r"$\omega$ = log($\alpha\beta$ / ((1-$\alpha$)(1-$\beta$)))", None),
              ("alpha", r"$\alpha$: sensitivity, P(must-link | same cluster)", (0.5, 1.0)),
              ("beta", r"$\beta$: specificity, P(cannot-link | different clusters)", (0.5, 1.0))]
    for ax, (name, label, limits) in zip(axes[0], panels):
        mean = table[name].to_numpy()
        if has_interval:
            ax.hlines(y, table[f"{name}_low"], table[f"{name}_high"], color=FIT_COLOR, lw=2.2, alpha=0.8,
                      label=f"{ci:.0%} HDI")
            ax.plot(mean, y, "o", color=FIT_COLOR, ms=5, label="posterior mean")
        else:
            ax.plot(mean, y, "D", mfc="white", mec=FIT_COLOR, mew=1.5, ms=6, label="posterior mode (no interval)")
        if true is not None:
            values = {"alpha": true[0], "beta": true[1], "omega": _omega(*true)}[name][order]
            ax.plot(values, y, "x", color=TRUTH_COLOR, ms=7, mew=1.6, label="truth")
        if limits is not None:
            ax.set_xlim(limits[0] - 0.01, limits[1] + 0.01)
        ax.set_xlabel(label, fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    axes[0, 0].set_yticks(y, table.index)
    axes[0, 0].legend(fontsize=8, frameon=False, loc="lower right")
    return fig


def _matched(labels, clusters) -> np.ndarray:
    """True classes renumbered to the clusters they overlap most (Hungarian), so colours are comparable."""
    from scipy.optimize import linear_sum_assignment

    codes, _ = pd.factorize(np.asarray(labels))
    clusters = np.asarray(clusters)
    size = max(codes.max(), clusters.max()) + 1
    overlap = np.zeros((size, size))
    np.add.at(overlap, (codes, clusters), 1)
    rows, cols = linear_sum_assignment(-overlap)
    mapping = np.empty(size, dtype=np.int64)
    mapping[rows] = cols
    return mapping[codes]


def _omega(alpha, beta):
    return np.log(alpha * beta / ((1 - alpha) * (1 - beta)))


def plot_clusters(est, *, ci: float = DEFAULT_CI, truth=None, members: pd.DataFrame | None = None):
    """Training items on their first two principal components, coloured by cluster (faded when
    uncertain), and the distribution of the chosen cluster's probability. `members`: `est.memberships(ci)`
    when the caller has it (the report: each call works over every draw, half its time for a NUTS fit)."""
    _checked(est)
    members = est.memberships(ci) if members is None else members
    features = est._fitted().constant_data["features"].values
    centred = features - features.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    scores = centred @ vt[: min(2, vt.shape[0])].T
    if scores.shape[1] == 1:
        scores = np.column_stack([scores[:, 0], np.zeros(len(scores))])
    k = est._fitted().posterior.sizes["cluster"]
    chosen = members[[f"prob_{c}" for c in range(k)]].to_numpy().max(axis=1)
    ncols = 3 if truth is not None else 2
    fig, axes = new_figure(1, ncols, width=5.0 * ncols, height=4.4)
    from matplotlib import colormaps

    cmap = colormaps[CLUSTER_CMAP]
    colors = np.array([cmap(c % 10) for c in members["cluster"]])
    colors[:, 3] = np.clip(0.15 + 0.85 * (chosen - 1 / k) / (1 - 1 / k), 0.15, 1.0)
    ax = axes[0, 0]
    ax.scatter(scores[:, 0], scores[:, 1], c=colors, s=14, linewidths=0)
    for c in range(k):
        ax.scatter([], [], color=cmap(c % 10), s=20, label=f"cluster {c}")
    ax.set_xlabel("principal component 1 (standardized features)")
    ax.set_ylabel("principal component 2")
    ax.set_title("clustering (faded: uncertain membership)", fontsize=10)
    ax.legend(fontsize=8, frameon=False)
    ax = axes[0, 1]
    ax.hist(chosen, bins=np.linspace(1 / k, 1, 26), color=FIT_COLOR, alpha=0.8)
    ax.axvline(UNCERTAIN_BELOW, color="grey", ls="--", lw=1)
    ax.set_xlabel("posterior mean probability of the chosen cluster")
    ax.set_ylabel("items")
    if truth is not None:
        labels = np.asarray(truth.labels)
        ax = axes[0, 2]
        ax.scatter(scores[:, 0], scores[:, 1], c=[cmap(int(c) % 10) for c in _matched(labels, members["cluster"])],
                   s=14, linewidths=0)
        ax.set_title(f"true classes (NMI with the clustering {nmi(labels, members['cluster']):.3f})", fontsize=10)
        ax.set_xlabel("principal component 1")
    return fig


# ---------------------------------------------------------------------- report
def write_report(est, out_dir, *, truth=None, ci: float = DEFAULT_CI, title: str | None = None, baselines: bool = True,
                 seed: int | None = 0) -> Path:
    """Write `out_dir/report.html` for a fitted `NoisyExperts`.

    truth : optional, with `alpha`, `beta` per expert and `labels` per training item (as returned
        by `bayes_wsc.models.experts.simulate`): adds true values and NMI against the truth.
    baselines : also fit KMeans, majority vote + PCKMeans and the paper's point estimate (eq. 8)
        on the same data (seconds to a minute).
    """
    _checked(est)
    data = est.data_from_fit()
    if truth is not None and getattr(truth, "labels", None) is not None and len(truth.labels) != data.n_items:
        raise InputError(f"truth has labels for {len(truth.labels)} items but the fit has {data.n_items}")
    members = est.memberships(ci)
    sections = [
        _experts_section(est, ci, truth),
        _clusters_section(est, data, members, ci, truth),
    ]
    if baselines:
        sections.append(_baselines_section(est, data, members, truth, seed))
    return write_fit_report(est, out_dir, title or "Clustering from several uncertain experts", _intro(est, data),
                            [*sections, _summary_section(est, ci)], lambda fits: _diagnostics_section(est, fits))


def _intro(est, data) -> list[str]:
    k = est._fitted().posterior.sizes["cluster"]
    how = method_words(est, "the posterior mode from random restarts; no intervals")
    first = (f"{data.n_items} items with {data.n_features} features ({data.linked_items.size} of them in at least "
             f"one constraint), {data.n_experts} experts, {data.n_constraints} must-link / cannot-link constraints on "
             f"{data.n_pairs} distinct pairs; K = {k} clusters, fitted {how}.")
    variant = variant_words(est)
    if variant:  # the default model's prose describes the default model only
        return [first, *variant]
    return [
        first,
        "Model (Chang et al. 2017): a softmax (multinomial logistic) clustering p(z = k | x) = softmax(x W + b) "
        "and, for every expert, a sensitivity alpha = P(must-link | same cluster) and a specificity "
        "beta = P(cannot-link | different clusters), both in [0.5, 1]. Each pair's likelihood sums out the "
        "clusters of its two items once, for all the experts who rated it. The product over pairs is a pairwise "
        "composite likelihood: pairs that "
        "share an item are treated as independent, because the exact joint marginal over all clusterings is "
        "intractable (the paper's EM optimizes a bound of the same pairwise quantity). Intervals can therefore be "
        "somewhat narrower than the data warrant when items appear in many pairs.",
    ]


def _experts_section(est, ci, truth) -> Section:
    table = est.expert_table(ci)
    shown = table.round(3)
    if fit_method(est) == "map":
        shown = shown[["alpha", "beta", "omega", "must_link", "cannot_link"]]
        caption = "Posterior mode of each expert's parameters (a MAP fit has no intervals), sorted by omega."
    else:
        caption = (f"Posterior mean and {ci:.0%} HDI of each expert's sensitivity alpha, specificity beta and "
                   "weight omega, sorted by omega (most reliable first); must_link and cannot_link count the "
                   "expert's constraints.")
    true = _truth_values(truth, len(table))
    if true is not None:
        order = est.expert_order()
        shown = shown.assign(true_alpha=true[0][order], true_beta=true[1][order],
                             true_omega=np.round(_omega(*true)[order], 3))
    paragraphs = [
        "omega = log(alpha beta / ((1 - alpha)(1 - beta))) is the weight of an expert's constraint in the "
        "clustering (Sec. 2.4 of the paper): a must-link from an expert with weight omega multiplies the odds "
        "that the two items share a cluster by about exp(omega). An expert at chance has alpha = beta = 0.5 and "
        "omega = 0.",
    ]
    if true is not None:
        rank_ok = np.array_equal(np.argsort(-_omega(*true), kind="stable"), est.expert_order())
        paragraphs.append("The fitted order of the experts by omega " + ("matches" if rank_ok else "differs from")
                          + " the true order.")
    return Section("Experts, most reliable first", paragraphs=paragraphs,
                   figures=[(plot_experts(est, ci=ci, truth=truth),
                             "Each row is an expert; crosses mark the truth when it is known.")],
                   tables=[(shown, caption)])


def _clusters_section(est, data, members, ci, truth) -> Section:
    k = est._fitted().posterior.sizes["cluster"]
    probs = members[[f"prob_{c}" for c in range(k)]].to_numpy()
    chosen = probs.max(axis=1)
    linked = np.zeros(data.n_items, dtype=bool)
    linked[data.linked_items] = True
    rows = []
    for c in range(k):
        in_c = members["cluster"].to_numpy() == c
        rows.append({"cluster": c, "items": int(in_c.sum()), "share": round(float(in_c.mean()), 3),
                     "in a constraint": int((in_c & linked).sum()),
                     "mean P(chosen)": round(float(chosen[in_c].mean()), 3) if in_c.any() else np.nan,
                     f"P(chosen) < {UNCERTAIN_BELOW}": int((in_c & (chosen < UNCERTAIN_BELOW)).sum())})
    sizes = pd.DataFrame(rows)
    hard = members["cluster"].to_numpy()
    same = hard[data.pairs[data.cell_pair, 0]] == hard[data.pairs[data.cell_pair, 1]]
    agree = same == data.link.astype(bool)
    table = est.expert_table(ci)
    agreement = pd.DataFrame({
        "constraints": np.bincount(data.cell_expert, minlength=data.n_experts),
        "agree with the clustering": np.round(np.bincount(data.cell_expert, weights=agree,
                                                          minlength=data.n_experts)
                                              / np.maximum(np.bincount(data.cell_expert, minlength=data.n_experts), 1), 3),
    }, index=pd.Index(data.expert_names, name="expert")).loc[table.index]
    agreement["omega"] = table["omega"].round(3)
    paragraphs = [
        "Clusters from the posterior mean memberships of the training items, each conditioned on its features "
        "and on the experts' links of its own pairs, P(z_i = k | x, links on i); an item that no expert rated "
        "gets P(z = k | x), the rule that also clusters new items. 'P(chosen)' is the posterior mean "
        "probability of the most probable cluster; memberships are computed on demand from the draws, never "
        "stored per draw.",
        "The second table is a model-free check of the expert ranking: the share of each expert's constraints "
        "that the clustering satisfies. Experts who agree more often should have larger omega.",
    ]
    tables = [(sizes, "Cluster sizes and how sure the memberships are."),
              (agreement, "Each expert's agreement with the clustering, most reliable (by omega) first.")]
    if truth is not None and getattr(truth, "labels", None) is not None:
        paragraphs.append(f"NMI between the clustering and the true classes: {nmi(truth.labels, hard):.3f}.")
    return Section("Clusters", paragraphs=paragraphs, figures=[plot_clusters(est, ci=ci, truth=truth, members=members)], tables=tables)


def _baselines_section(est, data, members, truth, seed) -> Section:
    from bayes_wsc.models.experts.baselines import kmeans_labels, majority_vote_pckmeans, point_estimate

    k = est._fitted().posterior.sizes["cluster"]
    ours = members["cluster"].to_numpy()
    results = {
        f"{fit_label(est)} (this fit)": ours,
        "KMeans": kmeans_labels(data.features, k, seed=seed),
        "majority vote + PCKMeans": majority_vote_pckmeans(data, k, seed=seed).labels,
    }
    paper = point_estimate(data, k, seed=seed)
    results["paper's point estimate (eq. 8)"] = paper.labels(data.features)
    rows = []
    for name, labels in results.items():
        row = {"method": name, "NMI with this fit": round(nmi(ours, labels), 3)}
        if truth is not None and getattr(truth, "labels", None) is not None:
            row["NMI with the truth"] = round(nmi(truth.labels, labels), 3)
        rows.append(row)
    order = est.expert_order()
    omega = pd.DataFrame({"this fit": est.expert_table()["omega"].round(3).to_numpy(),
                          "eq. 8 point estimate": np.round(paper.omega[order], 3)},
                         index=pd.Index(data.expert_names[order], name="expert"))
    return Section(
        "Baselines",
        paragraphs=[
            "The paper's competitors on the same standardized features: KMeans (no experts), the experts' majority "
            "vote per pair (must-link when more than half said so) fed to PCKMeans, a k-means that pays a fixed "
            "cost per violated constraint, and the paper's own point estimate (eq. 8: the same model, fitted by "
            "alternating L-BFGS on the Jensen bound, 20 restarts). NMI is normalized mutual information (1: the "
            "same partition up to relabeling).",
        ],
        tables=[(pd.DataFrame(rows), "Agreement of each method's clustering with this fit (and with the truth)."),
                (omega, "Expert weights omega: this fit (posterior mean or mode) and the paper's point estimate.")],
    )


def _summary_section(est, ci) -> Section:
    return estimands_section(
        est, ci, "omega, alpha and beta per expert (sorted by omega), then the zero-sum clustering weights b[cluster] "
        "and W[feature, cluster] on the standardized features, and a variant's own parameters.",
        after_nuts=", after relabeling of the clusters")


def _diagnostics_section(est, fits: dict) -> Section:
    attrs = inference.get_attrs(est._fitted())
    fit_info = attrs.get("fit_info", {})
    paragraphs = []
    lps = fit_info.get("map", {}).get("restart_log_densities")
    if lps:
        lps = np.asarray(lps, dtype=float)
        reached = int(np.sum(np.nanmax(lps) - lps <= 1e-3 * max(1.0, abs(np.nanmax(lps)) * 1e-6)))
        paragraphs.append(f"MAP: {reached} of {lps.size} random restarts reached the best posterior mode "
                          f"(log density {np.nanmax(lps):.2f}).")
    nuts = fit_info.get("nuts")
    if nuts:
        paragraphs.append(
            f"NUTS: {nuts.get('chains')} chains x {nuts.get('draws')} draws after {nuts.get('tune')} tuning steps, "
            f"started at the MAP, {nuts.get('seconds', float('nan')):.0f} s. Draws relabelled against the MAP's "
            f"clusters: {nuts.get('relabelled_draws', 0)}; share of items each chain clusters like the MAP: "
            + ", ".join(f"{a:.0%}" for a in nuts.get("chain_agreement", [])) + ".")
    return diagnostics_section(fits, paragraphs)
