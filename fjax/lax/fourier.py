"""``lax.fft``: the fast Fourier transform primitive over the trailing ``len(fft_lengths)`` axes.

Types as in JAX: ``FFT`` and ``IFFT`` (complex to complex; IFFT includes the 1/N), ``RFFT``
(real to the non-negative half spectrum) and ``IRFFT`` (its inverse). The impl calls scipy's
pocketfft in the input's precision. The transform is linear: its JVP applies it to the tangent,
and its transpose is FFT/IFFT again, or for RFFT/IRFFT the rules JAX uses (a zero-padded FFT,
and a masked, scaled RFFT). No numba lowering: under jit it runs as a host step.
"""

from __future__ import annotations

import math
from enum import IntEnum
from typing import Any, Sequence

import numpy as np

from fjax import core
from fjax._lazy import LazyModule
from fjax.core import Array, Primitive, ShapedArray
from fjax.interpreters import ad, batching
from fjax.interpreters.ad import Zero
from fjax.lax import lax, slicing

__all__ = ["FftType", "fft", "fft_p"]


sfft = LazyModule("scipy.fft")


def _desc(x: Any) -> str:
    return f"{core.short_dtype_name(x.dtype)}{list(x.shape)}"


class FftType(IntEnum):
    """The kind of transform ``lax.fft`` computes."""

    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


_NAMES = {"fft": FftType.FFT, "ifft": FftType.IFFT, "rfft": FftType.RFFT, "irfft": FftType.IRFFT}


def _canon_type(t: Any) -> FftType:
    if isinstance(t, str):
        key = t.lower().replace("ffttype.", "")
        if key not in _NAMES:
            raise ValueError(f"Unknown FFT type {t!r}")
        return _NAMES[key]
    return FftType(int(t))


def _complex_of(dt: np.dtype) -> np.dtype:
    return np.dtype(np.complex64) if dt in (np.float32, np.complex64) else np.dtype(np.complex128)


def _real_of(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dt in (np.float32, np.complex64) else np.dtype(np.float64)


def _fft_impl(x: np.ndarray, *, fft_type: FftType, fft_lengths: tuple) -> np.ndarray:
    k = len(fft_lengths)
    axes = tuple(range(x.ndim - k, x.ndim))
    out_aval = _fft_abstract(ShapedArray(x.shape, x.dtype), fft_type=fft_type, fft_lengths=fft_lengths)
    if x.size == 0 or math.prod(fft_lengths) == 0:
        return np.zeros(out_aval.shape, out_aval.dtype)
    if fft_type == FftType.FFT:
        y = sfft.fftn(x, axes=axes)
    elif fft_type == FftType.IFFT:
        y = sfft.ifftn(x, axes=axes)
    elif fft_type == FftType.RFFT:
        y = sfft.rfftn(x, axes=axes)
    else:
        y = sfft.irfftn(x, s=fft_lengths, axes=axes)
    return np.asarray(y, dtype=out_aval.dtype)


def _fft_abstract(x: ShapedArray, *, fft_type: FftType, fft_lengths: tuple) -> ShapedArray:
    k = len(fft_lengths)
    if x.ndim < k:
        raise ValueError(f"fft: operand of shape {tuple(x.shape)} has fewer dimensions than fft_lengths {fft_lengths}")
    tail = tuple(x.shape[x.ndim - k :])
    if fft_type == FftType.RFFT:
        if x.dtype not in (np.float32, np.float64):
            raise TypeError(f"fft: RFFT requires a float32 or float64 operand, got {_desc(x)}")
        if tail != tuple(fft_lengths):
            raise ValueError(
                f"RFFT input shape {tuple(x.shape)} minor dimensions must be equal to fft_lengths {tuple(fft_lengths)}"
            )
        return ShapedArray(x.shape[:-1] + (fft_lengths[-1] // 2 + 1,), _complex_of(x.dtype))
    if x.dtype not in (np.complex64, np.complex128):
        raise TypeError(f"fft: {fft_type.name} requires a complex64 or complex128 operand, got {_desc(x)}")
    if fft_type == FftType.IRFFT:
        want = tuple(fft_lengths[:-1]) + (fft_lengths[-1] // 2 + 1,)
        if tail != want:
            raise ValueError(f"fft: IRFFT operand trailing shape {tail} must be {want} for fft_lengths {fft_lengths}")
        return ShapedArray(x.shape[:-1] + (fft_lengths[-1],), _real_of(x.dtype))
    if tail != tuple(fft_lengths):
        raise ValueError(
            f"FFT input shape {tuple(x.shape)} minor dimensions must be equal to fft_lengths {tuple(fft_lengths)}"
        )
    return ShapedArray(x.shape, x.dtype)


fft_p = Primitive("fft")
fft_p.def_impl(_fft_impl)
fft_p.def_abstract_eval(_fft_abstract)


def _rfft_transpose(t: Any, fft_lengths: tuple) -> Any:
    # rfft(x) = slice(FFT(complex(x))); each piece transposes simply: pad, FFT (DFT matrices are
    # symmetric), real part
    s = core.get_aval(t).shape
    nd = len(s)
    n = fft_lengths[-1]
    pads = [(0, 0, 0)] * nd
    pads[-1] = (0, n - s[-1], 0)
    full = slicing.pad(t, Array(np.zeros((), core.get_aval(t).dtype), False), pads)
    return lax.real(fft_p.bind(full, fft_type=FftType.FFT, fft_lengths=fft_lengths))


def _irfft_transpose(t: Any, fft_lengths: tuple) -> Any:
    # the RFFT of the cotangent, scaled by 1/N and by 2 on the Hermitian-duplicated bins
    x = fft_p.bind(t, fft_type=FftType.RFFT, fft_lengths=fft_lengths)
    s = core.get_aval(x).shape
    n = s[-1]
    is_odd = fft_lengths[-1] % 2
    mask = np.concatenate([[1.0], np.full(n - 2 + is_odd, 2.0), np.ones(1 - is_odd)])[:n]
    scale = mask / math.prod(fft_lengths)
    scale_arr = Array(np.broadcast_to(scale.astype(core.get_aval(x).dtype), s).copy(), False)
    return lax.conj(lax.mul(scale_arr, x))


def _fft_transpose(t: Any, operand: Any, *, fft_type: FftType, fft_lengths: tuple) -> list:
    if type(t) is Zero:
        return [Zero(operand.aval)]
    if fft_type == FftType.RFFT:
        return [_rfft_transpose(t, fft_lengths)]
    if fft_type == FftType.IRFFT:
        return [_irfft_transpose(t, fft_lengths)]
    return [fft_p.bind(t, fft_type=fft_type, fft_lengths=fft_lengths)]


def _fft_batch(vals: list, dims: list, *, fft_type: FftType, fft_lengths: tuple) -> tuple:
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0)
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), 0


ad.deflinear2(fft_p, _fft_transpose)
batching.primitive_batchers[fft_p] = _fft_batch


def fft(x: Any, fft_type: Any, fft_lengths: Sequence[int]) -> Any:
    """Fourier transform over the trailing ``len(fft_lengths)`` axes of ``x``.

    ``fft_type``: ``FftType`` or one of ``'fft'``, ``'ifft'``, ``'rfft'``, ``'irfft'``. For IRFFT
    ``fft_lengths[-1]`` is the (real) output length."""
    if isinstance(fft_lengths, (int, np.integer)):
        fft_lengths = (int(fft_lengths),)
    typ = _canon_type(fft_type)
    if not isinstance(x, (Array, core.Tracer)):
        x = core.to_array(x, "fft")
    dt = core.get_aval(x).dtype
    # as JAX's lax.fft: integers and bools move to float32 (64-bit ones to float64), then to the
    # complex dtype of that width for the complex-input transforms
    inexact = _TO_INEXACT.get(dt.name, dt)
    if typ == FftType.RFFT:
        if dt.kind == "c":
            raise ValueError("only real valued inputs supported for rfft")
        target = inexact
    else:
        target = np.dtype(np.complex128) if inexact.name in ("float64", "complex128") else np.dtype(np.complex64)
    if target != dt:
        x = lax.convert_element_type(x, target)
    return fft_p.bind(x, fft_type=typ, fft_lengths=tuple(int(n) for n in fft_lengths))


_TO_INEXACT = {
    **{n: np.dtype(np.float32) for n in ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32")},
    **{n: np.dtype(np.float64) for n in ("int64", "uint64")},
}
