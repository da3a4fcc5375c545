"""``conv_general_dilated`` for the numba backend: an im2col numba kernel and BLAS GEMMs.

Every convolution the impl handles is put in one canonical form, decided statically from the
equation (shapes, dimension numbers, strides, padding, dilations, groups):

- the input is read in place (no transpose, no padded or dilated copy) through its element
  strides; per spatial dim a small table ``t[o, k]`` holds the element offset of the input read
  by output position ``o`` and kernel tap ``k``, or -1 where the tap falls into padding or a hole
  of ``lhs_dilation``;
- ``im2col`` writes the patch matrix ``P[group, (n, out spatial), cols]``; the column order is
  ``(spatial taps, channel)`` when the input's feature dim is stored after its spatial dims
  (NHWC: contiguous channel runs) and ``(channel, spatial taps)`` otherwise (NCHW, and the kernel
  gradient of an NHWC conv, whose "feature" dim is the batch: there the cotangent is then the
  GEMM's right operand as a free reshape);
- the patch rows are built and multiplied (``np.dot`` on OpenBLAS, into the output rows) in
  blocks of ~512 KiB, so the patch matrix stays in cache and is never materialized whole, against
  the kernel reshaped to ``(group, cols, out features per group)``; a transpose (a view) puts the
  result in the output's dimension order.

Feature groups and batch groups are the ``group`` axis of the GEMM (a group reads a channel slice,
resp. a batch slice, of the input). Up to three spatial dims (missing ones are size 1). The patch
block buffer is reused across calls (a small pool per equation; it never escapes the call).
``build_conv`` installs the ``_im2col`` overload the call uses (``warm_load.ensure_compiled``: from
numba's disk cache without its first-use registry refresh when it is there) and the call passes
exactly those types (the input read-only, whether or not the caller's array is).

A direct loop-nest form (patches read in place, out-feature loop innermost) was measured against
this on the bench_conv layers and their gradients, on grouped, NCHW and 5x5 convolutions: im2col +
GEMM was faster on all but a depthwise input gradient (by ~25%), so only this form is kept.

Falls back to the impl (returns None) for dtypes other than float32/float64, more than three
spatial dims, and fewer than ``_MIN_COLS`` patch columns (in-features per group x kernel taps).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
from numba import njit, types

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

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


@njit(cache=True, nogil=True)
def _im2col(x, P, nrows, r0, base0, c_per, sn, sc, t0, t1, t2, chan_major):  # pragma: no cover - numba
    """Rows ``r0 .. r0 + nrows`` of one group's patch matrix (see the module doc) into the flat ``P``."""
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
        if chan_major:
            for c in range(c_per):
                bc = base + c * sc
                for k0 in range(K0):
                    a0 = t0[o0, k0]
                    for k1 in range(K1):
                        a1 = t1[o1, k1]
                        for k2 in range(K2):
                            a2 = t2[o2, k2]
                            P[row] = 0 if (a0 < 0 or a1 < 0 or a2 < 0) else x[bc + a0 + a1 + a2]
                            row += 1
        else:
            for k0 in range(K0):
                a0 = t0[o0, k0]
                for k1 in range(K1):
                    a1 = t1[o1, k1]
                    for k2 in range(K2):
                        a2 = t2[o2, k2]
                        if a0 < 0 or a1 < 0 or a2 < 0:
                            for c in range(c_per):
                                P[row + c] = 0
                        else:
                            b = base + a0 + a1 + a2
                            for c in range(c_per):
                                P[row + c] = x[b + c * sc]
                        row += c_per


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
    # logical (N, S..., O) -> the output's dimension order
    ours = [0] + list(range(2, 2 + nsp)) + [1]
    logical_at = [0] * (nsp + 2)
    for k, pos in enumerate(ospec):
        logical_at[pos] = k
    out_perm = tuple(ours.index(logical_at[q]) for q in range(nsp + 2))
    if math.prod(out_shape) == 0 or I * math.prod(k_sp) == 0:
        return lambda lhs, rhs: np.zeros(out_shape, dt)

    GG = G if G > 1 else B
    if B > 1:
        n_per, n_goff, c_per, c_goff = N // B, N // B, C, 0
    else:
        n_per, n_goff, c_per, c_goff = N, 0, C // G, C // G
    Og = O // GG
    est = _elem_strides(la.shape)
    sn, sc = est[lspec[0]], est[lspec[1]]
    tables = [
        _tap_table(n, k, o, s, lo, ld, rd, est[ax])
        for n, k, o, s, (lo, _), ld, rd, ax in zip(
            in_sp, k_sp, out_sp, p["window_strides"], p["padding"], p["lhs_dilation"], p["rhs_dilation"], lspec[2:]
        )
    ]
    while len(tables) < 3:
        tables.append(np.zeros((1, 1), np.int64))
    for t in tables:
        t.flags.writeable = False
    t0, t1, t2 = tables
    chan_major = bool(nsp == 0 or lspec[1] < min(lspec[2:]))
    R = n_per * math.prod(out_sp)
    Kc = c_per * math.prod(k_sp)
    if Kc < _MIN_COLS:
        return None
    bases = [g * (n_goff * sn + c_goff * sc) for g in range(GG)]
    # the kernel as (GG, cols, Og), cols in the patch column order
    col_axes = [rspec[1]] + list(rspec[2:]) if chan_major else list(rspec[2:]) + [rspec[1]]
    w_perm = tuple(col_axes) + (rspec[0],)
    # im2col in blocks of rows whose patches stay in cache, each followed by its GEMM
    blk = min(R, max(_MIN_BLOCK_ROWS, _BLOCK_BYTES // (Kc * dt.itemsize)))
    pool: list[np.ndarray] = []
    # the overload conv calls (the int arguments are Python ints: int64)
    tab = array_type(np.int64, 2, readonly=True)
    sig = (array_type(dt, 1, readonly=True), array_type(dt, 1), *[types.int64] * 6, tab, tab, tab, types.boolean)
    ensure_compiled(_im2col, sig)
    bases = [int(b) for b in bases]
    c_per, sn, sc = int(c_per), int(sn), int(sc)

    def conv(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        x = readonly(np.ascontiguousarray(lhs, dtype=dt).reshape(-1))
        wm = np.transpose(np.asarray(rhs, dtype=dt), w_perm).reshape(Kc, GG, Og)
        wm = wm.reshape(1, Kc, Og) if GG == 1 else np.ascontiguousarray(wm.transpose(1, 0, 2))
        out = np.empty((GG, R, Og), dt)
        try:
            P = pool.pop()
        except IndexError:
            P = np.empty(blk * Kc, dt)
        try:
            for g in range(GG):
                for r0 in range(0, R, blk):
                    rows = min(blk, R - r0)
                    _im2col(x, P, rows, r0, bases[g], c_per, sn, sc, t0, t1, t2, chan_major)
                    np.dot(P[: rows * Kc].reshape(rows, Kc), wm[g], out=out[g, r0 : r0 + rows])
        finally:
            pool.append(P)
        res = out if GG == 1 else out.transpose(1, 0, 2)
        return np.transpose(res.reshape((n_per,) + tuple(out_sp) + (O,)), out_perm)

    return conv
