"""JAX names added in session 12: ``jax.experimental.mesh_utils``, ``jax.lax.stage``,
``jax.lax.ragged_all_to_all``, ``jax.legacy_prng_key`` / ``jax.enable_custom_prng`` and
``jax.extend.core.call_impl`` / ``InconclusiveDimensionOperation``.

Expected values marked "JAX" were recorded with JAX 0.10.2 on CPU
(``XLA_FLAGS=--xla_force_host_platform_device_count=8`` for the meshes).
"""

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax._devices import Device
from fjax.experimental import mesh_utils

# ---------------------------------------------------------------------------------------------
# mesh_utils

DEVS = [Device(i, i // 4) for i in range(8)]  # two processes of four devices


def _ids(mesh):
    return np.vectorize(lambda d: d.id)(mesh).tolist()


def test_create_device_mesh_as_jax():
    assert _ids(mesh_utils.create_device_mesh((2, 4), DEVS)) == [[0, 1, 2, 3], [4, 5, 6, 7]]  # JAX
    assert _ids(mesh_utils.create_device_mesh([4, 2], DEVS[::-1])) == [[7, 6], [5, 4], [3, 2], [1, 0]]  # JAX
    m = mesh_utils.create_device_mesh((2, 4), DEVS, contiguous_submeshes=True, allow_split_physical_axes=True)
    assert m.shape == (2, 4) and m.dtype == object
    one = mesh_utils.create_device_mesh((1,))  # default: fjax.devices()
    assert list(one) == fjax.devices()[:1]
    mesh = fjax.sharding.Mesh(one, ("x",))
    assert mesh.shape == {"x": 1}


def test_create_device_mesh_errors():
    with pytest.raises(ValueError, match=r"Number of devices 8 must equal the product of mesh_shape \(3,\)"):
        mesh_utils.create_device_mesh((3,), DEVS)
    with pytest.raises(ValueError, match=r"should be a sequence of ints. Got \('a',\)"):
        mesh_utils.create_device_mesh(("a",), DEVS)
    with pytest.raises(TypeError):
        mesh_utils.create_device_mesh(4, DEVS)
    with pytest.raises(ValueError, match="Number of devices"):
        mesh_utils.create_device_mesh((len(fjax.devices()) + 1,))


def test_create_device_mesh_gpu_sorted_and_handlers():
    class FakeGpu:
        platform, device_kind = "gpu", "fake"

        def __init__(self, i):
            self.id = i

    gpus = [FakeGpu(i) for i in (3, 1, 0, 2)]
    assert _ids(mesh_utils.create_device_mesh((2, 2), gpus)) == [[0, 1], [2, 3]]  # sorted by id, as JAX
    calls = []

    def handler(shape, devices, *, contiguous_submeshes):
        calls.append((shape, contiguous_submeshes))
        return np.array(devices[::-1], dtype=object).reshape(shape)

    mesh_utils.device_kind_handler_dict["fake"] = handler
    try:
        assert _ids(mesh_utils.create_device_mesh((4,), gpus)) == [2, 0, 1, 3]
    finally:
        del mesh_utils.device_kind_handler_dict["fake"]
    assert calls == [((4,), False)]


def test_create_hybrid_device_mesh():
    m = mesh_utils.create_hybrid_device_mesh((2, 2), (2, 1), DEVS, process_is_granule=True)
    assert _ids(m) == [[0, 1], [2, 3], [4, 5], [6, 7]]
    m = mesh_utils.create_hybrid_device_mesh((1, 4), (1, 2), DEVS, process_is_granule=True)
    assert _ids(m) == [[0, 1, 2, 3, 4, 5, 6, 7]]
    with pytest.raises(ValueError, match="does not have attribute slice_index. See `process_is_granule` option"):
        mesh_utils.create_hybrid_device_mesh((4,), (2,), DEVS)
    with pytest.raises(ValueError, match=r"Number of slices 2 must equal the product of dcn_mesh_shape \(1,\)"):
        mesh_utils.create_hybrid_device_mesh((8,), (1,), DEVS, process_is_granule=True)


# ---------------------------------------------------------------------------------------------
# lax.stage


def test_stage():
    x = lax.stage(1.0)  # JAX: Array(1., dtype=float32, weak_type=True)
    assert isinstance(x, fjax.Array) and x.dtype == np.float32 and x.weak_type
    assert lax.stage(np.arange(3)).dtype == np.int32
    seen = []

    def f(y):
        c = lax.stage(np.ones(2, np.float32))
        seen.append(isinstance(c, fjax.core.Tracer))
        return c + y

    jaxpr = fjax.make_jaxpr(f)(1.0)
    assert seen == [True] and len(jaxpr.jaxpr.invars) == 1
    np.testing.assert_array_equal(np.asarray(fjax.jit(f)(1.0)), [2.0, 2.0])
    assert float(fjax.grad(lambda v: lax.stage(v) * v)(2.0)) == 4.0
    np.testing.assert_array_equal(np.asarray(fjax.vmap(lax.stage)(np.ones(2))), [1.0, 1.0])
    with pytest.raises(TypeError, match="Error interpreting argument to stage as a JAX value"):
        lax.stage("a")


# ---------------------------------------------------------------------------------------------
# lax.ragged_all_to_all


def _ragged_ref(operands, outputs, io, ss, oo):
    """The docstring's pseudocode of jax.lax.ragged_all_to_all, one member after another."""
    p, k = io.shape
    per = k // p
    results = [o.copy() for o in outputs]
    for src in range(p):
        for i in range(k):
            dst = i // per
            results[dst][oo[src, i] : oo[src, i] + ss[src, i]] = operands[src][io[src, i] : io[src, i] + ss[src, i]]
    return np.stack(results)


def _recv_sizes(ss, p):
    per = ss.shape[1] // p
    rs = np.zeros_like(ss)
    for j in range(p):
        for src in range(p):
            rs[j, src * per : (src + 1) * per] = ss[src, j * per : (j + 1) * per]
    return rs


def _ragged(*args, groups=None):
    return lax.ragged_all_to_all(*args, axis_name="i", axis_index_groups=groups)


def test_ragged_all_to_all_jax_doc_example():
    operand = np.array([[1, 2, 2], [3, 4, 0]], np.float32)
    output = np.zeros((2, 4), np.float32)
    io = np.array([[0, 1], [0, 1]], np.int32)
    ss = np.array([[1, 2], [1, 1]], np.int32)
    oo = np.array([[0, 0], [1, 2]], np.int32)
    rs = np.array([[1, 1], [2, 1]], np.int32)
    expected = [[1, 3, 0, 0], [2, 2, 4, 0]]  # the docstring's result
    np.testing.assert_array_equal(
        np.asarray(fjax.vmap(_ragged, axis_name="i")(operand, output, io, ss, oo, rs)), expected
    )
    jitted = fjax.jit(fjax.vmap(_ragged, axis_name="i"))(operand, output, io, ss, oo, rs)
    np.testing.assert_array_equal(np.asarray(jitted), expected)


@st.composite
def _ragged_case(draw):
    p = draw(st.sampled_from([2, 3]))
    per = draw(st.sampled_from([1, 2]))
    n, slot = 5, 3
    k = p * per
    ss = np.array([[draw(st.integers(0, slot)) for _ in range(k)] for _ in range(p)], np.int32)
    io = np.array([[draw(st.integers(0, n - s)) for s in row] for row in ss], np.int32)
    # each receiver's slots are disjoint (the order of overlapping writes is unspecified in JAX)
    oo = np.array(
        [
            [(src * per + i % per) * slot + draw(st.integers(0, slot - s)) for i, s in enumerate(row)]
            for src, row in enumerate(ss)
        ],
        np.int32,
    )
    seed = draw(st.integers(0, 2**31 - 1))
    return p, per, io, ss, oo, seed


@given(_ragged_case())
def test_ragged_all_to_all_matches_reference(case):
    p, per, io, ss, oo, seed = case
    rs_ = np.random.default_rng(seed)
    m = p * per * 3
    operands = rs_.standard_normal((p, 5, 2)).astype(np.float32)
    outputs = rs_.standard_normal((p, m, 2)).astype(np.float32)
    ref = _ragged_ref(operands, outputs, io, ss, oo)
    got = fjax.vmap(_ragged, axis_name="i")(operands, outputs, io, ss, oo, _recv_sizes(ss, p))
    np.testing.assert_array_equal(np.asarray(got), ref)


def test_ragged_all_to_all_groups_and_linearity():
    rng = np.random.default_rng(7)
    p, m = 2, 4
    ss = np.array([[1, 2], [2, 1]], np.int32)
    io = np.array([[0, 1], [1, 0]], np.int32)
    oo = np.array([[0, 0], [2, 1]], np.int32)
    operands = rng.standard_normal((4, 3)).astype(np.float32)
    outputs = rng.standard_normal((4, m)).astype(np.float32)
    groups = [[0, 2], [1, 3]]
    # member g[j] of group g plays member j of an independent exchange of size 2
    io4, ss4, oo4 = (np.stack([a[0], a[0], a[1], a[1]]) for a in (io, ss, oo))
    rs4 = np.stack([_recv_sizes(ss, p)[j] for j in (0, 0, 1, 1)])
    got = fjax.vmap(lambda *a: _ragged(*a, groups=groups), axis_name="i")(operands, outputs, io4, ss4, oo4, rs4)
    for g in groups:
        ref = _ragged_ref(operands[g], outputs[g], io, ss, oo)
        np.testing.assert_array_equal(np.asarray(got)[g], ref)
    with pytest.raises(ValueError, match="cover the 4 axis indices exactly once"):
        fjax.vmap(lambda *a: _ragged(*a, groups=[[0, 1], [1, 2]]), axis_name="i")(operands, outputs, io4, ss4, oo4, rs4)
    # linear in (operand, output): the VJP is the transpose of the map itself
    f2 = fjax.vmap(_ragged, axis_name="i")
    args = (operands[:2], outputs[:2], io, ss, oo, _recv_sizes(ss, p))
    ct = rng.standard_normal((2, m)).astype(np.float32)
    d_op, d_out = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, m)).astype(np.float32)
    _, vjp = fjax.vjp(lambda a, b: f2(a, b, *args[2:]), *args[:2])
    g_op, g_out = vjp(ct)
    lhs = np.sum(np.asarray(g_op) * d_op) + np.sum(np.asarray(g_out) * d_out)
    rhs = np.sum(ct * np.asarray(f2(d_op, d_out, *args[2:])))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-5)


def test_ragged_all_to_all_errors():
    op, out = np.zeros((2, 3)), np.zeros((2, 4))
    i2 = np.zeros((2, 2), np.int32)
    vm = fjax.vmap(_ragged, axis_name="i")
    with pytest.raises(ValueError, match="input_offsets must be integer type"):
        vm(op, out, i2.astype(np.float32), i2, i2, i2)
    with pytest.raises(ValueError, match="send_sizes must be rank 1 with positive dimension size"):
        vm(op, out, i2, np.zeros((2, 0), np.int32), i2, i2)
    with pytest.raises(ValueError, match="must divide evenly"):
        vm(op, out, *(np.zeros((2, 3), np.int32),) * 4)
    with pytest.raises(TypeError, match="same dtype"):
        vm(op, out.astype(np.int32), i2, i2, i2, i2)
    with pytest.raises(ValueError, match="same rank"):
        vm(op, np.zeros((2, 4, 1)), i2, i2, i2, i2)
    with pytest.raises(NameError, match="unbound axis name"):
        lax.ragged_all_to_all(op[0], out[0], i2[0], i2[0], i2[0], i2[0], axis_name="i")


# ---------------------------------------------------------------------------------------------
# legacy_prng_key / enable_custom_prng

MSG = "Legacy uint32 key array passed as key to jax.random function"


def test_legacy_prng_key_states():
    raw = fjax.random.PRNGKey(0)
    typed = fjax.random.key(0)
    assert fjax.legacy_prng_key.value == "allow"
    with fjax.legacy_prng_key("error"):
        for fn in (
            lambda: fjax.random.normal(raw),
            lambda: fjax.random.split(raw),
            lambda: fjax.random.fold_in(raw, 1),
            lambda: fjax.random.key_data(raw),
            lambda: fjax.jit(fjax.random.uniform)(raw),
        ):
            with pytest.raises(ValueError, match=MSG):
                fn()
        # typed keys, PRNGKey itself and wrap_key_data of raw data are fine, as in JAX
        a = fjax.random.normal(typed, (3,))
        fjax.random.PRNGKey(1)
        b = fjax.random.normal(fjax.random.wrap_key_data(raw), (3,))
        fjax.random.gamma(typed, 2.0, (2,))  # the samplers' own calls to each other are not checked
        with pytest.raises(TypeError, match="invalid PRNG key"):  # an invalid key fails as before
            fjax.random.normal(np.zeros(3, np.uint32))
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with fjax.legacy_prng_key("warn"):
        with pytest.warns(UserWarning, match=MSG) as rec:
            fjax.random.uniform(raw)
        assert len(rec) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fjax.random.uniform(raw)  # "allow": silent
    with pytest.raises(ValueError, match="'bad' is not a valid LegacyPrngKeyState"):
        fjax.config.update("jax_legacy_prng_key", "bad")
    fjax.config.update("jax_legacy_prng_key", "error")
    try:
        assert fjax.config.jax_legacy_prng_key == "error"
        with pytest.raises(ValueError, match=MSG):
            fjax.random.bits(raw)
    finally:
        fjax.config.update("jax_legacy_prng_key", "allow")


def test_enable_custom_prng():
    raw = fjax.random.PRNGKey(0)
    with fjax.enable_custom_prng(True):
        k = fjax.random.PRNGKey(0)
        assert k.dtype == fjax.random.key_dtype() and k.shape == ()
        np.testing.assert_array_equal(np.asarray(fjax.random.key_data(k)), np.asarray(raw))
        with pytest.warns(FutureWarning, match="Raw arrays as random keys"):
            ks = fjax.random.split(raw)
        assert ks.shape == (2,) and ks.dtype == fjax.random.key_dtype()  # JAX: typed keys back
        with pytest.warns(FutureWarning):
            x = fjax.random.normal(raw)
    np.testing.assert_array_equal(np.asarray(fjax.random.key_data(ks)), np.asarray(fjax.random.split(raw)))
    assert float(x) == float(fjax.random.normal(raw))
    assert not fjax.enable_custom_prng.value and fjax.random.PRNGKey(0).dtype == np.uint32


# ---------------------------------------------------------------------------------------------
# extend.core


def test_extend_core_names():
    from fjax.extend import core, linear_util

    assert core.InconclusiveDimensionOperation is fjax.errors.InconclusiveDimensionOperation
    assert float(core.call_impl(linear_util.wrap_init(lambda x: x * 2), 3.0, unused=1)) == 6.0
    seen = []

    @fjax.jit
    def g(x):
        y = core.call_impl(linear_util.wrap_init(lambda: jnp.sin(1.0)))
        seen.append(type(y))
        return x + y

    np.testing.assert_allclose(float(g(1.0)), 1.0 + np.sin(1.0), rtol=1e-6)
    assert seen == [fjax.Array]  # evaluated eagerly while g was traced


# ---------------------------------------------------------------------------------------------
# smap


def test_smap_as_jax():
    # the expected values are JAX's, with the same mesh of 4 CPU devices
    mesh = fjax.sharding.Mesh(np.array(DEVS[:4], dtype=object).reshape(2, 2), ("x", "y"))
    explicit = fjax.sharding.Mesh(mesh.devices, ("x", "y"), axis_types=(fjax.sharding.AxisType.Explicit,) * 2)
    x = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    f = fjax.smap(lambda a: a * lax.axis_index("x"), in_axes=0, out_axes=0, axis_name="x")
    with fjax.set_mesh(mesh):
        np.testing.assert_array_equal(np.asarray(f(x)), [[0, 0], [0, 0], [4, 5], [6, 7]])
        np.testing.assert_array_equal(np.asarray(fjax.jit(f)(x)), [[0, 0], [0, 0], [4, 5], [6, 7]])
        g = fjax.smap(lambda a: lax.psum(a, "x"), in_axes=1, out_axes=None, axis_name="x")
        np.testing.assert_array_equal(np.asarray(g(x.reshape(2, 4))), [[2, 4], [10, 12]])
        h = fjax.smap(lambda a, b: a * b, in_axes=(0, None), out_axes=0, axis_name="y")
        np.testing.assert_array_equal(np.asarray(h(x, 2.0)), 2 * x)
        k = fjax.smap(in_axes=(0,), out_axes=0, axis_name="y")(lambda a: a.sum(0, keepdims=True))
        np.testing.assert_array_equal(np.asarray(k(x)), [[2, 4], [10, 12]])
        with pytest.raises(TypeError, match="in_axes was not specified when axis_name"):
            fjax.smap(lambda a: a, out_axes=0, axis_name="x")(x)
        with pytest.raises(ValueError, match="to be a subset of"):
            fjax.smap(lambda a: a, in_axes=0, out_axes=0, axis_name="z")(x)
    with fjax.set_mesh(explicit), pytest.raises(NotImplementedError, match="jax.sharding.Infer"):
        fjax.smap(lambda a: a, out_axes=0, axis_name="x")(x)
    with pytest.raises(TypeError, match="smap axis_name should be a `str` or a `Hashable`"):
        fjax.smap(lambda a: a, in_axes=0, out_axes=0, axis_name=("x",))
    with pytest.raises(TypeError, match="smap in_axes must be an int, None"):
        fjax.smap(lambda a: a, in_axes="a", out_axes=0, axis_name="x")
    with pytest.raises(ValueError, match="The context mesh cannot be empty"):
        f(x)


# ---------------------------------------------------------------------------------------------
# thread_guard


def test_thread_guard():
    """Checked through fjax.distributed.collective, which wraps every MPI call (a run under
    ``mpiexec -n 2`` with process_allgather from a second thread raised the same error)."""
    import threading

    from fjax.distributed import collective

    def in_thread(fn):
        out = []

        def run():
            try:
                fn()
                out.append(None)
            except Exception as e:  # noqa: BLE001
                out.append(e)

        t = threading.Thread(target=run)
        t.start()
        t.join()
        return out[0]

    def mpi_call():
        with collective("psum across processes"):
            pass

    assert fjax.thread_guard.value is False
    assert in_thread(mpi_call) is None  # no guard: any thread
    with fjax.thread_guard(True):
        assert fjax.thread_guard.value is True
        mpi_call()  # the guarding thread may
        err = in_thread(mpi_call)
        assert isinstance(err, fjax.errors.JaxRuntimeError)
        assert "A multi-process JAX operation was called from thread" in str(err)
        err = in_thread(lambda: fjax.thread_guard(True).__enter__())
        assert isinstance(err, fjax.errors.JaxRuntimeError) and "Nested thread guards in different threads" in str(err)
        with fjax.thread_guard(True):  # nesting in the same thread is fine
            mpi_call()
        with fjax.thread_guard(False):
            assert in_thread(mpi_call) is None
        assert isinstance(in_thread(mpi_call), fjax.errors.JaxRuntimeError)
    assert in_thread(mpi_call) is None and fjax.thread_guard.value is False
