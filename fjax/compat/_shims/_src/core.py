"""``jax._src.core``: JAX's core module, which libraries import for ``ShapedArray`` and friends
(flax's fp8 layers). fjax's is ``fjax.core`` (``jax.core``); every name read here is read there."""

from typing import Any

from fjax.core import *  # noqa: F403


def __getattr__(name: str) -> Any:
    import fjax.core

    try:
        return getattr(fjax.core, name)
    except AttributeError:
        raise AttributeError(f"module 'jax._src.core' has no attribute {name!r} (fjax.core has no {name!r})") from None
