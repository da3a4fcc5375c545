"""Parameters JAX 0.10.2's public functions have that fjax gained (``out_sharding=``, numpy-2 keywords,
``nn.dot_product_attention``'s masking options, ...): each keyword is called and its value checked
against numpy / closed forms; the real features also with hypothesis."""

import inspect

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import _devices, lax
from fjax.sharding import Mesh, NamedSharding
from fjax.sharding import PartitionSpec as P


@pytest.fixture(scope="module")
def mesh():
    """Two CPU devices in an Explicit mesh (the topology is reset around the module's use of it)."""
    old = fjax.config.jax_num_cpu_devices
    _devices._topology_changed()
    _devices._topology = None
    fjax.config.update("jax_num_cpu_devices", 2)
    m = fjax.make_mesh((2,), ("x",), axis_types=(fjax.sharding.AxisType.Explicit,))
    yield m
    _devices._topology = None
    fjax.config.update("jax_num_cpu_devices", old)
    _devices._topology_changed()


# ---------------------------------------------------------------------------------------------
# out_sharding


_A = np.arange(12.0, dtype=np.float32).reshape(4, 3)
_B = np.arange(6.0, dtype=np.float32).reshape(3, 2)
_DN = (((1,), (0,)), ((), ()))

# (name, function taking out_sharding=, the numpy value of its result)
_SHARDED = [
    ("lax.dot_general", lambda s: lax.dot_general(_A, _B, _DN, out_sharding=s), _A @ _B),
    ("lax.dot", lambda s: lax.dot(_A, _B, out_sharding=s), _A @ _B),
    ("lax.dot dimension_numbers", lambda s: lax.dot(_A, _B, dimension_numbers=_DN, out_sharding=s), _A @ _B),
    ("jnp.dot", lambda s: jnp.dot(_A, _B, out_sharding=s), _A @ _B),
    ("jnp.matmul", lambda s: jnp.matmul(_A, _B, out_sharding=s), _A @ _B),
    ("jnp.tensordot", lambda s: jnp.tensordot(_A, _B, 1, out_sharding=s), _A @ _B),
    ("jnp.einsum", lambda s: jnp.einsum("ij,jk->ik", _A, _B, out_sharding=s), _A @ _B),
]


@pytest.mark.parametrize("name,f,want", _SHARDED, ids=[c[0] for c in _SHARDED])
def test_out_sharding(mesh, name, f, want):
    s = NamedSharding(mesh, P("x"))
    for spec in (s, P("x")):
        with fjax.sharding.set_mesh(mesh):
            r = f(spec)
        np.testing.assert_allclose(np.asarray(r), want, rtol=1e-6)
        assert r.sharding == s, name
        assert [sh.data.shape[0] for sh in r.addressable_shards] == [want.shape[0] // 2] * 2
    r = f(None)
    np.testing.assert_allclose(np.asarray(r), want, rtol=1e-6)
    assert not isinstance(r.sharding, NamedSharding)
    # traced: the value passes unchanged
    np.testing.assert_allclose(np.asarray(fjax.jit(lambda: f(s))()), want, rtol=1e-6)
    assert "out_sharding" in inspect.signature(eval(name.split()[0], {"lax": lax, "jnp": jnp})).parameters


def test_out_sharding_errors(mesh):
    with pytest.raises(ValueError, match="not under a mesh context"):
        jnp.dot(_A, _B, out_sharding=P("x"))
    with pytest.raises(TypeError, match="only supports instances of `NamedSharding` or `PartitionSpec`"):
        lax.dot_general(_A, _B, _DN, out_sharding=fjax.sharding.SingleDeviceSharding(fjax.devices()[0]))
    auto = Mesh(np.array(fjax.devices()), ("x",))
    with pytest.raises(ValueError, match="cannot contain axis names that are of type Auto"):
        jnp.matmul(_A, _B, out_sharding=NamedSharding(auto, P("x")))
    with pytest.raises(ValueError, match="must divide evenly"):
        jnp.dot(_B, _B.T, out_sharding=NamedSharding(mesh, P("x")))
    # an empty-spec sharding on an Auto mesh is fine (replicated)
    r = jnp.matmul(_A, _B, out_sharding=NamedSharding(auto, P()))
    assert r.sharding == NamedSharding(auto, P())


def test_out_sharding_grad_vmap(mesh):
    s = NamedSharding(mesh, P("x"))
    g = fjax.grad(lambda a: jnp.dot(a, _B, out_sharding=s).sum())(_A)
    np.testing.assert_allclose(np.asarray(g), np.broadcast_to(_B.sum(1), (4, 3)), rtol=1e-6)
    v = fjax.vmap(lambda a: jnp.einsum("ij,jk->ik", a, _B, out_sharding=s))(np.stack([_A, 2 * _A]))
    np.testing.assert_allclose(np.asarray(v), np.stack([_A @ _B, 2 * _A @ _B]), rtol=1e-6)
