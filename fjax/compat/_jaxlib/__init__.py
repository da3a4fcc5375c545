"""What ``import jaxlib`` gives under ``fjax.compat``: fjax has no compiled XLA runtime, only a version."""

from fjax.compat import JAX_API_VERSION as __version__  # noqa: F401

version = __version__
