"""Configuration context managers are thread-local, as in JAX: ``with fjax.enable_x64(True):``
(``default_matmul_precision``, ``numpy_dtype_promotion``, ``default_device``, ``disable_jit``,
``debug_nans``, ``log_compiles``, ``explain_cache_misses``, ...) holds in the thread that entered it
only, while ``config.update`` sets the global value every thread without an override sees.

The behaviour checked here was recorded from JAX 0.10.2 (two threads, one inside the context):
the other thread keeps the global value (``jnp.array(1.0).dtype`` float32 beside a float64 in the
thread under ``enable_x64(True)``); ``config.update`` from another thread changes the global value
but not an override open elsewhere; ``config.update`` inside a block leaves the block's value in
force until it ends, then the updated global one shows; threads started inside a block see the
global value; one jitted function called in two threads under different x64 settings traces (and
caches) once per setting.

Each test runs the threads at the same time: barriers make sure one is inside its block while the
other reads.
"""

import contextlib
import threading
import time

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import config, core, dtypes


def run_together(*fns, timeout: float = 120.0) -> list:
    """Run ``fns`` each in its own thread, all started together; each gets a barrier for all the
    threads (``sync()`` waits for the others). Returns their results; re-raises a thread's error."""
    barrier = threading.Barrier(len(fns), timeout=timeout)
    results: list = [None] * len(fns)
    errors: list = []

    def sync() -> None:
        barrier.wait()

    def body(i: int, fn) -> None:
        try:
            results[i] = fn(sync)
        except BaseException as e:  # noqa: BLE001 - reported in the main thread
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=body, args=(i, fn)) for i, fn in enumerate(fns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a thread did not finish"
    if errors:
        raise errors[0]
    return results


def inside(cm_factory, read):
    """A thread body: read inside ``cm_factory()`` while the other threads read outside."""

    def fn(sync):
        with cm_factory():
            sync()  # everyone is in place: this thread inside, the others outside
            out = read()
            sync()  # nobody leaves before all have read
        return out

    return fn


def outside(read):
    def fn(sync):
        sync()
        out = read()
        sync()
        return out

    return fn


def _no_overrides_left() -> bool:
    # the descriptors installed while any override is open are gone again
    names = ("jax_enable_x64", "jax_default_matmul_precision", "jax_numpy_dtype_promotion", "jax_disable_jit")
    return not any(config.overridden(n) or n in type(config).__dict__ for n in names)


@pytest.fixture(autouse=True)
def _clean_state():
    x64 = config.global_value("jax_enable_x64")
    yield
    config.update("jax_enable_x64", x64)
    assert _no_overrides_left()


# ---- values read per thread --------------------------------------------------------------------


def test_enable_x64_is_thread_local():
    def read():
        return (jnp.array(1.0).dtype, jnp.arange(3).dtype, config.jax_enable_x64, config.read("jax_enable_x64"))

    a, b = run_together(inside(lambda: fjax.enable_x64(True), read), outside(read))
    assert a == (np.float64, np.int64, True, True)
    assert b == (np.float32, np.int32, False, False)
    assert jnp.array(1.0).dtype == np.float32


def test_enable_x64_value_attribute_per_thread():
    a, b = run_together(
        inside(lambda: fjax.enable_x64(True), lambda: fjax.enable_x64.value), outside(lambda: fjax.enable_x64.value)
    )
    assert (a, b) == (True, False)


def test_disable_x64_context_in_x64_process():
    # the reverse: x64 on globally, off in one thread's block
    config.update("jax_enable_x64", True)

    def read():
        return jnp.array(1.0).dtype

    a, b = run_together(inside(lambda: fjax.enable_x64(False), read), outside(read))
    assert (a, b) == (np.float32, np.float64)


def test_default_matmul_precision_in_jaxprs_per_thread():
    def read():
        return str(fjax.make_jaxpr(lambda x: x @ x)(jnp.ones((2, 2))))

    a, b = run_together(inside(lambda: fjax.default_matmul_precision("float32"), read), outside(read))
    assert "HIGHEST" in a
    assert "precision" not in b
    assert config.jax_default_matmul_precision is None


def _promote_or_error():
    try:
        return (jnp.ones(2, jnp.float32) + jnp.ones(2, jnp.int32)).dtype
    except dtypes.TypePromotionError:
        return "TypePromotionError"


def test_numpy_dtype_promotion_per_thread():
    def read_promote_types():
        try:
            return dtypes.promote_types(np.float32, np.int32)
        except dtypes.TypePromotionError:
            return "TypePromotionError"

    def read():
        return _promote_or_error(), read_promote_types(), config.jax_numpy_dtype_promotion

    a, b = run_together(inside(lambda: fjax.numpy_dtype_promotion("strict"), read), outside(read))
    assert a == ("TypePromotionError", "TypePromotionError", "strict")
    assert b == (np.float32, np.float32, "standard")
    assert not dtypes._STRICT  # the "strict somewhere" flag is down again


def test_global_strict_promotion_with_standard_block():
    config.update("jax_numpy_dtype_promotion", "strict")
    try:
        a, b = run_together(
            inside(lambda: fjax.numpy_dtype_promotion("standard"), _promote_or_error), outside(_promote_or_error)
        )
    finally:
        config.update("jax_numpy_dtype_promotion", "standard")
    assert (a, b) == (np.float32, "TypePromotionError")


def test_default_device_per_thread():
    d = fjax.devices()[0]

    def read():
        return config.jax_default_device, fjax.numpy.ones(2).devices() == {d}

    a, b = run_together(inside(lambda: fjax.default_device(d), read), outside(read))
    assert a == (d, True)
    assert b == (None, True)  # the one CPU device is the default anyway
    assert config.jax_default_device is None


def test_log_compiles_explain_cache_misses_debug_nans_per_thread():
    def read():
        return config.jax_log_compiles, config.jax_explain_cache_misses, config.jax_debug_nans

    def block():
        st = contextlib.ExitStack()
        st.enter_context(fjax.log_compiles(True))
        st.enter_context(fjax.explain_cache_misses(True))
        st.enter_context(fjax.debug_nans(True))
        return st

    a, b = run_together(inside(block, read), outside(read))
    assert a == (True, True, True)
    assert b == (False, False, False)


def test_debug_nans_raises_only_in_its_thread():
    def log_neg():
        try:
            return float(jnp.log(-1.0))
        except FloatingPointError:
            return "FloatingPointError"

    a, b = run_together(inside(lambda: fjax.debug_nans(True), log_neg), outside(log_neg))
    assert a == "FloatingPointError"
    assert np.isnan(b)


# ---- disable_jit and the jit cache -------------------------------------------------------------


def test_disable_jit_per_thread():
    @fjax.jit
    def probe(x):
        return x + 1.0, isinstance(x, core.Tracer)

    def read():
        return config.jax_disable_jit, probe(np.float32(1.0))[1]

    a, b = run_together(inside(fjax.disable_jit, read), outside(read))
    assert a == (True, False)  # run as plain Python: the argument is concrete
    assert b[0] is False and bool(b[1]) is True  # traced: the argument was a tracer


def test_jit_cache_keyed_per_thread_x64():
    traces = []

    @fjax.jit
    def f(x):
        traces.append(x.dtype)
        return x * 2 + jnp.arange(3)

    def call():
        out = f(1.5)
        return out.dtype, np.asarray(out).tolist()

    a, b = run_together(inside(lambda: fjax.enable_x64(True), call), outside(call))
    assert a == (np.float64, [3.0, 4.0, 5.0])
    assert b == (np.float32, [3.0, 4.0, 5.0])
    assert sorted(map(str, traces)) == ["float32", "float64"]
    # each thread's entry stays cached for its setting
    a, b = run_together(inside(lambda: fjax.enable_x64(True), call), outside(call))
    assert (a[0], b[0]) == (np.float64, np.float32)
    assert len(traces) == 2


def test_jit_cache_keyed_per_thread_promotion():
    @fjax.jit
    def add(x, y):
        return x + y

    x, y = jnp.ones(2, jnp.float32), jnp.ones(2, jnp.int32)
    assert add(x, y).dtype == np.float32  # cached under standard promotion first

    def call():
        try:
            return add(x, y).dtype
        except dtypes.TypePromotionError:
            return "TypePromotionError"

    a, b = run_together(inside(lambda: fjax.numpy_dtype_promotion("strict"), call), outside(call))
    assert (a, b) == ("TypePromotionError", np.float32)


def test_jit_cache_keyed_per_thread_matmul_precision():
    @fjax.jit
    def mm(x):
        return x @ x

    def read():
        mm(jnp.ones((2, 2)))  # fills mm's cache for this thread's setting
        return str(fjax.make_jaxpr(mm)(jnp.ones((2, 2))))

    a, b = run_together(inside(lambda: fjax.default_matmul_precision("highest"), read), outside(read))
    assert "HIGHEST" in a and "HIGHEST" not in b


# ---- nesting, exceptions, threads started inside blocks ----------------------------------------


def test_nesting_restores_per_thread():
    def nested(sync):
        seen = []
        with fjax.enable_x64(True):
            sync()
            seen.append(config.jax_enable_x64)
            with fjax.enable_x64(False):
                sync()
                seen.append(config.jax_enable_x64)
                sync()
            seen.append(config.jax_enable_x64)
            sync()
        seen.append(config.jax_enable_x64)
        return seen

    def other(sync):
        seen = []
        for _ in range(4):
            sync()
            seen.append(config.jax_enable_x64)
        return seen

    a, b = run_together(nested, other)
    assert a == [True, False, True, False]
    assert b == [False, False, False, False]


def test_exception_unwinds_override():
    class Boom(Exception):
        pass

    def raising(sync):
        try:
            with fjax.enable_x64(True), fjax.default_matmul_precision("float32"):
                sync()
                raise Boom
        except Boom:
            pass
        sync()
        return config.jax_enable_x64, config.jax_default_matmul_precision

    def other(sync):
        sync()
        sync()
        return config.jax_enable_x64

    a, b = run_together(raising, other)
    assert a == (False, None) and b is False
    assert _no_overrides_left()


def test_thread_started_inside_block_sees_global_value():
    seen = []
    with fjax.enable_x64(True):
        t = threading.Thread(target=lambda: seen.append(jnp.array(1.0).dtype))
        t.start()
        t.join()
        assert jnp.array(1.0).dtype == np.float64
    assert seen == [np.float32]


def test_bad_values_rejected_by_context_managers():
    with pytest.raises(ValueError):
        with fjax.default_matmul_precision("bogus"):
            pass
    with pytest.raises(ValueError):
        with fjax.numpy_dtype_promotion("bogus"):
            pass
    assert config.jax_default_matmul_precision is None
    assert config.jax_numpy_dtype_promotion == "standard"


def test_context_manager_as_decorator():
    @fjax.enable_x64(True)
    def f():
        return jnp.array(1.0).dtype

    assert f() == np.float64 and f() == np.float64
    assert jnp.array(1.0).dtype == np.float32


# ---- config.update stays global ----------------------------------------------------------------


def test_update_from_another_thread_is_global_but_not_over_an_override():
    def in_block(sync):
        with fjax.enable_x64(False):
            sync()  # the other thread updates the global value now
            sync()
            during = jnp.array(1.0).dtype
        return during, jnp.array(1.0).dtype

    def updater(sync):
        sync()
        config.update("jax_enable_x64", True)
        sync()
        return jnp.array(1.0).dtype

    a, b = run_together(in_block, updater)
    assert a == (np.float32, np.float64)  # the override held; after the block the new global value
    assert b == np.float64
    assert jnp.array(1.0).dtype == np.float64  # the main thread sees it too


def test_update_inside_own_block_takes_effect_after_it():
    with fjax.default_matmul_precision("float32"):
        config.update("jax_default_matmul_precision", "bfloat16")
        assert config.jax_default_matmul_precision == "float32"
        assert config.global_value("jax_default_matmul_precision") == "bfloat16"
    try:
        assert config.jax_default_matmul_precision == "bfloat16"
    finally:
        config.update("jax_default_matmul_precision", None)


def test_many_threads_toggling_x64():
    # no cross-talk under contention: each thread checks its own setting on every step
    n_threads, steps = 4, 200

    def worker(i):
        def fn(sync):
            sync()
            bad = 0
            for k in range(steps):
                want = (i + k) % 2 == 0
                with fjax.enable_x64(want):
                    time.sleep(0)  # let the other threads run while this one is inside
                    bad += config.jax_enable_x64 is not want
                    bad += jnp.array(1.0).dtype != (np.float64 if want else np.float32)
                bad += config.jax_enable_x64 is not False
            return bad

        return fn

    assert run_together(*(worker(i) for i in range(n_threads))) == [0] * n_threads


# ---- caches of transformed jaxprs key on the trace context -----------------------------------


def _dot_precisions(jaxpr, out=None):
    """The precision params of the dot_generals in ``jaxpr`` and its sub-jaxprs."""
    out = [] if out is None else out
    for e in jaxpr.eqns:
        if e.primitive.name == "dot_general":
            out.append(e.params["precision"])
        for v in e.params.values():
            for u in v if isinstance(v, (tuple, list)) else (v,):
                inner = getattr(u, "jaxpr", u)
                if hasattr(inner, "eqns"):
                    _dot_precisions(inner, out)
    return out


def test_transposed_jaxprs_follow_the_matmul_precision_in_force():
    # transpose and batching rules fill a None precision from jax_default_matmul_precision when
    # they run; the cached transposed / batched jaxprs must not carry one context's value into
    # another (JAX 0.10.2: HIGHEST inside the block, None outside, whichever ran first)
    from fjax import lax

    x, w, ct = jnp.ones((2, 3)), jnp.ones((3, 4)), jnp.ones((2, 4))
    _, vjp_jit = fjax.vjp(fjax.jit(lambda a, b: a @ b), x, w)
    xs = jnp.ones((5, 2, 3))
    _, vjp_scan = fjax.vjp(lambda v: lax.scan(lambda c, r: (c, jnp.dot(r, w)), 0.0, v)[1].sum(), xs)
    hi = (lax.Precision.HIGHEST, lax.Precision.HIGHEST)
    for fn, arg, n in ((vjp_jit, ct, 2), (vjp_scan, 1.0, 1), (fjax.vmap(vjp_jit), jnp.ones((3, 2, 4)), 2)):
        with fjax.default_matmul_precision("float32"):
            assert _dot_precisions(fjax.make_jaxpr(fn)(arg).jaxpr) == [hi] * n
        assert _dot_precisions(fjax.make_jaxpr(fn)(arg).jaxpr) == [None] * n


def test_backward_pass_refuses_a_cpu_precision_only_in_its_block():
    # the CPU refuses TF32_TF32_F32 (as JAX's); a transposed jaxpr cached outside the block must
    # not run inside it without the check, nor one cached inside raise outside
    x, w, ct = jnp.ones((2, 3)), jnp.ones((3, 4)), jnp.ones((2, 4))
    _, vjp_fun = fjax.vjp(fjax.jit(lambda a, b: a @ b), x, w)
    assert float(vjp_fun(ct)[0].sum()) == 24.0
    with fjax.default_matmul_precision("TF32_TF32_F32"):
        with pytest.raises(ValueError, match="The precision 'TF32_TF32_F32' is not supported by dot_general on CPU"):
            vjp_fun(ct)
    assert float(vjp_fun(ct)[0].sum()) == 24.0


def test_transposed_jaxprs_per_thread_precision():
    x, w, ct = jnp.ones((2, 3)), jnp.ones((3, 4)), jnp.ones((2, 4))
    _, vjp_fun = fjax.vjp(fjax.jit(lambda a, b: a @ b), x, w)

    def read():
        return _dot_precisions(fjax.make_jaxpr(vjp_fun)(ct).jaxpr)

    a, b = run_together(inside(lambda: fjax.default_matmul_precision("float32"), read), outside(read))
    hi = (fjax.lax.Precision.HIGHEST, fjax.lax.Precision.HIGHEST)
    assert (a, b) == ([hi, hi], [None, None])
