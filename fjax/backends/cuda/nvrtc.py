"""NVRTC, the compiler cupy's ``RawModule`` uses on a GPU, called through ctypes: no GPU and no
cupy needed. A developer and test tool: the cupy stand-in (``cupy_standin.RawModule``) compiles
every generated source with it as well as with the emulator, where a ``libnvrtc`` is found (the
``nvidia-cuda-nvrtc`` wheel, ``$CUDA_HOME`` or ``/usr/local/cuda``).

nvcc compiles with CUDA's runtime headers, which bring ``<math.h>``; NVRTC compiles with none. A
kernel leaning on a C header (``INFINITY``, ``NAN``) compiles under nvcc and the emulator's g++,
then fails on the GPU: the first real-GPU run after sessions 9-13 failed five corpus programs so.
``FJAX_STANDIN_NVRTC=0`` turns the stand-in's check off."""

from __future__ import annotations

import ctypes
import functools
import glob
import hashlib
import os
import sys
import threading

ARCH = "--gpu-architecture=compute_90"  # PTX for sm_90 (the H100/H200); no GPU needed
_lock = threading.Lock()
_ok: set[str] = set()  # hashes of sources (and options) compiled without error


@functools.cache
def library() -> ctypes.CDLL | None:
    """The loaded ``libnvrtc`` (its builtins library loaded first: it sits beside it, where the
    dynamic loader does not look), or None where there is none."""
    cands = []
    for p in sys.path:  # nvidia-cuda-nvrtc wheels: nvidia/cuda_nvrtc/lib (CUDA 12), nvidia/cu13/lib
        cands += glob.glob(os.path.join(p, "nvidia", "*", "lib", "libnvrtc.so*"))
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            cands += glob.glob(os.path.join(home, "lib64", "libnvrtc.so*"))
    cands = sorted(c for c in cands if ".alt." not in os.path.basename(c))
    for path in cands:
        try:
            for b in sorted(glob.glob(os.path.join(os.path.dirname(path), "libnvrtc-builtins.so*"))):
                if ".alt." not in os.path.basename(b):
                    ctypes.CDLL(b, mode=ctypes.RTLD_GLOBAL)
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def available() -> bool:
    return library() is not None


def compile_log(src: str, options: tuple[str, ...] = (ARCH,)) -> tuple[bool, str]:
    """Compile ``src`` to PTX; (whether it compiled without error, NVRTC's log)."""
    lib = library()
    if lib is None:
        raise RuntimeError("libnvrtc not found (pip install nvidia-cuda-nvrtc)")
    prog = ctypes.c_void_p()
    rc = lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"fjax.cu", 0, None, None)
    if rc != 0:
        return False, f"nvrtcCreateProgram failed ({rc})"
    try:
        opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
        rc = lib.nvrtcCompileProgram(prog, len(options), opts)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(max(1, size.value))
        lib.nvrtcGetProgramLog(prog, log)
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
    text = log.value.decode(errors="replace")
    return rc == 0 and " error" not in text, text


def check(src: str, options: tuple[str, ...] = ()) -> None:
    """Raise ``RuntimeError`` with NVRTC's errors if ``src`` does not compile (each source once)."""
    opts = (ARCH, *[o for o in options if not o.startswith(("-arch", "--gpu-architecture"))])
    key = hashlib.sha256(repr((src, opts)).encode()).hexdigest()
    if key in _ok:
        return
    with _lock:
        ok, log = compile_log(src, opts)
    if not ok:
        errors = [line for line in log.splitlines() if "error" in line]
        raise RuntimeError("NVRTC (the GPU's compiler) refused the source:\n" + "\n".join(errors[:20] or [log[-4000:]]))
    _ok.add(key)
