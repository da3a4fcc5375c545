"""Structured control flow: ``cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan``, ``map``."""

from fjax.lax.control_flow.conditionals import cond, cond_p, switch  # noqa: F401
from fjax.lax.control_flow.loops import fori_loop, while_loop, while_p  # noqa: F401
from fjax.lax.control_flow.scan import map, scan  # noqa: F401,A004

__all__ = ["cond", "cond_p", "fori_loop", "map", "scan", "switch", "while_loop", "while_p"]
