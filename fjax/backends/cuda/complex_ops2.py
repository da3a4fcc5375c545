"""The inverse trigonometric and hyperbolic functions, the logistic function and the max/min
reductions of complex64 / complex128 values in the CUDA kernels: device functions that
``complex_ops.PRELUDE`` appends (``PRELUDE2``), on its ``fj_complex<T>`` structs and helpers.

What the CPU backend computes, and so what these compute:

- ``asin``/``acos``/``atan``/``asinh``/``acosh``/``atanh``: the CPU runs numpy's ``arcsin``, ...
  (host steps), which call glibc's ``casin``/``casinf``, ...: C99 Annex G's special values, and
  values accurate to a few ulps (complex64 in single precision). Here the finite values follow
  Hull, Fairgrieve and Tang's algorithm ("Implementing the complex arcsine and arccosine functions
  using exception handling", ACM TOMS 1997: the real part of ``asinh`` as ``log1p`` of an exactly
  formed ``A - 1`` near the branch points, the imaginary part as ``asin(B)`` or an ``atan2`` of an
  exactly formed ``sqrt(A^2 - b^2)``, ``log(2|z|)`` for huge values, ``z`` itself for tiny ones) and
  ``atanh`` as ``log1p(4x / ((1 - x)^2 + y^2)) / 4 + i atan2(2y, (1 - x)(1 + x) - y^2) / 2``,
  in the parts' own precision; ``asin``/``acos``/``atan``/``acosh`` are rotations and
  reflections of these. The special values (zeros of either sign, infinities, NaNs in either
  part) are glibc's, case by case. Measured against the CPU on the cupy stand-in (200,000 values
  per dtype of magnitudes 1e-30..1e30 and near the branch points +-1, +-i):
  each part within 4 ulps of the CPU's for complex64 (glibc's ``casinf`` works in float32 too: it
  differs from the double-precision result rounded in 45% of values, by up to 4 ulps) and 5 ulps
  for complex128; zeros' signs, infinities and NaNs exactly. On a GPU ``--fmad`` may contract
  ``x * x + y * y`` and the like into FMAs (the emulator does not): about an ulp more, not measured
  on a GPU.
- ``logistic``: the impl's ``1 / (1 + exp(-z))`` with XLA's complex division and exponential
  (``complex_ops``' ``fj_cdiv``/``fj_cexp``), the same operations in the same order; only the
  real functions differ (the GPU's ``exp``/``cos``/``sin`` and numpy's by an ulp), which ``1 + u``
  magnifies near its zeros (``z = (2k + 1) pi i``): within ``8 eps |w| (1 + |1 - w|)`` of the
  CPU's result ``w`` per part (measured over 200,000 values: at most ``1.4 eps |w| (1 + |1 - w|)``,
  4 ulps of ``|w|`` where ``|w| (1 + |1 - w|) < 3``).
- ``reduce_max``/``reduce_min``: the impl is numpy's ``np.max``/``np.min``: lexicographic (real
  parts, then imaginary parts), an element holding a NaN in either part wins (the first such),
  and of equal elements the first is kept. The kernels combine partial results in no fixed order,
  so the combine here is commutative: a value holding a NaN wins; of two equal values (zeros of
  different signs) ``max`` keeps the one with the positive zero (real part first), ``min`` the
  negative; of two values both holding NaNs the one of larger bit pattern. Where a row holds two
  different NaN-holding values, or equal values whose zeros differ in sign, the CPU's pick depends
  on their order and the GPU's may be the other one.
"""

from __future__ import annotations

import math

import numpy as np

_F32_EPS = float(np.finfo(np.float32).eps)
_F64_EPS = float(np.finfo(np.float64).eps)


def _consts(eps: float, tiny: float) -> dict:
    """The thresholds of the algorithms in one precision (``eps``: its machine epsilon, ``tiny``: its
    smallest normal number)."""
    return {
        "eps": eps,
        "inv_eps": 1 / eps,
        "asin_tiny": math.sqrt(6 * eps) / 4,  # asinh z = z (1 - z^2 / 6 ...): z itself below this
        "atanh_tiny": math.sqrt(3 * eps) / 2,  # atanh z = z (1 + z^2 / 3 ...)
        "four_sqrt_min": 4 * math.sqrt(tiny),
        "two_over_eps": 2 / eps,
        "four_over_eps2": 4 / (eps * eps),
        "eps_128": eps / 128,
        "eps2_128": eps * eps / 128,
        "sqrt_min": math.sqrt(tiny),
    }


_K32 = _consts(_F32_EPS, float(np.finfo(np.float32).tiny))
_K64 = _consts(_F64_EPS, float(np.finfo(np.float64).tiny))


def _lit(v: float, f32: bool) -> str:
    """``v`` as a C literal of the part type (float32: the nearest float, written out exactly)."""
    return f"{float(np.float32(v))!r}f" if f32 else repr(float(v))


def _const_fns() -> str:
    out = []
    for T, k, f32 in (("float", _K32, True), ("double", _K64, False)):
        body = ", ".join(f"{_lit(v, f32)}" for v in k.values())
        out.append(f"__device__ __forceinline__ fjc_lim<{T}> fjc_k({T}) {{ return fjc_lim<{T}>{{{body}}}; }}")
    return "\n".join(out)


_FIELDS = ", ".join(_K32)

PRELUDE2 = (
    r"""#ifndef FJAX_CUDA_COMPLEX2
#define FJAX_CUDA_COMPLEX2
// the inverse trigonometric functions, logistic and the max/min reductions of complex values
// (fjax/backends/cuda/complex_ops2.py)
__device__ __forceinline__ float fjc_asin(float x) { return asinf(x); }
__device__ __forceinline__ double fjc_asin(double x) { return asin(x); }
__device__ __forceinline__ float fjc_acos(float x) { return acosf(x); }
__device__ __forceinline__ double fjc_acos(double x) { return acos(x); }
// the thresholds of one precision
template <typename T> struct fjc_lim { T """
    + _FIELDS
    + r"""; };
"""
    + _const_fns()
    + r"""
__device__ __forceinline__ float fjc_pi_2(float) { return 1.57079632679489661923f; }
__device__ __forceinline__ double fjc_pi_2(double) { return 1.57079632679489661923; }
__device__ __forceinline__ float fjc_pi_4(float) { return 0.785398163397448309616f; }
__device__ __forceinline__ double fjc_pi_4(double) { return 0.785398163397448309616; }
__device__ __forceinline__ float fjc_3pi_4(float) { return 2.35619449019234492885f; }
__device__ __forceinline__ double fjc_3pi_4(double) { return 2.35619449019234492885; }
__device__ __forceinline__ float fjc_pi(float) { return 3.14159265358979323846f; }
__device__ __forceinline__ double fjc_pi(double) { return 3.14159265358979323846; }
__device__ __forceinline__ float fjc_ln2(float) { return 0.693147180559945309417f; }
__device__ __forceinline__ double fjc_ln2(double) { return 0.693147180559945309417; }
// whether x's sign bit is set (-0 included; the emulator has no global signbit)
template <typename T> __device__ __forceinline__ bool fjc_sbit(T x) { return fjc_copysign((T)1, x) < (T)0; }
#define FJC template <typename T> __device__ __forceinline__ fj_complex<T>
// (h - c) / 2 where h = hypot(a, c), without the cancellation when c > 0
template <typename T> __device__ __forceinline__ T fjc_halfgap(T a, T c, T h) {
  return c < (T)0 ? (h - c) * (T)0.5 : a * a / (h + c) * (T)0.5;
}
// asinh of a + bi for finite a, b >= 0, neither huge nor both tiny (Hull, Fairgrieve & Tang):
// re = log(A + sqrt(A^2 - 1)) with A = (|w + i| + |w - i|) / 2; the imaginary part is asin(b / A)
// when ``ok``, else atan2(nb, sq) (sq = sqrt(A^2 - b^2) and nb = b, both scaled alike), which
// acos needs too: acos(b / A) or atan2(sq, nb)
template <typename T> struct fjc_hfw {
  T re, B, sq, nb;
  bool ok;
};
template <typename T> __device__ fjc_hfw<T> fjc_hull(T a, T b) {
  const fjc_lim<T> k = fjc_k(a);
  const T one = (T)1, R = fjc_hypot(a, b + one), S = fjc_hypot(a, b - one);
  T A = (R + S) * (T)0.5;
  if (A < one) A = one;
  fjc_hfw<T> w;
  if (A < (T)10) {
    if (b == one && a < k.eps2_128) {
      w.re = fjc_sqrt(a);
    } else if (a >= k.eps * fjc_fabs(b - one)) {
      const T am1 = fjc_halfgap(a, one + b, R) + fjc_halfgap(a, one - b, S);
      w.re = fjc_log1p(am1 + fjc_sqrt(am1 * (A + one)));
    } else if (b < one) {
      w.re = a / fjc_sqrt((one - b) * (one + b));
    } else {
      w.re = fjc_log1p((b - one) + fjc_sqrt((b - one) * (b + one)));
    }
  } else {
    w.re = fjc_log(A + fjc_sqrt(A * A - one));
  }
  w.nb = b;
  w.ok = false;
  w.B = b / A;
  if (b < k.four_sqrt_min) {  // b / A would lose bits as a subnormal: atan2 of both scaled up
    w.sq = A * k.two_over_eps;
    w.nb = b * k.two_over_eps;
  } else if (w.B <= (T)0.6417) {
    w.ok = true;
  } else if (b == one && a < k.eps_128) {
    w.sq = fjc_sqrt(a) * fjc_sqrt((A + b) * (T)0.5);
  } else if (a >= k.eps * fjc_fabs(b - one)) {
    const T amb = fjc_halfgap(a, b + one, R) + fjc_halfgap(a, b - one, S);
    w.sq = fjc_sqrt(amb * (A + b));
  } else if (b > one) {
    w.sq = a * k.four_over_eps2 * b / fjc_sqrt((b + one) * (b - one));
    w.nb = b * k.four_over_eps2;
  } else {
    w.sq = fjc_sqrt((one - b) * (one + b));
  }
  return w;
}
// log(a + bi) + log 2 for a, b >= 0 with one of them beyond 1 / eps (asinh(z) ~ log 2z there)
FJC fjc_log2z(T a, T b) {
  const fj_complex<T> l = fj_clog(fj_complex<T>(a, b));
  return fj_complex<T>(l.re + fjc_ln2(a), l.im);
}
// asinh of a finite nonzero value in the first quadrant, a + bi (a, b >= 0)
FJC fjc_asinh_q1(T a, T b) {
  const fjc_lim<T> k = fjc_k(a);
  if (a > k.inv_eps || b > k.inv_eps) return fjc_log2z(a, b);
  if (a < k.asin_tiny && b < k.asin_tiny) return fj_complex<T>(a, b);
  const fjc_hfw<T> w = fjc_hull(a, b);
  return fj_complex<T>(w.re, w.ok ? fjc_asin(w.B) : fjc_atan2(w.nb, w.sq));
}
// C99's casinh, glibc's special values
FJC fj_casinh(fj_complex<T> z) {
  const T x = z.re, y = z.im, inf = fjc_inf(x), nan = fjc_nan(x);
  if (!isfinite(x) || !isfinite(y)) {
    if (isinf(y)) {
      const T im = x != x ? nan : fjc_copysign(isinf(x) ? fjc_pi_4(x) : fjc_pi_2(x), y);
      return fj_complex<T>(fjc_copysign(inf, x), im);
    }
    if (isinf(x) || y == (T)0) return fj_complex<T>(x, y == y ? fjc_copysign((T)0, y) : nan);
    return fj_complex<T>(nan, nan);
  }
  if (x == (T)0 && y == (T)0) return z;
  const fj_complex<T> w = fjc_asinh_q1(fjc_fabs(x), fjc_fabs(y));
  return fj_complex<T>(fjc_copysign(w.re, x), fjc_copysign(w.im, y));
}
// asin z = -i asinh(iz); glibc's special values where a part is NaN
FJC fj_casin(fj_complex<T> z) {
  const T x = z.re, y = z.im, nan = fjc_nan(x);
  if (x != x || y != y) {
    if (x == (T)0) return z;
    if (isinf(x) || isinf(y)) return fj_complex<T>(nan, fjc_copysign(fjc_inf(x), y));
    return fj_complex<T>(nan, nan);
  }
  const fj_complex<T> w = fj_casinh(fj_complex<T>(-y, x));
  return fj_complex<T>(w.im, -w.re);
}
// acos of a finite value: re = acos(x / A) or atan2(sqrt(A^2 - x^2), x), im = -asinh's real part
FJC fjc_acos_finite(T x, T y) {
  const fjc_lim<T> k = fjc_k(x);
  const T ax = fjc_fabs(x), ay = fjc_fabs(y);
  T re, im;
  if (ax > k.inv_eps || ay > k.inv_eps) {
    const fj_complex<T> l = fjc_log2z(ax, ay);
    re = fjc_atan2(ay, x);
    im = l.re;
  } else if (ax < k.asin_tiny && ay < k.asin_tiny) {
    re = fjc_pi_2(x) - x;
    im = ay;
  } else {
    const fjc_hfw<T> w = fjc_hull(ay, ax);
    re = w.ok ? fjc_acos(fjc_copysign(w.B, x)) : fjc_atan2(w.sq, fjc_copysign(w.nb, x));
    im = w.re;
  }
  return fj_complex<T>(re, fjc_sbit(y) ? im : -im);
}
// C99's cacos, glibc's special values (pi/2 - asin z where a part is not finite)
FJC fj_cacos(fj_complex<T> z) {
  const T x = z.re, y = z.im;
  if (!isfinite(x) || !isfinite(y) || (x == (T)0 && y == (T)0)) {
    const fj_complex<T> s = fj_casin(z);
    T re = fjc_pi_2(x) - s.re;
    if (re == (T)0) re = (T)0;
    return fj_complex<T>(re, -s.im);
  }
  return fjc_acos_finite(x, y);
}
// C99's cacosh, glibc's special values; else acosh z = |Im acos z| + i copysign(Re acos z, Im z)
FJC fj_cacosh(fj_complex<T> z) {
  const T x = z.re, y = z.im, inf = fjc_inf(x), nan = fjc_nan(x);
  if (!isfinite(x) || !isfinite(y)) {
    if (isinf(y)) {
      const T arg = isinf(x) ? (x < (T)0 ? fjc_3pi_4(x) : fjc_pi_4(x)) : fjc_pi_2(x);
      return fj_complex<T>(inf, x != x ? nan : fjc_copysign(arg, y));
    }
    if (isinf(x)) return fj_complex<T>(inf, y == y ? fjc_copysign(x < (T)0 ? fjc_pi(x) : (T)0, y) : nan);
    return fj_complex<T>(nan, x == (T)0 ? fjc_pi_2(x) : nan);
  }
  if (x == (T)0 && y == (T)0) return fj_complex<T>((T)0, fjc_copysign(fjc_pi_2(x), y));
  const fj_complex<T> w = fjc_acos_finite(x, y);
  return fj_complex<T>(fjc_fabs(w.im), fjc_copysign(w.re, y));
}
// atanh of a finite nonzero value in the first quadrant, x + yi (x, y >= 0)
FJC fjc_atanh_q1(T x, T y) {
  const fjc_lim<T> k = fjc_k(x);
  const T one = (T)1, two = (T)2;
  if (x > k.inv_eps || y > k.inv_eps) {  // 1 / z + i pi / 2: Re 1/z = x / (x^2 + y^2), scaled
    T re;
    if (x == (T)0) {
      re = x;
    } else {
      const T m = x > y ? x : y, xs = x / m, ys = y / m;
      re = xs / (xs * xs + ys * ys) / m;
    }
    return fj_complex<T>(re, fjc_pi_2(x));
  }
  if (x < k.atanh_tiny && y < k.atanh_tiny) return fj_complex<T>(x, y);
  T re, im;
  if (x == one && y < k.eps) {
    re = (fjc_ln2(x) - fjc_log(y)) * (T)0.5;
    im = fjc_atan2(two, -y) * (T)0.5;
  } else {
    const T d = x - one;
    const T ss = y < k.sqrt_min ? d * d : d * d + y * y;
    re = fjc_log1p((T)4 * x / ss) * (T)0.25;
    im = fjc_atan2(two * y, y < k.eps ? (one - x) * (one + x) : (one - x) * (one + x) - y * y) * (T)0.5;
  }
  return fj_complex<T>(re, im);
}
// C99's catanh, glibc's special values
FJC fj_catanh(fj_complex<T> z) {
  const T x = z.re, y = z.im, zero = (T)0, nan = fjc_nan(x);
  if (!isfinite(x) || !isfinite(y)) {
    if (isinf(y)) return fj_complex<T>(fjc_copysign(zero, x), fjc_copysign(fjc_pi_2(x), y));
    if (isinf(x) || x == zero) return fj_complex<T>(fjc_copysign(zero, x), y == y ? fjc_copysign(fjc_pi_2(x), y) : nan);
    return fj_complex<T>(nan, nan);
  }
  if (x == zero && y == zero) return z;
  if (fjc_fabs(x) == (T)1 && y == zero) return fj_complex<T>(fjc_copysign(fjc_inf(x), x), y);
  const fj_complex<T> w = fjc_atanh_q1(fjc_fabs(x), fjc_fabs(y));
  return fj_complex<T>(fjc_copysign(w.re, x), fjc_copysign(w.im, y));
}
// atan z = -i atanh(iz); glibc's special values
FJC fj_catan(fj_complex<T> z) {
  const T x = z.re, y = z.im, zero = (T)0, nan = fjc_nan(x);
  if (!isfinite(x) || !isfinite(y)) {
    if (isinf(x)) return fj_complex<T>(fjc_copysign(fjc_pi_2(x), x), fjc_copysign(zero, y));
    if (isinf(y)) return fj_complex<T>(x == x ? fjc_copysign(fjc_pi_2(x), x) : nan, fjc_copysign(zero, y));
    return fj_complex<T>(nan, y == zero ? fjc_copysign(zero, y) : nan);
  }
  const fj_complex<T> w = fj_catanh(fj_complex<T>(-y, x));
  return fj_complex<T>(w.im, -w.re);
}
// the impl's 1 / (1 + exp(-z)), XLA's division and exponential
FJC fj_clogistic(fj_complex<T> z) {
  const fj_complex<T> one((T)1, (T)0);
  return fj_cdiv(one, fj_cadd(one, fj_cexp(fj_cneg(z))));
}
// atan2 of complex values, the impl's (XLA's) -i log((y + i x) / sqrt(y^2 + x^2)) with numpy's
// operations in the impl's order (1j * x and -1j * w as complex products; the division Smith's)
FJC fj_catan2(fj_complex<T> x, fj_complex<T> y) {
  const fj_complex<T> i((T)0, (T)1), mi((T)0, (T)-1);
  const fj_complex<T> num = fj_cadd(y, fj_cmul(i, x));
  const fj_complex<T> den = fj_csqrt(fj_cadd(fj_cmul(y, y), fj_cmul(x, x)));
  return fj_cmul(mi, fj_clog(fj_cdiv(num, den)));
}
// the max / min reductions: np.max's order (real parts, then imaginary parts; a value holding a
// NaN wins), commutative: equal values by their zeros' signs, two NaN-holding ones by their bits
template <typename T> __device__ __forceinline__ bool fjc_hasnan(fj_complex<T> z) {
  return z.re != z.re || z.im != z.im;
}
__device__ __forceinline__ unsigned long long fjc_bits(float x) { return __float_as_uint(x); }
__device__ __forceinline__ unsigned long long fjc_bits(double x) { return (unsigned long long)__double_as_longlong(x); }
// whether x comes before y in max's order (1), after (-1), or they are the same value (0)
template <typename T> __device__ __forceinline__ int fjc_order(fj_complex<T> x, fj_complex<T> y) {
  const bool nx = fjc_hasnan(x), ny = fjc_hasnan(y);
  if (nx != ny) return nx ? 1 : -1;
  if (nx) {
    const unsigned long long xr = fjc_bits(x.re), yr = fjc_bits(y.re), xi = fjc_bits(x.im), yi = fjc_bits(y.im);
    return xr != yr ? (xr > yr ? 1 : -1) : xi != yi ? (xi > yi ? 1 : -1) : 0;
  }
  if (x.re != y.re) return x.re > y.re ? 1 : -1;
  if (x.im != y.im) return x.im > y.im ? 1 : -1;
  if (fjc_sbit(x.re) != fjc_sbit(y.re)) return fjc_sbit(x.re) ? -1 : 1;
  if (fjc_sbit(x.im) != fjc_sbit(y.im)) return fjc_sbit(x.im) ? -1 : 1;
  return 0;
}
FJC fj_crmax(fj_complex<T> x, fj_complex<T> y) { return fjc_order(x, y) >= 0 ? x : y; }
FJC fj_crmin(fj_complex<T> x, fj_complex<T> y) {
  const bool nx = fjc_hasnan(x), ny = fjc_hasnan(y);
  if (nx || ny) return fjc_order(x, y) >= 0 ? x : y;  // (NaN-holding values win here too)
  return fjc_order(x, y) <= 0 ? x : y;
}
#undef FJC
#endif  // FJAX_CUDA_COMPLEX2
"""
)
