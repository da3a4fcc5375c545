"""Tiered compilation (``fjax_tiered_compile``): a program jit has not compiled yet is evaluated
primitive by primitive while one background thread compiles it; later calls run the compiled code."""

from __future__ import annotations

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.backends import dispatch


@pytest.fixture
def tiered():
    old = fjax.config.fjax_tiered_compile
    fjax.config.update("fjax_tiered_compile", True)
    yield
    dispatch.wait_compiled(60)
    fjax.config.update("fjax_tiered_compile", old)


def test_first_call_eager_then_compiled(tiered):
    x = np.linspace(-2, 2, 1000).astype(np.float32)

    @fjax.jit
    def f(x):
        return jnp.tanh(x) * jnp.exp(-x * x) + jnp.sin(x) * 0.5

    want = np.tanh(x) * np.exp(-x * x) + np.sin(x) * 0.5
    eager0 = dispatch._tier_stats["eager_calls"]
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-5, atol=1e-6)
    assert dispatch._tier_stats["eager_calls"] == eager0 + 1  # the first call did not wait for numba
    assert dispatch.wait_compiled(120)
    closed = f.trace(x).jaxpr
    entry = closed.compiled["numba"]
    assert entry[1] is not None and entry[2] == 0  # compiled, no failed attempt
    n = dispatch._tier_stats["eager_calls"]
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-5, atol=1e-6)
    assert dispatch._tier_stats["eager_calls"] == n  # now the compiled program ran


def test_nested_programs_queue_one_compile(tiered):
    def step(h, x):
        h = jnp.tanh(h * 0.5 + x)
        return h, h.sum()

    @fjax.jit
    def g(h0, xs):
        inner = fjax.jit(lambda v: v * 2.0)
        h, ys = lax.scan(step, h0, xs)
        return inner(h), ys

    h0, xs = np.zeros(4, np.float32), np.linspace(0, 1, 20, dtype=np.float32).reshape(5, 4)
    q0 = dispatch._tier_stats["queued"]
    h, ys = g(h0, xs)
    assert dispatch._tier_stats["queued"] == q0 + 1  # the scan body and the inner jit ran eagerly
    assert dispatch.wait_compiled(120)
    h2, ys2 = g(h0, xs)
    np.testing.assert_allclose(np.asarray(h2), np.asarray(h), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ys2), np.asarray(ys), rtol=1e-6)


def test_failed_background_compile_is_retried_then_stays_eager(tiered, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("compile failed on purpose")

    monkeypatch.setattr(dispatch, "_compile", boom)
    monkeypatch.setattr(fjax.config, "fjax_lowering_strict", False)  # (the suite turns it on)
    f = fjax.jit(lambda x: x * 3.0 + 1.0)
    x = np.arange(5, dtype=np.float32)
    q0 = dispatch._tier_stats["queued"]
    for _ in range(6):
        np.testing.assert_allclose(np.asarray(f(x)), x * 3 + 1)
        assert dispatch.wait_compiled(60)
    assert dispatch._tier_stats["queued"] - q0 == dispatch._MAX_ATTEMPTS  # retried, then eager for good


def test_aot_compile_waits(tiered):
    f = fjax.jit(lambda x: jnp.cos(x) * 2.0)
    x = np.ones(3, np.float32)
    lowered = f.trace(x).lower()
    lowered.compile()  # AOT: compiled now, in this thread, not queued
    entry = f.trace(x).jaxpr.compiled["numba"]
    assert entry[1] is not None and entry[2] == 0
    np.testing.assert_allclose(np.asarray(f(x)), np.cos(x) * 2, rtol=1e-6)
