"""The combined study's held-out bag-share coverage (benchmarks/combined.py `share_coverage`): a calibrated
predictive covers at the nominal level by the randomized PIT and has squared error equal to its variance; an
underconfident one covers above it."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from combined import share_coverage  # noqa: E402


def items(n=4000, k=3, seed=0):
    """True class probabilities, fairly sharp (as wine's), and classes drawn from them."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 0.3), size=n)
    classes = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1).clip(max=k - 1)
    return p, classes, rng


def test_calibrated_predictive_covers_at_the_nominal_level():
    p, classes, rng = items()
    bags = np.arange(classes.size).reshape(-1, 10)
    out = share_coverage(np.broadcast_to(p, (400, *p.shape)), bags, classes, rng, level=0.9)
    # 400 bags x 3 classes: the PIT's coverage has sd about 0.01 around 0.90
    assert abs(out["pit"] - 0.90) < 0.035
    assert out["coverage"] >= out["pit"] - 0.01  # the central interval of a discrete share covers at least that
    assert 0.8 < out["z2"] < 1.2


def test_underconfident_predictive_covers_above_the_band():
    p, classes, rng = items()
    soft = np.sqrt(p) / np.sqrt(p).sum(axis=1, keepdims=True)  # logits halved: each item's class less sure
    # than it is, so every bag's share spread wider
    bags = np.arange(classes.size).reshape(-1, 10)
    out = share_coverage(np.broadcast_to(soft, (400, *p.shape)), bags, classes, rng, level=0.9)
    assert out["pit"] > 0.92  # 1200 cells: sd about 0.009 around 0.90 were it calibrated
    assert out["z2"] < 0.8
