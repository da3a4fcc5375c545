"""Reductions of ``fjax.numpy``: sum, prod, max, min, mean, var, std, all, any, argmax, argmin,
the cumulative and NaN-ignoring variants, average, ptp, count_nonzero, median and quantiles.

Dtype rules follow JAX: ``sum``/``prod`` of booleans and of integers narrower than the default
integer give the default integer (int32); ``mean``/``var``/``std`` of integers give the default
float; the results are never weakly typed. Every reduction takes ``axis`` (int, tuple, None,
negative), ``keepdims``, ``dtype`` where numpy has it, and ``where=`` (``max``/``min`` then
require ``initial=``, as numpy does).
"""

from __future__ import annotations

import builtins
from typing import Any, Callable

import numpy as np

from fjax import _debug_nans, _out_sharding, core, dtypes
from fjax.core import Array, Tracer
from fjax.dtypes import kind as _dkind
from fjax.lax import lax
from fjax.numpy._util import (
    broadcast_to_shape,
    canonicalize_axes,
    canonicalize_axis,
    check_arraylike,
    to_fjax,
)

__all__ = [
    "all", "amax", "amin", "any", "argmax", "argmin", "average", "count_nonzero", "cumprod",
    "cumsum", "cumulative_prod", "cumulative_sum", "max", "mean", "median", "min", "nanargmax",
    "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmean", "nanmedian", "nanmin", "nanprod",
    "nanstd", "nansum", "nanvar", "percentile", "prod", "ptp", "quantile", "std", "sum", "var",
]  # fmt: skip

_builtin_max = builtins.max


def _check_out(out: Any, name: str) -> None:
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")


def _arr(a: Any, name: str) -> Any:
    if isinstance(a, (Array, Tracer)):
        return a
    check_arraylike(name, a)
    return to_fjax(a, name)


def _user_dtype(dtype: Any, *names: str, stacklevel: int = 2) -> Any:
    """A public function's ``dtype=`` argument canonicalized (None stays None); with x64 off a
    64-bit dtype warns once per name in ``names``, as JAX (whose jnp.sum and jnp.prod warn under
    their own name and then under convert_element_type). ``stacklevel`` as for warnings.warn
    called by this function's caller."""
    if dtype is None:
        return None
    dt = dtype if isinstance(dtype, type) else getattr(dtype, "dtype", dtype)
    out = dtypes.canonicalize_dtype(dt)
    for name in names:
        out = dtypes.canonicalize_user_dtype(dt, name, stacklevel + 1)
    return out


def _const(x: Any, val: Any) -> Array:
    return Array(np.array(val).astype(x.dtype), True)


def _upcast_int(dt: np.dtype) -> np.dtype:
    """sum/prod accumulate booleans and narrow integers in the default integer types."""
    if _dkind(dt) == "b":
        return dtypes.default_int_dtype()
    if _dkind(dt) == "i" and dt.itemsize < dtypes.default_int_dtype().itemsize:
        return dtypes.default_int_dtype()
    if _dkind(dt) == "u" and dt.itemsize < dtypes.default_uint_dtype().itemsize:
        return dtypes.default_uint_dtype()
    return dt


def _strong(x: Any, dt: np.dtype) -> Any:
    """``x`` converted to ``dt`` and made strongly typed."""
    if x.dtype == dt and not x.weak_type:
        return x
    if type(x) is Array and x.ndim == 0:
        return Array(np.asarray(x._value.astype(dt)), False)
    return lax.convert_element_type(x, dt)


def _mask(where: Any, shape: tuple, name: str, count: bool = False) -> Any:
    """``where`` as a bool mask of ``shape``. A mask that does not fit raises JAX's errors: a
    reduction's ``jnp.where(where, a, identity)`` names the three shapes; the count of ``mean``/``var``
    (``count``), which JAX takes first, is a ``broadcast_to``."""
    m = _arr(where, name)
    if m.dtype != np.bool_:
        m = lax.ne(m, _const(m, 0))
    if m.shape != shape:
        from fjax.numpy._util import broadcast_shapes  # noqa: PLC0415

        if count:
            from fjax.numpy._indexing import broadcast_to_error  # noqa: PLC0415

            err = broadcast_to_error(m.aval, shape)
            if err is not None:
                raise err
        try:
            fits = broadcast_shapes(name, m.shape, shape) == shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={[tuple(m.shape), tuple(shape), ()]}")
        m = broadcast_to_shape(m, shape)
    return m


def _keep(r: Any, axes: tuple, keepdims: bool) -> Any:
    if keepdims and axes:
        return lax.expand_dims(r, axes)
    return r


def _reduce(
    a: Any,
    name: str,
    lax_op: Callable,
    binop: Callable,
    ident: Callable | None,
    *,
    axis: Any,
    dtype: Any,
    keepdims: bool,
    initial: Any,
    where: Any,
    upcast: bool,
    upcast_f16: bool = False,
) -> Any:
    a = _arr(a, name)
    if dtype is not None:
        dt = dtypes.canonicalize_dtype(dtype if isinstance(dtype, type) else getattr(dtype, "dtype", dtype))
    else:
        dt = _upcast_int(a.dtype) if upcast else a.dtype
    # sum and prod with dtype=None compute float16/bfloat16 in float32, as JAX
    comp = np.dtype(np.float32) if upcast_f16 and dtype is None and dt in _F16 else dt
    a = _strong(a, comp)
    axes = canonicalize_axes(axis, a.ndim, name)
    if where is not None:
        if ident is None and initial is None:
            raise ValueError(
                f"reduction operation {name} does not have an identity, so to use a where mask "
                "one has to specify 'initial'"
            )
        fill = ident(comp) if ident is not None else initial
        a = lax.select(_mask(where, a.shape, name), a, lax.full_like(a, fill))
    if ident is None and initial is None and builtins.any(a.shape[i] == 0 for i in axes):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    r = lax_op(a, axes)
    if initial is not None:
        init = _arr(initial, name)
        if init.ndim:
            raise ValueError(f"jnp.{name}: initial must be a scalar, got shape {init.shape}")
        r = binop(_strong(init, comp), r)  # initial first, as JAX (``max -inf r``)
    r = _keep(r, axes, keepdims)
    return r if comp == dt else lax.convert_element_type(r, dt)


_F16 = (np.dtype(np.float16), dtypes.bfloat16)


def sum(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,  # noqa: A001
    initial: Any = None,
    where: Any = None,
    promote_integers: bool = True,
) -> Any:
    """Sum of elements over ``axis`` (booleans and narrow integers accumulate as int32)."""
    _check_out(out, "sum")
    dtype = _user_dtype(dtype, "sum", "convert_element_type")
    if _arr(a, "sum").dtype == np.bool_ and dtype is None and not promote_integers:
        dtype = np.bool_
    return _reduce(
        a,
        "sum",
        _sum_op,
        lax.add,
        lambda dt: 0,
        axis=axis,
        dtype=dtype,
        keepdims=keepdims,
        initial=initial,
        where=where,
        upcast=promote_integers,
        upcast_f16=True,
    )


def _sum_op(a: Any, axes: tuple) -> Any:
    if a.dtype == np.bool_:
        return lax.reduce_or(a, axes)
    return lax.reduce_sum(a, axes)


def _prod_op(a: Any, axes: tuple) -> Any:
    if a.dtype == np.bool_:
        return lax.reduce_and(a, axes)
    return lax.reduce_prod(a, axes)


def prod(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
    promote_integers: bool = True,
) -> Any:
    """Product of elements over ``axis``."""
    _check_out(out, "prod")
    dtype = _user_dtype(dtype, "prod", "convert_element_type")
    return _reduce(
        a,
        "prod",
        _prod_op,
        lax.mul,
        lambda dt: 1,
        axis=axis,
        dtype=dtype,
        keepdims=keepdims,
        initial=initial,
        where=where,
        upcast=promote_integers,
        upcast_f16=True,
    )


def max(
    a: Any,
    axis: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = None,  # noqa: A001
    where: Any = None,
) -> Any:
    """Maximum over ``axis`` (NaN-propagating); ``where`` requires ``initial``."""
    _check_out(out, "max")
    return _reduce(
        a,
        "max",
        lax.reduce_max,
        lax.max,
        None,
        axis=axis,
        dtype=None,
        keepdims=keepdims,
        initial=initial,
        where=where,
        upcast=False,
    )


def min(
    a: Any,
    axis: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = None,  # noqa: A001
    where: Any = None,
) -> Any:
    """Minimum over ``axis`` (NaN-propagating); ``where`` requires ``initial``."""
    _check_out(out, "min")
    return _reduce(
        a,
        "min",
        lax.reduce_min,
        lax.min,
        None,
        axis=axis,
        dtype=None,
        keepdims=keepdims,
        initial=initial,
        where=where,
        upcast=False,
    )


amax, amin = max, min


def _to_bool(a: Any) -> Any:
    return a if a.dtype == np.bool_ else lax.ne(a, _const(a, 0))


def all(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, *, where: Any = None) -> Any:  # noqa: A001
    """Whether all elements over ``axis`` are true (nonzero)."""
    _check_out(out, "all")
    a = _to_bool(_arr(a, "all"))
    return _reduce(
        a,
        "all",
        lax.reduce_and,
        lax.bitwise_and,
        lambda dt: True,
        axis=axis,
        dtype=None,
        keepdims=keepdims,
        initial=None,
        where=where,
        upcast=False,
    )


def any(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, *, where: Any = None) -> Any:  # noqa: A001
    """Whether any element over ``axis`` is true (nonzero)."""
    _check_out(out, "any")
    a = _to_bool(_arr(a, "any"))
    return _reduce(
        a,
        "any",
        lax.reduce_or,
        lax.bitwise_or,
        lambda dt: False,
        axis=axis,
        dtype=None,
        keepdims=keepdims,
        initial=None,
        where=where,
        upcast=False,
    )


def _count(a: Any, axes: tuple, keepdims: bool, where: Any, dt: np.dtype, name: str) -> Any:
    if where is None:
        n = 1
        for i in axes:
            n *= a.shape[i]
        return Array(np.array(n, dt), False)
    m = lax.convert_element_type(_mask(where, a.shape, name, count=True), dt)
    return _keep(lax.reduce_sum(m, axes), axes, keepdims)


def _inexact_dtype(dt: np.dtype) -> np.dtype:
    return dt if _dkind(dt) in "fc" else dtypes.default_float_dtype()


def _upcast_f16(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dt in (np.float16, dtypes.bfloat16) else dt


def mean(
    a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, *, where: Any = None
) -> Any:
    """Arithmetic mean over ``axis`` (integers give float32)."""
    _check_out(out, "mean")
    dtype = _user_dtype(dtype, "mean")
    a = _arr(a, "mean")
    axes = canonicalize_axes(axis, a.ndim, "mean")
    dt = (
        _inexact_dtype(a.dtype)
        if dtype is None
        else dtypes.canonicalize_dtype(dtype if isinstance(dtype, type) else getattr(dtype, "dtype", dtype))
    )
    comp = _upcast_f16(_inexact_dtype(dt))
    if where is not None and np.shape(where) != a.shape:
        # (JAX counts first: a mask that does not fit is broadcast_to's error)
        from fjax.numpy._indexing import broadcast_to_error  # noqa: PLC0415

        err = broadcast_to_error(core.ShapedArray(np.shape(where), np.bool_), a.shape)
        if err is not None:
            raise err
    s = sum(a, axis=axes, dtype=comp, keepdims=keepdims, where=where)
    n = _count(a, axes, keepdims, where, np.dtype(comp) if _dkind(comp) != "c" else _real(comp), "mean")
    if n.dtype != s.dtype:
        n = lax.convert_element_type(n, s.dtype)
    return _strong(lax.div(s, n), dt)


_mean = mean  # (var's parameter ``mean`` shadows the function)


def _given_mean(m: Any, a: Any, comp: np.dtype, name: str) -> Any:
    """A precomputed ``mean=`` of ``var``-like functions: a scalar, or an array of ``a``'s rank
    (broadcast over size-1 dimensions, as JAX's ``lax.sub`` takes it)."""
    m = _strong(_arr(m, name), comp)
    if m.ndim not in (0, a.ndim):
        raise TypeError(f"sub: arrays must have the same number of dimensions, got {{{m.ndim}, {a.ndim}}}")
    if m.shape != a.shape:
        m = broadcast_to_shape(m, a.shape)
    return m


def _real(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dt == np.complex64 else np.dtype(np.float64)


@_debug_nans.as_unit("var")
def var(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: int = 0,
    keepdims: bool = False,
    *,
    where: Any = None,
    mean: Any = None,
    correction: Any = None,
) -> Any:
    """Variance over ``axis`` with ``ddof`` (or ``correction``) degrees of freedom removed;
    ``mean``: the mean to center with (computed with ``keepdims=True`` when given), else computed."""
    _check_out(out, "var")
    dtype = _user_dtype(dtype, "var", stacklevel=3)  # 3: var is wrapped by _debug_nans.as_unit
    if correction is None:
        correction = ddof
    elif ddof != 0:
        raise ValueError("ddof and correction can't be provided simultaneously.")
    a = _arr(a, "var")
    axes = canonicalize_axes(axis, a.ndim, "var")
    if dtype is None:
        comp = _inexact_dtype(a.dtype)
        out_dt = _real(comp) if _dkind(comp) == "c" else comp
    else:
        out_dt = dtypes.canonicalize_dtype(dtype if isinstance(dtype, type) else getattr(dtype, "dtype", dtype))
        comp = _inexact_dtype(out_dt) if _dkind(a.dtype) != "c" else dtypes.result_type(a.dtype, out_dt)
    comp = _upcast_f16(comp)
    a = _strong(a, comp)
    if mean is None:
        m = _mean(a, axis=axes, keepdims=True, where=where)
        c = lax.sub(a, broadcast_to_shape(m, a.shape) if m.shape != a.shape else m)
    else:
        c = lax.sub(a, _given_mean(mean, a, comp, "var"))
    if _dkind(comp) == "c":
        sq = lax.real(lax.mul(c, lax.conj(c)))
    else:
        sq = lax.square(c)
    rdt = sq.dtype
    s = sum(sq, axis=axes, keepdims=keepdims, where=where)
    n = _count(a, axes, keepdims, where, rdt, "var")
    corr = _strong(_arr(correction, "var"), rdt)
    denom = lax.sub(n, corr)
    res = lax.div(s, denom)
    bad = lax.le(denom, _const(denom, 0))
    if bad.shape != res.shape:
        bad = lax.broadcast_in_dim(bad, res.shape, ())
    res = lax.select(bad, lax.full_like(res, np.nan), res)
    return _strong(res, out_dt)


def std(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: int = 0,
    keepdims: bool = False,
    *,
    where: Any = None,
    mean: Any = None,
    correction: Any = None,
) -> Any:
    """Standard deviation over ``axis`` (square root of ``var``)."""
    _check_out(out, "std")
    dtype = _user_dtype(dtype, "std")
    return lax.sqrt(
        var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where, mean=mean, correction=correction)
    )


def _arg(a: Any, axis: Any, keepdims: Any, name: str, op: Callable) -> Any:
    a = _arr(a, name)
    if _dkind(a.dtype) == "c":
        # JAX's argmax/argmin compare with lax.gt/lt, which refuse complex operands
        cmp = "gt" if name in ("argmax", "nanargmax") else "lt"
        raise TypeError(
            f"{cmp} does not accept dtype {a.dtype.name} at position 0. Accepted dtypes at position 0 "
            "are subtypes of integer, floating, bool."
        )
    if axis is None:
        r = op(lax.reshape(a, (a.size,)), 0, dtypes.default_int_dtype())
        if keepdims:
            r = lax.reshape(r, (1,) * a.ndim)
        return r
    ax = canonicalize_axis(axis, a.ndim, name)
    r = op(a, ax, dtypes.default_int_dtype())
    return _keep(r, (ax,), builtins.bool(keepdims))


def argmax(a: Any, axis: Any = None, out: Any = None, keepdims: Any = None) -> Any:
    """Index of the maximum along ``axis`` (of the flattened array for ``axis=None``)."""
    _check_out(out, "argmax")
    return _arg(a, axis, keepdims, "argmax", lax.argmax)


def argmin(a: Any, axis: Any = None, out: Any = None, keepdims: Any = None) -> Any:
    """Index of the minimum along ``axis`` (of the flattened array for ``axis=None``)."""
    _check_out(out, "argmin")
    return _arg(a, axis, keepdims, "argmin", lax.argmin)


def _nan_fill(a: Any, fill: Any) -> Any:
    if _dkind(a.dtype) not in "fc":
        return a
    from fjax.numpy._ufuncs import isnan  # noqa: PLC0415

    return lax.select(isnan(a), lax.full_like(a, fill), a)


@_debug_nans.as_unit("nanargmax")
def nanargmax(a: Any, axis: Any = None, out: Any = None, keepdims: Any = None) -> Any:
    """argmax ignoring NaNs."""
    _check_out(out, "nanargmax")
    a = _arr(a, "nanargmax")
    return _arg(_nan_fill(a, -np.inf), axis, keepdims, "nanargmax", lax.argmax)


@_debug_nans.as_unit("nanargmin")
def nanargmin(a: Any, axis: Any = None, out: Any = None, keepdims: Any = None) -> Any:
    """argmin ignoring NaNs."""
    _check_out(out, "nanargmin")
    a = _arr(a, "nanargmin")
    return _arg(_nan_fill(a, np.inf), axis, keepdims, "nanargmin", lax.argmin)


# ---------------------------------------------------------------------------------------------
# cumulative


def _cumulative(a: Any, axis: Any, dtype: Any, name: str, kind: str) -> Any:
    from fjax.lax import other  # noqa: PLC0415 (written alongside; imported when first needed)

    a = _arr(a, name)
    if axis is None:
        a = lax.reshape(a, (a.size,))
        axis = 0
    ax = canonicalize_axis(axis, a.ndim, name)
    if dtype is not None:
        dt = dtypes.canonicalize_dtype(dtype if isinstance(dtype, type) else getattr(dtype, "dtype", dtype))
    elif a.dtype == np.bool_:
        dt = dtypes.default_int_dtype()
    else:
        dt = a.dtype
    a = _strong(a, dt)
    fn = other.cumsum if kind == "sum" else other.cumprod
    return fn(a, axis=ax)


def cumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """Cumulative sum along ``axis`` (of the flattened array for ``axis=None``)."""
    _check_out(out, "cumsum")
    dtype = _user_dtype(dtype, "cumsum")
    return _cumulative(a, axis, dtype, "cumsum", "sum")


def cumprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """Cumulative product along ``axis`` (of the flattened array for ``axis=None``)."""
    _check_out(out, "cumprod")
    dtype = _user_dtype(dtype, "cumprod")
    return _cumulative(a, axis, dtype, "cumprod", "prod")


def nancumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """Cumulative sum treating NaNs as zero."""
    _check_out(out, "nancumsum")
    dtype = _user_dtype(dtype, "nancumsum")
    return _cumulative(_nan_fill(_arr(a, "nancumsum"), 0), axis, dtype, "nancumsum", "sum")


def nancumprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """Cumulative product treating NaNs as one."""
    _check_out(out, "nancumprod")
    dtype = _user_dtype(dtype, "nancumprod")
    return _cumulative(_nan_fill(_arr(a, "nancumprod"), 1), axis, dtype, "nancumprod", "prod")


def _cumulative_api(a: Any, axis: Any, dtype: Any, include_initial: bool, name: str, kind: str) -> Any:
    a = _arr(a, name)
    if axis is None:
        if a.ndim > 1:
            raise ValueError(f"{name}: axis must be specified for arrays of more than one dimension")
        axis = 0
    out = _cumulative(a, axis, dtype, name, kind)
    if include_initial:
        ax = canonicalize_axis(axis, out.ndim, name)
        shape = list(out.shape)
        shape[ax] = 1
        init = lax.full(tuple(shape), 0 if kind == "sum" else 1, out.dtype)
        out = lax.concatenate([init, out], ax)
    return out


def cumulative_sum(x: Any, /, *, axis: Any = None, dtype: Any = None, include_initial: bool = False) -> Any:
    """Array-API cumulative sum (``include_initial`` prepends a zero)."""
    dtype = _user_dtype(dtype, "")  # JAX's warning names no function here
    return _cumulative_api(x, axis, dtype, include_initial, "cumulative_sum", "sum")


def cumulative_prod(x: Any, /, *, axis: Any = None, dtype: Any = None, include_initial: bool = False) -> Any:
    """Array-API cumulative product (``include_initial`` prepends a one)."""
    dtype = _user_dtype(dtype, "")
    return _cumulative_api(x, axis, dtype, include_initial, "cumulative_prod", "prod")


# ---------------------------------------------------------------------------------------------
# NaN-ignoring reductions


def _not_nan(a: Any, where: Any) -> Any:
    from fjax.numpy._ufuncs import isnan  # noqa: PLC0415

    m = lax.bitwise_not(isnan(a))
    if where is not None:
        m = lax.bitwise_and(m, _mask(where, a.shape, "nan-reduction"))
    return m


def nansum(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
) -> Any:
    """Sum treating NaNs as zero."""
    _check_out(out, "nansum")
    dtype = _user_dtype(dtype, "nanprod")  # sic: JAX's nansum names nanprod in the warning
    return sum(_nan_fill(_arr(a, "nansum"), 0), axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)


def nanprod(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
) -> Any:
    """Product treating NaNs as one."""
    _check_out(out, "nanprod")
    dtype = _user_dtype(dtype, "nanprod")
    return prod(
        _nan_fill(_arr(a, "nanprod"), 1), axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where
    )


#: the floating dtypes without infinities (float8_e4m3fn, the fnuz types, ...)
_NO_INF_FLOATS = frozenset(
    dt for dt in dtypes.low_precision_dtypes if dtypes.kind(dt) == "f" and dtypes._extremes(dt)[1] != np.inf
)


def _nan_extreme(
    a: Any, axis: Any, keepdims: bool, initial: Any, where: Any, name: str, fn: Callable, fill: float
) -> Any:
    a = _arr(a, name)
    if _dkind(a.dtype) not in "fc":
        return fn(a, axis=axis, keepdims=keepdims, initial=initial, where=where)
    from fjax.numpy._ufuncs import isnan  # noqa: PLC0415

    if a.dtype in _NO_INF_FLOATS:  # their -inf/inf is NaN: fill with the finite extremes instead
        fill = dtypes._extremes(a.dtype)[0 if fill < 0 else 1]
    r = fn(_nan_fill(a, fill), axis=axis, keepdims=keepdims, initial=initial, where=where)
    all_nan = all(isnan(a), axis=axis, keepdims=keepdims)
    return lax.select(all_nan, lax.full_like(r, np.nan), r)


@_debug_nans.as_unit("nanmax")
def nanmax(
    a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, initial: Any = None, where: Any = None
) -> Any:
    """Maximum ignoring NaNs (NaN where every element is NaN)."""
    _check_out(out, "nanmax")
    return _nan_extreme(a, axis, keepdims, initial, where, "nanmax", max, -np.inf)


@_debug_nans.as_unit("nanmin")
def nanmin(
    a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, initial: Any = None, where: Any = None
) -> Any:
    """Minimum ignoring NaNs (NaN where every element is NaN)."""
    _check_out(out, "nanmin")
    return _nan_extreme(a, axis, keepdims, initial, where, "nanmin", min, np.inf)


def nanmean(
    a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, where: Any = None
) -> Any:
    """Mean of the non-NaN elements."""
    _check_out(out, "nanmean")
    dtype = _user_dtype(dtype, "mean")  # sic: JAX's nanmean names mean in the warning
    a = _arr(a, "nanmean")
    if _dkind(a.dtype) not in "fc":
        return mean(a, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    # as JAX: nansum / (count of non-NaNs), both reduced in ``dtype`` (so float16 sums are upcast as
    # every float16 sum is, and the count is not rounded to float16 before the sum ends)
    dtype = a.dtype if dtype is None else dtype
    count = sum(lax.bitwise_not(lax.ne(a, a)), axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    return lax.div(nansum(a, axis=axis, dtype=dtype, keepdims=keepdims, where=where), count)


def nanvar(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: int = 0,
    keepdims: bool = False,
    where: Any = None,
    mean: Any = None,
    *,
    correction: Any = None,
) -> Any:
    """Variance of the non-NaN elements (``mean``: the mean to center with, as ``var``'s)."""
    _check_out(out, "nanvar")
    dtype = _user_dtype(dtype, "nanvar")
    a = _arr(a, "nanvar")
    if _dkind(a.dtype) in "fc":
        where = _not_nan(a, where)
        # the NaNs are masked out, and zeroed so that no NaN * 0 reaches the gradient (as JAX's)
        a = lax.select(lax.ne(a, a), lax.full_like(a, 0), a)
    return var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where, mean=mean, correction=correction)


def nanstd(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: int = 0,
    keepdims: bool = False,
    where: Any = None,
    mean: Any = None,
    *,
    correction: Any = None,
) -> Any:
    """Standard deviation of the non-NaN elements."""
    dtype = _user_dtype(dtype, "nanstd")
    return lax.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where, mean, correction=correction))


# ---------------------------------------------------------------------------------------------
# other statistics


def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False, keepdims: bool = False) -> Any:
    """Weighted average over ``axis`` (``returned=True`` also gives the sum of the weights)."""
    from fjax.numpy._util import promote_dtypes_inexact  # noqa: PLC0415

    a = _arr(a, "average")
    if weights is None:
        axes = canonicalize_axes(axis, a.ndim, "average")  # (first: JAX's own "repeated axis" message)
        avg = mean(a, axis=axis, keepdims=keepdims)
        n = 1
        for i in axes:
            n *= a.shape[i]
        wsum = lax.full(avg.shape, n, avg.dtype)
    else:
        a, w = promote_dtypes_inexact("average", a, weights)
        a, w = _strong(a, a.dtype), _strong(w, w.dtype)
        if w.shape != a.shape:
            if axis is None:
                raise ValueError("Axis must be specified when shapes of a and weights differ.")
            axes = canonicalize_axes(axis, a.ndim, "average")
            if w.shape != tuple(a.shape[ax] for ax in axes):  # (weights along several axes too, as JAX)
                raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
            order = tuple(int(i) for i in np.argsort(axes))
            w = lax.broadcast_in_dim(lax.transpose(w, order), a.shape, tuple(sorted(axes)))
        wsum = sum(w, axis=axis, keepdims=keepdims)
        avg = lax.div(sum(lax.mul(a, w), axis=axis, keepdims=keepdims), wsum)
    if returned:
        if wsum.shape != avg.shape:
            wsum = lax.broadcast_in_dim(wsum, avg.shape, ())
        return avg, wsum
    return avg


def ptp(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    """Range (maximum - minimum) over ``axis``."""
    _check_out(out, "ptp")
    a = _arr(a, "ptp")
    return lax.sub(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))


def count_nonzero(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Number of nonzero elements over ``axis`` (int32)."""
    a = _arr(a, "count_nonzero")
    return sum(_to_bool(a), axis=axis, dtype=dtypes.default_int_dtype(), keepdims=keepdims)


def _sort_last(a: Any) -> Any:
    from fjax.numpy._sorting import sort  # noqa: PLC0415

    return sort(a, axis=-1)


def quantile(
    a: Any,
    q: Any,
    axis: Any = None,
    out: Any = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: Any = None,
    interpolation: Any = None,
) -> Any:
    """The ``q``-th quantiles (q in [0, 1]) over ``axis``; methods linear, lower, higher,
    nearest, midpoint and inverted_cdf (the one that takes ``weights``, fjax/numpy/_quantile_icdf.py)."""
    _check_out(out, "quantile")
    method = method if interpolation is None else interpolation
    return _quantile(a, q, axis, method, keepdims, False, "quantile", weights)


def percentile(
    a: Any,
    q: Any,
    axis: Any = None,
    out: Any = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: Any = None,
    out_sharding: Any = None,
    interpolation: Any = None,
) -> Any:
    """The ``q``-th percentiles (q in [0, 100]) over ``axis`` (``weights``: as ``quantile``'s)."""
    if out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.apply(
            percentile(
                a, q, axis, out, overwrite_input, method, keepdims, weights=weights, interpolation=interpolation
            ),
            out_sharding,
            "jnp.percentile",
        )
    _check_out(out, "percentile")
    from fjax.numpy._util import promote_dtypes_inexact  # noqa: PLC0415

    (qq,) = promote_dtypes_inexact("percentile", q)
    qq = lax.div(qq, _const(qq, 100))
    method = method if interpolation is None else interpolation
    return _quantile(a, qq, axis, method, keepdims, False, "percentile", weights)


def median(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False, keepdims: bool = False) -> Any:
    """Median over ``axis``."""
    _check_out(out, "median")
    return _quantile(a, 0.5, axis, "midpoint", keepdims, False, "median")


def nanmedian(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False, keepdims: bool = False) -> Any:
    """Median over ``axis`` ignoring NaNs."""
    _check_out(out, "nanmedian")
    return _quantile(a, 0.5, axis, "midpoint", keepdims, True, "nanmedian")


def _take_last(s: Any, idx: Any) -> Any:
    """``s[..., idx]`` for integer ``idx`` of shape ``qshape`` -> qshape + s.shape[:-1]; a
    one-hot select and sum, so traced indices work and NaNs elsewhere do not leak."""
    n = s.shape[-1]
    lead = s.shape[:-1]
    qs = idx.shape
    full = qs + lead + (n,)
    sb = lax.broadcast_in_dim(s, full, tuple(range(len(qs), len(full))))
    ib = lax.broadcast_in_dim(idx, full, tuple(range(len(qs))))
    hit = lax.eq(ib, lax.broadcasted_iota(idx.dtype, full, len(full) - 1))
    return lax.reduce_sum(lax.select(hit, sb, lax.full_like(sb, 0)), (len(full) - 1,))


@_debug_nans.as_unit("quantile")
def _quantile(
    a: Any, q: Any, axis: Any, method: str, keepdims: bool, ignore_nan: bool, name: str, weights: Any = None
) -> Any:
    from fjax.numpy import _quantile_icdf  # noqa: PLC0415
    from fjax.numpy._util import promote_dtypes_inexact  # noqa: PLC0415

    if method not in ("linear", "lower", "higher", "nearest", "midpoint", "inverted_cdf"):
        raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', 'nearest' or 'inverted_cdf'")
    a = _arr(a, name)
    # ``a`` to its inexact dtype on its own first (as JAX: an int4 array's median is float32,
    # where promoting int4 with the Python float ``q`` is refused)
    (a,) = promote_dtypes_inexact(name, a)
    if weights is not None:
        weights = _arr(weights, name)
        if _dkind(weights.dtype) != "c":
            a, weights = _quantile_icdf.promote_with_weights(name, a, weights)
        weights = _quantile_icdf.check_weights(a, weights, axis, method)
    a, q = promote_dtypes_inexact(name, a, q)
    a, q = _strong(a, a.dtype), _strong(q, q.dtype)
    if _dkind(a.dtype) == "c":
        raise ValueError(f"{name} does not support complex input")
    nd = a.ndim
    axes = canonicalize_axes(axis, nd, name)
    keep = [i for i in range(nd) if i not in axes]
    n = 1
    for i in axes:
        n *= a.shape[i]
    x = lax.reshape(lax.transpose(a, keep + list(axes)), tuple(a.shape[i] for i in keep) + (n,))
    if method == "inverted_cdf":
        w = None
        if weights is not None:
            w = lax.reshape(lax.transpose(weights, keep + list(axes)), x.shape)
        res = _quantile_icdf.inverted_cdf(x, w, q, ignore_nan)
        if keepdims:
            res = lax.expand_dims(res, tuple(q.ndim + i for i in axes)) if axes else res
        return res
    from fjax.numpy._ufuncs import isnan  # noqa: PLC0415

    nan_mask = isnan(x)
    if ignore_nan:
        x = lax.select(nan_mask, lax.full_like(x, np.inf), x)
        count = lax.convert_element_type(
            lax.reduce_sum(lax.convert_element_type(lax.bitwise_not(nan_mask), np.int32), (x.ndim - 1,)), q.dtype
        )
    else:
        count = Array(np.array(n, q.dtype))
    s = _sort_last(x)
    # positions: q * (count - 1), per quantile and per leading position
    qb = lax.broadcast_in_dim(q, q.shape + count.shape, tuple(range(q.ndim))) if count.ndim else q
    cb = (
        lax.broadcast_in_dim(count, q.shape + count.shape, tuple(range(q.ndim, q.ndim + count.ndim)))
        if count.ndim
        else count
    )
    pos = lax.mul(qb, lax.sub(cb, _const(cb, 1)))
    lo = lax.floor(pos)
    hi = lax.ceil(pos)
    maxi = lax.sub(cb, _const(cb, 1))
    lo = lax.max(lax.min(lo, maxi), _const(lo, 0))
    hi = lax.max(lax.min(hi, maxi), _const(hi, 0))
    ilo = lax.convert_element_type(lo, np.int32)
    ihi = lax.convert_element_type(hi, np.int32)

    def take(idx: Any) -> Any:
        if count.ndim:
            # idx has shape q.shape + lead; pick s[lead..., idx] elementwise
            full = idx.shape + (n,)
            sb = lax.broadcast_in_dim(s, full, tuple(range(q.ndim, len(full))))
            ib = lax.broadcast_in_dim(idx, full, tuple(range(len(idx.shape))))
            hit = lax.eq(ib, lax.broadcasted_iota(np.int32, full, len(full) - 1))
            return lax.reduce_sum(lax.select(hit, sb, lax.full_like(sb, 0)), (len(full) - 1,))
        return _take_last(s, idx)

    vlo, vhi = take(ilo), take(ihi)
    if method == "lower":
        res = vlo
    elif method == "higher":
        res = vhi
    elif method == "nearest":
        # as JAX: the lower value unless the position is past the halfway point (numpy rounds
        # halfway positions to even)
        near = lax.select(lax.le(lax.sub(pos, lo), _const(pos, 0.5)), lo, hi)
        res = take(lax.convert_element_type(near, np.int32))
    elif method == "midpoint":
        res = lax.mul(lax.add(vlo, vhi), _const(vlo, 0.5))
    else:
        frac = lax.sub(pos, lo)
        if count.ndim == 0 and frac.ndim < vlo.ndim:
            frac = lax.broadcast_in_dim(frac, vlo.shape, tuple(range(frac.ndim)))
        # vlo*(1-frac) + vhi*frac, as JAX (vlo + (vhi-vlo)*frac is NaN when both are the same infinity)
        res = lax.add(lax.mul(vlo, lax.sub(_const(frac, 1), frac)), lax.mul(vhi, frac))
    if not ignore_nan:
        any_nan = lax.reduce_or(nan_mask, (x.ndim - 1,))
        if any_nan.shape != res.shape:
            any_nan = lax.broadcast_in_dim(any_nan, res.shape, tuple(range(q.ndim, res.ndim)))
        res = lax.select(any_nan, lax.full_like(res, np.nan), res)
    else:
        empty = lax.eq(cb, _const(cb, 0))
        if empty.shape != res.shape:
            empty = lax.broadcast_in_dim(empty, res.shape, tuple(range(empty.ndim)) if empty.ndim else ())
        res = lax.select(empty, lax.full_like(res, np.nan), res)
    if keepdims:
        res = lax.expand_dims(res, tuple(q.ndim + i for i in axes)) if axes else res
    return res
