"""The report any fitted estimator gets when its model has no report of its own: the estimands with
their intervals, the criticism sections every model shares, and the fit's warnings."""

from __future__ import annotations

from pathlib import Path

from bayes_wsc import inference
from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.posterior import check_ci
from bayes_wsc.report.criticism import criticism_sections
from bayes_wsc.report.html import Section, diagnostics_section, fit_label, fit_method, variant_words, write_html


def write_report(est, out_dir, *, ci: float = DEFAULT_CI, title: str | None = None) -> Path:
    """Write `out_dir/report.html` for any fitted estimator."""
    check_ci(ci)
    method = fit_method(est)
    caption = ("The posterior mode: no intervals." if not inference.has_draws(est.idata_) else
               f"Posterior mean, sd and {ci:.0%} HDI (with Monte Carlo errors, ESS and R-hat after NUTS).")
    sections = [Section("Estimands", paragraphs=list(est.summary_notes()),
                        tables=[(est.summary(hdi_prob=ci).round(3), caption)])]
    fits = {fit_label(est): est}
    sections += criticism_sections(fits)
    sections.append(diagnostics_section(fits))
    intro = [f"A {type(est).__name__} fit ({est.model_name} model) by {method}.", *variant_words(est)]
    return write_html(Path(out_dir) / "report.html", title or f"{type(est).__name__} report", intro, sections,
                      fits=fits)
