"""``fjax.lax.linalg``: ``ormqr``, ``tridiagonal``, the algorithm enums and the ``eig``/``eigh``/
``svd`` parameters that take them, ``eig(enable_eigvec_derivs=True)``.

References: scipy's LAPACK wrappers (``?sytrd``/``?hetrd``, ``?ormqr``/``?unmqr``, ``?geqrf``,
``gesvd``), finite differences for derivatives, and values recorded from JAX 0.10.2 on CPU (x64)
where noted.
"""

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.linalg.lapack as lp
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax.lax import linalg as L


@pytest.fixture(autouse=True)
def _x64(x64):
    yield


_TRD = {np.float32: lp.ssytrd, np.float64: lp.dsytrd, np.complex64: lp.chetrd, np.complex128: lp.zhetrd}
_TOL = {np.float32: 2e-5, np.float64: 1e-12, np.complex64: 2e-5, np.complex128: 1e-12}


def _rand(rs, shape, dt):
    x = rs.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        x = x + 1j * rs.standard_normal(shape)
    return x.astype(dt)


def _close(got, ref, tol):
    got = np.asarray(got)
    assert got.shape == ref.shape and got.dtype == ref.dtype, (got.shape, got.dtype, ref.shape, ref.dtype)
    scale = max(1.0, float(np.max(np.abs(ref)))) if ref.size else 1.0
    np.testing.assert_allclose(got, ref, rtol=0, atol=tol * scale)


# ---------------------------------------------------------------------------------------------
# tridiagonal


@given(
    seed=st.integers(0, 2**31 - 1),
    dt=st.sampled_from(list(_TRD)),
    n=st.sampled_from([1, 2, 5]),
    lower=st.booleans(),
)
def test_tridiagonal_matches_lapack(seed, dt, n, lower):
    a = _rand(np.random.default_rng(seed), (n, n), dt)
    arr, d, e, taus, info = _TRD[dt](a, lower=int(lower))
    assert info == 0
    got = L.tridiagonal(a, lower=lower)
    for g, r in zip(got, (arr, d, e, taus)):
        _close(g, r, _TOL[dt])


def test_tridiagonal_reads_one_triangle_and_reconstructs():
    rs = np.random.default_rng(0)
    a = _rand(rs, (4, 4), np.complex128)
    h = np.tril(a, -1) + np.tril(a, -1).conj().T + np.diag(a.diagonal().real)
    garbage = h + np.triu(_rand(rs, (4, 4), np.complex128), 1)  # only the lower triangle counts
    arr, d, e, taus = L.tridiagonal(garbage, lower=True)
    np.testing.assert_array_equal(np.triu(np.asarray(arr), 1), np.triu(garbage, 1))  # left untouched
    # Q = H_0 H_1 H_2 (reflectors below the subdiagonal) brings h to T: Q^H h Q = T
    refl = np.zeros((4, 3), complex)
    refl[1:, :] = np.asarray(arr)[1:, :3]
    q = np.asarray(L.householder_product(jnp.asarray(refl[1:]), taus))
    q_full = np.eye(4, dtype=complex)
    q_full[1:, 1:] = q
    t = np.diag(np.asarray(d)) + np.diag(np.asarray(e), -1) + np.diag(np.asarray(e), 1)
    np.testing.assert_allclose(q_full.conj().T @ h @ q_full, t, atol=1e-12)


def test_tridiagonal_jax_recorded_upper():
    # jax.lax.linalg.tridiagonal(s, lower=False) with JAX 0.10.2, CPU, x64
    s = np.array([[4.0, 1.0, 2.0], [1.0, 3.0, 0.5], [2.0, 0.5, 1.0]])
    arr, d, e, taus = L.tridiagonal(s, lower=False)
    ref_arr = [
        [2.5882352941176476, 0.6470588235294131, 0.7807764064044151],
        [1.0, 4.411764705882355, -2.0615528128088303],
    ]
    np.testing.assert_allclose(np.asarray(arr)[:2], ref_arr, rtol=1e-13)
    np.testing.assert_allclose(np.asarray(arr)[2], s[2])
    np.testing.assert_allclose(d, [2.5882352941176476, 4.411764705882355, 1.0], rtol=1e-13)
    np.testing.assert_allclose(e, [0.6470588235294131, -2.0615528128088303], rtol=1e-13)
    np.testing.assert_allclose(taus, [0.0, 1.242535625036333], rtol=1e-13, atol=1e-15)


def _tri_upper(x):
    return L.tridiagonal(x, lower=False)


_tri_upper_jit = fjax.jit(_tri_upper)


def test_tridiagonal_jit_vmap_batch():
    a = _rand(np.random.default_rng(1), (3, 4, 4), np.float32)
    eager = L.tridiagonal(a, lower=False)
    for g, r in zip(eager, [np.stack(z) for z in zip(*[lp.ssytrd(x, lower=0)[:4] for x in a])]):
        _close(g, r, 2e-5)
    jitted = _tri_upper_jit(a)
    vmapped = fjax.vmap(lambda x: L.tridiagonal(x, lower=False))(a)
    for x, y, z in zip(eager, jitted, vmapped):
        np.testing.assert_allclose(np.asarray(y), np.asarray(x), atol=1e-5)
        np.testing.assert_allclose(np.asarray(z), np.asarray(x), atol=1e-5)


def test_tridiagonal_ormqr_on_the_cuda_backend():
    """jit on the CUDA backend (the cupy stand-in: generated CUDA run through the C++ emulator)
    against the CPU: both are compositions of lax ops, so both backends lower them."""
    import _standin_gpu  # tests/ is on the path

    from fjax.backends.cuda import emulate

    if emulate.compiler() is None:
        pytest.skip("no C++ compiler for the CUDA emulator")
    rng = np.random.default_rng(5)
    a = _rand(rng, (3, 4, 4), np.float32)
    qr, taus = lp.sgeqrf(a[0])[:2]
    c = _rand(rng, (4, 2), np.float32)
    with _standin_gpu.installed():
        got, want = _standin_gpu.both(_tri_upper, a)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, atol=2e-6)
        got, want = _standin_gpu.both(lambda q, t, x: L.ormqr(q, t, x, transpose=True), qr, taus, c)
        np.testing.assert_allclose(got, want, atol=2e-6)


def test_tridiagonal_grad_finite_differences():
    # JAX's tridiagonal has no JVP rule; fjax's is a composition and so differentiable
    rs = np.random.default_rng(2)
    a = rs.standard_normal((4, 4))
    w = rs.standard_normal(4 + 3)

    def f(x):
        _, d, e, _ = L.tridiagonal(x, lower=True)
        return jnp.sum(jnp.concatenate([d, e]) * w)

    g = np.asarray(fjax.grad(f)(a))
    eps = 1e-6
    fd = np.zeros_like(a)
    for i in range(4):
        for j in range(4):
            da = np.zeros_like(a)
            da[i, j] = eps
            fd[i, j] = (float(f(a + da)) - float(f(a - da))) / (2 * eps)
    np.testing.assert_allclose(g, fd, atol=1e-6)
    assert np.all(np.triu(g, 1) == 0)  # the upper triangle is not read


@pytest.mark.parametrize(
    "x, err, msg",
    [
        (np.ones((3, 4)), ValueError, r"tridiagonal must be a square matrix. Got shape \(3, 4\)"),
        (np.zeros((0, 0)), ValueError, "square matrix"),
        (np.ones((3, 3), np.int32), TypeError, "tridiagonal does not accept dtype int32"),
        (np.ones(3), TypeError, "must have rank at least 2"),
    ],
)
def test_tridiagonal_errors(x, err, msg):
    with pytest.raises(err, match=msg):
        L.tridiagonal(x)


# ---------------------------------------------------------------------------------------------
# ormqr


def _qr_raw(a):
    geqrf = lp.zgeqrf if np.iscomplexobj(a) else lp.dgeqrf
    qr, taus, _, info = geqrf(a)
    assert info == 0
    return qr, taus


def _ormqr_ref(qr, taus, c, left, transpose):
    cplx = np.iscomplexobj(qr)
    fn = lp.zunmqr if cplx else lp.dormqr
    trans = (b"C" if cplx else b"T") if transpose else b"N"
    a = np.ascontiguousarray(qr[:, : len(taus)])  # scipy's wrapper wants exactly k columns
    out, _, info = fn(b"L" if left else b"R", trans, a, taus, c, lwork=max(1, 64 * max(c.shape)))
    assert info == 0
    return out


@given(
    seed=st.integers(0, 2**31 - 1),
    dt=st.sampled_from([np.float64, np.complex128]),
    mn=st.sampled_from([(5, 3), (3, 3), (3, 5)]),
    left=st.booleans(),
    transpose=st.booleans(),
    k_less=st.booleans(),
)
def test_ormqr_matches_lapack(seed, dt, mn, left, transpose, k_less):
    rs = np.random.default_rng(seed)
    m, n = mn
    qr, taus = _qr_raw(_rand(rs, (m, n), dt))
    if k_less:  # fewer reflectors than geqrf made
        taus = taus[:-1]
    c = _rand(rs, (m, 2) if left else (2, m), dt)
    ref = _ormqr_ref(qr, taus, c, left, transpose)
    got = L.ormqr(qr, taus, c, left=left, transpose=transpose)
    _close(got, ref, 1e-12)


def test_ormqr_jax_doc_example_is_q():
    # the docstring example of jax.lax.linalg.ormqr: ormqr(h.mT, taus, eye) is the complete Q
    a = jnp.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    h, taus = jnp.linalg.qr(a, mode="raw")
    q = L.ormqr(h.mT, taus, jnp.eye(3))
    q_direct, _ = jnp.linalg.qr(a, mode="complete")
    np.testing.assert_allclose(np.asarray(q), np.asarray(q_direct), atol=1e-12)


@given(
    seed=st.integers(0, 2**31 - 1),
    dt=st.sampled_from([np.float32, np.complex128]),
    mn=st.sampled_from([(4, 2), (3, 3), (2, 4), (1, 3)]),
)
def test_qr_raw_matches_geqrf(seed, dt, mn):
    a = _rand(np.random.default_rng(seed), mn, dt)
    geqrf = {np.float32: lp.sgeqrf, np.complex128: lp.zgeqrf}[dt]
    ref_h, ref_t, _, info = geqrf(a)
    assert info == 0
    h, t = jnp.linalg.qr(a, mode="raw")
    _close(h, np.ascontiguousarray(ref_h.T), _TOL[dt])  # JAX returns the reflectors transposed
    _close(t, ref_t, _TOL[dt])


def test_qr_raw_jax_recorded():
    # jnp.linalg.qr(a.T, mode="raw") with JAX 0.10.2, CPU, x64 (a wide matrix: min(m, n) = 3 scales)
    a = np.array([[1.0, 2.0, 0.5], [3.0, 4.0, -1.0], [5.0, 6.0, 2.0], [0.0, 1.0, 1.0]])
    h, t = jnp.linalg.qr(a.T, mode="raw")
    ref_h = [
        [-2.29128784747792, 0.6076648694013741, 0.15191621735034352],
        [-4.58257569495584, 2.23606797749979, 0.7567223551591009],
        [-7.855844048495726, 0.4472135954999572, 1.7566201313073593],
        [-1.0910894511799618, -0.8944271909999156, -0.09759000729485319],
    ]
    np.testing.assert_allclose(np.asarray(h), ref_h, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(np.asarray(t), [1.4364357804719847, 1.2717559911040006, 0.0], rtol=1e-13)


def test_ormqr_jit_vmap_grad():
    rs = np.random.default_rng(3)
    qrs, tss = zip(*[_qr_raw(rs.standard_normal((4, 3))) for _ in range(2)])
    qr, taus = np.stack(qrs), np.stack(tss)
    c = rs.standard_normal((2, 4, 3))
    ref = np.stack([_ormqr_ref(q, t, x, True, True) for q, t, x in zip(qr, taus, c)])
    f = fjax.jit(lambda q, t, x: L.ormqr(q, t, x, transpose=True))
    np.testing.assert_allclose(np.asarray(f(qr, taus, c)), ref, atol=1e-12)  # batch dims
    np.testing.assert_allclose(np.asarray(fjax.vmap(f)(qr, taus, c)), ref, atol=1e-12)
    # JAX's ormqr has no JVP rule; fjax's (a composition) is differentiable: Q^T c is linear in c
    g = fjax.grad(lambda x: jnp.sum(L.ormqr(qr[0], taus[0], x, transpose=True) * c[1]))(c[0])
    np.testing.assert_allclose(np.asarray(g), _ormqr_ref(qr[0], taus[0], c[1], True, False), atol=1e-12)

    def h(t):
        return jnp.sum(L.ormqr(qr[0], t, c[0]) ** 2 * c[1])

    gt = np.asarray(fjax.grad(h)(taus[0]))
    eps = 1e-6
    fd = [(float(h(taus[0] + eps * e)) - float(h(taus[0] - eps * e))) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(gt, fd, atol=1e-6)


@pytest.mark.parametrize(
    "shapes, kw, err, msg",
    [
        (((4, 3), (3,), (3, 3)), {}, ValueError, "left=True expects c to have the same number of rows"),
        (((4, 3), (3,), (3, 3)), {"left": False}, ValueError, "left=False expects c to have the same number of col"),
        (((1, 4, 3), (1, 3), (4, 4)), {}, TypeError, "same number of batch dimensions"),
        (((4, 3), (3,), (4,)), {}, TypeError, "Input 2 to ormqr must have rank at least 2"),
        (((4, 3), (4,), (4, 4)), {}, ValueError, "reflectors"),
    ],
)
def test_ormqr_shape_errors(shapes, kw, err, msg):
    a, t, c = (np.ones(s) for s in shapes)
    with pytest.raises(err, match=msg):
        L.ormqr(a, t, c, **kw)


def test_ormqr_dtype_errors():
    a, t, c = np.ones((4, 3)), np.ones(3), np.ones((4, 2))
    with pytest.raises(TypeError, match="same dtypes, got float32, float64, float64"):
        L.ormqr(a.astype(np.float32), t, c)
    with pytest.raises(TypeError, match="ormqr does not accept dtype int32 at position 2"):
        L.ormqr(a, t, c.astype(np.int32))


# ---------------------------------------------------------------------------------------------
# algorithm enums and parameters


def test_enums_as_jax():
    assert [(m.name, m.value) for m in L.EigImplementation] == [
        ("CUSOLVER", "cusolver"),
        ("MAGMA", "magma"),
        ("LAPACK", "lapack"),
    ]
    assert [(m.name, m.value) for m in L.EighImplementation] == [("QR", "qr"), ("JACOBI", "jacobi"), ("QDWH", "qdwh")]
    assert [m.value for m in L.SvdAlgorithm] == ["default", "QR", "Jacobi", "polar", "divide_and_conquer"]
    assert str(L.SvdAlgorithm.QR) == "SvdAlgorithm.QR"


def test_svd_algorithms():
    a = np.random.default_rng(4).standard_normal((5, 3))
    ref_qr = sla.svd(a, lapack_driver="gesvd")
    u, s, vh = L.svd(a, algorithm=L.SvdAlgorithm.QR)
    for g, r in zip((u, s, vh), ref_qr):  # gesvd's own vectors, not only the same subspaces
        np.testing.assert_allclose(np.asarray(g), r, atol=1e-12)
    for alg in (None, L.SvdAlgorithm.DEFAULT, L.SvdAlgorithm.DIVIDE_AND_CONQUER):
        np.testing.assert_allclose(np.asarray(L.svd(a, algorithm=alg, compute_uv=False)), ref_qr[1], rtol=1e-12)
    s_jit = fjax.jit(lambda x: L.svd(x, full_matrices=False, algorithm=L.SvdAlgorithm.QR)[1])(a)
    np.testing.assert_allclose(np.asarray(s_jit), ref_qr[1], rtol=1e-12)
    for bad in (L.SvdAlgorithm.JACOBI, L.SvdAlgorithm.POLAR, "QR"):  # JAX on CPU: a string is no algorithm
        with pytest.raises(NotImplementedError, match="Jacobi and Polar algorithms are not implemented on CPU"):
            L.svd(a, algorithm=bad)


def test_eigh_eig_implementations():
    s = np.array([[2.0, 1.0], [1.0, 3.0]])
    w_ref = np.linalg.eigvalsh(s)
    for impl in (None, L.EighImplementation.QR, "qr"):  # JAX on CPU accepts anything but QDWH/JACOBI
        np.testing.assert_allclose(np.asarray(L.eigh(s, implementation=impl)[1]), w_ref, rtol=1e-12)
    with pytest.raises(NotImplementedError, match="QDWH implementation is only supported on TPU"):
        L.eigh(s, implementation=L.EighImplementation.QDWH)
    with pytest.raises(NotImplementedError, match="Jacobi implementation is not supported on CPU"):
        L.eigh(s, implementation=L.EighImplementation.JACOBI)
    w = L.eig(s, implementation=L.EigImplementation.LAPACK, compute_left_eigenvectors=False)[0]
    np.testing.assert_allclose(np.sort(np.asarray(w).real), w_ref, rtol=1e-12)
    for bad in (L.EigImplementation.CUSOLVER, L.EigImplementation.MAGMA, "lapack"):
        with pytest.raises(ValueError, match="Only the lapack implementation is supported on CPU"):
            L.eig(s, implementation=bad)


# ---------------------------------------------------------------------------------------------
# eig with eigenvector derivatives


def test_eig_eigvec_derivs_jax_recorded():
    # jax.jvp(lambda x: lax.linalg.eig(x, enable_eigvec_derivs=True), (a,), (da,)), JAX 0.10.2 CPU x64
    a = np.array([[2.0, 1.0, 0.0], [0.5, -1.0, 1.0], [1.0, 0.0, 3.0]])
    da = np.array([[0.1, -0.2, 0.3], [0.0, 0.4, -0.1], [0.2, 0.1, -0.3]])
    dw = [0.01256571750899681, -0.21613774924965368, 0.4035720317406569]
    dvl = [
        [0.099134519296141, -0.05633396948663252, -0.01129317614715189],
        [0.02377284309216418, -0.02466312297228754, 0.00172161550590037],
        [-0.09546366363377257, -0.21097889946885917, 0.01084381863294178],
    ]
    dvr = [
        [0.2190648110871647, -0.08861483383526592, -0.02161680545478218],
        [0.01427046297858292, -0.04646483318175858, -0.00704934555872347],
        [-0.05109274211869233, -0.09340990010055203, 0.00046745458243629],
    ]
    _, t = fjax.jvp(lambda x: L.eig(x, enable_eigvec_derivs=True), (a,), (da,))
    for g, r in zip(t, (dw, dvl, dvr)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r, complex), atol=1e-12)
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs=True"):
        fjax.jvp(lambda x: L.eig(x)[2], (a,), (da,))


@given(seed=st.integers(0, 2**31 - 1), cplx=st.booleans())
def test_eig_eigvec_derivs_finite_differences(seed, cplx):
    rs = np.random.default_rng(seed)
    dt = np.complex128 if cplx else np.float64
    a, da = _rand(rs, (3, 3), dt), _rand(rs, (3, 3), dt)

    def f(x):
        return L.eig(x, enable_eigvec_derivs=True)

    _, t = fjax.jvp(f, (a,), (da,))
    h = 1e-6
    for tan, hi, lo in zip(t, f(a + h * da), f(a - h * da)):
        np.testing.assert_allclose(np.asarray(tan), (np.asarray(hi) - np.asarray(lo)) / (2 * h), atol=1e-5)


def test_eig_eigvec_derivs_grad_vmap():
    a = np.array([[2.0, 1.0, 0.0], [0.5, -1.0, 1.0], [1.0, 0.0, 3.0]])

    def loss(x):
        vr = L.eig(x, compute_left_eigenvectors=False, enable_eigvec_derivs=True)[1]
        return jnp.sum(jnp.real(vr) * jnp.arange(9.0).reshape(3, 3))

    g = np.asarray(fjax.grad(loss)(a))
    eps = 1e-6
    fd = np.array(
        [
            [(float(loss(a + eps * e)) - float(loss(a - eps * e))) / (2 * eps) for e in np.eye(9)[k].reshape(1, 3, 3)]
            for k in range(9)
        ]
    ).reshape(3, 3)
    np.testing.assert_allclose(g, fd, atol=1e-6)
    gb = fjax.vmap(fjax.grad(loss))(np.stack([a, a.T]))
    np.testing.assert_allclose(np.asarray(gb[0]), g, atol=1e-12)


def test_scipy_qr_raw_mode_is_jax_value_error():
    # JAX 0.10.2: jax.scipy.linalg.qr(a, mode='raw') -> ValueError: Unsupported QR decomposition mode 'raw'
    a = np.ones((3, 2), np.float32)
    with pytest.raises(ValueError, match="Unsupported QR decomposition mode 'raw'"):
        fjax.scipy.linalg.qr(a, mode="raw")
