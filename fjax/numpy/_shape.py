"""Shape manipulation for fjax.numpy: reshape, transpose, stacking and splitting, tiling,
padding, flipping and rolling, take/insert/delete, and trace (JAX semantics).

Padding and take/insert/delete/trace live in ``_shape_take.py``, re-exported from here.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from fjax import _out_sharding, core, dtypes
from fjax.core import Array, Tracer
from fjax.dtypes import kind as _dkind
from fjax.lax import lax
from fjax.numpy import _util
from fjax.numpy._indexing import _INDEX_DTYPE, broadcast_to_error, getitem

__all__ = [
    "append",
    "array_split",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "broadcast_arrays",
    "broadcast_shapes",
    "broadcast_to",
    "column_stack",
    "concatenate",
    "delete",
    "dsplit",
    "dstack",
    "expand_dims",
    "flip",
    "fliplr",
    "flipud",
    "hsplit",
    "hstack",
    "insert",
    "matrix_transpose",
    "moveaxis",
    "ndim",
    "pad",
    "permute_dims",
    "ravel",
    "repeat",
    "reshape",
    "roll",
    "rot90",
    "shape",
    "size",
    "split",
    "squeeze",
    "stack",
    "swapaxes",
    "take",
    "take_along_axis",
    "tile",
    "trace",
    "transpose",
    "vsplit",
    "vstack",
]


def _slicing() -> Any:
    from fjax.lax import slicing  # noqa: PLC0415

    return slicing


def _arr(fn: str, x: Any) -> Any:
    _util.check_arraylike(fn, x)
    return _util.to_fjax(x, fn)


def _static_int(v: Any, what: str) -> int:
    try:
        return operator.index(v)
    except TypeError:
        v = core.concrete_or_error(v, what)
        return operator.index(np.asarray(v).item() if isinstance(v, np.ndarray) else v)


def _axis(fn: str, axis: Any, ndim: int) -> int:
    if isinstance(axis, Tracer):  # (JAX's TracerIntegerConversionError, from operator.index)
        operator.index(axis)
    return _util.canonicalize_axis(_static_int(axis, f"axis argument of {fn}"), ndim, fn)


def _index_tuple(x: Any) -> tuple:
    """One index or a sequence of them as a tuple (JAX's ``_ensure_index_tuple``): a traced one is
    JAX's ConcretizationTypeError."""
    if isinstance(x, Tracer) and x.ndim == 0 and x.to_concrete_value() is None:
        raise core.ConcretizationTypeError(x, "expected a static index or sequence of indices.")
    try:
        return (operator.index(x),)
    except TypeError:
        return tuple(x)


def _axes(fn: str, axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, Tracer):
        axis = _index_tuple(axis)
    if isinstance(axis, (int, np.integer)):
        return (_axis(fn, axis, ndim),)
    out = tuple(_axis(fn, a, ndim) for a in axis)
    if len(set(out)) != len(out):
        if fn == "squeeze":  # (JAX 0.10.2's words)
            raise ValueError(f"dimensions are not unique: {tuple(axis)}")
        if fn == "flip":
            raise TypeError(f"rev dimensions must be unique, got {out}.")
        raise ValueError(f"{fn}: repeated axis in {tuple(axis)}")
    return out


def _shape_tuple(fn: str, shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)) or (isinstance(shape, (Array, Tracer, np.ndarray)) and np.ndim(shape) == 0):
        shape = (shape,)
    try:
        return tuple(operator.index(s) for s in shape)  # (a traced size: TracerIntegerConversionError)
    except TypeError:
        raise core.invalid_shape_error(tuple(shape)) from None


# --------------------------------------------------------------------------------------------
# metadata


def ndim(a: Any) -> int:
    """Number of dimensions of ``a``."""
    if isinstance(a, (Array, Tracer)):
        return a.ndim
    return np.ndim(a)


def shape(a: Any) -> tuple[int, ...]:
    """Shape of ``a``."""
    if isinstance(a, (Array, Tracer)):
        return tuple(a.shape)
    return np.shape(a)


def size(a: Any, axis: int | Sequence[int] | None = None) -> int:
    """Number of elements of ``a`` (along ``axis`` if given)."""
    shp = shape(a)
    if axis is None:
        return math.prod(shp)
    axes = _axes("size", axis, len(shp))
    return math.prod(shp[i] for i in axes)


# --------------------------------------------------------------------------------------------
# reshaping and transposing


def _reshape_shape(shp: tuple[int, ...], new: tuple[int, ...], shown: Any = None) -> tuple[int, ...]:
    """``new`` with its -1 resolved; JAX's jnp.reshape errors (TypeError, as JAX raises them for its
    arrays and under tracing) naming the shape as it was given (``shown``: ``5`` for ``x.reshape(5)``)."""
    shown = new if shown is None else shown
    n = math.prod(shp)
    if new.count(-1) > 1:
        raise TypeError(f"can only specify one unknown axis size with a `-1` value, got {shown}")
    if -1 in new:
        known = math.prod(s for s in new if s != -1)
        if known == 0:
            raise ZeroDivisionError("integer modulo by zero")  # (as JAX computes n % known)
        if n % known:
            raise TypeError(
                f"cannot reshape array of shape {shp} (size {n}) into shape {shown} because the product of "
                f"specified axis sizes ({known}) does not evenly divide {n}"
            )
        return tuple(n // known if s == -1 else s for s in new)
    if math.prod(new) != n:
        raise TypeError(f"cannot reshape array of shape {shp} (size {n}) into shape {shown} (size {math.prod(new)})")
    return new


def _numpy_reshape_shape(a: np.ndarray, shape: Any, order: str) -> tuple[int, ...]:
    """The shape numpy's ``a.reshape(shape)`` gives, or numpy's error: JAX's jnp.reshape hands a
    numpy array to its own reshape method (a zero-stride view stands in for ``a``: no copy)."""
    return np.broadcast_to(np.empty((), np.int8), a.shape).reshape(shape, order="F" if order == "F" else "C").shape


def reshape(a: Any, shape: Any = None, order: str = "C", *, copy: bool | None = None, out_sharding: Any = None) -> Any:
    """Give ``a`` a new shape with the same number of elements; one entry may be -1.

    ``order='F'`` reads and writes elements in column-major order (``'A'`` means ``'C'`` for
    fjax arrays, which are always C-ordered).
    """
    if out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.apply(reshape(a, shape, order, copy=copy), out_sharding, "jnp.reshape")
    given = a
    a = _arr("reshape", a)
    if order not in ("C", "F", "A"):
        raise ValueError(f"reshape: order must be 'C', 'F' or 'A', got {order!r}")
    if shape is None:
        raise TypeError("reshape: the shape argument is required")
    new = _shape_tuple("reshape", shape)
    try:
        new = _reshape_shape(tuple(a.shape), new, shape if isinstance(shape, (int, np.integer)) else new)
    except (TypeError, ZeroDivisionError):
        if not isinstance(given, np.ndarray):
            raise
        new = _numpy_reshape_shape(given, shape, order)  # numpy's ValueError, or the shape it accepts
    if order == "F":
        rev = lax.transpose(a, tuple(range(a.ndim - 1, -1, -1)))
        out = lax.reshape(rev, new[::-1])
        return lax.transpose(out, tuple(range(len(new) - 1, -1, -1)))
    return lax.reshape(a, new)


def ravel(a: Any, order: str = "C", *, out_sharding: Any = None) -> Any:
    """Flatten ``a`` to 1-D, reading in C (row-major) or ``order='F'`` (column-major) order.

    As JAX, ``order='K'`` and ``'A'`` raise NotImplementedError."""
    if out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.apply(ravel(a, order), out_sharding, "jnp.ravel")
    a = _arr("ravel", a)
    return _ravel_order(a, order)


def _ravel_order(a: Any, order: str) -> Any:
    if order == "K":
        raise NotImplementedError("Ravel not implemented for order='K'.")
    if order == "A":
        raise NotImplementedError("np.reshape order=A is not implemented.")
    if order == "F":
        a = lax.transpose(a, tuple(range(a.ndim - 1, -1, -1)))
    elif order != "C":
        raise ValueError(f"Unexpected value for 'order' argument: {order}.")
    return lax.reshape(a, (a.size,))


def transpose(a: Any, axes: Sequence[int] | None = None) -> Any:
    """Permute the dimensions of ``a`` (reverse them when ``axes`` is None)."""
    a = _arr("transpose", a)
    nd = a.ndim
    if axes is None:
        perm = tuple(range(nd))[::-1]
    else:
        axes = tuple(axes) if not isinstance(axes, (int, np.integer)) else (axes,)
        # as in JAX: an axis out of range is a ValueError, a non-permutation a TypeError (lax's)
        perm = tuple(_axis("transpose", ax, nd) for ax in axes)
        if len(axes) != nd or len(set(perm)) != nd:
            raise TypeError(
                f"transpose permutation isn't a permutation of operand dimensions, got permutation {perm} "
                f"for operand shape {tuple(a.shape)}."
            )
    return lax.transpose(a, perm)


def permute_dims(a: Any, axes: Sequence[int]) -> Any:
    """Array API name of transpose (``axes`` required)."""
    return transpose(a, axes)


def matrix_transpose(x: Any, /) -> Any:
    """Swap the last two axes of ``x`` (which must have at least 2 dimensions)."""
    x = _arr("matrix_transpose", x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose requires at least 2 dimensions; got ndim={x.ndim}")
    perm = list(range(x.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return lax.transpose(x, perm)


def moveaxis(a: Any, source: int | Sequence[int], destination: int | Sequence[int]) -> Any:
    """Move axes ``source`` to positions ``destination``; the others keep their order."""
    a = _arr("moveaxis", a)
    nd = a.ndim
    src = _index_tuple(source)
    dst = _index_tuple(destination)
    if len(src) != len(dst):
        raise ValueError(
            f"moveaxis: inconsistent number of elements: {len(src)} vs {len(dst)} (source={source}, "
            f"destination={destination})"
        )
    src = _axes("moveaxis", src, nd)
    dst = _axes("moveaxis", dst, nd)
    perm = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return lax.transpose(a, perm)


def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    """Interchange two axes."""
    a = _arr("swapaxes", a)
    i, j = _axis("swapaxes", axis1, a.ndim), _axis("swapaxes", axis2, a.ndim)
    perm = list(range(a.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(a, perm)


def squeeze(a: Any, axis: int | Sequence[int] | None = None) -> Any:
    """Remove size-1 dimensions (all of them, or the given ones, which must have size 1)."""
    a = _arr("squeeze", a)
    if axis is None:
        dims = tuple(i for i, s in enumerate(a.shape) if s == 1)
    else:
        dims = _axes("squeeze", axis, a.ndim)
        if any(a.shape[d] != 1 for d in dims):
            raise ValueError(
                "cannot select an axis to squeeze out which has size not equal to one, got "
                f"shape={tuple(a.shape)} and dimensions={dims}"
            )
    return lax.squeeze(a, dims)


def expand_dims(a: Any, axis: int | Sequence[int]) -> Any:
    """Insert size-1 dimensions at positions ``axis`` of the result."""
    a = _arr("expand_dims", a)
    axes = _index_tuple(axis)
    nd_out = a.ndim + len(axes)
    dims = tuple(_util.canonicalize_axis(d, nd_out, "expand_dims") for d in axes)
    if len(set(dims)) != len(dims):
        raise ValueError(f"repeated axis in lax.expand_dims: {axes}")
    return lax.expand_dims(a, dims)


# --------------------------------------------------------------------------------------------
# broadcasting


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape that numpy broadcasting of ``shapes`` produces (ValueError if incompatible)."""
    shps = [(s,) if isinstance(s, (int, np.integer)) else tuple(int(d) for d in s) for s in shapes]
    if not shps:
        return ()
    return _util.broadcast_shapes("broadcast_shapes", *shps)


def broadcast_to(array: Any, shape: Any, *, out_sharding: Any = None) -> Any:
    """Broadcast ``array`` to ``shape`` with numpy's rules."""
    if out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.apply(broadcast_to(array, shape), out_sharding, "jnp.broadcast_to")
    a = _arr("broadcast_to", array)
    shp = _shape_tuple("broadcast_to", shape)
    err = broadcast_to_error(core.get_aval(a), shp)
    if err is not None:
        raise err
    return _util.broadcast_to_shape(a, shp)


def broadcast_arrays(*args: Any) -> list:
    """Broadcast all arguments against each other."""
    xs = [_arr("broadcast_arrays", x) for x in args]
    shp = _util.broadcast_shapes("broadcast_arrays", *[tuple(x.shape) for x in xs])
    return [_util.broadcast_to_shape(x, shp) for x in xs]


def atleast_1d(*arys: Any) -> Any:
    """View inputs as arrays with at least one dimension (a list if several inputs)."""
    out = []
    for x in arys:
        x = _arr("atleast_1d", x)
        out.append(lax.reshape(x, (1,)) if x.ndim == 0 else x)
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys: Any) -> Any:
    """View inputs as arrays with at least two dimensions ((n,) becomes (1, n))."""
    out = []
    for x in arys:
        x = _arr("atleast_2d", x)
        if x.ndim < 2:
            x = lax.reshape(x, (1,) * (2 - x.ndim) + tuple(x.shape))
        out.append(x)
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys: Any) -> Any:
    """View inputs as arrays with at least three dimensions ((n,) -> (1, n, 1), (m, n) -> (m, n, 1))."""
    out = []
    for x in arys:
        x = _arr("atleast_3d", x)
        if x.ndim == 0:
            x = lax.reshape(x, (1, 1, 1))
        elif x.ndim == 1:
            x = lax.reshape(x, (1, x.shape[0], 1))
        elif x.ndim == 2:
            x = lax.reshape(x, tuple(x.shape) + (1,))
        out.append(x)
    return out[0] if len(out) == 1 else out


# --------------------------------------------------------------------------------------------
# joining


def _promote_all(fn: str, arrays: Sequence[Any], dtype: Any = None) -> list:
    if isinstance(arrays, (Array, Tracer, np.ndarray)):
        arrays = list(arrays)
    arrays = list(arrays)
    _util.check_arraylike(fn, *arrays)
    xs = _util.promote_dtypes(fn, *arrays) if len(arrays) > 1 else [_util.to_fjax(a, fn) for a in arrays]
    if dtype is not None:
        dt = dtypes.canonicalize_dtype(dtype)
        xs = [lax.convert_element_type(x, dt) for x in xs]
    return xs


def _concat(xs: list, axis: int) -> Any:
    if len(xs) == 1:
        return xs[0]
    return _slicing().concatenate(xs, axis)


def _key_arrays(fn_name: str, arrays: Any) -> list | None:
    """The typed key arrays in ``arrays`` when it holds them (all its items must be then), else None."""
    from fjax._prng import PRNGKeyArray  # noqa: PLC0415 - fjax._prng imports the tree modules

    if not isinstance(arrays, (list, tuple)) or not any(isinstance(a, PRNGKeyArray) for a in arrays):
        return None
    if not all(isinstance(a, PRNGKeyArray) for a in arrays):
        raise TypeError(f"{fn_name}: cannot combine key arrays with arrays of a numeric dtype")
    return list(arrays)


def _keys_like(data: Any) -> Any:
    from fjax._prng import PRNGKeyArray  # noqa: PLC0415

    return PRNGKeyArray(data)


def concatenate(arrays: Sequence[Any], axis: int | None = 0, dtype: Any = None) -> Any:
    """Join arrays along an existing axis (``axis=None`` flattens them first)."""
    keys = _key_arrays("concatenate", arrays)
    if keys is not None:  # typed keys: join their data (whose last axis holds the key words)
        if axis is None:
            keys, axis = [k.ravel() for k in keys], 0
        if any(k.ndim == 0 for k in keys):
            raise ValueError("Zero-dimensional arrays cannot be concatenated.")
        ax = _util.canonicalize_axis(axis, keys[0].ndim, "concatenate")
        return _keys_like(concatenate([k._base for k in keys], axis=ax))
    if isinstance(arrays, (Array, Tracer, np.ndarray)):
        if np.ndim(arrays) == 0:
            raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    xs = _promote_all("concatenate", arrays, dtype)
    if not xs:
        raise ValueError("Need at least one array to concatenate.")
    if axis is None:
        xs = [lax.reshape(x, (x.size,)) for x in xs]
        axis = 0
    if any(x.ndim == 0 for x in xs):
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    nd = xs[0].ndim
    ax = _axis("concatenate", axis, nd)
    # JAX's lax.concatenate shape errors (TypeError)
    shapes = ", ".join(str(tuple(y.shape)) for y in xs)
    if any(x.ndim != nd for x in xs):
        raise TypeError(f"Cannot concatenate arrays with different numbers of dimensions: got {shapes}.")
    for x in xs:
        if any(s != t for i, (s, t) in enumerate(zip(x.shape, xs[0].shape)) if i != ax):
            raise TypeError(
                "Cannot concatenate arrays with shapes that differ in dimensions other than the one being "
                f"concatenated: concatenating along dimension {ax} for shapes {shapes}."
            )
    return _concat(xs, ax)


def stack(arrays: Sequence[Any], axis: int = 0, out: None = None, dtype: Any = None) -> Any:
    """Join arrays of one shape along a new axis."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.stack is not supported.")
    keys = _key_arrays("stack", arrays)
    if keys is not None:  # typed keys: stack their data (whose last axis holds the key words)
        if not keys:
            raise ValueError("Need at least one array to stack.")
        ax = _util.canonicalize_axis(axis, keys[0].ndim + 1, "stack")
        return _keys_like(stack([k._base for k in keys], axis=ax))
    xs = _promote_all("stack", arrays, dtype)
    if not xs:
        raise ValueError("Need at least one array to stack.")
    shp = tuple(xs[0].shape)
    if any(tuple(x.shape) != shp for x in xs):
        got = ", ".join(str(tuple(x.shape)) for x in xs)
        raise ValueError(f"All input arrays must have the same shape. Got {got}.")
    ax = _util.canonicalize_axis(axis, len(shp) + 1, "stack")
    return _concat([lax.expand_dims(x, (ax,)) for x in xs], ax)


def hstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    """Stack horizontally (along axis 1, or axis 0 for 1-D inputs)."""
    xs = [atleast_1d(x) for x in _promote_all("hstack", tup, dtype)]
    if not xs:
        raise ValueError("Need at least one array to concatenate.")
    return concatenate(xs, axis=0 if xs[0].ndim == 1 else 1)


def vstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    """Stack vertically (along axis 0, after making inputs at least 2-D)."""
    xs = [atleast_2d(x) for x in _promote_all("vstack", tup, dtype)]
    if not xs:
        raise ValueError("Need at least one array to concatenate.")
    return concatenate(xs, axis=0)


def dstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    """Stack depth-wise (along axis 2, after making inputs at least 3-D)."""
    xs = [atleast_3d(x) for x in _promote_all("dstack", tup, dtype)]
    if not xs:
        raise ValueError("Need at least one array to concatenate.")
    return concatenate(xs, axis=2)


def column_stack(tup: Sequence[Any]) -> Any:
    """Stack 1-D arrays as columns of a 2-D array (2-D inputs are stacked as they are)."""
    xs = _promote_all("column_stack", tup)
    xs = [lax.reshape(x, (x.size, 1)) if x.ndim < 2 else x for x in xs]
    if not xs:
        raise ValueError("Need at least one array to concatenate.")
    return concatenate(xs, axis=1)


def append(arr: Any, values: Any, axis: int | None = None) -> Any:
    """Append ``values`` to ``arr`` (flattening both when ``axis`` is None)."""
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


# --------------------------------------------------------------------------------------------
# splitting


def _split(fn: str, ary: Any, indices_or_sections: Any, axis: int, equal: bool) -> list:
    a = _arr(fn, ary)
    ax = _axis(fn, axis, a.ndim)
    n = a.shape[ax]
    if isinstance(indices_or_sections, (int, np.integer)) or (
        isinstance(indices_or_sections, (Array, Tracer, np.ndarray)) and np.ndim(indices_or_sections) == 0
    ):
        k = _static_int(indices_or_sections, f"in jax.numpy.{fn} argument 1")
        if k <= 0:
            raise ValueError(f"{fn}: number of sections must be larger than 0, got {k}")
        if equal and n % k:
            raise ValueError(f"array split does not result in an equal division: rest is {n % k}")
        q, r = divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
        bounds = np.cumsum([0] + sizes).tolist()
    else:
        idx = np.asarray(core.concrete_or_error(indices_or_sections, f"in jax.numpy.{fn} argument 1"))
        if idx.ndim != 1 or (idx.size and _dkind(idx.dtype) not in "iu"):
            raise TypeError(f"{fn}: indices must be an int or a 1-D sequence of integers, got {indices_or_sections!r}")
        bounds = [0] + [int(i) for i in idx] + [n]
    out = []
    pre = (slice(None),) * ax
    for s, e in zip(bounds[:-1], bounds[1:]):
        out.append(getitem(a, pre + (slice(s, e),)))
    return out


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    """Split into equal sections (an int that must divide the axis) or at the given indices."""
    return _split("split", ary, indices_or_sections, axis, True)


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    """Like split, but an int number of sections need not divide the axis evenly."""
    return _split("array_split", ary, indices_or_sections, axis, False)


def hsplit(ary: Any, indices_or_sections: Any) -> list:
    """Split along axis 1 (axis 0 for 1-D arrays)."""
    a = _arr("hsplit", ary)
    if a.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return _split("hsplit", a, indices_or_sections, 1 if a.ndim > 1 else 0, True)


def vsplit(ary: Any, indices_or_sections: Any) -> list:
    """Split along axis 0 (arrays of at least 2 dimensions)."""
    a = _arr("vsplit", ary)
    if a.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return _split("vsplit", a, indices_or_sections, 0, True)


def dsplit(ary: Any, indices_or_sections: Any) -> list:
    """Split along axis 2 (arrays of at least 3 dimensions)."""
    a = _arr("dsplit", ary)
    if a.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return _split("dsplit", a, indices_or_sections, 2, True)


# --------------------------------------------------------------------------------------------
# tiling & repeating


def tile(A: Any, reps: Any) -> Any:
    """Repeat the whole of ``A`` ``reps`` times along each axis."""
    a = _arr("tile", A)
    reps_t = _shape_tuple("tile", reps)
    if any(r < 0 for r in reps_t):
        raise ValueError(f"tile: negative repetitions {reps_t}")
    nd = max(a.ndim, len(reps_t))
    reps_t = (1,) * (nd - len(reps_t)) + reps_t
    shp = (1,) * (nd - a.ndim) + tuple(a.shape)
    a = lax.reshape(a, shp)
    big = []
    for r, s in zip(reps_t, shp):
        big += [r, s]
    b = lax.broadcast_in_dim(a, tuple(big), tuple(range(1, 2 * nd, 2)))
    return lax.reshape(b, tuple(r * s for r, s in zip(reps_t, shp)))


def repeat(
    a: Any, repeats: Any, axis: int | None = None, *, total_repeat_length: int | None = None, out_sharding: Any = None
) -> Any:
    """Repeat each element of ``a`` (an int, or per-element counts along ``axis``).

    Array ``repeats`` must be concrete unless ``total_repeat_length`` (the static output length
    along ``axis``) is given; extra output positions repeat the last element, as in JAX.
    """
    if out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.apply(
            repeat(a, repeats, axis, total_repeat_length=total_repeat_length), out_sharding, "jnp.repeat"
        )
    a = _arr("repeat", a)
    if axis is None:
        a = lax.reshape(a, (a.size,))
        axis = 0
    ax = _axis("repeat", axis, a.ndim)
    n = a.shape[ax]
    if total_repeat_length is not None:
        total_repeat_length = _static_int(total_repeat_length, "total_repeat_length of repeat")
    pre = (slice(None),) * ax
    if isinstance(repeats, (int, np.integer)) or (np.ndim(repeats) == 0 and not isinstance(repeats, Tracer)):
        r = _static_int(repeats, "repeats argument of repeat")
        if r < 0:
            raise ValueError(f"repeat: repeats may not contain negative values, got {r}")
        shp = list(a.shape)
        b = lax.broadcast_in_dim(
            a, tuple(shp[: ax + 1] + [r] + shp[ax + 1 :]), tuple(i if i <= ax else i + 1 for i in range(a.ndim))
        )
        shp[ax] = n * r
        out = lax.reshape(b, tuple(shp))
        if total_repeat_length is None or total_repeat_length == n * r:
            return out
        idx = np.minimum(np.arange(total_repeat_length), max(n * r - 1, 0))
        if n * r == 0:
            raise ValueError("repeat: total_repeat_length is larger than the (empty) output")
        return getitem(out, pre + (idx,))
    reps_val = (
        repeats.to_concrete_value()
        if isinstance(repeats, Tracer)
        else np.asarray(repeats._value if isinstance(repeats, Array) else repeats)
    )
    if reps_val is not None:
        reps_arr = np.broadcast_to(np.asarray(reps_val), (n,)) if np.ndim(reps_val) <= 1 else None
        if reps_arr is None or (np.ndim(reps_val) == 1 and len(reps_val) not in (1, n)):
            raise ValueError(f"repeat: repeats of shape {np.shape(reps_val)} does not match axis of size {n}")
        if np.any(reps_arr < 0):
            raise ValueError("repeat: repeats may not contain negative values")
        idx = np.repeat(np.arange(n), reps_arr)
        if total_repeat_length is not None:
            # as JAX: positions past sum(repeats) take the last element of ``a``
            idx = np.concatenate([idx, np.full(max(total_repeat_length - idx.size, 0), max(n - 1, 0))])
            idx = idx[:total_repeat_length]
        return getitem(a, pre + (idx.astype(_INDEX_DTYPE),))
    if total_repeat_length is None:
        core.concrete_or_error(
            repeats,
            "When jit-compiling jnp.repeat, the total number of repeats must be static. To fix this, either "
            "specify a static value for `repeats`, or pass a static value to `total_repeat_length`.",
        )
    from fjax.lax import other  # noqa: PLC0415

    reps = lax.convert_element_type(
        _util.broadcast_to_shape(repeats, (n,)) if repeats.ndim == 0 else repeats, _INDEX_DTYPE
    )
    if core.get_aval(reps).shape != (n,):
        raise ValueError(f"repeat: repeats of shape {core.get_aval(reps).shape} does not match axis of size {n}")
    csum = other.cumsum(reps, 0)
    k = lax.broadcasted_iota(_INDEX_DTYPE, (total_repeat_length, n), 0)
    cnt = lax.reduce_sum(
        lax.convert_element_type(lax.le(lax.broadcast_in_dim(csum, (total_repeat_length, n), (1,)), k), _INDEX_DTYPE),
        (1,),
    )
    idx = lax.min(cnt, Array(np.array(max(n - 1, 0), _INDEX_DTYPE), False))
    return getitem(a, pre + (idx,))


# --------------------------------------------------------------------------------------------
# flipping, rolling, rotating


def flip(m: Any, axis: int | Sequence[int] | None = None) -> Any:
    """Reverse the order of elements along ``axis`` (all axes if None)."""
    a = _arr("flip", m)
    dims = _axes("flip", axis, a.ndim)
    return lax.rev(a, dims) if dims else a


def fliplr(m: Any) -> Any:
    """Reverse along axis 1."""
    a = _arr("fliplr", m)
    if a.ndim < 2:
        raise ValueError("fliplr requires an array with at least 2 dimensions")
    return lax.rev(a, (1,))


def flipud(m: Any) -> Any:
    """Reverse along axis 0."""
    a = _arr("flipud", m)
    if a.ndim < 1:
        raise ValueError("flipud requires an array with at least 1 dimension")
    return lax.rev(a, (0,))


def _roll_static(a: Any, shift: int, ax: int) -> Any:
    n = a.shape[ax]
    if n == 0:
        return a
    s = shift % n
    if s == 0:
        return a
    pre = (slice(None),) * ax
    return _concat([getitem(a, pre + (slice(n - s, None),)), getitem(a, pre + (slice(0, n - s),))], ax)


def _roll_dynamic(a: Any, shift: Any, ax: int) -> Any:
    n = a.shape[ax]
    if n == 0:
        return a
    s = lax.convert_element_type(shift, _INDEX_DTYPE)
    nn = Array(np.array(n, _INDEX_DTYPE), False)
    s = lax.rem(s, nn)
    s = lax.select(lax.lt(s, Array(np.array(0, _INDEX_DTYPE), False)), lax.add(s, nn), s)
    aa = _concat([a, a], ax)
    start = [Array(np.array(0, _INDEX_DTYPE), False)] * a.ndim
    start[ax] = lax.sub(nn, s)
    return _slicing().dynamic_slice(aa, start, tuple(a.shape), allow_negative_indices=False)


def roll(a: Any, shift: Any, axis: int | Sequence[int] | None = None) -> Any:
    """Roll elements along ``axis`` by ``shift`` (flattened when ``axis`` is None); shifts may be traced."""
    x = _arr("roll", a)
    if axis is None:
        return lax.reshape(roll(ravel(x), shift, 0), tuple(x.shape))
    axes = _index_tuple(axis)
    if isinstance(shift, Tracer) or (isinstance(shift, (Array, np.ndarray)) and np.ndim(shift) > 0):
        shifts_b = shift
        if np.ndim(shifts_b) == 0:
            shifts = [shifts_b] * len(axes)
        else:
            shifts = [getitem(shifts_b, i) for i in range(core.get_aval(shifts_b).shape[0])]
    elif isinstance(shift, (list, tuple)):
        shifts = list(shift)
    else:
        shifts = [shift]
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(axes) == 1 and len(shifts) > 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: 'shift' and 'axis' must have the same length, got {len(shifts)} and {len(axes)}")
    for s, ax in zip(shifts, axes):
        ax = _axis("roll", ax, x.ndim)
        # (a float shift is truncated toward zero, as JAX's roll converts it)
        if isinstance(s, Tracer):
            if _dkind(s.dtype) not in "iu":
                s = lax.convert_element_type(s, np.int32)
            x = _roll_dynamic(x, s, ax)
        else:
            if isinstance(s, (float, np.floating)) or (isinstance(s, (Array, np.ndarray)) and _dkind(s.dtype) == "f"):
                s = int(np.asarray(s._value if isinstance(s, Array) else s))
            x = _roll_static(x, _static_int(s, "shift argument of roll"), ax)
    return x


def rot90(m: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Any:
    """Rotate by 90 degrees ``k`` times in the plane of ``axes`` (from the first towards the second)."""
    a = _arr("rot90", m)
    # (JAX 0.10.2's messages)
    if a.ndim < 2:
        raise ValueError(
            "rot90 requires its first argument to have ndim at least two, but got first argument of shape "
            f"{tuple(a.shape)}, which has ndim {a.ndim}"
        )
    ax1, ax2 = axes  # more or fewer than two: Python's "too many values to unpack", as in JAX
    a0, a1 = _axis("rot90", ax1, a.ndim), _axis("rot90", ax2, a.ndim)
    if a0 == a1:
        raise ValueError("Axes must be different")
    k = _static_int(k, "k argument of rot90") % 4
    if k == 0:
        return a
    if k == 2:
        return lax.rev(a, (a0, a1))
    perm = list(range(a.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return lax.transpose(lax.rev(a, (a1,)), perm)
    return lax.rev(lax.transpose(a, perm), (a1,))


# --------------------------------------------------------------------------------------------
# padding; take, insert, delete, trace: fjax/numpy/_shape_take.py (split off for size)

from fjax.numpy._shape_take import (  # noqa: E402,F401 - the private helpers too
    _pad_constant,
    _pad_index,
    _pad_widths,
    _take_mode,
    _wrap_idx,
    delete,
    insert,
    pad,
    take,
    take_along_axis,
    trace,
)
