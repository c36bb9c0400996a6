"""ArviZ's summary statistics of posterior draws, in NumPy: what `bayes-wsc summary` and `predict`
print without importing ArviZ (4-5 s of its plotting stack, longer than the rest of either command).

The arithmetic is ArviZ 0.23's, step by step (`arviz.stats.diagnostics`, Vehtari et al. 2021,
"Rank-normalization, folding, and localization: an improved R-hat"): the HDI of the flattened
draws, rank-normalized split R-hat (the larger of bulk and folded), bulk and tail ESS (Geyer's
initial monotone sequence on FFT autocovariances), and the Monte Carlo standard errors of the
mean and sd; `tests/test_draw_stats.py` holds them to `az.summary` and `az.hdi` of either ArviZ family
(ArviZ 1's summary takes tail ESS at the quantiles of its ci_prob, 0.11 and 0.89 by default; this module
keeps Vehtari et al.'s 0.05 and 0.95, which ArviZ 1 gives with `ess(method="tail", prob=0.95)`). Ranks come from NumPy
and the normal quantile from the standard library (`blom_quantiles`), not `scipy.stats` (0.8-1.2 s to import) or
`scipy.special` (0.15 s); the FFT padding is computed
here rather than by `scipy.fft.next_fast_len` (importing `scipy.fft` took 0.5-1.4 s, most of a summary's start).
"""

from __future__ import annotations

import functools

import numpy as np

#: the order and names of `az.summary`'s columns after the HDI (kind="all", stat_focus="mean")
DIAGNOSTICS = ("mcse_mean", "mcse_sd", "ess_bulk", "ess_tail", "r_hat")


def next_fast_len(target: int) -> int:
    """The smallest 2^a 3^b 5^c >= target: an FFT length NumPy transforms quickly. Any length of at least twice
    the draws gives the same (unwrapped) autocovariances; ArviZ's `scipy.fft.next_fast_len` also allows 7 and
    11, so the padding may differ from its by a few zeros, not the result."""
    best = 1 << max(int(target) - 1, 0).bit_length()  # a power of two is always a candidate
    power5 = 1
    while power5 < best:
        power35 = power5
        while power35 < best:
            power235 = power35 << max(0, (-(-int(target) // power35) - 1).bit_length())  # times 2^a, the first >= target
            best = min(best, power235)
            power35 *= 3
        power5 *= 5
    return best


def hdi(samples: np.ndarray, prob: float) -> np.ndarray:
    """`az.hdi` (unimodal) of every column of a (draws, n) array: (n, 2), the narrowest interval
    holding floor(prob * draws) + 1 sorted draws, the first such when several tie."""
    return hdi_of_sorted_rows(np.sort(np.asarray(samples, dtype=float), axis=0).T, prob)


def hdi_of_rows(rows: np.ndarray, prob: float) -> np.ndarray:
    """`hdi` of every row of a (n, draws) float array, which it sorts in place: (n, 2). For a caller that
    builds its draws row by row, contiguous in the draws, and no longer needs them unsorted (no copy)."""
    rows.sort(axis=1)
    return hdi_of_sorted_rows(rows, prob)


def hdi_of_sorted_rows(ordered: np.ndarray, prob: float) -> np.ndarray:
    """`hdi` of every row of a (n, draws) array whose rows are sorted."""
    n = ordered.shape[1]
    inside = int(np.floor(prob * n))
    if n - inside < 1:
        raise ValueError("Too few elements for interval calculation.")
    width = ordered[:, inside:] - ordered[:, :n - inside]
    start = np.argmin(width, axis=1)
    rows = np.arange(ordered.shape[0])
    return np.stack([ordered[rows, start], ordered[rows, start + inside]], axis=-1)


def hdi_columns(prob: float) -> tuple[str, str]:
    """The names `az.summary` gives the bounds of a `prob` HDI: hdi_3%, hdi_97% for 0.94."""
    alpha = 1 - prob
    return f"hdi_{100 * alpha / 2:g}%", f"hdi_{100 * (1 - alpha / 2):g}%"


def chain_statistics(draws: np.ndarray) -> tuple[float, float, float, float, float]:
    """mcse_mean, mcse_sd, ess_bulk, ess_tail and r_hat of one scalar's (chain, draw) draws, as
    `az.summary` computes them (NaN with fewer than 4 draws or any NaN; R-hat NaN for one chain)."""
    ary = np.atleast_2d(np.asarray(draws, dtype=float))
    rhat, ess_bulk, ess_tail = convergence_statistics(ary)
    if np.isnan(ess_bulk):
        return (np.nan,) * 5
    ess_mean = _ess(_split_chains(ary))
    sims_c2 = (ary - ary.mean()) ** 2
    total = sims_c2.sum()
    mcse_mean = np.sqrt(total / (sims_c2.size - 1) / ess_mean)
    evar = total / sims_c2.size
    varvar = ((sims_c2 ** 2).mean() - evar ** 2) / _ess(_split_chains(sims_c2))
    mcse_sd = np.sqrt(varvar / evar / 4)
    return float(mcse_mean), float(mcse_sd), float(ess_bulk), float(ess_tail), float(rhat)


def convergence_statistics(draws: np.ndarray) -> tuple[float, float, float]:
    """Rank-normalized split R-hat (the larger of bulk and folded), bulk ESS and tail ESS of one scalar's
    (chain, draw) draws (NaN with fewer than 4 draws or any NaN; R-hat NaN for one chain)."""
    ary = np.atleast_2d(np.asarray(draws, dtype=float))
    if np.isnan(ary).any() or ary.shape[1] < 4:
        return (np.nan,) * 3
    z_split = _z_scale(_split_chains(ary))
    low, high = np.quantile(ary, [0.05, 0.95])
    ess_tail = min(_ess(_split_chains(ary <= low)), _ess(_split_chains(ary <= high)))
    if ary.shape[0] < 2:
        rhat = np.nan
    else:
        folded = np.abs(ary - np.median(ary))
        rhat = max(_rhat(z_split), _rhat(_z_scale(_split_chains(folded))))
    return float(rhat), float(_ess(z_split)), float(ess_tail)


def chain_statistics_columns(draws: np.ndarray) -> np.ndarray:
    """`chain_statistics` of every column of (chain, draw, m) draws at once, (m, 5) in `DIAGNOSTICS`' order: the
    same arithmetic, the ranks, quantiles and Geyer's sequences (`_ess_columns`) of all columns together, without
    a Python call per element (most of the time is the FFTs either way); equal to float rounding."""
    ary, out, valid = _usable_columns(draws, 5)
    if not valid.size:
        return out
    out[valid, 4], out[valid, 2], out[valid, 3] = convergence_statistics_columns(ary).T
    centred = ary - ary.reshape(-1, ary.shape[2]).mean(axis=0)
    sims_c2 = centred**2
    total = sims_c2.sum(axis=(0, 1))
    out[valid, 0] = np.sqrt(total / (sims_c2[:, :, 0].size - 1) / _ess_split_columns(_split_chains(ary)))
    evar = total / sims_c2[:, :, 0].size
    varvar = ((sims_c2**2).mean(axis=(0, 1)) - evar**2) / _ess_split_columns(_split_chains(sims_c2))
    out[valid, 1] = np.sqrt(varvar / evar / 4)
    out[np.isnan(out[:, 2])] = np.nan
    return out


def _usable_columns(draws: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The columns of (chain, draw, m) draws that have statistics (no NaN, at least 4 draws), an (m, width) table of
    NaN for them, and their indices (none with fewer than 4 draws)."""
    ary = np.asarray(draws, dtype=float)
    out = np.full((ary.shape[2], width), np.nan)
    valid = np.flatnonzero(~np.isnan(ary).any(axis=(0, 1))) if ary.shape[1] >= 4 else np.array([], dtype=int)
    return ary[:, :, valid], out, valid


def convergence_statistics_columns(draws: np.ndarray) -> np.ndarray:
    """`convergence_statistics` of every column of (chain, draw, m) draws at once: (m, 3), R-hat, bulk ESS,
    tail ESS."""
    ary, out, valid = _usable_columns(draws, 3)
    if not valid.size:
        return out
    flat = ary.reshape(-1, ary.shape[2])
    z_split = _z_scale_columns(_split_chains(ary))
    low, high = np.quantile(flat, [0.05, 0.95], axis=0)
    out[valid, 2] = np.minimum(_ess_split_columns(_split_chains(ary <= low)),
                               _ess_split_columns(_split_chains(ary <= high)))
    out[valid, 1] = _ess_split_columns(z_split)
    if ary.shape[0] >= 2:
        folded = np.abs(ary - np.median(flat, axis=0))
        out[valid, 0] = np.maximum(_rhat_columns(z_split), _rhat_columns(_z_scale_columns(_split_chains(folded))))
    return out


def waic(log_likelihood: np.ndarray) -> tuple[float, float, float, np.ndarray, bool]:
    """WAIC of a (draws, units) pointwise log-likelihood on the log scale, as `az.waic` computes it:
    elpd_waic, its standard error, p_waic, the per-unit elpd, and whether any unit's posterior variance
    of the log-likelihood exceeds 0.4 (Vehtari, Gelman and Gabry 2017: WAIC may then be unreliable)."""
    values = np.asarray(log_likelihood, dtype=float)
    draws = values.shape[0]
    top = values.max(axis=0)
    lppd_i = top + np.log(np.exp(values - top).sum(axis=0)) - np.log(draws)
    variance = values.var(axis=0)  # over draws, ddof 0, as ArviZ (R's loo divides by S - 1)
    elpd_i = lppd_i - variance
    se = float(np.sqrt(elpd_i.size * np.var(elpd_i)))
    return float(elpd_i.sum()), se, float(variance.sum()), elpd_i, bool(np.any(variance > 0.4))


def ess_mean(draws: np.ndarray) -> float:
    """ESS of the mean of one scalar's (chain, draw) draws (`az.ess(method="mean")`; NaN with fewer
    than 4 draws or any NaN): what PSIS-LOO's relative efficiency averages (`psis.py`)."""
    ary = np.atleast_2d(np.asarray(draws, dtype=float))
    if np.isnan(ary).any() or ary.shape[1] < 4:
        return np.nan
    return _ess(_split_chains(ary))


def ess_mean_columns(draws: np.ndarray) -> np.ndarray:
    """`ess_mean` of every column of (chain, draw, m) draws at once: the same arithmetic, with Geyer's
    sequences run on all columns together (a posterior of thousands of elements in a fraction of a second)."""
    ary = np.asarray(draws, dtype=float)
    out = np.full(ary.shape[2], np.nan)
    if ary.shape[1] < 4:
        return out
    return _ess_split_columns(_split_chains(ary))


def _ess_split_columns(split: np.ndarray) -> np.ndarray:
    """`_ess` of every column of split (chain, draw, m) draws: NaN for a column with NaN, the number of draws for
    a constant one."""
    split = np.asarray(split, dtype=float)
    out = np.full(split.shape[2], np.nan)
    valid = ~np.isnan(split).any(axis=(0, 1))
    constant = valid & ((split.max(axis=(0, 1)) - split.min(axis=(0, 1))) < np.finfo(float).resolution)
    out[constant] = split.shape[0] * split.shape[1]
    varying = np.flatnonzero(valid & ~constant)
    if varying.size:
        out[varying] = _ess_columns(split[:, :, varying])
    return out


def _ess_columns(ary: np.ndarray) -> np.ndarray:
    """`_ess` of every column of a (chain, draw, m) array."""
    n_chain, n_draw, m = ary.shape
    by_column = np.ascontiguousarray(np.moveaxis(ary, 2, 0))  # (m, chain, draw): FFTs along contiguous rows
    centred = by_column - by_column.mean(axis=2, keepdims=True)
    size = next_fast_len(2 * n_draw)
    transformed = np.fft.rfft(centred, n=size, axis=2)
    transformed *= np.conjugate(transformed)
    acov = np.fft.irfft(transformed, n=size, axis=2)[:, :, :n_draw] / n_draw  # (m, chain, lag)
    mean_var = np.mean(acov[:, :, 0], axis=1) * n_draw / (n_draw - 1.0)
    var_plus = mean_var * (n_draw - 1.0) / n_draw
    if n_chain > 1:
        var_plus = var_plus + np.var(by_column.mean(axis=2), axis=1, ddof=1)
    rho = np.zeros((n_draw, m))
    rho[0] = 1.0
    rho_even = np.ones(m)
    rho_odd = 1.0 - (mean_var - np.mean(acov[:, :, 1], axis=1)) / var_plus
    rho[1] = rho_odd
    mean_acov = acov.mean(axis=1).T  # (lag, m)
    t_end = np.ones(m, dtype=int)  # each column's t when its initial positive sequence stopped
    active = (rho_even + rho_odd) > 0.0
    t = 1
    while t < (n_draw - 3) and active.any():  # Geyer's initial positive sequence, columns in step
        even = 1.0 - (mean_var - mean_acov[t + 1]) / var_plus
        odd = 1.0 - (mean_var - mean_acov[t + 2]) / var_plus
        rho_even, rho_odd = np.where(active, even, rho_even), np.where(active, odd, rho_odd)
        keep = active & ((even + odd) >= 0)
        rho[t + 1], rho[t + 2] = np.where(keep, even, rho[t + 1]), np.where(keep, odd, rho[t + 2])
        t_end[active] = t + 2
        active &= (rho_even + rho_odd) > 0.0
        t += 2
    max_t = t_end - 2
    columns = np.arange(m)
    positive = rho_even > 0
    rho[max_t[positive] + 1, columns[positive]] = rho_even[positive]
    t = 1
    while t <= max_t.max() - 2:  # Geyer's initial monotone sequence
        step = (t <= max_t - 2) & ((rho[t + 1] + rho[t + 2]) > (rho[t - 1] + rho[t]))
        mean_pair = (rho[t - 1] + rho[t]) / 2.0
        rho[t + 1] = np.where(step, mean_pair, rho[t + 1])
        rho[t + 2] = np.where(step, mean_pair, rho[t + 2])
        t += 2
    ess = n_chain * n_draw
    lags = np.arange(n_draw)[:, None]
    following = np.where(max_t + 1 < n_draw, rho[np.minimum(max_t + 1, n_draw - 1), columns], 0.0)
    tau = -1.0 + 2.0 * np.sum(np.where(lags <= max_t, rho, 0.0), axis=0) + following
    tau = np.maximum(tau, 1 / np.log10(ess))
    return np.where(np.isnan(rho).any(axis=0), np.nan, ess / tau)


def _split_chains(ary: np.ndarray) -> np.ndarray:
    half = ary.shape[1] // 2
    return np.vstack((ary[:, :half], ary[:, -half:]))


def average_ranks(ary: np.ndarray) -> np.ndarray:
    """1-based ranks of every value, ties given their average rank (`scipy.stats.rankdata`)."""
    _, inverse, counts = np.unique(ary.ravel(), return_inverse=True, return_counts=True)
    last = np.cumsum(counts)
    return (last - (counts - 1) / 2)[inverse.ravel()].reshape(ary.shape)


def _z_scale(ary: np.ndarray) -> np.ndarray:
    """Rank-normalized values: the normal quantile of Blom's (rank - 3/8) / (n + 1/4)."""
    return blom_quantiles(ary.size)[(2 * average_ranks(ary)).astype(np.int64) - 2]


@functools.lru_cache(maxsize=16)
def blom_quantiles(n: int) -> np.ndarray:
    """The normal quantile of Blom's (r - 3/8) / (n + 1/4) at every rank r = 1, 1.5, 2, ..., n that n values can
    have (ties take the average of their ranks, a whole or half number): a table that rank normalization
    looks its values up in. The quantiles are the standard library's (`statistics.NormalDist.inv_cdf`,
    Wichura's AS241), within 1e-15 of `scipy.special.ndtri`, whose import cost a summary 0.15 s."""
    from statistics import NormalDist

    c = 3 / 8
    quantile = NormalDist().inv_cdf
    return np.array([quantile((r / 2 - c) / (n - 2 * c + 1)) for r in range(2, 2 * n + 1)])


def average_ranks_columns(ary: np.ndarray) -> np.ndarray:
    """`average_ranks` of each column of a (..., m) array, over all its other axes (each column sorted as a
    contiguous row)."""
    rows = np.ascontiguousarray(ary.reshape(-1, ary.shape[-1]).T)  # (m, n)
    n = rows.shape[1]
    order = np.argsort(rows, axis=1)
    ordered = np.take_along_axis(rows, order, axis=1)
    starts = np.ones(ordered.shape, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]  # a value's first position among its ties
    position = np.arange(n)
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=1)
    ends = np.ones(ordered.shape, dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    last = np.minimum.accumulate(np.where(ends, position, n)[:, ::-1], axis=1)[:, ::-1]
    ranks = np.empty(ordered.shape)
    np.put_along_axis(ranks, order, (first + last) / 2 + 1, axis=1)
    return ranks.T.reshape(ary.shape)


def _z_scale_columns(ary: np.ndarray) -> np.ndarray:
    """`_z_scale` of each column of a (chain, draw, m) array."""
    return blom_quantiles(ary[:, :, 0].size)[(2 * average_ranks_columns(ary)).astype(np.int64) - 2]


def _rhat_columns(ary: np.ndarray) -> np.ndarray:
    """`_rhat` of each column of a (chain, draw, m) array without NaN."""
    n = ary.shape[1]
    between = n * np.var(ary.mean(axis=1), axis=0, ddof=1)
    within = np.mean(np.var(ary, axis=1, ddof=1), axis=0)
    return np.sqrt((between / within + n - 1) / n)


def _rhat(ary: np.ndarray) -> float:
    ary = np.asarray(ary, dtype=float)
    if np.isnan(ary).any():
        return np.nan
    n = ary.shape[1]
    between = n * np.var(ary.mean(axis=1), ddof=1)
    within = np.mean(np.var(ary, axis=1, ddof=1))
    return float(np.sqrt((between / within + n - 1) / n))


def _autocov(ary: np.ndarray) -> np.ndarray:
    n = ary.shape[1]
    m = next_fast_len(2 * n)
    centred = ary - ary.mean(axis=1, keepdims=True)
    transformed = np.fft.rfft(centred, n=m, axis=1)
    transformed *= np.conjugate(transformed)
    return np.fft.irfft(transformed, n=m, axis=1)[:, :n] / n


def _ess(ary: np.ndarray) -> float:
    """Effective sample size of (chain, draw) draws: Geyer's initial monotone sequence."""
    ary = np.asarray(ary, dtype=float)
    if np.isnan(ary).any():
        return np.nan
    if (np.max(ary) - np.min(ary)) < np.finfo(float).resolution:
        return ary.size
    n_chain, n_draw = ary.shape
    acov = _autocov(ary)
    mean_var = np.mean(acov[:, 0]) * n_draw / (n_draw - 1.0)
    var_plus = mean_var * (n_draw - 1.0) / n_draw
    if n_chain > 1:
        var_plus += np.var(ary.mean(axis=1), ddof=1)
    rho = np.zeros(n_draw)
    rho_even = 1.0
    rho[0] = rho_even
    rho_odd = 1.0 - (mean_var - np.mean(acov[:, 1])) / var_plus
    rho[1] = rho_odd
    mean_acov = acov.mean(axis=0)
    t = 1
    while t < (n_draw - 3) and (rho_even + rho_odd) > 0.0:  # Geyer's initial positive sequence
        rho_even = 1.0 - (mean_var - mean_acov[t + 1]) / var_plus
        rho_odd = 1.0 - (mean_var - mean_acov[t + 2]) / var_plus
        if (rho_even + rho_odd) >= 0:
            rho[t + 1] = rho_even
            rho[t + 2] = rho_odd
        t += 2
    max_t = t - 2
    if rho_even > 0:
        rho[max_t + 1] = rho_even
    t = 1
    while t <= max_t - 2:  # Geyer's initial monotone sequence
        if (rho[t + 1] + rho[t + 2]) > (rho[t - 1] + rho[t]):
            rho[t + 1] = (rho[t - 1] + rho[t]) / 2.0
            rho[t + 2] = rho[t + 1]
        t += 2
    ess = n_chain * n_draw
    tau = -1.0 + 2.0 * np.sum(rho[:max_t + 1]) + np.sum(rho[max_t + 1:max_t + 2])
    tau = max(tau, 1 / np.log10(ess))
    return np.nan if np.isnan(rho).any() else ess / tau
