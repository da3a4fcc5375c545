"""The CUDA backend on a real GPU: every program of the lowering corpus (``test_cuda_lowering.CORPUS``)
run through ``device_put`` + ``jit`` on the GPU (cupy RawKernels, cuBLAS) against the numba backend
on the CPU; eager primitives on GPU arrays; threefry bits identical to the CPU stream; a primitive
with no CUDA form raises naming it, with no copy to the host. Skips cleanly without cupy or a GPU
(always the case in CI); ``bench/gpu_check.sh`` runs it on the lent GPU machine."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import tree_util
from fjax.backends.cuda import runtime as cuda_runtime

pytestmark = pytest.mark.skipif(not cuda_runtime.available(), reason="needs cupy and a CUDA device")


@pytest.fixture(autouse=True, scope="module")
def _float32_matmuls():
    """Results are compared with the CPU's float32 ones: GEMMs in full float32 here (a GPU's default
    is TF32, as JAX's; tests/test_cuda_precision.py checks that)."""
    with fjax.default_matmul_precision("float32"):
        yield


# float32 tolerance: CUDA's device math is within 1-4 ULP of the correctly rounded result (CUDA C
# Programming Guide, "Mathematical Functions"), numba's vector math within a few ULP too, and the
# GEMMs sum in another order on cuBLAS
TOL32 = dict(rtol=2e-4, atol=2e-5)
TOL64 = dict(rtol=1e-10, atol=1e-12)


def _corpus() -> dict:
    # the same programs as the lowering tests; their module-level arrays are made on the host
    with fjax.default_device(fjax.devices("cpu")[0]):
        from test_cuda_lowering import CORPUS  # noqa: PLC0415

    return CORPUS


def _cpu(x):
    return fjax.device_put(x, fjax.devices("cpu")[0])


def _gpu(x):
    return fjax.device_put(x, fjax.devices("gpu")[0])


def _check(got: list, want: list, name: str) -> None:
    assert len(got) == len(want), name
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (name, g.shape, g.dtype, w.shape, w.dtype)
        if w.dtype.kind in "fc":  # complex64 as float32 (its parts), complex128 as float64
            single = w.dtype in (np.float32, np.complex64)
            np.testing.assert_allclose(g, w, err_msg=name, **(TOL32 if single else TOL64))
        else:
            np.testing.assert_array_equal(g, w, err_msg=name)


def test_gpu_is_the_default_backend():
    g = fjax.devices()[0]
    assert fjax.default_backend() == "gpu" and g.platform == "gpu" and g.device_kind
    x = jnp.arange(4.0)
    assert x.devices() == {g}


@pytest.mark.parametrize("name", sorted(_corpus()))
def test_corpus_on_gpu_matches_numba(name):
    fn, args = _corpus()[name]
    want = tree_util.tree_leaves(fjax.jit(fn)(*tree_util.tree_map(_cpu, args)))
    assert all(w.devices() == set(fjax.devices("cpu")[:1]) for w in want)
    out = fjax.jit(fn)(*tree_util.tree_map(_gpu, args))
    got = tree_util.tree_leaves(out)
    g0 = fjax.devices("gpu")[0]
    assert all(o.devices() == {g0} for o in got), name  # results stay on the GPU
    _check(got, want, name)


def test_threefry_bits_identical_on_gpu():
    k = fjax.random.PRNGKey(7)
    f = fjax.jit(lambda k: (fjax.random.bits(k, (4097,)), fjax.random.normal(k, (1000,))))
    want = f(_cpu(k))
    got = f(_gpu(k))
    np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]))
    np.testing.assert_allclose(np.asarray(got[1]), np.asarray(want[1]), rtol=1e-5, atol=1e-6)


def test_eager_ops_and_transforms_on_gpu():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 33)).astype(np.float32)
    x = _gpu(a)
    y = jnp.tanh(x) * 2 + x.sum(axis=0)
    np.testing.assert_allclose(np.asarray(y), np.tanh(a) * 2 + a.sum(axis=0), **TOL32)
    g = fjax.grad(lambda v: jnp.sum(jnp.sin(v) ** 2))(x)
    np.testing.assert_allclose(np.asarray(g), 2 * np.sin(a) * np.cos(a), **TOL32)
    v = fjax.vmap(lambda r: r @ r)(x)
    np.testing.assert_allclose(np.asarray(v), (a * a).sum(axis=1), rtol=1e-4)


def test_large_elementwise_and_reduction():
    rng = np.random.default_rng(2)
    a = rng.standard_normal(1 << 22).astype(np.float32)
    f = fjax.jit(lambda x: (jnp.tanh(x) * jnp.exp(-x * x) + jnp.sin(x) * 0.5, jnp.sum(x * x), jnp.max(x)))
    y, s, m = f(_gpu(a))
    np.testing.assert_allclose(np.asarray(y), np.tanh(a) * np.exp(-a * a) + np.sin(a) * 0.5, **TOL32)
    np.testing.assert_allclose(float(s), float((a.astype(np.float64) ** 2).sum()), rtol=1e-4)
    assert float(m) == a.max()


def test_unsupported_primitive_names_it_and_stays_on_gpu():
    # FFTs run on cuFFT since session 10; the Schur decomposition has no CUDA form (the lowering
    # tests' UNSUPPORTED)
    x = _gpu(np.arange(16, dtype=np.float32).reshape(4, 4))
    with pytest.raises(NotImplementedError, match="schur"):
        fjax.jit(lambda v: fjax.scipy.linalg.schur(v))(x)
    assert x.devices() == {fjax.devices("gpu")[0]}


def test_repeated_calls_replay_a_cuda_graph():
    """From the second call on, a plan with enough launches runs as one CUDA graph
    (``runtime.capture_graph``): a training loop feeding each step's parameters to the next, with
    new data each step, gives the CPU's numbers at every step."""
    with _captures() as captured:
        _repeated_calls()
    assert captured and all(captured), captured  # graphs were captured (and replayed from then on)


@contextlib.contextmanager
def _captures():
    """The graphs ``runtime.capture_graph`` returns inside the block (None for a failed capture)."""
    captured: list = []
    real = cuda_runtime.capture_graph

    def spy(run, args):
        g = real(run, args)
        captured.append(g)
        return g

    cuda_runtime.capture_graph = spy
    try:
        yield captured
    finally:
        cuda_runtime.capture_graph = real


def _repeated_calls():
    fn, (params, x, y) = _corpus()["mlp_step"]
    step = fjax.jit(fn)
    rng = np.random.default_rng(3)
    pc, pg = tree_util.tree_map(_cpu, params), tree_util.tree_map(_gpu, params)
    for _ in range(5):
        xb = rng.standard_normal(x.shape).astype(np.float32)
        lc, pc = step(pc, _cpu(xb), _cpu(y))
        lg, pg = step(pg, _gpu(xb), _gpu(y))
        np.testing.assert_allclose(float(lg), float(lc), rtol=1e-4)
    _check(tree_util.tree_leaves(pg), tree_util.tree_leaves(pc), "mlp_step x5")
    # a scan (the RNN and its gradient) replayed with new inputs
    fn, (w, h0, xs) = _corpus()["rnn_grad"]
    f = fjax.jit(fn)
    for i in range(4):
        xsi = (xs * (1 + 0.1 * i)).astype(np.float32)
        _check([f(_gpu(w), _gpu(h0), _gpu(xsi))], [f(_cpu(w), _cpu(h0), _cpu(xsi))], f"rnn_grad call {i}")


@pytest.mark.parametrize("name", ["bfloat16", "float16"])
def test_half_precision_training_step_on_gpu(name):
    """A 16-bit MLP step on the GPU (bfloat16 as uint16 cupy buffers, float32 products through
    cuBLAS's Ex GEMM, softmax cross-entropy, 16-bit SGD update), three calls (the last replays a
    graph), against the same step on the CPU; and the dtype and bits survive the round trip."""
    import ml_dtypes  # noqa: PLC0415

    dt = np.dtype(getattr(ml_dtypes, name, None) or name)
    rng = np.random.default_rng(5)
    w1 = (rng.standard_normal((64, 32)) / 8).astype(dt)
    w2 = (rng.standard_normal((32, 10)) / 6).astype(dt)
    x = rng.standard_normal((128, 64)).astype(dt)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)]

    def step(p, x, y):
        def loss(p):
            h = jnp.tanh(jnp.dot(x, p[0], preferred_element_type=jnp.float32)).astype(dt)
            lg = jnp.dot(h, p[1], preferred_element_type=jnp.float32)
            return -jnp.mean(jnp.sum(y * fjax.nn.log_softmax(lg), axis=1))

        v, g = fjax.value_and_grad(loss)(p)
        return v, [(a - 0.1 * b).astype(dt) for a, b in zip(p, g)]

    js = fjax.jit(step)
    pg, pc = [_gpu(w1), _gpu(w2)], [_cpu(w1), _cpu(w2)]
    assert pg[0].dtype == dt
    np.testing.assert_array_equal(np.asarray(pg[0]).view(np.uint16), w1.view(np.uint16))
    for _ in range(3):
        vg, pg = js(pg, _gpu(x), _gpu(y))
        vc, pc = js(pc, _cpu(x), _cpu(y))
        assert pg[0].dtype == dt and pg[0].devices() == {fjax.devices("gpu")[0]}
        np.testing.assert_allclose(float(vg), float(vc), rtol=2e-2)
        for g, c in zip(pg, pc):
            np.testing.assert_allclose(np.asarray(g, np.float32), np.asarray(c, np.float32), rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_one_axis_ffts_replay_in_a_cuda_graph(dt):
    """One-axis FFTs run on fjax's own cuFFT plans (``fft_exec``) and are captured in a CUDA graph:
    the power spectrum and its gradient (RFFT, then the transpose's C2C FFT), an IFFT and an IRFFT
    (both scaled by 1/n after cuFFT) over five calls with new data, against the CPU each call; the
    IRFFT's operand is left intact (cuFFT's C2R may overwrite its input)."""

    def f(x):
        v, g = fjax.value_and_grad(lambda s: jnp.sum(jnp.log1p(jnp.abs(jnp.fft.rfft(s, axis=-1)) ** 2)))(x)
        r = jnp.fft.rfft(x * 0.5)
        return v, g, jnp.fft.irfft(r, n=x.shape[-1]), jnp.fft.ifft(r), r

    rng = np.random.default_rng(11)
    ctx = fjax.enable_x64() if dt == np.float64 else fjax.default_device(fjax.devices("gpu")[0])
    with _captures() as captured, ctx:
        jf = fjax.jit(f)
        for i in range(5):
            x = rng.standard_normal((8, 96)).astype(dt)
            got, want = jf(_gpu(x)), jf(_cpu(x))
            _check(tree_util.tree_leaves(got), tree_util.tree_leaves(want), f"fft graph call {i}")
            np.testing.assert_allclose(np.asarray(got[2]), x * 0.5, rtol=1e-4, atol=1e-5)
    assert captured and all(captured), captured
