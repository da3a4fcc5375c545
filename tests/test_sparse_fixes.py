"""fjax.experimental.sparse: custom_jvp/custom_vjp functions under ``sparsify``, ``vmap`` over
BCOO arguments with in_axes/out_axes other than 0, and ``random_bcoo``'s dtype warnings, each
against JAX 0.10.2's behaviour (recorded where JAX itself fails, see the comments)."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax.experimental import sparse


@fjax.custom_jvp
def _sq(x, c):
    return x * x * c


@_sq.defjvp
def _sq_jvp(primals, tangents):
    (x, c), (tx, tc) = primals, tangents
    return _sq(x, c), 2 * x * tx * c + x * x * tc


@fjax.custom_jvp
def _odd_sin(x):  # a deliberately "wrong" rule: the tangent shows whether the rule was used
    return jnp.sin(x)


@_odd_sin.defjvp
def _odd_sin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _odd_sin(x), 10.0 * t


def _matrix(seed, shape=(3, 4)):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * (rng.random(shape) < 0.5)).astype(np.float32)


def _with_data(a, d):
    return sparse.BCOO((d, a.indices), shape=a.shape)


def test_custom_jvp_under_sparsify_keeps_the_rule():
    # JAX binds custom_jvp_call with the sparsified primal and the user's rule
    # (transform._custom_jvp_sparse_rule); its primal results are these (JAX 0.10.2 gives the same);
    # differentiating it fails inside JAX (AssertionError / KeyError 'subfuns'), fjax uses the rule
    m = _matrix(0)
    a = sparse.BCOO.fromdense(m)
    np.testing.assert_allclose(sparse.sparsify(_odd_sin)(a).todense(), np.sin(m), rtol=1e-6)
    np.testing.assert_allclose(fjax.jit(sparse.sparsify(_odd_sin))(a).todense(), np.sin(m), rtol=1e-6)

    def loss(d):
        return sparse.sparsify(lambda s: _odd_sin(s).sum())(_with_data(a, d))

    np.testing.assert_array_equal(fjax.grad(loss)(a.data), np.full(a.nse, 10.0, np.float32))
    np.testing.assert_array_equal(fjax.grad(fjax.jit(loss))(a.data), np.full(a.nse, 10.0, np.float32))
    _, t = fjax.jvp(loss, (a.data,), (jnp.ones_like(a.data),))
    assert float(t) == 10.0 * a.nse


@settings(deadline=None, max_examples=10)
@given(seed=st.integers(0, 2**16), n_batch=st.integers(0, 1), c=st.floats(0.5, 2.0, width=32))
def test_custom_jvp_under_sparsify_grad_matches_the_dense_function(seed, n_batch, c):
    m = _matrix(seed)
    a = sparse.BCOO.fromdense(m, n_batch=n_batch)
    c = jnp.float32(c)

    def loss(d, c):
        return sparse.sparsify(lambda s, c: _sq(s, c).sum())(_with_data(a, d), c)

    gd, gc = fjax.grad(loss, argnums=(0, 1))(a.data, c)
    # the same loss on the dense matrix: d/dm sum(m^2 c) = 2 m c at the stored entries
    dense_g = fjax.grad(lambda m, c: _sq(m, c).sum(), argnums=(0, 1))(jnp.asarray(m), c)
    np.testing.assert_allclose(gd, 2 * np.asarray(a.data) * c, rtol=1e-6)
    np.testing.assert_allclose(sparse.BCOO((gd, a.indices), shape=a.shape).todense(), dense_g[0], rtol=1e-6)
    np.testing.assert_allclose(gc, dense_g[1], rtol=1e-5)
    out = fjax.vmap(sparse.sparsify(lambda s, c: _sq(s, c).sum()), in_axes=(None, 0))(a, jnp.arange(3.0))
    np.testing.assert_allclose(out, np.arange(3.0) * (m * m).sum(), rtol=1e-5)


def test_custom_vjp_under_sparsify_is_refused_as_in_jax():
    # JAX 0.10.2: NotImplementedError("sparse rule for custom_vjp_call is not implemented.")
    @fjax.custom_vjp
    def f(x):
        return x * 2.0

    f.defvjp(lambda x: (x * 2.0, None), lambda r, g: (g * 100.0,))
    a = sparse.BCOO.fromdense(_matrix(1))
    with pytest.raises(NotImplementedError, match="sparse rule for custom_vjp_call is not implemented."):
        sparse.sparsify(f)(a)


def _dense_vmap(m, f, in_axes, out_axes=0):
    return fjax.vmap(f, in_axes=in_axes, out_axes=out_axes)(jnp.asarray(m))


@pytest.mark.parametrize("in_axes", [0, 1])
def test_vmap_over_batch_axes_of_a_bcoo_matches_dense(in_axes):
    m = _matrix(2, (3, 4, 5))
    a = sparse.BCOO.fromdense(m, n_batch=2)
    got = fjax.vmap(lambda s: s.todense(), in_axes=in_axes)(a)
    np.testing.assert_array_equal(got, np.moveaxis(m, in_axes, 0))
    got = fjax.vmap(lambda s: s @ jnp.arange(5.0), in_axes=in_axes)(a)
    np.testing.assert_allclose(got, _dense_vmap(m, lambda s: s @ jnp.arange(5.0), in_axes), rtol=1e-6)
    got = fjax.vmap(lambda s: s.sum(), in_axes=in_axes)(a)
    np.testing.assert_allclose(got, np.moveaxis(m, in_axes, 0).sum(axis=(1, 2)), rtol=1e-5, atol=1e-6)
    # out_axes=1 keeps the batch axes a leading block (the element has n_batch=1)
    out = fjax.vmap(lambda s: s * 2.0, in_axes=in_axes, out_axes=1)(a)
    assert out.shape == (m.shape[1 - in_axes], m.shape[in_axes], 5) and out.n_batch == 2
    np.testing.assert_array_equal(out.todense(), 2 * np.swapaxes(np.moveaxis(m, in_axes, 0), 0, 1))


# JAX 0.10.2's errors (its BCOO vmappable handlers), for the cases fjax can see at unflatten time
@pytest.mark.parametrize(
    ("n_batch", "in_axes", "out_axes", "msg"),
    [
        (1, 1, 0, "Cannot map in_axis=1 for BCOO array with n_batch=1. in_axes for batched BCOO operations"),
        (2, 2, 0, "Cannot map in_axis=2 for BCOO array with n_batch=2. in_axes for batched BCOO operations"),
        (0, 0, 0, "Cannot map in_axis=0 for BCOO array with n_batch=0."),
        (1, 0, 1, "BCOO: cannot add out_axis=1 for BCOO array with n_batch=0. BCOO batch axes must be a contiguous"),
        (2, 0, 2, "BCOO: cannot add out_axis=2 for BCOO array with n_batch=1."),
    ],
)
def test_vmap_of_a_bcoo_refuses_non_batch_axes_as_jax(n_batch, in_axes, out_axes, msg):
    a = sparse.BCOO.fromdense(_matrix(3, (3, 4, 5)), n_batch=n_batch)
    # (an nse of 12 keeps the nse axis from matching a batch axis in size)
    a = sparse.BCOO._empty(a.shape, n_batch=n_batch, nse=12) if n_batch else a
    with pytest.raises(ValueError, match=msg.replace(".", r"\.")):
        fjax.vmap(lambda s: s, in_axes=in_axes, out_axes=out_axes)(a)


def test_bcoo_structures_and_scan_over_batched_bcoo():
    m = _matrix(4, (3, 4, 5))
    a = sparse.BCOO.fromdense(m, n_batch=1)
    leaves, tree = fjax.tree_util.tree_flatten(a)
    b = fjax.tree_util.tree_unflatten(tree, leaves)
    assert b.shape == a.shape and b.n_batch == 1
    _, ys = fjax.lax.scan(lambda c, s: (c, s.todense().sum()), 0.0, a)
    np.testing.assert_allclose(ys, m.sum(axis=(1, 2)), rtol=1e-5)


def test_random_bcoo_warns_as_jax_about_truncated_dtypes():
    # JAX 0.10.2 with x64 off: the default dtype is jnp.float_ (float64), which the generator truncates;
    # an explicit int64 indices_dtype warns from the .astype of the indices
    key = fjax.random.PRNGKey(0)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m = sparse.random_bcoo(key, (4, 5))
    assert m.dtype == np.float32 and m.indices.dtype == np.int32
    assert [str(x.message) for x in w] == [
        "Explicitly requested dtype float64 is not available, and will be truncated to dtype float32. To enable "
        "more dtypes, set the jax_enable_x64 configuration option or the JAX_ENABLE_X64 shell environment variable. "
        "See https://github.com/jax-ml/jax#current-gotchas for more."
    ]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m = sparse.random_bcoo(key, (4, 5), dtype=jnp.float32, indices_dtype=jnp.int64)
    assert m.indices.dtype == np.int32
    assert [str(x.message)[:75] for x in w] == [
        "Explicitly requested dtype int64 requested in astype is not available, and "
    ]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        sparse.random_bcoo(key, (4, 5), dtype=jnp.float16, indices_dtype=jnp.int8)
    assert not w
    with fjax.enable_x64():
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m = sparse.random_bcoo(key, (4, 5), indices_dtype=jnp.int64)
        assert not w and m.dtype == np.float64 and m.indices.dtype == np.int64
