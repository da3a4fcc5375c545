"""Runtime and callback APIs: devices, device_put/get, block_until_ready, fjax.debug.print/callback,
pure_callback and ensure_compile_time_eval (JAX 0.10 semantics)."""

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax

S = fjax.ShapeDtypeStruct

# debug callbacks survive dead-code elimination only with the effect-aware DCE of
# fjax/interpreters/partial_eval.py; without it every staged use (jit, make_jaxpr, the bodies of
# lax.scan/while_loop/cond, which are traced to jaxprs even eagerly) silently drops them
EFFECTS_KEPT = "debug_callback" in str(fjax.make_jaxpr(lambda x: fjax.debug.print("{}", x))(1.0))
needs_effects = pytest.mark.skipif(
    not EFFECTS_KEPT, reason="needs effect-aware dead-code elimination (Primitive.effectful) in partial_eval"
)


def lines(capsys):
    return capsys.readouterr().out.splitlines()


# ---- devices -----------------------------------------------------------------------------


def test_devices_and_backend():
    (d,) = fjax.devices()
    assert repr(d) == "CpuDevice(id=0)" and str(d) == "cpu:0"
    assert d.id == 0 and d.platform == "cpu" and d.device_kind == "cpu" and d.process_index == 0
    assert fjax.devices("cpu") == [d] and fjax.local_devices() == [d] and fjax.local_devices(backend="cpu") == [d]
    assert fjax.default_backend() == "cpu"
    assert fjax.device_count() == 1 and fjax.local_device_count() == 1
    assert fjax.process_index() == 0 and fjax.process_count() == 1
    assert d == fjax.devices()[0] and hash(d) == hash(fjax.local_devices()[0])
    assert pickle.loads(pickle.dumps(d)) == d
    with pytest.raises(RuntimeError, match="Unknown backend: 'gpu'"):
        fjax.devices("gpu")
    with pytest.raises(RuntimeError, match="Unknown backend"):
        fjax.device_count("tpu")


def test_array_device_methods():
    x = jnp.ones(3)
    (d,) = fjax.devices()
    assert x.devices() == {d} and x.device == d
    assert x.sharding.device_set == {d} and x.sharding.is_fully_replicated
    assert repr(x.sharding) == "SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)"
    assert x.block_until_ready() is x


def test_device_put_pytree():
    (d,) = fjax.devices()
    tree = {"a": np.ones((2, 3), np.float64), "b": [1.0, 2, True], "c": jnp.arange(3), "n": None}
    out = fjax.device_put(tree)
    assert set(out) == {"a", "b", "c", "n"} and out["n"] is None
    assert type(out["a"]) is fjax.Array and out["a"].dtype == np.float32 and not out["a"].weak_type
    b0, b1, b2 = out["b"]
    assert b0.dtype == np.float32 and b0.weak_type and b1.dtype == np.int32 and b1.weak_type
    assert b2.dtype == np.bool_ and not b2.weak_type
    assert out["c"] is tree["c"]
    np.testing.assert_array_equal(out["a"], tree["a"])
    assert fjax.device_put(np.float32(2.0), d).dtype == np.float32
    assert fjax.device_put([1.0], [d])[0].weak_type  # a pytree of devices, a prefix of x
    with pytest.raises(ValueError, match="only accepts"):
        fjax.device_put(1.0, "cpu")


def test_device_put_keeps_tracers_and_user_arrays():
    a = np.ones(3, np.float32)
    out = fjax.device_put(a)
    a[0] = 5.0  # the user's array is copied, never frozen
    assert out[0] == 1.0 and a.flags.writeable
    f = fjax.jit(lambda x: fjax.device_put(x) * 2)
    np.testing.assert_array_equal(f(jnp.ones(2)), [2.0, 2.0])


def test_device_get_pytree():
    x = jnp.arange(3.0)
    out = fjax.device_get({"x": x, "s": 1, "t": "text", "l": [x, 2.5]})
    assert type(out["x"]) is np.ndarray and out["x"].dtype == np.float32
    np.testing.assert_array_equal(out["x"], [0.0, 1.0, 2.0])
    assert out["s"] == 1 and out["t"] == "text" and out["l"][1] == 2.5 and type(out["l"][0]) is np.ndarray
    assert type(fjax.device_get(1.0)) is float

    @fjax.jit
    def f(x):
        return fjax.device_get(x) * 2  # a traced value passes through, as in JAX 0.10.2

    np.testing.assert_array_equal(f(x), [0.0, 2.0, 4.0])


def test_block_until_ready():
    x = jnp.ones(2)
    tree = {"a": x, "b": [1, None, np.ones(2)], "c": "s"}
    assert fjax.block_until_ready(tree) is tree
    assert fjax.block_until_ready(x) is x
    assert fjax.block_until_ready(3) == 3
    y = fjax.jit(lambda v: v + 1)(x).block_until_ready()
    np.testing.assert_array_equal(y, [2.0, 2.0])


@given(
    st.sampled_from([np.float32, np.float64, np.int32, np.int64, np.int8, np.uint8, np.bool_, np.complex64]),
    st.lists(st.integers(0, 3), max_size=3),
)
def test_device_put_get_roundtrip(dtype, shape):
    a = (np.arange(int(np.prod(shape))) % 3).reshape(shape).astype(dtype)
    x = fjax.device_put(a)
    assert type(x) is fjax.Array and x.shape == a.shape
    assert x.dtype == fjax.dtypes.canonicalize_dtype(a.dtype)
    back = fjax.device_get(x)
    assert type(back) is np.ndarray and back.dtype == x.dtype
    np.testing.assert_array_equal(back, a)


def test_shape_dtype_struct_with_eval_shape():
    s = S((2, 3), jnp.float32)
    assert s.shape == (2, 3) and s.dtype == np.float32 and s.ndim == 2 and s.size == 6
    assert repr(s) == "ShapeDtypeStruct(shape=(2, 3), dtype=float32)"
    out = fjax.eval_shape(lambda x, y: (x.sum(0), x @ y), s, S((3, 4), jnp.float32))
    assert out == (S((3,), jnp.float32), S((2, 4), jnp.float32))
    calls = []
    # eval_shape never runs callbacks
    out = fjax.eval_shape(lambda x: fjax.pure_callback(lambda v: calls.append(v) or v, s, x), s)
    assert out == s and not calls


# ---- debug.print ---------------------------------------------------------------------------


def test_debug_print_eager_formats(capsys):
    fjax.debug.print("hello")
    fjax.debug.print("x={x} y={}", jnp.float32(1.5), x=jnp.arange(3))
    fjax.debug.print("{x:.3f} {y!r}", x=jnp.float32(2.0), y="s")
    fjax.debug.print("{0}-{0}", 7)
    fjax.debug.print("{d[k]}", d={"k": jnp.int32(4)})
    assert lines(capsys) == ["hello", "x=[0 1 2] y=1.5", "2.000 's'", "7-7", "4"]


def test_debug_print_format_check_and_forms(capsys):
    with pytest.raises(ValueError, match="Unused positional arguments"):
        fjax.debug.print("no placeholders", 1)
    with pytest.raises(ValueError, match="Unused keyword arguments"):
        fjax.debug.print("{x}", x=1, y=2)
    with pytest.raises(IndexError):
        fjax.debug.print("{} {}", 1)
    fjax.debug.print("args:", 1, jnp.ones(2), skip_format_check=True)
    fjax.debug.print(ordered=True)("two-call {}", 3)
    with pytest.raises(TypeError, match="two-call form"):
        fjax.debug.print(None, 1)
    assert lines(capsys) == ["args: 1 [1. 1.]", "two-call 3"]


def test_debug_print_uses_printoptions_of_the_call(capsys):
    x = jnp.array([1.0 / 3.0])
    with np.printoptions(precision=2):
        fjax.debug.print("{}", x)
    fjax.debug.print("{}", x)
    assert lines(capsys) == ["[0.33]", "[0.33333334]"]


@needs_effects
def test_debug_print_in_jit_runs_every_call_not_at_trace(capsys):
    traces = []

    @fjax.jit
    def f(x):
        traces.append(1)
        fjax.debug.print("x={}", x)
        y = x * 2
        fjax.debug.print("y={y}", y=y)
        return y

    assert lines(capsys) == []
    np.testing.assert_allclose(f(1.0), 2.0)
    np.testing.assert_allclose(f(3.0), 6.0)
    assert len(traces) == 1
    assert lines(capsys) == ["x=1.0", "y=2.0", "x=3.0", "y=6.0"]
    jaxpr = str(fjax.make_jaxpr(f)(1.0))
    assert jaxpr.count("debug_callback") == 2 and "= debug_callback" not in jaxpr
    assert lines(capsys) == []  # tracing does not print


@needs_effects
def test_debug_callback_kept_when_nothing_uses_it(capsys):
    @fjax.jit
    def f(x):
        fjax.debug.print("only {}", x + 1)  # x + 1 is used by the print alone
        return None

    assert f(1.0) is None
    assert lines(capsys) == ["only 2.0"]


def test_debug_print_vmap_one_call_per_example(capsys):
    f = lambda x, y: (fjax.debug.print("x={} y={}", x, y), x * y)[1]
    out = fjax.vmap(f, in_axes=(0, None))(jnp.arange(3.0), 2.0)
    np.testing.assert_allclose(out, [0.0, 2.0, 4.0])
    assert lines(capsys) == ["x=0.0 y=2.0", "x=1.0 y=2.0", "x=2.0 y=2.0"]
    fjax.vmap(lambda r: fjax.debug.print("{}", r), in_axes=1)(jnp.arange(4).reshape(2, 2))
    assert lines(capsys) == ["[0 2]", "[1 3]"]


@needs_effects
def test_debug_print_jit_of_vmap(capsys):
    f = fjax.jit(fjax.vmap(lambda x: (fjax.debug.print("{}", x), x + 1)[1]))
    np.testing.assert_allclose(f(jnp.arange(2.0)), [1.0, 2.0])
    assert lines(capsys) == ["0.0", "1.0"]


def test_debug_print_under_grad_and_jvp_prints_primals_once(capsys):
    def f(x):
        fjax.debug.print("x={}", x)
        y = jnp.sin(x) * x
        fjax.debug.print("y={}", y)
        return y

    g = fjax.grad(f)(1.0)
    np.testing.assert_allclose(g, np.cos(1.0) + np.sin(1.0), rtol=1e-6)
    out = lines(capsys)
    assert out[0] == "x=1.0" and len(out) == 2
    np.testing.assert_allclose(float(out[1][2:]), np.sin(1.0), rtol=1e-6)
    p, t = fjax.jvp(f, (2.0,), (1.0,))
    out = lines(capsys)
    assert out[0] == "x=2.0" and len(out) == 2
    np.testing.assert_allclose(float(out[1][2:]), np.sin(2.0) * 2, rtol=1e-6)
    fjax.grad(fjax.grad(f))(1.0)
    assert lines(capsys)[0] == "x=1.0"


@needs_effects
def test_debug_print_under_jit_of_grad_and_grad_of_jit(capsys):
    f = lambda x: (fjax.debug.print("x={}", x), x**2)[1]
    np.testing.assert_allclose(fjax.jit(fjax.grad(f))(3.0), 6.0)
    assert lines(capsys) == ["x=3.0"]
    np.testing.assert_allclose(fjax.grad(fjax.jit(f))(3.0), 6.0)
    assert lines(capsys) == ["x=3.0"]
    np.testing.assert_allclose(fjax.value_and_grad(fjax.jit(f))(2.0)[1], 4.0)
    assert lines(capsys) == ["x=2.0"]


@needs_effects
@pytest.mark.parametrize("jit", [False, True])
def test_debug_print_in_scan_body(capsys, jit):
    def f(xs):
        def body(c, x):
            fjax.debug.print("c={c} x={x}", c=c, x=x)
            return c + x, c * x

        return lax.scan(body, 0.0, xs)

    f = fjax.jit(f) if jit else f
    c, ys = f(jnp.arange(3.0))
    np.testing.assert_allclose(c, 3.0)
    np.testing.assert_allclose(ys, [0.0, 0.0, 2.0])
    assert lines(capsys) == ["c=0.0 x=0.0", "c=0.0 x=1.0", "c=1.0 x=2.0"]


@needs_effects
def test_debug_print_in_scan_whose_results_are_unused(capsys):
    @fjax.jit
    def f(x):
        lax.scan(lambda c, _: (fjax.debug.print("{}", c) or c + 1, None), x, None, length=2)
        return x

    np.testing.assert_allclose(f(1.0), 1.0)
    assert lines(capsys) == ["1.0", "2.0"]


@needs_effects
@pytest.mark.parametrize("jit", [False, True])
def test_debug_print_in_while_and_fori(capsys, jit):
    def f(n):
        i = lax.while_loop(lambda i: i < n, lambda i: (fjax.debug.print("i={}", i), i + 1)[1], 0)
        s = lax.fori_loop(0, 2, lambda k, s: (fjax.debug.print("k={}", k), s + k)[1], 0)
        return i + s

    f = fjax.jit(f) if jit else f
    assert int(f(2)) == 3
    assert lines(capsys) == ["i=0", "i=1", "k=0", "k=1"]


@needs_effects
@pytest.mark.parametrize("jit", [False, True])
def test_debug_print_in_cond_branches(capsys, jit):
    def f(p, x):
        return lax.cond(p, lambda v: (fjax.debug.print("true {}", v), v + 1)[1], lambda v: v - 1, x)

    f = fjax.jit(f) if jit else f
    np.testing.assert_allclose(f(True, 1.0), 2.0)
    np.testing.assert_allclose(f(False, 1.0), 0.0)
    assert lines(capsys) == ["true 1.0"]
    g = lambda i: lax.switch(i, [lambda: fjax.debug.print("zero"), lambda: fjax.debug.print("one")])
    (fjax.jit(g) if jit else g)(1)
    assert lines(capsys) == ["one"]


@needs_effects
def test_debug_print_in_grad_of_scan(capsys):
    def f(x):
        def body(c, _):
            fjax.debug.print("c={}", c)
            return c * x, None

        return lax.scan(body, 1.0, None, length=3)[0]

    np.testing.assert_allclose(fjax.grad(f)(2.0), 12.0)
    assert lines(capsys) == ["c=1.0", "c=2.0", "c=4.0"]
    np.testing.assert_allclose(fjax.jit(fjax.grad(f))(2.0), 12.0)
    assert lines(capsys) == ["c=1.0", "c=2.0", "c=4.0"]


# ---- debug.callback ----------------------------------------------------------------------


def test_debug_callback_eager_values_and_static_args():
    got = []
    fjax.debug.callback(lambda a, tag, n=None: got.append((a, tag, n)), jnp.arange(2), "tag", n=None)
    ((a, tag, n),) = got
    assert type(a) is fjax.Array and tag == "tag" and n is None
    np.testing.assert_array_equal(a, [0, 1])
    got.clear()
    fjax.debug.callback(lambda tree: got.append(tree), {"w": 1.0, "b": [np.int32(2)]})
    assert type(got[0]["w"]) is fjax.Array and int(got[0]["b"][0]) == 2
    assert fjax.debug.callback(lambda: 5) is None
    with pytest.raises(TypeError, match="must be callable"):
        fjax.debug.callback(3, 1)
    fjax.debug.callback(ordered=True)(got.append, 7)
    assert int(got[-1]) == 7


@needs_effects
def test_debug_callback_in_jit_gets_copies_of_runtime_values():
    got = []

    @fjax.jit
    def f(x):
        y = jnp.tanh(x) * 2
        fjax.debug.callback(lambda v, w: got.append((v, w)), y, {"x": x})
        z = jnp.exp(y) + 1  # later kernels may reuse buffers: the callback's values must not change
        return z

    xs = [np.linspace(-1, 1, 5, dtype=np.float32) * k for k in (1.0, 2.0)]
    for x in xs:
        f(x)
    assert len(got) == 2
    for x, (v, w) in zip(xs, got):
        np.testing.assert_allclose(v, np.tanh(x) * 2, rtol=1e-6)
        np.testing.assert_allclose(w["x"], x)


@needs_effects
@given(st.integers(1, 4), st.integers(0, 2))
def test_debug_callback_vmap_sees_each_example(n, axis):
    shape = [2, 3, 2]
    shape[axis] = n
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    got = []
    fjax.vmap(lambda v: fjax.debug.callback(got.append, v), in_axes=axis)(x)
    assert len(got) == n
    for i, g in enumerate(got):
        np.testing.assert_array_equal(g, np.take(x, i, axis=axis))
    got.clear()
    fjax.jit(fjax.vmap(lambda v: fjax.debug.callback(got.append, v), in_axes=axis))(x)
    assert len(got) == n


# ---- pure_callback -------------------------------------------------------------------------


def test_pure_callback_eager_and_jit():
    def cb(x, y, *, scale):
        assert type(x) is fjax.Array
        return np.sin(np.asarray(x)) * scale + y

    x = np.linspace(0, 1, 4, dtype=np.float32)
    expect = np.sin(x) * 2 + 1

    def f(x):
        return fjax.pure_callback(cb, S(x.shape, x.dtype), x, 1.0, scale=2.0)

    np.testing.assert_allclose(f(x), expect, rtol=1e-6)
    np.testing.assert_allclose(fjax.jit(f)(x), expect, rtol=1e-6)
    jaxpr = str(fjax.make_jaxpr(f)(x))
    # (JAX prints its wrapper, ``callback=_FlatCallback(callback_func=<function cb ...>, ...)``)
    assert "pure_callback[\n      callback=cb\n" in jaxpr and "sharding=None\n      vmap_method=None" in jaxpr


def test_pure_callback_pytrees_and_dtype_canonicalization():
    out = fjax.pure_callback(
        lambda x: {"a": np.float64(x) * 2, "b": [np.ones(2, np.int64)]},
        {"a": S((), np.float32), "b": [S((2,), np.int32)]},
        1.5,
    )
    assert out["a"].dtype == np.float32 and float(out["a"]) == 3.0
    assert out["b"][0].dtype == np.int32
    # result_shape_dtypes may be arrays too
    r = fjax.pure_callback(lambda: np.zeros(3, np.float32), jnp.ones(3))
    assert r.shape == (3,) and r.dtype == np.float32
    assert fjax.pure_callback(lambda: None, None) is None


def test_pure_callback_errors():
    with pytest.raises(RuntimeError, match=r"output shape for return value #0: Expected: \(\), Actual: \(3,\)"):
        fjax.pure_callback(lambda x: np.ones(3, np.float32), S((), np.float32), 1.0)
    with pytest.raises(RuntimeError, match="output dtype for return value #1: Expected: float32, Actual: int32"):
        fjax.pure_callback(lambda: (np.float32(1), np.int32(1)), (S((), np.float32),) * 2)
    with pytest.raises(RuntimeError, match="incorrect output dtype"):
        fjax.jit(lambda x: fjax.pure_callback(lambda v: np.asarray(v, np.int32), S((), np.float32), x))(1.0)
    with pytest.raises(RuntimeError, match="tree structure"):
        fjax.pure_callback(lambda x: (x, x), S((), np.float32), 1.0)
    with pytest.raises(TypeError, match="shape` and `dtype`"):
        fjax.pure_callback(lambda x: x, 3, 1.0)
    with pytest.raises(ValueError, match="64-bit"):
        fjax.pure_callback(lambda x: x, S((), np.float64), 1.0)
    with pytest.raises(ValueError, match="vmap_method must be one of"):
        fjax.pure_callback(lambda x: x, S((), np.float32), 1.0, vmap_method="bad")
    with pytest.raises(TypeError, match="callable"):
        fjax.pure_callback(None, S((), np.float32), 1.0)


def test_pure_callback_64_bit_results_under_x64(x64):
    r = fjax.pure_callback(lambda x: np.asarray(x) * 2, S((), np.float64), np.float64(1.25))
    assert r.dtype == np.float64 and float(r) == 2.5


def test_pure_callback_is_not_differentiable():
    f = lambda x: fjax.pure_callback(lambda v: np.sin(np.asarray(v)), S((), np.float32), x)
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        fjax.grad(f)(1.0)
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        fjax.jvp(f, (1.0,), (1.0,))
    # a callback on values that are not differentiated is fine
    g = lambda x: fjax.pure_callback(lambda v: np.cos(np.asarray(v)), S((), np.float32), 2.0) * x
    np.testing.assert_allclose(fjax.grad(g)(1.0), np.cos(2.0), rtol=1e-6)
    np.testing.assert_allclose(fjax.jit(fjax.grad(g))(1.0), np.cos(2.0), rtol=1e-6)


def test_pure_callback_vmap_default_raises():
    f = lambda x: fjax.pure_callback(lambda v: v, S((), np.float32), x)
    with pytest.raises(NotImplementedError, match="vmap_method=None"):
        fjax.vmap(f)(jnp.ones(3))
    # unbatched arguments need no batching rule
    np.testing.assert_allclose(fjax.vmap(lambda x, y: f(y) + x, in_axes=(0, None))(jnp.ones(2), 2.0), [3.0, 3.0])


@given(
    st.sampled_from(["sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized"]),
    st.integers(0, 1),
    st.booleans(),
)
def test_pure_callback_vmap_methods(method, in_axis, jit):
    seen = []

    def cb(x, y):
        seen.append((x.shape, y.shape))
        return np.asarray(x) * 2 + np.asarray(y)

    def f(x, y):
        return fjax.pure_callback(cb, S((2,), np.float32), x, y, vmap_method=method)

    g = fjax.vmap(f, in_axes=(in_axis, None))
    g = fjax.jit(g) if jit else g
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    x_in = x if in_axis == 0 else x.T
    y = np.array([10.0, 20.0], np.float32)
    np.testing.assert_allclose(g(x_in, y), x * 2 + y)
    expected_calls = {
        "sequential": [((2,), (2,))] * 3,
        "sequential_unrolled": [((2,), (2,))] * 3,
        "expand_dims": [((3, 2), (1, 2))],
        "broadcast_all": [((3, 2), (3, 2))],
        "legacy_vectorized": [((3, 2), (2,))],
    }[method]
    assert seen == expected_calls


def test_pure_callback_unused_result_is_dropped_under_jit():
    calls = []

    def cb(x):
        calls.append(1)
        return x

    out = fjax.jit(lambda x: (fjax.pure_callback(cb, S((), np.float32), x), x + 1)[1])(1.0)
    np.testing.assert_allclose(out, 2.0)
    assert calls == []


@pytest.mark.parametrize("jit", [False, True])
def test_pure_callback_in_scan_body(jit):
    def f(xs):
        step = lambda c, x: (c + fjax.pure_callback(np.square, S((), np.float32), x), None)
        return lax.scan(step, 0.0, xs)[0]

    f = fjax.jit(f) if jit else f
    np.testing.assert_allclose(f(jnp.arange(4.0)), 14.0)


# ---- ensure_compile_time_eval ------------------------------------------------------------------


def test_ensure_compile_time_eval_outside_jit_is_a_no_op():
    with fjax.ensure_compile_time_eval():
        y = jnp.sin(1.0)
    assert type(y) is fjax.Array
    np.testing.assert_allclose(y, np.sin(1.0), rtol=1e-6)


def test_ensure_compile_time_eval_under_jit():
    seen = {}

    @fjax.jit
    def f(x):
        with fjax.ensure_compile_time_eval():
            y = jnp.sin(2.0)
            n = jnp.arange(3).sum()
            z = x + 1
            seen.update(y=y, n=n, z=z)
            if y > 0:  # concrete: Python control flow works
                z = z * 2
        return z + y + jnp.zeros(int(n))

    out = f(1.0)
    np.testing.assert_allclose(out, np.full(3, 4 + np.sin(2.0)), rtol=1e-6)
    assert type(seen["y"]) is fjax.Array and type(seen["n"]) is fjax.Array
    assert isinstance(seen["z"], fjax.core.Tracer)  # traced values stay traced
    jaxpr = str(fjax.make_jaxpr(f)(1.0))
    assert "sin" not in jaxpr and "iota" not in jaxpr
    # without the context manager the same operations are staged
    g = fjax.make_jaxpr(lambda x: jnp.sin(2.0) + x)(1.0)
    assert "sin" in str(g)


def test_ensure_compile_time_eval_restores_staging():
    @fjax.jit
    def f(x):
        with fjax.ensure_compile_time_eval():
            a = jnp.cos(0.0)
        b = jnp.cos(0.0)  # staged again after the block
        assert isinstance(b, fjax.core.Tracer) and not isinstance(a, fjax.core.Tracer)
        return x + a + b

    np.testing.assert_allclose(f(1.0), 3.0)


def test_jit_lower_and_eval_shape_take_shape_dtype_structs():
    import fjax.numpy as jnp

    f = fjax.jit(lambda x: jnp.sin(x) * 2)
    s = fjax.ShapeDtypeStruct((3,), np.float32)
    out = f.eval_shape(s)
    assert out.shape == (3,) and out.dtype == np.float32
    assert "def program" in f.lower(s).as_text()
    with pytest.raises(TypeError, match="ShapeDtypeStruct"):
        f(s)
