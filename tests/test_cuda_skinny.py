"""Small-output GEMMs as a warp-per-output kernel (``fjax.backends.cuda.skinny``), run on the CUDA
emulator against numpy in float64: every operand layout (transposed or not), batches, float32 and
float64, and the products that stay on cuBLAS (short contractions, large outputs, integer dtypes).
``FJAX_CUDA_SKINNY=0`` (read when a plan is built) sends every GEMM to cuBLAS."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.backends.cuda import emulate

needs_cxx = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")


@pytest.fixture(autouse=True)
def _on(monkeypatch):
    monkeypatch.setenv("FJAX_CUDA_SKINNY", "1")
    # (a matrix-vector product followed by row-wise work joins a row kernel instead:
    # tests/test_cuda_matvec_rows.py; here every product is a GEMM of its own)
    monkeypatch.setenv("FJAX_CUDA_MATVEC_ROWS", "0")


def _text(fn, *args) -> str:
    return fjax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",)).as_text()


def _run(fn, *args):
    low = fjax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",))
    return low.as_text(), emulate.run_lowered(low, *args)


LAYOUTS = {
    "x @ w": (lambda x, w: x @ w, (256, 512), (512, 10)),
    "x.T @ g": (lambda x, g: x.T @ g, (256, 512), (256, 10)),
    "x @ w.T": (lambda x, w: x @ w.T, (64, 300), (12, 300)),
    "x.T @ w.T": (lambda x, w: x.T @ w.T, (200, 30), (7, 200)),
    "matvec": (lambda x, v: x @ v, (100, 129), (129,)),
    "batched": (lambda a, b: jnp.einsum("bij,bjk->bik", a, b), (4, 8, 160), (4, 160, 6)),
    "batched, lhs transposed": (lambda a, b: jnp.einsum("bji,bjk->bik", a, b), (3, 140, 5), (3, 140, 9)),
}


@needs_cxx
@pytest.mark.parametrize("name", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_skinny_gemm_matches_numpy(name, dtype):
    fn, sa, sb = LAYOUTS[name]
    rng = np.random.default_rng(len(name))
    a, b = rng.standard_normal(sa).astype(dtype), rng.standard_normal(sb).astype(dtype)
    with fjax.enable_x64(dtype == np.float64):
        text, (out,) = _run(fn, a, b)
    assert "(skinny)" in text and "cublas gemm" not in text, text[-600:]
    # default precision: float32 operands read as TF32 (as cuBLAS's path reads them), summed in float32
    ra, rb = emulate.round_operand(a, "tf32"), emulate.round_operand(b, "tf32")
    with fjax.enable_x64(True):  # the float64 product on the CPU
        want = np.asarray(fn(ra.astype(np.float64), rb.astype(np.float64)))
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    assert out.dtype == dtype and out.shape == want.shape
    np.testing.assert_allclose(out, want, **tol)


@needs_cxx
@settings(max_examples=8, deadline=None)
@given(
    nl=st.integers(1, 40),
    nk=st.integers(128, 400),
    nr=st.integers(1, 12),
    lt=st.booleans(),
    rt=st.booleans(),
)
def test_skinny_gemm_any_shape(nl, nk, nr, lt, rt):
    rng = np.random.default_rng(nl * 1000 + nk + nr)
    a = rng.standard_normal((nk, nl) if lt else (nl, nk)).astype(np.float32)
    b = rng.standard_normal((nr, nk) if rt else (nk, nr)).astype(np.float32)

    def fn(a, b):
        return (a.T if lt else a) @ (b.T if rt else b)

    text, (out,) = _run(fn, a, b)
    assert "(skinny)" in text
    r = emulate.round_operand
    want = fn(r(a, "tf32").astype(np.float64), r(b, "tf32").astype(np.float64))
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@needs_cxx
@pytest.mark.parametrize("precision", ["default", "highest", "bf16"])
def test_skinny_gemm_follows_the_precision(precision):
    """The operands are read as cuBLAS's compute mode for the precision reads them: TF32 by default,
    float32 at ``HIGHEST``, bfloat16 with ``BF16_BF16_F32``."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((32, 300)).astype(np.float32), rng.standard_normal((300, 24)).astype(np.float32)
    p = {"default": None, "highest": "highest", "bf16": lax.DotAlgorithmPreset.BF16_BF16_F32}[precision]
    text, (out,) = _run(lambda x, w: jnp.dot(x, w, precision=p), a, b)
    assert "(skinny)" in text
    mode = {"default": "tf32", "highest": "", "bf16": "bf16"}[precision]
    r = emulate.round_operand
    want = r(a, mode).astype(np.float64) @ r(b, mode).astype(np.float64)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert (np.max(np.abs(out - exact)) > 1e-3) == (mode != "")


def test_products_that_stay_on_cublas(monkeypatch):
    x, w = np.ones((256, 10), np.float32), np.ones((10, 512), np.float32)
    assert "(skinny)" not in _text(lambda a, b: a @ b, x, w)  # contraction of 10: too short
    big = np.ones((256, 512), np.float32)
    assert "(skinny)" not in _text(lambda a, b: a @ b, big, big.T)  # 65536 outputs
    assert "(skinny)" not in _text(lambda a, b: a @ b, np.ones((4, 200), np.int32), np.ones((200, 3), np.int32))
    small = np.ones((8, 200), np.float32), np.ones((200, 3), np.float32)
    assert "(skinny)" in _text(lambda a, b: a @ b, *small)
    monkeypatch.setenv("FJAX_CUDA_SKINNY", "0")
    assert "(skinny)" not in _text(lambda a, b: (a @ b) * 1.0, *small)


@needs_cxx
def test_mlp_step_with_skinny_gemms_matches_the_cpu():
    """The benchmark's MLP step: its 10-wide logits and their weight gradient run as skinny GEMMs."""
    import sys  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from bench_gpu import workloads  # noqa: PLC0415

    f, args = workloads(fjax, jnp, lax, True)["mlp 784-512-512-10 b256"]
    g = fjax.jit(f.__wrapped__)
    text, outs = _run(g, *args)
    assert len(re.findall(r"\(skinny\)", text)) == 2, re.findall(r"cublas gemm[^#]*", text)
    want = fjax.tree_util.tree_leaves(g(*args))
    assert len(outs) == len(want)
    for o, w in zip(outs, want):
        np.testing.assert_allclose(o, np.asarray(w), rtol=2e-4, atol=2e-5)
