"""numpy reference implementations of special functions numpy lacks (erf, erfc, erf_inv,
lgamma, digamma). These are the eager semantics; compiled backends are tested against them."""

from __future__ import annotations

import math

import numpy as np

_verf = np.vectorize(math.erf, otypes=[np.float64])
_verfc = np.vectorize(math.erfc, otypes=[np.float64])


def _lgamma1(v: float) -> float:
    # +inf at the poles and at +-inf (as JAX); math.floor(-inf) and math.lgamma(huge) would raise
    if math.isnan(v):
        return v
    if math.isinf(v) or (v <= 0 and v == math.floor(v)):
        return math.inf
    try:
        return math.lgamma(v)
    except OverflowError:
        return math.inf


_vlgamma_raw = np.vectorize(_lgamma1, otypes=[np.float64])


def erf(x: np.ndarray) -> np.ndarray:
    return _verf(x).astype(x.dtype)


def erfc(x: np.ndarray) -> np.ndarray:
    return _verfc(x).astype(x.dtype)


def lgamma(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return _vlgamma_raw(x).astype(x.dtype)


def erf_inv(x: np.ndarray) -> np.ndarray:
    """Inverse error function: Giles' single-precision approximation, then Newton steps in f64."""
    y = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        w = -np.log((1.0 - y) * (1.0 + y))
        small = w < 5.0
        ws = w - 2.5
        p1 = 2.81022636e-08
        for c in (
            3.43273939e-07,
            -3.5233877e-06,
            -4.39150654e-06,
            0.00021858087,
            -0.00125372503,
            -0.00417768164,
            0.246640727,
            1.50140941,
        ):
            p1 = c + p1 * ws
        wl = np.sqrt(np.where(small, 5.0, w)) - 3.0
        p2 = -0.000200214257
        for c in (
            0.000100950558,
            0.00134934322,
            -0.00367342844,
            0.00573950773,
            -0.0076224613,
            0.00943887047,
            1.00167406,
            2.83297682,
        ):
            p2 = c + p2 * wl
        r = np.where(small, p1, p2) * y
        for _ in range(3):  # Newton on erf(r) - y
            err = _verf(r) - y
            r = r - err / (2.0 / math.sqrt(math.pi) * np.exp(-r * r))
        r = np.where(y == 1.0, np.inf, np.where(y == -1.0, -np.inf, r))
        r = np.where(np.abs(y) > 1.0, np.nan, r)
    return r.astype(x.dtype)


def digamma(x: np.ndarray) -> np.ndarray:
    """psi(x): reflection for x < 0.5, recurrence up to x >= 10, then the asymptotic series through
    B_14 (truncation below 3e-18; the CUDA kernel ``fj_digamma`` computes the same)."""
    v = np.asarray(x, dtype=np.float64)
    out = np.empty_like(v)
    with np.errstate(all="ignore"):
        neg = v < 0.5
        z = np.where(neg, 1.0 - v, v)
        acc = np.zeros_like(z)
        for _ in range(10):
            lo = z < 10.0
            acc = acc - np.where(lo, 1.0 / z, 0.0)
            z = np.where(lo, z + 1.0, z)
        inv = 1.0 / z
        inv2 = inv * inv
        series = (
            np.log(z)
            - 0.5 * inv
            - inv2
            * (
                1.0 / 12
                - inv2
                * (
                    1.0 / 120
                    - inv2
                    * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 * (1.0 / 132 - inv2 * (691.0 / 32760 - inv2 / 12.0))))
                )
            )
        )
        res = acc + series
        res = np.where(neg, res - np.pi / np.tan(np.pi * v), res)
        pole = (v <= 0) & (v == np.floor(v))
        out[...] = np.where(pole, np.nan, res)
    return out.astype(x.dtype)


_BERNOULLI_2K = [1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6, -3617.0 / 510]


def polygamma(m: np.ndarray, x: np.ndarray) -> np.ndarray:
    """psi^(m)(x) for integer-valued m >= 0: recurrence up to x >= 15, then the asymptotic series.

    NaN where m is negative or not an integer, and at the poles x = 0, -1, -2, ...
    """
    mm = np.asarray(m, np.float64)
    v = np.asarray(x, np.float64)
    mm, v = np.broadcast_arrays(mm, v)
    out = np.full(v.shape, np.nan)
    with np.errstate(all="ignore"):
        is0 = mm == 0
        if np.any(is0):
            out[is0] = digamma(v[is0])
        ok = (mm >= 1) & (mm == np.floor(mm)) & ~((v <= 0) & (v == np.floor(v)))
        if np.any(ok):
            n = mm[ok]
            z = v[ok].copy()
            fact = np.vectorize(math.factorial, otypes=[np.float64])(n.astype(np.int64))
            sign = np.where(n % 2 == 1, 1.0, -1.0)  # (-1)^(m+1)
            acc = np.zeros_like(z)
            for _ in range(64):
                lo = z < 15.0
                if not lo.any():
                    break
                acc = acc + np.where(lo, 1.0 / z ** (n + 1), 0.0)
                z = np.where(lo, z + 1.0, z)
            # asymptotic series at z >= 15
            fm1 = fact / n  # (m-1)!
            s = fm1 / z**n + fact / (2.0 * z ** (n + 1))
            for k, b in enumerate(_BERNOULLI_2K, start=1):
                # B_2k (2k+m-1)! / ((2k)! z^(2k+m))
                coef = np.vectorize(
                    lambda mi, k=k: math.factorial(int(mi) + 2 * k - 1) / math.factorial(2 * k), otypes=[np.float64]
                )(n)
                s = s + b * coef / z ** (2 * k + n)
            out[ok] = sign * (s + fact * acc)
    return out.astype(np.asarray(x).dtype)
