"""Ordering tokens: ``lax.create_token``, ``lax.after_all`` and the ``Token`` value.

In JAX a token is an XLA value threaded through side-effecting operations (infeed/outfeed,
``after_all``) to order them. fjax runs every effect in program order (eager, and in the order
of the jaxpr under ``jit``), so there is nothing for a token to enforce: here a ``Token`` is an
opaque value that can be created, merged and passed in and out of transformed functions.

A ``Token`` is a pytree with no leaves (like ``None``): it passes through ``jit``, ``vmap``,
``grad`` and ``scan`` as part of the static structure, so tokens never appear in a jaxpr (JAX
stages ``create_token``/``after_all`` equations with a ``Tok`` type; fjax has no
``create_token_p``/``after_all_p``). Unflattening makes a fresh ``Token``, so the token a
jitted function returns is a new object.
"""

from __future__ import annotations

from typing import Any

from fjax import _tree_register
from fjax._core_values import AbstractValue

__all__ = ["AbstractToken", "Token", "after_all", "create_token"]


class Token:
    """An ordering token (JAX's ``jax.extend.core.Token``): an opaque value with no data."""

    __slots__ = ()


class AbstractToken(AbstractValue):
    """The abstract type of a ``Token`` (printed ``Tok`` in JAX's jaxprs)."""

    shape: tuple = ()

    def __repr__(self) -> str:
        return "AbstractToken()"

    def str_short(self, short_dtypes: bool = False, mesh_axis_types: bool = False) -> str:
        return "Tok"

    def __eq__(self, other: Any) -> bool:
        return type(other) is AbstractToken

    def __hash__(self) -> int:
        return hash(AbstractToken)


abstract_token = AbstractToken()

_tree_register.register_pytree_node(Token, lambda t: ((), None), lambda aux, children: Token())


def create_token(_: Any = None) -> Token:
    """Create a token value with no preconditions for sequencing effects. The argument is
    ignored (it exists for backward compatibility, as in JAX). fjax runs effects in program
    order, so the token orders nothing; see ``fjax._tokens``."""
    return Token()


def after_all(*operands: Token) -> Token:
    """Merge one or more tokens into one (XLA's ``AfterAll``). Every argument must be a
    ``Token``; fjax runs effects in program order, so the result orders nothing further."""
    for t in operands:
        if not isinstance(t, Token):
            raise TypeError("Arguments to after_all must be tokens")
    return Token()
