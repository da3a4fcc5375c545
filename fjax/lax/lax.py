"""Elementwise, structural and reduction primitives, and dot_general.

One block per primitive: its definition, then its rules (jvp, transpose, batching) right under
it. Eager semantics are numpy ``impl`` functions; rule families come from the interpreters'
helpers (``ad.defjvp``, ``ad.deflinear``, ``batching.defvectorized``, ...).
"""

# ruff: noqa: F405 - the reduction and wrapper parts come back through star imports
from __future__ import annotations

import functools  # noqa: F401 - used by lax_reductions / lax_wrappers
import math
from typing import Any, Callable, Sequence

import numpy as np

from fjax import _blas, core, dtypes  # noqa: F401 - also used by lax_reductions / lax_wrappers
from fjax.backends.registry import (  # noqa: F401 - LIBRARY/REDUCTION: used by lax_reductions
    ELEMENTWISE,
    INDEXING,
    ITERATION,
    LAYOUT,
    LIBRARY,
    REDUCTION,
    register_lowering,
)
from fjax.core import Primitive, ShapedArray
from fjax.dtypes import kind as _dkind
from fjax.interpreters import ad, batching
from fjax.interpreters.ad import Zero, is_undefined_primal

_bind = core.bind1

# ---------------------------------------------------------------------------------------------
# dtype kinds and the standard abstract-eval rules

_float = "f"
_complex = "c"
_fc = "fc"
_int = "iu"
_intb = "iub"
_num = "iufc"
_any = "biufc"

# The dtype classes each kind string accepts, named as JAX's lax names them in its dtype errors
# (the order is that of JAX's sets, printed by JAX 0.10.2's unop/naryop dtype rules)
_accepted_names = {
    "f": "floating",
    "c": "complexfloating",
    "fc": "floating, complexfloating",
    "iu": "integer",
    "iub": "integer, bool",
    "iuf": "integer, floating",
    "iufb": "integer, floating, bool",
    "iufc": "integer, floating, complexfloating",
    "iufcb": "integer, bool, floating, complexfloating",
    "biufc": "integer, bool, floating, complexfloating",
    "b": "bool",
}


def _check_kind(name: str, aval: Any, kinds: str, position: int | None = None, accepted: str | None = None) -> None:
    """JAX's dtype error of a unary (``position`` None) or n-ary op whose operand's dtype is not
    one of ``kinds`` (``accepted``: the classes the message names, where JAX names others)."""
    if _dkind(aval.dtype) not in kinds:
        accepted = accepted or _accepted_names.get(kinds, kinds)
        if position is None:
            msg = f"{name} does not accept dtype {aval.dtype.name}. Accepted dtypes are subtypes of {accepted}."
            raise TypeError(msg)
        raise TypeError(
            f"{name} does not accept dtype {aval.dtype.name} at position {position}. "
            f"Accepted dtypes at position {position} are subtypes of {accepted}."
        )


def _check_same_dtypes(name: str, avals: Sequence[Any]) -> None:
    """JAX's ``check_same_dtypes``: the operands of ``lax.<name>`` must share one dtype (with its
    Tip naming the promoting jnp function where JAX names one)."""
    dt = avals[0].dtype
    if any(a.dtype != dt for a in avals[1:]):
        msg = f"lax.{name} requires arguments to have the same dtypes, got {', '.join(a.dtype.name for a in avals)}."
        if name in _jnp_names:
            msg += f" (Tip: jnp.{_jnp_names[name]} is a similar function that does automatic type promotion on inputs)."
        raise TypeError(msg)


def _unop_abstract(name: str, kinds: str, result_dtype: Callable | None = None) -> Callable:
    def rule(x: Any, **params: Any) -> ShapedArray:
        _check_kind(name, x, kinds)
        dt = x.dtype if result_dtype is None else result_dtype(x.dtype)
        # the weak type is kept even where the dtype changes (abs/real/imag of complex, is_finite),
        # as JAX's default weak_type rule for unary ops
        return ShapedArray(x.shape, dt, x.weak_type)

    return rule


def _broadcast_shapes_rule(name: str, avals: Sequence[Any]) -> tuple[int, ...]:
    """The result shape of an n-ary elementwise op, as JAX's lax: rank-0 operands broadcast, the
    others have one rank, and a size-1 dimension broadcasts against any size."""
    shapes = [tuple(a.shape) for a in avals if a.shape]
    if not shapes:
        return ()
    if len({len(s) for s in shapes}) > 1:
        ranks = ", ".join(map(str, sorted({len(s) for s in shapes})))
        raise TypeError(f"{name}: arrays must have the same number of dimensions, got {{{ranks}}}")
    out = list(shapes[0])
    for s in shapes[1:]:
        for i, d in enumerate(s):
            if out[i] == 1:
                out[i] = d
            elif d != 1 and d != out[i]:
                listed = ", ".join(str(tuple(b.shape)) for b in avals)
                raise TypeError(f"{name} got incompatible shapes for broadcasting: {listed}.")
    return tuple(out)


def _naryop_abstract(name: str, kinds: str, out_bool: bool = False) -> Callable:
    def rule(*avals: Any, **params: Any) -> ShapedArray:
        for i, a in enumerate(avals):
            _check_kind(name, a, kinds, i)
        _check_same_dtypes(name, avals)
        dt = avals[0].dtype
        shape = _broadcast_shapes_rule(name, avals)
        weak = all(a.weak_type for a in avals)
        # comparisons of weak operands are weak too (a weak bool), as in JAX
        return ShapedArray(shape, np.dtype(np.bool_) if out_bool else dt, weak)

    return rule


# lax names whose same-dtype error carries a Tip naming the promoting jnp function (JAX's
# _JNP_FUNCTION_EQUIVALENTS; lt/le/gt/ge, rem and the bitwise ops have none there)
_jnp_names = {
    "abs": "fabs",
    "acos": "arccos",
    "acosh": "arccosh",
    "add": "add",
    "asin": "arcsin",
    "asinh": "arcsinh",
    "atan": "arctan",
    "atan2": "arctan2",
    "atanh": "arctanh",
    "bitwise_and": "bitwise_and",
    "bitwise_not": "bitwise_not",
    "bitwise_or": "bitwise_or",
    "bitwise_xor": "bitwise_xor",
    "cbrt": "cbrt",
    "ceil": "ceil",
    "concatenate": "concatenate",
    "cos": "cos",
    "cosh": "cosh",
    "div": "divide",
    "eq": "equal",
    "exp": "exp",
    "expm1": "expm1",
    "floor": "floor",
    "greater": "greater",
    "greater_equal": "greater_equal",
    "less": "less",
    "less_equal": "less_equal",
    "log": "log",
    "logical_and": "logical_and",
    "logical_not": "logical_not",
    "logical_or": "logical_or",
    "logical_xor": "logical_xor",
    "log1p": "log1p",
    "max": "maximum",
    "min": "minimum",
    "mul": "multiply",
    "ne": "not_equal",
    "neg": "negative",
    "nextafter": "nextafter",
    "pow": "float_power",
    "round": "round",
    "select": "where",
    "shift_left": "left_shift",
    "shift_right_logical": "right_shift",
    "shift_right_arithmetic": "right_shift",
    "sign": "sign",
    "sin": "sin",
    "sinh": "sinh",
    "sqrt": "sqrt",
    "sub": "subtract",
    "tan": "tan",
    "tanh": "tanh",
}


def standard_unop(name: str, impl: Callable, kinds: str, result_dtype: Callable | None = None) -> Primitive:
    p = Primitive(name)
    p.def_impl(impl)
    p.def_abstract_eval(_unop_abstract(name, kinds, result_dtype))
    batching.defvectorized(p)
    return p


def standard_naryop(name: str, impl: Callable, kinds: str, out_bool: bool = False) -> Primitive:
    p = Primitive(name)
    p.def_impl(impl)
    p.def_abstract_eval(_naryop_abstract(name, kinds, out_bool))
    batching.defbroadcasting(p)
    return p


def _errstate(fn: Callable) -> Callable:
    """Mark an impl whose numpy call may hit invalid/overflow/divide cases.

    Those warnings are silenced for fjax's modules by a warnings filter (fjax/lax/__init__.py)
    rather than an ``np.errstate`` block per call, which would cost ~1 us on every eager op.
    """
    return fn


def _const(example: Any, val: Any) -> Any:
    """A weakly typed scalar of ``example``'s dtype (inserted as a literal when staged)."""
    dt = core.get_aval(example).dtype
    return core.Array(np.array(val, dtype=dt), True)


# ---------------------------------------------------------------------------------------------
# unary and binary elementwise: fjax/lax/lax_elementwise.py
from fjax.lax.lax_elementwise import *  # noqa: E402,F403
from fjax.lax.lax_elementwise import _bcast_to  # noqa: E402,F401

# ---------------------------------------------------------------------------------------------
# select_n and clamp


def _select_n_impl(which: np.ndarray, *cases: np.ndarray) -> np.ndarray:
    if len(cases) == 1:
        return np.broadcast_to(cases[0], np.broadcast_shapes(which.shape, cases[0].shape))
    if which.dtype == np.bool_:
        return np.where(which, cases[1], cases[0])
    return np.choose(which.astype(np.intp), np.broadcast_arrays(*cases, which)[: len(cases)])


def _select_n_abstract(which: Any, *cases: Any) -> ShapedArray:
    if not cases:
        raise ValueError("select_n() must have at least one case")
    # JAX's select shape rule, then its dtype rule
    if any(c.shape != cases[0].shape for c in cases[1:]):
        raise TypeError(f"select cases must have the same shapes, got [{', '.join(str(c.shape) for c in cases)}].")
    if which.shape and which.shape != cases[0].shape:
        raise TypeError(
            "select `which` must be scalar or have the same shape as cases, got `which` shape "
            f"{which.shape} but case shape {cases[0].shape}."
        )
    _check_same_dtypes("select", cases)
    if which.dtype != np.bool_ and _dkind(which.dtype) not in "iu":
        raise TypeError(f"select `which` must be boolean or integer type, got {which.dtype.name}.")
    if which.dtype == np.bool_ and len(cases) > 2:
        raise TypeError("select with boolean `which` cannot have > 2 cases.")
    dt = cases[0].dtype
    return ShapedArray(cases[0].shape, dt, all(c.weak_type for c in cases))


select_n_p = Primitive("select_n")
select_n_p.def_impl(_select_n_impl)
select_n_p.def_abstract_eval(_select_n_abstract)
register_lowering(select_n_p, ELEMENTWISE)


def _select_n_jvp(primals: list, tangents: list) -> tuple:
    which, *cases = primals
    out = select_n(which, *cases)
    ts = tangents[1:]
    if all(type(t) is Zero for t in ts):
        return out, Zero(ad.tangent_aval(core.get_aval(out)))
    ts = [ad.instantiate_zeros(t) for t in ts]
    return out, select_n(which, *ts)


def _select_n_transpose(ct: Any, which: Any, *cases: Any) -> list:
    if is_undefined_primal(which):
        raise ValueError("select_n is not linear in its predicate")
    if type(ct) is Zero:
        return [None] + [None] * len(cases)
    zeros = full_like(ct, 0)
    outs: list = [None]
    for i, c in enumerate(cases):
        if is_undefined_primal(c):
            outs.append(select_n(which, *[ct if j == i else zeros for j in range(len(cases))]))
        else:
            outs.append(None)
    return outs


def _select_n_batch(vals: list, dims: list, axis_size: int) -> tuple:
    which, *cases = vals
    wd, *cds = dims
    case_aval = next(core.get_aval(c) for c, d in zip(cases, cds))
    # unbatched case shape
    cshape = core.get_aval(cases[0]).shape
    if cds[0] is not None:
        cshape = cshape[: cds[0]] + cshape[cds[0] + 1 :]
    del case_aval
    if all(d is None for d in cds) and wd is not None and core.get_aval(which).ndim == 1 and cshape:
        # batched scalar predicate over unbatched cases: broadcast the predicate
        which = broadcast_in_dim(which, (axis_size,) + cshape, (0,))
        cases = [batching.bdim_at_front(c, None, axis_size) for c in cases]
        return select_n(which, *cases), 0
    cases = [batching.bdim_at_front(c, d, axis_size) for c, d in zip(cases, cds)]
    if wd is None:
        if core.get_aval(which).ndim:
            which = batching.bdim_at_front(which, None, axis_size)
    else:
        which = batching.bdim_at_front(which, wd, axis_size)
        if core.get_aval(which).ndim == 1 and cshape:
            which = broadcast_in_dim(which, (axis_size,) + cshape, (0,))
    return select_n(which, *cases), 0


ad.primitive_jvps[select_n_p] = _select_n_jvp
ad.primitive_transposes[select_n_p] = _select_n_transpose
batching.primitive_batchers[select_n_p] = batching.wants_axis_size(_select_n_batch)


def _clamp_abstract(lo: Any, x: Any, hi: Any) -> ShapedArray:
    # JAX's clamp shape rule, then its dtype rule (any dtype, one for all three)
    for name, a in (("min", lo), ("max", hi)):
        if a.shape and a.shape != x.shape:
            raise TypeError(
                f"clamp requires {name}.shape == operand.shape or {name}.shape == (), got {name}.shape={a.shape}, "
                f"operand.shape={x.shape}."
            )
    _check_same_dtypes("clamp", (lo, x, hi))
    return ShapedArray(x.shape, x.dtype, x.weak_type)


clamp_p = Primitive("clamp")
clamp_p.def_impl(lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi))
clamp_p.def_abstract_eval(_clamp_abstract)
register_lowering(clamp_p, ELEMENTWISE)
ad.defjvp(
    clamp_p,
    lambda g, lo, x, hi: mul(
        _bcast_to(g, core.get_aval(x).shape),
        convert_element_type(bitwise_and(gt(lo, x), lt(lo, hi)), core.get_aval(x).dtype),
    ),
    lambda g, lo, x, hi: mul(g, convert_element_type(bitwise_and(gt(x, lo), lt(x, hi)), core.get_aval(x).dtype)),
    lambda g, lo, x, hi: mul(
        _bcast_to(g, core.get_aval(x).shape), convert_element_type(lt(hi, x), core.get_aval(x).dtype)
    ),
)


def _clamp_batch(vals: list, dims: list, axis_size: int) -> tuple:
    # the operand fixes the shape (not defbroadcasting: an unbatched rank-0 operand with a batched
    # bound would stay rank 0 there); bounds stay rank 0 only when unbatched
    lo, x, hi = vals
    dlo, dx, dhi = dims
    x = batching.bdim_at_front(x, dx, axis_size)
    shape = core.get_aval(x).shape

    def bound(b: Any, d: int | None) -> Any:
        if d is None:
            return b if core.get_aval(b).ndim == 0 else batching.bdim_at_front(b, None, axis_size)
        b = batching.moveaxis(b, d, 0)
        return b if core.get_aval(b).ndim == len(shape) else broadcast_in_dim(b, shape, (0,))

    return clamp(bound(lo, dlo), x, bound(hi, dhi)), 0


batching.primitive_batchers[clamp_p] = batching.wants_axis_size(_clamp_batch)

# ---------------------------------------------------------------------------------------------
# convert_element_type


def _convert_impl(x: np.ndarray, new_dtype: np.dtype, weak_type: bool = False) -> np.ndarray:
    if _dkind(x.dtype) == "c" and _dkind(new_dtype) != "c":
        x = x.real
    if new_dtype == np.bool_:
        return x != 0
    if _dkind(x.dtype) in "fc" and _dkind(new_dtype) in "iu":
        # float -> int: truncate, NaN -> 0, saturate at the limits (as XLA does)
        info = dtypes.iinfo(new_dtype)  # (ml_dtypes' iinfo: numpy's knows no int4/int2/int1)
        with np.errstate(all="ignore"):
            y = np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0))
            y = np.clip(y, info.min, info.max)
        return y.astype(new_dtype)
    with np.errstate(all="ignore"):
        return x.astype(new_dtype)


def _convert_abstract(x: Any, new_dtype: np.dtype, weak_type: bool = False) -> ShapedArray:
    return ShapedArray(x.shape, new_dtype, weak_type)


convert_element_type_p = Primitive("convert_element_type")
convert_element_type_p.def_impl(_convert_impl)
convert_element_type_p.def_abstract_eval(_convert_abstract)
register_lowering(convert_element_type_p, ELEMENTWISE)
batching.defvectorized(convert_element_type_p)


def _convert_jvp(primals: list, tangents: list, new_dtype: np.dtype, weak_type: bool) -> tuple:
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if type(t) is Zero or _dkind(new_dtype) not in "fc" or _dkind(core.get_aval(x).dtype) not in "fc":
        return out, Zero(ad.tangent_aval(core.get_aval(out)))
    if _dkind(new_dtype) != "c" and _dkind(core.get_aval(x).dtype) == "c":
        return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_transpose(ct: Any, x: Any, new_dtype: np.dtype, weak_type: bool) -> list:
    old = x.aval
    if type(ct) is Zero:
        return [None]
    return [convert_element_type_p.bind(ct, new_dtype=old.dtype, weak_type=old.weak_type)]


ad.primitive_jvps[convert_element_type_p] = _convert_jvp
ad.primitive_transposes[convert_element_type_p] = _convert_transpose

# ---------------------------------------------------------------------------------------------
# structural: broadcast_in_dim, reshape, transpose, squeeze, rev


def _broadcast_in_dim_abstract(x: Any, shape: tuple, broadcast_dimensions: tuple) -> ShapedArray:
    if any(s < 0 for s in shape):
        raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got {tuple(shape)}.")
    # JAX's broadcast_in_dim shape rule, in its order
    bd, nd = tuple(broadcast_dimensions), x.ndim
    if len(bd) != nd:
        raise TypeError(
            "broadcast_in_dim broadcast_dimensions must have length equal to operand ndim; got "
            f"broadcast_dimensions {bd} for operand ndim {nd}."
        )
    if len(shape) < nd:
        raise TypeError(
            "broadcast_in_dim target broadcast shape must have equal or higher rank to the operand shape; got "
            f"operand ndim {nd} and target broadcast ndim {len(shape)}."
        )
    if not set(bd) <= set(range(len(shape))):
        raise TypeError(
            f"broadcast_in_dim broadcast_dimensions must be a subset of output dimensions, got {bd} for operand "
            f"ndim {nd} and shape {tuple(shape)}."
        )
    if any(x.shape[i] != 1 and x.shape[i] != shape[d] for i, d in enumerate(bd)):
        raise TypeError(
            "broadcast_in_dim operand dimension sizes must either be 1, or be equal to their corresponding "
            f"dimensions in the target broadcast shape; got operand of shape {x.shape}, target broadcast shape "
            f"{tuple(shape)}, broadcast_dimensions {bd} "
        )
    if len(set(bd)) != len(bd):
        raise TypeError(
            f"broadcast_in_dim broadcast_dimensions must not contain duplicates, got broadcast_dimensions {bd}"
        )
    if list(bd) != sorted(bd):  # JAX ignores the order (a wrong result): fjax refuses it
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions must be strictly increasing, got {bd}")
    return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_impl(x: np.ndarray, shape: tuple, broadcast_dimensions: tuple) -> np.ndarray:
    inshape = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        inshape[d] = x.shape[i]
    return np.broadcast_to(x.reshape(inshape), shape)


broadcast_in_dim_p = Primitive("broadcast_in_dim")
broadcast_in_dim_p.def_impl(_broadcast_in_dim_impl)
broadcast_in_dim_p.def_abstract_eval(_broadcast_in_dim_abstract)
register_lowering(broadcast_in_dim_p, LAYOUT)


def _broadcast_in_dim_transpose(ct: Any, x: Any, shape: tuple, broadcast_dimensions: tuple) -> list:
    in_shape = x.aval.shape
    new_dims = tuple(i for i in range(len(shape)) if i not in broadcast_dimensions)
    expanded = tuple(d for i, d in enumerate(broadcast_dimensions) if in_shape[i] == 1 and shape[d] != 1)
    summed = reduce_sum(ct, tuple(sorted(new_dims + expanded)))
    if expanded:
        summed = reshape(summed, in_shape)
    return [summed]


def _broadcast_in_dim_batch(vals: list, dims: list, shape: tuple, broadcast_dimensions: tuple) -> tuple:
    (x,), (d,) = vals, dims
    size = core.get_aval(x).shape[d]
    # keep the batch axis where it is: it maps to output position new_d
    new_d = sum(1 for i in range(d) if True)  # operand dims before d map in order
    before = broadcast_dimensions[:d]
    out_pos = (before[-1] + 1) if before else 0
    new_d = out_pos
    new_shape = shape[:new_d] + (size,) + shape[new_d:]
    new_bdims = tuple(b if b < new_d else b + 1 for b in broadcast_dimensions)
    new_bdims = new_bdims[:d] + (new_d,) + new_bdims[d:]
    return broadcast_in_dim_p.bind(x, shape=new_shape, broadcast_dimensions=new_bdims), new_d


ad.deflinear2(broadcast_in_dim_p, _broadcast_in_dim_transpose)
batching.primitive_batchers[broadcast_in_dim_p] = _broadcast_in_dim_batch


def _reshape_abstract(x: Any, new_sizes: tuple, dimensions: tuple | None = None) -> ShapedArray:
    if dimensions is not None and sorted(dimensions) != list(range(x.ndim)):
        raise TypeError(
            f"reshape dimensions must be a permutation of operand dimensions, got dimensions {dimensions} "
            f"for shape {x.shape}."
        )
    if any(s < 0 for s in new_sizes):
        raise TypeError(f"reshape new_sizes must all be positive, got {tuple(new_sizes)}.")
    if math.prod(new_sizes) != math.prod(x.shape):
        raise TypeError(
            f"reshape total size must be unchanged, got new_sizes {new_sizes} (size {math.prod(new_sizes)}) for "
            f"shape {x.shape} (size {math.prod(x.shape)})."
        )
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


def _reshape_impl(x: np.ndarray, new_sizes: tuple, dimensions: tuple | None = None) -> np.ndarray:
    if dimensions is not None:
        x = np.transpose(x, dimensions)
    return np.reshape(x, new_sizes)


reshape_p = Primitive("reshape")
reshape_p.def_impl(_reshape_impl)
reshape_p.def_abstract_eval(_reshape_abstract)
register_lowering(reshape_p, LAYOUT)


def _reshape_transpose(ct: Any, x: Any, new_sizes: tuple, dimensions: tuple | None) -> list:
    if dimensions is not None:
        raise NotImplementedError("transpose of reshape with dimensions")
    return [reshape(ct, x.aval.shape)]


def _reshape_batch(vals: list, dims: list, new_sizes: tuple, dimensions: tuple | None) -> tuple:
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0)
    size = core.get_aval(x).shape[0]
    if dimensions is not None:  # the per-example transpose, with the batch axis kept in front
        x = transpose(x, (0,) + tuple(i + 1 for i in dimensions))
    return reshape_p.bind(x, new_sizes=(size,) + tuple(new_sizes), dimensions=None), 0


ad.deflinear2(reshape_p, _reshape_transpose)
batching.primitive_batchers[reshape_p] = _reshape_batch


def _transpose_abstract(x: Any, permutation: tuple) -> ShapedArray:
    if sorted(permutation) != list(range(x.ndim)):
        raise TypeError(
            f"transpose permutation isn't a permutation of operand dimensions, got "
            f"permutation {permutation} for operand shape {x.shape}."
        )
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


transpose_p = Primitive("transpose")
transpose_p.def_impl(lambda x, permutation: np.transpose(x, permutation))
transpose_p.def_abstract_eval(_transpose_abstract)
register_lowering(transpose_p, LAYOUT)


def _transpose_transpose(ct: Any, x: Any, permutation: tuple) -> list:
    return [transpose(ct, tuple(np.argsort(permutation).tolist()))]


def _transpose_batch(vals: list, dims: list, permutation: tuple) -> tuple:
    (x,), (d,) = vals, dims
    perm = [p if p < d else p + 1 for p in permutation]
    perm.insert(d, d)
    return transpose_p.bind(x, permutation=tuple(perm)), d


ad.deflinear2(transpose_p, _transpose_transpose)
batching.primitive_batchers[transpose_p] = _transpose_batch


def _squeeze_abstract(x: Any, dimensions: tuple) -> ShapedArray:
    for d in dimensions:  # ValueError, as JAX's squeeze raises
        if not 0 <= d < x.ndim:
            raise ValueError(f"axis {d} is out of bounds for array of dimension {x.ndim}")
        if x.shape[d] != 1:
            raise ValueError(
                "cannot select an axis to squeeze out which has size not equal to one, got "
                f"shape={x.shape} and dimensions={tuple(dimensions)}"
            )
    return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i not in dimensions), x.dtype, x.weak_type)


squeeze_p = Primitive("squeeze")
squeeze_p.def_impl(lambda x, dimensions: np.squeeze(x, dimensions) if dimensions else x)
squeeze_p.def_abstract_eval(_squeeze_abstract)
register_lowering(squeeze_p, LAYOUT)


def _squeeze_batch(vals: list, dims: list, dimensions: tuple) -> tuple:
    (x,), (d,) = vals, dims
    new_dims = tuple(a if a < d else a + 1 for a in dimensions)
    out_d = d - sum(1 for a in dimensions if a < d)
    return squeeze_p.bind(x, dimensions=new_dims), out_d


# the cotangent gets the squeezed dims back by expand_dims (a broadcast_in_dim), as JAX's
ad.deflinear2(squeeze_p, lambda ct, x, dimensions: [expand_dims(ct, dimensions)])
batching.primitive_batchers[squeeze_p] = _squeeze_batch


def _rev_abstract(x: Any, dimensions: tuple) -> ShapedArray:
    for d in dimensions:
        if not 0 <= d < x.ndim:
            raise TypeError(
                f"rev dimensions must all be less than operand ndim, got dimensions {tuple(dimensions)} for "
                f"operand ndim {x.ndim}."
            )
    if len(set(dimensions)) != len(dimensions):
        raise TypeError(f"rev dimensions must be unique, got {tuple(dimensions)}.")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


rev_p = Primitive("rev")
rev_p.def_impl(lambda x, dimensions: np.flip(x, dimensions) if dimensions else x)
rev_p.def_abstract_eval(_rev_abstract)
register_lowering(rev_p, INDEXING)
ad.deflinear2(rev_p, lambda ct, x, dimensions: [rev(ct, dimensions)])
batching.primitive_batchers[rev_p] = lambda vals, dims, dimensions: (
    rev_p.bind(vals[0], dimensions=tuple(a if a < dims[0] else a + 1 for a in dimensions)),
    dims[0],
)

# ---------------------------------------------------------------------------------------------
# iota


def _iota_abstract(*, dtype: np.dtype, shape: tuple, dimension: int) -> ShapedArray:
    if any(s < 0 for s in shape):
        raise TypeError(f"iota shape must have every element be nonnegative, got {tuple(shape)}.")
    if not 0 <= dimension < len(shape):  # ValueError, as JAX's broadcasted_iota raises
        raise ValueError(
            f"iota dimension must be between 0 and len(shape), got dimension={dimension} for shape={shape}"
        )
    return ShapedArray(shape, dtype, False)


def _iota_impl(*, dtype: np.dtype, shape: tuple, dimension: int) -> np.ndarray:
    r = np.arange(shape[dimension], dtype=dtype)
    s = [1] * len(shape)
    s[dimension] = shape[dimension]
    return np.broadcast_to(r.reshape(s), shape)


iota_p = Primitive("iota")
iota_p.def_impl(_iota_impl)
iota_p.def_abstract_eval(_iota_abstract)
register_lowering(iota_p, ITERATION)
ad.defzero(iota_p)

# ---------------------------------------------------------------------------------------------
# reductions and dot_general: fjax/lax/lax_reductions.py
from fjax.lax.lax_reductions import *  # noqa: E402,F403
from fjax.lax.lax_reductions import (  # noqa: E402,F401
    _WIDER_ACC,
    _arg_abstract,
    _argmax_impl,
    _argmin_impl,
    _canon_dnums,
    _dot_general_abstract,
    _dot_general_batch,
    _dot_general_impl,
    _dot_general_lowering_check,
    _dot_plan,
    _dot_transpose_lhs,
    _dot_transpose_rhs,
    _empty_reduce,
    _max_ident,
    _min_ident,
    _ranges_like,
    _reduce_abstract,
    _reduce_chooser_jvp,
    _reduce_prod_jvp,
    _reduce_sum_impl,
    _reduce_sum_transpose,
    _reducer,
    _remaining,
)

# ---------------------------------------------------------------------------------------------
# stop_gradient

stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.def_impl(lambda x: x)
stop_gradient_p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype, x.weak_type))
register_lowering(stop_gradient_p, ELEMENTWISE)
ad.defzero(stop_gradient_p)
batching.defvectorized(stop_gradient_p)

# ---------------------------------------------------------------------------------------------
# public wrappers (lax API): fjax/lax/lax_wrappers.py

from fjax.lax.lax_wrappers import *  # noqa: E402,F403 - the public wrappers (split for size)
from fjax.lax.lax_wrappers import (  # noqa: E402
    _add_any,
    _broadcast_new_axis,
    _moveaxis,
    _zeros_of_aval,
)


# lax_elementwise, lax_reductions and lax_wrappers are parts of this module split off for size:
# each sees every name of it (their rules call wrappers and each other's primitives at call time)
def _share_namespace() -> None:
    from fjax.lax import lax_elementwise, lax_reductions, lax_wrappers  # noqa: PLC0415

    g = globals()
    for part in (lax_elementwise, lax_reductions, lax_wrappers):
        for k, v in vars(part).items():  # private helpers too (other modules import them from here)
            if not (k.startswith("__") and k.endswith("__")):
                g.setdefault(k, v)
    for part in (lax_elementwise, lax_reductions, lax_wrappers):
        for k, v in list(g.items()):
            if not (k.startswith("__") and k.endswith("__")):
                part.__dict__.setdefault(k, v)


_share_namespace()

# hooks the interpreters use for the few array ops their generic code needs
ad._add_any = _add_any
ad._zeros_like = _zeros_of_aval
batching._moveaxis = _moveaxis
batching._broadcast = _broadcast_new_axis
batching._broadcast_in_dim = broadcast_in_dim
