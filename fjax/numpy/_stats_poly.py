"""More of ``jax.numpy`` (second part, continued): convolution (``convolve``, ``correlate``),
statistics (``cov``, ``corrcoef``, ``nanquantile``, ``nanpercentile``, ``trapezoid``,
``unwrap``), interpolation (``interp``), polynomials (``polyval`` ... ``vander``,
``trim_zeros``) and window functions (``bartlett``, ``hanning``, ``hamming``, ``blackman``).

Split from ``fjax/numpy/_more2.py`` for size; ``_more2.py`` re-exports every name defined here.
Compositions of other ``fjax.numpy`` functions, so every transform works through them.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from fjax import core, lax
from fjax.numpy import _creation as C
from fjax.numpy import _reductions as R
from fjax.numpy import _shape as S
from fjax.numpy import _sorting as SO
from fjax.numpy import _ufuncs as U
from fjax.numpy import _util
from fjax.numpy._more2 import _arr, _concrete

# ---------------------------------------------------------------------------------------------
# convolution and statistics


def _conv1d(a: Any, v: Any, mode: str, name: str, precision: Any, preferred_element_type: Any) -> Any:
    # as JAX's jnp._conv: one conv_general_dilated over the longer input (precision and
    # preferred_element_type passed on), the kernel flipped for convolve, conjugated for correlate
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError(f"{name}() only support 1-dimensional inputs.")
    if preferred_element_type is None:
        # NumPy's convolutions compute in an inexact dtype
        a, v = _util.promote_dtypes_inexact(name, a, v)
    else:
        # otherwise the inputs keep their (common) dtype and the conv accumulates in the one asked
        a, v = _util.promote_dtypes(name, a, v)
    if a.shape[0] == 0 or v.shape[0] == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {a.shape} and {v.shape}.")
    reverse_out = False
    if name == "correlate":
        v = U.conj(v)
        if a.shape[0] < v.shape[0]:
            a, v = v, a
            reverse_out = True
    else:
        if a.shape[0] < v.shape[0]:
            a, v = v, a
        v = lax.rev(v, (0,))
    m = v.shape[0]
    if mode == "valid":
        padding = [(0, 0)]
    elif mode == "same":
        padding = [(m // 2, m - m // 2 - 1)]
    elif mode == "full":
        padding = [(m - 1, m - 1)]
    else:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    out = lax.conv_general_dilated(
        lax.broadcast_in_dim(a, (1, 1, a.shape[0]), (2,)),
        lax.broadcast_in_dim(v, (1, 1, m), (2,)),
        (1,),
        padding,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )
    if reverse_out:
        out = lax.rev(out, (2,))
    return lax.squeeze(out, (0, 1))


def convolve(a: Any, v: Any, mode: str = "full", *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """1-D discrete convolution of ``a`` and ``v`` (``mode`` full, same or valid), one
    ``conv_general_dilated`` with ``precision`` and ``preferred_element_type`` as in JAX."""
    a, v = _arr(a, "convolve"), _arr(v, "convolve")
    return _conv1d(a, v, mode, "convolve", precision, preferred_element_type)


def correlate(a: Any, v: Any, mode: str = "valid", *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """1-D cross-correlation ``c[k] = sum_n a[n + k] * conj(v[n])`` (``mode`` valid, same, full),
    one ``conv_general_dilated`` with ``precision`` and ``preferred_element_type`` as in JAX."""
    a, v = _arr(a, "correlate"), _arr(v, "correlate")
    return _conv1d(a, v, mode, "correlate", precision, preferred_element_type)


def cov(
    m: Any,
    y: Any = None,
    rowvar: bool = True,
    bias: bool = False,
    ddof: int | None = None,
    fweights: Any = None,
    aweights: Any = None,
    dtype: Any = None,
) -> Any:
    """Covariance matrix of the variables in the rows (``rowvar``) of ``m`` (and ``y``), computed in
    ``dtype`` (an inexact dtype) when given."""
    (m,) = _util.promote_dtypes_inexact("cov", m)
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if dtype is not None and _dkind_of(dtype) not in "fc":
        raise ValueError(f"cov: dtype must be a subclass of float or complex; got dtype={dtype}")
    x = S.atleast_2d(m)
    if not rowvar and x.shape[0] != 1:
        x = x.T
    if x.shape[0] == 0:
        return C.array([]).reshape(0, 0)
    if y is not None:
        (y,) = _util.promote_dtypes_inexact("cov", y)
        y = S.atleast_2d(y)
        if not rowvar and y.shape[0] != 1:
            y = y.T
        x, y = _util.promote_dtypes_inexact("cov", x, y)
        x = S.concatenate([x, y], axis=0)
    if dtype is not None:
        x = x.astype(dtype)
    if ddof is None:
        ddof = 0 if bias else 1
    w = None
    if fweights is not None:
        w = C.asarray(fweights).astype(x.dtype)
    if aweights is not None:
        aw = C.asarray(aweights).astype(x.dtype)
        w = aw if w is None else U.multiply(w, aw)
    avg, w_sum = R.average(x, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        f = U.subtract(w_sum, ddof)
    elif ddof == 0:
        f = w_sum
    elif aweights is None:
        f = U.subtract(w_sum, ddof)
    else:
        aw = C.asarray(aweights).astype(x.dtype)
        f = U.subtract(w_sum, U.divide(U.multiply(ddof, R.sum(U.multiply(w, aw))), w_sum))
    xc = U.subtract(x, avg[:, None])
    xw = xc if w is None else U.multiply(xc, w)
    from fjax.numpy import matmul

    c = U.divide(matmul(xw, U.conj(xc).T), f)
    return S.squeeze(c)


def _dkind_of(dtype: Any) -> str:
    from fjax import dtypes  # noqa: PLC0415

    return dtypes.kind(dtypes.dtype(dtype))


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, dtype: Any = None) -> Any:
    """Pearson correlation coefficients (``cov`` normalized, real parts clipped to [-1, 1]; computed
    in ``dtype`` when given)."""
    if dtype is not None and _dkind_of(dtype) not in "fc":
        raise ValueError(f"corrcoef: dtype must be a subclass of float or complex; got dtype={dtype}")
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return U.divide(c, c)
    d = C.diagonal(c)
    std = U.sqrt(d)
    c = U.divide(U.divide(c, std[:, None]), std[None, :])
    if np.issubdtype(c.dtype, np.complexfloating):
        return lax.complex(U.clip(U.real(c), -1, 1), U.clip(U.imag(c), -1, 1))
    return U.clip(c, -1, 1)


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> Any:
    """Piecewise-linear interpolation of the points ``(xp, fp)`` (``xp`` increasing) at ``x``."""
    x, xp, fp = _util.promote_dtypes_inexact("interp", x, xp, fp)
    if xp.ndim != 1 or fp.ndim != 1 or xp.shape[0] != fp.shape[0]:
        raise ValueError("xp and fp must be one-dimensional arrays of equal size")
    if period is not None:
        if left is not None or right is not None:
            raise ValueError("period argument is only valid when left and right are None")
        period = U.abs(C.asarray(period, dtype=x.dtype))
        x = U.remainder(x, period)
        xp = U.remainder(xp, period)
        order = SO.argsort(xp)
        xp, fp = xp[order], fp[order]
        xp = S.concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = S.concatenate([fp[-1:], fp, fp[:1]])
    i = U.clip(SO.searchsorted(xp, x, side="right"), 1, xp.shape[0] - 1)
    x0, x1 = xp[i - 1], xp[i]
    y0, y1 = fp[i - 1], fp[i]
    dx = U.subtract(x1, x0)
    t = U.divide(U.subtract(x, x0), U.where(U.equal(dx, 0), 1, dx))
    out = U.add(y0, U.multiply(t, U.subtract(y1, y0)))
    out = U.where(U.equal(dx, 0), y0, out)
    if period is None:
        out = U.where(U.less(x, xp[0]), fp[0] if left is None else left, out)
        out = U.where(U.greater(x, xp[-1]), fp[-1] if right is None else right, out)
    return out


def nanquantile(
    a: Any,
    q: Any,
    axis: Any = None,
    out: Any = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: Any = None,
) -> Any:
    """``quantile`` ignoring NaNs (``weights``: with method ``inverted_cdf``, as ``quantile``'s)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.nanquantile is not supported.")
    return R._quantile(a, q, axis, method, keepdims, True, "nanquantile", weights)


def nanpercentile(
    a: Any,
    q: Any,
    axis: Any = None,
    out: Any = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: Any = None,
) -> Any:
    """``percentile`` ignoring NaNs."""
    (q,) = _util.promote_dtypes_inexact("nanpercentile", q)
    return nanquantile(a, U.divide(q, 100), axis, out, overwrite_input, method, keepdims, weights=weights)


def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """Integral of ``y`` along ``axis`` by the trapezoid rule (sample points ``x`` or spacing ``dx``)."""
    (y,) = _util.promote_dtypes_inexact("trapezoid", y)
    y = S.moveaxis(y, axis, -1)
    if x is not None:
        (x,) = _util.promote_dtypes_inexact("trapezoid", x)
        if x.ndim == 1:
            d = U.subtract(x[1:], x[:-1])
        else:
            x = S.moveaxis(x, axis, -1)
            d = U.subtract(x[..., 1:], x[..., :-1])
    else:
        d = C.asarray(dx, dtype=y.dtype)
    return R.sum(U.multiply(0.5, U.multiply(d, U.add(y[..., 1:], y[..., :-1]))), axis=-1)


def unwrap(p: Any, discont: Any = None, axis: int = -1, period: Any = 2 * np.pi) -> Any:
    """``p`` with jumps larger than ``discont`` (default ``period / 2``) corrected by multiples of ``period``."""
    (p,) = _util.promote_dtypes_inexact("unwrap", p)
    if np.issubdtype(p.dtype, np.complexfloating):
        raise ValueError("jnp.unwrap does not support complex inputs.")
    period = C.asarray(period, dtype=p.dtype)
    if discont is None:
        discont = U.divide(period, 2)
    from fjax.numpy._more import diff

    axis = _util.canonicalize_axis(axis, p.ndim, "unwrap")
    dd = diff(p, axis=axis)
    half = U.divide(period, 2)
    ddmod = U.subtract(U.remainder(U.add(dd, half), period), half)
    ddmod = U.where(U.logical_and(U.equal(ddmod, U.negative(half)), U.greater(dd, 0)), half, ddmod)
    corr = U.where(U.less(U.abs(dd), discont), 0, U.subtract(ddmod, dd))
    first = lax.slice_in_dim(p, 0, 1, axis=axis)
    zeros = C.zeros_like(first)
    return (
        S.concatenate(
            [first, U.add(lax.slice_in_dim(p, 1, p.shape[axis], axis=axis), R.cumsum(corr, axis=axis))], axis=axis
        )
        if p.shape[axis]
        else p + zeros.sum()
    )


# ---------------------------------------------------------------------------------------------
# polynomials (coefficients highest degree first, as numpy's poly1d)


def _poly_arg(p: Any, name: str) -> Any:
    p = _arr(p, name)
    if p.ndim != 1:
        raise ValueError(f"{name}: input must be a rank-1 array; got shape {p.shape}")
    return p


def polyval(p: Any, x: Any, *, unroll: int = 16) -> Any:
    """Value of the polynomial with coefficients ``p`` (highest first) at ``x`` (Horner)."""
    p, x = _util.promote_dtypes("polyval", p, x)
    if p.ndim == 0:
        raise ValueError("polyval: p must have at least one dimension (the coefficients); got a scalar")
    # a p of rank > 1 holds one polynomial per trailing index (JAX and numpy broadcast p[i] with x)
    shape = lax.broadcast_shapes(p.shape[1:], x.shape)
    out = lax.full_like(x, 0, x.dtype, shape)  # strongly typed, as JAX's (so the result is not weak)
    for i in range(p.shape[0]):
        out = U.add(U.multiply(out, x), p[i])
    return out


def polyadd(a1: Any, a2: Any) -> Any:
    """Sum of two polynomials."""
    a1, a2 = _util.promote_dtypes("polyadd", a1, a2)
    if a1.dtype == np.bool_:  # JAX adds with lax.add, which refuses booleans
        raise TypeError(
            "add does not accept dtype bool at position 0. Accepted dtypes at position 0 are subtypes of "
            "integer, floating, complexfloating."
        )
    n = builtins.max(a1.shape[0], a2.shape[0])
    a1 = lax.pad(a1, C.asarray(0, dtype=a1.dtype), [(n - a1.shape[0], 0, 0)])
    a2 = lax.pad(a2, C.asarray(0, dtype=a2.dtype), [(n - a2.shape[0], 0, 0)])
    return U.add(a1, a2)


def polysub(a1: Any, a2: Any) -> Any:
    """Difference of two polynomials."""
    return polyadd(a1, U.negative(C.asarray(a2)))


def polymul(a1: Any, a2: Any, *, trim_leading_zeros: bool = False) -> Any:
    """Product of two polynomials."""
    a1, a2 = _util.promote_dtypes_inexact("polymul", a1, a2)
    if a1.ndim == 0 or a2.ndim == 0:
        raise TypeError("len() of unsized object")  # as JAX (which takes len() of both)
    if trim_leading_zeros:
        a1, a2 = trim_zeros(a1, "f"), trim_zeros(a2, "f")
    if a1.shape[0] == 0:
        a1 = C.asarray([0], dtype=a1.dtype)
    if a2.shape[0] == 0:
        a2 = C.asarray([0], dtype=a2.dtype)
    return convolve(a1, a2, mode="full")


def polyder(p: Any, m: int = 1) -> Any:
    """``m``-th derivative of the polynomial ``p``."""
    (p,) = _util.promote_dtypes_inexact("polyder", p)
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    for _ in range(m):
        n = p.shape[0] - 1
        if n <= 0:
            return C.zeros((0,) if n < 0 else (1,), p.dtype)[:0] if n < 0 else C.zeros((0,), p.dtype)
        p = U.multiply(p[:-1], C.arange(n, 0, -1, dtype=p.dtype))
    return p


def polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    """``m``-th antiderivative of ``p`` with integration constants ``k``."""
    (p,) = _util.promote_dtypes_inexact("polyint", p)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    k = C.zeros((m,), p.dtype) if k is None else S.atleast_1d(C.asarray(k, dtype=p.dtype))
    if k.shape[0] == 1:
        k = S.broadcast_to(k, (m,))
    if k.shape[0] != m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    for i in range(m):
        n = p.shape[0]
        p = S.concatenate([U.divide(p, C.arange(n, 0, -1, dtype=p.dtype)), k[i : i + 1]])
    return p


def polydiv(u: Any, v: Any, *, trim_leading_zeros: bool = False) -> tuple[Any, Any]:
    """Quotient and remainder of polynomial division ``u / v``."""
    u, v = _util.promote_dtypes_inexact("polydiv", u, v)
    m, n = u.shape[0] - 1, v.shape[0] - 1
    scale = U.divide(1.0, v[0])
    q = C.zeros((builtins.max(m - n + 1, 1),), u.dtype)
    r = u
    for k in range(0, m - n + 1):
        d = U.multiply(scale, r[k])
        q = q.at[k].set(d)
        r = r.at[k : k + n + 1].add(U.negative(U.multiply(d, v)))
    if trim_leading_zeros:
        r = trim_zeros(r, trim="f")
    return q, r


def poly(seq_of_zeros: Any) -> Any:
    """Coefficients of the monic polynomial with the given roots (1-D input)."""
    a = _arr(seq_of_zeros, "poly")
    if a.ndim != 1:
        raise NotImplementedError("jnp.poly of a square matrix (its characteristic polynomial) needs eigvals")
    (a,) = _util.promote_dtypes_inexact("poly", a)
    out = C.ones((1,), a.dtype)
    for i in range(a.shape[0]):
        out = convolve(out, S.stack([C.asarray(1, a.dtype), U.negative(a[i])]), mode="full")
    return out


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:
    """Vandermonde matrix: columns are powers of ``x`` (decreasing unless ``increasing``)."""
    x = _arr(x, "vander")
    if x.ndim != 1:
        raise ValueError("x must be a one-dimensional array")
    N = x.shape[0] if N is None else int(N)
    if N < 0:
        raise ValueError("N must be nonnegative")
    powers = C.arange(N, dtype=np.int32)
    if not increasing:
        powers = powers[::-1]
    return U.power(x[:, None], powers[None, :])


def trim_zeros(filt: Any, trim: str = "fb", axis: Any = None) -> Any:
    """``filt`` (concrete) without its leading (``f``) and/or trailing (``b``) all-zero slices along
    ``axis`` (an int, a tuple, or None: every axis), as numpy 2."""
    filt = _arr(filt, "trim_zeros")
    c = _concrete(filt, "jnp.trim_zeros(): the result size depends on the values")
    nd = c.ndim
    if axis is None:
        axes = set(range(nd))
    else:
        axes = {
            _util.canonicalize_axis(int(a), nd, "trim_zeros")
            for a in (axis if isinstance(axis, (tuple, list)) else (axis,))
        }
    t = trim.lower()
    if not axes or ("f" not in t and "b" not in t):
        return filt
    idx = []
    for ax in range(nd):
        if ax not in axes:
            idx.append(slice(None))
            continue
        mask = np.any(c != 0, axis=tuple(i for i in range(nd) if i != ax))
        nz = np.nonzero(mask)[0]
        if nz.size == 0:
            idx.append(slice(0, 0))
            continue
        idx.append(slice(int(nz[0]) if "f" in t else None, int(nz[-1]) + 1 if "b" in t else None))
    return filt[tuple(idx)]


# ---------------------------------------------------------------------------------------------
# window functions


def _window(M: int, name: str) -> tuple[int, Any]:
    M = core.concrete_or_error(M, f"M argument of jnp.{name}")
    from fjax import dtypes

    return int(M), dtypes.canonicalize_dtype(np.float64)


def bartlett(M: int) -> Any:
    """Bartlett (triangular) window of ``M`` points."""
    M, dt = _window(M, "bartlett")
    if M <= 1:
        return C.ones((builtins.max(M, 0),), dt)
    n = C.arange(M, dtype=dt)
    return U.subtract(1, U.abs(U.divide(U.subtract(U.multiply(2, n), M - 1), M - 1)))


def _cosine_window(M: int, coeffs: Sequence[float], name: str) -> Any:
    M, dt = _window(M, name)
    if M <= 1:
        return C.ones((builtins.max(M, 0),), dt)
    n = C.arange(1 - M, M, 2, dtype=dt)
    out = C.full((M,), coeffs[0], dt)
    for k, c in enumerate(coeffs[1:], start=1):
        out = U.add(out, U.multiply(c, U.cos(U.multiply(np.pi * k / (M - 1), n))))
    return out


def hanning(M: int) -> Any:
    """Hann window of ``M`` points."""
    return _cosine_window(M, (0.5, 0.5), "hanning")


def hamming(M: int) -> Any:
    """Hamming window of ``M`` points."""
    return _cosine_window(M, (0.54, 0.46), "hamming")


def blackman(M: int) -> Any:
    """Blackman window of ``M`` points."""
    return _cosine_window(M, (0.42, 0.5, 0.08), "blackman")
