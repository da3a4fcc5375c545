"""Eager ``fjax.random`` samplers on large shapes run as one compiled program.

Called eagerly, a sampler is a chain of ~150 primitives (threefry's rounds, the inverse-erf
polynomial, ...), each a numpy pass over the whole array with temporaries: a 5000x5000
``random.normal`` took 28 s. JAX's samplers are jitted functions, so an eager call compiles once
per shape and then runs fused. fjax does the same above ``MIN_SIZE`` samples: the sampler is
called through ``fjax.jit`` with the array arguments dynamic and everything else (shapes, dtypes,
Python scalars, modes) static; the fused kernels give the same bits as the op-by-op evaluation
(integer hashing, and the same correctly rounded float ops; tests/test_random_eager.py).

Small calls stay op-by-op (compiling would cost more than it saves), as do calls under
``jax_disable_jit`` and calls whose arguments are tracers (they are being traced anyway).
"""

from __future__ import annotations

import functools
import inspect
import math
from typing import Any, Callable

import numpy as np

from fjax import _tree_lifted as tree_util
from fjax import core
from fjax.config import config

#: samples from which an eager call is compiled: around here op-by-op evaluation takes 0.1-1.5 s
#: (uniform / normal), about what compiling a sampler costs the first time on this machine; the
#: kernels are then on disk (and shape-generic), so later calls and processes load them
MIN_SIZE = 1 << 20

_ARRAYS = (core.Array, np.ndarray)


def _size(bound: dict) -> int:
    shape = bound.get("shape")
    if shape is not None:
        try:
            return math.prod(int(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        except (TypeError, ValueError):
            return 0
    sizes = [np.size(x) for x in tree_util.tree_leaves(bound) if isinstance(x, _ARRAYS)]
    return max(sizes, default=0)


def _is_array(x: Any) -> bool:
    from fjax._prng import PRNGKeyArray  # noqa: PLC0415

    return isinstance(x, (*_ARRAYS, PRNGKeyArray))


@functools.lru_cache(maxsize=256)
def _jitted(fn: Callable, dyn_names: tuple, static_items: tuple) -> Callable:
    from fjax.jit import jit  # noqa: PLC0415 - fjax.jit imports the backends, which import random

    static = dict(static_items)

    def call(*dyn: Any) -> Any:
        return fn(**dict(zip(dyn_names, dyn)), **static)

    call.__name__ = call.__qualname__ = fn.__name__
    return jit(call)


def compiled_when_large(fn: Callable) -> Callable:
    """``fn`` (a sampler taking ``key`` first) that runs through ``fjax.jit`` when called eagerly
    on concrete arguments for at least ``MIN_SIZE`` samples."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def sampler(*args: Any, **kwargs: Any) -> Any:
        if config.jax_disable_jit:
            return fn(*args, **kwargs)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError:
            return fn(*args, **kwargs)  # let the sampler raise its own error
        bound.apply_defaults()
        arguments = bound.arguments
        leaves = tree_util.tree_leaves(dict(arguments))
        if any(isinstance(x, core.Tracer) for x in leaves) or _size(arguments) < MIN_SIZE:
            return fn(*args, **kwargs)
        dyn = {k: v for k, v in arguments.items() if _is_array(v)}
        static = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in arguments.items() if k not in dyn)
        try:
            jitted = _jitted(fn, tuple(dyn), static)
        except TypeError:  # an unhashable static argument
            return fn(*args, **kwargs)
        try:
            return jitted(*dyn.values())
        except core.ConcretizationTypeError:  # the sampler needs a value that jit makes abstract
            return fn(*args, **kwargs)

    return sampler
