"""``qr(pivoting=True)`` (``jax.scipy.linalg.qr``) on the CUDA backend: the Householder kernel of
``linalg_ops._qr`` with geqp3's column pivoting. Run on the cupy stand-in against the CPU (scipy's
LAPACK geqp3): the same permutation on random matrices, Q and R to float tolerance; on rank-deficient
matrices (where near-ties may pick another column) a valid pivoted factorization; its gradient; and
the translation unit compiled by nvcc."""

from __future__ import annotations

import _nvcc
import _standin_gpu  # noqa: E402  (tests/ is on the path)
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax.backends.cuda import emulate

emu = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
TOL = {np.float32: 2e-4, np.complex64: 2e-4, np.float64: 1e-10, np.complex128: 1e-10}


def _draw(rng, shape, dt):
    x = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dt)


def _qrp(mode):
    return lambda a: fjax.scipy.linalg.qr(a, pivoting=True, mode=mode)


@emu
@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), shape=st.sampled_from([(5, 5), (7, 4), (3, 6), (2, 5, 3)]), full=st.booleans())
def test_pivoted_qr_matches_the_cpu(dt, seed, shape, full):
    x = _draw(np.random.default_rng(seed), shape, dt)
    with _standin_gpu.installed():
        got, want = _standin_gpu.both(_qrp("full" if full else "economic"), x, x64=np.dtype(dt).itemsize >= 8)
    np.testing.assert_array_equal(got[2], want[2])
    for g, w in zip(got[:2], want[:2]):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, atol=TOL[dt], rtol=TOL[dt])


@emu
@pytest.mark.parametrize("dt", [np.float64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_pivoted_qr_of_rank_deficient_matrices(dt):
    rng = np.random.default_rng(7)
    x = (_draw(rng, (2, 8, 3), dt) @ _draw(rng, (2, 3, 6), dt)).astype(dt)  # rank 3 of 6 columns
    with _standin_gpu.installed(), fjax.enable_x64():
        gpu = fjax.devices("gpu")[0]
        q, r, p = (np.asarray(v) for v in fjax.jit(_qrp("economic"))(fjax.device_put(x, gpu)))
    for b in range(2):
        np.testing.assert_allclose(q[b] @ r[b], x[b][:, p[b]], atol=1e-12 * np.abs(x).max() * 10)
        np.testing.assert_allclose(q[b].conj().T @ q[b], np.eye(6), atol=1e-12)
        d = np.abs(np.diag(r[b]))
        assert np.all(d[:-1] >= d[1:] - 1e-12) and d[3:].max() < 1e-12 * d[0]
        assert sorted(p[b]) == list(range(6))


@emu
def test_pivoted_qr_gradient_matches_the_cpu():
    x = _draw(np.random.default_rng(3), (6, 4), np.float64)

    def loss(a):
        q, r, _ = fjax.scipy.linalg.qr(a, pivoting=True, mode="economic")
        return jnp.sum(jnp.sin(q)) + jnp.sum(r * r)

    with _standin_gpu.installed():
        got, want = _standin_gpu.both(fjax.grad(loss), x, x64=True)
    np.testing.assert_allclose(got, want, atol=1e-10)


@_nvcc.needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_pivoted_qr_compiles_with_nvcc(arch, tmp_path):
    def f(a, b):
        return _qrp("full")(a), _qrp("economic")(b)

    args = (np.zeros((2, 6, 4), np.float32), np.zeros((3, 5), np.complex64))
    text = fjax.jit(f).trace(*args).lower(lowering_platforms=("cuda",)).as_text()
    assert text.count("column pivoting") >= 2
    _nvcc.compile_without_spills(text, arch, tmp_path)
