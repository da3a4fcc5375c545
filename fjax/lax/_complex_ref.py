"""Reference (numpy) semantics of XLA's complex division and power, for the eager impl rules.

numpy follows C99 Annex G at infinities, zeros and NaNs; JAX gives what XLA's CPU emitter gives,
which differs there: ``1 / (0+0j)`` is ``inf+nanj`` (numpy: ``nan+nanj``), ``1 / infj`` is
``-0j``, ``(inf+0j) ** 1`` is ``inf+0j`` and ``0j ** -1.5`` is ``nan+nanj``. These follow XLA's
formulas (``EmitComplexDivide``: Smith's algorithm, then its corner cases when both parts came out
NaN; ``EmitComplexPower``: polar form) and were checked against JAX 0.10.2 on a grid of special
values (zeros of both signs, +-1.5, 2, +-inf, NaN in either part). Known residue: a base of
``-inf+0j`` with a real exponent gives NaN in JAX but an infinity or zero here.
"""

from __future__ import annotations

import numpy as np


def _compose(re: np.ndarray, im: np.ndarray, dtype: np.dtype) -> np.ndarray:
    out = np.empty(np.broadcast(re, im).shape, dtype)
    out.real = re
    out.imag = im
    return out


def _signed_unit(mask: np.ndarray, sign_of: np.ndarray) -> np.ndarray:
    return np.copysign(np.where(mask, 1, 0).astype(sign_of.dtype), sign_of)


#: elements per block of complex_div: its ~15 temporaries of one block stay in the CPU's cache
_DIV_BLOCK = 8192


def complex_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a / b`` for complex arrays of one dtype, as XLA computes it.

    Smith's algorithm, dividing by the larger of ``|br|`` and ``|bi|``, runs over all elements,
    block by block in preallocated buffers: the operands of each element's branch are picked first
    (a bitwise select: exact, and without the cost of a data-dependent ``np.where``), then the
    branch's formula is evaluated, doing the same operations on the same values as evaluating both
    branches and selecting (the same bits; an addition may take its operands in the other order,
    which can only change a NaN's payload). XLA's corner cases then replace the results only
    where both parts came out NaN, on those (rare) elements alone."""
    dtype = np.result_type(a, b)
    a, b = np.broadcast_arrays(np.asarray(a, dtype), np.asarray(b, dtype))
    shape = a.shape
    real = np.dtype(dtype.char.lower())  # complex64 -> float32, complex128 -> float64
    bits = np.dtype(f"u{real.itemsize}")
    a2 = np.ascontiguousarray(a).reshape(-1).view(real).reshape(-1, 2)  # [:, 0] real, [:, 1] imag
    b2 = np.ascontiguousarray(b).reshape(-1).view(real).reshape(-1, 2)
    n = a2.shape[0]
    out = np.empty(n, dtype)
    if n == 0:
        return out.reshape(shape)
    o2 = out.view(real).reshape(-1, 2)
    m = min(n, _DIV_BLOCK)
    ar, ai, br, bi, p, q, r, d, s, t, w, x = (np.empty(m, real) for _ in range(12))
    xb, pb, qb, sb, tb, wb = (v.view(bits) for v in (x, p, q, s, t, w))
    mask = np.empty(m, bits)
    by_imag, nan_i = np.empty(m, bool), np.empty(m, bool)
    corners = []
    for lo in range(0, n, m):
        hi = min(n, lo + m)
        k = hi - lo
        if k < m:  # the last, shorter block
            ar, ai, br, bi, p, q, r, d, s, t, w, x = (v[:k] for v in (ar, ai, br, bi, p, q, r, d, s, t, w, x))
            xb, pb, qb, sb, tb, wb = (v.view(bits) for v in (x, p, q, s, t, w))
            mask, by_imag, nan_i = mask[:k], by_imag[:k], nan_i[:k]
        np.copyto(ar, a2[lo:hi, 0])
        np.copyto(ai, a2[lo:hi, 1])
        np.copyto(br, b2[lo:hi, 0])
        np.copyto(bi, b2[lo:hi, 1])
        np.abs(br, out=p)
        np.abs(bi, out=q)
        np.less(p, q, out=by_imag)
        np.copyto(mask, by_imag)
        np.negative(mask, out=mask)  # all ones where by_imag, else zero
        # p, q = (bi, br) where by_imag else (br, bi): x = br ^ bi, p = (x & mask) ^ br, q = x ^ p
        np.bitwise_xor(br.view(bits), bi.view(bits), out=xb)
        np.bitwise_and(xb, mask, out=pb)
        pb ^= br.view(bits)
        np.bitwise_xor(xb, pb, out=qb)
        # s, t = (ar, ai) where by_imag else (ai, ar)
        np.bitwise_xor(ar.view(bits), ai.view(bits), out=xb)
        np.bitwise_and(xb, mask, out=sb)
        sb ^= ai.view(bits)
        np.bitwise_xor(xb, sb, out=tb)
        # by_imag: r = br / bi, d = bi + br * r, cr = (ar * r + ai) / d, ci = (ai * r - ar) / d
        # else:    r = bi / br, d = br + bi * r, cr = (ar + ai * r) / d, ci = (ai - ar * r) / d
        np.divide(q, p, out=r)
        np.multiply(q, r, out=d)
        d += p
        np.multiply(s, r, out=x)
        x += t
        np.divide(x, d, out=o2[lo:hi, 0])
        np.multiply(t, r, out=w)  # ai * r (by_imag) or ar * r
        np.subtract(w, s, out=x)  # by_imag's numerator of ci
        np.subtract(s, w, out=p)  # the other branch's
        # ci's numerator = (x where by_imag else p) = ((x ^ p) & mask) ^ p
        xb ^= pb
        xb &= mask
        xb ^= pb
        np.divide(x, d, out=o2[lo:hi, 1])
        np.isnan(o2[lo:hi, 0], out=by_imag)
        np.isnan(o2[lo:hi, 1], out=nan_i)
        by_imag &= nan_i
        if by_imag.any():
            corners.append(np.flatnonzero(by_imag) + lo)
    if corners:
        idx = np.concatenate(corners)
        parts = (a2[idx, 0], a2[idx, 1], b2[idx, 0], b2[idx, 1], o2[idx, 0], o2[idx, 1])
        o2[idx, 0], o2[idx, 1] = _div_corners(*parts)
    return out.reshape(shape)


def _div_corners(
    ar: np.ndarray, ai: np.ndarray, br: np.ndarray, bi: np.ndarray, cr: np.ndarray, ci: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """XLA's corner cases of the complex division, for elements where Smith's algorithm gave NaN in
    both parts (``cr``, ``ci``): a zero divisor, an infinite numerator, an infinite divisor."""
    inf = np.array(np.inf, ar.dtype)
    zero_den = (br == 0) & (bi == 0) & ~(np.isnan(ar) & np.isnan(ai))
    s = np.copysign(inf, br)
    a_inf_r, a_inf_i = np.abs(ar) == inf, np.abs(ai) == inf
    b_inf_r, b_inf_i = np.abs(br) == inf, np.abs(bi) == inf
    inf_num = (a_inf_r | a_inf_i) & np.isfinite(br) & np.isfinite(bi)
    inf_den = (b_inf_r | b_inf_i) & np.isfinite(ar) & np.isfinite(ai)
    ur, ui = _signed_unit(a_inf_r, ar), _signed_unit(a_inf_i, ai)
    vr, vi = _signed_unit(b_inf_r, br), _signed_unit(b_inf_i, bi)
    zero = np.zeros((), ar.dtype)
    conds = [zero_den, inf_num, inf_den]
    re = np.select(conds, [s * ar, inf * (ur * br + ui * bi), zero * (ar * vr + ai * vi)], cr)
    im = np.select(conds, [s * ai, inf * (ui * br - ur * bi), zero * (ai * vr - ar * vi)], ci)
    return re, im


def complex_pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x ** y`` for complex arrays of one dtype, as XLA computes it (polar form)."""
    dtype = np.result_type(x, y)
    a, b, c, d = np.real(x), np.imag(x), np.real(y), np.imag(y)
    # |x| by hypot: a * a + b * b would underflow to 0 (|x| < 1e-19 in float32: 0 ** -y = NaN) or
    # overflow where |x| itself does not
    r = np.hypot(a, b)
    arg = np.arctan2(b, a)
    coeff = np.power(r, c) * np.exp(-d * arg)
    # a real exponent never multiplies log|x| (so inf ** 1 is not inf * nan)
    q = np.where(d == 0, c * arg, c * arg + d * np.log(r))
    re = coeff * np.cos(q)
    im = np.where(q == 0, q, coeff * np.sin(q))
    # 0 ** y: 1 for y == 0, 0 for a positive real y, NaN otherwise
    zero_base = r == 0
    pos_real = (d == 0) & (c >= 0)
    re = np.where(zero_base, np.where(pos_real, np.where(c == 0, 1, 0), np.nan), re)
    im = np.where(zero_base, np.where(pos_real, 0, np.nan), im)
    # x ** 0 and 1 ** y are 1, NaNs included
    one = ((c == 0) & (d == 0)) | ((a == 1) & (b == 0))
    re = np.where(one, 1, re).astype(a.dtype, copy=False)
    im = np.where(one, 0, im).astype(a.dtype, copy=False)
    return _compose(re, im, dtype)


def complex_exp(z: np.ndarray) -> np.ndarray:
    """``exp(z)`` as XLA computes it: ``exp(re) * (cos(im) + i sin(im))`` with an exact real result
    for a zero imaginary part (numpy's C99 rules give ``inf+nanj`` at ``inf+nanj``, XLA NaN)."""
    a, b = np.real(z), np.imag(z)
    e = np.exp(a)
    real_arg = b == 0
    re = np.where(real_arg, e, e * np.cos(b))
    im = np.where(real_arg, b, e * np.sin(b))
    return _compose(re, im, z.dtype)


def complex_exp2(z: np.ndarray) -> np.ndarray:
    """``2 ** z`` as XLA computes it: ``exp(z * log(2))`` with a complex product (so an infinite real
    part times the zero imaginary part of ``log(2)`` makes the result NaN, as in JAX)."""
    return complex_exp(z * np.array(np.log(2.0), z.dtype))


def complex_expm1(z: np.ndarray) -> np.ndarray:
    """``exp(z) - 1``; with a zero imaginary part the result is real (``expm1(inf+0j)`` is
    ``inf+0j`` in JAX, ``inf+nanj`` in numpy)."""
    out = np.expm1(z)
    b = np.imag(z)
    re = np.where(b == 0, np.expm1(np.real(z)), np.real(out))
    im = np.where(b == 0, b, np.imag(out))
    return _compose(re, im, z.dtype)


def complex_max(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``max(x, y)`` as JAX lowers it for complex values: compare the real parts, the imaginary
    parts on a tie, and take ``y`` unless ``x`` compares greater (so a NaN gives ``y``)."""
    rx, ry = np.real(x), np.real(y)
    pick_x = np.where(rx == ry, np.imag(x) > np.imag(y), rx > ry)
    return np.where(pick_x, x, y)


def complex_min(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``min(x, y)`` for complex values, as ``complex_max`` with the comparisons reversed."""
    rx, ry = np.real(x), np.real(y)
    pick_x = np.where(rx == ry, np.imag(x) < np.imag(y), rx < ry)
    return np.where(pick_x, x, y)
