"""``fjax.scipy.fft``: the discrete cosine transforms of ``jax.scipy.fft`` (``dct``, ``dctn``,
``idct``, ``idctn``).

As in JAX, only the type-2 DCT (and its inverse) is implemented, with ``norm`` ``None`` /
``"backward"`` or ``"ortho"``; other types raise ``NotImplementedError`` and other norms
``ValueError``. The transforms are built on ``fjax.numpy.fft`` (Makhoul's algorithm: reorder the
input, one complex FFT of the same length, a twiddle), so they are jittable, batchable and
differentiable. Integer input is promoted to the default float dtype; complex input is
transformed in its real and imaginary parts separately (as SciPy does).

``dctn``/``idctn`` follow JAX's conventions: ``axes=None`` means all axes, and ``s[i]`` is the
length along ``axes[i]`` (with ``axes=None``, along axis ``i``).
"""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from fjax import core, dtypes
from fjax.dtypes import kind as _dkind
from fjax.numpy import _util

__all__ = ["dct", "dctn", "idct", "idctn"]


def _jnp() -> Any:
    import fjax.numpy as jnp  # noqa: PLC0415

    return jnp


def _check(name: str, type: int, norm: str | None) -> None:
    if type != 2:
        raise NotImplementedError(f"{name}: only DCT type 2 is implemented (got type={type!r})")
    if norm not in (None, "backward", "ortho"):
        raise ValueError(f"{name}: norm={norm!r} is not implemented; use None, 'backward' or 'ortho'")


def _prep(name: str, x: Any) -> Any:
    _util.check_arraylike(name, x)
    x = _util.to_fjax(x, name)
    (x,) = _util.promote_dtypes_inexact(name, x)
    return x


def _resize_last(x: Any, n: int | None, name: str) -> Any:
    jnp = _jnp()
    if n is None:
        n = x.shape[-1]
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"{name}: invalid number of data points ({n}) specified")
    cur = x.shape[-1]
    if n < cur:
        return x[..., :n]
    if n > cur:
        pad = [(0, 0)] * (x.ndim - 1) + [(0, n - cur)]
        return jnp.pad(x, pad)
    return x


def _real_parts(fn: Any, x: Any) -> Any:
    """Apply the real transform ``fn`` to ``x``, or to its real and imaginary parts."""
    if _dkind(core.get_aval(x).dtype) == "c":
        return fn(x.real) + 1j * fn(x.imag)
    return fn(x)


def _twiddle(n: int, dtype: Any, sign: float) -> Any:
    k = np.arange(n)
    w = np.exp(sign * 1j * np.pi * k / (2 * n))
    return _jnp().asarray(w, dtype=dtypes.canonicalize_dtype(np.result_type(dtype, np.complex64)))


def _ortho_scale(n: int, dtype: Any) -> Any:
    f = np.full(n, 1.0 / math.sqrt(2 * n))
    f[0] = 1.0 / math.sqrt(4 * n)
    return _jnp().asarray(f, dtype=dtype)


def _dct2_last(x: Any, norm: str | None) -> Any:
    """Type-2 DCT of a real array along its last axis (SciPy's definition and scaling)."""
    jnp = _jnp()
    n = x.shape[-1]
    order = np.concatenate([np.arange(0, n, 2), np.arange(1, n, 2)[::-1]])
    v = x[..., order]
    V = jnp.fft.fft(v, axis=-1)
    y = 2.0 * jnp.real(V * _twiddle(n, x.dtype, -1.0))
    y = y.astype(x.dtype)
    if norm == "ortho":
        y = y * _ortho_scale(n, x.dtype)
    return y


def _idct2_last(y: Any, norm: str | None) -> Any:
    """Inverse of :func:`_dct2_last` (a scaled type-3 DCT) along the last axis."""
    jnp = _jnp()
    n = y.shape[-1]
    if norm == "ortho":
        y = y / _ortho_scale(n, y.dtype)
    # V[k] = exp(i pi k / 2n) (y[k] - i y[n - k]) / 2 with y[n] = 0 is the FFT of the reordered input
    flipped = jnp.concatenate([jnp.zeros_like(y[..., :1]), jnp.flip(y[..., 1:], axis=-1)], axis=-1)
    V = 0.5 * _twiddle(n, y.dtype, 1.0) * (y - 1j * flipped)
    v = jnp.real(jnp.fft.ifft(V, axis=-1)).astype(y.dtype)
    inv = np.empty(n, dtype=np.int64)
    inv[0::2] = np.arange((n + 1) // 2)
    inv[1::2] = n - 1 - np.arange(n // 2)
    return v[..., inv]


def _one(name: str, core_fn: Any, x: Any, type: int, n: int | None, axis: int, norm: str | None) -> Any:
    _check(name, type, norm)
    jnp = _jnp()
    x = _prep(name, x)
    if x.ndim == 0:
        raise ValueError(f"{name}: input must have at least one dimension")
    axis = _util.canonicalize_axis(operator.index(axis), x.ndim, name)
    x = jnp.moveaxis(x, axis, -1)
    x = _resize_last(x, n, name)
    y = _real_parts(lambda t: core_fn(t, norm), x)
    return jnp.moveaxis(y, -1, axis)


def dct(x: Any, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """Discrete cosine transform (type 2) of ``x`` along ``axis``.

    ``y[k] = 2 sum_j x[j] cos(pi k (2j + 1) / (2n))``; ``norm='ortho'`` scales ``y[0]`` by
    ``sqrt(1 / (4n))`` and the rest by ``sqrt(1 / (2n))`` (an orthonormal transform). ``n`` zero-pads
    or truncates the input along ``axis`` first. Only ``type=2`` is supported (as in JAX):
    ``NotImplementedError`` otherwise.
    """
    return _one("dct", _dct2_last, x, type, n, axis, norm)


def idct(x: Any, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """Inverse of :func:`dct` (type 2) along ``axis``: ``idct(dct(x, norm=m), norm=m) == x``.

    With ``norm=None`` this is the type-3 DCT scaled by ``1 / (2n)``; ``n`` zero-pads or truncates
    the input along ``axis`` first. Only ``type=2`` is supported (as in JAX).
    """
    return _one("idct", _idct2_last, x, type, n, axis, norm)


def _many(
    name: str, fn: Any, x: Any, type: int, s: Sequence[int] | None, axes: Sequence[int] | None, norm: str | None
) -> Any:
    _check(name, type, norm)
    x = _prep(name, x)
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, int):
        axes = (axes,)
    axes = tuple(_util.canonicalize_axis(operator.index(a), x.ndim, name) for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name} does not support repeated axes, got axes={axes}")
    if s is not None:
        s = (s,) if isinstance(s, int) else tuple(s)
        lengths = {a: operator.index(m) for a, m in zip(axes, s)}
    else:
        lengths = {}
    for a in axes:
        x = fn(x, type=type, n=lengths.get(a), axis=a, norm=norm)
    return x


def dctn(
    x: Any, type: int = 2, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None
) -> Any:
    """Multidimensional type-2 DCT: :func:`dct` along each of ``axes`` (default: all axes).

    ``s[i]`` (optional) is the length, after zero-padding or truncation, along ``axes[i]``.
    """
    return _many("dctn", dct, x, type, s, axes, norm)


def idctn(
    x: Any, type: int = 2, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None
) -> Any:
    """Multidimensional inverse type-2 DCT: :func:`idct` along each of ``axes`` (default: all axes).

    ``s[i]`` (optional) is the length, after zero-padding or truncation, along ``axes[i]``.
    """
    return _many("idctn", idct, x, type, s, axes, norm)
