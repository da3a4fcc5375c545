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


# ---------------------------------------------------------------------------------------------
# cholesky_p's symmetrize_input / upper params (the symmetrization and the upper factor formed in
# the LAPACK loop), the lower factor of small matrices through LAPACK's "L" and a transpose, and
# single large matrices (linalg_kernels.SINGLE_MIN) on the compiled path


def _herm_pd(shape, seed, dt, skew=0.01):
    a = rnd(shape, seed, dt)
    n = shape[-1]
    spd = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n, dtype=dt)
    return (spd + skew * np.triu(rnd(shape, seed + 1, dt), 1)).astype(dt)  # not quite Hermitian


_sym_lower = fjax.jit(lambda a: LL.cholesky(a))
_sym_upper = fjax.jit(lambda a: LL.cholesky_factor(a, upper=True))
_nosym_upper = fjax.jit(lambda a: LL.cholesky_factor(a, upper=True, symmetrize_input=False))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(3, 5, 5), (2, 64, 64), (2, 300, 300), (130, 130), (7, 7), (2, 2, 3, 3)])
def test_cholesky_symmetrize_upper(dt, shape):
    a = _herm_pd(shape, 3, dt)
    s = (a + np.conj(np.swapaxes(a, -1, -2))) / np.asarray(2, dt)
    flat_a, flat_s = a.reshape((-1,) + shape[-2:]), s.reshape((-1,) + shape[-2:])
    want = np.stack([sla.cholesky(m, lower=True) for m in flat_s]).reshape(shape)
    want_raw = np.stack([sla.cholesky(np.tril(m) + np.conj(np.tril(m, -1).T), lower=True) for m in flat_a])
    want_raw = want_raw.reshape(shape)
    H = lambda x: np.conj(np.swapaxes(np.asarray(x), -1, -2))  # noqa: E731
    tol = TOL[dt] * shape[-1]
    for got in (LL.cholesky(a), _sym_lower(a)):
        assert got.dtype == dt and got.shape == shape
        np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)
    for got in (LL.cholesky_factor(a, upper=True), _sym_upper(a)):
        np.testing.assert_allclose(H(got), want, rtol=tol, atol=tol)
        np.testing.assert_array_equal(np.tril(np.asarray(got), -1), 0)
    for got in (LL.cholesky_factor(a, upper=True, symmetrize_input=False), _nosym_upper(a)):
        np.testing.assert_allclose(H(got), want_raw, rtol=tol, atol=tol)
    # the fused symmetrization is the elementwise one, bit for bit (real dtypes: in the loop)
    np.testing.assert_array_equal(np.asarray(_sym_lower(a)), np.asarray(LL.cholesky(s, symmetrize_input=False)))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_cholesky_lower_matches_scipy_bitwise(dt):
    # small matrices: LAPACK's "L" factorization, as scipy's potrf(lower=1) on a Fortran copy
    a = _herm_pd((4, 64, 64), 5, dt, skew=0)
    (potrf,) = sla.get_lapack_funcs(("potrf",), (a,))
    want = np.stack([potrf(m, lower=1, clean=1)[0] for m in a])
    np.testing.assert_array_equal(np.asarray(_chol_jit(a)), want)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("lower", [True, False])
def test_cho_factor_solve_paths(dt, lower):
    import fjax.scipy.linalg as fsl

    for shape, k in (((256, 16, 16), 1), ((3, 64, 64), 4), ((200, 200), 1), ((200, 200), 300)):
        a = _herm_pd(shape, 7, dt, skew=0)
        b = rnd(shape[:-1] + (k,), 8, dt)
        f = lambda a, b: fsl.cho_solve(fsl.cho_factor(a, lower=lower), b)  # noqa: E731
        for x in (f(a, b), fjax.jit(f)(a, b)):
            res = np.abs(a @ np.asarray(x) - b).max() / (np.abs(a).max() * np.abs(np.asarray(x)).max())
            assert res < 50 * np.finfo(dt).eps * shape[-1], (shape, k, res)
        c = np.asarray(fjax.jit(lambda a: fsl.cho_factor(a, lower=lower)[0])(a))
        np.testing.assert_array_equal(np.triu(c, 1) if lower else np.tril(c, -1), 0)
    bad = -np.eye(4, dtype=dt)[None].repeat(3, 0)
    bad[1] = np.eye(4, dtype=dt)
    c = np.asarray(fsl.cho_factor(bad, lower=lower)[0])
    assert np.isnan(c[0]).all() and np.isnan(c[2]).all() and not np.isnan(c[1]).any()


def test_cholesky_params_grad_and_vmap():
    from fjax.test_util import check_grads

    a = _herm_pd((4, 4), 9, np.float64, skew=0.1)
    for upper in (False, True):
        f = lambda x: LL.cholesky_factor(x, upper=upper)  # noqa: E731
        check_grads(f, (a,), order=2, modes=("fwd", "rev"))
        batch = np.stack([a, a + np.eye(4)])
        np.testing.assert_allclose(np.asarray(fjax.vmap(f)(batch)), np.stack([np.asarray(f(m)) for m in batch]))
    # the JVP of the fused symmetrization is that of the elementwise one
    t = rnd((4, 4), 10, np.float64)
    _, d1 = fjax.jvp(lambda x: LL.cholesky(x), (a,), (t,))
    _, d2 = fjax.jvp(lambda x: LL.cholesky((x + x.T) / 2, symmetrize_input=False), (a,), (t,))
    np.testing.assert_allclose(np.asarray(d1), np.asarray(d2), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dt", DTYPES)
def test_triangular_solve_single_large(dt):
    # one matrix past SINGLE_MIN: the compiled loop (no Fortran copies), eagerly and under jit
    n = 160
    a = rnd((n, n), 11, dt) + 3 * n * np.eye(n, dtype=dt)
    b = rnd((n, 3), 12, dt)
    jit_solve = fjax.jit(lambda a, b: LL.triangular_solve(a, b, left_side=True, lower=True, transpose_a=True))
    want = np.linalg.solve(np.tril(a).T, b)
    for got in (LL.triangular_solve(a, b, left_side=True, lower=True, transpose_a=True), jit_solve(a, b)):
        close(got, want, dt)
    at = np.swapaxes(np.ascontiguousarray(a.T), -1, -2)  # a non-contiguous view of the same matrix
    close(LL.triangular_solve(at, b, left_side=True, lower=True, transpose_a=True), want, dt)


def test_blas_threads_restored():
    # the loops run scipy's OpenBLAS on one thread below PARALLEL_MACS, and give the count back
    from fjax import _blas
    from fjax.backends.numba import linalg_kernels as lk

    a = _herm_pd((3, 8, 8), 13, np.float64, skew=0)
    seen = []
    real_use = _blas.use
    try:
        _blas.use = lambda n: (seen.append(n), real_use(n))  # noqa: E731
        lk.cholesky(a)
        lk.triangular_solve(a, a[..., :1], left_side=True, lower=True, transpose_a=False, conjugate_a=False,
                            unit_diagonal=False)  # fmt: skip
    finally:
        _blas.use = real_use
    assert seen and all(n == 1 for n in seen[::2])
    assert _blas._current == _blas.DEFAULT
