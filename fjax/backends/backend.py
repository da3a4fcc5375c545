"""The interface every backend implements, and what it tells the lowering it can do.

A backend takes a lowered ``kernel_ir.Program`` and returns a callable on numpy arrays
(``compile``) or its generated source (``source``). The lowering is backend-neutral except for
``Capabilities``: which indexed updates a compiled loop body can run inline, and which host
steps the backend has a compiled kernel for (a program made only of host steps with no compiled
kernel is not worth compiling; jit then evaluates the jaxpr eagerly).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Container

from fjax.backends.kernel_ir import HostCall, InlineStep, Program


def _no_reason(step: InlineStep) -> str | None:
    return f"{step.op} does not run inside a compiled loop on this backend"


@dataclass(frozen=True)
class Capabilities:
    """What a backend can compile beyond the kernel IR every backend renders.

    ``ops``: the elementwise ops (primitive names) the backend renders (its op table);
    ``loop_ops``: primitives (indexed updates) a compiled loop body runs inline;
    ``loop_op_reason(step)``: None when that ``InlineStep`` can, else why not;
    ``host_kernels``: primitives whose host step has a compiled kernel (a live container: a
    backend may add or remove kernels at run time);
    ``dtypes``: dtypes its kernels hold beyond ``lowering.SUPPORTED_DTYPES`` (the CUDA backend:
    float16 and bfloat16);
    ``fused_dot_max_k``: the largest contraction a ``dot_general`` is computed for as fused
    elementwise code instead of a GEMM call (``lowering.dot_fuses``);
    ``op_reason(name, out_dtype, in_dtypes)``: None when the backend computes the elementwise op or
    reduction ``name`` (the kernel IR op, e.g. ``reduce_max``) on these dtypes, else why not (its op
    table holds ``name`` for some dtypes only: the numba backend's complex ones)."""

    ops: Container[str] = frozenset()
    loop_ops: Container[str] = frozenset()
    loop_op_reason: Callable[[InlineStep], str | None] = _no_reason
    host_kernels: Container[str] = field(default_factory=frozenset)
    dtypes: frozenset = frozenset()
    fused_dot_max_k: int = 4
    op_reason: Callable[[str, Any, tuple], str | None] | None = None


class Backend:
    """A compiler from kernel IR programs to callables. Subclasses set ``name`` and
    ``capabilities`` and implement ``compile`` and ``source``."""

    name: str = "abstract"
    capabilities: Capabilities = Capabilities()

    def prepare(self, program: Program) -> Program:
        """The backend's IR passes (``fjax.backends.passes``: scheduling, ...), run before
        ``compile``/``source`` render the program."""
        return program

    def compile(self, program: Program) -> Callable[..., list]:
        """A callable taking the program's inputs (numpy arrays) and returning its outputs."""
        raise NotImplementedError(f"backend {self.name!r} does not implement compile")

    def source(self, program: Program) -> str:
        """The generated source of ``program`` (for reading; ``compile`` does not need it)."""
        raise NotImplementedError(f"backend {self.name!r} does not implement source")

    def host_step(self, step: HostCall) -> Callable[..., Any] | None:
        """A compiled implementation of the host step ``step`` (None: its primitive's impl runs)."""
        return None

    def clear_cache(self) -> None:
        """Forget compiled code held in memory (a disk cache stays)."""

    def clear_disk_cache(self) -> None:
        """Empty the backend's on-disk cache, if it has one."""

    def __repr__(self) -> str:
        return f"<fjax backend {self.name}>"
