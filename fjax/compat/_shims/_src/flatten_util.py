"""``jax._src.flatten_util``: blackjax imports ``ravel_pytree`` from here (its SMC tuning); fjax's
is ``fjax.flatten_util.ravel_pytree`` (``jax.flatten_util``)."""

from fjax.flatten_util import ravel_pytree  # noqa: F401
