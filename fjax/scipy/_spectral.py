"""Spectral analysis for ``fjax.scipy.signal``: stft, istft, csd and welch, following scipy's
``_spectral_helper`` (segments by a gather, per-segment detrend, window, rfft/fft, scaling).
Windows named by string come from ``scipy.signal.get_window`` (constants); array windows may be
traced. Everything else is written with fjax operations, so it differentiates and jits."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from fjax.dtypes import finfo as _finfo
from fjax.dtypes import kind as _dkind
from fjax.numpy import _util

__all__ = ["csd", "detrend", "istft", "stft", "welch"]


def _jnp() -> Any:
    import fjax.numpy as jnp  # noqa: PLC0415

    return jnp


def _window(window: Any, nperseg: int, dtype: Any) -> Any:
    jnp = _jnp()
    if isinstance(window, (str, tuple)):
        import scipy.signal as _ss  # noqa: PLC0415 - scipy.signal takes ~1 s to import: only for named windows

        return jnp.asarray(_ss.get_window(window, nperseg), dtype=dtype)
    win = jnp.asarray(window, dtype=dtype)
    if win.ndim != 1:
        raise ValueError("window must be 1-D")
    if win.shape[0] != nperseg:
        raise ValueError(f"value specified for nperseg ({nperseg}) is different from length of window ({win.shape[0]})")
    return win


def _detrend(x: Any, kind: Any) -> Any:
    jnp = _jnp()
    if kind is False or kind is None:
        return x
    if callable(kind):
        return kind(x)
    if kind == "constant":
        return x - jnp.mean(x, axis=-1, keepdims=True)
    if kind == "linear":
        n = x.shape[-1]
        t = np.arange(n) - (n - 1) / 2.0
        tt = float(np.sum(t * t)) or 1.0
        xc = x - jnp.mean(x, axis=-1, keepdims=True)
        slope = jnp.sum(xc * t, axis=-1, keepdims=True) / tt
        return xc - slope * t
    raise ValueError(f"Unknown detrend type {kind!r}")


def _extend(x: Any, n: int, kind: str) -> Any:
    """scipy's boundary extensions of the last axis by ``n`` on each side."""
    jnp = _jnp()
    if kind == "zeros":
        return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)])
    if n == 0:
        return x
    left = jnp.flip(x[..., 1 : n + 1], -1)
    right = jnp.flip(x[..., -n - 1 : -1], -1)
    if kind == "even":
        return jnp.concatenate([left, x, right], -1)
    if kind == "odd":
        return jnp.concatenate([2 * x[..., :1] - left, x, 2 * x[..., -1:] - right], -1)
    if kind == "constant":
        return jnp.concatenate([jnp.repeat(x[..., :1], n, -1), x, jnp.repeat(x[..., -1:], n, -1)], -1)
    raise ValueError(f"Unknown boundary option {kind!r}, must be one of: ['even', 'odd', 'constant', 'zeros', None]")


def _spectral_helper(
    x: Any, y: Any, fs: float, window: Any, nperseg: Any, noverlap: Any, nfft: Any, detrend: Any,
    return_onesided: bool, scaling: str, axis: int, mode: str, boundary: Any = None, padded: bool = False,
    name: str = "spectral",
) -> tuple:  # fmt: skip
    jnp = _jnp()
    same = y is None
    _util.check_arraylike(name, x)
    x = _util.to_fjax(x, name)
    if same:
        (x,) = _util.promote_dtypes_inexact(name, x)
    else:
        y = _util.to_fjax(y, name)
        x, y = _util.promote_dtypes_inexact(name, x, y)
    if scaling not in ("density", "spectrum"):
        raise ValueError(f"Unknown scaling: {scaling!r}")
    axis = _util.canonicalize_axis(axis, x.ndim, name)
    x = jnp.moveaxis(x, axis, -1)
    if not same:
        y = jnp.moveaxis(y, _util.canonicalize_axis(axis, y.ndim, name), -1)
        n = max(x.shape[-1], y.shape[-1])
        x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, n - x.shape[-1])])
        y = jnp.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, n - y.shape[-1])])
        bs = _util.broadcast_shapes(name, tuple(x.shape[:-1]), tuple(y.shape[:-1]))
        x = jnp.broadcast_to(x, bs + (n,))
        y = jnp.broadcast_to(y, bs + (n,))
    length = x.shape[-1]
    if nperseg is None:
        nperseg = 256
    nperseg = int(nperseg)
    if nperseg < 1:
        raise ValueError("nperseg must be a positive integer")
    if isinstance(window, (str, tuple)) and nperseg > length:
        msg = f"nperseg = {nperseg} is greater than input length = {length}, using nperseg = {length}"
        warnings.warn(msg, stacklevel=3)
        nperseg = length
    real_dt = _finfo(x.dtype).dtype
    win = _window(window, nperseg, real_dt)
    nfft = nperseg if nfft is None else int(nfft)
    if nfft < nperseg:
        raise ValueError("nfft must be greater than or equal to nperseg.")
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    nstep = nperseg - noverlap

    def prep(z: Any) -> Any:
        if boundary is not None:
            z = _extend(z, nperseg // 2, boundary)
        if padded:
            nadd = (-(z.shape[-1] - nperseg) % nstep) % nperseg
            z = jnp.pad(z, [(0, 0)] * (z.ndim - 1) + [(0, nadd)])
        return z

    x = prep(x)
    if not same:
        y = prep(y)
    sides = (
        "onesided" if return_onesided and _dkind(x.dtype) != "c" and (same or _dkind(y.dtype) != "c") else "twosided"
    )
    freqs = np.fft.rfftfreq(nfft, 1 / fs) if sides == "onesided" else np.fft.fftfreq(nfft, 1 / fs)
    nseg = (x.shape[-1] - nperseg) // nstep + 1 if x.shape[-1] >= nperseg else 0
    idx = np.arange(nseg)[:, None] * nstep + np.arange(nperseg)[None, :]

    def fft_segments(z: Any) -> Any:
        segs = _detrend(z[..., idx], detrend) * win
        if sides == "twosided":
            return jnp.fft.fft(segs, n=nfft)
        return jnp.fft.rfft(jnp.real(segs), n=nfft)

    res = fft_segments(x)
    if scaling == "density":
        scale = 1.0 / (fs * jnp.sum(win * win))
    else:
        scale = 1.0 / jnp.sum(win) ** 2
    if mode == "stft":
        scale = jnp.sqrt(scale)
    if not same:
        res = jnp.conj(res) * fft_segments(y)
    elif mode == "psd":
        res = jnp.conj(res) * res
    res = res * scale
    if sides == "onesided" and mode == "psd":
        mult = np.ones(res.shape[-1])
        if nfft % 2:
            mult[1:] = 2
        else:
            mult[1:-1] = 2
        res = res * mult
    time = np.arange(nperseg / 2, x.shape[-1] - nperseg / 2 + 1, nstep) / float(fs)
    if boundary is not None:
        time -= (nperseg / 2) / fs
    if same and mode != "stft":
        res = jnp.real(res)
    # (..., segments, freqs) -> frequencies where the data axis was, segments last
    res = jnp.moveaxis(res, -1, axis)
    return jnp.asarray(freqs.astype(real_dt)), jnp.asarray(time.astype(real_dt)), res


def stft(
    x: Any, fs: float = 1.0, window: Any = "hann", nperseg: int = 256, noverlap: Any = None, nfft: Any = None,
    detrend: Any = False, return_onesided: bool = True, boundary: Any = "zeros", padded: bool = True,
    axis: int = -1,
) -> tuple:  # fmt: skip
    """Short-time Fourier transform (scipy.signal.stft, 'spectrum' scaling): ``(f, t, Zxx)``."""
    return _spectral_helper(
        x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, "spectrum", axis, "stft",
        boundary, padded, "stft",
    )  # fmt: skip


def csd(
    x: Any, y: Any, fs: float = 1.0, window: Any = "hann", nperseg: Any = None, noverlap: Any = None,
    nfft: Any = None, detrend: Any = "constant", return_onesided: bool = True, scaling: str = "density",
    axis: int = -1, average: str = "mean",
) -> tuple:  # fmt: skip
    """Cross power spectral density by Welch's method: ``(f, Pxy)``."""
    jnp = _jnp()
    same = y is x
    f, _, pxy = _spectral_helper(
        x, None if same else y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis,
        "psd", name="csd",
    )  # fmt: skip
    if pxy.ndim >= 2 and pxy.size > 0:
        if pxy.shape[-1] > 1:
            if average == "mean":
                pxy = jnp.mean(pxy, axis=-1)
            elif average == "median":
                nseg = pxy.shape[-1]
                ii = 2 * np.arange(1.0, (nseg - 1) // 2 + 1)
                bias = 1 + np.sum(1.0 / (ii + 1) - 1.0 / ii)
                if _dkind(pxy.dtype) == "c":
                    pxy = jnp.median(jnp.real(pxy), axis=-1) + 1j * jnp.median(jnp.imag(pxy), axis=-1)
                else:
                    pxy = jnp.median(pxy, axis=-1)
                pxy = pxy / bias
            else:
                raise ValueError(f'average must be "median" or "mean", got {average}')
        else:
            pxy = jnp.reshape(pxy, pxy.shape[:-1])
    return f, pxy


def welch(
    x: Any, fs: float = 1.0, window: Any = "hann", nperseg: Any = None, noverlap: Any = None, nfft: Any = None,
    detrend: Any = "constant", return_onesided: bool = True, scaling: str = "density", axis: int = -1,
    average: str = "mean",
) -> tuple:  # fmt: skip
    """Power spectral density by Welch's method: ``(f, Pxx)``."""
    f, pxx = csd(x, x, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis, average)
    return f, _jnp().real(pxx)


def istft(
    Zxx: Any, fs: float = 1.0, window: Any = "hann", nperseg: Any = None, noverlap: Any = None, nfft: Any = None,
    input_onesided: bool = True, boundary: bool = True, time_axis: int = -1, freq_axis: int = -2,
) -> tuple:  # fmt: skip
    """Inverse short-time Fourier transform by weighted overlap-add: ``(t, x)``."""
    jnp = _jnp()
    _util.check_arraylike("istft", Zxx)
    Z = _util.to_fjax(Zxx, "istft")
    (Z,) = _util.promote_dtypes_inexact("istft", Z)
    if Z.ndim < 2:
        raise ValueError("Input stft must be at least 2d!")
    ta = _util.canonicalize_axis(time_axis, Z.ndim, "istft")
    fa = _util.canonicalize_axis(freq_axis, Z.ndim, "istft")
    if ta == fa:
        raise ValueError("Must specify differing time and frequency axes!")
    nd = Z.ndim
    Z = jnp.moveaxis(Z, (fa, ta), (-2, -1))
    nseg = Z.shape[-1]
    n_default = 2 * (Z.shape[-2] - 1) if input_onesided else Z.shape[-2]
    nperseg = n_default if nperseg is None else int(nperseg)
    if nperseg < 1:
        raise ValueError("nperseg must be a positive integer")
    nfft = nperseg if nfft is None else int(nfft)
    if nfft < nperseg:
        raise ValueError("nfft must be greater than or equal to nperseg.")
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    nstep = nperseg - noverlap
    real_dt = _finfo(Z.dtype).dtype
    win = _window(window, nperseg, real_dt)
    if input_onesided:
        frames = jnp.fft.irfft(Z, n=nfft, axis=-2)[..., :nperseg, :]
    else:
        frames = jnp.fft.ifft(Z, n=nfft, axis=-2)[..., :nperseg, :]
    frames = frames * jnp.sum(win)
    frames = jnp.moveaxis(frames, -1, -2) * win
    out_len = nperseg + (nseg - 1) * nstep
    idx = np.arange(nseg)[:, None] * nstep + np.arange(nperseg)[None, :]
    x = jnp.zeros(frames.shape[:-2] + (out_len,), frames.dtype).at[..., idx].add(frames)
    norm = np.zeros(out_len)
    if isinstance(window, (str, tuple)):
        w2 = np.asarray(win) ** 2
        np.add.at(norm, idx, np.broadcast_to(w2, idx.shape))
        norm_arr = jnp.asarray(norm.astype(real_dt))
    else:
        norm_arr = jnp.zeros((out_len,), real_dt).at[idx].add(jnp.broadcast_to(win * win, idx.shape))
    if boundary:
        h = nperseg // 2
        x = x[..., h : out_len - h]
        norm_arr = norm_arr[h : out_len - h]
    x = x / jnp.where(norm_arr > 1e-10, norm_arr, 1.0)
    if input_onesided:
        x = jnp.real(x)
    if x.ndim > 1 and ta != nd - 1:
        x = jnp.moveaxis(x, -1, ta - 1 if fa < ta else ta)
    # as scipy and JAX: the length of the first output axis (the signal's only for 1-D input)
    time = np.arange(x.shape[0]) / float(fs)
    return jnp.asarray(time.astype(real_dt)), x


def detrend(data: Any, axis: int = -1, type: str = "linear", bp: Any = 0, overwrite_data: Any = None) -> Any:  # noqa: A002
    """Remove the mean (``type='constant'``) or the least-squares line (``'linear'``, piecewise
    between the breakpoints ``bp``) along ``axis``."""
    jnp = _jnp()
    if type not in ("linear", "l", "constant", "c"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    _util.check_arraylike("detrend", data)
    x = _util.to_fjax(data, "detrend")
    (x,) = _util.promote_dtypes_inexact("detrend", x)
    ax = _util.canonicalize_axis(axis, x.ndim, "detrend")
    x = jnp.moveaxis(x, ax, -1)
    n = x.shape[-1]
    if type in ("constant", "c"):
        out = _detrend(x, "constant")
    else:
        bps = np.sort(np.unique(np.r_[0, np.atleast_1d(np.asarray(bp, int)), n]))
        if np.any(bps > n):
            raise ValueError("Breakpoints must be less than length of data along given axis.")
        pieces = [_detrend(x[..., int(lo) : int(hi)], "linear") for lo, hi in zip(bps[:-1], bps[1:]) if hi > lo]
        out = jnp.concatenate(pieces, axis=-1) if len(pieces) > 1 else pieces[0]
    return jnp.moveaxis(out, -1, ax)
