"""Top-level names added for JAX 0.10 parity: strict dtype promotion, configuration states,
arrays assembled from pieces, dlpack, profiler and monitoring.

Expected values were recorded with JAX 0.10.2 (``/tmp/jaxenv``), e.g.::

    with jax.numpy_dtype_promotion("strict"):
        jnp.result_type(jnp.float32, float)        # float32
        jnp.result_type(jnp.int32, float)          # TypePromotionError
"""

from __future__ import annotations

import gzip
import json
import os
import warnings

import numpy as np
import pytest

import fjax as jax
import fjax.numpy as jnp
from fjax import dtypes

STRICT_MSG = "have no available implicit dtype promotion path when jax_numpy_dtype_promotion=strict"

# (a, b) -> result under strict promotion in JAX 0.10.2 (None: TypePromotionError)
STRICT_CASES = [
    (np.float32, np.float32, (np.float32, False)),
    (np.float32, np.float16, None),
    (np.int32, np.int8, None),
    (np.int32, float, None),
    (np.float32, float, (np.float32, False)),
    (np.float32, int, (np.float32, False)),
    (np.int32, int, (np.int32, False)),
    (np.bool_, int, None),
    (np.int32, np.bool_, None),
    (np.float32, complex, None),
    (int, float, (np.float32, True)),
    (np.uint8, int, (np.uint8, False)),
    (np.int8, np.uint8, None),
]


@pytest.mark.parametrize("a,b,want", STRICT_CASES)
def test_strict_result_type(a, b, want):
    with jax.numpy_dtype_promotion("strict"):
        if want is None:
            with pytest.raises(dtypes.TypePromotionError, match=STRICT_MSG):
                dtypes.result_type(a, b)
        else:
            dt, weak = dtypes.result_type(a, b, return_weak_type_flag=True)
            assert (dt, weak) == (np.dtype(want[0]), want[1])
    # standard promotion is back after the block
    assert dtypes.result_type(np.int32, np.int8) == np.int32


def test_strict_ops_and_jit_retrace():
    x = jnp.ones(3, jnp.float32)
    y = jnp.ones(3, jnp.int32)
    f = jax.jit(lambda a, b: a * b)
    assert f(x, y).dtype == np.float32  # traced under standard promotion
    assert issubclass(dtypes.TypePromotionError, ValueError)
    with jax.numpy_dtype_promotion("strict"):
        assert jax.config.jax_numpy_dtype_promotion == "strict"
        assert jax.numpy_dtype_promotion.value == "strict"
        for fn in (lambda: x + y, lambda: y + 1.5, lambda: jnp.where(True, x, y), lambda: f(x, y)):
            with pytest.raises(dtypes.TypePromotionError, match=STRICT_MSG):
                fn()
        with pytest.raises(dtypes.TypePromotionError):
            jnp.promote_types(np.float32, np.float16)
        # what JAX allows in strict mode: same dtypes, weak scalars of a lower kind, unary ops
        assert (x + 1.0).dtype == np.float32 and (x + 2).dtype == np.float32
        assert jnp.add(x, np.ones(3)).dtype == np.float32  # float64 canonicalizes to float32 first
        assert jnp.sin(y).dtype == np.float32 and jnp.mean(y).dtype == np.float32
        assert jnp.array([1, 2.5]).dtype == np.float32
    assert (x + y).dtype == np.float32 and f(x, y).dtype == np.float32


def test_promotion_mode_validation():
    with pytest.raises(ValueError, match="'bogus' is not a valid NumpyDtypePromotion"):
        jax.config.update("jax_numpy_dtype_promotion", "bogus")
    with pytest.raises(ValueError, match="is not a valid NumpyDtypePromotion"):
        with jax.numpy_dtype_promotion("bogus"):
            pass
    assert jax.config.jax_numpy_dtype_promotion == "standard"


def test_config_states():
    assert jax.enable_checks.value is False and jax.default_prng_impl.value == "threefry2x32"
    with jax.enable_checks(True):
        assert jax.config.jax_enable_checks is True
    assert jax.config.jax_enable_checks is False
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with jax.checking_leaks():
            assert jax.config.jax_check_tracer_leaks is True
        with jax.debug_key_reuse(True):
            pass
    assert len(w) == 2 and all("does nothing" in str(m.message) for m in w)
    with pytest.raises(NotImplementedError, match="threefry2x32"):
        jax.config.update("jax_default_prng_impl", "rbg")
    with pytest.raises(NotImplementedError, match="partitionable"):
        jax.config.update("jax_threefry_partitionable", False)
    with pytest.raises(NotImplementedError, match="only 'allow'"):
        with jax.transfer_guard("disallow"):
            pass
    with jax.transfer_guard("allow"):
        pass
    assert jax.config.jax_transfer_guard is None


def test_make_array_from_callback_and_single_device_arrays():
    mesh = jax.make_mesh((jax.device_count(),), ("x",))
    n = 4 * jax.device_count()
    s = jax.NamedSharding(mesh, jax.P("x"))
    assert jax.P is jax.sharding.PartitionSpec
    data = np.arange(n, dtype=np.float32)
    seen = []

    def cb(idx):
        seen.append(idx)
        return data[idx]

    a = jax.make_array_from_callback((n,), s, cb)
    np.testing.assert_array_equal(a, data)
    assert a.sharding == s and a.dtype == np.float32 and len(seen) == jax.device_count()
    shards = [data[i] for i in s.addressable_devices_indices_map((n,)).values()]
    b = jax.make_array_from_single_device_arrays((n,), s, [jnp.asarray(x) for x in shards])
    np.testing.assert_array_equal(b, data)
    with pytest.raises(ValueError, match="shape"):
        jax.make_array_from_callback((n,), s, lambda idx: np.zeros(3))
    with pytest.raises(ValueError, match="arrays"):
        jax.make_array_from_single_device_arrays((n,), s, [])


def test_live_arrays_and_copy_to_host_async():
    x = jnp.arange(7.0) * 3
    assert any(a is x for a in jax.live_arrays())
    assert jax.copy_to_host_async(x) is x
    assert isinstance(jax.Device, type) and isinstance(jax.devices()[0], jax.Device)


def test_dlpack_round_trip():
    # jax.dlpack.from_dlpack(np.arange(3.)) -> Array([0., 1., 2.], dtype=float32) (x64 off)
    x = jax.dlpack.from_dlpack(np.arange(3.0))
    assert x.dtype == np.float32 and not x.weak_type
    np.testing.assert_array_equal(x, [0, 1, 2])
    np.testing.assert_array_equal(np.from_dlpack(jnp.arange(3)), [0, 1, 2])
    assert jnp.arange(3).__dlpack_device__()[0] == 1  # kDLCPU
    assert jax.dlpack.is_supported_dtype(np.float32) and jax.dlpack.is_supported_dtype(jnp.bfloat16)
    with pytest.raises(TypeError, match="must have __dlpack__ and __dlpack_device__"):
        jax.dlpack.from_dlpack([1, 2])


def test_profiler_writes_chrome_trace(tmp_path):
    with pytest.raises(RuntimeError, match="No profile started"):
        jax.profiler.stop_trace()
    with jax.profiler.trace(tmp_path, create_perfetto_trace=True):
        with pytest.raises(RuntimeError, match="already been started"):
            jax.profiler.start_trace(tmp_path)
        with jax.profiler.TraceAnnotation("outer", tag="t"):
            with jax.profiler.StepTraceAnnotation("train", step_num=3):
                pass
        assert jax.profiler.annotate_function(lambda v: v + 1, name="plus")(1) == 2
        jax.monitoring.record_event_duration_secs("/my/duration", 0.002)
    (run,) = os.listdir(tmp_path / "plugins" / "profile")
    files = sorted(os.listdir(tmp_path / "plugins" / "profile" / run))
    assert "perfetto_trace.json.gz" in files and any(f.endswith(".trace.json.gz") for f in files)
    with gzip.open(tmp_path / "plugins" / "profile" / run / "perfetto_trace.json.gz") as f:
        events = {e["name"]: e for e in json.load(f)["traceEvents"] if e["ph"] == "X"}
    assert set(events) == {"outer", "train", "plus", "/my/duration"}
    assert events["outer"]["args"] == {"tag": "t"} and events["train"]["args"] == {"step_num": "3"}
    assert events["outer"]["ts"] <= events["train"]["ts"] and events["outer"]["dur"] >= events["train"]["dur"]
    assert abs(events["/my/duration"]["dur"] - 2000.0) < 1.0  # microseconds
    for fn in (lambda: jax.profiler.start_server(9999), jax.profiler.device_memory_profile):
        with pytest.raises(NotImplementedError, match="jax.profiler"):
            fn()


def test_monitoring_listeners():
    events, durations = [], []

    def on_event(e, **kw):
        events.append((e, kw))

    def on_duration(e, d, **kw):
        durations.append((e, d, kw))

    jax.monitoring.register_event_listener(on_event)
    jax.monitoring.register_event_duration_secs_listener(on_duration)
    try:
        jax.monitoring.record_event("/a", k="v")
        jax.monitoring.record_event_duration_secs("/b", 1.5, n=2)
        assert events == [("/a", {"k": "v"})] and durations == [("/b", 1.5, {"n": 2})]
        jax.monitoring.unregister_event_listener(on_event)
        jax.monitoring.record_event("/a")
        assert len(events) == 1
        with pytest.raises(AssertionError):  # as JAX: unregistering an unknown listener
            jax.monitoring.unregister_event_listener(on_event)
    finally:
        jax.monitoring.clear_event_listeners()
    jax.monitoring.record_event_duration_secs("/b", 1.0)
    assert len(durations) == 1
