"""``jax.typing``: annotations for array-like arguments and dtype-like values.

``ArrayLike`` is a ``Union`` of what fjax functions accept as arrays (fjax arrays, numpy arrays
and scalars, Python scalars), usable in ``isinstance``; ``DTypeLike`` what they accept as dtypes.
"""

from __future__ import annotations

from typing import Union

import numpy as np

from fjax.core import Array

__all__ = ["ArrayLike", "DTypeLike"]

ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]

DTypeLike = Union[str, type, np.dtype]
