"""Loss functions with optax's semantics: per-example (or elementwise) values, no reduction,
except :func:`mean_squared_error` which returns the mean (a scalar)."""

from __future__ import annotations

from typing import Any

import fjax.numpy as jnp

__all__ = [
    "huber_loss",
    "l2_loss",
    "mean_squared_error",
    "sigmoid_binary_cross_entropy",
    "softmax_cross_entropy",
    "softmax_cross_entropy_with_integer_labels",
    "squared_error",
]


def softmax_cross_entropy(logits: Any, labels: Any, axis: int = -1) -> Any:
    """``-sum(labels * log_softmax(logits), axis)`` for (soft or one-hot) ``labels``; the loss
    of each example, shape ``logits.shape`` without ``axis``."""
    from fjax.nn import log_softmax

    logits = jnp.asarray(logits)
    return -jnp.sum(jnp.asarray(labels) * log_softmax(logits, axis=axis), axis=axis)


def softmax_cross_entropy_with_integer_labels(logits: Any, labels: Any, axis: int = -1) -> Any:
    """Cross entropy against integer class ``labels`` (shape ``logits.shape`` without
    ``axis``): ``logsumexp(logits) - logits[label]``."""
    from fjax.nn import log_softmax

    logits = jnp.asarray(logits)
    labels = jnp.asarray(labels)
    if not jnp.issubdtype(labels.dtype, jnp.integer):
        raise TypeError(f"softmax_cross_entropy_with_integer_labels: labels must be integers, got {labels.dtype}")
    ax = axis % logits.ndim
    if labels.shape != logits.shape[:ax] + logits.shape[ax + 1 :]:
        raise ValueError(
            f"softmax_cross_entropy_with_integer_labels: labels of shape {labels.shape} do not match "
            f"logits of shape {logits.shape} without axis {axis}"
        )
    logp = log_softmax(logits, axis=ax)
    picked = jnp.take_along_axis(logp, jnp.expand_dims(labels, ax), axis=ax)
    return -jnp.squeeze(picked, axis=ax)


def squared_error(predictions: Any, targets: Any = None) -> Any:
    """Elementwise ``(predictions - targets) ** 2`` (targets default to zeros)."""
    predictions = jnp.asarray(predictions)
    d = predictions if targets is None else predictions - targets
    return jnp.square(d)


def l2_loss(predictions: Any, targets: Any = None) -> Any:
    """Elementwise ``0.5 * (predictions - targets) ** 2`` (as optax.l2_loss)."""
    return 0.5 * squared_error(predictions, targets)


def mean_squared_error(predictions: Any, targets: Any = None) -> Any:
    """The mean over all elements of :func:`squared_error` (a scalar)."""
    return jnp.mean(squared_error(predictions, targets))


def huber_loss(predictions: Any, targets: Any = None, *, delta: float = 1.0) -> Any:
    """Elementwise Huber loss: ``0.5 e^2`` for ``|e| <= delta``, ``delta (|e| - delta / 2)`` beyond."""
    predictions = jnp.asarray(predictions)
    e = predictions if targets is None else predictions - targets
    a = jnp.abs(e)
    quad = jnp.minimum(a, delta)
    return 0.5 * quad * quad + delta * (a - quad)


def sigmoid_binary_cross_entropy(logits: Any, labels: Any) -> Any:
    """Elementwise ``-labels * log(sigmoid(logits)) - (1 - labels) * log(1 - sigmoid(logits))``,
    computed from the logits with ``log_sigmoid`` so both tails stay finite."""
    from fjax.nn import log_sigmoid

    logits = jnp.asarray(logits)
    labels = jnp.asarray(labels).astype(logits.dtype)
    return -labels * log_sigmoid(logits) - (1.0 - labels) * log_sigmoid(-logits)
