"""numpy-style indexing for fjax arrays: ``x[idx]`` and ``x.at[idx].set/add/...``.

Static basic indexing (ints, slices, ``None``, ``...``) lowers to ``lax.slice``/``lax.rev``/
``lax.squeeze``; traced scalar indices to ``lax.dynamic_slice``; anything with an integer-array
index (or a concrete boolean mask) to ``lax.gather``. Indexed updates lower to ``lax.scatter*``.

Out-of-bounds behaviour follows JAX: negative indices count from the end; retrieval clamps
out-of-bounds indices (``mode=None``/``"promise_in_bounds"``/``"clip"``) or fills them
(``mode="fill"``); updates drop out-of-bounds indices by default (``mode="drop"``).
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable

import numpy as np

from fjax import core, dtypes
from fjax._core_values import long_str
from fjax.core import Array, Tracer
from fjax.dtypes import iinfo as _iinfo
from fjax.dtypes import kind as _dkind
from fjax.lax import lax
from fjax.numpy import _util

__all__ = ["NonConcreteBooleanIndexError", "argwhere", "flatnonzero", "nonzero"]


class NonConcreteBooleanIndexError(core.JAXIndexError):
    """A boolean mask used as an index is traced: its number of True entries (and so the
    shape of the result) is not known at trace time. Raised as JAX's, with the mask's abstract
    value (``NonConcreteBooleanIndexError(aval)``), or with a message."""

    def __init__(self, tracer: Any) -> None:
        if not isinstance(tracer, str):
            tracer = f"Array boolean indices must be concrete; got {tracer}\n"
        super().__init__(tracer)


def broadcast_to_error(aval: Any, shape: tuple) -> Exception | None:
    """The error ``jnp.broadcast_to`` raises (in JAX's words) taking ``aval`` to ``shape``, or None."""
    shape = tuple(shape)
    if len(shape) < len(aval.shape):
        return ValueError(
            f"Cannot broadcast to shape with fewer dimensions: arr_shape={tuple(aval.shape)} shape={shape}"
        )
    if not all(d == 1 or d == s for d, s in zip(aval.shape[::-1], shape[::-1])):
        dt = long_str(aval).split("[")[0]
        return ValueError(
            f"Incompatible types for broadcasting: input type={long_str(aval)} and requested type="
            f"{dt}[{','.join(map(str, shape))}]"
        )
    if any(s < 0 for s in shape):
        return TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got {shape}.")
    return None


def _slicing() -> Any:
    from fjax.lax import slicing  # noqa: PLC0415

    return slicing


_INDEX_DTYPE = np.dtype(np.int32)

# --------------------------------------------------------------------------------------------
# parsing an index expression into per-dimension entries


class _Entry:
    """One element of a normalized index: kind is 'none', 'slice', 'int', 'dyn' or 'array'."""

    __slots__ = ("kind", "val", "dim", "pos")

    def __init__(self, kind: str, val: Any, dim: int | None, pos: int = 0):
        self.kind = kind
        self.val = val
        self.dim = dim  # operand dimension it indexes (None for newaxis)
        self.pos = pos  # position in the user's index tuple (decides where advanced dims go)

    def __repr__(self) -> str:
        return f"_Entry({self.kind}, {self.val!r}, dim={self.dim})"


def _is_adv(e: _Entry) -> bool:
    return e.kind in ("int", "dyn", "array")


def _concrete(x: Any) -> np.ndarray | None:
    """The numpy value of an index if it is known at trace time, else None."""
    if isinstance(x, Tracer):
        return x.to_concrete_value()
    if isinstance(x, Array):
        return x._value
    return np.asarray(x)


def _unpackable(i: Any) -> bool:
    """Whether a list index's entry reads as an index of its own (a sequence, a non-scalar array,
    a slice, ``...`` or ``None``), as JAX's ``_should_unpack_list_index``."""
    if isinstance(i, (np.ndarray, Array, Tracer)):
        return np.ndim(i) != 0
    return isinstance(i, (list, tuple, slice)) or i is Ellipsis or i is None


def _as_index_tuple(idx: Any) -> tuple:
    if isinstance(idx, tuple):
        return idx
    if isinstance(idx, list):
        # (JAX suggests a tuple where an entry would index a dimension of its own)
        seq = "tuple(seq)" if any(_unpackable(i) for i in idx) else "array(seq)"
        raise TypeError(
            f"Using a non-tuple sequence for multidimensional indexing is not allowed; use `arr[{seq}]` "
            "instead of `arr[seq]`. See https://github.com/jax-ml/jax/issues/4564 for more information."
        )
    return (idx,)


def _static_slice_part(v: Any, what: str, pos: int) -> int | None:
    if v is None:
        return None
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, (Array, Tracer, np.ndarray)):
        c = _concrete(v)
        if isinstance(v, Tracer) and v.to_concrete_value() is None:
            c = None
        if c is not None and np.ndim(c) == 0 and _dkind(np.asarray(c).dtype) in "iu":
            return int(c)
    if isinstance(v, (float, complex, str, np.floating, np.complexfloating)):
        operator.index(v)  # Python's TypeError, as JAX's ("'float' object cannot be interpreted as an integer")
    raise IndexError(f"Slice entries must be static integers. Got {what} at position {pos}")


def _parse(shape: tuple[int, ...], idx: Any) -> tuple[list[_Entry], list[int]]:
    """Expand ``idx`` against ``shape``.

    Returns (entries, scalar_bool_dims): entries cover every dimension of the array once it has
    been expanded with size-1 axes at ``scalar_bool_dims`` (scalar boolean indices).
    """
    raw = _as_index_tuple(idx)
    items: list[tuple[str, Any]] = []
    for pos, i in enumerate(raw):
        if i is None:
            items.append(("none", None))
        elif i is Ellipsis:
            items.append(("ellipsis", None))
        elif isinstance(i, slice):
            items.append(
                (
                    "slice",
                    (
                        _static_slice_part(i.start, i, pos),
                        _static_slice_part(i.stop, i, pos),
                        _static_slice_part(i.step, i, pos),
                    ),
                )
            )
        elif isinstance(i, (bool, np.bool_)):
            items.append(("sbool", bool(i)))
        elif isinstance(i, (int, np.integer)):
            items.append(("int", int(i)))
        elif isinstance(i, (list, tuple)) or isinstance(i, (np.ndarray, np.generic, Array, Tracer)):
            if isinstance(i, (list, tuple)):
                try:
                    i = np.asarray(i)
                except ValueError as e:
                    raise TypeError(f"Invalid index sequence at position {pos}: {i!r}") from e
                if i.size == 0 and _dkind(i.dtype) == "f":
                    i = i.astype(np.int32)
            dt = i.dtype
            if dt == np.bool_:
                if np.ndim(i) == 0:
                    c = core.concrete_or_error(i, "scalar boolean index") if isinstance(i, Tracer) else i
                    items.append(("sbool", bool(np.asarray(c if not isinstance(c, Array) else c._value))))
                    continue
                c = _concrete(i)
                if c is None:
                    raise NonConcreteBooleanIndexError(core.get_aval(i))
                items.append(("mask", np.asarray(c)))
            elif _dkind(dt) in "iu":
                if np.ndim(i) == 0:
                    if isinstance(i, Tracer):
                        items.append(("dyn", i))
                    else:
                        items.append(("int", int(np.asarray(_concrete(i)))))
                elif isinstance(i, Tracer):
                    items.append(("array", i))
                else:
                    items.append(("array", np.asarray(_concrete(i))))
            else:
                raise TypeError(f"Indexer must have integer or boolean type, got indexer with type {dt.name}")
        elif isinstance(i, (float, complex)):
            # (a Python float is float64 to JAX's check, x64 or not)
            raise TypeError(
                f"Indexer must have integer or boolean type, got indexer with type {np.asarray(i).dtype.name}"
            )
        elif isinstance(i, str):
            raise TypeError(f"JAX does not support string indexing; got idx={i!r}")
        else:  # IndexError, as JAX raises
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), newaxis (`None`) and integer or boolean arrays are "
                f"valid indices. Got {i}"
            )
    if sum(k == "ellipsis" for k, _ in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(0 if k in ("none", "sbool", "ellipsis") else (v.ndim if k == "mask" else 1) for k, v in items)
    ndim = len(shape)
    if consumed > ndim:
        raise IndexError(f"Too many indices: array is {ndim}-dimensional, but {consumed} were indexed")
    # attach positions in the index tuple; an ellipsis (even an empty one) separates advanced indices
    pitems = [(k, v, p) for p, (k, v) in enumerate(items)]
    fill_n = ndim - consumed
    if any(k == "ellipsis" for k, _ in items):
        j = next(n for n, (k, _) in enumerate(items) if k == "ellipsis")
        pitems = pitems[:j] + [("slice", (None, None, None), j)] * fill_n + pitems[j + 1 :]
    else:
        pitems = pitems + [("slice", (None, None, None), len(items))] * fill_n

    entries: list[_Entry] = []
    sbool_dims: list[int] = []
    shp = list(shape)
    d = 0
    for k, v, p in pitems:
        if k == "none":
            entries.append(_Entry("none", None, None, p))
            continue
        if k == "sbool":
            # a scalar boolean acts on a new size-1 axis as the mask [v] (numpy semantics)
            shp.insert(d, 1)
            sbool_dims.append(d)
            k, v = "mask", np.array([v])
        if k == "mask":
            want = tuple(shp[d : d + v.ndim])
            if v.shape != want:
                raise IndexError(
                    f"boolean index did not match shape of indexed array in index {d}: got {v.shape}, expected "
                    f"{list(want)}"
                )
            for arr in np.nonzero(v):
                entries.append(_Entry("array", arr.astype(np.int64), d, p))
                d += 1
            continue
        if k == "slice":
            n = shp[d]
            start, stop, step = v
            if step == 0:
                raise ValueError("slice step cannot be zero")
            entries.append(_Entry("slice", slice(start, stop, step).indices(n), d, p))
        elif k == "int":
            entries.append(_Entry("int", v, d, p))
        else:
            entries.append(_Entry(k, v, d, p))
        d += 1
    return entries, sbool_dims


# --------------------------------------------------------------------------------------------
# index normalization


def _norm_static(i: np.ndarray | int, n: int) -> np.ndarray:
    a = np.asarray(i, dtype=np.int64)
    a = np.where(a < 0, a + n, a)
    info = np.iinfo(_INDEX_DTYPE)
    return np.clip(a, info.min, info.max).astype(_INDEX_DTYPE)


def _norm_traced(i: Any, n: int) -> Any:
    aval = core.get_aval(i)
    if aval.dtype != _INDEX_DTYPE:
        i = lax.convert_element_type(i, _INDEX_DTYPE)
    elif aval.weak_type:
        i = lax.convert_element_type(i, _INDEX_DTYPE)
    if _dkind(aval.dtype) == "u":
        return i
    return lax.select(lax.lt(i, _const(0)), lax.add(i, _const(n)), i)


def _const(v: int) -> Array:
    return Array(np.array(v, dtype=_INDEX_DTYPE), False)


def _slice_len(start: int, stop: int, step: int) -> int:
    return len(range(start, stop, step))


# --------------------------------------------------------------------------------------------
# the general (gather/scatter) form of an index


class _GatherIndexer:
    """Everything lax.gather/lax.scatter need to apply an index, computed from its entries."""

    def __init__(self, shape: tuple[int, ...], entries: list[_Entry]):
        adv_pos = sorted(set(e.pos for e in entries if _is_adv(e)))
        adv_shapes = [np.shape(e.val) if e.kind == "array" else () for e in entries if _is_adv(e)]
        try:
            bshape = _util.broadcast_shapes("indexing", *adv_shapes) if adv_shapes else ()
        except ValueError:
            # JAX's ValueError (numpy raises an IndexError)
            shapes = [tuple(s) for s in adv_shapes]
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}") from None
        contiguous = bool(adv_pos) and adv_pos == list(range(adv_pos[0], adv_pos[-1] + 1))
        contiguous = contiguous and not any(
            e.pos in range(adv_pos[0], adv_pos[-1] + 1) and not _is_adv(e) for e in entries
        )

        # output dims (newaxes excluded) in order: ("batch", size) or ("offset", operand_dim)
        out: list[tuple[str, int]] = []
        newaxis_out: list[int] = []  # positions of newaxes in the final output
        comps: list[tuple[Any, int, tuple[int, ...] | None]] = []  # (value, operand dim, batch axes) ; None = scalar
        slice_sizes = list(shape)
        collapsed: list[int] = []
        group_axes: tuple[int, ...] = ()
        n_final = 0

        def add_group() -> None:
            nonlocal group_axes, n_final
            start = sum(1 for k, _ in out if k == "batch")
            group_axes = tuple(range(start, start + len(bshape)))
            for s in bshape:
                out.append(("batch", s))
            n_final += len(bshape)

        if adv_pos and not contiguous:
            add_group()
        first_adv = True
        pending_adv: list[_Entry] = []
        for e in entries:
            if e.kind == "none":
                newaxis_out.append(n_final)
                n_final += 1
                continue
            d = e.dim
            n = shape[d]
            if e.kind == "slice":
                start, stop, step = e.val
                m = _slice_len(start, stop, step)
                if step == 1:
                    out.append(("offset", d))
                    slice_sizes[d] = m
                    if m != n:
                        comps.append((np.array(start, _INDEX_DTYPE), d, None))
                else:
                    ax = sum(1 for k, _ in out if k == "batch")
                    out.append(("batch", m))
                    slice_sizes[d] = 1
                    collapsed.append(d)
                    comps.append((("iota", start, step, m), d, (ax,)))
                n_final += 1
                continue
            # advanced
            if contiguous and first_adv:
                add_group()
            first_adv = False
            pending_adv.append(e)
            slice_sizes[d] = 1
            collapsed.append(d)
        for e in pending_adv:
            n = shape[e.dim]
            if n == 0 and e.kind in ("int", "dyn"):  # as JAX: a scalar index into an empty axis
                what = f"index {e.val}" if e.kind == "int" else "index"
                raise IndexError(f"{what} is out of bounds for axis {e.dim} with size 0")
            if e.kind == "array" and not isinstance(e.val, Tracer):
                v = _norm_static(e.val, n)
            elif e.kind == "int":
                v = _norm_static(e.val, n)
            else:
                v = _norm_traced(e.val, n)
            nd = len(bshape)
            vnd = np.ndim(v) if not isinstance(v, Tracer) else v.ndim
            axes = group_axes[nd - vnd :]
            comps.append((v, e.dim, axes))

        self.batch_shape = tuple(s for k, s in out if k == "batch")
        self.out_kinds = out
        self.gather_shape = tuple(s if k == "batch" else slice_sizes[s] for k, s in out)
        self.offset_dims = tuple(j for j, (k, _) in enumerate(out) if k == "offset")
        self.collapsed = tuple(sorted(collapsed))
        self.start_index_map = tuple(d for _, d, _ in comps)
        self.slice_sizes = tuple(slice_sizes)
        self.newaxis_out = tuple(newaxis_out)
        final = list(self.gather_shape)
        for p in self.newaxis_out:
            final.insert(p, 1)
        self.final_shape = tuple(final)
        self.comps = comps

    def indices(self) -> Any:
        """The gather/scatter index array, of shape batch_shape + (len(start_index_map),)."""
        bs = self.batch_shape
        nb = len(bs)
        static = all(not isinstance(v, Tracer) for v, _, _ in self.comps)
        parts = []
        for v, _, axes in self.comps:
            if isinstance(v, tuple):  # iota of a strided slice
                _, start, step, m = v
                vv = (start + step * np.arange(m, dtype=np.int64)).astype(_INDEX_DTYPE)
                axes = axes
            else:
                vv = v
            if axes is None:
                axes = ()
            if static:
                a = np.asarray(vv, _INDEX_DTYPE)
                shp = [1] * nb
                for ax, s in zip(axes, a.shape):
                    shp[ax] = s
                parts.append(np.broadcast_to(a.reshape(shp), bs)[..., None])
            else:
                if not isinstance(vv, Tracer):
                    vv = Array(np.asarray(vv, _INDEX_DTYPE), False)
                parts.append(lax.broadcast_in_dim(vv, bs + (1,), tuple(axes)))
        if static:
            if not parts:
                return Array(np.zeros(bs + (0,), _INDEX_DTYPE), False)
            return Array(np.ascontiguousarray(np.concatenate(parts, axis=-1)), False)
        if len(parts) == 1:
            return parts[0]
        return _slicing().concatenate(parts, nb)


# --------------------------------------------------------------------------------------------
# getitem


def _parse_mode(mode: Any, default: str) -> Any:
    GSM = _slicing().GatherScatterMode
    if mode is None:
        mode = default
    if isinstance(mode, GSM):
        return mode
    if not isinstance(mode, str):
        raise ValueError(f"Invalid indexing mode: {mode!r}")
    return GSM.from_any(mode)


def getitem(
    x: Any,
    idx: Any,
    *,
    mode: Any = None,
    fill_value: Any = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
) -> Any:
    """``x[idx]`` with numpy/JAX semantics.

    ``mode`` (as in ``x.at[idx].get(mode=...)``): None (clamp out-of-bounds indices, JAX's default),
    ``"clip"``, ``"promise_in_bounds"`` or ``"fill"`` (out-of-bounds gathers return ``fill_value``,
    NaN for inexact dtypes by default).
    """
    x = _util.to_fjax(x, "indexing")
    if fill_value is not None:
        fv = core.concrete_or_error(fill_value, "fill_value argument to indexed get()")
        if np.ndim(fv) != 0:
            raise ValueError("fill_value argument to indexed get() must be a scalar")
        fill_value = np.asarray(fv).item()
    entries, sbool_dims = _parse(tuple(x.shape), idx)
    if sbool_dims:
        x = lax.expand_dims(x, sbool_dims)
    shape = tuple(x.shape)
    fill_mode = mode is not None and (mode == "fill" or mode == "drop" or _is_fill_mode(mode))

    has_array = any(e.kind == "array" for e in entries)
    if not has_array and not fill_mode:
        return _basic_getitem(x, entries)

    ix = _GatherIndexer(shape, entries)
    if math.prod(ix.final_shape) == 0:
        return lax.full_like(x, 0, shape=ix.final_shape)
    if not ix.comps:
        y = x
    else:
        sl = _slicing()
        dnums = sl.GatherDimensionNumbers(
            offset_dims=ix.offset_dims, collapsed_slice_dims=ix.collapsed, start_index_map=ix.start_index_map
        )
        y = sl.gather(
            x,
            ix.indices(),
            dnums,
            ix.slice_sizes,
            indices_are_sorted=indices_are_sorted,
            unique_indices=unique_indices,
            mode=_parse_mode(mode, "promise_in_bounds"),
            fill_value=fill_value,
        )
    if ix.newaxis_out:
        y = lax.expand_dims(y, ix.newaxis_out)
    return y


def _is_fill_mode(mode: Any) -> bool:
    try:
        GSM = _slicing().GatherScatterMode
    except ImportError:
        return False
    return isinstance(mode, GSM) and mode == GSM.FILL_OR_DROP


def _basic_getitem(x: Any, entries: list[_Entry]) -> Any:
    """Static slices/ints via lax.slice + rev + squeeze; traced ints via dynamic_slice."""
    shape = tuple(x.shape)
    nd = len(shape)
    starts, limits, strides = [0] * nd, list(shape), [1] * nd
    rev_dims, squeeze_dims, dyn = [], [], []
    for e in entries:
        if e.kind == "none":
            continue
        d, n = e.dim, shape[e.dim]
        if e.kind == "slice":
            start, stop, step = e.val
            m = _slice_len(start, stop, step)
            if m == 0:
                starts[d] = limits[d] = 0
            elif step > 0:
                starts[d], limits[d], strides[d] = start, start + (m - 1) * step + 1, step
            else:
                first = start + (m - 1) * step
                starts[d], limits[d], strides[d] = first, start + 1, -step
                if m > 1:
                    rev_dims.append(d)
        elif e.kind == "int":
            i = e.val + n if e.val < 0 else e.val
            i = min(max(i, 0), n - 1) if n else 0  # JAX clamps out-of-bounds static indices
            if n == 0:
                raise IndexError(f"index {e.val} is out of bounds for axis {d} with size 0")
            starts[d], limits[d] = i, i + 1
            squeeze_dims.append(d)
        else:  # dyn
            if n == 0:
                raise IndexError(f"index is out of bounds for axis {d} with size 0")
            dyn.append((d, e.val))
            squeeze_dims.append(d)
    y = x
    if starts != [0] * nd or limits != list(shape) or strides != [1] * nd:
        for d, _ in dyn:  # traced dims keep their full extent for dynamic_slice below
            starts[d], limits[d], strides[d] = 0, shape[d], 1
        st = None if all(s == 1 for s in strides) else tuple(strides)
        if tuple(starts) != (0,) * nd or tuple(limits) != shape or st is not None:
            y = _slicing().slice(y, tuple(starts), tuple(limits), st)
    if rev_dims:
        y = lax.rev(y, tuple(rev_dims))
    if dyn:
        ysh = tuple(core.get_aval(y).shape)
        dmap = dict(dyn)
        start_idx = [_norm_traced(dmap[d], ysh[d]) if d in dmap else _const(0) for d in range(nd)]
        sizes = tuple(1 if d in dmap else ysh[d] for d in range(nd))
        y = _slicing().dynamic_slice(y, start_idx, sizes, allow_negative_indices=False)
    if squeeze_dims:
        y = lax.squeeze(y, tuple(squeeze_dims))
    newaxis = []
    pos = 0
    for e in entries:
        if e.kind == "none":
            newaxis.append(pos)
            pos += 1
        elif e.kind == "slice":
            pos += 1
    if newaxis:
        y = lax.expand_dims(y, tuple(newaxis))
    return y


# --------------------------------------------------------------------------------------------
# indexed updates


def _scatter_update(
    x: Any,
    idx: Any,
    y: Any,
    op: str,
    *,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
    fn_name: str = "set",
) -> Any:
    """``x[idx] op= y`` without mutation, via lax.scatter* (JAX's _scatter_update)."""
    x = _util.to_fjax(x, f"at[].{fn_name}")
    _util.check_arraylike(f"at[].{fn_name}", y)
    dtype, weak = x.dtype, x.weak_type
    if type(y) is int and _dkind(dtype) in "iu" and _iinfo(dtype).min <= y <= _iinfo(dtype).max:
        y = Array(np.array(y, dtype=dtype), False)
    y = _util.to_fjax(y, f"at[].{fn_name}")
    entries, sbool_dims = _parse(tuple(x.shape), idx)
    xe = lax.expand_dims(x, sbool_dims) if sbool_dims else x
    ix = _GatherIndexer(tuple(xe.shape), entries)
    if math.prod(ix.final_shape) == 0:
        return x
    xp, yp = _util.promote_dtypes(f"at[].{fn_name}", xe, y)
    err = broadcast_to_error(core.get_aval(yp), ix.final_shape)  # JAX broadcasts the updates with jnp.broadcast_to
    if err is not None:
        raise err
    indices = ix.indices() if ix.comps else None  # (before the updates are broadcast, as JAX orders them)
    yp = _util.broadcast_to_shape(yp, ix.final_shape)
    if ix.newaxis_out:
        yp = lax.reshape(yp, ix.gather_shape)
    if not ix.comps:
        out = _combine(op, xp, yp)
    else:
        sl = _slicing()
        dnums = sl.ScatterDimensionNumbers(
            update_window_dims=ix.offset_dims,
            inserted_window_dims=ix.collapsed,
            scatter_dims_to_operand_dims=ix.start_index_map,
        )
        scatter = {
            "set": sl.scatter,
            "add": sl.scatter_add,
            "mul": sl.scatter_mul,
            "min": sl.scatter_min,
            "max": sl.scatter_max,
        }[op]
        out = scatter(
            xp,
            indices,
            yp,
            dnums,
            indices_are_sorted=indices_are_sorted,
            unique_indices=unique_indices,
            mode=_parse_mode(mode, "drop"),
        )
    if sbool_dims:
        out = lax.squeeze(out, tuple(sbool_dims))
    return lax._convert_element_type_weak(out, dtype, weak)


def _combine(op: str, x: Any, y: Any) -> Any:
    if op == "set":
        return y
    return {"add": lax.add, "mul": lax.mul, "min": lax.min, "max": lax.max}[op](x, y)


class _IndexUpdateRef:
    """``x.at[idx]``: functional indexed updates (``set``, ``add``, ``multiply``, ...) and ``get``.

    Every method accepts ``indices_are_sorted``, ``unique_indices`` and ``mode``: out-of-bounds
    updates are dropped unless ``mode="clip"`` (indices clamped) or ``"promise_in_bounds"``.
    """

    __slots__ = ("array", "index")

    def __init__(self, array: Any, index: Any):
        self.array = array
        self.index = index

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(
        self,
        *,
        indices_are_sorted: bool = False,
        unique_indices: bool = False,
        mode: Any = None,
        fill_value: Any = None,
    ) -> Any:
        """``x[idx]``; ``mode="fill"`` returns ``fill_value`` (NaN by default) out of bounds."""
        return getitem(
            self.array,
            self.index,
            mode=mode,
            fill_value=fill_value,
            indices_are_sorted=indices_are_sorted,
            unique_indices=unique_indices,
        )

    def _upd(self, op: str, name: str, values: Any, kw: dict) -> Any:
        return _scatter_update(self.array, self.index, values, op, fn_name=name, **kw)

    def set(
        self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None
    ) -> Any:
        """``x[idx] = values`` (with duplicate indices, which write wins is unspecified)."""
        return self._upd(
            "set", "set", values, dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)
        )

    def add(
        self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None
    ) -> Any:
        """``x[idx] += values`` (duplicate indices accumulate, like np.add.at)."""
        return self._upd(
            "add", "add", values, dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)
        )

    def subtract(
        self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None
    ) -> Any:
        """``x[idx] -= values``."""
        from fjax.numpy import _ufuncs  # noqa: PLC0415

        return self._upd(
            "add",
            "subtract",
            _ufuncs.negative(values),
            dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode),
        )

    def multiply(
        self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None
    ) -> Any:
        """``x[idx] *= values`` (duplicate indices accumulate, like np.multiply.at)."""
        return self._upd(
            "mul",
            "multiply",
            values,
            dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode),
        )

    mul = multiply

    def divide(
        self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None
    ) -> Any:
        """``x[idx] /= values``: ``jnp.divide(x, ones_like(x).at[idx].multiply(values))``."""
        from fjax.numpy import _ufuncs  # noqa: PLC0415

        ones = lax.full_like(_util.to_fjax(self.array), 1)
        den = _scatter_update(
            ones,
            self.index,
            values,
            "mul",
            fn_name="divide",
            indices_are_sorted=indices_are_sorted,
            unique_indices=unique_indices,
            mode=mode,
        )
        return _ufuncs.divide(self.array, den)

    def power(
        self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None
    ) -> Any:
        """``x[idx] **= values``: ``jnp.power(x, ones_like(x).at[idx].multiply(values))``."""
        from fjax.numpy import _ufuncs  # noqa: PLC0415

        ones = lax.full_like(_util.to_fjax(self.array), 1)
        ex = _scatter_update(
            ones,
            self.index,
            values,
            "mul",
            fn_name="power",
            indices_are_sorted=indices_are_sorted,
            unique_indices=unique_indices,
            mode=mode,
        )
        return _ufuncs.power(self.array, ex)

    def min(
        self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None
    ) -> Any:
        """``x[idx] = minimum(x[idx], values)`` (like np.minimum.at)."""
        return self._upd(
            "min", "min", values, dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)
        )

    def max(
        self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None
    ) -> Any:
        """``x[idx] = maximum(x[idx], values)`` (like np.maximum.at)."""
        return self._upd(
            "max", "max", values, dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)
        )

    def apply(
        self, func: Callable, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None
    ) -> Any:
        """``x[idx] = func(x[idx])`` for an elementwise ``func`` (applied once per index occurrence
        is not guaranteed; JAX applies it via a scatter; here it is applied to the gathered values)."""
        cur = getitem(self.array, self.index, mode="clip" if mode is None else mode)
        return self.set(func(cur), indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)


class _IndexUpdateHelper:
    """The ``.at`` property of an array: ``x.at[idx]`` returns an ``_IndexUpdateRef``."""

    __slots__ = ("array",)

    def __init__(self, array: Any):
        self.array = array

    def __getitem__(self, index: Any) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


# --------------------------------------------------------------------------------------------
# nonzero & co.


def nonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> tuple:
    """Indices of the nonzero elements of ``a``, one array per dimension, of JAX's default int
    dtype (int32; int64 with x64 on).

    Without ``size`` the input must be concrete (the result shape depends on its values). With
    ``size`` the result has exactly ``size`` entries: truncated, or padded with ``fill_value``
    (0 by default; a scalar or one value per dimension).
    """
    _util.check_arraylike("nonzero", a)
    a = _util.to_fjax(a, "nonzero")
    if a.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use jnp.atleast_1d(scalar).nonzero() instead.")
    if size is None:
        msg = (
            "The size argument of jnp.nonzero must be statically specified to use jnp.nonzero within JAX "
            "transformations."
        )
        if isinstance(a, Tracer) and a.to_concrete_value() is None:
            # JAX asks for the count of nonzeros (an int32[] it stages first), so its error names that
            from fjax.numpy import _reductions  # noqa: PLC0415

            core.concrete_or_error(
                _reductions.sum(lax.ne(a, lax.full_like(a, 0)), dtype=dtypes.default_int_dtype()), msg
            )
        c = core.concrete_or_error(a, msg)
        c = np.asarray(c)
        return tuple(Array(np.asarray(i, dtype=dtypes.default_int_dtype()), False) for i in np.nonzero(c))
    size = int(
        core.concrete_or_error(
            size,
            "The size argument of jnp.nonzero must be statically specified to use jnp.nonzero within JAX "
            "transformations.",
        )
    )
    if fill_value is None:
        fills = [0] * a.ndim
    else:
        fv = np.asarray(core.concrete_or_error(fill_value, "nonzero fill_value"))
        if fv.ndim == 0:
            fills = [fv.item()] * a.ndim
        elif fv.shape == (a.ndim,):
            fills = [v.item() for v in fv]
        else:
            raise ValueError(f"nonzero: fill_value must be a scalar or a tuple of length {a.ndim}; got {fv.shape}")
    idt = dtypes.default_int_dtype()
    if not isinstance(a, Tracer) or a.to_concrete_value() is not None:
        c = np.asarray(core.concrete_or_error(a))
        idxs = np.nonzero(c)
        out = []
        for i, f in zip(idxs, fills):
            i = i[:size]
            pad = np.full(size - len(i), f, dtype=idt)
            out.append(Array(np.concatenate([i.astype(idt), pad]), False))
        return tuple(out)
    return _nonzero_traced(a, size, fills, idt)


def _nonzero_traced(a: Any, size: int, fills: list, idt: np.dtype) -> tuple:
    """nonzero with a static ``size`` on a traced array, via cumsum + scatter (as JAX does)."""
    from fjax.lax import other  # noqa: PLC0415

    flat = lax.reshape(a, (a.size,))
    mask = lax.ne(flat, Array(np.zeros((), a.dtype), False))
    m32 = lax.convert_element_type(mask, idt)
    if a.size == 0 or size == 0:
        return tuple(Array(np.full(size, f, dtype=idt), False) for f in fills)
    csum = other.cumsum(m32, 0)
    # position k of the output is the flat index of the (k+1)-th nonzero
    # out_flat[k] = sum_j [csum[j] <= k] = number of elements before the (k+1)-th nonzero
    ks = lax.broadcasted_iota(idt, (size, a.size), 0)
    before = lax.convert_element_type(lax.le(lax.broadcast_in_dim(csum, (size, a.size), (1,)), ks), idt)
    flat_idx = lax.reduce_sum(before, (1,))
    total = lax.reduce_sum(m32, (0,))
    valid = lax.lt(lax.iota(idt, size), total)
    out = []
    rem = flat_idx
    strides = [math.prod(a.shape[i + 1 :]) for i in range(a.ndim)]
    for st, n, f in zip(strides, a.shape, fills):
        q = lax.div(rem, Array(np.array(st, idt), False))
        rem = lax.rem(rem, Array(np.array(st, idt), False))
        del n
        out.append(lax.select(valid, q, lax.full((size,), f, idt)))
    return tuple(out)


def flatnonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """Indices of the nonzero elements of ``ravel(a)``."""
    _util.check_arraylike("flatnonzero", a)
    a = _util.to_fjax(a, "flatnonzero")
    return nonzero(lax.reshape(a, (a.size,)), size=size, fill_value=fill_value)[0]


def argwhere(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """Indices of the nonzero elements, as an array of shape (num_nonzero, a.ndim)."""
    _util.check_arraylike("argwhere", a)
    a = _util.to_fjax(a, "argwhere")
    if a.ndim == 0:
        a = lax.reshape(a, (1,))
        res = nonzero(a, size=size, fill_value=fill_value)
        n = core.get_aval(res[0]).shape[0]
        return lax.full((n, 0), 0, dtypes.default_int_dtype())
    res = nonzero(a, size=size, fill_value=fill_value)
    n = core.get_aval(res[0]).shape[0]
    cols = [lax.reshape(r, (n, 1)) for r in res]
    if len(cols) == 1:
        return cols[0]
    return _slicing().concatenate(cols, 1)
