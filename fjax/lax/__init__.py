"""``fjax.lax``: the primitive operations and structured control flow, following ``jax.lax``."""

from fjax.lax.lax import *  # noqa: F401,F403
from fjax.lax.lax import (  # noqa: F401
    RoundingMethod,
    abs,
    max,
    min,
    pow,
    round,
)
