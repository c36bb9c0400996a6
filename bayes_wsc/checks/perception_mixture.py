"""Checks of the seeded mixture (`models/perception_mixture.py`): the perception model's checks, replicated
from the mixture's P(z | x) (`checks.perception`: the seeds' clusters drawn anew, and how often
neighbouring seeds share one), and its log-likelihood per item recomputed from the draws."""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from bayes_wsc.checks.perception import replicate, rows, targeted, variates  # noqa: F401  (the same checks)


def parameters(posterior) -> list[str]:
    return [name for name in ("A", "B", "sd", "pi", "pi_group") if name in posterior]


def default_log_likelihood(est, data, params: dict) -> np.ndarray:
    """Per item (S, n): log p(x_i) for an item that is no seed, log p(x_i) + lam (log p(x_i, z_i in S_i)
    - log p(x_i)) for a seed, in NumPy (lam = `seed_weight`; 1: log p(x_i, z_i in S_i))."""
    from bayes_wsc.models.perception_mixture import joint_log_density_np

    A = np.asarray(params["A"], dtype=float)
    pi_group = np.asarray(params["pi_group"], dtype=float) if "pi_group" in params else np.ones((A.shape[0], 1))
    joint = joint_log_density_np(data.features, A, np.asarray(params["B"], dtype=float),
                                 np.asarray(params["sd"], dtype=float), np.asarray(params["pi"], dtype=float),
                                 pi_group, data.perception)
    log_x = logsumexp(joint, axis=-1)
    log_seeds = logsumexp(np.where(data.seed_mask[None], joint, -np.inf), axis=-1)
    lam = float(est.seed_weight)
    return np.where(data.seeded[None], log_x + lam * (log_seeds - log_x), log_x)
