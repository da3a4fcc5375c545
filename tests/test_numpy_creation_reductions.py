"""fjax.numpy array creation, dtypes and reductions against numpy, with JAX's dtype rules
(sum of bool/int8 -> int32, mean of ints -> float32, results strongly typed)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fjax
import fjax.numpy as jnp
from fjax import dtypes

DTYPES = [np.bool_, np.int8, np.int32, np.uint8, np.uint32, np.float16, np.float32]


def _values(dt, shape):
    dt = np.dtype(dt)
    if dt == np.bool_:
        el = st.booleans()
    elif dt.kind == "u":
        el = st.integers(0, 4)
    elif dt.kind == "i":
        el = st.integers(-4, 4)
    else:
        el = st.floats(-3, 3, width=16 if dt == np.float16 else 32)
    return hnp.arrays(dt, shape, elements=el)


@st.composite
def array_and_axis(draw, dts=DTYPES, min_side=0):
    dt = draw(st.sampled_from(dts))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=min_side, max_side=4))
    a = draw(_values(dt, shape))
    nd = a.ndim
    axis = draw(
        st.one_of(
            st.none(),
            st.integers(-nd, nd - 1) if nd else st.none(),
            st.lists(st.integers(0, nd - 1), unique=True, max_size=nd).map(tuple) if nd else st.none(),
        )
    )
    return a, axis, draw(st.booleans())


def _sum_dtype(dt):
    dt = np.dtype(dt)
    if dt == np.bool_ or (dt.kind == "i" and dt.itemsize < 4):
        return np.dtype(np.int32)
    if dt.kind == "u" and dt.itemsize < 4:
        return np.dtype(np.uint32)
    return dtypes.canonicalize_dtype(dt)


def _inexact(dt):
    return np.dtype(dt) if np.dtype(dt).kind in "fc" else np.dtype(np.float32)


def _check(out, expected, dt, tol=None):
    out = np.asarray(out)
    assert out.dtype == dt, (out.dtype, dt)
    assert out.shape == np.shape(expected), (out.shape, np.shape(expected))
    if dt.kind in "fc":
        tol = tol or (1e-2 if dt == np.float16 else 1e-5)
        np.testing.assert_allclose(out, np.asarray(expected).astype(dt), rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(out, np.asarray(expected).astype(dt))


REDUCTIONS = [
    ("sum", np.sum, _sum_dtype),
    ("prod", np.prod, _sum_dtype),
    ("max", np.max, np.dtype),
    ("min", np.min, np.dtype),
    ("amax", np.amax, np.dtype),
    ("all", np.all, lambda dt: np.dtype(bool)),
    ("any", np.any, lambda dt: np.dtype(bool)),
    ("mean", np.mean, _inexact),
    ("var", np.var, _inexact),
    ("std", np.std, _inexact),
    ("nansum", np.nansum, _sum_dtype),
    ("ptp", np.ptp, np.dtype),
    ("count_nonzero", np.count_nonzero, lambda dt: np.dtype(np.int32)),
]


@pytest.mark.parametrize("name,np_fn,rule", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
@given(data=st.data())
def test_reduction_matches_numpy(name, np_fn, rule, data):
    kinds_ok = [d for d in DTYPES if not (name == "ptp" and np.dtype(d) == np.bool_)]
    a, axis, keepdims = data.draw(array_and_axis(kinds_ok))
    dt = rule(a.dtype)
    axes = range(a.ndim) if axis is None else ([axis] if isinstance(axis, int) else axis)
    empty = any(a.shape[i] == 0 for i in axes)
    if name in ("max", "min", "amax", "ptp") and empty:
        with pytest.raises(ValueError):
            getattr(jnp, name)(a, axis=axis, keepdims=keepdims)
        return
    out = getattr(jnp, name)(a, axis=axis, keepdims=keepdims)
    with np.errstate(all="ignore"):
        if name in ("sum", "prod", "nansum"):
            expected = np_fn(a.astype(dt), axis=axis, keepdims=keepdims)
        elif name in ("mean", "var", "std"):
            expected = np_fn(a.astype(np.float64), axis=axis, keepdims=keepdims)
        else:
            expected = np_fn(a, axis=axis, keepdims=keepdims)
    _check(out, expected, dt, tol=2e-2 if a.dtype == np.float16 else None)
    assert not out.weak_type


@pytest.mark.parametrize("name,np_fn", [("argmax", np.argmax), ("argmin", np.argmin)])
@given(data=st.data())
def test_argmax_argmin(name, np_fn, data):
    a, axis, keepdims = data.draw(array_and_axis(min_side=1))
    if isinstance(axis, tuple):
        axis = axis[0] if axis else None
    out = getattr(jnp, name)(a, axis=axis, keepdims=keepdims)
    _check(out, np_fn(a, axis=axis, keepdims=keepdims), np.dtype(np.int32))


@pytest.mark.parametrize("name,np_fn", [("cumsum", np.cumsum), ("cumprod", np.cumprod)])
@given(data=st.data())
def test_cumulative(name, np_fn, data):
    a, axis, _ = data.draw(array_and_axis([np.bool_, np.int8, np.int32, np.float32]))
    if isinstance(axis, tuple):
        axis = axis[0] if axis else None
    dt = np.dtype(np.int32) if a.dtype == np.bool_ else a.dtype
    out = getattr(jnp, name)(a, axis=axis)
    _check(out, np_fn(a.astype(dt), axis=axis), dt)


def test_reduction_dtype_rules():
    assert jnp.sum(jnp.ones(3, jnp.int8)).dtype == np.int32
    assert jnp.sum(jnp.ones(3, bool)).dtype == np.int32
    assert jnp.sum(jnp.ones(3, jnp.uint8)).dtype == np.uint32
    assert jnp.prod(jnp.ones(3, jnp.int8)).dtype == np.int32
    assert jnp.max(jnp.ones(3, jnp.int8)).dtype == np.int8
    assert jnp.mean(jnp.arange(3)).dtype == np.float32
    assert jnp.mean(jnp.ones(3, jnp.float16)).dtype == np.float16
    assert jnp.var(jnp.ones(3, jnp.complex64)).dtype == np.float32
    assert not jnp.sum(jnp.sin(2.0)).weak_type
    assert not jnp.max(jnp.sin(2.0)).weak_type
    assert jnp.sum(jnp.ones(3), dtype=jnp.int32).dtype == np.int32
    assert jnp.sum(jnp.arange(3), initial=2.5) == 5
    assert jnp.cumsum(jnp.ones(3, jnp.int8)).dtype == np.int8
    assert jnp.cumsum(jnp.ones(3, bool)).dtype == np.int32
    assert jnp.argmax(jnp.arange(3.0)).dtype == np.int32


def test_where_and_initial():
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    m = np.array([True, False, True])
    np.testing.assert_allclose(jnp.sum(a, where=m), np.sum(a, where=m))
    np.testing.assert_allclose(jnp.sum(a, axis=1, where=m, initial=1.0), np.sum(a, axis=1, where=m, initial=1.0))
    np.testing.assert_allclose(jnp.prod(a + 1, axis=0, where=m), np.prod(a + 1, axis=0, where=m))
    np.testing.assert_allclose(jnp.max(a, axis=1, where=m, initial=-1.0), np.max(a, axis=1, where=m, initial=-1.0))
    np.testing.assert_allclose(jnp.min(a, where=m, initial=10.0), np.min(a, where=m, initial=10.0))
    np.testing.assert_allclose(jnp.mean(a, axis=1, where=m), np.mean(a, axis=1, where=m))
    np.testing.assert_allclose(jnp.var(a, axis=1, where=m), np.var(a, axis=1, where=m), rtol=1e-6)
    np.testing.assert_array_equal(jnp.all(a > 0, axis=1, where=m), np.all(a > 0, axis=1, where=m))
    np.testing.assert_array_equal(jnp.any(a > 4, where=m), np.any(a > 4, where=m))
    with pytest.raises(ValueError, match="initial"):
        jnp.max(a, where=m)
    with pytest.raises(ValueError):
        jnp.max(jnp.ones((0, 3)))
    np.testing.assert_array_equal(jnp.max(jnp.ones((0, 3)), axis=0, initial=-1.0), [-1, -1, -1])
    with pytest.raises(NotImplementedError):
        jnp.sum(a, out=np.zeros(()))


def test_var_std_options():
    x = np.array([1.0, 2.0, 4.0, 7.0], np.float32)
    np.testing.assert_allclose(jnp.var(x, ddof=1), np.var(x, ddof=1), rtol=1e-6)
    np.testing.assert_allclose(jnp.std(x, correction=1), np.std(x, ddof=1), rtol=1e-6)
    assert np.isnan(jnp.var(x, ddof=5))
    assert jnp.std(jnp.arange(3), ddof=1, dtype=jnp.float16).dtype == np.float16
    with pytest.raises(ValueError):
        jnp.var(x, ddof=1, correction=1)


def test_nan_reductions_and_stats():
    x = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan]], np.float32)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        np.testing.assert_allclose(jnp.nanmean(x, axis=1), np.nanmean(x, axis=1))
    np.testing.assert_allclose(jnp.nansum(x, axis=1), np.nansum(x, axis=1))
    np.testing.assert_allclose(jnp.nanprod(x, axis=1), np.nanprod(x, axis=1))
    with pytest.warns(RuntimeWarning):
        np.testing.assert_allclose(jnp.nanmax(x, axis=1), np.nanmax(x, axis=1))
    with pytest.warns(RuntimeWarning):
        np.testing.assert_allclose(jnp.nanmin(x, axis=1), np.nanmin(x, axis=1))
    np.testing.assert_allclose(jnp.nanvar(x[0]), np.nanvar(x[0]))
    np.testing.assert_allclose(jnp.nanstd(x[0]), np.nanstd(x[0]))
    np.testing.assert_allclose(jnp.nancumsum(x[0]), np.nancumsum(x[0]))
    np.testing.assert_array_equal(jnp.nanargmax(x[0]), np.nanargmax(x[0]))
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    w = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    np.testing.assert_allclose(jnp.average(a, axis=1, weights=w), np.average(a, axis=1, weights=w), rtol=1e-6)
    avg, sw = jnp.average(a, axis=0, returned=True)
    navg, nsw = np.average(a, axis=0, returned=True)
    np.testing.assert_allclose(avg, navg)
    np.testing.assert_allclose(sw, nsw)
    assert jnp.average(jnp.arange(3), weights=jnp.arange(3)).dtype == np.float32
    np.testing.assert_array_equal(jnp.ptp(a, axis=0), np.ptp(a, axis=0))
    np.testing.assert_array_equal(jnp.count_nonzero(a, axis=1), np.count_nonzero(a, axis=1))


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
def test_quantiles(method):
    pytest.importorskip("fjax.numpy._sorting")
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 7)).astype(np.float32)
    q = np.array([0.0, 0.25, 0.5, 0.9, 1.0], np.float32)

    def ref(x, q, axis, fn):
        if method != "nearest":
            return fn(x, q, axis=axis, method=method)
        # JAX's 'nearest' takes the lower value at exact halfway positions (numpy rounds to even)
        pos = np.asarray(q, np.float32) / (100 if fn is np.percentile else 1) * (x.shape[axis] - 1)
        lo, hi = fn(x, q, axis=axis, method="lower"), fn(x, q, axis=axis, method="higher")
        frac = (pos - np.floor(pos)).reshape(np.shape(pos) + (1,) * (lo.ndim - np.ndim(pos)))
        return np.where(frac <= 0.5, lo, hi)

    np.testing.assert_allclose(jnp.quantile(a, q, axis=1, method=method), ref(a, q, 1, np.quantile), rtol=1e-5)
    np.testing.assert_allclose(
        jnp.percentile(a, 30.0, axis=0, method=method), ref(a, 30.0, 0, np.percentile), rtol=1e-5
    )
    np.testing.assert_allclose(jnp.median(a, axis=1, keepdims=True), np.median(a, axis=1, keepdims=True), rtol=1e-6)


def test_reductions_under_transforms():
    x = jnp.arange(12.0).reshape(3, 4)

    def f(v):
        return jnp.sum(v, axis=0) + jnp.mean(v) + jnp.max(v, axis=-1, keepdims=True).sum() + jnp.std(v, axis=0)

    np.testing.assert_allclose(fjax.jit(f)(x), f(x), rtol=1e-6)
    np.testing.assert_allclose(
        fjax.vmap(f)(jnp.stack([x, 2 * x]) if hasattr(jnp, "stack") else x[None])[0], f(x), rtol=1e-6
    )
    g = fjax.grad(lambda v: jnp.var(v))(jnp.array([1.0, 2.0, 4.0]))
    np.testing.assert_allclose(g, 2 * (np.array([1, 2, 4]) - 7 / 3) / 3, rtol=1e-5)
    np.testing.assert_allclose(fjax.grad(lambda v: jnp.max(v))(jnp.array([1.0, 3.0, 2.0])), [0, 1, 0])
    np.testing.assert_allclose(fjax.grad(lambda v: jnp.prod(v))(jnp.array([1.0, 2.0, 3.0])), [6, 3, 2])


# ---------------------------------------------------------------------------------------------
# creation


def test_array_dtypes_and_weak_types():
    a = jnp.array(2.0)
    assert a.dtype == np.float32 and a.weak_type  # JAX 0.10: Python scalars stay weak in jnp.array
    assert not jnp.array(2.0, dtype=jnp.float32).weak_type
    assert jnp.array(2).dtype == np.int32 and jnp.array(True).dtype == np.bool_
    assert not jnp.array([1.0, 2.0]).weak_type and jnp.array([1.0, 2.0]).dtype == np.float32
    assert jnp.array([1, 2.0]).dtype == np.float32
    assert jnp.array([np.int8(1), 2]).dtype == np.int8
    assert jnp.array([jnp.int8(1), 2]).dtype == np.int8
    assert jnp.array([np.float16(1), 2.0]).dtype == np.float16
    assert jnp.array(np.float64(2.0)).dtype == np.float32
    assert jnp.array(np.arange(3, dtype=np.int64)).dtype == np.int32
    assert jnp.array([]).dtype == np.float32 and jnp.array([]).shape == (0,)
    assert jnp.array([[1, 2], [3, 4]], ndmin=3).shape == (1, 2, 2)
    assert jnp.array([(1, 2), [3.0, 4]]).dtype == np.float32
    assert jnp.array(jnp.sin(1.0)).weak_type
    with pytest.raises(OverflowError):
        jnp.array(2**40)
    with pytest.raises(TypeError):
        jnp.array("a")
    with pytest.raises(ValueError):
        jnp.array([[1, 2], [3]])
    x = jnp.arange(3)
    assert jnp.asarray(x) is x
    src = np.arange(3.0, dtype=np.float32)
    b = jnp.array(src)
    src[0] = 10
    assert b[0] == 0


def test_array_of_tracers():
    def f(x):
        return jnp.array([[x, 2 * x], [x * x, 1.0]])

    np.testing.assert_allclose(f(3.0), [[3, 6], [9, 1]])
    np.testing.assert_allclose(fjax.jit(f)(3.0), [[3, 6], [9, 1]])
    np.testing.assert_allclose(fjax.grad(lambda x: f(x).sum())(3.0), 1 + 2 + 6)
    np.testing.assert_allclose(
        fjax.vmap(f)(jnp.array([1.0, 2.0]))[:, 1, 0] if False else fjax.vmap(f)(jnp.array([1.0, 2.0])).sum(axis=(1, 2)),
        [1 + 2 + 1 + 1, 2 + 4 + 4 + 1],
    )
    big = fjax.jit(lambda x: jnp.array([x * i for i in range(40)]))(2.0)
    np.testing.assert_allclose(big, 2.0 * np.arange(40))


def test_scalar_types():
    f = jnp.float32(1.5)
    assert isinstance(f, fjax.Array) and f.dtype == np.float32 and not f.weak_type and f.shape == ()
    assert jnp.int32(2.7) == 2 and jnp.int32(2.7).dtype == np.int32
    assert jnp.float32([1, 2]).shape == (2,)
    assert jnp.float64(1.5).dtype == np.float32  # x64 off
    assert jnp.bool_(1).dtype == np.bool_
    assert np.dtype(jnp.float32) == np.float32
    assert jnp.dtype(jnp.int8) == np.int8
    assert jnp.float32 == np.float32 and hash(jnp.float32) == hash(np.float32)
    assert jnp.float32.dtype == np.dtype(np.float32)
    assert isinstance(np.float32(1), jnp.float32)
    assert jnp.zeros(2, dtype=jnp.float16).dtype == np.float16
    assert jnp.issubdtype(jnp.float32, jnp.floating) and jnp.issubdtype(jnp.int8, jnp.integer)
    assert not jnp.issubdtype(jnp.float32, jnp.integer)
    assert jnp.issubdtype(jnp.uint8, jnp.unsignedinteger) and jnp.issubdtype(jnp.complex64, jnp.complexfloating)
    assert jnp.issubdtype(jnp.float16, jnp.inexact) and jnp.issubdtype(jnp.int8, jnp.signedinteger)
    assert jnp.issubdtype(np.float32, jnp.number) and jnp.issubdtype(np.bool_, jnp.generic)
    assert jnp.result_type(1, jnp.float16) == np.float16 and jnp.result_type(2.0) == np.float32
    assert jnp.promote_types(jnp.int8, jnp.uint8) == np.int16
    assert not jnp.can_cast(jnp.int32, jnp.float32) and jnp.can_cast(jnp.int8, jnp.int32)
    assert jnp.iinfo(jnp.int32).max == 2**31 - 1 and jnp.finfo(jnp.float32).eps == np.finfo(np.float32).eps
    assert jnp.pi == np.pi and jnp.e == np.e and jnp.inf == np.inf and np.isnan(jnp.nan) and jnp.newaxis is None
    assert isinstance(jnp.ones(3), jnp.ndarray)
    seen = []
    fjax.jit(lambda x: seen.append(isinstance(x, jnp.ndarray)) or x)(1.0)
    fjax.grad(lambda x: seen.append(isinstance(x, jnp.ndarray)) or x)(1.0)
    assert seen == [True, True]
    assert not isinstance(np.ones(3), jnp.ndarray)


def test_filled_arrays():
    assert jnp.zeros(3).dtype == np.float32 and not jnp.zeros(3).weak_type
    assert jnp.zeros((2, 3), dtype=int).dtype == np.int32 and jnp.zeros((2, 3), int).shape == (2, 3)
    assert jnp.ones((), bool).dtype == np.bool_
    f = jnp.full(3, 2.0)
    assert f.weak_type and f.dtype == np.float32
    assert jnp.full(3, 2).dtype == np.int32
    np.testing.assert_array_equal(jnp.full((2, 2), jnp.array([1.0, 2.0])), [[1, 2], [1, 2]])
    assert jnp.full((2,), 3, dtype=jnp.float16).dtype == np.float16
    assert jnp.zeros_like(jnp.sin(2.0)).weak_type
    assert jnp.zeros_like(3.0).weak_type
    assert jnp.ones_like(np.ones(2)).dtype == np.float32
    assert jnp.ones_like(jnp.arange(3), dtype=float).dtype == np.float32
    np.testing.assert_array_equal(jnp.full_like(jnp.arange(3), 2.7), [2, 2, 2])
    e = jnp.empty_like(jnp.ones(2, jnp.int8), shape=(3,))
    assert e.shape == (3,) and e.dtype == np.int8
    assert jnp.empty((2, 0)).shape == (2, 0)
    with pytest.raises(TypeError):  # as JAX (its broadcast_in_dim's TypeError)
        jnp.zeros(-1)
    np.testing.assert_allclose(
        fjax.jit(lambda v: jnp.full_like(v, v[0]) + jnp.zeros_like(v))(jnp.arange(3.0) + 1), [1, 1, 1]
    )


@given(start=st.integers(-5, 5), stop=st.integers(-5, 10), step=st.sampled_from([1, 2, 3, -1, -2]))
def test_arange_ints(start, stop, step):
    out = jnp.arange(start, stop, step)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.arange(start, stop, step))


def test_arange_forms():
    assert jnp.arange(5).dtype == np.int32 and not jnp.arange(5).weak_type
    np.testing.assert_array_equal(jnp.arange(5), np.arange(5))
    np.testing.assert_allclose(jnp.arange(1, 2, 0.3), np.arange(1, 2, 0.3, dtype=np.float32))
    assert jnp.arange(5.0).dtype == np.float32
    assert jnp.arange(0, 5, 2.0).dtype == np.float32
    assert jnp.arange(5, dtype=jnp.float16).dtype == np.float16
    assert jnp.arange(-1).shape == (0,)
    np.testing.assert_array_equal(jnp.arange(jnp.array(3)), [0, 1, 2])
    assert "iota" in str(fjax.make_jaxpr(lambda: jnp.arange(4))())
    with pytest.raises(fjax.ConcretizationTypeError):
        fjax.jit(lambda n: jnp.arange(n))(3)


@given(num=st.integers(0, 7), endpoint=st.booleans(), start=st.floats(-3, 3), stop=st.floats(-3, 3))
def test_linspace(num, endpoint, start, stop):
    out = jnp.linspace(start, stop, num, endpoint=endpoint)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, np.linspace(start, stop, num, endpoint=endpoint), rtol=1e-5, atol=1e-5)
    if num > 1:
        _, step = jnp.linspace(start, stop, num, endpoint=endpoint, retstep=True)
        _, nstep = np.linspace(start, stop, num, endpoint=endpoint, retstep=True)
        np.testing.assert_allclose(step, nstep, rtol=1e-5, atol=1e-6)


def test_linspace_logspace_options():
    np.testing.assert_array_equal(jnp.linspace(0, 10, 5, dtype=int), [0, 2, 5, 7, 10])
    s, e = np.array([0.0, 1.0]), 2.0
    np.testing.assert_allclose(jnp.linspace(s, e, 3, axis=-1), np.linspace(s, e, 3, axis=-1))
    np.testing.assert_allclose(jnp.linspace(s, e, 3, axis=0), np.linspace(s, e, 3, axis=0))
    np.testing.assert_allclose(jnp.logspace(0, 2, 3), [1, 10, 100], rtol=1e-6)
    np.testing.assert_allclose(jnp.logspace(0, 3, 4, base=2.0), [1, 2, 4, 8], rtol=1e-6)
    np.testing.assert_allclose(jnp.geomspace(1, 1000, 4), [1, 10, 100, 1000], rtol=1e-5)
    np.testing.assert_allclose(jnp.geomspace(-1, -100, 3), [-1, -10, -100], rtol=1e-5)
    np.testing.assert_allclose(fjax.grad(lambda a: jnp.linspace(a, 2.0, 5).sum())(0.0), 2.5)


@given(n=st.integers(0, 4), m=st.one_of(st.none(), st.integers(0, 4)), k=st.integers(-3, 3))
def test_eye_tri(n, m, k):
    np.testing.assert_array_equal(jnp.eye(n, m, k), np.eye(n, m, k))
    assert jnp.eye(n, m, k).dtype == np.float32
    np.testing.assert_array_equal(jnp.tri(n, m, k), np.tri(n, m, k))
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(jnp.tril(a, k), np.tril(a, k))
    np.testing.assert_array_equal(jnp.triu(a, k), np.triu(a, k))


@given(n=st.integers(0, 4), k=st.integers(-3, 3))
def test_diag_diagonal(n, k):
    v = np.arange(1, n + 1, dtype=np.int32)
    np.testing.assert_array_equal(jnp.diag(v, k), np.diag(v, k))
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(jnp.diagonal(a, k, 1, 2), np.diagonal(a, k, 1, 2))
    np.testing.assert_array_equal(jnp.diagonal(a, k, 2, 0), np.diagonal(a, k, 2, 0))
    np.testing.assert_array_equal(jnp.diag(a[0], k), np.diag(a[0], k))


def test_identity_meshgrid_indices_copy():
    np.testing.assert_array_equal(jnp.identity(3, dtype=int), np.identity(3, dtype=int))
    x, y, z = np.arange(2), np.arange(3), np.arange(4)
    for indexing in ("xy", "ij"):
        for sparse in (False, True):
            for got, want in zip(
                jnp.meshgrid(x, y, z, indexing=indexing, sparse=sparse),
                np.meshgrid(x, y, z, indexing=indexing, sparse=sparse),
            ):
                np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(jnp.indices((2, 3)), np.indices((2, 3)))
    for got, want in zip(jnp.indices((2, 3), sparse=True), np.indices((2, 3), sparse=True)):
        np.testing.assert_array_equal(got, want)
    c = jnp.copy(jnp.arange(3))
    np.testing.assert_array_equal(c, [0, 1, 2])
