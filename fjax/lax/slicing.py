"""Slicing, padding, concatenation, dynamic slicing, gather and the scatter family.

One block per primitive (definition, then its jvp/transpose/batching rules), as in ``lax.py``.
Semantics follow XLA/JAX 0.10 ``jax.lax``:

* ``dynamic_slice``/``dynamic_update_slice`` clamp their start indices so the slice fits; the
  public wrappers first map negative indices to ``index + dim`` (``allow_negative_indices``).
* ``gather``/``scatter*`` carry XLA's general dimension numbers, including
  ``operand_batching_dims``; the index vector is always the last dimension of the indices.
  Modes: ``CLIP`` clamps each window's start; ``FILL_OR_DROP`` fills a gathered window (with
  ``fill_value``) / drops a scattered window when any part of it is out of bounds;
  ``PROMISE_IN_BOUNDS`` leaves out-of-bounds behaviour unspecified: here (as XLA on CPU) gather
  clamps and scatter drops. ``lax.gather`` defaults to ``PROMISE_IN_BOUNDS`` and the scatters to
  ``FILL_OR_DROP`` (checked against jax 0.10.2).
* ``scatter`` (replace) with duplicate indices is deterministic here: the update that comes last
  in row-major order over the indices' batch dimensions wins. Its JVP and transpose use the same
  rule (the transpose finds the winners by scattering update ids), so they agree with the primal.
* ``scatter-mul`` is differentiable w.r.t. ``updates`` only with ``unique_indices=True`` (as JAX);
  ``scatter-min``/``scatter-max`` split the tangent evenly between ties (as ``reduce_max``).
"""

from __future__ import annotations

import bisect
import enum
import math
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from fjax import core, dtypes
from fjax.backends.registry import HOST, INDEXING, register_lowering
from fjax.core import Primitive, ShapedArray
from fjax.dtypes import kind as _dkind
from fjax.interpreters import ad, batching
from fjax.interpreters.ad import Zero, is_undefined_primal
from fjax.lax import lax

_bind = core.bind1
_pyslice = slice  # the builtin (``slice`` below is lax.slice)


def _aval(x: Any) -> ShapedArray:
    return x.aval if is_undefined_primal(x) else core.get_aval(x)


def _dt(a: Any) -> str:
    return f"{core.short_dtype_name(a.dtype)}{list(a.shape)}"


def _zeros(aval: ShapedArray) -> Any:
    return lax.full(aval.shape, 0, aval.dtype)


def _int_scalar(val: int, dtype: Any) -> core.Array:
    return core.Array(np.array(val, dtype=dtype), False)


def _check_same_dtype(name: str, *avals: Any) -> None:
    dt = avals[0].dtype
    if any(a.dtype != dt for a in avals):
        dts = ", ".join(a.dtype.name for a in avals)
        raise TypeError(
            f"lax.{name} requires arguments to have the same dtypes, got {dts}. "
            f"(Tip: jnp.{name} is a similar function that does automatic type promotion on inputs)."
        )


# ---------------------------------------------------------------------------------------------
# slice


def _slice_abstract(x: Any, *, start_indices: tuple, limit_indices: tuple, strides: tuple | None) -> ShapedArray:
    nd = x.ndim
    if len(start_indices) != nd:
        raise TypeError(
            f"slice start_indices must have length equal to the number of dimensions of the operand, "
            f"got indices {start_indices} for operand shape {x.shape}."
        )
    if len(limit_indices) != nd:
        raise TypeError(
            f"slice limit_indices must have the same length as start_indices, got start_indices "
            f"{start_indices} and limit_indices {limit_indices}."
        )
    if any(lim > s for lim, s in zip(limit_indices, x.shape)):
        raise TypeError(
            f"slice limit_indices must be less than or equal to operand shape, got limit_indices "
            f"{limit_indices} for operand shape {x.shape}."
        )
    if any(s < 0 for s in start_indices):
        raise TypeError(
            f"slice start_indices must be greater than or equal to zero, got start_indices {start_indices}."
        )
    if any(lim < s for s, lim in zip(start_indices, limit_indices)):
        raise TypeError(
            f"slice limit_indices must be greater than or equal to start_indices, got start_indices "
            f"{start_indices} and limit_indices {limit_indices}."
        )
    st = (1,) * nd if strides is None else strides
    if len(st) != nd:
        raise TypeError(
            f"slice strides must have length equal to the number of dimensions of the operand, got "
            f"strides {strides} for operand shape {x.shape}."
        )
    if any(s <= 0 for s in st):
        raise TypeError(f"slice strides must be positive, got {strides}")
    shape = tuple((lim - s + k - 1) // k if lim > s else 0 for s, lim, k in zip(start_indices, limit_indices, st))
    return ShapedArray(shape, x.dtype, x.weak_type)


def _slice_impl(x: np.ndarray, *, start_indices: tuple, limit_indices: tuple, strides: tuple | None) -> np.ndarray:
    st = (1,) * x.ndim if strides is None else strides
    return x[tuple(_pyslice(s, lim, k) for s, lim, k in zip(start_indices, limit_indices, st))]


slice_p = Primitive("slice")
slice_p.def_impl(_slice_impl)
slice_p.def_abstract_eval(_slice_abstract)
register_lowering(slice_p, INDEXING)


def _slice_transpose(ct: Any, x: Any, *, start_indices: tuple, limit_indices: tuple, strides: tuple | None) -> list:
    if type(ct) is Zero:
        return [None]
    shape = x.aval.shape
    st = (1,) * len(shape) if strides is None else strides
    out_shape = core.get_aval(ct).shape
    cfg = []
    for s, k, n, d in zip(start_indices, st, out_shape, shape):
        used = n + max(n - 1, 0) * (k - 1)
        cfg.append((s, d - s - used, k - 1))
    return [pad(ct, lax._const(ct, 0), cfg)]


def _slice_batch(vals: list, dims: list, *, start_indices: tuple, limit_indices: tuple, strides: tuple | None) -> tuple:
    (x,), (d,) = vals, dims
    size = core.get_aval(x).shape[d]
    si = start_indices[:d] + (0,) + start_indices[d:]
    li = limit_indices[:d] + (size,) + limit_indices[d:]
    st = None if strides is None else strides[:d] + (1,) + strides[d:]
    return slice_p.bind(x, start_indices=si, limit_indices=li, strides=st), d


ad.deflinear(slice_p, _slice_transpose)
batching.primitive_batchers[slice_p] = _slice_batch

# ---------------------------------------------------------------------------------------------
# pad


def _pad_abstract(x: Any, pv: Any, *, padding_config: tuple) -> ShapedArray:
    if x.dtype != pv.dtype:
        raise TypeError(f"pad operand and padding_value must be same dtype: got {x.dtype.name} and {pv.dtype.name}.")
    if pv.ndim != 0:
        raise TypeError(f"pad padding_value must be a scalar, got shape {pv.shape}.")
    if len(padding_config) != x.ndim:
        raise ValueError(
            f"length of padding_config must equal the number of axes of operand, got padding_config "
            f"{padding_config} for operand shape {x.shape}"
        )
    if any(i < 0 for _, _, i in padding_config):
        raise ValueError(f"interior padding in padding_config must be nonnegative, got padding_config {padding_config}")
    shape = tuple(lo + hi + n + max(n - 1, 0) * i for n, (lo, hi, i) in zip(x.shape, padding_config))
    if any(s < 0 for s in shape):
        raise ValueError(
            f"Dimension size after padding is not at least 0, got result shape {shape}, for "
            f"padding_config {padding_config} and operand shape {x.shape}"
        )
    return ShapedArray(shape, x.dtype, x.weak_type)


def _pad_impl(x: np.ndarray, pv: np.ndarray, *, padding_config: tuple) -> np.ndarray:
    full_shape = []
    for n, (lo, hi, i) in zip(x.shape, padding_config):
        full_shape.append(max(lo, 0) + max(hi, 0) + n + max(n - 1, 0) * i)
    out = np.full(full_shape, pv, dtype=x.dtype)
    dst = tuple(
        _pyslice(max(lo, 0), max(lo, 0) + n + max(n - 1, 0) * i, i + 1)
        for n, (lo, _, i) in zip(x.shape, padding_config)
    )
    out[dst] = x
    crop = tuple(_pyslice(max(-lo, 0), s - max(-hi, 0)) for s, (lo, hi, _) in zip(full_shape, padding_config))
    return out[crop]


pad_p = Primitive("pad")
pad_p.def_impl(_pad_impl)
pad_p.def_abstract_eval(_pad_abstract)
register_lowering(pad_p, INDEXING)


def _pad_transpose(ct: Any, x: Any, pv: Any, *, padding_config: tuple) -> list:
    if type(ct) is Zero:
        return [None, None]
    # undo low/high (negated: crops become zero pads and vice versa), then drop interior padding
    unpadded = pad(ct, lax._const(ct, 0), [(-lo, -hi, 0) for lo, hi, _ in padding_config])
    shp = core.get_aval(unpadded).shape
    t_x = slice(unpadded, (0,) * len(shp), shp, tuple(i + 1 for _, _, i in padding_config))
    t_x_out = t_x if is_undefined_primal(x) else None
    t_pv = None
    if is_undefined_primal(pv):
        nd = len(shp)
        t_pv = lax.sub(lax.reduce_sum(ct, tuple(range(nd))), lax.reduce_sum(t_x, tuple(range(nd))))
    return [t_x_out, t_pv]


def _pad_batch(vals: list, dims: list, *, padding_config: tuple, axis_size: int) -> tuple:
    x, pv = vals
    xd, pd = dims
    if pd is None:
        cfg = padding_config[:xd] + ((0, 0, 0),) + padding_config[xd:]
        return pad_p.bind(x, pv, padding_config=cfg), xd
    # batched padding value: pad with zeros, then select the padding positions from pv
    x = batching.bdim_at_front(x, xd, axis_size)
    cfg = ((0, 0, 0),) + padding_config
    padded = pad_p.bind(x, lax._const(x, 0), padding_config=cfg)
    out_shape = core.get_aval(padded).shape
    unb_shape = core.get_aval(x).shape[1:]
    mask = pad(lax.full(unb_shape, True, np.bool_), lax.full((), False, np.bool_), padding_config)
    mask = lax.broadcast_in_dim(mask, out_shape, tuple(range(1, len(out_shape))))
    pvb = lax.broadcast_in_dim(pv, out_shape, (0,))
    return lax.select(mask, padded, pvb), 0


ad.deflinear(pad_p, _pad_transpose)
batching.primitive_batchers[pad_p] = batching.wants_axis_size(_pad_batch)

# ---------------------------------------------------------------------------------------------
# concatenate


def _concatenate_abstract(*xs: Any, dimension: int) -> ShapedArray:
    if not xs:
        raise TypeError("concatenate requires a non-empty sequence of arrays")
    _check_same_dtype("concatenate", *xs)
    if len({x.ndim for x in xs}) != 1:
        raise TypeError(
            f"Cannot concatenate arrays with different numbers of dimensions: got "
            f"{', '.join(str(x.shape) for x in xs)}."
        )
    nd = xs[0].ndim
    if not 0 <= dimension < nd:
        raise TypeError(
            f"concatenate dimension out of bounds: dimension {dimension} for shapes "
            f"{', '.join(str(x.shape) for x in xs)}."
        )
    for x in xs:
        if any(a != b for i, (a, b) in enumerate(zip(x.shape, xs[0].shape)) if i != dimension):
            raise TypeError(
                f"Cannot concatenate arrays with shapes that differ in dimensions other than the one "
                f"being concatenated: concatenating along dimension {dimension} for shapes "
                f"{', '.join(str(y.shape) for y in xs)}."
            )
    shape = list(xs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(tuple(shape), xs[0].dtype, all(x.weak_type for x in xs))


concatenate_p = Primitive("concatenate")
concatenate_p.def_impl(lambda *xs, dimension: np.concatenate(xs, axis=dimension))
concatenate_p.def_abstract_eval(_concatenate_abstract)
register_lowering(concatenate_p, INDEXING)


def _concatenate_transpose(ct: Any, *xs: Any, dimension: int) -> list:
    if type(ct) is Zero:
        return [None] * len(xs)
    outs, start = [], 0
    for x in xs:
        n = _aval(x).shape[dimension]
        outs.append(slice_in_dim(ct, start, start + n, axis=dimension) if is_undefined_primal(x) else None)
        start += n
    return outs


def _concatenate_batch(vals: list, dims: list, *, dimension: int) -> tuple:
    d = next(dd for dd in dims if dd is not None)
    size = next(core.get_aval(v).shape[dd] for v, dd in zip(vals, dims) if dd is not None)
    xs = []
    for v, dd in zip(vals, dims):
        if dd is None:
            xs.append(batching._broadcast(v, size, d))
        else:
            xs.append(batching.moveaxis(v, dd, d))
    return concatenate_p.bind(*xs, dimension=dimension + 1 if dimension >= d else dimension), d


ad.deflinear(concatenate_p, _concatenate_transpose)
batching.primitive_batchers[concatenate_p] = _concatenate_batch

# ---------------------------------------------------------------------------------------------
# dynamic_slice and dynamic_update_slice


def _check_start_indices(name: str, operand: Any, idxs: Sequence[Any]) -> None:
    if len(idxs) != operand.ndim:
        raise TypeError(
            f"{name}: length of start indices must match number of operand dimensions ({len(idxs)} vs {operand.shape})"
        )
    if any(i.ndim != 0 for i in idxs):
        raise TypeError(f"{name}: start indices must be scalars, got shapes {[i.shape for i in idxs]}")
    if idxs and (any(_dkind(i.dtype) not in "iu" for i in idxs) or len({i.dtype for i in idxs}) != 1):
        raise TypeError(
            f"index arguments to {name} must be integers of the same type, got: {', '.join(i.dtype.name for i in idxs)}"
        )


def _dynamic_slice_abstract(x: Any, *idxs: Any, slice_sizes: tuple) -> ShapedArray:
    _check_start_indices("dynamic_slice", x, idxs)
    if len(slice_sizes) != x.ndim:
        raise TypeError(
            f"dynamic_slice slice_sizes must have the same length as the operand's rank, got "
            f"slice_sizes {slice_sizes} for operand shape {x.shape}."
        )
    if any(s > d for s, d in zip(slice_sizes, x.shape)):
        raise TypeError(
            f"dynamic_slice slice_sizes must be less than or equal to operand shape, got slice_sizes "
            f"{slice_sizes} for operand shape {x.shape}."
        )
    if any(s < 0 for s in slice_sizes):
        raise TypeError(f"dynamic_slice slice_sizes must be greater than or equal to zero, got {slice_sizes}.")
    return ShapedArray(slice_sizes, x.dtype, x.weak_type)


def _clamped_starts(shape: Sequence[int], sizes: Sequence[int], idxs: Sequence[np.ndarray]) -> list[int]:
    return [int(np.clip(np.asarray(i).astype(np.int64), 0, d - s)) for i, d, s in zip(idxs, shape, sizes)]


def _dynamic_slice_impl(x: np.ndarray, *idxs: np.ndarray, slice_sizes: tuple) -> np.ndarray:
    starts = _clamped_starts(x.shape, slice_sizes, idxs)
    return x[tuple(_pyslice(s, s + n) for s, n in zip(starts, slice_sizes))]


dynamic_slice_p = Primitive("dynamic_slice")
dynamic_slice_p.def_impl(_dynamic_slice_impl)
dynamic_slice_p.def_abstract_eval(_dynamic_slice_abstract)
register_lowering(dynamic_slice_p, INDEXING)


def _dynamic_slice_jvp(primals: list, tangents: list, *, slice_sizes: tuple) -> tuple:
    x, *idxs = primals
    out = dynamic_slice_p.bind(x, *idxs, slice_sizes=slice_sizes)
    if type(tangents[0]) is Zero:
        return out, Zero(ad.tangent_aval(core.get_aval(out)))
    return out, dynamic_slice_p.bind(tangents[0], *idxs, slice_sizes=slice_sizes)


def _dynamic_slice_transpose(ct: Any, x: Any, *idxs: Any, slice_sizes: tuple) -> list:
    if any(is_undefined_primal(i) for i in idxs):
        raise ValueError("dynamic_slice is not linear in its start indices")
    if type(ct) is Zero or not is_undefined_primal(x):
        return [None] * (1 + len(idxs))
    return [dynamic_update_slice_p.bind(_zeros(x.aval), ct, *idxs)] + [None] * len(idxs)


def _index_column(i: Any, d: int | None, size: int, dtype: Any) -> Any:
    """A scalar start index (batched at ``d`` or not) as a (size, 1) array of ``dtype``."""
    i = lax.convert_element_type(i, dtype)
    if d is None:
        return lax.broadcast_in_dim(i, (size, 1), ())
    return lax.reshape(i, (size, 1))


def _batched_start_indices(idxs: Sequence[Any], ids: Sequence[int | None], size: int) -> Any:
    dt = core.get_aval(idxs[0]).dtype
    return concatenate([_index_column(i, d, size, dt) for i, d in zip(idxs, ids)], 1)


def _dynamic_slice_batch(vals: list, dims: list, *, slice_sizes: tuple, axis_size: int) -> tuple:
    x, *idxs = vals
    xd, *ids = dims
    if all(d is None for d in ids):
        # only the operand is batched: slice the whole batch axis where it is
        dt = core.get_aval(idxs[0]).dtype if idxs else np.int32
        new_idxs = idxs[:xd] + [_int_scalar(0, dt)] + idxs[xd:]
        ss = slice_sizes[:xd] + (axis_size,) + slice_sizes[xd:]
        return dynamic_slice_p.bind(x, *new_idxs, slice_sizes=ss), xd
    # batched start indices: a gather with clamped windows (operand batch axis as a batching dim)
    index = _batched_start_indices(idxs, ids, axis_size)
    nd = len(slice_sizes)
    if xd is None:
        dn = GatherDimensionNumbers(tuple(range(1, nd + 1)), (), tuple(range(nd)))
        ss = slice_sizes
    else:
        dn = GatherDimensionNumbers(
            tuple(range(1, nd + 1)), (), tuple(d for d in range(nd + 1) if d != xd), (xd,), (0,)
        )
        ss = slice_sizes[:xd] + (1,) + slice_sizes[xd:]
    return gather_p.bind(
        x,
        index,
        dimension_numbers=dn,
        slice_sizes=ss,
        indices_are_sorted=False,
        unique_indices=False,
        mode=GatherScatterMode.CLIP,
        fill_value=None,
    ), 0


ad.primitive_jvps[dynamic_slice_p] = _dynamic_slice_jvp
ad.primitive_transposes[dynamic_slice_p] = _dynamic_slice_transpose
batching.primitive_batchers[dynamic_slice_p] = batching.wants_axis_size(_dynamic_slice_batch)


def _dynamic_update_slice_abstract(x: Any, upd: Any, *idxs: Any) -> ShapedArray:
    _check_start_indices("dynamic_update_slice", x, idxs)
    if x.dtype != upd.dtype:
        raise TypeError(
            f"dynamic_update_slice update and operand must have the same dtype, got operand "
            f"{_dt(x)} and update {_dt(upd)}."
        )
    if upd.ndim != x.ndim:
        raise TypeError(
            f"dynamic_update_slice update must have the same rank as operand, got update shape "
            f"{upd.shape} for operand shape {x.shape}."
        )
    if any(u > d for u, d in zip(upd.shape, x.shape)):
        raise TypeError(
            f"dynamic_update_slice update shape must be smaller than operand shape, got update shape "
            f"{upd.shape} for operand shape {x.shape}."
        )
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def _dynamic_update_slice_impl(x: np.ndarray, upd: np.ndarray, *idxs: np.ndarray) -> np.ndarray:
    starts = _clamped_starts(x.shape, upd.shape, idxs)
    out = np.array(x, copy=True)
    out[tuple(_pyslice(s, s + n) for s, n in zip(starts, upd.shape))] = upd
    return out


dynamic_update_slice_p = Primitive("dynamic_update_slice")
dynamic_update_slice_p.def_impl(_dynamic_update_slice_impl)
dynamic_update_slice_p.def_abstract_eval(_dynamic_update_slice_abstract)


def _dynamic_update_slice_jvp(primals: list, tangents: list) -> tuple:
    x, upd, *idxs = primals
    tx, tu = tangents[:2]
    out = dynamic_update_slice_p.bind(x, upd, *idxs)
    if type(tx) is Zero and type(tu) is Zero:
        return out, Zero(ad.tangent_aval(core.get_aval(out)))
    return out, dynamic_update_slice_p.bind(ad.instantiate_zeros(tx), ad.instantiate_zeros(tu), *idxs)


def _dynamic_update_slice_transpose(ct: Any, x: Any, upd: Any, *idxs: Any) -> list:
    if any(is_undefined_primal(i) for i in idxs):
        raise ValueError("dynamic_update_slice is not linear in its start indices")
    none = [None] * len(idxs)
    if type(ct) is Zero:
        return [None, None] + none
    ua = _aval(upd)
    ct_x = dynamic_update_slice_p.bind(ct, _zeros(ua), *idxs) if is_undefined_primal(x) else None
    ct_u = dynamic_slice_p.bind(ct, *idxs, slice_sizes=ua.shape) if is_undefined_primal(upd) else None
    return [ct_x, ct_u] + none


def _dynamic_update_slice_batch(vals: list, dims: list, *, axis_size: int) -> tuple:
    x, upd, *idxs = vals
    xd, ud, *ids = dims
    d = xd if xd is not None else (ud if ud is not None else 0)
    x = batching._broadcast(x, axis_size, d) if xd is None else x
    upd = batching._broadcast(upd, axis_size, d) if ud is None else batching.moveaxis(upd, ud, d)
    if all(i is None for i in ids):
        dt = core.get_aval(idxs[0]).dtype if idxs else np.int32
        new_idxs = idxs[:d] + [_int_scalar(0, dt)] + idxs[d:]
        return dynamic_update_slice_p.bind(x, upd, *new_idxs), d
    # batched start indices: a clamped scatter with the batch axis as a batching dim
    index = _batched_start_indices(idxs, ids, axis_size)
    upd = batching.moveaxis(upd, d, 0)
    nd = len(idxs)
    dn = ScatterDimensionNumbers(tuple(range(1, nd + 1)), (), tuple(k for k in range(nd + 1) if k != d), (d,), (0,))
    return scatter_p.bind(
        x, index, upd, dimension_numbers=dn, indices_are_sorted=True, unique_indices=True, mode=GatherScatterMode.CLIP
    ), d


ad.primitive_jvps[dynamic_update_slice_p] = _dynamic_update_slice_jvp
ad.primitive_transposes[dynamic_update_slice_p] = _dynamic_update_slice_transpose
batching.primitive_batchers[dynamic_update_slice_p] = batching.wants_axis_size(_dynamic_update_slice_batch)

# ---------------------------------------------------------------------------------------------
# gather


class GatherScatterMode(enum.Enum):
    """How gather/scatter treat out-of-bounds indices.

    ``CLIP``: clamp each window's start so the window fits. ``FILL_OR_DROP``: a gathered window
    that is partly out of bounds is filled entirely with ``fill_value``; such a scattered window
    is dropped. ``PROMISE_IN_BOUNDS``: the caller promises indices are in bounds (here gather
    clamps and scatter drops, as XLA on CPU).
    """

    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()

    @staticmethod
    def from_any(s: str | GatherScatterMode | None) -> GatherScatterMode:
        if isinstance(s, GatherScatterMode):
            return s
        if s == "clip":
            return GatherScatterMode.CLIP
        if s is None or s == "fill" or s == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        raise ValueError(f'Unknown gather mode "{s}"')


class GatherDimensionNumbers(NamedTuple):
    """XLA gather dimension numbers (the index vector is the last dimension of the indices).

    ``offset_dims``: output dims holding the slice's non-collapsed, non-batching operand dims.
    ``collapsed_slice_dims``: operand dims (slice size 1) dropped from the output.
    ``start_index_map``: operand dim that each entry of an index vector indexes.
    ``operand_batching_dims``/``start_indices_batching_dims``: paired dims iterated in lockstep.
    """

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """XLA scatter dimension numbers (the index vector is the last dimension of the indices).

    ``update_window_dims``: dims of ``updates`` that are window dims. ``inserted_window_dims``:
    operand dims with an implicit window size of 1. ``scatter_dims_to_operand_dims``: operand dim
    that each entry of an index vector indexes. ``operand_batching_dims`` /
    ``scatter_indices_batching_dims``: paired dims iterated in lockstep.
    """

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


def _tup(xs: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(x) for x in xs)


def _canon_gather_dnums(dn: Any) -> GatherDimensionNumbers:
    return GatherDimensionNumbers(*(_tup(f) for f in dn))


def _canon_scatter_dnums(dn: Any) -> ScatterDimensionNumbers:
    return ScatterDimensionNumbers(*(_tup(f) for f in dn))


def _check_dims(op: str, what: str, dims: Sequence[int], bound: int, bound_name: str, sorted_: bool = True) -> None:
    for d in dims:
        if not 0 <= d < bound:
            raise TypeError(f"{op}: {what} {tuple(dims)} must be in the range [0, {bound}) of the {bound_name}.")
    if len(set(dims)) != len(dims):
        raise TypeError(f"{op}: {what} {tuple(dims)} must not contain repeated dimensions.")
    if sorted_ and list(dims) != sorted(dims):
        raise TypeError(f"{op}: {what} {tuple(dims)} must be sorted.")


def _check_indices_and_batching(
    op: str, operand: Any, indices: Any, index_map: tuple, map_name: str, obd: tuple, ibd: tuple, ibd_name: str
) -> None:
    if _dkind(indices.dtype) not in "iu":
        raise TypeError(f"{op}: indices must have an integer type, got {_dt(indices)}.")
    if indices.ndim < 1:
        raise TypeError(
            f"{op}: indices must have rank >= 1 (the last dimension is the index vector), got shape {indices.shape}."
        )
    _check_dims(op, "operand_batching_dims", obd, operand.ndim, f"operand (shape {operand.shape})")
    _check_dims(op, ibd_name, ibd, indices.ndim - 1, f"indices' batch dims (indices shape {indices.shape})", False)
    if len(obd) != len(ibd):
        raise TypeError(f"{op}: operand_batching_dims {obd} and {ibd_name} {ibd} must have the same length.")
    for o, i in zip(obd, ibd):
        if operand.shape[o] != indices.shape[i]:
            raise TypeError(
                f"{op}: operand_batching_dims {obd} and {ibd_name} {ibd} must have the same sizes, got "
                f"operand shape {operand.shape} and indices shape {indices.shape}."
            )
    if len(index_map) != indices.shape[-1]:
        raise TypeError(
            f"{op}: {map_name} {index_map} must have one entry per element of the index vector (the "
            f"last dimension of indices, shape {indices.shape})."
        )
    _check_dims(op, map_name, index_map, operand.ndim, f"operand (shape {operand.shape})", False)
    if set(index_map) & set(obd):
        raise TypeError(f"{op}: {map_name} {index_map} and operand_batching_dims {obd} must be disjoint.")


def _gather_abstract(
    operand: Any,
    indices: Any,
    *,
    dimension_numbers: GatherDimensionNumbers,
    slice_sizes: tuple,
    indices_are_sorted: bool,
    unique_indices: bool,
    mode: GatherScatterMode,
    fill_value: Any,
) -> ShapedArray:
    dn = dimension_numbers
    _check_indices_and_batching(
        "gather",
        operand,
        indices,
        dn.start_index_map,
        "start_index_map",
        dn.operand_batching_dims,
        dn.start_indices_batching_dims,
        "start_indices_batching_dims",
    )
    nd = operand.ndim
    if len(slice_sizes) != nd:
        raise TypeError(
            f"gather: slice_sizes {slice_sizes} must have one entry per operand dimension (operand "
            f"shape {operand.shape})."
        )
    for s, d in zip(slice_sizes, operand.shape):
        if not 0 <= s <= d:
            raise TypeError(
                f"gather: slice_sizes {slice_sizes} must be between 0 and the operand shape {operand.shape}."
            )
    _check_dims("gather", "collapsed_slice_dims", dn.collapsed_slice_dims, nd, f"operand (shape {operand.shape})")
    for i, d in enumerate(dn.collapsed_slice_dims):
        if slice_sizes[d] > 1:
            raise TypeError(
                f"Gather op can only collapse slice dims with bound 1, but bound is {slice_sizes[d]} "
                f"for index {d} at position {i}."
            )
    for d in dn.operand_batching_dims:
        if slice_sizes[d] > 1:
            raise TypeError(
                f"gather: operand_batching_dims {dn.operand_batching_dims} must have slice size 1, got "
                f"slice_sizes {slice_sizes}."
            )
    if set(dn.collapsed_slice_dims) & set(dn.operand_batching_dims):
        raise TypeError(
            f"gather: collapsed_slice_dims {dn.collapsed_slice_dims} and operand_batching_dims "
            f"{dn.operand_batching_dims} must be disjoint."
        )
    out_rank = len(dn.offset_dims) + indices.ndim - 1
    _check_dims("gather", "offset_dims", dn.offset_dims, out_rank, "output")
    win = [d for d in range(nd) if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    if len(win) != len(dn.offset_dims):
        raise TypeError(
            f"gather: len(offset_dims) + len(collapsed_slice_dims) + len(operand_batching_dims) must "
            f"equal the operand rank, got dimension_numbers {dn} for operand shape {operand.shape}."
        )
    batch = iter(indices.shape[:-1])
    offs = iter(slice_sizes[d] for d in win)
    shape = tuple(next(offs) if p in dn.offset_dims else next(batch) for p in range(out_rank))
    return ShapedArray(shape, operand.dtype, operand.weak_type)


def _full_starts(shape: tuple, indices: np.ndarray, index_map: tuple, obd: tuple, ibd: tuple) -> np.ndarray:
    """Per index position, the start in every operand dim (batch_shape + (rank,)), unclamped."""
    batch_shape = indices.shape[:-1]
    starts = np.zeros(batch_shape + (len(shape),), np.int64)
    for k, d in enumerate(index_map):
        starts[..., d] = indices[..., k].astype(np.int64)
    for o, i in zip(obd, ibd):
        r = [1] * len(batch_shape)
        r[i] = batch_shape[i]
        starts[..., o] = np.arange(batch_shape[i]).reshape(r)
    return starts


def _window_coords(starts: np.ndarray, sizes: Sequence[int]) -> list[np.ndarray]:
    """Operand coordinates of every window element: arrays broadcastable to batch + sizes."""
    nb, nd = starts.ndim - 1, len(sizes)
    coords = []
    for d in range(nd):
        s = starts[..., d].reshape(starts.shape[:-1] + (1,) * nd)
        r = np.arange(sizes[d]).reshape((1,) * nb + tuple(sizes[d] if k == d else 1 for k in range(nd)))
        coords.append(s + r)
    return coords


_NAN = float("nan")  # one object, so params holding it compare equal (jit caches)


def _canon_fill(v: Any) -> Any:
    v = np.asarray(v).item()
    return _NAN if isinstance(v, float) and math.isnan(v) else v


def _default_fill_value(dtype: np.dtype) -> Any:
    if _dkind(dtype) in "fc":
        return _NAN
    if _dkind(dtype) == "i":
        return int(np.iinfo(dtype).min)
    if _dkind(dtype) == "u":
        return int(np.iinfo(dtype).max)
    return True


def _gather_impl(
    operand: np.ndarray,
    indices: np.ndarray,
    *,
    dimension_numbers: GatherDimensionNumbers,
    slice_sizes: tuple,
    indices_are_sorted: bool,
    unique_indices: bool,
    mode: GatherScatterMode,
    fill_value: Any,
) -> np.ndarray:
    dn = dimension_numbers
    nd = operand.ndim
    batch_shape = indices.shape[:-1]
    nb = len(batch_shape)
    win = [d for d in range(nd) if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    out_rank = len(dn.offset_dims) + nb
    if any(slice_sizes[d] == 0 for d in range(nd) if d not in win):
        # a collapsed dim of size 0: no data, every element takes the fill value
        shape = _gather_abstract(
            core.get_aval(operand),
            core.get_aval(indices),
            dimension_numbers=dn,
            slice_sizes=slice_sizes,
            indices_are_sorted=False,
            unique_indices=False,
            mode=mode,
            fill_value=None,
        ).shape
        return np.zeros(shape, operand.dtype)
    starts = _full_starts(
        operand.shape, indices, dn.start_index_map, dn.operand_batching_dims, dn.start_indices_batching_dims
    )
    upper = np.array(operand.shape, np.int64) - np.array(slice_sizes, np.int64)
    clipped = np.clip(starts, 0, upper)
    if nd:
        g = operand[tuple(_window_coords(clipped, slice_sizes))]
        g = np.broadcast_to(g, batch_shape + tuple(slice_sizes))
    else:
        g = np.broadcast_to(operand, batch_shape)
    g = g.reshape(batch_shape + tuple(slice_sizes[d] for d in win))
    if mode == GatherScatterMode.FILL_OR_DROP and dn.start_index_map:
        sim = list(dn.start_index_map)
        oob = np.any(starts[..., sim] != clipped[..., sim], axis=-1)
        fv = _default_fill_value(operand.dtype) if fill_value is None else fill_value
        g = np.where(oob.reshape(batch_shape + (1,) * len(win)), np.asarray(fv).astype(operand.dtype), g)
    perm, b = [], 0
    for p in range(out_rank):
        if p in dn.offset_dims:
            perm.append(nb + dn.offset_dims.index(p))
        else:
            perm.append(b)
            b += 1
    return np.array(np.transpose(g, perm), order="C")


gather_p = Primitive("gather")
gather_p.def_impl(_gather_impl)
gather_p.def_abstract_eval(_gather_abstract)


def _gather_lowering_check(eqn: core.JaxprEqn) -> str | None:
    """Only the pointwise gather lowers (a load whose index is a loaded value): one element per
    index vector (``x[iota, labels]``, ``take_along_axis``), no window or batching dims, every
    slice size 1, every operand dim indexed."""
    dn = eqn.params["dimension_numbers"]
    nd = eqn.invars[0].aval.ndim
    idx = eqn.invars[1].aval
    pointwise = (
        nd > 0
        and not dn.offset_dims
        and not dn.operand_batching_dims
        and tuple(sorted(dn.collapsed_slice_dims)) == tuple(range(nd))
        and tuple(sorted(dn.start_index_map)) == tuple(range(nd))
        and all(s == 1 for s in eqn.params["slice_sizes"])
        and idx.ndim >= 1
        and idx.shape[-1] == nd
        and _dkind(idx.dtype) in "iu"
    )
    return None if pointwise else "gather other than the pointwise form (windows or batching dims)"


def _gather_lowering_aux(eqn: core.JaxprEqn) -> dict:
    fv = eqn.params["fill_value"]
    dt = eqn.outvars[0].aval.dtype
    return {
        "fill_or_drop": eqn.params["mode"] == GatherScatterMode.FILL_OR_DROP,
        "fill_value": _default_fill_value(dt) if fv is None else fv,
    }


register_lowering(gather_p, INDEXING, check=_gather_lowering_check, aux=_gather_lowering_aux)


def _gather_jvp(
    primals: list,
    tangents: list,
    *,
    dimension_numbers: GatherDimensionNumbers,
    slice_sizes: tuple,
    indices_are_sorted: bool,
    unique_indices: bool,
    mode: GatherScatterMode,
    fill_value: Any,
) -> tuple:
    x, idx = primals
    params = dict(
        dimension_numbers=dimension_numbers,
        slice_sizes=slice_sizes,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
        mode=mode,
    )
    out = gather_p.bind(x, idx, fill_value=fill_value, **params)
    if type(tangents[0]) is Zero:
        return out, Zero(ad.tangent_aval(core.get_aval(out)))
    tfill = 0 if mode == GatherScatterMode.FILL_OR_DROP else None
    return out, gather_p.bind(tangents[0], idx, fill_value=tfill, **params)


def _gather_to_scatter_dnums(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    return ScatterDimensionNumbers(
        dn.offset_dims,
        dn.collapsed_slice_dims,
        dn.start_index_map,
        dn.operand_batching_dims,
        dn.start_indices_batching_dims,
    )


def _gather_transpose(
    ct: Any,
    x: Any,
    idx: Any,
    *,
    dimension_numbers: GatherDimensionNumbers,
    slice_sizes: tuple,
    indices_are_sorted: bool,
    unique_indices: bool,
    mode: GatherScatterMode,
    fill_value: Any,
) -> list:
    if is_undefined_primal(idx):
        raise ValueError("gather is not linear in its indices")
    if type(ct) is Zero or not is_undefined_primal(x):
        return [None, None]
    # gather under PROMISE_IN_BOUNDS clamps here, so its exact transpose is a clamped scatter
    smode = GatherScatterMode.FILL_OR_DROP if mode == GatherScatterMode.FILL_OR_DROP else GatherScatterMode.CLIP
    out = scatter_add_p.bind(
        _zeros(x.aval),
        idx,
        ct,
        dimension_numbers=_gather_to_scatter_dnums(dimension_numbers),
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
        mode=smode,
    )
    return [out, None]


def _shift(dims: Sequence[int], at: int) -> tuple[int, ...]:
    """Renumber dims after inserting a new dimension at position ``at``."""
    return tuple(d + 1 if d >= at else d for d in dims)


def _insert_sorted(dims: tuple, d: int) -> tuple[tuple, int]:
    j = bisect.bisect_left(dims, d)
    return dims[:j] + (d,) + dims[j:], j


def _new_dim_position(kept: Sequence[int], k: int) -> int:
    """Where a new dim goes so that it follows ``kept[k-1]`` (or comes first)."""
    return kept[k - 1] + 1 if k > 0 else 0


def _gather_batch(
    vals: list, dims: list, *, dimension_numbers: GatherDimensionNumbers, slice_sizes: tuple, **params: Any
) -> tuple:
    x, idx = vals
    xd, id_ = dims
    dn = dimension_numbers
    if id_ is not None and id_ == core.get_aval(idx).ndim - 1:
        idx, id_ = batching.moveaxis(idx, id_, 0), 0  # keep the index vector last
    if id_ is None:
        # operand only: its batch axis becomes one more offset (window) dim, taken whole
        size = core.get_aval(x).shape[xd]
        coll, sim, obd = (
            _shift(dn.collapsed_slice_dims, xd),
            _shift(dn.start_index_map, xd),
            _shift(dn.operand_batching_dims, xd),
        )
        win = [d for d in range(core.get_aval(x).ndim) if d not in coll and d not in obd]
        k = win.index(xd)
        p = _new_dim_position(dn.offset_dims, k)
        offs = _shift(dn.offset_dims, p)
        offs = offs[:k] + (p,) + offs[k:]
        ss = slice_sizes[:xd] + (size,) + slice_sizes[xd:]
        new = GatherDimensionNumbers(offs, coll, sim, obd, dn.start_indices_batching_dims)
        return gather_p.bind(x, idx, dimension_numbers=new, slice_sizes=ss, **params), p
    # batched indices: the new indices dim is one more batch dim of the output
    e = id_
    out_rank = len(dn.offset_dims) + core.get_aval(idx).ndim - 2
    bpos = [p for p in range(out_rank) if p not in dn.offset_dims]
    q = _new_dim_position(bpos, e)
    offs = _shift(dn.offset_dims, q)
    sibd = _shift(dn.start_indices_batching_dims, e)
    if xd is None:
        new = GatherDimensionNumbers(offs, dn.collapsed_slice_dims, dn.start_index_map, dn.operand_batching_dims, sibd)
        return gather_p.bind(x, idx, dimension_numbers=new, slice_sizes=slice_sizes, **params), q
    # both batched: pair the two batch axes as batching dims
    coll, sim, obd = (
        _shift(dn.collapsed_slice_dims, xd),
        _shift(dn.start_index_map, xd),
        _shift(dn.operand_batching_dims, xd),
    )
    obd, j = _insert_sorted(obd, xd)
    sibd = sibd[:j] + (e,) + sibd[j:]
    ss = slice_sizes[:xd] + (1,) + slice_sizes[xd:]
    new = GatherDimensionNumbers(offs, coll, sim, obd, sibd)
    return gather_p.bind(x, idx, dimension_numbers=new, slice_sizes=ss, **params), q


ad.primitive_jvps[gather_p] = _gather_jvp
ad.primitive_transposes[gather_p] = _gather_transpose
batching.primitive_batchers[gather_p] = _gather_batch
batching.empty_batch_by_shape.update((gather_p, dynamic_slice_p))

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
                f"{name}: operand and updates must have the same dtype, got operand {_dt(operand)} and "
                f"updates {_dt(updates)}."
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
        scat = tuple(updates.shape[i] for i in range(updates.ndim) if i not in dn.update_window_dims)
        if scat != indices.shape[:-1]:
            raise TypeError(
                f"{name}: the scatter dims of updates {scat} (updates shape {updates.shape}) must match "
                f"the batch dims of indices {indices.shape[:-1]} (indices shape {indices.shape})."
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
    st = None if strides is None else _tup(strides)
    return _bind(slice_p, operand, start_indices=_tup(start_indices), limit_indices=_tup(limit_indices), strides=st)


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
    start = 0 if start_index is None else int(start_index)
    limit = n if limit_index is None else int(limit_index)
    start = start + n if start < 0 else start
    limit = limit + n if limit < 0 else limit
    si, li, st = [0] * len(shape), list(shape), [1] * len(shape)
    si[axis], li[axis], st[axis] = start, limit, int(stride)
    return slice(operand, si, li, st)


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True) -> Any:
    """The element ``index`` (static int, may be negative) along ``axis``."""
    index = int(core.concrete_or_error(index, "index_in_dim index"))
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
    return core.bind(dynamic_slice_p, [operand] + idxs, dict(slice_sizes=_tup(slice_sizes)))


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
    sizes[axis] = int(slice_size)
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

__all__ = [
    "GatherDimensionNumbers",
    "GatherScatterMode",
    "ScatterDimensionNumbers",
    "concatenate",
    "concatenate_p",
    "dynamic_index_in_dim",
    "dynamic_slice",
    "dynamic_slice_in_dim",
    "dynamic_slice_p",
    "dynamic_update_index_in_dim",
    "dynamic_update_slice",
    "dynamic_update_slice_in_dim",
    "dynamic_update_slice_p",
    "gather",
    "gather_p",
    "index_in_dim",
    "pad",
    "pad_p",
    "scatter",
    "scatter_add",
    "scatter_add_p",
    "scatter_max",
    "scatter_max_p",
    "scatter_min",
    "scatter_min_p",
    "scatter_mul",
    "scatter_mul_p",
    "scatter_p",
    "slice",
    "slice_in_dim",
    "slice_p",
]
