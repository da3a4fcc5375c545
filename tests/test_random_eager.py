"""Eager fjax.random samplers on large shapes run as one compiled program (fjax/_random_eager.py)
and give the same bits as op-by-op evaluation (jax_disable_jit)."""

from __future__ import annotations

import numpy as np
import pytest

import fjax
from fjax import _random_eager, random


@pytest.fixture
def small_threshold(monkeypatch):
    monkeypatch.setattr(_random_eager, "MIN_SIZE", 1000)


def _op_by_op(f):
    with fjax.disable_jit():
        return np.asarray(f())


def test_large_eager_samplers_compile_and_match_op_by_op(small_threshold):
    k = random.PRNGKey(7)
    # two samplers (each compiles a program cold in CI): threefry + the inverse-erf polynomial
    # with the fma and bit casts, and the uniform path behind bernoulli
    cases = [lambda: random.normal(k, (40, 50)), lambda: random.bernoulli(k, 0.3, (2000,))]
    before = _random_eager._jitted.cache_info().currsize
    for f in cases:
        got = np.asarray(f())
        want = _op_by_op(f)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    assert _random_eager._jitted.cache_info().currsize >= before + len(cases)  # each ran compiled


def test_small_and_traced_calls_stay_op_by_op():
    k = random.PRNGKey(1)
    before = _random_eager._jitted.cache_info()
    np.asarray(random.normal(k, (10,)))  # below MIN_SIZE
    out = fjax.vmap(lambda kk: random.normal(kk, (3,)))(random.split(k, 4))  # traced keys
    assert out.shape == (4, 3)
    after = _random_eager._jitted.cache_info()
    assert after.hits == before.hits and after.misses == before.misses


def test_typed_key_and_errors_pass_through(small_threshold):
    k = random.key(3)
    got = np.asarray(random.normal(k, (40, 50)))
    np.testing.assert_array_equal(got, _op_by_op(lambda: random.normal(k, (40, 50))))
    with pytest.raises(ValueError, match="must be a float"):
        random.uniform(k, (2000,), dtype=np.int32)


def _casts(f, i, u):
    return (
        fjax.lax.bitcast_convert_type(f, np.int32),
        fjax.lax.bitcast_convert_type(f, np.uint32),
        fjax.lax.bitcast_convert_type(i, np.float32),
        fjax.lax.bitcast_convert_type(u, np.int32),
        random._fma(f, f, fjax.numpy.full_like(f, -1.0)),
    )


def _casts64(d):
    return fjax.lax.bitcast_convert_type(d, np.uint64), fjax.lax.bitcast_convert_type(d, np.int64), random._fma(d, d, d)


def _same_bits(fn, *args):
    ir = fjax.jit(fn).lower(*args).as_text(dialect="ir")
    assert "host" not in ir and "random_fma(" in ir and "random_bitcast[" in ir, ir
    got = [np.asarray(v) for v in fjax.jit(fn)(*args)]
    with fjax.disable_jit():
        want = [np.asarray(v) for v in fn(*args)]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))  # bit for bit, NaN too


def test_bitcast_and_fma_compile_inline():
    f = np.array([0.0, -0.0, 1.5, -3.25e-39, np.inf, np.nan, 3.4e38, 1.1], np.float32)
    i = np.array([0, -1, 1, 2**31 - 1, -(2**31), 123456789, 7, 8], np.int32)
    _same_bits(_casts, f, i, i.view(np.uint32))
    with fjax.enable_x64():
        _same_bits(_casts64, np.array([0.0, -0.0, 1.1, -1e-310, np.inf, np.nan, 1e300], np.float64))
