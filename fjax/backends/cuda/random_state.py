"""The CUDA kernels of ``rng_uniform`` (``lax.rng_uniform``: XLA's stateful, unseeded Rng op),
dispatched from ``host_ops.render`` after ``linalg_extra``.

Every call draws new values with no key, so the generator keeps state on the device that
outlives a call and is advanced by the device itself (a captured CUDA graph replays the same
launches, and must still draw anew each time): a ``__device__`` global of the translation unit,
``fj_rng_state``, zero when the module is loaded, counts the draws made with it. Each
``rng_uniform`` is two launches: a one-thread kernel increments the count, then one thread per
element runs Philox-4x32-10 (``random_ops``' ``fj_philox``) on the counter (element index, count)
under a key mixed (splitmix64) from the site (a hash of its output buffer's name, shape and dtype,
a launch argument) and the address of the state (so two programs' modules, loaded side by side,
draw different streams from their first call; two ``rng_uniform`` of one program, or two calls,
differ by the count). Programs with the same source share cupy's cached module, and so its state.

Values, as the CPU impl (``fjax/lax/_rng.py``) defines them:

- floats: ``a + (b - a) u`` with ``u`` uniform on [0, 1) from 24 random bits (float32 and the
  16-bit floats, computed in double and rounded once to float32, then to the 16-bit float) or 53
  bits (float64, with ``a (1 - u) + b u`` where ``b - a`` overflows); a result that rounds to
  ``b`` or above (``b <= a`` included) is ``a``, so draws lie in [a, b);
- integers (every width, signed or unsigned): ``a + r`` with ``r`` uniform on [0, b - a) by
  Lemire's multiply-and-reject on 64 random bits (exactly uniform; fresh Philox blocks on a
  rejection, at most 64 candidates, so the chance of a biased draw is below 2^-64), ``a`` where
  ``b <= a``.

Draws are not the CPU's numpy draws (both are unseeded). Checked on the CUDA emulator (including
CUDA-graph replay on the cupy stand-in) and compiled by nvcc; not run on a GPU.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from fjax.backends.cuda.kernel_util import _block, _loop
from fjax.backends.cuda.ops import LOW_FLOATS, ctype, stype
from fjax.backends.cuda.random_ops import _RNG_PRELUDE

NAMES = frozenset({"rng_uniform"})

_STATE = r"""
#ifndef FJ_DEF_RNG_STATE
#define FJ_DEF_RNG_STATE
// rng_uniform's state: the draws made with this module since it was loaded
__device__ unsigned long long fj_rng_state;
__device__ __forceinline__ unsigned long long fj_splitmix64(unsigned long long z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// the high 64 bits of a 128-bit product
__device__ __forceinline__ unsigned long long fj_mulhi64(unsigned long long a, unsigned long long b) {
  const unsigned long long a0 = a & 0xFFFFFFFFull, a1 = a >> 32, b0 = b & 0xFFFFFFFFull, b1 = b >> 32;
  const unsigned long long p01 = a0 * b1, p10 = a1 * b0;
  const unsigned long long mid = ((a0 * b0) >> 32) + (p01 & 0xFFFFFFFFull) + (p10 & 0xFFFFFFFFull);
  return a1 * b1 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}
// four random words of element t's block `it` for draw `ctr` under key `key`
__device__ __forceinline__ void fj_rng_block(unsigned x[4], long long t, unsigned it, unsigned long long ctr,
                                             unsigned long long key) {
  x[0] = (unsigned)t; x[1] = (unsigned)((unsigned long long)t >> 32) ^ (it << 24);
  x[2] = (unsigned)ctr; x[3] = (unsigned)(ctr >> 32);
  fj_philox(x, (unsigned)key, (unsigned)(key >> 32));
}
// uniform on [0, r) (r >= 1): Lemire's multiply-and-reject on 64-bit words
__device__ unsigned long long fj_rng_below(unsigned long long r, long long t, unsigned long long ctr,
                                           unsigned long long key) {
  unsigned long long w = 0;
  for (unsigned it = 0; it < 32; ++it) {
    unsigned x[4];
    fj_rng_block(x, t, it, ctr, key);
    for (int h = 0; h < 2; ++h) {
      w = ((unsigned long long)x[2 * h + 1] << 32) | x[2 * h];
      const unsigned long long lo = w * r;
      if (lo >= r || lo >= (0ull - r) % r) return fj_mulhi64(w, r);
    }
  }
  return fj_mulhi64(w, r);
}
#endif
"""

_BUMP = (
    "// rng_uniform: the next draw of this module\n"
    'extern "C" __global__ void __launch_bounds__(32) __NAME__() {\n'
    "  if (threadIdx.x == 0 && blockIdx.x == 0) fj_rng_state += 1ull;\n}\n"
)


def _value(d: np.dtype) -> str:
    """The statement setting ``o[t]`` from bounds ``lo[0]``, ``hi[0]`` (the draw's words: block 0)."""
    if d.kind in "iu":
        W = "unsigned long long" if d.kind == "u" else "long long"
        return (
            f"    const {W} A = ({W})lo[0], Bv = ({W})hi[0];\n"
            "    if (!(A < Bv)) { o[t] = lo[0]; continue; }\n"
            "    const unsigned long long r = (unsigned long long)Bv - (unsigned long long)A;\n"
            f"    o[t] = ({ctype(d)})((unsigned long long)A + fj_rng_below(r, t, ctr, key));\n"
        )
    head = "    unsigned x[4];\n    fj_rng_block(x, t, 0u, ctr, key);\n"
    if d == np.float64:
        return head + (
            "    const double A = lo[0], Bv = hi[0], span = Bv - A;\n"
            "    const double u = (double)((((unsigned long long)x[1] << 32) | x[0]) >> 11) * 1.1102230246251565e-16;\n"
            "    double v = (isinf(span) && isfinite(A) && isfinite(Bv)) ? A * (1.0 - u) + Bv * u : A + span * u;\n"
            "    o[t] = v >= Bv ? A : v;\n"
        )
    tag = LOW_FLOATS.get(d)
    load = (lambda e: f"fj_{tag}_f32({e})") if tag else (lambda e: e)
    rnd = f"fj_f32_{tag}((float)v)" if tag else "(float)v"
    S = stype(d)
    return head + (
        f"    const double A = (double){load('lo[0]')}, Bv = (double){load('hi[0]')};\n"
        "    const double u = (double)(x[0] >> 8) * 5.9604644775390625e-08;\n"
        "    const double v = A + (Bv - A) * u;\n"
        f"    const {S} r = {rnd};\n"
        f"    o[t] = (double){load('r')} >= Bv ? lo[0] : r;\n"
    )


def render(
    name: str, params: dict, in_avals: list, out_avals: list, ins: list, outs: list, launch, alloc
) -> list | None:  # noqa: ANN001
    """Plan records for ``rng_uniform``, or None for another primitive."""
    if name not in NAMES:
        return None
    d = np.dtype(out_avals[0].dtype)
    if (d.kind not in "iuf" and d not in LOW_FLOATS) or any(np.dtype(a.dtype) != d for a in in_avals):
        raise NotImplementedError(f"CUDA backend: rng_uniform on dtype {d.name}")
    shape = tuple(out_avals[0].shape)
    n = math.prod(shape)
    if not n:
        return alloc(0)
    blk = _block(n)
    S = stype(d)
    site = int.from_bytes(hashlib.sha256(f"{outs[0]}|{shape}|{d.name}".encode()).digest()[:8], "little")
    src = (
        _RNG_PRELUDE + _STATE + f"// rng_uniform of {d.name}: Philox of (element, draw) under the site's key\n"
        f'extern "C" __global__ void __launch_bounds__({blk}) __NAME__(const {S}* __restrict__ lo, '
        f"const {S}* __restrict__ hi, unsigned long long site, {S}* __restrict__ o) {{\n"
        "  const unsigned long long ctr = fj_rng_state;\n"
        "  const unsigned long long key = fj_splitmix64(site ^ (unsigned long long)&fj_rng_state);\n"
        f"  {_loop(n, blk)} {{\n" + _value(d) + "  }\n}\n"
    )
    return (
        alloc(0)
        + launch("op", _RNG_PRELUDE + _STATE + _BUMP, 1, 32, (), "rng_uniform (next draw)")
        + launch("op", src, n, blk, (ins[0], ins[1], np.uint64(site), outs[0]), "rng_uniform")
    )
