"""Gathers and scatters with batching dimensions, compiled in their index form.

``vmap`` of an indexed read or write gives a gather/scatter with ``operand_batching_dims`` (as in
JAX; ``make_jaxpr`` shows them). The compiled forms know only index vectors: the pointwise gather
(a load whose index is loaded) and the scatter loops inside compiled ``while``/``scan`` bodies.
A batching dimension is the same as one more indexed dimension whose index is the position along
the paired indices dimension (an iota), which is the form JAX used before batching dimensions
existed. Under ``jit`` each such equation is rewritten to that form (``mlir.register_rewrite``),
so a ``vmap``-ed loop that reads and writes single elements compiles instead of running on the
host primitive by primitive (a 10^5-step loop: 40 s -> milliseconds).
"""

from __future__ import annotations

from typing import Any, Callable

from fjax import core
from fjax.interpreters import mlir
from fjax.lax import lax, slicing, slicing_scatter
from fjax.lax.slicing import GatherDimensionNumbers, ScatterDimensionNumbers


def _with_iotas(indices: Any, batch_dims: tuple) -> Any:
    """``indices`` with one more index component per batching pair: the position along
    indices dimension ``d`` for each ``d`` in ``batch_dims``."""
    shape = tuple(indices.shape[:-1]) + (1,)
    dt = indices.dtype
    cols = [lax.broadcasted_iota(dt, shape, d) for d in batch_dims]
    return lax.concatenate([indices, *cols], indices.ndim - 1)


def gather_index_form(dn: GatherDimensionNumbers) -> GatherDimensionNumbers:
    """``dn`` with each batching dimension made an indexed (collapsed) dimension."""
    return GatherDimensionNumbers(
        offset_dims=dn.offset_dims,
        collapsed_slice_dims=tuple(sorted(dn.collapsed_slice_dims + dn.operand_batching_dims)),
        start_index_map=dn.start_index_map + dn.operand_batching_dims,
    )


def scatter_index_form(dn: ScatterDimensionNumbers) -> ScatterDimensionNumbers:
    """``dn`` with each batching dimension made an indexed (inserted) dimension."""
    return ScatterDimensionNumbers(
        update_window_dims=dn.update_window_dims,
        inserted_window_dims=tuple(sorted(dn.inserted_window_dims + dn.operand_batching_dims)),
        scatter_dims_to_operand_dims=dn.scatter_dims_to_operand_dims + dn.operand_batching_dims,
    )


def _rewrite(prim: core.Primitive, index_form: Callable) -> Callable[[core.JaxprEqn], Callable | None]:
    """The rewrite of a gather (operands: operand, indices) or scatter (operand, indices, updates)
    with batching dimensions into its index form."""

    def rewrite(eqn: core.JaxprEqn) -> Callable | None:
        dn = eqn.params["dimension_numbers"]
        if not dn.operand_batching_dims or eqn.invars[1].aval.ndim == 0:
            return None
        new_dn = index_form(dn)
        sib = dn[-1]  # start_indices_batching_dims / scatter_indices_batching_dims

        def fun(operand: Any, indices: Any, *rest: Any, **params: Any) -> Any:
            params = dict(params, dimension_numbers=new_dn, indices_are_sorted=False)
            return prim.bind(operand, _with_iotas(indices, sib), *rest, **params)

        return fun

    return rewrite


mlir.register_rewrite(slicing.gather_p, _rewrite(slicing.gather_p, gather_index_form))
for _p in (
    slicing_scatter.scatter_p,
    slicing_scatter.scatter_add_p,
    slicing_scatter.scatter_mul_p,
    slicing_scatter.scatter_min_p,
    slicing_scatter.scatter_max_p,
):
    mlir.register_rewrite(_p, _rewrite(_p, scatter_index_form))
