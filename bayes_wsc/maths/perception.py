"""The perception model's maths that its estimator and the paper's baselines share (seed 004).

`threshold_clusters` is the overlap rule: the estimator's `predict` (`models/perception/model.py`)
and the embeddings of LPE and NPE (`models/perception/baselines.py`) assign overlapping clusters by it.
"""

from __future__ import annotations

import numpy as np

from bayes_wsc.errors import InputError


def threshold_clusters(memberships: np.ndarray, threshold: float) -> np.ndarray:
    """(n, K) overlapping assignment: every cluster whose membership reaches `threshold`, and always
    the most probable one (so that every item is in at least one cluster)."""
    if not 0 < threshold <= 1:
        raise InputError(f"the overlap threshold must be in (0, 1], got {threshold!r}")
    memberships = np.asarray(memberships, dtype=float)
    assigned = memberships >= threshold
    assigned[np.arange(memberships.shape[0]), memberships.argmax(axis=1)] = True
    return assigned
