"""Host callbacks inside compiled loops and branches, and the buffers of nested loops.

A ``pure_callback``/``io_callback``/``debug_callback`` in a ``scan``/``while``/``cond`` body no
longer sends the loop to the host: the numba backend compiles the loop and calls back from it
(an object-mode call in the branch that holds the callback), so equinox's ``error_if`` inside
diffrax's step loop costs nothing until it fires. Each test compares the compiled program with
eager evaluation (``disable_jit``): results, the arguments and order of every call, and the
exception a raising callback propagates. ``_compiled`` checks the loop really is compiled.

Loops nested in loop bodies allocate their buffers once before the outermost loop, and a compiled
loop function borrows its buffers (no reference counting inside the loop); the last tests run
nested loops and loops with zero trips, one after another, against numpy.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.backends import kernel_ir, lowering
from fjax.backends.numba.backend import NumbaBackend
from fjax.errors import JaxRuntimeError
from fjax.experimental import io_callback

CAPS = NumbaBackend().capabilities


def _compiled(f, *args) -> None:
    """Every control-flow equation of ``f``'s jaxpr compiles (no host step)."""
    closed = fjax.make_jaxpr(f)(*args)
    prog = lowering.build_program(closed, CAPS)
    assert prog is not None
    kinds = [type(s).__name__ for s in prog.steps]
    assert not any(isinstance(s, kernel_ir.HostCall) for s in prog.steps), kinds
    assert any(isinstance(s, kernel_ir.ControlStep) for s in prog.steps), kinds


def _eager(f, *args):
    with fjax.disable_jit():
        return f(*args)


# ---------------------------------------------------------------------------------------------
# a pure_callback in a branch taken rarely (equinox's error_if)

LOG: list = []


def _check_host(i, c):
    LOG.append((int(i), float(c)))
    if float(c) > 1000.0:
        raise ValueError(f"carry {float(c)} too large")
    return np.float32(c) * np.float32(0.5)


def _rare(x, n, thresh):
    def body(i, c):
        def on_error(c):
            return fjax.pure_callback(_check_host, jax_struct(), i, c)

        return lax.cond(c > thresh, on_error, lambda c: c * 1.5 + 1.0, c)

    return lax.fori_loop(0, n, body, x)


def jax_struct():
    return fjax.ShapeDtypeStruct((), jnp.float32)


_rare_jit = fjax.jit(_rare)


@given(st.floats(-4, 4, width=32), st.integers(0, 30), st.floats(1, 200, width=32))
def test_pure_callback_in_rare_branch(x, n, thresh):
    x, n, thresh = np.float32(x), np.int32(n), np.float32(thresh)
    _compiled(_rare, x, n, thresh)
    LOG.clear()
    got = _rare_jit(x, n, thresh)
    got_calls = list(LOG)
    LOG.clear()
    want = _eager(_rare, x, n, thresh)
    assert got_calls == LOG
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_raising_callback_stops_the_compiled_loop():
    x, n, thresh = np.float32(1e4), np.int32(5), np.float32(10.0)
    LOG.clear()
    with pytest.raises(JaxRuntimeError, match="carry 10000.0 too large") as jit_err:
        _rare_jit(x, n, thresh)
    assert LOG == [(0, 1e4)]  # the first call raised; nothing after it ran
    assert isinstance(jit_err.value.__cause__, ValueError)
    LOG.clear()
    with pytest.raises(JaxRuntimeError, match="carry 10000.0 too large"):
        _eager(_rare, x, n, thresh)
    assert LOG == [(0, 1e4)]
    # the compiled loop is usable after an error
    np.testing.assert_allclose(np.asarray(_rare_jit(np.float32(1), np.int32(3), thresh)), 1 * 1.5**3 + 1.5**2 + 1.5 + 1)


# ---------------------------------------------------------------------------------------------
# effectful callbacks run in program order, once per iteration


def test_io_callback_in_scan_in_order():
    seen: list = []

    def record(t, v):
        seen.append((int(t), np.asarray(v).tolist()))
        return np.int32(len(seen))

    def f(xs):
        def body(c, x):
            k = io_callback(record, fjax.ShapeDtypeStruct((), jnp.int32), c[0], x, ordered=True)
            return (c[0] + 1, c[1] + x * k.astype(jnp.float32)), k

        return lax.scan(body, (jnp.int32(0), jnp.zeros(3, jnp.float32)), xs)

    xs = np.arange(12, dtype=np.float32).reshape(4, 3)
    _compiled(f, xs)
    got = fjax.jit(f)(xs)
    got_seen = list(seen)
    seen.clear()
    want = _eager(f, xs)
    assert got_seen == seen and len(seen) == 4
    for a, b in zip(fjax.tree_util.tree_leaves(got), fjax.tree_util.tree_leaves(want)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_debug_callback_in_while():
    seen: list = []

    def f(x):
        def body(c):
            fjax.debug.callback(lambda i, v: seen.append((int(i), float(v))), c[0], c[1])
            return c[0] + 1, c[1] * 2.0

        return lax.while_loop(lambda c: c[1] < 100.0, body, (jnp.int32(0), x))

    _compiled(f, np.float32(3.0))
    got = fjax.jit(f)(np.float32(3.0))
    assert seen == [(0, 3.0), (1, 6.0), (2, 12.0), (3, 24.0), (4, 48.0), (5, 96.0)]
    assert int(got[0]) == 6 and float(got[1]) == 192.0


# ---------------------------------------------------------------------------------------------
# several inputs and outputs of several dtypes and shapes, none at all, nested loops


def _multi_host(a, b, flag):
    a, b = np.asarray(a), np.asarray(b)
    return (a * 2 + b.sum()).astype(np.float32), (b + 1).astype(np.int32), np.logical_not(flag)


def _multi(a, b):
    out = (
        fjax.ShapeDtypeStruct((2, 3), jnp.float32),
        fjax.ShapeDtypeStruct((4,), jnp.int32),
        fjax.ShapeDtypeStruct((), jnp.bool_),
    )

    def inner(c):
        a, b, flag, k = c
        a2, b2, flag2 = fjax.pure_callback(_multi_host, out, a, b, flag)
        return a2 * 0.25, b2, flag2, k + 1

    def outer(carry, _):
        a, b, flag = carry
        a, b, flag, _k = lax.while_loop(lambda c: c[3] < 3, inner, (a, b, flag, jnp.int32(0)))
        return (a, b, flag), a.sum() + b.sum()

    return lax.scan(outer, (a, b, jnp.bool_(True)), None, length=4)


@given(st.integers(-5, 5))
def test_multiple_outputs_in_nested_loops(seed):
    rng = np.random.default_rng(seed + 5)
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.integers(-3, 3, 4).astype(np.int32)
    _compiled(_multi, a, b)
    got = fjax.jit(_multi)(a, b)
    want = _eager(_multi, a, b)
    for g, w in zip(fjax.tree_util.tree_leaves(got), fjax.tree_util.tree_leaves(want)):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


def test_callback_output_shape_checked_in_loop():
    def f(x):
        def body(i, c):
            return fjax.pure_callback(lambda c: np.zeros(3, np.float32), fjax.ShapeDtypeStruct((2,), jnp.float32), c)

        return lax.fori_loop(0, 2, body, x)

    with pytest.raises(JaxRuntimeError, match="incorrect output shape"):
        fjax.jit(f)(np.zeros(2, np.float32))


# ---------------------------------------------------------------------------------------------
# nested loops reuse hoisted buffers; loops with no trips; one loop after another


def _nested(x, n, m):
    def outer(i, c):
        def inner(c2):
            j, v = c2
            return j + 1, v * 0.5 + jnp.sin(v) + i.astype(jnp.float32)

        _, v = lax.while_loop(lambda c2: c2[0] < m, inner, (jnp.int32(0), c))
        return lax.cond(v.sum() > 0, lambda v: v - 1.0, lambda v: v + jnp.sum(v * v), v)

    return lax.fori_loop(0, n, outer, x)


def _nested_np(x, n, m):
    x = x.astype(np.float32)
    for i in range(n):
        for _ in range(m):
            x = (x * np.float32(0.5) + np.sin(x) + np.float32(i)).astype(np.float32)
        x = x - np.float32(1) if x.sum() > 0 else x + np.sum(x * x, dtype=np.float32)
    return x


@given(st.integers(0, 4), st.integers(0, 3), st.integers(0, 100))
def test_nested_loops_against_numpy(n, m, seed):
    x = np.random.default_rng(seed).standard_normal(5).astype(np.float32)
    got = fjax.jit(_nested)(x, np.int32(n), np.int32(m))
    np.testing.assert_allclose(np.asarray(got), _nested_np(x, n, m), rtol=2e-5, atol=2e-5)


def test_loops_with_and_without_trips_in_turn():
    # the results of a loop function are copied out before its buffers are freed: a loop that
    # runs no step returns its initial values, whatever ran before it
    for n in [3, 0, 5, 0, 1, 0]:

        def f(x, a, n=n):
            body = lambda c: (c[0] + 1, jnp.sin(c[1]) * a + c[2], c[2])  # noqa: E731
            return lax.while_loop(lambda c: c[0] < n, body, (0, x, np.float32(0.1)))[1]

        x, a = np.float32(0.3), np.float32(0.7)
        got = fjax.jvp(fjax.jit(f), (x, a), (np.float32(1.764), np.float32(0.4)))
        want = _eager(lambda x, a: fjax.jvp(f, (x, a), (np.float32(1.764), np.float32(0.4))), x, a)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_callbacks_from_compiled_loops_in_threads():
    # the loop function releases the GIL (nogil); the object-mode call takes it back
    import threading

    def f(x):
        def body(i, c):
            return fjax.pure_callback(
                lambda c: (np.asarray(c) + 1).astype(np.float32), fjax.ShapeDtypeStruct((), jnp.float32), c
            )

        return lax.fori_loop(0, 300, body, x)

    jf = fjax.jit(f)
    res: dict = {}

    def run(k):
        res[k] = [float(jf(np.float32(k))) for _ in range(3)]

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert res == {k: [300.0 + k] * 3 for k in range(4)}


@given(st.floats(-3, 3, width=32))
def test_callback_in_top_level_cond(x):
    # equinox's error_if after a solve: a cond whose error branch calls back, outside any loop
    seen: list = []

    def host(v):
        seen.append(float(v))
        return np.asarray(v, np.float32) * np.float32(10)

    def f(x):
        y = jnp.sin(x) * 2.0
        return lax.cond(y > 1.0, lambda y: fjax.pure_callback(host, jax_struct(), y), lambda y: y - 1.0, y)

    x = np.float32(x)
    _compiled(f, x)
    got = float(fjax.jit(f)(x))
    got_seen = list(seen)
    seen.clear()
    want = float(_eager(f, x))
    # (the compiled sin may differ from numpy's in the last place)
    assert len(got_seen) == len(seen)
    np.testing.assert_allclose(got_seen, seen, rtol=1e-6)
    np.testing.assert_allclose(got, want, rtol=1e-6)
