"""Reports of prediction-constrained mixtures: the clusters over the data, the lam trade-off, restarts.

* `plot_clusters`: one fit's clusters over its training data, in the style
  of seed 003's Fig. 2 (1-D: stacked histogram by label with each cluster's
  density) and Fig. 3 (2-D: scatter of two features with each cluster's 1
  and 2 sd ellipses). Clusters are coloured by rho, red for clusters that
  emit the positive label.
* `plot_tradeoff`: error rate and -log p(x) / N against lam (Fig. 4).
* `write_report` (one fit) and `write_path_report` (a lam path): single
  HTML pages built with `report.html`, with the estimands, the restarts'
  basins, what the fit is (MAP or generalized posterior) and diagnostics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.lines import Line2D
from matplotlib.patches import Ellipse
from matplotlib.text import Text

from bayes_wsc import inference
from bayes_wsc.maths.pcmix import lam_text
from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.errors import InputError
from bayes_wsc.report.criticism import write_fit_report
from bayes_wsc.report.html import (Section, diagnostics_section, estimands_section, fit_method, laplace_words,
                                   new_figure, variant_words, write_html)

RHO_CMAP = "coolwarm"
LABEL_COLORS = ("#4a7fc1", "#d6604d")  # class 0 (negative), class 1 (positive)
UNLABELED_COLOR = "#b8b8b8"
#: points drawn in a scatter (a seeded subsample beyond this)
MAX_POINTS = 4000

GENERALIZED_POSTERIOR_WORDS = (
    "NUTS samples the generalized posterior, proportional to prior x exp(PC objective). At lam = 1 this is "
    "the ordinary Bayesian posterior of the joint model of x and y. At any other lam it is not the posterior "
    "of any probability model: the labels' conditional likelihood log p(y | x) is counted lam times, so the "
    "draws concentrate as if there were lam times more labeled information than there is. The spread shows "
    "which parameters fit the lam-weighted objective nearly as well as its optimum; the intervals are not "
    "calibrated credible or confidence intervals."
)


# ---------------------------------------------------------------------- numbers
def _checked_fit(est, what: str = "the fit"):
    if getattr(est, "_fitted", lambda: None)() is None or getattr(est, "model_name", None) != "pcmix":
        raise InputError(f"{what} is not a fitted PCMixture: call fit(data) first")
    return est


def _settings(est) -> dict:
    return dict(inference.get_attrs(est._fitted()).get("settings", {}))


def cluster_table(est) -> pd.DataFrame:
    """Posterior means (or the MAP) of pi, rho, mean and sd per component, in the data's units."""
    post = est._fitted().posterior
    mean = post["mean"].mean(("chain", "draw")).values
    sd = post["sd"].mean(("chain", "draw")).values
    pi = post["pi"].mean(("chain", "draw")).values
    rho = post["rho"].mean(("chain", "draw")).values
    classes = est.classes_
    rows = {}
    for k, component in enumerate(post["component"].values):
        row = {"pi": pi[k]}
        if rho.ndim == 1:
            row[f"rho = P(y={classes[1]})"] = rho[k]
        else:
            row.update({f"rho[{c}]": rho[k, j] for j, c in enumerate(classes)})
        for j, feature in enumerate(est.features_):
            row[f"mean[{feature}]"] = mean[k, j]
            row[f"sd[{feature}]"] = sd[k, j]
        rows[f"component {component}"] = row
    return pd.DataFrame(rows).T


@dataclass
class Mixture:
    """Mixture parameters in the data's units, as drawn: pi (K,), mean and sd (K, D), rho (K, C)."""

    pi: np.ndarray
    mean: np.ndarray
    sd: np.ndarray
    rho: np.ndarray

    @classmethod
    def of_fit(cls, est) -> Mixture:
        """Posterior means (or the MAP) of a fitted PCMixture."""
        post = est._fitted().posterior
        rho = post["rho"].mean(("chain", "draw")).values
        if rho.ndim == 1:
            rho = np.stack([1 - rho, rho], axis=-1)
        return cls(*(post[n].mean(("chain", "draw")).values for n in ("pi", "mean", "sd")), rho)

    @classmethod
    def of_params(cls, params, data) -> Mixture:
        """Parameters on the standardized scale (`maths.pcmix.Params`) put in the data's units."""
        return cls(params.pi, data.center + data.scale * params.mean, data.scale * params.sd, params.rho)

    def colors(self) -> list:
        """Red for clusters that emit the positive label (two classes), tab10 otherwise."""
        if self.rho.shape[1] == 2:
            cmap = colormaps[RHO_CMAP]
            return [cmap(float(r)) for r in self.rho[:, 1]]
        cmap = colormaps["tab10"]
        return [cmap(k % 10) for k in range(self.pi.size)]

    def rho_words(self, k: int) -> str:
        if self.rho.shape[1] == 2:
            return f"rho={self.rho[k, 1]:.2f}"
        return "rho=[" + ", ".join(f"{r:.2f}" for r in self.rho[k]) + "]"


# ---------------------------------------------------------------------- clusters
def plot_clusters(est, *, features: tuple[str, str] | None = None, ax=None, title: str | None = None,
                  legend: bool = True):
    """The fitted clusters over the training data (Fig. 2 for one feature, Fig. 3 for more).

    features : the two features to plot against each other (default: the first two).
    ax : draw into this matplotlib Axes; otherwise a new Figure is returned.
    """
    est = _checked_fit(est)
    return plot_mixture(est.data_from_fit(), Mixture.of_fit(est), features=features, ax=ax, legend=legend,
                        title=title or f"lam = {float(_settings(est).get('lam', est.lam)):g}")


def plot_mixture(data, mixture: Mixture, *, features: tuple[str, str] | None = None, ax=None,
                 title: str = "", legend: bool = True):
    """Any mixture (a fit, or a baseline's `Mixture.of_params`) over `data` (LabeledItems)."""
    fig = None
    if ax is None:
        fig, axes = new_figure(width=6.5, height=4.6)
        ax = axes[0, 0]
    if data.n_features == 1:
        _clusters_1d(mixture, data, ax, legend)
    else:
        names = list(features) if features is not None else list(data.features[:2])
        if len(names) != 2 or any(n not in data.features for n in names):
            raise InputError(f"features must name two of the fit's features {list(data.features)}, got {features!r}")
        _clusters_2d(mixture, data, ax, [data.features.index(n) for n in names], legend)
    ax.set_title(title, fontsize=10)
    return fig if fig is not None else ax.figure


def _label_groups(data):
    """(mask, colour, legend text) for unlabeled items and each class."""
    groups = [(~data.labeled, UNLABELED_COLOR, "unlabeled")]
    cmap = colormaps["tab10"]
    for c, name in enumerate(data.classes):
        color = LABEL_COLORS[c] if data.n_classes == 2 else cmap(c % 10)
        groups.append((data.y == c, color, f"y = {name}"))
    return groups


def _clusters_1d(mixture: Mixture, data, ax, legend: bool) -> None:
    x = data.x_raw[:, 0]
    edges = np.histogram_bin_edges(x, bins=min(60, max(10, int(np.sqrt(x.size)))))
    groups = [g for g in _label_groups(data) if g[0].any()]
    ax.hist([x[m] for m, _, _ in groups], bins=edges, stacked=True, color=[c for _, c, _ in groups],
            label=[t for _, _, t in groups], alpha=0.6)
    pi, mean, sd = mixture.pi, mixture.mean[:, 0], mixture.sd[:, 0]
    grid = np.linspace(min(x.min(), (mean - 2.5 * sd).min()), max(x.max(), (mean + 2.5 * sd).max()), 400)
    width = edges[1] - edges[0]
    colors = mixture.colors()
    for k in range(pi.size):
        density = pi[k] * np.exp(-0.5 * ((grid - mean[k]) / sd[k]) ** 2) / (sd[k] * math.sqrt(2 * math.pi))
        ax.plot(grid, density * x.size * width, color=colors[k], lw=2.2,
                label=f"cluster {k}: {mixture.rho_words(k)}, pi={pi[k]:.2f}")
    ax.set_ylim(0, 1.6 * np.histogram(x, edges)[0].max())
    ax.set_xlabel(data.features[0])
    ax.set_ylabel("items per bin")
    if legend:
        ax.legend(fontsize=7, frameon=False, loc="upper left")


def _clusters_2d(mixture: Mixture, data, ax, dims: list[int], legend: bool) -> None:
    x = data.x_raw[:, dims]
    shown = np.arange(x.shape[0])
    if shown.size > MAX_POINTS:
        shown = np.sort(np.random.default_rng(0).choice(shown.size, MAX_POINTS, replace=False))
    for mask, color, text in _label_groups(data):
        rows = shown[mask[shown]]
        if rows.size:
            unlabeled = text == "unlabeled"
            ax.scatter(x[rows, 0], x[rows, 1], s=3 if unlabeled else 6, color=color, alpha=0.35 if unlabeled else 0.7,
                       marker="." if unlabeled else "o", linewidths=0, label=text, zorder=1 if unlabeled else 2)
    mean, sd = mixture.mean[:, dims], mixture.sd[:, dims]
    colors = mixture.colors()
    for k in range(mean.shape[0]):
        for scale, style in ((1, "-"), (2, "--")):
            ax.add_patch(Ellipse(mean[k], 2 * scale * sd[k, 0], 2 * scale * sd[k, 1], fill=False,
                                 edgecolor=colors[k], lw=2 if scale == 1 else 1.2, ls=style, zorder=3))
    ax.set_xlabel(data.features[dims[0]])
    ax.set_ylabel(data.features[dims[1]])
    if legend:
        handles, _ = ax.get_legend_handles_labels()
        handles.append(Line2D([], [], color="grey", lw=2, label="cluster: 1 sd (solid), 2 sd (dashed)"))
        ax.legend(handles=handles, fontsize=7, frameon=False, loc="upper left", markerscale=2)
    place_labels(ax, mean, [f"{k}: {mixture.rho_words(k)}" for k in range(mean.shape[0])], colors)


#: distances (points) at which a label that would hide another is tried, in 8 directions each
LABEL_RINGS = (16, 32, 48, 64, 80)


def place_labels(ax, anchors, texts, colors) -> list:
    """Boxed labels at their anchors (data coordinates) that never overlap one another.

    Each label goes on its anchor if its box meets no label placed before it; otherwise it is tried at
    growing distances in eight directions, and drawn with a line back to its anchor. The figure is laid
    out first, so the boxes are measured where they will be drawn. Returns the annotations.
    """
    ax.autoscale_view()
    ax.figure.canvas.draw()
    renderer = ax.figure.canvas.get_renderer()
    angles = np.deg2rad(np.arange(0, 360, 45) + 90)
    offsets = [(0.0, 0.0)] + [(r * np.cos(a), r * np.sin(a)) for r in LABEL_RINGS for a in angles]
    placed, boxes = [], []
    for anchor, text, color in zip(np.asarray(anchors, dtype=float), texts, colors):
        for dx, dy in offsets:
            moved = bool(dx or dy)
            label = ax.annotate(text, anchor, xytext=(dx, dy), textcoords="offset points", fontsize=8, color="black",
                                zorder=4 if moved else 5, ha="center", va="center", annotation_clip=False,
                                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "alpha": 0.9, "ec": color},
                                arrowprops={"arrowstyle": "-", "color": color, "lw": 1} if moved else None)
            box = Text.get_window_extent(label, renderer)  # the text's box, without the line to its anchor
            if not any(box.overlaps(other) for other in boxes) or (dx, dy) == offsets[-1]:
                placed.append(label)
                boxes.append(box)
                break
            label.remove()
    return placed


# ---------------------------------------------------------------------- the lam path
def plot_tradeoff(path, *, table: pd.DataFrame | None = None, baseline: pd.DataFrame | None = None,
                  baseline_label: str = "ML+rep (EM)", y: np.ndarray | None = None):
    """Error rate and -log p(x) / N against lam (seed 003, Fig. 4), for a `PCPath`.

    table : the path's table (computed when not given; `y` passes other labels to score).
    baseline : rows with lam, error_rate and data_nll_per_item (for example ML+rep) drawn beside.
    """
    table = path.table(y=y) if table is None else table
    fig, axes = new_figure(1, 2, width=9.5, height=3.8)
    series = [("PC (this fit)", table, "#b2182b", "o-")]
    if baseline is not None:
        series.append((baseline_label, baseline, "#2166ac", "s--"))
    for ax, column, label in ((axes[0, 0], "error_rate", "error rate of y given x"),
                              (axes[0, 1], "data_nll_per_item", "-log p(x) / N")):
        for name, frame, color, style in series:
            ax.plot(frame["lam"], frame[column], style, color=color, label=name, ms=5)
        if (table["lam"] > 0).all() and (baseline is None or (baseline["lam"] > 0).all()):
            ax.set_xscale("log", base=2)
        ax.set_xlabel("lam")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8, frameon=False)
    return fig


def plot_path_clusters(path, *, features: tuple[str, str] | None = None, ncols: int = 3):
    """The fitted clusters at every lam of a path, one panel each (Fig. 2 / 3 layout)."""
    n = len(path.fits)
    ncols = min(ncols, n)
    nrows = math.ceil(n / ncols)
    fig, axes = new_figure(nrows, ncols, width=4.6 * ncols, height=3.8 * nrows)
    for i, (lam, est) in enumerate(zip(path.lams, path.fits)):
        plot_clusters(est, features=features, ax=axes.ravel()[i], title=f"lam = {lam_text(lam)}", legend=i == 0)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    return fig


# ---------------------------------------------------------------------- sections
def _fit_words(est, with_lam: bool = True) -> str:
    settings = _settings(est)
    lam = float(settings["lam"])
    lam_words = f", lam = {lam_text(lam)}" if with_lam else ""
    if fit_method(est) == "map":
        what = (f"the posterior mode (MAP), which is PC training: L-BFGS from {settings.get('restarts')} starts "
                "(k-means, then random), the best objective kept")
    elif fit_method(est) == "laplace":
        what = f"{laplace_words(est)}, at the best of {settings.get('restarts')} MAP restarts"
    else:
        what = (f"NUTS with {settings.get('chains')} chains of {settings.get('draws')} draws after "
                f"{settings.get('tune')} tuning steps, started at the best of {settings.get('restarts')} MAP "
                "restarts and relabeled against it")
    variant = variant_words(est)
    if variant:  # the default model's priors describe the default model only
        return f"K = {settings['components']} clusters{lam_words}; {what}. {variant[0]}"
    return (f"K = {settings['components']} clusters{lam_words}; {what}. Priors: pi ~ Dirichlet"
            f"({settings['concentration']:g}), rho ~ Beta/Dirichlet({settings['concentration']:g}) (eq. 25), "
            f"standardized means ~ Normal(0, {settings['mean_prior_sd']:g}), standardized sds = "
            f"{settings['sd_floor']:g} + Gamma(2, {settings['sd_prior_rate']:g}).")


def _intro(est) -> list[str]:
    data = est.data_from_fit()
    lam = float(_settings(est)["lam"])
    return [
        "A prediction-constrained (PC) Gaussian mixture (Hughes et al.): K clusters describe the items' features "
        "x, and each cluster emits the label y with its own probabilities rho. Training maximizes "
        "sum log p(x) + lam * sum over labeled items of log p(y | x), plus the log prior: lam = 1 is the "
        "ordinary joint model; larger lam asks the clusters to predict y from x at some cost in how well they "
        "describe x.",
        f"The data have {data.n_items} items with {data.n_features} feature{'s' if data.n_features > 1 else ''} "
        f"({', '.join(data.features)}); {data.n_labeled} carry a label (classes {', '.join(data.classes)}).",
        _fit_words(est),
        GENERALIZED_POSTERIOR_WORDS if fit_method(est) == "nuts" and lam != 1 else "",
    ]


def _clusters_section(est) -> Section:
    fig = plot_clusters(est)
    scores = est.scores()
    words = (f"On the training items: -log p(x) / N = {scores['data_nll_per_item']:.3f}; error rate on the labeled "
             f"items {scores['error_rate']:.3f} (most probable class of y given x alone).")
    point = "the posterior mode (MAP)" if fit_method(est) == "map" else "posterior means after relabeling"
    return Section("Fitted clusters", paragraphs=[
        f"Each cluster is drawn over the data at {point}; red clusters emit the positive label more often, blue "
        "ones the negative.", words], figures=[fig],
        tables=[(cluster_table(est).round(3), "Cluster parameters, in the data's units.")])


def _estimands_section(est, ci: float) -> Section:
    return estimands_section(est, ci, "pi[component], mean and sd[component, feature] in the data's units, "
                             "rho[component] (or rho[component, class]), and a variant's own parameters.",
                             after_nuts=" (after relabeling)")


def _restarts_section(est) -> Section:
    table = est.restart_basins_.copy()
    table.index = [f"basin {i + 1}" for i in range(len(table))]
    info = inference.get_attrs(est._fitted()).get("fit_info", {}).get("map", {})
    paragraphs = [
        "The PC objective has several local optima. Every restart of the MAP ends in one; restarts that reach the "
        "same log density (prior + PC objective) are grouped into one basin. The best basin is the fit.",
    ]
    if not info.get("converged", True):
        paragraphs.append(f"The best restart's optimizer reported: {info.get('optimizer_message')}.")
    return Section("Restarts and their basins", paragraphs=paragraphs,
                   tables=[(table.round(3), "log density reached and number of restarts per basin")])


def write_report(est, out_dir, *, ci: float = DEFAULT_CI, title: str | None = None) -> Path:
    """Write `out_dir/report.html` for one fitted `PCMixture`."""
    est = _checked_fit(est)
    return write_fit_report(est, out_dir, title or "Prediction-constrained mixture report",
                            [p for p in _intro(est) if p],
                            [_clusters_section(est), _estimands_section(est, ci), _restarts_section(est)])


def write_path_report(path, out_dir, *, y: np.ndarray | None = None, baseline: pd.DataFrame | None = None,
                      title: str | None = None) -> Path:
    """Write `out_dir/report.html` for a `PCPath`: trade-off, clusters at each lam, basins, diagnostics."""
    if not path.fits:
        raise InputError("the path holds no fits")
    for est in path.fits:
        _checked_fit(est)
    first = path.fits[0]
    table = path.table(y=y)
    shown = table.drop(columns=["data_loglik", "label_loglik"]).round(4)
    trade = Section(
        "Trade-off: prediction against data fit",
        paragraphs=[
            "Each lam gives one fit. Moving right, the objective weighs the prediction of y from x more: the error "
            "rate should fall and -log p(x) / N rise (the clusters describe x less well). Seed 003, Fig. 4.",
            "objective = sum log p(x) + lam sum log p(y | x) at the fit; log_density adds the log prior; basins "
            "counts the distinct optima the restarts reached, restarts_at_best how many reached the best one; "
            "best_start is where the winning optimization began"
            + (" (each lam also starts from the previous lam's optimum)." if path.warm_start else "."),
        ],
        figures=[(plot_tradeoff(path, table=table, baseline=baseline),
                  "error rate (labeled training items" + (", or the labels given" if y is not None else "")
                  + ") and -log p(x) / N against lam")],
        tables=[(shown, "one row per lam")],
    )
    clusters = Section("Fitted clusters at each lam", paragraphs=[
        "The clusters of each fit over the data (seed 003, Fig. 2 / Fig. 3); red clusters emit the positive label "
        "more often."], figures=[plot_path_clusters(path)])
    estimands = Section("Cluster parameters at each lam", tables=[
        (cluster_table(est).round(3), f"lam = {lam_text(lam)}") for lam, est in zip(path.lams, path.fits)])
    basins = []
    for lam, est in zip(path.lams, path.fits):
        frame = est.restart_basins_.copy()
        frame.insert(0, "lam", lam)
        basins.append(frame)
    basin_section = Section("Restarts and their basins", paragraphs=[
        "Every restart ends in a local optimum; restarts reaching the same log density share a basin."],
        tables=[(pd.concat(basins, ignore_index=True).round(3), "basins per lam, best first")])
    fits = {f"lam = {lam_text(lam)}": est for lam, est in zip(path.lams, path.fits)}
    diag = diagnostics_section(fits)
    intro = [p for p in _intro(first)[:2]]
    intro.append(f"Fitted at lam = {', '.join(f'{v:g}' for v in path.lams)}, each with "
                 + _fit_words(first, with_lam=False))
    if fit_method(first) == "nuts" and any(v != 1 for v in path.lams):
        intro.append(GENERALIZED_POSTERIOR_WORDS)
    return write_html(Path(out_dir) / "report.html", title or "Prediction-constrained mixture: lam path",
                      intro, [trade, clusters, estimands, basin_section, diag], fits=fits)
