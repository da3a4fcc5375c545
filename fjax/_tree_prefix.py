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


class _LeafMeta(type):
    def __repr__(cls) -> str:
        return "pytree leaf"


class _Leaf(metaclass=_LeafMeta):
    """Stands for every leaf when two tree structures are compared (its type prints 'pytree leaf')."""


def _equality_walk(path: tuple, t1: Any, t2: Any) -> Iterator[tuple[tuple, str, str, str]]:
    s1, s2 = tu.tree_structure(t1), tu.tree_structure(t2)
    if s1.num_nodes == 1 and s1.num_leaves == 1 and s2.num_nodes == 1 and s2.num_leaves == 1:
        return
    if type(t1) is not type(t2):
        yield path, str(type(t1)), str(type(t2)), "their Python types differ"
        return
    if isinstance(t1, (list, tuple)) and len(t1) != len(t2):
        ty = type(t1).__name__
        yield path, f"{ty} of length {len(t1)}", f"{ty} of length {len(t2)}", "the lengths do not match"
        return
    k1, c1, m1 = _children_with_keys(t1)
    k2, c2, m2 = _children_with_keys(t2)
    if len(c1) != len(c2):
        try:
            diff = " ".join(repr(getattr(k, "key", k)) for k in set(k1) ^ set(k2))
        except TypeError:
            diff = ""

        def kids(t: Any, n: int) -> str:
            return f"{type(t)} with {n} child{'ren' if n > 1 else ''}"

        why = "the numbers of children do not match"
        why += diff and f", with the symmetric difference of key sets: {{{diff}}}"
        yield path, kids(t1, len(c1)), kids(t2, len(c2)), why
        return
    if m1 != m2:
        yield (
            path,
            f"{type(t1)} with pytree metadata {m1}",
            f"{type(t2)} with pytree metadata {m2}",
            "the pytree node metadata does not match",
        )
        return
    for k, a, b in zip(k1, c1, c2):
        yield from _equality_walk((*path, k), a, b)


def equality_errors_treedef(tree1: Any, tree2: Any) -> list[tuple[str, str, str, str]]:
    """Where two tree structures differ, as JAX describes it: (key path text, what the first has,
    what the second has, why they differ), outermost first."""
    leaf = _Leaf()
    t1 = tu.tree_unflatten(tree1, [leaf] * tree1.num_leaves)
    t2 = tu.tree_unflatten(tree2, [leaf] * tree2.num_leaves)
    return [(tu.keystr(p), a, b, why) for p, a, b, why in _equality_walk((), t1, t2)]


def fun_sourceinfo(fun: Any) -> str:
    """``name at file:line`` of a Python function, as JAX names functions in its messages."""
    import functools  # noqa: PLC0415
    import inspect  # noqa: PLC0415

    while isinstance(fun, functools.partial):
        fun = fun.func
    fun = inspect.unwrap(fun)
    try:
        return f"{fun.__name__} at {fun.__code__.co_filename}:{fun.__code__.co_firstlineno}"
    except AttributeError:
        return getattr(fun, "__name__", "<unknown>")
