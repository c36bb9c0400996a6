"""The package's own NumPy primitives in `bayes_wsc.maths`, held to scipy's."""

import numpy as np
import pytest
from scipy import special

from bayes_wsc import maths


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp_equals_scipys(axis, keepdims):
    a = np.random.default_rng(1).normal(size=(4, 6, 3)) * 40
    a[0, 0, :] = -np.inf  # a slice of only -inf gives -inf
    a[1, 1, 0] = -np.inf
    a[:, 2, :] = [[900.0, -900.0, 0.0]] * 4  # exp would overflow without the shift
    got, want = maths.logsumexp(a, axis=axis, keepdims=keepdims), special.logsumexp(a, axis=axis, keepdims=keepdims)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-13)


@pytest.mark.parametrize("axis", [0, -1])
def test_logsumexp_in_place_gives_the_same_values(axis):
    """`overwrite_a` makes the shifted exponentials in the array given: bit for bit the values without it."""
    a = np.random.default_rng(3).normal(size=(5, 7, 4)) * 40
    a[0, 0, :] = -np.inf
    a[:, 2, :] = [[900.0, -900.0, 0.0, 1.0]] * 5
    want = maths.logsumexp(a, axis=axis)
    np.testing.assert_array_equal(maths.logsumexp(a.copy(), axis=axis, overwrite_a=True), want)


@pytest.mark.parametrize("k", range(2, maths.SMALL_AXIS + 1))
def test_logsumexp_over_a_short_last_axis_is_the_reductions_value_bit_for_bit(k):
    """An axis of at most `SMALL_AXIS` entries is taken slice by slice: the same values as NumPy's
    reduction over the axis, to the last bit (special values included), the last axis or another."""
    a = np.random.default_rng(k).normal(size=(50, 40, k)) * 30
    a[0, 0, :] = -np.inf
    a[1, 1, 0] = -np.inf
    a[2, 2, 0] = np.inf
    a[3, 3, 1] = np.nan
    top = np.max(a, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.log(np.sum(np.exp(a - top), axis=-1, keepdims=True)) + top
        for keepdims in (False, True):
            got = maths.logsumexp(a, keepdims=keepdims)
            np.testing.assert_array_equal(got, want if keepdims else want[..., 0])
        np.testing.assert_array_equal(maths.logsumexp(np.swapaxes(a, 0, 1)), np.swapaxes(want[..., 0], 0, 1))
        # a short middle axis (the perception mixture's groups), its slices whole blocks, in place or not
        middle = np.ascontiguousarray(np.moveaxis(a, -1, 1))
        for overwrite in (False, True):
            got = maths.logsumexp(middle.copy(), axis=1, keepdims=True, overwrite_a=overwrite)
            np.testing.assert_array_equal(got, np.moveaxis(want, -1, 1))


def test_softmax_equals_scipys():
    a = np.random.default_rng(2).normal(size=(3, 5, 4)) * 30
    a[0, 0, 1] = -np.inf
    np.testing.assert_allclose(maths.softmax(a, axis=2), special.softmax(a, axis=2), rtol=1e-13, atol=1e-300)


def test_expit_equals_scipys():
    """Within 4 ulp (NumPy's exp against the C library's), 0 and 1 at the ends, and in place when asked."""
    x = np.concatenate([np.random.default_rng(2).normal(scale=8, size=(2000,)), [-1000.0, -745.0, -40.0, 0.0, 40.0,
                                                                                  1000.0]])
    got = maths.expit(x)
    np.testing.assert_array_max_ulp(got, special.expit(x), maxulp=4)
    assert got[-6] == 0.0 and got[-3] == 0.5 and got[-1] == 1.0
    inplace = x.copy()
    assert maths.expit(inplace, out=inplace) is inplace and np.array_equal(inplace, got)
