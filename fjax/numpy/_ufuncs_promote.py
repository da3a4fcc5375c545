"""Promotion helpers of ``fjax.numpy``'s elementwise functions, with an eager fast path: split
from ``fjax/numpy/_ufuncs.py`` for size (``_ufuncs`` re-exports every name defined here).

``_promote2`` promotes two operands (their shapes as JAX's ``promote_shapes``: lax broadcasts
size-1 dims), skipping the general machinery for the common
cases (two arrays of one dtype, an array with a Python scalar that keeps its dtype); the rest
promote n operands, convert one, make constants of an operand's dtype and name the made functions.
"""

from __future__ import annotations

from typing import Any, Callable

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


def broadcast_lax_style(name: str, *xs: Any) -> list:
    """broadcast_arrays, but shapes of one rank that do not broadcast are a TypeError, as in JAX
    (whose ufuncs hand equal-rank operands to lax unchanged; differing ranks are a ValueError)."""
    if config.jax_numpy_rank_promotion != "allow":
        check_rank_promotion(name, *(x.shape for x in xs))
    try:
        return broadcast_arrays(name, *xs)
    except ValueError as e:
        if len({x.ndim for x in xs if x.ndim}) == 1:
            raise TypeError(str(e)) from None
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
            if x.dtype == y.dtype:
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
