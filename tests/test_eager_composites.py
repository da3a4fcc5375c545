"""Eager composite jnp / nn / scipy.special functions run compiled once a call signature repeats
(fjax/_eager_compile.py): the first call of a signature op by op, the second queues a background
compile, later calls run the compiled program once it is done; results, dtypes, weak types and
errors as the op-by-op (unwrapped) function's; traces, disable_jit and tiering off stay plain."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.nn
import fjax.numpy as jnp
import fjax.scipy.special
from fjax import _eager_compile as ec
from fjax.backends import tiering


@pytest.fixture
def tiered(monkeypatch):
    """Tiering "auto" without disk markers (a first call goes op by op whatever earlier runs left)."""
    monkeypatch.setattr(tiering, "compiled_before", lambda closed, backend: False)
    old = fjax.config.fjax_tiered_compile
    fjax.config.update("fjax_tiered_compile", "auto")
    yield
    assert ec.wait_compiled(120)
    fjax.config.update("fjax_tiered_compile", old)


def _delta(before: dict) -> dict:
    return {k: v - before[k] for k, v in ec.stats.items() if v != before[k]}


def _same(got, want) -> None:
    g, w = fjax.tree_util.tree_leaves(got), fjax.tree_util.tree_leaves(want)
    assert len(g) == len(w)
    for a, b in zip(g, w):
        assert isinstance(a, fjax.Array)
        assert a.dtype == b.dtype and a.shape == b.shape and a.weak_type == b.weak_type
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-6, atol=1e-6)


def _three_calls(f, *args, **kwargs):
    """Op by op (first), op by op while it compiles (second: queued), compiled (third)."""
    s0 = dict(ec.stats)
    first = f(*args, **kwargs)
    assert _delta(s0) == {"first_calls": 1}
    s1 = dict(ec.stats)
    second = f(*args, **kwargs)
    assert _delta(s1) == {"numpy_calls": 1, "queued": 1}
    assert ec.wait_compiled(120)
    s2 = dict(ec.stats)
    third = f(*args, **kwargs)
    fourth = f(*args, **kwargs)  # (without jit's wrapper: fjax/_eager_compile.py's _run)
    assert _delta(s2) == {"compiled_calls": 2}
    want = f.__wrapped_eager__(*args, **kwargs)
    for out in (first, second, third, fourth):
        _same(out, want)
    return third


def test_exported_functions_are_wrapped_and_keep_their_names():
    for mod, names in [(jnp, ec.JNP), (jnp.linalg, ec.JNP_LINALG), (fjax.nn, ec.NN), (fjax.scipy.special, ec.SPECIAL)]:
        for name in names:
            f = getattr(mod, name)
            assert hasattr(f, "__wrapped_eager__"), name
            assert f.__name__ == f.__wrapped_eager__.__name__
    assert fjax.nn.swish is fjax.nn.silu  # (aliases share one wrapper)
    assert not hasattr(jnp.cumsum, "__wrapped_eager__") and not hasattr(fjax.nn.sigmoid, "__wrapped_eager__")


def test_first_call_op_by_op_second_queues_then_compiled(tiered):
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((7, 13)).astype(np.float32))
    _three_calls(jnp.var, x, axis=1, ddof=1, keepdims=True)
    _three_calls(jnp.linspace, 0.0, 1.0, 37)  # only static arguments: a constant program
    _three_calls(fjax.nn.log_softmax, np.asarray(rng.standard_normal((5, 11)), np.float32))  # numpy input
    _three_calls(jnp.meshgrid, x[0, :3], x[1, :5])  # a list of arrays out
    assert _three_calls(jnp.clip, 2.5, 0.0, 1.0).weak_type  # Python scalars in, a weakly typed result out
    _three_calls(jnp.mean, jnp.asarray(2.0), where=np.asarray(True))  # a weakly typed input


def test_pytree_arguments_scalars_and_keywords(tiered):
    cat = ec.compiled_on_repeat(lambda xs, axis=0, scale=1.0: jnp.concatenate(xs, axis) * scale)
    a, b = jnp.ones((2, 3)), jnp.arange(9.0).reshape(3, 3)
    out = _three_calls(cat, [a, b], axis=0, scale=2.0)
    np.testing.assert_array_equal(np.asarray(out), np.concatenate([np.ones((2, 3)), np.arange(9.0).reshape(3, 3)]) * 2)
    # a different Python scalar is another signature (its value is a constant of the program)
    s0 = dict(ec.stats)
    np.testing.assert_array_equal(np.asarray(cat([a, b], axis=0, scale=3.0)), np.asarray(out) * 1.5)
    assert _delta(s0) == {"first_calls": 1}
    # -0.0 and 0.0 are different constants; nan never repeats
    assert ec._enc(0.0, []) != ec._enc(-0.0, [])
    assert ec._enc(np.float32(0.0), []) != ec._enc(np.float32(-0.0), [])
    assert ec._enc(1, []) != ec._enc(1.0, []) != ec._enc(True, [])
    assert ec._enc(complex(1, 0.0), []) != ec._enc(complex(1, -0.0), [])
    with pytest.raises(ec._NotHandled):  # (not a number: no key; such a call goes op by op)
        ec._enc(np.str_("a"), [])


def test_errors_are_the_unwrapped_functions(tiered):
    x = jnp.ones((3, 4))
    for f, args, kw in [(jnp.var, (x,), {"axis": 5}), (jnp.triu, (x,), {"k": "a"}), (fjax.nn.one_hot, (x, 2.5), {})]:
        try:
            f.__wrapped_eager__(*args, **kw)
        except Exception as e:  # noqa: BLE001
            want = e
        else:
            raise AssertionError("expected an error")
        s0 = dict(ec.stats)
        for _ in range(3):
            with pytest.raises(type(want)) as info:
                f(*args, **kw)
            assert str(info.value) == str(want)
        assert _delta(s0) == {}  # nothing recorded, traced or queued


def test_needing_concrete_values_falls_back_once_and_is_remembered(tiered):
    def sign_flip(x):
        return x if float(x.sum()) > 0 else -x  # a concrete value: jit cannot trace it

    f = ec.compiled_on_repeat(sign_flip)
    x = jnp.asarray([1.0, -3.0])
    s0 = dict(ec.stats)
    outs = [f(x) for _ in range(4)]
    assert _delta(s0) == {"first_calls": 1, "plain": 1}  # traced once, then plain without retrying
    for o in outs:
        np.testing.assert_array_equal(np.asarray(o), [-1.0, 3.0])


def test_traces_disable_jit_and_tiering_off_stay_plain(tiered):
    x = jnp.asarray(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    for f, args in [(jnp.var, (x,)), (fjax.nn.standardize, (x,)), (jnp.triu, (x,))]:
        for _ in range(2):
            f(*args)
        assert ec.wait_compiled(120)
        f(*args)  # compiled now for eager calls; transforms still see the plain function
        plain_out = np.asarray(f.__wrapped_eager__(x))  # (eager: the wrapped functions it calls may tier)
        s0 = dict(ec.stats)
        want = str(fjax.make_jaxpr(f.__wrapped_eager__)(*args))
        assert str(fjax.make_jaxpr(f)(*args)) == want
        assert str(fjax.jit(f).lower(*args).jaxpr) == str(fjax.jit(f.__wrapped_eager__).lower(*args).jaxpr)
        g = fjax.grad(lambda v, f=f: f(v).sum())(x)
        np.testing.assert_allclose(np.asarray(g), np.asarray(fjax.grad(lambda v, f=f: f.__wrapped_eager__(v).sum())(x)))
        np.testing.assert_allclose(np.asarray(fjax.vmap(f)(x[None])), plain_out[None])
        with fjax.disable_jit():
            f(*args)
        fjax.config.update("jax_debug_nans", True)  # (errors name the primitive, as op by op)
        try:
            f(*args)
        finally:
            fjax.config.update("jax_debug_nans", False)
        assert _delta(s0) == {}
    # only constant arguments inside an outer trace: staged, no compile started
    s0 = dict(ec.stats)
    for _ in range(3):
        assert str(fjax.make_jaxpr(lambda: jnp.linspace(0.0, 1.0, 23))()) == str(
            fjax.make_jaxpr(lambda: jnp.linspace.__wrapped_eager__(0.0, 1.0, 23))()
        )
    assert _delta(s0) == {}
    fjax.config.update("fjax_tiered_compile", False)
    s0 = dict(ec.stats)
    for _ in range(3):
        jnp.linspace(0.0, 1.0, 29)
    assert _delta(s0) == {}  # never recorded, traced nor queued


def test_x64_toggling_gives_each_modes_dtypes(tiered):
    for _ in range(2):
        jnp.linspace(0.0, 2.0, 19)
    assert ec.wait_compiled(120)
    assert jnp.linspace(0.0, 2.0, 19).dtype == np.float32
    s0 = dict(ec.stats)
    with fjax.enable_x64():
        y = jnp.linspace(0.0, 2.0, 19)
        assert y.dtype == np.float64 and jnp.var(jnp.arange(5)).dtype == np.float64
    assert _delta(s0)["first_calls"] == 2  # another trace context: another signature
    s1 = dict(ec.stats)
    assert jnp.linspace(0.0, 2.0, 19).dtype == np.float32
    assert _delta(s1) == {"compiled_calls": 1}


def test_concurrent_calls_agree(tiered):
    x = jnp.asarray(np.arange(40, dtype=np.float32).reshape(5, 8))
    want = np.asarray(fjax.nn.standardize.__wrapped_eager__(x, axis=0))
    outs: list = []

    def loop() -> None:
        for _ in range(6):
            outs.append(np.asarray(fjax.nn.standardize(x, axis=0)))

    threads = [threading.Thread(target=loop) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert ec.wait_compiled(120)
    outs.append(np.asarray(fjax.nn.standardize(x, axis=0)))
    assert len(outs) == 25
    for o in outs:
        np.testing.assert_allclose(o, want, rtol=2e-6, atol=1e-6)


@settings(max_examples=8, deadline=None)
@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=3),
    name=st.sampled_from(["var", "triu", "log_softmax", "take_along_axis"]),
    seed=st.integers(0, 2**16),
)
def test_shapes_agree_with_numpy(shape, name, seed):
    old = fjax.config.fjax_tiered_compile
    fjax.config.update("fjax_tiered_compile", True)
    try:
        rng = np.random.default_rng(seed)
        xn = rng.standard_normal(shape).astype(np.float32)
        x = jnp.asarray(xn)
        if name == "var":
            f, want = lambda: jnp.var(x, axis=-1), np.var(xn, axis=-1)
        elif name == "triu":
            if len(shape) < 2:
                return
            f, want = lambda: jnp.triu(x, 1), np.triu(xn, 1)
        elif name == "log_softmax":
            m = xn.max(-1, keepdims=True)
            f, want = lambda: fjax.nn.log_softmax(x), xn - m - np.log(np.exp(xn - m).sum(-1, keepdims=True))
        else:
            idx = rng.integers(0, shape[-1], shape).astype(np.int32)
            f, want = lambda: jnp.take_along_axis(x, jnp.asarray(idx), axis=-1), np.take_along_axis(xn, idx, -1)
        outs = [f(), f()]
        assert ec.wait_compiled(120)
        outs += [f(), f()]
        for o in outs:
            assert o.dtype == want.dtype and o.shape == want.shape
            np.testing.assert_allclose(np.asarray(o), want, rtol=1e-5, atol=1e-5)
    finally:
        fjax.config.update("fjax_tiered_compile", old)


def _warnings_of(f, *args, **kwargs) -> list:
    import warnings  # noqa: PLC0415

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        try:
            f(*args, **kwargs)
        except Exception as e:  # noqa: BLE001
            rec.append(e)
    return [(type(w).__name__, str(w)) if isinstance(w, Exception) else (str(w.message), w.filename) for w in rec]


def test_dtype_requests_warn_as_the_plain_functions():
    """A 64-bit ``dtype=`` with x64 off warns at the caller's line under each function's own name
    (the wrapper's frame must not hide it as an internal request); the same with x64 on: nothing.
    (Tiering off here: the warning comes before that choice; the tiered calls: the next test.)"""
    import inspect  # noqa: PLC0415

    x, m = jnp.ones(6), jnp.ones((3, 3))
    special = {"linspace": (0, 1, 3), "logspace": (0, 1, 3), "geomspace": (1, 2, 3), "trace": (m,), "one_hot": (x, 4)}
    special["corrcoef"] = (jnp.arange(6.0),)  # (ones: 0/0, whose numpy RuntimeWarning "always" shows)
    checked = 0
    for mod, names in [(jnp, ec.JNP), (jnp.linalg, ec.JNP_LINALG), (fjax.nn, ec.NN), (fjax.scipy.special, ec.SPECIAL)]:
        for name in names:
            f = getattr(mod, name)
            params = list(inspect.signature(f.__wrapped_eager__).parameters.values())
            pos = [p.name for p in params]
            if "dtype" not in pos:
                continue
            args = special.get(name, (x,))
            calls = [((), {"dtype": jnp.float64}), ((), {"dtype": "int64"}), ((), {"dtype": "nonsense"})]
            if params[pos.index("dtype")].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD:
                fill = (None,) * (pos.index("dtype") - len(args))
                calls.append(((*fill, np.float64), {}))
            for extra, kw in calls:
                want = _warnings_of(f.__wrapped_eager__, *args, *extra, **kw)
                for _ in range(3):  # (op by op, then queued, ...)
                    assert _warnings_of(f, *args, *extra, **kw) == want
            checked += 1
            with fjax.enable_x64():
                assert _warnings_of(f, *args, dtype=jnp.float64) == []
    assert checked >= 10
    old = fjax.config.jax_explicit_x64_dtypes
    fjax.config.update("jax_explicit_x64_dtypes", "error")
    try:
        want = _warnings_of(jnp.nanmean.__wrapped_eager__, x, dtype=jnp.float64)
        assert want and want[0][0] == "ValueError" and _warnings_of(jnp.nanmean, x, dtype=jnp.float64) == want
    finally:
        fjax.config.update("jax_explicit_x64_dtypes", old)


def test_dtype_request_warns_once_a_call_while_tiered(tiered):
    x = jnp.asarray(np.arange(5.0, dtype=np.float32))
    want = _warnings_of(jnp.std.__wrapped_eager__, x, dtype=jnp.float64)
    assert len(want) == 1
    got = [_warnings_of(jnp.std, x, dtype=jnp.float64) for _ in range(2)]  # op by op; traced and queued
    assert ec.wait_compiled(120)
    got.append(_warnings_of(jnp.std, x, dtype=jnp.float64))  # compiled
    assert got == [want] * 3
