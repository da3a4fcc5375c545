"""``jax.example_libraries.optimizers``: optimizers as ``(init_fun, update_fun, get_params)`` triples.

``opt_init, opt_update, get_params = adam(1e-3)``; ``state = opt_init(params)``;
``state = opt_update(step, grads, state)``; ``params = get_params(state)``. Parameters are any
pytree; the state is an ``OptimizerState`` pytree (so it passes through ``jit``). Step sizes are
floats or schedules (functions of the step number).
"""

from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Callable
from typing import Any, NamedTuple

import fjax.numpy as jnp
from fjax import tree_util as tu
from fjax.example_libraries._safe_util import safe_map, safe_zip, unzip2  # noqa: F401 - re-exported as in JAX

# as in JAX's module: map and zip are the length-checked versions (returning lists), also used
# below; Array is the annotation alias JAX uses here
map = safe_map  # noqa: A001
zip = safe_zip  # noqa: A001
partial = functools.partial
Array = Any

__all__ = [
    "InitFn",
    "JoinPoint",
    "Optimizer",
    "OptimizerState",
    "Params",
    "ParamsFn",
    "Schedule",
    "State",
    "Step",
    "UpdateFn",
    "Updates",
    "adagrad",
    "adam",
    "adamax",
    "clip_grads",
    "constant",
    "exponential_decay",
    "inverse_time_decay",
    "l2_norm",
    "make_schedule",
    "momentum",
    "nesterov",
    "optimizer",
    "pack_optimizer_state",
    "piecewise_constant",
    "polynomial_decay",
    "rmsprop",
    "rmsprop_momentum",
    "sgd",
    "sm3",
    "unpack_optimizer_state",
]

Step = int
Schedule = Callable[[Step], float]
Params = Any
Updates = Params
State = Any
InitFn = Callable[[Params], Any]
UpdateFn = Callable[[Step, Updates, Any], Any]
ParamsFn = Callable[[Any], Params]

OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
tu.register_pytree_node(
    OptimizerState,
    lambda xs: ((xs.packed_state,), (xs.tree_def, xs.subtree_defs)),
    lambda data, xs: OptimizerState(xs[0], data[0], data[1]),
)


class Optimizer(NamedTuple):
    """The ``(init_fn, update_fn, params_fn)`` triple an optimizer constructor returns."""

    init_fn: InitFn
    update_fn: UpdateFn
    params_fn: ParamsFn


def optimizer(opt_maker: Callable[..., tuple[Callable, Callable, Callable]]) -> Callable[..., Optimizer]:
    """Decorator: turn a maker of per-array ``(init, update, get_params)`` into one over pytrees."""

    @functools.wraps(opt_maker)
    def tree_opt_maker(*args: Any, **kwargs: Any) -> Optimizer:
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree: Any) -> OptimizerState:
            x0_flat, tree = tu.tree_flatten(x0_tree)
            initial_states = [init(x0) for x0 in x0_flat]
            states_flat, subtrees = zip(*map(tu.tree_flatten, initial_states)) if initial_states else ((), ())
            return OptimizerState(list(states_flat), tree, list(subtrees))

        @functools.wraps(update)
        def tree_update(i: Step, grad_tree: Any, opt_state: OptimizerState) -> OptimizerState:
            states_flat, tree, subtrees = opt_state
            grad_flat, tree2 = tu.tree_flatten(grad_tree)
            if tree2 != tree:
                raise TypeError(
                    "optimizer update function was passed a gradient tree that did not match the parameter "
                    f"tree structure with which it was initialized: parameter tree {tree} and grad tree {tree2}."
                )
            states = [tu.tree_unflatten(st, s) for st, s in zip(subtrees, states_flat)]
            new_states = [update(i, g, s) for g, s in zip(grad_flat, states)]
            new_flat, subtrees2 = zip(*map(tu.tree_flatten, new_states)) if new_states else ((), ())
            for sub, sub2 in zip(subtrees, subtrees2):
                if sub2 != sub:
                    raise TypeError(f"optimizer update function produced an output structure {sub2} != {sub}")
            return OptimizerState(list(new_flat), tree, list(subtrees))

        @functools.wraps(get_params)
        def tree_get_params(opt_state: OptimizerState) -> Any:
            states_flat, tree, subtrees = opt_state
            states = [tu.tree_unflatten(st, s) for st, s in zip(subtrees, states_flat)]
            return tu.tree_unflatten(tree, [get_params(s) for s in states])

        return Optimizer(tree_init, tree_update, tree_get_params)

    return tree_opt_maker


# ---------------------------------------------------------------------------------------------
# optimizers


@optimizer
def sgd(step_size: float | Schedule) -> tuple[Callable, Callable, Callable]:
    """Stochastic gradient descent: ``x - step_size(i) * g``."""
    step_size = make_schedule(step_size)
    return (lambda x0: x0), (lambda i, g, x: x - step_size(i) * g), (lambda x: x)


@optimizer
def momentum(step_size: float | Schedule, mass: float) -> tuple[Callable, Callable, Callable]:
    """Gradient descent with momentum ``mass``."""
    step_size = make_schedule(step_size)

    def init(x0: Any) -> tuple:
        return x0, jnp.zeros_like(x0)

    def update(i: Step, g: Any, state: tuple) -> tuple:
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity

    return init, update, lambda state: state[0]


@optimizer
def nesterov(step_size: float | Schedule, mass: float) -> tuple[Callable, Callable, Callable]:
    """Nesterov's accelerated gradient."""
    step_size = make_schedule(step_size)

    def init(x0: Any) -> tuple:
        return x0, jnp.zeros_like(x0)

    def update(i: Step, g: Any, state: tuple) -> tuple:
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity

    return init, update, lambda state: state[0]


@optimizer
def adagrad(step_size: float | Schedule, momentum: float = 0.9) -> tuple[Callable, Callable, Callable]:
    """Adagrad with momentum."""
    step_size = make_schedule(step_size)

    def init(x0: Any) -> tuple:
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i: Step, g: Any, state: tuple) -> tuple:
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        g_sq_inv_sqrt = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * (g * g_sq_inv_sqrt) + momentum * m
        return x - step_size(i) * m, g_sq, m

    return init, update, lambda state: state[0]


@optimizer
def rmsprop(step_size: float | Schedule, gamma: float = 0.9, eps: float = 1e-8) -> tuple[Callable, Callable, Callable]:
    """RMSProp."""
    step_size = make_schedule(step_size)

    def init(x0: Any) -> tuple:
        return x0, jnp.zeros_like(x0)

    def update(i: Step, g: Any, state: tuple) -> tuple:
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / jnp.sqrt(avg_sq_grad + eps), avg_sq_grad

    return init, update, lambda state: state[0]


@optimizer
def rmsprop_momentum(
    step_size: float | Schedule, gamma: float = 0.9, eps: float = 1e-8, momentum: float = 0.9
) -> tuple[Callable, Callable, Callable]:
    """RMSProp with momentum."""
    step_size = make_schedule(step_size)

    def init(x0: Any) -> tuple:
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i: Step, g: Any, state: tuple) -> tuple:
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom

    return init, update, lambda state: state[0]


@optimizer
def adam(
    step_size: float | Schedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8
) -> tuple[Callable, Callable, Callable]:
    """Adam (bias-corrected first and second moment estimates)."""
    step_size = make_schedule(step_size)

    def init(x0: Any) -> tuple:
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i: Step, g: Any, state: tuple) -> tuple:
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        i = jnp.asarray(i, jnp.asarray(m).dtype)
        mhat = m / (1 - b1 ** (i + 1))
        vhat = v / (1 - b2 ** (i + 1))
        return x - step_size(i) * mhat / (jnp.sqrt(vhat) + eps), m, v

    return init, update, lambda state: state[0]


@optimizer
def adamax(
    step_size: float | Schedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8
) -> tuple[Callable, Callable, Callable]:
    """AdaMax (Adam with the infinity norm)."""
    step_size = make_schedule(step_size)

    def init(x0: Any) -> tuple:
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i: Step, g: Any, state: tuple) -> tuple:
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        i = jnp.asarray(i, jnp.asarray(m).dtype)
        return x - (step_size(i) / (1 - b1 ** (i + 1))) * m / (u + eps), m, u

    return init, update, lambda state: state[0]


@optimizer
def sm3(step_size: float | Schedule, momentum: float = 0.9) -> tuple[Callable, Callable, Callable]:
    """SM3 (memory-efficient adaptive optimization; one accumulator per axis)."""
    step_size = make_schedule(step_size)

    def splice(seq: list, i: int, x: Any) -> list:
        lst = list(seq)
        lst[i : i + 1] = x
        return lst

    def broadcast_into(ndim: int, x: Any, axis: int) -> Any:
        idx = splice([None] * ndim, axis, [slice(None)])
        return x[tuple(idx)]

    def init(x0: Any) -> tuple:
        x_shape = x0.shape
        x0 = jnp.atleast_1d(x0)
        vs = [jnp.zeros(sz, dtype=x0.dtype) for sz in x0.shape]
        return x0, jnp.zeros_like(x0), vs, x_shape

    def update(i: Step, g: Any, state: tuple) -> tuple:
        x, m, vs, x_shape = state
        vs = [broadcast_into(g.ndim, v, k) for k, v in enumerate(vs)]
        accum = functools.reduce(jnp.minimum, vs) + jnp.square(g)
        accum_inv_sqrt = jnp.where(accum > 0, 1.0 / jnp.sqrt(accum), 0)
        m = (1.0 - momentum) * (g * accum_inv_sqrt) + momentum * m
        x = x - step_size(i) * m
        vs = [accum.max(splice(range(x.ndim), j, [])) for j in range(x.ndim)]
        return x, m, vs, x_shape

    return init, update, lambda state: state[0].reshape(state[3])


# ---------------------------------------------------------------------------------------------
# schedules


def constant(step_size: float) -> Schedule:
    """The schedule that is ``step_size`` at every step."""

    def schedule(i: Step) -> float:
        return step_size

    return schedule


def exponential_decay(step_size: float, decay_steps: int, decay_rate: float) -> Schedule:
    """``step_size * decay_rate ** (i / decay_steps)``."""

    def schedule(i: Step) -> Any:
        return step_size * decay_rate ** (i / decay_steps)

    return schedule


def inverse_time_decay(step_size: float, decay_steps: int, decay_rate: float, staircase: bool = False) -> Schedule:
    """``step_size / (1 + decay_rate * i / decay_steps)`` (floored ratio with ``staircase``)."""
    if staircase:

        def schedule(i: Step) -> Any:
            return step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    else:

        def schedule(i: Step) -> Any:
            return step_size / (1 + decay_rate * i / decay_steps)

    return schedule


def polynomial_decay(step_size: float, decay_steps: int, final_step_size: float, power: float = 1.0) -> Schedule:
    """From ``step_size`` to ``final_step_size`` over ``decay_steps`` with ``(1 - t) ** power``."""

    def schedule(step_num: Step) -> Any:
        step_num = jnp.minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size

    return schedule


def piecewise_constant(boundaries: Any, values: Any) -> Schedule:
    """``values[k]`` for steps between ``boundaries[k-1]`` and ``boundaries[k]``."""
    boundaries = jnp.array(boundaries)
    values = jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")

    def schedule(i: Step) -> Any:
        return values[jnp.sum(i > boundaries)]

    return schedule


def make_schedule(scalar_or_schedule: float | Schedule) -> Schedule:
    """A schedule from a constant step size, or the schedule itself."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if jnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(type(scalar_or_schedule))


# ---------------------------------------------------------------------------------------------
# utilities


def l2_norm(tree: Any) -> Any:
    """The L2 norm of a pytree of arrays (all leaves as one vector)."""
    leaves = tu.tree_leaves(tree)
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree: Any, max_norm: float) -> Any:
    """Scale ``grad_tree`` down so its ``l2_norm`` is at most ``max_norm``."""
    norm = l2_norm(grad_tree)
    normalize = lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm))  # noqa: E731
    return tu.tree_map(normalize, grad_tree)


class JoinPoint:
    """Marks where ``pack_optimizer_state`` flattened a subtree (kept in the packed pytree)."""

    def __init__(self, subtree: Any) -> None:
        self.subtree = subtree

    def __iter__(self) -> Any:
        yield self.subtree


def unpack_optimizer_state(opt_state: OptimizerState) -> Any:
    """An ``OptimizerState`` as a pytree of ``JoinPoint``s (for saving)."""
    states_flat, tree_def, subtree_defs = opt_state
    subtrees = map(tu.tree_unflatten, subtree_defs, states_flat)
    sentinels = [JoinPoint(subtree) for subtree in subtrees]
    return tu.tree_unflatten(tree_def, sentinels)


def pack_optimizer_state(marked_pytree: Any) -> OptimizerState:
    """Inverse of ``unpack_optimizer_state``."""
    sentinels, tree_def = tu.tree_flatten(marked_pytree)
    if not all(isinstance(s, JoinPoint) for s in sentinels):
        raise TypeError("pack_optimizer_state expects a pytree of JoinPoints")
    subtrees = [s.subtree for s in sentinels]
    states_flat, subtree_defs = zip(*map(tu.tree_flatten, subtrees)) if subtrees else ((), ())
    return OptimizerState(list(states_flat), tree_def, list(subtree_defs))
