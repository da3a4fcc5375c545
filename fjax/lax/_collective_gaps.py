"""``jax.lax.stage`` and ``jax.lax.ragged_all_to_all``, composed from fjax's trace machinery and
collectives (no new primitives).

``ragged_all_to_all`` gathers every member's operand and offsets along the named axis
(``all_gather``) and each member then picks the slices addressed to it with masked gathers, so it
runs wherever ``all_gather`` runs (``vmap`` with ``axis_name``, ``pmap``, ``shard_map``), under
``jit``, and is differentiable (it is linear in ``operand`` and ``output``). It moves the whole
operand to every member, where XLA sends only the slices.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fjax import core

__all__ = ["ragged_all_to_all", "stage"]


def stage(x: Any, /) -> Any:
    """Lift ``x`` into the active trace (the identity): under ``jit`` a numpy array or Python
    scalar becomes a traced value; outside any trace an ``fjax.Array``."""
    if not isinstance(x, (core.Array, core.Tracer)):
        try:
            core.get_aval(x)
        except TypeError:
            raise TypeError(
                "Error interpreting argument to stage as a JAX value. The problematic value is of type "
                f"{type(x)} and was passed to stage at position 0."
            ) from None
    return core.full_raise(core.find_top_trace([x]), x)


def _group_position(axis_name: Any, groups: Any) -> tuple[Any, int]:
    """This member's index within its group and the group size (the whole axis without groups)."""
    from fjax import lax  # noqa: PLC0415
    from fjax import numpy as jnp  # noqa: PLC0415

    if groups is None:
        return lax.axis_index(axis_name), lax.axis_size(axis_name)
    groups = [list(map(int, g)) for g in groups]
    size = len(groups[0])
    n = lax.axis_size(axis_name)
    flat = sorted(i for g in groups for i in g)
    if any(len(g) != size for g in groups) or flat != list(range(n)):
        raise ValueError(
            f"ragged_all_to_all: axis_index_groups must cover the {n} axis indices exactly once, in groups of "
            f"equal size; got {groups}"
        )
    table = np.zeros(n, np.int32)
    for g in groups:
        for pos, i in enumerate(g):
            table[i] = pos
    return jnp.asarray(table)[lax.axis_index(axis_name)], size


def ragged_all_to_all(
    operand: Any,
    output: Any,
    input_offsets: Any,
    send_sizes: Any,
    output_offsets: Any,
    recv_sizes: Any,
    *,
    axis_name: Any,
    axis_index_groups: Any = None,
) -> Any:
    """Ragged ``all_to_all``: slice ``i`` of this member's ``operand`` (rows ``input_offsets[i]``
    to ``+ send_sizes[i]``) goes to member ``i // (K / axis_size)``, which writes it into its
    ``output`` at row ``output_offsets[i]``. Returns the updated ``output`` (``recv_sizes`` must
    be the ``all_to_all`` of ``send_sizes``, as JAX requires)."""
    from fjax import lax  # noqa: PLC0415
    from fjax import numpy as jnp  # noqa: PLC0415

    operand, output = jnp.asarray(operand), jnp.asarray(output)
    named = ("input_offsets", "send_sizes", "output_offsets", "recv_sizes")
    idx_args = [jnp.asarray(v) for v in (input_offsets, send_sizes, output_offsets, recv_sizes)]
    for name, v in zip(named, idx_args):
        if np.dtype(v.dtype).kind not in "iu":
            raise ValueError(f"ragged_all_to_all {name} must be integer type.")
    for name, v in zip(named, idx_args):
        if v.ndim != 1 or v.shape[0] < 1:
            raise ValueError(
                f"ragged_all_to_all {name} must be rank 1 with positive dimension size, but got shape {tuple(v.shape)}"
            )
    k = idx_args[0].shape[0]
    if any(v.shape[0] != k for v in idx_args):
        raise ValueError(
            "ragged_all_to_all: input_offsets, send_sizes, output_offsets and recv_sizes must have the same "
            f"length, got shapes {[tuple(v.shape) for v in idx_args]}"
        )
    if operand.ndim < 1 or operand.ndim != output.ndim or operand.shape[1:] != output.shape[1:]:
        raise ValueError(
            "ragged_all_to_all: operand and output must have the same rank and equal dimensions after the "
            f"first, got shapes {tuple(operand.shape)} and {tuple(output.shape)}"
        )
    if operand.dtype != output.dtype:
        raise TypeError(
            "ragged_all_to_all: operand and output must have the same dtype, got "
            f"{core.short_dtype_name(operand.dtype)} and {core.short_dtype_name(output.dtype)}"
        )
    me, size = _group_position(axis_name, axis_index_groups)
    per_member, rem = divmod(k, size)
    if rem:
        raise ValueError(
            f"ragged_all_to_all: the {k} offsets and sizes must divide evenly among the {size} members of the axis"
        )

    def gather(v: Any) -> Any:
        return lax.all_gather(v, axis_name, axis_index_groups=axis_index_groups)

    ops = gather(operand)  # [size, N, ...]
    starts_in, sizes, starts_out = (gather(v.astype(np.int32)) for v in idx_args[:3])  # [size, K]
    n, m = operand.shape[0], output.shape[0]
    rows = lax.iota(np.int32, m)
    trail = (1,) * (operand.ndim - 1)
    result = output
    if n == 0:
        return result
    for src in range(size):  # every sender's slices addressed to this member
        for t in range(per_member):
            i = me * per_member + t
            off = rows - starts_out[src, i]
            ok = (off >= 0) & (off < sizes[src, i])
            take = jnp.clip(starts_in[src, i] + off, 0, n - 1)
            result = jnp.where(ok.reshape((m,) + trail), ops[src][take], result)
    return result
