"""The CUDA kernel of ``random_gamma`` in float64, float16 and bfloat16 (from ``random_ops.render``;
float32 is ``random_ops``'s port of the CPU's numba kernel). For these dtypes the CPU runs the lax
composite ``fjax._random_dists._gamma_composite`` (Marsaglia-Tsang, one key per element), so one
thread per sample runs that composite's operations in its order, each rounded as the CPU rounds it:

- float16/bfloat16: the CPU evaluates every op with its numpy impl (these dtypes do not compile):
  values are held in float, each op's result rounded back to the format (float16 by numpy, directly;
  bfloat16 by ml_dtypes, which rounds a double to float first). ``+ - * / sqrt`` and comparisons
  are then bit for bit. ``log``/``log1p``/``pow`` are computed in double, rounded to float, then to
  the format: numpy's and ml_dtypes' float32 functions rounded the same way for every 16-bit input
  on the machine this was written on (all 2**16 inputs of log/log1p, 2e5 drawn pairs of pow), CUDA's
  double functions are within 1-2 ulp of those (a difference survives two roundings only when the
  exact value lies within ~1e-16 relative of a rounding boundary). The fused multiply-add is the
  CPU impl's (exact product, nudged midpoint: ``fj_fma16``), ``erf_inv`` XLA's float32 one for
  float16 and the CPU impl's double one (Giles, three Newton steps on ``erf``) for bfloat16.
- float64: the CPU compiles the composite (numba): ``log``/``log1p`` are ``vmath.log_f64`` /
  ``log1p_f64`` (ported here; the CPU compiles them allowing fma contraction, nvcc may contract
  differently, the emulator not at all: ~1 ulp), ``erf_inv`` the host impl (Giles and Newton on
  CUDA's ``erf``/``exp``), ``pow`` CUDA's (2 ulp, the CPU's C library ~0.5). So float64 samples
  match to a few ulp, not bit for bit; an acceptance test flips only when its two sides agree to
  ~1e-16, and then that sample differs.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from fjax.backends.cuda.kernel_util import _block, _loop

_F16, _BF16 = np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
TAGS = {np.dtype(np.float64): "f64", _F16: "f16", _BF16: "bf16"}


def _lit(v: object, dt: np.dtype) -> str:
    """The CPU's constant ``np.array(v, dt)`` as a C literal (float for the 16-bit formats)."""
    x = float(np.asarray(v, dt).astype(np.float64))
    return f"({x.hex()})" if dt == np.float64 else f"({x.hex()}f)"


# the impl of erf_inv (fjax/lax/_special.py): Giles' approximation, then three Newton steps
_GILES_LT5 = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
              -0.00417768164, 0.246640727, 1.50140941)  # fmt: skip
_GILES_GE5 = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
              0.00943887047, 1.00167406, 2.83297682)  # fmt: skip

# vmath.log_f64's constants
_LG = (6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01, 2.222219843214978396e-01,
       1.818357216161805012e-01, 1.531383769920937332e-01, 1.479819860511658591e-01)  # fmt: skip


def _common(prelude: str) -> str:
    """``random_ops``' float32 prelude (threefry, key splits, XLA's float32 erf_inv) and the
    float64 functions."""
    lg = [f"{v.hex()}" for v in _LG]
    lt5 = ", ".join(v.hex() for v in _GILES_LT5)
    ge5 = ", ".join(v.hex() for v in _GILES_GE5)
    return prelude + (
        "#ifndef FJ_DEF_GAMMA_WIDE\n#define FJ_DEF_GAMMA_WIDE\n"
        "// fjax.backends.numba.vmath.log_f64 (musl's reduction, Lg1..Lg7)\n"
        "__device__ double fj_log_f64(double x) {\n"
        "  const bool tiny = x < 0x1p-1022;\n"
        "  const double xs = tiny ? x * 0x1p54 : x;\n"
        "  const long long ix = __double_as_longlong(xs) - 0x3FE6A09E667F3BCDLL;\n"
        "  const long long k = (ix >> 52) + (tiny ? -54 : 0);\n"
        "  const double m = __longlong_as_double((ix & 0x000FFFFFFFFFFFFFLL) + 0x3FE6A09E667F3BCDLL);\n"
        "  const double f = m - 1.0, s = f / (2.0 + f), z = s * s, w = z * z;\n"
        f"  const double t1 = w * ({lg[1]} + w * ({lg[3]} + w * {lg[5]}));\n"
        f"  const double t2 = z * ({lg[0]} + w * ({lg[2]} + w * ({lg[4]} + w * {lg[6]})));\n"
        "  const double rr = t2 + t1, hfsq = 0.5 * f * f, dk = (double)k;\n"
        f"  double y = dk * {(6.93147180369123816490e-01).hex()} - "
        f"((hfsq - (s * (hfsq + rr) + dk * {(1.90821492927058770002e-10).hex()})) - f);\n"
        "  y = x < 0.0 ? (double)NAN : y;\n  y = x == 0.0 ? -(double)INFINITY : y;\n"
        "  y = x == (double)INFINITY ? x : y;\n  return x != x ? x : y;\n}\n"
        "__device__ double fj_log1p_f64(double x) {\n"
        "  const double u = 1.0 + x, d = u - 1.0;\n"
        "  double y = fj_log_f64(u) * (x / d);\n"
        "  y = d == 0.0 ? x : y;\n  return x == (double)INFINITY ? x : y;\n}\n"
        "// lax.erf_inv's impl in double (fjax/lax/_special.py)\n"
        "__device__ double fj_erf_inv_ref(double y) {\n"
        f"  const double L[9] = {{{lt5}}}, G[9] = {{{ge5}}};\n"
        "  const double w = -log((1.0 - y) * (1.0 + y));\n"
        "  const bool small = w < 5.0;\n"
        "  const double ws = w - 2.5, wl = sqrt(small ? 5.0 : w) - 3.0;\n"
        "  double p1 = L[0], p2 = G[0];\n"
        "  for (int i = 1; i < 9; ++i) { p1 = L[i] + __dmul_rn(p1, ws); p2 = G[i] + __dmul_rn(p2, wl); }\n"
        "  double r = (small ? p1 : p2) * y;\n"
        "  for (int i = 0; i < 3; ++i) {\n"
        "    const double err = erf(r) - y;\n"
        f"    r = r - err / ({(2.0 / math.sqrt(math.pi)).hex()} * exp(__dmul_rn(-r, r)));\n  }}\n"
        "  r = y == 1.0 ? (double)INFINITY : (y == -1.0 ? -(double)INFINITY : r);\n"
        "  return fabs(y) > 1.0 ? (double)NAN : r;\n}\n"
        "#endif\n"
    )


def _ops(dt: np.dtype) -> dict:
    """C snippets of the composite's ops in ``dt`` (each a format string over its operands)."""
    if dt == np.float64:
        lo = np.nextafter(np.float64(-1), np.float64(0))
        return {
            "T": "double",
            "R": "({})",
            "mul": "__dmul_rn({}, {})",
            "fma": "fma({}, {}, {})",
            "log": "fj_log_f64({})",
            "log1p": "fj_log1p_f64({})",
            "pow": "pow({}, {})",
            "sqrt": "sqrt({})",
            "unit": (
                "  unsigned o1, o2; fj_threefry(k1, k2, 0u, 0u, &o1, &o2);\n"
                "  return (double)((((unsigned long long)o1 << 32) | o2) >> 12) * 0x1p-52;\n"
            ),
            "normal": (
                f"  const double lo = {_lit(lo, dt)};\n"
                f"  const double u = fmax(lo, fma(fj_unit_f64(k1, k2), {_lit(1 - lo, dt)}, lo));\n"
                f"  return __dmul_rn({_lit(np.sqrt(2), dt)}, fj_erf_inv_ref(u));\n"
            ),
        }
    tag = "f16" if dt == _F16 else "bf16"
    nmant = 10 if dt == _F16 else 7
    rnd = "fj_rf16" if dt == _F16 else "fj_rbf16"
    one = np.asarray(1, dt)
    lo = np.nextafter(np.asarray(-1, dt), np.asarray(0, dt))
    span = one - lo
    # the CPU impl's fma: exact in double, then numpy's direct rounding to float16 / ml_dtypes' to
    # float then bfloat16
    fma = "fj_rf16(fj_d2f_odd(fj_fma16({}, {}, {}, 42)))" if dt == _F16 else "fj_rbf16((float)fj_fma16({}, {}, {}, 45))"
    erfinv = "fj_rf16(fj_xla_erf_inv(u))" if dt == _F16 else "fj_rbf16((float)fj_erf_inv_ref((double)u))"
    return {
        "T": "float",
        "R": rnd + "({})",
        "mul": rnd + "({} * {})",
        "fma": fma,
        "log": rnd + "((float)log((double){}))",
        "log1p": rnd + "((float)log1p((double){}))",
        "pow": rnd + "((float)pow((double){}, (double){}))",
        "sqrt": rnd + "(sqrtf({}))",
        "unit": (
            "  unsigned o1, o2; fj_threefry(k1, k2, 0u, 0u, &o1, &o2);\n"
            f"  return (float)((unsigned)(unsigned short)(o1 ^ o2) >> {16 - nmant}) * {2.0**-nmant!r}f;\n"
        ),
        "normal": (
            f"  const float lo = {_lit(lo, dt)};\n"
            f"  const float u = fmaxf(lo, {fma.format(f'fj_unit_{tag}(k1, k2)', _lit(span, dt), 'lo')});\n"
            f"  return {rnd}({_lit(np.sqrt(2), dt)} * {erfinv});\n"
        ),
    }


def _gamma_src(dt: np.dtype) -> str:
    tag = TAGS[dt]
    o = _ops(dt)
    T, R = o["T"], o["R"]

    def c(v: float) -> str:
        return _lit(v, dt)

    def add(a: str, b: str) -> str:
        return R.format(f"{a} + {b}")

    def sub(a: str, b: str) -> str:
        return R.format(f"{a} - {b}")

    def div(a: str, b: str) -> str:
        return R.format(f"{a} / {b}")

    mul, fma, log = o["mul"].format, o["fma"].format, o["log"].format
    one, zero = c(1), c(0)
    return (
        f"#ifndef FJ_DEF_GAMMA_{tag}\n#define FJ_DEF_GAMMA_{tag}\n"
        f"__device__ __forceinline__ {T} fj_unit_{tag}(unsigned k1, unsigned k2) {{\n{o['unit']}}}\n"
        f"__device__ {T} fj_normal_{tag}(unsigned k1, unsigned k2) {{\n{o['normal']}}}\n"
        f"// one Marsaglia-Tsang sample: _random_dists._gamma_one's ops in {dt.name}\n"
        f"__device__ {T} fj_gamma_one_{tag}(unsigned k1, unsigned k2, {T} alpha, bool log_space) {{\n"
        f"  const bool boost = alpha >= {one};\n"
        f"  const {T} alpha_orig = alpha;\n"
        f"  if (!boost) alpha = {add('alpha', one)};\n"
        f"  const {T} d = {sub('alpha', c(1.0 / 3.0))};\n"
        f"  const {T} cc = {div(c(1.0 / 3.0), o['sqrt'].format('d'))};\n"
        "  unsigned key1, key2, sub1, sub2;\n"
        "  fj_child(k1, k2, 0u, &key1, &key2);\n  fj_child(k1, k2, 1u, &sub1, &sub2);\n"
        f"  {T} xx = {zero}, v = {one}, u = {c(2)};\n"
        "  for (;;) {\n"
        f"    const bool squeeze_ok = u >= {fma('-' + c(0.0331), mul('xx', 'xx'), one)};\n"
        f"    const {T} rhs = {fma('xx', c(0.5), mul('d', add(sub(one, 'v'), log('v'))))};\n"
        f"    if (!(squeeze_ok && {log('u')} >= rhs)) break;\n"
        "    unsigned nk1, nk2, xk1, xk2, uk1, uk2;\n"
        "    fj_child(key1, key2, 0u, &nk1, &nk2);\n"
        "    fj_child(key1, key2, 1u, &xk1, &xk2);\n"
        "    fj_child(key1, key2, 2u, &uk1, &uk2);\n"
        "    key1 = nk1; key2 = nk2;\n"
        f"    {T} x = {zero}, vv = {c(-1)};\n"
        f"    while (vv <= {zero}) {{\n"
        "      unsigned a1, a2, s1, s2;\n"
        "      fj_child(xk1, xk2, 0u, &a1, &a2);\n      fj_child(xk1, xk2, 1u, &s1, &s2);\n"
        "      xk1 = a1; xk2 = a2;\n"
        f"      x = fj_normal_{tag}(s1, s2);\n"
        f"      vv = {fma('x', 'cc', one)};\n    }}\n"
        f"    xx = {mul('x', 'x')};\n    v = {mul(mul('vv', 'vv'), 'vv')};\n    u = fj_unit_{tag}(uk1, uk2);\n  }}\n"
        "  if (log_space) {\n"
        f"    const {T} ls = {o['log1p'].format(f'-fj_unit_{tag}(sub1, sub2)')};\n"
        f"    const {T} lb = (boost || ls == {zero}) ? {zero} : {mul('ls', div(one, 'alpha_orig'))};\n"
        f"    return {add(add(log('d'), log('v')), 'lb')};\n  }}\n"
        f"  const {T} samples = {sub(one, f'fj_unit_{tag}(sub1, sub2)')};\n"
        f"  const {T} b = boost ? {one} : {o['pow'].format('samples', div(one, 'alpha_orig'))};\n"
        f"  return {mul(mul('d', 'v'), 'b')};\n}}\n#endif\n"
    )


def render(params: dict, in_avals: list, ins: list, outs: list, launch, alloc, prelude: str) -> list:  # noqa: ANN001
    """Plan records of ``random_gamma`` for a float64, float16 or bfloat16 ``a``; ``prelude``:
    ``random_ops``' float32 device functions."""
    key, a = in_avals
    dt = np.dtype(a.dtype)
    if dt not in TAGS:
        raise NotImplementedError(f"CUDA backend: random_gamma on dtype {dt.name}")
    tag = TAGS[dt]
    n = math.prod(a.shape)
    nb = len(key.shape) - 1
    m = max(1, math.prod(a.shape[nb:]))
    log_space = bool(params["log_space"])
    blk = _block(n)
    S = "double" if dt == np.float64 else "unsigned short"
    load = "a[t]" if dt == np.float64 else f"fj_{tag}_f32(a[t])"
    call = f"fj_gamma_one_{tag}(k1, k2, {load}, {'true' if log_space else 'false'})"
    store = call if dt == np.float64 else f"fj_f32_{tag}({call})"
    src = (
        _common(prelude)
        + _gamma_src(dt)
        + f"// random_gamma {dt.name}{' (log space)' if log_space else ''}: {n} samples, {m} per key\n"
        f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__(const unsigned* __restrict__ keys, '
        f"const {S}* __restrict__ a, {S}* __restrict__ o) {{\n"
        f"  {_loop(n, blk)} {{\n"
        f"    const long long b = t / {m};\n"
        "    unsigned k1, k2;\n"
        f"    fj_child(keys[2 * b], keys[2 * b + 1], (unsigned)(t - b * {m}), &k1, &k2);\n"
        f"    o[t] = {store};\n  }}\n}}\n"
    )
    return alloc(0) + (launch("op", src, n, blk, (ins[0], ins[1], outs[0]), "random_gamma") if n else [])
