"""``jax._src.ad_util``: lineax imports ``stop_gradient_p`` from here (it registers a transpose
rule for it); fjax's is ``fjax.lax.stop_gradient_p``. ``Zero`` and ``SymbolicZero`` are fjax's."""

from fjax.custom_derivatives import SymbolicZero, zero_from_primal  # noqa: F401
from fjax.interpreters.ad import Zero  # noqa: F401
from fjax.lax.lax import stop_gradient_p  # noqa: F401
