"""``jax.experimental.multihost_utils.host_local_array_to_global_array`` and its inverse in one
process (the multi-process cases run in tests/mpi/mpi_collectives.py): the identity on values,
results laid out as asked, pytree prefixes of specs, and JAX's errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
from fjax.experimental import multihost_utils as mu
from fjax.sharding import Mesh, NamedSharding
from fjax.sharding import PartitionSpec as P


@settings(max_examples=10, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), seed=st.integers(0, 2**31 - 1))
def test_single_process_round_trip(shape, seed):
    mesh = Mesh(np.array(fjax.devices()), ("x",))
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    spec = P("x") if len(shape) == 1 else P(None, "x")
    g = mu.host_local_array_to_global_array({"a": x, "b": [x * 2]}, mesh, {"a": spec, "b": P()})
    assert g["a"].sharding == NamedSharding(mesh, spec) and g["b"][0].sharding == NamedSharding(mesh, P())
    np.testing.assert_array_equal(np.asarray(g["a"]), x)
    back = mu.global_array_to_host_local_array(g, mesh, {"a": spec, "b": P()})
    np.testing.assert_array_equal(np.asarray(back["b"][0]), x * 2)


def test_errors():
    mesh = Mesh(np.array(fjax.devices()), ("x",))
    with pytest.raises(ValueError, match=r"Resource axis: y of P\('y',\) is not found in mesh"):
        mu.host_local_array_to_global_array(np.ones(3), mesh, P("y"))
    with pytest.raises(ValueError, match="rank 1"):
        mu.host_local_array_to_global_array(np.ones(3), mesh, P(None, "x"))
    with pytest.raises(TypeError, match="traced"):
        fjax.jit(lambda v: mu.host_local_array_to_global_array(v, mesh, P()))(np.ones(2))
    assert mu.reached_preemption_sync_point(0) is False  # no preemption service in one process


def test_mesh_and_named_sharding_print_as_jax():
    # recorded from JAX 0.10.2: repr(Mesh) is the long form, str(Mesh) (and so NamedSharding's
    # repr) the short one
    m = fjax.make_mesh((1, 1), ("a", "b"))
    assert repr(m) == "Mesh(axis_sizes=(1, 1), axis_names=('a', 'b'), axis_types=(Explicit, Explicit))"
    assert str(m) == "Mesh('a': 1, 'b': 1, axis_types=(Explicit, Explicit))"
    assert repr(NamedSharding(m, P("a", None))) == (
        "NamedSharding(mesh=Mesh('a': 1, 'b': 1, axis_types=(Explicit, Explicit)), spec=P('a', None), "
        "memory_kind=device)"
    )
    m1 = Mesh(np.array(fjax.devices()), ("x",))
    assert (
        str(NamedSharding(m1, P("x")))
        == "NamedSharding(mesh=Mesh('x': 1, axis_types=(Auto,)), spec=P('x',), memory_kind=device)"
    )
