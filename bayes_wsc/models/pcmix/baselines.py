"""Seed 003's reference algorithms for the supervised Gaussian mixture, in NumPy.

* `ml_rep_em`: maximum likelihood with label replication ("ML+rep", Sec. 2.3,
  eq. 10): the symmetric joint likelihood with every label's factor raised to
  the power lam, fitted by EM from several starts, the best objective kept.
  With lam = 0 (or no labels) it is the ordinary unsupervised mixture, and at
  lam = 1 its objective is the PC objective at lam = 1.
* `pc_objective` and `log_prior`: the prediction-constrained objective
  (eq. 9, 22-23) and the priors, evaluated directly; the tests and the
  benchmarks score any set of parameters with them.
* `random_starts` (`maths/pcmix.py`, shared with the model): where both
  ML+rep and PC training start: one k-means solution and random draws from
  reasonable ranges (Sec. 3.1).

Everything works on the standardized features of `LabeledItems`, where the
weakly informative priors are set. The priors are those of the PyMC model
(`maths.pcmix.Priors`), so that ML+rep and PC differ in their objective only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import gammaln, logsumexp

from bayes_wsc.data.labeled import LabeledItems
from bayes_wsc.maths import logsumexp as fast_logsumexp
from bayes_wsc.maths.pcmix import LOG_2PI, Params, Priors, check_lam, component_logp, label_logp, random_starts


# ---------------------------------------------------------------------- densities
def item_logps(data: LabeledItems, params: Params) -> tuple[np.ndarray, np.ndarray]:
    """Per-item log p(x_d) and log p(y_d | x_d) (0 for unlabeled items), eq. 22-23."""
    joint = np.log(params.pi)[None] + component_logp(data.x, params.mean, params.sd)
    log_px = logsumexp(joint, axis=1)
    return log_px, logsumexp(joint + label_logp(data.onehot, params.rho), axis=1) - log_px


def pc_objective(data: LabeledItems, params: Params, lam: float) -> dict[str, float]:
    """The PC objective sum_d log p(x_d) + lam sum_{labeled d} log p(y_d | x_d) and its two terms."""
    log_px, log_py = item_logps(data, params)
    return {"data_loglik": float(log_px.sum()), "label_loglik": float(log_py.sum()),
            "objective": float(log_px.sum() + lam * log_py.sum())}


def data_nll_per_item(data: LabeledItems, params: Params) -> float:
    """-sum_d log p(x_d) / N in the data's units (the features were standardized by their scale)."""
    return float(-item_logps(data, params)[0].mean() + np.log(data.scale).sum())


def log_prior(params: Params, priors: Priors = Priors()) -> float:
    """log p0(xi) with every normalizing constant, as PyMC computes it (no Jacobian)."""
    a_pi, a_rho = priors.pi_concentration, priors.rho_concentration
    components, n_classes = params.rho.shape
    total = _log_dirichlet(params.pi, a_pi)
    total += sum(_log_dirichlet(r, a_rho) for r in params.rho)  # Beta(a, a) when there are 2 classes
    total += np.sum(-0.5 * (params.mean / priors.mean_sd) ** 2) - params.mean.size * (
        np.log(priors.mean_sd) + 0.5 * LOG_2PI)
    excess = params.sd - priors.sd_floor
    a, b = priors.sd_shape, priors.sd_rate
    total += np.sum((a - 1) * np.log(excess) - b * excess) + excess.size * (a * np.log(b) - gammaln(a))
    return float(total)


def _log_dirichlet(p: np.ndarray, concentration: float) -> float:
    k = p.size
    return float((concentration - 1) * np.sum(np.log(p)) + gammaln(k * concentration) - k * gammaln(concentration))


def predict_proba(data_x: np.ndarray, params: Params) -> tuple[np.ndarray, np.ndarray]:
    """(n, K) cluster probabilities p(z | x) and (n, C) label probabilities p(y | x)."""
    joint = np.log(params.pi)[None] + component_logp(data_x, params.mean, params.sd)
    resp = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
    return resp, resp @ params.rho


def error_rate(data: LabeledItems, params: Params, y: np.ndarray | None = None) -> float:
    """Share of labeled items (or of the codes `y`, -1 skipped) whose most probable class is wrong."""
    y = data.y if y is None else np.asarray(y)
    known = y >= 0
    if not known.any():
        return float("nan")
    _, proba = predict_proba(data.x[known], params)
    return float(np.mean(proba.argmax(axis=1) != y[known]))


# ---------------------------------------------------------------------- ML+rep by EM
@dataclass
class EMResult:
    """The best of several EM runs, with every run's final objective (its basins)."""

    params: Params
    objective: float
    converged: bool
    iterations: int
    restart_objectives: list[float] = field(default_factory=list)
    restart_params: list[Params] = field(default_factory=list)


def ml_rep_objective(data: LabeledItems, params: Params, lam: float, priors: Priors = Priors()) -> float:
    """Eq. 10 with R = -log prior: sum_d log sum_k pi_k f(x_d | k) g(y_d | k)^lam + log p0(xi)."""
    joint = (np.log(params.pi)[None] + component_logp(data.x, params.mean, params.sd)
             + lam * label_logp(data.onehot, params.rho))
    return float(logsumexp(joint, axis=1).sum() + log_prior(params, priors))


def _sd_step(n_k: np.ndarray, ss: np.ndarray, old: np.ndarray, priors: Priors) -> np.ndarray:
    """Maximize h(s) = -N log s - S / (2 s^2) + (a - 1) log(s - f) - b (s - f) over s > f, elementwise.

    Safeguarded Newton on h'(s) = 0 inside a bracket [lo, hi] with h'(lo) > 0 > h'(hi); the step is
    kept only where it does not lower h (so that EM stays monotone).
    """
    a, b, f = priors.sd_shape, priors.sd_rate, priors.sd_floor

    def h(s):
        return -n_k * np.log(s) - ss / (2 * s**2) + (a - 1) * np.log(s - f) - b * (s - f)

    def dh(s):
        return -n_k / s + ss / s**3 + (a - 1) / (s - f) - b

    def d2h(s):
        return n_k / s**2 - 3 * ss / s**4 - (a - 1) / (s - f) ** 2

    lo = np.full_like(old, f + 1e-12)
    hi = np.maximum(2.0 * np.sqrt(ss / np.maximum(n_k, 1e-12)), 1.0) + 2 * f
    for _ in range(200):
        up = dh(hi) > 0
        if not up.any():
            break
        lo, hi = np.where(up, hi, lo), np.where(up, 2 * hi, hi)
    s = np.clip(old, lo, hi)
    for _ in range(100):
        slope = dh(s)
        lo, hi = np.where(slope > 0, s, lo), np.where(slope > 0, hi, s)
        curvature = d2h(s)
        newton = s - slope / np.where(curvature < 0, curvature, -np.inf)
        inside = (newton > lo) & (newton < hi) & (curvature < 0)
        new = np.where(inside, newton, 0.5 * (lo + hi))
        if np.all(np.abs(new - s) <= 1e-12 * np.maximum(s, 1e-300)):
            s = new
            break
        s = new
    return np.where(h(s) >= h(old), s, old)


def _em_run(data: LabeledItems, start: Params, lam: float, priors: Priors, max_iter: int,
            tol: float) -> tuple[Params, float, bool, int]:
    params = start.copy()
    params.sd = np.maximum(params.sd, priors.sd_floor * 1.01)
    onehot, labeled, x, x2 = data.onehot, data.labeled.astype(float), data.x, data.x**2
    n, components = data.n_items, params.pi.size
    a_pi, a_rho, tau2 = priors.pi_concentration, priors.rho_concentration, priors.mean_sd**2
    previous, converged, iteration = -np.inf, False, 0
    while True:
        joint = (np.log(params.pi)[None] + component_logp(x, params.mean, params.sd)
                 + lam * label_logp(onehot, params.rho))
        per_item = fast_logsumexp(joint, axis=1)
        current = float(per_item.sum() + log_prior(params, priors))
        if abs(current - previous) <= tol * max(1.0, abs(current)):
            converged = True
            break
        if iteration == max_iter:
            break
        previous = current
        iteration += 1
        resp = np.exp(joint - per_item[:, None])  # E-step
        n_k = resp.sum(axis=0)
        params.pi = (n_k + a_pi - 1) / (n + components * (a_pi - 1))
        weighted = resp.T @ x  # (K, D)
        params.mean = weighted / (n_k[:, None] + params.sd**2 / tau2)  # ECM: given the current sd
        ss = resp.T @ x2 - 2 * params.mean * weighted + n_k[:, None] * params.mean**2
        params.sd = _sd_step(n_k[:, None] * np.ones_like(ss), np.maximum(ss, 0.0), params.sd, priors)
        label_counts = lam * (resp.T @ onehot)  # (K, C): labels replicated lam times
        params.rho = (label_counts + a_rho - 1) / (lam * (resp.T @ labeled)[:, None]
                                                   + data.n_classes * (a_rho - 1))
    return params, current, converged, iteration


def ml_rep_em(
    data: LabeledItems,
    components: int = 2,
    lam: float = 1.0,
    *,
    restarts: int = 10,
    seed: int | None = 0,
    priors: Priors = Priors(),
    starts: list[Params] | None = None,
    max_iter: int = 5000,
    tol: float = 1e-10,
) -> EMResult:
    """ML+rep (Sec. 2.3, eq. 10) by EM: the E-step weighs cluster k for item d by
    pi_k f(x_d | k) g(y_d | k)^lam; the M-steps are closed form (the sd step solves
    a one-dimensional equation under the weak Gamma prior). The best objective
    over `restarts` starts (those of `random_starts` unless `starts` is given) wins.
    """
    lam = check_lam(lam)
    starts = random_starts(data, components, restarts, seed) if starts is None else list(starts)
    runs = [_em_run(data, s, lam, priors, max_iter, tol) for s in starts]
    best = int(np.argmax([r[1] for r in runs]))
    params, objective, converged, iterations = runs[best]
    return EMResult(params, objective, converged, iterations, [float(r[1]) for r in runs], [r[0] for r in runs])
