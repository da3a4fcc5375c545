"""``jax._src.core``: JAX's core module, which libraries import for ``ShapedArray`` and friends
(flax's fp8 layers). fjax's is ``fjax.core`` (``jax.core``); every name read here is read there,
besides ``trace_state_clean`` (numpyro asks it whether it runs under a transform)."""

from typing import Any

from fjax.core import *  # noqa: F403


def trace_state_clean() -> bool:
    """True when this thread runs no transform (no ``jit``/``grad``/``vmap``/... is tracing):
    JAX's "the current trace is the eval trace"."""
    import fjax.core

    state = fjax.core._state
    return len(state.stack) == 1 and fjax.core.is_eager()


def __getattr__(name: str) -> Any:
    import fjax.core

    try:
        return getattr(fjax.core, name)
    except AttributeError:
        raise AttributeError(f"module 'jax._src.core' has no attribute {name!r} (fjax.core has no {name!r})") from None
