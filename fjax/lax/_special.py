"""numpy reference implementations of special functions numpy lacks (erf, erfc, erf_inv,
lgamma, digamma). These are the eager semantics; compiled backends are tested against them."""

from __future__ import annotations

import math

import numpy as np

_verf = np.vectorize(math.erf, otypes=[np.float64])
_verfc = np.vectorize(math.erfc, otypes=[np.float64])
_vlgamma_raw = np.vectorize(lambda v: math.lgamma(v) if not (v <= 0 and v == math.floor(v)) else math.inf,
                            otypes=[np.float64])


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
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                  -0.00417768164, 0.246640727, 1.50140941):
            p1 = c + p1 * ws
        wl = np.sqrt(np.where(small, 5.0, w)) - 3.0
        p2 = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                  0.00943887047, 1.00167406, 2.83297682):
            p2 = c + p2 * wl
        r = np.where(small, p1, p2) * y
        for _ in range(3):  # Newton on erf(r) - y
            err = _verf(r) - y
            r = r - err / (2.0 / math.sqrt(math.pi) * np.exp(-r * r))
        r = np.where(y == 1.0, np.inf, np.where(y == -1.0, -np.inf, r))
        r = np.where(np.abs(y) > 1.0, np.nan, r)
    return r.astype(x.dtype)


def digamma(x: np.ndarray) -> np.ndarray:
    """psi(x): reflection for x < 0.5, recurrence up to x >= 6, then the asymptotic series."""
    v = np.asarray(x, dtype=np.float64)
    out = np.empty_like(v)
    with np.errstate(all="ignore"):
        neg = v < 0.5
        z = np.where(neg, 1.0 - v, v)
        acc = np.zeros_like(z)
        for _ in range(6):
            lo = z < 6.0
            acc = acc - np.where(lo, 1.0 / z, 0.0)
            z = np.where(lo, z + 1.0, z)
        inv = 1.0 / z
        inv2 = inv * inv
        series = np.log(z) - 0.5 * inv - inv2 * (
            1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 / 132)))
        )
        res = acc + series
        res = np.where(neg, res - np.pi / np.tan(np.pi * v), res)
        pole = (v <= 0) & (v == np.floor(v))
        out[...] = np.where(pole, np.nan, res)
    return out.astype(x.dtype)
