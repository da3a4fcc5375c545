"""``jax._src``: the few JAX internals that libraries built on JAX import at module level.

chex imports ``jax._src.compiler`` (``chex.restrict_backends``) and reads
``jax._src.xla_bridge._backends`` (``chex.set_n_cpu_devices``); equinox imports
``jax._src.traceback_util`` (it registers its files for traceback filtering),
``jax._src.dispatch.wait_for_tokens`` and ``jax._src.dtypes.TypePromotionError``. Anything else under ``jax._src``
is JAX's private implementation, which fjax does not have: importing it fails as a missing module.
"""

from fjax.compat._shims._src import compiler, xla_bridge  # noqa: F401
