"""``jax.ad_checkpoint``: ``checkpoint``/``remat`` with their policies, ``checkpoint_name`` and
``print_saved_residuals``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fjax.checkpoint import checkpoint, checkpoint_name, checkpoint_policies, remat

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "print_saved_residuals", "remat"]


def print_saved_residuals(f: Callable, *args: Any, **kwargs: Any) -> None:
    """Print the residuals (values kept for the backward pass) of ``vjp(f, *args)``: shape,
    dtype and whether each is an argument or an intermediate."""
    from fjax import api, core
    from fjax import tree_util as tu

    _, f_vjp = api.vjp(lambda *a: f(*a, **kwargs), *args)
    arg_ids = {id(x) for x in tu.tree_leaves(args)}
    for r in tu.tree_leaves(f_vjp):
        aval = core.get_aval(r)
        where = "from the argument" if id(r) in arg_ids else "output of an intermediate"
        print(f"{aval.str_short()} {where}")
