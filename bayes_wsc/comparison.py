"""`compare`: fits of the same data ranked by LOO (or WAIC), with the checks that make the ranking mean something.

It sits below the reports and the estimator (a report compares fits; `bayes_wsc.compare` is this
function): it reads a fitted estimator only through `_complete_log_likelihood` and `_fitted`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

from bayes_wsc import inference
from bayes_wsc.errors import FitWarning, InputError


#: an elpd difference below this many nats counts as a tie whatever its SE (Sivula, Magnusson & Vehtari 2022:
#: below 4 the difference is small, and its SE, from the pointwise differences, is unreliable)
TIE_NATS = 4.0
#: a difference within this many SEs of the difference (`dse`) counts as a tie
TIE_SES = 1.0
#: a difference of at least this many SEs is a clear preference; between `TIE_SES` and this LOO only leans
CLEAR_SES = 2.0


def conclusions(table, ic: str = "loo") -> list[str]:
    """What a user should conclude from each row of a comparison, best first, in plain words: the best fit;
    a fit tied with it (its elpd below the best's by less than `TIE_NATS`, or by less than `TIE_SES` SE of
    the difference: LOO cannot tell the two apart on these data); one LOO leans against (under `CLEAR_SES`
    SE: not decisive); or one LOO ranks clearly below it, by so many SE."""
    best, name = str(table.index[0]), ic.upper()
    out = []
    for label, row in table.iterrows():
        diff, dse = float(row["elpd_diff"]), float(row["dse"])
        if label == table.index[0]:
            tied = [str(other) for other, r in table.iloc[1:].iterrows() if _tied(r["elpd_diff"], r["dse"])]
            out.append(f"best by {name}" + (f"; tied with {', '.join(map(repr, tied))} (see their rows)" if tied else ""))
        elif _tied(diff, dse):
            out.append(f"tied with {best!r}: elpd {diff:.1f} lower, SE of the difference {dse:.1f} (a tie: under "
                       f"{TIE_NATS:g}, or under {TIE_SES:g} SE); {name} cannot tell these fits apart on these data, so "
                       "choose by the checks, the model's assumptions, or simplicity, not by this ranking")
        elif diff < CLEAR_SES * dse:
            out.append(f"below {best!r}: elpd {diff:.1f} lower, {diff / dse:.1f} SE of the difference; {name} leans to "
                       f"{best!r} but not decisively (under {CLEAR_SES:g} SE): weigh the checks too")
        else:
            ses = f"{diff / dse:.1f} SE of the difference" if dse > 0 else "the difference's SE 0"
            out.append(f"worse than {best!r}: elpd {diff:.1f} lower, {ses}; {name} prefers {best!r}")
    return out


def _tied(diff: float, dse: float) -> bool:
    return diff < TIE_NATS or diff < TIE_SES * dse


def compare(fits, ic: str = "loo"):
    """`az.compare` of fitted estimators of the same data, {label: estimator}, best first (LOO by default), with a
    last column, `conclusion`, saying in words what each row means (`conclusions`: best, tied with the best
    within the difference's SE, or worse by so many SE)."""
    if not isinstance(fits, Mapping) or len(fits) < 2:
        raise InputError("compare needs a dict of at least two fitted estimators, {label: estimator}")
    if ic not in ("loo", "waic"):
        raise InputError(f"ic must be 'loo' or 'waic', got {ic!r}")
    labels = list(fits)
    for label, est in fits.items():
        complete = getattr(est, "_complete_log_likelihood", None)  # an estimator of bayes_wsc (estimator.py)
        fitted = complete() if callable(complete) else None
        if fitted is None:
            raise InputError(f"fit {label!r} is not a fitted bayes_wsc estimator")
        reason = inference.loo_unavailable(fitted, f"fit {label!r}")
        if reason:
            raise InputError(reason)
    first = inference.groups_of(fits[labels[0]]._fitted())  # Datasets, whichever ArviZ family each fit is for
    for label in labels[1:]:
        other = inference.groups_of(fits[label]._fitted())
        if not other["observed_data"].equals(first["observed_data"]):
            raise InputError(f"fits {labels[0]!r} and {label!r} were made on different data; "
                             "LOO compares fits of the same data")
        scored = [inference.get_attrs(fits[name]._fitted()).get("log_likelihood_of") for name in (labels[0], label)]
        if scored[0] != scored[1]:
            raise InputError(f"fits {labels[0]!r} and {label!r} score different things (the log-likelihood of "
                             f"{scored[0] or 'the data'} against that of {scored[1] or 'the data'}); LOO compares "
                             "models of the same quantity")
    holds = {label: str(inference.get_attrs(fits[label]._fitted()).get("log_likelihood_holds", "")) for label in labels}
    integrated = {label for label, words in holds.items() if "integrated out over" in words}
    if integrated and len(integrated) < len(labels):
        other = next(label for label in labels if label not in integrated)
        warnings.warn(f"fit {sorted(integrated)[0]!r} scores each unit with its local parameter integrated out and fit "
                      f"{other!r} given it ({holds[other]}): LOO then compares a prediction of new units with one of "
                      "the same units' data, and the ranking mixes the two", FitWarning, stacklevel=2)
    table = inference.compare({label: fits[label]._fitted() for label in labels}, ic=ic)
    table["conclusion"] = conclusions(table, ic)
    return table
