"""Sorting and searching for fjax.numpy: sort, argsort, lexsort, searchsorted, unique.

All sorts are built on the multi-operand ``lax.sort`` (NaNs sort last); argsort sorts an iota
operand alongside the keys.
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from fjax import core
from fjax.core import Array, Tracer
from fjax.dtypes import kind as _dkind
from fjax.lax import lax
from fjax.numpy import _util

__all__ = ["argsort", "lexsort", "searchsorted", "sort", "unique"]

_INDEX_DTYPE = np.dtype(np.int32)


def _lax_sort(operands: Sequence[Any], dimension: int, is_stable: bool, num_keys: int) -> Any:
    from fjax.lax import other  # noqa: PLC0415

    return other.sort(tuple(operands), dimension=dimension, is_stable=is_stable, num_keys=num_keys)


def _prep(fn: str, a: Any, axis: Any) -> tuple[Any, int]:
    _util.check_arraylike(fn, a)
    x = _util.to_fjax(a, fn)
    if axis is None:
        x = lax.reshape(x, (x.size,))
        return x, 0
    if x.ndim == 0:
        raise ValueError(f"{fn}: axis {axis} is out of bounds for array of dimension 0")
    return x, _util.canonicalize_axis(operator.index(axis), x.ndim, fn)


def sort(
    a: Any, axis: int | None = -1, *, kind: Any = None, order: Any = None, stable: bool = True, descending: bool = False
) -> Any:
    """Sorted copy of ``a`` along ``axis`` (flattened when None); NaNs go last (first if descending)."""
    if order is not None:
        raise ValueError("The 'order' argument to sort is not supported.")
    x, ax = _prep("sort", a, axis)
    if x.ndim == 0 or x.shape[ax] <= 1:
        return x
    (out,) = _lax_sort([x], ax, stable, 1)
    return lax.rev(out, (ax,)) if descending else out


def argsort(
    a: Any, axis: int | None = -1, *, kind: Any = None, order: Any = None, stable: bool = True, descending: bool = False
) -> Any:
    """Indices (int32) that sort ``a`` along ``axis``; with ``stable`` ties keep their order, also
    when ``descending``."""
    if order is not None:
        raise ValueError("The 'order' argument to argsort is not supported.")
    x, ax = _prep("argsort", a, axis)
    if x.ndim == 0:
        return Array(np.zeros((), _INDEX_DTYPE), False)
    n = x.shape[ax]
    if descending:
        x = lax.rev(x, (ax,))
    iota = lax.broadcasted_iota(_INDEX_DTYPE, tuple(x.shape), ax)
    if n <= 1:
        idx = iota
    else:
        _, idx = _lax_sort([x, iota], ax, stable, 1)
    if descending:
        idx = lax.sub(Array(np.array(n - 1, _INDEX_DTYPE), False), lax.rev(idx, (ax,)))
    return idx


def lexsort(keys: Sequence[Any], axis: int = -1) -> Any:
    """Indirect stable sort by several keys; the last key is the primary one."""
    if isinstance(keys, (Array, Tracer, np.ndarray)):
        if np.ndim(keys) == 0:
            raise TypeError("lexsort: keys must be a sequence of arrays, got a scalar")
        keys = [keys[i] if not isinstance(keys, np.ndarray) else keys[i] for i in range(len(keys))]
    keys = list(keys)
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    _util.check_arraylike("lexsort", *keys)
    ks = [_util.to_fjax(k, "lexsort") for k in keys]
    shp = tuple(ks[0].shape)
    if any(tuple(k.shape) != shp for k in ks):
        raise ValueError(f"all keys need to be the same shape, got {[tuple(k.shape) for k in ks]}")
    if len(shp) == 0:
        return Array(np.zeros((), _INDEX_DTYPE), False)
    ax = _util.canonicalize_axis(operator.index(axis), len(shp), "lexsort")
    iota = lax.broadcasted_iota(_INDEX_DTYPE, shp, ax)
    outs = _lax_sort(ks[::-1] + [iota], ax, True, len(ks))
    return outs[-1]


def _nan_aware_lt(a: Any, b: Any) -> Any:
    """a < b in the total order that puts NaN last."""
    if _dkind(core.get_aval(a).dtype) not in "fc":
        return lax.lt(a, b)
    a_nan = lax.ne(a, a)
    b_nan = lax.ne(b, b)
    return lax.bitwise_or(
        lax.bitwise_and(lax.lt(a, b), lax.bitwise_not(a_nan)), lax.bitwise_and(b_nan, lax.bitwise_not(a_nan))
    )


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None, *, method: str = "scan") -> Any:
    """Insertion points (int32) that keep the sorted 1-D ``a`` sorted when ``v`` is inserted.

    ``side='left'`` gives the first suitable position, ``'right'`` the last. NaNs sort last.
    """
    _util.check_arraylike("searchsorted", a, v)
    if side not in ("left", "right"):
        raise ValueError(f"{side!r} is an invalid value for keyword 'side'. Expected one of ['left', 'right']")
    if method not in ("scan", "scan_unrolled", "sort", "compare_all"):
        raise ValueError(f"invalid argument method={method!r} for searchsorted")
    x = _util.to_fjax(a, "searchsorted")
    q = _util.to_fjax(v, "searchsorted")
    if x.ndim != 1:
        raise ValueError(f"searchsorted: a must be 1-D, got shape {tuple(x.shape)}")
    if sorter is not None:
        from fjax.numpy._indexing import getitem  # noqa: PLC0415

        x = getitem(x, _util.to_fjax(sorter, "searchsorted"))
    x, q = _util.promote_dtypes("searchsorted", x, q)
    n = x.shape[0]
    qshape = tuple(q.shape)
    if n == 0:
        return lax.full(qshape, 0, _INDEX_DTYPE)
    qb = lax.broadcast_in_dim(q, qshape + (n,), tuple(range(len(qshape))))
    xb = lax.broadcast_in_dim(x, qshape + (n,), (len(qshape),))
    cmp = _nan_aware_lt(xb, qb) if side == "left" else lax.bitwise_not(_nan_aware_lt(qb, xb))
    return lax.reduce_sum(lax.convert_element_type(cmp, _INDEX_DTYPE), (len(qshape),))


def unique(
    ar: Any,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: int | None = None,
    *,
    equal_nan: bool = True,
    size: int | None = None,
    fill_value: Any = None,
    sorted: bool = True,
) -> Any:  # noqa: A002
    """Sorted unique elements of a concrete array (numpy.unique semantics, int32 index outputs).

    With ``size`` the outputs are truncated or padded to that length (values padded with
    ``fill_value``, by default the smallest unique value). Under tracing the input must be
    concrete: the number of unique values determines the output shape.
    """
    _util.check_arraylike("unique", ar)
    x = _util.to_fjax(ar, "unique")
    c = np.asarray(
        core.concrete_or_error(
            x,
            "The error arose in jnp.unique(). The size argument of jnp.unique must be statically specified "
            "to use jnp.unique within JAX transformations, and fjax additionally requires a concrete input.",
        )
    )
    res = np.unique(c, return_index=True, return_inverse=True, return_counts=True, axis=axis, equal_nan=equal_nan)
    vals, idx, inv, cnt = res
    if axis is None:
        inv = inv.reshape(c.shape) if c.ndim else inv.reshape(())
    if size is not None:
        size = operator.index(size)
        ax = 0 if axis is None else _util.canonicalize_axis(axis, c.ndim, "unique")
        k = vals.shape[ax]
        if k >= size:
            vals = np.take(vals, np.arange(size), axis=ax)
            idx, cnt = idx[:size], cnt[:size]
        else:
            if fill_value is None:
                fv = np.take(vals, [0], axis=ax) if k else np.zeros_like(np.take(np.zeros_like(c), [0], axis=ax))
            else:
                fv = np.broadcast_to(
                    np.asarray(fill_value, dtype=c.dtype), np.take(vals, [0], axis=ax).shape if k else (1,)
                )
            pad = np.repeat(fv, size - k, axis=ax)
            vals = np.concatenate([vals, pad], axis=ax)
            idx = np.concatenate([idx, np.zeros(size - k, idx.dtype)])
            cnt = np.concatenate([cnt, np.zeros(size - k, cnt.dtype)])
    out = [Array(np.ascontiguousarray(vals.astype(c.dtype)), x.weak_type)]
    if return_index:
        out.append(Array(idx.astype(_INDEX_DTYPE), False))
    if return_inverse:
        out.append(Array(np.asarray(inv).astype(_INDEX_DTYPE), False))
    if return_counts:
        out.append(Array(cnt.astype(_INDEX_DTYPE), False))
    return out[0] if len(out) == 1 else tuple(out)
