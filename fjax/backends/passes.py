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
  numba backend's is ``render.parallel_policy``: large nests with enough work per element), its
  loop layout (``nest_layout``) and, for ``nd`` nests that read a buffer across its contiguous
  axis (transposes), the two axes tiled into blocks (``transpose_blocks``). The renderer then reads
  ``LoopNest.parallel``, ``.layout``, ``.accumulate`` and ``.blocks``; it does not decide them.
- memory planning and liveness: ``fjax.backends.memory``.
"""

from __future__ import annotations

from typing import Callable, Iterator

from fjax.backends.kernel_ir import Buf, ControlStep, Iota, Ix, Kernel, Load, LoopNest, Op, Program


def loop_nests(prog: Program) -> Iterator[LoopNest]:
    """The loop nests of ``prog``'s kernels, then of its control-flow bodies, recursively."""
    for step in prog.steps:
        if isinstance(step, Kernel):
            yield from step.loop_nests()
        elif isinstance(step, ControlStep):
            for body in step.bodies.values():
                if body is not None:
                    yield from loop_nests(body)


def kernels(prog: Program) -> Iterator[Kernel]:
    """The kernels of ``prog`` and of its control-flow bodies, recursively."""
    for step in prog.steps:
        if isinstance(step, Kernel):
            yield step
        elif isinstance(step, ControlStep):
            for body in step.bodies.values():
                if body is not None:
                    yield from kernels(body)


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


# read-axis x write-axis block of a transposing ``nd`` nest (``transpose_blocks``): 64 x 8 float32
# ran the 2-D transposes 1000x1000, 4096x256, 256x4096 and 1024x1024 at 0.8-0.95 ms on one core
# (element loops: 0.8, 2.3, 2.9, 4 ms). Square blocks of 16 or 32 lose at power-of-two strides: the
# block's rows fall in the same cache sets
TRANSPOSE_BLOCK = (64, 8)


def transpose_blocks(nest: LoopNest, read: int, write: int, min_extent: int = 16) -> tuple | None:
    """``(b, a, read, write)`` when the ``nd`` loop nest ``nest`` (no reductions) writes along its
    last axis ``a`` but reads some buffer contiguously along another loop axis ``b`` (a transpose,
    ``x.T * 2 + 1``): the renderer then runs axes ``b`` and ``a`` in blocks of ``read`` x ``write``
    elements, so that the lines a block reads and writes stay in cache (one element loop per axis
    walks a whole column of the read buffer per output row: every read a cache and TLB miss once
    the column outgrows them, 2-3x slower than a copy at 4 MB). None otherwise; both axes need at
    least ``min_extent`` elements."""
    n = len(nest.domain)
    a = n - 1
    if n < 2 or nest.reduce_axes or nest.domain[a] < min_extent:
        return None
    for s in nest.body:
        if not isinstance(s, Load) or not s.index or s.buf.shape[-1] < 2:
            continue
        e = s.index[-1]
        if isinstance(e, Ix):
            # a slice or reversal of a transposed buffer; strided or computed indices are left alone
            e = e.axis if (e.scale in (1, -1) and e.div == 1) else None
        # a transpose reads along ``e`` and also walks ``a`` in an outer buffer dim; a buffer that
        # does not depend on ``a`` (a column broadcast along it, an outer product's left factor)
        # is read once per output row whatever the order: blocking it only shortens the row loop
        outer = {x.axis if isinstance(x, Ix) else x for x in s.index[:-1]}
        if type(e) is int and e != a and a in outer and nest.domain[e] >= min_extent:
            return (e, a, int(read), int(write))
    return None


def schedule_nest(
    nest: LoopNest, parallel: Callable[[LoopNest], bool], tile: int, chunks: int, block: tuple | None = None
) -> LoopNest:
    """Schedule one nest (in place): ``parallel`` from the backend's policy, the layout
    (``nest_layout``), the ``tile`` size of reductions' pairwise-summed tiles, the number of
    ``chunks`` a parallel reduction's range is split into (1 when serial), and for ``nd`` nests
    that transpose, the ``block`` (read-axis x write-axis extents) of ``transpose_blocks``: None
    for ``TRANSPOSE_BLOCK``, ``()`` for none."""
    nest.parallel = bool(parallel(nest))
    nest.layout, nest.accumulate = nest_layout(nest)
    nest.tile = int(tile)
    nest.chunks = int(chunks) if nest.parallel else 1
    block = TRANSPOSE_BLOCK if block is None else block
    nest.blocks = transpose_blocks(nest, *block) if (nest.layout == "nd" and block) else None
    return nest


def schedule(
    prog: Program, parallel: Callable[[LoopNest], bool], tile: int = 512, chunks: int = 64, block: tuple | None = None
) -> Program:
    """Schedule every loop nest of ``prog`` (``schedule_nest``), in place."""
    for nest in loop_nests(prog):
        schedule_nest(nest, parallel, tile, chunks, block)
    return prog


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
