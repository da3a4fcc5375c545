"""fjax._blas: numpy's OpenBLAS runs fjax's small and medium GEMMs single-threaded, large ones with
its default team, and gets its thread count back after each jitted call or eager dot."""

from __future__ import annotations

import os

import numpy as np
import pytest

import fjax
from fjax import _blas, lax

fjax.config.update("fjax_jit_backend", "numba")

needs_team = pytest.mark.skipif(
    _blas._get is None or _blas.DEFAULT < 2, reason="needs numpy's OpenBLAS with a default team of 2+ threads"
)


def test_threads_for_by_size_and_load():
    for busy in (False, True):
        assert _blas.threads_for(1, 8, busy) == 1
        assert _blas.threads_for(64 * 64 * 128, 8, busy) == 1  # the digits MLP's GEMMs
        assert _blas.threads_for(_blas.PARALLEL_MACS - 1, 8, busy) == 1
        assert _blas.threads_for(10**12, 1, busy) == 1
    assert _blas.threads_for(_blas.PARALLEL_MACS, 8, False) == 8
    assert _blas.threads_for(256 * 784 * 512, 4, False) == 4  # a 784-512 MLP layer on batch 256
    assert _blas.threads_for(256 * 784 * 512, 4, True) == 1  # ... while other work holds the cores
    assert _blas.threads_for(10**12, None, False) == _blas.DEFAULT


def test_machine_busy_reads_the_load_average(monkeypatch):
    ncpu = os.cpu_count() or 1
    monkeypatch.setattr(_blas, "_load", [0.0, -10.0])
    monkeypatch.setattr(os, "getloadavg", lambda: (ncpu + 2.0, 0.0, 0.0))
    assert _blas.machine_busy(now=0.0)
    monkeypatch.setattr(os, "getloadavg", lambda: (ncpu * 1.0, 0.0, 0.0))
    assert _blas.machine_busy(now=0.5)  # read at most once a second: still the old value
    assert not _blas.machine_busy(now=1.5)


def test_use_and_restore_track_the_library():
    if _blas._get is None:
        pytest.skip("no OpenBLAS found in this process")
    try:
        _blas.use(1)
        assert _blas._get() == 1
        _blas.use(1)  # cached: no call, same state
        assert _blas._get() == 1
    finally:
        _blas.restore()
    assert _blas._get() == _blas.DEFAULT


def _mm(a, b):
    return lax.dot_general(a, b, (((1,), (0,)), ((), ())))


_seen: list = []


def _record(x):
    _seen.append(_blas._get())
    return x


def _two_gemms(a, b, big_a, big_b):
    # a medium GEMM, a host callback that reads the thread count, then a large GEMM
    m = _mm(a, b)
    m = fjax.pure_callback(_record, fjax.ShapeDtypeStruct(m.shape, m.dtype), m)
    return m, _mm(big_a, big_b)


_two_gemms_jit = fjax.jit(_two_gemms)


@needs_team
def test_jit_gemm_threads_chosen_by_size_and_restored():
    rng = np.random.RandomState(0)
    a, b = rng.randn(128, 128).astype(np.float32), rng.randn(128, 128).astype(np.float32)
    big_a, big_b = rng.randn(256, 256).astype(np.float32), rng.randn(256, 256).astype(np.float32)
    ir = _two_gemms_jit.lower(a, b, big_a, big_b).as_text(dialect="ir")
    assert ir.count("= dot(") == 2, ir
    _seen.clear()
    m, big = _two_gemms_jit(a, b, big_a, big_b)
    assert _seen == [1]  # during the call, after the 2M multiply-add GEMM
    assert _blas._get() == _blas.DEFAULT  # after it
    np.testing.assert_allclose(np.asarray(m), a @ b, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(np.asarray(big), big_a @ big_b, rtol=1e-5, atol=1e-4)


@needs_team
def test_eager_dot_unchanged_and_restored():
    rng = np.random.RandomState(1)
    a, b = rng.randn(3, 100, 90).astype(np.float32), rng.randn(3, 90, 80).astype(np.float32)
    out = lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,))))
    np.testing.assert_allclose(np.asarray(out), np.matmul(a, b), rtol=1e-5, atol=1e-4)
    assert _blas._get() == _blas.DEFAULT


_conv_seen: list = []


def _record_conv(x):
    _conv_seen.append([_blas._get()] + [g() for _, g, _ in _blas._others])
    return x


def _conv_then_callback(x, w):
    y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return fjax.pure_callback(_record_conv, fjax.ShapeDtypeStruct(y.shape, y.dtype), y)


@needs_team
def test_compiled_conv_gemms_single_threaded_and_restored():
    rng = np.random.RandomState(2)
    x = rng.randn(8, 16, 16, 8).astype(np.float32)  # 2.4M multiply-adds
    w = rng.randn(3, 3, 8, 16).astype(np.float32)
    _conv_seen.clear()
    y = fjax.jit(_conv_then_callback)(x, w)
    assert _conv_seen and all(n == 1 for n in _conv_seen[0])
    assert _blas._get() == _blas.DEFAULT
    assert all(g() == d for _, g, d in _blas._others)
    ref = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    np.testing.assert_allclose(np.asarray(y), np.asarray(ref), rtol=1e-4, atol=1e-4)
