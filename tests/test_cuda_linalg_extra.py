"""The CUDA kernels of ``tridiagonal_solve``, ``householder_product`` (``linalg_extra.py``) and
``rng_uniform`` (``random_state.py``) on the cupy stand-in (g++ against ``cuda_emu.h``):
tridiagonal systems against the CPU (LAPACK gtsv) and a dense solve (well conditioned, needing
row interchanges, singular), gradients, vmap and scan bodies; Householder products against the CPU
(orgqr/ungqr) and scipy's QR; uniform draws in [a, b) that differ between calls, sites, CUDA-graph
replays and programs, with plausible statistics; and nvcc."""

from __future__ import annotations

import _nvcc  # noqa: E402  (tests/ is on the path)
import _standin_gpu  # noqa: E402  (tests/ is on the path)
import ml_dtypes
import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
from fjax import lax
from fjax.backends.cuda import emulate
from fjax.lax import linalg

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")


@pytest.fixture(scope="module", autouse=True)
def standin_gpu():
    with _standin_gpu.installed() as cs:
        yield cs


_DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
_X64 = {np.float32: False, np.complex64: False, np.float64: True, np.complex128: True}


def _normal(rng: np.random.Generator, dt, shape: tuple, scale: float = 1.0) -> np.ndarray:
    v = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    return (scale * v).astype(dt)


def _system(rng: np.random.Generator, dt, batch: tuple, m: int, n: int, kind: str) -> tuple:
    """``dl, d, du, b``: diagonally dominant, needing interchanges (tiny or zero diagonals under
    large off-diagonals) or plain random; the ignored entries dl[..., 0] and du[..., -1] huge."""
    s = (*batch, m)
    dl, du, b = _normal(rng, dt, s), _normal(rng, dt, s), _normal(rng, dt, (*s, n))
    if kind == "dominant":
        d = _normal(rng, dt, s) + np.asarray(5.0, dt)
    elif kind == "pivot":
        dl, du = dl * np.asarray(10.0, dt), du * np.asarray(10.0, dt)
        d = _normal(rng, dt, s, 1e-3) * (rng.random(s) < 0.7)
    else:
        d = _normal(rng, dt, s)
    dl[..., 0] = 1e30
    du[..., -1] = -1e30
    return dl, d, du, b


def _dense(dl: np.ndarray, d: np.ndarray, du: np.ndarray) -> np.ndarray:
    m = d.shape[-1]
    a = np.zeros((*d.shape, m), np.complex128)
    i = np.arange(m)
    a[..., i, i] = d
    a[..., i[1:], i[:-1]] = dl[..., 1:]
    a[..., i[:-1], i[1:]] = du[..., :-1]
    return a


def _check_solve(got: np.ndarray, want: np.ndarray, dl, d, du, b) -> None:
    """Same NaN systems; elsewhere the GPU's solution agrees with LAPACK's within a multiple of
    eps times the condition number, and its residual is small (backward stability, independently
    of the CPU)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    eps = np.finfo(got.dtype).eps
    m = d.shape[-1]
    g = got.reshape(-1, m, got.shape[-1])
    w = want.reshape(g.shape)
    a = _dense(dl, d, du).reshape(-1, m, m)
    bb = b.reshape(g.shape).astype(np.complex128)
    for i in range(g.shape[0]):
        if not np.isfinite(w[i]).all():  # singular: NaN (a 1x1 system: b / 0)
            np.testing.assert_array_equal(g[i], w[i])
            continue
        cond = np.linalg.cond(a[i])
        scale = np.abs(w[i]).max() + 1e-300
        assert np.abs(g[i] - w[i]).max() <= 64 * eps * cond * scale, (i, cond)
        r = np.abs(a[i] @ g[i] - bb[i]).max()
        assert r <= 64 * eps * (np.abs(a[i]).sum(1).max() * np.abs(g[i]).max() + np.abs(bb[i]).max()), (i, r)


@settings(max_examples=6, deadline=None)
@given(
    dt=st.sampled_from(_DTYPES),
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(1, 9),
    n=st.integers(1, 3),
    batch=st.sampled_from([(), (3,), (2, 2)]),
    kind=st.sampled_from(["dominant", "pivot", "random"]),
)
def test_tridiagonal_solve_drawn(dt, seed, m, n, batch, kind):
    dl, d, du, b = _system(np.random.default_rng(seed), dt, batch, m, n, kind)
    got, want = _standin_gpu.both(linalg.tridiagonal_solve, dl, d, du, b, x64=_X64[dt])
    _check_solve(got, want, dl, d, du, b)


@pytest.mark.parametrize("dt", [np.float64, np.complex64])
def test_tridiagonal_solve_needs_row_interchanges(dt):
    """A zero diagonal (elimination without pivoting divides by zero) and a tiny one under large
    off-diagonals (without pivoting it loses every digit): the GPU matches LAPACK and a dense
    solve."""
    m = 8
    dl, du = np.ones((2, m), dt), np.ones((2, m), dt)
    d = np.zeros((2, m), dt)
    d[1] = 1e-9
    dl[1], du[1] = 3.0, -2.0
    b = np.arange(2 * m * 2, dtype=np.float64).reshape(2, m, 2).astype(dt) + 1
    got, want = _standin_gpu.both(linalg.tridiagonal_solve, dl, d, du, b, x64=_X64[dt])
    assert np.isfinite(got).all()
    _check_solve(got, want, dl, d, du, b)
    ref = np.linalg.solve(_dense(dl, d, du), b.astype(np.complex128))
    np.testing.assert_allclose(got, ref, rtol=100 * np.finfo(dt).eps, atol=100 * np.finfo(dt).eps * np.abs(ref).max())


@pytest.mark.parametrize("dt", _DTYPES)
def test_tridiagonal_solve_singular_gives_nan(dt):
    """A zero pivot with nothing below it (at the first step, later, at the last row) makes that
    system NaN, all its columns, and leaves the others solved; a 1x1 system divides unchecked."""
    m = 5
    rng = np.random.default_rng(3)
    dl, d, du, b = _system(rng, dt, (4,), m, 3, "dominant")
    d[1, 0] = 0
    dl[1, 1] = 0  # first column zero
    d[2, :] = 1
    dl[2, :] = 1
    du[2, :] = 1  # the 5x5 all-ones band: singular (its eigenvalue 1 + 2 cos(2 pi / 3) is 0)
    dl[3, -1], d[3, -1] = 0, 0  # last row zero
    got, want = _standin_gpu.both(linalg.tridiagonal_solve, dl, d, du, b, x64=_X64[dt])
    assert np.isnan(got[1:]).all() and np.isfinite(got[0]).all()
    _check_solve(got, want, dl, d, du, b)
    one = (np.array([[2.0], [0.0]], dt), np.array([[3.0], [0.0]], dt))
    z = np.zeros((2, 1), dt)
    if np.dtype(dt).kind == "f":
        got, want = _standin_gpu.both(linalg.tridiagonal_solve, z, one[0], z, one[1][..., None], x64=_X64[dt])
        np.testing.assert_array_equal(got, want)
        assert got[0, 0, 0] == 1.5 and np.isnan(got[1, 0, 0])


def test_tridiagonal_solve_gradients_vmap_and_scan():
    rng = np.random.default_rng(7)
    dl, d, du, b = _system(rng, np.float32, (3,), 6, 2, "pivot")

    def loss(dl, d, du, b):
        return (linalg.tridiagonal_solve(dl, d, du, b) ** 2).sum()

    got, want = _standin_gpu.both(fjax.grad(loss, argnums=(0, 1, 2, 3)), dl, d, du, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4 * np.abs(w).max())
    # vmap: the right-hand sides batched along their last axis, the matrix shared
    bs = _normal(rng, np.float32, (6, 2, 4))
    f = fjax.vmap(lambda x: linalg.tridiagonal_solve(dl[0], d[0], du[0], x), in_axes=2, out_axes=0)
    got, want = _standin_gpu.both(f, bs)
    assert got.shape == (4, 6, 2)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    # a scan body: x <- A^-1 (x + 1), three times
    dl2, d2, du2, b2 = _system(rng, np.float64, (2,), 5, 3, "dominant")

    def run(dl, d, du, x):
        def step(c, _):
            y = linalg.tridiagonal_solve(dl, d, du, c + 1.0)
            return y, y.sum()

        return lax.scan(step, x, None, length=3)

    got, want = _standin_gpu.both(run, dl2, d2, du2, b2, x64=True)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13)


# ---------------------------------------------------------------------------------------------
# householder_product


@settings(max_examples=5, deadline=None)
@given(
    dt=st.sampled_from(_DTYPES),
    seed=st.integers(0, 2**32 - 1),
    mnk=st.sampled_from([(1, 1, 1), (4, 4, 4), (5, 3, 3), (6, 4, 2), (7, 5, 0), (9, 6, 6)]),
    batch=st.sampled_from([(), (2,), (2, 3)]),
)
def test_householder_product_drawn(dt, seed, mnk, batch):
    """Arbitrary reflectors (taus of any phase): the GPU's product equals orgqr/ungqr's."""
    m, n, k = mnk
    rng = np.random.default_rng(seed)
    a, taus = _normal(rng, dt, (*batch, m, n)), _normal(rng, dt, (*batch, k), 0.7)
    got, want = _standin_gpu.both(linalg.householder_product, a, taus, x64=_X64[dt])
    assert got.shape == want.shape == a.shape
    tol = 50 * np.finfo(dt).eps * max(1.0, np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=0, atol=tol)


@pytest.mark.parametrize("dt", _DTYPES)
def test_householder_product_is_the_q_of_qr(dt):
    """The reflectors of a QR factorization (scipy's geqrf, mode="raw") give back its Q, which is
    unitary: the complex conjugation is LAPACK's, independently of the CPU backend."""
    rng = np.random.default_rng(11)
    a = _normal(rng, dt, (7, 5))
    (qr, tau), _ = scipy.linalg.qr(a, mode="raw")
    q_ref = scipy.linalg.qr(a, mode="economic")[0]
    got, _ = _standin_gpu.both(linalg.householder_product, np.ascontiguousarray(qr), tau, x64=_X64[dt])
    tol = 50 * np.finfo(dt).eps
    np.testing.assert_allclose(got, q_ref, rtol=0, atol=tol)
    np.testing.assert_allclose(got.conj().T @ got, np.eye(5), rtol=0, atol=tol)


def test_empty_shapes():
    z = np.zeros((0, 4), np.float32)
    got, want = _standin_gpu.both(linalg.tridiagonal_solve, z, z, z, np.zeros((0, 4, 2), np.float32))
    assert got.shape == want.shape == (0, 4, 2)
    z = np.zeros((2, 3), np.float32)
    got, want = _standin_gpu.both(linalg.tridiagonal_solve, z, z, z, np.zeros((2, 3, 0), np.float32))
    assert got.shape == want.shape == (2, 3, 0)
    got, want = _standin_gpu.both(
        linalg.householder_product, np.zeros((0, 3, 2), np.complex64), np.zeros((0, 2), np.complex64)
    )
    assert got.shape == want.shape == (0, 3, 2)
    got, want = _standin_gpu.both(linalg.householder_product, np.ones((3, 2), np.float32), np.zeros((0,), np.float32))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, np.eye(3, 2))


# ---------------------------------------------------------------------------------------------
# rng_uniform


def _gpu_fn(f):
    """``jit(f)`` called with its arguments placed on the (stand-in) GPU, numpy results."""
    g = fjax.jit(f)
    gpu = fjax.devices("gpu")[0]

    def call(*xs):
        out = g(*[fjax.device_put(np.asarray(x), gpu) for x in xs])
        leaves = fjax.tree_util.tree_leaves(out)
        assert all(next(iter(a.devices())).platform == "gpu" for a in leaves)
        return fjax.tree_util.tree_map(np.asarray, out)

    return call


_RANGES = [
    (np.float32, 0.0, 1.0),
    (np.float32, -3e38, 3e38),
    (np.float16, -2.0, 5.0),
    (ml_dtypes.bfloat16, 1.0, 3.0),
    (np.int32, -7, 5),
    (np.int32, -(2**31), 2**31 - 1),
    (np.int8, -128, 127),
    (np.uint8, 3, 250),
    (np.float64, -1.7e308, 1.7e308),
    (np.float64, 2.0, 2.5),
    (np.int64, -(2**63), 2**63 - 1),
    (np.uint64, 0, 2**64 - 1),
]


def test_rng_uniform_in_range_and_new_each_call():
    """Every dtype's draws (one program, called twice) lie in [a, b), take many values, and differ
    between the calls."""
    los = [np.asarray(lo, dt) for dt, lo, _ in _RANGES]
    his = [np.asarray(hi, dt) for dt, _, hi in _RANGES]
    with fjax.enable_x64():
        k = len(_RANGES)
        f = _gpu_fn(lambda *lh: [lax.rng_uniform(a, b, (500,)) for a, b in zip(lh[:k], lh[k:])])
        xs, ys = f(*los, *his), f(*los, *his)
    for (dt, lo, hi), a, b, x, y in zip(_RANGES, los, his, xs, ys):
        assert x.dtype == np.dtype(dt) and x.shape == (500,)
        for v in (x, y):
            assert (v >= a).all() and (v < b).all(), dt
            assert len(np.unique(v)) >= min(50, int(hi) - int(lo) if np.dtype(dt).kind in "iu" else 50), dt
        assert (x != y).mean() > 0.5, dt


def test_rng_uniform_rounding_onto_b_gives_a():
    """float32 bounds one ulp apart: a + (b - a) u rounds to b for half the draws, which then are
    a (as the CPU impl); b below the smallest normal; b <= a gives a (floats and integers)."""
    f = _gpu_fn(lambda a, b: lax.rng_uniform(a, b, (300,)))
    a = np.float32(1.0)
    b = np.nextafter(a, np.float32(2))
    np.testing.assert_array_equal(f(a, b), np.full(300, a))
    tiny = f(np.float32(0), np.float32(1e-45))
    np.testing.assert_array_equal(tiny, np.zeros(300, np.float32))
    sub = f(np.float32(0), np.float32(1e-40))
    assert (sub >= 0).all() and (sub < np.float32(1e-40)).all() and len(np.unique(sub)) > 100
    np.testing.assert_array_equal(f(np.float32(3), np.float32(3)), np.full(300, 3, np.float32))
    np.testing.assert_array_equal(f(np.float32(3), np.float32(-1)), np.full(300, 3, np.float32))
    np.testing.assert_array_equal(f(np.int32(3), np.int32(3)), np.full(300, 3, np.int32))
    np.testing.assert_array_equal(f(np.int32(9), np.int32(-4)), np.full(300, 9, np.int32))
    h = f(np.float16(1.0), np.float16(1.001))  # one f16 ulp apart
    np.testing.assert_array_equal(h, np.full(300, np.float16(1.0)))
    np.testing.assert_array_equal(f(np.int32(5), np.int32(6)), np.full(300, 5, np.int32))


def test_rng_uniform_statistics():
    """Mean and variance of 40000 float32 draws on [0, 1) within 5 standard errors; a chi-square
    test of 20000 integers on [0, 10) (9 degrees of freedom, p ~ 1e-6 at 45); a range of 3 * 2^62
    uint64 values, where a modulo reduction would put half the draws below 2^62, puts a third."""

    def draws(f0, f1, i0, i1, w0, w1):
        r = lax.rng_uniform
        return r(f0, f1, (40000,)), r(i0, i1, (20000,)), r(w0, w1, (6000,))

    bounds = (np.float32(0), np.float32(1), np.int32(0), np.int32(10), np.uint64(0), np.uint64(3 * 2**62))
    with fjax.enable_x64():
        u, k, w = _gpu_fn(draws)(*bounds)
    u = u.astype(np.float64)
    se = np.sqrt(1 / 12 / u.size)
    assert abs(u.mean() - 0.5) < 5 * se
    assert abs(u.var() - 1 / 12) < 5 * np.sqrt(1 / 180 / u.size)
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 5 / np.sqrt(u.size)
    counts = np.bincount(k, minlength=10)
    chi2 = ((counts - 2000.0) ** 2 / 2000.0).sum()
    assert counts.size == 10 and chi2 < 45, counts
    frac = (w < 2**62).mean()
    assert abs(frac - 1 / 3) < 5 * np.sqrt(2 / 9 / w.size), frac


def test_rng_uniform_sites_scan_graphs_and_programs(standin_gpu):
    """Two draws of one program differ; so do the steps of a scan, the replays of a captured CUDA
    graph (the state is advanced on the device), and two programs' first draws."""
    f = _gpu_fn(lambda a, b: (lax.rng_uniform(a, b, (64,)), lax.rng_uniform(a, b, (64,))))
    x, y = f(np.float32(0), np.float32(1))
    assert (x != y).all()
    s = _gpu_fn(lambda a, b: lax.scan(lambda c, _: (c, lax.rng_uniform(a, b, (32,))), a, None, length=4)[1])
    rows = s(np.float32(0), np.float32(1))
    assert rows.shape == (4, 32) and len({r.tobytes() for r in rows}) == 4
    # enough launches to be captured as a graph from the second call on
    g = _gpu_fn(lambda a, b: (lax.rng_uniform(a, b, (16,)) * 2.0, lax.rng_uniform(a, b, (16,)) + a))
    before = standin_gpu.calls["graph launch"]
    outs = [g(np.float32(0), np.float32(1)) for _ in range(4)]
    assert standin_gpu.calls["graph launch"] > before, dict(standin_gpu.calls)
    firsts = [o[0].tobytes() for o in outs] + [o[1].tobytes() for o in outs]
    assert len(set(firsts)) == 8
    # another program with the same draw: a module of its own, another stream
    p = _gpu_fn(lambda a, b: lax.rng_uniform(a, b, (64,)))
    q = _gpu_fn(lambda a, b: (lax.rng_uniform(a, b, (64,)), a + b))
    assert (p(np.float32(0), np.float32(1)) != q(np.float32(0), np.float32(1))[0]).all()


def test_rng_uniform_scalar_and_empty_shapes():
    f0 = _gpu_fn(lambda a, b: lax.rng_uniform(a, b, ()))
    v = [f0(np.float32(2), np.float32(3)) for _ in range(3)]
    assert all(x.shape == () and 2 <= x < 3 for x in v) and len({float(x) for x in v}) == 3
    for shape in [(0,), (3, 0)]:
        e = _gpu_fn(lambda a, b, shape=shape: lax.rng_uniform(a, b, shape))(np.int32(0), np.int32(4))
        assert e.shape == shape and e.dtype == np.int32


# ---------------------------------------------------------------------------------------------
# nvcc


def _sources() -> list:
    srcs = []
    for dt in _DTYPES:
        with fjax.enable_x64(_X64[dt]):
            z = np.zeros((2, 5), dt)
            j = fjax.jit(linalg.tridiagonal_solve).trace(z, z, z, np.zeros((2, 5, 3), dt))
            srcs.append(j.lower(lowering_platforms=("cuda",)).as_text())
            j = fjax.jit(linalg.householder_product).trace(np.zeros((2, 5, 3), dt), np.zeros((2, 3), dt))
            srcs.append(j.lower(lowering_platforms=("cuda",)).as_text())
    for dt in [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int32, np.int64, np.uint8, np.uint64]:
        with fjax.enable_x64(np.dtype(dt).itemsize == 8):
            j = fjax.jit(lambda a, b: lax.rng_uniform(a, b, (100,))).trace(np.asarray(0, dt), np.asarray(1, dt))
            srcs.append(j.lower(lowering_platforms=("cuda",)).as_text())
    return srcs


@_nvcc.needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvcc_compiles_the_kernels_without_spills(arch, tmp_path):
    srcs = _sources()
    text = "\n".join(srcs)
    for marker in ("gtsv's elimination", "gtsv's row operations", "householder_product (orgqr", "fj_rng_state"):
        assert marker in text, marker
    _nvcc.compile_without_spills(text, arch, tmp_path)
