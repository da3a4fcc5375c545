"""Tests of fjax.scipy.linalg against scipy.linalg (values, float32/float64), with derivatives
(expm through its Frechet derivative, cho_solve, lu_solve, polar) and jit/vmap checks."""

import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.scipy.linalg as L
from fjax.test_util import check_grads

TOL = {np.float32: 1e-4, np.float64: 1e-10}


def rnd(shape, seed, dtype=np.float64):
    return np.random.RandomState(seed).randn(*shape).astype(dtype)


def close(x, y, dt=np.float64, scale=1.0):
    x, y = np.asarray(x), np.asarray(y)
    assert x.shape == y.shape, (x.shape, y.shape)
    tol = TOL[np.dtype(dt).type] * scale
    np.testing.assert_allclose(x, y, rtol=tol, atol=tol * max(1.0, np.abs(y).max(initial=0.0)))


@pytest.fixture(autouse=True)
def _x64(x64):
    yield


A = rnd((4, 4), 0)
SPD = A @ A.T + 4 * np.eye(4)
B = rnd((4, 3), 1)
V = rnd((4,), 2)


@given(st.integers(1, 5), st.sampled_from([np.float32, np.float64]), st.integers(0, 50), st.booleans())
def test_factor_solve(n, dt, seed, lower):
    a = rnd((n, n), seed, dt) + n * np.eye(n, dtype=dt)
    s = (a @ a.T).astype(dt)
    b = rnd((n, 2), seed + 1, dt)
    close(L.cholesky(s, lower=lower), sl.cholesky(s, lower=lower), dt, 100)
    close(L.cho_solve(L.cho_factor(s, lower=lower), b), sl.cho_solve(sl.cho_factor(s, lower=lower), b), dt, 1e3)
    lf, slf = L.lu_factor(a), sl.lu_factor(a)
    close(lf[0], slf[0], dt, 100)
    np.testing.assert_array_equal(lf[1], slf[1])
    for t in (0, 1, 2):
        close(L.lu_solve(lf, b, trans=t), sl.lu_solve(slf, b, trans=t), dt, 1e3)
    for x, y in zip(L.lu(a), sl.lu(a)):
        close(x, y, dt, 100)
    close(
        L.solve_triangular(a, b[:, 0], lower=lower, trans="T"),
        sl.solve_triangular(a, b[:, 0], lower=lower, trans="T"),
        dt,
        1e3,
    )
    close(L.solve(s, b, assume_a="pos"), sl.solve(s, b, assume_a="pos"), dt, 1e3)
    close(L.det(a), sl.det(a), dt, 100)
    close(L.inv(a), sl.inv(a), dt, 1e3)


def test_decompositions():
    close(L.eigh(SPD)[0], sl.eigh(SPD)[0])
    close(L.eigh(SPD, eigvals_only=True, eigvals=(1, 2)), sl.eigh(SPD, eigvals_only=True, subset_by_index=(1, 2)))
    for x, y in zip(L.svd(A), sl.svd(A)):
        close(np.abs(x), np.abs(y))
    for x, y in zip(L.qr(A[:, :3]), sl.qr(A[:, :3])):
        close(x, y)
    for x, y in zip(L.qr(A[:, :3], mode="economic", pivoting=True), sl.qr(A[:, :3], mode="economic", pivoting=True)):
        close(x, y)
    for x, y in zip(L.schur(A), sl.schur(A)):
        close(x, y, scale=100)
    for x, y in zip(L.hessenberg(A, calc_q=True), sl.hessenberg(A, calc_q=True)):
        close(x, y, scale=100)
    close(
        L.eigh_tridiagonal(np.arange(4.0), np.ones(3), eigvals_only=True),
        sl.eigh_tridiagonal(np.arange(4.0), np.ones(3), eigvals_only=True),
    )
    for side in ("right", "left"):
        for x, y in zip(L.polar(A, side), sl.polar(A, side)):
            close(x, y, scale=100)
    close(L.sqrtm(SPD), sl.sqrtm(SPD), scale=1e3)
    close(L.sqrtm(A), sl.sqrtm(A.astype(complex)), scale=1e3)


@pytest.mark.parametrize("scale", [0.01, 1.0, 10.0])
def test_expm(scale):
    close(L.expm(A * scale), sl.expm(A * scale), scale=1e3)
    E = rnd((4, 4), 5)
    r, l_ = L.expm_frechet(A * scale, E)
    r2, l2 = sl.expm_frechet(A * scale, E)
    close(r, r2, scale=1e3)
    close(l_, l2, scale=1e3)
    close(L.expm(np.stack([A * scale, A])), np.stack([sl.expm(A * scale), sl.expm(A)]), scale=1e3)


def test_structured():
    close(L.block_diag(np.ones((2, 2)), 3, np.arange(3)), sl.block_diag(np.ones((2, 2)), 3, np.arange(3)))
    close(L.toeplitz([1, 2, 3], [1, 4, 5, 6]), sl.toeplitz([1, 2, 3], [1, 4, 5, 6]))
    close(L.toeplitz([1, 2 + 1j, 3]), sl.toeplitz([1, 2 + 1j, 3]))
    close(L.hilbert(4), sl.hilbert(4))


def test_grads():
    check_grads(L.expm, (A * 0.5,), 2)
    check_grads(L.expm, (A * 3,), 1)
    check_grads(lambda a: L.cho_solve(L.cho_factor(a), B), (SPD,), 2)
    check_grads(lambda a, b: L.lu_solve(L.lu_factor(a), b, trans=1), (A + 4 * np.eye(4), B), 2)
    check_grads(lambda a: L.polar(a)[1], (A,), 1)
    check_grads(lambda a: L.solve_triangular(a, V, lower=True), (SPD,), 2)


_jit_expm = fjax.jit(L.expm)
_jit_grad_expm = fjax.jit(fjax.grad(lambda a: L.expm(a).sum()))


def test_jit_vmap():
    close(_jit_expm(A), sl.expm(A), scale=1e3)
    close(_jit_grad_expm(A), fjax.grad(lambda a: L.expm(a).sum())(A), scale=1e3)
    close(
        fjax.vmap(lambda a: L.cho_solve(L.cho_factor(a), V))(np.stack([SPD, 2 * SPD])),
        np.stack([np.linalg.solve(SPD, V), np.linalg.solve(2 * SPD, V)]),
        scale=100,
    )
    close(fjax.vmap(L.expm)(np.stack([A, A * 0.1])), np.stack([sl.expm(A), sl.expm(A * 0.1)]), scale=1e3)
