"""``jax.ops``: segment reductions (``segment_sum``, ``segment_prod``, ``segment_max``, ``segment_min``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fjax import _out_sharding, core
from fjax import numpy as jnp

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]


def _segment(name: str, data: Any, segment_ids: Any, num_segments: int | None, mode: Any, op: str, ident: Any) -> Any:
    data = jnp.asarray(data)
    ids = jnp.asarray(segment_ids)
    if not jnp.issubdtype(ids.dtype, jnp.integer):
        raise TypeError(f"{name}: segment_ids must be integers, got {ids.dtype}")
    if ids.ndim != 1 or data.ndim < 1 or data.shape[0] != ids.shape[0]:
        raise ValueError(
            f"{name}: segment_ids must be 1-D with the length of data's leading axis; got data shape {data.shape} "
            f"and segment_ids shape {ids.shape}"
        )
    if num_segments is None:
        c = np.asarray(
            core.concrete_or_error(ids, f"The error occurred in jax.ops.{name}: pass num_segments under tracing")
        )
        num_segments = int(c.max()) + 1 if c.size else 0
    num_segments = int(core.concrete_or_error(num_segments, f"num_segments argument of jax.ops.{name}"))
    init = jnp.full((num_segments, *data.shape[1:]), ident(data.dtype), data.dtype)
    return getattr(init.at[ids], op)(data, mode="drop" if mode is None else mode)


def _max_ident(dt: Any) -> Any:
    return -np.inf if jnp.issubdtype(dt, jnp.inexact) else (False if dt == np.bool_ else jnp.iinfo(dt).min)


def _min_ident(dt: Any) -> Any:
    return np.inf if jnp.issubdtype(dt, jnp.inexact) else (True if dt == np.bool_ else jnp.iinfo(dt).max)


def segment_sum(data: Any, segment_ids: Any, num_segments: int | None = None, indices_are_sorted: bool = False,
                unique_indices: bool = False, bucket_size: int | None = None, mode: Any = None,
                out_sharding: Any = None) -> Any:  # fmt: skip
    """Sum of the rows of ``data`` in each segment (``segment_ids[i]`` is row i's segment);
    ids outside ``[0, num_segments)`` are dropped."""
    out = _segment("segment_sum", data, segment_ids, num_segments, mode, "add", lambda dt: 0)
    return _out_sharding.apply(out, out_sharding, "segment_sum")


def segment_prod(data: Any, segment_ids: Any, num_segments: int | None = None, indices_are_sorted: bool = False,
                 unique_indices: bool = False, bucket_size: int | None = None, mode: Any = None,
                out_sharding: Any = None) -> Any:  # fmt: skip
    """Product of the rows of ``data`` in each segment (1 for empty segments)."""
    out = _segment("segment_prod", data, segment_ids, num_segments, mode, "multiply", lambda dt: 1)
    return _out_sharding.apply(out, out_sharding, "segment_prod")


def segment_max(data: Any, segment_ids: Any, num_segments: int | None = None, indices_are_sorted: bool = False,
                unique_indices: bool = False, bucket_size: int | None = None, mode: Any = None,
                out_sharding: Any = None) -> Any:  # fmt: skip
    """Maximum of the rows of ``data`` in each segment (-inf, or the dtype's minimum, for empty ones)."""
    out = _segment("segment_max", data, segment_ids, num_segments, mode, "max", _max_ident)
    return _out_sharding.apply(out, out_sharding, "segment_max")


def segment_min(data: Any, segment_ids: Any, num_segments: int | None = None, indices_are_sorted: bool = False,
                unique_indices: bool = False, bucket_size: int | None = None, mode: Any = None,
                out_sharding: Any = None) -> Any:  # fmt: skip
    """Minimum of the rows of ``data`` in each segment (+inf, or the dtype's maximum, for empty ones)."""
    out = _segment("segment_min", data, segment_ids, num_segments, mode, "min", _min_ident)
    return _out_sharding.apply(out, out_sharding, "segment_min")
