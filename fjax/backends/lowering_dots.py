"""The lowering's decisions about ``dot_general`` taken on the jaxpr: which contractions are fused
elementwise code instead of a GEMM (``dot_fuses``), and the rewrite of a transposed product into
the product of the swapped operands (``_swap_transposed_dots``)."""

from __future__ import annotations

import math

from fjax.core import JaxprEqn, Literal

__all__ = ["FUSED_DOT_MAX_K", "_swap_transposed_dots", "dot_fuses"]

# a dot_general whose contracting size is at most this is a fused multiply(-add) loop, not a GEMM
FUSED_DOT_MAX_K = 4


def dot_fuses(lshape: tuple, rshape: tuple, dimension_numbers: tuple, max_k: int = FUSED_DOT_MAX_K) -> bool:
    """Whether a ``dot_general`` of these shapes lowers to fused elementwise code (a sum of
    products over the contracting positions) instead of a ``Dot`` (a GEMM call).

    A GEMM library pays per call (and per batch element) and packs its operands into panels,
    which only pays off when each output element sums many products over a real matrix. So:
    contracting size <= ``FUSED_DOT_MAX_K``: outer products (the [512,1,1]x[512,1,100] dots of
    per-example gradients), rank-few updates, batches of 3x3 matrices -- memory-bound, unrolled
    over the contraction. Measured here (jit, f32): 1000x4 @ 4x1000 2.9 ms fused vs 5.4 ms
    GEMM, 512 x (3x3 @ 3x3) 17 vs 23 us, 256x8 @ 8x256 27 vs 21 us; a (batched) inner product
    as a loop-nest reduction lost to BLAS (512 x 100-long: 34 vs 14 us), so it stays a GEMM.
    A backend sets its own bound (``Capabilities.fused_dot_max_k``; a GPU: 16)."""
    (lc, _), _ = dimension_numbers
    return math.prod(lshape[i] for i in lc) <= max_k


def _swap_transposed_dots(eqns: list, outvars: list) -> list:
    """``transpose(dot_general(a, b), (1, 0))`` -> ``dot_general(b, a)`` when the product is used
    only by that transpose (backward passes produce weight gradients this way): the GEMM then
    writes the gradient in the layout its consumers read, instead of them reading it strided."""
    uses: dict = {}
    for e in eqns:
        for a in e.invars:
            if type(a) is not Literal:
                uses[a] = uses.get(a, 0) + 1
    for v in outvars:
        if type(v) is not Literal:
            uses[v] = uses.get(v, 0) + 2
    producer = {e.outvars[0]: i for i, e in enumerate(eqns) if e.primitive.name == "dot_general"}
    out = list(eqns)
    for i, e in enumerate(eqns):
        if e.primitive.name != "transpose" or tuple(e.params["permutation"]) != (1, 0):
            continue
        src = e.invars[0]
        j = producer.get(src)
        if j is None or uses.get(src) != 1:
            continue
        d = eqns[j]
        (lc, rc), (lb, rb) = d.params["dimension_numbers"]
        la, ra = d.invars[0].aval, d.invars[1].aval
        if lb or rb or la.ndim - len(lc) != 1 or ra.ndim - len(rc) != 1:
            continue
        params = dict(d.params, dimension_numbers=((tuple(rc), tuple(lc)), ((), ())))
        prec = params.get("precision")
        if isinstance(prec, tuple) and len(prec) == 2:  # (lhs, rhs) precisions follow the operands
            params["precision"] = (prec[1], prec[0])
        out[j] = None
        out[i] = JaxprEqn(d.primitive, [d.invars[1], d.invars[0]], list(e.outvars), params)
    return [e for e in out if e is not None]
