"""The baselines of seed 000 on the grouped count table: naive, moments, EM, half-sampling.

All work on the I x K sufficient statistics of `GroupedCounts`, which give
the same answers as the per-click formulas of the paper (every click of
group i in bin k has the same E-step responsibility).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.maths.wsc import naive_emissions


def naive_rho(data: GroupedCounts, mu: np.ndarray | None = None) -> np.ndarray:
    """The direct estimate (eq. 3.1): every click of group i counts as sigmoid(mu_i) happy,
    with one pseudo-observation per bin. `mu` defaults to HE."""
    p = expit(data.he if mu is None else mu)
    return (1.0 + p @ data.counts) / (2.0 + data.counts.sum(axis=0))


def moments_rho(data: GroupedCounts) -> np.ndarray:
    """Method of moments (eq. 3.3): least squares of sigmoid(HE_i) on the bin shares of group i.

    Returned unclipped: values outside [0, 1] are the method's known failure
    (seed 000, Sec. 5 and 7.2) and are shown as they are.
    """
    totals = data.counts.sum(axis=1)
    used = totals > 0
    omega = data.counts[used] / totals[used, None]
    rho, *_ = np.linalg.lstsq(omega, expit(data.he[used]), rcond=None)
    return rho


@dataclass
class EMResult:
    rho: np.ndarray
    w0: np.ndarray
    w1: np.ndarray
    mu: np.ndarray
    pi: float
    iterations: int
    converged: bool


def em_fit(
    data: GroupedCounts,
    wh: float = 10.0,
    *,
    pseudo_count: float = 1.0,
    max_iter: int = 2000,
    tol: float = 1e-9,
    newton_steps: int = 50,
) -> EMResult:
    """EM of seed 000, Sec. 4 (eq. 4.1-4.8) with a flat prior on mu, on the count table.

    wh = inf keeps mu at HE; wh = 0 uses HE only to initialize. The M-step for
    mu solves eq. 4.7 by safeguarded Newton iterations. `pseudo_count` = 1 is
    the paper's "+1" smoothing, which is the MAP under Dirichlet(2) priors.
    """
    counts, he = data.counts, data.he
    totals = counts.sum(axis=1)
    mu = he.copy()
    w0, w1 = naive_emissions(data, pseudo_count)
    converged = False
    for iteration in range(1, max_iter + 1):
        p = expit(mu)[:, None]
        joint1 = p * w1
        z = joint1 / (joint1 + (1.0 - p) * w0)  # eq. 4.5, one value per (group, bin) cell
        happy_cells = counts * z
        happy = happy_cells.sum(axis=0)
        sad = counts.sum(axis=0) - happy
        new_w1 = (pseudo_count + happy) / (pseudo_count * data.n_bins + happy.sum())
        new_w0 = (pseudo_count + sad) / (pseudo_count * data.n_bins + sad.sum())
        if np.isfinite(wh):
            mu = _solve_mu(mu, he, wh, totals, happy_cells.sum(axis=1), newton_steps)
        change = max(np.abs(new_w1 - w1).max(), np.abs(new_w0 - w0).max())
        w0, w1 = new_w0, new_w1
        if change < tol:
            converged = True
            break
    pi = float(np.sum(totals * expit(mu)) / totals.sum())
    rho = pi * w1 / (pi * w1 + (1.0 - pi) * w0)
    return EMResult(rho, w0, w1, mu, pi, iteration, converged)


def _solve_mu(mu, he, wh, totals, happy, steps):
    """Root of wh (mu - HE) + N sigmoid(mu) - S = 0 (eq. 4.7), monotone in mu, by Newton.

    With wh = 0 the root is logit(S / N), clipped to keep it finite.
    """
    if wh == 0:
        share = np.clip(happy / np.maximum(totals, 1e-300), 1e-9, 1 - 1e-9)
        return np.log(share) - np.log1p(-share)
    for _ in range(steps):
        p = expit(mu)
        f = wh * (mu - he) + totals * p - happy
        step = f / (wh + totals * p * (1 - p))
        mu = mu - np.clip(step, -5.0, 5.0)
        if np.abs(step).max() < 1e-12:
            break
    return mu


def em_log_posterior(data: GroupedCounts, mu, w0, w1, wh: float, pseudo_count: float = 1.0) -> float:
    """The objective EM climbs: the marginal log-likelihood plus HE and Dirichlet(1 + pseudo) terms."""
    p = expit(mu)[:, None]
    value = float(np.sum(data.counts * np.log((1 - p) * w0 + p * w1)))
    if np.isfinite(wh):
        value -= 0.5 * wh * float(np.sum((mu - data.he) ** 2))
    return value + pseudo_count * float(np.sum(np.log(w0)) + np.sum(np.log(w1)))


def half_sample_se(
    data: GroupedCounts,
    estimator: Callable[[GroupedCounts], np.ndarray],
    *,
    n_reps: int = 50,
    seed: int | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Grouped half-sampling (Sec. 4): refit on I/2 groups drawn without replacement.

    Returns the replicate estimates (n_reps, K) and their standard deviation,
    which is the standard error of the full-sample estimate: a half-sample
    without replacement has the finite-population factor (N - N/2) / (N - 1),
    which cancels the doubled variance of a sample half the size.
    """
    rng = np.random.default_rng(seed)
    half = data.n_groups // 2
    reps = np.stack([estimator(data.subset(np.sort(rng.choice(data.n_groups, half, replace=False))))
                     for _ in range(n_reps)])
    return reps, reps.std(axis=0, ddof=1)
