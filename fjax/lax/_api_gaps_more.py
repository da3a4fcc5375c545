"""``lax.scatter_apply``, ``lax.scaled_dot`` and ``lax.pbroadcast``.

``scatter_apply`` is a composition: XLA applies ``func`` once per scatter index that lands on an
element (duplicates apply it again), so fjax counts the hits per element with a ``scatter-add``
of ones under the same dimension numbers and mode, then applies ``func`` (to each element as a
scalar, through vmap, as JAX traces it on a scalar) as many times as the count says. As in JAX it
has no derivative.

``scaled_dot`` is a primitive, as in JAX: ``(lhs * lhs_scale) @ (rhs * rhs_scale)`` with the
scales repeated along the contracting dimensions, operands and scales rounded to bfloat16 first,
the product accumulated in ``preferred_element_type`` (bfloat16 by default). No derivative (JAX
has none), JAX's batching rule.

``pbroadcast(x, axis_name, source)`` is the collective broadcast, written as JAX documents it:
``psum(where(axis_index(axis_name) == source, x, 0), axis_name)``.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any, Callable

import ml_dtypes
import numpy as np

from fjax import core, dtypes
from fjax.interpreters import batching

__all__ = ["pbroadcast", "scaled_dot", "scaled_dot_p", "scatter_apply"]


# --- scatter_apply ----------------------------------------------------------------------------


def scatter_apply(
    operand: Any,
    scatter_indices: Any,
    func: Callable[[Any], Any],
    dimension_numbers: Any,
    *,
    update_shape: Sequence[int] = (),
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
) -> Any:
    """Replace the elements of ``operand`` that ``scatter_indices`` select (with windows of
    ``update_shape``, the shape the updates of a scatter would have) by ``func`` of them; an
    element selected k times gets ``func`` applied k times (``jax.lax.scatter_apply``)."""
    import fjax  # noqa: PLC0415
    from fjax import lax  # noqa: PLC0415
    from fjax.numpy import _util  # noqa: PLC0415

    operand = _util.to_fjax(operand, "scatter_apply")
    aval = core.get_aval(operand)
    ones = lax.full(tuple(update_shape), 1, np.int32)
    counts = lax.scatter_add(
        lax.full(aval.shape, 0, np.int32),
        scatter_indices,
        ones,
        dimension_numbers,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
        mode=mode,
    )
    scalar = core.ShapedArray((), aval.dtype)
    out_aval = fjax.eval_shape(func, fjax.ShapeDtypeStruct((), scalar.dtype))
    if getattr(out_aval, "shape", None) != () or np.dtype(out_aval.dtype) != np.dtype(aval.dtype):
        raise TypeError(
            f"scatter_apply: func must map a {aval.dtype}[] scalar to a {aval.dtype}[] scalar, "
            f"got {getattr(out_aval, 'dtype', None)}{list(getattr(out_aval, 'shape', ()))}"
        )
    elementwise = fjax.vmap(func)

    @fjax.custom_jvp
    def apply(x: Any) -> Any:
        def body(i: Any, y: Any) -> Any:
            flat = lax.reshape(y, (y.size,))
            return lax.select(counts > i, lax.reshape(elementwise(flat), aval.shape), y)

        if aval.size == 0:
            return x
        return lax.fori_loop(0, lax.reduce_max(counts, tuple(range(aval.ndim))), body, x)

    @apply.defjvp
    def _jvp(primals: Any, tangents: Any) -> Any:
        raise NotImplementedError("scatter_apply JVP not implemented")

    return apply(operand)


# --- scaled_dot -------------------------------------------------------------------------------


def _validate_operand_scale(side: str, operand: Any, scale: Any, contracting: Sequence[int]) -> None:
    for i, size in enumerate(operand.shape):
        if i in contracting:
            if size % scale.shape[i] != 0:
                raise TypeError(
                    f"{side} contracting dim {i} of size {size} must be divisible by its scale's dim size "
                    f"{scale.shape[i]}."
                )
            if size // scale.shape[i] < 2:
                raise TypeError(
                    f"The ratio of {side} contracting dim {i} to its scale's dim size ({size // scale.shape[i]}) "
                    "must be at least 2."
                )
        elif scale.shape[i] != size:
            raise TypeError(f"{side} dim {i} of size {size} does not match scale dim size {scale.shape[i]}.")


def _scaled_dot_abstract(
    lhs: Any, rhs: Any, lhs_scale: Any, rhs_scale: Any, *, dimension_numbers: Any, preferred_element_type: Any
) -> core.ShapedArray:
    (lc, rc), (lb, rb) = dimension_numbers
    ranks = {lhs.ndim, rhs.ndim, lhs_scale.ndim, rhs_scale.ndim}
    if len(ranks) != 1:
        raise TypeError(
            f"All input tensors must have the same rank. Got lhs rank: {lhs.ndim} rhs rank: {rhs.ndim} "
            f"lhs_scale rank: {lhs_scale.ndim} rhs_scale rank: {rhs_scale.ndim}."
        )
    if len(lb) != len(rb):
        raise TypeError(f"LHS and RHS must have the same number of batch dimensions, got {len(lb)} and {len(rb)}.")
    if len(lc) != len(rc):
        raise TypeError(
            f"LHS and RHS must have the same number of contracting dimensions, got {len(lc)} and {len(rc)}."
        )
    for i, j in zip(lb, rb):
        if len({lhs.shape[i], rhs.shape[j], lhs_scale.shape[i], rhs_scale.shape[j]}) != 1:
            raise TypeError(f"All input tensors must have the same batch dimension size for batch dims ({i}, {j}).")
    for i, j in zip(lc, rc):
        if lhs.shape[i] != rhs.shape[j]:
            raise TypeError(
                f"LHS contracting dim {i} of size {lhs.shape[i]} does not match RHS contracting dim {j} of size "
                f"{rhs.shape[j]}."
            )
    _validate_operand_scale("LHS", lhs, lhs_scale, lc)
    _validate_operand_scale("RHS", rhs, rhs_scale, rc)
    lkeep = [i for i in range(lhs.ndim) if i not in lc and i not in lb]
    rkeep = [i for i in range(rhs.ndim) if i not in rc and i not in rb]
    shape = tuple([lhs.shape[i] for i in lb] + [lhs.shape[i] for i in lkeep] + [rhs.shape[i] for i in rkeep])
    return core.ShapedArray(shape, np.dtype(preferred_element_type))


def _repeat_scale(scale: np.ndarray, shape: tuple, contracting: Sequence[int]) -> np.ndarray:
    for i in contracting:
        if scale.shape[i] != shape[i]:
            scale = np.repeat(scale, shape[i] // scale.shape[i], axis=i)
    return scale


def _scaled_dot_impl(
    lhs: np.ndarray,
    rhs: np.ndarray,
    lhs_scale: np.ndarray,
    rhs_scale: np.ndarray,
    *,
    dimension_numbers: Any,
    preferred_element_type: Any,
) -> np.ndarray:
    from fjax import lax  # noqa: PLC0415

    (lc, rc), _ = dimension_numbers
    bf16 = dtypes.bfloat16
    # as JAX's reference: operand and scale each rounded to bfloat16, multiplied in bfloat16
    a = np.asarray(lhs).astype(bf16) * _repeat_scale(np.asarray(lhs_scale), lhs.shape, lc).astype(bf16)
    b = np.asarray(rhs).astype(bf16) * _repeat_scale(np.asarray(rhs_scale), rhs.shape, rc).astype(bf16)
    out = lax.dot_general(a, b, dimension_numbers, preferred_element_type=preferred_element_type)
    return np.asarray(out)


scaled_dot_p = core.Primitive("scaled_dot")
scaled_dot_p.def_impl(_scaled_dot_impl)
scaled_dot_p.def_abstract_eval(_scaled_dot_abstract)


def _scaled_dot_batch(vals: list, dims: list, *, dimension_numbers: Any, preferred_element_type: Any) -> tuple:
    size = next(core.get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
    vals = [batching.bdim_at_front(v, d, size) for v, d in zip(vals, dims)]
    (lc, rc), (lb, rb) = dimension_numbers
    inc = lambda t: tuple(d + 1 for d in t)  # noqa: E731
    dn = ((inc(lc), inc(rc)), ((0, *inc(lb)), (0, *inc(rb))))
    return scaled_dot_p.bind(*vals, dimension_numbers=dn, preferred_element_type=preferred_element_type), 0


batching.primitive_batchers[scaled_dot_p] = _scaled_dot_batch


def _dummy_scale(operand: Any, contracting: Sequence[int]) -> Any:
    from fjax import lax  # noqa: PLC0415

    shape = list(core.get_aval(operand).shape)
    for d in contracting:
        shape[d] = 1
    return lax.full(tuple(shape), 1.0, ml_dtypes.float8_e8m0fnu)


def _canon_dims(dimension_numbers: Any) -> tuple:
    (lc, rc), (lb, rb) = dimension_numbers
    return tuple(tuple(tuple(operator.index(d) for d in t) for t in pair) for pair in ((lc, rc), (lb, rb)))


def scaled_dot(
    lhs: Any,
    rhs: Any,
    *,
    lhs_scale: Any = None,
    rhs_scale: Any = None,
    dimension_numbers: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """``(lhs * lhs_scale) @ (rhs * rhs_scale)`` as ``dot_general`` (``jax.lax.scaled_dot``):
    each scale is as large as its operand except along the contracting dimensions, where each
    scale entry covers a block of at least 2 operand entries. Operands and scales are rounded to
    bfloat16; the result has ``preferred_element_type`` (default bfloat16). Default dimension
    numbers: contract the last lhs dimension with the second-to-last rhs one, batch the rest."""
    from fjax.numpy import _util  # noqa: PLC0415
    from fjax.random import _user_dtype  # noqa: PLC0415

    lhs = _util.to_fjax(lhs, "scaled_dot")
    rhs = _util.to_fjax(rhs, "scaled_dot")
    if dimension_numbers is None:
        n = core.get_aval(lhs).ndim
        if n in (0, 1):
            raise TypeError("scaled_dot does not support 0-rank and 1-rank operands.")
        dimension_numbers = (((n - 1,), (n - 2,)), (tuple(range(n - 2)), tuple(range(n - 2))))
    dimension_numbers = _canon_dims(dimension_numbers)
    (lc, rc), _ = dimension_numbers
    lhs_scale = _dummy_scale(lhs, lc) if lhs_scale is None else _util.to_fjax(lhs_scale, "scaled_dot")
    rhs_scale = _dummy_scale(rhs, rc) if rhs_scale is None else _util.to_fjax(rhs_scale, "scaled_dot")
    elt = _user_dtype(dtypes.bfloat16 if preferred_element_type is None else preferred_element_type, dtypes.bfloat16)
    return scaled_dot_p.bind(
        lhs, rhs, lhs_scale, rhs_scale, dimension_numbers=dimension_numbers, preferred_element_type=elt
    )


# --- pbroadcast -------------------------------------------------------------------------------


def pbroadcast(x: Any, axis_name: Any, source: int) -> Any:
    """Every member of the named axis gets the value of member ``source`` (``jax.lax.pbroadcast``,
    XLA's CollectiveBroadcast); a pytree is broadcast leaf by leaf."""
    import fjax  # noqa: PLC0415
    from fjax import lax  # noqa: PLC0415
    from fjax.numpy import _util  # noqa: PLC0415

    source = operator.index(source)

    def leaf(v: Any) -> Any:
        v = _util.to_fjax(v, "pbroadcast")
        here = lax.axis_index(axis_name) == source
        return lax.psum(lax.select(lax.broadcast(here, v.shape), v, lax.full_like(v, 0)), axis_name)

    return fjax.tree_util.tree_map(leaf, x)
