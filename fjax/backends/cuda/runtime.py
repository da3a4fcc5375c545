"""The CUDA runtime of fjax: device buffers, kernel modules and launches, and cuBLAS GEMMs, through cupy.

The CUDA backend (``fjax.backends.cuda.backend.CudaBackend``) renders a kernel IR program to CUDA C
and calls only the functions below, so the same backend runs on a GPU (this module) or on the CPU
(the emulation runtime, which implements the same functions); fjax's device placement
(``fjax._placement``) uses the buffer functions and the device enumeration.

- ``module(source, options)``: a compiled module (``cupy.RawModule``), cached by the hash of its
  source and options; a compile error is re-raised naming the kernels of the source;
- ``launch(module, kernel_name, grid, block, args, shared_mem=0)``: run one ``__global__`` kernel;
- ``empty(shape, dtype)``, ``to_device(ndarray)``, ``to_host(buffer)``: device buffers (cupy arrays);
- ``matmul(a, b, out)``: a (batched) GEMM on cuBLAS (real and complex);
- ``fft(x, out, fft_type, lengths)``: ``lax.fft`` on cuFFT (``cupy.fft``) into ``out``;
- ``available()``, ``device_count()``, ``device_kind(i)``, ``device(i)``: the GPUs of this process.

cupy is imported on first use of any of these, never when fjax is imported: ``available()`` is
what ``fjax.devices()`` asks, and it answers False (never raises) without cupy or without a GPU.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import re
import threading
from typing import Any

import ml_dtypes
import numpy as np

from fjax import dtypes
from fjax.backends.cuda import cublaslt, fft_exec
from fjax.backends.cuda.fft_ops import FFT_FUNCS

__all__ = [
    "CudaCompileError",
    "available",
    "capture_graph",
    "device",
    "device_count",
    "device_kind",
    "empty",
    "fft",
    "kernel",
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


_cp: list = []  # the cupy module once imported (every launch and allocation asks for it)


def _cupy() -> Any:
    if _cp:
        return _cp[0]
    try:
        import cupy  # noqa: PLC0415 - imported only when a GPU is asked for
    except ImportError as e:
        raise RuntimeError(
            "fjax's CUDA backend needs cupy and an NVIDIA GPU: pip install 'fjax[gpu]' "
            f"(cupy for CUDA 12; see the README for CUDA 13) ({type(e).__name__}: {e})"
        ) from e
    _cp[:] = [cupy]
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


_count: list = []


def device_count() -> int:
    """The number of CUDA devices visible to this process (0 without cupy or a GPU; probed once,
    as CUDA fixes the visible devices when it initializes)."""
    if not _count:
        _count.append(int(_cupy().cuda.runtime.getDeviceCount()) if available() else 0)
    return _count[0]


def device_kind(index: int) -> str:
    """The name of CUDA device ``index`` (e.g. ``"NVIDIA H100 80GB HBM3"``), as JAX's ``device_kind``."""
    name = _cupy().cuda.runtime.getDeviceProperties(int(index))["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


_single = contextlib.nullcontext()


def device(index: int) -> contextlib.AbstractContextManager:
    """A context making CUDA device ``index`` current in the block: allocations, transfers and
    launches go there. With one device in the process it is always current: nothing to switch."""
    if device_count() == 1 and index == 0:
        return _single
    return _cupy().cuda.Device(int(index))


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


# dtypes cupy cannot hold, kept on the device as their bits (``GpuArray`` keeps the real dtype;
# generated kernels and the 16-bit GEMMs read the bits)
_STORAGE = {np.dtype(ml_dtypes.bfloat16): np.dtype(np.uint16)}


# float8/float6/float4 and int4/int2/uint4/...: no cupy dtype and no kernel support
_NO_CUPY = frozenset(dtypes.low_precision_dtypes)


def _unsupported(d: np.dtype) -> NotImplementedError:
    return NotImplementedError(
        f"CUDA backend: arrays of dtype {d.name} cannot live on the GPU (of ml_dtypes' types only bfloat16 "
        "is supported there); keep them on the CPU, e.g. jax.device_put(x, jax.devices('cpu')[0])"
    )


def storage_dtype(dtype: Any) -> np.dtype:
    """The dtype of the cupy buffer holding an array of ``dtype`` (``uint16`` for bfloat16)."""
    d = np.dtype(dtype)
    return _STORAGE.get(d, d)


def empty(shape: tuple, dtype: Any) -> Any:
    """An uninitialized device buffer (a C-contiguous cupy array) on the current device."""
    d = np.dtype(dtype)
    if d in _NO_CUPY:
        raise _unsupported(d)
    return (_cp[0] if _cp else _cupy()).empty(shape, _STORAGE.get(d, d))


def to_device(x: np.ndarray) -> Any:
    """A device copy of the host array ``x`` (C-contiguous) on the current device."""
    if x.dtype in _NO_CUPY:
        raise _unsupported(x.dtype)
    x = x if x.flags.c_contiguous else np.array(x, order="C")
    s = _STORAGE.get(x.dtype)
    return _cupy().asarray(x.view(s) if s is not None else x)


def to_host(buf: Any) -> np.ndarray:
    """A host (numpy) copy of the device buffer ``buf`` (waits for the work that writes it)."""
    return _cupy().asnumpy(buf)


_cublas_handles: dict[int, Any] = {}  # device -> its cuBLAS handle (a ctypes.c_void_p)
_cublas: list = []


def _cublas_lib() -> Any:
    """libcublas (the one cupy loaded) through ctypes, or None where it cannot be found."""
    if not _cublas:
        cp = _cupy()
        cp.cuda.device.get_cublas_handle()  # loads the library into the process
        lib = None
        for name in ("libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"):
            try:
                lib = ctypes.CDLL(name)
                break
            except OSError:
                continue
        _cublas.append(lib)
    return _cublas[0]


_capturing = threading.local()  # .active: this thread is capturing a CUDA graph


def _shape3(x: Any) -> tuple[tuple, tuple]:
    """``(shape, strides)`` of ``x`` as ``(batch, rows, cols)``: a 2-D operand is one matrix."""
    if x.ndim == 2:
        r, c = x.shape
        return (1, r, c), (r * c * x.itemsize, *x.strides)
    return x.shape, x.strides


def _gemm_operand(x: Any) -> tuple[bool, int] | None:
    """(transposed, leading dimension) of a 2-D or 3-D operand ``([batch,] rows, cols)`` whose
    matrices are row-major or transposed row-major with a dense batch stride, else None."""
    (nb, r, c), (sb, sr, sc) = _shape3(x)
    it = x.itemsize
    if nb > 1 and sb != r * c * it:
        return None
    if (sc == it and (sr == c * it or r == 1)) or (c == 1 and sr == it):
        return False, max(c, 1)
    if sr == it and (sc == r * it or c == 1):
        return True, max(r, 1)
    return None


_gemm_plans: dict = {}
_NO_GEMM = ()
# cuBLAS's compute types for float32 GEMMs (cublasComputeType_t) and CUDA_R_32F
_COMPUTE_TYPES = {"tf32": 77, "bf16": 75, "f16": 74}
_CUDA_R_32F = 0
# cudaDataType_t of the GEMM dtypes cuBLAS's Ex call takes with CUBLAS_COMPUTE_32F (68)
_CUDA_TYPES = {np.dtype(np.float32): 0, np.dtype(np.float16): 2, np.dtype(ml_dtypes.bfloat16): 14}
_COMPUTE_32F = 68


class _Complex64(ctypes.Structure):  # cuComplex (alpha and beta of cublasCgemm*)
    _fields_ = [("re", ctypes.c_float), ("im", ctypes.c_float)]


class _Complex128(ctypes.Structure):  # cuDoubleComplex
    _fields_ = [("re", ctypes.c_double), ("im", ctypes.c_double)]


# the strided-batched GEMM of each dtype and the C type of its alpha/beta (complex: cgemm/zgemm,
# whose CUBLAS_OP_T transposes without conjugating, as dot_general's transposed operands need)
_GEMM_FNS = {
    np.dtype(np.float32): ("cublasSgemmStridedBatched", ctypes.c_float),
    np.dtype(np.float64): ("cublasDgemmStridedBatched", ctypes.c_double),
    np.dtype(np.complex64): ("cublasCgemmStridedBatched", _Complex64),
    np.dtype(np.complex128): ("cublasZgemmStridedBatched", _Complex128),
}


def _gemm_plan(a: Any, b: Any, out: Any, compute: str = "", types: tuple | None = None) -> tuple:
    """The cuBLAS call for ``out = a @ b`` with these shapes, strides and dtypes, minus the
    pointers (``_NO_GEMM`` when cuBLAS's strided-batched GEMM cannot do it): computed once per
    layout, so a repeated GEMM costs one dictionary lookup before the call. ``compute``: a fast
    float32 mode (``plan.gemm_compute``) through ``cublasGemmStridedBatchedEx``."""
    key = (a.shape, a.strides, b.shape, b.strides, out.shape, out.strides, a.dtype, b.dtype, out.dtype, compute, types)
    plan = _gemm_plans.get(key)
    if plan is not None:
        return plan
    plan = _NO_GEMM
    dt = out.dtype
    if types is not None:
        # 16-bit operands (their buffers may hold bits): cublasGemmStridedBatchedEx, float32 compute
        it, ot = (_CUDA_TYPES.get(np.dtype(t)) for t in types)
        ok = it is not None and ot is not None and a.dtype == b.dtype and a.itemsize == 2
        if not ok:
            raise NotImplementedError(f"CUDA backend: a GEMM of {types[0]} -> {types[1]}")
        compute, dt = "", np.dtype(np.float32)  # the float path below, with these types
    if (
        a.ndim == b.ndim == out.ndim
        and a.ndim in (2, 3)
        and (dt in _GEMM_FNS or types is not None)
        and (a.dtype == dt or types is not None)
        and (b.dtype == dt or types is not None)
        and out.flags.c_contiguous
        and (a.ndim == 2 or a.shape[0] == b.shape[0] == out.shape[0])
        and min(out.shape) > 0
        and a.shape[-1] > 0
    ):
        la, lb = _gemm_operand(a), _gemm_operand(b)
        lib = _cublas_lib() if la is not None and lb is not None else None
        if lib is not None:
            nb, m, k = _shape3(a)[0]
            n = b.shape[-1]
            f32 = dt == np.float32
            fname, ct = _GEMM_FNS[np.dtype(dt)]
            fn = getattr(lib, fname)
            ex = _COMPUTE_TYPES.get(compute) if f32 else None
            if types is not None:
                ex = (_COMPUTE_32F, it, ot)
            if ex is not None:
                fn = getattr(lib, "cublasGemmStridedBatchedEx", None)
                if fn is None and types is not None:
                    raise NotImplementedError("CUDA backend: 16-bit GEMMs need cublasGemmStridedBatchedEx")
                if fn is None:  # (an old cuBLAS: float32 in full, which satisfies any request)
                    fn, ex = lib.cublasSgemmStridedBatched, None
            one, zero = ct(1.0), ct(0.0)
            ta, lda = la
            tb, ldb = lb
            # row-major C = A B is column-major C^T = B^T A^T
            plan = (
                lib, fn, int(tb), int(ta), n, m, k, ctypes.byref(one), ldb, ctypes.c_longlong(k * n), lda,
                ctypes.c_longlong(m * k), ctypes.byref(zero), n, ctypes.c_longlong(m * n), nb, (one, zero), ex,
            )  # fmt: skip
    with _lock:
        if len(_gemm_plans) >= 4096:
            _gemm_plans.clear()
        _gemm_plans[key] = plan
    return plan


def matmul(a: Any, b: Any, out: Any, compute: str = "", types: tuple | None = None) -> Any:
    """``out[...] = a @ b`` on cuBLAS (batched over the leading dimension): float32/float64/
    complex64/complex128 ``(nb, m, k) @ (nb, k, n)`` or ``(m, k) @ (k, n)`` into a contiguous ``out`` call cuBLAS's
    strided-batched GEMM directly on the current stream (also inside a CUDA graph capture, which
    cupy's matmul refuses); other dtypes and layouts go through ``cupy.matmul``. ``compute``:
    "tf32" / "bf16" / "f16" for float32 on tensor cores (JAX's default precision on a GPU), ""
    for full float32. ``types``: (operand dtype, output dtype) of a 16-bit float GEMM (bfloat16 /
    float16 operands, a 16-bit or float32 product, float32 accumulation), whose buffers may hold
    the bits (cupy has no bfloat16)."""
    cp = _cupy()
    if getattr(_capturing, "active", False) and a.ndim == b.ndim and a.ndim in (2, 3):
        # inside a graph capture only the direct call works: make odd layouts contiguous (a copy
        # kernel, which captures)
        if _gemm_operand(a) is None:
            a = cp.ascontiguousarray(a)
        if _gemm_operand(b) is None:
            b = cp.ascontiguousarray(b)
    plan = _gemm_plan(a, b, out, compute, types)
    if plan is _NO_GEMM:
        if types is not None:
            # an odd layout: contiguous copies (copy kernels), then the Ex call
            a, b = cp.ascontiguousarray(a), cp.ascontiguousarray(b)
            plan = _gemm_plan(a, b, out, compute, types)
            if plan is _NO_GEMM:
                raise NotImplementedError(f"CUDA backend: a GEMM of {types[0]} {a.shape} @ {b.shape}")
        else:
            return cp.matmul(a, b, out=out)
    lib, ex = plan[0], plan[-1]
    dev = cp.cuda.runtime.getDevice() if device_count() > 1 else 0
    h = _cublas_handles.get(dev)
    if h is None:  # (cupy refuses to hand it out during a capture: fetched before)
        h = _cublas_handles[dev] = ctypes.c_void_p(cp.cuda.device.get_cublas_handle())
    # cuBLAS called through ctypes: cupy's wrappers refuse a capturing stream
    lib.cublasSetStream_v2(h, ctypes.c_void_p(cp.cuda.get_current_stream().ptr))
    if not isinstance(ex, tuple) and cublaslt.enabled():
        capturing = getattr(_capturing, "active", False)
        call = functools.partial(_cublas_call, plan, h, a, b, out)
        if cublaslt.matmul(cp, plan, a, b, out, dev, capturing, call):
            return out
    return _cublas_call(plan, h, a, b, out)


def _cublas_call(plan: tuple, h: Any, a: Any, b: Any, out: Any) -> Any:
    """cuBLAS's (strided-batched) GEMM of ``plan`` on these buffers, on the stream set on ``h``."""
    _, fn, tb, ta, n, m, k, one, ldb, sb, lda, sa, zero, ldc, sc, nb, _, ex = plan
    if ex is None:
        st = fn(
            h, tb, ta, n, m, k, one, ctypes.c_void_p(b.data.ptr), ldb, sb, ctypes.c_void_p(a.data.ptr), lda, sa,
            zero, ctypes.c_void_p(out.data.ptr), ldc, sc, nb,
        )  # fmt: skip
    else:
        if isinstance(ex, tuple):  # 16-bit operands: (compute, operand type, output type)
            ex, ti, to = ex
        else:
            ti = to = _CUDA_R_32F
        st = fn(
            h, tb, ta, n, m, k, one, ctypes.c_void_p(b.data.ptr), ti, ldb, sb, ctypes.c_void_p(a.data.ptr), ti,
            lda, sa, zero, ctypes.c_void_p(out.data.ptr), to, ldc, sc, nb, ex, -1,
        )  # fmt: skip
    if st != 0:
        raise RuntimeError(f"cuBLAS {fn.__name__} failed with status {st} ({a.shape} @ {b.shape})")
    return out


# ---------------------------------------------------------------------------------------------
# FFTs


def fft(x: Any, out: Any, fft_type: int, lengths: tuple) -> Any:
    """``out[...] = `` ``lax.fft`` of ``x`` over its trailing ``len(lengths)`` axes on cuFFT
    (``fft_type``: ``lax.FftType``'s value; ``lengths[-1]`` is IRFFT's output length), on the
    current stream, in the operand's precision. A one-axis transform runs on a plan of fjax's own
    written straight into ``out``, and may be captured in a CUDA graph (``fft_exec``); one over
    several axes goes through ``cupy.fft.fftn/ifftn/rfftn/irfftn`` (cupy caches its plans) and a
    copy into ``out``, never inside a capture. ``out`` has the result's shape and dtype."""
    cp = _cupy()
    if len(lengths) == 1 and fft_exec.direct(cp, module, x, out, fft_type, int(lengths[0])):
        return out
    if getattr(_capturing, "active", False):
        what = f"{FFT_FUNCS[fft_type]} over {len(lengths)} axes"
        raise RuntimeError(f"fjax: cupy.fft ({what}) is not called inside a CUDA graph capture")
    k = len(lengths)
    axes = tuple(range(x.ndim - k, x.ndim))
    fn = getattr(cp.fft, FFT_FUNCS[fft_type])
    y = fn(x, s=tuple(lengths), axes=axes) if fft_type == 3 else fn(x, axes=axes)
    if y.shape != out.shape:
        raise RuntimeError(f"fjax: cupy.fft.{FFT_FUNCS[fft_type]} gave shape {y.shape}, the plan expects {out.shape}")
    out[...] = y  # (a copy kernel; cupy.fft has no out=)
    return out


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


def kernel(mod: Any, kernel_name: str) -> Any:
    """The launcher of ``kernel_name`` in ``mod``, fetched once by a plan's executor:
    ``fn(grid, block, args, shared_mem=0)`` launches it on the current stream (``launch``)."""
    return mod.get_function(kernel_name)


def launch(mod: Any, kernel_name: str, grid: tuple, block: tuple, args: tuple, shared_mem: int = 0) -> None:
    """Launch ``kernel_name`` of ``mod`` on the current stream; ``args`` are device buffers and
    numpy scalars already of the kernel's parameter types (RawKernels convert nothing)."""
    fn = mod.get_function(kernel_name)
    fn(tuple(grid), tuple(block), tuple(args), shared_mem=int(shared_mem))


# ---------------------------------------------------------------------------------------------
# CUDA graphs: a whole plan captured once, replayed with one launch

# a plan whose working set (inputs, intermediates, outputs) exceeds this runs launch by launch: a
# graph keeps its buffers for good, and a program that large is bound by bandwidth, not launches
GRAPH_MAX_BYTES = 256 << 20
# outputs of this many bytes or more leave a graph through copy_in_source's kernel, every thread one
# 16-byte word (cudaMemcpy took 3.8 us for the MLP step's 2.7 MB on an H200: 1.4 TB/s)
COPY_OUT_KERNEL_MIN = 256 << 10
_graph_warned: set = set()


def _copy_blocks(nb: int) -> int:
    """Blocks of 256 threads one buffer of ``nb`` bytes gets in ``copy_in_source``'s kernel: one
    16-byte word per thread."""
    return max(1, -(-(nb // 16) // 256))


def copy_blocks(nbytes: list) -> int:
    """The grid (blocks along x) ``copy_in_source(nbytes)``'s kernel must be launched with."""
    return sum(_copy_blocks(int(nb)) for nb in nbytes)


def copy_in_source(nbytes: list) -> tuple[str, str]:
    """``(kernel name, CUDA source)`` of one kernel copying ``len(nbytes)`` buffers at once:
    arguments ``src0..srcN-1, dst0..dstN-1``, buffer ``i`` being ``nbytes[i]`` bytes. Each buffer
    has its own range of blocks, one 16-byte word per thread where both pointers are 16-byte
    aligned (bytes otherwise), so every thread makes one copy and all run at once (a loop over the
    buffers in each thread waited for one buffer's copy before the next: 4.2 us for the MLP step's
    3.5 MB of inputs on an H200). Launch it with ``copy_blocks(nbytes)`` blocks of 256 threads. A
    graph replay copies its inputs in with it: one launch instead of one copy per input."""
    name = "fj_copy_in_" + hashlib.sha1(repr(("blocks", list(nbytes))).encode()).hexdigest()[:12]
    n = len(nbytes)
    params = [f"const unsigned char* __restrict__ s{i}" for i in range(n)]
    params += [f"unsigned char* __restrict__ d{i}" for i in range(n)]
    lines = [
        "#ifdef FJAX_EMULATE",  # (the CPU emulator's header: tests run this kernel there)
        '#include "cuda_emu.h"',
        "#endif",
        f"// copy of {n} buffers ({', '.join(map(str, nbytes))} bytes), each over its own blocks",
        f'extern "C" __global__ void __launch_bounds__(256) {name}({", ".join(params)}) {{',
        "  const long long b = blockIdx.x;",
    ]
    start = 0
    for i, nb in enumerate(nbytes):
        nb = int(nb)
        nblk = _copy_blocks(nb)
        words = nb // 16
        lines += [
            f"  {'if' if i == 0 else 'else if'} (b < {start + nblk}LL) {{",
            f"    const long long j = (b - {start}LL) * 256 + threadIdx.x;",
            f"    if ((((unsigned long long)s{i}) | ((unsigned long long)d{i})) % 16ULL == 0ULL) {{",
            f"      if (j < {words}LL) ((int4*)d{i})[j] = ((const int4*)s{i})[j];",
            f"      if (j < {nb - words * 16}LL) d{i}[{words * 16}LL + j] = s{i}[{words * 16}LL + j];",
            "    } else {",
            f"      for (long long q = j; q < {nb}LL; q += {nblk * 256}LL) d{i}[q] = s{i}[q];",
            "    }",
            "  }",
        ]
        start += nblk
    lines.append("}")
    return name, "\n".join(lines) + "\n"


class Graph:
    """One plan captured as a CUDA graph over buffers of its own (a private memory pool, kept as
    long as the graph): ``replay(args)`` copies the arguments into the graph's input buffers (one
    multi-buffer copy kernel, ``copy_in_source``), launches the graph, and copies its outputs (packed
    into one buffer by the graph) into one fresh buffer whose views it returns, all on the current
    stream: four operations per call whatever the number of inputs and outputs."""

    def __init__(self, graph: Any, ins: list, outs: list, pool: Any, pack: Any, offsets: list):
        # outs: the graph's outputs, all in ``pack`` (one buffer) at ``offsets``: written there by
        # the plan's own kernels, or copied there at the graph's end for the outputs the plan does
        # not allocate itself (inputs, views, loop buffers); a replay copies ``pack`` out with one
        # copy and returns views of it
        self.graph, self.ins, self.pool, self.pack = graph, ins, pool, pack
        self.specs = [(tuple(o.shape), o.dtype, off, o.nbytes) for o, off in zip(outs, offsets)]
        self.check = [(tuple(s.shape), s.dtype) for s in ins]
        self.nz = [i for i, s in enumerate(ins) if s.nbytes]
        self.copy_in: Any = None  # (kernel, grid, block) copying the inputs with one launch
        self.copy_out: Any = None  # (kernel, grid, block) copying the outputs out (large ones)
        self.keep: list = []  # what the captured work uses and must outlive it (cuFFT plans)
        self.lock = threading.Lock()

    def replay(self, args: Any) -> list | None:
        """The outputs, or None when the call cannot replay (an argument of another shape or
        layout than at capture, or a stream other than the default one): run it launch by launch."""
        cp = _cupy()
        stream = cp.cuda.get_current_stream()
        if stream.ptr != 0 or len(args) != len(self.check):
            return None
        for a, (shape, dt) in zip(args, self.check):
            if a.shape != shape or a.dtype != dt or not a.flags.c_contiguous:
                return None
        ins = self.ins
        with self.lock:
            if self.copy_in is not None:
                fn, grid, block = self.copy_in
                fn(grid, block, tuple([args[i] for i in self.nz] + [ins[i] for i in self.nz]))
            else:
                for i in self.nz:
                    ins[i].data.copy_from_device_async(args[i].data, ins[i].nbytes, stream)
            self.graph.launch(stream)
            n = self.pack.nbytes
            buf = cp.empty(n, np.uint8)
            if self.copy_out is not None:
                fn, grid, block = self.copy_out
                fn(grid, block, (self.pack, buf))
            elif n:
                buf.data.copy_from_device_async(self.pack.data, n, stream)
        nd, base = cp.ndarray, buf.data
        return [nd(shape, dt, memptr=base + off) if nb else cp.empty(shape, dt) for shape, dt, off, nb in self.specs]

    def use_copy_kernel(self) -> None:
        """Copy the inputs in with one kernel (compiled now) when there are two or more, and the
        outputs out with one when they are large (``COPY_OUT_KERNEL_MIN``); on any failure keep
        cupy's copies (said once)."""
        try:
            if len(self.nz) >= 2:
                sizes = [self.ins[i].nbytes for i in self.nz]
                name, src = copy_in_source(sizes)
                self.copy_in = (module(src).get_function(name), (copy_blocks(sizes), 1, 1), (256, 1, 1))
            n = self.pack.nbytes
            if n >= COPY_OUT_KERNEL_MIN:
                name, src = copy_in_source([n])
                self.copy_out = (module(src).get_function(name), (copy_blocks([n]), 1, 1), (256, 1, 1))
        except Exception as e:  # noqa: BLE001 - an optimization: never fail the call for it
            _warn_once(
                f"fjax: the CUDA graph input copy kernel failed to compile ({type(e).__name__}: {e}); "
                "copying each input on its own"
            )


def _warn_once(message: str) -> None:
    """Warn ``message`` once per process (a graph that cannot be used is said once, not per call)."""
    if message not in _graph_warned:
        _graph_warned.add(message)
        import warnings  # noqa: PLC0415

        warnings.warn(message, stacklevel=4)


def capture_graph(run: Any, args: Any) -> Graph | None:
    """``run(buffers) -> buffers`` (a plan's executor) captured as a CUDA graph on a side stream,
    after one warm-up run there that fills the graph's private memory pool (so the capture
    allocates nothing new). None when the plan cannot be captured or is too large; the caller then
    runs it launch by launch. A failure is said once per reason (never a wrong answer)."""
    try:
        cp = _cupy()
    except RuntimeError:  # no cupy: another runtime (the emulator) stands in for this module's buffers
        return None
    if cp.cuda.get_current_stream().ptr != 0:
        return None
    if any(not a.flags.c_contiguous for a in args):
        return None
    pool = cp.cuda.MemoryPool()
    side = cp.cuda.Stream(non_blocking=True)
    cp.cuda.get_current_stream().synchronize()  # the arguments are written on the default stream
    try:
        with cp.cuda.using_allocator(pool.malloc), side:
            ins = [cp.empty(a.shape, a.dtype) for a in args]
            for a, s in zip(args, ins):
                if s.nbytes:
                    s.data.copy_from_device_async(a.data, s.nbytes, side)
            outs = run(ins)  # warm-up: the pool now holds every buffer the plan allocates
            layout = [(o.shape, o.dtype, o.nbytes) for o in outs]
            del outs
            side.synchronize()
            if pool.total_bytes() > GRAPH_MAX_BYTES:
                return None
            # the outputs packed into one buffer (each 256-byte aligned), which a replay copies out
            # with one copy; outputs the plan allocates itself are written there directly
            offsets, total = [], 0
            for _, _, nb in layout:
                offsets.append(total)
                total += -(-nb // 256) * 256
            pack = cp.empty(total, np.uint8)
            direct = getattr(run, "direct_outputs", lambda: [])()
            into = {
                k: cp.ndarray(layout[k][0], layout[k][1], memptr=pack.data + offsets[k]) for k in direct if layout[k][2]
            }
            mode = getattr(cp.cuda.runtime, "streamCaptureModeRelaxed", None)
            side.begin_capture(mode) if mode is not None else side.begin_capture()
            _capturing.active = True
            plans = fft_exec.captured()
            try:
                with plans as kept:  # cuFFT plans the graph uses: it keeps their work areas alive
                    outs = run(ins, into) if into else run(ins)
                for k, (o, off) in enumerate(zip(outs, offsets)):
                    if not o.nbytes or (k in into and o.data.ptr == into[k].data.ptr):
                        continue
                    # (cupy's ascontiguousarray makes a 0-d array 1-d: keep the shape)
                    if not o.flags.c_contiguous:
                        o = cp.ascontiguousarray(o).reshape(o.shape)
                    pack[off:].data.copy_from_device_async(o.data, o.nbytes, side)
            finally:
                _capturing.active = False
                graph = side.end_capture()
        side.synchronize()
    except Exception as e:  # noqa: BLE001 - capture is an optimization: never fail the call for it
        import traceback  # noqa: PLC0415

        tb = traceback.extract_tb(e.__traceback__)
        where = f" at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}" if tb else ""
        _warn_once(
            f"fjax: a CUDA graph could not be captured ({type(e).__name__}: {e}{where}); running launch by launch"
        )
        return None
    g = Graph(graph, ins, outs, pool, pack, offsets)
    g.keep = kept
    g.use_copy_kernel()
    return g


def clear_cache() -> None:
    """Forget the compiled modules held in memory."""
    with _lock:
        _modules.clear()
