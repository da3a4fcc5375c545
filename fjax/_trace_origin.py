"""Where a staged tracer came from, as JAX's tracing errors say it.

When a traced value is used where a concrete one is needed (``if x > 0`` under ``jit``,
``int(x)``, ``jnp.arange(n)``), JAX's message ends with the function being traced and the
arguments the value depends on::

    The error occurred while tracing the function f at /path/file.py:12 for jit. This concrete
    value was not available in Python because it depends on the value of the argument x.

``origin_msg(tracer)`` writes that text for a tracer of ``partial_eval.StagingTrace``. It runs
only while an error is being raised: it finds the ``trace_to_jaxpr`` frame that owns the
tracer's trace on the Python stack and, just above it, the caller that traced a user function
(``jit``'s tracing step or ``make_jaxpr``), whose locals hold the function and the arguments it
was called with. Nothing is recorded on the hot path. Where no such caller is found (a loop body,
a linearized function) the message says nothing, as JAX's says nothing without debug info.

The dependency on the arguments is JAX's ``find_progenitors``: a backward walk over the equations
staged so far from the tracer's variable to the function's input variables.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
from typing import Any, Callable, Sequence

from fjax import tree_util as tu
from fjax._tree_prefix import fun_sourceinfo
from fjax.core import Literal

_STATIC = object()


def _non_static_arg_names(
    fun: Callable, args: Sequence[Any], kwargs: dict, static_argnums: Sequence[int], static_argnames: Sequence[str]
) -> list[str]:
    """The names of the flat non-static arguments, in the order jit flattens them (positional,
    then keyword arguments sorted by name), as JAX's ``api_util._non_static_arg_names``."""
    nargs = len(args)
    static_idx = {i % nargs for i in static_argnums if -nargs <= i < nargs} if nargs else set()
    args_ = [_STATIC if i in static_idx else x for i, x in enumerate(args)]
    kwargs_ = {k: _STATIC if k in static_argnames else x for k, x in kwargs.items()}
    ordered: list[tuple[str, Any]] | None = None
    try:
        sig = inspect.signature(fun)
        bound = sig.bind(*args_, **kwargs_)
    except (TypeError, ValueError):
        pass
    else:
        var_kw = next((n for n, p in sig.parameters.items() if p.kind == inspect.Parameter.VAR_KEYWORD), None)
        positional = [(n, x) for n, x in bound.arguments.items() if n not in kwargs and n != var_kw]
        keyword = sorted(kwargs_.items())
        ordered = positional + [(n if n in bound.arguments else f"{var_kw}['{n}']", x) for n, x in keyword]
    if ordered is None:
        ordered = [("args", args_)] + sorted((f"kwargs['{n}']", x) for n, x in kwargs_.items() if x is not _STATIC)
    names = []
    for name, x in ordered:
        if x is _STATIC:
            continue
        for path, leaf in tu.tree_flatten_with_path(x, is_leaf=lambda v: v is _STATIC)[0]:
            if leaf is not _STATIC:
                names.append(f"{name}{tu.keystr(path)}")
    return names


def _from_jit(f_locals: dict) -> tuple[str, list[str]] | None:
    jitted = f_locals.get("self")
    args, kwargs = f_locals.get("args"), f_locals.get("kwargs")
    if jitted is None or args is None or kwargs is None:
        return None
    names = _non_static_arg_names(jitted.fun, args, kwargs, jitted.static_argnums, jitted.static_argnames)
    return fun_sourceinfo(jitted.fun), names


def _from_make_jaxpr(f_locals: dict) -> tuple[str, list[str]] | None:
    fun, args, kwargs = f_locals.get("fun"), f_locals.get("args"), f_locals.get("kwargs")
    if fun is None or args is None or kwargs is None:
        return None
    return fun_sourceinfo(fun), _non_static_arg_names(fun, args, kwargs, f_locals.get("static", ()), ())


def _nested_code(outer: Callable, name: str) -> types.CodeType | None:
    for c in outer.__code__.co_consts:
        if isinstance(c, types.CodeType) and c.co_name == name:
            return c
    return None


@functools.cache
def _tracers_of_functions() -> dict:
    """The code objects of the callers of ``trace_to_jaxpr`` that trace a user's function, each
    with how to read (source info, argument names) off its frame's locals."""
    import importlib  # noqa: PLC0415

    api, jit_module = importlib.import_module("fjax.api"), importlib.import_module("fjax.jit")
    found = {jit_module.JitWrapped._trace.__code__: _from_jit}
    code = _nested_code(api.make_jaxpr, "make_jaxpr_f")
    if code is not None:
        found[code] = _from_make_jaxpr
    return found


def caller_function_src(frame: Any) -> str | None:
    """``f at file:line`` of the user function that ``trace_to_jaxpr``'s caller (``frame``) is
    tracing for jit or make_jaxpr, else None (kept for a leaked tracer's message, when the frames
    are gone)."""
    readers = _tracers_of_functions()
    for _ in range(3):
        if frame is None:
            return None
        reader = readers.get(frame.f_code)
        if reader is not None:
            fun = (
                frame.f_locals.get("fun")
                if reader is _from_make_jaxpr
                else getattr(frame.f_locals.get("self"), "fun", None)
            )
            return None if fun is None else fun_sourceinfo(fun)
        frame = frame.f_back
    return None


def _traced_function(main: Any) -> tuple[str, list[str]] | None:
    from fjax.interpreters import partial_eval as pe  # noqa: PLC0415

    trace_code = pe.trace_to_jaxpr.__code__
    f = sys._getframe(2)
    while f is not None and not (f.f_code is trace_code and f.f_locals.get("main") is main):
        f = f.f_back
    if f is None:
        return None
    readers = _tracers_of_functions()
    f = f.f_back
    for _ in range(4):  # jit: trace_to_jaxpr <- trace_flat <- JitWrapped._trace
        if f is None:
            return None
        reader = readers.get(f.f_code)
        if reader is not None:
            return reader(f.f_locals)
        f = f.f_back
    return None


def _progenitors(builder: Any, tracer: Any) -> tuple[list[int], list]:
    """The positions of the inputs the tracer depends on, and (when it depends on none) the
    equations that staged it from constants."""
    var = builder.tracer_to_var.get(id(tracer))
    if var is None:
        return [], []
    active = {var}
    for eqn in reversed(builder.eqns):
        produced = active.intersection(eqn.outvars)
        if produced:
            active.difference_update(produced)
            active.update(v for v in eqn.invars if type(v) is not Literal)
    in_vars = [builder.tracer_to_var.get(id(t)) for t in builder.in_tracers]
    positions = [i for i, v in enumerate(in_vars) if v in active]
    consts = active & set(builder.constvals)
    const_eqns = [e for e in builder.eqns if any(v in consts or type(v) is Literal for v in e.invars)]
    return positions, const_eqns


def _arg_list(names: list[str]) -> str:
    if len(names) == 1:
        return f"the argument {names[0]}"
    if len(names) == 2:
        return f"the arguments {names[0]} and {names[1]}"
    return f"the arguments {', '.join(names[:-1])}, and {names[-1]}"


def origin_msg(tracer: Any) -> str:
    """``\\nThe error occurred while tracing the function ...``: JAX's ``_origin_msg`` of a staged
    tracer, or "" when the traced function is not known."""
    main = tracer._trace.main
    found = _traced_function(main)
    if found is None:
        return ""
    src, arg_names = found
    origin = f"The error occurred while tracing the function {src} for jit. "
    positions, const_eqns = _progenitors(main.global_data, tracer)
    if positions:
        try:
            names = [arg_names[i] for i in positions]
        except IndexError:
            return ""
        s = "s" if len(names) > 1 else ""
        origin += (
            f"This concrete value was not available in Python because it depends on the value{s} of {_arg_list(names)}."
        )
    elif const_eqns:
        from fjax._core_pp import _Namer, pp_eqn  # noqa: PLC0415

        namer = _Namer()
        # JAX adds the source line of each operation; fjax's equations carry none
        ops = [f"  operation {pp_eqn(e, namer)}" for e in const_eqns[:5]]
        origin += "This value became a tracer due to JAX operations on these lines:\n\n" + "\n\n".join(ops)
        if len(const_eqns) > 5:
            origin += "\n\n(Additional originating lines are not shown.)"
    return "\n" + origin
