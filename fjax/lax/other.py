"""Cumulative reductions (cumsum, cumprod, cummax, cummin, cumlogsumexp), sort and top_k.

One block per primitive, rules right under it (see ``fjax/lax/lax.py``). Derivative rules are
written with fjax primitives only, so they compose to any order:

* ``cumsum`` is linear; its transpose is a cumsum in the opposite direction.
* ``cumprod``, ``cummax``, ``cummin`` and ``cumlogsumexp`` differentiate through a pairwise
  (``n x n`` along the scanned axis) formulation: exact when the input has zeros (cumprod) and
  splitting the tangent equally between tied maxima/minima (cummax/cummin).
* ``sort`` and ``top_k`` move tangents with the permutation they apply, which is recovered by
  sorting an iota along with the keys.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fjax import core
from fjax.core import Primitive, ShapedArray
from fjax.interpreters import ad, batching
from fjax.interpreters.ad import Zero
from fjax.lax import lax

__all__ = [
    "cumlogsumexp",
    "cumlogsumexp_p",
    "cummax",
    "cummax_p",
    "cummin",
    "cummin_p",
    "cumprod",
    "cumprod_p",
    "cumsum",
    "cumsum_p",
    "sort",
    "sort_key_val",
    "sort_p",
    "top_k",
    "top_k_p",
]

# ---------------------------------------------------------------------------------------------
# shared helpers


def _canon_axis(axis: int, ndim: int, name: str) -> int:
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for array of rank {ndim}")
    return axis % ndim if ndim else axis


def _check_kind(name: str, aval: Any, kinds: str, what: str) -> None:
    if aval.dtype.kind not in kinds:
        raise TypeError(
            f"{name} does not accept dtype {aval.dtype.name}. Accepted dtypes are subtypes of {what} "
            f"(got {core.short_dtype_name(aval.dtype)}{list(aval.shape)})."
        )


def _zero_out(out: Any) -> Zero:
    return Zero(ad.tangent_aval(core.get_aval(out)))


def _pairwise_iotas(shape: tuple, axis: int) -> tuple[Any, Any]:
    """Integer iotas over ``shape`` with a new axis inserted at ``axis``: (j along ``axis``, i along ``axis + 1``)."""
    big = shape[:axis] + (shape[axis],) + shape[axis:]
    j = lax.broadcasted_iota(np.int32, big, axis)
    i = lax.broadcasted_iota(np.int32, big, axis + 1)
    return j, i


def _expand_j(x: Any, axis: int) -> Any:
    """``x`` broadcast with a new axis at ``axis + 1``: the original axis plays the role of j."""
    shape = core.get_aval(x).shape
    big = shape[:axis] + (shape[axis],) + shape[axis:]
    dims = tuple(d for d in range(len(big)) if d != axis + 1)
    return lax.broadcast_in_dim(x, big, dims)


def _expand_i(x: Any, axis: int) -> Any:
    """``x`` broadcast with a new axis at ``axis``: the original axis (now ``axis + 1``) is i."""
    shape = core.get_aval(x).shape
    big = shape[:axis] + (shape[axis],) + shape[axis:]
    dims = tuple(d for d in range(len(big)) if d != axis)
    return lax.broadcast_in_dim(x, big, dims)


def _prefix_mask(shape: tuple, axis: int, reverse: bool) -> Any:
    """Boolean mask[j, i]: element j takes part in the cumulative result at i."""
    j, i = _pairwise_iotas(shape, axis)
    return lax.ge(j, i) if reverse else lax.le(j, i)


# ---------------------------------------------------------------------------------------------
# cumulative reductions


def _cumulative_abstract(name: str, kinds: str, what: str) -> Callable:
    def rule(x: Any, *, axis: int, reverse: bool) -> ShapedArray:
        _check_kind(name, x, kinds, what)
        if not 0 <= axis < x.ndim:
            raise ValueError(f"axis {axis} is out of bounds for array of shape {x.shape}")
        return ShapedArray(x.shape, x.dtype, x.weak_type)

    return rule


def _cumulative_impl(ufunc: np.ufunc) -> Callable:
    def impl(x: np.ndarray, *, axis: int, reverse: bool) -> np.ndarray:
        with np.errstate(all="ignore"):
            if reverse:
                return np.flip(ufunc.accumulate(np.flip(x, axis), axis=axis, dtype=x.dtype), axis)
            return ufunc.accumulate(x, axis=axis, dtype=x.dtype)

    return impl


def _cumulative_batch(prim: Primitive) -> Callable:
    def rule(vals: list, dims: list, *, axis: int, reverse: bool) -> tuple:
        (x,), (d,) = vals, dims
        return prim.bind(x, axis=axis + 1 if d <= axis else axis, reverse=reverse), d

    return rule


def _cumulative_primitive(name: str, ufunc: np.ufunc, kinds: str, what: str) -> Primitive:
    p = Primitive(name)
    p.def_impl(_cumulative_impl(ufunc))
    p.def_abstract_eval(_cumulative_abstract(name, kinds, what))
    batching.primitive_batchers[p] = _cumulative_batch(p)
    return p


cumsum_p = _cumulative_primitive("cumsum", np.add, "iufc", "number")


def _cumsum_transpose(ct: Any, x: Any, *, axis: int, reverse: bool) -> list:
    return [cumsum_p.bind(ct, axis=axis, reverse=not reverse)]


ad.deflinear(cumsum_p, _cumsum_transpose)

cumprod_p = _cumulative_primitive("cumprod", np.multiply, "iufc", "number")


def _cumprod_jvp(primals: list, tangents: list, *, axis: int, reverse: bool) -> tuple:
    (x,), (t,) = primals, tangents
    out = cumprod_p.bind(x, axis=axis, reverse=reverse)
    if type(t) is Zero:
        return out, _zero_out(out)
    # d out_i = sum_{j in prefix(i)} t_j * prod_{k in prefix(i), k != j} x_k. For each j, the
    # products with x_j replaced by one are a cumprod along the i axis: exact even with zeros.
    shape = core.get_aval(x).shape
    j, i = _pairwise_iotas(shape, axis)
    xe = _expand_i(x, axis)
    xe = lax.select(lax.eq(j, i), lax.full_like(xe, 1), xe)
    prods = cumprod_p.bind(xe, axis=axis + 1, reverse=reverse)
    mask = lax.ge(j, i) if reverse else lax.le(j, i)
    prods = lax.select(mask, prods, lax.full_like(prods, 0))
    return out, lax.reduce_sum(lax.mul(prods, _expand_j(t, axis)), (axis,))


ad.primitive_jvps[cumprod_p] = _cumprod_jvp

cummax_p = _cumulative_primitive("cummax", np.maximum, "iuf", "number")
cummin_p = _cumulative_primitive("cummin", np.minimum, "iuf", "number")


def _cumchooser_jvp(prim: Primitive) -> Callable:
    # the tangent at i is that of the element(s) of the prefix equal to out_i, split equally
    # between ties (JAX splits two-way ties equally too; for three or more ties its tree-shaped
    # associative scan gives unequal shares)
    def jvp(primals: list, tangents: list, *, axis: int, reverse: bool) -> tuple:
        (x,), (t,) = primals, tangents
        out = prim.bind(x, axis=axis, reverse=reverse)
        if type(t) is Zero:
            return out, _zero_out(out)
        shape = core.get_aval(x).shape
        xe = _expand_j(x, axis)
        oe = _expand_i(out, axis)
        hit = lax.eq(xe, oe)
        if core.get_aval(x).dtype.kind == "f":  # a NaN output comes from the NaN inputs
            hit = lax.bitwise_or(hit, lax.bitwise_and(lax.ne(xe, xe), lax.ne(oe, oe)))
        hit = lax.bitwise_and(hit, _prefix_mask(shape, axis, reverse))
        w = lax.convert_element_type(hit, core.get_aval(t).dtype)
        counts = lax.reduce_sum(w, (axis,))
        return out, lax.div(lax.reduce_sum(lax.mul(w, _expand_j(t, axis)), (axis,)), counts)

    return jvp


ad.primitive_jvps[cummax_p] = _cumchooser_jvp(cummax_p)
ad.primitive_jvps[cummin_p] = _cumchooser_jvp(cummin_p)

cumlogsumexp_p = _cumulative_primitive("cumlogsumexp", np.logaddexp, "f", "floating")


def _cumlogsumexp_jvp(primals: list, tangents: list, *, axis: int, reverse: bool) -> tuple:
    (x,), (t,) = primals, tangents
    out = cumlogsumexp_p.bind(x, axis=axis, reverse=reverse)
    if type(t) is Zero:
        return out, _zero_out(out)
    # d out_i = sum_{j in prefix(i)} exp(x_j - out_i) t_j (softmax weights of the prefix)
    shape = core.get_aval(x).shape
    mask = _prefix_mask(shape, axis, reverse)
    diff = lax.sub(_expand_j(x, axis), _expand_i(out, axis))
    diff = lax.select(mask, diff, lax.full_like(diff, -np.inf))
    w = lax.exp(diff)
    return out, lax.reduce_sum(lax.mul(w, _expand_j(t, axis)), (axis,))


ad.primitive_jvps[cumlogsumexp_p] = _cumlogsumexp_jvp


def _cumulative_wrapper(prim: Primitive, doc: str) -> Callable:
    def f(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
        ndim = core.get_aval(operand).ndim
        return core.bind1(prim, operand, axis=_canon_axis(axis, ndim, prim.name), reverse=bool(reverse))

    f.__name__ = prim.name
    f.__qualname__ = prim.name
    f.__doc__ = doc
    return f


cumsum = _cumulative_wrapper(cumsum_p, "Cumulative sum along ``axis`` (from the end if ``reverse``).")
cumprod = _cumulative_wrapper(cumprod_p, "Cumulative product along ``axis`` (from the end if ``reverse``).")
cummax = _cumulative_wrapper(cummax_p, "Cumulative maximum along ``axis`` (from the end if ``reverse``).")
cummin = _cumulative_wrapper(cummin_p, "Cumulative minimum along ``axis`` (from the end if ``reverse``).")
cumlogsumexp = _cumulative_wrapper(
    cumlogsumexp_p, "Cumulative log-sum-exp along ``axis`` (from the end if ``reverse``)."
)

# ---------------------------------------------------------------------------------------------
# gathering along an axis by integer indices (used by the sort and top_k derivative rules)


def _take_along_axis(x: Any, idx: Any, axis: int) -> Any:
    """``out[..., i, ...] = x[..., idx[..., i, ...], ...]`` along ``axis`` (``idx`` may be shorter
    along ``axis``; its other dims match ``x``'s), as one gather with every other dim batched."""
    from fjax.lax import slicing  # noqa: PLC0415 (sibling module)

    nd = core.get_aval(x).ndim
    others = tuple(d for d in range(nd) if d != axis)
    dn = slicing.GatherDimensionNumbers(
        offset_dims=(),
        collapsed_slice_dims=(axis,),
        start_index_map=(axis,),
        operand_batching_dims=others,
        start_indices_batching_dims=others,
    )
    indices = lax.expand_dims(idx, (nd,))
    return slicing.gather(x, indices, dn, (1,) * nd, mode="clip")


# ---------------------------------------------------------------------------------------------
# sort


def _sort_keys(x: np.ndarray) -> list[np.ndarray]:
    """numpy lexsort keys (least significant first) giving JAX's order for one key operand:
    NaNs last, -0.0 equal to 0.0, complex numbers by (real, imag)."""
    if x.dtype.kind == "f":
        nan = np.isnan(x)
        return [np.where(nan, 0, x), nan]
    if x.dtype.kind == "c":
        re, im = x.real, x.imag
        nan = np.isnan(re) | np.isnan(im)
        return [np.where(nan, 0, im), np.where(nan, 0, re), nan]
    return [x]


def _sort_impl(*operands: np.ndarray, dimension: int, is_stable: bool, num_keys: int) -> list:
    moved = [np.moveaxis(o, dimension, -1) for o in operands]
    keys: list = []
    for k in reversed(moved[:num_keys]):
        keys.extend(_sort_keys(k))
    if moved[0].shape[-1] == 0:
        return list(operands)
    perm = np.lexsort(keys, axis=-1)
    return [np.moveaxis(np.take_along_axis(o, perm, axis=-1), -1, dimension) for o in moved]


def _sort_abstract(*operands: Any, dimension: int, is_stable: bool, num_keys: int) -> list:
    if not operands:
        raise TypeError("sort requires at least one operand")
    shape = operands[0].shape
    for o in operands:
        if o.shape != shape:
            raise TypeError(f"sort: operands must all have the same shape, got {[tuple(a.shape) for a in operands]}")
    if not 1 <= num_keys <= len(operands):
        raise ValueError(f"sort: num_keys={num_keys} must be between 1 and the number of operands ({len(operands)})")
    if not 0 <= dimension < len(shape):
        raise ValueError(f"sort: dimension {dimension} is out of bounds for operand shape {shape}")
    return [ShapedArray(o.shape, o.dtype, o.weak_type) for o in operands]


sort_p = Primitive("sort")
sort_p.multiple_results = True
sort_p.def_impl(_sort_impl)
sort_p.def_abstract_eval(_sort_abstract)


def _sort_jvp(primals: list, tangents: list, *, dimension: int, is_stable: bool, num_keys: int) -> tuple:
    shape = core.get_aval(primals[0]).shape
    iota = lax.broadcasted_iota(np.int32, shape, dimension)
    *outs, perm = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable, num_keys=num_keys)
    touts = [t if type(t) is Zero else _take_along_axis(t, perm, dimension) for t in tangents]
    return outs, touts


def _sort_batch(vals: list, dims: list, *, dimension: int, is_stable: bool, num_keys: int, axis_size: int) -> tuple:
    vals = [batching.bdim_at_front(v, d, axis_size) for v, d in zip(vals, dims)]
    outs = sort_p.bind(*vals, dimension=dimension + 1, is_stable=is_stable, num_keys=num_keys)
    return outs, [0] * len(outs)


ad.primitive_jvps[sort_p] = _sort_jvp
batching.primitive_batchers[sort_p] = batching.wants_axis_size(_sort_batch)


def sort(operand: Any, dimension: int = -1, is_stable: bool = True, num_keys: int = 1) -> Any:
    """Sort along ``dimension``. ``operand`` is an array or a sequence of same-shape arrays sorted
    together, ordered lexicographically by the first ``num_keys`` of them (NaNs last)."""
    single = not isinstance(operand, (tuple, list))
    ops = [operand] if single else list(operand)
    if single and num_keys != 1:
        raise ValueError(f"sort: num_keys={num_keys} requires a sequence of operands")
    ndim = core.get_aval(ops[0]).ndim
    dim = _canon_axis(dimension, ndim, "sort")
    outs = core.bind(sort_p, ops, dict(dimension=dim, is_stable=bool(is_stable), num_keys=int(num_keys)))
    return outs[0] if single else tuple(outs)


def sort_key_val(keys: Any, values: Any, dimension: int = -1, is_stable: bool = True) -> tuple:
    """Sort ``keys`` along ``dimension`` and apply the same permutation to ``values``."""
    k, v = sort((keys, values), dimension=dimension, is_stable=is_stable, num_keys=1)
    return k, v


# ---------------------------------------------------------------------------------------------
# top_k


def _total_order_key(x: np.ndarray) -> list[np.ndarray]:
    """Lexsort keys for the IEEE total order top_k uses (-NaN < -inf < ... < -0.0 < 0.0 < ... < NaN)."""
    if x.dtype.kind == "f":
        bits = np.ascontiguousarray(x).view(np.dtype(f"int{x.dtype.itemsize * 8}"))
        mag = np.array(np.iinfo(bits.dtype).max, bits.dtype)
        return [np.where(bits < 0, bits ^ mag, bits)]
    return _sort_keys(x)


def _top_k_impl(x: np.ndarray, *, k: int, axis: int) -> list:
    xm = np.moveaxis(x, axis, -1)
    n = xm.shape[-1]
    # stable descending: sort the reversed array ascending, then reverse (ties keep lower index first)
    rev = xm[..., ::-1]
    keys = _total_order_key(rev)
    perm = np.lexsort(keys, axis=-1) if n else np.zeros(xm.shape, np.intp)
    idx = (n - 1 - perm)[..., ::-1][..., :k]
    vals = np.take_along_axis(xm, idx, axis=-1)
    return [np.moveaxis(vals, -1, axis), np.moveaxis(idx.astype(np.int32), -1, axis)]


def _top_k_abstract(x: Any, *, k: int, axis: int) -> list:
    if x.ndim == 0:
        raise TypeError("top_k operand must have >= 1 dimension, got ()")
    if not 0 <= axis < x.ndim:
        raise ValueError(f"top_k: axis {axis} is out of bounds for operand shape {x.shape}")
    if k < 0:
        raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
    if x.shape[axis] < k:
        raise ValueError(
            f"k argument to top_k must be no larger than size along axis {axis}, got {k} > "
            f"{x.shape[axis]} (operand shape {x.shape})"
        )
    shape = x.shape[:axis] + (k,) + x.shape[axis + 1 :]
    return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, np.dtype(np.int32), False)]


top_k_p = Primitive("top_k")
top_k_p.multiple_results = True
top_k_p.def_impl(_top_k_impl)
top_k_p.def_abstract_eval(_top_k_abstract)


def _top_k_jvp(primals: list, tangents: list, *, k: int, axis: int) -> tuple:
    (x,), (t,) = primals, tangents
    vals, idx = top_k_p.bind(x, k=k, axis=axis)
    if type(t) is Zero:
        return [vals, idx], [_zero_out(vals), _zero_out(idx)]
    return [vals, idx], [_take_along_axis(t, idx, axis), _zero_out(idx)]


def _top_k_batch(vals: list, dims: list, *, k: int, axis: int) -> tuple:
    (x,), (d,) = vals, dims
    outs = top_k_p.bind(x, k=k, axis=axis + 1 if d <= axis else axis)
    return outs, [d, d]


ad.primitive_jvps[top_k_p] = _top_k_jvp
batching.primitive_batchers[top_k_p] = _top_k_batch


def top_k(operand: Any, k: int, *, axis: int = -1) -> tuple:
    """The ``k`` largest entries along ``axis`` and their int32 indices: descending in IEEE total
    order (NaN above inf, -NaN below -inf, 0.0 above -0.0), ties by lower index."""
    aval = core.get_aval(operand)
    if aval.ndim == 0:
        raise TypeError("top_k operand must have >= 1 dimension, got ()")
    k = int(k)
    ax = _canon_axis(axis, aval.ndim, "top_k")
    vals, idx = core.bind(top_k_p, (operand,), dict(k=k, axis=ax))
    return vals, idx
