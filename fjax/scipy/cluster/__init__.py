"""``fjax.scipy.cluster``: ``vq`` (vector quantization), as ``jax.scipy.cluster``."""

from fjax.scipy.cluster import vq  # noqa: F401

__all__ = ["vq"]
