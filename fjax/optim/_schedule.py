"""Learning-rate schedules (optax's): functions of the step count, usable inside ``jit``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import fjax.numpy as jnp
from fjax.optim._base import Schedule

__all__ = [
    "constant_schedule",
    "cosine_decay_schedule",
    "exponential_decay",
    "join_schedules",
    "linear_schedule",
    "piecewise_constant_schedule",
    "polynomial_schedule",
    "warmup_constant_schedule",
    "warmup_cosine_decay_schedule",
    "warmup_exponential_decay_schedule",
]


def constant_schedule(value: Any) -> Schedule:
    """``value`` at every step."""
    return lambda count: value


def polynomial_schedule(
    init_value: Any, end_value: Any, power: Any, transition_steps: int, transition_begin: int = 0
) -> Schedule:
    """``(init - end) * (1 - t / transition_steps) ** power + end`` with
    ``t = clip(count - transition_begin, 0, transition_steps)``."""
    if transition_steps <= 0:
        return lambda count: init_value
    transition_begin = max(transition_begin, 0)

    def schedule(count: Any) -> Any:
        count = jnp.clip(jnp.asarray(count) - transition_begin, 0, transition_steps)
        frac = 1 - count / transition_steps
        return (init_value - end_value) * (frac**power) + end_value

    return schedule


def linear_schedule(init_value: Any, end_value: Any, transition_steps: int, transition_begin: int = 0) -> Schedule:
    """Linear interpolation from ``init_value`` to ``end_value`` over ``transition_steps``."""
    return polynomial_schedule(init_value, end_value, 1, transition_steps, transition_begin)


def piecewise_constant_schedule(init_value: Any, boundaries_and_scales: dict[int, float] | None = None) -> Schedule:
    """``init_value`` multiplied by each scale whose boundary is <= ``count``."""
    if boundaries_and_scales is not None and not all(s >= 0.0 for s in boundaries_and_scales.values()):
        raise ValueError("`piecewise_constant_schedule` expects non-negative scale factors")

    def schedule(count: Any) -> Any:
        v = init_value
        if boundaries_and_scales is not None:
            for threshold, s in sorted(boundaries_and_scales.items()):
                indicator = jnp.maximum(0.0, jnp.sign(threshold - jnp.asarray(count)))
                v = v * indicator + (1 - indicator) * s * v
        return v

    return schedule


def exponential_decay(
    init_value: Any,
    transition_steps: int,
    decay_rate: float,
    transition_begin: int = 0,
    staircase: bool = False,
    end_value: Any = None,
) -> Schedule:
    """``init_value * decay_rate ** ((count - transition_begin) / transition_steps)`` (the
    exponent floored when ``staircase``), ``init_value`` before ``transition_begin``, bounded by
    ``end_value`` when given."""
    if transition_steps <= 0 or decay_rate == 0:
        return lambda count: init_value
    transition_begin = max(transition_begin, 0)
    clip_fn = jnp.maximum if decay_rate < 1.0 else jnp.minimum

    def schedule(count: Any) -> Any:
        decreased = jnp.asarray(count) - transition_begin
        p = decreased / transition_steps
        if staircase:
            p = jnp.floor(p)
        value = jnp.where(decreased <= 0, init_value, init_value * jnp.power(decay_rate, p))
        if end_value is not None:
            value = clip_fn(value, end_value)
        return value

    return schedule


def cosine_decay_schedule(init_value: Any, decay_steps: int, alpha: Any = 0.0, exponent: Any = 1.0) -> Schedule:
    """``init_value * ((1 - alpha) * (0.5 * (1 + cos(pi * t / decay_steps))) ** exponent + alpha)``
    with ``t = min(count, decay_steps)``."""
    if not decay_steps > 0:
        raise ValueError(f"The cosine_decay_schedule requires positive decay_steps, got decay_steps={decay_steps}.")
    steps = float(decay_steps)

    def schedule(count: Any) -> Any:
        count = jnp.minimum(jnp.asarray(count), steps)
        cosine = 0.5 * (1 + jnp.cos(np.pi * count / steps))
        return init_value * ((1 - alpha) * cosine**exponent + alpha)

    return schedule


def join_schedules(schedules: Sequence[Schedule], boundaries: Sequence[int]) -> Schedule:
    """``schedules[i](count - boundaries[i-1])`` between consecutive ``boundaries``."""

    def schedule(step: Any) -> Any:
        step = jnp.asarray(step)
        output = schedules[0](step)
        for boundary, sched in zip(boundaries, schedules[1:]):
            output = jnp.where(step < boundary, output, sched(step - boundary))
        return output

    return schedule


def warmup_constant_schedule(init_value: Any, peak_value: Any, warmup_steps: int) -> Schedule:
    """Linear warmup from ``init_value`` to ``peak_value``, then constant."""
    return linear_schedule(init_value, peak_value, warmup_steps)


def warmup_cosine_decay_schedule(
    init_value: Any,
    peak_value: Any,
    warmup_steps: int,
    decay_steps: int,
    end_value: Any = 0.0,
    exponent: Any = 1.0,
) -> Schedule:
    """Linear warmup to ``peak_value`` over ``warmup_steps``, then cosine decay to ``end_value``
    at ``decay_steps`` (counted from step 0, warmup included)."""
    alpha = 0.0 if peak_value == 0.0 else end_value / peak_value
    return join_schedules(
        [
            linear_schedule(init_value, peak_value, warmup_steps),
            cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha, exponent),
        ],
        [warmup_steps],
    )


def warmup_exponential_decay_schedule(
    init_value: Any,
    peak_value: Any,
    warmup_steps: int,
    transition_steps: int,
    decay_rate: Any,
    transition_begin: int = 0,
    staircase: bool = False,
    end_value: Any = None,
) -> Schedule:
    """Linear warmup to ``peak_value``, then :func:`exponential_decay` from there."""
    return join_schedules(
        [
            linear_schedule(init_value, peak_value, warmup_steps),
            exponential_decay(peak_value, transition_steps, decay_rate, transition_begin, staircase, end_value),
        ],
        [warmup_steps],
    )
