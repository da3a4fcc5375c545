"""Tests for fjax.custom_derivatives: custom_jvp and custom_vjp (JAX semantics)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
from fjax import lax
from fjax.core import UnexpectedTracerError
from fjax.custom_derivatives import SymbolicZero, custom_jvp, custom_vjp
from fjax.test_util import check_grads

finite = st.floats(-20.0, 20.0, allow_nan=False, width=32)


def _sum(x):
    return lax.reduce_sum(x, tuple(range(np.ndim(x))))


# ---------------------------------------------------------------------------------------------
# custom_jvp


@custom_jvp
def softplus(x):
    # log(1 + exp(x)): overflows for large x without a custom rule
    return lax.log1p(lax.exp(x))


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), lax.mul(lax.logistic(x), t)


@custom_jvp
def sin_wrong(x):
    return lax.sin(x)


@sin_wrong.defjvp
def _sin_wrong_jvp(primals, tangents):
    # deliberately not the true derivative: 3 * t, so tests can see the rule is used
    (x,), (t,) = primals, tangents
    return sin_wrong(x), lax.mul(3.0, t)


def test_custom_jvp_eager_and_jvp():
    assert np.allclose(softplus(1.0), np.log1p(np.exp(1.0)))
    y, t = fjax.jvp(softplus, (2.0,), (3.0,))
    assert np.allclose(y, np.log1p(np.exp(2.0)), rtol=1e-6)
    assert np.allclose(t, 3.0 / (1 + np.exp(-2.0)), rtol=1e-6)


def test_custom_jvp_rule_is_used_in_every_mode():
    x = 0.7
    assert np.allclose(fjax.jvp(sin_wrong, (x,), (1.0,))[1], 3.0)
    assert np.allclose(fjax.grad(sin_wrong)(x), 3.0)
    assert np.allclose(fjax.jit(fjax.grad(sin_wrong))(x), 3.0)
    assert np.allclose(fjax.grad(fjax.jit(sin_wrong))(x), 3.0)
    xs = np.linspace(0, 1, 4, dtype=np.float32)
    assert np.allclose(fjax.vmap(fjax.grad(sin_wrong))(xs), 3.0)
    # jvp of vmap: the batched primitive still carries the (vmapped) custom rule
    _, t = fjax.jvp(fjax.vmap(sin_wrong), (xs,), (np.ones(4, np.float32),))
    assert np.allclose(t, 3.0)
    assert np.allclose(fjax.grad(lambda v: _sum(fjax.vmap(sin_wrong)(v)))(xs), 3.0)
    assert np.allclose(fjax.vmap(sin_wrong)(xs), np.sin(xs))


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_custom_jvp_stable_where_autodiff_is_not():
    # d/dx softplus at 100 is 1; differentiating log1p(exp(x)) directly gives nan
    assert np.allclose(fjax.grad(softplus)(100.0), 1.0)
    assert np.allclose(fjax.jit(fjax.grad(softplus))(100.0), 1.0)


@given(finite)
def test_softplus_grad_matches_true_derivative(x):
    g = fjax.grad(softplus)(np.float32(x))
    assert np.allclose(g, 1.0 / (1.0 + np.exp(-np.float64(x))), rtol=2e-3, atol=1e-6)
    gg = fjax.grad(fjax.grad(softplus))(np.float32(x))
    s = 1.0 / (1.0 + np.exp(-np.float64(x)))
    assert np.allclose(gg, s * (1 - s), rtol=2e-3, atol=1e-6)


@given(st.floats(-3.0, 3.0, allow_nan=False, width=32))
def test_softplus_check_grads(x):
    check_grads(softplus, (np.float32(x),), order=2, modes=("fwd", "rev"))


def test_custom_jvp_grad_of_grad_uses_derivative_of_rule():
    @custom_jvp
    def f(x):
        return lax.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), lax.mul(lax.cos(x), t)

    x = 0.3
    assert np.allclose(fjax.grad(fjax.grad(f))(x), -np.sin(x), rtol=1e-5)
    assert np.allclose(fjax.grad(fjax.grad(fjax.grad(f)))(x), -np.cos(x), rtol=1e-5)
    h = fjax.jacfwd(fjax.grad(f))(np.float32(x))
    assert np.allclose(h, -np.sin(x), rtol=1e-5)


def test_custom_jvp_pytrees_and_multiple_args():
    @custom_jvp
    def f(xy, z):
        x, y = xy
        return {"a": lax.mul(x, y), "b": lax.sin(z)}

    @f.defjvp
    def f_jvp(primals, tangents):
        (x, y), z = primals
        (tx, ty), tz = tangents
        out = f((x, y), z)
        return out, {"a": lax.add(lax.mul(tx, y), lax.mul(x, ty)), "b": lax.mul(lax.cos(z), tz)}

    def loss(xy, z):
        o = f(xy, z)
        return lax.add(o["a"], o["b"])

    gxy, gz = fjax.grad(loss, (0, 1))((2.0, 3.0), 0.5)
    assert np.allclose(gxy, (3.0, 2.0)) and np.allclose(gz, np.cos(0.5))


def test_defjvps():
    @custom_jvp
    def f(x, y):
        return lax.mul(lax.sin(x), y)

    f.defjvps(lambda tx, ans, x, y: lax.mul(lax.mul(lax.cos(x), tx), y), lambda ty, ans, x, y: lax.mul(lax.sin(x), ty))
    gx, gy = fjax.grad(f, (0, 1))(1.0, 2.0)
    assert np.allclose(gx, 2 * np.cos(1.0)) and np.allclose(gy, np.sin(1.0))
    _, t = fjax.jvp(f, (1.0, 2.0), (1.0, 0.0))
    assert np.allclose(t, 2 * np.cos(1.0))

    @custom_jvp
    def g(x, y):
        return lax.mul(x, y)

    g.defjvps(None, lambda ty, ans, x, y: lax.mul(x, ty))
    assert np.allclose(fjax.grad(g, (0, 1))(2.0, 3.0), (0.0, 2.0))


def test_nondiff_argnums_static_and_array():
    from functools import partial

    @partial(custom_jvp, nondiff_argnums=(0,))
    def app(f, x):
        return f(x)

    @app.defjvp
    def app_jvp(f, primals, tangents):
        (x,), (t,) = primals, tangents
        return app(f, x), lax.mul(2.0, t)

    assert np.allclose(fjax.grad(lambda x: app(lax.sin, x))(1.0), 2.0)
    assert np.allclose(fjax.jit(fjax.grad(lambda x: app(lax.sin, x)))(1.0), 2.0)

    @partial(custom_jvp, nondiff_argnums=(1,))
    def scale(x, k):
        return lax.mul(x, k)

    @scale.defjvp
    def scale_jvp(k, primals, tangents):
        (x,), (t,) = primals, tangents
        return scale(x, k), lax.mul(t, k)

    # an array (even a traced one) in a nondiff position gets no tangent (stop_gradient)
    assert np.allclose(fjax.grad(scale)(2.0, 3.0), 3.0)
    assert np.allclose(fjax.grad(lambda k: scale(2.0, k))(3.0), 0.0)
    assert np.allclose(fjax.jit(fjax.grad(scale))(2.0, 3.0), 3.0)
    ks = np.arange(3, dtype=np.float32)
    assert np.allclose(fjax.vmap(fjax.grad(scale), (None, 0))(2.0, ks), ks)
    assert np.allclose(fjax.vmap(scale, (None, 0))(2.0, ks), 2 * ks)


def test_custom_jvp_python_control_flow_under_grad():
    @custom_jvp
    def f(x):
        return x if float(x) > 0 else lax.neg(x)

    f.defjvp(lambda p, t: (f(p[0]), t[0] if float(p[0]) > 0 else lax.neg(t[0])))
    assert np.allclose(fjax.grad(f)(2.0), 1.0)
    assert np.allclose(fjax.grad(f)(-2.0), -1.0)


def test_custom_jvp_make_jaxpr():
    j = fjax.make_jaxpr(sin_wrong)(1.0)
    s = str(j)
    assert "custom_jvp_call[" in s and "name=sin_wrong" in s and "sin" in s and "jvp=_sin_wrong_jvp" in s
    assert np.allclose(j(np.float32(0.5))[0], np.sin(0.5))
    jg = fjax.make_jaxpr(fjax.grad(sin_wrong))(1.0)
    # the primal call stays, unused (as JAX's make_jaxpr keeps it); the derivative is the rule's
    assert "_:f32[] = custom_jvp_call[" in str(jg) and str(jg).count("custom_jvp_call") == 1


def test_custom_jvp_symbolic_zeros():
    seen = []

    @custom_jvp
    def f(x, y):
        return lax.mul(x, y)

    def f_jvp(primals, tangents):
        x, y = primals
        tx, ty = tangents
        seen.append((type(tx) is SymbolicZero, type(ty) is SymbolicZero))
        out = lax.mul(x, 0.0)
        if type(tx) is not SymbolicZero:
            out = lax.add(out, lax.mul(tx, y))
        if type(ty) is not SymbolicZero:
            out = lax.add(out, lax.mul(x, ty))
        return f(x, y), out

    f.defjvp(f_jvp, symbolic_zeros=True)
    assert np.allclose(fjax.grad(f)(2.0, 3.0), 3.0)
    assert seen[-1] == (False, True)
    assert np.allclose(fjax.grad(f, 1)(2.0, 3.0), 2.0)
    assert seen[-1] == (True, False)


def test_custom_jvp_errors():
    @custom_jvp
    def f(x):
        return x

    with pytest.raises(AttributeError, match="No JVP defined"):
        f(1.0)
    f.defjvp(lambda p, t: (p[0], t))  # tangent is a tuple, primal a leaf
    with pytest.raises(TypeError, match="equal container \\(pytree\\) structures"):
        fjax.jvp(f, (1.0,), (1.0,))
    f.defjvp(lambda p, t: (p[0], lax.broadcast_in_dim(t[0], (3,), ())))
    with pytest.raises(TypeError, match=r"Expected float32\[\] \(tangent type of float32\[\]\) but got float32\[3\]"):
        fjax.jvp(f, (1.0,), (1.0,))
    f.defjvp(lambda p, t: p[0])
    with pytest.raises(TypeError, match="must produce a pair"):
        fjax.jvp(f, (1.0,), (1.0,))
    f.defjvp(lambda p, t: ((p[0], p[0]), (t[0], t[0])))
    with pytest.raises(TypeError, match="first element had container/pytree structure"):
        fjax.jvp(fjax.jit(f), (1.0,), (1.0,))  # the primal function was traced by jit: structures compared

    @custom_jvp
    def g(x, y):
        return x

    with pytest.raises(TypeError, match="nondiff_argnums"):
        custom_jvp(lambda k, x: x, nondiff_argnums=(0,)).defjvps(None)
    del g


# ---------------------------------------------------------------------------------------------
# custom_vjp


@custom_vjp
def sin_mul(x, y):
    return lax.mul(lax.sin(x), y)


def _sin_mul_fwd(x, y):
    return sin_mul(x, y), (lax.cos(x), lax.sin(x), y)


def _sin_mul_bwd(res, g):
    c, s, y = res
    return lax.mul(lax.mul(c, g), y), lax.mul(s, g)


sin_mul.defvjp(_sin_mul_fwd, _sin_mul_bwd)


@custom_vjp
def clip_gradient(x):
    return x


clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (lax.clamp(-1.0, g, 1.0),))


def test_custom_vjp_grad_closed_form():
    assert np.allclose(sin_mul(1.0, 2.0), np.sin(1.0) * 2)
    gx, gy = fjax.grad(sin_mul, (0, 1))(1.0, 2.0)
    assert np.allclose(gx, 2 * np.cos(1.0)) and np.allclose(gy, np.sin(1.0))
    y, vjp = fjax.vjp(sin_mul, 1.0, 2.0)
    assert np.allclose(vjp(np.float32(2.0)), (4 * np.cos(1.0), 2 * np.sin(1.0)))


def test_custom_vjp_rule_is_used():
    f = lambda x: clip_gradient(lax.mul(10.0, x))  # noqa: E731
    assert np.allclose(fjax.grad(lambda x: lax.mul(5.0, f(x)))(1.0), 10.0)  # ct 5 clipped to 1, times 10
    assert np.allclose(fjax.jit(fjax.grad(lambda x: lax.mul(5.0, f(x))))(1.0), 10.0)
    assert np.allclose(fjax.grad(fjax.jit(lambda x: lax.mul(5.0, f(x))))(1.0), 10.0)


def test_custom_vjp_jit_vmap():
    assert np.allclose(fjax.jit(fjax.grad(sin_mul))(1.0, 2.0), 2 * np.cos(1.0))
    assert np.allclose(fjax.grad(fjax.jit(sin_mul))(1.0, 2.0), 2 * np.cos(1.0))
    xs = np.linspace(-1, 1, 5, dtype=np.float32)
    assert np.allclose(fjax.vmap(fjax.grad(sin_mul))(xs, np.full(5, 2.0, np.float32)), 2 * np.cos(xs), rtol=1e-6)
    assert np.allclose(fjax.vmap(sin_mul, (0, None))(xs, 2.0), 2 * np.sin(xs), rtol=1e-6)
    # grad of vmap: the batched primitive with an unbatched argument sums its cotangent
    gx, gy = fjax.grad(lambda x, y: _sum(fjax.vmap(sin_mul, (0, None))(x, y)), (0, 1))(xs, 2.0)
    assert np.allclose(gx, 2 * np.cos(xs), rtol=1e-6) and np.allclose(gy, np.sum(np.sin(xs)), rtol=1e-5)
    assert np.allclose(
        fjax.jacrev(lambda x: fjax.vmap(sin_mul, (0, None))(x, 2.0))(xs), np.diag(2 * np.cos(xs)), atol=1e-6
    )


def test_custom_vjp_grad_of_grad():
    x, y = 0.4, 2.0
    assert np.allclose(fjax.grad(fjax.grad(sin_mul))(x, y), -np.sin(x) * y, rtol=1e-5)
    # forward over reverse: fwd calls sin_mul itself, which forward mode cannot enter (as in JAX)
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        fjax.jacfwd(fjax.grad(sin_mul))(np.float32(x), y)
    assert np.allclose(fjax.jit(fjax.grad(fjax.grad(sin_mul)))(x, y), -np.sin(x) * y, rtol=1e-5)


@given(st.floats(-3.0, 3.0, allow_nan=False, width=32), st.floats(-3.0, 3.0, allow_nan=False, width=32))
def test_custom_vjp_check_grads(x, y):
    check_grads(sin_mul, (np.float32(x), np.float32(y)), order=2, modes=("rev",))


def test_custom_vjp_jvp_raises():
    with pytest.raises(TypeError, match=r"can't apply forward-mode autodiff \(jvp\) to a custom_vjp function."):
        fjax.jvp(sin_mul, (1.0, 2.0), (1.0, 0.0))
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        fjax.jvp(fjax.jit(sin_mul), (1.0, 2.0), (1.0, 0.0))
    # no perturbed input: no error (nothing to differentiate)
    y, t = fjax.jvp(lambda x: sin_mul(2.0, 3.0), (1.0,), (1.0,))
    assert np.allclose(t, 0.0)


def test_custom_vjp_pytrees_none_and_nondiff():
    from functools import partial

    @custom_vjp
    def f(d, z):
        return lax.add(lax.mul(d["a"], d["b"]), z)

    def fwd(d, z):
        return f(d, z), (d["a"], d["b"])

    def bwd(res, g):
        a, b = res
        return {"a": lax.mul(b, g), "b": lax.mul(a, g)}, None

    f.defvjp(fwd, bwd)
    gd, gz = fjax.grad(f, (0, 1))({"a": 2.0, "b": 3.0}, 1.0)
    assert np.allclose(gd["a"], 3.0) and np.allclose(gd["b"], 2.0) and np.allclose(gz, 0.0)

    @partial(custom_vjp, nondiff_argnums=(0,))
    def app(fn, x):
        return fn(x)

    app.defvjp(lambda fn, x: (app(fn, x), x), lambda fn, x, g: (lax.mul(fn(x), g),))
    assert np.allclose(fjax.grad(lambda x: app(lax.exp, x))(0.5), np.exp(0.5))

    @partial(custom_vjp, nondiff_argnums=(1,))
    def scale(x, k):
        return lax.mul(x, k)

    scale.defvjp(lambda x, k: (scale(x, k), None), lambda k, _, g: (lax.mul(g, k),))
    assert np.allclose(fjax.grad(scale)(1.0, 3.0), 3.0)
    with pytest.raises(UnexpectedTracerError, match="nondiff_argnums"):
        fjax.grad(lambda k: scale(1.0, k))(3.0)


def test_custom_vjp_errors():
    @custom_vjp
    def f(x):
        return lax.sin(x)

    with pytest.raises(AttributeError, match="No VJP defined"):
        f(1.0)
    f.defvjp(lambda x: (f(x), x), lambda r, g: (g, g))
    with pytest.raises(TypeError, match=r"bwd output structure .* for primal input structure"):
        fjax.grad(f)(1.0)
    f.defvjp(lambda x: (f(x), x), lambda r, g: g)
    with pytest.raises(TypeError, match="must produce an output with the same container"):
        fjax.grad(f)(1.0)
    f.defvjp(lambda x: (f(x), x), lambda r, g: (lax.broadcast_in_dim(g, (3,), ()),))
    with pytest.raises(ValueError, match="shapes do not match"):
        fjax.grad(f)(1.0)
    f.defvjp(lambda x: f(x), lambda r, g: (g,))
    with pytest.raises(TypeError, match="must produce a pair"):
        fjax.grad(f)(1.0)


def test_custom_vjp_make_jaxpr():
    s = str(fjax.make_jaxpr(sin_mul)(1.0, 2.0))
    assert "custom_vjp_call[" in s and "fwd=_sin_mul_fwd" in s and "bwd=_sin_mul_bwd" in s
    s = str(fjax.make_jaxpr(fjax.grad(sin_mul))(1.0, 2.0))
    # as JAX's: the primal call stays, unused, and the derivative is the fwd/bwd rules' equations
    assert "_:f32[] = custom_vjp_call[" in s and s.count("custom_vjp_call") == 1 and "cos a" in s


def test_custom_vjp_symbolic_zeros():
    seen = []

    @custom_vjp
    def f(x, y):
        return lax.mul(x, y)

    def fwd(x, y):
        seen.append((x.perturbed, y.perturbed))
        return f(x.value, y.value), (x.value, y.value)

    def bwd(res, g):
        x, y = res
        return lax.mul(y, g), lax.mul(x, g)

    f.defvjp(fwd, bwd, symbolic_zeros=True)
    assert np.allclose(fjax.grad(f)(2.0, 3.0), 3.0)
    assert seen[-1] == (True, False)
