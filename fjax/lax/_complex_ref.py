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


def complex_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a / b`` for complex arrays of one dtype, as XLA computes it."""
    dtype = np.result_type(a, b)
    ar, ai, br, bi = np.real(a), np.imag(a), np.real(b), np.imag(b)
    inf = np.array(np.inf, ar.dtype)
    # Smith's algorithm, dividing by the larger of |br| and |bi|
    r1 = br / bi
    d1 = bi + br * r1
    r2 = bi / br
    d2 = br + bi * r2
    by_imag = np.abs(br) < np.abs(bi)
    cr = np.where(by_imag, (ar * r1 + ai) / d1, (ar + ai * r2) / d2)
    ci = np.where(by_imag, (ai * r1 - ar) / d1, (ai - ar * r2) / d2)
    # corner cases, used only where both parts came out NaN
    zero_den = (br == 0) & (bi == 0) & ~(np.isnan(ar) & np.isnan(ai))
    s = np.copysign(inf, br)
    a_inf_r, a_inf_i = np.abs(ar) == inf, np.abs(ai) == inf
    b_inf_r, b_inf_i = np.abs(br) == inf, np.abs(bi) == inf
    inf_num = (a_inf_r | a_inf_i) & np.isfinite(br) & np.isfinite(bi)
    inf_den = (b_inf_r | b_inf_i) & np.isfinite(ar) & np.isfinite(ai)
    ur, ui = _signed_unit(a_inf_r, ar), _signed_unit(a_inf_i, ai)
    vr, vi = _signed_unit(b_inf_r, br), _signed_unit(b_inf_i, bi)
    zero = np.zeros((), ar.dtype)
    both_nan = np.isnan(cr) & np.isnan(ci)
    re = np.select(
        [both_nan & zero_den, both_nan & inf_num, both_nan & inf_den],
        [s * ar, inf * (ur * br + ui * bi), zero * (ar * vr + ai * vi)],
        cr,
    )
    im = np.select(
        [both_nan & zero_den, both_nan & inf_num, both_nan & inf_den],
        [s * ai, inf * (ui * br - ur * bi), zero * (ai * vr - ar * vi)],
        ci,
    )
    return _compose(re, im, dtype)


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
