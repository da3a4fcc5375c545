"""GEMMs through cuBLASLt with a measured algorithm (``FJAX_CUDA_CUBLASLT=1``,
``fjax/backends/cuda/cublaslt.py``), run against the cupy stand-in and its cuBLASLt stand-in
(``cublaslt_standin.py``: the documented semantics in numpy, a layout check that refuses an
inconsistent problem, one algorithm that computes a wrong product and one that is unsupported).

What this shows without a GPU: the column-major problem handed to cuBLASLt (operations, layouts,
leading dimensions, batch strides) is the one cuBLAS gets, for every operand layout a program
produces; the tuner keeps the fastest algorithm whose product agrees with cuBLAS's and never a
wrong one; the choice is reused by captured CUDA graphs; unaligned buffers and a missing library
fall back to cuBLAS. Whether it is faster on a GPU is for ``bench/gpu_check.sh`` to measure."""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax.backends.cuda import emulate

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")


@pytest.fixture
def lt(monkeypatch):
    import _standin_gpu  # noqa: PLC0415

    from fjax.backends.cuda import cublaslt_standin, cupy_standin

    monkeypatch.setenv("FJAX_CUDA_CUBLASLT", "1")
    with _standin_gpu.installed():
        cublaslt_standin.calls.clear()
        cublaslt_standin.delays.clear()
        cupy_standin.calls.clear()
        try:
            yield cublaslt_standin
        finally:
            cublaslt_standin.delays.clear()


def _gpu(x):
    return fjax.device_put(x, fjax.devices("gpu")[0])


def _mlp_grad(p, x, y):
    def loss(p):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        return jnp.mean((h @ p["w2"] - y) ** 2)

    return fjax.grad(loss)(p)


def _params(rng, dt):
    return {
        "w1": rng.standard_normal((24, 40)).astype(dt),
        "b1": rng.standard_normal(40).astype(dt),
        "w2": rng.standard_normal((40, 20)).astype(dt),
    }


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_gradient_gemms_in_every_layout_match_the_cpu(lt, dt):
    """An MLP gradient (GEMMs with the left, the right and both operands transposed) and a batched
    product: through cuBLASLt, equal to the CPU's numbers."""
    rng = np.random.default_rng(0)
    p, x, y = _params(rng, dt), rng.standard_normal((32, 24)).astype(dt), rng.standard_normal((32, 20)).astype(dt)
    x64 = fjax.enable_x64() if dt == np.float64 else contextlib.nullcontext()
    with x64, fjax.default_matmul_precision("float32"):
        with fjax.default_device(fjax.devices("cpu")[0]):
            want = _mlp_grad(p, x, y)
        got = fjax.jit(_mlp_grad)(_gpu(p), _gpu(x), _gpu(y))
        assert got["w1"].dtype == dt
    tol = 1e-4 if dt == np.float32 else 1e-10
    for k in want:
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=tol, atol=tol)
    assert lt.calls["heuristic"] >= 3  # every GEMM layout was described to cuBLASLt ...
    assert lt.calls["matmul"] > 0  # ... and ran there


def test_batched_products_go_through_cublaslt(lt):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((5, 7, 24)).astype(np.float32), rng.standard_normal((5, 24, 3)).astype(np.float32)
    f = fjax.jit(lambda a, b: jnp.einsum("bij,bjk->bik", a, b) * 2.0)
    with fjax.default_matmul_precision("float32"):
        got = np.asarray(f(_gpu(a), _gpu(b)))
    np.testing.assert_allclose(got, 2 * np.einsum("bij,bjk->bik", a, b), rtol=1e-5, atol=1e-5)
    assert lt.calls["heuristic"] == 1 and lt.calls["matmul"] > 0


def test_the_fastest_agreeing_algorithm_is_kept_and_a_wrong_one_never(lt):
    """Algorithm ALGO0+2 computes a wrong product: rejected (said once) even though it is the
    fastest; of the correct ones the faster (ALGO0+1 here) is used by every later call."""
    lt.delays.update({lt.ALGO0: 0.004, lt.ALGO0 + 1: 0.0005, lt.ALGO0 + 2: 0.0})
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((16, 32)).astype(np.float32), rng.standard_normal((32, 12)).astype(np.float32)
    f = fjax.jit(lambda a, b: a @ b)
    with warnings.catch_warnings(record=True) as w, fjax.default_matmul_precision("float32"):
        warnings.simplefilter("always")
        got = np.asarray(f(_gpu(a), _gpu(b)))
        np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)
        lt.calls.clear()
        for _ in range(3):  # (the second call captures a graph, the third replays it)
            b2 = rng.standard_normal((32, 12)).astype(np.float32)
            np.testing.assert_allclose(np.asarray(f(_gpu(a), _gpu(b2))), a @ b2, rtol=1e-5, atol=1e-5)
    assert any("disagreed with cuBLAS" in str(x.message) for x in w)
    assert lt.calls[f"matmul {lt.ALGO0 + 1}"] >= 2
    assert lt.calls[f"matmul {lt.ALGO0}"] == lt.calls[f"matmul {lt.ALGO0 + 2}"] == 0


def test_tf32_compute_type_reaches_cublaslt(lt):
    """At default precision a float32 GEMM asks cuBLASLt for TF32 compute, as the cuBLAS path
    does: the product equals numpy's on TF32-rounded operands, not the float32 one."""
    from fjax.backends.cuda.emulate import round_operand

    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((16, 64)).astype(np.float32), rng.standard_normal((64, 8)).astype(np.float32)
    got = np.asarray(fjax.jit(lambda a, b: a @ b)(_gpu(a), _gpu(b)))
    tf32 = round_operand(a, "tf32") @ round_operand(b, "tf32")
    np.testing.assert_allclose(got, tf32, rtol=1e-6, atol=1e-6)
    assert np.abs(got - a @ b).max() > 1e-4
    assert lt.calls["matmul"] > 0


def test_unaligned_operands_use_cublas(lt):
    """A GEMM on a view 4 bytes into its buffer (not 16-byte aligned) is cuBLAS's."""
    from fjax.backends.cuda import runtime

    cp = runtime._cupy()
    a = cp.asarray(np.arange(1 + 6 * 4, dtype=np.float32))[1:].reshape(6, 4)
    b = cp.asarray(np.ones((4, 3), np.float32))
    out = cp.empty((6, 3), np.float32)
    runtime.matmul(a, b, out)
    np.testing.assert_allclose(cp.asnumpy(out), cp.asnumpy(a) @ np.ones((4, 3)), rtol=1e-6)
    assert lt.calls["heuristic"] == 0 and lt.calls["matmul"] == 0


def test_a_missing_library_is_said_once_and_cublas_computes(lt):
    from fjax.backends.cuda import cublaslt

    cublaslt._lib[:] = [None]
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((8, 32)).astype(np.float32), rng.standard_normal((32, 8)).astype(np.float32)
    with warnings.catch_warnings(record=True) as w, fjax.default_matmul_precision("float32"):
        warnings.simplefilter("always")
        for _ in range(2):
            np.testing.assert_allclose(
                np.asarray(fjax.jit(lambda a, b: a @ b + 1.0)(_gpu(a), _gpu(b))), a @ b + 1, rtol=1e-5
            )
    assert sum("libcublasLt could not be loaded" in str(x.message) for x in w) == 1


def test_off_by_default(lt, monkeypatch):
    monkeypatch.delenv("FJAX_CUDA_CUBLASLT")
    a = np.ones((32, 32), np.float32)
    np.asarray(fjax.jit(lambda a: a @ a)(_gpu(a)))
    assert lt.calls["heuristic"] == 0
