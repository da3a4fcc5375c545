"""``jax.experimental.hijax``: JAX's "high-level" types and primitives (types whose values are
Python objects lowered to arrays, with mutable per-trace data).

fjax does not implement hijax. The names are here so that libraries defining hijax types at
import time (flax's nnx ``Variable(hijax=True)`` machinery) can import and use everything else;
binding a hijax primitive, or tracing a registered hijax type, raises ``NotImplementedError``
naming it.
"""

from __future__ import annotations

from typing import Any, Callable

from fjax.core import AbstractValue  # noqa: F401
from fjax.extend.core import Primitive
from fjax.interpreters.ad import Zero, instantiate_zeros, is_undefined_primal  # noqa: F401

__all__ = [
    "AbstractValue",
    "AvalMutableQDD",
    "AvalQDD",
    "HiPrimitive",
    "HiType",
    "MutableHiType",
    "Zero",
    "aval_method",
    "aval_property",
    "control_flow_allowed_effects",
    "instantiate_zeros",
    "is_undefined_primal",
    "register_hitype",
]


def _unsupported(what: str) -> NotImplementedError:
    return NotImplementedError(f"jax.experimental.hijax ({what}): fjax does not support hijax types and primitives")


class HiPrimitive(Primitive):
    """A hijax primitive: subclasses define ``impl``/``abstract_eval``/``to_lojax``/... as
    methods. fjax cannot bind one."""

    def __init__(self, name: str) -> None:
        super().__init__(name)

    def bind(self, *args: Any, **params: Any) -> Any:
        raise _unsupported(f"binding primitive {self.name!r}")


class HiType(AbstractValue):
    """The abstract type of a hijax value."""

    __slots__ = ()


class MutableHiType(HiType):
    """The abstract type of a mutable hijax value (with per-trace "QDD" data)."""

    __slots__ = ()


class AvalQDD:
    """An abstract value with its mutable type data."""

    def __init__(self, aval: Any, qdd: Any) -> None:
        self.aval, self.qdd = aval, qdd


class AvalMutableQDD(AvalQDD):
    pass


class aval_property(property):  # noqa: N801 - JAX's name
    """A property of a hijax value that its abstract type answers too."""


class aval_method:  # noqa: N801 - JAX's name
    """A method of a hijax value that its abstract type provides too."""

    def __init__(self, fun: Callable) -> None:
        self.fun = fun

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        raise _unsupported(f"method {getattr(self.fun, '__name__', self.fun)!r} of an abstract hijax value")


_hitypes: dict[type, Callable] = {}


def register_hitype(cls: type, to_aval: Callable) -> None:
    """Record ``cls`` as a hijax type (fjax cannot trace its values: they stay Python objects)."""
    _hitypes[cls] = to_aval


class _EffectTypeSet:
    def __init__(self) -> None:
        self._types: set[type] = set()

    def add_type(self, t: type) -> None:
        self._types.add(t)

    def contains(self, eff: Any) -> bool:
        return any(isinstance(eff, t) for t in self._types)


control_flow_allowed_effects = _EffectTypeSet()
