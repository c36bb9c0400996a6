"""Posterior summaries of quantities computed on demand from the draws.

Per-item quantities (an I x K table, or n items) are never stored per draw;
they are computed here in chunks of columns and reduced at once to a mean
and a credible interval.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from bayes_wsc import draw_stats, inference
from bayes_wsc.errors import InputError

#: floats per chunk of (draws x columns): about 64 MB
CHUNK_FLOATS = 8_000_000
#: floats per chunk where each step of the work passes over the whole chunk several times (a softmax over
#: components, then a weighted sum; a sum, a sigmoid, a mean and a sort): about 8 MB, a working set the caches
#: hold (pcmix's `predict` of 5,000 items x 4,000 draws: 0.87 s in chunks of `CHUNK_FLOATS`, 0.50 s in these;
#: wsc's 7,500 cells x 4,000 draws: 0.37-0.55 s, 0.28-0.35 s). `summarize_rows`' default.
CACHE_CHUNK_FLOATS = 2**20


def check_ci(ci, name: str = "ci") -> None:
    """The credible level of an interval (the argument `name`): a number in (0, 1), or one line naming
    the value. Every entry point that takes a level checks it with this rule, before any work."""
    if isinstance(ci, bool) or not isinstance(ci, (int, float, np.number)) or not 0 < ci < 1:
        raise InputError(f"{name} must be a number in (0, 1), got {ci!r}")


def stacked(idata, name: str) -> np.ndarray:
    """A posterior variable as (chain * draw, ...)."""
    values = idata.posterior[name].values
    return values.reshape(-1, *values.shape[2:])


def summarize_columns(
    n_columns: int,
    draws_of: Callable[[np.ndarray], np.ndarray],
    n_draws: int,
    ci: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and HDI of `draws_of(columns) -> (draws, len(columns))`, one chunk of columns at a time.
    With a single draw (a MAP) the bounds are NaN: a point has no interval (`inference.hdi`)."""
    def stats_of(cols):
        values = draws_of(cols)
        return values.mean(axis=0), inference.hdi(values, ci)

    return _in_chunks(n_columns, n_draws, stats_of)


def summarize_rows(
    n_rows: int,
    rows_of: Callable[[np.ndarray], np.ndarray],
    n_draws: int,
    ci: float,
    chunk_floats: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`summarize_columns` for draws built the other way round: `rows_of(rows) -> (len(rows), draws)`, a new
    float array, contiguous in the draws, that this sorts in place for the HDI (the same HDI, without the
    copy a sort of columns makes; a quantity gathered per row also gathers faster from draws stored so).
    `chunk_floats`: the rows' draws per chunk (default `CACHE_CHUNK_FLOATS`: a `rows_of` makes its chunk and
    this passes over it three times more)."""
    def stats_of(rows):
        values = rows_of(rows)
        return values.mean(axis=1), np.nan if n_draws == 1 else draw_stats.hdi_of_rows(values, ci)

    return _in_chunks(n_rows, n_draws, stats_of, CACHE_CHUNK_FLOATS if chunk_floats is None else chunk_floats)


def _in_chunks(n: int, n_draws: int, stats_of: Callable,
               chunk_floats: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, low and high of `n` quantities from `stats_of(indices) -> (mean, bounds)`, a chunk of about
    `chunk_floats` draws (default `CHUNK_FLOATS`) at a time."""
    mean = np.empty(n)
    bounds = np.empty((n, 2))
    step = max(1, (CHUNK_FLOATS if chunk_floats is None else chunk_floats) // max(n_draws, 1))
    for start in range(0, n, step):
        index = np.arange(start, min(start + step, n))
        mean[index], bounds[index] = stats_of(index)
    return mean, bounds[:, 0], bounds[:, 1]


def summarize_memberships(n_rows: int, n_clusters: int, probabilities_of: Callable[[np.ndarray], np.ndarray],
                          n_draws: int, ci: float, chunk_floats: int | None = None,
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Posterior mean of every row's cluster probabilities (n, K), the most probable cluster of each row and
    the HDI of its probability, from `probabilities_of(rows) -> (draws, len(rows), K)` (rows unique and
    sorted); a chunk of whole rows at a time (about `CHUNK_FLOATS` draws), never stored per draw. Only the
    chosen cluster's draws are sorted for its interval (as a row, in place), not every cluster's.
    `chunk_floats` as `summarize_rows`'."""
    mean = np.empty((n_rows, n_clusters))
    bounds = np.full((n_rows, 2), np.nan)  # a single draw (a MAP) has no interval
    step = max(1, (CHUNK_FLOATS if chunk_floats is None else chunk_floats) // max(n_draws * n_clusters, 1))
    for start in range(0, n_rows, step):
        rows = np.arange(start, min(start + step, n_rows))
        values = probabilities_of(rows)
        mean[rows] = values.mean(axis=0)
        if n_draws > 1:
            chosen = mean[rows].argmax(axis=1)
            bounds[rows] = draw_stats.hdi_of_rows(values[:, np.arange(rows.size), chosen].T.copy(), ci)
    chosen = mean.argmax(axis=1)
    return mean, chosen, bounds[:, 0], bounds[:, 1]


def class_table(classes, probabilities_of: Callable[[np.ndarray], np.ndarray], n_rows: int, n_draws: int,
                ci: float, index) -> pd.DataFrame:
    """`class` (the most probable), `prob_<class>` (posterior means) and `prob_low`, `prob_high` (the HDI of
    the chosen class's probability; empty after a MAP, a single point) of `n_rows` rows, from
    `probabilities_of(rows) -> (draws, len(rows), K)`: the prediction columns of a classifier."""
    classes = [str(c) for c in classes]
    mean, chosen, low, high = summarize_memberships(n_rows, len(classes), probabilities_of, n_draws, ci)
    if n_draws == 1:  # a MAP: no interval
        low, high = np.full(n_rows, np.nan), np.full(n_rows, np.nan)
    out = pd.DataFrame({"class": np.asarray(classes)[chosen]}, index=index)
    for k, name in enumerate(classes):
        out[f"prob_{name}"] = mean[:, k]
    out["prob_low"], out["prob_high"] = low, high
    return out


def append_predictions(items: pd.DataFrame, added) -> pd.DataFrame:
    """`items` (every column kept as it is) followed by the prediction columns `added` (a mapping
    or a DataFrame on the same rows); a name that `items` already has is an error, never
    overwritten."""
    added = pd.DataFrame(added, index=items.index)
    clash = [c for c in added.columns if c in items.columns]
    if clash:
        raise InputError(f"items already has a column {clash[0]!r}, which predict would overwrite; rename it")
    out = pd.concat([items, added], axis=1)
    out.attrs = dict(items.attrs)
    return out
