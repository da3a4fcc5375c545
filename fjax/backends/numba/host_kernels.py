"""Compiled implementations of primitives that do not fuse into loop nests (convolutions,
scatters, arg-reductions, cumulative ops, sorts): the numba backend calls these from its program
instead of the primitive's numpy ``impl``.

``HOST_KERNELS`` maps a primitive name to a builder ``(step) -> callable | None``; the callable takes
the equation's operands (numpy arrays) as positional arguments and returns what ``impl`` returns
(an array, or a list of arrays for multiple-result primitives). A builder returns None when it has
no faster form for that equation (the program then calls ``impl``).

What is here (measured against the impls side by side: ``python bench/bench_conv.py [--ops]``):

- ``conv_general_dilated``: im2col numba kernel + BLAS GEMM (``conv``).
- ``argmax`` / ``argmin`` along a non-contiguous axis: one pass over the operand viewed as (outer,
  axis, inner), NaN counting as the extreme (first NaN wins), as the impl (~7x on 1000x1000 along
  axis 0). Along the contiguous axis numpy's SIMD argmax is as fast or faster: impl.
- ``cumsum`` / ``cumprod`` / ``cummax`` / ``cummin``: the same sequential recurrence as numpy's
  ``accumulate`` (bit-identical results, NaN and signed-zero behaviour included), the inner axis
  contiguous (~9x along a leading axis, 1.2-1.3x otherwise); a large cumsum along the contiguous
  axis is no faster than numpy's: impl. ``cumlogsumexp`` stays on the impl.
- ``scatter-add`` (``x.at[i].add(v)``, the transposes of gathers such as the cross-entropy and
  embedding gradients): one loop over the index rows adding whole windows at precomputed flat
  offsets, instead of materializing every element's flat index for ``np.add.at`` (5-10x; 30 us ->
  4 us for a batch-256 cross-entropy gradient). Batching dims (``operand_batching_dims``): impl.
- ``dynamic_update_slice``: a copy and a slice assignment with the starts clamped in Python
  integers (the impl clamps each start with ``np.clip``: ~10 us against ~2 us).
- ``sort`` of real/integer/bool keys, one key: numpy's stable ``sort`` (one operand) or ``argsort``
  + ``take_along_axis`` along the last axis (NaNs last, ties in input order: the impl's ``lexsort``
  order) instead of a ``lexsort`` over NaN-masked keys (1.0-4x). Complex keys, several keys, and
  several operands along a leading axis: impl.

Kernels are module-level ``njit(cache=True, nogil=True)`` functions. A builder installs the overload
its kernel will be called with (``warm_load.ensure_compiled``: compiled once per dtype/rank, 0.2-1 s
each cold, then loaded from numba's disk cache in a few ms without numba's ~0.3 s first-use registry
refresh), and its kernel passes arrays of exactly those types: inputs read-only
(``warm_load.readonly``), outputs freshly allocated (writable), all C-contiguous.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
from numba import njit, types

from fjax.backends.kernel_ir import Step
from fjax.backends.numba.warm_load import array_type, ensure_compiled, readonly

HOST_KERNELS: dict[str, Callable[[Step], Any]] = {}


def host_kernel(step: Step) -> Callable | None:
    """The compiled implementation of the host step ``step``, or None to call the primitive's ``impl``."""
    build = HOST_KERNELS.get(step.op)
    return None if build is None else build(step)


def _register(*names: str) -> Callable:
    def deco(build: Callable) -> Callable:
        for n in names:
            HOST_KERNELS[n] = build
        return build

    return deco


def _split3(shape: tuple, axis: int) -> tuple[int, int, int]:
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])


# ---------------------------------------------------------------------------------------------
# argmax / argmin


@njit(cache=True, nogil=True)
def _argext(x, out, is_max):  # pragma: no cover - numba
    """``out[i, k]`` = index along axis 1 of the max (min) of ``x[i, :, k]``; the first NaN wins."""
    n0, n, n2 = x.shape
    best = np.empty(n2, x.dtype)
    for i in range(n0):
        for k in range(n2):
            best[k] = x[i, 0, k]
            out[i, k] = 0
        for j in range(1, n):
            for k in range(n2):
                v = x[i, j, k]
                b = best[k]
                if b == b and ((v > b if is_max else v < b) or v != v):
                    best[k] = v
                    out[i, k] = j


# ---------------------------------------------------------------------------------------------
# dynamic_update_slice: the static shapes let the clamping be plain integer arithmetic (the impl's
# np.clip per start index cost ~5 us each; a diffrax solve saves its state with two of these)


@_register("dynamic_update_slice")
def _build_dus(step: Step) -> Callable | None:
    dshape, ushape = step.in_avals[0].shape, step.in_avals[1].shape
    hi = [d - u for d, u in zip(dshape, ushape)]

    def dus(x: np.ndarray, upd: np.ndarray, *idxs: np.ndarray) -> np.ndarray:
        out = np.array(x, copy=True)
        out[tuple(slice(s, s + u) for s, u in zip((min(max(int(i), 0), h) for i, h in zip(idxs, hi)), ushape))] = upd
        return out

    return dus


@_register("argmax", "argmin")
def _build_argext(step: Step) -> Callable | None:
    aval = step.in_avals[0]
    if np.dtype(aval.dtype).kind not in "iuf" or aval.dtype == np.float16:
        return None
    (axis,) = step.params["axes"]
    n0, n, n2 = _split3(aval.shape, axis)
    if n2 == 1:
        return None  # along the contiguous axis numpy's SIMD argmax is as fast (small) or ~4x faster
    out_shape = step.out_avals[0].shape
    idt = np.dtype(step.params["index_dtype"])
    is_max = step.op == "argmax"
    dt = np.dtype(aval.dtype)
    if n0 * n2:
        ensure_compiled(_argext, (array_type(dt, 3, readonly=True), array_type(idt, 2), types.boolean))

    def run(x: np.ndarray) -> np.ndarray:
        out = np.empty((n0, n2), idt)
        if out.size:
            _argext(readonly(np.ascontiguousarray(x, dtype=dt).reshape(n0, n, n2)), out, is_max)
        return out.reshape(out_shape)

    return run


# ---------------------------------------------------------------------------------------------
# cumulative reductions

_CUM_OPS = {"cumsum": 0, "cumprod": 1, "cummax": 2, "cummin": 3}


@njit(cache=True, nogil=True)
def _cumulative(x, out, op, reverse):  # pragma: no cover - numba
    """``out[i, :, k]`` = the running ``op`` of ``x[i, :, k]`` (from the end when ``reverse``),
    the same sequential recurrence as numpy's ``accumulate``; max/min propagate NaN."""
    n0, n, n2 = x.shape
    for i in range(n0):
        for jj in range(n):
            j = n - 1 - jj if reverse else jj
            if jj == 0:
                for k in range(n2):
                    out[i, j, k] = x[i, j, k]
                continue
            p = j + 1 if reverse else j - 1
            for k in range(n2):
                a = out[i, p, k]
                v = x[i, j, k]
                if op == 0:
                    out[i, j, k] = a + v
                elif op == 1:
                    out[i, j, k] = a * v
                elif op == 2:
                    out[i, j, k] = a if (a > v or a != a) else v
                else:
                    out[i, j, k] = a if (a < v or a != a) else v


@_register(*_CUM_OPS)
def _build_cumulative(step: Step) -> Callable | None:
    aval = step.in_avals[0]
    dt = np.dtype(aval.dtype)
    # (complex: numba cannot type the kernel's max/min branches for complex values, so the compile
    # failed and the whole jit fell back to eager evaluation; the impl's numpy loop runs instead)
    if dt.kind not in "iuf" or dt == np.float16:
        return None
    axis, reverse = step.params["axis"], bool(step.params["reverse"])
    shape3 = _split3(aval.shape, axis)
    op = _CUM_OPS[step.op]
    if op == 0 and shape3[2] == 1 and math.prod(shape3) > 4096:
        return None  # cumsum along the contiguous axis: no faster than numpy's accumulate
    if math.prod(shape3):
        ensure_compiled(_cumulative, (array_type(dt, 3, readonly=True), array_type(dt, 3), types.int64, types.boolean))

    def run(x: np.ndarray) -> np.ndarray:
        out = np.empty(shape3, dt)
        if out.size:
            _cumulative(readonly(np.ascontiguousarray(x, dtype=dt).reshape(shape3)), out, op, reverse)
        return out.reshape(aval.shape)

    return run


# ---------------------------------------------------------------------------------------------
# scatter-add


@njit(cache=True, nogil=True)
def _scatter_add(out, idx, upd, dims, upper, ostr, woff, clip):  # pragma: no cover - numba
    """For each index row ``b``: the window start (``idx[b, k]`` in operand dim ``dims[k]``,
    clamped or dropped when out of ``[0, upper]``), then ``out[start + woff[w]] += upd[b, w]``."""
    nb, nk = idx.shape
    nw = woff.shape[0]
    for b in range(nb):
        base = 0
        ok = True
        for k in range(nk):
            d = dims[k]
            s = idx[b, k]
            if clip:
                s = min(max(s, 0), upper[d])
            elif s < 0 or s > upper[d]:
                ok = False
                break
            base += s * ostr[d]
        if ok:
            for w in range(nw):
                out[base + woff[w]] += upd[b, w]


@_register("scatter-add")
def _build_scatter_add(step: Step) -> Callable | None:
    facts = step.aux  # the scatter's window sizes and index mode (fjax.lax.slicing)
    op_aval, idx_aval, upd_aval = step.in_avals
    dt = np.dtype(op_aval.dtype)
    dn = step.params["dimension_numbers"]
    if dt.kind not in "iufc" or dt == np.float16 or dn.operand_batching_dims:
        return None
    shape = tuple(op_aval.shape)
    nd = len(shape)
    sizes = facts["window_sizes"]
    nk = idx_aval.shape[-1]
    nb = math.prod(idx_aval.shape[:-1])
    nw = math.prod(sizes)
    ostr = np.array([math.prod(shape[d + 1 :]) for d in range(nd)], np.int64)
    upper = np.array(shape, np.int64) - np.array(sizes, np.int64)
    dims = np.array(dn.scatter_dims_to_operand_dims, np.int64)
    grid = np.indices(sizes).reshape(nd, -1) if nd else np.zeros((0, 1), np.int64)
    woff = (grid * ostr[:, None]).sum(axis=0).astype(np.int64)
    scat = [i for i in range(len(upd_aval.shape)) if i not in dn.update_window_dims]
    uperm = tuple(scat + list(dn.update_window_dims))
    clip = bool(facts["clip"])
    for c in (dims, upper, ostr, woff):
        c.flags.writeable = False
    if nb and nw and math.prod(shape):
        i64 = array_type(np.int64, 1, readonly=True)
        ro2 = (array_type(np.int64, 2, readonly=True), array_type(dt, 2, readonly=True))
        ensure_compiled(_scatter_add, (array_type(dt, 1), *ro2, i64, i64, i64, i64, types.boolean))

    def run(operand: np.ndarray, indices: np.ndarray, updates: np.ndarray) -> np.ndarray:
        out = np.array(operand, dtype=dt, copy=True, order="C")
        if nb == 0 or nw == 0 or out.size == 0:
            return out
        idx = readonly(np.ascontiguousarray(np.reshape(indices, (nb, nk)), dtype=np.int64))
        upd = readonly(np.ascontiguousarray(np.transpose(np.asarray(updates, dtype=dt), uperm).reshape(nb, nw)))
        _scatter_add(out.reshape(-1), idx, upd, dims, upper, ostr, woff, clip)
        return out

    return run


# ---------------------------------------------------------------------------------------------
# sort


@_register("sort")
def _build_sort(step: Step) -> Callable | None:
    if step.params["num_keys"] != 1:
        return None
    dt = np.dtype(step.in_avals[0].dtype)
    if dt.kind not in "biuf" or dt.isbuiltin != 1:
        # ml_dtypes' floats (bfloat16, float8_*, ...) say kind 'f' but numpy's sort leaves their
        # NaNs where they are: the impl's order (NaNs last, or first for the fnuz types) instead
        return None
    axis = step.params["dimension"]
    n = step.in_avals[0].shape[axis]
    if len(step.in_avals) == 1:
        # one operand: the stable sort gives the impl's order, NaNs last (and +-0 in input order)
        return lambda x: [np.sort(x, axis=axis, kind="stable") if n else np.asarray(x)]

    if axis != len(step.in_avals[0].shape) - 1:
        return None  # take_along_axis on a leading axis makes this no faster than the impl

    def run(*ops: np.ndarray) -> list:
        if n == 0:
            return [np.asarray(o) for o in ops]
        perm = np.argsort(ops[0], axis=axis, kind="stable")
        return [np.take_along_axis(np.asarray(o), perm, axis=axis) for o in ops]

    return run


def _register_conv() -> None:
    from fjax.backends.numba.conv import build_conv  # noqa: PLC0415

    HOST_KERNELS["conv_general_dilated"] = build_conv


_register_conv()


@_register("cholesky", "triangular_solve", "lu")
def _build_linalg(step: Step) -> Callable | None:
    # batched LAPACK loops (linalg_kernels), imported on first use: it loads scipy's LAPACK symbols
    from fjax.backends.numba import linalg_kernels  # noqa: PLC0415

    return linalg_kernels.host_kernel(step)
