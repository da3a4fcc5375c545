"""``fjax.tree_util``'s key paths (``SequenceKey``, ``DictKey``, ``GetAttrKey``,
``FlattenedIndexKey``, ``keystr``, ``tree_flatten_with_path`` and its siblings) and the
``flatten_up_to`` walkers (a fast one that raises a bare ``_Mismatch``, and a slow one that
explains the mismatch by key path).

Split from ``fjax/tree_util.py`` for size; ``tree_util.py`` re-exports every name defined here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable
from typing import Any

from fjax.tree_util import (
    _DICT,
    _LEAF,
    _LEAF_TREEDEF,
    _LIST,
    _NAMEDTUPLE,
    _NONE,
    _NONE_SPEC,
    _TUPLE,
    PyTreeDef,
    _classify,
    _flatten_rest,
    _kind_of,
    _kinds,
    _node_name,
    _NodeDef,
    _NoneType,
    _registry,
    _sorted_keys,
)

# ---------------------------------------------------------------------------------------------
# Key paths
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class SequenceKey:
    """Key of a tuple or list child: its index."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True, slots=True)
class DictKey:
    """Key of a dict (or OrderedDict/defaultdict) child: its dict key."""

    key: Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True, slots=True)
class GetAttrKey:
    """Key of a child reached by attribute access (namedtuple fields, dataclass fields)."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclasses.dataclass(frozen=True, slots=True)
class FlattenedIndexKey:
    """Key of a child of a custom node registered without keys: its position among the children."""

    key: int

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


KeyEntry = Any
KeyPath = tuple[Any, ...]


def _simple_key(k: Any) -> str:
    if isinstance(k, SequenceKey):
        return str(k.idx)
    if isinstance(k, GetAttrKey):
        return str(k.name)
    if isinstance(k, (DictKey, FlattenedIndexKey)):
        return str(k.key)
    return str(k)


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """Render a key path, e.g. ``"['a'][0].x"``; ``simple=True`` gives bare keys (``"a/0/x"``
    with ``separator="/"``)."""
    if simple:
        return separator.join(_simple_key(k) for k in keys)
    return separator.join(str(k) for k in keys)


def _flatten_with_path(
    x: Any, path: tuple, out: list[tuple[KeyPath, Any]], is_leaf: Callable[..., bool] | None, takes_path: bool = False
) -> Any:
    if is_leaf is not None and (is_leaf(path, x) if takes_path else is_leaf(x)):
        out.append((path, x))
        return None
    t = type(x)
    kind = _kind_of(t)
    if kind is None:
        kind = _classify(t)
    if kind == _LEAF:
        out.append((path, x))
        return None
    if kind == _NONE:
        return _NONE_SPEC
    aux: Any = None
    if kind == _TUPLE or kind == _LIST:
        keyed: list[tuple[Any, Any]] = [(SequenceKey(i), c) for i, c in enumerate(x)]
    elif kind == _DICT:
        aux = _sorted_keys(x)
        keyed = [(DictKey(k), x[k]) for k in aux]
    elif kind == _NAMEDTUPLE:
        keyed = [(GetAttrKey(f), c) for f, c in zip(t._fields, x)]
    else:
        keyed, aux = _custom_children_with_keys(_registry[t], x)
    return (t, aux, tuple([_flatten_with_path(c, path + (k,), out, is_leaf, takes_path) for k, c in keyed]))


def tree_flatten_with_path(
    tree: Any, is_leaf: Callable[..., bool] | None = None, is_leaf_takes_path: bool = False
) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """Like :func:`tree_flatten`, but each leaf comes as ``(key_path, leaf)``.

    Key entries are :class:`SequenceKey` for tuple/list children, :class:`DictKey` for dict
    children, :class:`GetAttrKey` for namedtuple and dataclass fields, and
    :class:`FlattenedIndexKey` for custom nodes registered without keys.
    ``is_leaf_takes_path``: ``is_leaf`` is called as ``is_leaf(key_path, node)``.
    """
    out: list[tuple[KeyPath, Any]] = []
    spec = _flatten_with_path(tree, (), out, is_leaf, is_leaf_takes_path)
    if spec is None:
        return out, _LEAF_TREEDEF
    return out, PyTreeDef(spec, len(out))


def tree_leaves_with_path(
    tree: Any, is_leaf: Callable[..., bool] | None = None, is_leaf_takes_path: bool = False
) -> list[tuple[KeyPath, Any]]:
    """The ``(key_path, leaf)`` pairs of ``tree``."""
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(
    f: Callable[..., Any],
    tree: Any,
    *rest: Any,
    is_leaf: Callable[..., bool] | None = None,
    is_leaf_takes_path: bool = False,
) -> Any:
    """Like :func:`tree_map`, but ``f`` is called as ``f(key_path, leaf, *others)``."""
    keyed, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    all_leaves = [[x for _, x in keyed], *_flatten_rest(treedef, rest, "tree_map_with_path")]
    paths = [p for p, _ in keyed]
    return treedef.unflatten([f(p, *xs) for p, *xs in zip(paths, *all_leaves)])


# ---------------------------------------------------------------------------------------------
# flatten_up_to: a fast walker that raises a bare _Mismatch, and a slow one that explains it.
# ---------------------------------------------------------------------------------------------


class _Mismatch(Exception):
    pass


def _up_to(spec: Any, x: Any, append: Callable[[Any], None]) -> None:
    t, aux, kids = spec
    if type(x) is not t:
        raise _Mismatch
    if t is tuple or t is list:
        children: Any = x
    elif t is dict:
        if len(x) != len(aux):
            raise _Mismatch
        try:
            children = [x[k] for k in aux]
        except KeyError:
            raise _Mismatch from None
    elif t is _NoneType:
        return
    elif _kinds[t] == _NAMEDTUPLE:
        children = x
    else:
        children, x_aux = _registry[t].flatten(x)
        if x_aux != aux:
            raise _Mismatch
        children = list(children)
    if len(children) != len(kids):
        raise _Mismatch
    for s, c in zip(kids, children):
        if s is None:
            append(c)
        else:
            _up_to(s, c, append)


def _short_repr(x: Any, limit: int = 200) -> str:
    try:
        r = repr(x)
    except Exception:  # noqa: BLE001 - repr of arbitrary user objects
        r = f"<{type(x).__name__} object>"
    return r if len(r) <= limit else r[: limit - 3] + "..."


def _type_desc(t: type) -> str:
    if t is _NoneType:
        return "None"
    if t in (tuple, list, dict):
        return t.__name__
    if _kinds.get(t) == _NAMEDTUPLE:
        return f"named tuple {t!r}"
    return repr(t)


def _is_builtin_container(t: type) -> bool:
    return t is dict or t is tuple or t is list or _kinds.get(t) == _NAMEDTUPLE


def _node_children_with_keys(spec: Any, x: Any) -> list[tuple[Any, Any]]:
    """Children of ``x`` (already known to match the node ``spec``) paired with key entries."""
    t, aux, _ = spec
    if t is tuple or t is list:
        return [(SequenceKey(i), c) for i, c in enumerate(x)]
    if t is dict:
        return [(DictKey(k), x[k]) for k in aux]
    if _kinds[t] == _NAMEDTUPLE:
        return [(GetAttrKey(f), c) for f, c in zip(t._fields, x)]
    return _custom_children_with_keys(_registry[t], x)[0]


def _custom_children_with_keys(node: _NodeDef, x: Any) -> tuple[list[tuple[Any, Any]], Any]:
    if node.flatten_with_keys is not None:
        keyed, aux = node.flatten_with_keys(x)
        return list(keyed), aux
    children, aux = node.flatten(x)
    return [(FlattenedIndexKey(i), c) for i, c in enumerate(children)], aux


def _explain_mismatch(spec: Any, x: Any, path: tuple) -> str | None:
    """Message for the first place where ``x`` does not match ``spec``, or None if it matches."""
    if spec is None:
        return None
    t, aux, kids = spec
    where = f" at key path {keystr(path) or '()'}" if path else ""
    if type(x) is not t:
        msg = f"Expected {_type_desc(t)}{where}, got {_short_repr(x)}."
        if t is _NoneType:
            msg += (
                " (None is a pytree node with no children, not a prefix of other values;"
                " use is_leaf=lambda x: x is None to treat None as a leaf.)"
            )
        elif _is_builtin_container(t) and _is_builtin_container(type(x)):
            msg = f"Expected {_type_desc(t)}{where}, got {_type_desc(type(x))}: {_short_repr(x)}."
        return msg
    if t is _NoneType:
        return None
    if t is dict:
        present = list(x)
        try:
            present = sorted(present)
        except TypeError:
            pass
        if set(present) != set(aux) or len(x) != len(aux):
            return f"Dict key mismatch{where}; expected keys: {list(aux)}; present keys: {present}."
    elif t is tuple or t is list or _kinds[t] == _NAMEDTUPLE:
        if len(x) != len(kids):
            name = "Named tuple" if _kinds[t] == _NAMEDTUPLE else t.__name__.capitalize()
            return (
                f"{name} arity mismatch{where}: expected {len(kids)} children, got {len(x)}; value: {_short_repr(x)}."
            )
    else:
        children, x_aux = _registry[t].flatten(x)
        if x_aux != aux:
            return f"Mismatch custom node data{where}: expected {aux!r}, got {x_aux!r}; value: {_short_repr(x)}."
        n = len(list(children))
        if n != len(kids):
            return (
                f"Custom node {_node_name(t)} arity mismatch{where}: expected {len(kids)} children,"
                f" got {n}; value: {_short_repr(x)}."
            )
    for s, (key, c) in zip(kids, _node_children_with_keys(spec, x)):
        msg = _explain_mismatch(s, c, path + (key,))
        if msg is not None:
            return msg
    return None
