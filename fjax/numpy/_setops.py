"""``jnp.setdiff1d``, ``intersect1d`` and ``setxor1d`` step for step as JAX's
(``jax._src.numpy.setops``): built on ``jnp.unique`` and ``lax.sort``, so NaNs (kept apart, as
``!=`` sees them), signed zeros and the low-precision floats (bfloat16, float8) come out as JAX's,
with and without ``size``. Re-exported by ``fjax/numpy/_more2.py``.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from fjax import core, lax
from fjax.numpy import _util


def _jnp() -> Any:
    from fjax import numpy as jnp  # noqa: PLC0415 - the jnp API sits on top of this module

    return jnp


def _unique_true_size(x: Any, return_index: bool = False, fill_value: Any = None) -> tuple:
    """``unique(x, size=x.size)`` (and its first indices) and the number of unique values (JAX's
    ``_unique(..., return_true_size=True)``)."""
    from fjax.numpy import _sorting  # noqa: PLC0415

    out = _sorting._unique(x, 0, return_index, False, False, True, x.shape[0], fill_value)
    _, mask, _ = _sorting._unique_sorted_mask(x, 0, True)
    return (*out, mask.sum())


def _in1d_invert(arr1: Any, arr2: Any) -> Any:
    jnp = _jnp()
    if arr1.size == 0 or arr2.size == 0:
        return jnp.ones(arr1.shape, dtype=bool)
    return jnp.all(jnp.not_equal(arr1[:, None], arr2[None, :]), axis=-1)


def setdiff1d(
    ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None, fill_value: Any = None
) -> Any:
    """Sorted unique values of ``ar1`` not in ``ar2`` (``size``: padded with ``fill_value``, 0 by
    default, as JAX)."""
    jnp = _jnp()
    _util.check_arraylike("setdiff1d", ar1, ar2)
    arr1, arr2 = jnp.ravel(jnp.asarray(ar1)), jnp.ravel(jnp.asarray(ar2))
    if size is None:
        core.concrete_or_error(arr1, "The error arose in setdiff1d()")
    else:
        size = operator.index(core.concrete_or_error(size, "The error arose in setdiff1d()"))
    fill = jnp.full_like(arr1, 0 if fill_value is None else fill_value, shape=())
    if arr1.size == 0:
        return jnp.full_like(arr1, fill, shape=size or 0)
    if not assume_unique:
        arr1 = jnp.unique(arr1, size=size and arr1.size)
    mask = _in1d_invert(arr1, arr2)
    if size is None:
        return arr1[np.asarray(core.concrete_or_error(mask, "The error arose in setdiff1d()"))]
    if not assume_unique:
        # drop the places of unique()'s padding (copies of its first value)
        n_unique = arr1.size + 1 - jnp.sum(arr1 == arr1[0])
        mask = jnp.where(jnp.arange(arr1.size) < n_unique, mask, False)
    return jnp.where(jnp.arange(size) < mask.sum(), arr1[jnp.nonzero(mask, size=size)[0]], fill)


def intersect1d(
    ar1: Any,
    ar2: Any,
    assume_unique: bool = False,
    return_indices: bool = False,
    *,
    size: int | None = None,
    fill_value: Any = None,
) -> Any:
    """Sorted unique values in both arrays (and their first indices with ``return_indices``)."""
    jnp = _jnp()
    arr1, arr2 = _util.promote_dtypes("intersect1d", ar1, ar2)
    arr1, arr2 = jnp.ravel(arr1), jnp.ravel(arr2)
    if size is not None:
        size = operator.index(core.concrete_or_error(size, "The error arose in intersect1d()"))
        return _intersect1d_size(arr1, arr2, fill_value, assume_unique, size, return_indices)
    ind1 = ind2 = None
    if not assume_unique:
        if return_indices:
            arr1, ind1 = jnp.unique(arr1, return_index=True)
            arr2, ind2 = jnp.unique(arr2, return_index=True)
        else:
            arr1, arr2 = jnp.unique(arr1), jnp.unique(arr2)
    arr = jnp.concatenate([arr1, arr2])
    iota = lax.broadcasted_iota(np.int32, arr.shape, 0)
    aux, order = lax.sort([arr, iota], is_stable=True, num_keys=1)
    mask = np.asarray(core.concrete_or_error(aux[1:] == aux[:-1], "The error arose in intersect1d()"))
    out = aux[:-1][mask]
    if not return_indices:
        return out
    i1, i2 = order[:-1][mask], order[1:][mask] - arr1.shape[0]
    if not assume_unique:
        i1, i2 = ind1[i1], ind2[i2]
    return out, i1, i2


def _intersect1d_size(arr1: Any, arr2: Any, fill_value: Any, assume_unique: bool, size: int, return_indices: bool):
    jnp = _jnp()
    if assume_unique:
        ind1, num1 = jnp.arange(arr1.size), jnp.full((), arr1.size)
        ind2 = jnp.arange(arr2.size)
        arr = jnp.concatenate([arr1, arr2])
        aux, order = lax.sort([arr, jnp.arange(arr.size)], is_stable=True, num_keys=1)
        mask = jnp.ones(arr.size, dtype=bool)
    else:
        arr1, ind1, num1 = _unique_true_size(arr1, True, 0)
        arr2, ind2, num2 = _unique_true_size(arr2, True, 0)
        arr = jnp.zeros(arr1.size + arr2.size, dtype=arr1.dtype)
        arr = lax.dynamic_update_slice(arr, arr1, (0,))
        arr = lax.dynamic_update_slice(arr, arr2, (num1,))
        mask = jnp.arange(arr.size) < num1 + num2
        _, aux, order = lax.sort([~mask, arr, jnp.arange(arr.size)], is_stable=True, num_keys=2)
    aux_mask = (aux[1:] == aux[:-1]) & mask[1:]
    num_results = aux_mask.sum()
    if aux.size:
        val_indices = jnp.nonzero(aux_mask, size=size, fill_value=aux.size)[0]
        vals = aux.at[val_indices].get(mode="fill", fill_value=0)
    else:
        val_indices = jnp.arange(0)
        vals = jnp.zeros(size, aux.dtype)
    valid = jnp.arange(len(vals)) < num_results
    if fill_value is None:
        vals = jnp.where(valid, vals, vals.max())
        vals = jnp.where(valid, vals, vals.min())
    else:
        vals = jnp.where(valid, vals, fill_value)
    if not return_indices:
        return vals
    i1 = order.at[val_indices].get(mode="fill", fill_value=arr1.size)
    i1 = jnp.where(valid, i1, arr1.size)
    i2 = order.at[val_indices + 1].get(mode="fill", fill_value=arr2.size) - num1
    i2 = jnp.where(valid, i2, arr2.size)
    if not assume_unique:
        i1 = ind1.at[i1].get(mode="fill", fill_value=ind1.size)
        i2 = ind2.at[i2].get(mode="fill", fill_value=ind2.size)
    return vals, i1, i2


def setxor1d(
    ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None, fill_value: Any = None
) -> Any:
    """Sorted values in exactly one of the arrays (NaNs, never equal, in both counted apart)."""
    jnp = _jnp()
    arr1, arr2 = _util.promote_dtypes("setxor1d", ar1, ar2)
    arr1, arr2 = jnp.ravel(arr1), jnp.ravel(arr2)
    if size is not None:
        size = operator.index(core.concrete_or_error(size, "The error arose in setxor1d()"))
        return _setxor1d_size(arr1, arr2, fill_value, assume_unique, size)
    if not assume_unique:
        arr1, arr2 = jnp.unique(arr1), jnp.unique(arr2)
    aux = jnp.concatenate([arr1, arr2])
    if aux.size == 0:
        return aux
    aux = jnp.sort(aux)
    flag = jnp.concatenate([jnp.array([True]), aux[1:] != aux[:-1], jnp.array([True])])
    keep = core.concrete_or_error(flag[1:] & flag[:-1], "The error arose in setxor1d()")
    return aux[np.asarray(keep)]


def _setxor1d_size(arr1: Any, arr2: Any, fill_value: Any, assume_unique: bool, size: int) -> Any:
    jnp = _jnp()
    t = jnp.array([True])
    if assume_unique:
        aux = jnp.sort(jnp.concatenate([arr1, arr2]))
        flag = jnp.concatenate([jnp.array([bool(aux.size)]), aux[1:] != aux[:-1], t])
    else:
        u1, n1 = _unique_true_size(arr1)
        u2, n2 = _unique_true_size(arr2)
        arr = jnp.zeros(u1.size + u2.size, dtype=u1.dtype)
        arr = lax.dynamic_update_slice(arr, u1, (0,))
        arr = lax.dynamic_update_slice(arr, u2, (n1,))
        num_unique = n1 + n2
        mask = jnp.arange(arr.size + 1) < num_unique + 1
        _, aux = lax.sort([~mask[1:], arr], is_stable=True, num_keys=2)
        flag = mask & jnp.concatenate([jnp.array([bool(aux.size)]), aux[1:] != aux[:-1], ~t]).at[num_unique].set(True)
    aux_mask = flag[1:] & flag[:-1]
    num_results = aux_mask.sum()
    if aux.size:
        indices = jnp.nonzero(aux_mask, size=size, fill_value=len(aux))[0]
        vals = aux.at[indices].get(mode="fill", fill_value=0)
    else:
        vals = jnp.zeros(size, aux.dtype)
    valid = jnp.arange(len(vals)) < num_results
    if fill_value is None:
        vals = jnp.where(valid, vals, vals.max())
        return jnp.where(valid, vals, vals.min())
    return jnp.where(valid, vals, fill_value)
