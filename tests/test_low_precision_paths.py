"""Code paths that look up a dtype's limits (``iinfo``/``finfo``, ``-inf`` fills) reached with JAX's
low-precision dtypes: int1/2/4 and uint1/2/4 (``np.iinfo`` rejects them), bfloat16 and the
float8/float6/float4 types (``np.finfo`` rejects them; several have no infinity, so a ``-inf``
fill becomes NaN).

Where a test says "JAX 0.10.2", its expected values were printed by JAX 0.10.2 (jaxlib 0.10.2,
ml_dtypes 0.6.0, CPU, x64 off) for the same expression; grouped ``pmax``/``pmin`` were run there
under ``pmap`` over 4 host devices (``XLA_FLAGS=--xla_force_host_platform_device_count=4``), as
JAX's ``vmap`` has no ``axis_index_groups``. Where JAX 0.10.2 cannot run the op on a dtype on CPU
(XLA rejects float6, top_k on 4-bit types, int2 all-reduces, ...), or gives NaN where no NaN went
in, the expected values are worked out by hand or from the float32 result, as noted.
These tests never import jax.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
import fjax.scipy.stats as jstats
from fjax import dtypes, lax, nn, optim, random, testing

LOW_INTS = [n for n in ("int4", "uint4", "int2", "uint2", "int1", "uint1") if hasattr(ml_dtypes, n)]
NO_INF = ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3b11fnuz"]
LOW_FLOATS = [dt.name for dt in dtypes.low_precision_dtypes if dtypes.kind(dt) == "f"]
#: the float dtypes that can hold the small integers -8..8 exactly, and negatives
SIGNED_FLOATS = [n for n in ["bfloat16", *LOW_FLOATS] if n != "float8_e8m0fnu"]


def D(name: str) -> np.dtype:
    return np.dtype(getattr(ml_dtypes, name))


def f32(x) -> list:
    return np.asarray(x).astype(np.float32).tolist()


# ---------------------------------------------------------------------------------------------
# lax reduce_max / reduce_min of empty operands (lax_reductions' identities)

# JAX 0.10.2: lax.reduce_max / reduce_min(jnp.zeros((0, 2), dt), (0,)); int1/uint1 from
# ml_dtypes.iinfo (JAX 0.10.2 gives max 1, min 0 for both: 1 is no int1, and uint1's lowest is 0)
EMPTY_IDENT = {
    "int4": (-8, 7),
    "uint4": (0, 15),
    "int2": (-2, 1),
    "uint2": (0, 3),
    "int1": (-1, 0),
    "uint1": (0, 1),
    "float8_e4m3fn": (-448.0, 448.0),
    "float8_e4m3fnuz": (-240.0, 240.0),
    "float8_e5m2fnuz": (-57344.0, 57344.0),
    "float8_e4m3b11fnuz": (-30.0, 30.0),
    "float4_e2m1fn": (-6.0, 6.0),
    "bfloat16": (-np.inf, np.inf),
    "float8_e5m2": (-np.inf, np.inf),
    # JAX 0.10.2 gives NaN for both (its -inf identity cast to float8_e8m0fnu); fjax the extremes
    "float8_e8m0fnu": (2.0**-127, 2.0**127),
}


@pytest.mark.parametrize("name", [n for n in EMPTY_IDENT if hasattr(ml_dtypes, n)])
def test_reduce_max_min_of_empty(name):
    dt = D(name)
    lo, hi = EMPTY_IDENT[name]
    x = jnp.zeros((0, 2), dt)
    for jit in (False, True):
        rmax = (fjax.jit(lambda v: lax.reduce_max(v, (0,))) if jit else lambda v: lax.reduce_max(v, (0,)))(x)
        rmin = (fjax.jit(lambda v: lax.reduce_min(v, (0,))) if jit else lambda v: lax.reduce_min(v, (0,)))(x)
        assert rmax.dtype == dt and rmin.dtype == dt
        assert f32(rmax) == [lo, lo] and f32(rmin) == [hi, hi]


@given(
    name=st.sampled_from(SIGNED_FLOATS + [n for n in LOW_INTS if n not in ("int1", "uint1")]),
    n=st.integers(0, 3),
    init=st.integers(-2, 1),
    seed=st.integers(0, 2**16),
)
def test_max_min_with_initial(name, n, init, seed):
    # jnp.max / jnp.min with initial= over possibly empty axes: max(initial, elements); JAX 0.10.2
    # gives 1 for jnp.max(jnp.zeros((0, 2), dt), axis=0, initial=1) for every dtype here; fjax gave
    # NaN for the float8 types without infinities and raised for int4/int2
    dt = D(name)
    lo = 0 if name.startswith("u") else -2
    init = max(init, lo)
    x = np.random.default_rng(seed).integers(lo, 2, (n, 2)).astype(dt)
    ref = np.concatenate([x.astype(np.float32), np.full((1, 2), init, np.float32)])
    assert f32(jnp.max(jnp.asarray(x), axis=0, initial=init)) == ref.max(0).tolist()
    assert f32(jnp.min(jnp.asarray(x), axis=0, initial=init)) == ref.min(0).tolist()


# ---------------------------------------------------------------------------------------------
# gather with mode="fill": the default fill of integers (slicing._default_fill_value)


@pytest.mark.parametrize(
    "name,fill",
    # JAX 0.10.2: jnp.ones(3, dt).at[jnp.array([0, 5])].get(mode="fill") -> [1, fill]
    [("int4", -8), ("uint4", 15), ("int2", -2), ("uint2", 3), ("bfloat16", np.nan), ("float8_e4m3fn", np.nan)],
)
def test_gather_fill_default(name, fill):
    dt = D(name)
    out = jnp.ones(3, dt).at[jnp.array([0, 5])].get(mode="fill")
    assert out.dtype == dt
    np.testing.assert_array_equal(f32(out), [1.0, fill])
    taken = jnp.take(jnp.ones(3, dt), jnp.array([0, 5]), mode="fill")
    np.testing.assert_array_equal(f32(taken), [1.0, fill])


# ---------------------------------------------------------------------------------------------
# scipy.stats.mode (its "larger than every element" fill)


MODE_X = [[1, 3, 3, 2, 1, 0], [2, 2, 0, 1, 1, 3]]


@pytest.mark.parametrize(
    "name,x,want",
    # JAX 0.10.2: stats.mode(x, axis=1) -> mode [1, 1], count [2, 2] (ties: the smallest value)
    [
        (n, MODE_X, [1.0, 1.0])
        for n in ("int4", "uint4", "float8_e4m3fn", "float8_e4m3fnuz", "bfloat16", "float4_e2m1fn")
    ]
    # int2/uint2: XLA fails in JAX 0.10.2 ("Inputs must have the same shape"); worked out by hand
    + [("uint2", MODE_X, [1.0, 1.0]), ("int2", [[1, -1, -1, 0, 1, -2], [0, 0, -2, 1, 1, -1]], [-1.0, 0.0])],
)
def test_stats_mode(name, x, want):
    dt = D(name)
    r = jstats.mode(jnp.asarray(np.array(x, np.float32).astype(dt)), axis=1)
    assert r.mode.dtype == dt
    assert f32(r.mode) == want
    assert np.asarray(r.count).tolist() == [2, 2]


# ---------------------------------------------------------------------------------------------
# pmax / pmin with axis_index_groups (lax.parallel._grouped_reduce's fills)

GROUPED_X = np.array([[1, -2, 3], [-1, 0, 2], [2, 3, -2], [0, 1, 1]], np.float32)
# JAX 0.10.2 under pmap: pmax over groups [[0, 1], [2, 3]], pmin over groups [[0, 2], [1, 3]]
GROUPED_SIGNED = (
    [[1, 0, 3], [1, 0, 3], [2, 3, 1], [2, 3, 1]],
    [[1, -2, -2], [-1, 0, 1], [1, -2, -2], [-1, 0, 1]],
)
GROUPED_UNSIGNED = (  # of abs(GROUPED_X)
    [[1, 2, 3], [1, 2, 3], [2, 3, 2], [2, 3, 2]],
    [[1, 2, 2], [0, 0, 1], [1, 2, 2], [0, 0, 1]],
)


@pytest.mark.parametrize(
    "name", ["bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "int4", "uint4", "uint2"]
)
def test_grouped_pmax_pmin(name):
    # uint2: XLA has no all-reduce for it in JAX 0.10.2 ("AllReduce for datatype 'u2' is not
    # supported"); expected values as for uint4 (int2, which cannot hold 3: the next test)
    dt = D(name)
    unsigned = name.startswith("u")
    x = jnp.asarray((np.abs(GROUPED_X) if unsigned else GROUPED_X).astype(dt))
    want_max, want_min = GROUPED_UNSIGNED if unsigned else GROUPED_SIGNED
    mx = fjax.vmap(lambda v: lax.pmax(v, "i", axis_index_groups=[[0, 1], [2, 3]]), axis_name="i")(x)
    mn = fjax.vmap(lambda v: lax.pmin(v, "i", axis_index_groups=[[0, 2], [1, 3]]), axis_name="i")(x)
    assert mx.dtype == dt and mn.dtype == dt
    assert f32(mx) == np.array(want_max, np.float32).tolist()
    assert f32(mn) == np.array(want_min, np.float32).tolist()


@given(name=st.sampled_from(LOW_FLOATS + LOW_INTS + ["bfloat16"]), seed=st.integers(0, 2**16))
def test_grouped_pmax_pmin_matches_float32(name, seed):
    # every element comes out as the max/min of its group, computed in float32 (exact here)
    dt = D(name)
    vals = np.unique(np.arange(256, dtype=np.uint8).view(dt).astype(np.float32))
    vals = vals[np.isfinite(vals)]
    x = np.random.default_rng(seed).choice(vals, (4, 3)).astype(dt)
    groups = [[0, 3], [1, 2]]
    mx = fjax.vmap(lambda v: lax.pmax(v, "i", axis_index_groups=groups), axis_name="i")(jnp.asarray(x))
    mn = fjax.vmap(lambda v: lax.pmin(v, "i", axis_index_groups=groups), axis_name="i")(jnp.asarray(x))
    xf = x.astype(np.float32)
    for g in groups:
        for i in g:
            assert f32(mx)[i] == xf[g].max(0).tolist()
            assert f32(mn)[i] == xf[g].min(0).tolist()


# ---------------------------------------------------------------------------------------------
# jnp.nanmax / nanmin: the NaN fill of the float8 types without infinities


@pytest.mark.parametrize("name", [*NO_INF, "bfloat16", "float8_e5m2"])
def test_nanmax_nanmin(name):
    # JAX 0.10.2, for every dtype here: nanmax -> [3, nan, 0.5], nanmin -> [1, nan, -2]
    dt = D(name)
    x = jnp.asarray(np.array([[np.nan, 3.0, 1.0], [np.nan] * 3, [-2.0, np.nan, 0.5]], np.float32).astype(dt))
    np.testing.assert_array_equal(f32(jnp.nanmax(x, axis=1)), [3.0, np.nan, 0.5])
    np.testing.assert_array_equal(f32(jnp.nanmin(x, axis=1)), [1.0, np.nan, -2.0])


# ---------------------------------------------------------------------------------------------
# lax.top_k's total order (lax.other._total_order_key) and sort keys


def test_top_k_float8_e8m0fnu():
    # JAX 0.10.2: top_k(x, 3) -> [16, 8, 4] at [6, 5, 1]; with a NaN, top_k(y, 2) -> [nan, 4] at [1, 3]
    dt = D("float8_e8m0fnu")
    x = jnp.asarray(np.array([1, 4, 0.5, 0.25, 2, 8, 16, 0.125], np.float32).astype(dt))
    v, i = lax.top_k(x, 3)
    assert f32(v) == [16.0, 8.0, 4.0] and np.asarray(i).tolist() == [6, 5, 1]
    y = jnp.asarray(np.array([1, np.nan, 0.5, 4, 0.25], np.float32).astype(dt))
    v, i = lax.top_k(y, 2)
    np.testing.assert_array_equal(f32(v), [np.nan, 4.0])
    assert np.asarray(i).tolist() == [1, 3]


@pytest.mark.parametrize("name", ["float8_e4m3fnuz", "float8_e4m3fn", "bfloat16"])
def test_top_k_nan_place(name):
    # JAX 0.10.2: top_k(x, 5): the fnuz NaN (bits 0x80, a negative NaN) ranks below every number,
    # the others' (positive) NaNs above
    dt = D(name)
    x = jnp.asarray(np.array([1, np.nan, -0.5, 4, -3], np.float32).astype(dt))
    v, i = lax.top_k(x, 5)
    if name.endswith("fnuz"):
        np.testing.assert_array_equal(f32(v), [4.0, 1.0, -0.5, -3.0, np.nan])
        assert np.asarray(i).tolist() == [3, 0, 2, 4, 1]
    else:
        np.testing.assert_array_equal(f32(v), [np.nan, 4.0, 1.0, -0.5, -3.0])
        assert np.asarray(i).tolist() == [1, 3, 0, 2, 4]


@given(name=st.sampled_from(LOW_FLOATS + ["bfloat16"]), n=st.integers(1, 9), seed=st.integers(0, 2**16))
def test_top_k_matches_float32(name, n, seed):
    # float4/float6 (JAX 0.10.2 on CPU: XLA errors) and the rest: the same values and indices as
    # top_k of the exact float32 upcast (ties keep the lower index first in both)
    dt = D(name)
    vals = np.unique(np.arange(256, dtype=np.uint8).view(dt).astype(np.float32))
    vals = vals[np.isfinite(vals)]
    x = np.random.default_rng(seed).choice(vals, n).astype(dt)
    k = min(3, n)
    v, i = lax.top_k(jnp.asarray(x), k)
    v32, i32 = lax.top_k(jnp.asarray(x.astype(np.float32)), k)
    assert v.dtype == dt
    assert f32(v) == np.asarray(v32).tolist()
    assert np.asarray(i).tolist() == np.asarray(i32).tolist()


def test_sort_float8_e8m0fnu_with_nan():
    # JAX 0.10.2: sort -> [0.25, 0.5, 1, 4, nan], argsort -> [4, 2, 0, 3, 1]
    x = jnp.asarray(np.array([1, np.nan, 0.5, 4, 0.25], np.float32).astype(D("float8_e8m0fnu")))
    np.testing.assert_array_equal(f32(jnp.sort(x)), [0.25, 0.5, 1.0, 4.0, np.nan])
    assert np.asarray(jnp.argsort(x)).tolist() == [4, 2, 0, 3, 1]


# ---------------------------------------------------------------------------------------------
# nn.max_pool with padding (its padding fill)


@pytest.mark.parametrize("name", ["int4", "uint4", "int2", "float8_e4m3fn", "float8_e4m3fnuz", "float4_e2m1fn"])
def test_max_pool_padded(name):
    # no flax in the reference environment: expected values are max_pool of the float32 input
    # (exact in every dtype here), which pads with -inf
    dt = D(name)
    lo = 0 if name.startswith("u") else -2
    x = np.random.default_rng(0).integers(lo, 2, (1, 4, 4, 2)).astype(np.float32)
    want = np.asarray(nn.max_pool(jnp.asarray(x), (3, 3), (1, 1), "SAME"))
    got = nn.max_pool(jnp.asarray(x.astype(dt)), (3, 3), (1, 1), "SAME")
    assert got.dtype == dt
    assert f32(got) == want.tolist()


@given(name=st.sampled_from(SIGNED_FLOATS + LOW_INTS), seed=st.integers(0, 2**16))
def test_max_pool_padded_matches_float32(name, seed):
    dt = D(name)
    vals = np.unique(np.arange(256, dtype=np.uint8).view(dt).astype(np.float32))
    vals = vals[np.isfinite(vals)]
    x = np.random.default_rng(seed).choice(vals, (1, 3, 3, 1)).astype(dt)
    want = np.asarray(nn.max_pool(jnp.asarray(x.astype(np.float32)), (2, 2), (1, 1), ((1, 0), (0, 1))))
    assert f32(nn.max_pool(jnp.asarray(x), (2, 2), (1, 1), ((1, 0), (0, 1)))) == want.tolist()


# ---------------------------------------------------------------------------------------------
# optim.safe_increment on narrow integer counts (optax's semantics: saturate at the dtype's max)


@pytest.mark.parametrize("name,top", [("int4", 7), ("uint4", 15), ("int2", 1), ("uint2", 3)])
def test_safe_increment_narrow_ints(name, top):
    dt = D(name)
    assert int(optim.safe_increment(jnp.array(top, dt))) == top
    out = optim.safe_increment(jnp.array(0, dt))
    assert out.dtype == dt and int(out) == 1


# ---------------------------------------------------------------------------------------------
# fjax.testing.arrays with low-precision dtypes


@pytest.mark.parametrize("name", ["int4", "uint4", "int2", "uint2", "bfloat16", "float8_e4m3fn", "float4_e2m1fn"])
@given(data=st.data())
def test_testing_arrays_low_precision(name, data):
    dt = D(name)
    x = data.draw(testing.arrays(shape=(5,), dtype=dt, min_value=-3.0, max_value=10.0))
    assert x.dtype == dt and x.shape == (5,)
    xf = np.asarray(x).astype(np.float64)
    info = ml_dtypes.iinfo(dt) if dtypes.kind(dt) in "iu" else ml_dtypes.finfo(dt)
    lo, hi = float(info.min), float(info.max)
    assert np.all(np.isfinite(xf))
    assert np.all(xf >= max(-3.0, lo)) and np.all(xf <= min(10.0, hi))


# ---------------------------------------------------------------------------------------------
# random.poisson with narrow integer dtypes: JAX bounds its loops by iinfo(dtype).max iterations
# and converts the rejection sampler's float result with saturation

# JAX 0.10.2: random.poisson(random.key(1), lam, (12,), dtype=dt) for lam = 3, 8, 30, 1000
POISSON_JAX = {
    "int2": [[0] * 12, [0] * 12, [1, 1, 1, 1, 1, 1, 1, 1, 1, -1, 1, -1], [1] * 11 + [-1]],
    "uint2": [[2, 2, 1, 2, 2, 2, 1, 1, 2, 2, 2, 2], [2] * 12, [3] * 12, [3] * 12],
    "int4": [[4, 2, 1, 2, 3, 2, 1, 1, 5, 2, 3, 6], [6, 6, 4, 6, 6, 5, 4, 6, 6, 6, 6, 6], [7] * 12, [7] * 12],
    "uint4": [[4, 2, 1, 2, 3, 2, 1, 1, 5, 2, 3, 6], [7, 9, 4, 10, 6, 5, 4, 6, 14, 9, 11, 12], [15] * 12, [15] * 12],
    "int8": [
        [4, 2, 1, 2, 3, 2, 1, 1, 5, 2, 3, 6],
        [7, 9, 4, 10, 6, 5, 4, 6, 15, 9, 11, 12],
        [36, 24, 24, 27, 26, 36, 23, 27, 33, 35, 33, 45],
        [127] * 12,
    ],
    "uint8": [
        [4, 2, 1, 2, 3, 2, 1, 1, 5, 2, 3, 6],
        [7, 9, 4, 10, 6, 5, 4, 6, 15, 9, 11, 12],
        [36, 24, 24, 27, 26, 36, 23, 27, 33, 35, 33, 45],
        [255] * 12,
    ],
}


@pytest.mark.parametrize("name", list(POISSON_JAX))
def test_poisson_narrow_int_dtypes(name):
    dt = np.dtype(getattr(ml_dtypes, name, None) or name)
    for lam, want in zip((3.0, 8.0, 30.0, 1000.0), POISSON_JAX[name]):
        got = random.poisson(random.key(1), lam, (12,), dtype=dt)
        assert got.dtype == dt
        assert np.asarray(got).astype(np.int64).tolist() == want, lam


# JAX 0.10.2: random.poisson(random.key(3), lam, dtype=dt), lam = [nan, -1, 0, 0.5, 12, 3e9, inf]
POISSON_EDGES = {
    "int4": [-1, -1, 0, 1, 7, 7, 0],
    "uint4": [15, 15, 0, 1, 15, 15, 0],
    "uint8": [255, 255, 0, 1, 15, 255, 0],
    "int8": [-1, -1, 0, 1, 15, 127, 0],
    "uint16": [65535, 65535, 0, 1, 15, 65535, 0],
}


@pytest.mark.parametrize("name", list(POISSON_EDGES))
def test_poisson_edge_rates(name):
    dt = np.dtype(getattr(ml_dtypes, name, None) or name)
    lam = np.array([np.nan, -1.0, 0.0, 0.5, 12.0, 3e9, np.inf], np.float32)
    got = random.poisson(random.key(3), lam, dtype=dt)
    assert np.asarray(got).astype(np.int64).tolist() == POISSON_EDGES[name]


@pytest.mark.parametrize("name", ["int4", "uint4", "int2", "uint2"])
def test_poisson_kernel_matches_composite_narrow(name):
    # the numba kernel (random_poisson_p's impl) against the lax composite it mirrors
    from fjax import _random_dists as rd

    dt = D(name)
    k = random.PRNGKey(9)
    lam = np.array([0.0, 0.3, 4.0, 9.99, 10.0, 37.5, 1000.0, np.nan, -1.0] * 4, np.float32)
    kernel = np.asarray(random.poisson(k, lam, dtype=dt))
    with fjax.disable_jit():
        composite = np.asarray(rd._poisson(k, jnp.asarray(lam), lam.shape, dt))
    np.testing.assert_array_equal(kernel.astype(np.int64), composite.astype(np.int64))


def test_median_and_quantile_of_int4_are_float32():
    """JAX 0.10.2: ``jnp.median`` of int4 [1..5] is 3.0 float32, ``jnp.quantile(x, 0.3)`` 2.2 (the
    array goes to its inexact dtype on its own; int4 with a Python float is refused)."""
    x = jnp.array(np.array([1, 2, 3, 4, 5], dtype=ml_dtypes.int4))
    m = jnp.median(x)
    assert m.dtype == np.float32 and float(m) == 3.0
    np.testing.assert_allclose(float(jnp.quantile(x, 0.3)), 2.2, rtol=1e-6)
    assert float(jnp.nanmedian(x)) == 3.0
