"""``jax.extend``: the pieces custom interpreters and primitives build on (``jax.extend.core``,
``jax.extend.linear_util``)."""

from fjax.extend import core, linear_util, source_info_util

__all__ = ["core", "linear_util", "source_info_util"]
