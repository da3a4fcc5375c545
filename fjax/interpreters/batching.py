"""Automatic batching (vmap): each ``BatchTracer`` carries a value and the axis that is mapped.

Rules live in ``primitive_batchers``: ``rule(vals, dims, **params) -> (out, out_dim)`` where a
dim is an int or ``not_mapped`` (None). Rule-family helpers (``defvectorized``,
``defbroadcasting``, ``defreducer``) cover most primitives in one line each. The interpreters
never import lax: the few array operations rules need come through hooks set by fjax.lax.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from fjax import core
from fjax.core import ShapedArray, Tracer

not_mapped = None

# rule(vals, dims, **params) -> (out, out_dim) (lists for multiple results)
primitive_batchers: dict[core.Primitive, Callable] = {}

# hooks filled in by fjax.lax
_moveaxis: Callable | None = None  # (x, src, dst) -> x
_broadcast: Callable | None = None  # (x, size, axis) -> x with a new axis of length size at axis
_broadcast_in_dim: Callable | None = None  # lax.broadcast_in_dim


class BatchTracer(Tracer):
    __slots__ = ("val", "batch_dim")

    def __init__(self, trace: BatchTrace, val: Any, batch_dim: int | None):
        self._trace = trace
        self.val = val
        self.batch_dim = batch_dim

    @property
    def aval(self) -> ShapedArray:
        aval = core.get_aval(self.val)
        if self.batch_dim is not_mapped:
            return aval
        shape = list(aval.shape)
        del shape[self.batch_dim]
        return ShapedArray(tuple(shape), aval.dtype, aval.weak_type)

    def full_lower(self) -> Any:
        if self.batch_dim is not_mapped:
            return core.full_lower(self.val)
        return self


class BatchTrace(core.Trace):
    def pure(self, val: Any) -> BatchTracer:
        return BatchTracer(self, val, not_mapped)

    lift = pure

    @property
    def axis_size(self) -> int:
        return self.main.global_data

    def process_primitive(self, primitive: core.Primitive, tracers: list, params: dict) -> Any:
        vals = [t.val for t in tracers]
        dims = [t.batch_dim for t in tracers]
        if all(d is not_mapped for d in dims):
            out = primitive.bind(*vals, **params)
            if primitive.multiple_results:
                return [BatchTracer(self, o, not_mapped) for o in out]
            return BatchTracer(self, out, not_mapped)
        rule = primitive_batchers.get(primitive)
        if rule is None:
            raise NotImplementedError(f"Batching rule for '{primitive.name}' not implemented")
        out, out_dim = rule(vals, dims, **params, **_axis_kw(rule, self.axis_size))
        if primitive.multiple_results:
            return [BatchTracer(self, o, d) for o, d in zip(out, out_dim)]
        return BatchTracer(self, out, out_dim)


_needs_axis_size: set = set()


def _axis_kw(rule: Callable, size: int) -> dict:
    return {"axis_size": size} if rule in _needs_axis_size else {}


def wants_axis_size(rule: Callable) -> Callable:
    """Decorator: the rule receives the mapped axis size as keyword ``axis_size``."""
    _needs_axis_size.add(rule)
    return rule


def vmap_flat(
    fun: Callable, axis_size: int, in_dims: Sequence[int | None], args: Sequence[Any], out_dims_thunk: Callable
) -> list:
    """Batch ``fun`` over flat ``args`` mapped at ``in_dims``; outputs are moved to the dims
    returned by ``out_dims_thunk(n_outputs)`` (None means unmapped: the output must not vary)."""
    with core.new_main(BatchTrace, axis_size, debug_info="vmap") as main:
        trace = BatchTrace(main)
        tracers_in = [BatchTracer(trace, x, d) if d is not not_mapped else x for x, d in zip(args, in_dims)]
        outs = fun(*tracers_in)
        tracers_out = [core.full_raise(trace, o) for o in outs]
        vals_out = [t.val for t in tracers_out]
        bdims_out = [t.batch_dim for t in tracers_out]
    out_dims = out_dims_thunk(len(vals_out))
    return [move_batch_axis(axis_size, bd, od, v) for v, bd, od in zip(vals_out, bdims_out, out_dims)]


def move_batch_axis(axis_size: int, src: int | None, dst: int | None, x: Any) -> Any:
    if src is dst or src == dst:
        return x
    if dst is not_mapped:
        raise ValueError(
            "vmap has mapped output but out_axes is None: the output varies along the mapped axis, so it "
            "cannot be returned unmapped"
        )
    # the rank of the output with its mapped axis
    ndim = core.get_aval(x).ndim + (src is not_mapped)
    if not -ndim <= dst < ndim:
        raise ValueError(f"vmap out_axes: axis {dst} is out of bounds for array of dimension {ndim}")
    d = dst + ndim if dst < 0 else dst
    if src is not_mapped:
        return _broadcast(x, axis_size, d)
    return _moveaxis(x, src, d)


def bdim_at_front(x: Any, d: int | None, size: int) -> Any:
    """``x`` with its batch axis moved to (or broadcast at) position 0."""
    if d is not_mapped:
        return _broadcast(x, size, 0)
    if d == 0:
        return x
    return _moveaxis(x, d, 0)


def moveaxis(x: Any, src: int, dst: int) -> Any:
    if src == dst:
        return x
    return _moveaxis(x, src, dst)


# ---------------------------------------------------------------------------------------------
# rule families


def defvectorized(prim: core.Primitive) -> None:
    """Unary elementwise: apply to the batched value, batch dim unchanged."""

    def rule(vals: list, dims: list, **params: Any) -> tuple[Any, Any]:
        (x,), (d,) = vals, dims
        return prim.bind(x, **params), d

    primitive_batchers[prim] = rule


def defbroadcasting(prim: core.Primitive) -> None:
    """N-ary elementwise ops whose operands share one shape or are rank 0 (scalars broadcast).

    Batch dims are aligned, moving an operand only when the mapped operands disagree; unmapped
    scalars stay scalars.
    """

    def rule(vals: list, dims: list, **params: Any) -> tuple[Any, Any]:
        avals = [core.get_aval(v) for v in vals]
        size = next(a.shape[d] for a, d in zip(avals, dims) if d is not not_mapped)
        # the per-example (unbatched) rank of the output
        ranks = [a.ndim - (d is not not_mapped) for a, d in zip(avals, dims)]
        out_rank = max(ranks)
        full = [d for d, r in zip(dims, ranks) if d is not not_mapped and r == out_rank]
        target = full[0] if full and all(d == full[0] for d in full) else 0
        ex_shape = None
        for a, d, r in zip(avals, dims, ranks):
            if r == out_rank and out_rank:
                shp = list(a.shape)
                if d is not not_mapped:
                    del shp[d]
                ex_shape = tuple(shp)
                break
        out_vals = []
        for v, d, r in zip(vals, dims, ranks):
            if d is not_mapped:
                out_vals.append(v if r == 0 else _broadcast(v, size, target))
            elif r == out_rank:
                out_vals.append(_moveaxis(v, d, target) if d != target else v)
            else:
                # a batched scalar among arrays: broadcast it to the full batched shape
                shape = list(ex_shape)
                shape.insert(target, size)
                out_vals.append(_broadcast_in_dim(v, tuple(shape), (target,)))
        return prim.bind(*out_vals, **params), target

    primitive_batchers[prim] = rule


def defreducer(prim: core.Primitive, axes_param: str = "axes") -> None:
    """Reductions over ``axes``: shift the reduced axes around the batch dim."""

    def rule(vals: list, dims: list, **params: Any) -> tuple[Any, Any]:
        (x,), (d,) = vals, dims
        axes = params[axes_param]
        new_axes = tuple(a + 1 if a >= d else a for a in axes)
        out_d = d - sum(1 for a in axes if a < d)
        params = dict(params, **{axes_param: new_axes})
        return prim.bind(x, **params), out_d

    primitive_batchers[prim] = rule


# ---------------------------------------------------------------------------------------------
# batching a jaxpr (the one implementation behind jit, checkpoint and the control-flow primitives)


def batch_avals(avals: Sequence[ShapedArray], dims: Sequence[int | None], size: int) -> list[ShapedArray]:
    """``avals`` with a batch axis of ``size`` inserted at ``dims`` (None: unbatched)."""
    out = []
    for a, d in zip(avals, dims):
        if d is not_mapped:
            out.append(a)
        else:
            s = list(a.shape)
            s.insert(d, size)
            out.append(ShapedArray(tuple(s), a.dtype, a.weak_type))
    return out


def batch_jaxpr(
    closed: core.ClosedJaxpr,
    dims: Sequence[int | None],
    size: int,
    instantiate: bool | Sequence[bool],
    name: str = "vmap",
) -> tuple[core.ClosedJaxpr, list, list[bool]]:
    """``closed`` batched over inputs mapped at ``dims`` (axis size ``size``), as a jaxpr whose
    hoisted constants take the values ``consts``; batched outputs come at axis 0.

    Returns ``(batched_closed, consts, out_batched)``: an output is batched where it varies along
    the batch or where ``instantiate`` (True: every output) asks for it (it is then broadcast).
    Cached by (jaxpr, dims, size, instantiate, name)."""
    n_out = len(closed.out_avals)
    inst = (True,) * n_out if instantiate is True else (False,) * n_out if instantiate is False else tuple(instantiate)
    return _batch_jaxpr(closed, tuple(dims), size, tuple(bool(i) for i in inst), name)


@functools.lru_cache(maxsize=4096)
def _batch_jaxpr(closed: core.ClosedJaxpr, dims: tuple, size: int, instantiate: tuple, name: str) -> tuple:
    from fjax.interpreters import partial_eval as pe  # noqa: PLC0415 - pe is heavier; batching's rules don't need it

    box: list = []

    def f(*args: Any) -> list:
        with core.new_main(BatchTrace, size, debug_info=name) as main:
            trace = BatchTrace(main)
            ins = [BatchTracer(trace, x, d) if d is not not_mapped else x for x, d in zip(args, dims)]
            outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *ins)
            outs = [core.full_raise(trace, o) for o in outs]
            vals = [t.val for t in outs]
            bds = [t.batch_dim for t in outs]
        out_b = [bd is not not_mapped or inst for bd, inst in zip(bds, instantiate)]
        box.append(out_b)
        outs = [bdim_at_front(v, bd, size) if b else v for v, bd, b in zip(vals, bds, out_b)]
        return [o if isinstance(o, (Tracer, core.Array)) else core.to_array(o, name) for o in outs]

    jaxpr, consts, _ = pe.trace_to_jaxpr(f, batch_avals(closed.in_avals, dims, size), name)
    return core.ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), []), list(consts), box[0]
