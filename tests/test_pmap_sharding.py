"""Several CPU devices in one process (jax_num_cpu_devices): pmap, shard_map, meshes, shardings,
device_put onto a sharding; results checked against numpy."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import _devices, lax
from fjax.sharding import Mesh, NamedSharding
from fjax.sharding import PartitionSpec as P


@pytest.fixture(scope="module", autouse=True)
def four_devices():
    """Four CPU devices for this module (the topology is reset around it, as if set before first
    use, which is when JAX requires jax_num_cpu_devices to be set)."""
    old = fjax.config.jax_num_cpu_devices
    _devices._topology_changed()
    _devices._topology = None
    fjax.config.update("jax_num_cpu_devices", 4)
    yield
    _devices._topology = None
    fjax.config.update("jax_num_cpu_devices", old)
    _devices._topology_changed()


def test_devices():
    assert fjax.device_count() == 4 and fjax.local_device_count() == 4
    assert [d.id for d in fjax.devices()] == [0, 1, 2, 3]
    assert fjax.local_devices() == fjax.devices()
    assert fjax.process_index() == 0 and fjax.process_count() == 1
    assert repr(fjax.devices()[2]) == "CpuDevice(id=2)"
    with pytest.raises(RuntimeError, match="before backends are initialized"):
        fjax.config.update("jax_num_cpu_devices", 2)


_pmapped = fjax.pmap(
    lambda x, y: (lax.psum(x * y, "i"), lax.all_gather(x, "i"), x - lax.pmean(x, "i"), lax.axis_index("i")),
    axis_name="i",
)


@given(st.integers(1, 4), st.integers(0, 2**16))
def test_pmap_collectives(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = rng.standard_normal((n, 3)).astype(np.float32)
    s, g, c, i = _pmapped(x, y)
    np.testing.assert_allclose(s, np.broadcast_to((x * y).sum(0), x.shape), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(g, np.broadcast_to(x, (n,) + x.shape))
    np.testing.assert_allclose(c, x - x.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(i, np.arange(n))
    assert s.sharding.device_set == set(fjax.devices()[:n])
    shards = s.addressable_shards
    assert [sh.device.id for sh in shards] == list(range(n))
    # JAX 0.10's pmap results keep the mapped axis in each shard: shard i is x[i:i+1]
    np.testing.assert_array_equal(shards[-1].data, np.asarray(s)[n - 1 : n])
    assert shards[-1].index == (slice(n - 1, n), slice(None))


def test_pmap_options():
    f = fjax.pmap(lambda x, k, y: x * k + y, axis_name="i", in_axes=(0, None, 1), static_broadcasted_argnums=1)
    x, y = np.ones((2, 3), np.float32), np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_allclose(f(x, 3, y), 3 + y.T)
    np.testing.assert_allclose(f(x, 5, y), 5 + y.T)
    g = fjax.pmap(lambda x: (x, lax.psum(x, "i")), axis_name="i", out_axes=(1, None))
    a, b = g(np.arange(8.0, dtype=np.float32).reshape(4, 2))
    assert a.shape == (2, 4) and b.shape == (2,)
    np.testing.assert_allclose(b, [12.0, 16.0])
    h = fjax.pmap(lambda x: x + 1, devices=fjax.devices()[2:])
    assert h(np.zeros((2, 1), np.float32)).sharding.device_set == set(fjax.devices()[2:])
    with pytest.raises(ValueError, match="requires 5 logical devices, but only 4"):
        fjax.pmap(lambda x: x)(np.zeros(5, np.float32))
    with pytest.raises(ValueError, match="out_axes is None"):
        fjax.pmap(lambda x: x, out_axes=None)(np.arange(2.0))


def test_pmap_grad_and_jit():
    # the data-parallel pattern: per-device gradients averaged with pmean
    w = np.array([0.5, -1.0], np.float32)
    x = np.random.default_rng(0).standard_normal((4, 8, 2)).astype(np.float32)

    def loss(w, xb):
        return jnp.mean((xb @ w) ** 2)

    step = fjax.pmap(lambda w, xb: lax.pmean(fjax.grad(loss)(w, xb), "d"), axis_name="d", in_axes=(None, 0))
    g = step(w, x)
    ref = fjax.grad(loss)(w, x.reshape(32, 2))
    np.testing.assert_allclose(g, np.broadcast_to(ref, (4, 2)), rtol=1e-5)
    np.testing.assert_allclose(fjax.jit(lambda w, x: step(w, x) * 2)(w, x), 2 * np.asarray(g), rtol=1e-6)


def test_mesh_and_named_sharding():
    mesh = fjax.make_mesh((2, 2), ("x", "y"))
    assert mesh.shape == {"x": 2, "y": 2} and mesh.size == 4 and mesh.axis_names == ("x", "y")
    x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    s = NamedSharding(mesh, P("x", "y"))
    a = fjax.device_put(x, s)
    assert a.sharding == s and a.sharding.shard_shape((4, 4)) == (2, 2)
    by_dev = {sh.device.id: sh for sh in a.addressable_shards}
    np.testing.assert_array_equal(by_dev[1].data, x[0:2, 2:4])
    np.testing.assert_array_equal(by_dev[2].data, x[2:4, 0:2])
    assert by_dev[3].index == (slice(2, 4), slice(2, 4))
    r = fjax.device_put(x, NamedSharding(mesh, P()))
    assert r.sharding.is_fully_replicated and [sh.replica_id for sh in r.addressable_shards] == [0, 1, 2, 3]
    # computations see the global value
    np.testing.assert_allclose(fjax.jit(lambda v: v * 2)(a), 2 * x)
    np.testing.assert_allclose(a + 1, x + 1)
    with pytest.raises(ValueError, match="divisible"):
        fjax.device_put(np.ones((3, 4)), s)
    with pytest.raises(ValueError, match="not found in mesh"):
        NamedSharding(mesh, P("z"))
    d = fjax.device_put(x, fjax.devices()[3])
    assert d.devices() == {fjax.devices()[3]}
    assert fjax.device_put(x).sharding.device_set == {fjax.devices()[0]}
    assert isinstance(Mesh(np.array(fjax.devices()).reshape(4), ("b",)), Mesh)


_mesh = None


def _get_mesh():
    global _mesh
    if _mesh is None:
        _mesh = fjax.make_mesh((2, 2), ("x", "y"))
    return _mesh


@given(st.integers(0, 2**16))
def test_shard_map(seed):
    mesh = _get_mesh()
    x = np.random.default_rng(seed).standard_normal((4, 6)).astype(np.float32)
    total = fjax.shard_map(lambda b: lax.psum(jnp.sum(b), ("x", "y")), mesh=mesh, in_specs=P("x", "y"), out_specs=P())
    np.testing.assert_allclose(total(x), x.sum(), rtol=1e-5)
    # blocks scaled by their position along x, reassembled
    scaled = fjax.shard_map(lambda b: b * lax.axis_index("x"), mesh=mesh, in_specs=P("x", None), out_specs=P("x", None))
    np.testing.assert_allclose(scaled(x), x * np.repeat([0, 1], 2)[:, None])
    # a row-sharded matmul with a replicated right operand, gathered along y
    w = np.random.default_rng(seed + 1).standard_normal((6, 4)).astype(np.float32)
    mm = fjax.shard_map(
        lambda a, b: lax.psum(a @ b, "y"), mesh=mesh, in_specs=(P("x", "y"), P("y", None)), out_specs=P("x", None)
    )
    np.testing.assert_allclose(mm(x, w), x @ w, rtol=1e-4, atol=1e-5)
    gathered = fjax.shard_map(
        lambda b: lax.all_gather(b, ("x", "y"), tiled=True), mesh=mesh, in_specs=P(("x", "y")), out_specs=P()
    )
    np.testing.assert_array_equal(gathered(x), x)


def test_shard_map_grad_jit_and_errors():
    mesh = _get_mesh()
    x = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    f = fjax.shard_map(
        lambda b: lax.psum(jnp.sum(jnp.sin(b)), ("x", "y")), mesh=mesh, in_specs=P("x", "y"), out_specs=P()
    )
    np.testing.assert_allclose(fjax.grad(f)(x), np.cos(x), rtol=1e-5)
    np.testing.assert_allclose(fjax.jit(f)(x), np.sin(x).sum(), rtol=1e-5)
    bad = fjax.shard_map(lambda b: b, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x"))
    with pytest.raises(ValueError, match="mesh axis 'y'"):
        bad(x)
    loose = fjax.shard_map(lambda b: b, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x"), check_vma=False)
    np.testing.assert_array_equal(loose(x), x[:, :2])
    with mesh:
        inner = fjax.shard_map(lambda b: b + 1, in_specs=P("x"), out_specs=P("x"))
        np.testing.assert_array_equal(inner(x), x + 1)
    with pytest.raises(ValueError, match="not divisible"):
        fjax.shard_map(lambda b: b, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(np.ones((3, 2)))
    from fjax.experimental.shard_map import shard_map as legacy

    np.testing.assert_array_equal(legacy(lambda b: b * 2, mesh, P("x"), P("x"))(x), 2 * x)


def test_with_sharding_constraint():
    mesh = _get_mesh()
    x = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    f = fjax.jit(lambda v: lax.with_sharding_constraint(v * 2, NamedSharding(mesh, P("x"))))
    np.testing.assert_array_equal(f(x), 2 * x)
    with mesh:
        np.testing.assert_array_equal(lax.with_sharding_constraint(x, P("x", "y")), x)
    with pytest.raises(ValueError, match="divisible"):
        lax.with_sharding_constraint(np.ones((3, 2)), NamedSharding(mesh, P("x")))


def test_shard_map_auto_axes():
    # auto= (the older spelling of axis_names=): the body is manual over the other mesh axes and
    # sees the automatic ones unsplit
    mesh = _get_mesh()
    x = np.random.default_rng(3).standard_normal((4, 4)).astype(np.float32)
    f = fjax.shard_map(lambda b: lax.psum(b, "x"), mesh=mesh, in_specs=P("x"), out_specs=P(), auto=frozenset({"y"}))
    np.testing.assert_allclose(f(x), x[:2] + x[2:], rtol=1e-6)
    g = fjax.shard_map(lambda b: lax.psum(b, "x"), mesh=mesh, in_specs=P("x"), out_specs=P(), axis_names={"x"})
    np.testing.assert_allclose(g(x), f(x))
    with pytest.raises(NotImplementedError, match="automatic here"):
        fjax.shard_map(lambda b: b, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x"), auto=frozenset({"y"}))(x)
    with pytest.raises(ValueError, match="not axes of the mesh"):
        fjax.shard_map(lambda b: b, mesh=mesh, in_specs=P("x"), out_specs=P("x"), auto=frozenset({"z"}))(x)


_w0 = np.array([0.5, -1.0, 2.0], np.float32)


def _dp_step(w, x):
    return w - 0.1 * fjax.grad(lambda w: jnp.mean((x @ w) ** 2))(w), jnp.mean(x)


def test_jit_in_out_shardings():
    mesh = _get_mesh()
    repl, rows = NamedSharding(mesh, P()), NamedSharding(mesh, P(("x", "y")))
    step = fjax.jit(_dp_step, in_shardings=(repl, rows), out_shardings=(repl, repl))
    x = np.random.default_rng(4).standard_normal((8, 3)).astype(np.float32)
    w, m = step(_w0, x)
    ref_w, ref_m = fjax.jit(_dp_step)(_w0, x)
    np.testing.assert_array_equal(w, ref_w)
    np.testing.assert_array_equal(m, ref_m)
    assert w.sharding == repl and m.sharding == repl and len(w.addressable_shards) == 4
    with pytest.raises(ValueError, match="divisible by 4"):
        step(_w0, x[:6])
    with pytest.raises(ValueError, match="in_shardings has 1 entries"):
        fjax.jit(_dp_step, in_shardings=(repl,))(_w0, x)
    # a bare PartitionSpec takes the mesh of `with mesh:`; outputs land on it
    with mesh:
        double = fjax.jit(lambda a: 2 * a, in_shardings=P("x"), out_shardings=P("x", "y"))
        y = double(x[:4, :2])
    np.testing.assert_array_equal(y, 2 * x[:4, :2])
    assert y.sharding == NamedSharding(mesh, P("x", "y"))
    assert [s.index for s in y.addressable_shards][1] == (slice(0, 2), slice(1, 2))
    with pytest.raises(RuntimeError, match="without a mesh"):
        fjax.jit(lambda a: a, in_shardings=P("x"))(x)
    # the decorator form, and static arguments are skipped by in_shardings
    scaled = fjax.jit(static_argnums=1, in_shardings=rows)(lambda a, k: a * k)
    np.testing.assert_array_equal(scaled(x, 3), x * 3)


def _local_loss(w, x):
    return jnp.mean(jnp.sin(x @ w))


_vma_mesh_cache: list = []


def _vma_fns():
    """Gradients taken inside shard_map bodies (built once: numba compiles are slow)."""
    if not _vma_mesh_cache:
        mesh = fjax.make_mesh((4,), ("d",))
        sm = lambda f, out: fjax.jit(fjax.shard_map(f, mesh=mesh, in_specs=(P(), P("d")), out_specs=out))  # noqa: E731
        _vma_mesh_cache.append(
            dict(
                # a local loss: the gradient for replicated parameters is summed over the instances
                local=sm(lambda w, x: fjax.grad(_local_loss)(w, x), P()),
                # the pmean'd loss (+ an invariant term): the global mean gradient, the invariant term once
                mean=sm(
                    lambda w, x: fjax.grad(lambda w: lax.pmean(_local_loss(w, x), "d") + 0.5 * jnp.sum(w * w))(w),
                    P(),
                ),
                # the gradient for the sharded input: per shard
                data=sm(lambda w, x: fjax.grad(lambda x: lax.psum(_local_loss(w, x), "d"))(x), P("d")),
                # check_vma=False keeps pmap's per-instance semantics
                loose=fjax.shard_map(
                    lambda w, x: fjax.grad(_local_loss)(w, x)[None],
                    mesh=mesh,
                    in_specs=(P(), P("d")),
                    out_specs=P("d"),
                    check_vma=False,
                ),
            )
        )
    return _vma_mesh_cache[0]


@given(st.integers(0, 2**16))
def test_grad_inside_shard_map_follows_vma(seed):
    # JAX's varying-manual-axes rules: psum transposes to pvary (no sum) and the implicit pvary of
    # a replicated value transposes to psum
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    w = rng.standard_normal(3).astype(np.float32)
    fns = _vma_fns()
    blocks = x.reshape(4, 2, 3)
    per = np.stack([np.cos(b @ w) @ b / 2 for b in blocks])  # d mean(sin(b @ w)) / dw, per block
    np.testing.assert_allclose(fns["local"](w, x), per.sum(0), rtol=2e-3, atol=1e-5)
    np.testing.assert_allclose(fns["mean"](w, x), per.mean(0) + w, rtol=2e-3, atol=1e-5)
    dx = np.concatenate([np.cos(b @ w)[:, None] * w[None] / 2 for b in blocks])
    np.testing.assert_allclose(fns["data"](w, x), dx, rtol=2e-3, atol=1e-5)
    np.testing.assert_allclose(fns["loose"](w, x), per, rtol=2e-3, atol=1e-5)


def test_grad_inside_shard_map_under_jit_in_the_body_raises():
    mesh = fjax.make_mesh((4,), ("d",))
    f = fjax.shard_map(
        lambda w, x: fjax.jit(fjax.grad(_local_loss))(w, x), mesh=mesh, in_specs=(P(), P("d")), out_specs=P()
    )
    with pytest.raises(NotImplementedError, match="check_vma=True"):
        f(np.ones(3, np.float32), np.ones((8, 3), np.float32))


def test_pmap_result_sharding_as_jax_0_10():
    # JAX 0.10: a NamedSharding over the mapped devices (axis '_internal_pmap_axis_name'); each
    # shard keeps the mapped axis (x[i:i+1]); chex's pmap variant reduces with shards[0].data[0]
    y = fjax.pmap(lambda x: x * 2)(jnp.arange(4.0))
    assert isinstance(y.sharding, NamedSharding)
    assert y.sharding.mesh.axis_names == ("_internal_pmap_axis_name",)
    assert tuple(y.sharding.spec) == ("_internal_pmap_axis_name",)
    shards = [(s.index, s.data.shape) for s in y.addressable_shards]
    assert shards[:2] == [((slice(0, 1),), (1,)), ((slice(1, 2),), (1,))]
    assert float(y.addressable_shards[3].data[0]) == 6.0
    z = fjax.pmap(lambda x: x, out_axes=1)(jnp.ones((4, 3)))
    assert tuple(z.sharding.spec) == (None, "_internal_pmap_axis_name")
    assert z.addressable_shards[2].data.shape == (3, 1)


def test_psum_of_a_numpy_array_stays_concrete_in_pmap():
    # JAX's constant case: psum of an operand no transform traces is operand * axis size, and
    # numpy stays numpy, so Python code inside pmap can inspect it (chex's variants tests do)
    seen = []

    def f(x, a):
        s = lax.psum(np.asarray(a, np.float32), "j")
        seen.append(s)
        return x + lax.psum(x, "j")

    out = fjax.pmap(f, axis_name="j", static_broadcasted_argnums=(1,))(jnp.ones(4), (1.0, 2.0))
    assert type(seen[0]) is np.ndarray and seen[0].dtype == np.float32
    np.testing.assert_array_equal(seen[0], [4.0, 8.0])
    np.testing.assert_array_equal(out, [5.0] * 4)
