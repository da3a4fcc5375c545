"""jit's per-call fast path (fjax/_jit_fast.py, ``JitWrapped.__call__``) keeps every behaviour of the
general path: each test calls a jitted function at least twice (the first call traces and fills the
fast keys, later ones hit them) and checks what the second call gives against numpy or against what
the first call gave: weak types, dtype canonicalization, x64 per thread, placement, tracer inputs,
JAX's errors, donation, static/keyword arguments, pytrees, invalidation of the settled callable
(clear_cache, backend switch, debug_nans, no_execution, tiered compiles) and threads."""

import threading
import types

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import config
from fjax.backends import dispatch


@pytest.fixture(autouse=True, scope="module")
def _on_the_host():
    """These tests check the host's dispatch (a GPU's goes through the placement hook:
    tests/test_devices_gpu.py): the CPU as the only platform, on a machine with a GPU too."""
    old = config.jax_platforms
    config.update("jax_platforms", "cpu")
    yield
    config.update("jax_platforms", old)


_add1 = fjax.jit(lambda v: v + 1)
_mul = fjax.jit(lambda v, s: v * s)
_tree = fjax.jit(lambda p, b: {k: w * b for k, w in p.items()})


def _fast_entries(f):
    return list(f._fast.values())


def test_second_call_hits_the_fast_keys_and_traces_once():
    traced = []

    def f(x):
        traced.append(1)
        return x * 2

    jf = fjax.jit(f)
    x = jnp.arange(4.0)
    for _ in range(3):
        np.testing.assert_array_equal(jf(x), np.arange(4.0) * 2)
    assert len(traced) == 1 and len(jf._fast) == 1
    # the callable of the settled program is kept (compiled: not the eager evaluator)
    fe = _fast_entries(jf)[0]
    assert fe.run is not None and not hasattr(fe.run, "func")


def test_weak_types_and_python_scalars():
    # dtypes and weak types as JAX 0.10.2 gives them (checked with jax.jit on the same calls)
    x = jnp.arange(3, dtype=jnp.float32)
    for _ in range(2):
        y = _mul(x, 2.0)  # weak float scalar: the array's dtype wins
        assert y.dtype == np.float32 and not y.weak_type
        z = _mul(2.0, 3)  # weak float times weak int: a weak float32
        assert z.dtype == np.float32 and z.weak_type and float(z) == 6.0
        b = _add1(True)  # bool (not weak) + weak int: a weak int32
        assert b.dtype == np.int32 and b.weak_type and int(b) == 2
        c = _mul(1 + 2j, 2.0)
        assert c.dtype == np.complex64 and c.weak_type and complex(c) == 2 + 4j


def test_python_int_overflow_raises_on_every_call():
    for _ in range(2):
        with pytest.raises(OverflowError):
            _add1(2**40)
    assert int(_add1(2**31 - 2)) == 2**31 - 1


def test_numpy_inputs_canonicalized_and_never_frozen():
    a = np.arange(4, dtype=np.float64)
    for _ in range(2):
        y = _add1(a)
        assert y.dtype == np.float32 and not y.weak_type
        assert a.flags.writeable  # the caller's array stays writable
        np.testing.assert_array_equal(y, a + 1)
        assert not np.asarray(y).flags.writeable  # outputs are immutable
    a[0] = 10.0  # a change the next call sees
    assert float(_add1(a)[0]) == 11.0


def test_x64_per_thread_and_flag_changes():
    out = {}

    def run(name, x64):
        with config.override("jax_enable_x64", x64):
            for _ in range(50):
                r = _mul(1.5, 2.0)
                out.setdefault(name, set()).add(r.dtype)

    ts = [threading.Thread(target=run, args=(f"t{i}", i % 2 == 0)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert out == {"t0": {np.dtype("float64")}, "t1": {np.dtype("float32")}, "t2": {np.dtype("float64")},
                   "t3": {np.dtype("float32")}}  # fmt: skip
    old = config.jax_enable_x64
    try:
        config.update("jax_enable_x64", True)
        assert _add1(1.0).dtype == np.float64 and _add1(1).dtype == np.int64
        assert _add1(np.float64(1.0)).dtype == np.float64
    finally:
        config.update("jax_enable_x64", old)
    assert _add1(1.0).dtype == np.float32 and _add1(np.float64(1.0)).dtype == np.float32


def test_threads_share_the_cache_correctly():
    """Threads calling one function with different signatures at once each get their own results
    (a shared signature cache must never hand one thread another's program)."""
    f = fjax.jit(lambda v: v * 2 + 1)
    errors = []
    inputs = [jnp.arange(n, dtype=dt) for n in (1, 2, 3) for dt in (jnp.float32, jnp.int32)]

    def work(i):
        x = inputs[i % len(inputs)]
        expect = np.asarray(x) * 2 + 1
        for _ in range(200):
            y = f(x)
            if y.shape != expect.shape or y.dtype != expect.dtype or not np.array_equal(y, expect):
                errors.append((i, y))

    ts = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def test_tracer_inputs_after_eager_calls():
    f = fjax.jit(lambda v: jnp.sin(v) * v)
    x = jnp.linspace(0.0, 1.0, 5)
    f(x)
    f(x)  # fast keys filled
    g = fjax.grad(lambda v: f(v).sum())(x)
    np.testing.assert_allclose(g, np.cos(x) * x + np.sin(x), rtol=2e-6)
    vm = fjax.vmap(f)(jnp.stack([x, 2 * x]))
    np.testing.assert_allclose(vm, np.stack([np.sin(x) * x, np.sin(2 * x) * 2 * x]), rtol=1e-6)
    # jit inside jit: the inner call sees tracers and binds
    np.testing.assert_allclose(fjax.jit(lambda v: f(v) + 1)(x), np.sin(x) * x + 1, rtol=1e-6)


def test_errors_as_jax():
    for _ in range(2):
        with pytest.raises(TypeError, match="is not a valid JAX type"):
            _add1("a")
    s = fjax.jit(lambda v, n: v * len(n), static_argnums=1)
    assert float(s(2.0, (1, 2))) == 4.0
    for _ in range(2):
        with pytest.raises(ValueError, match="Non-hashable static arguments"):
            s(2.0, [1, 2])


def test_donation_deletes_and_reuse_raises():
    d = fjax.jit(lambda v: v + 1, donate_argnums=0)
    x = jnp.zeros(3) + 0
    for i in range(3):
        y = d(x)
        assert x.is_deleted() and not y.is_deleted()
        with pytest.raises(RuntimeError, match="deleted"):
            np.asarray(x)
        with pytest.raises(RuntimeError, match="deleted"):
            d(x)
        np.testing.assert_array_equal(y, np.full(3, i + 1.0))
        x = y
    assert x.shape == (3,) and x.dtype == np.float32
    with pytest.warns(UserWarning, match="Some donated buffers were not usable") as rec:
        fjax.jit(lambda v: v.sum(), donate_argnums=0)(jnp.ones(4) + 0)
    assert rec[0].filename == __file__  # the warning names the caller's line, as JAX's


def test_static_and_keyword_arguments():
    traced = []

    def f(x, n, *, scale=1.0, mode="add"):
        traced.append(mode)
        return x * n * scale + (1 if mode == "add" else -1)

    jf = fjax.jit(f, static_argnums=1, static_argnames="mode")
    x = jnp.arange(3.0)
    for _ in range(2):
        np.testing.assert_allclose(jf(x, 2, scale=3.0, mode="sub"), np.arange(3.0) * 6 - 1)
        np.testing.assert_allclose(jf(x, 2, mode="sub", scale=3.0), np.arange(3.0) * 6 - 1)  # other order
        np.testing.assert_allclose(jf(x, 3, scale=jnp.float32(2.0)), np.arange(3.0) * 6 + 1)
        # n by keyword is dynamic (static_argnames given too: JAX infers nothing from the signature)
        np.testing.assert_allclose(jf(x=x, n=1), np.arange(3.0) + 1)
    assert traced == ["sub", "add", "add"]  # the two keyword orders share one trace
    # static_argnums counted from the end
    g = fjax.jit(lambda a, b, c: a * b + c, static_argnums=-2)
    for _ in range(2):
        assert float(g(1.0, 2, 3.0)) == 5.0 and float(g(1.0, 4, 3.0)) == 7.0


def test_keyword_values_in_sorted_name_order():
    f = fjax.jit(lambda **kw: kw["b"] - kw["a"] * 10 + kw["c"] * 100)
    a, b, c = jnp.float32(1.0), jnp.float32(2.0), jnp.float32(3.0)
    for _ in range(2):
        assert float(f(a=a, b=b, c=c)) == 292.0
        assert float(f(c=c, a=a, b=b)) == 292.0
        assert float(f(b=a, a=b, c=c)) == 281.0


def test_pytree_arguments_and_structures():
    p = {"w": jnp.ones(2), "b": jnp.arange(2.0)}
    for _ in range(2):
        out = _tree(p, jnp.float32(3.0))
        assert isinstance(out, dict) and sorted(out) == ["b", "w"]
        np.testing.assert_array_equal(out["b"], [0.0, 3.0])
    f = fjax.jit(lambda t: t[0] + 2 * t[1] if isinstance(t, tuple) else t[0] - t[1])
    one, two = jnp.float32(1.0), jnp.float32(2.0)
    for _ in range(2):
        assert float(f((one, two))) == 5.0 and float(f([one, two])) == -1.0
    h = fjax.jit(lambda d, n, s: d["a"] * s if n is None else d["a"])
    for _ in range(2):
        assert float(h({"a": two}, None, 2)) == 4.0 and float(h({"a": two}, one, 2)) == 2.0
    # a namedtuple (a node the one-pass flattener leaves to tree_util) and nesting
    from collections import namedtuple

    P = namedtuple("P", "x y")
    k = fjax.jit(lambda q, r: q.x * r["u"][0] + q.y * r["u"][1])
    for _ in range(2):
        assert float(k(P(one, two), {"u": [two, 3.0]})) == 8.0


@given(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=4, unique=True), st.booleans())
def test_dict_keys_and_list_or_tuple(keys, as_list):
    f = fjax.jit(lambda d, seq: sum(v * (i + 1) for i, (k, v) in enumerate(sorted(d.items()))) + seq[0])
    d = {k: jnp.float32(ord(k)) for k in keys}
    seq = [jnp.float32(0.5)] if as_list else (jnp.float32(0.5),)
    expect = sum(ord(k) * (i + 1) for i, k in enumerate(sorted(keys))) + 0.5
    for _ in range(2):
        assert float(f(d, seq)) == expect


def test_jitted_method_binds_as_a_method():
    class M:
        def __init__(self, k):
            self.k = k

        def __hash__(self):
            return hash(self.k)

        def __eq__(self, other):
            return isinstance(other, M) and other.k == self.k

        @fjax.jit
        def apply_dyn(self, x):  # self is not an array: JAX's TypeError
            return x

    class N(M):
        from functools import partial

        @partial(fjax.jit, static_argnums=0)
        def apply(self, x):
            return x * self.k

    n2, n3 = N(2.0), N(3.0)
    assert isinstance(n2.apply, types.MethodType)
    for _ in range(2):
        assert float(n2.apply(jnp.float32(1.0))) == 2.0 and float(n3.apply(jnp.float32(1.0))) == 3.0
    with pytest.raises(TypeError, match="is not a valid JAX type"):
        n2.apply_dyn(1.0)


def test_constants_closed_over():
    c = jnp.arange(3.0) * 10
    f = fjax.jit(lambda v: v + c)
    for _ in range(2):
        np.testing.assert_array_equal(f(jnp.ones(3)), np.arange(3.0) * 10 + 1)


def test_settled_callable_follows_cache_clears_and_backend_switches():
    f = fjax.jit(lambda v: v * 3)
    x = jnp.arange(3.0)
    f(x)
    f(x)
    before = dispatch._stats["compiles"]
    dispatch.clear_cache()  # a new generation: compiled again on the next call, not the stale callable
    np.testing.assert_array_equal(f(x), np.arange(3.0) * 3)
    assert dispatch._stats["compiles"] == before + 1
    old = config.fjax_jit_backend
    try:
        config.update("fjax_jit_backend", "interpret")
        np.testing.assert_array_equal(f(x), np.arange(3.0) * 3)
        fe = _fast_entries(f)[0]
        assert fe.run is not None and fe.run.func.__name__ == "_eval_flat"  # the jaxpr evaluated eagerly
    finally:
        config.update("fjax_jit_backend", old)
    np.testing.assert_array_equal(f(x), np.arange(3.0) * 3)
    assert not hasattr(_fast_entries(f)[0].run, "func")  # compiled again


def test_settled_callable_follows_the_lowering_expansion():
    """A lowering rule registered later (``mlir`` bumps its generation) makes jit settle again on
    the program of the new expansion, never the stale callable."""
    from fjax.interpreters import mlir

    f = fjax.jit(lambda v: v - 1)
    x = jnp.arange(3.0)
    f(x)
    f(x)
    fe = _fast_entries(f)[0]
    old_for = fe.run_for
    mlir._generation[0] += 1
    try:
        np.testing.assert_array_equal(f(x), np.arange(3.0) - 1)
        assert fe.run_for != old_for and fe.run_for[3] == mlir._generation[0]
    finally:
        mlir._generation[0] -= 1


def test_settles_beside_the_cpu_precision_check():
    """Once a refused dot precision was traced (the CPU check installed for every program), other
    programs still settle, and the refused one raises JAX's error on every call."""
    from fjax import lax

    a = jnp.ones((2, 2))
    bad = fjax.jit(lambda u, v: lax.dot(u, v, precision="TF32_TF32_F32"))
    for _ in range(2):
        with pytest.raises(ValueError, match="is not supported by dot_general on CPU"):
            bad(a, a)
    jit_mod = __import__("importlib").import_module("fjax.jit")
    assert jit_mod.cpu_precision_check is not None
    good = fjax.jit(lambda u, v: lax.dot(u, v) + 1)
    for _ in range(2):
        np.testing.assert_array_equal(good(a, a), np.full((2, 2), 3.0))
    assert _fast_entries(good)[0].run is not None
    with pytest.raises(ValueError, match="is not supported by dot_general on CPU"):
        bad(a, a)


def test_disable_jit_debug_nans_and_no_execution_after_settling():
    seen = []

    def g(v):
        seen.append(type(v).__name__)
        return jnp.log(v)

    f = fjax.jit(g)
    x = jnp.ones(2)
    f(x)
    f(x)
    with fjax.disable_jit():
        f(x)
    assert seen[-1] == "Array" and len(seen) == 2  # traced once, then run as Python
    with config.override("jax_debug_nans", True):
        with pytest.raises(FloatingPointError):
            f(-x)
            f(-x)
    assert np.isnan(np.asarray(f(-x))).all()
    with config.override("jax_no_execution", True):
        with pytest.raises(RuntimeError, match="no_execution"):
            f(x)
    np.testing.assert_array_equal(f(x), [0.0, 0.0])


def test_tiered_first_call_then_the_compiled_program():
    f = fjax.jit(lambda v: v * 5 + 2)
    x = jnp.arange(4.0)
    old = config.fjax_tiered_compile
    try:
        config.update("fjax_tiered_compile", True)
        r1 = f(x)  # evaluated eagerly while a background thread compiles
        fe = _fast_entries(f)
        assert not fe or not hasattr(fe[0].run, "func")  # never settled on the eager evaluation
        assert dispatch.wait_compiled(60)
        for _ in range(3):
            np.testing.assert_array_equal(f(x), np.asarray(r1))
        fe = _fast_entries(f)[0]
        assert fe.run is not None and not hasattr(fe.run, "func")
    finally:
        config.update("fjax_tiered_compile", old)


def test_committed_inputs_run_on_their_device():
    cpu = fjax.devices("cpu")[0]
    y = fjax.device_put(jnp.arange(3.0), cpu)
    for _ in range(2):
        out = _add1(y)
        assert out.committed and out.devices() == {cpu}
        np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])
    assert not _add1(jnp.arange(3.0)).committed
