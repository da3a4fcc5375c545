"""Names of ``jax.lax`` built from the existing primitives: precision enums, shape helpers,
``complex``, ``split``, ``tile``, ``reduce``, ``reduce_window``, bit operations, barriers.

Everything here is a composition of fjax primitives (so jvp/vjp/vmap/jit come from theirs),
except where a block says otherwise.
"""

from __future__ import annotations

import builtins
import enum
from collections.abc import Sequence
from typing import Any, Union

import numpy as np

import fjax.lax as lax
from fjax import _out_sharding, core
from fjax.dtypes import kind as _dkind
from fjax.interpreters import ad, batching, mlir
from fjax.lax.lax import _broadcast_shapes_rule, _const, _convert_element_type_weak

__all__ = [
    "DotDimensionNumbers",
    "Precision",
    "PrecisionLike",
    "broadcast_shapes",
    "reciprocal",
]


class Precision(enum.Enum):
    """Precision of a matrix product, as ``jax.lax.Precision`` (fjax computes in the operands'
    dtype on the CPU whatever is asked, which is what ``HIGHEST`` means there)."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value: object) -> Precision | None:
        names = {"default": 0, "bfloat16": 0, "fastest": 0, "high": 1, "bfloat16_3x": 1, "tensorfloat32": 1}
        names.update({"highest": 2, "float32": 2})
        if isinstance(value, str) and value.lower() in names:
            return cls(names[value.lower()])
        return None

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Precision.{self.name}"


PrecisionLike = Union[None, str, Precision, tuple[str, str], tuple[Precision, Precision]]

# ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))
DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]], tuple[Sequence[int], Sequence[int]]]


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape numpy broadcasting gives ``shapes`` (ValueError naming them if incompatible)."""
    shapes = [tuple(int(d) for d in s) for s in shapes]
    if not shapes:
        return ()
    ndim = max(len(s) for s in shapes)
    padded = [(1,) * (ndim - len(s)) + s for s in shapes]
    out = []
    for dims in zip(*padded):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def reciprocal(x: Any) -> Any:
    """Elementwise ``1 / x``."""
    return lax.div(_const(x, 1), x)


# ---------------------------------------------------------------------------------------------
# complex, tile, split, collapse, batch_matmul, dtype, empty, barriers


def _complex_dtype_of(dt: np.dtype) -> np.dtype:
    return np.dtype(np.complex64 if dt == np.float32 else np.complex128)


def _complex_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    # the parts written apart: ``x + 1j * y`` would turn an infinite y into a NaN real part (inf * 0)
    out = np.empty(np.broadcast_shapes(np.shape(x), np.shape(y)), _complex_dtype_of(np.asarray(x).dtype))
    out.real = x
    out.imag = y
    return out


def _complex_abstract(x: Any, y: Any) -> core.ShapedArray:
    for i, a in enumerate((x, y)):
        if a.dtype not in (np.float32, np.float64):
            raise TypeError(
                f"complex does not accept dtype {a.dtype.name} at position {i}. Accepted dtypes at position {i} "
                "are subtypes of float32, float64."
            )
    if x.dtype != y.dtype:
        raise TypeError(f"lax.complex requires arguments to have the same dtypes, got {x.dtype.name}, {y.dtype.name}.")
    shape = _broadcast_shapes_rule("complex", (x, y))
    # weak when both parts are (lax.complex(1.0, 2.0) is a weak complex64, as in JAX)
    return core.ShapedArray(shape, _complex_dtype_of(x.dtype), x.weak_type and y.weak_type)


def _complex_composed(x: Any, y: Any) -> Any:
    """``complex`` from fused elementwise ops: what ``lax.complex`` stages outside differentiation
    and what ``jit`` compiles an equation of ``complex_p`` to (its ``mlir.lower_fun`` rule). Its
    JVP is linear in the tangents (the selects' predicates read the primal ``y``), but as a
    function of its operands it is not linear (it selects on y's values): applied to tangents it
    could not be transposed, which is why tangents get ``complex_p``."""
    ax, ay = core.get_aval(x), core.get_aval(y)
    cdt = _complex_dtype_of(ax.dtype)
    re = lax.convert_element_type(x, cdt)
    im = lax.mul(lax.convert_element_type(y, cdt), core.Array(np.array(1j, cdt), True))
    # an infinite or NaN y times 1j has a NaN real part (inf * 0): take 0+-infj / 0+nanj literals there
    finite = lax.is_finite(y)
    c = lambda v: lax.full_like(im, v)  # noqa: E731
    special = lax.select(lax.gt(y, _const(y, 0)), c(builtins.complex(0, np.inf)), c(builtins.complex(0, -np.inf)))
    special = lax.select(lax.ne(y, y), c(builtins.complex(0, np.nan)), special)
    im = lax.select(finite, im, special)
    out = lax.add(re, im)
    return _convert_element_type_weak(out, cdt, True) if ax.weak_type and ay.weak_type else out


def _complex_transpose(ct: Any, x: Any, y: Any) -> list:
    # as JAX's ``deflinear2(complex_p, lambda t, *args: [real(t), imag(neg(t))])``
    from fjax.lax.lax_elementwise import _unbroadcast  # noqa: PLC0415

    if type(ct) is ad.Zero:
        return [None, None]
    cx = _unbroadcast(x.aval, lax.real(ct)) if ad.is_undefined_primal(x) else None
    cy = _unbroadcast(y.aval, lax.neg(lax.imag(ct))) if ad.is_undefined_primal(y) else None
    return [cx, cy]


def _complex_value(x: Any, y: Any) -> Any:
    """``complex(x, y)`` where nothing needs it to be linear: the exact impl on concrete values,
    the fused composition when staged (so compiled programs, the CUDA lowering included, hold the
    elementwise ops they held before ``complex_p`` existed)."""
    if core.is_eager() and core.placement_hook is None and not _traced(x, y):
        return core.bind1(complex_p, x, y)  # (a GPU evaluates the composition: it has no complex_p)
    return _complex_composed(x, y)


def _traced(*xs: Any) -> bool:
    return any(isinstance(x, core.Tracer) for x in xs)


def _complex_linear(x: Any, y: Any) -> Any:
    """``complex(x, y)`` where ``x``/``y`` may be tangents being linearized: ``complex_p`` on
    traced values (linear, transposable), the value itself on concrete ones."""
    return core.bind1(complex_p, x, y) if _traced(x, y) else _complex_value(x, y)


def _complex_tangent(tx: Any, ty: Any) -> Any:
    """The tangent of ``complex`` (``complex(tx, ty)``). Traced, it is ``tx + 1j * ty`` from
    converts, a multiply by 1j and an add: linear and transposable like ``complex_p``, and
    compiled by every backend, including the CUDA one which has no ``complex_p`` (so forward mode
    under ``jit`` runs on a GPU); it differs from JAX only for an infinite ``ty`` (NaN real part)."""
    if not _traced(tx, ty):
        return _complex_value(tx, ty)
    cdt = _complex_dtype_of(core.get_aval(tx).dtype)
    im = lax.mul(lax.convert_element_type(ty, cdt), core.Array(np.array(1j, cdt), True))
    return lax.add(lax.convert_element_type(tx, cdt), im)


def _complex_jvp(primals: list, tangents: list) -> tuple:
    out = _complex_value(*primals)
    if all(type(t) is ad.Zero for t in tangents):
        return out, ad.Zero(ad.tangent_aval(core.get_aval(out)))
    return out, _complex_tangent(*[ad.instantiate_zeros(t) for t in tangents])


complex_p = core.Primitive("complex")
complex_p.def_impl(_complex_impl)
complex_p.def_abstract_eval(_complex_abstract)
ad.deflinear2(complex_p, _complex_transpose)
ad.primitive_jvps[complex_p] = _complex_jvp
batching.defbroadcasting(complex_p)
mlir.register_lowering(complex_p, mlir.lower_fun(_complex_composed, multiple_results=False))


def _under_jvp() -> bool:
    # (as fjax.extend.core / batching read the stack) a differentiation transform is active, so
    # the operands may be tangents, whose jaxprs are transposed: they need the linear primitive
    return any(m.active and m.trace_type is ad.JVPTrace for m in core._state.stack)


def complex(x: Any, y: Any) -> Any:  # noqa: A001 - jax.lax.complex
    """``x + 1j * y`` from real arrays of one float dtype (complex64 from float32), exact for
    infinite and NaN parts.

    Traced under differentiation it binds ``complex_p``, linear in both parts as JAX's (so a
    ``custom_jvp`` rule can build its tangent with it and grad/vjp/linear_transpose transpose
    it); ``jit`` expands that primitive into fused elementwise ops (its ``mlir.lower_fun`` rule).
    Traced outside differentiation it stages those ops directly (as before ``complex_p``: the
    CUDA lowering and a GPU's eager ops have no ``complex_p``); on concrete host values it runs
    the primitive's exact impl."""
    _complex_abstract(core.get_aval(x), core.get_aval(y))  # JAX's dtype errors, whichever path
    return _complex_linear(x, y) if _under_jvp() else _complex_value(x, y)


def tile(operand: Any, reps: Sequence[int]) -> Any:
    """``operand`` repeated ``reps[i]`` times along each axis (``len(reps)`` may exceed its rank)."""
    from fjax.numpy import tile as _tile

    reps = tuple(int(r) for r in reps)
    if len(reps) < core.get_aval(operand).ndim:
        raise ValueError(f"tile: len(reps)={len(reps)} is smaller than the operand's rank")
    return _tile(operand, reps)


def split(operand: Any, sizes: Sequence[int], axis: int = 0) -> list[Any]:
    """Split ``operand`` along ``axis`` into pieces of the given ``sizes`` (which must add up)."""
    aval = core.get_aval(operand)
    axis = int(axis) % aval.ndim if aval.ndim else 0
    sizes = [int(s) for s in sizes]
    if any(s < 0 for s in sizes) or sum(sizes) != aval.shape[axis]:
        raise ValueError(
            f"Sum of sizes {sum(sizes)} must be equal to dimension {aval.shape[axis]} of the operand shape "
            f"{aval.shape}; got sizes {sizes}"
        )
    out, start = [], 0
    for s in sizes:
        out.append(lax.slice_in_dim(operand, start, start + s, axis=axis))
        start += s
    return out


def collapse(operand: Any, start_dimension: int, stop_dimension: int | None = None) -> Any:
    """Merge dimensions ``start_dimension:stop_dimension`` of ``operand`` into one."""
    shape = core.get_aval(operand).shape
    nd = len(shape)
    lo = start_dimension % nd if nd else 0
    hi = nd if stop_dimension is None else (stop_dimension % nd if stop_dimension < 0 else stop_dimension)
    if lo > hi:
        raise ValueError(f"collapse: start_dimension {start_dimension} is after stop_dimension {stop_dimension}")
    size = int(np.prod(shape[lo:hi], dtype=np.int64))
    return lax.reshape(operand, tuple(shape[:lo]) + (size,) + tuple(shape[hi:]))


def batch_matmul(lhs: Any, rhs: Any, precision: Any = None) -> Any:
    """Batched matrix product over leading dimensions: ``(..., m, k) @ (..., k, n)``."""
    la, ra = core.get_aval(lhs), core.get_aval(rhs)
    # batch shapes that differ are dot_general's TypeError, as in JAX
    if la.ndim < 2 or la.ndim != ra.ndim:
        raise ValueError(
            f"batch_matmul requires operands of equal rank >= 2 and batch shapes, got {la.shape} and {ra.shape}"
        )
    nb = la.ndim - 2
    batch = tuple(range(nb))
    return lax.dot_general(lhs, rhs, (((nb + 1,), (nb,)), (batch, batch)), precision=precision)


def dtype(x: Any, *, canonicalize: bool = False) -> np.dtype:
    """The dtype of a value (Python scalars give their default dtype)."""
    from fjax import dtypes

    dt = dtypes.dtype(x) if hasattr(dtypes, "dtype") else np.result_type(x)
    return dtypes.canonicalize_dtype(dt) if canonicalize else dt


def empty(shape: Any, dtype: Any, *, out_sharding: Any = None) -> Any:  # noqa: F811
    """An array of ``shape`` and ``dtype`` whose values must not be relied on (fjax gives zeros);
    ``out_sharding``: its sharding (fjax/_out_sharding.py)."""
    from fjax import dtypes

    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
    dt = dtypes.canonicalize_user_dtype(dtype, "empty")
    out = lax.broadcast_in_dim(core.Array(np.zeros((), dt), False), shape, ())
    return _out_sharding.apply(out, out_sharding, "empty")


def optimization_barrier(operand: Any) -> Any:
    """Returns ``operand`` (a pytree) unchanged. In JAX it stops XLA from moving computations
    across it; fjax's compiler never reorders across a call boundary, so it is the identity."""
    return operand


def platform_dependent(*args: Any, default: Any = None, **per_platform: Any) -> Any:
    """Call the branch for the platform fjax runs on (``cpu``), else ``default``."""
    fn = per_platform.get("cpu", default)
    if fn is None:
        raise NotImplementedError("platform_dependent: no branch for platform 'cpu' and no default")
    return fn(*args)


def composite(decomposition: Any, name: str, version: int = 0) -> Any:
    """A function that runs ``decomposition`` (JAX keeps ``name`` as a hint for its compiler; fjax
    has no composite lowering, so the decomposition is what runs)."""
    import functools

    @functools.wraps(decomposition)
    def f(*args: Any, **kwargs: Any) -> Any:
        return decomposition(*args, **kwargs)

    return f


def approx_max_k(
    operand: Any, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
    reduction_input_size_override: int = -1, aggregate_to_topk: bool = True,
) -> tuple[Any, Any]:  # fmt: skip
    """The ``k`` largest values along ``reduction_dimension`` and their indices (exact here)."""
    shape = core.get_aval(operand).shape
    nd = len(shape)
    if nd and shape[reduction_dimension % nd] < k:
        # JAX's approx_top_k shape rule (numbers its dimension as given)
        raise ValueError(f"k must be smaller than the size of reduction_dim {shape[reduction_dimension % nd]}, got {k}")
    if reduction_dimension % nd != nd - 1:
        from fjax.numpy import moveaxis

        v, i = lax.top_k(moveaxis(operand, reduction_dimension, -1), k)
        return moveaxis(v, -1, reduction_dimension), moveaxis(i, -1, reduction_dimension)
    return lax.top_k(operand, k)


def approx_min_k(
    operand: Any, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
    reduction_input_size_override: int = -1, aggregate_to_topk: bool = True,
) -> tuple[Any, Any]:  # fmt: skip
    """The ``k`` smallest values along ``reduction_dimension`` and their indices (exact here)."""
    v, i = approx_max_k(lax.neg(operand), k, reduction_dimension)
    return lax.neg(v), i


# ---------------------------------------------------------------------------------------------
# reduce and reduce_window (any binary computation; the pooling forms are reduce_window with
# lax.add / lax.max / lax.min)


def _pairwise_fold(computation: Any, xs: list[Any], init: list[Any], n: int) -> list[Any]:
    # fold axis 0 (length n) of every array in xs with computation, in log2(n) steps
    while n > 1:
        half = n // 2
        lo = [lax.slice_in_dim(x, 0, half, axis=0) for x in xs]
        hi = [lax.slice_in_dim(x, half, 2 * half, axis=0) for x in xs]
        comb = _call(computation, lo, hi)
        if n % 2:
            comb = [lax.concatenate([c, lax.slice_in_dim(x, n - 1, n, axis=0)], 0) for c, x in zip(comb, xs)]
        xs = comb
        n = half + n % 2
    return xs


def _call(computation: Any, a: list[Any], b: list[Any]) -> list[Any]:
    if len(a) == 1:
        return [computation(a[0], b[0])]
    out = computation(tuple(a), tuple(b))
    return list(out)


def reduce(
    operands: Any, init_values: Any, computation: Any, dimensions: Sequence[int], out_sharding: Any = None
) -> Any:
    """Reduce ``operands`` over ``dimensions`` with the binary ``computation`` from ``init_values``.

    ``computation`` must be associative and commutative (as JAX requires); it is applied to
    whole arrays, so any function of fjax ops works, with every transform. Several operands
    (a tuple) are reduced together, ``computation`` taking and returning tuples.
    """
    if out_sharding is not None:  # (fjax/_out_sharding.py)
        return _out_sharding.apply(reduce(operands, init_values, computation, dimensions), out_sharding, "reduce")
    from fjax import _tree_lifted as tu

    flat_ops, tree = tu.tree_flatten(operands)
    flat_init, init_tree = tu.tree_flatten(init_values)
    if tree != init_tree:
        raise ValueError(f"Operands must have the same tree structure as init_values: {tree} vs. {init_tree}")
    shape = core.get_aval(flat_ops[0]).shape
    nd = len(shape)
    if any(not 0 <= int(d) < nd for d in dimensions):
        dt = core.get_aval(flat_ops[0]).dtype
        operand = f"{dt.name if isinstance(dt, np.dtype) else dt}[{','.join(map(str, shape))}]"
        raise ValueError(f"reduction axes {tuple(dimensions)} contains out-of-bounds indices for {operand}.")
    dims = tuple(sorted(int(d) for d in dimensions))
    if len(set(dims)) != len(dims):
        raise ValueError(f"duplicate value in 'axes' of reduction: {tuple(dimensions)}")
    keep = tuple(i for i in range(nd) if i not in dims)
    out_shape = tuple(shape[i] for i in keep)
    n = int(np.prod([shape[d] for d in dims], dtype=np.int64))
    xs = [lax.reshape(lax.transpose(x, dims + keep), (n, *out_shape)) for x in flat_ops]
    inits = [
        lax.broadcast_in_dim(lax.convert_element_type(i, core.get_aval(x).dtype), out_shape, ())
        for i, x in zip(flat_init, flat_ops)
    ]
    if n == 0:
        res = inits
    else:
        folded = _pairwise_fold(computation, xs, inits, n)
        res = _call(computation, [lax.reshape(f, out_shape) for f in folded], inits)
    return tu.tree_unflatten(tree, res)


def _window_pads(shape: Sequence[int], window: Sequence[int], strides: Sequence[int], padding: Any) -> list:
    if isinstance(padding, str):
        from fjax.lax.convolution import padtype_to_pads

        return padtype_to_pads(shape, window, strides, padding)
    pads = [tuple(int(v) for v in p) for p in padding]
    if len(pads) != len(shape):
        raise ValueError(f"reduce_window: padding {padding} must have one pair per dimension of {tuple(shape)}")
    return pads


def reduce_window(
    operand: Any,
    init_value: Any,
    computation: Any,
    window_dimensions: Sequence[int],
    window_strides: Sequence[int] | None = None,
    padding: Any = "VALID",
    base_dilation: Sequence[int] | None = None,
    window_dilation: Sequence[int] | None = None,
) -> Any:
    """Reduce each window of ``operand`` with ``computation`` (e.g. ``lax.max`` for max pooling,
    ``lax.add`` for sum pooling), starting from ``init_value``; padding is filled with it.

    Built from pads and strided slices, one per window position, so jvp, vjp, vmap and jit
    come from those primitives. ``padding`` is ``"SAME"``, ``"VALID"`` or ``(low, high)`` pairs.
    """
    aval = core.get_aval(operand)
    nd = aval.ndim
    window = tuple(int(w) for w in window_dimensions)
    strides = (1,) * len(window) if window_strides is None else tuple(int(s) for s in window_strides)
    if len(window) != nd:
        raise TypeError(
            "reduce_window got the wrong number of window_dimensions for operand: got operand shape "
            f"{aval.shape} with window_dimensions {window}."
        )
    if len(strides) != nd:
        raise TypeError(
            "reduce_window got inconsistent window_strides and window_dimensions: got window_strides "
            f"{strides} and window_dimensions {window}."
        )
    base = tuple(base_dilation) if base_dilation is not None else (1,) * nd
    wdil = tuple(window_dilation) if window_dilation is not None else (1,) * nd
    init = lax.convert_element_type(init_value, aval.dtype)
    dilated_shape = tuple((d - 1) * b + 1 if d else 0 for d, b in zip(aval.shape, base))
    eff_window = tuple((w - 1) * wd + 1 for w, wd in zip(window, wdil))
    pads = _window_pads(dilated_shape, eff_window, strides, padding)
    x = lax.pad(operand, init, [(lo, hi, b - 1) for (lo, hi), b in zip(pads, base)])
    pshape = core.get_aval(x).shape
    out_shape = tuple(max(0, (p - e) // s + 1) for p, e, s in zip(pshape, eff_window, strides))
    acc = lax.broadcast_in_dim(init, out_shape, ())
    chooser = {lax.max: lax.lax._gt, lax.min: lax.lax._lt}.get(computation)  # unchecked: complex too
    for offset in np.ndindex(*window):
        start = tuple(o * wd for o, wd in zip(offset, wdil))
        limit = tuple(st + (n - 1) * s + 1 if n else st for st, n, s in zip(start, out_shape, strides))
        piece = lax.slice(x, start, limit, strides)
        if chooser is None:
            acc = computation(acc, piece)
        else:
            # max/min pooling as JAX differentiates it: the gradient goes to the first extreme
            # element of the window (XLA's select_and_scatter), not split among ties as
            # lax.max would; a NaN wins, as in lax.max
            take = lax.bitwise_or(chooser(piece, acc), lax.ne(piece, piece))
            acc = lax.select(take, piece, acc)
    return acc


def reduce_window_shape_tuple(
    operand_shape: Sequence[int],
    window_dimensions: Sequence[int],
    window_strides: Sequence[int],
    padding: Sequence[tuple[int, int]],
    base_dilation: Sequence[int] | None = None,
    window_dilation: Sequence[int] | None = None,
) -> tuple[int, ...]:
    """Output shape of ``reduce_window`` with explicit ``padding`` pairs."""
    nd = len(operand_shape)
    base = base_dilation or (1,) * nd
    wdil = window_dilation or (1,) * nd
    out = []
    for d, w, s, (lo, hi), b, wd in zip(operand_shape, window_dimensions, window_strides, padding, base, wdil):
        dd = (d - 1) * b + 1 if d else 0
        e = (w - 1) * wd + 1
        out.append(max(0, (dd + lo + hi - e) // s + 1))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# bit operations (integer primitives: no derivative, elementwise batching)


def _int_unop(name: str, impl: Any) -> Any:
    from fjax.core import Primitive, ShapedArray
    from fjax.interpreters import ad, batching

    def abstract(x: Any) -> ShapedArray:
        if _dkind(x.dtype) not in "iu":
            raise TypeError(f"{name} does not accept dtype {x.dtype.name}. Accepted dtypes are subtypes of integer.")
        return ShapedArray(x.shape, x.dtype, x.weak_type)

    p = Primitive(name)
    p.def_impl(impl)
    p.def_abstract_eval(abstract)
    ad.defzero(p)
    batching.defvectorized(p)
    return p


def _popcount_impl(x: np.ndarray) -> np.ndarray:
    u = x.view(np.dtype(f"u{x.dtype.itemsize}")) if _dkind(x.dtype) == "i" else x
    return np.bitwise_count(u).astype(x.dtype)


def _clz_impl(x: np.ndarray) -> np.ndarray:
    bits = 8 * x.dtype.itemsize
    u = (x.view(np.dtype(f"u{x.dtype.itemsize}")) if _dkind(x.dtype) == "i" else x).astype(np.uint64)
    n = np.zeros(u.shape, np.int64)
    for b in range(bits):  # highest set bit position, found by shifting
        n = np.where(u >> np.uint64(b) != 0, b + 1, n)
    return (bits - n).astype(x.dtype)


population_count_p = _int_unop("population_count", _popcount_impl)
clz_p = _int_unop("clz", _clz_impl)


# What ``jit`` compiles the two to: shifts, masks and adds on the unsigned type of the same width
# (SWAR bit counting), so loops using them (numpyro's NUTS tree building) stay compiled.
def _unsigned(x: Any) -> tuple[Any, int]:
    w = 8 * np.dtype(x.dtype).itemsize
    return lax.convert_element_type(x, np.dtype(f"u{w // 8}")), w


def _popcount_bits(u: Any, w: int) -> Any:
    def c(v: int) -> Any:
        return lax.full_like(u, v)

    ones = (1 << w) - 1
    m1, m2, m4 = ones // 3, ones // 5, ones // 17  # 0x55.., 0x33.., 0x0f..
    u = lax.sub(u, lax.bitwise_and(lax.shift_right_logical(u, c(1)), c(m1)))
    u = lax.add(lax.bitwise_and(u, c(m2)), lax.bitwise_and(lax.shift_right_logical(u, c(2)), c(m2)))
    u = lax.bitwise_and(lax.add(u, lax.shift_right_logical(u, c(4))), c(m4))
    s = 8
    while s < w:  # add the byte counts together (the total fits in the low byte)
        u = lax.add(u, lax.shift_right_logical(u, c(s)))
        s *= 2
    return lax.bitwise_and(u, c(0xFF if w > 8 else ones))


def _popcount_composed(x: Any) -> Any:
    u, w = _unsigned(x)
    return lax.convert_element_type(_popcount_bits(u, w), x.dtype)


def _clz_composed(x: Any) -> Any:
    u, w = _unsigned(x)
    s = 1
    while s < w:  # set every bit below the highest set bit
        u = lax.bitwise_or(u, lax.shift_right_logical(u, lax.full_like(u, s)))
        s *= 2
    return lax.convert_element_type(lax.sub(lax.full_like(u, w), _popcount_bits(u, w)), x.dtype)


mlir.register_lowering(population_count_p, mlir.lower_fun(_popcount_composed, multiple_results=False))
mlir.register_lowering(clz_p, mlir.lower_fun(_clz_composed, multiple_results=False))


def population_count(x: Any) -> Any:
    """Number of set bits in each element (same integer dtype)."""
    return core.bind1(population_count_p, x)


def clz(x: Any) -> Any:
    """Number of leading zero bits in each element (same integer dtype)."""
    return core.bind1(clz_p, x)


# the primitive an equal-width bitcast stages (``random_bitcast``, which fjax.random uses too;
# it prints as JAX's ``bitcast_convert_type[new_dtype=...]``)
from fjax._random_arith import _bitcast_p as bitcast_convert_type_p  # noqa: E402


def bitcast_convert_type(operand: Any, new_dtype: Any) -> Any:
    """Reinterpret the bits of ``operand`` as ``new_dtype`` (equal widths: same shape; a narrower
    type adds a trailing axis, a wider one consumes it)."""
    from fjax import dtypes
    from fjax.random import _bitcast

    new = dtypes.canonicalize_user_dtype(getattr(new_dtype, "_np_type", new_dtype), "bitcast_convert_type")
    aval = core.get_aval(operand)
    old = aval.dtype
    if new.itemsize == old.itemsize:
        return _bitcast(operand, new)
    if new.itemsize < old.itemsize:
        k = old.itemsize // new.itemsize
        u = _bitcast(operand, np.dtype(f"u{old.itemsize}"))
        parts = []
        mask = (1 << (8 * new.itemsize)) - 1
        for i in range(k):  # little-endian order, as XLA on x86
            sh = lax.shift_right_logical(u, lax.full_like(u, 8 * new.itemsize * i))
            parts.append(
                lax.convert_element_type(lax.bitwise_and(sh, lax.full_like(u, mask)), np.dtype(f"u{new.itemsize}"))
            )
        stacked = lax.concatenate(
            [lax.broadcast_in_dim(p, (*aval.shape, 1), tuple(range(aval.ndim))) for p in parts], aval.ndim
        )
        return _bitcast(stacked, new)
    k = new.itemsize // old.itemsize
    if not aval.shape or aval.shape[-1] != k:
        dim, ob, nb = aval.shape[-1] if aval.shape else 1, 8 * old.itemsize, 8 * new.itemsize  # (JAX's words)
        raise ValueError(
            f"Attempting to convert array of shape {aval.shape} from {old} of size {ob} bits to {new} of size "
            f"{nb}, bits but {dim} * {ob} != {nb}"
        )
    u = lax.convert_element_type(_bitcast(operand, np.dtype(f"u{old.itemsize}")), np.dtype(f"u{new.itemsize}"))
    acc = None
    for i in range(k):
        piece = lax.reshape(lax.slice_in_dim(u, i, i + 1, axis=aval.ndim - 1), aval.shape[:-1])
        piece = lax.shift_left(piece, lax.full_like(piece, 8 * old.itemsize * i))
        acc = piece if acc is None else lax.bitwise_or(acc, piece)
    return _bitcast(acc, new)


__all__ += [
    "approx_max_k",
    "approx_min_k",
    "batch_matmul",
    "bitcast_convert_type",
    "bitcast_convert_type_p",
    "clz",
    "clz_p",
    "collapse",
    "complex",
    "complex_p",
    "composite",
    "dtype",
    "empty",
    "optimization_barrier",
    "platform_dependent",
    "population_count",
    "population_count_p",
    "reduce",
    "reduce_window",
    "reduce_window_shape_tuple",
    "split",
    "tile",
]
