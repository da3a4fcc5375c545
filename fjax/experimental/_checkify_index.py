"""Out-of-bounds index checks for ``checkify(errors=index_checks)`` (JAX's ``OOBError``).

For ``gather``, the ``scatter`` family, ``dynamic_slice`` and ``dynamic_update_slice`` a start
index is out of bounds when it is negative or its window would run past the operand's end (the
index jnp computed after wrapping negative Python-style indices, so ``x[5]`` of a size-3 ``x``
fails with "index 5 is out of bounds for axis 0 with size 3"), as JAX's checkify checks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core

_PAYLOAD_TREE = tu.tree_structure(((0, 0, 0), {}))
INDEX_PRIMS = ("gather", "dynamic_slice", "dynamic_update_slice")


def _msg(shape: tuple) -> str:
    return (
        f"out-of-bounds indexing for array of shape {shape}: index {{}} is out of bounds for axis {{}} with size {{}}."
    )


def _first_oob(idx: Any, upper: np.ndarray, axes: np.ndarray, shape: tuple) -> tuple[Any, list[Any]]:
    """(any index out of bounds, [index, axis, axis size] of the first one); the index vector is
    the last axis of ``idx``, component k indexing operand axis ``axes[k]`` with bound ``upper[k]``."""
    from fjax import numpy as jnp  # noqa: PLC0415

    idx = jnp.asarray(idx)
    oob = jnp.logical_or(idx < 0, idx > jnp.asarray(upper, idx.dtype))
    flat = jnp.argmax(jnp.ravel(oob))
    comp = flat % max(len(axes), 1)
    axis = jnp.asarray(axes, np.int32)[comp]
    size = jnp.asarray(np.array(shape, np.int32)[axes] if len(axes) else np.zeros(0, np.int32))[comp]
    index = jnp.ravel(idx)[flat] if idx.size else jnp.asarray(0, idx.dtype)
    return jnp.any(oob), [index, axis, size]


def index_check(eqn: Any, ins: list) -> tuple[Any, Any, list[Any]] | None:
    """(site message, failed flag, payload) of the bounds check of ``eqn`` applied to ``ins``,
    or None when the primitive indexes nothing."""
    from fjax import numpy as jnp  # noqa: PLC0415

    name = eqn.primitive.name
    shape = tuple(core.get_aval(ins[0]).shape)
    if name == "dynamic_slice" or name == "dynamic_update_slice":
        first = 1 if name == "dynamic_slice" else 2
        idx = ins[first:]
        if not idx:
            return None
        win = eqn.params["slice_sizes"] if name == "dynamic_slice" else core.get_aval(ins[1]).shape
        dt = core.get_aval(idx[0]).dtype
        vec = jnp.stack([jnp.asarray(i).astype(dt) for i in idx])
        axes = np.arange(len(shape))
        upper = np.array(shape) - np.array(win)
    elif name == "gather":
        dn, sizes = eqn.params["dimension_numbers"], eqn.params["slice_sizes"]
        axes = np.array(dn.start_index_map, dtype=np.int64)
        if not len(axes):
            return None
        vec = ins[1]
        upper = np.array(shape)[axes] - np.array(sizes)[axes]
    elif name.startswith("scatter"):
        from fjax.lax.slicing import _scatter_window_sizes  # noqa: PLC0415

        dn = eqn.params["dimension_numbers"]
        axes = np.array(dn.scatter_dims_to_operand_dims, dtype=np.int64)
        if not len(axes):
            return None
        vec = ins[1]
        win = _scatter_window_sizes(len(shape), tuple(core.get_aval(ins[2]).shape), dn)
        upper = np.array(shape)[axes] - np.array(win)[axes]
    else:
        return None
    failed, payload = _first_oob(vec, upper, axes, shape)
    return _msg(shape), failed, payload


def payload_tree() -> Any:
    """The format-argument structure of an index check's payload."""
    return _PAYLOAD_TREE
