"""The CUDA kernels of ``random_poisson`` and ``random_binomial`` (from ``random_ops.render``): the
CPU kernels' algorithms (``fjax/_random_gamma_kernel.py``: Knuth's product method / Hormann's
transformed rejection, and inversion by geometric waiting times / BTRS) with the same key chains,
XLA's float32 ``log``/``log1p`` and the same fused multiply-adds, so the samples are the CPU's.

The rejection loops share their length across the lanes of one key (JAX's loop runs until every
lane of the array has accepted once, and a lane keeps taking later accepted draws until then): the
CPU kernel first finds each lane's first acceptance, then runs every rejection lane on to the
key's longest first acceptance. The GPU does the same in four launches per primitive:

1. one thread per key clears the key's flag and iteration count;
2. one thread per lane flags its key when the lane is on the rejection branch (``lam >= 10`` /
   ``count * q > 10``): the other branch's lanes never read the loop length;
3. one thread per lane of a flagged key runs the rejection loop to its first acceptance (lanes on
   the other branch with the composite's stand-in parameters, ``lam = 1e5`` / ``count = 1e4, q =
   0.5``, as they count towards the loop length too), stores the sample and iteration, and takes
   the key's maximum with ``atomicMax``;
4. one thread per lane computes the result: Knuth / inversion lanes their own loop (independent of
   the other lanes), rejection lanes the iterations after their first acceptance up to the key's
   maximum (poisson: capped at the dtype's ``max_iters``; a lane not accepted by then gives -1).

Every product whose result meets an addition is ``__fmul_rn`` (nvcc's default ``--fmad=true`` must
not contract it into an fma the CPU does not compute), and constants are the CPU's float32 values
written as hex literals. One place is not reproducible bit for bit: poisson's ``lgamma(k + 1)`` for
``k + 1 > 4096`` (rates above about 4000) is CUDA's double ``lgamma`` rounded to float32 where the
CPU calls the C library's (both within a few double ulps, so the float32 values differ only when
the exact value lies within a few 1e-16 relative of a float32 rounding boundary, and a sample only
when that flips an acceptance test). Below that, both read the same table of float32 ``lgamma`` of
integers. The emulator calls the C library's ``lgamma``, so there it is bit for bit throughout.
"""

from __future__ import annotations

import math

import numpy as np

from fjax.backends.cuda.kernel_util import _block, _loop
from fjax.backends.cuda.ops import ctype
from fjax.backends.cuda.records import Alloc


def _f(v: float | np.floating) -> str:
    """A float32 constant as a hex literal (exactly the CPU's ``np.float32(v)``)."""
    return f"({float(np.float32(v)).hex()}f)"


def _prelude(gamma_prelude: str) -> str:
    """``random_ops``' float32 prelude (threefry, key splits, XLA's log/log1p) and this module's
    device functions."""
    from fjax import _random_gamma_kernel as K  # noqa: PLC0415

    table = ", ".join(f"0x{int(b):08X}u" for b in K._LGAMMA_INT.view(np.uint32))
    stirling = ", ".join(_f(v) for v in K._STIRLING32)
    return gamma_prelude + (
        "#ifndef FJ_DEF_DISCRETE\n#define FJ_DEF_DISCRETE\n"
        "// uniform(key, shape, float32)[j] before scaling\n"
        "__device__ __forceinline__ float fj_unit_at(unsigned k1, unsigned k2, unsigned j) {\n"
        "  unsigned o1, o2; fj_threefry(k1, k2, 0u, j, &o1, &o2);\n"
        "  return (float)((o1 ^ o2) >> 9) * 1.1920928955078125e-07f;\n}\n"
        "// the key after `it` iterations of a chain whose next key is split(key)[nxt]\n"
        "__device__ __forceinline__ void fj_chain_skip(unsigned* k1, unsigned* k2, long long it, unsigned nxt) {\n"
        "  for (long long i = 0; i < it; ++i) {\n"
        "    unsigned a, b;\n    fj_child(*k1, *k2, nxt, &a, &b);\n    *k1 = a; *k2 = b;\n  }\n}\n"
        "// float32 lgamma(i) of the integers 0..4096 (the CPU kernel's table)\n"
        f"__device__ const unsigned fj_lgamma_int[4097] = {{{table}}};\n"
        "__device__ float fj_lgamma32(float x) {\n"
        "  if (x >= 1.0f && x <= 4096.0f && x == floorf(x)) return __uint_as_float(fj_lgamma_int[(int)x]);\n"
        "  if (x <= 0.0f && isfinite(x) && x == floorf(x)) return INFINITY;\n"
        "  return (float)lgamma((double)x);\n}\n"
        "// Knuth's product method for one lane: k - 1 (as a 64-bit integer; the caller wraps it)\n"
        "__device__ long long fj_pois_knuth(unsigned k1, unsigned k2, float lam, unsigned j, long long max_iters) {\n"
        "  long long k = 0;\n  float log_prod = 0.0f;\n"
        "  while (log_prod > -lam && k < max_iters) {\n"
        "    unsigned s1, s2, n1, n2;\n"
        "    fj_child(k1, k2, 1u, &s1, &s2);\n    fj_child(k1, k2, 0u, &n1, &n2);\n"
        "    k1 = n1; k2 = n2; ++k;\n"
        "    log_prod = log_prod + fj_xla_log(fj_unit_at(s1, s2, j));\n  }\n"
        "  return k - 1;\n}\n"
        "// Hormann's transformed rejection for one lane: iterations [start, iters) (iters < 0: up to the\n"
        "// first acceptance); the last accepted k (or k_out), and the iterations run in *it_out\n"
        "__device__ float fj_pois_rej(unsigned k1, unsigned k2, float lam, unsigned j, long long start,\n"
        "                             long long iters, float k_out, long long* it_out) {\n"
        "  const float log_lam = fj_xla_log(lam);\n"
        f"  const float b = fmaf({_f(2.53)}, sqrtf(lam), {_f(0.931)});\n"
        f"  const float a = fmaf({_f(0.02483)}, b, {_f(-0.059)});\n"
        f"  const float inv_alpha = {_f(1.1239)} + {_f(1.1328)} / (b - {_f(3.4)});\n"
        f"  const float v_r = {_f(0.9277)} - {_f(3.6224)} / (b - 2.0f);\n"
        "  fj_chain_skip(&k1, &k2, start, 0u);\n"
        "  long long it = start;\n"
        "  while (iters < 0 || it < iters) {\n"
        "    unsigned a1, a2, c1, c2, n1, n2;\n"
        "    fj_child(k1, k2, 1u, &a1, &a2);\n    fj_child(k1, k2, 2u, &c1, &c2);\n"
        "    fj_child(k1, k2, 0u, &n1, &n2);\n    k1 = n1; k2 = n2; ++it;\n"
        "    const float u = fj_unit_at(a1, a2, j) - 0.5f;\n"
        "    const float v = fj_unit_at(c1, c2, j);\n"
        "    const float us = 0.5f - fabsf(u);\n"
        f"    const float k = floorf(fmaf((2.0f * a) / us + b, u, lam) + {_f(0.43)});\n"
        "    const float s = fj_xla_log(__fmul_rn(v, inv_alpha) / (a / (us * us) + b));\n"
        "    const float t = fmaf(k, log_lam, -lam) - fj_lgamma32(k + 1.0f);\n"
        f"    const bool accept1 = us >= {_f(0.07)} && v <= v_r;\n"
        f"    const bool reject = k < 0.0f || (us < {_f(0.013)} && v > us);\n"
        "    if (accept1 || (!reject && s <= t)) {\n      k_out = k;\n      if (iters < 0) break;\n    }\n  }\n"
        "  *it_out = it;\n  return k_out;\n}\n"
        f"__device__ const float fj_stirling_table[10] = {{{stirling}}};\n"
        "__device__ float fj_stirling_tail(float k) {\n"
        "  const float kc = k == k ? fminf(fmaxf(k, 0.0f), 9.0f) : k;\n"
        "  const float kp1 = kc + 1.0f, kp1sq = kp1 * kp1;\n"
        f"  const float inner = {_f(1.0 / 360)} - {_f(1.0 / 1260)} / kp1sq;\n"
        f"  const float approx = ({_f(1.0 / 12)} - inner / kp1sq) / kp1;\n"
        "  if (k <= 9.0f) return fj_stirling_table[(int)floorf(kc)];\n"
        "  return approx;\n}\n"
        "// binomial by inversion (geometric waiting times) for one lane\n"
        "__device__ float fj_binom_inv(unsigned k1, unsigned k2, float count, float q, unsigned j) {\n"
        "  const float log1mq = fj_xla_log1p(-q);\n"
        "  float num_geom = 0.0f, geom_sum = 0.0f;\n"
        "  while (geom_sum <= count) {\n"
        "    unsigned s1, s2, n1, n2;\n"
        "    fj_child(k1, k2, 0u, &s1, &s2);\n    fj_child(k1, k2, 1u, &n1, &n2);\n    k1 = n1; k2 = n2;\n"
        "    num_geom = num_geom + 1.0f;\n"
        "    geom_sum = geom_sum + ceilf(fj_xla_log(fj_unit_at(s1, s2, j)) / log1mq);\n  }\n"
        "  return num_geom - 1.0f;\n}\n"
        "// BTRS for one lane, as fj_pois_rej: iterations [start, iters)\n"
        "__device__ float fj_btrs(unsigned k1, unsigned k2, float count, float prob, unsigned j, long long start,\n"
        "                         long long iters, float k_out, long long* it_out) {\n"
        "  const float stddev = sqrtf(__fmul_rn(count, prob) * (1.0f - prob));\n"
        f"  const float b = fmaf({_f(2.53)}, stddev, {_f(1.15)});\n"
        f"  const float a = fmaf({_f(0.01)}, prob, fmaf({_f(0.0248)}, b, {_f(-0.0873)}));\n"
        "  const float c = fmaf(count, prob, 0.5f);\n"
        f"  const float v_r = {_f(0.92)} - {_f(4.2)} / b;\n"
        "  const float r = prob / (1.0f - prob);\n"
        f"  const float alpha = ({_f(2.83)} + {_f(5.1)} / b) * stddev;\n"
        "  const float m = floorf(__fmul_rn(count + 1.0f, prob));\n"
        "  const float cm1 = (count - m) + 1.0f;\n"
        "  const float log_m = fj_xla_log((m + 1.0f) / __fmul_rn(r, cm1));\n"
        "  const float tail_m = fj_stirling_tail(m), tail_cm = fj_stirling_tail(count - m);\n"
        "  fj_chain_skip(&k1, &k2, start, 0u);\n"
        "  long long it = start;\n"
        "  while (iters < 0 || it < iters) {\n"
        "    unsigned a1, a2, c1, c2, n1, n2;\n"
        "    fj_child(k1, k2, 1u, &a1, &a2);\n    fj_child(k1, k2, 2u, &c1, &c2);\n"
        "    fj_child(k1, k2, 0u, &n1, &n2);\n    k1 = n1; k2 = n2; ++it;\n"
        "    const float u = fj_unit_at(a1, a2, j) - 0.5f;\n"
        "    float v = fj_unit_at(c1, c2, j);\n"
        "    const float us = 0.5f - fabsf(u);\n"
        f"    const bool accept1 = us >= {_f(0.07)} && v <= v_r;\n"
        "    const float k = floorf(fmaf((2.0f * a) / us + b, u, c));\n"
        "    const bool reject = k < 0.0f || k > count;\n"
        "    v = fj_xla_log(__fmul_rn(v, alpha) / (a / (us * us) + b));\n"
        "    const float ck1 = (count - k) + 1.0f;\n"
        "    float ub = fmaf(m + 0.5f, log_m, __fmul_rn(count + 1.0f, fj_xla_log(cm1 / ck1)));\n"
        "    ub = fmaf(k + 0.5f, fj_xla_log(__fmul_rn(r, ck1) / (k + 1.0f)), ub);\n"
        "    ub = ub + tail_m;\n    ub = ub + tail_cm;\n"
        "    ub = ub - fj_stirling_tail(k);\n    ub = ub - fj_stirling_tail(count - k);\n"
        "    if (accept1 || (!reject && v <= ub)) {\n      k_out = k;\n      if (iters < 0) break;\n    }\n  }\n"
        "  *it_out = it;\n  return k_out;\n}\n"
        "#endif\n"
    )


def _head(label: str, blk: int, params: str) -> str:
    return f'// {label}\nextern "C" __global__ void __launch_bounds__({blk}) __NAME__({params}) {{\n'


# the lane's branch quantities of binomial (as the CPU kernel's binomial_f32)
_BINOM_LANE = (
    "    const float count = counts[t], p = probs[t];\n"
    "    const bool p_lt_half = p < 0.5f;\n"
    "    float q = p_lt_half ? p : 1.0f - p;\n"
    "    const bool nan_or_neg = count != count || count < 0.0f;\n"
    "    const bool q_nan = q != q, q_neg = q < 0.0f;\n"
    f"    if (q_nan || q_neg) q = {_f(0.01)};\n"
    "    const bool inversion = nan_or_neg || __fmul_rn(count, q) <= 10.0f;\n"
)


def render(name: str, in_avals: list, out_avals: list, ins: list, outs: list, launch, prelude: str) -> list:  # noqa: ANN001
    """Plan records of ``random_poisson`` / ``random_binomial`` (four launches; see the module);
    ``prelude``: ``random_ops``' float32 device functions."""
    key, x = in_avals[0], in_avals[1]
    out = out_avals[0]
    n = math.prod(x.shape)
    recs: list = [Alloc(outs[0], tuple(out.shape), np.dtype(out.dtype))]
    if not n:
        return recs
    nb = len(key.shape) - 1
    m = max(1, math.prod(x.shape[nb:]))
    nk = n // m
    flag, total, first_k, first_it = (f"{outs[0]}_{s}" for s in ("rflag", "rtotal", "rfirst_k", "rfirst_it"))
    recs += [
        Alloc(flag, (nk,), np.dtype(np.int32)),
        Alloc(total, (nk,), np.dtype(np.uint64)),
        Alloc(first_k, (n,), np.dtype(np.float32)),
        Alloc(first_it, (n,), np.dtype(np.int64)),
    ]
    pre = _prelude(prelude)
    bk, bl = _block(nk), _block(n)
    lane = f"    const long long b = t / {m};\n    const unsigned j = (unsigned)(t - b * {m});\n"
    key_args = "keys[2 * b], keys[2 * b + 1]"
    K = "const unsigned* __restrict__ keys"
    src0 = pre + _head(f"{name}: clear the per-key flags ({nk} keys)", bk, "int* flag, unsigned long long* total")
    src0 += f"  {_loop(nk, bk)} {{\n    flag[t] = 0;\n    total[t] = 0ull;\n  }}\n}}\n"
    if name == "random_poisson":
        from fjax import _random_gamma_kernel as RK  # noqa: PLC0415

        d = np.dtype(out.dtype)
        T = ctype(d)
        max_iters, lo, hi = RK._poisson_limits(d)
        knuth = "(l != l || l < 10.0f)"
        ins_ = f"{K}, const float* __restrict__ lam"
        src1 = pre + _head(f"random_poisson: flag keys with a rejection lane ({n} lanes, {m} per key)", bl,
                           "const float* __restrict__ lam, int* flag")  # fmt: skip
        src1 += f"  {_loop(n, bl)} {{\n    const float l = lam[t];\n    if (!{knuth}) flag[t / {m}] = 1;\n  }}\n}}\n"
        src2 = pre + _head(
            "random_poisson: each lane's first acceptance, the key's longest", bl,
            f"{ins_}, const int* __restrict__ flag, float* fk, long long* fit, unsigned long long* total",
        )  # fmt: skip
        src2 += (
            f"  {_loop(n, bl)} {{\n" + lane + "    if (!flag[b]) continue;\n"
            "    const float l = lam[t];\n    long long it;\n"
            f"    fk[t] = fj_pois_rej({key_args}, {knuth} ? {_f(1e5)} : l, j, 0, -1, -1.0f, &it);\n"
            "    fit[t] = it;\n    atomicMax(&total[b], (unsigned long long)it);\n  }\n}\n"
        )
        src3 = pre + _head(
            f"random_poisson -> {d.name}: Knuth below 10, rejection lanes on to the key's longest loop", bl,
            f"{ins_}, const float* __restrict__ fk, const long long* __restrict__ fit, "
            f"const unsigned long long* __restrict__ total, {T}* __restrict__ o",
        )  # fmt: skip
        src3 += (
            f"  {_loop(n, bl)} {{\n" + lane + "    const float l = lam[t];\n"
            f"    if (l == 0.0f) {{\n      o[t] = ({T})0;\n    }} else if ({knuth}) {{\n"
            f"      o[t] = ({T})fj_pois_knuth({key_args}, l, j, {max_iters}LL);\n"
            "    } else {\n"
            f"      const long long tot = (long long)total[b] < {max_iters}LL ? (long long)total[b] : {max_iters}LL;\n"
            "      long long it;\n"
            "      const float k = fit[t] > tot ? -1.0f\n"
            f"                                   : fj_pois_rej({key_args}, l, j, fit[t], tot, fk[t], &it);\n"
            f"      const double x = k != k ? 0.0 : fmin(fmax((double)k, {lo!r}), {hi!r});\n"
            f"      o[t] = ({T})x;\n    }}\n  }}\n}}\n"
        )
        data = (ins[1],)
    else:
        ins_ = f"{K}, const float* __restrict__ counts, const float* __restrict__ probs"
        src1 = pre + _head(f"random_binomial: flag keys with a BTRS lane ({n} lanes, {m} per key)", bl,
                           "const float* __restrict__ counts, const float* __restrict__ probs, int* flag")  # fmt: skip
        src1 += f"  {_loop(n, bl)} {{\n" + _BINOM_LANE + f"    if (!inversion) flag[t / {m}] = 1;\n  }}\n}}\n"
        src2 = pre + _head(
            "random_binomial: each lane's first BTRS acceptance, the key's longest", bl,
            f"{ins_}, const int* __restrict__ flag, float* fk, long long* fit, unsigned long long* total",
        )  # fmt: skip
        src2 += (
            f"  {_loop(n, bl)} {{\n" + lane + "    if (!flag[b]) continue;\n" + _BINOM_LANE + "    long long it;\n"
            f"    fk[t] = inversion ? fj_btrs({key_args}, {_f(1e4)}, 0.5f, j, 0, -1, -1.0f, &it)\n"
            f"                      : fj_btrs({key_args}, floorf(count), q, j, 0, -1, -1.0f, &it);\n"
            "    fit[t] = it;\n    atomicMax(&total[b], (unsigned long long)it);\n  }\n}\n"
        )
        src3 = pre + _head(
            "random_binomial: inversion lanes, BTRS lanes on to the key's longest loop", bl,
            f"{ins_}, const float* __restrict__ fk, const long long* __restrict__ fit, "
            "const unsigned long long* __restrict__ total, float* __restrict__ o",
        )  # fmt: skip
        src3 += (
            f"  {_loop(n, bl)} {{\n" + lane + _BINOM_LANE + "    const bool count_inf = fabsf(count) == INFINITY;\n"
            "    const float cf = floorf(count);\n    long long it;\n"
            f"    float s = inversion ? fj_binom_inv({key_args}, cf, q, j)\n"
            f"                        : fj_btrs({key_args}, cf, q, j, fit[t], (long long)total[b], fk[t], &it);\n"
            "    if (q_neg || q_nan || nan_or_neg) s = __uint_as_float(0x7FC00000u);\n"
            "    else if (count_inf) s = INFINITY;\n"
            "    const bool keep = p_lt_half || nan_or_neg || q_nan || count_inf;\n"
            "    o[t] = keep ? s : cf - s;\n  }\n}\n"
        )
        data = (ins[1], ins[2])
    recs += launch("op", src0, nk, bk, (flag, total), f"{name}: clear")
    recs += launch("op", src1, n, bl, (*data, flag), f"{name}: flag rejection keys")
    recs += launch("op", src2, n, bl, (ins[0], *data, flag, first_k, first_it, total), f"{name}: first acceptance")
    recs += launch("op", src3, n, bl, (ins[0], *data, first_k, first_it, total, outs[0]), f"{name}: samples")
    return recs
