"""Memory planning and liveness over the kernel IR (an IR pass; no generated text is parsed).

``plan_memory(program)`` decides which buffers of a (top-level) program may live in a reusable
per-program buffer set, and which of them share a slot: every buffer a kernel allocates (loop-nest
stores, reduction outputs, GEMM outputs, and reduction accumulators of nests laid out with
``LoopNest.accumulate``) that does not escape the call gets a slot; buffers of the same shape and
dtype whose lifetimes do not overlap share one. A buffer escapes when it (or a view of it: a
``Reshape``) is returned, or handed to a host step (a host impl may return a view of its input).

``body_outputs(body)`` says, for the program of a compiled loop body, which allocation produces each
output, so a backend can compute outputs directly into the loop's carry buffers, and which outputs
are an indexed update (``InlineStep``) of an input that nothing else reads, so the update can be
done in place (``x.at[i].set(v)`` in a loop then costs O(1) per step, not O(size)).

Positions count the statements of kernels and the other steps in program order; a buffer is live
from the statement that allocates it to the last statement that reads it (itself, a view of it, or
a jaxpr variable bound to it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fjax import core
from fjax.backends.kernel_ir import Dot, HostCall, InlineStep, Kernel, Load, LoopNest, Program, Reshape


def acc_key(step: int, stmt: int, red: int) -> tuple:
    """The plan key of the accumulator of reduction ``red`` of statement ``stmt`` of step ``step``."""
    return ("acc", step, stmt, red)


class MemoryPlan:
    """``slots``: (shape, dtype) of each slot of the buffer set; ``slot``: plan key -> slot index,
    where a key is ``(step index, buffer name)`` or an ``acc_key``. Keys not in ``slot`` are
    allocated fresh on each call."""

    def __init__(self) -> None:
        self.slots: list[tuple[tuple, np.dtype]] = []
        self.slot: dict[Any, int] = {}
        self.escaping: set = set()

    def __repr__(self) -> str:
        return f"MemoryPlan({len(self.slots)} slots for {len(self.slot)} buffers, {len(self.escaping)} escaping)"


def _is_lit(v: Any) -> bool:
    return type(v) is core.Literal


def plan_memory(prog: Program) -> MemoryPlan:
    """The memory plan of ``prog`` (run after ``passes.schedule``: it reads ``LoopNest.accumulate``)."""
    allocs: list[tuple[int, Any, tuple, np.dtype]] = []  # (position, key, shape, dtype)
    last: dict = {}
    escaping: set = set()
    var_root: dict = {}
    pos = 0
    for si, (step, (ins, outs)) in enumerate(zip(prog.steps, prog.step_io)):
        if not isinstance(step, Kernel):
            for v in ins:
                r = None if _is_lit(v) else var_root.get(v)
                if r is not None:
                    last[r] = pos
                    if isinstance(step, HostCall):
                        escaping.add(r)
            pos += 1
            continue
        local: dict = {p.name: (None if _is_lit(v) else var_root.get(v)) for p, v in zip(step.params, ins)}

        def new(key: Any, shape: tuple, dtype: Any, at: int) -> Any:
            allocs.append((at, key, tuple(shape), np.dtype(dtype)))
            last[key] = at
            return key

        for j, st in enumerate(step.stmts):
            reads: list = []
            if isinstance(st, LoopNest):
                reads = [ld.buf for ld in st.body if isinstance(ld, Load)]
                for b, _ in st.stores:
                    local[b.name] = new((si, b.name), b.shape, b.dtype, pos)
                kept = tuple(d for a, d in enumerate(st.domain) if a not in (st.reduce_axes or ()))
                for k, r in enumerate(st.reductions):
                    if st.accumulate:
                        new(acc_key(si, j, k), kept, r.acc_dtype, pos)
                        local[r.out.name] = None  # converted from the accumulator: a fresh array
                    else:
                        local[r.out.name] = new((si, r.out.name), r.out.shape, r.out.dtype, pos)
            elif isinstance(st, Dot):
                reads = [st.lhs, st.rhs]
                local[st.out.name] = new((si, st.out.name), st.out.shape, st.out.dtype, pos)
            elif isinstance(st, Reshape):
                reads = [st.src]
                local[st.out.name] = local.get(st.src.name)  # a view: uses count for its source
            for b in reads:
                r = local.get(b.name)
                if r is not None:
                    last[r] = pos
            pos += 1
        for o, v in zip(step.outputs, outs):
            var_root[v] = local.get(o.name)
    for v in prog.out_slots:
        r = None if _is_lit(v) else var_root.get(v)
        if r is not None:
            escaping.add(r)

    plan = MemoryPlan()
    plan.escaping = escaping
    free: dict = {}  # (shape, dtype) -> free slot indices
    busy: list = []  # (last use, (shape, dtype), slot)
    for at, key, shape, dtype in allocs:
        if key in escaping:
            continue
        for entry in [b for b in busy if b[0] < at]:
            busy.remove(entry)
            free.setdefault(entry[1], []).append(entry[2])
        skey = (shape, dtype.str)
        pool = free.get(skey)
        if pool:
            k = pool.pop()
        else:
            k = len(plan.slots)
            plan.slots.append((shape, dtype))
        plan.slot[key] = k
        busy.append((last[key], skey, k))
    return plan


def body_outputs(body: Program) -> list:
    """Per output of the loop body ``body``: ``("alloc", key)`` when a loop-nest store or a
    (non-accumulated) reduction of a kernel computes it into a buffer the backend allocates (key
    as in ``MemoryPlan``), ``("inline", step index, operand var, sole)`` when it is the result of an
    indexed update (``sole``: the operand is read by nothing else in the body, so the update may be
    done in place), else None."""
    producer: dict = {}
    reads: dict = {}
    for si, (step, (ins, outs)) in enumerate(zip(body.steps, body.step_io)):
        for v in outs:
            producer[v] = (si, step)
        for v in ins:
            if not _is_lit(v):
                reads[v] = reads.get(v, 0) + 1
    for v in body.out_slots:
        if not _is_lit(v):
            reads[v] = reads.get(v, 0) + 1
    res: list = []
    for v in body.out_slots:
        hit = None if _is_lit(v) else producer.get(v)
        if hit is None:
            res.append(None)
            continue
        si, step = hit
        if isinstance(step, InlineStep):
            operand = body.step_io[si][0][0]
            res.append(("inline", si, operand, not _is_lit(operand) and reads.get(operand) == 1))
            continue
        if not isinstance(step, Kernel):
            res.append(None)
            continue
        buf = next(o for o, ov in zip(step.outputs, body.step_io[si][1]) if ov is v)
        made = None
        for st in step.stmts:
            if isinstance(st, LoopNest):
                if any(b is buf for b, _ in st.stores) or (
                    not st.accumulate and any(r.out is buf for r in st.reductions)
                ):
                    made = ("alloc", (si, buf.name))
        res.append(made)
    return res
