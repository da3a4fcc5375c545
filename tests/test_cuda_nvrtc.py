"""The CUDA lowering corpus compiled with NVRTC, the compiler cupy's ``RawModule`` uses on a GPU.

nvcc (``test_cuda_lowering``) compiles with CUDA's runtime headers, which bring ``<math.h>``; NVRTC
compiles with none, so a kernel that leans on a C header (``INFINITY``, ``NAN``) compiles under nvcc
and fails on the GPU. This happened: the first real-GPU run after sessions 9-13 failed five corpus
programs on NVRTC alone. Needs ``libnvrtc`` (the ``nvidia-cuda-nvrtc`` wheel or a CUDA toolkit;
no GPU), and skips cleanly without it."""

from __future__ import annotations

import ctypes
import glob
import os
import sys

import pytest
from test_cuda_lowering import CORPUS, _lowered


def _find_nvrtc() -> str | None:
    cands = []
    for p in sys.path:  # the nvidia-cuda-nvrtc wheels (cu12: nvidia/cuda_nvrtc, cu13: nvidia/cu13)
        cands += glob.glob(os.path.join(p, "nvidia", "*", "lib", "libnvrtc.so*"))
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            cands += glob.glob(os.path.join(home, "lib64", "libnvrtc.so*"))
    cands = [c for c in cands if "alt" not in os.path.basename(c) and "builtins" not in c]
    return sorted(cands)[0] if cands else None


_LIB = _find_nvrtc()
pytestmark = pytest.mark.skipif(_LIB is None, reason="libnvrtc not found (pip install nvidia-cuda-nvrtc)")


def _nvrtc_compile(src: str, options: list[str]) -> tuple[int, str]:
    # its builtins library sits beside it, where dlopen does not look: load it first
    for b in sorted(glob.glob(os.path.join(os.path.dirname(_LIB), "libnvrtc-builtins.so*"))):
        if ".alt." not in b:
            ctypes.CDLL(b, mode=ctypes.RTLD_GLOBAL)
    lib = ctypes.CDLL(_LIB)
    prog = ctypes.c_void_p()
    rc = lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"corpus.cu", 0, None, None)
    assert rc == 0, f"nvrtcCreateProgram: {rc}"
    opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
    rc = lib.nvrtcCompileProgram(prog, len(options), opts)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return rc, log.value.decode(errors="replace")


def test_nvrtc_compiles_the_corpus():
    # one translation unit, as on the GPU (each program's kernels are guarded by name)
    src = "\n".join(_lowered(fn, args).as_text() for fn, args in CORPUS.values())
    rc, log = _nvrtc_compile(src, ["--gpu-architecture=compute_90"])
    errors = [line for line in log.splitlines() if "error" in line]
    assert rc == 0 and not errors, "\n".join(errors[:20]) or log[-4000:]


def test_nvrtc_reports_a_missing_identifier():
    """The check can fail: NVRTC without <math.h> refuses C's HUGE_VAL, which fjax never uses."""
    rc, log = _nvrtc_compile('extern "C" __global__ void k(double* y) { y[0] = HUGE_VAL; }\n', [])
    assert rc != 0 and "HUGE_VAL" in log
