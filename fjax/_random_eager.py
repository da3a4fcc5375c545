"""Eager ``fjax.random`` samplers on moderate and large shapes run as one compiled program.

Called eagerly, a sampler is a chain of ~150 primitives (threefry's rounds, the inverse-erf
polynomial, ...), each a numpy pass over the whole array with temporaries: a 5000x5000
``random.normal`` took 28 s. JAX's samplers are jitted functions, so an eager call compiles once
per shape and then runs fused. fjax does the same: the sampler is called through ``fjax.jit`` with
the array arguments dynamic and everything else (shapes, dtypes, Python scalars, modes) static;
the fused kernels give the same bits as the op-by-op evaluation (integer hashing, and the same
correctly rounded float ops; tests/test_random_eager.py).

Compiling a sampler's program cold takes 1-5 s, so no call waits for it below ``MIN_SIZE``:

- at least ``MIN_SIZE`` samples: the call goes through ``fjax.jit`` (compiling on the first call,
  or as jit's own tiering decides);
- ``TIERED_MIN_SIZE`` up to ``MIN_SIZE`` (with ``fjax_tiered_compile`` on, the default "auto"):
  the compiled program when this process has it; otherwise its kernels are loaded now when they
  are on disk and the numba backend is already loaded in this process (10-50 ms; cold, importing
  numba and the backend costs 0.3-0.6 s, more than the numpy evaluation), and else the call is
  evaluated op by op in numpy while one background thread compiles (or loads) the program for the
  next calls. Calls while it compiles keep using numpy: they never wait. With
  ``fjax_tiered_compile`` off these calls stay op-by-op, as before;
- fewer samples: op by op on a call signature's first call (the trace alone, ~6 ms, would cost
  about as much as the call); from its second call on (a loop drawing the same shapes), as the
  moderate sizes above: op by op until the background compile is done, then compiled (a
  ``random.normal(key, (3,))``: ~3 ms op by op, ~45 us compiled; JAX ~30 us).

Calls under ``jax_disable_jit``, with tracer arguments (they are being traced anyway) or with
arrays placed on a device other than the host stay op-by-op too.
"""

from __future__ import annotations

import functools
import inspect
import math
import sys
import threading
import weakref
from typing import Any, Callable

import numpy as np

from fjax import _random_kernels as kernels
from fjax import _tree_lifted as tree_util
from fjax import core
from fjax.config import config

#: samples from which an eager call is compiled: around here op-by-op evaluation takes 0.1-1.5 s
#: (uniform / normal), about what compiling a sampler costs the first time on this machine; the
#: kernels are then on disk (and shape-generic), so later calls and processes load them
MIN_SIZE = 1 << 20

#: samples from which an eager call runs compiled once compiled in the background (tiered). At
#: 2**14 samples the op-by-op evaluation of normal / uniform / categorical takes 13 / 2.6 / 12 ms,
#: the compiled program 0.08 / 0.03 / 0.09 ms, and tracing it once ~6 ms (bench/bench_random_eager.py)
TIERED_MIN_SIZE = 1 << 14

# a program whose background compile failed is queued again on later calls, this many times in all
_MAX_ATTEMPTS = 3

#: what the tiered calls did: ran the compiled program, loaded it from disk first, evaluated op by
#: op (while it compiles, or after it failed), queued a background compile
stats = {"compiled_calls": 0, "loaded": 0, "numpy_calls": 0, "queued": 0}
_local = threading.local()  # .depth: inside the op-by-op evaluation of a tiered call
_attempts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # ClosedJaxpr -> failed compiles

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


def _compiled(closed: core.ClosedJaxpr, dispatch: Any) -> bool:
    """Whether this process holds ``closed`` compiled (jit's cache entry: current, built, no failure)."""
    entry = (closed.compiled or {}).get(dispatch.DEFAULT_BACKEND)
    return entry is not None and entry[0] == dispatch._generation[0] and entry[1] is not None and entry[2] == 0


def _compile_job(closed: core.ClosedJaxpr, dispatch: Any) -> Callable[[], None]:
    def job() -> None:
        try:
            dispatch.compile_jaxpr(closed, dispatch.DEFAULT_BACKEND, tiered=False)
        finally:
            if not _compiled(closed, dispatch):  # (dispatch, or the compile thread, logged why)
                _attempts[closed] = _attempts.get(closed, 0) + 1

    return job


def _tiered_call(
    jitted: Callable,
    dyn: list,
    mode: str,
    fallback: Callable[[], Any],
    closed: core.ClosedJaxpr | None = None,
    counters: dict | None = None,
    tag: str = "sampler",
) -> Any:
    """A call of ``TIERED_MIN_SIZE`` to ``MIN_SIZE`` samples with tiering on: compiled when it can
    be without compiling now, else ``fallback()`` (op by op) while it compiles in the background.
    (Also fjax/_eager_compile.py's, for composites: ``closed`` traced already, its own ``counters``.)"""
    from fjax.backends import dispatch, tiering  # noqa: PLC0415

    count = stats if counters is None else counters
    if closed is None:
        closed = jitted.lower(*dyn).jaxpr  # traced once per signature, then jit's cache
    if _compiled(closed, dispatch):
        count["compiled_calls"] += 1
        return jitted(*dyn)
    key = (tag, id(closed))  # (the queued job holds ``closed``: the id stays its own)
    queue = not kernels.is_pending(key) and _attempts.get(closed, 0) < _MAX_ATTEMPTS
    if (
        queue
        and mode == "auto"
        and dispatch._stats["compiles"]  # the numba backend is loaded: loading from disk is cheap
        and tiering.compiled_before(closed, dispatch.DEFAULT_BACKEND)
    ):
        try:
            _compile_job(closed, dispatch)()
        except Exception:  # noqa: BLE001 - counted by the job; this call goes op by op
            kernels.log.warning("fjax: loading a compiled %s failed", tag, exc_info=True)
        if _compiled(closed, dispatch):
            count["loaded"] += 1
            count["compiled_calls"] += 1
            return jitted(*dyn)
        queue = False  # (it failed: counted; later calls queue it again)
    with kernels.compile_after():
        _local.depth = getattr(_local, "depth", 0) + 1  # samplers it calls stay op by op too
        try:
            out = fallback()
        finally:
            _local.depth -= 1
        count["numpy_calls"] += 1
        # queued once the op-by-op call is done, so that it does not share the GIL with the compile
        if queue and kernels.in_background(key, _compile_job(closed, dispatch)):
            count["queued"] += 1
    return out


def wait_compiled(timeout: float | None = None) -> bool:
    """Block until the background compiles of eager samplers (and of fjax/_random_kernels.py) are
    done; False on timeout."""
    return kernels.wait_background(timeout)


def compiled_when_large(fn: Callable) -> Callable:
    """``fn`` (a sampler taking ``key`` first) that runs through ``fjax.jit`` when called eagerly
    on concrete arguments for at least ``MIN_SIZE`` samples, and from ``TIERED_MIN_SIZE`` samples
    once compiled in the background (see the module docstring)."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def sampler(*args: Any, **kwargs: Any) -> Any:
        if config.jax_disable_jit or getattr(_local, "depth", 0):
            return fn(*args, **kwargs)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError:
            return fn(*args, **kwargs)  # let the sampler raise its own error
        bound.apply_defaults()
        arguments = bound.arguments
        leaves = tree_util.tree_leaves(dict(arguments))
        if any(isinstance(x, core.Tracer) for x in leaves):
            return fn(*args, **kwargs)
        size = _size(arguments)
        if size >= MIN_SIZE:
            mode = "large"
        elif size >= TIERED_MIN_SIZE or _repeated(fn, arguments):
            mode = _tier_mode(leaves)
        else:
            mode = "off"
        if mode == "off":
            return fn(*args, **kwargs)
        dyn = {k: v for k, v in arguments.items() if _is_array(v)}
        static = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in arguments.items() if k not in dyn)
        try:
            jitted = _jitted(fn, tuple(dyn), static)
        except TypeError:  # an unhashable static argument
            return fn(*args, **kwargs)
        try:
            if mode == "large":
                return jitted(*dyn.values())
            return _tiered_call(jitted, list(dyn.values()), mode, lambda: fn(*args, **kwargs))
        except core.ConcretizationTypeError:  # the sampler needs a value that jit makes abstract
            return fn(*args, **kwargs)

    return sampler


#: call signatures of small eager sampler calls seen (a bounded set: cleared when full)
_seen: dict = {}
_SEEN_MAX = 1024


def _repeated(fn: Callable, arguments: dict) -> bool:
    """Whether a call of ``fn`` with these shapes, dtypes and static values was made before (the
    first call of a signature stays op by op; the first repeated one starts its compile)."""
    try:
        key = (
            fn,
            tuple(
                (k, (np.shape(v), str(getattr(v, "dtype", ""))) if _is_array(v) else v) for k, v in arguments.items()
            ),
        )
        hash(key)
    except (TypeError, ValueError):
        return False
    if key in _seen:
        return True
    if len(_seen) >= _SEEN_MAX:
        _seen.clear()
    _seen[key] = True
    return False


def _tier_mode(leaves: list) -> str:
    """ "auto" / "on" when calls below ``MIN_SIZE`` may be tiered here, else "off": tiering is off,
    jit evaluates eagerly anyway (the "interpret" backend), or the call would run on a device other
    than the host's default one (an argument committed elsewhere, or another default device: jit
    would run the program there; op by op keeps to the old behaviour). Having placed arrays once
    (``device_put``) does not by itself turn tiering off."""
    from fjax.backends import tiering  # noqa: PLC0415

    jit_mod = sys.modules.get("fjax.jit")  # the module (``fjax.jit`` is the function)
    if getattr(jit_mod, "compile_hook", None) is None:
        return "off"
    if core.placement_hook is not None:
        from fjax import _placement  # noqa: PLC0415

        if _placement.target_device(leaves, "random") is not None:
            return "off"
    return tiering.mode()
