"""Shape and indexing functions of ``fjax.numpy`` and ``fjax.lax`` on typed key arrays, as in JAX.

A key array of shape ``s`` holds uint32 data of shape ``(*s, 2)``. Functions that only move,
repeat, select or reshape elements (``reshape``, ``expand_dims``, ``broadcast_to``, ``take``,
``squeeze``, ``swapaxes``, ``flip``, ``roll``, ``tile``, ``repeat``, ``transpose``,
``lax.dynamic_slice``, ...) act alike on each of the two data words, so on a key array they run on
each word plane (shape ``s``, the key array's own axes, negative axes included) and the results
are stacked back into keys. ``install`` wraps the public functions in place.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

JNP_FUNCTIONS = (
    "reshape",
    "ravel",
    "expand_dims",
    "squeeze",
    "broadcast_to",
    "take",
    "take_along_axis",
    "swapaxes",
    "moveaxis",
    "transpose",
    "permute_dims",
    "matrix_transpose",
    "flip",
    "fliplr",
    "flipud",
    "rot90",
    "roll",
    "tile",
    "repeat",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "split",
    "array_split",
    "hsplit",
    "vsplit",
    "dsplit",
    "unstack",
    "diagonal",
)
LAX_FUNCTIONS = (
    "reshape",
    "expand_dims",
    "squeeze",
    "broadcast",
    "broadcast_in_dim",
    "transpose",
    "rev",
    "slice",
    "slice_in_dim",
    "index_in_dim",
    "dynamic_slice",
    "dynamic_slice_in_dim",
    "dynamic_index_in_dim",
    "index_take",
)


_cls: list = []


def _key_class() -> type:
    if not _cls:
        from fjax._prng import PRNGKeyArray  # noqa: PLC0415 - fjax._prng imports fjax.numpy

        _cls.append(PRNGKeyArray)
    return _cls[0]


def _rejoin(a: Any, b: Any) -> Any:
    """Two results of the same function on the two word planes, stacked back into keys."""
    if isinstance(a, (list, tuple)):
        return type(a)(_rejoin(x, y) for x, y in zip(a, b, strict=True))
    from fjax import numpy as jnp  # noqa: PLC0415

    return _key_class()(jnp.stack([a, b], axis=-1))


def through_keys(fn: Callable) -> Callable:
    """``fn`` also taking a key array as its first argument (the others pass through)."""
    if getattr(fn, "__fjax_keys_through__", False):
        return fn

    try:
        first = next(iter(inspect.signature(fn).parameters))  # the array, also passed by keyword
    except (TypeError, ValueError, StopIteration):
        first = None

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if args:
            x, rest = args[0], args[1:]
        elif first is not None and first in kwargs:
            kwargs = dict(kwargs)
            x, rest = kwargs.pop(first), ()
        else:
            return fn(*args, **kwargs)
        if isinstance(x, _key_class()):
            base = x._base
            return _rejoin(fn(base[..., 0], *rest, **kwargs), fn(base[..., 1], *rest, **kwargs))
        return fn(x, *rest, **kwargs)

    wrapper.__fjax_keys_through__ = True
    return wrapper


def install(namespace: dict, names: tuple) -> None:
    for name in names:
        fn = namespace.get(name)
        if callable(fn):
            namespace[name] = through_keys(fn)


class _KeyAt:
    """``keys.at[idx]`` for key arrays: ``.set(keys)`` and ``.get()``."""

    __slots__ = ("_keys",)

    def __init__(self, keys: Any) -> None:
        self._keys = keys

    def __getitem__(self, idx: Any) -> _KeyRef:
        return _KeyRef(self._keys, idx)


class _KeyRef:
    __slots__ = ("_keys", "_idx")

    def __init__(self, keys: Any, idx: Any) -> None:
        self._keys, self._idx = keys, idx

    def get(self, **kwargs: Any) -> Any:
        return self._keys[self._idx]

    def set(self, values: Any, **kwargs: Any) -> Any:
        from fjax import numpy as jnp  # noqa: PLC0415

        cls = _key_class()
        if not isinstance(values, cls):
            raise TypeError(f"keys.at[...].set: the values must be a key array, got {type(values).__name__}")
        planes = []
        for w in (0, 1):
            plane = self._keys._base[..., w]
            planes.append(plane.at[self._idx].set(values._base[..., w], **kwargs))
        return cls(jnp.stack(planes, axis=-1))


def key_at(keys: Any) -> _KeyAt:
    return _KeyAt(keys)
