"""Pareto-smoothed importance sampling leave-one-out (PSIS-LOO) in NumPy: what `bayes-wsc check`
needs of LOO (each unit's Pareto k, elpd_loo, its standard error, p_loo) without importing ArviZ
(4-8 s of plotting stack and numba, most of the command's time).

The arithmetic is ArviZ 0.23's `az.loo`, step by step (Vehtari, Gelman & Gabry 2017, "Practical
Bayesian model evaluation using leave-one-out cross-validation and WAIC"; Vehtari, Simpson, Gelman,
Yao & Gabry 2024, "Pareto smoothed importance sampling"): the relative efficiency r_eff is the mean
ESS (of the mean) of every posterior element over the number of draws; each unit's importance
ratios 1 / p(y_i | theta) keep their largest ceil(min(S / 5, 3 sqrt(S / r_eff))) values for a
generalized Pareto fitted by Zhang & Stephens' estimator with PSIS's weak prior on k, are replaced by
its quantiles and truncated at the largest raw ratio; elpd_loo is the sum over units of the log of
the smoothed weighted mean of p(y_i | theta). `tests/test_psis.py` holds it to `inference.loo`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bayes_wsc import draw_stats

#: PSIS's prior on k: this many pseudo-observations at k = 0.5 (Vehtari et al. 2024, appendix)
PRIOR_K_WEIGHT, PRIOR_K = 10, 0.5


def good_k(n_samples: int) -> float:
    """The Pareto k above which a unit's PSIS estimate is unreliable for S draws: min(1 - 1/log10(S), 0.7)."""
    return float(min(1 - 1 / np.log10(n_samples), 0.7))


def gpd_fit(excess: np.ndarray) -> tuple[float, float]:
    """Shape k and scale sigma of a generalized Pareto fitted to sorted positive excesses (Zhang &
    Stephens 2009), k pulled toward 0.5 by PSIS's prior; the loo package's `gpdfit`."""
    k, sigma = gpd_fit_rows(np.asarray(excess, dtype=float)[None, :])
    return float(k[0]), float(sigma[0])


def gpd_fit_rows(excess: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`gpd_fit` of every row of an (r, n) array of sorted positive excesses at once (ArviZ's `_gpdfit`;
    a grid point of negligible weight counts for nothing)."""
    x = np.asarray(excess, dtype=float)
    n = x.shape[1]
    grid = 30 + int(np.sqrt(n))
    b = 1 - np.sqrt(grid / (np.arange(1, grid + 1, dtype=float) - 0.5))
    b = b[None, :] / (3 * x[:, int(n / 4 + 0.5) - 1])[:, None] + (1 / x[:, -1])[:, None]  # (r, grid)
    k = np.log1p(-b[:, :, None] * x[:, None, :]).mean(axis=2)
    log_lik = n * (np.log(-(b / k)) - k - 1)
    with np.errstate(over="ignore"):  # a negligible grid point's weight: 1 / inf = 0
        weights = 1 / np.exp(log_lik[:, None, :] - log_lik[:, :, None]).sum(axis=2)
    weights = np.where(weights >= 10 * np.finfo(float).eps, weights, 0.0)
    weights /= weights.sum(axis=1, keepdims=True)
    b_post = np.sum(b * weights, axis=1)
    k_post = np.log1p(-b_post[:, None] * x).mean(axis=1)
    sigma = -k_post / b_post
    return (n * k_post + PRIOR_K_WEIGHT * PRIOR_K) / (n + PRIOR_K_WEIGHT), sigma


def _gpd_quantiles(probs: np.ndarray, k, sigma) -> np.ndarray:
    """Quantiles of a generalized Pareto (k, sigma scalars, or arrays broadcasting against `probs`); NaN
    where sigma <= 0."""
    k, sigma = np.asarray(k, dtype=float), np.asarray(sigma, dtype=float)
    tiny = np.abs(k) < np.finfo(float).eps
    with np.errstate(divide="ignore", invalid="ignore"):
        general = np.expm1(-k * np.log1p(-probs)) / np.where(tiny, 1.0, k)
    quantiles = np.where(tiny, -np.log1p(-probs), general) * sigma
    return np.where(sigma > 0, quantiles, np.nan)


def tail_length(n_samples: int, r_eff: float) -> int:
    """How many of the largest ratios the Pareto tail is fitted to."""
    return int(np.ceil(min(n_samples / 5.0, 3 * (n_samples / r_eff) ** 0.5)))


def smooth(log_weights: np.ndarray, r_eff: float = 1.0) -> tuple[np.ndarray, float]:
    """One unit's PSIS: its S log importance weights smoothed, truncated and normalized (they
    log-sum-exp to 0), and the Pareto k of their tail (inf when the tail is too short to fit)."""
    x = np.array(log_weights, dtype=float)
    x -= np.max(x)
    order = np.argsort(x)
    cutoff = max(x[order[-tail_length(x.size, r_eff) - 1]], np.log(np.finfo(float).tiny))
    (tail,) = np.where(x > cutoff)
    k = np.inf
    if tail.size > 4:
        tail_order = np.argsort(x[tail])
        excess = np.exp(x[tail]) - np.exp(cutoff)
        k, sigma = gpd_fit(excess[tail_order])
        if np.isfinite(k):
            quantiles = _gpd_quantiles(np.arange(0.5, tail.size) / tail.size, k, sigma)
            x[tail[tail_order]] = np.log(quantiles + np.exp(cutoff))
            x[x > 0] = 0
    return x - _logsumexp(x), k


#: rows smoothed together by `smooth_rows` (bounds its (rows, grid, tail) work array)
ROWS_AT_ONCE = 128


def smooth_rows(log_weights: np.ndarray, r_eff: float = 1.0, overwrite: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """`smooth` of every row of a (units, S) array: rows whose tail is the usual one (its length's largest
    values all above the cutoff) are smoothed together, only their tails sorted; the others (ties at the
    cutoff) one by one. With `overwrite` (a float array the caller no longer needs) the result is made in
    `log_weights` itself, without a copy of its size."""
    x = log_weights if overwrite and log_weights.dtype == float else np.array(log_weights, dtype=float)
    if x is log_weights:
        log_weights = None  # the rows that `smooth` takes one by one are copied before they change
    x -= x.max(axis=1, keepdims=True)
    units, n = x.shape
    length = tail_length(n, r_eff)
    k = np.full(units, np.inf)
    if length + 1 > n:  # too few draws for a tail: as `smooth` does it
        return np.array([smooth(row, r_eff)[0] for row in log_weights]), k
    top = np.argpartition(x, n - length - 1, axis=1)[:, n - length - 1:]  # the length + 1 largest, unordered
    top = np.take_along_axis(top, np.argsort(np.take_along_axis(x, top, axis=1), axis=1), axis=1)
    ordered = np.take_along_axis(x, top, axis=1)  # ascending: the cutoff, then the tail
    cutoff = np.maximum(ordered[:, 0], np.log(np.finfo(float).tiny))
    regular = (ordered[:, 1:] > cutoff[:, None]).all(axis=1) & (length > 4)
    for i in np.flatnonzero(~regular):
        x[i], k[i] = smooth(x[i] if log_weights is None else log_weights[i], r_eff)
    probs = np.arange(0.5, length) / length
    rows = np.flatnonzero(regular)
    for start in range(0, rows.size, ROWS_AT_ONCE):
        chunk = rows[start:start + ROWS_AT_ONCE]
        k_chunk, sigma = gpd_fit_rows(np.exp(ordered[chunk, 1:]) - np.exp(cutoff[chunk])[:, None])
        k[chunk] = k_chunk
        done = np.isfinite(k_chunk)
        fitted = chunk[done]
        tail = np.log(_gpd_quantiles(probs[None, :], k_chunk[done, None], sigma[done, None])
                      + np.exp(cutoff[fitted])[:, None])
        smoothed = x[fitted]
        np.put_along_axis(smoothed, top[fitted, 1:], tail, axis=1)
        x[fitted] = np.minimum(smoothed, 0)
        x[chunk] -= _logsumexp(x[chunk], axis=1)[:, None]
    return x, k


def _logsumexp(x: np.ndarray, axis=None) -> np.ndarray:
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    shifted = np.subtract(x, top)
    out = np.log(np.sum(np.exp(shifted, out=shifted), axis=axis, keepdims=True)) + top
    return np.squeeze(out, axis=axis) if axis is not None else out.item()


def relative_efficiency(posterior_arrays, n_samples: int) -> float:
    """r_eff: the mean ESS of the mean over every element of every posterior variable ((chain, draw, ...)
    arrays), over the number of draws; 1 for a single chain (draws taken as independent)."""
    arrays = [np.asarray(a, dtype=float) for a in posterior_arrays]
    if not arrays or arrays[0].shape[0] == 1:
        return 1.0
    ess = [draw_stats.ess_mean_columns(values.reshape(values.shape[0], values.shape[1], -1)) for values in arrays]
    return float(np.mean(np.concatenate(ess)) / n_samples)


@dataclass
class Loo:
    """A PSIS-LOO result, read as ArviZ's `ELPDData` is read (`elpd_loo`, `se`, `p_loo`, `pareto_k`,
    `good_k`); `loo_i` and `pareto_k` are shaped like the units."""

    elpd_loo: float
    se: float
    p_loo: float
    n_samples: int
    n_data_points: int
    good_k: float
    loo_i: np.ndarray
    pareto_k: np.ndarray

    @property
    def warning(self) -> bool:
        return bool(np.any(self.pareto_k > self.good_k))


def loo(log_likelihood: np.ndarray, r_eff: float = 1.0) -> Loo:
    """PSIS-LOO of pointwise log-likelihood draws shaped (chain, draw, *units)."""
    values = np.asarray(log_likelihood, dtype=float)
    units = values.shape[2:]
    # (unit, sample), chain-major as ArviZ stacks, each unit's draws a contiguous row
    samples = np.ascontiguousarray(values.reshape(values.shape[0] * values.shape[1], -1).T)
    n_samples, n_units = samples.shape[1], samples.shape[0]
    log_weights, k = smooth_rows(np.negative(samples), r_eff, overwrite=True)
    log_weights += samples
    loo_i = _logsumexp(log_weights, axis=1)
    elpd = float(loo_i.sum())
    lppd = float(np.sum(_logsumexp(samples, axis=1) - np.log(n_samples)))
    return Loo(elpd_loo=elpd, se=float((n_units * np.var(loo_i)) ** 0.5), p_loo=lppd - elpd, n_samples=n_samples,
               n_data_points=n_units, good_k=good_k(n_samples), loo_i=loo_i.reshape(units),
               pareto_k=k.reshape(units))
