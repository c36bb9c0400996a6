"""The report any fitted estimator gets when its model has no report of its own: the estimands with
their intervals, the criticism sections every model shares, and the fit's warnings."""

from __future__ import annotations

from pathlib import Path

from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.report.criticism import write_fit_report
from bayes_wsc.report.html import estimands_section, fit_method, variant_words


def write_report(est, out_dir, *, ci: float = DEFAULT_CI, title: str | None = None) -> Path:
    """Write `out_dir/report.html` for any fitted estimator."""
    intro = [f"A {type(est).__name__} fit ({est.model_name} model) by {fit_method(est)}.", *variant_words(est)]
    return write_fit_report(est, out_dir, title or f"{type(est).__name__} report", intro, [estimands_section(est, ci)])
