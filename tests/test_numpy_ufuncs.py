"""fjax.numpy elementwise functions against numpy: values on broadcasting shapes (0-d and
size-0 included) and dtypes, result dtypes by JAX's promotion rules (computed with
fjax.dtypes.result_type, never numpy's), weak types, and gradients against finite differences."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fjax
import fjax.numpy as jnp
from fjax import dtypes

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.uint8, np.uint32, np.float16, np.float32]
FLOAT_TOL = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 2e-6, np.dtype(np.complex64): 2e-6}


def _values(dt, shape, positive=False, nonzero=False):
    dt = np.dtype(dt)
    if dt == np.bool_:
        el = st.booleans()
    elif dt.kind == "u":
        el = st.integers(1 if nonzero else 0, 6)
    elif dt.kind == "i":
        el = st.integers(1 if positive or nonzero else -6, 6)
        if nonzero and not positive:
            el = st.integers(-6, 6).filter(lambda v: v != 0)
    else:
        lo = 0.125 if positive else -3.0
        el = st.floats(lo, 3.0, width=16 if dt == np.float16 else 32)
        if nonzero:
            el = el.filter(lambda v: abs(v) > 0.05)
    return hnp.arrays(dt, shape, elements=el)


@st.composite
def binary_args(draw, kinds="biuf", positive=False, nonzero=False):
    dts = [d for d in DTYPES if np.dtype(d).kind in kinds]
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=3))
    a = draw(_values(draw(st.sampled_from(dts)), shapes.input_shapes[0]))
    b = draw(_values(draw(st.sampled_from(dts)), shapes.input_shapes[1], positive, nonzero))
    return a, b


def _check(out, expected, dt):
    out = np.asarray(out)
    assert out.dtype == dt, (out.dtype, dt)
    assert out.shape == np.shape(expected)
    if dt.kind in "fc":
        tol = FLOAT_TOL.get(dt, 1e-6)
        np.testing.assert_allclose(out, expected.astype(dt), rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(out, expected.astype(dt))


def _inexact(dt):
    return dt if dt.kind in "fc" else dtypes.default_float_dtype()


def _numeric(dt):
    return dtypes.default_int_dtype() if dt == np.bool_ else dt


# name, numpy function, dtype kinds accepted, result dtype rule, rhs constraints
BINARY = [
    ("add", np.add, "biuf", None, {}),
    ("subtract", np.subtract, "iuf", None, {}),
    ("multiply", np.multiply, "biuf", None, {}),
    ("divide", np.divide, "iuf", _inexact, {"nonzero": True}),
    ("true_divide", np.true_divide, "iuf", _inexact, {"nonzero": True}),
    ("floor_divide", np.floor_divide, "iuf", _numeric, {"nonzero": True}),
    ("remainder", np.remainder, "iuf", _numeric, {"nonzero": True}),
    ("mod", np.mod, "iuf", _numeric, {"nonzero": True}),
    ("fmod", np.fmod, "iuf", _numeric, {"nonzero": True}),
    ("power", np.power, "iuf", _numeric, {"positive": True}),
    ("float_power", np.power, "iuf", _inexact, {"positive": True}),
    ("maximum", np.maximum, "biuf", None, {}),
    ("minimum", np.minimum, "biuf", None, {}),
    ("fmax", np.fmax, "biuf", None, {}),
    ("fmin", np.fmin, "biuf", None, {}),
    ("arctan2", np.arctan2, "iuf", _inexact, {}),
    ("hypot", np.hypot, "iuf", _inexact, {}),
    ("logaddexp", np.logaddexp, "iuf", _inexact, {}),
    ("logaddexp2", np.logaddexp2, "iuf", _inexact, {}),
    ("copysign", np.copysign, "iuf", _inexact, {}),
    ("heaviside", np.heaviside, "iuf", _inexact, {}),
    ("nextafter", np.nextafter, "iuf", _inexact, {}),
    ("equal", np.equal, "biuf", lambda dt: np.dtype(bool), {}),
    ("not_equal", np.not_equal, "biuf", lambda dt: np.dtype(bool), {}),
    ("less", np.less, "biuf", lambda dt: np.dtype(bool), {}),
    ("less_equal", np.less_equal, "biuf", lambda dt: np.dtype(bool), {}),
    ("greater", np.greater, "biuf", lambda dt: np.dtype(bool), {}),
    ("greater_equal", np.greater_equal, "biuf", lambda dt: np.dtype(bool), {}),
    ("bitwise_and", np.bitwise_and, "biu", None, {}),
    ("bitwise_or", np.bitwise_or, "biu", None, {}),
    ("bitwise_xor", np.bitwise_xor, "biu", None, {}),
    ("left_shift", np.left_shift, "iu", _numeric, {"positive": True}),
    ("right_shift", np.right_shift, "iu", _numeric, {"positive": True}),
    ("gcd", np.gcd, "iu", _numeric, {}),
    ("lcm", np.lcm, "iu", _numeric, {}),
]


@pytest.mark.parametrize("name,np_fn,kinds,rule,kw", BINARY, ids=[b[0] for b in BINARY])
@given(data=st.data())
def test_binary_matches_numpy(name, np_fn, kinds, rule, kw, data):
    a, b = data.draw(binary_args(kinds, **kw))
    dt = dtypes.result_type(a, b)
    if rule is not None:
        dt = np.dtype(rule(dt))
    out = getattr(jnp, name)(a, b)
    compute_dt = (
        dt
        if dt != np.bool_
        or name in ("add", "multiply", "maximum", "minimum", "fmax", "fmin")
        or name.startswith("bitwise")
        else dtypes.result_type(a, b)
    )
    if name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
        compute_dt = dtypes.result_type(a, b)
    with np.errstate(all="ignore"):
        expected = np.asarray(np_fn(a.astype(compute_dt), b.astype(compute_dt)))
    _check(out, expected, dt)


UNARY = [
    ("sqrt", np.sqrt),
    ("cbrt", np.cbrt),
    ("exp", np.exp),
    ("exp2", np.exp2),
    ("expm1", np.expm1),
    ("log", np.log),
    ("log2", np.log2),
    ("log10", np.log10),
    ("log1p", np.log1p),
    ("sin", np.sin),
    ("cos", np.cos),
    ("tan", np.tan),
    ("arcsin", np.arcsin),
    ("arccos", np.arccos),
    ("arctan", np.arctan),
    ("asin", np.arcsin),
    ("acos", np.arccos),
    ("atan", np.arctan),
    ("sinh", np.sinh),
    ("cosh", np.cosh),
    ("tanh", np.tanh),
    ("arcsinh", np.arcsinh),
    ("arccosh", np.arccosh),
    ("arctanh", np.arctanh),
    ("asinh", np.arcsinh),
    ("acosh", np.arccosh),
    ("atanh", np.arctanh),
    ("deg2rad", np.deg2rad),
    ("radians", np.radians),
    ("rad2deg", np.rad2deg),
    ("degrees", np.degrees),
    ("sinc", np.sinc),
    ("reciprocal", np.reciprocal),
    ("rint", np.rint),
]


@pytest.mark.parametrize("name,np_fn", UNARY, ids=[u[0] for u in UNARY])
@given(data=st.data())
def test_unary_inexact_matches_numpy(name, np_fn, data):
    dt_in = data.draw(st.sampled_from(DTYPES))
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    a = data.draw(_values(dt_in, shape, nonzero=name == "reciprocal"))
    dt = _inexact(dtypes.result_type(a))
    out = getattr(jnp, name)(a)
    with np.errstate(all="ignore"):
        expected = np.asarray(np_fn(a.astype(dt)))
    tol_dt = dt
    if name in ("tan", "sinh", "cosh", "exp", "exp2", "expm1") and dt == np.float16:
        tol_dt = np.dtype(np.float16)
    _check(out, expected, tol_dt)


SAME_DTYPE_UNARY = [
    ("negative", np.negative, "iuf"),
    ("positive", np.positive, "iuf"),
    ("abs", np.abs, "biuf"),
    ("absolute", np.absolute, "biuf"),
    ("sign", np.sign, "iuf"),
    ("floor", np.floor, "biuf"),
    ("ceil", np.ceil, "biuf"),
    ("trunc", np.trunc, "biuf"),
    ("round", np.round, "iuf"),
    ("square", np.square, "iuf"),
    ("bitwise_not", np.invert, "biu"),
    ("invert", np.invert, "biu"),
]


@pytest.mark.parametrize("name,np_fn,kinds", SAME_DTYPE_UNARY, ids=[u[0] for u in SAME_DTYPE_UNARY])
@given(data=st.data())
def test_unary_same_dtype_matches_numpy(name, np_fn, kinds, data):
    dt = np.dtype(data.draw(st.sampled_from([d for d in DTYPES if np.dtype(d).kind in kinds])))
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    a = data.draw(_values(dt, shape))
    out = getattr(jnp, name)(a)
    with np.errstate(all="ignore"):
        expected = np.asarray(np_fn(a))
    _check(out, expected, dt)


CLASSIFY = [
    ("isnan", np.isnan),
    ("isinf", np.isinf),
    ("isfinite", np.isfinite),
    ("isposinf", np.isposinf),
    ("isneginf", np.isneginf),
    ("signbit", np.signbit),
    ("logical_not", np.logical_not),
]


@pytest.mark.parametrize("name,np_fn", CLASSIFY, ids=[c[0] for c in CLASSIFY])
@given(data=st.data())
def test_classification(name, np_fn, data):
    dt = np.dtype(data.draw(st.sampled_from(DTYPES)))
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=4))
    if dt.kind == "f":
        el = st.sampled_from([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan])
        a = data.draw(hnp.arrays(dt, shape, elements=el))
    else:
        a = data.draw(_values(dt, shape))
    out = getattr(jnp, name)(a)
    _check(out, np.asarray(np_fn(a)), np.dtype(bool))


@pytest.mark.parametrize(
    "name,np_fn", [("logical_and", np.logical_and), ("logical_or", np.logical_or), ("logical_xor", np.logical_xor)]
)
@given(data=st.data())
def test_logical(name, np_fn, data):
    a, b = data.draw(binary_args("biuf"))
    _check(getattr(jnp, name)(a, b), np.asarray(np_fn(a, b)), np.dtype(bool))


def test_floor_divide_remainder_signs():
    a = np.array([-7, 7, -7, 7, 0, -1], np.int32)
    b = np.array([2, 2, -2, -2, 3, 5], np.int32)
    np.testing.assert_array_equal(jnp.floor_divide(a, b), np.floor_divide(a, b))
    np.testing.assert_array_equal(jnp.remainder(a, b), np.remainder(a, b))
    np.testing.assert_array_equal(jnp.fmod(a, b), np.fmod(a, b))
    af, bf = a.astype(np.float32) + 0.5, b.astype(np.float32)
    np.testing.assert_allclose(jnp.floor_divide(af, bf), np.floor_divide(af, bf))
    np.testing.assert_allclose(jnp.remainder(af, bf), np.remainder(af, bf), rtol=1e-6)
    q, r = jnp.divmod(af, bf)
    nq, nr = np.divmod(af, bf)
    np.testing.assert_allclose(q, nq)
    np.testing.assert_allclose(r, nr, rtol=1e-6)


def test_weak_type_promotion():
    x = jnp.ones(3, jnp.float32)
    assert (x * 2.0).dtype == np.float32 and not (x * 2.0).weak_type
    i = jnp.arange(3)
    assert (i * 2.5).dtype == np.float32 and (i * 2.5).weak_type
    assert (i * 2).dtype == np.int32
    assert (jnp.ones(3, jnp.int8) * 2).dtype == np.int8
    assert (jnp.ones(3, jnp.float16) * 2.0).dtype == np.float16
    assert (jnp.ones(3, jnp.uint8) + jnp.ones(3, jnp.int8)).dtype == np.int16
    s = jnp.sin(2.0)
    assert s.dtype == np.float32 and s.weak_type
    assert jnp.sin(2).weak_type and jnp.sin(2).dtype == np.float32
    assert jnp.add(2, 3).dtype == np.int32 and jnp.add(2, 3).weak_type
    assert (jnp.arange(3) / 2).dtype == np.float32 and not (jnp.arange(3) / 2).weak_type
    assert jnp.abs(-2.0).weak_type and jnp.square(2).weak_type
    assert (jnp.ones(3, jnp.float16) + jnp.sin(1.0)).dtype == np.float16
    assert jnp.sqrt(jnp.ones(2, jnp.int8)).dtype == np.float32
    assert jnp.sin(np.float64(1.0)).dtype == np.float32 and not jnp.sin(np.float64(1.0)).weak_type


def test_power_forms():
    x = jnp.arange(4.0)
    assert "integer_pow" in str(fjax.make_jaxpr(lambda v: v**2)(x))
    assert "integer_pow" in str(fjax.make_jaxpr(lambda v: jnp.power(v, 3))(x))
    assert "pow" in str(fjax.make_jaxpr(lambda v: v**2.0)(x))
    i = jnp.arange(5)
    out = jnp.power(i, jnp.array([0, 1, 2, 3, 4]))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.arange(5) ** np.arange(5))
    np.testing.assert_array_equal(jnp.power(2, i), 2 ** np.arange(5))
    assert jnp.power(i, 2.0).dtype == np.float32
    np.testing.assert_allclose(jnp.power(x, -1), [np.inf, 1, 0.5, 1 / 3])


def test_round_and_clip():
    x = jnp.array([0.5, 1.5, 2.5, -0.5, 1.25, -1.35])
    np.testing.assert_array_equal(jnp.round(x), np.round(np.asarray(x)))
    np.testing.assert_allclose(jnp.round(x, 1), np.round(np.asarray(x), 1), rtol=1e-6)
    np.testing.assert_array_equal(jnp.around(x), np.round(np.asarray(x)))
    assert jnp.round(jnp.arange(3)).dtype == np.int32
    assert jnp.rint(jnp.arange(3)).dtype == np.float32
    np.testing.assert_array_equal(jnp.clip(jnp.arange(5), 1, 3), [1, 1, 2, 3, 3])
    np.testing.assert_array_equal(jnp.clip(jnp.arange(5), min=2), [2, 2, 2, 3, 4])
    np.testing.assert_array_equal(jnp.clip(jnp.arange(5), a_max=2), [0, 1, 2, 2, 2])
    c = jnp.clip(jnp.arange(5), 1.5, 3)
    assert c.dtype == np.float32 and c.weak_type
    np.testing.assert_array_equal(jnp.fix(jnp.array([-1.5, 1.5])), [-1.0, 1.0])


def test_where():
    c = np.array([True, False, True])
    out = jnp.where(c, jnp.arange(3), 10.0)
    np.testing.assert_array_equal(out, [0, 10, 2])
    assert out.dtype == np.float32
    assert jnp.where(True, 1, 2.0).weak_type
    np.testing.assert_array_equal(jnp.where(np.array([[1], [0]]), 1, jnp.zeros(3)), [[1, 1, 1], [0, 0, 0]])
    (idx,) = jnp.where(jnp.array([0, 3, 0, 4]))
    np.testing.assert_array_equal(idx, [1, 3])
    assert idx.dtype == np.int32
    with pytest.raises(fjax.ConcretizationTypeError):
        fjax.jit(lambda v: jnp.where(v))(jnp.arange(3))
    # JAX 0.10.2: "where requires ndarray or scalar arguments, got <class 'NoneType'> at position 2."
    with pytest.raises(TypeError, match="NoneType"):
        jnp.where(c, 1)


def test_special_values():
    np.testing.assert_array_equal(
        jnp.nan_to_num(jnp.array([np.nan, np.inf, -np.inf, 1.0])),
        np.nan_to_num(np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)),
    )
    np.testing.assert_array_equal(jnp.nan_to_num(jnp.array([np.nan, np.inf]), nan=1.0, posinf=2.0), [1.0, 2.0])
    z = jnp.array([1 + 1j, -2j, 3.0], dtype=jnp.complex64)
    np.testing.assert_allclose(jnp.angle(z), np.angle(np.asarray(z)), rtol=1e-6)
    np.testing.assert_allclose(jnp.angle(z, deg=True), np.angle(np.asarray(z), deg=True), rtol=1e-6)
    np.testing.assert_array_equal(jnp.real(z), np.real(np.asarray(z)))
    np.testing.assert_array_equal(jnp.imag(z), np.imag(np.asarray(z)))
    np.testing.assert_array_equal(jnp.conj(z), np.conj(np.asarray(z)))
    assert jnp.real(jnp.arange(3)).dtype == np.int32
    np.testing.assert_array_equal(jnp.imag(jnp.arange(3.0)), [0, 0, 0])
    np.testing.assert_allclose(jnp.abs(z), np.abs(np.asarray(z)), rtol=1e-6)
    assert jnp.abs(z).dtype == np.float32
    m, e = jnp.frexp(jnp.array([8.0, 0.3, -5.0, 0.0, 1.0]))
    nm, ne = np.frexp(np.array([8.0, 0.3, -5.0, 0.0, 1.0], np.float32))
    np.testing.assert_allclose(m, nm, rtol=1e-6)
    np.testing.assert_array_equal(e, ne)
    np.testing.assert_allclose(jnp.ldexp(jnp.array([1.0, 3.0]), jnp.array([2, -1])), [4.0, 1.5])
    np.testing.assert_array_equal(jnp.logaddexp(-np.inf, -np.inf), -np.inf)
    np.testing.assert_array_equal(jnp.hypot(np.inf, np.nan), np.inf)


def _fd(f, x, eps=1e-3):
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (
            float(f(jnp.asarray((x + d).astype(np.float32)))) - float(f(jnp.asarray((x - d).astype(np.float32))))
        ) / (2 * eps)
    return g


GRAD_CASES = [
    ("sin", lambda x: jnp.sum(jnp.sin(x)), [0.3, -1.2, 2.0]),
    ("tanh", lambda x: jnp.sum(jnp.tanh(x)), [0.3, -1.2, 2.0]),
    ("log", lambda x: jnp.sum(jnp.log(x)), [0.3, 1.2, 2.0]),
    ("sqrt", lambda x: jnp.sum(jnp.sqrt(x)), [0.3, 1.2, 2.0]),
    ("power", lambda x: jnp.sum(x**3 + jnp.power(x, 2.5)), [0.3, 1.2, 2.0]),
    ("divide", lambda x: jnp.sum(1.0 / x + x / 3), [0.3, 1.2, 2.0]),
    ("logaddexp", lambda x: jnp.sum(jnp.logaddexp(x, 2.0 * x + 0.5)), [0.3, -1.2, 2.0]),
    ("hypot", lambda x: jnp.sum(jnp.hypot(x, 1.5)), [0.3, -1.2, 2.0]),
    ("sinc", lambda x: jnp.sum(jnp.sinc(x)), [0.3, -1.2, 2.0]),
    ("arctan2", lambda x: jnp.sum(jnp.arctan2(x, 1.0 + x * x)), [0.3, -1.2, 2.0]),
    ("heaviside", lambda x: jnp.sum(jnp.heaviside(x, 0.5) * x * x), [0.3, -1.2, 2.0]),
    ("maximum", lambda x: jnp.sum(jnp.maximum(x, 0.5) + jnp.minimum(x, 0.0)), [0.3, -1.2, 2.0]),
    ("clip", lambda x: jnp.sum(jnp.clip(x, -1.0, 1.0) * x), [0.3, -1.2, 2.0]),
    ("where", lambda x: jnp.sum(jnp.where(x > 0, jnp.exp(x), x * x)), [0.3, -1.2, 2.0]),
]


@pytest.mark.parametrize("name,f,x", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_grad_against_finite_differences(name, f, x):
    x = np.asarray(x, np.float32)
    g = fjax.grad(f)(jnp.asarray(x))
    np.testing.assert_allclose(g, _fd(f, x), rtol=2e-2, atol=2e-3)


def test_grads_at_special_points():
    assert float(fjax.grad(jnp.sinc)(0.0)) == 0.0
    np.testing.assert_allclose(fjax.grad(fjax.grad(jnp.sinc))(0.0), -(np.pi**2) / 3, rtol=1e-5)
    np.testing.assert_allclose(fjax.grad(lambda x: jnp.logaddexp(x, x))(1.0), 1.0)
    assert np.isfinite(fjax.grad(lambda x: jnp.hypot(x, 0.0))(0.0))
    assert np.isfinite(fjax.grad(lambda x: jnp.logaddexp(x, -np.inf))(0.0))
    np.testing.assert_allclose(fjax.grad(lambda x: jnp.logaddexp(x, -np.inf))(0.0), 1.0)


def test_ufuncs_under_transforms():
    x = jnp.arange(6.0).reshape(2, 3)

    def f(v):
        return jnp.where(v > 1, jnp.sin(v) ** 2, jnp.hypot(v, 2.0)) + v // 2 + v % 3 + jnp.logaddexp(v, 1.0)

    ref = f(x)
    np.testing.assert_allclose(fjax.jit(f)(x), ref, rtol=1e-6)
    np.testing.assert_allclose(fjax.vmap(f)(x), ref, rtol=1e-6)
    np.testing.assert_allclose(fjax.vmap(f, in_axes=1, out_axes=1)(x), ref, rtol=1e-6)


def test_errors():
    with pytest.raises(TypeError):
        jnp.add([1, 2], 3)
    with pytest.raises(TypeError):  # equal ranks: lax's TypeError, as in JAX
        jnp.add(jnp.ones(3), jnp.ones(4))
    with pytest.raises(ValueError):  # different ranks: a ValueError, as in JAX
        jnp.add(jnp.ones((2, 3)), jnp.ones(2))
    with pytest.raises(TypeError):
        jnp.bitwise_and(jnp.ones(2), 1)
