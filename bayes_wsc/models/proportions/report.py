"""The report of a label-proportions fit (seed 001): which features mark which class, and how well the
fitted classifier reproduces the groups' proportions.

* `plot_classes`: the class-conditional picture with intervals: each class's mean per feature
  (gaussian, standardized units), P(class | bin) (categorical) or the softmax weights (logistic).
* `plot_group_fit`: each group's given proportion of a class against the one its items' predicted
  class probabilities give (seed 001's Gamma against Pi).
* `write_report`: one HTML page with those, the estimands, the criticism sections (rank plots after NUTS,
  posterior predictive checks, LOO, the checks; `report.criticism`) and the diagnostics.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bayes_wsc import inference
from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.errors import InputError
from bayes_wsc.posterior import stacked
from bayes_wsc.report.criticism import write_fit_report
from bayes_wsc.report.html import Section, estimands_section, fit_method, laplace_words, new_figure, variant_words

#: at most this many features (the largest class differences) in the class-conditional figure
MAX_FEATURES = 30


def _checked(est):
    if getattr(est, "model_name", None) != "proportions" or est._fitted() is None:
        raise InputError("the report needs a fitted ProportionsClassifier: call fit(data) first")
    return est


def _interval(draws: np.ndarray, ci: float):
    """Mean and HDI bounds of (S, ...) draws (NaN bounds for a single draw: a MAP has no interval)."""
    bounds = inference.hdi(draws, ci)
    return draws.mean(axis=0), bounds[..., 0], bounds[..., 1]


def plot_classes(est, *, ci: float = DEFAULT_CI):
    """The class-conditional picture, with `ci` HDIs after NUTS (points after a MAP). With two classes, the
    softmax weights and P(class | bin) of one class are the mirror of the other's: the second class is shown
    against the first (the reference) alone."""
    _checked(est)
    classes = list(est.classes_)
    post = est._fitted().posterior
    centre = None  # with one class shown: where its values say nothing (no weight, even odds)
    if "mean" in post and "sd" in post:
        const = est._fitted().constant_data
        draws = (stacked(est._fitted(), "mean") - const["center"].values) / const["scale"].values  # (S, L, D)
        labels = [str(f) for f in post["feature"].values]
        xlabel = "class mean, standardized units (feature mean 0, sd 1)"
    elif "W" in post:
        draws = stacked(est._fitted(), "W")
        labels = [str(f) for f in post[post["W"].dims[-1]].values]  # features, or a random Fourier basis
        unit = "random Fourier basis function" if post["W"].dims[-1] == "basis" else "standardized feature"
        xlabel = f"softmax weight per {unit} (zero-sum over classes)"
        if len(classes) == 2:  # W[1] = -W[0]: the log-odds of the second class against the first
            draws, centre = draws[:, 1:] - draws[:, :1], 0.0
            xlabel = f"log-odds weight of class {classes[1]} against class {classes[0]} per {unit} (W[1] - W[0])"
    elif "rho" in post:
        draws = np.transpose(stacked(est._fitted(), "rho"), (0, 2, 1))  # (S, L, K)
        labels = [str(b) for b in post["bin"].values]
        xlabel = "P(class | bin)"
        if len(classes) == 2:  # P(first | bin) = 1 - P(second | bin)
            draws, centre = draws[:, 1:], 0.5
            xlabel = f"P(class {classes[1]} | bin) (P(class {classes[0]} | bin) is 1 minus it)"
    else:
        raise InputError("this fit has none of the estimands the class-conditional figure shows "
                         "(mean and sd, W, or rho)")
    mean, low, high = _interval(draws, ci)
    shown_classes = classes if centre is None else classes[1:]
    spread = np.ptp(mean, axis=0) if centre is None else np.abs(mean[0] - centre)
    shown = np.argsort(-spread, kind="stable")[:MAX_FEATURES][::-1]
    fig, axes = new_figure(width=8.0, height=1.2 + 0.28 * len(shown))
    ax = axes[0, 0]
    offsets = np.linspace(-0.25, 0.25, len(shown_classes)) if len(shown_classes) > 1 else np.zeros(1)
    for c, name in enumerate(shown_classes):
        y = np.arange(len(shown)) + offsets[c]
        errors = np.vstack([mean[c, shown] - low[c, shown], high[c, shown] - mean[c, shown]])
        ax.errorbar(mean[c, shown], y, xerr=None if np.isnan(errors).all() else errors, fmt="o", markersize=4,
                    capsize=2, label=f"class {name}")
    ax.set_yticks(np.arange(len(shown)), [labels[j] for j in shown], fontsize=8)
    if centre is not None:
        ax.axvline(centre, color="gray", linewidth=1, linestyle=":")
    ax.set_xlabel(xlabel)
    ax.legend(fontsize=8)
    return fig


def plot_group_fit(est, table=None):
    """Given against predicted proportions, one point per group and class (with two classes, of the second
    class alone: the first's proportions are 1 minus them)."""
    _checked(est)
    table = est.group_fit() if table is None else table
    fig, axes = new_figure(width=5.5, height=5.0)
    ax = axes[0, 0]
    classes = list(est.classes_)
    for name in classes[1:] if len(classes) == 2 else classes:
        ax.scatter(table[f"given_{name}"], table[f"predicted_{name}"], s=8 + 40 * table["items"] / table["items"].max(),
                   alpha=0.6, label=f"class {name}")
    ax.plot([0, 1], [0, 1], color="gray", linewidth=1)
    ax.set_xlabel("given proportion in the group")
    ax.set_ylabel("mean predicted probability of its items")
    ax.legend(fontsize=8)
    return fig


def _fit_words(est) -> str:
    settings = inference.get_attrs(est._fitted())["settings"]
    method = fit_method(est)
    bag = est.bag_likelihood_
    shares = ("the proportions taken as known exactly" if settings.get("concentration") is None
              else f"noisy proportions, theta_i ~ Dirichlet({settings['concentration']:g} Pi_i + 1)")
    start = "the variant's own starts" if settings.get("model_file") else "the soft-label estimate"
    how = {"map": f"the posterior mode (MAP), started from {start}; a single point, no intervals",
           "laplace": laplace_words(est)}.get(
        method, f"NUTS, {settings.get('chains')} chains of {settings.get('draws')} draws after "
                f"{settings.get('tune')} tuning steps, started at the MAP")
    bag_words = {"independent": "each item's class drawn independently from its group's shares"
                                if settings["emission"] != "logistic" else
                                "the bag-mean likelihood: counts ~ Multinomial(n_i, mean of the items' softmax)",
                 "exact-counts": "the exact-counts likelihood: the group's class counts known exactly, every "
                                 "assignment of classes to items with those counts summed"}[bag]
    if settings["bag_likelihood"] == "auto":
        bag_words += (" (chosen by bag_likelihood='auto': the data hold whole counts)" if bag == "exact-counts" else
                      " (chosen by bag_likelihood='auto': the proportions are not whole counts, or are noisy)")
    variant = variant_words(est)
    if variant:  # the default model's emission and bag likelihood describe the default model only
        return f"{variant[0]} Fit: {how}."
    return f"Emission {settings['emission']}; {bag_words}; {shares}. Fit: {how}."


def write_report(est, out_dir, *, ci: float = DEFAULT_CI, title: str | None = None) -> Path:
    """Write `out_dir/report.html` for a fitted `ProportionsClassifier`."""
    _checked(est)
    data = est.data_from_fit()
    sizes = data.group_sizes
    intro = [
        "Learning from label proportions (Stolpe & Morik 2011), Bayesian: items come in groups, and for each "
        "group only the share of each class is known. Every item's class is a latent variable summed out of "
        "the likelihood; the fit learns what each class looks like and so classifies single items.",
        f"{data.n_items} items in {data.n_groups} groups of {sizes.min()} to {sizes.max()} items (median "
        f"{int(np.median(sizes))}); classes {', '.join(data.classes)} with overall shares "
        f"{', '.join(f'{v:.3f}' for v in data.eta)}; {data.n_features} feature column"
        f"{'s' if data.n_features != 1 else ''}.",
        _fit_words(est),
    ]
    table = est.group_fit()
    mse = float(table["squared_error"].mean())
    sections = [
        Section("What marks each class", paragraphs=[
            "Each class's parameters per feature (the features where the classes differ most first), with "
            f"{ci:.0%} highest-density intervals when the fit has draws."
            + (f" With two classes the weights (or bin probabilities) of class {data.classes[0]} are the mirror of "
               f"those of class {data.classes[1]}, so class {data.classes[1]} is shown against class "
               f"{data.classes[0]}, the reference." if len(data.classes) == 2 and "sd" not in est._fitted().posterior
               else "")], figures=[plot_classes(est, ci=ci)]),
        Section("Fit to the proportions", paragraphs=[
            "For every group, the given proportion of each class against the mean predicted probability of that "
            "class over the group's items, from their features alone"
            + (f" (class {data.classes[1]} alone: with two classes, class {data.classes[0]}'s are 1 minus those)"
               if len(data.classes) == 2 else "") + ". Points on the diagonal: the classifier "
            f"reproduces the supervision. Mean squared error over groups and classes (Err_MSE, eq. 4 with "
            f"probabilities): {mse:.4f}."], figures=[plot_group_fit(est, table)],
            tables=[(table.sort_values("squared_error", ascending=False).head(10).round(3),
                     "The ten groups fitted worst")]),
        estimands_section(est, ci, "eta[class] (overall shares, eq. 2) and the emission's parameters; a variant's "
                          "own parameters."),
    ]
    return write_fit_report(est, out_dir, title or "Label-proportions report", intro, sections)
