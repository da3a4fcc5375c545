"""fjax.scipy.special and the lax special primitives (fjax/lax/special.py) against scipy:
hypothesis over each function's domain in float32 and float64 (edges: 0, inf, nan, zero-size),
gradients with check_grads (order 2 where smooth, float64), vmap and jit against eager."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sc
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.scipy import special as S
from fjax.test_util import check_grads

# name: (fjax fn, scipy fn, per-argument (lo, hi) domain, float32 rtol, float64 rtol)
RECORDS = {
    "gammaln": (S.gammaln, sc.gammaln, [(0.01, 50)], 1e-5, 1e-12),
    "digamma": (S.digamma, sc.digamma, [(0.05, 50)], 2e-5, 5e-11),
    "gamma": (S.gamma, sc.gamma, [(0.05, 20)], 3e-5, 1e-12),
    "loggamma": (S.loggamma, sc.loggamma, [(0.01, 50)], 1e-5, 1e-12),
    "gammasgn": (S.gammasgn, sc.gammasgn, [(-5, 5)], 0, 0),
    "polygamma": (lambda x: S.polygamma(2, x), lambda x: sc.polygamma(2, x), [(0.1, 30)], 1e-4, 1e-10),
    "gammainc": (S.gammainc, sc.gammainc, [(0.05, 30), (0, 40)], 2e-5, 1e-12),
    "gammaincc": (S.gammaincc, sc.gammaincc, [(0.05, 30), (0, 40)], 2e-5, 1e-12),
    "betaln": (S.betaln, sc.betaln, [(0.05, 100), (0.05, 100)], 1e-5, 1e-12),
    "beta": (S.beta, sc.beta, [(0.1, 10), (0.1, 10)], 2e-5, 1e-12),
    "betainc": (S.betainc, sc.betainc, [(0.1, 10), (0.1, 10), (0, 1)], 2e-5, 1e-12),
    "erf": (S.erf, sc.erf, [(-5, 5)], 1e-6, 1e-14),
    "erfc": (S.erfc, sc.erfc, [(-5, 9)], 1e-5, 1e-13),
    "erfinv": (S.erfinv, sc.erfinv, [(-0.999, 0.999)], 2e-6, 1e-13),
    "erfcx": (S.erfcx, sc.erfcx, [(-5, 50)], 1e-6, 1e-14),
    "dawsn": (S.dawsn, sc.dawsn, [(-20, 20)], 1e-6, 1e-14),
    "ndtr": (S.ndtr, sc.ndtr, [(-8, 8)], 1e-5, 1e-13),
    "ndtri": (S.ndtri, sc.ndtri, [(1e-6, 1 - 1e-6)], 1e-5, 1e-12),
    "log_ndtr": (S.log_ndtr, sc.log_ndtr, [(-30, 8)], 1e-5, 1e-13),
    "logit": (S.logit, sc.logit, [(0.001, 0.999)], 1e-5, 1e-12),
    "expit": (S.expit, sc.expit, [(-30, 30)], 1e-6, 1e-14),
    "entr": (S.entr, sc.entr, [(0, 20)], 1e-6, 1e-14),
    "xlogy": (S.xlogy, sc.xlogy, [(-5, 5), (0.01, 10)], 1e-5, 1e-13),
    "xlog1py": (S.xlog1py, sc.xlog1py, [(-5, 5), (-0.99, 10)], 1e-5, 1e-13),
    "kl_div": (S.kl_div, sc.kl_div, [(0, 5), (0.01, 5)], 1e-5, 1e-12),
    "rel_entr": (S.rel_entr, sc.rel_entr, [(0, 5), (0.01, 5)], 1e-5, 1e-12),
    "i0": (S.i0, sc.i0, [(-20, 20)], 1e-5, 1e-13),
    "i0e": (S.i0e, sc.i0e, [(-50, 50)], 1e-6, 1e-14),
    "i1": (S.i1, sc.i1, [(-20, 20)], 1e-5, 1e-13),
    "i1e": (S.i1e, sc.i1e, [(-50, 50)], 1e-6, 1e-14),
    "zeta": (S.zeta, sc.zeta, [(1.1, 20), (0.1, 10)], 1e-6, 1e-14),
    "exp1": (S.exp1, sc.exp1, [(0.01, 50)], 1e-6, 1e-14),
    "expi": (S.expi, sc.expi, [(-20, 20)], 1e-5, 1e-13),
    "expn": (lambda x: S.expn(3, x), lambda x: sc.expn(3, x), [(0.01, 30)], 1e-6, 1e-14),
    "spence": (S.spence, sc.spence, [(0, 10)], 1e-6, 1e-14),
    "hyp1f1": (lambda x: S.hyp1f1(0.5, 1.5, x), lambda x: sc.hyp1f1(0.5, 1.5, x), [(-10, 10)], 1e-5, 1e-12),
    "hyp2f1": (lambda x: S.hyp2f1(0.5, 1.0, 1.5, x), lambda x: sc.hyp2f1(0.5, 1.0, 1.5, x), [(-1, 0.9)], 1e-5, 1e-12),
    "owens_t": (S.owens_t, sc.owens_t, [(-5, 5), (-5, 5)], 1e-5, 1e-12),
    "boxcox": (S.boxcox, sc.boxcox, [(0.01, 10), (-2, 2)], 2e-5, 1e-11),
    "boxcox1p": (S.boxcox1p, sc.boxcox1p, [(-0.9, 10), (-2, 2)], 2e-5, 1e-11),
    "poch": (S.poch, sc.poch, [(0.1, 5), (0, 4)], 3e-5, 1e-12),
    "factorial": (S.factorial, lambda n: sc.factorial(n, exact=False), [(0, 20)], 3e-5, 1e-12),
    "comb": (S.comb, lambda n, k: sc.comb(n, k, exact=False), [(0, 30), (0, 30)], 3e-5, 1e-11),
    "fresnel_s": (lambda x: S.fresnel(x)[0], lambda x: sc.fresnel(x)[0], [(-5, 5)], 1e-5, 1e-13),
    "fresnel_c": (lambda x: S.fresnel(x)[1], lambda x: sc.fresnel(x)[1], [(-5, 5)], 1e-5, 1e-13),
    "sici_si": (lambda x: S.sici(x)[0], lambda x: sc.sici(x)[0], [(-20, 20)], 1e-5, 1e-13),
    "sici_ci": (lambda x: S.sici(x)[1], lambda x: sc.sici(x)[1], [(0.01, 20)], 1e-5, 1e-12),
    "multigammaln": (lambda a: S.multigammaln(a, 3), lambda a: sc.multigammaln(a, 3), [(1.1, 20)], 1e-5, 1e-12),
}


def _arrays(domains, dtype):
    shape = st.sampled_from([(), (3,), (2, 3)])

    def bound(v, up):
        # the nearest value of ``dtype`` inside the domain (hypothesis wants representable bounds)
        w = np.asarray(v, dtype)
        if (float(w) < v) if up else (float(w) > v):
            w = np.nextafter(w, np.asarray(np.inf if up else -np.inf, dtype))
        return float(w)

    def build(shp):
        width = np.dtype(dtype).itemsize * 8
        return st.tuples(
            *(
                hnp.arrays(
                    dtype,
                    shp,
                    elements=st.floats(bound(lo, True), bound(hi, False), width=width, allow_subnormal=False),
                )
                for lo, hi in domains
            )
        )

    return shape.flatmap(build)


# absolute error floors where a function crosses zero (fjax's float64 digamma is the existing lax
# rule: recurrence plus asymptotic series, ~4e-12 absolute near its root at 1.4616)
ATOL64 = {"digamma": 1e-11}


def _compare(name, dtype, args):
    fn, ref, _, rtol32, rtol64 = RECORDS[name]
    out = np.asarray(fn(*[jnp.asarray(a) for a in args]))
    assert out.dtype == dtype, (name, out.dtype)
    want = np.asarray(ref(*[a.astype(np.float64) for a in args]))
    rtol = rtol32 if dtype == np.float32 else rtol64
    # the float32 inputs are exact in float64, so the error is that of fjax's float32 evaluation
    atol = {np.float32: 1e-6, np.float64: 1e-14}[dtype] * max(
        1.0, float(np.max(np.abs(want[np.isfinite(want)]), initial=0))
    )
    if dtype == np.float64:
        atol = max(atol, ATOL64.get(name, 0.0))
    np.testing.assert_allclose(out, want.astype(dtype), rtol=rtol, atol=atol if name not in ("gammasgn",) else 0)


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_matches_scipy_float32(name):
    @given(_arrays(RECORDS[name][2], np.float32))
    def run(args):
        _compare(name, np.float32, args)

    run()


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_matches_scipy_float64(name, x64):
    @given(_arrays(RECORDS[name][2], np.float64))
    def run(args):
        _compare(name, np.float64, args)

    run()


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_vmap_and_zero_size(name):
    fn, ref, domains, _, _ = RECORDS[name]
    rng = np.random.default_rng(0)
    args = [rng.uniform(lo, hi, (4, 3)).astype(np.float32) for lo, hi in domains]
    eager = np.asarray(fn(*[jnp.asarray(a) for a in args]))
    np.testing.assert_array_equal(np.asarray(fjax.vmap(fn)(*args)), eager)
    empty = fn(*[jnp.zeros((0, 2), np.float32) + lo for lo, _ in domains])
    assert empty.shape == (0, 2)


JIT_NAMES = ["gammainc", "betainc", "log_ndtr", "xlogy", "i1", "zeta", "digamma"]
_JITTED = {n: fjax.jit(RECORDS[n][0]) for n in JIT_NAMES}


@pytest.mark.parametrize("name", JIT_NAMES)
def test_jit_matches_eager(name):
    fn, _, domains, _, _ = RECORDS[name]
    rng = np.random.default_rng(1)
    args = [jnp.asarray(rng.uniform(lo, hi, (5,)).astype(np.float32)) for lo, hi in domains]
    np.testing.assert_allclose(np.asarray(_JITTED[name](*args)), np.asarray(fn(*args)), rtol=1e-6)


def test_edges():
    nan, inf = np.nan, np.inf
    assert np.isnan(S.gammaln(nan))
    assert S.gammaln(0.0) == inf
    assert np.isnan(S.loggamma(-1.5))
    assert S.entr(0.0) == 0 and S.entr(-1.0) == -inf
    assert S.xlogy(0.0, 0.0) == 0 and S.xlog1py(0.0, -1.0) == 0
    assert S.kl_div(0.0, 2.0) == 2.0 and S.kl_div(1.0, 0.0) == inf and S.rel_entr(0.0, 1.0) == 0
    assert S.gammainc(2.0, inf) == 1 and S.gammaincc(2.0, 0.0) == 1
    assert np.isnan(S.gammainc(-1.0, 1.0))
    assert S.ndtri(0.0) == -inf and S.ndtri(1.0) == inf
    assert S.log_ndtr(-inf) == -inf and S.log_ndtr(inf) == 0
    assert S.erfinv(1.0) == inf
    assert S.i0e(inf) == 0
    assert S.factorial(-1.0) == 0 and S.comb(3.0, 5.0) == 0
    out, sign = S.logsumexp(jnp.array([1.0, 1.0]), b=jnp.array([1.0, -1.0]), return_sign=True)
    assert out == -inf and sign == 0
    assert np.isnan(S.logsumexp(jnp.array([1.0, 2.0]), b=jnp.array([1.0, -1.0])))
    assert S.logsumexp(jnp.array([-inf, -inf])) == -inf
    np.testing.assert_allclose(S.logsumexp(jnp.array([1000.0, 1000.0])), 1000 + np.log(2), rtol=1e-6)
    np.testing.assert_allclose(
        S.logsumexp(jnp.array([[1.0, 2.0], [3.0, 4.0]]), axis=1, where=jnp.array([[True, False], [True, True]])),
        [1.0, np.logaddexp(3, 4)],
        rtol=1e-6,
    )
    np.testing.assert_allclose(S.bernoulli(10), sc.bernoulli(10), rtol=1e-6)
    np.testing.assert_allclose(
        S.bessel_jn(jnp.array([0.5, 3.0]), v=3), [sc.jv(k, [0.5, 3.0]) for k in range(4)], rtol=1e-5, atol=1e-7
    )
    np.testing.assert_allclose(S.wofz(jnp.array([1 + 1j, -0.5 + 2j])), sc.wofz([1 + 1j, -0.5 + 2j]), rtol=1e-6)
    np.testing.assert_allclose(
        S.sph_harm_y(jnp.array([2, 3]), jnp.array([1, -2]), 0.3, 0.4),
        sc.sph_harm_y([2, 3], [1, -2], 0.3, 0.4),
        rtol=1e-5,
    )
    np.testing.assert_allclose(S.softmax(jnp.array([[1.0, 2.0], [3.0, 4.0]])).sum(), 1.0, rtol=1e-6)
    np.testing.assert_allclose(
        S.log_softmax(jnp.array([1.0, 2.0, 3.0]), axis=0), sc.log_softmax([1.0, 2.0, 3.0]), rtol=1e-6
    )


def test_errors():
    with pytest.raises(NotImplementedError, match="Riemann zeta"):
        S.zeta(2.0)
    with pytest.raises(NotImplementedError, match="exact=True"):
        S.factorial(3.0, exact=True)
    with pytest.raises(ValueError, match="non-negative"):
        S.bernoulli(-1)
    with pytest.raises(TypeError, match="not supported"):
        S.ndtr(jnp.array([1, 2]))
    with pytest.raises(ValueError, match="Betainc gradient"):
        fjax.grad(S.betainc)(1.0, 2.0, 0.5)
    with pytest.raises(NotImplementedError, match="igamma_grad_a"):
        fjax.grad(fjax.grad(S.gammainc))(2.0, 1.5)
    with pytest.raises(TypeError):
        lax.igamma(jnp.ones(2), jnp.ones(3))


def test_zeta_derivative_in_x(x64):
    # JAX's jax.scipy.special.zeta differentiates in x (by a series); central differences of scipy's
    x = np.array([1.1, 1.6, 2.0, 3.5, 11.5, 6.0])
    q = np.array([0.1, 0.1, 0.5, 2.0, 10.0, 0.7])
    want = (sc.zeta(x + 1e-6, q) - sc.zeta(x - 1e-6, q)) / 2e-6
    np.testing.assert_allclose(fjax.vmap(fjax.grad(S.zeta))(x, q), want, rtol=1e-7, atol=1e-15)


# (function, arguments, order): float64 finite differences at points away from edges
GRADS = [
    (S.gammaln, (2.3,), 2),
    (S.digamma, (1.7,), 2),
    (S.gamma, (2.6,), 2),
    (lambda x: S.gammainc(2.5, x), (1.7,), 2),
    (lambda a: S.gammainc(a, 1.7), (2.5,), 1),
    (lambda a: S.gammaincc(a, 3.1), (0.7,), 1),
    (lambda x: lax.igamma_grad_a(1.3, x), (2.2,), 2),
    (S.betaln, (1.3, 2.7), 2),
    (S.beta, (1.3, 2.7), 2),
    (lambda x: S.betainc(1.5, 2.5, x), (0.3,), 2),
    (S.erf, (0.4,), 2),
    (S.erfc, (0.4,), 2),
    (S.erfinv, (0.3,), 2),
    (S.erfcx, (0.8,), 2),
    (S.dawsn, (0.8,), 2),
    (S.ndtr, (0.7,), 2),
    (S.ndtri, (0.3,), 2),
    (S.log_ndtr, (-3.0,), 2),
    (S.logit, (0.3,), 2),
    (S.expit, (0.3,), 2),
    (S.entr, (0.6,), 2),
    (S.xlogy, (0.7, 1.9), 2),
    (S.xlog1py, (0.7, 0.9), 2),
    (S.kl_div, (0.7, 1.9), 2),
    (S.rel_entr, (0.7, 1.9), 2),
    (S.i0, (1.2,), 2),
    (S.i0e, (1.2,), 2),
    (S.i1, (1.2,), 2),
    (S.i1e, (-1.2,), 2),
    (lambda q: S.zeta(3.0, q), (1.4,), 2),
    (S.exp1, (0.9,), 2),
    (S.expi, (0.9,), 2),
    (lambda x: S.expn(2, x), (0.9,), 2),
    (S.spence, (0.6,), 2),
    (lambda x: S.fresnel(x)[0] + S.fresnel(x)[1], (0.9,), 2),
    (lambda x: S.sici(x)[0] + S.sici(x)[1], (0.9,), 2),
    (lambda x: S.hyp1f1(0.5, 1.5, x), (0.7,), 2),
    (lambda x: S.hyp2f1(0.5, 1.0, 1.5, x), (0.3,), 2),
    (S.owens_t, (0.5, 1.5), 2),
    (lambda x: S.bessel_jn(x, v=2)[2], (1.3,), 2),
    (lambda x: S.logsumexp(x, b=jnp.array([1.0, 2.0, 0.5])), (jnp.array([0.1, -0.4, 1.2]),), 2),
    (lambda x: S.multigammaln(x, 2), (2.4,), 2),
    (lambda x: S.boxcox(x, 0.5), (1.7,), 2),
    (lambda x: S.poch(x, 2.5), (1.7,), 2),
    (lambda x: S.polygamma(1, x), (1.7,), 2),
]


@pytest.mark.parametrize("i", range(len(GRADS)))
def test_gradients(i, x64):
    fn, args, order = GRADS[i]
    args = tuple(jnp.asarray(np.asarray(a, np.float64)) for a in args)
    check_grads(fn, args, order, modes=("fwd", "rev"), atol=1e-6, rtol=1e-5)


def test_igamma_grad_a_accuracy(x64):
    # d/da P(a, x) against a 4th-order central difference of scipy's gammainc, both branches
    a = np.array([0.05, 0.5, 1.5, 4.0, 30.0, 200.0, 3.0, 0.8])
    x = np.array([0.02, 0.3, 2.5, 1.0, 45.0, 180.0, 9.0, 6.0])
    h = 1e-3 * a
    fd = -sc.gammainc(a + 2 * h, x) + 8 * sc.gammainc(a + h, x) - 8 * sc.gammainc(a - h, x) + sc.gammainc(a - 2 * h, x)
    fd = fd / (12 * h)
    np.testing.assert_allclose(np.asarray(lax.igamma_grad_a(jnp.asarray(a), jnp.asarray(x))), fd, rtol=1e-7, atol=1e-13)
