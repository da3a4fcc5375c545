"""CUDA kernels for the linear-algebra host steps (rendered from ``host_ops.render``), float32 and
float64, batched over leading dimensions: one thread block per matrix (a grid-stride loop over the
matrices), the unblocked LAPACK algorithms with ``__syncthreads()`` between their steps:

- ``cholesky`` (``symmetrize_input``, ``upper``): right-looking, column by column; a matrix that
  is not positive definite (a pivot ``<= 0`` or NaN) gives an all-NaN factor, as the CPU impl;
- ``triangular_solve`` (all sides, transposes, unit diagonals): one thread per right-hand side
  (a column of ``b``, or a row for a right-side solve), substitution in order;
- ``lu``: partial pivoting (the first largest ``|a|`` of a column), rows swapped, multipliers
  scaled by the pivot's reciprocal (``getf2``), 0-based pivots and the permutation;
  ``lu_pivots_to_permutation``;
- ``qr`` (no pivoting): Householder reflectors with LAPACK's signs (``beta = -sign(alpha)
  ||x||``, ``geqr2``), ``Q`` formed by applying them to the identity (``org2r``), reduced or full;
- ``eigh`` (real symmetric, either triangle, ``subset_by_index``): parallel cyclic Jacobi (the
  round-robin ordering: n/2 disjoint rotations per step, Rutishauser's stable angles) until the
  off-diagonal mass is below the dtype's epsilon (at most 40 sweeps), eigenvalues ascending; a
  non-finite input gives NaNs, as the CPU impl. Eigenvectors are unique up to sign (and within
  repeated eigenvalues), so they may differ from LAPACK's by those choices;
- ``svd`` (real; ``full_matrices``, ``compute_uv``, ``subset_by_index``): one-sided (Hestenes)
  Jacobi on the columns (of the transpose when wide), the same round-robin ordering, singular
  values descending; left vectors of zero singular values and the extra columns of
  ``full_matrices`` completed by Gram-Schmidt against unit vectors. Signs as with ``eigh``.

These are meant for the small and medium matrices of training programs (initializers, Gaussian
processes, solves in a loss): O(n) synchronized steps per matrix, no blocking, one block each; a
large single matrix is far slower than cuSOLVER would be. ``eig``, ``schur`` and the other
factorizations have no CUDA form (``NotImplementedError``).
"""

from __future__ import annotations

import math

import numpy as np

from fjax.backends.cuda.ops import ctype
from fjax.backends.cuda.records import Alloc

NAMES = frozenset({"cholesky", "triangular_solve", "lu", "lu_pivots_to_permutation", "qr", "eigh", "svd"})


def _check(name: str, dt: np.dtype) -> str:
    if dt not in (np.float32, np.float64):
        raise NotImplementedError(f"CUDA backend: {name} on dtype {dt.name} (float32/float64 only)")
    return ctype(dt)


def _block(n: int) -> int:
    """Threads per matrix: a power of two (the block reductions halve it), 32 to 256."""
    return min(256, max(32, 1 << max(0, n - 1).bit_length()))


def _head(block: int, sig: str) -> str:
    return f'extern "C" __global__ void __launch_bounds__({block}) __NAME__({sig}) {{\n'


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
    T = _check("cholesky", np.dtype(a.dtype))
    n = a.shape[-1]
    B = math.prod(a.shape[:-2])
    blk = _block(n * n)
    sym = bool(params.get("symmetrize_input", False))
    upper = bool(params.get("upper", False))
    src_ik = "(x[o + i * N + k] + x[o + k * N + i]) / (T)2" if sym else "x[o + i * N + k]"
    body = (
        f"// cholesky of {B} {n}x{n} matrices{' (symmetrized)' if sym else ''}{', upper' if upper else ''}\n"
        f"typedef {T} T;\n"
        + _head(blk, "const T* __restrict__ x, T* __restrict__ L")
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
        "        const T d = L[o + j * N + j];\n"
        "        if (!(d > (T)0)) bad = 1;\n"
        "        L[o + j * N + j] = sqrt(d);\n      }\n"
        "      __syncthreads();\n"
        "      const T djj = L[o + j * N + j];\n"
        "      for (long long i = j + 1 + threadIdx.x; i < N; i += blockDim.x) L[o + i * N + j] /= djj;\n"
        "      __syncthreads();\n"
        "      const long long m = N - j - 1;\n"
        "      for (long long p = threadIdx.x; p < m * m; p += blockDim.x) {\n"
        "        const long long r = p / m, c = p % m;\n"
        "        if (c <= r) {\n"
        "          const long long i = j + 1 + r, k = j + 1 + c;\n"
        "          L[o + i * N + k] -= L[o + i * N + j] * L[o + k * N + j];\n        }\n      }\n"
        "      __syncthreads();\n    }\n"
        "    if (bad) {\n"
        "      for (long long p = threadIdx.x; p < N * N; p += blockDim.x) L[o + p] = (T)NAN;\n"
        + (
            "    } else {\n"
            "      for (long long p = threadIdx.x; p < N * N; p += blockDim.x) {\n"
            "        const long long i = p / N, k = p % N;\n"
            "        if (k < i) { L[o + k * N + i] = L[o + p]; L[o + p] = (T)0; }\n      }\n"
            if upper
            else ""
        )
        + "    }\n    __syncthreads();\n  }\n}\n"
    )
    return launch("op", body, B * blk, blk, (ins[0], outs[0]), "cholesky")


def _triangular_solve(params: dict, in_avals: list, ins: list, outs: list, launch) -> list:  # noqa: ANN001
    a, b = in_avals
    T = _check("triangular_solve", np.dtype(b.dtype))
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
    # element s of right-hand side q in b (and in the output)
    at = "(ob + s * C + q)" if left else "(ob + q * C + s)"
    loop = "for (long long i = 0; i < M; ++i)" if c_lower else "for (long long i = M - 1; i >= 0; --i)"
    ks = "for (long long k = 0; k < i; ++k)" if c_lower else "for (long long k = i + 1; k < M; ++k)"
    total = B * nrhs
    blk = min(256, max(32, -(-total // 32) * 32))
    body = (
        f"// triangular_solve ({'left' if left else 'right'}, {'lower' if lower else 'upper'}"
        f"{', transposed' if trans else ''}{', unit diagonal' if unit else ''}): {B} x {nrhs} substitutions\n"
        f"typedef {T} T;\n"
        + _head(blk, "const T* __restrict__ A, const T* __restrict__ X, T* __restrict__ Y")
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
    T = _check("lu", np.dtype(a.dtype))
    m, n = a.shape[-2:]
    k = min(m, n)
    B = math.prod(a.shape[:-2])
    blk = _block(max(m, n) * 4)
    body = (
        f"// lu (partial pivoting) of {B} {m}x{n} matrices: pivots and permutation\n"
        f"typedef {T} T;\n"
        + _head(blk, "const T* __restrict__ x, T* __restrict__ W, int* __restrict__ piv, int* __restrict__ perm")
        + f"  const long long M = {m}, N = {n}, K = {k};\n"
        f"  __shared__ T sv[{blk}];\n  __shared__ long long si[{blk}];\n"
        + _MATS.format(B=B)
        + "    const long long o = bm * M * N;\n"
        "    for (long long p = threadIdx.x; p < M * N; p += blockDim.x) W[o + p] = x[o + p];\n"
        "    __syncthreads();\n"
        "    for (long long j = 0; j < K; ++j) {\n"
        "      T best = (T)-1; long long bi = j;\n"
        "      for (long long i = j + threadIdx.x; i < M; i += blockDim.x) {\n"
        "        const T v = fabs(W[o + i * N + j]);\n"
        "        if (v > best) { best = v; bi = i; }\n      }\n"
        "      sv[threadIdx.x] = best; si[threadIdx.x] = bi;\n      __syncthreads();\n"
        "      for (int h = blockDim.x / 2; h > 0; h >>= 1) {\n"
        "        if (threadIdx.x < h) {\n"
        "          const T v = sv[threadIdx.x + h]; const long long vi = si[threadIdx.x + h];\n"
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
    if params.get("pivoting"):
        raise NotImplementedError("CUDA backend: qr with pivoting=True")
    T = _check("qr", np.dtype(a.dtype))
    m, n = a.shape[-2:]
    k = min(m, n)
    B = math.prod(a.shape[:-2])
    qc = out_avals[0].shape[-1]
    rr = out_avals[1].shape[-2]
    blk = _block(max(n, qc, m))
    wn, tn = f"{outs[0]}_w", f"{outs[0]}_tau"
    recs = [Alloc(wn, (B, m, n), np.dtype(a.dtype)), Alloc(tn, (B, max(k, 1)), np.dtype(a.dtype))]
    body = (
        f"// qr (Householder, LAPACK's signs) of {B} {m}x{n} matrices: Q {m}x{qc}, R {rr}x{n}\n"
        f"typedef {T} T;\n"
        + _head(
            blk,
            "const T* __restrict__ x, T* __restrict__ Q, T* __restrict__ R, T* __restrict__ W, T* __restrict__ tau",
        )
        + f"  const long long M = {m}, N = {n}, K = {k}, QC = {qc}, RR = {rr};\n"
        f"  __shared__ T sh[{blk}];\n"
        + _MATS.format(B=B)
        + "    const long long o = bm * M * N, oq = bm * M * QC, orr = bm * RR * N;\n"
        "    T* w = W + o;\n    T* ta = tau + bm * (K > 0 ? K : 1);\n"
        "    for (long long p = threadIdx.x; p < M * N; p += blockDim.x) w[p] = x[o + p];\n"
        "    __syncthreads();\n"
        "    for (long long j = 0; j < K; ++j) {\n"
        "      T part = (T)0;\n"
        "      for (long long i = j + 1 + threadIdx.x; i < M; i += blockDim.x) part += w[i * N + j] * w[i * N + j];\n"
        "      sh[threadIdx.x] = part;\n      __syncthreads();\n"
        "      for (int h = blockDim.x / 2; h > 0; h >>= 1) {\n"
        "        if (threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];\n        __syncthreads();\n      }\n"
        "      const T xnorm = sqrt(sh[0]), alpha = w[j * N + j];\n"
        "      T t = (T)0, beta = alpha;\n"
        "      if (xnorm != (T)0) {\n"
        "        beta = -copysign(hypot(alpha, xnorm), alpha);\n"
        "        t = (beta - alpha) / beta;\n      }\n"
        "      __syncthreads();\n"
        "      if (xnorm != (T)0) {\n"
        "        const T sc = (T)1 / (alpha - beta);\n"
        "        for (long long i = j + 1 + threadIdx.x; i < M; i += blockDim.x) w[i * N + j] *= sc;\n"
        "      }\n"
        "      if (threadIdx.x == 0) { ta[j] = t; w[j * N + j] = beta; }\n"
        "      __syncthreads();\n"
        "      if (t != (T)0)\n"
        "        for (long long c = j + 1 + threadIdx.x; c < N; c += blockDim.x) {\n"
        "          T s = w[j * N + c];\n"
        "          for (long long i = j + 1; i < M; ++i) s += w[i * N + j] * w[i * N + c];\n"
        "          s *= t;\n          w[j * N + c] -= s;\n"
        "          for (long long i = j + 1; i < M; ++i) w[i * N + c] -= s * w[i * N + j];\n        }\n"
        "      __syncthreads();\n    }\n"
        "    for (long long p = threadIdx.x; p < RR * N; p += blockDim.x) {\n"
        "      const long long i = p / N, c = p % N;\n"
        "      R[orr + p] = (i <= c && i < M) ? w[i * N + c] : (T)0;\n    }\n"
        "    for (long long p = threadIdx.x; p < M * QC; p += blockDim.x)\n"
        "      Q[oq + p] = (p / QC == p % QC) ? (T)1 : (T)0;\n"
        "    __syncthreads();\n"
        "    for (long long j = K - 1; j >= 0; --j) {\n"
        "      const T t = ta[j];\n"
        "      if (t != (T)0)\n"
        "        for (long long c = threadIdx.x; c < QC; c += blockDim.x) {\n"
        "          T s = Q[oq + j * QC + c];\n"
        "          for (long long i = j + 1; i < M; ++i) s += w[i * N + j] * Q[oq + i * QC + c];\n"
        "          s *= t;\n          Q[oq + j * QC + c] -= s;\n"
        "          for (long long i = j + 1; i < M; ++i) Q[oq + i * QC + c] -= s * w[i * N + j];\n        }\n"
        "      __syncthreads();\n    }\n  }\n}\n"
    )
    return recs + launch("op", body, B * blk, blk, (ins[0], outs[0], outs[1], wn, tn), "qr")


def _eigh(params: dict, a, out_avals: list, ins: list, outs: list, launch, recs: list) -> list:  # noqa: ANN001
    if np.dtype(a.dtype).kind == "c":
        raise NotImplementedError("CUDA backend: eigh of complex matrices")
    T = _check("eigh", np.dtype(a.dtype))
    n = a.shape[-1]
    B = math.prod(a.shape[:-2])
    lower = bool(params.get("lower", True))
    sub = params.get("subset_by_index")
    lo, hi = (0, n) if sub is None else (int(sub[0]), int(sub[1]))
    kk = hi - lo
    mm = n + (n % 2)  # players of the round-robin (a dummy when n is odd)
    eps = "1e-14" if T == "double" else "1e-7"
    blk = _block(n * n)
    an, vn = f"{outs[0]}_a", f"{outs[0]}_v"
    recs = recs + [Alloc(an, (B, n, n), np.dtype(a.dtype)), Alloc(vn, (B, n, n), np.dtype(a.dtype))]
    src_ij = (
        "(i >= j ? x[o + i * N + j] : x[o + j * N + i])" if lower else "(i <= j ? x[o + i * N + j] : x[o + j * N + i])"
    )
    body = (
        f"// eigh (parallel cyclic Jacobi) of {B} {n}x{n} symmetric matrices ({'lower' if lower else 'upper'})"
        f", eigenvalues {lo}:{hi}\n"
        f"typedef {T} T;\n"
        + _head(
            blk,
            "const T* __restrict__ x, T* __restrict__ vout, T* __restrict__ wout, T* __restrict__ A, T* __restrict__ V",
        )
        + f"  const long long N = {n}, MM = {mm}, KK = {kk}, LO = {lo};\n"
        f"  __shared__ T sh[{blk}];\n  __shared__ T cs[{max(1, mm // 2)}], sn[{max(1, mm // 2)}];\n"
        f"  __shared__ int pp[{max(1, mm // 2)}], qq[{max(1, mm // 2)}];\n  __shared__ int finite;\n"
        + _MATS.format(B=B)
        + "    const long long o = bm * N * N;\n    T* a = A + o;\n    T* v = V + o;\n"
        "    if (threadIdx.x == 0) finite = 1;\n    __syncthreads();\n"
        "    for (long long p = threadIdx.x; p < N * N; p += blockDim.x) {\n"
        "      const long long i = p / N, j = p % N;\n"
        f"      const T e = {src_ij};\n"
        "      if (!isfinite(e)) finite = 0;\n"
        "      a[p] = e;\n      v[p] = i == j ? (T)1 : (T)0;\n    }\n"
        "    __syncthreads();\n"
        "    for (int sweep = 0; sweep < 40 && finite; ++sweep) {\n"
        "      T part = (T)0, tot = (T)0;\n"
        "      for (long long p = threadIdx.x; p < N * N; p += blockDim.x) {\n"
        "        const T e = a[p] * a[p];\n        if (p / N != p % N) part += e;\n        tot += e;\n      }\n"
        "      sh[threadIdx.x] = part;\n      __syncthreads();\n"
        "      for (int h = blockDim.x / 2; h > 0; h >>= 1) {\n"
        "        if (threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];\n        __syncthreads();\n      }\n"
        "      const T off = sh[0];\n      __syncthreads();\n"
        "      sh[threadIdx.x] = tot;\n      __syncthreads();\n"
        "      for (int h = blockDim.x / 2; h > 0; h >>= 1) {\n"
        "        if (threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];\n        __syncthreads();\n      }\n"
        "      const T all = sh[0];\n      __syncthreads();\n"
        f"      if (off <= ({eps}) * ({eps}) * all) break;\n"
        "      for (long long r = 0; r < MM - 1; ++r) {\n"
        "        // round r of the circle method: player 0 fixed, the others rotate\n"
        "        for (long long k = threadIdx.x; k < MM / 2; k += blockDim.x) {\n"
        "          const long long u1 = k == 0 ? 0 : 1 + (k - 1 + r) % (MM - 1);\n"
        "          const long long u2 = 1 + (MM - 2 - k + r) % (MM - 1);\n"
        "          long long p = u1 < u2 ? u1 : u2, q = u1 < u2 ? u2 : u1;\n"
        "          T c = (T)1, s = (T)0;\n"
        "          if (q < N) {\n"
        "            const T apq = a[p * N + q];\n"
        "            if (apq != (T)0) {\n"
        "              const T th = (a[q * N + q] - a[p * N + p]) / ((T)2 * apq);\n"
        "              const T t = (th >= (T)0 ? (T)1 : (T)-1) / (fabs(th) + sqrt(th * th + (T)1));\n"
        "              c = (T)1 / sqrt(t * t + (T)1);\n              s = t * c;\n            }\n"
        "          } else { p = 0; q = 0; }\n"
        "          pp[k] = (int)p; qq[k] = (int)q; cs[k] = c; sn[k] = s;\n        }\n"
        "        __syncthreads();\n"
        "        // columns: A <- A J, V <- V J\n"
        "        for (long long e = threadIdx.x; e < (MM / 2) * N; e += blockDim.x) {\n"
        "          const long long k = e / N, i = e % N;\n"
        "          const int p = pp[k], q = qq[k];\n"
        "          if (p == q) continue;\n"
        "          const T c = cs[k], s = sn[k];\n"
        "          const T aip = a[i * N + p], aiq = a[i * N + q];\n"
        "          a[i * N + p] = c * aip - s * aiq;\n          a[i * N + q] = s * aip + c * aiq;\n"
        "          const T vip = v[i * N + p], viq = v[i * N + q];\n"
        "          v[i * N + p] = c * vip - s * viq;\n          v[i * N + q] = s * vip + c * viq;\n        }\n"
        "        __syncthreads();\n"
        "        // rows: A <- J^T A\n"
        "        for (long long e = threadIdx.x; e < (MM / 2) * N; e += blockDim.x) {\n"
        "          const long long k = e / N, j = e % N;\n"
        "          const int p = pp[k], q = qq[k];\n"
        "          if (p == q) continue;\n"
        "          const T c = cs[k], s = sn[k];\n"
        "          const T apj = a[p * N + j], aqj = a[q * N + j];\n"
        "          a[p * N + j] = c * apj - s * aqj;\n          a[q * N + j] = s * apj + c * aqj;\n        }\n"
        "        __syncthreads();\n      }\n    }\n"
        "    if (threadIdx.x == 0 && finite) {\n"
        "      // eigenvalues ascending: a selection sort of the diagonal, moving V's columns along\n"
        "      for (long long i = 0; i < N; ++i) {\n"
        "        long long m = i;\n"
        "        for (long long j = i + 1; j < N; ++j) if (a[j * N + j] < a[m * N + m]) m = j;\n"
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
        "      wout[bm * KK + k] = finite ? a[(LO + k) * N + LO + k] : (T)NAN;\n"
        "    __syncthreads();\n  }\n}\n"
    )
    return recs + launch("op", body, B * blk, blk, (ins[0], outs[0], outs[1], an, vn), "eigh")


def _svd(params: dict, a, out_avals: list, ins: list, outs: list, launch, recs: list) -> list:  # noqa: ANN001
    if np.dtype(a.dtype).kind == "c":
        raise NotImplementedError("CUDA backend: svd of complex matrices")
    T = _check("svd", np.dtype(a.dtype))
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
    eps = "1e-15" if T == "double" else "1e-7"
    blk = _block(R * 4)
    wn, vn = f"{outs[0]}_w", f"{outs[0]}_v"
    recs = recs + [Alloc(wn, (B, R, wcols), np.dtype(a.dtype)), Alloc(vn, (B, k, k), np.dtype(a.dtype))]
    um = out_avals[1].shape[-1] if uv else 0
    vr = out_avals[2].shape[-2] if uv else 0
    # W[r][c] = A[r][c] or A[c][r]; u/vt come from W (left vectors) and V (right vectors), swapped
    # when transposed
    src = "x[o + c * N + r]" if tr else "x[o + r * N + c]"
    if not uv:
        outputs = ""
        sig_out = "T* __restrict__ sout"
        args = (ins[0], outs[0], wn, vn)
    else:
        sig_out = "T* __restrict__ sout, T* __restrict__ uout, T* __restrict__ vtout"
        args = (ins[0], outs[0], outs[1], outs[2], wn, vn)
        if not tr:  # u = W[:, lo:hi or full], vt = V^T rows lo:hi
            u_e = "(finite ? w[i * WC + (KSEL ? LO + j : j)] : (T)NAN)"
            vt_e = "(finite ? v[j * K + LO + i] : (T)NAN)"
        else:  # A = V S W^T: u = V (m x m), vt = W^T
            u_e = "(finite ? v[i * K + LO + j] : (T)NAN)"
            vt_e = "(finite ? w[j * WC + (KSEL ? LO + i : i)] : (T)NAN)"
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
        f"typedef {T} T;\n"
        + _head(blk, f"const T* __restrict__ x, {sig_out}, T* __restrict__ W, T* __restrict__ V")
        + f"  const long long M = {m}, N = {n}, K = {k}, RR = {R}, WC = {wcols}, KK = {kk}, LO = {lo}, HI = {hi};\n"
        f"  const int KSEL = {ksel};\n"
        f"  __shared__ T sh[{blk}];\n  __shared__ T cs[{max(1, kk // 2)}], sn[{max(1, kk // 2)}];\n"
        f"  __shared__ int pp[{max(1, kk // 2)}], qq[{max(1, kk // 2)}];\n  __shared__ int finite, rotated;\n"
        + _MATS.format(B=B)
        + "    const long long o = bm * M * N;\n    T* w = W + bm * RR * WC;\n    T* v = V + bm * K * K;\n"
        "    if (threadIdx.x == 0) finite = 1;\n    __syncthreads();\n"
        "    for (long long p = threadIdx.x; p < RR * WC; p += blockDim.x) {\n"
        "      const long long r = p / WC, c = p % WC;\n"
        f"      const T e = c < K ? {src} : (T)0;\n"
        "      if (!isfinite(e)) finite = 0;\n      w[p] = e;\n    }\n"
        "    for (long long p = threadIdx.x; p < K * K; p += blockDim.x) v[p] = (p / K == p % K) ? (T)1 : (T)0;\n"
        "    __syncthreads();\n"
        "    for (int sweep = 0; sweep < 60 && finite; ++sweep) {\n"
        "      if (threadIdx.x == 0) rotated = 0;\n      __syncthreads();\n"
        "      for (long long r = 0; r < KK - 1; ++r) {\n"
        "        for (long long kq = threadIdx.x; kq < KK / 2; kq += blockDim.x) {\n"
        "          const long long u1 = kq == 0 ? 0 : 1 + (kq - 1 + r) % (KK - 1);\n"
        "          const long long u2 = 1 + (KK - 2 - kq + r) % (KK - 1);\n"
        "          long long p = u1 < u2 ? u1 : u2, q = u1 < u2 ? u2 : u1;\n"
        "          T c = (T)1, s = (T)0;\n"
        "          if (q < K) {\n"
        "            T al = (T)0, be = (T)0, ga = (T)0;\n"
        "            for (long long i = 0; i < RR; ++i) {\n"
        "              const T wp = w[i * WC + p], wq = w[i * WC + q];\n"
        "              al += wp * wp; be += wq * wq; ga += wp * wq;\n            }\n"
        f"            if (fabs(ga) > ({eps}) * sqrt(al * be) && ga != (T)0) {{\n"
        "              const T ze = (be - al) / ((T)2 * ga);\n"
        "              const T t = (ze >= (T)0 ? (T)1 : (T)-1) / (fabs(ze) + sqrt((T)1 + ze * ze));\n"
        "              c = (T)1 / sqrt((T)1 + t * t);\n              s = c * t;\n              rotated = 1;\n"
        "            }\n"
        "          } else { p = 0; q = 0; }\n"
        "          pp[kq] = (int)p; qq[kq] = (int)q; cs[kq] = c; sn[kq] = s;\n        }\n"
        "        __syncthreads();\n"
        "        for (long long e = threadIdx.x; e < (KK / 2) * RR; e += blockDim.x) {\n"
        "          const long long kq = e / RR, i = e % RR;\n"
        "          const int p = pp[kq], q = qq[kq];\n"
        "          if (p == q || sn[kq] == (T)0) continue;\n"
        "          const T c = cs[kq], s = sn[kq];\n"
        "          const T wp = w[i * WC + p], wq = w[i * WC + q];\n"
        "          w[i * WC + p] = c * wp - s * wq;\n          w[i * WC + q] = s * wp + c * wq;\n"
        "          if (i < K) {\n"
        "            const T vp = v[i * K + p], vq = v[i * K + q];\n"
        "            v[i * K + p] = c * vp - s * vq;\n            v[i * K + q] = s * vp + c * vq;\n          }\n"
        "        }\n        __syncthreads();\n      }\n"
        "      const int any = rotated;\n      __syncthreads();\n"
        "      if (!any) break;\n    }\n"
        "    // singular values (column norms), descending: a selection sort moving W's and V's columns\n"
        "    if (threadIdx.x == 0 && finite) {\n"
        "      T smax = (T)0;\n"
        "      for (long long j = 0; j < K; ++j) {\n"
        "        long long best = j; T bs = (T)-1;\n"
        "        for (long long c = j; c < K; ++c) {\n"
        "          T s2 = (T)0;\n          for (long long i = 0; i < RR; ++i) s2 += w[i * WC + c] * w[i * WC + c];\n"
        "          if (s2 > bs) { bs = s2; best = c; }\n        }\n"
        "        if (best != j) {\n"
        "          for (long long i = 0; i < RR; ++i) { const T t = w[i * WC + j]; w[i * WC + j] = w[i * WC + best]; "
        "w[i * WC + best] = t; }\n"
        "          for (long long i = 0; i < K; ++i) { const T t = v[i * K + j]; v[i * K + j] = v[i * K + best]; "
        "v[i * K + best] = t; }\n        }\n"
        "        const T sv = sqrt(bs);\n"
        "        if (j == 0) smax = sv;\n"
        "        if (j >= LO && j < HI) sout[bm * (HI - LO) + j - LO] = sv;\n"
        "        // the left vector; a column of zeros (completed below) where sv is rounding noise\n"
        f"        const bool keep = sv > (T)0 && sv > ({eps}) * (T)RR * smax;\n"
        "        for (long long i = 0; i < RR; ++i) w[i * WC + j] = keep ? w[i * WC + j] / sv : (T)0;\n"
        "      }\n"
        "      // complete the left vectors: zero columns and (full_matrices) columns K.. of W, by\n"
        "      // Gram-Schmidt of unit vectors against the columns so far\n"
        "      long long cand = 0;\n"
        "      for (long long j = 0; j < WC; ++j) {\n"
        "        T nrm = (T)0;\n        for (long long i = 0; i < RR; ++i) nrm += w[i * WC + j] * w[i * WC + j];\n"
        "        if (nrm > (T)0.5) continue;\n"
        "        for (; cand < RR; ++cand) {\n"
        "          T n2 = (T)0;\n"
        "          for (long long i = 0; i < RR; ++i) {\n"
        "            T e = i == cand ? (T)1 : (T)0;\n"
        "            for (long long c = 0; c < WC; ++c) if (c != j) e -= w[cand * WC + c] * w[i * WC + c];\n"
        "            w[i * WC + j] = e;\n            n2 += e * e;\n          }\n"
        "          if (n2 > (T)0.25) {\n"
        "            const T inv = (T)1 / sqrt(n2);\n"
        "            for (long long i = 0; i < RR; ++i) w[i * WC + j] *= inv;\n"
        "            ++cand;\n            break;\n          }\n        }\n      }\n    }\n"
        "    __syncthreads();\n"
        "    if (!finite)\n"
        "      for (long long j = threadIdx.x; j < HI - LO; j += blockDim.x) sout[bm * (HI - LO) + j] = (T)NAN;\n"
        + outputs
        + "    __syncthreads();\n  }\n}\n"
    )
    return recs + launch("op", body, B * blk, blk, args, "svd")
