"""``lax.fft`` / ``jnp.fft`` on the CUDA backend (``fjax/backends/cuda/fft_ops.py``: an ``Fft``
plan record the runtime runs on cuFFT plans of its own, ``fft_exec``, or through ``cupy.fft``)
and complex GEMMs (``runtime.matmul``: cuBLAS's cgemm/zgemm), run on the cupy stand-in: its cuFFT
is numpy's pocketfft in the operand's precision, its cuBLAS numpy over the raw pointers cuBLAS
would get. Results are compared with the CPU backend (scipy's pocketfft) and numpy: every
transform type, one to three axes with batches, odd and even lengths, both precisions, empty
transforms, FFTs inside scan/while/cond bodies, and CUDA graphs of one-axis FFTs (``fft_exec``'s
plans). Nothing here ran on a real GPU."""

from __future__ import annotations

import shutil
import subprocess
from types import SimpleNamespace

import _standin_gpu  # noqa: E402  (tests/ is on the path)
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.backends.cuda import emulate, fft_ops
from fjax.backends.cuda.records import Alloc, Fft, MatMul, Plan

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")


@pytest.fixture(scope="module", autouse=True)
def standin_gpu():
    with _standin_gpu.installed() as cs:
        yield cs


_both = _standin_gpu.both
_SINGLE = (np.float32, np.complex64)


def _close(got, want, single: bool) -> None:
    """FFT outputs agree to a tolerance relative to the largest magnitude of the result (an FFT's
    rounding error scales with the norm of its input, not with each output)."""
    for g, w in zip(fjax.tree_util.tree_leaves(got), fjax.tree_util.tree_leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        scale = float(np.max(np.abs(w))) if w.size else 1.0
        rtol, atol = (2e-6, 2e-6 * scale) if single else (1e-13, 1e-13 * scale)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def _complex(rng, shape, dt):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)


# (operand shape, fft_lengths): one to three transformed axes, batches, odd and even lengths
_CASES = [((5, 8), (8,)), ((7,), (7,)), ((3, 4, 6), (4, 6)), ((2, 3, 5, 4), (3, 5, 4)), ((1, 1), (1,))]


@pytest.mark.parametrize("shape,lengths", _CASES)
@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_fft_and_ifft_match_cpu(shape, lengths, dt):
    x = _complex(np.random.default_rng(0), shape, dt)
    f = lambda x: (lax.fft(x, "fft", lengths), lax.fft(x, "ifft", lengths))  # noqa: E731
    got, want = _both(f, x, x64=dt == np.complex128)
    _close(got, want, dt in _SINGLE)
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    _close(got, (np.fft.fftn(x, axes=axes).astype(dt), np.fft.ifftn(x, axes=axes).astype(dt)), dt in _SINGLE)


@pytest.mark.parametrize("shape,lengths", _CASES)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_rfft_and_irfft_match_cpu(shape, lengths, dt):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(dt)
    cdt = np.complex64 if dt == np.float32 else np.complex128
    half = shape[:-1] + (lengths[-1] // 2 + 1,)
    # not Hermitian: the stand-in (pocketfft) reads it as the CPU does; cuFFT may not (fft_ops)
    y = _complex(rng, half, cdt)
    f = lambda x, y: (lax.fft(x, "rfft", lengths), lax.fft(y, "irfft", lengths))  # noqa: E731
    got, want = _both(f, x, y, x64=dt == np.float64)
    assert got[0].dtype == cdt and got[1].dtype == dt
    _close(got, want, dt == np.float32)


def test_jnp_fft_functions_on_gpu_arrays():
    """What users call: jnp.fft's transforms of GPU arrays stay on the GPU and single precision."""
    rng = np.random.default_rng(2)
    z = _complex(rng, (4, 6, 10), np.complex64)
    r = rng.standard_normal((4, 6, 10)).astype(np.float32)
    h = _complex(rng, (4, 6, 6), np.complex64)

    def f(z, r, h):
        fft = jnp.fft
        return (
            fft.fft(z), fft.ifft(z), fft.fftn(z), fft.ifftn(z), fft.fft2(z), fft.ifft2(z),
            fft.rfft(r), fft.rfftn(r), fft.rfft2(r), fft.irfft(h), fft.irfftn(h), fft.irfft2(h),
        )  # fmt: skip

    got, want = _both(f, z, r, h)
    assert all(g.dtype in (np.complex64, np.float32) for g in got)
    _close(got, want, True)
    ref = (
        np.fft.fft(z), np.fft.ifft(z), np.fft.fftn(z), np.fft.ifftn(z), np.fft.fft2(z), np.fft.ifft2(z),
        np.fft.rfft(r), np.fft.rfftn(r), np.fft.rfft2(r), np.fft.irfft(h), np.fft.irfftn(h), np.fft.irfft2(h),
    )  # fmt: skip
    _close(got, tuple(np.asarray(a, g.dtype) for a, g in zip(ref, got)), True)


@given(
    batch=st.lists(st.integers(1, 3), max_size=2),
    lengths=st.lists(st.integers(1, 9), min_size=1, max_size=3),
    kind=st.sampled_from(["fft", "ifft", "rfft", "irfft"]),
    x64=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_fft_hypothesis(batch, lengths, kind, x64, seed):
    rng = np.random.default_rng(seed)
    lengths = tuple(lengths)
    shape = tuple(batch) + lengths
    if kind == "irfft":
        shape = shape[:-1] + (lengths[-1] // 2 + 1,)
    if kind == "rfft":
        x = rng.standard_normal(shape).astype(np.float64 if x64 else np.float32)
    else:
        x = _complex(rng, shape, np.complex128 if x64 else np.complex64)
    got, want = _both(lambda x: lax.fft(x, kind, lengths), x, x64=x64)
    _close(got, want, not x64)


@pytest.mark.parametrize(
    "kind,shape,lengths,dt",
    [
        ("rfft", (3, 0), (0,), np.float32),  # one (zero) bin per line from nothing
        ("rfft", (2, 0, 4), (0, 4), np.float32),  # an empty output
        ("fft", (0, 8), (8,), np.complex64),  # no lines
        ("irfft", (2, 1), (0,), np.complex64),  # a real output of length 0
    ],
)
def test_empty_transforms(kind, shape, lengths, dt):
    x = np.zeros(shape, dt)
    got, want = _both(lambda x: lax.fft(x, kind, lengths), x)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)  # zeros (an unwritten buffer holds 0xA5 bytes)


def test_fft_inside_scan_while_and_cond():
    """FFT steps in loop and branch bodies (the Loop/Branch records' sub-plans), with real carries
    (the spectra inside the bodies complex) and a complex one."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 8)).astype(np.float32)
    xs = rng.standard_normal((5, 3, 8)).astype(np.float32)
    smooth = lambda c: lax.fft(lax.fft(c, "rfft", (8,)), "irfft", (8,)) * 0.5 + 1.0  # noqa: E731

    def f(x, xs, p, z):
        a = lax.fori_loop(0, 3, lambda i, c: smooth(c), x)  # a scan
        a2 = lax.fori_loop(0, 3, lambda i, c: lax.fft(c, "fft", (8,)) * 0.25, z)  # a complex carry
        b = lax.while_loop(lambda s: s[0] < 2, lambda s: (s[0] + 1, smooth(s[1])), (0, x))[1]
        c = lax.cond(p, smooth, lambda x: x * 2.0, x)
        d = lax.scan(lambda c, x: (smooth(c + x), lax.fft(x * c, "rfft", (8,))), x, xs)
        return a, a2, b, c, d

    z = _complex(rng, (3, 8), np.complex64)
    for p in (True, False):
        got, want = _both(f, x, xs, np.bool_(p), z)
        _close(got, want, True)
    ref = x
    for _ in range(3):
        ref = np.fft.irfft(np.fft.rfft(ref)) * 0.5 + 1.0
    _close(got[0], ref.astype(np.float32), True)
    _close(got[1], (np.fft.fft(np.fft.fft(np.fft.fft(z))) / 64).astype(np.complex64), True)


def test_one_axis_ffts_are_captured_and_replayed(standin_gpu, monkeypatch):
    """A program with one-axis FFTs is captured as a CUDA graph (fjax's own cuFFT plans,
    ``fft_exec``) and its replays give every transform type's result for new inputs; the plans
    are made before the capture (the stand-in raises for one made on a capturing stream) and the
    graph keeps them; an FFT over two axes keeps the program launch by launch, and
    FJAX_CUDA_FFT_GRAPHS=0 turns the capture off."""
    from fjax.backends.cuda import executor, fft_exec

    monkeypatch.setattr(executor, "GRAPH_MIN_STEPS", 1)
    rng = np.random.default_rng(4)
    gpu = fjax.devices("gpu")[0]

    def one_axis(x, z):
        r = lax.fft(x * 3.0, "rfft", (16,))
        return (
            r,
            lax.fft(r, "irfft", (16,)) + 1.0,
            lax.fft(z, "fft", (16,)),
            lax.fft(z * 2.0, "ifft", (16,)),
            jnp.sum(jnp.cos(x), axis=1),
        )

    def two_axes(x, z):
        return (lax.fft(z, "fft", (4, 16)), jnp.sin(x))

    def want(x, z):
        r = np.fft.rfft(x * 3.0)
        return (r, np.fft.irfft(r, 16) + 1.0, np.fft.fft(z), np.fft.ifft(z * 2.0), np.sum(np.cos(x), axis=1))

    for fn, captured in ((one_axis, True), (two_axes, False)):
        f = fjax.jit(fn)
        standin_gpu.calls.clear()
        for _ in range(4):
            x = rng.standard_normal((4, 16)).astype(np.float32)
            z = _complex(rng, (4, 16), np.complex64)
            outs = f(fjax.device_put(x, gpu), fjax.device_put(z, gpu))
            if fn is one_axis:
                for g, w in zip(outs, want(x, z)):
                    _close(g, w.astype(np.asarray(g).dtype), True)
        assert (standin_gpu.calls["graph launch"] > 0) == captured, dict(standin_gpu.calls)
        if captured:
            # rfft, irfft and one C2C plan for fft and ifft, made by the first call (launch by
            # launch) and again for the capture's stream (plans are per stream), then no more
            assert standin_gpu.calls["fft plan"] == 6, dict(standin_gpu.calls)
            ex = next(iter(_executors(f)))
            assert len(ex._graph.keep) == 4 and fft_exec.plan_count() >= 3

    monkeypatch.setenv("FJAX_CUDA_FFT_GRAPHS", "0")
    f = fjax.jit(lambda x, z: one_axis(x, z)[:4])
    standin_gpu.calls.clear()
    for _ in range(3):
        f(fjax.device_put(x, gpu), fjax.device_put(z, gpu))
    assert standin_gpu.calls["graph launch"] == 0, dict(standin_gpu.calls)


def _executors(f):
    """The CUDA executors a jitted function's compiled programs hold (found through the garbage
    collector: a test's view, not an API)."""
    import gc

    from fjax.backends.cuda.executor import Executor

    return [o for o in gc.get_objects() if isinstance(o, Executor) and o._graph]


def test_a_graph_keeps_its_plans_when_the_cache_evicts_them(standin_gpu, monkeypatch):
    """With a plan cache of one, two captured programs of different lengths evict each other's
    plans from the cache; each graph still holds its own, and replays stay right. An IRFFT leaves
    its operand intact (cuFFT's C2R may overwrite its input; the stand-in scribbles NaN on it)."""
    from fjax.backends.cuda import executor, fft_exec

    monkeypatch.setattr(executor, "GRAPH_MIN_STEPS", 1)
    monkeypatch.setattr(fft_exec, "MAX_PLANS", 1)
    rng = np.random.default_rng(5)
    gpu = fjax.devices("gpu")[0]
    fs = {n: fjax.jit(lambda s, n=n: (lax.fft(s, "irfft", (n,)), s * 2.0)) for n in (8, 12)}
    for _ in range(3):
        for n, f in fs.items():
            s = _complex(rng, (3, n // 2 + 1), np.complex64)
            s[:, 0] = s[:, 0].real  # a spectrum of real data: real DC (and Nyquist) bins
            if n % 2 == 0:
                s[:, -1] = s[:, -1].real
            y, s2 = f(fjax.device_put(s, gpu))
            _close(y, np.fft.irfft(s, n).astype(np.float32), True)
            _close(s2, s * 2, True)
    assert fft_exec.plan_count() == 1
    assert standin_gpu.calls["graph launch"] > 0


def test_graph_steps_counts_one_axis_ffts():
    from fjax.backends.cuda.executor import graph_steps
    from fjax.backends.cuda.records import Loop

    c64 = np.dtype(np.complex64)
    fft = Fft("o", "x", 0, (8,), (8,), c64, c64)
    body = Plan(["x"], ["o"], [Alloc("o", (8,), c64), fft])
    assert graph_steps(body) == 1
    assert graph_steps(Plan(["c"], ["c2"], [Loop("scan", [], ["x"], [], body, ["c2"], length=4)])) == 4
    fft2 = Fft("o", "x", 0, (2, 8), (2, 8), c64, c64)
    body2 = Plan(["x"], ["o"], [Alloc("o", (2, 8), c64), fft2])
    assert graph_steps(body2) is None
    assert graph_steps(Plan(["c"], ["c2"], [Loop("scan", [], ["x"], [], body2, ["c2"], length=4)])) is None
    assert "cufft FFT x: complex64[8]" in repr(fft)


def test_unsupported_dtypes_name_fft_and_the_dtype():
    a = lambda shape, dt: SimpleNamespace(shape=shape, dtype=np.dtype(dt))  # noqa: E731
    cases = [
        (2, a((8,), np.float16), a((5,), np.complex64), "float16"),
        (0, a((8,), np.float32), a((8,), np.float32), "float32"),
        (3, a((5,), np.complex64), a((8,), np.float16), "float16"),
        (1, a((8,), np.int32), a((8,), np.int32), "int32"),
    ]
    for kind, x, o, name in cases:
        with pytest.raises(NotImplementedError, match=rf"fft .*{name}"):
            fft_ops.render({"fft_type": kind, "fft_lengths": (8,)}, [x], [o], ["x"], ["o"], None)


def test_lowering_text_compiles_with_nvcc(tmp_path):
    f = lambda x, z: (lax.fft(x, "rfft", (16,)), lax.fft(z, "irfft", (4, 0)), lax.fft(x[:, :0], "rfft", (0,)))  # noqa: E731
    x, z = np.ones((3, 16), np.float32), np.ones((4, 1), np.complex64)
    src = fjax.jit(f).trace(x, z).lower(lowering_platforms=("cuda",)).as_text()
    assert "cufft RFFT" in src and "zeros" in src, src[-800:]
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not installed")
    cu = tmp_path / "fft.cu"
    cu.write_text(src)
    r = subprocess.run(["nvcc", "-arch=sm_80", "-c", str(cu), "-o", str(tmp_path / "fft.o")], capture_output=True)
    assert r.returncode == 0, r.stderr.decode()[-3000:]


# ---------------------------------------------------------------------------------------------
# complex GEMMs: cuBLAS's cgemm/zgemm through ctypes, as the real-valued ones


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_complex_gemms_go_through_cublas(standin_gpu, dt):
    from fjax.backends.cuda import runtime

    rng = np.random.default_rng(5)
    cp = standin_gpu
    a, b = _complex(rng, (3, 5, 4), dt), _complex(rng, (3, 4, 6), dt)
    single = dt == np.complex64
    tol = dict(rtol=2e-5, atol=2e-5) if single else dict(rtol=1e-12, atol=1e-12)
    ga, gb = cp.asarray(a), cp.asarray(b)
    cases = [
        (ga, gb, a @ b),  # batched
        (ga[0], gb[0], a[0] @ b[0]),  # one GEMM
        (cp.asarray(np.swapaxes(a, 1, 2).copy()).transpose(0, 2, 1), gb, a @ b),  # lhs stored transposed
        (ga, cp.asarray(np.swapaxes(b, 1, 2).copy()).transpose(0, 2, 1), a @ b),  # rhs stored transposed
    ]
    for x, y, want in cases:
        cp.calls.clear()
        out = cp.empty(want.shape, dt)
        runtime.matmul(x, y, out)
        assert cp.calls[f"gemm {np.dtype(dt).name}"] == 1 and cp.calls["cupy.matmul"] == 0, dict(cp.calls)
        np.testing.assert_allclose(np.asarray(out), want, **tol)


def test_complex_matmul_record_through_the_executor(standin_gpu, monkeypatch):
    """A MatMul record of complex64 (what dot_general lowers to once complex dtypes reach the CUDA
    lowering) run by the executor; with cuBLASLt enabled it falls back to cuBLAS's cgemm."""
    from fjax.backends.cuda import cublaslt, runtime
    from fjax.backends.cuda.executor import Executor
    from fjax.backends.cuda.plan import Module

    monkeypatch.setenv("FJAX_CUDA_CUBLASLT", "1")
    rng = np.random.default_rng(6)
    a, b = _complex(rng, (2, 3, 5), np.complex64), _complex(rng, (2, 4, 5), np.complex64)
    # out[n] = a[n] @ b[n]^T: the rhs read transposed (a view), as dot_general's rhs_t
    mm = MatMul("o", "a", "b", (2, 3, 5, 4), None, None, False, True, (2, 3, 4), np.dtype(np.complex64))
    plan = Plan(["a", "b"], ["o"], [mm])
    ex = Executor(plan, Module(), runtime)
    cp = standin_gpu
    cp.calls.clear()
    (out,) = ex(cp.asarray(a), cp.asarray(b))
    assert cp.calls["gemm complex64"] == 1 and not cublaslt._choices, dict(cp.calls)
    np.testing.assert_allclose(np.asarray(out), a @ np.swapaxes(b, 1, 2), rtol=2e-5, atol=2e-5)


# ---------------------------------------------------------------------------------------------
# end to end, with the complex elementwise kernels around the FFTs (complex_ops.py)


def test_power_spectrum_gradients_and_norms():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 16)).astype(np.float32)
    w = rng.standard_normal(16).astype(np.float32)
    z = _complex(rng, (3, 8, 6), np.complex64)

    def f(x, w, z):
        power = jnp.abs(jnp.fft.rfft(x)) ** 2
        g_power = fjax.grad(lambda x: jnp.sum(jnp.abs(jnp.fft.rfft(x)) ** 2))(x)  # Parseval: 2 N x, mostly
        g_filter = fjax.grad(lambda x: jnp.sum(jnp.fft.irfft(jnp.fft.rfft(x) * 0.5j) * w))(x)
        return (
            power,
            g_power,
            g_filter,
            jnp.fft.fft(x),  # real input: converted to complex64 on the device
            jnp.fft.fft(z, axis=1, norm="ortho"),  # a middle axis (moved) and a scale
            jnp.fft.ifft2(z, s=(10, 4), axes=(0, 2)),  # padded and cropped
            jnp.fft.irfft(z, n=9),  # odd output length: the half spectrum cropped
            fjax.vmap(lambda r: jnp.fft.rfft(r * r))(x),
        )

    got, want = _both(f, x, w, z)
    _close(got, want, True)
    ref = np.abs(np.fft.rfft(x)) ** 2
    _close(got[0], ref.astype(np.float32), True)
    _close(got[4], np.fft.fft(z, axis=1, norm="ortho").astype(np.complex64), True)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_complex_dot_general_on_the_gpu(standin_gpu, dt):
    rng = np.random.default_rng(8)
    a, b = _complex(rng, (2, 6, 20), dt), _complex(rng, (2, 20, 30), dt)
    f = lambda a, b: (a @ b, jnp.einsum("bij,bkj->bik", a, jnp.swapaxes(b, 1, 2)), jnp.conj(a[0]) @ b[1])  # noqa: E731
    standin_gpu.calls.clear()
    got, want = _both(f, a, b, x64=dt == np.complex128)
    assert standin_gpu.calls[f"gemm {np.dtype(dt).name}"] >= 3, dict(standin_gpu.calls)
    tol = dict(rtol=2e-5, atol=2e-5) if dt == np.complex64 else dict(rtol=1e-12, atol=1e-12)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == dt
        np.testing.assert_allclose(g, w, **tol)
    np.testing.assert_allclose(got[0], a @ b, **tol)


def test_complex_gemms_in_a_replayed_cuda_graph(standin_gpu, monkeypatch):
    """cgemm through ctypes is captured with the plan's launches; replays with new inputs agree."""
    from fjax.backends.cuda import executor

    monkeypatch.setattr(executor, "GRAPH_MIN_STEPS", 1)
    rng = np.random.default_rng(9)
    f = fjax.jit(lambda a, b: (jnp.conj(a) @ b) * 2.0 + 1.0)
    gpu = fjax.devices("gpu")[0]
    standin_gpu.calls.clear()
    for _ in range(4):
        a, b = _complex(rng, (5, 20), np.complex64), _complex(rng, (20, 7), np.complex64)
        got = np.asarray(f(fjax.device_put(a, gpu), fjax.device_put(b, gpu)))
        np.testing.assert_allclose(got, (np.conj(a) @ b) * 2 + 1, rtol=2e-5, atol=2e-5)
    assert standin_gpu.calls["graph launch"] >= 2, dict(standin_gpu.calls)


def test_plans_are_per_stream(standin_gpu):
    """Transforms on two streams never share a plan (its work area): one plan per stream."""
    from fjax.backends.cuda import fft_exec, runtime

    cp = standin_gpu
    x = cp.asarray(np.random.default_rng(6).standard_normal((3, 10)).astype(np.float32))
    out = cp.empty((3, 6), np.complex64)
    before = fft_exec.plan_count()
    runtime.fft(x, out, 2, (10,))
    with cp.cuda.Stream(non_blocking=True):
        runtime.fft(x, out, 2, (10,))
    runtime.fft(x, out, 2, (10,))
    assert fft_exec.plan_count() == before + 2
    _close(out.get(), np.fft.rfft(np.asarray(x)).astype(np.complex64), True)
