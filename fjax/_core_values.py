"""Values of fjax's core: the errors tracing raises, abstract values (``ShapedArray``), the
concrete ``Array``, the ``Tracer`` base class, and the conversions between them (``to_array``,
``get_aval``, ``concrete_or_error``).

Split from ``fjax/core.py`` for size. ``fjax.core`` re-exports every name defined here, and
code imports them from there. This module imports no fjax module but ``fjax.dtypes``, so
``core``, which imports it, still loads first.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

import numpy as np

from fjax import dtypes
from fjax.dtypes import kind as _dkind

# ---------------------------------------------------------------------------------------------
# errors


_ERROR_PAGE = "https://docs.jax.dev/en/latest/errors.html"


class _JAXErrorMixin:
    """Appends the link to the error's page of JAX's documentation, as every ``jax.errors`` class
    does (``...\nSee https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerBoolConversionError``)."""

    def __init__(self, message: str = "") -> None:
        super().__init__(f"{message}\nSee {_ERROR_PAGE}#jax.errors.{type(self).__name__}")  # type: ignore[call-arg]


class JAXTypeError(_JAXErrorMixin, TypeError):
    """Base of fjax's TypeErrors about tracing (``jax.errors.JAXTypeError``)."""


class JAXIndexError(_JAXErrorMixin, IndexError):
    """Base of fjax's IndexErrors about tracing (``jax.errors.JAXIndexError``)."""


class ConcretizationTypeError(JAXTypeError):
    """A traced value was used where a concrete (known at trace time) value is needed.

    Raised as JAX's, ``ConcretizationTypeError(tracer, context)`` (the message names the traced
    value, the context and where the value came from), or with a message of its own."""

    def __init__(self, tracer: Any, context: str = "") -> None:
        if isinstance(tracer, Tracer):
            tracer = (
                "Abstract tracer value encountered where concrete value is expected: "
                f"{tracer._error_repr()}\n{context}{tracer._origin_msg()}\n"
            )
        super().__init__(tracer)


class TracerBoolConversionError(ConcretizationTypeError):
    """``bool()`` (a Python ``if``/``while``) was applied to a traced value."""

    def __init__(self, tracer: Any) -> None:
        if isinstance(tracer, Tracer):
            tracer = f"Attempted boolean conversion of {tracer._error_repr()}.{tracer._origin_msg()}"
        JAXTypeError.__init__(self, tracer)


class TracerIntegerConversionError(JAXTypeError):
    """``operator.index`` (``__index__``: indexing a list, ``range``) was applied to a traced value.
    As in JAX it is not a ConcretizationTypeError, and ``int()`` raises that one instead."""

    def __init__(self, tracer: Any) -> None:
        if isinstance(tracer, Tracer):
            tracer = f"The __index__() method was called on {tracer._error_repr()}{tracer._origin_msg()}"
        super().__init__(tracer)


class TracerArrayConversionError(JAXTypeError):
    """``np.asarray`` was applied to a traced value."""

    def __init__(self, tracer: Any) -> None:
        if isinstance(tracer, Tracer):
            tracer = (
                "The numpy.ndarray conversion method __array__() was called on "
                f"{tracer._error_repr()}{tracer._origin_msg()}"
            )
        super().__init__(tracer)


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


def long_str(aval: Any) -> str:
    """``float32[2,3]``: JAX's default ``str_short`` (full dtype names), as its error messages
    print types (fjax's ``str_short`` writes jaxprs' ``f32[2,3]``)."""
    dt = getattr(aval, "dtype", None)
    if isinstance(dt, np.dtype) and hasattr(aval, "shape"):
        name = "float0" if dt == dtypes.float0 else dt.name
        return f"{name}[{','.join(map(str, aval.shape))}]"
    return aval.str_short()


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


def _long_name(dtype: np.dtype) -> str:
    return "float0" if dtype == dtypes.float0 else dtype.name


def _aval_dtype(dtype: Any) -> Any:
    # a numpy dtype, or the key dtype (the type of a key array, ``typeof(random.key(0))``; such
    # values are staged as their uint32 data, see ``fjax._prng``)
    if isinstance(dtype, dtypes.KeyDtype):
        return dtype
    return np.dtype(dtype)


class AbstractValue:
    """The base of abstract values (JAX's ``core.AbstractValue``): ``ShapedArray``, the token's
    and a ref's abstract types."""

    __slots__ = ()


class ShapedArray(AbstractValue):
    """The abstract value of an array: shape, dtype and whether it is weakly typed."""

    __slots__ = ("shape", "dtype", "weak_type")
    array_abstraction_level = 1

    def __init__(
        self, shape: Sequence[int], dtype: Any, weak_type: bool = False, *, sharding: Any = None, vma: Any = None
    ):
        # ``sharding``/``vma`` (JAX's sharding-in-types and varying manual axes) are accepted and not
        # kept: every fjax type is unsharded
        self.shape = tuple(shape)
        self.dtype = dtype if type(dtype) is np.dtype else _aval_dtype(dtype)
        self.weak_type = bool(weak_type)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    # ``sharding`` (the default device's) is attached by ``fjax.core``, beside the
    # ``default_sharding`` hook that ``fjax._devices`` sets

    def update(self, shape=None, dtype=None, weak_type=None) -> ShapedArray:
        return ShapedArray(
            self.shape if shape is None else shape,
            self.dtype if dtype is None else dtype,
            self.weak_type if weak_type is None else weak_type,
        )

    def strip_weak_type(self) -> ShapedArray:
        return ShapedArray(self.shape, self.dtype, False) if self.weak_type else self

    def to_tangent_aval(self) -> ShapedArray:
        """The aval of this one's tangents: itself for inexact dtypes, ``float0`` otherwise."""
        return self if _dkind(self.dtype) in "fc" else ShapedArray(self.shape, dtypes.float0, False)

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
        return f"ShapedArray({_long_name(self.dtype)}[{','.join(map(str, self.shape))}]{w})"

    def __str__(self) -> str:  # JAX's: the long dtype name, ``~`` marking a weak type
        return f"{'~' if self.weak_type else ''}{_long_name(self.dtype)}[{','.join(map(str, self.shape))}]"

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
    if op == "item assignment":  # JAX's words
        return TypeError(
            "JAX arrays are immutable and do not support in-place item assignment. Instead of x[idx] = y, use "
            "x = x.at[idx].set(y) or another .at[] method: "
            "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html"
        )
    return TypeError(
        f"fjax arrays are immutable: {op} is not supported. "
        "Use x.at[idx].set(value) (or .add/.multiply/...) to get an updated copy."
    )


def _scalar_value(v: np.ndarray) -> np.ndarray:
    """``v`` for float()/int()/complex(): JAX takes only rank-0 arrays (numpy's words differ)."""
    if v.ndim != 0:
        raise TypeError(f"Only scalar arrays can be converted to Python scalars; got arr.ndim={v.ndim}")
    return v


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

    # -- deletion (``x.delete()``, and buffers donated to ``jit``)
    def is_deleted(self) -> bool:
        return False

    def delete(self) -> None:
        """Free this array's buffer: any later use raises ``RuntimeError`` (its shape and dtype
        stay readable), as JAX's ``Array.delete``."""
        v = self._value
        Array._value.__set__(self, np.broadcast_to(np.zeros((), v.dtype), v.shape))  # (no data)
        self.__class__ = DeletedArray

    def unsafe_buffer_pointer(self) -> int:
        return int(self._value.ctypes.data)

    def item(self, *args) -> Any:
        return self._value.item(*args)

    def tolist(self) -> Any:
        return self._value.tolist()

    def __bool__(self) -> bool:
        return bool(self._value)

    def __float__(self) -> float:
        return float(_scalar_value(self._value))

    def __int__(self) -> int:
        return int(_scalar_value(self._value))

    def __complex__(self) -> complex:
        return complex(_scalar_value(self._value))

    def __index__(self) -> int:
        if not np.issubdtype(self._value.dtype, np.integer) or self._value.ndim:
            raise TypeError("Only integer scalar arrays can be converted to a scalar index.")
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


def array_method(x: Any) -> Any:
    """The ``__jax_array__`` (or ``__fjax_array__``) method of an array-like object that is not
    an array itself (flax's ``nnx.Variable``), or None: what jnp functions convert it with."""
    t = type(x)
    m = getattr(t, "__jax_array__", None) or getattr(t, "__fjax_array__", None)
    return None if m is None else m.__get__(x, t)


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
    conv = array_method(x)
    if conv is not None:
        v = conv()
        return v if isinstance(v, Tracer) else to_array(v, fn_name)
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
    """The concrete numpy value of ``x``, or JAX's ConcretizationTypeError (naming ``context``)
    if it is traced."""
    if isinstance(x, Tracer):
        val = x.to_concrete_value()
        if val is None:
            raise ConcretizationTypeError(x, context)
        return val
    if isinstance(x, Array):
        return x._value
    return x


def invalid_shape_error(shape: Sequence, context: str = "") -> TypeError:
    """JAX's TypeError for a shape that is not a sequence of concrete integers; for a traced size,
    its hint and where the size came from (``_origin_msg``)."""
    msg = f"Shapes must be 1D sequences of concrete values of integer type, got {tuple(shape)}."
    if context:
        msg += f" {context}."
    if any(isinstance(d, Tracer) and d.to_concrete_value() is None for d in shape):
        msg += "\nIf using `jit`, try using `static_argnums` or applying `jit` to smaller subfunctions."
        msg += "".join(d._origin_msg() for d in shape if isinstance(d, Tracer))
    return TypeError(msg)


def canonicalize_shape(shape: Sequence, context: str = "") -> tuple[int, ...]:
    """``shape`` as a tuple of ints, or JAX's ``invalid_shape_error`` for a size that is traced or
    not a number (lenient as fjax always was: an integral float is taken as its int)."""
    try:
        return tuple(int(d) for d in shape)
    except TypeError:  # (a traced size: ConcretizationTypeError, a TypeError)
        raise invalid_shape_error(tuple(shape), context) from None


def leaked_tracer_message(tracer: Any) -> str:
    """JAX 0.10.2's UnexpectedTracerError message for a tracer used after its trace ended."""
    kind = tracer._jax_class_name()
    msg = (
        "Encountered an unexpected tracer. A function transformed by JAX had a side effect, allowing for a "
        f"reference to an intermediate value with type {long_str(tracer.aval)} wrapped in a {kind} to escape the "
        "scope of the transformation.\nJAX transformations require that functions explicitly return their "
        "outputs, and disallow saving intermediate values to global state.\n"
    )
    src = getattr(tracer._trace.main.global_data, "traced_src", None)
    if src is not None:
        # (JAX then names the line that created the value; fjax's equations carry no source lines,
        # so those parts are empty, as JAX's are for an argument)
        bar = "-" * 30
        msg += (
            f"The function being traced when the value leaked was {src} traced for jit.\n{bar}\n"
            f"The leaked intermediate value was created on line . \n{bar}\n"
            "When the value was created, the final 5 stack frames (most recent last) excluding JAX-internal "
            f"frames were:\n{bar}\n\n{bar}\n\n"
        )
    return msg + (
        "To catch the leak earlier, try setting the environment variable JAX_CHECK_TRACER_LEAKS or using the "
        "`jax.checking_leaks` context manager."
    )


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

    def _error_repr(self) -> str:
        return f"traced array with shape {long_str(self.aval)}"

    def _origin_msg(self) -> str:
        """Where the traced value came from (which arguments of which traced function), as JAX's
        errors say it; the staging tracer knows (``partial_eval``), others say nothing."""
        return ""

    def __bool__(self) -> bool:
        v = self.to_concrete_value()
        if v is None:
            raise TracerBoolConversionError(self)
        return bool(v)

    def _concrete_scalar(self, fun: Callable) -> Any:
        v = self.to_concrete_value()
        if v is None:
            name = fun.__name__
            raise ConcretizationTypeError(
                self,
                f"The problem arose with the `{name}` function. If trying to convert the data type of a "
                f"value, try using `x.astype({name})` or `jnp.array(x, {name})` instead.",
            )
        return v

    def __float__(self) -> float:
        return float(self._concrete_scalar(float))

    def __int__(self) -> int:
        return int(self._concrete_scalar(int))

    def __complex__(self) -> complex:
        return complex(self._concrete_scalar(complex))

    def __index__(self) -> int:
        v = self.to_concrete_value()
        if v is None:
            raise TracerIntegerConversionError(self)
        return operator.index(np.asarray(v).item())

    def item(self) -> Any:
        return np.asarray(concrete_or_error(self, f"The item() method was called on {self._error_repr()}.")).item()

    def tolist(self) -> Any:
        v = self.to_concrete_value()
        if v is None:
            # JAX names the origin twice: in its context and after it
            raise ConcretizationTypeError(
                self, f"The tolist() method was called on {self._error_repr()}.{self._origin_msg()}"
            )
        return np.asarray(v).tolist()

    def __array__(self, dtype=None, copy=None):
        v = self.to_concrete_value()
        if v is None:
            raise TracerArrayConversionError(self)
        return np.asarray(v, dtype=dtype)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def _jax_class_name(self) -> str:
        """The name JAX's errors give this kind of tracer (``DynamicJaxprTracer`` for a staged one)."""
        return getattr(type(self), "jax_name", type(self).__name__)

    def __hash__(self):
        raise TypeError(f"unhashable type: '{self._jax_class_name()}'")

    def __format__(self, spec: str) -> str:
        if spec:
            raise TypeError(f"unsupported format string passed to {self._jax_class_name()}.__format__")
        return str(self)

    def __setitem__(self, idx, value):
        raise _array_type_error("item assignment")

    def __repr__(self) -> str:
        return f"Traced<{self.aval.str_short()}>with<{type(self._trace).__name__}>"

    def block_until_ready(self) -> Tracer:
        return self


class DeletedArray(Array):
    """An ``Array`` whose buffer was deleted (``delete()``, or donated to ``jit``): reading its
    values raises JAX's ``RuntimeError``; ``shape``/``dtype`` still answer."""

    __slots__ = ()

    @property
    def _value(self) -> np.ndarray:
        v = Array._value.__get__(self)
        raise RuntimeError(f"Array has been deleted with shape={_long_name(v.dtype)}[{','.join(map(str, v.shape))}].")

    @property
    def shape(self) -> tuple[int, ...]:
        return Array._value.__get__(self).shape

    @property
    def dtype(self) -> np.dtype:
        return Array._value.__get__(self).dtype

    @property
    def ndim(self) -> int:
        return Array._value.__get__(self).ndim

    @property
    def size(self) -> int:
        return Array._value.__get__(self).size

    @property
    def aval(self) -> ShapedArray:
        v = Array._value.__get__(self)
        return ShapedArray(v.shape, v.dtype, self.weak_type)

    def is_deleted(self) -> bool:
        return True

    def delete(self) -> None:
        return None
