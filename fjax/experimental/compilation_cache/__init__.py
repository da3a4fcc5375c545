"""``jax.experimental.compilation_cache``: the persistent compilation cache (its functions are in
the ``compilation_cache`` submodule, as in JAX)."""

from fjax.experimental.compilation_cache import compilation_cache  # noqa: F401
