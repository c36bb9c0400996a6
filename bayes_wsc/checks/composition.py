"""Whether aggregate data can tell the bins apart: collinearity of the groups' bin compositions.

Ecological inference (models/ecological_inference.py) learns each bin's class-1 share from how the
groups' shares move with their bin compositions. When the compositions are nearly collinear (every
group holds the bins in about the same proportions, as the states hold college graduates), the shares
of the bins trade off against each other along a ridge, and where a fit lands on it is set by the
model's assumptions (one shift per group on the logit scale), not by the data: on CCES 2016 by state,
degree holders came out at 0.02-0.04 against a truth of 0.32, with intervals that exclude it, from
this variant and from PyEI alike (benchmarks/RESULTS.md). No label-free check can see that bias; what
it can see is that the data leave the bins unseparated.

The statistic is each bin's variance inflation factor in the regression of the groups' shares on
their compositions (no intercept: the compositions sum to 1), VIF_k = [G^-1]_kk G_kk with
G = C^T diag(N) C, C the groups' bin shares and N their items (the binomial weighs a group by its
items): 1 / (1 - R_k^2), R_k^2 the share of bin k's composition that the other bins' explain across
groups. It is a property of the data alone (no fit, no p-value). The row flags when the largest VIF
exceeds `VIF_MAX`, the usual rule of thumb for serious collinearity, which separates the CCES splits
measured in benchmarks/ei_vs_pyei.py: race (White / Black / Other) by state 4.6 (halves of the states:
4.1-6.7), college degree by state 18.7 (15.4-25.5).
"""

from __future__ import annotations

import math

import numpy as np

from bayes_wsc.criticism import Check

CHECK = "composition_collinearity"
#: flag when the largest variance inflation factor of a bin exceeds this
VIF_MAX = 10.0


def variance_inflation(counts: np.ndarray) -> np.ndarray:
    """VIF of each bin's share across groups (see the module docstring): the diagonal of the inverse of
    G scaled to unit diagonal (which leaves VIF unchanged and keeps rare bins from looking singular);
    inf for every bin when no group holds some bin or the bins' shares are exactly collinear.
    counts (I, K), weighted item counts."""
    counts = np.asarray(counts, dtype=float)
    totals = counts.sum(axis=1)
    used = totals > 0
    shares = counts[used] / totals[used, None]
    gram = (shares * totals[used, None]).T @ shares
    diagonal = np.diag(gram)
    if not (diagonal > 0).all():
        return np.full(counts.shape[1], math.inf)
    scaled = gram / np.sqrt(np.outer(diagonal, diagonal))
    if np.linalg.cond(scaled) > 1e12:
        return np.full(counts.shape[1], math.inf)
    return np.maximum(np.diag(np.linalg.inv(scaled)), 1.0)


def collinearity_check(counts: np.ndarray, bin_labels) -> Check:
    """One row: the largest VIF against `VIF_MAX`, naming its bin."""
    labels = [str(b) for b in bin_labels]
    if len(labels) < 2:
        return Check(CHECK, math.nan, VIF_MAX, math.nan, False,
                     "one bin: there are no bins to tell apart.", math.nan, VIF_MAX)
    vif = variance_inflation(counts)
    worst = int(np.argmax(vif))
    value = float(vif[worst])
    flagged = bool(value > VIF_MAX)
    size = f"variance inflation {value:.3g} for bin {labels[worst]}, tolerance {VIF_MAX:g}"
    if flagged:
        message = (f"the groups' bin compositions are too collinear to separate the bins ({size}): the groups "
                   f"hold bin {labels[worst]} in nearly the proportion the other bins predict, so the bins' "
                   "class-1 shares trade off along a ridge and the fit's values for them come from the model's "
                   "assumptions, not the data; their intervals do not show this (the ecological fallacy). "
                   "Find groups whose compositions differ more (finer groups), or do not report these bins "
                   "separately.")
    else:
        message = f"the groups' bin compositions differ enough to separate the bins ({size})."
    return Check(CHECK, value, VIF_MAX, math.nan, flagged, message, value, VIF_MAX)
