"""lax.scan / lax.map: values against the equivalent Python loop under eager, jit, jvp, grad,
vmap and their compositions; partial evaluation (residuals only per step), errors, long scans."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import core
from fjax.interpreters import partial_eval as pe
from fjax.lax.control_flow.scan import map as lax_map
from fjax.lax.control_flow.scan import scan, scan_p
from fjax.test_util import check_grads

RTOL = 2e-5  # float32 forward values (same operations, same order)
GRTOL = 2e-3  # float32 gradients


def loop_scan(f, init, xs, length=None, reverse=False):
    """The reference semantics: a Python loop (unrolled under every transform)."""
    leaves, tree = fjax.tree_util.tree_flatten(xs)
    n = length if length is not None else leaves[0].shape[0]
    carry, ys = init, []
    order = range(n - 1, -1, -1) if reverse else range(n)
    for i in order:
        x = fjax.tree_util.tree_unflatten(tree, [v[i] for v in leaves])
        carry, y = f(carry, x)
        ys.append(y)
    if reverse:
        ys = ys[::-1]
    ys = fjax.tree_util.tree_map(lambda *a: jnp.stack(a), *ys) if ys else None
    return carry, ys


def close(a, b, rtol=RTOL, atol=1e-5):
    la, ta = fjax.tree_util.tree_flatten(a)
    lb, tb = fjax.tree_util.tree_flatten(b)
    assert ta == tb, (ta, tb)
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape, (x.shape, y.shape)
        assert x.dtype == y.dtype, (x.dtype, y.dtype)
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


def make_body(w):
    def body(c, x):
        h = jnp.tanh(c * w + x)
        return h, h * x + jnp.sin(c)

    return body


cases = st.tuples(
    st.integers(1, 5),  # length
    st.sampled_from([(), (3,)]),  # carry/x shape
    st.booleans(),  # reverse
    st.integers(0, 2**16),  # seed
)


def make_case(length, shape, seed):
    rng = np.random.RandomState(seed)
    init = jnp.asarray(rng.standard_normal(shape).astype(np.float32))
    xs = jnp.asarray(rng.randn(length, *shape).astype(np.float32))
    w = jnp.asarray(rng.standard_normal(shape).astype(np.float32))
    return init, xs, w


def run(scan_fn, reverse):
    def f(init, xs, w):
        c, ys = scan_fn(make_body(w), init, xs, reverse=reverse)
        return c, ys

    return f


def loss(scan_fn, reverse):
    def f(init, xs, w):
        c, ys = scan_fn(make_body(w), init, xs, reverse=reverse)
        return jnp.sum(c * c) + jnp.sum(jnp.cos(ys))

    return f


@given(cases)
def test_eager_and_jit_match_loop(case):
    length, shape, reverse, seed = case
    init, xs, w = make_case(length, shape, seed)
    want = run(loop_scan, reverse)(init, xs, w)
    close(run(scan, reverse)(init, xs, w), want)
    close(fjax.jit(run(scan, reverse))(init, xs, w), want)


@given(cases)
def test_jvp_matches_loop(case):
    length, shape, reverse, seed = case
    init, xs, w = make_case(length, shape, seed)
    tans = make_case(length, shape, seed + 1)
    want = fjax.jvp(run(loop_scan, reverse), (init, xs, w), tans)
    close(fjax.jvp(run(scan, reverse), (init, xs, w), tans), want, rtol=GRTOL)
    close(fjax.jvp(fjax.jit(run(scan, reverse)), (init, xs, w), tans), want, rtol=GRTOL)


@given(cases)
def test_grad_matches_loop(case):
    length, shape, reverse, seed = case
    init, xs, w = make_case(length, shape, seed)
    want = fjax.grad(loss(loop_scan, reverse), (0, 1, 2))(init, xs, w)
    close(fjax.grad(loss(scan, reverse), (0, 1, 2))(init, xs, w), want, rtol=GRTOL)
    close(fjax.grad(fjax.jit(loss(scan, reverse)), (0, 1, 2))(init, xs, w), want, rtol=GRTOL)
    close(fjax.jit(fjax.grad(loss(scan, reverse), (0, 1, 2)))(init, xs, w), want, rtol=GRTOL)


@given(cases)
def test_grad_of_grad_matches_loop(case):
    length, shape, reverse, seed = case
    init, xs, w = make_case(length, shape, seed)

    def second(scan_fn):
        def g(init, xs, w):
            return jnp.sum(fjax.grad(loss(scan_fn, reverse), 2)(init, xs, w))

        return fjax.grad(g, (0, 2))

    close(second(scan)(init, xs, w), second(loop_scan)(init, xs, w), rtol=GRTOL, atol=1e-4)


@given(cases, st.sampled_from(["xs", "init", "w", "all"]), st.sampled_from([0, 1]))
def test_vmap_matches_loop(case, which, axis):
    length, shape, reverse, seed = case
    init, xs, w = make_case(length, shape, seed)
    rng = np.random.RandomState(seed)
    args, in_axes = [init, xs, w], [None, None, None]
    for i, name in enumerate(["init", "xs", "w"]):
        if which in (name, "all"):
            a = axis if axis <= args[i].ndim else 0
            copies = [np.asarray(args[i]) + rng.standard_normal(args[i].shape).astype(np.float32) for _ in range(2)]
            args[i], in_axes[i] = jnp.asarray(np.stack(copies, a)), a
    in_axes = tuple(in_axes)
    want = fjax.vmap(run(loop_scan, reverse), in_axes)(*args)
    close(fjax.vmap(run(scan, reverse), in_axes)(*args), want)
    close(fjax.jit(fjax.vmap(run(scan, reverse), in_axes))(*args), want)
    gwant = fjax.vmap(fjax.grad(loss(loop_scan, reverse), (0, 1, 2)), in_axes)(*args)
    close(fjax.vmap(fjax.grad(loss(scan, reverse), (0, 1, 2)), in_axes)(*args), gwant, rtol=GRTOL, atol=1e-4)


def test_vmap_batched_xs_not_leading_axis():
    xs = jnp.asarray(np.arange(12.0, dtype=np.float32).reshape(3, 4))  # batch axis 1 of xs: 4 scans of length 3

    def f(xs):
        return scan(lambda c, x: (c + x, c * x), 0.0, xs)

    c, ys = fjax.vmap(f, in_axes=1)(xs)
    cw, yw = zip(*[loop_scan(lambda c, x: (c + x, c * x), 0.0, xs[:, k]) for k in range(4)])
    close(c, jnp.stack(cw))
    close(ys, jnp.stack(yw))
    # the carry is a scalar per example: out_axes=1 for it would be out of bounds (ValueError, as JAX)
    c2, ys2 = fjax.vmap(f, in_axes=1, out_axes=(0, 1))(xs)
    close(ys2, jnp.stack(yw).T)


def test_vmap_carry_becomes_batched_by_fixed_point():
    # the first carry is unbatched initially but gets a batched value from the second
    def f(x0):
        def body(c, _):
            a, b = c
            return (b, a + b), a

        return scan(body, (jnp.float32(0.0), x0), None, length=4)

    xs0 = jnp.arange(3.0)
    out = fjax.vmap(f)(xs0)
    want = [loop_scan(lambda c, _: ((c[1], c[0] + c[1]), c[0]), (jnp.float32(0.0), x), None, length=4) for x in xs0]
    close(out, fjax.tree_util.tree_map(lambda *a: jnp.stack(a), *want))


def test_jvp_tangent_carry_fixed_point():
    # only the second carry has a tangent initially; it flows into the first one
    def f(b0):
        return scan(lambda c, _: ((c[0] * 2.0 + c[1], c[1]), c[0]), (1.0, b0), None, length=3)

    def f_loop(b0):
        return loop_scan(lambda c, _: ((c[0] * 2.0 + c[1], c[1]), c[0]), (1.0, b0), None, length=3)

    close(fjax.jvp(f, (2.0,), (1.0,)), fjax.jvp(f_loop, (2.0,), (1.0,)))
    close(fjax.grad(lambda b: f(b)[0][0])(2.0), fjax.grad(lambda b: f_loop(b)[0][0])(2.0))


def tanh_rnn(params, h0, xs):
    W, U, b = params

    def step(h, x):
        h = jnp.tanh(h @ W + x @ U + b)
        return h, jnp.sum(h)

    h, ys = scan(step, h0, xs)
    return jnp.sum(h * h) + jnp.sum(ys)


def rnn_params(seed=0, n=4, d=3, T=5):
    rng = np.random.RandomState(seed)
    W = jnp.asarray((rng.randn(n, n) * 0.3).astype(np.float32))
    U = jnp.asarray(rng.randn(d, n).astype(np.float32))
    b = jnp.asarray((rng.randn(n) * 0.1).astype(np.float32))
    xs = jnp.asarray(rng.randn(T, d).astype(np.float32))
    h0 = jnp.asarray((rng.randn(n) * 0.1).astype(np.float32))
    return (W, U, b), h0, xs


def test_check_grads_tanh_rnn_order2():
    params, h0, xs = rnn_params()
    check_grads(tanh_rnn, (params, h0, xs), order=2, modes=("fwd", "rev"))


def test_check_grads_tanh_rnn_float64(x64):
    params, h0, xs = rnn_params(seed=1)
    params, h0, xs = fjax.tree_util.tree_map(lambda a: jnp.asarray(np.asarray(a, np.float64)), (params, h0, xs))
    check_grads(tanh_rnn, (params, h0, xs), order=2, modes=("fwd", "rev"))


def test_grad_stores_only_per_step_residuals():
    params, h0, xs = rnn_params(T=7)
    jaxpr = fjax.make_jaxpr(fjax.grad(tanh_rnn))(params, h0, xs).jaxpr
    scans = [e for e in jaxpr.eqns if e.primitive is scan_p]
    assert len(scans) == 2
    fwd, bwd = scans
    assert not fwd.params["reverse"] and bwd.params["reverse"]
    # the weights reach the backward scan as a const (not stacked per step)
    W = jaxpr.invars[0]
    assert W in bwd.invars[: bwd.params["num_consts"]]
    for v in fwd.outvars[fwd.params["num_carry"] :]:
        assert v.aval.shape[0] == 7 and v.aval.size <= 7 * 4  # per-step vectors only
    # the nested-jit path splits the same way
    jaxpr2 = fjax.make_jaxpr(fjax.grad(fjax.jit(tanh_rnn)))(params, h0, xs).jaxpr
    text = str(jaxpr2)
    assert text.count("scan[") == 2


def test_pytrees_carry_xs_ys():
    rng = np.random.RandomState(0)
    init = {"h": jnp.zeros(2), "n": jnp.int32(0)}
    xs = (jnp.asarray(rng.randn(4, 2).astype(np.float32)), {"s": jnp.arange(4.0)})

    def body(c, x):
        a, d = x
        h = c["h"] * 0.5 + a * d["s"]
        return {"h": h, "n": c["n"] + 1}, [h, {"sq": d["s"] ** 2}]

    close(scan(body, init, xs), loop_scan(body, init, xs))
    close(fjax.jit(lambda i, x: scan(body, i, x))(init, xs), loop_scan(body, init, xs))

    def lossf(xs, scan_fn):
        c, ys = scan_fn(body, init, xs)
        return jnp.sum(c["h"]) + jnp.sum(ys[0]) + jnp.sum(ys[1]["sq"])

    close(fjax.grad(lossf)(xs, scan), fjax.grad(lossf)(xs, loop_scan), rtol=GRTOL)


def test_length_only_and_reverse():
    c, ys = scan(lambda c, _: (c + 1, c * 2), 0, None, length=5)
    assert int(c) == 5
    np.testing.assert_array_equal(np.asarray(ys), [0, 2, 4, 6, 8])
    c, ys = scan(lambda c, x: (c + x, c), 0.0, jnp.arange(4.0), reverse=True)
    np.testing.assert_allclose(np.asarray(ys), [6.0, 5.0, 3.0, 0.0])
    assert float(c) == 6.0
    c, ys = scan(lambda c, x: (c, x), 1.0, jnp.zeros((0, 3)))
    assert ys.shape == (0, 3) and float(c) == 1.0
    g = fjax.grad(lambda w: scan(lambda c, _: (c * w, c), 1.0, None, length=4)[0])(2.0)
    np.testing.assert_allclose(float(g), 4 * 2.0**3)


def test_weak_typed_init_is_promoted():
    c, ys = scan(lambda c, x: (c + x, c), 0, jnp.arange(3.0))
    assert c.dtype == np.float32 and ys.dtype == np.float32
    assert float(c) == 3.0


def test_integer_carry_under_grad():
    def f(w):
        def body(c, x):
            i, acc = c
            return (i + 1, acc + w * x * i.astype(jnp.float32)), i

        return scan(body, (0, 0.0), jnp.arange(1.0, 4.0))[0][1]

    np.testing.assert_allclose(float(fjax.grad(f)(1.5)), 0 * 1 + 1 * 2 + 2 * 3)


def test_make_jaxpr_prints_scan_like_jax():
    text = str(fjax.make_jaxpr(lambda c, xs: scan(lambda c, x: (c * x, jnp.sin(c)), c, xs))(1.0, jnp.ones(5)))
    assert "scan[" in text
    for p in ("length=5", "num_carry=1", "num_consts=0", "reverse=False", "unroll=1", "jaxpr={ lambda"):
        assert p in text


def test_consts_closed_over_and_jvp_of_closure():
    w = jnp.asarray([0.5, -1.0])

    def f(w):
        return scan(lambda c, x: (c * w + x, c), jnp.ones(2), jnp.ones((3, 2)))[0]

    close(
        fjax.jvp(f, (w,), (jnp.ones(2),)),
        fjax.jvp(
            lambda w: loop_scan(lambda c, x: (c * w + x, c), jnp.ones(2), jnp.ones((3, 2)))[0], (w,), (jnp.ones(2),)
        ),
    )


def test_dce_rule_prunes_unused_outputs():
    def f(c, xs):
        return scan(lambda c, x: ((c[0] + x, c[1] * x), jnp.sin(x)), c, xs)[0][0]

    jaxpr = pe.dce_jaxpr(fjax.make_jaxpr(f)((1.0, 2.0), jnp.ones(3)).jaxpr)  # (make_jaxpr keeps dead code)
    (eqn,) = [e for e in jaxpr.eqns if e.primitive is scan_p]
    assert eqn.params["num_carry"] == 1 and len(eqn.outvars) == 1
    assert "sin" not in str(eqn.params["jaxpr"])
    closed = fjax.make_jaxpr(lambda c, xs: scan(lambda c, x: (c + x, c * x), c, xs))(1.0, jnp.ones(3))
    pruned = pe.dce_jaxpr(closed.jaxpr, [False, True])
    (e2,) = [e for e in pruned.eqns if e.primitive is scan_p]
    assert e2.params["num_carry"] == 1  # the carry feeds the used ys, so it stays


def test_long_scan_eager_and_jit():
    n = 10_000
    xs = jnp.ones(n)
    c, ys = scan(lambda c, x: (c + x, c), 0.0, xs)
    assert float(c) == n and ys.shape == (n,)
    c2, _ = fjax.jit(lambda xs: scan(lambda c, x: (c * 0.5 + x, c), 0.0, xs))(xs)
    np.testing.assert_allclose(float(c2), 2.0, rtol=1e-6)
    g = fjax.grad(lambda xs: scan(lambda c, x: (c * 0.5 + x, c), 0.0, xs)[0])(jnp.ones(2000))
    np.testing.assert_allclose(np.asarray(g)[-3:], [0.25, 0.5, 1.0])


def test_carry_type_mismatch_errors():
    def body(carry, x):
        return {"a": carry["a"], "b": carry["b"].astype(jnp.int32)}, x

    with pytest.raises(TypeError) as e:
        scan(body, {"a": 1.0, "b": jnp.ones(2)}, jnp.ones(3))
    msg = str(e.value)
    assert "scan body function carry input and carry output must have equal types" in msg
    assert "carry['b']" in msg and "float32[2]" in msg and "int32[2]" in msg and "dtypes do not match" in msg
    with pytest.raises(TypeError, match="shapes do not match"):
        scan(lambda c, x: (jnp.stack([c, c]), x), 1.0, jnp.ones(3))
    with pytest.raises(TypeError, match="same pytree structure"):
        scan(lambda c, x: ((c, c), x), 1.0, jnp.ones(3))
    with pytest.raises(TypeError, match="scan body output must be a pair"):
        scan(lambda c, x: c, 1.0, jnp.ones(3))


def test_length_errors():
    with pytest.raises(ValueError, match=r"^scan got values with different leading axis sizes: 3, 4\.$"):
        scan(lambda c, x: (c, x), 0.0, (jnp.ones(3), jnp.ones(4)))
    with pytest.raises(ValueError, match="disagrees with leading axis sizes"):
        scan(lambda c, x: (c, x), 0.0, jnp.ones(3), length=4)
    with pytest.raises(ValueError, match="no values to scan over"):
        scan(lambda c, x: (c, x), 0.0, None)
    with pytest.raises(ValueError, match="no leading axis"):
        scan(lambda c, x: (c, x), 0.0, 1.0)


def test_map():
    xs = jnp.arange(10.0)
    want = jnp.stack([jnp.sin(x) * 2 for x in xs])
    close(lax_map(lambda x: jnp.sin(x) * 2, xs), want)
    for bs in (0, 3, 5, 20):
        close(lax_map(lambda x: jnp.sin(x) * 2, xs, batch_size=bs), want)
    out = lax_map(lambda d: {"s": d["a"] + d["b"]}, {"a": jnp.ones((4, 2)), "b": jnp.ones((4, 2))}, batch_size=3)
    close(out, {"s": jnp.full((4, 2), 2.0)})
    close(fjax.grad(lambda xs: jnp.sum(lax_map(jnp.sin, xs)))(xs), jnp.cos(xs), rtol=GRTOL)


def test_scan_inside_jit_vmap_grad_primitive_stack():
    params, h0, xs = rnn_params(T=4)
    hs = jnp.stack([h0, h0 * 2, h0 * -1])
    per_example = fjax.jit(fjax.vmap(fjax.grad(tanh_rnn, 1), in_axes=(None, 0, None)))(params, hs, xs)
    for k in range(3):
        close(per_example[k], fjax.grad(tanh_rnn, 1)(params, hs[k], xs), rtol=GRTOL)
    assert core.get_aval(per_example).shape == (3, 4)


def test_loop_invariant_residuals_are_not_stacked():
    def f(lw, xs):
        return jnp.sum(scan(lambda c, x: (jnp.tanh(c * jnp.exp(lw) + x), c), jnp.ones(3), xs)[0])

    def f_loop(lw, xs):
        return jnp.sum(loop_scan(lambda c, x: (jnp.tanh(c * jnp.exp(lw) + x), c), jnp.ones(3), xs)[0])

    lw, xs = jnp.asarray([0.1, -0.2, 0.3]), jnp.ones((5, 3))
    jaxpr = pe.dce_jaxpr(fjax.make_jaxpr(fjax.grad(f))(lw, xs).jaxpr)  # (make_jaxpr keeps the unused ys)
    fwd = [e for e in jaxpr.eqns if e.primitive is scan_p][0]
    # the final carry and the residuals per step: the carry, tanh and 1 - tanh (those of JAX's tanh
    # JVP, as JAX's forward scan saves them); exp(lw) is recomputed from lw, not stacked
    assert len(fwd.outvars) == 4 and all(v.aval.shape == (5, 3) for v in fwd.outvars[1:])
    close(fjax.grad(f)(lw, xs), fjax.grad(f_loop)(lw, xs), rtol=GRTOL)
    close(fjax.grad(fjax.jit(f))(lw, xs), fjax.grad(f_loop)(lw, xs), rtol=GRTOL)
    check_grads(f, (lw, xs), order=2, modes=("rev",))
