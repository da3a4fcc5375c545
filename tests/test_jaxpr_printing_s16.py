"""Session 16's printing fixes, checked beyond the text: gradients through transposed scans with
linear consts and through forwarding jits against finite differences, ``jnp.full``'s wrapping of
out-of-range Python ints, and ``jax.debug.print``/``log``/``callback`` output. The ``make_jaxpr``
texts themselves (JAX 0.10.2's, ``tests/data/jaxpr_printing_s16.json``) are compared in
``tests/test_jaxpr_printing.py``.
"""

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import lax


def _fd(fn, args, i, eps=1e-6):
    """Central finite difference of ``fn`` in its ``i``-th float64 argument."""
    lo, hi = list(args), list(args)
    lo[i] -= eps
    hi[i] += eps
    return (float(fn(*hi)) - float(fn(*lo))) / (2 * eps)


def _np_scan(body, c, length):
    for _ in range(length):
        c = body(c)
    return c


SCAN_FNS = {
    "const": (lambda c, w: c * w, lambda x, w: _np_scan(lambda c: c * w, x, 3)),
    "const_self": (lambda c, w: c * w + c, lambda x, w: _np_scan(lambda c: c * w + c, x, 3)),
    "const_sin": (lambda c, w: jnp.sin(c) * w, lambda x, w: _np_scan(lambda c: np.sin(c) * w, x, 3)),
}


@pytest.mark.parametrize("name", sorted(SCAN_FNS))
@pytest.mark.parametrize("x,w", [(1.0, 2.0), (0.3, -0.7)])
def test_scan_const_grads_match_finite_differences(name, x, w):
    body, ref = SCAN_FNS[name]

    def fn(x, w):
        return lax.scan(lambda c, _: (body(c, w), None), x, None, length=3)[0]

    gx, gw = fjax.grad(fn, argnums=(0, 1))(np.float32(x), np.float32(w))
    np.testing.assert_allclose(float(gx), _fd(ref, (x, w), 0), rtol=2e-3, atol=1e-5)
    np.testing.assert_allclose(float(gw), _fd(ref, (x, w), 1), rtol=2e-3, atol=1e-5)
    gx2, gw2 = fjax.jit(fjax.grad(fn, argnums=(0, 1)))(np.float32(x), np.float32(w))
    np.testing.assert_allclose([float(gx2), float(gw2)], [float(gx), float(gw)], rtol=1e-6)


# JAX 0.10.2 (x64 off): a Python int fill value is cast to the dtype with numpy's wrap-around.
# Recorded from jnp.full((2,), value, dtype=dtype) (dtype None: a weak int32).
FULL_WRAP = [
    (2**40, "int32", [0, 0]),
    (2**31, "int32", [-(2**31)] * 2),
    (-(2**40) - 5, "int32", [-5, -5]),
    (2**40 + 7, "int32", [7, 7]),
    (2**63, "int32", [0, 0]),
    (-(2**63), "int32", [0, 0]),
    (2**40, "uint8", [0, 0]),
    (70000, "int16", [4464, 4464]),
    (2**40, "float32", [1.0995116e12] * 2),
    (2**40, "bool", [True, True]),
    (2**40, None, [0, 0]),
]


@pytest.mark.parametrize("value,dtype,expected", FULL_WRAP)
def test_full_wraps_out_of_range_int(value, dtype, expected):
    out = jnp.full((2,), value, dtype=dtype)
    assert out.dtype == np.dtype(dtype or "int32")
    assert out.weak_type == (dtype is None)
    np.testing.assert_array_equal(np.asarray(out), np.array(expected, out.dtype))
    like = jnp.full_like(jnp.ones(2, dtype or "int32"), value)
    np.testing.assert_array_equal(np.asarray(like), np.array(expected, out.dtype))
    np.testing.assert_array_equal(np.asarray(lax.full((2,), value, dtype)), np.array(expected, out.dtype))
    traced = fjax.jit(lambda: jnp.full((2,), value, dtype=dtype))()
    np.testing.assert_array_equal(np.asarray(traced), np.array(expected, out.dtype))


def test_full_int_beyond_int64_is_numpys_overflow():
    # JAX 0.10.2: OverflowError('Python int too large to convert to C long')
    with pytest.raises(OverflowError, match="Python int too large to convert to C long"):
        jnp.full((2,), 2**64, dtype=jnp.int32)


def test_debug_print_still_prints_under_jit_and_eagerly(capsys):
    def f(x):
        fjax.debug.print("x={x} s={}", "s", x=x)
        return x * 2

    f(jnp.float32(1.5))
    fjax.jit(f)(jnp.float32(2.5))
    assert capsys.readouterr().out == "x=1.5 s=s\nx=2.5 s=s\n"


def test_debug_log_records_the_callers_line():
    def f(x):
        fjax.debug.log("v {}", x)  # the recorded line
        return x

    text = str(fjax.make_jaxpr(f)(1.0))
    line = f.__code__.co_firstlineno + 1
    assert f'logging_record=<LogRecord: jax._src.debugging, 20, {__file__}, {line}, "">' in text
    assert text.startswith("{ lambda ; a:f32[]. let\n    debug_print[\n      fmt=v {}\n")


def test_debug_callback_prints_its_callback():
    def f(x):
        fjax.debug.callback(print, x)
        return x

    assert "debug_print" not in str(fjax.make_jaxpr(f)(1.0))


def _h(x, y):
    return x, jnp.sin(x) * y, y  # two primal outputs are inputs (forwarded around the jit)


def _k(x):
    s = jnp.sin(x)
    return s, s * x  # a residual that is also a primal output


JIT_FNS = {
    "inputs_out": lambda x, y: sum(fjax.jit(_h)(x, y)) * 1.5,
    "residual_is_output": lambda x, y: sum(fjax.jit(_k)(x * y)),
    "nested": lambda x, y: fjax.jit(lambda a, b: fjax.jit(_h)(a, b)[1] * jnp.cos(a))(x, y),
    "in_scan": lambda x, y: lax.scan(lambda c, _: (fjax.jit(_h)(c, y)[1], None), x, None, length=3)[0],
    "in_grad_of_jit": lambda x, y: fjax.jit(lambda a: fjax.grad(lambda b: fjax.jit(_k)(b)[1])(a) * y)(x),
}


@pytest.mark.parametrize("name", sorted(JIT_FNS))
def test_grads_through_forwarding_jits_match_finite_differences(name):
    fn = JIT_FNS[name]
    x, y = np.float64(0.7), np.float64(-1.3)
    with fjax.enable_x64(True):
        gx, gy = fjax.grad(fn, argnums=(0, 1))(x, y)
        np.testing.assert_allclose(float(gx), _fd(fn, (x, y), 0), rtol=1e-5)
        np.testing.assert_allclose(float(gy), _fd(fn, (x, y), 1), rtol=1e-5)
        out, lin = fjax.linearize(fn, x, y)
        np.testing.assert_allclose(float(out), float(fn(x, y)), rtol=1e-12)
        np.testing.assert_allclose(float(lin(1.0, 0.0)), float(gx), rtol=1e-9)
        _, vjp = fjax.vjp(fjax.jit(fn), x, y)
        np.testing.assert_allclose([float(c) for c in vjp(1.0)], [float(gx), float(gy)], rtol=1e-9)
