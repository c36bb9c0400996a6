"""The combined model's report: one section per source (its reliability with intervals, and its check),
the training items' class probabilities with intervals, then the sections every model shares."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.posterior import check_ci
from bayes_wsc.report.criticism import write_fit_report
from bayes_wsc.report.html import Section, estimands_section, fit_method, per_source_table, variant_words

#: each source's check row (`models/combined/checks.py`)
CHECK_OF = {"labels": "label_agreement", "votes": "vote_agreement", "pairs": "link_agreement",
            "bags": "bag_counts", "groups": "group_he"}


def source_sections(est, data, ci: float) -> list[Section]:
    checks = est.checks_
    post = est._fitted().posterior
    sections = []
    for source in data.present_sources():
        paragraphs, tables = [], []
        if source == "labels":
            paragraphs.append(f"{int((data.label >= 0).sum())} hand-labelled items, taken as exact.")
        elif source == "votes":
            abstained = int((~data.cast).sum())
            paragraphs.append(f"{int(data.cast.sum())} votes from {data.n_sources} sources ({abstained} abstentions, "
                              "which carry no likelihood). Each source's accuracy is the mean of its confusion "
                              "matrix's diagonal.")
            if "accuracy" in post:
                tables.append((per_source_table(est, "accuracy", "source", ci), f"accuracy with {ci:.0%} HDI"))
        elif source == "pairs":
            paragraphs.append(f"{data.link.size} links on {data.n_pairs} pairs from {data.n_experts} experts: a "
                              "pairwise composite likelihood (see the README).")
            if "alpha" in post:
                table = per_source_table(est, "alpha", "expert", ci).join(per_source_table(est, "beta", "expert", ci))
                tables.append((table, f"sensitivity alpha and specificity beta with {ci:.0%} HDI"))
        elif source == "bags":
            paragraphs.append(f"{data.n_bags} bags whose class counts are known exactly.")
        else:
            paragraphs.append(f"{data.n_groups} groups' noisy averages of class {data.classes[1]!r} (logit scale, "
                              f"WH = {est.wh:g}).")
        row = checks[checks["check"] == CHECK_OF[source]] if len(checks) else checks.iloc[:0]
        paragraphs += [str(m) for m in row["message"]] if len(row) else ["Its check did not run."]
        sections.append(Section(f"Source: {source}", paragraphs=paragraphs, tables=tables))
    return sections


def write_report(est, out_dir, *, ci: float = DEFAULT_CI, title: str | None = None) -> Path:
    """Write `out_dir/report.html`."""
    check_ci(ci)
    data = est.data_from_fit()
    items = est.item_probabilities(ci=ci)
    shown = items.head(50)
    intro = [f"A combined-supervision fit by {fit_method(est)} on {data.n_items} items with "
             f"{', '.join(data.present_sources())}; classes {', '.join(data.classes)}.", *variant_words(est)]
    item_section = Section("Items: class probabilities", paragraphs=[
        f"Each training item's class given its features and its own labels and votes (posterior mean, and the "
        f"{ci:.0%} HDI of the chosen class's probability); the first {len(shown)} of {len(items)} items."],
        tables=[(shown, "per-item class probabilities")])
    sections = [estimands_section(est, ci), *source_sections(est, data, ci), item_section]
    return write_fit_report(est, out_dir, title or "Combined supervision report", intro, sections)
