"""``jax.extend.core``: primitives and jaxprs, for writing custom primitives and interpreters.

``Primitive`` (``def_impl``/``def_abstract_eval``/``bind``), ``Jaxpr``/``ClosedJaxpr``/
``JaxprEqn``/``Var``/``Literal``/``DropVar``, ``jaxpr_as_fun``, ``check_jaxpr`` and the rule
tables live where fjax keeps them (``fjax.interpreters.ad.primitive_jvps``, ...).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as _np

from fjax import core as _core
from fjax._tokens import AbstractToken, Token
from fjax.core import (
    ClosedJaxpr,
    DropVar,
    Jaxpr,
    JaxprEqn,
    JaxprTypeError,
    Literal,
    ShapedArray,
    Var,
    check_jaxpr,
    concrete_or_error,
    find_top_trace,
    get_opaque_trace_state,
    jaxpr_as_fun,
)
from fjax.dtypes import kind as _dkind
from fjax.errors import InconclusiveDimensionOperation

__all__ = [
    "AbstractToken",
    "ClosedJaxpr",
    "DropVar",
    "Effect",
    "InconclusiveDimensionOperation",
    "Jaxpr",
    "JaxprEqn",
    "JaxprTypeError",
    "Literal",
    "Primitive",
    "Token",
    "TraceTag",
    "Var",
    "array_types",
    "call_impl",
    "check_jaxpr",
    "concrete_or_error",
    "find_top_trace",
    "gensym",
    "get_opaque_trace_state",
    "jaxpr_as_fun",
    "jaxprs_in_params",
    "mapped_aval",
    "new_jaxpr_eqn",
    "nonempty_axis_env_DO_NOT_USE",
    "primal_dtype_to_tangent_dtype",
    "primitives",
    "set_current_trace",
    "subjaxprs",
    "take_current_trace",
    "unmapped_aval",
    "unsafe_am_i_under_a_jit_DO_NOT_USE",
    "unsafe_am_i_under_a_vmap_DO_NOT_USE",
    "unsafe_get_axis_names_DO_NOT_USE",
    "valid_jaxtype",
]


class Effect:
    """The base of side effects a primitive can declare (JAX's ``core.Effect``); libraries
    subclass it to name their own (flax's variable effect). fjax tracks an equation's effects
    by its primitive, so an ``Effect`` subclass is a name only."""


def _array(x: _np.ndarray) -> Any:
    """An fjax Array over ``x`` (a read-only view: a buffer a compiled program hands to a host step
    stays writable for the program)."""
    v = x.view()
    v.flags.writeable = False
    return _core.Array(v)


class _PrimitiveMeta(type):
    # every primitive is a ``jax.extend.core.Primitive`` (fjax's own are ``fjax.core.Primitive``s)
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, _core.Primitive)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, _core.Primitive)


class Primitive(_core.Primitive, metaclass=_PrimitiveMeta):
    """``jax.extend.core.Primitive``: a primitive defined outside fjax, with JAX's calling
    conventions for its rules.

    fjax's own primitives compute on numpy arrays (their ``impl`` is numpy code); an ``impl``
    written for JAX computes with ``jax.numpy`` on arrays, so evaluating this primitive eagerly
    hands it fjax Arrays (any other argument, such as a tracer when a library calls ``impl``
    itself, passes through). Its abstract-eval rule always receives avals (``ShapedArray``), as
    in JAX, also when the primitive is evaluated eagerly.
    """

    _user_impl: Callable | None = None

    def bind(self, *args: Any, **params: Any) -> Any:
        st = _core._state
        if self._user_impl is not None and st.dynamic[-1] is _core._eval_main and self.axis_main is None:
            for x in args:
                if isinstance(x, _core.Tracer):
                    break
            else:
                # no transform is active: JAX's evaluation calls ``impl`` on the arguments as given
                # (a Python scalar stays one) and returns what it returns
                return self._user_impl(*args, **params)
        return _core.bind(self, args, params)

    def def_impl(self, impl: Callable) -> Callable:
        self._user_impl = impl

        def impl_on_arrays(*args: Any, **params: Any) -> Any:
            return impl(*[_array(x) if type(x) is _np.ndarray else x for x in args], **params)

        impl_on_arrays.__wrapped__ = impl  # type: ignore[attr-defined]
        self.impl = impl_on_arrays
        return impl

    def def_abstract_eval(self, rule: Callable) -> Callable:
        def on_avals(*args: Any, **params: Any) -> Any:
            return rule(*[x if isinstance(x, ShapedArray) else _core.get_aval(x) for x in args], **params)

        on_avals.__wrapped__ = rule  # type: ignore[attr-defined]
        self.abstract_eval = on_avals
        return rule

    def def_effectful_abstract_eval(self, rule: Callable) -> Callable:
        """A rule returning ``(out_avals, effects)``: the primitive is kept by dead-code elimination
        (fjax tracks no effect types; any effectful rule marks it effectful)."""
        self.effectful = True
        self.def_abstract_eval(lambda *avals, **params: rule(*avals, **params)[0])
        return rule


def _array_types() -> set[type]:
    import numpy as np

    from fjax.core import Array

    return {Array, np.ndarray, np.generic, bool, int, float, complex}


array_types = _array_types()


def new_jaxpr_eqn(
    invars: list, outvars: list, primitive: Primitive, params: dict, *args: Any, **kwargs: Any
) -> JaxprEqn:
    """An equation ``outvars = primitive[params] invars`` (JAX's effects/source-info arguments are ignored)."""
    return JaxprEqn(primitive, list(invars), list(outvars), dict(params))


def valid_jaxtype(x: Any) -> bool:
    """Whether ``x`` can be an argument of a traced function (an array or a scalar)."""
    from fjax.core import Tracer

    return isinstance(x, (Tracer, *array_types))


def primal_dtype_to_tangent_dtype(primal_dtype: Any) -> Any:
    """The tangent dtype of ``primal_dtype``: itself for inexact dtypes, ``float0`` otherwise."""
    import numpy as np

    from fjax import dtypes

    dt = np.dtype(primal_dtype)
    return dt if _dkind(dt) in "fc" else dtypes.float0


def jaxprs_in_params(params: dict) -> Iterator[Jaxpr]:
    """The jaxprs among an equation's parameter values (a ``ClosedJaxpr`` gives its jaxpr; tuples
    and lists of them, as ``cond``'s branches, are looked into one level)."""
    for val in params.values():
        for v in val if isinstance(val, (tuple, list)) else (val,):
            if isinstance(v, Jaxpr):
                yield v
            elif isinstance(v, ClosedJaxpr):
                yield v.jaxpr


def subjaxprs(jaxpr: Jaxpr) -> Iterator[Jaxpr]:
    """The jaxprs in the parameters of ``jaxpr``'s equations (not recursively)."""
    for eqn in jaxpr.eqns:
        yield from jaxprs_in_params(eqn.params)


def mapped_aval(size: int, axis: int | None, aval: ShapedArray) -> ShapedArray:
    """``aval`` without its mapped axis ``axis`` (of length ``size``); unchanged for ``axis=None``."""
    if axis is None:
        return aval
    assert aval.shape[axis] == size, (aval.shape, axis, size)
    return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1 :])


def unmapped_aval(size: int, axis: int | None, aval: ShapedArray, explicit_mesh_axis: Any = None) -> ShapedArray:
    """``aval`` with a new axis of length ``size`` at ``axis``; unchanged for ``axis=None``."""
    if axis is None:
        return aval
    return aval.update(shape=aval.shape[:axis] + (size,) + aval.shape[axis:])


def gensym(suffix: str = "") -> Callable[[ShapedArray], Var]:
    """A function making fresh jaxpr variables of a given aval (``suffix`` is accepted for JAX's
    signature; fjax names variables only when a jaxpr is printed)."""
    del suffix
    return Var


def _stack_has(trace_type: type) -> bool:
    from fjax import core as _core

    return any(m.active and issubclass(m.trace_type, trace_type) for m in _core._state.stack)


def unsafe_am_i_under_a_jit_DO_NOT_USE() -> bool:
    """Whether this thread is staging a jaxpr now (inside ``jit``, ``make_jaxpr``, a loop body...)."""
    from fjax import core as _core

    # the dynamic (staging) mains: grad's linearization stages too, but only on its own tracers
    return not _core.is_eager()


def unsafe_am_i_under_a_vmap_DO_NOT_USE() -> bool:
    """Whether a ``vmap`` (or another batching transform) is active in this thread."""
    from fjax.interpreters.batching import BatchTrace

    return _stack_has(BatchTrace)


def unsafe_get_axis_names_DO_NOT_USE() -> list:
    """The names of the named axes bound in this thread, outermost first."""
    from fjax.interpreters.batching import axis_env

    return [name for name, _ in axis_env()]


def nonempty_axis_env_DO_NOT_USE() -> bool:
    """Whether any named axis is bound in this thread."""
    return bool(unsafe_get_axis_names_DO_NOT_USE())


_NO_TRACE_CONTEXTS = (
    "{} (JAX's trace contexts, for interpreters written as Trace subclasses, as haiku's hk.to_dot) "
    "is not supported by fjax: its transforms keep their own trace stack"
)


def take_current_trace() -> Any:
    """JAX's context manager yielding the current trace; not supported (raises NotImplementedError)."""
    raise NotImplementedError(_NO_TRACE_CONTEXTS.format("jax.extend.core.take_current_trace"))


def set_current_trace(trace: Any, check_leaks: bool = False) -> Any:
    """JAX's context manager making ``trace`` current; not supported (raises NotImplementedError)."""
    raise NotImplementedError(_NO_TRACE_CONTEXTS.format("jax.extend.core.set_current_trace"))


class TraceTag:
    """JAX's identity of a user-defined trace; not supported (constructing one raises NotImplementedError)."""

    def __init__(self) -> None:
        raise NotImplementedError(_NO_TRACE_CONTEXTS.format("jax.extend.core.TraceTag"))


from fjax.extend.core import primitives  # noqa: E402  (a submodule, as in JAX)


def call_impl(f: Any, *args: Any, **params: Any) -> Any:
    """The impl rule of a call primitive: evaluate the ``WrappedFun`` ``f`` (``params`` unused)
    with the eval trace current, so operations on concrete values run eagerly even while some
    function is being staged (as JAX's)."""
    from fjax._compile_time import ensure_compile_time_eval  # noqa: PLC0415

    del params
    with ensure_compile_time_eval():
        return f.call_wrapped(*args)
