"""Comparisons, logical and bitwise functions, floating-point classification (``isnan``,
``isinf``, ``signbit``, ``nan_to_num``, ...) and ``where`` of ``fjax.numpy``: split from
``fjax/numpy/_ufuncs.py`` for size (``_ufuncs`` re-exports every name defined here, and its
module docstring describes the promotion rules these follow too).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fjax import dtypes
from fjax._prng import PRNGKeyArray
from fjax.dtypes import finfo as _finfo
from fjax.dtypes import kind as _dkind
from fjax.lax import lax
from fjax.numpy._ufuncs_promote import _const, _one, _promote2, _promote_numeric_n, _set_doc, broadcast_lax_style
from fjax.numpy._util import broadcast_arrays, check_arraylike, promote_dtypes, to_fjax

# ---------------------------------------------------------------------------------------------
# comparisons and logic


def _make_comparison(name: str, lax_fn: Callable, doc: str) -> Callable:
    def fn(x: Any, y: Any, /) -> Any:
        if name in ("equal", "not_equal") and isinstance(x, PRNGKeyArray) and isinstance(y, PRNGKeyArray):
            # typed keys compare for (in)equality, as in JAX (chex's assert_trees_all_equal does)
            return x == y if name == "equal" else x != y
        x, y = _promote2(name, x, y)
        return lax_fn(x, y)

    return _set_doc(fn, name, doc)


equal = _make_comparison("equal", lax.eq, "Elementwise x == y.")
not_equal = _make_comparison("not_equal", lax.ne, "Elementwise x != y.")
# the unchecked lax comparisons: jnp orders complex values lexicographically (JAX's lax.lt refuses them)
less = _make_comparison("less", lax._lt, "Elementwise x < y.")
less_equal = _make_comparison("less_equal", lax._le, "Elementwise x <= y.")
greater = _make_comparison("greater", lax._gt, "Elementwise x > y.")
greater_equal = _make_comparison("greater_equal", lax._ge, "Elementwise x >= y.")


def _to_bool(x: Any) -> Any:
    if x.dtype == np.bool_:
        return x
    return lax.ne(x, _const(x, 0))


def _make_logical(name: str, lax_fn: Callable, doc: str) -> Callable:
    def fn(x: Any, y: Any, /) -> Any:
        check_arraylike(name, x, y)
        x, y = broadcast_lax_style(name, _to_bool(to_fjax(x, name)), _to_bool(to_fjax(y, name)))
        return lax_fn(x, y)

    return _set_doc(fn, name, doc)


logical_and = _make_logical("logical_and", lax.bitwise_and, "Elementwise logical AND (nonzero is true).")
logical_or = _make_logical("logical_or", lax.bitwise_or, "Elementwise logical OR (nonzero is true).")
logical_xor = _make_logical("logical_xor", lax.bitwise_xor, "Elementwise logical XOR (nonzero is true).")


def logical_not(x: Any, /) -> Any:
    """Elementwise logical NOT (nonzero is true)."""
    return lax.bitwise_not(_to_bool(_one("logical_not", x)))


# the lax primitive each function binds and the kinds it accepts, for JAX's dtype message
_LAX_BITWISE = {
    "bitwise_and": ("and", "integer, bool"),
    "bitwise_or": ("or", "integer, bool"),
    "bitwise_xor": ("xor", "integer, bool"),
    "bitwise_not": ("not", "integer, bool"),
    "left_shift": ("shift_left", "integer"),
    "right_shift": ("shift_right_arithmetic", "integer"),
}


def _check_intb(name: str, x: Any) -> None:
    if _dkind(x.dtype) not in "iub":
        # JAX 0.10.2's words: its lax primitive refuses the (promoted) dtype
        op, kinds = _LAX_BITWISE[name]
        if name == "bitwise_not":
            raise TypeError(f"{op} does not accept dtype {x.dtype.name}. Accepted dtypes are subtypes of {kinds}.")
        raise TypeError(
            f"{op} does not accept dtype {x.dtype.name} at position 0. Accepted dtypes at position 0 are subtypes "
            f"of {kinds}."
        )


def _make_bitwise(name: str, lax_fn: Callable, doc: str) -> Callable:
    def fn(x: Any, y: Any, /) -> Any:
        x, y = _promote2(name, x, y)
        _check_intb(name, x)
        return lax_fn(x, y)

    return _set_doc(fn, name, doc)


bitwise_and = _make_bitwise("bitwise_and", lax.bitwise_and, "Elementwise bitwise AND.")
bitwise_or = _make_bitwise("bitwise_or", lax.bitwise_or, "Elementwise bitwise OR.")
bitwise_xor = _make_bitwise("bitwise_xor", lax.bitwise_xor, "Elementwise bitwise XOR.")


def bitwise_not(x: Any, /) -> Any:
    """Elementwise bitwise NOT (logical NOT for booleans)."""
    x = _one("bitwise_not", x)
    _check_intb("bitwise_not", x)
    return lax.bitwise_not(x)


invert = bitwise_invert = bitwise_not


def left_shift(x: Any, y: Any, /) -> Any:
    """Elementwise x << y."""
    x, y = _promote_numeric_n("left_shift", x, y)
    _check_intb("left_shift", x)
    return lax.shift_left(x, y)


def right_shift(x1: Any, x2: Any, /) -> Any:
    """Elementwise x >> y (arithmetic for signed, logical for unsigned integers)."""
    x1, x2 = _promote_numeric_n("right_shift", x1, x2)
    _check_intb("right_shift", x1)
    if _dkind(x1.dtype) == "u":
        return lax.shift_right_logical(x1, x2)
    return lax.shift_right_arithmetic(x1, x2)


bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


# ---------------------------------------------------------------------------------------------
# floating point classification


def _bool_full(x: Any, val: bool) -> Any:
    return lax.full_like(x, val, np.bool_)


def _key_full(x: Any, val: bool) -> Any:
    # typed keys are never NaN nor infinite, as in JAX (whose isnan is x != x: array_equal(keys,
    # keys, equal_nan=True) relies on it)
    return lax.full(x.shape, val, np.bool_)


def isnan(x: Any, /) -> Any:
    """Elementwise test for NaN."""
    if isinstance(x, PRNGKeyArray):
        return _key_full(x, False)
    x = _one("isnan", x)
    k = _dkind(x.dtype)
    if k == "f":
        return lax.ne(x, x)
    if k == "c":
        return lax.bitwise_or(isnan(lax.real(x)), isnan(lax.imag(x)))
    return _bool_full(x, False)


def isinf(x: Any, /) -> Any:
    """Elementwise test for positive or negative infinity."""
    if isinstance(x, PRNGKeyArray):
        return _key_full(x, False)
    x = _one("isinf", x)
    k = _dkind(x.dtype)
    if k == "f":
        return lax.eq(lax.abs(x), _const(x, np.inf))
    if k == "c":
        return lax.bitwise_or(isinf(lax.real(x)), isinf(lax.imag(x)))
    return _bool_full(x, False)


def isfinite(x: Any, /) -> Any:
    """Elementwise test for finiteness (not infinite and not NaN)."""
    if isinstance(x, PRNGKeyArray):
        return _key_full(x, True)
    x = _one("isfinite", x)
    k = _dkind(x.dtype)
    if k == "f":
        return lax.is_finite(x)
    if k == "c":
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    return _bool_full(x, True)


def isposinf(x: Any, /, out: None = None) -> Any:
    """Elementwise test for +inf."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to isneginf/isposinf is not supported.")
    x = _one("isposinf", x)
    if _dkind(x.dtype) == "c":
        raise ValueError("isposinf does not support complex-valued inputs")
    if _dkind(x.dtype) != "f":
        return _bool_full(x, False)
    return lax.eq(x, _const(x, np.inf))


def isneginf(x: Any, /, out: None = None) -> Any:
    """Elementwise test for -inf."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to isneginf/isposinf is not supported.")
    x = _one("isneginf", x)
    if _dkind(x.dtype) == "c":
        raise ValueError("isneginf does not support complex-valued inputs")
    if _dkind(x.dtype) != "f":
        return _bool_full(x, False)
    return lax.eq(x, _const(x, -np.inf))


def signbit(x: Any, /) -> Any:
    """Elementwise test of the sign bit (true for negative numbers and -0.0).

    fjax has no bitcast primitive, so the sign of a NaN is not visible: NaNs give False."""
    x = _one("signbit", x)
    k = _dkind(x.dtype)
    if k == "u" or k == "b":
        return _bool_full(x, False)
    if k == "i":
        return lax.lt(x, _const(x, 0))
    if k == "c":
        raise ValueError("signbit does not support complex-valued inputs")
    zero = _const(x, 0)
    neg_zero = lax.bitwise_and(lax.eq(x, zero), lax.lt(lax.div(_const(x, 1), x), zero))
    return lax.bitwise_or(lax.lt(x, zero), neg_zero)


def nan_to_num(x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None, neginf: Any = None) -> Any:
    """Replace NaN by ``nan`` and infinities by ``posinf``/``neginf`` (default: the largest
    finite values of the dtype)."""
    del copy
    x = _one("nan_to_num", x)
    k = _dkind(x.dtype)
    if k == "c":
        re = nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf)
        im = nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf)
        return lax.add(
            lax.convert_element_type(re, x.dtype), lax.mul(lax.convert_element_type(im, x.dtype), _const(x, 1j))
        )
    if k != "f":
        return x
    info = _finfo(x.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = lax.select(lax.ne(x, x), lax.full_like(x, nan), x)
    out = lax.select(lax.eq(out, _const(x, np.inf)), lax.full_like(x, posinf), out)
    return lax.select(lax.eq(out, _const(x, -np.inf)), lax.full_like(x, neginf), out)


# ---------------------------------------------------------------------------------------------
# where


def where(condition: Any, x: Any = None, y: Any = None, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    """``x`` where ``condition`` is true, else ``y`` (with broadcasting and promotion).

    With only ``condition``, the indices of its nonzero elements (``jnp.nonzero``, as in JAX);
    that form needs a concrete ``condition`` unless a static ``size`` is given.
    """
    if x is None and y is None:
        from fjax.numpy._indexing import nonzero  # noqa: PLC0415

        return nonzero(condition, size=size, fill_value=fill_value)
    # one of x and y None: check_arraylike refuses it below, as in JAX ("got <class 'NoneType'>")
    if getattr(x, "dtype", None) is dtypes.KEY_DTYPE or getattr(y, "dtype", None) is dtypes.KEY_DTYPE:
        return _where_keys(condition, x, y)
    check_arraylike("where", condition, x, y)
    c = _to_bool(to_fjax(condition, "where"))
    x, y = promote_dtypes("where", x, y)
    c, x, y = broadcast_arrays("where", c, x, y)
    shape = max((c.shape, x.shape, y.shape), key=len)
    c, x, y = (lax.broadcast_in_dim(a, shape, ()) if a.shape != shape else a for a in (c, x, y))
    return lax.select(c, x, y)


def _where_keys(condition: Any, x: Any, y: Any) -> Any:
    """``where`` over typed key arrays: selects whole keys (the condition broadcasts over key axes)."""
    from fjax._prng import PRNGKeyArray  # noqa: PLC0415 - fjax._prng imports the tree modules

    if not (isinstance(x, PRNGKeyArray) and isinstance(y, PRNGKeyArray)):
        raise TypeError("where: cannot combine key arrays with arrays of a numeric dtype")
    c = _to_bool(to_fjax(condition, "where"))
    return PRNGKeyArray(where(lax.expand_dims(c, (c.ndim,)), x._base, y._base))
