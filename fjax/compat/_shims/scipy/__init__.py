"""Stand-in for ``jax.scipy`` until fjax has its own ``fjax.scipy`` (which then takes precedence).

Only what libraries import at module level: ``special.logsumexp`` and the normal distribution.
"""

from fjax.compat._shims.scipy import special, stats  # noqa: F401
