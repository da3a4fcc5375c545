"""Tracing, transforms and compilation from many threads at once (trace state is per thread).

The switch interval is lowered so the interpreter switches threads every few bytecodes, forcing
the interleavings that a shared trace stack used to corrupt (tracers returned to callers,
``UnexpectedTracerError``)."""

import sys
import threading

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import config, core


def _chain(x, k):
    # a few hundred equations, differing per thread through ``k``
    for i in range(60):
        x = jnp.sin(x) * (0.9 + 0.001 * k) + jnp.cos(x * 0.5) - 0.01 * i
    return jnp.sum(x * x)


def _work(k, n):
    x = jnp.linspace(-1.0, 1.0, n, dtype=jnp.float32) + 0.01 * k
    f = lambda x: _chain(x, k)  # noqa: E731
    out = {
        "jaxpr": str(fjax.make_jaxpr(f)(x)),
        "jit": fjax.jit(f)(x),
        "grad": fjax.grad(f)(x),
        "jit_grad": fjax.jit(fjax.grad(f))(x),
        "vmap": fjax.vmap(f)(jnp.stack([x, x * 0.5])),
        "jvp": fjax.jvp(f, (x,), (jnp.ones_like(x),))[1],
    }
    return out


def _run_threads(fn, args_list):
    results, errors = [None] * len(args_list), []
    barrier = threading.Barrier(len(args_list))

    def target(i):
        try:
            barrier.wait()
            results[i] = fn(*args_list[i])
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append((i, e))

    threads = [threading.Thread(target=target, args=(i,)) for i in range(len(args_list))]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    return results, errors


def _assert_same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        if k == "jaxpr":
            assert a[k] == b[k]
            continue
        assert type(b[k]) is core.Array, f"{k}: got {type(b[k]).__name__}, a traced value escaped its thread"
        np.testing.assert_allclose(np.asarray(b[k]), np.asarray(a[k]), rtol=1e-6, atol=1e-6, err_msg=k)


@pytest.fixture
def interpret():
    old = config.fjax_jit_backend
    config.update("fjax_jit_backend", "interpret")
    yield
    config.update("fjax_jit_backend", old)


def test_threads_trace_transform_independently(interpret):
    # tracing is what races here: jit evaluates its jaxprs (compiles are covered below)
    # 4 threads x 2 rounds, each with its own function and shapes; every result equals the
    # single-threaded one and no Tracer reaches a caller
    args = [(k, 5 + k + 7 * r) for r in range(2) for k in range(4)]
    expected = [_work(*a) for a in args]
    results, errors = _run_threads(_work, args)
    assert not errors, errors
    for e, r in zip(expected, results):
        _assert_same(e, r)
    assert core._state.stack == [core._eval_main]
    assert core.dynamic_main() is core._eval_main


def test_thread_sees_only_its_own_traces():
    # a thread tracing inside make_jaxpr must not stage primitives bound eagerly by another thread
    inside, release = threading.Event(), threading.Event()
    seen = {}

    def tracer_thread():
        def f(x):
            inside.set()
            release.wait(10)
            return x + 1.0

        seen["jaxpr"] = str(fjax.make_jaxpr(f)(1.0))

    t = threading.Thread(target=tracer_thread)
    t.start()
    assert inside.wait(10)
    try:
        y = jnp.sin(jnp.float32(0.5))  # eager in this thread while the other one stages
        assert type(y) is core.Array
        assert core.is_eager()
    finally:
        release.set()
        t.join()
    assert "sin" not in seen["jaxpr"]


def test_cold_jit_called_from_many_threads_compiles_once():
    # one cold jitted function hit by 4 threads at once: one trace, one compile, compiled results
    from fjax.backends import dispatch as lowering

    calls = []

    def f(x):
        calls.append(1)
        return jnp.tanh(x) * 2.0 + jnp.exp(-x * x)

    jf = fjax.jit(f)
    x = jnp.arange(37.0, dtype=jnp.float32) / 37
    before = lowering._stats["compiles"]
    results, errors = _run_threads(lambda: jf(x), [()] * 4)
    assert not errors, errors
    want = np.tanh(np.asarray(x)) * 2.0 + np.exp(-(np.asarray(x) ** 2))
    for r in results:
        np.testing.assert_allclose(np.asarray(r), want, rtol=1e-6)
    assert len(calls) == 1
    assert lowering._stats["compiles"] - before == 1
    fn = lowering.compile_jaxpr(jf.lower(x).jaxpr)
    assert fn is not None and hasattr(fn, "__fjax_source__")  # compiled, not the eager fallback
