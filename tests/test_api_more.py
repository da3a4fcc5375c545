"""The API around the core added for issue 14: lax extras (reduce, reduce_window, bit ops, ...),
nn activations, jax.ops, checkify, io_callback, tree/flatten_util/errors and top-level names."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.test_util import check_grads

floats = st.floats(-5, 5, allow_nan=False, width=32)
img = hnp.arrays(np.float32, st.tuples(st.integers(1, 6), st.integers(1, 6)), elements=floats)

_maxpool = fjax.jit(lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (1, 1), "SAME"))


def _np_reduce_window(x, init, op, window, strides, pads):
    xp = np.pad(x, pads, constant_values=init)
    out_shape = [(p - w) // s + 1 for p, w, s in zip(xp.shape, window, strides)]
    out = np.full(out_shape, init, x.dtype)
    for idx in np.ndindex(*out_shape):
        sl = tuple(slice(i * s, i * s + w) for i, s, w in zip(idx, strides, window))
        out[idx] = op(xp[sl])
    return out


@given(img, st.sampled_from([(1, 1), (2, 2), (3, 2)]), st.sampled_from([(1, 1), (2, 1)]))
def test_reduce_window_against_numpy(x, window, strides):
    for init, op, np_op in ((0.0, lax.add, np.sum), (-np.inf, lax.max, np.max), (np.inf, lax.min, np.min)):
        pads = [(0, 0), (0, 0)]
        if any(w > d for w, d in zip(window, x.shape)):
            continue
        got = lax.reduce_window(x, init, op, window, strides, "VALID")
        np.testing.assert_allclose(got, _np_reduce_window(x, init, np_op, window, strides, pads), rtol=1e-5, atol=1e-5)
    pads = [(1, 0), (0, 1)]
    got = lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), pads)
    np.testing.assert_allclose(got, _np_reduce_window(x, 0.0, np.sum, (2, 2), (1, 1), pads), rtol=1e-5, atol=1e-5)


def test_reduce_window_grads_and_vmap():
    x = jnp.asarray(np.random.RandomState(0).randn(5, 6).astype(np.float32))
    check_grads(lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 3), (1, 2), "SAME"), (x,), 2)
    check_grads(lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (2, 2), "VALID"), (x,), 1)
    np.testing.assert_allclose(_maxpool(x), lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (1, 1), "SAME"))
    batched = fjax.vmap(lambda r: lax.reduce_window(r, 0.0, lax.add, (2,), (1,), "VALID"))(x)
    np.testing.assert_allclose(batched, np.asarray(x)[:, 1:] + np.asarray(x)[:, :-1], rtol=1e-6)


@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=5), elements=floats), st.data())
def test_reduce_against_numpy(x, data):
    dims = data.draw(st.lists(st.integers(0, x.ndim - 1), unique=True, max_size=x.ndim))
    np.testing.assert_allclose(lax.reduce(x, 0.0, lax.add, dims), np.sum(x, tuple(dims)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(lax.reduce(x, -np.inf, lax.max, dims), np.max(x, tuple(dims), initial=-np.inf))
    s, m = lax.reduce((x, x), (0.0, -np.inf), lambda a, b: (a[0] + b[0], lax.max(a[1], b[1])), dims)
    np.testing.assert_allclose(m, np.max(x, tuple(dims), initial=-np.inf))


def test_reduce_grad():
    x = jnp.asarray(np.random.RandomState(1).randn(3, 4).astype(np.float32))
    check_grads(lambda x: lax.reduce(x, 1.0, lax.mul, (1,)), (x,), 1)


def test_small_lax_names():
    np.testing.assert_array_equal(lax.population_count(jnp.array([0, 7, -1], jnp.int32)), [0, 3, 32])
    np.testing.assert_array_equal(lax.clz(jnp.array([1, 256, 0], jnp.int32)), [31, 23, 32])
    np.testing.assert_array_equal(lax.clz(jnp.array([1, 128], jnp.uint8)), [7, 0])
    assert int(lax.bitcast_convert_type(jnp.float32(1.0), jnp.int32)) == 1065353216
    np.testing.assert_array_equal(lax.bitcast_convert_type(jnp.array([258], jnp.int32), jnp.uint8), [[2, 1, 0, 0]])
    np.testing.assert_array_equal(
        lax.bitcast_convert_type(jnp.array([[2, 1, 0, 0]], jnp.uint8), jnp.int32), np.array([258], np.int32)
    )
    z = lax.complex(jnp.array([1.0, 2.0]), jnp.array([3.0, -1.0]))
    assert z.dtype == jnp.complex64 and complex(z[0]) == 1 + 3j
    with pytest.raises(TypeError):
        lax.complex(jnp.array([1.0]), jnp.array([1], jnp.int32))
    parts = lax.split(jnp.arange(6), (1, 2, 3))
    assert [p.shape for p in parts] == [(1,), (2,), (3,)]
    with pytest.raises(ValueError):
        lax.split(jnp.arange(6), (1, 2))
    assert lax.collapse(jnp.ones((2, 3, 4)), 1).shape == (2, 12)
    assert lax.tile(jnp.ones((2,)), (2, 3)).shape == (2, 6)
    assert lax.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert lax.batch_matmul(jnp.ones((2, 3, 4)), jnp.ones((2, 4, 5))).shape == (2, 3, 5)
    assert lax.Precision("highest") is lax.Precision.HIGHEST
    v, i = lax.approx_max_k(jnp.array([3.0, 1.0, 4.0, 1.5]), 2)
    np.testing.assert_array_equal(i, [2, 0])
    # JAX's transpose of complex: (real(ct), -imag(ct))
    _, f_vjp = fjax.vjp(lax.complex, jnp.array([1.0]), jnp.array([2.0]))
    gx, gy = f_vjp(jnp.array([3.0 + 5.0j], jnp.complex64))
    assert float(gx[0]) == 3.0 and float(gy[0]) == -5.0


@given(hnp.arrays(np.float32, st.integers(1, 8), elements=floats))
def test_nn_activations(x):
    from fjax import nn

    x64 = x.astype(np.float64)
    sp = np.log1p(np.exp(x64))
    np.testing.assert_allclose(nn.mish(x), x64 * np.tanh(sp), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(nn.squareplus(x), (x64 + np.sqrt(x64**2 + 4)) / 2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        nn.sparse_plus(x), np.where(x64 <= -1, 0, np.where(x64 >= 1, x64, (x64 + 1) ** 2 / 4)), rtol=1e-6
    )
    np.testing.assert_allclose(nn.sparse_sigmoid(x), np.clip((x64 + 1) / 2, 0, 1), rtol=1e-6)
    pos = np.abs(x64) + 1e-3
    np.testing.assert_allclose(nn.log1mexp(pos.astype(np.float32)), np.log(-np.expm1(-pos)), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(nn.logmeanexp(x), np.log(np.mean(np.exp(x64))), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(nn.identity(x), x)


def test_nn_grads():
    from fjax import nn

    x = jnp.array([-1.5, -0.3, 0.4, 2.0])
    for f in (nn.mish, nn.squareplus, nn.sparse_plus, lambda x: nn.log1mexp(jnp.abs(x) + 0.1)):
        check_grads(f, (x,), 1)


def test_segment_ops():
    from fjax import ops

    data = jnp.array([1.0, 2.0, 3.0, 4.0, 5.0])
    ids = jnp.array([0, 0, 2, 2, 5])
    np.testing.assert_array_equal(ops.segment_sum(data, ids, 4), [3.0, 0.0, 7.0, 0.0])
    np.testing.assert_array_equal(ops.segment_prod(data, ids, 3), [2.0, 1.0, 12.0])
    np.testing.assert_array_equal(ops.segment_max(data, ids, 3), [2.0, -np.inf, 4.0])
    np.testing.assert_array_equal(ops.segment_min(data, ids), [1.0, np.inf, 3.0, np.inf, np.inf, 5.0])
    check_grads(lambda d: ops.segment_sum(d, ids, 3), (data,), 1)
    jitted = fjax.jit(lambda d: ops.segment_sum(d, ids, num_segments=3))
    np.testing.assert_array_equal(jitted(data), [3.0, 0.0, 7.0])


def test_checkify_user_and_automatic_checks():
    from fjax.experimental import checkify

    def f(x):
        checkify.check(x > 0, "x must be positive, got {}", x)
        return jnp.log(x)

    err, out = checkify.checkify(f)(-1.0)
    assert err.get() == "x must be positive, got -1.0 (`check` failed)"  # JAX's wording
    with pytest.raises(checkify.JaxRuntimeError, match="positive"):
        err.throw()
    err, out = fjax.jit(checkify.checkify(f))(2.0)
    assert err.get() is None and abs(float(out) - np.log(2.0)) < 1e-6
    err, _ = fjax.vmap(checkify.checkify(f))(jnp.array([1.0, -2.0]))
    assert "got -2.0" in err.get()
    err, _ = checkify.checkify(lambda x: jnp.log(x), errors=checkify.float_checks)(-1.0)
    assert err.get() == "nan generated by primitive: log."
    err, _ = checkify.checkify(lambda x, y: x // y, errors=checkify.float_checks)(1, 0)
    assert err.get() == "division by zero"
    # checkify's JaxRuntimeError is a ValueError (as JAX's; chex catches it as one)
    assert issubclass(checkify.JaxRuntimeError, ValueError)
    with pytest.raises(checkify.JaxRuntimeError, match="positive"):
        f(-1.0)
    with pytest.raises(checkify.JaxRuntimeError, match="positive"):
        fjax.jit(f)(-1.0)
    # index checks are implemented now (tests/test_eco_more.py); a function without indexing passes
    assert checkify.checkify(f, errors=checkify.index_checks)(1.0)[0].get() is None


def test_io_callback_effects():
    from fjax.experimental import io_callback

    log = []

    def cb(x):
        log.append(np.asarray(x).copy())
        return np.asarray(x) * 2

    f = fjax.jit(lambda x: (io_callback(cb, fjax.ShapeDtypeStruct((3,), jnp.float32), x), x + 1)[1])
    np.testing.assert_array_equal(f(jnp.ones(3)), 2 * np.ones(3))
    assert len(log) == 1  # kept although its result is unused
    out = fjax.vmap(lambda x: io_callback(cb, fjax.ShapeDtypeStruct((), jnp.float32), x))(jnp.arange(3.0))
    np.testing.assert_array_equal(out, [0.0, 2.0, 4.0])
    assert len(log) == 4
    with pytest.raises(ValueError, match="ordered"):
        fjax.vmap(lambda x: io_callback(cb, fjax.ShapeDtypeStruct((), jnp.float32), x, ordered=True))(jnp.ones(2))


def test_tree_flatten_util_errors():
    from fjax import flatten_util, tree

    t = {"a": jnp.ones((2, 2)), "b": (jnp.arange(3), 1.5)}
    assert tree.leaves(t) == fjax.tree_util.tree_leaves(t)
    assert tree.map(lambda x: x, t)["b"][1] == 1.5
    assert tree.reduce_associative(lambda a, b: a + b, [1, 2, 3, 4, 5]) == 15
    assert tree.broadcast(1, {"x": (2, 3)}) == {"x": (1, 1)}
    flat, unravel = flatten_util.ravel_pytree(t)
    assert flat.shape == (8,) and flat.dtype == jnp.float32
    back = unravel(flat)
    assert back["b"][0].dtype == jnp.int32
    np.testing.assert_array_equal(back["a"], np.ones((2, 2)))
    g = fjax.grad(lambda f: (unravel(f)["a"] ** 2).sum())(flat)
    np.testing.assert_array_equal(g[:4], 2 * np.ones(4))
    with pytest.raises(fjax.errors.ConcretizationTypeError):
        fjax.jit(lambda x: int(x))(1)
    with pytest.raises(fjax.errors.JAXTypeError):
        fjax.jit(lambda x: bool(x))(1)
    with pytest.raises(fjax.errors.NonConcreteBooleanIndexError):
        fjax.jit(lambda x: x[x > 0])(jnp.ones(2))


def test_grad_of_real_function_of_complex_input():
    # JAX's convention: grad(f)(z) = df/dx - i df/dy for real f of z = x + iy
    z = jnp.array([3.0 + 4.0j, 1.0 - 2.0j])
    np.testing.assert_allclose(fjax.grad(lambda z: jnp.sum(jnp.abs(z) ** 2))(z), 2 * np.conj(np.asarray(z)), rtol=1e-6)
    np.testing.assert_allclose(fjax.grad(lambda z: jnp.sum(jnp.real(z) ** 2 + 3 * jnp.imag(z)))(z), [6 - 3j, 2 - 3j])
    np.testing.assert_allclose(fjax.grad(lambda z: z**2, holomorphic=True)(3.0 + 4.0j), 6 + 8j)
    with pytest.raises(TypeError, match="real-valued outputs"):
        fjax.grad(lambda z: z**2)(3.0 + 4.0j)
    with pytest.raises(TypeError, match="holomorphic=True requires inputs with complex"):
        fjax.grad(lambda x: x**2, holomorphic=True)(3.0)


def test_vjp_function_is_a_pytree_that_jit_accepts():
    y, f_vjp = fjax.vjp(lambda x: jnp.sin(x) * x, jnp.arange(3.0))
    assert isinstance(f_vjp, fjax.tree_util.Partial)
    direct = f_vjp(jnp.ones(3))[0]
    via_jit = fjax.jit(lambda f, c: f(c))(f_vjp, jnp.ones(3))[0]
    np.testing.assert_allclose(direct, via_jit, rtol=1e-6)
    x = np.arange(3.0, dtype=np.float32)
    np.testing.assert_allclose(direct, np.sin(x) + x * np.cos(x), rtol=1e-5)


def test_vmap_custom_node_with_none_aux_data():
    class P:
        def __init__(self, a):
            self.a = a

    fjax.tree_util.register_pytree_node(P, lambda p: ((p.a,), None), lambda aux, ch: P(*ch))
    x = jnp.arange(3.0)
    np.testing.assert_array_equal(fjax.vmap(lambda p: p.a * 2)(P(x)), 2 * x)
    np.testing.assert_array_equal(fjax.vmap(lambda x: P(x * 2))(x).a, 2 * x)
    np.testing.assert_array_equal(fjax.vmap(lambda p: p.a, in_axes=(P(0),))(P(x)), x)
    np.testing.assert_array_equal(fjax.vmap(lambda p: p.a, in_axes=(P(None),), axis_size=2)(P(x)), [x, x])


def test_eager_mean_std_match_jit_accuracy():
    x = np.random.RandomState(0).randn(20000, 4).astype(np.float32) * 3 + 10
    x64 = x.astype(np.float64)
    ref = (x64 - x64.mean(0)) / x64.std(0)
    f = lambda x: (x - jnp.mean(x, 0)) / jnp.std(x, 0)  # noqa: E731
    err = np.abs(np.asarray(f(jnp.asarray(x))) - ref).max() / np.abs(ref).max()
    assert err < 1e-6


def test_top_level_names():
    x = jnp.ones(3)
    assert str(fjax.typeof(x).str_short()) == "f32[3]"
    assert fjax.ShapeDtypeStruct.like(x) == fjax.ShapeDtypeStruct((3,), jnp.float32)
    (t,) = fjax.linear_transpose(lambda v: 2 * v + v.sum(), x)(jnp.ones(3))
    np.testing.assert_array_equal(t, [5.0, 5.0, 5.0])
    with fjax.enable_x64(True):
        assert jnp.ones(1).dtype == jnp.float64
    assert jnp.ones(1).dtype == jnp.float32
    assert fjax.jacobian is fjax.jacrev

    @fjax.custom_gradient
    def f(x):
        return jnp.sin(x), lambda g: g * 100 * jnp.cos(x)

    assert float(fjax.grad(f)(0.0)) == 100.0
    assert float(fjax.jit(fjax.grad(f))(0.0)) == 100.0
    conv, consts = fjax.closure_convert(lambda v: v * 3.0, x)
    np.testing.assert_array_equal(conv(x, *consts), 3 * np.ones(3))
    with fjax.named_scope("block"), fjax.default_device(fjax.devices()[0]):
        assert fjax.named_call(jnp.sin)(0.0) == 0.0
    fjax.effects_barrier()


def test_typed_keys_work_where_raw_keys_do():
    from fjax import random

    k = random.key(0)
    raw = random.PRNGKey(0)
    assert jnp.issubdtype(k.dtype, fjax.dtypes.prng_key) and not jnp.issubdtype(jnp.float32, fjax.dtypes.prng_key)
    ks = random.split(k, 3)
    np.testing.assert_array_equal(random.key_data(ks), random.split(raw, 3))
    np.testing.assert_array_equal(random.key_data(random.fold_in(k, 7)), random.fold_in(raw, 7))
    for sample in (
        lambda key: random.normal(key, (3,)),
        lambda key: random.uniform(key, (2,)),
        lambda key: random.randint(key, (2,), 0, 10),
        lambda key: random.bernoulli(key, 0.3, (4,)),
        lambda key: random.permutation(key, 5),
    ):
        np.testing.assert_array_equal(sample(ks[1]), sample(random.split(raw, 3)[1]))
    per_key = fjax.vmap(lambda key: random.normal(key, ()))(ks)
    np.testing.assert_array_equal(per_key, [random.normal(kk, ()) for kk in random.split(raw, 3)])
    out = fjax.jit(lambda key: random.split(key))(k)
    assert out.shape == (2,) and out.dtype == k.dtype
    total, _ = fjax.lax.scan(lambda c, key: (c + random.uniform(key), None), 0.0, ks)
    assert abs(float(total) - float(sum(random.uniform(kk) for kk in random.split(raw, 3)))) < 1e-6
    assert [kk.shape for kk in ks] == [(), (), ()]
    assert bool(ks[0] == ks[0]) and not bool(ks[0] == ks[1])


def test_example_libraries_train_a_small_cnn():
    from fjax import random
    from fjax.example_libraries import optimizers, stax

    init, apply = stax.serial(
        stax.Conv(3, (3, 3), padding="SAME"),
        stax.Relu,
        stax.MaxPool((2, 2), (2, 2)),
        stax.Flatten,
        stax.Dense(2),
        stax.LogSoftmax,
    )
    out_shape, params = init(random.key(0), (4, 4, 4, 1))
    assert out_shape == (4, 2)
    x = random.normal(random.key(1), (4, 4, 4, 1))
    y = jnp.array([0, 1, 0, 1])
    loss = lambda p: -jnp.mean(apply(p, x)[jnp.arange(4), y])  # noqa: E731
    opt_init, opt_update, get_params = optimizers.adam(0.05)
    step = fjax.jit(lambda i, st: opt_update(i, fjax.grad(loss)(get_params(st)), st))
    state = opt_init(params)
    first = float(loss(params))
    for i in range(30):
        state = step(i, state)
    assert float(loss(get_params(state))) < 0.5 * first
    packed = optimizers.pack_optimizer_state(optimizers.unpack_optimizer_state(state))
    assert fjax.tree_util.tree_structure(packed) == fjax.tree_util.tree_structure(state)
    sched = optimizers.piecewise_constant([10, 20], [1.0, 0.5, 0.1])
    assert float(sched(15)) == 0.5 and abs(float(optimizers.polynomial_decay(1.0, 10, 0.1)(5)) - 0.55) < 1e-6
