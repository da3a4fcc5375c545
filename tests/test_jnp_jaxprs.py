"""jnp/nn functions build the equations JAX's do beyond the printing corpus (texts printed by JAX
0.10.2, CPU, x64 off), and compute the same values as before."""

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import nn

X = np.array([0.5, -2.0, 3.0], np.float32)


@pytest.mark.parametrize(
    "fn,prim,op",
    [(jnp.sum, "reduce_sum", "add"), (jnp.prod, "reduce_prod", "mul"), (jnp.min, "reduce_min", "min"),
     (jnp.max, "reduce_max", "max")],
)  # fmt: skip
def test_reduction_initial_comes_first(fn, prim, op):
    got = str(fjax.make_jaxpr(lambda x: fn(x, initial=2.0))(X))
    params = "[axes=(0,) out_sharding=None]" if prim == "reduce_sum" else "[axes=(0,)]"
    assert got == (
        f"{{ lambda ; a:f32[3]. let\n    b:f32[] = {prim}{params} a\n    c:f32[] = {op} 2.0:f32[] b\n  in (c,) }}"
    )
    assert float(fn(X, initial=2.0)) == float({"add": 3.5, "mul": -6.0, "min": -2.0, "max": 3.0}[op])


def test_softmax_max_has_initial_minus_inf():
    x = np.ones((2, 3), np.float32)
    for f in (nn.softmax, nn.log_softmax):
        text = str(fjax.make_jaxpr(f)(x)).splitlines()
        assert text[1:3] == ["    b:f32[2] = reduce_max[axes=(1,)] a", "    c:f32[2] = max -inf:f32[] b"]
    y = np.array([[1.0, 2.0, -np.inf], [np.nan, 0.0, 1.0]], np.float32)
    s = np.exp(y[0] - 2.0) / np.exp(y[0] - 2.0).sum()
    np.testing.assert_allclose(nn.softmax(y)[0], s, rtol=1e-6)
    assert np.isnan(np.asarray(nn.softmax(y)[1])).all()
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(nn.log_softmax(y)[0], np.log(s), rtol=1e-6)


def test_logsumexp_values():
    from scipy import special as sp

    from fjax.scipy import special

    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((3, 4)).astype(np.float32)
    for axis in (None, 0, 1, (0, 1)):
        for keepdims in (False, True):
            want = sp.logsumexp(a, axis=axis, keepdims=keepdims)
            np.testing.assert_allclose(special.logsumexp(a, axis=axis, keepdims=keepdims), want, rtol=1e-6)
            got, sign = special.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=True)
            want, wsign = sp.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=True)
            np.testing.assert_allclose(got, want, rtol=2e-5)
            np.testing.assert_array_equal(sign, wsign)
    # all -inf along an axis, an empty axis, a masked axis
    minf = np.full((2, 3), -np.inf, np.float32)
    np.testing.assert_array_equal(special.logsumexp(minf, axis=1), [-np.inf, -np.inf])
    assert special.logsumexp(np.zeros((0,), np.float32)) == -np.inf
    mask = np.array([[True, False, True, True], [False] * 4, [True] * 4])
    got = special.logsumexp(a, axis=1, where=mask)
    want = [sp.logsumexp(a[0][mask[0]]), -np.inf, sp.logsumexp(a[2])]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    # gradient: softmax weights; ties in the max do not matter (the max is stopped)
    g = fjax.grad(lambda x: special.logsumexp(x))(np.array([1.0, 1.0, 0.0], np.float32))
    e = np.exp([1.0, 1.0, 0.0])
    np.testing.assert_allclose(g, e / e.sum(), rtol=1e-6)


def test_reduce_max_jvp_splits_ties():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, -1.0]], np.float32)
    np.testing.assert_array_equal(fjax.grad(lambda x: jnp.max(x, axis=1).sum())(x), [[0, 0.5, 0.5], [1, 0, 0]])
    np.testing.assert_array_equal(fjax.grad(lambda x: jnp.min(x))(x), [[0, 0, 0], [0, 0, 1]])


def test_logsumexp_complex_as_jax():
    from fjax.scipy import special

    # JAX 0.10.2: the max of the real parts shifts a; with return_sign the result is real
    a = np.array([[1 + 2j, 0.5 - 1j, -1 + 0.3j], [2 - 1j, 1 + 1j, 0.1j]], np.complex64)
    out, sign = special.logsumexp(a, axis=1, return_sign=True)
    assert out.dtype == np.float32 and sign.dtype == np.complex64
    np.testing.assert_allclose(out, [0.18086, 2.01582], atol=1e-5)
    np.testing.assert_allclose(sign, [0.09268 + 0.9957j, 0.86002 - 0.51027j], atol=1e-5)
    got = special.logsumexp(a, axis=1)
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, [0.18086 + 1.47798j, 2.01582 - 0.53549j], atol=1e-5)
