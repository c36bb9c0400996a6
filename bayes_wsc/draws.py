"""What a fit hands to `inference`: plain arrays shaped (chain, draw, ...), whatever produced them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Draws:
    """What a fit produced: draws and statistics, each shaped (chain, draw, ...)."""

    posterior: dict[str, np.ndarray]
    sample_stats: dict[str, np.ndarray] = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    #: MAP with restarts: every restart's optimum (free variables, constrained scale), in restart order
    optima: list[dict] = field(default_factory=list)
    #: posterior variables left for first use, computed by this function (the pointwise log-likelihood of
    #: a Laplace fit, `laplace.run_laplace(defer_log_likelihood=True)`, and of a NUTS fit,
    #: `fit.fit_nuts(defer_log_likelihood=True)`, whose function also takes draw indices within each
    #: chain and computes those draws only)
    deferred: Callable[..., dict[str, np.ndarray]] | None = None
