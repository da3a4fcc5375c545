"""Tests of random.multivariate_normal and random.orthogonal: JAX's samples for the same key
(reference data recorded from JAX, see tests/data/README.md), moments, jit/vmap, errors."""

import json
import pathlib

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import random

DATA = json.loads((pathlib.Path(__file__).parent / "data" / "random_linalg.json").read_text())


@pytest.mark.parametrize("case", DATA["cases"], ids=lambda c: f"{c['fn']}-{c.get('method', '')}-{c['seed']}")
def test_matches_jax(case):
    key = random.PRNGKey(case["seed"])
    if case["fn"] == "multivariate_normal":
        mean = np.array(DATA["mean"], np.float32)
        cov = np.array(DATA["cov"], np.float32)
        got = random.multivariate_normal(key, mean, cov, tuple(case["shape"]), method=case["method"])
    else:
        got = random.orthogonal(key, case["n"], tuple(case["shape"]), m=case["m"])
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), np.array(case["values"], np.float32), rtol=2e-5, atol=2e-5)


def test_multivariate_normal_moments_and_transforms():
    cov = np.array([[2.0, 0.5], [0.5, 1.0]])
    key = random.PRNGKey(0)
    for method in ("cholesky", "eigh", "svd"):
        x = np.asarray(random.multivariate_normal(key, np.array([1.0, -2.0]), cov, (20000,), method=method))
        np.testing.assert_allclose(x.mean(0), [1.0, -2.0], atol=0.05)
        np.testing.assert_allclose(np.cov(x.T), cov, atol=0.06)
    assert random.multivariate_normal(key, np.zeros((3, 2)), cov).shape == (3, 2)
    f = fjax.jit(lambda k, m: random.multivariate_normal(k, m, cov))
    np.testing.assert_allclose(f(key, jnp.zeros(2)), random.multivariate_normal(key, jnp.zeros(2), cov), rtol=1e-6)
    v = fjax.vmap(lambda k: random.multivariate_normal(k, jnp.zeros(2), cov))(random.split(key, 3))
    assert v.shape == (3, 2)
    g = fjax.grad(lambda m: random.multivariate_normal(key, m, cov).sum())(jnp.zeros(2))
    np.testing.assert_allclose(g, [1.0, 1.0])
    with pytest.raises(ValueError, match="method"):
        random.multivariate_normal(key, np.zeros(2), cov, method="lu")
    with pytest.raises(ValueError, match="cov.shape"):
        random.multivariate_normal(key, np.zeros(3), cov)


def test_orthogonal_properties():
    key = random.PRNGKey(1)
    q = np.asarray(random.orthogonal(key, 5, (3,)))
    assert q.shape == (3, 5, 5)
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(5), q.shape), atol=1e-5)
    w = np.asarray(random.orthogonal(key, 2, m=4))
    np.testing.assert_allclose(w @ w.T, np.eye(2), atol=1e-6)
    assert fjax.vmap(lambda k: random.orthogonal(k, 3))(random.split(key, 2)).shape == (2, 3, 3)
