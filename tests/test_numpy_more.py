"""The jnp names added in fjax/numpy/_more.py and _more2.py, against numpy (hypothesis) and
finite differences (check_grads)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fjax
import fjax.numpy as jnp
from fjax.test_util import check_grads

floats = st.floats(-10, 10, allow_nan=False, width=32)
vec = hnp.arrays(np.float32, st.integers(1, 7), elements=floats)
mat = hnp.arrays(np.float32, hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=5), elements=floats)


def close(a, b, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


@given(vec, vec)
def test_isclose_allclose_array_equal(a, b):
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    b2 = b.copy()
    b2[::2] = a[::2]
    np.testing.assert_array_equal(jnp.isclose(a, b2), np.isclose(a, b2))
    assert bool(jnp.allclose(a, a)) and bool(jnp.array_equal(a, a))
    assert bool(jnp.array_equal(a, b2)) == np.array_equal(a, b2)
    assert not bool(jnp.array_equal(a, a[:-1])) or n == 0
    assert bool(jnp.array_equiv(a, a[None])) == np.array_equiv(a, a[None])


def test_isclose_special_values():
    a = np.array([np.inf, -np.inf, np.nan, 1.0, np.inf], np.float32)
    b = np.array([np.inf, np.inf, np.nan, 1.0 + 1e-7, 1.0], np.float32)
    for equal_nan in (False, True):
        np.testing.assert_array_equal(jnp.isclose(a, b, equal_nan=equal_nan), np.isclose(a, b, equal_nan=equal_nan))


@given(mat, st.integers(1, 2), st.integers(0, 1))
def test_diff_gradient_ediff1d(x, n, axis):
    if x.shape[axis] <= n:
        return
    close(jnp.diff(x, n, axis), np.diff(x, n, axis))
    close(jnp.diff(x, 1, axis, prepend=1.0, append=2.0), np.diff(x, 1, axis, prepend=1.0, append=2.0))
    close(jnp.ediff1d(x, to_begin=[9.0], to_end=[7.0, 8.0]), np.ediff1d(x, to_begin=[9.0], to_end=[7.0, 8.0]))
    if min(x.shape) >= 2:
        for g, r in zip(jnp.gradient(x), np.gradient(x)):
            close(g, r, rtol=1e-4, atol=1e-4)
        close(jnp.gradient(x, 0.5, axis=axis), np.gradient(x, 0.5, axis=axis), rtol=1e-4, atol=1e-4)


def test_gradient_coordinates_and_grads():
    x = np.array([0.0, 0.5, 1.5, 3.0, 3.5], np.float32)
    y = np.sin(x)
    close(jnp.gradient(y, x), np.gradient(y, x), rtol=1e-5)
    check_grads(lambda y: jnp.gradient(y, 0.3), (jnp.asarray(y),), 1)


def test_index_helpers():
    np.testing.assert_array_equal(jnp.r_[1:4, 0, jnp.array([7, 8])], np.r_[1:4, 0, np.array([7, 8])])
    np.testing.assert_array_equal(jnp.r_["0,2", [1, 2], [3, 4]], np.r_["0,2", [1, 2], [3, 4]])
    np.testing.assert_array_equal(jnp.r_["-1,2,0", [1, 2], [3, 4]], np.r_["-1,2,0", [1, 2], [3, 4]])
    np.testing.assert_array_equal(jnp.c_[np.array([1, 2]), np.array([3, 4])], np.c_[np.array([1, 2]), np.array([3, 4])])
    close(jnp.r_[0:1:5j], np.r_[0:1:5j])
    assert jnp.s_[1:2, ::3] == np.s_[1:2, ::3] and jnp.index_exp[3] == np.index_exp[3]
    np.testing.assert_array_equal(jnp.mgrid[0:3, 0:2], np.mgrid[0:3, 0:2])
    for a, b in zip(jnp.ogrid[0:3, 0:2], np.ogrid[0:3, 0:2]):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(jnp.ix_(np.array([0, 2]), np.array([1, 3, 4])), np.ix_(np.array([0, 2]), np.array([1, 3, 4]))):
        np.testing.assert_array_equal(a, b)
    idx = np.array([0, 5, 11, 7])
    for a, b in zip(jnp.unravel_index(idx, (3, 4)), np.unravel_index(idx, (3, 4))):
        np.testing.assert_array_equal(a, b)
    multi = (np.array([0, 2, 1]), np.array([3, 0, 2]))
    np.testing.assert_array_equal(jnp.ravel_multi_index(multi, (3, 4)), np.ravel_multi_index(multi, (3, 4)))
    np.testing.assert_array_equal(
        jnp.ravel_multi_index(multi, (3, 4), order="F"), np.ravel_multi_index(multi, (3, 4), order="F")
    )
    for f in ("tril_indices", "triu_indices"):
        for a, b in zip(getattr(jnp, f)(4, 1, 5), getattr(np, f)(4, 1, 5)):
            np.testing.assert_array_equal(a, b)
    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(jnp.fill_diagonal(a, 7.0, inplace=False), _np_fill(a, 7.0))
    with pytest.raises(NotImplementedError):
        jnp.fill_diagonal(a, 1.0)


def _np_fill(a, v):
    a = a.copy()
    np.fill_diagonal(a, v)
    return a


@given(mat)
def test_put_along_axis_rollaxis(x):
    idx = np.argsort(x, axis=1)[:, :1]
    expect = x.copy()
    np.put_along_axis(expect, idx, -1.0, axis=1)
    close(jnp.put_along_axis(x, idx, -1.0, axis=1, inplace=False), expect)
    close(jnp.rollaxis(x[None], 2), np.rollaxis(x[None], 2))


@given(vec)
def test_select_piecewise_choose_modf_fabs(x):
    conds = [x < -1, x > 1]
    close(jnp.select(conds, [x, x * 2], 5.0), np.select(conds, [x, x * 2], 5.0))
    close(
        jnp.piecewise(x, conds, [lambda v: v * 3, 1.0, lambda v: -v]),
        np.piecewise(x, conds, [lambda v: v * 3, 1.0, lambda v: -v]),
    )
    c = (np.abs(x) % 3).astype(np.int32)
    close(jnp.choose(c, [x, -x, 2 * x]), np.choose(c, [x, -x, 2 * x]))
    for a, b in zip(jnp.modf(x), np.modf(x)):
        close(a, b)
    close(jnp.fabs(x), np.fabs(x))


@given(vec)
def test_histograms_and_counting(x):
    for bins in (3, np.array([-10.0, -1.0, 0.0, 4.0, 10.0], np.float32)):
        h, e = jnp.histogram(x, bins)
        hr, er = np.histogram(x, bins)
        close(h, hr)
        close(e, er, rtol=1e-5)
    ints = (np.abs(x) % 5).astype(np.int32)
    np.testing.assert_array_equal(jnp.bincount(ints), np.bincount(ints))
    np.testing.assert_array_equal(jnp.bincount(ints, length=7), np.bincount(ints, minlength=7)[:7])
    bins = np.array([-5.0, 0.0, 2.0, 7.0], np.float32)
    for right in (False, True):
        np.testing.assert_array_equal(jnp.digitize(x, bins, right), np.digitize(x, bins, right))
        np.testing.assert_array_equal(jnp.digitize(x, bins[::-1], right), np.digitize(x, bins[::-1], right))
    h2, ex, ey = jnp.histogram2d(x, x[::-1], bins=3)
    h2r, exr, eyr = np.histogram2d(x, x[::-1], bins=3)
    close(h2, h2r)


def test_set_operations():
    a = np.array([3, 1, 2, 3, 7, 1])
    b = np.array([2, 5, 7, 9])
    np.testing.assert_array_equal(jnp.isin(a, b), np.isin(a, b))
    np.testing.assert_array_equal(jnp.isin(a, b, invert=True), np.isin(a, b, invert=True))
    for f in ("union1d", "intersect1d", "setdiff1d", "setxor1d"):
        np.testing.assert_array_equal(getattr(jnp, f)(a, b), getattr(np, f)(a, b))
    np.testing.assert_array_equal(jnp.union1d(a, b, size=9, fill_value=-1)[-1], -1)
    np.testing.assert_array_equal(jnp.unique_values(a), np.unique(a))
    v, c = jnp.unique_counts(a)
    np.testing.assert_array_equal(c, np.unique(a, return_counts=True)[1])
    r = jnp.unique_inverse(a)
    np.testing.assert_array_equal(r.values[r.inverse_indices], a)
    assert jnp.unique_all(a).counts.shape == (4,)


@given(vec, vec, st.sampled_from(["full", "same", "valid"]))
def test_convolve_correlate(a, v, mode):
    close(jnp.convolve(a, v, mode), np.convolve(a, v, mode), rtol=1e-4, atol=1e-3)
    close(jnp.correlate(a, v, mode), np.correlate(a, v, mode), rtol=1e-4, atol=1e-3)


def test_convolve_grad():
    a = jnp.asarray(np.random.RandomState(0).randn(5).astype(np.float32))
    check_grads(lambda a, v: jnp.convolve(a, v, "same"), (a, a[:3]), 1)


@given(hnp.arrays(np.float32, (3, 6), elements=floats))
def test_cov_corrcoef(x):
    close(jnp.cov(x), np.cov(x), rtol=1e-3, atol=1e-3)
    close(jnp.cov(x, rowvar=False, bias=True), np.cov(x, rowvar=False, bias=True), rtol=1e-3, atol=1e-3)
    w = np.arange(1, 7)
    close(jnp.cov(x, fweights=w), np.cov(x, fweights=w), rtol=1e-3, atol=1e-3)
    if np.all(np.std(x, axis=1) > 1e-2):
        close(jnp.corrcoef(x), np.corrcoef(x), rtol=1e-3, atol=1e-3)


@given(vec)
def test_interp_trapezoid_unwrap(x):
    xp = np.array([-3.0, -1.0, 0.5, 4.0], np.float32)
    fp = np.array([1.0, -2.0, 3.0, 0.0], np.float32)
    close(jnp.interp(x, xp, fp), np.interp(x, xp, fp), rtol=1e-5, atol=1e-5)
    close(jnp.interp(x, xp, fp, left=-9, right=9), np.interp(x, xp, fp, left=-9, right=9), rtol=1e-5, atol=1e-5)
    close(jnp.interp(x, xp, fp, period=5.0), np.interp(x, xp, fp, period=5.0), rtol=1e-4, atol=1e-4)
    close(jnp.trapezoid(x), np.trapezoid(x), rtol=1e-5, atol=1e-4)
    close(jnp.trapezoid(x, np.cumsum(np.abs(x))), np.trapezoid(x, np.cumsum(np.abs(x))), rtol=1e-4, atol=1e-2)
    close(jnp.unwrap(x), np.unwrap(x), rtol=1e-5, atol=1e-4)


def test_interp_grad():
    xp = jnp.array([-3.0, -1.0, 0.5, 4.0])
    check_grads(lambda x, fp: jnp.interp(x, xp, fp), (jnp.array([-2.0, 0.1, 3.0]), jnp.array([1.0, -2.0, 3.0, 0.0])), 1)


@given(hnp.arrays(np.float32, st.integers(1, 4), elements=st.floats(-3, 3, width=32)))
def test_polynomials(p):
    # numpy trims leading zeros (its poly1d); JAX keeps static shapes, so test without them
    p = p.copy()
    p[0] = abs(p[0]) + 0.5
    q = np.array([1.0, -2.0, 0.5], np.float32)
    x = np.linspace(-2, 2, 5).astype(np.float32)
    close(jnp.polyval(p, x), np.polyval(p, x), rtol=1e-4, atol=1e-4)
    close(jnp.polyadd(p, q), np.polyadd(p, q))
    close(jnp.polysub(p, q), np.polysub(p, q))
    close(jnp.polymul(p, q), np.polymul(p, q), rtol=1e-4, atol=1e-4)
    close(jnp.polyder(q), np.polyder(q))
    close(jnp.polyint(p, 2, [1.0, 2.0]), np.polyint(p, 2, [1.0, 2.0]), rtol=1e-4, atol=1e-4)
    qd, rd = jnp.polydiv(np.polymul(p, q), q)
    qr, rr = np.polydiv(np.polymul(p, q), q)
    close(qd, qr, rtol=1e-3, atol=1e-3)
    close(jnp.poly(p), np.poly(p), rtol=1e-4, atol=1e-3)
    close(jnp.vander(x, 3), np.vander(x, 3))
    close(jnp.vander(x, increasing=True), np.vander(x, increasing=True))


def test_windows():
    for f in ("bartlett", "hanning", "hamming", "blackman"):
        for m in (0, 1, 5, 8):
            close(getattr(jnp, f)(m), getattr(np, f)(m), atol=1e-6)


def test_vectorize():
    dot = jnp.vectorize(jnp.dot, signature="(n),(n)->()")
    a = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    close(dot(a, a[0]), a @ a[0])
    add = jnp.vectorize(lambda x, y: x + y)
    close(add(a, np.arange(3.0)), a + np.arange(3.0))
    f = jnp.vectorize(lambda x, k: x * k, excluded={1})
    close(f(a, 2), a * 2)
    with pytest.raises(ValueError, match="signature"):
        jnp.vectorize(jnp.dot, signature="(n)(n)->()")
    close(fjax.grad(lambda a: dot(a, a).sum())(jnp.asarray(a)), 2 * a)


def test_apply_along_axis_and_misc():
    a = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    close(jnp.apply_along_axis(jnp.sum, 1, a), np.apply_along_axis(np.sum, 1, a))
    close(jnp.apply_over_axes(jnp.sum, a, [0, 2]), np.apply_over_axes(np.sum, a, [0, 2]))
    close(jnp.partition(a, 1, axis=2)[..., 1], np.partition(a, 1, axis=2)[..., 1])
    np.testing.assert_array_equal(
        jnp.packbits(np.array([1, 0, 1, 1, 0, 0, 0, 1, 1])), np.packbits(np.array([1, 0, 1, 1, 0, 0, 0, 1, 1]))
    )
    u = np.array([[3, 200]], np.uint8)
    np.testing.assert_array_equal(jnp.unpackbits(u, axis=1), np.unpackbits(u, axis=1))
    np.testing.assert_array_equal(
        jnp.bitwise_count(np.array([7, -1, 256])), np.bitwise_count(np.array([7, -1, 256], np.int32))
    )
    close(jnp.resize(np.arange(5.0), (2, 4)), np.resize(np.arange(5.0), (2, 4)))
    close(jnp.trim_zeros(np.array([0, 0, 1.0, 2, 0])), np.trim_zeros(np.array([0, 0, 1.0, 2, 0])))
    close(
        jnp.block([[np.ones((2, 2)), np.zeros((2, 1))], [np.zeros((1, 3))]]),
        np.block([[np.ones((2, 2)), np.zeros((2, 1))], [np.zeros((1, 3))]]),
    )
    close(jnp.compress(np.array([True, False, True]), a, axis=1), np.compress(np.array([True, False, True]), a, axis=1))
    close(jnp.extract(a > 20, a), np.extract(a > 20, a))
    close(jnp.diagflat(np.arange(3.0), 1), np.diagflat(np.arange(3.0), 1))
    close(jnp.matvec(a, np.ones(4)), a @ np.ones(4))
    close(jnp.vecmat(np.ones(3), a), np.ones(3) @ a)
    assert jnp.isscalar(1.0) and not jnp.isscalar(np.ones(2)) and jnp.iscomplexobj(np.ones(2, np.complex64))
    assert len(jnp.unstack(a, axis=1)) == 3
    close(jnp.nanquantile(np.array([1.0, np.nan, 3.0]), 0.5), 2.0)
    close(jnp.nanpercentile(np.array([1.0, np.nan, 3.0]), 50), 2.0)


def test_under_jit():
    f = fjax.jit(
        lambda x: (jnp.diff(x), jnp.isclose(x, 1.0), jnp.interp(x, jnp.array([0.0, 5.0]), jnp.array([0.0, 10.0])))
    )
    d, c, i = f(jnp.arange(4.0))
    close(d, np.ones(3))
    close(i, 2 * np.arange(4.0))
