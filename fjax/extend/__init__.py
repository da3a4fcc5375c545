"""``jax.extend``: the pieces custom interpreters and primitives build on (``jax.extend.core``)."""

from fjax.extend import core

__all__ = ["core"]
