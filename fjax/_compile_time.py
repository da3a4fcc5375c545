"""``fjax.ensure_compile_time_eval``: evaluate operations on concrete values eagerly while tracing."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from fjax import core

__all__ = ["ensure_compile_time_eval"]


@contextmanager
def ensure_compile_time_eval() -> Iterator[None]:
    """Inside the block, operations whose inputs are all concrete run eagerly, even under ``jit``.

    As ``jax.ensure_compile_time_eval``: while ``jit`` (or ``make_jaxpr``) traces a function,
    every primitive is normally staged into the jaxpr, even ``jnp.sin(3.0)``. Inside this block
    such operations are computed at trace time and give concrete ``fjax.Array`` values, which can
    steer Python control flow (``if z > 0:``) or serve as static shapes. Operations on traced
    values (the jitted function's arguments and what is computed from them) are still staged::

        @fjax.jit
        def f(x):
            with fjax.ensure_compile_time_eval():
                y = jnp.sin(3.0)  # a concrete Array
                z = jnp.sin(x)  # still traced
            ...

    Outside any trace the block changes nothing. Values closed over by a jitted function count
    as concrete too.
    """
    # the eval trace becomes the dynamic trace: ``bind`` with no tracer among its arguments runs
    # the primitive eagerly; a tracer among them still selects its own (staging) trace
    with core.new_dynamic(core._eval_main):
        yield
