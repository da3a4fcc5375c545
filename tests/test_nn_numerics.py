"""Stable forward values and derivatives of fjax.nn's numerics on both tails."""

import numpy as np
from hypothesis import given

import fjax
import fjax.numpy as jnp
from fjax import nn
from fjax.test_util import check_grads
from fjax.testing import arrays


def test_extreme_values_stay_finite():
    x = jnp.array([-1000.0, -50.0, 0.0, 50.0, 1000.0])
    np.testing.assert_allclose(nn.softplus(x), [0.0, np.log1p(np.exp(-50.0)), np.log(2), 50.0, 1000.0], rtol=1e-6)
    np.testing.assert_allclose(nn.log_sigmoid(x), [-1000.0, -50.0, -np.log(2), -np.exp(-50.0), 0.0], rtol=1e-6)
    assert np.isfinite(np.asarray(nn.logsumexp(x)))
    np.testing.assert_allclose(nn.logsumexp(x), 1000.0)
    np.testing.assert_allclose(nn.softmax(x), [0, 0, 0, 0, 1], atol=1e-30)
    for f in (nn.softplus, nn.log_sigmoid, nn.sigmoid):
        g = fjax.vmap(fjax.grad(f))(x)
        assert np.all(np.isfinite(np.asarray(g)))
    g = fjax.grad(lambda v: nn.logsumexp(v))(x)
    np.testing.assert_allclose(g, np.asarray(nn.softmax(x)), atol=1e-7)
    assert np.all(np.isfinite(np.asarray(fjax.grad(lambda v: nn.log_softmax(v)[0])(x))))


@given(arrays((2, 5), min_value=-5, max_value=5))
def test_grads_against_finite_differences(x):
    check_grads(lambda v: nn.logsumexp(v, axis=1), (x,), order=2)
    check_grads(lambda v: nn.softmax(v), (x,), order=1)
    check_grads(lambda v: nn.log_softmax(v, axis=0), (x,), order=1)
    check_grads(nn.softplus, (x,), order=2)
    check_grads(nn.log_sigmoid, (x,), order=2)


@given(arrays((7,), min_value=-30, max_value=30))
def test_against_numpy(x):
    xv = np.asarray(x, np.float64)
    # float32 log of a sum near 1 (one dominant term) is good to a few ulp of 1, absolute
    np.testing.assert_allclose(nn.logsumexp(x), np.log(np.sum(np.exp(xv))), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(nn.softmax(x), np.exp(xv) / np.exp(xv).sum(), rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(nn.sigmoid(x), 1 / (1 + np.exp(-xv)), rtol=1e-5, atol=1e-7)


def test_where_double_where_idiom_gives_finite_grad():
    def naive(x):
        return jnp.where(x > 0, jnp.log(x), 0.0)

    def safe(x):
        s = jnp.where(x > 0, x, 1.0)
        return jnp.where(x > 0, jnp.log(s), 0.0)

    assert np.isnan(float(fjax.grad(naive)(0.0)))  # the documented pitfall, as in JAX
    assert float(fjax.grad(safe)(0.0)) == 0.0
