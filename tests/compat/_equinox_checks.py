"""Checks of equinox on fjax, run by tests/compat/test_equinox.py under ``python -m fjax.compat``
(``import jax`` is fjax). Each compares with numpy, finite differences or a closed form."""

from __future__ import annotations

import equinox as eqx
import equinox.internal as eqxi
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
from _checks_common import checker  # noqa: E402

key = jr.PRNGKey(0)
check, results, _ = checker()


def np_mlp(m, x):
    for i, layer in enumerate(m.layers):
        x = np.asarray(layer.weight) @ x + np.asarray(layer.bias)
        if i < len(m.layers) - 1:
            x = np.maximum(x, 0)
    return x


@check("mlp forward")
def _():
    m = eqx.nn.MLP(3, 2, 8, 2, key=key)
    x = np.linspace(-1, 1, 3).astype(np.float32)
    np.testing.assert_allclose(np.asarray(m(jnp.asarray(x))), np_mlp(m, x), rtol=1e-5, atol=1e-6)


@check("filter_grad matches finite differences")
def _():
    m = eqx.nn.MLP(2, 1, 4, 1, activation=jnp.tanh, key=key)
    x = jnp.array([0.3, -0.7])

    def loss(m):
        return jnp.sum(m(x) ** 2)

    g = eqx.filter_grad(loss)(m)
    w = np.asarray(m.layers[0].weight, np.float64)
    eps = 1e-3
    for i, j in [(0, 0), (3, 1)]:
        wp, wm = w.copy(), w.copy()
        wp[i, j] += eps
        wm[i, j] -= eps
        lp = loss(eqx.tree_at(lambda m: m.layers[0].weight, m, jnp.asarray(wp, jnp.float32)))
        lm = loss(eqx.tree_at(lambda m: m.layers[0].weight, m, jnp.asarray(wm, jnp.float32)))
        fd = (float(lp) - float(lm)) / (2 * eps)
        assert abs(fd - float(g.layers[0].weight[i, j])) < 2e-3 * max(1, abs(fd)), (fd, g.layers[0].weight[i, j])


@check("filter_jit training loop")
def _():
    m = eqx.nn.MLP(1, 1, 16, 2, key=key)
    xs = jnp.linspace(-2, 2, 64)[:, None]
    ys = jnp.sin(xs)

    @eqx.filter_jit
    def step(m):
        loss, g = eqx.filter_value_and_grad(lambda m: jnp.mean((jax.vmap(m)(xs) - ys) ** 2))(m)
        return eqx.apply_updates(m, jax.tree_util.tree_map(lambda t: -0.05 * t, g)), loss

    m, first = step(m)
    for _ in range(300):
        m, loss = step(m)
    assert float(loss) < 0.3 * float(first), (float(first), float(loss))


@check("filter_vmap over examples and over models")
def _():
    m = eqx.nn.Linear(3, 2, key=key)
    xs = jr.normal(key, (5, 3))
    np.testing.assert_allclose(
        np.asarray(eqx.filter_vmap(m)(xs)), np.asarray(xs) @ np.asarray(m.weight).T + np.asarray(m.bias), rtol=1e-5
    )
    ms = eqx.filter_vmap(lambda k: eqx.nn.Linear(3, 2, key=k))(jr.split(key, 4))
    assert ms.weight.shape == (4, 2, 3)
    out = eqx.filter_vmap(lambda m, x: m(x), in_axes=(eqx.if_array(0), None))(ms, xs[0])
    np.testing.assert_allclose(np.asarray(out[2]), np.asarray(ms.weight[2] @ xs[0] + ms.bias[2]), rtol=1e-5)


@check("conv2d against a direct correlation")
def _():
    c = eqx.nn.Conv2d(2, 3, 3, padding=1, key=key)
    x = np.asarray(jr.normal(key, (2, 5, 6)))
    w, b = np.asarray(c.weight), np.asarray(c.bias)
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1)))
    want = np.zeros((3, 5, 6), np.float32)
    for o in range(3):
        for i in range(5):
            for j in range(6):
                want[o, i, j] = np.sum(xp[:, i : i + 3, j : j + 3] * w[o]) + b[o, 0, 0]
    np.testing.assert_allclose(np.asarray(c(jnp.asarray(x))), want, rtol=1e-4, atol=1e-5)


@check("LSTMCell against its equations")
def _():
    cell = eqx.nn.LSTMCell(3, 4, key=key)
    x, h, c = (np.asarray(jr.normal(k, (n,))) for k, n in zip(jr.split(key, 3), (3, 4, 4)))
    h2, c2 = cell(jnp.asarray(x), (jnp.asarray(h), jnp.asarray(c)))
    z = np.asarray(cell.weight_ih) @ x + np.asarray(cell.bias) + np.asarray(cell.weight_hh) @ h
    i, f, g, o = np.split(z, 4)
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    cw = sig(f) * c + sig(i) * np.tanh(g)
    np.testing.assert_allclose(np.asarray(c2), cw, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(h2), sig(o) * np.tanh(cw), rtol=1e-4, atol=1e-5)


@check("BatchNorm with state under a named vmap")
def _():
    model, state = eqx.nn.make_with_state(eqx.nn.BatchNorm)(3, "batch", mode="batch")
    xs = jnp.arange(12.0).reshape(4, 3) * jnp.array([1.0, 2.0, 3.0])
    out, _ = jax.vmap(model, axis_name="batch", in_axes=(0, None), out_axes=(0, None))(xs, state)
    x = np.asarray(xs)
    want = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-4, atol=1e-4)


@check("checkpointed and bounded while_loop gradients")
def _():
    for kind in ("checkpointed", "bounded"):

        def f(a, kind=kind):
            return eqxi.while_loop(
                lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * a), (0, 1.0), max_steps=10, kind=kind
            )[1]

        assert abs(float(jax.grad(f)(1.5)) - 5 * 1.5**4) < 1e-3
        assert abs(float(jax.jit(jax.grad(f))(1.5)) - 5 * 1.5**4) < 1e-3


@check("checkpointed scan gradient equals lax.scan's")
def _():
    def body(c, x):
        return c * x + jnp.sin(c), c

    xs = jnp.linspace(0.5, 1.5, 6)
    g1 = jax.grad(lambda c: eqxi.scan(body, c, xs, kind="checkpointed", checkpoints=2)[0])(0.3)
    g2 = jax.grad(lambda c: jax.lax.scan(body, c, xs)[0])(0.3)
    np.testing.assert_allclose(float(g1), float(g2), rtol=1e-5)


@check("error_if raises inside filter_jit")
def _():
    f = eqx.filter_jit(lambda x: eqx.error_if(x, x > 0, "positive entry"))
    np.testing.assert_array_equal(np.asarray(f(-jnp.ones(2))), [-1.0, -1.0])
    try:
        f(jnp.ones(2))
    except RuntimeError as e:
        assert "positive entry" in str(e)
    else:
        raise AssertionError("error_if did not raise")


@check("equinox primitives expand under jit (mlir.lower_fun)")
def _():
    f = jax.jit(lambda x: jnp.where(eqxi.unvmap_any(x > 1), x * 2, x))
    x = jnp.array([0.5, 2.0])
    np.testing.assert_array_equal(np.asarray(f(x)), [1.0, 4.0])
    ir = f.lower(x).as_text("ir")
    assert "host" not in ir, ir


@check("nondifferentiable_backward raises under grad")
def _():
    try:
        jax.grad(lambda x: jnp.sum(eqxi.nondifferentiable_backward(x)))(jnp.ones(2))
    except RuntimeError:
        pass
    else:
        raise AssertionError("no error")


@check("serialisation round trip with bfloat16")
def _():
    import os
    import tempfile

    tree = (jnp.arange(3.0), jnp.array(1.5, jnp.bfloat16), np.float32(2.0), 7)
    path = os.path.join(tempfile.mkdtemp(), "t.eqx")
    eqx.tree_serialise_leaves(path, tree)
    like = (jnp.zeros(3), jnp.array(0, jnp.bfloat16), np.float32(0), 0)
    back = eqx.tree_deserialise_leaves(path, like)
    assert float(back[1]) == 1.5 and back[1].dtype == jnp.bfloat16 and float(back[2]) == 2.0
    np.testing.assert_array_equal(np.asarray(back[0]), [0.0, 1.0, 2.0])


@check("filter_checkpoint and filter_custom_jvp")
def _():
    g = jax.grad(eqx.filter_checkpoint(lambda x: jnp.sin(x) ** 2))(1.0)
    assert abs(float(g) - np.sin(2.0)) < 1e-5

    @eqx.filter_custom_jvp
    def f(x):
        return x**2

    @f.def_jvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), 10 * t

    assert float(jax.grad(f)(3.0)) == 10.0


print("equinox checks passed:", len(results))
print("\n".join(results))
print("ALL OK")
