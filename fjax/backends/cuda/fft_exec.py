"""``lax.fft`` on cuFFT with plans of fjax's own, written straight into the plan's output buffer.

A one-axis transform (``jnp.fft.fft/ifft/rfft/irfft`` over the last axis, the usual case) runs on a
``cupy.cuda.cufft.Plan1d`` that this module creates once per (device, stream, length, type, batch)
and keeps: ``plan.fft(x, out, direction)`` writes the result where the plan wants it. Against
``cupy.fft.fft`` (the path kept for transforms over several axes) that saves a copy kernel and an
allocation per call (cupy.fft has no ``out=``) and cupy's plan-cache lookup, and it makes the
step capturable in a CUDA graph:

- a plan is never created during a capture (creating one there can crash, cupy#7559): the plan's
  first run, the executor's first call or ``capture_graph``'s warm-up run, creates it; a plan
  missing at capture time raises, so the capture fails and the program runs launch by launch;
- a graph keeps the plans it captured (``captured``): their work areas, which the graph's kernels
  write, live as long as the graph, whatever this module's cache evicts.

cuFFT's inverse transforms are unnormalized: IFFT and IRFFT results are scaled by ``1 / n`` (one
small kernel, ``scale_source``), as ``lax.fft`` defines them. cuFFT's C2R may overwrite its input,
so an IRFFT transforms a copy of its operand.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable

import numpy as np

__all__ = ["MAX_PLANS", "captured", "direct", "plan_count", "scale_source"]

# plans kept per process (each holds a work area on its device); the least recently used goes
MAX_PLANS = 64
_plans: OrderedDict = OrderedDict()
_lock = threading.Lock()
_local = threading.local()  # .captured: the plans a capture on this thread used (or None)

# cufftType values (cufft.h) for (lax.FftType, single precision)
_TYPES = {
    (0, True): 0x29,  # CUFFT_C2C
    (1, True): 0x29,
    (2, True): 0x2A,  # CUFFT_R2C
    (3, True): 0x2C,  # CUFFT_C2R
    (0, False): 0x69,  # CUFFT_Z2Z
    (1, False): 0x69,
    (2, False): 0x6A,  # CUFFT_D2Z
    (3, False): 0x6C,  # CUFFT_Z2D
}
_FORWARD, _INVERSE = -1, 1  # CUFFT_FORWARD, CUFFT_INVERSE


class captured:
    """``with captured() as plans:`` collects the plans the transforms run on this thread use
    (a CUDA graph capture keeps them alive with the graph); inside it a missing plan is an error."""

    def __enter__(self) -> list:
        self.prev = getattr(_local, "captured", None)
        _local.captured = []
        return _local.captured

    def __exit__(self, *exc: Any) -> None:
        _local.captured = self.prev


def plan_count() -> int:
    """How many cuFFT plans this module holds."""
    return len(_plans)


def _plan(cp: Any, n: int, cufft_type: int, batch: int) -> Any:
    # one plan per stream too: a plan's work area must not be shared by transforms that may run
    # at the same time (threads on two streams); a graph's plan is its capture stream's own
    key = (int(cp.cuda.runtime.getDevice()), int(cp.cuda.get_current_stream().ptr), n, cufft_type, batch)
    keep = getattr(_local, "captured", None)
    with _lock:
        plan = _plans.get(key)
        if plan is not None:
            _plans.move_to_end(key)
    if plan is None:
        if keep is not None:
            raise RuntimeError(
                f"fjax: no cuFFT plan for length {n}, type {cufft_type:#x}, batch {batch} was made "
                "before this CUDA graph capture (plans are never created during one)"
            )
        plan = cp.cuda.cufft.Plan1d(n, cufft_type, batch)
        with _lock:
            _plans[key] = plan
            while len(_plans) > MAX_PLANS:
                _plans.popitem(last=False)
    if keep is not None:
        keep.append(plan)
    return plan


def scale_source(single: bool) -> tuple[str, str]:
    """``(kernel name, CUDA source)`` of ``o[i] *= s`` over ``n`` floats (a complex buffer is
    ``2 * size`` of them): the ``1 / n`` of an inverse transform."""
    t = "float" if single else "double"
    name = f"fj_fft_scale_{'f32' if single else 'f64'}"
    src = (
        "#ifdef FJAX_EMULATE\n"
        '#include "cuda_emu.h"\n'
        "#endif\n"
        f"// the 1/n of an inverse FFT: o[i] *= s over n {t}s\n"
        f'extern "C" __global__ void __launch_bounds__(256) {name}({t}* __restrict__ o, {t} s, long long n) {{\n'
        "  for (long long t = (long long)blockIdx.x * 256 + threadIdx.x; t < n; t += (long long)gridDim.x * 256)\n"
        "    o[t] *= s;\n"
        "}\n"
    )
    return name, src


def direct(cp: Any, module: Callable, x: Any, out: Any, fft_type: int, n: int) -> bool:
    """``out[...] =`` the one-axis transform ``fft_type`` of length ``n`` over the last axis of
    ``x``, on a plan of this module's, on the current stream. False (nothing done) when it does not
    apply: an operand or output that is not C-contiguous, a batch or length beyond cuFFT's int32
    plan sizes; the caller then uses ``cupy.fft``."""
    single = np.dtype(out.dtype) in (np.float32, np.complex64)
    if not (x.flags.c_contiguous and out.flags.c_contiguous) or not x.size or not out.size:
        return False
    line = x.shape[-1] if x.ndim else 1
    batch = x.size // line
    if n <= 0 or batch * max(n, line) >= 1 << 31:
        return False
    plan = _plan(cp, n, _TYPES[(fft_type, single)], batch)
    src = x
    if fft_type == 3:  # C2R overwrites its input: transform a copy
        src = cp.empty(x.shape, x.dtype)
        src.data.copy_from_device_async(x.data, x.nbytes, cp.cuda.get_current_stream())
    plan.fft(src, out, _INVERSE if fft_type in (1, 3) else _FORWARD)
    if fft_type in (1, 3):
        name, code = scale_source(single)
        m = out.size * (2 if fft_type == 1 else 1)
        grid = (max(1, min(4096, -(-m // 256))), 1, 1)
        real = np.float32 if single else np.float64
        module(code).get_function(name)(grid, (256, 1, 1), (out, real(1.0 / n), np.int64(m)))
    return True
