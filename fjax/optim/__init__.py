"""``fjax.optim``: gradient transformations and optimizers in optax's shape.

An optimizer is a :class:`GradientTransformation` ``(init, update)``::

    opt = fjax.optim.adam(1e-3)
    state = opt.init(params)
    updates, state = opt.update(grads, state, params)
    params = fjax.optim.apply_updates(params, updates)

States are pytrees of NamedTuples, so the whole step can run under ``fjax.jit``. Learning
rates may be numbers or schedules (functions of the step count). The formulas (bias
correction, where ``eps`` goes, the Nesterov forms) are optax's.
"""

from fjax.optim._alias import adagrad, adam, adamw, nadam, rmsprop, sgd
from fjax.optim._base import (
    EmptyState,
    GradientTransformation,
    OptState,
    Params,
    Schedule,
    Updates,
    apply_updates,
    bias_correction,
    chain,
    global_norm,
    identity,
    init_empty_state,
    safe_increment,
)
from fjax.optim._schedule import (
    constant_schedule,
    cosine_decay_schedule,
    exponential_decay,
    join_schedules,
    linear_schedule,
    piecewise_constant_schedule,
    polynomial_schedule,
    warmup_constant_schedule,
    warmup_cosine_decay_schedule,
    warmup_exponential_decay_schedule,
)
from fjax.optim._transform import (
    AddDecayedWeightsState,
    ClipByGlobalNormState,
    ScaleByAdamState,
    ScaleByRmsState,
    ScaleByRmsWithCountState,
    ScaleByRssState,
    ScaleByRStdDevState,
    ScaleByRStdDevWithCountState,
    ScaleByScheduleState,
    ScaleState,
    TraceState,
    WeightDecayScheduleState,
    add_decayed_weights,
    clip,
    clip_by_global_norm,
    scale,
    scale_by_adam,
    scale_by_learning_rate,
    scale_by_rms,
    scale_by_rss,
    scale_by_schedule,
    scale_by_stddev,
    trace,
)

__all__ = [
    "AddDecayedWeightsState",
    "ClipByGlobalNormState",
    "EmptyState",
    "GradientTransformation",
    "OptState",
    "Params",
    "ScaleByAdamState",
    "ScaleByRStdDevState",
    "ScaleByRStdDevWithCountState",
    "ScaleByRmsState",
    "ScaleByRmsWithCountState",
    "ScaleByRssState",
    "ScaleByScheduleState",
    "ScaleState",
    "Schedule",
    "TraceState",
    "Updates",
    "WeightDecayScheduleState",
    "adagrad",
    "adam",
    "adamw",
    "add_decayed_weights",
    "apply_updates",
    "bias_correction",
    "chain",
    "clip",
    "clip_by_global_norm",
    "constant_schedule",
    "cosine_decay_schedule",
    "exponential_decay",
    "global_norm",
    "identity",
    "init_empty_state",
    "join_schedules",
    "linear_schedule",
    "nadam",
    "piecewise_constant_schedule",
    "polynomial_schedule",
    "rmsprop",
    "safe_increment",
    "scale",
    "scale_by_adam",
    "scale_by_learning_rate",
    "scale_by_rms",
    "scale_by_rss",
    "scale_by_schedule",
    "scale_by_stddev",
    "sgd",
    "trace",
    "warmup_constant_schedule",
    "warmup_cosine_decay_schedule",
    "warmup_exponential_decay_schedule",
]
