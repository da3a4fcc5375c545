"""Elementwise kernels of the CUDA backend are grid-stride loops. With the default grid (one vector
or element per thread, up to 2**20 blocks) a thread loops more than once only past 268M elements,
so these tests cap the grid (``render.MAX_GRID``) to make every thread take several strides: the
vector path, its scalar tail, the unaligned fallback and horizontally fused segments, on the
emulator, against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax.backends.cuda import emulate, render

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")

N = 3 * 2 * 256 * 4 + 5  # three strides of a 2-block grid of float4 vectors, and a tail of 5


def _grids(fn, args) -> list:
    from fjax.backends import dispatch  # noqa: PLC0415
    from fjax.backends.cuda.records import Launch  # noqa: PLC0415

    low = fjax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",))
    backend = dispatch.get_backend("cuda")
    plan, _ = backend.build(dispatch.lower(low.jaxpr, backend))
    return [s.grid for s in plan.steps if isinstance(s, Launch)]


@pytest.fixture
def small_grid(monkeypatch):
    monkeypatch.setattr(render, "MAX_GRID", 2)


def test_the_default_grid_gives_each_thread_one_vector():
    x = np.zeros(1 << 22, np.float32)
    assert _grids(lambda x: x * 2.0 + 1.0, (x,)) == [((1 << 22) // 4 // render.BLOCK, 1, 1)]


def test_each_thread_takes_several_strides(small_grid):
    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)

    def f(x):
        return jnp.tanh(x) * 2.0 + 1.0

    assert _grids(f, (x,)) == [(2, 1, 1)]
    (got,) = emulate.run_lowered(fjax.jit(f).trace(x), x)
    np.testing.assert_allclose(got, np.tanh(x) * 2 + 1, rtol=2e-6, atol=2e-6)


def test_unaligned_views_take_the_scalar_loop_over_several_strides(small_grid):
    x = np.random.default_rng(1).standard_normal(N + 1).astype(np.float32)

    def f(x):
        return x[1:] * 3.0 - x[:-1]  # views at an odd offset: no float4 loads

    (got,) = emulate.run_lowered(fjax.jit(f).trace(x), x)
    np.testing.assert_allclose(got, x[1:] * 3 - x[:-1], rtol=1e-6, atol=1e-6)


def test_fused_segments_stride_independently(small_grid):
    rng = np.random.default_rng(2)
    a = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal((7, 300)).astype(np.float32)

    def f(a, b):
        return jnp.exp(a) + 1.0, jnp.sin(b) * 2.0  # independent nests: one launch, two segments

    assert _grids(f, (a, b)) == [(4, 1, 1)]  # two segments of 2 blocks in one launch
    ga, gb = emulate.run_lowered(fjax.jit(f).trace(a, b), a, b)
    np.testing.assert_allclose(ga, np.exp(a) + 1, rtol=2e-6)
    np.testing.assert_allclose(gb, np.sin(b) * 2, rtol=2e-6, atol=1e-6)
