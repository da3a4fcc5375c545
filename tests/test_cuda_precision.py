"""Matmul precision on the CUDA backend, as JAX's GPU backend reads it: a float32 ``dot_general``
with no ``precision`` (or ``DEFAULT``/``HIGH``) runs on TF32 tensor cores, ``HIGHEST`` /
``jax.default_matmul_precision("float32")`` / ``F32_F32_F32`` in full float32; the CPU computes
float32 in full whatever is asked (as JAX's CPU backend). Checked on the lowering text, the CPU
emulator and the CPU stand-in of cupy (whose cuBLAS rounds TF32 operands as the tensor cores do);
on a real GPU by ``test_tf32_on_a_real_gpu``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.backends.cuda import emulate
from fjax.backends.cuda import runtime as cuda_runtime
from fjax.backends.cuda.records import gemm_compute

P = lax.Precision


def test_gemm_compute_follows_jax_precision_rules():
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    assert gemm_compute(None, f32) == "tf32"
    assert gemm_compute((P.DEFAULT, P.DEFAULT), f32) == "tf32"
    assert gemm_compute((P.HIGH, P.HIGH), f32) == "tf32"
    assert gemm_compute((P.HIGHEST, P.HIGHEST), f32) == ""
    assert gemm_compute((P.HIGH, P.HIGHEST), f32) == ""  # the higher of the two wins
    assert gemm_compute(lax.DotAlgorithmPreset.F32_F32_F32, f32) == ""
    assert gemm_compute(lax.DotAlgorithmPreset.TF32_TF32_F32, f32) == "tf32"
    assert gemm_compute(lax.DotAlgorithmPreset.BF16_BF16_F32, f32) == "bf16"
    assert gemm_compute(lax.DotAlgorithmPreset.TF32_TF32_F32_X3, f32) == ""
    assert gemm_compute(None, f64) == "" and gemm_compute((P.DEFAULT, P.DEFAULT), f64) == ""


def _gemm_lines(f, *args) -> list[str]:
    text = fjax.jit(f).trace(*args).lower(lowering_platforms=("cuda",)).as_text()
    return [ln for ln in text.splitlines() if "cublas gemm" in ln]


def test_lowering_names_the_compute_mode():
    # contractions over 16 (a GPU computes smaller ones as fused code, no GEMM)
    x = np.ones((32, 32), np.float32)
    w = np.ones((32, 24), np.float32)
    (line,) = _gemm_lines(lambda x, w: x @ w, x, w)
    assert " f32 tf32 " in line, line
    (line,) = _gemm_lines(lambda x, w: jnp.dot(x, w, precision="highest"), x, w)
    assert " tf32" not in line, line
    with fjax.default_matmul_precision("float32"):
        (line,) = _gemm_lines(lambda x, w: x @ w, x, w)
    assert " tf32" not in line, line
    # the gradient's GEMMs keep the precision asked for
    lines = _gemm_lines(fjax.grad(lambda x, w: jnp.dot(x, w, precision=P.HIGHEST).sum(), argnums=(0, 1)), x, w)
    assert lines and not any(" tf32" in ln for ln in lines), lines
    lines = _gemm_lines(fjax.grad(lambda x, w: (x @ w).sum(), argnums=(0, 1)), x, w)
    assert lines and all(" tf32" in ln for ln in lines), lines
    with fjax.enable_x64():
        (line,) = _gemm_lines(lambda x, w: x @ w, x.astype(np.float64), w.astype(np.float64))
    assert " f64" in line and " tf32" not in line, line


@given(st.lists(st.floats(-(2.0**100), 2.0**100, width=32, allow_subnormal=False), min_size=1, max_size=64))
def test_round_operand_keeps_ten_mantissa_bits(vals):
    x = np.array(vals, np.float32)
    r = emulate.round_operand(x, "tf32")
    assert r.dtype == np.float32 and r.shape == x.shape
    assert not np.any(r.view(np.uint32) & 0x1FFF)  # the 13 low mantissa bits are dropped
    np.testing.assert_array_less(np.abs(r.astype(np.float64) - x), np.abs(x.astype(np.float64)) * 2.0**-11 + 1e-45)
    np.testing.assert_array_equal(emulate.round_operand(r, "tf32"), r)  # idempotent
    b = emulate.round_operand(x, "bf16")
    assert not np.any(b.view(np.uint32) & 0xFFFF)
    np.testing.assert_array_equal(emulate.round_operand(x, ""), x)


def _operands():
    rng = np.random.default_rng(5)
    # 9,600 outputs: a cuBLAS GEMM (small outputs run as skinny.py's kernel, tests/test_cuda_skinny.py)
    return rng.standard_normal((96, 300)).astype(np.float32), rng.standard_normal((300, 100)).astype(np.float32)


@pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")
def test_emulator_rounds_default_precision_operands_to_tf32():
    x, w = _operands()
    exact = x.astype(np.float64) @ w.astype(np.float64)
    tf32 = emulate.round_operand(x, "tf32").astype(np.float64) @ emulate.round_operand(w, "tf32").astype(np.float64)
    rt = emulate.EmulatedRuntime()
    low = fjax.jit(lambda x, w: x @ w).trace(x, w).lower(lowering_platforms=("cuda",))
    (got,) = emulate.run_lowered(low, x, w, runtime=rt)
    np.testing.assert_allclose(got, tf32, rtol=1e-5, atol=1e-5)
    assert np.max(np.abs(got - exact)) > 1e-3  # TF32 differs visibly from float32 here
    low = fjax.jit(lambda x, w: jnp.dot(x, w, precision="highest")).trace(x, w).lower(lowering_platforms=("cuda",))
    (got,) = emulate.run_lowered(low, x, w, runtime=rt)
    np.testing.assert_allclose(got, exact, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")
def test_standin_cublas_gets_the_compute_type():
    from fjax.backends.cuda import cupy_standin

    old = fjax.config.jax_platforms
    fjax.config.update("jax_platforms", None)
    cupy_standin.install(compute=True)
    try:
        x, w = _operands()
        g = fjax.devices("gpu")[0]
        xg, wg = fjax.device_put(x, g), fjax.device_put(w, g)
        cupy_standin.calls.clear()
        got = np.asarray(fjax.jit(lambda x, w: x @ w)(xg, wg))
        assert cupy_standin.calls["gemm tf32"] == 1, dict(cupy_standin.calls)
        r = emulate.round_operand
        np.testing.assert_allclose(got, r(x, "tf32") @ r(w, "tf32"), rtol=1e-5, atol=1e-5)
        cupy_standin.calls.clear()
        got = np.asarray(fjax.jit(lambda x, w: jnp.dot(x, w, precision=P.HIGHEST))(xg, wg))
        assert cupy_standin.calls["gemm float32"] == 1, dict(cupy_standin.calls)
        np.testing.assert_allclose(got, x @ w, rtol=1e-5, atol=1e-5)
        # numpy inputs go to the default device, the GPU (TF32, as JAX); the CPU computes float32
        # in full whatever the precision
        got = np.asarray(fjax.jit(lambda x, w: x @ w)(x, w))
        np.testing.assert_allclose(got, r(x, "tf32") @ r(w, "tf32"), rtol=1e-5, atol=1e-5)
        c = fjax.devices("cpu")[0]
        got = np.asarray(fjax.jit(lambda x, w: x @ w)(fjax.device_put(x, c), fjax.device_put(w, c)))
        np.testing.assert_allclose(got, x @ w, rtol=1e-5, atol=1e-5)
    finally:
        cupy_standin.uninstall()
        fjax.config.update("jax_platforms", old)


@pytest.mark.skipif(not cuda_runtime.available(), reason="needs cupy and a CUDA device")
def test_tf32_on_a_real_gpu():
    x, w = _operands()
    g = fjax.devices("gpu")[0]
    xg, wg = fjax.device_put(x, g), fjax.device_put(w, g)
    exact = x.astype(np.float64) @ w.astype(np.float64)
    default = np.asarray(fjax.jit(lambda x, w: x @ w)(xg, wg))
    highest = np.asarray(fjax.jit(lambda x, w: jnp.dot(x, w, precision="highest"))(xg, wg))
    np.testing.assert_allclose(highest, exact, rtol=1e-4, atol=1e-4)
    err = np.max(np.abs(default - exact))
    assert 1e-4 < err < 0.1, err  # tensor cores (10-bit mantissa operands), not float32


def test_cpu_kernels_do_not_depend_on_precision():
    """The numba kernels of a program are the same text (so one cache entry) at every precision."""
    x, w = _operands()
    texts = {
        fjax.jit(lambda x, w, p=p: jnp.tanh(jnp.dot(x, w, precision=p))).trace(x, w).lower().as_text()
        for p in (None, "highest", "default", P.HIGH)
    }
    assert len(texts) == 1


def test_swapped_transposed_dot_swaps_the_precision_pair():
    from fjax.backends import lowering

    x, w = _operands()
    jx = fjax.make_jaxpr(lambda x, w: lax.dot_general(x, w, (((1,), (0,)), ((), ())), precision=(P.HIGH, P.HIGHEST)).T)(
        x, w
    ).jaxpr
    (eqn,) = lowering._swap_transposed_dots(list(jx.eqns), list(jx.outvars))
    assert eqn.primitive.name == "dot_general" and eqn.invars == [jx.invars[1], jx.invars[0]]
    assert eqn.params["precision"] == (P.HIGHEST, P.HIGH)
