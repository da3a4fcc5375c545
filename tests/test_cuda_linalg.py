"""The CUDA linear-algebra kernels (``fjax/backends/cuda/linalg_ops.py``: cholesky,
triangular_solve, lu, qr) through ``device_put`` + ``jit`` on the cupy stand-in (kernels compiled
by g++ against ``cuda_emu.h``), against the CPU backend (LAPACK): every side/transpose/diagonal
variant, batches, tall and wide matrices, a matrix that is not positive definite, and what users
call on top of them (solve, inv, det, slogdet, an orthogonal initializer, multivariate normal
samples, a gradient through cholesky)."""

from __future__ import annotations

import itertools

import _standin_gpu  # noqa: E402  (tests/ is on the path)
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.backends.cuda import emulate

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")


@pytest.fixture(scope="module", autouse=True)
def standin_gpu():
    with _standin_gpu.installed() as cs:
        yield cs


_both = _standin_gpu.both


def _close(got, want, dt):
    tol = dict(rtol=2e-4, atol=2e-5) if dt == np.float32 else dict(rtol=1e-10, atol=1e-12)
    for g, w in zip(fjax.tree_util.tree_leaves(got), fjax.tree_util.tree_leaves(want)):
        assert g.shape == w.shape and g.dtype == w.dtype
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, equal_nan=True, **tol)
        else:
            np.testing.assert_array_equal(g, w)


def _spd(rng, shape, dt):
    a = rng.standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dt)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_cholesky(dt):
    rng = np.random.default_rng(0)
    x = _spd(rng, (3, 7, 7), dt)
    x[1, 2, 2] = -50.0  # not positive definite: an all-NaN factor
    for kw in ({}, {"symmetrize_input": True}, {"symmetrize_input": False}):
        got, want = _both(lambda x, kw=kw: lax.linalg.cholesky(x, **kw), x, x64=dt == np.float64)
        assert np.isnan(got[1]).all() and not np.isnan(got[0]).any()
        _close(got, want, dt)
    got, want = _both(lambda x: jnp.linalg.cholesky(x, upper=True), x, x64=dt == np.float64)
    _close(got, want, dt)


@pytest.mark.parametrize("left,lower,trans,unit", list(itertools.product([True, False], repeat=4)))
def test_triangular_solve_every_variant(left, lower, trans, unit):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((2, 6, 6)) + 6 * np.eye(6)).astype(np.float32)
    b = rng.standard_normal((2, 6, 4) if left else (2, 4, 6)).astype(np.float32)
    f = lambda a, b: lax.linalg.triangular_solve(  # noqa: E731
        a, b, left_side=left, lower=lower, transpose_a=trans, unit_diagonal=unit
    )
    got, want = _both(f, a, b)
    _close(got, want, np.float32)


@pytest.mark.parametrize("shape", [(5, 5), (3, 6, 6), (7, 4), (4, 7), (1, 1)])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_lu(shape, dt):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(dt)
    got, want = _both(lax.linalg.lu, x, x64=dt == np.float64)
    _close(got, want, dt)


def test_lu_of_a_singular_matrix_and_pivots_to_permutation():
    x = np.array([[0.0, 1.0, 2.0], [0.0, 2.0, 4.0], [0.0, 3.0, 7.0]], np.float32)
    got, want = _both(lax.linalg.lu, x)
    _close(got, want, np.float32)
    piv = np.array([[2, 2, 3, 3], [0, 1, 2, 3]], np.int32)
    got, want = _both(lambda p: lax.linalg.lu_pivots_to_permutation(p, 5), piv)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape", [(6, 6), (2, 8, 5), (5, 8), (1, 3)])
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_qr_as_lapack(shape, full, dt):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(dt)
    x[..., 0, :] = np.abs(x[..., 0, :])  # (either sign of the first column's pivot)
    got, want = _both(lambda x: jnp.linalg.qr(x, mode="complete" if full else "reduced"), x, x64=dt == np.float64)
    _close(got, want, dt)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_solvers_on_drawn_matrices(seed):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((5, 5)) + 5 * np.eye(5)).astype(np.float32)
    b = rng.standard_normal((5, 3)).astype(np.float32)
    f = lambda a, b: (  # noqa: E731
        jnp.linalg.solve(a, b),
        jnp.linalg.inv(a),
        jnp.linalg.det(a),
        jnp.linalg.slogdet(a),
        jnp.linalg.cholesky(a @ a.T),
        jnp.linalg.qr(a),
    )
    got, want = _both(f, a, b)
    for g, w in zip(fjax.tree_util.tree_leaves(got), fjax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(g, w, rtol=5e-4, atol=5e-4)


def test_users_of_the_factorizations_stay_on_the_gpu():
    """An orthogonal initializer (qr), multivariate normal samples (cholesky) and a gradient
    through cholesky + triangular_solve (a Gaussian-process negative log likelihood)."""
    key = fjax.random.key(0)
    rng = np.random.default_rng(4)
    cov = _spd(rng, (4, 4), np.float32)
    got, want = _both(lambda k: fjax.nn.initializers.orthogonal()(k, (6, 4)), fjax.random.key_data(key))
    _close(got, want, np.float32)
    np.testing.assert_allclose(got.T @ got, np.eye(4), atol=1e-5)
    got, want = _both(lambda c: fjax.random.multivariate_normal(key, jnp.zeros(4), c, (3,), method="cholesky"), cov)
    _close(got, want, np.float32)

    def nll(c, y):
        L = jnp.linalg.cholesky(c)
        z = lax.linalg.triangular_solve(L, y[:, None], left_side=True, lower=True)
        return 0.5 * jnp.sum(z**2) + jnp.sum(jnp.log(jnp.diagonal(L)))

    y = rng.standard_normal(4).astype(np.float32)
    got, want = _both(fjax.grad(nll), cov, y)
    _close(got, want, np.float32)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("lower", [True, False])
def test_eigh(dt, lower):
    """Eigenvalues as LAPACK's (ascending), eigenvectors up to sign: orthonormal, reconstructing
    the triangle read, equal to LAPACK's in absolute value; subsets; a repeated eigenvalue; a
    non-finite matrix gives NaNs; a gradient (sign-invariant) as the CPU's."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 7, 7)).astype(dt)  # not symmetric: only one triangle is read
    x[2] = np.diag([1.0, 1.0, 2.0, 3.0, 3.0, 3.0, -1.0]).astype(dt)
    x64 = dt == np.float64
    tol = dict(rtol=1e-4, atol=1e-5) if dt == np.float32 else dict(rtol=1e-10, atol=1e-11)
    (v, w), (vw, ww) = _both(lambda x: lax.linalg.eigh(x, lower=lower, symmetrize_input=False), x, x64=x64)
    np.testing.assert_allclose(w, ww, **tol)
    sym = np.tril(x) + np.swapaxes(np.tril(x, -1), -1, -2) if lower else np.triu(x) + np.swapaxes(np.triu(x, 1), -1, -2)
    np.testing.assert_allclose(v @ (w[..., None] * np.swapaxes(v, -1, -2)), sym, **tol)
    np.testing.assert_allclose(np.swapaxes(v, -1, -2) @ v, np.broadcast_to(np.eye(7), v.shape), **tol)
    np.testing.assert_allclose(np.abs(v[:2]), np.abs(vw[:2]), **tol)  # (distinct eigenvalues)
    (vs, ws), (vsw, wsw) = _both(lambda x: lax.linalg.eigh(x, subset_by_index=(2, 5)), x, x64=x64)
    np.testing.assert_allclose(ws, wsw, **tol)
    np.testing.assert_allclose(np.abs(vs[:2]), np.abs(vsw[:2]), **tol)
    bad = x.copy()
    bad[1, 3, 2] = np.nan
    (vb, wb), _ = _both(lambda x: lax.linalg.eigh(x, symmetrize_input=False), bad, x64=x64)
    assert np.isnan(vb[1]).all() and np.isnan(wb[1]).all() and not np.isnan(wb[0]).any()

    def f(x):
        v, w = jnp.linalg.eigh(x + x.T)
        return jnp.sum(w**2 * jnp.arange(7.0)) + jnp.sum((v * v)[0])

    got, want = _both(fjax.grad(f), x[0], x64=x64)
    np.testing.assert_allclose(got, want, **(dict(rtol=2e-3, atol=2e-3) if dt == np.float32 else tol))


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 5), (2, 7, 3)])
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_svd(shape, full, dt):
    """Singular values as LAPACK's (descending), vectors up to sign: orthonormal (completed when
    full), reconstructing the matrix, equal to LAPACK's in absolute value."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal(shape).astype(dt)
    x64 = dt == np.float64
    tol = dict(rtol=1e-4, atol=1e-5) if dt == np.float32 else dict(rtol=1e-10, atol=1e-11)
    (u, s, vt), (uw, sw, vtw) = _both(lambda x: jnp.linalg.svd(x, full_matrices=full), x, x64=x64)
    assert u.shape == uw.shape and vt.shape == vtw.shape
    np.testing.assert_allclose(s, sw, **tol)
    k = s.shape[-1]
    np.testing.assert_allclose((u[..., :, :k] * s[..., None, :]) @ vt[..., :k, :], x, **tol)
    np.testing.assert_allclose(
        np.swapaxes(u, -1, -2) @ u, np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2), **tol
    )
    np.testing.assert_allclose(
        vt @ np.swapaxes(vt, -1, -2), np.broadcast_to(np.eye(vt.shape[-2]), vt.shape[:-2] + (vt.shape[-2],) * 2), **tol
    )
    np.testing.assert_allclose(np.abs(u[..., :, :k]), np.abs(uw[..., :, :k]), **tol)
    np.testing.assert_allclose(np.abs(vt[..., :k, :]), np.abs(vtw[..., :k, :]), **tol)


def test_svd_variants_and_users():
    """compute_uv=False, subset_by_index, a rank-deficient matrix, NaN input; pinv, lstsq,
    matrix_rank, the 2-norm and the gradient of the nuclear norm, as the CPU."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    got, want = _both(lambda x: jnp.linalg.svd(x, compute_uv=False), x)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    (u, s, vt), (uw, sw, vtw) = _both(lambda x: lax.linalg.svd(x, full_matrices=False, subset_by_index=(1, 3)), x)
    np.testing.assert_allclose(s, sw, rtol=1e-5)
    np.testing.assert_allclose(np.abs(u), np.abs(uw), atol=1e-5)
    np.testing.assert_allclose(np.abs(vt), np.abs(vtw), atol=1e-5)
    r = np.array([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]], np.float32)  # rank 2
    (u, s, vt), (_, sw, _) = _both(jnp.linalg.svd, r)
    np.testing.assert_allclose(s, sw, atol=1e-5)
    np.testing.assert_allclose(u.T @ u, np.eye(3), atol=1e-5)
    bad = x.copy()
    bad[2, 1] = np.inf
    (ub, sb, vtb), _ = _both(jnp.linalg.svd, bad)
    assert np.isnan(sb).all() and np.isnan(ub).all() and np.isnan(vtb).all()
    b = rng.standard_normal((5, 2)).astype(np.float32)
    users = lambda x, b: (  # noqa: E731
        jnp.linalg.pinv(x),
        jnp.linalg.lstsq(x, b)[0],
        jnp.linalg.matrix_rank(x),
        jnp.linalg.norm(x, ord=2),
        fjax.grad(lambda x: jnp.linalg.norm(x, ord="nuc"))(x),
    )
    got, want = _both(users, x, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-4)
