"""The HTML report of WSC fits: rho(k) beside the paper's baselines, pi, mu, tables, diagnostics.

The rho(k) figure is where the Bayesian fit earns its keep: posterior
credible intervals stand next to the grouped half-sampling error bars the
paper gives EM (seed 000, Sec. 4), drawn so that the two kinds of interval
cannot be mistaken for each other. Baselines are recomputed from the data
saved in the fit, so a report can be written from a fit file alone.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.colors import LogNorm, Normalize
from matplotlib.lines import Line2D

from bayes_wsc import inference
from bayes_wsc.models.wsc.baselines import em_fit, half_sample_se, moments_rho, naive_rho
from bayes_wsc.data.grouped import BehaviorBins, GroupedCounts
from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.errors import InputError
from bayes_wsc.posterior import check_ci, stacked
from bayes_wsc.report.criticism import criticism_sections
from bayes_wsc.report.html import (LAPLACE_SUMMARY, Section, diagnostics_section, fit_label, fit_method, laplace_words,
                                   new_figure, variant_words, write_html)

#: EM error bars are the estimate +- Z_SE standard errors: a normal 90% interval, to set beside a 90% HDI;
#: a report at another credible level gives EM the normal interval of that level (`z_se`)
Z_SE = 1.64


def z_se(ci: float) -> float:
    """Standard errors either side of a normal interval of mass `ci` (1.64 at 0.9, as in the paper's tables)."""
    from scipy.stats import norm

    return round(float(norm.ppf(0.5 + ci / 2)), 2)
#: groups that get an HDI bar in the HE-mu scatter (more would hide the points)
MAX_MU_BARS = 300
#: y-range used when some value (the method of moments) leaves [0, 1]
CLIPPED_YLIM = (-0.05, 1.05)

FIT_COLORS = ("#1f5fa8", "#2ca02c", "#17becf", "#9467bd", "#bcbd22")
EM_COLOR, NAIVE_COLOR, MOMENTS_COLOR, TRUTH_COLOR = "#d62728", "#7f7f7f", "#8c564b", "black"
RHO_LABEL = r"$\rho(k) = P(Z = 1 \mid X = k)$"


@dataclass
class FitRho:
    """rho(k) of one fit: posterior mean, and the HDI when there are draws (NUTS)."""

    label: str
    method: str
    mean: np.ndarray
    interval: np.ndarray | None
    color: str


@dataclass
class Baselines:
    """The paper's estimates on the same data, with EM's half-sampling standard errors."""

    naive: np.ndarray
    moments: np.ndarray
    em: np.ndarray
    em_se: np.ndarray
    em_pi: float
    em_converged: bool
    em_iterations: int
    wh: float
    reps: int
    z: float = Z_SE

    @property
    def em_interval(self) -> np.ndarray:
        return np.stack([self.em - self.z * self.em_se, self.em + self.z * self.em_se], axis=-1)

    @property
    def moments_outside(self) -> int:
        return int(np.sum((self.moments < 0) | (self.moments > 1)))


def write_report(
    fits,
    out_dir,
    *,
    truth_rho=None,
    truth_pi: float | None = None,
    title: str | None = None,
    ci: float = DEFAULT_CI,
    half_sampling_reps: int = 50,
    seed: int | None = 0,
) -> Path:
    """Write `out_dir/report.html` for one fitted `WSC` or a dict label -> fitted `WSC`.

    All fits must come from the same data; the data, and from them the
    baselines, are taken from the first fit. `truth_rho` (and `truth_pi`),
    when known as in a simulation, add the truth to the figures and a table
    of errors and interval coverage.
    """
    fits = _as_labelled(fits)
    check_ci(ci)
    if isinstance(half_sampling_reps, bool) or not isinstance(half_sampling_reps, numbers.Integral) \
            or half_sampling_reps < 2:
        raise InputError(f"half_sampling_reps must be an integer >= 2, got {half_sampling_reps!r}")
    data = _shared_data(fits)
    truth_rho = _checked_truth(truth_rho, data.n_bins)
    if truth_pi is not None and not 0 <= float(truth_pi) <= 1:
        raise InputError(f"truth_pi must be in [0, 1], got {truth_pi!r}")

    baselines = compute_baselines(data, float(next(iter(fits.values())).settings_used_["wh"]), half_sampling_reps, seed)
    baselines.z = z_se(ci)
    rhos = [_fit_rho(label, est, ci, FIT_COLORS[i % len(FIT_COLORS)]) for i, (label, est) in enumerate(fits.items())]

    sections = [
        _rho_section(rhos, baselines, data.bins, truth_rho, ci),
        _pi_section(fits, rhos, baselines, truth_pi, ci),
        _mu_section(fits, rhos, data, ci, seed),
        _summary_section(fits, ci),
    ]
    if truth_rho is not None:
        sections.append(_truth_section(rhos, baselines, truth_rho, ci))
    sections += criticism_sections(fits, seed=0 if seed is None else seed)
    sections.append(_diagnostics_section(fits, baselines))
    return write_html(Path(out_dir) / "report.html", title or "Weakly supervised clustering report",
                      _intro(fits, data), sections, fits=fits)


# ---------------------------------------------------------------------- inputs
def _as_labelled(fits) -> dict:
    if not isinstance(fits, Mapping):
        _settings_or_fail(fits, "the fit")
        fits = {fit_label(fits): fits}
    if not fits:
        raise InputError("fits is empty: give a fitted WSC or a dict label -> fitted WSC")
    for label, est in fits.items():
        _settings_or_fail(est, f"fit {label!r}")
    return {str(label): est for label, est in fits.items()}


def _settings_or_fail(est, what: str) -> dict:
    if getattr(est, "_fitted", lambda: None)() is None or not hasattr(est, "data_from_fit"):
        raise InputError(f"{what} is not a fitted WSC: call fit(data) first")
    if "rho" not in est._fitted().posterior:
        raise InputError(f"{what} has no rho in its posterior: it is not a WSC fit")
    return {**_settings(est), "method": fit_method(est)}


def _settings(est) -> dict:
    return dict(inference.get_attrs(est._fitted()).get("settings", {}))


def _shared_data(fits: dict) -> GroupedCounts:
    """The data of the first fit, after checking that every fit saw the same table."""
    labels = list(fits)
    data = fits[labels[0]].data_from_fit()
    for label in labels[1:]:
        other = fits[label].data_from_fit()
        same = (other.counts.shape == data.counts.shape and np.array_equal(other.counts, data.counts)
                and np.array_equal(other.he, data.he) and other.bins == data.bins)
        if not same:
            raise InputError(f"fits {labels[0]!r} and {label!r} were made on different data; "
                             "a report compares fits of the same data")
    return data


def _checked_truth(truth_rho, n_bins: int) -> np.ndarray | None:
    if truth_rho is None:
        return None
    truth = np.asarray(truth_rho, dtype=float).ravel()
    if truth.size != n_bins:
        raise InputError(f"truth_rho has {truth.size} values but the fits have {n_bins} bins")
    if not (np.isfinite(truth).all() and (truth >= 0).all() and (truth <= 1).all()):
        raise InputError("truth_rho must hold probabilities in [0, 1]")
    return truth


# ---------------------------------------------------------------------- numbers
def compute_baselines(data: GroupedCounts, wh: float, reps: int, seed: int | None) -> Baselines:
    """Naive (eq. 3.1), moments (eq. 3.3, unclipped) and EM (Sec. 4) with half-sampling SEs."""
    em = em_fit(data, wh)
    _, se = half_sample_se(data, lambda d: em_fit(d, wh).rho, n_reps=reps, seed=seed)
    return Baselines(naive_rho(data), moments_rho(data), em.rho, se, em.pi, em.converged, em.iterations, wh, reps)


def _fit_rho(label: str, est, ci: float, color: str) -> FitRho:
    draws = stacked(est._fitted(), "rho")
    interval = inference.hdi(draws, ci) if draws.shape[0] > 1 else None
    return FitRho(label, fit_method(est), draws.mean(axis=0), interval, color)


def rmse(estimate: np.ndarray, truth: np.ndarray) -> float:
    return float(np.sqrt(np.mean((np.asarray(estimate) - truth) ** 2)))


def coverage(interval: np.ndarray, truth: np.ndarray) -> float:
    """Share of bins whose interval contains the true value."""
    return float(np.mean((interval[:, 0] <= truth) & (truth <= interval[:, 1])))


# ---------------------------------------------------------------------- intro
def _intro(fits: dict, data: GroupedCounts) -> list[str]:
    bins = data.bins
    if len(bins.columns) == 1:
        bin_words = f"{data.n_bins} behavior bins (the levels of column {bins.columns[0]!r})"
    else:
        crossing = " \u00d7 ".join(f"{c!r} ({len(lv)} levels)" for c, lv in zip(bins.columns, bins.levels))
        bin_words = f"{data.n_bins} behavior bins, the crossing of {crossing}"
    data_words = (f"The data have {data.n_groups} groups with {int(data.n_items.sum())} items in {bin_words}.")
    cap = data.settings.get("max_group_weight")
    if cap:
        data_words += (f" Large groups were down-weighted to at most {cap:g} items each "
                       f"({data.counts.sum():.0f} weighted items in all; seed 000, Sec. 6.2).")
    paragraphs = [
        f"This report shows {len(fits)} fit{'s' if len(fits) > 1 else ''} of the weakly supervised clustering "
        "model of Wager, Blocker & Cardin (2015)"
        + (" or of a variant of it, described below" if any(_settings(e).get("model_file") for e in fits.values())
           else "") + ". Each item belongs to a group; each group has a noisy human "
        "evaluation HE of its share of class-1 items (on the logit scale); the model learns rho(k) = "
        "P(Z = 1 | X = k), the probability that an item with behavior k is in class 1, and the group "
        "qualities mu.",
        data_words,
    ]
    for label, est in fits.items():
        paragraphs.append(f"{label}: {_fit_words(est)}" if len(fits) > 1 else _fit_words(est))
    paragraphs.append("The baselines of the paper (naive, method of moments, EM) are recomputed on the same "
                      "data for comparison.")
    return paragraphs


def _fit_words(est) -> str:
    settings, attrs = _settings(est), inference.get_attrs(est._fitted())
    if attrs["method"] == "map":
        method = ("the posterior mode (MAP), found by L-BFGS from the variant's own starts (PyMC's initial point "
                  "if it defines none)" if settings.get("model_file") else
                  "the posterior mode (MAP), found by L-BFGS started from the paper's naive solution")
    elif attrs["method"] == "laplace":
        method = laplace_words(est)
    else:
        method = (f"NUTS with {settings.get('chains')} chains of {settings.get('draws')} draws after "
                  f"{settings.get('tune')} tuning steps ({settings.get('backend') or 'default'} backend)")
    method = method[0].upper() + method[1:]
    variant = variant_words(est)
    if variant:  # the default model's prose (WH, the prior on mu, the Dirichlet) describes the default model only
        return f"{method}. {variant[0]}"
    wh = float(est.settings_used_["wh"])  # what the model was built with (a WH above the limit as inf)
    if math.isinf(wh):
        wh_words = "WH = inf: mu is fixed at HE, as if the groups' shares were known"
    elif wh == 0:
        wh_words = "WH = 0: HE is not used, the classes are learned from the items alone"
    else:
        wh_words = (f"WH = {wh:g}: HE is mu plus normal noise with standard deviation 1/sqrt(WH) = "
                    f"{1 / math.sqrt(wh):.2f} on the logit scale")
    if math.isinf(wh):
        prior_words = ""
    elif settings.get("mu_prior") == "flat":
        prior_words = "; a flat prior on mu (the paper's choice)"
    else:
        prior_words = "; mu drawn from a normal distribution whose location and scale are learned (hierarchical)"
    text = (f"{method}; {wh_words}{prior_words}; a Dirichlet prior with concentration "
            f"c = {float(settings['w_concentration']):g} on each class's behavior distribution w0, w1.")
    return text


# ---------------------------------------------------------------------- rho(k)
def plot_rho(fits, *, truth_rho=None, ci: float = DEFAULT_CI, half_sampling_reps: int = 50, seed: int | None = 0):
    """The report's rho(k) figure on its own: fits with credible intervals beside the baselines.

    `fits` is one fitted `WSC` or a dict label -> fitted `WSC` on the same data.
    Returns a matplotlib Figure (not registered with pyplot).
    """
    check_ci(ci)
    fits = _as_labelled(fits)
    data = _shared_data(fits)
    base = compute_baselines(data, float(next(iter(fits.values())).settings_used_["wh"]), half_sampling_reps, seed)
    base.z = z_se(ci)
    rhos = [_fit_rho(label, est, ci, FIT_COLORS[i % len(FIT_COLORS)]) for i, (label, est) in enumerate(fits.items())]
    return _rho_figure(rhos, base, data.bins, _checked_truth(truth_rho, data.n_bins), ci)


def _rho_figure(rhos: list[FitRho], base: Baselines, bins: BehaviorBins, truth, ci: float):
    clipped = base.moments_outside > 0
    if len(bins.columns) == 1:
        return _rho_by_bin(rhos, base, bins, truth, ci, clipped)
    chosen = next((r for r in rhos if r.method == "nuts"), rhos[0])
    return _rho_crossed(chosen, base, bins, truth, ci, clipped)


def _rho_section(rhos: list[FitRho], base: Baselines, bins: BehaviorBins, truth, ci: float) -> Section:
    clipped = base.moments_outside > 0
    fig = _rho_figure(rhos, base, bins, truth, ci)
    em_words = (f"EM (Sec. 4, WH = {base.wh:g}) error bars are the estimate \u00b1 {base.z:g} standard errors from "
                f"grouped half-sampling ({base.reps} refits, each on half of the groups drawn without "
                "replacement, as in the paper)")
    caption = em_words + "."
    if any(r.interval is not None for r in rhos):
        caption = (f"Wide translucent bars are {ci:.0%} highest-density intervals of the posterior (credible "
                   f"intervals); thin capped bars: {em_words}. The credible interval says where rho(k) lies given "
                   "the data and the model; the half-sampling bar says how much the EM estimate moves when the "
                   "groups are resampled.")
    caption += " The naive estimate is eq. 3.1; the method of moments is eq. 3.3, shown unclipped."
    if clipped:
        caption += (f" {base.moments_outside} of {len(base.moments)} method-of-moments values fall outside "
                    f"[0, 1] (range {base.moments.min():.2f} to {base.moments.max():.2f}); the y-axis is clipped "
                    "to [-0.05, 1.05] and they are marked by open triangles at its edge.")
    if truth is not None:
        caption += " The true rho(k) is the thick black line."
    paragraphs = [
        "rho(k) is the probability that an item with behavior k is in class 1. The Bayesian fits give a whole "
        "posterior for it, so every bin comes with a credible interval from the same fit; the paper's EM gives a "
        "point estimate, and its error bars need refitting on many half-samples of the groups.",
    ]
    if any(r.method == "map" for r in rhos):
        paragraphs.append("MAP fits are points only: the posterior mode has no interval.")
    if len(bins.columns) > 1:
        paragraphs.append(_crossed_words(rhos, bins))
    return Section("rho(k): class-1 probability by behavior", paragraphs=paragraphs, figures=[(fig, caption)])


def _rho_by_bin(rhos, base: Baselines, bins: BehaviorBins, truth, ci: float, clipped: bool):
    n_bins = bins.n_bins
    fig, axes = new_figure(width=min(max(7.0, 0.5 * n_bins + 3.0), 14.0), height=5.2)
    ax = axes[0, 0]
    x = np.arange(n_bins)
    offsets = _dodge(len(rhos) + 3)
    if truth is not None:
        ax.plot(x, truth, color=TRUTH_COLOR, lw=3.5, alpha=0.55, zorder=1, label="truth")
    for rho, dx in zip(rhos, offsets):
        _draw_fit(ax, x + dx, rho.mean, rho.interval, rho.color, rho.label, ci)
    dx_em, dx_naive, dx_mom = offsets[len(rhos):]
    ax.errorbar(x + dx_em, base.em, yerr=base.z * base.em_se, fmt="s-", color=EM_COLOR, ms=5, lw=1, capsize=4,
                elinewidth=1.1, capthick=1.1, zorder=4,
                label=f"EM \u00b1 {base.z:g} SE (grouped half-sampling, {base.reps} reps)")
    ax.plot(x + dx_naive, base.naive, "v--", color=NAIVE_COLOR, ms=5, lw=1, label="naive (eq. 3.1)")
    ax.plot(x + dx_mom, base.moments, "x:", color=MOMENTS_COLOR, ms=6, lw=1,
            label="method of moments (eq. 3.3, unclipped)")
    if clipped:
        ax.set_ylim(*CLIPPED_YLIM)
        _mark_outside(ax, x + dx_mom, base.moments, MOMENTS_COLOR)
    ax.set_xticks(x, bins.labels)
    if n_bins > 8 or max(len(label) for label in bins.labels) > 6:
        ax.tick_params(axis="x", labelrotation=45)
        for tick in ax.get_xticklabels():
            tick.set_horizontalalignment("right")
    ax.set_xlabel(bins.columns[0])
    ax.set_ylabel(RHO_LABEL)
    ax.grid(axis="y", alpha=0.3)
    fig.legend(loc="outside lower center", ncols=2, fontsize=8, frameon=False)
    return fig


def _draw_fit(ax, x, mean, interval, color, label, ci, *, legend=True):
    """A Bayesian fit: mean points with wide translucent credible bars (NUTS) or diamonds only (MAP)."""
    style = "-"
    if interval is not None:
        # above the baselines' markers (EM's at zorder 4): the fit's intervals are the main result
        ax.vlines(x, interval[:, 0], interval[:, 1], color=color, lw=7, alpha=0.3, zorder=5,
                  label=f"{label}: {ci:.0%} HDI (credible interval)" if legend else None)
        ax.plot(x, mean, "o" + style, color=color, ms=5, lw=1.2, zorder=6,
                label=f"{label}: posterior mean" if legend else None)
    else:
        ax.plot(x, mean, "D" + style, color=color, mfc="white", mew=1.5, ms=6, lw=1.2, zorder=6,
                label=f"{label}: posterior mode (no interval)" if legend else None)


def _mark_outside(ax, x, values, color):
    """Open triangles at the clipped edge for values beyond it, pointing the way they went."""
    low, high = ax.get_ylim()
    for beyond, edge, marker in ((values > high, high - 0.012, "^"), (values < low, low + 0.012, "v")):
        if beyond.any():  # an empty unclipped line would still claim layout space at the origin
            ax.plot(x[beyond], np.full(beyond.sum(), edge), marker, mfc="none", color=color, ms=7, clip_on=False)


def _dodge(n: int, width: float = 0.36) -> np.ndarray:
    """Small horizontal offsets so that n series at the same bin do not hide each other."""
    return np.linspace(-width / 2, width / 2, n) if n > 1 else np.zeros(1)


@dataclass
class CrossedLayout:
    """Fig. 6 of the paper: one behavior column on the x-axis, one line per level combination of the others."""

    x_column: str
    x_levels: tuple[str, ...]
    lines: list[tuple[str, np.ndarray]]  # (label, bin index for each x level)


def crossed_layout(bins: BehaviorBins) -> CrossedLayout:
    """The column with the most levels goes on the x-axis (the first of ties)."""
    shape = bins.shape
    x_dim = int(np.argmax(shape))
    others = [j for j in range(len(shape)) if j != x_dim]
    lines = []
    for combo in itertools.product(*(range(shape[j]) for j in others)):
        index = [0] * len(shape)
        for j, level in zip(others, combo):
            index[j] = level
        bins_of_line = []
        for level in range(shape[x_dim]):
            index[x_dim] = level
            bins_of_line.append(np.ravel_multi_index(tuple(index), shape))
        label = ", ".join(f"{bins.columns[j]}={bins.levels[j][level]}" for j, level in zip(others, combo))
        lines.append((label, np.asarray(bins_of_line)))
    return CrossedLayout(bins.columns[x_dim], bins.levels[x_dim], lines)


def _rho_crossed(chosen: FitRho, base: Baselines, bins: BehaviorBins, truth, ci: float, clipped: bool):
    layout = crossed_layout(bins)
    n_x = len(layout.x_levels)
    fig, axes = new_figure(2, 2, width=min(max(9.0, 1.1 * n_x + 6.0), 15.0), height=8.0, sharey=True)
    colors = _line_colors(len(layout.lines))
    x = np.arange(n_x)
    offsets = _dodge(len(layout.lines), width=min(0.3, 0.1 * len(layout.lines)))
    hdi_words = (f"posterior mean and {ci:.0%} HDI (credible interval)" if chosen.interval is not None
                 else "posterior mode, no interval")
    panels = [
        (axes[0, 0], f"{chosen.label}: {hdi_words}"),
        (axes[0, 1], f"EM: estimate \u00b1 {base.z:g} SE (grouped half-sampling)"),
        (axes[1, 0], "naive (eq. 3.1)"),
        (axes[1, 1], "method of moments (eq. 3.3, unclipped)"),
    ]
    for (label, index), color, dx in zip(layout.lines, colors, offsets):
        xs = x + dx
        bayes_ax, em_ax, naive_ax, mom_ax = (p[0] for p in panels)
        interval = None if chosen.interval is None else chosen.interval[index]
        _draw_fit(bayes_ax, xs, chosen.mean[index], interval, color, chosen.label, ci, legend=False)
        em_ax.errorbar(xs, base.em[index], yerr=base.z * base.em_se[index], fmt="s-", color=color, ms=4, lw=1,
                       capsize=4, elinewidth=1.1, capthick=1.1)
        naive_ax.plot(xs, base.naive[index], "v-", color=color, ms=4, lw=1)
        mom_ax.plot(xs, base.moments[index], "x-", color=color, ms=6, lw=1)
        if truth is not None:
            for ax, _ in panels:
                ax.plot(x, truth[index], "--", color=color, lw=1.2, alpha=0.8, zorder=1)
    for ax, heading in panels:
        ax.set_title(heading, fontsize=9.5)
        ax.set_xticks(x, layout.x_levels)
        ax.set_xlabel(layout.x_column)
        ax.grid(axis="y", alpha=0.3)
    for ax in (axes[0, 0], axes[1, 0]):
        ax.set_ylabel(RHO_LABEL)
    if clipped:
        axes[0, 0].set_ylim(*CLIPPED_YLIM)
        for (label, index), color, dx in zip(layout.lines, colors, offsets):
            _mark_outside(axes[1, 1], x + dx, base.moments[index], color)
    handles = [Line2D([], [], color=c, marker="o", lw=1.5, label=label) for (label, _), c in zip(layout.lines, colors)]
    if chosen.interval is not None:
        handles.append(Line2D([], [], color="grey", lw=7, alpha=0.3, label=f"{ci:.0%} HDI (credible interval)"))
    handles.append(Line2D([], [], color="grey", marker="|", ms=10, lw=1,
                          label=f"EM \u00b1 {base.z:g} SE (half-sampling)"))
    if truth is not None:
        handles.append(Line2D([], [], color="grey", ls="--", lw=1.2, label="truth"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(4, len(handles)), fontsize=8, frameon=False)
    return fig


def _line_colors(n: int) -> list:
    cmap = colormaps["tab10" if n <= 10 else "tab20" if n <= 20 else "viridis"]
    if n > 20:
        return [cmap(v) for v in np.linspace(0, 1, n)]
    return [cmap(i) for i in range(n)]


def _crossed_words(rhos: list[FitRho], bins: BehaviorBins) -> str:
    layout = crossed_layout(bins)
    chosen = next((r for r in rhos if r.method == "nuts"), rhos[0])
    others = [c for c in bins.columns if c != layout.x_column]
    text = (f"The bins cross {len(bins.columns)} behavior columns, so rho(k) is drawn as in Fig. 6 of the paper: "
            f"{layout.x_column!r} (the column with the most levels) on the x-axis and one line per combination "
            f"of {', '.join(repr(c) for c in others)}, with one panel per estimator. The Bayesian panel shows "
            f"fit {chosen.label!r}")
    if len(rhos) > 1:
        text += "; the estimates of every fit are in the table of estimands below"
    return text + "."


# ---------------------------------------------------------------------- pi
PI_WORDS = ("pi is the share of class-1 items in the data: the item-weighted mean of sigmoid(mu) over groups. It "
            "enters rho(k) through Bayes' rule, rho(k) = pi w1(k) / (pi w1(k) + (1 - pi) w0(k)).")


def _pi_section(fits: dict, rhos: list[FitRho], base: Baselines, truth_pi, ci: float) -> Section:
    draws = {rho.label: stacked(fits[rho.label]._fitted(), "pi").ravel() for rho in rhos}
    if all(pi.size == 1 for pi in draws.values()):  # points only (MAP): their values in words, no empty axes
        lines = [f"{label}: posterior mode {pi[0]:.3f} (no interval)." for label, pi in draws.items()]
        lines.append(f"EM: {base.em_pi:.3f}.")
        if truth_pi is not None:
            lines.append(f"Truth: {float(truth_pi):.3f}.")
        return Section("pi: the overall share of class 1", paragraphs=[PI_WORDS, " ".join(lines)])
    fig, axes = new_figure(width=7.0, height=3.8)
    ax = axes[0, 0]
    lines, values = [], []
    for rho in rhos:
        pi = draws[rho.label]
        values.append(pi)
        if pi.size > 1:
            low, high = inference.hdi(pi, ci)
            ax.hist(pi, bins=int(np.clip(pi.size // 10, 10, 40)), density=True, color=rho.color, alpha=0.45,
                    label=f"{rho.label}: posterior draws")
            lines.append(f"{rho.label}: posterior mean {pi.mean():.3f}, {ci:.0%} HDI [{low:.3f}, {high:.3f}].")
        else:
            ax.axvline(pi[0], color=rho.color, lw=2, label=f"{rho.label}: posterior mode")
            lines.append(f"{rho.label}: posterior mode {pi[0]:.3f} (no interval).")
    ax.axvline(base.em_pi, color=EM_COLOR, lw=1.5, ls=":", label="EM (Sec. 4)")
    lines.append(f"EM: {base.em_pi:.3f}.")
    values.append(np.array([base.em_pi]))
    if truth_pi is not None:
        ax.axvline(float(truth_pi), color=TRUTH_COLOR, lw=2, ls="--", label="truth")
        lines.append(f"Truth: {float(truth_pi):.3f}.")
        values.append(np.array([float(truth_pi)]))
    if all(v.size == 1 for v in values[: len(rhos)]):
        every = np.concatenate(values)
        ax.set_xlim(every.min() - 0.05, every.max() + 0.05)
        ax.set_yticks([])
    else:
        ax.set_ylabel("posterior density")
    ax.set_xlabel(r"$\pi$ = item-weighted mean of sigmoid($\mu_i$)")
    ax.legend(fontsize=8, frameon=False)
    return Section("pi: the overall share of class 1", paragraphs=[PI_WORDS, " ".join(lines)], figures=[fig])


# ---------------------------------------------------------------------- HE against mu
def _mu_section(fits: dict, rhos: list[FitRho], data: GroupedCounts, ci: float, seed) -> Section:
    n = len(fits)
    ncols = min(n, 3)
    nrows = math.ceil(n / ncols)
    fig, axes = new_figure(nrows, ncols, width=4.6 * ncols + 1.2, height=4.3 * nrows)
    totals = data.group_totals
    varied = totals.max() > totals.min()
    norm = (LogNorm(max(totals.min(), 1e-9), totals.max()) if varied and totals.min() > 0
            and totals.max() / totals.min() > 20 else Normalize(totals.min(), totals.max()))
    size = 14 if data.n_groups <= 500 else 5
    rng = np.random.default_rng(seed)
    maps = [fit_method(est) == "map" for est in fits.values()]
    estimate = ("posterior mode (MAP)" if all(maps) else "posterior mean (the mode, for a MAP fit)" if any(maps)
                else "posterior mean")
    paragraphs = [
        f"Each point is a group: its human evaluation HE against the {estimate} of its quality mu (both on "
        "the logit scale). On the dashed line mu equals HE; points move off it when a group's items pull its "
        "estimated quality away from the human evaluation, more so for groups with many items and small WH.",
    ]
    scatter = None
    color_of = {rho.label: rho.color for rho in rhos}
    for ax, (label, est) in zip(axes.ravel(), fits.items()):
        if "mu" not in est._fitted().posterior:  # a variant model may name its group quality otherwise
            ax.set_visible(False)
            paragraphs.append(f"{label} has no variable mu, so it is not shown here.")
            continue
        he = est._fitted().observed_data["he"].values
        mu_draws = stacked(est._fitted(), "mu")
        mu_mean = mu_draws.mean(axis=0)
        every = np.concatenate([he, mu_mean])
        if mu_draws.shape[0] > 1:
            shown = np.sort(rng.choice(he.size, min(he.size, MAX_MU_BARS), replace=False))
            bounds = inference.hdi(mu_draws[:, shown], ci)
            ax.vlines(he[shown], bounds[:, 0], bounds[:, 1], color="grey", lw=0.8, alpha=0.45, zorder=1,
                      label=f"{ci:.0%} HDI" + (f" ({shown.size} of {he.size} groups)" if shown.size < he.size else ""))
            every = np.concatenate([every, bounds.ravel()])
        colors = {"c": totals, "norm": norm, "cmap": "viridis"} if varied else {"color": color_of[label]}
        scatter = ax.scatter(he, mu_mean, s=size, alpha=0.75, zorder=2, linewidths=0, **colors)
        lims = (every.min() - 0.2, every.max() + 0.2)
        ax.plot(lims, lims, "k--", lw=1, zorder=0, label="mu = HE")
        ax.set_xlim(lims)
        ax.set_ylim(lims)
        ax.set_xlabel("HE (observed, logit scale)")
        ax.set_ylabel("posterior mean of mu" if mu_draws.shape[0] > 1 else "posterior mode of mu (MAP)")
        ax.set_title(label, fontsize=10)
        ax.legend(fontsize=8, frameon=False, loc="upper left")
        if math.isinf(float(est.settings_used_["wh"])):
            paragraphs.append(f"{label} has WH = inf: mu is fixed at HE, so its points lie on the line.")
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    if varied and scatter is not None:
        fig.colorbar(scatter, ax=axes.ravel()[:n].tolist(), label="items per group (weighted)", shrink=0.85)
    return Section("Human evaluation against posterior group quality", paragraphs=paragraphs, figures=[fig])


# ---------------------------------------------------------------------- tables
def _summary_section(fits: dict, ci: float) -> Section:
    tables, notes = [], []
    for label, est in fits.items():
        notes += [f"{label}: {note}" for note in est.summary_notes()]
        table = est.summary(hdi_prob=ci).round(3)
        for column in table.columns:
            if column.startswith("ess"):
                table[column] = table[column].round(0)
        if fit_method(est) == "map":
            point = "map" if "map" in table.columns else "mean"
            table = table[[point]].rename(columns={point: "MAP estimate"})
            caption = f"{label}: the posterior mode, a single point (no standard deviation or interval)."
        elif fit_method(est) == "laplace":
            caption = f"{label}: {LAPLACE_SUMMARY}."
        else:
            caption = (f"{label}: posterior mean, standard deviation, {ci:.0%} HDI, Monte Carlo standard errors, "
                       "effective sample sizes and R-hat.")
        tables.append((table, caption))
    return Section(
        "Estimands",
        paragraphs=["rho(k) per bin, pi, the behavior distributions w0 (class 0) and w1 (class 1), the "
                    "hyperparameters of the prior on mu, and a variant's own parameters.", *notes],
        tables=tables,
    )


def _truth_section(rhos: list[FitRho], base: Baselines, truth: np.ndarray, ci: float) -> Section:
    rows = []
    for rho in rhos:
        has_interval = rho.interval is not None
        rows.append((rho.label, rmse(rho.mean, truth), f"{ci:.0%} HDI" if has_interval else "none",
                     coverage(rho.interval, truth) if has_interval else None))
    rows += [
        ("naive (eq. 3.1)", rmse(base.naive, truth), "none", None),
        ("method of moments (eq. 3.3)", rmse(base.moments, truth), "none", None),
        (f"EM (Sec. 4, WH = {base.wh:g})", rmse(base.em, truth), f"\u00b1 {base.z:g} SE half-sampling",
         coverage(base.em_interval, truth)),
    ]
    table = pd.DataFrame(
        [(name, round(error, 4), interval, "\u2013" if share is None else f"{share:.0%}")
         for name, error, interval, share in rows],
        columns=["estimator", "RMSE of rho against truth", "interval", "coverage of truth"],
    )
    return Section(
        "Against the truth",
        paragraphs=[
            "RMSE is the root mean squared error of rho(k) over the bins. Coverage is the share of bins whose "
            f"interval contains the true rho(k): the credible intervals are {ci:.0%} HDIs, and EM \u00b1 "
            f"{base.z:g} SE is a {ci:.0%} interval if the EM estimate is close to normal. With {truth.size} bins, "
            f"coverage moves in steps of {1 / truth.size:.2f}, so it is a rough check, not a calibration study.",
        ],
        tables=[(table, "Error and interval coverage of each estimator against the true rho(k) (RMSE table).")],
    )


# ---------------------------------------------------------------------- diagnostics
def _diagnostics_section(fits: dict, base: Baselines) -> Section:
    section = diagnostics_section(fits)
    if not base.em_converged:
        message = (f"EM (baseline) stopped after {base.em_iterations} iterations without converging; "
                   "its curve may be inaccurate.")
        section.warnings.append(message)
        section.problems.append(message)
    return section
