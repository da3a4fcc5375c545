"""The private ``random_fma`` and ``random_bitcast`` primitives lower under jit (``rt.fma``,
``rt.bitcast``) with the impls' results bit for bit (float64 included: both are LLVM's fma)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
from fjax import random as R


@pytest.fixture(autouse=True)
def _x64(x64):
    yield


_fma_jit = fjax.jit(R._fma)
_bits_jit = fjax.jit(lambda x: R._bitcast(x, np.uint32))
_float_jit = fjax.jit(lambda x: R._bitcast(x, np.float32))


@given(st.sampled_from([np.float32, np.float64]), st.integers(0, 2**31))
def test_fma_lowering_matches_impl(dt, seed):
    r = np.random.RandomState(seed % 2**31)
    a, b, c = (r.randn(64).astype(dt) * dt(10.0) ** r.randint(-3, 4, 64).astype(dt) for _ in range(3))
    # products that cancel c almost exactly: where a separate multiply and add would round twice
    c[:16] = -(a[:16].astype(np.float64) * b[:16]).astype(dt)
    got = np.asarray(_fma_jit(a, b, c))
    want = R._fma_impl(a, b, c)
    np.testing.assert_array_equal(got.view(f"u{np.dtype(dt).itemsize}"), want.view(f"u{np.dtype(dt).itemsize}"))


def test_bitcast_lowering_round_trips():
    x = np.array([0.0, -0.0, 1.5, -np.inf, np.nan, 1e-45, 3.4e38], np.float32)
    bits = np.asarray(_bits_jit(x))
    np.testing.assert_array_equal(bits, x.view(np.uint32))
    np.testing.assert_array_equal(np.asarray(_float_jit(bits)).view(np.uint32), x.view(np.uint32))
