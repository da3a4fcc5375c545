"""``fjax.scipy.integrate``: ``trapezoid`` (as ``jax.scipy.integrate``)."""

from __future__ import annotations

from typing import Any

from fjax import numpy as jnp
from fjax.numpy._util import promote_dtypes_inexact

__all__ = ["trapezoid"]


def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """Integral of ``y`` along ``axis`` by the trapezoidal rule, at sample points ``x`` (an array
    along ``axis``, or 1-D) or with spacing ``dx``."""
    if x is None:
        (y,) = promote_dtypes_inexact("trapezoid", y)
        y = jnp.moveaxis(y, axis, -1)
        return jnp.asarray(dx, y.dtype) * (jnp.sum(y, axis=-1) - 0.5 * (y[..., 0] + y[..., -1]))
    y, x = promote_dtypes_inexact("trapezoid", y, x)
    y = jnp.moveaxis(y, axis, -1)
    xs = x if x.ndim == 1 else jnp.moveaxis(x, axis, -1)
    d = xs[..., 1:] - xs[..., :-1]
    return 0.5 * jnp.sum(d * (y[..., 1:] + y[..., :-1]), axis=-1)
