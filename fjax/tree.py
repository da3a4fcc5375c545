"""The ``jax.tree`` namespace: short names for the ``tree_util`` functions (``fjax.tree.map``, ...)."""

from __future__ import annotations

from typing import Any

from fjax import tree_util as _tu
from fjax._tree_extra import tree_broadcast as broadcast
from fjax._tree_extra import tree_reduce_associative as reduce_associative
from fjax.tree_util import register_static as static
from fjax.tree_util import tree_all as all
from fjax.tree_util import tree_flatten as flatten
from fjax.tree_util import tree_flatten_with_path as flatten_with_path
from fjax.tree_util import tree_leaves as leaves
from fjax.tree_util import tree_leaves_with_path as leaves_with_path
from fjax.tree_util import tree_map as map
from fjax.tree_util import tree_map_with_path as map_with_path
from fjax.tree_util import tree_reduce as reduce
from fjax.tree_util import tree_structure as structure
from fjax.tree_util import tree_unflatten as unflatten

__all__ = [
    "all",
    "broadcast",
    "flatten",
    "flatten_with_path",
    "leaves",
    "leaves_with_path",
    "map",
    "map_with_path",
    "reduce",
    "reduce_associative",
    "static",
    "structure",
    "transpose",
    "unflatten",
]


def transpose(outer_treedef: _tu.PyTreeDef, inner_treedef: _tu.PyTreeDef | None, pytree_to_transpose: Any) -> Any:
    """``tree_util.tree_transpose``: a tree of structure ``outer(inner)`` as ``inner(outer)``."""
    return _tu.tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose)
