"""Tests for fjax.lax.other: cumulative reductions, sort, sort_key_val and top_k.

Expected values in the fixed-example tests were recorded with jax 0.10.2 (lax.cumprod/cummax
jacobians, sort order of NaN / -0.0, top_k order).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.lax import other
from fjax.test_util import check_grads

CUM_REFS = {
    "cumsum": np.add,
    "cumprod": np.multiply,
    "cummax": np.maximum,
    "cummin": np.minimum,
    "cumlogsumexp": np.logaddexp,
}


def _np_cum(name, x, axis, reverse):
    uf = CUM_REFS[name]
    if reverse:
        return np.flip(uf.accumulate(np.flip(x, axis), axis=axis), axis)
    return uf.accumulate(x, axis=axis)


@st.composite
def shape_and_axis(draw, max_rank=3, max_size=4):
    shape = tuple(draw(st.lists(st.integers(1, max_size), min_size=1, max_size=max_rank)))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    return shape, axis


def _distinct(rng, shape, dtype=np.float32):
    """Values with no ties (so max/min and sort are differentiable) and away from zero."""
    n = int(np.prod(shape))
    vals = (rng.permutation(n) + 1.0) * 0.37 * rng.choice([-1.0, 1.0], n)
    return vals.reshape(shape).astype(dtype)


# ---------------------------------------------------------------------------------------------
# cumulative reductions


@pytest.mark.parametrize("name", sorted(CUM_REFS))
@given(sa=shape_and_axis(), reverse=st.booleans(), seed=st.integers(0, 2**16))
def test_cumulative_values(name, sa, reverse, seed):
    shape, axis = sa
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    got = getattr(other, name)(x, axis=axis, reverse=reverse)
    assert got.dtype == np.float32 and got.shape == shape
    np.testing.assert_allclose(np.asarray(got), _np_cum(name, x, axis % len(shape), reverse), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin"])
def test_cumulative_int(name):
    x = np.array([[3, -1, 4], [1, 5, -9]], np.int32)
    for axis in (0, 1):
        for reverse in (False, True):
            got = getattr(other, name)(x, axis=axis, reverse=reverse)
            assert got.dtype == np.int32
            np.testing.assert_array_equal(np.asarray(got), _np_cum(name, x, axis, reverse))


@pytest.mark.parametrize("name", sorted(CUM_REFS))
@given(sa=shape_and_axis(max_rank=2), reverse=st.booleans(), seed=st.integers(0, 2**16))
def test_cumulative_grads(name, sa, reverse, seed):
    shape, axis = sa
    x = _distinct(np.random.default_rng(seed), shape)
    if name == "cumprod":
        x = x / np.abs(x).max() * 1.5  # keep products O(1)
    if name == "cumlogsumexp":
        # its second derivatives are small differences of softmax weights: in float32 the
        # finite-difference side of the order-2 check is at the edge of its tolerance (the AD
        # side agrees with float64 to 1e-7, see test_cumlogsumexp_second_order_float32), so
        # check the derivatives themselves in float64
        from fjax import config

        old = config.jax_enable_x64
        config.update("jax_enable_x64", True)
        try:
            f = lambda v: other.cumlogsumexp(v, axis=axis, reverse=reverse)  # noqa: E731
            check_grads(f, (x.astype(np.float64),), order=2, modes=("fwd", "rev"))
        finally:
            config.update("jax_enable_x64", old)
        return
    check_grads(lambda v: getattr(other, name)(v, axis=axis, reverse=reverse), (x,), order=2, modes=("fwd", "rev"))


def test_cumlogsumexp_second_order_float32(x64):
    """float32 first and second derivatives of cumlogsumexp agree with float64 to float32 rounding."""
    import fjax.numpy as jnp

    rng = np.random.RandomState(0)
    x = _distinct(np.random.default_rng(130), (4, 4), np.float64)
    u, v = rng.randn(4, 4), rng.randn(4, 4)

    def derivs(dt):
        f = lambda z: other.cumlogsumexp(z, axis=1, reverse=True)  # noqa: E731
        g = lambda z: fjax.vjp(f, z)[1](jnp.asarray(u.astype(dt)))[0]  # noqa: E731
        jtu, hv = fjax.jvp(g, (jnp.asarray(x.astype(dt)),), (jnp.asarray(v.astype(dt)),))
        _, jv = fjax.jvp(f, (jnp.asarray(x.astype(dt)),), (jnp.asarray(v.astype(dt)),))
        assert jtu.dtype == dt
        return [np.asarray(a, np.float64) for a in (jtu, hv, jv)]

    for a, b in zip(derivs(np.float32), derivs(np.float64)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_cumprod_jacobian_with_zeros_is_exact():
    x = np.array([2.0, 0.0, 3.0, 0.0], np.float32)
    expected = np.array([[1, 0, 0, 0], [0, 2, 0, 0], [0, 6, 0, 0], [0, 0, 0, 0]], np.float32)  # jax 0.10.2
    np.testing.assert_array_equal(np.asarray(fjax.jacfwd(other.cumprod)(x)), expected)
    np.testing.assert_array_equal(np.asarray(fjax.jacrev(other.cumprod)(x)), expected)
    y = np.array([2.0, 0.0, 3.0, 5.0], np.float32)
    expected_rev = np.array([[0, 30, 0, 0], [0, 15, 0, 0], [0, 0, 5, 3], [0, 0, 0, 1]], np.float32)
    np.testing.assert_array_equal(np.asarray(fjax.jacrev(lambda v: other.cumprod(v, reverse=True))(y)), expected_rev)
    # second derivative through zeros: d2 out_3 / dx_1 dx_3 = x_0 x_2
    h = fjax.hessian(lambda v: other.cumprod(v)[3])(x)
    assert float(h[1, 3]) == 6.0 and float(h[0, 1]) == 0.0


def test_cummax_jacobian_ties_split_equally():
    x = np.array([1.0, 3.0, 3.0, 2.0, 5.0, 5.0], np.float32)
    expected = np.array(
        [
            [1, 0, 0, 0, 0, 0],
            [0, 1, 0, 0, 0, 0],
            [0, 0.5, 0.5, 0, 0, 0],
            [0, 0.5, 0.5, 0, 0, 0],
            [0, 0, 0, 0, 1, 0],
            [0, 0, 0, 0, 0.5, 0.5],
        ],
        np.float32,
    )  # jax 0.10.2
    np.testing.assert_allclose(np.asarray(fjax.jacfwd(other.cummax)(x)), expected)
    np.testing.assert_allclose(np.asarray(fjax.jacrev(other.cummax)(x)), expected)
    np.testing.assert_allclose(np.asarray(fjax.jacfwd(other.cummin)(-x)), expected)


def test_cumsum_transpose_is_reverse_cumsum():
    x = np.arange(5, dtype=np.float32)
    ct = np.array([1.0, 2.0, 3.0, 4.0, 5.0], np.float32)
    for reverse in (False, True):
        _, vjp = fjax.vjp(lambda v: other.cumsum(v, reverse=reverse), x)
        np.testing.assert_allclose(np.asarray(vjp(ct)[0]), _np_cum("cumsum", ct, 0, not reverse))


@pytest.mark.parametrize("name", sorted(CUM_REFS))
@given(sa=shape_and_axis(max_rank=2), reverse=st.booleans(), in_axis=st.integers(0, 2), seed=st.integers(0, 2**16))
def test_cumulative_vmap(name, sa, reverse, in_axis, seed):
    shape, axis = sa
    in_axis = min(in_axis, len(shape))
    rng = np.random.default_rng(seed)
    xs = rng.standard_normal(shape[:in_axis] + (3,) + shape[in_axis:]).astype(np.float32)
    f = lambda v: getattr(other, name)(v, axis=axis, reverse=reverse)  # noqa: E731
    got = fjax.vmap(f, in_axes=in_axis)(xs)
    ref = np.stack([np.asarray(f(np.take(xs, i, axis=in_axis))) for i in range(3)])
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-6)
    # batched derivatives too
    g = fjax.vmap(fjax.grad(lambda v: f(v).sum()), in_axes=in_axis)(xs)
    g_ref = np.stack([np.asarray(fjax.grad(lambda v: f(v).sum())(np.take(xs, i, axis=in_axis))) for i in range(3)])
    np.testing.assert_allclose(np.asarray(g), g_ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CUM_REFS))
def test_cumulative_jit(name):
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    f = lambda v: getattr(other, name)(v, axis=1, reverse=True)  # noqa: E731
    np.testing.assert_allclose(np.asarray(fjax.jit(f)(x)), np.asarray(f(x)), rtol=1e-6)
    assert "reverse=True" in str(fjax.make_jaxpr(f)(x))


def test_cumulative_errors():
    with pytest.raises(TypeError, match="cumsum does not accept dtype bool"):
        other.cumsum(np.array([True, False]))
    with pytest.raises(TypeError, match="cumlogsumexp"):
        other.cumlogsumexp(np.array([1, 2], np.int32))
    with pytest.raises(ValueError, match="out of bounds"):
        other.cumsum(np.ones(3, np.float32), axis=1)


def test_cumulative_nan_propagates():
    x = np.array([1.0, np.nan, 3.0], np.float32)
    assert np.isnan(np.asarray(other.cummax(x))[1:]).all()
    assert np.isnan(np.asarray(other.cummin(x))[1:]).all()


# ---------------------------------------------------------------------------------------------
# sort


def _np_sort_multi(ops, axis, num_keys):
    moved = [np.moveaxis(o, axis, -1) for o in ops]
    keys = []
    for k in reversed(moved[:num_keys]):
        keys += [np.where(np.isnan(k), 0, k), np.isnan(k)] if k.dtype.kind == "f" else [k]
    perm = np.lexsort(keys, axis=-1)
    return [np.moveaxis(np.take_along_axis(o, perm, -1), -1, axis) for o in moved]


def test_sort_special_values():
    x = np.array([np.nan, 1.0, -0.0, 0.0, -np.inf, np.inf, -np.nan, -1.0], np.float32)
    got = np.asarray(other.sort(x))
    np.testing.assert_array_equal(got, [-np.inf, -1.0, -0.0, 0.0, 1.0, np.inf, np.nan, np.nan])
    assert np.signbit(got[2]) and not np.signbit(got[3])  # stable: -0.0 and 0.0 compare equal
    z = np.array([0.0, -0.0, 0.0, -0.0], np.float32)
    np.testing.assert_array_equal(np.signbit(np.asarray(other.sort(z))), np.signbit(z))
    c = np.array([1 + 1j, 1 - 1j, -1 + 2j, np.nan], np.complex64)
    np.testing.assert_array_equal(np.asarray(other.sort(c)), np.array([-1 + 2j, 1 - 1j, 1 + 1j, np.nan], np.complex64))
    np.testing.assert_array_equal(np.asarray(other.sort(np.array([True, False]))), [False, True])


@given(sa=shape_and_axis(), num_keys=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_sort_multi_operand(sa, num_keys, seed):
    shape, axis = sa
    rng = np.random.default_rng(seed)
    ops = [
        rng.integers(0, 3, shape).astype(np.float32),
        rng.integers(0, 3, shape).astype(np.int32),
        rng.standard_normal(shape).astype(np.float32),
    ]
    ops[0][rng.random(shape) < 0.2] = np.nan
    got = other.sort(tuple(ops), dimension=axis, num_keys=num_keys)
    assert isinstance(got, tuple) and len(got) == 3
    for g, r, o in zip(got, _np_sort_multi(ops, axis % len(shape), num_keys), ops):
        assert g.dtype == o.dtype
        np.testing.assert_array_equal(np.asarray(g), r)
    k, v = other.sort_key_val(ops[0], ops[2], dimension=axis)
    r = _np_sort_multi([ops[0], ops[2]], axis % len(shape), 1)
    np.testing.assert_array_equal(np.asarray(k), r[0])
    np.testing.assert_array_equal(np.asarray(v), r[1])


@given(sa=shape_and_axis(max_rank=2), seed=st.integers(0, 2**16))
def test_sort_grads(sa, seed):
    shape, axis = sa
    rng = np.random.default_rng(seed)
    x = _distinct(rng, shape)
    y = rng.standard_normal(shape).astype(np.float32)
    check_grads(lambda v: other.sort(v, dimension=axis), (x,), order=2, modes=("fwd", "rev"))
    check_grads(lambda k, v: other.sort_key_val(k, v, dimension=axis), (x, y), order=2, modes=("fwd", "rev"))


def test_sort_int_key_tangent_is_zero():
    keys = np.array([2, 0, 1], np.int32)
    vals = np.array([1.0, 2.0, 3.0], np.float32)
    jac = fjax.jacfwd(lambda v: other.sort_key_val(keys, v)[1])(vals)
    np.testing.assert_array_equal(np.asarray(jac), [[0, 1, 0], [0, 0, 1], [1, 0, 0]])


@given(sa=shape_and_axis(max_rank=2), in_axis=st.integers(0, 2), seed=st.integers(0, 2**16))
def test_sort_vmap(sa, in_axis, seed):
    shape, axis = sa
    in_axis = min(in_axis, len(shape))
    rng = np.random.default_rng(seed)
    ks = rng.integers(0, 3, shape[:in_axis] + (3,) + shape[in_axis:]).astype(np.float32)
    v = rng.standard_normal(shape).astype(np.float32)  # unbatched values
    f = lambda k, vv: other.sort((k, vv), dimension=axis, num_keys=1)  # noqa: E731
    got = fjax.vmap(f, in_axes=(in_axis, None))(ks, v)
    refs = [f(np.take(ks, i, axis=in_axis), v) for i in range(3)]
    for j in range(2):
        np.testing.assert_array_equal(np.asarray(got[j]), np.stack([np.asarray(r[j]) for r in refs]))


def test_sort_jit_and_jaxpr():
    x = np.array([[3.0, 1.0, 2.0], [0.0, -1.0, 5.0]], np.float32)
    np.testing.assert_array_equal(np.asarray(fjax.jit(other.sort)(x)), np.sort(x, -1))
    text = str(fjax.make_jaxpr(lambda a: other.sort_key_val(a, a))(x))
    assert "sort[dimension=1 is_stable=True num_keys=1]" in text


def test_sort_errors():
    # (JAX 0.10.2: "Arguments to sort must have equal shapes, got: (3,) (4,)")
    with pytest.raises(TypeError, match="must have equal shapes"):
        other.sort((np.ones(3, np.float32), np.ones(4, np.float32)))
    with pytest.raises(ValueError, match="num_keys"):
        other.sort((np.ones(3, np.float32),), num_keys=2)


# ---------------------------------------------------------------------------------------------
# top_k


def _np_top_k(x, k, axis):
    xm = np.moveaxis(x, axis, -1)
    idx = np.argsort(-xm, axis=-1, kind="stable")[..., :k]
    return np.moveaxis(np.take_along_axis(xm, idx, -1), -1, axis), np.moveaxis(idx, -1, axis)


@given(sa=shape_and_axis(), data=st.data(), seed=st.integers(0, 2**16))
def test_top_k_values(sa, data, seed):
    shape, axis = sa
    k = data.draw(st.integers(0, shape[axis]))
    x = np.random.default_rng(seed).integers(-3, 4, shape).astype(np.float32)
    vals, idx = other.top_k(x, k, axis=axis)
    assert idx.dtype == np.int32
    rv, ri = _np_top_k(x, k, axis % len(shape))
    np.testing.assert_array_equal(np.asarray(vals), rv)
    np.testing.assert_array_equal(np.asarray(idx), ri)


def test_top_k_total_order():
    # jax 0.10.2: NaN above inf, -NaN below everything, 0.0 above -0.0, ties by lower index
    v, i = other.top_k(np.array([0.0, -0.0, 0.0, 1.0], np.float32), 4)
    np.testing.assert_array_equal(np.asarray(i), [3, 0, 2, 1])
    v, i = other.top_k(np.array([1.0, np.nan, 2.0, -np.nan, np.inf], np.float32), 5)
    np.testing.assert_array_equal(np.asarray(i), [1, 4, 2, 0, 3])
    v, i = other.top_k(np.array([3, 1, 3], np.int8), 2)
    np.testing.assert_array_equal(np.asarray(i), [0, 2])
    assert v.dtype == np.int8


@given(sa=shape_and_axis(max_rank=2), data=st.data(), seed=st.integers(0, 2**16))
def test_top_k_grads_vmap_jit(sa, data, seed):
    shape, axis = sa
    k = data.draw(st.integers(1, shape[axis]))
    x = _distinct(np.random.default_rng(seed), shape)
    f = lambda v: other.top_k(v, k, axis=axis)[0]  # noqa: E731
    check_grads(f, (x,), order=2, modes=("fwd", "rev"))
    np.testing.assert_array_equal(np.asarray(fjax.jit(f)(x)), np.asarray(f(x)))
    xs = np.stack([x, -x, 2 * x], axis=1 if len(shape) > 1 else 0)
    in_axis = 1 if len(shape) > 1 else 0
    got = fjax.vmap(lambda v: other.top_k(v, k, axis=axis), in_axes=in_axis)(xs)
    for j in range(2):
        ref = np.stack([np.asarray(other.top_k(np.take(xs, b, axis=in_axis), k, axis=axis)[j]) for b in range(3)])
        np.testing.assert_array_equal(np.asarray(got[j]), ref)


def test_top_k_errors():
    with pytest.raises(ValueError, match="no larger than"):
        other.top_k(np.ones(3, np.float32), 4)
    with pytest.raises(ValueError, match="out of bounds"):  # JAX: axis -1 of a rank-0 operand
        other.top_k(np.float32(1.0), 1)


# ---------------------------------------------------------------------------------------------
# associative_scan


@given(
    n=st.integers(0, 17),
    rest=st.sampled_from([(), (3,), (2, 2)]),
    axis_pos=st.integers(0, 2),
    reverse=st.booleans(),
    op=st.sampled_from(["add", "mul", "max"]),
    seed=st.integers(0, 2**16),
)
def test_associative_scan_matches_numpy(n, rest, axis_pos, reverse, op, seed):
    from fjax import lax

    axis = min(axis_pos, len(rest))
    shape = rest[:axis] + (n,) + rest[axis:]
    x = np.random.default_rng(seed).uniform(0.5, 1.5, shape).astype(np.float32)
    fn = {"add": lax.add, "mul": lax.mul, "max": lax.max}[op]
    ufunc = {"add": np.add, "mul": np.multiply, "max": np.maximum}[op]
    ref = np.flip(ufunc.accumulate(np.flip(x, axis), axis), axis) if reverse else ufunc.accumulate(x, axis)
    got = lax.associative_scan(fn, x, reverse=reverse, axis=axis)
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5)
    jitted = fjax.jit(lambda v: lax.associative_scan(fn, v, reverse, axis))
    np.testing.assert_allclose(np.asarray(jitted(x)), ref, rtol=1e-5)


def test_associative_scan_pytrees_grads_and_errors():
    from fjax import lax

    x = np.arange(1.0, 8.0, dtype=np.float32)
    # an affine recurrence h_t = a_t h_{t-1} + b_t as a scan over (a, b) pairs
    a, b = x / 8, x

    def affine(p, q):
        return (q[0] * p[0], q[0] * p[1] + q[1])

    _, h = lax.associative_scan(affine, (a, b))
    ref, acc = [], 0.0
    for at, bt in zip(a, b):
        acc = at * acc + bt
        ref.append(acc)
    np.testing.assert_allclose(np.asarray(h), ref, rtol=1e-5)
    check_grads(lambda a, b: lax.associative_scan(affine, (a, b))[1], (a, b), order=2, modes=("fwd", "rev"))
    with pytest.raises(ValueError, match="must have the same first dimension"):
        lax.associative_scan(affine, (a, b[:3]))
    with pytest.raises(TypeError, match="structure"):
        lax.associative_scan(lambda p, q: p[0] + q[0], (a, b))


def test_cumulative_derivatives_are_linear_in_memory():
    """The JVPs run an associative scan: no intermediate grows like n**2 (n = 4096 here)."""
    n = 4096
    x = np.linspace(0.5, 1.5, n).astype(np.float32)
    for name in ("cumprod", "cummax", "cumlogsumexp"):
        jaxpr = fjax.make_jaxpr(fjax.grad(lambda v, name=name: getattr(other, name)(v).sum()))(x)
        sizes = [int(np.prod(v.aval.shape)) for e in jaxpr.jaxpr.eqns for v in e.outvars]
        assert max(sizes) <= 2 * n, (name, max(sizes))


# --- lax.pow with an integer exponent (JAX accepts any integer dtype for y; the result keeps x's dtype)

_pow_int_jit = fjax.jit(lax.pow)
_pow_int_grad = fjax.jit(fjax.grad(lambda x, y: lax.pow(x, y).sum()))


@given(
    hnp.arrays(np.float32, 6, elements=st.floats(-3, 3, width=32)),
    hnp.arrays(np.int32, 6, elements=st.integers(-4, 5)),
)
def test_pow_integer_exponent(x, y):
    x = np.where(np.abs(x) < 0.05, np.float32(0.5), x)  # away from 0 (negative exponents)
    want = np.power(x.astype(np.float64), y.astype(np.float64))
    for got in (lax.pow(x, y), _pow_int_jit(x, y)):
        assert got.dtype == jnp.float32
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=1e-30)
    dwant = np.where(y == 0, 0.0, y * np.power(x.astype(np.float64), y - 1.0))
    np.testing.assert_allclose(np.asarray(_pow_int_grad(x, y)), dwant, rtol=2e-5, atol=1e-6)


def test_pow_integer_exponent_rules():
    x = jnp.float32(1.5)
    assert lax.pow(x, 3).dtype == jnp.float32
    assert "pow a 3:i32[]" in str(fjax.make_jaxpr(lambda x: lax.pow(x, 3))(x))
    with fjax.enable_x64(True):
        fjax.test_util.check_grads(lambda x: lax.pow(x, 3), (jnp.float64(1.3),), order=2)
    np.testing.assert_allclose(fjax.vmap(lax.pow, (0, None))(jnp.arange(3.0), jnp.int32(2)), [0.0, 1.0, 4.0])
    assert fjax.grad(lambda x: lax.pow(x, 0))(0.0) == 0.0  # not 0 * 0**-1 = NaN
    with pytest.raises(TypeError, match="pow does not accept dtype int32 at position 0. Accepted dtypes at position 0"):
        lax.pow(jnp.int32(2), 3)
    with pytest.raises(TypeError, match="two inexact dtypes must match, but got float32 and float16"):
        lax.pow(jnp.float32(2), jnp.float16(3))
