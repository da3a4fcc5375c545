"""Stand-in for ``jax.scipy.stats.norm`` (used until ``fjax.scipy.stats.norm`` exists)."""

from typing import Any

import numpy as np

import fjax.numpy as jnp
from fjax import lax


def _promote(*args: Any) -> list[Any]:
    arrs = [jnp.asarray(a) for a in args]
    dtype = jnp.result_type(*arrs, jnp.float32)
    return [a.astype(dtype) for a in arrs]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the normal density at ``x``."""
    x, loc, scale = _promote(x, loc, scale)
    z = (x - loc) / scale
    return -0.5 * z * z - jnp.log(scale) - 0.5 * np.log(2 * np.pi).astype(x.dtype)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Normal density at ``x``."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Normal cumulative distribution function at ``x``."""
    x, loc, scale = _promote(x, loc, scale)
    return 0.5 * lax.erfc(-(x - loc) / (scale * np.sqrt(2).astype(x.dtype)))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of ``cdf`` (computed directly; loses accuracy far in the left tail)."""
    return jnp.log(cdf(x, loc, scale))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Survival function ``1 - cdf``."""
    x, loc, scale = _promote(x, loc, scale)
    return 0.5 * lax.erfc((x - loc) / (scale * np.sqrt(2).astype(x.dtype)))


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Quantile function (inverse of ``cdf``)."""
    q, loc, scale = _promote(q, loc, scale)
    return loc + scale * np.sqrt(2).astype(q.dtype) * lax.erf_inv(2 * q - 1)
