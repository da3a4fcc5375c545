"""CUDA kernels for the complex special functions (``wofz``), dispatched from ``host_ops.render``
after ``special_ops``: the Faddeeva function ``w(z) = exp(-z^2) erfc(-i z)`` (complex64/complex128
in and out; ``jax.scipy.special.wofz``).

scipy runs S. G. Johnson's Faddeeva package; this follows the same published method and branch
points, in double precision (complex64: rounded once, as the CPU computes it through complex128):

- on the axes ``w(i y) = erfcx(y)`` and ``w(x) = exp(-x^2) + 2i/sqrt(pi) dawsn(x)`` (Cephes'
  ``dawsn`` of ``special_ops2.py``, which agrees with Faddeeva's to ~1e-15);
- far from the origin (|y| > 7, or |x| > 6 with |y| > 0.1, ...) Laplace's continued fraction, its
  length estimated from z (Poppe & Wijers), one or two of its terms beyond |x| + |y| = 4000; below
  the real axis it is taken at -z, then ``w(z) = 2 exp(-z^2) - w(-z)``;
- elsewhere Zaghloul & Ali's Algorithm 916 (ACM TOMS 38, 2011): sums over ``exp(-a^2 n^2)`` with
  ``a = pi / sqrt(-log(eps / 2))`` (the table computed here with numpy), Taylor-expanded for
  |x| < 5e-4, summed outwards from ``n0 = round(x / a)`` for |x| >= 10 (where |y| < 1e-10).

Not run on a GPU: checked on the CUDA emulator against scipy and compiled by nvcc.
"""

from __future__ import annotations

import math

import numpy as np

from fjax.backends.cuda.kernel_util import _block, _loop
from fjax.backends.cuda.ops import ctype
from fjax.backends.cuda.special_ops2 import _DAWSN

NAMES = frozenset({"wofz"})

_WOFZ_A2 = 0.268657157075235951582
_WOFZ_TABLE = ", ".join(repr(float(v)) for v in np.exp(-_WOFZ_A2 * np.arange(1, 53, dtype=np.float64) ** 2))
_WOFZ = (
    _DAWSN
    + r"""
#ifndef FJ_DEF_WOFZ
#define FJ_DEF_WOFZ
__device__ const double fj_wofz_E[52] = {"""
    + _WOFZ_TABLE
    + r"""};
__device__ __forceinline__ double fj_wofz_sinc(double x, double sx) {
  return fabs(x) < 1e-4 ? 1.0 - x * x / 6.0 : sx / x;
}
__device__ fj_c128 fj_wofz(const double xr, const double yi) {
  const double ispi = 0.56418958354775628695;  // 1 / sqrt(pi)
  if (xr == 0.0) return fj_c128(erfcx(yi), xr);
  if (yi == 0.0) return fj_c128(exp(-xr * xr), 2.0 * ispi * fj_dawsn(xr));
  const double a = 0.518321480430085929872, a2 = 0.268657157075235951582, c = 0.329973702884629072537;
  const double eps = 2.220446049250313e-16, x = fabs(xr), ya = fabs(yi), y2 = yi * yi;
  if (ya > 7.0 || (x > 6.0 && (ya > 0.1 || (x > 8.0 && ya > 1e-10) || x > 28.0))) {
    const double xs = yi < 0.0 ? -xr : xr;  // w(xs + i ya): at -z below the real axis
    double wr, wi;
    if (x + ya > 1e7) {  // one term, scaled against overflow
      if (x > ya) {
        const double q = ya / xs, d = ispi / (xs + q * ya);
        wr = d * q; wi = d;
      } else if (isinf(ya)) {
        return (isnan(x) || yi < 0.0) ? fj_c128(NAN, NAN) : fj_c128(0.0, 0.0);
      } else {
        const double q = xs / ya, d = ispi / (q * xs + ya);
        wr = d; wi = d * q;
      }
    } else if (x + ya > 4000.0) {  // two terms
      const double dr = xs * xs - ya * ya - 0.5, di = 2.0 * xs * ya, d = ispi / (dr * dr + di * di);
      wr = d * (xs * di - ya * dr); wi = d * (xs * dr + ya * di);
    } else {  // the continued fraction from its tail, its length estimated from z (Poppe & Wijers)
      double pr = xs, pi = ya;
      for (double nu = 0.5 * (floor(3.9 + 11.398 / (0.08254 * x + 0.1421 * ya + 0.2023)) - 1.0); nu > 0.4; nu -= 0.5) {
        const double d = nu / (pr * pr + pi * pi);
        pr = xs - pr * d; pi = ya + pi * d;
      }
      const double d = ispi / (pr * pr + pi * pi);
      wr = d * pi; wi = d * pr;
    }
    if (yi < 0.0) {
      // exp(-z^2); an exponent of real part -inf gives 0 whatever its imaginary part (C99's cexp)
      const double er = (ya - xs) * (xs + ya);
      const fj_c128 e = er == -INFINITY ? fj_c128(0.0, 0.0) : fj_cexp(fj_c128(er, 2.0 * xs * yi));
      return fj_c128(2.0 * e.re - wr, 2.0 * e.im - wi);
    }
    return fj_c128(wr, wi);
  }
  double wr = 0.0, wi = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0, s5 = 0.0;
  if (x < 10.0) {
    if (yi != yi) return fj_c128(yi, yi);
    double ex2, p2 = 1.0, pm2 = 1.0;
    if (x < 5e-4) {  // exp(+-2 a x) and exp(-x^2) by Taylor; s5 - s4 summed as one sinh series
      const double xx = x * x, t = 2.0 * a * x;
      ex2 = 1.0 - xx * (1.0 - 0.5 * xx);
      const double e2 = 1.0 + t * (1.0 + t * (0.5 + t / 6.0)), em2 = 1.0 - t * (1.0 - t * (0.5 - t / 6.0));
      for (int n = 1; n <= 52; ++n) {
        const double cf = fj_wofz_E[n - 1] * ex2 / (a2 * (double)(n * n) + y2), u = 2.0 * a * n * x;
        p2 *= e2; pm2 *= em2;
        s1 += cf; s2 += cf * pm2; s3 += cf * p2;
        s5 += cf * (2.0 * a) * n * (u * (1.0 + u * u * (1.0 / 6.0 + u * u / 120.0)));
        if (cf * p2 < eps * s3) break;
      }
    } else {
      ex2 = exp(-x * x);
      const double e2 = exp(2.0 * a * x), em2 = 1.0 / e2;
      for (int n = 1; n <= 52; ++n) {
        const double cf = fj_wofz_E[n - 1] * ex2 / (a2 * (double)(n * n) + y2);
        p2 *= e2; pm2 *= em2;
        s1 += cf; s2 += cf * pm2; s3 += cf * p2;
        s4 += cf * pm2 * (a * n); s5 += cf * p2 * (a * n);
        if (cf * p2 * (a * n) < eps * s5) break;  // the slowest to converge
      }
    }
    const double ee = yi > -6.0 ? ex2 * erfcx(yi) : 2.0 * exp(y2 - x * x);  // exp(-x^2) erfcx(y)
    if (yi > 5.0) {  // the imaginary terms cancel
      const double sxy = sin(x * yi);
      wr = (ee - c * yi * s1) * cos(2.0 * x * yi) + (c * x * ex2) * sxy * fj_wofz_sinc(x * yi, sxy);
    } else {
      const double sxy = sin(xr * yi), s2xy = sin(2.0 * xr * yi), c2xy = cos(2.0 * xr * yi);
      const double c1 = ee - c * yi * s1, c2 = c * xr * ex2;
      wr = c1 * c2xy + c2 * sxy * fj_wofz_sinc(xr * yi, sxy);
      wi = c2 * fj_wofz_sinc(2.0 * xr * yi, s2xy) - c1 * s2xy;
    }
  } else {  // |y| < 1e-10: exp(-x^2) and the sums' terms near n0 = x / a, summed outwards
    if (x != x) return fj_c128(x, x);
    if (yi != yi) return fj_c128(yi, yi);
    wr = exp(-x * x);
    const double n0 = floor(x / a + 0.5), dx = a * n0 - x, e1 = exp(4.0 * a * dx);
    s3 = exp(-dx * dx) / (a2 * n0 * n0 + y2);
    s5 = a * n0 * s3;
    double e1dn = 1.0, dn = 1.0;
    bool done = false;
    for (; n0 - dn > 0.0; dn += 1.0) {
      const double np = n0 + dn, nm = n0 - dn;
      double tp = exp(-(a * dn + dx) * (a * dn + dx));
      e1dn *= e1;
      double tm = tp * e1dn;  // exp(-(a dn - dx)^2)
      tp /= a2 * np * np + y2;
      tm /= a2 * nm * nm + y2;
      s3 += tp + tm; s5 += a * (np * tp + nm * tm);
      if (a * (np * tp + nm * tm) < eps * s5) { done = true; break; }
    }
    for (; !done && dn < 1e4; dn += 1.0) {
      const double np = n0 + dn, tp = exp(-(a * dn + dx) * (a * dn + dx)) / (a2 * np * np + y2);
      s3 += tp; s5 += a * np * tp;
      done = a * np * tp < eps * s5;
    }
  }
  return fj_c128(wr + 0.5 * c * yi * (s2 + s3), wi + 0.5 * c * copysign(s5 - s4, xr));
}
#endif
"""
)


def render(
    name: str, params: dict, in_avals: list, out_avals: list, ins: list, outs: list, launch, alloc
) -> list | None:  # noqa: ANN001
    """Plan records for the complex special functions here (``wofz``), or None for another
    primitive. One thread per element, in double precision."""
    if name not in NAMES:
        return None
    d = np.dtype(out_avals[0].dtype)
    if d not in (np.complex64, np.complex128) or np.dtype(in_avals[0].dtype) != d:
        raise NotImplementedError(f"CUDA backend: wofz on {d.name}")
    n = math.prod(out_avals[0].shape)
    blk = _block(n)
    C = ctype(d)
    P = "float" if d == np.complex64 else "double"
    src = (
        f"{_WOFZ}// wofz: Faddeeva's w(z) in double precision{', rounded once' if P == 'float' else ''}\n"
        f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__(const {C}* __restrict__ x0, '
        f"{C}* __restrict__ o) {{\n"
        f"  {_loop(n, blk)} {{\n"
        "    const fj_c128 w = fj_wofz((double)x0[t].re, (double)x0[t].im);\n"
        f"    o[t] = {C}(({P})w.re, ({P})w.im);\n  }}\n}}\n"
    )
    return alloc(0) + (launch("op", src, n, blk, (ins[0], outs[0]), name) if n else [])
