"""What a fit hands to `inference`: plain arrays shaped (chain, draw, ...), whatever produced them."""

from __future__ import annotations

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
