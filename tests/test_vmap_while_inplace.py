"""``vmap`` of a ``while_loop`` whose predicate is batched, with carries updated in place
(scatters and dynamic_update_slice of the carry itself): each member's result is the unbatched
loop's, and the compiled loop keeps the update in place (no whole-carry select per step)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax


def _loop(kind: str, n: int, off: int):
    def f(step0, xs, scale):
        def cond(c):
            return c[0] < n

        def body(c):
            step, xs = c
            i = step + off  # may run past the end: each kind's out-of-bounds rule applies
            if kind == "set":
                xs = xs.at[i].set(scale * step)
            elif kind == "add":
                xs = xs.at[i % 3].add(scale)
            elif kind == "mul":
                xs = xs.at[i].multiply(scale, mode="drop")
            elif kind == "max":
                xs = xs.at[-1 - (i % 2)].max(scale * step)
            elif kind == "dus_row":  # a window: batched index -> scatter with window dims
                xs = lax.dynamic_update_slice(xs, jnp.full((2,), scale * step), (i,))
            elif kind == "dus_unbatched_index":
                xs = lax.dynamic_update_slice(xs, jnp.full((1,), scale), (n - 1 - step,))
            return step + 1, xs

        return lax.while_loop(cond, body, (step0, xs))

    return f


KINDS = ["set", "add", "mul", "max", "dus_row", "dus_unbatched_index"]


@settings(deadline=None, max_examples=8)
@given(st.sampled_from(KINDS), st.lists(st.integers(0, 6), min_size=1, max_size=4), st.integers(-2, 3), st.booleans())
def test_vmapped_while_matches_each_member(kind, starts, off, jit):
    n = 6
    f = _loop(kind, n, off)
    if kind == "dus_unbatched_index":
        starts = [0] * len(starts)  # the index must not depend on the batch: same trip count
    b = len(starts)
    xs = np.arange(b * 8, dtype=np.float32).reshape(b, 8) / 7
    scales = np.linspace(1.5, 2.5, b, dtype=np.float32)
    steps = np.asarray(starts, np.int32)
    g = fjax.vmap(f)
    if jit:
        g = fjax.jit(g)
    got_steps, got = g(steps, xs, scales)
    for m in range(b):
        want_step, want = f(jnp.int32(steps[m]), xs[m], scales[m])
        assert int(got_steps[m]) == int(want_step)
        np.testing.assert_allclose(np.asarray(got[m]), np.asarray(want), rtol=1e-6)


def test_nested_vmap_and_carry_read_elsewhere():
    def f(step0, xs):
        def body(c):
            step, xs, acc = c
            return step + 1, xs.at[step].set(acc), acc + xs[step]  # xs is also read

        return lax.while_loop(lambda c: c[0] < 4, body, (step0, xs, jnp.float32(0)))

    steps = np.array([[0, 1], [2, 3]], np.int32)
    xs = np.arange(2 * 2 * 5, dtype=np.float32).reshape(2, 2, 5)
    out = fjax.jit(fjax.vmap(fjax.vmap(f)))(steps, xs)
    for i in range(2):
        for j in range(2):
            want = f(jnp.int32(steps[i, j]), xs[i, j])
            for o, w in zip(out, want):
                np.testing.assert_allclose(np.asarray(o[i, j]), np.asarray(w))


@pytest.mark.parametrize("kind", ["set", "dus_row"])
def test_compiled_loop_has_no_host_step_or_whole_carry_select(kind):
    g = fjax.jit(fjax.vmap(_loop(kind, 6, 0)))
    args = (jnp.zeros(3, jnp.int32), jnp.zeros((3, 1000)), jnp.ones(3))
    ir = g.lower(*args).as_text("ir")
    assert "host" not in ir

    def selects_of_carry(jaxpr) -> int:
        n = 0
        for e in jaxpr.eqns:
            if e.primitive.name == "select_n" and e.outvars[0].aval.shape == (3, 1000):
                n += 1
            for v in e.params.values():
                for x in v if isinstance(v, (tuple, list)) else (v,):
                    if hasattr(x, "jaxpr") and hasattr(x, "consts"):
                        n += selects_of_carry(x.jaxpr)
        return n

    assert selects_of_carry(fjax.make_jaxpr(g)(*args).jaxpr) == 0


@settings(deadline=None, max_examples=10)
@given(st.integers(1, 4), st.integers(1, 6), st.sampled_from(["clip", "drop", "fill"]), st.integers(0, 2**31 - 1))
def test_batched_gathers_and_scatters_compile_in_index_form(b, n, mode, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(b, n, 3)).astype(np.float32)
    idx = rng.integers(-n - 2, n + 2, size=(b, 4)).astype(np.int32)
    upd = rng.normal(size=(b, 4, 3)).astype(np.float32)

    def f(x, i, u):
        g = x.at[i].get(mode=mode, fill_value=-1.0) if mode == "fill" else x.at[i].get(mode=mode)
        s = x.at[i].add(u, mode="drop" if mode == "fill" else mode)
        return g, s, x.at[i[0]].set(u[0], mode="clip")

    eager = fjax.vmap(f)(x, idx, upd)
    jitted = fjax.jit(fjax.vmap(f))
    for a, w in zip(jitted(x, idx, upd), eager):
        np.testing.assert_allclose(np.asarray(a), np.asarray(w), rtol=1e-6, atol=1e-6)
    # the batched gather is the pointwise (compiled) form once its batching dim is an iota index
    one = fjax.jit(fjax.vmap(lambda x, i: x.at[i].get(mode="clip") * 2))
    ir = one.lower(x[:, :, 0], idx).as_text("ir")
    assert "host" not in ir
    np.testing.assert_allclose(
        np.asarray(one(x[:, :, 0], idx)),
        2 * np.take_along_axis(x[:, :, 0], np.where(idx < 0, idx + n, idx).clip(0, n - 1), 1),
    )
