"""``random_bcoo``: random BCOO arrays."""

from __future__ import annotations

import math
import operator
from typing import Any, Callable, Sequence

import numpy as np

import fjax
from fjax import dtypes, random
from fjax import numpy as jnp
from fjax.experimental.sparse.bcoo import BCOO


def random_bcoo(
    key: Any,
    shape: Sequence[int],
    *,
    dtype: Any = None,
    indices_dtype: Any = None,
    nse: float | int = 0.2,
    n_batch: int = 0,
    n_dense: int = 0,
    unique_indices: bool = True,
    sorted_indices: bool = False,
    generator: Callable[..., Any] = random.uniform,
    **kwds: Any,
) -> BCOO:
    """A random BCOO array; ``0 < nse < 1`` is a fraction of the sparse size."""
    shape = tuple(map(operator.index, shape))
    n_batch, n_dense = operator.index(n_batch), operator.index(n_dense)
    if n_batch < 0 or n_dense < 0 or n_batch + n_dense > len(shape):
        raise ValueError(f"Invalid {n_batch=}, {n_dense=} for {shape=}")
    n_sparse = len(shape) - n_batch - n_dense
    batch_shape, sparse_shape = shape[:n_batch], shape[n_batch : n_batch + n_sparse]
    dense_shape = shape[n_batch + n_sparse :]
    sparse_size = math.prod(sparse_shape)
    if not 0 <= nse < sparse_size:
        raise ValueError(f"got {nse=}, expected to be between 0 and {sparse_size}")
    if 0 < nse < 1:
        nse = int(math.ceil(nse * sparse_size))
    nse = operator.index(nse)
    if dtype is None:
        # JAX's default is ``jnp.float_`` (float64): with x64 off the generator warns that it is
        # truncated to float32, as in JAX
        dtype = jnp.float64
    if indices_dtype is None:
        indices_dtype = jnp.int64 if fjax.config.jax_enable_x64 else jnp.int32
    else:
        # JAX casts the indices with ``.astype(indices_dtype)``, which warns for a truncated 64-bit
        # request; fjax's own calls never warn, so the request is checked here, for the caller
        indices_dtype = dtypes.canonicalize_user_dtype(indices_dtype, "astype", stacklevel=2)
    if sparse_size > np.iinfo(np.dtype(indices_dtype)).max:
        raise ValueError(
            f"{indices_dtype=} does not have enough range to generate sparse indices of size {sparse_size}."
        )
    batch_size = math.prod(batch_shape)
    keys = random.split(key, batch_size + 1)

    def one(k: Any) -> Any:
        if not sparse_shape:
            return jnp.zeros((nse, n_sparse), indices_dtype)
        flat = random.choice(k, sparse_size, shape=(nse,), replace=not unique_indices).astype(indices_dtype)
        return jnp.stack(jnp.unravel_index(flat, sparse_shape), -1).astype(indices_dtype)

    indices = fjax.vmap(one)(keys[1:]).reshape(batch_shape + (nse, n_sparse))
    data = generator(keys[0], shape=batch_shape + (nse,) + dense_shape, dtype=dtype, **kwds)
    mat = BCOO((data, indices), shape=shape)
    return mat.sort_indices() if sorted_indices else mat
