"""Stand-in for ``jax.scipy.stats`` (used until ``fjax.scipy.stats`` exists)."""

from fjax.compat._shims.scipy.stats import norm  # noqa: F401
