"""Compiled implementations of primitives that do not fuse into loop nests (convolutions,
scatters, arg-reductions, cumulative ops, sorts): the numba backend calls these from its program
instead of the primitive's numpy ``impl``.

``HOST_KERNELS`` maps a primitive name to a builder ``(eqn) -> callable | None``; the callable takes
the equation's operands (numpy arrays) as positional arguments and returns what ``impl`` returns
(an array, or a list of arrays for multiple-result primitives). A builder returns None when it has
no faster form for that equation (the program then calls ``impl``).
"""

from __future__ import annotations

from typing import Any, Callable

from fjax.core import JaxprEqn

HOST_KERNELS: dict[str, Callable[[JaxprEqn], Any]] = {}


def host_kernel(eqn: JaxprEqn) -> Callable | None:
    """The compiled implementation of ``eqn``, or None to call the primitive's ``impl``."""
    build = HOST_KERNELS.get(eqn.primitive.name)
    return None if build is None else build(eqn)
