"""Tests of lax.linalg primitives and the jnp.linalg decompositions/solvers.

Values against numpy/scipy (float32 and float64, batched, zero-size batches, near-singular and
repeated-eigenvalue inputs); derivatives with check_grads (float64, order 2 where smooth; for
eigh/svd/qr gauge-invariant functions of the vectors); vmap and jit against eager.
"""

import numpy as np
import pytest
import scipy.linalg as sla
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.lax import linalg as LL
from fjax.test_util import check_grads

TOL = {np.float32: 2e-4, np.float64: 1e-10}

batches = st.sampled_from([(), (2,), (0,), (2, 1)])
sizes = st.integers(1, 5)
dtypes = st.sampled_from([np.float32, np.float64])


def rnd(shape, seed, dtype=np.float64):
    return np.random.RandomState(seed).randn(*shape).astype(dtype)


def spd(shape, seed, dtype=np.float64):
    a = rnd(shape, seed)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


def close(x, y, dtype, scale=1.0):
    x = np.asarray(x)
    y = np.asarray(y)
    assert x.shape == y.shape, (x.shape, y.shape)
    tol = TOL[np.dtype(dtype).type] * scale
    np.testing.assert_allclose(x, y, rtol=tol, atol=tol)


@pytest.fixture(autouse=True)
def _x64(x64):
    # every test runs with x64 on so float64 cases stay float64; float32 inputs stay float32
    yield


# ---------------------------------------------------------------------------------------------
# primitives against numpy / scipy


@given(batches, sizes, dtypes, st.integers(0, 100))
def test_cholesky_values(b, n, dt, seed):
    a = spd(b + (n, n), seed, dt)
    L = LL.cholesky(a)
    assert L.dtype == dt and L.shape == a.shape
    if a.size:
        close(L, np.linalg.cholesky(a), dt, 10)


def test_cholesky_not_pd_gives_nan():
    a = np.stack([np.eye(2), -np.eye(2)])
    L = np.asarray(LL.cholesky(a))
    assert np.all(np.isfinite(L[0])) and np.all(np.isnan(L[1]))


@given(batches, sizes, dtypes, st.integers(0, 100))
def test_eigh_values(b, n, dt, seed):
    a = spd(b + (n, n), seed, dt)
    v, w = LL.eigh(a)
    assert w.dtype == dt and v.shape == a.shape and w.shape == b + (n,)
    if a.size:
        close(w, np.linalg.eigvalsh(a), dt, 20 * n)
        close(np.asarray(v) @ (np.asarray(w)[..., None] * np.swapaxes(np.asarray(v), -1, -2)), a, dt, 20 * n)


def test_eigh_repeated_eigenvalues_and_subset():
    a = np.diag([2.0, 2.0, 2.0, 5.0])
    v, w = LL.eigh(a)
    close(w, [2, 2, 2, 5], np.float64)
    close(np.asarray(v).T @ np.asarray(v), np.eye(4), np.float64)
    v2, w2 = LL.eigh(spd((4, 4), 1), subset_by_index=(1, 3))
    close(w2, np.linalg.eigvalsh(spd((4, 4), 1))[1:3], np.float64)
    assert v2.shape == (4, 2)


@given(batches, sizes, sizes, dtypes, st.integers(0, 100), st.booleans())
def test_svd_values(b, m, n, dt, seed, full):
    a = rnd(b + (m, n), seed, dt)
    uu, s, vh = LL.svd(a, full_matrices=full)
    k = min(m, n)
    assert s.shape == b + (k,) and uu.shape == b + (m, m if full else k) and vh.shape == b + (n if full else k, n)
    if a.size:
        close(s, np.linalg.svd(a, compute_uv=False), dt, 10)
        uk, vk = np.asarray(uu)[..., :, :k], np.asarray(vh)[..., :k, :]
        close((uk * np.asarray(s)[..., None, :]) @ vk, a, dt, 10)
    assert LL.svd(a, compute_uv=False).shape == b + (k,)


@given(batches, sizes, sizes, dtypes, st.integers(0, 100), st.booleans())
def test_qr_values(b, m, n, dt, seed, full):
    a = rnd(b + (m, n), seed, dt)
    q, r = LL.qr(a, full_matrices=full)
    q_np, r_np = np.linalg.qr(a, mode="complete" if full else "reduced")
    close(q, q_np, dt, 10)
    close(r, r_np, dt, 10)


def test_qr_pivoting():
    a = rnd((5, 3), 0)
    q, r, p = LL.qr(a, pivoting=True, full_matrices=False)
    q2, r2, p2 = sla.qr(a, pivoting=True, mode="economic")
    close(q, q2, np.float64)
    close(r, r2, np.float64)
    assert p.dtype == np.int32 and np.array_equal(p, p2)


@given(batches, sizes, sizes, dtypes, st.integers(0, 100))
def test_lu_values(b, m, n, dt, seed):
    a = rnd(b + (m, n), seed, dt)
    lu, piv, perm = LL.lu(a)
    assert piv.dtype == np.int32 and perm.dtype == np.int32
    assert piv.shape == b + (min(m, n),) and perm.shape == b + (m,)
    if a.size:
        k = min(m, n)
        lu_ = np.asarray(lu)
        L = np.tril(lu_[..., :, :k], -1) + np.eye(m, k)
        U = np.triu(lu_[..., :k, :])
        close(L @ U, np.take_along_axis(a, np.asarray(perm)[..., None], axis=-2), dt, 10)
        flat = a.reshape((-1, m, n))
        for i, x in enumerate(flat):
            lu_s, piv_s = sla.lu_factor(x) if m == n else (None, None)
            if m == n:
                close(lu_.reshape(flat.shape)[i], lu_s, dt, 10)
                assert np.array_equal(np.asarray(piv).reshape(-1, k)[i], piv_s)
        np.testing.assert_array_equal(LL.lu_pivots_to_permutation(piv, m), perm)


@given(batches, sizes, st.integers(1, 3), dtypes, st.integers(0, 100), st.booleans(), st.booleans(), st.booleans())
def test_triangular_solve_values(b, n, k, dt, seed, left, lower, trans):
    a = rnd(b + (n, n), seed, dt) + 3 * np.eye(n, dtype=dt)
    rhs = rnd(b + ((n, k) if left else (k, n)), seed + 1, dt)
    x = LL.triangular_solve(a, rhs, left_side=left, lower=lower, transpose_a=trans)
    t = np.tril(a) if lower else np.triu(a)
    op = np.swapaxes(t, -1, -2) if trans else t
    want = (
        np.linalg.solve(op, rhs)
        if left
        else np.swapaxes(np.linalg.solve(np.swapaxes(op, -1, -2), np.swapaxes(rhs, -1, -2)), -1, -2)
    )
    if rhs.size:
        close(x, want, dt, 100)


def test_triangular_solve_unit_and_conj():
    a = rnd((3, 3), 0) + 1j * rnd((3, 3), 1)
    b = rnd((3, 2), 2) + 0j
    x = LL.triangular_solve(a, b, left_side=True, lower=True, unit_diagonal=True, transpose_a=True, conjugate_a=True)
    t = np.tril(a, -1) + np.eye(3)
    close(x, np.linalg.solve(t.conj().T, b), np.float64)


@given(batches, sizes, st.integers(1, 3), dtypes, st.integers(0, 100))
def test_tridiagonal_solve_values(b, m, n, dt, seed):
    d = rnd(b + (m,), seed, dt) + 4
    dl = rnd(b + (m,), seed + 1, dt)
    du = rnd(b + (m,), seed + 2, dt)
    dl[..., 0] = 0
    du[..., -1] = 0
    rhs = rnd(b + (m, n), seed + 3, dt)
    A = np.zeros(b + (m, m), dt)
    idx = np.arange(m)
    A[..., idx, idx] = d
    A[..., idx[1:], idx[:-1]] = dl[..., 1:]
    A[..., idx[:-1], idx[1:]] = du[..., :-1]
    x = LL.tridiagonal_solve(dl, d, du, rhs)
    if rhs.size:
        close(x, np.linalg.solve(A, rhs), dt, 100)


def test_eig_schur_hessenberg():
    a = rnd((2, 4, 4), 3)
    w, vl, vr = LL.eig(a)
    for i in range(2):
        w_s, vl_s, vr_s = sla.eig(a[i], left=True)
        close(np.sort_complex(np.asarray(w[i])), np.sort_complex(w_s), np.float64)
    close(a.astype(complex) @ np.asarray(vr), np.asarray(vr) * np.asarray(w)[:, None, :], np.float64, 100)
    vlh = np.conj(np.swapaxes(np.asarray(vl), -1, -2))
    close(vlh @ a, np.asarray(w)[:, :, None] * vlh, np.float64, 100)
    t, z = LL.schur(a[0])
    close(np.asarray(z) @ np.asarray(t) @ np.asarray(z).T, a[0], np.float64, 100)
    h, taus = LL.hessenberg(a[0])
    h2, _ = sla.hessenberg(a[0], calc_q=True), None
    close(np.triu(np.asarray(h), -1), h2[0] if isinstance(h2, tuple) else h2, np.float64, 100)


def test_errors():
    # JAX 0.10.2's words: symmetrizing (the default) adds x and its transpose first; without it,
    # the shape rule's square check
    with pytest.raises(TypeError, match=r"^add got incompatible shapes for broadcasting: \(2, 3\), \(3, 2\)\.$"):
        LL.cholesky(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"^The input to cholesky must be a square matrix\. Got shape \(2, 3\)\.$"):
        LL.cholesky(np.ones((2, 3)), symmetrize_input=False)
    with pytest.raises(TypeError, match="float32"):
        LL.lu(np.ones((2, 2), np.int32))
    with pytest.raises(ValueError, match="triangular_solve"):
        LL.triangular_solve(np.eye(3), np.ones((2, 2)), left_side=True)
    with pytest.raises(NotImplementedError, match="eigenvectors"):
        fjax.jvp(lambda x: LL.eig(x)[2], (np.eye(2),), (np.eye(2),))
    with pytest.raises(NotImplementedError, match="full matrices"):
        fjax.jvp(lambda x: LL.svd(x)[0], (np.ones((3, 2)),), (np.ones((3, 2)),))


# ---------------------------------------------------------------------------------------------
# derivatives (float64; gauge-invariant functions of eigen/singular vectors)

A4 = rnd((2, 4, 4), 7)
S4 = spd((2, 4, 4), 8)
R53 = rnd((2, 5, 3), 9)
B42 = rnd((2, 4, 2), 10)


def _sym_proj(v):
    return v @ jnp.swapaxes(v, -1, -2)


@pytest.mark.parametrize(
    "name,f,args",
    [
        ("cholesky", LL.cholesky, (S4,)),
        ("eigh_w", lambda x: LL.eigh(x)[1], (S4,)),
        ("eigh_v", lambda x: LL.eigh(x)[0] * LL.eigh(x)[0][..., :1, :], (S4,)),
        ("svd_s", lambda x: LL.svd(x, compute_uv=False), (R53,)),
        ("svd_uv", lambda x: _sym_proj(LL.svd(x, full_matrices=False)[0][..., :2]), (R53,)),
        ("svd_vh", lambda x: _sym_proj(jnp.swapaxes(LL.svd(x, full_matrices=False)[2], -1, -2)[..., :2]), (R53,)),
        ("qr", lambda x: LL.qr(x, full_matrices=False), (R53,)),
        ("lu", lambda x: LL.lu(x)[0], (A4,)),
        ("lu_wide", lambda x: LL.lu(x)[0], (np.swapaxes(R53, -1, -2),)),
        ("trsolve", lambda a, b: LL.triangular_solve(a, b, left_side=True, lower=True), (S4, B42)),
        ("trsolve_r", lambda a, b: LL.triangular_solve(a, jnp.swapaxes(b, -1, -2), transpose_a=True), (S4, B42)),
        ("tridiag", LL.tridiagonal_solve, (rnd((2, 4), 1), rnd((2, 4), 2) + 5, rnd((2, 4), 3), B42)),
        ("solve", jnp.linalg.solve, (A4, B42)),
        ("inv", jnp.linalg.inv, (A4,)),
        ("det", jnp.linalg.det, (A4,)),
        ("slogdet", lambda a: jnp.linalg.slogdet(a)[1], (A4,)),
        ("pinv", jnp.linalg.pinv, (R53 + 2 * np.eye(5, 3),)),
        ("eigvalsh", jnp.linalg.eigvalsh, (S4,)),
        ("nuc", lambda a: jnp.linalg.norm(a, "nuc", axis=(-2, -1)), (R53,)),
    ],
)
def test_grads(name, f, args):
    check_grads(f, args, 2, modes=("fwd", "rev"))


def test_grads_eigvals_and_lstsq():
    check_grads(lambda a: jnp.real(jnp.linalg.eigvals(a)), (A4,), 1)
    check_grads(lambda a: jnp.linalg.lstsq(a, B42[0][:, 0].repeat(2)[:5])[0], (R53[0],), 1)


def test_grads_float32():
    a = S4.astype(np.float32)
    check_grads(LL.cholesky, (a,), 1, modes=("fwd", "rev"))
    check_grads(lambda x: jnp.linalg.solve(x, B42.astype(np.float32)), (A4.astype(np.float32),), 1)


def test_grad_near_singular_is_finite():
    a = np.array([[1.0, 1.0], [1.0, 1.0 + 1e-8]])
    g = fjax.grad(lambda x: jnp.linalg.slogdet(x)[1])(a)
    assert np.all(np.isfinite(g))
    close(g, np.linalg.inv(a).T, np.float64, 1e3)


# ---------------------------------------------------------------------------------------------
# vmap and jit against eager

_jit_chol_solve = fjax.jit(lambda a, b: jnp.linalg.solve(a, b) + LL.cholesky(a)[..., :2])
_jit_eigh = fjax.jit(lambda a: LL.eigh(a)[1])
_jit_grad_logdet = fjax.jit(fjax.grad(lambda a: jnp.sum(jnp.linalg.slogdet(a)[1]) + jnp.sum(LL.cholesky(a))))


def test_vmap_matches_batched():
    for f, x in [
        (LL.cholesky, S4),
        (lambda a: LL.eigh(a)[1], S4),
        (lambda a: LL.svd(a, compute_uv=False), R53),
        (lambda a: LL.qr(a)[1], R53),
        (lambda a: LL.lu(a)[0], A4),
        (jnp.linalg.det, A4),
    ]:
        close(fjax.vmap(f)(x), f(x), np.float64)
    x = fjax.vmap(lambda a, b: LL.triangular_solve(a, b, left_side=True), in_axes=(None, 0))(S4[0], B42)
    close(x, LL.triangular_solve(np.stack([S4[0]] * 2), B42, left_side=True), np.float64)
    x = fjax.vmap(jnp.linalg.solve, in_axes=(0, 2))(A4, np.moveaxis(B42[..., :1], 0, 2))
    close(x, jnp.linalg.solve(A4, B42[..., :1]), np.float64)


def test_jit_matches_eager():
    close(_jit_chol_solve(S4, B42), jnp.linalg.solve(S4, B42) + LL.cholesky(S4)[..., :2], np.float64)
    close(_jit_eigh(S4), LL.eigh(S4)[1], np.float64)
    g = fjax.grad(lambda a: jnp.sum(jnp.linalg.slogdet(a)[1]) + jnp.sum(LL.cholesky(a)))(S4)
    close(_jit_grad_logdet(S4), g, np.float64)


# ---------------------------------------------------------------------------------------------
# jnp.linalg against numpy


@given(batches, sizes, dtypes, st.integers(0, 100))
def test_jnp_solvers(b, n, dt, seed):
    a = rnd(b + (n, n), seed, dt) + n * np.eye(n, dtype=dt)
    rhs = rnd(b + (n, 2), seed + 1, dt)
    close(jnp.linalg.solve(a, rhs), np.linalg.solve(a, rhs), dt, 100)
    close(jnp.linalg.inv(a), np.linalg.inv(a), dt, 100)
    close(jnp.linalg.det(a), np.linalg.det(a), dt, 100)
    s, ld = jnp.linalg.slogdet(a)
    s2, ld2 = np.linalg.slogdet(a)
    close(s, s2, dt)
    close(ld, ld2, dt, 100)
    assert jnp.linalg.solve(a, rhs).dtype == dt


def test_jnp_misc_against_numpy():
    x = rnd((6, 3), 0)
    y = rnd((6,), 1)
    for p, q in zip(jnp.linalg.lstsq(x, y), np.linalg.lstsq(x, y, rcond=None)):
        close(p, q, np.float64)
    close(jnp.linalg.pinv(x), np.linalg.pinv(x), np.float64)
    close(jnp.linalg.matrix_power(A4, 3), np.linalg.matrix_power(A4, 3), np.float64, 100)
    close(jnp.linalg.matrix_power(A4, -2), np.linalg.matrix_power(A4, -2), np.float64, 1e3)
    sing = x @ x.T
    assert int(jnp.linalg.matrix_rank(sing)) == np.linalg.matrix_rank(sing) == 3
    for p in [None, 1, -1, 2, -2, np.inf, -np.inf, "fro", "nuc"]:
        close(jnp.linalg.cond(A4, p), np.linalg.cond(A4, p), np.float64, 1e3)
        close(jnp.linalg.norm(A4, p, axis=(1, 2)), np.linalg.norm(A4, p, axis=(1, 2)), np.float64, 10)
    ms = [rnd((3, 5), 0), rnd((5, 2), 1), rnd((2, 7), 2), rnd((7,), 3)]
    close(jnp.linalg.multi_dot(ms), np.linalg.multi_dot(ms), np.float64)
    t = rnd((4, 6, 8, 3), 4)
    close(jnp.linalg.tensorinv(t, 2), np.linalg.tensorinv(t, 2), np.float64, 1e3)
    bb = rnd((4, 6), 5)
    close(jnp.linalg.tensorsolve(t, bb), np.linalg.tensorsolve(t, bb), np.float64, 1e3)
    close(jnp.linalg.svd(S4[0], hermitian=True).S, np.linalg.svd(S4[0], hermitian=True).S, np.float64)
    close(jnp.linalg.diagonal(A4, offset=1), np.diagonal(A4, 1, -2, -1), np.float64)
    r = jnp.linalg.eigh(S4)
    close(r.eigenvalues, np.linalg.eigh(S4).eigenvalues, np.float64)
    close(jnp.linalg.cholesky(S4, upper=True), np.linalg.cholesky(S4, upper=True), np.float64)
    close(jnp.linalg.qr(R53, mode="r"), np.linalg.qr(R53, mode="r"), np.float64)
    assert jnp.linalg.det(np.ones((3, 3))) == 0
    s, ld = jnp.linalg.slogdet(np.zeros((2, 2)))
    assert s == 0 and ld == -np.inf
    assert jnp.linalg.cond(np.array([[1.0, 1.0], [1.0, 1.0]]), 1) == np.inf


def test_jnp_int_promotion_and_zero_size():
    fjax.config.update("jax_enable_x64", False)
    assert jnp.linalg.inv(np.eye(2, dtype=np.int32)).dtype == np.float32
    fjax.config.update("jax_enable_x64", True)
    assert jnp.linalg.solve(np.zeros((0, 0)), np.zeros((0,))).shape == (0,)
    assert jnp.linalg.inv(np.zeros((3, 0, 0))).shape == (3, 0, 0)
    assert jnp.linalg.det(np.zeros((0, 2, 2))).shape == (0,)
    assert jnp.linalg.eigh(np.zeros((0, 3, 3))).eigenvalues.shape == (0, 3)
    assert jnp.linalg.svd(np.zeros((0, 3, 2))).U.shape == (0, 3, 3)


# ---------------------------------------------------------------------------------------------
# custom_linear_solve and custom_root


def _lin_solve(a, b):
    def solve(mv, x):
        return jnp.linalg.solve(lax.stop_gradient(a), x)

    def tsolve(vm, x):
        return jnp.linalg.solve(jnp.swapaxes(lax.stop_gradient(a), -1, -2), x)

    return lax.custom_linear_solve(lambda x: a @ x, b, solve, tsolve)


def test_custom_linear_solve():
    a, b = A4[0] + 4 * np.eye(4), B42[0][:, 0]
    close(_lin_solve(a, b), np.linalg.solve(a, b), np.float64)
    check_grads(_lin_solve, (a, b), 2)
    close(
        fjax.vmap(_lin_solve)(A4 + 4 * np.eye(4), B42[..., 0]),
        np.linalg.solve(A4 + 4 * np.eye(4), B42[..., :1])[..., 0],
        np.float64,
    )
    close(fjax.jit(_lin_solve)(a, b), np.linalg.solve(a, b), np.float64)
    g = fjax.grad(lambda a, b: _lin_solve(a, b).sum(), argnums=(0, 1))(a, b)
    g2 = fjax.grad(lambda a, b: jnp.linalg.solve(a, b).sum(), argnums=(0, 1))(a, b)
    close(g[0], g2[0], np.float64)
    close(g[1], g2[1], np.float64)
    with pytest.raises(TypeError, match="transpose_solve"):
        fjax.grad(lambda b: lax.custom_linear_solve(lambda x: a @ x, b, lambda mv, x: x).sum())(b)


def _newton_sqrt(x):
    def solve(f, g):
        for _ in range(40):
            g = g - f(g) / (2 * g)
        return g

    return lax.custom_root(lambda y: y * y - x, 1.0, solve, lambda g, y: y / g(1.0))


def test_custom_root():
    close(_newton_sqrt(2.0), np.sqrt(2.0), np.float64)
    close(fjax.grad(_newton_sqrt)(2.0), 0.5 / np.sqrt(2.0), np.float64)
    check_grads(_newton_sqrt, (2.0,), 2)
    close(fjax.vmap(_newton_sqrt)(jnp.array([4.0, 9.0])), [2.0, 3.0], np.float64)
