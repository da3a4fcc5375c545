"""Pytrees: nested containers of leaves, flattened to a list of leaves plus a structure.

A *pytree* is a Python value built from container *nodes* with *leaves* at the ends. The node
types understood out of the box follow JAX:

* ``tuple``, ``list`` and ``dict`` (a dict's children are ordered by sorted key, and
  unflattening builds a dict with keys in sorted order);
* ``None``, a node with no children (so it holds no leaves);
* every ``namedtuple`` class, each one a node type of its own;
* ``collections.OrderedDict`` (insertion order) and ``collections.defaultdict`` (sorted keys;
  the ``default_factory`` is kept in the structure);
* :class:`Partial`, a ``functools.partial`` whose arguments are children.

Everything else is a leaf unless registered with :func:`register_pytree_node` (or one of its
variants: :func:`register_pytree_node_class`, :func:`register_pytree_with_keys`,
:func:`register_dataclass`, :func:`register_static`). Types are matched exactly: a subclass
of ``dict`` or ``tuple`` that is not a namedtuple is a leaf.

:func:`tree_flatten` returns the leaves and a :class:`PyTreeDef`, an immutable, hashable
description of the structure; :func:`tree_unflatten` rebuilds a tree from a structure and
new leaves. A ``PyTreeDef`` holds a nested tuple ``(type, aux_data, children)`` per node
(``None`` for a leaf), so comparing and hashing structures is cheap tuple work.
"""

from __future__ import annotations

import collections  # noqa: F401 - this and the unused names below: kept importable from here
import dataclasses  # noqa: F401
import functools
import operator  # noqa: F401
from collections.abc import Callable, Hashable, Iterable, Sequence  # noqa: F401
from typing import Any, Self, TypeVar  # noqa: F401

__all__ = [
    "DictKey",
    "FlattenedIndexKey",
    "GetAttrKey",
    "KeyEntry",
    "KeyPath",
    "Partial",
    "PyTreeDef",
    "SequenceKey",
    "all_leaves",
    "flatten_one_level",
    "keystr",
    "register_dataclass",
    "register_pytree_node",
    "register_pytree_node_class",
    "register_pytree_with_keys",
    "register_pytree_with_keys_class",
    "register_static",
    "tree_all",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_leaves",
    "tree_leaves_with_path",
    "tree_map",
    "tree_map_with_path",
    "tree_reduce",
    "tree_structure",
    "tree_transpose",
    "tree_unflatten",
    "treedef_children",
    "treedef_is_leaf",
    "treedef_tuple",
]

T = TypeVar("T")
Typ = TypeVar("Typ", bound=type)

_NoneType = type(None)

# Node kinds, looked up by exact type in ``_kinds``. A type not yet in ``_kinds`` is classified
# (namedtuple or leaf) on first sight and cached.
_LEAF = 0
_NONE = 1
_TUPLE = 2
_LIST = 3
_DICT = 4
_NAMEDTUPLE = 5
_CUSTOM = 6

_BUILTIN_NODE_TYPES = (_NoneType, tuple, list, dict)
_kinds: dict[type, int] = {_NoneType: _NONE, tuple: _TUPLE, list: _LIST, dict: _DICT}
_kind_of = _kinds.get

# The structure of ``None``: every None node shares this spec.
_NONE_SPEC = (_NoneType, None, ())


class _NodeDef:
    """How to flatten and rebuild one registered (custom) node type."""

    __slots__ = ("flatten", "flatten_with_keys", "unflatten")

    def __init__(
        self,
        flatten: Callable[[Any], tuple[Iterable[Any], Any]],
        unflatten: Callable[[Any, Iterable[Any]], Any],
        flatten_with_keys: Callable[[Any], tuple[Iterable[tuple[Any, Any]], Any]] | None,
    ) -> None:
        self.flatten = flatten
        self.unflatten = unflatten
        self.flatten_with_keys = flatten_with_keys


_registry: dict[type, _NodeDef] = {}


def _classify(t: type) -> int:
    """Kind of a type not seen before: namedtuple classes are nodes, the rest leaves."""
    kind = _NAMEDTUPLE if issubclass(t, tuple) and hasattr(t, "_fields") else _LEAF
    _kinds[t] = kind
    return kind


def _sorted_keys(d: dict) -> tuple:
    try:
        return tuple(sorted(d))
    except TypeError as e:
        raise ValueError(f"Comparator raised exception while sorting pytree dictionary keys {list(d)!r}: {e}") from None


# ---------------------------------------------------------------------------------------------
# Flattening and unflattening of structure specs.
#
# A spec is ``None`` for a leaf, or ``(node_type, aux_data, child_specs)`` for a node, where
# ``aux_data`` is the sorted key tuple for dicts, None for tuple/list/None/namedtuple nodes,
# and the registered flatten function's aux data for custom nodes.
# ---------------------------------------------------------------------------------------------


def _flatten(x: Any, append: Callable[[Any], None]) -> Any:
    t = type(x)
    kind = _kind_of(t)
    if kind is None:
        kind = _classify(t)
    if kind == _LEAF:
        append(x)
        return None
    if kind == _TUPLE or kind == _LIST or kind == _NAMEDTUPLE:
        aux = None
        children: Iterable[Any] = x
    elif kind == _DICT:
        try:
            aux = tuple(sorted(x))
        except TypeError:
            aux = _sorted_keys(x)  # raises the explanatory ValueError
        children = map(x.__getitem__, aux)
    elif kind == _NONE:
        return _NONE_SPEC
    else:
        children, aux = _registry[t].flatten(x)
    kids = []
    kids_append = kids.append
    for c in children:
        # Leaves inline: saves a call for the most common child.
        if _kind_of(type(c)) == _LEAF:
            append(c)
            kids_append(None)
        else:
            kids_append(_flatten(c, append))
    return (t, aux, tuple(kids))


def _flatten_is_leaf(x: Any, append: Callable[[Any], None], is_leaf: Callable[[Any], bool]) -> Any:
    if is_leaf(x):
        append(x)
        return None
    t = type(x)
    kind = _kind_of(t)
    if kind is None:
        kind = _classify(t)
    if kind == _LEAF:
        append(x)
        return None
    if kind == _TUPLE or kind == _LIST or kind == _NAMEDTUPLE:
        aux = None
        children: Iterable[Any] = x
    elif kind == _DICT:
        aux = _sorted_keys(x)
        children = [x[k] for k in aux]
    elif kind == _NONE:
        return _NONE_SPEC
    else:
        children, aux = _registry[t].flatten(x)
    return (t, aux, tuple([_flatten_is_leaf(c, append, is_leaf) for c in children]))


def _leaves(x: Any, append: Callable[[Any], None]) -> None:
    """Like ``_flatten`` but only collects leaves (no structure is built)."""
    t = type(x)
    kind = _kind_of(t)
    if kind is None:
        kind = _classify(t)
    if kind == _LEAF:
        append(x)
        return
    if kind == _TUPLE or kind == _LIST or kind == _NAMEDTUPLE:
        children: Iterable[Any] = x
    elif kind == _DICT:
        try:
            children = map(x.__getitem__, sorted(x))
        except TypeError:
            children = map(x.__getitem__, _sorted_keys(x))
    elif kind == _NONE:
        return
    else:
        children = _registry[t].flatten(x)[0]
    for c in children:
        if _kind_of(type(c)) == _LEAF:
            append(c)
        else:
            _leaves(c, append)


def _unflatten(spec: Any, nxt: Callable[[], Any]) -> Any:
    t, aux, kids = spec
    children = []
    append = children.append
    for s in kids:
        append(nxt() if s is None else _unflatten(s, nxt))
    if t is tuple:
        return tuple(children)
    if t is list:
        return children
    if t is dict:
        return dict(zip(aux, children))
    if t is _NoneType:
        return None
    if _kinds[t] == _NAMEDTUPLE:
        return t(*children)
    return _registry[t].unflatten(aux, tuple(children))


# Unflattening a structure that is used repeatedly (jit's output structures, a training loop's
# parameters) goes through a function generated for that structure: one Python expression
# building the whole tree from the leaf list, several times faster than walking the spec.
# Structures are counted on their first unflatten and compiled on their second; generated
# functions are shared between equal structures.
_COMPILE_MAX_NODES = 4000
_COMPILE_MAX_DEPTH = 40
_CACHE_MAX = 2048
_compiled_unflatteners: dict[PyTreeDef, Callable[[Sequence[Any]], Any]] = {}
_unflatten_counts: dict[PyTreeDef, int] = {}


class _TooBig(Exception):
    pass


def _compile_unflattener(spec: Any) -> Callable[[Sequence[Any]], Any]:
    """A function ``f(leaves)`` that rebuilds the tree ``spec`` describes, or a generic one when
    the structure is too large or deep to compile."""
    consts: dict[str, Any] = {}
    next_leaf = 0

    def const(v: Any) -> str:
        name = f"_k{len(consts)}"
        consts[name] = v
        return name

    def gen(s: Any, depth: int) -> str:
        nonlocal next_leaf
        if s is None:
            next_leaf += 1
            return f"L[{next_leaf - 1}]"
        if depth > _COMPILE_MAX_DEPTH:
            raise _TooBig
        t, aux, kids = s
        parts = [gen(k, depth + 1) for k in kids]
        if t is tuple:
            return "(" + "".join([p + ", " for p in parts]) + ")"
        if t is list:
            return "[" + ", ".join(parts) + "]"
        if t is dict:
            return "{" + ", ".join([f"{const(k)}: {p}" for k, p in zip(aux, parts)]) + "}"
        if t is _NoneType:
            return "None"
        if _kinds[t] == _NAMEDTUPLE:
            return f"{const(t)}(" + ", ".join(parts) + ")"
        return f"{const(_registry[t].unflatten)}({const(aux)}, (" + "".join([p + ", " for p in parts]) + "))"

    if _count_nodes(spec) <= _COMPILE_MAX_NODES:
        try:
            src = "lambda L: " + gen(spec, 0)
            return eval(src, consts)  # source built above from node kinds and constant names only
        except (_TooBig, RecursionError, SyntaxError, MemoryError):
            pass
    return lambda leaves: _unflatten(spec, iter(leaves).__next__)


def _unflattener(td: PyTreeDef) -> Callable[[Sequence[Any]], Any] | None:
    """The compiled unflatten function of ``td`` if it has one by now (see above)."""
    try:
        fn = _compiled_unflatteners.get(td)
        if fn is None:
            n = _unflatten_counts.get(td, 0) + 1
            if n < 2:
                if len(_unflatten_counts) >= _CACHE_MAX:
                    _unflatten_counts.clear()
                _unflatten_counts[td] = n
                return None
            _unflatten_counts.pop(td, None)
            fn = _compile_unflattener(td._spec)
            if len(_compiled_unflatteners) >= _CACHE_MAX:
                _compiled_unflatteners.clear()
            _compiled_unflatteners[td] = fn
    except Exception:  # noqa: BLE001 - aux data whose == misbehaves: just walk the spec
        spec = td._spec

        def fn(leaves: Sequence[Any]) -> Any:
            return _unflatten(spec, iter(leaves).__next__)

    td._unflat = fn
    return fn


def _count_leaves(spec: Any) -> int:
    if spec is None:
        return 1
    return sum([1 if s is None else _count_leaves(s) for s in spec[2]])


def _count_nodes(spec: Any) -> int:
    if spec is None:
        return 1
    return 1 + sum([1 if s is None else _count_nodes(s) for s in spec[2]])


def _compose(outer: Any, inner: Any) -> Any:
    if outer is None:
        return inner
    t, aux, kids = outer
    return (t, aux, tuple([_compose(s, inner) for s in kids]))


_UNHASHABLE = "<unhashable aux data>"


def _hashable_spec(spec: Any) -> Any:
    """Spec with unhashable aux data replaced by a marker (only used when hashing fails)."""
    if spec is None:
        return None
    t, aux, kids = spec
    try:
        hash(aux)
    except TypeError:
        aux = (_UNHASHABLE, type(aux))
    return (t, aux, tuple([_hashable_spec(s) for s in kids]))


def _node_name(t: type) -> str:
    return getattr(t, "__name__", repr(t))


def _spec_repr(spec: Any) -> str:
    if spec is None:
        return "*"
    t, aux, kids = spec
    if t is _NoneType:
        return "None"
    parts = [_spec_repr(s) for s in kids]
    if t is tuple:
        return "(" + parts[0] + ",)" if len(parts) == 1 else "(" + ", ".join(parts) + ")"
    if t is list:
        return "[" + ", ".join(parts) + "]"
    if t is dict:
        return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(aux, parts)) + "}"
    inner = "[" + ", ".join(parts) + "]"
    if _kinds.get(t) == _NAMEDTUPLE:
        return f"CustomNode(namedtuple[{_node_name(t)}], {inner})"
    return f"CustomNode({_node_name(t)}[{aux}], {inner})"


# ---------------------------------------------------------------------------------------------
# PyTreeDef
# ---------------------------------------------------------------------------------------------


class PyTreeDef:
    """The structure of a pytree: its node types, their aux data, and where the leaves go.

    Immutable and hashable; two structures are equal when their node types, aux data (dict
    keys, custom aux data) and shapes are equal. Obtain one from :func:`tree_flatten` or
    :func:`tree_structure`.
    """

    __slots__ = ("__weakref__", "_hash", "_num_leaves", "_spec", "_unflat")

    def __init__(self, spec: Any, num_leaves: int = -1) -> None:
        self._spec = spec
        self._num_leaves = num_leaves
        self._hash: int | None = None
        self._unflat: Callable[[Sequence[Any]], Any] | None = None

    @property
    def num_leaves(self) -> int:
        """Number of leaves in the structure."""
        n = self._num_leaves
        if n < 0:
            n = self._num_leaves = _count_leaves(self._spec)
        return n

    @property
    def num_nodes(self) -> int:
        """Number of nodes, counting leaves and None nodes."""
        return _count_nodes(self._spec)

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """Build a pytree of this structure from ``leaves`` (in flattening order)."""
        if not isinstance(leaves, (list, tuple)):
            leaves = list(leaves)
        n = self.num_leaves
        if len(leaves) < n:  # JAX's (C++) words
            raise ValueError(f"Too few leaves for PyTreeDef; expected {n}, got {len(leaves)}")
        if len(leaves) > n:
            raise ValueError(f"Too many leaves for PyTreeDef; expected {n}.")
        return self._unflatten_unchecked(leaves)

    def _unflatten_unchecked(self, leaves: Sequence[Any]) -> Any:
        fn = self._unflat
        if fn is None:
            spec = self._spec
            if spec is None:
                return leaves[0]
            fn = _unflattener(self)
            if fn is None:
                return _unflatten(spec, iter(leaves).__next__)
        return fn(leaves)

    def flatten_up_to(self, tree: Any) -> list[Any]:
        """Flatten ``tree`` only as deep as this structure, which must be a prefix of it.

        Returns one subtree of ``tree`` per leaf of this structure. Raises ValueError saying
        where and how ``tree`` differs when this structure is not a prefix of it.
        """
        spec = self._spec
        if spec is None:
            return [tree]
        out: list[Any] = []
        try:
            _up_to(spec, tree, out.append)
        except _Mismatch:
            msg = _explain_mismatch(spec, tree, ())
            raise ValueError(msg or f"Tree does not match the structure {self}.") from None
        return out

    def children(self) -> list[PyTreeDef]:
        """Structures of the root node's children (empty for a leaf or None)."""
        spec = self._spec
        if spec is None:
            return []
        return [PyTreeDef(s) for s in spec[2]]

    def node_data(self) -> tuple[type, Any] | None:
        """``(node_type, aux_data)`` of the root node, or None for a leaf.

        As in JAX, a dict's aux data is the list of its sorted keys.
        """
        spec = self._spec
        if spec is None:
            return None
        t, aux, _ = spec
        if t is dict:
            return (dict, list(aux))
        return (t, aux)

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """The structure obtained by putting ``inner`` in place of each leaf of this one."""
        return PyTreeDef(_compose(self._spec, inner._spec), self.num_leaves * inner.num_leaves)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        return self._spec == other._spec

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            try:
                h = hash(self._spec)
            except TypeError:
                h = hash(_hashable_spec(self._spec))
            self._hash = h
        return h

    def __repr__(self) -> str:
        return f"PyTreeDef({_spec_repr(self._spec)})"

    __str__ = __repr__

    def __reduce__(self) -> tuple:
        return (PyTreeDef, (self._spec, self._num_leaves))


_LEAF_TREEDEF = PyTreeDef(None, 1)


# ---------------------------------------------------------------------------------------------
# Core API
# ---------------------------------------------------------------------------------------------


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], PyTreeDef]:
    """Flatten ``tree`` into its leaves (left to right) and its structure.

    ``is_leaf``, if given, is called on every subtree (containers, None and leaves alike); a
    subtree for which it returns True is taken as a leaf, even if it is None or a container.
    """
    leaves: list[Any] = []
    if is_leaf is None:
        spec = _flatten(tree, leaves.append)
    else:
        spec = _flatten_is_leaf(tree, leaves.append, is_leaf)
    if spec is None:
        return leaves, _LEAF_TREEDEF
    return leaves, PyTreeDef(spec, len(leaves))


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild a pytree with structure ``treedef`` from ``leaves``.

    Raises ValueError when the number of leaves differs from ``treedef.num_leaves``.
    """
    return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """The leaves of ``tree`` in flattening order."""
    leaves: list[Any] = []
    if is_leaf is None:
        _leaves(tree, leaves.append)
    else:
        _flatten_is_leaf(tree, leaves.append, is_leaf)
    return leaves


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The :class:`PyTreeDef` of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def _flatten_rest(treedef: PyTreeDef, rest: Sequence[Any], fname: str) -> list[list[Any]]:
    out = []
    for i, r in enumerate(rest, 1):
        try:
            out.append(treedef.flatten_up_to(r))
        except ValueError as e:
            raise ValueError(
                f"{fname}: the structure of the first tree must be a prefix of the structure of"
                f" every other tree, but tree argument {i} does not match it: {e}\n"
                f"  first tree structure:      {treedef}\n"
                f"  argument {i} tree structure: {tree_structure(r)}"
            ) from None
    return out


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Apply ``f`` to the leaves of ``tree`` (and matching subtrees of ``rest``).

    Returns a tree of ``tree``'s structure whose leaf at each position is
    ``f(leaf, *others)``, where ``others`` are the subtrees of each tree in ``rest`` at that
    position. The structure of ``tree`` must be a prefix of each tree in ``rest`` (so a leaf
    of ``tree`` may face a whole subtree of another tree, while a None in ``tree`` must face
    None); otherwise ValueError names both structures.
    """
    return _map_flattened(tree_flatten, f, tree, rest, is_leaf)


def _map_flattened(flatten: Callable, f: Callable[..., Any], tree: Any, rest: tuple, is_leaf: Any) -> Any:
    """``tree_map`` over the leaves ``flatten`` gives (``tree_flatten`` here; ``fjax._tree_lifted``
    passes its own, which looks through key arrays)."""
    leaves, treedef = flatten(tree, is_leaf)
    if not rest:
        results = [f(x) for x in leaves]
    else:
        try:
            all_leaves = [leaves, *[treedef.flatten_up_to(r) for r in rest]]
        except ValueError:
            # JAX reports the first place where ``tree`` is no prefix of the failing tree
            from fjax._tree_prefix import prefix_errors  # noqa: PLC0415

            for r in rest:
                errs = prefix_errors(tree, r, is_leaf)
                if errs:
                    raise errs[0]("tree_map tree") from None
            all_leaves = [leaves, *_flatten_rest(treedef, rest, "tree_map")]
        results = [f(*xs) for xs in zip(*all_leaves)]
    return treedef._unflatten_unchecked(results)


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True when every leaf of ``tree`` is truthy (True for a tree without leaves)."""
    return all(tree_leaves(tree, is_leaf))


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()


def tree_reduce(
    function: Callable[[T, Any], T],
    tree: Any,
    initializer: Any = _MISSING,
    is_leaf: Callable[[Any], bool] | None = None,
) -> T:
    """``functools.reduce(function, tree_leaves(tree), initializer)``.

    Without an initializer, a tree with no leaves raises TypeError, as ``functools.reduce`` does.
    """
    if initializer is _MISSING:
        return functools.reduce(function, tree_leaves(tree, is_leaf))
    return functools.reduce(function, tree_leaves(tree, is_leaf), initializer)


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose: Any) -> Any:
    """Turn a tree of structure ``outer(inner)`` into one of structure ``inner(outer)``.

    E.g. a list of tuples into a tuple of lists. ``inner_treedef`` may be None to take it from
    the first subtree. Raises TypeError when the number of leaves does not match
    ``outer_treedef.num_leaves * inner_treedef.num_leaves``.
    """
    flat, treedef = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
    inner_size = inner_treedef.num_leaves
    outer_size = outer_treedef.num_leaves
    if treedef.num_leaves != inner_size * outer_size:
        expected = outer_treedef.compose(inner_treedef)
        raise TypeError(f"Mismatch\n{treedef}\n != \n{expected}")
    rows = [flat[i * inner_size : (i + 1) * inner_size] for i in range(outer_size)]
    subtrees = [outer_treedef.unflatten([row[j] for row in rows]) for j in range(inner_size)]
    return inner_treedef.unflatten(subtrees)


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    """Structures of the children of ``treedef``'s root node."""
    return treedef.children()


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """True when ``treedef`` has no children (a leaf, None or an empty container)."""
    spec = treedef._spec
    return spec is None or not spec[2]


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The structure of a tuple whose children have the given structures."""
    treedefs = list(treedefs)
    spec = (tuple, None, tuple([td._spec for td in treedefs]))
    return PyTreeDef(spec, sum(td.num_leaves for td in treedefs))


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True when every item of ``iterable`` is a leaf (None is not a leaf: it is a node)."""
    if is_leaf is None:
        for x in iterable:
            t = type(x)
            kind = _kind_of(t)
            if kind is None:
                kind = _classify(t)
            if kind != _LEAF:
                return False
        return True
    items = list(iterable)
    leaves = tree_leaves(items, is_leaf)
    return len(leaves) == len(items) and all(a is b for a, b in zip(items, leaves))


def flatten_one_level(tree: Any) -> tuple[Iterable[Any], Any]:
    """Children and aux data of the root node of ``tree``; ValueError if ``tree`` is a leaf."""
    t = type(tree)
    kind = _kind_of(t)
    if kind is None:
        kind = _classify(t)
    if kind == _LEAF:
        raise ValueError(f"can't tree-flatten type: {t}")
    if kind == _TUPLE or kind == _LIST:
        return tree, None
    if kind == _NAMEDTUPLE:
        return list(tree), t
    if kind == _DICT:
        keys = _sorted_keys(tree)
        return tuple([tree[k] for k in keys]), keys
    if kind == _NONE:
        return (), None
    return _registry[t].flatten(tree)


# ---------------------------------------------------------------------------------------------
# Parts split off for size, re-exported here: key paths and the flatten_up_to walkers
# (fjax/_tree_paths.py), registration and the built-in registrations (fjax/_tree_register.py),
# the tree utilities JAX added later (fjax/_tree_extra.py)
# ---------------------------------------------------------------------------------------------

from fjax._tree_extra import (  # noqa: E402
    default_registry,
    flatten_one_level_with_keys,
    is_tree_node,
    tree_broadcast,
    tree_reduce_associative,
)
from fjax._tree_paths import (  # noqa: E402,F401 - the private helpers too
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    KeyEntry,
    KeyPath,
    SequenceKey,
    _custom_children_with_keys,
    _explain_mismatch,
    _flatten_with_path,
    _is_builtin_container,
    _Mismatch,
    _node_children_with_keys,
    _short_repr,
    _simple_key,
    _type_desc,
    _up_to,
    keystr,
    tree_flatten_with_path,
    tree_leaves_with_path,
    tree_map_with_path,
)
from fjax._tree_register import (  # noqa: E402,F401 - the private helpers too
    Partial,
    _defaultdict_flatten,
    _defaultdict_flatten_with_keys,
    _register,
    _StaticCallable,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    register_pytree_with_keys_class,
    register_static,
)

__all__ += [
    "default_registry",
    "flatten_one_level_with_keys",
    "is_tree_node",
    "tree_broadcast",
    "tree_reduce_associative",
]
