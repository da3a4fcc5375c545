"""``fjax.numpy``'s padding (``pad`` and its modes) and the index-driven shape functions:
``take``, ``take_along_axis``, ``insert``, ``delete`` and ``trace`` (JAX semantics).

Split from ``fjax/numpy/_shape.py`` for size; ``_shape.py`` re-exports every name defined here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fjax import core, dtypes
from fjax.core import Array, ShapedArray, Tracer
from fjax.dtypes import kind as _dkind
from fjax.lax import lax
from fjax.numpy import _util
from fjax.numpy._indexing import _INDEX_DTYPE, broadcast_to_error, getitem
from fjax.numpy._shape import (
    _arr,
    _axis,
    _concat,
    _slicing,
    _static_int,
    moveaxis,
)

# --------------------------------------------------------------------------------------------
# padding


def _pairs(name: str, vals: Any, nd: int) -> np.ndarray:
    """``vals`` as an (nd, 2) array from the shapes JAX's jnp.pad takes: (nd, 2), (1, 2), (2,), (1,), ()."""
    v = np.asarray(vals)
    if v.shape not in ((nd, 2), (1, 2), (2,), (1,), ()):
        raise ValueError(
            f"jnp.pad: {name} with nd={nd} has unsupported shape {v.shape}. Valid shapes are ({nd}, 2), (1, 2), "
            "(2,), (1,), or ()."
        )
    return np.broadcast_to(v.reshape((1,) * (2 - v.ndim) + v.shape) if v.ndim < 2 else v, (nd, 2))


def _pad_widths(fn: str, pad_width: Any, nd: int) -> np.ndarray:
    return _pairs("pad_width", core.concrete_or_error(pad_width, f"pad_width argument of jnp.{fn}"), nd)


def _pad_ints(pw: np.ndarray) -> list[tuple[int, int]]:
    # float widths are refused even when integer-valued (JAX does; numpy takes them)
    if _dkind(pw.dtype) not in "iu" and pw.size:
        raise TypeError("`pad_width` must be of integral type.")
    if np.any(pw < 0):
        raise ValueError("index can't contain negative values")
    return [(int(b), int(e)) for b, e in pw]


def _pad_index(mode: str, n: int, before: int, after: int) -> np.ndarray:
    k = np.arange(-before, n + after)
    if mode == "edge":
        return np.clip(k, 0, n - 1)
    if mode == "wrap":
        return np.mod(k, n)
    if mode == "symmetric":
        j = np.mod(k, 2 * n)
        return np.where(j < n, j, 2 * n - 1 - j)
    if mode == "reflect":
        if n == 1:
            return np.zeros_like(k)
        j = np.mod(k, 2 * n - 2)
        return np.where(j < n, j, 2 * n - 2 - j)
    raise AssertionError(mode)


def _pad_constant(a: Any, widths: list[tuple[int, int]], cv: Any) -> Any:
    cvals = (
        np.asarray(core.concrete_or_error(cv, "constant_values argument of pad"))
        if not isinstance(cv, Tracer)
        else None
    )
    sl = _slicing()
    if cvals is not None and cvals.ndim == 0 or (cvals is not None and cvals.size == 1):
        val = Array(np.asarray(cvals.reshape(())).astype(a.dtype), False)
        if not any(b or e for b, e in widths):
            return a
        return sl.pad(a, val, [(b, e, 0) for b, e in widths])
    if cvals is None:
        cvt = lax.convert_element_type(cv, a.dtype)
        if cvt.ndim == 0:
            return sl.pad(a, cvt, [(b, e, 0) for b, e in widths])
        cv_pairs = None
        cvt_b = _util.broadcast_to_shape(cvt, (a.ndim, 2)) if cvt.ndim <= 2 else None
        if cvt_b is None:
            raise ValueError("pad: constant_values must broadcast to (ndim, 2)")
        cv_pairs = [(getitem(cvt_b, (i, 0)), getitem(cvt_b, (i, 1))) for i in range(a.ndim)]
    else:
        if cvals.ndim in (1, 2) and cvals.shape[-1] not in (1, 2):
            raise ValueError(
                f"jnp.pad: constant_values has unsupported shape {cvals.shape}. If the shape is 1D or 2D, the last "
                "dimension must be of size 1 or 2."
            )
        err = broadcast_to_error(ShapedArray(cvals.shape, np.dtype(a.dtype)), (a.ndim, 2))
        if err is not None:
            raise err
        c = np.broadcast_to(cvals, (a.ndim, 2)).astype(a.dtype)
        cv_pairs = [(Array(np.asarray(c[i, 0]), False), Array(np.asarray(c[i, 1]), False)) for i in range(a.ndim)]
    for i, (b, e) in enumerate(widths):
        cfg = [(0, 0, 0)] * a.ndim
        if b:
            cfg[i] = (b, 0, 0)
            a = sl.pad(a, cv_pairs[i][0], cfg)
        if e:
            cfg[i] = (0, e, 0)
            a = sl.pad(a, cv_pairs[i][1], cfg)
    return a


def _pad_linear_ramp(a: Any, widths: list[tuple[int, int]], end_values: Any) -> Any:
    """JAX's linear_ramp, step for step: along each axis in turn, ``linspace(end_value, edge, width,
    endpoint=False)`` in the array's dtype before, and the mirror of one after."""
    from fjax.numpy import _creation  # noqa: PLC0415

    ev = np.asarray(core.concrete_or_error(end_values, "end_values argument of jnp.pad"))
    try:
        ev = np.broadcast_to(ev, (a.ndim, 2))
    except ValueError:
        raise TypeError(f"`end_values` entries must be the same shape: {end_values}") from None
    for axis, (before, after) in enumerate(widths):
        edges = (lax.slice_in_dim(a, 0, 1, axis=axis), lax.slice_in_dim(a, a.shape[axis] - 1, None, axis=axis))
        ramps = []
        for end, edge, width in zip(ev[axis], edges, (before, after)):
            r = _creation.linspace(end, lax.squeeze(edge, (axis,)), width, endpoint=False, dtype=a.dtype, axis=axis)
            ramps.append(lax._convert_element_type_weak(r, a.dtype, a.weak_type))
        a = lax.concatenate([ramps[0], a, lax.rev(ramps[1], (axis,))], axis)
    return a


def pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Any:
    """Pad an array (numpy.pad semantics).

    Modes: ``constant`` (``constant_values``), ``edge``, ``reflect`` and ``symmetric``
    (``reflect_type='even'``), ``wrap``, ``maximum``/``minimum``/``mean`` (whole axis, no
    ``stat_length``), ``empty`` (zeros), ``linear_ramp`` (``end_values``).
    """
    a = _arr("pad", array)
    pw = _pad_widths("pad", pad_width, a.ndim)  # JAX's order: the widths' shape, the mode, their values
    if callable(mode):
        raise NotImplementedError("pad: callable modes are not supported by fjax")
    allowed = {
        "constant": {"constant_values"},
        "edge": set(),
        "wrap": set(),
        "reflect": {"reflect_type"},
        "symmetric": {"reflect_type"},
        "maximum": {"stat_length"},
        "minimum": {"stat_length"},
        "mean": {"stat_length"},
        "empty": set(),
        "linear_ramp": {"end_values"},
    }
    if mode not in allowed:
        raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad.")
    bad = set(kwargs) - allowed[mode]
    if bad:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {bad}")
    widths = _pad_ints(pw)
    if mode == "constant":
        return _pad_constant(a, widths, kwargs.get("constant_values", 0))
    if mode == "empty":
        return _pad_constant(a, widths, 0)
    if mode == "linear_ramp":
        return _pad_linear_ramp(a, widths, kwargs.get("end_values", 0))
    if kwargs.get("reflect_type", "even") != "even":
        raise NotImplementedError("pad: reflect_type='odd' is not supported by fjax")
    if kwargs.get("stat_length") is not None:
        raise NotImplementedError("pad: stat_length is not supported by fjax")
    for i, (b, e) in enumerate(widths):
        if not (b or e):
            continue
        n = a.shape[i]
        if n == 0:
            raise ValueError(f"Cannot apply '{mode}' padding to empty axis")
        pre = (slice(None),) * i
        if mode in ("maximum", "minimum", "mean"):
            if mode == "maximum":
                st = lax.reduce_max(a, (i,))
            elif mode == "minimum":
                st = lax.reduce_min(a, (i,))
            else:
                from fjax.numpy import _reductions  # noqa: PLC0415

                st = _reductions.mean(a, axis=i)
                if _dkind(a.dtype) in "iub":
                    from fjax.numpy import _ufuncs  # noqa: PLC0415

                    st = _ufuncs.round(st)
                st = lax.convert_element_type(st, a.dtype)
            st = lax.expand_dims(st, (i,))
            parts = []
            if b:
                parts.append(_util.broadcast_to_shape(st, tuple(a.shape[:i]) + (b,) + tuple(a.shape[i + 1 :])))
            parts.append(a)
            if e:
                parts.append(_util.broadcast_to_shape(st, tuple(a.shape[:i]) + (e,) + tuple(a.shape[i + 1 :])))
            a = _concat(parts, i)
            continue
        idx = _pad_index(mode, n, b, e).astype(_INDEX_DTYPE)
        a = getitem(a, pre + (idx,))
    return a


# --------------------------------------------------------------------------------------------
# take, insert, delete, trace


def _take_mode(fn: str, mode: Any) -> str:
    if mode is None or mode == "fill":
        return "fill"
    if mode in ("clip", "wrap"):
        return mode
    if mode == "raise":
        raise NotImplementedError(f"The 'raise' mode to jnp.{fn} is not supported.")
    raise ValueError(f"Invalid mode '{mode}' for np.{fn}")


def take(
    a: Any,
    indices: Any,
    axis: int | None = None,
    out: None = None,
    mode: str | None = None,
    unique_indices: bool = False,
    indices_are_sorted: bool = False,
    fill_value: Any = None,
) -> Any:
    """Elements of ``a`` at ``indices`` along ``axis`` (of the flattened array if None).

    ``mode``: ``"fill"`` (default: out-of-bounds indices give ``fill_value``, NaN for inexact
    dtypes), ``"clip"`` or ``"wrap"``. Negative indices count from the end.
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.take is not supported.")
    x = _arr("take", a)
    _util.check_arraylike("take", indices)
    idx = _util.to_fjax(indices, "take")
    if _dkind(idx.dtype) not in "iu":
        raise ValueError("indices must have an integer type")
    if axis is None:
        x = lax.reshape(x, (x.size,))
        axis = 0
    ax = _axis("take", axis, x.ndim)
    m = _take_mode("take", mode)
    n = x.shape[ax]
    if m == "wrap":
        if n == 0:
            raise IndexError("take: cannot do a non-empty take from an empty axis with mode='wrap'")
        idx = _wrap_idx(idx, n)
        gm = "promise_in_bounds"
    else:
        gm = m
    pre = (slice(None),) * ax
    if idx.ndim == 0:
        idx = lax.reshape(idx, (1,))
        res = getitem(
            x,
            pre + (idx,),
            mode=gm,
            fill_value=fill_value,
            unique_indices=unique_indices,
            indices_are_sorted=indices_are_sorted,
        )
        return lax.squeeze(res, (ax,))
    return getitem(
        x,
        pre + (idx,),
        mode=gm,
        fill_value=fill_value,
        unique_indices=unique_indices,
        indices_are_sorted=indices_are_sorted,
    )


def _wrap_idx(idx: Any, n: int) -> Any:
    if type(idx) is Array:
        return Array(np.mod(idx._value.astype(np.int64), n).astype(_INDEX_DTYPE), False)
    i = lax.convert_element_type(idx, _INDEX_DTYPE)
    nn = Array(np.array(n, _INDEX_DTYPE), False)
    r = lax.rem(i, nn)
    return lax.select(lax.lt(r, Array(np.array(0, _INDEX_DTYPE), False)), lax.add(r, nn), r)


def take_along_axis(
    arr: Any,
    indices: Any,
    axis: int | None = -1,
    mode: str | None = None,
    fill_value: Any = None,
    *,
    wrap_negative_indices: bool | None = None,
) -> Any:
    """Pick values along ``axis`` at ``indices`` (same ndim as ``arr``; other dims broadcast).

    Default ``mode="fill"`` gives ``fill_value`` (NaN for inexact dtypes) for out-of-bounds
    indices; ``"clip"`` clamps them. ``wrap_negative_indices``: whether negative indices count from
    the end (default: yes, unless ``mode="promise_in_bounds"``, as JAX); when not, they are out of
    bounds (filled, or clamped to 0).
    """
    x = _arr("take_along_axis", arr)
    _util.check_arraylike("take_along_axis", indices)
    idx = _util.to_fjax(indices, "take_along_axis")
    if _dkind(idx.dtype) not in "iu":
        raise TypeError(f"take_along_axis indices must be of integer type, got {idx.dtype}")
    if axis is None:
        if idx.ndim != 1:
            raise ValueError(f"take_along_axis: when axis=None, indices must be 1-D, got shape {tuple(idx.shape)}")
        x = lax.reshape(x, (x.size,))
        axis = 0
    if idx.ndim != x.ndim:
        raise ValueError(f"indices and arr must have the same number of dimensions; {idx.ndim} vs. {x.ndim}")
    ax = _axis("take_along_axis", axis, x.ndim)
    m = "fill" if mode is None else mode
    if wrap_negative_indices is None:
        wrap_negative_indices = m != "promise_in_bounds"
    if m != "wrap" and _dkind(idx.dtype) == "i":
        idx = _negative_indices(idx, x.shape[ax], m, bool(wrap_negative_indices))
    if m == "wrap":
        idx = _wrap_idx(idx, x.shape[ax])
        m = "promise_in_bounds"
    out_shape = []
    for d in range(x.ndim):
        if d == ax:
            out_shape.append(idx.shape[d])
            continue
        s, t = x.shape[d], idx.shape[d]
        if s != t and s != 1 and t != 1:
            # JAX broadcasts the indices against arr's shape with its axis ``ax`` set to 1
            arr_shape = tuple(1 if i == ax else n for i, n in enumerate(x.shape))
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={[tuple(idx.shape), arr_shape]}")
        out_shape.append(max(s, t) if s and t else 0)
    full_idx: list[Any] = []
    for d in range(x.ndim):
        if d == ax:
            full_idx.append(idx)
            continue
        shp = [1] * x.ndim
        if x.shape[d] == 1:
            full_idx.append(np.zeros(shp, _INDEX_DTYPE))
        else:
            shp[d] = x.shape[d]
            full_idx.append(np.arange(x.shape[d], dtype=_INDEX_DTYPE).reshape(shp))
    return getitem(x, tuple(full_idx), mode=m, fill_value=fill_value)


def _negative_indices(idx: Any, n: int, mode: str, wrap: bool) -> Any:
    """``take_along_axis``'s negative indices: counted from the end once (``wrap``, as JAX: -n-1 stays
    negative); those left are out of bounds: clamped to 0 (``clip``, and ``promise_in_bounds`` as
    XLA's CPU gather does) or filled."""
    if np.iinfo(idx.dtype).max < n:
        idx = lax.convert_element_type(idx, np.int32)
    zero = lax.full((), 0, idx.dtype)
    neg = lax.lt(idx, lax.full(idx.shape, 0, idx.dtype))
    if wrap:
        idx = lax.select(neg, lax.add(idx, lax.full(idx.shape, n, idx.dtype)), idx)
        neg = lax.lt(idx, lax.full(idx.shape, 0, idx.dtype))
    if mode in ("clip", "promise_in_bounds"):
        return lax.max(idx, zero)
    return lax.select(neg, lax.full(idx.shape, n, idx.dtype), idx)  # (out of bounds: filled)


def insert(arr: Any, obj: Any, values: Any, axis: int | None = None) -> Any:
    """Insert ``values`` before the given indices (concrete ``obj``: int, slice or 1-D ints)."""
    a = _arr("insert", arr)
    _util.check_arraylike("insert", values)
    v = _util.to_fjax(values, "insert")
    if axis is None:
        a = lax.reshape(a, (a.size,))
        axis = 0
    ax = _axis("insert", axis, a.ndim)
    n = a.shape[ax]
    if isinstance(obj, slice):
        ind = np.arange(*obj.indices(n))
    else:
        ind = np.asarray(core.concrete_or_error(obj, "obj argument of jnp.insert()"))
    if ind.ndim > 1:
        raise ValueError(f"jnp.insert(): obj must be a slice, a one-dimensional array, or a scalar; got {obj}")
    if _dkind(ind.dtype) not in "iu":
        if ind.size == 0:
            ind = ind.astype(np.int64)
        else:
            raise ValueError(f"jnp.insert(): index array must be integer typed; got {obj}")
    v = lax.convert_element_type(v, a.dtype) if v.dtype != a.dtype else v
    if v.ndim < a.ndim:
        v = lax.reshape(v, (1,) * (a.ndim - v.ndim) + tuple(v.shape))
    if ind.size == 1:
        index = int(ind.ravel()[0])
        if ind.ndim == 0:
            v = moveaxis(v, 0, ax)
        ind = np.full(v.shape[ax], index)
    n_insert = _util.broadcast_shapes("insert", ind.shape, (v.shape[ax],))[0]
    ind = np.broadcast_to(ind, (n_insert,)).astype(np.int64)
    ind = np.clip(np.where(ind < 0, ind + n, ind), 0, n)
    order = np.argsort(ind, kind="stable")
    values_ind = ind.copy()
    values_ind[order] += np.arange(n_insert)
    mask = np.ones(n + n_insert, bool)
    mask[values_ind] = False
    arr_ind = np.nonzero(mask)[0]
    out_shape = list(a.shape)
    out_shape[ax] += n_insert
    out = lax.full_like(a, 0, shape=tuple(out_shape))
    pre = (slice(None),) * ax
    from fjax.numpy._indexing import _scatter_update  # noqa: PLC0415

    out = _scatter_update(out, pre + (values_ind.astype(_INDEX_DTYPE),), v, "set", fn_name="insert")
    out = _scatter_update(out, pre + (arr_ind.astype(_INDEX_DTYPE),), a, "set", fn_name="insert")
    return out


def delete(arr: Any, obj: Any, axis: int | None = None, *, assume_unique_indices: bool = False) -> Any:
    """Remove the entries at ``obj`` (concrete int, slice, int array or boolean mask) along ``axis``."""
    a = _arr("delete", arr)
    if axis is None:
        a = lax.reshape(a, (a.size,))
        axis = 0
    ax = _axis("delete", axis, a.ndim)
    n = a.shape[ax]
    pre = (slice(None),) * ax
    if isinstance(obj, (int, np.integer)):
        i = _util.canonicalize_axis(obj, n, "delete") if n else None
        if i is None:
            raise IndexError(f"delete: index {obj} is out of bounds for axis {ax} with size 0")
        return _concat([getitem(a, pre + (slice(0, i),)), getitem(a, pre + (slice(i + 1, None),))], ax)
    if isinstance(obj, slice):
        keep = np.delete(np.arange(n), obj)
    else:
        o = np.asarray(core.concrete_or_error(obj, "obj argument of jnp.delete()"))
        if o.dtype == np.bool_:
            if o.shape != (n,):
                raise ValueError(
                    f"np.delete(arr, obj): for boolean indices, obj must be one-dimensional with length "
                    f"matching specified axis; got obj.shape={o.shape}, axis size {n}"
                )
            keep = np.nonzero(~o)[0]
        elif o.size == 0:
            keep = np.arange(n)
        elif _dkind(o.dtype) not in "iu":
            raise ValueError(f"jnp.delete(): index array must be integer typed; got {obj}")
        else:
            o = o.ravel().astype(np.int64)
            if np.any((o < -n) | (o >= n)):
                raise IndexError(f"delete: index out of bounds for axis {ax} with size {n}: {obj}")
            keep = np.delete(np.arange(n), np.where(o < 0, o + n, o))
    return getitem(a, pre + (keep.astype(_INDEX_DTYPE),))


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: None = None) -> Any:
    """Sum of the ``offset`` diagonal over ``axis1``/``axis2`` (the dtype follows jnp.sum)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.trace is not supported.")
    if dtype is not None:
        dtype = dtypes.canonicalize_user_dtype(getattr(dtype, "_np_type", dtype), "trace")
    x = _arr("trace", a)
    # (on a 1-D array, JAX's message is that of the out-of-range axis2)
    a1, a2 = _axis("trace", axis1, x.ndim), _axis("trace", axis2, x.ndim)
    if a1 == a2:
        raise ValueError(f"trace: axis1 and axis2 cannot be the same, got {axis1} and {axis2}")
    offset = _static_int(offset, "offset argument of trace")
    x = moveaxis(x, (a1, a2), (-2, -1))
    n, m = x.shape[-2], x.shape[-1]
    if offset >= 0:
        k = max(0, min(n, m - offset))
        rows, cols = np.arange(k), np.arange(k) + offset
    else:
        k = max(0, min(n + offset, m))
        rows, cols = np.arange(k) - offset, np.arange(k)
    diag = getitem(x, (Ellipsis, rows.astype(_INDEX_DTYPE), cols.astype(_INDEX_DTYPE)))
    from fjax.numpy import _reductions  # noqa: PLC0415

    return _reductions.sum(diag, axis=-1, dtype=dtype)
