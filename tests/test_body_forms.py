"""argmax/argmin and windowed gathers inside loop bodies compile (``fjax/lax/_body_forms.py``):
the compiled loop gives the op-by-op results, NaNs, ties, clamping and fill windows included."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax


def _in_loop(f):
    """``f(x, i)`` evaluated at i = 0, 1, 2 inside a compiled ``fori_loop``, outputs stacked."""

    def run(x):
        out0 = f(x, 0)

        def body(i, acc):
            return acc.at[i].set(f(x, i))

        return lax.fori_loop(0, 3, body, jnp.zeros((3,) + out0.shape, out0.dtype))

    return run


def _eager(f, x):
    with fjax.disable_jit():
        return np.stack([np.asarray(f(jnp.asarray(x), i)) for i in range(3)])


@settings(deadline=None, max_examples=12)
@given(
    st.sampled_from(["argmax", "argmin"]),
    st.sampled_from([np.float32, np.int32, np.bool_]),
    st.integers(1, 5),
    st.integers(1, 4),
    st.integers(0, 1),
    st.integers(0, 2**31 - 1),
)
def test_argmax_argmin_in_loop_bodies(name, dtype, n, m, axis, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, size=(n, m)).astype(dtype)  # small range: ties
    if dtype == np.float32 and seed % 3 == 0:
        x.flat[rng.integers(0, x.size)] = np.nan
    op = getattr(jnp, name)

    def f(x, i):
        return op(x + (i if dtype != np.bool_ else 0), axis=axis)

    g = fjax.jit(_in_loop(f))
    np.testing.assert_array_equal(np.asarray(g(x)), _eager(f, x))
    assert "host" not in g.lower(x).as_text("ir")


@settings(deadline=None, max_examples=12)
@given(
    st.integers(2, 7),
    st.integers(1, 3),
    st.integers(-4, 8),
    st.sampled_from(["clip", "fill", "slice"]),
    st.booleans(),
)
def test_windowed_gathers_in_loop_bodies(n, w, off, mode, batched):
    w = min(w, n)
    x = np.arange(2 * n * 3, dtype=np.float32).reshape(2, n, 3)

    def f(x, i):
        start = i + off
        if mode == "slice":
            return lax.dynamic_slice(x, (start, 0), (w, 2))
        idx = start + jnp.arange(w)
        if mode == "fill":  # gathers with windows over the last axis, out-of-bounds rows filled
            return x.at[idx, :2].get(mode="fill", fill_value=-7.0)
        return x.at[idx].get(mode="clip")

    if batched:  # vmap: the gather gets batching dims, then windows
        g = fjax.jit(fjax.vmap(_in_loop(f)))
        want = np.stack([_eager(f, x[b]) for b in range(2)])
        got = g(x)
        arg = x
    else:
        g = fjax.jit(_in_loop(f))
        want, got, arg = _eager(f, x[0]), g(x[0]), x[0]
    np.testing.assert_array_equal(np.asarray(got), want)
    assert "host" not in g.lower(arg).as_text("ir")


def test_outside_bodies_argmax_keeps_its_own_form():
    g = fjax.jit(lambda x: jnp.argmax(x))
    assert "argmax" in g.lower(jnp.ones(4)).as_text("ir")


@pytest.mark.parametrize("n", [1, 5])
def test_argmax_first_nan_and_first_tie(n):
    x = np.array([1.0, 3.0, np.nan, 3.0, np.nan][:n], np.float32)
    f = lambda x, i: jnp.argmax(x) + i * 0  # noqa: E731
    np.testing.assert_array_equal(np.asarray(fjax.jit(_in_loop(f))(x)), _eager(f, x))
