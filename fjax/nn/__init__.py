"""``fjax.nn``: numerically stable activations and normalizers (as ``jax.nn``).

Each is written with fjax.numpy/lax ops so forward values and derivatives stay finite on both
tails: ``logsumexp`` and ``softmax`` subtract a stop-gradient max, ``softplus`` is
``logaddexp(x, 0)``, ``log_sigmoid`` is ``-softplus(-x)``.
"""

from __future__ import annotations

from typing import Any

import fjax.numpy as jnp
from fjax import lax

__all__ = ["log_sigmoid", "log_softmax", "logsumexp", "relu", "sigmoid", "softmax", "softplus", "silu", "swish"]


def _max_stopped(x: Any, axis: Any) -> Any:
    m = jnp.max(x, axis=axis, keepdims=True)
    m = jnp.where(jnp.isfinite(m), m, 0.0)
    return lax.stop_gradient(m)


def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False) -> Any:
    """log(sum(b * exp(a))) over ``axis``, computed without overflow (as jax.nn.logsumexp)."""
    a = jnp.asarray(a)
    if not jnp.issubdtype(a.dtype, jnp.inexact):
        a = a.astype(jnp.float32)
    m = _max_stopped(a, axis)
    e = jnp.exp(a - m)
    if b is not None:
        e = e * b
    s = jnp.sum(e, axis=axis, keepdims=True)
    sign = jnp.sign(s)
    out = jnp.log(jnp.abs(s)) + m
    if not keepdims:
        axes = tuple(range(a.ndim)) if axis is None else axis
        out = jnp.squeeze(out, axis=axes)
        sign = jnp.squeeze(sign, axis=axes)
    if return_sign:
        return out, sign
    return out


def softmax(x: Any, axis: Any = -1) -> Any:
    """exp(x) / sum(exp(x)) along ``axis``, shifted by the (stop-gradient) max for stability."""
    x = jnp.asarray(x)
    e = jnp.exp(x - _max_stopped(x, axis))
    return e / jnp.sum(e, axis=axis, keepdims=True)


def log_softmax(x: Any, axis: Any = -1) -> Any:
    """x - logsumexp(x) along ``axis``."""
    x = jnp.asarray(x)
    shifted = x - _max_stopped(x, axis)
    return shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=axis, keepdims=True))


def sigmoid(x: Any) -> Any:
    """The logistic function 1 / (1 + exp(-x))."""
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(jnp.float32)
    return lax.logistic(x)


def softplus(x: Any) -> Any:
    """log(1 + exp(x)), stable for large |x|."""
    return jnp.logaddexp(x, 0.0)


def log_sigmoid(x: Any) -> Any:
    """log(sigmoid(x)) = -softplus(-x)."""
    return -softplus(-jnp.asarray(x))


def relu(x: Any) -> Any:
    """max(x, 0); its derivative at 0 is 0, as JAX."""
    x = jnp.asarray(x)
    return jnp.where(x > 0, x, jnp.zeros_like(x))


def silu(x: Any) -> Any:
    """x * sigmoid(x)."""
    return x * sigmoid(x)


swish = silu
