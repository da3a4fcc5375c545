"""Passes over a lowered ``kernel_ir.Program`` (IR -> IR), run by a backend before rendering.

- ``loop_nests``: every loop nest of a program, inside kernels and the bodies of compiled
  control flow;
- ``schedule``: decides per loop nest whether it runs in parallel, with a backend's policy (the
  numba backend's is ``render.parallel_policy``: large nests with enough work per element). The
  renderer then reads ``LoopNest.parallel``; it does not decide it.
"""

from __future__ import annotations

from typing import Callable, Iterator

from fjax.backends.kernel_ir import ControlStep, Kernel, LoopNest, Program


def loop_nests(prog: Program) -> Iterator[LoopNest]:
    """The loop nests of ``prog``'s kernels, then of its control-flow bodies, recursively."""
    for step in prog.steps:
        if isinstance(step, Kernel):
            yield from step.loop_nests()
        elif isinstance(step, ControlStep):
            for body in step.bodies.values():
                if body is not None:
                    yield from loop_nests(body)


def schedule(prog: Program, parallel: Callable[[LoopNest], bool]) -> Program:
    """Mark each loop nest of ``prog`` parallel where ``parallel(nest)`` says so (in place)."""
    for nest in loop_nests(prog):
        nest.parallel = bool(parallel(nest))
    return prog
