"""CUDA row fusion (``fjax.backends.cuda.rows``): loop nests over the same rows — a row reduction,
the elementwise work and reductions that read its result in the same row — as one launch with a
warp per row, run on the CPU emulator against numpy: softmax, log-softmax and its cross-entropy
gradient, layer norm, rows of several axes, rows longer than a warp, integer and bool reductions,
and the cases that must NOT fuse (a read across rows, rows longer than ``MAX_COLS``).
``FJAX_CUDA_ROWS=0`` (read when a plan is built) turns the fusion off; here it is the A/B."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.backends.cuda import emulate, rows

needs_cxx = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")


def _lower(fn, *args):
    return fjax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",))


def _launches(text: str) -> list[str]:
    return re.findall(r"launch (fj_\w+)<<<", text)


def _run(fn, *args):
    low = _lower(fn, *args)
    return low.as_text(), emulate.run_lowered(low, *args)


def _softmax(x):
    m = jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(x - m)
    return e / jnp.sum(e, axis=-1, keepdims=True)


def _xent(logits, y):
    m = lax.stop_gradient(jnp.max(logits, axis=-1, keepdims=True))
    lse = jnp.log(jnp.sum(jnp.exp(logits - m), axis=-1, keepdims=True)) + m
    return -jnp.mean(jnp.sum(y * (logits - lse), axis=-1))


def _layernorm(x):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) * lax.rsqrt(var + 1e-5)


def _np_softmax(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_the_mlp_loss_is_two_launches(monkeypatch):
    """The MLP benchmark's step: bias add + row max, exp-sum, log, loss terms and the softmax
    gradient are one launch, the mean and its division another (13 launches -> 8)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from bench_gpu import workloads  # noqa: PLC0415

    f, args = workloads(fjax, jnp, lax, True)["mlp 784-512-512-10 b256"]
    fused = _launches(f.trace(*args).lower(lowering_platforms=("cuda",)).as_text())
    monkeypatch.setenv("FJAX_CUDA_ROWS", "0")
    plain = _launches(fjax.jit(f.__wrapped__).trace(*args).lower(lowering_platforms=("cuda",)).as_text())
    assert sum(k.startswith("fj_row_") for k in fused) == 2, fused
    assert not any(k.startswith("fj_row_") for k in plain)
    assert len(plain) - len(fused) == 5, (plain, fused)


@needs_cxx
@pytest.mark.parametrize("shape", [(256, 10), (7, 33), (3, 5, 100), (40, 512), (512, 700)])
def test_softmax_rows(shape):
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32) * 3
    text, (got,) = _run(_softmax, x)
    assert "fj_row_" in text
    np.testing.assert_allclose(got, _np_softmax(x), rtol=2e-5, atol=1e-7)


@needs_cxx
@pytest.mark.parametrize("shape", [(3, rows.MAX_COLS + 1), (1, 4096), (rows.MANY_ROWS - 1, rows.SHORT_COLS + 1)])
def test_long_rows_keep_their_launches(shape):
    """Rows past ``MAX_COLS``, and rows past ``SHORT_COLS`` when there are few of them: a warp
    per row would leave the GPU idle (the separate reductions split a long row over blocks)."""
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    text, (got,) = _run(_softmax, x)
    assert "fj_row_" not in text
    np.testing.assert_allclose(got, _np_softmax(x), rtol=2e-5, atol=1e-8)


@needs_cxx
def test_cross_entropy_value_and_gradient():
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((50, 10)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 50)]
    text, (val, g) = _run(fjax.value_and_grad(_xent), logits, y)
    assert len([k for k in _launches(text) if k.startswith("fj_row_")]) >= 1
    ls = np.log(_np_softmax(logits))
    np.testing.assert_allclose(val, -(y * ls).sum(-1).mean(), rtol=1e-5)
    np.testing.assert_allclose(g, (_np_softmax(logits) - y) / 50, rtol=1e-4, atol=1e-7)


@needs_cxx
def test_layernorm_and_its_gradient():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 6, 48)).astype(np.float32)
    text, (got,) = _run(_layernorm, x)
    assert "fj_row_" in text
    x64 = x.astype(np.float64)
    mu = x64.mean(-1, keepdims=True)
    want = (x64 - mu) / np.sqrt(((x64 - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    # the gradient against the CPU backend (numba) of the same program
    g = fjax.grad(lambda x: jnp.sum(jnp.sin(_layernorm(x))))
    _, (gg,) = _run(g, x)
    np.testing.assert_allclose(gg, np.asarray(fjax.jit(g)(x)), rtol=1e-4, atol=1e-5)


@needs_cxx
def test_a_read_across_rows_does_not_fuse():
    """The second nest reads the row maximum of the REVERSED row order: another warp's row, so it
    must run after every row's maximum (a separate launch), and the numbers say so."""
    x = np.random.default_rng(3).standard_normal((40, 20)).astype(np.float32)

    def f(x):
        m = jnp.max(x, axis=1, keepdims=True)
        return jnp.sum(jnp.exp(x - m[::-1]), axis=1)

    text, (got,) = _run(f, x)
    m = x.max(1, keepdims=True)
    np.testing.assert_allclose(got, np.exp(x - m[::-1]).sum(1, dtype=np.float64), rtol=1e-5)
    assert "fj_row_" not in text


@needs_cxx
def test_int_and_bool_row_reductions():
    x = np.random.default_rng(4).integers(-50, 50, (30, 70)).astype(np.int32)

    def f(x):
        m = jnp.max(x, axis=1, keepdims=True)
        d = x - m
        return jnp.sum(d, axis=1), jnp.all(d <= 0, axis=1), jnp.any(d == 0, axis=1), d

    text, got = _run(f, x)
    assert "fj_row_" in text
    d = x - x.max(1, keepdims=True)
    want = [d.sum(1, dtype=np.int32), (d <= 0).all(1), (d == 0).any(1), d]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@needs_cxx
def test_scalar_mean_then_scale():
    x = np.random.default_rng(5).standard_normal(300).astype(np.float32)
    text, (got,) = _run(lambda x: -jnp.mean(x * x) * 3.0, x)
    np.testing.assert_allclose(got, -(x.astype(np.float64) ** 2).mean() * 3.0, rtol=1e-5)
    assert "fj_row_" in text


@needs_cxx
@settings(max_examples=10, deadline=None)
@given(
    lead=st.lists(st.integers(1, 9), min_size=1, max_size=2),
    inner=st.integers(1, 200),
    seed=st.integers(0, 2**16),
)
def test_log_softmax_matches_the_cpu_backend(lead, inner, seed):
    x = (np.random.default_rng(seed).standard_normal((*lead, inner)) * 4).astype(np.float32)

    def f(x):
        z = x - lax.stop_gradient(jnp.max(x, axis=-1, keepdims=True))
        return z - jnp.log(jnp.sum(jnp.exp(z), axis=-1, keepdims=True))

    _, (got,) = _run(f, x)
    want = np.log(_np_softmax(x))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@needs_cxx
@pytest.mark.parametrize("k", [1, 10, 16, 17])
def test_small_contractions_are_fused_code_on_a_gpu(k):
    """A GPU computes a dot_general with a contraction of at most 16 as fused elementwise code
    (no cuBLAS launch); 17 and up is a GEMM. Both against numpy, with the consumer fused in."""
    rng = np.random.default_rng(k)
    a = rng.standard_normal((40, k)).astype(np.float32)
    b = rng.standard_normal((k, 24)).astype(np.float32)
    with fjax.default_matmul_precision("float32"):
        text, (got,) = _run(lambda a, b: jnp.tanh(a @ b), a, b)
    assert ("cublas gemm" in text) == (k > 16), k
    np.testing.assert_allclose(got, np.tanh(a.astype(np.float64) @ b), rtol=1e-5, atol=1e-6)


@needs_cxx
def test_row_results_read_only_by_lane_zero_stay_in_a_register():
    """A row's sum that only the rows-alone phases read (lane 0's) is kept in a register: no
    buffer, no store. One the kernel returns, or that the all-lane phases read, is stored. All
    three against numpy, and the register one compared with the fusion off."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((300, 70)).astype(np.float32)

    def local(x):  # the sum feeds a per-row value only
        return jnp.tanh(jnp.sum(x * x, axis=1)) * 2.0 + x[:, 0]

    def returned(x):  # the sum is an output as well
        s = jnp.sum(x * x, axis=1)
        return s, jnp.tanh(s) * 2.0

    def broadcast(x):  # the all-lane phase over the row's columns reads the sum
        s = jnp.sum(x, axis=1, keepdims=True)
        return jnp.exp(x - s)

    def kept(text):
        return text.count("kept in lane 0's register")

    for fn, regs in ((local, 1), (returned, 0), (broadcast, 0)):
        text, got = _run(fn, x)
        assert len(_launches(text)) == 1 and _launches(text)[0].startswith("fj_row_"), text[-600:]
        assert kept(text) == regs, (fn.__name__, text[-1500:])
        want = fn(x.astype(np.float64) if fn is not broadcast else x)  # (jnp on the CPU)
        for g, w in zip(got, fjax.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(g, np.asarray(w, np.float32), rtol=2e-5, atol=2e-5)
    empties = _lower(local, x).as_text().count("= empty(")
    assert empties == 1  # the output only
