"""The CUDA lowering corpus compiled with NVRTC, the compiler cupy's ``RawModule`` uses on a GPU
(``fjax.backends.cuda.nvrtc``, through ctypes: no GPU needed).

nvcc (``test_cuda_lowering``) compiles with CUDA's runtime headers, which bring ``<math.h>``; NVRTC
compiles with none, so a kernel that leans on a C header (``INFINITY``, ``NAN``) compiles under nvcc
and fails on the GPU. This happened: the first real-GPU run after sessions 9-13 failed five corpus
programs on NVRTC alone. The cupy stand-in checks every source it compiles the same way. Needs
``libnvrtc`` (the ``nvidia-cuda-nvrtc`` wheel or a CUDA toolkit), and skips cleanly without it."""

from __future__ import annotations

import pytest
from test_cuda_lowering import CORPUS, _lowered

from fjax.backends.cuda import nvrtc

pytestmark = pytest.mark.skipif(not nvrtc.available(), reason="libnvrtc not found (pip install nvidia-cuda-nvrtc)")


def test_nvrtc_compiles_the_corpus():
    # one translation unit, as on the GPU (each program's kernels are guarded by name)
    src = "\n".join(_lowered(fn, args).as_text() for fn, args in CORPUS.values())
    ok, log = nvrtc.compile_log(src)
    assert ok, "\n".join(line for line in log.splitlines() if "error" in line)[:4000] or log[-4000:]


def test_nvrtc_reports_a_missing_identifier():
    """The check can fail: NVRTC without <math.h> refuses C's HUGE_VAL, which fjax never uses."""
    ok, log = nvrtc.compile_log('extern "C" __global__ void k(double* y) { y[0] = HUGE_VAL; }\n')
    assert not ok and "HUGE_VAL" in log
    with pytest.raises(RuntimeError, match="HUGE_VAL"):
        nvrtc.check('extern "C" __global__ void k(double* y) { y[0] = HUGE_VAL; }\n')
