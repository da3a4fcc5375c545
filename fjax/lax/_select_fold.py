"""Selects around an indexed update of a loop carry, folded into the update (loop/branch bodies).

A compiled ``while``/``scan``/``cond`` body updates a carry in place when the carry's new value is
a scatter or ``dynamic_update_slice`` of the carry that nothing else in the body reads. Two common
forms defeat that, and copy (or select over) the whole carry on every iteration:

- ``where(p, x.at[i].set(v), x)`` (``select_n(p, x, scatter(x, i, v))``, either case order, also
  ``.at[i].add`` and the other scatters, and ``dynamic_update_slice``): what ``vmap`` of a loop
  body with a per-member condition gives, ``p`` a per-member scalar broadcast to ``x``'s shape;
- ``x.at[i].set(where(q, v, x[i]))``: the already folded form (equinox's buffers write so), which
  still reads ``x``.

XLA folds both. Inside bodies ``jit`` rewrites them (``mlir.register_body_pass``) into one
pointwise scatter of ``x`` (one index vector per updated element, ``FILL_OR_DROP``) whose
elements that the select would have kept at their old value get an out-of-bounds index, so they
are dropped; ``x`` is then read by nothing but the scatter, which the backend does in place:

    select_n(p, x, scatter(x, i, u))  ==  scatter(x, i', u)   i' = i where p[i] (and i in bounds)
    scatter(x, i, select_n(q, x[i], u))  ==  scatter(x, i', u)   i' = i where q

Dropping (rather than writing back the old value or adding zero) is exact for every scatter kind,
for duplicate indices (``p`` is read at the written position: all writes to one position are kept
or all dropped) and for ``-0.0`` (``x + 0`` is not ``x`` there). The windows' modes are kept: a
``CLIP`` window is clamped first, a window out of bounds under the other modes is dropped whole,
as the scatter itself does. The second form is folded only when no two updated elements can meet
(``unique_indices``, or one element per batch member), since a dropped duplicate would otherwise
let an earlier write stand where the original wrote the old value back.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fjax import core
from fjax.core import Jaxpr, JaxprEqn, Literal
from fjax.dtypes import kind as _dkind
from fjax.interpreters import mlir
from fjax.interpreters import partial_eval as pe
from fjax.lax import lax, slicing, slicing_scatter
from fjax.lax.slicing import GatherScatterMode, ScatterDimensionNumbers

_SCATTERS = (
    slicing_scatter.scatter_p,
    slicing_scatter.scatter_add_p,
    slicing_scatter.scatter_mul_p,
    slicing_scatter.scatter_min_p,
    slicing_scatter.scatter_max_p,
)
_MAX_ELEMENTS = 1 << 16  # (a larger update is not a few elements: the index arrays would cost more)


# ---- the pointwise form --------------------------------------------------------------------


def _index_dtype(dt: Any) -> Any:
    return np.dtype(np.int64) if np.dtype(dt) == np.int64 else np.dtype(np.int32)


def _scatter_layout(x_aval: Any, idx_aval: Any, upd_aval: Any, params: dict) -> tuple | None:
    """(window dims of the operand, window sizes per operand dim, element shape) of a scatter the
    pointwise form can express; None for one it leaves alone."""
    dn = params["dimension_numbers"]
    if params.get("update_jaxpr") is not None or x_aval.ndim == 0 or idx_aval.ndim == 0:
        return None
    if _dkind(idx_aval.dtype) != "i":  # (unsigned: a conversion could wrap; left alone)
        return None
    nd = x_aval.ndim
    sizes = slicing_scatter._scatter_window_sizes(nd, upd_aval.shape, dn)
    if any(x_aval.shape[d] - sizes[d] < 0 for d in range(nd)) or 0 in upd_aval.shape:
        return None
    if list(dn.update_window_dims) != sorted(dn.update_window_dims):
        return None
    win = [d for d in range(nd) if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
    el = tuple(idx_aval.shape[:-1]) + tuple(sizes[d] for d in win)
    if int(np.prod(el, dtype=np.int64)) > _MAX_ELEMENTS:
        return None
    return win, sizes, el


def _to_elements(upd: Any, dn: ScatterDimensionNumbers) -> Any:
    """An updates-shaped array in element order: the scatter dims, then the window dims."""
    scat = [d for d in range(upd.ndim) if d not in dn.update_window_dims]
    perm = tuple(scat + list(dn.update_window_dims))
    return lax.transpose(upd, perm) if perm != tuple(range(upd.ndim)) else upd


def _scatter_columns(x_shape: tuple, idx: Any, params: dict, layout: tuple) -> tuple[list, Any]:
    """The operand coordinates of every updated element (one element-shaped array per operand
    dim), and where the element's window is dropped (None: nowhere), with the scatter's mode."""
    dn, mode = params["dimension_numbers"], params["mode"]
    win, sizes, el = layout
    dt = _index_dtype(idx.dtype)
    B = tuple(idx.shape[:-1])
    nb = len(B)
    cols, bad = [], None
    for d in range(len(x_shape)):
        if d in dn.scatter_dims_to_operand_dims:
            k = dn.scatter_dims_to_operand_dims.index(d)
            c = lax.reshape(slicing.slice_in_dim(idx, k, k + 1, axis=idx.ndim - 1), B)
            c = lax.convert_element_type(c, dt) if c.dtype != dt else c
            upper = x_shape[d] - sizes[d]
            if mode == GatherScatterMode.CLIP:
                c = lax.clamp(lax.full((), 0, dt), c, lax.full((), upper, dt))
            else:
                out = lax.bitwise_or(lax.lt(c, lax.full((), 0, dt)), lax.gt(c, lax.full((), upper, dt)))
                bad = out if bad is None else lax.bitwise_or(bad, out)
        elif d in dn.operand_batching_dims:
            c = lax.broadcasted_iota(dt, B, dn.scatter_indices_batching_dims[dn.operand_batching_dims.index(d)])
        else:
            c = lax.full(B, 0, dt)
        c = lax.broadcast_in_dim(c, el, tuple(range(nb)))
        if d in win:
            c = lax.add(c, lax.broadcasted_iota(dt, el, nb + win.index(d)))
        cols.append(c)
    if bad is not None:
        bad = lax.broadcast_in_dim(bad, el, tuple(range(nb)))
    return cols, bad


def _dus_columns(x_shape: tuple, starts: list, upd_shape: tuple) -> list:
    """The operand coordinates of every element of a ``dynamic_update_slice`` (starts clamped)."""
    dt = np.dtype(np.int64) if any(np.dtype(s.dtype) == np.int64 for s in starts) else np.dtype(np.int32)
    cols = []
    for d, s in enumerate(starts):
        s = lax.clamp(lax.full((), 0, s.dtype), s, lax.full((), x_shape[d] - upd_shape[d], s.dtype))
        s = lax.convert_element_type(s, dt) if s.dtype != dt else s
        cols.append(lax.add(lax.broadcast_in_dim(s, upd_shape, ()), lax.broadcasted_iota(dt, upd_shape, d)))
    return cols


def _pointwise_scatter(prim: core.Primitive, params: dict, x: Any, cols: list, upd: Any, drop: Any) -> Any:
    """``prim`` (a scatter) of ``upd`` (element-shaped) at the coordinates ``cols``, every element
    where ``drop`` holds sent out of bounds (dropped)."""
    nd = x.ndim
    el = tuple(upd.shape)
    if drop is not None:
        c0 = cols[0]
        cols = [lax.select_n(drop, c0, lax.full(el, x.shape[0], c0.dtype)), *cols[1:]]
    idx = lax.concatenate([lax.reshape(c, el + (1,)) for c in cols], len(el))
    p = dict(
        params,
        dimension_numbers=ScatterDimensionNumbers(
            update_window_dims=(), inserted_window_dims=tuple(range(nd)), scatter_dims_to_operand_dims=tuple(range(nd))
        ),
        mode=GatherScatterMode.FILL_OR_DROP,
        indices_are_sorted=False,
    )
    return prim.bind(x, idx, upd, **p)


def _or(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else lax.bitwise_or(a, b)


def _truth(w: Any) -> Any:
    return w if w.dtype == np.bool_ else lax.ne(w, lax.full((), 0, w.dtype))


def _read_at(p: Any, src: tuple | None, cols: list, el: tuple) -> Any:
    """``p`` (the operand's shape, or a scalar) at the element coordinates ``cols``; ``src`` =
    (q, broadcast_dimensions) when ``p`` is a broadcast of ``q``: then ``q`` is read instead."""
    if p.ndim == 0:
        return lax.broadcast_in_dim(p, el, ())
    if src is not None:
        q, bdims = src
        if q.ndim == 0:
            return lax.broadcast_in_dim(q, el, ())
        qcols = [cols[bd] if q.shape[k] != 1 else None for k, bd in enumerate(bdims)]
        p = q
    else:
        qcols = list(cols)
    dt = next((c.dtype for c in qcols if c is not None), np.dtype(np.int32))
    parts = []
    for c in qcols:
        if c is None:
            c = lax.full(el, 0, dt)
        elif c.dtype != dt:
            c = lax.convert_element_type(c, dt)
        parts.append(lax.reshape(c, el + (1,)))
    from fjax.lax._body_forms import point_gather  # noqa: PLC0415 - _body_forms imports this module

    return point_gather(p, lax.concatenate(parts, len(el)))


# ---- matching --------------------------------------------------------------------------------


def _same(a: Any, b: Any, producer: dict, depth: int = 6) -> bool:
    """Whether ``a`` and ``b`` are certainly the same value: one variable, equal literals, or the
    results of the same parameter-free computation of the same values (the index computations
    ``x[i]`` and ``x.at[i].set`` each make of one ``i``)."""
    if a is b:
        return True
    if type(a) is Literal or type(b) is Literal:
        if type(a) is not Literal or type(b) is not Literal:
            return False
        va, vb = np.asarray(a.val), np.asarray(b.val)
        return va.dtype == vb.dtype and va.shape == vb.shape and bool(np.array_equal(va, vb))
    ea, eb = producer.get(a), producer.get(b)
    if depth == 0 or ea is None or eb is None or ea.primitive is not eb.primitive:
        return False
    if ea.primitive.multiple_results or len(ea.invars) != len(eb.invars):
        return False
    if any(isinstance(v, (core.Jaxpr, core.ClosedJaxpr)) for v in ea.params.values()):
        return False
    try:
        if ea.params != eb.params:
            return False
    except Exception:  # noqa: BLE001 - parameters without a usable ==
        return False
    return all(_same(u, v, producer, depth - 1) for u, v in zip(ea.invars, eb.invars))


def _select_parts(e: JaxprEqn) -> tuple | None:
    """(which, case-0 var, case-1 var) of a two-case ``select_n``."""
    if e.primitive is not lax.select_n_p or len(e.invars) != 3 or type(e.invars[0]) is Literal:
        return None
    return e.invars[0], e.invars[1], e.invars[2]


class _Fold:
    """A rewrite found: the equation at ``at`` (whose output is kept) becomes ``fun(*ins)``; the
    equations at ``drop`` go (their outputs had no other use)."""

    __slots__ = ("at", "drop", "fun", "ins")

    def __init__(self, at: int, drop: list, fun: Callable, ins: list) -> None:
        self.at, self.drop, self.fun, self.ins = at, drop, fun, ins


def _broadcast_src(p: Any, x_aval: Any, producer: dict) -> tuple[Any, tuple] | None:
    e = producer.get(p)
    if e is None or e.primitive is not lax.broadcast_in_dim_p or type(e.invars[0]) is Literal:
        return None
    if tuple(e.params["shape"]) != tuple(x_aval.shape):
        return None
    return e.invars[0], tuple(e.params["broadcast_dimensions"])


def _match_select(e: JaxprEqn, pos: dict, producer: dict, uses: dict) -> _Fold | None:
    """``select_n(p, x, update(x, ...))`` (either case order)."""
    parts = _select_parts(e)
    if parts is None:
        return None
    which, c0, c1 = parts
    for upd_case, other in ((1, c0), (0, c1)):
        u = (c0, c1)[upd_case]
        s = producer.get(u)
        if s is None or (s.primitive not in _SCATTERS and s.primitive is not slicing.dynamic_update_slice_p):
            continue
        if uses.get(u) != 1 or type(other) is Literal or s.invars[0] is not other:
            continue
        x_aval = other.aval
        src = _broadcast_src(which, x_aval, producer)
        bcast = [] if src is None else [src[0]]
        keep_if = bool(upd_case)
        if s.primitive in _SCATTERS:
            idx_v, upd_v = s.invars[1], s.invars[2]
            layout = _scatter_layout(x_aval, idx_v.aval, upd_v.aval, s.params)
            if layout is None:
                continue
            prim, params = s.primitive, s.params
            bdims = None if src is None else src[1]

            def fun(w, x, idx, upd, *q, prim=prim, params=params, layout=layout, bdims=bdims, keep_if=keep_if):  # noqa: ANN001, ANN202
                cols, bad = _scatter_columns(x.shape, idx, params, layout)
                el = layout[2]
                at = _read_at(w, (q[0], bdims) if q else None, _clamped(cols, x.shape), el)
                keep = _truth(at)
                dropped = lax.bitwise_not(keep) if keep_if else keep
                upd = _to_elements(upd, params["dimension_numbers"])
                return _pointwise_scatter(prim, params, x, cols, upd, _or(dropped, bad))

            return _Fold(pos[id(e)], [pos[id(s)]], fun, [which, other, idx_v, upd_v, *bcast])
        if s.primitive is slicing.dynamic_update_slice_p:
            upd_v, starts = s.invars[1], list(s.invars[2:])
            if 0 in upd_v.aval.shape or x_aval.ndim == 0 or upd_v.aval.size > _MAX_ELEMENTS:
                continue
            bdims = None if src is None else src[1]
            n = len(starts)

            def fun(w: Any, x: Any, upd: Any, *rest: Any, bdims=bdims, keep_if=keep_if, n=n) -> Any:  # noqa: ANN001
                starts, q = rest[:n], rest[n:]
                cols = _dus_columns(x.shape, list(starts), upd.shape)
                keep = _truth(_read_at(w, (q[0], bdims) if q else None, cols, tuple(upd.shape)))
                dropped = lax.bitwise_not(keep) if keep_if else keep
                return _pointwise_scatter(slicing_scatter.scatter_p, _SET_PARAMS, x, cols, upd, dropped)

            return _Fold(pos[id(e)], [pos[id(s)]], fun, [which, other, upd_v, *starts, *bcast])
    return None


_SET_PARAMS = dict(unique_indices=False)


def _clamped(cols: list, shape: tuple) -> list:
    return [lax.clamp(lax.full((), 0, c.dtype), c, lax.full((), max(n - 1, 0), c.dtype)) for c, n in zip(cols, shape)]


_UNIT = frozenset({"reshape", "squeeze", "expand_dims", "broadcast_in_dim"})


def _strip(v: Any, producer: dict, chain: list | None = None) -> Any:
    """``v`` without the reshapes that only add or drop unit dimensions (the elements in row-major
    order unchanged); ``chain`` collects the equations passed."""
    while type(v) is not Literal:
        e = producer.get(v)
        if e is None or e.primitive.name not in _UNIT or type(e.invars[0]) is Literal:
            break
        if e.params.get("dimensions") is not None and e.primitive.name == "reshape":
            break
        if e.invars[0].aval.size != v.aval.size:
            break
        if chain is not None:
            chain.append(e)
        v = e.invars[0]
    return v


def _same_value(a: Any, b: Any, producer: dict) -> bool:
    if a is b:
        return True
    if a.aval.shape != b.aval.shape or a.aval.dtype != b.aval.dtype:
        return False
    return _same(_strip(a, producer), _strip(b, producer), producer)


def _match_read_back(e: JaxprEqn, pos: dict, producer: dict, uses: dict) -> _Fold | None:
    """``scatter(x, i, select_n(q, x[i], u))`` / ``dus(x, select_n(q, x[s], u), s)``."""
    if e.primitive is slicing_scatter.scatter_p:
        x, sel_v = e.invars[0], e.invars[2]
    elif e.primitive is slicing.dynamic_update_slice_p:
        x, sel_v = e.invars[0], e.invars[1]
    else:
        return None
    if type(x) is Literal or type(sel_v) is Literal or uses.get(sel_v) != 1:
        return None
    sel = producer.get(sel_v)
    parts = None if sel is None else _select_parts(sel)
    if parts is None:
        return None
    which, c0, c1 = parts
    for read_case, new in ((0, c1), (1, c0)):
        r = (c0, c1)[read_case]
        if type(r) is Literal or uses.get(r) != 1:
            continue
        chain: list = []
        g = producer.get(_strip(r, producer, chain))
        if (
            g is None
            or g.primitive not in (slicing.gather_p, slicing.dynamic_slice_p)
            or g.invars[0] is not x
            or any(uses.get(q.outvars[0]) != 1 for q in chain)
        ):
            continue
        keep_if = read_case == 0  # the new value is taken where ``which`` holds
        gone = [pos[id(sel)], pos[id(g)], *(pos[id(q)] for q in chain)]
        if e.primitive is slicing_scatter.scatter_p:
            if g.primitive is slicing.gather_p:
                if not _read_matches(e, g, bool(chain), producer):
                    continue
            elif not _slice_read_matches(e, g, producer):
                continue
            layout = _scatter_layout(x.aval, e.invars[1].aval, e.invars[2].aval, e.params)
            if layout is None:
                continue
            params = e.params

            def fun(w: Any, xv: Any, idx: Any, upd: Any, params=params, layout=layout, keep_if=keep_if) -> Any:  # noqa: ANN001
                cols, bad = _scatter_columns(xv.shape, idx, params, layout)
                dn = params["dimension_numbers"]
                keep = _truth(lax.broadcast_in_dim(w, upd.shape, ()) if w.ndim == 0 else w)
                keep = _to_elements(keep, dn)
                dropped = lax.bitwise_not(keep) if keep_if else keep
                return _pointwise_scatter(
                    slicing_scatter.scatter_p, params, xv, cols, _to_elements(upd, dn), _or(dropped, bad)
                )

            return _Fold(pos[id(e)], gone, fun, [which, x, e.invars[1], new])
        if g.primitive is not slicing.dynamic_slice_p or chain:
            continue
        starts, gstarts = e.invars[2:], g.invars[1:]
        if tuple(g.params["slice_sizes"]) != tuple(sel_v.aval.shape) or len(starts) != len(gstarts):
            continue
        if not all(_same_value(a, b, producer) for a, b in zip(starts, gstarts)):
            continue
        if 0 in sel_v.aval.shape or sel_v.aval.size > _MAX_ELEMENTS:
            continue

        def fun(w: Any, xv: Any, upd: Any, *starts: Any, keep_if=keep_if) -> Any:  # noqa: ANN001
            cols = _dus_columns(xv.shape, list(starts), upd.shape)
            keep = _truth(lax.broadcast_in_dim(w, upd.shape, ()) if w.ndim == 0 else w)
            dropped = lax.bitwise_not(keep) if keep_if else keep
            return _pointwise_scatter(slicing_scatter.scatter_p, _SET_PARAMS, xv, cols, upd, dropped)

        return _Fold(pos[id(e)], gone, fun, [which, x, new, *starts])
    return None


def _component(idx: Any, k: int, producer: dict) -> Any:
    """Entry ``k`` of the index vector ``idx`` (shape ``(K,)``) as a scalar variable, when it is
    built from scalars (a broadcast or a concatenation of them); else None."""
    v = _strip(idx, producer)
    if v.aval.ndim == 0:
        return v if k == 0 else None
    e = producer.get(v)
    if e is None or e.primitive.name != "concatenate" or v.aval.ndim != 1:
        return None
    if not all(type(a) is not Literal and a.aval.shape == (1,) for a in e.invars) or k >= len(e.invars):
        return None
    c = _strip(e.invars[k], producer)
    return c if c.aval.ndim == 0 else None


def _slice_read_matches(s: JaxprEqn, g: JaxprEqn, producer: dict) -> bool:
    """Whether ``dynamic_slice`` ``g`` reads exactly the one window scatter ``s`` (indices of
    shape ``(K,)``) writes: the same starts (clamped alike under ``CLIP``; under the other modes
    a window out of bounds is not written, whatever was read), the same sizes."""
    dn = s.params["dimension_numbers"]
    idx = s.invars[1]
    if idx.aval.ndim != 1 or dn.operand_batching_dims:
        return False
    x_aval, upd_aval = s.invars[0].aval, s.invars[2].aval
    sizes = slicing_scatter._scatter_window_sizes(x_aval.ndim, upd_aval.shape, dn)
    if tuple(g.params["slice_sizes"]) != tuple(sizes):
        return False
    for d, start in enumerate(g.invars[1:]):
        if d in dn.scatter_dims_to_operand_dims:
            c = _component(idx, dn.scatter_dims_to_operand_dims.index(d), producer)
            if c is None or type(start) is Literal or not _same(c, _strip(start, producer), producer):
                return False
        elif type(start) is not Literal or int(np.asarray(start.val)) != 0:
            return False
    return True


def _read_matches(s: JaxprEqn, g: JaxprEqn, reshaped: bool, producer: dict) -> bool:
    """Whether gather ``g`` (its result ``reshaped`` by unit dimensions, or not) reads exactly the
    elements scatter ``s`` writes, in the updates' order, and no two of them meet (so that
    dropping an element is the same as writing back what was read)."""
    dn, gp = s.params["dimension_numbers"], g.params
    gdn = gp["dimension_numbers"]
    if (
        tuple(gdn.start_index_map) != tuple(dn.scatter_dims_to_operand_dims)
        or tuple(gdn.operand_batching_dims) != tuple(dn.operand_batching_dims)
        or tuple(gdn.start_indices_batching_dims) != tuple(dn.scatter_indices_batching_dims)
    ):
        return False
    x_aval, upd_aval = s.invars[0].aval, s.invars[2].aval
    sizes = slicing_scatter._scatter_window_sizes(x_aval.ndim, upd_aval.shape, dn)
    if all(n == 1 for n in sizes) and all(n == 1 for n in gp["slice_sizes"]):
        # one element per index vector: both in the order of the indices' batch dimensions
        if g.outvars[0].aval.size != upd_aval.size:
            return False
    elif (
        reshaped
        or tuple(gdn.offset_dims) != tuple(dn.update_window_dims)
        or tuple(gdn.collapsed_slice_dims) != tuple(dn.inserted_window_dims)
        or tuple(gp["slice_sizes"]) != tuple(sizes)
        or g.outvars[0].aval.shape != upd_aval.shape
    ):
        return False
    if s.params["mode"] == GatherScatterMode.CLIP and gp["mode"] != GatherScatterMode.CLIP:
        return False  # (a clamped write where the read took the fill value)
    if not _same_value(s.invars[1], g.invars[1], producer):
        return False
    nb = s.invars[1].aval.ndim - 1
    one_per_member = sorted(dn.scatter_indices_batching_dims) == list(range(nb))
    return bool(s.params["unique_indices"]) or one_per_member


# ---- the pass --------------------------------------------------------------------------------


def _inline(fold: _Fold, out_var: Any) -> list | None:
    """The equations of ``fold.fun`` traced at its inputs' avals, bound to the inputs and to
    ``out_var``; None when it cannot be inlined (constants)."""
    try:
        jaxpr, consts, _ = pe.trace_to_jaxpr(lambda *a: [fold.fun(*a)], [v.aval for v in fold.ins], "select_fold")
    except Exception:  # noqa: BLE001 - a form the rewrite did not foresee: keep the equations
        return None
    if consts or jaxpr.constvars or len(jaxpr.outvars) != 1 or type(jaxpr.outvars[0]) is Literal:
        return None
    if jaxpr.outvars[0].aval.shape != out_var.aval.shape or jaxpr.outvars[0].aval.dtype != out_var.aval.dtype:
        return None
    sub = dict(zip(jaxpr.invars, fold.ins))
    sub[jaxpr.outvars[0]] = out_var
    if jaxpr.outvars[0] in jaxpr.invars:
        return None
    return [
        JaxprEqn(
            e.primitive,
            [v if type(v) is Literal else sub.get(v, v) for v in e.invars],
            [sub.get(v, v) for v in e.outvars],
            e.params,
        )
        for e in jaxpr.eqns
    ]


def _uses(eqns: list, outvars: list) -> dict:
    uses: dict = {}
    for e in eqns:
        for a in e.invars:
            if type(a) is not Literal:
                uses[a] = uses.get(a, 0) + 1
    for a in outvars:
        if type(a) is not Literal:
            uses[a] = uses.get(a, 0) + 1
    return uses


def fold_body(jaxpr: Jaxpr) -> Jaxpr | None:
    """``jaxpr`` (a loop or branch body) with its select/update pairs folded; None if none."""
    if not any(e.primitive is lax.select_n_p for e in jaxpr.eqns):
        return None
    eqns: list = list(jaxpr.eqns)
    uses = _uses(eqns, jaxpr.outvars)
    producer = {v: e for e in eqns for v in e.outvars}
    changed = False
    k = 0
    pos = {id(q): j for j, q in enumerate(eqns)}
    while k < len(eqns):
        e = eqns[k]
        f = None
        if e.primitive is lax.select_n_p:
            f = _match_select(e, pos, producer, uses)
        elif e.primitive is slicing_scatter.scatter_p or e.primitive is slicing.dynamic_update_slice_p:
            f = _match_read_back(e, pos, producer, uses)
        new = None if f is None else _inline(f, e.outvars[0])
        if new is None:
            k += 1
            continue
        gone = set(f.drop)
        for j in f.drop:
            for v in eqns[j].invars:
                if type(v) is not Literal:
                    uses[v] -= 1
        for v in e.invars:
            if type(v) is not Literal:
                uses[v] -= 1
        for q in new:
            for v in q.invars:
                if type(v) is not Literal:
                    uses[v] = uses.get(v, 0) + 1
            for v in q.outvars:
                producer[v] = q
        eqns = [q for j, q in enumerate(eqns[:k]) if j not in gone] + new + eqns[k + 1 :]
        pos = {id(q): j for j, q in enumerate(eqns)}
        k = k - len(gone) + len(new)
        changed = True
    if not changed:
        return None
    # (the broadcast predicates, reads and index computations the folds no longer use)
    return pe.dce_jaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns))


mlir.register_body_pass(fold_body)
