"""Dtypes and JAX-style type promotion.

fjax supports bool, int8/16/32/64, uint8/16/32/64, bfloat16, float16/32/64 and complex64/128,
plus JAX's low-precision dtypes that the installed ml_dtypes provides (:data:`low_precision_dtypes`:
the float8/float6/float4 types and int1/2/4, uint1/2/4).  bfloat16 and these are ml_dtypes'
numpy extension dtypes (as in JAX), whose numpy ``kind`` is mostly ``'V'``, so fjax code asks
:func:`kind` (``'f'``, ``'i'`` or ``'u'`` for them) instead of reading ``dtype.kind``.
With ``config.jax_enable_x64`` off (the default) the 64-bit types are *canonicalized* to their
32-bit counterparts (int64->int32, uint64->uint32, float64->float32, complex128->complex64).

Type promotion follows JAX: the result dtype of an operation is the least upper bound of its
inputs on the lattice below, where ``i*``, ``f*`` and ``c*`` are the *weak* kinds of Python
``int``, ``float`` and ``complex`` scalars (and of weakly typed arrays)::

    b1 -> i*;  i* -> u8, i8;  u8 -> i16, u16;  u16 -> i32, u32;  u32 -> i64, u64;  u64 -> f*
    i8 -> i16 -> i32 -> i64 -> f*;  f* -> f16, bf16, c*;  f16 -> f32;  bf16 -> f32 -> f64 -> c128;  f32 -> c64
    c* -> c64 -> c128
    i* -> int1/2/4, uint1/2/4;  f* -> each float8/float6/float4 type  (no edges above these)

(with x64 off JAX replaces ``u32 -> i64`` by ``u32 -> i32``; this only shows in :func:`promote_types`,
since result_type canonicalizes int64 to int32 anyway).

The rules used by :func:`result_type` (checked against JAX 0.10.2, see
``tests/data/promotion_table.json``):

1. Every input dtype is canonicalized first.
2. One input: its dtype and weak flag are kept.
3. Several inputs, *all* weakly typed: the join of their (strong) dtypes, weakly typed.
4. Otherwise each weakly typed non-bool input stands for its weak kind (weak unsigned arrays
   count as ``i*``) and the result is weak iff the join is a weak kind.
5. A weakly typed result is widened to the default dtype of its kind (int32/uint32/float32/
   complex64, or the 64-bit types under x64), so e.g. a weak ``int8`` becomes a weak ``int32``;
   ``bool`` is never weak.  Finally the result is canonicalized.

Strict promotion (``jax.numpy_dtype_promotion("strict")`` / config ``jax_numpy_dtype_promotion``)
uses a lattice without edges between concrete dtypes: ``i* -> f* -> c*``, ``i*`` below every
integer dtype, ``f*`` below every floating one and ``c*`` below every complex one (bool is
alone). Inputs of two different concrete dtypes, or a Python scalar of a higher kind than the
array's dtype (``int32 + 1.5``), raise :class:`TypePromotionError`; rule 3 does not apply.

As in JAX the low-precision dtypes have nothing above them, so they only combine with themselves,
bool and Python scalars of a kind below theirs (``float8 + 1.0`` is float8, ``int4 + 1`` is int4;
note that ``float8 + int32`` is float8 too, through ``i64 -> f*``); any other pair (``float8 +
float32``, ``int4 + int8``, ``int4 + 1.0``) has no least upper bound and raises
:class:`TypePromotionError` with JAX's message, even under standard promotion
(``tests/data/low_precision_promotion.json``).
"""

from __future__ import annotations

import functools
import os
import re
import sys
import warnings
from typing import Any

import ml_dtypes
import numpy as np

from fjax.config import config

__all__ = [
    "DTypeLike",
    "TypePromotionError",
    "bfloat16",
    "bool_",
    "canonicalize_dtype",
    "check_python_int",
    "complex64",
    "complex128",
    "default_complex_dtype",
    "default_float_dtype",
    "default_int_dtype",
    "default_uint_dtype",
    "dtype",
    "dtype_of_python_scalar",
    "finfo",
    "float0",
    "float16",
    "float32",
    "float64",
    "iinfo",
    "int8",
    "int16",
    "int32",
    "int64",
    "is_python_scalar",
    "is_weakly_typed",
    "issubdtype",
    "itemsize_bits",
    "kind",
    "low_precision_dtypes",
    "scalar_type_of",
    "promote_types",
    "result_type",
    "supported_dtypes",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
]

DTypeLike = str | type | np.dtype | None

iinfo = ml_dtypes.iinfo
#: ``np.finfo`` that also knows bfloat16 (``ml_dtypes.finfo``, which JAX's ``finfo`` is too)
finfo = ml_dtypes.finfo

bool_ = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
bfloat16 = ml_dtypes.bfloat16
complex64, complex128 = np.complex64, np.complex128

# JAX's low-precision dtypes, in JAX's order; those this ml_dtypes lacks (older versions) are left out
_LOW_FLOAT_NAMES = (
    "float8_e3m4", "float8_e4m3", "float8_e8m0fnu", "float8_e4m3b11fnuz", "float8_e4m3fn",
    "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn",
)  # fmt: skip
_INTN_NAMES = ("int1", "int2", "int4", "uint1", "uint2", "uint4")
_LOW_FLOATS: tuple[np.dtype, ...] = tuple(
    np.dtype(getattr(ml_dtypes, n)) for n in _LOW_FLOAT_NAMES if hasattr(ml_dtypes, n)
)
_INTNS: tuple[np.dtype, ...] = tuple(np.dtype(getattr(ml_dtypes, n)) for n in _INTN_NAMES if hasattr(ml_dtypes, n))
#: the float8/float6/float4 and 1/2/4-bit integer dtypes fjax supports (those ml_dtypes provides)
low_precision_dtypes: tuple[np.dtype, ...] = _LOW_FLOATS + _INTNS
#: bits per element of the dtypes whose itemsize (1 byte) says otherwise
_BITS: dict[np.dtype, int] = {dt: int(re.search(r"\d+", dt.name)[0]) for dt in low_precision_dtypes}

#: dtype of tangents/cotangents of integer and boolean primals: a zero-size void dtype.
float0: np.dtype = np.dtype([("float0", np.void, 0)])

_SUPPORTED_NAMES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "bfloat16", "float16", "float32", "float64", "complex64", "complex128",
    *(dt.name for dt in low_precision_dtypes),
)  # fmt: skip
#: The standard dtypes fjax arrays may have (float0 aside), in lattice order; arrays may also have
#: the :data:`low_precision_dtypes`, which (as in JAX) DLPack does not exchange
supported_dtypes: tuple[np.dtype, ...] = tuple(np.dtype(n) for n in _SUPPORTED_NAMES[:15])
_SUPPORTED: frozenset[np.dtype] = frozenset(supported_dtypes + low_precision_dtypes)

_B = np.dtype("bool")
_BF16 = np.dtype(bfloat16)
_I32, _I64 = np.dtype("int32"), np.dtype("int64")
_U32, _U64 = np.dtype("uint32"), np.dtype("uint64")
_F32, _F64 = np.dtype("float32"), np.dtype("float64")
_C64, _C128 = np.dtype("complex64"), np.dtype("complex128")

_TO_32BIT: dict[np.dtype, np.dtype] = {_I64: _I32, _U64: _U32, _F64: _F32, _C128: _C64}
#: default dtype of each kind as (x64 off, x64 on)
_DEFAULTS: dict[str, tuple[np.dtype, np.dtype]] = {
    "i": (_I32, _I64), "u": (_U32, _U64), "f": (_F32, _F64), "c": (_C64, _C128),
}  # fmt: skip

# Python scalar types -> (dtype before canonicalization, weak flag).  bool is never weak.
_PY_SCALAR_INFO: dict[type, tuple[np.dtype, bool]] = {
    bool: (_B, False),
    int: (_I64, True),
    float: (_F64, True),
    complex: (_C128, True),
}
_PY_SCALAR_TYPES = tuple(_PY_SCALAR_INFO)


#: kinds of the ml_dtypes dtypes, for which numpy says ``'V'`` (float8_e5m2 aside)
_ML_KINDS: dict[np.dtype, str] = {
    _BF16: "f",
    **{dt: "f" for dt in _LOW_FLOATS},
    **{dt: "u" if dt.name[0] == "u" else "i" for dt in _INTNS},
}


def kind(dt: np.dtype) -> str:
    """numpy's one-letter ``dt.kind``, except ``'f'`` for bfloat16 and the float8/6/4 dtypes and
    ``'i'``/``'u'`` for int1/2/4 and uint1/2/4 (numpy says ``'V'`` for these)."""
    k = dt.kind
    if k == "V":
        return _ML_KINDS.get(dt, k)
    return k


@functools.cache
def _extremes(dt: np.dtype) -> tuple[Any, Any]:
    """``(lowest, highest)`` value of the real dtype ``dt``: the identities of ``max`` and ``min``
    and the fills that lose to every element. ``-inf, inf`` for floating dtypes that hold them,
    else their finite extremes (float8_e4m3fn, the fnuz types, float8_e8m0fnu, float4/float6:
    there ``-inf`` would be NaN or saturate); ``iinfo``'s bounds for integers (ml_dtypes', which
    also knows int1/2/4); ``False, True`` for bool. Cached: one lookup per dtype."""
    dt = np.dtype(dt)
    k = kind(dt)
    if k == "b":
        return False, True
    if k in "iu":
        info = iinfo(dt)
        return int(info.min), int(info.max)
    if k != "f":
        raise ValueError(f"no ordering extremes for dtype {dt}")
    if np.isinf(np.array(np.inf).astype(dt).astype(np.float64)):
        return -np.inf, np.inf
    info = finfo(dt)
    return float(info.min), float(info.max)


def _x64() -> bool:
    return bool(config.jax_enable_x64)


class TypePromotionError(ValueError):
    """Raised when type promotion fails (``jax.dtypes.TypePromotionError``): under
    ``jax_numpy_dtype_promotion="strict"``, inputs with no implicit promotion path."""


_PROMOTION_MODES = ("standard", "strict")
#: True while strict promotion may be on in some thread: config ``jax_numpy_dtype_promotion`` is
#: "strict" globally, or some thread has a ``numpy_dtype_promotion`` block open (kept by config
#: listeners, so the promotion hot path reads one module global in the common case; when it is
#: True, ``strict_promotion()`` gives the calling thread's mode)
_STRICT = False


def _promotion_mode(value: Any) -> str:
    """The mode named by ``value`` ("standard"/"strict", or an enum whose ``.value`` is one)."""
    v = getattr(value, "value", value)
    if v not in _PROMOTION_MODES:
        raise ValueError(f"{value!r} is not a valid NumpyDtypePromotion")
    return v


def strict_promotion() -> bool:
    """Whether promotion is strict in the calling thread."""
    return _STRICT and _promotion_mode(config.jax_numpy_dtype_promotion) == "strict"


_OPTION = "jax_numpy_dtype_promotion"


def _validate(name: str, value: Any) -> None:
    if name == _OPTION:
        _promotion_mode(value)


def _refresh(global_value: Any) -> None:
    global _STRICT
    _STRICT = _promotion_mode(global_value) == "strict" or config.overridden(_OPTION)


def _on_update(name: str, value: Any) -> None:
    if name == _OPTION:
        _refresh(value)  # listeners run before the value is stored: pass the new one


def _on_override(name: str) -> None:
    if name == _OPTION:
        _refresh(config.global_value(_OPTION))


_refresh(config.global_value(_OPTION))
config._validators.append(_validate)
config._listeners.append(_on_update)
config._override_listeners.append(_on_override)


# --------------------------------------------------------------------------------------------
# The lattice
# --------------------------------------------------------------------------------------------

# Nodes are the supported dtypes plus the three weak kinds, which we name by Python type.
_Node = np.dtype | type
_WEAK_KINDS: tuple[type, ...] = (int, float, complex)


def _n(name: str) -> np.dtype:
    return np.dtype(name)


_EDGES: dict[_Node, tuple[_Node, ...]] = {
    _n("bool"): (int,),
    int: (_n("uint8"), _n("int8"), *_INTNS),
    _n("uint8"): (_n("int16"), _n("uint16")),
    _n("uint16"): (_n("int32"), _n("uint32")),
    _n("uint32"): (_n("int64"), _n("uint64")),
    _n("uint64"): (float,),
    _n("int8"): (_n("int16"),),
    _n("int16"): (_n("int32"),),
    _n("int32"): (_n("int64"),),
    _n("int64"): (float,),
    float: (_n("float16"), _BF16, complex, *_LOW_FLOATS),
    _n("float16"): (_n("float32"),),
    _BF16: (_n("float32"),),
    _n("float32"): (_n("float64"), _n("complex64")),
    _n("float64"): (_n("complex128"),),
    complex: (_n("complex64"),),
    _n("complex64"): (_n("complex128"),),
    _n("complex128"): (),
    **{dt: () for dt in low_precision_dtypes},
}


# With x64 off JAX uses a slightly different lattice in which uint32 sits below int32, so that
# promote_types(uint32, int8) is int32 rather than the int64 that x64 would then canonicalize away.
_EDGES_X32: dict[_Node, tuple[_Node, ...]] = {**_EDGES, _n("uint32"): (_n("int32"), _n("uint64"))}


def _upper_sets(edges: dict[_Node, tuple[_Node, ...]]) -> dict[_Node, frozenset[_Node]]:
    """For every node, the set of nodes >= it (reflexive-transitive closure of ``edges``)."""
    out: dict[_Node, frozenset[_Node]] = {}

    def visit(node: _Node) -> frozenset[_Node]:
        if node not in out:
            ups: set[_Node] = {node}
            for nxt in edges[node]:
                ups |= visit(nxt)
            out[node] = frozenset(ups)
        return out[node]

    for node in edges:
        visit(node)
    return out


def _make_join_table(edges: dict[_Node, tuple[_Node, ...]]) -> dict[tuple[_Node, _Node], _Node]:
    """Join of every pair of nodes; pairs without an upper bound (the low-precision dtypes) are absent."""
    upper = _upper_sets(edges)
    table: dict[tuple[_Node, _Node], _Node] = {}
    for a in edges:
        for b in edges:
            common = upper[a] & upper[b]
            if not common:
                continue
            # The least upper bound is the common bound below every other common bound.
            least = [c for c in common if common <= upper[c]]
            if len(least) != 1:  # pragma: no cover - guards edits to _EDGES
                raise AssertionError(f"type lattice has no unique join for {a} and {b}: {least}")
            table[a, b] = least[0]
    return table


#: join tables indexed by the x64 flag
_JOINS = (_make_join_table(_EDGES_X32), _make_join_table(_EDGES))


def _join(nodes: list[_Node], x64: bool) -> _Node:
    join = _JOINS[x64]
    out = nodes[0]
    try:
        for node in nodes[1:]:
            out = join[out, node]
    except KeyError:
        raise _no_join_error(nodes) from None
    return out


def _no_join_error(nodes: list[_Node]) -> TypePromotionError:
    """JAX's error for inputs without a least upper bound (only the low-precision dtypes lack one)."""
    names = tuple(str(n) for n in dict.fromkeys(nodes))
    bits = {_BITS.get(n) for n in nodes if isinstance(n, np.dtype) and n in _LOW_FLOATS}
    what, hint = "", "float32"
    for b in (8, 6, 4):
        if b in bits:
            what = f"{b}-bit floats"
            break
    else:
        if any(isinstance(n, np.dtype) and n in _INTNS for n in nodes):
            what, hint = "1-bit, 2-bit and 4-bit integers", "int32"
    if not what:  # pragma: no cover - the lattice has joins for everything else
        return TypePromotionError(
            f"Input dtypes {names} have no available implicit dtype promotion path. "
            "Try explicitly casting inputs to the desired output type."
        )
    return TypePromotionError(
        f"Input dtypes {names} have no available implicit dtype promotion path. To avoid unintended "
        f"promotion, {what} do not support implicit promotion. If you'd like your inputs to be promoted "
        f"to another type, you can do so explicitly using e.g. x.astype('{hint}')"
    )


_WEAK_RANK = {int: 0, float: 1, complex: 2}
#: the weak kinds below each concrete kind on the strict lattice
_STRICT_BELOW = {"b": (), "i": (int,), "u": (int,), "f": (int, float), "c": (int, float, complex)}


def _strict_join(nodes: list[_Node]) -> _Node:
    """Least upper bound on the strict lattice; TypePromotionError where there is none."""
    distinct = list(dict.fromkeys(nodes))
    if len(distinct) == 1:
        return distinct[0]
    concrete = [n for n in distinct if isinstance(n, np.dtype)]
    weak = [n for n in distinct if not isinstance(n, np.dtype)]
    if not concrete:
        return max(weak, key=_WEAK_RANK.__getitem__)
    if len(concrete) == 1:
        below = _STRICT_BELOW[kind(concrete[0])]
        if all(w in below for w in weak):
            return concrete[0]
    names = tuple(str(n) for n in distinct)
    raise TypePromotionError(
        f"Input dtypes {names} have no available implicit dtype promotion path when "
        "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired output type, "
        "or set jax_numpy_dtype_promotion=standard."
    )


# --------------------------------------------------------------------------------------------
# Canonicalization and dtype extraction
# --------------------------------------------------------------------------------------------


class _UnsupportedDtype(TypeError):
    pass


def _unsupported(value: Any, dt: Any) -> TypeError:
    return _UnsupportedDtype(
        f"fjax does not support dtype {dt!s} (of {value!r}); supported dtypes are {', '.join(_SUPPORTED_NAMES)}"
    )


def _checked(dt: np.dtype, value: Any = None, allow_float0: bool = True) -> np.dtype:
    """Return ``dt`` if fjax supports it, else raise TypeError naming it."""
    if dt in _SUPPORTED or (allow_float0 and dt == float0):
        return dt
    raise _unsupported(dt if value is None else value, dt)


def _canon(dt: np.dtype, x64: bool) -> np.dtype:
    return dt if x64 else _TO_32BIT.get(dt, dt)


def _as_np_dtype(x: Any) -> np.dtype:
    """np.dtype of a dtype-like (not a value); Python ``int``/``float``/``complex`` give 64-bit."""
    if isinstance(x, np.dtype):
        return x
    try:
        return np.dtype(x)
    except (TypeError, ValueError) as e:
        raise TypeError(str(e)) from e  # numpy's words ("data type 'nope' not understood"), as JAX passes on


_canon_cache: dict[tuple[Any, bool], np.dtype] = {}


def canonicalize_dtype(dtype: DTypeLike) -> np.dtype:
    """Return the np.dtype fjax actually uses for ``dtype`` under the current x64 setting.

    With x64 off, int64/uint64/float64/complex128 become int32/uint32/float32/complex64.
    Raises TypeError naming the dtype for anything fjax does not support (object, strings,
    datetimes, float128, non-native byte order, ...).  ``float0`` is returned unchanged.
    """
    x64 = _x64()
    try:
        return _canon_cache[dtype, x64]
    except (KeyError, TypeError):  # TypeError: unhashable dtype-like
        pass
    out = _canon(_checked(_as_np_dtype(dtype), dtype), x64)
    try:
        _canon_cache[dtype, x64] = out
    except TypeError:
        pass
    return out


_X64_WARNING = (
    "Explicitly requested dtype {}{} is not available, and will be truncated to dtype {}. To enable more "
    "dtypes, set the jax_enable_x64 configuration option or the JAX_ENABLE_X64 shell environment variable. "
    "See https://github.com/jax-ml/jax#current-gotchas for more."
)
_PY_SCALAR_TYPES = (bool, int, float, complex)
# co_filename prefix of fjax's own modules: a request made from them is internal and never warns
_FJAX_PREFIX = os.path.join(os.path.dirname(__file__), "")


def canonicalize_user_dtype(dtype: DTypeLike, fun_name: str, stacklevel: int = 2) -> np.dtype:
    """:func:`canonicalize_dtype` for a dtype a user passed to the public function ``fun_name``.

    As JAX does, with x64 off an explicitly requested 64-bit dtype (``float64``, ``int64``,
    ``uint64``, ``complex128``, as a numpy type, dtype, string or ``jnp`` scalar type; not a
    Python scalar type such as ``float``) warns ``UserWarning: Explicitly requested dtype float64
    requested in zeros is not available, and will be truncated to dtype float32. ...``.
    ``stacklevel`` is counted as for :func:`warnings.warn` called by this function's caller (2:
    the caller's caller, i.e. the user's line when the public function calls this directly).
    When that frame is inside fjax itself the request is internal and nothing is emitted.
    """
    x64 = _x64()
    key = (type(dtype), dtype, x64)  # the type too: np.dtype("float64") == float
    try:
        out, truncated = _user_canon_cache[key]
    except (KeyError, TypeError):  # TypeError: unhashable dtype-like
        try:
            out = canonicalize_dtype(dtype)
        except _UnsupportedDtype:  # JAX's words, naming the public function
            raise TypeError(
                f"JAX only supports number, bool, and string dtypes, got dtype {dtype} in {fun_name}"
            ) from None
        truncated = None
        if not x64 and not any(dtype is t for t in _PY_SCALAR_TYPES):
            requested = _as_np_dtype(getattr(dtype, "_np_type", dtype))
            truncated = requested if requested != out else None
        try:
            _user_canon_cache[key] = (out, truncated)
        except TypeError:
            pass
    if truncated is not None:
        warn_truncated_dtype(truncated, fun_name, stacklevel + 1)
    return out


#: (type, dtype-like, x64) -> (canonical dtype, the requested dtype when x64 truncates it, else None)
_user_canon_cache: dict[tuple[Any, Any, bool], tuple[np.dtype, np.dtype | None]] = {}


def warn_truncated_dtype(requested: np.dtype, fun_name: str, stacklevel: int = 2) -> None:
    """Emit JAX's "Explicitly requested dtype ... truncated" warning for ``requested`` (a 64-bit
    dtype, x64 off) at ``stacklevel`` (as for :func:`warnings.warn`), unless that frame is fjax's own."""
    try:
        frame = sys._getframe(stacklevel)
    except ValueError:
        frame = None
    if frame is not None and frame.f_code.co_filename.startswith(_FJAX_PREFIX):
        return
    name = f" requested in {fun_name}" if fun_name else ""
    if config.jax_explicit_x64_dtypes == 2:  # ExplicitX64Mode.ERROR (JAX's text, its missing space too)
        raise ValueError(
            f"Explicitly requested dtype {requested}{name} is not available. To enable more dtypes, set the "
            "jax_enable_x64 or allow_explicit_x64_dtypes configuration options.See "
            "https://github.com/jax-ml/jax#current-gotchas for more."
        )
    msg = _X64_WARNING.format(requested, name, _canon(requested, False).name)
    warnings.warn(msg, UserWarning, stacklevel=stacklevel + 1)


# Per-type fast paths for _dtype_and_weak: a (dtype, weak) tuple for Python scalar types,
# _STRONG_ARRAY for numpy arrays/scalars, _WEAK_ATTR for classes exposing .dtype and .weak_type.
_STRONG_ARRAY = 1
_WEAK_ATTR = 2
_type_kinds: dict[type, Any] = dict(_PY_SCALAR_INFO)


def _dtype_and_weak(x: Any) -> tuple[np.dtype, bool]:
    """(non-canonical dtype, weak flag) of a value or dtype-like, for result_type."""
    kind = _type_kinds.get(type(x))
    if kind is not None:
        if kind is _WEAK_ATTR:
            try:
                return x.dtype, bool(x.weak_type)
            except AttributeError:
                pass
        elif kind is _STRONG_ARRAY:
            return x.dtype, False
        else:
            return kind
    return _dtype_and_weak_slow(x)


def _dtype_and_weak_slow(x: Any) -> tuple[np.dtype, bool]:
    if isinstance(x, np.dtype):
        return x, False
    if isinstance(x, type):
        info = _PY_SCALAR_INFO.get(x)
        if info is not None:  # the Python types int/float/complex count as weak kinds
            return info
        return _as_np_dtype(x), False
    dt = getattr(x, "dtype", None)
    if isinstance(dt, KeyDtype) or isinstance(x, KeyDtype):  # key arrays, their avals and dtype
        return KEY_DTYPE, False
    if isinstance(dt, np.dtype):
        if isinstance(x, (np.ndarray, np.generic)):
            _type_kinds[type(x)] = _STRONG_ARRAY
        elif hasattr(x, "weak_type"):
            _type_kinds[type(x)] = _WEAK_ATTR
        return dt, _weak_attr(x)
    if isinstance(x, _PY_SCALAR_TYPES):  # subclasses of Python scalars, e.g. IntEnum
        for t in _PY_SCALAR_TYPES:
            if isinstance(x, t):
                return _PY_SCALAR_INFO[t]
    if x is None or isinstance(x, str):
        return _as_np_dtype(x), False
    raise TypeError(f"fjax: cannot determine dtype of {x!r}")


def _weak_attr(x: Any) -> bool:
    weak = getattr(x, "weak_type", None)
    if weak is None:
        aval = getattr(x, "aval", None)
        weak = getattr(aval, "weak_type", False)
    return bool(weak)


# --------------------------------------------------------------------------------------------
# result_type / promote_types
# --------------------------------------------------------------------------------------------


def _default_of_kind(dt: np.dtype, x64: bool) -> np.dtype:
    return _DEFAULTS[kind(dt)][x64]


def _node_to_dtype(node: _Node, x64: bool) -> tuple[np.dtype, bool]:
    if isinstance(node, np.dtype):
        return node, False
    return _DEFAULTS[{int: "i", float: "f", complex: "c"}[node]][x64], True


def _compute_result(pairs: tuple[tuple[np.dtype, bool], ...], x64: bool, strict: bool = False) -> tuple[np.dtype, bool]:
    """Uncached result_type on (dtype, weak) pairs; see the module docstring for the rules."""
    if not pairs:
        raise ValueError("fjax.dtypes.result_type: at least one array or dtype is required")
    if any(isinstance(dt, KeyDtype) for dt, _ in pairs):  # key arrays: only with one another
        if all(isinstance(dt, KeyDtype) for dt, _ in pairs):
            return KEY_DTYPE, False
        raise ValueError(f"dtype={KEY_DTYPE} is not a valid dtype for JAX type promotion.")
    canon = [(_canon(_checked(dt), x64), weak) for dt, weak in pairs]
    if any(dt == float0 for dt, _ in canon):
        if all(dt == float0 for dt, _ in canon):
            return float0, False
        raise TypeError(f"fjax: float0 cannot be promoted with other dtypes: {[d for d, _ in canon]}")
    if len(canon) == 1:
        out, weak = canon[0]
    elif all(weak for _, weak in canon) and not strict:
        out, weak = _node_to_dtype(_join([dt for dt, _ in canon], x64), x64)
        weak = True
    else:
        nodes: list[_Node] = []
        for dt, w in canon:
            if w and dt != _B:
                k = kind(dt)
                nodes.append(complex if k == "c" else float if k == "f" else int)
            else:
                nodes.append(dt)
        out, weak = _node_to_dtype(_strict_join(nodes) if strict else _join(nodes, x64), x64)
    if weak:
        if out == _B:
            weak = False
        else:
            out = _default_of_kind(out, x64)
    return _canon(out, x64), weak


_MAX_CACHED_ARGS = 4
_MAX_CACHE_ENTRIES = 65536
# indexed by x64, then (for strict promotion) x64 + 2
_rt_cache: tuple[dict[tuple, tuple[np.dtype, bool]], ...] = ({}, {}, {}, {})


def result_type(*args: Any, return_weak_type_flag: bool = False) -> np.dtype | tuple[np.dtype, bool]:
    """The dtype JAX would give the result of an operation on ``args``.

    ``args`` may be dtypes or dtype-likes (strings, numpy scalar types; the Python types
    ``int``/``float``/``complex`` count as weak kinds, ``bool`` as strong bool), Python scalars
    (weak, except bool), numpy arrays and scalars (strong), or any object with a ``.dtype`` and
    optionally a ``.weak_type`` (or ``.aval.weak_type``) attribute, such as fjax arrays, tracers
    and avals.  The result is canonicalized for the current x64 setting.  With
    ``return_weak_type_flag=True`` returns ``(dtype, weak_type)``.
    """
    x64 = _x64()
    strict = _STRICT and strict_promotion()
    if len(args) <= _MAX_CACHED_ARGS:
        key = tuple(map(_dtype_and_weak, args))
        cache = _rt_cache[x64 + 2 * strict]
        try:
            res = cache[key]
        except KeyError:
            res = _compute_result(key, x64, strict)
            if len(cache) >= _MAX_CACHE_ENTRIES:
                cache.clear()
            cache[key] = res
    else:
        res = _compute_result(tuple(map(_dtype_and_weak, args)), x64, strict)
    return res if return_weak_type_flag else res[0]


def _promote_node(x: Any) -> _Node:
    if isinstance(x, type) and x in _WEAK_KINDS:
        return x
    dt = _as_np_dtype(x)
    if dt not in _SUPPORTED:
        raise _unsupported(x, dt)
    return dt


_WEAK_KIND_AS_DTYPE: dict[type, np.dtype] = {int: _I64, float: _F64, complex: _C128}


def _promote(a: Any, b: Any, x64: bool, strict: bool = False) -> np.dtype:
    na, nb = _promote_node(a), _promote_node(b)
    out = _strict_join([na, nb]) if strict else _join([na, nb], x64)
    return out if isinstance(out, np.dtype) else _WEAK_KIND_AS_DTYPE[out]


_promote_cached = functools.lru_cache(maxsize=4096)(_promote)


def promote_types(a: DTypeLike, b: DTypeLike) -> np.dtype:
    """Join of two dtype-likes on the promotion lattice, like ``jnp.promote_types``.

    As in JAX the result is *not* canonicalized (``promote_types(int64, int8)`` is int64 even
    with x64 off).  The Python types ``int``/``float``/``complex`` are treated as weak kinds, and
    a weak-kind result is given as the 64-bit dtype of that kind (``promote_types(int, int)`` is
    int64).  With x64 off uint32 joins int8/int16/int32 to int32 (int64 under x64), as in JAX.
    Raises TypeError for unsupported dtypes, and TypePromotionError for different dtypes under
    strict promotion.
    """
    x64 = _x64()
    strict = _STRICT and strict_promotion()
    try:
        return _promote_cached(a, b, x64, strict)
    except TypeError:
        if _is_hashable(a) and _is_hashable(b):
            raise
    return _promote(a, b, x64, strict)


def _is_hashable(x: Any) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def default_int_dtype() -> np.dtype:
    """int64 under x64, else int32."""
    return _I64 if _x64() else _I32


def default_uint_dtype() -> np.dtype:
    """uint64 under x64, else uint32."""
    return _U64 if _x64() else _U32


def default_float_dtype() -> np.dtype:
    """float64 under x64, else float32."""
    return _F64 if _x64() else _F32


def default_complex_dtype() -> np.dtype:
    """complex128 under x64, else complex64."""
    return _C128 if _x64() else _C64


def is_python_scalar(x: Any) -> bool:
    """True for Python bool/int/float/complex values (and subclasses), False for numpy scalars."""
    return type(x) in _PY_SCALAR_INFO or (isinstance(x, _PY_SCALAR_TYPES) and not isinstance(x, np.generic))


def dtype_of_python_scalar(x: Any) -> np.dtype:
    """Canonical dtype a Python scalar value becomes: bool, or the default int/float/complex dtype."""
    if not is_python_scalar(x):
        raise TypeError(f"fjax: expected a Python bool, int, float or complex, got {type(x).__name__}")
    if isinstance(x, bool):
        return _B
    if isinstance(x, int):
        return default_int_dtype()
    if isinstance(x, float):
        return default_float_dtype()
    return default_complex_dtype()


def is_weakly_typed(x: Any) -> bool:
    """Whether the value ``x`` is weakly typed.

    Python int/float/complex values are; Python bools, numpy arrays and numpy scalars are not;
    other objects are if their ``weak_type`` (or ``aval.weak_type``) attribute is true.
    Types and dtypes are never weakly typed values.
    """
    if is_python_scalar(x):
        return not isinstance(x, bool)
    if isinstance(x, (type, np.dtype, np.ndarray, np.generic)):
        return False
    return _weak_attr(x)


def dtype(x: Any, canonicalize: bool = False) -> np.dtype:
    """np.dtype of a value or dtype-like.

    Python scalars and the Python types ``int``/``float``/``complex`` give the default dtype of
    their kind (int32/float32/complex64, or 64-bit under x64); ``bool`` gives bool.  Objects with
    a ``.dtype`` give that dtype; anything else is passed to ``np.dtype``.  With
    ``canonicalize=True`` the result is canonicalized.  Raises TypeError for unsupported dtypes
    (``float0`` is allowed).
    """
    if is_python_scalar(x):
        return dtype_of_python_scalar(x)
    if isinstance(x, type) and x in _PY_SCALAR_INFO:
        return _B if x is bool else _DEFAULTS[_PY_SCALAR_INFO[x][0].kind][_x64()]
    if isinstance(x, np.dtype):
        dt = x
    elif not isinstance(x, type) and isinstance(getattr(x, "dtype", None), np.dtype):
        dt = x.dtype
    elif x is None or isinstance(x, (str, type)):
        dt = _as_np_dtype(x)
    else:
        raise TypeError(f"fjax: cannot determine dtype of {x!r}")
    _checked(dt, x)
    return _canon(dt, _x64()) if canonicalize else dt


# numpy's abstract scalar types that the ml_dtypes dtypes belong to in JAX's hierarchy, by kind
# (numpy itself only puts them under np.generic)
_ML_PARENTS = {
    "f": (np.floating, np.inexact, np.number, np.generic),
    "i": (np.signedinteger, np.integer, np.number, np.generic),
    "u": (np.unsignedinteger, np.integer, np.number, np.generic),
}
_ML_BY_NAME: dict[str, np.dtype] = {dt.name: dt for dt in _ML_KINDS}


@functools.lru_cache(maxsize=1024)
def _issubdtype_cached(a: Any, b: Any) -> bool:
    ma = _ml_dtype(a)
    if ma is not None:
        return _ml_dtype(b) == ma or (isinstance(b, type) and b in _ML_PARENTS[_ML_KINDS[ma]])
    if _ml_dtype(b) is not None:
        return False
    return bool(np.issubdtype(a, b))


def _ml_dtype(x: Any) -> np.dtype | None:
    """The dtype if ``x`` names bfloat16 or a low-precision dtype (type, name or dtype), else None."""
    if isinstance(x, str):
        return _ML_BY_NAME.get(x)
    if isinstance(x, np.dtype):
        return x if x in _ML_KINDS else None
    if isinstance(x, type) and issubclass(x, np.generic) and not issubclass(x, (np.number, np.bool_)):
        dt = _ML_BY_NAME.get(getattr(x, "__name__", ""))
        return dt if dt is not None and dt.type is x else None
    return None


def issubdtype(a: Any, b: Any) -> bool:
    """``np.issubdtype`` semantics (``int``/``float``/``complex`` mean their 64-bit dtypes as in
    numpy, so ``issubdtype(int, np.integer)`` but not ``issubdtype(np.int8, int)``).  ``a`` may
    also be an object with a ``.dtype`` (an array)."""
    if not isinstance(a, (type, np.dtype, str)) and isinstance(getattr(a, "dtype", None), np.dtype):
        a = a.dtype
    if isinstance(a, KeyDtype) or a is KeyDtype:
        # typed PRNG keys: a subdtype of jax.dtypes.prng_key / extended and of themselves only
        return isinstance(b, KeyDtype) or (isinstance(b, type) and issubclass(KeyDtype.type, b))
    if isinstance(b, type) and issubclass(b, extended):
        return False
    try:
        return _issubdtype_cached(a, b)
    except TypeError:
        if _is_hashable(a) and _is_hashable(b):
            raise
    return bool(np.issubdtype(a, b))


def check_python_int(value: int, dtype: DTypeLike) -> int:
    """Check that the Python int ``value`` fits the (canonicalized) integer ``dtype``.

    Raises OverflowError like JAX, e.g. "Python int 3000000000 too large to convert to int32".
    For float/complex dtypes only ints too large for any float raise; bool never does.  Returns
    ``value`` unchanged.
    """
    dt = canonicalize_dtype(dtype)
    k = dt.kind  # numpy's: as in JAX, Python ints wrap around in int1/2/4 and uint1/2/4 unchecked
    if k in "iu":
        info = np.iinfo(dt)
        if not info.min <= value <= info.max:
            raise OverflowError(f"Python int {value} too large to convert to {dt}")
    elif k in "fc":
        try:
            float(value)
        except OverflowError:
            raise OverflowError(f"Python int {value} too large to convert to {dt}") from None
    return value


def itemsize_bits(dtype: DTypeLike) -> int:
    """Bits per element of ``dtype`` (as ``jax.dtypes.itemsize_bits``)."""
    if dtype is None:
        raise ValueError("dtype cannot be None.")
    dt = _as_np_dtype(dtype)
    return 1 if dt == _B else _BITS.get(dt, 8 * dt.itemsize)


def scalar_type_of(x: Any) -> type:
    """The Python scalar type (bool, int, float or complex) of the kind of ``x``'s dtype."""
    dt = dtype(x)
    k = kind(dt)
    if k == "b":
        return bool
    if k in "iu":
        return int
    if k == "f":
        return float
    if k == "c":
        return complex
    raise TypeError(f"Invalid scalar value {x}")


# typed PRNG keys (fjax._prng): jax.dtypes.extended / prng_key and the key dtype itself


class extended:  # noqa: N801 - jax.dtypes.extended
    """Marker class: the extended (non-numpy) dtypes, of which key dtypes are one kind."""


class prng_key(extended):  # noqa: N801 - jax.dtypes.prng_key
    """Marker class: ``jnp.issubdtype(keys.dtype, jax.dtypes.prng_key)`` is True for key arrays."""


class KeyDtype:
    """The dtype of typed key arrays (``key<fry>``: threefry2x32 keys of two uint32 words)."""

    name = "key<fry>"
    impl = "threefry2x32"
    type = prng_key
    kind = "V"
    itemsize = 8

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KeyDtype)

    def __hash__(self) -> int:
        return hash(KeyDtype)


KEY_DTYPE = KeyDtype()
