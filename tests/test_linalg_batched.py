"""The batched LAPACK loops (``fjax.backends.numba.linalg_kernels``) behind ``cholesky``,
``triangular_solve`` and ``lu`` on stacks of matrices: against scipy matrix by matrix, in every
LAPACK dtype, eagerly and under jit, with transposed (non-contiguous) operands and a matrix that is
not positive definite inside a batch."""

import numpy as np
import pytest
import scipy.linalg as sla
from hypothesis import given
from hypothesis import strategies as st

import fjax
from fjax.lax import linalg as LL

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
TOL = {np.float32: 1e-4, np.float64: 1e-11, np.complex64: 1e-4, np.complex128: 1e-11}


@pytest.fixture(autouse=True)
def _x64(x64):
    yield


def rnd(shape, seed, dt):
    r = np.random.RandomState(seed)
    a = r.randn(*shape)
    if np.dtype(dt).kind == "c":
        a = a + 1j * r.randn(*shape)
    return a.astype(dt)


def close(x, y, dt):
    np.testing.assert_allclose(np.asarray(x), y, rtol=TOL[dt], atol=TOL[dt])


_chol_jit = fjax.jit(lambda a: LL.cholesky(a, symmetrize_input=False))
_lu_jit = fjax.jit(LL.lu)


@given(st.sampled_from(DTYPES), st.integers(1, 6), st.integers(2, 4), st.integers(0, 99))
def test_cholesky_batched(dt, n, nb, seed):
    a = rnd((nb, n, n), seed, dt)
    a = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n, dtype=dt)
    a[1] = -a[1]  # not positive definite: NaN factor, the others unaffected
    a = a.astype(dt)
    want = {i: sla.cholesky(a[i], lower=True) for i in range(nb) if i != 1}
    for got in (LL.cholesky(a, symmetrize_input=False), _chol_jit(a)):
        assert got.dtype == dt
        assert np.isnan(np.asarray(got)[1]).all()
        for i in want:
            close(np.asarray(got)[i], want[i], dt)


@given(
    st.sampled_from(DTYPES),
    st.integers(1, 5),
    st.integers(1, 3),
    st.booleans(),
    st.booleans(),
    st.sampled_from([(False, False), (True, False), (True, True), (False, True)]),
    st.booleans(),
    st.booleans(),
    st.integers(0, 99),
)
def test_triangular_solve_batched(dt, n, k, left, lower, tc, unit, transposed_a, seed):
    ta, ca = tc
    a = rnd((3, n, n), seed, dt) + 3 * n * np.eye(n, dtype=dt)
    if transposed_a:
        a = np.swapaxes(np.ascontiguousarray(np.swapaxes(a, -1, -2)), -1, -2)  # a non-contiguous view
    b = rnd((3, n, k) if left else (3, k, n), seed + 1, dt)
    got = LL.triangular_solve(a, b, left_side=left, lower=lower, transpose_a=ta, conjugate_a=ca, unit_diagonal=unit)
    for i in range(3):
        t = np.tril(a[i]) if lower else np.triu(a[i])
        if unit:
            np.fill_diagonal(t, 1)
        op = t.T if ta else t
        op = np.conj(op) if ca else op
        want = np.linalg.solve(op, b[i]) if left else np.linalg.solve(op.T, b[i].T).T
        close(np.asarray(got)[i], want, dt)


@given(st.sampled_from(DTYPES), st.integers(1, 5), st.integers(1, 5), st.integers(0, 99))
def test_lu_batched(dt, m, n, seed):
    a = rnd((3, m, n), seed, dt)
    for lu_, piv, perm in (LL.lu(a), _lu_jit(a)):
        lu_, piv, perm = map(np.asarray, (lu_, piv, perm))
        assert piv.dtype == np.int32 and perm.dtype == np.int32
        for i in range(3):
            want_lu, want_piv = sla.lu_factor(a[i]) if m == n else (None, None)
            p, l_, u_ = sla.lu(a[i])
            k = min(m, n)
            close(np.tril(lu_[i][:, :k], -1) + np.eye(m, k), l_, dt)
            close(np.triu(lu_[i][:k]), u_, dt)
            np.testing.assert_array_equal(a[i][perm[i]], (p.T @ a[i]).astype(dt))
            if want_piv is not None:
                np.testing.assert_array_equal(piv[i], want_piv)
