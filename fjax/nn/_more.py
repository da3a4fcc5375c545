"""More activations of ``jax.nn``: ``identity``, ``mish``, ``squareplus``, ``sparse_plus``,
``sparse_sigmoid``, ``log1mexp``, ``logmeanexp``, ``tanh``; compositions of jnp functions."""

from __future__ import annotations

from typing import Any

import numpy as np

import fjax.numpy as jnp

__all__ = ["identity", "log1mexp", "logmeanexp", "mish", "sparse_plus", "sparse_sigmoid", "squareplus", "tanh"]

tanh = jnp.tanh


def _float(x: Any, name: str) -> Any:
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(jnp.result_type(x, jnp.float32))
    return x


def identity(x: Any) -> Any:
    """Returns ``x`` unchanged (as an array)."""
    return jnp.asarray(x)


def mish(x: Any) -> Any:
    """``x * tanh(softplus(x))``."""
    from fjax.nn import softplus

    x = _float(x, "mish")
    return x * jnp.tanh(softplus(x))


def squareplus(x: Any, b: Any = 4) -> Any:
    """``(x + sqrt(x**2 + b)) / 2``, a smooth ReLU."""
    x = _float(x, "squareplus")
    return (x + jnp.sqrt(jnp.square(x) + b)) / 2


def sparse_plus(x: Any) -> Any:
    """0 for ``x <= -1``, ``(x + 1)**2 / 4`` for ``-1 < x < 1``, ``x`` for ``x >= 1``."""
    x = _float(x, "sparse_plus")
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def sparse_sigmoid(x: Any) -> Any:
    """0 for ``x <= -1``, ``(x + 1) / 2`` in between, 1 for ``x >= 1`` (the derivative of ``sparse_plus``)."""
    x = _float(x, "sparse_sigmoid")
    return 0.5 * jnp.clip(x + 1.0, 0.0, 2.0)


def log1mexp(x: Any) -> Any:
    """``log(1 - exp(-x))`` for ``x >= 0``, accurate for small and large ``x``."""
    x = _float(x, "log1mexp")
    c = np.log(2.0)
    return jnp.where(x < c, jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


def logmeanexp(x: Any, axis: Any = None, where: Any = None, keepdims: bool = False) -> Any:
    """``log(mean(exp(x)))`` over ``axis``, computed stably (``where`` masks elements out)."""
    from fjax.nn import logsumexp

    x = _float(x, "logmeanexp")
    if where is None:
        n = x.size if axis is None else int(np.prod([x.shape[a] for a in np.atleast_1d(axis)]))
        return logsumexp(x, axis=axis, keepdims=keepdims) - jnp.log(jnp.asarray(n, x.dtype))
    where = jnp.broadcast_to(jnp.asarray(where), x.shape)
    xm = jnp.where(where, x, -jnp.inf)
    n = jnp.sum(where, axis=axis, keepdims=keepdims).astype(x.dtype)
    return logsumexp(xm, axis=axis, keepdims=keepdims) - jnp.log(n)
