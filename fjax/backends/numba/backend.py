"""``NumbaBackend``: the numba CPU implementation of ``fjax.backends.backend.Backend``."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fjax.backends import passes
from fjax.backends.backend import Backend, Capabilities
from fjax.backends.kernel_ir import HostCall, Program
from fjax.backends.numba import complex_math, host_kernels, loops, program, render


class NumbaBackend(Backend):
    """Loop nests as ``numba.njit`` kernels, control flow as compiled loops, orchestration as one
    generated Python function per program (``fjax.backends.numba.program``)."""

    name = "numba"

    def __init__(self) -> None:
        self.capabilities = Capabilities(
            ops=render.renderer.code_for_op,
            loop_ops=loops.INLINE_OPS,
            loop_op_reason=loops.inline_op_unsupported_reason,
            host_kernels=host_kernels.HOST_KERNELS,
            # complex64/128 in the loop nests (complex_math), for the ops it renders
            dtypes=frozenset({np.dtype(np.complex64), np.dtype(np.complex128)}),
            op_reason=complex_math.op_reason,
        )

    def prepare(self, prog: Program) -> Program:
        prog = passes.split_nests(prog, render.NEST_BUDGET, render.compile_weight)
        return passes.schedule(prog, render.parallel_policy, tile=render.TILE, chunks=render.REDUCE_CHUNKS)

    def compile(self, prog: Program) -> Callable[..., list]:
        return program.compile_program(self.prepare(prog))

    def source(self, prog: Program) -> str:
        return program.source_of(program.ProgramSource(self.prepare(prog)))

    def host_step(self, step: HostCall) -> Callable[..., Any] | None:
        return host_kernels.host_kernel(step)

    def clear_cache(self) -> None:
        program.clear_cache()

    def clear_disk_cache(self) -> None:
        program.clear_disk_cache()
