"""CUDA kernels for more host-step primitives (rendered from ``host_ops.render``), so programs using
them stay on the GPU:

- special functions, computed in double precision per element (as the CPU impls compute float32
  in float64), then rounded to the operand's dtype: ``digamma`` and ``polygamma`` (the CPU impl's
  algorithm: reflection, recurrence, asymptotic series), ``igamma``/``igammac`` (regularized
  incomplete gamma: the series below ``x < a + 1``, Lentz's continued fraction above; the CPU uses
  scipy), ``bessel_i0e``/``bessel_i1e`` (the power series up to ``|x| <= 20``, the asymptotic
  expansion above), ``igamma_grad_a`` and ``random_gamma_grad`` (the CPU impl's differentiated
  series / continued fraction: gradients of gamma, beta and Dirichlet samples), ``ndtri``
  (CUDA's ``normcdfinv``), ``erfcx`` (CUDA's) and ``log_ndtr`` (from ``erfcx``/``erfc``);
  those whose CPU impls call scipy without one here (betainc, zeta, expi, ...) are in
  ``special_ops2.py``;
- ``clz``, ``population_count`` (CUDA's ``__clz``/``__popc`` family);
- ``reduce_precision``: the CPU impl's bit arithmetic (round to nearest even on the mantissa,
  overflow to inf, underflow to a signed zero, NaN kept);
- ``top_k`` along any axis: NaN largest, ties in index order (the CPU impl's total order on the
  bits). For ``k <= 64`` one thread per row keeps the k best seen so far; for larger ``k`` one
  thread per element counts the elements ranked above it (O(n) each).
"""

from __future__ import annotations

import math

import numpy as np

from fjax.backends.cuda.kernel_util import _block, _loop
from fjax.backends.cuda.ops import LOW_FLOATS, ctype, load_expr, store_expr, stype
from fjax.backends.cuda.special_ops2 import SPECIAL as _SPECIAL2

# double-precision device functions, each guarded so several kernels of one module may carry it
_DIGAMMA = r"""
#ifndef FJ_DEF_DIGAMMA
#define FJ_DEF_DIGAMMA
__device__ double fj_digamma(double v) {
  if (v <= 0.0 && v == floor(v)) return NAN;
  const bool neg = v < 0.5;
  double z = neg ? 1.0 - v : v, acc = 0.0;
  // raised to z >= 10, then the asymptotic series through B_14 (truncation below 3e-18; stopping
  // at z >= 6 and B_10 left 1e-11)
  for (int i = 0; i < 10; ++i) if (z < 10.0) { acc -= 1.0 / z; z += 1.0; }
  const double inv = 1.0 / z, inv2 = inv * inv;
  double r = acc + log(z) - 0.5 * inv
      - inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 * (1.0 / 132
      - inv2 * (691.0 / 32760 - inv2 / 12.0))))));
  if (neg) r -= 3.141592653589793 / tan(3.141592653589793 * v);
  return r;
}
#endif
"""

_POLYGAMMA = (
    _DIGAMMA
    + r"""
#ifndef FJ_DEF_POLYGAMMA
#define FJ_DEF_POLYGAMMA
__device__ double fj_polygamma(double m, double v) {
  if (m != m || v != v) return NAN;
  if (m == 0.0) return fj_digamma(v);
  if (m < 1.0 || m != floor(m) || (v <= 0.0 && v == floor(v))) return NAN;
  const double n = m, fact = tgamma(m + 1.0);
  double z = v, acc = 0.0;
  for (int i = 0; i < 64 && z < 15.0; ++i) { acc += 1.0 / pow(z, n + 1.0); z += 1.0; }
  // asymptotic series at z >= 15: (m-1)!/z^m + m!/(2 z^(m+1)) + sum B_2k (2k+m-1)!/((2k)! z^(2k+m))
  const double b2k[8] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6, -3617.0 / 510};
  double s = fact / n / pow(z, n) + fact / (2.0 * pow(z, n + 1.0));
  for (int k = 1; k <= 8; ++k)
    s += b2k[k - 1] * exp(lgamma(n + 2.0 * k) - lgamma(2.0 * k + 1.0)) / pow(z, 2.0 * k + n);
  const double sign = fmod(n, 2.0) == 1.0 ? 1.0 : -1.0;
  return sign * (s + fact * acc);
}
#endif
"""
)

_IGAMMA = r"""
#ifndef FJ_DEF_IGAMMA
#define FJ_DEF_IGAMMA
// the regularized lower (P) and upper (Q) incomplete gamma functions, one computed, one 1 - it
__device__ double fj_igamma_pq(double a, double x, bool upper) {
  if (a != a || x != x || a < 0.0 || x < 0.0) return NAN;
  if (a == 0.0) return x > 0.0 ? (upper ? 0.0 : 1.0) : NAN;
  if (x == 0.0) return upper ? 1.0 : 0.0;
  if (isinf(x)) return isinf(a) ? NAN : (upper ? 0.0 : 1.0);
  if (isinf(a)) return upper ? 1.0 : 0.0;
  const double pre = exp(-x + a * log(x) - lgamma(a));
  if (x < a + 1.0) {  // the series of P
    double ap = a, del = 1.0 / a, sum = del;
    for (int i = 0; i < 100000; ++i) {
      ap += 1.0; del *= x / ap; sum += del;
      if (fabs(del) < fabs(sum) * 1e-17) break;
    }
    const double p = sum * pre;
    return upper ? 1.0 - p : p;
  }
  // Q by the continued fraction (modified Lentz)
  const double tiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
  for (int i = 1; i < 100000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b; if (fabs(d) < tiny) d = tiny;
    c = b + an / c; if (fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    const double del = d * c;
    h *= del;
    if (fabs(del - 1.0) < 1e-16) break;
  }
  const double q = pre * h;
  return upper ? q : 1.0 - q;
}
#endif
"""

_BESSEL = r"""
#ifndef FJ_DEF_BESSEL
#define FJ_DEF_BESSEL
// exp(-|x|) I_nu(x) for nu = 0, 1: the power series for |x| <= 20, the asymptotic expansion above
__device__ double fj_bessel_ie(int nu, double x) {
  if (x != x) return NAN;
  const double ax = fabs(x), sgn = (nu == 1 && x < 0.0) ? -1.0 : 1.0;
  if (isinf(ax)) return sgn * 0.0;
  double s;
  if (ax <= 20.0) {
    const double q = 0.25 * ax * ax;
    double term = nu == 1 ? 0.5 * ax : 1.0;
    s = term;
    for (int k = 1; k < 500; ++k) {
      term *= q / (k * (double)(k + nu));
      s += term;
      if (term < s * 1e-17) break;
    }
    s *= exp(-ax);
  } else {
    const double mu = 4.0 * nu * nu;
    double term = 1.0;
    s = 1.0;
    for (int k = 1; k < 60; ++k) {
      const double nt = -term * (mu - (2.0 * k - 1.0) * (2.0 * k - 1.0)) / (k * 8.0 * ax);
      if (fabs(nt) >= fabs(term)) break;
      term = nt;
      s += term;
      if (fabs(term) < fabs(s) * 1e-17) break;
    }
    s /= sqrt(2.0 * 3.141592653589793 * ax);
  }
  return sgn * s;
}
#endif
"""

_IGAMMA_DERIVS = (
    _DIGAMMA
    + r"""
#ifndef FJ_DEF_IGAMMA_DERIVS
#define FJ_DEF_IGAMMA_DERIVS
// dP/da (ratio = 0) or -(dP/da) / (dP/dx) (ratio = 1) of the regularized lower incomplete gamma
// function, as the CPU impl: the series or Legendre's continued fraction differentiated step by step
__device__ double fj_igamma_derivs(double a, double x, int ratio) {
  if (!(a > 0.0) || !(x >= 0.0) || a != a || x != x) return NAN;
  if (x == 0.0 || isinf(x) || isinf(a)) return 0.0;
  const double tiny = 1e-300;
  if (x < a + 1.0 || x < 1.0) {
    double t = 1.0, dt = 0.0, s = 1.0, ds = 0.0;
    for (int n = 1; n < 20000; ++n) {
      const double r = x / (a + n);
      dt = dt * r - t * r / (a + n);
      t = t * r;
      s += t; ds += dt;
      if (!(fabs(t) > 1e-17 * fabs(s)) && !(fabs(dt) > 1e-17 * fabs(ds))) break;
    }
    const double inner = (log(x) - fj_digamma(a + 1.0)) * s + ds;
    if (ratio) return -(inner * x / a);
    return exp(a * log(x) - x - lgamma(a + 1.0)) * inner;
  }
  double b = x + 1.0 - a, db = -1.0, c = 1.0 / tiny, dc = 0.0, d = 1.0 / b, dd = 1.0 / (b * b);
  double h = d, dh = dd;
  for (int i = 1; i < 20000; ++i) {
    const double an = -i * (i - a), dan = (double)i;
    b += 2.0;
    double dpre = an * d + b;
    const double ddpre = dan * d + an * dd + db;
    if (fabs(dpre) < tiny) dpre = tiny;
    double cn = b + an / c;
    const double dcn = db + dan / c - an * dc / (c * c);
    if (fabs(cn) < tiny) cn = tiny;
    const double d_new = 1.0 / dpre, dd_new = -ddpre / (dpre * dpre);
    const double delta = d_new * cn, ddelta = dd_new * cn + d_new * dcn;
    const double h_new = h * delta, dh_new = dh * delta + h * ddelta;
    c = cn; dc = dcn; d = d_new; dd = dd_new; h = h_new; dh = dh_new;
    if (!(fabs(delta - 1.0) > 1e-16) && !(fabs(ddelta) > 1e-16 * fabs(dh / (h == 0.0 ? 1.0 : h)))) break;
  }
  const double inner = (log(x) - fj_digamma(a)) * h + dh;
  if (ratio) return inner * x;
  return -exp(a * log(x) - x - lgamma(a)) * inner;
}
#endif
"""
)

_NDTR = r"""
#ifndef FJ_DEF_LOG_NDTR
#define FJ_DEF_LOG_NDTR
// log of the standard normal CDF: log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 below -1 (no underflow),
// log1p(-erfc(x / sqrt 2) / 2) above
__device__ double fj_log_ndtr(double x) {
  if (x != x) return x;
  if (x < -1.0) return log(0.5 * erfcx(-x * 0.7071067811865476)) - 0.5 * x * x;
  return log1p(-0.5 * erfc(x * 0.7071067811865476));
}
#endif
"""

# primitive -> (device function prelude, call expression over double operands d0, d1, ...)
_SPECIAL = {
    "digamma": (_DIGAMMA, "fj_digamma(d0)"),
    "polygamma": (_POLYGAMMA, "fj_polygamma(d0, d1)"),
    "igamma": (_IGAMMA, "fj_igamma_pq(d0, d1, false)"),
    "igammac": (_IGAMMA, "fj_igamma_pq(d0, d1, true)"),
    "bessel_i0e": (_BESSEL, "fj_bessel_ie(0, d0)"),
    "bessel_i1e": (_BESSEL, "fj_bessel_ie(1, d0)"),
    "ndtri": ("", "normcdfinv(d0)"),
    "log_ndtr": (_NDTR, "fj_log_ndtr(d0)"),
    "erfcx": ("", "erfcx(d0)"),
    "igamma_grad_a": (_IGAMMA_DERIVS, "fj_igamma_derivs(d0, d1, 0)"),
    "random_gamma_grad": (_IGAMMA_DERIVS, "fj_igamma_derivs(d0, d1, 1)"),
    **_SPECIAL2,  # betainc, zeta, the exponential integrals, ... (special_ops2.py)
}
NAMES = frozenset(_SPECIAL) | {"clz", "population_count", "reduce_precision", "top_k"}


def render(
    name: str, params: dict, in_avals: list, out_avals: list, ins: list, outs: list, launch, alloc
) -> list | None:  # noqa: ANN001
    """Plan records for ``name`` (one of ``NAMES``), or None for another primitive."""
    if name not in NAMES:
        return None
    if name == "top_k":
        return _top_k(params, in_avals, out_avals, ins, outs, launch)
    a = out_avals[0]
    d = np.dtype(a.dtype)
    n = math.prod(a.shape)
    blk = _block(n)
    S = stype(d)
    names = [f"x{i}" for i in range(len(in_avals))]
    sig = "".join(f"const {stype(x.dtype)}* __restrict__ {v}, " for v, x in zip(names, in_avals))
    idx = ["t" if tuple(x.shape) else "0" for x in in_avals]
    if name in _SPECIAL:
        if d not in (np.float32, np.float64) and d not in LOW_FLOATS:
            raise NotImplementedError(f"CUDA backend: {name} on {d.name}")
        prelude, call = _SPECIAL[name]
        loads = "".join(
            f"    const double d{i} = (double){load_expr(x.dtype, f'{v}[{j}]')};\n"
            for i, (v, x, j) in enumerate(zip(names, in_avals, idx))
        )
        body = f"{loads}    o[t] = {store_expr(d, f'({ctype(d)}){call}')};\n"
        why = "in double precision, rounded once"
    elif name in ("clz", "population_count"):
        if d.kind not in "iu":
            raise NotImplementedError(f"CUDA backend: {name} on {d.name}")
        bits = 8 * d.itemsize
        U = "unsigned long long" if bits == 64 else "unsigned int"
        mask = "" if bits >= 32 else f" & {(1 << bits) - 1}u"
        v = f"(({U})({ctype(d)})x0[t]{mask})"
        if name == "population_count":
            expr = f"__popcll({v})" if bits == 64 else f"__popc({v})"
        else:
            expr = f"__clzll({v})" if bits == 64 else f"(__clz({v}) - {32 - bits})" if bits < 32 else f"__clz({v})"
        prelude, body, why = "", f"    o[t] = ({ctype(d)})({expr});\n", "on the bits"
    else:  # reduce_precision
        prelude, body, why = (
            "",
            _reduce_precision_body(d, int(params["exponent_bits"]), int(params["mantissa_bits"])),
            "",
        )
    src = (
        f"{prelude}// {name}{': ' + why if why else ''}\n"
        f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__({sig}{S}* __restrict__ o) {{\n'
        f"  {_loop(n, blk)} {{\n{body}  }}\n}}\n"
    )
    return alloc(0) + (launch("op", src, n, blk, (*ins, outs[0]), name) if n else [])


# (bits, exponent bits, mantissa bits) of the float formats
_FORMATS = {np.dtype(np.float32): (32, 8, 23), np.dtype(np.float64): (64, 11, 52)}


def _format(d: np.dtype) -> tuple:
    if d in _FORMATS:
        return _FORMATS[d]
    tag = LOW_FLOATS.get(d)
    if tag == "bf16":
        return 16, 8, 7
    if tag == "f16":
        return 16, 5, 10
    raise NotImplementedError(f"CUDA backend: reduce_precision on {d.name}")


def _reduce_precision_body(d: np.dtype, ebits: int, mbits: int) -> str:
    nbits, src_exp, src_man = _format(d)
    U = {16: "unsigned short", 32: "unsigned int", 64: "unsigned long long"}[nbits]
    sfx = "ull"
    if nbits == 16:
        load = "x0[t]"  # (the buffer holds the bits)
    elif nbits == 32:
        load = "__float_as_uint(x0[t])"
    else:
        load = "(unsigned long long)__double_as_longlong(x0[t])"
    exp_mask = ((1 << src_exp) - 1) << src_man
    man_mask = (1 << src_man) - 1
    lines = [f"    const {U} raw = ({U}){load};", f"    {U} bits = raw;"]
    if mbits < src_man:
        shift = src_man - mbits
        last = 1 << shift
        rnd = f"((bits & {last}{sfx}) >> {shift}) + {(last >> 1) - 1}{sfx}"  # to nearest, ties to even
        lines.append(f"    bits = ({U})((bits + {rnd}) & ~({last - 1}{sfx}));")
    if ebits < src_exp:
        bias_src, bias_dst = (1 << (src_exp - 1)) - 1, (1 << (ebits - 1)) - 1
        max_exp, min_exp = (bias_src + bias_dst) << src_man, (bias_src - bias_dst) << src_man
        sign = 1 << (nbits - 1)
        lines += [
            f"    const {U} e = ({U})(bits & {exp_mask}{sfx}), z = ({U})(bits & {sign}{sfx});",
            f"    if (e > {max_exp}{sfx}) bits = ({U})(z | {exp_mask}{sfx}); else if (e <= {min_exp}{sfx}) bits = z;",
        ]
    if mbits > 0:  # NaN stays the operand's NaN
        lines.append(f"    if ((raw & {exp_mask}{sfx}) == {exp_mask}{sfx} && (raw & {man_mask}{sfx}) != 0) bits = raw;")
    if nbits == 16:
        store = "bits"
    elif nbits == 32:
        store = "__uint_as_float(bits)"
    else:
        store = "__longlong_as_double((long long)bits)"
    lines.append(f"    o[t] = {store};")
    return "\n".join(lines) + "\n"


def _key_expr(d: np.dtype, v: str) -> str:
    """An unsigned 64-bit key of the value ``v`` (as loaded from storage) ordering as the CPU
    impl's total order: -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN for floats."""
    if d.kind == "f" or d in LOW_FLOATS:
        nbits = 8 * d.itemsize
        if nbits == 16:
            u = f"(unsigned long long)(unsigned short)({v})"
        elif nbits == 32:
            u = f"(unsigned long long)__float_as_uint({v})"
        else:
            u = f"(unsigned long long)__double_as_longlong({v})"
        top = 1 << (nbits - 1)
        full = (1 << nbits) - 1
        return f"fj_fkey({u}, {top}ull, {full}ull)"
    if d.kind == "i":
        nbits = 8 * d.itemsize
        return f"(((unsigned long long)(long long)({v}) & {(1 << nbits) - 1}ull) ^ {1 << (nbits - 1)}ull)"
    if d.kind in "ub":
        return f"(unsigned long long)({v})"
    raise NotImplementedError(f"CUDA backend: top_k on {d.name}")


_FKEY = r"""
#ifndef FJ_DEF_FKEY
#define FJ_DEF_FKEY
__device__ __forceinline__ unsigned long long fj_fkey(unsigned long long u, unsigned long long top,
                                                      unsigned long long full) {
  return (u & top) ? (~u & full) : (u | top);
}
#endif
"""


def _top_k(params: dict, in_avals: list, out_avals: list, ins: list, outs: list, launch) -> list:  # noqa: ANN001
    from fjax.backends.cuda.records import Alloc  # noqa: PLC0415

    a = in_avals[0]
    d = np.dtype(a.dtype)
    k, axis = int(params["k"]), int(params["axis"])
    shape = tuple(a.shape)
    n0, n, n2 = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])
    S, I = stype(d), ctype(out_avals[1].dtype)  # noqa: E741
    recs = [Alloc(o, tuple(av.shape), np.dtype(av.dtype)) for o, av in zip(outs, out_avals)]
    rows = n0 * n2
    if not rows or not k:
        return recs
    key = _key_expr(d, "x[(i * N + j) * N2 + r]")
    head = f"{_FKEY}// top_k along axis {axis} (k = {k} of {n}): NaN largest, ties in index order\n"
    if k <= 64:
        blk = _block(rows)
        src = (
            head + f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__(const {S}* __restrict__ x, '
            f"{S}* __restrict__ ov, {I}* __restrict__ oi) {{\n"
            f"  const long long N = {n}, N2 = {n2};\n"
            f"  {_loop(rows, blk)} {{\n"
            f"    const long long i = t / N2, r = t % N2;\n"
            f"    unsigned long long bk[{k}]; long long bj[{k}]; int m = 0;\n"
            f"    for (long long j = 0; j < N; ++j) {{\n"
            f"      const unsigned long long kj = {key};\n"
            f"      if (m == {k} && kj <= bk[{k - 1}]) continue;\n"
            f"      int p = m < {k} ? m : {k - 1};\n"
            f"      while (p > 0 && bk[p - 1] < kj) {{ bk[p] = bk[p - 1]; bj[p] = bj[p - 1]; --p; }}\n"
            f"      bk[p] = kj; bj[p] = j; if (m < {k}) ++m;\n    }}\n"
            f"    for (int q = 0; q < {k}; ++q) {{\n"
            f"      ov[(i * {k} + q) * N2 + r] = x[(i * N + bj[q]) * N2 + r];\n"
            f"      oi[(i * {k} + q) * N2 + r] = ({I})bj[q];\n    }}\n  }}\n}}\n"
        )
        return recs + launch("op", src, rows, blk, (ins[0], outs[0], outs[1]), "top_k")
    total = rows * n
    blk = _block(total)
    key_c = _key_expr(d, "x[(i * N + c) * N2 + r]")
    src = (
        head + f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__(const {S}* __restrict__ x, '
        f"{S}* __restrict__ ov, {I}* __restrict__ oi) {{\n"
        f"  const long long N = {n}, N2 = {n2};\n"
        f"  {_loop(total, blk)} {{\n"
        f"    const long long j = t % N, row = t / N, i = row / N2, r = row % N2;\n"
        f"    const unsigned long long kj = {key};\n"
        f"    long long rank = 0;\n"
        f"    for (long long c = 0; c < N && rank < {k}; ++c) {{\n"
        f"      const unsigned long long kc = {key_c};\n"
        f"      rank += (kc > kj || (kc == kj && c < j));\n    }}\n"
        f"    if (rank < {k}) {{\n"
        f"      ov[(i * {k} + rank) * N2 + r] = x[(i * N + j) * N2 + r];\n"
        f"      oi[(i * {k} + rank) * N2 + r] = ({I})j;\n    }}\n  }}\n}}\n"
    )
    return recs + launch("op", src, total, blk, (ins[0], outs[0], outs[1]), "top_k")
