"""The CUDA runtime API on the CPU: fjax's generated CUDA source compiled with g++ against
``cuda_emu.h`` and its kernels run block by block, thread by thread (each thread a fiber, so
``__syncthreads`` and warp shuffles behave as on a GPU), with numpy arrays as device buffers.

It implements exactly the API the cupy runtime (``fjax.backends.cuda.runtime``) does, so
``CudaBackend.compile(program, runtime=EmulatedRuntime())`` runs the same plan and the same kernel
source as on a GPU, and the results can be compared with the numba backend::

    rt.module(source, options) -> module      (compiled once per source hash, cached on disk)
    rt.launch(module, kernel_name, grid, block, args, shared_mem=0)
    rt.empty(shape, dtype) / rt.to_device(ndarray) / rt.to_host(buffer)
    rt.matmul(a, b, out)                      (batched GEMM: numpy's matmul stands in for cuBLAS)
    rt.fft(x, out, fft_type, lengths)         (lax.fft: numpy's pocketfft stands in for cuFFT)

Buffers are C-contiguous numpy arrays (views of them included: a view's data pointer is passed,
as cupy passes a view's). Fresh buffers are filled with a 0xA5 byte pattern, so an output a kernel
fails to write shows up in a comparison instead of reading as zeros.

``preload(source)`` compiles one translation unit (e.g. the sources of many programs
concatenated: definitions are guarded by name) and lets later ``module`` calls whose kernels it
all defines use it without compiling again (tests compile a corpus once).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from typing import Any

import numpy as np

from fjax.config import config

HEADER_DIR = os.path.dirname(os.path.abspath(__file__))
_KERNEL = re.compile(r'extern "C" __global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(([^)]*)\)')
# no strict aliasing: the vector path reads float buffers through float4 pointers, as CUDA does
CXXFLAGS = ("-O1", "-std=c++17", "-shared", "-fPIC", "-ffp-contract=off", "-fno-strict-aliasing", "-w")


def compiler() -> str | None:
    """The host C++ compiler (``$CXX`` or g++), or None."""
    return shutil.which(os.environ.get("CXX", "g++"))


def kernels_of(source: str) -> dict[str, list[str]]:
    """Kernel name -> its parameter C types (``__restrict__`` dropped), in source order."""
    out: dict = {}
    for m in _KERNEL.finditer(source):
        types = []
        for p in m.group(2).split(","):
            p = p.replace("__restrict__", " ").strip()
            if not p:
                continue
            types.append(re.sub(r"\s+", " ", p.rsplit(None, 1)[0] if not p.endswith("*") else p).strip())
        out.setdefault(m.group(1), types)
    return out


def _wrapper(source_path: str, kernels: dict) -> str:
    lines = [f'#include "{source_path}"', ""]
    for name, types in kernels.items():
        args = ", ".join(f"*({t}*)a[{i}]" for i, t in enumerate(types))
        lines.append(
            f'extern "C" int fjemu_{name}(const unsigned* g, const unsigned* b, void** a) {{\n'
            f"  (void)a;\n"
            f"  return fjemu::launch(dim3{{g[0], g[1], g[2]}}, dim3{{b[0], b[1], b[2]}},\n"
            f"                       [&]() {{ {name}({args}); }});\n}}"
        )
    return "\n".join(lines) + "\n"


def _cache_dir() -> str:
    d = os.path.join(os.path.expanduser(str(config.fjax_cache_dir)), "cuda_emu")
    try:
        os.makedirs(d, exist_ok=True)
        return d
    except OSError:
        return tempfile.mkdtemp(prefix="fjax_cuda_emu_")


class EmulatedModule:
    """A compiled translation unit: its kernels by name."""

    def __init__(self, lib: ctypes.CDLL, kernels: dict, path: str):
        self.lib, self.kernels, self.path = lib, kernels, path

    def function(self, name: str) -> Any:
        if name not in self.kernels:
            raise KeyError(f"CUDA emulator: no kernel {name!r} in this module")
        fn = getattr(self.lib, f"fjemu_{name}")
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_void_p)]
        return fn


def compile_source(source: str, extra: tuple = ()) -> EmulatedModule:
    """Compile ``source`` (a fjax CUDA translation unit) for the emulator, cached by hash."""
    cxx = compiler()
    if cxx is None:
        raise RuntimeError("the CUDA emulator needs a C++ compiler (g++ or $CXX)")
    kernels = kernels_of(source)
    with open(os.path.join(HEADER_DIR, "cuda_emu.h")) as f:
        header = f.read()  # part of the key: a changed header recompiles
    key = "\0".join([source, header, " ".join(CXXFLAGS + tuple(extra))])
    h = hashlib.sha256(key.encode()).hexdigest()[:24]
    d = _cache_dir()
    so = os.path.join(d, f"emu_{h}.so")
    if not os.path.exists(so):
        with tempfile.TemporaryDirectory(dir=d) as tmp:
            cu = os.path.join(tmp, "kernels.cu")
            with open(cu, "w") as f:
                f.write("#define FJAX_EMULATE 1\n" + source)
            wrap = os.path.join(tmp, "wrap.cpp")
            with open(wrap, "w") as f:
                f.write(_wrapper(cu, kernels))
            out = os.path.join(tmp, "lib.so")
            cmd = [cxx, *CXXFLAGS, *extra, "-I", HEADER_DIR, "-x", "c++", wrap, "-o", out]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"CUDA emulator: g++ failed ({' '.join(cmd)}):\n{r.stderr[-4000:]}")
            os.replace(out, so)
    return EmulatedModule(ctypes.CDLL(so), kernels, so)


_CTYPES = {
    np.dtype(np.bool_): ctypes.c_bool,
    np.dtype(np.int8): ctypes.c_int8,
    np.dtype(np.int16): ctypes.c_int16,
    np.dtype(np.int32): ctypes.c_int32,
    np.dtype(np.int64): ctypes.c_int64,
    np.dtype(np.uint8): ctypes.c_uint8,
    np.dtype(np.uint16): ctypes.c_uint16,
    np.dtype(np.uint32): ctypes.c_uint32,
    np.dtype(np.uint64): ctypes.c_uint64,
    np.dtype(np.float32): ctypes.c_float,
    np.dtype(np.float64): ctypes.c_double,
}


def pack_args(kernel_name: str, types: list, args: tuple, contiguous: bool = True) -> tuple[list, Any]:
    """``(values, pointers)``: the kernel arguments as ctypes values (a device buffer's data pointer,
    a scalar of the parameter's type: RawKernels convert nothing) and the ``void*`` array of their
    addresses a launch takes. ``values`` must live as long as the launch."""
    if len(types) != len(args):
        raise TypeError(f"CUDA emulator: {kernel_name} takes {len(types)} arguments, got {len(args)}")
    keep: list = []
    ptrs = (ctypes.c_void_p * max(1, len(args)))()
    for i, (t, a) in enumerate(zip(types, args)):
        if t.endswith("*"):
            if not isinstance(a, np.ndarray) or (contiguous and not a.flags.c_contiguous):
                raise TypeError(f"CUDA emulator: argument {i} of {kernel_name} must be a contiguous device buffer")
            v: Any = ctypes.c_void_p(a.__array_interface__["data"][0])
        else:
            d = np.dtype(getattr(a, "dtype", type(a)))
            v = _CTYPES[d](np.asarray(a).item())
        keep.append(v)
        ptrs[i] = ctypes.cast(ctypes.pointer(v), ctypes.c_void_p)
    return keep, ptrs


def dims(d: tuple) -> Any:
    """A grid or block (1 to 3 extents) as the ``unsigned[3]`` a launch takes."""
    return (ctypes.c_uint * 3)(*(tuple(d) + (1, 1))[:3])


class EmulatedRuntime:
    """The CUDA runtime API (see the module docstring) on the CPU."""

    name = "cuda-emulator"

    def __init__(self) -> None:
        self._modules: dict = {}
        self._preloaded: list = []
        self.launches = 0

    def preload(self, source: str) -> EmulatedModule:
        mod = compile_source(source)
        self._preloaded.append(mod)
        return mod

    def module(self, source: str, options: tuple = ()) -> EmulatedModule:
        key = hashlib.sha256(source.encode()).hexdigest()
        mod = self._modules.get(key)
        if mod is None:
            names = set(kernels_of(source))
            mod = next((m for m in self._preloaded if names <= set(m.kernels)), None)
            if mod is None:
                mod = compile_source(source)
            self._modules[key] = mod
        return mod

    def kernel(self, module: EmulatedModule, kernel_name: str) -> Any:
        """``fn(grid, block, args, shared_mem=0)`` launching ``kernel_name`` (as ``launch``)."""
        return functools.partial(self.launch, module, kernel_name)

    def launch(
        self, module: EmulatedModule, kernel_name: str, grid: tuple, block: tuple, args: tuple, shared_mem: int = 0
    ) -> None:
        fn = module.function(kernel_name)
        _, ptrs = pack_args(kernel_name, module.kernels[kernel_name], args)
        g, b = dims(grid), dims(block)
        if min(g) == 0:
            return
        rc = fn(g, b, ptrs)
        if rc == 1:
            raise RuntimeError(
                f"CUDA emulator: {kernel_name}<<<{tuple(grid)}, {tuple(block)}>>> deadlocked: every live thread "
                "waits at a barrier (__syncthreads or a warp shuffle) that the others never reach"
            )
        if rc:
            raise RuntimeError(f"CUDA emulator: {kernel_name}: block {tuple(block)} out of range (1..1024 threads)")
        self.launches += 1

    def empty(self, shape: tuple, dtype: Any) -> np.ndarray:
        out = np.empty(tuple(shape), np.dtype(dtype))
        if out.size:
            out.reshape(-1).view(np.uint8).fill(0xA5)
        return out

    def to_device(self, x: Any) -> np.ndarray:
        return np.array(x, copy=True, order="C")

    def to_host(self, buf: np.ndarray) -> np.ndarray:
        return np.array(buf, copy=True)

    def matmul(
        self, a: np.ndarray, b: np.ndarray, out: np.ndarray, compute: str = "", types: tuple | None = None
    ) -> None:
        if types is not None:
            # 16-bit floats (cuBLAS with CUBLAS_COMPUTE_32F): float32 products and sums, one rounding
            f32 = np.float32
            out[...] = np.matmul(np.asarray(a, f32), np.asarray(b, f32)).astype(out.dtype)
            return
        np.matmul(round_operand(a, compute), round_operand(b, compute), out=out)

    def fft(self, x: np.ndarray, out: np.ndarray, fft_type: int, lengths: tuple) -> None:
        """``lax.fft`` (``runtime.fft``): numpy's pocketfft stands in for cuFFT, in ``x``'s precision."""
        from fjax.backends.cuda.fft_ops import reference  # noqa: PLC0415

        out[...] = reference(x, fft_type, lengths)


_KEEP_BITS = {"tf32": 10, "bf16": 7, "f16": 10}  # mantissa bits each fast compute mode keeps


def round_operand(x: np.ndarray, compute: str) -> np.ndarray:
    """A float32 GEMM operand as cuBLAS's fast ``compute`` mode reads it ("tf32", "bf16", "f16":
    the mantissa rounded to nearest-even at 10 / 7 / 10 bits; float16's range is not modelled), for
    the emulator and the CPU stand-in of cupy; "" or another dtype: ``x`` itself."""
    keep = _KEEP_BITS.get(compute)
    if keep is None or x.dtype != np.float32:
        return x
    drop = 23 - keep
    bits = np.ascontiguousarray(x).view(np.uint32).astype(np.uint64)
    finite = (bits & 0x7F800000) != 0x7F800000
    rounded = (bits + ((1 << (drop - 1)) - 1) + ((bits >> drop) & 1)) & ~np.uint64((1 << drop) - 1)
    out = np.where(finite, rounded, bits).astype(np.uint32).view(np.float32)
    return out.reshape(x.shape)


def run_lowered(lowered: Any, *args: Any, runtime: EmulatedRuntime | None = None) -> list:
    """Run ``jit(f).trace(*args)`` (a ``Lowered``) through the CUDA backend on the emulator: the
    flat outputs as numpy arrays."""
    from fjax import tree_util  # noqa: PLC0415
    from fjax.backends import dispatch  # noqa: PLC0415

    rt = runtime or EmulatedRuntime()
    backend = dispatch.get_backend("cuda")
    prog = dispatch.lower(lowered.jaxpr, backend)
    if prog is None:
        raise NotImplementedError("CUDA backend: nothing in this program compiles")
    ex = backend.compile(prog, runtime=rt)
    flat = [np.asarray(getattr(c, "_value", c)) for c in lowered.consts]
    flat += [np.asarray(getattr(x, "_value", x)) for x in tree_util.tree_leaves(args)]
    avals = lowered.jaxpr.in_avals
    dev = [rt.to_device(np.asarray(x, dtype=a.dtype).reshape(a.shape)) for x, a in zip(flat, avals)]
    return [rt.to_host(o) for o in ex(*dev)]
