"""More of ``jax.numpy``: comparisons of whole arrays, index helpers (``r_``, ``s_``, ``ix_``),
differences, selection, set operations, histograms, convolution, statistics, interpolation,
polynomials, window functions and ``vectorize``.

All compositions of other ``fjax.numpy`` functions, so every transform works through them.
Functions whose output shape depends on values (set operations, ``bincount`` without
``length``, ``histogram`` with data-derived bins ...) take JAX's ``size`` argument or need a
concrete input, as in JAX.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fjax import core, lax
from fjax.dtypes import finfo as _finfo
from fjax.numpy import _creation as C
from fjax.numpy import _indexing as I
from fjax.numpy import _reductions as R
from fjax.numpy import _shape as S
from fjax.numpy import _ufuncs as U
from fjax.numpy import _util
from fjax.numpy._ufuncs_promote import broadcast_lax_style

__all__ = [
    "allclose",
    "apply_along_axis",
    "apply_over_axes",
    "array_equal",
    "array_equiv",
    "c_",
    "choose",
    "compress",
    "concat",
    "diag_indices",
    "diag_indices_from",
    "diagflat",
    "diff",
    "ediff1d",
    "extract",
    "fabs",
    "fill_diagonal",
    "gradient",
    "index_exp",
    "isclose",
    "ix_",
    "mask_indices",
    "matvec",
    "mgrid",
    "modf",
    "ogrid",
    "piecewise",
    "put_along_axis",
    "r_",
    "ravel_multi_index",
    "rollaxis",
    "s_",
    "select",
    "tril_indices",
    "tril_indices_from",
    "triu_indices",
    "triu_indices_from",
    "unravel_index",
    "vecmat",
]


def _arr(x: Any, name: str) -> Any:
    _util.check_arraylike(name, x)
    return _util.to_fjax(x, name)


# ---------------------------------------------------------------------------------------------
# whole-array comparisons


def isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False) -> Any:
    """Elementwise ``a == b or (isfinite(b) and |a - b| <= atol + rtol * |b|)``.

    As JAX, the common dtype is moved to an inexact one before subtracting, so integers do not
    overflow (``isclose(INT_MIN, 0)`` is False). Key arrays are close when they are equal."""
    from fjax._prng import PRNGKeyArray

    if isinstance(a, PRNGKeyArray) or isinstance(b, PRNGKeyArray):
        if not (isinstance(a, PRNGKeyArray) and isinstance(b, PRNGKeyArray)):
            names = ", ".join(
                str(x.dtype) if isinstance(x, PRNGKeyArray) else str(_util.to_fjax(x, "isclose").dtype) for x in (a, b)
            )
            raise TypeError(f"isclose does not accept dtypes {names}.")
        return a == b
    a, b = _util.promote_dtypes("isclose", a, b)
    a, b = _util.promote_dtypes_inexact("isclose", a, b)
    a, b = broadcast_lax_style("isclose", a, b)
    dt = a.dtype
    rdt = _finfo(dt).dtype if np.issubdtype(dt, np.complexfloating) else dt
    rtol = lax.convert_element_type(rtol, rdt)
    atol = lax.convert_element_type(atol, rdt)
    in_range = lax.le(lax.abs(lax.sub(a, b)), lax.add(atol, lax.mul(rtol, lax.abs(b))))
    out = U.logical_or(lax.eq(a, b), U.logical_and(U.isfinite(b), in_range))
    if equal_nan:
        out = U.logical_or(out, U.logical_and(U.isnan(a), U.isnan(b)))
    return out


def allclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False) -> Any:
    """True (a boolean array of shape ()) when every pair is ``isclose``."""
    return R.all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    """True when ``a1`` and ``a2`` have the same shape and elements."""
    try:
        a1, a2 = C.asarray(a1), C.asarray(a2)
    except Exception:
        return C.asarray(False)
    if a1.shape != a2.shape:
        return C.asarray(False)
    eq = U.equal(a1, a2)
    if equal_nan:
        eq = U.logical_or(eq, U.logical_and(U.isnan(a1), U.isnan(a2)))
    return R.all(eq)


def array_equiv(a1: Any, a2: Any) -> Any:
    """True when ``a1`` and ``a2`` broadcast to each other and are equal elementwise."""
    a1, a2 = C.asarray(a1), C.asarray(a2)
    try:
        _util.broadcast_shapes("array_equiv", a1.shape, a2.shape)
    except ValueError:
        return C.asarray(False)
    return R.all(U.equal(a1, a2))


def fabs(x: Any) -> Any:
    """Elementwise absolute value of a real array (as float; TypeError for complex)."""
    (x,) = _util.promote_dtypes_inexact("fabs", x)
    if np.issubdtype(x.dtype, np.complexfloating):
        raise TypeError(f"ufunc 'fabs' does not support complex dtypes; got {x.dtype}")
    return U.abs(x)


def modf(x: Any, /, out: None = None) -> tuple[Any, Any]:
    """Fractional and integral parts of ``x`` (both with its sign)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.modf is not supported.")
    (x,) = _util.promote_dtypes_inexact("modf", x)
    whole = U.trunc(x)
    return U.subtract(x, whole), whole


# ---------------------------------------------------------------------------------------------
# index helpers


class _IndexExpression:
    """``s_[...]`` / ``index_exp[...]``: the index tuple that ``[...]`` denotes."""

    def __init__(self, maketuple: bool) -> None:
        self.maketuple = maketuple

    def __getitem__(self, item: Any) -> Any:
        if self.maketuple and not isinstance(item, tuple):
            return (item,)
        return item


s_ = _IndexExpression(maketuple=False)
index_exp = _IndexExpression(maketuple=True)


def _slice_to_range(s: slice, name: str) -> Any:
    step = s.step if s.step is not None else 1
    start = 0 if s.start is None else s.start
    if isinstance(step, complex):
        return C.linspace(start, s.stop, int(abs(step)))
    return C.arange(start, s.stop, step)


class _AxisConcat:
    """``r_`` / ``c_``: concatenate slices, scalars and arrays along an axis (numpy's syntax,
    including a leading string directive ``"axis,ndmin,trans1d"`` and ``"r"``/``"c"``)."""

    def __init__(self, axis: int, ndmin: int, trans1d: int, name: str) -> None:
        self.axis, self.ndmin, self.trans1d, self.name = axis, ndmin, trans1d, name

    def __getitem__(self, key: Any) -> Any:
        if not isinstance(key, tuple):
            key = (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        matrix = None
        items = list(key)
        if items and isinstance(items[0], str):
            directive = items.pop(0)
            if directive in ("r", "c"):
                matrix = directive
            else:
                parts = [int(p) for p in directive.split(",")]
                axis = parts[0]
                if len(parts) > 1:
                    ndmin = parts[1]
                if len(parts) > 2:
                    trans1d = parts[2]
        arrays = []
        for item in items:
            if isinstance(item, slice):
                a = _slice_to_range(item, self.name)
                if ndmin > 1:
                    a = a.reshape((1,) * (ndmin - 1) + a.shape)
                    if trans1d != -1:
                        a = S.swapaxes(a, -1, trans1d)
            elif isinstance(item, str):
                raise ValueError(f"{self.name}: string directive must be the first item, got {item!r}")
            else:
                a = C.asarray(item)
                item_ndim = a.ndim
                if ndmin > item_ndim:
                    a = a.reshape((1,) * (ndmin - item_ndim) + a.shape)
                    if trans1d != -1:
                        k2 = ndmin - item_ndim
                        k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
                        defaxes = list(range(ndmin))
                        a = S.transpose(a, tuple(defaxes[:k1] + defaxes[k2:] + defaxes[k1:k2]))
            arrays.append(a)
        if not arrays:
            return C.array([])
        out = S.concatenate(arrays, axis=axis)
        if matrix == "c" and out.ndim == 1:
            out = out.reshape((-1, 1))
        elif matrix == "r" and out.ndim == 1:
            out = out.reshape((1, -1))
        return out

    def __len__(self) -> int:
        return 0


r_ = _AxisConcat(0, 1, -1, "r_")
c_ = _AxisConcat(-1, 2, 0, "c_")


class _Grid:
    def __init__(self, sparse: bool) -> None:
        self.sparse = sparse

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            return _slice_to_range(key, "mgrid")
        ranges = [_slice_to_range(k, "mgrid") for k in key]
        from fjax.numpy import meshgrid

        grids = meshgrid(*ranges, indexing="ij", sparse=self.sparse)
        if self.sparse:
            return list(grids)
        return S.stack(grids, 0)


mgrid = _Grid(sparse=False)
ogrid = _Grid(sparse=True)


def ix_(*args: Any) -> tuple[Any, ...]:
    """Open-mesh index arrays from 1-D sequences (booleans become their nonzero positions)."""
    n = len(args)
    out = []
    for i, a in enumerate(args):
        a = C.asarray(a)
        if a.ndim != 1:
            raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape {a.shape}")
        if a.dtype == np.bool_:
            raise TypeError("jnp.ix_ does not support boolean arguments (the result shape would depend on values)")
        shape = [1] * n
        shape[i] = a.shape[0]
        out.append(a.reshape(tuple(shape)))
    return tuple(out)


def unravel_index(indices: Any, shape: Sequence[int]) -> tuple[Any, ...]:
    """Coordinates (a tuple of arrays) of flat ``indices`` into an array of ``shape``.

    Out-of-bounds indices are clipped, as in JAX (numpy raises).
    """
    indices = _arr(indices, "unravel_index")
    if not np.issubdtype(indices.dtype, np.integer):
        raise TypeError(f"unravel_index: indices must be integers, got {indices.dtype}")
    shape = tuple(int(d) for d in shape)
    total = int(np.prod(shape, dtype=np.int64))
    idx = U.clip(U.where(U.less(indices, 0), U.add(indices, total), indices), 0, builtins.max(total - 1, 0))
    out = []
    for d in reversed(shape):
        out.append(U.remainder(idx, d) if d else idx)
        idx = U.floor_divide(idx, d) if d else idx
    return tuple(reversed(out))


def ravel_multi_index(
    multi_index: Sequence[Any], dims: Sequence[int], mode: str = "raise", order: str = "C", *, dtype: Any = None
) -> Any:
    """Flat indices of the coordinates ``multi_index`` into an array of shape ``dims``.

    ``mode`` is ``"raise"`` (needs concrete indices), ``"wrap"`` or ``"clip"``; ``dtype``: the
    result's integer dtype (default: the indices' promoted with int), large enough for ``prod(dims)``.
    """
    dims = tuple(int(d) for d in dims)
    if dtype is not None:
        from fjax import dtypes  # noqa: PLC0415

        dtype = dtypes.canonicalize_user_dtype(dtype, "ravel_multi_index")
        if not np.issubdtype(dtype, np.integer):
            raise ValueError(f"dtype={dtype!r} is not an integer type.")
        if math.prod(dims) - 1 > np.iinfo(dtype).max:
            raise ValueError(
                f"jnp.ravel_multi_index: dtype={dtype!r} not large enough to hold flattened index for dims={dims}. "
                "Use the dtype argument to pass a suitable dtype (e.g. dtype=np.min_scalar_type(prod(dims)))."
            )
        return ravel_multi_index([C.asarray(i) for i in multi_index], dims, mode, order).astype(dtype)
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: parameter multi_index must be a sequence of length {len(dims)}")
    idx = [C.asarray(i) for i in multi_index]
    for i in idx:
        if not np.issubdtype(i.dtype, np.integer):
            raise TypeError(f"only int indices permitted, got {i.dtype}")
    if mode == "raise":
        for i, d in zip(idx, dims):
            c = np.asarray(core.concrete_or_error(i, "The error occurred in jnp.ravel_multi_index() with mode='raise'"))
            if np.any((c < 0) | (c >= d)):
                raise ValueError("invalid entry in coordinates array")
    elif mode == "wrap":
        idx = [U.remainder(i, d) for i, d in zip(idx, dims)]
    elif mode == "clip":
        idx = [U.clip(i, 0, d - 1) for i, d in zip(idx, dims)]
    else:
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', or 'clip'")
    if order == "F":
        idx, dims = idx[::-1], dims[::-1]
    elif order != "C":
        raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")
    out = C.asarray(0, dtype=np.int32) if not idx else C.zeros_like(idx[0])
    for i, d in zip(idx, dims):
        out = U.add(U.multiply(out, d), i)
    return out


def _tri_indices(n: int, k: int, m: int | None, lower: bool) -> tuple[Any, Any]:
    m = n if m is None else m
    mask = np.tri(n, m, k=k, dtype=bool) if lower else ~np.tri(n, m, k=k - 1, dtype=bool)
    r, c = np.nonzero(mask)
    return C.asarray(r.astype(np.int32)), C.asarray(c.astype(np.int32))


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    """Row and column indices of the lower triangle of an ``(n, m)`` array."""
    return _tri_indices(int(n), int(k), m, True)


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    """Row and column indices of the upper triangle of an ``(n, m)`` array."""
    return _tri_indices(int(n), int(k), m, False)


def tril_indices_from(arr: Any, k: int = 0) -> tuple[Any, Any]:
    """``tril_indices`` for the shape of the 2-D ``arr``."""
    shape = np.shape(arr)
    if len(shape) != 2:
        raise ValueError("Only 2-D inputs are accepted")
    return tril_indices(shape[0], k, shape[1])


def triu_indices_from(arr: Any, k: int = 0) -> tuple[Any, Any]:
    """``triu_indices`` for the shape of the 2-D ``arr``."""
    shape = np.shape(arr)
    if len(shape) != 2:
        raise ValueError("Only 2-D inputs are accepted")
    return triu_indices(shape[0], k, shape[1])


def diag_indices(n: int, ndim: int = 2) -> tuple[Any, ...]:
    """Indices of the main diagonal of an ``n x ... x n`` array of rank ``ndim``."""
    if n < 0:
        raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
    if ndim < 0:
        raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
    return (C.arange(n, dtype=np.int32),) * ndim


def diag_indices_from(arr: Any) -> tuple[Any, ...]:
    """``diag_indices`` for the square array ``arr``."""
    shape = np.shape(arr)
    if len(shape) < 2 or len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(shape[0], len(shape))


def mask_indices(n: int, mask_func: Callable[..., Any], k: int = 0, *, size: int | None = None) -> tuple[Any, Any]:
    """Indices where ``mask_func(ones((n, n)), k)`` is nonzero (e.g. ``jnp.triu``)."""
    return I.nonzero(mask_func(C.ones((n, n)), k), size=size)


def fill_diagonal(a: Any, val: Any, wrap: bool = False, *, inplace: bool = True) -> Any:
    """``a`` with its main diagonal set to ``val`` (a new array: pass ``inplace=False``, as JAX asks)."""
    if inplace:
        raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
    if wrap:
        raise NotImplementedError("jax.numpy.fill_diagonal does not support wrap=True")
    a = _arr(a, "fill_diagonal")
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if a.ndim > 2 and len(set(a.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    n = builtins.min(a.shape)
    idx = (C.arange(n),) * a.ndim
    val = C.asarray(val, dtype=a.dtype).ravel()
    if val.size == 0:
        return a
    vals = S.tile(val, -(-n // val.size))[:n] if val.size != 1 else val[0]
    return a.at[idx].set(vals)


def put_along_axis(
    arr: Any, indices: Any, values: Any, axis: int | None, inplace: bool = True, *, mode: str | None = None
) -> Any:
    """``arr`` with ``values`` written at ``indices`` along ``axis`` (``inplace=False`` required)."""
    if inplace:
        raise ValueError(
            "jax.numpy.put_along_axis cannot modify arrays in-place, because JAX arrays are immutable. "
            "Pass inplace=False to instead return an updated array."
        )
    arr = _arr(arr, "put_along_axis")
    indices = C.asarray(indices)
    if axis is None:
        arr_flat = arr.ravel()
        return put_along_axis(arr_flat, indices.ravel(), values, 0, inplace=False, mode=mode).reshape(arr.shape)
    axis = _util.canonicalize_axis(axis, arr.ndim, "put_along_axis")
    if indices.ndim != arr.ndim:
        raise ValueError(f"indices and arr must have the same number of dimensions; {indices.ndim} vs. {arr.ndim}")
    idx = []
    for d in range(arr.ndim):
        if d == axis:
            idx.append(U.where(U.less(indices, 0), U.add(indices, arr.shape[d]), indices))
        else:
            shape = [1] * arr.ndim
            shape[d] = indices.shape[d] if indices.shape[d] == arr.shape[d] else arr.shape[d]
            idx.append(C.arange(shape[d]).reshape(tuple(shape)))
    bshape = _util.broadcast_shapes("put_along_axis", *[i.shape for i in idx])
    idx = tuple(S.broadcast_to(i, bshape) for i in idx)
    values = S.broadcast_to(C.asarray(values, dtype=arr.dtype), bshape)
    return arr.at[idx].set(values, mode=mode)


def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    """Move ``axis`` so it lies before position ``start`` (numpy's older ``moveaxis``)."""
    a = _arr(a, "rollaxis")
    n = a.ndim
    axis = _util.canonicalize_axis(axis, n, "rollaxis")
    if not -n <= start <= n:
        raise ValueError(f"start={start} must satisfy {-n}<=start<={n}")
    if start < 0:
        start += n
    if start > axis:
        start -= 1
    return S.moveaxis(a, axis, start)


# ---------------------------------------------------------------------------------------------
# differences


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """``n``-th discrete difference along ``axis``, optionally after prepending/appending values."""
    a = _arr(a, "diff")
    n = core.concrete_or_error(n, "The error occurred in jnp.diff(): n must be static")
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    if a.ndim == 0:
        raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
    if n == 0:
        return a
    axis = _util.canonicalize_axis(axis, a.ndim, "diff")
    combined = []
    for extra in (prepend, a, append):
        if extra is None:
            continue
        e = C.asarray(extra)
        if e.ndim == 0:
            shape = list(a.shape)
            shape[axis] = 1
            e = S.broadcast_to(e, tuple(shape))
        combined.append(e)
    if len(combined) > 1:
        a = S.concatenate(combined, axis)
    bool_ = a.dtype == np.bool_
    for _ in range(n):
        hi = lax.slice_in_dim(a, 1, a.shape[axis], axis=axis)
        lo = lax.slice_in_dim(a, 0, a.shape[axis] - 1, axis=axis)
        a = U.not_equal(hi, lo) if bool_ else U.subtract(hi, lo)
    return a


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    """Differences of consecutive elements of the flattened ``ary``, with optional ends."""
    a = _arr(ary, "ediff1d").ravel()
    out = U.subtract(a[1:], a[:-1])
    parts = []
    if to_begin is not None:
        parts.append(C.asarray(to_begin, dtype=out.dtype).ravel())
    parts.append(out)
    if to_end is not None:
        parts.append(C.asarray(to_end, dtype=out.dtype).ravel())
    return S.concatenate(parts) if len(parts) > 1 else out


def gradient(f: Any, *varargs: Any, axis: int | Sequence[int] | None = None, edge_order: int | None = None) -> Any:
    """Gradient by central differences inside and one-sided differences at the edges.

    ``varargs`` are scalar spacings or coordinate arrays, one per axis (or one for all).
    Returns one array per axis (a single array if there is one axis), as numpy.
    """
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
    (f,) = _util.promote_dtypes_inexact("gradient", f)
    if axis is None:
        axes = tuple(range(f.ndim))
    else:
        axes = _util.canonicalize_axes(axis, f.ndim, "gradient")
    if len(axes) == 0:
        return []
    if builtins.min(f.shape[a] for a in axes) < 2:
        raise ValueError(
            "Shape of array too small to calculate a numerical gradient, at least 2 elements are required."
        )
    if len(varargs) == 0:
        spacings = [1.0] * len(axes)
    elif len(varargs) == 1:
        spacings = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacings = list(varargs)
    else:
        raise TypeError(f"Invalid number of spacing arguments {len(varargs)} for {axis=}")
    outs = []
    for ax, h in zip(axes, spacings):
        n = f.shape[ax]

        def sl(lo: int, hi: int, ax: int = ax) -> Any:
            return lax.slice_in_dim(f, lo, hi, axis=ax)

        h = C.asarray(h)
        if h.ndim == 0:
            inner = U.divide(U.subtract(sl(2, n), sl(0, n - 2)), U.multiply(2.0, h))
            first = U.divide(U.subtract(sl(1, 2), sl(0, 1)), h)
            last = U.divide(U.subtract(sl(n - 1, n), sl(n - 2, n - 1)), h)
        else:
            if h.ndim != 1 or h.shape[0] != n:
                raise ValueError("Spacing arrays must be 1-D with the length of the axis")
            dx = diff(h)
            shape = [1] * f.ndim
            shape[ax] = n - 2
            dx1 = dx[:-1].reshape(tuple(shape))
            dx2 = dx[1:].reshape(tuple(shape))
            a_ = -(dx2) / (dx1 * (dx1 + dx2))
            b_ = (dx2 - dx1) / (dx1 * dx2)
            c_ = dx1 / (dx2 * (dx1 + dx2))
            inner = a_ * sl(0, n - 2) + b_ * sl(1, n - 1) + c_ * sl(2, n)
            first = U.divide(U.subtract(sl(1, 2), sl(0, 1)), dx[0])
            last = U.divide(U.subtract(sl(n - 1, n), sl(n - 2, n - 1)), dx[-1])
        outs.append(S.concatenate([first, inner, last], axis=ax))
    return outs[0] if len(outs) == 1 else outs


# ---------------------------------------------------------------------------------------------
# selection


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Any:
    """Elementwise: the choice of the first true condition, ``default`` where none is."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs {len(choicelist)})")
    if len(condlist) == 0:
        raise ValueError("condlist must be non-empty")
    # as JAX: a non-boolean condition counts where it is nonzero
    conds = [c if c.dtype == np.bool_ else c.astype(bool) for c in (C.asarray(c) for c in condlist)]
    choices = _util.promote_dtypes("select", default, *choicelist)
    out = choices[0]
    for c, v in zip(reversed(conds), reversed(choices[1:])):
        out = U.where(c, v, out)
    return out


def piecewise(x: Any, condlist: Any, funclist: Sequence[Any], *args: Any, **kw: Any) -> Any:
    """Evaluate the function (or constant) of the first true condition per element.

    ``funclist`` may have one more entry than ``condlist``: the value where no condition holds.
    Every function is evaluated on the whole ``x`` (as JAX does, through ``lax.switch`` semantics).
    """
    x = _arr(x, "piecewise")
    nc = (
        len(condlist)
        if isinstance(condlist, (list, tuple))
        else (1 if C.asarray(condlist).ndim == x.ndim else C.asarray(condlist).shape[0])
    )
    conds = (
        [C.asarray(c) for c in condlist]
        if isinstance(condlist, (list, tuple))
        else ([C.asarray(condlist)] if nc == 1 and C.asarray(condlist).ndim == x.ndim else list(C.asarray(condlist)))
    )
    nf = len(funclist)
    if nf == nc + 1:
        default = funclist[-1]
        funcs = list(funclist[:-1])
    elif nf == nc:
        default = 0
        funcs = list(funclist)
    else:
        raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are expected; got {nf}")

    def value(f: Any) -> Any:
        return C.asarray(f(x, *args, **kw) if callable(f) else f, dtype=x.dtype)

    out = S.broadcast_to(value(default), x.shape)
    for c, f in zip(reversed(conds), reversed(funcs)):
        out = U.where(c, value(f), out)
    return out


def choose(a: Any, choices: Sequence[Any], out: None = None, mode: str = "raise") -> Any:
    """Elementwise ``choices[a]`` with broadcasting; ``mode`` ``"raise"`` (concrete), ``"wrap"``, ``"clip"``."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
    a = _arr(a, "choose")
    if not np.issubdtype(a.dtype, np.integer):
        raise ValueError("`a` array must be integer typed")
    n = len(choices)
    if mode == "raise":
        c = np.asarray(core.concrete_or_error(a, "The error occurred in jnp.choose() with mode='raise'"))
        if np.any((c < 0) | (c >= n)):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        a = U.remainder(a, n)
    elif mode == "clip":
        a = U.clip(a, 0, n - 1)
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    chs = _util.promote_dtypes("choose", *choices)
    shape = _util.broadcast_shapes("choose", a.shape, *[c.shape for c in chs])
    out = S.broadcast_to(chs[0], shape)
    for i in range(1, n):
        out = U.where(U.equal(a, i), chs[i], out)
    return out


def compress(
    condition: Any, a: Any, axis: int | None = None, *, size: int | None = None, fill_value: Any = 0, out: None = None
) -> Any:
    """The slices of ``a`` along ``axis`` where ``condition`` is true."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
    cond = _arr(condition, "compress")
    a = _arr(a, "compress")
    if cond.ndim != 1:
        raise ValueError("condition must be a 1D array")
    if axis is None:
        a = a.ravel()
        axis = 0
    axis = _util.canonicalize_axis(axis, a.ndim, "compress")
    cond = cond.astype(bool)
    (idx,) = I.nonzero(cond, size=size, fill_value=-1 if size is not None else None)
    if size is None and cond.shape[0] > a.shape[axis]:
        c = np.asarray(core.concrete_or_error(cond, "jnp.compress"))
        if c[a.shape[axis] :].any():
            raise ValueError("condition contains entries that are out of bounds")
    out = S.take(a, U.clip(idx, 0, builtins.max(a.shape[axis] - 1, 0)), axis=axis)
    if size is not None:
        shape = [1] * a.ndim
        shape[axis] = size
        out = U.where(U.less(idx, 0).reshape(tuple(shape)), C.asarray(fill_value, dtype=a.dtype), out)
    return out


def extract(condition: Any, arr: Any, *, size: int | None = None, fill_value: Any = 0) -> Any:
    """The elements of ``arr`` (flattened) where ``condition`` is true."""
    return compress(_arr(condition, "extract").ravel(), _arr(arr, "extract").ravel(), size=size, fill_value=fill_value)


def diagflat(v: Any, k: int = 0) -> Any:
    """A 2-D array with the flattened ``v`` on its ``k``-th diagonal."""
    from fjax.numpy import diag

    return diag(_arr(v, "diagflat").ravel(), k)


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Any:
    """``concatenate`` under its Array-API name."""
    return S.concatenate(arrays, axis=axis)


def matvec(x1: Any, x2: Any, /) -> Any:
    """Matrix-vector product over the last two / last axis, broadcasting the rest."""
    from fjax.numpy import matmul

    return matmul(x1, C.asarray(x2)[..., None])[..., 0]


def vecmat(x1: Any, x2: Any, /) -> Any:
    """Vector-matrix product (conjugating the vector) over the last axis / last two axes."""
    from fjax.numpy import matmul

    return matmul(U.conj(C.asarray(x1))[..., None, :], x2)[..., 0, :]


def apply_along_axis(func1d: Callable[..., Any], axis: int, arr: Any, *args: Any, **kwargs: Any) -> Any:
    """Apply ``func1d`` to the 1-D slices of ``arr`` along ``axis`` (by ``vmap`` over the others)."""
    from fjax.api import vmap

    arr = _arr(arr, "apply_along_axis")
    nd = arr.ndim
    axis = _util.canonicalize_axis(axis, nd, "apply_along_axis")
    func = lambda arr: func1d(arr, *args, **kwargs)  # noqa: E731
    for i in range(1, nd - axis):
        func = vmap(func, in_axes=i, out_axes=-1)
    for _ in range(axis):
        func = vmap(func, in_axes=0, out_axes=0)
    return func(arr)


def apply_over_axes(func: Callable[[Any, int], Any], a: Any, axes: Sequence[int]) -> Any:
    """``func(a, axis)`` over each of ``axes`` in turn, keeping dimensions."""
    a = _arr(a, "apply_over_axes")
    for axis in axes:
        b = func(a, axis)
        if b.ndim == a.ndim:
            a = b
        elif b.ndim == a.ndim - 1:
            a = S.expand_dims(b, axis)
        else:
            raise ValueError("function is not returning an array of the correct shape")
    return a
