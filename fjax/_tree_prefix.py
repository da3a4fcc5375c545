"""The pytree-prefix mismatch reports JAX gives when one tree is not a prefix of another
(``tree_map``'s extra trees, vmap's ``in_axes``/``out_axes``): each mismatch, found by walking
both trees from the root, becomes a function of the name to report it under (``"tree_map tree"``,
``"vmap in_axes"``) returning a ValueError worded as JAX's."""

from __future__ import annotations

import difflib
import textwrap
from typing import Any, Callable, Iterator

from fjax import tree_util as tu

ErrorMaker = Callable[[str], ValueError]


def _children_with_keys(x: Any) -> tuple[list, list, Any]:
    """(keys, children, metadata) of the root node of ``x`` (not a leaf)."""
    if isinstance(x, dict) and type(x) in (dict,):
        keys = sorted(x)
        return [tu.DictKey(k) for k in keys], [x[k] for k in keys], tuple(keys)
    if type(x) in (list, tuple):
        return [tu.SequenceKey(i) for i in range(len(x))], list(x), None
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return [tu.GetAttrKey(f) for f in x._fields], list(x), type(x)
    keyed, meta = tu.flatten_one_level_with_keys(x)
    return [k for k, _ in keyed], [c for _, c in keyed], meta


def _key_name(k: Any) -> str:
    for attr in ("key", "idx", "name"):
        if hasattr(k, attr):
            return str(getattr(k, attr))
    return str(k)


def _walk(path: tuple, prefix: Any, full: Any, is_leaf: Any) -> Iterator[ErrorMaker]:
    s = tu.tree_structure(prefix, is_leaf)
    if s.num_nodes == 1 and s.num_leaves == 1:  # a leaf prefixes any subtree
        return
    where = tu.keystr(path)
    if type(prefix) is not type(full):
        yield lambda name: ValueError(
            "pytree structure error: different types at key path\n"
            f"    {name}{where}\n"
            f"At that key path, the prefix pytree {name} has a subtree of type\n"
            f"    {type(prefix)}\n"
            "but at the same key path the full pytree has a subtree of different type\n"
            f"    {type(full)}."
        )
        return
    p_keys, p_children, p_meta = _children_with_keys(prefix)
    f_keys, f_children, f_meta = _children_with_keys(full)
    if isinstance(prefix, (list, tuple)):
        if len(prefix) != len(full):
            ty = type(prefix).__name__
            yield lambda name: ValueError(
                f"pytree structure error: different lengths of {ty} at key path\n"
                f"    {name}{where}\n"
                f"At that key path, the prefix pytree {name} has a subtree of type {ty} of length {len(prefix)}, "
                f"but the full pytree has a subtree of the same type but of length {len(full)}."
            )
            return
    elif len(p_children) != len(f_children):
        try:
            diff: Any = set(p_keys) ^ set(f_keys)
        except TypeError:
            diff = None
        tail = "" if diff is None else "so the symmetric difference on key sets is\n    "
        tail += "" if diff is None else " ".join(map(_key_name, diff))
        yield lambda name: ValueError(
            "pytree structure error: different numbers of pytree children at key path\n"
            f"    {name}{where}\n"
            f"At that key path, the prefix pytree {name} has a subtree of type\n"
            f"    {type(prefix)}\n"
            f"with {len(p_children)} child keys\n"
            f"    {' '.join(map(_key_name, p_keys))}\n"
            f"but at the same key path the full pytree has a subtree of the same type but with {len(f_children)} "
            "child keys\n"
            f"    {' '.join(map(_key_name, f_keys))}\n" + tail
        )
        return
    if p_meta != f_meta:
        p_str, f_str = str(p_meta), str(f_meta)
        ndiff = textwrap.indent("\n".join(difflib.ndiff(p_str.splitlines(), f_str.splitlines())), "    ")
        yield lambda name: ValueError(
            "pytree structure error: different pytree metadata at key path\n"
            f"    {name}{where}\n"
            f"At that key path, the prefix pytree {name} has a subtree of type\n"
            f"    {type(prefix)}\n"
            "with metadata\n"
            f"    {p_str}\n"
            "but at the same key path the full pytree has a subtree of the same type but with metadata\n"
            f"    {f_str}\n"
            "so the diff in the metadata at these pytree nodes is\n"
            f"{ndiff}"
        )
        return
    for k, a, b in zip(p_keys, p_children, f_children):
        yield from _walk((*path, k), a, b, None)


def prefix_errors(prefix: Any, full: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[ErrorMaker]:
    """Every place where ``prefix`` fails to be a tree prefix of ``full`` (outermost first)."""
    return list(_walk((), prefix, full, is_leaf))
