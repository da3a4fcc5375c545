"""``jax.errors``: the exception classes fjax raises, catchable by these names."""

from __future__ import annotations

from fjax.core import (
    ConcretizationTypeError,
    JAXIndexError,
    JaxprTypeError,
    JAXTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)
from fjax.numpy._indexing import NonConcreteBooleanIndexError

__all__ = [
    "ConcretizationTypeError",
    "InconclusiveDimensionOperation",
    "JAXIndexError",
    "JAXTypeError",
    "JaxRuntimeError",
    "JaxprTypeError",
    "KeyReuseError",
    "NonConcreteBooleanIndexError",
    "TracerArrayConversionError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "UnexpectedTracerError",
]


class JaxRuntimeError(RuntimeError):
    """An error detected while running a computation (raised by ``checkify.check_error``)."""


class KeyReuseError(JAXTypeError):
    """A PRNG key was reused (JAX's key-reuse checker; fjax does not check reuse, so it never
    raises this, but code may catch it)."""


class InconclusiveDimensionOperation(Exception):
    """A symbolic-shape comparison could not be decided (fjax has no symbolic shapes, so it
    never raises this)."""
