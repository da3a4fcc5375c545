"""``fjax.numpy.fft``: numpy's FFT API on top of ``lax.fft`` (the 18 names of ``jax.numpy.fft``).

Transformed axes are moved last, zero-padded or truncated to the requested lengths, transformed
by one ``lax.fft`` call and moved back; ``norm`` is ``"backward"`` (default), ``"ortho"`` or
``"forward"``. Real inputs give complex64 (complex128 with x64); integers are promoted first.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from fjax import _out_sharding, core, dtypes
from fjax.core import Array
from fjax.dtypes import kind as _dkind
from fjax.lax import lax, slicing
from fjax.lax.fourier import _TO_INEXACT, FftType
from fjax.lax.fourier import fft as _lax_fft
from fjax.numpy import _util
from fjax.numpy._shape import moveaxis, roll

__all__ = [
    "fft",
    "fft2",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifft2",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfft2",
    "irfftn",
    "rfft",
    "rfft2",
    "rfftfreq",
    "rfftn",
]


def _prep(name: str, a: Any, real: bool) -> Any:
    _util.check_arraylike(name, a)
    x = _util.to_fjax(a, name)
    dt = core.get_aval(x).dtype
    # JAX's lax.fft rule, not promote_dtypes_inexact: an int32 input gives complex64 also with x64 on
    inexact = _TO_INEXACT.get(dt.name, dt)
    if real:
        if _dkind(dt) == "c":
            raise ValueError("only real valued inputs supported for rfft")
        target = inexact
    else:
        target = np.dtype(np.complex128) if inexact.name in ("float64", "complex128") else np.dtype(np.complex64)
    return x if target == dt else lax.convert_element_type(x, target)


def _resize(x: Any, axis: int, n: int) -> Any:
    """Zero-pad or truncate ``axis`` of ``x`` to length ``n``."""
    s = tuple(x.shape)
    cur = s[axis]
    if n == cur:
        return x
    if n < cur:
        lim = list(s)
        lim[axis] = n
        return slicing.slice(x, (0,) * len(s), tuple(lim))
    pads = [(0, 0, 0)] * len(s)
    pads[axis] = (0, n - cur, 0)
    return slicing.pad(x, Array(np.zeros((), core.get_aval(x).dtype), False), pads)


def _norm_scale(norm: str | None, n: int, inverse: bool, name: str) -> float | None:
    if norm is None or norm == "backward":
        return None
    if norm == "ortho":
        return math.sqrt(n) if inverse else 1.0 / math.sqrt(n)
    if norm == "forward":
        return float(n) if inverse else 1.0 / n
    raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or "forward".')  # (JAX's words)


def _scale(x: Any, c: float | None) -> Any:
    if c is None:
        return x
    dt = core.get_aval(x).dtype
    return lax.mul(x, Array(np.full(tuple(x.shape), c, dtype=dt), False))


def _canon_axes(name: str, nd: int, s: Any, axes: Any) -> tuple[tuple | None, tuple[int, ...]]:
    if axes is None:
        axes = tuple(range(nd - len(s), nd)) if s is not None else tuple(range(nd))
    given = tuple(axes)
    axes = tuple(_util.canonicalize_axis(operator.index(a), nd, name) for a in axes)
    if len(set(axes)) != len(axes):  # (JAX 0.10.2's words, with the axes as given)
        shown = given if len(set(given)) != len(given) else axes
        raise ValueError(f"jax.numpy.fft.{name} does not support repeated axes. Got axes {shown}.")
    if s is not None:
        s = tuple(operator.index(n) for n in s)
        if len(s) != len(axes):
            raise ValueError(f"{name}: shape s={s} and axes={axes} have different lengths")
        for n in s:
            if n < 1:
                raise ValueError("Shape should be positive.")  # (JAX 0.10.2's words)
    return s, axes


def _fftn_core(name: str, a: Any, s: Any, axes: Any, norm: str | None, kind: FftType) -> Any:
    real_in = kind == FftType.RFFT
    x = _prep(name, a, real_in)
    nd = x.ndim
    s, axes = _canon_axes(name, nd, s, axes)
    if not axes:
        return x
    k = len(axes)
    dst = tuple(range(nd - k, nd))
    x = moveaxis(x, axes, dst)
    if kind == FftType.IRFFT:
        lengths = list(s) if s is not None else [x.shape[d] for d in dst[:-1]] + [2 * (x.shape[-1] - 1)]
        if lengths[-1] < 1:  # (irfft of one element) an empty result, as JAX's
            shape = list(x.shape)
            for d, n in zip(dst, lengths):
                shape[d] = max(n, 0)
            real = np.dtype(x.dtype).type(0).real.dtype
            return moveaxis(lax.full(tuple(shape), 0, real), dst, axes)
        for d, n in zip(dst[:-1], lengths[:-1]):
            x = _resize(x, d, n)
        x = _resize(x, nd - 1, lengths[-1] // 2 + 1)
    else:
        lengths = list(s) if s is not None else [x.shape[d] for d in dst]
        for d, n in zip(dst, lengths):
            x = _resize(x, d, n)
    if any(x.shape[d] == 0 for d in dst) and kind != FftType.IRFFT:
        if kind == FftType.RFFT:
            raise ValueError(f"{name}: invalid number of data points (0) specified")
        return moveaxis(lax.full(tuple(x.shape), 0, x.dtype), dst, axes)  # empty, as JAX's
    y = _lax_fft(x, kind, tuple(lengths))
    inverse = kind in (FftType.IFFT, FftType.IRFFT)
    y = _scale(y, _norm_scale(norm, math.prod(lengths), inverse, name))
    return moveaxis(y, dst, axes)


def _one_axis(name: str, a: Any, n: Any, axis: int, norm: str | None, kind: FftType) -> Any:
    if isinstance(axis, (tuple, list)):
        raise ValueError(f"{name}: axis must be an int, got {axis!r}")
    return _fftn_core(name, a, None if n is None else (n,), (axis,), norm, kind)


def fft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """One-dimensional discrete Fourier transform along ``axis`` (numpy.fft.fft)."""
    return _one_axis("fft", a, n, axis, norm, FftType.FFT)


def ifft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """One-dimensional inverse discrete Fourier transform (numpy.fft.ifft)."""
    return _one_axis("ifft", a, n, axis, norm, FftType.IFFT)


def rfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """Transform of real input: the ``n//2 + 1`` non-negative frequencies (numpy.fft.rfft)."""
    return _one_axis("rfft", a, n, axis, norm, FftType.RFFT)


def irfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """Inverse of rfft: a real signal of length ``n`` (default ``2 (m - 1)``) (numpy.fft.irfft)."""
    return _one_axis("irfft", a, n, axis, norm, FftType.IRFFT)


def _swap_norm(norm: str | None, name: str) -> str:
    table = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}
    if norm not in table:
        raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or "forward".')  # (JAX's words)
    return table[norm]


def hfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """Transform of a Hermitian-symmetric signal given by its first half: a real spectrum
    (numpy.fft.hfft: ``irfft(conj(a), n)`` with the normalization direction swapped)."""
    x = _prep("hfft", a, False)
    return _one_axis("hfft", lax.conj(x), n, axis, _swap_norm(norm, "hfft"), FftType.IRFFT)


def ihfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """Inverse of hfft (numpy.fft.ihfft: ``conj(rfft(a, n))`` with the normalization swapped)."""
    return lax.conj(_one_axis("ihfft", a, n, axis, _swap_norm(norm, "ihfft"), FftType.RFFT))


def fftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
    """N-dimensional discrete Fourier transform over ``axes`` (all by default)."""
    return _fftn_core("fftn", a, s, axes, norm, FftType.FFT)


def ifftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
    """N-dimensional inverse discrete Fourier transform."""
    return _fftn_core("ifftn", a, s, axes, norm, FftType.IFFT)


def rfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
    """N-dimensional transform of real input (the last axis halved)."""
    return _fftn_core("rfftn", a, s, axes, norm, FftType.RFFT)


def irfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
    """Inverse of rfftn."""
    return _fftn_core("irfftn", a, s, axes, norm, FftType.IRFFT)


def _check2(name: str, axes: Sequence[int]) -> None:
    if len(tuple(axes)) != 2:
        raise ValueError(f"{name}: axes must have length 2, got {axes!r}")


def fft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None) -> Any:
    """Two-dimensional discrete Fourier transform."""
    _check2("fft2", axes)
    return _fftn_core("fft2", a, s, axes, norm, FftType.FFT)


def ifft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None) -> Any:
    """Two-dimensional inverse discrete Fourier transform."""
    _check2("ifft2", axes)
    return _fftn_core("ifft2", a, s, axes, norm, FftType.IFFT)


def rfft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None) -> Any:
    """Two-dimensional transform of real input."""
    _check2("rfft2", axes)
    return _fftn_core("rfft2", a, s, axes, norm, FftType.RFFT)


def irfft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None) -> Any:
    """Inverse of rfft2."""
    _check2("irfft2", axes)
    return _fftn_core("irfft2", a, s, axes, norm, FftType.IRFFT)


def _freq_dtype(dtype: Any) -> np.dtype:
    if dtype is None:
        return dtypes.canonicalize_dtype(np.float64)
    return dtypes.canonicalize_dtype(dtype)


def _freq(name: str, ints: np.ndarray, n: int, d: Any, dtype: Any) -> Any:
    dt = _freq_dtype(dtype)
    base = Array(ints.astype(dt), False)
    if isinstance(d, (int, float, np.number)):
        return Array((ints / (float(d) * n)).astype(dt), False)
    dd = lax.convert_element_type(_util.to_fjax(d, name), dt)
    denom = lax.mul(dd, Array(np.array(n, dt), False))
    return lax.div(base, lax.broadcast_in_dim(denom, base.shape, ()))


def fftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
    """Sample frequencies of an ``n``-point FFT with sample spacing ``d``."""
    n = operator.index(n)
    ints = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)]) if n > 0 else np.zeros(0)
    return _out_sharding.on_device(_freq("fftfreq", ints, n, d, dtype), device)


def rfftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
    """Sample frequencies of an ``n``-point rfft (the non-negative ones)."""
    n = operator.index(n)
    return _out_sharding.on_device(_freq("rfftfreq", np.arange(0, n // 2 + 1), n, d, dtype), device)


def _shift(name: str, x: Any, axes: Any, sign: int) -> Any:
    _util.check_arraylike(name, x)
    x = _util.to_fjax(x, name)
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, (int, np.integer)):
        axes = (int(axes),)
    axes = tuple(_util.canonicalize_axis(a, x.ndim, name) for a in axes)
    if not axes:
        return x
    shifts = tuple(sign * (x.shape[a] // 2) if sign > 0 else -(x.shape[a] // 2) for a in axes)
    return roll(x, shifts, axes)


def fftshift(x: Any, axes: int | Sequence[int] | None = None) -> Any:
    """Move the zero-frequency term to the center of the spectrum."""
    return _shift("fftshift", x, axes, 1)


def ifftshift(x: Any, axes: int | Sequence[int] | None = None) -> Any:
    """Inverse of fftshift."""
    return _shift("ifftshift", x, axes, -1)
