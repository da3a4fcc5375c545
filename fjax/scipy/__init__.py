"""``fjax.scipy``: the ``jax.scipy`` namespaces (linear algebra, signal processing, special functions,
statistics, optimize, integrate, ndimage, fft) on top of ``fjax.lax`` and ``fjax.numpy``."""

from fjax.scipy import fft, integrate, linalg, ndimage, optimize, signal, special, stats  # noqa: F401
