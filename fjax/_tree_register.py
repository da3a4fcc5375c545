"""``fjax.tree_util``'s node registration (``register_pytree_node`` and its variants,
``register_dataclass``, ``register_static``) and the built-in registrations beyond
tuple/list/dict/None (``OrderedDict``, ``defaultdict``, :class:`Partial`).

Split from ``fjax/tree_util.py`` for size; ``tree_util.py`` re-exports every name defined here.
The registry itself (``_registry``, ``_kinds``) stays in ``tree_util.py``: this module imports
those dicts and only mutates them, never rebinds them.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Self

from fjax._tree_paths import DictKey, GetAttrKey
from fjax.tree_util import (
    _BUILTIN_NODE_TYPES,
    _CUSTOM,
    T,
    Typ,
    _kinds,
    _NodeDef,
    _registry,
    _sorted_keys,
)

# ---------------------------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------------------------


def _register(nodetype: type, node: _NodeDef) -> None:
    if not isinstance(nodetype, type):
        raise TypeError(f"Expected a type to register as a pytree node, got {nodetype!r}.")
    if nodetype in _registry or nodetype in _BUILTIN_NODE_TYPES:
        raise ValueError(f"Duplicate custom PyTreeDef type registration for {nodetype}.")
    _registry[nodetype] = node
    _kinds[nodetype] = _CUSTOM


def register_pytree_node(
    nodetype: type[T],
    flatten_func: Callable[[T], tuple[Iterable[Any], Any]],
    unflatten_func: Callable[[Any, Iterable[Any]], T],
    flatten_with_keys_func: Callable[[T], tuple[Iterable[tuple[Any, Any]], Any]] | None = None,
) -> None:
    """Make ``nodetype`` a pytree node type.

    ``flatten_func(x)`` returns ``(children, aux_data)``; ``unflatten_func(aux_data, children)``
    rebuilds the node (``children`` is a tuple). ``aux_data`` becomes part of the structure:
    it must support ``==`` and should be hashable. ``flatten_with_keys_func``, if given,
    returns ``(((key, child), ...), aux_data)`` for key paths. Registering a type twice
    raises ValueError.
    """
    _register(nodetype, _NodeDef(flatten_func, unflatten_func, flatten_with_keys_func))


def register_pytree_with_keys(
    nodetype: type[T],
    flatten_with_keys: Callable[[T], tuple[Iterable[tuple[Any, Any]], Any]],
    unflatten_func: Callable[[Any, Iterable[Any]], T],
    flatten_func: Callable[[T], tuple[Iterable[Any], Any]] | None = None,
) -> None:
    """Register ``nodetype`` with a flatten function that also gives each child's key entry.

    ``flatten_with_keys(x)`` returns ``(((key, child), ...), aux_data)``. ``flatten_func``, a
    faster key-less flatten, is derived from it when omitted.
    """
    if flatten_func is None:

        def flatten_func(x: Any) -> tuple[tuple[Any, ...], Any]:
            keyed, aux = flatten_with_keys(x)
            return tuple([c for _, c in keyed]), aux

    _register(nodetype, _NodeDef(flatten_func, unflatten_func, flatten_with_keys))


def register_pytree_node_class(cls: Typ) -> Typ:
    """Class decorator: register ``cls`` using its ``tree_flatten`` method and its
    ``tree_unflatten(aux_data, children)`` classmethod."""
    register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls: Typ) -> Typ:
    """Class decorator: register ``cls`` using its ``tree_flatten_with_keys`` method, its
    ``tree_unflatten`` classmethod and, if present, its ``tree_flatten`` method."""
    flatten = operator.methodcaller("tree_flatten") if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"), cls.tree_unflatten, flatten)
    return cls


def register_static(cls: Typ) -> Typ:
    """Register ``cls`` as a node without children: instances live in the structure as aux
    data (so they must be hashable) and contribute no leaves."""
    register_pytree_node(cls, lambda x: ((), x), lambda aux, _: aux)
    return cls


def register_dataclass(
    nodetype: Typ | None = None,
    data_fields: Sequence[str] | None = None,
    meta_fields: Sequence[str] | None = None,
    drop_fields: Sequence[str] = (),
) -> Any:
    """Register a dataclass-like type whose ``data_fields`` are children and ``meta_fields``
    aux data.

    Rebuilding calls ``nodetype(**fields)``. When both field lists are omitted, ``nodetype``
    must be a dataclass: fields marked ``dataclasses.field(metadata=dict(static=True))`` are
    meta fields and the other ``init=True`` fields are data fields. For a dataclass, data and
    meta fields must together be exactly its ``init=True`` fields minus ``drop_fields``.
    Returns ``nodetype``, so it works as a class decorator; called without ``nodetype`` it
    returns a decorator.
    """
    if nodetype is None:
        return functools.partial(
            register_dataclass, data_fields=data_fields, meta_fields=meta_fields, drop_fields=drop_fields
        )
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError(  # (JAX 0.10.2's words, here and below)
                "register_dataclass: data_fields and meta_fields must both be specified when either is specified."
                f" Got {data_fields=} {meta_fields=}."
            )
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(
                "register_dataclass: data_fields and meta_fields are required when nodetype is not a dataclass. "
                f"Got {nodetype=}."
            )
        fields = [f for f in dataclasses.fields(nodetype) if f.init and f.name not in drop_fields]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    data_names = tuple(data_fields)
    meta_names = tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):
        init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
        given = {*data_names, *meta_names}
        if given != init_fields:
            msg = "data_fields and meta_fields must include all dataclass fields with ``init=True`` and only them."
            if missing := init_fields - given:
                msg += f" Missing fields: {missing}. Add them to drop_fields to suppress this error."
            if unexpected := given - init_fields:
                msg += f" Unexpected fields: {unexpected}."
            raise ValueError(msg)
    if overlap := set(data_names) & set(meta_names):
        raise ValueError(f"data_fields and meta_fields must not overlap. Overlapping fields: {overlap}.")

    cls = nodetype
    data_keys = tuple(GetAttrKey(n) for n in data_names)

    def flatten(x: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        return (
            tuple([getattr(x, n) for n in data_names]),
            tuple([getattr(x, n) for n in meta_names]),
        )

    def flatten_with_keys(x: Any) -> tuple[tuple[tuple[Any, Any], ...], tuple[Any, ...]]:
        return (
            tuple([(k, getattr(x, n)) for k, n in zip(data_keys, data_names)]),
            tuple([getattr(x, n) for n in meta_names]),
        )

    def unflatten(meta: tuple[Any, ...], data: Iterable[Any]) -> Any:
        kwargs = dict(zip(meta_names, meta))
        kwargs.update(zip(data_names, data))
        return cls(**kwargs)

    _register(nodetype, _NodeDef(flatten, unflatten, flatten_with_keys))
    return nodetype


# ---------------------------------------------------------------------------------------------
# Built-in registrations beyond tuple/list/dict/None.
# ---------------------------------------------------------------------------------------------

register_pytree_with_keys(
    collections.OrderedDict,
    lambda d: (tuple([(DictKey(k), v) for k, v in d.items()]), tuple(d)),
    lambda keys, values: collections.OrderedDict(zip(keys, values)),
    lambda d: (tuple(d.values()), tuple(d)),
)


def _defaultdict_flatten_with_keys(d: collections.defaultdict) -> tuple[tuple, tuple]:
    keys = _sorted_keys(d)
    return tuple([(DictKey(k), d[k]) for k in keys]), (d.default_factory, keys)


def _defaultdict_flatten(d: collections.defaultdict) -> tuple[tuple, tuple]:
    keys = _sorted_keys(d)
    return tuple([d[k] for k in keys]), (d.default_factory, keys)


register_pytree_with_keys(
    collections.defaultdict,
    _defaultdict_flatten_with_keys,
    lambda aux, values: collections.defaultdict(aux[0], zip(aux[1], values)),
    _defaultdict_flatten,
)


class _StaticCallable:
    """Wraps a ``functools.partial`` given to :class:`Partial` so its arguments stay static
    (CPython would otherwise merge them into the new partial's arguments, making them leaves)."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _StaticCallable) and self.fn == other.fn

    def __hash__(self) -> int:
        return hash(self.fn)

    def __repr__(self) -> str:
        return repr(self.fn)


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree: its positional and keyword arguments are
    children and the wrapped function is aux data.

    So a ``Partial`` can be passed through transformations, with its bound arguments traced
    like any other leaves. If ``func`` is itself a ``functools.partial`` (or a ``Partial``),
    its bound arguments are treated as part of the (static) function, as in JAX.
    """

    def __new__(cls, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Self:
        if isinstance(func, functools.partial):
            func = _StaticCallable(func)
        return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]),
)
