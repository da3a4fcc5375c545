"""The CUDA linear-algebra kernels (``fjax/backends/cuda/linalg_ops.py``) on complex64/complex128
matrices, through ``device_put`` + ``jit`` on the cupy stand-in (kernels compiled by g++ against
``cuda_emu.h``), against the CPU backend (LAPACK): cholesky (``A = L L^H``, the diagonal's real
part), every triangular_solve variant with ``conjugate_a``, lu's pivot measure (``|re| + |im|``, as
``i?amax``), qr equal to LAPACK's (complex ``tau``), Hermitian eigh and complex svd up to a unit
phase per vector (compared by their invariants), solve/inv/det/slogdet on drawn matrices, a
gradient through a complex cholesky, and nvcc compiling the complex kernels without spills."""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess

import _standin_gpu  # noqa: E402  (tests/ is on the path)
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.backends.cuda import emulate

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")

C64, C128 = np.complex64, np.complex128


@pytest.fixture(scope="module", autouse=True)
def standin_gpu():
    with _standin_gpu.installed() as cs:
        yield cs


def _both(f, *xs):
    return _standin_gpu.both(f, *xs, x64=any(np.asarray(x).dtype in (C128, np.float64) for x in xs))


def _tol(dt):
    return dict(rtol=2e-4, atol=2e-5) if np.dtype(dt) in (C64, np.float32) else dict(rtol=1e-10, atol=1e-12)


def _close(got, want, dt):
    for g, w in zip(fjax.tree_util.tree_leaves(got), fjax.tree_util.tree_leaves(want), strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, equal_nan=True, **_tol(dt))
        else:
            np.testing.assert_array_equal(g, w)


def _cx(rng, shape, dt):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)


def _h(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _hpd(rng, shape, dt):
    a = _cx(rng, shape, np.complex128)
    return (a @ _h(a) + shape[-1] * np.eye(shape[-1])).astype(dt)


@pytest.mark.parametrize("dt", [C64, C128])
def test_cholesky(dt):
    """A = L L^H from the lower triangle; the upper triangle and the diagonal's imaginary part are
    not read (as potrf); symmetrize_input averages with x^H; upper gives L^H; a matrix that is not
    positive definite gives NaNs."""
    rng = np.random.default_rng(0)
    x = _hpd(rng, (3, 6, 6), dt)
    x[..., 0, 3] += 5 - 2j  # upper triangle: ignored unless symmetrized
    x[..., 2, 2] += 0.5j  # a diagonal's imaginary part: ignored
    x[1, 3, 3] = -40.0
    f = lambda x: (  # noqa: E731
        lax.linalg.cholesky(x, symmetrize_input=False),
        lax.linalg.cholesky(x),  # (symmetrized: (x + x^H) / 2)
        jnp.linalg.cholesky(x, upper=True),
    )
    got, want = _both(f, x)
    _close(got, want, dt)
    L = got[0]
    assert np.isnan(L[1]).all() and not np.isnan(L[0]).any()
    assert np.all(np.diagonal(L[0]).imag == 0) and np.all(np.triu(L[0], 1) == 0)
    xl = np.tril(x[0], -1)
    np.testing.assert_allclose(L[0] @ _h(L[0]), xl + _h(xl) + np.diag(np.diagonal(x[0]).real), **_tol(dt))


@pytest.mark.parametrize("dt", [C64, C128])
def test_triangular_solve_every_variant(dt):
    """All 32 combinations of side, triangle, transpose_a, conjugate_a and unit_diagonal (one
    program): op(A) is A, A^T, conj(A) or A^H."""
    rng = np.random.default_rng(1)
    a = _cx(rng, (2, 5, 5), dt) + (5 * np.eye(5)).astype(dt)
    bl, br = _cx(rng, (2, 5, 3), dt), _cx(rng, (2, 3, 5), dt)
    combos = list(itertools.product([True, False], repeat=5))

    def f(a, bl, br):
        return [
            lax.linalg.triangular_solve(
                a, bl if left else br, left_side=left, lower=lower, transpose_a=tr, conjugate_a=cj, unit_diagonal=un
            )
            for left, lower, tr, cj, un in combos
        ]

    got, want = _both(f, a, bl, br)
    _close(got, want, dt)
    # and what each solves, independently of the CPU: op(A) y = b (left), y op(A) = b (right)
    for y, (left, lower, tr, cj, un) in zip(got, combos, strict=True):
        t = np.tril(a) if lower else np.triu(a)
        if un:
            t = t - t * np.eye(5) + np.eye(5)
        op = np.swapaxes(t, -1, -2) if tr else t
        op = np.conj(op) if cj else op
        np.testing.assert_allclose(op @ y if left else y @ op, bl if left else br, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("shape", [(5, 5), (2, 6, 6), (7, 4), (4, 7)])
@pytest.mark.parametrize("dt", [C64, C128])
def test_lu(shape, dt):
    rng = np.random.default_rng(2)
    x = _cx(rng, shape, dt)
    got, want = _both(lax.linalg.lu, x)
    _close(got, want, dt)


def test_lu_pivots_by_abs1_as_lapack():
    """i?amax picks the largest |re| + |im| (row 1 here), not the largest |z| (row 0); exact
    zeros and ties in a singular matrix pivot as the CPU's."""
    x = np.array([[3.0, 1.0, 0.0], [2 + 2j, 1j, 1.0], [1j, 2.0, 1 - 1j]], C64)
    got, want = _both(lax.linalg.lu, x)
    assert got[1][0] == 1
    _close(got, want, C64)
    s = np.array([[0, 1j, 2], [0, 2j, 4], [0, 1 + 1j, 7]], C128)  # a zero column; |re| + |im| ties
    got, want = _both(lax.linalg.lu, s)
    _close(got, want, C128)


@pytest.mark.parametrize("shape", [(5, 5), (2, 7, 4), (4, 6), (1, 3)])
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("dt", [C64, C128])
def test_qr_as_lapack(shape, full, dt):
    """Q and R equal to LAPACK's (zgeqrf/zungqr: real diagonal of R, complex tau); a column whose
    entries below the diagonal are zero but whose pivot is complex still gets a reflector."""
    rng = np.random.default_rng(3)
    x = _cx(rng, shape, dt)
    if shape[-2] > 2:
        x[..., 1:, 0] = 0
    got, want = _both(lambda x: jnp.linalg.qr(x, mode="complete" if full else "reduced"), x)
    _close(got, want, dt)
    q, r = got
    np.testing.assert_allclose(q @ r, x, **_tol(dt) | dict(atol=1e-4 if dt == C64 else 1e-12))


def _check_vectors(v, v0, dt, atol):
    """Unitary columns equal to LAPACK's up to a unit phase: |v^H v0| is the identity."""
    k = v.shape[-1]
    np.testing.assert_allclose(_h(v) @ v, np.broadcast_to(np.eye(k), v.shape[:-2] + (k, k)), atol=atol)
    np.testing.assert_allclose(np.abs(_h(v) @ v0), np.broadcast_to(np.eye(k), v.shape[:-2] + (k, k)), atol=atol)


@pytest.mark.parametrize("dt", [C64, C128])
@pytest.mark.parametrize("lower", [True, False])
def test_eigh_hermitian(dt, lower):
    """Real eigenvalues as LAPACK's (ascending), eigenvectors up to phase, reconstructing the
    Hermitian matrix of the triangle read; a subset; a repeated eigenvalue; NaN for a non-finite
    entry (anywhere, as the CPU)."""
    rng = np.random.default_rng(5)
    x = _cx(rng, (3, 6, 6), dt)
    x[..., 1, 1] += 0.75j  # a diagonal's imaginary part: ignored
    u, _ = np.linalg.qr(_cx(rng, (6, 6), C128))
    x[1] = (u @ np.diag([1.0, 2.0, 2.0, 3.0, -1.0, 0.5]) @ _h(u)).astype(dt)  # a repeated eigenvalue
    x[2, 0, 5] = np.inf
    f = lambda x: (  # noqa: E731
        lax.linalg.eigh(x, lower=lower, symmetrize_input=False),
        lax.linalg.eigh(x, lower=lower, symmetrize_input=False, subset_by_index=(2, 5)),
    )
    (g, gs), (w, ws) = _both(f, x)
    atol = 2e-4 if dt == C64 else 1e-10
    for (v, e), (v0, e0) in ((g, w), (gs, ws)):
        assert e.dtype == np.dtype(dt).type(0).real.dtype and v.dtype == dt
        assert np.isnan(e[2]).all() and np.isnan(v[2]).all() and np.isnan(e0[2]).all()
        np.testing.assert_allclose(e[:2], e0[:2], rtol=1e-4 if dt == C64 else 1e-10, atol=atol)
        _check_vectors(v[:1], v0[:1], dt, atol)  # distinct eigenvalues: unique up to phase
    v, e = g[0][:2], g[1][:2]
    t = np.tril(x[:2], -1) if lower else np.triu(x[:2], 1)
    herm = t + _h(t) + np.eye(6) * np.diagonal(x[:2], axis1=-2, axis2=-1).real[..., None, :]
    np.testing.assert_allclose((v * e[..., None, :]) @ _h(v), herm, atol=atol * 10)
    np.testing.assert_allclose(_h(v) @ v, np.broadcast_to(np.eye(6), (2, 6, 6)), atol=atol)


@pytest.mark.parametrize("shape", [(6, 4), (2, 4, 6), (5, 5)])
@pytest.mark.parametrize("dt", [C64, C128])
def test_svd(shape, dt):
    """Real singular values as LAPACK's (descending); u, vh up to a phase per pair, unitary,
    reconstructing x; full_matrices completes u/vh; a rank-deficient matrix; values only; a
    subset."""
    rng = np.random.default_rng(6)
    x = _cx(rng, shape, dt)
    k = min(shape[-2:])
    if len(shape) == 3:  # rank k - 1
        x[1] = (_cx(rng, (shape[-2], k - 1), C128) @ _cx(rng, (k - 1, shape[-1]), C128)).astype(dt)
    f = lambda x: (  # noqa: E731
        jnp.linalg.svd(x, full_matrices=False),
        jnp.linalg.svd(x, full_matrices=True),
        jnp.linalg.svd(x, compute_uv=False),
        lax.linalg.svd(x, full_matrices=False, subset_by_index=(1, k)),
    )
    got, want = _both(f, x)
    atol = 2e-4 if dt == C64 else 1e-10
    rtol = 2e-4 if dt == C64 else 1e-10
    (u, s, vh), (uf, sf, vhf), s2, (us, ss, vhs) = got
    for g, w in zip([s, sf, s2, ss], [want[0][1], want[1][1], want[2], want[3][1]], strict=True):
        assert g.dtype == w.dtype and g.dtype.kind == "f"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol * 5)
    np.testing.assert_allclose((u * s[..., None, :]) @ vh, x, atol=atol * 10)
    for uu in (u, uf, _h(vh), _h(vhf)):
        n = uu.shape[-1]
        np.testing.assert_allclose(_h(uu) @ uu, np.broadcast_to(np.eye(n), uu.shape[:-2] + (n, n)), atol=atol)
    np.testing.assert_allclose((uf[..., :k] * sf[..., None, :]) @ vhf[..., :k, :], x, atol=atol * 10)
    np.testing.assert_allclose(
        (us * ss[..., None, :]) @ vhs, (u[..., 1:] * s[..., None, 1:]) @ vh[..., 1:, :], atol=atol * 10
    )
    # LAPACK's vectors up to phase (not of the rank-deficient matrix: its last is any unit vector)
    full = slice(0, 1) if len(shape) == 3 else slice(None)
    _check_vectors(u[full], want[0][0][full], dt, atol * 5)
    _check_vectors(_h(vh[full]), _h(want[0][2][full]), dt, atol * 5)


@given(st.integers(0, 2**31 - 1))
def test_solvers_on_drawn_matrices(seed):
    """What users call on complex matrices: solve, inv, det, slogdet (lu + triangular_solve), a
    Hermitian solve through cholesky."""
    rng = np.random.default_rng(seed)
    a = _cx(rng, (5, 5), C64) + (3 * np.eye(5)).astype(C64)
    b = _cx(rng, (5, 2), C64)
    f = lambda a, b: (  # noqa: E731
        jnp.linalg.solve(a, b),
        jnp.linalg.inv(a),
        jnp.linalg.det(a),
        jnp.linalg.slogdet(a),
        fjax.scipy.linalg.cho_solve(fjax.scipy.linalg.cho_factor(a @ jnp.conj(a.T)), b),
    )
    got, want = _both(f, a, b)
    for g, w in zip(fjax.tree_util.tree_leaves(got), fjax.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_allclose(g, w, rtol=5e-4, atol=5e-4)
    np.testing.assert_allclose(a @ got[0], b, atol=1e-3)


def test_gradient_through_complex_cholesky():
    """A real loss of a complex Hermitian matrix: its gradient runs cholesky's JVP (triangular
    solves with conjugate_a) and transposes on the GPU as on the CPU."""
    rng = np.random.default_rng(7)
    x = _hpd(rng, (4, 4), C64)

    def loss(x):
        L = jnp.linalg.cholesky(x)
        return jnp.sum(jnp.abs(L) ** 2) + jnp.real(jnp.sum(L * jnp.arange(16.0).reshape(4, 4)))

    got, want = _both(fjax.grad(loss), x)
    _close(got, want, C64)


def test_users_of_eigh_and_svd_on_complex_matrices():
    """pinv, lstsq, the 2-norm, matrix_rank and gradients through eigvalsh and singular values (phase
    invariant), in one program on the GPU as on the CPU."""
    rng = np.random.default_rng(10)
    h, t, y = _hpd(rng, (5, 5), C64), _cx(rng, (6, 4), C64), _cx(rng, (6, 2), C64)

    def f(h, t, y):
        return (
            jnp.linalg.pinv(t),
            jnp.linalg.lstsq(t, y)[0],
            jnp.linalg.norm(t, 2),
            jnp.linalg.matrix_rank(t),
            fjax.grad(lambda x: jnp.sum(jnp.linalg.eigvalsh(x) * jnp.arange(5.0)))(h),
            fjax.grad(lambda x: jnp.sum(jnp.linalg.svd(x, compute_uv=False) ** 2 * jnp.arange(1.0, 5.0)))(t),
        )

    got, want = _both(f, h, t, y)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[0] @ t, np.eye(4), atol=1e-4)


def test_kernels_of_several_dtypes_share_a_program():
    """float32, float64, complex64 and complex128 factorizations in one jit: one translation unit,
    each kernel with its own element type."""
    rng = np.random.default_rng(9)
    xs = [_hpd(rng, (4, 4), dt) for dt in (C64, C128)]
    xs += [x.real.astype(dt) + 0 for x, dt in zip(xs, (np.float32, np.float64))]
    f = lambda *xs: [(jnp.linalg.cholesky(x), jnp.linalg.eigvalsh(x), lax.linalg.lu(x)) for x in xs]  # noqa: E731
    got, want = _both(f, *xs)
    for g, w, dt in zip(got, want, (C64, C128, np.float32, np.float64), strict=True):
        _close(g, w, dt)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvcc_compiles_the_complex_kernels_without_spills(arch, tmp_path):
    def f(a, b):
        h = a @ jnp.conj(a.T) + 6 * jnp.eye(6, dtype=a.dtype)
        return (
            jnp.linalg.cholesky(h),
            lax.linalg.triangular_solve(a, b, left_side=True, lower=False, transpose_a=True, conjugate_a=True),
            lax.linalg.lu(a),
            jnp.linalg.qr(a),
            jnp.linalg.eigh(h),
            jnp.linalg.svd(a),
        )

    srcs = []
    for dt in (C64, C128):
        rng = np.random.default_rng(8)
        args = (_cx(rng, (6, 6), dt), _cx(rng, (6, 2), dt))
        with fjax.enable_x64(dt == C128):
            srcs.append(fjax.jit(f).trace(*args).lower(lowering_platforms=("cuda",)).as_text())
    assert all("fj_c64" in s or "fj_c128" in s for s in srcs)
    cu = tmp_path / "linalg_complex.cu"
    cu.write_text("\n".join(srcs))
    cmd = ["nvcc", f"-arch={arch}", "-c", str(cu), "-o", str(tmp_path / "l.o"), "-Xptxas", "-v"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    info = r.stderr + r.stdout
    for name in ("cholesky", "triangular_solve", "lu", "qr", "eigh", "svd"):
        assert f"// {name}" in "\n".join(srcs), name
    assert "ptxas" in info and not re.search(r"[1-9]\d* bytes spill", info), info[-3000:]


@pytest.mark.parametrize("dt,n", [(C128, 2400), (np.float64, 4000)])
def test_jacobi_tables_beyond_shared_memory_name_the_primitive(dt, n):
    """eigh/svd keep their rotation tables in static shared memory: a matrix too large for it
    raises NotImplementedError naming the primitive (not a ptxas error at load time)."""
    with fjax.enable_x64(True):
        for f, name in ((lax.linalg.eigh, "eigh"), (lax.linalg.svd, "svd")):
            low = fjax.jit(f).trace(fjax.ShapeDtypeStruct((n, n), dt))
            with pytest.raises(NotImplementedError, match=f"{name} of {np.dtype(dt).name} matrices this large"):
                low.lower(lowering_platforms=("cuda",)).as_text()


def test_complex_factorizations_and_wofz_in_a_scan_body():
    """The kernels as loop ops: cholesky, qr, eigvalsh, det and wofz of complex values per step of
    a scan on the GPU, as on the CPU."""
    rng = np.random.default_rng(11)
    h = _hpd(rng, (3, 4, 4), C64)

    def f(h):
        def body(c, x):
            r = jnp.linalg.qr(x)[1]
            c = c + jnp.sum(jnp.abs(jnp.linalg.cholesky(x))) + jnp.sum(jnp.linalg.eigvalsh(x))
            return c + jnp.abs(jnp.linalg.det(x)), fjax.scipy.special.wofz(jnp.diagonal(r) / 4)

        return lax.scan(body, jnp.float32(0), h)

    got, want = _both(f, h)
    _close(got, want, C64)
