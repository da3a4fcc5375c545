"""fjax's real cupy runtime (``fjax/backends/cuda/runtime.py``: buffers, module cache, launches,
cuBLAS through ctypes, CUDA-graph capture and replay) and GPU placement, run on the CPU against
``fjax.backends.cuda.cupy_standin``: a stand-in for cupy whose kernels run in the CUDA emulator
(g++), whose GEMMs are numpy over the raw pointers cuBLAS would get, and whose graphs record the
captured work and replay it with the capture's pointers baked in (as a real CUDA graph does).

The real-GPU tests (``test_cuda_gpu.py``) run here unchanged against the stand-in: the programs
that exercise the runtime's paths (GEMM layouts, scan, while, cond, sort, gather/scatter, random)
always, the whole lowering corpus under the thorough hypothesis profile. Nothing here touches a
GPU: it says the runtime's host code is right, not how fast a GPU is."""

from __future__ import annotations

import os

import numpy as np
import pytest

import fjax
from fjax.backends.cuda import emulate

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")

THOROUGH = os.environ.get("FJAX_HYPOTHESIS_PROFILE", "ci") == "thorough"
# corpus programs whose plans cover the runtime's paths: GEMMs in every operand layout (forward,
# transposed in the gradient, batched), a scan, a while loop, a cond, sort, gather/scatter, random
CORE = ("mlp_step", "rnn_grad", "while_cond", "sort", "gather_grad", "random", "vmap_grad", "conv_grad", "dus_loop")


@pytest.fixture
def standin_gpu():
    from fjax.backends.cuda import cupy_standin

    old = fjax.config.jax_platforms
    fjax.config.update("jax_platforms", None)
    cupy_standin.install(compute=True)
    try:
        yield cupy_standin
    finally:
        cupy_standin.uninstall()
        fjax.config.update("jax_platforms", old)


def _corpus_names() -> list:
    import test_cuda_gpu  # noqa: PLC0415

    names = sorted(test_cuda_gpu._corpus())
    return names if THOROUGH else [n for n in names if n in CORE]


def test_core_names_are_in_the_corpus():
    import test_cuda_gpu  # noqa: PLC0415

    assert set(CORE) <= set(test_cuda_gpu._corpus()), set(CORE) - set(test_cuda_gpu._corpus())


@pytest.mark.parametrize("name", _corpus_names())
def test_corpus_through_the_cupy_runtime(standin_gpu, name):
    import test_cuda_gpu  # noqa: PLC0415

    assert fjax.default_backend() == "gpu"
    test_cuda_gpu.test_corpus_on_gpu_matches_numba(name)


def test_graph_replay_through_the_cupy_runtime(standin_gpu):
    """A training loop and an RNN gradient called repeatedly: captured as graphs on the second call
    and replayed with new inputs every call, against the CPU at every step."""
    import test_cuda_gpu  # noqa: PLC0415

    standin_gpu.calls.clear()
    standin_gpu.launches.clear()
    test_cuda_gpu.test_repeated_calls_replay_a_cuda_graph()
    assert standin_gpu.calls["graph launch"] >= 6, dict(standin_gpu.calls)
    # the replays copied their inputs in with one kernel and returned views of one output buffer
    copy_in = sum(n for k, n in standin_gpu.launches.items() if k.startswith("fj_copy_in_"))
    assert copy_in >= 6 and standin_gpu.calls["ndarray"] > 0, (dict(standin_gpu.launches), dict(standin_gpu.calls))


def test_threefry_through_the_cupy_runtime(standin_gpu):
    import test_cuda_gpu  # noqa: PLC0415

    test_cuda_gpu.test_threefry_bits_identical_on_gpu()


@pytest.mark.skipif(not THOROUGH, reason="each eager primitive compiles a module with g++: thorough profile only")
def test_eager_ops_through_the_cupy_runtime(standin_gpu):
    import test_cuda_gpu  # noqa: PLC0415

    test_cuda_gpu.test_eager_ops_and_transforms_on_gpu()


def test_standin_graph_bakes_in_the_captured_pointers(standin_gpu):
    """The stand-in's graphs behave as CUDA's: a replay reads the buffers of the capture, so a
    runtime that forgot to copy new inputs in would read stale data (the check above relies on it)."""
    cp = standin_gpu
    src = cp.asarray(np.arange(4, dtype=np.float32))
    dst = cp.empty((4,), np.float32)
    side = cp.Stream(non_blocking=True)
    with side:
        side.begin_capture()
        dst.data.copy_from_device_async(src.data, src.nbytes, side)
        graph = side.end_capture()
    assert not np.array_equal(np.asarray(dst), np.arange(4))  # captured, not run
    graph.launch(cp.get_current_stream())
    np.testing.assert_array_equal(np.asarray(dst), np.arange(4, dtype=np.float32))
    np.asarray(src)[:] = 7
    graph.launch(cp.get_current_stream())
    np.testing.assert_array_equal(np.asarray(dst), np.full(4, 7, np.float32))


@pytest.mark.parametrize("offsets", [(0, 0, 0), (1, 3, 16), (16, 5, 0)])
def test_copy_in_kernel_copies_every_buffer(offsets):
    """The graph replay's one-launch input copy (``runtime.copy_in_source``) in the emulator:
    buffers of odd sizes, at 16-byte aligned and misaligned addresses, each copied exactly."""
    from fjax.backends.cuda import runtime

    rt = emulate.EmulatedRuntime()
    sizes = [37, 4096 + 12, 16]
    name, src = runtime.copy_in_source(sizes)
    mod = rt.module(src)
    rng = np.random.default_rng(0)
    srcs, dsts = [], []
    for n, off in zip(sizes, offsets):
        base = np.zeros(n + 32, np.uint8)  # (numpy's allocations are 16-byte aligned)
        s = base[off : off + n]
        s[:] = rng.integers(0, 256, n, dtype=np.uint8)
        srcs.append(s)
        dsts.append(np.zeros(n + 32, np.uint8)[off : off + n])
    rt.launch(mod, name, (2, 1, 1), (256, 1, 1), tuple(srcs + dsts))
    for s, d in zip(srcs, dsts):
        np.testing.assert_array_equal(d, s)


@pytest.mark.skipif(__import__("shutil").which("nvcc") is None, reason="nvcc not installed")
def test_copy_in_kernel_compiles_with_nvcc(tmp_path):
    import subprocess

    from fjax.backends.cuda import runtime

    _, src = runtime.copy_in_source([8, 1 << 20, 3])
    cu = tmp_path / "copy_in.cu"
    cu.write_text(src)
    r = subprocess.run(
        ["nvcc", "-arch=sm_90", "-c", str(cu), "-o", str(tmp_path / "c.o")], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr[-2000:]
