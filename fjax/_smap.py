"""``jax.smap``: a ``shard_map`` over one axis of the context mesh, with ``vmap``-style
``in_axes``/``out_axes`` (an axis number becomes the spec ``P(None, ..., axis_name)``, as JAX)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fjax import tree_util as tu

__all__ = ["smap"]


class _Infer:
    """``in_axes`` not given: JAX infers the specs from the arguments' explicit shardings."""

    def __repr__(self) -> str:
        return "jax.sharding.Infer"


Infer = _Infer()


def _pspec(axis_name: Any, axis: int | None) -> Any:
    from fjax.sharding import PartitionSpec  # noqa: PLC0415

    if axis is None:
        return PartitionSpec()
    return PartitionSpec(*([None] * axis), axis_name)


def _is_none(x: Any) -> bool:
    return x is None


def smap(f: Callable | None = None, /, *, in_axes: Any = Infer, out_axes: Any, axis_name: Any) -> Callable:
    """Map ``f`` over the mesh axis ``axis_name`` of the context mesh (``jax.set_mesh``): each
    instance gets the block of every argument split along its ``in_axes`` entry (``None``: the
    whole argument) and the results are concatenated along ``out_axes``."""
    if f is None:
        return lambda g: smap(g, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
    if isinstance(axis_name, (list, tuple)):
        raise TypeError(f"smap axis_name should be a `str` or a `Hashable`, but got {axis_name}")
    if in_axes is not None and in_axes is not Infer and not isinstance(in_axes, (int, tuple)):
        raise TypeError(
            "smap in_axes must be an int, None, jax.sharding.Infer, or a tuple of entries corresponding to the "
            f"positional arguments passed to the function, but got {in_axes}."
        )
    if in_axes is not Infer and not all(isinstance(a, int) for a in tu.tree_leaves(in_axes)):
        raise TypeError(
            "smap in_axes must be an int, None, jax.sharding.Infer, or (nested) container with those types as "
            f"leaves, but got {in_axes}."
        )
    if not all(isinstance(a, int) for a in tu.tree_leaves(out_axes)):
        raise TypeError(
            f"smap out_axes must be an int, None, or (nested) container with those types as leaves, but got {out_axes}."
        )
    out_specs = tu.tree_map(lambda a: _pspec(axis_name, a), out_axes, is_leaf=_is_none)

    def wrapped(*args: Any) -> Any:
        from fjax._shard_map import shard_map  # noqa: PLC0415
        from fjax.sharding import AxisType, current_mesh  # noqa: PLC0415

        mesh = current_mesh()
        if mesh is None or not mesh.axis_names:
            raise ValueError("The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to enter into a mesh context")
        if axis_name not in mesh.axis_names:
            raise ValueError(
                f"jax.shard_map requires axis_names={frozenset({axis_name})} to be a subset of "
                f"mesh.axis_names={frozenset(mesh.axis_names)}"
            )
        if in_axes is Infer:
            kind = dict(zip(mesh.axis_names, mesh.axis_types))[axis_name]
            if kind != AxisType.Explicit:
                raise TypeError(f"in_axes was not specified when axis_name={frozenset({axis_name})} was of type {kind}")
            raise NotImplementedError(
                "smap: inferring in_axes from explicit shardings (jax.sharding.Infer) is not implemented in "
                "fjax; pass in_axes"
            )
        if isinstance(in_axes, tuple):
            specs = tuple(tu.tree_map(lambda a: _pspec(axis_name, a), ax, is_leaf=_is_none) for ax in in_axes)
        else:
            specs = tuple(tu.tree_map(lambda a: _pspec(axis_name, a), in_axes, is_leaf=_is_none) for _ in args)
        return shard_map(f, mesh=mesh, in_specs=specs, out_specs=out_specs, axis_names=frozenset({axis_name}))(*args)

    return wrapped
