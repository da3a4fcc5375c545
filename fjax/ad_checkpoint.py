"""``jax.ad_checkpoint``: ``checkpoint``/``remat`` with their policies, ``checkpoint_name``,
``print_saved_residuals`` and the values a policy may return (``Saveable``, ``Recompute``,
``Offloadable(src, dst)``, as JAX 0.10's ``jax.ad_checkpoint``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from fjax.checkpoint import checkpoint, checkpoint_name, checkpoint_policies, remat

__all__ = [
    "Offloadable",
    "Recompute",
    "Saveable",
    "checkpoint",
    "checkpoint_name",
    "checkpoint_policies",
    "print_saved_residuals",
    "remat",
]


class RecomputeType:
    """The type of ``Recompute``: a policy returning it recomputes the value in the backward pass."""

    def __bool__(self) -> bool:  # fjax's policies are read with ``bool()``: False = recompute
        return False

    def __repr__(self) -> str:
        return "Recompute"


class SaveableType:
    """The type of ``Saveable``: a policy returning it keeps the value as a residual."""

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "Saveable"


Recompute = RecomputeType()
Saveable = SaveableType()


class Offloadable(NamedTuple):
    """Keep the value as a residual in memory space ``dst`` (moved from ``src``). fjax has one
    memory space per device, so an offloaded residual is simply saved (a non-empty tuple is true)."""

    src: str
    dst: str


def print_saved_residuals(f: Callable, *args: Any, **kwargs: Any) -> None:
    """Print the residuals (values kept for the backward pass) of ``vjp(f, *args)``: shape,
    dtype and whether each is an argument or an intermediate."""
    from fjax import _tree_lifted as tu
    from fjax import api, core

    _, f_vjp = api.vjp(lambda *a: f(*a, **kwargs), *args)
    arg_ids = {id(x) for x in tu.tree_leaves(args)}
    for r in tu.tree_leaves(f_vjp):
        aval = core.get_aval(r)
        where = "from the argument" if id(r) in arg_ids else "output of an intermediate"
        print(f"{aval.str_short()} {where}")
