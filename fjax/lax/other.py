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

from fjax import _debug_nans, core, dtypes
from fjax.core import Primitive, ShapedArray
from fjax.dtypes import kind as _dkind
from fjax.interpreters import ad, batching
from fjax.interpreters.ad import Zero
from fjax.lax import _complex_ref, lax
from fjax.lax.assoc import associative_scan

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


def _canon_axis(axis: int, ndim: int, name: str, shape: tuple | None = None) -> int:
    """``axis`` in [0, ndim); out of range, JAX's ValueError (which names the ``shape`` where JAX's
    shape rule raises it: the cumulative reductions)."""
    axis = int(axis)
    if not -ndim <= axis < ndim:
        if shape is not None:
            raise ValueError(f"axis {axis} is out of bounds for array of shape {tuple(shape)}")
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim if ndim else axis


def _check_kind(name: str, aval: Any, kinds: str, what: str) -> None:
    if _dkind(aval.dtype) not in kinds:
        raise TypeError(f"{name} does not accept dtype {aval.dtype.name}. Accepted dtypes are subtypes of {what}.")


def _zero_out(out: Any) -> Zero:
    return Zero(ad.tangent_aval(core.get_aval(out)))


# ---------------------------------------------------------------------------------------------
# cumulative reductions


def _cumulative_abstract(name: str, kinds: str, what: str) -> Callable:
    def rule(x: Any, *, axis: int, reverse: bool) -> ShapedArray:
        _check_kind(name, x, kinds, what)
        if not 0 <= axis < x.ndim:
            raise ValueError(f"axis {axis} is out of bounds for array of shape {x.shape}")
        return ShapedArray(x.shape, x.dtype, x.weak_type)

    return rule


_COMPLEX_CHOOSERS = {np.maximum: _complex_ref.complex_max, np.minimum: _complex_ref.complex_min}


def _complex_choose_accumulate(choose: Callable, x: np.ndarray, axis: int, reverse: bool) -> np.ndarray:
    """cummax/cummin of complex values in JAX's lexicographic order (real part, then imaginary
    part; numpy's accumulate would propagate NaNs, which XLA's compare does not)."""
    y = np.moveaxis(np.array(x, copy=True), axis, 0)
    order = range(y.shape[0] - 2, -1, -1) if reverse else range(1, y.shape[0])
    step = 1 if reverse else -1
    for i in order:
        y[i] = choose(y[i + step], y[i])
    return np.moveaxis(y, 0, axis)


def _cumulative_impl(ufunc: np.ufunc) -> Callable:
    def acc(x: np.ndarray, axis: int, reverse: bool) -> np.ndarray:
        if reverse:
            return np.flip(ufunc.accumulate(np.flip(x, axis), axis=axis, dtype=x.dtype), axis)
        return ufunc.accumulate(x, axis=axis, dtype=x.dtype)

    def impl(x: np.ndarray, *, axis: int, reverse: bool) -> np.ndarray:
        if _dkind(x.dtype) == "c" and ufunc in _COMPLEX_CHOOSERS:
            return _complex_choose_accumulate(_COMPLEX_CHOOSERS[ufunc], x, axis, reverse)
        with np.errstate(all="ignore"):
            try:
                return acc(x, axis, reverse)
            except TypeError:
                # ml_dtypes' narrow integers (int4, uint2, ...) have no maximum/minimum loops:
                # the same values in a wider integer, exactly
                if _dkind(x.dtype) not in "iu":
                    raise
                wide = np.dtype(np.int16 if _dkind(x.dtype) == "i" else np.uint16)
                return acc(x.astype(wide), axis, reverse).astype(x.dtype)

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


ad.deflinear2(cumsum_p, _cumsum_transpose)

cumprod_p = _cumulative_primitive("cumprod", np.multiply, "iufc", "number")


def _scan_tangent(combine: Callable, x: Any, t: Any, axis: int, reverse: bool) -> Any:
    """The tangent of ``associative_scan(combine, x)`` along ``t``: O(n) memory (the cumulative
    primitives' own impls are sequential numpy accumulations; only their derivatives use this)."""
    _, (tout,) = ad.jvp_flat(lambda v: [associative_scan(combine, v, reverse=reverse, axis=axis)], [x], [t])
    return ad.instantiate_zeros(tout)


def _cumprod_jvp(primals: list, tangents: list, *, axis: int, reverse: bool) -> tuple:
    (x,), (t,) = primals, tangents
    out = cumprod_p.bind(x, axis=axis, reverse=reverse)
    if type(t) is Zero:
        return out, _zero_out(out)
    # exact with zeros in x (no division by x), as JAX's associative-scan derivative
    return out, _scan_tangent(lax.mul, x, t, axis, reverse)


ad.primitive_jvps[cumprod_p] = _cumprod_jvp

cummax_p = _cumulative_primitive("cummax", np.maximum, "iufc", "number")
cummin_p = _cumulative_primitive("cummin", np.minimum, "iufc", "number")


def _cumchooser_jvp(prim: Primitive) -> Callable:
    # the tangent of the associative scan of max/min (as JAX): the tangent of the chosen element;
    # two-way ties split equally, longer runs of ties unequally (the scan's tree shape)
    combine = lax.max if prim is cummax_p else lax.min

    def jvp(primals: list, tangents: list, *, axis: int, reverse: bool) -> tuple:
        (x,), (t,) = primals, tangents
        out = prim.bind(x, axis=axis, reverse=reverse)
        if type(t) is Zero:
            return out, _zero_out(out)
        return out, _scan_tangent(combine, x, t, axis, reverse)

    return jvp


ad.primitive_jvps[cummax_p] = _cumchooser_jvp(cummax_p)
ad.primitive_jvps[cummin_p] = _cumchooser_jvp(cummin_p)

cumlogsumexp_p = _cumulative_primitive("cumlogsumexp", np.logaddexp, "f", "floating")


@_debug_nans.as_unit("logaddexp")
def _logaddexp_weighted(a: tuple, b: tuple) -> tuple:
    """Combine ``(logsumexp, softmax-weighted tangent sum)`` of two runs of a prefix."""
    (xa, ta), (xb, tb) = a, b
    m = lax.max(xa, xb)
    r = lax.add(m, lax.log1p(lax.exp(lax.neg(lax.abs(lax.sub(xa, xb))))))
    r = lax.select(lax.is_finite(m), r, m)  # +-inf and nan: logaddexp is m itself

    def posinf0(v: Any) -> Any:  # +inf read as 0, as JAX's logaddexp derivative (exp(inf - inf) is 1)
        return lax.select(lax.eq(v, lax.full_like(v, np.inf)), lax.full_like(v, 0), v)

    def w(x: Any) -> Any:  # exp(x - r), 0 for an all -inf prefix (where x - r is nan)
        wx = lax.exp(lax.sub(posinf0(x), posinf0(r)))
        return lax.select(lax.eq(x, lax.full_like(x, -np.inf)), lax.full_like(x, 0), wx)

    return r, lax.add(lax.mul(w(xa), ta), lax.mul(w(xb), tb))


def _cumlogsumexp_jvp(primals: list, tangents: list, *, axis: int, reverse: bool) -> tuple:
    (x,), (t,) = primals, tangents
    out = cumlogsumexp_p.bind(x, axis=axis, reverse=reverse)
    if type(t) is Zero:
        return out, _zero_out(out)
    # d out_i = sum_{j in prefix(i)} exp(x_j - out_i) t_j, accumulated by an associative scan of
    # (logsumexp, weighted tangent) pairs: O(n) memory and stable for any spread of x
    _, tout = associative_scan(_logaddexp_weighted, (x, t), reverse=reverse, axis=axis)
    return out, tout


ad.primitive_jvps[cumlogsumexp_p] = _cumlogsumexp_jvp


def _cumulative_wrapper(prim: Primitive, doc: str) -> Callable:
    def f(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
        shape = core.get_aval(operand).shape
        return core.bind1(prim, operand, axis=_canon_axis(axis, len(shape), prim.name, shape), reverse=bool(reverse))

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


#: bfloat16 and the float8/float6/float4 dtypes: ordered through float32, which holds each of their
#: values exactly (float8_e8m0fnu's 0 would be NaN; the 4- and 6-bit types have no sign bit at the
#: top of their byte, float8_e8m0fnu none at all; the fnuz NaN becomes a negative NaN, as in XLA)
_ORDER_AS_F32 = frozenset(dt for dt in (np.dtype(dtypes.bfloat16), *dtypes.low_precision_dtypes) if _dkind(dt) == "f")


#: the float8 dtypes whose one NaN is the bit pattern of -0 (float8_e4m3fnuz, float8_e5m2fnuz,
#: float8_e4m3b11fnuz): XLA's sort puts it first, below every number, where other NaNs go last
_NAN_FIRST = frozenset(dt for dt in _ORDER_AS_F32 if dt.name.endswith("fnuz"))


def _sort_keys(x: np.ndarray) -> list[np.ndarray]:
    """numpy lexsort keys (least significant first) giving JAX's order for one key operand:
    NaNs last (first for the fnuz float8 dtypes), -0.0 equal to 0.0, complex numbers by (real, imag)."""
    if _dkind(x.dtype) == "f":
        nan_first = x.dtype in _NAN_FIRST
        if x.dtype in _ORDER_AS_F32:
            x = x.astype(np.float32)
        nan = np.isnan(x)
        return [np.where(nan, 0, x), ~nan if nan_first else nan]
    if _dkind(x.dtype) == "c":
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
            shapes = " ".join(str(tuple(a.shape)) for a in operands)
            raise TypeError(f"Arguments to sort must have equal shapes, got: {shapes}")
    if not 1 <= num_keys <= len(operands):
        raise ValueError(f"num_keys={num_keys} must be between 1 and len(operand)={len(operands)}")
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
    together, ordered lexicographically by the first ``num_keys`` of them (NaNs last; the one NaN
    of the fnuz float8 dtypes first, as XLA sorts it)."""
    single = not isinstance(operand, (tuple, list))
    ops = [operand] if single else list(operand)
    if single and num_keys != 1:
        raise ValueError(f"num_keys={num_keys} must equal 1 for a single operand.")
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
    if _dkind(x.dtype) == "f":
        if x.dtype in _ORDER_AS_F32:
            x = x.astype(np.float32)
        bits = np.ascontiguousarray(x).view(np.dtype(f"int{x.dtype.itemsize * 8}"))
        mag = np.array(np.iinfo(bits.dtype).max, bits.dtype)  # (int16/32/64)
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
    if _dkind(x.dtype) == "c":
        raise ValueError("top_k is not compatible with complex inputs.")
    if x.ndim == 0:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension 0")
    if not 0 <= axis < x.ndim:
        raise ValueError(f"axis argument out of range: axis={axis} for operand.shape={x.shape}")
    if k < 0:
        raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
    if x.shape[axis] < k:
        raise ValueError(
            f"k argument to top_k must be no larger than size along axis; got k={k} with shape={list(x.shape)} "
            f"and axis={axis}"
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
        raise ValueError(f"axis {axis} is out of bounds for array of dimension 0")
    k = int(k)
    ax = _canon_axis(axis, aval.ndim, "top_k")
    vals, idx = core.bind(top_k_p, (operand,), dict(k=k, axis=ax))
    return vals, idx
