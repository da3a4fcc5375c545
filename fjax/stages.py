"""``jax.stages``: the types of the stages of ``jit``: ``Wrapped`` (``jit(f)``), ``Traced``
and ``Lowered`` (``jit(f).trace(...)`` / ``.lower(...)``; fjax has one object for both) and
``Compiled``.

``Compiled`` is what ``Lowered.compile()`` returns (``fjax._aot``): called with the function's
arguments (static ones left out), with JAX's checks and errors.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Union

from fjax._aot import Compiled
from fjax.jit import JitWrapped as Wrapped
from fjax.jit import Lowered

Traced = Lowered

__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]

# options for a compiler, by name (JAX's alias; fjax's ``Lowered.compile()`` accepts none)
CompilerOptions = dict[str, Union[str, bool]]


@dataclasses.dataclass(frozen=True)
class ArgInfo:
    """The abstract value of an argument of a staged function and whether it is donated
    (JAX's ``jax.stages.ArgInfo``)."""

    _aval: Any
    donated: bool

    @property
    def shape(self) -> tuple:
        if not hasattr(self._aval, "shape"):
            raise TypeError(f"No shape attribute with aval of type {type(self._aval)}")
        return self._aval.shape

    @property
    def dtype(self) -> Any:
        if not hasattr(self._aval, "dtype"):
            raise TypeError(f"No dtype attribute with aval of type {type(self._aval)}")
        return self._aval.dtype
