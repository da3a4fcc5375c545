"""A CPU stand-in for the part of cupy that fjax's CUDA runtime (``runtime.py``) calls, so the
runtime's own code (buffers, modules, launches, the cuBLAS calls through ctypes, CUDA-graph capture
and replay) runs and is tested on machines without a GPU. A developer and test tool: fjax never
imports it by itself.

``install(compute=True)`` puts it in ``sys.modules["cupy"]`` (``uninstall()`` undoes that):

- device buffers are numpy arrays (``StandinArray``, whose ``.data`` is a device-pointer-like
  ``MemoryPointer``), ``cupy.ndarray(shape, dtype, memptr=...)`` views memory at a pointer;
- ``RawModule`` compiles the CUDA source with the CUDA emulator (``emulate.py``: g++ and
  ``cuda_emu.h``), and a launch runs the kernel there, with the argument values packed at the
  call, as CUDA does; where a libnvrtc is found it first compiles the source with NVRTC too, the
  compiler cupy uses on a GPU, and raises its errors (``nvrtc.py``);
- ``cublas{S,D,C,Z}gemmStridedBatched`` (reached through the ctypes library the runtime loads)
  compute column-major GEMMs with numpy over the raw pointers, on the stream set on the handle;
- ``cupy.fft.fftn/ifftn/rfftn/irfftn`` compute with numpy's pocketfft (``fft_ops.reference``),
  single precision kept as cupy (cuFFT) keeps it;
- a stream's ``begin_capture``/``end_capture`` records the launches, copies and GEMMs issued on it
  instead of running them; the resulting graph replays them with the pointers and scalars of the
  capture baked in (so a replay that should have re-pointed an input reads the captured buffer,
  exactly the mistake a real graph would make).

``compute=False`` makes kernels, copies and GEMMs no-ops and counts them (``calls``): what remains
is fjax's host-side Python, which ``bench/gpu_host_overhead.py`` times.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
import types
from collections import Counter
from typing import Any, Callable

import ml_dtypes
import numpy as np

from fjax.backends.cuda.emulate import round_operand
from fjax.backends.cuda.fft_ops import FFT_FUNCS, reference

__all__ = ["MemoryPointer", "StandinArray", "calls", "install", "launches", "uninstall"]

calls: Counter = Counter()
launches: Counter = Counter()  # kernel name -> launches
_state = {"compute": True}
_local = threading.local()
_launch_lock = threading.Lock()


def _compute() -> bool:
    return _state["compute"]


def _nvrtc_check() -> bool:
    """Whether sources are also compiled with NVRTC (where libnvrtc is found; ``FJAX_STANDIN_NVRTC=0``:
    never)."""
    if os.environ.get("FJAX_STANDIN_NVRTC", "1") == "0":
        return False
    from fjax.backends.cuda import nvrtc  # noqa: PLC0415

    return nvrtc.available()


# ---------------------------------------------------------------------------------------------
# buffers


class MemoryPointer:
    """A device pointer (``ptr``) ``off`` bytes into the memory of ``owner`` (kept alive while the
    pointer is)."""

    __slots__ = ("off", "owner")

    def __init__(self, owner: Any, off: int = 0):
        self.owner, self.off = owner, int(off)

    @property
    def ptr(self) -> int:
        if not _state["compute"]:
            return 0  # (nothing reads memory then: no-op kernels, copies and GEMMs)
        return self.owner.__array_interface__["data"][0] + self.off

    def __add__(self, off: int) -> MemoryPointer:
        return MemoryPointer(self.owner, self.off + int(off))

    def copy_from_device_async(self, src: MemoryPointer, nbytes: int, stream: Any = None) -> None:
        calls["copy"] += 1
        if not _state["compute"]:
            return
        dst, s, n = self.ptr, src.ptr, int(nbytes)
        _issue(stream, lambda: ctypes.memmove(dst, s, n) if n else None, "copy")


class StandinArray(np.ndarray):
    """A "device" buffer: numpy memory; ``.data`` is its ``MemoryPointer``."""

    @property
    def data(self) -> MemoryPointer:  # type: ignore[override]
        return MemoryPointer(self)

    @property
    def __cuda_array_interface__(self) -> dict:
        ai = self.__array_interface__
        keys = ("shape", "typestr", "data", "strides")
        return {**{k: ai[k] for k in keys}, "version": 3}

    def get(self) -> np.ndarray:
        return np.array(np.asarray(self))

    # the metadata operations a caller makes on a device buffer, counted: on cupy each is a call
    # into its ndarray machinery (microseconds of host time), unlike numpy's
    def reshape(self, *a: Any, **k: Any) -> Any:
        calls["reshape"] += 1
        return super().reshape(*a, **k)

    def transpose(self, *a: Any) -> Any:
        calls["transpose"] += 1
        return super().transpose(*a)

    def __getitem__(self, key: Any) -> Any:
        calls["index"] += 1
        return super().__getitem__(key)


def _cupy_dtype(dtype: Any) -> np.dtype:
    # cupy (before 14) holds numpy's own dtypes only: bfloat16 and the other ml_dtypes are refused
    d = np.dtype(dtype)
    if d.isbuiltin != 1:
        raise ValueError(f"Unsupported dtype {d.name}")
    return d


def _fresh(shape: Any, dtype: Any) -> StandinArray:
    out = np.empty(shape, _cupy_dtype(dtype))
    if _compute() and out.size:
        out.reshape(-1).view(np.uint8).fill(0xA5)  # unwritten outputs show up in comparisons
    return out.view(StandinArray)


def empty(shape: Any, dtype: Any = np.float64) -> StandinArray:
    calls["empty"] += 1
    return _pooled(_fresh(shape, dtype))


def _pooled(arr: StandinArray) -> StandinArray:
    """Inside ``using_allocator(pool.malloc)`` the pool keeps the memory for good, as a private
    cupy pool keeps freed blocks from everyone but its own allocator (a CUDA graph's buffers)."""
    pool = getattr(_local, "pool", None)
    if pool is not None:
        pool.keep.append(arr)
        pool.bytes += arr.nbytes
    return arr


def ndarray(shape: Any, dtype: Any = np.float64, memptr: MemoryPointer | None = None, strides: Any = None) -> Any:
    """``cupy.ndarray(shape, dtype, memptr)``: a C-contiguous array over the memory at ``memptr``."""
    calls["ndarray"] += 1
    if memptr is None or not _state["compute"]:
        return _fresh(shape, dtype)
    dt = np.dtype(dtype)
    shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    raw = (ctypes.c_uint8 * max(n, 1)).from_address(memptr.ptr)
    arr = np.frombuffer(raw, np.uint8, count=n).view(dt).reshape(shape).view(StandinArray)
    arr._owner = memptr.owner  # type: ignore[attr-defined]  # keep the memory alive
    return arr


def asarray(x: Any) -> StandinArray:
    calls["upload"] += 1
    a = np.array(x, order="C")
    _cupy_dtype(a.dtype)
    return a.view(StandinArray)


def asnumpy(x: Any) -> np.ndarray:
    calls["download"] += 1
    return np.array(np.asarray(x))


def ascontiguousarray(x: Any) -> StandinArray:
    calls["contiguous"] += 1
    out = _pooled(_fresh(np.shape(x), np.asarray(x).dtype))
    _issue(None, lambda: np.copyto(np.asarray(out), np.asarray(x)), "copy")  # (a kernel: captured)
    return out


def matmul(a: Any, b: Any, out: Any = None) -> Any:
    calls["cupy.matmul"] += 1
    if get_current_stream().capture is not None:  # (cupy's cuBLAS wrappers refuse a capturing stream)
        raise RuntimeError("cupy_standin: cupy.matmul on a capturing stream")
    if out is None:
        out = empty(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1]), a.dtype)
    _issue(None, lambda: np.matmul(np.asarray(a), np.asarray(b), out=np.asarray(out)) if _compute() else None)
    return out


# ---------------------------------------------------------------------------------------------
# cupy.fft (cuFFT): numpy's pocketfft in the operand's precision


def _fft_shape(shape: tuple, name: str, s: Any, axes: tuple) -> tuple:
    out = list(shape)
    if s is not None:
        for ax, n in zip(axes, s):
            out[ax] = int(n)
    if name == "rfftn":
        out[axes[-1]] = out[axes[-1]] // 2 + 1
    return tuple(out)


def _fft_function(name: str) -> Callable:
    kind = FFT_FUNCS.index(name)

    def fn(a: Any, s: Any = None, axes: Any = None, norm: Any = None) -> StandinArray:
        calls["fft"] += 1
        if norm not in (None, "backward") or axes is None:
            raise NotImplementedError(f"cupy_standin: cupy.fft.{name} with norm={norm!r}, axes={axes!r}")
        axes = tuple(int(ax) % a.ndim for ax in axes)
        if list(axes) != list(range(a.ndim - len(axes), a.ndim)) or (s is not None) != (kind == 3):
            raise NotImplementedError(f"cupy_standin: cupy.fft.{name} over axes {axes} (s={s})")
        single = np.dtype(a.dtype) in (np.float32, np.complex64)
        dt = (np.float32 if single else np.float64) if kind == 3 else (np.complex64 if single else np.complex128)
        lengths = tuple(s) if s is not None else tuple(a.shape[ax] for ax in axes)
        out = empty(_fft_shape(tuple(a.shape), name, s, axes), dt)

        def run() -> None:
            np.asarray(out)[...] = reference(np.asarray(a), kind, lengths)

        _issue(None, run, "fft")
        return out

    fn.__name__ = name
    return fn


fft = types.SimpleNamespace(**{n: _fft_function(n) for n in ("fftn", "ifftn", "rfftn", "irfftn")})


class Plan1d:
    """``cupy.cuda.cufft.Plan1d(nx, fft_type, batch)``: ``fft(a, out, direction)`` runs ``batch``
    unnormalized transforms of length ``nx`` over contiguous lines, as cuFFT does, on the current
    stream. A C2R transform scribbles NaN over its input afterwards (cuFFT's C2R may overwrite its
    input), and a plan made on a capturing stream raises (cupy#7559: it may crash there)."""

    _KINDS = {0x29: "c2c", 0x69: "c2c", 0x2A: "r2c", 0x6A: "r2c", 0x2C: "c2r", 0x6C: "c2r"}

    def __init__(self, nx: int, fft_type: int, batch: int):
        calls["fft plan"] += 1
        if get_current_stream().capture is not None:
            raise RuntimeError("cupy_standin: a cuFFT plan created on a capturing stream")
        self.nx, self.fft_type, self.batch = int(nx), int(fft_type), int(batch)
        self.kind = self._KINDS[self.fft_type]
        self.single = self.fft_type in (0x29, 0x2A, 0x2C)

    def fft(self, a: Any, out: Any, direction: int) -> None:
        calls["fft"] += 1
        n, kind = self.nx, self.kind
        lin = {"c2c": n, "r2c": n, "c2r": n // 2 + 1}[kind]
        lout = {"c2c": n, "r2c": n // 2 + 1, "c2r": n}[kind]
        if a.size != self.batch * lin or out.size != self.batch * lout:
            sizes = f"{a.size}, {out.size}"
            raise ValueError(f"cupy_standin: cuFFT plan ({kind}, n={n}, batch={self.batch}) on sizes {sizes}")

        def run() -> None:
            x = np.asarray(a).reshape(self.batch, lin)
            if kind == "c2c":
                y = np.fft.fft(x, axis=-1) if direction == -1 else np.fft.ifft(x, axis=-1) * n
            elif kind == "r2c":
                y = np.fft.rfft(x, axis=-1)
            else:
                y = np.fft.irfft(x, n, axis=-1) * n
                x[...] = np.nan  # (the input is garbage after a C2R)
            np.asarray(out).reshape(self.batch, lout)[...] = y

        _issue(None, run, "fft")


cufft = types.SimpleNamespace(Plan1d=Plan1d, CUFFT_FORWARD=-1, CUFFT_INVERSE=1)


# ---------------------------------------------------------------------------------------------
# streams and graphs: work issued on a capturing stream is recorded, not run


class Stream:
    _next_ptr = [0x1000]

    def __init__(self, non_blocking: bool = False, ptr: int | None = None):
        if ptr is None:
            ptr = Stream._next_ptr[0]
            Stream._next_ptr[0] += 0x10
        self.ptr = ptr
        self.capture: list | None = None
        self.kinds: list = []
        _streams_by_ptr[ptr] = self

    def synchronize(self) -> None:
        calls["sync"] += 1

    def __enter__(self) -> Stream:
        _stack().append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _stack().pop()

    def begin_capture(self, mode: Any = None) -> None:
        self.capture, self.kinds = [], []

    def end_capture(self) -> Graph:
        ops, kinds, self.capture = self.capture or [], self.kinds, None
        return Graph(ops, kinds)


class Graph:
    def __init__(self, ops: list, kinds: list | None = None):
        self.ops = ops
        self.kinds = kinds or []  # what each recorded operation is: "copy", "launch", "gemm", ...

    def launch(self, stream: Any = None) -> None:
        calls["graph launch"] += 1
        if not _state["compute"]:
            return
        for op in self.ops:
            _issue(stream, op)


_streams_by_ptr: dict = {}
_default = Stream(ptr=0)


def _stack() -> list:
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = [_default]
    return s


def get_current_stream() -> Stream:
    return _stack()[-1]


def _issue(stream: Any, op: Callable[[], Any], kind: str = "op") -> None:
    """Run ``op`` now, or record it when ``stream`` (default: the current one) is capturing."""
    s = stream if stream is not None else get_current_stream()
    if s.capture is not None:
        s.capture.append(op)
        s.kinds.append(kind)
    elif _compute():
        op()


class MemoryPool:
    def __init__(self) -> None:
        self.bytes = 0
        self.keep: list = []

    def malloc(self, n: int) -> Any:
        raise NotImplementedError("cupy_standin: allocate with cupy.empty inside using_allocator(pool.malloc)")

    def total_bytes(self) -> int:
        return self.bytes

    def used_bytes(self) -> int:
        return self.bytes


_pool = MemoryPool()


def get_default_memory_pool() -> MemoryPool:
    return _pool


@contextlib.contextmanager
def _using_allocator(fn: Any = None) -> Any:
    prev = getattr(_local, "pool", None)
    _local.pool = getattr(fn, "__self__", None)
    try:
        yield
    finally:
        _local.pool = prev


class Device:
    def __init__(self, i: int = 0):
        self.id = int(i)

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


# ---------------------------------------------------------------------------------------------
# kernels: compiled and run by the CUDA emulator


class _Function:
    def __init__(self, module: Any, name: str):
        self.module, self.name = module, name
        self.types = module.kernels[name] if module is not None else None
        self.fn = module.function(name) if module is not None else None

    def __call__(self, grid: tuple, block: tuple, args: tuple, shared_mem: int = 0) -> None:
        calls["launch"] += 1
        launches[self.name] += 1
        if self.fn is None:
            return
        from fjax.backends.cuda.emulate import dims, pack_args  # noqa: PLC0415

        # (cupy passes any array's data pointer, contiguous or not)
        keep, ptrs = pack_args(self.name, self.types, tuple(args), contiguous=False)
        g, b = dims(grid), dims(block)
        fn, name = self.fn, self.name

        def run() -> None:
            keep  # noqa: B018 - the packed argument values live as long as the launch (or graph)
            # one launch at a time, as on one stream (the emulator's __shared__ arrays are statics)
            with _launch_lock:
                if min(g) and fn(g, b, ptrs):
                    raise RuntimeError(f"CUDA emulator: {name}<<<{tuple(grid)}, {tuple(block)}>>> failed")

        _issue(None, run, "launch")


class RawModule:
    def __init__(self, code: str = "", options: tuple = ()):
        self.code, self.options = code, options
        self._mod: Any = None

    def compile(self) -> None:
        if self._mod is None and _nvrtc_check():  # what cupy would compile on a GPU: NVRTC's verdict
            from fjax.backends.cuda import nvrtc  # noqa: PLC0415

            nvrtc.check(self.code, tuple(self.options))
        if _compute() and self._mod is None:
            from fjax.backends.cuda import emulate  # noqa: PLC0415

            self._mod = emulate.compile_source(self.code)

    def get_function(self, name: str) -> _Function:
        calls["get_function"] += 1
        self.compile()
        return _Function(self._mod, name)


# ---------------------------------------------------------------------------------------------
# cuBLAS (what the runtime calls through ctypes)


def _colmajor(ptr: int, rows: int, cols: int, ld: int, dtype: np.dtype) -> np.ndarray:
    """The column-major ``rows x cols`` matrix at ``ptr`` with leading dimension ``ld`` (a view)."""
    n = (cols - 1) * ld + rows if rows and cols else 0
    base = np.frombuffer((ctypes.c_uint8 * max(1, n * dtype.itemsize)).from_address(ptr), dtype, count=n)
    return np.lib.stride_tricks.as_strided(base, (rows, cols), (dtype.itemsize, ld * dtype.itemsize))


def _val(x: Any) -> Any:
    return x.value if hasattr(x, "value") else x


def _scalar(ref: Any, dt: np.dtype) -> Any:
    """The alpha/beta of a GEMM of ``dt`` that a ``ctypes.byref`` points at, read as cuBLAS reads
    it: the bytes of one ``dt`` value (cuComplex: real, imaginary); None when the object is not
    that size (a ``float`` passed for a cuComplex would leave cuBLAS reading garbage)."""
    obj = ref._obj
    if ctypes.sizeof(obj) != dt.itemsize:
        return None
    return np.frombuffer(ctypes.string_at(ctypes.addressof(obj), dt.itemsize), dt)[0].item()


class _Cublas:
    def __init__(self) -> None:
        self.stream: dict = {}

    def cublasSetStream_v2(self, handle: Any, stream: Any) -> int:
        self.stream[_val(handle)] = _val(stream) or 0
        return 0

    def _gemm(
        self,
        dt: Any,
        handle: Any,
        ta: int,
        tb: int,
        m: int,
        n: int,
        k: int,
        alpha: Any,
        *rest: Any,
        compute: str = "",
        io: tuple | None = None,
    ) -> int:
        calls["gemm"] += 1
        calls[f"gemm {compute or np.dtype(dt).name}"] += 1
        if not _state["compute"]:
            return 0
        a, lda, sa, b, ldb, sb, beta, c, ldc, sc, nb = rest
        dt = np.dtype(dt)
        al, be = _scalar(alpha, dt), _scalar(beta, dt)
        if al is None or be is None:
            return 7  # CUBLAS_STATUS_INVALID_VALUE
        a, b, c = _val(a), _val(b), _val(c)
        lda, ldb, ldc, sa, sb, sc = (int(_val(v)) for v in (lda, ldb, ldc, sa, sb, sc))
        di, do = io or (dt, dt)  # operand and output dtypes (16-bit floats: read as their bits)
        it, ot = di.itemsize, do.itemsize

        def run() -> None:
            for i in range(int(nb)):
                A = _colmajor(a + i * sa * it, k, m, lda, di).T if ta else _colmajor(a + i * sa * it, m, k, lda, di)
                B = _colmajor(b + i * sb * it, n, k, ldb, di).T if tb else _colmajor(b + i * sb * it, k, n, ldb, di)
                C = _colmajor(c + i * sc * ot, m, n, ldc, do)
                if io is not None:
                    A, B = A.astype(np.float32), B.astype(np.float32)
                r = al * (round_operand(A, compute) @ round_operand(B, compute))
                C[...] = (r if be == 0 else r + be * C).astype(do)

        _issue(_streams_by_ptr.get(self.stream.get(_val(handle), 0), _default), run, "gemm")
        return 0

    def cublasSgemmStridedBatched(self, *args: Any) -> int:
        return self._gemm(np.float32, *args)

    def cublasDgemmStridedBatched(self, *args: Any) -> int:
        return self._gemm(np.float64, *args)

    def cublasCgemmStridedBatched(self, *args: Any) -> int:
        return self._gemm(np.complex64, *args)

    def cublasZgemmStridedBatched(self, *args: Any) -> int:
        return self._gemm(np.complex128, *args)

    def cublasGemmStridedBatchedEx(self, *args: Any) -> int:
        (h, ta, tb, m, n, k, alpha, a, at, lda, sa, b, bt, ldb, sb, beta, c, ct, ldc, sc, nb, compute, algo) = args
        # cudaDataType_t: CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF
        types = {0: np.dtype(np.float32), 2: np.dtype(np.float16), 14: np.dtype(ml_dtypes.bfloat16)}
        ti, to = types.get(_val(at)), types.get(_val(ct))
        if ti is None or to is None or _val(at) != _val(bt) or _val(algo) != -1:  # CUBLAS_GEMM_DEFAULT
            return 7  # CUBLAS_STATUS_INVALID_VALUE
        mode = {77: "tf32", 75: "bf16", 74: "f16", 68: ""}.get(_val(compute))
        if mode is None or (ti.itemsize == 2 and _val(compute) != 68):  # 16-bit: CUBLAS_COMPUTE_32F
            return 7
        io = (ti, to) if ti.itemsize == 2 else None
        return self._gemm(
            np.float32, h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, nb, compute=mode, io=io
        )


# ---------------------------------------------------------------------------------------------


_saved: dict = {}


def install(compute: bool = True, n_devices: int = 1) -> None:
    """Make ``import cupy`` give this stand-in and reset fjax's runtime and device state to it.
    ``compute=False``: kernels, copies and GEMMs do nothing (host-overhead timing)."""
    _state["compute"] = bool(compute)
    cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(
            getDeviceCount=lambda: n_devices,
            getDeviceProperties=lambda i: {"name": b"CPU stand-in GPU (fjax cupy_standin)"},
            getDevice=lambda: 0,
            memGetInfo=lambda: (1 << 34, 1 << 34),
            streamCaptureModeRelaxed=2,
        ),
        Device=Device,
        Stream=Stream,
        MemoryPool=MemoryPool,
        get_current_stream=get_current_stream,
        using_allocator=_using_allocator,
        device=types.SimpleNamespace(get_cublas_handle=lambda: 1),
        cufft=cufft,
    )
    mod = sys.modules[__name__]
    mod.cuda = cuda  # type: ignore[attr-defined]
    mod.__version__ = "standin"  # type: ignore[attr-defined]
    if "cupy" not in _saved:
        _saved["cupy"] = sys.modules.get("cupy")
    sys.modules["cupy"] = mod  # type: ignore[assignment]
    _reset_fjax(_Cublas())


def uninstall() -> None:
    """Undo ``install``: ``import cupy`` is the real one (or missing) again."""
    prev = _saved.pop("cupy", None)
    if prev is None:
        sys.modules.pop("cupy", None)
    else:
        sys.modules["cupy"] = prev
    _reset_fjax(None)


def _reset_fjax(cublas: Any) -> None:
    from fjax import _devices, _placement  # noqa: PLC0415
    from fjax.backends import dispatch  # noqa: PLC0415
    from fjax.backends.cuda import runtime  # noqa: PLC0415

    dispatch.register_backend("cuda", "fjax.backends.cuda.backend:CudaBackend")  # forget compiled plans
    runtime._probe = None
    runtime._cp.clear()
    runtime._modules.clear()
    runtime._cublas_handles.clear()
    runtime._gemm_plans.clear()
    from fjax.backends.cuda import fft_exec  # noqa: PLC0415

    fft_exec._plans.clear()
    runtime._count.clear()
    runtime._cublas[:] = [cublas] if cublas is not None else []
    from fjax.backends.cuda import cublaslt, cublaslt_standin  # noqa: PLC0415

    cublaslt._lib[:] = [cublaslt_standin.CublasLt(sys.modules[__name__])] if cublas is not None else []
    cublaslt._handles.clear()
    cublaslt._workspaces.clear()
    cublaslt._said.clear()
    cublaslt.clear()
    _devices._reset_platforms()
    _placement._clear()
    _placement.rearm()
