"""``jax.api_util``, ``partial_eval.PartialVal``/``trace_to_jaxpr_nounits``, the opaque trace
state and the small APIs flax builds on (``typeof`` of key arrays, ``experimental.layout``)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import api_util, core, tree_util
from fjax.experimental import layout
from fjax.extend import core as jex_core
from fjax.extend import linear_util as lu
from fjax.interpreters import partial_eval as pe


@given(st.floats(-3, 3), st.floats(-3, 3))
def test_trace_to_jaxpr_nounits_splits_known_from_unknown(a, b):
    calls = []

    def f(x, y):
        k = jnp.sin(x) * 2.0  # known: computed now
        calls.append(k)
        return k, k * y + jnp.cos(y), x + 1.0

    pvals = [pe.PartialVal.known(jnp.float32(a)), pe.PartialVal.unknown(core.ShapedArray((), np.float32))]
    jaxpr, out_pvals, consts = pe.trace_to_jaxpr_nounits(lu.wrap_init(f), pvals)
    assert [pv.is_known() for pv in out_pvals] == [True, False, True]
    np.testing.assert_allclose(out_pvals[0].get_known(), 2 * np.sin(np.float32(a)), rtol=1e-6)
    np.testing.assert_allclose(out_pvals[2].get_known(), np.float32(a) + 1, rtol=1e-6)
    assert out_pvals[1][0] == core.ShapedArray((), np.float32)
    assert len(jaxpr.invars) == 1 and len(jaxpr.outvars) == 1
    (out,) = core.eval_jaxpr(jaxpr, consts, jnp.float32(b))
    expect = 2 * np.sin(np.float32(a)) * np.float32(b) + np.cos(np.float32(b))
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-6)
    assert not isinstance(calls[0], core.Tracer)  # the known part ran eagerly


def test_trace_to_jaxpr_nounits_instantiate_and_callable():
    def f(x):
        return [x * 3.0]

    jaxpr, out_pvals, consts = pe.trace_to_jaxpr_nounits(f, [pe.PartialVal.known(2.0)], instantiate=True)
    assert not out_pvals[0].is_known() and len(jaxpr.invars) == 0
    np.testing.assert_allclose(core.eval_jaxpr(jaxpr, consts)[0], 6.0)


def test_partial_val_accessors():
    k = pe.PartialVal.known(np.ones(3, np.float32))
    u = pe.PartialVal.unknown(core.ShapedArray((2,), np.int32))
    assert k.is_known() and not u.is_known() and u.get_known() is None
    assert k.get_aval().shape == (3,) and u.get_aval() == core.ShapedArray((2,), np.int32)
    assert k[0] is None and u[1] is None


def test_flatten_fun_and_debug_info():
    def f(a, b, *, c):
        return {"s": a["x"] + b, "c": c * 2}

    args, kwargs = ({"x": 1.0}, 2.0), {"c": 3.0}
    leaves, tree = tree_util.tree_flatten((args, kwargs))
    dbg = api_util.debug_info("test", f, args, kwargs)
    assert dbg.traced_for == "test" and dbg.func_name == "f"
    assert dbg.arg_names == ("a['x']", "b", "c")
    flat, out_tree = api_util.flatten_fun(lu.wrap_init(f, debug_info=dbg), tree)
    out = flat.call_wrapped(*leaves)
    assert tree_util.tree_unflatten(out_tree(), out) == {"s": 3.0, "c": 6.0}
    flat2, out_tree2 = api_util.flatten_fun_nokwargs(
        lu.wrap_init(lambda a, b: (b, a)), tree_util.tree_structure((1, 2))
    )
    assert flat2.call_wrapped(5, 6) == [6, 5] and out_tree2() == tree_util.tree_structure((0, 0))


def test_argnums_partial_donation_and_rebase():
    f = lu.wrap_init(lambda a, b, c: a * 100 + b * 10 + c)
    g, dyn = api_util.argnums_partial(f, (0, 2), (1, 2, 3))
    assert dyn == (1, 3) and g.call_wrapped(4, 5) == 425
    tree = tree_util.tree_structure(((1.0, (2.0, 3.0)), {"k": 4.0}))
    assert api_util.donation_vector((1,), ("k",), tree) == (False, True, True, True)
    assert api_util.rebase_donate_argnums((3, 5), (0, 4)) == (2, 3)
    with pytest.raises(ValueError):
        api_util.rebase_donate_argnums((1,), (1,))
    assert api_util.shaped_abstractify(fjax.ShapeDtypeStruct((2, 3), np.float32)) == core.ShapedArray(
        (2, 3), np.float32
    )
    assert api_util.shaped_abstractify(jnp.ones(4, jnp.int32)) == core.ShapedArray((4,), np.int32)


def test_opaque_trace_state_tells_transforms_apart():
    top = jex_core.get_opaque_trace_state()
    assert top == jex_core.get_opaque_trace_state(convention="flax")
    seen = {}

    def f(x):
        seen["in"] = jex_core.get_opaque_trace_state()
        seen["again"] = jex_core.get_opaque_trace_state()
        return x * 2

    for transform in (fjax.jit, fjax.grad, fjax.vmap):
        seen.clear()
        transform(f)(jnp.ones(()) if transform is fjax.grad else jnp.ones(3))
        assert seen["in"] == seen["again"]
        assert seen["in"] != top
    assert jex_core.get_opaque_trace_state() == top


def test_typeof_key_arrays():
    k = fjax.random.key(0)
    assert repr(fjax.typeof(k)) == "ShapedArray(key<fry>[])"
    ks = fjax.random.split(k, 3)
    a = fjax.typeof(ks)
    assert a.shape == (3,) and a.dtype == k.dtype and a.str_short() == "key<fry>[3]"
    assert isinstance(a, core.AbstractValue) and isinstance(fjax.typeof(jnp.ones(2)), core.AbstractValue)


def test_layout_is_recorded_and_changes_no_value():
    x = jnp.arange(6.0).reshape(2, 3)
    lay = layout.Layout(major_to_minor=(1, 0))
    fmt = layout.Format(lay, None)
    assert fmt == layout.Format(layout.Layout((1, 0)), None) and fmt != layout.Format(layout.Layout((0, 1)))
    np.testing.assert_array_equal(layout.with_layout_constraint(x, lay), x)


def test_parse_flags_with_absl_reads_jax_flags_before_double_dash():
    import subprocess
    import sys

    code = (
        "import fjax; fjax.config.parse_flags_with_absl(); c = fjax.config; "
        "print(c.jax_enable_x64, c.jax_numpy_rank_promotion, c.jax_debug_nans, c.jax_debug_infs)"
    )
    argv = [
        "--jax_enable_x64",
        "--other=1",
        "--jax_numpy_rank_promotion=warn",
        "--nojax_debug_nans",
        "--",
        "--jax_debug_infs",
    ]
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "warn", "False", "False"]


def test_key_arrays_are_jnp_ndarrays():
    assert isinstance(fjax.random.key(0), jnp.ndarray) and isinstance(jnp.ones(2), jnp.ndarray)
    assert not isinstance(np.ones(2), jnp.ndarray)


def test_aval_sharding_is_unsharded_named_sharding():
    a = fjax.typeof(jnp.ones((3, 2)))
    s = a.sharding
    assert repr(s).startswith("NamedSharding(mesh=AbstractMesh((), axis_types=()), spec=P(None, None)")
    assert s.mesh.empty and tuple(s.update(spec=fjax.sharding.PartitionSpec(None)).spec) == (None,)
    assert core.ShapedArray((2,), np.float32, sharding=s) == core.ShapedArray((2,), np.float32)


def test_trace_to_jaxpr_nounits_with_key_arrays():
    def f(k, x):
        k1, k2 = fjax.random.split(k)
        return [fjax.random.normal(k1, (2,)) + x, k2]

    key_aval = fjax.typeof(fjax.random.key(3))
    assert key_aval == core.ShapedArray((), key_aval.dtype)  # a key-typed ShapedArray
    pvals = [pe.PartialVal.unknown(key_aval), pe.PartialVal.unknown(core.ShapedArray((2,), np.float32))]
    jaxpr, out_pvals, consts = pe.trace_to_jaxpr_nounits(f, pvals)
    assert [pv.is_known() for pv in out_pvals] == [False, False]
    assert out_pvals[1][0] == key_aval
    data = fjax.random.key_data(fjax.random.key(3))
    y, k2 = core.eval_jaxpr(jaxpr, consts, data, jnp.zeros(2, jnp.float32))
    e1, e2 = fjax.random.split(fjax.random.key(3))
    np.testing.assert_allclose(y, fjax.random.normal(e1, (2,)), rtol=1e-6)
    np.testing.assert_array_equal(k2, fjax.random.key_data(e2))
    known = pe.trace_to_jaxpr_nounits(f, [pe.PartialVal.known(fjax.random.key(3)), pvals[1]])[1]
    assert known[1].is_known() and known[1].get_known().dtype == key_aval.dtype


def test_partition_spec_unconstrained():
    P = fjax.sharding.PartitionSpec
    assert repr(P(P.UNCONSTRAINED, None)) == "P(UNCONSTRAINED, None)"
    mesh = fjax.sharding.Mesh(np.array(fjax.devices()[:1]), ("x",))
    s = fjax.sharding.NamedSharding(mesh, P("x", P.UNCONSTRAINED))
    x = fjax.device_put(jnp.ones((2, 3)), s)
    np.testing.assert_array_equal(x, np.ones((2, 3)))


def test_key_array_comparisons_as_jax():
    a, b = fjax.random.key(0), fjax.random.key(1)
    assert bool(jnp.allclose(a, a)) and not bool(jnp.allclose(a, b))
    np.testing.assert_array_equal(jnp.isclose(fjax.random.split(a), fjax.random.split(a)), [True, True])
    with pytest.raises(TypeError, match="isclose does not accept dtypes key<fry>, float32"):
        jnp.isclose(a, 1.0)
    with pytest.raises(TypeError, match="equal does not accept dtypes key<fry>, float32"):
        a == 1.0  # noqa: B015
    with pytest.raises(TypeError, match="not_equal does not accept dtypes key<fry>"):
        a != jnp.ones(2)  # noqa: B015


def test_is_leaf_takes_path():
    tree = {"a": (1, 2), "b": [3, (4, 5)]}
    leaves, td = tree_util.tree_flatten_with_path(tree, is_leaf=lambda p, x: len(p) == 1, is_leaf_takes_path=True)
    assert [x for _, x in leaves] == [(1, 2), [3, (4, 5)]]
    out = tree_util.tree_map_with_path(
        lambda p, x: len(p), tree, is_leaf=lambda p, x: isinstance(x, tuple) and len(p) == 2, is_leaf_takes_path=True
    )
    assert out == {"a": (2, 2), "b": [2, 2]}
    assert fjax.tree.leaves_with_path(tree, is_leaf=lambda p, x: False, is_leaf_takes_path=True) == (
        tree_util.tree_leaves_with_path(tree)
    )


def test_make_mesh_takes_the_first_devices_and_axis_types_queries():
    from fjax.sharding import AxisType, Mesh

    m = fjax.make_mesh((1,), ("x",), (AxisType.Auto,))
    assert m.are_all_axes_auto and not m.are_all_axes_explicit
    assert fjax.make_mesh((1,), ("x",)).abstract_mesh.are_all_axes_explicit
    assert Mesh(m.devices, ("x",), axis_types=(AxisType.Manual,)).are_all_axes_manual
    with pytest.raises(ValueError, match="must be >= the product of mesh_shape"):
        fjax.make_mesh((len(fjax.devices()) + 1,), ("x",))


def test_key_copy():
    import copy

    k = fjax.random.split(fjax.random.key(0), 2)
    for c in (k.copy(), copy.copy(k), copy.deepcopy(k)):
        assert c.dtype == k.dtype and bool(jnp.all(c == k)) and c is not k


def test_result_type_of_key_arrays():
    k = fjax.random.split(fjax.random.key(0), 4)
    assert jnp.result_type(k) == k.dtype and fjax.dtypes.result_type(k, k.dtype) == k.dtype
    assert fjax.dtypes.result_type(fjax.typeof(k)) == k.dtype
    with pytest.raises(ValueError, match="is not a valid dtype for JAX type promotion"):
        jnp.result_type(k, 1.0)


def test_with_sharding_constraint_under_set_mesh():
    from fjax.sharding import AxisType
    from fjax.sharding import PartitionSpec as P

    mesh = fjax.make_mesh((1, 1), ("in", "out"), axis_types=(AxisType.Auto,) * 2)
    x = jnp.arange(8.0).reshape(2, 4)
    with fjax.set_mesh(mesh):
        np.testing.assert_array_equal(fjax.lax.with_sharding_constraint(x, P("in", "out")), x)
        np.testing.assert_array_equal(fjax.jit(lambda y: fjax.lax.with_sharding_constraint(y * 2, P("in")))(x), 2 * x)
    am = fjax.sharding.AbstractMesh((2,), ("a",))
    with pytest.raises(ValueError, match="divisible by 2"):
        fjax.sharding.NamedSharding(am, P("a")).check_shape((3,))


def test_sharding_is_equivalent_to():
    import subprocess
    import sys

    from fjax.sharding import Mesh, NamedSharding
    from fjax.sharding import PartitionSpec as P

    m = Mesh(np.array(fjax.devices()[:1]), ("x",))
    assert NamedSharding(m, P("x")).is_equivalent_to(NamedSharding(m, P()), 2)
    assert jnp.ones(2).sharding.is_equivalent_to(NamedSharding(m, P()), 1)
    code = (
        "import fjax, numpy as np; from fjax.sharding import NamedSharding, PartitionSpec as P, Mesh; "
        "m = Mesh(np.array(fjax.devices()), ('x',)); a, b = NamedSharding(m, P('x')), NamedSharding(m, P()); "
        "print(a.is_equivalent_to(b, 1), a.is_equivalent_to(NamedSharding(m, P('x', None)), 2), "
        "b.is_equivalent_to(fjax.numpy.ones(2).sharding, 1))"
    )
    env = {**__import__("os").environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.split() == ["False", "True", "False"]
