"""``jax._src.dtypes``: libraries import ``TypePromotionError`` from here; it is ``fjax.dtypes``'s."""

from fjax.dtypes import *  # noqa: F403
from fjax.dtypes import TypePromotionError  # noqa: F401
