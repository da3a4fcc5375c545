"""Tests of fjax.scipy.signal convolutions against scipy.signal (every mode, 1-3 dims, real and
complex, direct and FFT), with derivatives and jit."""

import numpy as np
import pytest
import scipy.signal as ss
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.scipy.signal as S
from fjax.test_util import check_grads


@pytest.fixture(autouse=True)
def _x64(x64):
    yield


shapes = st.sampled_from(
    [((7,), (3,)), ((3,), (7,)), ((4,), (4,)), ((5, 6), (2, 3)), ((3, 3), (4, 4)), ((2, 3, 4), (2, 2, 3))]
)


@given(shapes, st.sampled_from(["full", "same", "valid"]), st.booleans(), st.integers(0, 50))
def test_against_scipy(shapes_, mode, cplx, seed):
    r = np.random.RandomState(seed)
    a = r.randn(*shapes_[0])
    b = r.randn(*shapes_[1]) + (1j * r.randn(*shapes_[1]) if cplx else 0)
    for name in ("convolve", "correlate", "fftconvolve"):
        try:
            want = getattr(ss, name)(a, b, mode=mode)
        except ValueError:
            continue
        np.testing.assert_allclose(getattr(S, name)(a, b, mode=mode), want, atol=1e-10, rtol=1e-10)
    if a.ndim == 2:
        np.testing.assert_allclose(S.convolve2d(a, b, mode), ss.convolve2d(a, b, mode), atol=1e-10)
        np.testing.assert_allclose(S.correlate2d(a, b, mode), ss.correlate2d(a, b, mode), atol=1e-10)
        np.testing.assert_allclose(S.correlate2d(b, a, mode), ss.correlate2d(b, a, mode), atol=1e-10)


def test_grads_jit_and_errors():
    a, b = np.random.RandomState(0).randn(2, 6)
    check_grads(lambda x, y: S.convolve(x, y[:3], "same"), (a, b), 2)
    check_grads(lambda x, y: S.fftconvolve(x, y[:3]), (a, b), 2)
    np.testing.assert_allclose(fjax.jit(S.correlate)(a, b[:2]), ss.correlate(a, b[:2]), atol=1e-10)
    np.testing.assert_allclose(S.convolve(a, b, method="fft"), ss.convolve(a, b), atol=1e-10)
    with pytest.raises(ValueError, match="mode"):
        S.convolve(a, b, mode="bad")
    with pytest.raises(ValueError, match="dimensionality"):
        S.convolve(a, np.ones((2, 2)))
    with pytest.raises(NotImplementedError, match="boundary"):
        S.convolve2d(np.ones((3, 3)), np.ones((2, 2)), boundary="wrap")
