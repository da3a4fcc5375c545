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


# ---- "auto" (the default outside this suite): which programs tier --------------------------------

from fjax.backends import tiering  # noqa: E402


@pytest.fixture
def auto(tmp_path, monkeypatch):
    old = fjax.config.fjax_tiered_compile
    monkeypatch.setattr(fjax.config, "fjax_cache_dir", str(tmp_path))
    fjax.config.update("fjax_tiered_compile", "auto")
    yield tmp_path
    dispatch.wait_compiled(60)
    fjax.config.update("fjax_tiered_compile", old)


@pytest.mark.parametrize(
    "value, want",
    [("auto", "auto"), (" AUTO ", "auto"), (True, "on"), ("1", "on"), ("on", "on"), (False, "off"), ("0", "off")],
)
def test_mode_values(value, want):
    assert tiering.mode(value) == want


def _jaxpr(f, *args):
    return fjax.make_jaxpr(f)(*args).jaxpr


def test_cost_model_orders_programs():
    x = np.ones(1000, np.float32)
    small = tiering.eager_seconds(_jaxpr(lambda x: jnp.tanh(x) * 2.0 + 1.0, x))
    assert 0 < small < 1e-3
    # a scan costs its length times its body
    body = lambda c, a: (jnp.tanh(c + a), c)  # noqa: E731
    s10 = tiering.eager_seconds(_jaxpr(lambda x: lax.scan(body, 0.0, x[:10])[0], x))
    s1000 = tiering.eager_seconds(_jaxpr(lambda x: lax.scan(body, 0.0, x)[0], x))
    assert 50 < s1000 / s10 < 150
    # a while loop's trip count is unknown: never worth interpreting
    w = _jaxpr(lambda x: lax.while_loop(lambda c: c[0] < 3.0, lambda c: c + 1.0, x), x)
    assert tiering.eager_seconds(w) == float("inf")
    # dots and convolutions by their multiply-adds
    a = np.ones((512, 512), np.float32)
    assert tiering.eager_seconds(_jaxpr(lambda a: a @ a, a)) > 10 * tiering.eager_seconds(_jaxpr(lambda a: a + a, a))
    dn = ("NHWC", "HWIO", "NHWC")
    conv = _jaxpr(
        lambda x, k: lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=dn),
        np.ones((128, 28, 28, 8), np.float32),
        np.ones((3, 3, 8, 16), np.float32),
    )
    assert tiering.eager_seconds(conv) > tiering.EAGER_BUDGET_S


def test_auto_tiers_a_cheap_new_program_then_compiles_it_synchronously_next_process(auto):
    x = np.linspace(-1, 1, 300).astype(np.float32)

    def f(x):
        return jnp.exp(-x * x) * jnp.cos(x) + 0.5

    g = fjax.jit(f)
    e0 = dispatch._tier_stats["eager_calls"]
    np.testing.assert_allclose(np.asarray(g(x)), np.exp(-x * x) * np.cos(x) + 0.5, rtol=1e-5)
    assert dispatch._tier_stats["eager_calls"] == e0 + 1  # cheap and new: evaluated while it compiles
    assert dispatch.wait_compiled(120)
    closed = g.trace(x).jaxpr
    assert tiering.compiled_before(closed, "numba")  # the marker a later process looks for
    assert any((auto / "programs").iterdir())
    # a new process tracing the same program finds the marker and compiles (loads) at once:
    # the same function jitted anew stands in for it (a new jaxpr object, the same program)
    fjax.clear_caches()
    h = fjax.jit(f)
    e1 = dispatch._tier_stats["eager_calls"]
    np.testing.assert_allclose(np.asarray(h(x)), np.exp(-x * x) * np.cos(x) + 0.5, rtol=1e-5)
    assert dispatch._tier_stats["eager_calls"] == e1
    assert h.trace(x).jaxpr.compiled["numba"][1] is not None


def test_auto_compiles_costly_programs_first(auto):
    a = np.ones((1500, 1500), np.float32)
    f = fjax.jit(lambda a: a @ a @ a)  # ~7e9 multiply-adds: costlier to interpret than to compile
    e0 = dispatch._tier_stats["eager_calls"]
    f(a)
    assert dispatch._tier_stats["eager_calls"] == e0
    assert f.trace(a).jaxpr.compiled["numba"][1] is not None


def test_auto_tiers_while_loops_with_a_deadline(auto):
    x = np.zeros(4, np.float32)
    f = fjax.jit(lambda x: lax.while_loop(lambda c: c[0] < 10.0, lambda c: c + 1.0, x))
    e0, t0 = dispatch._tier_stats["eager_calls"], dispatch._tier_stats["eager_timeouts"]
    np.testing.assert_allclose(np.asarray(f(x)), np.full(4, 10.0))
    # a short loop: evaluated eagerly within the deadline while it compiles
    assert dispatch._tier_stats["eager_calls"] == e0 + 1 and dispatch._tier_stats["eager_timeouts"] == t0
    assert dispatch.wait_compiled(120)
    np.testing.assert_allclose(np.asarray(f(x)), np.full(4, 10.0))


def test_auto_stops_a_long_eager_while_loop_at_the_deadline(auto, monkeypatch):
    monkeypatch.setattr(tiering, "WHILE_BUDGET_S", 0.05)
    n = np.int32(10**7)  # far more iterations than the deadline allows eagerly
    f = fjax.jit(lambda n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] + 0.5), (0, 0.0)))
    t0 = dispatch._tier_stats["eager_timeouts"]
    i, s = f(n)
    assert int(i) == 10**7 and float(s) == 5e6
    assert dispatch._tier_stats["eager_timeouts"] == t0 + 1  # gave up eagerly, ran the compiled program


def test_auto_compiles_while_loops_with_callbacks_first(auto):
    seen = []

    def f(x):
        def body(c):
            fjax.debug.callback(seen.append, c)
            return c + 1

        return lax.while_loop(lambda c: c < 3, body, x)

    e0 = dispatch._tier_stats["eager_calls"]
    assert int(fjax.jit(f)(0)) == 3
    assert dispatch._tier_stats["eager_calls"] == e0  # a stopped evaluation would repeat the effects
    assert [int(v) for v in seen] == [0, 1, 2]


def test_auto_with_an_unwritable_cache_still_tiers_and_computes(auto, monkeypatch):
    target = auto / "programs"
    target.write_text("not a directory")  # markers cannot be written under it
    x = np.arange(6, dtype=np.float32)
    f = fjax.jit(lambda x: x * 2.0 - 1.0)
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(f(x)), x * 2 - 1)
        assert dispatch.wait_compiled(60)
    assert not tiering.compiled_before(f.trace(x).jaxpr, "numba")


_CHILD = """
import sys, json
import numpy as np
import fjax, fjax.numpy as jnp
from fjax.backends import dispatch
x = np.linspace(-3, 3, 999).astype(np.float32)
f = fjax.jit(lambda x: jnp.tanh(x) * jnp.exp(-x * x) + jnp.sin(x) * 0.5)
first = np.asarray(f(x))
assert dispatch.wait_compiled(300)
second = np.asarray(f(x))
print("RESULT " + json.dumps(dict(eager=dispatch._tier_stats["eager_calls"], first=first.tobytes().hex(),
                                  second=second.tobytes().hex())))
"""


def test_default_in_new_processes(tmp_path):
    """fjax's default (the suite turns it off): a new program's first call in a fresh process is
    evaluated eagerly; once compiled, a later process loads it and every call gives its bits."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, FJAX_CACHE_DIR=str(tmp_path))
    env.pop("FJAX_TIERED_COMPILE")

    def child():
        p = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        return json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")][0][7:])

    cold, warm = child(), child()
    assert cold["eager"] == 1 and warm["eager"] == 0
    assert warm["first"] == warm["second"] == cold["second"]  # the compiled program's bits


def test_auto_first_call_eager_without_the_compiler_then_eager_scan_bodies_compile(auto):
    x = np.linspace(0, 1, 64).astype(np.float32)
    f = fjax.jit(lambda x: jnp.cos(x) * 3.0 - x)
    q0 = dispatch._tier_stats["queued"]
    first = f(x)
    assert dispatch._tier_stats["queued"] == q0 + 1  # queued once the eager first call returned
    np.testing.assert_allclose(np.asarray(first), np.cos(x) * 3 - x, rtol=1e-6)
    # an eager scan (outside jit) runs its body once per step: the body compiles, it is never tiered
    e0 = dispatch._tier_stats["eager_calls"]
    c, ys = lax.scan(lambda c, a: (c * 0.5 + a, c), np.float32(0), x)
    assert dispatch._tier_stats["eager_calls"] == e0
    assert ys.shape == (64,)


def test_auto_scan_inside_an_eager_first_call_is_not_compiled_separately(auto, monkeypatch):
    import threading

    here = []
    real = dispatch._compile_locked

    def spy(closed, backend):
        if threading.current_thread() is threading.main_thread():
            here.append(closed)
        return real(closed, backend)

    monkeypatch.setattr(dispatch, "_compile_locked", spy)
    xs = np.linspace(0, 1, 50, dtype=np.float32).reshape(10, 5)
    f = fjax.jit(lambda xs: lax.scan(lambda c, x: (jnp.tanh(c + x), c.sum()), jnp.zeros(5), xs))
    f(xs)  # evaluated eagerly: its scan body runs in numpy too, nothing compiles in this thread
    assert here == []


def test_auto_threads_racing_for_a_new_program(auto):
    import threading

    x = np.linspace(-2, 2, 257).astype(np.float32)
    f = fjax.jit(lambda x: jnp.sinh(x) * 0.25 + jnp.abs(x))
    want = np.sinh(x) * 0.25 + np.abs(x)
    e0 = dispatch._tier_stats["eager_calls"]
    out, errors = [None] * 6, []
    barrier = threading.Barrier(6)

    def worker(i):
        try:
            barrier.wait()
            out[i] = np.asarray(f(x))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not errors
    for o in out:
        np.testing.assert_allclose(o, want, rtol=1e-5, atol=1e-6)
    assert dispatch._tier_stats["eager_calls"] - e0 == 1  # one eager call; the others waited for the compile


def test_a_transient_background_failure_is_retried(tiered, monkeypatch, caplog):
    """An exception outside the compile itself (the backend's import racing another thread's
    import of numba, seen once) counts as one failed attempt: a later call queues the compile
    again and the program ends up compiled, not eager for good."""
    real = dispatch.get_backend
    fails = []

    def flaky(name):
        if not fails:
            fails.append(name)
            raise ImportError("cannot import name 'njit' from partially initialized module 'numba'")
        return real(name)

    monkeypatch.setattr(dispatch, "get_backend", flaky)
    f = fjax.jit(lambda x: jnp.cos(x) * 2.0 - 0.5)
    x = np.arange(7, dtype=np.float32)
    for _ in range(4):
        np.testing.assert_allclose(np.asarray(f(x)), np.cos(x) * 2.0 - 0.5, rtol=1e-6)
        assert dispatch.wait_compiled(120)
    assert fails
    entry = f.trace(x).jaxpr.compiled["numba"]
    assert entry[1] is not None and entry[2] == 0, entry  # compiled on the retry
    assert "attempt 1 of" in caplog.text


def test_a_first_call_never_made_does_not_hang_later_calls(tiered):
    """compile_jaxpr hands the first caller an eager first call and makes later callers wait for
    the compile that call queues when it returns. A first call dropped without being made (its
    caller failed, or only wanted the compiled program) used to leave every later call and
    wait_compiled waiting for good (seen in bench_mlp's compile probe); now a waiter queues it."""
    import threading  # noqa: PLC0415

    closed = fjax.make_jaxpr(lambda x: jnp.sinh(x) * 3.0 + 0.25)(np.arange(5, dtype=np.float32))
    first = dispatch.compile_jaxpr(closed, "numba", tiered=True)
    assert isinstance(first, dispatch._FirstCall)
    del first  # never called
    got: list = []
    t = threading.Thread(target=lambda: got.append(dispatch.compile_jaxpr(closed, "numba", tiered=True)), daemon=True)
    t.start()
    t.join(120)
    assert not t.is_alive(), "a later compile_jaxpr waited for good for a first call nobody made"
    x = np.arange(5, dtype=np.float32)
    (out,) = got[0](x)
    np.testing.assert_allclose(out, np.sinh(x) * 3.0 + 0.25, rtol=1e-6)
    assert dispatch.wait_compiled(60)


def test_wait_compiled_queues_a_first_call_never_made(tiered):
    closed = fjax.make_jaxpr(lambda x: jnp.cosh(x) - 1.5)(np.arange(6, dtype=np.float32))
    first = dispatch.compile_jaxpr(closed, "numba", tiered=True)
    assert isinstance(first, dispatch._FirstCall)
    assert dispatch.wait_compiled(120)
    assert closed.compiled["numba"][1] is not None
