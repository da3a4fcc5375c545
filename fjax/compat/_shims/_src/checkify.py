"""``jax._src.checkify``: flax's ``nnx.checkify`` imports checkify from here; it is
``fjax.experimental.checkify`` with the names JAX's module has for its annotations."""

from typing import TypeVar

from fjax.experimental.checkify import *  # noqa: F403
from fjax.experimental.checkify import Error, JaxRuntimeError, checkify, user_checks  # noqa: F401

Out = TypeVar("Out")


class JaxException(Exception):
    """The base of the error kinds ``checkify`` can be asked for (JAX's checkify
    ``JaxException``); fjax names the kinds by the sets ``user_checks``, ``nan_checks``, ..."""
