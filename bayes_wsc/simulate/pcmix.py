"""The two toy studies of seed 003 (Hughes et al.): Sec. 3.2 (1-D intervals) and Sec. 3.3 (5-D blobs).

Each returns the items as a user's table would hold them (features and a
label column, empty where the label is hidden) and the truth: every label,
and which interval or blob each item came from. Neither study has "true"
mixture parameters: both are built so that a K = 2 Gaussian mixture is
misspecified, and the question is which compromise each objective picks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayes_wsc.data.labeled import LabeledItems
from bayes_wsc.errors import InputError


@dataclass
class PCToyTruth:
    """What the simulation knows: all labels (0/1), the source of each item, which labels were kept."""

    y: np.ndarray
    source: np.ndarray
    labeled: np.ndarray

    @property
    def error_floor(self) -> float:
        """Error rate of predicting the majority class everywhere (the trivial rate)."""
        return float(min(self.y.mean(), 1 - self.y.mean()))


def _table(x: np.ndarray, y: np.ndarray, labeled: np.ndarray, names: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame(x, columns=names)
    frame["y"] = pd.array(np.where(labeled, y, 0), dtype="Int64")
    frame.loc[~labeled, "y"] = pd.NA
    return frame


def simulate_intervals(
    n_a: int = 175,
    n_b: int = 100,
    n_c: int = 75,
    *,
    positive_share_a: float = 0.5,
    seed: int | None = 0,
) -> tuple[pd.DataFrame, PCToyTruth]:
    """Sec. 3.2: x on the real line from three uniform intervals, every label observed.

    A: `n_a` points on [-1, 1] whose labels are Bernoulli(`positive_share_a`) ("roughly even");
    B: `n_b` points on [1, 1.5], all positive; C: `n_c` points on [1.5, 2], all negative.
    Returns a table with columns x and y, and the truth (source "A", "B" or "C").
    """
    for name, value in (("n_a", n_a), ("n_b", n_b), ("n_c", n_c)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise InputError(f"{name} must be a whole number >= 0, got {value!r}")
    if not 0 <= positive_share_a <= 1:
        raise InputError(f"positive_share_a must be in [0, 1], got {positive_share_a!r}")
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(-1.0, 1.0, n_a), rng.uniform(1.0, 1.5, n_b), rng.uniform(1.5, 2.0, n_c)])
    y = np.concatenate([rng.random(n_a) < positive_share_a, np.ones(n_b, bool), np.zeros(n_c, bool)]).astype(int)
    source = np.repeat(np.array(["A", "B", "C"]), [n_a, n_b, n_c])
    labeled = np.ones(x.size, dtype=bool)
    return _table(x[:, None], y, labeled, ["x"]), PCToyTruth(y, source, labeled)


#: the two blobs of Sec. 3.3: means and variances (the diagonal covariance matrices)
BLOB_MEANS = np.array([[-1.0, 0, 0, 0, 0], [1.0, 0, 0, 0, 0]])
BLOB_VARIANCES = np.array([[2.0, 1, 1, 0.5, 1], [2.0, 1, 1, 1, 0.5]])


def simulate_two_blobs(
    n: int = 5000,
    labeled_fraction: float = 1.0,
    *,
    band: float = 0.1,
    seed: int | None = 0,
) -> tuple[pd.DataFrame, PCToyTruth]:
    """Sec. 3.3: x in R^5 from 1/2 N(m1, S1) + 1/2 N(m2, S2) (diagonal), y = 1 iff |x_2| < `band`.

    A random `labeled_fraction` b of the items keep their label (round(b n) of them); the others
    have an empty label cell. Returns a table with columns x1..x5 and y, and the truth (source
    "blob 1" or "blob 2", all labels, the labeled mask).
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise InputError(f"n must be a whole number >= 2, got {n!r}")
    if not 0 <= labeled_fraction <= 1:
        raise InputError(f"labeled_fraction must be in [0, 1], got {labeled_fraction!r}")
    if not band > 0:
        raise InputError(f"band must be positive, got {band!r}")
    rng = np.random.default_rng(seed)
    blob = rng.integers(0, 2, n)
    x = BLOB_MEANS[blob] + np.sqrt(BLOB_VARIANCES[blob]) * rng.standard_normal((n, 5))
    y = (np.abs(x[:, 1]) < band).astype(int)
    labeled = np.zeros(n, dtype=bool)
    labeled[rng.choice(n, size=int(round(labeled_fraction * n)), replace=False)] = True
    source = np.where(blob == 0, "blob 1", "blob 2")
    return _table(x, y, labeled, [f"x{j + 1}" for j in range(5)]), PCToyTruth(y, source, labeled)


def toy_items(frame: pd.DataFrame) -> LabeledItems:
    """The validated container of a toy table (binary classes 0 and 1)."""
    return LabeledItems.from_frame(frame, label_col="y", classes=[0, 1])
