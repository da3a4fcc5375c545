"""Parameters JAX 0.10.2's public functions have that fjax gained (``out_sharding=``, numpy-2 keywords,
``nn.dot_product_attention``'s masking options, ...): each keyword is called and its value checked
against numpy / closed forms; the real features also with hypothesis."""

import inspect
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

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
    ("lax.broadcast", lambda s: lax.broadcast(_B[0], (4,), out_sharding=s), np.broadcast_to(_B[0], (4, 2))),
    (
        "lax.broadcast_in_dim",
        lambda s: lax.broadcast_in_dim(_A[:, 0], (4, 5), (0,), out_sharding=s),
        np.broadcast_to(_A[:, :1], (4, 5)),
    ),
    (
        "lax.broadcasted_iota",
        lambda s: lax.broadcasted_iota(np.int32, (4, 3), 1, out_sharding=s),
        np.broadcast_to(np.arange(3, dtype=np.int32), (4, 3)),
    ),
    ("lax.reduce_sum", lambda s: lax.reduce_sum(_A, (1,), out_sharding=s), _A.sum(1)),
    ("lax.reduce", lambda s: lax.reduce(_A, np.float32(0), lax.add, (1,), s), _A.sum(1)),
    ("lax.reshape", lambda s: lax.reshape(_A, (6, 2), out_sharding=s), _A.reshape(6, 2)),
    ("lax.empty", lambda s: lax.empty((4, 3), np.float32, out_sharding=s), np.zeros((4, 3), np.float32)),
    (
        "lax.conv_general_dilated",
        lambda s: lax.conv_general_dilated(
            _A[:, None, None], np.ones((1, 1, 1, 2), np.float32), (1, 1), "VALID", out_sharding=s
        ),  # fmt: skip
        (_A[:, :-1] + _A[:, 1:])[:, None, None],
    ),
    ("jnp.zeros", lambda s: jnp.zeros((4, 3), out_sharding=s), np.zeros((4, 3))),
    ("jnp.ones", lambda s: jnp.ones(4, np.int32, out_sharding=s), np.ones(4)),
    ("jnp.empty", lambda s: jnp.empty((2, 2), out_sharding=s), np.zeros((2, 2))),
    ("jnp.full", lambda s: jnp.full((4,), 7.0, out_sharding=s), np.full(4, 7.0)),
    ("jnp.zeros_like", lambda s: jnp.zeros_like(_A, out_sharding=s), 0 * _A),
    ("jnp.ones_like", lambda s: jnp.ones_like(_A, out_sharding=s), 0 * _A + 1),
    ("jnp.full_like", lambda s: jnp.full_like(_A, 3, out_sharding=s), 0 * _A + 3),
    ("jnp.arange", lambda s: jnp.arange(1, 9, 2, out_sharding=s), np.arange(1, 9, 2)),
    ("jnp.array", lambda s: jnp.array([[1, 2], [3, 4]], out_sharding=s), np.array([[1, 2], [3, 4]])),
    ("jnp.asarray", lambda s: jnp.asarray(_A, out_sharding=s), _A),
    ("jnp.reshape", lambda s: jnp.reshape(_A, (2, 6), out_sharding=s), _A.reshape(2, 6)),
    ("jnp.ravel", lambda s: jnp.ravel(_A, out_sharding=s), _A.ravel()),
    ("jnp.broadcast_to", lambda s: jnp.broadcast_to(_B[0], (4, 2), out_sharding=s), np.broadcast_to(_B[0], (4, 2))),
    ("jnp.repeat", lambda s: jnp.repeat(_B[0], 2, out_sharding=s), np.repeat(_B[0], 2)),
    ("jnp.bincount", lambda s: jnp.bincount(np.array([0, 1, 1, 3]), out_sharding=s), np.array([1, 2, 0, 1])),
    ("jnp.percentile", lambda s: jnp.percentile(_A, 50.0, axis=1, out_sharding=s), np.percentile(_A, 50.0, axis=1)),
    ("jnp.linalg.tensordot", lambda s: jnp.linalg.tensordot(_A, _B, axes=1, out_sharding=s), _A @ _B),
    (
        "fjax.ops.segment_sum",
        lambda s: fjax.ops.segment_sum(_A, np.array([0, 0, 1, 3]), 4, out_sharding=s),
        np.stack([_A[0] + _A[1], _A[2], 0 * _A[0], _A[3]]),
    ),
    ("fjax.nn.initializers.zeros", lambda s: fjax.nn.initializers.zeros(None, (4, 2), np.float32, s), np.zeros((4, 2))),
    ("fjax.nn.initializers.ones", lambda s: fjax.nn.initializers.ones(None, (4,), out_sharding=s), np.ones(4)),
    (
        "fjax.random.normal",
        lambda s: fjax.random.normal(fjax.random.key(1), (4, 3), out_sharding=s),
        np.asarray(fjax.random.normal(fjax.random.key(1), (4, 3))),
    ),
    (
        "fjax.random.permutation",
        lambda s: fjax.random.permutation(fjax.random.key(2), 6, out_sharding=s),
        np.asarray(fjax.random.permutation(fjax.random.key(2), 6)),
    ),
    (
        "fjax.random.randint",
        lambda s: fjax.random.randint(fjax.random.key(3), (4,), 0, 9, out_sharding=s),
        np.asarray(fjax.random.randint(fjax.random.key(3), (4,), 0, 9)),
    ),
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
    fn = eval(name.split()[0], {"lax": lax, "jnp": jnp, "fjax": fjax})
    assert "out_sharding" in inspect.signature(fn).parameters


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


def test_lax_full_sharding(mesh):
    s = NamedSharding(mesh, P("x"))
    r = lax.full((4,), 2.0, sharding=s)
    assert r.sharding == s and np.array_equal(np.asarray(r), np.full(4, 2.0))
    d1 = fjax.sharding.SingleDeviceSharding(fjax.devices()[1])
    assert lax.full((3,), 1, np.int32, sharding=d1).sharding == d1  # any concrete sharding, as device_put
    r = lax.full_like(_A, 5.0, None, None, s)
    assert r.sharding == s and np.array_equal(np.asarray(r), np.full((4, 3), 5.0))
    # a sharded x passes its sharding on (x strongly typed, same shape), as JAX
    x = fjax.device_put(jnp.arange(4.0), s)
    assert lax.full_like(x, 1.0).sharding == s
    assert not isinstance(lax.full_like(_A, 1.0).sharding, NamedSharding)
    # traced: ignored (as JAX's docstring says)
    np.testing.assert_array_equal(np.asarray(fjax.jit(lambda: lax.full((4,), 2.0, sharding=s))()), np.full(4, 2.0))
    with pytest.raises(ValueError, match="Only one of `device` or `out_sharding`"):
        jnp.zeros(4, device=fjax.devices()[0], out_sharding=s)


# ---------------------------------------------------------------------------------------------
# keywords with values


def test_lax_mul_out_dtype():
    a = np.array([100, -100, 7], np.int8)
    b = np.array([100, 3, -2], np.int16)
    r = lax.mul(a, a, out_dtype=np.int32)
    assert r.dtype == np.int32 and np.array_equal(np.asarray(r), a.astype(np.int32) ** 2)
    r = lax.mul(a, b, out_dtype=np.float32)  # different operand dtypes are converted first
    assert r.dtype == np.float32 and np.array_equal(np.asarray(r), a.astype(np.float32) * b)
    assert lax.mul(a, a).dtype == np.int8
    g = fjax.grad(lambda x: lax.mul(x, x, out_dtype=np.float32))(np.float16(3.0))
    assert g.dtype == np.float16 and float(g) == 6.0


def test_renamed_parameters():
    x, y = np.array([7.0, -7.5, 3.0], np.float32), np.array([2.0, 2.0, -0.5], np.float32)
    for name, ref in [("divide", np.divide), ("true_divide", np.true_divide), ("floor_divide", np.floor_divide),
                      ("mod", np.mod), ("remainder", np.remainder), ("fmod", np.fmod), ("power", np.power),
                      ("pow", np.power), ("fmax", np.fmax), ("fmin", np.fmin), ("hypot", np.hypot)]:  # fmt: skip
        f = getattr(jnp, name)
        assert list(inspect.signature(f).parameters)[:2] == ["x1", "x2"], name
        np.testing.assert_allclose(np.asarray(f(x, y)), ref(x, y), rtol=1e-6, err_msg=name)
    q, r = jnp.divmod(x, y)
    np.testing.assert_allclose(np.asarray(q), np.floor_divide(x, y))
    np.testing.assert_allclose(np.asarray(r), np.mod(x, y))
    assert list(inspect.signature(jnp.right_shift).parameters) == ["x1", "x2"]
    assert np.array_equal(np.asarray(jnp.right_shift(np.int32(-64), 3)), np.right_shift(-64, 3))
    assert list(inspect.signature(jnp.nextafter).parameters) == ["x", "y"]
    assert float(lax.nextafter(x1=np.float32(1), x2=np.float32(2))) == np.nextafter(np.float32(1), np.float32(2))


_JAX_SAMPLERS_WITH_OUT_SHARDING = (
    "ball bernoulli beta bits categorical cauchy chisquare dirichlet exponential f gamma generalized_normal "
    "geometric gumbel laplace loggamma logistic lognormal maxwell multivariate_normal normal orthogonal pareto "
    "permutation poisson rademacher randint rayleigh t triangular truncated_normal uniform wald"
).split()


def test_random_samplers_take_out_sharding(mesh):
    for name in _JAX_SAMPLERS_WITH_OUT_SHARDING:
        p = inspect.signature(getattr(fjax.random, name)).parameters["out_sharding"]
        assert p.kind == p.KEYWORD_ONLY and p.default is None, name
    s = NamedSharding(mesh, P(None, "x"))
    k = fjax.random.key(0)
    r = fjax.random.gamma(k, np.float32(2.0), (3, 4), out_sharding=s)
    assert r.sharding == s
    np.testing.assert_array_equal(np.asarray(r), np.asarray(fjax.random.gamma(k, np.float32(2.0), (3, 4))))
    with pytest.raises(ValueError, match="must divide evenly"):
        fjax.random.uniform(k, (3, 3), out_sharding=s)


def test_random_key_impl_and_dtype():
    k = fjax.random.key(7)
    for kw in (
        {"dtype": k.dtype},
        {"dtype": "threefry2x32"},
        {"impl": "threefry2x32"},
        {"dtype": fjax.random.key_dtype()},
    ):
        k2 = fjax.random.key(7, **kw)
        assert k2.dtype == k.dtype and bool(k2 == k)
        assert bool(fjax.random.wrap_key_data(fjax.random.key_data(k), **kw) == k)
    np.testing.assert_array_equal(
        np.asarray(fjax.random.PRNGKey(7, impl="threefry2x32")), np.asarray(fjax.random.PRNGKey(7))
    )
    with pytest.raises(ValueError, match="Cannot specify both `impl` and `dtype` arguments to jax.random.key"):
        fjax.random.key(0, impl="threefry2x32", dtype="threefry2x32")
    with pytest.raises(ValueError, match='unrecognized PRNG implementation "nope"'):
        fjax.random.wrap_key_data(fjax.random.key_data(k), dtype="nope")
    with pytest.raises(TypeError, match="unrecognized type"):
        fjax.random.PRNGKey(0, impl=3)


def test_linalg_array_api_names():
    x1, x2 = np.arange(3.0, dtype=np.float32), np.arange(1.0, 3.0, dtype=np.float32)
    assert list(inspect.signature(jnp.linalg.outer).parameters) == ["x1", "x2"]
    np.testing.assert_array_equal(np.asarray(jnp.linalg.outer(x1, x2)), np.outer(x1, x2))
    with pytest.raises(ValueError, match="must be one-dimensional"):
        jnp.linalg.outer(_A, x1)
    np.testing.assert_allclose(np.asarray(jnp.linalg.matmul(_A, _B)), _A @ _B)
    assert list(inspect.signature(jnp.linalg.matmul).parameters)[:2] == ["x1", "x2"]
    np.testing.assert_allclose(np.asarray(jnp.linalg.tensordot(x1, x2, axes=0)), np.multiply.outer(x1, x2))


# ---------------------------------------------------------------------------------------------
# real features, against numpy


_small_arrays = hnp.arrays(
    np.float64,
    hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
    elements=st.integers(-6, 6).map(float),
)


@settings(max_examples=25, deadline=None)
@given(_small_arrays, st.data())
def test_var_std_mean_matches_numpy(a, data):
    axis = data.draw(st.sampled_from([None, *range(a.ndim)]))
    n = a.size if axis is None else a.shape[axis]
    ddof = data.draw(st.integers(0, 1)) if n > 1 else 0  # (n <= ddof: numpy gives inf, JAX NaN)
    shift = data.draw(st.sampled_from([0.0, 1.5]))
    m = np.mean(a, axis=axis, keepdims=True) + shift
    with np.errstate(all="ignore"):
        for jf, nf in [(jnp.var, np.var), (jnp.std, np.std), (jnp.nanvar, np.nanvar), (jnp.nanstd, np.nanstd)]:
            want = nf(a, axis=axis, ddof=ddof, mean=m)
            got = jf(a.astype(np.float32), axis=axis, ddof=ddof, mean=m.astype(np.float32))
            np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=1e-5, err_msg=jf.__name__)
    with pytest.raises(TypeError, match="same number of dimensions"):
        jnp.var(np.ones((2, 3)), axis=1, mean=np.ones(2))


def test_nanvar_mean_skips_nans():
    b = np.arange(12.0).reshape(3, 4)
    b[0, 0] = np.nan
    m = np.nanmean(b, 1, keepdims=True)
    np.testing.assert_allclose(np.asarray(jnp.nanvar(b, axis=1, mean=m)), np.nanvar(b, axis=1, mean=m), rtol=1e-6)
    # where/mean positional, as JAX's nanvar
    np.testing.assert_allclose(
        np.asarray(jnp.nanstd(b, 1, None, None, 0, False, None, m)), np.nanstd(b, axis=1, mean=m), rtol=1e-6
    )
    g = fjax.grad(lambda mm: jnp.var(b[1:], axis=1, mean=mm).sum())(m[1:].astype(np.float32))
    np.testing.assert_allclose(np.asarray(g), -2 * (b[1:] - m[1:]).mean(1, keepdims=True), atol=1e-6)


@settings(max_examples=30, deadline=None)
@given(
    hnp.arrays(
        np.float32,
        hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
        elements=st.one_of(st.integers(-5, 5).map(float), st.just(np.nan)),
    ),  # fmt: skip
    st.data(),
)
def test_quantile_weights_match_numpy(a, data):
    axis = data.draw(st.sampled_from([None, *range(a.ndim)]))
    full_w = axis is None or data.draw(st.booleans())
    wshape = a.shape if full_w else (a.shape[axis],)
    w = data.draw(hnp.arrays(np.float32, wshape, elements=st.integers(0, 3).map(float)))
    # (q=0 left out: with zero weights first, numpy skips them, JAX (whose value fjax gives) does not)
    q = data.draw(st.sampled_from([0.3, 0.5, 1.0, np.array([0.1, 0.75], np.float32)]))
    keepdims = data.draw(st.booleans())
    ww = w if full_w else np.expand_dims(w, tuple(i for i in range(a.ndim) if i != axis)) * np.ones_like(a)
    pairs = [(jnp.quantile, np.quantile, 1), (jnp.nanquantile, np.nanquantile, 1)]
    pairs += [(jnp.percentile, np.percentile, 100), (jnp.nanpercentile, np.nanpercentile, 100)]
    for jf, nf, scale in pairs:
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = nf(a, np.asarray(q) * scale, axis=axis, method="inverted_cdf", weights=ww, keepdims=keepdims)
        except ValueError:  # numpy refuses all-zero weights; JAX takes the first value
            continue
        got = jf(a, np.asarray(q) * scale, axis=axis, method="inverted_cdf", weights=w, keepdims=keepdims)
        assert got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, err_msg=jf.__name__)
    # unweighted inverted_cdf too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.quantile(a, q, axis=axis, method="inverted_cdf")
    np.testing.assert_allclose(np.asarray(jnp.quantile(a, q, axis=axis, method="inverted_cdf")), want)


def test_quantile_weights_errors_and_transforms():
    a = np.arange(10.0, dtype=np.float32).reshape(2, 5)
    w = np.array([1.0, 1.0, 4.0, 1.0, 1.0], np.float32)
    with pytest.raises(NotImplementedError, match="Only method 'inverted_cdf' supports weights"):
        jnp.quantile(a, 0.5, axis=1, weights=w)
    with pytest.raises(ValueError, match="Weights shape must match 'a' shape when axis is None"):
        jnp.quantile(a, 0.5, method="inverted_cdf", weights=w)
    with pytest.raises(ValueError, match=r"Weights shape \(3,\) must match reduction axes \(5,\)"):
        jnp.quantile(a, 0.5, axis=1, method="inverted_cdf", weights=w[:3])
    # q=0 with a zero weight first: JAX 0.10.2's value (numpy gives 0.0, skipping the zero-weight value)
    assert float(jnp.quantile(np.array([0.0, -1.0]), 0.0, method="inverted_cdf", weights=np.array([1.0, 0.0]))) == -1
    want = np.array([2.0, 7.0], np.float32)  # the heavy middle value
    f = fjax.jit(lambda a, w: jnp.quantile(a, 0.5, axis=1, method="inverted_cdf", weights=w))
    np.testing.assert_array_equal(np.asarray(f(a, w)), want)
    v = fjax.vmap(lambda r: jnp.quantile(r, 0.5, method="inverted_cdf", weights=w))(a)
    np.testing.assert_array_equal(np.asarray(v), want)
    assert float(jnp.quantile(a[0], 0.5, method="inverted_cdf", weights=-w)) != float(jnp.quantile(a[0], 0.5))
    assert np.isnan(float(jnp.quantile(a[0], 0.5, method="inverted_cdf", weights=-w)))


def test_take_along_axis_wrap_negative_indices():
    a = np.arange(10.0, 16.0).reshape(2, 3)
    i = np.array([[-1, 0, 3], [2, -4, 1]])
    nan = np.nan
    # JAX 0.10.2's results
    want = {
        (None, None): [[12.0, 10.0, nan], [15.0, nan, 14.0]],
        (None, False): [[nan, 10.0, nan], [15.0, nan, 14.0]],
        ("clip", True): [[12.0, 10.0, 12.0], [15.0, 13.0, 14.0]],
        ("clip", False): [[10.0, 10.0, 12.0], [15.0, 13.0, 14.0]],
        ("promise_in_bounds", None): [[10.0, 10.0, 12.0], [15.0, 13.0, 14.0]],
        ("promise_in_bounds", True): [[12.0, 10.0, 12.0], [15.0, 13.0, 14.0]],
    }
    for (mode, wrap), w in want.items():
        got = jnp.take_along_axis(a, i, axis=1, mode=mode, wrap_negative_indices=wrap)
        np.testing.assert_array_equal(np.asarray(got), np.array(w), err_msg=f"{mode} {wrap}")
    got = fjax.jit(lambda a, i: jnp.take_along_axis(a, i, 1, wrap_negative_indices=False))(a, i)
    np.testing.assert_array_equal(np.asarray(got), np.array(want[(None, False)]))


@settings(max_examples=20, deadline=None)
@given(
    hnp.arrays(np.int8, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), elements=st.sampled_from([0, 1, 2])),
    st.data(),
)
def test_trim_zeros_axis_matches_numpy(a, data):
    axis = data.draw(st.sampled_from([None, *range(a.ndim), *range(-a.ndim, 0), tuple(range(a.ndim))]))
    trim = data.draw(st.sampled_from(["fb", "f", "b", "F"]))
    want = np.trim_zeros(a, trim.lower(), axis=axis)
    got = jnp.trim_zeros(a, trim, axis=axis)
    assert got.shape == want.shape and np.array_equal(np.asarray(got), want)


def test_numpy_keywords_with_values():
    x = np.array([3.0, 1.0, 2.0, 1.0])
    r = jnp.argsort(x, dtype=np.int16)
    assert r.dtype == np.int16 and np.array_equal(np.asarray(r), np.argsort(x, stable=True))
    r = jnp.argsort(x, descending=True, dtype=np.uint8)
    assert r.dtype == np.uint8 and np.array_equal(np.asarray(r), [0, 2, 1, 3])
    m = np.random.default_rng(0).normal(size=(3, 6)).astype(np.float32)
    c = jnp.cov(m, dtype=np.complex64)
    assert c.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(c), np.cov(m, dtype=np.complex64), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.corrcoef(m, dtype=np.float32)), np.corrcoef(m), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="dtype must be a subclass of float or complex"):
        jnp.corrcoef(m, dtype=np.int32)
    r = jnp.ravel_multi_index((np.array([1, 2]), np.array([0, 3])), (3, 4), dtype=np.int16)
    assert r.dtype == np.int16 and np.array_equal(np.asarray(r), np.ravel_multi_index(([1, 2], [0, 3]), (3, 4)))
    with pytest.raises(ValueError, match="not large enough"):
        jnp.ravel_multi_index((np.array([1]), np.array([0])), (300, 300), dtype=np.int8)
    h = np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 0.0]])
    assert int(jnp.linalg.matrix_rank(h, hermitian=True)) == np.linalg.matrix_rank(h, hermitian=True) == 2
    assert int(jnp.linalg.matrix_rank(-h, hermitian=True)) == 2  # negative eigenvalues count too
    for f in (lambda: jnp.isposinf(x, out=x), lambda: jnp.isneginf(x, out=x)):
        with pytest.raises(NotImplementedError, match="The 'out' argument to isneginf/isposinf is not supported"):
            f()
    assert np.array_equal(np.asarray(jnp.isneginf(np.array([-np.inf, 1.0]), out=None)), [True, False])
    with pytest.raises(NotImplementedError, match="The 'out' argument to jnp.compress is not supported"):
        jnp.compress(np.array([True]), x, out=x)
    assert jnp.isdtype(dtype=np.float32, kind="real floating") and not jnp.isdtype(np.int8, kind="real floating")
    ops = (np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5)))
    path, _ = jnp.einsum_path("ij,jk,kl->il", *ops)
    assert sorted(map(len, path)) == [2, 2]  # two pairwise contractions
    np.testing.assert_allclose(np.asarray(jnp.einsum("ij,jk,kl->il", *ops, optimize=path)), 12.0 * np.ones((2, 5)))


def _attention_ref(q, k, v, bias=None, mask=None, scale=None, causal=False, window=None, qlen=None, kvlen=None):
    """numpy attention over (B, T, N, H) with grouped heads and JAX's masking (-0.7 * float32 max)."""
    B, T, N, H = q.shape
    S, K = k.shape[1], k.shape[2]
    G = N // K
    kk, vv = np.repeat(k, G, axis=2), np.repeat(v, G, axis=2)  # query head n uses key head n // G
    logits = np.einsum("btnh,bsnh->bnts", q, kk).astype(np.float64) * (1 / np.sqrt(H) if scale is None else scale)
    if bias is not None:
        logits = logits + bias
    keep = np.ones(logits.shape, bool) if mask is None else np.broadcast_to(mask, logits.shape).copy()
    t, s_ = np.arange(T)[:, None], np.arange(S)[None, :]
    if causal:
        keep &= t >= s_
    if window is not None:
        keep &= (t <= s_ + window[0]) & (t >= s_ - window[1])
    if qlen is not None:
        keep &= np.arange(T)[None, None, :, None] < qlen[:, None, None, None]
    if kvlen is not None:
        keep &= np.arange(S)[None, None, None, :] < kvlen[:, None, None, None]
    logits = np.where(keep, logits, -0.7 * np.finfo(np.float32).max)
    e = np.exp(logits - logits.max(-1, keepdims=True))
    lse = np.log(e.sum(-1)) + logits.max(-1)
    p = e / e.sum(-1, keepdims=True)
    out = np.einsum("bnts,bsnh->btnh", p, vv)
    if qlen is not None:
        out = out * (np.arange(T)[None, :] < qlen[:, None])[:, :, None, None]
    return out, np.transpose(lse, (0, 2, 1))


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_dot_product_attention_matches_numpy(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    B, T, S, K, G, H = (data.draw(st.integers(1, 3)) for _ in range(6))
    N = K * G
    q = rng.normal(size=(B, T, N, H)).astype(np.float32)
    k = rng.normal(size=(B, S, K, H)).astype(np.float32)
    v = rng.normal(size=(B, S, K, H)).astype(np.float32)
    kw, ref = {}, {}
    if data.draw(st.booleans()):
        kw["bias"] = ref["bias"] = rng.normal(size=(1, N, T, S)).astype(np.float32)
    if data.draw(st.booleans()):
        kw["mask"] = ref["mask"] = rng.random(size=(B, 1, T, S)) > 0.3
    if data.draw(st.booleans()):
        kw["is_causal"] = ref["causal"] = True
    if data.draw(st.booleans()):
        w = data.draw(st.one_of(st.integers(0, 2), st.tuples(st.integers(0, 2), st.integers(0, 2))))
        kw["local_window_size"] = w
        ref["window"] = (w, w) if isinstance(w, int) else w
    if data.draw(st.booleans()):
        kw["query_seq_lengths"] = ref["qlen"] = rng.integers(1, T + 1, size=B).astype(np.int32)
    if data.draw(st.booleans()):
        kw["key_value_seq_lengths"] = ref["kvlen"] = rng.integers(1, S + 1, size=B).astype(np.int32)
    want, want_lse = _attention_ref(q, k, v, **ref)
    out, lse = fjax.nn.dot_product_attention(q, k, v, return_residual=True, implementation="xla", **kw)
    np.testing.assert_allclose(np.asarray(out), want, rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(np.asarray(lse), want_lse, rtol=2e-4, atol=2e-4)
    assert lse.shape == (B, T, N)


def test_dot_product_attention_options():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(5, 2, 3)).astype(np.float32)  # 3-D: batch 1
    out = fjax.nn.dot_product_attention(q, q, q, is_causal=True, local_window_size=1)
    want, _ = _attention_ref(q[None], q[None], q[None], causal=True, window=(1, 1))
    np.testing.assert_allclose(np.asarray(out), want[0], rtol=2e-5, atol=2e-6)
    with pytest.raises(NotImplementedError, match="cudnn"):
        fjax.nn.dot_product_attention(q, q, q, implementation="cudnn")
    with pytest.raises(ValueError, match="Unsupported implementation option"):
        fjax.nn.dot_product_attention(q, q, q, implementation="other")
    with pytest.raises(ValueError, match="query_seq_lengths dtype should be int32"):
        fjax.nn.dot_product_attention(q, q, q, query_seq_lengths=np.array([1.0]))
    ql = np.array([3], np.int32)
    k = rng.normal(size=(1, 4, 2, 3)).astype(np.float32)
    g = fjax.grad(lambda q: fjax.nn.dot_product_attention(q, k, k, query_seq_lengths=ql).sum())(q[None])
    assert np.all(np.asarray(g)[0, 3:] == 0) and np.any(np.asarray(g)[0, :3] != 0)  # padded queries: zeros


@settings(max_examples=15, deadline=None)
@given(hnp.arrays(np.float64, (3, 5), elements=st.floats(-100, 100)), st.sampled_from(["fast", "stable"]))
def test_standardize_algorithm(x, algorithm):
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    got = fjax.nn.standardize(x.astype(np.float32), algorithm=algorithm)
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-3, atol=2e-2 if algorithm == "fast" else 2e-3)
    with pytest.raises(ValueError, match="Unknown algorithm 'slow'"):
        fjax.nn.standardize(x, algorithm="slow")


def test_transform_keywords():
    x = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    s, b = fjax.vmap(lambda a, b: (a * 2, b), in_axes=(0, None), out_axes=None, sum_match=True)(x, np.ones(2))
    np.testing.assert_array_equal(np.asarray(s), 2 * x.sum(0))  # mapped: summed
    np.testing.assert_array_equal(np.asarray(b), np.ones(2))  # unmapped: as it is
    with pytest.raises(ValueError, match=r"^at vmap out_axes, got axis spec None but output was batched on axis 0$"):
        fjax.vmap(lambda a: a, out_axes=None)(x)

    def f(x, n, *, mode="a"):
        for _ in range(n):
            x = jnp.sin(x)
        return x * (2.0 if mode == "a" else 3.0)

    g = fjax.checkpoint(f, static_argnames=("n", "mode"))
    want = 3.0 * np.cos(np.sin(np.sin(1.0))) * np.cos(np.sin(1.0)) * np.cos(1.0)
    for h in (lambda x: g(x, 3, mode="b"), lambda x: g(x, n=3, mode="b"), fjax.jit(lambda x: g(x, 3, mode="b"))):
        np.testing.assert_allclose(float(fjax.grad(h)(1.0)), want, rtol=1e-6)
    with pytest.raises(NotImplementedError, match="The `concrete` option to `jax.checkpoint` was deprecated"):
        fjax.remat(f, concrete=False)


def test_ufunc_signature_and_all_gather_to():
    for name in ("add", "multiply", "negative", "logaddexp", "bitwise_and", "maximum"):
        assert list(inspect.signature(getattr(jnp, name)).parameters) == ["args", "out", "where"], name
    with pytest.raises(NotImplementedError, match="out argument of"):
        jnp.add(1.0, 2.0, out=np.zeros(()))
    assert "to" in inspect.signature(lax.all_gather).parameters
    f = fjax.vmap(lambda v: lax.all_gather(v, "i", to="varying"), axis_name="i")
    np.testing.assert_array_equal(np.asarray(f(np.arange(3.0))), np.tile(np.arange(3.0), (3, 1)))
    with pytest.raises(ValueError, match="Got unexpected `to` value"):
        fjax.vmap(lambda v: lax.all_gather(v, "i", to="nope"), axis_name="i")(np.arange(3.0))
    with pytest.raises(NotImplementedError, match="invarying"):
        fjax.vmap(lambda v: lax.all_gather(v, "i", to="invarying"), axis_name="i")(np.arange(3.0))


def test_array_positional_copy_order_ndmin_deprecated():
    assert list(inspect.signature(jnp.array).parameters)[:3] == ["object", "dtype", "args"]
    with pytest.warns(DeprecationWarning, match="positionally is deprecated"):
        r = jnp.array([1, 2], None, True, "K", 2)
    assert r.shape == (1, 2)
    with pytest.raises(TypeError, match="got multiple values for argument 'copy'"):
        jnp.array([1], None, False, copy=False)
    with pytest.raises(TypeError, match="takes at most 5 positional arguments"):
        jnp.array([1], None, True, "K", 0, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert jnp.array([1, 2], ndmin=3).shape == (1, 1, 2)


def test_jit_keywords():
    def f(x, y):
        return x + 1, y * 2

    a, b = jnp.ones(3), jnp.ones(3)
    out = fjax.jit(f, donate_argnames="y")(a, b)
    np.testing.assert_array_equal(np.asarray(out[1]), 2 * np.ones(3))
    assert not a.is_deleted() and b.is_deleted()
    with pytest.raises(ValueError, match=r"invalid argnames \{'z'\} in donate_argnames"):
        fjax.jit(f, donate_argnames="z")
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        fjax.jit(f, foo=1)
    r = fjax.jit(f, keep_unused=True, inline=True, compiler_options={})(1.0, 2.0)
    assert (float(r[0]), float(r[1])) == (2.0, 4.0)


def test_positional_and_keyword_parity():
    x = np.arange(5.0, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(lax.reduce_window(x, 0.0, lax.add, (2,))), x[:-1] + x[1:])
    assert float(jnp.fmax(x1=1.0, x2=np.nan)) == 1.0 and float(jnp.fmin(x1=np.nan, x2=2.0)) == 2.0
    assert int(jnp.gcd(x1=12, x2=8)) == 4 and int(jnp.lcm(x1=4, x2=6)) == 12 and float(jnp.trunc(x=-1.5)) == -1.0
    a = np.array([1.0, np.nan, 3.0, 5.0])
    where = np.array([True, True, False, True])
    assert float(jnp.nanmean(a, 0, None, None, False, where)) == 3.0


def test_creation_device_places_the_result(mesh):
    d1 = fjax.devices()[1]
    x = jnp.ones(2)
    cases = [
        (lambda d: jnp.zeros(3, device=d), np.zeros(3)),
        (lambda d: jnp.full((2,), 4.0, device=d), np.full(2, 4.0)),
        (lambda d: jnp.array([1, 2], device=d), np.array([1, 2])),
        (lambda d: jnp.asarray(np.ones(2), device=d), np.ones(2)),
        (lambda d: jnp.arange(3, device=d), np.arange(3)),
        (lambda d: jnp.eye(2, device=d), np.eye(2)),
        (lambda d: jnp.empty_like(np.ones(2), device=d), np.zeros(2)),
        (lambda d: jnp.linspace(0.0, 1.0, 3, device=d), np.linspace(0.0, 1.0, 3)),
        (lambda d: x.astype(np.int32, device=d), np.ones(2)),
        (lambda d: jnp.fft.rfftfreq(4, device=d), np.fft.rfftfreq(4)),
    ]
    for f, want in cases:
        for d in (d1, fjax.sharding.SingleDeviceSharding(d1)):
            r = f(d)
            assert r.devices() == {d1} and r.committed
            np.testing.assert_allclose(np.asarray(r), want)
        assert f(None).devices() == {fjax.devices()[0]}
    # traced: the device is not applied inside jit (as JAX)
    np.testing.assert_array_equal(np.asarray(fjax.jit(lambda: jnp.zeros(3, device=d1))()), np.zeros(3))
