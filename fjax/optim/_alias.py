"""Ready-made optimizers (optax's aliases): chains of the transformations in ``_transform``."""

from __future__ import annotations

from typing import Any

from fjax.optim._base import GradientTransformation, ScalarOrSchedule, chain, identity
from fjax.optim._transform import (
    add_decayed_weights,
    scale_by_adam,
    scale_by_learning_rate,
    scale_by_rms,
    scale_by_rss,
    scale_by_stddev,
    trace,
)

__all__ = ["adagrad", "adam", "adamw", "nadam", "rmsprop", "sgd"]


def sgd(
    learning_rate: ScalarOrSchedule,
    momentum: float | None = None,
    nesterov: bool = False,
    accumulator_dtype: Any = None,
) -> GradientTransformation:
    """SGD, with heavy-ball (``trace``) momentum when ``momentum`` is given:
    ``t = g + momentum * t``; step ``-lr * t`` (``-lr * (g + momentum * t)`` if ``nesterov``)."""
    opt = trace(momentum, nesterov, accumulator_dtype) if momentum is not None else identity()
    return chain(opt, scale_by_learning_rate(learning_rate))


def adam(
    learning_rate: ScalarOrSchedule,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    eps_root: float = 0.0,
    mu_dtype: Any = None,
    *,
    nesterov: bool = False,
) -> GradientTransformation:
    """Adam: ``-lr * mu_hat / (sqrt(nu_hat + eps_root) + eps)`` (see :func:`scale_by_adam`)."""
    return chain(
        scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov),
        scale_by_learning_rate(learning_rate),
    )


def nadam(
    learning_rate: ScalarOrSchedule,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    eps_root: float = 0.0,
    mu_dtype: Any = None,
) -> GradientTransformation:
    """Adam with Nesterov momentum (``adam(..., nesterov=True)``)."""
    return adam(learning_rate, b1, b2, eps, eps_root, mu_dtype, nesterov=True)


def adamw(
    learning_rate: ScalarOrSchedule,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    eps_root: float = 0.0,
    mu_dtype: Any = None,
    weight_decay: float = 1e-4,
    mask: Any = None,
    *,
    nesterov: bool = False,
) -> GradientTransformation:
    """Adam with decoupled weight decay: ``-lr * (adam_update + weight_decay * params)``."""
    return chain(
        scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov),
        add_decayed_weights(weight_decay, mask),
        scale_by_learning_rate(learning_rate),
    )


def rmsprop(
    learning_rate: ScalarOrSchedule,
    decay: float = 0.9,
    eps: float = 1e-8,
    initial_scale: float = 0.0,
    eps_in_sqrt: bool = True,
    centered: bool = False,
    momentum: float | None = None,
    nesterov: bool = False,
    bias_correction: bool = False,
) -> GradientTransformation:
    """RMSProp: ``-lr * g / sqrt(nu + eps)`` with ``nu`` the moving average of ``g**2``
    (centered: of the variance), then optional momentum (applied after the learning rate)."""
    scaler = scale_by_stddev if centered else scale_by_rms
    return chain(
        scaler(decay, eps, initial_scale, eps_in_sqrt, bias_correction),
        scale_by_learning_rate(learning_rate),
        trace(momentum, nesterov) if momentum is not None else identity(),
    )


def adagrad(
    learning_rate: ScalarOrSchedule, initial_accumulator_value: float = 0.1, eps: float = 1e-7
) -> GradientTransformation:
    """Adagrad: ``-lr * g / sqrt(sum of g**2 + eps)``, the sum starting at
    ``initial_accumulator_value``."""
    return chain(scale_by_rss(initial_accumulator_value, eps), scale_by_learning_rate(learning_rate))
