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

# ruff: noqa: F821, F822 - the scatter family and the public wrappers come from slicing_scatter (_take_part)
from __future__ import annotations

import bisect
import enum
import math
from typing import Any, Callable, NamedTuple, Sequence  # noqa: F401 - Callable: slicing_scatter

import numpy as np

from fjax import core, dtypes  # noqa: F401 - dtypes: slicing_scatter
from fjax.backends.registry import HOST, INDEXING, register_lowering  # noqa: F401 - HOST: slicing_scatter
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


ad.deflinear2(slice_p, _slice_transpose)
batching.primitive_batchers[slice_p] = _slice_batch

# ---------------------------------------------------------------------------------------------
# pad


def _pad_abstract(x: Any, pv: Any, *, padding_config: tuple) -> ShapedArray:
    if x.dtype != pv.dtype:
        raise TypeError(f"pad operand and padding_value must be same dtype: got {x.dtype.name} and {pv.dtype.name}.")
    if pv.ndim != 0:
        raise ValueError(f"padding_value must be a scalar; got np.shape(padding_value)={tuple(pv.shape)}")
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


ad.deflinear2(pad_p, _pad_transpose)
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


ad.deflinear2(concatenate_p, _concatenate_transpose)
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
        sep = ": " if name == "dynamic_slice" else " "  # (JAX's two rules differ by the colon)
        raise TypeError(
            f"index arguments to {name} must be integers of the same type, got{sep}"
            f"{', '.join(i.dtype.name for i in idxs)}"
        )


def _dynamic_slice_abstract(x: Any, *idxs: Any, slice_sizes: tuple) -> ShapedArray:
    _check_start_indices("dynamic_slice", x, idxs)
    if len(slice_sizes) != x.ndim:  # ValueError, as JAX's lax.dynamic_slice raises
        raise ValueError(
            f"dynamic_slice slice_sizes must have the same length as the operand's rank, got "
            f"slice_sizes {slice_sizes} for operand shape {x.shape}."
        )
    if any(s > d for s, d in zip(slice_sizes, x.shape)):
        raise TypeError(
            f"slice slice_sizes must be less than or equal to operand shape, got slice_sizes "
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
            "lax.dynamic_update_slice requires arguments to have the same dtypes, got "
            f"{x.dtype.name}, {upd.dtype.name}."
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
        raise ValueError("indices must have an integer type")  # (JAX's words, ValueError)
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
    for i, d in enumerate(index_map):  # JAX's gather/scatter shape rules' words
        if not 0 <= d < operand.ndim:
            what = "start_index_map" if op == "gather" else "scatter_dims_to_operand_dims mapping"
            raise TypeError(f"Invalid {what}; domain is [0, {operand.ndim}), got: {i}->{d}.")
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
            "Gather op must have one slice size for every input dimension; got: "
            f"len(slice_sizes)={len(slice_sizes)}, input_shape.rank={nd}"
        )
    for i, (s, d) in enumerate(zip(slice_sizes, operand.shape)):
        if not 0 <= s <= d:
            raise TypeError(
                f"Slice size at index {i} in gather op is out of range, must be within [0, {d} + 1), got {s}."
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
    if _dkind(dtype) == "i":  # (ml_dtypes' iinfo: numpy's knows no int4/int2/int1)
        return int(dtypes.iinfo(dtype).min)
    if _dkind(dtype) == "u":
        return int(dtypes.iinfo(dtype).max)
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
# the scatter family and the public wrappers: fjax/lax/slicing_scatter.py (a part of this module)


def _take_part() -> None:
    from fjax.lax import slicing_scatter  # noqa: PLC0415

    g = globals()
    for k, v in vars(slicing_scatter).items():
        if not (k.startswith("__") and k.endswith("__")) and k != "_slicing":
            g.setdefault(k, v)
    for k, v in list(g.items()):  # and it sees every name of this module
        if not (k.startswith("__") and k.endswith("__")):
            slicing_scatter.__dict__.setdefault(k, v)


_take_part()


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
