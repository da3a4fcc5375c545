"""``fjax.scipy.signal``: N-dimensional convolution and correlation (direct, through
``lax.conv_general_dilated``, or by FFT), with scipy's ``mode`` ('full', 'same', 'valid').
Spectral analysis (stft, istft, csd, welch, detrend) lives in ``_spectral`` and is re-exported here.
"""

from __future__ import annotations

from typing import Any

from fjax import core
from fjax.dtypes import kind as _dkind
from fjax.lax import convolution as lax_conv
from fjax.numpy import _util

__all__ = [
    "convolve",
    "convolve2d",
    "correlate",
    "correlate2d",
    "csd",
    "detrend",
    "fftconvolve",
    "istft",
    "stft",
    "welch",
]


def _jnp() -> Any:
    import fjax.numpy as jnp  # noqa: PLC0415

    return jnp


def _prep(name: str, in1: Any, in2: Any) -> tuple[Any, Any]:
    _util.check_arraylike(name, in1, in2)
    a, b = _util.promote_dtypes_inexact(name, _util.to_fjax(in1, name), _util.to_fjax(in2, name))
    if a.ndim != b.ndim:
        raise ValueError(f"{name}: in1 and in2 should have the same dimensionality, got {a.ndim} and {b.ndim}")
    return a, b


def _crop(full: Any, s1: tuple, s2: tuple, mode: str, name: str) -> Any:
    """Slice scipy's 'same' / 'valid' output out of the 'full' one."""
    if mode == "full":
        return full
    if mode == "same":
        starts = [(k - 1) // 2 for k in s2]
        sizes = list(s1)
    elif mode == "valid":
        if not (all(p >= q for p, q in zip(s1, s2)) or all(q >= p for p, q in zip(s1, s2))):
            raise ValueError(f"{name}: for 'valid' mode, one must be at least as large as the other in every dimension")
        starts = [min(p, q) - 1 for p, q in zip(s1, s2)]
        sizes = [abs(p - q) + 1 for p, q in zip(s1, s2)]
    else:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")  # (JAX 0.10.2's words)
    idx = tuple(slice(st, st + sz) for st, sz in zip(starts, sizes))
    return full[idx]


def _direct_full(a: Any, b: Any) -> Any:
    """Full N-d convolution by one conv_general_dilated (correlation with the flipped kernel)."""
    jnp = _jnp()
    nd = a.ndim
    if _dkind(a.dtype) == "c":
        ar, ai, br, bi = jnp.real(a), jnp.imag(a), jnp.real(b), jnp.imag(b)
        re = _direct_full(ar, br) - _direct_full(ai, bi)
        im = _direct_full(ar, bi) + _direct_full(ai, br)
        return re + 1j * im
    kern = jnp.flip(b, axis=tuple(range(nd)))
    pads = [(k - 1, k - 1) for k in b.shape]
    spatial = "".join("DHWXYZUVR"[i] for i in range(nd)) if nd <= 9 else None
    if spatial is None:
        raise NotImplementedError(f"convolve: more than 9 dimensions ({nd}) are not supported")
    dn = ("NC" + spatial, "OI" + spatial, "NC" + spatial)
    out = lax_conv.conv_general_dilated(a[None, None], kern[None, None], (1,) * nd, pads, dimension_numbers=dn)
    return out[0, 0]


def fftconvolve(in1: Any, in2: Any, mode: str = "full", axes: Any = None) -> Any:
    """Convolution by FFT over ``axes`` (default: all axes). As in JAX, the other axes are
    batch axes and must have equal sizes in both inputs."""
    a, b = _prep("fftconvolve", in1, in2)
    jnp = _jnp()
    if mode not in ("full", "same", "valid"):
        raise ValueError("mode must be one of ['same', 'full', 'valid']")  # (JAX 0.10.2's words)
    if axes is None:
        ax = tuple(range(a.ndim))
    else:
        ax = (axes,) if isinstance(axes, int) else tuple(axes)
        ax = tuple(_util.canonicalize_axis(int(i), a.ndim, "fftconvolve") for i in ax)
        if len(set(ax)) != len(ax):
            raise ValueError(f"fftconvolve: repeated axis in axes={axes!r}")
        other = [i for i in range(a.ndim) if i not in ax]
        if any(a.shape[i] != b.shape[i] for i in other):
            raise ValueError(
                f"fftconvolve: mapped axes must have same shape; got in1.shape={tuple(a.shape)} "
                f"in2.shape={tuple(b.shape)} axes={ax}"
            )
    if mode == "valid" and not (all(a.shape[i] >= b.shape[i] for i in ax) or all(b.shape[i] >= a.shape[i] for i in ax)):
        raise ValueError("fftconvolve: for 'valid' mode, one must be at least as large as the other in every axis")
    if a.size == 0 or b.size == 0:
        return jnp.zeros((0,) * a.ndim, a.dtype)  # scipy returns an empty array
    if mode == "valid" and all(b.shape[i] >= a.shape[i] for i in ax) and any(b.shape[i] > a.shape[i] for i in ax):
        a, b = b, a  # scipy (and JAX) swap the inputs when the second is the larger
    s = tuple(a.shape[i] + b.shape[i] - 1 for i in ax)
    if not ax:
        full = a * b
    elif _dkind(a.dtype) == "c":
        full = jnp.fft.ifftn(jnp.fft.fftn(a, s, axes=ax) * jnp.fft.fftn(b, s, axes=ax), s, axes=ax)
    else:
        full = jnp.fft.irfftn(jnp.fft.rfftn(a, s, axes=ax) * jnp.fft.rfftn(b, s, axes=ax), s, axes=ax)
    return _crop_axes(full.astype(a.dtype), a.shape, b.shape, mode, ax)


def _crop_axes(full: Any, s1: tuple, s2: tuple, mode: str, ax: tuple) -> Any:
    """scipy's 'same' / 'valid' window of a 'full' convolution along ``ax`` (centred: the start is
    half the size difference, rounded down); for 'valid' ``s1`` is the larger input."""
    if mode == "full":
        return full
    idx = []
    for i in range(full.ndim):
        if i not in ax:
            idx.append(slice(None))
            continue
        size = s1[i] if mode == "same" else s1[i] - s2[i] + 1
        start = (full.shape[i] - size) // 2
        idx.append(slice(start, start + size))
    return full[tuple(idx)]


def convolve(in1: Any, in2: Any, mode: str = "full", method: str = "auto", precision: Any = None) -> Any:
    """N-dimensional convolution (``method`` 'direct', 'fft' or 'auto' = direct)."""
    a, b = _prep("convolve", in1, in2)
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"convolve: got unknown method {method!r}")
    if method == "fft":
        return fftconvolve(a, b, mode)
    if a.ndim == 0:
        return a * b
    if mode == "valid" and all(q >= p for p, q in zip(a.shape, b.shape)) and a.shape != b.shape:
        a, b = b, a
    if a.size == 0 or b.size == 0:
        return _jnp().zeros((0,) * a.ndim, a.dtype)
    full = _direct_full(a, b)
    return _crop(full, tuple(a.shape), tuple(b.shape), mode, "convolve")


def correlate(in1: Any, in2: Any, mode: str = "full", method: str = "auto", precision: Any = None) -> Any:
    """N-dimensional cross-correlation: ``convolve(in1, flip(conj(in2)))``."""
    a, b = _prep("correlate", in1, in2)
    jnp = _jnp()
    flipped = jnp.flip(jnp.conj(b) if _dkind(b.dtype) == "c" else b, axis=tuple(range(b.ndim)))
    return convolve(a, flipped, mode, method)


def _check2d(name: str, a: Any, b: Any, boundary: str, fillvalue: Any) -> None:
    if core.get_aval(a).ndim != 2 or core.get_aval(b).ndim != 2:
        raise ValueError(f"{name}: inputs must be 2-D")
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}: only boundary='fill' with fillvalue=0 is implemented (as in JAX)")


def convolve2d(
    in1: Any, in2: Any, mode: str = "full", boundary: str = "fill", fillvalue: Any = 0, precision: Any = None
) -> Any:
    """Two-dimensional convolution."""
    a, b = _prep("convolve2d", in1, in2)
    _check2d("convolve2d", a, b, boundary, fillvalue)
    return convolve(a, b, mode)


def correlate2d(
    in1: Any, in2: Any, mode: str = "full", boundary: str = "fill", fillvalue: Any = 0, precision: Any = None
) -> Any:
    """Two-dimensional cross-correlation."""
    a, b = _prep("correlate2d", in1, in2)
    _check2d("correlate2d", a, b, boundary, fillvalue)
    if mode == "same":
        # scipy centres correlate2d's 'same' window from the other end than correlate's
        jnp = _jnp()
        kern = jnp.conj(b) if _dkind(b.dtype) == "c" else b
        return jnp.flip(convolve(jnp.flip(a), kern, "same"))
    if mode == "valid" and all(q >= p for p, q in zip(a.shape, b.shape)) and a.shape != b.shape:
        # scipy swaps the operands and reverses the result (no conjugation)
        return _jnp().flip(correlate(b, a, "valid"))
    return correlate(a, b, mode)


from fjax.scipy._spectral import csd, detrend, istft, stft, welch  # noqa: E402
