"""fjax.scipy.stats against scipy.stats: every method of every family over its domain
(hypothesis, float32 and float64), gradients in the parameters (check_grads, float64), vmap, and
mode/rankdata/sem/gaussian_kde."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as ss
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fjax
import fjax.numpy as jnp
from fjax.scipy import stats as S
from fjax.test_util import check_grads

X = (-6, 6)
POS = (0.2, 5)
PROB = (0.02, 0.98)
LOC = (-2, 2)

# family: (scipy dist, methods, domains of (x, *params)); the scipy call is method(x, *params)
CONT = {
    "norm": (ss.norm, "logpdf pdf cdf logcdf sf logsf", [X, LOC, POS]),
    "norm-q": (ss.norm, "ppf isf", [PROB, LOC, POS]),
    "uniform": (ss.uniform, "logpdf pdf cdf", [X, LOC, POS]),
    "uniform-q": (ss.uniform, "ppf", [PROB, LOC, POS]),
    "expon": (ss.expon, "logpdf pdf cdf logcdf sf logsf", [X, LOC, POS]),
    "expon-q": (ss.expon, "ppf", [PROB, LOC, POS]),
    "laplace": (ss.laplace, "logpdf pdf cdf", [X, LOC, POS]),
    "logistic": (ss.logistic, "logpdf pdf cdf sf", [X, LOC, POS]),
    "logistic-q": (ss.logistic, "ppf isf", [PROB, LOC, POS]),
    "cauchy": (ss.cauchy, "logpdf pdf cdf logcdf sf logsf", [X, LOC, POS]),
    "cauchy-q": (ss.cauchy, "ppf isf", [PROB, LOC, POS]),
    "gumbel_r": (ss.gumbel_r, "logpdf pdf cdf logcdf sf logsf", [X, LOC, POS]),
    "gumbel_r-q": (ss.gumbel_r, "ppf", [PROB, LOC, POS]),
    "gumbel_l": (ss.gumbel_l, "logpdf pdf cdf logcdf sf logsf", [X, LOC, POS]),
    "gumbel_l-q": (ss.gumbel_l, "ppf", [PROB, LOC, POS]),
    "gamma": (ss.gamma, "logpdf pdf cdf logcdf sf logsf", [(0, 12), (0.3, 6), (-1, 1), POS]),
    "chi2": (ss.chi2, "logpdf pdf cdf logcdf sf logsf", [(0, 12), (0.5, 8), (-1, 1), POS]),
    "beta": (ss.beta, "logpdf pdf cdf logcdf sf logsf", [(0.01, 0.99), (0.5, 5), (0.5, 5)]),
    "t": (ss.t, "logpdf pdf", [X, (0.5, 30), LOC, POS]),
    "pareto": (ss.pareto, "logpdf pdf cdf logcdf sf logsf", [(0.5, 10), (0.5, 5), (-0.5, 0.5), POS]),
    "pareto-q": (ss.pareto, "ppf", [PROB, (0.5, 5), LOC, POS]),
    "vonmises": (ss.vonmises, "logpdf pdf", [(-3, 3), (0.1, 20)]),
    "wrapcauchy": (ss.wrapcauchy, "logpdf pdf", [(0.01, 6.2), (0.05, 0.95)]),
    "gennorm": (ss.gennorm, "logpdf pdf cdf", [X, (0.5, 4)]),
    "truncnorm": (ss.truncnorm, "logpdf pdf cdf logcdf sf logsf", [(-3, 3), (-2.5, -0.5), (0.5, 2.5)]),
}

DISC = {
    "bernoulli": (ss.bernoulli, "logpmf pmf", [(0, 1), PROB]),
    "bernoulli-cdf": (ss.bernoulli, "cdf", [(-1, 2), PROB]),
    "binom": (ss.binom, "logpmf pmf", [(0, 10), (10, 10), PROB]),
    "nbinom": (ss.nbinom, "logpmf pmf", [(0, 20), (0.5, 8), PROB]),
    "geom": (ss.geom, "logpmf pmf", [(1, 20), PROB]),
    "poisson": (ss.poisson, "logpmf pmf cdf", [(0, 30), (0.1, 20)]),
    "betabinom": (ss.betabinom, "logpmf pmf", [(0, 12), (12, 12), (0.3, 5), (0.3, 5)]),
}

CASES = [(fam, m, True) for fam, (_, ms, _) in CONT.items() for m in ms.split()]
CASES += [(fam, m, False) for fam, (_, ms, _) in DISC.items() for m in ms.split()]


def _bound(v, up, dtype):
    w = np.asarray(v, dtype)
    if (float(w) < v) if up else (float(w) > v):
        w = np.nextafter(w, np.asarray(np.inf if up else -np.inf, dtype))
    return float(w)


def _strategy(domains, dtype, integer_first):
    width = np.dtype(dtype).itemsize * 8

    def elems(i, lo, hi):
        if i == 0 and integer_first or (lo == hi):
            return st.integers(int(lo), int(hi)).map(float)
        return st.floats(_bound(lo, True, dtype), _bound(hi, False, dtype), width=width, allow_subnormal=False)

    def build(shp):
        return st.tuples(*(hnp.arrays(dtype, shp, elements=elems(i, lo, hi)) for i, (lo, hi) in enumerate(domains)))

    return st.sampled_from([(), (4,)]).flatmap(build)


def _fam(name):
    return getattr(S, name.split("-")[0])


def _check(fam, method, continuous, dtype, args):
    dist, _, _ = (CONT if continuous else DISC)[fam]
    if fam == "uniform":
        # the support's edges rounded to float32 can land on either side of x
        x, loc, scale = (a.astype(np.float64) for a in args)
        assume(np.all(np.minimum(np.abs(x - loc), np.abs(x - loc - scale)) > 1e-5))
    out = np.asarray(getattr(_fam(fam), method)(*[jnp.asarray(a) for a in args]))
    assert out.dtype == dtype
    want = getattr(dist, method)(*[a.astype(np.float64) for a in args])
    if dtype == np.float32 and method in ("logcdf", "logsf"):
        # log of a float32 probability below float32's range is -inf (as in JAX); scipy works in float64
        assume(np.all(np.asarray(want) > -80))
    rtol, atol = (3e-4, 3e-5) if dtype == np.float32 else (1e-9, 1e-12)
    if fam == "t" and dtype == np.float64:
        rtol = 1e-8  # lgamma differences at large df
    np.testing.assert_allclose(out, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("fam,method,continuous", CASES, ids=[f"{f}.{m}" for f, m, _ in CASES])
def test_matches_scipy_float32(fam, method, continuous):
    domains = (CONT if continuous else DISC)[fam][2]

    @given(_strategy(domains, np.float32, not continuous))
    def run(args):
        _check(fam, method, continuous, np.float32, args)

    run()


@pytest.mark.parametrize("fam,method,continuous", CASES, ids=[f"{f}.{m}" for f, m, _ in CASES])
def test_matches_scipy_float64(fam, method, continuous, x64):
    domains = (CONT if continuous else DISC)[fam][2]

    @given(_strategy(domains, np.float64, not continuous))
    def run(args):
        _check(fam, method, continuous, np.float64, args)

    run()


def test_out_of_support_and_edges():
    assert S.expon.logpdf(-1.0) == -np.inf and S.expon.cdf(-1.0) == 0
    assert S.uniform.pdf(2.0) == 0 and np.isnan(S.uniform.ppf(1.5))
    assert S.gamma.logpdf(-0.5, 2.0) == -np.inf and S.gamma.cdf(-0.5, 2.0) == 0
    assert S.beta.logpdf(1.5, 2.0, 2.0) == -np.inf
    assert S.pareto.logpdf(0.5, 2.0) == -np.inf and S.pareto.cdf(0.5, 2.0) == 0
    assert S.poisson.logpmf(2.5, 3.0) == -np.inf and S.poisson.logpmf(-1.0, 3.0) == -np.inf
    assert S.binom.logpmf(11.0, 10.0, 0.3) == -np.inf
    assert S.geom.logpmf(0.0, 0.3) == -np.inf
    assert S.truncnorm.logpdf(3.0, -1.0, 1.0) == -np.inf
    np.testing.assert_allclose(S.norm.logcdf(-30.0), ss.norm.logcdf(-30.0), rtol=1e-6)
    np.testing.assert_allclose(S.truncnorm.logpdf(9.0, 8.0, 10.0), ss.truncnorm.logpdf(9.0, 8.0, 10.0), rtol=1e-5)
    assert S.norm.logpdf(jnp.zeros((0, 3))).shape == (0, 3)


def test_multivariate_families():
    alpha = np.array([1.0, 2.0, 3.5])
    x = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]).T
    np.testing.assert_allclose(S.dirichlet.logpdf(x, alpha), ss.dirichlet.logpdf(x, alpha), rtol=1e-5)
    np.testing.assert_allclose(S.dirichlet.pdf(x[:2], alpha), ss.dirichlet.pdf(x, alpha), rtol=1e-5)
    xm = np.array([[2.0, 3.0, 5.0], [0.0, 10.0, 0.0]])
    p = np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(S.multinomial.logpmf(xm, 10.0, p), ss.multinomial.logpmf(xm, 10, p), rtol=1e-5)
    assert S.multinomial.logpmf(jnp.array([1.0, 1.0, 1.0]), 4.0, p) == -np.inf
    np.testing.assert_allclose(
        S.multivariate_normal.logpdf(jnp.array([[0.1, 0.2], [1.0, -1.0]]), jnp.zeros(2), 2.0),
        ss.multivariate_normal.logpdf([[0.1, 0.2], [1.0, -1.0]], np.zeros(2), 2.0),
        rtol=1e-5,
    )
    np.testing.assert_allclose(S.multivariate_normal.logpdf(0.3, 0.1, 2.0), ss.norm.logpdf(0.3, 0.1, np.sqrt(2)))
    try:
        from fjax.numpy.linalg import cholesky  # noqa: F401
    except ImportError:
        with pytest.raises(NotImplementedError, match="cholesky"):
            S.multivariate_normal.logpdf(jnp.zeros(2), jnp.zeros(2), jnp.eye(2))
    else:
        cov = np.array([[2.0, 0.3], [0.3, 1.0]])
        pts = np.array([[0.1, 0.2], [1.0, -1.0]])
        np.testing.assert_allclose(
            S.multivariate_normal.logpdf(pts, np.zeros(2), cov), ss.multivariate_normal.logpdf(pts, np.zeros(2), cov)
        )


def test_poisson_entropy():
    mu = np.array([0.0, 0.3, 4.0, 60.0, 99.0, 150.0, 3000.0])
    np.testing.assert_allclose(S.poisson.entropy(jnp.asarray(mu)), ss.poisson.entropy(mu), rtol=2e-5, atol=1e-6)


# (function of parameters, arguments): float64 gradients through the densities and CDFs
GRADS = [
    (lambda loc, scale: S.norm.logpdf(0.7, loc, scale), (0.2, 1.3)),
    (lambda loc, scale: S.norm.logcdf(0.7, loc, scale), (0.2, 1.3)),
    (lambda a, scale: S.gamma.logpdf(1.7, a, 0.0, scale), (2.5, 1.3)),
    (lambda a: S.gamma.cdf(1.7, a), (2.5,), 1),  # igamma_grad_a has no derivative in a
    (lambda a, b: S.beta.logpdf(0.3, a, b), (2.5, 1.3)),
    (lambda x: S.beta.cdf(x, 2.0, 3.0), (0.4,)),
    (lambda df: S.t.logpdf(0.4, df), (3.5,)),
    (lambda df: S.chi2.logpdf(2.4, df), (3.5,)),
    (lambda b: S.pareto.logpdf(2.4, b), (1.5,)),
    (lambda k: S.vonmises.logpdf(0.4, k), (1.5,)),
    (lambda c: S.wrapcauchy.logpdf(0.4, c), (0.3,)),
    (lambda b: S.gennorm.logpdf(0.6, b), (1.5,)),
    (lambda a, b: S.truncnorm.logpdf(0.2, a, b), (-1.0, 1.5)),
    (lambda scale: S.cauchy.logpdf(0.2, 0.0, scale), (1.5,)),
    (lambda scale: S.logistic.logpdf(0.2, 0.0, scale), (1.5,)),
    (lambda scale: S.gumbel_r.logcdf(0.2, 0.0, scale), (1.5,)),
    (lambda scale: S.laplace.logpdf(0.2, 0.0, scale), (1.5,)),
    (lambda scale: S.expon.logpdf(0.2, 0.0, scale), (1.5,)),
    (lambda p: S.binom.logpmf(3.0, 10.0, p), (0.35,)),
    (lambda n, p: S.nbinom.logpmf(3.0, n, p), (2.5, 0.3)),
    (lambda p: S.geom.logpmf(3.0, p), (0.3,)),
    (lambda mu: S.poisson.logpmf(3.0, mu), (2.3,)),
    (lambda a, b: S.betabinom.logpmf(3.0, 10.0, a, b), (2.3, 1.4)),
    (lambda p: S.bernoulli.logpmf(1.0, p), (0.3,)),
    (lambda a: S.dirichlet.logpdf(jnp.array([0.2, 0.3, 0.5]), a), (jnp.array([1.5, 2.0, 3.0]),)),
]


@pytest.mark.parametrize("i", range(len(GRADS)))
def test_gradients(i, x64):
    fn, args, *order = GRADS[i]
    args = tuple(jnp.asarray(np.asarray(a, np.float64)) for a in args)
    check_grads(fn, args, order[0] if order else 2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-5)


def test_vmap_and_jit():
    x = jnp.linspace(-2, 2, 5)
    scales = jnp.array([0.5, 1.0, 2.0])
    batched = fjax.vmap(lambda s: S.norm.logpdf(x, 0.0, s))(scales)
    np.testing.assert_allclose(batched, ss.norm.logpdf(np.asarray(x)[None], 0, np.asarray(scales)[:, None]), rtol=1e-5)
    f = fjax.jit(lambda a: S.gamma.logpdf(x + 3, a))
    np.testing.assert_allclose(f(2.0), S.gamma.logpdf(x + 3, 2.0), rtol=1e-6)


def test_mode_rankdata_sem():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, (5, 7))
    for axis in (0, 1, None):
        m = S.mode(jnp.asarray(a), axis=axis)
        want = ss.mode(a, axis=axis)
        np.testing.assert_array_equal(m.mode, want.mode)
        np.testing.assert_array_equal(m.count, want.count)
    assert S.mode(jnp.asarray(a), axis=1, keepdims=True).mode.shape == (5, 1)
    v = rng.integers(0, 5, 12).astype(np.float32)
    for method in ("average", "min", "max", "dense", "ordinal"):
        np.testing.assert_array_equal(S.rankdata(jnp.asarray(v), method=method), ss.rankdata(v, method=method))
    np.testing.assert_array_equal(S.rankdata(jnp.asarray(a), axis=1), ss.rankdata(a, axis=1))
    with pytest.raises(ValueError, match="unknown method"):
        S.rankdata(jnp.asarray(v), method="bogus")
    b = rng.normal(size=(6, 3))
    np.testing.assert_allclose(S.sem(jnp.asarray(b)), ss.sem(b), rtol=1e-5)
    np.testing.assert_allclose(S.sem(jnp.asarray(b), axis=None, ddof=0), ss.sem(b, axis=None, ddof=0), rtol=1e-5)
    with pytest.raises(NotImplementedError, match="nan_policy"):
        S.sem(jnp.asarray(b), nan_policy="omit")


def test_gaussian_kde():
    rng = np.random.default_rng(1)
    data = rng.normal(size=50)
    w = rng.uniform(0.5, 1.5, 50)
    pts = np.linspace(-3, 3, 7)
    for bw in (None, "silverman", 0.4):
        kde = S.gaussian_kde(jnp.asarray(data), bw_method=bw, weights=jnp.asarray(w))
        ref = ss.gaussian_kde(data, bw_method=bw, weights=w)
        np.testing.assert_allclose(kde(jnp.asarray(pts)), ref(pts), rtol=1e-4)
        np.testing.assert_allclose(kde.logpdf(jnp.asarray(pts)), ref.logpdf(pts), rtol=1e-4)
        np.testing.assert_allclose(kde.integrate_box_1d(-1.0, 0.5), ref.integrate_box_1d(-1.0, 0.5), rtol=1e-4)
    s = S.gaussian_kde(jnp.asarray(data)).resample(fjax.random.PRNGKey(0), (1000,))
    assert s.shape == (1, 1000) and abs(float(s.mean()) - data.mean()) < 0.2
