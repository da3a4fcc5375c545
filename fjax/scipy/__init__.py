"""``fjax.scipy``: the ``jax.scipy`` namespaces (``linalg``, ``signal``, ...)."""

from fjax.scipy import linalg  # noqa: F401
from fjax.scipy import signal  # noqa: F401
