"""Checks of dm-haiku on fjax, run by tests/compat/test_haiku.py under ``python -m fjax.compat``
(``import jax`` is fjax). Each compares with numpy, finite differences or a closed form computed
from the parameters haiku created; the same script passes under JAX 0.10.2."""

from __future__ import annotations

import haiku as hk
import jax
import jax.numpy as jnp
import numpy as np
import optax
from _checks_common import checker, close, np_params, randn_from  # noqa: E402, F401

key = jax.random.PRNGKey(0)
# HAIKU_CHECKS_KEEP_GOING=1: report every failing check, not only the first
check, results, failures = checker("HAIKU_CHECKS_KEEP_GOING")
rng = np.random.default_rng(0)
randn = randn_from(rng)


def np_layer_norm(x, scale, offset, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = x.var(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * scale + offset


# ---- modules -----------------------------------------------------------------------------------


@check("Linear and nets.MLP forward")
def _():
    x = randn(4, 5)
    f = hk.without_apply_rng(hk.transform(lambda x: hk.nets.MLP([8, 3], activation=jnp.tanh)(x)))
    p = f.init(key, x)
    assert set(p) == {"mlp/~/linear_0", "mlp/~/linear_1"}, set(p)
    q = np_params(p)
    h = np.tanh(x @ q["mlp/~/linear_0"]["w"] + q["mlp/~/linear_0"]["b"])
    close(f.apply(p, x), h @ q["mlp/~/linear_1"]["w"] + q["mlp/~/linear_1"]["b"])
    # haiku's default initialiser: truncated normal with stddev 1/sqrt(fan_in), bias zero
    w = np.asarray(f.init(jax.random.PRNGKey(3), randn(2, 400))["mlp/~/linear_0"]["w"])
    assert np.all(np.abs(w) <= 2 / np.sqrt(400) + 1e-6) and np.all(q["mlp/~/linear_0"]["b"] == 0)
    assert 0.6 / 20 < w.std() < 1.0 / 20, w.std()


@check("Conv2D against a direct convolution (SAME padding, stride 2)")
def _():
    x = randn(2, 7, 7, 3)
    f = hk.without_apply_rng(hk.transform(lambda x: hk.Conv2D(4, 3, stride=2, padding="SAME")(x)))
    p = f.init(key, x)
    k, b = np_params(p)["conv2_d"]["w"], np_params(p)["conv2_d"]["b"]
    assert k.shape == (3, 3, 3, 4)
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    ref = np.zeros((2, 4, 4, 4))
    for i in range(4):
        for j in range(4):
            ref[:, i, j, :] = np.einsum("nhwc,hwco->no", xp[:, 2 * i : 2 * i + 3, 2 * j : 2 * j + 3, :], k) + b
    close(f.apply(p, x), ref, rtol=1e-4, atol=1e-4)


@check("BatchNorm: batch statistics, moving averages in state, test mode")
def _():
    def fwd(x, is_training):
        return hk.BatchNorm(create_scale=True, create_offset=True, decay_rate=0.9)(x, is_training)

    f = hk.without_apply_rng(hk.transform_with_state(fwd))
    x = randn(16, 3) * 2 + 1
    p, s = f.init(key, x, True)
    y, s2 = f.apply(p, s, x, True)
    close(y, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-4, atol=1e-4)
    mean_ema = s2["batch_norm/~/mean_ema"]
    # ExponentialMovingAverage with zero debiasing: after one update the average is the value
    close(mean_ema["average"], x.mean(0, keepdims=True), rtol=1e-5)
    close(s2["batch_norm/~/var_ema"]["average"], x.var(0, keepdims=True), rtol=1e-4)
    assert int(mean_ema["counter"]) == 1
    x2 = randn(16, 3)
    _, s3 = f.apply(p, s2, x2, True)
    # second update, debiased: (0.9*(1-0.9)*m1 + 0.1*m2) / (1-0.9**2)
    m1, m2 = x.mean(0), x2.mean(0)
    hidden = 0.9 * (1 - 0.9) * m1 + (1 - 0.9) * m2
    close(s3["batch_norm/~/mean_ema"]["average"][0], hidden / (1 - 0.9**2), rtol=1e-4, atol=1e-5)
    yt, _ = f.apply(p, s3, x2, False)
    mu = np.asarray(s3["batch_norm/~/mean_ema"]["average"])
    var = np.asarray(s3["batch_norm/~/var_ema"]["average"])
    close(yt, (x2 - mu) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-4)


@check("LayerNorm against numpy, gradient against finite differences")
def _():
    f = hk.without_apply_rng(hk.transform(lambda x: hk.LayerNorm(axis=-1, create_scale=True, create_offset=True)(x)))
    x = randn(3, 6)
    p = f.init(key, x)
    p = {"layer_norm": {"scale": jnp.asarray(randn(6)), "offset": jnp.asarray(randn(6))}}
    q = np_params(p)["layer_norm"]
    close(f.apply(p, x), np_layer_norm(x.astype(np.float64), q["scale"], q["offset"]), rtol=1e-4, atol=1e-4)
    c = randn(3, 6)

    def loss(x):
        return jnp.sum(f.apply(p, x) * c)

    g = np.asarray(jax.grad(loss)(jnp.asarray(x, jnp.float32)))
    xd = x.astype(np.float64)

    def nloss(x):
        return np.sum(np_layer_norm(x, q["scale"], q["offset"]) * c)

    eps = 1e-6
    for i, j in [(0, 0), (1, 3), (2, 5)]:
        e = np.zeros_like(xd)
        e[i, j] = eps
        close(g[i, j], (nloss(xd + e) - nloss(xd - e)) / (2 * eps), rtol=2e-3, atol=2e-3)


@check("dropout, next_rng_key and PRNGSequence")
def _():
    def fwd(x):
        return hk.dropout(hk.next_rng_key(), 0.5, x), hk.next_rng_key()

    f = hk.transform(fwd)
    x = jnp.ones((2000,), jnp.float32)
    p = f.init(key, x)
    assert p == {}
    (y, k2), (y_b, _) = f.apply(p, jax.random.PRNGKey(1), x), f.apply(p, jax.random.PRNGKey(2), x)
    y = np.asarray(y)
    assert set(np.unique(y)) <= {0.0, 2.0}, np.unique(y)
    assert 0.45 < np.mean(y == 0) < 0.55 and not np.array_equal(y, np.asarray(y_b))
    # the keys haiku hands out come from splitting the apply key (PRNGSequence semantics)
    seq = hk.PRNGSequence(jax.random.PRNGKey(1))
    k_a, k_b = next(seq), next(seq)
    assert not np.array_equal(np.asarray(k_a), np.asarray(k_b))
    keep = np.asarray(jax.random.bernoulli(k_a, 0.5, (2000,)))
    np.testing.assert_array_equal(y, np.where(keep, 2.0, 0.0))
    np.testing.assert_array_equal(np.asarray(k2), np.asarray(k_b))
    # without an rng key: a clear error from haiku
    try:
        f.apply(p, None, x)
    except ValueError as e:
        assert "rng" in str(e).lower()
    else:
        raise AssertionError("apply without a key must fail")


def np_lstm(p, xs, h, c):
    w, b = p["lstm/linear"]["w"], p["lstm/linear"]["b"]
    outs = []
    for x in xs:
        z = np.concatenate([x, h], -1) @ w + b
        i, g, f, o = np.split(z, 4, -1)
        sig = lambda a: 1 / (1 + np.exp(-a))  # noqa: E731
        c = sig(f + 1.0) * c + sig(i) * np.tanh(g)
        h = sig(o) * np.tanh(c)
        outs.append(h)
    return np.stack(outs), h, c


@check("LSTM with dynamic_unroll and static_unroll against a numpy LSTM")
def _():
    T, B, D, H = 5, 2, 3, 4

    def fwd(xs, dynamic):
        core = hk.LSTM(H)
        state = core.initial_state(B)
        unroll = hk.dynamic_unroll if dynamic else hk.static_unroll
        return unroll(core, xs, state)

    f = hk.without_apply_rng(hk.transform(fwd))
    xs = randn(T, B, D)
    p = f.init(key, xs, True)
    q = np_params(p)
    ref, h, c = np_lstm(q, xs.astype(np.float64), np.zeros((B, H)), np.zeros((B, H)))
    for dynamic in (True, False):
        out, state = f.apply(p, xs, dynamic)
        close(out, ref, rtol=1e-4, atol=1e-5)
        close(state.hidden, h, rtol=1e-4, atol=1e-5)
        close(state.cell, c, rtol=1e-4, atol=1e-5)
    out_j, _ = jax.jit(f.apply, static_argnums=2)(p, xs, True)
    close(out_j, ref, rtol=1e-4, atol=1e-5)


@check("MultiHeadAttention against numpy softmax attention")
def _():
    heads, ks, model = 2, 3, 5

    def fwd(q, k, v, mask):
        mha = hk.MultiHeadAttention(
            num_heads=heads, key_size=ks, model_size=model, w_init=hk.initializers.VarianceScaling(1.0)
        )
        return mha(q, k, v, mask=mask)

    f = hk.without_apply_rng(hk.transform(fwd))
    qx, kx, vx = randn(4, 6), randn(7, 6), randn(7, 6)
    mask = rng.random((heads, 4, 7)) < 0.8
    mask[..., 0] = True
    p = f.init(key, qx, kx, vx, mask)
    P = np_params(p)

    def proj(x, name):
        return (x @ P[f"multi_head_attention/{name}"]["w"] + P[f"multi_head_attention/{name}"]["b"]).reshape(
            x.shape[0], heads, ks
        )

    Q, K, V = proj(qx, "query"), proj(kx, "key"), proj(vx, "value")
    logits = np.einsum("thd,Thd->htT", Q, K) / np.sqrt(ks)
    logits = np.where(mask, logits, -1e30)
    w = np.exp(logits - logits.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    attn = np.einsum("htT,Thd->thd", w, V).reshape(4, heads * ks)
    ref = attn @ P["multi_head_attention/linear"]["w"] + P["multi_head_attention/linear"]["b"]
    close(f.apply(p, qx, kx, vx, mask), ref, rtol=1e-4, atol=1e-4)


@check("Embed lookup and one-hot mode")
def _():
    ids = np.array([[0, 3, 9], [2, 2, 1]])
    for mode in ("ARRAY_INDEX", "ONE_HOT"):
        f = hk.without_apply_rng(hk.transform(lambda i, m=mode: hk.Embed(10, 4, lookup_style=m)(i)))
        p = f.init(key, ids)
        table = np.asarray(p["embed"]["embeddings"])
        assert table.shape == (10, 4)
        close(f.apply(p, ids), table[ids])


# ---- haiku's lifted transforms --------------------------------------------------------------------


@check("hk.vmap (split_rng=False) shares parameters across the batch")
def _():
    def fwd(x):
        return hk.vmap(lambda r: hk.Linear(2)(r), split_rng=False)(x)

    f = hk.without_apply_rng(hk.transform(fwd))
    x = randn(5, 3)
    p = f.init(key, x)
    q = np_params(p)["linear"]
    assert q["w"].shape == (3, 2)
    close(f.apply(p, x), x @ q["w"] + q["b"])


@check("hk.scan carries state through a module with shared parameters")
def _():
    def fwd(xs):
        lin = hk.Linear(3, name="cell")

        def step(h, x):
            h = jnp.tanh(lin(jnp.concatenate([h, x])))
            return h, h.sum()

        return hk.scan(step, jnp.zeros(3), xs)

    f = hk.without_apply_rng(hk.transform(fwd))
    xs = randn(6, 2)
    p = f.init(key, xs)
    q = np_params(p)["cell"]
    h = np.zeros(3)
    sums = []
    for x in xs:
        h = np.tanh(np.concatenate([h, x]) @ q["w"] + q["b"])
        sums.append(h.sum())
    hT, ys = f.apply(p, xs)
    close(hT, h, rtol=1e-4)
    close(ys, sums, rtol=1e-4)


@check("hk.remat: same value and gradient as without")
def _():
    def fwd(x, use_remat):
        mlp = hk.nets.MLP([6, 1], activation=jnp.sin)
        return (hk.remat(mlp) if use_remat else mlp)(x).sum()

    f = hk.without_apply_rng(hk.transform(fwd))
    x = randn(3, 4)
    p = f.init(key, x, False)
    v0, g0 = jax.value_and_grad(f.apply)(p, x, False)
    v1, g1 = jax.value_and_grad(f.apply)(p, x, True)
    close(v0, v1)
    jax.tree.map(lambda a, b: close(a, b), g0, g1)
    q = np_params(p)
    h = np.sin(x @ q["mlp/~/linear_0"]["w"] + q["mlp/~/linear_0"]["b"])
    # d/db1 of sum(h @ w1 + b1) = batch size
    close(g1["mlp/~/linear_1"]["b"], [3.0])
    close(g1["mlp/~/linear_1"]["w"], h.sum(0)[:, None], rtol=1e-4)


@check("hk.cond, hk.fori_loop and hk.while_loop with modules and state")
def _():
    def fwd(x, pred):
        lin = hk.Linear(2, name="shared")
        y = hk.cond(pred, lambda v: lin(v), lambda v: -lin(v), x)
        counter = hk.get_state("n", [], jnp.int32, init=jnp.zeros)
        hk.set_state("n", counter + 1)
        z = hk.fori_loop(0, 3, lambda i, v: v * 2.0 + i, y)
        if hk.running_init():  # haiku refuses while_loop at init (it may not run)
            w = jnp.abs(z)
        else:
            w = hk.while_loop(lambda v: v.sum() < 100.0, lambda v: v + 10.0, jnp.abs(z))
        return y, z, w

    f = hk.without_apply_rng(hk.transform_with_state(fwd))
    x = randn(2)
    p, s = f.init(key, x, True)
    q = np_params(p)["shared"]
    lin = x @ q["w"] + q["b"]
    for pred, sign in ((True, 1.0), (False, -1.0)):
        (y, z, w), s2 = f.apply(p, s, x, pred)
        close(y, sign * lin, rtol=1e-5)
        zr = sign * lin
        for i in range(3):
            zr = zr * 2 + i
        close(z, zr, rtol=1e-5)
        wr = np.abs(zr)
        while wr.sum() < 100:
            wr = wr + 10
        close(w, wr, rtol=1e-5)
        assert int(s2["~"]["n"]) == 1


@check("experimental.lift: an inner transformed module's parameters live in the outer tree")
def _():
    inner = hk.transform(lambda x: hk.Linear(2)(x))

    def outer(x):
        init = hk.experimental.lift(inner.init, name="inner")
        params = init(hk.next_rng_key(), x)
        return inner.apply(params, None, x) + hk.Linear(2, name="outer_lin")(x)

    f = hk.transform(outer)
    x = randn(3, 4)
    p = f.init(key, x)
    assert set(p) == {"inner/linear", "outer_lin"}, set(p)
    q = np_params(p)
    ref = x @ q["inner/linear"]["w"] + q["inner/linear"]["b"] + x @ q["outer_lin"]["w"] + q["outer_lin"]["b"]
    close(f.apply(p, jax.random.PRNGKey(5), x), ref, rtol=1e-5)


@check("data_structures: partition, filter, merge, to_haiku_dict, tree_size, tree_bytes")
def _():
    f = hk.without_apply_rng(hk.transform(lambda x: hk.nets.MLP([4, 2])(x)))
    p = f.init(key, randn(1, 3))
    lin0, rest = hk.data_structures.partition(lambda m, n, v: m == "mlp/~/linear_0", p)
    assert set(lin0) == {"mlp/~/linear_0"} and set(rest) == {"mlp/~/linear_1"}
    ws = hk.data_structures.filter(lambda m, n, v: n == "w", p)
    assert all(set(v) == {"w"} for v in ws.values())
    merged = hk.data_structures.merge(lin0, rest)
    assert jax.tree.structure(merged) == jax.tree.structure(p)
    n = 3 * 4 + 4 + 4 * 2 + 2
    assert hk.data_structures.tree_size(p) == n
    assert hk.data_structures.tree_bytes(p) == 4 * n
    mapped = hk.data_structures.map(lambda m, n, v: v * 0 if n == "b" else v, p)
    assert float(jnp.abs(mapped["mlp/~/linear_1"]["b"]).sum()) == 0.0
    assert isinstance(hk.data_structures.to_haiku_dict(p), dict)


@check("layer_stack: stacked parameters, same as a numpy loop (also unrolled)")
def _():
    L, D = 4, 3

    def fwd(x, unroll):
        @hk.layer_stack(L, unroll=unroll)
        def body(x):
            return jnp.tanh(hk.Linear(D)(x))

        return body(x)

    f = hk.without_apply_rng(hk.transform(fwd))
    x = randn(2, D)
    p = f.init(key, x, 1)
    (name,) = p
    w, b = np.asarray(p[name]["w"], np.float64), np.asarray(p[name]["b"], np.float64)
    assert w.shape == (L, D, D) and b.shape == (L, D)
    assert not np.allclose(w[0], w[1])  # each layer initialised with its own key
    h = x.astype(np.float64)
    for i in range(L):
        h = np.tanh(h @ w[i] + b[i])
    close(f.apply(p, x, 1), h, rtol=1e-4)
    close(f.apply(p, x, 2), h, rtol=1e-4)


@check("GRU in a DeepRNN (with a Linear) against numpy")
def _():
    T, B, D, H = 4, 2, 3, 5

    def fwd(xs):
        core = hk.DeepRNN([hk.GRU(H), hk.Linear(2)])
        return hk.dynamic_unroll(core, xs, core.initial_state(B))

    f = hk.without_apply_rng(hk.transform(fwd))
    xs = randn(T, B, D)
    p = f.init(key, xs)
    q = np_params(p)
    wi, wh, bb = q["gru"]["w_i"], q["gru"]["w_h"], q["gru"]["b"]
    sig = lambda a: 1 / (1 + np.exp(-a))  # noqa: E731
    h = np.zeros((B, H))
    outs = []
    for x in xs.astype(np.float64):
        zr = x @ wi[:, : 2 * H] + h @ wh[:, : 2 * H] + bb[: 2 * H]
        z, r = sig(zr[:, :H]), sig(zr[:, H:])
        a = np.tanh(x @ wi[:, 2 * H :] + (r * h) @ wh[:, 2 * H :] + bb[2 * H :])
        h = (1 - z) * h + z * a
        outs.append(h @ q["linear"]["w"] + q["linear"]["b"])
    out, _ = f.apply(p, xs)
    close(out, np.stack(outs), rtol=1e-4, atol=1e-5)


@check("max_pool / avg_pool, GroupNorm and RMSNorm against numpy")
def _():
    x = randn(2, 6, 6, 4)

    def fwd(x):
        return (
            hk.max_pool(x, window_shape=2, strides=2, padding="VALID"),
            hk.avg_pool(x, window_shape=3, strides=3, padding="VALID"),
            hk.GroupNorm(groups=2)(x),
            hk.RMSNorm(axis=-1)(x),
        )

    f = hk.without_apply_rng(hk.transform(fwd))
    p = f.init(key, x)
    mx, av, gn, rn = f.apply(p, x)
    close(mx, x.reshape(2, 3, 2, 3, 2, 4).max(axis=(2, 4)))
    close(av, x.reshape(2, 2, 3, 2, 3, 4).mean(axis=(2, 4)), rtol=1e-5)
    g = x.astype(np.float64).reshape(2, 6, 6, 2, 2)
    gref = (g - g.mean(axis=(1, 2, 4), keepdims=True)) / np.sqrt(g.var(axis=(1, 2, 4), keepdims=True) + 1e-5)
    close(gn, gref.reshape(2, 6, 6, 4), rtol=1e-4, atol=1e-4)
    close(rn, x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-5), rtol=1e-4, atol=1e-5)


@check("hk.vmap(split_rng=True) draws a different dropout mask per row; hk.switch")
def _():
    def fwd(x, i):
        rows = hk.vmap(lambda r: hk.dropout(hk.next_rng_key(), 0.5, r), split_rng=True)(x)
        branches = [lambda v: v + 1.0, lambda v: v * 3.0, lambda v: -v]
        return rows, hk.switch(i, branches, x[0, :3])

    f = hk.transform(fwd)
    x = jnp.ones((4, 256), jnp.float32)
    rows, _ = f.apply({}, jax.random.PRNGKey(0), x, 0)
    rows = np.asarray(rows)
    assert set(np.unique(rows)) <= {0.0, 2.0}
    assert all(not np.array_equal(rows[0], rows[k]) for k in range(1, 4))
    for i, ref in enumerate([2.0, 3.0, -1.0]):
        close(f.apply({}, jax.random.PRNGKey(0), x, i)[1], [ref] * 3)


@check("multi_transform shares parameters; mixed_precision policy casts compute and output")
def _():
    import jmp

    def mt():
        enc = hk.Linear(3, name="enc")
        dec = hk.Linear(2, name="dec")

        def init(x):
            return dec(enc(x))

        return init, (lambda x: enc(x), lambda z: dec(z))

    f = hk.without_apply_rng(hk.multi_transform(mt))
    x = randn(2, 4)
    p = f.init(key, x)
    assert set(p) == {"enc", "dec"}
    encode, decode = f.apply
    q = np_params(p)
    z = encode(p, x)
    close(z, x @ q["enc"]["w"] + q["enc"]["b"])
    close(decode(p, z), np.asarray(z) @ q["dec"]["w"] + q["dec"]["b"], rtol=1e-5)
    policy = jmp.get_policy("params=float32,compute=float16,output=float32")
    hk.mixed_precision.set_policy(hk.Linear, policy)
    try:
        g = hk.without_apply_rng(hk.transform(lambda x: hk.Linear(3)(x)))
        p2 = g.init(key, x)
        y = g.apply(p2, x)
        assert p2["linear"]["w"].dtype == jnp.float32 and y.dtype == jnp.float32
        q2 = np_params(p2)["linear"]
        close(y, x @ q2["w"] + q2["b"], rtol=1e-2, atol=1e-2)
    finally:
        hk.mixed_precision.clear_policy(hk.Linear)


@check("experimental.eval_summary / tabulate name modules and shapes (also through jax.jit(f.init))")
def _():
    f = hk.transform(lambda x: hk.nets.MLP([5, 2])(x))
    x = jnp.ones((3, 4))
    summary = hk.experimental.eval_summary(f)(x)
    names = [s.module_details.module.module_name for s in summary]
    assert names == ["mlp", "mlp/~/linear_0", "mlp/~/linear_1"], names
    assert summary[1].output_spec.shape == (3, 5) and summary[0].output_spec.shape == (3, 2)
    t1 = hk.experimental.tabulate(f)(x)
    t2 = hk.experimental.tabulate(jax.jit(f.init))(x)  # called as the function f transformed
    assert "mlp/~/linear_0" in t1 and t1 == t2, (t1, t2)
    shapes = jax.eval_shape(f.init, jax.random.PRNGKey(0), x)
    assert shapes["mlp/~/linear_1"]["w"].shape == (5, 2)


# ---- training --------------------------------------------------------------------------------------


@check("training an MLP regressor with optax.adam under jax.jit")
def _():
    xs = randn(64, 2)
    ys = (np.sin(xs[:, :1]) + 0.5 * xs[:, 1:]).astype(np.float32)
    f = hk.without_apply_rng(hk.transform(lambda x: hk.nets.MLP([32, 1])(x)))
    p = f.init(key, xs)
    opt = optax.adam(1e-2)
    st = opt.init(p)

    def loss(p, x, y):
        return jnp.mean((f.apply(p, x) - y) ** 2)

    @jax.jit
    def step(p, st, x, y):
        l, g = jax.value_and_grad(loss)(p, x, y)
        u, st = opt.update(g, st, p)
        return optax.apply_updates(p, u), st, l

    # first gradient against finite differences on one weight
    g = jax.grad(loss)(p, xs, ys)
    eps = 1e-3
    w = np.asarray(p["mlp/~/linear_1"]["w"]).copy()

    def at(v):
        w2 = w.copy()
        w2[0, 0] = v
        q = hk.data_structures.to_mutable_dict(p)
        q["mlp/~/linear_1"]["w"] = jnp.asarray(w2)
        return float(loss(q, xs, ys))

    fd = (at(w[0, 0] + eps) - at(w[0, 0] - eps)) / (2 * eps)
    close(g["mlp/~/linear_1"]["w"][0, 0], fd, rtol=2e-2, atol=2e-3)
    l0 = float(loss(p, xs, ys))
    for _ in range(150):
        p, st, _l = step(p, st, xs, ys)
    l1 = float(loss(p, xs, ys))
    assert l1 < 0.1 * l0 and l1 < 0.05, (l0, l1)


print("haiku checks passed:", len(results))
for r in results:
    print("  ok:", r)
if not failures:
    print("ALL OK")
