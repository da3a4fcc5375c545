"""``jax_debug_nans`` / ``jax_debug_infs``: raise ``FloatingPointError`` at the first primitive
whose float output holds a NaN (or an infinity), as JAX does.

Eagerly every primitive's outputs are checked. A jitted program checks only its outputs (nothing
inside it, host steps included); when one is bad, its jaxpr is re-run eagerly ("de-optimized")
primitive by primitive to name the primitive that made it. Library functions that stand for one
JAX operation (``as_unit``) are checked at their outputs only. When neither option is on anywhere,
nothing here runs: ``core.eval_primitive`` is the plain function (wrapped by the checking one only
while a check is on, ``core.set_eval_wrapper``) and jit tests one module attribute (``active``)
before ``call_jit_checked``.

The options are set globally with ``config.update("jax_debug_nans", True)`` or for a block, in the
calling thread only (as JAX's context managers, through ``config.override``), with
``with fjax.debug_nans(True): ...``.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from fjax import core
from fjax.config import config
from fjax.dtypes import kind as _dkind

__all__ = ["debug_infs", "debug_nans"]

# True while some check may be on (globally, or in some thread's context manager); read by jit
active = False

_tls = threading.local()  # .unchecked: inside one JAX operation (``_unchecked``) in this thread
_OPTIONS = ("jax_debug_nans", "jax_debug_infs")


def _effective() -> tuple[bool, bool]:
    """(check NaNs, check infs) in the calling thread."""
    if getattr(_tls, "unchecked", False):
        return False, False
    return bool(config.jax_debug_nans), bool(config.jax_debug_infs)


def _invalid(x: Any, nans: bool, infs: bool) -> str | None:
    """'nan' or 'inf' when the float array ``x`` holds one that is checked for, else None."""
    a = x if type(x) is np.ndarray else np.asarray(x)
    if _dkind(a.dtype) not in "fc":
        return None
    if nans and np.isnan(a).any():
        return "nan"
    if infs and np.isinf(a).any():
        return "inf"
    return None


def _checking(inner: Callable) -> Callable:
    """The eager evaluator ``inner`` with its outputs checked (``core.set_eval_wrapper``)."""

    def checked(prim: core.Primitive, args: Sequence[Any], params: dict) -> Any:
        out = inner(prim, args, params)
        nans, infs = _effective()
        if nans or infs:
            for o in out if prim.multiple_results else (out,):
                ty = _invalid(o._value, nans, infs)
                if ty is not None:
                    raise FloatingPointError(f"invalid value ({ty}) encountered in {prim.name}")
        return out

    return checked


_eval_primitive_checked = _checking(core._eval_primitive_plain)  # the de-optimized re-run's


def _refresh(nans: bool | None = None, infs: bool | None = None) -> None:
    """Swap the eager evaluator and set ``active`` from the global options and the overrides open
    in any thread (config calls its listeners under its lock, so these never interleave)."""
    global active
    nans = bool(config.global_value("jax_debug_nans")) if nans is None else bool(nans)
    infs = bool(config.global_value("jax_debug_infs")) if infs is None else bool(infs)
    active = nans or infs or any(config.overridden(o) for o in _OPTIONS)
    core.set_eval_wrapper("debug_nans", _checking if active else None)


def _on_config_change(name: str, value: Any) -> None:
    # listeners run before the value is stored: pass the new one
    if name == "jax_debug_nans":
        _refresh(nans=value)
    elif name == "jax_debug_infs":
        _refresh(infs=value)


def _on_override(name: str) -> None:
    if name in _OPTIONS:
        _refresh()


config._listeners.append(_on_config_change)
config._override_listeners.append(_on_override)
_refresh()  # the options may come from the environment (JAX_DEBUG_NANS=1)


# ---- library functions checked as one operation --------------------------------------------------


@contextlib.contextmanager
def _unchecked() -> Iterator[None]:
    """No checks in this thread inside the block (the inside of one JAX operation)."""
    saved = getattr(_tls, "unchecked", False)
    _tls.unchecked = True
    try:
        yield
    finally:
        _tls.unchecked = saved


def as_unit(name: str) -> Callable[[Callable], Callable]:
    """Decorator for a library function that stands for one operation of JAX (an XLA op such as
    ``log``, or a jitted ``jnp`` function): while a check is on, the primitives inside run unchecked
    and only the function's outputs are checked, reported as ``name``. So NaN or inf constants it
    selects away (JAX never sees those, inside one XLA op) raise nothing. Off, one flag test."""

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def unit(*args: Any, **kwargs: Any) -> Any:
            if not active:
                return fn(*args, **kwargs)
            nans, infs = _effective()
            if not (nans or infs):
                return fn(*args, **kwargs)
            with _unchecked():
                out = fn(*args, **kwargs)
            for leaf in out if isinstance(out, (tuple, list)) else (out,):
                if type(leaf) is core.Array:
                    ty = _invalid(leaf._value, nans, infs)
                    if ty is not None:
                        raise FloatingPointError(f"invalid value ({ty}) encountered in {name}")
            return out

        return unit

    return wrap


# ---- jit ------------------------------------------------------------------------------------


def call_jit_checked(
    fn: Callable, args: Sequence[Any], jaxpr: core.ClosedJaxpr, name: str, backward: bool = False
) -> list:
    """Run a jitted program ``fn`` (compiled, or its jaxpr evaluated) on ``args`` as JAX runs one:
    nothing inside is checked (host steps included), its outputs are; on a NaN/inf re-run ``jaxpr``
    eagerly to raise ``FloatingPointError`` naming the first primitive that made one."""
    nans, infs = _effective()
    if not (nans or infs):
        return fn(*args)
    with _unchecked():
        outs = fn(*args)
    for o in outs:
        ty = _invalid(o, nans, infs)
        if ty is not None:
            break
    else:
        return outs
    if backward:  # a jit's transposed program (named as the function, as JAX)
        print(
            "Invalid nan value encountered in the backward pass of a jax.jit function. "
            "Calling the de-optimized backward pass."
        )
    else:
        print("Invalid nan value encountered in the output of a jax.jit function. Calling the de-optimized version.")
    ins = [core.Array(np.asarray(a), av.weak_type) for a, av in zip(args, jaxpr.in_avals)]
    _eval_deoptimized(jaxpr.jaxpr, jaxpr.consts, ins)
    raise FloatingPointError(
        f"invalid value ({ty}) encountered in jit({name}). Because jax_config.debug_nans.value and/or "
        "config.jax_debug_infs is set, the de-optimized function (i.e., the function as if the `jit` "
        "decorator were removed) was called in an attempt to get a more precise error message. However, "
        "the de-optimized function did not produce invalid values during its execution. This behavior can "
        "result from `jit` optimizations causing the invalid value to be produced. It may also arise from "
        "having nan/inf literals as inputs or outputs, like `jax.jit(lambda ...: jax.numpy.nan)(...)`. "
        "\n\nIt may be possible to avoid the invalid value by removing the `jit` decorator, at the cost of "
        "losing optimizations."
    ) from None


def _eval_deoptimized(jaxpr: core.Jaxpr, consts: Sequence[Any], args: Sequence[Any]) -> list:
    """Evaluate ``jaxpr`` primitive by primitive with the checks on; nested jits are entered
    rather than compiled, so the primitive named is the one that made the value."""
    from fjax.jit import jit_p  # noqa: PLC0415  (fjax.jit imports this module)

    env: dict = {}

    def read(v: Any) -> Any:
        return v.as_array() if type(v) is core.Literal else env[v]

    for v, x in zip(jaxpr.constvars, consts):
        env[v] = x
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        if eqn.primitive is jit_p:
            inner = eqn.params["jaxpr"]
            outs = _eval_deoptimized(inner.jaxpr, inner.consts, ins)
        else:
            outs = _eval_primitive_checked(eqn.primitive, ins, eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
        for v, o in zip(eqn.outvars, outs):
            env[v] = o
    return [read(v) for v in jaxpr.outvars]


# ---- the context managers ----------------------------------------------------------------------


class _CheckOption:
    """``fjax.debug_nans`` / ``fjax.debug_infs``: ``with fjax.debug_nans(True): ...`` (or as a
    decorator) turns the check on or off in the calling thread for the block; ``.value`` reads it."""

    def __init__(self, option: str, attr: str):
        self._option = option
        self._attr = attr

    @property
    def value(self) -> bool:
        return _effective()[0 if self._attr == "nans" else 1]

    def __call__(self, new_val: bool) -> contextlib.ContextDecorator:
        return self._context(bool(new_val))

    def _context(self, new_val: bool) -> contextlib.AbstractContextManager:
        return config.override(self._option, new_val)

    def __repr__(self) -> str:
        return f"<fjax config option {self._option}>"


debug_nans: Callable[[bool], Any] = _CheckOption("jax_debug_nans", "nans")
debug_infs: Callable[[bool], Any] = _CheckOption("jax_debug_infs", "infs")
