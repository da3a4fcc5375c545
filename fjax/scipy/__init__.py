"""``fjax.scipy``: the ``jax.scipy`` API (special functions, statistics, optimize, integrate,
ndimage) on top of ``fjax.lax`` and ``fjax.numpy``."""

from fjax.scipy import integrate, ndimage, optimize, special, stats  # noqa: F401
