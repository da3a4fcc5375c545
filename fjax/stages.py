"""``jax.stages``: the types of the stages of ``jit``: ``Wrapped`` (``jit(f)``), ``Traced``
and ``Lowered`` (``jit(f).trace(...)`` / ``.lower(...)``; fjax has one object for both)."""

from fjax.jit import JitWrapped as Wrapped
from fjax.jit import Lowered

Traced = Lowered

__all__ = ["Lowered", "Traced", "Wrapped"]
