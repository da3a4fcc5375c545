"""More of ``jax.numpy`` (second part): partitions, counting and histograms, set operations,
convolution, statistics, interpolation, polynomials, window functions, ``vectorize`` and the
small predicates and I/O helpers numpy has.

Compositions of other ``fjax.numpy`` functions, so every transform works through them.
Convolution, statistics, interpolation, polynomials and window functions live in
``_stats_poly.py``, re-exported from here.
"""

from __future__ import annotations

import builtins
import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fjax import _out_sharding, core, dtypes, lax
from fjax.numpy import _creation as C
from fjax.numpy import _reductions as R
from fjax.numpy import _shape as S
from fjax.numpy import _sorting as SO
from fjax.numpy import _ufuncs as U
from fjax.numpy import _util
from fjax.numpy._linalg import einsum_path  # noqa: F401 - exported from here
from fjax.numpy._setops import intersect1d, setdiff1d, setxor1d  # noqa: F401 - re-exported

__all__ = [
    "ComplexWarning",
    "argpartition",
    "array_repr",
    "array_str",
    "astype",
    "bartlett",
    "bincount",
    "bitwise_count",
    "blackman",
    "block",
    "character",
    "convolve",
    "corrcoef",
    "correlate",
    "cov",
    "digitize",
    "einsum_path",
    "flexible",
    "frombuffer",
    "fromfunction",
    "fromiter",
    "fromstring",
    "get_printoptions",
    "hamming",
    "hanning",
    "histogram",
    "histogram2d",
    "histogram_bin_edges",
    "histogramdd",
    "interp",
    "intersect1d",
    "iscomplex",
    "iscomplexobj",
    "isin",
    "isreal",
    "isrealobj",
    "isscalar",
    "iterable",
    "load",
    "nanpercentile",
    "nanquantile",
    "object_",
    "packbits",
    "partition",
    "poly",
    "polyadd",
    "polyder",
    "polydiv",
    "polyint",
    "polymul",
    "polysub",
    "polyval",
    "printoptions",
    "resize",
    "save",
    "savez",
    "set_printoptions",
    "setdiff1d",
    "setxor1d",
    "sort_complex",
    "trapezoid",
    "trim_zeros",
    "union1d",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
    "unpackbits",
    "unstack",
    "unwrap",
    "vander",
    "vectorize",
]


ComplexWarning = np.exceptions.ComplexWarning
character = np.character
flexible = np.flexible
object_ = np.object_
get_printoptions = np.get_printoptions
printoptions = np.printoptions
set_printoptions = np.set_printoptions
iterable = np.iterable
save = np.save
savez = np.savez


def _arr(x: Any, name: str) -> Any:
    _util.check_arraylike(name, x)
    return _util.to_fjax(x, name)


def _concrete(x: Any, what: str) -> np.ndarray:
    return np.asarray(core.concrete_or_error(x, f"The error occurred in {what}"))


# ---------------------------------------------------------------------------------------------
# predicates, conversions, I/O


def isscalar(element: Any) -> bool:
    """True for Python/numpy scalars and rank-0 arrays (as ``jax.numpy.isscalar``)."""
    if isinstance(element, (bool, int, float, complex, np.generic)):
        return True
    return hasattr(element, "shape") and hasattr(element, "dtype") and np.ndim(element) == 0


def iscomplexobj(x: Any) -> bool:
    """True when ``x``'s dtype is complex."""
    if x is None:
        return False
    dt = getattr(x, "dtype", None)
    if dt is None:
        dt = np.asarray(x).dtype
    return np.issubdtype(dt, np.complexfloating)


def isrealobj(x: Any) -> bool:
    """True when ``x``'s dtype is not complex."""
    return not iscomplexobj(x)


def iscomplex(x: Any) -> Any:
    """Elementwise: the imaginary part is nonzero."""
    im = U.imag(_arr(x, "iscomplex"))
    return lax.ne(im, lax.full_like(im, 0))  # a zero of im's own dtype, as JAX (the result is not weak)


def isreal(x: Any) -> Any:
    """Elementwise: the imaginary part is zero."""
    im = U.imag(_arr(x, "isreal"))
    return lax.eq(im, lax.full_like(im, 0))


def astype(x: Any, dtype: Any, /, *, copy: bool = False, device: Any = None) -> Any:
    """``x`` converted to ``dtype`` (the Array-API function form of ``x.astype``)."""
    if getattr(x, "dtype", None) is dtypes.KEY_DTYPE and hasattr(x, "_base"):
        return x.astype(dtype)  # a typed key array: only the key dtype itself
    out = _arr(x, "astype").astype(dtypes.canonicalize_user_dtype(C._unwrap_type(dtype), "astype"))
    return _out_sharding.on_device(out, device)


def array_repr(arr: Any, max_line_width: Any = None, precision: Any = None, suppress_small: Any = None) -> str:
    """``repr`` of the array."""
    return repr(C.asarray(arr))


def array_str(a: Any, max_line_width: Any = None, precision: Any = None, suppress_small: Any = None) -> str:
    """numpy's ``array_str`` of the array's values."""
    return np.array_str(np.asarray(a), max_line_width, precision, suppress_small)


def frombuffer(buffer: Any, dtype: Any = float, count: int = -1, offset: int = 0) -> Any:
    """An array from a bytes-like object."""
    return C.asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string: str, dtype: Any = float, count: int = -1, *, sep: str) -> Any:
    """An array from text numbers separated by ``sep``."""
    return C.asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromiter(iterable: Any, dtype: Any, count: int = -1) -> Any:
    """An array from an iterable."""
    return C.asarray(np.fromiter(iterable, dtype=dtype, count=count))


def fromfunction(function: Callable[..., Any], shape: Sequence[int], *, dtype: Any = float, **kwargs: Any) -> Any:
    """``function(*index_arrays)`` over a grid of ``shape`` (the index arrays have ``dtype``)."""
    from fjax.api import vmap

    shape = tuple(int(d) for d in shape)
    f = functools.partial(function, **kwargs)
    for i in range(len(shape) - 1, -1, -1):
        f = vmap(f, in_axes=tuple(0 if j == i else None for j in range(len(shape))))
    return f(*[C.arange(n, dtype=dtype) for n in shape])


def load(file: Any, *args: Any, **kwargs: Any) -> Any:
    """``numpy.load``, with arrays returned as fjax arrays. numpy saves ``bfloat16`` data as
    2-byte void (``V2``), which is read back as ``bfloat16`` (as JAX's ``load``); an array of a
    dtype fjax does not hold comes back as the numpy array."""
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray):
        if out.dtype == "V2":
            out = out.view(dtypes.bfloat16)
        try:
            return C.asarray(out)
        except TypeError:
            return out
    return out


# ---------------------------------------------------------------------------------------------
# partitions


def _partition_operand(a: Any, kth: int, axis: int, name: str) -> tuple:
    a = _arr(a, name)
    if dtypes.kind(a.dtype) == "c":
        raise NotImplementedError(f"jnp.{name} for complex dtype is not implemented.")
    axis = _util.canonicalize_axis(axis, a.ndim, name)
    kth = _util.canonicalize_axis(kth, a.shape[axis], name)
    return S.swapaxes(a, axis, -1), kth, axis


def _partition_bottom(arr: Any, kth: int) -> tuple:
    """``top_k`` of the negated ``arr`` (unsigned values shifted by one so that 0 is largest), and
    whether they were shifted."""
    if dtypes.kind(arr.dtype) == "u":
        return lax.top_k(lax.neg(lax.add(arr, lax.full_like(arr, 1))), kth + 1), True
    return lax.top_k(lax.neg(arr), kth + 1), False


def partition(a: Any, kth: int, axis: int = -1) -> Any:
    """``a`` with the ``kth`` element (along ``axis``) in sorted position, smaller before it and
    larger after. As JAX (two ``top_k``): the first ``kth + 1`` in ascending order, the rest in
    descending order; NaNs go last (not as numpy's ``partition``), as do ``-0.0`` before ``0.0``."""
    arr, kth, axis = _partition_operand(a, kth, axis, "partition")
    (bottom, _), shifted = _partition_bottom(arr, kth)
    bottom = lax.sub(lax.neg(bottom), lax.full_like(bottom, 1)) if shifted else lax.neg(bottom)
    top = lax.top_k(arr, arr.shape[-1] - kth - 1)[0]
    return S.swapaxes(lax.concatenate([bottom, top], arr.ndim - 1), -1, axis)


def argpartition(a: Any, kth: int, axis: int = -1) -> Any:
    """Indices that would ``partition`` ``a``: as JAX, the indices of the ``kth + 1`` smallest in
    ascending order of value, then the others in ascending order of index."""
    arr, kth, axis = _partition_operand(a, kth, axis, "argpartition")
    (_, bottom_ind), _ = _partition_bottom(arr, kth)
    # JAX takes the others through a proxy (1.0, 0.0 where picked) so that ties stay apart
    iota = lax.broadcasted_iota(bottom_ind.dtype, (*arr.shape, 1), arr.ndim - 1)
    picked = R.any(U.equal(iota, lax.expand_dims(bottom_ind, (arr.ndim - 1,))), axis=-1)
    proxy = lax.convert_element_type(lax.bitwise_not(picked), np.float32)
    top_ind = lax.top_k(proxy, arr.shape[-1] - kth - 1)[1]
    return S.swapaxes(lax.concatenate([bottom_ind, top_ind], arr.ndim - 1), -1, axis)


# ---------------------------------------------------------------------------------------------
# counting and histograms


def bincount(
    x: Any, weights: Any = None, minlength: int = 0, *, length: int | None = None, out_sharding: Any = None
) -> Any:
    """Counts (or sums of ``weights``) of each value of the non-negative integer array ``x``.

    Under tracing give ``length`` (the output size); otherwise it is ``max(x) + 1`` computed
    from the concrete input, at least ``minlength``. Negative values count in bin 0 and values
    past ``length`` are dropped, as in JAX.
    """
    if out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.apply(bincount(x, weights, minlength, length=length), out_sharding, "jnp.bincount")
    x = _arr(x, "bincount")
    if not np.issubdtype(x.dtype, np.integer):
        raise TypeError(f"x argument to bincount must have an integer type; got {x.dtype}")
    if x.ndim != 1:
        raise ValueError("only 1-dimensional input supported.")
    minlength = core.concrete_or_error(minlength, "The error occurred because of argument 'minlength' of jnp.bincount.")
    if length is None:
        c = _concrete(x, "jnp.bincount(): give length= to use it under tracing")
        length = builtins.max(int(minlength), int(c.max()) + 1 if c.size else 0)
    else:
        length = core.concrete_or_error(length, "The error occurred because of argument 'length' of jnp.bincount.")
    if weights is None:
        w = C.ones(x.shape, dtype=np.int32)
    else:
        w = S.broadcast_to(C.asarray(weights), x.shape)
    return C.zeros(length, w.dtype).at[U.clip(x, 0, None)].add(w, mode="drop")


def digitize(x: Any, bins: Any, right: bool = False, *, method: str | None = None) -> Any:
    """Indices of the bins (monotonic ``bins``, increasing or decreasing) that ``x`` falls in."""
    x = _arr(x, "digitize")
    bins = _arr(bins, "digitize")
    if bins.ndim != 1:
        # (JAX's digitize is jitted: it names bins as a tracer)
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins=JitTracer({core.get_aval(bins)})")
    if bins.shape[0] == 0:
        return C.zeros(x.shape, dtype=np.int32)
    side = "left" if right else "right"
    kw = {} if method is None else {"method": method}
    inc = SO.searchsorted(bins, x, side=side, **kw)
    dec = U.subtract(bins.shape[0], SO.searchsorted(bins[::-1], x, side=side, **kw))
    return U.where(U.greater_equal(bins[-1], bins[0]), inc, dec)


def histogram_bin_edges(a: Any, bins: Any = 10, range: Sequence[Any] | None = None, weights: Any = None) -> Any:  # noqa: A002
    """The bin edges ``histogram`` uses (``bins`` an int count or an array of edges)."""
    if isinstance(bins, str):
        raise NotImplementedError("string values for `bins` not implemented.")
    a = _arr(a, "histogram_bin_edges").ravel()
    (a,) = _util.promote_dtypes_inexact("histogram_bin_edges", a)
    if np.ndim(bins) == 1:
        return C.asarray(bins, dtype=a.dtype)
    bins = int(core.concrete_or_error(bins, "bins argument of histogram_bin_edges"))  # (JAX's context)
    if range is None:
        lo, hi = R.min(a), R.max(a)
    else:
        lo, hi = C.asarray(range[0], dtype=a.dtype), C.asarray(range[1], dtype=a.dtype)
    same = U.equal(lo, hi)
    lo = U.where(same, U.subtract(lo, 0.5), lo)
    hi = U.where(same, U.add(hi, 0.5), hi)
    return C.linspace(lo, hi, bins + 1, dtype=a.dtype)


def histogram(
    a: Any,
    bins: Any = 10,
    range: Sequence[Any] | None = None,
    weights: Any = None,
    density: bool | None = None,  # noqa: A002
) -> tuple[Any, Any]:
    """Counts (or weight sums, or densities) of ``a`` in ``bins``, and the bin edges."""
    if weights is not None and np.shape(weights) != np.shape(a):
        raise ValueError("weights should have the same shape as a.")
    a = _arr(a, "histogram").ravel()
    edges = histogram_bin_edges(a, bins, range, weights)
    nb = edges.shape[0] - 1
    idx = U.subtract(SO.searchsorted(edges, a, side="right"), 1)
    idx = U.where(U.equal(a, edges[-1]), nb - 1, idx)
    inside = U.logical_and(U.greater_equal(a, edges[0]), U.less_equal(a, edges[-1]))
    w = C.ones(a.shape, dtype=edges.dtype) if weights is None else C.asarray(weights).ravel().astype(edges.dtype)
    w = U.where(inside, w, 0)
    counts = C.zeros(nb, edges.dtype).at[U.clip(idx, 0, nb - 1)].add(w)
    if density:
        widths = U.subtract(edges[1:], edges[:-1])
        counts = U.divide(U.divide(counts, widths), R.sum(counts))
    return counts, edges


def histogramdd(
    sample: Any,
    bins: Any = 10,
    range: Sequence[Any] | None = None,
    weights: Any = None,
    density: bool | None = None,  # noqa: A002
) -> tuple[Any, list[Any]]:
    """Multidimensional histogram of ``sample`` (shape ``(N, D)``): counts and per-axis edges."""
    sample = _arr(sample, "histogramdd")
    (sample,) = _util.promote_dtypes_inexact("histogramdd", sample)
    if sample.ndim != 2:
        raise ValueError(f"sample must be 2-dimensional (N, D); got shape {sample.shape}")
    n, d = sample.shape
    bins_per = [bins] * d if np.ndim(bins) == 0 else list(bins)
    if len(bins_per) != d:
        raise ValueError(f"should be a bin for each dimension: got {len(bins_per)} for {d} dimensions")
    ranges = [None] * d if range is None else list(range)
    edges = [histogram_bin_edges(sample[:, i], bins_per[i], ranges[i]) for i in builtins.range(d)]
    nbins = [e.shape[0] - 1 for e in edges]
    flat = C.zeros((), dtype=np.int32)
    inside = C.ones((n,), dtype=bool)
    for i in builtins.range(d):
        x = sample[:, i]
        e = edges[i]
        idx = U.subtract(SO.searchsorted(e, x, side="right"), 1)
        idx = U.where(U.equal(x, e[-1]), nbins[i] - 1, idx)
        inside = U.logical_and(inside, U.logical_and(U.greater_equal(x, e[0]), U.less_equal(x, e[-1])))
        flat = U.add(U.multiply(flat, nbins[i]), U.clip(idx, 0, nbins[i] - 1))
    w = C.ones((n,), dtype=sample.dtype) if weights is None else C.asarray(weights).astype(sample.dtype)
    w = U.where(inside, w, 0)
    counts = C.zeros(int(np.prod(nbins)), sample.dtype).at[flat].add(w).reshape(tuple(nbins))
    if density:
        vol = functools.reduce(
            lambda acc, i: U.multiply(S.expand_dims(acc, -1), U.subtract(edges[i][1:], edges[i][:-1])),
            builtins.range(1, d),
            U.subtract(edges[0][1:], edges[0][:-1]),
        )
        counts = U.divide(U.divide(counts, vol), R.sum(counts))
    return counts, edges


def histogram2d(
    x: Any,
    y: Any,
    bins: Any = 10,
    range: Sequence[Any] | None = None,
    weights: Any = None,
    density: bool | None = None,  # noqa: A002
) -> tuple[Any, Any, Any]:
    """2-D histogram of the points ``(x, y)``: counts, x edges and y edges."""
    x, y = _util.promote_dtypes_inexact("histogram2d", x, y)
    if np.ndim(bins) == 1 and len(bins) != 2:
        bins = [bins, bins]
    counts, edges = histogramdd(S.stack([x, y], axis=1), bins, range, weights, density)
    return counts, edges[0], edges[1]


# ---------------------------------------------------------------------------------------------
# set operations


def isin(
    element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False, *, method: str = "auto"
) -> Any:
    """Elementwise: ``element`` occurs in ``test_elements`` (compared all-pairs)."""
    element = _arr(element, "isin")
    test = _arr(test_elements, "isin").ravel()
    eq = U.equal(element[..., None], test)
    out = R.any(eq, axis=-1) if test.shape[0] else C.zeros(element.shape, bool)
    return U.logical_not(out) if invert else out


def union1d(ar1: Any, ar2: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """Sorted unique values in either array."""
    a1, a2 = _util.promote_dtypes("union1d", ar1, ar2)
    return SO.unique(S.concatenate([a1.ravel(), a2.ravel()]), size=size, fill_value=fill_value)


def unique_values(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    """Sorted unique values of ``x`` (flattened); NaNs are kept apart (``equal_nan=False``), as JAX."""
    return SO.unique(x, equal_nan=False, size=size, fill_value=fill_value)


def unique_counts(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    """``(values, counts)`` of the unique values of ``x``, a named tuple as the Array API has."""
    values, counts = SO.unique(x, return_counts=True, equal_nan=False, size=size, fill_value=fill_value)
    return _UniqueCounts(values, counts)


def unique_inverse(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    """``(values, inverse_indices)`` with ``values[inverse_indices]`` rebuilding ``x``."""
    values, inv = SO.unique(x, return_inverse=True, equal_nan=False, size=size, fill_value=fill_value)
    return _UniqueInverse(values, inv.reshape(np.shape(x)))


def unique_all(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    """``(values, indices, inverse_indices, counts)`` of the unique values of ``x``."""
    values, idx, inv, counts = SO.unique(
        x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False, size=size, fill_value=fill_value
    )
    return _UniqueAll(values, idx, inv.reshape(np.shape(x)), counts)


def _namedtuple(name: str, fields: list[str]) -> type:
    import collections

    return collections.namedtuple(name, fields)


_UniqueCounts = _namedtuple("UniqueCountsResult", ["values", "counts"])
_UniqueInverse = _namedtuple("UniqueInverseResult", ["values", "inverse_indices"])
_UniqueAll = _namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])


# ---------------------------------------------------------------------------------------------
# misc


def sort_complex(a: Any) -> Any:
    """``a`` sorted (real part first, then imaginary) as a complex array."""
    a = _arr(a, "sort_complex")
    out = SO.sort(a)
    if not np.issubdtype(out.dtype, np.complexfloating):
        from fjax import dtypes

        out = out.astype(dtypes.result_type(out.dtype, np.complex64))
    return out


def resize(a: Any, new_shape: Any) -> Any:
    """``a`` flattened, repeated as needed and reshaped to ``new_shape``."""
    a = _arr(a, "resize")
    new_shape = (int(new_shape),) if np.ndim(new_shape) == 0 else tuple(int(d) for d in new_shape)
    if any(d < 0 for d in new_shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    size = int(np.prod(new_shape, dtype=np.int64))
    flat = a.ravel()
    if flat.shape[0] == 0 or size == 0:
        return C.zeros(new_shape, a.dtype)
    reps = -(-size // flat.shape[0])
    return S.tile(flat, reps)[:size].reshape(new_shape)


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    """The slices of ``x`` along ``axis``, as a tuple."""
    x = _arr(x, "unstack")
    if x.ndim == 0:
        raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was passed.")
    axis = _util.canonicalize_axis(axis, x.ndim, "unstack")
    return tuple(S.squeeze(lax.slice_in_dim(x, i, i + 1, axis=axis), axis) for i in range(x.shape[axis]))


def block(arrays: Any) -> Any:
    """Assemble an array from nested lists of blocks (numpy.block)."""

    def depth(x: Any) -> int:
        return 1 + depth(x[0]) if isinstance(x, list) and x else (1 if isinstance(x, list) else 0)

    if isinstance(arrays, tuple):
        raise TypeError("jax.numpy.block does not allow tuples, got {arrays!r}")
    list_depth = depth(arrays)
    leaves = []

    def collect(x: Any) -> None:
        if isinstance(x, list):
            for y in x:
                collect(y)
        else:
            leaves.append(C.asarray(x))

    collect(arrays)
    result_ndim = builtins.max([list_depth] + [a.ndim for a in leaves]) if leaves else list_depth

    def rec(x: Any, d: int) -> Any:
        if isinstance(x, list):
            parts = [rec(y, d + 1) for y in x]
            return S.concatenate(parts, axis=-(list_depth - d))
        a = C.asarray(x)
        return a.reshape((1,) * (result_ndim - a.ndim) + a.shape)

    return rec(arrays, 0)


def bitwise_count(x: Any, /) -> Any:
    """Number of 1 bits in the absolute value of each integer (uint8)."""
    x = _arr(x, "bitwise_count")
    if not np.issubdtype(x.dtype, np.integer) and x.dtype != np.bool_:
        # (JAX 0.10.2's words: lax.population_count refuses it)
        raise TypeError(f"population_count does not accept dtype {x.dtype}. Accepted dtypes are subtypes of integer.")
    if x.dtype == np.bool_:  # as JAX: booleans are promoted to the default integer first
        x = lax.convert_element_type(x, dtypes.default_int_dtype())
    return lax.population_count(U.abs(x) if np.issubdtype(x.dtype, np.signedinteger) else x).astype(np.uint8)


def packbits(a: Any, axis: int | None = None, bitorder: str = "big") -> Any:
    """Pack the elements of a boolean/integer array into the bits of uint8 values."""
    a = _arr(a, "packbits")
    if not (np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_):
        raise TypeError("Expected an input array of integer or boolean data type")
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    a = U.greater(a, 0).astype(np.uint8)
    if axis is None:
        a = a.ravel()
        axis = 0
    a = S.moveaxis(a, axis, -1)
    n = a.shape[-1]
    pad = (-n) % 8
    a = lax.pad(a, C.asarray(0, np.uint8), [(0, 0, 0)] * (a.ndim - 1) + [(0, pad, 0)])
    a = a.reshape(a.shape[:-1] + (-1, 8))
    shifts = C.arange(8, dtype=np.uint8)
    if bitorder == "big":
        shifts = shifts[::-1]
    out = R.sum(U.left_shift(a, shifts), axis=-1, dtype=np.uint8)
    return S.moveaxis(out, -1, axis)


def unpackbits(a: Any, axis: int | None = None, count: int | None = None, bitorder: str = "big") -> Any:
    """Unpack the bits of a uint8 array into a 0/1 uint8 array."""
    a = _arr(a, "unpackbits")
    if a.dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    shifts = C.arange(8, dtype=np.uint8)
    if bitorder == "big":
        shifts = shifts[::-1]
    bits = U.bitwise_and(U.right_shift(a[..., None], shifts), 1).astype(np.uint8)
    if axis is None:
        bits = bits.ravel()
        axis = 0
    else:
        axis = _util.canonicalize_axis(axis, a.ndim, "unpackbits")
        bits = S.moveaxis(bits, -1, axis + 1)
        bits = bits.reshape(a.shape[:axis] + (a.shape[axis] * 8,) + a.shape[axis + 1 :])
    if count is not None:
        bits = (
            lax.slice_in_dim(bits, 0, count, axis=axis)
            if count >= 0
            else lax.slice_in_dim(bits, 0, bits.shape[axis] + count, axis=axis)
        )
    return bits


# ---------------------------------------------------------------------------------------------
# vectorize


_DIMENSION_NAME = r"\w+"
_CORE_DIMENSION_LIST = f"(?:{_DIMENSION_NAME}(?:,{_DIMENSION_NAME})*)?"
_ARGUMENT = rf"\({_CORE_DIMENSION_LIST}\)"
_ARGUMENT_LIST = f"{_ARGUMENT}(?:,{_ARGUMENT})*"
_SIGNATURE = f"^{_ARGUMENT_LIST}->{_ARGUMENT_LIST}$"


def _checked_outputs(fn: Callable, sizes: dict, out_core: list, excluded: Any, signature: str) -> Callable:
    """``fn`` (one example's computation) with its outputs checked against the signature's output
    core dimensions, as JAX's vectorize checks them (its messages)."""
    ctx = f"on vectorized function with excluded={excluded!r} and signature={signature!r}"

    def checked(*args: Any) -> Any:
        out = fn(*args)
        shapes = [np.shape(o) for o in (out if isinstance(out, tuple) else [out])]
        if len(out_core) > 1 and not isinstance(out, tuple):
            raise TypeError(f"output must be a tuple when multiple outputs are expected, got: {out!r}\n{ctx}")
        if len(shapes) != len(out_core):
            raise TypeError(f"wrong number of output arguments: expected {len(out_core)}, got {len(shapes)} {ctx}")
        seen = dict(sizes)
        for shape, dims in zip(shapes, out_core):
            if len(shape) != len(dims):
                raise ValueError(f"output shape {tuple(shape)!r} does not match core dimensions {tuple(dims)!r} {ctx}")
            for dim, size in zip(dims, shape):
                if seen.setdefault(dim, size) != size:
                    raise ValueError(f"inconsistent size for core dimension {dim!r}: {size!r} vs {seen[dim]!r} {ctx}")
        return out

    return checked


def _parse_signature(signature: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    sig = signature.replace(" ", "")
    if not re.match(_SIGNATURE, sig):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    ins, outs = sig.split("->")
    parse = lambda s: [tuple(re.findall(_DIMENSION_NAME, arg)) for arg in re.findall(_ARGUMENT, s)]  # noqa: E731
    return parse(ins), parse(outs)


def check_core_dims(shapes: list, cores: list, excluded: Any, signature: str | None) -> dict[str, int]:
    """The sizes of a gufunc signature's core dimensions, checked over the inputs' shapes as JAX's
    vectorize checks them (its messages name the signature: jnp.linalg.solve and
    jax.scipy.linalg.solve_triangular raise them for mismatched operands)."""
    context = f" on vectorized function with excluded={excluded!r} and signature={signature!r}"
    sizes: dict[str, int] = {}
    for shape, core_dims in zip(shapes, cores):
        shape = tuple(shape)
        nc = len(core_dims)
        if len(shape) < nc:
            raise ValueError(
                f"input with shape {shape!r} does not have enough dimensions for all core dimensions "
                f"{tuple(core_dims)!r}{context}"
            )
        for d, n in zip(core_dims, shape[len(shape) - nc :]):
            if sizes.setdefault(d, n) != n:
                raise ValueError(f"inconsistent size for core dimension {d!r}: {n!r} vs {sizes[d]!r}{context}")
    return sizes


def vectorize(
    pyfunc: Callable[..., Any], *, excluded: frozenset = frozenset(), signature: str | None = None
) -> Callable[..., Any]:
    """Vectorize ``pyfunc`` over the leading (broadcast) dimensions of its arguments, with
    ``vmap``; ``signature`` (a gufunc signature like ``"(n),(n)->()"``) names core dimensions
    that ``pyfunc`` sees whole. ``excluded`` argument positions/names pass through unchanged."""
    from fjax.api import vmap

    if any(not isinstance(e, (int, str)) for e in excluded):
        raise TypeError(f"jax.numpy.vectorize can only exclude integer or string arguments, but excluded={excluded!r}")
    in_core, out_core = _parse_signature(signature) if signature is not None else (None, None)

    @functools.wraps(pyfunc)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        excluded_pos = {e for e in excluded if isinstance(e, int)}
        static_kw = {k: v for k, v in kwargs.items() if k in excluded}
        dyn_kw = {k: v for k, v in kwargs.items() if k not in excluded}
        dyn_idx = [i for i in range(len(args)) if i not in excluded_pos]
        dyn_args = [C.asarray(args[i]) for i in dyn_idx]
        kw_names = list(dyn_kw)
        dyn_args += [C.asarray(dyn_kw[k]) for k in kw_names]

        def call(*dyn: Any) -> Any:
            full = list(args)
            for i, v in zip(dyn_idx, dyn[: len(dyn_idx)]):
                full[i] = v
            kw = dict(static_kw)
            kw.update(zip(kw_names, dyn[len(dyn_idx) :]))
            return pyfunc(*full, **kw)

        if in_core is None:
            cores = [()] * len(dyn_args)
        else:
            if len(in_core) != len(dyn_args):
                raise TypeError(f"wrong number of positional arguments: expected {len(in_core)}, got {len(dyn_args)}")
            cores = in_core
        sizes = check_core_dims([a.shape for a in dyn_args], cores, excluded, signature)
        broadcast_shapes = [a.shape[: a.ndim - len(c)] for a, c in zip(dyn_args, cores)]
        bshape = _util.broadcast_shapes("vectorize", *broadcast_shapes)
        dyn_args = [S.broadcast_to(a, bshape + a.shape[a.ndim - len(c) :]) for a, c in zip(dyn_args, cores)]
        f = call if out_core is None else _checked_outputs(call, sizes, out_core, excluded, signature)
        for _ in range(len(bshape)):
            f = vmap(f)
        out = f(*dyn_args)
        if out_core is not None and len(out_core) == 1 and isinstance(out, tuple) and len(out) != 1:
            pass
        return out

    return wrapped


# ---------------------------------------------------------------------------------------------
# convolution, statistics, polynomials, window functions: fjax/numpy/_stats_poly.py (split off
# for size)

from fjax.numpy._stats_poly import (  # noqa: E402,F401 - the private helpers too
    _conv1d,
    _cosine_window,
    _poly_arg,
    _window,
    bartlett,
    blackman,
    convolve,
    corrcoef,
    correlate,
    cov,
    hamming,
    hanning,
    interp,
    nanpercentile,
    nanquantile,
    poly,
    polyadd,
    polyder,
    polydiv,
    polyint,
    polymul,
    polysub,
    polyval,
    trapezoid,
    trim_zeros,
    unwrap,
    vander,
)
