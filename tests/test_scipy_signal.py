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


X2 = np.random.RandomState(1).randn(2, 300)
Y2 = np.random.RandomState(2).randn(2, 300)


def _cmp(got, want):
    for p, q in zip(got, want):
        p = np.asarray(p)
        assert p.shape == q.shape, (p.shape, q.shape)
        np.testing.assert_allclose(p, q, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize(
    "kw",
    [
        dict(nperseg=64),
        dict(nperseg=50, noverlap=10, nfft=64, detrend="linear", boundary="even"),
        dict(nperseg=33, boundary="odd", padded=False, fs=3.0),
        dict(nperseg=40, window=("tukey", 0.3), boundary=None),
    ],
)
def test_stft_istft(kw):
    _cmp(S.stft(X2, **kw), ss.stft(X2, **kw))
    _cmp(S.stft(X2.T, axis=0, **kw), ss.stft(X2.T, axis=0, **kw))
    if kw.get("boundary", "zeros") is not None and kw.get("padded", True) and "detrend" not in kw:
        _, _, Z = ss.stft(X2, **kw)
        ikw = {k: v for k, v in kw.items() if k in ("nperseg", "noverlap", "nfft", "fs", "window")}
        _cmp(S.istft(Z, **ikw), ss.istft(Z, **ikw))
    c = X2 + 1j * Y2
    _cmp(S.stft(c, return_onesided=False, nperseg=32), ss.stft(c, return_onesided=False, nperseg=32))


@pytest.mark.parametrize(
    "kw",
    [
        dict(nperseg=64),
        dict(fs=10.0, nperseg=65, scaling="spectrum", average="median", detrend="linear"),
        dict(nperseg=48, noverlap=40, nfft=100, detrend=False, return_onesided=False),
    ],
)
def test_welch_csd(kw):
    _cmp(S.welch(X2, **kw), ss.welch(X2, **kw))
    _cmp(S.csd(X2, Y2, **kw), ss.csd(X2, Y2, **kw))
    _cmp(S.csd(X2, Y2[:, :200], **kw), ss.csd(X2, Y2[:, :200], **kw))


def test_spectral_grads_jit_istft_axes():
    x = X2[0, :64]
    check_grads(lambda x: S.welch(x, nperseg=16)[1], (x,), 2)
    check_grads(lambda x: jnp_abs2(S.stft(x, nperseg=16)[2]), (x,), 1)
    np.testing.assert_allclose(
        fjax.jit(lambda x: S.welch(x, nperseg=32)[1])(X2), ss.welch(X2, nperseg=32)[1], atol=1e-10
    )
    Z3 = np.random.RandomState(3).randn(11, 3, 33) + 0j
    _cmp(S.istft(Z3, time_axis=0, freq_axis=2), ss.istft(Z3, time_axis=0, freq_axis=2))
    with pytest.raises(ValueError, match="noverlap"):
        S.stft(X2, nperseg=16, noverlap=16)


def jnp_abs2(z):
    import fjax.numpy as jnp

    return jnp.real(z * jnp.conj(z))


def test_detrend():
    x = np.random.RandomState(4).randn(3, 40) + np.arange(40) * 0.3
    for kw in [dict(), dict(type="constant"), dict(bp=[10, 25]), dict(axis=0), dict(type="linear", bp=5)]:
        np.testing.assert_allclose(S.detrend(x, **kw), ss.detrend(x, **kw), atol=1e-10)
    check_grads(lambda x: S.detrend(x, bp=[7]), (x[0],), 2)
