"""Passes over a lowered ``kernel_ir.Program`` (IR -> IR), run by a backend before rendering.

- ``loop_nests``: every loop nest of a program, inside kernels and the bodies of compiled
  control flow;
- ``split_nests``: cuts a fused loop nest whose body is longer than a backend's compile budget
  into several nests of bounded size (values live across a cut go through a buffer). A compiler
  spends time super-linear in the size of one function (numba's typing, LLVM's optimizer: a
  1,500-op chain fused into one nest took minutes); bounded pieces make compile time linear in the
  program, and the identical pieces of a repeated structure (a chain of the same step) render to
  the same source and are compiled once;
- ``schedule``: decides per loop nest whether it runs in parallel, with a backend's policy (the
  numba backend's is ``render.parallel_policy``: large nests with enough work per element), and its
  loop layout (``nest_layout``). The renderer then reads ``LoopNest.parallel``, ``.layout`` and
  ``.accumulate``; it does not decide them.
- memory planning and liveness: ``fjax.backends.memory``.
"""

from __future__ import annotations

from typing import Callable, Iterator

from fjax.backends.kernel_ir import Buf, ControlStep, Iota, Kernel, Load, LoopNest, Op, Program


def loop_nests(prog: Program) -> Iterator[LoopNest]:
    """The loop nests of ``prog``'s kernels, then of its control-flow bodies, recursively."""
    for step in prog.steps:
        if isinstance(step, Kernel):
            yield from step.loop_nests()
        elif isinstance(step, ControlStep):
            for body in step.bodies.values():
                if body is not None:
                    yield from loop_nests(body)


def nest_layout(nest: LoopNest) -> tuple[str, bool]:
    """How ``nest``'s loops are laid out, and whether its reductions accumulate in a separate
    buffer of the kept (non-reduced) shape:

    - ``scalar``: a 0-d domain;
    - ``flat``: elementwise, every load either a scalar or the whole domain in order: one flat loop
      over contiguous memory;
    - ``full`` / ``rows``: like ``flat`` with a reduction over all / the trailing axes: one loop, or
      a loop over rows each reduced by an inner loop;
    - ``nd``: anything else (broadcasts, transposes, indexed loads, iotas): one loop per axis; its
      reductions over non-trailing axes accumulate into a kept-shape buffer (``accumulate``)."""
    n = len(nest.domain)
    red = nest.reduce_axes or ()
    simple = not any(isinstance(s, Iota) for s in nest.body) and all(
        s.index == () or (s.index == tuple(range(n)) and s.buf.shape == nest.domain)
        for s in nest.body
        if isinstance(s, Load)
    )
    trailing = nest.trailing_reduce()
    if n == 0:
        return "scalar", False
    if simple and not red:
        return "flat", False
    if simple and trailing:
        return ("full" if len(red) == n else "rows"), False
    return "nd", bool(red and not trailing)


def schedule_nest(nest: LoopNest, parallel: Callable[[LoopNest], bool], tile: int, chunks: int) -> LoopNest:
    """Schedule one nest (in place): ``parallel`` from the backend's policy, the layout
    (``nest_layout``), the ``tile`` size of reductions' pairwise-summed tiles, and the number of
    ``chunks`` a parallel reduction's range is split into (1 when serial)."""
    nest.parallel = bool(parallel(nest))
    nest.layout, nest.accumulate = nest_layout(nest)
    nest.tile = int(tile)
    nest.chunks = int(chunks) if nest.parallel else 1
    return nest


def schedule(prog: Program, parallel: Callable[[LoopNest], bool], tile: int = 512, chunks: int = 64) -> Program:
    """Schedule every loop nest of ``prog`` (``schedule_nest``), in place."""
    for nest in loop_nests(prog):
        schedule_nest(nest, parallel, tile, chunks)
    return prog


def kernels(prog: Program) -> Iterator[Kernel]:
    """The kernels of ``prog`` and of its control-flow bodies, recursively."""
    for step in prog.steps:
        if isinstance(step, Kernel):
            yield step
        elif isinstance(step, ControlStep):
            for body in step.bodies.values():
                if body is not None:
                    yield from kernels(body)


def split_nests(prog: Program, budget: int, weight: Callable[[Op], int]) -> Program:
    """Cut every loop nest of ``prog`` whose ops weigh more than ``budget`` (``weight`` per op)
    into consecutive nests of at most ``budget`` each (in place; a single op heavier than the
    budget gets a nest of its own). Nests with guarded or computed indices are left whole."""
    for k in kernels(prog):
        if not any(isinstance(st, LoopNest) and _nest_weight(st, weight) > budget for st in k.stmts):
            continue
        stmts: list = []
        for st in k.stmts:
            if isinstance(st, LoopNest) and _splittable(st) and _nest_weight(st, weight) > budget:
                stmts.extend(_split(st, budget, weight))
            else:
                stmts.append(st)
        k.stmts = stmts
    return prog


def _nest_weight(nest: LoopNest, weight: Callable[[Op], int]) -> int:
    return sum(weight(s) for s in nest.body if isinstance(s, Op))


def _splittable(nest: LoopNest) -> bool:
    # loads at plain loop-axis indices only: an ``Ix`` may name SSA values (dynamic offsets) or a
    # fill value, which would have to travel with it
    return len(nest.domain) > 0 and all(
        isinstance(s, Op)
        or isinstance(s, Iota)
        or (isinstance(s, Load) and s.fill is None and all(e is None or type(e) is int for e in s.index))
        for s in nest.body
    )


def _period(ops: list[Op], limit: int) -> int:
    """The shortest period (at most ``limit`` ops) with which ``ops`` repeat the same structure
    (the same ops on arguments computed the same number of ops earlier), or 0."""
    pos = {op.out: i for i, op in enumerate(ops)}
    keys = [
        (op.op, op.dtype, str(op.params), tuple(i - pos[a] if a in pos else None for a in op.args))
        for i, op in enumerate(ops)
    ]
    n = len(keys)
    for p in range(1, min(limit, n // 2) + 1):
        if all(keys[i] == keys[i + p] for i in range(p, n - p)):
            return p
    return 0


def _split(nest: LoopNest, budget: int, weight: Callable[[Op], int]) -> list[LoopNest]:
    all_ops = [s for s in nest.body if isinstance(s, Op)]
    parts: list[list[Op]] = [[]]
    p = _period(all_ops, budget)
    if p and sum(weight(op) for op in all_ops[:p]) <= budget:
        # a repeated structure: cut at whole periods, so that the pieces are alike (one kernel)
        step = p * max(1, budget // sum(weight(op) for op in all_ops[p : 2 * p]))
        parts = [all_ops[i : i + step] for i in range(0, len(all_ops), step)]
    else:
        w = 0
        for s in all_ops:
            ws = weight(s)
            if parts[-1] and w + ws > budget:
                parts.append([])
                w = 0
            parts[-1].append(s)
            w += ws
    if len(parts) == 1:
        return [nest]
    last = len(parts) - 1
    leaves = {s.out: s for s in nest.body if isinstance(s, (Load, Iota))}
    part_of = {op.out: p for p, ops in enumerate(parts) for op in ops}
    # stores go with the op that computes their value (nothing to carry); reductions in the last part
    stores: list[list] = [[] for _ in parts]
    for buf, v in nest.stores:
        stores[part_of.get(v, last)].append((buf, v))
    uses: list[list[str]] = []
    for p, ops in enumerate(parts):
        names = [a for op in ops for a in op.args]
        names += [v for _, v in stores[p]]
        if p == last:
            names += [r.value for r in nest.reductions]
        uses.append(list(dict.fromkeys(names)))
    # values computed in one part and used in a later one travel through a buffer over the domain
    carried: dict[str, Buf] = {}
    defs = {op.out: op for ops in parts for op in ops}
    for p, names in enumerate(uses):
        for v in names:
            q = part_of.get(v)
            if q is not None and q < p and v not in carried:
                buf = Buf(f"n{nest.index}c{len(carried)}", nest.domain, defs[v].dtype, nest.index, True)
                carried[v] = buf
                stores[q].append((buf, v))
    full = tuple(range(len(nest.domain)))
    out = []
    for p, ops in enumerate(parts):
        piece = LoopNest(nest.index, nest.domain)
        seen: set = set()
        for v in uses[p]:
            if v in seen:
                continue
            seen.add(v)
            if v in leaves:
                piece.body.append(leaves[v])
            elif v in carried and part_of[v] < p:
                piece.body.append(Load(v, carried[v], full, carried[v].dtype))
        piece.body.extend(ops)
        piece.stores = stores[p]
        if p == last:
            piece.reduce_axes = nest.reduce_axes
            piece.reductions = list(nest.reductions)
        # float constants become kernel arguments, so that pieces differing only in constants
        # (a chain ``sin(x) * 0.9 + c_i``) share one compiled kernel
        piece.const_args = True
        out.append(piece)
    return out
