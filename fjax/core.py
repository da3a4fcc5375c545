"""Core of fjax: abstract values, the Array type, primitives and ``bind``, the trace stack,
jaxpr data structures, ``eval_jaxpr``, the jaxpr type checker and pretty-printer.

Transforms are interpreters (``Trace`` subclasses) over the same primitives. Each active
transform owns a ``MainTrace`` on the trace stack; its level orders nested transforms so that
tracers of different transforms never get confused (no perturbation confusion). ``bind`` finds
the highest-level trace among its arguments and lets that trace process the primitive; with no
tracer among the arguments and no dynamic (staging) trace, the primitive runs eagerly on numpy.

The values (``ShapedArray``, ``Array``, the ``Tracer`` base class, ``to_array``/``get_aval``
and the tracing errors) are defined in ``fjax/_core_values.py`` and the pretty-printer in
``fjax/_core_pp.py``, both split from here for size; this module re-exports the values, so
``fjax.core`` stays the place to import every one of these names from.
"""

from __future__ import annotations

import functools
import itertools
import threading
import weakref
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from fjax import dtypes
from fjax._core_values import (  # noqa: F401 - the values are imported from fjax.core
    AbstractValue,
    Array,
    ConcretizationTypeError,
    JAXIndexError,
    JAXTypeError,
    ShapedArray,
    Tracer,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
    _array_type_error,
    _python_scalar_types,
    _rebuild_array,
    _short_names,
    array_from_python_scalar,
    array_method,
    canonicalize_shape,
    concrete_or_error,
    get_aval,
    invalid_shape_error,
    is_arraylike,
    leaked_tracer_message,
    short_dtype_name,
    to_array,
    typematch,
)
from fjax.config import config

# ---------------------------------------------------------------------------------------------
# strict helpers


def safe_zip(*args: Sequence) -> list[tuple]:
    """zip that fails loudly on a length mismatch instead of truncating."""
    n = len(args[0])
    for a in args[1:]:
        if len(a) != n:
            raise ValueError(f"safe_zip: length mismatch {[len(a) for a in args]}")
    return list(zip(*args))


def safe_map(f: Callable, *args: Sequence) -> list:
    """map that fails loudly on a length mismatch instead of truncating."""
    n = len(args[0])
    for a in args[1:]:
        if len(a) != n:
            raise ValueError(f"safe_map: length mismatch {[len(a) for a in args]}")
    return list(map(f, *args))


def unzip2(pairs: Iterable) -> tuple[list, list]:
    xs, ys = [], []
    for x, y in pairs:
        xs.append(x)
        ys.append(y)
    return xs, ys


def split_list(lst: Sequence, ns: Sequence[int]) -> list[list]:
    out, i = [], 0
    for n in ns:
        out.append(list(lst[i : i + n]))
        i += n
    out.append(list(lst[i:]))
    return out


def partition_list(bs: Sequence[bool], lst: Sequence) -> tuple[list, list]:
    """Split ``lst`` into (items where bs is False, items where bs is True)."""
    f, t = [], []
    for b, x in safe_zip(bs, lst):
        (t if b else f).append(x)
    return f, t


def merge_lists(bs: Sequence[bool], l0: Sequence, l1: Sequence) -> list:
    i0, i1 = iter(l0), iter(l1)
    out = [next(i1) if b else next(i0) for b in bs]
    return out


# ---------------------------------------------------------------------------------------------
# values (defined in fjax/_core_values.py): the default sharding of ShapedArray


def default_sharding() -> Any:
    """The sharding of a value placed on the default device; set by ``fjax._devices`` when it is
    imported (core imports nothing above it)."""
    raise RuntimeError("fjax._devices is not imported")


def aval_sharding(ndim: int) -> Any:
    """The sharding in the type of an ``ndim``-dimensional value; set by ``fjax.sharding``."""
    raise RuntimeError("fjax.sharding is not imported")


def _shaped_array_sharding(self: ShapedArray) -> Any:
    """The sharding in the type, as JAX's: ``NamedSharding`` of an empty ``AbstractMesh`` with
    nothing sharded (``P(None, ...)``). Where a value lives is ``Array.sharding``."""
    return aval_sharding(len(self.shape))


# attached here, so that it calls the hook this module holds (which ``fjax._devices`` rebinds)
ShapedArray.sharding = property(_shaped_array_sharding)  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------
# primitives and bind


class Primitive:
    """A primitive operation. ``impl`` works on numpy arrays; ``abstract_eval`` on avals.

    The other rules (jvp, transpose, batching, partial eval, lowering) live in the tables of
    the interpreter modules, keyed by the primitive.
    """

    multiple_results = False
    # collectives (fjax.lax.parallel): ``axis_main(params)`` is the transform that owns the named
    # axes, which must process the primitive even when no argument is traced by it
    axis_main: Callable[[dict], Any] | None = None
    # an effectful primitive (e.g. ``debug_callback``) is never dead-code eliminated
    effectful = False

    def __init__(self, name: str):
        self.name = name
        self.impl: Callable | None = None
        self.abstract_eval: Callable | None = None

    def __repr__(self) -> str:
        return self.name

    def bind(self, *args: Any, **params: Any) -> Any:
        return bind(self, args, params)

    def def_impl(self, impl: Callable) -> Callable:
        self.impl = impl
        return impl

    def def_abstract_eval(self, rule: Callable) -> Callable:
        self.abstract_eval = rule
        return rule

    def get_bind_params(self, params: dict) -> dict:
        """The parameters to ``bind`` this primitive again with, from an equation's (JAX's
        interpreters re-bind equations this way; fjax's params are already bind's)."""
        return dict(params)


# Device placement (``fjax._placement``) sets this to a function ``(prim, args, params)`` run before
# a primitive is evaluated eagerly: it runs computations on arrays that live on a GPU, or are
# committed to a device, where they live, and returns ``NOT_HANDLED`` for the plain host case.
# None while nothing is placed and the default device is the host's (then eager evaluation costs
# nothing more than this check).
placement_hook: Callable | None = None
NOT_HANDLED = object()

# Called by the eager ``while_loop`` once per iteration when set (``fjax.backends.dispatch`` sets it:
# a tiered first call of a program with while loops gives up evaluating eagerly past a deadline
# and waits for the compiled program instead, by raising from here).
loop_guard: Callable | None = None


def eval_placed(prim: Primitive, args: Sequence[Any], params: dict) -> Any:
    """Evaluate ``prim`` eagerly where its arguments are placed (``placement_hook``), else on the host."""
    hook = placement_hook
    if hook is not None:
        out = hook(prim, args, params)
        if out is not NOT_HANDLED:
            return out
    return eval_primitive(prim, args, params)


def _eval_primitive_plain(prim: Primitive, args: Sequence[Any], params: dict) -> Any:
    """Run ``prim`` eagerly: validate with its abstract-eval rule, compute with numpy."""
    arrs = [x if type(x) is Array else to_array(x, prim.name) for x in args]
    out_aval = prim.abstract_eval(*arrs, **params)
    out = prim.impl(*[a._value for a in arrs], **params)
    if prim.multiple_results:
        return [_wrap_out(o, a) for o, a in zip(out, out_aval)]
    return _wrap_out(out, out_aval)


# The eager evaluator callers look up at call time: the plain one, or it wrapped by the checks a
# config option switches on (``jax_debug_nans``/``jax_debug_infs``: fjax/_debug_nans.py,
# ``jax_no_execution``: fjax/jit.py), so that while none is on eager ops pay nothing for them.
eval_primitive: Callable[[Primitive, Sequence[Any], dict], Any] = _eval_primitive_plain
# check name -> wrapper(inner evaluator) -> evaluator, applied in insertion order
_eval_wrappers: dict[str, Callable] = {}


def set_eval_wrapper(name: str, wrapper: Callable | None) -> None:
    """Install (``wrapper``) or remove (None) the eager-evaluation check ``name`` and rebuild
    ``eval_primitive`` from the plain evaluator and the checks installed."""
    global eval_primitive
    if wrapper is None:
        _eval_wrappers.pop(name, None)
    else:
        _eval_wrappers[name] = wrapper
    fn = _eval_primitive_plain
    for w in _eval_wrappers.values():
        fn = w(fn)
    eval_primitive = fn


def _wrap_out(out: Any, aval: ShapedArray) -> Array:
    if type(out) is not np.ndarray or out.dtype != aval.dtype:
        if aval.dtype == dtypes.float0:
            out = np.zeros(aval.shape, aval.dtype)
        else:
            out = np.asarray(out, dtype=aval.dtype)
    return Array(out, aval.weak_type)


class MainTrace:
    """One active transform on the trace stack."""

    __slots__ = ("level", "trace_type", "global_data", "active", "debug_info", "opaque", "__weakref__")

    def __init__(self, level: int, trace_type: type, global_data: Any = None, debug_info: str = ""):
        self.level = level
        self.trace_type = trace_type
        self.global_data = global_data
        self.active = True
        self.debug_info = debug_info
        self.opaque: OpaqueTraceState | None = None

    def __repr__(self) -> str:
        return f"MainTrace({self.level},{self.trace_type.__name__})"


class Trace:
    """Base class of interpreters. ``pure``/``lift`` box values; ``process_primitive`` runs a rule."""

    __slots__ = ("main",)

    def __init__(self, main: MainTrace):
        self.main = main

    def pure(self, val: Any) -> Any:
        raise NotImplementedError

    def lift(self, val: Any) -> Any:
        raise NotImplementedError

    def process_primitive(self, primitive: Primitive, tracers: list, params: dict) -> Any:
        raise NotImplementedError


class EvalTrace(Trace):
    """The bottom of the stack: run primitives eagerly."""

    def pure(self, x: Any) -> Any:
        return x

    lift = pure

    def process_primitive(self, primitive: Primitive, tracers: list, params: dict) -> Any:
        if placement_hook is not None:
            return eval_placed(primitive, tracers, params)
        return eval_primitive(primitive, tracers, params)


_eval_main = MainTrace(0, EvalTrace)


class _TraceState(threading.local):
    """The trace stacks of one thread (as JAX keeps them): tracing, jit, grad and vmap in one
    thread never see another thread's transforms. ``stack`` holds every active transform;
    ``dynamic`` the staging mains (``make_jaxpr``/``jit`` stage every primitive bound inside,
    even ones whose arguments are all constants)."""

    def __init__(self) -> None:
        self.stack: list[MainTrace] = [_eval_main]
        self.dynamic: list[MainTrace] = [_eval_main]


_state = _TraceState()


def dynamic_main() -> MainTrace:
    """The innermost dynamic (staging) main of this thread; ``_eval_main`` when nothing stages."""
    return _state.dynamic[-1]


def is_eager() -> bool:
    """True when this thread stages nothing: primitives bound on concrete values run eagerly."""
    return _state.dynamic[-1] is _eval_main


# ---- the trace context -------------------------------------------------------------------------
# The options that change what tracing and the transformation rules produce (JAX's trace context):
# ``jax_enable_x64`` (default dtypes), ``jax_default_matmul_precision`` (dot_general/conv rules fill
# a None precision from it, when traced and when transposed or batched), ``jax_numpy_dtype_promotion``
# and ``jax_allow_f16_reductions`` (errors). Each thread may hold its own values (context managers),
# so jit's trace cache and every cache of transformed jaxprs (``cache_in_context``) key on it.

# True while promotion may be strict or f16 reductions refused in some thread (kept by the config
# listeners below): ``trace_context()`` then reads them, else returns at once
_odd_trace_config = False
_PROMOTION, _F16 = "jax_numpy_dtype_promotion", "jax_allow_f16_reductions"
_RANK = "jax_numpy_rank_promotion"


def trace_context() -> Any:
    """The trace context of the calling thread, hashable: ``jax_enable_x64`` alone while the
    other options have their defaults, else ``(x64, matmul precision, promotion mode, allow f16
    reductions, rank promotion)``."""
    prec = config.jax_default_matmul_precision
    if prec is None and not _odd_trace_config:
        return config.jax_enable_x64
    strict = dtypes.strict_promotion()
    f16 = bool(config.jax_allow_f16_reductions)
    rank = config.jax_numpy_rank_promotion
    if prec is None and not strict and f16 and rank == "allow":
        return config.jax_enable_x64
    return (config.jax_enable_x64, prec, "strict" if strict else "standard", f16, rank)


def _refresh_trace_config(promotion: Any = None, f16: Any = None, rank: Any = None) -> None:
    global _odd_trace_config
    promotion = config.global_value(_PROMOTION) if promotion is None else promotion
    f16 = config.global_value(_F16) if f16 is None else f16
    rank = config.global_value(_RANK) if rank is None else rank
    _odd_trace_config = (
        promotion == "strict"
        or not f16
        or rank != "allow"
        or config.overridden(_PROMOTION)
        or config.overridden(_F16)
        or config.overridden(_RANK)
    )


def _on_config_update(name: str, value: Any) -> None:
    # listeners run before the value is stored: pass the new one
    if name == _PROMOTION:
        _refresh_trace_config(promotion=value)
    elif name == _F16:
        _refresh_trace_config(f16=value)
    elif name == _RANK:
        _refresh_trace_config(rank=value)


def _on_config_override(name: str) -> None:
    if name in (_PROMOTION, _F16, _RANK):
        _refresh_trace_config()


config._listeners.append(_on_config_update)
config._override_listeners.append(_on_config_override)
_refresh_trace_config()

# the lru caches ``cache_in_context`` made (``fjax.clear_caches`` empties them)
context_caches: list = []


def cache_in_context(maxsize: int) -> Callable[[Callable], Callable]:
    """``functools.lru_cache(maxsize)`` for a function that transforms or traces jaxprs, whose
    result depends on the trace context as well as on its arguments (a transpose rule filling in
    the matmul precision, a rule making index constants of the default integer dtype): the cache
    key also holds the calling thread's ``trace_context()``, as JAX's caches of traced jaxprs do."""

    def deco(fn: Callable) -> Callable:
        cached = functools.lru_cache(maxsize=maxsize)(lambda ctx, *args, **kwargs: fn(*args, **kwargs))
        context_caches.append(cached)

        @functools.wraps(fn)
        def in_context(*args: Any, **kwargs: Any) -> Any:
            return cached(trace_context(), *args, **kwargs)

        in_context.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
        in_context.cache_info = cached.cache_info  # type: ignore[attr-defined]
        return in_context

    return deco


class OpaqueTraceState:
    """Which transform is innermost in this thread now (``get_opaque_trace_state``): equal to
    another only when taken under the same transform (also after it ended). Holds it weakly."""

    __slots__ = ("_main",)

    def __init__(self, main: MainTrace) -> None:
        self._main = weakref.ref(main)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OpaqueTraceState) and self._main is other._main

    def __hash__(self) -> int:
        return id(self._main)

    def __repr__(self) -> str:
        return f"OpaqueTraceState({self._main()!r})"


def get_opaque_trace_state(convention: Any = None) -> OpaqueTraceState:
    """An opaque token for the innermost active transform of this thread (JAX's "current
    trace"): libraries (flax) compare two to tell whether code runs under the same transform."""
    main = _state.stack[-1]
    if main.opaque is None:
        main.opaque = OpaqueTraceState(main)
    return main.opaque


@contextmanager
def new_main(trace_type: type, global_data: Any = None, debug_info: str = ""):
    """Push a new transform on this thread's trace stack for the duration of the block."""
    stack = _state.stack
    main = MainTrace(len(stack), trace_type, global_data, debug_info)
    stack.append(main)
    try:
        yield main
    finally:
        main.active = False
        stack.pop()


@contextmanager
def new_dynamic(main: MainTrace):
    """Make ``main`` the dynamic trace: every primitive bound inside is staged into it."""
    dyn = _state.dynamic
    dyn.append(main)
    try:
        yield
    finally:
        dyn.pop()


def _leaked_tracer_error(t: Tracer) -> UnexpectedTracerError:
    return UnexpectedTracerError(leaked_tracer_message(t))


def find_top_trace(xs: Sequence[Any], extra: MainTrace | None = None) -> Trace:
    top = _state.dynamic[-1]
    if extra is not None and extra.level > top.level:
        top = extra
    for x in xs:
        if isinstance(x, Tracer):
            m = x._trace.main
            if not m.active:
                raise _leaked_tracer_error(x)
            if m.level > top.level:
                top = m
    return top.trace_type(top)


def full_raise(trace: Trace, val: Any) -> Tracer:
    if not isinstance(val, Tracer):
        if not isinstance(val, Array):
            val = to_array(val)
        return trace.pure(val)
    level = trace.main.level
    vm = val._trace.main
    if vm is trace.main:
        return val
    if not vm.active:
        raise _leaked_tracer_error(val)
    if vm.level < level:
        return trace.lift(val)
    raise UnexpectedTracerError(
        f"Cannot lift a tracer from a higher-level transform ({vm}) into a lower one ({trace.main})."
    )


def full_lower(val: Any) -> Any:
    if isinstance(val, Tracer):
        return val.full_lower()
    return val


def bind(prim: Primitive, args: Sequence[Any], params: dict) -> Any:
    """Apply ``prim`` to ``args`` under the innermost active transform among them."""
    top_main = _state.dynamic[-1]
    axis_main = prim.axis_main(params) if prim.axis_main is not None else None
    for x in args:
        if isinstance(x, Tracer):
            break
    else:
        if top_main is _eval_main and axis_main is None:
            if placement_hook is not None:
                return eval_placed(prim, args, params)
            return eval_primitive(prim, args, params)
    trace = find_top_trace(args, axis_main)
    tracers = [full_raise(trace, a) for a in args]
    outs = trace.process_primitive(prim, tracers, params)
    if prim.multiple_results:
        return [full_lower(o) for o in outs]
    return full_lower(outs)


def bind1(prim: Primitive, *args: Any, **params: Any) -> Any:
    return bind(prim, args, params)


# ---------------------------------------------------------------------------------------------
# jaxprs


class Var:
    """A jaxpr variable; it is named only when printed."""

    __slots__ = ("aval", "count")
    _counter = itertools.count()

    def __init__(self, aval: ShapedArray):
        self.aval = aval
        self.count = next(Var._counter)

    def __repr__(self) -> str:
        return f"Var(id={self.count}):{self.aval.str_short()}"


class DropVar(Var):
    """An unused output binder, printed as ``_``."""

    __slots__ = ()


class Literal:
    """A scalar constant written inline in a jaxpr."""

    __slots__ = ("val", "aval", "_arr")

    def __init__(self, val: Any, aval: ShapedArray):
        self.val = val
        self.aval = aval
        self._arr = None

    def as_array(self) -> Array:
        """The literal as an Array of exactly its aval's dtype and weak type."""
        a = self._arr
        if a is None:
            v = self.val._value if isinstance(self.val, Array) else self.val
            a = self._arr = Array(np.asarray(v, dtype=self.aval.dtype), self.aval.weak_type)
        return a

    def __repr__(self) -> str:
        return f"Literal({self.val})"


Atom = Any  # Var | Literal


class JaxprEqn:
    """One equation: ``outvars = primitive[params] invars``."""

    __slots__ = ("primitive", "invars", "outvars", "params")

    def __init__(self, primitive: Primitive, invars: list, outvars: list, params: dict):
        self.primitive = primitive
        self.invars = invars
        self.outvars = outvars
        self.params = params

    def replace(self, **kw: Any) -> JaxprEqn:
        d = dict(primitive=self.primitive, invars=self.invars, outvars=self.outvars, params=self.params)
        d.update(kw)
        return JaxprEqn(**d)

    def __repr__(self) -> str:
        from fjax._core_pp import _Namer, pp_eqn  # noqa: PLC0415 - core is imported first

        return str(pp_eqn(self, _Namer(), 0))


class Jaxpr:
    """A typed, closed-under-variables program: constvars, invars, eqns, outvars."""

    __slots__ = ("constvars", "invars", "outvars", "eqns")

    def __init__(self, constvars: list, invars: list, outvars: list, eqns: list):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.eqns = list(eqns)

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.invars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.outvars]

    def __str__(self) -> str:
        from fjax._core_pp import pp_jaxpr  # noqa: PLC0415 - core is imported first

        return pp_jaxpr(self)

    __repr__ = __str__

    def pretty_print(self) -> str:
        return str(self)


class ClosedJaxpr:
    """A jaxpr together with the values of its constvars."""

    # ``compiled``: {backend name: (cache generation, callable or None, failed attempts)} set by
    # jit's compile hook, so a compiled program lives exactly as long as the jaxpr it was compiled from
    __slots__ = ("jaxpr", "consts", "compiled", "__weakref__")

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]):
        if len(jaxpr.constvars) != len(consts):
            raise ValueError("ClosedJaxpr: number of consts does not match constvars")
        self.jaxpr = jaxpr
        self.consts = list(consts)
        self.compiled: dict | None = None

    @property
    def in_avals(self) -> list[ShapedArray]:
        return self.jaxpr.in_avals

    @property
    def out_avals(self) -> list[ShapedArray]:
        return self.jaxpr.out_avals

    @property
    def eqns(self) -> list[JaxprEqn]:
        return self.jaxpr.eqns

    @property
    def literals(self) -> list:
        return self.consts

    def __str__(self) -> str:
        return str(self.jaxpr)

    __repr__ = __str__

    def pretty_print(self) -> str:
        return str(self.jaxpr)

    def __call__(self, *args: Any) -> list:
        return eval_jaxpr(self.jaxpr, self.consts, *args)


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args: Any) -> list:
    """Evaluate ``jaxpr`` by binding each equation under whatever transforms are active."""
    env: dict[Var, Any] = {}

    def read(v: Atom) -> Any:
        return v.as_array() if type(v) is Literal else env[v]

    for v, x in zip(jaxpr.constvars, consts):
        env[v] = x
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"eval_jaxpr: expected {len(jaxpr.invars)} arguments, got {len(args)}")
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        outs = bind(eqn.primitive, ins, eqn.params)
        if eqn.primitive.multiple_results:
            for v, o in zip(eqn.outvars, outs):
                env[v] = o
        else:
            env[eqn.outvars[0]] = outs
    return [read(v) for v in jaxpr.outvars]


def jaxpr_as_fun(closed: ClosedJaxpr) -> Callable:
    def fun(*args: Any) -> list:
        return eval_jaxpr(closed.jaxpr, closed.consts, *args)

    return fun


# ---------------------------------------------------------------------------------------------
# type checking


class JaxprTypeError(TypeError):
    """A jaxpr is ill-typed: a bug in the transform that built it."""


def check_jaxpr(jaxpr: Jaxpr) -> None:
    """Check that every variable is defined before use and every equation is well typed."""
    env: set = set()

    def read(x: Atom) -> ShapedArray:
        if type(x) is Literal:
            return x.aval
        if x not in env:
            raise JaxprTypeError(f"variable {x} used before it is defined in\n{jaxpr}")
        return x.aval

    def write(v: Var) -> None:
        if v in env:
            raise JaxprTypeError(f"variable {v} defined twice in\n{jaxpr}")
        env.add(v)

    for v in jaxpr.constvars:
        write(v)
    for v in jaxpr.invars:
        write(v)
    for eqn in jaxpr.eqns:
        in_avals = [read(x) for x in eqn.invars]
        rule = eqn.primitive.abstract_eval
        if rule is None:
            raise JaxprTypeError(f"primitive {eqn.primitive.name} has no abstract evaluation rule")
        out = rule(*in_avals, **eqn.params)
        outs = out if eqn.primitive.multiple_results else [out]
        if len(outs) != len(eqn.outvars):
            raise JaxprTypeError(f"{eqn.primitive.name}: {len(outs)} outputs but {len(eqn.outvars)} binders")
        for v, a in zip(eqn.outvars, outs):
            if not typematch(v.aval, a):
                raise JaxprTypeError(
                    f"{eqn.primitive.name}: binder has type {v.aval.str_short()} but the rule gives "
                    f"{a.str_short()}\nin equation {eqn}"
                )
            write(v)
    for x in jaxpr.outvars:
        read(x)


# ---------------------------------------------------------------------------------------------
# jaxpr helpers (pretty-printing is in fjax/_core_pp.py)


def _has_jaxpr(v: Any) -> bool:
    if isinstance(v, (Jaxpr, ClosedJaxpr)):
        return True
    return isinstance(v, tuple) and any(isinstance(e, (Jaxpr, ClosedJaxpr)) for e in v)


# ---------------------------------------------------------------------------------------------
# small helpers shared by the interpreters
