"""``jax.custom_batching``, the new ``jax.debug`` functions (breakpoint, log, sharding views) and
the ``jax.sharding`` mesh-context names.

Expected values were recorded with JAX 0.10.2 (``/tmp/jaxenv``): for ``f(x, y) = sin(x) * y``
with the vmap rule ``cos(x) * y``, ``vmap(f, in_axes=(0, None))(arange(3.), 2.)`` gives
``[2., 1.0806046, -0.8322937]`` (the rule), ``jvp(f, (1., 2.), (1., 0.))`` gives
``(1.6829419, 1.0806046)`` (fun's derivative) and ``grad(lambda x: vmap(f, (0, None))(x, 2.).sum())``
gives ``[-0., -1.6829419, -1.8185948]`` (the rule's derivative). The ``(jdb)`` transcript of
``p y`` / unknown names follows JAX's CLI debugger.
"""

from __future__ import annotations

import io
import logging

import numpy as np
import pytest

import fjax as jax
import fjax.numpy as jnp
from fjax.custom_batching import custom_vmap, sequential_vmap

RULE_CALLS: list = []


@custom_vmap
def f(x, y):
    return jnp.sin(x) * y


@f.def_vmap
def f_rule(axis_size, in_batched, x, y):
    RULE_CALLS.append((axis_size, list(in_batched)))
    return jnp.cos(x) * y, in_batched[0] or in_batched[1]


X = jnp.arange(3.0)
RULE_OUT = [2.0, 1.0806046, -0.8322937]


def test_custom_vmap_uses_rule_under_vmap_and_jit():
    RULE_CALLS.clear()
    np.testing.assert_allclose(f(1.0, 2.0), 1.6829419, rtol=1e-6)
    np.testing.assert_allclose(jax.vmap(f, in_axes=(0, None))(X, 2.0), RULE_OUT, rtol=1e-6)
    assert RULE_CALLS == [(3, [True, False])]
    np.testing.assert_allclose(jax.jit(jax.vmap(f, in_axes=(0, None)))(X, 2.0), RULE_OUT, rtol=1e-6)
    np.testing.assert_allclose(jax.vmap(jax.jit(f), in_axes=(0, None))(X, 2.0), RULE_OUT, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(f)(1.0, 2.0), 1.6829419, rtol=1e-6)
    both = jax.vmap(f)(X, X)  # both batched: [0., 0.5403023, -0.8322937] in JAX
    np.testing.assert_allclose(both, [0.0, 0.5403023, -0.8322937], rtol=1e-6, atol=1e-7)
    nested = jax.vmap(jax.vmap(f, in_axes=(0, None)), in_axes=(0, None))(jnp.ones((2, 3)), 2.0)
    np.testing.assert_allclose(nested, np.full((2, 3), 1.0806046), rtol=1e-6)
    assert "custom_vmap_call" in str(jax.make_jaxpr(f)(1.0, 2.0))


def test_custom_vmap_derivatives():
    p, t = jax.jvp(f, (1.0, 2.0), (1.0, 0.0))
    np.testing.assert_allclose([p, t], [1.6829419, 1.0806046], rtol=1e-6)
    g = jax.grad(lambda x: jax.vmap(f, in_axes=(0, None))(x, 2.0).sum())(X)
    np.testing.assert_allclose(g, [0.0, -1.6829419, -1.8185948], rtol=1e-6, atol=1e-7)
    # JAX refuses reverse mode of an unbatched custom_vmap function; fjax differentiates fun
    np.testing.assert_allclose(jax.grad(f)(1.0, 2.0), 1.0806046, rtol=1e-6)


def test_custom_vmap_errors():
    @custom_vmap
    def g(x):
        return x

    with pytest.raises(AttributeError, match="No batching rule defined for custom_vmap function g"):
        jax.vmap(g)(X)

    @g.def_vmap
    def bad(axis_size, in_batched, x):
        return x, [True]

    with pytest.raises(ValueError, match=r"custom vmap rule \(bad\) do not match"):
        jax.vmap(g)(X)


def test_sequential_vmap():
    shapes = []

    def h(a):
        shapes.append(a.shape)
        return a.sum()

    sh = sequential_vmap(h)
    np.testing.assert_allclose(jax.vmap(sh)(jnp.ones((3, 2))), [2.0, 2.0, 2.0])
    assert (2,) in shapes and (3, 2) not in shapes


def _frames_values():
    def fn(x):
        y = x * 2
        jax.debug.breakpoint(stdin=io.StringIO("p y\nfoo\nw\nc\n"), stdout=OUT[0])
        return y + 1

    return fn


OUT: list = [None]


@pytest.mark.parametrize("wrap", ["eager", "jit"])
def test_breakpoint_cli(wrap):
    fn = _frames_values()
    fn = jax.jit(fn) if wrap == "jit" else fn
    OUT[0] = io.StringIO()
    np.testing.assert_allclose(fn(jnp.arange(3.0)), [1.0, 3.0, 5.0])
    text = OUT[0].getvalue()
    assert text.startswith("Entering jdb:\n(jdb) Array([0., 2., 4.], dtype=float32)\n")
    assert "(jdb) *** NameError: name 'foo' is not defined" in text
    assert "Traceback:" in text and "jax.debug.breakpoint(" in text


def test_breakpoint_backend_sees_runtime_values(monkeypatch):
    from fjax import _debugger

    seen = []
    monkeypatch.setitem(_debugger._debugger_backends, "cli", lambda frames, **kw: seen.append(frames[0].locals["z"]))

    @jax.jit
    def fn(x):
        z = x + 1
        jax.debug.breakpoint()
        return z

    fn(jnp.float32(1.0))
    fn(jnp.float32(5.0))  # no retrace: the values are those of each run
    assert [float(v) for v in seen] == [2.0, 6.0]


def test_debug_log(caplog):
    with caplog.at_level(logging.INFO, logger="jax._src.debugging"):
        jax.jit(lambda x: jax.debug.log("x={x}", x=x) or x)(jnp.float32(3.0))
    assert [r.getMessage() for r in caplog.records] == ["x=3.0"]


def test_sharding_views_and_mesh_context(capsys):
    jax.debug.visualize_array_sharding(jnp.arange(4.0))
    assert "CPU 0" in capsys.readouterr().out
    got = []
    jax.debug.inspect_array_sharding(jnp.arange(4.0), callback=got.append)
    assert got and got[0].device_set == {jax.devices()[0]}
    from fjax.sharding import AbstractMesh, AxisType

    assert (
        list(AxisType) == [AxisType.Auto, AxisType.Explicit, AxisType.Manual] and repr(AxisType.Explicit) == "Explicit"
    )
    # JAX: AbstractMesh((2, 3), ('a', 'b')) -> AbstractMesh('a': 2, 'b': 3, axis_types=(Auto, Auto))
    assert repr(AbstractMesh((2, 3), ("a", "b"))) == "AbstractMesh('a': 2, 'b': 3, axis_types=(Auto, Auto))"
    assert repr(jax.sharding.get_abstract_mesh()) == "AbstractMesh((), axis_types=())"
    assert jax.sharding.get_mesh().empty
    n = jax.device_count()
    mesh = jax.make_mesh((n,), ("x",))
    with pytest.raises(ValueError, match="needs a mesh"):
        jax.reshard(jnp.arange(4.0 * n), jax.P("x"))
    with jax.set_mesh(mesh) as m:
        assert m is mesh and jax.sharding.get_mesh() is mesh
        assert jax.sharding.get_abstract_mesh().axis_names == ("x",)
        y = jax.reshard(jnp.arange(4.0 * n), jax.P("x"))
        assert y.sharding == jax.NamedSharding(mesh, jax.P("x"))
        np.testing.assert_array_equal(jax.jit(lambda a: jax.reshard(a, jax.P()))(y), np.arange(4.0 * n))
        with pytest.raises(ValueError, match="cannot change the size of the mesh"):
            with jax.sharding.use_abstract_mesh(AbstractMesh((n + 1,), ("z",))):
                pass
        with jax.sharding.use_abstract_mesh(AbstractMesh((n,), ("z",))):
            assert jax.sharding.get_abstract_mesh().axis_names == ("z",)
        doubled = jax.sharding.auto_axes(lambda a: a * 2, out_sharding=jax.P("x"))(jnp.arange(4.0 * n))
        assert doubled.sharding.spec == jax.P("x")
        spec_in = jax.sharding.explicit_axes(lambda a: a.sharding.spec, in_sharding=jax.P("x"))(jnp.arange(4.0 * n))
        assert spec_in == jax.P("x")
    assert jax.sharding.get_abstract_mesh().empty
    s = jax.sharding.make_single_device_sharding(jax.devices()[0])
    assert s.device_set == {jax.devices()[0]}
