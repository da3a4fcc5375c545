"""``jax._src.dtypes``: libraries import ``TypePromotionError`` from here (equinox) and define
their own extended dtypes against ``ExtendedDType`` (flax's fp8 meta dtype); the rest is
``fjax.dtypes``'s."""

from typing import Any

import numpy as np

from fjax.dtypes import *  # noqa: F403
from fjax.dtypes import TypePromotionError, extended  # noqa: F401

DType = np.dtype


class ExtendedDType:
    """The base of JAX's extended dtypes (a ``type`` under ``dtypes.extended`` and ``_rules``
    telling the compiler their physical form). fjax defines none and cannot compile arrays of
    one: creating such an array raises ``NotImplementedError``."""

    type: type
    name: str
    _rules: Any

    @property
    def itemsize(self) -> int:
        raise NotImplementedError(f"extended dtype {self!r}: fjax does not support extended dtypes")


def supports_inf(dtype: Any) -> bool:
    """Whether floating ``dtype`` has infinities (not the float8 *fn/*fnuz formats)."""
    with np.errstate(all="ignore"):
        return bool(np.isinf(np.array(np.inf).astype(np.dtype(dtype))))
