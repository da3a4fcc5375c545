"""Checks of blackjax 1.7.1 on fjax, run by tests/compat/test_blackjax.py under ``python -m fjax.compat``
(``import jax`` is fjax). Samplers target Gaussians whose mean and covariance are known; Monte Carlo
estimates are held to a few standard errors. The same script runs under the real JAX (``python
_blackjax_checks.py`` where jax is installed) and reads no fjax internals.

Run some checks by name: ``python -m fjax.compat _blackjax_checks.py "NUTS"`` (substring match).
"""

from __future__ import annotations

import sys

import blackjax
import jax
import jax.numpy as jnp
import jax.scipy.stats as jstats
import numpy as np
from _checks_common import close_rel as close  # noqa: E402
from _checks_common import finish, timed_checker  # noqa: E402

check, results, failures = timed_checker(sys.argv[1:])


def check_moments(samples, mean, cov, n_se=5.0, ess_fraction=0.2):
    """Sample mean within ``n_se`` standard errors (effective sample size ``ess_fraction`` of the
    draws), sample sds within 20% and correlations within 0.15 of the target's."""
    s = np.asarray(samples, np.float64)
    sd = np.sqrt(np.diag(cov))
    se = sd / np.sqrt(ess_fraction * s.shape[0])
    assert np.all(np.abs(s.mean(0) - mean) <= n_se * se), (s.mean(0), mean, se)
    close(s.std(0), sd, rtol=0.2)
    if s.shape[1] > 1:
        corr = np.corrcoef(s.T)
        close(corr, cov / np.outer(sd, sd), rtol=0, atol=0.15)


MEAN = np.array([1.0, -2.0, 0.5])
COV = np.array([[1.0, 0.6, 0.0], [0.6, 2.0, -0.3], [0.0, -0.3, 0.5]])


def logdensity(x):
    return jstats.multivariate_normal.logpdf(x, jnp.asarray(MEAN, jnp.float32), jnp.asarray(COV, jnp.float32))


def inference_loop(rng_key, kernel, initial_state, num_samples):
    """The sampling loop from blackjax's documentation."""

    @jax.jit
    def one_step(state, rng_key):
        state, info = kernel(rng_key, state)
        return state, (state, info)

    keys = jax.random.split(rng_key, num_samples)
    _, (states, infos) = jax.lax.scan(one_step, initial_state, keys)
    return states, infos


@check("window_adaptation + NUTS on a correlated 3-D Gaussian")
def _():
    warm_key, sample_key = jax.random.split(jax.random.key(0))
    warmup = blackjax.window_adaptation(blackjax.nuts, logdensity)
    (state, parameters), _ = warmup.run(warm_key, jnp.zeros(3), num_steps=400)
    assert 0.05 < float(parameters["step_size"]) < 5.0
    # the adapted diagonal inverse mass matrix estimates the target's variances
    close(parameters["inverse_mass_matrix"], np.diag(COV), rtol=0.5)
    kernel = blackjax.nuts(logdensity, **parameters).step
    states, infos = inference_loop(sample_key, kernel, state, 1000)
    check_moments(states.position, MEAN, COV)
    assert 0.5 < float(infos.acceptance_rate.mean()) <= 1.0
    assert int(infos.is_divergent.sum()) == 0


@check("HMC with a dense inverse mass matrix on a correlated 3-D Gaussian")
def _():
    hmc = blackjax.hmc(logdensity, step_size=0.25, inverse_mass_matrix=jnp.asarray(COV, jnp.float32),
                       num_integration_steps=7)  # fmt: skip
    states, infos = inference_loop(jax.random.key(1), hmc.step, hmc.init(jnp.zeros(3)), 2000)
    check_moments(states.position[200:], MEAN, COV)
    assert float(infos.acceptance_rate.mean()) > 0.8


@check("random walk Metropolis: rmh and normal_random_walk on a 2-D Gaussian")
def _():
    mean, cov = MEAN[:2], COV[:2, :2]

    def logdensity2(x):
        return jstats.multivariate_normal.logpdf(x, jnp.asarray(mean, jnp.float32), jnp.asarray(cov, jnp.float32))

    sigma = jnp.array([1.2, 1.6])

    def proposal(key, position):  # symmetric, so rmh needs no proposal density
        return position + sigma * jax.random.normal(key, position.shape)

    for alg, key in (
        (blackjax.rmh(logdensity2, proposal), jax.random.key(2)),
        (blackjax.additive_step_random_walk.normal_random_walk(logdensity2, sigma), jax.random.key(5)),
    ):
        states, infos = inference_loop(key, alg.step, alg.init(jnp.zeros(2)), 8000)
        check_moments(states.position[1000:], mean, cov, ess_fraction=0.05)
        assert 0.15 < float(infos.acceptance_rate.mean()) < 0.7


@check("MCLMC with find_L_and_step_size on a correlated 3-D Gaussian")
def _():
    init_key, tune_key, run_key = jax.random.split(jax.random.key(3), 3)
    state = blackjax.mcmc.mclmc.init(position=jnp.ones(3), logdensity_fn=logdensity, rng_key=init_key)
    kernel = blackjax.mcmc.mclmc.build_kernel(integrator=blackjax.mcmc.integrators.isokinetic_mclachlan)
    state, params, _ = blackjax.mclmc_find_L_and_step_size(
        mclmc_kernel=kernel, logdensity_fn=logdensity, num_steps=1000, state=state, rng_key=tune_key
    )
    assert float(params.step_size) > 0 and float(params.L) > 0
    alg = blackjax.mclmc(logdensity, L=params.L, step_size=params.step_size)
    states, _ = inference_loop(run_key, alg.step, state, 3000)
    check_moments(states.position, MEAN, COV, ess_fraction=0.1)


@check("MALA on a 1-D Gaussian, 4 chains by vmap; rhat and ess")
def _():
    def logdensity1(x):
        return jstats.norm.logpdf(x[0], 2.0, 0.7)

    mala = blackjax.mala(logdensity1, step_size=0.5)
    keys = jax.random.split(jax.random.key(4), 4)
    init = jax.vmap(mala.init)(jnp.linspace(-1.0, 3.0, 4)[:, None])
    states, _ = jax.vmap(lambda k, s: inference_loop(k, mala.step, s, 2000))(keys, init)
    chains = np.asarray(states.position[:, 300:, 0])
    check_moments(chains.reshape(-1, 1), [2.0], [[0.49]], ess_fraction=0.1)
    rhat = float(blackjax.rhat(jnp.asarray(chains), chain_axis=0, sample_axis=1))
    ess = float(blackjax.ess(jnp.asarray(chains), chain_axis=0, sample_axis=1))
    assert abs(rhat - 1.0) < 0.02, rhat
    assert 200 < ess < chains.size, ess


finish("blackjax", results, failures)
