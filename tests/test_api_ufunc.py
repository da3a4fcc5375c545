"""jnp.ufunc and jnp.frompyfunc: the generic methods built from a scalar function, the built-in
ufuncs (jnp.add, jnp.maximum, ...), and their errors. Expected values were recorded with JAX 0.10.2."""

import inspect
import operator
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp


def _muladd(a, b):
    return a * b + 1


f = jnp.frompyfunc(_muladd, 2, 1)
h = jnp.frompyfunc(operator.add, 2, 1, identity=0)
x = jnp.arange(1.0, 5.0)


def test_attributes_repr_hash():
    assert isinstance(f, jnp.ufunc)
    assert (f.nin, f.nout, f.nargs, f.identity) == (2, 1, 2, None)
    assert h.identity == 0
    assert repr(f) == "<jnp.ufunc '_muladd'>" and f.__name__ == "_muladd"
    assert repr(jnp.frompyfunc(lambda a: a, 1, 1)) == "<jnp.ufunc '<lambda>'>"
    assert h == jnp.frompyfunc(operator.add, 2, 1, identity=0) and hash(h) == hash(
        jnp.frompyfunc(operator.add, 2, 1, identity=0)
    )
    assert h != jnp.frompyfunc(operator.add, 2, 1, identity=1)
    u = jnp.ufunc(_muladd, 2, 1, name="ma", nargs=3)
    assert u.__name__ == "ma" and u.nargs == 3
    with pytest.raises(AttributeError):
        f.nin = 3


def test_call_and_methods_match_jax():
    np.testing.assert_allclose(f(x, 2.0), [3.0, 5.0, 7.0, 9.0])
    np.testing.assert_allclose(f.reduce(x), 41.0)
    np.testing.assert_allclose(f.accumulate(x), [1.0, 3.0, 10.0, 41.0])
    np.testing.assert_allclose(f.outer(x[:2], x[:3]), [[2.0, 3.0, 4.0], [3.0, 5.0, 7.0]])
    np.testing.assert_allclose(f.at(x, jnp.array([0, 0, 2]), 3.0, inplace=False), [13.0, 2.0, 10.0, 4.0])
    np.testing.assert_allclose(f.at(x, 1, 5.0, inplace=False), [1.0, 11.0, 3.0, 4.0])
    np.testing.assert_allclose(f.reduceat(x, jnp.array([0, 2])), [3.0, 13.0])
    np.testing.assert_allclose(f.reduce(jnp.arange(6.0).reshape(2, 3), axis=1, keepdims=True), [[3.0], [66.0]])
    assert f.outer(jnp.ones((1, 3)), jnp.ones((2, 4))).shape == (1, 3, 2, 4)


def test_multiple_outputs():
    g = jnp.frompyfunc(lambda a: (a, -a), 1, 2)
    a, b = g(x)
    np.testing.assert_allclose(a, x)
    np.testing.assert_allclose(b, -x)
    with pytest.raises(ValueError, match="reduce only supported for binary ufuncs"):
        g.reduce(x)
    two = jnp.frompyfunc(lambda a, b: (a, b), 2, 2)
    with pytest.raises(ValueError, match="accumulate only supported for functions returning a single value"):
        two.accumulate(x)


def test_identity_where_initial_axis_none_dtype():
    assert float(h.reduce(x, where=x > 1)) == 9.0
    np.testing.assert_array_equal(h.reduce(jnp.zeros((0, 3)), axis=0), [0.0, 0.0, 0.0])
    assert h.accumulate(jnp.zeros((0,))).shape == (0,)
    m = jnp.arange(6).reshape(2, 3)
    assert int(h.reduce(m, axis=None)) == 15
    assert h.reduce(m, axis=None, keepdims=True).shape == (1, 1)
    assert h.reduce(jnp.arange(4, dtype=jnp.int8)).dtype == jnp.int8
    assert float(h.reduce(x, initial=10.0)) == 20.0
    assert h.reduce(x, dtype=jnp.int32).dtype == jnp.int32
    np.testing.assert_allclose(h.reduce(m, axis=-1), [3, 12])


def test_errors():
    with pytest.raises(NotImplementedError, match="inplace=False"):
        f.at(x, 1, 2.0)
    with pytest.raises(ValueError, match="does not have an identity, so to use a where mask"):
        f.reduce(x, where=x > 1)
    with pytest.raises(ValueError, match="zero-size array to reduction operation _muladd which has no identity"):
        f.reduce(jnp.zeros((0,)))
    with pytest.raises(NotImplementedError, match="tuple of axes"):
        f.reduce(x, axis=(0,))
    with pytest.raises(NotImplementedError, match="out argument"):
        f(x, x, out=x)
    with pytest.raises(NotImplementedError, match="where argument"):
        f(x, x, where=x > 0)
    with pytest.raises(TypeError, match="non-tuple sequence"):
        f.at(x, [0, 1], 2.0, inplace=False)
    with pytest.raises(ValueError, match="where argument must have dtype=bool"):
        h.reduce(x, where=x)
    with pytest.raises(ValueError, match="accumulate does not allow multiple axes"):
        f.accumulate(x, axis=None)
    with pytest.raises(ValueError, match=r"indices must be one-dimensional, got indices.shape=\(1, 1\)"):
        f.reduceat(x, jnp.array([[0]]))
    with pytest.raises(ValueError, match=r"a must have 1 or more dimension"):
        f.reduceat(jnp.float32(1), jnp.array([0]))
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        f([1.0], x)


def test_transforms():
    np.testing.assert_allclose(fjax.jit(h.reduce)(x), 10.0)
    np.testing.assert_allclose(fjax.vmap(f)(x, x), [2.0, 5.0, 10.0, 17.0])
    np.testing.assert_allclose(fjax.grad(lambda v: f.reduce(v))(x), [24.0, 12.0, 12.0, 10.0])
    np.testing.assert_allclose(fjax.grad(lambda v: f.accumulate(v).sum())(x), [33.0, 16.0, 15.0, 10.0])
    np.testing.assert_allclose(fjax.vmap(f.reduce)(jnp.arange(6.0).reshape(2, 3)), [3.0, 66.0])
    np.testing.assert_allclose(
        fjax.jit(lambda a: f.at(a, jnp.array([1, 1]), 2.0, inplace=False))(x), [1.0, 11.0, 3.0, 4.0]
    )
    np.testing.assert_allclose(fjax.grad(lambda v: f.outer(v, v).sum())(x[:2]), [6.0, 6.0])


def test_at_slices_and_2d():
    m = jnp.zeros((2, 3))
    np.testing.assert_allclose(h.at(m, (slice(None), jnp.array([0, 0, 2])), 1.0, inplace=False), [[2, 0, 1], [2, 0, 1]])
    np.testing.assert_allclose(h.at(m, (0, slice(1, None)), 5.0, inplace=False), [[0, 5, 5], [0, 0, 0]])
    neg = jnp.frompyfunc(lambda a: -a, 1, 1)
    np.testing.assert_allclose(neg.at(x, jnp.array([0, 0, 3]), inplace=False), [1.0, 2.0, 3.0, -4.0])


def test_reduceat_matches_numpy():
    a = np.arange(8.0).reshape(4, 2)
    idx = np.array([0, 3, 1, 1])
    np.testing.assert_allclose(h.reduceat(jnp.asarray(a), jnp.asarray(idx)), np.add.reduceat(a, idx))
    np.testing.assert_allclose(
        h.reduceat(jnp.asarray(a), jnp.array([0, 1]), axis=1), np.add.reduceat(a, [0, 1], axis=1)
    )


@given(
    st.lists(st.floats(-4, 4, width=32), min_size=1, max_size=7),
    st.sampled_from(["reduce", "accumulate", "outer"]),
)
def test_generic_methods_match_numpy(vals, method):
    a = np.asarray(vals, np.float32)
    mx = jnp.frompyfunc(jnp.maximum._func, 2, 1)
    ours = getattr(mx, method)(*([jnp.asarray(a)] * (2 if method == "outer" else 1)))
    ref = getattr(np.maximum, method)(*([a] * (2 if method == "outer" else 1)))
    np.testing.assert_allclose(ours, ref)


# ---------------------------------------------------------------------------------------------
# built-in ufuncs

_BUILTINS = [
    "add", "bitwise_and", "bitwise_or", "bitwise_xor", "logaddexp", "logaddexp2", "logical_and",
    "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative", "subtract",
]  # fmt: skip


@pytest.mark.parametrize("name", _BUILTINS)
def test_builtins_are_ufuncs(name):
    u = getattr(jnp, name)
    assert isinstance(u, jnp.ufunc)
    assert repr(u) == f"<jnp.ufunc '{name}'>"
    assert u.nin == (1 if name == "negative" else 2) and u.nout == 1
    assert pickle.loads(pickle.dumps(u)) is u
    assert list(inspect.signature(u).parameters) == ["args", "out", "where"]  # JAX's ufunc call signature


def test_builtin_identities_and_results():
    assert (jnp.add.identity, jnp.multiply.identity, jnp.bitwise_and.identity) == (0, 1, -1)
    assert jnp.logaddexp.identity == -np.inf and jnp.maximum.identity is None and jnp.negative.identity is None
    i8 = jnp.arange(1, 5, dtype=jnp.int8)
    r = jnp.add.reduce(i8)
    assert int(r) == 10 and r.dtype == jnp.int32  # jnp.sum promotes, as JAX's add.reduce
    assert jnp.multiply.reduce(i8).dtype == jnp.int32
    r = jnp.bitwise_or.reduce(i8)
    assert int(r) == 7 and r.dtype == jnp.int8
    assert int(jnp.subtract.reduce(i8)) == -8
    np.testing.assert_array_equal(jnp.subtract.accumulate(i8), [1, -1, -4, -8])
    assert jnp.add.accumulate(i8).dtype == jnp.int8
    np.testing.assert_allclose(jnp.logaddexp.reduce(jnp.arange(3.0)), 2.407606, rtol=1e-6)
    np.testing.assert_allclose(jnp.logaddexp.accumulate(jnp.arange(3.0)), [0.0, 1.3132617, 2.4076061], rtol=1e-6)
    assert not bool(jnp.logical_xor.reduce(jnp.array([True, True, False])))
    assert float(jnp.maximum.reduce(x)) == 4.0 and float(jnp.minimum.reduce(x, initial=0.0)) == 0.0
    np.testing.assert_allclose(jnp.add.at(x, jnp.array([0, 0]), 1.0, inplace=False), [3.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(jnp.subtract.at(x, 0, 1.0, inplace=False), [0.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(jnp.multiply.outer(x[:2], x[:2]), [[1.0, 2.0], [2.0, 4.0]])
    np.testing.assert_allclose(jnp.add.reduceat(x, jnp.array([0, 2])), [3.0, 7.0])
    with pytest.raises(ValueError, match="reduce only supported for binary ufuncs"):
        jnp.negative.reduce(x)
    with pytest.raises(NotImplementedError, match="inplace=False"):
        jnp.add.at(x, 0, 1.0)


def test_builtins_under_transforms():
    np.testing.assert_allclose(fjax.jit(jnp.add)(x, 1.0), x + 1.0)
    np.testing.assert_allclose(fjax.vmap(jnp.add)(x, x), 2 * x)
    np.testing.assert_allclose(fjax.grad(lambda v: jnp.multiply.reduce(v))(x), [24.0, 12.0, 8.0, 6.0])
    np.testing.assert_allclose(fjax.jit(jnp.maximum.reduce)(x), 4.0)
