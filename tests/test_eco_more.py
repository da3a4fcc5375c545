"""bfloat16, reduce_precision, conv shape helpers, jnp i0/kaiser/polyfit/roots, orthogonal
initializers, Lowered.compiler_ir, logsumexp(where=), vmap over a size-0 axis of gathers."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fjax
import fjax.numpy as jnp
from fjax import dtypes, lax
from fjax import random as jr
from fjax.experimental import checkify
from fjax.nn import initializers
from fjax.test_util import check_grads

BF16 = np.dtype(ml_dtypes.bfloat16)

# ------------------------------------------------------------------------------------------
# bfloat16


# JAX 0.10's lattice: f* -> f16, bf16; f16 -> f32; bf16 -> f32 (so bf16 + f16 is f32)
@pytest.mark.parametrize(
    "other,expected",
    [
        (np.bool_, BF16), (np.int8, BF16), (np.uint8, BF16), (np.int32, BF16), (np.uint32, BF16),
        (np.float16, np.float32), (np.float32, np.float32), (np.complex64, np.complex64), (BF16, BF16),
    ],
)  # fmt: skip
def test_bfloat16_promotion(other, expected):
    assert jnp.promote_types(jnp.bfloat16, other) == expected
    assert jnp.promote_types(other, jnp.bfloat16) == expected
    a, b = jnp.ones(2, jnp.bfloat16), jnp.ones(2, other)
    assert (a + b).dtype == expected


def test_bfloat16_weak_types_finfo_and_kind():
    x = jnp.ones(3, jnp.bfloat16)
    assert (x * 2.0).dtype == BF16 and (x + 1).dtype == BF16 and (x + 1j).dtype == np.complex64
    assert dtypes.result_type(jnp.bfloat16, float, return_weak_type_flag=True) == (BF16, False)
    assert jnp.finfo(jnp.bfloat16).eps == 2.0**-7 and jnp.finfo(jnp.bfloat16).bits == 16
    assert jnp.issubdtype(jnp.bfloat16, jnp.floating) and jnp.issubdtype(x.dtype, jnp.inexact)
    assert not jnp.issubdtype(jnp.bfloat16, jnp.integer) and not jnp.issubdtype(np.float32, jnp.bfloat16)
    assert dtypes.kind(BF16) == "f"
    assert repr(jnp.bfloat16(1.5)) == "Array(1.5, dtype=bfloat16)"
    assert str(fjax.make_jaxpr(lambda a: a * 2)(x)).startswith("{ lambda ; a:bf16[3]")


_jit_bf16 = fjax.jit(lambda a, b: jnp.tanh(a) * b + a.sum())


@given(hnp.arrays(np.float32, 5, elements=st.floats(-4, 4, width=32)))
def test_bfloat16_eager_jit_and_grad(v):
    x = jnp.asarray(v, jnp.bfloat16)
    ref = v.astype(BF16)
    # each op rounds to bfloat16, as JAX; the sum accumulates in float32
    expected = (np.tanh(ref) * ref).astype(BF16) + ref.astype(np.float32).sum().astype(BF16)
    out = _jit_bf16(x, x)
    assert out.dtype == BF16
    np.testing.assert_allclose(out.astype(np.float32), expected.astype(np.float32), rtol=2e-2, atol=2e-2)
    g = fjax.grad(lambda a: jnp.sum(a * a))(x)
    assert g.dtype == BF16
    np.testing.assert_array_equal(np.asarray(g).astype(np.float32), (2 * ref).astype(np.float32))


# ------------------------------------------------------------------------------------------
# reduce_precision


_finite32 = st.floats(allow_nan=False, allow_infinity=False, width=32)


@given(hnp.arrays(np.float32, 16, elements=_finite32))
def test_reduce_precision_matches_bfloat16_and_float16(v):
    # (8, 7): bfloat16's format, same exponent range as float32, so it equals the IEEE cast
    np.testing.assert_array_equal(np.asarray(lax.reduce_precision(v, 8, 7)), v.astype(BF16).astype(np.float32))
    # (5, 10): float16's format; XLA flushes what would be float16 denormals to zero
    with np.errstate(over="ignore"):
        ref = v.astype(np.float16).astype(np.float32)
    ref = np.where(np.abs(ref) < np.finfo(np.float16).smallest_normal, np.copysign(0, v), ref)
    np.testing.assert_array_equal(np.asarray(lax.reduce_precision(v, 5, 10)), ref)


def test_reduce_precision_transforms_and_errors():
    x = jnp.array([1.3, -2.7, np.nan, np.inf])
    out = lax.reduce_precision(x, 5, 2)
    np.testing.assert_array_equal(np.asarray(out), [1.25, -2.5, np.nan, np.inf])
    np.testing.assert_array_equal(fjax.jit(fjax.vmap(lambda v: lax.reduce_precision(v, 5, 2)))(x), out)
    # linear: the tangent is rounded the same way
    y, t = fjax.jvp(lambda v: lax.reduce_precision(v, 5, 2), (x[:2],), (jnp.array([1.3, 1.0]),))
    np.testing.assert_array_equal(np.asarray(t), [1.25, 1.0])
    np.testing.assert_array_equal(fjax.grad(lambda v: lax.reduce_precision(v, 8, 23).sum())(x[:2]), [1.0, 1.0])
    with pytest.raises(TypeError, match="floating"):
        lax.reduce_precision(jnp.arange(3), 5, 2)
    with pytest.raises(ValueError, match="exponent_bits"):
        lax.reduce_precision(x, 0, 2)


# ------------------------------------------------------------------------------------------
# conv shape helpers: against the shape of the convolution itself


@pytest.mark.parametrize("padding", ["SAME", "VALID", ((1, 0), (2, 1))])
@pytest.mark.parametrize("strides", [(1, 1), (2, 3)])
def test_conv_shape_helpers(padding, strides):
    dn = ("NHWC", "HWIO", "NHWC")
    lhs, rhs = (2, 9, 8, 3), (3, 2, 3, 4)
    out = lax.conv_general_dilated(jnp.ones(lhs), jnp.ones(rhs), strides, padding, dimension_numbers=dn)
    assert lax.conv_general_shape_tuple(lhs, rhs, strides, padding, dn) == out.shape
    canon = lax.conv_shape_tuple((2, 3, 9, 8), (4, 3, 3, 2), strides, padding)
    assert canon == (out.shape[0], out.shape[3], out.shape[1], out.shape[2])
    t = lax.conv_transpose(jnp.ones(lhs), jnp.ones(rhs), strides, padding, dimension_numbers=dn)
    assert lax.conv_transpose_shape_tuple(lhs, rhs, strides, padding, dn) == t.shape
    with pytest.raises(TypeError, match="explicit pads"):
        lax.conv_shape_tuple((2, 3, 9, 8), (4, 3, 3, 2), strides, [(0, 0)])


# ------------------------------------------------------------------------------------------
# jnp.i0, kaiser, polyfit, roots


@given(hnp.arrays(np.float32, 6, elements=st.floats(-20, 20, width=32)))
def test_i0_against_numpy(v):
    np.testing.assert_allclose(jnp.i0(v), np.i0(v.astype(np.float64)), rtol=2e-6)


def test_i0_grads_kaiser():
    check_grads(jnp.i0, (np.array([-2.0, 0.0, 0.5, 3.0]),), order=2, rtol=2e-3)
    for m, beta in [(0, 1.0), (1, 5.0), (7, 0.0), (12, 8.6)]:
        np.testing.assert_allclose(jnp.kaiser(m, beta), np.kaiser(m, beta), rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="complex"):
        jnp.i0(jnp.ones(2, jnp.complex64))


@given(st.integers(0, 3), hnp.arrays(np.float64, 12, elements=st.floats(-3, 3)))
def test_polyfit_against_numpy(deg, noise):
    x = np.linspace(-1, 1, 12)
    y = 1.5 * x**3 - x + 0.25 + 0.1 * noise
    w = 1 + np.abs(noise)
    np.testing.assert_allclose(jnp.polyfit(x, y, deg), np.polyfit(x, y, deg), rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(jnp.polyfit(x, y, deg, w=w), np.polyfit(x, y, deg, w=w), rtol=2e-3, atol=2e-4)
    c, cov = jnp.polyfit(x, y, deg, cov=True)
    c_np, cov_np = np.polyfit(x, y, deg, cov=True)
    np.testing.assert_allclose(cov, cov_np, rtol=5e-3, atol=1e-5)


@given(hnp.arrays(np.float64, 4, elements=st.floats(-3, 3).filter(lambda r: abs(r) > 0.1), unique=True))
def test_roots_against_numpy(rts):
    p = np.poly(rts)
    got = np.sort_complex(np.asarray(jnp.roots(p)))
    np.testing.assert_allclose(got, np.sort_complex(np.roots(p).astype(complex)), rtol=1e-3, atol=1e-3)
    padded = np.concatenate([[0.0, 0.0], p])
    assert jnp.roots(padded).shape == (4,)
    fixed = np.asarray(_roots_fixed(padded))
    assert fixed.shape == (6,) and np.isnan(fixed[-2:]).all()
    np.testing.assert_allclose(np.sort_complex(fixed[:4]), got, rtol=1e-3, atol=1e-3)


_roots_fixed = fjax.jit(lambda p: jnp.roots(p, strip_zeros=False))


# ------------------------------------------------------------------------------------------
# initializers


@pytest.mark.parametrize("shape,axis", [((4, 6), -1), ((6, 4), -1), ((3, 2, 5), 0), ((2, 3, 8), -1)])
def test_orthogonal(shape, axis):
    w = initializers.orthogonal(scale=2.0, column_axis=axis)(jr.key(0), shape, jnp.float32)
    assert w.shape == shape and w.dtype == np.float32
    m = np.moveaxis(np.asarray(w), axis, -1).reshape(-1, shape[axis]) / 2.0
    small = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
    np.testing.assert_allclose(small, np.eye(small.shape[0]), atol=2e-5)
    with pytest.raises(ValueError, match="2D"):
        initializers.orthogonal()(jr.key(0), (3,))


def test_delta_orthogonal():
    w = np.asarray(initializers.delta_orthogonal()(jr.key(1), (3, 3, 4, 5)))
    centre = w[1, 1]
    np.testing.assert_allclose(centre @ centre.T, np.eye(4), atol=2e-5)
    assert np.abs(w).sum() == pytest.approx(np.abs(centre).sum())
    with pytest.raises(ValueError, match="fan_in"):
        initializers.delta_orthogonal()(jr.key(1), (3, 3, 5, 4))


# ------------------------------------------------------------------------------------------
# compiler_ir, logsumexp(where=), empty vmaps


def test_compiler_ir_hlo_text():
    def hlo(f, x):
        return fjax.jit(f).lower(x).compiler_ir(dialect="hlo").as_hlo_text().split("ENTRY")[1]

    text = hlo(lambda x: x**2, 3.0)
    assert "ROOT" in text and "multiply(Arg_0.1, Arg_0.1)" in text
    # x**2, x*x and square lower to the same multiply (as in JAX's HLO); conj(x)*x of complex does not
    assert hlo(lambda x: x**2, 3.0) == hlo(lambda x: x * x, 3.0) == hlo(jnp.square, 3.0)
    assert hlo(lambda x: (x.conj() * x).real, 1j) != hlo(jnp.square, 1j)
    assert "HloModule" in str(fjax.jit(jnp.sin).lower(jnp.ones(2)).compiler_ir())
    with pytest.raises(ValueError, match="dialect"):
        fjax.jit(jnp.sin).lower(1.0).compiler_ir(dialect="llvm")


@given(hnp.arrays(np.float32, (3, 4), elements=st.floats(-5, 5, width=32)), hnp.arrays(np.bool_, (3, 4)))
def test_logsumexp_where(a, where):
    got = fjax.nn.logsumexp(a, axis=1, where=where)
    with np.errstate(divide="ignore"):
        ref = np.log(np.sum(np.where(where, np.exp(a.astype(np.float64)), 0), axis=1))
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_vmap_over_empty_axis_of_gathers():
    take = fjax.vmap(lambda x, i: x[i])
    assert take(jnp.zeros((0, 3)), jnp.zeros((0,), jnp.int32)).shape == (0,)
    ds = fjax.vmap(lambda x, i: lax.dynamic_slice(x, (i,), (2,)))
    assert ds(jnp.zeros((0, 5)), jnp.zeros((0,), jnp.int32)).shape == (0, 2)
    np.testing.assert_array_equal(ds(jnp.arange(10.0).reshape(2, 5), jnp.array([1, 3])), [[1, 2], [8, 9]])


# ------------------------------------------------------------------------------------------
# mutable refs


def test_ref_eager_api():
    ref = fjax.new_ref(jnp.arange(5))
    ref[3] = 100
    assert repr(ref) == "Ref([  0,   1,   2, 100,   4], dtype=int32)"
    np.testing.assert_array_equal(ref[1:3], [1, 2])
    assert isinstance(ref, fjax.Ref) and ref.shape == (5,) and ref.dtype == np.int32
    assert int(fjax.ref.swap(ref, 3, 10)) == 100 and int(ref[3]) == 10
    fjax.ref.addupdate(ref, slice(0, 2), 5)
    fjax.ref.set(ref, 4, 7)
    np.testing.assert_array_equal(fjax.freeze(ref), [5, 6, 2, 10, 7])
    with pytest.raises(RuntimeError, match="frozen or freed"):
        ref[0]
    s = fjax.new_ref(0.0)
    s[...] += 1
    assert repr(s) == "Ref(1., dtype=float32)"
    with pytest.raises(TypeError, match="dtype int32"):
        s[...] = jnp.ones((), jnp.int32)
    e = fjax.empty_ref(fjax.ShapeDtypeStruct((2, 3), jnp.float32))
    assert e.shape == (2, 3) and e[...].dtype == np.float32
    fjax.free_ref(e)
    with pytest.raises(RuntimeError):
        e[...] = 1.0


def _ref_sin(x):
    x_ref = fjax.new_ref(0.0)
    x_ref[...] = jnp.sin(x)
    x_ref[...] += x * x
    return x_ref[...]


def _ref_scan(xs):
    def body(c, x):
        r = fjax.new_ref(c)
        r[...] += jnp.sin(x) * c + x
        return r[...], r[...]

    return lax.scan(body, 1.0, xs)[0]


_ref_sin_jit = fjax.jit(_ref_sin)


@given(st.floats(-3, 3))
def test_ref_inside_transforms(x):
    x = np.float32(x)
    np.testing.assert_allclose(_ref_sin_jit(x), np.sin(x) + x * x, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(fjax.grad(_ref_sin)(x), np.cos(x) + 2 * x, rtol=1e-5, atol=1e-6)
    xs = np.array([x, 0.5 * x, 1.0], np.float32)
    np.testing.assert_allclose(fjax.vmap(_ref_sin)(xs), np.sin(xs) + xs * xs, rtol=1e-6, atol=1e-6)


def test_ref_grads_through_scan(x64):
    xs = np.array([1.5, 0.75, -1.0])
    check_grads(_ref_scan, (xs,), order=1, rtol=1e-5, atol=1e-6)
    check_grads(_ref_sin, (0.3,), order=2, rtol=1e-5, atol=1e-6)


def test_jit_threads_refs_it_closes_over():
    # the first example of JAX's Ref guide
    x_ref = fjax.new_ref(jnp.zeros(3))

    @fjax.jit
    def f():
        x_ref[1] += 1.0

    assert repr(x_ref) == "Ref([0., 0., 0.], dtype=float32)"
    f()
    f()
    assert repr(x_ref) == "Ref([0., 2., 0.], dtype=float32)"
    a, b = fjax.new_ref(1.0), fjax.new_ref(jnp.arange(3.0))

    @fjax.jit
    def g(x):
        b[...] = b[...] * a[...] + x
        a[...] += 1
        return fjax.jit(lambda v: v + a[...])(b[...].sum())  # a nested jit reads it too

    assert float(g(1.0)) == 8.0 and float(g(2.0)) == 21.0
    np.testing.assert_array_equal(b[...], [4.0, 6.0, 8.0])
    assert float(a[...]) == 3.0


def _ref_loops(xs):
    acc, cnt = fjax.new_ref(0.0), fjax.new_ref(jnp.zeros(2, jnp.int32))

    def body(c, x):
        acc[...] += jnp.sin(x) * c
        cnt[0] += 1
        return c + 1.0, acc[...]

    _, ys = lax.scan(body, 1.0, xs)
    flag = fjax.new_ref(0.0)
    lax.cond(acc[...] > 0, lambda: flag.__setitem__(..., acc[...] * 2), lambda: None)

    def wbody(v):
        cnt[1] += 1
        return v * 2

    w = lax.while_loop(lambda v: cnt[1] < 3, wbody, 1.0)
    return acc[...] + flag[...] + w, cnt[...], ys


_ref_loops_jit = fjax.jit(_ref_loops)


def test_refs_threaded_through_scan_cond_while():
    xs = np.array([0.5, 1.0, 2.0], np.float32)
    acc = np.sum(np.sin(xs) * np.arange(1, 4))
    for fn in (_ref_loops, _ref_loops_jit):
        total, cnt, ys = fn(xs)
        np.testing.assert_allclose(total, acc + 2 * acc + 8.0, rtol=1e-6)
        np.testing.assert_array_equal(cnt, [3, 3])
        np.testing.assert_allclose(ys, np.cumsum(np.sin(xs) * np.arange(1, 4)), rtol=1e-6)
    g = fjax.grad(lambda v: _ref_loops(v)[0])(xs)
    np.testing.assert_allclose(g, 3 * np.cos(xs) * np.arange(1, 4), rtol=1e-5)


def test_ref_across_transform_boundary_raises():
    x_ref = fjax.new_ref(jnp.zeros(3))
    with pytest.raises(NotImplementedError, match="Ref created outside"):
        fjax.grad(lambda v: x_ref.__setitem__(0, v) or v)(1.0)
    # reading under grad (nothing staged) sees the current value, as a closed-over constant
    x_ref[1] = 3.0
    assert float(fjax.grad(lambda v: v * x_ref[1])(2.0)) == 3.0


# ------------------------------------------------------------------------------------------
# small API additions


@given(hnp.arrays(np.float32, 6, elements=st.floats(-1e30, 1e30, allow_subnormal=False).map(np.float32)))
def test_spacing_against_numpy(v):
    want = np.spacing(v)
    # JAX (and fjax, step for step) give -0.0 the negative smallest subnormal; numpy the positive one
    want = np.where((v == 0) & np.signbit(v), -want, want)
    np.testing.assert_array_equal(jnp.spacing(v), want)


@given(hnp.arrays(np.int32, (3, 4), elements=st.integers(-9, 9)), st.sampled_from([None, "clip", "wrap"]))
def test_put_and_place_against_numpy(a, mode):
    ind, vals = np.array([0, 11, 5, 13]), np.array([-1, -2, -3], np.int32)
    ref = a.copy()
    if mode is None:
        np.put(ref, ind[ind < a.size], np.resize(vals, 4)[ind < a.size])
    else:
        np.put(ref, ind, vals, mode=mode)
    np.testing.assert_array_equal(jnp.put(a, ind, vals, mode=mode, inplace=False), ref)
    mask = a > 0
    ref = a.copy()
    np.place(ref, mask, vals)
    np.testing.assert_array_equal(jnp.place(a, mask, vals, inplace=False), ref)
    with pytest.raises(ValueError, match="inplace=False"):
        jnp.put(a, ind, vals)


def test_dtype_helpers_and_conv_permutations():
    assert lax.conv_general_permutations(("NHWC", "HWIO", "NHWC")) == ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    assert dtypes.itemsize_bits(jnp.bfloat16) == 16 and dtypes.itemsize_bits(np.bool_) == 1
    assert dtypes.scalar_type_of(jnp.ones(2, jnp.bfloat16)) is float and dtypes.scalar_type_of(np.uint8(1)) is int
    assert fjax.custom_derivatives.custom_gradient is fjax.custom_gradient


_checked_take = fjax.jit(checkify.checkify(lambda x, i: x[i], errors=checkify.index_checks))


@given(st.integers(-12, 12))
def test_checkify_index_checks(i):
    err, out = _checked_take(jnp.arange(5.0), i)
    if -5 <= i < 5:
        assert err.get() is None and float(out) == float(np.arange(5.0)[i])
    else:  # jnp wraps a negative index once (i + 5): still out of bounds here
        j = i if i >= 5 else i + 5
        msg = f"out-of-bounds indexing for array of shape (5,): index {j} is out of bounds for axis 0 with size 5."
        assert err.get() == msg


def test_checkify_index_checks_gather_scatter_dus():
    take = checkify.checkify(lambda x, i: x[i], errors=checkify.index_checks)
    err, _ = take(jnp.ones((3, 4)), jnp.array([1, 7, 2]))
    assert "index 7 is out of bounds for axis 0 with size 3" in err.get()
    setter = checkify.checkify(lambda x, i: x.at[:, i].set(2.0), errors=checkify.all_checks)
    assert "index 4 is out of bounds for axis 1 with size 4" in setter(jnp.ones((3, 4)), jnp.array([1, 4]))[0].get()
    assert setter(jnp.ones((3, 4)), jnp.array([1, 3]))[0].get() is None
    dus = checkify.checkify(lambda x, i: lax.dynamic_update_slice(x, jnp.ones(2), (i,)), errors=checkify.index_checks)
    assert "index 3 is out of bounds" in dus(jnp.zeros(4), 3)[0].get()
    with pytest.raises(checkify.JaxRuntimeError, match="out-of-bounds"):
        dus(jnp.zeros(4), 3)[0].throw()


_jit_inner = fjax.jit(lambda y: jnp.sin(y) ** 2 * 3)


def test_hessian_through_jit_keeps_primal_unbatched():
    # jacfwd vmaps a jvp with out_axes=(None, -1): the jitted call's primal outputs must stay unmapped
    x = np.array([0.0, 1.0, 2.0], np.float32)
    h = fjax.hessian(lambda v: jnp.sum(_jit_inner(v)))(x)
    np.testing.assert_allclose(h, np.diag(6 * np.cos(2 * x)), rtol=1e-5, atol=1e-6)
    a, b = fjax.vmap(fjax.jit(lambda p, q: (p + 1, q * 2)), in_axes=(0, None))(jnp.arange(3.0), 2.0)
    np.testing.assert_array_equal(b, [4.0, 4.0, 4.0])


def test_bfloat16_through_library_functions():
    bf = jnp.bfloat16
    k = jr.key(0)
    for out in (
        jr.normal(k, (3,), bf), jr.uniform(k, (3,), bf), jnp.linspace(0, 1, 4, dtype=bf), jnp.sort(jnp.ones(3, bf)),
        jnp.cumsum(jnp.ones(3, bf)), fjax.nn.softmax(jnp.ones(3, bf)), jnp.linalg.norm(jnp.ones(3, bf)),
    ):  # fmt: skip
        assert out.dtype == BF16
    y = lax.conv(jnp.ones((1, 1, 4, 4), bf), jnp.ones((1, 1, 2, 2), bf), (1, 1), "VALID")
    assert y.dtype == BF16
    np.testing.assert_array_equal(np.asarray(y).astype(np.float32), np.full((1, 1, 3, 3), 4.0))
    assert float(jnp.mean(jnp.full(1000, 0.1, bf)).astype(jnp.float32)) == pytest.approx(0.1, rel=1e-2)
