"""Model-agnostic pieces of an HTML report: sections, embedded figures, one file written atomically.

A report is a single HTML file that can be mailed or archived on its own:
the CSS is inline and every figure is a PNG embedded as a data URI. Figures
are drawn on matplotlib's Agg canvas without pyplot, so writing a report
never opens a window and never changes the backend of the user's session
(a notebook keeps its inline backend).
"""

from __future__ import annotations

import base64
import html
import io
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

PNG_DPI = 110

CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #222;
       max-width: 1000px; margin: 2em auto; padding: 0 1.2em; line-height: 1.5; }
h1 { font-size: 1.7em; border-bottom: 2px solid #ccc; padding-bottom: .3em; }
h2 { font-size: 1.3em; margin-top: 2em; border-bottom: 1px solid #ddd; padding-bottom: .2em; }
nav ol { columns: 2; font-size: .95em; }
figure { margin: 1.2em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: .9em; color: #444; margin: .4em 0; }
table.data { border-collapse: collapse; font-size: .85em; font-variant-numeric: tabular-nums; }
table.data th, table.data td { border-bottom: 1px solid #ddd; padding: .25em .7em; text-align: right; }
table.data thead th { border-bottom: 2px solid #999; }
table.data tbody tr:nth-child(even) { background: #f7f7f7; }
.table-wrap { overflow-x: auto; }
ul.warnings { list-style: none; padding: 0; }
ul.warnings li { background: #fff4e0; border-left: 4px solid #e69500; padding: .5em .8em; margin: .4em 0; }
div.status { margin: 1em 0 1.4em; padding: .6em 1em; border-left: 6px solid; }
div.status.ok { background: #eef7ee; border-color: #3a9a3a; }
div.status.problems { background: #fff4e0; border-color: #e69500; }
div.status p { margin: .2em 0; font-weight: 600; }
div.status ul { margin: .3em 0 .1em; padding-left: 1.3em; }
div.status a { white-space: nowrap; }
footer { margin-top: 3em; font-size: .8em; color: #777; }
"""


@dataclass
class Section:
    """One titled part of a report, rendered in field order: prose, figures, tables, warnings.

    Text is plain (it is escaped); a figure or table may come with a caption
    as a `(figure, caption)` or `(table, caption)` pair. `anchor` is the
    section's HTML id (else `section-N`), which the status line links to;
    `problems` are sentences the status line at the top of the page must show,
    linked to this section (found while the report was made, such as a check
    run for it).
    """

    heading: str
    paragraphs: list[str] = field(default_factory=list)
    figures: list[Figure | tuple[Figure, str]] = field(default_factory=list)
    tables: list[pd.DataFrame | tuple[pd.DataFrame, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    anchor: str | None = None
    problems: list[str] = field(default_factory=list)


def new_figure(nrows: int = 1, ncols: int = 1, *, width: float = 8.0, height: float = 4.5, **subplots_kw):
    """A (Figure, axes) pair on the Agg canvas, outside pyplot's global state."""
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, squeeze=False, **subplots_kw)


def figure_to_data_uri(fig: Figure) -> str:
    """The figure as a base64 PNG data URI; the figure is closed (freed) afterwards."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=PNG_DPI)
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None and getattr(fig.canvas, "manager", None) is not None:
        pyplot.close(fig)  # a figure made with pyplot is held by pyplot until closed
    else:
        fig.clear()
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def write_html(
    path: str | Path,
    title: str,
    intro: str | Sequence[str],
    sections: Sequence[Section],
    *,
    fits: Mapping[str, object] | None = None,
    footer: str | None = None,
) -> Path:
    """Write one self-contained HTML page; written to a temporary file and renamed, so a
    failed or interrupted write never leaves a half page behind. The footer defaults to
    `written_by()`. The page opens with the status line of `fits` ({label: fitted estimator}:
    every stored warning, flagged check and caveat; `bayes_wsc.status`) and of the sections'
    own `problems`."""
    from bayes_wsc import outputs
    from bayes_wsc.status import status_problems

    status = [(p.sentence, p.section) for p in status_problems(fits or {})]
    page = render_page(title, intro, sections, footer=written_by() if footer is None else footer, status=status)
    return outputs.write_text(path, page, "report")


#: how a report labels a fit by its method
METHOD_LABELS = {"map": "MAP", "nuts": "NUTS", "laplace": "Laplace"}


def fit_method(est) -> str:
    """How a fit was made, as its attrs keep it: "map", "nuts" or "laplace"."""
    from bayes_wsc import inference

    return inference.get_attrs(est._fitted())["method"]


def fit_label(est) -> str:
    """The label of a fit in a report of one fit: its method, as every report writes it (MAP, NUTS, Laplace)."""
    method = fit_method(est)
    return METHOD_LABELS.get(method, str(method).upper())


def written_by() -> str:
    """The package version and the time of writing, for a report's footer."""
    import datetime

    from bayes_wsc.version import package_version

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"Written by bayes_wsc {package_version()} on {stamp}."


def method_words(est, map_words: str = "the posterior mode; no intervals") -> str:
    """How a fit was made, for a report's opening line: "by NUTS (...)", "by" the Laplace approximation's
    words (`laplace_words`), or "by MAP (`map_words`)"."""
    return {"nuts": "by NUTS (full posterior; intervals are credible intervals)",
            "laplace": f"by {laplace_words(est)}"}.get(fit_method(est), f"by MAP ({map_words})")


def laplace_words(est) -> str:
    """How a Laplace fit (method="laplace") was made, in every model's report."""
    from bayes_wsc import inference

    info = inference.get_attrs(est._fitted()).get("fit_info", {}).get("laplace", {})
    return (f"the Laplace approximation: a Gaussian at the posterior mode on the unconstrained scale, "
            f"{info.get('draws')} independent draws (approximate intervals: poor where the data say little, near "
            "a bound, or with several modes; see bayes_wsc/laplace.py)")


def variant_words(est) -> list[str]:
    """What a variant is, for its report (nothing for the model itself): its file and what its docstring
    says, the settings its `build_model` received (the model's and its own, `--set`) and its free
    variables. Read from the fit (the variant's source is kept in it, and never run here)."""
    from bayes_wsc import inference

    attrs = inference.get_attrs(est._fitted())
    settings = attrs.get("settings", {})
    if not settings.get("model_file"):
        return []
    name = Path(str(settings["model_file"])).name
    summary = docstring_summary(attrs.get("model_source", ""))
    model = attrs.get("model", est.model_name)
    words = [f"The model is not the default {model} model but the variant file {name}"
             + (f": {summary}" if summary else ".")]
    try:
        given = est.build_settings()
    except Exception:  # noqa: BLE001 - a description, never a failed report
        given = {}
    own = settings.get("model_settings") or {}
    given_words = ", ".join(f"{k}={_value(v)}" for k, v in given.items())
    own_words = (f"its own settings (--set) {', '.join(f'{k}={_value(v)}' for k, v in own.items())}" if own
                 else "no setting of its own (--set)")
    words.append(f"Its build_model received the {model} model's settings ({given_words or 'none'}) and "
                 f"{own_words}.")
    free = attrs.get("fit_info", {}).get("free_variables") or []
    extra = est._other_variables() if hasattr(est, "_other_variables") else []
    text = f"Its free variables: {', '.join(map(str, free))}." if free else ""
    if extra:
        text += (" " if text else "") + (f"Beside the {model} model's estimands it reports "
                                         f"{', '.join(map(str, extra))}.")
    if text:
        words.append(text)
    words.append(f"The default {model} model's description is not repeated here, since the variant may change "
                 "it; the figures and tables show the variables the variant shares with that model.")
    return [" ".join(words)]


def docstring_summary(source: str) -> str:
    """The first paragraph of a Python file's docstring, on one line (parsed, never run)."""
    import ast

    try:
        doc = ast.get_docstring(ast.parse(source or "")) or ""
    except (SyntaxError, ValueError):
        return ""
    first = " ".join(doc.strip().split("\n\n")[0].split())
    if first.lower().startswith("variant:"):
        first = first[len("variant:"):].strip()
    return first if not first or first.endswith(".") else first + "."


def _value(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


LAPLACE_SUMMARY = "mean, sd and HDI of the Laplace approximation's draws (no R-hat or ESS: the draws are independent)"


def estimands_section(est, ci: float, what: str | None = None, *, after_nuts: str = "") -> Section:
    """The "Estimands" table of a report of one fit: `what` says which variables it holds, the caption
    how the fit made them (the mode, the Laplace draws, or NUTS's draws, `after_nuts` adding e.g. the
    relabeling), and the summary's notes follow (`summary_notes`)."""
    table = est.summary(hdi_prob=ci).round(3)
    caption = {"map": "The posterior mode (a single point; no standard deviation or interval).",
               "laplace": f"The {LAPLACE_SUMMARY}."}.get(
        fit_method(est), f"Posterior mean, sd, {ci:.0%} HDI, Monte Carlo errors, effective sample sizes and "
                         f"R-hat{after_nuts}.")
    return Section("Estimands", paragraphs=[*([what] if what else []), *est.summary_notes()], tables=[(table, caption)])


def per_source_table(est, name: str, dim: str, ci: float) -> pd.DataFrame:
    """Posterior mean and HDI of a per-source variable (a source's `accuracy`, an expert's `alpha`), one
    row per element of `dim`."""
    from bayes_wsc import inference

    post = est._fitted().posterior
    values = post[name].values.reshape(-1, post[name].shape[-1])
    bounds = inference.hdi(values, ci)
    return pd.DataFrame({name: values.mean(axis=0), f"{name}_low": bounds[:, 0], f"{name}_high": bounds[:, 1]},
                        index=pd.Index(post[dim].values.astype(str), name=dim))


def fit_warnings(fits: Mapping[str, object]) -> tuple[list[str], list[str]]:
    """For a Diagnostics section: one paragraph per labelled fit (how many warnings it raised,
    or that it raised none; what a MAP or Laplace fit is) and its warnings prefixed by the label."""
    from bayes_wsc import inference
    from bayes_wsc.status import LAPLACE_CAVEAT

    paragraphs, warnings = [], []
    for label, est in fits.items():
        messages = list(est.diagnostics_)
        if messages:
            paragraphs.append(f"{label}: {len(messages)} warning{'s' if len(messages) > 1 else ''}, listed below.")
            warnings += [f"{label}: {m}" for m in messages]
        method = inference.get_attrs(est._fitted())["method"]
        if not messages:
            paragraphs.append(f"{label}: No warnings; its intervals are approximate, as below." if method == "laplace"
                              else f"{label}: No problems found.")
        if method == "map":
            paragraphs.append(f"{label}: the posterior mode, the single most probable point, with no intervals. "
                              "Fit with method=\"nuts\" (--method nuts) for credible intervals.")
        elif method == "laplace":
            paragraphs.append(f"{label}: {LAPLACE_CAVEAT}")
    return paragraphs, warnings


def diagnostics_section(fits: Mapping[str, object], paragraphs: Sequence[str] = (),
                        warnings: Sequence[str] = ()) -> Section:
    """The Diagnostics section of any report: the model's own paragraphs, then every fit's warnings."""
    own, messages = fit_warnings(fits)
    return Section("Diagnostics", paragraphs=[*paragraphs, *own], warnings=[*messages, *warnings],
                   anchor="diagnostics")


def render_page(title: str, intro: str | Sequence[str], sections: Sequence[Section], *,
                footer: str | None = None, status: Sequence[tuple[str, str]] = ()) -> str:
    """The page: title, the status line (`status`: (sentence, anchor) pairs, then every section's
    `problems`), the intro, a table of contents and the sections."""
    paragraphs = [p for p in ([intro] if isinstance(intro, str) else list(intro)) if p]
    ids = [_anchor(i, s) for i, s in enumerate(sections, 1)]
    nav = "".join(f'<li><a href="#{a}">{_text(s.heading)}</a></li>' for a, s in zip(ids, sections))
    body = "\n".join(_render_section(a, s) for a, s in zip(ids, sections))
    foot = f"<footer>{_text(footer)}</footer>" if footer else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{_text(title)}</title>\n"
        f"<style>{CSS}</style>\n</head>\n<body>\n<h1>{_text(title)}</h1>\n"
        + _status(status, sections, ids)
        + "".join(_paragraph(p) for p in paragraphs)
        + (f"<nav><ol>{nav}</ol></nav>\n" if len(sections) > 1 else "")
        + body + foot + "\n</body>\n</html>\n"
    )


def _anchor(number: int, section: Section) -> str:
    return section.anchor or f"section-{number}"


def _status(status: Sequence[tuple[str, str]], sections: Sequence[Section], ids: Sequence[str]) -> str:
    """The status line: "No problems found", or each problem with a link to its section (to the
    diagnostics when the page has no such section)."""
    headings = dict(zip(ids, (s.heading for s in sections)))
    items, seen = [], set()
    for sentence, anchor in [*status, *((p, a) for a, s in zip(ids, sections) for p in s.problems)]:
        if sentence in seen:
            continue
        seen.add(sentence)
        target = anchor if anchor in headings else "diagnostics" if "diagnostics" in headings else None
        link = f' <a href="#{target}">({_text(headings[target])})</a>' if target else ""
        items.append(f"<li>{_text(sentence)}{link}</li>")
    if not items:
        return '<div class="status ok" id="status"><p>Status: No problems found.</p></div>\n'
    noun = "problem" if len(items) == 1 else "problems"
    return (f'<div class="status problems" id="status"><p>Status: {len(items)} {noun}</p>'
            f'<ul>{"".join(items)}</ul></div>\n')


def _render_section(anchor: str, section: Section) -> str:
    parts = [f'<section id="{_text(anchor)}">', f"<h2>{_text(section.heading)}</h2>"]
    parts += [_paragraph(p) for p in section.paragraphs]
    for item in section.figures:
        fig, caption = item if isinstance(item, tuple) else (item, "")
        parts.append(f'<figure><img src="{figure_to_data_uri(fig)}" alt="{_text(section.heading)}">'
                     + (f"<figcaption>{_text(caption)}</figcaption>" if caption else "") + "</figure>")
    for item in section.tables:
        table, caption = item if isinstance(item, tuple) else (item, "")
        parts.append("<figure>" + (f"<figcaption>{_text(caption)}</figcaption>" if caption else "")
                     + '<div class="table-wrap">' + _table(table) + "</div></figure>")
    if section.warnings:
        parts.append('<ul class="warnings">' + "".join(f"<li>{_text(w)}</li>" for w in section.warnings) + "</ul>")
    parts.append("</section>")
    return "\n".join(parts)


def _table(table: pd.DataFrame) -> str:
    """A default 0..n-1 index carries no information and is left out."""
    plain_index = isinstance(table.index, pd.RangeIndex) and table.index.start == 0 and table.index.step == 1
    return table.to_html(classes="data", border=0, escape=True, na_rep="\u2013", float_format=_number,
                         index=not plain_index)


def _number(x: float) -> str:
    """Whole numbers without decimals; others to six significant digits (callers round first)."""
    return f"{x:.0f}" if float(x).is_integer() and abs(x) < 1e15 else f"{x:.6g}"


def _paragraph(text: str) -> str:
    return f"<p>{_text(text)}</p>\n"


def _text(text) -> str:
    return html.escape(str(text), quote=True)
