"""The public ``lax`` wrappers of ``fjax.lax.lax``'s primitives (``neg``, ``add``, ``reshape``,
``dot_general``, ``reduce_sum``, ...): argument checking and dtype handling around ``bind``.

Split from ``fjax/lax/lax.py`` (which re-exports every name here, so ``fjax.lax.lax.neg`` and
``from fjax.lax.lax import *`` keep working); the primitives and their rules stay there.
"""

# ruff: noqa: F405 - names come from fjax.lax.lax (star import: this module is a part of it)
from __future__ import annotations

import builtins
import warnings

from numpy.exceptions import ComplexWarning

from fjax import _out_sharding
from fjax.lax._dot_algorithms import canonicalize_precision, check_accuracy
from fjax.lax.lax import *  # noqa: F403 - the primitives, rules and imports these wrappers use
from fjax.lax.lax import (  # noqa: F401
    _bind,
    _canon_dnums,
    _dkind,
)


def neg(x: Any) -> Any:
    """Elementwise negation: -x."""
    return _bind(neg_p, x)


def sign(x: Any) -> Any:
    """Elementwise sign."""
    return _bind(sign_p, x)


def floor(x: Any) -> Any:
    """Elementwise floor."""
    return _bind(floor_p, x)


def ceil(x: Any) -> Any:
    """Elementwise ceiling."""
    return _bind(ceil_p, x)


def round(x: Any, rounding_method: int = RoundingMethod.AWAY_FROM_ZERO) -> Any:  # noqa: A001
    """Elementwise round (halfway cases away from zero by default, as JAX's lax.round)."""
    return _bind(round_p, x, rounding_method=int(rounding_method))


def is_finite(x: Any) -> Any:
    """Elementwise: is x neither infinite nor NaN."""
    return _bind(is_finite_p, x)


def abs(x: Any) -> Any:  # noqa: A001
    """Elementwise absolute value."""
    return _bind(abs_p, x)


def _mk_unary(prim: Primitive, doc: str) -> Callable:
    def f(x: Any) -> Any:
        return _bind(prim, x)

    f.__name__ = prim.name
    f.__doc__ = doc
    return f


def _mk_unary_accuracy(prim: Primitive, doc: str) -> Callable:
    """A transcendental op taking JAX's ``accuracy=`` (None, a ``Tolerance`` or an
    ``AccuracyMode``): checked, then fjax's one implementation runs (see ``_dot_algorithms``)."""

    def f(x: Any, *, accuracy: Any = None) -> Any:
        if accuracy is not None:  # (the common case costs one comparison)
            check_accuracy(accuracy)
        return _bind(prim, x)

    f.__name__ = prim.name
    f.__doc__ = doc
    return f


exp = _mk_unary_accuracy(exp_p, "Elementwise exponential e**x.")
exp2 = _mk_unary_accuracy(exp2_p, "Elementwise base-2 exponential 2**x.")
log = _mk_unary_accuracy(log_p, "Elementwise natural logarithm.")
log1p = _mk_unary_accuracy(log1p_p, "Elementwise log(1 + x), accurate near 0.")
expm1 = _mk_unary_accuracy(expm1_p, "Elementwise e**x - 1, accurate near 0.")
sqrt = _mk_unary_accuracy(sqrt_p, "Elementwise square root.")
rsqrt = _mk_unary_accuracy(rsqrt_p, "Elementwise reciprocal square root.")
cbrt = _mk_unary_accuracy(cbrt_p, "Elementwise cube root.")
sin = _mk_unary_accuracy(sin_p, "Elementwise sine.")
cos = _mk_unary_accuracy(cos_p, "Elementwise cosine.")
tan = _mk_unary_accuracy(tan_p, "Elementwise tangent.")
asin = _mk_unary(asin_p, "Elementwise arcsine.")
acos = _mk_unary(acos_p, "Elementwise arccosine.")
atan = _mk_unary(atan_p, "Elementwise arctangent.")
sinh = _mk_unary(sinh_p, "Elementwise hyperbolic sine.")
cosh = _mk_unary(cosh_p, "Elementwise hyperbolic cosine.")
tanh = _mk_unary_accuracy(tanh_p, "Elementwise hyperbolic tangent.")
asinh = _mk_unary(asinh_p, "Elementwise inverse hyperbolic sine.")
acosh = _mk_unary(acosh_p, "Elementwise inverse hyperbolic cosine.")
atanh = _mk_unary(atanh_p, "Elementwise inverse hyperbolic tangent.")
logistic = _mk_unary_accuracy(logistic_p, "Elementwise logistic sigmoid 1 / (1 + e**-x).")
erf = _mk_unary(erf_p, "Elementwise error function.")
erfc = _mk_unary(erfc_p, "Elementwise complementary error function.")
erf_inv = _mk_unary(erf_inv_p, "Elementwise inverse error function.")
lgamma = _mk_unary(lgamma_p, "Elementwise log of the absolute value of the gamma function.")
digamma = _mk_unary(digamma_p, "Elementwise digamma (derivative of lgamma).")


def polygamma(m: Any, x: Any) -> Any:
    """Elementwise polygamma function psi^(m)(x), m a non-negative integer (as a float array)."""
    return _bind(polygamma_p, m, x)


square = _mk_unary(square_p, "Elementwise square.")
real = _mk_unary(real_p, "Real part of a complex array.")
imag = _mk_unary(imag_p, "Imaginary part of a complex array.")
conj = _mk_unary(conj_p, "Complex conjugate.")
bitwise_not = _mk_unary(not_p, "Elementwise NOT (logical for booleans).")
stop_gradient_raw = _mk_unary(stop_gradient_p, "Identity whose derivative is zero.")


def integer_pow(x: Any, y: int) -> Any:
    """Elementwise x**y for a static Python integer y."""
    if not isinstance(y, (int, np.integer)):  # int(1.5) would silently truncate
        raise TypeError(f"integer_pow: the exponent y must be a Python int, got {y!r} of type {type(y).__name__}")
    return _bind(integer_pow_p, x, y=int(y))


def _mk_binary(prim: Primitive, doc: str, check: Callable | None = None) -> Callable:
    """The public wrapper of a binary primitive; ``check(name, x, y)`` validates operands first."""
    if check is None:

        def f(x: Any, y: Any) -> Any:
            return _bind(prim, x, y)
    else:

        def f(x: Any, y: Any) -> Any:
            check(prim.name, x, y)
            return _bind(prim, x, y)

    f.__name__ = prim.name
    f.__doc__ = doc
    return f


add = _mk_binary(add_p, "Elementwise addition x + y.")
sub = _mk_binary(sub_p, "Elementwise subtraction x - y.")


def mul(x: Any, y: Any, *, out_dtype: Any = None) -> Any:
    """Elementwise multiplication x * y; with ``out_dtype``, both operands are converted to it first
    (so operands of different dtypes are accepted then), as JAX does on the CPU."""
    if out_dtype is not None:
        dt = dtypes.canonicalize_user_dtype(_np_type(out_dtype), "mul")
        x, y = convert_element_type(x, dt), convert_element_type(y, dt)
    return _bind(mul_p, x, y)


div = _mk_binary(div_p, "Elementwise division x / y (integer division rounds toward zero).")
rem = _mk_binary(rem_p, "Elementwise remainder with the sign of the dividend (C fmod).")
pow = _mk_binary(pow_p, "Elementwise power x**y.")  # noqa: A001
max = _mk_binary(max_p, "Elementwise maximum (NaN-propagating).")  # noqa: A001
min = _mk_binary(min_p, "Elementwise minimum (NaN-propagating).")  # noqa: A001
atan2 = _mk_binary(atan2_p, "Elementwise arctangent of x / y, in the right quadrant.")


def nextafter(x1: Any, x2: Any) -> Any:
    """Next representable value after x1 in the direction of x2."""
    return _bind(nextafter_p, x1, x2)


eq = _mk_binary(eq_p, "Elementwise x == y.")
ne = _mk_binary(ne_p, "Elementwise x != y.")
# the ordering comparisons without the operand check below: fjax's own callers (jnp.less,
# sort, max, searchsorted, ...) order complex values lexicographically, as jnp does
_lt = _mk_binary(lt_p, "Elementwise x < y (complex operands compare lexicographically).")
_le = _mk_binary(le_p, "Elementwise x <= y (complex operands compare lexicographically).")
_gt = _mk_binary(gt_p, "Elementwise x > y (complex operands compare lexicographically).")
_ge = _mk_binary(ge_p, "Elementwise x >= y (complex operands compare lexicographically).")


def _check_ordered(name: str, x: Any, y: Any) -> None:
    """JAX's lax.lt/le/gt/ge refuse complex operands (TypeError, position 0 checked first)."""
    for i, v in enumerate((x, y)):
        if type(v) is complex:
            dt = dtypes.canonicalize_dtype(complex)
        else:
            dt = getattr(v, "dtype", None)
            if dt is None or _dkind(dt) != "c":
                continue
            dt = dtypes.canonicalize_dtype(dt)
        raise TypeError(
            f"{name} does not accept dtype {dt.name} at position {i}. Accepted dtypes at position {i} are "
            "subtypes of integer, floating, bool."
        )


def _mk_ordered(prim: Primitive, doc: str) -> Callable:
    return _mk_binary(prim, doc, _check_ordered)


lt = _mk_ordered(lt_p, "Elementwise x < y (integer, floating or bool operands: complex ones raise TypeError).")
le = _mk_ordered(le_p, "Elementwise x <= y (integer, floating or bool operands: complex ones raise TypeError).")
gt = _mk_ordered(gt_p, "Elementwise x > y (integer, floating or bool operands: complex ones raise TypeError).")
ge = _mk_ordered(ge_p, "Elementwise x >= y (integer, floating or bool operands: complex ones raise TypeError).")
bitwise_and = _mk_binary(and_p, "Elementwise AND (logical for booleans).")
bitwise_or = _mk_binary(or_p, "Elementwise OR (logical for booleans).")
bitwise_xor = _mk_binary(xor_p, "Elementwise XOR (logical for booleans).")
shift_left = _mk_binary(shift_left_p, "Elementwise x << y.")
shift_right_arithmetic = _mk_binary(shift_right_arithmetic_p, "Elementwise arithmetic x >> y.")
shift_right_logical = _mk_binary(shift_right_logical_p, "Elementwise logical x >> y.")


def select_n(which: Any, *cases: Any) -> Any:
    """Pick, elementwise, ``cases[which]`` (``which`` boolean for two cases, or integer)."""
    return core.bind(select_n_p, (which,) + cases, {})


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """Elementwise ``on_true if pred else on_false``."""
    return core.bind(select_n_p, (pred, on_false, on_true), {})


def clamp(min: Any, x: Any, max: Any) -> Any:  # noqa: A002
    """Elementwise min(max(x, min), max)."""
    return _bind(clamp_p, min, x, max)


def check_python_complex(value: Any, dtype: np.dtype) -> None:
    """JAX's TypeError for a Python complex scalar put into an integer or real float dtype (numpy's
    ``np.array(1j, dtype=float32)`` refuses it; ``astype`` would drop the imaginary part)."""
    if type(value) is builtins.complex and _dkind(dtype) in "iuf":
        what = "float() argument must be a string or a real number"
        if _dkind(dtype) != "f":
            what = "int() argument must be a string, a bytes-like object or a real number"
        raise TypeError(f"{what}, not 'complex'")


def _np_type(dtype: Any) -> Any:
    """The numpy type behind a ``jnp`` scalar type (``jnp.float64``); anything else unchanged."""
    return getattr(dtype, "_np_type", dtype)


def convert_element_type(operand: Any, new_dtype: Any) -> Any:
    """Cast ``operand`` to ``new_dtype`` (canonicalized; the result is not weakly typed)."""
    if getattr(operand, "dtype", None) is dtypes.KEY_DTYPE:  # a key array: only to a key dtype (else ValueError)
        return operand.astype(new_dtype)
    new_dtype = dtypes.canonicalize_user_dtype(_np_type(new_dtype), "convert_element_type")
    check_python_complex(operand, new_dtype)
    if not isinstance(operand, core.Tracer) and not isinstance(operand, core.Array):
        operand = core.to_array(operand, "convert_element_type")
    aval = core.get_aval(operand)
    if aval.dtype == new_dtype and not aval.weak_type:
        return operand
    if _dkind(aval.dtype) == "c" and _dkind(new_dtype) != "c":
        warnings.warn("Casting complex values to real discards the imaginary part", ComplexWarning, stacklevel=2)
    return _bind(convert_element_type_p, operand, new_dtype=new_dtype, weak_type=False)


def _convert_element_type_weak(operand: Any, new_dtype: Any, weak_type: bool) -> Any:
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    aval = core.get_aval(operand)
    if aval.dtype == new_dtype and aval.weak_type == weak_type:
        return operand
    return _bind(convert_element_type_p, operand, new_dtype=new_dtype, weak_type=weak_type)


def broadcast_in_dim(
    operand: Any, shape: Sequence[int], broadcast_dimensions: Sequence[int], *, out_sharding: Any = None
) -> Any:
    """Broadcast ``operand`` to ``shape``, operand dim i going to ``broadcast_dimensions[i]``
    (``out_sharding``: the result's sharding, fjax/_out_sharding.py)."""
    shape = core.canonicalize_shape(shape)
    bd = tuple(int(d) for d in broadcast_dimensions)
    if core.get_aval(operand).shape == shape and bd == tuple(range(len(shape))):
        out = operand
    else:
        out = _bind(broadcast_in_dim_p, operand, shape=shape, broadcast_dimensions=bd)
    return out if out_sharding is None else _out_sharding.apply(out, out_sharding, "broadcast_in_dim")


def broadcast(operand: Any, sizes: Sequence[int], *, out_sharding: Any = None) -> Any:
    """Add leading dimensions of the given sizes."""
    nd = core.get_aval(operand).ndim
    sizes = tuple(sizes)
    out = broadcast_in_dim(operand, sizes + core.get_aval(operand).shape, tuple(range(len(sizes), len(sizes) + nd)))
    return out if out_sharding is None else _out_sharding.apply(out, out_sharding, "broadcast")


def broadcast_to_rank(x: Any, rank: int) -> Any:
    nd = core.get_aval(x).ndim
    return x if nd == rank else broadcast(x, (1,) * (rank - nd))


def reshape(
    operand: Any, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None, *, out_sharding: Any = None
) -> Any:
    """Reshape (after transposing by ``dimensions`` if given)."""
    new_sizes = core.canonicalize_shape(new_sizes)
    aval = core.get_aval(operand)
    dims = None if dimensions is None or tuple(dimensions) == tuple(range(aval.ndim)) else tuple(dimensions)
    if aval.shape == new_sizes and dims is None:
        out = operand
    else:
        out = _bind(reshape_p, operand, new_sizes=new_sizes, dimensions=dims)
    return out if out_sharding is None else _out_sharding.apply(out, out_sharding, "reshape")


def transpose(operand: Any, permutation: Sequence[int]) -> Any:
    """Permute the dimensions of ``operand``."""
    perm = tuple(int(p) for p in permutation)
    if perm == tuple(range(len(perm))) and len(perm) == core.get_aval(operand).ndim:
        return operand
    return _bind(transpose_p, operand, permutation=perm)


def _canon_axis(d: Any, nd: int) -> int:
    if not -nd <= int(d) < nd:
        raise ValueError(f"axis {int(d)} is out of bounds for array of dimension {nd}")
    return int(d) % nd


def squeeze(array: Any, dimensions: Sequence[int]) -> Any:
    """Remove the given size-1 dimensions."""
    nd = core.get_aval(array).ndim
    dims = tuple(sorted(_canon_axis(d, nd) for d in dimensions))
    if not dims:
        return array
    return _bind(squeeze_p, array, dimensions=dims)


def expand_dims(array: Any, dimensions: Sequence[int]) -> Any:
    """Insert size-1 dimensions at the given positions (of the result)."""
    aval = core.get_aval(array)
    nd_out = aval.ndim + len(dimensions)
    dims = sorted(_canon_axis(d, nd_out) for d in dimensions)
    if len(set(dims)) != len(dims):
        raise ValueError(f"repeated axis in lax.expand_dims: {tuple(dimensions)}")
    shape = list(aval.shape)
    for d in dims:
        shape.insert(d, 1)
    kept = [i for i in range(nd_out) if i not in dims]
    return broadcast_in_dim(array, tuple(shape), tuple(kept))


def rev(operand: Any, dimensions: Sequence[int]) -> Any:
    """Reverse the order of elements along the given dimensions."""
    return _bind(rev_p, operand, dimensions=tuple(int(d) for d in dimensions))


def iota(dtype: Any, size: int) -> Any:
    """[0, 1, ..., size-1] of the given dtype."""
    return broadcasted_iota(
        dtypes.canonicalize_user_dtype(_np_type(dtype), "broadcasted_iota"), core.canonicalize_shape((size,)), 0
    )


def broadcasted_iota(dtype: Any, shape: Sequence[int], dimension: int, *, out_sharding: Any = None) -> Any:
    """An array of ``shape`` whose values count along ``dimension``."""
    if out_sharding is not None:
        out = broadcasted_iota(dtype, shape, dimension)
        return _out_sharding.apply(out, out_sharding, "broadcasted_iota")
    return core.bind(
        iota_p,
        (),
        dict(
            dtype=dtypes.canonicalize_user_dtype(_np_type(dtype), "broadcasted_iota"),
            shape=core.canonicalize_shape(shape),
            dimension=int(dimension),
        ),
    )


def reduce_sum(operand: Any, axes: Sequence[int], *, out_sharding: Any = None) -> Any:
    """Sum over ``axes``."""
    out = _bind(reduce_sum_p, operand, axes=tuple(int(a) for a in axes))
    return out if out_sharding is None else _out_sharding.apply(out, out_sharding, "reduce_sum")


def reduce_max(operand: Any, axes: Sequence[int]) -> Any:
    """Maximum over ``axes``."""
    return _bind(reduce_max_p, operand, axes=tuple(int(a) for a in axes))


def reduce_min(operand: Any, axes: Sequence[int]) -> Any:
    """Minimum over ``axes``."""
    return _bind(reduce_min_p, operand, axes=tuple(int(a) for a in axes))


def reduce_prod(operand: Any, axes: Sequence[int]) -> Any:
    """Product over ``axes``."""
    return _bind(reduce_prod_p, operand, axes=tuple(int(a) for a in axes))


def reduce_and(operand: Any, axes: Sequence[int]) -> Any:
    """Logical AND over ``axes``."""
    return _bind(reduce_and_p, operand, axes=tuple(int(a) for a in axes))


def reduce_or(operand: Any, axes: Sequence[int]) -> Any:
    """Logical OR over ``axes``."""
    return _bind(reduce_or_p, operand, axes=tuple(int(a) for a in axes))


def reduce_xor(operand: Any, axes: Sequence[int]) -> Any:
    """Logical XOR over ``axes``."""
    return _bind(reduce_xor_p, operand, axes=tuple(int(a) for a in axes))


def argmax(operand: Any, axis: int, index_dtype: Any) -> Any:
    """Index of the maximum along ``axis`` (first occurrence; NaN counts as maximal)."""
    index_dtype = dtypes.canonicalize_user_dtype(_np_type(index_dtype), "argmax")
    return _bind(argmax_p, operand, axes=(int(axis),), index_dtype=index_dtype)


def argmin(operand: Any, axis: int, index_dtype: Any) -> Any:
    """Index of the minimum along ``axis`` (first occurrence; NaN counts as minimal)."""
    index_dtype = dtypes.canonicalize_user_dtype(_np_type(index_dtype), "argmin")
    return _bind(argmin_p, operand, axes=(int(axis),), index_dtype=index_dtype)


def dot_general(
    lhs: Any,
    rhs: Any,
    dimension_numbers: Any,
    precision: Any = None,
    preferred_element_type: Any = None,
    *,
    out_sharding: Any = None,
) -> Any:
    """General tensor contraction: ``dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))``.

    The output has the batch dims, then lhs free dims, then rhs free dims. ``precision`` is kept
    on the equation in JAX's canonical form (``_dot_algorithms.canonicalize_precision``; None
    takes config ``jax_default_matmul_precision``); the CPU computes every accepted one alike.
    ``out_sharding``: the result's sharding (fjax/_out_sharding.py).
    """
    if out_sharding is not None:
        _out_sharding.canonicalize(out_sharding, "dot_general")
    if preferred_element_type is None:
        lhs, rhs = _dot_operands_common_dtype(lhs, rhs)
    else:
        preferred_element_type = dtypes.canonicalize_user_dtype(_np_type(preferred_element_type), "dot")
    out = _dot_general(lhs, rhs, dimension_numbers, canonicalize_precision(precision), preferred_element_type)
    return out if out_sharding is None else _out_sharding.apply(out, out_sharding, "dot_general")


def _dot_type_rank(dt: np.dtype) -> tuple:
    # XLA's "higher precision type" order, which JAX's dot_general follows for mixed operands
    k = _dkind(dt)
    if k in "fc":
        fi = dtypes.finfo(dt)
        return (k == "c", fi.maxexp, fi.nmant, fi.bits, True)
    return (False, -1, -1, 1 if k == "b" else np.dtype(dt).itemsize * 8, k != "u")


def _dot_operands_common_dtype(lhs: Any, rhs: Any) -> tuple:
    """Operands of different dtypes are both taken to the higher-precision one (as JAX's dot_general
    types its result); two different dtypes of equal rank are a TypeError, as in JAX."""
    lt, rt = core.get_aval(lhs).dtype, core.get_aval(rhs).dtype
    if lt == rt or lt is dtypes.KEY_DTYPE or rt is dtypes.KEY_DTYPE:
        return lhs, rhs
    lr, rr = _dot_type_rank(lt), _dot_type_rank(rt)
    if lr == rr:
        raise TypeError(f"lax.dot_general argument type error: {lt.name}, {rt.name}")
    if lr > rr:
        return lhs, convert_element_type(rhs, lt)
    return convert_element_type(lhs, rt), rhs


def _dot_general(lhs: Any, rhs: Any, dimension_numbers: Any, precision: Any, preferred_element_type: Any = None) -> Any:
    """``dot_general`` with an already canonical ``precision``, bound as it is (the transpose and
    batching rules canonicalize their equation's param first, so None takes the config then)."""
    pet = None if preferred_element_type is None else dtypes.canonicalize_dtype(preferred_element_type)
    return _bind(
        dot_general_p,
        lhs,
        rhs,
        dimension_numbers=_canon_dnums(dimension_numbers),
        precision=precision,
        preferred_element_type=pet,
    )


def dot(
    lhs: Any,
    rhs: Any,
    precision: Any = None,
    preferred_element_type: Any = None,
    *,
    dimension_numbers: Any = None,
    out_sharding: Any = None,
) -> Any:
    """Vector/matrix dot product (contracting lhs's last dim with rhs's first), or the general
    contraction ``dimension_numbers`` (as ``dot_general``) when given."""
    if dimension_numbers is not None:
        return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type, out_sharding=out_sharding)
    la, ra = core.get_aval(lhs), core.get_aval(rhs)
    # ValueError, as JAX's lax.dot raises for anything but a plain matrix/vector product
    if la.ndim not in (1, 2) or ra.ndim not in (1, 2) or la.shape[-1] != ra.shape[0]:
        raise ValueError(
            "jax.lax.dot: dimension_numbers must be specified when not performing simple un-batched matrix-matrix, "
            f"matrix-vector, or vector-vector products; got lhs_shape={la.shape} rhs_shape={ra.shape}"
        )
    if preferred_element_type is not None:
        preferred_element_type = dtypes.canonicalize_user_dtype(_np_type(preferred_element_type), "dot")
    dn = (((la.ndim - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dn, precision, preferred_element_type, out_sharding=out_sharding)


def stop_gradient(x: Any) -> Any:
    """The identity whose derivative is zero; works on pytrees."""
    from fjax import _tree_lifted as tree_util  # noqa: PLC0415 - sees through key arrays

    def stop(v: Any) -> Any:
        try:
            aval = core.get_aval(v)
        except TypeError:  # (JAX 0.10.2's words)
            raise TypeError(f"Argument '{v}' of type {type(v)} is not a valid JAX type") from None
        if _dkind(aval.dtype) not in "fc":
            return v
        return _bind(stop_gradient_p, v)

    return tree_util.tree_map(stop, x)


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None, *, sharding: Any = None) -> Any:
    """An array of ``shape`` filled with ``fill_value``; an eager result is placed with ``sharding``
    (any sharding, as ``device_put``), which is ignored under ``jit`` (as JAX's documentation says)."""
    if sharding is not None:
        return _out_sharding.place(full(shape, fill_value, dtype), sharding, "lax.full")
    shape = core.canonicalize_shape(shape)
    if dtype is None and dtypes.is_python_scalar(fill_value):
        # converted as JAX's convert_element_type converts a Python scalar (numpy's astype): an int
        # outside the default int dtype wraps, one of 2**64 or more is numpy's OverflowError
        dt = dtypes.dtype_of_python_scalar(fill_value)
        weak = type(fill_value) is not bool
        fv = fill_value
    elif dtype is None:
        fv = fill_value if isinstance(fill_value, (core.Tracer, core.Array)) else core.to_array(fill_value, "lax.full")
        weak = core.get_aval(fv).weak_type
        dt = core.get_aval(fv).dtype
    else:
        dt = dtypes.canonicalize_user_dtype(_np_type(dtype), "full")
        weak = False
        fv = fill_value
    if isinstance(fv, core.Tracer):
        v = _convert_element_type_weak(fv, dt, weak)
        return broadcast_in_dim(v, shape, ())
    check_python_complex(fv, dt)
    val = np.asarray(core.concrete_or_error(fv)).astype(dt)
    if val.ndim:
        raise TypeError(f"full must be called with scalar fill_value, got fill_value.shape {val.shape}.")
    return broadcast_in_dim(core.Array(val, weak), shape, ())


def full_like(
    x: Any, fill_value: Any, dtype: Any = None, shape: Sequence[int] | None = None, sharding: Any = None
) -> Any:
    """An array like ``x`` (shape and dtype, weak type kept) filled with ``fill_value``; placed with
    ``sharding`` as ``full`` (none given: with ``x``'s mesh sharding when ``x`` has one and the
    shape is ``x``'s, as JAX)."""
    if sharding is None and isinstance(x, core.Array) and shape is None:
        xs = getattr(x, "_sharding", None)  # (a ShardedArray's)
        if xs is not None and hasattr(xs, "mesh") and not x.weak_type:
            sharding = xs
    out = _full_like(x, fill_value, dtype, shape)
    return out if sharding is None else _out_sharding.place(out, sharding, "lax.full_like")


def _full_like(x: Any, fill_value: Any, dtype: Any, shape: Sequence[int] | None) -> Any:
    aval = core.get_aval(x)
    if dtype is None:
        dt = aval.dtype
    elif hasattr(dtype, "_np_type"):  # a jnp scalar type: JAX's full_like does not warn for these
        dt = dtypes.canonicalize_dtype(dtype)
    else:  # sic: JAX's full_like names "dtype" in its x64 truncation warning
        dt = dtypes.canonicalize_user_dtype(dtype, "dtype", 3)
    shp = aval.shape if shape is None else tuple(shape)
    val = core.Array(
        np.asarray(fill_value, dtype=dt) if not isinstance(fill_value, core.Array) else fill_value._value.astype(dt),
        aval.weak_type and dtype is None,
    )
    return broadcast_in_dim(val, shp, ())


def zeros_like_array(x: Any) -> Any:
    return full_like(x, 0)


def _zeros_of_aval(aval: ShapedArray) -> Any:
    if aval.dtype == dtypes.float0:
        return core.Array(np.zeros(aval.shape, dtypes.float0), False)
    return broadcast_in_dim(core.Array(np.zeros((), aval.dtype), aval.weak_type), aval.shape, ())


def _add_any(x: Any, y: Any) -> Any:
    """The sum of two tangents (cotangents) of one aval, as ``add_any``.

    A rule's contribution may still be a scalar (or have size-1 dims) where the other is the full
    shape: it is broadcast first, as ``add`` used to do implicitly."""
    ax, ay = core.get_aval(x), core.get_aval(y)
    if ax.dtype == dtypes.float0:
        return x
    if ax.shape != ay.shape:
        shape = _broadcast_shapes_rule("add_any", [ax, ay])
        x, y = _bcast_to(x, shape), _bcast_to(y, shape)
    return add_any_p.bind(x, y)


def _moveaxis(x: Any, src: int, dst: int) -> Any:
    nd = core.get_aval(x).ndim
    perm = [i for i in range(nd) if i != src]
    perm.insert(dst, src)
    return transpose(x, perm)


def _broadcast_new_axis(x: Any, size: int, axis: int) -> Any:
    aval = core.get_aval(x)
    shape = list(aval.shape)
    shape.insert(axis, size)
    dims = [i for i in range(len(shape)) if i != axis]
    return broadcast_in_dim(x, tuple(shape), tuple(dims))


def slice_in_dim(operand: Any, start_index: int, limit_index: int, stride: int = 1, axis: int = 0) -> Any:
    from fjax.lax.slicing import slice_in_dim as _sid  # noqa: PLC0415

    return _sid(operand, start_index, limit_index, stride, axis)


def concatenate(operands: Sequence[Any], dimension: int) -> Any:
    from fjax.lax.slicing import concatenate as _cat  # noqa: PLC0415

    return _cat(operands, dimension)
