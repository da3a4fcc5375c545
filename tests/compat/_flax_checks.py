"""Checks of flax (linen and nnx) on fjax, run by tests/compat/test_flax.py under
``python -m fjax.compat`` (``import jax`` is fjax). Each compares with numpy, finite differences
or a closed form computed from the parameters flax created."""

from __future__ import annotations

import flax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from _checks_common import checker, close, np_params, randn_from  # noqa: E402, F401
from flax import nnx, serialization, struct, traverse_util
from flax.training import train_state

key = jax.random.PRNGKey(0)
check, results, _ = checker()
rng = np.random.default_rng(0)
randn = randn_from(rng)


# ---- linen -------------------------------------------------------------------------------------


class MLP(nn.Module):
    features: tuple = (8, 3)

    @nn.compact
    def __call__(self, x):
        for i, f in enumerate(self.features):
            x = nn.Dense(f)(x)
            if i < len(self.features) - 1:
                x = nn.tanh(x)
        return x


@check("linen MLP forward")
def _():
    x = randn(4, 5)
    v = MLP().init(key, x)
    p = np_params(v["params"])
    h = np.tanh(x @ p["Dense_0"]["kernel"] + p["Dense_0"]["bias"])
    close(MLP().apply(v, x), h @ p["Dense_1"]["kernel"] + p["Dense_1"]["bias"])
    assert v["params"]["Dense_0"]["kernel"].shape == (5, 8)


@check("linen Conv against a direct convolution")
def _():
    x = randn(2, 6, 6, 3)
    conv = nn.Conv(4, (3, 3), padding="VALID")
    v = conv.init(key, x)
    k, b = np_params(v["params"])["kernel"], np_params(v["params"])["bias"]
    ref = np.zeros((2, 4, 4, 4))
    for i in range(4):
        for j in range(4):
            ref[:, i, j, :] = np.einsum("nhwc,hwco->no", x[:, i : i + 3, j : j + 3, :], k) + b
    close(conv.apply(v, x), ref, rtol=1e-4, atol=1e-4)


@check("linen BatchNorm: batch statistics and running averages")
def _():
    x = randn(16, 3) * 2 + 1
    bn = nn.BatchNorm(use_running_average=False, momentum=0.9, epsilon=1e-5)
    v = bn.init(key, x)
    y, upd = bn.apply(v, x, mutable=["batch_stats"])
    m, var = x.astype(np.float64).mean(0), x.astype(np.float64).var(0)
    close(y, (x - m) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-4)
    close(upd["batch_stats"]["mean"], 0.1 * m)
    close(upd["batch_stats"]["var"], 0.9 + 0.1 * var, rtol=1e-4)
    y_eval = nn.BatchNorm(use_running_average=True).apply({**v, **upd}, x)
    close(y_eval, (x - 0.1 * m) / np.sqrt(0.9 + 0.1 * var + 1e-5), rtol=1e-4, atol=1e-4)


@check("linen LayerNorm and Dropout")
def _():
    x = randn(3, 7)
    v = nn.LayerNorm().init(key, x)
    xd = x.astype(np.float64)
    close(
        nn.LayerNorm().apply(v, x),
        (xd - xd.mean(-1, keepdims=True)) / np.sqrt(xd.var(-1, keepdims=True) + 1e-6),
        rtol=1e-4,
    )
    d = nn.Dropout(0.5, deterministic=False)
    y = np.asarray(d.apply({}, jnp.ones((1000,)), rngs={"dropout": key}))
    assert set(np.unique(y)) <= {0.0, 2.0} and 400 < (y == 0).sum() < 600
    np.testing.assert_array_equal(nn.Dropout(0.5, deterministic=True).apply({}, x), x)


@check("TrainState + optax.sgd step equals the closed-form gradient step")
def _():
    X, w_true = randn(32, 4), randn(4, 1)
    y = X @ w_true
    model = nn.Dense(1, use_bias=False)
    params = model.init(key, X)["params"]
    st = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.sgd(0.1))

    @jax.jit
    def step(st):
        def loss(p):
            return jnp.mean((st.apply_fn({"params": p}, X) - y) ** 2)

        return st.apply_gradients(grads=jax.grad(loss)(st.params))

    w = np.asarray(params["kernel"], np.float64)
    st = step(st)
    Xd = X.astype(np.float64)
    w = w - 0.1 * (2 / 32) * Xd.T @ (Xd @ w - y)
    close(st.params["kernel"], w, rtol=1e-4)
    assert int(st.step) == 1


class Cell(nn.Module):
    @nn.compact
    def __call__(self, c, x):
        c = jnp.tanh(nn.Dense(4, name="wc")(c) + nn.Dense(4, name="wx")(x))
        return c, c


@check("linen nn.scan RNN equals the unrolled loop (and its gradient)")
def _():
    Scan = nn.scan(Cell, variable_broadcast="params", split_rngs={"params": False}, in_axes=1, out_axes=1)
    c0, xs = randn(2, 4), randn(2, 5, 3)
    v = Scan().init(key, c0, xs)
    p = np_params(v["params"])
    c, ys = Scan().apply(v, c0, xs)
    cr = c0.astype(np.float64)
    for t in range(5):
        cr = np.tanh(cr @ p["wc"]["kernel"] + p["wc"]["bias"] + xs[:, t] @ p["wx"]["kernel"] + p["wx"]["bias"])
        close(ys[:, t], cr, rtol=1e-4)
    close(c, cr, rtol=1e-4)
    g = jax.grad(lambda v: Scan().apply(v, c0, xs)[1].sum())(v)
    eps, k = 1e-3, np.asarray(v["params"]["wx"]["kernel"], np.float64)
    kp, km = k.copy(), k.copy()
    kp[1, 2] += eps
    km[1, 2] -= eps
    f = lambda kk: float(
        Scan()
        .apply(
            {"params": {**v["params"], "wx": {**v["params"]["wx"], "kernel": jnp.asarray(kk, jnp.float32)}}}, c0, xs
        )[1]
        .sum()
    )  # noqa: E731, E501
    assert abs((f(kp) - f(km)) / (2 * eps) - float(g["params"]["wx"]["kernel"][1, 2])) < 5e-3


@check("linen nn.vmap with per-member parameters, nn.remat gradient")
def _():
    VD = nn.vmap(nn.Dense, in_axes=0, out_axes=0, variable_axes={"params": 0}, split_rngs={"params": True})
    x = randn(3, 2, 5)
    v = VD(4).init(key, x)
    p = np_params(v["params"])
    assert p["kernel"].shape == (3, 5, 4) and not np.allclose(p["kernel"][0], p["kernel"][1])
    close(VD(4).apply(v, x), np.einsum("bnf,bfo->bno", x, p["kernel"]) + p["bias"][:, None], rtol=1e-4)
    R = nn.remat(MLP)
    x2 = randn(2, 5)
    v2 = MLP().init(key, x2)
    g1 = jax.grad(lambda v: R().apply(v, x2).sum())(v2)
    g2 = jax.grad(lambda v: MLP().apply(v, x2).sum())(v2)
    jax.tree.map(lambda a, b: close(a, b), g1, g2)


@check("linen LSTMCell through nn.RNN against the LSTM equations")
def _():
    rnn = nn.RNN(nn.LSTMCell(3))
    xs = randn(2, 4, 2)
    v = rnn.init(key, xs)
    p = np_params(v["params"]["cell"])
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    c = h = np.zeros((2, 3))
    for t in range(4):
        x = xs[:, t]
        gate = {g: x @ p["i" + g]["kernel"] + h @ p["h" + g]["kernel"] + p["h" + g]["bias"] for g in "ifgo"}
        c = sig(gate["f"]) * c + sig(gate["i"]) * np.tanh(gate["g"])
        h = sig(gate["o"]) * np.tanh(c)
    close(rnn.apply(v, xs)[:, -1], h, rtol=1e-4)


@check("linen MultiHeadDotProductAttention against numpy attention")
def _():
    x = randn(2, 5, 8)
    att = nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=8)
    v = att.init(key, x, x)
    p = np_params(v["params"])
    q, k, vv = (np.einsum("bsf,fhd->bshd", x, p[n]["kernel"]) + p[n]["bias"] for n in ("query", "key", "value"))
    logits = np.einsum("bqhd,bkhd->bhqk", q / np.sqrt(4), k)
    w = np.exp(logits - logits.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    o = np.einsum("bhqk,bkhd->bqhd", w, vv)
    ref = np.einsum("bqhd,hdf->bqf", o, p["out"]["kernel"]) + p["out"]["bias"]
    close(att.apply(v, x, x), ref, rtol=1e-4, atol=1e-4)


@check("serialization, struct.dataclass, traverse_util, eval_shape init")
def _():
    v = MLP().init(key, jnp.ones((1, 5)))
    b = serialization.to_bytes(v)
    v2 = serialization.from_bytes(jax.tree.map(jnp.zeros_like, v), b)
    jax.tree.map(lambda a, b: np.testing.assert_array_equal(a, b), v, v2)
    flat = traverse_util.flatten_dict(flax.core.unfreeze(v["params"]), sep="/")
    assert sorted(flat) == ["Dense_0/bias", "Dense_0/kernel", "Dense_1/bias", "Dense_1/kernel"]

    @struct.dataclass
    class S:
        a: jax.Array
        n: int = struct.field(pytree_node=False, default=3)

    s = jax.tree.map(lambda a: a * 2, S(jnp.ones(2)))
    assert s.n == 3 and float(s.a[0]) == 2.0
    shapes = jax.eval_shape(MLP().init, key, jnp.ones((1, 5)))
    assert shapes["params"]["Dense_1"]["kernel"].shape == (8, 3)
    lazy = MLP().lazy_init(key, jax.ShapeDtypeStruct((1, 5), jnp.float32))
    assert lazy["params"]["Dense_0"]["kernel"].shape == (5, 8)


@check("linen init with a typed key and a scan over typed rngs")
def _():
    class Noisy(nn.Module):
        @nn.compact
        def __call__(self, c, x):
            return c + jax.random.normal(self.make_rng("noise"), c.shape), x

    S = nn.scan(Noisy, variable_broadcast="params", split_rngs={"noise": True}, length=4)
    c, _ = S().apply({}, jnp.zeros(3), None, rngs={"noise": jax.random.key(1)})
    assert c.shape == (3,) and np.isfinite(np.asarray(c)).all() and float(jnp.abs(c).sum()) > 0


# ---- nnx ---------------------------------------------------------------------------------------


class Model(nnx.Module):
    def __init__(self, rngs):
        self.l1 = nnx.Linear(5, 8, rngs=rngs)
        self.bn = nnx.BatchNorm(8, momentum=0.9, rngs=rngs)
        self.l2 = nnx.Linear(8, 2, rngs=rngs)

    def __call__(self, x):
        return self.l2(nnx.relu(self.bn(self.l1(x))))


@check("nnx Linear forward and nnx.grad against finite differences")
def _():
    lin = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    x = randn(4, 3)
    k, b = np.asarray(lin.kernel[...], np.float64), np.asarray(lin.bias[...], np.float64)
    close(lin(x), x @ k + b)
    g = nnx.grad(lambda m: jnp.sum(jnp.sin(m(x))))(lin)
    close(g.kernel[...], x.T.astype(np.float64) @ np.cos(x @ k + b), rtol=1e-4)


@check("nnx.Optimizer(sgd) inside nnx.jit: the step and BatchNorm's running mean")
def _():
    m = Model(nnx.Rngs(0))
    opt = nnx.Optimizer(m, optax.sgd(0.05), wrt=nnx.Param)
    x, y = randn(16, 5), randn(16, 2)

    def loss(m):
        return jnp.mean((m(x) - y) ** 2)

    @nnx.jit
    def step(m, opt):
        l, g = nnx.value_and_grad(loss)(m)
        opt.update(m, g)
        return l

    k0 = np.asarray(m.l2.kernel[...], np.float64)
    h_mean = np.asarray(m.l1(x), np.float64).mean(0)
    g = nnx.grad(loss)(nnx.clone(m))
    l0 = float(loss(nnx.clone(m)))
    assert abs(float(step(m, opt)) - l0) < 1e-5
    close(m.l2.kernel[...], k0 - 0.05 * np.asarray(g.l2.kernel[...]), rtol=1e-5, atol=1e-6)
    close(m.bn.mean[...], 0.1 * h_mean, rtol=1e-4, atol=1e-6)
    assert int(opt.step[...]) == 1


@check("nnx split/merge/state round trip, eval mode, Dropout")
def _():
    m = Model(nnx.Rngs(1))
    gd, state = nnx.split(m)
    m2 = nnx.merge(gd, state)
    x = randn(3, 5)
    m.eval()
    m2.eval()
    close(m(x), m2(x))
    pure = nnx.to_pure_dict(nnx.state(m, nnx.Param))
    assert pure["l1"]["kernel"].shape == (5, 8)
    d = nnx.Dropout(0.25, rngs=nnx.Rngs(dropout=3))
    y = np.asarray(d(jnp.ones(4000)))
    assert np.all((y == 0) | np.isclose(y, 1 / 0.75)) and 800 < (y == 0).sum() < 1200


@check("nnx.scan over a cell equals the loop; nnx.vmap builds an ensemble")
def _():
    class RNNCell(nnx.Module):
        def __init__(self, rngs):
            self.l = nnx.Linear(4, 4, rngs=rngs)

        def __call__(self, c, x):
            c = jnp.tanh(self.l(c) + x)
            return c, c

    cell = RNNCell(nnx.Rngs(2))

    @nnx.scan(in_axes=(nnx.Carry, None, 0), out_axes=(nnx.Carry, 0))
    def run(c, cell, x):
        return cell(c, x)

    xs = randn(6, 4)
    c, ys = run(jnp.zeros(4), cell, xs)
    k, b = np.asarray(cell.l.kernel[...], np.float64), np.asarray(cell.l.bias[...], np.float64)
    cr = np.zeros(4)
    for t in range(6):
        cr = np.tanh(cr @ k + b + xs[t])
        close(ys[t], cr, rtol=1e-4)

    @nnx.vmap(in_axes=0, out_axes=0)
    def create(key):
        return nnx.Linear(3, 2, rngs=nnx.Rngs(key))

    ens = create(jax.random.split(jax.random.key(0), 5))
    assert ens.kernel[...].shape == (5, 3, 2)

    @nnx.vmap(in_axes=(0, None), out_axes=0)
    def fwd(m, x):
        return m(x)

    x = randn(7, 3)
    close(
        fwd(ens, x),
        np.einsum("nf,efo->eno", x, np.asarray(ens.kernel[...])) + np.asarray(ens.bias[...])[:, None],
        rtol=1e-4,
    )


@check("nnx.remat and nnx.jit give the plain gradient")
def _():
    m = Model(nnx.Rngs(4))
    m.eval()
    x = randn(3, 5)
    g1 = nnx.grad(lambda m: jnp.sum(nnx.remat(lambda m, x: m(x))(m, x)))(m)
    g2 = nnx.jit(nnx.grad(lambda m: jnp.sum(m(x))))(m)
    close(g1.l1.kernel[...], g2.l1.kernel[...], rtol=1e-4, atol=1e-6)


print(f"flax checks passed: {len(results)}")
for r in results:
    print("  ok:", r)
print("ALL OK")
