"""NumPy maths that a model and its paper's own algorithms (`baselines/`) share, one module per model.

It sits below both, so that neither the model nor the baselines import the other. A term that several
models share (Dawid and Skene's votes: `dawid_skene.py`) has a module of its own here too.
"""

import numpy as np


def logsumexp(a: np.ndarray, axis: int = -1, keepdims: bool = False) -> np.ndarray:
    """log sum exp(a) along `axis`, for the per-draw arrays of `predict`: scipy's general version spends
    3-4 times as long on its checks and on values this package never passes (complex, weights); a slice
    of only -inf gives -inf, as scipy's does."""
    top = np.max(a, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - top), axis=axis, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis=axis)


def softmax(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """exp(a) normalized along `axis`, through `logsumexp` (scipy's softmax, without its checks)."""
    return np.exp(a - logsumexp(a, axis=axis, keepdims=True))
