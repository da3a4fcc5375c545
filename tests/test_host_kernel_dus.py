"""The numba backend's host kernel for ``dynamic_update_slice`` (``host_kernels._build_dus``) against
the primitive's numpy impl: shapes, dtypes, start indices in and out of range (clamped), several
index dtypes; and under ``jit`` against numpy."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import fjax
from fjax import lax
from fjax.backends.kernel_ir import HostCall
from fjax.backends.numba.host_kernels import host_kernel
from fjax.core import ShapedArray
from fjax.lax.slicing import dynamic_update_slice_p


@st.composite
def _case(draw):
    nd = draw(st.integers(0, 3))
    dshape = tuple(draw(st.integers(1, 5)) for _ in range(nd))
    ushape = tuple(draw(st.integers(0, d)) for d in dshape)
    dt = np.dtype(draw(st.sampled_from(["float32", "int32", "bool", "float64", "uint8"])))
    it = np.dtype(draw(st.sampled_from(["int32", "int64", "uint32", "int8"])))
    lo, hi = (0, 9) if it.kind == "u" else (-7, 9)
    starts = [np.asarray(draw(st.integers(lo, hi)), it) for _ in range(nd)]
    seed = draw(st.integers(0, 1000))
    return dshape, ushape, dt, starts, seed


@given(_case())
def test_host_dus_matches_impl(case):
    dshape, ushape, dt, starts, seed = case
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(dshape) * 5).astype(dt)
    u = (rng.standard_normal(ushape) * 5).astype(dt)
    step = HostCall(
        dynamic_update_slice_p,
        {},
        (ShapedArray(dshape, dt), ShapedArray(ushape, dt), *(ShapedArray((), s.dtype) for s in starts)),
        (ShapedArray(dshape, dt),),
    )
    kern = host_kernel(step)
    assert kern is not None
    got = kern(x, u, *starts)
    want = dynamic_update_slice_p.impl(x, u, *starts)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert got is not x and not np.shares_memory(got, x)


def test_jit_dus_clamps_like_numpy():
    f = fjax.jit(lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)) * 2)
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    u = -np.ones((2, 3), np.float32)
    for i, j in [(0, 0), (3, 4), (-2, 1), (-9, -1), (1, 9)]:
        # lax.dynamic_update_slice counts a negative start from the end (as JAX); the primitive clamps
        i, j = i + 4 if i < 0 else i, j + 5 if j < 0 else j
        ci, cj = min(max(i, 0), 2), min(max(j, 0), 2)
        want = x.copy()
        want[ci : ci + 2, cj : cj + 3] = u
        np.testing.assert_array_equal(np.asarray(f(x, u, np.int32(i), np.int32(j))), want * 2)
