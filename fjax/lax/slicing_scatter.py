"""The scatter family of ``fjax.lax.slicing`` (``scatter``, ``scatter_add``/``mul``/``min``/``max``
with their rules) and the module's public wrappers (``slice``, ``pad``, ``gather``, ...).

A part of ``fjax/lax/slicing.py`` split off for size: it starts from every name slicing.py has
defined above its import of this module, and slicing.py re-exports every name defined here.
"""
# ruff: noqa: F821 - names come from fjax.lax.slicing (copied in below: this module is a part of it)

from __future__ import annotations

import operator

from fjax.lax import slicing as _slicing

globals().update({k: v for k, v in vars(_slicing).items() if not (k.startswith("__") and k.endswith("__"))})

# ---------------------------------------------------------------------------------------------
# scatter family


def _scatter_window_sizes(operand_ndim: int, updates_shape: tuple, dn: ScatterDimensionNumbers) -> list[int]:
    win = [d for d in range(operand_ndim) if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
    sizes = [1] * operand_ndim
    for d, u in zip(win, dn.update_window_dims):
        sizes[d] = updates_shape[u]
    return sizes


def _scatter_abstract_rule(name: str) -> Callable:
    def rule(
        operand: Any,
        indices: Any,
        updates: Any,
        *,
        dimension_numbers: ScatterDimensionNumbers,
        indices_are_sorted: bool,
        unique_indices: bool,
        mode: GatherScatterMode,
    ) -> ShapedArray:
        dn = dimension_numbers
        if operand.dtype != updates.dtype:
            raise TypeError(
                f"lax.scatter requires arguments to have the same dtypes, got {operand.dtype.name}, "
                f"{updates.dtype.name}."
            )
        _check_indices_and_batching(
            name,
            operand,
            indices,
            dn.scatter_dims_to_operand_dims,
            "scatter_dims_to_operand_dims",
            dn.operand_batching_dims,
            dn.scatter_indices_batching_dims,
            "scatter_indices_batching_dims",
        )
        nd = operand.ndim
        _check_dims(name, "inserted_window_dims", dn.inserted_window_dims, nd, f"operand (shape {operand.shape})")
        if set(dn.inserted_window_dims) & set(dn.operand_batching_dims):
            raise TypeError(
                f"{name}: inserted_window_dims {dn.inserted_window_dims} and operand_batching_dims "
                f"{dn.operand_batching_dims} must be disjoint."
            )
        _check_dims(name, "update_window_dims", dn.update_window_dims, updates.ndim, f"updates (shape {updates.shape})")
        nwin = nd - len(dn.inserted_window_dims) - len(dn.operand_batching_dims)
        if len(dn.update_window_dims) != nwin:
            raise TypeError(
                f"{name}: len(update_window_dims) + len(inserted_window_dims) + "
                f"len(operand_batching_dims) must equal the operand rank, got dimension_numbers {dn} "
                f"for operand shape {operand.shape}."
            )
        if updates.ndim != nwin + indices.ndim - 1:
            raise TypeError(
                f"{name}: updates rank must be len(update_window_dims) + indices rank - 1, got updates "
                f"shape {updates.shape}, indices shape {indices.shape} and dimension_numbers {dn}."
            )
        sizes = _scatter_window_sizes(nd, updates.shape, dn)
        # only the update window dims are bounded by the operand's, as in JAX/XLA: the inserted (and
        # batching) dims have window size 1 even where the operand's dim is 0 (x.at[i].add(v) for x of
        # shape (0, n) is x: every update is out of bounds)
        skip = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
        if any(s > d for k, (s, d) in enumerate(zip(sizes, operand.shape)) if k not in skip):
            raise TypeError(
                f"{name}: update window sizes {tuple(sizes)} must not exceed the operand shape "
                f"{operand.shape} (updates shape {updates.shape}, dimension_numbers {dn})."
            )
        scat = [i for i in range(updates.ndim) if i not in dn.update_window_dims]
        for i, b in zip(scat, indices.shape[:-1]):
            if updates.shape[i] != b:  # JAX's words
                raise TypeError(
                    "Bounds of the scatter dimensions of updates must be the same as the bounds of the "
                    f"corresponding dimensions of scatter indices. For scatter dimension {i}, updates bound is "
                    f"{updates.shape[i]}, indices bound is {b}."
                )
        if len(scat) != indices.ndim - 1:
            raise TypeError(
                f"{name}: the scatter dims of updates (updates shape {updates.shape}) must match the batch dims "
                f"of indices (indices shape {indices.shape})."
            )
        return ShapedArray(operand.shape, operand.dtype, operand.weak_type)

    return rule


def _scatter_impl_rule(kind: str) -> Callable:
    def impl(
        operand: np.ndarray,
        indices: np.ndarray,
        updates: np.ndarray,
        *,
        dimension_numbers: ScatterDimensionNumbers,
        indices_are_sorted: bool,
        unique_indices: bool,
        mode: GatherScatterMode,
    ) -> np.ndarray:
        dn = dimension_numbers
        nd = operand.ndim
        batch_shape = indices.shape[:-1]
        sizes = _scatter_window_sizes(nd, updates.shape, dn)
        starts = _full_starts(
            operand.shape,
            indices,
            dn.scatter_dims_to_operand_dims,
            dn.operand_batching_dims,
            dn.scatter_indices_batching_dims,
        )
        upper = np.array(operand.shape, np.int64) - np.array(sizes, np.int64)
        if mode == GatherScatterMode.CLIP:
            starts = np.clip(starts, 0, upper)
        inb = np.all((starts >= 0) & (starts <= upper), axis=-1)
        scat_dims = [i for i in range(updates.ndim) if i not in dn.update_window_dims]
        u = np.transpose(updates, scat_dims + list(dn.update_window_dims)).reshape(batch_shape + tuple(sizes))
        full = batch_shape + tuple(sizes)
        keep = np.broadcast_to(inb.reshape(batch_shape + (1,) * nd), full)
        lin = np.zeros(full, np.int64)
        stride = 1
        coords = _window_coords(starts, sizes)
        for d in reversed(range(nd)):
            lin = lin + coords[d] * stride
            stride *= operand.shape[d]
        lin = lin[keep]
        vals = u[keep]
        out = np.array(operand, copy=True, order="C")
        flat = out.reshape(-1)  # a view (out is C-contiguous), so writes land in out
        if kind == "set":
            # deterministic: the last update (row-major over the indices' batch dims) wins
            _, first_rev = np.unique(lin[::-1], return_index=True)
            pos = len(lin) - 1 - first_rev
            flat[lin[pos]] = vals[pos]
        else:
            ufunc = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[kind]
            if operand.dtype == np.bool_:
                ufunc = {"add": np.logical_or, "mul": np.logical_and, "min": np.logical_and, "max": np.logical_or}[kind]
            with np.errstate(all="ignore"):
                ufunc.at(flat, lin, vals)
        return out

    return impl


def _make_scatter(name: str, kind: str) -> Primitive:
    p = Primitive(name)
    p.def_impl(_scatter_impl_rule(kind))
    p.def_abstract_eval(_scatter_abstract_rule(name))
    return p


scatter_p = _make_scatter("scatter", "set")
scatter_add_p = _make_scatter("scatter-add", "add")


def _scatter_lowering_aux(eqn: core.JaxprEqn) -> dict:
    """What a backend's compiled scatter-add (a host kernel) needs: the window sizes and mode."""
    op_aval, _, upd_aval = (v.aval for v in eqn.invars)
    dn = eqn.params["dimension_numbers"]
    return {
        "window_sizes": _scatter_window_sizes(op_aval.ndim, upd_aval.shape, dn),
        "clip": eqn.params["mode"] == GatherScatterMode.CLIP,
    }


register_lowering(scatter_add_p, HOST, aux=_scatter_lowering_aux)
scatter_mul_p = _make_scatter("scatter-mul", "mul")
scatter_min_p = _make_scatter("scatter-min", "min")
scatter_max_p = _make_scatter("scatter-max", "max")


def _scatter_to_gather(dn: ScatterDimensionNumbers, operand_shape: tuple, updates_shape: tuple) -> tuple:
    gdn = GatherDimensionNumbers(
        dn.update_window_dims,
        dn.inserted_window_dims,
        dn.scatter_dims_to_operand_dims,
        dn.operand_batching_dims,
        dn.scatter_indices_batching_dims,
    )
    return gdn, tuple(_scatter_window_sizes(len(operand_shape), updates_shape, dn))


def _gather_updates(
    x: Any, idx: Any, updates_aval: ShapedArray, dn: ScatterDimensionNumbers, mode: GatherScatterMode, fill: Any = 0
) -> Any:
    """The operand-shaped ``x`` read back at every update position (the adjoint of scatter-add).

    Windows that the scatter drops read ``fill``; the gather clamps exactly where the scatter does.
    """
    gdn, ss = _scatter_to_gather(dn, core.get_aval(x).shape, updates_aval.shape)
    gmode = GatherScatterMode.CLIP if mode == GatherScatterMode.CLIP else GatherScatterMode.FILL_OR_DROP
    return gather_p.bind(
        x,
        idx,
        dimension_numbers=gdn,
        slice_sizes=ss,
        indices_are_sorted=False,
        unique_indices=False,
        mode=gmode,
        fill_value=fill if gmode == GatherScatterMode.FILL_OR_DROP else None,
    )


def _scatter_linear_jvp(prim: Primitive) -> Callable:
    """JVP of a scatter that is linear in (operand, updates) jointly: scatter and scatter-add."""

    def jvp(primals: list, tangents: list, **params: Any) -> tuple:
        x, idx, upd = primals
        tx, _, tu = tangents
        out = prim.bind(x, idx, upd, **params)
        if type(tx) is Zero and type(tu) is Zero:
            return out, Zero(ad.tangent_aval(core.get_aval(out)))
        return out, prim.bind(ad.instantiate_zeros(tx), idx, ad.instantiate_zeros(tu), **params)

    return jvp


def _scatter_add_transpose(
    ct: Any,
    x: Any,
    idx: Any,
    upd: Any,
    *,
    dimension_numbers: ScatterDimensionNumbers,
    indices_are_sorted: bool,
    unique_indices: bool,
    mode: GatherScatterMode,
) -> list:
    if is_undefined_primal(idx):
        raise ValueError("scatter-add is not linear in its indices")
    if type(ct) is Zero:
        return [None, None, None]
    ct_x = ct if is_undefined_primal(x) else None
    ct_u = _gather_updates(ct, idx, _aval(upd), dimension_numbers, mode) if is_undefined_primal(upd) else None
    return [ct_x, None, ct_u]


def _scatter_winners(
    x_aval: ShapedArray,
    idx: Any,
    upd_aval: ShapedArray,
    dn: ScatterDimensionNumbers,
    mode: GatherScatterMode,
    **params: Any,
) -> Any:
    """Boolean mask (updates-shaped) of the update elements that survive a replacing scatter."""
    n = math.prod(upd_aval.shape)
    ids = lax.reshape(lax.iota(np.int32, n), upd_aval.shape)
    canvas = lax.full(x_aval.shape, -1, np.int32)
    written = scatter_p.bind(canvas, idx, ids, dimension_numbers=dn, mode=mode, **params)
    back = _gather_updates(written, idx, upd_aval, dn, mode, fill=-1)
    return lax.eq(back, ids)


def _scatter_transpose(
    ct: Any,
    x: Any,
    idx: Any,
    upd: Any,
    *,
    dimension_numbers: ScatterDimensionNumbers,
    indices_are_sorted: bool,
    unique_indices: bool,
    mode: GatherScatterMode,
) -> list:
    if is_undefined_primal(idx):
        raise ValueError("scatter is not linear in its indices")
    if type(ct) is Zero:
        return [None, None, None]
    params = dict(
        dimension_numbers=dimension_numbers,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
        mode=mode,
    )
    ua = _aval(upd)
    ct_x = scatter_p.bind(ct, idx, _zeros(ua), **params) if is_undefined_primal(x) else None
    ct_u = None
    if is_undefined_primal(upd):
        ct_u = _gather_updates(ct, idx, ua, dimension_numbers, mode)
        if not unique_indices:
            mask = _scatter_winners(
                _aval(x),
                idx,
                ua,
                dimension_numbers,
                mode,
                indices_are_sorted=indices_are_sorted,
                unique_indices=unique_indices,
            )
            ct_u = lax.select(mask, ct_u, _zeros(core.get_aval(ct_u)))
    return [ct_x, None, ct_u]


def _scatter_mul_jvp(
    primals: list,
    tangents: list,
    *,
    dimension_numbers: ScatterDimensionNumbers,
    indices_are_sorted: bool,
    unique_indices: bool,
    mode: GatherScatterMode,
) -> tuple:
    x, idx, upd = primals
    tx, _, tu = tangents
    params = dict(
        dimension_numbers=dimension_numbers,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
        mode=mode,
    )
    out = scatter_mul_p.bind(x, idx, upd, **params)
    t: Any = None
    if type(tx) is not Zero:
        t = scatter_mul_p.bind(tx, idx, upd, **params)
    if type(tu) is not Zero:
        if not unique_indices:
            raise NotImplementedError("scatter_mul gradients are only implemented if `unique_indices=True`")
        c = lax.mul(
            x, scatter_add_p.bind(_zeros(core.get_aval(tu).update(shape=core.get_aval(x).shape)), idx, tu, **params)
        )
        t = c if t is None else lax.add(t, c)
    return out, (Zero(ad.tangent_aval(core.get_aval(out))) if t is None else t)


def _scatter_mul_transpose(
    ct: Any,
    x: Any,
    idx: Any,
    upd: Any,
    *,
    dimension_numbers: ScatterDimensionNumbers,
    indices_are_sorted: bool,
    unique_indices: bool,
    mode: GatherScatterMode,
) -> list:
    if is_undefined_primal(idx):
        raise ValueError("scatter-mul is not linear in its indices")
    if is_undefined_primal(upd):
        raise NotImplementedError(
            "Transpose rule for 'scatter-mul' w.r.t. its updates not implemented (scatter-mul "
            "is not linear in its updates)"
        )
    if type(ct) is Zero or not is_undefined_primal(x):
        return [None, None, None]
    return [
        scatter_mul_p.bind(
            ct,
            idx,
            upd,
            dimension_numbers=dimension_numbers,
            indices_are_sorted=indices_are_sorted,
            unique_indices=unique_indices,
            mode=mode,
        ),
        None,
        None,
    ]


def _scatter_extremal_jvp(prim: Primitive) -> Callable:
    # ties (between the operand and updates, or among updates) share the tangent evenly
    def jvp(
        primals: list,
        tangents: list,
        *,
        dimension_numbers: ScatterDimensionNumbers,
        indices_are_sorted: bool,
        unique_indices: bool,
        mode: GatherScatterMode,
    ) -> tuple:
        x, idx, upd = primals
        tx, _, tu = tangents
        params = dict(
            dimension_numbers=dimension_numbers,
            indices_are_sorted=indices_are_sorted,
            unique_indices=unique_indices,
            mode=mode,
        )
        out = prim.bind(x, idx, upd, **params)
        oa = core.get_aval(out)
        if type(tx) is Zero and type(tu) is Zero:
            return out, Zero(ad.tangent_aval(oa))
        tx, tu = ad.instantiate_zeros(tx), ad.instantiate_zeros(tu)
        dt = core.get_aval(tx).dtype
        zeros = _zeros(ShapedArray(oa.shape, dt))
        x_mask = lax.convert_element_type(lax.eq(x, out), dt)
        u_mask = lax.convert_element_type(
            lax.eq(upd, _gather_updates(out, idx, core.get_aval(upd), dimension_numbers, mode)), dt
        )
        count = lax.add(x_mask, scatter_add_p.bind(zeros, idx, u_mask, **params))
        num = lax.add(lax.mul(tx, x_mask), scatter_add_p.bind(zeros, idx, lax.mul(tu, u_mask), **params))
        return out, lax.div(num, count)

    return jvp


def _scatter_batch(prim: Primitive) -> Callable:
    def rule(
        vals: list, dims: list, *, dimension_numbers: ScatterDimensionNumbers, axis_size: int, **params: Any
    ) -> tuple:
        x, idx, upd = vals
        xd, id_, ud = dims
        dn = dimension_numbers
        upd_rank = core.get_aval(upd).ndim - (0 if ud is None else 1)
        if xd is None:
            x, xd = batching._broadcast(x, axis_size, 0), 0
        iwd, sdod, obd = (
            _shift(dn.inserted_window_dims, xd),
            _shift(dn.scatter_dims_to_operand_dims, xd),
            _shift(dn.operand_batching_dims, xd),
        )
        if id_ is None:
            # indices unbatched: the operand batch axis is one more window dim, updated whole
            win = [d for d in range(core.get_aval(x).ndim) if d not in iwd and d not in obd]
            k = win.index(xd)
            u = _new_dim_position(dn.update_window_dims, k)
            uwd = _shift(dn.update_window_dims, u)
            uwd = uwd[:k] + (u,) + uwd[k:]
            new = ScatterDimensionNumbers(uwd, iwd, sdod, obd, dn.scatter_indices_batching_dims)
        else:
            if id_ == core.get_aval(idx).ndim - 1:
                idx, id_ = batching.moveaxis(idx, id_, 0), 0
            e = id_
            spos = [p for p in range(upd_rank) if p not in dn.update_window_dims]
            u = _new_dim_position(spos, e)
            uwd = _shift(dn.update_window_dims, u)
            obd, j = _insert_sorted(obd, xd)
            sibd = _shift(dn.scatter_indices_batching_dims, e)
            sibd = sibd[:j] + (e,) + sibd[j:]
            new = ScatterDimensionNumbers(uwd, iwd, sdod, obd, sibd)
        upd = batching._broadcast(upd, axis_size, u) if ud is None else batching.moveaxis(upd, ud, u)
        return prim.bind(x, idx, upd, dimension_numbers=new, **params), xd

    return batching.wants_axis_size(rule)


ad.primitive_jvps[scatter_p] = _scatter_linear_jvp(scatter_p)
ad.primitive_transposes[scatter_p] = _scatter_transpose
ad.primitive_jvps[scatter_add_p] = _scatter_linear_jvp(scatter_add_p)
ad.primitive_transposes[scatter_add_p] = _scatter_add_transpose
ad.primitive_jvps[scatter_mul_p] = _scatter_mul_jvp
ad.primitive_transposes[scatter_mul_p] = _scatter_mul_transpose
ad.primitive_jvps[scatter_min_p] = _scatter_extremal_jvp(scatter_min_p)
ad.primitive_jvps[scatter_max_p] = _scatter_extremal_jvp(scatter_max_p)
for _p in (scatter_p, scatter_add_p, scatter_mul_p, scatter_min_p, scatter_max_p):
    batching.primitive_batchers[_p] = _scatter_batch(_p)

# ---------------------------------------------------------------------------------------------
# public wrappers (lax API)


def slice(
    operand: Any,
    start_indices: Sequence[int],
    limit_indices: Sequence[int],  # noqa: A001
    strides: Sequence[int] | None = None,
) -> Any:
    """Static slice ``operand[start:limit:stride]`` in every dimension (XLA Slice)."""
    if strides is None and not isinstance(operand, core.Tracer) and core._state.dynamic[-1] is core._eval_main:
        _check_eager_slice_sizes(operand, start_indices, limit_indices)
    st = None if strides is None else _tup(strides)
    return _bind(slice_p, operand, start_indices=_tup(start_indices), limit_indices=_tup(limit_indices), strides=st)


def _check_eager_slice_sizes(operand: Any, start_indices: Sequence[int], limit_indices: Sequence[int]) -> None:
    """JAX evaluates an eager unit-stride slice as a dynamic_slice of numpy-computed sizes: a bad
    size raises that rule's TypeError, naming the sizes as numpy ints (under jit, slice's own)."""
    shape = np.shape(operand)
    if not (len(start_indices) == len(limit_indices) == len(shape)):
        return
    sizes = tuple(np.array(limit_indices, np.int64) - np.array(start_indices, np.int64))
    if not all(d >= s for d, s in zip(shape, sizes)):
        raise TypeError(
            f"slice slice_sizes must be less than or equal to operand shape, got slice_sizes {sizes} for operand "
            f"shape {shape}."
        )
    if not all(s >= 0 for s in sizes):
        raise TypeError(f"slice slice_sizes must be greater than or equal to zero, got slice_sizes of {sizes}.")


def _canon_axis(axis: int, ndim: int, name: str) -> int:
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim


def slice_in_dim(operand: Any, start_index: int | None, limit_index: int | None, stride: int = 1, axis: int = 0) -> Any:
    """``lax.slice`` along a single ``axis`` (``None`` and negative bounds as in Python slicing)."""
    shape = core.get_aval(operand).shape
    axis = _canon_axis(axis, len(shape), "slice_in_dim")
    n = shape[axis]
    # (operator.index: a traced bound is JAX's TracerIntegerConversionError)
    start = 0 if start_index is None else operator.index(start_index)
    limit = n if limit_index is None else operator.index(limit_index)
    start = start + n if start < 0 else start
    limit = limit + n if limit < 0 else limit
    si, li, st = [0] * len(shape), list(shape), [1] * len(shape)
    si[axis], li[axis], st[axis] = start, limit, int(stride)
    return slice(operand, si, li, st)


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True) -> Any:
    """The element ``index`` (static int, may be negative) along ``axis``."""
    index = operator.index(index)  # (traced: JAX's TracerIntegerConversionError)
    shape = core.get_aval(operand).shape
    axis = _canon_axis(axis, len(shape), "index_in_dim")
    n = shape[axis]
    if index >= n or index < -n:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {n}")
    index = index + n if index < 0 else index
    out = slice_in_dim(operand, index, index + 1, 1, axis)
    return out if keepdims else lax.squeeze(out, (axis,))


def pad(operand: Any, padding_value: Any, padding_config: Sequence[tuple[int, int, int]]) -> Any:
    """Pad with ``padding_value``: ``(low, high, interior)`` per dim; negative low/high crop."""
    cfg = tuple((int(lo), int(hi), int(i)) for lo, hi, i in padding_config)
    return _bind(pad_p, operand, padding_value, padding_config=cfg)


def concatenate(operands: Sequence[Any], dimension: int) -> Any:
    """Concatenate arrays of the same dtype and rank along ``dimension``."""
    operands = list(operands)
    if not operands:
        raise ValueError("concatenate requires a non-empty sequences of arrays")
    if len(operands) == 1:
        op = operands[0]
        return op if isinstance(op, (core.Array, core.Tracer)) else core.to_array(op, "concatenate")
    return core.bind(concatenate_p, operands, dict(dimension=int(dimension)))


def _split_index_array(si: Any) -> list:
    if isinstance(si, np.ndarray) or type(si) is core.Array:
        v = np.asarray(core.concrete_or_error(si))
        return [core.Array(np.array(v[i], v.dtype), False) for i in range(v.shape[0])]
    n = core.get_aval(si).shape[0]
    return [lax.reshape(slice(si, (i,), (i + 1,)), ()) for i in range(n)]


def _canon_start_indices(name: str, shape: tuple, start_indices: Any, allow_negative_indices: Any) -> list:
    if isinstance(start_indices, (np.ndarray, core.Array, core.Tracer)):
        if core.get_aval(start_indices).ndim != 1:
            raise ValueError(
                f"{name}: start_indices must be a sequence of scalars or a 1-D array, got shape "
                f"{core.get_aval(start_indices).shape}"
            )
        start_indices = _split_index_array(start_indices)
    idxs = list(start_indices)
    if len(idxs) != len(shape):
        raise ValueError(f"Length of slice indices must match number of operand dimensions ({len(idxs)} vs {shape})")
    allow = (
        [bool(allow_negative_indices)] * len(idxs)
        if isinstance(allow_negative_indices, (bool, np.bool_))
        else [bool(a) for a in allow_negative_indices]
    )
    py = [isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in idxs]
    arrs = [core.to_array(i, name) if isinstance(i, np.ndarray) else i for i, p in zip(idxs, py) if not p]
    dt = core.get_aval(arrs[0]).dtype if arrs else dtypes.canonicalize_dtype(np.int32)
    if _dkind(dt) not in "iu":  # (Python ints stay int32 beside a float index: JAX's error names both)
        dt = dtypes.canonicalize_dtype(np.int32)
    out = []
    for i, p, n, a in zip(idxs, py, shape, allow):
        if p:
            i = int(i)
            out.append(_int_scalar(i + n if (a and i < 0) else i, dt))
            continue
        i = core.to_array(i, name) if isinstance(i, (np.ndarray, np.generic, float)) else i
        ia = core.get_aval(i)
        if a and _dkind(ia.dtype) == "i":
            i = lax.select(lax.lt(i, lax._const(i, 0)), lax.add(i, lax._const(i, n)), i)
        out.append(i)
    return out


def dynamic_slice(
    operand: Any,
    start_indices: Any,
    slice_sizes: Sequence[int],
    *,
    allow_negative_indices: bool | Sequence[bool] = True,
) -> Any:
    """Slice of static ``slice_sizes`` at traced ``start_indices`` (clamped so the slice fits;
    negative indices count from the end when ``allow_negative_indices``)."""
    shape = core.get_aval(operand).shape
    idxs = _canon_start_indices("dynamic_slice", shape, start_indices, allow_negative_indices)
    try:  # JAX's canonicalize_shape: integers only (a float or traced size is refused)
        sizes = tuple(operator.index(s) for s in slice_sizes)
    except TypeError:
        raise core.invalid_shape_error(tuple(slice_sizes)) from None
    return core.bind(dynamic_slice_p, [operand] + idxs, dict(slice_sizes=sizes))


def dynamic_update_slice(
    operand: Any, update: Any, start_indices: Any, *, allow_negative_indices: bool | Sequence[bool] = True
) -> Any:
    """``operand`` with ``update`` written at traced ``start_indices`` (clamped so it fits)."""
    shape = core.get_aval(operand).shape
    idxs = _canon_start_indices("dynamic_update_slice", shape, start_indices, allow_negative_indices)
    return core.bind(dynamic_update_slice_p, [operand, update] + idxs, {})


def _in_dim_starts(ndim: int, axis: int, start: Any) -> list:
    if isinstance(start, (int, np.integer)):
        return [0] * ndim if ndim == 0 else [int(start) if k == axis else 0 for k in range(ndim)]
    dt = core.get_aval(start).dtype
    return [start if k == axis else _int_scalar(0, dt) for k in range(ndim)]


def dynamic_slice_in_dim(
    operand: Any, start_index: Any, slice_size: int, axis: int = 0, *, allow_negative_indices: bool = True
) -> Any:
    """``dynamic_slice`` along one ``axis`` (the other dims are taken whole)."""
    shape = core.get_aval(operand).shape
    axis = _canon_axis(axis, len(shape), "dynamic_slice_in_dim")
    sizes = list(shape)
    sizes[axis] = operator.index(slice_size)  # (traced: JAX's TracerIntegerConversionError)
    allow = [allow_negative_indices if k == axis else True for k in range(len(shape))]
    return dynamic_slice(operand, _in_dim_starts(len(shape), axis, start_index), sizes, allow_negative_indices=allow)


def dynamic_index_in_dim(
    operand: Any, index: Any, axis: int = 0, keepdims: bool = True, *, allow_negative_indices: bool = True
) -> Any:
    """The element at traced ``index`` along ``axis`` (clamped)."""
    shape = core.get_aval(operand).shape
    axis = _canon_axis(axis, len(shape), "dynamic_index_in_dim")
    out = dynamic_slice_in_dim(operand, index, 1, axis, allow_negative_indices=allow_negative_indices)
    return out if keepdims else lax.squeeze(out, (axis,))


def dynamic_update_slice_in_dim(
    operand: Any, update: Any, start_index: Any, axis: int, *, allow_negative_indices: bool = True
) -> Any:
    """``dynamic_update_slice`` at traced ``start_index`` along ``axis`` (0 elsewhere)."""
    nd = core.get_aval(operand).ndim
    axis = _canon_axis(axis, nd, "dynamic_update_slice_in_dim")
    allow = [allow_negative_indices if k == axis else True for k in range(nd)]
    return dynamic_update_slice(operand, update, _in_dim_starts(nd, axis, start_index), allow_negative_indices=allow)


def dynamic_update_index_in_dim(
    operand: Any, update: Any, index: Any, axis: int, *, allow_negative_indices: bool = True
) -> Any:
    """Write ``update`` (with or without the size-1 ``axis``) at traced ``index`` along ``axis``."""
    nd = core.get_aval(operand).ndim
    axis = _canon_axis(axis, nd, "dynamic_update_index_in_dim")
    ua = core.get_aval(update)
    if ua.ndim == nd - 1:
        update = lax.expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis, allow_negative_indices=allow_negative_indices)


def gather(
    operand: Any,
    start_indices: Any,
    dimension_numbers: GatherDimensionNumbers,
    slice_sizes: Sequence[int],
    *,
    unique_indices: bool = False,
    indices_are_sorted: bool = False,
    mode: str | GatherScatterMode | None = None,
    fill_value: Any = None,
) -> Any:
    """XLA Gather: slices of ``slice_sizes`` at the positions given by ``start_indices`` (whose last
    dimension is the index vector). ``mode=None`` means ``PROMISE_IN_BOUNDS`` (as jax 0.10);
    under ``FILL_OR_DROP`` out-of-bounds windows read ``fill_value`` (default NaN for inexact
    dtypes, the minimum of signed / maximum of unsigned integers, True for bool)."""
    parsed = GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else GatherScatterMode.from_any(mode)
    if parsed == GatherScatterMode.FILL_OR_DROP:
        if fill_value is None:
            fill_value = _default_fill_value(core.get_aval(operand).dtype)
        else:
            fill_value = _canon_fill(core.concrete_or_error(fill_value, "gather fill_value"))
    else:
        fill_value = None
    return _bind(
        gather_p,
        operand,
        start_indices,
        dimension_numbers=_canon_gather_dnums(dimension_numbers),
        slice_sizes=_tup(slice_sizes),
        indices_are_sorted=bool(indices_are_sorted),
        unique_indices=bool(unique_indices),
        mode=parsed,
        fill_value=fill_value,
    )


def _scatter_wrapper(prim: Primitive, doc: str) -> Callable:
    def f(
        operand: Any,
        scatter_indices: Any,
        updates: Any,
        dimension_numbers: ScatterDimensionNumbers,
        *,
        indices_are_sorted: bool = False,
        unique_indices: bool = False,
        mode: str | GatherScatterMode | None = None,
    ) -> Any:
        return _bind(
            prim,
            operand,
            scatter_indices,
            updates,
            dimension_numbers=_canon_scatter_dnums(dimension_numbers),
            indices_are_sorted=bool(indices_are_sorted),
            unique_indices=bool(unique_indices),
            mode=GatherScatterMode.from_any(mode),
        )

    f.__name__ = f.__qualname__ = prim.name.replace("-", "_")
    f.__doc__ = doc + (
        " ``mode=None`` means ``FILL_OR_DROP``: windows partly out of bounds are dropped. The "
        "last dimension of ``scatter_indices`` is the index vector."
    )
    return f


scatter = _scatter_wrapper(
    scatter_p,
    "XLA Scatter replacing operand elements with ``updates`` (with duplicate "
    "indices, the last update in row-major index order wins).",
)
scatter_add = _scatter_wrapper(scatter_add_p, "XLA Scatter adding ``updates`` into ``operand``.")
scatter_mul = _scatter_wrapper(scatter_mul_p, "XLA Scatter multiplying ``operand`` by ``updates``.")
scatter_min = _scatter_wrapper(scatter_min_p, "XLA Scatter taking the elementwise minimum with ``updates``.")
scatter_max = _scatter_wrapper(scatter_max_p, "XLA Scatter taking the elementwise maximum with ``updates``.")
