"""``CudaBackend``: the CUDA implementation of ``fjax.backends.backend.Backend``."""

from __future__ import annotations

import os
from typing import Any, Callable

from fjax.backends.backend import Backend, Capabilities
from fjax.backends.cuda import plan as cplan
from fjax.backends.cuda.complex_ops import CTYPES
from fjax.backends.cuda.executor import Executor
from fjax.backends.cuda.ops import CUDA_OPS, LOW_FLOATS
from fjax.backends.kernel_ir import Program

FUSED_DOT_MAX_K_GPU = int(os.environ.get("FJAX_CUDA_FUSED_DOT_MAX_K", "16"))


class _EveryPrimitive:
    """``Capabilities.host_kernels`` and ``loop_ops`` of the CUDA backend: every host step is either
    rendered as kernels (``host_ops``: launches, cuBLAS and cuFFT calls that need nothing from the
    host) or an error naming it, never evaluated on the host. So a program made only of host steps
    is still lowered, and a scan/while/cond body holding any of them (a sort, a cumsum, a cholesky,
    a random sampler, an FFT, ...) runs on the device as kernels of the body's plan (or raises for
    what has no CUDA form)."""

    def __contains__(self, name: object) -> bool:
        return True


LOOP_OPS = _EveryPrimitive()


def _loop_op_reason(step: Any) -> str | None:
    """None: every ``InlineStep`` renders as kernels of a loop body's plan (scatters with
    operand batching dims included), or raises naming itself when the plan is built."""
    return None


class CudaBackend(Backend):
    """Loop nests as CUDA C ``__global__`` kernels in one translation unit, GEMMs on cuBLAS, control
    flow as a host-driven launch sequence; run through a runtime (cupy's, or the CPU emulator)."""

    name = "cuda"

    def __init__(self) -> None:
        self.capabilities = Capabilities(
            ops=CUDA_OPS,
            loop_ops=LOOP_OPS,
            loop_op_reason=_loop_op_reason,
            host_kernels=_EveryPrimitive(),
            # 16-bit floats (their bits in unsigned short buffers) and complex64/128 (complex_ops)
            dtypes=frozenset(LOW_FLOATS) | frozenset(CTYPES),
            # a contraction of up to 16 is a few FMAs per output, fused with its neighbours, where
            # a cuBLAS call for it costs a launch (and split-K a second one): the MLP's
            # [256, 10] @ [10, 512] gradient took 5.5 us + a 2 us split-K reduction on an H200
            fused_dot_max_k=FUSED_DOT_MAX_K_GPU,
        )

    def source(self, program: Program) -> str:
        """One CUDA C++ translation unit with every kernel of ``program`` and the host-side launch
        sequence as comments. NotImplementedError names a step with no CUDA form."""
        return cplan.source(self.prepare(program), self.capabilities)

    def plan(self, program: Program) -> list:
        """The launch plan of ``program`` as data (``plan.Plan.steps``: ``Alloc``, ``View``,
        ``Launch``, ``MatMul``, ``Loop``, ``Branch`` records; see ``fjax.backends.cuda.plan``)."""
        return self.build(program)[0].steps

    def build(self, program: Program) -> tuple[cplan.Plan, cplan.Module]:
        """The full ``Plan`` (inputs, outputs, constants, steps) and the ``Module`` of kernels."""
        return cplan.build(self.prepare(program), self.capabilities)

    def compile(self, program: Program, runtime: Any = None) -> Callable[..., list]:
        """A callable on device buffers of ``runtime`` (default: the cupy runtime) that runs the plan
        and returns the output buffers."""
        p, module = self.build(program)
        if runtime is None:
            runtime = default_runtime()
        ex = Executor(p, module, runtime, options=())
        ex.__fjax_source__ = ex.src
        return ex


def default_runtime() -> Any:
    """The cupy runtime (``fjax.backends.cuda.runtime``); RuntimeError without cupy or a GPU."""
    try:
        from fjax.backends.cuda import runtime  # noqa: PLC0415
    except ImportError as e:
        raise RuntimeError(
            f"the CUDA backend needs cupy and an NVIDIA GPU to run ({type(e).__name__}: {e}); "
            "lowering to CUDA text (jit(f).trace(...).lower(lowering_platforms=('cuda',)).as_text()) works without"
        ) from e
    get = getattr(runtime, "get_runtime", None)
    try:
        return get() if get is not None else runtime
    except Exception as e:  # noqa: BLE001 - no device, no driver: one clear error
        raise RuntimeError(f"the CUDA backend cannot start its runtime: {type(e).__name__}: {e}") from e
