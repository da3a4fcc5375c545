"""``lax.associative_scan``: a parallel prefix scan with a user combine function.

The recursion pairs neighbours (``fn(x[0::2], x[1::2])``), scans the half-length result, then
fixes up the even positions: O(n) work and O(log n) depth, every step an ordinary fjax operation
(strided slices, ``pad`` with interior padding to interleave), so the result differentiates,
batches and jits like any other function. The cumulative primitives' JVPs use it, which keeps
their derivatives O(n) in memory (a prefix-sum written with pairwise masks would be O(n**2)).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fjax import _tree_lifted as tree_util
from fjax import core
from fjax.lax import lax
from fjax.lax.slicing import concatenate, pad, slice_in_dim

__all__ = ["associative_scan"]


def _interleave(a: Any, b: Any, axis: int) -> Any:
    """``a`` at the even and ``b`` at the odd positions along ``axis`` (len(a) - len(b) in {0, 1})."""
    na, nb = core.get_aval(a).shape[axis], core.get_aval(b).shape[axis]
    nd = core.get_aval(a).ndim
    cfg_a = [(0, 0, 0)] * nd
    cfg_b = [(0, 0, 0)] * nd
    cfg_a[axis] = (0, 1 if na == nb else 0, 1)
    cfg_b[axis] = (1, 0 if na == nb else 1, 1)
    dt = core.get_aval(a).dtype
    zero = np.zeros((), dt)
    pa, pb = pad(a, zero, cfg_a), pad(b, zero, cfg_b)
    return lax.bitwise_or(pa, pb) if dt == np.bool_ else lax.add(pa, pb)


def associative_scan(fn: Callable, elems: Any, reverse: bool = False, axis: int = 0) -> Any:
    """All prefix combinations of ``elems`` along ``axis`` under the associative ``fn``, as
    ``jax.lax.associative_scan``: ``out[i] = fn(...fn(fn(x[0], x[1]), x[2])..., x[i])`` (in some
    bracketing). ``elems`` is a pytree of arrays sharing the scanned axis length; ``fn`` takes two
    such pytrees (slices of any length along ``axis``) and returns one with the same structure."""
    leaves, tree = tree_util.tree_flatten(elems)
    if not leaves:
        raise ValueError("associative_scan: elems must contain at least one array")
    leaves = [x if isinstance(x, core.Tracer) else core.to_array(x, "associative_scan") for x in leaves]
    ndims = {core.get_aval(x).ndim for x in leaves}
    if len(ndims) != 1:
        raise ValueError(f"associative_scan: every leaf of elems needs the same rank, got {sorted(ndims)}")
    nd = ndims.pop()
    if not -nd <= axis < nd:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {nd}")  # (JAX 0.10.2's words)
    axis = axis % nd
    lengths = {core.get_aval(x).shape[axis] for x in leaves}
    if len(lengths) != 1:
        raise ValueError(  # JAX's words (its "first dimension" is the scanned axis)
            "Array inputs to associative_scan must have the same first dimension. "
            f"(saw: {[tuple(core.get_aval(x).shape) for x in leaves]})"
        )
    if reverse:
        leaves = [lax.rev(x, (axis,)) for x in leaves]

    def combine(a: list, b: list) -> list:
        out = fn(tree_util.tree_unflatten(tree, a), tree_util.tree_unflatten(tree, b))
        flat, out_tree = tree_util.tree_flatten(out)
        if out_tree != tree:
            raise TypeError(f"associative_scan: fn returned structure {out_tree}, expected {tree} (that of elems)")
        return flat

    def sl(xs: list, start: int, limit: int | None, stride: int = 1) -> list:
        return [slice_in_dim(x, start, limit, stride, axis) for x in xs]

    def scan(xs: list) -> list:
        n = core.get_aval(xs[0]).shape[axis]
        if n < 2:
            return xs
        reduced = combine(sl(xs, 0, n - 1, 2), sl(xs, 1, None, 2))  # pairs (0,1), (2,3), ...
        odd = scan(reduced)  # prefixes ending at positions 1, 3, 5, ...
        if n % 2 == 0:
            even = combine(sl(odd, 0, -1), sl(xs, 2, None, 2))
        else:
            even = combine(odd, sl(xs, 2, None, 2))
        even = [concatenate([slice_in_dim(x, 0, 1, 1, axis), e], axis) for x, e in zip(xs, even)]
        return [_interleave(e, o, axis) for e, o in zip(even, odd)]

    out = scan(leaves)
    if reverse:
        out = [lax.rev(x, (axis,)) for x in out]
    return tree_util.tree_unflatten(tree, out)
