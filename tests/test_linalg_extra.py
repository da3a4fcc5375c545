"""lax.linalg.cholesky_update / symmetric_product / qdwh, scipy.linalg.solve_sylvester / funm /
eigh(a, b) and scipy.signal.fftconvolve(axes=): against scipy/numpy (hypothesis), derivatives with
check_grads, vmap against a loop, jit against eager."""

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.signal as ssig
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
import fjax.scipy.linalg as fsl
import fjax.scipy.signal as fsig
from fjax.lax import linalg as LL
from fjax.test_util import check_grads

TOL = {np.float32: 2e-4, np.float64: 1e-10}
dtypes = st.sampled_from([np.float32, np.float64])


@pytest.fixture(autouse=True)
def _x64(x64):
    yield


def rnd(shape, seed, dt=np.float64):
    return np.random.RandomState(seed).randn(*shape).astype(dt)


def spd(n, seed, dt=np.float64):
    a = rnd((n, n), seed)
    return (a @ a.T + n * np.eye(n)).astype(dt)


def close(x, y, dt, scale=1.0):
    tol = TOL[np.dtype(dt).type] * scale
    np.testing.assert_allclose(np.asarray(x), y, rtol=tol, atol=tol)


_chol_update_jit = fjax.jit(LL.cholesky_update)
_sylv_jit = fjax.jit(fsl.solve_sylvester)


@given(st.integers(1, 5), dtypes, st.integers(0, 99))
def test_cholesky_update(n, dt, seed):
    a = spd(n, seed)
    r = sla.cholesky(a).astype(dt)
    w = rnd((n,), seed + 1, dt)
    want = sla.cholesky(a + np.outer(w, w).astype(np.float64))
    got = LL.cholesky_update(r, w)
    assert got.dtype == dt and got.shape == (n, n)
    close(got, want, dt, 10)
    ws = np.stack([w, 2 * w])
    got = fjax.vmap(LL.cholesky_update, (None, 0))(r, ws)
    close(got[1], np.asarray(LL.cholesky_update(r, 2 * w)), dt)


def test_cholesky_update_grads_jit_and_errors():
    r, w = sla.cholesky(spd(4, 0)), rnd((4,), 1)
    close(_chol_update_jit(r, w), sla.cholesky(spd(4, 0) + np.outer(w, w)), np.float64, 10)
    check_grads(LL.cholesky_update, (r, w), order=1, modes=("fwd", "rev"))
    with pytest.raises(ValueError, match="Rank-1 update"):
        LL.cholesky_update(r, w[:3])
    with pytest.raises(TypeError, match="floating"):
        LL.cholesky_update(np.eye(2, dtype=np.int32), np.ones(2, np.int32))


@given(st.integers(1, 4), st.integers(1, 4), st.booleans(), dtypes, st.integers(0, 99))
def test_symmetric_product(m, n, sym, dt, seed):
    a, c = rnd((2, m, n), seed, dt), rnd((2, m, m), seed + 1, dt)
    got = LL.symmetric_product(a, c, alpha=1.5, beta=-0.5, symmetrize_output=sym)
    want = 1.5 * a @ np.swapaxes(a, -1, -2) - 0.5 * c
    if sym:
        want = np.tril(want) + np.swapaxes(np.tril(want, -1), -1, -2)
    assert got.dtype == dt
    close(got, want, dt, 10)


def test_symmetric_product_grads_vmap_errors():
    a, c = rnd((3, 2), 0), rnd((3, 3), 1)
    f = lambda a, c: LL.symmetric_product(a, c, alpha=2.0, beta=0.5)  # noqa: E731
    check_grads(f, (a, c), order=2, modes=("fwd", "rev"))
    got = fjax.vmap(f, (0, None))(np.stack([a, -a]), c)
    close(got[0], np.asarray(got[1]), np.float64)
    with pytest.raises(ValueError, match="symmetric_update expects"):
        LL.symmetric_product(a, np.ones((2, 2)))


@given(st.integers(1, 5), st.integers(0, 3), st.sampled_from([np.float32, np.float64, np.complex128]), st.integers())
def test_qdwh_is_the_polar_decomposition(n, extra, dt, seed):
    m = n + extra
    seed %= 100
    x = rnd((m, n), seed) + (1j * rnd((m, n), seed + 1) if np.dtype(dt).kind == "c" else 0)
    x = x.astype(dt)
    u, h, num_iters, converged = LL.qdwh(x)
    want_u, want_h = sla.polar(x.astype(np.complex128 if np.dtype(dt).kind == "c" else np.float64))
    real = np.float32 if dt == np.float32 else np.float64
    assert u.dtype == dt and h.dtype == dt and u.shape == (m, n) and h.shape == (n, n)
    assert bool(converged) and 0 <= int(num_iters) <= 10
    cond = np.linalg.cond(x)
    close(u, want_u, real, 10 * cond)
    close(h, want_h, real, 10 * cond * max(1.0, np.abs(want_h).max()))


def test_qdwh_jvp_and_errors():
    x = rnd((4, 3), 0) + 2 * np.eye(4, 3)
    check_grads(lambda x: LL.qdwh(x)[0], (x,), order=1, modes=("fwd",))
    with pytest.raises(ValueError, match="M >= N"):
        LL.qdwh(np.ones((2, 3)))
    with pytest.raises(NotImplementedError, match="dynamic_shape"):
        LL.qdwh(x, dynamic_shape=(3, 3))


@given(st.integers(1, 4), st.integers(1, 4), st.integers(0, 99))
def test_solve_sylvester(m, n, seed):
    a = rnd((m, m), seed) + 3 * np.eye(m)
    b = rnd((n, n), seed + 1) + 3 * np.eye(n)
    c = rnd((2, m, n), seed + 2)
    want = np.stack([sla.solve_sylvester(a, b, ci) for ci in c])
    close(fsl.solve_sylvester(a, b, c), want, np.float64, 1e3)
    close(_sylv_jit(a, b, c[0]), want[0], np.float64, 1e3)
    got = fjax.vmap(fsl.solve_sylvester, (None, None, 0))(a, b, c)
    close(got, want, np.float64, 1e3)
    got32 = fsl.solve_sylvester(a.astype(np.float32), b.astype(np.float32), c[0].astype(np.float32))
    assert got32.dtype == np.float32
    close(got32, want[0], np.float32, 10)


def test_solve_sylvester_grads_nan_and_errors():
    a, b, c = rnd((3, 3), 0) + 3 * np.eye(3), rnd((2, 2), 1) + 3 * np.eye(2), rnd((3, 2), 2)
    check_grads(fsl.solve_sylvester, (a, b, c), order=2, modes=("fwd", "rev"))
    # eigenvalues of A and -B coincide: NaN (as JAX)
    assert np.isnan(np.asarray(fsl.solve_sylvester(np.eye(2), -np.eye(2), np.ones((2, 2))))).all()
    with pytest.raises(ValueError, match="Incompatible shapes"):
        fsl.solve_sylvester(a, b, c.T)
    with pytest.raises(ValueError, match="Unrecognized method"):
        fsl.solve_sylvester(a, b, c, method="qr")


FUNCS = {
    "exp": (jnp.exp, np.exp),
    "sin": (jnp.sin, np.sin),
    "sqrt4p": (lambda x: jnp.sqrt(4 + x), lambda x: np.sqrt(4 + x)),
}


@given(st.integers(1, 5), st.sampled_from(sorted(FUNCS)), st.integers(0, 99))
def test_funm(n, fname, seed):
    a = rnd((n, n), seed) / np.sqrt(n)
    fj, fn = FUNCS[fname]
    want = sla.funm(a.astype(np.complex128), fn)
    got = fsl.funm(a, fj)
    assert np.dtype(got.dtype).kind == "c"
    close(got, want, np.float64, 1e5)
    got, err = fsl.funm(a, fj, disp=False)
    assert 0 <= float(err) <= 1


def test_funm_not_differentiable_and_errors():
    with pytest.raises(NotImplementedError, match="schur"):
        fjax.grad(lambda a: jnp.real(fsl.funm(a, jnp.exp)).sum())(np.eye(2))
    with pytest.raises(ValueError, match="square"):
        fsl.funm(np.ones((2, 3)), jnp.exp)


@given(st.integers(1, 5), st.sampled_from([1, 2, 3]), st.booleans(), dtypes, st.integers(0, 99))
def test_generalized_eigh(n, typ, lower, dt, seed):
    a = rnd((n, n), seed)
    a = (a + a.T).astype(dt)
    b = spd(n, seed + 1, dt)
    junk = np.triu(np.full((n, n), 7.0), 1).astype(dt)  # the other triangle is never read
    a_in, b_in = (np.tril(a) + junk, np.tril(b) + junk) if lower else (np.triu(a) + junk.T, np.triu(b) + junk.T)
    w, v = fsl.eigh(a_in, b_in, lower=lower, type=typ)
    want_w = sla.eigh(a.astype(np.float64), b.astype(np.float64), type=typ, eigvals_only=True)
    scale = 1e2 * max(1.0, np.abs(want_w).max())
    close(w, want_w, dt, scale)
    v = np.asarray(v, np.float64)
    if typ == 1:
        close(a @ v, (b @ v) * np.asarray(w), dt, scale)
    elif typ == 2:
        close(a @ b @ v, v * np.asarray(w), dt, scale * 10)
    else:
        close(b @ a @ v, v * np.asarray(w), dt, scale * 10)
    if typ in (1, 2):
        close(v.T @ b @ v, np.eye(n), dt, scale)


def test_generalized_eigh_grads_and_subset():
    a = rnd((3, 3), 0)
    a = a + a.T
    b = spd(3, 1)

    def f(a, b):
        return fsl.eigh(a, b, eigvals_only=True)

    check_grads(f, (a, b), order=1, modes=("fwd", "rev"))
    np.testing.assert_allclose(
        np.asarray(fsl.eigh(a, b, eigvals_only=True, eigvals=(1, 2))),
        sla.eigh(a, b, eigvals_only=True, subset_by_index=(1, 2)),
        rtol=1e-10,
    )


@given(
    st.lists(st.integers(1, 5), min_size=1, max_size=3),
    st.lists(st.integers(1, 5), min_size=3, max_size=3),
    st.sampled_from(["full", "same", "valid"]),
    st.integers(0, 99),
    st.data(),
)
def test_fftconvolve_axes(s1, s2, mode, seed, data):
    nd = len(s1)
    axes = data.draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=nd, unique_by=lambda i: i % nd))
    canon = {i % nd for i in axes}
    s2 = [s2[i] if i in canon else s1[i] for i in range(nd)]
    a, b = rnd(tuple(s1), seed), rnd(tuple(s2), seed + 1)
    if mode == "valid" and not (all(s1[i] >= s2[i] for i in canon) or all(s2[i] >= s1[i] for i in canon)):
        with pytest.raises(ValueError):
            fsig.fftconvolve(a, b, mode, axes=axes)
        return
    want = ssig.fftconvolve(a, b, mode, axes=axes)
    got = fsig.fftconvolve(a, b, mode, axes=axes)
    assert got.shape == want.shape
    close(got, want, np.float64, 1e3)


def test_fftconvolve_axes_batch_mismatch_and_grads():
    with pytest.raises(ValueError, match="mapped axes must have same shape"):
        fsig.fftconvolve(np.ones((2, 4)), np.ones((3, 4)), axes=1)
    a, b = rnd((2, 5), 0), rnd((2, 3), 1)
    check_grads(lambda a, b: fsig.fftconvolve(a, b, "same", axes=(1,)), (a, b), order=1, modes=("fwd", "rev"))
