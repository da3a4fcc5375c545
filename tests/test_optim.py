"""fjax.optim: optimizers against their formulas (numpy, float64) and against optax's recorded
numbers (tests/data/optax_reference.json), schedules, jit, state pytrees."""

import json
import math
import pathlib

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import optim, tree_util

REF = json.loads((pathlib.Path(__file__).parent / "data" / "optax_reference.json").read_text())
STEPS = REF["steps"]


def params0():
    return {"w": np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2), "b": np.array([0.5, -0.25], np.float32)}


def grads(t):
    return {
        "w": (np.sin(np.arange(6, dtype=np.float32).reshape(3, 2) * 0.7 + t) * (t + 1) * 0.5).astype(np.float32),
        "b": np.cos(np.arange(2, dtype=np.float32) + 0.3 * t).astype(np.float32),
    }


def to_fjax(tree):
    return tree_util.tree_map(jnp.asarray, tree)


def to_np(tree):
    return tree_util.tree_map(lambda x: np.asarray(x, np.float64), tree)


def build(spec):
    def lr(v):
        if isinstance(v, dict):
            return getattr(optim, v["schedule"])(**v["kwargs"])
        return v

    if spec["name"] == "chain":
        return optim.chain(*[build(s) for s in spec["parts"]])
    kw = {k: lr(v) for k, v in spec.get("kwargs", {}).items()}
    return getattr(optim, spec["name"])(*[lr(a) for a in spec.get("args", [])], **kw)


def run(opt, steps=STEPS, jit=False):
    p = to_fjax(params0())
    s = opt.init(p)

    def step(p, s, g):
        u, s = opt.update(g, s, p)
        return optim.apply_updates(p, u), s

    if jit:
        step = fjax.jit(step)
    hist = []
    for t in range(steps):
        p, s = step(p, s, to_fjax(grads(t)))
        hist.append(to_np(p))
    return hist, s


def run_reference(update_fn, state, steps=STEPS):
    """Run a numpy float64 reference ``update_fn(g, p, state, t) -> (u, state)`` leaf-wise."""
    p = to_np(params0())
    hist = []
    for t in range(steps):
        g = to_np(grads(t))
        new_p = {}
        for k in p:
            u, state[k] = update_fn(g[k], p[k], state[k], t)
            new_p[k] = p[k] + u
        p = new_p
        hist.append(p)
    return hist


def assert_hist_close(got, want, rtol=2e-5, atol=1e-6):
    assert len(got) == len(want)
    for t, (a, b) in enumerate(zip(got, want)):
        for k in b:
            np.testing.assert_allclose(a[k], np.asarray(b[k]), rtol=rtol, atol=atol, err_msg=f"step {t}, leaf {k}")


# ------------------------------------------------------------------------------------------------
# against optax's recorded numbers
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(REF["optimizers"]))
def test_matches_optax_recording(name):
    rec = REF["optimizers"][name]
    hist, _ = run(build(rec["spec"]))
    assert_hist_close(hist, rec["params"])


@pytest.mark.parametrize("name", ["adam", "adamw", "sgd_nesterov", "rmsprop_centered_momentum", "adam_warmup_cosine"])
def test_jit_matches_eager_and_optax(name):
    rec = REF["optimizers"][name]
    hist, _ = run(build(rec["spec"]), jit=True)
    assert_hist_close(hist, rec["params"])


@pytest.mark.parametrize("name", sorted(REF["schedules"]))
def test_schedules_match_optax_recording(name):
    rec = REF["schedules"][name]
    kw = dict(rec["spec"]["kwargs"])
    if "boundaries_and_scales" in kw:
        kw["boundaries_and_scales"] = {int(k): v for k, v in kw["boundaries_and_scales"].items()}
    sched = getattr(optim, rec["spec"]["schedule"])(**kw)
    got = [float(np.asarray(sched(jnp.asarray(c, jnp.int32)))) for c in rec["counts"]]
    np.testing.assert_allclose(got, rec["values"], rtol=1e-6, atol=1e-7)
    jitted = fjax.jit(lambda c: jnp.asarray(sched(c), jnp.float32))
    got_jit = [float(np.asarray(jitted(jnp.asarray(c, jnp.int32)))) for c in rec["counts"]]
    np.testing.assert_allclose(got_jit, rec["values"], rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------------------------------------------
# against the formulas
# ------------------------------------------------------------------------------------------------


def _zeros_state(*names):
    return {k: {n: np.zeros_like(v, np.float64) for n in names} for k, v in to_np(params0()).items()}


@pytest.mark.parametrize("momentum,nesterov", [(None, False), (0.9, False), (0.9, True), (0.5, True)])
def test_sgd_formula(momentum, nesterov):
    lr = 0.05

    def ref(g, p, s, t):
        if momentum is None:
            return -lr * g, s
        tr = g + momentum * s["trace"]
        u = g + momentum * tr if nesterov else tr
        return -lr * u, {"trace": tr}

    want = run_reference(ref, _zeros_state("trace"))
    got, state = run(optim.sgd(lr, momentum=momentum, nesterov=nesterov))
    assert_hist_close(got, want)
    if momentum is not None:
        assert isinstance(state[0], optim.TraceState)


@pytest.mark.parametrize("nesterov", [False, True])
def test_adam_formula(nesterov):
    lr, b1, b2, eps, eps_root = 0.02, 0.8, 0.9, 1e-4, 1e-6

    def ref(g, p, s, t):
        n = t + 1
        mu = b1 * s["mu"] + (1 - b1) * g
        nu = b2 * s["nu"] + (1 - b2) * g * g
        if nesterov:
            mu_hat = b1 * mu / (1 - b1 ** (n + 1)) + (1 - b1) * g / (1 - b1**n)
        else:
            mu_hat = mu / (1 - b1**n)
        nu_hat = nu / (1 - b2**n)
        return -lr * mu_hat / (np.sqrt(nu_hat + eps_root) + eps), {"mu": mu, "nu": nu}

    want = run_reference(ref, _zeros_state("mu", "nu"))
    got, state = run(optim.adam(lr, b1, b2, eps, eps_root, nesterov=nesterov))
    assert_hist_close(got, want)
    adam_state = state[0]
    assert isinstance(adam_state, optim.ScaleByAdamState)
    assert adam_state.count.dtype == np.int32 and int(adam_state.count) == STEPS


def test_adamw_formula():
    lr, wd = 0.01, 0.3

    def ref(g, p, s, t):
        n = t + 1
        mu = 0.9 * s["mu"] + 0.1 * g
        nu = 0.999 * s["nu"] + 0.001 * g * g
        u = (mu / (1 - 0.9**n)) / (np.sqrt(nu / (1 - 0.999**n)) + 1e-8)
        return -lr * (u + wd * p), {"mu": mu, "nu": nu}

    want = run_reference(ref, _zeros_state("mu", "nu"))
    got, _ = run(optim.adamw(lr, weight_decay=wd))
    assert_hist_close(got, want)


def test_adamw_mask_skips_masked_leaves():
    lr, wd = 0.01, 0.3
    got, _ = run(optim.adamw(lr, weight_decay=wd, mask={"w": True, "b": False}))
    plain, _ = run(optim.adam(lr))
    decayed, _ = run(optim.adamw(lr, weight_decay=wd))
    np.testing.assert_allclose(got[-1]["b"], plain[-1]["b"], rtol=1e-6)
    np.testing.assert_allclose(got[-1]["w"], decayed[-1]["w"], rtol=1e-6)
    assert not np.allclose(plain[-1]["w"], decayed[-1]["w"])


@pytest.mark.parametrize("centered", [False, True])
@pytest.mark.parametrize("momentum", [None, 0.7])
def test_rmsprop_formula(centered, momentum):
    lr, decay, eps = 0.01, 0.85, 1e-6

    def ref(g, p, s, t):
        nu = decay * s["nu"] + (1 - decay) * g * g
        mu = decay * s["mu"] + (1 - decay) * g
        denom = nu - mu * mu if centered else nu
        u = -lr * g / np.sqrt(denom + eps)
        if momentum is not None:
            tr = u + momentum * s["trace"]
            return tr, {"nu": nu, "mu": mu, "trace": tr}
        return u, {"nu": nu, "mu": mu, "trace": s["trace"]}

    want = run_reference(ref, _zeros_state("nu", "mu", "trace"))
    got, _ = run(optim.rmsprop(lr, decay=decay, eps=eps, centered=centered, momentum=momentum))
    assert_hist_close(got, want, rtol=1e-4)


def test_adagrad_formula():
    lr, init, eps = 0.1, 0.2, 1e-7

    def ref(g, p, s, t):
        sos = s["sos"] + g * g
        return -lr * g / np.sqrt(sos + eps), {"sos": sos}

    state = {k: {"sos": np.full_like(v, init)} for k, v in to_np(params0()).items()}
    want = run_reference(ref, state)
    got, _ = run(optim.adagrad(lr, initial_accumulator_value=init, eps=eps))
    assert_hist_close(got, want)


def test_adagrad_zero_accumulator_gives_zero_update():
    opt = optim.adagrad(0.1, initial_accumulator_value=0.0)
    p = {"x": jnp.array([1.0, 2.0])}
    u, _ = opt.update({"x": jnp.array([0.0, 1.0])}, opt.init(p), p)
    assert np.asarray(u["x"])[0] == 0.0 and np.isfinite(np.asarray(u["x"])).all()


def test_clip_by_global_norm_and_global_norm():
    g = {"a": jnp.array([3.0, 0.0]), "b": (jnp.array([[4.0]]),)}
    np.testing.assert_allclose(optim.global_norm(g), 5.0)
    clip = optim.clip_by_global_norm(1.0)
    u, s = clip.update(g, clip.init(g))
    assert s == optim.EmptyState()
    np.testing.assert_allclose(u["a"], [0.6, 0.0], rtol=1e-6)
    np.testing.assert_allclose(u["b"][0], [[0.8]], rtol=1e-6)
    np.testing.assert_allclose(optim.global_norm(u), 1.0, rtol=1e-6)
    u2, _ = optim.clip_by_global_norm(10.0).update(g, optim.EmptyState())
    np.testing.assert_allclose(u2["a"], [3.0, 0.0])
    jitted = fjax.jit(lambda g: clip.update(g, optim.EmptyState())[0])
    np.testing.assert_allclose(jitted(g)["a"], [0.6, 0.0], rtol=1e-6)


def test_add_decayed_weights_scale_and_chain():
    p = {"x": jnp.array([1.0, -2.0])}
    g = {"x": jnp.array([0.5, 0.5])}
    t = optim.add_decayed_weights(0.1)
    u, _ = t.update(g, t.init(p), p)
    np.testing.assert_allclose(u["x"], [0.6, 0.3], rtol=1e-6)
    with pytest.raises(ValueError, match="params"):
        t.update(g, t.init(p))
    sched = optim.add_decayed_weights(lambda c: 0.1 * (c + 1))
    s = sched.init(p)
    _, s = sched.update(g, s, p)
    u, s = sched.update(g, s, p)
    np.testing.assert_allclose(u["x"], [0.7, 0.1], rtol=1e-6)
    ch = optim.chain(optim.scale(2.0), optim.clip(0.8), optim.scale(-1.0))
    u, s = ch.update({"x": jnp.array([0.1, 3.0])}, ch.init(p))
    assert isinstance(s, tuple) and len(s) == 3
    np.testing.assert_allclose(u["x"], [-0.2, -0.8], rtol=1e-6)
    u, _ = optim.identity().update(g, optim.EmptyState())
    np.testing.assert_allclose(u["x"], [0.5, 0.5])


def test_scale_by_schedule_uses_count_before_increment():
    t = optim.scale_by_schedule(lambda c: 10.0 * (c + 1))
    p = {"x": jnp.ones(2)}
    s = t.init(p)
    outs = []
    for _ in range(3):
        u, s = t.update(p, s)
        outs.append(float(np.asarray(u["x"])[0]))
    assert outs == [10.0, 20.0, 30.0]
    assert int(s.count) == 3


def test_schedule_formulas():
    lin = optim.linear_schedule(1.0, 0.0, 10, transition_begin=5)
    np.testing.assert_allclose([lin(c) for c in (0, 5, 10, 15, 20)], [1.0, 1.0, 0.5, 0.0, 0.0], atol=1e-7)
    cos = optim.cosine_decay_schedule(1.0, 8, alpha=0.2)
    for c in (0, 3, 8, 12):
        want = 0.2 + 0.8 * 0.5 * (1 + math.cos(math.pi * min(c, 8) / 8))
        np.testing.assert_allclose(cos(c), want, rtol=1e-6)
    exp = optim.exponential_decay(2.0, 4, 0.5, staircase=True)
    np.testing.assert_allclose([exp(c) for c in (0, 3, 4, 9)], [2.0, 2.0, 1.0, 0.5], rtol=1e-6)
    wc = optim.warmup_cosine_decay_schedule(0.0, 1.0, 4, 10, end_value=0.0)
    np.testing.assert_allclose([wc(c) for c in (0, 2, 4, 7, 10, 11)], [0, 0.5, 1.0, 0.5, 0.0, 0.0], atol=1e-6)
    j = optim.join_schedules([optim.constant_schedule(1.0), optim.linear_schedule(2.0, 0.0, 4)], [3])
    np.testing.assert_allclose([j(c) for c in (0, 2, 3, 5, 9)], [1.0, 1.0, 2.0, 1.0, 0.0], atol=1e-7)
    assert optim.constant_schedule(0.3)(jnp.asarray(5)) == 0.3
    with pytest.raises(ValueError):
        optim.cosine_decay_schedule(1.0, 0)


def test_apply_updates_keeps_dtype_and_structure():
    p = {"a": jnp.ones(2, jnp.float32), "n": (jnp.zeros(3, jnp.float32),)}
    u = {"a": jnp.array([0.5, 1.0], jnp.float32), "n": (jnp.ones(3, jnp.float32),)}
    out = optim.apply_updates(p, u)
    assert tree_util.tree_structure(out) == tree_util.tree_structure(p)
    assert out["a"].dtype == np.float32
    np.testing.assert_allclose(out["a"], [1.5, 2.0])


def test_states_are_pytrees_of_arrays():
    opt = optim.chain(optim.clip_by_global_norm(1.0), optim.adamw(optim.linear_schedule(0.1, 0.0, 10)))
    p = to_fjax(params0())
    s = opt.init(p)
    leaves = tree_util.tree_leaves(s)
    assert leaves and all(hasattr(x, "shape") for x in leaves)
    s2 = tree_util.tree_map(lambda x: x, s)
    assert tree_util.tree_structure(s2) == tree_util.tree_structure(s)


def test_safe_increment_saturates():
    big = jnp.array(np.iinfo(np.int32).max, jnp.int32)
    assert int(optim.safe_increment(big)) == np.iinfo(np.int32).max
    assert int(optim.safe_increment(jnp.array(4, jnp.int32))) == 5


def test_grad_of_quadratic_converges_under_jit():
    target = {"w": jnp.array([1.0, -2.0, 3.0]), "b": jnp.array(0.5)}

    def loss(p):
        return sum(jnp.sum((p[k] - target[k]) ** 2) for k in p)

    for opt in (optim.adam(0.1), optim.sgd(0.1, momentum=0.9), optim.rmsprop(0.05), optim.adagrad(0.5)):
        p = {"w": jnp.zeros(3), "b": jnp.array(0.0)}
        s = opt.init(p)

        @fjax.jit
        def step(p, s, opt=opt):
            g = fjax.grad(loss)(p)
            u, s = opt.update(g, s, p)
            return optim.apply_updates(p, u), s

        start = float(loss(p))
        for _ in range(100):
            p, s = step(p, s)
        assert float(loss(p)) < 0.05 * start
