"""Stand-in for ``jax.scipy.special`` (used until ``fjax.scipy.special`` exists)."""

from fjax.lax import digamma, erf, erfc  # noqa: F401
from fjax.nn import log_softmax, logsumexp, softmax  # noqa: F401
