"""Shared helpers of fjax.numpy: argument checking, dtype promotion and broadcasting."""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from fjax import core, dtypes
from fjax.core import Array, Tracer
from fjax.dtypes import kind as _dkind
from fjax.lax import lax

_scalar_types = (bool, int, float, complex)


def check_rank_promotion(fn_name: str, *shapes: Sequence[int]) -> None:
    """``jax_numpy_rank_promotion`` (JAX's): operands of an elementwise function with two or more
    non-scalar ranks are broadcast silently (``"allow"``), with a UserWarning (``"warn"``) or not
    at all (``"raise"``: a ValueError). Rank-0 operands and operands of one rank never count."""
    from fjax.config import config  # noqa: PLC0415

    mode = config.jax_numpy_rank_promotion
    if mode == "allow" or len({len(s) for s in shapes if len(s)}) < 2:
        return
    shown = " ".join(str(tuple(s)) for s in shapes)
    if mode == "warn":
        import warnings  # noqa: PLC0415

        warnings.warn(
            f"Following NumPy automatic rank promotion for {fn_name} on shapes {shown}. Set the "
            "jax_numpy_rank_promotion config option to 'allow' to disable this warning; for more "
            "information, see https://docs.jax.dev/en/latest/rank_promotion_warning.html.",
            stacklevel=4,
        )
    else:
        raise ValueError(
            f"Operands could not be broadcast together for {fn_name} on shapes {shown} and with the config "
            "option jax_numpy_rank_promotion='raise'. For more information, see "
            "https://docs.jax.dev/en/latest/rank_promotion_warning.html."
        )


def check_arraylike(fn_name: str, *args: Any) -> None:
    """Raise a TypeError naming ``fn_name`` if an argument is not array-like (lists and tuples
    are rejected, as JAX does)."""
    for i, x in enumerate(args):
        if isinstance(x, (Array, Tracer, np.ndarray, np.generic)) or type(x) in _scalar_types:
            continue
        if core.array_method(x) is not None:  # ``__jax_array__``
            continue
        # JAX 0.10.2's words (lists and tuples included: code written for JAX matches on them)
        raise TypeError(f"{fn_name} requires ndarray or scalar arguments, got {type(x)} at position {i}.")


def to_fjax(x: Any, fn_name: str = "fjax.numpy") -> Any:
    """An Array or Tracer for an array-like argument (Python scalars stay weakly typed)."""
    if isinstance(x, (Array, Tracer)):
        return x
    return core.to_array(x, fn_name)  # (objects with ``__jax_array__`` too, whose value may be traced)


def promote_dtypes(fn_name: str, *args: Any) -> list:
    """Convert arguments to one dtype with JAX's promotion rules (weak types respected)."""
    check_arraylike(fn_name, *args)
    xs = [to_fjax(x, fn_name) for x in args]
    if len(xs) < 2:
        return xs
    dt, weak = dtypes.result_type(*xs, return_weak_type_flag=True)
    return [_convert(x, dt, weak) for x in xs]


def _convert(x: Any, dt: np.dtype, weak: bool) -> Any:
    if x.dtype == dt and x.weak_type == weak:
        return x
    if type(x) is Array and (x.ndim == 0 or x.dtype == dt):
        # constant-fold scalar conversions (keeps jaxprs free of converts on literals); a concrete
        # array that only loses its weak type keeps its buffer
        return Array(x._value if x.dtype == dt else np.asarray(x._value.astype(dt)), weak)
    return lax._convert_element_type_weak(x, dt, weak)


def promote_dtypes_inexact(fn_name: str, *args: Any) -> list:
    """Promote to the common dtype, moved to the default float dtype when it is integer/bool (as
    jnp.sin etc.). As JAX, each argument is converted to the inexact dtype directly, never through
    the common integer dtype first: uint32 with int32 promotes to int64 (int32 without x64), and
    passing through it would wrap 2**32 - 1 to -1 before the float conversion."""
    check_arraylike(fn_name, *args)
    xs = [to_fjax(x, fn_name) for x in args]
    dt, weak = dtypes.result_type(*xs, return_weak_type_flag=True)
    if _dkind(dt) not in "fc":
        dt = dtypes.default_float_dtype()
    return [_convert(x, dt, weak) for x in xs]


def promote_dtypes_numeric(fn_name: str, *args: Any) -> list:
    """Promote, then turn bool into the default int dtype."""
    xs = promote_dtypes(fn_name, *args)
    return [_convert(x, dtypes.default_int_dtype(), x.weak_type) if x.dtype == np.bool_ else x for x in xs]


def broadcast_shapes(fn_name: str, *shapes: Sequence[int]) -> tuple[int, ...]:
    """numpy broadcasting of shapes, with JAX's error naming every shape."""
    nd = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(nd):
        size = 1
        for s in shapes:
            j = i - (nd - len(s))
            if j < 0:
                continue
            d = s[j]
            if d == 1:
                continue
            if size != 1 and d != size:
                # JAX's jnp broadcasting error (``fn_name`` is not part of it)
                raise ValueError(f"Incompatible shapes for broadcasting: shapes={[tuple(s) for s in shapes]}")
            size = d
        out.append(size)
    return tuple(out)


def broadcast_to_shape(x: Any, shape: tuple[int, ...]) -> Any:
    """Broadcast ``x`` to ``shape`` with numpy's rules (leading dims added, size-1 dims stretched)."""
    xs = x.shape
    if xs == shape:
        return x
    nd = len(shape)
    dims = tuple(range(nd - len(xs), nd))
    # size-1 dims of x that are broadcast: keep them in broadcast_dimensions (broadcast_in_dim stretches them)
    return lax.broadcast_in_dim(x, shape, dims)


def broadcast_arrays(fn_name: str, *xs: Any) -> list:
    """Broadcast to a common shape; rank-0 operands are left alone (lax ops broadcast scalars)."""
    shapes = [x.shape for x in xs]
    shape = broadcast_shapes(fn_name, *shapes)
    return [x if (x.shape == shape or x.ndim == 0) else broadcast_to_shape(x, shape) for x in xs]


def canonicalize_axis(axis: int, ndim: int, fn_name: str = "fjax.numpy") -> int:
    """Normalize a possibly negative axis, raising a numpy-style AxisError-like ValueError (a traced
    axis: JAX's TracerIntegerConversionError, from ``operator.index``)."""
    axis = operator.index(axis) if isinstance(axis, Tracer) else int(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim if ndim else 0


_DUPLICATE_AXES = {
    "squeeze": "dimensions are not unique: {}",
    "average": "repeated axis: {}",
    "median": "repeated axis",
    "nanmedian": "repeated axis",
}


def canonicalize_axes(axis: Any, ndim: int, fn_name: str = "fjax.numpy") -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (axis,)
    elif isinstance(axis, Tracer) and axis.ndim == 0:
        # (JAX's reductions ask for the axis statically)
        axis = (core.concrete_or_error(axis, "The axis argument must be known statically.").item(),)
    elif isinstance(axis, (Array, np.ndarray)) and axis.ndim == 0:
        axis = (operator.index(axis),)
    out = tuple(canonicalize_axis(a, ndim, fn_name) for a in axis)
    if len(set(out)) != len(out):
        # JAX 0.10.2's words: its reductions', and those of the few functions checking on their own
        msg = _DUPLICATE_AXES.get(fn_name, "duplicate value in 'axis': {}")
        raise ValueError(msg.format(tuple(axis)))
    return out
