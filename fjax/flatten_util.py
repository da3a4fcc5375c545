"""``jax.flatten_util.ravel_pytree``: a pytree of arrays as one flat vector, and back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fjax import dtypes
from fjax import numpy as jnp
from fjax.tree_util import tree_flatten

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """Flatten ``pytree``'s leaves into one 1-D array and return ``(flat, unravel)``.

    Leaves are promoted to their common dtype (as ``jnp.concatenate``); ``unravel(flat)``
    rebuilds the pytree with each leaf's own shape and dtype. Differentiable and traceable.
    """
    leaves, treedef = tree_flatten(pytree)
    leaves = [jnp.asarray(x) for x in leaves]
    shapes = [x.shape for x in leaves]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    from_dtypes = [x.dtype for x in leaves]
    if leaves:
        to_dtype = dtypes.result_type(*from_dtypes)
        flat = jnp.concatenate([jnp.ravel(x).astype(to_dtype) for x in leaves])
    else:
        to_dtype = dtypes.canonicalize_dtype(np.float32)
        flat = jnp.zeros((0,), to_dtype)
    offsets = np.cumsum([0, *sizes])

    def unravel(arr: Any) -> Any:
        arr = jnp.asarray(arr)
        if arr.shape != flat.shape:
            raise ValueError(f"The unravel function expected an array of shape {flat.shape}, got shape {arr.shape}.")
        if arr.dtype != to_dtype:
            raise TypeError(f"The unravel function expected an array of dtype {to_dtype}, got dtype {arr.dtype}.")
        parts = [
            arr[int(offsets[i]) : int(offsets[i + 1])].reshape(shapes[i]).astype(from_dtypes[i])
            for i in range(len(leaves))
        ]
        return treedef.unflatten(parts)

    return flat, unravel
