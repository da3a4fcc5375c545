"""Gradient transformations (optax's ``scale_by_*``, ``trace``, clipping, weight decay)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import fjax.numpy as jnp
from fjax import lax, tree_util
from fjax.optim._base import (
    NO_PARAMS_MSG,
    EmptyState,
    GradientTransformation,
    OptState,
    Params,
    Updates,
    bias_correction,
    global_norm,
    init_empty_state,
    safe_increment,
    tree_cast,
    tree_cast_like,
    tree_full_like,
    tree_zeros_like,
    update_moment,
    update_moment_per_elem_norm,
)

__all__ = [
    "AddDecayedWeightsState",
    "ClipByGlobalNormState",
    "ScaleByAdamState",
    "ScaleByRmsState",
    "ScaleByRmsWithCountState",
    "ScaleByRssState",
    "ScaleByRStdDevState",
    "ScaleByRStdDevWithCountState",
    "ScaleByScheduleState",
    "ScaleState",
    "TraceState",
    "add_decayed_weights",
    "clip",
    "clip_by_global_norm",
    "scale",
    "scale_by_adam",
    "scale_by_learning_rate",
    "scale_by_rms",
    "scale_by_rss",
    "scale_by_schedule",
    "scale_by_stddev",
    "trace",
]

ScaleState = EmptyState
AddDecayedWeightsState = EmptyState
ClipByGlobalNormState = EmptyState
ClipState = EmptyState


def _count0() -> Any:
    return jnp.zeros((), jnp.int32)


def scale(step_size: Any) -> GradientTransformation:
    """Multiply updates by the constant ``step_size``."""

    def update(updates: Updates, state: OptState, params: Params = None) -> tuple[Updates, OptState]:
        del params
        return tree_util.tree_map(lambda g: step_size * g, updates), state

    return GradientTransformation(init_empty_state, update)


class ScaleByScheduleState(NamedTuple):
    count: Any  # int32 scalar: the number of updates done so far


def scale_by_schedule(step_size_fn: Callable[[Any], Any]) -> GradientTransformation:
    """Multiply updates by ``step_size_fn(count)``, ``count`` the number of earlier updates."""

    def init(params: Params) -> ScaleByScheduleState:
        del params
        return ScaleByScheduleState(_count0())

    def update(updates: Updates, state: ScaleByScheduleState, params: Params = None) -> tuple:
        del params
        step_size = step_size_fn(state.count)
        updates = tree_util.tree_map(lambda g: jnp.asarray(step_size).astype(jnp.asarray(g).dtype) * g, updates)
        return updates, ScaleByScheduleState(safe_increment(state.count))

    return GradientTransformation(init, update)


def scale_by_learning_rate(learning_rate: Any, *, flip_sign: bool = True) -> GradientTransformation:
    """Scale by ``-learning_rate`` (a constant or a schedule); ``flip_sign=False`` keeps the sign."""
    m = -1 if flip_sign else 1
    if callable(learning_rate):
        return scale_by_schedule(lambda count: m * learning_rate(count))
    return scale(m * learning_rate)


class TraceState(NamedTuple):
    trace: Any


def trace(decay: Any, nesterov: bool = False, accumulator_dtype: Any = None) -> GradientTransformation:
    """Momentum: ``t = g + decay * t``; the update is ``t`` (or ``g + decay * t`` with Nesterov)."""

    def init(params: Params) -> TraceState:
        return TraceState(tree_zeros_like(params, accumulator_dtype))

    def update(updates: Updates, state: TraceState, params: Params = None) -> tuple:
        del params

        def f(g: Any, t: Any) -> Any:
            return g + decay * t

        new_trace = tree_util.tree_map(f, updates, state.trace)
        updates = tree_util.tree_map(f, updates, new_trace) if nesterov else new_trace
        return updates, TraceState(tree_cast(new_trace, accumulator_dtype))

    return GradientTransformation(init, update)


class ScaleByAdamState(NamedTuple):
    count: Any  # int32 scalar
    mu: Any
    nu: Any


def scale_by_adam(
    b1: Any = 0.9,
    b2: Any = 0.999,
    eps: Any = 1e-8,
    eps_root: Any = 0.0,
    mu_dtype: Any = None,
    *,
    nesterov: bool = False,
) -> GradientTransformation:
    """Adam's rescaling: ``mu_hat / (sqrt(nu_hat + eps_root) + eps)`` with bias-corrected
    moments ``mu_hat = mu / (1 - b1**t)``, ``nu_hat = nu / (1 - b2**t)``. With ``nesterov``,
    ``mu_hat = b1 * mu / (1 - b1**(t+1)) + (1 - b1) * g / (1 - b1**t)`` (NAdam, as optax)."""

    def init(params: Params) -> ScaleByAdamState:
        return ScaleByAdamState(_count0(), tree_zeros_like(params, mu_dtype), tree_zeros_like(params))

    def update(updates: Updates, state: ScaleByAdamState, params: Params = None) -> tuple:
        del params
        mu = update_moment(updates, state.mu, b1, 1)
        nu = update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count_inc = safe_increment(state.count)
        if nesterov:
            mu_hat = tree_util.tree_map(
                lambda m, g: b1 * m + (1 - b1) * g,
                bias_correction(mu, b1, safe_increment(count_inc)),
                bias_correction(updates, b1, count_inc),
            )
        else:
            mu_hat = bias_correction(mu, b1, count_inc)
        nu_hat = bias_correction(nu, b2, count_inc)
        updates = tree_util.tree_map(lambda m, v: m / (jnp.sqrt(v + eps_root) + eps), mu_hat, nu_hat)
        mu = tree_cast(mu, mu_dtype)
        nu = tree_cast_like(nu, state.nu)
        return updates, ScaleByAdamState(count_inc, mu, nu)

    return GradientTransformation(init, update)


class ScaleByRmsState(NamedTuple):
    nu: Any


class ScaleByRmsWithCountState(NamedTuple):
    count: Any
    nu: Any


def scale_by_rms(
    decay: Any = 0.9,
    eps: Any = 1e-8,
    initial_scale: Any = 0.0,
    eps_in_sqrt: bool = True,
    bias_correction: bool = False,
) -> GradientTransformation:
    """Divide by the root of an exponential moving average of squared updates:
    ``g / sqrt(nu + eps)`` (``eps_in_sqrt``) or ``g / (sqrt(nu) + eps)``."""
    from fjax.optim._base import bias_correction as _bc

    def init(params: Params) -> Any:
        nu = tree_full_like(params, initial_scale)
        if bias_correction:
            return ScaleByRmsWithCountState(_count0(), nu)
        return ScaleByRmsState(nu)

    def update(updates: Updates, state: Any, params: Params = None) -> tuple:
        del params
        nu = update_moment_per_elem_norm(updates, state.nu, decay, 2)
        if bias_correction:
            count_inc = safe_increment(state.count)
            nu_hat = _bc(nu, decay, count_inc)
        else:
            nu_hat = nu
        if eps_in_sqrt:
            scaling = tree_util.tree_map(lambda n: lax.rsqrt(n + eps), nu_hat)
        else:
            scaling = tree_util.tree_map(lambda n: 1 / (jnp.sqrt(n) + eps), nu_hat)
        updates = tree_util.tree_map(lambda s, g: s * g, scaling, updates)
        if bias_correction:
            return updates, ScaleByRmsWithCountState(count_inc, nu)
        return updates, ScaleByRmsState(nu)

    return GradientTransformation(init, update)


class ScaleByRStdDevState(NamedTuple):
    mu: Any
    nu: Any


class ScaleByRStdDevWithCountState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


def scale_by_stddev(
    decay: Any = 0.9,
    eps: Any = 1e-8,
    initial_scale: Any = 0.0,
    eps_in_sqrt: bool = True,
    bias_correction: bool = False,
) -> GradientTransformation:
    """Divide by the root of the centered moving variance ``nu - mu**2`` (centered RMSProp)."""
    from fjax.optim._base import bias_correction as _bc

    def init(params: Params) -> Any:
        mu = tree_zeros_like(params)
        nu = tree_full_like(params, initial_scale)
        if bias_correction:
            return ScaleByRStdDevWithCountState(_count0(), mu, nu)
        return ScaleByRStdDevState(mu, nu)

    def update(updates: Updates, state: Any, params: Params = None) -> tuple:
        del params
        mu = update_moment(updates, state.mu, decay, 1)
        nu = update_moment_per_elem_norm(updates, state.nu, decay, 2)
        if bias_correction:
            count_inc = safe_increment(state.count)
            mu_hat, nu_hat = _bc(mu, decay, count_inc), _bc(nu, decay, count_inc)
        else:
            mu_hat, nu_hat = mu, nu
        if eps_in_sqrt:
            scaling = tree_util.tree_map(lambda m, n: lax.rsqrt(n - m * m + eps), mu_hat, nu_hat)
        else:
            scaling = tree_util.tree_map(lambda m, n: 1 / (jnp.sqrt(n - m * m) + eps), mu_hat, nu_hat)
        updates = tree_util.tree_map(lambda s, g: s * g, scaling, updates)
        if bias_correction:
            return updates, ScaleByRStdDevWithCountState(count_inc, mu, nu)
        return updates, ScaleByRStdDevState(mu, nu)

    return GradientTransformation(init, update)


class ScaleByRssState(NamedTuple):
    sum_of_squares: Any


def scale_by_rss(initial_accumulator_value: Any = 0.1, eps: Any = 1e-7) -> GradientTransformation:
    """Adagrad's rescaling: ``g / sqrt(sum of squared updates + eps)`` (0 where the sum is 0)."""

    def init(params: Params) -> ScaleByRssState:
        return ScaleByRssState(tree_full_like(params, initial_accumulator_value))

    def update(updates: Updates, state: ScaleByRssState, params: Params = None) -> tuple:
        del params
        sos = tree_util.tree_map(lambda g, t: g * g + t, updates, state.sum_of_squares)
        inv = tree_util.tree_map(lambda t: jnp.where(t > 0, lax.rsqrt(t + eps), 0.0), sos)
        updates = tree_util.tree_map(lambda s, g: s * g, inv, updates)
        return updates, ScaleByRssState(sos)

    return GradientTransformation(init, update)


def clip_by_global_norm(max_norm: Any) -> GradientTransformation:
    """Rescale all updates together so their :func:`global_norm` is at most ``max_norm``:
    ``g * max_norm / norm`` when ``norm >= max_norm``."""

    def update(updates: Updates, state: OptState, params: Params = None) -> tuple:
        del params
        g_norm = global_norm(updates)
        trigger = g_norm < max_norm

        def clip_fn(t: Any) -> Any:
            return jnp.where(trigger, t, (t / g_norm.astype(jnp.asarray(t).dtype)) * max_norm)

        return tree_util.tree_map(clip_fn, updates), state

    return GradientTransformation(init_empty_state, update)


def clip(max_delta: Any) -> GradientTransformation:
    """Clip each update elementwise to ``[-max_delta, max_delta]``."""

    def update(updates: Updates, state: OptState, params: Params = None) -> tuple:
        del params
        return tree_util.tree_map(lambda g: jnp.clip(g, -max_delta, max_delta), updates), state

    return GradientTransformation(init_empty_state, update)


class WeightDecayScheduleState(NamedTuple):
    count: Any


def add_decayed_weights(weight_decay: Any = 0.0, mask: Any = None) -> GradientTransformation:
    """``updates + weight_decay * params`` (``weight_decay`` may be a schedule). ``mask`` is a
    pytree of bools matching ``params`` (or a function of ``params`` returning one): leaves
    whose mask is False are left undecayed."""

    def init(params: Params) -> Any:
        del params
        if callable(weight_decay):
            return WeightDecayScheduleState(_count0())
        return EmptyState()

    def update(updates: Updates, state: Any, params: Params = None) -> tuple:
        if params is None:
            raise ValueError(NO_PARAMS_MSG)
        if callable(weight_decay):
            wd = weight_decay(state.count)
            new_state = WeightDecayScheduleState(safe_increment(state.count))
        else:
            wd = weight_decay
            new_state = state
            if isinstance(wd, (int, float)) and wd == 0.0:
                return updates, new_state
        if mask is None:
            out = tree_util.tree_map(lambda g, p: g + wd * p, updates, params)
        else:
            m = mask(params) if callable(mask) else mask
            out = tree_util.tree_map(lambda g, p, k: g + wd * p if k else g, updates, params, m)
        return out, new_state

    return GradientTransformation(init, update)
