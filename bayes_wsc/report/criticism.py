"""Report sections that criticize any model's fits: rank plots, the posterior predictive check, LOO with
its Pareto k values, and the checks table with the flagged checks in plain words.

Every model's report adds `criticism_sections({label: fitted estimator})` before its diagnostics.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from bayes_wsc import criticism
from bayes_wsc import inference
from bayes_wsc import status
from bayes_wsc.errors import InputError
from bayes_wsc.report.html import Section, diagnostics_section, fit_label, fit_method, new_figure, write_html

#: rank-plot panels per fit (each costs a quarter of a second to draw): scalars, then the largest R-hat
MAX_RANK_PANELS = 4


def criticism_sections(fits: dict, *, draws: int = criticism.PPC_DRAWS, seed: int = 0) -> list[Section]:
    """Sections for labelled fits of the same data: convergence (rank plots, NUTS only), posterior predictive
    checks, LOO, and the checks."""
    nuts = {label: est for label, est in fits.items() if fit_method(est) == "nuts"}
    sections = []
    if nuts:
        sections.append(rank_section(nuts))
    sections += [ppc_section(fits, draws=draws, seed=seed), loo_section(fits), checks_section(fits, seed=seed)]
    return sections


def write_fit_report(est, out_dir, title: str, intro: list[str], sections: list[Section], diagnostics=None) -> Path:
    """`out_dir/report.html` of one fit: the model's own `sections`, then the criticism sections and the
    diagnostics (`diagnostics_section`, or `diagnostics(fits)`, the model's own), under the fit's status line."""
    fits = {fit_label(est): est}
    sections = [*sections, *criticism_sections(fits), (diagnostics or diagnostics_section)(fits)]
    return write_html(Path(out_dir) / "report.html", title, intro, sections, fits=fits)


# ---------------------------------------------------------------------- rank plots
def rank_section(fits: dict) -> Section:
    figures = []
    for label, est in fits.items():
        figure, shown = plot_ranks(est)
        figures.append((figure, f"{label}: rank plots of {len(shown)} reported estimands, the scalars first, then "
                                "the elements with the largest R-hat ({}).".format(", ".join(shown))))
    several = len(fits) > 1
    warnings = [f"{label}: {p.sentence}" if several else p.sentence for label, est in fits.items()
                for p in status.fit_problems(est) if p.section == status.CONVERGENCE]
    return Section("Convergence: rank plots", paragraphs=[
        "Each panel ranks all draws of one estimand together and shows, per chain, how its draws' ranks spread "
        "over the bins. Chains that explored the same posterior give flat histograms around the dashed line; a "
        "chain stuck apart from the others has its ranks piled at one end."], figures=figures, warnings=warnings,
        anchor=status.CONVERGENCE)


def plot_ranks(est, max_panels: int = MAX_RANK_PANELS):
    """Rank plots of the scalar estimands, then of the elements of the others with the largest R-hat
    (a Figure, and the panel labels)."""
    idata = est._fitted()
    scalars, elements = [], []
    for name in est.diagnosed_names():
        rhat = inference.rhat_elements(idata, name)
        if rhat.ndim == 0:
            if np.isfinite(float(rhat)):  # a constant (held) variable has no ranks to show
                scalars.append((float(rhat), name, {}))
            continue
        values = np.nan_to_num(rhat.values, nan=-np.inf)
        for index in np.argsort(-values.ravel(), kind="stable")[:max_panels]:
            position = np.unravel_index(index, values.shape)
            selection = {dim: rhat[dim].values[i] for dim, i in zip(rhat.dims, position)}
            elements.append((float(values[position]), name, selection))
    elements = (scalars + sorted(elements, key=lambda e: -e[0]))[:max_panels]
    ncols = min(4, max(1, len(elements)))
    nrows = math.ceil(len(elements) / ncols) if elements else 1
    fig, axes = new_figure(nrows, ncols, width=3.2 * ncols + 0.5, height=2.6 * nrows)
    labels = []
    for ax, (_, name, selection) in zip(axes.ravel(), elements):
        inference.plot_rank(idata, name, selection, ax)
        label = name + ("[" + ", ".join(str(v) for v in selection.values()) + "]" if selection else "")
        ax.set_title(label, fontsize=9)
        ax.xaxis.label.set_size(8)
        ax.yaxis.label.set_size(8)
        ax.tick_params(labelsize=7)
        labels.append(label)
    for ax in axes.ravel()[len(elements):]:
        ax.set_visible(False)
    return fig, labels


# ---------------------------------------------------------------------- posterior predictive check
#: a statistic with at most this many elements (bins, experts, classes) is drawn element by element
MAX_INTERVAL_ELEMENTS = 40
#: replicates drawn as curves in a panel of `az.plot_ppc`
PPC_CURVES = 20


def plot_ppc(ppc, *, seed: int = 0):
    """One panel per statistic of a posterior predictive InferenceData: for a statistic with few elements
    (bins, experts, features) the replicates' 90% interval and median per element with the observed
    value; for one with many (groups, items) `az.plot_ppc`, the distribution over its elements."""
    ppc = second_of_two_classes(ppc)
    names = list(ppc.posterior_predictive.data_vars)
    ncols = min(3, len(names))
    nrows = math.ceil(len(names) / ncols)
    fig, axes = new_figure(nrows, ncols, width=4.6 * ncols, height=3.6 * nrows)
    many = [n for n in names if ppc.observed_data[n].size > MAX_INTERVAL_ELEMENTS]
    panels = dict(zip(names, axes.ravel()))
    for name in names:
        if name not in many:
            _ppc_intervals(ppc, name, panels[name])
    inference.plot_ppc(ppc, [panels[n] for n in many], var_names=many, num_pp_samples=PPC_CURVES, seed=seed)
    for name in many:
        ax = panels[name]
        legend = ax.get_legend()
        for text in legend.get_texts() if legend is not None else []:
            text.set_fontsize(7)
        ax.xaxis.label.set_size(10)
        ax.tick_params(labelsize=8)
    for ax in axes.ravel()[len(names):]:
        ax.set_visible(False)
    return fig


def second_of_two_classes(ppc):
    """Shares over exactly two classes are complementary (one is 1 minus the other), and a distribution pooling
    both is symmetric and says nothing: such a statistic keeps its second class alone (`name[class]`)."""
    observed, replicated = ppc.observed_data, ppc.posterior_predictive
    keep = {}
    for name in replicated.data_vars:
        obs = observed[name]
        if "class" in obs.dims and obs.sizes["class"] == 2 and np.allclose(obs.sum("class"), 1.0):
            second = obs["class"].values[1]
            keep[name] = f"{name}[{second}]"
    if not keep:
        return ppc
    pick = {"class": 1}
    obs = xr.Dataset({keep.get(n, n): (observed[n].isel(pick, drop=True) if n in keep else observed[n])
                      for n in observed.data_vars})
    rep = xr.Dataset({keep.get(n, n): (replicated[n].isel(pick, drop=True) if n in keep else replicated[n])
                      for n in replicated.data_vars})
    obs.attrs, rep.attrs = observed.attrs, replicated.attrs
    return inference.Groups(posterior_predictive=rep, observed_data=obs)


def _ppc_intervals(ppc, name: str, ax) -> None:
    observed = ppc.observed_data[name]
    replicated = ppc.posterior_predictive[name].values.reshape(-1, observed.size)
    labels = [", ".join(str(observed[d].values[i]) if d in observed.coords else str(i) for d, i in zip(observed.dims, index))
              for index in np.ndindex(*observed.shape)] if observed.ndim else [name]
    x = np.arange(observed.size)
    low, mid, high = np.nanpercentile(replicated, [5, 50, 95], axis=0)
    ax.vlines(x, low, high, color="#1f77b4", lw=6, alpha=0.35, label="replicates: 90% interval")
    ax.plot(x, mid, "_", color="#1f77b4", ms=10, mew=2, label="replicates: median")
    ax.plot(x, observed.values.ravel(), "o", color="black", ms=4, label="observed")
    ax.set_xticks(x, labels, fontsize=7, rotation=90 if observed.size > 6 or max(map(len, labels)) > 8 else 0)
    ax.set_xlabel(name)
    ax.legend(fontsize=7, frameon=False)


def ppc_section(fits: dict, *, draws: int, seed: int) -> Section:
    figures, not_run = [], []
    for label, est in fits.items():
        try:
            ppc = second_of_two_classes(criticism.posterior_predictive(est, draws=draws, seed=seed))
        except InputError as exc:  # the fitted model replaced the terms they replicate from: say so
            if "were not run" not in str(exc):
                raise
            not_run.append(f"{label}: {exc}")
            continue
        names = ", ".join(ppc.posterior_predictive.data_vars)
        two = ("" if "[" not in names else " A share over two classes is shown for the second class alone: the "
               "first's is 1 minus it.")
        figures.append((plot_ppc(ppc, seed=seed), f"{label}: {names}. Each panel is the distribution, over its "
                        "bins, groups, experts or features, of one statistic of the observed data (black) and of "
                        f"data sets replicated from the fit (blue; their mean dashed).{two}"))
    return Section("Posterior predictive checks", paragraphs=[
        "Data sets are replicated from the fitted model, with every item's latent class drawn anew, and "
        "summarized by the same statistics as the observed data. Where the observed curve leaves the band of "
        "replicates, the model does not reproduce that feature of the data. A MAP fit replicates from its one "
        "point, so its band shows only the sampling noise of the data.", *not_run], figures=figures, anchor="ppc")


# ---------------------------------------------------------------------- LOO
def loo_table(elpd) -> pd.DataFrame:
    """elpd_loo, its standard error, p_loo and the Pareto k values binned as ArviZ bins them."""
    values = inference.elpd_values(elpd)
    k = np.asarray(values.pareto_k)
    threshold = values.good_k
    return pd.DataFrame({
        "elpd_loo": [values.elpd], "se": [values.se], "p_loo": [values.p],
        f"k <= {threshold:.2f} (good)": [int(np.sum(k <= threshold))],
        f"{threshold:.2f} < k <= 1 (bad)": [int(np.sum((k > threshold) & (k <= 1)))],
        "k > 1 (very bad)": [int(np.sum(k > 1))],
    })


def loo_section(fits: dict) -> Section:
    paragraphs = [
        "PSIS-LOO estimates how well each fit predicts a unit of data it did not see (elpd_loo, the expected "
        "log predictive density; higher is better) from one set of posterior draws, by importance sampling. Its "
        "Pareto k values say where that shortcut holds: above the threshold for a unit, the estimate for it is "
        "unreliable."]
    tables, warnings, usable, problems = [], [], {}, []
    for label, est in fits.items():
        fitted = est._complete_log_likelihood()  # a loaded fit's groups: no ArviZ
        reason = inference.loo_unavailable(fitted, label)
        if reason:
            paragraphs.append(reason + ".")
            continue
        usable[label] = est
        elpd = inference.psis_loo(fitted)  # the numbers `check` prints
        noun = criticism.unit_noun(fitted)
        tables.append((loo_table(elpd).round(2),
                       f"{label}: LOO over {np.size(elpd.pareto_k)} {criticism.plural(noun)}."))
        paragraphs += [f"{label}: {note}" for note in est.log_likelihood_notes()]
        row = criticism.pareto_row(elpd, noun, fitted)
        (warnings if row.flagged else paragraphs).append(f"{label}: {row.message}")
        if row.flagged:
            problems.append(_problem(fits, label, row))
    if len(usable) > 1:
        from bayes_wsc.comparison import compare

        tables.append((compare(usable).round(2), "az.compare of the fits, best first."))
    return Section("Leave-one-out cross-validation (LOO)", paragraphs=paragraphs, tables=tables, warnings=warnings,
                   anchor=status.LOO, problems=problems)


def _problem(fits: dict, label: str, row) -> str:
    """A flagged check as the status line words it (so that a check stored in the fit is shown once)."""
    sentence = status.problems_of([f"check {row.check} flagged: {row.message}"])[0].sentence
    return f"{label}: {sentence}" if len(fits) > 1 else sentence


# ---------------------------------------------------------------------- checks
def checks_section(fits: dict, *, seed: int = 0) -> Section:
    paragraphs = [
        "Each row compares a statistic of the data with data replicated from the fit (posterior predictive "
        "checks, ppc_*), or tests the model's known failure (its targeted check). p_value is the share of "
        f"replicates at least as extreme as the data; a row is flagged below {criticism.ALPHA}. Vector statistics "
        "are judged as a whole (a chi-square discrepancy, or the worst element with a Bonferroni correction), so "
        "that many groups do not flag by chance."]
    tables, warnings, problems = [], [], []
    for label, est in fits.items():
        table = est.checks_
        if table.empty:
            table = est.run_checks(seed=seed)
            note = " (run for this report: the fit was made with checks=False)"
        else:
            note = " (run when the fit was made)"
        shown = table.drop(columns=["message"]).copy()
        for column in ("statistic", "reference", "p_value"):
            shown[column] = shown[column].astype(float).round(4)
        tables.append((shown, f"{label}: checks{note}."))
        warnings += [f"{label}: check {row.check} flagged: {row.message}" for row in table.itertuples() if row.flagged]
        problems += [_problem(fits, label, row) for row in table.itertuples() if row.flagged]
        paragraphs += [f"{label}, {row.check}: {row.message}" for row in table.itertuples() if not row.flagged]
    if not warnings:
        paragraphs.append("No check is flagged.")
    return Section("Model checks", paragraphs=paragraphs, tables=tables, warnings=warnings, anchor=status.CHECKS,
                   problems=problems)
