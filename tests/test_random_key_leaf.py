"""Typed key arrays are pytree leaves (as in JAX), and every transform still takes them.

``jax.tree.structure``, ``jax.tree.map`` and the rest of ``tree_util`` stop at a key array;
``jit``, ``vmap``, ``grad``, ``scan``, ``cond``, ``fori_loop`` and ``custom_vjp`` look through it to
its data (fjax/_tree_lifted.py) and give key arrays back. ``jnp.stack``/``concatenate`` join keys.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
from fjax import lax, random, tree_util
from fjax import numpy as jnp
from fjax._tree_lifted import tree_flatten as lifted_flatten

K = random.key(0)


def _data(k):
    return np.asarray(random.key_data(k))


# trees of arrays, Python scalars and key arrays in lists/tuples/dicts
_leaf = st.sampled_from(["key", "keys", "array", "scalar"]).map(
    lambda t: {"key": K, "keys": random.split(K, 3), "array": jnp.ones(2), "scalar": 1.5}[t]
)
_trees = st.recursive(
    _leaf,
    lambda kids: st.one_of(
        st.lists(kids, max_size=3),
        st.lists(kids, max_size=3).map(tuple),
        st.dictionaries(st.sampled_from("abc"), kids, max_size=3),
    ),
    max_leaves=6,
)


@given(_trees)
def test_keys_are_leaves(tree):
    leaves, treedef = tree_util.tree_flatten(tree)
    assert treedef.num_leaves == len(leaves)
    assert "PRNGKeyArray" not in str(treedef)
    # a key array is one leaf, whatever its shape; its dtype is the key dtype
    dts = tree_util.tree_leaves(fjax.tree.map(lambda x: getattr(x, "dtype", None), tree))
    assert sum(d == random.key_dtype() for d in dts) == sum(isinstance(x, type(K)) for x in tree_util.tree_leaves(tree))
    assert tree_util.tree_structure(tree_util.tree_unflatten(treedef, leaves)) == treedef


@given(_trees)
def test_transforms_see_through_keys(tree):
    leaves, treedef = lifted_flatten(tree)
    assert not any(isinstance(x, type(K)) for x in leaves)
    back = treedef.unflatten(leaves)
    assert tree_util.tree_structure(back) == tree_util.tree_structure(tree)


_identity = fjax.jit(lambda t: t)


@given(_trees)
def test_jit_round_trips_trees_with_keys(tree):
    out = _identity(tree)
    assert tree_util.tree_structure(out) == tree_util.tree_structure(tree)
    for a, b in zip(tree_util.tree_leaves(out), tree_util.tree_leaves(tree)):
        if isinstance(b, type(K)):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(_data(a), _data(b))
        else:
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_optimizer_state_structure_with_key():
    # optax's noisy_sgd state holds a key: structures compare with a tree of plain leaves
    state = (jnp.zeros(()), K)
    assert tree_util.tree_structure(state) == tree_util.tree_structure((1.0, 2.0))
    assert fjax.tree.map(lambda x: x.dtype, state)[1] == random.key_dtype()


def test_split_into_tree():
    tree = {"a": jnp.zeros(2), "b": [jnp.ones(3), jnp.zeros(4)]}
    td = fjax.tree.structure(tree)
    keys = fjax.tree.unflatten(td, random.split(K, td.num_leaves))
    assert fjax.tree.structure(keys) == td
    stacked = jnp.stack(fjax.tree.leaves(keys))
    assert stacked.dtype == random.key_dtype() and stacked.shape == (3,)
    np.testing.assert_array_equal(_data(stacked), _data(random.split(K, 3)))


def test_vmap_jit_scan_grad_over_keys():
    keys = random.split(K, 4)
    batched = fjax.vmap(lambda k: random.normal(k, (2,)))(keys)
    looped = jnp.stack([random.normal(k, (2,)) for k in keys])
    np.testing.assert_allclose(batched, looped, rtol=1e-6)
    split = fjax.vmap(random.split)(keys)
    assert split.dtype == random.key_dtype() and split.shape == (4, 2)

    def body(k, _):
        k1, k2 = random.split(k)
        return k1, random.uniform(k2)

    last, xs = lax.scan(body, K, None, length=3)
    assert last.dtype == random.key_dtype() and xs.shape == (3,)
    k, eager = K, []
    for _ in range(3):
        k, sub = random.split(k)
        eager.append(random.uniform(sub))
    np.testing.assert_allclose(xs, jnp.stack(eager), rtol=1e-6)
    np.testing.assert_array_equal(_data(last), _data(k))

    g = fjax.grad(lambda x, k: jnp.sum(x * random.normal(k, (3,))))(jnp.ones(3), K)
    np.testing.assert_allclose(g, random.normal(K, (3,)), rtol=1e-6)

    out = lax.cond(True, lambda k: random.split(k)[0], lambda k: k, K)
    np.testing.assert_array_equal(_data(out), _data(random.split(K)[0]))
    out = lax.fori_loop(0, 2, lambda i, k: random.split(k)[0], K)
    np.testing.assert_array_equal(_data(out), _data(random.split(random.split(K)[0])[0]))


def test_custom_vjp_with_key_argument():
    @fjax.custom_vjp
    def f(x, k):
        return x * random.normal(k)

    f.defvjp(lambda x, k: (f(x, k), k), lambda k, g: (g * random.normal(k), None))
    np.testing.assert_allclose(fjax.grad(f)(1.0, K), random.normal(K), rtol=1e-6)


def test_stack_and_concatenate_keys():
    ks = random.split(K, 3)
    assert jnp.stack([ks, ks], axis=-1).shape == (3, 2)
    assert jnp.concatenate([ks, ks]).shape == (6,)
    assert jnp.concatenate([ks[None], ks[None]], axis=None).shape == (6,)
    np.testing.assert_array_equal(_data(jnp.concatenate([ks[:1], ks[1:]])), _data(ks))
    with pytest.raises(TypeError, match="key arrays"):
        jnp.stack([ks, jnp.ones(3)])
    with pytest.raises(ValueError, match="Zero-dimensional"):
        jnp.concatenate([K, K])


def test_compat_array_isinstance_holds_for_keys():
    from fjax.compat import Array

    assert isinstance(K, Array) and isinstance(jnp.ones(1), Array)
    assert not isinstance(np.ones(1), Array)


def test_vmap_negative_axes_count_key_dims():
    # a key array's axis -1 is its last key axis, not the key words of its data (as in JAX)
    ks = random.split(K, 4)
    assert fjax.vmap(random.key_data, in_axes=-1)(ks).shape == (4, 2)
    ks2 = random.split(K, 6).reshape(2, 3)
    assert fjax.vmap(random.key_data, in_axes=-1)(ks2).shape == (3, 2, 2)
    out = fjax.vmap(lambda k: random.split(k, 3), out_axes=-1)(ks)
    assert out.shape == (3, 4) and out.dtype == random.key_dtype()
    ref = np.asarray(random.key_data(fjax.vmap(lambda k: random.split(k, 3))(ks))).transpose(1, 0, 2)
    np.testing.assert_array_equal(_data(out), ref)
    with pytest.raises(ValueError, match=r"rank should be at least 2, but is only 1 \(its shape is \(4,\)\)"):
        fjax.vmap(lambda k: k, in_axes=1)(ks)


def test_eval_shape_of_keys_is_a_key_dtype_struct():
    out = fjax.eval_shape(lambda k: (random.split(k), random.normal(k, (3,))), K)
    assert out == (fjax.ShapeDtypeStruct((2,), random.key_dtype()), fjax.ShapeDtypeStruct((3,), jnp.float32))
    spec = fjax.ShapeDtypeStruct((4,), random.key_dtype())
    assert fjax.eval_shape(lambda ks: fjax.vmap(random.split)(ks), spec).shape == (4, 2)
    assert fjax.jit(random.split).eval_shape(K) == fjax.ShapeDtypeStruct((2,), random.key_dtype())


def test_where_asarray_astype_on_keys():
    # optax's MultiSteps selects between two states holding keys (jnp.where + jnp.astype), and
    # inject_hyperparams calls jnp.asarray on a key hyperparameter
    ks, other = random.split(K, 3), random.split(random.key(1), 3)
    select = fjax.jit(lambda c, a, b: jnp.astype(jnp.where(c, a, b), a.dtype))
    picked = select(jnp.array([True, False, True]), ks, other)
    assert picked.dtype == random.key_dtype()
    np.testing.assert_array_equal(_data(picked), np.where([[True], [False], [True]], _data(ks), _data(other)))
    np.testing.assert_array_equal(_data(jnp.where(False, K, random.key(1))), _data(random.key(1)))
    assert jnp.asarray(K) is K and jnp.array(K, dtype=random.key_dtype()) is K
    with pytest.raises(ValueError, match="^Cannot convert_element_type from key<fry> to uint32$"):  # JAX 0.10.2
        jnp.asarray(K, dtype=jnp.uint32)
    with pytest.raises(TypeError, match="key arrays"):
        jnp.where(True, K, jnp.zeros(2))
