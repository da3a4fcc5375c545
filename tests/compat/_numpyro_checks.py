"""Checks of numpyro 0.22.0 on fjax, run by tests/compat/test_numpyro.py under ``python -m fjax.compat``
(``import jax`` is fjax). Each compares with a closed form (conjugate posteriors), scipy or numpy,
never with itself; Monte Carlo results are held to a few standard errors. The same script runs
under the real JAX (``python _numpyro_checks.py`` where jax is installed) and reads no fjax
internals.

Run some checks by name: ``python -m fjax.compat _numpyro_checks.py "NUTS"`` (substring match).
"""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import optax
import scipy.stats as st
from _checks_common import close_rel as close  # noqa: E402
from _checks_common import finish, timed_checker  # noqa: E402
from numpyro.infer import HMC, MCMC, NUTS, SVI, Predictive, Trace_ELBO
from numpyro.infer.autoguide import AutoNormal
from numpyro.infer.util import log_density

check, results, failures = timed_checker(sys.argv[1:])


def within_se(samples, mean, sd, n_se=5.0, ess_fraction=0.25):
    """The sample mean of ``samples`` (axis 0) lies within ``n_se`` standard errors of ``mean``, the
    error counted with an effective sample size of ``ess_fraction`` of the draws (MCMC draws are
    correlated), and their sd within 25% of ``sd``."""
    s = np.asarray(samples, np.float64)
    se = np.asarray(sd) / np.sqrt(ess_fraction * s.shape[0])
    err = np.abs(s.mean(0) - mean)
    assert np.all(err <= n_se * se), (s.mean(0), mean, se)
    close(s.std(0), sd, rtol=0.25)


# ---------------------------------------------------------------- data: y = a + b x + noise, sigma known

rng = np.random.default_rng(0)
N = 50
x_data = rng.uniform(-2, 2, N).astype(np.float32)
SIGMA, TAU = 0.5, 10.0
y_data = (1.0 + 2.0 * x_data + SIGMA * rng.standard_normal(N)).astype(np.float32)


def regression(x, y=None):
    a = numpyro.sample("a", dist.Normal(0.0, TAU))
    b = numpyro.sample("b", dist.Normal(0.0, TAU))
    with numpyro.plate("data", x.shape[0]):
        numpyro.sample("y", dist.Normal(a + b * x, SIGMA), obs=y)


def regression_posterior():
    """Mean and covariance of (a, b): Gaussian prior, Gaussian likelihood with known noise."""
    Phi = np.stack([np.ones(N), x_data.astype(np.float64)], 1)
    prec = Phi.T @ Phi / SIGMA**2 + np.eye(2) / TAU**2
    cov = np.linalg.inv(prec)
    return cov @ Phi.T @ y_data.astype(np.float64) / SIGMA**2, cov


# ---------------------------------------------------------------- distributions


@check("log_prob of 12 distributions vs scipy.stats")
def _():
    x = np.array([0.3, 1.7, 2.4], np.float32)
    u = np.array([0.1, 0.5, 0.85], np.float32)
    k = np.array([0, 3, 7], np.int32)
    cases = [
        (dist.Normal(0.5, 1.5), x, st.norm(0.5, 1.5).logpdf(x)),
        (dist.HalfNormal(2.0), x, st.halfnorm(scale=2.0).logpdf(x)),
        (dist.Gamma(2.5, 1.5), x, st.gamma(2.5, scale=1 / 1.5).logpdf(x)),
        (dist.Beta(2.0, 3.0), u, st.beta(2.0, 3.0).logpdf(u)),
        (dist.StudentT(4.0, 0.5, 2.0), x, st.t(4.0, 0.5, 2.0).logpdf(x)),
        (dist.LogNormal(0.2, 0.7), x, st.lognorm(0.7, scale=np.exp(0.2)).logpdf(x)),
        (dist.Exponential(1.3), x, st.expon(scale=1 / 1.3).logpdf(x)),
        (dist.Cauchy(0.1, 2.0), x, st.cauchy(0.1, 2.0).logpdf(x)),
        (dist.Poisson(2.5), k, st.poisson(2.5).logpmf(k)),
        (dist.Binomial(10, 0.3), k, st.binom(10, 0.3).logpmf(k)),
        (dist.InverseGamma(3.0, 2.0), x, st.invgamma(3.0, scale=2.0).logpdf(x)),
        (dist.Laplace(0.5, 1.2), x, st.laplace(0.5, 1.2).logpdf(x)),
    ]
    for d, v, want in cases:
        close(d.log_prob(jnp.asarray(v)), want, rtol=2e-5, atol=1e-5)
    cov = np.array([[2.0, 0.6], [0.6, 1.0]], np.float32)
    v = np.array([[0.3, -1.0], [1.5, 0.2]], np.float32)
    close(dist.MultivariateNormal(jnp.array([0.1, -0.2]), cov).log_prob(v),
          st.multivariate_normal([0.1, -0.2], cov).logpdf(v), rtol=2e-5)  # fmt: skip
    alpha = np.array([1.5, 2.0, 3.0], np.float32)
    p = np.array([0.2, 0.3, 0.5], np.float32)
    close(dist.Dirichlet(alpha).log_prob(p), st.dirichlet(alpha).logpdf(p), rtol=2e-5)
    close(dist.Categorical(probs=p).log_prob(jnp.array([0, 2])), np.log(p[[0, 2]]), rtol=1e-6)


@check("sample moments: Gamma, Beta, Dirichlet, Poisson, MultivariateNormal")
def _():
    n = 20000
    keys = jax.random.split(jax.random.PRNGKey(1), 5)

    def moments(d, key, mean, var):
        s = np.asarray(d.sample(key, (n,)), np.float64)
        se = np.sqrt(np.asarray(var) / n)
        assert np.all(np.abs(s.mean(0) - mean) <= 5 * se), (s.mean(0), mean)
        close(s.var(0), var, rtol=0.1)

    moments(dist.Gamma(2.5, 1.5), keys[0], 2.5 / 1.5, 2.5 / 1.5**2)
    moments(dist.Beta(2.0, 3.0), keys[1], 0.4, 2 * 3 / (25 * 6))
    a = np.array([1.5, 2.0, 3.0])
    a0 = a.sum()
    moments(dist.Dirichlet(jnp.asarray(a)), keys[2], a / a0, a * (a0 - a) / (a0**2 * (a0 + 1)))
    moments(dist.Poisson(3.5), keys[3], 3.5, 3.5)
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    moments(dist.MultivariateNormal(jnp.array([0.1, -0.2]), jnp.asarray(cov)), keys[4], [0.1, -0.2], np.diag(cov))


@check("log_density of the regression model vs scipy")
def _():
    params = {"a": jnp.array(0.7), "b": jnp.array(1.9)}
    lp, _ = log_density(regression, (x_data,), {"y": y_data}, params)
    want = (
        st.norm(0, TAU).logpdf(0.7) + st.norm(0, TAU).logpdf(1.9)
        + st.norm(0.7 + 1.9 * x_data.astype(np.float64), SIGMA).logpdf(y_data).sum()
    )  # fmt: skip
    close(lp, want, rtol=1e-5)


# ---------------------------------------------------------------- MCMC


@check("NUTS linear regression vs the conjugate posterior, then Predictive")
def _():
    mcmc = MCMC(NUTS(regression), num_warmup=300, num_samples=1000, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0), x_data, y_data)
    s = mcmc.get_samples()
    mean, cov = regression_posterior()
    within_se(np.stack([s["a"], s["b"]], 1), mean, np.sqrt(np.diag(cov)))
    emp_cov = np.cov(np.stack([np.asarray(s["a"]), np.asarray(s["b"])]))
    close(emp_cov[0, 1] / np.sqrt(emp_cov[0, 0] * emp_cov[1, 1]),
          cov[0, 1] / np.sqrt(cov[0, 0] * cov[1, 1]), rtol=0, atol=0.15)  # fmt: skip
    assert int(mcmc.get_extra_fields()["diverging"].sum()) == 0
    # posterior predictive at new inputs: mean a + b x, variance (1, x) cov (1, x)^T + sigma^2
    x_new = jnp.array([-1.0, 0.0, 1.5])
    pred = Predictive(regression, s)(jax.random.PRNGKey(2), x_new)["y"]
    assert pred.shape == (1000, 3)
    Phi = np.stack([np.ones(3), np.asarray(x_new)], 1)
    pvar = np.einsum("ij,jk,ik->i", Phi, cov, Phi) + SIGMA**2
    within_se(pred, Phi @ mean, np.sqrt(pvar))


def coin(flips=None):
    p = numpyro.sample("p", dist.Beta(2.0, 2.0))
    with numpyro.plate("flips", flips.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(p), obs=flips)


flips = (rng.uniform(size=40) < 0.7).astype(np.float32)


@check("HMC Beta-Bernoulli (a constrained site) vs the Beta posterior, 2 chains")
def _():
    mcmc = MCMC(
        HMC(coin, trajectory_length=1.5), num_warmup=200, num_samples=600,
        num_chains=2, chain_method="sequential", progress_bar=False,
    )  # fmt: skip
    mcmc.run(jax.random.PRNGKey(3), flips)
    p = mcmc.get_samples()["p"]
    assert p.shape == (1200,)
    post = st.beta(2 + flips.sum(), 2 + len(flips) - flips.sum())
    within_se(p[:, None], [post.mean()], [post.std()])


# ---------------------------------------------------------------- SVI


def normal_mean(obs):
    mu = numpyro.sample("mu", dist.Normal(0.0, 2.0))
    with numpyro.plate("n", obs.shape[0]):
        numpyro.sample("obs", dist.Normal(mu, 1.0), obs=obs)


obs_data = (1.3 + rng.standard_normal(30)).astype(np.float32)
post_var = 1.0 / (1 / 4.0 + len(obs_data))
post_mean = post_var * obs_data.sum()


@check("SVI AutoNormal + numpyro.optim.Adam vs the conjugate posterior")
def _():
    guide = AutoNormal(normal_mean)
    svi = SVI(normal_mean, guide, numpyro.optim.Adam(0.02), Trace_ELBO(num_particles=8))
    res = svi.run(jax.random.PRNGKey(4), 2000, obs_data, progress_bar=False)
    q = res.params
    close(q["mu_auto_loc"], post_mean, rtol=0, atol=0.03)
    close(q["mu_auto_scale"], np.sqrt(post_var), rtol=0.15)
    assert res.losses[-200:].mean() < res.losses[:50].mean()
    s = guide.sample_posterior(jax.random.PRNGKey(5), q, sample_shape=(2000,))["mu"]
    within_se(s[:, None], [post_mean], [np.sqrt(post_var)], ess_fraction=0.5)


@check("SVI with a hand-written guide and an optax optimizer vs the conjugate posterior")
def _():
    def guide(obs):
        loc = numpyro.param("loc", 0.0)
        scale = numpyro.param("scale", 1.0, constraint=dist.constraints.positive)
        numpyro.sample("mu", dist.Normal(loc, scale))

    svi = SVI(normal_mean, guide, optax.adam(0.02), Trace_ELBO(num_particles=8))
    state = svi.init(jax.random.PRNGKey(6), obs_data)
    update = jax.jit(svi.update)
    for _ in range(1500):
        state, loss = update(state, obs_data)
    params = svi.get_params(state)
    close(params["loc"], post_mean, rtol=0, atol=0.03)
    close(params["scale"], np.sqrt(post_var), rtol=0.15)


finish("numpyro", results, failures)
