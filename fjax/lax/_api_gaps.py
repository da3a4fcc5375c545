"""More names of ``jax.lax``, each a composition of fjax primitives (so jvp/vjp/vmap/jit and the
compiled lowering come from theirs): ``mulhi``, ``index_take``, ``broadcast_like``, ``stack`` /
``unstack``, ``scatter_sub``, ``shape_as_value``, ``ragged_dot`` / ``ragged_dot_general`` and
the patch-extracting and unshared convolutions ``conv_general_dilated_patches`` /
``conv_general_dilated_local``; plus fjax's collective, scan and linear-solve primitives under
the ``*_p`` names JAX gives them (their ``.name`` is what JAX prints in jaxprs).

JAX makes ``mulhi``, ``stack``, ``unstack`` and ``scatter_sub`` primitives of their own
(``mulhi_p``, ...); fjax builds them from existing ones and so has no such objects.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

import fjax.lax as lax
from fjax import core, dtypes
from fjax.dtypes import kind as _dkind
from fjax.lax._dot_algorithms import RaggedDotDimensionNumbers
from fjax.lax.control_flow.scan import scan_p
from fjax.lax.convolution import ConvDimensionNumbers, conv_dimension_numbers
from fjax.lax.linear_solve import linear_solve_p
from fjax.lax.parallel import (
    all_gather_p,
    all_to_all_p,
    axis_index_p,
    pmax_p,
    pmin_p,
    ppermute_p,
    psum_p,
)

__all__ = [
    "all_gather_p",
    "all_to_all_p",
    "axis_index_p",
    "broadcast_like",
    "conv_general_dilated_local",
    "conv_general_dilated_patches",
    "index_take",
    "linear_solve_p",
    "mulhi",
    "pmax_p",
    "pmin_p",
    "ppermute_p",
    "psum_p",
    "ragged_dot",
    "ragged_dot_general",
    "scan_p",
    "scatter_sub",
    "shape_as_value",
    "stack",
    "unstack",
]


def _arr(x: Any, name: str) -> Any:
    from fjax.numpy import _util  # noqa: PLC0415 - fjax.numpy imports fjax.lax

    return _util.to_fjax(x, name)


# ---------------------------------------------------------------------------------------------
# mulhi: the high half of the double-width product, from half-width pieces


def _mulhi_unsigned(a: Any, b: Any, bits: int) -> Any:
    h = bits // 2
    half = lax.full_like(a, h)
    mask = lax.full_like(a, (1 << h) - 1)
    a_lo, a_hi = lax.bitwise_and(a, mask), lax.shift_right_logical(a, half)
    b_lo, b_hi = lax.bitwise_and(b, mask), lax.shift_right_logical(b, half)
    ll, lh = lax.mul(a_lo, b_lo), lax.mul(a_lo, b_hi)
    hl, hh = lax.mul(a_hi, b_lo), lax.mul(a_hi, b_hi)
    # every partial product fits in `bits` bits; carry the middle column into the high half
    mid = lax.add(lax.add(lax.shift_right_logical(ll, half), lax.bitwise_and(lh, mask)), lax.bitwise_and(hl, mask))
    hi = lax.add(hh, lax.add(lax.shift_right_logical(lh, half), lax.shift_right_logical(hl, half)))
    return lax.add(hi, lax.shift_right_logical(mid, half))


def mulhi(x: Any, y: Any, /) -> Any:
    """The high N bits of the 2N-bit product of N-bit integers ``x`` and ``y`` (``jax.lax.mulhi``):
    signed for signed dtypes, e.g. ``mulhi(int32(-5), int32(3)) == -1``."""
    x, y = _arr(x, "mulhi"), _arr(y, "mulhi")
    xa, ya = core.get_aval(x), core.get_aval(y)
    for i, a in enumerate((xa, ya)):
        if _dkind(a.dtype) not in "iu":
            raise TypeError(
                f"mulhi does not accept dtype {a.dtype.name} at position {i}. Accepted dtypes at position {i} "
                "are subtypes of integer."
            )
    if xa.dtype != ya.dtype:
        if xa.weak_type or ya.weak_type:  # a Python int adopts the array's dtype
            dt = ya.dtype if xa.weak_type else xa.dtype
            x, y = lax.convert_element_type(x, dt), lax.convert_element_type(y, dt)
            xa, ya = core.get_aval(x), core.get_aval(y)
        else:
            raise TypeError(f"lax.mulhi requires arguments to have the same dtypes, got {xa.dtype}, {ya.dtype}.")
    if xa.ndim and ya.ndim and xa.ndim != ya.ndim:
        raise TypeError(
            "mulhi: arrays must have the same number of dimensions, got "
            f"{{{min(xa.ndim, ya.ndim)}, {max(xa.ndim, ya.ndim)}}}"
        )
    shape = np.broadcast_shapes(xa.shape, ya.shape)
    x = broadcast_like(x, lax.full(shape, 0, xa.dtype)) if xa.shape != shape else x
    y = broadcast_like(y, lax.full(shape, 0, ya.dtype)) if ya.shape != shape else y
    dt = np.dtype(xa.dtype)
    bits = 8 * dt.itemsize
    if _dkind(dt) == "u":
        return _mulhi_unsigned(x, y, bits)
    udt = np.dtype(f"u{dt.itemsize}")
    xu, yu = lax.convert_element_type(x, udt), lax.convert_element_type(y, udt)
    hi = _mulhi_unsigned(xu, yu, bits)
    # signed high half = unsigned high half - (x < 0 ? y : 0) - (y < 0 ? x : 0)  (mod 2**bits)
    zero = lax.full_like(xu, 0)
    hi = lax.sub(hi, lax.select(lax.lt(x, lax.full_like(x, 0)), yu, zero))
    hi = lax.sub(hi, lax.select(lax.lt(y, lax.full_like(y, 0)), xu, zero))
    return lax.convert_element_type(hi, dt)


# ---------------------------------------------------------------------------------------------
# small shape helpers


def index_take(src: Any, idxs: Any, axes: Sequence[int]) -> Any:
    """Gather from ``src`` along ``axes``: ``idxs`` has shape ``(len(axes), N)`` (one row of
    indices per axis) and the result, shape ``(N, *other dims)``, holds
    ``src[idxs[0, n], :, idxs[1, n], ...]`` placed at ``axes``. Indices wrap modulo the axis size
    (negative ones count from the end), as ``jax.lax.index_take``."""
    src, idxs = _arr(src, "index_take"), _arr(idxs, "index_take")
    sa, ia = core.get_aval(src), core.get_aval(idxs)
    axes = tuple(operator.index(a) for a in axes)
    if _dkind(ia.dtype) not in "iu":
        raise TypeError(f"index_take: indices must be integers, got {ia.dtype.name}")
    if ia.ndim != 2:
        raise ValueError(f"index_take: idxs must have shape (len(axes), N), got {ia.shape}")
    if ia.shape[0] != len(axes):
        raise TypeError(
            f"index_take: idxs has {ia.shape[0]} rows of indices for the {len(axes)} axes {axes} "
            f"(idxs shape {ia.shape}, src shape {sa.shape})"
        )
    if list(axes) != sorted(axes) or len(set(axes)) != len(axes):
        raise TypeError(f"collapsed_slice_dims in gather op must be sorted; got {axes}")
    if any(not 0 <= a < sa.ndim for a in axes):
        raise ValueError(f"index_take: axes {axes} out of range for src of shape {sa.shape}")
    cols = []
    for i, ax in enumerate(axes):
        n = lax.full_like(idxs, sa.shape[ax], shape=(ia.shape[1],))
        row = lax.reshape(lax.slice_in_dim(idxs, i, i + 1, axis=0), (ia.shape[1],))
        row = lax.rem(lax.add(lax.rem(row, n), n), n)  # the index modulo the axis size
        cols.append(lax.broadcast_in_dim(row, (ia.shape[1], 1), (0,)))
    indices = lax.concatenate(cols, 1)
    others = [d for d in range(sa.ndim) if d not in axes]
    dn = lax.GatherDimensionNumbers(
        offset_dims=tuple(range(1, 1 + len(others))), collapsed_slice_dims=axes, start_index_map=axes
    )
    sizes = tuple(1 if d in axes else sa.shape[d] for d in range(sa.ndim))
    return lax.gather(src, indices, dn, sizes, mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def broadcast_like(arr: Any, like_arr: Any) -> Any:
    """``arr`` broadcast (numpy-style: leading axes added, size-1 axes stretched) to the shape of
    ``like_arr`` (``jax.lax.broadcast_like``); ValueError when it does not fit."""
    arr = _arr(arr, "broadcast_like")
    a = core.get_aval(arr)
    shape = core.get_aval(_arr(like_arr, "broadcast_like")).shape
    lead = len(shape) - a.ndim
    if lead < 0 or any(d not in (1, s) for d, s in zip(a.shape, shape[lead:])):
        raise ValueError(
            f"Incompatible types for broadcasting: input type={a.str_short()} and requested type="
            f"{a.update(shape=shape).str_short()}"
        )
    # the size-1 axes that stretch are dropped first, so broadcast_in_dim maps the rest 1:1
    keep = [i for i, d in enumerate(a.shape) if d == shape[lead + i]]
    squeezed = lax.reshape(arr, tuple(a.shape[i] for i in keep)) if len(keep) != a.ndim else arr
    return lax.broadcast_in_dim(squeezed, shape, tuple(lead + i for i in keep))


def stack(operands: Sequence[Any], axis: int = 0) -> Any:
    """Stack arrays of one shape and dtype along a new ``axis`` (``jax.lax.stack``)."""
    xs = [_arr(x, "stack") for x in operands]
    if not xs:
        raise ValueError("lax.stack requires at least one operand")
    avals = [core.get_aval(x) for x in xs]
    if len({a.dtype for a in avals}) > 1:
        raise TypeError(
            "lax.stack requires arguments to have the same dtypes, got " + ", ".join(a.dtype.name for a in avals) + "."
        )
    if len({a.shape for a in avals}) > 1:
        raise ValueError(
            "All input arrays must have the same shape. Got " + ", ".join(str(a.shape) for a in avals) + "."
        )
    nd = avals[0].ndim + 1
    if not -nd <= axis < nd:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {nd}")
    axis %= nd
    return lax.concatenate([lax.expand_dims(x, (axis,)) for x in xs], axis)


def unstack(x: Any, axis: int = 0) -> tuple[Any, ...]:
    """The slices of ``x`` along ``axis``, that axis removed (``jax.lax.unstack``)."""
    x = _arr(x, "unstack")
    a = core.get_aval(x)
    if not -a.ndim <= axis < a.ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {a.ndim}")
    axis %= a.ndim
    return tuple(lax.index_in_dim(x, i, axis, keepdims=False) for i in range(a.shape[axis]))


def scatter_sub(
    operand: Any,
    scatter_indices: Any,
    updates: Any,
    dimension_numbers: Any,
    *,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
) -> Any:
    """Scatter-subtract (``jax.lax.scatter_sub``): ``operand`` with each update subtracted at its
    index (duplicates all subtract); a ``scatter_add`` of the negated updates."""
    updates = _arr(updates, "scatter_sub")
    return lax.scatter_add(
        operand,
        scatter_indices,
        lax.neg(updates),
        dimension_numbers,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
        mode=mode,
    )


def shape_as_value(shape: Sequence[int]) -> np.ndarray:
    """``shape`` as an int32 array (``jax.lax.shape_as_value``; fjax shapes are always concrete)."""
    return np.asarray([operator.index(d) for d in shape], dtype=np.int32)


# ---------------------------------------------------------------------------------------------
# ragged dot: one group of consecutive lhs rows per rhs matrix, as a masked batched contraction


def _group_mask(group_sizes: Any, num_rows: int, name: str) -> Any:
    gs = _arr(group_sizes, name)
    ga = core.get_aval(gs)
    if ga.ndim != 1 or _dkind(ga.dtype) not in "iu":
        raise TypeError(f"{name}: group_sizes must be a 1-D integer array, got {ga.str_short()}")
    ends = lax.cumsum(gs, axis=0)
    starts = lax.sub(ends, gs)
    rows = lax.broadcasted_iota(ga.dtype, (ga.shape[0], num_rows), 1)
    lo = lax.broadcast_in_dim(starts, (ga.shape[0], num_rows), (0,))
    hi = lax.broadcast_in_dim(ends, (ga.shape[0], num_rows), (0,))
    return lax.bitwise_and(lax.ge(rows, lo), lax.lt(rows, hi))  # [g, rows]: row in group g


def ragged_dot_general(
    lhs: Any,
    rhs: Any,
    group_sizes: Any,
    ragged_dot_dimension_numbers: RaggedDotDimensionNumbers,
    precision: Any = None,
    preferred_element_type: Any = None,
    group_offset: Any = None,
    out_sharding: Any = None,
) -> Any:
    """``jax.lax.ragged_dot_general`` for a ragged lhs non-contracting dimension (the mode of
    ``ragged_dot``): the rows of that dimension fall into consecutive groups of ``group_sizes``,
    and group ``g`` is contracted with ``rhs``'s slice ``g`` along its group dimension; rows past
    the groups give zeros. The other modes (ragged contracting or batch dimension) and
    ``group_offset`` raise NotImplementedError. Computed as one masked contraction over all
    groups (g times the work of a grouped kernel)."""
    if group_offset is not None:
        raise NotImplementedError("ragged_dot_general: group_offset is not supported in fjax")
    lhs, rhs = _arr(lhs, "ragged_dot_general"), _arr(rhs, "ragged_dot_general")
    la, ra = core.get_aval(lhs), core.get_aval(rhs)
    rdn = ragged_dot_dimension_numbers
    (lc, rc), (lb, rb) = rdn.dot_dimension_numbers
    if len(rdn.lhs_ragged_dimensions) != 1 or len(rdn.rhs_group_dimensions) != 1:
        raise NotImplementedError(
            "ragged_dot_general: fjax supports one lhs ragged dimension and one rhs group dimension, got "
            f"{rdn.lhs_ragged_dimensions} and {rdn.rhs_group_dimensions}"
        )
    (r,), (gd,) = rdn.lhs_ragged_dimensions, rdn.rhs_group_dimensions
    if r in lc or r in lb:
        raise NotImplementedError(
            "ragged_dot_general: a ragged contracting or batch dimension is not supported in fjax "
            f"(lhs ragged dimension {r}, lhs contracting {lc}, lhs batch {lb})"
        )
    if gd in rc or gd in rb:
        raise TypeError(f"ragged_dot_general: the rhs group dimension {gd} cannot be contracting or batch")
    if la.dtype != ra.dtype:
        dt = dtypes.result_type(la.dtype, ra.dtype)
        lhs, rhs = lax.convert_element_type(lhs, dt), lax.convert_element_type(rhs, dt)
    ng = ra.shape[gd]
    gsa = core.get_aval(_arr(group_sizes, "ragged_dot_general"))
    if gsa.shape != (ng,):
        raise TypeError(f"expected rhs group dimension size to be {gsa.shape[-1] if gsa.ndim else 0}, got {ng}.")
    mask = _group_mask(group_sizes, la.shape[r], "ragged_dot_general")
    # lhs_g[g, ...] = lhs with the rows outside group g zeroed; g is contracted with rhs's group dim
    shape = (ng, *la.shape)
    lhs_g = lax.broadcast_in_dim(lhs, shape, tuple(range(1, la.ndim + 1)))
    m = lax.broadcast_in_dim(mask, shape, (0, r + 1))
    lhs_g = lax.select(m, lhs_g, lax.full_like(lhs_g, 0))
    dn = (((0, *(d + 1 for d in lc)), (gd, *rc)), (tuple(d + 1 for d in lb), tuple(rb)))
    return lax.dot_general(lhs_g, rhs, dn, precision=precision, preferred_element_type=preferred_element_type)


def ragged_dot(
    lhs: Any,
    rhs: Any,
    group_sizes: Any,
    precision: Any = None,
    preferred_element_type: Any = None,
    group_offset: Any = None,
    out_sharding: Any = None,
) -> Any:
    """Ragged matrix product (``jax.lax.ragged_dot``): ``lhs`` (m, k), ``rhs`` (g, k, n),
    ``group_sizes`` (g,); row i of the (m, n) result is ``lhs[i] @ rhs[group of i]``, where the
    groups are consecutive runs of ``group_sizes`` rows (rows past them give zeros)."""
    la, ra = core.get_aval(_arr(lhs, "ragged_dot")), core.get_aval(_arr(rhs, "ragged_dot"))
    if la.ndim != 2 or ra.ndim != 3:
        raise TypeError(f"ragged_dot: expected lhs (m, k) and rhs (g, k, n), got shapes {la.shape} and {ra.shape}")
    if la.shape[1] != ra.shape[1]:
        raise TypeError(f"ragged_dot: contracting sizes differ: lhs {la.shape} and rhs {ra.shape}")
    rdn = RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))
    return ragged_dot_general(lhs, rhs, group_sizes, rdn, precision, preferred_element_type, group_offset)


# ---------------------------------------------------------------------------------------------
# patches and unshared (locally connected) convolution


def _conv_dnums(lhs_shape: tuple, nsp: int, dimension_numbers: Any) -> ConvDimensionNumbers:
    return conv_dimension_numbers(lhs_shape, (1,) * (nsp + 2), dimension_numbers)


def conv_general_dilated_patches(
    lhs: Any,
    filter_shape: Sequence[int],
    window_strides: Sequence[int],
    padding: Any,
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """The patches ``conv_general_dilated`` would see (``jax.lax.conv_general_dilated_patches``):
    the output's feature dimension holds each flattened patch, channel-major then the window
    positions in ``rhs_spec``'s spatial order, so its size is ``C * prod(filter_shape)``. Built as
    a grouped convolution with a one-hot kernel (its gradient is the convolution's)."""
    lhs = _arr(lhs, "conv_general_dilated_patches")
    la = core.get_aval(lhs)
    filter_shape = tuple(operator.index(f) for f in filter_shape)
    nsp = la.ndim - 2
    if len(filter_shape) != nsp:
        raise ValueError(
            f"conv_general_dilated_patches: filter_shape {filter_shape} needs one entry per spatial dimension of "
            f"lhs shape {la.shape} ({nsp})"
        )
    dn = _conv_dnums(la.shape, nsp, dimension_numbers)
    c = la.shape[dn.lhs_spec[1]]
    k = math.prod(filter_shape)
    # kernel in OIHW order: output feature c*k + j reads channel c (group c) at window position j
    eye = np.eye(k, dtype=np.dtype(la.dtype)).reshape((k, 1, *filter_shape))
    kernel = np.tile(eye, (c, 1) + (1,) * nsp)
    dn = ConvDimensionNumbers(dn.lhs_spec, tuple(range(nsp + 2)), dn.out_spec)
    return lax.conv_general_dilated(
        lhs,
        core.Array(kernel, False),
        window_strides,
        padding,
        lhs_dilation,
        rhs_dilation,
        dn,
        feature_group_count=c,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def conv_general_dilated_local(
    lhs: Any,
    rhs: Any,
    window_strides: Sequence[int],
    padding: Any,
    filter_shape: Sequence[int],
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    precision: Any = None,
) -> Any:
    """Unshared (locally connected) convolution, ``jax.lax.conv_general_dilated_local``: a
    separate kernel at each output position. ``rhs``'s spatial dims are the output's spatial dims
    and its ``I`` dimension holds ``C * prod(filter_shape)`` (channel-major, then the window in
    ``rhs_spec``'s spatial order), as the patches of ``conv_general_dilated_patches``."""
    lhs, rhs = _arr(lhs, "conv_general_dilated_local"), _arr(rhs, "conv_general_dilated_local")
    la, ra = core.get_aval(lhs), core.get_aval(rhs)
    nsp = la.ndim - 2
    if ra.ndim != la.ndim:
        raise TypeError(f"conv_general_dilated_local: lhs and rhs ranks differ: shapes {la.shape} and {ra.shape}")
    lhs_prec, rhs_prec = precision if isinstance(precision, (tuple, list)) else (precision, precision)
    dn = _conv_dnums(la.shape, nsp, dimension_numbers)
    canon = tuple(range(nsp + 2))
    # patches with the output in canonical (N, C*K, spatial...) order
    patches = conv_general_dilated_patches(
        lhs,
        filter_shape,
        window_strides,
        padding,
        lhs_dilation,
        rhs_dilation,
        ConvDimensionNumbers(dn.lhs_spec, canon, canon),
        precision=lhs_prec,
    )
    pa = core.get_aval(patches)
    w = lax.transpose(rhs, dn.rhs_spec)  # (O, C*K, spatial...)
    wa = core.get_aval(w)
    if wa.shape[1] != pa.shape[1] or wa.shape[2:] != pa.shape[2:]:
        raise TypeError(
            f"conv_general_dilated_local: rhs shape {ra.shape} must have I = C * prod(filter_shape) = {pa.shape[1]} "
            f"and spatial dims equal to the output's {pa.shape[2:]}"
        )
    sp = tuple(range(2, nsp + 2))
    out = lax.dot_general(patches, w, (((1,), (1,)), (sp, sp)), precision=rhs_prec)  # (spatial..., N, O)
    out = lax.transpose(out, (nsp, nsp + 1, *range(nsp)))  # canonical (N, O, spatial...)
    return lax.transpose(out, tuple(int(i) for i in np.argsort(dn.out_spec)))
