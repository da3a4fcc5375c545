"""Records reference samples of JAX's random distributions into random_dists.json.

Run with JAX installed (NOT part of the test suite; the tests never import jax):
    python tests/data/make_random_dists.py
It was run with JAX 0.10.2 on a CPU with FMA (x64 off, default partitionable threefry).
Each case stores the sampler name, the seed of ``PRNGKey``, its arguments (arrays as lists with
a dtype) and the output (dtype, shape and the values; floats also as their IEEE bit patterns).
"""

import json
import pathlib

import jax
import numpy as np
from jax import random

A32 = lambda *v: {"array": list(v), "dtype": "float32"}  # noqa: E731

CASES = [
    ("gamma", 0, {"a": A32(0.1, 0.5, 1.0, 2.5, 10.0, 100.0, 1e-3, 1e4)}),
    ("gamma", 1, {"a": 0.3, "shape": [300]}),
    ("gamma", 2, {"a": 3.0, "shape": [300]}),
    ("gamma", 3, {"a": 1.0, "shape": [2, 3], "dtype": "float16"}),
    ("loggamma", 4, {"a": A32(0.01, 0.3, 1.0, 5.0, 1e-4, 50.0)}),
    ("loggamma", 5, {"a": 0.2, "shape": [300]}),
    ("beta", 6, {"a": 0.5, "b": 2.0, "shape": [300]}),
    ("beta", 7, {"a": A32(0.1, 1.0, 3.0), "b": A32(5.0, 1.0, 0.2)}),
    ("dirichlet", 8, {"alpha": A32(0.5, 1.0, 2.0), "shape": [100]}),
    ("t", 9, {"df": 3.0, "shape": [300]}),
    ("chisquare", 10, {"df": 4.0, "shape": [300]}),
    ("f", 11, {"dfnum": 3.0, "dfden": 5.0, "shape": [300]}),
    ("generalized_normal", 12, {"p": 1.5, "shape": [300]}),
    ("ball", 13, {"d": 3, "p": 2, "shape": [50]}),
    ("cauchy", 14, {"shape": [300]}),
    ("logistic", 15, {"shape": [300]}),
    ("pareto", 16, {"b": 3.0, "shape": [300]}),
    ("lognormal", 17, {"sigma": 0.5, "shape": [300]}),
    ("weibull_min", 18, {"scale": 2.0, "concentration": 1.5, "shape": [300]}),
    ("rayleigh", 19, {"scale": 2.0, "shape": [300]}),
    ("wald", 20, {"mean": 1.5, "shape": [300]}),
    ("triangular", 21, {"left": 0.0, "mode": 0.3, "right": 1.0, "shape": [300]}),
    ("rademacher", 22, {"shape": [300]}),
    ("maxwell", 23, {"shape": [300]}),
    ("double_sided_maxwell", 24, {"loc": 0.5, "scale": 2.0, "shape": [100]}),
    ("geometric", 25, {"p": 0.3, "shape": [300]}),
    ("poisson", 26, {"lam": A32(0.5, 3.0, 9.9, 10.0, 50.0, 1000.0, 0.0)}),
    ("poisson", 27, {"lam": 4.0, "shape": [300]}),
    ("poisson", 28, {"lam": 30.0, "shape": [300]}),
    ("binomial", 29, {"n": 20.0, "p": 0.3, "shape": [300]}),
    ("binomial", 30, {"n": 100.0, "p": 0.6, "shape": [300]}),
    ("binomial", 31, {"n": A32(5.0, 50.0, 1000.0, 0.0), "p": A32(0.9, 0.1, 0.5, 0.5)}),
    ("multinomial", 32, {"n": 50.0, "p": A32(0.2, 0.3, 0.5), "shape": [20, 3]}),
]


def _dec(v):
    if isinstance(v, dict):
        return np.asarray(v["array"], v["dtype"])
    return tuple(v) if isinstance(v, list) else v


def main():
    assert not jax.config.jax_enable_x64
    out = []
    for fn, seed, kwargs in CASES:
        kw = {k: _dec(v) for k, v in kwargs.items()}
        if "dtype" in kw:
            kw["dtype"] = np.dtype(kw["dtype"])
        res = np.asarray(getattr(random, fn)(random.PRNGKey(seed), **kw))
        rec = {"dtype": str(res.dtype), "shape": list(res.shape), "values": res.ravel().tolist()}
        if res.dtype.kind == "f":
            rec["bits"] = res.view({2: np.uint16, 4: np.uint32}[res.dtype.itemsize]).ravel().tolist()
        out.append({"fn": fn, "seed": seed, "kwargs": kwargs, "out": rec})
    # gradients of samples with respect to their parameters (implicit reparameterization)
    a = np.array([0.3, 1.0, 2.5, 10.0], np.float32)
    k = random.PRNGKey(0)
    grads = {
        "gamma": jax.grad(lambda a: random.gamma(k, a).sum())(a),
        "loggamma": jax.grad(lambda a: random.loggamma(k, a).sum())(a),
        "beta_a": jax.grad(lambda a: random.beta(k, a, 2.0).sum())(a),
        "dirichlet_0": jax.grad(lambda a: random.dirichlet(k, a)[0])(a),
    }
    data = {
        "grads": {"a": a.tolist(), "seed": 0, **{n: np.asarray(g).tolist() for n, g in grads.items()}},
        "about": __doc__,
        "jax_version": jax.__version__,
        "numpy_version": np.__version__,
        "cases": out,
    }
    path = pathlib.Path(__file__).parent / "random_dists.json"
    path.write_text(json.dumps(data, separators=(",", ":")))


if __name__ == "__main__":
    main()
