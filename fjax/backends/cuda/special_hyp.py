"""CUDA kernels for the hypergeometric functions and spherical harmonics (``hyp1f1``, ``hyp2f1``,
``sph_harm_y``), dispatched from ``host_ops.render`` (its ``_MORE`` modules). One thread per
element, in double precision; float32 operands are computed in double and rounded once, as the CPU
impls (``fjax/scipy/_special_prims.py``) run scipy in float64. 16-bit floats raise
NotImplementedError.

- ``hyp2f1`` (real): scipy runs Cephes' ``hyp2f1`` (S. L. Moshier), and this follows the same
  published method, branch for branch: the special cases (x = 0, a or b = 0, c = a or b, a or b a
  non-positive integer: the terminating series, c a non-positive integer: inf unless the series
  terminates first, x = 1: Gauss's formula), Euler's transformation when c - a - b <= -1, for
  x < -2 the 1/x transformation (AMS55 15.3.7) and for -2 <= x < -1 Pfaff's, then ``hyt2f1``: Pfaff
  for x < -0.5, near x = 1 the 1 - x transformation (AMS55 15.3.6) or, c - a - b an integer, the
  psi-function expansion (15.3.10-12), the recurrence on c (15.2.27) when c - a - b < 0 and the
  series loses accuracy, and the power series with Cephes' recurrence on a (15.2.10) when |a| is
  much larger than |c|. Cephes recurses; here the levels are separate functions (no recursion on
  the device). Gamma and log-gamma are CUDA's (Cephes' conventions at the poles), psi its own
  asymptotic series to double precision, which leaves differences of a few ulps in the prefactors.
- ``hyp1f1`` (real): scipy runs Boost's many-region ``hypergeometric_1F1`` behind its own wrapper
  (NaN in, NaN out; b a non-positive integer: inf, unless the series terminates first: a a negative
  integer >= b, or a == b, summed to k = -b; overflow: +inf). This is not a port of Boost: the
  power series, or Kummer's e^x M(b - a, b, -x), whichever cancels less (both estimated in one
  double pass); below a cancellation of 1e3 that double sum is the result, below 1e14 the chosen
  series is summed again in double-double arithmetic, beyond (large -a with large x) the
  three-term recurrence on b (DLMF 13.3.2) is run downwards from b + N, N ~ |a| x / 2, where the
  series has no cancellation (M is the recessive solution as b grows, so the downward direction is
  stable). Sums are rescaled by 2^-900 so that e^x M(b - a, b, -x) stays finite down to x = -1400;
  below x = -700 the large-|x| expansion (DLMF 13.7.2) where it converges and its e^x part is
  negligible (e.g. M(1, 2, -1e6) = 1e-6). Limits: NaN where the recurrence would take more than
  2e6 steps (|a| |x| > 4e6 with heavy cancellation); sums stop after 2e5 terms (x > 2e5 with
  b < x: the value overflows anyway); below x = -1400, outside the expansion's range, 0. Beyond
  the measured box (|a|, b <= 200, |x| <= 300, 6000 draws) the kernel stays within 1.6e-13 of
  scipy relative to |M| + |x dM/dx|; for b < 0 there scipy returns NaN or is off (to 1e-6) at
  some draws where the kernel agrees with mpmath.
- ``sph_harm_y(n, m, theta, phi)`` (scipy >= 1.15 convention, real operands of one dtype, complex
  result): the normalized associated Legendre functions by scipy's recurrences (the diagonal
  P_m^m from P_{m-2}^{m-2} with sin^2 theta, |sin theta| for m = 1, then upwards in n), times
  e^{i m phi}; zero for |m| > n (n < 0 included); n and m truncated to int64 and then to their
  low 32 bits, as the CPU passes them to scipy (NaN or inf: 0; 3e9 wraps to a negative n).
  scipy forms the n-recurrence's coefficients in 32-bit integers, which overflow from n = 646 on
  (NaN or garbage there); this kernel forms them in double and stays accurate there.

Measured in float64 (the emulator against the CPU backend's scipy 1.17, and against mpmath at
200-300 bits; ``tests/test_cuda_special_hyp.py`` holds the bounds):

- hyp2f1, |a|, |b|, |c| <= 20: for -2 <= x < 1 the kernel equals scipy to 3.4e-15 relative (600
  draws; 6.4e-14 over 20000), as it takes the same branches. That is Cephes' accuracy, not the
  function's: both are off mpmath by up to 1.6e-1 at a few of those draws (p50 3e-15, p99 1.2e-4:
  cancelling series). For x < -2 the 1/x transformation cancels, and the kernel and scipy differ
  by up to 7e-10 (2.9e-6 over 20000 draws; each is ~as far from mpmath, to 3.4e-6): the tests
  allow 1e-13 of the two terms' magnitudes there, 1e-12 of |F| + |x dF/dx| elsewhere.
- hyp1f1, |a|, |b|, |x| <= 50 (1500 draws against mpmath): b > 0 median 2.4e-16, p99 5.4e-14,
  max 5.7e-13 relative (scipy: 6.4e-16, 2.1e-14, 8.7e-14); b < 0 median 4e-16, max 1.25e-12
  (scipy: max 6.7e-10, and ~5% of the points off by 1e-10..1e5x for b < -30, |a| < 1, |x| > 15).
  Measured against |M| + |x dM/dx| (the sensitivity to x, large near the zeros of M) the kernel's
  largest error is 3e-14. The double-double band (cancellation 1e3..1e14) stays at ~1e-16 (the
  recurrence on b, taken there, would leave up to 2e-14). The tests allow 5e-12 of |M| +
  |x dM/dx| against scipy where scipy holds (b > 0; b < 0 with |x| <= 12) and check the rest
  against recorded mpmath values (2e-12; 1e-14 in the double-double band).
- sph_harm_y: the recurrences are scipy's; 1e-13 of the functions' magnitude up to n = 645, and
  against sqrt((2n + 1) / 4 pi) P_n(cos theta) beyond.
- float32: computed in double, rounded once: equal to the CPU within 2 ulps (rounding of the
  double results' last bits).

Not run on a GPU: checked on the CUDA emulator against scipy and compiled by nvcc (sm_80, sm_90).
"""

from __future__ import annotations

import math

import numpy as np

from fjax.backends.cuda.kernel_util import _block, _loop
from fjax.backends.cuda.ops import ctype

NAMES = frozenset({"hyp1f1", "hyp2f1", "sph_harm_y"})

# ---------------------------------------------------------------------------------------------
# hyp2f1 (Cephes' method): the power series with the recurrence on a nests two deep, the main
# routine's transformations three deep; each level is its own function

# big routines stay calls (not inlined into each caller): nvcc's __noinline__, nothing on the emulator
_NOINLINE = r"""
#ifndef FJ_NOINLINE
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define FJ_NOINLINE __noinline__
#else
#define FJ_NOINLINE
#endif
#endif
"""

_H2_COMMON = (
    _NOINLINE
    + r"""
#ifndef FJ_DEF_H2F1_COMMON
#define FJ_DEF_H2F1_COMMON
#define FJ_H2_EPS 1.0e-13
#define FJ_H2_ETHRESH 1.0e-12
#define FJ_H2_MACHEP 1.11022302462515654042e-16
#define FJ_H2_MAXITER 10000
// Gamma with Cephes' conventions: inf at the poles (CUDA's tgamma gives NaN there); 1/Gamma: 0
__device__ FJ_NOINLINE double fj_h2_gamma(double x) {
  return (x <= 0.0 && x == floor(x)) ? INFINITY : tgamma(x);
}
__device__ FJ_NOINLINE double fj_h2_rgamma(double x) {
  return (x <= 0.0 && x == floor(x)) ? 0.0 : 1.0 / tgamma(x);
}
// log|Gamma(x)| and the sign of Gamma(x) (+1 at the poles, where the logarithm is inf)
__device__ __forceinline__ double fj_h2_lgs(double x, int* sg) {
  const double f = floor(x);
  *sg = (x < 0.0 && x != f && fmod(f, 2.0) != 0.0) ? -1 : 1;
  return lgamma(x);
}
// psi to double precision (Cephes' conventions: inf at the poles): reflected below 0, raised to
// z >= 10 by psi(z) = psi(z + 1) - 1/z, then the asymptotic series through B_14 (error < 1e-17)
__device__ FJ_NOINLINE double fj_h2_psi(double x) {
  double r = 0.0, z = x;
  if (x <= 0.0) {
    if (x == floor(x)) return INFINITY;
    const double pi = 3.141592653589793238462643383279502884;
    r = -pi / tan(pi * x);
    z = 1.0 - x;
  }
  while (z < 10.0) { r -= 1.0 / z; z += 1.0; }
  const double w = 1.0 / (z * z);
  const double t = w * (1.0 / 12 - w * (1.0 / 120 - w * (1.0 / 252 - w * (1.0 / 240 - w * (1.0 / 132
      - w * (691.0 / 32760 - w / 12.0))))));
  return r + log(z) - 0.5 / z - t;
}
// 2F1(a, b; b; x) for b a non-positive integer: the terminating sum (AMS55 15.4.2)
__device__ double fj_h2_negc_bc(double a, double b, double x) {
  if (!(fabs(b) < 1e5)) return NAN;
  double term = 1.0, sum = 1.0, tmax = 1.0;
  for (double k = 1.0; k <= -b; k += 1.0) {
    term *= (a + k - 1.0) * x / k;
    tmax = fmax(fabs(term), tmax);
    sum += term;
  }
  if (1e-16 * (1.0 + tmax / fabs(sum)) > 1e-7) return NAN;
  return sum;
}
#endif
"""
)


def _h2_series(lvl: int) -> str:
    """``fj_h2_hys{lvl}``: the power series, |a| >= |b| arranged, through ``fj_h2_ra{lvl}`` (the
    recurrence on a, AMS55 15.2.10) when |a| >> |c| (level 0: the series only; the recurrence's
    own series never need it again)."""
    ra = ""
    if lvl:
        ra = f"""
// the recurrence on a from the series at a - round(a - c) (or a - round(a)), not crossing c or 0
__device__ FJ_NOINLINE double fj_h2_ra{lvl}(double a, double b, double c, double x, double* loss) {{
  const double da = ((c < 0.0 && a <= c) || (c >= 0.0 && a >= c)) ? round(a - c) : round(a);
  double t = a - da, err, f0, f1, f2;
  *loss = 0.0;
  if (fabs(da) > FJ_H2_MAXITER) {{ *loss = 1.0; return NAN; }}
  if (da < 0.0) {{
    f1 = fj_h2_hys{lvl - 1}(t, b, c, x, &err); *loss += err;
    f0 = fj_h2_hys{lvl - 1}(t - 1.0, b, c, x, &err); *loss += err;
    t -= 1.0;
    for (int n = 1; n < -da; ++n) {{
      f2 = f1; f1 = f0;
      f0 = -(2.0 * t - c - t * x + b * x) / (c - t) * f1 - t * (x - 1.0) / (c - t) * f2;
      t -= 1.0;
    }}
  }} else {{
    f1 = fj_h2_hys{lvl - 1}(t, b, c, x, &err); *loss += err;
    f0 = fj_h2_hys{lvl - 1}(t + 1.0, b, c, x, &err); *loss += err;
    t += 1.0;
    for (int n = 1; n < da; ++n) {{
      f2 = f1; f1 = f0;
      f0 = -((2.0 * t - c - t * x + b * x) * f1 + (c - t) * f2) / (t * (x - 1.0));
      t += 1.0;
    }}
  }}
  return f0;
}}
"""
    use_ra = swap_ra = ""
    if lvl:
        use_ra = (
            "  if (fabs(a) > fabs(c) + 1.0 && fabs(c - a) > 2.0 && fabs(a) > 2.0)"
            f" return fj_h2_ra{lvl}(a, b, c, x, loss);\n"
        )
        swap_ra = f"\n    if (fabs(c - a) > 2.0 && fabs(a) > 2.0) return fj_h2_ra{lvl}(a, b, c, x, loss);"
    return (
        ra
        + f"""
// the power series; *loss the estimated relative error (the largest term's rounding and the count)
__device__ FJ_NOINLINE double fj_h2_hys{lvl}(double a, double b, double c, double x, double* loss) {{
  if (fabs(b) > fabs(a)) {{ const double f = b; b = a; a = f; }}
  const double ib = round(b);
  if (fabs(b - ib) < FJ_H2_EPS && ib <= 0.0 && fabs(b) < fabs(a)) {{  // a smaller negative integer first
    const double f = b; b = a; a = f;{swap_ra}
  }}
{use_ra}  if (fabs(c) < FJ_H2_EPS) {{ *loss = 1.0; return INFINITY; }}
  double s = 1.0, u = 1.0, umax = 0.0, k = 0.0;
  int i = 0;
  do {{
    const double m = k + 1.0;
    u = u * ((a + k) * (b + k) * x / ((c + k) * m));
    s += u;
    umax = fmax(umax, fabs(u));
    k = m;
    if (++i > FJ_H2_MAXITER) {{ *loss = 1.0; return s; }}
  }} while (s == 0.0 || fabs(u / s) > FJ_H2_MACHEP);
  *loss = FJ_H2_MACHEP * umax / fabs(s) + FJ_H2_MACHEP * i;
  return s;
}}
"""
    )


_H2_HYT = r"""
// near x = 1 (AMS55 15.3.6, or the psi expansion 15.3.10-12 for integer c - a - b) and for
// x < -0.5 (Pfaff), else the power series
__device__ FJ_NOINLINE double fj_h2_hyt(double a, double b, double c, double x, double* loss) {
  const bool nia = a <= 0.0 && fabs(a - round(a)) < FJ_H2_EPS, nib = b <= 0.0 && fabs(b - round(b)) < FJ_H2_EPS;
  double err = 0.0, err1 = 0.0, y;
  const double s = 1.0 - x;
  if (x < -0.5 && !(nia || nib)) {
    y = b > a ? pow(s, -a) * fj_h2_hys2(a, c - b, c, -x / s, &err) : pow(s, -b) * fj_h2_hys2(c - a, b, c, -x / s, &err);
    *loss = err;
    return y;
  }
  const double d = c - a - b, id = round(d);
  if (x > 0.9 && !(nia || nib)) {
    if (fabs(d - id) > FJ_H2_MACHEP) {
      y = fj_h2_hys2(a, b, c, x, &err);
      if (err < FJ_H2_ETHRESH) { *loss = err; return y; }
      int sg, sgt;
      double q = fj_h2_hys2(a, b, 1.0 - d, s, &err), w;
      w = fj_h2_lgs(d, &sgt); sg = sgt;
      w -= fj_h2_lgs(c - a, &sgt); sg *= sgt;
      w -= fj_h2_lgs(c - b, &sgt); sg *= sgt;
      q *= sg * exp(w);
      double r = pow(s, d) * fj_h2_hys2(c - a, c - b, d + 1.0, s, &err1);
      w = fj_h2_lgs(-d, &sgt); sg = sgt;
      w -= fj_h2_lgs(a, &sgt); sg *= sgt;
      w -= fj_h2_lgs(b, &sgt); sg *= sgt;
      r *= sg * exp(w);
      y = q + r;
      err += err1 + FJ_H2_MACHEP * fmax(fabs(q), fabs(r)) / y;
      *loss = err;
      return y * fj_h2_gamma(c);
    }
    double e, d1, d2;
    int aid;
    if (id >= 0.0) { e = d; d1 = d; d2 = 0.0; aid = (int)id; } else { e = -d; d1 = 0.0; d2 = d; aid = (int)(-id); }
    const double ls = log(s);
    y = (fj_h2_psi(1.0) + fj_h2_psi(1.0 + e) - fj_h2_psi(a + d1) - fj_h2_psi(b + d1) - ls) * fj_h2_rgamma(e + 1.0);
    double p = (a + d1) * (b + d1) * s * fj_h2_rgamma(e + 2.0), t = 1.0, q;
    do {
      const double r = fj_h2_psi(1.0 + t) + fj_h2_psi(1.0 + t + e) - fj_h2_psi(a + t + d1)
                       - fj_h2_psi(b + t + d1) - ls;
      q = p * r;
      y += q;
      p *= s * (a + t + d1) / (t + 1.0);
      p *= (b + t + d1) / (t + 1.0 + e);
      t += 1.0;
      if (t > FJ_H2_MAXITER) { *loss = 1.0; return NAN; }
    } while (y == 0.0 || fabs(q / y) > FJ_H2_EPS);
    if (id == 0.0) {
      *loss = err;
      return y * fj_h2_gamma(c) / (fj_h2_gamma(a) * fj_h2_gamma(b));
    }
    double y1 = 1.0;
    if (aid != 1) {
      t = 0.0; p = 1.0;
      for (int i = 1; i < aid; ++i) {
        p *= s * (a + t + d2) * (b + t + d2) / (1.0 - e + t);
        t += 1.0;
        p /= t;
        y1 += p;
      }
    }
    p = fj_h2_gamma(c);
    y1 *= fj_h2_gamma(e) * p * (fj_h2_rgamma(a + d1) * fj_h2_rgamma(b + d1));
    y *= p * (fj_h2_rgamma(a + d2) * fj_h2_rgamma(b + d2));
    if (aid & 1) y = -y;
    q = pow(s, id);
    if (id > 0.0) y *= q; else y1 *= q;
    *loss = err;
    return y + y1;
  }
  y = fj_h2_hys2(a, b, c, x, &err);
  *loss = err;
  return y;
}
"""


def _h2_main(name: str, rec: str | None, sub: str | None) -> str:
    """One level of Cephes' ``hyp2f1``: ``rec`` the level the recurrence on c calls (None: not
    taken), ``sub`` the level the x < -2 transformation calls (None: x >= -1 here). Euler's and
    Pfaff's transformations keep x's range and restart the level with new parameters."""
    xform = ""
    if sub:
        xform = f"""
    const double t1 = fabs(b - a);
    if (x < -2.0 && fabs(t1 - round(t1)) > FJ_H2_EPS) {{  // AMS55 15.3.7 (poles for integer b - a)
      const double p = {sub}(a, 1.0 - c + a, 1.0 - b + a, 1.0 / x) * pow(-x, -a);
      const double q = {sub}(b, 1.0 - c + b, 1.0 - a + b, 1.0 / x) * pow(-x, -b);
      const double g = fj_h2_gamma(c);
      const double u = g * fj_h2_gamma(b - a) * (fj_h2_rgamma(b) * fj_h2_rgamma(c - a));
      const double v = g * fj_h2_gamma(a - b) * (fj_h2_rgamma(a) * fj_h2_rgamma(c - b));
      return pre * (u * p + v * q);
    }}
    if (x < -1.0) {{  // Pfaff: x / (x - 1) in (0.5, 1)
      if (fabs(a) < fabs(b)) {{
        pre *= pow(s, -a); b = c - b;
      }} else {{
        pre *= pow(s, -b); const double a0 = b; b = c - a; a = a0;
      }}
      x = x / (x - 1.0);
      continue;
    }}"""
    recur = ""
    if rec:
        recur = f"""
      const int aid = (int)(2.0 - id);  // make c - a - b > 0 by the recurrence on c (AMS55 15.2.27)
      double e = c + aid, d2 = {rec}(a, b, e, x), d1 = {rec}(a, b, e + 1.0, x);
      const double q = a + b + 1.0;
      for (int i = 0; i < aid; ++i) {{
        const double r = e - 1.0;
        y = (e * (r - (2.0 * e - q) * x) * d2 + (e - a) * (e - b) * x * d1) / (e * r * s);
        e = r; d1 = d2; d2 = y;
      }}"""
    return f"""
__device__ FJ_NOINLINE double {name}(double a, double b, double c, double x) {{
  double pre = 1.0, err, y;
  for (int pass = 0; pass < 4; ++pass) {{
    const double ax = fabs(x), s = 1.0 - x, ia = round(a), ib = round(b);
    if (x == 0.0) return pre;
    const double d = c - a - b, id = round(d);
    if ((a == 0.0 || b == 0.0) && c != 0.0) return pre;
    const bool nia = a <= 0.0 && fabs(a - ia) < FJ_H2_EPS, nib = b <= 0.0 && fabs(b - ib) < FJ_H2_EPS;
    if (d <= -1.0 && !(fabs(d - id) > FJ_H2_EPS && s < 0.0) && !(nia || nib)) {{  // Euler
      pre *= pow(s, d);
      const double a0 = c - a; b = c - b; a = a0;
      continue;
    }}
    if (d <= 0.0 && x == 1.0 && !(nia || nib)) return pre * INFINITY;
    if (ax < 1.0 || x == -1.0) {{
      if (fabs(b - c) < FJ_H2_EPS) return pre * (nib ? fj_h2_negc_bc(a, b, x) : pow(s, -a));
      if (fabs(a - c) < FJ_H2_EPS) return pre * pow(s, -b);
    }}
    bool poly = nia || nib;
    if (c <= 0.0) {{
      const double ic = round(c);
      if (fabs(c - ic) < FJ_H2_EPS) {{  // c a non-positive integer: finite if the series ends first
        if (!((nia && ia > ic) || (nib && ib > ic))) return pre * INFINITY;
        poly = true;
      }}
    }}
    if (!poly) {{{xform}
      if (ax > 1.0) return pre * INFINITY;
      const double p = c - a, r = c - b, ip = round(p), ir = round(r);
      const bool ncab = (ip <= 0.0 && fabs(p - ip) < FJ_H2_EPS) || (ir <= 0.0 && fabs(r - ir) < FJ_H2_EPS);
      if (fabs(ax - 1.0) < FJ_H2_EPS) {{  // |x| == 1
        if (x > 0.0) {{
          if (ncab) {{
            if (d >= 0.0) return pre * pow(s, d) * fj_h2_hys2(c - a, c - b, c, x, &err);
            return pre * INFINITY;
          }}
          if (d <= 0.0) return pre * INFINITY;
          return pre * (fj_h2_gamma(c) * fj_h2_gamma(d) * (fj_h2_rgamma(p) * fj_h2_rgamma(r)));  // Gauss
        }}
        if (d <= -1.0) return pre * INFINITY;
      }}
      if (d < 0.0) {{
        y = fj_h2_hyt(a, b, c, x, &err);
        if (err < FJ_H2_ETHRESH) return pre * y;{recur}
        return pre * y;
      }}
      if (ncab) return pre * pow(s, d) * fj_h2_hys2(c - a, c - b, c, x, &err);  // AMS55 15.3.3
    }}
    return pre * fj_h2_hyt(a, b, c, x, &err);
  }}
  return NAN;
}}
"""


_HYP2F1 = (
    _H2_COMMON
    + "#ifndef FJ_DEF_HYP2F1\n#define FJ_DEF_HYP2F1\n"
    + _h2_series(0)
    + _h2_series(1)
    + _h2_series(2)
    + _H2_HYT
    + _h2_main("fj_h2f1_d", None, None)
    + _h2_main("fj_h2f1_c", "fj_h2f1_d", None)
    + _h2_main("fj_hyp2f1", "fj_h2f1_d", "fj_h2f1_c")
    + "#endif\n"
)

# ---------------------------------------------------------------------------------------------
# hyp1f1: series (double, double-double) or the recurrence on b; sums carry a count of 2^-900
# rescalings so that the Kummer form's e^x M(b - a, b, -x) stays representable

_HYP1F1 = (
    _NOINLINE
    + r"""
#ifndef FJ_DEF_HYP1F1
#define FJ_DEF_HYP1F1
#define FJ_H1_BIG 8.452712498170644e+270
#define FJ_H1_SMALL 1.1830521861667747e-271
struct fj_dd { double hi, lo; };
__device__ __forceinline__ fj_dd fj_dd_fast(double a, double b) {
  fj_dd r; r.hi = a + b; r.lo = b - (r.hi - a); return r;
}
__device__ __forceinline__ fj_dd fj_dd_sum(double a, double b) {
  fj_dd r; r.hi = a + b;
  const double bb = r.hi - a;
  r.lo = (a - (r.hi - bb)) + (b - bb);
  return r;
}
__device__ __forceinline__ fj_dd fj_dd_add(fj_dd a, fj_dd b) {
  fj_dd s = fj_dd_sum(a.hi, b.hi);
  const fj_dd t = fj_dd_sum(a.lo, b.lo);
  s = fj_dd_fast(s.hi, s.lo + t.hi);
  return fj_dd_fast(s.hi, s.lo + t.lo);
}
__device__ __forceinline__ fj_dd fj_dd_mul(fj_dd a, fj_dd b) {
  const double p = a.hi * b.hi;
  return fj_dd_fast(p, fma(a.hi, b.hi, -p) + (a.hi * b.lo + a.lo * b.hi));
}
__device__ __forceinline__ fj_dd fj_dd_muld(fj_dd a, double b) {
  const double p = a.hi * b;
  return fj_dd_fast(p, fma(a.hi, b, -p) + a.lo * b);
}
__device__ __forceinline__ fj_dd fj_dd_div(fj_dd a, fj_dd b) {
  const double q1 = a.hi / b.hi;
  fj_dd r = fj_dd_muld(b, -q1);
  r = fj_dd_add(a, r);
  return fj_dd_fast(q1, r.hi / b.hi);
}
// sum_k (a)_k x^k / ((b)_k k!) in double: *sa the sum of |terms| (the cancellation), *sc the
// number of 2^-900 rescalings; stops past the sign changes of (a)_k and (b)_k and the largest term
__device__ double fj_h1_ser(double a, double b, double x, double* sa, int* sc) {
  double t = 1.0, s = 1.0, u = 1.0;
  const double kmin = fmax(fmax(-a, -b), x - b);
  int e = 0;
  for (int k = 0; k < 200000; ++k) {
    t *= (a + k) * x / ((b + k) * (k + 1.0));
    s += t; u += fabs(t);
    if (u > FJ_H1_BIG) { t *= FJ_H1_SMALL; s *= FJ_H1_SMALL; u *= FJ_H1_SMALL; ++e; }
    if (t == 0.0 || !(u < INFINITY) || (fabs(t) <= 1e-17 * fabs(s) && k + 1.0 > kmin)) break;
  }
  *sa = u; *sc = e;
  return s;
}
// the same series in double-double arithmetic
__device__ double fj_h1_ser_dd(double a, double b, double x, int* sc) {
  fj_dd t = {1.0, 0.0}, s = {1.0, 0.0};
  const double kmin = fmax(fmax(-a, -b), x - b);
  int e = 0;
  for (int k = 0; k < 200000; ++k) {
    const double kk = (double)k;
    const fj_dd num = fj_dd_muld(fj_dd_sum(a, kk), x), den = fj_dd_muld(fj_dd_sum(b, kk), kk + 1.0);
    t = fj_dd_div(fj_dd_mul(t, num), den);
    s = fj_dd_add(s, t);
    if (fabs(s.hi) > FJ_H1_BIG) {
      t.hi *= FJ_H1_SMALL; t.lo *= FJ_H1_SMALL; s.hi *= FJ_H1_SMALL; s.lo *= FJ_H1_SMALL; ++e;
    }
    if (t.hi == 0.0 || !(fabs(s.hi) < INFINITY) || (fabs(t.hi) <= 1e-33 * fabs(s.hi) && kk + 1.0 > kmin)) break;
  }
  *sc = e;
  return s.hi + s.lo;
}
// x >= 0: DLMF 13.3.2 downwards from b + N (N ~ |a| x / 2, b + N >= 1), where the series does
// not cancel; the two starting sums are brought to one scale, then rescaled as they grow
__device__ double fj_h1_brec(double a, double b, double x, int* sc) {
  double n = fmax(0.0, ceil(0.5 * fabs(a) * x - b));
  if (b + n < 1.0) n = ceil(1.0 - b);
  if (n > 2e6) { *sc = 0; return NAN; }
  const double bn = b + n;
  double u;
  int e0, e1;
  double m1 = fj_h1_ser(a, bn + 1.0, x, &u, &e1), m0 = fj_h1_ser(a, bn, x, &u, &e0);
  const int e = e0 > e1 ? e0 : e1;
  m0 = ldexp(m0, 900 * (e0 - e)); m1 = ldexp(m1, 900 * (e1 - e));
  int es = e;
  for (int i = (int)n; i > 0; --i) {
    const double bb = b + (double)i;  // not bn - (n - i): b + i is exact near b's poles (Sterbenz)
    const double mm = -(bb * (1.0 - bb - x) * m0 + x * (bb - a) * m1) / (bb * (bb - 1.0));
    m1 = m0; m0 = mm;
    if (fabs(m0) > FJ_H1_BIG) { m0 *= FJ_H1_SMALL; m1 *= FJ_H1_SMALL; ++es; }
  }
  *sc = es;
  return m0;
}
// s 2^(900 sc) e^kx, e^kx in two halves (kx down to -1400); an overflow is +inf (as scipy's)
__device__ __forceinline__ double fj_h1_fin(double s, int sc, double kx) {
  double v;
  if (kx == 0.0) {
    v = ldexp(s, 900 * sc);
  } else {
    const double h = exp(0.5 * kx);
    v = ldexp(s * h, 900 * sc) * h;
  }
  return isinf(v) ? INFINITY : v;
}
// x < -700: DLMF 13.7.2, M ~ Gamma(b) / Gamma(b - a) (-x)^-a sum_k (a)_k (a - b + 1)_k / (k! (-x)^k),
// where the other (e^x) part is below 1e-17 of it and the sum converges; else NaN (not taken)
__device__ FJ_NOINLINE double fj_h1_asym(double a, double b, double x) {
  const double ba = b - a, lx = log(-x);
  if (ba <= 0.0 && ba == floor(ba)) return NAN;  // Gamma(b - a) has a pole: the e^x part is all
  if (!(a <= 0.0 && a == floor(a)) && x + (a - ba) * lx + lgamma(ba) - lgamma(a) > -40.0) return NAN;
  double t = 1.0, s = 1.0;
  bool done = false;
  for (int k = 0; k < 200 && !done; ++k) {
    const double tn = t * ((a + k) * (a - b + 1.0 + k) / ((k + 1.0) * -x));
    if (fabs(tn) > fabs(t) && k > 0) return NAN;  // past the smallest term before converging
    t = tn; s += t;
    done = fabs(t) <= 1e-17 * fabs(s);
  }
  if (!done) return NAN;
  double g;
  if (fabs(b) < 170.0 && fabs(ba) < 170.0) {
    g = tgamma(b) / tgamma(ba) * pow(-x, -a);
  } else {
    g = NAN;
  }
  if (!(fabs(g) < INFINITY) || g == 0.0) {  // out of range piecewise: through the logarithms
    const bool nb = b < 0.0 && fmod(floor(b), 2.0) != 0.0, nba = ba < 0.0 && fmod(floor(ba), 2.0) != 0.0;
    g = (nb != nba ? -1.0 : 1.0) * exp(lgamma(b) - lgamma(ba) - a * lx);
  }
  return g * s;
}
__device__ FJ_NOINLINE double fj_hyp1f1(double a, double b, double x) {
  if (isnan(a) || isnan(b) || isnan(x)) return NAN;
  const bool nia = a < 0.0 && trunc(a) == a;
  bool poly = false;
  if (b <= 0.0 && trunc(b) == b) {  // b a non-positive integer: scipy's conventions
    if (b != 0.0 && a == b) {  // sum_{k <= -b} x^k / k!
      double t = 1.0, s = 1.0;
      for (double k = 1.0; k <= -b; k += 1.0) { t *= x / k; s += t; }
      return s;
    }
    if (!(nia && a >= b)) return INFINITY;
    poly = true;  // the series ends at k = -a, before (b)_k does
  }
  if (isinf(a)) return NAN;
  if (a == 0.0 || x == 0.0) return 1.0;
  if (isinf(b)) return 1.0;
  if (a == b) return x > -700.0 ? exp(x) : fj_h1_fin(1.0, 0, x);
  if (isinf(x)) {
    if (x > 0.0) return (a > 0.0 && b > 0.0) ? INFINITY : NAN;
    return (b > 0.0 && b - a > 0.0) ? 0.0 : NAN;
  }
  if (x < -700.0 && !poly) {  // e^x underflows: the large-|x| expansion where it converges
    const double v = fj_h1_asym(a, b, x);
    if (!isnan(v)) return v;
  }
  double u1, u2;
  int e1, e2;
  const double s1 = fj_h1_ser(a, b, x, &u1, &e1), r1 = u1 / fabs(s1);
  if (r1 < 1e3 || (poly && !(r1 < 1e14))) return fj_h1_fin(s1, e1, 0.0);
  // (each sum is formed before fj_h1_fin reads its scale: argument order is unspecified)
  double v;
  if (poly) {
    v = fj_h1_ser_dd(a, b, x, &e1);
    return fj_h1_fin(v, e1, 0.0);
  }
  const double s2 = fj_h1_ser(b - a, b, -x, &u2, &e2), r2 = u2 / fabs(s2);
  if (r2 < 1e3) return fj_h1_fin(s2, e2, x);
  const bool kummer = (r1 < 1e14 || r2 < 1e14) ? r2 < r1 : x < 0.0;
  if (r1 < 1e14 || r2 < 1e14) {
    v = kummer ? fj_h1_ser_dd(b - a, b, -x, &e2) : fj_h1_ser_dd(a, b, x, &e2);
  } else {
    v = kummer ? fj_h1_brec(b - a, b, -x, &e2) : fj_h1_brec(a, b, x, &e2);
  }
  return fj_h1_fin(v, e2, kummer ? x : 0.0);
}
#endif
"""
)

# ---------------------------------------------------------------------------------------------
# sph_harm_y: scipy's recurrences for the normalized associated Legendre functions

_SPH = r"""
#ifndef FJ_DEF_SPH_HARM_Y
#define FJ_DEF_SPH_HARM_Y
// n and m as the CPU passes them to scipy: truncated to int64 (numpy's cast: NaN, +-inf and values
// beyond give INT64_MIN), then the low 32 bits (scipy's int)
__device__ __forceinline__ long long fj_sph_int(double v) {
  if (!(fabs(v) < 9.2e18)) return 0;
  return (long long)(int)(unsigned int)(unsigned long long)(long long)v;
}
// Y_n^m(theta, phi) = Pbar_n^m(cos theta) e^{i m phi}; Pbar normalized over the sphere
__device__ fj_c128 fj_sph_harm_y(long long n, long long m, double theta, double phi) {
  const long long ma = m < 0 ? -m : m;
  double p = 0.0;
  if (ma <= n) {
    const double st = sin(theta), ct = cos(theta), s2 = st * st;
    // the diagonal: Pbar_0^0, Pbar_1^{+-1}, then Pbar_j^j from Pbar_{j-2}^{j-2}
    const double pi = 3.141592653589793238462643383279502884, f1 = sqrt(3.0) / (2.0 * sqrt(2.0 * pi));
    double p0 = 1.0 / (2.0 * sqrt(pi)), p1 = (m < 0 ? f1 : -f1) * fabs(st);
    for (long long j = 2; j <= ma; ++j) {
      const double jd = (double)j, f = sqrt((2.0 * jd + 1.0) * (2.0 * jd - 1.0) / (4.0 * jd * (jd - 1.0)));
      const double pj = f * s2 * p0;
      p0 = p1; p1 = pj;
    }
    const double pmm = ma == 0 ? p0 : p1;
    // upwards in n from Pbar_ma^m and Pbar_{ma+1}^m
    double q0 = pmm, q1 = sqrt(2.0 * (double)ma + 3.0) * ct * pmm;
    const double md = (double)ma;
    for (long long j = ma + 2; j <= n; ++j) {
      const double jd = (double)j, den = (2.0 * jd - 3.0) * (jd * jd - md * md);
      const double f0 = -sqrt((2.0 * jd + 1.0) * ((jd - 1.0) * (jd - 1.0) - md * md) / den);
      const double f1 = sqrt((2.0 * jd + 1.0) * (4.0 * (jd - 1.0) * (jd - 1.0) - 1.0) / den);
      const double qj = f0 * q0 + f1 * ct * q1;
      q0 = q1; q1 = qj;
    }
    p = n == ma ? q0 : q1;
  }
  double sn, cs;
  sincos((double)m * phi, &sn, &cs);
  return fj_c128(p * cs - 0.0 * sn, p * sn + 0.0 * cs);  // (p + 0i) e^{i m phi}: scipy's signs of zero
}
#endif
"""


def render(
    name: str, params: dict, in_avals: list, out_avals: list, ins: list, outs: list, launch, alloc
) -> list | None:  # noqa: ANN001
    """Plan records for ``hyp1f1``, ``hyp2f1`` (float32/float64) and ``sph_harm_y`` (float32/
    float64 operands, complex64/complex128 result), or None for another primitive. Operands are
    of the output's shape or 0-d."""
    if name not in NAMES:
        return None
    src_dt = np.dtype(in_avals[-1].dtype)
    if src_dt not in (np.float32, np.float64) or any(np.dtype(a.dtype) != src_dt for a in in_avals):
        dts = ", ".join(np.dtype(a.dtype).name for a in in_avals)
        raise NotImplementedError(f"CUDA backend: {name} on {dts} (float32 and float64 only)")
    d = np.dtype(out_avals[0].dtype)
    n = math.prod(out_avals[0].shape)
    blk = _block(n)
    S = ctype(src_dt)
    sig = "".join(f"const {S}* __restrict__ x{i}, " for i in range(len(in_avals)))
    v = [f"(double)x{i}[{'t' if tuple(a.shape) else '0'}]" for i, a in enumerate(in_avals)]
    rounded = ", rounded once" if src_dt == np.float32 else ""
    if name == "sph_harm_y":
        C = ctype(d)
        prelude = _SPH
        body = (
            f"    const fj_c128 y = fj_sph_harm_y(fj_sph_int({v[0]}), fj_sph_int({v[1]}), {v[2]}, {v[3]});\n"
            f"    o[t] = {C}(({S})y.re, ({S})y.im);\n"
        )
        why = f"Pbar_n^m(cos theta) e^(i m phi) in double precision{rounded}"
    else:
        C = S
        prelude, fn = (_HYP1F1, "fj_hyp1f1") if name == "hyp1f1" else (_HYP2F1, "fj_hyp2f1")
        body = f"    o[t] = ({S}){fn}({', '.join(v)});\n"
        why = f"in double precision{rounded}"
    src = (
        f"{prelude}// {name}: {why}\n"
        f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__({sig}{C}* __restrict__ o) {{\n'
        f"  {_loop(n, blk)} {{\n{body}  }}\n}}\n"
    )
    return alloc(0) + (launch("op", src, n, blk, (*ins, outs[0]), name) if n else [])
