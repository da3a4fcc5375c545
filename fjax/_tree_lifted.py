"""The pytree functions fjax's transforms flatten with: typed key arrays are seen through.

For users a typed PRNG key array (``random.key(0)``, dtype ``key<fry>``) is a pytree *leaf*, as
in JAX: ``jax.tree.structure``, ``jax.tree.map`` and the rest of ``fjax.tree_util`` stop at it.
fjax's transforms (``jit``, ``vmap``, ``grad``, ``scan``, ``cond``, ``custom_vjp``, ...) trace,
batch and differentiate arrays of numeric dtypes only, so where they flatten arguments and
results into the values they trace they look *through* a key array to its uint32 data: a key
array becomes a node with that data as its one child, and unflattening rebuilds the key array
around whatever stands in for the data (a tracer, a batched value). So key arrays pass through
every transform as their data does, and come out as key arrays.

The transform modules import this module as ``tu`` in place of ``fjax.tree_util``: the names
here have ``tree_util``'s signatures; those not defined here are ``tree_util``'s own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from fjax import tree_util as _tu
from fjax.tree_util import (  # noqa: F401 - re-exported for the transform modules
    _LEAF,
    _MISSING,
    FlattenedIndexKey,
    Partial,
    PyTreeDef,
    _flatten_rest,
    _kinds,
    _NodeDef,
    _registry,
    flatten_one_level,
    keystr,
    register_pytree_node,
    tree_transpose,
    tree_unflatten,
    treedef_children,
    treedef_tuple,
)

# leaf types the transforms look through -> how to flatten and rebuild them
_lifted: dict[type, _NodeDef] = {}


def register_lifted_leaf(
    nodetype: type, flatten: Callable[[Any], tuple[Iterable[Any], Any]], unflatten: Callable[[Any, Any], Any]
) -> None:
    """Make ``nodetype`` a pytree leaf for users and a node (``flatten``/``unflatten`` as for
    ``register_pytree_node``) for the functions of this module."""
    node = _NodeDef(flatten, unflatten, None)
    _registry[nodetype] = node  # so that structures holding it as a node unflatten, compare and print
    _kinds[nodetype] = _LEAF
    _lifted[nodetype] = node


def _lift_spec(spec: Any, leaves: Iterable[Any], out: list) -> Any:
    """``spec`` (a tree_util structure spec) with each lifted leaf made a node; ``out`` gets the
    new leaves."""
    if spec is None:
        x = next(leaves)
        node = _lifted.get(type(x))
        if node is None:
            out.append(x)
            return None
        children, aux = node.flatten(x)
        kids = []
        for c in children:
            c_leaves, c_tree = tree_flatten(c)
            out.extend(c_leaves)
            kids.append(c_tree._spec)
        return (type(x), aux, tuple(kids))
    t, aux, kids = spec
    return (t, aux, tuple([_lift_spec(s, leaves, out) for s in kids]))


def lift(leaves: list, treedef: PyTreeDef) -> tuple[list, PyTreeDef]:
    """A flattening (``leaves``, ``treedef``) with its lifted leaves (key arrays) looked through."""
    if not _lifted:
        return leaves, treedef
    for x in leaves:
        if type(x) in _lifted:
            break
    else:
        return leaves, treedef
    out: list = []
    spec = _lift_spec(treedef._spec, iter(leaves), out)
    return out, PyTreeDef(spec, len(out))


def _mask(spec: Any, parent_lifted: bool, out: list) -> None:
    if spec is None:
        out.append(parent_lifted)
        return
    lifted = spec[0] in _lifted
    for s in spec[2]:
        _mask(s, lifted, out)


def lifted_leaf_mask(treedef: PyTreeDef) -> list[bool]:
    """For each leaf of ``treedef``, whether it is the data of a lifted leaf (a key array's data,
    whose last axis holds the key words: a key array's axis ``-1`` is its data's axis ``-2``)."""
    out: list[bool] = []
    if _lifted:
        _mask(treedef._spec, False, out)
    else:
        out = [False] * treedef.num_leaves
    return out


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], PyTreeDef]:
    """``tree_util.tree_flatten`` looking through key arrays (to their data)."""
    return lift(*_tu.tree_flatten(tree, is_leaf))


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """``tree_util.tree_leaves`` looking through key arrays."""
    leaves = _tu.tree_leaves(tree, is_leaf)
    if _lifted and any(type(x) in _lifted for x in leaves):
        return tree_flatten(tree, is_leaf)[0]
    return leaves


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """``tree_util.tree_structure`` looking through key arrays."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``tree_util.tree_map`` over the leaves that ``tree_flatten`` here gives (key data, not keys)."""
    return _tu._map_flattened(tree_flatten, f, tree, rest, is_leaf)


def tree_flatten_with_path(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, PyTreeDef]:
    """``tree_util.tree_flatten_with_path`` looking through key arrays: a key array's data keeps
    the key array's path."""
    pairs, treedef = _tu.tree_flatten_with_path(tree, is_leaf)
    leaves, lifted = lift([x for _, x in pairs], treedef)
    if lifted is treedef:
        return pairs, treedef
    out = []
    for path, x in pairs:
        if type(x) in _lifted:
            out.extend((path, leaf) for leaf in tree_flatten(x)[0])
        else:
            out.append((path, x))
    return out, lifted


def leaf_paths(tree: Any) -> list[str]:
    """The key path of each leaf of ``tree`` as text (``keystr``), for error messages; positions
    (``[i]``) when the tree cannot be flattened with paths."""
    try:
        pairs, _ = tree_flatten_with_path(tree)
        return [keystr(p) for p, _ in pairs]
    except Exception:  # noqa: BLE001 - only a message is at stake
        return [f"[{i}]" for i in range(len(tree_leaves(tree)))]
