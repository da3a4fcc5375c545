"""The CUDA kernels of fjax's random primitives (from ``host_ops.render``).

``random_gamma`` in float32: one thread per sample runs the CPU kernel's algorithm
(``fjax/_random_gamma_kernel.py``: Marsaglia-Tsang with JAX's key splits, XLA's float32
``log``/``log1p``/``erf_inv``, fused multiply-adds rounded once), so samples are bit-identical to
the CPU's for ``a >= 1`` and in log space; for ``a < 1`` the final ``u ** (1 / a)`` is CUDA's
``powf`` (within 2 ulp of the CPU's). The constants are rendered as the bits of the CPU kernel's
float32 values; products that meet an addition are ``__fmul_rn`` (nvcc's default ``--fmad=true``
must not contract them). float64, float16 and bfloat16 are in ``random_gamma_wide.py``, and
``random_poisson`` / ``random_binomial`` (every rate/count dtype the primitives take; int4-like
outputs have no CUDA type and raise ``NotImplementedError`` naming the primitive) in
``random_discrete.py``.

Also ``rng_bit_generator`` (``lax.rng_bit_generator``): Philox-4x32-10 (the default, as XLA's CPU
backend) and threefry-2x32 (with XLA's halving of the shape along its first even dimension), one
thread per output block, bit for bit the CPU impl (``fjax/lax/_rng.py``), and the advanced key.

All of them run inside compiled ``scan``/``while`` bodies too (the CUDA backend's loop ops).
"""

from __future__ import annotations

import math

import numpy as np

from fjax.backends.cuda.kernel_util import _block, _loop

NAMES = frozenset({"random_gamma", "rng_bit_generator", "random_poisson", "random_binomial"})


def _bits(v: float | np.floating) -> str:
    return f"__uint_as_float(0x{int(np.float32(v).view(np.uint32)):08X}u)"


def _prelude() -> str:
    from fjax import _random_gamma_kernel as K  # noqa: PLC0415

    lo = np.float32(np.nextafter(np.float32(-1), np.float32(0)))
    c = {
        "TINY": _bits(K._TINY32),
        "SQRTH": _bits(K._SQRTH),
        "E1": _bits(K._LOG_E1),
        "E2": _bits(K._LOG_E2),
        "L1P_THRESH": _bits(K._L1P_THRESH),
        "L1P_DEN0": _bits(K._L1P_DEN0),
        "L1P_NUM0": _bits(K._L1P_NUM0),
        "L1P_NUM_LEAD": _bits(np.float32(4.527e-05)),
        "LO": _bits(lo),
        "SPAN": _bits(np.float32(1) - lo),
        "SQRT2": _bits(np.float32(np.sqrt(2))),
        "SQUEEZE": _bits(np.float32(-0.0331)),
        "THIRD": _bits(np.float32(1.0 / 3.0)),
    }
    abc = ", ".join(_bits(v) for grp in (K._LOG_A, K._LOG_B, K._LOG_C) for v in grp)
    den = ", ".join(_bits(v) for v in K._L1P_DEN)
    num = ", ".join(_bits(v) for v in K._L1P_NUM)
    lt5 = ", ".join(_bits(v) for v in K._EI_LT5)
    ge5 = ", ".join(_bits(v) for v in K._EI_GE5)
    return (
        "#ifndef FJ_DEF_GAMMA\n#define FJ_DEF_GAMMA\n"
        "__device__ __forceinline__ unsigned fj_rotl(unsigned x, int d) { return (x << d) | (x >> (32 - d)); }\n"
        "// threefry2x32 of one counter pair\n"
        "__device__ void fj_threefry(unsigned k1, unsigned k2, unsigned x1, unsigned x2,\n"
        "                            unsigned* o1, unsigned* o2) {\n"
        "  const unsigned ks[3] = {k1, k2, k1 ^ k2 ^ 0x1BD11BDAu};\n"
        "  const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};\n"
        "  x1 += ks[0]; x2 += ks[1];\n"
        "  for (int i = 0; i < 5; ++i) {\n"
        "    for (int q = 0; q < 4; ++q) { x1 += x2; x2 = x1 ^ fj_rotl(x2, rot[i % 2][q]); }\n"
        "    x1 += ks[(i + 1) % 3]; x2 += ks[(i + 2) % 3] + (unsigned)(i + 1);\n  }\n"
        "  *o1 = x1; *o2 = x2;\n}\n"
        "// split(key, n)[i]\n"
        "__device__ __forceinline__ void fj_child(unsigned k1, unsigned k2, unsigned i, unsigned* c1, unsigned* c2) {\n"
        "  fj_threefry(k1, k2, 0u, i, c1, c2);\n}\n"
        "// uniform(key, (), float32) before scaling: the top 23 bits as a float in [0, 1)\n"
        "__device__ __forceinline__ float fj_unit(unsigned k1, unsigned k2) {\n"
        "  unsigned o1, o2; fj_threefry(k1, k2, 0u, 0u, &o1, &o2);\n"
        "  return (float)((o1 ^ o2) >> 9) * 1.1920928955078125e-07f;\n}\n"
        f"__device__ __forceinline__ float fj_flush(float x) {{ return fabsf(x) < {c['TINY']} ? x * 0.0f : x; }}\n"
        "// XLA's float32 log\n"
        "__device__ float fj_xla_log(float y) {\n"
        "  y = fj_flush(y);\n"
        "  if (y != y || y == INFINITY) return y;\n"
        "  if (y == 0.0f) return -INFINITY;\n"
        "  if (y < 0.0f) return NAN;\n"
        f"  const float yy = y > {c['TINY']} ? y : {c['TINY']};\n"
        "  const unsigned b = __float_as_uint(yy);\n"
        "  const int e = (int)(b >> 23) - 127;\n"
        "  const float m = __uint_as_float((b & 0x807FFFFFu) | 0x3F000000u);\n"
        "  const float ep1 = (float)e + 1.0f;\n"
        f"  const bool small = m < {c['SQRTH']};\n"
        "  const float x = (m - 1.0f) + (small ? m : 0.0f);\n"
        "  const float ef = ep1 - (small ? 1.0f : 0.0f);\n"
        "  const float z = x * x, x3 = z * x;\n"
        f"  const float C[9] = {{{abc}}};\n"
        "  const float pa = fmaf(fmaf(x, C[0], C[1]), x, C[2]);\n"
        "  const float pb = fmaf(fmaf(x, C[3], C[4]), x, C[5]);\n"
        "  const float pc = fmaf(fmaf(x, C[6], C[7]), x, C[8]);\n"
        "  const float t = fmaf(fmaf(pa, x3, pb), x3, pc);\n"
        f"  float r = fmaf(t, x3, ef * {c['E1']});\n"
        "  r = fmaf(z, -0.5f, x) + r;\n"
        f"  return fmaf(ef, {c['E2']}, r);\n}}\n"
        "// XLA's float32 log1p\n"
        "__device__ float fj_xla_log1p(float x) {\n"
        "  x = fj_flush(x);\n"
        f"  if (!(fabsf(x) < {c['L1P_THRESH']})) return fj_xla_log(x + 1.0f);\n"
        f"  const float D[5] = {{{den}}}, U[5] = {{{num}}};\n"
        f"  const float x2 = x * x;\n  float den = x + {c['L1P_DEN0']};\n"
        "  for (int i = 0; i < 5; ++i) den = fmaf(den, x, D[i]);\n"
        f"  float num = fmaf({c['L1P_NUM_LEAD']}, x, {c['L1P_NUM0']});\n"
        "  for (int i = 0; i < 5; ++i) num = fmaf(num, x, U[i]);\n"
        "  const float t = (x * x2) * (num / den);\n"
        "  return x + fmaf(x2, -0.5f, t);\n}\n"
        "// XLA's float32 erf_inv\n"
        "__device__ float fj_xla_erf_inv(float x) {\n"
        "  x = fj_flush(x);\n"
        f"  const float L[9] = {{{lt5}}}, G[9] = {{{ge5}}};\n"
        "  float w = -fj_xla_log1p(__fmul_rn(x, -x));\n"
        "  const float* cs;\n"
        "  if (w < 5.0f) { w = w - 2.5f; cs = L; } else { w = sqrtf(w) - 3.0f; cs = G; }\n"
        "  float p = cs[0];\n"
        "  for (int i = 1; i < 9; ++i) p = fmaf(p, w, cs[i]);\n"
        "  if (fabsf(x) == 1.0f) return x * INFINITY;\n"
        "  return p * x;\n}\n"
        "__device__ float fj_normal(unsigned k1, unsigned k2) {\n"
        f"  const float u = fmaxf({c['LO']}, fmaf(fj_unit(k1, k2), {c['SPAN']}, {c['LO']}));\n"
        f"  return {c['SQRT2']} * fj_xla_erf_inv(u);\n}}\n"
        "// one Marsaglia-Tsang sample (the CPU kernel's gamma_one)\n"
        "__device__ float fj_gamma_one(unsigned k1, unsigned k2, float alpha, bool log_space) {\n"
        "  const bool boost = alpha >= 1.0f;\n"
        "  const float alpha_orig = alpha;\n"
        "  if (!boost) alpha = alpha + 1.0f;\n"
        f"  const float d = alpha - {c['THIRD']};\n"
        f"  const float cc = {c['THIRD']} / sqrtf(d);\n"
        "  unsigned key1, key2, sub1, sub2;\n"
        "  fj_child(k1, k2, 0u, &key1, &key2);\n  fj_child(k1, k2, 1u, &sub1, &sub2);\n"
        "  float xx = 0.0f, v = 1.0f, u = 2.0f;\n"
        "  for (;;) {\n"
        f"    const bool squeeze_ok = u >= fmaf({c['SQUEEZE']}, xx * xx, 1.0f);\n"
        "    const float rhs = fmaf(xx, 0.5f, d * ((1.0f - v) + fj_xla_log(v)));\n"
        "    if (!(squeeze_ok && fj_xla_log(u) >= rhs)) break;\n"
        "    unsigned nk1, nk2, xk1, xk2, uk1, uk2;\n"
        "    fj_child(key1, key2, 0u, &nk1, &nk2);\n"
        "    fj_child(key1, key2, 1u, &xk1, &xk2);\n"
        "    fj_child(key1, key2, 2u, &uk1, &uk2);\n"
        "    key1 = nk1; key2 = nk2;\n"
        "    float x = 0.0f, vv = -1.0f;\n"
        "    while (vv <= 0.0f) {\n"
        "      unsigned a1, a2, s1, s2;\n"
        "      fj_child(xk1, xk2, 0u, &a1, &a2);\n      fj_child(xk1, xk2, 1u, &s1, &s2);\n"
        "      xk1 = a1; xk2 = a2;\n"
        "      x = fj_normal(s1, s2);\n"
        "      vv = fmaf(x, cc, 1.0f);\n    }\n"
        "    xx = x * x;\n    v = (vv * vv) * vv;\n    u = fj_unit(uk1, uk2);\n  }\n"
        "  if (log_space) {\n"
        "    const float ls = fj_xla_log1p(-fj_unit(sub1, sub2));\n"
        "    const float lb = (boost || ls == 0.0f) ? 0.0f : __fmul_rn(ls, 1.0f / alpha_orig);\n"
        "    return (fj_xla_log(d) + fj_xla_log(v)) + lb;\n  }\n"
        "  const float samples = 1.0f - fj_unit(sub1, sub2);\n"
        "  const float b = boost ? 1.0f : powf(samples, 1.0f / alpha_orig);\n"
        "  return (d * v) * b;\n}\n#endif\n"
    )


def render(
    name: str, params: dict, in_avals: list, out_avals: list, ins: list, outs: list, launch, alloc
) -> list | None:  # noqa: ANN001
    """Plan records for ``name`` (one of ``NAMES``), or None for another primitive."""
    if name not in NAMES:
        return None
    if name == "rng_bit_generator":
        return _rng_bits(params, in_avals, out_avals, ins, outs, launch, alloc)
    if name in ("random_poisson", "random_binomial"):
        from fjax.backends.cuda import random_discrete  # noqa: PLC0415

        return random_discrete.render(name, in_avals, out_avals, ins, outs, launch, _prelude())
    key, a = in_avals
    if np.dtype(a.dtype) != np.float32:
        from fjax.backends.cuda import random_gamma_wide  # noqa: PLC0415

        return random_gamma_wide.render(params, in_avals, ins, outs, launch, alloc, _prelude())
    n = math.prod(a.shape)
    nb = len(key.shape) - 1
    m = max(1, math.prod(a.shape[nb:]))
    log_space = bool(params["log_space"])
    blk = _block(n)
    src = (
        _prelude() + f"// random_gamma{' (log space)' if log_space else ''}: {n} samples, {m} per key\n"
        f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__(const unsigned* __restrict__ keys, '
        "const float* __restrict__ a, float* __restrict__ o) {\n"
        f"  {_loop(n, blk)} {{\n"
        f"    const long long b = t / {m};\n"
        "    unsigned k1, k2;\n"
        f"    fj_child(keys[2 * b], keys[2 * b + 1], (unsigned)(t - b * {m}), &k1, &k2);\n"
        f"    o[t] = fj_gamma_one(k1, k2, a[t], {'true' if log_space else 'false'});\n  }}\n}}\n"
    )
    return alloc(0) + (launch("op", src, n, blk, (ins[0], ins[1], outs[0]), "random_gamma") if n else [])


_RNG_PRELUDE = r"""
#ifndef FJ_DEF_RNG
#define FJ_DEF_RNG
__device__ __forceinline__ unsigned fj_rotl32(unsigned x, int d) { return (x << d) | (x >> (32 - d)); }
__device__ void fj_philox(unsigned x[4], unsigned k0, unsigned k1) {
  for (int r = 0; r < 10; ++r) {
    const unsigned long long p0 = (unsigned long long)x[0] * 0xD2511F53ull;
    const unsigned long long p1 = (unsigned long long)x[2] * 0xCD9E8D57ull;
    const unsigned y0 = (unsigned)(p1 >> 32) ^ x[1] ^ k0, y1 = (unsigned)p1;
    const unsigned y2 = (unsigned)(p0 >> 32) ^ x[3] ^ k1, y3 = (unsigned)p0;
    x[0] = y0; x[1] = y1; x[2] = y2; x[3] = y3;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }
}
__device__ void fj_threefry2x32(unsigned* x0, unsigned* x1, unsigned long long key) {
  const unsigned k0 = (unsigned)key, k1 = (unsigned)(key >> 32);
  const unsigned ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};
  const int rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  unsigned a = *x0 + ks[0], b = *x1 + ks[1];
  for (int s = 0; s < 5; ++s) {
    for (int q = 0; q < 4; ++q) { a = a + b; b = fj_rotl32(b, rot[4 * (s % 2) + q]) ^ a; }
    a += ks[(s + 1) % 3]; b += ks[(s + 2) % 3] + (unsigned)(s + 1);
  }
  *x0 = a; *x1 = b;
}
#endif
"""


def _rng_bits(params: dict, in_avals: list, out_avals: list, ins: list, outs: list, launch, alloc) -> list:  # noqa: ANN001
    from fjax.backends.cuda.ops import ctype  # noqa: PLC0415

    key = in_avals[0]
    shape = tuple(out_avals[1].shape)
    dt = np.dtype(out_avals[1].dtype)
    O = ctype(dt)  # noqa: E741
    bits = 64 if dt.itemsize == 8 else 32
    n = math.prod(shape)
    u32 = np.dtype(key.dtype) == np.uint32
    # the state as uint64 words: uint32[4] viewed little-endian, or uint64[2]
    K = "unsigned" if u32 else "unsigned long long"
    ld = "((unsigned long long)ks[2 * (i)] | ((unsigned long long)ks[2 * (i) + 1] << 32))" if u32 else "ks[i]"
    st = "nk[2 * (i)] = (unsigned)(v); nk[2 * (i) + 1] = (unsigned)((v) >> 32);" if u32 else "nk[i] = (v);"
    nw = (key.shape[0] // 2) if u32 else key.shape[0]
    # lax.RandomAlgorithm (an IntEnum; backends do not import lax): 1 is RNG_THREE_FRY, the
    # others (RNG_DEFAULT, RNG_PHILOX) are Philox, as on XLA's CPU backend
    algo = int(params["algorithm"])
    algo_name = "RNG_THREE_FRY" if algo == 1 else "Philox"
    head = _RNG_PRELUDE + f"#define FJ_LD(i) {ld}\n#define FJ_ST(i, v) {{ {st} }}\n"
    if algo == 1:
        setup = "    const unsigned long long key = FJ_LD(0), ctr = FJ_LD(1);\n"
        if not shape:
            d, post, half = 1, 1, 1
        else:
            even = [i for i, e in enumerate(shape) if e % 2 == 0]
            axis = even[0] if even else int(np.argmax(shape))
            d, post, half = shape[axis], math.prod(shape[axis + 1 :]), -(-shape[axis] // 2)
        pre = n // max(1, d * post)
        if bits == 64:
            count = n
            body = (
                "    unsigned x0 = (unsigned)(ctr + t), x1 = (unsigned)((ctr + t) >> 32);\n"
                "    fj_threefry2x32(&x0, &x1, key);\n"
                f"    o[t] = ({O})((unsigned long long)x0 | ((unsigned long long)x1 << 32));\n"
            )
        else:
            count = max(1, pre * half * post) if shape else 1
            body = (
                f"    const long long p = t / {d * post}, j = (t / {post}) % {d}, q = t % {post};\n"
                f"    const unsigned long long c = ctr + (unsigned long long)((p * {half} + j / 2) * {post} + q);\n"
                "    unsigned x0 = (unsigned)c, x1 = (unsigned)(c >> 32);\n"
                "    fj_threefry2x32(&x0, &x1, key);\n"
                f"    o[t] = ({O})((j % 2 == 0) ? x0 : x1);\n"
            )
        new_state = f"FJ_ST(0, key); FJ_ST(1, ctr + {count}ull);"
        work = n
    else:  # Philox (RNG_DEFAULT, RNG_PHILOX)
        per = 2 if bits == 64 else 4  # outputs per block
        nblocks = -(-n // per)
        setup = "    const unsigned long long key = FJ_LD(0), lo = FJ_LD(1), hi = NW >= 3 ? FJ_LD(2) : FJ_LD(0);\n"
        if bits == 64:
            outs_ = (
                f"    if (2 * t < {n}) o[2 * t] = ({O})((unsigned long long)x[0] | ((unsigned long long)x[1] << 32));\n"
                f"    if (2 * t + 1 < {n})\n"
                f"      o[2 * t + 1] = ({O})((unsigned long long)x[2] | ((unsigned long long)x[3] << 32));\n"
            )
        else:
            outs_ = f"    for (int j = 0; j < 4; ++j) if (4 * t + j < {n}) o[4 * t + j] = ({O})x[j];\n"
        body = (
            "    const unsigned long long low = lo + (unsigned long long)t;\n"
            "    const unsigned long long high = low < lo ? hi + 1ull : hi;\n"
            "    unsigned x[4] = {(unsigned)low, (unsigned)(low >> 32), (unsigned)high, (unsigned)(high >> 32)};\n"
            "    fj_philox(x, (unsigned)key, (unsigned)(key >> 32));\n" + outs_
        )
        new_state = f"FJ_ST(0, key); FJ_ST(1, lo + {nblocks}ull);"
        work = nblocks
    blk = _block(max(work, 1))
    src = (
        head + f"// rng_bit_generator ({algo_name}): {n} x {dt.name}\n"
        f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__(const {K}* __restrict__ ks, '
        f"{K}* __restrict__ nk, {O}* __restrict__ o) {{\n"
        f"  const int NW = {nw};\n"
        "  if (blockIdx.x == 0 && threadIdx.x == 0) {\n"
        + setup
        + f"    {new_state}\n    for (int w = 2; w < NW; ++w) FJ_ST(w, FJ_LD(w));\n  }}\n"
        f"  {_loop(work, blk)} {{\n" + setup + body + "  }\n}\n"
    )
    return alloc(0) + alloc(1) + launch("op", src, max(work, 1), blk, (ins[0], outs[0], outs[1]), "rng_bit_generator")
