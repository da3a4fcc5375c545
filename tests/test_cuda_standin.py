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


@pytest.fixture(autouse=True, scope="module")
def _float32_matmuls():
    """Results are compared with the CPU's float32 ones: GEMMs in full float32 here (a GPU's default
    is TF32, as JAX's; tests/test_cuda_precision.py checks that)."""
    with fjax.default_matmul_precision("float32"):
        yield


THOROUGH = os.environ.get("FJAX_HYPOTHESIS_PROFILE", "ci") == "thorough"
# corpus programs whose plans cover the runtime's paths: GEMMs in every operand layout (forward,
# transposed in the gradient, batched), a scan, a while loop, a cond, sort, gather/scatter, random
CORE = ("mlp_step", "rnn_grad", "while_cond", "sort", "gather_grad", "random", "vmap_grad", "conv_grad", "dus_loop")


@pytest.fixture
def standin_gpu():
    import _standin_gpu  # noqa: PLC0415

    with _standin_gpu.installed() as cs:
        yield cs


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


@pytest.mark.parametrize("copy_out_kernel", [False, True])
def test_graph_replay_through_the_cupy_runtime(standin_gpu, copy_out_kernel, monkeypatch):
    """A training loop and an RNN gradient called repeatedly: captured as graphs on the second call
    and replayed with new inputs every call, against the CPU at every step (outputs copied out by
    cupy, or by the copy kernel as large outputs are)."""
    import test_cuda_gpu  # noqa: PLC0415

    from fjax.backends.cuda import runtime  # noqa: PLC0415

    monkeypatch.setattr(runtime, "COPY_OUT_KERNEL_MIN", 1 if copy_out_kernel else 1 << 40)

    standin_gpu.calls.clear()
    standin_gpu.launches.clear()
    graphs = []
    real = runtime.capture_graph

    def spy(run, args):
        g = real(run, args)
        graphs.append((g, len(run.outs), run.direct_outputs()))
        return g

    runtime.capture_graph = spy
    try:
        test_cuda_gpu.test_repeated_calls_replay_a_cuda_graph()
    finally:
        runtime.capture_graph = real
    # outputs the plan allocates are written straight into the graph's output buffer: the graph
    # copies only the others (the MLP step's new parameters and loss: none of its outputs)
    for g, n_out, direct in graphs:
        assert g.graph.kinds.count("copy") == n_out - len(direct), (g.graph.kinds, n_out, direct)
    assert graphs[0][1] >= 3 and len(graphs[0][2]) == graphs[0][1], graphs[0]
    assert standin_gpu.calls["graph launch"] >= 6, dict(standin_gpu.calls)
    # the replays copied their inputs in with one kernel and returned views of one output buffer
    copy_in = sum(n for k, n in standin_gpu.launches.items() if k.startswith("fj_copy_in_"))
    assert copy_in >= 6 and standin_gpu.calls["ndarray"] > 0, (dict(standin_gpu.launches), dict(standin_gpu.calls))
    # ... and copied their outputs out with the same kind of kernel when asked to
    assert all((g.copy_out is not None) == copy_out_kernel for g, _, _ in graphs)
    if copy_out_kernel:
        assert copy_in >= 12, dict(standin_gpu.launches)


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
    sizes = [37, 3 * 4096 + 12, 16]  # (the second buffer over 3 blocks, a tail of 12 bytes)
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
    rt.launch(mod, name, (runtime.copy_blocks(sizes), 1, 1), (256, 1, 1), tuple(srcs + dsts))
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


# ---- faults: a graph that cannot be used is said once and the numbers stay right ---------------


def _mlp_steps(n: int = 4) -> None:
    """``n`` MLP training steps on the GPU and on the CPU, compared at every step."""
    import test_cuda_gpu  # noqa: PLC0415

    from fjax import tree_util

    fn, (params, x, y) = test_cuda_gpu._corpus()["mlp_step"]
    step = fjax.jit(fn)
    rng = np.random.default_rng(5)
    pc = tree_util.tree_map(test_cuda_gpu._cpu, params)
    pg = tree_util.tree_map(test_cuda_gpu._gpu, params)
    for _ in range(n):
        xb = rng.standard_normal(x.shape).astype(np.float32)
        lc, pc = step(pc, test_cuda_gpu._cpu(xb), test_cuda_gpu._cpu(y))
        lg, pg = step(pg, test_cuda_gpu._gpu(xb), test_cuda_gpu._gpu(y))
        np.testing.assert_allclose(float(lg), float(lc), rtol=1e-4)
    test_cuda_gpu._check(tree_util.tree_leaves(pg), tree_util.tree_leaves(pc), "mlp_step")


@pytest.fixture
def fresh_warnings():
    from fjax.backends.cuda import runtime

    saved = set(runtime._graph_warned)
    runtime._graph_warned.clear()
    yield
    runtime._graph_warned.clear()
    runtime._graph_warned.update(saved)


def test_failed_capture_is_said_once_and_runs_launch_by_launch(standin_gpu, fresh_warnings, monkeypatch):
    def refuse(self, mode=None):
        raise RuntimeError("capture refused by the driver")

    monkeypatch.setattr(standin_gpu.Stream, "begin_capture", refuse)
    standin_gpu.calls.clear()
    with pytest.warns(UserWarning, match="could not be captured .*capture refused") as rec:
        _mlp_steps(4)
    assert len([w for w in rec if "could not be captured" in str(w.message)]) == 1
    assert standin_gpu.calls["graph launch"] == 0


def test_no_cublas_library_falls_back_to_cupy_matmul(standin_gpu, fresh_warnings):
    """Without a loadable libcublas the GEMMs go through cupy.matmul, which refuses a capturing
    stream: the capture fails once, said once, and every step is still right."""
    from fjax.backends.cuda import runtime

    runtime._cublas[:] = [None]
    runtime._gemm_plans.clear()
    standin_gpu.calls.clear()
    with pytest.warns(UserWarning, match="could not be captured"):
        _mlp_steps(3)
    assert standin_gpu.calls["cupy.matmul"] > 0 and standin_gpu.calls["gemm"] == 0


def test_copy_kernel_failure_copies_each_input(standin_gpu, fresh_warnings, monkeypatch):
    from fjax.backends.cuda import runtime

    def broken(nbytes):
        raise RuntimeError("NVRTC refused the copy kernel")

    monkeypatch.setattr(runtime, "copy_in_source", broken)
    standin_gpu.calls.clear()
    with pytest.warns(UserWarning, match="input copy kernel failed .*NVRTC refused"):
        _mlp_steps(4)
    assert standin_gpu.calls["graph launch"] >= 2 and standin_gpu.calls["copy"] > 8


def test_threads_share_a_replayed_graph(standin_gpu):
    """Four threads calling the same jitted step (captured as a graph, replayed under its lock)
    with their own data: each gets its own numbers."""
    import threading

    import test_cuda_gpu  # noqa: PLC0415

    from fjax import tree_util

    fn, (params, x, y) = test_cuda_gpu._corpus()["mlp_step"]
    step = fjax.jit(fn)
    pg = tree_util.tree_map(test_cuda_gpu._gpu, params)
    pc = tree_util.tree_map(test_cuda_gpu._cpu, params)
    standin_gpu.calls.clear()
    step(pg, test_cuda_gpu._gpu(x), test_cuda_gpu._gpu(y))  # the first call: launch by launch
    data = [np.random.default_rng(i).standard_normal(x.shape).astype(np.float32) for i in range(4)]
    want = [float(step(pc, test_cuda_gpu._cpu(d), test_cuda_gpu._cpu(y))[0]) for d in data]
    got: dict = {}
    errors: list = []

    def work(i: int) -> None:
        try:
            for _ in range(3):
                got[i] = float(step(pg, test_cuda_gpu._gpu(data[i]), test_cuda_gpu._gpu(y))[0])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    np.testing.assert_allclose([got[i] for i in range(4)], want, rtol=1e-4)
    assert standin_gpu.calls["graph launch"] > 0
