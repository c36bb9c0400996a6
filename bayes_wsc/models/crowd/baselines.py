"""The paper-free baseline of crowd labelling: majority vote (each item's most frequent cast vote), which
the report sets beside the model's classes. Dawid and Skene's own EM is compared, through crowd-kit when it
is installed, in `benchmarks/crowd_check.py`, not here (it is no dependency)."""

from __future__ import annotations

import numpy as np


def vote_counts(data) -> np.ndarray:
    """(n, K) each item's cast votes per class."""
    cast = data.vote >= 0
    counts = np.zeros((data.n_items, data.n_classes))
    np.add.at(counts, (data.vote_item[cast], data.vote[cast]), 1.0)
    return counts


def majority_vote(data, seed: int = 0) -> np.ndarray:
    """Each item's most frequent cast vote (class index), ties broken at random (seeded), -1 for an item
    without a cast vote."""
    counts = vote_counts(data)
    rng = np.random.default_rng(seed)
    top = counts == counts.max(axis=1, keepdims=True)
    chosen = np.argmax(top * rng.random(counts.shape), axis=1)
    return np.where(counts.sum(axis=1) > 0, chosen, -1)
