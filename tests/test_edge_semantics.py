"""Edge semantics fixed to JAX 0.10.2's behaviour, eager and under jit: integer division and
remainder by 0 and INT_MIN / -1, float floor division / remainder at 0, inf and NaN, shifts by the
bit width or more, special functions at +-inf / NaN, signs, ``pow(x, 0.5)``, NaN through relu and
heaviside, and the argument checks of ``vmap(out_axes=)`` and ``jit(static_argnums=...)``.

Literal expected values below were printed by JAX 0.10.2 (CPU) for the same inputs."""

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fjax
import fjax.numpy as jnp
from fjax import lax

N = 16  # one array length for every property test, so each jitted function compiles once per dtype

_int_ops = {
    "div": lax.div,
    "rem": lax.rem,
    "floor_divide": lambda x, y: x // y,
    "remainder": lambda x, y: x % y,
    "fmod": jnp.fmod,
    "divmod_q": lambda x, y: jnp.divmod(x, y)[0],
    "divmod_r": lambda x, y: jnp.divmod(x, y)[1],
}
# one compiled program for all the ops (per dtype): compiles dominate this module's time
_int_ops_jit = fjax.jit(lambda x, y: {k: f(x, y) for k, f in _int_ops.items()})


def _wrap(v: int, dt: np.dtype) -> int:
    bits = dt.itemsize * 8
    v &= (1 << bits) - 1
    return v - (1 << bits) if dt.kind == "i" and v >= 1 << (bits - 1) else v


def _int_reference(op: str, x: int, y: int, dt: np.dtype) -> int:
    """XLA's integer division (toward zero; x / 0 = -1, x rem 0 = x) and jax.numpy's on top of it
    (x % 0 = 0, fmod(x, 0) = 0, x // 0 = -1 - (x != 0)), wrapped to the dtype."""
    if y == 0:
        q, r = -1, x
    else:
        q = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
        r = x - y * q
    if op == "div":
        return _wrap(q, dt)
    if op == "rem":
        return _wrap(r, dt)
    if op in ("remainder", "fmod", "divmod_r"):
        if y == 0:
            return 0
        if op in ("remainder", "divmod_r") and r != 0 and (r < 0) != (y < 0):
            r += y
        return _wrap(r, dt)
    # floor_divide
    if dt.kind == "u":
        return _wrap(q, dt)
    if (x > 0) - (x < 0) != (y > 0) - (y < 0) and r != 0:
        q -= 1
    return _wrap(q, dt)


def _int_arrays(dt: np.dtype) -> st.SearchStrategy:
    info = np.iinfo(dt)
    special = [0, 1, -1, info.min, info.max, info.min + 1, 7, -7] if dt.kind == "i" else [0, 1, info.max, 7]
    elems = st.one_of(st.sampled_from(special), st.integers(int(info.min), int(info.max)))
    return hnp.arrays(dt, N, elements=elems)


@pytest.mark.parametrize("dt", [np.int8, np.int32, np.uint8, np.uint32])
@given(data=st.data())
def test_integer_division_semantics(dt, data):
    dt = np.dtype(dt)
    x = jnp.asarray(data.draw(_int_arrays(dt), label="x"))
    y = jnp.asarray(data.draw(_int_arrays(dt), label="y"))
    compiled = _int_ops_jit(x, y)
    for op in _int_ops:
        want = np.array(
            [_int_reference(op, int(a), int(b), dt) for a, b in zip(np.asarray(x), np.asarray(y))], dtype=dt
        )
        for mode, got in (("eager", _int_ops[op](x, y)), ("jit", compiled[op])):
            assert got.dtype == dt, (op, mode)
            np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{op} {mode} x={x} y={y}")


def test_integer_by_zero_jax_values():
    x = jnp.array([7, -7, 0, 5] * (N // 4), jnp.int32)
    z = jnp.zeros(N, jnp.int32)
    want = {
        "remainder": [0, 0, 0, 0],
        "floor_divide": [-2, -2, -1, -2],
        "div": [-1, -1, -1, -1],
        "rem": [7, -7, 0, 5],
        "fmod": [0, 0, 0, 0],
        "divmod_q": [-2, -2, -1, -2],
        "divmod_r": [0, 0, 0, 0],
    }
    compiled = _int_ops_jit(x, z)
    for op, w in want.items():
        np.testing.assert_array_equal(_int_ops[op](x, z), w * (N // 4), err_msg=op)
        np.testing.assert_array_equal(compiled[op], w * (N // 4), err_msg=op)
    u = jnp.array([7, 0, 5], jnp.uint32)
    uz = jnp.zeros(3, jnp.uint32)
    np.testing.assert_array_equal(u % uz, [0, 0, 0])
    np.testing.assert_array_equal(u // uz, [4294967295] * 3)
    np.testing.assert_array_equal(lax.rem(u, uz), [7, 0, 5])


def test_int64_min_by_minus_one(x64):
    m = jnp.array([-(2**63), 5], jnp.int64)
    m1 = jnp.array([-1, -1], jnp.int64)
    for wrap in ((lambda f: f), fjax.jit):
        div, rem, fdiv, mod = wrap(lambda a, b: (lax.div(a, b), lax.rem(a, b), a // b, a % b))(m, m1)
        np.testing.assert_array_equal(div, [-(2**63), -5])
        np.testing.assert_array_equal(rem, [0, 0])
        np.testing.assert_array_equal(fdiv, [-(2**63), -5])
        np.testing.assert_array_equal(mod, [0, 0])


_FDIV = json.loads((Path(__file__).parent / "data" / "float_division_specials.json").read_text())
_F_SPECIAL = np.array([float(v) for v in _FDIV["values"]], np.float32)
_fa = np.repeat(_F_SPECIAL, len(_F_SPECIAL))
_fb = np.tile(_F_SPECIAL, len(_F_SPECIAL))


def _same_float(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return ((a == b) & (np.signbit(a) == np.signbit(b))) | (np.isnan(a) & np.isnan(b))


_FDIV_OPS = {
    "floor_divide": lambda x, y: x // y,
    "remainder": lambda x, y: x % y,
    "fmod": jnp.fmod,
    "divmod_q": lambda x, y: jnp.divmod(x, y)[0],
    "divmod_r": lambda x, y: jnp.divmod(x, y)[1],
}


def test_float_division_specials():
    # JAX's results (tests/data/README.md), signed zeros included, eager and compiled
    fa, fb = jnp.asarray(_fa), jnp.asarray(_fb)
    compiled = fjax.jit(lambda x, y: {k: f(x, y) for k, f in _FDIV_OPS.items()})(fa, fb)
    for name, fn in _FDIV_OPS.items():
        want = np.array(_FDIV[name], np.uint32).view(np.float32)
        for mode, got in (("eager", fn(fa, fb)), ("jit", compiled[name])):
            bad = ~_same_float(got, want)
            assert not bad.any(), (name, mode, list(zip(_fa[bad], _fb[bad], np.asarray(got)[bad], want[bad])))


_SPECIAL_X = np.array([-np.inf, np.inf, np.nan, 3.4e38, -3.4e38, 0.0, -0.0, -1.0, -2.0, 1.0, 0.5, -2.5], np.float32)
_UNARY = [
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "cbrt", "cos", "cosh", "digamma", "erf", "erf_inv",
    "erfc", "exp", "exp2", "expm1", "lgamma", "log", "log1p", "logistic", "rsqrt", "sign", "sin", "sinh",
    "sqrt", "tan", "tanh",
]  # fmt: skip
_unary_jit = fjax.jit(lambda x: [getattr(lax, n)(x) for n in _UNARY])


def test_unary_at_specials_eager_equals_jit():
    # no exception eagerly (lgamma(-inf) raised OverflowError) and the compiled values agree
    compiled = _unary_jit(_SPECIAL_X)
    for name, got_jit in zip(_UNARY, compiled):
        got = np.asarray(getattr(lax, name)(_SPECIAL_X))
        ok = np.isclose(got, np.asarray(got_jit), rtol=2e-6, atol=0, equal_nan=True)
        assert ok.all(), (name, _SPECIAL_X[~ok], got[~ok], np.asarray(got_jit)[~ok])


def test_lgamma_digamma_at_infinities():
    x = np.array([-np.inf, np.inf, np.nan, 0.0, -1.0, -2.0, 3.4e38], np.float32)
    want_lgamma = [np.inf, np.inf, np.nan, np.inf, np.inf, np.inf, np.inf]
    # eager here; the compiled values equal these (test_unary_at_specials_eager_equals_jit)
    np.testing.assert_array_equal(lax.lgamma(x), np.array(want_lgamma, np.float32))
    d = np.asarray(lax.digamma(np.array([-np.inf, np.inf, np.nan, 0.0, -1.0], np.float32)))
    np.testing.assert_array_equal(d, np.array([np.nan, np.inf, np.nan, np.nan, np.nan], np.float32))


def test_sign_of_infinities():
    x = np.array([-np.inf, np.inf, np.nan, -1.0, 0.0, -0.0], np.float32)
    want = np.array([-1.0, 1.0, np.nan, -1.0, 0.0, -0.0], np.float32)
    assert _same_float(lax.sign(x), want).all()
    # compiled (the shared program of the unary test; sign(+-inf) was NaN there), signed zeros too
    got = _unary_jit(_SPECIAL_X)[_UNARY.index("sign")]
    assert _same_float(got, lax.sign(_SPECIAL_X)).all(), got


def test_pow_half():
    x = np.array([-np.inf, np.inf, np.nan, -1.0, 0.0, -0.0, 4.0], np.float32)
    want = np.array([np.inf, np.inf, np.nan, np.nan, 0.0, 0.0, 2.0], np.float32)  # C pow / JAX
    for f in (lax.pow, fjax.jit(lax.pow)):
        got = np.asarray(f(x, np.float32(0.5)))
        assert _same_float(got, want).all(), got


def _shift_reference(kind: str, x: int, s: int, dt: np.dtype) -> int:
    bits = dt.itemsize * 8
    ux = x & ((1 << bits) - 1)
    signed = ux - (1 << bits) if ux >> (bits - 1) else ux  # the bit pattern read as signed
    if kind == "left":
        return _wrap(ux << s, dt) if 0 <= s < bits else 0
    if kind == "logical":
        return _wrap(ux >> s, dt) if 0 <= s < bits else 0
    return _wrap(signed >> s if 0 <= s < bits else (-1 if signed < 0 else 0), dt)


_shifts = {
    "left": lax.shift_left,
    "logical": lax.shift_right_logical,
    "arith": lax.shift_right_arithmetic,
}
_shifts_jit = fjax.jit(lambda x, s: {k: f(x, s) for k, f in _shifts.items()})


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int32, np.uint32])
@given(data=st.data())
def test_shifts(dt, data):
    dt = np.dtype(dt)
    bits = dt.itemsize * 8
    x = data.draw(_int_arrays(dt), label="x")
    lo = -2 if dt.kind == "i" else 0
    s = data.draw(hnp.arrays(dt, N, elements=st.integers(lo, bits + 2)), label="s")
    compiled = _shifts_jit(x, s)
    for kind in _shifts:
        want = np.array([_shift_reference(kind, int(a), int(b), dt) for a, b in zip(x, s)], dtype=dt)
        for mode, got in (("eager", _shifts[kind](x, s)), ("jit", compiled[kind])):
            np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{kind} {mode}")


def test_uint8_arithmetic_shift_jax_values():
    u8 = np.array([1, 255, 128, 7], np.uint8)
    s8 = np.array([0, 7, 8, 9], np.uint8)
    # eager; the compiled kernel is checked against the same rule in test_shifts
    np.testing.assert_array_equal(lax.shift_right_arithmetic(u8, s8), np.array([1, 255, 255, 0], np.uint8))


def test_float_to_int_conversion_specials():
    x = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.7, -2.7], np.float32)
    want = {
        np.int32: [0, 2147483647, -2147483648, 2147483647, -2147483648, 2, -2],
        np.uint32: [0, 4294967295, 0, 3000000000, 0, 2, 0],
        np.int8: [0, 127, -128, 127, -128, 2, -2],
        np.uint8: [0, 255, 0, 255, 0, 2, 0],
    }
    compiled = fjax.jit(lambda a: [a.astype(dt) for dt in want])(x)
    for (dt, w), got_jit in zip(want.items(), compiled):
        np.testing.assert_array_equal(lax.convert_element_type(x, dt), np.array(w, dt), err_msg=str(dt))
        np.testing.assert_array_equal(got_jit, np.array(w, dt), err_msg=str(dt))


def test_integer_power_negative_exponent():
    x = np.array([2, -2, 1, -1, 0, 3], np.int32)
    y = np.full(6, -2, np.int32)
    for f in (jnp.power, fjax.jit(jnp.power)):
        np.testing.assert_array_equal(f(x, y), [0, 0, 1, 1, 0, 703701817])
    with pytest.raises(TypeError, match="negative"):
        fjax.jit(lambda a: a**-2)(x)


def test_nan_through_relu_and_heaviside():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0], np.float32)
    for f in (fjax.nn.relu, fjax.jit(fjax.nn.relu)):
        np.testing.assert_array_equal(f(x), np.array([np.nan, np.inf, 0.0, 0.0, 0.0, 1.0], np.float32))
    np.testing.assert_array_equal(fjax.grad(fjax.nn.relu)(0.0), 0.0)
    h = jnp.heaviside(x, jnp.float32(0.5))
    np.testing.assert_array_equal(h, np.array([np.nan, 1.0, 0.0, 0.5, 0.5, 1.0], np.float32))


def test_vmap_out_axes_out_of_bounds():
    x = jnp.ones((3, 4))
    f = lambda a: a[None] * jnp.ones((2, 4))  # noqa: E731  (a 2-D output per example)
    assert fjax.vmap(f, out_axes=2)(x).shape == (2, 4, 3)
    assert fjax.vmap(f, out_axes=-3)(x).shape == (3, 2, 4)
    for ax in (3, 5, -4):
        with pytest.raises(ValueError, match=rf"^axis {ax} is out of bounds for array of dimension 3$"):
            fjax.vmap(f, out_axes=ax)(x)
    with pytest.raises(ValueError, match="axis 1 is out of bounds for array of dimension 1"):
        fjax.vmap(lambda a: a.sum(), out_axes=1)(x)
    # an unmapped output broadcast to the mapped axis is checked as well
    with pytest.raises(ValueError, match="axis 2 is out of bounds for array of dimension 2"):
        fjax.vmap(lambda a: jnp.ones(4), out_axes=2)(x)


def _f3(a, b, c):
    return a + b


def test_jit_static_argnums_validated():
    for nums in (3, -4, (0, 3)):
        with pytest.raises(ValueError, match=r"static_argnums=.*but only accepts 3 positional arguments"):
            fjax.jit(_f3, static_argnums=nums)
    with pytest.raises(ValueError, match=r"donate_argnums=\(5,\), but only accepts 3"):
        fjax.jit(_f3, donate_argnums=5)
    with pytest.raises(ValueError, match=r"invalid argnames \{'zz'\} in static_argnames"):
        fjax.jit(_f3, static_argnames="zz")
    with pytest.raises(ValueError, match=r"invalid argnames \{'zz'\}"):
        fjax.jit(_f3, static_argnames=("c", "zz"))
    with pytest.raises(ValueError, match="cannot intersect"):
        fjax.jit(_f3, static_argnums=1, donate_argnums=1)
    # in range, negative, *args and **kwargs functions are accepted
    assert fjax.jit(_f3, static_argnums=-1)(1.0, 2.0, "s") == 3.0
    assert fjax.jit(lambda *a: a[0], static_argnums=3)(1.0, 2.0) == 1.0
    assert fjax.jit(lambda a, **kw: a, static_argnames="zz")(1.0, zz="s") == 1.0
    assert fjax.jit(_f3, static_argnames="c")(1.0, 2.0, "s") == 3.0
    assert fjax.jit(_f3, static_argnames="c")(1.0, 2.0, c="s") == 3.0


_ldexp_jit = fjax.jit(jnp.ldexp)
_frexp_jit = fjax.jit(jnp.frexp)


@given(
    x=hnp.arrays(
        np.float32, N, elements=st.floats(width=32, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    ),
    k=hnp.arrays(np.int32, N, elements=st.integers(-300, 300)),
)
def test_ldexp_frexp_exact(x, k):
    # exact, as numpy's (and JAX's on normal values): no overflow through 2**k on the way
    with np.errstate(all="ignore"):
        want = np.ldexp(x, k)
    want = np.where(np.abs(want) < np.finfo(np.float32).tiny, 0.0 * x, want)  # JAX flushes subnormals
    for f in (jnp.ldexp, _ldexp_jit):
        got = np.asarray(f(jnp.asarray(x), jnp.asarray(k)))
        got = np.where(np.abs(got) < np.finfo(np.float32).tiny, 0.0 * x, got)
        np.testing.assert_array_equal(got, want)
    wm, we = np.frexp(x)
    for f in (jnp.frexp, _frexp_jit):
        m, e = f(jnp.asarray(x))
        np.testing.assert_array_equal(np.asarray(m), wm)
        np.testing.assert_array_equal(np.asarray(e), we)


def test_ldexp_specials():
    # infinities, zeros and NaN pass through (x1 * 2**200 * 2**-200 would make NaN), as JAX
    xs = np.array([np.inf, -np.inf, 0.0, -0.0, np.nan, 1e-30, 3e38], np.float32)
    for k in (200, -200):
        want = np.ldexp(xs, k)
        for f in (jnp.ldexp, _ldexp_jit):
            got = np.asarray(f(jnp.asarray(xs), jnp.full(7, k, jnp.int32)))
            assert _same_float(got, want).all(), (k, got, want)


def test_softmax_at_infinities():
    # values from JAX 0.10.2: an inf input makes the whole row NaN (the max is not made finite)
    cases = [
        ([np.inf, 1.0], [np.nan, np.nan], [np.nan, np.nan]),
        ([-np.inf, 0.0], [0.0, 1.0], [-np.inf, 0.0]),
        ([-np.inf, -np.inf], [np.nan, np.nan], [np.nan, np.nan]),
        ([np.nan, 1.0], [np.nan, np.nan], [np.nan, np.nan]),
    ]
    for x, sm, lsm in cases:
        x = jnp.array(x, jnp.float32)
        # eager only (a compile here costs seconds; the jnp code is the same under jit)
        np.testing.assert_array_equal(fjax.nn.softmax(x), np.array(sm, np.float32))
        np.testing.assert_array_equal(fjax.nn.log_softmax(x), np.array(lsm, np.float32))
