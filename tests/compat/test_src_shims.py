"""The ``jax._src`` shims libraries read: the pytree registry view (flax's nnx tells nodes from
leaves with it) and the dtype helpers."""

import numpy as np

import fjax
from fjax import tree_util
from fjax.compat._shims._src import dtypes as src_dtypes
from fjax.compat._shims._src import tree_util as src_tree_util


def test_registry_view_as_jax():
    reg = src_tree_util._registry
    for t in (tuple, list, dict, type(None)):
        assert t in reg
    assert type(fjax.random.key(0)) not in reg  # key arrays are leaves, as in JAX
    assert fjax.Array not in reg and int not in reg

    class Later:
        def __init__(self, a):
            self.a = a

    assert Later not in reg
    tree_util.register_pytree_node(Later, lambda x: ((x.a,), None), lambda _, c: Later(*c))
    assert Later in reg and Later in list(reg) and len(reg) == len(list(reg))


def test_supports_inf():
    assert src_dtypes.supports_inf(np.float32) and src_dtypes.supports_inf(fjax.numpy.bfloat16)
    assert not src_dtypes.supports_inf(fjax.numpy.float8_e4m3fn)
