"""lax.rng_bit_generator / lax.rng_uniform against JAX 0.10.2 on CPU.

The bits are compared bit for bit with ``tests/data/rng_bit_generator.json``, recorded from real
JAX by ``tests/data/make_rng_bit_generator.py`` (all three algorithms, uint8/16/32 and, with x64,
uint64 results and uint64[2] keys, counters that carry into the high word, and JAX's vmap rule).
The error types/messages and the transform behaviour (grad passes through a uint32 key,
rng_uniform has no derivative and no batching rule) were checked by hand in JAX 0.10.2.
``rng_uniform`` is unseeded in JAX too, so it is checked statistically.
"""

import json
import pathlib
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax

DATA = json.loads((pathlib.Path(__file__).parent / "data" / "rng_bit_generator.json").read_text())
KEY = np.array([1, 2, 3, 4], np.uint32)
ALGOS = list(lax.RandomAlgorithm)


def _check_case(case):
    key = np.array(case["key"], case["key_dtype"])
    algo = lax.RandomAlgorithm[case["algorithm"]]
    new_key, bits = lax.rng_bit_generator(key, tuple(case["shape"]), dtype=case["dtype"], algorithm=algo)
    assert new_key.dtype == key.dtype and new_key.shape == key.shape
    assert np.asarray(new_key).tolist() == case["new_key"]
    assert bits.shape == tuple(case["shape"]) and bits.dtype == np.dtype(case["dtype"])
    assert np.asarray(bits).reshape(-1).tolist() == case["bits"]


def test_bits_match_jax():
    assert len(DATA["cases"]) > 200
    for case in DATA["cases"]:
        _check_case(case)


def test_bits_match_jax_x64(x64):
    for case in DATA["x64"]:
        _check_case(case)


def test_vmap_matches_jax_rule():
    # JAX batches with one draw from the first key; only that key advances
    for case in DATA["vmap"]:
        algo = lax.RandomAlgorithm[case["algorithm"]]
        keys = jnp.array(case["keys"], jnp.uint32)
        nk, bits = fjax.vmap(lambda k, a=algo: lax.rng_bit_generator(k, (2, 3), algorithm=a))(keys)
        assert np.asarray(nk).tolist() == case["new_keys"]
        assert np.asarray(bits).tolist() == case["bits"]
    keys = jnp.array(DATA["vmap"][0]["keys"], jnp.uint32)
    nk, bits = fjax.vmap(lambda k: lax.rng_bit_generator(k, (2, 3)), in_axes=1, out_axes=1)(keys.T)
    assert np.asarray(nk.T).tolist() == DATA["vmap"][0]["new_keys"]
    assert np.asarray(bits).transpose(1, 0, 2).tolist() == DATA["vmap"][0]["bits"]


_jitted = fjax.jit(lambda k: lax.rng_bit_generator(k, (3, 5), algorithm=lax.RandomAlgorithm.RNG_THREE_FRY))


@given(st.lists(st.integers(0, 2**32 - 1), min_size=4, max_size=4))
def test_jit_equals_eager_and_is_deterministic(words):
    key = np.array(words, np.uint32)
    eager = lax.rng_bit_generator(key, (3, 5), algorithm=lax.RandomAlgorithm.RNG_THREE_FRY)
    again = lax.rng_bit_generator(key, (3, 5), algorithm=lax.RandomAlgorithm.RNG_THREE_FRY)
    jitted = _jitted(key)
    for a, b, c in zip(eager, again, jitted):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


@given(st.sampled_from(ALGOS), st.sampled_from([np.uint8, np.uint16, np.uint32]), st.integers(0, 2**32 - 1))
def test_bits_look_uniform(algo, dtype, seed):
    nbits = 8 * np.dtype(dtype).itemsize
    key = np.random.default_rng(seed).integers(0, 2**32, 4, dtype=np.uint32)
    _, bits = lax.rng_bit_generator(key, (4000,), dtype=dtype, algorithm=algo)
    b = np.asarray(bits).astype(np.uint64)
    per_bit = np.array([((b >> np.uint64(i)) & np.uint64(1)).mean() for i in range(nbits)])
    # each bit is a fair coin: 4000 draws give a std of ~0.008
    assert np.all(np.abs(per_bit - 0.5) < 0.04), per_bit
    assert len(np.unique(np.asarray(bits))) > 0.9 * min(4000, 2**nbits)


def test_successive_keys_give_fresh_bits():
    k = KEY
    seen = set()
    for _ in range(5):
        k, bits = lax.rng_bit_generator(k, (8,))
        seen.update(np.asarray(bits).tolist())
    assert len(seen) == 40


def test_jaxpr_and_params():
    text = str(fjax.make_jaxpr(lambda k: lax.rng_bit_generator(k, (3,), dtype=jnp.uint8))(KEY))
    assert "rng_bit_generator[" in text and "u8[3]" in text and "u32[4]" in text
    assert "algorithm=RNG_DEFAULT" in text
    assert lax.rng_bit_generator_p.name == "rng_bit_generator" and lax.rng_bit_generator_p.multiple_results
    nk, bits = lax.rng_bit_generator(KEY, 5)  # an int shape, as JAX
    assert bits.shape == (5,)
    nk, bits = lax.rng_bit_generator(KEY, [2, 3])
    assert bits.shape == (2, 3) and not bits.weak_type


def test_grad_passes_through_integer_key():
    # JAX 0.10.2: both print 3.077947e+09 and 8.406482e+09
    f = lambda x: x * lax.rng_bit_generator(KEY, (3,))[1].astype(jnp.float32).sum()  # noqa: E731
    g = lambda x: x * lax.rng_bit_generator(x.astype(jnp.uint32) + KEY, (3,))[1].astype(jnp.float32).sum()  # noqa: E731
    np.testing.assert_allclose(fjax.grad(f)(1.0), 3.077947e09, rtol=1e-6)
    np.testing.assert_allclose(fjax.grad(g)(1.0), 8.406482e09, rtol=1e-6)
    np.testing.assert_allclose(fjax.jit(fjax.grad(g))(1.0), 8.406482e09, rtol=1e-6)


def test_errors():
    for dt in (np.int8, np.int32, np.float32, bool):
        with pytest.raises(TypeError, match="rng_bit_generator: unsupported dtype"):
            lax.rng_bit_generator(KEY, (2,), dtype=dt)
    # JAX fails an assertion while lowering these; fjax says what the key must be
    for bad in (np.zeros(3, np.uint32), np.zeros(4, np.int32), np.zeros(2, np.uint32), np.zeros((2, 4), np.uint32)):
        with pytest.raises(TypeError, match="uint32\\[4\\]"):
            lax.rng_bit_generator(bad, (3,))
    with pytest.raises(TypeError):
        lax.rng_bit_generator(KEY, (2.0,))


def test_uint64_without_x64_is_truncated_with_a_warning():
    with pytest.warns(UserWarning, match="uint64 .*truncated to dtype uint32"):
        nk, bits = lax.rng_bit_generator(KEY, (5,), dtype=np.uint64)
    assert bits.dtype == np.uint32
    np.testing.assert_array_equal(bits, lax.rng_bit_generator(KEY, (5,))[1])


# --- rng_uniform


def test_rng_uniform_values_and_dtypes():
    x = np.asarray(lax.rng_uniform(0.0, 1.0, (20000,)))
    assert x.dtype == np.float32 and np.all((x >= 0) & (x < 1))
    assert abs(x.mean() - 0.5) < 0.02 and abs(x.var() - 1 / 12) < 0.01
    y = lax.rng_uniform(jnp.float16(-2), jnp.float16(3), (1000,))
    assert y.dtype == np.float16 and np.all((np.asarray(y) >= -2) & (np.asarray(y) < 3))
    i = np.asarray(lax.rng_uniform(0, 10, (5000,)))
    assert i.dtype == np.int32 and set(i.tolist()) == set(range(10))
    u = np.asarray(lax.rng_uniform(jnp.uint8(3), jnp.uint8(5), (100,)))
    assert u.dtype == np.uint8 and set(u.tolist()) == {3, 4}
    assert lax.rng_uniform(0.0, 1.0, (2,)).weak_type
    assert not lax.rng_uniform(jnp.float32(0), jnp.float32(1), (2,)).weak_type


def test_rng_uniform_is_stateful_under_jit():
    f = fjax.jit(lambda x: (lax.rng_uniform(0.0, 1.0, (8,)) + x, lax.rng_uniform(0.0, 1.0, (8,))))
    a, b = f(0.0)
    c, _ = f(0.0)
    assert not np.array_equal(a, b) and not np.array_equal(a, c)
    text = str(fjax.make_jaxpr(lambda: lax.rng_uniform(0.0, 1.0, (3,)))())
    assert "f32[3] = rng_uniform[shape=(3,)] 0.0:f32[] 1.0:f32[]" in text


def test_rng_uniform_errors_and_transforms():
    with pytest.raises(ValueError, match="must have identical dtypes, got float32 and int32"):
        lax.rng_uniform(0.0, 1, (3,))
    with pytest.raises(ValueError, match="must be scalars; got shapes \\(2,\\) and \\(2,\\)"):
        lax.rng_uniform(jnp.zeros(2), jnp.ones(2), (2,))
    with pytest.raises(TypeError, match="unsupported dtype bool"):
        lax.rng_uniform(True, False, (2,))
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'rng_uniform' not implemented"):
        fjax.grad(lambda x: lax.rng_uniform(x, 2.0, ()))(1.0)
    with pytest.raises(NotImplementedError, match="Batching rule for 'rng_uniform' not implemented"):
        fjax.vmap(lambda x: lax.rng_uniform(x, 2.0, ()))(jnp.ones(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert lax.rng_uniform(1.0, 1.0, (3,)).shape == (3,)
