"""The CUDA kernels of ``fjax/backends/cuda/special_hyp.py`` (``hyp1f1``, ``hyp2f1``,
``sph_harm_y``) on the cupy stand-in (g++ against ``cuda_emu.h``) against the CPU (scipy): drawn
parameters over the regions each algorithm switches between, the special values (poles, x = 0,
a = 0, a = b, x = 1, infinities, NaN), float32 rounded once from double precision, vmap, grad,
a scan body, and nvcc for sm_80/sm_90 without spills.

Tolerances (measured, see the module's docstring): hyp1f1 5e-12 of |M| + |x dM/dx| (the value's
sensitivity to x: both algorithms lose digits near the zeros of M); hyp2f1 1e-12 of |F| + |x dF/dx|,
and for x < -2 also 1e-13 of the two terms of the 1/x transformation, whose cancellation Cephes'
method (scipy's and the kernel's) carries; float32 two ulps. scipy's hyp1f1 (Boost) is off by up
to 1e5x for b < -30 with |a| < 1 and |x| > 15: there the kernel is checked against mpmath values
recorded at 300 bits."""

from __future__ import annotations

import _nvcc  # noqa: E402  (tests/ is on the path)
import _standin_gpu  # noqa: E402  (tests/ is on the path)
import numpy as np
import pytest
import scipy.special as sc
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
from fjax.backends.cuda import emulate
from fjax.scipy.special import hyp1f1, hyp2f1, sph_harm_y

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")

inf, nan = np.inf, np.nan


@pytest.fixture(scope="module", autouse=True)
def standin_gpu():
    with _standin_gpu.installed() as cs:
        yield cs


def _same_nonfinite(got, want):
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.where(np.isinf(want), got, 0), np.where(np.isinf(want), want, 0))


def _check_1f1(a, b, x, rtol=5e-12):
    got, want = _standin_gpu.both(hyp1f1, a, b, x, x64=True)
    assert got.dtype == want.dtype == np.float64
    _same_nonfinite(got, want)
    with np.errstate(all="ignore"):  # (scipy's hyp1f1(2, 3, inf) does not return: finite x only)
        xf = np.where(np.isfinite(x), x, 0.0)
        scale = np.abs(want) + np.abs(xf * a / b * sc.hyp1f1(a + 1, b + 1, xf))
    fin = np.isfinite(want)
    err = np.abs(got[fin] - want[fin])
    bad = err > rtol * scale[fin]
    assert not bad.any(), list(zip(a[fin][bad], b[fin][bad], x[fin][bad], got[fin][bad], want[fin][bad]))[:5]


def _check_2f1(a, b, c, x, rtol=1e-12):
    got, want = _standin_gpu.both(hyp2f1, a, b, c, x, x64=True)
    assert got.dtype == want.dtype == np.float64
    _same_nonfinite(got, want)
    with np.errstate(all="ignore"):
        scale = np.abs(want) + np.abs(x * a * b / c * sc.hyp2f1(a + 1, b + 1, c + 1, x))
        # x < -2: Gamma(c) Gamma(b - a) / (Gamma(b) Gamma(c - a)) (-x)^-a F(a, 1 - c + a; 1 - b + a; 1/x)
        # and its a <-> b twin, summed (AMS55 15.3.7)
        g = sc.gamma
        t1 = g(c) * g(b - a) / (g(b) * g(c - a)) * (-x) ** -a * sc.hyp2f1(a, 1 - c + a, 1 - b + a, 1 / x)
        t2 = g(c) * g(a - b) / (g(a) * g(c - b)) * (-x) ** -b * sc.hyp2f1(b, 1 - c + b, 1 - a + b, 1 / x)
        cancel = np.where(x < -2, np.abs(t1) + np.abs(t2), 0.0)
    fin = np.isfinite(want)
    tol = rtol * scale + 1e-13 * np.nan_to_num(cancel, nan=0.0, posinf=0.0)
    err = np.abs(got[fin] - want[fin])
    bad = err > tol[fin]
    assert not bad.any(), list(zip(a[fin][bad], b[fin][bad], c[fin][bad], x[fin][bad], got[fin][bad]))[:5]


# ---------------------------------------------------------------------------------------------
# hyp1f1


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_hyp1f1_drawn(seed):
    """|a|, |x| <= 50 with b in (0, 50] (all three methods: double sums, double-double sums, the
    recurrence on b), b in [-25, 0) with |x| <= 12 (beyond, scipy's own error reaches 1e-8: see
    ``test_hyp1f1_hard_regions``); a third of the points within 10 of the origin."""
    rng = np.random.default_rng(seed)
    n = 300
    a = rng.uniform(-50, 50, n)
    x = np.concatenate([rng.uniform(-50, 50, n // 2), rng.uniform(-12, 12, n - n // 2)])
    b = np.concatenate([rng.uniform(0, 50, n // 2), -rng.uniform(0, 25, n - n // 2)])
    small = rng.uniform(-10, 10, (3, n // 3))
    a, b, x = np.concatenate([a, small[0]]), np.concatenate([b, small[1]]), np.concatenate([x, small[2]])
    _check_1f1(a, b, x)


def test_hyp1f1_hard_regions():
    """Large -a with large x (the recurrence on b), b < 0 with a > 0 and x < 0 (both series cancel),
    the double-double band; against the CPU and against mpmath (300 bits)."""
    rng = np.random.default_rng(3)
    a = np.concatenate([-rng.uniform(30, 50, 40), rng.uniform(30, 50, 40), -rng.uniform(5, 20, 40)])
    b = np.concatenate([rng.uniform(0.1, 50, 40), -rng.uniform(5, 25, 40), rng.uniform(0.5, 5, 40)])
    x = np.concatenate([rng.uniform(25, 50, 40), -rng.uniform(20, 50, 40), rng.uniform(10, 30, 40)])
    _check_1f1(a, b, x)
    ref = [  # (a, b, x, M) by mpmath.hyp1f1 at 300 bits
        (-49.5, 1.0, 50.0, 4996281786.476549),
        (-48.34723644714709, 31.327023920027244, 41.27555772777217, 6.1834191737332725e-12),
        (-47.848004855253954, 6.266165575305813, 35.68011747150781, 0.011854376575831254),
        (43.6566083474294, -11.232578804431071, -33.521734793399645, -10828.940941127625),
        (-30.5, 0.25, 45.0, 25778326014.03304),
        (49.49173481609178, -18.40564546322998, -31.728762107343755, 91878098.20713897),
        (0.5, 1.0, -700.0, 0.021331989982151196),
        (-0.5, 1.0, 700.0, -1.5498344009520615e299),
        # b < 0 with moderate cancellation (double-double sums; the recurrence on b is 1e-8 off here)
        (1.6068585547878698, -38.41343875292297, 12.348975553750044, -41586.92693579831),
        (-40.82852628660956, -29.000399498827544, 49.168619601446466, -2.413302065470665e28),
        # scipy 1.17 (Boost) is off here: 0.957, 0.40580, 0.71872890195, 0.86424, 1.02946, -0.54754
        (0.15631620804356317, -47.022314204847504, 15.259962453192202, 2356.8628489002035),
        (-0.2747403409823477, -38.36486545979757, -36.7672235444733, 0.4070515686829633),
        (-0.3855318706813122, -47.018803971861246, -26.745620667397098, 0.7187289029893451),
        (-0.09276775629344702, -49.56579278025302, -37.95966758009933, 0.8647044432516307),
        (0.008398462902192039, -42.22836640027714, -38.62770776290166, 1.0274871283626503),
        (-0.4465271888717144, -37.081076378484426, -37.952519192504006, -0.5585399448185726),
        # beyond |a|, |b| = 50: sums rescaled by 2^-900 (scipy: -1.58e51, and NaN for the other two)
        (189.44997609341863, -170.94057516569413, -256.09238163081, -1.5798442229584779e51),
        (131.107047370688, -161.53180896407778, 12.587718788013888, 6.9392637576454759e-5),
        (179.57334864613904, -173.2920886197763, 18.250988531856706, 2.2024982501150035e26),
    ]
    a, b, x, m = (np.array(v) for v in zip(*ref))
    with fjax.enable_x64():
        got = np.asarray(fjax.jit(hyp1f1)(*(fjax.device_put(v, fjax.devices("gpu")[0]) for v in (a, b, x))))
    np.testing.assert_allclose(got, m, rtol=2e-12, atol=0)
    # cancellations of 1e3..1e14, summed in double-double: the relative error stays ~1e-16 (where
    # the recurrence on b, taken beyond, would leave 3e-13..1e-12)
    ref = [
        (27.393663186649192, 15.518034408682581, -36.07927760448405, -5.889146137871601e-22),
        (-14.368523976930348, 49.65069645261623, 22.50996847869733, -1.0509330628982655e-07),
        (6.97603488928474, -19.816261415665316, -48.626901113051304, -0.5861917440300289),
        (15.792279201801037, -38.70333052351489, -41.185077847178405, -350471.453799464),
        (-17.45666202021434, 1.98288539642666, 37.896537642919924, -42946.209608607955),
    ]
    a, b, x, m = (np.array(v) for v in zip(*ref))
    with fjax.enable_x64():
        got = np.asarray(fjax.jit(hyp1f1)(*(fjax.device_put(v, fjax.devices("gpu")[0]) for v in (a, b, x))))
    np.testing.assert_allclose(got, m, rtol=1e-14, atol=0)


def test_hyp1f1_special_values():
    """scipy's conventions: b a non-positive integer gives inf unless the series ends first (a a
    negative integer >= b, or a == b); a = 0 or x = 0 gives 1, a = b e^x; NaN in, NaN out;
    infinities; overflow +inf; e^x M(b - a, b, -x) down to x = -800 and the large-|x| expansion
    below -700."""
    cases = [
        (1.5, -2, 0.5), (-1, -2, 0.5), (-3, -2, 0.5), (0, -2, 0.5), (-2, -2, 0.5), (-3, -3, 2.0),
        (1, 0, 1), (-2, -5, 1), (-5, -2, 1), (0, 1, 5), (3, 2, 0), (0, 0, 0), (1.5, 1.5, 3.0),
        (2.5, 2.5, -30.0), (-1, 3, 2), (2, 2.5, 1e-300), (1e-300, 2, 3), (nan, 1, 1), (1, nan, 1),
        (1, 1, nan), (1, 2, inf), (1, 2, -inf), (0, 2, inf), (1, inf, 1), (1, -inf, 1), (inf, 2, 1),
        (0.5, 1, 700), (0.5, 1, 720), (-0.5, 1, 720), (1, 2, -800), (2.5, 2.5, -800), (1, 1, -800),
        (-40, 3, 30), (-40, -45, 30), (-20, 2.5, -30), (1e3, 2, 1.5), (2, 1e3, -500), (-1e3, 2, 1),
        (1, 2, -1e6), (0.5, 1, -1e20), (-3, 2.5, -2000), (40, -20.5, -5000), (10, 20, -750), (2.5, 0.5, -3000),
        (150, -150.5, -1000), (-45.5, 1.5, -800), (30, 1.5, -710),
    ]  # fmt: skip
    a, b, x = (np.array(v, np.float64) for v in zip(*cases))
    _check_1f1(a, b, x)
    got, _ = _standin_gpu.both(hyp1f1, a, b, x, x64=True)
    assert got[0] == inf and got[1] == 1.25 and got[4] == 1.625 and got[11] == inf and got[12] == np.exp(3.0)


def test_hyp1f1_float32_vmap_and_grad():
    """float32 computed in double and rounded once (within 2 ulps of the CPU); vmap over rows; the
    x-derivative (a / b) M(a + 1, b + 1, x), itself the kernel."""
    rng = np.random.default_rng(7)
    a, b = rng.uniform(-10, 10, (2, 4, 64)).astype(np.float32)
    x = rng.uniform(-20, 20, (4, 64)).astype(np.float32)
    got, want = _standin_gpu.both(hyp1f1, a, b, x)
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=2.5e-7, atol=0)
    got, want = _standin_gpu.both(fjax.vmap(hyp1f1), a, b, x)
    np.testing.assert_allclose(got, want, rtol=2.5e-7, atol=0)
    b64 = np.abs(b.astype(np.float64)) + 0.5
    a64, x64 = a.astype(np.float64), x.astype(np.float64) / 4
    got, want = _standin_gpu.both(
        fjax.vmap(fjax.grad(hyp1f1, argnums=2)), a64.ravel(), b64.ravel(), x64.ravel(), x64=True
    )
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=0)
    np.testing.assert_allclose(got, a64.ravel() / b64.ravel() * sc.hyp1f1(a64 + 1, b64 + 1, x64).ravel(), rtol=1e-11)


# ---------------------------------------------------------------------------------------------
# hyp2f1


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_hyp2f1_drawn(seed):
    """|a|, |b|, |c| <= 20 over x in (-10, 1): the 1/x (x < -2) and Pfaff (x < -1) transformations,
    Pfaff below -0.5, the series, 15.3.6 near 1; and near-integer c - a - b near x = 1."""
    rng = np.random.default_rng(seed)
    n = 400
    a, b, c = rng.uniform(-20, 20, (3, n))
    x = np.concatenate([rng.uniform(-10, 1, n // 2), rng.uniform(-2, -0.5, n // 4), rng.uniform(0.85, 1, n // 4)])
    _check_2f1(a, b, c, x)
    # c - a - b an integer (the psi expansion, 15.3.10-12; a, b in eighths, so that it is exact)
    m = 100
    a, b = np.round(rng.uniform(-10, 10, (2, m)) * 8) / 8
    c = a + b + rng.integers(-3, 4, m)
    _check_2f1(a, b, c, rng.uniform(0.9, 1, m))


def test_hyp2f1_special_values():
    """x = 0, a = 0, c = a or b, b = c a negative integer, c a non-positive integer (inf unless
    the series ends first), x = 1 (Gauss's formula, or inf), x = -1, x > 1 (inf), the polynomials
    (a or b a negative integer) at any x, a and b much larger than c (the recurrence on a), NaN."""
    cases = [
        (1.5, 2.3, 3.1, 0.0), (0, 2.3, 3.1, 0.5), (1.5, 2.3, 2.3, 0.5), (1.5, 2.3, 1.5, 0.5), (1.5, -3, -3, 0.5),
        (1.5, 2.3, -2, 0.5), (-1, 2.3, -2, 0.5), (-3, 2.3, -2, 0.5), (1.5, 2.3, 5.1, 1.0), (1.5, 2.3, 3.1, 1.0),
        (1.5, 2.3, 3.8, 1.0), (1.5, 2.3, 3.1, -1.0), (1.5, 2.3, 3.1, 1.5), (nan, 1, 1, 0.5), (1, 1, 1, nan),
        (1.5, 2.5, 4, 0.95), (1.5, 2.5, 3, 0.95), (1.5, 2.5, 4, -3), (1.5, 2.5, 4, -30), (-3, 2.5, 4, -30),
        (-3, -2, -5, 0.7), (20, -20, 5.5, 0.99), (0.5, 0.5, 1, 1 - 1e-9), (1.5, 2.3, 0.1, 0.999),
        (15, -15.5, 2, 0.5), (1, 1, 2, -1), (3, 4, 1, -0.7), (30, -2.5, 1.5, 0.3), (-30.5, 25, 2, 0.8),
        (1, 1, 2, -1e5), (0.5, 1.5, 2.5, -7.3), (-4, 3.5, 1.5, 12.0),
    ]  # fmt: skip
    a, b, c, x = (np.array(v, np.float64) for v in zip(*cases))
    _check_2f1(a, b, c, x)
    got, _ = _standin_gpu.both(hyp2f1, a, b, c, x, x64=True)
    assert got[0] == 1.0 and got[1] == 1.0 and got[5] == inf and got[6] == 1.575 and got[12] == inf


def test_hyp2f1_float32_grad_and_scan():
    """float32 within 2 ulps; the x-derivative (a b / c) F(a + 1, b + 1; c + 1; x); hyp2f1 in a
    scan body on the GPU as on the CPU."""
    rng = np.random.default_rng(9)
    a, b, c = rng.uniform(-5, 5, (3, 200)).astype(np.float32)
    x = rng.uniform(-3, 0.95, 200).astype(np.float32)
    got, want = _standin_gpu.both(hyp2f1, a, b, c, x)
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=2.5e-7, atol=1e-30)
    a64, b64, c64 = a.astype(np.float64), b.astype(np.float64), np.abs(c.astype(np.float64)) + 0.5
    x64 = x.astype(np.float64) / 2
    got, want = _standin_gpu.both(fjax.vmap(fjax.grad(hyp2f1, argnums=3)), a64, b64, c64, x64, x64=True)
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=0)

    def body(carry, xs):
        ai, bi = xs
        y = hyp2f1(ai, bi, carry + 2.0, -carry) + hyp1f1(ai, bi + 3.0, carry)
        return y * 0.25, y

    def run(x0, aa, bb):
        return fjax.lax.scan(body, x0, (aa, bb))

    got, want = _standin_gpu.both(run, np.float64(0.3), a64[:20] / 5, b64[:20] / 5, x64=True)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=0)


# ---------------------------------------------------------------------------------------------
# sph_harm_y


def _check_sph(n, m, theta, phi, rtol=1e-13, x64=True):
    got, want = _standin_gpu.both(sph_harm_y, n, m, theta, phi, x64=x64)
    assert got.shape == want.shape and got.dtype == want.dtype
    for part in (np.real, np.imag):
        g, w = part(got), part(want)
        _same_nonfinite(g, w)
        fin = np.isfinite(w)
        np.testing.assert_allclose(g[fin], w[fin], rtol=rtol, atol=rtol * np.max(np.abs(w[fin]), initial=0) + 1e-300)
    return got


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_sph_harm_y_drawn(seed):
    """n in [-2, 120], m in [-n - 3, n + 3] (|m| > n: 0), theta and phi over several turns."""
    rng = np.random.default_rng(seed)
    n = rng.integers(-2, 121, 300)
    m = np.round(rng.uniform(-1.1, 1.1, 300) * (np.abs(n) + 2)).astype(int)
    theta, phi = rng.uniform(-7, 7, (2, 300))
    got = _check_sph(n.astype(float), m.astype(float), theta, phi)
    assert (got[np.abs(m) > n] == 0).all()


def test_sph_harm_y_special_and_large():
    """NaN and infinite angles, the poles, n, m truncated toward zero, large n (to 645, where
    scipy's 32-bit recurrence coefficients still hold), |m| = n at small theta (underflow to 0);
    beyond, m = 0 against sqrt((2n + 1) / 4 pi) P_n(cos theta); float32; scalars broadcast."""
    cases = [
        (0, 0, nan, 0.3), (1, 0, nan, 0.3), (1, 2, nan, 0.3), (2, 0, 0.3, inf), (1, 2, 0.3, inf), (0, 0, inf, 0.3),
        (5, 3, 0.3, 1e20), (-1, 0, 0.7, 0.3), (3, 1, 0.0, 0.3), (3, 1, np.pi, 0.3), (3, -1, -0.7, 0.3),
        (645, 0, 0.3, 0.2), (645, 300, 1.3, 0.2), (160, 160, 0.01, 0.2), (2.7, 1.5, 0.3, 0.2), (-2.7, -1.5, 0.3, 0.2),
        (400, -399, 2.0, -1.0), (600, 17, 3.1, 5.0), (nan, 0, 0.3, 0.2), (2, nan, 0.3, 0.2), (inf, 0, 0.3, 0.2),
        (2, -inf, 0.3, 0.2), (3e9, 1, 0.3, 0.2), (5, 3e9, 0.3, 0.2), (5, -1e30, 0.3, 0.2),
    ]  # fmt: skip
    n, m, theta, phi = (np.array(v, np.float64) for v in zip(*cases))
    got = _check_sph(n, m, theta, phi)
    assert got[0] == 1 / (2 * np.sqrt(np.pi)) and got[7] == 0 and np.signbit(got[15].imag) == np.signbit(0.0)
    nn = np.array([700.0, 1000.0, 2000.0])
    with fjax.enable_x64():
        gpu = fjax.devices("gpu")[0]
        y = fjax.jit(sph_harm_y)(*(fjax.device_put(v, gpu) for v in (nn, nn * 0, nn * 0 + 0.7, nn * 0 + 0.1)))
    want = np.sqrt((2 * nn + 1) / (4 * np.pi)) * sc.eval_legendre(nn.astype(int), np.cos(0.7))
    # (to 1e-13 of the functions' amplitude: the last is near a zero of P_2000)
    np.testing.assert_allclose(np.asarray(y).real, want, rtol=1e-12, atol=1e-13 * np.abs(want).max())
    rng = np.random.default_rng(4)
    k = rng.integers(0, 30, 100).astype(np.float32)
    _check_sph(k, np.floor(k / 2), *rng.uniform(0, 3, (2, 100)).astype(np.float32), rtol=5e-7, x64=False)
    got, want = _standin_gpu.both(lambda t: sph_harm_y(3, -2, t, 0.4), np.linspace(0, 3, 7), x64=True)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-16)


# ---------------------------------------------------------------------------------------------


def test_scalar_operands_broadcast():
    """0-d operands beside arrays (as the primitives may be bound), read at index 0."""
    from fjax.scipy import _special_prims as P  # noqa: PLC0415

    x = np.linspace(-3, 3, 7)
    got, want = _standin_gpu.both(lambda b, x: P.hyp1f1_p.bind(np.float64(1.5), b, x), np.full(7, 2.5), x, x64=True)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)
    f = lambda c, x: P.hyp2f1_p.bind(np.float64(0.5), np.float64(1.0), c, x)  # noqa: E731
    got, want = _standin_gpu.both(f, np.float64(2.5), x / 4, x64=True)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)
    got, want = _standin_gpu.both(
        lambda t: P.sph_harm_y_p.bind(np.float64(3), np.float64(-2), t, np.float64(0.4)), x, x64=True
    )
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-16)


def test_low_floats_raise():
    x = np.ones(4, np.float16)
    with pytest.raises(NotImplementedError, match="hyp1f1 on float16"):
        _standin_gpu.both(hyp1f1, x, x, x)


@_nvcc.needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvcc_compiles_without_spills(arch, tmp_path):
    srcs = []
    for dt in (np.float32, np.float64):
        with fjax.enable_x64(dt == np.float64):
            z = np.zeros(8, dt)
            for f, k in ((hyp1f1, 3), (hyp2f1, 4), (sph_harm_y, 4)):
                srcs.append(fjax.jit(f).trace(*[z] * k).lower(lowering_platforms=("cuda",)).as_text())
    text = "\n".join(srcs)
    assert all(f"{fn}(" in text for fn in ("fj_hyp1f1", "fj_hyp2f1", "fj_sph_harm_y"))
    _nvcc.compile_without_spills(text, arch, tmp_path)
