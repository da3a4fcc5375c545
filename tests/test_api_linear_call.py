"""jax.custom_derivatives.linear_call and jax.fwd_and_bwd. Expected values are JAX 0.10.2's
(its docstring examples, rerun)."""

from functools import partial

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax.custom_derivatives import linear_call


def _f(r, x):
    return x / r


def _t(r, t):
    return t / r


def div_add(x, denom):
    return x + linear_call(_f, _t, denom, x)


def transpose(f, x_example):
    def transposed(y):
        (x,) = fjax.linear_transpose(f, x_example)(y)
        return x

    return transposed


def custom_id(x):
    def f(_, x):
        return x

    def t(_, t):
        return 7.0

    return linear_call(f, t, (), x)


def test_docstring_examples():
    assert float(div_add(9.0, 3.0)) == 12.0
    assert float(transpose(partial(div_add, denom=3.0), 1.0)(18.0)) == 24.0  # custom transpose
    assert float(custom_id(1.0)) == 1.0
    assert float(transpose(custom_id, 1.0)(1.0)) == 7.0
    assert float(transpose(transpose(custom_id, 1.0), 1.0)(1.0)) == 1.0
    assert float(transpose(transpose(transpose(custom_id, 1.0), 1.0), 1.0)(1.0)) == 7.0


def test_grad_jvp_jit_vmap():
    np.testing.assert_allclose(fjax.grad(lambda x: div_add(x, 3.0))(2.0), 4.0 / 3.0, rtol=1e-6)
    out, tan = fjax.jvp(lambda x: div_add(x, 3.0), (2.0,), (1.0,))
    np.testing.assert_allclose([out, tan], [2.0 + 2.0 / 3.0, 4.0 / 3.0], rtol=1e-6)
    assert float(fjax.jit(lambda x: div_add(x, 3.0))(9.0)) == 12.0
    np.testing.assert_allclose(fjax.jit(fjax.grad(lambda x: div_add(x, 3.0)))(2.0), 4.0 / 3.0, rtol=1e-6)
    d = jnp.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(fjax.vmap(div_add)(jnp.arange(3.0), d), [0.0, 1.5, 2.5])
    np.testing.assert_allclose(fjax.vmap(fjax.grad(div_add))(jnp.arange(3.0), d), [2.0, 1.5, 1.25])
    # the custom transpose is used by grad too: d/dx custom_id(x) = 7
    assert float(fjax.grad(custom_id)(3.0)) == 7.0
    assert float(fjax.vmap(fjax.grad(custom_id))(jnp.ones(2))[1]) == 7.0


def test_pytrees_and_jaxpr():
    def f(r, xs):
        return {"a": xs[0] * r, "b": xs[1] * r}

    def t(r, ct):
        return (ct["a"] * r, ct["b"] * r)

    g = fjax.grad(lambda a, b: sum(linear_call(f, t, 2.0, (a, b)).values()), argnums=(0, 1))(1.0, 1.0)
    np.testing.assert_allclose(g, (2.0, 2.0))
    text = str(fjax.make_jaxpr(lambda x: div_add(x, 3.0))(2.0))
    assert "linear_call[" in text and "callee=" in text


def test_errors():
    with pytest.raises(TypeError, match="residual"):
        fjax.grad(lambda d: div_add(1.0, d))(3.0)
    bad = lambda x: linear_call(_f, lambda r, t: (t, t), 2.0, x)  # noqa: E731
    with pytest.raises(TypeError, match="transpose output pytree structure must match"):
        fjax.grad(bad)(1.0)


def test_fwd_and_bwd():
    x = W = ct = jnp.ones((4, 4))
    fwd, bwd = fjax.fwd_and_bwd(lambda x, W: x @ W, argnums=(0, 1))
    trees = []
    for i in range(3):
        y, res = fwd(x * i, W)
        np.testing.assert_allclose(y, np.full((4, 4), 4.0 * i))
        cx, cW = bwd(res, ct)
        np.testing.assert_allclose(cx, np.full((4, 4), 4.0))
        np.testing.assert_allclose(cW, np.full((4, 4), 4.0 * i))
        trees.append(fjax.tree_util.tree_structure(res))
    assert trees[0] == trees[1] == trees[2]  # so the jitted bwd is traced once
    fwd1, bwd1 = fjax.fwd_and_bwd(lambda x, W: x @ W, argnums=0, jitted=False)
    y, res = fwd1(x, W)
    np.testing.assert_allclose(bwd1(res, ct), np.full((4, 4), 4.0))  # one value for an int argnums


def test_fwd_and_bwd_aux_and_errors():
    fwd, bwd = fjax.fwd_and_bwd(lambda x: (x * 2, x), 0, has_aux=True)
    y, res, aux = fwd(3.0)
    assert float(y) == 6.0 and float(aux) == 3.0
    assert float(bwd(res, 1.0)) == 2.0
    with pytest.raises(TypeError, match="Expected a callable value, got 3"):
        fjax.fwd_and_bwd(3, 0)
    fwd, _ = fjax.fwd_and_bwd(lambda x, y: x * y, 1)
    with pytest.raises(TypeError, match="argnums"):
        fwd(1.0)
