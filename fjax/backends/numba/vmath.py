"""Branch-free, vectorizable math functions for numba-compiled fused loops.

numba lowers ``np.exp``/``np.tanh``/``np.sin`` inside loops to scalar libm calls, which stop
LLVM's loop vectorizer (llvmlite carries no SVML). The functions here are written only with
arithmetic, comparisons that become selects, integer bit tricks (the ``2**n`` scale of ``exp`` is
an int bit-cast to float through a tiny ``numba.extending.intrinsic``) and constant-table loads
that become gathers, so a loop calling them vectorizes. Each function exists for float32
(``*_f32``, computed in float32 except where noted) and float64 (``*_f64``).

Algorithms:

- ``exp``: Cephes range reduction ``x = n ln2 + r`` (Cody-Waite two-part ln2), Cephes
  polynomial (f32) / Pade form (f64); ``2**n`` applied as two exact power-of-two factors so that
  overflow gives inf and the denormal range is rounded once.
- ``log``: musl/fdlibm reduction ``x = 2**k m``, ``m`` in [sqrt(1/2), sqrt(2)), ``s = f/(2+f)``
  and the Lg1..Lg7 (f64) / Lg1..Lg4 (f32) minimax polynomial. Denormals are pre-scaled.
- ``log1p``: Goldberg's ``log(u) * x / (u - 1)`` with ``u = 1 + x``; ``expm1``: ``2**n (e**r - 1) +
  (2**n - 1)`` with a Taylor polynomial for ``e**r - 1`` (the f32 version evaluates the f64 one).
- ``tanh``: Cephes odd polynomial for ``|x| < 0.625``, ``1 - 2/(exp(2|x|) + 1)`` beyond (f32: with
  the exp inlined for ``2|x|`` clamped to [0, 20], no overflow/underflow/nan handling needed).
- ``logistic``: ``exp(-|x|)`` based, stable on both tails.
- ``sin``/``cos``: exact Payne-Hanek style reduction for every finite input: with
  ``|x| = m 2**E`` (``m`` an integer), ``x (2/pi) mod 4 = m T(E) mod 4`` where ``T(E) = 2**E (2/pi)
  mod 4`` is tabulated per exponent and split into parts short enough that each product with
  (a half of) ``m`` is exact in float64; the quadrant and remainder then feed the Cephes float64
  sin/cos polynomials. So huge arguments are as accurate as small ones (no libm call, loads from
  the table become gathers). ``2/pi`` is computed at import with integer arithmetic (Machin).
- ``sin_fast_f32``/``cos_fast_f32``: for |x| < 2**20 (and inf, nan) only, about 3x cheaper: a
  Cody-Waite reduction in float64 to [-pi/2, pi/2] and one odd polynomial; ``trig_oob_f32`` flags
  the other inputs, which callers recompute with ``sin_f32``/``cos_f32`` (the loop-nest renderer
  does so per tile). Same bound as the exact ones (checked for every float32 |x| < 2**20).
- ``erf`` (f32 only): the rational approximation Eigen/XLA use for float32, on ``[-4, 4]``.

Special values: 0 (sign kept where the function is odd), +-inf, nan, huge and denormal inputs
give what numpy gives (checked by ``tests/test_vmath.py``).

The functions are compiled with ``fastmath={"contract"}`` and nothing else: LLVM may fuse ``a * b +
c`` into one FMA where the target has one (the polynomials run ~1.5x faster), which only removes a
rounding; the algorithms never rely on an intermediate product being rounded, and NaN/inf/signed
zero semantics are untouched. A machine without FMA may therefore differ in the last bit; the bounds
below were measured with FMA contraction (this machine) and without it (before it was enabled).

Maximum error in ULPs against numpy (numpy's own error is <= ~1 ulp), measured by
``tests/test_vmath.py`` over 2M log-uniform samples of the whole finite range per function and
dtype plus hypothesis examples and the special values (the tests assert these bounds)::

    function   float32   float64
    exp        1         2
    log        1         1
    log1p      2         2
    expm1      1         2
    tanh       2         2
    logistic   2         2
    sin        1         2
    cos        1         2
    erf        8         (the renderer uses math.erf)
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = [
    "exp_f32",
    "exp_f64",
    "log_f32",
    "log_f64",
    "log1p_f32",
    "log1p_f64",
    "expm1_f32",
    "expm1_f64",
    "tanh_f32",
    "tanh_f64",
    "logistic_f32",
    "logistic_f64",
    "sin_f32",
    "sin_f64",
    "cos_f32",
    "cos_f64",
    "sin_fast_f32",
    "cos_fast_f32",
    "trig_oob_f32",
    "sin_call_f32",
    "cos_call_f32",
    "TRIG_FAST_MAX_F32",
    "erf_f32",
    "ULP_BOUNDS",
]

# The bounds tests/test_vmath.py asserts (keep in sync with the module docstring).
ULP_BOUNDS = {
    ("exp", "float32"): 1,
    ("exp", "float64"): 2,
    ("log", "float32"): 1,
    ("log", "float64"): 1,
    ("log1p", "float32"): 2,
    ("log1p", "float64"): 2,
    ("expm1", "float32"): 1,
    ("expm1", "float64"): 2,
    ("tanh", "float32"): 2,
    ("tanh", "float64"): 2,
    ("logistic", "float32"): 2,
    ("logistic", "float64"): 2,
    ("sin", "float32"): 1,
    ("sin", "float64"): 2,
    ("cos", "float32"): 1,
    ("cos", "float64"): 2,
    ("erf", "float32"): 8,
}

# error_model="numpy": float division by zero gives inf/nan instead of raising.
# forceinline marks the public functions ``alwaysinline`` for LLVM: left to LLVM's cost model, the
# larger ones (tanh and expm1 with exp inlined into them, float64 sin/cos) stayed calls, and a call
# in a loop keeps the loop scalar (tanh_f32 ran at ~13 ns/element instead of ~1).
# tests/test_vmath.py::test_loop_vectorizes checks every function leaves vector code and no call.
# fastmath "contract" only (FMA fusion; see the module docstring).
_opts = dict(nogil=True, cache=True, error_model="numpy", forceinline=True, fastmath={"contract"})
# small internal helpers are inlined at numba IR level
_inl = dict(_opts, inline="always")

# ---------------------------------------------------------------------------------------------
# bit casts


def _bitcast_intrinsic(src: types.Type, dst: types.Type, llty: ir.Type):
    @intrinsic
    def cast(typingctx, val):  # noqa: ARG001
        sig = dst(src)

        def codegen(context, builder, signature, args):  # noqa: ARG001
            return builder.bitcast(args[0], llty)

        return sig, codegen

    return cast


i32_as_f32 = _bitcast_intrinsic(types.int32, types.float32, ir.FloatType())
f32_as_i32 = _bitcast_intrinsic(types.float32, types.int32, ir.IntType(32))
i64_as_f64 = _bitcast_intrinsic(types.int64, types.float64, ir.DoubleType())
f64_as_i64 = _bitcast_intrinsic(types.float64, types.int64, ir.IntType(64))

_f32 = np.float32
_f64 = np.float64
_i32 = np.int32
_i64 = np.int64

F32_ZERO = _f32(0.0)
F32_HALF = _f32(0.5)
F32_ONE = _f32(1.0)
F32_TWO = _f32(2.0)
F32_NAN = _f32(np.nan)
F32_INF = _f32(np.inf)

# ---------------------------------------------------------------------------------------------
# exp

_EXPF_HI = _f32(88.8)
_EXPF_LO = _f32(-104.0)
_LOG2EF = _f32(1.44269504088896341)
_EXPF_C1 = _f32(0.693359375)
_EXPF_C2 = _f32(-2.12194440e-4)
_EXPF_P0 = _f32(1.9875691500e-4)
_EXPF_P1 = _f32(1.3981999507e-3)
_EXPF_P2 = _f32(8.3334519073e-3)
_EXPF_P3 = _f32(4.1665795894e-2)
_EXPF_P4 = _f32(1.6666665459e-1)
_EXPF_P5 = _f32(5.0000001201e-1)


@njit(**_opts)
def exp_f32(x):
    xc = _EXPF_HI if x > _EXPF_HI else x
    xc = _EXPF_LO if xc < _EXPF_LO else xc
    xc = xc if xc == xc else F32_ZERO  # keep nan out of the float->int conversion
    n = np.floor(xc * _LOG2EF + F32_HALF)
    r = xc - n * _EXPF_C1
    r = r - n * _EXPF_C2
    p = _EXPF_P0 * r + _EXPF_P1
    p = p * r + _EXPF_P2
    p = p * r + _EXPF_P3
    p = p * r + _EXPF_P4
    p = p * r + _EXPF_P5
    p = p * (r * r) + r + F32_ONE
    ni = _i32(n)
    n1 = _i32(ni >> 1)
    n2 = _i32(ni - n1)
    s1 = i32_as_f32(_i32((n1 + 127) << 23))
    s2 = i32_as_f32(_i32((n2 + 127) << 23))
    y = (p * s1) * s2
    return x if x != x else y


_EXP_HI = 709.9
_EXP_LO = -745.2
_LOG2E = 1.4426950408889634073599
_EXP_C1 = 6.93145751953125e-1
_EXP_C2 = 1.42860682030941723212e-6
_EXP_P0 = 1.26177193074810590878e-4
_EXP_P1 = 3.02994407707441961300e-2
_EXP_P2 = 9.99999999999999999910e-1
_EXP_Q0 = 3.00198505138664455042e-6
_EXP_Q1 = 2.52448340349684104192e-3
_EXP_Q2 = 2.27265548208155028766e-1
_EXP_Q3 = 2.00000000000000000009e0


@njit(**_opts)
def exp_f64(x):
    xc = _EXP_HI if x > _EXP_HI else x
    xc = _EXP_LO if xc < _EXP_LO else xc
    xc = xc if xc == xc else 0.0
    n = np.floor(xc * _LOG2E + 0.5)
    r = xc - n * _EXP_C1
    r = r - n * _EXP_C2
    xx = r * r
    px = r * ((_EXP_P0 * xx + _EXP_P1) * xx + _EXP_P2)
    q = ((_EXP_Q0 * xx + _EXP_Q1) * xx + _EXP_Q2) * xx + _EXP_Q3
    p = 1.0 + 2.0 * (px / (q - px))
    ni = _i64(n)
    n1 = ni >> 1
    n2 = ni - n1
    s1 = i64_as_f64((n1 + 1023) << 52)
    s2 = i64_as_f64((n2 + 1023) << 52)
    y = (p * s1) * s2
    return x if x != x else y


# ---------------------------------------------------------------------------------------------
# log

_LOGF_TINY = _f32(1.17549435e-38)
_LOGF_SCALE = _f32(33554432.0)  # 2**25
_LOGF_LN2_HI = _f32(6.9313812256e-01)
_LOGF_LN2_LO = _f32(9.0580006145e-06)
_LOGF_LG1 = _f32(0.66666662693)
_LOGF_LG2 = _f32(0.40000972152)
_LOGF_LG3 = _f32(0.28498786688)
_LOGF_LG4 = _f32(0.24279078841)


@njit(**_opts)
def log_f32(x):
    tiny = x < _LOGF_TINY
    xs = x * _LOGF_SCALE if tiny else x
    kadj = _i32(-25) if tiny else _i32(0)
    ix = _i32(f32_as_i32(xs) - 0x3F3504F3)
    k = _i32((ix >> 23) + kadj)
    m = i32_as_f32(_i32((ix & 0x007FFFFF) + 0x3F3504F3))
    f = m - F32_ONE
    s = f / (F32_TWO + f)
    z = s * s
    w = z * z
    t1 = w * (_LOGF_LG2 + w * _LOGF_LG4)
    t2 = z * (_LOGF_LG1 + w * _LOGF_LG3)
    rr = t2 + t1
    hfsq = F32_HALF * f * f
    dk = _f32(k)
    y = dk * _LOGF_LN2_HI - ((hfsq - (s * (hfsq + rr) + dk * _LOGF_LN2_LO)) - f)
    y = F32_NAN if x < F32_ZERO else y
    y = -F32_INF if x == F32_ZERO else y
    y = x if x == F32_INF else y
    return x if x != x else y


_LOG_TINY = 2.2250738585072014e-308
_LOG_SCALE = 18014398509481984.0  # 2**54
_LOG_LN2_HI = 6.93147180369123816490e-01
_LOG_LN2_LO = 1.90821492927058770002e-10
_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01
_SQRTHALF_BITS = 0x3FE6A09E667F3BCD
_MANT_MASK = 0x000FFFFFFFFFFFFF


@njit(**_opts)
def log_f64(x):
    tiny = x < _LOG_TINY
    xs = x * _LOG_SCALE if tiny else x
    kadj = -54 if tiny else 0
    ix = f64_as_i64(xs) - _SQRTHALF_BITS
    k = (ix >> 52) + kadj
    m = i64_as_f64((ix & _MANT_MASK) + _SQRTHALF_BITS)
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (_LG2 + w * (_LG4 + w * _LG6))
    t2 = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7)))
    rr = t2 + t1
    hfsq = 0.5 * f * f
    dk = _f64(k)
    y = dk * _LOG_LN2_HI - ((hfsq - (s * (hfsq + rr) + dk * _LOG_LN2_LO)) - f)
    y = np.nan if x < 0.0 else y
    y = -np.inf if x == 0.0 else y
    y = x if x == np.inf else y
    return x if x != x else y


@njit(**_opts)
def log1p_f32(x):
    u = F32_ONE + x
    d = u - F32_ONE
    y = log_f32(u) * (x / d)
    y = x if d == F32_ZERO else y
    return x if x == F32_INF else y


@njit(**_opts)
def log1p_f64(x):
    u = 1.0 + x
    d = u - 1.0
    y = log_f64(u) * (x / d)
    y = x if d == 0.0 else y
    return x if x == np.inf else y


# ---------------------------------------------------------------------------------------------
# expm1

_EM_T = tuple(1.0 / math.factorial(k) for k in range(2, 17))
(_T2, _T3, _T4, _T5, _T6, _T7, _T8, _T9, _T10, _T11, _T12, _T13, _T14, _T15, _T16) = _EM_T


@njit(**_inl)
def _expm1_small(r):
    # Taylor series to r**16 (|r| <= ln2/2): r + r*r*(1/2 + r/6 + ...)
    p = _T16 * r + _T15
    p = p * r + _T14
    p = p * r + _T13
    p = p * r + _T12
    p = p * r + _T11
    p = p * r + _T10
    p = p * r + _T9
    p = p * r + _T8
    p = p * r + _T7
    p = p * r + _T6
    p = p * r + _T5
    p = p * r + _T4
    p = p * r + _T3
    p = p * r + _T2
    return r + (r * r) * p


@njit(**_opts)
def expm1_f64(x):
    # e**x - 1 = 2**n (e**r - 1) + (2**n - 1), with e**r - 1 from the rational form (|r| <= ln2/2)
    xc = 710.0 if x > 710.0 else x
    xc = -50.0 if xc < -50.0 else xc
    xc = xc if xc == xc else 0.0
    n = np.floor(xc * _LOG2E + 0.5)
    r = xc - n * _EXP_C1
    r = r - n * _EXP_C2
    em = _expm1_small(r)
    ni = _i64(n)
    n1 = ni >> 1
    s1 = i64_as_f64((n1 + 1023) << 52)
    s2 = i64_as_f64((ni - n1 + 1023) << 52)
    s = s1 * s2
    y = em * s + (s - 1.0) if ni < 54 else ((em + 1.0) * s1) * s2
    y = x if x == 0.0 else y
    return x if x != x else y


@njit(**_opts)
def expm1_f32(x):
    return _f32(expm1_f64(_f64(x)))


# ---------------------------------------------------------------------------------------------
# tanh and logistic

_THF_CUT = _f32(0.625)
_THF_P0 = _f32(-5.70498872745e-3)
_THF_P1 = _f32(2.06390887954e-2)
_THF_P2 = _f32(-5.37397155531e-2)
_THF_P3 = _f32(1.33314422036e-1)
_THF_P4 = _f32(-3.33332819422e-1)


_THF_BIG = _f32(20.0)  # tanh(10) rounds to 1


@njit(**_opts)
def tanh_f32(x):
    ax = abs(x)
    z = x * x
    p = _THF_P0 * z + _THF_P1
    p = p * z + _THF_P2
    p = p * z + _THF_P3
    p = p * z + _THF_P4
    small = p * z * x + x
    # exp(2|x|) for 2|x| in [0, 20] (the clamp also keeps nan out of the float->int conversion):
    # exp_f32 without its overflow, underflow and nan handling, one power-of-two scale
    t = ax + ax
    t = t if t < _THF_BIG else _THF_BIG
    n = np.floor(t * _LOG2EF + F32_HALF)
    r = t - n * _EXPF_C1
    r = r - n * _EXPF_C2
    q = _EXPF_P0 * r + _EXPF_P1
    q = q * r + _EXPF_P2
    q = q * r + _EXPF_P3
    q = q * r + _EXPF_P4
    q = q * r + _EXPF_P5
    q = q * (r * r) + r + F32_ONE
    e = q * i32_as_f32(_i32((_i32(n) + 127) << 23))
    big = F32_ONE - F32_TWO / (e + F32_ONE)
    big = -big if x < F32_ZERO else big
    y = small if ax < _THF_CUT else big
    y = x if x == F32_ZERO else y  # keeps the sign of zero
    return x if x != x else y


_TH_P0 = -9.64399179425052238628e-1
_TH_P1 = -9.92877231001918586564e1
_TH_P2 = -1.61468768441708447952e3
_TH_Q0 = 1.12811678491632931402e2
_TH_Q1 = 2.23548839060100448583e3
_TH_Q2 = 4.84406305325125486048e3


@njit(**_opts)
def tanh_f64(x):
    ax = abs(x)
    z = x * x
    p = (_TH_P0 * z + _TH_P1) * z + _TH_P2
    q = ((z + _TH_Q0) * z + _TH_Q1) * z + _TH_Q2
    small = x + x * z * (p / q)
    e = exp_f64(ax + ax)
    big = 1.0 - 2.0 / (e + 1.0)
    big = -big if x < 0.0 else big
    y = small if ax < 0.625 else big
    return x if x == 0.0 else y  # keeps the sign of zero


@njit(**_opts)
def logistic_f32(x):
    e = exp_f32(-abs(x))
    d = F32_ONE + e
    return F32_ONE / d if x >= F32_ZERO else e / d


@njit(**_opts)
def logistic_f64(x):
    e = exp_f64(-abs(x))
    d = 1.0 + e
    return 1.0 / d if x >= 0.0 else e / d


# ---------------------------------------------------------------------------------------------
# sin and cos: exact argument reduction through per-exponent tables of 2**E * 2/pi mod 4


def _two_over_pi_fixed(bits: int) -> int:
    """floor(2/pi * 2**bits), by Machin's formula in integer arithmetic."""
    guard = 64
    one = 1 << (bits + guard)

    def atan_inv(n: int) -> int:
        total, term, k, sign, n2 = 0, one // n, 1, 1, n * n
        while term:
            total += sign * (term // k)
            term //= n2
            k += 2
            sign = -sign
        return total

    pi = 16 * atan_inv(5) - 4 * atan_inv(239)
    return ((2 * one * one) // pi) >> guard


def _reduction_table(nexp: int, bias_plus_mant: int, min_e: int, nparts: int, part_bits: int) -> np.ndarray:
    """Row ``idx`` (the biased exponent field, denormals use 1) holds ``T(E) = 2**E * 2/pi mod 4``
    for ``E = max(idx - bias_plus_mant, min_e)``, split from its leading bit into ``nparts``
    float64 parts of ``part_bits`` bits each."""
    precision = nparts * part_bits + 8
    max_e = nexp - 1 - bias_plus_mant
    total = precision - min_e + max_e + 8
    tpi = _two_over_pi_fixed(total)  # 2/pi * 2**total
    table = np.zeros((nexp + 1, nparts), np.float64)
    frac_bits = precision - min_e  # T is held as an integer multiple of 2**-frac_bits
    for idx in range(1, nexp):
        e = max(idx - bias_plus_mant, min_e)
        t = (tpi >> (total - frac_bits - e)) % (4 << frac_bits)
        lead = t.bit_length()
        for i in range(nparts):
            hi = lead - i * part_bits
            lo = hi - part_bits
            chunk = (t >> lo) & ((1 << part_bits) - 1) if lo >= 0 else (t << -lo) & ((1 << part_bits) - 1)
            table[idx, i] = math.ldexp(float(chunk), lo - frac_bits)
    return table


# float32: |x| = m 2**E, m < 2**24, E = idx - 150; three 29-bit parts (m * part is exact)
_RED_F32 = _reduction_table(255, 150, -149, 3, 29)
# float64: m < 2**53 is split into 27 + 26 bits; five 26-bit parts. Exponents below -200 use the
# row of -200 and a final power-of-two scale (no wrap-around happens there).
_RED_F64 = _reduction_table(2047, 1075, -200, 5, 26)
_RED_F64_MIN_IDX = 1075 - 200

_PIO2 = 1.5707963267948966192313
_PIO2_LO = 6.123233995736766e-17
_PIO4 = 0.78539816339744830962
_S0 = 1.58962301576546568060e-10
_S1 = -2.50507477628578072866e-8
_S2 = 2.75573136213857245213e-6
_S3 = -1.98412698295895385996e-4
_S4 = 8.33333333332211858878e-3
_S5 = -1.66666666666666307295e-1
_C0 = -1.13585365213876817300e-11
_C1 = 2.08757008419747316778e-9
_C2 = -2.75573141792967388112e-7
_C3 = 2.48015872888517045348e-5
_C4 = -1.38888888888730564116e-3
_C5 = 4.16666666666665929218e-2


@njit(**_inl)
def _sin_poly(z):
    zz = z * z
    return z + z * zz * (((((_S0 * zz + _S1) * zz + _S2) * zz + _S3) * zz + _S4) * zz + _S5)


@njit(**_inl)
def _cos_poly(z):
    zz = z * z
    return 1.0 - 0.5 * zz + zz * zz * (((((_C0 * zz + _C1) * zz + _C2) * zz + _C3) * zz + _C4) * zz + _C5)


@njit(**_inl)
def _reduce_f32(ax):
    """|x| (float32, finite) -> (quadrant, remainder in radians as float64)."""
    bits = f32_as_i32(ax)
    ex = (bits >> 23) & 0xFF
    mant = bits & 0x007FFFFF
    m = _f64(mant | 0x00800000 if ex != 0 else mant)
    idx = ex if ex != 0 else 1
    p0 = m * _RED_F32[idx, 0]
    p0 = p0 - 4.0 * np.floor(p0 * 0.25)
    p1 = m * _RED_F32[idx, 1]
    p2 = m * _RED_F32[idx, 2]
    j = np.floor(p0 + p1 + 0.5)
    r = ((p0 - j) + p1) + p2
    z = r * _PIO2
    small = _f64(ax) < _PIO4
    q = _i64(0) if small else _i64(j) & 3
    return q, (_f64(ax) if small else z)


@njit(**_inl)
def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@njit(**_inl)
def _reduce_f64(ax):
    """|x| (float64, finite) -> (quadrant, remainder in radians)."""
    bits = f64_as_i64(ax)
    ex = (bits >> 52) & 0x7FF
    mant = bits & _MANT_MASK
    mi = mant | (1 << 52) if ex != 0 else mant
    idx = ex if ex != 0 else 1
    low = idx < _RED_F64_MIN_IDX
    scale = i64_as_f64((idx - _RED_F64_MIN_IDX + 1023) << 52) if low else 1.0
    row = _RED_F64_MIN_IDX if low else idx
    mh = _f64(mi & ~((1 << 26) - 1))
    ml = _f64(mi & ((1 << 26) - 1))
    hi = 0.0
    lo = 0.0
    for i in range(5):
        t = _RED_F64[row, i]
        a = mh * t
        a = a - 4.0 * np.floor(a * 0.25)
        b = ml * t
        b = b - 4.0 * np.floor(b * 0.25)
        hi, e1 = _two_sum(hi, a)
        hi, e2 = _two_sum(hi, b)
        lo = lo + (e1 + e2)
        hi = hi - 4.0 * np.floor(hi * 0.25)
    j = np.floor(hi + lo + 0.5)
    hi = hi - j
    r, rlo = _two_sum(hi, lo)
    r = r * scale
    rlo = rlo * scale
    z = r * _PIO2 + (rlo * _PIO2 + r * _PIO2_LO)
    small = ax < _PIO4
    q = _i64(0) if small else _i64(j) & 3
    return q, (ax if small else z)


@njit(**_inl)
def _sin_from(q, z):
    s = _sin_poly(z)
    c = _cos_poly(z)
    v = s if (q & 1) == 0 else c
    return -v if q >= 2 else v


@njit(**_inl)
def _cos_from(q, z):
    s = _sin_poly(z)
    c = _cos_poly(z)
    v = c if (q & 1) == 0 else s
    return -v if (q == 1 or q == 2) else v


@njit(**_opts)
def sin_f32(x):
    ax = abs(x)
    fin = ax < F32_INF
    q, z = _reduce_f32(ax if fin else F32_ZERO)
    v = _f32(_sin_from(q, z))
    v = -v if x < F32_ZERO else v
    v = x if x == F32_ZERO else v
    return v if fin else x - x


@njit(**_opts)
def cos_f32(x):
    ax = abs(x)
    fin = ax < F32_INF
    q, z = _reduce_f32(ax if fin else F32_ZERO)
    v = _f32(_cos_from(q, z))
    return v if fin else x - x


@njit(**_opts)
def sin_f64(x):
    ax = abs(x)
    fin = ax < np.inf
    q, z = _reduce_f64(ax if fin else 0.0)
    v = _sin_from(q, z)
    v = -v if x < 0.0 else v
    v = x if x == 0.0 else v
    return v if fin else x - x


@njit(**_opts)
def cos_f64(x):
    ax = abs(x)
    fin = ax < np.inf
    q, z = _reduce_f64(ax if fin else 0.0)
    v = _cos_from(q, z)
    return v if fin else x - x


# ---------------------------------------------------------------------------------------------
# float32 sin and cos, fast path: Cody-Waite reduction in float64, valid for |x| < 2**20

# The exact functions above pay for the table gathers on every element. For |x| < 2**20 the
# reduction to ``r = x - m pi/2`` in [-pi/2, pi/2] (``m`` even for sin, odd for cos, |m| < 2**20)
# is done in float64 with pi/2 split into a 33-bit head (``m * head`` and ``x - m * head`` are
# exact) and a float64 tail: the error of ``r`` is below 2**-60, far under float32 precision even
# where ``x`` is closest to a multiple of pi/2. Then ``sin x = +-sin r`` for both functions, so one
# odd polynomial (a minimax fit to r**13 on [0, pi/2], relative error 2.4e-11, fitted for this
# module) serves every lane with no quadrant select between two polynomials; the float64 result is
# far closer than half a float32 ulp and one final rounding gives <= 1 ulp (checked exhaustively
# for all float32 |x| < 2**20). Finite |x| >= 2**20 give nan: callers check ``trig_oob_f32`` and
# recompute those with ``sin_f32``/``cos_f32`` (the loop-nest renderer does this per tile, so the
# exact version only runs for tiles holding such inputs).

TRIG_FAST_MAX_F32 = _f32(1048576.0)  # 2**20
_INV_PI = 0.3183098861837907
_PIO2_H33 = 1.5707963267341256  # pi/2 to 33 bits (0x1.921fb544p+0)
_PIO2_T = 6.077100506506192e-11  # pi/2 - _PIO2_H33
_SP0 = -0.16666666626107854
_SP1 = 0.008333331106778138
_SP2 = -0.0001984086796424236
_SP3 = 2.752537148895304e-06
_SP4 = -2.3888675997389877e-08


_ROUND = 6755399441055744.0  # 1.5 * 2**52: ``y + _ROUND - _ROUND`` rounds |y| < 2**51 to an integer
_PI_H = 2.0 * _PIO2_H33
_PI_T = 2.0 * _PIO2_T


@njit(**_inl)
def _sin_poly_f32(r):
    """sin(r) for |r| <= pi/2 (float64, relative error 2.4e-11)."""
    z = r * r
    p = (((_SP4 * z + _SP3) * z + _SP2) * z + _SP1) * z + _SP0
    return r + r * z * p


@njit(**_inl)
def _flip_if_odd(v, t):
    """-v if the integer held in the low mantissa bits of ``t`` (= n + _ROUND) is odd, else v."""
    return i64_as_f64(f64_as_i64(v) ^ (f64_as_i64(t) << 63))


@njit(**_opts)
def sin_fast_f32(x):
    a = _f64(x) if abs(x) < TRIG_FAST_MAX_F32 else 0.0
    t = a * _INV_PI + _ROUND
    k = t - _ROUND  # x = k pi + r
    r = a - k * _PI_H
    r = r - k * _PI_T
    v = _flip_if_odd(_sin_poly_f32(r), t)  # sin(x) = (-1)**k sin(r)
    y = _f32(v)
    y = x if x == F32_ZERO else y  # keeps the sign of zero
    return y if abs(x) < TRIG_FAST_MAX_F32 else F32_NAN


@njit(**_opts)
def cos_fast_f32(x):
    a = _f64(x) if abs(x) < TRIG_FAST_MAX_F32 else 0.0
    t = (a * _INV_PI - 0.5) + _ROUND
    k = t - _ROUND  # x = (k + 1/2) pi + r
    r = (a - _PIO2_H33) - k * _PI_H
    r = r - (k * _PI_T + _PIO2_T)
    v = _flip_if_odd(-_sin_poly_f32(r), t)  # cos(x) = (-1)**(k + 1) sin(r)
    y = _f32(v)
    return y if abs(x) < TRIG_FAST_MAX_F32 else F32_NAN


@intrinsic
def _noinline(typingctx):  # noqa: ARG001
    """No code: marks the LLVM function it is called from ``noinline``."""

    def codegen(context, builder, signature, args):  # noqa: ARG001
        builder.function.attributes.add("noinline")
        return context.get_dummy_value()

    return types.none(), codegen


_opts_call = dict(nogil=True, cache=True, error_model="numpy", fastmath={"contract"})


@njit(**_opts_call)
def sin_call_f32(x):
    """``sin_f32`` as an out-of-line call, for rarely run code (the loop-nest renderer's exact
    reruns of tiles with inputs out of the fast path's range): a loop calling it stays scalar, but
    its caller is small and compiles ~0.5 s faster than with the exact reduction inlined."""
    _noinline()
    return sin_f32(x)


@njit(**_opts_call)
def cos_call_f32(x):
    """``cos_f32`` as an out-of-line call (see ``sin_call_f32``)."""
    _noinline()
    return cos_f32(x)


@njit(**_opts)
def trig_oob_f32(x):
    """1 where ``sin_fast_f32``/``cos_fast_f32`` do not apply (finite |x| >= 2**20), else 0.
    (inf and nan are handled by the fast versions: both give nan, as the exact ones do.)"""
    ax = abs(x)
    return _i32(1) if (ax >= TRIG_FAST_MAX_F32 and ax < F32_INF) else _i32(0)


# ---------------------------------------------------------------------------------------------
# erf (float32)

_ERF_CLAMP = _f32(4.0)
_ERF_A = [
    _f32(v)
    for v in (
        -2.72614225801306e-10,
        2.77068142495902e-08,
        -2.10102402082508e-06,
        -5.69250639462346e-05,
        -7.34990630326855e-04,
        -2.95459980854025e-03,
        -1.60960333262415e-02,
    )
]
_ERF_B = [
    _f32(v)
    for v in (
        -1.45660718464996e-05,
        -2.13374055278905e-04,
        -1.68282697438203e-03,
        -7.37332916720468e-03,
        -1.42647390514189e-02,
    )
]
_EA0, _EA1, _EA2, _EA3, _EA4, _EA5, _EA6 = _ERF_A
_EB0, _EB1, _EB2, _EB3, _EB4 = _ERF_B


@njit(**_opts)
def erf_f32(x):
    xc = _ERF_CLAMP if x > _ERF_CLAMP else x
    xc = -_ERF_CLAMP if xc < -_ERF_CLAMP else xc
    x2 = xc * xc
    p = _EA0 * x2 + _EA1
    p = p * x2 + _EA2
    p = p * x2 + _EA3
    p = p * x2 + _EA4
    p = p * x2 + _EA5
    p = p * x2 + _EA6
    q = _EB0 * x2 + _EB1
    q = q * x2 + _EB2
    q = q * x2 + _EB3
    q = q * x2 + _EB4
    y = xc * (p / q)
    y = F32_ONE if y > F32_ONE else y
    return -F32_ONE if y < -F32_ONE else y
