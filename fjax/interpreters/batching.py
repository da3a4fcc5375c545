"""Automatic batching (vmap): each ``BatchTracer`` carries a value and the axis that is mapped.

Rules live in ``primitive_batchers``: ``rule(vals, dims, **params) -> (out, out_dim)`` where a
dim is an int or ``not_mapped`` (None). Rule-family helpers (``defvectorized``,
``defbroadcasting``, ``defreducer``) cover most primitives in one line each. The interpreters
never import lax: the few array operations rules need come through hooks set by fjax.lax.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

from fjax import core
from fjax.core import ShapedArray, Tracer

not_mapped = None

# rule(vals, dims, **params) -> (out, out_dim) (lists for multiple results)
primitive_batchers: dict[core.Primitive, Callable] = {}
# rules that see the mapped axis (JAX's ``fancy_primitive_batchers``, for primitives defined outside
# fjax): rule(axis_data, vals, dims, **params) -> (out, out_dim); ``primitive_batchers`` comes first
fancy_primitive_batchers: dict[core.Primitive, Callable] = {}
# collectives over the axis of this trace: rule(axis_data, vals, dims, **params) -> (out, out_dim)
collective_rules: dict[core.Primitive, Callable] = {}
# primitive -> params -> the tuple of axis names it communicates over
axis_names_of: dict[core.Primitive, Callable[[dict], tuple]] = {}


class AxisData:
    """What a batching main carries: the mapped size and, for a named axis (``vmap(axis_name=)``,
    ``pmap``, ``shard_map``), its name. ``nprocs > 1`` marks an axis that spans processes
    (multi-process ``pmap``): each process holds ``size`` entries of the global axis of
    ``size * nprocs``, this process at offset ``rank * size``."""

    __slots__ = ("size", "name", "spmd_name", "nprocs", "rank")

    def __init__(self, size: int, name: Any = None, spmd_name: Any = None, nprocs: int = 1, rank: int = 0):
        self.size = int(size)
        self.name = name
        self.spmd_name = spmd_name
        self.nprocs = nprocs
        self.rank = rank

    @property
    def global_size(self) -> int:
        return self.size * self.nprocs

    def key(self) -> tuple:
        return (self.name, self.spmd_name, self.nprocs, self.rank)

    def __repr__(self) -> str:
        return f"AxisData(size={self.size}, name={self.name!r}, nprocs={self.nprocs})"


class _AxisCtx(threading.local):
    """The named axis of the batching rule running in this thread: a rule that re-batches an
    inner jaxpr (jit, scan, cond, while, remat, custom derivatives) batches it along the same
    named axis, so collectives inside see it."""

    def __init__(self) -> None:
        self.stack: list[tuple] = [(None, None, 1, 0)]


_axis_ctx = _AxisCtx()
_INHERIT = object()


def current_axis_key() -> tuple:
    """The named-axis context of the running batching rule (part of the cache key of every cached
    batched jaxpr: the same jaxpr batched along a named axis differs when it holds collectives)."""
    return _axis_ctx.stack[-1]


def axis_frame(name: Any) -> tuple[core.MainTrace, AxisData] | None:
    """The innermost active batching main whose axis is called ``name`` (None if unbound)."""
    for main in reversed(core._state.stack):
        if main.active and isinstance(main.global_data, AxisData) and main.global_data.name == name:
            if issubclass(main.trace_type, BatchTrace):
                return main, main.global_data
    return None


def axis_env() -> tuple:
    """``((name, size), ...)`` of the named axes bound in this thread, outermost first (jit keys
    its traces on it: shapes of ``all_gather`` and the value of ``axis_size`` depend on it)."""
    return tuple(
        (m.global_data.name, m.global_data.global_size)
        for m in core._state.stack
        if m.active and isinstance(m.global_data, AxisData) and m.global_data.name is not None
    )


# hooks filled in by fjax.lax
_moveaxis: Callable | None = None  # (x, src, dst) -> x
_broadcast: Callable | None = None  # (x, size, axis) -> x with a new axis of length size at axis
_broadcast_in_dim: Callable | None = None  # lax.broadcast_in_dim
_reshape: Callable | None = None  # lax.reshape (set by fjax.lax.parallel)


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

    def __repr__(self) -> str:
        # JAX's: the per-example type and the type of the value carrying the batch
        return f"VmapTracer(aval={self.aval}, batched={core.get_aval(self.val)})"


# primitive -> params rewrite applied when it is bound under vmap with no input mapped. JAX calls
# dot_general's batching rule even then, and the rule rebinds through the ``lax.dot_general``
# wrapper, which fills a None precision from config jax_default_matmul_precision
unmapped_params: dict[core.Primitive, Callable[[dict], dict]] = {}


def innermost_batch_main() -> core.MainTrace | None:
    """The innermost active vmap (``BatchTrace``) main of this thread, or None."""
    for main in reversed(core._state.stack):
        if issubclass(main.trace_type, BatchTrace):
            return main
    return None


class BatchTrace(core.Trace):
    def pure(self, val: Any) -> BatchTracer:
        return BatchTracer(self, val, not_mapped)

    lift = pure

    def __init__(self, main: core.MainTrace):
        super().__init__(main)
        if not isinstance(main.global_data, AxisData):
            # a main made by a batching rule re-batching an inner jaxpr: it batches the axis of
            # the rule's trace, named or not
            name, spmd, nprocs, rank = _axis_ctx.stack[-1]
            main.global_data = AxisData(main.global_data, name, spmd, nprocs, rank)

    @property
    def axis_size(self) -> int:
        return self.main.global_data.size

    @property
    def axis_data(self) -> AxisData:
        return self.main.global_data

    def process_primitive(self, primitive: core.Primitive, tracers: list, params: dict) -> Any:
        vals = [t.val for t in tracers]
        dims = [t.batch_dim for t in tracers]
        data = self.main.global_data
        # does the primitive communicate over this trace's axis (a collective, or a jit/scan/cond
        # whose body holds one)? Then it is processed here even if no input is mapped
        uses_axis = (
            data.name is not None and primitive in axis_names_of and data.name in axis_names_of[primitive](params)
        )
        if uses_axis and primitive in collective_rules:
            out, out_dim = collective_rules[primitive](data, vals, dims, **params)
            if primitive.multiple_results:
                return [BatchTracer(self, o, d) for o, d in zip(out, out_dim)]
            return BatchTracer(self, out, out_dim)
        if not uses_axis and all(d is not_mapped for d in dims):
            fix = unmapped_params.get(primitive)
            if fix is not None:
                params = fix(params)
            out = primitive.bind(*vals, **params)
            if primitive.multiple_results:
                return [BatchTracer(self, o, not_mapped) for o in out]
            return BatchTracer(self, out, not_mapped)
        rule = primitive_batchers.get(primitive)
        if rule is None:
            fancy = fancy_primitive_batchers.get(primitive)
            if fancy is None:
                raise NotImplementedError(f"Batching rule for '{primitive.name}' not implemented")
            out, out_dim = fancy(data, vals, dims, **params)
            if primitive.multiple_results:
                return [BatchTracer(self, o, d) for o, d in zip(out, out_dim)]
            return BatchTracer(self, out, out_dim)
        if data.size == 0 and primitive in empty_batch_by_shape:
            return self._empty_batch(primitive, vals, dims, params)
        _axis_ctx.stack.append(data.key())
        try:
            out, out_dim = rule(vals, dims, **params, **_axis_kw(rule, data.size))
        finally:
            _axis_ctx.stack.pop()
        if primitive.multiple_results:
            return [BatchTracer(self, o, d) for o, d in zip(out, out_dim)]
        return BatchTracer(self, out, out_dim)

    def _empty_batch(self, primitive: core.Primitive, vals: list, dims: list, params: dict) -> Any:
        # vmap over zero elements: the per-element shapes come from the unbatched abstract eval
        # (the gather/dynamic_slice rules would ask for size-1 windows of the size-0 batch axis,
        # which the shape rules refuse, as JAX's gather batching rule special-cases too)
        avals = []
        for v, d in zip(vals, dims):
            a = core.get_aval(v)
            if d is not not_mapped:
                a = a.update(shape=a.shape[:d] + a.shape[d + 1 :])
            avals.append(a)
        out = primitive.abstract_eval(*avals, **params)
        outs = list(out) if primitive.multiple_results else [out]
        res = [BatchTracer(self, _zeros((0, *o.shape), o.dtype), 0) for o in outs]
        return res if primitive.multiple_results else res[0]


def _zeros(shape: tuple, dtype: Any) -> Any:
    from fjax import lax  # noqa: PLC0415  (lax imports the interpreters)

    return lax.full(shape, 0, dtype)


#: primitives whose batching over a size-0 axis is computed from their unbatched output shapes
empty_batch_by_shape: set = set()

_needs_axis_size: set = set()


class _AxisPrimitiveBatchers:
    """JAX's ``batching.axis_primitive_batchers`` (kept by JAX for libraries): a rule
    ``rule(axis_size, axis_name, trace_type, vals, dims, **params)`` set here is kept as a
    ``fancy_primitive_batchers`` rule."""

    def __setitem__(self, prim: core.Primitive, batcher: Callable) -> None:
        def rule(axis_data: AxisData, vals: list, dims: list, **params: Any) -> Any:
            return batcher(axis_data.size, axis_data.name, None, vals, dims, **params)

        rule.batcher = batcher  # type: ignore[attr-defined]
        fancy_primitive_batchers[prim] = rule

    def __getitem__(self, prim: core.Primitive) -> Callable:
        return fancy_primitive_batchers[prim].batcher  # type: ignore[attr-defined]

    def __contains__(self, prim: Any) -> bool:
        return hasattr(fancy_primitive_batchers.get(prim), "batcher")

    def __delitem__(self, prim: core.Primitive) -> None:
        del fancy_primitive_batchers[prim]


axis_primitive_batchers = _AxisPrimitiveBatchers()


def _axis_kw(rule: Callable, size: int) -> dict:
    return {"axis_size": size} if rule in _needs_axis_size else {}


def wants_axis_size(rule: Callable) -> Callable:
    """Decorator: the rule receives the mapped axis size as keyword ``axis_size``."""
    _needs_axis_size.add(rule)
    return rule


def vmap_flat(
    fun: Callable,
    axis_size: int,
    in_dims: Sequence[int | None],
    args: Sequence[Any],
    out_dims_thunk: Callable,
    axis_data: Any = _INHERIT,
    sum_match: bool = False,
) -> list:
    """Batch ``fun`` over flat ``args`` mapped at ``in_dims``; outputs are moved to the dims
    returned by ``out_dims_thunk(n_outputs)`` (None means unmapped: the output must not vary, or,
    with ``sum_match`` (``vmap(sum_match=True)``), a varying one is summed over the mapped axis).

    ``axis_data`` (an ``AxisData``) names the axis; by default a batching rule's re-batching
    inherits the axis of the rule's trace, and a top-level call maps an unnamed axis."""
    data = axis_size if axis_data is _INHERIT else axis_data
    with core.new_main(BatchTrace, data, debug_info="vmap") as main:
        trace = BatchTrace(main)
        tracers_in = [BatchTracer(trace, x, d) if d is not not_mapped else x for x, d in zip(args, in_dims)]
        outs = fun(*tracers_in)
        tracers_out = [core.full_raise(trace, o) for o in outs]
        vals_out = [t.val for t in tracers_out]
        bdims_out = [t.batch_dim for t in tracers_out]
    out_dims = out_dims_thunk(len(vals_out))
    outs = []
    for i, (v, bd, od) in enumerate(zip(vals_out, bdims_out, out_dims)):
        try:
            outs.append(move_batch_axis(axis_size, bd, od, v, sum_match))
        except UnmappedOutputError as e:
            raise UnmappedOutputError(e.src, i) from None
    return outs


class UnmappedOutputError(ValueError):
    """An output mapped along axis ``src`` whose out_axes is None (vmap names its key path)."""

    def __init__(self, src: int, index: int | None = None) -> None:
        super().__init__(
            "vmap has mapped output but out_axes is None: the output varies along the mapped axis, so it "
            "cannot be returned unmapped"
        )
        self.src, self.index = src, index


def move_batch_axis(axis_size: int, src: int | None, dst: int | None, x: Any, sum_match: bool = False) -> Any:
    if src is dst or src == dst:
        return x
    if dst is not_mapped and sum_match:
        from fjax import lax  # noqa: PLC0415

        return lax.reduce_sum(x, (src,))
    if dst is not_mapped:
        raise UnmappedOutputError(src)
    # the rank of the output with its mapped axis
    ndim = core.get_aval(x).ndim + (src is not_mapped)
    if not -ndim <= dst < ndim:
        raise ValueError(f"axis {dst} is out of bounds for array of dimension {ndim}")
    if src is not_mapped:
        d = dst + ndim if dst < 0 else dst
        if axis_size == 1 and _reshape is not None:  # a new axis of length 1: a view, not a copy
            shape = list(core.get_aval(x).shape)
            shape.insert(d, 1)
            return _reshape(x, tuple(shape))
        return _broadcast(x, axis_size, d)
    d = dst + ndim if dst < 0 else dst
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
    """N-ary elementwise ops whose operands share one rank (size-1 dims broadcast) or are rank 0.

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


def _jaxprs_in(value: Any) -> list:
    if isinstance(value, core.ClosedJaxpr):
        return [value.jaxpr]
    if isinstance(value, core.Jaxpr):
        return [value]
    if isinstance(value, (tuple, list)):
        return [j for v in value for j in _jaxprs_in(v)]
    return []


_jaxpr_names_cache: dict = {}


def jaxpr_axis_names(jaxpr: core.Jaxpr) -> frozenset:
    """The axis names the collectives in ``jaxpr`` (and the jaxprs nested in it) communicate over."""
    key = id(jaxpr)
    hit = _jaxpr_names_cache.get(key)
    if hit is not None and hit[0] is jaxpr:
        return hit[1]
    names: set = set()
    for eqn in jaxpr.eqns:
        f = axis_names_of.get(eqn.primitive)
        if f is not None:
            names.update(f(eqn.params))
        else:
            for j in _jaxprs_in(list(eqn.params.values())):
                names.update(jaxpr_axis_names(j))
    out = frozenset(names)
    if len(_jaxpr_names_cache) > 4096:
        _jaxpr_names_cache.clear()
    _jaxpr_names_cache[key] = (jaxpr, out)
    return out


def params_axis_names(params: dict) -> tuple:
    """The axis names used by the jaxprs among a higher-order primitive's params."""
    names: set = set()
    for j in _jaxprs_in(list(params.values())):
        names.update(jaxpr_axis_names(j))
    return tuple(names)


def params_axis_main(params: dict) -> core.MainTrace | None:
    """The innermost bound named axis used inside a higher-order primitive's jaxprs (its
    ``Primitive.axis_main``): that trace must batch the body even when no input is mapped."""
    if len(core._state.stack) == 1:  # nothing is batched: the common jit dispatch stays cheap
        return None
    best = None
    for name in params_axis_names(params):
        fr = axis_frame(name)
        if fr is not None and (best is None or fr[0].level > best.level):
            best = fr[0]
    return best


def register_higher_order(prim: core.Primitive) -> None:
    """Let collectives inside ``prim``'s jaxprs reach the trace of their named axis."""
    axis_names_of[prim] = params_axis_names
    prim.axis_main = params_axis_main


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
    # the enclosing named axes (``current_axis_key``) change what collectives in ``closed`` batch to
    return _batch_jaxpr(closed, tuple(dims), size, tuple(bool(i) for i in inst), name, current_axis_key())


@core.cache_in_context(maxsize=4096)
def _batch_jaxpr(
    closed: core.ClosedJaxpr, dims: tuple, size: int, instantiate: tuple, name: str, axis_key: tuple = ()
) -> tuple:
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
