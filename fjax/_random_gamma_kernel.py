"""Compiled (numba) float32 gamma and poisson samplers. The gamma sampler reproduces, element
by element and bit for bit, the lax composite in ``fjax._random_dists._gamma_one`` (JAX's
Marsaglia-Tsang loop with its key splits, XLA's float32 ``log``/``log1p``/``erf_inv`` and XLA's fused multiply-adds).

Why a second implementation: the composite is a vmapped ``while_loop`` whose private ``fma`` and
``bitcast`` primitives have no lowering rule, so it would run op by op over whole batches (about a
minute for 10**6 samples). Here each sample is a scalar loop. The composite stays the reference
semantics and the tests check that both agree exactly.

Scalar threefry2x32 runs on uint64 values masked to 32 bits (numba widens uint32 arithmetic). The
float32 fused multiply-add is computed in float64: the product of two float32 is exact there, the
sum is rounded once to float64, and a float64 sum that lands exactly halfway between two float32
values is resolved by the sign of the float64 rounding error (what ``random._fma_impl`` does).
"""

from __future__ import annotations

import math
import sys

import numpy as np
from numba import njit

# importing the backend package first gives numba a writable cache directory even for a
# read-only install without HOME; its disk_cache seals the object code of these kernels
from fjax.backends.numba import disk_cache
from fjax.backends.numba.vmath import f32_as_i32, i32_as_f32
from fjax.dtypes import finfo as _finfo

_M32 = np.uint64(0xFFFFFFFF)
_opts = dict(cache=True, nogil=True, error_model="numpy")  # IEEE division (x/0 -> inf), as XLA
_inl = dict(_opts, inline="always")


def _h(hexbits: str) -> np.float32:
    return np.frombuffer(bytes.fromhex(hexbits)[::-1], np.float32)[0]


@njit(**_inl)
def _rotl(x, d):  # pragma: no cover - numba
    return ((x << np.uint64(d)) | (x >> np.uint64(32 - d))) & _M32


@njit(**_opts)
def threefry(k1, k2, x1, x2):  # pragma: no cover - numba
    """threefry2x32 of one counter pair (uint64 values below 2**32)."""
    k3 = k1 ^ k2 ^ np.uint64(0x1BD11BDA)
    ks0, ks1, ks2 = k1, k2, k3
    x1 = (x1 + ks0) & _M32
    x2 = (x2 + ks1) & _M32
    for i in range(5):
        if i % 2 == 0:
            r0, r1, r2, r3 = 13, 15, 26, 6
        else:
            r0, r1, r2, r3 = 17, 29, 16, 24
        x1 = (x1 + x2) & _M32
        x2 = x1 ^ _rotl(x2, r0)
        x1 = (x1 + x2) & _M32
        x2 = x1 ^ _rotl(x2, r1)
        x1 = (x1 + x2) & _M32
        x2 = x1 ^ _rotl(x2, r2)
        x1 = (x1 + x2) & _M32
        x2 = x1 ^ _rotl(x2, r3)
        j = (i + 1) % 3
        a = ks0 if j == 0 else (ks1 if j == 1 else ks2)
        j = (i + 2) % 3
        b = ks0 if j == 0 else (ks1 if j == 1 else ks2)
        x1 = (x1 + a) & _M32
        x2 = (x2 + b + np.uint64(i + 1)) & _M32
    return x1, x2


@njit(**_inl)
def _child(k1, k2, i):  # pragma: no cover - numba
    """``split(key, n)[i]`` (partitionable threefry: counter (0, i))."""
    return threefry(k1, k2, np.uint64(0), np.uint64(i))


@njit(**_inl)
def _unit(k1, k2):  # pragma: no cover - numba
    """``uniform(key, (), float32)`` before scaling: the top 23 bits as a float in [0, 1)."""
    o1, o2 = threefry(k1, k2, np.uint64(0), np.uint64(0))
    bits = (o1 ^ o2) >> np.uint64(9)
    return np.float32(np.float32(bits) * np.float32(2.0**-23))


@njit(**_opts)
def fma32(a, b, c):  # pragma: no cover - numba
    """float32 a * b + c rounded once."""
    x = np.float64(a) * np.float64(b)
    cc = np.float64(c)
    s = x + cc
    bv = s - x
    err = (x - (s - bv)) + (cc - bv)
    r = np.float32(s)
    if err != 0.0 and math.isfinite(s):
        r64 = np.float64(r)
        if s != r64:
            n = np.nextafter(r, np.float32(np.inf) if s > r64 else np.float32(-np.inf))
            if (np.float64(n) + r64) * 0.5 == s:  # a float64 tie between two float32 values
                up = max(r, n)
                lo = min(r, n)
                r = up if err > 0.0 else lo
    return r


_TINY32 = np.float32(_finfo(np.float32).tiny)
_SQRTH = _h("3F3504F3")
_LOG_A = (_h("3D9021BB"), _h("BDEBD1B8"), _h("3DEF251A"))
_LOG_B = (_h("BDFE5D4F"), _h("3E11E9BF"), _h("BE2AAE50"))
_LOG_C = (_h("3E4CCEAC"), _h("BE7FFFFC"), _h("3EAAAAAA"))
_LOG_E1 = _h("B95E8083")
_LOG_E2 = _h("3F318000")


@njit(**_inl)
def _flush(x):  # pragma: no cover - numba
    return x * np.float32(0) if abs(x) < _TINY32 else x


@njit(**_opts)
def xla_log(y):  # pragma: no cover - numba
    """XLA's float32 log (``random._xla_log_f32``)."""
    y = _flush(y)
    if y != y:
        return y
    if y == np.float32(np.inf):
        return y
    if y == np.float32(0):
        return np.float32(-np.inf)
    if y < np.float32(0):
        return np.float32(np.nan)
    yy = y if y > _TINY32 else _TINY32
    b = np.int64(f32_as_i32(yy)) & np.int64(0xFFFFFFFF)
    e = np.int32((b >> 23) - 127)
    mb = (b & np.int64(0x807FFFFF)) | np.int64(0x3F000000)
    m = i32_as_f32(np.int32(mb - (1 << 32) if mb >= (1 << 31) else mb))
    ep1 = np.float32(e) + np.float32(1)
    small = m < _SQRTH
    x = (m - np.float32(1)) + (m if small else np.float32(0))
    ef = ep1 - (np.float32(1) if small else np.float32(0))
    z = x * x
    x3 = z * x
    pa = fma32(fma32(x, _LOG_A[0], _LOG_A[1]), x, _LOG_A[2])
    pb = fma32(fma32(x, _LOG_B[0], _LOG_B[1]), x, _LOG_B[2])
    pc = fma32(fma32(x, _LOG_C[0], _LOG_C[1]), x, _LOG_C[2])
    t = fma32(fma32(pa, x3, pb), x3, pc)
    r = fma32(t, x3, ef * _LOG_E1)
    r = fma32(z, np.float32(-0.5), x) + r
    return fma32(ef, _LOG_E2, r)


_L1P_DEN0 = _h("417101AD")
_L1P_DEN = (_h("42A6185B"), _h("435DC32D"), _h("439A8CA3"), _h("43586D8A"), _h("42707982"))
_L1P_NUM0 = _h("3EFF40C5")
_L1P_NUM = (_h("40D284FA"), _h("41EF4B9C"), _h("4273CC76"), _h("426473AD"), _h("41A05101"))
_L1P_THRESH = _h("3ED413CD")


@njit(**_opts)
def xla_log1p(x):  # pragma: no cover - numba
    """XLA's float32 log1p (``random._xla_log1p_f32``)."""
    x = _flush(x)
    if not abs(x) < _L1P_THRESH:
        return xla_log(x + np.float32(1))
    x2 = x * x
    den = x + _L1P_DEN0
    for cst in _L1P_DEN:
        den = fma32(den, x, cst)
    num = fma32(np.float32(4.527e-05), x, _L1P_NUM0)
    for cst in _L1P_NUM:
        num = fma32(num, x, cst)
    t = (x * x2) * (num / den)
    return x + fma32(x2, np.float32(-0.5), t)


_EI_LT5 = np.array(
    [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
     -0.00417768164, 0.246640727, 1.50140941], np.float32)  # fmt: skip
_EI_GE5 = np.array(
    [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
     0.00943887047, 1.00167406, 2.83297682], np.float32)  # fmt: skip


@njit(**_opts)
def xla_erf_inv(x, lt5, ge5):  # pragma: no cover - numba
    """XLA's float32 erf_inv (``random._xla_erf_inv_f32``)."""
    x = _flush(x)
    w = -xla_log1p(x * (-x))
    lt = w < np.float32(5)
    if lt:
        w = w - np.float32(2.5)
        cs = lt5
    else:
        w = np.float32(np.sqrt(w)) - np.float32(3)
        cs = ge5
    p = cs[0]
    for i in range(1, 9):
        p = fma32(p, w, cs[i])
    if abs(x) == np.float32(1):
        return x * np.float32(np.inf)
    return p * x


@njit(**_opts)
def _normal(k1, k2, lt5, ge5):  # pragma: no cover - numba
    lo = np.float32(np.nextafter(np.float32(-1), np.float32(0)))
    span = np.float32(1) - lo
    u = max(lo, fma32(_unit(k1, k2), span, lo))
    return np.float32(np.sqrt(2)) * xla_erf_inv(u, lt5, ge5)


@njit(**_opts)
def gamma_one(k1, k2, alpha, log_space, lt5, ge5):  # pragma: no cover - numba
    """One Marsaglia-Tsang sample, as ``_random_dists._gamma_one`` on float32."""
    one = np.float32(1)
    zero = np.float32(0)
    third = np.float32(1.0 / 3.0)
    boost = alpha >= one
    alpha_orig = alpha
    if not boost:
        alpha = alpha + one
    d = alpha - third
    c = third / np.float32(np.sqrt(d))
    key1, key2 = _child(k1, k2, 0)
    sub1, sub2 = _child(k1, k2, 1)
    xx, v, u = zero, one, np.float32(2)
    while True:
        squeeze_ok = u >= fma32(np.float32(-0.0331), xx * xx, one)
        rhs = fma32(xx, np.float32(0.5), d * ((one - v) + xla_log(v)))
        if not (squeeze_ok and xla_log(u) >= rhs):
            break
        nk1, nk2 = _child(key1, key2, 0)
        xk1, xk2 = _child(key1, key2, 1)
        uk1, uk2 = _child(key1, key2, 2)
        key1, key2 = nk1, nk2
        x = zero
        vv = np.float32(-1)
        while vv <= zero:
            a1, a2 = _child(xk1, xk2, 0)
            s1, s2 = _child(xk1, xk2, 1)
            xk1, xk2 = a1, a2
            x = _normal(s1, s2, lt5, ge5)
            vv = fma32(x, c, one)
        xx = x * x
        v = (vv * vv) * vv
        u = _unit(uk1, uk2)
    if log_space:
        ls = xla_log1p(-_unit(sub1, sub2))  # -exponential: -(-log1p(-u))
        lb = zero if (boost or ls == zero) else ls * (one / alpha_orig)
        return (xla_log(d) + xla_log(v)) + lb
    samples = one - _unit(sub1, sub2)
    b = one if boost else np.float32(np.power(samples, one / alpha_orig))
    return (d * v) * b


@njit(**_opts)
def gamma_f32(keys, alphas, m, log_space, lt5, ge5):  # pragma: no cover - numba
    """Samples for ``alphas`` (flat float32), element ``i`` using ``split(keys[i // m], m)[i % m]``."""
    n = alphas.shape[0]
    out = np.empty(n, np.float32)
    for i in range(n):
        b = i // m
        k1, k2 = _child(np.uint64(keys[b, 0]), np.uint64(keys[b, 1]), i - b * m)
        out[i] = gamma_one(k1, k2, alphas[i], log_space, lt5, ge5)
    return out


def sample_f32(keys: np.ndarray, a: np.ndarray, log_space: bool) -> np.ndarray:
    """Gamma samples of float32 ``a`` with keys of shape ``(*b, 2)`` leading ``a``'s dimensions."""
    nb = keys.ndim - 1
    m = math.prod(a.shape[nb:])
    flat_keys = np.ascontiguousarray(keys.reshape(-1, 2), dtype=np.uint32)
    flat_a = np.ascontiguousarray(a.reshape(-1), dtype=np.float32)
    if flat_a.size == 0:
        return np.zeros(a.shape, np.float32)
    out = gamma_f32(flat_keys, flat_a, max(m, 1), bool(log_space), _EI_LT5, _EI_GE5)
    return out.reshape(a.shape)


# ---------------------------------------------------------------------------------------------
# poisson: the per-lane view of ``_random_dists._poisson`` (Knuth below lambda = 10, Hormann's
# transformed rejection above). The composite loops over whole arrays until every lane is done;
# a lane's result only depends on its own draws (uniform(subkey, shape)[j] hashes counter j), so
# each lane can run its own loop.


@njit(**_inl)
def _unit_at(k1, k2, j):  # pragma: no cover - numba
    o1, o2 = threefry(k1, k2, np.uint64(0), np.uint64(j))
    bits = (o1 ^ o2) >> np.uint64(9)
    return np.float32(np.float32(bits) * np.float32(2.0**-23))


@njit(**_inl)
def _lgamma32(x):  # pragma: no cover - numba
    v = np.float64(x)
    if v <= 0.0 and math.isfinite(v) and v == math.floor(v):
        return np.float32(np.inf)
    return np.float32(math.lgamma(v))


@njit(**_opts)
def _poisson_knuth(k1, k2, lam, j):  # pragma: no cover - numba
    k = 0
    log_prod = np.float32(0)
    while log_prod > -lam:
        n1, n2 = _child(k1, k2, 0)
        s1, s2 = _child(k1, k2, 1)
        k1, k2 = n1, n2
        k += 1
        log_prod = log_prod + xla_log(_unit_at(s1, s2, j))
    return k - 1


@njit(**_opts)
def _poisson_rejection(k1, k2, lam, j, iters):  # pragma: no cover - numba
    """With ``iters < 0``: the iteration (1-based) at which this lane first accepts. Otherwise
    the last accepted k within ``iters`` iterations: the composite keeps overwriting a lane's
    result whenever a later draw is accepted too, until every lane of the array has accepted."""
    log_lam = xla_log(lam)
    b = fma32(np.float32(2.53), np.float32(np.sqrt(lam)), np.float32(0.931))
    a = fma32(np.float32(0.02483), b, np.float32(-0.059))
    inv_alpha = np.float32(1.1239) + np.float32(1.1328) / (b - np.float32(3.4))
    v_r = np.float32(0.9277) - np.float32(3.6224) / (b - np.float32(2))
    half = np.float32(0.5)
    k_out = np.float32(-1)
    it = 0
    while iters < 0 or it < iters:
        it += 1
        n1, n2 = _child(k1, k2, 0)
        a1, a2 = _child(k1, k2, 1)
        c1, c2 = _child(k1, k2, 2)
        k1, k2 = n1, n2
        u = _unit_at(a1, a2, j) - half
        v = _unit_at(c1, c2, j)
        us = half - abs(u)
        k = np.float32(math.floor(fma32((np.float32(2) * a) / us + b, u, lam) + np.float32(0.43)))
        s = xla_log((v * inv_alpha) / (a / (us * us) + b))
        t = fma32(k, log_lam, -lam) - _lgamma32(k + np.float32(1))
        accept1 = us >= np.float32(0.07) and v <= v_r
        reject = k < np.float32(0) or (us < np.float32(0.013) and v > us)
        if accept1 or (not reject and s <= t):
            if iters < 0:
                return np.float32(it)
            k_out = k
    return k_out


@njit(**_opts)
def poisson_f32(keys, lams, m):  # pragma: no cover - numba
    """Poisson samples (as float64 holding integers) for flat float32 rates; lane ``i`` uses key
    ``keys[i // m]`` and counter ``i % m``; the lanes of one key share the rejection loop's length."""
    n = lams.shape[0]
    out = np.empty(n, np.float64)
    big = np.float32(1e5)
    for b in range(n // m):
        k1 = np.uint64(keys[b, 0])
        k2 = np.uint64(keys[b, 1])
        total = 0
        for j in range(m):
            lam = lams[b * m + j]
            knuth = lam != lam or lam < np.float32(10)
            total = max(total, int(_poisson_rejection(k1, k2, big if knuth else lam, j, -1)))
        for j in range(m):
            lam = lams[b * m + j]
            if lam == np.float32(0):
                out[b * m + j] = 0.0
            elif lam != lam or lam < np.float32(10):
                out[b * m + j] = _poisson_knuth(k1, k2, lam, j)
            else:
                out[b * m + j] = _poisson_rejection(k1, k2, lam, j, total)
    return out


def sample_poisson(keys: np.ndarray, lam: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Poisson samples of float32 rates ``lam`` with keys of shape ``(*b, 2)`` leading its dims."""
    nb = keys.ndim - 1
    m = math.prod(lam.shape[nb:])
    flat_lam = np.ascontiguousarray(lam.reshape(-1), dtype=np.float32)
    if flat_lam.size == 0:
        return np.zeros(lam.shape, dtype)
    flat_keys = np.ascontiguousarray(keys.reshape(-1, 2), dtype=np.uint32)
    return poisson_f32(flat_keys, flat_lam, max(m, 1)).astype(dtype).reshape(lam.shape)


disk_cache.guard_module_caches([sys.modules[__name__]])
