"""fjax.experimental.sparse.sparsify: dense-array functions evaluated on BCOO arguments.

Results are compared with the same function on the dense arrays (numpy / jnp). The error
messages for unsupported primitives are the ones JAX 0.10.2 prints (recorded in /tmp/jaxenv
with ``sparse.sparsify(jnp.cos)(BCOO.fromdense(M))`` and similar).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax.experimental import sparse
from fjax.experimental.sparse import BCOO, sparsify


def _rand_sparse(seed, shape, density=0.4):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    return np.where(rng.random(shape) < density, x, 0).astype(np.float32)


def _dense(x):
    return np.asarray(sparse.todense(x))


# each entry: (name, function) of one argument; all keep zeros at zero so sparsify keeps BCOO
_UNARY = [
    ("neg", lambda a: -a),
    ("sin", jnp.sin),
    ("abs", jnp.abs),
    ("sqrt_abs", lambda a: jnp.sqrt(jnp.abs(a))),
    ("tanh", jnp.tanh),
    ("scale", lambda a: a * 2.5),
    ("div", lambda a: a / 4.0),
    ("square", lambda a: a**2),
    ("expm1", jnp.expm1),
    ("astype", lambda a: a.astype(jnp.float32)),
]


@given(
    st.integers(0, 2**31 - 1),
    st.lists(st.sampled_from(range(len(_UNARY))), min_size=1, max_size=3),
    st.sampled_from(["none", "T", "sum0", "sum1", "reshape", "self_mul", "self_add", "matvec"]),
    st.integers(0, 1),
)
def test_sparsify_chains_match_dense(seed, ops, tail, n_batch):
    x = _rand_sparse(seed, (3, 4))
    v = np.random.default_rng(seed + 1).standard_normal(4).astype(np.float32)

    def f(a, v):
        for i in ops:
            a = _UNARY[i][1](a)
        if tail == "T":
            a = a.T if n_batch == 0 else a
        elif tail == "sum0":
            a = a.sum(0)
        elif tail == "sum1":
            a = jnp.sum(a, axis=1)
        elif tail == "reshape":
            a = a.reshape(3, 2, 2)
        elif tail == "self_mul":
            a = a * a
        elif tail == "self_add":
            a = a + a - jnp.negative(a)
        elif tail == "matvec":
            a = a @ v
        return a

    m = BCOO.fromdense(x, n_batch=n_batch)
    out = sparsify(f)(m, v)
    ref = np.asarray(f(jnp.asarray(x), jnp.asarray(v)))
    np.testing.assert_allclose(_dense(out), ref, rtol=1e-5, atol=1e-6)
    if tail != "matvec":
        assert isinstance(out, BCOO)  # zero-preserving chains stay sparse


def test_sparsify_jnp_functions():
    x = _rand_sparse(0, (4, 5))
    y = _rand_sparse(1, (4, 5))
    w = np.random.default_rng(2).standard_normal((5, 3)).astype(np.float32)
    m, my = BCOO.fromdense(x), BCOO.fromdense(y)
    cases = [
        (lambda a, b: jnp.dot(a, w), x @ w),
        (lambda a, b: jnp.matmul(a, w).sum(), (x @ w).sum()),
        (lambda a, b: jnp.mean(a), x.mean()),
        (lambda a, b: jnp.mean(a, axis=0), x.mean(0)),
        (lambda a, b: jnp.multiply(a, b).sum(1), (x * y).sum(1)),
        (lambda a, b: jnp.sqrt(jnp.sum(a * a)), np.sqrt((x * x).sum())),
        (lambda a, b: jnp.transpose(a) @ jnp.ones(4), x.T @ np.ones(4)),
        (lambda a, b: (a + b).T @ jnp.ones(4), (x + y).T @ np.ones(4)),
        (lambda a, b: jnp.expand_dims(a, 0).sum((0, 2)), x.sum(1)),
        (lambda a, b: a[None] * 2.0, x[None] * 2),
        (lambda a, b: jnp.concatenate([a, b], axis=0), np.concatenate([x, y], 0)),
        (lambda a, b: a @ b.T, x @ y.T),
    ]
    for f, ref in cases:
        np.testing.assert_allclose(_dense(sparsify(f)(m, my)), ref, rtol=2e-5, atol=2e-5)
    # pytrees in and out; dense arguments pass through
    out = sparsify(lambda d: {"s": d["a"] * 2.0, "n": d["b"].sum()})({"a": m, "b": jnp.ones(3)})
    assert isinstance(out["s"], BCOO) and float(out["n"]) == 3.0
    np.testing.assert_allclose(out["s"].todense(), 2 * x)
    # the JAX docs example: a sparsified dot inside a user function
    assert np.allclose(sparsify(lambda X, v: jnp.dot(X, v))(m, w[:, 0]), x @ w[:, 0], atol=1e-5)


def test_sparsify_unsupported_primitives_as_jax():
    m = BCOO.fromdense(jnp.array([[0.0, 2.0, 0.0], [1.0, 0.0, 4.0]]))
    with pytest.raises(NotImplementedError) as e:
        sparsify(jnp.cos)(m)
    assert str(e.value) == (
        "sparse rule for cos is not implemented because it would result in dense output. If this is your "
        "intent, use sparse.todense() to convert your arguments to dense matrices."
    )
    with pytest.raises(NotImplementedError, match="sparse rule for exp is not implemented because"):
        sparsify(jnp.exp)(m)
    with pytest.raises(NotImplementedError, match=r"^sparse rule for reduce_max is not implemented\.$"):
        sparsify(jnp.max)(m)
    with pytest.raises(NotImplementedError, match="sparse rule for gt"):
        _ = m > 0
    with pytest.raises(NotImplementedError, match="integer_pow with non-positive exponent"):
        m**0
    with pytest.raises(NotImplementedError, match="Addition between a sparse array X and a dense array Y"):
        sparsify(lambda a: a + 1.0)(m)
    with pytest.raises(NotImplementedError, match="use_tracer"):
        sparsify(jnp.sin, use_tracer=True)
    # with no sparse argument, sparsify is the identity transform
    assert float(sparsify(lambda a: jnp.exp(a).sum())(jnp.zeros(3))) == 3.0


def test_sparsify_jit_vmap_grad():
    x = _rand_sparse(5, (3, 4))
    w = np.random.default_rng(6).standard_normal(4).astype(np.float32)
    m = BCOO.fromdense(x, nse=7)

    def loss(a, w):
        return jnp.sum(jnp.sin(a * 2.0) @ w)

    f = sparsify(loss)
    ref = float(loss(jnp.asarray(x), w))
    assert np.isclose(float(fjax.jit(f)(m, w)), ref, rtol=1e-5)
    # gradient w.r.t. the stored values and the dense operand, against the dense computation
    gd, gw = fjax.grad(lambda d, w: f(BCOO((d, m.indices), shape=m.shape), w), argnums=(0, 1))(m.data, w)
    gx_dense, gw_dense = fjax.grad(loss, argnums=(0, 1))(jnp.asarray(x), w)
    idx = np.asarray(m.indices)
    valid = (idx < np.array(x.shape)).all(1)
    ref_gd = np.where(valid, np.asarray(gx_dense)[np.minimum(idx[:, 0], 2), np.minimum(idx[:, 1], 3)], 0)
    np.testing.assert_allclose(np.where(valid, gd, 0), ref_gd, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gw, gw_dense, rtol=1e-5, atol=1e-6)
    # finite differences on one stored value
    eps = 1e-3
    e = np.zeros(m.nse, np.float32)
    e[0] = eps
    fd = (
        float(f(BCOO((m.data + e, m.indices), shape=m.shape), w))
        - float(f(BCOO((m.data - e, m.indices), shape=m.shape), w))
    ) / (2 * eps)
    assert np.isclose(float(gd[0]), fd, rtol=2e-2, atol=2e-3)
    # vmap over a batched BCOO
    xb = np.stack([x, _rand_sparse(7, (3, 4))])
    mb = BCOO.fromdense(xb, n_batch=1)
    out = fjax.vmap(sparsify(lambda a, w: a @ w), in_axes=(0, None))(mb, w)
    np.testing.assert_allclose(out, xb @ w, rtol=1e-5, atol=1e-6)


def test_bcoo_methods_from_sparsify():
    x = _rand_sparse(8, (2, 3, 4))
    m = BCOO.fromdense(x, n_batch=1)
    np.testing.assert_allclose(m.sum(), x.sum(), rtol=1e-5)
    np.testing.assert_allclose(m.sum(axis=(1,)).todense(), x.sum(1), rtol=1e-5, atol=1e-6)
    assert m.reshape(2, 12).shape == (2, 12)
    np.testing.assert_array_equal(m.reshape(2, 12).todense(), x.reshape(2, 12))
    assert m.astype(jnp.int32).dtype == np.int32
    np.testing.assert_allclose(abs(m).todense(), np.abs(x))
    np.testing.assert_allclose((+m).todense(), x)
    np.testing.assert_allclose((m**3).todense(), x**3, rtol=1e-5)
    np.testing.assert_allclose((3.0 * m).todense(), 3 * x, rtol=1e-6)


def test_sparse_ad_as_jax():
    # reference values printed by JAX 0.10.2's sparse.value_and_grad / sparse.jacfwd on the same inputs
    X = BCOO.fromdense(jnp.arange(6.0))
    y = jnp.ones(6)
    v, g = sparse.value_and_grad(lambda X, y: X @ y)(X, y)
    assert float(v) == 15.0 and repr(g) == "BCOO(float32[6], nse=5)"
    np.testing.assert_array_equal(g.data, np.ones(5))
    np.testing.assert_array_equal(g.indices, X.indices)
    g0, g1 = sparse.grad(lambda X, y: (X @ y) ** 2, argnums=(0, 1))(X, y)
    np.testing.assert_array_equal(g0.data, np.full(5, 30.0))
    np.testing.assert_array_equal(g1, 30.0 * np.arange(6.0))
    g, aux = sparse.grad(lambda X: (X @ y, 5), has_aux=True)(X)
    assert aux == 5 and isinstance(g, BCOO)
    M = BCOO.fromdense(jnp.array([[0.0, 2.0, 0.0], [1.0, 0.0, 4.0]]))
    for jac in (sparse.jacfwd, sparse.jacrev):
        J = jac(lambda M: M @ jnp.arange(3.0))(M)
        assert repr(J) == "BCOO(float32[2, 2, 3], nse=3, n_batch=1)"
        np.testing.assert_array_equal(J.todense(), [[[0, 1, 0], [0, 0, 0]], [[0, 0, 0], [0, 0, 2]]])
    # against the dense gradient restricted to the stored entries, on random data
    x = _rand_sparse(11, (4, 3))
    w = np.random.default_rng(12).standard_normal(3).astype(np.float32)
    m = BCOO.fromdense(x)
    gs = sparse.grad(lambda m: jnp.sum(jnp.tanh(m @ w)))(m)
    gd = np.asarray(fjax.grad(lambda a: jnp.sum(jnp.tanh(a @ w)))(jnp.asarray(x)))
    np.testing.assert_allclose(gs.todense(), np.where(x != 0, gd, 0), rtol=1e-5, atol=1e-6)


def test_getitem_and_iter_as_jax():
    M = BCOO.fromdense(jnp.array([[0.0, 2.0, 0.0], [1.0, 0.0, 4.0]]))
    r = M[0]  # JAX 0.10.2: BCOO(float32[3], nse=3), data [2, 0, 0], indices [[1], [3], [3]]
    assert repr(r) == "BCOO(float32[3], nse=3)"
    np.testing.assert_array_equal(r.data, [2.0, 0.0, 0.0])
    np.testing.assert_array_equal(r.indices, [[1], [3], [3]])
    x = _rand_sparse(13, (3, 4, 2))
    m = BCOO.fromdense(x, n_batch=1)
    for idx in [(1,), (slice(1, None), slice(None, None, 2)), (None, -1), (slice(None), 2, 1), (Ellipsis, 0)]:
        np.testing.assert_array_equal(sparse.todense(m[idx]), x[idx])
    assert [r.shape for r in m] == [(4, 2)] * 3
    np.testing.assert_array_equal(np.stack([r.todense() for r in m]), x)


@given(st.integers(0, 2**31 - 1), st.integers(0, 1), st.integers(0, 2))
def test_integer_array_indexing_gather(seed, n_batch, which):
    rng = np.random.default_rng(seed)
    x = _rand_sparse(seed, (3, 4, 2))
    m = BCOO.fromdense(x, n_batch=n_batch)
    i = rng.integers(-3, 3, size=int(rng.integers(1, 4)))
    j = rng.integers(0, 4, size=i.shape)
    idx = [(jnp.asarray(i),), (slice(None), jnp.asarray(j)), (jnp.asarray(i), jnp.asarray(j))][which]
    ref = x[tuple(np.asarray(a) if not isinstance(a, slice) else a for a in idx)]
    np.testing.assert_array_equal(sparse.todense(m[idx]), ref)
    out = sparse.bcoo_gather(
        m,
        jnp.asarray(np.clip(i, 0, 2))[:, None],
        fjax.lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(0,), start_index_map=(0,)),
        (1, 4, 2),
    )
    np.testing.assert_array_equal(out.todense(), x[np.clip(i, 0, 2)])


def test_gather_as_jax():
    M = jnp.array([[0.0, 2.0, 0.0], [1.0, 0.0, 4.0]])
    m = BCOO.fromdense(M)
    r = m[jnp.array([1, 0, 1])]  # JAX 0.10.2: BCOO(float32[3, 3], nse=3, n_batch=1)
    assert repr(r) == "BCOO(float32[3, 3], nse=3, n_batch=1)"
    c = m[:, jnp.array([2, 0])]  # JAX 0.10.2: BCOO(float32[2, 2], nse=4)
    assert repr(c) == "BCOO(float32[2, 2], nse=4)"
    np.testing.assert_array_equal(c.todense(), [[0.0, 0.0], [4.0, 1.0]])
    with pytest.raises(NotImplementedError, match="bcoo_gather: mode=.*FILL_OR_DROP.* not yet supported"):
        sparsify(lambda a: jnp.take(a, jnp.array([1]), axis=0))(m)


def test_sparsify_control_flow():
    x = _rand_sparse(21, (3, 4))
    v = np.random.default_rng(22).standard_normal(4).astype(np.float32)
    m = BCOO.fromdense(x)
    lax = fjax.lax

    def f(a, p):
        return lax.cond(p, lambda a: a * 2.0, lambda a: -a, a)

    np.testing.assert_allclose(sparsify(f)(m, True).todense(), 2 * x)
    np.testing.assert_allclose(sparsify(f)(m, False).todense(), -x)
    g = sparsify(lambda a: lax.fori_loop(0, 3, lambda i, c: c * 2.0, a))(m)
    assert isinstance(g, BCOO)
    np.testing.assert_allclose(g.todense(), 8 * x)
    h = sparsify(lambda a: lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, jnp.sin(c[1])), (0, a))[1])(m)
    np.testing.assert_allclose(h.todense(), np.sin(np.sin(x)), rtol=1e-6)

    def scan_rows(a, v):  # scan over the batch dimension of a BCOO array
        return lax.scan(lambda c, row: (c + row @ v, row * 3.0), 0.0, a)

    c, ys = sparsify(scan_rows)(BCOO.fromdense(x, n_batch=1), v)
    np.testing.assert_allclose(c, (x @ v).sum(), rtol=1e-5)
    assert isinstance(ys, BCOO) and ys.n_batch == 1
    np.testing.assert_allclose(ys.todense(), 3 * x, rtol=1e-6)
    with pytest.raises(TypeError, match="same pytree structure"):  # branches change nse
        sparsify(lambda a: lax.cond(True, lambda a: a, lambda a: a + a, a))(m)


def test_sparsify_cache_follows_the_trace_context_and_threads():
    import threading

    m = sparse.BCOO.fromdense(np.eye(3, dtype=np.float32))
    f = sparse.sparsify(lambda m, x: m @ x + 1)
    np.testing.assert_array_equal(f(m, jnp.ones(3, jnp.int32)), [2, 2, 2])
    # a jaxpr traced with standard promotion is not reused under strict promotion (JAX's error)
    with fjax.numpy_dtype_promotion("strict"), pytest.raises(fjax.dtypes.TypePromotionError):
        f(m, jnp.ones(3, jnp.int32))
    outs, errs = [], []

    def run(k):
        try:
            outs.append(np.asarray(f(m * float(k), jnp.full(3, float(k)))))
        except Exception as e:  # noqa: BLE001
            errs.append(e)

    ts = [threading.Thread(target=run, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errs and sorted(o[0] for o in outs) == [k * k + 1 for k in range(8)]
