"""``jax.version``: the package version (fjax's own; ``fjax.__version__`` is the same string)."""

__version__ = "0.1.0"
_version = __version__
__version_info__ = tuple(int(p) for p in __version__.split("."))
