"""Matrix-vector products fused into the row kernel of their consumers
(``fjax.backends.cuda.matvec_rows``), run on the CUDA emulator against numpy in float64:
per-example gradients as one launch, the vector in each layout, float32 at every precision (the
operands read as the precision's compute mode reads them) and float64, and the products that stay
GEMMs (alone, transposed, batched, long contractions, ``FJAX_CUDA_MATVEC_ROWS=0``)."""

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

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")


def _lowered(fn, *args):
    return fjax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",))


def _run(fn, *args):
    low = _lowered(fn, *args)
    return low.as_text(), emulate.run_lowered(low, *args)


def _launches(text: str) -> list[str]:
    return re.findall(r"//   launch (fj_\w+)", text)


def per_example(w, b, x, y):
    def loss(w, b, x, y):
        z = jnp.dot(x, w) + b
        return jnp.logaddexp(0.0, -y * z)

    return fjax.vmap(fjax.grad(loss, argnums=(0, 1)), in_axes=(None, None, 0, 0))(w, b, x, y)


def _per_example_numpy(w, b, x, y, mode=""):
    """The gradients in float64, the product's operands read as compute ``mode`` reads them."""
    xr, wr = (emulate.round_operand(x, mode), emulate.round_operand(w, mode)) if mode else (x, w)
    z = xr.astype(np.float64) @ wr.astype(np.float64) + float(b)
    dz = -y / (1.0 + np.exp(y * z))  # d/dz log(1 + exp(-y z))
    return dz[:, None] * x, dz


def _data(rng, n, k, dt=np.float32):
    return (
        (rng.standard_normal(k) * 0.1).astype(dt),
        dt(0.25),
        rng.standard_normal((n, k)).astype(dt),
        np.sign(rng.standard_normal(n)).astype(dt),
    )


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_per_example_gradients_are_one_launch(dt):
    """``z = x @ w + b``, the loss's derivative and ``dz * x`` in one warp-per-row kernel, with no
    GEMM, giving numpy's numbers (float32 operands read as TF32, the default precision)."""
    rng = np.random.default_rng(0)
    args = _data(rng, 512, 100, dt)
    with fjax.enable_x64(dt == np.float64):
        text, (gw, gb) = _run(per_example, *args)
    assert "cublas gemm" not in text and _launches(text) == [re.findall(r"fj_row_\w+", text)[0]], text[-900:]
    want_w, want_b = _per_example_numpy(*args, mode="tf32" if dt == np.float32 else "")
    tol = dict(rtol=2e-5, atol=2e-6) if dt == np.float32 else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(gb, want_b, **tol)
    np.testing.assert_allclose(gw, want_w, **tol)


def test_precision_modes_round_the_operands_as_cublas():
    """At HIGHEST the products are full float32; at DEFAULT, TF32; with BF16_BF16_F32, bfloat16
    mantissas: each against numpy on operands rounded the same way, and the modes differ."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 300)).astype(np.float32)
    w = rng.standard_normal(300).astype(np.float32)
    outs = {}
    for prec, mode in ((lax.Precision.HIGHEST, ""), (None, "tf32"), (lax.DotAlgorithmPreset.BF16_BF16_F32, "bf16")):

        def f(x, w, prec=prec):
            return jnp.tanh(jnp.dot(x, w, precision=prec)) * 2.0 + x[:, 0]

        text, (out,) = _run(f, x, w)
        assert "cublas gemm" not in text and "(skinny)" not in text, text[-600:]
        assert ("gemm_operand" in text) == bool(mode)
        rx, rw = (emulate.round_operand(x, mode), emulate.round_operand(w, mode)) if mode else (x, w)
        want = np.tanh(rx.astype(np.float64) @ rw.astype(np.float64)) * 2.0 + x[:, 0]
        np.testing.assert_allclose(out, want, rtol=3e-5, atol=3e-5)
        outs[mode] = out
    assert not np.array_equal(outs[""], outs["tf32"]) and not np.array_equal(outs["tf32"], outs["bf16"])


@pytest.mark.parametrize("layout", ["(k,)", "(k, 1)", "(1, k) transposed"])
def test_vector_layouts(layout):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((40, 70)).astype(np.float32)
    if layout == "(k,)":
        v = rng.standard_normal(70).astype(np.float32)

        def f(x, v):
            return jnp.exp(-jnp.abs(x @ v))[:, None] * x

        vec = v
    elif layout == "(k, 1)":
        v = rng.standard_normal((70, 1)).astype(np.float32)

        def f(x, v):
            return jnp.exp(-jnp.abs(x @ v)) * x

        vec = v[:, 0]
    else:
        v = rng.standard_normal((1, 70)).astype(np.float32)

        def f(x, v):
            return jnp.exp(-jnp.abs(x @ v.T)) * x

        vec = v[0]
    with fjax.default_matmul_precision("float32"):
        text, (out,) = _run(f, x, v)
    z = x.astype(np.float64) @ vec.astype(np.float64)
    np.testing.assert_allclose(out, np.exp(-np.abs(z))[:, None] * x, rtol=2e-5, atol=2e-6)
    # (the transposed vector is copied to a column first: the lowering's operand layout)
    assert "cublas gemm" not in text and _launches(text)[-1].startswith("fj_row_"), text[-800:]
    assert len(_launches(text)) == (2 if "transposed" in layout else 1), text[-800:]


def test_products_that_stay_gemms(monkeypatch):
    """Alone (no consumer reading it row by row), a matrix times a matrix and a batch of
    matrix-vector products stay GEMMs; FJAX_CUDA_MATVEC_ROWS=0 keeps the per-example product a GEMM too."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 40)).astype(np.float32)
    v = rng.standard_normal(40).astype(np.float32)
    m = rng.standard_normal((40, 3)).astype(np.float32)
    xt = rng.standard_normal((40, 64)).astype(np.float32)
    for fn, args in (
        (lambda x, v: jnp.sum(x @ v), (x, v)),  # (its one consumer reads across rows)
        (lambda x, m: jnp.tanh(x @ m) * x[:, :3], (x, m)),
        (
            lambda xb, vb: jnp.tanh(jnp.einsum("bij,bj->bi", xb, vb))[..., None] * xb,
            (xt.reshape(4, 10, 64), v[:, None].reshape(4, 10)[..., :1].repeat(64, -1)),
        ),
    ):
        assert "cublas gemm" in _lowered(fn, *args).as_text()
    args = _data(rng, 64, 40)
    assert "cublas gemm" not in _lowered(per_example, *args).as_text()
    monkeypatch.setenv("FJAX_CUDA_MATVEC_ROWS", "0")
    fjax.clear_caches()
    assert "cublas gemm" in _lowered(per_example, *args).as_text()


@settings(max_examples=12, deadline=None)
@given(
    n=st.integers(1, 300),
    k=st.integers(1, 700),
    seed=st.integers(0, 2**16),
)
def test_hypothesis_shapes_match_numpy(n, k, seed):
    """Any rows and contraction length (one to several lanes' worth, above a warp's and below):
    per-example gradients in full float32 against numpy in float64."""
    rng = np.random.default_rng(seed)
    args = _data(rng, n, k)
    with fjax.default_matmul_precision("float32"):
        text, (gw, gb) = _run(per_example, *args)
    assert "cublas gemm" not in text
    want_w, want_b = _per_example_numpy(*args)
    scale = 1e-5 * max(1.0, float(np.sqrt(k)))
    np.testing.assert_allclose(gb, want_b, rtol=scale, atol=scale)
    np.testing.assert_allclose(gw, want_w, rtol=scale, atol=scale)
