"""The first model's maths that its estimator and the paper's baselines share (seed 000).

`naive_emissions` is the naive solution's w0, w1 (eq. 4.1-4.4): the paper's EM starts there
(`models/wsc/baselines.py`) and so does the model's MAP (`models/wsc/model.py`).
"""

from __future__ import annotations

import numpy as np

from bayes_wsc._lazy import LazyModule
from bayes_wsc.data.grouped import GroupedCounts

special = LazyModule("scipy.special")


def naive_emissions(data: GroupedCounts, pseudo_count: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """w0, w1 of the naive solution (eq. 4.1-4.4): the paper's initialization of EM."""
    z = special.expit(data.he)[:, None]
    happy = (z * data.counts).sum(axis=0)
    sad = ((1.0 - z) * data.counts).sum(axis=0)
    return (pseudo_count + sad) / (pseudo_count * data.n_bins + sad.sum()), (
        pseudo_count + happy
    ) / (pseudo_count * data.n_bins + happy.sum())
