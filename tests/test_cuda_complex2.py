"""The inverse trigonometric and hyperbolic functions, ``logistic`` and the max/min reductions of
complex64/complex128 values on the CUDA backend (``fjax/backends/cuda/complex_ops2.py``), run on the
cupy stand-in (kernels compiled by g++ against ``cuda_emu.h``) against the CPU backend (numpy's,
so glibc's, ``casin``/... and ``np.max``): a grid of special values (exact where a part is zero or
not finite), hypothesis-drawn values of magnitudes 1e-30..1e30 and near the branch points (within a
few ulps of each part), gradients, vmap, scan, reductions along axes with ties and NaNs, and nvcc."""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess

import _complex_cases as _cc  # noqa: E402  (tests/ is on the path)
import _standin_gpu  # noqa: E402  (tests/ is on the path)
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.backends.cuda import emulate

pytestmark = [
    pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),  # numpy's invalid/overflow warnings (the CPU side)
]


@pytest.fixture(scope="module", autouse=True)
def standin_gpu():
    with _standin_gpu.installed():
        yield


_both = _standin_gpu.both

INV = {
    "asin": jnp.arcsin,
    "acos": jnp.arccos,
    "atan": jnp.arctan,
    "asinh": jnp.arcsinh,
    "acosh": jnp.arccosh,
    "atanh": jnp.arctanh,
}
# the most ulps of a part measured between these kernels and glibc's functions (the CPU's) over
# 200,000 values per dtype (magnitudes 1e-30..1e30, points near +-1 and +-i): 4 for complex64, 5
# for complex128; one more for what the sweep did not reach
_ULPS = 6


def _all_inv(a):  # one program for all six
    return tuple(f(a) for f in INV.values())


def _part_dtype(dt) -> type:
    return np.float32 if np.dtype(dt) == np.complex64 else np.float64


def _check_ulps(got, want, ulps: float, what: str) -> None:
    """Part by part: NaN where the CPU's is NaN; equal (zeros of the same sign) where the CPU's part
    is zero or infinite; elsewhere finite and within ``ulps`` units in the last place of the CPU's
    part."""
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    ft = _part_dtype(want.dtype)
    tiny = np.spacing(ft(np.finfo(ft).tiny)).astype(np.float64)
    for name in ("real", "imag"):
        g, w = getattr(got, name).astype(np.float64), getattr(want, name).astype(np.float64)
        exact = (w == 0) | np.isinf(w)
        same = (g == w) & (np.signbit(g) == np.signbit(w))
        ulp = np.maximum(np.spacing(np.abs(w).astype(ft)).astype(np.float64), tiny)
        close = np.isfinite(g) & (np.abs(g - w) <= ulps * ulp)
        ok = np.where(np.isnan(w), np.isnan(g), np.where(exact, same, close))
        bad = np.nonzero(~ok)[0]
        assert not bad.size, f"{what} ({name}): {[(i, got[i], want[i]) for i in bad[:4]]}"


# the shared grid (zeros of both signs, 1.5, -2, infinities, NaN) with +-1, tiny and big parts
_VALS = _cc.VALS + [1.0, -1.0, 1e-30, 3e20]
_GRID = [complex(a, b) for a, b in itertools.product(_VALS, _VALS)]


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_inverse_functions_match_the_cpu_at_special_values(dt):
    z = np.array(_GRID, dt)
    got, want = _both(_all_inv, z, x64=dt == np.complex128)
    for n, g, w in zip(INV, got, want):
        _check_ulps(g, w, _ULPS, n)


def _mag(e: float, s: float) -> float:
    return s * 10.0**e


_sign = st.sampled_from([1.0, -1.0])
# parts of every magnitude from 1e-30 to 1e30, and zeros and ones of both signs
_part = st.one_of(st.builds(_mag, st.floats(-30, 30), _sign), st.sampled_from([0.0, -0.0, 1.0, -1.0]))


def _near_branch(s, d, t, swap) -> complex:
    """``s (1 + d) + t i`` (near +-1: asin/acos/atanh/acosh's branch points), or ``t + s (1 + d) i``
    (near +-i: atan/asinh's)."""
    a = s * (1 + d)
    return complex(t, a) if swap else complex(a, t)


_near = st.builds(
    _near_branch,
    _sign,
    st.one_of(st.builds(_mag, st.floats(-15, 0), _sign), st.just(0.0)),
    st.one_of(st.builds(_mag, st.floats(-30, 0), _sign), st.sampled_from([0.0, -0.0])),
    st.booleans(),
)
_value = st.one_of(st.builds(complex, _part, _part), _near)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
@settings(deadline=None, max_examples=40)
@given(zs=st.lists(_value, min_size=48, max_size=48))
def test_inverse_functions_match_the_cpu_on_drawn_values(dt, zs):
    z = np.array(zs, dt)
    got, want = _both(_all_inv, z, x64=dt == np.complex128)
    for n, g, w in zip(INV, got, want):
        _check_ulps(g, w, _ULPS, n)


def _check_logistic(got, want, what: str) -> None:
    """``1 / (1 + u)``, ``u = exp(-z)``: the GPU's exp/cos/sin and numpy's differ by an ulp, which
    the sum ``1 + u`` magnifies near its zeros (the poles ``z = (2k + 1) pi i``): an error ``eps |u|``
    in ``u`` moves the result by ``eps |u| |w|^2 = eps |1 - w| |w|``. Within 8 of those (plus 8 ulps
    of ``|w|``) per part; zero and non-finite parts exact."""
    assert got.dtype == want.dtype
    eps = float(np.finfo(_part_dtype(want.dtype)).eps)
    w128 = want.astype(np.complex128)
    tol = 8 * eps * np.abs(w128) * (1 + np.abs(1 - w128))
    for name in ("real", "imag"):
        g, w = getattr(got, name).astype(np.float64), getattr(want, name).astype(np.float64)
        exact = (w == 0) | np.isinf(w)
        same = (g == w) & (np.signbit(g) == np.signbit(w))
        close = np.isfinite(g) & (np.abs(g - w) <= tol)
        ok = np.where(np.isnan(w), np.isnan(g), np.where(exact, same, close))
        bad = np.nonzero(~ok)[0]
        assert not bad.size, f"{what} ({name}): {[(i, got[i], want[i]) for i in bad[:4]]}"


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_logistic_matches_the_cpu_at_special_values(dt):
    z = np.array(_GRID + [complex(0, np.pi), complex(-0.5, 3.0), complex(40, -2), complex(-100, 1)], dt)
    got, want = _both(lax.logistic, z, x64=dt == np.complex128)
    _check_logistic(got, want, "logistic")
    if dt == np.complex64:  # jax.nn.sigmoid is lax.logistic
        got2, _ = _both(fjax.nn.sigmoid, z)
        np.testing.assert_array_equal(got2, got)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
@settings(deadline=None, max_examples=30)
@given(zs=st.lists(st.builds(complex, _part, _part), min_size=48, max_size=48))
def test_logistic_matches_the_cpu_on_drawn_values(dt, zs):
    z = np.array(zs, dt)
    got, want = _both(lax.logistic, z, x64=dt == np.complex128)
    _check_logistic(got, want, "logistic")


def _loss(t):
    # off the branch cuts: Im z = 0.3 t^2 > 0 wherever |Re z| could pass 1
    z = lax.complex(0.4 * t, 0.3 * t * t)
    parts = [
        jnp.real(jnp.arcsin(z)),
        jnp.imag(jnp.arccos(z)),
        jnp.abs(jnp.arctan(z)),
        jnp.real(jnp.arcsinh(z) * jnp.conj(jnp.arccosh(z + 2))),
        jnp.imag(jnp.arctanh(z)),
        jnp.real(lax.logistic(z)) * jnp.imag(lax.logistic(2j * z)),
    ]
    return sum(jnp.sum(p) for p in parts)


def test_gradients_through_the_functions_match_the_cpu():
    rng = np.random.default_rng(5)
    t = rng.normal(size=(8, 5)).astype(np.float32)
    got, want = _both(fjax.grad(_loss), t)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    _cc.check_grad_entry(_loss, t, got)  # against central differences of the CPU loss (float64)


def test_vmap_and_scan_through_the_functions_and_reductions():
    rng = np.random.default_rng(6)
    a = (rng.normal(size=(6, 16)) + 1j * rng.normal(size=(6, 16))).astype(np.complex64)

    def f(x):
        v = fjax.vmap(lambda r: jnp.arcsin(r) * lax.logistic(r) + jnp.max(r))(x)

        def body(c, r):
            c2 = jnp.arctanh(0.5 * c + 0.1 * r)
            return c2, jnp.min(jnp.arccosh(r) - jnp.arctan(c2))

        carry, ys = lax.scan(body, jnp.zeros(16, jnp.complex64), x)
        return v, carry, ys, fjax.vmap(jnp.arcsinh, in_axes=1, out_axes=1)(x)

    got, want = _both(f, a)
    for i, (g, w) in enumerate(zip(got, want)):
        _cc.check(g, w, 1e-5, f"output {i}")


def _with_nans(z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``z`` with a value holding a NaN (in the real or the imaginary part) at distinct rows and
    columns of its last two axes: each reduction along one axis meets at most one such value."""
    z = z.copy()
    r, c = z.shape[-2:]
    cols = rng.permutation(c)[: min(r, c)]
    for i, j in enumerate(cols):
        if rng.random() < 0.6:
            k = float(rng.integers(-3, 3))
            z[..., i, j] = complex(np.nan, k) if rng.random() < 0.5 else complex(k, np.nan)
    return z


@pytest.mark.parametrize("shape", [(5, 40), (40, 33), (64, 33), (2, 2600), (2, 3, 70)])
def test_max_min_reductions_match_the_cpu(shape):
    rng = np.random.default_rng(len(shape) * 100 + shape[-1])
    # small integer parts: many ties in the real part (decided by the imaginary part) and whole ties
    z = (rng.integers(-3, 4, shape) + 1j * rng.integers(-3, 4, shape)).astype(np.complex64)
    z.flat[rng.integers(0, z.size, 3)] = complex(-np.inf, -np.inf)  # the identity itself
    zn = _with_nans(z, rng)
    one = z.copy()
    one.flat[rng.integers(0, z.size)] = complex(2.0, np.nan)  # the only NaN: it wins overall

    def f(a, b, c):
        a0, b0 = a[..., :96], b[..., :96]  # (a block per output: slow to emulate for 2600 outputs)
        return (
            jnp.max(a),
            jnp.min(a),
            jnp.max(a0, axis=0),
            jnp.min(a, axis=-1),
            jnp.max(b, axis=-1),
            jnp.min(b0, axis=-2),
            jnp.max(b0 * 2j, axis=-2),
            jnp.max(c),
            jnp.min(c, keepdims=True),
            jnp.max(a0, axis=tuple(range(a.ndim - 1))),
        )

    got, want = _both(f, z, zn, one)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype == np.complex64, i
        _check_ulps(np.ravel(g), np.ravel(w), 0, f"output {i}")


def test_max_min_reductions_in_double_precision_and_repeated_nans():
    rng = np.random.default_rng(8)
    z = rng.normal(size=(9, 300)) + 1j * rng.normal(size=(9, 300))
    z[:, 7] = z[:, 200] = complex(np.nan, 1.0)  # the same NaN-holding value twice in every row
    z[3] = z[3, 0]  # a row of one value
    got, want = _both(lambda a: (jnp.max(a, axis=1), jnp.min(a, axis=1), jnp.max(a[:, 8:190])), z, x64=True)
    for i, (g, w) in enumerate(zip(got, want)):
        _check_ulps(np.ravel(g), np.ravel(w), 0, f"output {i}")


def test_max_min_fused_into_row_kernels():
    rng = np.random.default_rng(9)
    z = (rng.integers(-3, 4, (64, 300)) + 1j * rng.integers(-3, 4, (64, 300))).astype(np.complex64)
    z[5, 7] = complex(np.nan, 2.0)

    def f(a):  # the row's max/min, then elementwise work on the row with it (one kernel per row block)
        return a - jnp.max(a, axis=-1, keepdims=True), jnp.sum(jnp.abs(a - jnp.min(a, axis=-1, keepdims=True)), -1)

    got, want = _both(f, z)
    _check_ulps(np.ravel(got[0]), np.ravel(want[0]), 0, "a - max")
    _cc.check(got[1], want[1], 1e-5, "sum |a - min|")


def test_gradient_initial_and_where_of_max_min():
    rng = np.random.default_rng(10)
    t = rng.normal(size=(6, 20)).astype(np.float32)

    def loss(x):
        m = jnp.max(jnp.arcsin(x * (0.5 + 0.25j)), axis=1)
        return jnp.sum(jnp.real(m)) + jnp.sum(jnp.imag(jnp.min(x * (1 - 2j), axis=0)))

    got, want = _both(fjax.grad(loss), t)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    z = (t + 1j * t[::-1]).astype(np.complex64)
    got, want = _both(lambda a: (jnp.max(a, 1, initial=0.5 + 0j), jnp.min(a, 1, where=a.real > 0, initial=5j)), z)
    for i, (g, w) in enumerate(zip(got, want)):
        _check_ulps(g, w, 0, f"output {i}")


def test_equal_values_with_zeros_of_different_signs():
    # the CPU keeps the first of equal values; the GPU combines in no fixed order, so its
    # commutative choice (documented in complex_ops2): max the positive zero, min the negative
    z = np.array([[complex(-0.0, 0.0), 0j], [0j, complex(-0.0, 0.0)], [complex(0, -0.0), 0j]], np.complex64)
    got, _ = _both(lambda a: (jnp.max(a, axis=1), jnp.min(a, axis=1)), z)
    mx, mn = got
    assert not np.signbit(mx.real).any() and not np.signbit(mx.imag).any(), mx
    assert np.signbit(mn.real[:2]).all() and np.signbit(mn.imag[2]), mn


def test_argmax_of_complex_values_raises_as_jax():
    z = fjax.device_put(np.ones(4, np.complex64), fjax.devices("gpu")[0])
    with pytest.raises(TypeError, match="complex64"):
        fjax.jit(jnp.argmax)(z)


def _programs() -> str:
    srcs = []
    for dt in (np.complex64, np.complex128):
        with fjax.enable_x64(dt == np.complex128):

            def f(a):
                return (*_all_inv(a), lax.logistic(a), jnp.max(a, axis=1), jnp.min(a))

            srcs.append(fjax.jit(f).trace(np.zeros((4, 64), dt)).lower(lowering_platforms=("cuda",)).as_text())
    return "\n".join(srcs)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_nvcc_compiles_the_functions_without_spills(tmp_path):
    src = _programs()
    for name in ("fj_casin(", "fj_cacos(", "fj_catan(", "fj_casinh(", "fj_cacosh(", "fj_catanh(", "fj_clogistic("):
        assert src.count(name) >= 3, name  # defined, and called in both programs
    assert "fj_crmax(" in src and "fj_crmin(" in src
    cu = tmp_path / "inv.cu"
    cu.write_text(src)
    # sm_80 and sm_90 in one run (one front end pass, ptxas for each)
    archs = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in (80, 90)]
    cmd = ["nvcc", *archs, "-c", str(cu), "-o", str(tmp_path / "inv.o"), "-Xptxas", "-v"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    info = r.stderr + r.stdout
    assert "sm_80" in info and "sm_90" in info, info[-3000:]
    assert not re.search(r"[1-9]\d* bytes spill", info), info[-3000:]


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_ordering_comparisons_and_what_uses_them_match_the_cpu(dt):
    """``jnp.less`` & co. of complex values (JAX's lexicographic order: the imaginary parts only
    where the real parts are equal), ``fmax``/``fmin`` and ``searchsorted``, on every pair of the
    special-value grid (zeros of both signs, NaNs, infinities)."""
    vals = [0.0, -0.0, 1.0, 2.0, np.nan, np.inf, -np.inf]
    zs = np.array([complex(a, b) for a in vals for b in vals], dt)
    A, B = (m.ravel() for m in np.meshgrid(zs, zs))

    def f(a, b):
        return jnp.less(a, b), jnp.less_equal(a, b), jnp.greater(a, b), jnp.greater_equal(a, b)

    got, want = _standin_gpu.both(f, A, B, x64=dt == np.complex128)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    for fn in (jnp.fmax, jnp.fmin):
        got, want = _standin_gpu.both(fn, A, B, x64=dt == np.complex128)
        np.testing.assert_array_equal(got.view(_part_dtype(dt)), want.view(_part_dtype(dt)))
    s = np.sort(zs[np.isfinite(zs)])
    got, want = _standin_gpu.both(lambda a, v: jnp.searchsorted(a, v), s, zs, x64=dt == np.complex128)
    np.testing.assert_array_equal(got, want)


def test_complex_convolutions_match_the_cpu():
    """``conv_general_dilated`` of complex values (im2col copies + a complex GEMM): ``jnp.convolve``
    and ``correlate``, a 2-D SAME convolution, a grouped, strided, dilated complex128 one, and a
    gradient through one."""
    rng = np.random.default_rng(5)

    def c(*s, dt=np.complex64):
        return (rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(dt)

    hi = "highest"
    conv = lax.conv_general_dilated

    def grouped(a, b):
        return conv(a, b, (2, 1), [(1, 0), (0, 2)], rhs_dilation=(1, 2), feature_group_count=3)

    def grad(a, b):
        return fjax.grad(lambda a: jnp.sum(jnp.abs(conv(a, b, (1,), "VALID", precision=hi)) ** 2))(a)

    cases = [
        (lambda a, b: jnp.convolve(a, b, precision=hi), (c(20), c(5)), False, 1e-6),
        (lambda a, b: jnp.correlate(a, b, mode="full", precision=hi), (c(20), c(5)), False, 1e-6),
        (lambda a, b: conv(a, b, (1, 1), "SAME", precision=hi), (c(2, 3, 8, 8), c(4, 3, 3, 3)), False, 1e-6),
        (
            grouped,
            (c(2, 6, 8, 7, dt=np.complex128), c(3, 2, 3, 2, dt=np.complex128)),
            True,
            1e-14,
        ),
        (
            grad,
            (c(2, 3, 9), c(4, 3, 3)),
            False,
            1e-5,
        ),
    ]  # fmt: skip
    for f, args, x64, tol in cases:
        got, want = _standin_gpu.both(f, *args, x64=x64)
        assert got.dtype == want.dtype and got.dtype.kind == "c"
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_complex_atan2_matches_the_cpu(dt):
    """``lax.atan2`` of complex values (the impl's -i log((y + i x) / sqrt(y^2 + x^2))). The formula
    loses digits where |x| << |y| (the result is small): there the GPU and CPU round its complex64
    sqrt/log differently, so values are compared where |x| >= |y| / 10, and JAX's two recorded
    special cases exactly."""
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(400) + 1j * rng.standard_normal(400)) * 10.0 ** rng.uniform(-3, 3, 400)
    y = (rng.standard_normal(400) + 1j * rng.standard_normal(400)) * 10.0 ** rng.uniform(-3, 3, 400)
    keep = np.abs(x) >= np.abs(y) / 10
    x, y = x[keep].astype(dt), y[keep].astype(dt)
    got, want = _standin_gpu.both(lax.atan2, x, y, x64=dt == np.complex128)
    assert got.dtype == want.dtype == np.dtype(dt)
    np.testing.assert_allclose(got, want, rtol=2e-5 if dt == np.complex64 else 1e-13)
    # JAX 0.10.2: atan2([0, 1], [1, 0]) = [0, pi/2] (tests/data/complex_fidelity.json)
    got, _ = _standin_gpu.both(lax.atan2, np.array([0j, 1 + 0j], dt), np.array([1 + 0j, 0j], dt))
    np.testing.assert_allclose(got, np.array([0, np.pi / 2], dt), rtol=1e-7, atol=0)
