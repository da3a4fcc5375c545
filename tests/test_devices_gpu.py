"""Devices and placement as in JAX: the GPU platform, committed and uncommitted arrays, dispatch by device.

Three kinds of tests:

- CPU only (run everywhere): ``devices("gpu")`` raises as JAX does, ``jax_platforms``,
  ``default_device``, committed-device semantics over several CPU devices, and that ``import fjax``
  imports no cupy;
- the GPU logic through a TEST DOUBLE (``tests/_fake_cuda_runtime.py``): a numpy-backed fake of the
  CUDA runtime and a fake "cuda" backend that runs programs with the numba backend. These check
  fjax's placement and dispatch (device buffers in and out, no host copies, errors); nothing runs on
  a GPU;
- real GPU tests, which need cupy and a CUDA device and skip cleanly without them.
"""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from _fake_cuda_runtime import FakeBuffer, FakeCudaBackend, FakeRuntime, install, uninstall

import fjax
import fjax.numpy as jnp
from fjax import _devices, _placement, lax
from fjax.backends.cuda import runtime as cuda_runtime
from fjax.sharding import ShardedArray, SingleDeviceSharding

REAL_GPU = cuda_runtime.available()
needs_no_gpu = pytest.mark.skipif(REAL_GPU, reason="a real GPU is present")
needs_real_gpu = pytest.mark.skipif(not REAL_GPU, reason="needs cupy and a CUDA device")


def _committed(x, device):
    return x._committed and x.devices() == {device}


def _uncommitted(x, device):
    return not x._committed and x.devices() == {device}


@pytest.fixture
def platforms_cpu():
    old = fjax.config.jax_platforms
    fjax.config.update("jax_platforms", "cpu")
    yield
    fjax.config.update("jax_platforms", old)


# ---- CPU only ----------------------------------------------------------------------------------


def test_import_fjax_does_not_import_cupy():
    code = (
        "import sys, fjax\n"
        "assert 'cupy' not in sys.modules and 'fjax.backends.cuda.runtime' not in sys.modules\n"
        "import fjax.numpy as jnp\n"
        "y = fjax.jit(lambda x: x * 2)(jnp.arange(3.0)) + 1\n"
        "assert fjax.devices()[0].platform == 'cpu' and fjax.default_backend() == 'cpu'\n"
        "assert 'cupy' not in sys.modules, 'JAX_PLATFORMS=cpu imported cupy'\n"
        "print('ok', y)\n"
    )
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ok [1. 3. 5.]")


@needs_no_gpu
def test_no_gpu_devices_raise_as_jax():
    assert fjax.default_backend() == "cpu"
    assert [d.platform for d in fjax.devices()] == ["cpu"]
    for name in ("gpu", "cuda"):
        with pytest.raises(RuntimeError, match=f"Unknown backend: '{name}' requested"):
            fjax.devices(name)
        with pytest.raises(RuntimeError, match="Platforms present are: cpu"):
            fjax.local_devices(backend=name)
    with pytest.raises(RuntimeError, match="Unknown backend"):
        fjax.device_count("gpu")
    old = fjax.config.jax_platforms
    try:
        fjax.config.update("jax_platforms", "cuda")
        with pytest.raises(RuntimeError, match="Unable to initialize backend 'cuda'"):
            fjax.devices()
        fjax.config.update("jax_platforms", "tpu")
        with pytest.raises(RuntimeError, match="Unable to initialize backend 'tpu'"):
            fjax.devices()
    finally:
        fjax.config.update("jax_platforms", old)
    assert fjax.devices() == fjax.devices("cpu")
    assert cuda_runtime.available() is False and cuda_runtime.unavailable_reason()


def test_jax_platforms_cpu(platforms_cpu):
    assert fjax.default_backend() == "cpu" and fjax.devices() == fjax.devices("cpu")
    x = jnp.arange(3.0) + 1
    assert type(x) is fjax.Array and x.devices() == {fjax.devices("cpu")[0]} and not x._committed


def test_device_objects():
    cpu = fjax.devices("cpu")[0]
    gpu = _devices.CudaDevice(0, 0, "NVIDIA H100 80GB HBM3")
    assert repr(gpu) == "CudaDevice(id=0)" and str(gpu) == "cuda:0"
    assert gpu.platform == "gpu" and gpu.device_kind == "NVIDIA H100 80GB HBM3" and gpu.id == 0
    assert gpu != cpu and cpu == _devices.Device(0) and gpu == _devices.CudaDevice(0)
    assert len({gpu, cpu, _devices.CudaDevice(0)}) == 2
    import pickle

    assert pickle.loads(pickle.dumps(gpu)) == gpu


@pytest.fixture
def four_cpus():
    """Four CPU devices (the topology reset around the test, as if set before first use); the CPU is
    the only platform (``jax_platforms="cpu"``), so these tests mean the same on a machine with a GPU."""
    old, old_platforms = fjax.config.jax_num_cpu_devices, fjax.config.jax_platforms
    fjax.config.update("jax_platforms", "cpu")
    _devices._topology = None
    fjax.config.update("jax_num_cpu_devices", 4)
    _devices._topology_changed()
    yield fjax.devices("cpu")
    _devices._topology = None
    fjax.config.update("jax_num_cpu_devices", old)
    fjax.config.update("jax_platforms", old_platforms)
    _devices._topology_changed()


_jit_add = fjax.jit(lambda a, b: a + b)


def test_committed_semantics_cpu_devices(four_cpus):
    """JAX's "computation follows data" (tests/multi_device_test.py in JAX), on CPU devices."""
    devices = four_cpus
    x = jnp.ones(2)
    assert _uncommitted(x, devices[0])
    y = jnp.sin(x + x * 1) + 2
    assert _uncommitted(y, devices[0])
    z = fjax.device_put(1, devices[1])
    assert _committed(z, devices[1]) and type(z) is ShardedArray
    u = z + x  # committed and uncommitted: runs on the committed device
    assert _committed(u, devices[1])
    np.testing.assert_array_equal(u, [2.0, 2.0])
    with pytest.raises(ValueError, match="Received incompatible devices for jitted computation"):
        fjax.device_put(x, devices[2]) + fjax.device_put(x, devices[3])
    assert _uncommitted(_jit_add(1, 2), devices[0])
    assert _committed(_jit_add(1, fjax.device_put(2, devices[2])), devices[2])
    with pytest.raises(ValueError, match=r"argument 0 of <lambda> with shape f32\[2\] and device ids \[2\]"):
        _jit_add(fjax.device_put(x, devices[2]), fjax.device_put(x, devices[3]))
    # device_put: an explicit device commits, None keeps the placement
    assert _committed(fjax.device_put(x, devices[0]), devices[0])
    assert _committed(fjax.device_put(fjax.device_put(2, devices[1])), devices[1])
    assert _uncommitted(fjax.device_put(jnp.zeros(2)), devices[0])
    assert _committed(fjax.device_put(x, SingleDeviceSharding(devices[3])), devices[3])
    # results of transforms follow too
    w = fjax.device_put(jnp.arange(3.0), devices[2])
    g = fjax.grad(lambda v: jnp.sum(v * v))(w)
    assert _committed(g, devices[2])
    np.testing.assert_allclose(g, [0.0, 2.0, 4.0])
    r = lax.transpose(fjax.device_put(jnp.ones((2, 3)), devices[3]), (1, 0))
    assert _committed(r, devices[3]) and r.shape == (3, 2)


def test_default_device_context(four_cpus):
    devices = four_cpus
    with fjax.default_device(devices[2]):
        x = jnp.ones(3) * 2
        assert _uncommitted(x, devices[2])
        assert _uncommitted(_jit_add(x, 1.0), devices[2])
        # committed inputs win over the default device
        assert _committed(fjax.device_put(1.0, devices[1]) + 1, devices[1])
        with fjax.default_device("cpu"):
            assert fjax.numpy.zeros(2).devices() == {devices[0]}
    # another thread's computations (on the host default) leave this thread's block in force
    with fjax.default_device(devices[2]):
        t = threading.Thread(target=lambda: (jnp.ones(2) + 1).block_until_ready())
        t.start()
        t.join()
        assert _uncommitted(jnp.ones(2) * 3, devices[2])
    y = x + 1  # uncommitted: goes to the (new) default device
    assert y.devices() == {devices[0]}
    np.testing.assert_array_equal(y, [3.0, 3.0, 3.0])
    old = fjax.config.jax_default_device
    try:
        fjax.config.update("jax_default_device", devices[3])
        assert _uncommitted(jnp.arange(2) + 1, devices[3])
        with pytest.raises(ValueError, match="jax_default_device"):
            fjax.config.update("jax_default_device", 3)
    finally:
        fjax.config.update("jax_default_device", old)
    with pytest.raises(TypeError, match="default_device"):
        with fjax.default_device(3):
            pass


# ---- the GPU logic through the test double -------------------------------------------------------


@pytest.fixture
def fake_gpu(monkeypatch):
    """Two pretend GPUs (a numpy-backed TEST DOUBLE of the runtime) and a fake "cuda" backend that
    runs programs with numba. Nothing runs on a GPU."""
    fake = FakeRuntime(n_devices=2)
    backend = FakeCudaBackend(unsupported=("sort",))
    old = fjax.config.jax_platforms
    fjax.config.update("jax_platforms", None)
    install(monkeypatch, fake, backend)
    yield fake, backend
    monkeypatch.undo()
    fjax.config.update("jax_platforms", old)
    uninstall()


# module level, so the numba kernels compile once
@fjax.jit
def _layer(w, x):
    return jnp.tanh(x @ w).sum(axis=0)


_loss_grad = fjax.jit(fjax.grad(lambda w, x: jnp.sum(jnp.tanh(x @ w))))


def test_fake_gpu_devices(fake_gpu):
    fake, _ = fake_gpu
    gpus = fjax.devices()
    assert [repr(d) for d in gpus] == ["CudaDevice(id=0)", "CudaDevice(id=1)"]
    assert [str(d) for d in gpus] == ["cuda:0", "cuda:1"]
    assert fjax.default_backend() == "gpu" and fjax.devices("gpu") == gpus == fjax.devices("cuda")
    assert fjax.local_devices() == gpus and fjax.device_count() == 2 and fjax.local_device_count("gpu") == 2
    assert gpus[0].platform == "gpu" and gpus[0].device_kind == fake.kind and gpus[1].local_hardware_id == 1
    assert fjax.devices("cpu") == [_devices.CPU_DEVICE] and fjax.device_count("cpu") == 1
    with fjax.default_device(fjax.devices("cpu")[0]):
        assert fjax.numpy.ones(2).devices() == {_devices.CPU_DEVICE}
    old = fjax.config.jax_platforms
    fjax.config.update("jax_platforms", "cpu")
    try:
        assert fjax.default_backend() == "cpu" and fjax.devices() == [_devices.CPU_DEVICE]
        y = jnp.arange(3.0) * 2
        assert type(y) is fjax.Array
    finally:
        fjax.config.update("jax_platforms", old)


def test_fake_gpu_device_put_and_readback(fake_gpu):
    fake, _ = fake_gpu
    g0, g1 = fjax.devices()
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = fjax.device_put(a, g1)
    assert isinstance(x, _placement.GpuArray) and isinstance(x, fjax.Array)
    assert isinstance(x._buf, FakeBuffer) and x._buf.device_id == 1 and fake.uploads == 1
    assert _committed(x, g1) and x.device == g1 and x.sharding == SingleDeviceSharding(g1)
    assert x.shape == (2, 3) and x.dtype == np.float32 and x.ndim == 2 and x.size == 6 and x.nbytes == 24
    assert fake.downloads == 0  # metadata is read without a copy
    np.testing.assert_array_equal(np.asarray(x), a)
    assert repr(x) == repr(jnp.asarray(a)) and str(x) == str(a)
    assert float(x[1, 2]) == 5.0
    assert fake.downloads == 2  # x once (then kept), x[1, 2] (computed on the device) once
    assert type(fjax.device_get(x)) is np.ndarray
    h = fjax.device_put(x, fjax.devices("cpu")[0])
    assert _committed(h, _devices.CPU_DEVICE) and not isinstance(h, _placement.GpuArray)
    u = fjax.device_put(a)  # uncommitted, on the default device (the first GPU)
    assert isinstance(u, _placement.GpuArray) and _uncommitted(u, g0)
    assert fjax.device_put(u) is u
    s = fjax.device_put(2.0, g0)
    assert s.weak_type and s.dtype == np.float32
    assert x.block_until_ready() is x and x.committed


def test_fake_gpu_jit_runs_on_the_device(fake_gpu):
    fake, backend = fake_gpu
    g0, g1 = fjax.devices()
    rng = np.random.default_rng(0)
    w, xb = rng.standard_normal((4, 3), np.float32), rng.standard_normal((5, 4), np.float32)
    wd, xd = fjax.device_put(w, g1), fjax.device_put(xb, g1)
    ups, downs = fake.uploads, fake.downloads
    out = _layer(wd, xd)
    assert isinstance(out, _placement.GpuArray) and _committed(out, g1) and out._buf.device_id == 1
    assert fake.uploads == ups and fake.downloads == downs  # device buffers in, device buffers out
    assert backend.calls == 1
    np.testing.assert_allclose(np.asarray(out), np.tanh(xb @ w).sum(axis=0), rtol=1e-5)
    # the compiled program is cached with the jaxpr
    _layer(wd, xd)
    assert len(backend.programs) == 1 and backend.calls == 2
    # committed to GPU 1 + uncommitted host array: runs on GPU 1
    out2 = _layer(wd, jnp.asarray(xb))
    assert _committed(out2, g1)
    # uncommitted inputs only: the default device (GPU 0), uncommitted results
    out3 = _layer(jnp.asarray(w), xb)
    assert isinstance(out3, _placement.GpuArray) and _uncommitted(out3, g0)
    with pytest.raises(ValueError, match="Received incompatible devices"):
        _layer(fjax.device_put(w, g0), xd)
    # grad, on the device
    gw = _loss_grad(wd, xd)
    assert _committed(gw, g1)
    np.testing.assert_allclose(np.asarray(gw), xb.T @ (1 - np.tanh(xb @ w) ** 2), rtol=2e-5, atol=1e-6)


def test_fake_gpu_eager_ops_and_transforms(fake_gpu):
    fake, backend = fake_gpu
    g0 = fjax.devices()[0]
    a = np.linspace(-1, 1, 6, dtype=np.float32)
    x = fjax.device_put(a, g0)
    downs = fake.downloads
    y = jnp.sin(x) * 2 + 1  # each primitive a one-primitive jaxpr on the device
    assert isinstance(y, _placement.GpuArray) and _committed(y, g0)
    assert fake.downloads == downs
    np.testing.assert_allclose(np.asarray(y), np.sin(a) * 2 + 1, rtol=1e-6)
    n = backend.calls
    jnp.sin(x) * 2 + 1  # cached one-primitive programs
    assert len(backend.programs) <= n and backend.calls > n
    g = fjax.grad(lambda v: jnp.sum(jnp.sin(v)))(x)
    assert isinstance(g, _placement.GpuArray) and _committed(g, g0)
    np.testing.assert_allclose(np.asarray(g), np.cos(a), rtol=1e-6)
    # uncommitted inputs on the GPU default: eager results live on the GPU too
    z = jnp.asarray(a) * 3
    assert isinstance(z, _placement.GpuArray) and _uncommitted(z, g0)
    # a jaxpr that computes nothing still returns device arrays
    ident = fjax.jit(lambda v: (v, 1.0))(x)
    assert all(isinstance(o, _placement.GpuArray) and _committed(o, g0) for o in ident)
    assert float(ident[1]) == 1.0
    # rows of a device array are sliced on the device
    rows = list(fjax.device_put(a.reshape(3, 2), g0))
    assert all(isinstance(r, _placement.GpuArray) for r in rows)


def test_fake_gpu_unsupported_primitive_propagates(fake_gpu):
    fake, _ = fake_gpu
    x = fjax.device_put(np.array([3.0, 1.0, 2.0], np.float32), fjax.devices()[0])
    downs = fake.downloads
    with pytest.raises(NotImplementedError, match="sort"):
        jnp.sort(x)
    with pytest.raises(NotImplementedError, match="sort"):
        fjax.jit(jnp.sort)(x)
    assert fake.downloads == downs  # no silent round trip through the host
    # the CPU still sorts, once the array is moved there explicitly
    h = fjax.device_put(x, fjax.devices("cpu")[0])
    np.testing.assert_array_equal(jnp.sort(h), [1.0, 2.0, 3.0])


# ---- a real GPU ---------------------------------------------------------------------------------


@needs_real_gpu
def test_real_gpu_runtime_roundtrip():
    rt = cuda_runtime
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    buf = rt.to_device(a)
    np.testing.assert_array_equal(rt.to_host(buf), a)
    src = 'extern "C" __global__ void twice(const float* x, float* y, int n) {\n' + (
        "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i];\n}\n"
    )
    mod = rt.module(src, ("--std=c++17",))
    assert rt.module(src, ("--std=c++17",)) is mod
    out = rt.empty((3, 4), np.float32)
    rt.launch(mod, "twice", (1,), (32,), (buf, out, np.int32(12)))
    np.testing.assert_array_equal(rt.to_host(out), 2 * a)
    c = rt.empty((3, 3), np.float32)
    rt.matmul(buf, rt.to_device(a.T.copy()), c)
    np.testing.assert_allclose(rt.to_host(c), a @ a.T, rtol=1e-5)
    with pytest.raises(rt.CudaCompileError, match="broken"):
        rt.module('extern "C" __global__ void broken() { this is not C++; }', ())
    g = fjax.devices("gpu")[0]
    x = fjax.device_put(a, g)
    assert x.devices() == {g} and g.device_kind
    np.testing.assert_array_equal(np.asarray(x), a)


def test_fake_gpu_digits_mlp_example_device_gpu(fake_gpu):
    """examples/digits_mlp.py's ``train(..., device=gpu)`` (what ``--device gpu`` runs), on the test double."""
    fake, backend = fake_gpu
    examples = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
    sys.path.insert(0, examples)
    try:
        import _common
        import digits_mlp
    finally:
        sys.path.remove(examples)
    from fjax import random, tree_util

    x, y = _common.load_digits()
    x, y = (x[:96] - 8.0) / 8.0, y[:96]
    data = (x[:64], y[:64], x[64:], y[64:])
    g0 = fjax.devices()[1]
    # the keys and the shuffling stay on the host (uncommitted, default device CPU); the model and
    # the batches are committed to the GPU, so the train step and the optimizer run there
    with fjax.default_device(fjax.devices("cpu")[0]):
        model = digits_mlp.init_model(random.PRNGKey(0), (16,))
        model, hist = digits_mlp.train(
            model, data, random.PRNGKey(1), epochs=2, batch_size=32, show_progress=False, device=g0
        )
    leaves = tree_util.tree_leaves(model)
    assert leaves and all(isinstance(v, _placement.GpuArray) and _committed(v, g0) for v in leaves)
    assert all(np.isfinite(hist["train_loss"])) and hist["train_loss"][1] < hist["train_loss"][0]
    assert backend.calls > 0


# ---- the real CUDA backend, its kernels run by the CPU emulator --------------------------------


@pytest.fixture
def emulated_gpu(monkeypatch):
    """One pretend GPU whose kernels are the real ``CudaBackend``'s CUDA C, compiled and run on the
    CPU by ``fjax.backends.cuda.emulate`` (device enumeration from the test double). Nothing runs
    on a GPU; this checks that placement, dispatch and the CUDA backend fit together."""
    emulate = pytest.importorskip("fjax.backends.cuda.emulate")
    if emulate.compiler() is None:
        pytest.skip("no C++ compiler for the CUDA emulator")
    from fjax.backends import dispatch

    fake, emu = FakeRuntime(n_devices=1), emulate.EmulatedRuntime()
    old = fjax.config.jax_platforms
    fjax.config.update("jax_platforms", None)
    for name in ("available", "unavailable_reason", "device_count", "device_kind", "device", "synchronize"):
        monkeypatch.setattr(cuda_runtime, name, getattr(fake, name))
    for name in ("module", "kernel", "launch", "empty", "to_device", "to_host", "matmul"):
        monkeypatch.setattr(cuda_runtime, name, getattr(emu, name))
    dispatch.register_backend("cuda", "fjax.backends.cuda.backend:CudaBackend")
    _devices._reset_platforms()
    _placement._clear()
    _placement.rearm()
    yield
    monkeypatch.undo()
    fjax.config.update("jax_platforms", old)
    uninstall()


def test_emulated_cuda_backend_end_to_end(emulated_gpu):
    g = fjax.devices()[0]
    assert fjax.default_backend() == "gpu"
    rng = np.random.default_rng(0)
    w, xb = rng.standard_normal((4, 3), np.float32), rng.standard_normal((5, 4), np.float32)
    wd, xd = fjax.device_put(w, g), fjax.device_put(xb, g)
    out = _layer(wd, xd)
    assert isinstance(out, _placement.GpuArray) and _committed(out, g)
    np.testing.assert_allclose(np.asarray(out), np.tanh(xb @ w).sum(axis=0), rtol=1e-5)
    with fjax.default_matmul_precision("float32"):  # (a GPU's default is TF32, as JAX's)
        gw = _loss_grad(wd, xd)
    assert isinstance(gw, _placement.GpuArray) and _committed(gw, g)
    np.testing.assert_allclose(np.asarray(gw), xb.T @ (1 - np.tanh(xb @ w) ** 2), rtol=1e-4, atol=1e-5)
    y = jnp.sin(xd) * 2  # eager primitives, each a one-primitive program of the CUDA backend
    assert isinstance(y, _placement.GpuArray)
    np.testing.assert_allclose(np.asarray(y), np.sin(xb) * 2, rtol=1e-5, atol=1e-6)
