"""Outputs recorded with JAX 0.10.2 (``jax.numpy`` on the CPU) for cases where fjax used to differ:
``partition``/``argpartition`` (JAX's two ``top_k``), boolean convolutions, ``max``/``min`` of
low-precision floats with NaNs, and the set operations with NaNs."""

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp

nan, inf = np.nan, np.inf

# ---- partition / argpartition -------------------------------------------------------------------

_A = np.array([3.0, 1.0, nan, 2.0, 1.0, -inf, 0.0, -0.0, nan, 5.0], np.float32)
_I = np.array([[0, 3, 1, 0, 3, 3, 3], [3, 1, 3, 3, 2, 0, 1], [3, 0, 0, 0, 1, 2, 2], [1, 1, 2, 0, 0, 0, 3]], np.int32)


@pytest.mark.parametrize(
    "a,kth,axis,part,argpart",
    [
        (_A, 3, -1, [-inf, -0.0, 0.0, 1.0, nan, nan, 5.0, 3.0, 2.0, 1.0], [5, 7, 6, 1, 0, 2, 3, 4, 8, 9]),
        (_A, -2, -1, [-inf, -0.0, 0.0, 1.0, 1.0, 2.0, 3.0, 5.0, nan, nan], [5, 7, 6, 1, 4, 3, 0, 9, 2, 8]),
        (_A, 0, -1, [-inf, nan, nan, 5.0, 3.0, 2.0, 1.0, 1.0, 0.0, -0.0], [5, 0, 1, 2, 3, 4, 6, 7, 8, 9]),
        (
            _I,
            2,
            1,
            [[0, 0, 1, 3, 3, 3, 3], [0, 1, 1, 3, 3, 3, 2], [0, 0, 0, 3, 2, 2, 1], [0, 0, 0, 3, 2, 1, 1]],
            [[0, 3, 2, 1, 4, 5, 6], [5, 1, 6, 0, 2, 3, 4], [1, 2, 3, 0, 4, 5, 6], [3, 4, 5, 0, 1, 2, 6]],
        ),
        (
            _I,
            1,
            0,
            [[0, 0, 0, 0, 0, 0, 1], [1, 1, 1, 0, 1, 0, 2], [3, 3, 3, 3, 3, 3, 3], [3, 1, 2, 0, 2, 2, 3]],
            [[0, 2, 2, 0, 3, 1, 1], [3, 1, 0, 2, 2, 3, 2], [1, 0, 1, 1, 0, 0, 0], [2, 3, 3, 3, 1, 2, 3]],
        ),
        (np.array([0, 5, 0, 255, 3, 0], np.uint8), 2, -1, [0, 0, 0, 255, 5, 3], [0, 2, 5, 1, 3, 4]),
        (np.array([5, -(2**31), 3, 2**31 - 1, 0], np.int32), 1, -1, [0, 3, 2**31 - 1, 5, 3], [4, 2, 0, 1, 3]),
        (np.array([2, 2, 2, 2, 2], np.int32), 2, -1, [2, 2, 2, 2, 2], [0, 1, 2, 3, 4]),
    ],
)
def test_partition_matches_jax(a, kth, axis, part, argpart):
    p = np.asarray(jnp.partition(jnp.asarray(a), kth, axis=axis))
    np.testing.assert_array_equal(p, np.asarray(part, a.dtype))
    if a.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(p), np.signbit(np.asarray(part, a.dtype)))  # -0.0 first
    np.testing.assert_array_equal(np.asarray(jnp.argpartition(jnp.asarray(a), kth, axis=axis)), argpart)
    jitted = fjax.jit(lambda x: jnp.argpartition(x, kth, axis=axis))
    np.testing.assert_array_equal(np.asarray(jitted(jnp.asarray(a))), argpart)


def test_partition_bfloat16_nan_and_vmap():
    a = jnp.asarray(np.array([1.0, nan, 1.0, 1.0, nan]), jnp.bfloat16)
    np.testing.assert_array_equal(np.asarray(jnp.partition(a, 2), np.float32), [1.0, 1.0, 1.0, nan, nan])
    np.testing.assert_array_equal(np.asarray(jnp.argpartition(a, 2)), [0, 2, 3, 1, 4])
    out = fjax.vmap(lambda x: jnp.argpartition(x, 2))(jnp.asarray(_I))
    np.testing.assert_array_equal(
        np.asarray(out), [[0, 3, 2, 1, 4, 5, 6], [5, 1, 6, 0, 2, 3, 4], [1, 2, 3, 0, 4, 5, 6], [3, 4, 5, 0, 1, 2, 6]]
    )
    with pytest.raises(NotImplementedError, match="jnp.partition for complex dtype is not implemented"):
        jnp.partition(jnp.array([1 + 2j, 3j]), 1)


# ---- boolean convolutions -----------------------------------------------------------------------


def test_convolve_bool_inputs():
    from fjax import lax

    a, b = np.array([True, False, True, True, False]), np.array([True, True, False])
    r = jnp.convolve(a, b)
    assert r.dtype == np.float32 and np.asarray(r).tolist() == [1, 1, 1, 2, 1, 0, 0]
    r = jnp.convolve(a, b, preferred_element_type=bool)
    assert r.dtype == np.bool_ and np.asarray(r).tolist() == [True, True, True, True, True, False, False]
    x, w = jnp.asarray(np.array([[[True, False, True, True]]])), jnp.asarray(np.array([[[True, True]]]))
    for fn in (lax.conv_general_dilated, fjax.jit(lax.conv_general_dilated, static_argnums=(2, 3))):
        out = fn(x, w, (1,), "VALID")
        assert out.dtype == np.bool_ and np.asarray(out).tolist() == [[[True, True, True]]]
    out = lax.conv_general_dilated(x, w, (1,), "VALID", preferred_element_type=jnp.int32)
    assert out.dtype == np.int32 and np.asarray(out).tolist() == [[[1, 1, 2]]]
    with pytest.raises(TypeError, match="requires arguments to have the same dtypes, got bool, int32"):
        lax.conv_general_dilated(x, w.astype(jnp.int32), (1,), "VALID")


def test_conv_bool_is_or_of_ands_eager_and_jit():
    from fjax import lax

    rng = np.random.RandomState(0)
    x, w = rng.rand(2, 3, 9, 7) > 0.7, rng.rand(4, 3, 3, 2) > 0.6

    def f(x, w):
        return lax.conv_general_dilated(x, w, (2, 1), "SAME", rhs_dilation=(1, 2))

    ref = np.asarray(f(jnp.asarray(x.astype(np.int32)), jnp.asarray(w.astype(np.int32)))) != 0
    np.testing.assert_array_equal(np.asarray(f(jnp.asarray(x), jnp.asarray(w))), ref)
    np.testing.assert_array_equal(np.asarray(fjax.jit(f)(jnp.asarray(x), jnp.asarray(w))), ref)


# ---- max / min of low-precision floats with NaNs -------------------------------------------------


@pytest.mark.parametrize("dt", [jnp.bfloat16, jnp.float8_e4m3fn, jnp.float8_e5m2, jnp.float16])
def test_max_min_with_nan_are_silent(dt):
    import warnings

    from fjax import lax

    x = jnp.asarray(np.array([[1.0, nan, 3.0], [2.0, -1.0, 0.5]]), dt)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # JAX warns nothing
        out = [jnp.max(x, axis=1), jnp.min(x, axis=1), jnp.max(x), lax.reduce_min(x, (0,)), jnp.ptp(x, axis=1)]
    as32 = [np.asarray(o, np.float32).tolist() for o in out]
    assert np.isnan(as32[0][0]) and as32[0][1] == 2.0
    assert np.isnan(as32[1][0]) and as32[1][1] == -1.0
    assert np.isnan(as32[2])
    assert as32[3][0] == 1.0 and np.isnan(as32[3][1]) and as32[3][2] == 0.5
    assert np.isnan(as32[4][0]) and as32[4][1] == 3.0
    assert all(o.dtype == dt for o in out)


# ---- set operations with NaNs -------------------------------------------------------------------

_SA = np.array([1.0, nan, 2.0, nan, 3.0, 0.0, -0.0])
_SB = np.array([nan, 2.0, 5.0, nan, -0.0, 1.0])
_SET_CASES = {
    "intersect1d": (lambda a, b: jnp.intersect1d(a, b), [0.0, 1.0, 2.0]),
    "intersect1d_indices": (lambda a, b: jnp.intersect1d(a, b, return_indices=True)[1:], ([5, 0, 2], [4, 5, 1])),
    "intersect1d_unique": (lambda a, b: jnp.intersect1d(a, b, assume_unique=True), [0.0, -0.0, 1.0, 2.0]),
    "setxor1d": (lambda a, b: jnp.setxor1d(a, b), [3.0, 5.0, nan, nan]),
    "setxor1d_unique": (lambda a, b: jnp.setxor1d(a, b, assume_unique=True), [3.0, 5.0, nan, nan, nan, nan]),
    "union1d": (lambda a, b: jnp.union1d(a, b), [0.0, 1.0, 2.0, 3.0, 5.0, nan]),
    "setdiff1d": (lambda a, b: jnp.setdiff1d(a, b), [3.0, nan]),
    "setdiff1d_unique": (lambda a, b: jnp.setdiff1d(a, b, assume_unique=True), [nan, nan, 3.0]),
    "isin": (lambda a, b: jnp.isin(a, b), [True, False, True, False, False, True, True]),
    "setdiff1d_size": (lambda a, b: jnp.setdiff1d(a, b, size=5), [3.0, nan, 0.0, 0.0, 0.0]),
    "intersect1d_size": (lambda a, b: jnp.intersect1d(a, b, size=4, fill_value=7), [0.0, 1.0, 2.0, 7.0]),
    "setxor1d_size": (lambda a, b: jnp.setxor1d(a, b, size=6), [3.0, 5.0, nan, nan, nan, nan]),
}
# the fnuz float8 dtypes sort their one NaN first (as XLA)
_FNUZ = {
    "setxor1d": [nan, nan, 3.0, 5.0],
    "setxor1d_unique": [nan, nan, nan, nan, 3.0, 5.0],
    "union1d": [nan, 0.0, 1.0, 2.0, 3.0, 5.0],
    "setdiff1d": [nan, 3.0],
    "setdiff1d_size": [nan, 3.0, nan, nan, 0.0],
    "setxor1d_size": [nan, nan, 3.0, 5.0, nan, nan],
    "intersect1d_unique": [0.0, 0.0, 1.0, 2.0],
}


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz"])
@pytest.mark.parametrize("case", sorted(_SET_CASES))
def test_set_operations_with_nan_match_jax(dt, case):
    fn, want = _SET_CASES[case]
    if dt == "float8_e4m3fnuz":
        want = _FNUZ.get(case, want)
    a, b = jnp.asarray(_SA, dt), jnp.asarray(_SB, dt)
    got = fn(a, b)
    if isinstance(got, tuple):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), w)
        return
    if case != "isin":
        assert got.dtype == np.dtype(getattr(jnp, dt))
    g = np.asarray(got).astype(np.float64) if case != "isin" else np.asarray(got)
    np.testing.assert_array_equal(g, want)
    if case == "intersect1d_unique" and dt != "float8_e4m3fnuz":
        np.testing.assert_array_equal(np.signbit(g), [False, True, False, False])


def test_set_operations_with_size_trace():
    a = jnp.asarray(_SA, jnp.float32)
    b = jnp.asarray(_SB, jnp.float32)
    vals, i1, i2 = fjax.jit(lambda a, b: jnp.intersect1d(a, b, size=4, return_indices=True))(a, b)
    np.testing.assert_array_equal(np.asarray(vals), [0.0, 1.0, 2.0, 0.0])
    np.testing.assert_array_equal(np.asarray(i1), [5, 0, 2, 7])
    np.testing.assert_array_equal(np.asarray(i2), [4, 5, 1, 6])
    out = fjax.jit(lambda a, b: jnp.setxor1d(a, b, size=7, fill_value=-1))(a, b)
    np.testing.assert_array_equal(np.asarray(out), [3.0, 5.0, nan, nan, -1.0, -1.0, -1.0])
    out = fjax.jit(lambda a, b: jnp.setdiff1d(a, b, size=3))(a, b)
    np.testing.assert_array_equal(np.asarray(out), [3.0, nan, 0.0])
