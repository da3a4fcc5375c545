"""Trace caching of the control-flow functions and cond's pass-through outputs, as JAX's.

``lax.scan``/``fori_loop``/``while_loop``/``cond``/``switch`` trace their functions once per
(function object, input avals, pytree structure, trace context) and reuse the jaxpr and the
constants it closed over, as JAX's ``weakref_lru_cache``-d tracing does. The trace counts below
were recorded with JAX 0.10.2 (``/tmp/jaxenv``, CPU) by running the same calls with a counter in
each traced function; the values of the closure tests also come from that run.

``cond``/``switch`` outputs that are the same operand in every branch are forwarded (left out of
the ``cond`` equation, the operand returned as is), as JAX does at trace time: under ``vmap``
with a batched predicate they stay unbatched.
"""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.lax.control_flow import common


class Counter:
    def __init__(self) -> None:
        self.n = 0

    def take(self) -> int:
        n, self.n = self.n, 0
        return n


# ---- closures: a cached trace must never hand back another closure's values -----------------


def test_fresh_closure_each_call_sees_its_own_values():
    xs = jnp.arange(4.0)

    def run(w):
        def body(c, x):
            return c + w * x, None

        return float(lax.scan(body, 0.0, xs)[0])

    # JAX 0.10.2: [6.0, 12.0, 18.0]
    assert [run(w) for w in (1.0, 2.0, jnp.float32(3.0))] == [6.0, 12.0, 18.0]
    assert run(jnp.array(-1.0)) == -6.0


def test_lambdas_in_a_loop_capture_each_value():
    outs = []
    for w in [jnp.array(1.0), jnp.array(2.0), jnp.array(3.0)]:
        outs.append(float(lax.scan(lambda c, x: (c + w, None), 0.0, None, length=2)[0]))
    assert outs == [2.0, 4.0, 6.0]  # JAX 0.10.2


def test_a_new_function_at_a_dead_functions_address_is_traced_again():
    # functions made and dropped in a loop often reuse one address: the cache must not match
    # a new function to a dead one's entry by id
    for k in range(40):
        w = jnp.float32(k)
        out = lax.scan(lambda c, x, w=w: (c + w, None), jnp.float32(0), None, length=3)[0]
        assert float(out) == 3.0 * k
        out = lax.cond(k % 2 == 0, lambda a: a + w, lambda a: a - w, jnp.float32(1))
        assert float(out) == (1 + k if k % 2 == 0 else 1 - k)


@given(st.lists(st.floats(-4, 4, width=32), min_size=1, max_size=4))
def test_closures_over_arrays_under_jit_vmap_grad(ws):
    xs = jnp.arange(3.0)
    for w in ws:
        w = np.float32(w)

        def f(c, w=w):
            return lax.scan(lambda c, x: (c * w + x, None), c, xs)[0]

        def ref(c):
            for x in (0.0, 1.0, 2.0):
                c = c * w + x
            return c

        np.testing.assert_allclose(float(f(1.5)), ref(np.float32(1.5)), rtol=1e-5)
        np.testing.assert_allclose(float(fjax.jit(f)(1.5)), ref(np.float32(1.5)), rtol=1e-5)
        np.testing.assert_allclose(np.asarray(fjax.vmap(f)(jnp.array([1.0, 2.0]))), [ref(1.0), ref(2.0)], rtol=1e-5)
        np.testing.assert_allclose(float(fjax.grad(f)(1.5)), float(w) ** 3, rtol=1e-5, atol=1e-6)


def test_same_function_reading_a_changed_global_reuses_the_first_trace_as_jax():
    # JAX 0.10.2 keys its trace cache on the function object: a global read at trace time is a
    # constant of the cached jaxpr, so a later change is not seen (both calls give 3.0 there)
    state = {"y": jnp.array(1.0)}

    def body(c, x):
        return c + state["y"], None

    assert float(lax.scan(body, 0.0, None, length=3)[0]) == 3.0
    state["y"] = jnp.array(2.0)
    assert float(lax.scan(body, 0.0, None, length=3)[0]) == 3.0
    # a new trace (new avals) reads the new value
    assert float(lax.scan(body, jnp.float32(0), None, length=3)[0]) == 6.0


def test_closed_over_tracer_of_a_finished_trace_is_not_reused():
    # the body reads a value that is a tracer of the jit trace that set it: a later trace (of
    # another jit signature, or eager) must trace again rather than reuse the dead tracer
    state = {}

    def body(c, x):
        return c + state["w"], None

    def outer(w):
        state["w"] = w
        return lax.scan(body, 0.0, None, length=3)[0]

    assert float(fjax.jit(outer)(jnp.float32(1.0))) == 3.0
    assert float(fjax.jit(outer)(jnp.float32(2.0))) == 6.0
    np.testing.assert_allclose(np.asarray(fjax.vmap(outer)(jnp.array([1.0, 2.0]))), [3.0, 6.0])
    np.testing.assert_allclose(np.asarray(fjax.vmap(fjax.jit(outer))(jnp.array([2.0, 3.0]))), [6.0, 9.0])
    state["w"] = jnp.float32(4.0)
    assert float(lax.scan(body, 0.0, None, length=3)[0]) == 12.0


def test_threads_share_the_cache_safely():
    xs = jnp.arange(5.0)
    count = Counter()

    def body(c, x):
        count.n += 1
        return c + x, c

    errors: list = []

    def work():
        try:
            for _ in range(20):
                c, ys = lax.scan(body, jnp.float32(0), xs)
                assert float(c) == 10.0
                np.testing.assert_allclose(np.asarray(ys), [0, 0, 1, 3, 6])
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert count.n <= 3  # at most one trace per thread racing on the first call


# ---- trace counts (JAX 0.10.2's in the comments) ----------------------------------------------


def test_scan_traces_once_per_signature():
    count = Counter()

    def body(c, x):
        count.n += 1
        return c + x, c * 2

    xs = jnp.arange(4.0)
    for _ in range(3):
        lax.scan(body, jnp.float32(0), xs)
    assert count.take() == 1  # JAX: 1
    lax.scan(body, jnp.float32(0), jnp.arange(5.0))
    assert count.take() == 0  # a new length: the body's avals are the same
    lax.scan(body, jnp.float32(0), xs, reverse=True)
    lax.scan(body, jnp.float32(0), xs, unroll=2)
    assert count.take() == 0  # JAX: 0
    lax.scan(body, jnp.zeros(2), jnp.ones((4, 2)))
    assert count.take() == 1  # a new shape
    lax.scan(body, jnp.int32(0), jnp.arange(4))
    assert count.take() == 1  # a new dtype
    lax.scan(body, 0.0, xs)
    assert count.take() == 1  # weak float32 carry: another aval
    lax.scan(body, 0.0, xs)
    assert count.take() == 0


def test_scan_retraces_for_a_new_tree_or_function():
    count = Counter()

    def body(c, x):
        count.n += 1
        return c, x

    xs = jnp.arange(4.0)
    lax.scan(body, (0.0, 1.0), xs)
    lax.scan(body, (0.0, 1.0), xs)
    lax.scan(body, [0.0, 1.0], xs)
    lax.scan(body, {"a": 0.0, "b": 1.0}, xs)
    assert count.take() == 3  # JAX: 3
    for _ in range(2):
        lax.scan(lambda c, x: body(c, x), (0.0, 1.0), xs)
    assert count.take() == 2  # JAX: 2 (a new lambda each time)


def test_scan_cache_under_jit_vmap_grad():
    count = Counter()

    def body(c, x):
        count.n += 1
        return c * x + 1.0, None

    xs = jnp.arange(1.0, 4.0)
    lax.scan(body, 1.0, xs)
    assert count.take() == 1
    f = fjax.jit(lambda c: lax.scan(body, c, xs)[0])
    f(1.0)
    f(2.0)
    fjax.jit(lambda c: lax.scan(body, c, xs)[0])(3.0)
    assert count.take() == 0  # JAX: 0 (the eager trace is reused)
    vf = fjax.vmap(lambda c: lax.scan(body, c, xs)[0])
    np.testing.assert_allclose(np.asarray(vf(jnp.ones(3))), [16.0] * 3)
    vf(jnp.ones(3))
    assert count.take() == 1  # a strong float32 carry: one new trace, then reused
    g = fjax.grad(lambda c: lax.scan(body, c, xs)[0])
    assert float(g(1.0)) == 6.0
    assert float(g(2.0)) == 6.0
    assert count.take() == 0  # JAX: 0


def test_trace_context_is_part_of_the_key():
    count = Counter()

    def body(c, x):
        count.n += 1
        return c + x, None

    xs = jnp.arange(4.0)
    lax.scan(body, jnp.float32(0), xs)
    assert count.take() == 1
    with fjax.enable_x64(True):
        lax.scan(body, jnp.float32(0), xs)
    assert count.take() == 1
    lax.scan(body, jnp.float32(0), xs)
    assert count.take() == 0


def test_named_axes_in_scope_are_part_of_the_key():
    # the body reads the size of a vmapped axis: a vmap of another size traces again
    # (JAX 0.10.2: [6, 6, 6] then [10] * 5, two traces per body)
    count = Counter()

    def body(c, x):
        count.n += 1
        return c + lax.axis_size("i"), None

    def f(x):
        return lax.scan(body, jnp.float32(0), None, length=2)[0] + 0 * x

    np.testing.assert_array_equal(np.asarray(fjax.vmap(f, axis_name="i")(jnp.ones(3))), [6.0] * 3)
    np.testing.assert_array_equal(np.asarray(fjax.vmap(f, axis_name="i")(jnp.ones(5))), [10.0] * 5)
    np.testing.assert_array_equal(np.asarray(fjax.vmap(f, axis_name="i")(jnp.ones(3))), [6.0] * 3)
    assert count.take() == 2


def test_weak_carry_promotion_traces_as_jax():
    count = Counter()

    def body(c, x):
        count.n += 1
        return c + 1.5, None

    # a weak int carry whose output is a float: traced again with the promoted carry, then both
    # signatures are cached (JAX: 2 for two calls)
    for _ in range(2):
        out = lax.scan(body, 0, None, length=2)[0]
        assert out.dtype == np.float32 and float(out) == 3.0
    assert count.take() == 2

    def add_x(c, x):
        count.n += 1
        return c + x, None

    # a weak float32 carry whose output is a strong float32: the types match (JAX: 1 trace)
    lax.scan(add_x, 0.0, jnp.arange(3.0))
    assert count.take() == 1


def test_make_jaxpr_keeps_a_weak_carry_as_jax():
    # JAX 0.10.2 prints no convert_element_type outside the scan for a weak float carry
    text = str(fjax.make_jaxpr(lambda c, xs: lax.scan(lambda c, x: (c * x, jnp.sin(c)), c, xs))(1.0, jnp.ones(5)))
    head = text.split("scan[")[0]
    assert "convert_element_type" not in head


def test_cond_switch_while_fori_trace_once():
    count = Counter()

    def t(x):
        count.n += 1
        return x + 1

    def f(x):
        count.n += 1
        return x - 1

    lax.cond(True, t, f, 1.0)
    lax.cond(False, t, f, 1.0)
    lax.cond(jnp.array(True), t, f, 1.0)
    assert count.take() == 2  # JAX: 2
    lax.switch(1, [t, f, t], 1.0)
    lax.switch(0, [t, f, t], 1.0)
    assert count.take() == 2  # JAX: 2 (t is traced once for both of its branches)

    def wc(c):
        count.n += 1
        return c < 3

    def wb(c):
        count.n += 1
        return c + 1

    assert int(lax.while_loop(wc, wb, 0)) == 3
    assert int(lax.while_loop(wc, wb, 0)) == 3
    assert count.take() == 2  # JAX: 2

    def fb(i, c):
        count.n += 1
        return c + i

    assert int(lax.fori_loop(0, 3, fb, 0)) == 3
    assert int(lax.fori_loop(0, 3, fb, 0)) == 3
    assert int(lax.fori_loop(0, 5, fb, 0)) == 10
    assert count.take() == 1  # JAX: 1
    dyn = fjax.jit(lambda u: lax.fori_loop(0, u, fb, 0))
    assert int(dyn(3)) == 3
    assert int(dyn(4)) == 6
    assert count.take() == 1  # JAX: 1


# ---- what the cache holds -------------------------------------------------------------------


def test_cache_does_not_keep_functions_alive():
    def make():
        big = jnp.ones(1000)

        def body(c, x):
            return c + big.sum(), None

        return body

    body = make()
    lax.scan(body, 0.0, None, length=2)
    lax.cond(True, body, body, 0.0, 0.0)
    ref = weakref.ref(body)
    del body
    gc.collect()
    assert ref() is None


def test_cache_is_bounded(monkeypatch):
    cache = common.TraceCache(maxsize=4)
    fns = [lambda c, x, k=k: (c + k, None) for k in range(10)]
    for fn in fns:
        cache.get((fn,), ("k",), lambda fn=fn: (fn, []))
    assert len(cache) == 4
    # the most recently used ones stay
    hit = cache.get((fns[-1],), ("k",), lambda: pytest.fail("expected a hit"))
    assert hit[0] is fns[-1]


def test_clear_caches_forgets_traces():
    count = Counter()

    def body(c, x):
        count.n += 1
        return c, None

    lax.scan(body, 0.0, None, length=2)
    lax.scan(body, 0.0, None, length=2)
    assert count.take() == 1
    fjax.clear_caches()
    lax.scan(body, 0.0, None, length=2)
    assert count.take() == 1


class _Unhashable:
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, k: float) -> None:
        self.k = k
        self.calls = 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Unhashable)

    def __call__(self, c, x):
        self.calls += 1
        return c + self.k, None


class _NoWeakref:
    __slots__ = ("calls", "k")

    def __init__(self, k: float) -> None:
        self.k = k
        self.calls = 0

    def __call__(self, c, x):
        self.calls += 1
        return c + self.k, None


@pytest.mark.parametrize("cls", [_Unhashable, _NoWeakref])
def test_functions_that_cannot_be_keys_are_traced_each_time(cls):
    f = cls(2.0)
    assert float(lax.scan(f, 0.0, None, length=3)[0]) == 6.0
    f.k = 3.0
    assert float(lax.scan(f, 0.0, None, length=3)[0]) == 9.0
    assert f.calls == 2
    g = cls(1.0)
    assert float(lax.cond(True, g, g, 0.0, None)[0]) == 1.0


# ---- cond/switch pass-through outputs ---------------------------------------------------------


def _pass_some(p, x, y):
    return lax.cond(p, lambda x, y: (x, y + 1), lambda x, y: (x, y * 2), x, y)


def _pass_all(p, x, y):
    return lax.cond(p, lambda x, y: (x, y), lambda x, y: (x, y), x, y)


def _swapped(p, x, y):
    return lax.cond(p, lambda x, y: (y, x), lambda x, y: (x, y), x, y)


_W = jnp.ones(3)


def _pass_const(p, x):
    return lax.cond(p, lambda x: (_W, x), lambda x: (_W, -x), x)


def _switch_some(i, x, y):
    return lax.switch(i, [lambda x, y: (x, y), lambda x, y: (x, y + 1), lambda x, y: (x, y)], x, y)


# printed by JAX 0.10.2: jax.make_jaxpr(fn)(*args) with the functions above (jax for fjax)
_JAX_JAXPRS = {
    "pass_some": """{ lambda ; a:bool[] b:f32[] c:f32[]. let
    d:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a
    e:f32[] = cond[
      branches=(
        { lambda ; f:f32[] g:f32[]. let h:f32[] = mul g 2.0:f32[] in (h,) }
        { lambda ; i:f32[] j:f32[]. let k:f32[] = add j 1.0:f32[] in (k,) }
      )
    ] d b c
  in (b, e) }""",
    "pass_all": """{ lambda ; a:bool[] b:f32[] c:f32[]. let
    d:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a
    cond[
      branches=(
        { lambda ; e:f32[] f:f32[]. let  in () }
        { lambda ; g:f32[] h:f32[]. let  in () }
      )
    ] d b c
  in (b, c) }""",
    "swapped": """{ lambda ; a:bool[] b:f32[] c:f32[]. let
    d:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a
    e:f32[] f:f32[] = cond[
      branches=(
        { lambda ; g:f32[] h:f32[]. let  in (g, h) }
        { lambda ; i:f32[] j:f32[]. let  in (j, i) }
      )
    ] d b c
  in (e, f) }""",
    "pass_const": """{ lambda a:f32[3]; b:bool[] c:f32[]. let
    d:i32[] = convert_element_type[new_dtype=int32 weak_type=False] b
    e:f32[] = cond[
      branches=(
        { lambda ; f:f32[3] g:f32[]. let h:f32[] = neg g in (h,) }
        { lambda ; i:f32[3] j:f32[]. let  in (j,) }
      )
    ] d a c
  in (a, e) }""",
    "switch_some": """{ lambda ; a:i32[] b:f32[] c:f32[]. let
    d:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a
    e:i32[] = clamp 0:i32[] d 2:i32[]
    f:f32[] = cond[
      branches=(
        { lambda ; g:f32[] h:f32[]. let  in (h,) }
        { lambda ; i:f32[] j:f32[]. let k:f32[] = add j 1.0:f32[] in (k,) }
        { lambda ; l:f32[] m:f32[]. let  in (m,) }
      )
    ] e b c
  in (b, f) }""",
}


@pytest.mark.parametrize(
    "name, fn, args",
    [
        ("pass_some", _pass_some, (True, 1.0, 2.0)),
        ("pass_all", _pass_all, (True, 1.0, 2.0)),
        ("swapped", _swapped, (True, 1.0, 2.0)),
        ("pass_const", _pass_const, (True, 1.0)),
        ("switch_some", _switch_some, (1, 1.0, 2.0)),
    ],
)
def test_pass_through_outputs_leave_the_cond_as_jax(name, fn, args):
    assert str(fjax.make_jaxpr(fn)(*args)) == _JAX_JAXPRS[name]


def test_pass_through_outputs_stay_unbatched_under_vmap():
    preds = jnp.array([True, False, True])
    ys = jnp.array([1.0, 2.0, 3.0])
    x = jnp.ones(2)
    # the forwarded operand is unbatched: out_axes=None accepts it only if it stays so
    fx, fy = fjax.vmap(lambda p, y: _pass_some(p, x, y), out_axes=(None, 0))(preds, ys)
    assert fx.shape == (2,)
    np.testing.assert_array_equal(np.asarray(fy), [2.0, 4.0, 4.0])
    # the same with switch and a batched index; JAX 0.10.2 gives the (2, 2) and (2,) shapes
    # with the default out_axes
    outs = fjax.vmap(lambda i, y: _switch_some(i, x, y))(jnp.array([0, 1]), jnp.array([1.0, 2.0]))
    assert [o.shape for o in outs] == [(2, 2), (2,)]
    np.testing.assert_array_equal(np.asarray(outs[1]), [1.0, 3.0])
    sx, _ = fjax.vmap(lambda i, y: _switch_some(i, x, y), out_axes=(None, 0))(jnp.array([0, 1]), ys[:2])
    assert sx.shape == (2,)


def test_vmapped_state_passes_through_cond_unbatched():
    # flax nnx's test_vmap_and_cond_passthrough in plain JAX terms: a broadcast (unbatched)
    # leaf of the state goes through cond untouched, a vectorized one is updated per member
    state = {"broadcast": jnp.array(1), "step": jnp.zeros((8,), jnp.uint32)}
    index = jnp.arange(8)

    def f(broadcast, step, i):
        def increment(s):
            return {"broadcast": s["broadcast"], "step": s["step"] + 1}

        out = lax.cond(i % 2 == 0, increment, lambda s: s, {"broadcast": broadcast, "step": step})
        return out["broadcast"], out["step"]

    b, step = fjax.vmap(f, in_axes=(None, 0, 0), out_axes=(None, 0))(state["broadcast"], state["step"], index)
    assert b.shape == () and int(b) == 1
    np.testing.assert_array_equal(np.asarray(step), [1, 0, 1, 0, 1, 0, 1, 0])


def test_forwarded_output_keeps_weak_type_and_derivatives():
    r = lax.cond(True, lambda a: a, lambda a: a, 1.0)
    assert r.dtype == np.float32 and r.weak_type  # JAX 0.10.2: weak float32
    assert float(fjax.grad(lambda x: _pass_some(True, x, 2.0)[0])(3.0)) == 1.0
    _, tangents = fjax.jvp(lambda x: _pass_some(True, x, 2.0), (3.0,), (1.0,))
    assert [float(t) for t in tangents] == [1.0, 0.0]  # JAX 0.10.2
    g = fjax.grad(lambda y: _pass_some(False, 1.0, y)[1] + _pass_some(False, y, 0.0)[0])(3.0)
    assert float(g) == 3.0


@given(
    st.lists(st.sampled_from(["x", "y", "f", "g"]), min_size=1, max_size=4),
    st.lists(st.sampled_from(["x", "y", "f", "g"]), min_size=1, max_size=4),
)
def test_forwarding_matches_numpy(true_outs, false_outs):
    n = min(len(true_outs), len(false_outs))
    true_outs, false_outs = true_outs[:n], false_outs[:n]

    def pick(names, x, y):
        table = {"x": x, "y": y, "f": x * 2.0 + y, "g": jnp.sin(y)}
        return tuple(table[k] for k in names)

    def fn(p, x, y):
        return lax.cond(p, lambda x, y: pick(true_outs, x, y), lambda x, y: pick(false_outs, x, y), x, y)

    def ref(p, x, y):
        table = {"x": x, "y": y, "f": x * 2.0 + y, "g": np.sin(y)}
        return [table[k] for k in (true_outs if p else false_outs)]

    x, y = np.array([0.5, 0.25], np.float32), np.array([1.0, -2.0], np.float32)
    for p in (True, False):
        for got, want in zip(fn(p, x, y), ref(p, x, y)):
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
        for got, want in zip(fjax.jit(fn)(p, x, y), ref(p, x, y)):
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    preds = np.array([True, False])
    xs = np.array([[0.5, 0.25], [1.5, -1.0]], np.float32)
    outs = fjax.vmap(fn, in_axes=(0, 0, None))(preds, xs, y)
    for k, o in enumerate(outs):
        want = np.stack([ref(p, xv, y)[k] for p, xv in zip(preds, xs)])
        np.testing.assert_allclose(np.asarray(o), want, rtol=1e-6)
    # a pass-through of the same unbatched operand in every branch stays unbatched
    axes = tuple(None if (a == b == "y") else 0 for a, b in zip(true_outs, false_outs))
    fjax.vmap(fn, in_axes=(0, 0, None), out_axes=axes)(preds, xs, y)
