"""Sorting and searching for fjax.numpy: sort, argsort, lexsort, searchsorted, unique.

All sorts are built on the multi-operand ``lax.sort`` (NaNs sort last); argsort sorts an iota
operand alongside the keys.
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from fjax import core, dtypes
from fjax.core import Array, Tracer
from fjax.dtypes import kind as _dkind
from fjax.lax import lax
from fjax.numpy import _util

__all__ = ["argsort", "lexsort", "searchsorted", "sort", "unique"]

_INDEX_DTYPE = np.dtype(np.int32)


def _index_dtype() -> np.dtype:
    """The dtype of argsort/lexsort/unique indices: JAX's default int (int64 with x64 on)."""
    return dtypes.canonicalize_dtype(np.int64)


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
        raise ValueError(f"axis {axis} is out of bounds for array of dimension 0")
    return x, _util.canonicalize_axis(operator.index(axis), x.ndim, fn)


def sort(
    a: Any, axis: int | None = -1, *, kind: Any = None, order: Any = None, stable: bool = True, descending: bool = False
) -> Any:
    """Sorted copy of ``a`` along ``axis`` (flattened when None); NaNs go last (first if descending)."""
    _util.check_arraylike("sort", a)
    if kind is not None:  # (JAX 0.10.2's TypeErrors)
        raise TypeError(
            "'kind' argument to sort is not supported. Use stable=True or stable=False to specify sort stability."
        )
    if order is not None:
        raise TypeError("'order' argument to sort is not supported.")
    x, ax = _prep("sort", a, axis)
    if x.ndim == 0 or x.shape[ax] <= 1:
        return x
    (out,) = _lax_sort([x], ax, stable, 1)
    return lax.rev(out, (ax,)) if descending else out


def argsort(
    a: Any,
    axis: int | None = -1,
    *,
    kind: Any = None,
    order: Any = None,
    stable: bool = True,
    descending: bool = False,
    dtype: Any = None,
) -> Any:
    """Indices (int32, or ``dtype``) that sort ``a`` along ``axis``; with ``stable`` ties keep their
    order, also when ``descending``."""
    _util.check_arraylike("argsort", a)
    if kind is not None:  # (JAX 0.10.2's TypeErrors)
        raise TypeError(
            "'kind' argument to argsort is not supported. Use stable=True or stable=False to specify sort stability."
        )
    if order is not None:
        raise TypeError("'order' argument to argsort is not supported.")
    idt = _index_dtype() if dtype is None else dtypes.canonicalize_user_dtype(dtype, "argsort")
    x, ax = _prep("argsort", a, axis)
    if x.ndim == 0:
        return Array(np.zeros((), idt), False)
    n = x.shape[ax]
    if descending:
        x = lax.rev(x, (ax,))
    iota = lax.broadcasted_iota(idt, tuple(x.shape), ax)
    if n <= 1:
        idx = iota
    else:
        _, idx = _lax_sort([x, iota], ax, stable, 1)
    if descending:
        idx = lax.sub(Array(np.array(n - 1, idt), False), lax.rev(idx, (ax,)))
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
        return Array(np.zeros((), _index_dtype()), False)
    ax = _util.canonicalize_axis(operator.index(axis), len(shp), "lexsort")
    iota = lax.broadcasted_iota(_index_dtype(), shp, ax)
    outs = _lax_sort(ks[::-1] + [iota], ax, True, len(ks))
    return outs[-1]


def _nan_aware_lt(a: Any, b: Any) -> Any:
    """a < b in the order sort uses: NaN last (first for the fnuz float8 dtypes, as XLA sorts them)."""
    from fjax.lax import other  # noqa: PLC0415

    dt = core.get_aval(a).dtype
    if _dkind(dt) not in "fc":
        return lax._lt(a, b)
    # lax._lt: the unchecked comparison, as complex values sort lexicographically
    a_nan = lax.ne(a, a)
    b_nan = lax.ne(b, b)
    if dt in other._NAN_FIRST:
        # NaN below every number: a < b when b is not NaN and a is NaN or numerically smaller
        return lax.bitwise_and(lax.bitwise_or(lax._lt(a, b), a_nan), lax.bitwise_not(b_nan))
    return lax.bitwise_or(
        lax.bitwise_and(lax._lt(a, b), lax.bitwise_not(a_nan)), lax.bitwise_and(b_nan, lax.bitwise_not(a_nan))
    )


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None, *, method: str = "scan") -> Any:
    """Insertion points (int32) that keep the sorted 1-D ``a`` sorted when ``v`` is inserted.

    ``side='left'`` gives the first suitable position, ``'right'`` the last. NaNs sort last.
    """
    _util.check_arraylike("searchsorted", a, v)
    x = _util.to_fjax(a, "searchsorted")
    q = _util.to_fjax(v, "searchsorted")
    # JAX's checks, in its order and words
    if x.ndim != 1:
        raise ValueError("a should be 1-dimensional")
    if side not in ("left", "right"):
        raise ValueError(f"invalid argument side={side!r}, expected 'left' or 'right'")
    if method not in ("scan", "scan_unrolled", "sort", "compare_all"):
        raise ValueError(
            f"invalid argument method={method!r}, expected one of ['compare_all', 'scan', 'scan_unrolled', 'sort']"
        )
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


_UNIQUE_SIZE_HINT = (
    "To make jnp.unique() compatible with JIT and other transforms, you can specify "
    "a concrete value for the size argument, which will determine the output size."
)


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
    sorted: bool = True,  # noqa: A002
) -> Any:
    """Sorted unique elements (or slices along ``axis``) of an array, with int32 first indices,
    inverse indices and counts on request, as ``jax.numpy.unique``.

    The order is ``lax.sort``'s (NaN last, first for the fnuz float8 dtypes); NaNs count as one
    value unless ``equal_nan=False``. Without ``size`` the input must be concrete (the output
    shape depends on its values); with it the outputs are truncated or padded to ``size``
    (values with ``fill_value``, by default the smallest value; indices with the first's).
    """
    del sorted  # JAX's outputs are sorted whatever it asks
    _util.check_arraylike("unique", ar)
    x = _util.to_fjax(ar, "unique")
    if size is None:
        core.concrete_or_error(x, "The error arose for the first argument of jnp.unique(). " + _UNIQUE_SIZE_HINT)
    else:
        size = operator.index(
            core.concrete_or_error(size, "The error arose for the size argument of jnp.unique(). " + _UNIQUE_SIZE_HINT)
        )
    shape = tuple(x.shape)
    if axis is None:
        ax = 0
        x = lax.reshape(x, (int(np.prod(shape, dtype=np.int64)),))
    else:
        ax = _util.canonicalize_axis(operator.index(axis), x.ndim, "unique")
    out = _unique(x, ax, return_index, return_inverse, return_counts, equal_nan, size, fill_value)
    if return_inverse and axis is None:
        i = 2 if return_index else 1
        out = (*out[:i], lax.reshape(out[i], shape), *out[i + 1 :])
    return out[0] if len(out) == 1 else out


def _unique_sorted_mask(ar: Any, axis: int, equal_nan: bool) -> tuple:
    """The slices along ``axis`` sorted (lexicographically), a mask of the first of each run of
    equal ones, and the sorting permutation (``jax._src.numpy.setops._unique_sorted_mask``)."""
    from fjax import numpy as jnp  # noqa: PLC0415 - the jnp API sits on top of this module

    aux = jnp.moveaxis(ar, axis, 0)
    if _dkind(aux.dtype) == "c":
        # one NaN for a complex number NaN in either part, as numpy's unique
        aux = jnp.where(jnp.isnan(aux), Array(np.array(np.nan, aux.dtype), False), aux)
    n, *rest = aux.shape
    m = int(np.prod(rest, dtype=np.int64))
    if m == 0:
        n = 1
        perm = jnp.zeros(1, dtype=_index_dtype())
    else:
        perm = lexsort(jnp.reshape(aux, (n, m)).T[::-1])
    aux = aux[perm]
    if aux.size:
        neq = lax.ne(aux[1:], aux[:-1])
        if _dkind(aux.dtype) in "fc" and equal_nan:
            both_nan = lax.bitwise_and(jnp.isnan(aux[1:]), jnp.isnan(aux[:-1]))
            neq = lax.bitwise_and(neq, lax.bitwise_not(both_nan))
        mask = jnp.ones(n, dtype=bool).at[1:].set(jnp.any(neq, tuple(range(1, aux.ndim))))
    else:
        mask = jnp.zeros(n, dtype=bool)
    return aux, mask, perm


def _unique(
    ar: Any,
    axis: int,
    return_index: bool,
    return_inverse: bool,
    return_counts: bool,
    equal_nan: bool,
    size: int | None,
    fill_value: Any,
) -> tuple:
    # jax._src.numpy.setops._unique, step for step
    from fjax import numpy as jnp  # noqa: PLC0415

    if ar.shape[axis] == 0 and size and fill_value is None:
        raise ValueError("jnp.unique: for zero-sized input with nonzero size argument, fill_value must be specified")
    aux, mask, perm = _unique_sorted_mask(ar, axis, equal_nan)
    if size is None:
        keep = np.asarray(core.concrete_or_error(mask, "The error arose in jnp.unique(). " + _UNIQUE_SIZE_HINT))
        ind = Array(np.nonzero(keep)[0].astype(_index_dtype()), False)
    else:
        ind = jnp.nonzero(mask, size=size)[0]
    result = aux[ind] if aux.size else aux
    if size is not None and fill_value is not None:
        fill = jnp.asarray(fill_value).astype(result.dtype)
        if result.shape[0]:
            valid = jnp.expand_dims(jnp.arange(size) < mask.sum(), tuple(range(1, result.ndim)))
            result = jnp.where(valid, result, fill)
        else:
            result = jnp.full((size, *result.shape[1:]), fill, dtype=result.dtype)
    out: tuple = (jnp.moveaxis(result, 0, axis),)
    if return_index:
        out += (perm[ind] if aux.size else perm,)
    if return_inverse:
        if aux.size:
            imask = jnp.cumsum(mask, dtype=_index_dtype()) - 1
            inv = jnp.zeros(mask.shape, dtype=_index_dtype()).at[perm].set(imask)
        else:
            inv = jnp.zeros(ar.shape[axis], dtype=_index_dtype())
        out += (inv,)
    if return_counts:
        if aux.size:
            if size is None:
                idx = jnp.append(ind, mask.size)
            else:
                idx = jnp.nonzero(mask, size=size + 1)[0]
                idx = idx.at[1:].set(jnp.where(idx[1:], idx[1:], mask.size))
            out += (jnp.diff(idx),)
        elif ar.shape[axis]:
            out += (jnp.full((1,), ar.shape[axis], dtype=_index_dtype()),)
        else:
            out += (jnp.zeros(0, dtype=_index_dtype()),)
    return out
