"""Core: tracing to jaxprs, printing, the trace stack, errors users meet, transform nesting."""

import gc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
from fjax import core, lax
from fjax.interpreters import ad


def f32(*xs):
    return fjax.Array(np.asarray(xs, np.float32))


# ---- jaxprs and printing ------------------------------------------------------------------


def test_make_jaxpr_golden_one_line():
    jaxpr = fjax.make_jaxpr(lax.sin)(f32(1, 2, 3))
    assert str(jaxpr) == "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }"


def test_make_jaxpr_golden_multiline_with_literal():
    jaxpr = fjax.make_jaxpr(lambda x: lax.add(lax.mul(lax.sin(x), 2.0), 1.0))(f32(1, 2, 3))
    assert str(jaxpr) == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = sin a\n"
        "    c:f32[3] = mul b 2.0:f32[]\n"
        "    d:f32[3] = add c 1.0:f32[]\n"
        "  in (d,) }"
    )


def test_make_jaxpr_consts_and_params():
    c = f32(1, 2, 3)
    jaxpr = fjax.make_jaxpr(lambda x: lax.reduce_sum(lax.add(x, c), (0,)))(f32(4, 5, 6))
    assert str(jaxpr) == (
        "{ lambda a:f32[3]; b:f32[3]. let\n    c:f32[3] = add b a\n"
        "    d:f32[] = reduce_sum[axes=(0,) out_sharding=None] c\n  in (d,) }"
    )
    assert len(jaxpr.consts) == 1
    eqn = jaxpr.jaxpr.eqns[1]
    assert eqn.primitive.name == "reduce_sum"
    assert eqn.params == {"axes": (0,)}
    assert jaxpr.jaxpr.invars[0].aval.shape == (3,)


def test_make_jaxpr_nested_jit_prints_subjaxpr():
    inner = fjax.jit(lambda y: lax.mul(y, 2.0))
    s = str(fjax.make_jaxpr(lambda x: inner(x))(f32(1, 2)))
    assert "jit[" in s and "mul" in s and "name=<lambda>" in s


def test_make_jaxpr_static_argnums():
    jaxpr = fjax.make_jaxpr(lambda x, n: lax.integer_pow(x, n), static_argnums=1)(f32(1.0), 3)
    assert "integer_pow[y=3]" in str(jaxpr)


def test_check_jaxpr_catches_bad_eqn():
    jaxpr = fjax.make_jaxpr(lax.sin)(f32(1, 2, 3)).jaxpr
    bad = core.Jaxpr(
        [], jaxpr.invars, jaxpr.outvars, [jaxpr.eqns[0].replace(outvars=[core.Var(core.ShapedArray((4,), np.float32))])]
    )
    with pytest.raises(core.JaxprTypeError):
        core.check_jaxpr(bad)


def test_eval_jaxpr_roundtrip():
    closed = fjax.make_jaxpr(lambda x: lax.mul(lax.exp(x), x))(f32(1, 2))
    out = core.eval_jaxpr(closed.jaxpr, closed.consts, f32(0.5, 1.5))[0]
    np.testing.assert_allclose(out, np.exp([0.5, 1.5]) * [0.5, 1.5], rtol=1e-6)


# ---- Array ---------------------------------------------------------------------------------


def test_array_repr_and_immutability():
    x = f32(1, 2)
    assert repr(x) == "Array([1., 2.], dtype=float32)"
    with pytest.raises(TypeError, match=r"\.at"):
        x[0] = 3.0
    a = np.asarray(x)
    assert not a.flags.writeable
    assert np.shares_memory(a, np.asarray(x))
    assert x.block_until_ready() is x
    assert float(f32(3.0)[0] if False else fjax.Array(np.float32(3.0) * np.ones((), np.float32))) == 3.0


def test_weak_type_repr():
    y = lax.add(fjax.Array(np.array(1.0, np.float32), True), 1.0)
    assert repr(y) == "Array(2., dtype=float32, weak_type=True)"


# ---- errors --------------------------------------------------------------------------------


def test_bool_on_tracer_under_jit_points_to_cond():
    @fjax.jit
    def f(x):
        if lax.gt(x, 0.0):
            return x
        return lax.neg(x)

    # JAX 0.10.2's message: the traced function, the argument the value depends on, the error page
    # (whose text points to lax.cond and static_argnums)
    with pytest.raises(fjax.TracerBoolConversionError) as e:
        f(f32(1.0))
    assert str(e.value) == (
        "Attempted boolean conversion of traced array with shape bool[1].\n"
        f"The error occurred while tracing the function f at {__file__}:{f.__wrapped__.__code__.co_firstlineno} "
        "for jit. This concrete value was not available in Python because it depends on the value of the argument x.\n"
        "See https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerBoolConversionError"
    )


def test_python_control_flow_under_grad_works():
    def f(x):
        if lax.gt(x, 0.0):
            return lax.mul(x, x)
        return lax.neg(x)

    assert float(fjax.grad(f)(3.0)) == 6.0
    assert float(fjax.grad(f)(-3.0)) == -1.0


def test_leaked_tracer_raises():
    box = []

    def f(x):
        box.append(x)
        return x

    fjax.make_jaxpr(f)(f32(1.0))
    with pytest.raises(fjax.UnexpectedTracerError):
        lax.sin(box[0])


def test_shape_mismatch_names_op_and_shapes():
    with pytest.raises(TypeError, match=r"add got incompatible shapes for broadcasting: \(3,\), \(4,\)"):
        lax.add(f32(1, 2, 3), f32(1, 2, 3, 4))


def test_dtype_mismatch_error():
    with pytest.raises(TypeError, match="same dtypes"):
        lax.add(f32(1.0), fjax.Array(np.array([1], np.int32)))


def test_non_array_argument():
    with pytest.raises(TypeError, match="not a valid"):
        lax.sin("hello")
    with pytest.raises(TypeError, match="str"):
        fjax.grad(lambda x: x)("x")


def test_grad_int_input_and_nonscalar_output():
    with pytest.raises(TypeError, match="allow_int"):
        fjax.grad(lambda x: x)(fjax.Array(np.array(1, np.int32)))
    with pytest.raises(TypeError, match="scalar-output"):
        fjax.grad(lax.sin)(f32(1, 2))


def test_unsupported_dtype():
    with pytest.raises(TypeError):
        lax.sin(np.array(["a"]))


# ---- transforms nest without perturbation confusion ------------------------------------------


def test_no_perturbation_confusion():
    # d/dx [x * d/dy (x + y)] at y = 1 is 1 (a confused implementation gives 2)
    def f(x):
        def g(y):
            return lax.add(x, y)

        return lax.mul(x, fjax.grad(g)(1.0))

    assert float(fjax.grad(f)(1.0)) == 1.0


@given(st.floats(-3, 3), st.integers(1, 4))
def test_higher_order_derivatives_of_sin(x, order):
    f = lax.sin
    for _ in range(order):
        f = fjax.grad(f)
    expected = [np.sin, np.cos, lambda v: -np.sin(v), lambda v: -np.cos(v)][order % 4](np.float32(x))
    np.testing.assert_allclose(float(f(np.float32(x))), expected, rtol=1e-4, atol=1e-5)


def test_composition_matrix():
    x = f32(0.3, -0.8, 1.2)

    def f(v):
        return lax.reduce_sum(lax.mul(lax.sin(v), lax.exp(lax.mul(v, 0.5))), (0,))

    h1 = np.asarray(fjax.jacfwd(fjax.jacrev(f))(x))
    h2 = np.asarray(fjax.jacrev(fjax.jacfwd(f))(x))
    h3 = np.asarray(fjax.hessian(f)(x))
    h4 = np.stack([np.asarray(fjax.jvp(fjax.grad(f), (x,), (fjax.Array(e),))[1]) for e in np.eye(3, dtype=np.float32)])
    h5 = np.stack(
        [
            np.asarray(fjax.grad(lambda v, e=e: fjax.jvp(f, (v,), (fjax.Array(e),))[1])(x))
            for e in np.eye(3, dtype=np.float32)
        ]
    )
    for h in (h2, h3, h4, h5):
        np.testing.assert_allclose(h, h1, rtol=1e-5, atol=1e-6)
    # closed form: d2/dx2 sin(x) e^{x/2} = e^{x/2} (cos x - 3/4 sin x)
    xv = np.asarray(x, np.float64)
    np.testing.assert_allclose(np.diag(h1), np.exp(xv / 2) * (np.cos(xv) - 0.75 * np.sin(xv)), rtol=1e-5)


def test_vmap_of_grad_and_grad_of_vmap():
    w = f32(0.5, -1.0)
    xs = fjax.Array(np.random.RandomState(0).randn(5, 2).astype(np.float32))

    def loss(w, x):
        return lax.tanh(lax.reduce_sum(lax.mul(w, x), (0,)))

    per_ex = fjax.vmap(fjax.grad(loss), in_axes=(None, 0))(w, xs)
    loop = np.stack(
        [np.asarray(fjax.grad(loss)(w, xs[i] if False else fjax.Array(np.asarray(xs)[i]))) for i in range(5)]
    )
    np.testing.assert_allclose(per_ex, loop, rtol=1e-6)
    g = fjax.grad(lambda w: lax.reduce_sum(fjax.vmap(loss, in_axes=(None, 0))(w, xs), (0,)))(w)
    np.testing.assert_allclose(g, loop.sum(0), rtol=1e-5)


def test_jit_inside_grad_inside_vmap():
    f = fjax.jit(lambda x: lax.mul(lax.sin(x), x))
    xs = f32(0.1, 0.2, 0.3)
    out = fjax.vmap(fjax.grad(f))(xs)
    xv = np.asarray(xs)
    np.testing.assert_allclose(out, np.cos(xv) * xv + np.sin(xv), rtol=1e-6)
    out2 = fjax.jit(fjax.vmap(fjax.grad(f)))(xs)
    np.testing.assert_allclose(out2, out, rtol=1e-6)


def _live_tracers() -> int:
    n = 0
    for o in gc.get_objects():
        try:
            n += isinstance(o, core.Tracer)
        except ReferenceError:  # a weakref.proxy whose referent is gone (left by earlier tests)
            pass
    return n


def test_grad_memory_is_released():
    x = fjax.Array(np.ones(1000, np.float32))

    def f(x):
        return lax.reduce_sum(lax.mul(lax.sin(x), lax.cos(x)), (0,))

    g = fjax.grad(f)
    g(x)
    gc.collect()
    before = _live_tracers()
    for _ in range(50):
        g(x)
    gc.collect()
    after = _live_tracers()
    assert after <= before
    assert core._state.stack == [core._eval_main]


def test_linearize_residuals_only_what_is_needed():
    # sin(x) * 2: the linear map needs only cos(x) as residual
    x = f32(0.1, 0.2)
    _, jaxpr, consts, _ = ad.linearize_flat(lambda v: [lax.mul(lax.sin(v), 2.0)], [x])
    assert len(consts) == 1
    np.testing.assert_allclose(consts[0], np.cos(np.asarray(x)), rtol=1e-6)


def test_jit_cache_and_retrace():
    traces = []

    @fjax.jit
    def f(x):
        traces.append(1)
        return lax.mul(x, 2.0)

    f(f32(1, 2))
    f(f32(3, 4))
    assert len(traces) == 1
    f(f32(1, 2, 3))
    assert len(traces) == 2


def test_jit_unhashable_static():
    f = fjax.jit(lambda x, s: x, static_argnums=1)
    with pytest.raises(ValueError, match="hashable"):  # JAX raises ValueError
        f(f32(1.0), [1, 2])


@pytest.mark.parametrize("backend", ["interpret", "numba"])
def test_jit_backends_agree(backend):
    old = fjax.config.fjax_jit_backend
    fjax.config.update("fjax_jit_backend", backend)
    try:
        f = fjax.jit(lambda x: lax.reduce_sum(lax.mul(lax.tanh(x), x), (0,)))
        x = f32(0.1, -0.4, 2.0)
        np.testing.assert_allclose(f(x), np.sum(np.tanh(np.asarray(x)) * np.asarray(x)), rtol=1e-6)
        np.testing.assert_allclose(
            fjax.grad(f)(x), fjax.grad(lambda v: lax.reduce_sum(lax.mul(lax.tanh(v), v), (0,)))(x), rtol=1e-6
        )
    finally:
        fjax.config.update("fjax_jit_backend", old)
    with pytest.raises(ValueError, match="fjax_jit_backend"):
        fjax.config.update("fjax_jit_backend", "cuda-please")


def test_disable_jit_context_manager():
    seen = []

    @fjax.jit
    def f(x):
        seen.append(type(x).__name__)
        return lax.mul(x, 2.0)

    with fjax.disable_jit():
        np.testing.assert_allclose(f(f32(1.0, 2.0)), [2.0, 4.0])
    assert seen == ["Array"]  # ran eagerly: a concrete value, not a tracer
    f(f32(1.0, 2.0))
    assert seen[-1] != "Array" and not fjax.config.jax_disable_jit
