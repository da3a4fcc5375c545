"""The CUDA runtime of fjax: device buffers, kernel modules and launches, and cuBLAS GEMMs, through cupy.

The CUDA backend (``fjax.backends.cuda.backend.CudaBackend``) renders a kernel IR program to CUDA C
and calls only the functions below, so the same backend runs on a GPU (this module) or on the CPU
(the emulation runtime, which implements the same functions); fjax's device placement
(``fjax._placement``) uses the buffer functions and the device enumeration.

- ``module(source, options)``: a compiled module (``cupy.RawModule``), cached by the hash of its
  source and options; a compile error is re-raised naming the kernels of the source;
- ``launch(module, kernel_name, grid, block, args, shared_mem=0)``: run one ``__global__`` kernel;
- ``empty(shape, dtype)``, ``to_device(ndarray)``, ``to_host(buffer)``: device buffers (cupy arrays);
- ``matmul(a, b, out)``: a (batched) GEMM on cuBLAS;
- ``available()``, ``device_count()``, ``device_kind(i)``, ``device(i)``: the GPUs of this process.

cupy is imported on first use of any of these, never when fjax is imported: ``available()`` is
what ``fjax.devices()`` asks, and it answers False (never raises) without cupy or without a GPU.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
from typing import Any, Iterator

import numpy as np

__all__ = [
    "CudaCompileError",
    "available",
    "device",
    "device_count",
    "device_kind",
    "empty",
    "launch",
    "matmul",
    "memory_stats",
    "module",
    "synchronize",
    "to_device",
    "to_host",
    "unavailable_reason",
]


class CudaCompileError(RuntimeError):
    """A CUDA source failed to compile (NVRTC); the message names the kernels of the source."""


_lock = threading.Lock()
# (available, reason it is not) once probed
_probe: tuple[bool, str] | None = None
_modules: dict[str, Any] = {}
_MAX_MODULES = 1024


def _cupy() -> Any:
    try:
        import cupy  # noqa: PLC0415 - imported only when a GPU is asked for
    except ImportError as e:
        raise RuntimeError(
            "fjax's CUDA backend needs cupy and an NVIDIA GPU: pip install 'fjax[gpu]' "
            f"(cupy for CUDA 12; see the README for CUDA 13) ({type(e).__name__}: {e})"
        ) from e
    return cupy


def _probe_once() -> tuple[bool, str]:
    global _probe
    if _probe is None:
        with _lock:
            if _probe is None:
                try:
                    cp = _cupy()
                except Exception as e:  # noqa: BLE001 - ImportError, or a broken CUDA install
                    _probe = (False, f"cupy cannot be imported ({type(e).__name__}: {e})")
                else:
                    try:
                        n = int(cp.cuda.runtime.getDeviceCount())
                        _probe = (n > 0, "" if n > 0 else "cupy found no CUDA device")
                    except Exception as e:  # noqa: BLE001 - no driver, no device
                        _probe = (False, f"cupy found no usable CUDA device ({type(e).__name__}: {e})")
    return _probe


def available() -> bool:
    """True when cupy imports and at least one CUDA device is present (probed once; never raises)."""
    return _probe_once()[0]


def unavailable_reason() -> str:
    """Why ``available()`` is False ("" when it is True)."""
    return _probe_once()[1]


def device_count() -> int:
    """The number of CUDA devices visible to this process (0 without cupy or a GPU)."""
    if not available():
        return 0
    return int(_cupy().cuda.runtime.getDeviceCount())


def device_kind(index: int) -> str:
    """The name of CUDA device ``index`` (e.g. ``"NVIDIA H100 80GB HBM3"``), as JAX's ``device_kind``."""
    name = _cupy().cuda.runtime.getDeviceProperties(int(index))["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


@contextlib.contextmanager
def device(index: int) -> Iterator[None]:
    """Make CUDA device ``index`` current in the block: allocations, transfers and launches go there."""
    with _cupy().cuda.Device(int(index)):
        yield


def memory_stats(index: int) -> dict[str, int]:
    """``bytes_in_use`` / ``bytes_limit`` of device ``index`` (cupy's pool and the device's total)."""
    cp = _cupy()
    with cp.cuda.Device(int(index)):
        free, total = cp.cuda.runtime.memGetInfo()
        pool = cp.get_default_memory_pool()
        return {
            "bytes_in_use": int(pool.used_bytes()),
            "bytes_reserved": int(pool.total_bytes()),
            "bytes_limit": int(total),
            "bytes_free": int(free),
        }


def synchronize() -> None:
    """Wait for the work queued on the current device (``Array.block_until_ready``)."""
    _cupy().cuda.get_current_stream().synchronize()


# ---------------------------------------------------------------------------------------------
# buffers


def empty(shape: tuple, dtype: Any) -> Any:
    """An uninitialized device buffer (a C-contiguous cupy array) on the current device."""
    return _cupy().empty(tuple(shape), dtype=np.dtype(dtype))


def to_device(x: np.ndarray) -> Any:
    """A device copy of the host array ``x`` (C-contiguous) on the current device."""
    return _cupy().asarray(x if x.flags.c_contiguous else np.array(x, order="C"))


def to_host(buf: Any) -> np.ndarray:
    """A host (numpy) copy of the device buffer ``buf`` (waits for the work that writes it)."""
    return _cupy().asnumpy(buf)


def matmul(a: Any, b: Any, out: Any) -> Any:
    """``out[...] = a @ b`` on cuBLAS (batched over leading dimensions, as ``numpy.matmul``)."""
    return _cupy().matmul(a, b, out=out)


# ---------------------------------------------------------------------------------------------
# kernels

_BOUNDS = r"(?:__launch_bounds__\s*\([^)]*\)\s*)?"
_GLOBAL_RE = re.compile(r"__global__\s+" + _BOUNDS + r"void\s+" + _BOUNDS + r"(\w+)")


def kernel_names(source: str) -> list[str]:
    """The ``__global__`` functions defined in a CUDA source."""
    return _GLOBAL_RE.findall(source)


def module(source: str, options: tuple[str, ...] = ()) -> Any:
    """The source compiled with NVRTC into a ``cupy.RawModule`` (cached by the hash of source and
    options). A compile error raises ``CudaCompileError`` naming the kernels and NVRTC's log."""
    options = tuple(options)
    key = hashlib.sha256(repr((source, options)).encode()).hexdigest()
    mod = _modules.get(key)
    if mod is not None:
        return mod
    cp = _cupy()
    try:
        mod = cp.RawModule(code=source, options=options)
        mod.compile()  # compile now, so the error names this source rather than the first launch
    except Exception as e:
        names = ", ".join(kernel_names(source)) or "<no __global__ function>"
        raise CudaCompileError(f"CUDA compile failed for kernel(s) {names} (options {options}): {e}") from e
    with _lock:
        if len(_modules) >= _MAX_MODULES:
            _modules.pop(next(iter(_modules)))
        _modules[key] = mod
    return mod


def launch(mod: Any, kernel_name: str, grid: tuple, block: tuple, args: tuple, shared_mem: int = 0) -> None:
    """Launch ``kernel_name`` of ``mod`` on the current stream; ``args`` are device buffers and
    numpy scalars already of the kernel's parameter types (RawKernels convert nothing)."""
    fn = mod.get_function(kernel_name)
    fn(tuple(grid), tuple(block), tuple(args), shared_mem=int(shared_mem))


def clear_cache() -> None:
    """Forget the compiled modules held in memory."""
    with _lock:
        _modules.clear()
