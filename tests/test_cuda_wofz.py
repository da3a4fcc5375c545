"""The CUDA ``wofz`` kernel (``fjax/backends/cuda/special_complex.py``: Faddeeva's w(z)) on the cupy
stand-in (g++ against ``cuda_emu.h``) against the CPU (scipy's Faddeeva package): every branch of
the algorithm and its switch points in all four quadrants, infinities and NaNs, drawn values over
20 decades, complex64 (rounded once from double precision), its derivative, and nvcc."""

from __future__ import annotations

import _nvcc  # noqa: E402  (tests/ is on the path)
import _standin_gpu  # noqa: E402  (tests/ is on the path)
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
from fjax.backends.cuda import emulate
from fjax.scipy.special import wofz

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")


@pytest.fixture(scope="module", autouse=True)
def standin_gpu():
    with _standin_gpu.installed() as cs:
        yield cs


# the branches' switch points: |x| 5e-4 (Taylor sums), 6/8/10/28 (continued fraction or sums), |y|
# 1e-10, 0.1, 5, 6, 7 and |x| + |y| 4000, 1e7 (one or two continued-fraction terms)
_XS = [0.0, 1e-7, 4.9e-4, 5.1e-4, 0.3, 2.0, 5.9, 6.1, 7.9, 8.1, 9.99, 10.01, 27.9, 28.1, 60.0, 3999.0, 4001.0, 2e7]
_YS = [0.0, 1e-13, 0.99e-10, 1.01e-10, 0.09, 0.11, 1.5, 4.9, 5.1, 5.9, 6.1, 6.9, 7.1, 30.0, 4001.0, 2e7]


def _grid() -> np.ndarray:
    return np.array(
        [complex(sx * x, sy * y) for x in _XS for y in _YS for sx in (1, -1) for sy in (1, -1)], np.complex128
    )


def _assert_close(got, want, rtol):
    """Equal non-finite parts; finite values within rtol of |w| (the complex magnitude: a part
    far below the other is not resolved relative to itself, by scipy either)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    for part in (np.real, np.imag):
        g, w = part(got), part(want)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_array_equal(np.where(np.isinf(w), g, 0), np.where(np.isinf(w), w, 0))
    fin = np.isfinite(want)
    np.testing.assert_array_less(np.abs(got[fin] - want[fin]), rtol * np.abs(want[fin]) + 1e-300)


def test_wofz_at_the_switch_points():
    z = _grid()
    got, want = _standin_gpu.both(wofz, z, x64=True)
    _assert_close(got, want, 2e-14)
    # the symmetries, independently of the CPU: w(-conj z) = conj w(z)
    np.testing.assert_allclose(got[2::4], np.conj(got[::4]), rtol=1e-15, atol=0)


def test_wofz_special_values():
    inf, nan = np.inf, np.nan
    vals = [0.0, -0.0, 1.0, -1.0, 30.0, inf, -inf, nan]
    z = np.array([complex(a, b) for a in vals for b in vals], np.complex128)
    got, want = _standin_gpu.both(wofz, z, x64=True)
    _assert_close(got, want, 2e-14)
    assert got[0] == 1.0 + 0j


@given(st.integers(0, 2**31 - 1))
def test_wofz_drawn(seed):
    """Values over 20 decades of |z| in every direction, and a band along the real axis; complex64
    operands computed in double precision and rounded once, as the CPU does."""
    rng = np.random.default_rng(seed)
    r = 10 ** rng.uniform(-8, 12, 300)
    z = r * np.exp(1j * rng.uniform(-np.pi, np.pi, 300))
    z = np.concatenate([z, rng.uniform(-40, 40, 100) + 1j * 10 ** rng.uniform(-15, 0, 100) * rng.choice([-1, 1], 100)])
    got, want = _standin_gpu.both(wofz, z, x64=True)
    _assert_close(got, want, 2e-14)
    got, want = _standin_gpu.both(wofz, z.astype(np.complex64))
    _assert_close(got, want, 1e-6)


def test_wofz_derivative():
    """jvp (w' = -2 z w + 2i / sqrt(pi)) and a gradient of a real loss, on the GPU as on the CPU."""
    rng = np.random.default_rng(1)
    z = (rng.standard_normal(50) * 3 + 1j * rng.standard_normal(50) * 3).astype(np.complex64)
    t = (rng.standard_normal(50) + 1j * rng.standard_normal(50)).astype(np.complex64)
    got, want = _standin_gpu.both(lambda z, t: fjax.jvp(wofz, (z,), (t,)), z, t)
    # (the tangent -2 z w t + 2i t / sqrt(pi) cancels: float32 products rounded in another order
    # (the CPU's numba loops use numpy's FMA form, the GPU the textbook one) leave ~3e-6 of it)
    for g, w in zip(got, want, strict=True):
        _assert_close(g, w, 1e-5)
    loss = fjax.grad(lambda z: fjax.numpy.sum(fjax.numpy.abs(wofz(z)) ** 2))
    got, want = _standin_gpu.both(loss, z)
    _assert_close(got, want, 2e-5)


@_nvcc.needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvcc_compiles_wofz_without_spills(arch, tmp_path):
    srcs = []
    for dt in (np.complex64, np.complex128):
        with fjax.enable_x64(dt == np.complex128):
            srcs.append(fjax.jit(wofz).trace(np.zeros(8, dt)).lower(lowering_platforms=("cuda",)).as_text())
    assert all("fj_wofz(" in s for s in srcs)
    _nvcc.compile_without_spills("\n".join(srcs), arch, tmp_path)
