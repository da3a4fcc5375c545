"""fjax.random: JAX's threefry2x32 PRNG bit for bit (vectors recorded from JAX in
tests/data/random_vectors.json), transforms (jit, vmap, grad), statistics and errors."""

from __future__ import annotations

import hashlib
import json
import math
import pathlib
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import random

DATA = json.loads((pathlib.Path(__file__).parent / "data" / "random_vectors.json").read_text())
CASES = DATA["cases"]
# with x64 on these sample float64 through log/erf_inv, which fjax computes with its own float64
# functions rather than XLA's: a few ulps apart
F64_APPROX = {"normal", "gumbel", "exponential", "laplace", "truncated_normal"}


@pytest.fixture
def x64(request):
    fjax.config.update("jax_enable_x64", request.param)
    yield request.param
    fjax.config.update("jax_enable_x64", False)


def _dec(v):
    if isinstance(v, dict) and "array" in v:
        return np.asarray(v["array"], dtype=v["dtype"])
    return tuple(v) if isinstance(v, list) else v


def _key_for(case):
    key = random.PRNGKey(case["seed"])
    for op, a in case["key_path"]:
        key = random.split(key, a[0])[a[1]] if op == "split" else random.fold_in(key, a)
    return key


def _bits(x):
    x = np.asarray(x)
    if x.dtype.kind == "f":
        return x.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])
    return x.astype(np.uint8) if x.dtype == np.bool_ else x


def _case_id(c):
    kw = ",".join(f"{k}={v if not isinstance(v, dict) else 'arr'}" for k, v in c.get("kwargs", {}).items())
    return f"{c['fn']}-{c['seed'] if not isinstance(c['seed'], dict) else 'u32'}-{'x64' if c['x64'] else 'x32'}-{kw}"


def _check_against_jax(out, case):
    ref = case["out"]
    out = np.asarray(out)
    assert str(out.dtype) == ref["dtype"] and list(out.shape) == ref["shape"]
    if "sha256" in ref:
        assert [int(v) for v in _bits(out).ravel()[:8]] == ref["head"]
        assert hashlib.sha256(np.ascontiguousarray(out).tobytes()).hexdigest() == ref["sha256"]
        return
    if case["x64"] and ref["dtype"] == "float64" and case["fn"] in F64_APPROX:
        want = np.array(ref["bits"], dtype=np.uint64).view(np.float64).reshape(ref["shape"])
        np.testing.assert_allclose(out, want, rtol=1e-13, atol=1e-15)
    else:
        assert [int(v) for v in _bits(out).ravel()] == ref["bits"]


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_matches_recorded_jax(case):
    fjax.config.update("jax_enable_x64", case["x64"])
    try:
        if case["fn"] == "PRNGKey":
            seed = case["seed"]
            out = random.PRNGKey(np.uint32(seed["array"]) if isinstance(seed, dict) else seed)
        else:
            kwargs = {k: _dec(v) for k, v in case["kwargs"].items()}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # float64 requested with x64 off
                out = getattr(random, case["fn"])(_key_for(case), **kwargs)
        _check_against_jax(out, case)
    finally:
        fjax.config.update("jax_enable_x64", False)


def test_recorded_with_partitionable_threefry():
    assert DATA["jax_threefry_partitionable"] is True


# ---------------------------------------------------------------------------------------------
# threefry itself


def _np_threefry(k1, k2, x1, x2):
    """Reference threefry2x32 in plain numpy (uint32 arithmetic wraps)."""
    rot = ((13, 15, 26, 6), (17, 29, 16, 24))
    u = np.uint32
    ks = (u(k1), u(k2), u(k1) ^ u(k2) ^ u(0x1BD11BDA))
    x1 = np.asarray(x1, u) + ks[0]
    x2 = np.asarray(x2, u) + ks[1]
    for i in range(5):
        for r in rot[i % 2]:
            x1 = x1 + x2
            x2 = ((x2 << u(r)) | (x2 >> u(32 - r))) ^ x1
        x1 = x1 + ks[(i + 1) % 3]
        x2 = x2 + ks[(i + 2) % 3] + u(i + 1)
    return x1, x2


@pytest.mark.parametrize(
    "key,count,expected",
    [  # the Random123 known-answer vectors for threefry2x32_20
        ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
        ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
        ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
    ],
)
def test_threefry_known_answers(key, count, expected):
    u = np.uint32
    out = random.threefry2x32(u(key[0]), u(key[1]), np.array([count[0]], u), np.array([count[1]], u))
    assert [int(np.asarray(o)[0]) for o in out] == list(expected)
    with np.errstate(over="ignore"):
        assert [int(o[0]) for o in _np_threefry(*key, [count[0]], [count[1]])] == list(expected)


@given(
    seed=st.integers(-(2**31), 2**31 - 1),
    shape=st.lists(st.integers(0, 5), min_size=0, max_size=3).map(tuple),
)
@settings(deadline=None, max_examples=15)
def test_bits_and_split_match_numpy_threefry(seed, shape):
    key = np.asarray(random.PRNGKey(seed))
    assert key.tolist() == [0, seed % 2**32]
    n = math.prod(shape)
    with np.errstate(over="ignore"):
        hi, lo = _np_threefry(key[0], key[1], np.zeros(n, np.uint32), np.arange(n, dtype=np.uint32))
    np.testing.assert_array_equal(np.asarray(random.bits(random.PRNGKey(seed), shape)), (hi ^ lo).reshape(shape))
    np.testing.assert_array_equal(
        np.asarray(random.split(random.PRNGKey(seed), shape)), np.stack([hi, lo], -1).reshape(*shape, 2)
    )


# ---------------------------------------------------------------------------------------------
# determinism and transforms

SAMPLERS = {
    "uniform": lambda k: random.uniform(k, (5, 3), minval=-2.0, maxval=3.0),
    "normal": lambda k: random.normal(k, (7,)),
    "randint": lambda k: random.randint(k, (6,), -3, 17),
    "bernoulli": lambda k: random.bernoulli(k, 0.3, (8,)),
    "truncated_normal": lambda k: random.truncated_normal(k, -0.5, 1.5, (6,)),
    "permutation": lambda k: random.permutation(k, 9),
    "permutation_2d": lambda k: random.permutation(k, jnp.arange(12.0).reshape(3, 4), axis=1),
    "choice": lambda k: random.choice(k, 10, (4,), replace=False),
    "choice_p": lambda k: random.choice(k, 5, (6,), p=jnp.array([0.1, 0.2, 0.3, 0.2, 0.2])),
    "categorical": lambda k: random.categorical(k, jnp.array([[0.0, 1.0, -1.0], [2.0, 0.0, 0.0]])),
    "gumbel": lambda k: random.gumbel(k, (4,)),
    "exponential": lambda k: random.exponential(k, (4,)),
    "laplace": lambda k: random.laplace(k, (4,)),
    "split": lambda k: random.split(k, 3),
    "fold_in": lambda k: random.fold_in(k, 17),
    "bits": lambda k: random.bits(k, (2, 2)),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_same_key_same_numbers_and_jit_invariance(name):
    f = SAMPLERS[name]
    key = random.PRNGKey(1234)
    a, b = np.asarray(f(key)), np.asarray(f(key))
    np.testing.assert_array_equal(a, b)
    c = np.asarray(fjax.jit(f)(key))
    assert c.dtype == a.dtype
    np.testing.assert_array_equal(a, c)
    other = np.asarray(f(random.PRNGKey(4321)))
    if name not in ("choice", "categorical"):  # few possible outcomes
        assert not np.array_equal(a, other)


@pytest.mark.parametrize(
    "name", ["uniform", "normal", "randint", "bernoulli", "permutation", "split", "fold_in", "gumbel"]
)
def test_vmap_over_keys_is_stack_of_calls(name):
    f = SAMPLERS[name]
    keys = random.split(random.PRNGKey(7), 4)
    batched = np.asarray(fjax.vmap(f)(keys))
    stacked = np.stack([np.asarray(f(keys[i])) for i in range(4)])
    np.testing.assert_array_equal(batched, stacked)


def test_vmap_over_seeds_and_fold_in_data():
    seeds = jnp.arange(5)
    keys = fjax.vmap(random.PRNGKey)(seeds)
    np.testing.assert_array_equal(np.asarray(keys), np.stack([np.asarray(random.PRNGKey(i)) for i in range(5)]))
    key = random.PRNGKey(3)
    folded = fjax.vmap(lambda d: random.fold_in(key, d))(jnp.arange(4, dtype=jnp.uint32))
    np.testing.assert_array_equal(np.asarray(folded), np.stack([np.asarray(random.fold_in(key, i)) for i in range(4)]))
    jitted = fjax.jit(fjax.vmap(lambda k: random.normal(k, (3,))))(random.split(key, 2))
    np.testing.assert_array_equal(
        np.asarray(jitted), np.stack([np.asarray(random.normal(k, (3,))) for k in random.split(key, 2)])
    )


def test_grad_through_samplers():
    key = random.PRNGKey(0)
    z = random.normal(key, (5,))
    g = fjax.grad(lambda s: jnp.sum(s * random.normal(key, (5,))))(2.0)
    np.testing.assert_allclose(float(g), float(jnp.sum(z)), rtol=1e-6)
    # uniform is minval + u01 * (maxval - minval): d/dminval = 1 - u01, d/dmaxval = u01
    u01 = np.asarray(random.uniform(key, (100,)), np.float64)
    gmin, gmax = fjax.grad(lambda a, b: jnp.sum(random.uniform(key, (100,), minval=a, maxval=b)), argnums=(0, 1))(
        -1.0, 3.0
    )
    np.testing.assert_allclose(float(gmin), np.sum(1 - u01), rtol=1e-5)
    np.testing.assert_allclose(float(gmax), np.sum(u01), rtol=1e-5)
    # truncated_normal is differentiable in its bounds (finite, nonzero)
    gl = fjax.grad(lambda lo: jnp.sum(random.truncated_normal(key, lo, 2.0, (50,))))(-1.0)
    assert np.isfinite(float(gl)) and float(gl) != 0.0


# ---------------------------------------------------------------------------------------------
# statistics (100k samples)

N = 100_000


def test_uniform_and_normal_moments():
    k1, k2 = random.split(random.PRNGKey(2024))
    u = np.asarray(random.uniform(k1, (N,)), np.float64)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    z = np.asarray(random.normal(k2, (N,)), np.float64)
    assert abs(z.mean()) < 0.015 and abs(z.var() - 1) < 0.02
    assert abs(np.mean(z**3)) < 0.05 and abs(np.mean(z**4) - 3) < 0.1
    w = np.asarray(random.uniform(k1, (N,), minval=-3.0, maxval=5.0), np.float64)
    assert w.min() >= -3.0 and w.max() < 5.0 and abs(w.mean() - 1.0) < 0.05


def test_other_distribution_moments():
    ks = random.split(random.PRNGKey(5), 4)
    e = np.asarray(random.exponential(ks[0], (N,)), np.float64)
    assert e.min() >= 0 and abs(e.mean() - 1) < 0.02
    g = np.asarray(random.gumbel(ks[1], (N,)), np.float64)
    assert abs(g.mean() - np.euler_gamma) < 0.02 and abs(g.var() - np.pi**2 / 6) < 0.05
    lap = np.asarray(random.laplace(ks[2], (N,)), np.float64)
    assert abs(lap.mean()) < 0.02 and abs(lap.var() - 2) < 0.06
    b = np.asarray(random.bernoulli(ks[3], 0.3, (N,)))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 0.01


def test_randint_truncated_normal_ranges():
    k1, k2 = random.split(random.PRNGKey(9))
    r = np.asarray(random.randint(k1, (N,), -3, 7))
    assert r.dtype == np.int32 and r.min() == -3 and r.max() == 6
    counts = np.bincount(r + 3)
    assert counts.min() > 0.9 * N / 10
    r8 = np.asarray(random.randint(k1, (1000,), 0, 256, dtype=jnp.uint8))
    assert r8.dtype == np.uint8 and r8.max() > 240
    t = np.asarray(random.truncated_normal(k2, -1.0, 0.5, (N,)), np.float64)
    assert t.min() > -1.0 and t.max() < 0.5
    pdf = lambda v: math.exp(-v * v / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda v: 0.5 * (1 + math.erf(v / math.sqrt(2)))  # noqa: E731
    assert abs(t.mean() - (pdf(-1.0) - pdf(0.5)) / (cdf(0.5) - cdf(-1.0))) < 0.01


def test_permutation_choice_categorical():
    key = random.PRNGKey(11)
    p = np.asarray(random.permutation(key, 1000))
    np.testing.assert_array_equal(np.sort(p), np.arange(1000))
    x = np.arange(20).reshape(4, 5)
    pi = np.asarray(random.permutation(key, x, axis=1, independent=True))
    np.testing.assert_array_equal(np.sort(pi, axis=1), x)
    pa = np.asarray(random.permutation(key, x, axis=1))
    np.testing.assert_array_equal(pa, x[:, pa[0]])  # one shuffle of the columns
    assert sorted(pa[0].tolist()) == list(range(5))
    c = np.asarray(random.choice(key, 50, (30,), replace=False))
    assert len(set(c.tolist())) == 30 and c.min() >= 0 and c.max() < 50
    cp = np.asarray(random.choice(key, 8, (6,), replace=False, p=jnp.ones(8) / 8))
    assert len(set(cp.tolist())) == 6
    logits = np.log(np.array([0.2, 0.5, 0.3]))
    s = np.asarray(random.categorical(key, logits, shape=(N,)))
    np.testing.assert_allclose(np.bincount(s, minlength=3) / N, [0.2, 0.5, 0.3], atol=0.01)


@given(seed=st.integers(0, 2**32 - 1), shape=st.lists(st.integers(1, 4), max_size=3).map(tuple))
@settings(deadline=None, max_examples=10)
def test_hypothesis_shapes_dtypes_ranges(seed, shape):
    key = random.PRNGKey(seed)
    u = random.uniform(key, shape, minval=-1.0, maxval=2.0)
    assert u.shape == shape and u.dtype == np.float32
    assert np.all((np.asarray(u) >= -1.0) & (np.asarray(u) < 2.0))
    n = random.normal(key, shape)
    assert n.shape == shape and np.all(np.isfinite(np.asarray(n)))
    r = random.randint(key, shape, 2, 9)
    assert r.shape == shape and np.all((np.asarray(r) >= 2) & (np.asarray(r) < 9))
    assert random.split(key, 3).shape == (3, 2) and random.split(key, 3).dtype == np.uint32
    b = random.bernoulli(key, 0.5, shape)
    assert b.shape == shape and b.dtype == np.bool_


# ---------------------------------------------------------------------------------------------
# keys, dtypes and errors


def test_key_representation_helpers():
    # random.key gives a typed key array (dtype key<fry>, shape ()) over PRNGKey's data, as JAX
    k = random.key(42)
    assert k.shape == () and str(k.dtype) == "key<fry>"
    assert repr(k) == "Array((), dtype=key<fry>) overlaying:\n[ 0 42]"
    np.testing.assert_array_equal(random.key_data(k), np.asarray(random.PRNGKey(42)))
    with pytest.raises(TypeError, match="key_data"):
        np.asarray(k)
    assert random.wrap_key_data(random.key_data(k)).shape == ()
    assert random.key_impl(k) == "threefry2x32"
    assert random.split(k).shape == (2,) and random.split(k, (2, 3)).shape == (2, 3)
    assert random.key_data(random.split(k, 4)).shape == (4, 2)
    raw = random.PRNGKey(42)
    assert random.key_data(raw) is raw and random.split(raw).shape == (2, 2)
    assert random.PRNGKey(-1).tolist() == [0, 2**32 - 1] and random.PRNGKey(2**32 + 5).tolist() == [0, 5]


@pytest.mark.parametrize("x64", [True], indirect=True)
def test_x64_defaults(x64):
    k = random.PRNGKey(-1)
    assert k.tolist() == [2**32 - 1, 2**32 - 1]
    assert random.bits(k).dtype == np.uint64 and random.uniform(k).dtype == np.float64
    assert random.randint(k, (2,), 0, 5).dtype == np.int64


def test_float64_with_x64_off_is_truncated_with_warning():
    with pytest.warns(UserWarning, match="Explicitly requested dtype float64 is not available"):
        u = random.uniform(random.PRNGKey(0), (3,), dtype=jnp.float64)
    assert u.dtype == np.float32
    with pytest.warns(UserWarning):
        assert random.randint(random.PRNGKey(0), (3,), 0, 4, dtype=jnp.int64).dtype == np.int32


@pytest.mark.parametrize(
    "bad", [np.zeros(2, np.float32), np.zeros(3, np.uint32), np.zeros(2, np.int32), 3, "key", None]
)
def test_non_key_raises_type_error(bad):
    with pytest.raises(TypeError, match="PRNG key"):
        random.uniform(bad)
    with pytest.raises(TypeError, match="PRNG key"):
        random.split(bad)


def test_errors():
    key = random.PRNGKey(0)
    with pytest.raises(ValueError, match="accepts a single key"):
        random.normal(random.split(key, 3))
    with pytest.raises(ValueError, match="must be a float dtype"):
        random.uniform(key, dtype=jnp.int32)
    with pytest.raises(TypeError, match="randint only accepts integer dtypes"):
        random.randint(key, (2,), 0, 3, dtype=jnp.float32)
    with pytest.raises(ValueError, match="unsigned int dtype"):
        random.bits(key, (2,), jnp.int32)
    with pytest.raises(TypeError, match="must have a floating dtype"):
        random.bernoulli(key, 1)
    with pytest.raises(ValueError, match="Cannot take a larger sample"):
        random.choice(key, 3, (5,), replace=False)
    with pytest.raises(TypeError, match="at least 1-dimensional"):
        random.permutation(key, 2.5)
    with pytest.raises(ValueError, match=re.escape("Incompatible shapes for broadcasting: shapes=[(3,), (4,), ()]")):
        random.randint(key, (3,), jnp.zeros(4, jnp.int32), 5)  # (JAX 0.10.2's message)
    with pytest.raises(TypeError, match="scalar seed"):
        random.PRNGKey(jnp.arange(2))
    with pytest.raises(TypeError, match="must be an integer"):
        random.PRNGKey(1.5)
    with pytest.raises(OverflowError):
        random.fold_in(key, -1)
    with pytest.raises(TypeError, match="accepts a scalar"):
        random.fold_in(key, jnp.arange(2))
    assert random.choice(key, 5, (0,)).shape == (0,)
    assert random.split(key, 0).shape == (0, 2)


def test_compiled_eager_kernels_match_the_primitive_path(monkeypatch):
    # large eager samples run threefry and the float32 fma as compiled loops; same bits as the
    # primitive-by-primitive path (which jit also follows)
    import fjax._random_kernels as kernels

    k = random.PRNGKey(3)
    fast = [random.normal(k, (256, 256)), random.uniform(k, (256, 256)), random.split(k, 70000)]
    monkeypatch.setattr(kernels, "MIN_SIZE", 1 << 40)
    slow = [random.normal(k, (256, 256)), random.uniform(k, (256, 256)), random.split(k, 70000)]
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_an_int_shape_is_one_dimension():
    """JAX's canonicalize_shape takes one int as a 1-D shape (flax nnx's tests call
    ``random.normal(key, dim)``); the draws are those of the tuple shape."""
    k = fjax.random.key(3)
    for f in (fjax.random.normal, fjax.random.uniform, fjax.random.bits):
        np.testing.assert_array_equal(np.asarray(f(k, 5)), np.asarray(f(k, (5,))))
    with pytest.raises(TypeError, match="'float' object is not iterable"):  # as JAX 0.10.2
        fjax.random.normal(k, 2.5)
