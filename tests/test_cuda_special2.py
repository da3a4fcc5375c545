"""The CUDA kernels of ``fjax/backends/cuda/special_ops2.py`` (betainc, zeta, the exponential
integrals, spence, dawsn, fresnel, sici, betaln, gammasgn), run through ``device_put`` + ``jit`` on
the cupy stand-in (kernels compiled by g++ against ``cuda_emu.h``) against the CPU backend, whose
impls call scipy: edge values (signed zeros, poles, infinities, NaN, each algorithm's switch
points), hypothesis-drawn arrays, and gradients end to end.

Tolerances: the kernels run scipy's own algorithms (Cephes, Zhang & Jin) in double precision, so
float64 results agree to a few ulps (rtol 1e-13), except where scipy runs another algorithm:
``betainc`` (scipy: Boost's ``ibeta``; here Cephes' ``incbet``), which agree to 4e-11 for a, b in
[1e-3, 1e3] (rtol 1e-10), 1e-7 for a, b up to 1e7; ``dawsn`` (scipy: Faddeeva; Cephes' rational
form here; each documented to ~1e-15: rtol 1e-14); ``betaln`` above 171, where both sides compute
lgamma(a) + lgamma(b) - lgamma(a + b) and agree to the rounding of those terms. float32 results
are the float64 ones rounded once, as on the CPU: equal to within one float32 ulp.
"""

from __future__ import annotations

import math

import _standin_gpu  # noqa: E402  (tests/ is on the path)
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
import fjax.scipy.special as sps
import fjax.scipy.stats as stats
from fjax import lax
from fjax.backends.cuda import emulate
from fjax.scipy import _special_prims as P

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler for the CUDA emulator")

inf, nan = np.inf, np.nan
F32_ULP = 1.2e-7  # float32 rounding of equal float64 values can differ by one ulp at a tie


@pytest.fixture(scope="module", autouse=True)
def standin_gpu():
    with _standin_gpu.installed():
        yield


_both = _standin_gpu.both


def _close(got, want, rtol, atol=0.0):
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    signed = np.isinf(want) | (want == 0)  # signs of zeros and infinities
    np.testing.assert_array_equal(np.signbit(got[signed]), np.signbit(want[signed]))


# ---------------------------------------------------------------------------------------------
# unary functions

# switch points: Ei's series/asymptotic at 40, E1's at 1, dawsn's 3.25 / 6.25 / 1e9, fresnel's
# x^2 = 2.5625 and 36974, sici's 4 / 8, spence's 0.5 / 1.5 / 2, Ei's zero at 0.3725
X1 = [0.0, -0.0, 1e-300, 1e-8, 0.3725074107813666, 0.5, 1.0, 1.0000001, 1.5, 1.6, 2.0, 2.5, 3.2499, 3.25, 4.0,
      4.0001, 6.25, 7.9999, 8.0, 10.0, 39.99, 40.0, 40.01, 100.0, 700.0, 709.7, 710.0, 1e5, 36974.0, 36975.0,
      2e9, inf, -inf, nan, -0.5, -1.0, -2.0, -2.5, -3.0, -40.5, -171.5, -800.0]  # fmt: skip
UNARY = {
    "gammasgn": P.gammasgn_p.bind,
    "expi": sps.expi,
    "exp1": sps.exp1,
    "spence": sps.spence,
    "dawsn": sps.dawsn,
    "fresnel_s": lambda x: sps.fresnel(x)[0],
    "fresnel_c": lambda x: sps.fresnel(x)[1],
    "sici_si": lambda x: sps.sici(x)[0],
    "sici_ci": lambda x: sps.sici(x)[1],
}


def _unary(x):
    return {k: f(x) for k, f in UNARY.items()}


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_unary_functions_match_the_cpu(dt):
    x = np.array(X1 + list(np.linspace(-45, 45, 91)) + list(np.geomspace(1e-3, 1e3, 40)), dt)
    got, want = _both(_unary, x, x64=dt == np.float64)
    for k in UNARY:
        rtol = F32_ULP if dt == np.float32 else (1e-14 if k == "dawsn" else 1e-13)
        _close(got[k], want[k], rtol=rtol, atol=1e-300)


@given(st.lists(st.floats(-60, 60, width=32), min_size=24, max_size=24))
def test_unary_functions_on_drawn_values(vals):
    x = np.array(vals, np.float32)
    got, want = _both(_unary, x)
    for k in UNARY:
        _close(got[k], want[k], rtol=F32_ULP, atol=1e-45)


# ---------------------------------------------------------------------------------------------
# betainc

PARAMS = [0.0, 1e-300, 1e-3, 0.1, 0.5, 1.0, 1.5, 2.0, 3.0, 7.5, 20.0, 60.0, 170.0, 171.0, 172.0, 200.0,
          1e3, inf, nan, -0.5]  # fmt: skip
XB = [0.0, 1e-300, 1e-10, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 0.96, 0.999, 1 - 1e-12, 1.0, -0.1, 1.1, nan]


def _grid(*axes):
    return [v.ravel() for v in np.meshgrid(*[np.array(a) for a in axes], indexing="ij")]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_betainc_matches_the_cpu(dt):
    a, b, x = (v.astype(dt) for v in _grid(PARAMS, PARAMS, XB))
    got, want = _both(lax.betainc, a, b, x, x64=dt == np.float64)
    _close(got, want, rtol=F32_ULP if dt == np.float32 else 1e-10, atol=1e-250)


@given(
    st.lists(st.floats(0, 50, width=32), min_size=12, max_size=12),
    st.lists(st.floats(0, 50, width=32), min_size=12, max_size=12),
    st.lists(st.floats(0, 1, width=32), min_size=12, max_size=12),
)
def test_drawn_betainc_zeta_owens_t(a, b, x):
    a, b, x = (np.array(v, np.float32) for v in (a, b, x))
    got, want = _both(lambda a, b, x: (lax.betainc(a, b, x), lax.zeta(a + 1.0, b), sps.owens_t(a - 25.0, x)), a, b, x)
    for g, w in zip(got, want):
        _close(g, w, rtol=F32_ULP, atol=1e-45)


def test_betainc_large_parameters():
    # up to 1e7, where the continued fraction needs ~sqrt(a) steps (Cephes' cap of 300 gave 0.49 at
    # I_0.5(1e7, 1e7)); the prefactor's logarithms then round to ~1e-7 relative
    a, b, x = _grid([1e4, 1e5, 1e6, 1e7], [1e4, 1e5, 1e6, 1e7, 2.0], [0.1, 0.4999, 0.5, 0.5001, 0.9])
    got, want = _both(lax.betainc, a, b, x, x64=True)
    _close(got, want, rtol=2e-7, atol=1e-250)


def test_beta_distribution_cdf_on_the_gpu():
    x = np.linspace(-0.1, 1.1, 25, dtype=np.float32)
    got, want = _both(lambda x: (stats.beta.cdf(x, 2.5, 0.7), stats.beta.sf(x, 0.3, 4.0)), x)
    for g, w in zip(got, want):
        _close(g, w, rtol=F32_ULP)


# ---------------------------------------------------------------------------------------------
# zeta, expn, betaln


def test_zeta_matches_the_cpu():
    zx = [1.0, 1.0000001, 1.5, 2.0, 2.5, 3.0, 4.0, 10.0, 30.0, 60.0, 100.0, inf, nan, 0.5, -1.0, -inf]
    zq = [1e-300, 1e-3, 0.5, 1.0, 1.5, 2.0, 9.0, 10.0, 1e3, 1e8, 1.1e8, 1e9, inf, nan, 0.0, -0.0, -1.0, -1.5,
          -2.5, -7.3, -inf]  # fmt: skip
    x, q = _grid(zx, zq)
    got, want = _both(lax.zeta, x, q, x64=True)
    _close(got, want, rtol=1e-13)
    got, want = _both(lax.zeta, x.astype(np.float32), q.astype(np.float32))
    _close(got, want, rtol=F32_ULP)


def test_expn_matches_the_cpu():
    # n is a float operand truncated to an int as scipy's float loop does (NaN outside int32);
    # n > 50 takes the large-n expansion, x > 1 the continued fraction
    en = [0.0, 1.0, 2.0, 3.0, 5.0, 10.0, 50.0, 51.0, 60.0, 100.0, 1e3, 1e5, 1.5, -0.5, -1.0, nan, inf,
          2**31 - 1.0, 2.0**31]  # fmt: skip
    ex = [0.0, -0.0, 1e-300, 1e-5, 0.5, 1.0, 1.0001, 2.0, 10.0, 50.0, 700.0, 709.0, 710.0, inf, nan, -1.0]
    n, x = _grid(en, ex)
    got, want = _both(P.expn_p.bind, n, x, x64=True)
    _close(got, want, rtol=1e-13)


def test_betaln_matches_the_cpu():
    av = [0.0, -0.0, 1e-300, 0.1, 0.5, 1.0, 2.5, 30.0, 171.0, 172.0, 200.0, 1e4, 1e7, inf, nan, -1.0, -2.0, -1.5,
          -3.5, -200.5]  # fmt: skip
    a, b = _grid(av, av)
    got, want = _both(P.betaln_p.bind, a, b, x64=True)
    # above 171 both sides compute lgamma(a) + (lgamma(b) - lgamma(a + b)) (or the asymptotic form):
    # agreement to the rounding of those terms, 4 ulps of the largest
    with np.errstate(all="ignore"):
        lg = [np.abs(np.vectorize(math.lgamma)(np.where(np.isfinite(v) & (v > 0), v, 1.0))) for v in (a, b, a + b)]
    atol = 8.9e-16 * (lg[0] + lg[1] + lg[2])
    big = np.maximum(np.abs(a), np.abs(b)) > 171
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    fin = np.isfinite(want)
    np.testing.assert_array_equal(got[~fin], want[~fin])
    np.testing.assert_allclose(got[~big], want[~big], rtol=1e-13, atol=1e-15)
    g, w, t = got[big & fin], want[big & fin], atol[big & fin]
    assert np.all(np.abs(g - w) <= t + 1e-13 * np.abs(w))


def test_gamma_and_beta_on_the_gpu():
    # jax.scipy.special.gamma / beta are gammasgn and betaln times exp(lgamma)
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.0, 3.5, 10.0, -3.0, 0.0, -0.0], np.float32)
    got, want = _both(lambda x: (sps.gamma(x), sps.beta(x, 1.5), sps.beta(2.0, x)), x)
    for g, w in zip(got, want):
        _close(g, w, rtol=F32_ULP * 4)


# ---------------------------------------------------------------------------------------------
# gradients: their JVPs use other primitives (lgamma, log1p, exp, zeta itself), all on the GPU


def test_gradients_run_on_the_gpu():
    def grads(x, a, q):
        return (
            fjax.grad(lambda x: jnp.sum(sps.betainc(a, a + 1.0, x)))(x),
            fjax.grad(lambda s, q: jnp.sum(sps.zeta(s, q)), argnums=(0, 1))(a + 1.5, q),
            fjax.grad(lambda x: jnp.sum(sps.expi(x) + sps.exp1(x) + sps.expn(3.0, x)))(a),
            fjax.grad(lambda x: jnp.sum(sps.spence(x) + sps.dawsn(x)))(a),
            fjax.grad(lambda x: jnp.sum(sum(sps.fresnel(x)) + sum(sps.sici(x))))(x),
            fjax.grad(lambda a, b: jnp.sum(sps.betaln(a, b) + sps.gamma(a)), argnums=(0, 1))(a, q),
            fjax.vmap(fjax.grad(lambda x: sps.betainc(2.0, 3.0, x)))(x),
        )

    x = np.linspace(0.05, 0.95, 12).astype(np.float32)
    a = np.linspace(0.2, 6.0, 12).astype(np.float32)
    q = np.linspace(0.5, 4.0, 12).astype(np.float32)
    got, want = _both(grads, x, a, q)
    for g, w in zip(fjax.tree_util.tree_leaves(got), fjax.tree_util.tree_leaves(want)):
        # the derivatives are compositions of float32 elementwise ops on both sides
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# bessel_jn (the jv primitive at integer orders)


def test_bessel_jv_matches_the_cpu():
    # integer orders of both signs (the only ones bessel_jn and its derivative bind); x on both
    # sides of the algorithms' switch points (the series below 1e-3, Miller's recurrence, Hankel's
    # expansion and the forward recurrence above 1000) and where (x/2)^n / n! underflows. J is
    # bounded by 1: both sides' errors are absolute, ~1e-14 (2.2e-14 the largest seen on 4000 random
    # points with |x| <= 5000)
    vv = [0.0, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 200.0, 1e3, -1.0, -2.0, -3.0, nan, 2.0**31]
    xv = [0.0, -0.0, 1e-300, 1e-10, 9.99e-4, 1e-3, 0.1, 1.0, 2.404825557695773, 5.0, 19.9, 25.0, 99.0, 300.0,
          999.0, 1000.0, 1001.0, 3000.0, 1e300, inf, -inf, nan, -1.0, -5.0, -1001.0]  # fmt: skip
    v, x = _grid(vv, xv)
    rng = np.random.default_rng(0)
    v = np.concatenate([v, rng.integers(-40, 40, 300).astype(float)])
    x = np.concatenate([x, rng.uniform(-60, 60, 200), rng.uniform(-3000, 3000, 100)])
    got, want = _both(P.jv_p.bind, v, x, x64=True)
    _close(got, want, rtol=1e-13, atol=5e-14)
    x32 = np.where(np.abs(x) > 1e38, np.copysign(inf, x), x).astype(np.float32)
    got, want = _both(P.jv_p.bind, v.astype(np.float32), x32)
    _close(got, want, rtol=F32_ULP, atol=1e-37)


def test_bessel_jv_at_large_arguments_against_mpmath():
    # mpmath.besselj at 40 digits (mpmath 1.3): here scipy (AMOS) is off by up to 2e-10 relative,
    # this kernel agrees to 7e-15
    v = np.array([1000.0, 200.0, 50.0])
    x = np.array([1e5, 1e4, 1001.0])
    ref = np.array([0.0012831781125024803652, -0.00036340052342683507369, 0.019225909669639733615])
    gpu = fjax.devices("gpu")[0]
    with fjax.enable_x64():
        got = np.asarray(fjax.jit(P.jv_p.bind)(fjax.device_put(v, gpu), fjax.device_put(x, gpu)))
    np.testing.assert_allclose(got, ref, rtol=1e-14)


def test_bessel_jn_and_its_gradient_on_the_gpu():
    z = np.linspace(-12.0, 12.0, 17).astype(np.float32)
    got, want = _both(lambda z: (sps.bessel_jn(z, v=4), fjax.grad(lambda z: jnp.sum(sps.bessel_jn(z, v=2)))(z)), z)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# owens_t


def test_owens_t_matches_the_cpu():
    # every cell of Patefield & Tandy's method table (h and a on both sides of each range end), the
    # |a| > 1 remap on both sides of a h = 0.67, symmetries, infinities, NaN. The methods aim at
    # absolute accuracy (T <= 1/4): atol 1e-16 besides rtol 1e-13 (erfc here, Cephes' ndtr there)
    hv = [0.0, -0.0, 1e-300, 0.01, 0.02, 0.05, 0.06, 0.09, 0.1, 0.125, 0.2, 0.26, 0.4, 0.5, 0.6, 1.0, 1.6, 1.65,
          2.0, 2.33, 2.4, 3.0, 3.36, 3.4, 4.0, 4.8, 5.0, 8.0, 40.0, inf, -inf, nan, -1.0, -3.0]  # fmt: skip
    av = [0.0, -0.0, 1e-300, 0.01, 0.025, 0.05, 0.09, 0.1, 0.15, 0.3, 0.36, 0.5, 0.7, 0.9, 0.95, 0.99999, 1.0,
          1.00001, 1.5, 3.0, 10.0, 1e3, 1e10, inf, -inf, nan, -0.5, -2.0]  # fmt: skip
    h, a = _grid(hv, av)
    rng = np.random.default_rng(1)
    h = np.concatenate([h, rng.uniform(-6, 6, 300)])
    a = np.concatenate([a, rng.uniform(-3, 3, 300)])
    got, want = _both(P.owens_t_p.bind, h, a, x64=True)
    _close(got, want, rtol=1e-13, atol=1e-16)
    got, want = _both(P.owens_t_p.bind, h.astype(np.float32), a.astype(np.float32))
    _close(got, want, rtol=F32_ULP, atol=1e-45)


def test_owens_t_gradient_on_the_gpu():
    h = np.linspace(-3.0, 3.0, 13).astype(np.float32)
    a = np.linspace(-2.0, 2.0, 13).astype(np.float32)
    got, want = _both(fjax.grad(lambda h, a: jnp.sum(sps.owens_t(h, a)), argnums=(0, 1)), h, a)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-7)


@pytest.mark.parametrize("d", [np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16)], ids=["bfloat16", "float16"])
def test_half_precision_operands(d):
    # computed in double precision and rounded once to the 16-bit format, as on the CPU (one ulp
    # of slack: the rounding may go through float32)
    x = np.linspace(-5.0, 5.0, 101).astype(d)
    p = np.linspace(0.01, 0.99, 101).astype(d)
    got, want = _both(lambda x, p: (sps.expi(x), lax.betainc(p * 3, p + 1, p), sps.owens_t(x, p), sps.dawsn(x)), x, p)
    ulp = 2.0**-8 if d == np.dtype(ml_dtypes.bfloat16) else 2.0**-11
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == d
        np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=ulp, atol=1e-6, equal_nan=True)
