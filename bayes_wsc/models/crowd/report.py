"""The crowd model's report: each source's accuracy with intervals, its votes and abstentions and its
agreement with the others (the check), the items' classes beside majority vote, then the sections every
model shares."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.models.crowd.baselines import majority_vote
from bayes_wsc.report.criticism import write_fit_report
from bayes_wsc.report.html import Section, estimands_section, fit_method, per_source_table, variant_words


def sources_section(est, data, ci: float) -> Section:
    cast = data.cast
    table = per_source_table(est, "accuracy", "source", ci)
    table["votes"] = np.bincount(data.vote_source[cast], minlength=data.n_sources)
    table["abstentions"] = np.bincount(data.vote_source[~cast], minlength=data.n_sources)
    checks = est.checks_
    row = checks[checks["check"] == "source_agreement"] if len(checks) else checks.iloc[:0]
    paragraphs = [f"{int(cast.sum())} votes from {data.n_sources} sources ({int((~cast).sum())} abstentions, which "
                  "carry no likelihood). A source's accuracy is the mean of its confusion matrix's diagonal.",
                  *([str(m) for m in row["message"]] if len(row) else ["Its check did not run."])]
    return Section("Sources", paragraphs=paragraphs, tables=[(table, f"accuracy with {ci:.0%} HDI, votes cast")])


def items_section(est, data, ci: float) -> Section:
    items = est.item_probabilities(ci=ci)
    majority = majority_vote(data)
    items["majority_vote"] = np.where(majority >= 0, data.classes[np.maximum(majority, 0)], "")
    voted = majority >= 0
    agree = float((items["class"].to_numpy()[voted] == items["majority_vote"].to_numpy()[voted]).mean())
    shown = items.head(50)
    return Section("Items: class probabilities", paragraphs=[
        f"Each item's class given its votes (posterior mean, and the {ci:.0%} HDI of the chosen class's "
        f"probability), beside majority vote (ties broken at random); the first {len(shown)} of {len(items)} items. "
        f"The model's class and majority vote agree on {agree:.1%} of the {int(voted.sum())} items with a vote."],
        tables=[(shown, "per-item class probabilities")])


def write_report(est, out_dir, *, ci: float = DEFAULT_CI, title: str | None = None) -> Path:
    """Write `out_dir/report.html`."""
    data = est.data_from_fit()
    intro = [f"A crowd-labelling (Dawid-Skene) fit by {fit_method(est)} on {data.n_items} items, {data.n_sources} "
             f"sources; classes {', '.join(data.classes)}.", *variant_words(est)]
    sections = [estimands_section(est, ci), sources_section(est, data, ci), items_section(est, data, ci)]
    return write_fit_report(est, out_dir, title or "Crowd labelling report", intro, sections)


__all__ = ["write_report", "sources_section", "items_section"]
