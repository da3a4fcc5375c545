"""Scatter-add/mul/min/max of 1- and 2-byte elements (bool, int8/uint8, int16/uint16, float16,
bfloat16) on the CUDA backend: a compare-and-swap loop on the aligned 32-bit word that holds the
element (``host_ops._subword_update``). Run on the cupy stand-in against the CPU, bit for bit (the
emulator applies the updates in index order, as the impl), at top level and in a scan body; and the
generated translation unit compiled by nvcc."""

from __future__ import annotations

import _nvcc
import _standin_gpu  # noqa: E402  (tests/ is on the path)
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
from fjax import lax
from fjax.backends.cuda import emulate

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.float16, ml_dtypes.bfloat16]
N, M = 37, 150  # an odd operand length: elements sit at every offset of their 32-bit word


def _all_ops(x, i, u):
    return x.at[i].add(u), x.at[i].multiply(u), x.at[i].min(u), x.at[i].max(u)


def _draw(dt, rng, n):
    d = np.dtype(dt)
    if d == np.bool_:
        return rng.random(n) < 0.5
    if d.kind == "f" or d == ml_dtypes.bfloat16:
        v = (rng.standard_normal(n) * 2).astype(dt)
        v[rng.integers(0, n, 2)] = np.nan
        return v
    info = np.iinfo(d)
    return rng.integers(info.min, int(info.max) + 1, n).astype(dt)  # products and sums wrap


def _same_bits(got, want):
    """Equal bit for bit, except that NaNs need only be NaNs (payloads may differ)."""
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w)
            continue
        gn, wn = np.isnan(g.astype(np.float32)), np.isnan(w.astype(np.float32))
        np.testing.assert_array_equal(gn, wn)
        np.testing.assert_array_equal(g.view(np.uint16)[~gn], w.view(np.uint16)[~wn])


@pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")
@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_subword_scatters_match_the_cpu(dt, seed):
    rng = np.random.default_rng(seed)
    x, u = _draw(dt, rng, N), _draw(dt, rng, M)
    idx = rng.integers(0, N, M).astype(np.int32)  # many duplicates: the updates contend for words
    with _standin_gpu.installed():
        got, want = _standin_gpu.both(_all_ops, x, idx, u)
    _same_bits(got, want)


@pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")
def test_subword_scatter_in_a_scan_body():
    rng = np.random.default_rng(3)
    x, u = _draw(np.int8, rng, N), _draw(np.int8, rng, (4 * 20)).reshape(4, 20)
    idx = rng.integers(0, N, (4, 20)).astype(np.int32)

    def f(x, idx, u):
        def body(c, v):
            c = c.at[v[0]].multiply(v[1]).at[v[0]].max(v[1])
            return c, c[:3]

        return lax.scan(body, x, (idx, u))

    with _standin_gpu.installed():
        got, want = _standin_gpu.both(f, x, idx, u)
    for g, w in zip(fjax.tree_util.tree_leaves(got), fjax.tree_util.tree_leaves(want)):
        np.testing.assert_array_equal(g, w)


@_nvcc.needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_subword_scatters_compile_with_nvcc(arch, tmp_path):
    dts = (np.bool_, np.int8, np.int16, ml_dtypes.bfloat16, np.float16)
    xs = [np.zeros(N, d) for d in dts] + [np.zeros(M, np.int32)] + [np.zeros(M, d) for d in dts]

    def f(*a):
        return [_all_ops(x, a[len(dts)], u) for x, u in zip(a[: len(dts)], a[len(dts) + 1 :])]

    text = fjax.jit(f).trace(*xs).lower(lowering_platforms=("cuda",)).as_text()
    assert text.count("atomicCAS(a, seen") >= 4 * len(dts)
    _nvcc.compile_without_spills(text, arch, tmp_path)
