"""The status line of a fit: "No problems found", or each problem in one sentence.

Every report opens with it and `bayes-wsc summary` prints it first, so that a
warning is read before a clean-looking figure or table. It is built from what
the fit stores, never from a list of known warnings: every message in the
fit's diagnostics (each `FitWarning`), every flagged check, and, for a
Laplace fit, what the approximation is. Messages of a kind it knows are
grouped (R-hat and ESS, one sentence for all the estimands concerned) and
pointed at the report section that shows them; any other message appears by
its first sentence and points at the diagnostics, where it is given whole.

Nothing here imports PyMC, ArviZ or matplotlib.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

#: the report sections a problem may point at (their HTML anchors)
CONVERGENCE, LOO, CHECKS, DIAGNOSTICS = "convergence", "loo", "checks", "diagnostics"

LAPLACE_CAVEAT = ("The intervals are the Laplace approximation's: a Gaussian at the posterior mode, approximate "
                  "where the data say little, near a bound or with several modes; check them against NUTS "
                  "before relying on them.")

_RHAT = re.compile(r"^R-hat of (?P<name>.+?) is (?P<value>[0-9.]+) \(above (?P<limit>[0-9.]+)\)")
_ESS = re.compile(r"^(?P<kind>Bulk|Tail) effective sample size of (?P<name>.+?) is (?P<value>[0-9]+) "
                  r"\(below (?P<limit>[0-9]+) for")
_CHECK = re.compile(r"^check (?P<check>\S+) flagged: (?P<message>.*)$", re.S)
#: the sampler's own troubles, shown beside the rank plots
_SAMPLER = ("have not mixed at all",
            "transitions diverged", "maximum tree depth", "a single chain cannot show", "too few to judge convergence")


@dataclass(frozen=True)
class Problem:
    """One problem of a fit: a sentence, and the report section that shows it."""

    sentence: str
    section: str = DIAGNOSTICS


def first_sentence(text: str) -> str:
    """The text up to its first full stop followed by a capital (outside brackets and quotes), with a
    capital first letter and a full stop at the end."""
    text = " ".join(str(text).split())
    depth, quote = 0, None
    for i, char in enumerate(text):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"" and (i == 0 or not text[i - 1].isalnum()):
            quote = char
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth = max(0, depth - 1)
        elif char == "." and depth == 0 and text[i + 1:i + 3][:1] == " " and text[i + 2:i + 3].isupper():
            text = text[: i + 1]
            break
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def fit_problems(est) -> list[Problem]:
    """The problems of one fitted estimator, from its stored diagnostics and checks and its method."""
    messages = [str(m) for m in est.diagnostics_]
    method = getattr(est, "method", None)  # a setting, restored by load
    checks = est.checks_
    if not checks.empty:  # a flagged check that was not stored among the diagnostics still counts
        for row in checks[checks["flagged"].astype(bool)].itertuples():
            message = f"check {row.check} flagged: {row.message}"
            if message not in messages:
                messages.append(message)
    return problems_of(messages, method)


def problems_of(messages, method: str | None = None) -> list[Problem]:
    """Problems from a fit's messages (its stored warnings and flagged checks) and its method."""
    rhat, ess, out = [], {"Bulk": [], "Tail": []}, []
    grouped_at = None
    for message in messages:
        if match := _RHAT.match(message):
            rhat.append((match["name"], match["value"], match["limit"]))
        elif match := _ESS.match(message):
            ess[match["kind"]].append((match["name"], match["value"], match["limit"]))
        else:
            out.append(_problem(message))
            continue
        if grouped_at is None:
            grouped_at = len(out)
    grouped = []
    if rhat:
        names = ", ".join(f"{name} ({value})" for name, value, _ in rhat)
        grouped.append(Problem(f"R-hat is above {rhat[0][2]} for {_count(len(rhat), 'estimand')}, {names}: the "
                               "chains disagree, so the intervals cannot be trusted yet.", CONVERGENCE))
    if ess["Bulk"] or ess["Tail"]:
        parts = [f"{kind.lower()} {', '.join(f'{name} {value}' for name, value, _ in found)}"
                 for kind, found in ess.items() if found]
        limit = (ess["Bulk"] or ess["Tail"])[0][2]
        count = len({name for found in ess.values() for name, _, _ in found})
        grouped.append(Problem(f"The effective sample size is below {limit} for {_count(count, 'estimand')} "
                               f"({'; '.join(parts)}): the intervals are imprecise.", CONVERGENCE))
    if grouped_at is not None:
        out[grouped_at:grouped_at] = grouped
    if method == "laplace":
        out.append(Problem(LAPLACE_CAVEAT, DIAGNOSTICS))
    return out


def _problem(message: str) -> Problem:
    if match := _CHECK.match(message):
        if match["check"] == "loo_pareto_k":  # its message says what it is: "LOO is unreliable for ..."
            return Problem(first_sentence(match["message"]), LOO)
        return Problem(f"Check {match['check']} flagged: {first_sentence(match['message'])}", CHECKS)
    if message.startswith("LOO is unreliable"):
        return Problem(first_sentence(message), LOO)
    if any(words in message for words in _SAMPLER):
        return Problem(first_sentence(message), CONVERGENCE)
    return Problem(first_sentence(message), DIAGNOSTICS)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def status_problems(fits: Mapping[str, object]) -> list[Problem]:
    """The problems of labelled fits, each sentence prefixed by its fit's label when there are several."""
    several = len(fits) > 1
    out = []
    for label, est in fits.items():
        for problem in fit_problems(est):
            out.append(Problem(f"{label}: {problem.sentence}" if several else problem.sentence, problem.section))
    return out


def status_lines(est) -> list[str]:
    """The status as printed by `bayes-wsc summary` (and after `bayes-wsc fit`): its first lines."""
    problems = fit_problems(est)
    if not problems:
        return ["Status: No problems found."]
    noun = "problem" if len(problems) == 1 else "problems"
    return [f"Status: {len(problems)} {noun} (the diagnostics below say more):",
            *(f"  ! {p.sentence}" for p in problems)]
