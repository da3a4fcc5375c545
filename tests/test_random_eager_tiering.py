"""Eager samplers of moderate size under tiering (fjax/_random_eager.py, fjax/_random_kernels.py):
a call never waits for numba; it runs compiled once the background thread has compiled (or when a
process compiled it before and loading is cheap), op by op in numpy before that, with the same
bits either way; with ``fjax_tiered_compile`` off such calls stay op by op."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import fjax
from fjax import _random_eager, random
from fjax import _random_kernels as kernels
from fjax.backends import dispatch, tiering


@pytest.fixture
def tiered(monkeypatch):
    """Tiering "auto", samplers tiered from 1000 samples (programs compile in a second or two)."""
    monkeypatch.setattr(_random_eager, "TIERED_MIN_SIZE", 1000)
    # shapes of their own (no other test compiles them in this process) and no disk marker,
    # whatever earlier runs left in the cache: the first call goes op by op
    monkeypatch.setattr(tiering, "compiled_before", lambda closed, backend: False)
    old = fjax.config.fjax_tiered_compile
    fjax.config.update("fjax_tiered_compile", "auto")
    yield
    assert _random_eager.wait_compiled(120)
    fjax.config.update("fjax_tiered_compile", old)


def _bits(x) -> np.ndarray:
    x = np.asarray(x)
    return x.view(np.uint8) if x.dtype.kind == "f" else x


def _op_by_op(f):
    with fjax.disable_jit():
        return np.asarray(f())


def _delta(before: dict) -> dict:
    return {k: _random_eager.stats[k] - v for k, v in before.items()}


def test_first_call_op_by_op_then_the_background_compile_is_used(tiered):
    k = random.PRNGKey(11)
    logits = np.linspace(-1, 1, 2000, dtype=np.float32).reshape(200, 10)
    cases = [lambda: random.normal(k, (41, 50)), lambda: random.categorical(k, logits)]
    for f in cases:
        s0 = dict(_random_eager.stats)
        first = np.asarray(f())  # does not wait for numba
        assert _delta(s0) == {"compiled_calls": 0, "loaded": 0, "numpy_calls": 1, "queued": 1}
        assert _random_eager.wait_compiled(120)
        s1 = dict(_random_eager.stats)
        again = np.asarray(f())
        assert _delta(s1)["compiled_calls"] == 1 and _delta(s1)["numpy_calls"] == 0  # compiled now
        # the compiled program, its op-by-op evaluation here and under disable_jit: the same bits
        np.testing.assert_array_equal(_bits(again), _bits(first))
        np.testing.assert_array_equal(_bits(again), _bits(_op_by_op(f)))


def test_concurrent_calls_while_compiling_use_numpy_and_queue_once(tiered):
    k = random.PRNGKey(5)
    f = lambda: random.uniform(k, (30, 70), minval=-2.0, maxval=3.0)  # noqa: E731
    hold = threading.Event()
    assert kernels.in_background("test-hold", hold.wait)  # the compile thread is busy meanwhile
    s0 = dict(_random_eager.stats)
    outs: list = [None] * 4
    try:

        def call(i: int) -> None:
            outs[i] = np.asarray(f())

        threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        d = _delta(s0)
        assert d["numpy_calls"] == 4 and d["queued"] == 1 and d["compiled_calls"] == 0
    finally:
        hold.set()
    assert _random_eager.wait_compiled(120)
    compiled = np.asarray(f())
    assert _delta(s0)["compiled_calls"] == 1
    for o in outs:
        np.testing.assert_array_equal(_bits(o), _bits(compiled))


def test_a_program_compiled_before_loads_on_the_first_call(tiered, monkeypatch):
    monkeypatch.undo()  # (the fixture's settings, but the real markers)
    monkeypatch.setattr(_random_eager, "TIERED_MIN_SIZE", 1000)
    k = random.PRNGKey(2)
    f = lambda: random.normal(k, (25, 60))  # noqa: E731
    np.asarray(f())
    assert _random_eager.wait_compiled(120)  # compiled: on disk, with its marker
    _random_eager._jitted.cache_clear()  # a new trace: this process has not compiled it
    s0 = dict(_random_eager.stats)
    np.asarray(f())
    assert _delta(s0) == {"compiled_calls": 1, "loaded": 1, "numpy_calls": 0, "queued": 0}


def test_failed_background_compiles_are_retried_then_stay_numpy(tiered, monkeypatch):
    def boom(*a, **kw):
        raise RuntimeError("compile failed on purpose")

    monkeypatch.setattr(dispatch, "compile_jaxpr", boom)
    k = random.PRNGKey(9)
    f = lambda: random.gumbel(k, (33, 41))  # noqa: E731
    want = _op_by_op(f)
    s0 = dict(_random_eager.stats)
    for _ in range(_random_eager._MAX_ATTEMPTS + 2):
        np.testing.assert_array_equal(_bits(f()), _bits(want))
        assert _random_eager.wait_compiled(60)
    d = _delta(s0)
    assert d["queued"] == _random_eager._MAX_ATTEMPTS and d["compiled_calls"] == 0


def test_tiering_off_keeps_mid_sizes_op_by_op(monkeypatch):
    monkeypatch.setattr(_random_eager, "TIERED_MIN_SIZE", 1000)
    assert fjax.config.fjax_tiered_compile is False  # (tests/conftest.py)
    k = random.PRNGKey(4)
    s0, q0 = dict(_random_eager.stats), kernels.bg_stats["queued"]
    info = _random_eager._jitted.cache_info()
    np.asarray(random.normal(k, (50, 50)))
    assert _delta(s0) == dict.fromkeys(s0, 0) and kernels.bg_stats["queued"] == q0
    assert _random_eager._jitted.cache_info().misses == info.misses  # not even traced


def test_kernels_numpy_fallbacks_give_the_kernels_bits():
    kernels.available()  # tiering off: compiled now
    assert kernels._ready
    rng = np.random.default_rng(0)
    x1, x2 = (rng.integers(0, 2**32, 5000, dtype=np.uint32) for _ in range(2))
    for k1, k2 in [(0, 0), (2**32 - 1, 2**32 - 2), (12345, 987654321)]:
        want = kernels.threefry2x32(k1, k2, x1, x2)
        got = kernels._threefry2x32_numpy(np.uint32(k1), np.uint32(k2), x1, x2)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    # float32 fma: random operands, specials, and sums on a float32 midpoint (double rounding)
    special = np.array([0.0, -0.0, 1.0, 3.0, 2**-24, -(2**-24), 1e-45, 3.4e38, np.inf, -np.inf, np.nan], np.float32)
    grid = np.stack(np.meshgrid(special, special, special), -1).reshape(-1, 3).T
    e = np.float32(1 + 2**-23)
    ties = np.array([-1, 2**-24, -(2**-24), 1e-30, -1e-30], np.float32)
    a = np.concatenate([rng.standard_normal(4000).astype(np.float32), grid[0], np.full(5, e)])
    b = np.concatenate([rng.standard_normal(4000).astype(np.float32), grid[1], np.full(5, e)])
    c = np.concatenate([rng.standard_normal(4000).astype(np.float32), grid[2], ties])
    want = kernels.fma_f32(a, b, c)
    got = kernels._fma_f32_numpy(a, b, c)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    # (1 + 2**-23)**2 - 1 = 2**-22 + 2**-46: rounded once, not twice
    assert want[-5] == np.float32(2**-22)


def test_kernels_compile_in_the_background_under_tiering(monkeypatch):
    monkeypatch.setattr(kernels, "_ready", False)
    monkeypatch.setattr(kernels, "_on_disk", lambda: False)
    fjax.config.update("fjax_tiered_compile", "auto")
    try:
        hold = threading.Event()
        assert kernels.in_background("test-hold", hold.wait)
        q0 = kernels.bg_stats["queued"]
        x = np.arange(10, dtype=np.uint32)
        try:
            assert not kernels.available(10)  # queued, not compiled by this call
            o1, o2 = kernels.threefry2x32(1, 2, x, x)  # the numpy expressions meanwhile
            assert kernels.bg_stats["queued"] == q0 + 1
        finally:
            hold.set()
        assert kernels.wait_background(120) and kernels._ready
        w1, w2 = kernels.threefry2x32(1, 2, x, x)
        np.testing.assert_array_equal(o1, w1)
        np.testing.assert_array_equal(o2, w2)
    finally:
        fjax.config.update("fjax_tiered_compile", False)


def test_arrays_placed_on_the_host_device_do_not_turn_tiering_off(tiered):
    """A device_put to the host's CPU device once (fjax then watches placements for the rest of
    the process) leaves host-side samplers tiered; a key committed to that device runs op by op."""
    from fjax import _placement

    fjax.device_put(np.ones(3), fjax.devices("cpu")[0])
    assert _placement._state["placed"]
    k = random.PRNGKey(12)
    s0 = dict(_random_eager.stats)
    np.asarray(random.uniform(k, (37, 53)))
    assert _delta(s0)["numpy_calls"] == 1 and _delta(s0)["queued"] == 1
    s1 = dict(_random_eager.stats)
    np.asarray(random.uniform(fjax.device_put(k, fjax.devices("cpu")[0]), (37, 53)))
    assert _delta(s1) == {"compiled_calls": 0, "loaded": 0, "numpy_calls": 0, "queued": 0}


def test_small_calls_tier_from_their_second_call(tiered):
    """Below ``TIERED_MIN_SIZE`` a signature's first call stays op by op (nothing queued); its second
    call queues the compile; once compiled the calls run it, with the op-by-op bits."""
    k = random.PRNGKey(5)
    f = lambda: random.normal(k, (7, 3))  # noqa: E731  (21 samples: far below the threshold)
    s0 = dict(_random_eager.stats)
    first = np.asarray(f())
    assert _delta(s0) == {"compiled_calls": 0, "loaded": 0, "numpy_calls": 0, "queued": 0}  # plain op by op
    np.asarray(f())
    assert _delta(s0)["queued"] == 1 and _delta(s0)["numpy_calls"] == 1
    assert _random_eager.wait_compiled(120)
    s1 = dict(_random_eager.stats)
    again = np.asarray(f())
    assert _delta(s1)["compiled_calls"] == 1
    np.testing.assert_array_equal(_bits(again), _bits(first))
    np.testing.assert_array_equal(_bits(again), _bits(_op_by_op(f)))


def test_split_and_fold_in_run_compiled_in_a_loop(tiered):
    """``split`` and ``fold_in`` (a training loop's key handling) tier like the small samplers; a
    Python-int ``fold_in`` datum is a value, so a loop over steps shares one program."""
    k = random.PRNGKey(9)
    want = [_op_by_op(lambda i=i: random.fold_in(k, i)) for i in range(6)]
    want_split = _op_by_op(lambda: random.split(k, 3))
    got = [np.asarray(random.fold_in(k, i)) for i in range(3)]
    np.asarray(random.split(k, 3))
    np.asarray(random.split(k, 3))  # (its second call queues its compile)
    assert _random_eager.wait_compiled(120)
    s1 = dict(_random_eager.stats)
    got += [np.asarray(random.fold_in(k, i)) for i in range(3, 6)]
    got_split = np.asarray(random.split(k, 3))
    assert _delta(s1)["compiled_calls"] == 4 and _delta(s1)["numpy_calls"] == 0
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got_split, want_split)
    with pytest.raises(OverflowError, match="out of bounds for uint32"):
        random.fold_in(k, 2**32)
