"""complex64 / complex128 in the CUDA kernels: the C types, constants, the elementwise ops and the
sum/product reductions of complex values.

Values are ``fj_complex<T>`` structs laid out as numpy lays out its complex arrays (real part, then
imaginary part, aligned to their size: ``fj_c64`` / ``fj_c128``), so device buffers are the cupy
arrays themselves. Each op computes what the CPU backend's impl computes, by the same formulas:

- ``+ -``, ``neg``, ``conj``, ``real``, ``imag``, ``eq``/``ne``: textbook; ``*``/``square``: the FMA
  form ``fma(a, c, -bd) + fma(a, d, bc) i`` numpy's SIMD loops compute where the CPU has FMA (and
  so the CPU backend's loops there, ``numba/complex_math.NUMPY_FMA``): products agree bit for bit
  and overflow alike (on a CPU without FMA numpy's textbook products differ by an ulp and at
  overflow);
- ``div``: Smith's algorithm, then XLA's corner cases where both parts came out NaN
  (``fjax/lax/_complex_ref.complex_div``); ``pow``: XLA's polar form (``complex_pow``);
  ``exp``/``exp2``/``expm1``: exact real results for a zero imaginary part (``complex_exp``, ...);
- ``integer_pow``: binary exponentiation from 1 as numpy's ``power`` (a negative exponent: ``1 /``
  the product, with the division above); ``max``/``min``: lexicographic, as JAX lowers them;
- ``log`` (``0.5 log1p(...)`` near the unit circle), ``log1p`` (numpy's ``log(hypot(1 + a, b))``),
  ``sqrt``/``rsqrt`` (scaled against overflow), ``sin``/``cos``/``sinh``/``cosh``, ``tanh``/``tan``
  (Kahan's algorithm), ``abs`` (``hypot``): C99's formulas as numpy's; ``sign``: XLA's ``z / |z|``
  part by part (NaN where a part is infinite).

With ``--fmad=true`` (NVRTC's default) the other formulas' products may be contracted into FMAs:
their results agree with the CPU's to float tolerance, not bit for bit. At infinities and NaNs the C99 special cases of
``sqrt``/``tanh``/... are followed where cheap; exotic inputs (an infinite part with a NaN part)
may differ from numpy. Sums and products of complex64 accumulate in complex128 (as float32's in
float64). The inverse trigonometric and hyperbolic functions, ``logistic`` and the max/min
reductions (numpy's order: a NaN sticks) are ``complex_ops2``'s, appended to the prelude; the
cumulative cummax/cummin are JAX's binary max/min folded in order (``scan_combine_expr``, not the
reductions' ``combine_expr``). 16-bit floats mixed with complex
values, and ops with no complex form here (``atan2``, ...), raise ``NotImplementedError`` naming
them.
"""

from __future__ import annotations

import numpy as np

from fjax.backends import kernel_ir as ir
from fjax.backends.cuda.complex_ops2 import PRELUDE2

CTYPES = {np.dtype(np.complex64): "fj_c64", np.dtype(np.complex128): "fj_c128"}
_PART = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}


def is_complex(dt: object) -> bool:
    return np.dtype(dt).kind == "c"


def part_dtype(dt: object) -> np.dtype:
    """The dtype of the real and imaginary parts of complex dtype ``dt``."""
    return _PART[np.dtype(dt)]


def const_expr(value: object, dt: object, real_const) -> str:  # noqa: ANN001
    """A complex constant (``real_const(v, dtype)`` spells each part)."""
    d = np.dtype(dt)
    v = complex(d.type(value))
    p = _PART[d]
    return f"{CTYPES[d]}({real_const(v.real, p)}, {real_const(v.imag, p)})"


def ident_expr(kind: str, dt: object, real_const) -> str:  # noqa: ANN001
    if kind == "sum":
        return const_expr(0, dt, real_const)
    if kind == "prod":
        return const_expr(1, dt, real_const)
    if kind in ("max", "min"):  # the value every other one beats in fj_crmax's (fj_crmin's) order
        inf = np.inf if kind == "min" else -np.inf
        return const_expr(complex(inf, inf), dt, real_const)
    raise NotImplementedError(f"CUDA backend: reduction {kind!r} on dtype {np.dtype(dt).name}")


def combine_expr(kind: str, acc: str, v: str, dt: object) -> str:
    """One step of reduction ``kind``: commutative, so partial values may meet in any order
    (max/min: numpy's ``np.max`` order, complex_ops2's ``fj_crmax``)."""
    if kind == "sum":
        return f"fj_cadd({acc}, {v})"
    if kind == "prod":
        return f"fj_cmul({acc}, {v})"
    if kind in ("max", "min"):
        return f"fj_cr{kind}({acc}, {v})"
    raise NotImplementedError(f"CUDA backend: reduction {kind!r} on dtype {np.dtype(dt).name}")


def scan_combine_expr(kind: str, acc: str, v: str, dt: object) -> str:
    """One step of cumulative op ``kind`` (``acc`` the earlier value): cummax/cummin as the CPU's
    impl, JAX's binary max/min folded in order (NaNs do not stick)."""
    if kind in ("max", "min"):
        return f"fj_c{kind}({acc}, {v})"
    return combine_expr(kind, acc, v, dt)


# ops of one complex operand computed by a prelude function of the same name
_UNARY = {
    "neg": "fj_cneg",
    "exp": "fj_cexp",
    "exp2": "fj_cexp2",
    "expm1": "fj_cexpm1",
    "log": "fj_clog",
    "log1p": "fj_clog1p",
    "sqrt": "fj_csqrt",
    "rsqrt": "fj_crsqrt",
    "sin": "fj_csin",
    "cos": "fj_ccos",
    "tan": "fj_ctan",
    "sinh": "fj_csinh",
    "cosh": "fj_ccosh",
    "tanh": "fj_ctanh",
    "sign": "fj_csign",
    # complex_ops2's
    "asin": "fj_casin",
    "acos": "fj_cacos",
    "atan": "fj_catan",
    "asinh": "fj_casinh",
    "acosh": "fj_cacosh",
    "atanh": "fj_catanh",
    "logistic": "fj_clogistic",
}
_BINARY = {
    "add": "fj_cadd",
    "sub": "fj_csub",
    "mul": "fj_cmul",
    "div": "fj_cdiv",
    "pow": "fj_cpow",
    "max": "fj_cmax",
    "min": "fj_cmin",
    "atan2": "fj_catan2",  # complex_ops2's
}
OPS = frozenset(_UNARY) | frozenset(_BINARY) | {"real", "imag", "conj", "abs", "square", "integer_pow", "eq", "ne"}
OPS |= {"lt", "le", "gt", "ge"}
# ordering comparisons, JAX's lexicographic order: the imaginary parts where the real parts are
# equal, else the real parts strictly (the CPU impl, ``lax_elementwise._ordered``)
_ORDER = {"lt": ("<", "<"), "le": ("<=", "<"), "gt": (">", ">"), "ge": (">=", ">")}


def render_op(a: list, op: ir.Op, ctype, f2i) -> str | None:  # noqa: ANN001
    """The expression of ``op`` when a complex value is among its operands or its result; None
    when none is (or for ``select_n``, whose generic form holds any type)."""
    dts = [np.dtype(op.dtype)] + [np.dtype(d) for d in op.in_dtypes]
    if not any(d.kind == "c" for d in dts) or op.op == "select_n":
        return None
    name = op.op
    out = np.dtype(op.dtype)
    src = np.dtype(op.in_dtypes[0]) if op.in_dtypes else out
    if name == "convert_element_type":
        return _convert(a[0], src, out, ctype, f2i)
    if name in ("eq", "ne"):
        e = f"fj_ceq({a[0]}, {a[1]})"
        return e if name == "eq" else f"(!{e})"
    if name in _ORDER:
        o, strict = _ORDER[name]
        x, y = a[0], a[1]
        return f"(({x}).re == ({y}).re ? ({x}).im {o} ({y}).im : ({x}).re {strict} ({y}).re)"
    if out.kind != "c" and name not in ("real", "imag", "abs"):
        raise NotImplementedError(f"CUDA backend: op {name} on dtype {src.name}")
    if name == "real":
        return f"{a[0]}.re"
    if name == "imag":
        return f"{a[0]}.im"
    if name == "abs":
        return f"fj_cabs({a[0]})"
    if name == "conj":
        if src.kind != "c":  # conj of a real array: that array as complex (JAX)
            return f"{ctype(out)}(({ctype(_PART[out])})({a[0]}), ({ctype(_PART[out])})0)"
        return f"fj_cconj({a[0]})"
    if any(d.kind != "c" for d in op.in_dtypes):
        raise NotImplementedError(f"CUDA backend: op {name} mixing {[np.dtype(d).name for d in op.in_dtypes]}")
    if name in _UNARY:
        return f"{_UNARY[name]}({a[0]})"
    if name in _BINARY:
        return f"{_BINARY[name]}({a[0]}, {a[1]})"
    if name == "square":
        return f"fj_cmul({a[0]}, {a[0]})"
    if name == "integer_pow":
        y = int(op.params["y"])
        return f"fj_cipow({a[0]}, {y})"
    raise NotImplementedError(f"CUDA backend: op {name} on dtype {out.name}")


def _convert(x: str, src: np.dtype, dst: np.dtype, ctype, f2i) -> str:  # noqa: ANN001
    if src.kind == "c" and dst.kind == "c":
        return f"{ctype(dst)}({x})" if src != dst else x
    if dst.kind == "c":  # a real value: the real part (bools and integers through the part type)
        P = ctype(_PART[dst])
        return f"{ctype(dst)}(({P})({x}), ({P})0)"
    # complex -> real: the real part, as JAX's convert_element_type (bool too: 1j -> False)
    if dst == np.bool_:
        return f"({x}.re != 0)"
    if dst.kind in "iu":
        return f2i(f"{x}.re", dst)
    return f"(({ctype(dst)})({x}.re))"


PRELUDE = r"""#ifndef FJAX_CUDA_COMPLEX
#define FJAX_CUDA_COMPLEX
// complex64 / complex128 as numpy lays them out: (real, imaginary), aligned to their size
template <typename T> struct alignas(2 * sizeof(T)) fj_complex {
  T re, im;
  fj_complex() = default;
  __device__ __forceinline__ fj_complex(T r, T i) : re(r), im(i) {}
  __device__ __forceinline__ explicit fj_complex(T r) : re(r), im((T)0) {}
  template <typename U>
  __device__ __forceinline__ explicit fj_complex(const fj_complex<U>& z) : re((T)z.re), im((T)z.im) {}
};
typedef fj_complex<float> fj_c64;
typedef fj_complex<double> fj_c128;
// the real math of each part type by one name
#define FJC_M1(N)                                                              \
  __device__ __forceinline__ float fjc_##N(float x) { return N##f(x); }        \
  __device__ __forceinline__ double fjc_##N(double x) { return N(x); }
#define FJC_M2(N)                                                                          \
  __device__ __forceinline__ float fjc_##N(float x, float y) { return N##f(x, y); }        \
  __device__ __forceinline__ double fjc_##N(double x, double y) { return N(x, y); }
FJC_M1(exp) FJC_M1(expm1) FJC_M1(log) FJC_M1(log1p) FJC_M1(sin) FJC_M1(cos) FJC_M1(tan)
FJC_M1(sinh) FJC_M1(cosh) FJC_M1(sqrt) FJC_M1(fabs)
FJC_M2(hypot) FJC_M2(atan2) FJC_M2(pow) FJC_M2(copysign)
#undef FJC_M1
#undef FJC_M2
__device__ __forceinline__ float fjc_inf(float) { return __int_as_float(0x7f800000); }
__device__ __forceinline__ double fjc_inf(double) { return __longlong_as_double(0x7ff0000000000000LL); }
__device__ __forceinline__ float fjc_nan(float) { return __int_as_float(0x7fc00000); }
__device__ __forceinline__ double fjc_nan(double) { return __longlong_as_double(0x7ff8000000000000LL); }
#define FJC template <typename T> __device__ __forceinline__ fj_complex<T>
FJC fj_cadd(fj_complex<T> a, fj_complex<T> b) { return fj_complex<T>(a.re + b.re, a.im + b.im); }
FJC fj_csub(fj_complex<T> a, fj_complex<T> b) { return fj_complex<T>(a.re - b.re, a.im - b.im); }
FJC fj_cneg(fj_complex<T> a) { return fj_complex<T>(-a.re, -a.im); }
FJC fj_cconj(fj_complex<T> a) { return fj_complex<T>(a.re, -a.im); }
// numpy's multiply where its SIMD loops have FMA (the CPU backend's products, numba/complex_math's
// NUMPY_FMA): fma(a, c, -bd) + fma(a, d, bc) i, each product rounded once (no contraction left to
// nvcc's --fmad, so the result is the same on every GPU; (1e30 + 2e30i)^2 is -inf + inf i)
__device__ __forceinline__ float fjc_mul_rn(float x, float y) { return __fmul_rn(x, y); }
__device__ __forceinline__ double fjc_mul_rn(double x, double y) { return __dmul_rn(x, y); }
__device__ __forceinline__ float fjc_fma(float x, float y, float z) { return fmaf(x, y, z); }
__device__ __forceinline__ double fjc_fma(double x, double y, double z) { return fma(x, y, z); }
FJC fj_cmul(fj_complex<T> a, fj_complex<T> b) {
  return fj_complex<T>(fjc_fma(a.re, b.re, -fjc_mul_rn(a.im, b.im)), fjc_fma(a.re, b.im, fjc_mul_rn(a.im, b.re)));
}
// the textbook product, each product rounded once (numpy's scalar power multiplies this way)
FJC fj_cmul_tb(fj_complex<T> a, fj_complex<T> b) {
  const T re = fjc_mul_rn(a.re, b.re) - fjc_mul_rn(a.im, b.im);
  return fj_complex<T>(re, fjc_mul_rn(a.re, b.im) + fjc_mul_rn(a.im, b.re));
}
template <typename T> __device__ __forceinline__ bool fj_ceq(fj_complex<T> a, fj_complex<T> b) {
  return a.re == b.re && a.im == b.im;
}
template <typename T> __device__ __forceinline__ T fj_cabs(fj_complex<T> a) { return fjc_hypot(a.re, a.im); }
// lexicographic, y unless x compares greater (smaller): as JAX lowers max/min of complex values
FJC fj_cmax(fj_complex<T> x, fj_complex<T> y) { return (x.re == y.re ? x.im > y.im : x.re > y.re) ? x : y; }
FJC fj_cmin(fj_complex<T> x, fj_complex<T> y) { return (x.re == y.re ? x.im < y.im : x.re < y.re) ? x : y; }
// Smith's algorithm, then XLA's corner cases where both parts came out NaN
FJC fj_cdiv(fj_complex<T> a, fj_complex<T> b) {
  const T ar = a.re, ai = a.im, br = b.re, bi = b.im, zero = (T)0, one = (T)1, inf = fjc_inf(ar);
  T cr, ci;
  if (fjc_fabs(br) < fjc_fabs(bi)) {
    const T r = br / bi, d = bi + br * r;
    cr = (ar * r + ai) / d;
    ci = (ai * r - ar) / d;
  } else {
    const T r = bi / br, d = br + bi * r;
    cr = (ar + ai * r) / d;
    ci = (ai - ar * r) / d;
  }
  if (cr == cr || ci == ci) return fj_complex<T>(cr, ci);
  const bool ar_inf = isinf(ar), ai_inf = isinf(ai), br_inf = isinf(br), bi_inf = isinf(bi);
  if (br == zero && bi == zero && !(ar != ar && ai != ai)) {
    const T s = fjc_copysign(inf, br);
    return fj_complex<T>(s * ar, s * ai);
  }
  if ((ar_inf || ai_inf) && isfinite(br) && isfinite(bi)) {
    const T ur = fjc_copysign(ar_inf ? one : zero, ar), ui = fjc_copysign(ai_inf ? one : zero, ai);
    return fj_complex<T>(inf * (ur * br + ui * bi), inf * (ui * br - ur * bi));
  }
  if ((br_inf || bi_inf) && isfinite(ar) && isfinite(ai)) {
    const T vr = fjc_copysign(br_inf ? one : zero, br), vi = fjc_copysign(bi_inf ? one : zero, bi);
    return fj_complex<T>(zero * (ar * vr + ai * vi), zero * (ai * vr - ar * vi));
  }
  return fj_complex<T>(cr, ci);
}
// x ** n as numpy's power: x * x, x * (x * x), then binary exponentiation from 1, in textbook
// products; n < 0: 1 / x ** -n
template <typename T> __device__ __forceinline__ fj_complex<T> fj_cipow(fj_complex<T> x, int n) {
  const fj_complex<T> one((T)1, (T)0);
  if (n == 0) return one;
  if (n < 0) {
    fj_complex<T> acc = x, p = x;
    bool first = true;
    for (int m = -n; m > 0; m >>= 1) {
      if (m & 1) {
        acc = first ? p : fj_cmul_tb(acc, p);
        first = false;
      }
      if (m > 1) p = fj_cmul_tb(p, p);
    }
    return fj_cdiv(one, acc);
  }
  if (n == 1) return x;
  if (n == 2) return fj_cmul_tb(x, x);
  if (n == 3) return fj_cmul_tb(x, fj_cmul_tb(x, x));
  fj_complex<T> acc = one, p = x;
  for (int m = n; m > 0; m >>= 1) {
    if (m & 1) acc = fj_cmul_tb(acc, p);
    if (m > 1) p = fj_cmul_tb(p, p);
  }
  return acc;
}
// XLA's polar form (fjax/lax/_complex_ref.complex_pow)
FJC fj_cpow(fj_complex<T> x, fj_complex<T> y) {
  const T a = x.re, b = x.im, c = y.re, d = y.im, zero = (T)0, one = (T)1;
  if ((c == zero && d == zero) || (a == one && b == zero)) return fj_complex<T>(one, zero);
  const T r = fjc_hypot(a, b), arg = fjc_atan2(b, a);
  if (r == zero) {
    if (d == zero && c >= zero) return fj_complex<T>(c == zero ? one : zero, zero);
    return fj_complex<T>(fjc_nan(a), fjc_nan(a));
  }
  const T coeff = fjc_pow(r, c) * fjc_exp(-d * arg);
  const T q = d == zero ? c * arg : c * arg + d * fjc_log(r);
  return fj_complex<T>(coeff * fjc_cos(q), q == zero ? q : coeff * fjc_sin(q));
}
// exp(re) (cos im + i sin im), exact for a zero imaginary part
FJC fj_cexp(fj_complex<T> z) {
  const T e = fjc_exp(z.re);
  if (z.im == (T)0) return fj_complex<T>(e, z.im);
  return fj_complex<T>(e * fjc_cos(z.im), e * fjc_sin(z.im));
}
FJC fj_cexp2(fj_complex<T> z) { return fj_cexp(fj_cmul(z, fj_complex<T>((T)0.6931471805599453, (T)0))); }
// numpy's expm1: expm1(a) cos b - 2 sin^2(b / 2) + i exp(a) sin b (real for b == 0)
FJC fj_cexpm1(fj_complex<T> z) {
  if (z.im == (T)0) return fj_complex<T>(fjc_expm1(z.re), z.im);
  const T s = fjc_sin(z.im / (T)2);
  return fj_complex<T>(fjc_expm1(z.re) * fjc_cos(z.im) - (T)2 * s * s, fjc_exp(z.re) * fjc_sin(z.im));
}
// log|z| + i arg z; near the unit circle log|z| = log1p((x - 1)(x + 1) + y^2) / 2 (x >= y >= 0)
FJC fj_clog(fj_complex<T> z) {
  T x = fjc_fabs(z.re), y = fjc_fabs(z.im);
  if (x < y) {
    const T t = x;
    x = y;
    y = t;
  }
  const T h = fjc_hypot(z.re, z.im);
  // 2^64 and its log (float32), 2^600 (float64): |z| scaled into range where it is subnormal or
  // overflows although z does not
  const T S = sizeof(T) == 4 ? (T)1.8446744073709552e19 : (T)4.149515568880993e180;
  const T lnS = sizeof(T) == 4 ? (T)44.3614195558365 : (T)415.88830833596717;
  T re;
  if (h >= (T)0.5 && h <= (T)2 && isfinite(h)) {
    re = fjc_log1p((x - (T)1) * (x + (T)1) + y * y) / (T)2;
  } else if (x > (T)0 && x < (T)1 / S) {
    re = fjc_log(fjc_hypot(x * S, y * S)) - lnS;
  } else if (isinf(h) && isfinite(x) && isfinite(y)) {
    re = fjc_log(fjc_hypot(x / S, y / S)) + lnS;
  } else {
    re = fjc_log(h);
  }
  return fj_complex<T>(re, fjc_atan2(z.im, z.re));
}
// numpy's log1p of a complex value
FJC fj_clog1p(fj_complex<T> z) {
  const T a = z.re + (T)1;
  return fj_complex<T>(fjc_log(fjc_hypot(a, z.im)), fjc_atan2(z.im, a));
}
// the principal square root (C99 csqrt), scaled by 1/4 where |z| could overflow, up where it is tiny
FJC fj_csqrt(fj_complex<T> z) {
  const T a = z.re, b = z.im, zero = (T)0, inf = fjc_inf(a);
  if (a == zero && b == zero) return fj_complex<T>(zero, b);
  if (isinf(b)) return fj_complex<T>(inf, b);
  if (a != a) return fj_complex<T>(a, b - b + a);
  if (isinf(a)) {
    if (a > zero) return fj_complex<T>(a, b == b ? fjc_copysign(zero, b) : b);
    return fj_complex<T>(b == b ? zero : b, fjc_copysign(inf, b));
  }
  T x = a, y = b, s = (T)1;
  const T big = sizeof(T) == 4 ? (T)8.5e37 : (T)4.4e307;
  const T tiny = sizeof(T) == 4 ? (T)8.6736174e-19 : (T)3.0549363634996047e-151;  // 2^-60, 2^-500
  if (fjc_fabs(x) >= big || fjc_fabs(y) >= big) {
    x *= (T)0.25;
    y *= (T)0.25;
    s = (T)2;
  } else if (fjc_fabs(x) < tiny && fjc_fabs(y) < tiny) {  // (subnormal halves would round to 0)
    x *= sizeof(T) == 4 ? (T)1.8446744073709552e19 : (T)1.0715086071862673e301;  // 2^64, 2^1000
    y *= sizeof(T) == 4 ? (T)1.8446744073709552e19 : (T)1.0715086071862673e301;
    s = sizeof(T) == 4 ? (T)2.3283064365386963e-10 : (T)3.054936363499605e-151;  // 2^-32, 2^-500
  }
  const T t = fjc_sqrt((fjc_fabs(x) + fjc_hypot(x, y)) * (T)0.5);
  if (x >= zero) return fj_complex<T>(s * t, s * (y / (t + t)));
  return fj_complex<T>(s * (fjc_fabs(y) / (t + t)), fjc_copysign(s * t, y));
}
// 1 / sqrt(z) with numpy's division (the CPU impl's): Smith's algorithm, no corner-case recovery
FJC fj_crsqrt(fj_complex<T> z) {
  const fj_complex<T> b = fj_csqrt(z);
  const T br = fjc_fabs(b.re), bi = fjc_fabs(b.im), one = (T)1;
  if (br >= bi) {
    if (br == (T)0) return fj_complex<T>(one / br, (T)0 / br);
    const T r = b.im / b.re, s = one / (b.re + b.im * r);
    return fj_complex<T>(s, -r * s);
  }
  const T r = b.re / b.im, s = one / (b.im + b.re * r);
  return fj_complex<T>(r * s, -s);
}
// e^|x| / 2 * (c, s) for |x| beyond where e^|x| overflows although the products may not (as
// glibc's csinh: the exponential taken in steps of e^t)
FJC fjc_big_exp(T x, T c, T s) {
  const T t = sizeof(T) == 4 ? (T)88 : (T)709;
  const T et = fjc_exp(t);
  T r = fjc_fabs(x) - t;
  c *= et / (T)2;
  s *= et / (T)2;
  if (r > t) {
    r -= t;
    c *= et;
    s *= et;
  }
  const T e = fjc_exp(fjc_fabs(r) < t ? r : t);
  return fj_complex<T>(c * e, s * e);
}
// C99's csinh/ccosh, special values included (Annex G: sinh is odd, cosh even)
FJC fj_csinh(fj_complex<T> z) {
  const T x = z.re, y = z.im, inf = fjc_inf(x);
  if (isfinite(x) && isfinite(y)) {
    if (y == (T)0) return fj_complex<T>(fjc_sinh(x), y);
    if (fjc_fabs(x) > (sizeof(T) == 4 ? (T)88 : (T)709)) {
      const fj_complex<T> w = fjc_big_exp(x, fjc_cos(y), fjc_sin(y));
      return fj_complex<T>(fjc_copysign((T)1, x) * w.re, w.im);
    }
    return fj_complex<T>(fjc_sinh(x) * fjc_cos(y), fjc_cosh(x) * fjc_sin(y));
  }
  if (x == (T)0) return fj_complex<T>(x, y - y);  // +-0 + i NaN
  if (y == (T)0) return fj_complex<T>(x, y);        // +-inf or NaN, + i 0
  // (+-inf + i inf or NaN: C99 leaves the real part's sign open; glibc's, and so numpy's, is +)
  if (isinf(x)) return isfinite(y) ? fj_complex<T>(x * fjc_cos(y), inf * fjc_sin(y)) : fj_complex<T>(inf, y - y);
  return fj_complex<T>(fjc_nan(x), fjc_nan(x));
}
FJC fj_ccosh(fj_complex<T> z) {
  const T x = z.re, y = z.im, inf = fjc_inf(x), zero = (T)0;
  if (isfinite(x) && isfinite(y)) {
    if (y == zero) return fj_complex<T>(fjc_cosh(x), fjc_copysign(zero, x) * y);
    if (fjc_fabs(x) > (sizeof(T) == 4 ? (T)88 : (T)709)) {
      const fj_complex<T> w = fjc_big_exp(x, fjc_cos(y), fjc_sin(y));
      return fj_complex<T>(w.re, fjc_copysign((T)1, x) * w.im);
    }
    return fj_complex<T>(fjc_cosh(x) * fjc_cos(y), fjc_sinh(x) * fjc_sin(y));
  }
  if (x == zero) return fj_complex<T>(y - y, zero);  // NaN + i 0
  if (y == zero) return fj_complex<T>(x * x, fjc_copysign(zero, x) * y);  // +inf or NaN, + i 0
  if (isinf(x)) return isfinite(y) ? fj_complex<T>(inf * fjc_cos(y), x * fjc_sin(y)) : fj_complex<T>(inf, y - y);
  return fj_complex<T>(fjc_nan(x), fjc_nan(x));
}
// sin z = -i sinh(iz), cos z = cosh(iz)
FJC fj_csin(fj_complex<T> z) {
  // an infinite imaginary part with a non-finite real part: NaN + i inf (glibc's sign, numpy's)
  if (!isfinite(z.re) && isinf(z.im)) return fj_complex<T>(fjc_nan(z.re), fjc_inf(z.re));
  const fj_complex<T> w = fj_csinh(fj_complex<T>(-z.im, z.re));
  return fj_complex<T>(w.im, -w.re);
}
FJC fj_ccos(fj_complex<T> z) { return fj_ccosh(fj_complex<T>(-z.im, z.re)); }
// Kahan's algorithm ("Branch cuts for complex elementary functions", 1987)
FJC fj_ctanh(fj_complex<T> z) {
  const T x = z.re, y = z.im, one = (T)1, zero = (T)0;
  if (!isfinite(x)) {
    if (x != x) return fj_complex<T>(x, y == zero ? y : x * y);
    return fj_complex<T>(fjc_copysign(one, x), fjc_copysign(zero, isinf(y) ? y : fjc_sin(y) * fjc_cos(y)));
  }
  if (!isfinite(y)) return fj_complex<T>(x == zero ? x : y - y, y - y);
  if (fjc_fabs(x) >= (sizeof(T) == 4 ? (T)9 : (T)22)) {
    const T e = fjc_exp(-fjc_fabs(x));
    return fj_complex<T>(fjc_copysign(one, x), (T)4 * fjc_sin(y) * fjc_cos(y) * e * e);
  }
  const T t = fjc_tan(y), beta = one + t * t, s = fjc_sinh(x), rho = fjc_sqrt(one + s * s);
  const T den = one + beta * s * s;
  return fj_complex<T>(beta * rho * s / den, t / den);
}
// tan z = -i tanh(iz)
FJC fj_ctan(fj_complex<T> z) {
  const fj_complex<T> w = fj_ctanh(fj_complex<T>(-z.im, z.re));
  return fj_complex<T>(w.im, -w.re);
}
// z / |z| part by part, as XLA (0 at 0; an infinite part gives NaN: sign(inf - 2i) = nan - 0i)
FJC fj_csign(fj_complex<T> z) {
  if (z.re == (T)0 && z.im == (T)0) return z;
  const T h = fjc_hypot(z.re, z.im);
  return fj_complex<T>(z.re / h, z.im / h);
}
#undef FJC
// warp shuffles of complex values: each part
template <typename T> __device__ __forceinline__ fj_complex<T> fj_shfl_down(fj_complex<T> v, int d) {
  return fj_complex<T>(__shfl_down_sync(0xffffffffu, v.re, d), __shfl_down_sync(0xffffffffu, v.im, d));
}
#endif  // FJAX_CUDA_COMPLEX
"""
PRELUDE += PRELUDE2  # the inverse trigonometric functions, logistic, the max/min reductions


def uses_complex(src: str) -> bool:
    """Whether a kernel source needs the complex prelude."""
    return "fj_c64" in src or "fj_c128" in src
