"""``jax.extend.linear_util``: ``WrappedFun``, a function with a stack of transformations and
keyword parameters applied when it is called, as JAX's ``jax.extend.linear_util``.

fjax's own transformations do not use it; it is here for libraries that build their
interpreters on JAX's ``lu.wrap_init(f, params, debug_info=...)`` / ``fun.call_wrapped(*args)``
and ``@lu.transformation2`` / ``@lu.transformation_with_aux2`` (new style: the transformation
receives the function it wraps) or the generator style ``@lu.transformation``.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Hashable
from typing import Any

__all__ = [
    "StoreException",
    "WrappedFun",
    "cache",
    "merge_linear_aux",
    "transformation",
    "transformation2",
    "transformation_with_aux",
    "transformation_with_aux2",
    "wrap_init",
]


class StoreException(Exception):
    """Reading an empty ``Store`` or writing a full one."""


_EMPTY = object()


class Store:
    """One value written once by a transformation with auxiliary output, read after the call."""

    __slots__ = ("_val",)

    def __init__(self) -> None:
        self._val: Any = _EMPTY

    def store(self, val: Any) -> None:
        if self._val is not _EMPTY:
            raise StoreException("Store occupied")
        self._val = val

    def reset(self) -> None:
        self._val = _EMPTY

    @property
    def val(self) -> Any:
        if self._val is _EMPTY:
            raise StoreException("Store empty")
        return self._val

    def __bool__(self) -> bool:
        return self._val is not _EMPTY


class EqualStore(Store):
    """A ``Store`` that may be written again with an equal value."""

    __slots__ = ()

    def store(self, val: Any) -> None:
        if self._val is not _EMPTY:
            try:
                same = bool(self._val == val)
            except Exception:  # noqa: BLE001 - incomparable values are "not equal"
                same = False
            if not same:
                raise StoreException("Store occupied with not-equal value")
            return
        self._val = val


def _name(f: Any) -> str:
    return getattr(f, "__name__", None) or str(f)


class WrappedFun:
    """``f`` with ``transforms`` (applied innermost first) and keyword ``params``.

    ``call_wrapped(*args)`` runs the transformed function. Two ``WrappedFun`` are equal (and hash
    alike) when they wrap the same function with the same transformations and parameters.
    """

    __slots__ = ("f", "f_transformed", "transforms", "stores", "params", "in_type", "debug_info")

    def __init__(
        self,
        f: Callable,
        f_transformed: Callable,
        transforms: tuple,
        stores: tuple,
        params: tuple,
        in_type: Any,
        debug_info: Any,
    ) -> None:
        self.f = f
        self.f_transformed = f_transformed
        self.transforms = transforms
        self.stores = stores
        self.params = params
        self.in_type = in_type
        self.debug_info = debug_info

    @property
    def __name__(self) -> str:
        return _name(self.f)

    def wrap(self, gen: Callable, gen_static_args: tuple, out_store: Store | None) -> WrappedFun:
        """This function with one more transformation ``gen(f, [out_store,] *static, *args)``."""
        extra = () if out_store is None else (out_store,)
        inner = functools.partial(gen, self.f_transformed, *extra, *gen_static_args)
        return WrappedFun(
            self.f,
            inner,
            ((gen, gen_static_args), *self.transforms),
            (out_store, *self.stores),
            self.params,
            None,
            self.debug_info,
        )

    def populate_stores(self, stores: tuple) -> None:
        """Copy the values of ``stores`` (another call's) into this function's stores."""
        for mine, theirs in zip(self.stores, stores):
            if mine is not None:
                mine.store(theirs.val)

    def call_wrapped(self, *args: Any, **kwargs: Any) -> Any:
        """Call the transformed function."""
        return self.f_transformed(*args, **kwargs)

    def __repr__(self) -> str:
        lines = [f"{i}   : {_name(g)}   {a}" for i, (g, a) in enumerate(self.transforms)]
        return "Wrapped function:\n" + "\n".join(lines) + "\nCore: " + _name(self.f) + "\n"

    def __hash__(self) -> int:
        return hash((self.f, self.transforms, self.params, self.in_type))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, WrappedFun)
            and self.f == other.f
            and self.transforms == other.transforms
            and self.params == other.params
            and self.in_type == other.in_type
        )


def wrap_init(f: Callable, params: dict | None = None, *, debug_info: Any = None) -> WrappedFun:
    """``f`` as a ``WrappedFun`` with no transformation; ``params`` are passed to ``f`` as keywords."""
    kw = dict(params or {})
    return WrappedFun(f, functools.partial(f, **kw), (), (), tuple(sorted(kw.items())), None, debug_info)


def _curry(gen_to_fun: Callable) -> Callable:
    """``deco(gen)`` -> ``apply(fun, *static_args)``, also usable as ``deco(gen, fun, *static)``."""

    @functools.wraps(gen_to_fun)
    def curried(gen: Callable, *rest: Any, **kw: Any) -> Any:
        if rest:
            return gen_to_fun(gen, *rest, **kw)
        return functools.partial(gen_to_fun, gen, **kw)

    return curried


@_curry
def transformation2(gen: Callable, fun: WrappedFun, *gen_static_args: Hashable) -> WrappedFun:
    """Add transformation ``gen(f, *static_args, *args, **kwargs)`` to ``fun``."""
    return fun.wrap(gen, gen_static_args, None)


@_curry
def transformation_with_aux2(
    gen: Callable, fun: WrappedFun, *gen_static_args: Hashable, use_eq_store: bool = False
) -> tuple[WrappedFun, Callable[[], Any]]:
    """Add ``gen(f, store, *static_args, *args, **kwargs)``; returns the function and a thunk
    reading what ``gen`` put in ``store`` (after a call)."""
    store = EqualStore() if use_eq_store else Store()
    return fun.wrap(gen, gen_static_args, store), lambda: store.val


@_curry
def transformation(gen: Callable, fun: WrappedFun, *gen_static_args: Hashable) -> WrappedFun:
    """The generator style: ``gen(*static_args, *args)`` yields ``(args, kwargs)`` for the wrapped
    function, receives its result and yields the transformed result."""

    def gen2(f: Callable, *args: Any, **kwargs: Any) -> Any:
        it = gen(*args, **kwargs)
        args_, kwargs_ = next(it)
        return it.send(f(*args_, **kwargs_))

    return transformation2(gen2, fun, *gen_static_args)


@_curry
def transformation_with_aux(
    gen: Callable, fun: WrappedFun, *gen_static_args: Hashable
) -> tuple[WrappedFun, Callable[[], Any]]:
    """The generator style with auxiliary output: ``gen`` finally yields ``(result, aux)``."""

    def gen2(f: Callable, store: Store, *args: Any, **kwargs: Any) -> Any:
        it = gen(*args, **kwargs)
        args_, kwargs_ = next(it)
        ans, aux = it.send(f(*args_, **kwargs_))
        store.store(aux)
        return ans

    return transformation_with_aux2(gen2, fun, *gen_static_args)


def cache(call: Callable, *, explain: Callable | None = None) -> Callable:
    """Memoize ``call(fun: WrappedFun, *args)`` on ``fun``'s function, transformations,
    parameters and ``args``; a hit refills ``fun``'s stores from the cached call."""
    del explain
    caches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def memoized(fun: WrappedFun, *args: Any) -> Any:
        try:
            table = caches.setdefault(fun.f, {})
        except TypeError:  # not weakly referenceable: no caching
            return call(fun, *args)
        key = (fun.transforms, fun.params, fun.in_type, args)
        hit = table.get(key)
        if hit is not None:
            ans, stores = hit
            fun.populate_stores(stores)
            return ans
        ans = call(fun, *args)
        table[key] = (ans, fun.stores)
        return ans

    memoized.cache_clear = caches.clear  # type: ignore[attr-defined]
    memoized.evict_function = lambda f: caches.pop(f, None)  # type: ignore[attr-defined]
    return memoized


def merge_linear_aux(aux1: Callable[[], Any], aux2: Callable[[], Any]) -> tuple[bool, Any]:
    """The value of whichever of two store thunks holds one: ``(True, aux1())`` or ``(False, aux2())``."""
    try:
        out1 = aux1()
    except StoreException:
        try:
            out2 = aux2()
        except StoreException:
            raise StoreException("neither store occupied") from None
        return False, out2
    try:
        aux2()
    except StoreException:
        return True, out1
    raise StoreException("both stores occupied")
