"""Array creation, dtypes and constants of ``fjax.numpy``.

``array``/``asarray`` follow JAX: Python scalars give weakly typed arrays, lists and tuples
(which may hold arrays and tracers) give strongly typed arrays whose dtype is the JAX
promotion of their leaves, and 64-bit numpy inputs are canonicalized. The scalar types
(``jnp.float32`` ...) are callable like JAX's: ``jnp.float32(1.0)`` is a 0-d fjax Array.
"""

from __future__ import annotations

import builtins
import math
import operator
import warnings
from typing import Any, Sequence

import numpy as np

from fjax import _out_sharding, core, dtypes
from fjax.core import Array, Tracer
from fjax.dtypes import kind as _dkind
from fjax.lax import lax, slicing
from fjax.lax.lax_wrappers import check_python_complex
from fjax.numpy._util import (
    broadcast_to_shape,
    canonicalize_axis,
    check_arraylike,
    promote_dtypes_inexact,
    to_fjax,
)

__all__ = [
    "arange", "array", "asarray", "bfloat16", "bool", "bool_", "can_cast", "cdouble", "complex128", "complex64",
    "complexfloating", "copy", "csingle", "diag", "diagonal", "double", "dtype", "e", "empty",
    "empty_like", "euler_gamma", "eye", "finfo", "float16", "float32", "float64", "floating",
    "from_dlpack", "full", "full_like", "generic", "geomspace", "half", "identity", "iinfo",
    "indices", "inexact", "inf", "int16", "int32", "int64", "int8", "int_", "integer", "isdtype",
    "issubdtype", "linspace", "logspace", "meshgrid", "nan", "ndarray", "newaxis", "number",
    "ones", "ones_like", "pi", "promote_types", "result_type", "signedinteger", "single", "tri",
    "tril", "triu", "uint", "uint16", "uint32", "uint64", "uint8", "unsignedinteger", "zeros",
    "zeros_like", "float_", "complex_",
]  # fmt: skip

# ---------------------------------------------------------------------------------------------
# constants and dtype utilities

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
euler_gamma = 0.5772156649015329
newaxis = None

dtype = np.dtype
iinfo = dtypes.iinfo
generic = np.generic
number = np.number
inexact = np.inexact
floating = np.floating
complexfloating = np.complexfloating
integer = np.integer
signedinteger = np.signedinteger
unsignedinteger = np.unsignedinteger


def finfo(dt: Any) -> np.finfo:
    """Machine limits of a floating dtype (or of the dtype of an array)."""
    return dtypes.finfo(dtypes.dtype(dt))


def result_type(*args: Any) -> np.dtype:
    """The dtype of the result of an operation on ``args``, with JAX's promotion rules.

    As JAX, with x64 off each 64-bit dtype given as a numpy type, dtype or string (not as a
    ``jnp`` scalar type) warns that it is truncated ("requested in dtype")."""
    for a in args:
        if isinstance(a, (np.dtype, str)) or (isinstance(a, type) and not isinstance(a, _ScalarMeta)):
            try:
                dtypes.canonicalize_user_dtype(a, "dtype")
            except TypeError:
                pass  # not a dtype fjax supports: dtypes.result_type raises its own error
    return dtypes.result_type(*args)


def promote_types(a: Any, b: Any) -> np.dtype:
    """The join of two dtypes on JAX's promotion lattice."""
    return dtypes.promote_types(a, b)


def issubdtype(arg1: Any, arg2: Any) -> bool:
    """numpy's ``issubdtype`` (also accepting fjax scalar types)."""
    return dtypes.issubdtype(_unwrap_type(arg1), _unwrap_type(arg2))


def can_cast(from_: Any, to: Any, casting: str = "safe") -> bool:
    """Whether a cast from ``from_`` to ``to`` is allowed under ``casting`` (numpy's rules)."""
    if isinstance(from_, (Array, Tracer)):
        from_ = from_.dtype
    return builtins.bool(np.can_cast(_unwrap_type(from_), _unwrap_type(to), casting))


_isdtype_kinds = {
    "bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
    "real floating": "f", "complex floating": "c", "numeric": "iufc",
}  # fmt: skip


def isdtype(dtype: Any, kind: Any) -> builtins.bool:
    """Array-API ``isdtype``: is ``dtype`` of ``kind`` (a dtype, a kind name, or a tuple of them)."""
    dtype = np.dtype(_unwrap_type(dtype))
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str):
            if k not in _isdtype_kinds:
                raise ValueError(f"Unrecognized kind: {k!r}")
            if _dkind(dtype) in _isdtype_kinds[k]:
                return True
        elif dtype == np.dtype(_unwrap_type(k)):
            return True
    return False


def _unwrap_type(t: Any) -> Any:
    return t._np_type if isinstance(t, _ScalarMeta) else t


# ---------------------------------------------------------------------------------------------
# scalar types


class _ScalarMeta(type):
    """Metaclass of ``jnp.float32`` etc.: calling one builds a 0-d (or n-d) fjax Array of that
    dtype; ``np.dtype(jnp.float32)`` works through the ``dtype`` class attribute."""

    dtype: np.dtype
    _np_type: type

    def __call__(cls, x: Any = 0) -> Any:
        # JAX's scalar types call jnp.asarray, whose name is in the x64 truncation warning
        return asarray(x, dtype=_canon_dtype_arg(cls.dtype, "asarray"))

    def __instancecheck__(cls, instance: Any) -> builtins.bool:
        return isinstance(instance, cls._np_type)

    def __eq__(cls, other: Any) -> builtins.bool:
        return cls is other or cls._np_type == _unwrap_type(other)

    def __ne__(cls, other: Any) -> builtins.bool:
        return not cls == other

    def __hash__(cls) -> int:
        return hash(cls._np_type)

    def __repr__(cls) -> str:
        return f"<class 'fjax.numpy.{cls.__name__}'>"


def _make_scalar_type(np_type: type, name: str | None = None) -> _ScalarMeta:
    name = name or np.dtype(np_type).name
    return _ScalarMeta(name, (object,), {"dtype": np.dtype(np_type), "_np_type": np_type, "__module__": "fjax.numpy"})


bool_ = _make_scalar_type(np.bool_, "bool_")
bool = bool_  # noqa: A001
int8 = _make_scalar_type(np.int8)
int16 = _make_scalar_type(np.int16)
int32 = _make_scalar_type(np.int32)
int64 = _make_scalar_type(np.int64)
uint8 = _make_scalar_type(np.uint8)
uint16 = _make_scalar_type(np.uint16)
uint32 = _make_scalar_type(np.uint32)
uint64 = _make_scalar_type(np.uint64)
float16 = _make_scalar_type(np.float16)
bfloat16 = _make_scalar_type(dtypes.bfloat16)
float32 = _make_scalar_type(np.float32)
float64 = _make_scalar_type(np.float64)
complex64 = _make_scalar_type(np.complex64)
complex128 = _make_scalar_type(np.complex128)
int_ = int64
uint = uint64
float_ = float64
complex_ = complex128
half, single, double = float16, float32, float64
csingle, cdouble = complex64, complex128
# JAX's float8/float6/float4 and 1/2/4-bit integer scalar types (jnp.float8_e4m3fn, jnp.int4, ...),
# those the installed ml_dtypes provides
for _dt in dtypes.low_precision_dtypes:
    globals()[_dt.name] = _make_scalar_type(_dt.type)
    __all__.append(_dt.name)  # noqa: PYI056
del _dt


class _ArrayMeta(type):
    """``isinstance(x, jnp.ndarray)`` is true for fjax Arrays, for tracers and for typed key
    arrays (arrays of a key dtype), as in JAX."""

    def __instancecheck__(cls, instance: Any) -> builtins.bool:
        from fjax._prng import PRNGKeyArray

        return isinstance(instance, (Array, Tracer, PRNGKeyArray))

    def __subclasscheck__(cls, subclass: type) -> builtins.bool:
        from fjax._prng import PRNGKeyArray

        return cls is subclass or issubclass(subclass, (Array, Tracer, PRNGKeyArray))


class ndarray(metaclass=_ArrayMeta):
    """The array type of fjax.numpy, for ``isinstance`` checks and annotations (see fjax.Array)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("jnp.ndarray cannot be instantiated; use jnp.array or jnp.zeros.")


# ---------------------------------------------------------------------------------------------
# array / asarray


def _canon_dtype_arg(dt: Any, fn: str, stacklevel: int = 2) -> np.dtype | None:
    """The canonical dtype of a user's ``dtype=`` argument to ``jnp.<fn>`` (None stays None),
    warning as JAX when a 64-bit dtype is truncated (x64 off); ``stacklevel`` as for
    :func:`warnings.warn` called by this function's caller (2: that public function's caller)."""
    if dt is None:
        return None
    return dtypes.canonicalize_user_dtype(_unwrap_type(dt), fn, stacklevel + 1)


def _leaves(obj: Any, out: list) -> None:
    for x in obj:
        if isinstance(x, (list, tuple)):
            _leaves(x, out)
        else:
            out.append(x)


def _not_a_jax_type(x: Any) -> TypeError:
    """JAX's error for a value (or list leaf) that is no number: named with numpy's dtype for it."""
    try:
        dt: Any = np.asarray(x).dtype
    except Exception:  # noqa: BLE001 - only a message is at stake
        dt = np.dtype(object)
    return TypeError(
        f"Value '{x}' with dtype {dt} is not a valid JAX array type. Only arrays of numeric types are supported by JAX."
    )


def _list_dtype(leaves: list) -> np.dtype:
    """The JAX dtype of a list of leaves: the promotion of their (weak) types, strong."""
    keys: dict = {}
    for x in leaves:
        t = type(x)
        if t in (builtins.bool, int, float, complex):
            keys.setdefault(t, t)
        elif isinstance(x, (Array, Tracer)):
            keys.setdefault((x.dtype, x.weak_type), x)
        elif isinstance(x, (np.ndarray, np.generic)):
            keys.setdefault(x.dtype, x.dtype)
        elif core.array_method(x) is not None:
            a = core.array_method(x)()
            keys.setdefault((a.dtype, a.weak_type), a)
        elif x is None:
            raise ValueError("None is not a valid value for jnp.array")
        else:
            raise _not_a_jax_type(x)
    if not keys:
        return dtypes.default_float_dtype()
    return dtypes.result_type(*keys.values())


def _stack_traced(items: list) -> Any:
    """Stack equally shaped arrays/tracers along a new leading axis with lax ops only."""
    n = len(items)
    shape = items[0].shape
    for it in items:
        if it.shape != shape:
            raise ValueError(f"jnp.array: inhomogeneous shapes in a nested sequence: {shape} and {it.shape}")
    out_shape = (n,) + shape
    dims = tuple(range(1, len(out_shape)))
    cases = [lax.broadcast_in_dim(it, out_shape, dims) for it in items]
    if n == 1:
        return cases[0]
    which = lax.broadcasted_iota(np.int32, out_shape, 0)
    if n <= 32:
        return lax.select_n(which, *cases)
    out = cases[0]
    for i in range(1, n):
        out = lax.select(lax.eq(which, Array(np.array(i, np.int32))), cases[i], out)
    return out


def _array_from_nested(obj: Any, dt: np.dtype) -> Any:
    """A strongly typed array of ``dt`` from a nested list/tuple containing tracers."""
    if isinstance(obj, (list, tuple)):
        if len(obj) == 0:
            return Array(np.zeros((0,), dt))
        return _stack_traced([_array_from_nested(o, dt) for o in obj])
    x = to_fjax(obj, "jnp.array")
    return lax.convert_element_type(x, dt)


def array(
    object: Any,
    dtype: Any = None,
    *args: Any,
    copy: builtins.bool = True,
    order: str | None = "K",  # noqa: A002
    ndmin: int = 0,
    device: Any = None,
    out_sharding: Any = None,
) -> Any:
    """Create an fjax array from an array, a Python scalar or a nested list/tuple of them.

    Python scalars give weakly typed arrays (as JAX); lists and tuples give strongly typed
    arrays of the promoted dtype of their elements; ``dtype`` forces (and strengthens) a dtype.
    ``out_sharding``: the result's sharding (fjax/_out_sharding.py). ``copy``, ``order`` and
    ``ndmin`` given positionally still work, with JAX's DeprecationWarning.
    """
    if args:
        if len(args) > 3:
            raise TypeError(f"array() takes at most 5 positional arguments but {len(args) + 2} were given")
        for i, name in enumerate(["copy", "order", "ndmin"]):
            if i < len(args) and [copy, order, ndmin][i] != [True, "K", 0][i]:
                raise TypeError(f"array() got multiple values for argument '{name}'")
        copy, order, ndmin = (list(args) + [copy, order, ndmin][len(args) :])[:3]
        warnings.warn(
            "Passing the copy, order, and ndmin arguments to jnp.array positionally is deprecated. Use keyword "
            "arguments instead.",
            DeprecationWarning,
            stacklevel=2,
        )
    if device is not None or out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.created(
            "jnp.array", device, out_sharding, array, object, dtype, copy=copy, order=order, ndmin=ndmin
        )
    del device
    if order is not None and order != "K":  # (JAX 0.10.2 refuses even 'C' and 'A')
        raise NotImplementedError("Only implemented for order='K'")
    if getattr(object, "dtype", None) is dtypes.KEY_DTYPE and hasattr(object, "_base"):
        # a typed key array stays one (as in JAX); a numeric dtype is refused by its astype
        return object.astype(dtype) if dtype is not None else object
    dt = _canon_dtype_arg(dtype, "array")
    t = type(object)
    if t is Array or isinstance(object, Tracer):
        out = object
        if dt is not None and (out.dtype != dt or out.weak_type):
            out = lax.convert_element_type(out, dt)
        elif copy and t is Array:
            out = Array(np.array(out._value), out.weak_type)
    elif t in (builtins.bool, int, float, complex):
        if dt is None:
            out = core.array_from_python_scalar(object)
        else:
            if t is int:
                if np.dtype(dt).kind in "iu" and -(2**63) <= object < 2**64:
                    # numpy's words (JAX converts with np.array); beyond 64 bits, JAX's own
                    info = np.iinfo(dt)
                    if not info.min <= object <= info.max:
                        raise OverflowError(f"Python integer {object} out of bounds for {dt}")
                dtypes.check_python_int(object, dt)
            check_python_complex(object, dt)
            out = Array(np.array(object).astype(dt))
    elif isinstance(object, (np.ndarray, np.generic)):
        src = object.dtype
        if _dkind(src) in "OUSVMm":
            raise TypeError(
                f"Value {object!r} with dtype {src} is not a valid fjax array type. "
                "Only arrays of numeric types are supported."
            )
        target = dt if dt is not None else dtypes.canonicalize_dtype(src)
        out = Array(np.array(object, dtype=target, copy=True))
    elif isinstance(object, (list, tuple)):
        leaves: list = []
        _leaves(object, leaves)
        target = dt if dt is not None else _list_dtype(leaves)
        if any(isinstance(x, Tracer) for x in leaves):
            out = _array_from_nested(object, target)
        else:
            conc = [x._value if type(x) is Array else x for x in leaves]
            if any(type(x) is not type(y) for x, y in zip(conc, leaves)) or any(
                core.array_method(x) is not None for x in leaves
            ):
                obj = _replace_leaves(object, iter(conc))
            else:
                obj = object
            try:
                val = np.array(obj, dtype=target)
            except OverflowError as err:
                raise OverflowError(str(err)) from None  # numpy's words, as JAX's
            out = Array(val)
    elif core.array_method(object) is not None:
        return array(core.array_method(object)(), dtype=dtype, copy=copy, ndmin=ndmin)
    elif hasattr(object, "__array__") or hasattr(object, "__array_interface__"):
        return array(np.asarray(object), dtype=dtype, copy=copy, ndmin=ndmin)
    elif object is None:
        raise ValueError("None is not a valid value for jnp.array")
    else:
        raise _not_a_jax_type(object)
    if ndmin > out.ndim:
        out = lax.broadcast_to_rank(out, ndmin)
    return out


def _replace_leaves(obj: Any, it: Any) -> Any:
    if isinstance(obj, (list, tuple)):
        return [_replace_leaves(o, it) for o in obj]
    v = next(it)
    if core.array_method(v) is not None:
        v = core.array_method(v)()
        v = v._value if type(v) is Array else v
    return v


def asarray(
    a: Any,
    dtype: Any = None,
    order: str | None = None,
    *,
    copy: builtins.bool | None = None,
    device: Any = None,
    out_sharding: Any = None,
) -> Any:
    """Convert ``a`` to an fjax array without copying when it already is one."""
    if order is not None and order != "K":  # (JAX 0.10.2 refuses even 'C' and 'A')
        raise NotImplementedError("Only implemented for order='K'")
    if device is not None or out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.created("jnp.asarray", device, out_sharding, asarray, a, dtype, order, copy=copy)
    if type(a) is Array or isinstance(a, Tracer):
        if dtype is None:
            return a
    dtype = _canon_dtype_arg(dtype, "asarray")
    return array(a, dtype=dtype, copy=builtins.bool(copy), order=order, device=device)


def copy(a: Any, order: str | None = None) -> Any:
    """A copy of ``a``."""
    return array(a, copy=True, order=order)


def from_dlpack(x: Any, /, *, device: Any = None, copy: Any = None) -> Any:
    """An fjax array from an object implementing the DLPack protocol (via numpy)."""
    return array(np.from_dlpack(x))


# ---------------------------------------------------------------------------------------------
# filled arrays


def _shape_arg(shape: Any, fn: str, nonnegative: bool = True) -> tuple[int, ...]:
    """``shape`` as a tuple of ints, refused with JAX's messages (its ``canonicalize_shape``, then
    the ``broadcast_in_dim`` that fills the array: a negative size is a TypeError there)."""
    if not isinstance(shape, (list, tuple, np.ndarray)) and not (isinstance(shape, (Array, Tracer)) and shape.ndim):
        shape = (shape,)  # one size, as JAX's canonicalize_shape takes it (a string included)
    try:
        out = tuple(operator.index(s) for s in shape)  # (a traced size: TracerIntegerConversionError)
    except TypeError:
        raise core.invalid_shape_error(tuple(shape)) from None
    if nonnegative:
        _check_nonnegative(out)
    return out


def _check_nonnegative(shape: tuple[int, ...]) -> None:
    if any(s < 0 for s in shape):
        raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got {shape}.")


def _default_dtype(dt: Any, default: np.dtype, fn: str) -> np.dtype:
    """:func:`_canon_dtype_arg` for a public function calling this directly, ``default`` for None."""
    return default if dt is None else _canon_dtype_arg(dt, fn, 3)


def zeros(shape: Any, dtype: Any = None, *, device: Any = None, out_sharding: Any = None) -> Any:
    """An array of zeros (float32 by default)."""
    if device is not None or out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.created("jnp.zeros", device, out_sharding, zeros, shape, dtype)
    return lax.full(_shape_arg(shape, "zeros"), 0, _default_dtype(dtype, dtypes.default_float_dtype(), "zeros"))


def ones(shape: Any, dtype: Any = None, *, device: Any = None, out_sharding: Any = None) -> Any:
    """An array of ones (float32 by default)."""
    if device is not None or out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.created("jnp.ones", device, out_sharding, ones, shape, dtype)
    return lax.full(_shape_arg(shape, "ones"), 1, _default_dtype(dtype, dtypes.default_float_dtype(), "ones"))


def empty(shape: Any, dtype: Any = None, *, device: Any = None, out_sharding: Any = None) -> Any:
    """An array of the given shape; fjax fills it with zeros."""
    if device is not None or out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.created("jnp.empty", device, out_sharding, empty, shape, dtype)
    return zeros(shape, _canon_dtype_arg(dtype, "empty"))


def full(shape: Any, fill_value: Any, dtype: Any = None, *, device: Any = None, out_sharding: Any = None) -> Any:
    """An array of ``shape`` filled with ``fill_value`` (which may be an array broadcast to it)."""
    if device is not None or out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.created("jnp.full", device, out_sharding, full, shape, fill_value, dtype)
    shape = _shape_arg(shape, "full", nonnegative=False)  # an array fill is broadcast first
    check_arraylike("full", fill_value)
    dt = _canon_dtype_arg(dtype, "full")
    if dt is not None:
        check_python_complex(fill_value, dt)
    if dtypes.is_python_scalar(fill_value):
        # not through to_fjax: JAX casts a Python int to the dtype with numpy (2**40 -> int32 wraps)
        _check_nonnegative(shape)
        return lax.full(shape, fill_value, dt)
    fv = to_fjax(fill_value, "full")
    if fv.ndim == 0:
        _check_nonnegative(shape)
        return lax.full(shape, fv, dt)
    if dt is not None:
        fv = lax.convert_element_type(fv, dt)
    return _broadcast_to(fv, shape)


def _broadcast_to(x: Any, shape: tuple[int, ...]) -> Any:
    # JAX's messages (jnp.broadcast_to's, as jnp.full and the *_like functions reach it)
    nd = len(shape)
    if x.ndim > nd:
        raise ValueError(f"Cannot broadcast to shape with fewer dimensions: arr_shape={x.shape} shape={tuple(shape)}")
    if any(d != 1 and d != s for d, s in zip(x.shape[::-1], shape[::-1])):
        dt = x.dtype.name if isinstance(x.dtype, np.dtype) else str(x.dtype)
        raise ValueError(
            f"Incompatible types for broadcasting: input type={dt}[{','.join(map(str, x.shape))}] and requested "
            f"type={dt}[{','.join(map(str, shape))}]"
        )
    _check_nonnegative(tuple(shape))
    return broadcast_to_shape(x, tuple(shape))


def _like_fill(a: Any, fill: Any, dtype: Any, shape: Any, fn: str) -> Any:
    if not isinstance(a, (Array, Tracer, np.ndarray)) and hasattr(a, "shape") and hasattr(a, "dtype"):
        # a ShapeDtypeStruct (or anything with shape and dtype), as JAX accepts
        a = core.ShapedArray(tuple(a.shape), np.dtype(a.dtype), bool(getattr(a, "weak_type", False)))
    else:
        check_arraylike(fn, a)
        a = to_fjax(a, fn)
    # JAX's empty_like names ones_like in its x64 truncation warning
    dt = _canon_dtype_arg(dtype, "ones_like" if fn == "empty_like" else fn, 3)
    shp = a.shape if shape is None else _shape_arg(shape, fn, nonnegative=False)
    weak = a.weak_type and dt is None
    target = a.dtype if dt is None else dt
    if isinstance(fill, Tracer) or (isinstance(fill, (Array, np.ndarray)) and fill.ndim):
        fv = lax._convert_element_type_weak(to_fjax(fill, fn), target, weak)
        return _broadcast_to(fv, shp)
    _check_nonnegative(shp)
    check_python_complex(fill, target)
    val = np.array(core.concrete_or_error(fill)).astype(target)
    return lax.broadcast_in_dim(Array(val, weak), shp, ())


def zeros_like(a: Any, dtype: Any = None, shape: Any = None, *, device: Any = None, out_sharding: Any = None) -> Any:
    """Zeros with the shape and dtype of ``a`` (weak type kept when ``dtype`` is not given)."""
    if device is not None or out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.created("jnp.zeros_like", device, out_sharding, zeros_like, a, dtype, shape)
    return _like_fill(a, 0, dtype, shape, "zeros_like")


def ones_like(a: Any, dtype: Any = None, shape: Any = None, *, device: Any = None, out_sharding: Any = None) -> Any:
    """Ones with the shape and dtype of ``a``."""
    if device is not None or out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.created("jnp.ones_like", device, out_sharding, ones_like, a, dtype, shape)
    return _like_fill(a, 1, dtype, shape, "ones_like")


def empty_like(prototype: Any, dtype: Any = None, shape: Any = None, *, device: Any = None) -> Any:
    """An array like ``prototype``; fjax fills it with zeros."""
    if device is not None:  # (put there as device_put puts it: fjax/_out_sharding.py)
        return _out_sharding.on_device(empty_like(prototype, dtype, shape, device=None), device)
    return _like_fill(prototype, 0, dtype, shape, "empty_like")


def full_like(
    a: Any, fill_value: Any, dtype: Any = None, shape: Any = None, *, device: Any = None, out_sharding: Any = None
) -> Any:
    """An array with the shape and dtype of ``a`` filled with ``fill_value``."""
    if device is not None or out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.created("jnp.full_like", device, out_sharding, full_like, a, fill_value, dtype, shape)
    check_arraylike("full_like", fill_value)
    return _like_fill(a, fill_value, dtype, shape, "full_like")


# ---------------------------------------------------------------------------------------------
# ranges


def _concrete_scalar(x: Any, fn: str, name: str) -> Any:
    if x is None:
        return None
    v = core.concrete_or_error(x, f"It arose in the jnp.{fn} argument '{name}'")
    if isinstance(v, np.ndarray):
        if v.ndim:
            raise ValueError(f"jnp.{fn}: arguments must be scalars, got shape {v.shape}")
        return v[()]
    return v


def arange(
    start: Any, stop: Any = None, step: Any = None, dtype: Any = None, *, device: Any = None, out_sharding: Any = None
) -> Any:
    """Evenly spaced values in [start, stop) (numpy semantics; arguments must be concrete).

    The default dtype is the JAX promotion of the arguments: int32 for Python ints, float32
    as soon as one is a float.
    """
    if device is not None or out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.created("jnp.arange", device, out_sharding, arange, start, stop, step, dtype)
    args = [a for a in (start, stop, step) if a is not None]
    for a in args:
        check_arraylike("arange", a)
    dt = _canon_dtype_arg(dtype, "arange")
    if dt is None:
        dt = dtypes.result_type(*args)
        if _dkind(dt) == "b":
            dt = dtypes.default_int_dtype()
    # (JAX names a lone argument 'stop')
    names = ("stop" if stop is None and step is None else "start", "stop", "step")
    vals = [_concrete_scalar(a, "arange", name) for a, name in zip((start, stop, step), names)]
    if vals[1] is None and vals[2] is None and _dkind(dt) in "iu" and _dkind(np.asarray(vals[0]).dtype) in "iub":
        n = builtins.max(int(vals[0]), 0)
        return lax.iota(dt, n)
    start_, stop_, step_ = vals
    if stop_ is None:
        start_, stop_ = 0, start_
    if step_ is None:
        step_ = 1
    with np.errstate(all="ignore"):
        out = np.arange(start_, stop_, step_, dtype=dt)
    return Array(out)


def linspace(
    start: Any,
    stop: Any,
    num: int = 50,
    endpoint: builtins.bool = True,
    retstep: builtins.bool = False,
    dtype: Any = None,
    axis: int = 0,
    *,
    device: Any = None,
) -> Any:
    """``num`` evenly spaced samples over [start, stop] (stop excluded if ``endpoint=False``)."""
    if device is not None:  # (put there as device_put puts it: fjax/_out_sharding.py)
        return _out_sharding.on_device(linspace(start, stop, num, endpoint, retstep, dtype, axis, device=None), device)
    num = operator.index(core.concrete_or_error(num, "'num' argument of jnp.linspace"))
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    check_arraylike("linspace", start, stop)
    dt = _canon_dtype_arg(dtype, "linspace")
    if dt is None:
        dt = dtypes.result_type(start, stop, float)
        dt = dtypes.canonicalize_dtype(dt)
    start, stop = promote_dtypes_inexact("linspace", start, stop)
    comp = dtypes.result_type(start, stop, dt if _dkind(dt) in "fc" else float)
    start = lax.convert_element_type(start, comp)
    stop = lax.convert_element_type(stop, comp)
    bshape = _bshape(start.shape, stop.shape)
    start_b = _broadcast_to(start, bshape)
    stop_b = _broadcast_to(stop, bshape)
    nd = len(bshape) + 1
    axis = canonicalize_axis(axis, nd, "linspace")
    out_shape = bshape[:axis] + (num,) + bshape[axis:]
    other = tuple(i for i in range(nd) if i != axis)
    div = (num - 1) if endpoint else num
    if num > 1:
        real = np.dtype(dtypes.finfo(comp).dtype)
        step = lax.div(lax.broadcasted_iota(real, out_shape, axis), Array(np.array(div, real)))
        step = lax.convert_element_type(step, comp)
        s = lax.broadcast_in_dim(start_b, out_shape, other)
        t = lax.broadcast_in_dim(stop_b, out_shape, other)
        one = Array(np.array(1, comp), True)
        out = lax.add(lax.mul(s, lax.sub(one, step)), lax.mul(t, step))
        delta = lax.div(lax.sub(stop_b, start_b), Array(np.array(div, comp), True))
    elif num == 1:
        out = lax.broadcast_in_dim(start_b, out_shape, other)
        delta = lax.full(bshape, np.nan, comp) if endpoint else lax.sub(stop_b, start_b)
    else:
        out = lax.full(out_shape, 0, comp)
        delta = lax.full(bshape, np.nan, comp)
    if _dkind(dt) in "iu" and _dkind(comp) != _dkind(dt):
        out = lax.floor(out)
    out = lax.convert_element_type(out, dt)
    if retstep:
        return out, delta
    return out


def _bshape(a: tuple, b: tuple) -> tuple:
    from fjax.numpy._util import broadcast_shapes  # noqa: PLC0415

    return broadcast_shapes("linspace", a, b)


def logspace(
    start: Any,
    stop: Any,
    num: int = 50,
    endpoint: builtins.bool = True,
    base: Any = 10.0,
    dtype: Any = None,
    axis: int = 0,
) -> Any:
    """``base ** linspace(start, stop, num)``."""
    from fjax.numpy._ufuncs import power  # noqa: PLC0415

    dt = _canon_dtype_arg(dtype, "logspace")
    if dt is None:
        dt = dtypes.canonicalize_dtype(dtypes.result_type(start, stop, float))
    comp = dtypes.result_type(dt, float) if _dkind(dt) not in "fc" else dt
    lin = linspace(start, stop, num, endpoint=endpoint, dtype=comp, axis=axis)
    out = power(lax.convert_element_type(to_fjax(base), comp) if not isinstance(base, float) else base, lin)
    return lax.convert_element_type(out, dt)


def geomspace(
    start: Any, stop: Any, num: int = 50, endpoint: builtins.bool = True, dtype: Any = None, axis: int = 0
) -> Any:
    """Numbers spaced evenly on a log scale between ``start`` and ``stop`` (same sign)."""
    from fjax.numpy import _ufuncs as uf  # noqa: PLC0415

    dt = _canon_dtype_arg(dtype, "geomspace")
    if dt is None:
        dt = dtypes.canonicalize_dtype(dtypes.result_type(start, stop, float))
    comp = dtypes.result_type(dt, float) if _dkind(dt) not in "fc" else dt
    start = lax.convert_element_type(to_fjax(start), comp)
    stop = lax.convert_element_type(to_fjax(stop), comp)
    sgn = uf.sign(start)
    res = uf.multiply(
        sgn,
        logspace(
            uf.log10(uf.divide(start, sgn)),
            uf.log10(uf.divide(stop, sgn)),
            num,
            endpoint=endpoint,
            base=10.0,
            dtype=comp,
            axis=axis,
        ),
    )
    return lax.convert_element_type(res, dt)


# ---------------------------------------------------------------------------------------------
# matrices


def _tri_mask(n: int, m: int, k: int, upper: builtins.bool = False) -> Any:
    i = lax.broadcasted_iota(np.int32, (n, m), 0)
    j = lax.broadcasted_iota(np.int32, (n, m), 1)
    ik = lax.add(i, Array(np.array(k, np.int32), True))
    return lax.le(ik, j) if upper else lax.ge(ik, j)


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None, *, device: Any = None) -> Any:
    """A 2-D array with ones on the ``k``-th diagonal and zeros elsewhere."""
    if device is not None:  # (put there as device_put puts it: fjax/_out_sharding.py)
        return _out_sharding.on_device(eye(N, M, k, dtype, device=None), device)
    n = _eye_dim(N, "N")
    m = n if M is None else _eye_dim(M, "M")
    if isinstance(k, (Array, Tracer)) and k.ndim == 0 and _dkind(k.dtype) in "iu":
        k_arr = lax.convert_element_type(k, np.int32)  # (a traced diagonal is fine, as JAX's)
    else:
        try:
            kv = builtins.min(builtins.max(operator.index(k), -(2**31)), 2**31 - 1)  # (clipped, as JAX's)
        except TypeError:
            raise ValueError(f"k must be a scalar integer; got {k}") from None
        k_arr = Array(np.array(kv, np.int32), True)
    if n < 0 or m < 0:  # (JAX names M as given: None when left out)
        raise ValueError(f"negative dimensions are not allowed, got {n} and {M if M is None else m}")
    dt = _default_dtype(dtype, dtypes.default_float_dtype(), "eye")
    i = lax.broadcasted_iota(np.int32, (n, m), 0)
    j = lax.broadcasted_iota(np.int32, (n, m), 1)
    mask = lax.eq(lax.add(i, k_arr), j)
    return lax.convert_element_type(mask, dt)


def _eye_dim(d: Any, name: str) -> int:
    try:
        return operator.index(d)  # (a traced size: TracerIntegerConversionError, a TypeError)
    except TypeError:
        raise core.invalid_shape_error((d,), f"argument of '{name}' jnp.eye()") from None


def identity(n: int, dtype: Any = None) -> Any:
    """The n x n identity matrix."""
    return eye(n, dtype=_canon_dtype_arg(dtype, "identity"))


def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Any:
    """Ones at and below the ``k``-th diagonal, zeros above."""
    m = N if M is None else M
    dt = _default_dtype(dtype, dtypes.default_float_dtype(), "tri")
    shape = core.canonicalize_shape((N, m))  # (traced sizes: JAX's shape error)
    return lax.convert_element_type(_tri_mask(*shape, operator.index(k)), dt)


def _tri_select(m: Any, k: int, upper: builtins.bool, fn: str) -> Any:
    check_arraylike(fn, m)
    m = to_fjax(m, fn)
    if m.ndim < 2:
        raise ValueError(f"Argument to jax.numpy.{fn} must be at least 2D")
    n, c = m.shape[-2:]
    mask = _tri_mask(n, c, int(k) if not upper else int(k), upper)
    mask = lax.broadcast_in_dim(mask, m.shape, (m.ndim - 2, m.ndim - 1))
    return lax.select(mask, m, lax.full_like(m, 0))


def tril(m: Any, k: int = 0) -> Any:
    """The lower triangle of (the last two axes of) ``m``: zero above the ``k``-th diagonal."""
    return _tri_select(m, k, False, "tril")


def triu(m: Any, k: int = 0) -> Any:
    """The upper triangle of (the last two axes of) ``m``: zero below the ``k``-th diagonal."""
    return _tri_select(m, k, True, "triu")


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """The ``offset``-th diagonal over ``axis1``/``axis2``, as the last axis of the result."""
    check_arraylike("diagonal", a)
    a = to_fjax(a, "diagonal")
    nd = a.ndim
    if nd < 2:
        raise ValueError("diagonal requires an array of at least two dimensions")
    a1 = canonicalize_axis(axis1, nd, "diagonal")
    a2 = canonicalize_axis(axis2, nd, "diagonal")
    if a1 == a2:
        raise ValueError("axis1 and axis2 must not be equal")
    perm = [i for i in range(nd) if i not in (a1, a2)] + [a1, a2]
    a = lax.transpose(a, perm)
    n, m = a.shape[-2:]
    offset = int(offset)
    rows = np.arange(builtins.max(0, -offset), builtins.min(n, m - offset) if m - offset > 0 else 0)
    rows = rows[rows < n]
    if rows.size == 0:
        return lax.full(a.shape[:-2] + (0,), 0, a.dtype)
    # keep the entries with col - row == offset and sum each row (one term is nonzero), then
    # take the rows that have one: O(n m) work, no gathers or pads (whose lowering is host-only
    # or, for large arrays, fails), and the derivative is a broadcast and a select
    k = rows.size
    batch = a.shape[:-2]
    nb = len(batch)
    mask = (np.arange(m)[None, :] - np.arange(n)[:, None]) == offset
    maskb = lax.broadcast_in_dim(Array(mask), a.shape, (nb, nb + 1))
    picked = lax.select(maskb, a, lax.full_like(a, 0))
    per_row = lax.reduce_or(picked, (nb + 1,)) if a.dtype == np.bool_ else lax.reduce_sum(picked, (nb + 1,))
    r0 = int(rows[0])
    if r0 == 0 and k == n:
        return per_row
    return slicing.slice(per_row, (0,) * nb + (r0,), batch + (r0 + k,))


def diag(v: Any, k: int = 0) -> Any:
    """Extract the ``k``-th diagonal of a 2-D array, or build a 2-D array with a 1-D ``v`` on it."""
    check_arraylike("diag", v)
    v = to_fjax(v, "diag")
    k = operator.index(k)  # (traced: JAX's TracerIntegerConversionError)
    if v.ndim == 1:
        n = v.shape[0]
        size = n + builtins.abs(k)
        i = lax.broadcasted_iota(np.int32, (size, size), 0)
        j = lax.broadcasted_iota(np.int32, (size, size), 1)
        on = lax.eq(lax.add(i, Array(np.array(k, np.int32), True)), j)
        # value at (i, j) on the diagonal is v[min(i, j)]; build it with a one-hot sum over v
        idx = lax.min(i, j)
        onehot = lax.eq(
            lax.broadcast_in_dim(idx, (size, size, n), (0, 1)), lax.broadcasted_iota(np.int32, (size, size, n), 2)
        )
        vb = lax.broadcast_in_dim(v, (size, size, n), (2,))
        zero = lax.full_like(vb, 0)
        picked = lax.select(onehot, vb, zero)
        vals = lax.reduce_or(picked, (2,)) if v.dtype == np.bool_ else lax.reduce_sum(picked, (2,))
        return lax.select(on, vals, lax.full_like(vals, 0))
    if v.ndim == 2:
        return diagonal(v, k)
    raise ValueError("diag input must be 1d or 2d")


def meshgrid(*xi: Any, copy: builtins.bool = True, sparse: builtins.bool = False, indexing: str = "xy") -> list:
    """Coordinate matrices from coordinate vectors (``indexing`` 'xy' or 'ij')."""
    check_arraylike("meshgrid", *xi)
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
    args = [to_fjax(x, "meshgrid") for x in xi]
    for a in args:
        if a.ndim != 1:
            raise ValueError(f"Arguments to jax.numpy.meshgrid must be 1D, got shape {a.shape}")
    if not args:
        return []
    nd = len(args)
    shape = [a.shape[0] for a in args]
    dim_of = list(range(nd))
    if indexing == "xy" and nd >= 2:
        shape[0], shape[1] = shape[1], shape[0]
        dim_of[0], dim_of[1] = 1, 0
    out = []
    for a, d in zip(args, dim_of):
        if sparse:
            s = [1] * nd
            s[d] = shape[d]
            out.append(lax.reshape(a, tuple(s)))
        else:
            out.append(lax.broadcast_in_dim(a, tuple(shape), (d,)))
    return out


def indices(dimensions: Sequence[int], dtype: Any = None, sparse: builtins.bool = False) -> Any:
    """An array of the indices of a grid of the given shape (stacked on a leading axis)."""
    dims = tuple(int(d) for d in dimensions)
    dt = _default_dtype(dtype, dtypes.default_int_dtype(), "indices")
    nd = len(dims)
    if sparse:
        out = []
        for i, d in enumerate(dims):
            s = [1] * nd
            s[i] = d
            out.append(lax.reshape(lax.iota(dt, d), tuple(s)))
        return tuple(out)
    if nd == 0:
        return lax.full((0,), 0, dt)
    return _stack_traced([lax.broadcasted_iota(dt, dims, i) for i in range(nd)])
