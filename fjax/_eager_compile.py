"""Eager calls of composite ``fjax.numpy`` / ``fjax.nn`` functions run compiled once a call signature repeats.

Called eagerly, a composite such as ``jnp.var`` is evaluated primitive by primitive in numpy,
~5-9 us a primitive; JAX's own functions are ``jax.jit``-decorated, so an eager call runs one
compiled program. ``compiled_on_repeat(fn)`` gives ``fn`` the scheme fjax/_random_eager.py uses for
small samplers:

- the first call of a call signature (the array arguments' shapes, dtypes and weak types, every
  other argument's value, the trace context: ``jax_enable_x64``, promotion modes, ...) runs op by
  op, as before: a one-off shape costs nothing extra;
- its second call traces ``fn`` (through ``fjax.jit``, array arguments dynamic, everything else
  static) and queues the program's compile on the background compile thread, then runs op by op;
  calls keep running op by op until it is compiled (they never wait), then run the compiled
  program (or load it from disk at once when this machine compiled it before and numba is loaded).

Calls stay op by op (exactly ``fn(*args, **kwargs)``) under any trace (jit, make_jaxpr, grad,
vmap, ...: the trace state is checked, not only the arguments), under ``jax_disable_jit``,
``jax_debug_nans`` or ``jax_debug_infs``, with
``fjax_tiered_compile`` off, with arguments that are tracers, device-placed or committed arrays,
or values of other kinds (dicts, objects), and for signatures whose trace failed (a function
that needs concrete values raises ``ConcretizationTypeError`` under jit: remembered, not retried).
Errors are the unwrapped function's: a call whose op-by-op evaluation raises is not recorded.
"""

from __future__ import annotations

import functools
import inspect
import math
import sys
import threading
from typing import Any, Callable

import numpy as np

from fjax import _debug_nans, core, dtypes
from fjax import _random_eager as _re
from fjax._tree_lifted import tree_unflatten
from fjax.config import config

#: what wrapped calls did (as ``fjax._random_eager.stats``): ran the compiled program, loaded it
#: from disk first, ran op by op (first call, while compiling, after a failed compile), queued a
#: background compile; ``first_calls`` a signature's first (op-by-op) calls, ``plain`` signatures found
#: untraceable
stats = {"first_calls": 0, "compiled_calls": 0, "loaded": 0, "numpy_calls": 0, "queued": 0, "plain": 0}

#: signatures remembered per wrapped function (the dict is cleared when full)
MAX_SIGNATURES = 256

_state = core._state
_eval_main = core._eval_main
_local = _re._local  # .depth: inside an op-by-op evaluation made by a tiered call (nested calls stay plain)
_Array = core.Array


def _depth() -> int:
    return getattr(_local, "depth", 0)


_PLAIN = object()  # a signature that is never compiled
_ARR, _NP = object(), object()  # tags of array leaves in a signature
_STATIC = frozenset({int, bool, str, type(None), complex, type(Ellipsis)})


class _NotHandled(Exception):
    """An argument of a kind the wrapper does not key on: the call goes op by op."""


def _enc(x: Any, dyn: list) -> Any:
    """``x``'s part of the call signature; its arrays are appended to ``dyn`` (the program's inputs)."""
    t = type(x)
    if t is _Array:
        v = x._value
        dyn.append(x)
        return (_ARR, v.shape, v.dtype, x.weak_type)
    if t in _STATIC:
        return (t, x) if t is not complex else (t, x, repr(x))  # (repr: the signs of zeros)
    if t is float:  # (-0.0 == 0.0, but a different constant; nan never equals itself: never repeats)
        return (t, x, math.copysign(1.0, x))
    if t is tuple or t is list:
        return (t, tuple([_enc(c, dyn) for c in x]))
    if t is np.ndarray:
        dyn.append(x)
        return (_NP, x.shape, x.dtype)
    if isinstance(x, np.generic) and x.dtype.kind in "biufc":
        return (t, x.tobytes())  # static: its exact bits (and its type, which sets the dtype)
    if isinstance(x, (type, np.dtype)):
        return (t, x)
    raise _NotHandled


def _rebuild(e: tuple, it: Any) -> Any:
    tag = e[0]
    if tag is _ARR or tag is _NP:
        return next(it)
    if tag is tuple:
        return tuple([_rebuild(c, it) for c in e[1]])
    if tag is list:
        return [_rebuild(c, it) for c in e[1]]
    if isinstance(tag, type) and issubclass(tag, np.generic):
        return np.frombuffer(e[1], dtype=tag)[0]
    return e[1]


class _Entry:
    """A repeated signature: its jitted program, whether this process holds it compiled, and what
    ``_run`` needs to run it without jit's wrapper (set once compiled; None: through the wrapper)."""

    __slots__ = ("closed", "direct", "jitted", "ready")

    def __init__(self, jitted: Any, closed: core.ClosedJaxpr) -> None:
        self.jitted = jitted
        self.closed = closed
        self.ready = False
        self.direct: tuple | None = None

    def set_ready(self, dyn: list) -> None:
        """Compiled: look up jit's cache entry once (consts, output tree) for ``_run``."""
        try:
            (closed, consts, out_tree), _ = self.jitted._get(tuple(dyn), {})
            jit_mod = sys.modules["fjax.jit"]
            consts = [core.to_array(c)._value for c in consts]
            self.direct = (jit_mod, closed, consts, out_tree, closed.out_avals, self.jitted.name)
        except Exception:  # noqa: BLE001 - (jit's internals changed?) calls go through jit's wrapper
            self.direct = None
        self.ready = True


def _run(direct: tuple, dyn: list) -> Any:
    """The compiled program on ``dyn`` as jit's eager fast path runs it (no placement hook, no
    transform active: checked by the caller), less re-flattening and re-keying the arguments."""
    jit_mod, closed, consts, out_tree, out_avals, name = direct
    vals = [x._value if type(x) is _Array else core.to_array(x, name)._value for x in dyn]
    outs = jit_mod._jit_impl(*consts, *vals, jaxpr=closed, name=name)
    res = []
    for o, a in zip(outs, out_avals):
        if type(o) is not np.ndarray or o.dtype != a.dtype:
            o = np.asarray(o, dtype=a.dtype)
        res.append(_Array(o, a.weak_type))
    return tree_unflatten(out_tree, res)


def _make_entry(fn: Callable, key: tuple, dyn: list) -> Any:
    """Trace ``fn`` for this signature (in the calling thread: the trace context is per thread);
    ``_PLAIN`` when it cannot be traced (needs concrete values, returns non-arrays, ...)."""
    from fjax.jit import jit  # noqa: PLC0415 - fjax.jit imports the backends

    pos, kw = key[0], key[1]

    def call(*leaves: Any) -> Any:
        it = iter(leaves)
        args = [_rebuild(e, it) for e in pos]
        kwargs = {k: _rebuild(e, it) for k, e in kw} if kw else {}
        return fn(*args, **kwargs)

    call.__name__ = call.__qualname__ = getattr(fn, "__name__", "composite")
    jitted = jit(call)
    try:
        closed = jitted.lower(*dyn).jaxpr
    except Exception:  # noqa: BLE001 - any failure to trace: this signature stays op by op
        stats["plain"] += 1
        return _PLAIN
    return _Entry(jitted, closed)


def _tiered(entry: _Entry, dyn: list, mode: str, fallback: Callable[[], Any]) -> Any:
    """The compiled program when it is (or can be loaded now), else ``fallback()`` op by op while
    one background thread compiles it (fjax/_random_eager.py's ``_tiered_call``)."""
    from fjax.backends import dispatch  # noqa: PLC0415

    closed = entry.closed
    if _re._compiled(closed, dispatch):
        entry.set_ready(dyn)
        stats["compiled_calls"] += 1
        return entry.jitted(*dyn)
    return _re._tiered_call(entry.jitted, dyn, mode, fallback, closed=closed, counters=stats, tag="composite")


def _dtype_position(fn: Callable) -> int | None:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    for i, p in enumerate(params):
        if p.name == "dtype":
            return i if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) else None
    return None


def _warn_dtype(d: Any, names: tuple) -> None:
    """The "Explicitly requested dtype ... truncated" warning (or error) that ``fn`` gives for a
    64-bit ``dtype=`` with x64 off, at the user's line: ``fn``'s own request is made from the
    wrapper's frame, which fjax/dtypes.py takes for an internal request and does not warn about."""
    for name in names:
        try:
            dtypes.canonicalize_user_dtype(d, name, 3)  # (3: past this function and the wrapper)
        except ValueError as e:
            if str(e).startswith("Explicitly requested dtype"):  # jax_explicit_x64_dtypes="error"
                raise
            return  # (not a dtype: ``fn`` raises its own error)
        except Exception:  # noqa: BLE001
            return


def compiled_on_repeat(fn: Callable, dtype_warns: tuple = ()) -> Callable:
    """``fn`` (a composite of fjax primitives) that, called eagerly, runs one compiled program from
    the second call of a call signature on, once compiled in the background (module docstring).
    ``dtype_warns``: the names under which ``fn`` warns about a 64-bit ``dtype=`` with x64 off
    (``_warn_dtype``)."""
    entries: dict = {}
    lock = threading.Lock()
    dt_pos = _dtype_position(fn) if dtype_warns else None

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if dtype_warns and not config.jax_enable_x64:
            d = kwargs.get("dtype") if dt_pos is None or len(args) <= dt_pos else args[dt_pos]
            if d is not None:
                _warn_dtype(d, dtype_warns)
        st = _state  # (any trace, even with only constant arguments, stages the plain function)
        if st.dynamic[-1] is not _eval_main or len(st.stack) != 1 or config.jax_disable_jit or _depth():
            return fn(*args, **kwargs)
        if config.fjax_tiered_compile is False or _debug_nans.active:
            # (tiering "off" as most often spelled, others: _tier_mode; jax_debug_nans/infs: the
            # op-by-op call names the primitive without re-running a compiled one)
            return fn(*args, **kwargs)
        dyn: list = []
        try:
            key = (
                tuple([_enc(a, dyn) for a in args]),
                tuple([(k, _enc(v, dyn)) for k, v in kwargs.items()]) if kwargs else (),
                core.trace_context(),
            )
            entry = entries.get(key)
        except (_NotHandled, TypeError):  # (TypeError: an unhashable shape or value)
            return fn(*args, **kwargs)
        if entry.__class__ is _Entry and entry.ready and core.placement_hook is None:
            stats["compiled_calls"] += 1
            direct = entry.direct
            return entry.jitted(*dyn) if direct is None else _run(direct, dyn)
        if entry is None:
            if key not in entries:  # the signature's first call: op by op, then remembered
                _local.depth = 1  # (wrapped functions it calls stay plain)
                try:
                    out = fn(*args, **kwargs)
                finally:
                    _local.depth = 0
                if len(entries) >= MAX_SIGNATURES:
                    entries.clear()
                entries[key] = None
                stats["first_calls"] += 1
                return out
        elif entry is _PLAIN:
            return fn(*args, **kwargs)
        try:
            mode = _re._tier_mode(dyn)
        except ValueError:  # (arrays committed to different devices: the op-by-op call says so)
            mode = "off"
        if mode == "off":
            return fn(*args, **kwargs)
        if entry is None:
            with lock:  # (threads making the same signature's second call trace it once)
                entry = entries.get(key)
                if entry is None:
                    entry = entries[key] = _make_entry(fn, key, dyn)
            if entry is _PLAIN:
                return fn(*args, **kwargs)
        return _tiered(entry, dyn, mode, lambda: fn(*args, **kwargs))

    wrapper.__wrapped_eager__ = fn  # (the plain function, for tests and benchmarks)
    wrapper._eager_entries = entries
    return wrapper


def wait_compiled(timeout: float | None = None) -> bool:
    """Block until the background compiles (of composites and of ``fjax.random``) are done; False on timeout."""
    return _re.wait_compiled(timeout)


#: the exported functions wrapped (installed by fjax/numpy/__init__.py, fjax/numpy/linalg.py,
#: fjax/nn/__init__.py, fjax/scipy/special.py): composites of several primitives whose op-by-op
#: evaluation costs several times a compiled call (bench/bench_eager_composites.py; not: single
#: primitives such as nn.sigmoid, special.log_ndtr, jnp.cumsum, nor jnp.convolve and nn.logsumexp,
#: whose compiled programs were no faster)
JNP = (
    "linspace logspace geomspace mean var std nanmean nanvar nanstd average median triu tril take_along_axis "
    "diff outer kron trace cross isclose allclose polyval interp cov corrcoef clip meshgrid "
    "histogram"
).split()
JNP_LINALG = ("norm",)
NN = (
    "log_softmax softmax standardize one_hot silu swish gelu glu celu selu elu softplus "
    "log_sigmoid hard_swish hard_silu"
).split()
SPECIAL = "xlogy entr logsumexp ndtr logit kl_div i0".split()


#: the functions (of those above) that warn about an explicit 64-bit ``dtype=`` with x64 off, and
#: under which names (JAX's: nanmean's says "mean"); tests/test_eager_composites.py checks that
#: the wrapped functions warn as the plain ones
DTYPE_WARNS = {n: (n,) for n in "linspace logspace geomspace mean var std nanvar nanstd trace".split()}
DTYPE_WARNS["nanmean"] = ("mean",)


def install(namespace: dict, names: Any) -> None:
    """Wrap ``namespace[name]`` with ``compiled_on_repeat`` for each of ``names`` it holds."""
    done: dict = {}  # (aliases, e.g. nn.swish and nn.silu, share one wrapper)
    for name in names:
        f = namespace.get(name)
        if f is not None and callable(f) and not hasattr(f, "__wrapped_eager__"):
            if id(f) not in done:
                done[id(f)] = compiled_on_repeat(f, DTYPE_WARNS.get(name, ()))
            namespace[name] = done[id(f)]
