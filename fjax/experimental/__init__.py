"""``jax.experimental``: ``io_callback`` and the ``checkify`` transform (a submodule)."""

from fjax.experimental._io_callback import io_callback

__all__ = ["io_callback"]
