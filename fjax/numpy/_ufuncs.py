"""Elementwise functions of ``fjax.numpy`` (numpy's ufuncs), built on ``fjax.lax``.

Every function promotes its arguments with JAX's weak-type-aware rules
(``fjax.dtypes.result_type``), broadcasts them with numpy's rules and calls lax. Functions
that are only defined on inexact values (``sin``, ``sqrt``, ``divide``, ...) move integer and
boolean inputs to the default float dtype. Formulas that would give NaN gradients at valid
points (``logaddexp``, ``sinc``, ``hypot``, ...) are written with the "double where" idiom so
that ``fjax.grad`` works through them.

This module holds the unary functions, the arithmetic and the complex parts. The comparisons,
logical and bitwise functions, floating-point classification and ``where`` are in
``_ufuncs_logic.py`` and the promotion helpers in ``_ufuncs_promote.py``; every name of theirs
is imported from here (``fjax.numpy`` takes the names of ``__all__`` from this module).
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable

import numpy as np

from fjax import _debug_nans, dtypes
from fjax.core import Array, Tracer
from fjax.dtypes import kind as _dkind
from fjax.lax import lax
from fjax.lax._extra import complex as _lax_complex
from fjax.numpy._ufuncs_logic import (  # noqa: F401 - imported from here (fjax.numpy's * import too)
    _bool_full,
    _check_intb,
    _make_bitwise,
    _make_comparison,
    _make_logical,
    _to_bool,
    _where_keys,
    bitwise_and,
    bitwise_invert,
    bitwise_left_shift,
    bitwise_not,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    equal,
    greater,
    greater_equal,
    invert,
    isfinite,
    isinf,
    isnan,
    isneginf,
    isposinf,
    left_shift,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    nan_to_num,
    not_equal,
    right_shift,
    signbit,
    where,
)
from fjax.numpy._ufuncs_promote import (  # noqa: F401 - the promotion helpers, imported from here
    _arr_types,
    _const,
    _inexact1,
    _one,
    _ones_like,
    _promote2,
    _promote_inexact_n,
    _promote_n,
    _promote_numeric_n,
    _scalar_cache,
    _scalar_like,
    _set_doc,
    _zeros_like,
)
from fjax.numpy._util import (
    broadcast_shapes,
    broadcast_to_shape,
    check_arraylike,
    promote_dtypes_inexact,
    promote_dtypes_numeric,
)

__all__ = [
    "abs", "absolute", "acos", "acosh", "add", "angle", "arccos", "arccosh", "arcsin", "arcsinh",
    "arctan", "arctan2", "arctanh", "around", "asin", "asinh", "atan", "atan2", "atanh",
    "bitwise_and", "bitwise_invert", "bitwise_left_shift", "bitwise_not", "bitwise_or",
    "bitwise_right_shift", "bitwise_xor", "cbrt", "ceil", "clip", "conj", "conjugate", "copysign",
    "cos", "cosh", "deg2rad", "degrees", "divide", "divmod", "equal", "exp", "exp2", "expm1", "fix",
    "float_power", "floor", "floor_divide", "fmax", "fmin", "fmod", "frexp", "gcd", "greater",
    "greater_equal", "heaviside", "hypot", "imag", "invert", "isfinite", "isinf", "isnan",
    "isneginf", "isposinf", "lcm", "ldexp", "left_shift", "less", "less_equal", "log", "log10",
    "log1p", "log2", "logaddexp", "logaddexp2", "logical_and", "logical_not", "logical_or",
    "logical_xor", "maximum", "minimum", "mod", "multiply", "nan_to_num", "negative", "nextafter",
    "not_equal", "positive", "pow", "power", "rad2deg", "radians", "real", "reciprocal",
    "remainder", "right_shift", "rint", "round", "sign", "signbit", "sin", "sinc", "sinh", "sqrt",
    "square", "subtract", "tan", "tanh", "true_divide", "trunc", "where",
]  # fmt: skip

_builtin_abs = abs

# ---------------------------------------------------------------------------------------------
# unary functions


def _make_inexact_unary(name: str, lax_fn: Callable, doc: str) -> Callable:
    def fn(x: Any, /) -> Any:
        if not (isinstance(x, _arr_types) and _dkind(x.dtype) in "fc"):
            x = promote_dtypes_inexact(name, x)[0]
        return lax_fn(x)

    return _set_doc(fn, name, doc)


sqrt = _make_inexact_unary("sqrt", lax.sqrt, "Elementwise non-negative square root.")
cbrt = _make_inexact_unary("cbrt", lax.cbrt, "Elementwise cube root.")
exp = _make_inexact_unary("exp", lax.exp, "Elementwise exponential e**x.")
exp2 = _make_inexact_unary("exp2", lax.exp2, "Elementwise 2**x.")
expm1 = _make_inexact_unary("expm1", lax.expm1, "Elementwise e**x - 1, accurate near 0.")
log = _make_inexact_unary("log", lax.log, "Elementwise natural logarithm.")
log1p = _make_inexact_unary("log1p", lax.log1p, "Elementwise log(1 + x), accurate near 0.")
sin = _make_inexact_unary("sin", lax.sin, "Elementwise sine.")
cos = _make_inexact_unary("cos", lax.cos, "Elementwise cosine.")
tan = _make_inexact_unary("tan", lax.tan, "Elementwise tangent.")
arcsin = _make_inexact_unary("arcsin", lax.asin, "Elementwise inverse sine.")
arccos = _make_inexact_unary("arccos", lax.acos, "Elementwise inverse cosine.")
arctan = _make_inexact_unary("arctan", lax.atan, "Elementwise inverse tangent.")
sinh = _make_inexact_unary("sinh", lax.sinh, "Elementwise hyperbolic sine.")
cosh = _make_inexact_unary("cosh", lax.cosh, "Elementwise hyperbolic cosine.")
tanh = _make_inexact_unary("tanh", lax.tanh, "Elementwise hyperbolic tangent.")
arcsinh = _make_inexact_unary("arcsinh", lax.asinh, "Elementwise inverse hyperbolic sine.")
arccosh = _make_inexact_unary("arccosh", lax.acosh, "Elementwise inverse hyperbolic cosine.")
arctanh = _make_inexact_unary("arctanh", lax.atanh, "Elementwise inverse hyperbolic tangent.")
asin, acos, atan = arcsin, arccos, arctan
asinh, acosh, atanh = arcsinh, arccosh, arctanh


def log2(x: Any, /) -> Any:
    """Elementwise base-2 logarithm."""
    x = _inexact1("log2", x)
    if _dkind(x.dtype) == "c":
        return _scale_complex_log(x, 1.0 / math.log(2.0))
    # the divisor is strongly typed, so the result is too (as in JAX)
    return lax.div(lax.log(x), Array(np.array(math.log(2.0), x.dtype)))


def log10(x: Any, /) -> Any:
    """Elementwise base-10 logarithm."""
    x = _inexact1("log10", x)
    if _dkind(x.dtype) == "c":
        return _scale_complex_log(x, 1.0 / math.log(10.0))
    return lax.div(lax.log(x), Array(np.array(math.log(10.0), x.dtype)))


def _scale_complex_log(x: Any, scale: float) -> Any:
    # the parts are scaled apart, as JAX: a complex division would turn log(0) = -inf+0j into
    # -inf+nanj
    r = lax.log(x)
    re, im = lax.real(r), lax.imag(r)
    c = Array(np.array(scale, re.dtype))
    return _lax_complex(lax.mul(re, c), lax.mul(im, c))


def reciprocal(x: Any, /) -> Any:
    """Elementwise 1 / x (integers are promoted to float)."""
    x = _inexact1("reciprocal", x)
    return lax.integer_pow(x, -1)


def deg2rad(x: Any, /) -> Any:
    """Convert angles from degrees to radians."""
    x = _inexact1("deg2rad", x)
    return lax.mul(x, _const(x, math.pi / 180))


def rad2deg(x: Any, /) -> Any:
    """Convert angles from radians to degrees."""
    x = _inexact1("rad2deg", x)
    return lax.mul(x, _const(x, 180 / math.pi))


radians, degrees = deg2rad, rad2deg


def negative(x: Any, /) -> Any:
    """Elementwise -x."""
    x = _one("negative", x)
    return lax.neg(x)


def positive(x: Any, /) -> Any:
    """Elementwise +x (a copy of x)."""
    return _one("positive", x)


def absolute(x: Any, /) -> Any:
    """Elementwise absolute value (complex inputs give their real-typed magnitude)."""
    x = _one("absolute", x)
    if _dkind(x.dtype) in "ub":
        return x
    return _abs(x)


def _abs(x: Any) -> Any:
    """lax.abs keeping a weak type (lax's rule drops it because abs may change the dtype)."""
    out = lax.abs(x)
    if x.weak_type and _dkind(x.dtype) != "c":
        if type(out) is Array:
            return Array(out._value, True)
        return lax._convert_element_type_weak(out, out.dtype, True)
    return out


abs = absolute  # noqa: A001


def sign(x: Any, /) -> Any:
    """Elementwise sign: -1, 0 or 1 (x / |x| for complex)."""
    # lax.sign for complex values too, as JAX (x / |x| part by part; a zero derivative)
    return lax.sign(_one("sign", x))


def square(x: Any, /) -> Any:
    """Elementwise x * x."""
    x = promote_dtypes_numeric("square", x)[0] if not isinstance(x, _arr_types) or x.dtype == np.bool_ else x
    return lax.square(x)


def floor(x: Any, /) -> Any:
    """Elementwise floor (integers are returned unchanged)."""
    x = _one("floor", x)
    if _dkind(x.dtype) not in "fc":
        return x
    return lax.floor(x)


def ceil(x: Any, /) -> Any:
    """Elementwise ceiling (integers are returned unchanged)."""
    x = _one("ceil", x)
    if _dkind(x.dtype) not in "fc":
        return x
    return lax.ceil(x)


def trunc(x: Any) -> Any:
    """Elementwise rounding toward zero (integers are returned unchanged)."""
    x = _one("trunc", x)
    if _dkind(x.dtype) not in "fc":
        return x
    return lax.select(lax.lt(x, _const(x, 0)), lax.ceil(x), lax.floor(x))


fix = trunc


def rint(x: Any, /) -> Any:
    """Round to the nearest integer, halfway cases to even (integers become float; complex values
    have both parts rounded)."""
    x = _inexact1("rint", x)
    even = lax.RoundingMethod.TO_NEAREST_EVEN
    if _dkind(x.dtype) == "c":
        return _lax_complex(lax.round(lax.real(x), even), lax.round(lax.imag(x), even))
    return lax.round(x, even)


def round(a: Any, decimals: int = 0, out: Any = None) -> Any:  # noqa: A001
    """Round to ``decimals`` decimal places, halfway cases to even (as numpy)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.round is not supported.")
    a = _one("round", a)
    decimals = operator.index(decimals)  # a float is a TypeError, as in JAX
    if _dkind(a.dtype) in "iu":
        if decimals < 0:
            raise NotImplementedError("integer np.round not implemented for decimals < 0")
        return a
    if _dkind(a.dtype) == "b":
        # as JAX (which asks finfo(bool) for the precision)
        raise ValueError("data type <class 'numpy.bool'> not inexact")
    if decimals > np.log10(float(dtypes.finfo(a.dtype).max)):
        return a  # rounding beyond the precision of the dtype changes nothing
    if _dkind(a.dtype) == "c":
        return _lax_complex(_round_real(lax.real(a), decimals), _round_real(lax.imag(a), decimals))
    return _round_real(a, decimals)


def _round_real(a: Any, decimals: int) -> Any:
    even = lax.RoundingMethod.TO_NEAREST_EVEN
    if decimals == 0:
        return lax.round(a, even)
    dt = a.dtype
    if dt == np.float16:  # as JAX: float16 is scaled in float32, where 10**decimals is exact enough
        a = lax.convert_element_type(a, np.float32)
    factor = _const(a, 10.0**decimals)
    out = lax.div(lax.round(lax.mul(a, factor), even), factor)
    return lax.convert_element_type(out, dt) if dt == np.float16 else out


around = round


# ---------------------------------------------------------------------------------------------
# arithmetic


def add(x: Any, y: Any, /) -> Any:
    """Elementwise x + y (logical OR for booleans)."""
    x, y = _promote2("add", x, y)
    if x.dtype == np.bool_:
        return lax.bitwise_or(x, y)
    return lax.add(x, y)


def subtract(x: Any, y: Any, /) -> Any:
    """Elementwise x - y."""
    x, y = _promote2("subtract", x, y)
    return lax.sub(x, y)


def multiply(x: Any, y: Any, /) -> Any:
    """Elementwise x * y (logical AND for booleans)."""
    x, y = _promote2("multiply", x, y)
    if x.dtype == np.bool_:
        return lax.bitwise_and(x, y)
    return lax.mul(x, y)


def true_divide(x1: Any, x2: Any, /) -> Any:
    """Elementwise x / y; integer inputs are promoted to float."""
    xp, yp = _promote2("true_divide", x1, x2)
    if _dkind(xp.dtype) in "fc":
        return lax.div(xp, yp)
    # integer operands go to float directly (through their common integer dtype they could wrap)
    return lax.div(*_promote_inexact_n("true_divide", x1, x2))


divide = true_divide


def _float_divmod(x: Any, y: Any) -> tuple[Any, Any]:
    mod = lax.rem(x, y)
    # x / 0 keeps its sign (+-inf, as numpy and JAX), where (x - nan) / 0 would be nan
    div = lax.div(lax.sub(x, lax.select(lax.eq(y, _const(y, 0)), _zeros_like(mod), mod)), y)
    fix_ = lax.bitwise_and(lax.ne(mod, _const(mod, 0)), lax.ne(lax.sign(y), lax.sign(mod)))
    mod = lax.select(fix_, lax.add(mod, y), mod)
    div = lax.select(fix_, lax.sub(div, _const(div, 1)), div)
    return lax.round(div, lax.RoundingMethod.TO_NEAREST_EVEN), mod


def floor_divide(x1: Any, x2: Any, /) -> Any:
    """Elementwise floor(x / y), with numpy's semantics for integers and floats."""
    x1, x2 = _promote_numeric_n("floor_divide", x1, x2)
    dt = x1.dtype
    if _dkind(dt) == "u":
        return lax.div(x1, x2)
    if _dkind(dt) == "i":
        q = lax.div(x1, x2)
        r = lax.rem(x1, x2)
        adjust = lax.bitwise_and(lax.ne(lax.sign(x1), lax.sign(x2)), lax.ne(r, _const(r, 0)))
        return lax.select(adjust, lax.sub(q, _const(q, 1)), q)
    if _dkind(dt) == "c":
        raise TypeError("floor_divide does not support complex-valued inputs")
    return _float_divmod(x1, x2)[0]


def remainder(x1: Any, x2: Any, /) -> Any:
    """Elementwise remainder with the sign of the divisor (numpy's ``%``)."""
    x1, x2 = _promote_numeric_n("remainder", x1, x2)
    if _dkind(x1.dtype) == "c":
        raise TypeError("remainder does not support complex-valued inputs")
    x2 = _nonzero_int_divisor(x2)
    r = lax.rem(x1, x2)
    if _dkind(x1.dtype) == "u":
        return r
    zero = _const(r, 0)
    fix_ = lax.bitwise_and(lax.ne(r, zero), lax.ne(lax.lt(r, zero), lax.lt(x2, _const(x2, 0))))
    return lax.select(fix_, lax.add(r, x2), r)


mod = remainder


def divmod(x1: Any, x2: Any, /) -> tuple[Any, Any]:  # noqa: A001
    """(floor_divide(x, y), remainder(x, y))."""
    x1, x2 = _promote_numeric_n("divmod", x1, x2)
    if _dkind(x1.dtype) == "f":
        return _float_divmod(x1, x2)
    return floor_divide(x1, x2), remainder(x1, x2)


def fmod(x1: Any, x2: Any, /) -> Any:
    """Elementwise remainder with the sign of the dividend (C's fmod)."""
    check_arraylike("fmod", x1, x2)
    # as JAX: only an integer common dtype has its zero divisors replaced; booleans are promoted to
    # int32 after that check, so fmod(True, False) is lax.rem(1, 0) == 1
    int_args = _dkind(dtypes.result_type(x1, x2)) in "iu"
    x1, x2 = _promote_numeric_n("fmod", x1, x2)
    return lax.rem(x1, _nonzero_int_divisor(x2) if int_args else x2)


def _nonzero_int_divisor(y: Any) -> Any:
    """An integer divisor with its zeros replaced by ones, so ``x % 0`` is 0 (as JAX; lax.rem by
    0 gives x, numpy gives 0 with a warning)."""
    if _dkind(y.dtype) not in "iu":
        return y
    return lax.select(lax.eq(y, _const(y, 0)), _ones_like(y), y)


def _pow_int_int(x: Any, y: Any) -> Any:
    # binary exponentiation over the low bits of y (larger exponents overflow anyway)
    if x.shape != y.shape:
        shape = x.shape or y.shape
        x, y = (lax.broadcast_in_dim(v, shape, ()) if v.shape != shape else v for v in (x, y))
    zero, one = _const(y, 0), _const(y, 1)
    acc = lax.select(lax.bitwise_and(lax.eq(x, _const(x, 0)), lax.ne(y, zero)), _zeros_like(x), _ones_like(x))
    for _ in range(6 if x.dtype.itemsize <= 4 else 7):
        acc = lax.select(lax.ne(lax.bitwise_and(y, one), zero), lax.mul(acc, x), acc)
        x = lax.mul(x, x)
        y = lax.shift_right_logical(y, one)
    return acc


def power(x1: Any, x2: Any, /) -> Any:
    """Elementwise x ** y. A concrete integer exponent uses ``lax.integer_pow`` (exact
    repeated multiplication, as JAX does for ``x ** 2``); integer ** integer stays integer."""
    check_arraylike("power", x1, x2)
    if not isinstance(x2, Tracer) and (
        type(x2) is int
        or isinstance(x2, np.integer)
        or (type(x2) is Array and x2.ndim == 0 and _dkind(x2.dtype) in "iu")
    ):
        x1 = promote_dtypes_numeric("power", x1)[0]
        return lax.integer_pow(x1, int(x2))
    x1, x2 = _promote_numeric_n("power", x1, x2)
    if _dkind(x1.dtype) in "iu":
        return _pow_int_int(x1, x2)
    return lax.pow(x1, x2)


pow = power  # noqa: A001


def float_power(x: Any, y: Any, /) -> Any:
    """Elementwise x ** y computed in floating point."""
    x, y = _promote_inexact_n("float_power", x, y)
    return lax.pow(x, y)


def maximum(x: Any, y: Any, /) -> Any:
    """Elementwise maximum, propagating NaNs."""
    x, y = _promote2("maximum", x, y)
    return lax.max(x, y)


def minimum(x: Any, y: Any, /) -> Any:
    """Elementwise minimum, propagating NaNs."""
    x, y = _promote2("minimum", x, y)
    return lax.min(x, y)


def fmax(x1: Any, x2: Any) -> Any:
    """Elementwise maximum, ignoring NaNs (NaN only if both are NaN)."""
    x1, x2 = _promote_n("fmax", x1, x2)
    if _dkind(x1.dtype) not in "fc":
        return lax.max(x1, x2)
    pick_x = lax.bitwise_or(lax._gt(x1, x2), isnan(x2))  # unchecked: complex compares lexicographically
    return _select_bcast(pick_x, x1, x2)


def fmin(x1: Any, x2: Any) -> Any:
    """Elementwise minimum, ignoring NaNs (NaN only if both are NaN)."""
    x1, x2 = _promote_n("fmin", x1, x2)
    if _dkind(x1.dtype) not in "fc":
        return lax.min(x1, x2)
    pick_x = lax.bitwise_or(lax._lt(x1, x2), isnan(x2))
    return _select_bcast(pick_x, x1, x2)


def _select_bcast(pred: Any, on_true: Any, on_false: Any) -> Any:
    """lax.select after broadcasting rank-0 operands to the common shape."""
    shape = max((a.shape for a in (pred, on_true, on_false)), key=len)
    pred, on_true, on_false = (
        lax.broadcast_in_dim(a, shape, ()) if a.shape != shape else a for a in (pred, on_true, on_false)
    )
    return lax.select(pred, on_true, on_false)


def _is_complex(x: Any) -> bool:
    dt = getattr(x, "dtype", None)
    return _dkind(np.dtype(dt) if dt is not None else np.asarray(x).dtype) == "c"


def clip(
    arr: Any = None,
    /,
    min: Any = None,  # noqa: A002
    max: Any = None,  # noqa: A002
    *,
    a: Any = None,
    a_min: Any = None,
    a_max: Any = None,
) -> Any:
    """Clip values to ``[min, max]`` (either bound may be None); ``a``/``a_min``/``a_max`` are the
    older names of the arguments."""
    if arr is None:
        arr = a
    if arr is None:
        raise TypeError("clip() missing the array argument")
    if a_min is not None:
        if min is not None:
            raise TypeError("clip: pass only one of 'min' and 'a_min'")
        min = a_min  # noqa: A001
    if a_max is not None:
        if max is not None:
            raise TypeError("clip: pass only one of 'max' and 'a_max'")
        max = a_max  # noqa: A001
    arr = _one("clip", arr)
    if any(_is_complex(t) for t in (arr, min, max) if t is not None):
        raise ValueError(
            "Clip received a complex value either through the input or the min/max keywords. Complex values "
            "have no ordering and cannot be clipped. Please convert to a real value or array by taking the "
            "real or imaginary components via jax.numpy.real/imag respectively."
        )
    if min is not None:
        arr = maximum(min, arr)
    if max is not None:
        arr = minimum(max, arr)
    return arr


@_debug_nans.as_unit("hypot")
def hypot(x1: Any, x2: Any, /) -> Any:
    """Elementwise sqrt(x**2 + y**2), without overflow for large inputs."""
    x1, x2 = _promote_inexact_n("hypot", x1, x2)
    if _dkind(x1.dtype) == "c":
        raise ValueError(
            "jnp.hypot is not well defined for complex-valued inputs. "
            "Please convert to real values first, such as by using abs(x)"
        )
    x1, x2 = _abs(x1), _abs(x2)
    idx_inf = lax.bitwise_or(isposinf(x1), isposinf(x2))
    hi, lo = lax.max(x1, x2), lax.min(x1, x2)
    zero = lax.eq(hi, _const(hi, 0))
    safe_hi = lax.select(zero, _ones_like(hi), hi)
    r = lax.mul(hi, lax.sqrt(lax.add(_const(hi, 1), lax.square(lax.div(lo, safe_hi)))))
    out = lax.select(zero, hi, r)
    # a strongly typed inf, as JAX's (which makes the result strongly typed)
    return lax.select(idx_inf, lax.full_like(out, np.inf, out.dtype), out)


def arctan2(x1: Any, x2: Any, /) -> Any:
    """Elementwise arctangent of x1 / x2 in the correct quadrant."""
    x1, x2 = _promote_inexact_n("arctan2", x1, x2)
    if _dkind(x1.dtype) == "c":
        # XLA's complex atan2 (JAX accepts complex here): -i log((x2 + i x1) / sqrt(x1**2 + x2**2))
        num = lax.add(x2, lax.mul(x1, _const(x1, 1j)))
        r = lax.div(num, lax.sqrt(lax.add(lax.mul(x1, x1), lax.mul(x2, x2))))
        return lax.mul(_const(r, -1j), lax.log(r))
    return lax.atan2(x1, x2)


atan2 = arctan2


def logaddexp(x1: Any, x2: Any, /) -> Any:
    """log(exp(x1) + exp(x2)) computed stably; differentiable everywhere it is finite."""
    x1, x2 = _promote_inexact_n("logaddexp", x1, x2)
    return _logaddexp_custom()(x1, x2)


_logaddexp_cache: list = []


def _posinf_to_0(v: Any) -> Any:
    if _dkind(v.dtype) == "c":
        return v
    return lax.select(lax.eq(v, lax.full_like(v, np.inf)), lax.full_like(v, 0), v)


def _logaddexp_custom() -> Callable:
    # the derivative is sigmoid(x1 - x2) (and its mirror) -- written as a custom JVP because
    # differentiating max + log1p(exp(-|d|)) splits the tie at x1 == x2 wrongly (0 instead of 1/2)
    if _logaddexp_cache:
        return _logaddexp_cache[0]
    from fjax.custom_derivatives import custom_jvp  # noqa: PLC0415

    @custom_jvp
    def lae(a: Any, b: Any) -> Any:
        return _logaddexp(a, b, lax.log1p, lax.exp, None)

    @lae.defjvp
    def lae_jvp(primals: Any, tangents: Any) -> Any:
        a, b = primals
        ta, tb = tangents
        out = lae(a, b)
        # +inf read as 0 (as JAX): at x1 = +inf the weight exp(x1 - out) is 1, not exp(inf - inf)
        a0, b0, out0 = _posinf_to_0(a), _posinf_to_0(b), _posinf_to_0(out)
        return out, add(multiply(ta, exp(subtract(a0, out0))), multiply(tb, exp(subtract(b0, out0))))

    _logaddexp_cache.append(lae)
    return lae


def logaddexp2(x1: Any, x2: Any, /) -> Any:
    """log2(2**x1 + 2**x2) computed stably."""
    x1, x2 = _promote_inexact_n("logaddexp2", x1, x2)
    return _logaddexp(x1, x2, lax.log1p, lax.exp2, math.log(2.0))


def _logaddexp(x1: Any, x2: Any, log1p_: Callable, exp_: Callable, scale: float | None) -> Any:
    if _dkind(x1.dtype) == "c":
        return _logaddexp_complex(x1, x2, log1p_, exp_, scale)
    amax = lax.max(x1, x2)
    delta = lax.sub(x1, x2)
    bad = lax.ne(delta, delta)  # NaN: equal infinities or a NaN input
    safe_delta = lax.select(bad, _zeros_like(delta), delta)
    corr = log1p_(exp_(lax.neg(_abs(safe_delta))))
    if scale is not None:  # a strongly typed 1 / log(2), as JAX's (the result is not weak)
        corr = lax.mul(corr, Array(np.array(1.0 / scale, corr.dtype)))
    return _select_bcast(bad, lax.add(x1, x2), lax.add(amax, corr))


def _logaddexp_complex(x1: Any, x2: Any, log1p_: Callable, exp_: Callable, scale: float | None) -> Any:
    # JAX's complex branch: amax + log1p(exp(x1 + x2 - 2 amax)) (amax lexicographic), the
    # imaginary part wrapped into [-pi, pi] (divided by log(2) for logaddexp2)
    x1, x2 = _bcast_all(x1, x2)
    amax = lax.max(x1, x2)
    delta = lax.sub(lax.add(x1, x2), lax.mul(amax, _const(amax, 2)))
    corr = log1p_(exp_(delta))
    if scale is not None:
        corr = lax.mul(corr, Array(np.array(1.0 / scale, corr.dtype)))
    out = lax.add(amax, corr)
    half = math.pi if scale is None else math.pi / scale
    im = lax.imag(out)
    rem = lax.rem(lax.add(im, _const(im, half)), _const(im, 2 * half))
    rem = lax.select(lax.lt(rem, _const(rem, 0)), lax.add(rem, _const(rem, 2 * half)), rem)
    out = _lax_complex(lax.real(out), lax.sub(rem, _const(rem, half)))
    # JAX's result is strongly typed even for weak operands
    return lax.convert_element_type(out, out.dtype)


def _bcast_all(*xs: Any) -> list:
    shape = broadcast_shapes("logaddexp", *(x.shape for x in xs))
    return [x if x.shape == shape else broadcast_to_shape(x, shape) for x in xs]


def sinc(x: Any, /) -> Any:
    """Normalized sinc: sin(pi x) / (pi x), 1 at 0 (with correct first and second derivatives)."""
    x = _inexact1("sinc", x)
    is_zero = lax.eq(x, _const(x, 0))
    pi_x = lax.mul(x, _const(x, math.pi))
    safe = lax.select(is_zero, _ones_like(pi_x), pi_x)
    # at 0 use the Taylor expansion 1 - (pi x)^2 / 6 so derivatives are right there
    taylor = lax.sub(_const(x, 1), lax.div(lax.square(pi_x), _const(x, 6)))
    return lax.select(is_zero, taylor, lax.div(lax.sin(safe), safe))


def heaviside(x1: Any, x2: Any, /) -> Any:
    """Heaviside step: 0 for x1 < 0, x2 for x1 == 0, 1 for x1 > 0."""
    x1, x2 = _promote_inexact_n("heaviside", x1, x2)
    if _dkind(x1.dtype) == "c":
        raise TypeError(
            "lt does not accept dtype complex64 at position 0. Accepted dtypes at position 0 are "
            "subtypes of integer, floating, bool.".replace("complex64", x1.dtype.name)
        )
    zero = _const(x1, 0)
    shape = x1.shape if x1.ndim else x2.shape
    x1b = lax.broadcast_in_dim(x1, shape, ()) if x1.shape != shape else x1
    x2b = lax.broadcast_in_dim(x2, shape, ()) if x2.shape != shape else x2
    # x1 NaN gives NaN (as numpy and JAX): it is neither < 0 nor == 0. The 0 and 1 filled in are
    # strongly typed, as JAX's (so the result is too)
    one = lax.full_like(x1b, 1, x1b.dtype)
    pos = lax.select(lax.eq(x1b, zero), x2b, lax.select(lax.gt(x1b, zero), one, x1b))
    return lax.select(lax.lt(x1b, zero), lax.full_like(x1b, 0, x1b.dtype), pos)


def copysign(x1: Any, x2: Any, /) -> Any:
    """x1 with the sign of x2."""
    x1, x2 = _promote_inexact_n("copysign", x1, x2)
    if _dkind(x1.dtype) == "c":
        raise TypeError("copysign does not support complex-valued inputs")
    a = lax.abs(x1)
    return _select_bcast(signbit(x2), lax.neg(a), a)


def nextafter(x: Any, y: Any, /) -> Any:
    """The next representable value after x1 in the direction of x2."""
    x, y = _promote_inexact_n("nextafter", x, y)
    return lax.nextafter(x, y)


def ldexp(x1: Any, x2: Any, /) -> Any:
    """x1 * 2**x2 for an integer x2. As JAX, the exponent of x1 is split off first, so a small x1
    with a large x2 (or the reverse) does not overflow on the way, and infinities and zeros pass
    through (x1 * exp2(x2) gave inf * 0 = nan)."""
    x1, x2 = _one("ldexp", x1), _one("ldexp", x2)
    if _dkind(x1.dtype) == "c" or _dkind(x2.dtype) in "fc":
        # JAX's error (a ValueError naming both dtypes)
        raise ValueError(f"ldexp not supported for input types {(x1.dtype, x2.dtype)}")
    x1 = _inexact1("ldexp", x1)
    x1 = lax.convert_element_type(x1, x1.dtype) if x1.weak_type else x1
    x1, x2f = _promote_n("ldexp", x1, lax.convert_element_type(x2, x1.dtype))
    shape = broadcast_shapes("ldexp", x1.shape, x2f.shape)
    x1, x2f = (v if v.shape == shape else broadcast_to_shape(v, shape) for v in (x1, x2f))
    m, e = frexp(x1)
    x = _scale2(m, lax.add(lax.convert_element_type(e, x1.dtype), x2f))
    keep = lax.bitwise_or(lax.bitwise_not(lax.is_finite(x1)), lax.eq(x1, _const(x1, 0)))
    return lax.select(keep, x1, x)


def _scale2(v: Any, k: Any) -> Any:
    """v * 2**k for integer-valued float k, exact up to the one final rounding: two half steps keep
    each power of two finite and normal over the whole exponent range (2**128 alone overflows)."""
    h = lax.floor(lax.mul(k, _const(k, 0.5)))
    return lax.mul(lax.mul(v, lax.exp2(h)), lax.exp2(lax.sub(k, h)))


def frexp(x: Any, /) -> tuple[Any, Any]:
    """Decompose x into mantissa in [0.5, 1) and integer exponent: x == m * 2**e."""
    x = _inexact1("frexp", x)
    if _dkind(x.dtype) == "c":
        raise TypeError("frexp does not support complex-valued inputs")
    x = lax.convert_element_type(x, x.dtype)
    ax = lax.abs(x)
    special = lax.bitwise_or(lax.eq(ax, _const(ax, 0)), lax.bitwise_not(lax.is_finite(x)))
    safe = lax.select(special, _ones_like(ax), ax)
    e = lax.add(lax.floor(lax.div(lax.log(safe), _const(safe, math.log(2.0)))), _const(safe, 1))
    m = _scale2(safe, lax.neg(e))
    # fix the exponent when log2 rounded across a power of two
    too_big = lax.ge(m, _const(m, 1))
    e = lax.select(too_big, lax.add(e, _const(e, 1)), e)
    too_small = lax.lt(_scale2(safe, lax.neg(e)), _const(m, 0.5))
    e = lax.select(too_small, lax.sub(e, _const(e, 1)), e)
    m = lax.mul(_scale2(safe, lax.neg(e)), lax.sign(x))
    m = lax.select(special, x, m)
    e = lax.select(special, _zeros_like(e), e)
    return m, lax.convert_element_type(e, dtypes.default_int_dtype())


def _gcd_loop(a: Any, b: Any) -> tuple[Any, Any]:
    # Euclid's algorithm unrolled to the worst-case number of steps of the dtype (Fibonacci bound)
    steps = {1: 12, 2: 24, 4: 47, 8: 93}[a.dtype.itemsize]
    zero = _const(a, 0)
    for _ in range(steps):
        bz = lax.eq(b, zero)
        safe_b = lax.select(bz, _ones_like(b), b)
        a, b = lax.select(bz, a, b), lax.select(bz, b, lax.rem(a, safe_b))
    return a, b


def gcd(x1: Any, x2: Any) -> Any:
    """Elementwise greatest common divisor of integers."""
    x1, x2 = _promote_numeric_n("gcd", x1, x2)
    if _dkind(x1.dtype) not in "iu":
        raise ValueError("Arguments to jax.numpy.gcd must be integers.")
    shape = x1.shape if x1.ndim else x2.shape
    a = absolute(x1) if x1.shape == shape else lax.broadcast_in_dim(absolute(x1), shape, ())
    b = absolute(x2) if x2.shape == shape else lax.broadcast_in_dim(absolute(x2), shape, ())
    a, b = lax.max(a, b), lax.min(a, b)
    return _gcd_loop(a, b)[0]


def lcm(x1: Any, x2: Any) -> Any:
    """Elementwise least common multiple of integers."""
    x1, x2 = _promote_numeric_n("lcm", x1, x2)
    if _dkind(x1.dtype) not in "iu":
        raise ValueError("Arguments to jax.numpy.lcm must be integers.")
    d = gcd(x1, x2)
    zero = lax.eq(d, _const(d, 0))
    safe = lax.select(zero, _ones_like(d), d)
    out = lax.mul(absolute(x1), lax.div(absolute(x2), safe))
    return lax.select(zero, _zeros_like(d), out if out.shape == d.shape else lax.broadcast_in_dim(out, d.shape, ()))


# ---------------------------------------------------------------------------------------------
# complex parts


def real(val: Any, /) -> Any:
    """Real part (the input itself for real dtypes)."""
    val = _one("real", val)
    return lax.real(val) if _dkind(val.dtype) == "c" else val


def imag(val: Any, /) -> Any:
    """Imaginary part (zeros for real dtypes)."""
    val = _one("imag", val)
    return lax.imag(val) if _dkind(val.dtype) == "c" else _zeros_like(val)


def conjugate(x: Any, /) -> Any:
    """Complex conjugate (the input itself for real dtypes)."""
    x = _one("conjugate", x)
    return lax.conj(x) if _dkind(x.dtype) == "c" else x


conj = conjugate


def angle(z: Any, deg: bool = False) -> Any:
    """The argument (phase angle) of complex values, in radians (degrees with ``deg=True``)."""
    z = _one("angle", z)
    re, im = real(z), imag(z)
    # as JAX: a real rank-0 float (and any integer/bool) input moves to the default float dtype
    # (strongly typed); otherwise the parts keep their dtype and weak type
    if _dkind(re.dtype) != "f" or (_dkind(z.dtype) == "f" and z.ndim == 0):
        dt = dtypes.default_float_dtype()
        re = lax.convert_element_type(re, dt)
        im = lax.convert_element_type(im, dt)
    out = lax.atan2(im, re)
    return rad2deg(out) if deg else out
