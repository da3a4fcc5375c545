"""Promotion helpers of ``fjax.numpy``'s elementwise functions, with an eager fast path: split
from ``fjax/numpy/_ufuncs.py`` for size (``_ufuncs`` re-exports every name defined here).

``_promote2`` promotes two operands (their shapes as JAX's ``promote_shapes``: lax broadcasts
size-1 dims), skipping the general machinery for the common
cases (two arrays of one dtype, an array with a Python scalar that keeps its dtype); the rest
promote n operands, convert one, make constants of an operand's dtype and name the made functions.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from fjax.config import config
from fjax.core import Array, Tracer
from fjax.dtypes import kind as _dkind
from fjax.lax import lax
from fjax.numpy._util import (
    broadcast_arrays,
    broadcast_shapes,
    check_arraylike,
    check_rank_promotion,
    promote_dtypes,
    promote_dtypes_inexact,
    promote_dtypes_numeric,
    to_fjax,
)

_arr_types = (Array, Tracer)

# ---------------------------------------------------------------------------------------------
# promotion helpers with an eager fast path


# The lax op whose shape rule raises first in JAX when a function's equal-rank operands do not
# broadcast, and the operands it lists (recorded from JAX 0.10.2: jnp.subtract(f32[2], f32[3])
# raises "sub got incompatible shapes for broadcasting: (2,), (3,).")
_FIRST_LAX_OP: dict[str, tuple[str, tuple[int, ...]]] = {
    **{n: (n, (0, 1)) for n in ("add", "nextafter")},
    **dict.fromkeys(("subtract",), ("sub", (0, 1))),
    **dict.fromkeys(("multiply",), ("mul", (0, 1))),
    **dict.fromkeys(("divide", "true_divide"), ("div", (0, 1))),
    **dict.fromkeys(("floor_divide", "remainder", "fmod", "mod", "divmod"), ("rem", (0, 1))),
    **dict.fromkeys(("maximum", "logaddexp", "logaddexp2"), ("max", (0, 1))),
    "minimum": ("min", (0, 1)),
    **dict.fromkeys(("power", "float_power"), ("pow", (0, 1))),
    "equal": ("eq", (0, 1)),
    "not_equal": ("ne", (0, 1)),
    **dict.fromkeys(("less", "fmin"), ("lt", (0, 1))),
    "less_equal": ("le", (0, 1)),
    **dict.fromkeys(("greater", "fmax", "uniform.logpdf"), ("gt", (0, 1))),
    "greater_equal": ("ge", (0, 1)),
    **dict.fromkeys(("bitwise_and", "logical_and", "isclose", "kl_div", "rel_entr"), ("and", (0, 1))),
    **dict.fromkeys(("bitwise_or", "logical_or", "hypot", "xlogy", "xlog1py"), ("or", (0, 1))),
    **dict.fromkeys(("bitwise_xor", "logical_xor"), ("xor", (0, 1))),
    "arctan2": ("atan2", (0, 1)),
    "left_shift": ("shift_left", (0, 1)),
    "right_shift": ("shift_right_arithmetic", (0, 1)),
    "ldexp": ("add", (0, 1)),
    "gammainc": ("igamma", (0, 1)),
    "gammaincc": ("igammac", (0, 1)),
    "zeta": ("zeta", (0, 1)),
    "polygamma": ("polygamma", (0, 1)),
    "betainc": ("regularized_incomplete_beta", (0, 1, 2)),
    **{f"{d}.logpdf": ("sub", (0, 1)) for d in ("norm", "cauchy", "logistic", "laplace", "expon")},
    "t.logpdf": ("div", (0, 1)),
    **{f"{d}.logpdf": ("or", (1, 0)) for d in ("gamma", "beta")},
}


def _lax_broadcast_error(name: str, xs: Sequence[Any]) -> str | None:
    """JAX's lax message for ``name``'s equal-rank operands that do not broadcast, where known."""
    op, idx = _FIRST_LAX_OP.get(name, (None, ()))
    shapes = [tuple(xs[i].shape) for i in idx if i < len(xs)]
    if op is None or len(shapes) < 2 or len({len(s) for s in shapes if s}) != 1:
        return None
    try:
        broadcast_shapes(name, *shapes)
    except ValueError:
        return f"{op} got incompatible shapes for broadcasting: {', '.join(map(str, shapes))}."
    return None


def broadcast_lax_style(name: str, *xs: Any) -> list:
    """broadcast_arrays, but shapes of one rank that do not broadcast are a TypeError, as in JAX
    (whose ufuncs hand equal-rank operands to lax unchanged; differing ranks are a ValueError)."""
    if config.jax_numpy_rank_promotion != "allow":
        check_rank_promotion(name, *(x.shape for x in xs))
    try:
        return broadcast_arrays(name, *xs)
    except ValueError as e:
        # (gcd/lcm/copysign/heaviside broadcast with jnp's ValueError first in JAX too)
        if len({x.ndim for x in xs if x.ndim}) == 1 and name not in ("gcd", "lcm", "copysign", "heaviside"):
            raise TypeError(_lax_broadcast_error(name, xs) or str(e)) from None
        raise


def _promote_shapes(name: str, x: Any, y: Any) -> tuple[Any, Any]:
    """JAX's ``promote_shapes`` for a binary ufunc: operands of one rank (or one of rank 0) go to lax
    as they are (lax broadcasts size-1 dims, and raises its TypeError for equal-rank shapes that do
    not broadcast); of two ranks, the lower gets leading size-1 dims (a ``broadcast_in_dim``)."""
    if x.ndim == y.ndim or not x.ndim or not y.ndim:
        return x, y
    nd = len(broadcast_shapes(name, x.shape, y.shape))  # a ValueError if they do not broadcast
    return tuple(  # type: ignore[return-value]
        v if v.ndim == nd else lax.broadcast_in_dim(v, (1,) * (nd - v.ndim) + v.shape, tuple(range(nd - v.ndim, nd)))
        for v in (x, y)
    )


def _promote2(name: str, x: Any, y: Any) -> tuple[Any, Any]:
    """Promote two operands and their shapes (``_promote_shapes``); the common cases skip the
    general machinery.

    Fast cases: two arrays/tracers of one dtype whose shapes lax accepts as they are (equal, or
    one rank-0), and an array with a Python float/int of a kind that does not change its dtype.
    """
    if config.jax_numpy_rank_promotion != "allow":  # JAX's check, before any broadcasting
        check_rank_promotion(name, np.shape(x), np.shape(y))
    tx, ty = type(x), type(y)
    if tx is Array or isinstance(x, Tracer):
        if ty is Array or isinstance(y, Tracer):
            # (a weak operand meeting a strong one of its dtype is converted, as JAX's jaxprs show)
            if x.dtype == y.dtype and x.weak_type == y.weak_type:
                xs, ys = x.shape, y.shape
                if xs == ys or not xs or not ys:
                    return x, y
                return _promote_shapes(name, x, y)
        elif ty is float or ty is int:
            s = _scalar_like(y, x.dtype)
            if s is not None:
                return x, s
    elif tx is float or tx is int:
        if ty is Array or isinstance(y, Tracer):
            s = _scalar_like(x, y.dtype)
            if s is not None:
                return s, y
    a, b = promote_dtypes(name, x, y)
    return _promote_shapes(name, a, b)


_scalar_cache: dict = {}


def _scalar_like(v: float | int, dt: np.dtype) -> Array | None:
    """A weak 0-d Array of ``dt`` for a Python scalar when promotion keeps ``dt``, else None.

    Arrays are immutable, so the common constants (``x + 1.0``) are cached; zero is not, since
    ``0.0 == -0.0`` would share one entry. The key holds the scalar's type: ``2 == 2.0`` hash alike, and
    an int32 array times 2.0 must not get the cached int 2 (it promotes to float)."""
    key = (type(v), v, dt)
    out = _scalar_cache.get(key)
    if out is not None:
        return out
    k = _dkind(dt)
    if k == "f" or k == "c":
        out = Array(np.array(v, dtype=dt), True)
    elif (k == "i" or k == "u") and type(v) is int:
        try:
            out = Array(np.array(v, dtype=dt), True)
        except OverflowError:
            return None
    else:
        return None
    if v != 0 and v == v:
        if len(_scalar_cache) > 512:
            _scalar_cache.clear()
        _scalar_cache[key] = out
    return out


def _promote_n(name: str, *args: Any) -> list:
    return broadcast_lax_style(name, *promote_dtypes(name, *args))


def _promote_inexact_n(name: str, *args: Any) -> list:
    return broadcast_lax_style(name, *promote_dtypes_inexact(name, *args))


def _promote_numeric_n(name: str, *args: Any) -> list:
    return broadcast_lax_style(name, *promote_dtypes_numeric(name, *args))


def _inexact1(name: str, x: Any) -> Any:
    """``x`` as an inexact array (fast path: already a float/complex Array or Tracer)."""
    if isinstance(x, _arr_types) and _dkind(x.dtype) in "fc":
        return x
    return promote_dtypes_inexact(name, x)[0]


def _one(name: str, x: Any) -> Any:
    if isinstance(x, _arr_types):
        return x
    check_arraylike(name, x)
    return to_fjax(x, name)


def _const(x: Any, val: Any) -> Array:
    """A weakly typed 0-d constant of ``x``'s dtype (a literal when staged)."""
    return Array(np.array(val).astype(x.dtype), True)


def _zeros_like(x: Any, dtype: Any = None) -> Any:
    return lax.full_like(x, 0, dtype)


def _ones_like(x: Any, dtype: Any = None) -> Any:
    return lax.full_like(x, 1, dtype)


def _set_doc(f: Callable, name: str, doc: str) -> Callable:
    f.__name__ = name
    f.__qualname__ = name
    f.__doc__ = doc
    return f
