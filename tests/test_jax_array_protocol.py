"""Objects with ``__jax_array__`` (flax's ``nnx.Variable``, equinox-style wrappers) are accepted by
``jnp`` functions as the array they convert to, also when that array is traced."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fjax
import fjax.numpy as jnp
from fjax import tree_util


@tree_util.register_pytree_node_class
class Box:
    def __init__(self, value):
        self.value = value

    def __jax_array__(self):
        return self.value

    def tree_flatten(self):
        return (self.value,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


arrays = hnp.arrays(
    np.float32, hnp.array_shapes(min_dims=1, max_dims=2, max_side=4), elements=st.floats(-3, 3, width=32)
)


@given(arrays)
def test_jnp_functions_convert_jax_array_objects(x):
    b = Box(jnp.asarray(x))
    np.testing.assert_allclose(jnp.sin(b), np.sin(x), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(jnp.add(b, 1.0), x + 1, rtol=1e-6)
    np.testing.assert_allclose(jnp.asarray(b), x)
    np.testing.assert_allclose(jnp.array([b, b]), np.stack([x, x]))
    np.testing.assert_allclose(jnp.sum(b), x.sum(), rtol=1e-5, atol=1e-5)


@given(arrays)
def test_traced_values_inside_jax_array_objects(x):
    # under jit/grad/vmap the box holds a tracer: jnp functions take it from there
    out = fjax.jit(lambda b: jnp.sin(b) * 2)(Box(jnp.asarray(x)))
    np.testing.assert_allclose(out, 2 * np.sin(x), rtol=1e-5, atol=1e-6)
    g = fjax.grad(lambda b: jnp.sum(jnp.sin(b)))(Box(jnp.asarray(x)))
    np.testing.assert_allclose(g.value, np.cos(x), rtol=1e-5, atol=1e-6)
    v = fjax.vmap(lambda b: jnp.dot(b, b))(Box(jnp.asarray(x.reshape(x.shape[0], -1))))
    np.testing.assert_allclose(v, (x.reshape(x.shape[0], -1) ** 2).sum(-1), rtol=1e-5, atol=1e-5)


def test_objects_without_the_protocol_are_refused():
    import pytest

    class NotArray:
        pass

    with pytest.raises(TypeError, match="sin requires ndarray or scalar arguments, got <class '.*NotArray'>"):
        jnp.sin(NotArray())


def test_shape_functions_take_their_array_by_keyword():
    # the key-array pass-through wrapper of jnp's shape functions kept the array positional only
    x = jnp.ones(2, bool)
    assert jnp.broadcast_to(array=x, shape=(3, 2)).shape == (3, 2)
    k = fjax.random.split(fjax.random.key(0), 2)
    bk = jnp.broadcast_to(array=k, shape=(3, 2))
    assert bk.shape == (3, 2) and bool(jnp.all(bk[1] == k))


def test_custom_jvp_nondiff_argnums_name_parameters_left_at_their_defaults():
    import functools

    @functools.partial(fjax.custom_jvp, nondiff_argnums=(1, 2))
    def f(x, scale=2.0, power=None):
        return x * scale

    @f.defjvp
    def f_jvp(scale, power, primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x, scale, power), t * scale * 10  # a rule distinguishable from autodiff

    assert float(f(3.0)) == 6.0
    assert float(fjax.grad(f)(3.0)) == 20.0 and float(fjax.grad(lambda x: f(x, 4.0))(1.0)) == 40.0


def test_refs_passed_as_jit_arguments():
    r = fjax.new_ref(jnp.ones(3))

    @fjax.jit
    def f(r, x):
        r[...] += x
        return x * 2

    assert float(f(r, 1.0)) == 2.0 and float(f(r, 2.0)) == 4.0
    np.testing.assert_array_equal(r[...], [4.0, 4.0, 4.0])

    @fjax.jit
    def g(d):
        d["a"][1] = d["a"][1] * d["b"]
        return d["a"][...].sum()

    np.testing.assert_allclose(g({"a": r, "b": 3.0}), 20.0)
    np.testing.assert_array_equal(r[...], [4.0, 12.0, 4.0])
    other = fjax.new_ref(jnp.zeros(3))
    g({"a": other, "b": 3.0})  # another ref: its own value, written back to it only
    np.testing.assert_array_equal(other[...], np.zeros(3))
    np.testing.assert_array_equal(r[...], [4.0, 12.0, 4.0])
    assert repr(fjax.typeof(r)) == "Ref{float32[3]}"
