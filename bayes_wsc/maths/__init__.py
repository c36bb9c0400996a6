"""NumPy maths that a model and its paper's own algorithms (`baselines/`) share, one module per model.

It sits below both, so that neither the model nor the baselines import the other. A term that several
models share (Dawid and Skene's votes: `dawid_skene.py`) has a module of its own here too.
"""

import numpy as np

LOG_2PI = float(np.log(2 * np.pi))


def logsumexp(a: np.ndarray, axis: int = -1, keepdims: bool = False, overwrite_a: bool = False) -> np.ndarray:
    """log sum exp(a) along `axis`, for the per-draw arrays of `predict`: scipy's general version spends
    3-4 times as long on its checks and on values this package never passes (complex, weights); a slice
    of only -inf gives -inf, as scipy's does. With `overwrite_a` (a float array the caller no longer needs)
    the shifted exponentials are made in `a` itself: the same values, without two temporaries of its size
    (of the perception model's (draws, items, clusters, groups) terms, 160 MB each at 1000 x 1000 x 4 x 5)."""
    if np.ndim(a) and 1 < np.shape(a)[axis] <= SMALL_AXIS and (not overwrite_a or axis not in (-1, np.ndim(a) - 1)):
        # a short axis, slice by slice: in place (`overwrite_a`) only where its slices are blocks, not strided
        out = _logsumexp_small_last(np.moveaxis(a, axis, -1), keepdims, overwrite_a)
        return np.moveaxis(out, -1, axis) if keepdims else out
    top = np.max(a, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    if overwrite_a:
        shifted = np.subtract(a, top, out=a)
        np.exp(shifted, out=shifted)
    else:
        shifted = np.exp(a - top)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(shifted, axis=axis, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis=axis)


#: NumPy reduces a short axis (a handful of clusters or groups) up to 4 times slower than the same operations
#: over its slices; up to this length `logsumexp` takes the slices (of any axis), with the same values.
SMALL_AXIS = 7


def max_last(a: np.ndarray) -> np.ndarray:
    """The maximum over a short last axis, slice by slice (see `SMALL_AXIS`)."""
    out = a[..., 0].copy()
    for k in range(1, a.shape[-1]):
        np.maximum(out, a[..., k], out=out)
    return out


def sum_last(a: np.ndarray) -> np.ndarray:
    """The sum over a short last axis, slice by slice, left to right: the order in which NumPy sums fewer
    than 8 terms, so bit for bit its reduction's value up to `SMALL_AXIS` entries."""
    out = a[..., 0].copy()
    for k in range(1, a.shape[-1]):
        out += a[..., k]
    return out


def _logsumexp_small_last(a: np.ndarray, keepdims: bool, overwrite_a: bool = False) -> np.ndarray:
    """`logsumexp` over a short last axis through `max_last` and `sum_last`: bit for bit the reduction's values
    (with `overwrite_a`, the shifted exponentials made in `a`, as there)."""
    a = np.asarray(a)
    top = max_last(a)
    top[~np.isfinite(top)] = 0.0
    if overwrite_a:
        shifted = np.subtract(a, top[..., None], out=a)
        total = sum_last(np.exp(shifted, out=shifted))
    else:
        total = sum_last(np.exp(a - top[..., None]))
    with np.errstate(divide="ignore"):
        out = np.log(total, out=total)
    out += top
    return out[..., None] if keepdims else out


def softmax(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """exp(a) normalized along `axis`, through `logsumexp` (scipy's softmax, without its checks)."""
    return np.exp(a - logsumexp(a, axis=axis, keepdims=True))


def expit(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """1 / (1 + exp(-x)) in NumPy (into `out` when given), for `predict`: scipy's `expit` is the same formula,
    and importing `scipy.special` for it cost a command 0.2 s; the values agree with scipy's within 4 ulp (NumPy's
    exp and the C library's differ in the last bits for about 2% of arguments; 3 ulp at most over 2e7 of them)."""
    with np.errstate(over="ignore"):  # exp(-x) overflows to inf for x below -709: the value is then 0, as scipy's
        out = np.negative(x, out=out)
        np.exp(out, out=out)
        out += 1.0
        return np.reciprocal(out, out=out)


def quadratic_features(x: np.ndarray) -> np.ndarray:
    """[x^2, x, 1] of items x (m, d) -> (m, 2d + 1): times `diag_normal_weights`, a diagonal Gaussian's log density."""
    return np.concatenate([x**2, x, np.ones((x.shape[0], 1))], axis=1)


def diag_normal_weights(mean: np.ndarray, sd: np.ndarray, log_weight: np.ndarray | None = None) -> np.ndarray:
    """[-precision / 2, mean * precision, the constant] of diagonal Gaussians, mean (..., d) and sd broadcastable to
    it -> (..., 2d + 1), so that `quadratic_features(x) @ weights` is log N(x | mean, diag(sd^2)) (+ `log_weight`,
    shaped as mean without its last axis): each component's log density of many items in one matrix product, the
    square expanded (the same values to float rounding)."""
    precision = np.broadcast_to(1.0 / sd**2, mean.shape)
    constant = (-0.5 * np.sum(mean**2 * precision, axis=-1) - np.sum(np.log(np.broadcast_to(sd, mean.shape)), axis=-1)
                - 0.5 * LOG_2PI * mean.shape[-1])
    if log_weight is not None:
        constant = constant + log_weight
    return np.concatenate([-0.5 * precision, mean * precision, constant[..., None]], axis=-1)
