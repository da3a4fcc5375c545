"""``jax.experimental``: ``io_callback`` and the ``checkify`` transform (a submodule)."""

from fjax.experimental import compilation_cache  # noqa: F401
from fjax.experimental._io_callback import io_callback

__all__ = ["io_callback"]
