"""Reverse mode inside ``shard_map(check_vma=True)``, with JAX's varying-manual-axes semantics.

Inside a ``shard_map`` body JAX types every value as *varying* along a mesh axis (each instance
may hold a different value) or *invariant* (all instances hold the same value). Its ``psum``
turns varying into invariant and transposes to ``pvary`` (no communication); the implicit
``pvary`` that lets an invariant value meet a varying one transposes to a ``psum``. So the
gradient, taken inside the body, of a loss with respect to replicated (``P()``) parameters
comes out already summed over the instances, and the cotangent of an invariant output counts
once, not once per instance (``docs.jax.dev``: "Manual parallelism with shard_map", JEP 17111).
``vmap``, ``pmap`` and ``shard_map(check_vma=False)`` keep the per-instance semantics
(``psum`` transposes to ``psum``), which is what ``fjax.lax.parallel`` implements.

fjax runs a ``shard_map`` body as one ``vmap`` per mesh axis, so varying is "batched along the
axis" and invariant is "not batched". The gradient JAX defines is then the gradient of the
batched (whole-mesh) function: ``vjp`` inside the body traces the function to a jaxpr (closed-over
values become explicit inputs), takes the values of its inputs one ``vmap`` level down (the
instances stacked along the axis), and differentiates ``vmap`` of the jaxpr over those: the
transpose of broadcasting an invariant input sums its cotangent over the instances, and the
cotangent of an unbatched output is applied once. The results are put back as values of the
body (batched cotangents for varying inputs, unbatched for invariant ones). With several
processes (the first mesh axis spanning them) the cotangents of invariant outputs are split
evenly between the processes and those of invariant inputs summed over them (MPI Allreduce).
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core, dtypes
from fjax.interpreters import batching

__all__ = ["VmaAxisData", "vma_active", "vma_vjp"]


class VmaAxisData(batching.AxisData):
    """The axis of a ``shard_map`` with ``check_vma=True`` (reverse mode inside its body follows
    JAX's varying-manual-axes rules)."""

    __slots__ = ()


def vma_active() -> bool:
    """Whether a ``shard_map(check_vma=True)`` body is being traced in this thread (and this is
    not the ordinary ``vjp`` that ``vma_vjp`` itself runs once the levels are taken down)."""
    return _state.depth == 0 and any(m.active and type(m.global_data) is VmaAxisData for m in core._state.stack)


def _is_vma(main: core.MainTrace) -> bool:
    return type(main.global_data) is VmaAxisData and issubclass(main.trace_type, batching.BatchTrace)


def vma_vjp(fun: Callable, primals: tuple, has_aux: bool) -> tuple:
    """``fjax.vjp(fun, *primals, has_aux=has_aux)`` inside a ``shard_map(check_vma=True)`` body."""
    from fjax.interpreters import partial_eval as pe  # noqa: PLC0415

    p_flat, p_tree = tu.tree_flatten(primals)
    p_flat = [p if isinstance(p, (core.Array, core.Tracer)) else core.to_array(p, "vjp") for p in p_flat]
    box: list = []

    def flat_fun(*leaves: Any) -> list:
        out = fun(*tu.tree_unflatten(p_tree, list(leaves)))
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError("vjp with has_aux=True: the function must return a pair (output, aux)")
            out, aux = out
        o_flat, o_tree = tu.tree_flatten(out)
        a_flat, a_tree = tu.tree_flatten(aux)
        box.append((o_tree, a_tree, len(o_flat)))
        return o_flat + a_flat

    # closure conversion: the values the function closes over (the body's varying data) become
    # inputs of the jaxpr, so they can be taken down a vmap level with the primals
    avals = [core.get_aval(p) for p in p_flat]
    jaxpr, consts, _ = pe.trace_to_jaxpr(flat_fun, avals, "vjp inside shard_map")
    o_tree, a_tree, n_out = box[0]
    n_diff = len(p_flat)

    def run(*args: Any) -> list:
        return core.eval_jaxpr(jaxpr, args[n_diff:], *args[:n_diff])

    outs, back = _vjp_levels(run, list(p_flat) + list(consts), n_diff, n_out)
    po = tu.tree_unflatten(o_tree, outs[:n_out])

    def vjp_fn(ct: Any) -> tuple:
        ct_flat, ct_tree = tu.tree_flatten(ct)
        if ct_tree != o_tree:
            raise TypeError(
                f"Tree structure of cotangent input {ct_tree}, does not match structure of primal output {o_tree}."
            )
        return tuple(tu.tree_unflatten(p_tree, back(ct_flat)))

    if has_aux:
        return po, vjp_fn, tu.tree_unflatten(a_tree, outs[n_out:])
    return po, vjp_fn


def _top(args: list) -> core.MainTrace | None:
    top = None
    for a in args:
        if isinstance(a, core.Tracer):
            m = a._trace.main
            if top is None or m.level > top.level:
                top = m
    return top


def _vjp_levels(run: Callable, args: list, n_diff: int, n_out: int) -> tuple:
    """``(outs, back)``: ``run(*args)`` and a function from the cotangents of its first ``n_out``
    outputs to those of ``args[:n_diff]``, taking every shard_map level the arguments live at
    down to the values it maps over (outermost last)."""
    top = _top(args)
    lowest_vma = min((m.level for m in core._state.stack if m.active and _is_vma(m)), default=None)
    if top is None or lowest_vma is None or (top.level < lowest_vma and not _is_vma(top)):
        return _plain_vjp(run, args, n_diff, n_out)
    if not _is_vma(top):
        raise NotImplementedError(
            "reverse-mode differentiation inside a shard_map(check_vma=True) body under another transform in "
            f"that body ({top.trace_type.__name__}: jit, vmap or a nested grad inside the body) is not supported by "
            "fjax; take the gradient directly in the body (or outside the shard_map), or pass check_vma=False "
            "(pmap semantics: psum transposes to psum)"
        )
    data: batching.AxisData = top.global_data
    trace = batching.BatchTrace(top)
    vals, dims = [], []
    for a in args:
        if isinstance(a, core.Tracer) and a._trace.main is top:
            vals.append(a.val)
            dims.append(a.batch_dim)
        else:
            vals.append(a)
            dims.append(None)
    out_bdims: list = []

    def mapped(*xs: Any) -> list:
        with core.new_main(batching.BatchTrace, data, debug_info="shard_map vjp") as main:
            t = batching.BatchTrace(main)
            tin = [batching.BatchTracer(t, x, d) if d is not None else x for x, d in zip(xs, dims)]
            outs = [core.full_raise(t, o) for o in run(*tin)]
            out_bdims[:] = [o.batch_dim for o in outs]
            return [o.val if o.batch_dim is None else batching.moveaxis(o.val, o.batch_dim, 0) for o in outs]

    outs_low, back_low = _vjp_levels(mapped, vals, n_diff, n_out)
    outs = [o if bd is None else batching.BatchTracer(trace, o, 0) for o, bd in zip(outs_low, out_bdims)]

    def back(cts: list) -> list:
        low = []
        for c, o, bd in zip(cts, outs_low[:n_out], out_bdims[:n_out]):
            if isinstance(c, np.ndarray) and c.dtype == dtypes.float0:
                low.append(np.zeros(core.get_aval(o).shape, dtypes.float0))
                continue
            c_batched = isinstance(c, core.Tracer) and c._trace.main is top and c.batch_dim is not None
            if bd is None:
                if c_batched:
                    raise ValueError(
                        "vjp inside shard_map: the cotangent of an output that is invariant along mesh axis "
                        f"{data.name!r} varies along it (JAX's check_vma would reject this program)"
                    )
                c = c.val if isinstance(c, core.Tracer) and c._trace.main is top else c
                if data.nprocs > 1:  # every process holds it: each contributes its share once
                    c = _scale(c, 1.0 / data.nprocs)
                low.append(c)
            elif c_batched:
                low.append(batching.moveaxis(c.val, c.batch_dim, 0))
            else:  # one cotangent for every instance of a varying output
                c = c.val if isinstance(c, core.Tracer) and c._trace.main is top else c
                low.append(batching.bdim_at_front(c, None, data.size))
        res = back_low(low)
        up = []
        for r, d in zip(res, dims[:n_diff]):
            if isinstance(r, np.ndarray) and r.dtype == dtypes.float0:
                shape = list(r.shape)
                if d is not None:
                    del shape[0]
                up.append(np.zeros(tuple(shape), dtypes.float0))
            elif d is None:
                if data.nprocs > 1:  # an invariant input is one value for every process's instances
                    from fjax.lax import parallel_mpi  # noqa: PLC0415

                    r = parallel_mpi.allreduce(r, "sum")
                up.append(r)
            else:
                up.append(batching.BatchTracer(trace, r, 0))
        return up

    return outs, back


def _scale(c: Any, s: float) -> Any:
    from fjax.lax import lax as L  # noqa: PLC0415

    c = c if isinstance(c, (core.Array, core.Tracer)) else core.to_array(c, "vjp")
    return L.mul(c, L.convert_element_type(s, core.get_aval(c).dtype))


def _plain_vjp(run: Callable, args: list, n_diff: int, n_out: int) -> tuple:
    from fjax.api import vjp  # noqa: PLC0415

    rest = args[n_diff:]

    def f(*d: Any) -> tuple:
        outs = run(*d, *rest)
        return list(outs[:n_out]), list(outs[n_out:])

    _state.depth += 1  # this vjp is the ordinary one (the levels above were taken down)
    try:
        outs, f_vjp, aux = vjp(f, *args[:n_diff], has_aux=True)
    finally:
        _state.depth -= 1

    def back(cts: list) -> list:
        return list(f_vjp(list(cts)))

    return list(outs) + list(aux), back


class _State(threading.local):
    depth = 0


_state = _State()
