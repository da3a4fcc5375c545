"""Core types and tree helpers of :mod:`fjax.optim` (optax's ``GradientTransformation``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import fjax.numpy as jnp
from fjax import tree_util
from fjax.dtypes import finfo as _finfo
from fjax.dtypes import iinfo as _iinfo

Params = Any
Updates = Any
OptState = Any
Schedule = Callable[[Any], Any]
ScalarOrSchedule = Any

NO_PARAMS_MSG = (
    "You are using a transformation that requires the current value of parameters, but you are not "
    "passing `params` when calling `update`."
)


class GradientTransformation(NamedTuple):
    """A pair of pure functions: ``init(params) -> state`` and
    ``update(updates, state, params=None) -> (updates, state)``. States are pytrees, so a whole
    optimizer step can run inside ``fjax.jit``."""

    init: Callable[[Params], OptState]
    update: Callable[..., tuple[Updates, OptState]]


class EmptyState(NamedTuple):
    """The state of a stateless transformation."""


def init_empty_state(params: Params) -> EmptyState:
    del params
    return EmptyState()


def identity() -> GradientTransformation:
    """Leaves updates unchanged."""

    def update(updates: Updates, state: OptState, params: Params = None) -> tuple[Updates, OptState]:
        del params
        return updates, state

    return GradientTransformation(init_empty_state, update)


def chain(*transforms: GradientTransformation) -> GradientTransformation:
    """Apply ``transforms`` in order; the state is the tuple of their states."""

    def init(params: Params) -> tuple:
        return tuple(t.init(params) for t in transforms)

    def update(updates: Updates, state: tuple, params: Params = None) -> tuple[Updates, tuple]:
        if len(state) != len(transforms):
            raise ValueError(
                f"chain: expected a state with {len(transforms)} entries, one per transformation, got {len(state)}"
            )
        new_state = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params)
            new_state.append(s)
        return updates, tuple(new_state)

    return GradientTransformation(init, update)


def apply_updates(params: Params, updates: Updates) -> Params:
    """``params + updates`` leaf by leaf, keeping each parameter's dtype."""
    return tree_util.tree_map(
        lambda p, u: jnp.asarray(p + u).astype(jnp.asarray(p).dtype),
        params,
        updates,
    )


def global_norm(updates: Updates) -> Any:
    """The l2 norm of all leaves taken together: ``sqrt(sum_leaves sum(|x|^2))``."""
    leaves = tree_util.tree_leaves(updates)
    if not leaves:
        return jnp.zeros((), jnp.float32)
    total = None
    for x in leaves:
        x = jnp.asarray(x)
        s = jnp.sum(jnp.real(x * jnp.conj(x))) if jnp.issubdtype(x.dtype, jnp.complexfloating) else jnp.sum(x * x)
        total = s if total is None else total + s
    return jnp.sqrt(total)


def tree_zeros_like(tree: Any, dtype: Any = None) -> Any:
    return tree_util.tree_map(lambda x: jnp.zeros(jnp.shape(x), dtype or jnp.asarray(x).dtype), tree)


def tree_full_like(tree: Any, value: Any, dtype: Any = None) -> Any:
    return tree_util.tree_map(lambda x: jnp.full(jnp.shape(x), value, dtype or jnp.asarray(x).dtype), tree)


def tree_cast(tree: Any, dtype: Any) -> Any:
    if dtype is None:
        return tree
    return tree_util.tree_map(lambda x: jnp.asarray(x).astype(dtype), tree)


def tree_cast_like(tree: Any, like: Any) -> Any:
    return tree_util.tree_map(lambda x, y: jnp.asarray(x).astype(jnp.asarray(y).dtype), tree, like)


def update_moment(updates: Updates, moments: Any, decay: Any, order: int) -> Any:
    """``(1 - decay) * g**order + decay * moment``, leaf by leaf."""
    return tree_util.tree_map(lambda g, t: (1 - decay) * (g**order) + decay * t, updates, moments)


def update_moment_per_elem_norm(updates: Updates, moments: Any, decay: Any, order: int) -> Any:
    """``(1 - decay) * |g|**order + decay * moment`` (``|g|^2`` as ``g * conj(g)`` for complex)."""

    def norm(g: Any) -> Any:
        g = jnp.asarray(g)
        if jnp.issubdtype(g.dtype, jnp.complexfloating):
            return jnp.real(g * jnp.conj(g)) if order == 2 else jnp.abs(g) ** order
        return g * g if order == 2 else jnp.abs(g) ** order

    return tree_util.tree_map(lambda g, t: (1 - decay) * norm(g) + decay * t, updates, moments)


def bias_correction(moment: Any, decay: Any, count: Any) -> Any:
    """``moment / (1 - decay**count)``."""
    correction = jnp.asarray(1 - decay ** jnp.asarray(count))
    return tree_util.tree_map(lambda t: t / correction.astype(jnp.asarray(t).dtype), moment)


def safe_increment(count: Any) -> Any:
    """``count + 1``, saturating at the dtype's maximum instead of overflowing."""
    count = jnp.asarray(count)
    if jnp.issubdtype(count.dtype, jnp.integer):
        max_value = _iinfo(np.dtype(count.dtype)).max  # (ml_dtypes': also int4/int2/int1)
    else:
        max_value = _finfo(np.dtype(count.dtype)).max
    max_value = np.array(max_value, np.dtype(count.dtype))
    one = np.array(1, np.dtype(count.dtype))
    return jnp.where(count < max_value, count + one, max_value)
