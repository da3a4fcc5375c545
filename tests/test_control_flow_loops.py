"""lax.while_loop / lax.fori_loop: values, transforms and errors, against Python loops."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax.lax.control_flow import fori_loop, while_loop
from fjax.test_util import check_grads

floats = st.floats(-1.5, 1.5, allow_nan=False, width=32)
vec3 = st.lists(floats, min_size=3, max_size=3).map(lambda v: np.array(v, np.float32))


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def w_fn(n, x):
    # carry: (counter, value, pytree of extras)
    def cond_fun(c):
        return c[0] < n

    def body_fun(c):
        i, v, d = c
        return i + 1, jnp.sin(v) + d["a"], {"a": d["a"] * 0.5}

    return while_loop(cond_fun, body_fun, (0, x, {"a": jnp.float32(0.25)}))[1]


def w_py(n, x):
    a = np.float32(0.25)
    for _ in range(n):
        x = np.sin(x) + a
        a = a * 0.5
    return x


@given(st.integers(0, 6), vec3)
def test_while_values_eager_and_jit(n, x):
    close(w_fn(n, x), w_py(n, x))
    close(fjax.jit(w_fn)(n, x), w_py(n, x))
    close(fjax.jit(w_fn, static_argnums=0)(n, x), w_py(n, x))


def test_while_prints_primitive_and_closure_consts():
    a = jnp.arange(3.0)
    f = lambda x: while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * a), (0, x))  # noqa: E731
    s = str(fjax.make_jaxpr(f)(jnp.ones(3)))
    assert "while[" in s and "cond_jaxpr=" in s and "body_jaxpr=" in s and "body_nconsts=1" in s
    close(f(jnp.ones(3))[1], np.arange(3.0) ** 3)


@given(st.lists(st.integers(0, 5), min_size=4, max_size=4), st.lists(floats, min_size=4, max_size=4))
def test_while_vmap_batched_predicate(ns, xs):
    ns = np.array(ns, np.int32)
    xs = np.array(xs, np.float32)
    out = fjax.vmap(w_fn)(ns, xs)
    close(out, [w_py(int(n), x) for n, x in zip(ns, xs)])
    out = fjax.jit(fjax.vmap(w_fn, (0, None)))(ns, xs[0])
    close(out, [w_py(int(n), xs[0]) for n in ns])
    # in_axes other than 0, and a predicate on a float carry
    xs2 = np.stack([xs, xs + 1.0], 1)
    f = lambda x: while_loop(lambda v: v[0] < 4.0, lambda v: v * 1.5 + 0.1, x)  # noqa: E731

    def f_py(v):
        while v[0] < 4.0:
            v = v * np.float32(1.5) + np.float32(0.1)
        return v

    close(fjax.vmap(f, 1, 1)(np.abs(xs2.T).T + 0.5), np.stack([f_py(v) for v in (np.abs(xs2.T).T + 0.5).T], 1))


@given(st.integers(0, 5), vec3)
def test_while_vmap_unbatched_predicate(n, xs):
    out = fjax.vmap(w_fn, (None, 0))(n, xs)
    close(out, [w_py(n, x) for x in xs])


@given(st.integers(0, 5), floats, floats)
def test_while_jvp(n, x, a):
    x, a = np.float32(x), np.float32(a)

    def f(x, a):
        return while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, jnp.sin(c[1]) * a + c[2], c[2]), (0, x, 0.1))[1]

    check_grads(f, (x, a), order=2, modes=("fwd",))
    check_grads(fjax.jit(f), (x, a), order=1, modes=("fwd",))
    # a tangent flows into a carry whose initial tangent is zero (fixed point on nonzeros)
    g = lambda x: while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[2] * 2.0, c[1] + x), (0, 1.0, 0.0))[1]  # noqa: E731
    check_grads(g, (x,), order=1, modes=("fwd",))
    _, t = fjax.jvp(lambda x: w_fn(n, x), (x,), (np.float32(1.0),))
    eps = 1e-3
    close(t, (w_py(n, np.float64(x) + eps) - w_py(n, np.float64(x) - eps)) / (2 * eps), 2e-3)


@given(st.lists(st.integers(0, 4), min_size=3, max_size=3), vec3)
def test_while_vmap_of_jvp_and_linearize(ns, xs):
    ns = np.array(ns, np.int32)
    tans = fjax.vmap(lambda n, x: fjax.jvp(lambda x: w_fn(n, x), (x,), (np.float32(1.0),))[1])(ns, xs)
    for n, x, t in zip(ns, xs, tans):
        _, t1 = fjax.jvp(lambda x: w_fn(int(n), x), (x,), (np.float32(1.0),))
        close(t, t1)
    y, f_lin = fjax.linearize(lambda x: w_fn(3, x), xs)
    close(y, w_py(3, xs))
    close(f_lin(np.ones(3, np.float32)), fjax.jvp(lambda x: w_fn(3, x), (xs,), (np.ones(3, np.float32),))[1])


def test_while_reverse_mode_error():
    msg = "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic start/stop"
    with pytest.raises(ValueError, match=msg):
        fjax.grad(lambda x: w_fn(3, x))(1.0)
    with pytest.raises(ValueError, match=msg):
        fjax.grad(fjax.jit(lambda x: w_fn(3, x)))(1.0)
    with pytest.raises(ValueError, match=msg):
        fjax.grad(fjax.jit(lambda x, n: fori_loop(0, n, lambda i, v: v * 2.0, x)))(1.0, 3)
    # concrete bounds lower to scan: reverse mode works
    close(fjax.grad(lambda x, n: fori_loop(0, n, lambda i, v: v * 2.0, x))(1.0, 3), 8.0)


def test_while_errors():
    with pytest.raises(TypeError) as e:
        while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1].astype(jnp.int32)), (0, jnp.float32(1.0)))
    msg = str(e.value)
    assert "while_loop body" in msg and "c[1]" in msg and "float32[]" in msg and "int32[]" in msg
    assert "dtypes do not match" in msg
    with pytest.raises(TypeError, match=r"carry\['x'\] has type float32\[3\].*float32\[1,3\].*shapes do not match"):
        while_loop(lambda carry: False, lambda carry: {"x": carry["x"][None]}, {"x": jnp.ones(3)})
    with pytest.raises(TypeError, match="same pytree structure"):
        while_loop(lambda c: False, lambda c: (c, c), jnp.float32(1.0))
    with pytest.raises(TypeError, match="cond_fun must return a boolean scalar"):
        while_loop(lambda c: c, lambda c: c, jnp.float32(1.0))
    with pytest.raises(TypeError, match="cond_fun must return a boolean scalar"):
        while_loop(lambda c: c > 0, lambda c: c, jnp.ones(2))


def test_weak_typed_carry_is_promoted():
    out = fori_loop(0, 3, lambda i, x: x + 1.5, 0)
    assert out.dtype == np.float32 and float(out) == 4.5
    out = while_loop(lambda c: c < 10, lambda c: c + jnp.int32(4), 1)
    assert out.dtype == np.int32 and int(out) == 13


@given(st.integers(-2, 6), st.integers(-2, 6), vec3)
def test_fori_loop_values(lo, hi, x):
    def py(lo, hi, x):
        for i in range(lo, hi):
            x = x * np.float32(0.9) + np.float32(i)
        return x

    body = lambda i, v: v * 0.9 + i  # noqa: E731
    close(fori_loop(lo, hi, body, x), py(lo, hi, x), 1e-4)
    close(fjax.jit(lambda lo, hi, x: fori_loop(lo, hi, body, x))(lo, hi, x), py(lo, hi, x), 1e-4)
    # traced bounds under vmap: a while loop with a batched predicate
    his = np.array([hi, hi + 1, lo], np.int32)
    out = fjax.vmap(lambda h, v: fori_loop(lo, h, body, v))(his, x)
    close(out, [py(lo, int(h), v) for h, v in zip(his, x)], 1e-4)


@given(st.integers(0, 5), vec3)
def test_fori_loop_grads_static_bounds(n, x):
    def f(x):
        return fori_loop(0, n, lambda i, v: jnp.sin(v) * 1.1 + i * 0.1, x)

    check_grads(f, (x,), order=2, modes=("fwd", "rev"))
    check_grads(fjax.jit(f), (x,), order=1, modes=("fwd", "rev"))
    # jvp with traced bounds goes through while_loop
    g = fjax.jit(lambda n, x: fori_loop(0, n, lambda i, v: jnp.sin(v) * 1.1 + i * 0.1, x))
    close(
        fjax.jvp(lambda x: g(n, x), (x,), (np.ones(3, np.float32),))[1], fjax.jvp(f, (x,), (np.ones(3, np.float32),))[1]
    )


def test_fori_loop_errors():
    with pytest.raises(TypeError, match="must have equal types"):
        fori_loop(jnp.int32(0), jnp.int16(3), lambda i, x: x, 1.0)
    with pytest.raises(ValueError, match="unroll"):
        fjax.jit(lambda n: fori_loop(0, n, lambda i, x: x, 1.0, unroll=2))(3)
