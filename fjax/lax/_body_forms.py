"""Forms of ``argmax``/``argmin`` and windowed gathers that compile inside loop and branch bodies.

A ``while``/``scan``/``cond`` body compiles as a whole or runs on the host primitive by primitive
(every iteration then pays numpy's per-call cost): one ``jnp.argmax`` or one ``vmap``-ed
``lax.dynamic_slice`` (a gather with a window) in a 1000-step loop made it take 2 s where JAX
takes 0.2 ms. Inside bodies, ``jit`` therefore rewrites (``mlir.register_rewrite(...,
bodies_only=True)``):

- ``argmax(x)`` as ``min(where(x == max(x) or isnan(x), iota, n))`` (the first maximum; a NaN
  counts as the maximum, the first NaN wins, as JAX), ``argmin`` likewise;
- a gather with windows as the pointwise gather (one index vector per element) over the window
  starts clamped as the gather clamps them, plus an iota per window dimension; ``fill`` windows
  whose start is out of bounds take the fill value, as the gather's ``FILL_OR_DROP`` mode.

Outside bodies the primitives keep their own (host) implementation.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fjax import core
from fjax.dtypes import kind as _dkind
from fjax.interpreters import mlir
from fjax.lax import lax, lax_reductions, slicing
from fjax.lax.slicing import GatherDimensionNumbers, GatherScatterMode


def point_gather(x: Any, indices: Any) -> Any:
    """``x`` read at each full index (the last axis of ``indices`` holds one coordinate per
    dimension of ``x``), clamped into bounds: a gather with no windows."""
    nd = x.ndim
    return slicing.gather_p.bind(
        x,
        indices,
        dimension_numbers=GatherDimensionNumbers(
            offset_dims=(), collapsed_slice_dims=tuple(range(nd)), start_index_map=tuple(range(nd))
        ),
        slice_sizes=(1,) * nd,
        indices_are_sorted=False,
        unique_indices=False,
        mode=GatherScatterMode.CLIP,
        fill_value=None,
    )


def _arg_rewrite(is_max: bool) -> Callable[[core.JaxprEqn], Callable | None]:
    def rewrite(eqn: core.JaxprEqn) -> Callable | None:
        aval = eqn.invars[0].aval
        if _dkind(aval.dtype) == "c" or not aval.shape:
            return None

        def fun(x: Any, *, axes: tuple, index_dtype: Any) -> Any:
            ax = axes[0]
            keep = tuple(d for d in range(x.ndim) if d != ax)
            best = (lax.reduce_max if is_max else lax.reduce_min)(x, (ax,))
            hit = lax.eq(x, lax.broadcast_in_dim(best, x.shape, keep))
            if _dkind(x.dtype) == "f":
                hit = lax.bitwise_or(hit, lax.ne(x, x))
            pos = lax.broadcasted_iota(index_dtype, x.shape, ax)
            key = lax.select_n(hit, lax.full(x.shape, x.shape[ax], index_dtype), pos)
            return lax.reduce_min(key, (ax,))

        return fun

    return rewrite


def _pointwise(dn: GatherDimensionNumbers, nd: int, slice_sizes: tuple) -> bool:
    return (
        not dn.offset_dims
        and not dn.operand_batching_dims
        and tuple(sorted(dn.collapsed_slice_dims)) == tuple(range(nd))
        and tuple(sorted(dn.start_index_map)) == tuple(range(nd))
        and all(s == 1 for s in slice_sizes)
    )


def _gather_rewrite(eqn: core.JaxprEqn) -> Callable | None:
    p = eqn.params
    dn, sizes = p["dimension_numbers"], p["slice_sizes"]
    operand, indices = eqn.invars[0].aval, eqn.invars[1].aval
    nd = operand.ndim
    if nd == 0 or indices.ndim == 0 or dn.operand_batching_dims or _pointwise(dn, nd, sizes):
        return None  # (batching dims become indexed dims first: fjax/lax/_batching_dims.py)
    if _dkind(indices.dtype) not in "iu" or any(s == 0 for s in sizes):
        return None
    D = operand.shape
    win = [d for d in range(nd) if d not in dn.collapsed_slice_dims]  # window dims, operand order

    def fun(x: Any, idx: Any, **params: Any) -> Any:
        B = tuple(idx.shape[:-1])
        nb, W = len(B), tuple(sizes[d] for d in win)
        dt = idx.dtype
        shape = B + W
        cols, oob = [], None
        for d in range(nd):
            if d in dn.start_index_map:
                k = dn.start_index_map.index(d)
                s = slicing.slice_in_dim(idx, k, k + 1, axis=idx.ndim - 1)
                s = lax.reshape(s, B)
                c = lax.clamp(lax.full((), 0, dt), s, lax.full((), D[d] - sizes[d], dt))
                if p["mode"] == GatherScatterMode.FILL_OR_DROP:
                    bad = lax.ne(s, c)
                    oob = bad if oob is None else lax.bitwise_or(oob, bad)
                start = lax.broadcast_in_dim(c, shape, tuple(range(nb)))
            else:
                start = lax.full(shape, 0, dt)
            if d in win:
                start = lax.add(start, lax.broadcasted_iota(dt, shape, nb + win.index(d)))
            cols.append(lax.reshape(start, shape + (1,)))
        full = lax.concatenate(cols, len(shape))
        g = point_gather(x, full)
        if oob is not None:
            fv = p["fill_value"]
            fv = slicing._default_fill_value(x.dtype) if fv is None else fv
            fill = lax.full(shape, np.asarray(fv).astype(x.dtype), x.dtype)
            g = lax.select_n(lax.broadcast_in_dim(oob, shape, tuple(range(nb))), g, fill)
        # the output layout: window dims at ``offset_dims``, batch dims in order elsewhere
        perm, b = [], 0
        for pos in range(nb + len(W)):
            if pos in dn.offset_dims:
                perm.append(nb + dn.offset_dims.index(pos))
            else:
                perm.append(b)
                b += 1
        return lax.transpose(g, tuple(perm)) if perm != list(range(len(perm))) else g

    return fun


mlir.register_rewrite(lax_reductions.argmax_p, _arg_rewrite(True), bodies_only=True)
mlir.register_rewrite(lax_reductions.argmin_p, _arg_rewrite(False), bodies_only=True)
mlir.register_rewrite(slicing.gather_p, _gather_rewrite, bodies_only=True)
from fjax.lax import _select_fold  # noqa: E402, F401  (selects around indexed updates in bodies)
