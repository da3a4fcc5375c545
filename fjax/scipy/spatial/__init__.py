"""``fjax.scipy.spatial``: the ``transform`` submodule (``Rotation``, ``Slerp``), as ``jax.scipy.spatial``."""

from fjax.scipy.spatial import transform  # noqa: F401

__all__ = ["transform"]
