"""Core of fjax: abstract values, the Array type, primitives and ``bind``, the trace stack,
jaxpr data structures, ``eval_jaxpr``, the jaxpr type checker and pretty-printer.

Transforms are interpreters (``Trace`` subclasses) over the same primitives. Each active
transform owns a ``MainTrace`` on the trace stack; its level orders nested transforms so that
tracers of different transforms never get confused (no perturbation confusion). ``bind`` finds
the highest-level trace among its arguments and lets that trace process the primitive; with no
tracer among the arguments and no dynamic (staging) trace, the primitive runs eagerly on numpy.
"""

from __future__ import annotations

import itertools
import operator
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from fjax import dtypes
from fjax.dtypes import kind as _dkind

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
# errors


class JAXTypeError(TypeError):
    """Base of fjax's TypeErrors about tracing (``jax.errors.JAXTypeError``)."""


class JAXIndexError(IndexError):
    """Base of fjax's IndexErrors about tracing (``jax.errors.JAXIndexError``)."""


class ConcretizationTypeError(JAXTypeError):
    """A traced value was used where a concrete (known at trace time) value is needed."""


class TracerBoolConversionError(ConcretizationTypeError):
    """``bool()`` (a Python ``if``/``while``) was applied to a traced value."""


class TracerIntegerConversionError(ConcretizationTypeError):
    """``int()``/``operator.index`` was applied to a traced value."""


class TracerArrayConversionError(JAXTypeError):
    """``np.asarray`` was applied to a traced value."""


class UnexpectedTracerError(JAXTypeError):
    """A tracer was used after the transform that created it had finished (a leaked tracer)."""


# ---------------------------------------------------------------------------------------------
# abstract values

_short_names = {
    "bool": "bool",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float16": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "float64": "f64",
    "complex64": "c64",
    "complex128": "c128",
}


def short_dtype_name(dtype: np.dtype) -> str:
    if dtype == dtypes.float0:
        return "float0"
    name = dtype.name
    short = _short_names.get(name)
    if short is None:
        # JAX's rule for the rest (ml_dtypes' low-precision types): float8_e4m3fn -> f8_e4m3fn,
        # int4 -> i4, uint2 -> u2
        short = _short_names[name] = name.replace("float", "f").replace("uint", "u").replace("int", "i")
    return short


def default_sharding() -> Any:
    """The sharding of a value placed on the default device; set by ``fjax._devices`` when it is
    imported (core imports nothing above it)."""
    raise RuntimeError("fjax._devices is not imported")


class ShapedArray:
    """The abstract value of an array: shape, dtype and whether it is weakly typed."""

    __slots__ = ("shape", "dtype", "weak_type")
    array_abstraction_level = 1

    def __init__(self, shape: Sequence[int], dtype: Any, weak_type: bool = False):
        self.shape = tuple(shape)
        self.dtype = dtype if type(dtype) is np.dtype else np.dtype(dtype)
        self.weak_type = bool(weak_type)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def sharding(self) -> Any:
        """Where values of this type live: the default device (``SingleDeviceSharding``)."""
        return default_sharding()

    def update(self, shape=None, dtype=None, weak_type=None) -> ShapedArray:
        return ShapedArray(
            self.shape if shape is None else shape,
            self.dtype if dtype is None else dtype,
            self.weak_type if weak_type is None else weak_type,
        )

    def strip_weak_type(self) -> ShapedArray:
        return ShapedArray(self.shape, self.dtype, False) if self.weak_type else self

    def str_short(self) -> str:
        return f"{short_dtype_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is ShapedArray
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.weak_type == other.weak_type
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self) -> str:
        w = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.dtype.name}[{','.join(map(str, self.shape))}]{w})"

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]


def typematch(a: ShapedArray, b: ShapedArray) -> bool:
    """Shape and dtype equality, ignoring weak types (as JAX's typecheck does)."""
    return a.shape == b.shape and a.dtype == b.dtype


# ---------------------------------------------------------------------------------------------
# the concrete Array


def _array_type_error(op: str) -> TypeError:
    return TypeError(
        f"fjax arrays are immutable: {op} is not supported. "
        "Use x.at[idx].set(value) (or .add/.multiply/...) to get an updated copy."
    )


class Array:
    """An immutable array: what eager fjax operations return. Wraps a read-only numpy array."""

    __slots__ = ("_value", "weak_type")
    __array_priority__ = 100

    def __init__(self, value: np.ndarray, weak_type: bool = False):
        # ``value`` must already be a canonical-dtype ndarray; it is frozen here.
        if value.flags.writeable:
            value.flags.writeable = False
        self._value = value
        self.weak_type = weak_type

    # -- metadata
    @property
    def shape(self) -> tuple[int, ...]:
        return self._value.shape

    @property
    def dtype(self) -> np.dtype:
        return self._value.dtype

    @property
    def ndim(self) -> int:
        return self._value.ndim

    @property
    def size(self) -> int:
        return self._value.size

    @property
    def nbytes(self) -> int:
        return self._value.nbytes

    @property
    def itemsize(self) -> int:
        return self._value.itemsize

    @property
    def aval(self) -> ShapedArray:
        v = self._value
        return ShapedArray(v.shape, v.dtype, self.weak_type)

    # -- conversion to host values
    def __array__(self, dtype=None, copy=None):
        v = self._value
        if dtype is not None and np.dtype(dtype) != v.dtype:
            return v.astype(dtype)
        if copy:
            return v.copy()
        return v

    def block_until_ready(self) -> Array:
        return self

    def copy_to_host_async(self) -> None:
        return None

    def item(self, *args) -> Any:
        return self._value.item(*args)

    def tolist(self) -> Any:
        return self._value.tolist()

    def __bool__(self) -> bool:
        return bool(self._value)

    def __float__(self) -> float:
        return float(self._value)

    def __int__(self) -> int:
        return int(self._value)

    def __complex__(self) -> complex:
        return complex(self._value)

    def __index__(self) -> int:
        if not np.issubdtype(self._value.dtype, np.integer) or self._value.ndim:
            raise TypeError(
                f"only integer scalar arrays can be converted to a scalar index, got {self.aval.str_short()}"
            )
        return operator.index(self._value.item())

    def __len__(self) -> int:
        if self._value.ndim == 0:
            raise TypeError("len() of unsized object")
        return self._value.shape[0]

    def __iter__(self):
        if self._value.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        w = self.weak_type
        return (Array(np.asarray(row), w) for row in self._value)

    def __hash__(self):
        raise TypeError("unhashable type: 'fjax.Array'")

    def __setitem__(self, idx, value):
        raise _array_type_error("item assignment")

    def __repr__(self) -> str:
        v = self._value
        prefix = "Array("
        if v.size == 0 and v.ndim > 0:
            body = f"[], shape={v.shape}"
        else:
            body = np.array2string(v, separator=", ", prefix=prefix, threshold=1000)
        w = ", weak_type=True" if self.weak_type else ""
        return f"{prefix}{body}, dtype={v.dtype.name}{w})"

    def __str__(self) -> str:
        return str(self._value)

    def __format__(self, spec: str) -> str:
        if self._value.ndim == 0:
            return format(self._value.item(), spec)
        return format(str(self), spec)

    def __reduce__(self):
        return (_rebuild_array, (np.array(self._value), self.weak_type))

    def __copy__(self) -> Array:
        return self

    def __deepcopy__(self, memo) -> Array:
        return self

    def copy(self) -> Array:
        return Array(self._value.copy(), self.weak_type)

    @property
    def __cuda_array_interface__(self):
        raise AttributeError("fjax CPU arrays have no __cuda_array_interface__")

    # devices(), .device and .sharding are attached by fjax._devices

    def is_fully_replicated(self) -> bool:
        return True


def _rebuild_array(value: np.ndarray, weak_type: bool) -> Array:
    return Array(value, weak_type)


# Python scalar types that are weakly typed
_python_scalar_types = (bool, int, float, complex)


def array_from_python_scalar(x: Any) -> Array:
    """A weakly typed 0-d Array for a Python bool/int/float/complex (bool is not weak)."""
    t = type(x)
    if t is bool:
        return Array(np.array(x, dtype=np.bool_), False)
    dtype = dtypes.dtype_of_python_scalar(x)
    if t is int:
        dtypes.check_python_int(x, dtype)
    return Array(np.array(x, dtype=dtype), True)


def to_array(x: Any, fn_name: str = "fjax") -> Array:
    """Convert an argument of a primitive to an ``Array`` (Python scalars become weakly typed)."""
    t = type(x)
    if t is Array:
        return x
    if t in _python_scalar_types:
        return array_from_python_scalar(x)
    if isinstance(x, (np.ndarray, np.generic)):
        if _dkind(x.dtype) in "OUSVMm" and x.dtype != dtypes.float0:
            raise TypeError(f"{fn_name}: arrays of dtype {x.dtype} are not supported by fjax")
        dt = dtypes.canonicalize_dtype(x.dtype)
        v = np.array(x, dtype=dt) if (dt != x.dtype or isinstance(x, np.generic)) else x
        if v is x:
            # never freeze the user's own array
            v = x.copy()
        return Array(v, False)
    if isinstance(x, Array):
        return x
    if hasattr(x, "__fjax_array__"):
        return to_array(x.__fjax_array__(), fn_name)
    if isinstance(x, Tracer):
        raise TypeError("to_array: got a Tracer")  # callers handle tracers before this
    raise TypeError(
        f"{fn_name}: argument of type {type(x).__name__} is not a valid fjax type "
        "(expected an fjax.Array, numpy array or Python scalar)"
    )


def is_arraylike(x: Any) -> bool:
    return isinstance(x, (Array, Tracer, np.ndarray, np.generic)) or type(x) in _python_scalar_types


def get_aval(x: Any) -> ShapedArray:
    """The abstract value of an Array, Tracer, numpy array or Python scalar."""
    if isinstance(x, Tracer):
        return x.aval
    if type(x) is Array:
        return x.aval
    return to_array(x).aval


def concrete_or_error(x: Any, context: str = "") -> Any:
    """The concrete numpy value of ``x``, or a ConcretizationTypeError if it is traced."""
    if isinstance(x, Tracer):
        val = x.to_concrete_value()
        if val is None:
            raise ConcretizationTypeError(
                f"Abstract tracer value encountered where a concrete value is expected: {x.aval.str_short()}"
                f"{' (' + context + ')' if context else ''}. The value of a traced array is not known at trace "
                "time; mark the argument static (static_argnums/static_argnames) or use a lax primitive "
                "that accepts traced values."
            )
        return val
    if isinstance(x, Array):
        return x._value
    return x


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


# Device placement (``fjax._placement``) sets this to a function ``(prim, args, params)`` run before
# a primitive is evaluated eagerly: it runs computations on arrays that live on a GPU, or are
# committed to a device, where they live, and returns ``NOT_HANDLED`` for the plain host case.
# None while nothing is placed and the default device is the host's (then eager evaluation costs
# nothing more than this check).
placement_hook: Callable | None = None
NOT_HANDLED = object()


def eval_placed(prim: Primitive, args: Sequence[Any], params: dict) -> Any:
    """Evaluate ``prim`` eagerly where its arguments are placed (``placement_hook``), else on the host."""
    hook = placement_hook
    if hook is not None:
        out = hook(prim, args, params)
        if out is not NOT_HANDLED:
            return out
    return eval_primitive(prim, args, params)


def eval_primitive(prim: Primitive, args: Sequence[Any], params: dict) -> Any:
    """Run ``prim`` eagerly: validate with its abstract-eval rule, compute with numpy.

    ``fjax._debug_nans`` rebinds this module global to a checking version while
    ``jax_debug_nans``/``jax_debug_infs`` is on, so callers look it up at call time."""
    arrs = [x if type(x) is Array else to_array(x, prim.name) for x in args]
    out_aval = prim.abstract_eval(*arrs, **params)
    out = prim.impl(*[a._value for a in arrs], **params)
    if prim.multiple_results:
        return [_wrap_out(o, a) for o, a in zip(out, out_aval)]
    return _wrap_out(out, out_aval)


def _wrap_out(out: Any, aval: ShapedArray) -> Array:
    if type(out) is not np.ndarray or out.dtype != aval.dtype:
        if aval.dtype == dtypes.float0:
            out = np.zeros(aval.shape, aval.dtype)
        else:
            out = np.asarray(out, dtype=aval.dtype)
    return Array(out, aval.weak_type)


class MainTrace:
    """One active transform on the trace stack."""

    __slots__ = ("level", "trace_type", "global_data", "active", "debug_info")

    def __init__(self, level: int, trace_type: type, global_data: Any = None, debug_info: str = ""):
        self.level = level
        self.trace_type = trace_type
        self.global_data = global_data
        self.active = True
        self.debug_info = debug_info

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
    main = t._trace.main
    what = main.debug_info or main.trace_type.__name__
    return UnexpectedTracerError(
        f"Encountered an unexpected tracer {t.aval.str_short()} from {what}, which has already finished. "
        "A traced value escaped its transform (for example it was stored in a global, a closure or an "
        "attribute of an object while tracing). Return the value from the transformed function instead."
    )


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
# tracers


class Tracer:
    """A value being traced by a transform. Array methods and operators are added by fjax.numpy."""

    __slots__ = ("_trace",)
    __array_priority__ = 1000

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return self.aval.ndim

    @property
    def size(self) -> int:
        return self.aval.size

    @property
    def weak_type(self) -> bool:
        return self.aval.weak_type

    def full_lower(self) -> Any:
        return self

    def to_concrete_value(self) -> np.ndarray | None:
        """The value if it is known at trace time (e.g. the primal of a JVP), else None."""
        return None

    def _describe(self) -> str:
        main = self._trace.main
        what = main.debug_info or main.trace_type.__name__
        return f"traced array with shape {self.aval.str_short()} (while tracing {what})"

    def __bool__(self) -> bool:
        v = self.to_concrete_value()
        if v is None:
            raise TracerBoolConversionError(
                f"Attempted boolean conversion of {self._describe()}. The truth value of a traced array "
                "is not known at trace time, so a Python `if`/`while`/`and`/`or` on it cannot be staged. "
                "Use lax.cond, lax.switch or jnp.where for a value-dependent branch (lax.while_loop for a "
                "loop), or mark the argument static with static_argnums/static_argnames."
            )
        return bool(v)

    def _concrete_scalar(self, kind: str, err: type) -> Any:
        v = self.to_concrete_value()
        if v is None:
            raise err(
                f"{kind}() conversion of {self._describe()}: the value is not known at trace time. "
                "Mark the argument static with static_argnums/static_argnames, or keep it as an array."
            )
        return v

    def __float__(self) -> float:
        return float(self._concrete_scalar("float", ConcretizationTypeError))

    def __int__(self) -> int:
        return int(self._concrete_scalar("int", TracerIntegerConversionError))

    def __complex__(self) -> complex:
        return complex(self._concrete_scalar("complex", ConcretizationTypeError))

    def __index__(self) -> int:
        return operator.index(self._concrete_scalar("index", TracerIntegerConversionError).item())

    def item(self) -> Any:
        return self._concrete_scalar("item", ConcretizationTypeError).item()

    def tolist(self) -> Any:
        return self._concrete_scalar("tolist", ConcretizationTypeError).tolist()

    def __array__(self, dtype=None, copy=None):
        v = self.to_concrete_value()
        if v is None:
            raise TracerArrayConversionError(
                f"The numpy.ndarray conversion method __array__() was called on {self._describe()}. "
                "numpy functions cannot be applied to traced values: use fjax.numpy instead."
            )
        return np.asarray(v, dtype=dtype)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self):
        raise TypeError(f"unhashable type: {type(self).__name__}")

    def __setitem__(self, idx, value):
        raise _array_type_error("item assignment")

    def __repr__(self) -> str:
        return f"Traced<{self.aval.str_short()}>with<{type(self._trace).__name__}>"

    def block_until_ready(self) -> Tracer:
        return self


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
