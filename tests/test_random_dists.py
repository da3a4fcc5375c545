"""fjax.random distributions (fjax/_random_dists.py): samples against JAX's recorded in
tests/data/random_dists.json (made by tests/data/make_random_dists.py), the compiled float32 gamma
kernel against the lax composite, gradients, jit/vmap/scan invariance, moments and errors."""

from __future__ import annotations

import json
import pathlib
import re

import numpy as np
import pytest
import scipy.stats as ss

import fjax
import fjax.numpy as jnp
from fjax import _random_dists as rd
from fjax import lax, random

DATA = json.loads((pathlib.Path(__file__).parent / "data" / "random_dists.json").read_text())
CASES = DATA["cases"]

# samplers whose float32 arithmetic fjax reproduces exactly (same bits as JAX on these cases);
# the others go through XLA's rsqrt estimate (gamma's c = 1/(3 sqrt(d))), exp, pow or a
# reduction order, and agree to a few ulps
EXACT = {
    "loggamma",
    "cauchy",
    "logistic",
    "lognormal",
    "weibull_min",
    "rayleigh",
    "wald",
    "triangular",
    "rademacher",
    "geometric",
    "poisson",
    "binomial",
    "multinomial",
}


def _dec(v):
    if isinstance(v, dict):
        return np.asarray(v["array"], v["dtype"])
    return tuple(v) if isinstance(v, list) else v


def _kwargs(case):
    kw = {k: _dec(v) for k, v in case["kwargs"].items()}
    if "dtype" in kw:
        kw["dtype"] = np.dtype(kw["dtype"])
    return kw


@pytest.mark.parametrize("case", CASES, ids=[f"{c['fn']}-{c['seed']}" for c in CASES])
def test_matches_recorded_jax(case):
    out = np.asarray(getattr(random, case["fn"])(random.PRNGKey(case["seed"]), **_kwargs(case)))
    ref = case["out"]
    want = np.asarray(ref["values"], ref["dtype"]).reshape(ref["shape"])
    assert str(out.dtype) == ref["dtype"] and list(out.shape) == ref["shape"]
    if case["fn"] in EXACT:
        np.testing.assert_array_equal(out, want)
    else:
        # a few ulps (float16: one ulp of its own)
        rtol = 2e-3 if out.dtype == np.float16 else 2e-6
        np.testing.assert_allclose(out, want, rtol=rtol, atol=0)


def test_gradients_match_recorded_jax():
    g = DATA["grads"]
    a = jnp.asarray(np.asarray(g["a"], np.float32))
    k = random.PRNGKey(g["seed"])
    fns = {
        "gamma": lambda a: random.gamma(k, a).sum(),
        "loggamma": lambda a: random.loggamma(k, a).sum(),
        "beta_a": lambda a: random.beta(k, a, 2.0).sum(),
        "dirichlet_0": lambda a: random.dirichlet(k, a)[0],
    }
    for name, fn in fns.items():
        np.testing.assert_allclose(fjax.grad(fn)(a), np.asarray(g[name], np.float32), rtol=2e-5, atol=1e-7)


def test_gamma_kernel_matches_composite():
    # the numba kernel (float32 impl of random_gamma_p) against the lax composite it replaces
    k = random.PRNGKey(7)
    a = np.array([1e-4, 0.01, 0.3, 0.999, 1.0, 2.5, 10.0, 100.0, 1e4] * 20, np.float32)
    for log_space in (False, True):
        kernel = np.asarray(rd.random_gamma_p.bind(k, jnp.asarray(a), log_space=log_space))
        composite = np.asarray(rd._gamma_compiled[log_space](k, a))
        np.testing.assert_array_equal(kernel, composite)


def test_poisson_kernel_matches_composite():
    # the numba kernel (impl of random_poisson_p) against the lax composite (both branches, edges)
    k = random.PRNGKey(9)
    lam = np.array([0.0, 0.3, 4.0, 9.99, 10.0, 37.5, 1000.0, np.nan, -1.0] * 8, np.float32)
    kernel = np.asarray(random.poisson(k, lam))
    with fjax.disable_jit():  # the composite op by op
        composite = np.asarray(rd._poisson(k, jnp.asarray(lam), lam.shape, np.dtype(np.int32)))
    np.testing.assert_array_equal(kernel, composite)


def test_binomial_kernel_matches_composite():
    # the float32 numba kernel (impl of random_binomial_p) against the lax composite: both branches
    # (inversion, BTRS), p above and below 1/2, zero/infinite/NaN/negative counts, NaN p
    k = random.PRNGKey(7)
    n = np.array([0, 1, 5, 20, 100, 1e6, np.inf, -np.inf, np.nan, -3, 7.5, 30], np.float32)
    p = np.array([0.3, 0.0, 1.0, 0.7, 0.4, 0.01, 0.3, 0.2, 0.9, 0.5, 0.6, np.nan], np.float32)
    for pp in (p, np.roll(p, 3)):
        kernel = np.asarray(random.binomial(k, n, pp))
        with fjax.disable_jit():
            composite = np.asarray(rd._binomial(k, jnp.asarray(n), jnp.asarray(pp), n.shape, np.dtype(np.float32)))
        np.testing.assert_array_equal(kernel, composite)


def test_gamma_float64_path_under_x64():
    fjax.config.update("jax_enable_x64", True)
    try:
        x = random.gamma(random.PRNGKey(0), jnp.array([0.5, 2.0, 30.0]), (200, 3))
        assert x.dtype == np.float64 and x.shape == (200, 3)
        assert np.all(np.asarray(x) > 0)
        np.testing.assert_allclose(np.asarray(x).mean(0), [0.5, 2.0, 30.0], rtol=0.25)
    finally:
        fjax.config.update("jax_enable_x64", False)


def test_gamma_reparameterization_gradient_is_d_mean_d_a():
    # E[x] = a, so d/da mean(samples) -> 1; also against finite differences of scipy's gammainc
    k = random.PRNGKey(3)
    g = fjax.grad(lambda a: random.gamma(k, a, (20000,)).mean())(2.0)
    assert abs(float(g) - 1.0) < 0.03
    a, x = np.float64(2.5), np.float64(1.7)
    h = 1e-6
    dpda = (ss.gamma.cdf(x, a + h) - ss.gamma.cdf(x, a - h)) / (2 * h)
    want = -dpda / ss.gamma.pdf(x, a)
    np.testing.assert_allclose(float(lax.random_gamma_grad(np.float32(a), np.float32(x))), want, rtol=1e-5)


DIST_FNS = {
    "gamma": lambda k: random.gamma(k, jnp.array([0.5, 3.0])),
    "loggamma": lambda k: random.loggamma(k, jnp.array([0.5, 3.0])),
    "beta": lambda k: random.beta(k, 2.0, 3.0, (2,)),
    "dirichlet": lambda k: random.dirichlet(k, jnp.array([1.0, 2.0, 3.0])),
    "poisson": lambda k: random.poisson(k, jnp.array([2.0, 30.0])),
    "binomial": lambda k: random.binomial(k, 10.0, 0.3, (2,)),
    "t": lambda k: random.t(k, 4.0, (2,)),
    "geometric": lambda k: random.geometric(k, 0.25, (2,)),
    "cauchy": lambda k: random.cauchy(k, (2,)),
}


@pytest.mark.parametrize("name", sorted(DIST_FNS))
def test_jit_vmap_scan_agree_with_eager(name):
    fn = DIST_FNS[name]
    keys = random.split(random.PRNGKey(11), 3)
    eager = np.stack([np.asarray(fn(k)) for k in keys])
    np.testing.assert_array_equal(np.asarray(fjax.jit(fn)(keys[0])), eager[0])
    np.testing.assert_array_equal(np.asarray(fjax.vmap(fn)(keys)), eager)
    _, scanned = lax.scan(lambda c, k: (c, fn(k)), 0.0, keys)
    np.testing.assert_array_equal(np.asarray(scanned), eager)


def test_vmap_over_gamma_parameters_is_stack_of_calls():
    k = random.PRNGKey(5)
    a = jnp.array([[0.5, 1.5], [3.0, 7.0]])
    batched = fjax.vmap(lambda aa: random.gamma(k, aa))(a)
    np.testing.assert_array_equal(np.asarray(batched), np.stack([np.asarray(random.gamma(k, r)) for r in a]))


N = 20000

MOMENTS = [
    # (sampler, scipy frozen distribution)
    (lambda k: random.gamma(k, 0.4, (N,)), ss.gamma(0.4)),
    (lambda k: jnp.exp(random.loggamma(k, 3.0, (N,))), ss.gamma(3.0)),
    (lambda k: random.beta(k, 0.7, 2.0, (N,)), ss.beta(0.7, 2.0)),
    (lambda k: random.t(k, 5.0, (N,)), ss.t(5.0)),
    (lambda k: random.chisquare(k, 3.0, (N,)), ss.chi2(3.0)),
    (lambda k: random.f(k, 4.0, 9.0, (N,)), ss.f(4.0, 9.0)),
    (lambda k: random.pareto(k, 3.0, (N,)), ss.pareto(3.0)),
    (lambda k: random.lognormal(k, 0.5, (N,)), ss.lognorm(0.5)),
    (lambda k: random.weibull_min(k, 2.0, 1.5, (N,)), ss.weibull_min(1.5, scale=2.0)),
    (lambda k: random.rayleigh(k, 2.0, (N,)), ss.rayleigh(scale=2.0)),
    (lambda k: random.wald(k, 1.5, (N,)), ss.invgauss(1.5)),
    (lambda k: random.triangular(k, 0.0, 0.3, 1.0, (N,)), ss.triang(0.3)),
    (lambda k: random.maxwell(k, (N,)), ss.maxwell()),
    (lambda k: random.logistic(k, (N,)), ss.logistic()),
    (lambda k: random.generalized_normal(k, 1.5, (N,)), ss.gennorm(1.5)),
]


@pytest.mark.parametrize("i", range(len(MOMENTS)))
def test_distribution_matches_scipy(i):
    sampler, dist = MOMENTS[i]
    x = np.asarray(sampler(random.PRNGKey(100 + i)), np.float64)
    assert ss.kstest(x, dist.cdf).pvalue > 1e-4


def test_discrete_distributions_match_scipy():
    k = random.PRNGKey(1)
    for lam in (0.7, 4.0, 25.0, 300.0):
        x = np.asarray(random.poisson(k, lam, (N,)))
        assert x.dtype == np.int32 and abs(x.mean() - lam) < 5 * np.sqrt(lam / N)
    for n, p in ((10.0, 0.2), (200.0, 0.6), (50.0, 0.95)):
        x = np.asarray(random.binomial(k, n, p, (N,)))
        assert abs(x.mean() - n * p) < 5 * np.sqrt(n * p * (1 - p) / N)
    g = np.asarray(random.geometric(k, 0.2, (N,)))
    assert g.min() >= 1 and abs(g.mean() - 5.0) < 0.2
    r = np.asarray(random.rademacher(k, (N,)))
    assert set(np.unique(r)) == {-1, 1}
    m = np.asarray(random.multinomial(k, 30.0, jnp.array([0.2, 0.3, 0.5]), shape=(2000, 3)))
    assert np.all(m.sum(-1) == 30) and np.allclose(m.mean(0), [6, 9, 15], atol=0.3)
    d = np.asarray(random.dirichlet(k, jnp.array([0.1, 1.0, 5.0]), (2000,)))
    np.testing.assert_allclose(d.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(d.mean(0), np.array([0.1, 1.0, 5.0]) / 6.1, atol=0.02)
    b = np.asarray(random.ball(k, 3, 2.0, (2000,)))
    assert b.shape == (2000, 3) and np.all(np.linalg.norm(b, axis=-1) <= 1.0 + 1e-6)
    dsm = random.double_sided_maxwell(k, jnp.array([0.0, 1.0]), 2.0, (5,))
    assert dsm.shape == (5, 2)


def test_edge_parameters():
    k = random.PRNGKey(2)
    assert random.gamma(k, 1.0, (0,)).shape == (0,)
    assert random.poisson(k, 0.0, (4,)).tolist() == [0, 0, 0, 0]
    b = np.asarray(random.binomial(k, jnp.array([np.nan, -1.0, np.inf, 5.0]), jnp.array([0.5, 0.5, 0.5, np.nan])))
    assert np.isnan(b[0]) and np.isnan(b[1]) and b[2] == np.inf and np.isnan(b[3])
    assert np.all(np.asarray(random.gamma(k, 1e-3, (100,))) >= 0)
    assert np.all(np.isfinite(np.asarray(random.loggamma(k, 1e-3, (100,)))))


def test_errors():
    k = random.PRNGKey(0)
    with pytest.raises(ValueError, match="must be a float dtype"):
        random.gamma(k, 1.0, dtype=jnp.int32)
    with pytest.raises(ValueError, match="must be an int dtype"):
        random.poisson(k, 1.0, dtype=jnp.float32)
    with pytest.raises(ValueError, match=re.escape("Incompatible shapes for broadcasting: shapes=[(4,), (3,), ()]")):
        random.beta(k, jnp.ones(3), 1.0, (4,))  # (JAX 0.10.2's message)
    with pytest.raises(ValueError, match="alpha.ndim >= 1"):
        random.dirichlet(k, 1.0)
    with pytest.raises(TypeError):
        random.gamma(jnp.ones(2), 1.0)
    with pytest.raises(NotImplementedError, match="random_gamma_grad"):
        fjax.grad(fjax.grad(lambda a: random.gamma(k, a)))(2.0)
