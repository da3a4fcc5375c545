"""Passes over a lowered ``kernel_ir.Program`` (IR -> IR), run by a backend before rendering.

- ``loop_nests``: every loop nest of a program, inside kernels and the bodies of compiled
  control flow;
- ``schedule``: decides per loop nest whether it runs in parallel, with a backend's policy (the
  numba backend's is ``render.parallel_policy``: large nests with enough work per element), and its
  loop layout (``nest_layout``). The renderer then reads ``LoopNest.parallel``, ``.layout`` and
  ``.accumulate``; it does not decide them.
- memory planning and liveness: ``fjax.backends.memory``.
"""

from __future__ import annotations

from typing import Callable, Iterator

from fjax.backends.kernel_ir import ControlStep, Iota, Kernel, Load, LoopNest, Program


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
