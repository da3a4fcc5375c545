"""The tree utilities JAX added after the core set: ``tree_broadcast``, ``is_tree_node``,
``flatten_one_level_with_keys``, ``tree_reduce_associative`` and ``default_registry``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fjax import tree_util as tu

__all__ = [
    "default_registry",
    "flatten_one_level_with_keys",
    "is_tree_node",
    "tree_broadcast",
    "tree_reduce_associative",
]


class _DefaultRegistry:
    """The registry every fjax pytree function uses (fjax has one, as JAX's default)."""

    def __repr__(self) -> str:
        return "<fjax.tree_util.default_registry>"

    def flatten(self, tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], tu.PyTreeDef]:
        return tu.tree_flatten(tree, is_leaf)


default_registry = _DefaultRegistry()


def is_tree_node(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True when ``tree`` is a pytree node (a container, or None), False when it is a leaf."""
    if is_leaf is not None and is_leaf(tree):
        return False
    try:
        tu.flatten_one_level(tree)
    except ValueError:
        return False
    return True


def flatten_one_level_with_keys(tree: Any) -> tuple[list[tuple[Any, Any]], Any]:
    """Children of the root node of ``tree`` with their keys, and its aux data."""
    children, aux = tu.flatten_one_level(tree)
    leaves = tu.tree_flatten_with_path(tree, is_leaf=lambda x: x is not tree)[0]
    children = list(children)
    if len(leaves) == len(children):
        return [(path[0], c) for (path, _), c in zip(leaves, children)], aux
    # some children are empty subtrees (no leaves): rebuild keys by position
    return [(tu.FlattenedIndexKey(i), c) for i, c in enumerate(children)], aux


def tree_broadcast(prefix_tree: Any, full_tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Broadcast the leaves of ``prefix_tree`` (a prefix of ``full_tree``) to ``full_tree``'s structure."""
    prefix_leaves, prefix_def = tu.tree_flatten(prefix_tree, is_leaf)
    subtrees = prefix_def.flatten_up_to(full_tree)
    out = [tu.tree_map(lambda _, v=v: v, sub, is_leaf=is_leaf) for v, sub in zip(prefix_leaves, subtrees)]
    return prefix_def.unflatten(out)


def tree_reduce_associative(
    operation: Callable[[Any, Any], Any],
    tree: Any,
    *,
    identity: Any = tu._MISSING,
    is_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    """Reduce the leaves of ``tree`` with an associative ``operation`` as a balanced binary tree.

    Without ``identity``, a tree without leaves raises TypeError, as JAX does.
    """
    leaves = tu.tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is tu._MISSING:
            raise TypeError("tree_reduce_associative: must have at least one leaf when identity is not given")
        return identity
    while len(leaves) > 1:
        nxt = [operation(leaves[i], leaves[i + 1]) for i in range(0, len(leaves) - 1, 2)]
        if len(leaves) % 2:
            nxt.append(leaves[-1])
        leaves = nxt
    return leaves[0]
