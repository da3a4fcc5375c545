"""Control flow compiled by the numba backend: scan/while/cond inside ``fjax.jit`` become real loops
and branches of one compiled function (``fjax/backends/numba/loops.py``). Every test compares
the compiled result with eager evaluation (``disable_jit``) and, where it matters, checks from the
generated source that the loop was compiled rather than run on the host."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax


def eager(f, *args):
    with fjax.disable_jit():
        return f(*args)


def close(a, b, rtol=2e-5, atol=1e-5):
    la, ta = fjax.tree_util.tree_flatten(a)
    lb, tb = fjax.tree_util.tree_flatten(b)
    assert ta == tb
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype, (x.shape, x.dtype, y.shape, y.dtype)
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


def source(f, *args) -> str:
    return fjax.jit(f).lower(*args).as_text()


def compiled(src: str, prim: str) -> bool:
    return f"# fjax compiled {prim}" in src and f"# host: {prim}" not in src


def rnn_loss(W, U, h0, xs):
    def step(h, x):
        h = jnp.tanh(h @ W + x @ U)
        return h, h

    h, hs = lax.scan(step, h0, xs)
    return jnp.sum(hs * hs) + jnp.sum(h)


def rnn_args(T=7, H=5, D=3, seed=0):
    rng = np.random.RandomState(seed)
    return (
        jnp.asarray(rng.randn(H, H).astype(np.float32) / np.sqrt(H)),
        jnp.asarray(rng.randn(D, H).astype(np.float32)),
        jnp.asarray(rng.randn(H).astype(np.float32)),
        jnp.asarray(rng.randn(T, D).astype(np.float32)),
    )


def test_rnn_scan_forward_and_grad_compile_to_loops():
    args = rnn_args()
    src = source(rnn_loss, *args)
    assert compiled(src, "scan")
    close(fjax.jit(rnn_loss)(*args), eager(rnn_loss, *args), rtol=1e-5)
    g = fjax.grad(rnn_loss, (0, 1, 2))
    gsrc = source(g, *args)
    assert gsrc.count("# fjax compiled scan") == 2  # the forward and the transposed (reverse) scan
    assert "# host:" not in gsrc
    close(fjax.jit(g)(*args), eager(g, *args), rtol=1e-4, atol=1e-5)


def test_scan_source_does_not_depend_on_length():
    """10 and 10,000 steps: the same program up to the step count (nothing is unrolled)."""
    a10, a10k = rnn_args(T=10), rnn_args(T=10_000)
    s10, s10k = source(rnn_loss, *a10), source(rnn_loss, *a10k)
    assert len(s10.splitlines()) == len(s10k.splitlines())
    norm = [re.sub(r"\b\d+\b", "N", s) for s in (s10, s10k)]
    assert norm[0] == norm[1]


shapes = st.sampled_from([(), (1,), (3,), (2, 3)])


@given(
    length=st.integers(0, 6),
    shape=shapes,
    reverse=st.booleans(),
    dtype=st.sampled_from([np.float32, np.int32]),
    seed=st.integers(0, 2**16),
)
def test_scan_matches_eager(length, shape, reverse, dtype, seed):
    rng = np.random.RandomState(seed)
    init = jnp.asarray(np.asarray(rng.randn(*shape) * 3).astype(dtype))
    xs = jnp.asarray((rng.randn(length, *shape) * 3).astype(dtype))
    w = jnp.asarray(np.asarray(rng.randn(*shape) * 3).astype(dtype))

    def f(init, xs, w):
        def body(c, x):
            if dtype == np.int32:
                h = jnp.clip(c * w + x, -100, 100)
                return h, (h * x - c, jnp.sum(h), h > 0)
            h = jnp.tanh(c * w + x)
            return h, (h * x + jnp.sin(c), jnp.sum(h), h > 0)

        return lax.scan(body, init, xs, reverse=reverse)

    assert compiled(source(f, init, xs, w), "scan")
    close(fjax.jit(f)(init, xs, w), eager(f, init, xs, w), rtol=1e-5)


def test_scan_in_float64(x64):
    xs = jnp.asarray(np.random.RandomState(2).randn(5, 3))
    assert xs.dtype == np.float64

    def f(xs):
        return lax.scan(lambda c, x: (c * 0.9 + jnp.exp(-x * x), c @ jnp.ones((3, 2))), jnp.zeros(3), xs)

    assert compiled(source(f, xs), "scan")
    close(fjax.jit(f)(xs), eager(f, xs), rtol=1e-12)


def test_scan_swapped_and_passthrough_carries():
    """New carries that are other carries (a swap), an unchanged carry and a constant one."""

    def f(a, b, c):
        def body(carry, x):
            a, b, c, k = carry
            return (b, a + b, c, 1), a * x

        return lax.scan(body, (a, b, c, 0), jnp.arange(1, 9, dtype=jnp.int32))

    args = (jnp.int32(0), jnp.int32(1), jnp.float32(2.5))
    assert compiled(source(f, *args), "scan")
    close(fjax.jit(f)(*args), eager(f, *args))
    (a, b, c, k), ys = fjax.jit(f)(*args)
    assert int(a) == 21 and int(b) == 34 and float(c) == 2.5 and int(k) == 1


def test_scan_of_matrices_with_batched_dots():
    rng = np.random.RandomState(1)
    A = jnp.asarray(rng.randn(4, 3, 3).astype(np.float32) * 0.5)
    x0 = jnp.asarray(rng.randn(2, 3, 3).astype(np.float32))

    def f(x0, A):
        def body(x, a):
            y = jnp.einsum("bij,jk->bik", x, a) + jnp.matmul(x, a.T)
            return jnp.tanh(y), jnp.einsum("bij,bkj->bik", y, x)

        return lax.scan(body, x0, A)

    assert compiled(source(f, x0, A), "scan")
    close(fjax.jit(f)(x0, A), eager(f, x0, A), rtol=1e-5, atol=1e-5)
    g = fjax.grad(lambda x0, A: jnp.sum(f(x0, A)[1] ** 2), (0, 1))
    close(fjax.jit(g)(x0, A), eager(g, x0, A), rtol=1e-4, atol=1e-4)


@given(n=st.integers(-2, 12), step=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_while_loop_matches_eager(n, step, seed):
    x = jnp.asarray(np.random.RandomState(seed).randn(3).astype(np.float32))

    def f(n, x):
        def cond(c):
            i, _ = c
            return i < n

        def body(c):
            i, v = c
            return i + step, jnp.sin(v) * 1.5 + 0.1

        return lax.while_loop(cond, body, (jnp.int32(0), x))

    assert compiled(source(f, jnp.int32(n), x), "while")
    close(fjax.jit(f)(jnp.int32(n), x), eager(f, jnp.int32(n), x))


def test_fori_loop_traced_and_concrete_bounds():
    def f(lo, hi, x):
        return lax.fori_loop(lo, hi, lambda i, v: v * 0.5 + i.astype(jnp.float32), x)

    x = jnp.ones(4, jnp.float32)
    assert compiled(source(f, jnp.int32(1), jnp.int32(6), x), "while")
    close(fjax.jit(f)(jnp.int32(1), jnp.int32(6), x), eager(f, jnp.int32(1), jnp.int32(6), x))

    def g(x):
        return lax.fori_loop(0, 5, lambda i, v: jnp.cos(v) + i, x)

    assert compiled(source(g, x), "scan")
    close(fjax.jit(g)(x), eager(g, x))
    close(fjax.jit(fjax.grad(lambda x: jnp.sum(g(x))))(x), eager(fjax.grad(lambda x: jnp.sum(g(x))), x))


@pytest.mark.parametrize("index", [-3, 0, 1, 2, 7])
def test_switch_clamps_and_matches_eager(index):
    one, three = jnp.float32(1.0), jnp.float32(3.0)
    branches = [lambda x, y: (x + y, one), lambda x, y: (x * y, jnp.sum(x)), lambda x, y: (y, three)]

    def f(i, x, y):
        return lax.switch(i, branches, x, y)

    x, y = jnp.arange(3.0), jnp.ones(3) * 2
    assert compiled(source(f, jnp.int32(index), x, y), "cond")
    close(fjax.jit(f)(jnp.int32(index), x, y), eager(f, jnp.int32(index), x, y))


def test_cond_inside_scan_and_scan_inside_cond_and_while_inside_scan():
    def f(xs, flag):
        def body(c, x):
            c = lax.cond(x > 0, lambda c: c + x, lambda c: c * 0.5, c)
            k = lax.while_loop(lambda k: k * k < jnp.abs(x) * 10, lambda k: k + 1.0, 0.0)
            return c, c + k

        inner = lambda xs: lax.scan(body, 1.0, xs)  # noqa: E731
        return lax.cond(flag, inner, lambda xs: (jnp.float32(0.0), xs), xs)

    xs = jnp.asarray(np.random.RandomState(3).randn(6).astype(np.float32))
    src = source(f, xs, True)
    assert compiled(src, "cond") and "# host:" not in src
    for flag in (True, False):
        close(fjax.jit(f)(xs, flag), eager(f, xs, flag))


def test_vmap_of_while_under_jit_batched_predicate():
    def f(n, x):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 1.1), (0, x))[1]

    ns = jnp.asarray([0, 3, 1, 5], jnp.int32)
    xs = jnp.ones(4, jnp.float32)
    vf = fjax.vmap(f)
    assert compiled(source(vf, ns, xs), "while")
    close(fjax.jit(vf)(ns, xs), eager(vf, ns, xs))


def test_vmap_of_grad_of_cond_under_jit():
    def f(x):
        return lax.cond(x > 0.5, jnp.sin, lambda x: x * x * x, x)

    xs = jnp.linspace(-1.0, 2.0, 7)
    h = fjax.vmap(fjax.grad(f))
    close(fjax.jit(h)(xs), eager(h, xs))


def test_body_with_host_fallback_still_correct():
    """A body with a primitive that has no lowering rule: the scan runs on the host (correctly)."""

    def f(xs):
        return lax.scan(lambda c, x: (c + jnp.argmax(x), jnp.cumsum(x)), 0, xs)

    xs = jnp.asarray(np.random.RandomState(0).randn(4, 5).astype(np.float32))
    close(fjax.jit(f)(xs), eager(f, xs))


# ---------------------------------------------------------------------------------------------
# indexed updates inside compiled loops


def test_fori_loop_at_set_runs_in_place():
    def fill(x):
        return lax.fori_loop(0, x.shape[0], lambda i, x: x.at[i].set(i * 2.0), x)

    x = jnp.zeros(7)
    src = source(fill, x)
    assert compiled(src, "scan") and "# host:" not in src
    assert re.search(r"o\d+ = c\d+\n", src)  # the scatter writes the carry buffer itself
    close(fjax.jit(fill)(x), eager(fill, x))
    np.testing.assert_array_equal(np.asarray(x), np.zeros(7))  # the input is untouched


def test_carry_read_after_update_is_not_updated_in_place():
    def f(x):
        def body(i, c):
            x, s = c
            y = x.at[i].add(1.0)
            return y, s + jnp.sum(x)  # the old x is read after the update

        return lax.fori_loop(0, 4, body, (x, 0.0))

    x = jnp.arange(4.0)
    assert not re.search(r"o\d+ = c\d+\n", source(f, x))
    close(fjax.jit(f)(x), eager(f, x))


@pytest.mark.parametrize("kind", ["set", "add", "mul", "min", "max"])
@pytest.mark.parametrize("mode", ["clip", "drop"])
@given(seed=st.integers(0, 2**16))
def test_scatter_family_in_loops(kind, mode, seed):
    rng = np.random.RandomState(seed)
    x = jnp.asarray(rng.randint(-5, 5, (4, 3)).astype(np.int32))
    idx = jnp.asarray(rng.randint(-2, 6, (3, 2)).astype(np.int32))  # duplicates and out of range
    upd = jnp.asarray(rng.randint(-3, 4, (3, 3)).astype(np.int32))

    def f(x, idx, upd):
        def body(c, k):
            ref = c.at[idx[:, 0] + k]
            return getattr(ref, kind)(upd, mode=mode), jnp.sum(c)

        return lax.scan(body, x, jnp.arange(3))

    assert compiled(source(f, x, idx, upd), "scan")
    close(fjax.jit(f)(x, idx, upd), eager(f, x, idx, upd))


@given(seed=st.integers(0, 2**16), shape=st.sampled_from([(5,), (4, 3), (3, 2, 2)]))
def test_dynamic_update_slice_and_window_scatter_in_loops(seed, shape):
    rng = np.random.RandomState(seed)
    x = jnp.asarray(rng.randn(*shape).astype(np.float32))
    u = jnp.asarray(rng.randn(*[max(1, d - 1) for d in shape]).astype(np.float32))
    starts = [int(s) for s in rng.randint(-2, 5, len(shape))]

    def f(x, u):
        def body(c, k):
            c = lax.dynamic_update_slice(c, u * k.astype(jnp.float32), [s + k for s in starts])
            c = c.at[k % shape[0]].add(1.0)  # a window scatter (a whole row)
            return c, c[0]

        return lax.scan(body, x, jnp.arange(4))

    assert compiled(source(f, x, u), "scan")
    close(fjax.jit(f)(x, u), eager(f, x, u))


def test_bool_scatter_in_loop():
    def f(m):
        return lax.fori_loop(0, 3, lambda i, m: m.at[2 * i].max(True), m)

    m = jnp.zeros(6, bool)
    close(fjax.jit(f)(m), eager(f, m))


def test_failed_loop_compile_falls_back_to_host_loop(monkeypatch, caplog):
    """Outside strict mode a loop that fails to compile runs on the host; the rest stays compiled."""
    import logging

    from fjax.backends import dispatch
    from fjax.backends.numba import loops as numba_loops
    from fjax.config import config

    def boom(*args, **kwargs):
        raise RuntimeError("simulated loop compile failure")

    monkeypatch.setattr(numba_loops, "emit", boom)
    monkeypatch.setattr(config, "fjax_lowering_strict", False)

    def f(x):
        y = jnp.tanh(x) * 3.0
        return lax.fori_loop(0, 3, lambda i, c: c * 0.5 + 1.0, y)

    x = jnp.linspace(-1.0, 1.0, 5)
    with caplog.at_level(logging.WARNING, logger="fjax.lowering"):
        fn = dispatch.compile_jaxpr(fjax.jit(f).lower(x).jaxpr)
    assert fn is not None
    assert any("its loops run on the host" in r.getMessage() for r in caplog.records)
    close(fjax.jit(f)(x), eager(f, x))
