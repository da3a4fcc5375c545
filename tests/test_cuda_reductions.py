"""CUDA reductions that keep the innermost axis (column reductions: 32 neighbouring outputs per
block, one per lane, warps striding the reduced positions) against numpy, run on the CPU emulator:
shapes whose output count is not a multiple of 32, several reductions and elementwise outputs in
one nest, every monoid, float32 and int32, and the one-block-per-output path they replace
(``FJAX_CUDA_COLUMN_REDUCTIONS=0`` is read at import; here the module flag is switched)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax.backends.cuda import emulate, render

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")


def _run(fn, *args):
    low = fjax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",))
    return low.as_text(), emulate.run_lowered(low, *args)


def _stats(x):
    # one nest: an elementwise output and four reductions over the leading axes
    y = x * 2.0 + 1.0
    axes = tuple(range(x.ndim - 1))
    return y, jnp.sum(y * x, axis=axes), jnp.max(x, axis=axes), jnp.min(x, axis=axes), jnp.prod(x * 0.1 + 1, axis=axes)


@pytest.mark.parametrize("shape", [(256, 512), (37, 33), (8, 32), (5, 7, 100), (300, 1000)])
@pytest.mark.parametrize("column", [True, False])
def test_column_reduction_matches_numpy(shape, column, monkeypatch):
    monkeypatch.setattr(render, "COLUMN_REDUCTIONS", column)
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    text, got = _run(_stats, x)
    assert ("neighbouring outputs per block" in text) == column, text[:2000]
    y = x * 2.0 + 1.0
    axes = tuple(range(x.ndim - 1))
    want = [
        y,
        (y * x).sum(axes, dtype=np.float64),
        x.max(axes),
        x.min(axes),
        (x * 0.1 + 1).prod(axes, dtype=np.float64),
    ]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.astype(np.float32), rtol=2e-5, atol=2e-5)


@settings(max_examples=8, deadline=None)
@given(
    lead=st.lists(st.integers(1, 40), min_size=1, max_size=2),
    inner=st.integers(32, 130),
    seed=st.integers(0, 2**16),
)
def test_column_sum_and_argmax_int(lead, inner, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-1000, 1000, (*lead, inner)).astype(np.int32)
    axes = tuple(range(len(lead)))
    _, (s, m) = _run(lambda x: (jnp.sum(x, axis=axes), jnp.max(x, axis=axes)), x)
    np.testing.assert_array_equal(s, x.sum(axes, dtype=np.int32))
    np.testing.assert_array_equal(m, x.max(axes))


def test_column_reduction_gradient_of_a_bias():
    """The MLP's bias gradient: a [batch, features] column sum fused with the elementwise
    backward of tanh (the case that moved bias gradients to this path)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 96)).astype(np.float32)
    b = rng.standard_normal(96).astype(np.float32)
    g = fjax.grad(lambda b, x: jnp.sum(jnp.tanh(x + b) ** 2))
    text, (got,) = _run(g, b, x)
    assert "neighbouring outputs per block" in text
    t = np.tanh(x.astype(np.float64) + b)
    np.testing.assert_allclose(got, (2 * t * (1 - t * t)).sum(0), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "op", [jnp.sum, jnp.max, jnp.min, jnp.prod, lambda x, axis: jnp.any(x > 0, axis), lambda x, a: jnp.all(x > 0, a)]
)
def test_reduction_over_extent_one_axes_is_a_view(op):
    """Summing a keepdims axis (the gradient of a broadcast leaves such sums) is its one element:
    no loop nest of its own, fused with what reads it, on the CPU (numba) and in CUDA."""
    x = np.random.default_rng(1).standard_normal((6, 1, 5, 1)).astype(np.float32)

    def f(x):
        return op(x * 3.0, (1, 3))

    want = np.asarray(f(x))
    np.testing.assert_array_equal(np.asarray(fjax.jit(f)(x)), want)
    text, (got,) = _run(f, x)
    np.testing.assert_array_equal(got, want)
    assert "reduction loop nest" not in text, text[:3000]
