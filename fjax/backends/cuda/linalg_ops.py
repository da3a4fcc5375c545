"""CUDA kernels for the linear-algebra host steps (rendered from ``host_ops.render``), float32,
float64, complex64 and complex128, batched over leading dimensions: one thread block per matrix (a
grid-stride loop over the matrices), the unblocked LAPACK algorithms with ``__syncthreads()``
between their steps. One source serves real and complex matrices: each kernel is written with the
scalar helpers of ``HELPERS`` (``fjl_conj`` is the identity on reals) and, for complex ones, the
``fj_complex`` operators of ``COMPLEX_HELPERS`` (on ``complex_ops``' device functions). LAPACK's
complex conventions, as the CPU's LAPACK computes them:

- ``cholesky`` (``symmetrize_input``: ``(x + x^H) / 2``; ``upper``: ``L^H``): right-looking, column
  by column, ``A = L L^H`` from the lower triangle (the diagonal's real part, as ``potrf``); a matrix
  that is not positive definite (a pivot ``<= 0`` or NaN) gives an all-NaN factor, as the CPU impl;
- ``triangular_solve`` (all sides, ``transpose_a``/``conjugate_a``, unit diagonals): one thread per
  right-hand side (a column of ``b``, or a row for a right-side solve), substitution in order;
- ``lu``: partial pivoting (the first largest ``|re| + |im|`` of a column, as ``i?amax``), rows
  swapped, multipliers scaled by the pivot's reciprocal (``getf2``), 0-based pivots and the
  permutation; ``lu_pivots_to_permutation``;
- ``qr``: Householder reflectors as ``larfg`` (``beta = -sign(re alpha) ||(alpha,
  x)||`` real, ``tau = ((beta - re alpha) / beta, -im alpha / beta)``), ``H^H`` applied to the
  trailing columns (``geqr2``), ``Q = H_1 ... H_k`` applied to the identity (``ung2r``); with
  ``pivoting=True`` (``geqp3``) the remaining column of largest norm is swapped in before each step;
- ``eigh`` (real symmetric or Hermitian, either triangle, the diagonal's real part,
  ``subset_by_index``): parallel cyclic Jacobi (the round-robin ordering: n/2 disjoint rotations per
  step, Rutishauser's stable angles; a complex pair is first made real by the phase ``conj(a_pq) /
  |a_pq|``) until the off-diagonal mass is below the dtype's epsilon (at most 40 sweeps), real
  eigenvalues ascending; a non-finite entry anywhere gives NaNs, as the CPU impl. Eigenvectors are
  unique up to sign or a unit complex phase (and within repeated eigenvalues), so they may differ
  from LAPACK's by those choices;
- ``svd`` (``full_matrices``, ``compute_uv``, ``subset_by_index``): one-sided (Hestenes) Jacobi on
  the columns (of the conjugate transpose when wide), the same ordering and phases, real singular
  values descending; left vectors of zero singular values and the extra columns of
  ``full_matrices`` completed by Gram-Schmidt against unit vectors. Phases as with ``eigh``.

These are meant for the small and medium matrices of training programs (initializers, Gaussian
processes, solves in a loss): O(n) synchronized steps per matrix, no blocking, one block each; a
large single matrix is far slower than cuSOLVER would be; eigh/svd keep their rotation tables in
static shared memory and raise ``NotImplementedError`` beyond its 48 KiB (n or min(m, n) above
about 6000 in float32, 4000 in complex64, 3900 in float64, 2350 in complex128). ``schur``, ``hessenberg``
and the other factorizations have no CUDA form (``NotImplementedError``). The complex kernels have been run on
the CUDA emulator and compiled by nvcc, not run on a GPU.
"""

from __future__ import annotations

import math
import re

import numpy as np

from fjax.backends.cuda.ops import ctype
from fjax.backends.cuda.records import Alloc

NAMES = frozenset({"cholesky", "triangular_solve", "lu", "lu_pivots_to_permutation", "qr", "eigh", "svd"})


_REAL = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
_REAL.update({np.dtype(np.complex64): "float", np.dtype(np.complex128): "double"})

# Scalar helpers every kernel here is written with, so one source serves real and complex
# matrices: ``fjl_conj`` (the identity on reals), ``fjl_re``/``fjl_im``, ``fjl_abs`` (|z|),
# ``fjl_abs1`` (|re| + |im|: LAPACK's i?amax pivot measure), ``fjl_abs2`` (|z|^2), ``fjl_finite``.
# Complex kernels also get the arithmetic operators on ``fj_complex`` (complex_ops' device
# functions; a real operand scales both parts). Guarded: a translation unit holds many kernels.
_REAL_HELPERS = "".join(
    f"__device__ __forceinline__ {t} fjl_conj({t} x) {{ return x; }}\n"
    f"__device__ __forceinline__ {t} fjl_re({t} x) {{ return x; }}\n"
    f"__device__ __forceinline__ {t} fjl_im({t} x) {{ return ({t})0; }}\n"
    f"__device__ __forceinline__ {t} fjl_abs({t} x) {{ return fabs(x); }}\n"
    f"__device__ __forceinline__ {t} fjl_abs1({t} x) {{ return fabs(x); }}\n"
    f"__device__ __forceinline__ {t} fjl_abs2({t} x) {{ return x * x; }}\n"
    f"__device__ __forceinline__ bool fjl_finite({t} x) {{ return isfinite(x); }}\n"
    for t in ("float", "double")
)
HELPERS = "#ifndef FJ_LINALG_HELPERS\n#define FJ_LINALG_HELPERS\n" + _REAL_HELPERS + "#endif\n"
COMPLEX_HELPERS = r"""#ifndef FJ_LINALG_COMPLEX
#define FJ_LINALG_COMPLEX
#define FJL_C template <typename T> __device__ __forceinline__ fj_complex<T>
#define FJL_R template <typename T> __device__ __forceinline__ T
#define FJL_B template <typename T> __device__ __forceinline__ bool
FJL_C operator+(fj_complex<T> a, fj_complex<T> b) { return fj_cadd(a, b); }
FJL_C operator-(fj_complex<T> a, fj_complex<T> b) { return fj_csub(a, b); }
FJL_C operator-(fj_complex<T> a) { return fj_cneg(a); }
FJL_C operator*(fj_complex<T> a, fj_complex<T> b) { return fj_cmul(a, b); }
FJL_C operator/(fj_complex<T> a, fj_complex<T> b) { return fj_cdiv(a, b); }
FJL_C operator*(T s, fj_complex<T> b) { return fj_complex<T>(s * b.re, s * b.im); }
FJL_C operator*(fj_complex<T> b, T s) { return fj_complex<T>(s * b.re, s * b.im); }
FJL_C operator/(fj_complex<T> b, T s) { return fj_complex<T>(b.re / s, b.im / s); }
FJL_C& operator+=(fj_complex<T>& a, fj_complex<T> b) { a = fj_cadd(a, b); return a; }
FJL_C& operator-=(fj_complex<T>& a, fj_complex<T> b) { a = fj_csub(a, b); return a; }
FJL_C& operator*=(fj_complex<T>& a, fj_complex<T> b) { a = fj_cmul(a, b); return a; }
FJL_C& operator*=(fj_complex<T>& a, T s) { a = a * s; return a; }
FJL_C& operator/=(fj_complex<T>& a, fj_complex<T> b) { a = fj_cdiv(a, b); return a; }
FJL_C& operator/=(fj_complex<T>& a, T s) { a = a / s; return a; }
FJL_B operator==(fj_complex<T> a, fj_complex<T> b) { return fj_ceq(a, b); }
FJL_B operator!=(fj_complex<T> a, fj_complex<T> b) { return !fj_ceq(a, b); }
FJL_C fjl_conj(fj_complex<T> a) { return fj_cconj(a); }
FJL_R fjl_re(fj_complex<T> a) { return a.re; }
FJL_R fjl_im(fj_complex<T> a) { return a.im; }
FJL_R fjl_abs(fj_complex<T> a) { return fj_cabs(a); }
FJL_R fjl_abs1(fj_complex<T> a) { return fabs(a.re) + fabs(a.im); }
FJL_R fjl_abs2(fj_complex<T> a) { return a.re * a.re + a.im * a.im; }
FJL_B fjl_finite(fj_complex<T> a) { return isfinite(a.re) && isfinite(a.im); }
#undef FJL_C
#undef FJL_R
#undef FJL_B
#endif
"""


def _check(name: str, dt: np.dtype) -> str:
    """The helpers a kernel on matrices of dtype ``dt`` needs (its ``T``/``R`` come from ``_head``)."""
    dt = np.dtype(dt)
    if dt not in _REAL:
        raise NotImplementedError(f"CUDA backend: {name} on dtype {dt.name} (float32/64, complex64/128 only)")
    return HELPERS + (COMPLEX_HELPERS if dt.kind == "c" else "")


def _block(n: int) -> int:
    """Threads per matrix: a power of two (the block reductions halve it), 32 to 256."""
    return min(256, max(32, 1 << max(0, n - 1).bit_length()))


def _rotation_tables(name: str, dt: object, blk: int, pairs: int) -> None:
    """Jacobi's per-step tables live in static shared memory (48 KiB at most): a reduction buffer of
    ``blk`` reals, and per pair its cosine, sine (reals), phase (complex matrices) and two indices;
    NotImplementedError beyond (float64: n > 4000, complex128: n > 2400)."""
    d = np.dtype(dt)
    r = d.itemsize // (2 if d.kind == "c" else 1)
    need = blk * r + pairs * (2 * r + (d.itemsize if d.kind == "c" else 0) + 8) + 8
    if need > 48 * 1024:
        raise NotImplementedError(
            f"CUDA backend: {name} of {d.name} matrices this large ({need} bytes of shared memory per block > 48 KiB)"
        )


def _real_phases(body: str, dt: object, pair: str) -> str:
    """A Jacobi kernel for real matrices: its phase g = conj(x) / |x| is a sign, folded into the
    sine (Rutishauser's real rotation, as before complex matrices), so no phase table in shared
    memory and no products by g. ``pair`` names the pair index (``k`` or ``kq``)."""
    if np.dtype(dt).kind == "c":
        return body
    x = "apq" if pair == "k" else "ga"
    for old, new in (
        ("  __shared__ T gg[", "  // (no phase table: real) gg["),
        (f"g = fjl_conj({x}) / r;", f"s = {x} < (T)0 ? -s : s;"),
        (f" gg[{pair}] = g;", ""),
        (f"const T g = gg[{pair}];", ""),
        ("T g = (T)1;", ""),
    ):
        assert old in body, old
        body = body.replace(old, new)
    return re.sub(r"(fjl_conj\(gg\[k\]\)|\bg) \* ", "", body)


def _head(block: int, sig: str, dt: object = None) -> str:
    """The kernel's first line; with ``dt``, ``T`` (the element type) and ``R`` (its real part type)
    are typedefs in the kernel's scope and spelled out in the signature: a program's kernels share
    one translation unit, where float32 and float64 (or complex) kernels' ``T`` would collide."""
    # no __restrict__ on the buffers a kernel writes: threads hand values to each other through them
    # across __syncthreads(), and with __restrict__ nvcc kept a value read before the barrier (the
    # Cholesky pivot: every thread but the one that took its square root divided by the pivot's
    # square, seen on an H100, 2026-11-27)
    sig = re.sub(r"(?<!const )\b(\w+)\* __restrict__ ", r"\1* ", sig)
    if dt is None:
        return f'extern "C" __global__ void __launch_bounds__({block}) __NAME__({sig}) {{\n'
    d = np.dtype(dt)
    ct, rt = ctype(d), _REAL[d]
    sig = re.sub(r"\bR\*", rt + "*", re.sub(r"\bT\*", ct + "*", sig))
    return (
        f'extern "C" __global__ void __launch_bounds__({block}) __NAME__({sig}) {{\n'
        f"  typedef {ct} T;\n  typedef {rt} R;\n"
    )


_MATS = "  for (long long bm = blockIdx.x; bm < {B}LL; bm += gridDim.x) {{\n"


def render(name: str, params: dict, in_avals: list, out_avals: list, ins: list, outs: list, launch) -> list | None:  # noqa: ANN001
    """Plan records for ``name`` (one of ``NAMES``), or None for another primitive."""
    if name not in NAMES:
        return None
    recs = [Alloc(o, tuple(a.shape), np.dtype(a.dtype)) for o, a in zip(outs, out_avals)]
    if any(math.prod(a.shape) == 0 for a in in_avals):
        raise NotImplementedError(f"CUDA backend: {name} of an empty array")
    if name == "cholesky":
        return recs + _cholesky(params, in_avals[0], ins, outs, launch)
    if name == "triangular_solve":
        return recs + _triangular_solve(params, in_avals, ins, outs, launch)
    if name == "lu":
        return recs + _lu(in_avals[0], ins, outs, launch)
    if name == "lu_pivots_to_permutation":
        return recs + _pivots_to_perm(in_avals[0], out_avals[0], ins, outs, launch)
    if name == "eigh":
        return _eigh(params, in_avals[0], out_avals, ins, outs, launch, recs)
    if name == "svd":
        return _svd(params, in_avals[0], out_avals, ins, outs, launch, recs)
    return recs + _qr(params, in_avals[0], out_avals, ins, outs, launch)


def _cholesky(params: dict, a, ins: list, outs: list, launch) -> list:  # noqa: ANN001
    hdr = _check("cholesky", np.dtype(a.dtype))
    n = a.shape[-1]
    B = math.prod(a.shape[:-2])
    blk = _block(n * n)
    sym = bool(params.get("symmetrize_input", False))
    upper = bool(params.get("upper", False))
    src_ik = "(x[o + i * N + k] + fjl_conj(x[o + k * N + i])) / (R)2" if sym else "x[o + i * N + k]"
    body = (
        f"// cholesky of {B} {n}x{n} matrices{' (symmetrized)' if sym else ''}{', upper' if upper else ''}\n"
        + hdr
        + _head(blk, "const T* __restrict__ x, T* __restrict__ L", a.dtype)
        + f"  const long long N = {n};\n  __shared__ int bad;\n"
        + _MATS.format(B=B)
        + "    const long long o = bm * N * N;\n"
        "    if (threadIdx.x == 0) bad = 0;\n"
        "    for (long long p = threadIdx.x; p < N * N; p += blockDim.x) {\n"
        "      const long long i = p / N, k = p % N;\n"
        f"      L[o + p] = k <= i ? {src_ik} : (T)0;\n    }}\n"
        "    __syncthreads();\n"
        "    for (long long j = 0; j < N; ++j) {\n"
        "      if (threadIdx.x == 0) {\n"
        "        // the real part, as potrf: a Hermitian matrix's diagonal is real\n"
        "        const R d = fjl_re(L[o + j * N + j]);\n"
        "        if (!(d > (R)0)) bad = 1;\n"
        "        L[o + j * N + j] = (T)sqrt(d);\n      }\n"
        "      __syncthreads();\n"
        "      const R djj = fjl_re(L[o + j * N + j]);\n"
        "      for (long long i = j + 1 + threadIdx.x; i < N; i += blockDim.x) L[o + i * N + j] /= djj;\n"
        "      __syncthreads();\n"
        "      const long long m = N - j - 1;\n"
        "      for (long long p = threadIdx.x; p < m * m; p += blockDim.x) {\n"
        "        const long long r = p / m, c = p % m;\n"
        "        if (c <= r) {\n"
        "          const long long i = j + 1 + r, k = j + 1 + c;\n"
        "          L[o + i * N + k] -= L[o + i * N + j] * fjl_conj(L[o + k * N + j]);\n        }\n      }\n"
        "      __syncthreads();\n    }\n"
        "    if (bad) {\n"
        "      for (long long p = threadIdx.x; p < N * N; p += blockDim.x) L[o + p] = (T)NAN;\n"
        + (
            "    } else {\n"
            "      for (long long p = threadIdx.x; p < N * N; p += blockDim.x) {\n"
            "        const long long i = p / N, k = p % N;\n"
            "        if (k < i) { L[o + k * N + i] = fjl_conj(L[o + p]); L[o + p] = (T)0; }\n      }\n"
            if upper
            else ""
        )
        + "    }\n    __syncthreads();\n  }\n}\n"
    )
    return launch("op", body, B * blk, blk, (ins[0], outs[0]), "cholesky")


def _triangular_solve(params: dict, in_avals: list, ins: list, outs: list, launch) -> list:  # noqa: ANN001
    a, b = in_avals
    hdr = _check("triangular_solve", np.dtype(b.dtype))
    left, lower = bool(params["left_side"]), bool(params["lower"])
    trans, unit = bool(params["transpose_a"]), bool(params["unit_diagonal"])
    m = a.shape[-1]
    r, c = b.shape[-2:]
    B = math.prod(b.shape[:-2])
    nrhs = c if left else r
    # the system solved for each right-hand side y: C y = rhs with C = op(A) (left) or op(A)^T
    # (right); C[i][k] read from A with or without transposing
    ct = trans if left else not trans
    c_lower = lower != ct
    aik = "A[oa + k * M + i]" if ct else "A[oa + i * M + k]"
    aii = "A[oa + i * M + i]"
    cj = bool(params.get("conjugate_a", False)) and np.dtype(b.dtype).kind == "c"
    if cj:  # op(A) = conj(A) or A^H
        aik, aii = f"fjl_conj({aik})", f"fjl_conj({aii})"
    # element s of right-hand side q in b (and in the output)
    at = "(ob + s * C + q)" if left else "(ob + q * C + s)"
    loop = "for (long long i = 0; i < M; ++i)" if c_lower else "for (long long i = M - 1; i >= 0; --i)"
    ks = "for (long long k = 0; k < i; ++k)" if c_lower else "for (long long k = i + 1; k < M; ++k)"
    total = B * nrhs
    blk = min(256, max(32, -(-total // 32) * 32))
    body = (
        f"// triangular_solve ({'left' if left else 'right'}, {'lower' if lower else 'upper'}"
        f"{', transposed' if trans else ''}{', conjugated' if cj else ''}{', unit diagonal' if unit else ''}): "
        f"{B} x {nrhs} substitutions\n"
        + hdr
        + _head(blk, "const T* __restrict__ A, const T* __restrict__ X, T* __restrict__ Y", b.dtype)
        + f"  const long long M = {m}, C = {c}, NR = {nrhs};\n"
        f"  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < {total}LL; "
        "t += (long long)blockDim.x * gridDim.x) {\n"
        "    const long long bm = t / NR, q = t % NR, oa = bm * M * M, ob = bm * M * NR;\n"
        f"    {loop} {{\n"
        f"      const long long s = i;\n      T acc = X[{at}];\n"
        f"      {ks} {{ const long long s = k; acc -= {aik} * Y[{at}]; }}\n"
        f"      Y[{at}] = {'acc' if unit else f'acc / {aii}'};\n    }}\n  }}\n}}\n"
    )
    return launch("op", body, total, blk, (ins[0], ins[1], outs[0]), "triangular_solve")


def _lu(a, ins: list, outs: list, launch) -> list:  # noqa: ANN001
    hdr = _check("lu", np.dtype(a.dtype))
    m, n = a.shape[-2:]
    k = min(m, n)
    B = math.prod(a.shape[:-2])
    blk = _block(max(m, n) * 4)
    body = (
        f"// lu (partial pivoting) of {B} {m}x{n} matrices: pivots and permutation\n"
        + hdr
        + _head(
            blk, "const T* __restrict__ x, T* __restrict__ W, int* __restrict__ piv, int* __restrict__ perm", a.dtype
        )
        + f"  const long long M = {m}, N = {n}, K = {k};\n"
        f"  __shared__ R sv[{blk}];\n  __shared__ long long si[{blk}];\n"
        + _MATS.format(B=B)
        + "    const long long o = bm * M * N;\n"
        "    for (long long p = threadIdx.x; p < M * N; p += blockDim.x) W[o + p] = x[o + p];\n"
        "    __syncthreads();\n"
        "    for (long long j = 0; j < K; ++j) {\n"
        "      R best = (R)-1; long long bi = j;\n"
        "      for (long long i = j + threadIdx.x; i < M; i += blockDim.x) {\n"
        "        const R v = fjl_abs1(W[o + i * N + j]);  // |re| + |im|, as i?amax\n"
        "        if (v > best) { best = v; bi = i; }\n      }\n"
        "      sv[threadIdx.x] = best; si[threadIdx.x] = bi;\n      __syncthreads();\n"
        "      for (int h = blockDim.x / 2; h > 0; h >>= 1) {\n"
        "        if (threadIdx.x < h) {\n"
        "          const R v = sv[threadIdx.x + h]; const long long vi = si[threadIdx.x + h];\n"
        "          if (v > sv[threadIdx.x] || (v == sv[threadIdx.x] && vi < si[threadIdx.x])) "
        "{ sv[threadIdx.x] = v; si[threadIdx.x] = vi; }\n        }\n        __syncthreads();\n      }\n"
        "      const long long p = si[0];\n"
        "      if (threadIdx.x == 0) piv[bm * K + j] = (int)p;\n"
        "      if (p != j)\n"
        "        for (long long c = threadIdx.x; c < N; c += blockDim.x) {\n"
        "          const T t = W[o + j * N + c]; W[o + j * N + c] = W[o + p * N + c]; W[o + p * N + c] = t;\n"
        "        }\n"
        "      __syncthreads();\n"
        "      const T d = W[o + j * N + j];\n"
        "      if (d != (T)0) {\n"
        "        const T rd = (T)1 / d;\n"
        "        for (long long i = j + 1 + threadIdx.x; i < M; i += blockDim.x) W[o + i * N + j] *= rd;\n"
        "      }\n"
        "      __syncthreads();\n"
        "      const long long mr = M - j - 1, nc = N - j - 1;\n"
        "      for (long long q = threadIdx.x; q < mr * nc; q += blockDim.x) {\n"
        "        const long long i = j + 1 + q / nc, c = j + 1 + q % nc;\n"
        "        W[o + i * N + c] -= W[o + i * N + j] * W[o + j * N + c];\n      }\n"
        "      __syncthreads();\n    }\n"
        "    if (threadIdx.x == 0) {\n"
        "      for (long long i = 0; i < M; ++i) perm[bm * M + i] = (int)i;\n"
        "      for (long long j = 0; j < K; ++j) {\n"
        "        const int p = piv[bm * K + j], t = perm[bm * M + j];\n"
        "        perm[bm * M + j] = perm[bm * M + p]; perm[bm * M + p] = t;\n      }\n    }\n"
        "    __syncthreads();\n  }\n}\n"
    )
    return launch("op", body, B * blk, blk, (ins[0], *outs), "lu")


def _pivots_to_perm(p, out, ins: list, outs: list, launch) -> list:  # noqa: ANN001
    k, m = p.shape[-1], out.shape[-1]
    B = math.prod(p.shape[:-1])
    blk = min(256, max(32, -(-B // 32) * 32))
    body = (
        f"// lu_pivots_to_permutation: {B} x {k} pivots -> permutations of {m}\n"
        + _head(blk, "const int* __restrict__ piv, int* __restrict__ perm")
        + f"  for (long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x; b < {B}LL; "
        "b += (long long)blockDim.x * gridDim.x) {\n"
        f"    for (long long i = 0; i < {m}; ++i) perm[b * {m} + i] = (int)i;\n"
        f"    for (long long j = 0; j < {k}; ++j) {{\n"
        f"      const int q = piv[b * {k} + j];\n"
        f"      if (q < 0 || q >= {m}) continue;\n"
        f"      const int t = perm[b * {m} + j]; perm[b * {m} + j] = perm[b * {m} + q]; perm[b * {m} + q] = t;\n"
        "    }\n  }\n}\n"
    )
    return launch("op", body, B, blk, (ins[0], outs[0]), "lu_pivots_to_permutation")


def _qr(params: dict, a, out_avals: list, ins: list, outs: list, launch) -> list:  # noqa: ANN001
    piv = bool(params.get("pivoting"))
    hdr = _check("qr", np.dtype(a.dtype))
    m, n = a.shape[-2:]
    k = min(m, n)
    B = math.prod(a.shape[:-2])
    qc = out_avals[0].shape[-1]
    rr = out_avals[1].shape[-2]
    blk = _block(max(n, qc, m))
    wn, tn = f"{outs[0]}_w", f"{outs[0]}_tau"
    recs = [Alloc(wn, (B, m, n), np.dtype(a.dtype)), Alloc(tn, (B, max(k, 1)), np.dtype(a.dtype))]
    # tau = (beta - alpha) / beta: for complex alpha, ((beta - re) / beta, -im / beta) as zlarfg
    tau_e = "T((beta - ar) / beta, -ai / beta)" if np.dtype(a.dtype).kind == "c" else "(beta - ar) / beta"
    # geqp3's column pivoting: before step j, the remaining column of largest norm over rows j..M-1
    # (the first on ties, as LAPACK's idamax) is swapped into place; norms are recomputed per step
    # where LAPACK downdates them, so near-ties may pick another (equally valid) column
    pivot = (
        (
            "      {\n        R best = (R)-1;\n        long long bi = j;\n"
            "        for (long long c = j + threadIdx.x; c < N; c += blockDim.x) {\n"
            "          R s = (R)0;\n          for (long long i = j; i < M; ++i) s += fjl_abs2(w[i * N + c]);\n"
            "          if (s > best) { best = s; bi = c; }\n        }\n"
            "        sh[threadIdx.x] = best;\n        shi[threadIdx.x] = bi;\n        __syncthreads();\n"
            "        for (int h = blockDim.x / 2; h > 0; h >>= 1) {\n"
            "          if (threadIdx.x < h) {\n"
            "            const R v = sh[threadIdx.x + h];\n            const long long q = shi[threadIdx.x + h];\n"
            "            if (v > sh[threadIdx.x] || (v == sh[threadIdx.x] && q < shi[threadIdx.x])) {\n"
            "              sh[threadIdx.x] = v;\n              shi[threadIdx.x] = q;\n            }\n          }\n"
            "          __syncthreads();\n        }\n"
            "        const long long pc = shi[0];\n        __syncthreads();\n"
            "        if (pc != j) {\n"
            "          for (long long i = threadIdx.x; i < M; i += blockDim.x) {\n"
            "            const T t0 = w[i * N + j];\n            w[i * N + j] = w[i * N + pc];\n"
            "            w[i * N + pc] = t0;\n          }\n"
            "          if (threadIdx.x == 0) {\n            const int t1 = pv[j];\n"
            "            pv[j] = pv[pc];\n            pv[pc] = t1;\n          }\n        }\n"
            "        __syncthreads();\n      }\n"
        )
        if piv
        else ""
    )
    body = (
        f"// qr (Householder, LAPACK's signs{', column pivoting' if piv else ''}) of {B} {m}x{n} matrices:"
        f" Q {m}x{qc}, R {rr}x{n}\n"
        + hdr
        + _head(
            blk,
            "const T* __restrict__ x, T* __restrict__ Q, T* __restrict__ Rout, T* __restrict__ W, T* __restrict__ tau"
            + (", int* __restrict__ P" if piv else ""),
            a.dtype,
        )
        + f"  const long long M = {m}, N = {n}, K = {k}, QC = {qc}, RR = {rr};\n"
        f"  __shared__ R sh[{blk}];\n"
        + (f"  __shared__ long long shi[{blk}];\n" if piv else "")
        + _MATS.format(B=B)
        + "    const long long o = bm * M * N, oq = bm * M * QC, orr = bm * RR * N;\n"
        "    T* w = W + o;\n    T* ta = tau + bm * (K > 0 ? K : 1);\n"
        "    for (long long p = threadIdx.x; p < M * N; p += blockDim.x) w[p] = x[o + p];\n"
        + (
            "    int* pv = P + bm * N;\n    for (long long c = threadIdx.x; c < N; c += blockDim.x) pv[c] = (int)c;\n"
            if piv
            else ""
        )
        + "    __syncthreads();\n"
        "    for (long long j = 0; j < K; ++j) {\n" + pivot + "      R part = (R)0;\n"
        "      for (long long i = j + 1 + threadIdx.x; i < M; i += blockDim.x) part += fjl_abs2(w[i * N + j]);\n"
        "      sh[threadIdx.x] = part;\n      __syncthreads();\n"
        "      for (int h = blockDim.x / 2; h > 0; h >>= 1) {\n"
        "        if (threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];\n        __syncthreads();\n      }\n"
        "      // larfg: H = I - tau v v^H with beta real (tau complex for complex matrices)\n"
        "      const R xnorm = sqrt(sh[0]);\n      const T alpha = w[j * N + j];\n"
        "      const R ar = fjl_re(alpha), ai = fjl_im(alpha);\n"
        "      const bool refl = xnorm != (R)0 || ai != (R)0;\n"
        "      T t = (T)0;\n      R beta = ar;\n"
        "      if (refl) {\n"
        "        beta = -copysign(hypot(hypot(ar, ai), xnorm), ar);\n"
        f"        t = {tau_e};\n      }}\n"
        "      __syncthreads();\n"
        "      if (refl) {\n"
        "        const T sc = (T)1 / (alpha - (T)beta);\n"
        "        for (long long i = j + 1 + threadIdx.x; i < M; i += blockDim.x) w[i * N + j] *= sc;\n"
        "      }\n"
        "      if (threadIdx.x == 0) { ta[j] = t; w[j * N + j] = (T)beta; }\n"
        "      __syncthreads();\n"
        "      if (t != (T)0)\n"
        "        for (long long c = j + 1 + threadIdx.x; c < N; c += blockDim.x) {\n"
        "          T s = w[j * N + c];\n"
        "          // H^H applied from the left (geqr2 passes conj(tau) to larf)\n"
        "          for (long long i = j + 1; i < M; ++i) s += fjl_conj(w[i * N + j]) * w[i * N + c];\n"
        "          s *= fjl_conj(t);\n          w[j * N + c] -= s;\n"
        "          for (long long i = j + 1; i < M; ++i) w[i * N + c] -= s * w[i * N + j];\n        }\n"
        "      __syncthreads();\n    }\n"
        "    for (long long p = threadIdx.x; p < RR * N; p += blockDim.x) {\n"
        "      const long long i = p / N, c = p % N;\n"
        "      Rout[orr + p] = (i <= c && i < M) ? w[i * N + c] : (T)0;\n    }\n"
        "    for (long long p = threadIdx.x; p < M * QC; p += blockDim.x)\n"
        "      Q[oq + p] = (p / QC == p % QC) ? (T)1 : (T)0;\n"
        "    __syncthreads();\n"
        "    for (long long j = K - 1; j >= 0; --j) {\n"
        "      const T t = ta[j];\n"
        "      if (t != (T)0)\n"
        "        for (long long c = threadIdx.x; c < QC; c += blockDim.x) {\n"
        "          T s = Q[oq + j * QC + c];\n"
        "          for (long long i = j + 1; i < M; ++i) s += fjl_conj(w[i * N + j]) * Q[oq + i * QC + c];\n"
        "          s *= t;\n          Q[oq + j * QC + c] -= s;\n"
        "          for (long long i = j + 1; i < M; ++i) Q[oq + i * QC + c] -= s * w[i * N + j];\n        }\n"
        "      __syncthreads();\n    }\n  }\n}\n"
    )
    bufs = (ins[0], outs[0], outs[1], wn, tn) + ((outs[2],) if piv else ())
    return recs + launch("op", body, B * blk, blk, bufs, "qr")


def _eigh(params: dict, a, out_avals: list, ins: list, outs: list, launch, recs: list) -> list:  # noqa: ANN001
    hdr = _check("eigh", np.dtype(a.dtype))
    n = a.shape[-1]
    B = math.prod(a.shape[:-2])
    lower = bool(params.get("lower", True))
    sub = params.get("subset_by_index")
    lo, hi = (0, n) if sub is None else (int(sub[0]), int(sub[1]))
    kk = hi - lo
    mm = n + (n % 2)  # players of the round-robin (a dummy when n is odd)
    eps = "1e-14" if np.dtype(a.dtype) in (np.float64, np.complex128) else "1e-7"
    blk = _block(n * n)
    _rotation_tables("eigh", a.dtype, blk, max(1, mm // 2))
    an, vn = f"{outs[0]}_a", f"{outs[0]}_v"
    recs = recs + [Alloc(an, (B, n, n), np.dtype(a.dtype)), Alloc(vn, (B, n, n), np.dtype(a.dtype))]
    # the Hermitian matrix of the triangle read (a diagonal's imaginary part ignored, as heevd)
    src_ij = (
        f"(i {'>' if lower else '<'} j ? x[o + i * N + j] : i == j ? (T)fjl_re(x[o + p]) : fjl_conj(x[o + j * N + i]))"
    )
    body = (
        f"// eigh (parallel cyclic Jacobi) of {B} {n}x{n} Hermitian matrices ({'lower' if lower else 'upper'})"
        f", eigenvalues {lo}:{hi}\n"
        + hdr
        + _head(
            blk,
            "const T* __restrict__ x, T* __restrict__ vout, R* __restrict__ wout, T* __restrict__ A, T* __restrict__ V",
            a.dtype,
        )
        + f"  const long long N = {n}, MM = {mm}, KK = {kk}, LO = {lo};\n"
        f"  __shared__ R sh[{blk}];\n  __shared__ R cs[{max(1, mm // 2)}], sn[{max(1, mm // 2)}];\n"
        f"  __shared__ T gg[{max(1, mm // 2)}];\n"
        f"  __shared__ int pp[{max(1, mm // 2)}], qq[{max(1, mm // 2)}];\n  __shared__ int finite;\n"
        + _MATS.format(B=B)
        + "    const long long o = bm * N * N;\n    T* a = A + o;\n    T* v = V + o;\n"
        "    if (threadIdx.x == 0) finite = 1;\n    __syncthreads();\n"
        "    for (long long p = threadIdx.x; p < N * N; p += blockDim.x) {\n"
        "      const long long i = p / N, j = p % N;\n"
        f"      const T e = {src_ij};\n"
        "      if (!fjl_finite(x[o + p])) finite = 0;  // anywhere in the matrix, as the CPU impl\n"
        "      a[p] = e;\n      v[p] = i == j ? (T)1 : (T)0;\n    }\n"
        "    __syncthreads();\n"
        "    for (int sweep = 0; sweep < 40 && finite; ++sweep) {\n"
        "      R part = (R)0, tot = (R)0;\n"
        "      for (long long p = threadIdx.x; p < N * N; p += blockDim.x) {\n"
        "        const R e = fjl_abs2(a[p]);\n        if (p / N != p % N) part += e;\n        tot += e;\n      }\n"
        "      sh[threadIdx.x] = part;\n      __syncthreads();\n"
        "      for (int h = blockDim.x / 2; h > 0; h >>= 1) {\n"
        "        if (threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];\n        __syncthreads();\n      }\n"
        "      const R off = sh[0];\n      __syncthreads();\n"
        "      sh[threadIdx.x] = tot;\n      __syncthreads();\n"
        "      for (int h = blockDim.x / 2; h > 0; h >>= 1) {\n"
        "        if (threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];\n        __syncthreads();\n      }\n"
        "      const R all = sh[0];\n      __syncthreads();\n"
        f"      if (off <= ({eps}) * ({eps}) * all) break;\n"
        "      for (long long r = 0; r < MM - 1; ++r) {\n"
        "        // round r of the circle method: player 0 fixed, the others rotate\n"
        "        for (long long k = threadIdx.x; k < MM / 2; k += blockDim.x) {\n"
        "          const long long u1 = k == 0 ? 0 : 1 + (k - 1 + r) % (MM - 1);\n"
        "          const long long u2 = 1 + (MM - 2 - k + r) % (MM - 1);\n"
        "          long long p = u1 < u2 ? u1 : u2, q = u1 < u2 ? u2 : u1;\n"
        "          R c = (R)1, s = (R)0;\n          T g = (T)1;\n"
        "          if (q < N) {\n"
        "            // J = diag(1, g) [[c, s], [-s, c]], g = conj(apq) / |apq| making the pair real\n"
        "            const T apq = a[p * N + q];\n"
        "            const R r = fjl_abs(apq);\n"
        "            if (r != (R)0) {\n"
        "              const R th = (fjl_re(a[q * N + q]) - fjl_re(a[p * N + p])) / ((R)2 * r);\n"
        "              const R t = (th >= (R)0 ? (R)1 : (R)-1) / (fabs(th) + sqrt(th * th + (R)1));\n"
        "              c = (R)1 / sqrt(t * t + (R)1);\n              s = t * c;\n"
        "              g = fjl_conj(apq) / r;\n            }\n"
        "          } else { p = 0; q = 0; }\n"
        "          pp[k] = (int)p; qq[k] = (int)q; cs[k] = c; sn[k] = s; gg[k] = g;\n        }\n"
        "        __syncthreads();\n"
        "        // columns: A <- A J, V <- V J\n"
        "        for (long long e = threadIdx.x; e < (MM / 2) * N; e += blockDim.x) {\n"
        "          const long long k = e / N, i = e % N;\n"
        "          const int p = pp[k], q = qq[k];\n"
        "          if (p == q) continue;\n"
        "          const R c = cs[k], s = sn[k];\n"
        "          const T g = gg[k];\n"
        "          const T aip = a[i * N + p], aiq = g * a[i * N + q];\n"
        "          a[i * N + p] = c * aip - s * aiq;\n          a[i * N + q] = s * aip + c * aiq;\n"
        "          const T vip = v[i * N + p], viq = g * v[i * N + q];\n"
        "          v[i * N + p] = c * vip - s * viq;\n          v[i * N + q] = s * vip + c * viq;\n        }\n"
        "        __syncthreads();\n"
        "        // rows: A <- J^T A\n"
        "        for (long long e = threadIdx.x; e < (MM / 2) * N; e += blockDim.x) {\n"
        "          const long long k = e / N, j = e % N;\n"
        "          const int p = pp[k], q = qq[k];\n"
        "          if (p == q) continue;\n"
        "          const R c = cs[k], s = sn[k];\n"
        "          const T apj = a[p * N + j], aqj = fjl_conj(gg[k]) * a[q * N + j];\n"
        "          a[p * N + j] = c * apj - s * aqj;\n          a[q * N + j] = s * apj + c * aqj;\n        }\n"
        "        __syncthreads();\n      }\n    }\n"
        "    if (threadIdx.x == 0 && finite) {\n"
        "      // eigenvalues ascending: a selection sort of the diagonal, moving V's columns along\n"
        "      for (long long i = 0; i < N; ++i) {\n"
        "        long long m = i;\n"
        "        for (long long j = i + 1; j < N; ++j) if (fjl_re(a[j * N + j]) < fjl_re(a[m * N + m])) m = j;\n"
        "        if (m != i) {\n"
        "          const T t = a[i * N + i]; a[i * N + i] = a[m * N + m]; a[m * N + m] = t;\n"
        "          for (long long r = 0; r < N; ++r) { const T u = v[r * N + i]; v[r * N + i] = v[r * N + m]; "
        "v[r * N + m] = u; }\n"
        "        }\n      }\n    }\n"
        "    __syncthreads();\n"
        "    for (long long p = threadIdx.x; p < N * KK; p += blockDim.x) {\n"
        "      const long long r = p / KK, k = p % KK;\n"
        "      vout[bm * N * KK + p] = finite ? v[r * N + LO + k] : (T)NAN;\n    }\n"
        "    for (long long k = threadIdx.x; k < KK; k += blockDim.x)\n"
        "      wout[bm * KK + k] = finite ? fjl_re(a[(LO + k) * N + LO + k]) : (R)NAN;\n"
        "    __syncthreads();\n  }\n}\n"
    )
    body = _real_phases(body, a.dtype, "k")
    return recs + launch("op", body, B * blk, blk, (ins[0], outs[0], outs[1], an, vn), "eigh")


def _svd(params: dict, a, out_avals: list, ins: list, outs: list, launch, recs: list) -> list:  # noqa: ANN001
    hdr = _check("svd", np.dtype(a.dtype))
    m, n = a.shape[-2:]
    k = min(m, n)
    R = max(m, n)
    B = math.prod(a.shape[:-2])
    tr = m < n  # work on the transpose: W = A^T (n x m)
    full, uv = bool(params["full_matrices"]), bool(params["compute_uv"])
    sub = params.get("subset_by_index")
    lo, hi = (0, k) if sub is None else (int(sub[0]), int(sub[1]))
    kk = k + (k % 2)
    wcols = R if (uv and full) else k  # W's columns: the left vectors, completed when full
    eps = "1e-15" if np.dtype(a.dtype) in (np.float64, np.complex128) else "1e-7"
    blk = _block(R * 4)
    _rotation_tables("svd", a.dtype, blk, max(1, kk // 2))
    wn, vn = f"{outs[0]}_w", f"{outs[0]}_v"
    recs = recs + [Alloc(wn, (B, R, wcols), np.dtype(a.dtype)), Alloc(vn, (B, k, k), np.dtype(a.dtype))]
    um = out_avals[1].shape[-1] if uv else 0
    vr = out_avals[2].shape[-2] if uv else 0
    # W[r][c] = A[r][c] or conj(A[c][r]); u/vt come from W (left vectors) and V (right vectors),
    # swapped when transposed (A^H = W V^H: A = V W^H)
    src = "fjl_conj(x[o + c * N + r])" if tr else "x[o + r * N + c]"
    if not uv:
        outputs = ""
        sig_out = "R* __restrict__ sout"
        args = (ins[0], outs[0], wn, vn)
    else:
        sig_out = "R* __restrict__ sout, T* __restrict__ uout, T* __restrict__ vtout"
        args = (ins[0], outs[0], outs[1], outs[2], wn, vn)
        if not tr:  # u = W[:, lo:hi or full], vt = V^T rows lo:hi
            u_e = "(finite ? w[i * WC + (KSEL ? LO + j : j)] : (T)NAN)"
            vt_e = "(finite ? fjl_conj(v[j * K + LO + i]) : (T)NAN)"
        else:  # A = V S W^T: u = V (m x m), vt = W^T
            u_e = "(finite ? v[i * K + LO + j] : (T)NAN)"
            vt_e = "(finite ? fjl_conj(w[j * WC + (KSEL ? LO + i : i)]) : (T)NAN)"
        outputs = (
            f"    for (long long p = threadIdx.x; p < {m} * {um}; p += blockDim.x) {{\n"
            f"      const long long i = p / {um}, j = p % {um};\n"
            f"      uout[bm * {m * um} + p] = {u_e};\n    }}\n"
            f"    for (long long p = threadIdx.x; p < {vr} * {n}; p += blockDim.x) {{\n"
            f"      const long long i = p / {n}, j = p % {n};\n"
            f"      vtout[bm * {vr * n} + p] = {vt_e};\n    }}\n"
        )
    ksel = 0 if (uv and full) else 1  # outputs select columns lo:hi of W (not with full_matrices)
    body = (
        f"// svd (one-sided Jacobi{', of the transpose' if tr else ''}) of {B} {m}x{n} matrices, "
        f"values {lo}:{hi}{', full' if full else ''}{', with vectors' if uv else ''}\n"
        + hdr
        + _head(blk, f"const T* __restrict__ x, {sig_out}, T* __restrict__ W, T* __restrict__ V", a.dtype)
        + f"  const long long M = {m}, N = {n}, K = {k}, RR = {R}, WC = {wcols}, KK = {kk}, LO = {lo}, HI = {hi};\n"
        f"  const int KSEL = {ksel};\n"
        f"  __shared__ R sh[{blk}];\n  __shared__ R cs[{max(1, kk // 2)}], sn[{max(1, kk // 2)}];\n"
        f"  __shared__ T gg[{max(1, kk // 2)}];\n"
        f"  __shared__ int pp[{max(1, kk // 2)}], qq[{max(1, kk // 2)}];\n  __shared__ int finite, rotated;\n"
        + _MATS.format(B=B)
        + "    const long long o = bm * M * N;\n    T* w = W + bm * RR * WC;\n    T* v = V + bm * K * K;\n"
        "    if (threadIdx.x == 0) finite = 1;\n    __syncthreads();\n"
        "    for (long long p = threadIdx.x; p < RR * WC; p += blockDim.x) {\n"
        "      const long long r = p / WC, c = p % WC;\n"
        f"      const T e = c < K ? {src} : (T)0;\n"
        "      if (!fjl_finite(e)) finite = 0;\n      w[p] = e;\n    }\n"
        "    for (long long p = threadIdx.x; p < K * K; p += blockDim.x) v[p] = (p / K == p % K) ? (T)1 : (T)0;\n"
        "    __syncthreads();\n"
        "    for (int sweep = 0; sweep < 60 && finite; ++sweep) {\n"
        "      if (threadIdx.x == 0) rotated = 0;\n      __syncthreads();\n"
        "      for (long long r = 0; r < KK - 1; ++r) {\n"
        "        for (long long kq = threadIdx.x; kq < KK / 2; kq += blockDim.x) {\n"
        "          const long long u1 = kq == 0 ? 0 : 1 + (kq - 1 + r) % (KK - 1);\n"
        "          const long long u2 = 1 + (KK - 2 - kq + r) % (KK - 1);\n"
        "          long long p = u1 < u2 ? u1 : u2, q = u1 < u2 ? u2 : u1;\n"
        "          R c = (R)1, s = (R)0;\n          T g = (T)1;\n"
        "          if (q < K) {\n"
        "            R al = (R)0, be = (R)0;\n            T ga = (T)0;\n"
        "            for (long long i = 0; i < RR; ++i) {\n"
        "              const T wp = w[i * WC + p], wq = w[i * WC + q];\n"
        "              al += fjl_abs2(wp); be += fjl_abs2(wq); ga += fjl_conj(wp) * wq;\n            }\n"
        "            const R r = fjl_abs(ga);\n"
        f"            if (r > ({eps}) * sqrt(al * be) && r != (R)0) {{\n"
        "              // J = diag(1, g) [[c, s], [-s, c]], g = conj(ga) / |ga| making the pair real\n"
        "              const R ze = (be - al) / ((R)2 * r);\n"
        "              const R t = (ze >= (R)0 ? (R)1 : (R)-1) / (fabs(ze) + sqrt((R)1 + ze * ze));\n"
        "              c = (R)1 / sqrt((R)1 + t * t);\n              s = c * t;\n              g = fjl_conj(ga) / r;\n"
        "              rotated = 1;\n            }\n"
        "          } else { p = 0; q = 0; }\n"
        "          pp[kq] = (int)p; qq[kq] = (int)q; cs[kq] = c; sn[kq] = s; gg[kq] = g;\n        }\n"
        "        __syncthreads();\n"
        "        for (long long e = threadIdx.x; e < (KK / 2) * RR; e += blockDim.x) {\n"
        "          const long long kq = e / RR, i = e % RR;\n"
        "          const int p = pp[kq], q = qq[kq];\n"
        "          if (p == q || sn[kq] == (R)0) continue;\n"
        "          const R c = cs[kq], s = sn[kq];\n"
        "          const T g = gg[kq];\n"
        "          const T wp = w[i * WC + p], wq = g * w[i * WC + q];\n"
        "          w[i * WC + p] = c * wp - s * wq;\n          w[i * WC + q] = s * wp + c * wq;\n"
        "          if (i < K) {\n"
        "            const T vp = v[i * K + p], vq = g * v[i * K + q];\n"
        "            v[i * K + p] = c * vp - s * vq;\n            v[i * K + q] = s * vp + c * vq;\n          }\n"
        "        }\n        __syncthreads();\n      }\n"
        "      const int any = rotated;\n      __syncthreads();\n"
        "      if (!any) break;\n    }\n"
        "    // singular values (column norms), descending: a selection sort moving W's and V's columns\n"
        "    if (threadIdx.x == 0 && finite) {\n"
        "      R smax = (R)0;\n"
        "      for (long long j = 0; j < K; ++j) {\n"
        "        long long best = j; R bs = (R)-1;\n"
        "        for (long long c = j; c < K; ++c) {\n"
        "          R s2 = (R)0;\n          for (long long i = 0; i < RR; ++i) s2 += fjl_abs2(w[i * WC + c]);\n"
        "          if (s2 > bs) { bs = s2; best = c; }\n        }\n"
        "        if (best != j) {\n"
        "          for (long long i = 0; i < RR; ++i) { const T t = w[i * WC + j]; w[i * WC + j] = w[i * WC + best]; "
        "w[i * WC + best] = t; }\n"
        "          for (long long i = 0; i < K; ++i) { const T t = v[i * K + j]; v[i * K + j] = v[i * K + best]; "
        "v[i * K + best] = t; }\n        }\n"
        "        const R sv = sqrt(bs);\n"
        "        if (j == 0) smax = sv;\n"
        "        if (j >= LO && j < HI) sout[bm * (HI - LO) + j - LO] = sv;\n"
        "        // the left vector; a column of zeros (completed below) where sv is rounding noise\n"
        f"        const bool keep = sv > (R)0 && sv > ({eps}) * (R)RR * smax;\n"
        "        for (long long i = 0; i < RR; ++i) w[i * WC + j] = keep ? w[i * WC + j] / sv : (T)0;\n"
        "      }\n"
        "      // complete the left vectors: zero columns and (full_matrices) columns K.. of W, by\n"
        "      // Gram-Schmidt of unit vectors against the columns so far\n"
        "      long long cand = 0;\n"
        "      for (long long j = 0; j < WC; ++j) {\n"
        "        R nrm = (R)0;\n        for (long long i = 0; i < RR; ++i) nrm += fjl_abs2(w[i * WC + j]);\n"
        "        if (nrm > (R)0.5) continue;\n"
        "        for (; cand < RR; ++cand) {\n"
        "          R n2 = (R)0;\n"
        "          for (long long i = 0; i < RR; ++i) {\n"
        "            T e = i == cand ? (T)1 : (T)0;\n"
        "            for (long long c = 0; c < WC; ++c)\n"
        "              if (c != j) e -= fjl_conj(w[cand * WC + c]) * w[i * WC + c];\n"
        "            w[i * WC + j] = e;\n            n2 += fjl_abs2(e);\n          }\n"
        "          if (n2 > (R)0.25) {\n"
        "            const R inv = (R)1 / sqrt(n2);\n"
        "            for (long long i = 0; i < RR; ++i) w[i * WC + j] *= inv;\n"
        "            ++cand;\n            break;\n          }\n        }\n      }\n    }\n"
        "    __syncthreads();\n"
        "    if (!finite)\n"
        "      for (long long j = threadIdx.x; j < HI - LO; j += blockDim.x) sout[bm * (HI - LO) + j] = (R)NAN;\n"
        + outputs
        + "    __syncthreads();\n  }\n}\n"
    )
    body = _real_phases(body, a.dtype, "kq")
    return recs + launch("op", body, B * blk, blk, args, "svd")
