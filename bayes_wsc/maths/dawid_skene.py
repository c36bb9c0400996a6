"""Dawid and Skene's vote term in NumPy, shared by every model that reads votes (the crowd model, the
combined model) and by their checks and simulations: each source s has a confusion matrix,
P(vote = v | class = c) = confusion[s, c, v]; an abstention carries no likelihood (missing at random).

The same term as a PyMC block is `likelihoods.dawid_skene_evidence`. Any container with the attributes
`vote_item`, `vote_source`, `vote` (-1: abstention), `n_items`, `n_sources` and `n_classes` is read.
"""

from __future__ import annotations

import numpy as np


def confusion_prior(n_sources: int, n_classes: int, diagonal: float) -> np.ndarray:
    """(S, K, K) Dirichlet concentrations: `diagonal` at the true class, 1 elsewhere (a source is a priori
    better than chance, which names the classes)."""
    row = 1.0 + (diagonal - 1.0) * np.eye(n_classes)
    return np.broadcast_to(row, (n_sources, n_classes, n_classes)).copy()


def vote_inputs(data) -> dict[str, np.ndarray]:
    """The cast votes (abstentions left out of the likelihood, and counted by the reports)."""
    cast = data.vote >= 0
    return {"vote_item": data.vote_item[cast], "vote_source": data.vote_source[cast], "vote_value": data.vote[cast]}


def vote_evidence(data, confusion: np.ndarray | None):
    """(S, n, K) sum over an item's cast votes of log confusion[s, c, v] at draws of the confusion
    matrices (S, sources, K, K); 0.0 without votes."""
    inputs = vote_inputs(data)
    if confusion is None or not inputs["vote_item"].size:
        return 0.0
    # advanced indices apart put their axis first: (V, S, K), then (S, V, K)
    per_vote = np.moveaxis(np.log(confusion)[:, inputs["vote_source"], :, inputs["vote_value"]], 0, 1)
    out = np.zeros((confusion.shape[0], data.n_items, data.n_classes))
    np.add.at(out, (slice(None), inputs["vote_item"]), per_vote)
    return out


def start_confusion(n_sources: int, n_classes: int, accuracy: float = 0.7) -> np.ndarray:
    """(S, K, K) confusion matrices with `accuracy` on the diagonal, the rest spread evenly: a MAP's start
    and a simulation's annotators."""
    row = np.full((n_classes, n_classes), (1.0 - accuracy) / (n_classes - 1))
    np.fill_diagonal(row, accuracy)
    return np.broadcast_to(row, (n_sources, n_classes, n_classes)).copy()
