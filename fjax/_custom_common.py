"""Pieces shared by ``custom_jvp`` and ``custom_vjp`` (``fjax.custom_derivatives``): symbolic
zeros, the primal wrapper of ``symbolic_zeros`` rules, tracing and evaluating the primal function,
and the trace checks both use."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Sequence

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core
from fjax.core import ClosedJaxpr, ShapedArray
from fjax.interpreters import ad, batching
from fjax.interpreters import partial_eval as pe
from fjax.interpreters.ad import Zero, is_undefined_primal


class SymbolicZero:
    """A zero tangent/cotangent passed to rules defined with ``symbolic_zeros=True``."""

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return self.aval.ndim

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"SymbolicZero({self.aval.str_short()})"

    def instantiate(self) -> Any:
        return ad._zeros_like(self.aval)


class CustomVJPPrimal:
    """A primal argument of a ``symbolic_zeros=True`` fwd rule: ``value`` and ``perturbed``."""

    def __init__(self, value: Any, perturbed: bool):
        self.value = value
        self.perturbed = perturbed

    def __repr__(self) -> str:
        return f"CustomVJPPrimal(value={self.value!r}, perturbed={self.perturbed})"


# ---------------------------------------------------------------------------------------------
# shared helpers


def _fun_name(f: Any) -> str:
    return getattr(f, "__name__", None) or type(f).__name__


@functools.lru_cache(maxsize=4096)
def _n_positional(fun: Callable) -> int:
    # how many positional parameters ``fun`` has (beyond them no default can be filled in)
    try:
        params = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):
        return 0
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _resolve_kwargs(fun: Callable, args: tuple, kwargs: dict, what: str) -> tuple:
    """``args`` and ``kwargs`` as positional arguments of ``fun``, defaults filled in (as JAX's
    ``resolve_kwargs``: ``nondiff_argnums`` may name a parameter left at its default)."""
    if not kwargs:
        try:
            if len(args) >= _n_positional(fun):
                return args
        except TypeError:  # an unhashable callable
            pass
    try:
        ba = inspect.signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"The input arguments to the {what}-decorated function {_fun_name(fun)} could not be resolved to "
            f"positional-only arguments. Binding failed with the error:\n{e}"
        ) from e
    ba.apply_defaults()
    if ba.kwargs:
        raise TypeError(
            f"keyword arguments could not be resolved to positions for the {what}-decorated function "
            f"{_fun_name(fun)}: {sorted(ba.kwargs)}"
        )
    return tuple(ba.args)


def _nondiff_from_names(fun: Callable, argnums: Sequence[int], argnames: Sequence[str]) -> tuple[int, ...]:
    nums = {int(i) for i in argnums}
    if argnames:
        params = list(inspect.signature(fun).parameters)
        for n in argnames:
            nums.add(params.index(n))
    return tuple(sorted(nums))


def _as_value(x: Any, what: str) -> Any:
    """A leaf as an Array or Tracer (Python scalars / numpy arrays are converted)."""
    if isinstance(x, (core.Tracer, core.Array)):
        return x
    if type(x) in (bool, int, float, complex) or isinstance(x, (np.ndarray, np.generic)):
        return core.to_array(x, what)
    raise TypeError(
        f"{what}: value {x!r} of type {type(x).__name__} is not a valid JAX type (expected arrays, scalars or "
        "pytrees of them)"
    )


def _trace_closed(fun: Callable, in_avals: Sequence[ShapedArray], name: str) -> tuple[ClosedJaxpr, list]:
    """Trace ``fun`` into a jaxpr whose constants are hoisted into leading arguments."""
    jaxpr, consts, _ = pe.trace_to_jaxpr(fun, in_avals, name)
    return ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), []), consts


def _eval_closed(closed: ClosedJaxpr, *args: Any) -> list:
    return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)


def _jaxpr_impl(*args: Any, call_jaxpr: ClosedJaxpr, **_: Any) -> list:
    ins = [core.Array(a, av.weak_type) for a, av in zip(args, call_jaxpr.in_avals)]
    outs = _eval_closed(call_jaxpr, *ins)
    return [o._value if isinstance(o, core.Array) else np.asarray(o) for o in outs]


def _jaxpr_abstract(*avals: Any, call_jaxpr: ClosedJaxpr, name: str, **_: Any) -> list:
    if len(avals) != len(call_jaxpr.in_avals):
        raise TypeError(f"{name}: expected {len(call_jaxpr.in_avals)} arguments, got {len(avals)}")
    for a, b in zip(avals, call_jaxpr.in_avals):
        if not core.typematch(a, b):
            raise TypeError(f"{name}: argument of type {a.str_short()} where {b.str_short()} was traced")
    return list(call_jaxpr.out_avals)


def _inline_partial_eval(trace: pe.StagingTrace, tracers: list, *, call_jaxpr: ClosedJaxpr, **_: Any) -> list:
    # Partial evaluation only builds linear functions, so the custom rule is no longer needed
    # there (JAX does the same): evaluate the primal jaxpr, known parts eagerly.
    ins = [t.const if pe.is_known(t) else t for t in tracers]
    return _eval_closed(call_jaxpr, *ins)


def _inline_transpose(cts: list, *args: Any, call_jaxpr: ClosedJaxpr, **_: Any) -> list:
    res = ad.backward_pass(call_jaxpr.jaxpr, call_jaxpr.consts, list(args), list(cts))
    return [r if is_undefined_primal(a) else None for r, a in zip(res, args)]


def _batch_closed(closed: ClosedJaxpr, dims: Sequence[int | None], size: int) -> tuple[ClosedJaxpr, list]:
    """The jaxpr vmapped over ``dims`` with every output batched at axis 0."""
    new, consts, _ = batching.batch_jaxpr(closed, list(dims), size, True)
    return new, consts


def _zero_tangent_of(x: Any) -> Zero:
    return Zero(ad.tangent_aval(core.get_aval(x)))


def _wrap_jvp_outs(trace: ad.JVPTrace, primals: list, tangents: list) -> list:
    return [core.full_lower(ad.JVPTracer(trace, p, t)) for p, t in zip(primals, tangents)]


def _top_trace(args: Sequence[Any]) -> core.Trace:
    return core.find_top_trace(args)


def _is_eval(trace: core.Trace) -> bool:
    return type(trace) is core.EvalTrace


def _unbatched_zero(z: SymbolicZero, d: int | None) -> SymbolicZero:
    if d is None:
        return z
    s = list(z.aval.shape)
    del s[d]
    return SymbolicZero(z.aval.update(shape=tuple(s)))


def _ty_tree(tree: Any, avals: list) -> str:
    return str(tu.tree_unflatten(tree, [a.str_short() for a in avals])).replace("'", "")
