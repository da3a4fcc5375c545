"""CUDA kernels for ``tridiagonal_solve`` and ``householder_product`` (dispatched from
``host_ops.render`` after ``special_complex``), float32, float64, complex64 and complex128, batched
over leading dimensions, written with ``linalg_ops``' scalar helpers (one source for real and
complex matrices).

- ``tridiagonal_solve(dl, d, du, b)``: LAPACK's ``gtsv`` (what the CPU impl runs), Gaussian
  elimination with partial pivoting, in two launches. The first, one thread per system, runs the
  elimination on the three diagonals (``dgtsv``: rows swapped where ``|d_k| < |dl_k|``; complex
  systems as ``zgtsv``: ``|re| + |im|``, and no elimination step where ``dl_k`` is zero) and keeps
  the factors (diagonal, first and second superdiagonals, multipliers, which rows were swapped) in
  scratch buffers laid out ``[row, system]`` so a warp's loads coalesce; a zero pivot marks the
  system singular. The second, one thread per right-hand side (a column of ``b``), applies the same
  row operations to it and back-substitutes: the same arithmetic as ``gtsv``, so results agree
  with LAPACK's to rounding. A singular system gives NaN (all of its columns), as the CPU impl; a
  1x1 system is ``b / d`` with no check, as the CPU impl too.
- ``householder_product(a, taus)``: LAPACK's ``orgqr``/``ungqr`` unblocked (``org2r``/``ung2r``):
  ``Q = H_1 ... H_k`` with ``H_j = I - tau_j v_j v_j^H`` (``v_j``: column j of ``a`` below the
  diagonal, an implicit 1 on it), applied to the first n columns of the identity from the last
  reflector on; one thread per column of Q, which only the reflectors ``j <= c`` touch (as
  ``ung2r`` applies ``H_j`` to the columns right of j).

These are sequential in the rows (O(m) dependent steps per system or column): meant for the batched
small and medium systems of training programs, not a large single system (cuSPARSE's ``gtsv2`` and
cuSOLVER's ``orgqr`` would be faster there). Checked on the CUDA emulator and compiled by nvcc, not
run on a GPU.
"""

from __future__ import annotations

import math

import numpy as np

from fjax.backends.cuda.kernel_util import _block
from fjax.backends.cuda.linalg_ops import _check, _head
from fjax.backends.cuda.records import Alloc

NAMES = frozenset({"tridiagonal_solve", "householder_product"})


def _stride_loop(count: str, block: int) -> str:
    return (
        f"  for (long long t = (long long)blockIdx.x * {block} + threadIdx.x; t < {count};"
        f" t += (long long){block} * gridDim.x) {{\n"
    )


def render(
    name: str, params: dict, in_avals: list, out_avals: list, ins: list, outs: list, launch, alloc
) -> list | None:  # noqa: ANN001
    """Plan records for ``tridiagonal_solve`` / ``householder_product``, or None for another
    primitive."""
    if name not in NAMES:
        return None
    dt = np.dtype(out_avals[0].dtype)
    hdr = _check(name, dt)
    if any(np.dtype(a.dtype) != dt for a in in_avals):
        raise NotImplementedError(f"CUDA backend: {name} with mixed dtypes")
    if name == "tridiagonal_solve":
        return alloc(0) + _tridiagonal(hdr, dt, out_avals[0].shape, ins, outs, launch)
    return alloc(0) + _householder(hdr, dt, in_avals, ins, outs, launch)


def _tridiagonal(hdr: str, dt: np.dtype, shape: tuple, ins: list, outs: list, launch) -> list:  # noqa: ANN001
    m, n = shape[-2:]
    B = math.prod(shape[:-2])
    if B * m * n == 0:
        return []
    cplx = "true" if dt.kind == "c" else "false"
    o = outs[0]
    names = {k: f"{o}_gt{k}" for k in ("D", "U", "U2", "F", "P", "info")}
    recs = [Alloc(names[k], (m, B), dt) for k in ("D", "U", "U2", "F")]
    recs += [Alloc(names["P"], (m, B), np.dtype(np.uint8)), Alloc(names["info"], (B,), np.dtype(np.int32))]
    blk = _block(B)
    factor = (
        f"// tridiagonal_solve: gtsv's elimination (partial pivoting) of {B} systems of size {m}\n"
        + hdr
        + _head(
            blk,
            "const T* __restrict__ dl, const T* __restrict__ d, const T* __restrict__ du, T* __restrict__ D, "
            "T* __restrict__ U, T* __restrict__ U2, T* __restrict__ F, unsigned char* __restrict__ P, "
            "int* __restrict__ info",
            dt,
        )
        + f"  const long long M = {m}, NB = {B};\n  const bool cplx = {cplx};\n"
        + _stride_loop("NB", blk)
        + "    const long long o = t * M;\n"
        "    int bad = 0;\n"
        "    T dk = d[o], uk = M > 1 ? du[o] : (T)0;\n"
        "    for (long long k = 0; k + 1 < M; ++k) {\n"
        "      const T l = dl[o + k + 1];  // LAPACK's dl(k): the subdiagonal entry below d(k)\n"
        "      T dk1 = d[o + k + 1], uk1 = k + 2 < M ? du[o + k + 1] : (T)0;\n"
        "      const long long s = k * NB + t;\n"
        "      if (cplx && l == (T)0) {  // zgtsv: nothing to eliminate\n"
        "        if (dk == (T)0) { bad = 1; break; }\n"
        "        D[s] = dk; U[s] = uk; U2[s] = (T)0; F[s] = (T)0; P[s] = 2;\n"
        "      } else if (fjl_abs1(dk) >= fjl_abs1(l)) {  // no interchange\n"
        "        if (dk == (T)0) { bad = 1; break; }\n"
        "        const T f = l / dk;\n"
        "        dk1 -= f * uk;\n"
        "        D[s] = dk; U[s] = uk; U2[s] = (T)0; F[s] = f; P[s] = 0;\n"
        "      } else {  // rows k and k + 1 interchanged\n"
        "        const T f = dk / l;\n"
        "        D[s] = l; U[s] = dk1; F[s] = f; P[s] = 1;\n"
        "        dk1 = uk - f * dk1;\n"
        "        U2[s] = uk1;\n"
        "        uk1 = -(f * uk1);\n"
        "      }\n"
        "      dk = dk1; uk = uk1;\n"
        "    }\n"
        "    D[(M - 1) * NB + t] = dk;\n"
        "    // gtsv: a zero last pivot is singular too (a 1x1 system: the CPU divides, unchecked)\n"
        "    if (M > 1 && dk == (T)0) bad = 1;\n"
        "    info[t] = bad;\n  }\n}\n"
    )
    blk2 = _block(B * n)
    solve = (
        f"// tridiagonal_solve: gtsv's row operations and back substitution, {B} x {n} right-hand sides of"
        f" size {m}\n"
        + hdr
        + _head(
            blk2,
            "const T* __restrict__ b, const T* __restrict__ D, const T* __restrict__ U, const T* __restrict__ U2, "
            "const T* __restrict__ F, const unsigned char* __restrict__ P, const int* __restrict__ info, "
            "T* __restrict__ x",
            dt,
        )
        + f"  const long long M = {m}, NB = {B}, NR = {n};\n"
        + _stride_loop("NB * NR", blk2)
        + "    const long long bt = t / NR, o = bt * M * NR + t % NR;\n"
        "    if (info[bt]) {\n"
        "      for (long long i = 0; i < M; ++i) x[o + i * NR] = (T)NAN;\n"
        "      continue;\n    }\n"
        "    T xk = b[o];\n"
        "    for (long long k = 0; k + 1 < M; ++k) {\n"
        "      const long long s = k * NB + bt;\n"
        "      T xk1 = b[o + (k + 1) * NR];\n"
        "      const unsigned char p = P[s];\n"
        "      if (p == 0) {\n"
        "        xk1 -= F[s] * xk;\n        x[o + k * NR] = xk;\n"
        "      } else if (p == 1) {\n"
        "        x[o + k * NR] = xk1;\n        xk1 = xk - F[s] * xk1;\n"
        "      } else {\n"
        "        x[o + k * NR] = xk;\n      }\n"
        "      xk = xk1;\n    }\n"
        "    T x1 = xk / D[(M - 1) * NB + bt], x2 = (T)0;\n"
        "    x[o + (M - 1) * NR] = x1;\n"
        "    if (M > 1) {\n"
        "      const long long s = (M - 2) * NB + bt;\n"
        "      x2 = x1;\n"
        "      x1 = (x[o + (M - 2) * NR] - U[s] * x2) / D[s];\n"
        "      x[o + (M - 2) * NR] = x1;\n    }\n"
        "    for (long long k = M - 3; k >= 0; --k) {\n"
        "      const long long s = k * NB + bt;\n"
        "      const T xn = (x[o + k * NR] - U[s] * x1 - U2[s] * x2) / D[s];\n"
        "      x[o + k * NR] = xn;\n      x2 = x1;\n      x1 = xn;\n    }\n  }\n}\n"
    )
    fac = (ins[0], ins[1], ins[2], names["D"], names["U"], names["U2"], names["F"], names["P"], names["info"])
    sol = (ins[3], names["D"], names["U"], names["U2"], names["F"], names["P"], names["info"], o)
    return (
        recs
        + launch("op", factor, B, blk, fac, "tridiagonal_solve (factor)")
        + launch("op", solve, B * n, blk2, sol, "tridiagonal_solve (solve)")
    )


def _householder(hdr: str, dt: np.dtype, in_avals: list, ins: list, outs: list, launch) -> list:  # noqa: ANN001
    a, taus = in_avals
    m, n = a.shape[-2:]
    k = taus.shape[-1]
    B = math.prod(a.shape[:-2])
    if B * m * n == 0:
        return []
    blk = _block(B * n)
    src = (
        f"// householder_product (orgqr/ung2r) of {B} {m}x{n} matrices, {k} reflectors: one thread per column\n"
        + hdr
        + _head(blk, "const T* __restrict__ a, const T* __restrict__ taus, T* __restrict__ q", dt)
        + f"  const long long M = {m}, N = {n}, K = {k}, NB = {B};\n"
        + _stride_loop("NB * N", blk)
        + "    const long long bt = t / N, c = t % N, o = bt * M * N;\n"
        "    for (long long i = 0; i < M; ++i) q[o + i * N + c] = i == c ? (T)1 : (T)0;\n"
        "    // H_j touches the columns c >= j only (column j of I is e_j, zero below row j - 1)\n"
        "    for (long long j = (c < K - 1 ? c : K - 1); j >= 0; --j) {\n"
        "      const T tau = taus[bt * K + j];\n"
        "      if (tau == (T)0) continue;\n"
        "      T s = q[o + j * N + c];\n"
        "      for (long long i = j + 1; i < M; ++i) s += fjl_conj(a[o + i * N + j]) * q[o + i * N + c];\n"
        "      s *= tau;\n"
        "      q[o + j * N + c] -= s;\n"
        "      for (long long i = j + 1; i < M; ++i) q[o + i * N + c] -= s * a[o + i * N + j];\n"
        "    }\n  }\n}\n"
    )
    return launch("op", src, B * n, blk, (ins[0], ins[1], outs[0]), "householder_product")
