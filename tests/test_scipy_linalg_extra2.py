"""Tests of fjax.scipy.linalg's special matrices (circulant, companion, convolution_matrix, dft,
fiedler, fiedler_companion, hadamard, hankel, helmert, invhilbert, invpascal, leslie, pascal) and
of qr_multiply and rsf2csf, against scipy.linalg (float32 and float64), with jit, vmap and grad."""

import warnings

import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
import fjax.scipy.linalg as L
from fjax.test_util import check_grads

TOL = {np.float32: 1e-5, np.float64: 1e-12}
DTYPES = st.sampled_from([np.float32, np.float64])


def rnd(shape, seed, dtype=np.float64):
    return np.random.RandomState(seed).randn(*shape).astype(dtype)


def close(x, y, dt=np.float64, scale=1.0, dtype_too=True):
    x, y = np.asarray(x), np.asarray(y)
    assert x.shape == y.shape, (x.shape, y.shape)
    if dtype_too:
        assert x.dtype == y.dtype, (x.dtype, y.dtype)
    tol = TOL[np.dtype(dt).type] * scale
    np.testing.assert_allclose(x, y, rtol=tol, atol=tol * max(1.0, np.abs(y).max(initial=0.0)))


def batched(f, *args):
    """scipy's ``f`` applied slice by slice over the leading dimensions (older scipy does not batch)."""
    lead = np.broadcast_shapes(*[a.shape[:-1] for a in args])
    args = [np.broadcast_to(a, lead + a.shape[-1:]) for a in args]
    outs = [f(*[a[i] for a in args]) for i in np.ndindex(*lead)]
    return np.stack(outs).reshape(lead + outs[0].shape) if lead else outs[0]


@pytest.fixture(autouse=True)
def _x64(x64):
    yield


# ---------------------------------------------------------------------------------------------
# matrices built from arrays


@given(st.integers(1, 6), st.integers(1, 6), DTYPES, st.integers(0, 10**6), st.sampled_from([(), (3,), (2, 1)]))
def test_array_matrices(m, n, dt, seed, batch):
    c, r = rnd(batch + (m,), seed, dt), rnd((n,), seed + 1, dt)
    close(L.circulant(c), batched(sl.circulant, c), dt)
    close(L.fiedler(c), batched(sl.fiedler, c), dt, dtype_too=m > 1)  # scipy: float64 [[0.]] for m = 1
    close(L.hankel(c), batched(sl.hankel, c), dt)
    close(L.hankel(c, r), batched(sl.hankel, c, r), dt)
    close(L.toeplitz(c, r), batched(sl.toeplitz, c, r), dt)
    if m > 1:
        s = rnd(batch + (m - 1,), seed + 2, dt)
        close(L.leslie(c, s), batched(sl.leslie, c, s), dt)
    for mode in ("full", "valid", "same"):
        close(L.convolution_matrix(c, n, mode), batched(lambda a: sl.convolution_matrix(a, n, mode), c), dt)
        v = rnd((n,), seed + 3, dt)
        close(
            L.convolution_matrix(c[(0,) * len(batch)], n, mode) @ v, np.convolve(c[(0,) * len(batch)], v, mode), dt, 10
        )


@given(st.integers(2, 8), DTYPES, st.integers(0, 10**6), st.sampled_from([(), (2,), (2, 3)]))
def test_companions(k, dt, seed, batch):
    a = rnd(batch + (k,), seed, dt)
    a[..., 0] += np.where(a[..., 0] >= 0, 1, -1).astype(dt)  # leading coefficients away from 0
    close(L.companion(a), batched(sl.companion, a), dt, 10)
    close(L.fiedler_companion(a), batched(sl.fiedler_companion, a), dt, 10)
    if not batch and k > 2:
        # both have the polynomial's roots as eigenvalues
        roots = np.sort_complex(np.roots(a.astype(np.float64)))
        ev = np.sort_complex(np.linalg.eigvals(np.asarray(L.fiedler_companion(a), np.float64)))
        np.testing.assert_allclose(ev, roots, rtol=1e-2 if dt == np.float32 else 1e-6, atol=1e-3)


def test_array_matrices_dtypes_and_ints():
    i = np.array([1, 4, 12, 45])
    for f in (L.circulant, L.fiedler, L.hankel):
        assert np.asarray(f(i)).dtype == np.int64
        close(f(i), getattr(sl, f.__name__)(i))
    assert L.companion(np.array([2, 4, 6])).dtype == np.float64
    close(L.companion(np.array([2, 4, 6])), sl.companion([2, 4, 6]))
    close(L.leslie(np.array([1, 2]), np.array([3])), sl.leslie([1, 2], [3]))
    close(L.convolution_matrix(i, 3), sl.convolution_matrix(i, 3))
    c = np.array([1 + 2j, 3 - 1j, 0.5j])
    close(L.circulant(c), sl.circulant(c))
    close(L.hankel(c, c[::-1]), sl.hankel(c, c[::-1]))


def test_array_matrices_errors():
    with pytest.raises(ValueError, match="at least 2"):
        L.companion(np.array([1.0]))
    with pytest.raises(ValueError, match="must not be zero"):
        L.companion(np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="must not be zero"):
        L.fiedler_companion(np.array([[1.0, 2.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="length"):
        L.leslie(np.array([1.0, 2.0]), np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="at least 1"):
        L.leslie(np.array([1.0]), np.zeros(0))
    with pytest.raises(ValueError, match="positive"):
        L.convolution_matrix(np.array([1.0, 2.0]), 0)
    with pytest.raises(ValueError, match="mode"):
        L.convolution_matrix(np.array([1.0, 2.0]), 2, "bogus")
    with pytest.raises(ValueError, match="at least 1"):
        L.convolution_matrix(np.zeros(0), 2)


def test_array_matrices_jit_vmap_grad():
    c, r = rnd((4,), 0), rnd((3,), 1)
    for f in (L.circulant, L.hankel, L.fiedler, L.companion, L.fiedler_companion):
        close(fjax.jit(f)(c), f(c))
        cs = rnd((3, 4), 2) + 3.0
        close(fjax.vmap(f)(cs), f(cs))
    close(fjax.jit(L.leslie)(c, r), sl.leslie(c, r))
    close(fjax.jit(lambda a: L.convolution_matrix(a, 5, "same"))(c), sl.convolution_matrix(c, 5, "same"))
    close(
        fjax.vmap(lambda a, b: L.hankel(a, b))(rnd((2, 4), 3), rnd((2, 3), 4)), L.hankel(rnd((2, 4), 3), rnd((2, 3), 4))
    )
    check_grads(L.circulant, (c,), order=2)
    check_grads(L.hankel, (c, r), order=2)
    check_grads(L.leslie, (c, r), order=2)
    check_grads(lambda a: L.convolution_matrix(a, 3, "valid"), (c,), order=2)
    check_grads(L.companion, (c + 3.0,), order=2)
    check_grads(L.fiedler_companion, (c + 3.0,), order=2)
    # fiedler is |a_i - a_j|: smooth where the entries of a differ
    check_grads(L.fiedler, (np.array([0.0, 1.0, 3.0, 7.0]),), order=1)
    g = fjax.grad(lambda a: L.companion(a).sum())(np.array([2.0, 4.0, 6.0]))
    np.testing.assert_allclose(g, [(4 + 6) / 4.0, -0.5, -0.5])


# ---------------------------------------------------------------------------------------------
# matrices defined by their size


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8])
def test_size_matrices(n):
    for scale in (None, "sqrtn", "n"):
        if n:
            close(L.dft(n, scale), sl.dft(n, scale))
    if n:
        close(L.helmert(n), sl.helmert(n))
        close(L.helmert(n, full=True), sl.helmert(n, full=True))
    else:  # scipy fails for n = 0
        assert L.helmert(0).shape == (0, 0) and L.helmert(0, full=True).shape == (0, 0)
    if n and not n & (n - 1):
        close(L.hadamard(n), sl.hadamard(n))
        close(L.hadamard(n, dtype=np.float32), sl.hadamard(n, dtype=np.float32), np.float32)
    close(L.invhilbert(n), sl.invhilbert(n), scale=10)
    if n:
        close(L.invhilbert(n, exact=True), sl.invhilbert(n, exact=True))
    for kind in ("symmetric", "lower", "upper"):
        close(L.pascal(n, kind), sl.pascal(n, kind) if n else np.zeros((0, 0), np.uint64))
        close(L.invpascal(n, kind), sl.invpascal(n, kind) if n else np.zeros((0, 0), np.int64))
        close(L.pascal(n, kind, exact=False), sl.pascal(n, kind, exact=False))
        close(L.invpascal(n, kind, exact=False), sl.invpascal(n, kind, exact=False))


def test_size_matrices_properties():
    n = 8
    np.testing.assert_allclose(np.asarray(L.invhilbert(n)) @ np.asarray(L.hilbert(n)), np.eye(n), atol=1e-5)
    n = 12
    p = np.asarray(L.pascal(n), np.float64)
    np.testing.assert_allclose(p @ np.asarray(L.invpascal(n), np.float64), np.eye(n), atol=1e-6)
    h = np.asarray(L.helmert(n, full=True))
    np.testing.assert_allclose(h @ h.T, np.eye(n), atol=1e-12)
    f = np.asarray(L.dft(n, "sqrtn"))
    np.testing.assert_allclose(f @ f.conj().T, np.eye(n), atol=1e-12)
    np.testing.assert_allclose(np.asarray(L.dft(n)) @ np.arange(n), np.fft.fft(np.arange(n)), atol=1e-10)
    # the exact inverse of a big Hilbert matrix is exact in int64 (scipy: up to n = 14)
    close(L.invhilbert(14, exact=True), sl.invhilbert(14, exact=True))
    close(L.invhilbert(30), sl.invhilbert(30), scale=1e4)


def test_size_matrices_errors():
    with pytest.raises(ValueError, match="power of 2"):
        L.hadamard(6)
    with pytest.raises(ValueError, match="scale"):
        L.dft(3, "bogus")
    with pytest.raises(ValueError, match="kind"):
        L.pascal(3, "diagonal")
    with pytest.raises(ValueError, match="exact=False"):
        L.invhilbert(16, exact=True)  # beyond int64
    with pytest.raises(TypeError):
        L.pascal(2.5)


def test_size_matrices_x64_off():
    fjax.config.update("jax_enable_x64", False)  # the fixture restores it
    assert L.dft(4).dtype == np.complex64
    assert L.hadamard(4).dtype == np.int32
    assert L.helmert(4).dtype == np.float32
    assert L.invhilbert(4).dtype == np.float32
    assert L.invhilbert(4, exact=True).dtype == np.int32
    assert L.pascal(5).dtype == np.uint32 and L.invpascal(5).dtype == np.int32
    assert L.pascal(5, exact=False).dtype == np.float32
    close(L.pascal(10), sl.pascal(10).astype(np.uint32))
    with pytest.raises(ValueError, match="jax_enable_x64"):
        L.pascal(20)  # C(38, 19) does not fit in uint32
    assert L.companion(np.array([2, 4, 6])).dtype == np.float32


# ---------------------------------------------------------------------------------------------
# qr_multiply and rsf2csf


@given(
    st.integers(1, 5), st.integers(1, 5), st.integers(1, 3), DTYPES, st.integers(0, 10**6), st.booleans(),
    st.booleans(), st.booleans(),
)  # fmt: skip
def test_qr_multiply(m, n, k, dt, seed, left, vec, pivoting):
    a = rnd((m, n), seed, dt)
    mode = "left" if left else "right"
    cshape = (min(m, n), k) if left else (k, m)
    c = rnd(cshape[:1] if (vec and left) else cshape[1:] if vec else cshape, seed + 1, dt)
    got = L.qr_multiply(a, c, mode=mode, pivoting=pivoting)
    want = sl.qr_multiply(a, c, mode=mode, pivoting=pivoting)
    assert len(got) == len(want)
    # Q is unique up to the signs of its columns: compare products with the signs of R's diagonal
    d_got = np.sign(np.diagonal(np.asarray(got[1])))
    d_want = np.sign(np.diagonal(want[1]))
    flip = np.where(d_got == d_want, 1, -1).astype(dt)
    close(np.asarray(got[1]) * flip[:, None], want[1], dt, 100)
    cq = np.asarray(got[0])
    cq = cq * flip[(slice(None),) + (None,) * (cq.ndim - 1)] if left else cq * flip
    close(cq, want[0], dt, 100)
    if pivoting:
        np.testing.assert_array_equal(got[2], want[2])


def test_qr_multiply_complex_conjugate_errors_grad():
    a = rnd((5, 3), 0) + 1j * rnd((5, 3), 1)
    c = rnd((3, 2), 2)
    got, r = L.qr_multiply(a, c, mode="left", conjugate=True)
    qf = np.asarray(L.qr(a, mode="economic")[0])
    close(got, qf.conj() @ c)
    cr = rnd((2, 5), 3)
    close(L.qr_multiply(a, cr)[0], cr @ qf)
    with pytest.raises(ValueError, match="not compatible"):
        L.qr_multiply(a, rnd((4, 2), 0), mode="left")
    with pytest.raises(ValueError, match="mode"):
        L.qr_multiply(a, c, mode="middle")
    a, c = rnd((4, 3), 4), rnd((2, 4), 5)
    close(fjax.jit(L.qr_multiply)(a, c)[0], L.qr_multiply(a, c)[0])
    check_grads(lambda a, c: L.qr_multiply(a, c)[0], (a, c), order=1)
    check_grads(lambda a, c: L.qr_multiply(a, c, mode="left")[0], (a, rnd((3, 2), 6)), order=1)


def _schur(n, seed, dt):
    t, z = sl.schur(rnd((n, n), seed, dt))
    return t.astype(dt), z.astype(dt)


@given(st.integers(1, 7), DTYPES, st.integers(0, 10**6))
def test_rsf2csf(n, dt, seed):
    t, z = _schur(n, seed, dt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t2, z2 = sl.rsf2csf(t, z)
    got_t, got_z = L.rsf2csf(t, z)
    close(got_t, t2, dt, 1e3)
    close(got_z, z2, dt, 1e3)
    assert np.all(np.tril(np.asarray(got_t), -1) == 0)
    a = z @ t @ z.T
    close(np.asarray(got_z) @ np.asarray(got_t) @ np.asarray(got_z).conj().T, a.astype(got_t.dtype), dt, 1e3)


def test_rsf2csf_jit_vmap_grad_errors():
    t, z = _schur(5, 3, np.float64)
    assert np.any(np.abs(np.diagonal(t, -1)) > 0)  # has a complex pair
    close(fjax.jit(L.rsf2csf)(t, z)[0], sl.rsf2csf(t, z)[0])
    ts, zs = zip(*[_schur(4, s, np.float64) for s in range(3)])
    bt, bz = fjax.vmap(L.rsf2csf)(np.stack(ts), np.stack(zs))
    for i in range(3):
        close(bt[i], sl.rsf2csf(ts[i], zs[i])[0])
        close(bz[i], sl.rsf2csf(ts[i], zs[i])[1])
    # derivatives along quasi-triangular perturbations (which keep the 2x2 blocks as they are)
    mask = (np.triu(np.ones_like(t)) + (np.abs(np.tril(t, -1)) > 0)).astype(t.dtype)
    w = rnd(t.shape, 7) + 1j * rnd(t.shape, 8)

    def f(dt_, dz):
        t2, z2 = L.rsf2csf(t + mask * dt_, z + dz)
        return jnp.real(jnp.sum(t2 * w) + jnp.sum(z2 * jnp.conj(w)))

    check_grads(f, (np.zeros_like(t), np.zeros_like(z)), order=1)
    with pytest.raises(ValueError, match="square"):
        L.rsf2csf(np.zeros((2, 3)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="must match"):
        L.rsf2csf(np.zeros((2, 2)), np.zeros((3, 3)))


def test_all_exported():
    for name in (
        "circulant companion convolution_matrix dft fiedler fiedler_companion hadamard hankel helmert "
        "invhilbert invpascal leslie pascal qr_multiply rsf2csf"
    ).split():
        assert name in L.__all__ and callable(getattr(L, name)) and getattr(L, name).__doc__
