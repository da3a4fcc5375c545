"""``fjax.nn``: activations and normalizers (as ``jax.nn``), plus initializers, layers and losses.

* activations: ``relu``, ``relu6``, ``leaky_relu``, ``elu``, ``celu``, ``selu``, ``gelu``,
  ``silu``/``swish``, ``sigmoid``, ``log_sigmoid``, ``softplus``, ``soft_sign``, ``hard_tanh``,
  ``hard_sigmoid``, ``hard_silu``/``hard_swish``, ``glu``, ``softmax``, ``log_softmax``,
  ``logsumexp``, ``one_hot``, ``standardize``, ``dot_product_attention``;
* :mod:`fjax.nn.initializers` (``init(key, shape, dtype)``, as ``jax.nn.initializers``);
* :mod:`fjax.nn.layers` (pytree modules with explicit keys: ``Linear``, ``MLP``, ``Conv2d``,
  ``LayerNorm``, ``BatchNorm``, ``Dropout``, ``Embedding``, ``LSTMCell``,
  ``MultiHeadAttention``; ``max_pool``/``avg_pool``), re-exported here;
* :mod:`fjax.nn.losses` (optax's per-example losses), re-exported here.

Each activation is written with fjax.numpy/lax ops so forward values and derivatives stay finite on both
tails: ``logsumexp`` and ``softmax`` subtract a stop-gradient max, ``softplus`` is
``logaddexp(x, 0)``, ``log_sigmoid`` is ``-softplus(-x)``.
"""

from __future__ import annotations

from fjax.dtypes import finfo as _finfo
from typing import Any

import operator
import numpy as np

import fjax.numpy as jnp
from fjax import core, lax

__all__ = [
    "celu",
    "dot_product_attention",
    "elu",
    "gelu",
    "glu",
    "hard_sigmoid",
    "hard_silu",
    "hard_swish",
    "hard_tanh",
    "leaky_relu",
    "log_sigmoid",
    "log_softmax",
    "logsumexp",
    "one_hot",
    "relu",
    "relu6",
    "selu",
    "sigmoid",
    "silu",
    "soft_sign",
    "softmax",
    "softplus",
    "standardize",
    "swish",
]


def _max_stopped(x: Any, axis: Any) -> Any:
    m = jnp.max(x, axis=axis, keepdims=True)
    m = jnp.where(jnp.isfinite(m), m, 0.0)
    return lax.stop_gradient(m)


def logsumexp(
    a: Any, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False, where: Any = None
) -> Any:
    """log(sum(b * exp(a))) over ``axis`` (only where ``where`` is true), computed without overflow.

    The same function as ``fjax.scipy.special.logsumexp``, as ``jax.nn.logsumexp`` is in JAX.
    """
    from fjax.scipy import special  # loaded on first use (fjax.scipy is lazy)

    return special.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign, where=where)


def softmax(x: Any, axis: Any = -1, where: Any = None) -> Any:
    """exp(x) / sum(exp(x)) along ``axis``, shifted by the (stop-gradient) max for stability.

    ``where`` masks elements out of the sum; their outputs are 0, as in JAX.
    """
    x = jnp.asarray(x)
    if where is None:
        # the max is not made finite here (logsumexp does): an inf input gives NaNs, as JAX
        e = jnp.exp(x - lax.stop_gradient(jnp.max(x, axis=axis, initial=-jnp.inf, keepdims=True)))
        return e / jnp.sum(e, axis=axis, keepdims=True)
    xm = jnp.where(where, x, -jnp.inf)
    e = jnp.where(where, jnp.exp(xm - _max_stopped(xm, axis)), 0.0)
    return e / jnp.sum(e, axis=axis, keepdims=True)


def log_softmax(x: Any, axis: Any = -1, where: Any = None) -> Any:
    """x - logsumexp(x) along ``axis`` (``where`` masks elements out; their outputs are -inf)."""
    x = jnp.asarray(x)
    if where is None:
        # the max is not made finite here (logsumexp does): an inf input gives NaNs, as JAX
        shifted = x - lax.stop_gradient(jnp.max(x, axis=axis, initial=-jnp.inf, keepdims=True))
        return shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=axis, keepdims=True))
    xm = jnp.where(where, x, -jnp.inf)
    shifted = xm - _max_stopped(xm, axis)
    out = shifted - jnp.log(jnp.sum(jnp.where(where, jnp.exp(shifted), 0.0), axis=axis, keepdims=True))
    return jnp.where(where, out, -jnp.inf)


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
    """max(x, 0); its derivative is 1 where x > 0 and 0 elsewhere (at 0 and at NaN), as JAX's;
    NaN stays NaN."""
    x = jnp.asarray(x)
    # the clipped value carries no gradient
    return jnp.where(x > 0, x, lax.stop_gradient(jnp.where(x <= 0, jnp.zeros_like(x), x)))


def silu(x: Any) -> Any:
    """x * sigmoid(x)."""
    return x * sigmoid(x)


swish = silu


def _float(x: Any) -> Any:
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(jnp.float32)
    return x


def relu6(x: Any) -> Any:
    """min(max(x, 0), 6); its derivative at 0 and at 6 is 0, as JAX's; NaN stays NaN."""
    x = jnp.asarray(x)
    clipped = jnp.minimum(jnp.maximum(x, 0), 6)
    # the clipped value carries no gradient, so ties at the corners get 0 (not maximum's 1/2)
    return jnp.where((x > 0) & (x < 6), x, lax.stop_gradient(clipped))


def leaky_relu(x: Any, negative_slope: Any = 1e-2) -> Any:
    """x where x >= 0, else ``negative_slope * x``."""
    x = jnp.asarray(x)
    return jnp.where(x >= 0, x, negative_slope * x)


def elu(x: Any, alpha: Any = 1.0) -> Any:
    """x where x > 0, else ``alpha * (exp(x) - 1)`` (the untaken branch is kept finite)."""
    x = _float(x)
    safe = jnp.where(x > 0, jnp.zeros_like(x), x)
    return jnp.where(x > 0, x, alpha * jnp.expm1(safe))


def celu(x: Any, alpha: Any = 1.0) -> Any:
    """max(x, 0) + alpha * min(exp(x / alpha) - 1, 0)."""
    x = _float(x)
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


def selu(x: Any) -> Any:
    """Scaled ELU with the self-normalizing constants."""
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    return scale * elu(x, alpha)


def gelu(x: Any, approximate: bool = True) -> Any:
    """Gaussian error linear unit; the tanh approximation by default (as jax.nn.gelu)."""
    x = _float(x)
    if approximate:
        c = np.sqrt(2 / np.pi).astype(x.dtype)
        return x * (0.5 * (1.0 + jnp.tanh(c * (x + 0.044715 * (x**3)))))  # JAX's expression (and jaxpr)
    return 0.5 * x * (1 + lax.erf(x * np.array(1 / np.sqrt(2), x.dtype)))


def soft_sign(x: Any) -> Any:
    """x / (|x| + 1)."""
    x = _float(x)
    return x / (jnp.abs(x) + 1)


def hard_tanh(x: Any) -> Any:
    """x clipped to [-1, 1]."""
    x = jnp.asarray(x)
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x)).astype(x.dtype)


def hard_sigmoid(x: Any) -> Any:
    """relu6(x + 3) / 6."""
    return relu6(jnp.asarray(x) + 3.0) / 6.0


def hard_silu(x: Any) -> Any:
    """x * hard_sigmoid(x)."""
    x = jnp.asarray(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def glu(x: Any, axis: int = -1) -> Any:
    """Gated linear unit: split ``x`` in two halves along ``axis``, return a * sigmoid(b)."""
    x = jnp.asarray(x)
    if x.shape[axis] % 2:
        raise ValueError(f"glu: axis {axis} of shape {x.shape} must have even size")
    a, b = jnp.split(x, 2, axis=axis)
    return a * sigmoid(b)


def one_hot(x: Any, num_classes: int, *, dtype: Any = jnp.float32, axis: int = -1) -> Any:
    """One-hot encode integer ``x`` into ``num_classes`` classes along a new ``axis``.

    Out-of-range indices (negative or >= num_classes) give all-zero rows, as jax.nn.one_hot.
    """
    x = jnp.asarray(x)
    if isinstance(num_classes, core.Tracer):  # (JAX's context)
        num_classes = core.concrete_or_error(num_classes, "The error arose in jax.nn.one_hot argument `num_classes`.")
    num_classes = operator.index(num_classes)  # a float is a TypeError, as in JAX
    out_ndim = x.ndim + 1
    ax = axis + out_ndim if axis < 0 else axis
    if not 0 <= ax < out_ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {out_ndim}")
    xe = jnp.expand_dims(x, ax)
    shape = [1] * out_ndim
    shape[ax] = num_classes
    classes = lax.broadcasted_iota(jnp.int32, tuple(shape), ax)
    return (xe == classes).astype(dtype)


def standardize(
    x: Any,
    axis: Any = -1,
    mean: Any = None,
    variance: Any = None,
    epsilon: float = 1e-5,
    where: Any = None,
    *,
    algorithm: str = "fast",
) -> Any:
    """(x - mean) / sqrt(variance + epsilon), statistics over ``axis`` unless given. ``algorithm``:
    the variance as ``mean(x**2) - mean**2`` clipped at 0 (``"fast"``) or ``mean((x - mean)**2)``
    (``"stable"``)."""
    x = _float(x)
    if mean is None:
        mean = jnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            variance = jnp.mean(jnp.square(jnp.subtract(x, mean)), axis, keepdims=True, where=where)
        elif algorithm == "fast":
            variance = jnp.mean(jnp.square(x), axis, keepdims=True, where=where) - jnp.square(mean)
            variance = jnp.clip(variance, 0)  # (the fast form can go negative by rounding)
        else:
            raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
    return (x - mean) * lax.rsqrt(variance + epsilon)


from fjax.nn._attention import dot_product_attention  # noqa: E402

from fjax.nn import initializers  # noqa: E402
from fjax.nn.layers import (  # noqa: E402
    MLP,
    BatchNorm,
    BatchNormState,
    Conv2d,
    Dropout,
    Embedding,
    LayerNorm,
    Linear,
    LSTMCell,
    Module,
    MultiHeadAttention,
    avg_pool,
    max_pool,
)
from fjax.nn.losses import (  # noqa: E402
    huber_loss,
    l2_loss,
    mean_squared_error,
    sigmoid_binary_cross_entropy,
    softmax_cross_entropy,
    softmax_cross_entropy_with_integer_labels,
    squared_error,
)

__all__ += [
    "BatchNorm",
    "BatchNormState",
    "Conv2d",
    "Dropout",
    "Embedding",
    "LSTMCell",
    "LayerNorm",
    "Linear",
    "MLP",
    "Module",
    "MultiHeadAttention",
    "avg_pool",
    "huber_loss",
    "initializers",
    "l2_loss",
    "max_pool",
    "mean_squared_error",
    "sigmoid_binary_cross_entropy",
    "softmax_cross_entropy",
    "softmax_cross_entropy_with_integer_labels",
    "squared_error",
]
from fjax.nn._more import *  # noqa: E402,F401,F403
from fjax.nn._scaled import *  # noqa: E402,F401,F403

# eager calls of composites run compiled once a call signature repeats (fjax/_eager_compile.py)
from fjax import _eager_compile as _ec  # noqa: E402

_ec.install(globals(), _ec.NN)
del _ec
