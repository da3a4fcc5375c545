"""Compiled (numba) float32 gamma, poisson and binomial samplers. Each reproduces, element by
element and bit for bit, its lax composite in ``fjax._random_dists`` (JAX's loops with their key
splits, XLA's float32 ``log``/``log1p``/``erf_inv`` and XLA's fused multiply-adds).

Why a second implementation: each composite is a vmapped ``while_loop`` over the whole batch.
Compiled as a loop (the private ``fma``/``bitcast`` primitives lower to ``rt.fma``/``rt.bitcast``)
it runs fast but takes tens of seconds to compile for every new shape; op by op on the host it
takes about a minute for 10**6 samples. Here each sample (lane) is a scalar loop, compiled once.
The composites stay the reference semantics and the tests check that both agree exactly.

Scalar threefry2x32 runs on uint64 values masked to 32 bits (numba widens uint32 arithmetic). The
float32 fused multiply-add is LLVM's ``fma`` (rounded once, as ``random._fma_impl``).

The rejection samplers' loops split their key once per iteration, the same chain of keys for every
lane of an array: ``_key_chain`` computes it once per key (lanes read it), instead of each lane
hashing the same splits again.
"""

from __future__ import annotations

import functools
import math
import sys

import numpy as np
from numba import njit

# importing the backend package first gives numba a writable cache directory even for a
# read-only install without HOME; its disk_cache seals the object code of these kernels
from fjax.backends.numba import disk_cache
from fjax.backends.numba.runtime import fma as _hw_fma
from fjax.backends.numba.vmath import f32_as_i32, i32_as_f32
from fjax.dtypes import finfo as _finfo
from fjax.dtypes import iinfo

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


@njit(**_inl)
def fma32(a, b, c):  # pragma: no cover - numba
    """float32 a * b + c rounded once (LLVM's fma: the FMA instruction, or libm's fmaf)."""
    return _hw_fma(np.float32(a), np.float32(b), np.float32(c))


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


_LGAMMA_INT = np.array([np.float32(math.lgamma(i)) if i > 0 else np.inf for i in range(4097)], np.float32)


@njit(**_inl)
def _lgamma32(x):  # pragma: no cover - numba
    # the rejection loops ask for lgamma(k + 1) of integer k: a table of the same float32 values
    if x >= np.float32(1) and x <= np.float32(4096) and x == np.floor(x):
        return _LGAMMA_INT[int(x)]
    v = np.float64(x)
    if v <= 0.0 and math.isfinite(v) and v == math.floor(v):
        return np.float32(np.inf)
    return np.float32(math.lgamma(v))


_CHAIN = 64  # iterations of a key chain computed up front; lanes that run longer extend it themselves


@njit(**_opts)
def _key_chain(k1, k2, length, nxt, ia, ib):  # pragma: no cover - numba
    """Row ``t``: the key after iteration ``t`` (``split(rng_t)[nxt]``) and iteration ``t``'s two
    subkeys ``split(rng_t)[ia]``, ``split(rng_t)[ib]`` (``ib < 0``: none), from ``rng_0 = (k1, k2)``."""
    out = np.empty((length, 6), np.uint64)
    for t in range(length):
        n1, n2 = _child(k1, k2, nxt)
        a1, a2 = _child(k1, k2, ia)
        b1, b2 = (np.uint64(0), np.uint64(0)) if ib < 0 else _child(k1, k2, ib)
        out[t, 0], out[t, 1], out[t, 2], out[t, 3], out[t, 4], out[t, 5] = n1, n2, a1, a2, b1, b2
        k1, k2 = n1, n2
    return out


@njit(**_inl)
def _chain_at(chain, t, r1, r2, nxt, ia, ib):  # pragma: no cover - numba
    """Iteration ``t``'s (next key, subkey a, subkey b); ``(r1, r2)`` is the key at iteration ``t``
    (only read past the end of ``chain``)."""
    if t < chain.shape[0]:
        return chain[t, 0], chain[t, 1], chain[t, 2], chain[t, 3], chain[t, 4], chain[t, 5]
    n1, n2 = _child(r1, r2, nxt)
    a1, a2 = _child(r1, r2, ia)
    b1, b2 = (np.uint64(0), np.uint64(0)) if ib < 0 else _child(r1, r2, ib)
    return n1, n2, a1, a2, b1, b2


@njit(**_opts)
def _poisson_knuth(chain, lam, j, max_iters):  # pragma: no cover - numba
    k = 0
    log_prod = np.float32(0)
    r1, r2 = np.uint64(0), np.uint64(0)
    while log_prod > -lam and k < max_iters:
        r1, r2, s1, s2, _, _ = _chain_at(chain, k, r1, r2, 0, 1, -1)
        k += 1
        log_prod = log_prod + xla_log(_unit_at(s1, s2, j))
    return k - 1


@njit(**_opts)
def _poisson_rejection(chain, lam, j, start, iters, k_out):  # pragma: no cover - numba
    """Iterations ``start`` .. ``iters - 1`` (``iters < 0``: until the first acceptance) of the
    rejection loop for one lane; returns (the last accepted k or ``k_out``, iterations run). The
    composite keeps overwriting a lane's result whenever a later draw is accepted too, until every
    lane of the array has accepted."""
    log_lam = xla_log(lam)
    b = fma32(np.float32(2.53), np.float32(np.sqrt(lam)), np.float32(0.931))
    a = fma32(np.float32(0.02483), b, np.float32(-0.059))
    inv_alpha = np.float32(1.1239) + np.float32(1.1328) / (b - np.float32(3.4))
    v_r = np.float32(0.9277) - np.float32(3.6224) / (b - np.float32(2))
    half = np.float32(0.5)
    it = start
    r1, r2 = np.uint64(0), np.uint64(0)
    if start > chain.shape[0]:
        r1, r2 = chain[chain.shape[0] - 1, 0], chain[chain.shape[0] - 1, 1]
        for _t in range(chain.shape[0], start):
            r1, r2 = _child(r1, r2, 0)
    elif start > 0:
        r1, r2 = chain[start - 1, 0], chain[start - 1, 1]
    while iters < 0 or it < iters:
        r1, r2, a1, a2, c1, c2 = _chain_at(chain, it, r1, r2, 0, 1, 2)
        it += 1
        u = _unit_at(a1, a2, j) - half
        v = _unit_at(c1, c2, j)
        us = half - abs(u)
        k = np.float32(np.floor(fma32((np.float32(2) * a) / us + b, u, lam) + np.float32(0.43)))
        s = xla_log((v * inv_alpha) / (a / (us * us) + b))
        t = fma32(k, log_lam, -lam) - _lgamma32(k + np.float32(1))
        accept1 = us >= np.float32(0.07) and v <= v_r
        reject = k < np.float32(0) or (us < np.float32(0.013) and v > us)
        if accept1 or (not reject and s <= t):
            k_out = k
            if iters < 0:
                break
    return k_out, it


@njit(**_opts)
def poisson_f32(keys, lams, m, max_iters, lo, hi):  # pragma: no cover - numba
    """Poisson samples (as float64 holding integers) for flat float32 rates; lane ``i`` uses key
    ``keys[i // m]`` and counter ``i % m``; the lanes of one key share the rejection loop's length.
    As in the composite, both loops stop after ``max_iters`` iterations (Knuth's count then caps
    the sample at ``max_iters - 1``; a rejection lane never accepted keeps -1), and a rejection
    sample converts to the integer dtype as XLA converts floats: NaN to 0, saturating at the
    dtype's bounds ``[lo, hi]``. A Knuth lane's ``k - 1`` is integer arithmetic in the composite
    (-1 wraps in unsigned dtypes): it is left to the caller's cast."""
    n = lams.shape[0]
    out = np.empty(n, np.float64)
    first = np.empty(m, np.float32)
    first_it = np.empty(m, np.int64)
    big = np.float32(1e5)
    for b in range(n // m):
        chain = _key_chain(np.uint64(keys[b, 0]), np.uint64(keys[b, 1]), _CHAIN, 0, 1, 2)
        total = 0
        any_rejection = False
        for j in range(m):
            lam = lams[b * m + j]
            any_rejection = any_rejection or not (lam != lam or lam < np.float32(10))
        for j in range(m if any_rejection else 0):  # the loop's length only matters to rejection lanes
            lam = lams[b * m + j]
            knuth = lam != lam or lam < np.float32(10)
            first[j], first_it[j] = _poisson_rejection(chain, big if knuth else lam, j, 0, -1, np.float32(-1))
            total = max(total, first_it[j])
        total = min(total, max_iters)
        for j in range(m):
            lam = lams[b * m + j]
            if lam == np.float32(0):
                out[b * m + j] = 0.0
            elif lam != lam or lam < np.float32(10):
                out[b * m + j] = _poisson_knuth(chain, lam, j, max_iters)
            else:
                if first_it[j] > total:  # not accepted within max_iters iterations
                    k = np.float32(-1)
                else:  # the lane's first acceptance is known: only the iterations after it remain
                    k = _poisson_rejection(chain, lam, j, first_it[j], total, first[j])[0]
                out[b * m + j] = 0.0 if k != k else min(max(np.float64(k), lo), hi)
    return out


def sample_poisson(keys: np.ndarray, lam: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Poisson samples of float32 rates ``lam`` with keys of shape ``(*b, 2)`` leading its dims."""
    nb = keys.ndim - 1
    m = math.prod(lam.shape[nb:])
    flat_lam = np.ascontiguousarray(lam.reshape(-1), dtype=np.float32)
    if flat_lam.size == 0:
        return np.zeros(lam.shape, dtype)
    flat_keys = np.ascontiguousarray(keys.reshape(-1, 2), dtype=np.uint32)
    max_iters, lo, hi = _poisson_limits(np.dtype(dtype))
    return poisson_f32(flat_keys, flat_lam, max(m, 1), max_iters, lo, hi).astype(dtype).reshape(lam.shape)


@functools.cache
def _poisson_limits(dtype: np.dtype) -> tuple[int, float, float]:
    """The composite's loop bound (``iinfo(dtype).max``, or int32's above 32 bits) and the float
    range that converts into ``dtype`` (the float below int64/uint64's max, which rounds up past it);
    ml_dtypes' iinfo, which also knows int4/int2/int1."""
    info = iinfo(dtype)
    max_iters = int(info.max) if info.bits <= 32 else int(np.iinfo(np.int32).max)
    hi = float(info.max)
    if info.bits == 64:
        hi = float(np.nextafter(np.float64(info.max), 0.0))
    return max_iters, float(info.min), hi


# ---------------------------------------------------------------------------------------------
# binomial: the per-lane view of ``_random_dists._binomial`` in float32 (inversion by geometric
# waiting times for count * q <= 10, BTRS above), bit for bit. Both loops run over every lane in
# the composite: the inversion loop stops per lane; BTRS overwrites a lane's result whenever a later
# draw is accepted, until every lane (those on the inversion branch too, with count 1e4, q 0.5)
# has accepted once.

_STIRLING32 = np.array(
    [0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509, 0.0166446911898211,
     0.0138761288230707, 0.0118967099458917, 0.0104112652619720, 0.00925546218271273, 0.00833056343336287],
    np.float32,
)  # fmt: skip


@njit(**_inl)
def _stirling_tail32(k):  # pragma: no cover - numba
    kc = min(max(k, np.float32(0)), np.float32(9)) if k == k else k
    kp1 = kc + np.float32(1)
    kp1sq = kp1 * kp1
    inner = np.float32(1.0 / 360) - np.float32(1.0 / 1260) / kp1sq
    approx = (np.float32(1.0 / 12) - inner / kp1sq) / kp1
    if k <= np.float32(9):
        return _STIRLING32[int(math.floor(kc))]
    return approx


@njit(**_opts)
def _binomial_inversion(chain, count, q, j):  # pragma: no cover - numba
    log1mq = xla_log1p(-q)
    num_geom = np.float32(0)
    geom_sum = np.float32(0)
    r1, r2 = np.uint64(0), np.uint64(0)
    t = 0
    while geom_sum <= count:
        r1, r2, s1, s2, _, _ = _chain_at(chain, t, r1, r2, 1, 0, -1)
        t += 1
        num_geom = num_geom + np.float32(1)
        geom_sum = geom_sum + np.float32(np.ceil(xla_log(_unit_at(s1, s2, j)) / log1mq))
    return num_geom - np.float32(1)


@njit(**_opts)
def _btrs(chain, count, prob, j, start, iters, k_out):  # pragma: no cover - numba
    """As ``_poisson_rejection``: iterations ``start`` .. ``iters - 1`` (``iters < 0``: until the
    first acceptance); returns (the last accepted k or ``k_out``, iterations run)."""
    one = np.float32(1)
    half = np.float32(0.5)
    stddev = np.float32(np.sqrt((count * prob) * (one - prob)))
    b = fma32(np.float32(2.53), stddev, np.float32(1.15))
    a = fma32(np.float32(0.01), prob, fma32(np.float32(0.0248), b, np.float32(-0.0873)))
    c = fma32(count, prob, half)
    v_r = np.float32(0.92) - np.float32(4.2) / b
    r = prob / (one - prob)
    alpha = (np.float32(2.83) + np.float32(5.1) / b) * stddev
    m = np.float32(np.floor((count + one) * prob))
    # the loop-invariant terms of the bound (the same float32 operations, computed once)
    cm1 = (count - m) + one
    log_m = xla_log((m + one) / (r * cm1))
    tail_m = _stirling_tail32(m)
    tail_cm = _stirling_tail32(count - m)
    it = start
    r1, r2 = np.uint64(0), np.uint64(0)
    if start > chain.shape[0]:
        r1, r2 = chain[chain.shape[0] - 1, 0], chain[chain.shape[0] - 1, 1]
        for _ in range(chain.shape[0], start):
            r1, r2 = _child(r1, r2, 0)
    elif start > 0:
        r1, r2 = chain[start - 1, 0], chain[start - 1, 1]
    while iters < 0 or it < iters:
        r1, r2, a1, a2, c1, c2 = _chain_at(chain, it, r1, r2, 0, 1, 2)
        it += 1
        u = _unit_at(a1, a2, j) - half
        v = _unit_at(c1, c2, j)
        us = half - abs(u)
        accept1 = us >= np.float32(0.07) and v <= v_r
        k = np.float32(np.floor(fma32((np.float32(2) * a) / us + b, u, c)))
        reject = k < np.float32(0) or k > count
        v = xla_log((v * alpha) / (a / (us * us) + b))
        ck1 = (count - k) + one
        ub = fma32(m + half, log_m, (count + one) * xla_log(cm1 / ck1))
        ub = fma32(k + half, xla_log((r * ck1) / (k + one)), ub)
        ub = ub + tail_m
        ub = ub + tail_cm
        ub = ub - _stirling_tail32(k)
        ub = ub - _stirling_tail32(count - k)
        if accept1 or (not reject and v <= ub):
            k_out = k
            if iters < 0:
                break
    return k_out, it


@njit(**_opts)
def binomial_f32(keys, counts, probs, m):  # pragma: no cover - numba
    """Binomial samples (float32) for flat float32 ``counts`` and ``probs``; lane ``i`` uses key
    ``keys[i // m]`` and counter ``i % m`` (``_random_dists._binomial``'s branches and edge cases)."""
    n = counts.shape[0]
    out = np.empty(n, np.float32)
    first = np.empty(m, np.float32)
    first_it = np.empty(m, np.int64)
    one = np.float32(1)
    for bk in range(n // m):
        k1, k2 = np.uint64(keys[bk, 0]), np.uint64(keys[bk, 1])
        chain3 = _key_chain(k1, k2, _CHAIN, 0, 1, 2)  # BTRS: rng, sk0, sk1 = split(rng, 3)
        chain2 = _key_chain(k1, k2, _CHAIN, 1, 0, -1)  # inversion: subkey, rng = split(rng)
        total = 0
        any_btrs = False
        for j in range(m):
            i = bk * m + j
            count, p = counts[i], probs[i]
            q = p if p < np.float32(0.5) else one - p
            if q != q or q < np.float32(0):
                q = np.float32(0.01)
            any_btrs = any_btrs or not (count != count or count < np.float32(0) or count * q <= np.float32(10))
        for j in range(m if any_btrs else 0):  # the loop's length only matters to BTRS lanes
            i = bk * m + j
            count, p = counts[i], probs[i]
            q = p if p < np.float32(0.5) else one - p
            nan_or_neg = count != count or count < np.float32(0)
            if q != q or q < np.float32(0):
                q = np.float32(0.01)
            inversion = nan_or_neg or count * q <= np.float32(10)
            cb = np.float32(1e4) if inversion else np.float32(np.floor(count))
            qb = np.float32(0.5) if inversion else q
            first[j], first_it[j] = _btrs(chain3, cb, qb, j, 0, -1, np.float32(-1))
            total = max(total, first_it[j])
        for j in range(m):
            i = bk * m + j
            count, p = counts[i], probs[i]
            p_lt_half = p < np.float32(0.5)
            q = p if p_lt_half else one - p
            nan_or_neg = count != count or count < np.float32(0)
            count_inf = abs(count) == np.float32(np.inf)
            q_nan = q != q
            q_neg = q < np.float32(0)
            if q_nan or q_neg:
                q = np.float32(0.01)
            inversion = nan_or_neg or count * q <= np.float32(10)
            cf = np.float32(np.floor(count))
            if inversion:
                s = _binomial_inversion(chain2, cf, q, j)  # a NaN or negative count draws nothing
            else:
                s = _btrs(chain3, cf, q, j, first_it[j], total, first[j])[0]
            if q_neg or q_nan or nan_or_neg:
                s = np.float32(np.nan)
            elif count_inf:
                s = np.float32(np.inf)
            keep = p_lt_half or nan_or_neg or q_nan or count_inf
            out[i] = s if keep else cf - s
    return out


def sample_binomial(keys: np.ndarray, count: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """float32 binomial samples with keys of shape ``(*b, 2)`` leading the (equal) shapes of the
    float32 ``count`` and ``prob``."""
    nb = keys.ndim - 1
    m = math.prod(prob.shape[nb:])
    flat_p = np.ascontiguousarray(prob.reshape(-1), dtype=np.float32)
    if flat_p.size == 0:
        return np.zeros(prob.shape, np.float32)
    flat_c = np.ascontiguousarray(count.reshape(-1), dtype=np.float32)
    flat_keys = np.ascontiguousarray(keys.reshape(-1, 2), dtype=np.uint32)
    return binomial_f32(flat_keys, flat_c, flat_p, max(m, 1)).reshape(prob.shape)


disk_cache.guard_module_caches([sys.modules[__name__]])
