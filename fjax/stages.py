"""``jax.stages``: the types of the stages of ``jit``: ``Wrapped`` (``jit(f)``), ``Traced``
and ``Lowered`` (``jit(f).trace(...)`` / ``.lower(...)``; fjax has one object for both) and
``Compiled``.

``Compiled`` is the name JAX's ``Lowered.compile()`` returns, here for the annotations and
``isinstance`` checks of code written for JAX. fjax's ``Lowered.compile()`` does not return one:
it gives the backend's program itself (a callable on the flat list of input arrays returning the
flat list of outputs).
"""

from fjax.jit import JitWrapped as Wrapped
from fjax.jit import Lowered

Traced = Lowered

__all__ = ["Compiled", "Lowered", "Traced", "Wrapped"]


class Compiled:
    """``jax.stages.Compiled``: the type of a compiled ``jit`` program in JAX (see the module doc)."""
