"""``fjax.numpy.linalg``: all 31 names of ``jax.numpy.linalg``: norms (vector and matrix, every
``ord``), the product helpers of the array API, and the decompositions and solvers (from
``_linalg_decomp``, on top of ``lax.linalg``).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from fjax import core, dtypes
from fjax.core import Array
from fjax.dtypes import kind as _dkind
from fjax.lax import lax
from fjax.numpy import _util
from fjax.numpy._linalg import cross as _cross
from fjax.numpy._linalg import matmul as _matmul
from fjax.numpy._linalg import outer as _outer
from fjax.numpy._linalg import tensordot as _tensordot
from fjax.numpy._linalg import vecdot
from fjax.numpy._linalg_decomp import *  # noqa: E402, F403
from fjax.numpy._linalg_decomp import __all__ as _decomp_all
from fjax.numpy._linalg_decomp import svdvals as _svdvals
from fjax.numpy._shape import matrix_transpose
from fjax.numpy._shape import trace as _trace

__all__ = _decomp_all + [
    "cross",
    "matmul",
    "matrix_norm",
    "matrix_transpose",
    "norm",
    "outer",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
]


def _const(x: Any, v: Any) -> Array:
    return Array(np.array(v, dtype=core.get_aval(x).dtype), False)


def _keep(x: Any, axes: tuple[int, ...], ndim: int, keepdims: bool) -> Any:
    """Put back reduced ``axes`` as size-1 dims when keepdims."""
    if not keepdims:
        return x
    return lax.expand_dims(x, tuple(sorted(axes)))


def _reduce(kind: str, x: Any, axes: tuple[int, ...]) -> Any:
    if not axes:
        return x
    if kind == "sum":
        return lax.reduce_sum(x, axes)
    if kind == "max":
        return lax.reduce_max(x, axes)
    return lax.reduce_min(x, axes)


def _abs(x: Any) -> Any:
    return lax.abs(x)


def _sumsq(x: Any, axes: tuple[int, ...]) -> Any:
    sq = lax.real(lax.mul(x, lax.conj(x))) if _dkind(x.dtype) == "c" else lax.mul(x, x)
    return _reduce("sum", sq, axes)


def _vector_norm(x: Any, ord: Any, axes: tuple[int, ...], keepdims: bool) -> Any:  # noqa: A002
    nd = x.ndim
    if ord is None or (not isinstance(ord, str) and ord == 2):
        out = lax.sqrt(_sumsq(x, axes))
    elif isinstance(ord, str):
        raise ValueError(f"Invalid order '{ord}' for vector norm.")
    elif ord == np.inf:
        out = _max0(_reduce("max", _abs(x), axes)) if x.size else _zero_reduce(x, axes)
    elif ord == -np.inf:
        out = _reduce("min", _abs(x), axes)
    elif ord == 0:
        nz = lax.ne(x, _const(x, 0))
        rdt = core.get_aval(_abs(x)).dtype
        out = _reduce("sum", lax.convert_element_type(nz, rdt), axes)
    elif ord == 1:
        out = _reduce("sum", _abs(x), axes)
    else:
        ax = _abs(x)
        p = float(ord)
        out = lax.pow(_reduce("sum", lax.pow(ax, _const(ax, p)), axes), _const(ax, 1.0 / p))
    return _keep(out, axes, nd, keepdims)


def _max0(out: Any) -> Any:
    # JAX takes these maxima with ``initial=0``: max(m, 0) splits the gradient at an all-zero input
    return lax.max(out, _const(out, 0))


def _zero_reduce(x: Any, axes: tuple[int, ...]) -> Any:
    shp = tuple(s for i, s in enumerate(x.shape) if i not in axes)
    return lax.full(shp, 0, core.get_aval(_abs(x)).dtype)


def _matrix_norm(x: Any, ord: Any, axes: tuple[int, int], keepdims: bool) -> Any:  # noqa: A002
    r, c = axes
    nd = x.ndim
    if ord is None or ord == "fro" or ord == "f":
        out = lax.sqrt(_sumsq(x, axes))
    elif isinstance(ord, str) and ord == "nuc":
        out = lax.reduce_sum(_svdvals(_to_last2(x, r, c)), (nd - 2,))
    elif isinstance(ord, str):
        raise ValueError(f"Invalid order '{ord}' for matrix norm.")
    elif ord in (1, -1):
        colsum = _reduce("sum", _abs(x), (r,))
        c2 = c - 1 if c > r else c
        out = _reduce("max" if ord == 1 else "min", colsum, (c2,))
        out = _max0(out) if ord == 1 else out
    elif ord in (np.inf, -np.inf):
        rowsum = _reduce("sum", _abs(x), (c,))
        r2 = r - 1 if r > c else r
        out = _reduce("max" if ord == np.inf else "min", rowsum, (r2,))
        out = _max0(out) if ord == np.inf else out
    elif ord in (2, -2):
        sv = _svdvals(_to_last2(x, r, c))
        if sv.shape[-1] == 0:
            out = lax.full(sv.shape[:-1], 0, sv.dtype)
        else:
            out = _reduce("max" if ord == 2 else "min", sv, (nd - 2,))
            out = _max0(out) if ord == 2 else out
    else:
        raise ValueError(f"Invalid order '{ord}' for matrix norm.")
    return _keep(out, axes, nd, keepdims)


def _to_last2(x: Any, r: int, c: int) -> Any:
    """``x`` with axes ``r`` and ``c`` moved to the end (in that order)."""
    nd = x.ndim
    rest = [i for i in range(nd) if i not in (r, c)]
    return lax.transpose(x, tuple(rest) + (r, c))


def _prep(fn: str, x: Any) -> Any:
    _util.check_arraylike(fn, x)
    (x,) = _util.promote_dtypes_inexact(fn, _util.to_fjax(x, fn))
    return x


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A002
    """Vector or matrix norm (numpy.linalg.norm semantics).

    With ``axis=None``: ``ord=None`` gives the 2-norm of the flattened array; otherwise ``x``
    must be 1-D (vector norm) or 2-D (matrix norm). An int ``axis`` selects a vector norm
    (``ord``: None/2, 1, inf, -inf, 0, or any p), a pair a matrix norm (``'fro'``, 1, -1, inf,
    -inf). Integer inputs are promoted to the default float dtype. As in JAX, the gradient of
    the 2-norm at the origin is NaN.
    """
    x = _prep("norm", x)
    nd = x.ndim
    if axis is None:
        if ord is None:
            out = lax.sqrt(_sumsq(x, tuple(range(nd))))
            return lax.reshape(out, (1,) * nd) if keepdims else out
        if nd == 1:
            axis = (0,)
        elif nd == 2:
            axis = (0, 1)
        else:
            raise ValueError(
                f"Improper number of dimensions to norm: array of shape {tuple(x.shape)} with ord={ord!r} needs axis"
            )
    elif isinstance(axis, (int, np.integer)):
        axis = (operator.index(axis),)
    else:
        axis = tuple(operator.index(a) for a in axis)
    axes = tuple(_util.canonicalize_axis(a, nd, "norm") for a in axis)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes, keepdims)
    if len(axes) == 2:
        if axes[0] == axes[1]:
            raise ValueError(f"norm: duplicate axes {axis}")
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError(f"Improper number of dimensions to norm: axis={axis}")


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:  # noqa: A002
    """Vector norm over ``axis`` (all axes, as one flattened vector, when None)."""
    x = _prep("vector_norm", x)
    nd = x.ndim
    if axis is None:
        out = _vector_norm(lax.reshape(x, (x.size,)), ord, (0,), False)
        return lax.reshape(out, (1,) * nd) if keepdims else out
    axes = _util.canonicalize_axes(axis, nd, "vector_norm")
    return _vector_norm(x, ord, axes, keepdims)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:  # noqa: A002
    """Matrix norm over the last two axes."""
    x = _prep("matrix_norm", x)
    if x.ndim < 2:
        raise ValueError(f"matrix_norm requires at least 2 dimensions, got shape {tuple(x.shape)}")
    return _matrix_norm(x, ord, (x.ndim - 2, x.ndim - 1), keepdims)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """Trace over the last two axes (array API ``linalg.trace``)."""
    if dtype is not None:
        dtype = dtypes.canonicalize_user_dtype(getattr(dtype, "_np_type", dtype), "trace")
    return _trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """Cross product of 3-element vectors along ``axis`` (array API ``linalg.cross``)."""
    return _cross(x1, x2, axis=axis)


def matmul(x1: Any, x2: Any, /, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """The array API's ``matmul`` (``jnp.matmul`` with positional-only operands)."""
    return _matmul(x1, x2, precision=precision, preferred_element_type=preferred_element_type)


def outer(x1: Any, x2: Any, /) -> Any:
    """The outer product of two 1-D arrays (other ranks raise ValueError, as JAX)."""
    n1, n2 = np.ndim(x1), np.ndim(x2)
    if n1 != 1 or n2 != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim={n1} x2.ndim={n2}")
    return _outer(x1, x2)


def tensordot(
    x1: Any,
    x2: Any,
    /,
    *,
    axes: Any = 2,
    precision: Any = None,
    preferred_element_type: Any = None,
    out_sharding: Any = None,
) -> Any:
    """The array API's ``tensordot``: ``axes`` is keyword-only."""
    return _tensordot(
        x1, x2, axes, precision=precision, preferred_element_type=preferred_element_type, out_sharding=out_sharding
    )


_ = (vecdot, matrix_transpose)

# eager calls run compiled once a call signature repeats (fjax/_eager_compile.py)
from fjax import _eager_compile as _ec  # noqa: E402

_ec.install(globals(), _ec.JNP_LINALG)
del _ec
