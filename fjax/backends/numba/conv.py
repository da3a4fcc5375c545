"""``conv_general_dilated`` for the numba backend: an im2col numba kernel and BLAS GEMMs.

Every convolution the impl handles is put in one canonical form, decided statically from the
equation (shapes, dimension numbers, strides, padding, dilations, groups):

- the input is read in place (no transpose, no padded or dilated copy) through its element
  strides; per spatial dim a small table ``t[o, k]`` holds the element offset of the input read
  by output position ``o`` and kernel tap ``k``, or -1 where the tap falls into padding or a hole
  of ``lhs_dilation``;
- a patch matrix is written in blocks of rows (~512 KiB, so a block stays in cache and the matrix
  is never materialized whole), each block followed by its GEMM (``np.dot`` on numpy's OpenBLAS).
  Its form is chosen so that the innermost copy is a run of elements adjacent in the input
  (``_im2col``: ``uint64`` indices, so numba emits vector copies; a run of taps along the last
  spatial dim that are adjacent in memory is copied as one):

  - **rows** (the input's feature dim is stored after a spatial dim, e.g. NHWC): rows
    ``(n, out spatial)``, columns ``(taps, channel)`` -- channel runs; the GEMM
    ``P @ W[(taps, c), f]`` writes the rows of ``(n, out spatial, f)``;
  - **transposed** (the input's batch dim is its last axis: the kernel gradient of an NHWC conv,
    whose "batch" is the forward's input channels and whose "channels" the forward's batch): rows
    ``(c, taps)``, columns ``(out spatial, n)`` -- runs along n; the GEMM ``P^T @ W[(c, taps), f]``
    is summed over the blocks into ``(out spatial, n, f)``, which for a kernel gradient (HWIO) is
    already the output's layout; the cotangent is ``W`` as a free reshape. (In the rows form the
    same gradient gathered single elements at a stride: ~3x slower.)
  - **channel-major** (other layouts, e.g. NCHW): rows ``(n, out spatial)``, columns
    ``(channel, taps)`` (``_im2col_cm``).

  A transpose (a view) puts the result in the output's dimension order.
- a convolution of at least ``_PARALLEL_MACS`` multiply-adds runs its blocks on numba's thread
  pool (``_blocks_par``: ``prange`` over the blocks, a patch buffer per thread, scipy's BLAS ``gemm``
  as an external symbol; the transposed form sums into one accumulator per thread), with OpenBLAS on
  one thread during the call. These are the threads the program's parallel loop nests run on:
  they are still spinning (OpenMP's wait policy) when the conv starts, so a second team of threads
  (OpenBLAS's own, or Python threads, both measured) only fought them for the cores. While the
  load average says the cores are busy (``fjax._blas.machine_busy``), or for a small convolution,
  the calling thread does the blocks in order. (On 2 cores, OpenBLAS's own 2-thread team on these
  block GEMMs was ~2x *slower* than one thread: 910x144 @ 144x32 is too small to share.) The
  GEMM is scipy's ``gemm`` called by symbol (``_register_gemm``; beta = 1 accumulates the
  transposed form in place): numba's ``np.dot`` copied the transposed operand (~25% slower) and
  took ~4 s more to compile. A cold compile of ``_block`` + ``_blocks_par`` still takes ~4.5 s per
  dtype, once: numba's disk cache keeps them (a first grad call with every cache empty: 6.5 s,
  against 1.35 s before; with numba's cache warm and fjax's kernel cache empty: 0.85 s, was 1.07).

Feature groups and batch groups are the ``group`` axis of the GEMM (a group reads a channel slice,
resp. a batch slice, of the input). Up to three spatial dims (missing ones are size 1). The patch
block buffers are reused across calls (a small pool per equation; they never escape the call).
``build_conv`` installs the kernel overloads the call uses (``warm_load.ensure_compiled``: from
numba's disk cache without its first-use registry refresh when it is there) and the call passes
exactly those types (the input read-only, whether or not the caller's array is).

A direct loop-nest form (patches read in place, out-feature loop innermost) was measured against
im2col + GEMM on the bench_conv layers and their gradients, on grouped, NCHW and 5x5 convolutions:
im2col + GEMM was faster on all but a depthwise input gradient (by ~25%), so only this form is kept.

Falls back to the impl (returns None) for dtypes other than float32/float64, more than three
spatial dims, and fewer than ``_MIN_COLS`` contraction columns (in-features per group x kernel taps).
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable

import numba
import numpy as np
from numba import get_thread_id, njit, prange, types

from fjax import _blas
from fjax.backends.kernel_ir import Step
from fjax.backends.numba.warm_load import array_type, ensure_compiled, readonly

__all__ = ["build_conv"]

# patch rows are built and multiplied in blocks of about this many bytes (they stay in L2), but at
# least this many rows (a GEMM with few rows, e.g. a kernel gradient's, is better done in one call)
_BLOCK_BYTES = 1 << 19
_MIN_BLOCK_ROWS = 256
# with fewer patch columns (e.g. a 3x3 conv of a 1-channel image) the GEMM is too thin to beat the
# impl's einsum on a strided window view (measured 0.7-0.9x on 128x28x28x1 * 3x3x1x16)
_MIN_COLS = 16
# blocks run on numba's thread pool from this many multiply-adds (below, the launch costs more
# than it saves), in blocks of at least _MIN_PAR_ROWS rows, about _BLOCKS_PER_WORKER per thread
_PARALLEL_MACS = 1 << 22
_MIN_PAR_ROWS = 64
_BLOCKS_PER_WORKER = 4

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


@njit(cache=True, nogil=True)
def _im2col(x, P, nrows, r0, base0, ustride, run, rstride, T0, T1, T2, cont):  # pragma: no cover - numba
    """Rows ``r0 .. r0 + nrows`` of a patch matrix (rows and transposed forms, module doc) into the
    flat ``P``. Row ``r`` is ``(u, q0, q1, q2)`` (q2 fastest); its columns are ``(j0, j1, j2, run)``:
    ``run`` elements at stride ``rstride`` from ``x[base0 + u * ustride + T0[q0, j0] + T1[q1, j1] +
    T2[q2, j2]]``, zeros where a table entry is -1. ``cont[q2]``: the taps ``T2[q2, :]`` are all valid
    and adjacent (``rstride == 1``, each ``run`` after the previous), copied as one run."""
    Q0, J0 = T0.shape
    Q1, J1 = T1.shape
    Q2, J2 = T2.shape
    L = run * J2
    Kc = L * J0 * J1
    for i in range(nrows):
        r = r0 + i
        q2 = r % Q2
        q = r // Q2
        q1 = q % Q1
        q //= Q1
        q0 = q % Q0
        u = q // Q0
        base = base0 + u * ustride
        row = i * Kc
        whole = cont[q2] != 0
        for j0 in range(J0):
            a0 = T0[q0, j0]
            for j1 in range(J1):
                a1 = T1[q1, j1]
                if whole and a0 >= 0 and a1 >= 0:
                    b = base + a0 + a1 + T2[q2, 0]
                    for c in range(L):
                        P[np.uint64(row + c)] = x[np.uint64(b + c)]
                    row += L
                    continue
                for j2 in range(J2):
                    a2 = T2[q2, j2]
                    if a0 < 0 or a1 < 0 or a2 < 0:
                        for c in range(run):
                            P[np.uint64(row + c)] = 0
                    elif rstride == 1:
                        b = base + a0 + a1 + a2
                        for c in range(run):
                            P[np.uint64(row + c)] = x[np.uint64(b + c)]
                    else:
                        b = base + a0 + a1 + a2
                        for c in range(run):
                            P[np.uint64(row + c)] = x[np.uint64(b + c * rstride)]
                    row += run


@njit(cache=True, nogil=True)
def _im2col_cm(x, P, nrows, r0, base0, c_per, sn, sc, t0, t1, t2):  # pragma: no cover - numba
    """Rows ``r0 .. r0 + nrows`` of one group's channel-major patch matrix (rows ``(n, out spatial)``,
    columns ``(channel, taps)``) into the flat ``P``."""
    O0, K0 = t0.shape
    O1, K1 = t1.shape
    O2, K2 = t2.shape
    Kc = c_per * K0 * K1 * K2
    for i in range(nrows):
        r = r0 + i
        o2 = r % O2
        q = r // O2
        o1 = q % O1
        q //= O1
        o0 = q % O0
        n = q // O0
        base = base0 + n * sn
        row = i * Kc
        for c in range(c_per):
            bc = base + c * sc
            for k0 in range(K0):
                a0 = t0[o0, k0]
                for k1 in range(K1):
                    a1 = t1[o1, k1]
                    for k2 in range(K2):
                        a2 = t2[o2, k2]
                        P[np.uint64(row)] = 0 if (a0 < 0 or a1 < 0 or a2 < 0) else x[np.uint64(bc + a0 + a1 + a2)]
                        row += 1


_sgemm = types.ExternalFunction("fjax_conv_sgemm", types.void(*([types.voidptr] * 13)))
_dgemm = types.ExternalFunction("fjax_conv_dgemm", types.void(*([types.voidptr] * 13)))
_gemm_registered: list = []


def _register_gemm() -> None:
    """scipy's BLAS ``sgemm``/``dgemm`` as the C symbols ``_block`` calls (by name: cacheable)."""
    if not _gemm_registered:
        from llvmlite import binding as llvm  # noqa: PLC0415
        from numba.extending import get_cython_function_address  # noqa: PLC0415

        for p in "sd":
            llvm.add_symbol(f"fjax_conv_{p}gemm", get_cython_function_address("scipy.linalg.cython_blas", p + "gemm"))
        _gemm_registered.append(True)


@njit(cache=True, nogil=True)
def _block(x, wm, out, acc, bufs, blocks, bases, ustride, run, rstride, T0, T1, T2, cont, cm, b, t):  # pragma: no cover
    """Block ``b`` on thread ``t`` (``_blocks_par``): its patches into ``bufs[t]`` (``_im2col``, or
    ``_im2col_cm`` with ``run, ustride, rstride`` = ``c_per, sn, sc`` when ``cm``), then one BLAS
    gemm (column-major view of the C arrays): ``out``'s rows of the block (rows and channel-major
    forms), or added into ``acc[t]`` (transposed form: ``acc`` not empty; beta = 1)."""
    transposed = acc.shape[0] > 0
    row_len = out.shape[1] if transposed else wm.shape[1]
    Og = wm.shape[2]
    g, r0, rows = blocks[b, 0], blocks[b, 1], blocks[b, 2]
    P = bufs[t]
    if cm:
        _im2col_cm(x, P, rows, r0, bases[g], run, ustride, rstride, T0, T1, T2)
    else:
        _im2col(x, P, rows, r0, bases[g], ustride, run, rstride, T0, T1, T2, cont)
    ints = np.empty(6, np.int32)
    fl = np.ones(2, x.dtype)
    ch = np.full(2, 78, np.uint8)  # 'N'
    if transposed:  # acc^T (Og x Mq) += W_blk^T (Og x rows) @ P (rows x Mq)
        ch[1] = 84  # 'T'
        ints[0], ints[1], ints[2], ints[3], ints[4], ints[5] = Og, row_len, rows, Og, row_len, Og
        a = wm[g, r0:]
        c = acc[t, g]
    else:  # out_blk^T (Og x rows) = W^T (Og x Kc) @ P^T (Kc x rows)
        fl[1] = 0.0
        ints[0], ints[1], ints[2], ints[3], ints[4], ints[5] = Og, rows, row_len, Og, row_len, Og
        a = wm[g]
        c = out[g, r0:]
    ta, tb, m, n, k, lda, ldb, ldc = ch[0:1], ch[1:2], ints[0:1], ints[1:2], ints[2:3], ints[3:4], ints[4:5], ints[5:6]
    if x.itemsize == 4:
        _sgemm(ta.ctypes, tb.ctypes, m.ctypes, n.ctypes, k.ctypes, fl[0:1].ctypes, a.ctypes, lda.ctypes, P.ctypes,
               ldb.ctypes, fl[1:2].ctypes, c.ctypes, ldc.ctypes)  # fmt: skip
    else:
        _dgemm(ta.ctypes, tb.ctypes, m.ctypes, n.ctypes, k.ctypes, fl[0:1].ctypes, a.ctypes, lda.ctypes, P.ctypes,
               ldb.ctypes, fl[1:2].ctypes, c.ctypes, ldc.ctypes)  # fmt: skip


@njit(cache=True, nogil=True, parallel=True)
def _blocks_par(x, wm, out, acc, bufs, blocks, bases, ustride, run, rstride, T0, T1, T2, cont, cm):  # pragma: no cover
    """Every block on numba's thread pool (``_block``; a patch buffer and accumulator per thread)."""
    for b in prange(blocks.shape[0]):
        _block(x, wm, out, acc, bufs, blocks, bases, ustride, run, rstride, T0, T1, T2, cont, cm, b, get_thread_id())


def _tap_table(n: int, k: int, o: int, stride: int, pad_lo: int, ldil: int, rdil: int, estride: int) -> np.ndarray:
    """``t[o, k]``: element offset of the input read by output ``o`` and tap ``k``, -1 in padding/holes."""
    pos = np.arange(o)[:, None] * stride + np.arange(k)[None, :] * rdil - pad_lo
    ok = (pos >= 0) & (pos <= (n - 1) * ldil) & (pos % ldil == 0)
    return np.where(ok, (pos // ldil) * estride, -1).astype(np.int64)


def _elem_strides(shape: tuple) -> list[int]:
    st, acc = [0] * len(shape), 1
    for i in reversed(range(len(shape))):
        st[i] = acc
        acc *= shape[i]
    return st


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


def _threads() -> int:
    """numba's pool size (``get_thread_id`` is below it), at most the cores."""
    return max(1, min(numba.config.NUMBA_NUM_THREADS, os.cpu_count() or 1))


def build_conv(step: Step) -> Callable[..., Any] | None:
    """im2col + GEMM implementation of a ``conv_general_dilated`` equation, or None (use the impl)."""
    p = step.params
    la, ra = step.in_avals[0], step.in_avals[1]
    oa = step.out_avals[0]
    dt = np.dtype(oa.dtype)
    if dt not in _FLOATS:
        return None
    nsp = len(la.shape) - 2
    if nsp > 3:
        return None
    lspec, rspec, ospec = (tuple(s) for s in p["dimension_numbers"])
    G, B = int(p["feature_group_count"]), int(p["batch_group_count"])
    N, C = la.shape[lspec[0]], la.shape[lspec[1]]
    O, I = ra.shape[rspec[0]], ra.shape[rspec[1]]
    in_sp = [la.shape[i] for i in lspec[2:]]
    k_sp = [ra.shape[i] for i in rspec[2:]]
    out_sp = [oa.shape[i] for i in ospec[2:]]
    out_shape = tuple(oa.shape)
    if math.prod(out_shape) == 0 or I * math.prod(k_sp) == 0:
        return lambda lhs, rhs: np.zeros(out_shape, dt)

    GG = G if G > 1 else B
    if B > 1:
        n_per, n_goff, c_per, c_goff = N // B, N // B, C, 0
    else:
        n_per, n_goff, c_per, c_goff = N, 0, C // G, C // G
    Og = O // GG
    est = _elem_strides(la.shape)
    sn, sc = int(est[lspec[0]]), int(est[lspec[1]])
    tables = [
        _tap_table(n, k, o, s, lo, ld, rd, est[ax])
        for n, k, o, s, (lo, _), ld, rd, ax in zip(
            in_sp, k_sp, out_sp, p["window_strides"], p["padding"], p["lhs_dilation"], p["rhs_dilation"], lspec[2:]
        )
    ]
    Kc = c_per * math.prod(k_sp)  # the GEMM's contraction length
    if Kc < _MIN_COLS:
        return None
    Opos = math.prod(out_sp)
    if nsp > 0 and lspec[0] == nsp + 1 and n_per > 1:
        form = "transposed"
    elif nsp > 0 and lspec[1] > min(lspec[2:]):
        form = "rows"
    else:
        form = "cm"
    bases = [int(g * (n_goff * sn + c_goff * sc)) for g in range(GG)]
    if form == "cm":
        while len(tables) < 3:
            tables.append(np.zeros((1, 1), np.int64))
        kargs = tuple(_frozen(t) for t in tables)
        rows_total, row_len = n_per * Opos, Kc
        col_axes = [rspec[1]] + list(rspec[2:])
    else:
        if form == "transposed":  # rows (c, taps): tables t[o, k] transposed; runs along n
            tables = [t.T for t in tables]
            ustride, run, rstride = sc, n_per, sn
            rows_total, row_len = Kc, n_per * Opos
            col_axes = [rspec[1]] + list(rspec[2:])
        else:  # rows (n, out spatial): runs along the channel
            ustride, run, rstride = sn, c_per, sc
            rows_total, row_len = n_per * Opos, Kc
            col_axes = list(rspec[2:]) + [rspec[1]]
        while len(tables) < 3:  # missing dims first, so the last table is the innermost spatial dim
            tables.insert(0, np.zeros((1, 1), np.int64))
        T2 = tables[2]
        cont = np.array(
            [rstride == 1 and bool((T2[q] >= 0).all()) and bool((np.diff(T2[q]) == run).all()) for q in range(len(T2))],
            np.uint8,
        )
        kargs = (int(ustride), int(run), int(rstride), *(_frozen(t) for t in tables), _frozen(cont))
    # the kernel as (GG, contraction, Og), contraction in the patch matrix's order
    w_perm = tuple(col_axes) + (rspec[0],)
    # logical result order -> the output's dimension order (logical dims: 0 = N, 1 = O, 2.. = spatial)
    ours = list(range(2, 2 + nsp)) + [0, 1] if form == "transposed" else [0] + list(range(2, 2 + nsp)) + [1]
    logical_at = [0] * (nsp + 2)
    for k, pos in enumerate(ospec):
        logical_at[pos] = k
    out_perm = tuple(ours.index(logical_at[q]) for q in range(nsp + 2))
    res_shape = (tuple(out_sp) + (n_per, O)) if form == "transposed" else ((n_per,) + tuple(out_sp) + (O,))
    macs = GG * rows_total * row_len * Og

    # blocks of rows whose patches stay in cache, each followed by its GEMM
    blk = min(rows_total, max(_MIN_BLOCK_ROWS, _BLOCK_BYTES // (row_len * dt.itemsize)))
    nwork = _threads() if macs >= _PARALLEL_MACS else 1
    if nwork > 1:
        per = -(-rows_total * GG // (nwork * _BLOCKS_PER_WORKER))
        blk = max(1, min(blk, max(_MIN_PAR_ROWS, per)))
    blocks = [(g, r0, min(blk, rows_total - r0)) for g in range(GG) for r0 in range(0, rows_total, blk)]
    if len(blocks) < 2:
        nwork = 1
    pools: dict[bool, list] = {False: [], True: []}  # patch buffers, serial / one per pool thread

    # the overloads conv calls (the int arguments are Python ints: int64)
    ro = lambda nd, t=dt: array_type(t, nd, readonly=True)  # noqa: E731
    tab, flags = ro(2, np.int64), ro(1, np.uint8)
    cm = form == "cm"
    if cm:
        kern = _im2col_cm
        ensure_compiled(kern, (ro(1), array_type(dt, 1), *[types.int64] * 6, tab, tab, tab))
        kargs = (int(c_per), sn, sc, *kargs)
        # _blocks_par's arguments for the channel-major form: (ustride, run, rstride) = (sn, c_per, sc)
        pargs = (sn, int(c_per), sc, *kargs[3:], _frozen(np.zeros(1, np.uint8)), True)
    else:
        kern = _im2col
        ensure_compiled(kern, (ro(1), array_type(dt, 1), *[types.int64] * 6, tab, tab, tab, flags))
        pargs = (*kargs, False)
    transposed = form == "transposed"
    if nwork > 1:
        psig = (ro(1), ro(3), array_type(dt, 3), array_type(dt, 4), array_type(dt, 2), ro(2, np.int64), ro(1, np.int64))
        psig += (*[types.int64] * 3, tab, tab, tab, flags, types.boolean)
        _register_gemm()
        ensure_compiled(_block, psig + (types.int64, types.int64))
        ensure_compiled(_blocks_par, psig)
        _blas.include_scipy()  # numba's np.dot calls scipy's OpenBLAS: one thread, as numpy's (_blas.use)
        blocks_arr = _frozen(np.array(blocks, np.int64).reshape(-1, 3))
        bases_arr = _frozen(np.array(bases, np.int64))
        no_acc = np.zeros((0, 1, 1, 1), dt)
    nthreads = _threads()

    def conv(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        x = readonly(np.ascontiguousarray(lhs, dtype=dt).reshape(-1))
        wm = np.transpose(np.asarray(rhs, dtype=dt), w_perm).reshape(Kc, GG, Og)
        wm = readonly(np.ascontiguousarray(wm.reshape(1, Kc, Og) if GG == 1 else wm.transpose(1, 0, 2)))
        out = (np.zeros if transposed else np.empty)((GG, row_len if transposed else rows_total, Og), dt)
        par = nwork > 1 and not _blas.machine_busy()
        try:
            bufs = pools[par].pop()
        except IndexError:
            bufs = np.empty((nthreads, blk * row_len) if par else blk * row_len, dt)
        prev = _blas._current
        _blas.use(1)  # each block's GEMM on one thread (OpenBLAS's team on these was ~2x slower)
        try:
            if par:
                acc = np.zeros((nthreads,) + out.shape, dt) if transposed else no_acc
                _blocks_par(x, wm, out, acc, bufs, blocks_arr, bases_arr, *pargs)
                if transposed:
                    out = acc.sum(axis=0)
            else:
                for g, r0, rows in blocks:
                    kern(x, bufs, rows, r0, bases[g], *kargs)
                    Pm = bufs[: rows * row_len].reshape(rows, row_len)
                    if transposed:
                        out[g] += np.dot(Pm.T, wm[g, r0 : r0 + rows])
                    else:
                        np.dot(Pm, wm[g], out=out[g, r0 : r0 + rows])
        finally:
            _blas.use(prev)
        pools[par].append(bufs)
        res = out if GG == 1 else out.transpose(1, 0, 2)
        return np.transpose(res.reshape(res_shape), out_perm)

    conv.form, conv.workers, conv.blocks = form, nwork, len(blocks)  # what was chosen (for tests)
    return conv
