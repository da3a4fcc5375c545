"""Tests of ``fjax.experimental.jet`` (Taylor-mode differentiation).

Each rule's Taylor terms are checked against derivatives along the input path obtained from
nested ``fjax.jvp``: with ``x(t) = x0 + sum_k s_k t**k / k!``, term ``k`` of
``jet(f, (x0,), ((s_1, ..., s_K),))`` is ``d^k/dt^k f(x(t))`` at ``t = 0``. Some closed forms
are checked against numpy, and a few values recorded from JAX 0.10.2 pin the scaling.
"""

from math import factorial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.experimental import jet as jet_module
from fjax.experimental.jet import fact, jet, jet2, jet_rules


def _path_derivs(f, primals, series):
    """``d^k/dt^k f(x(t))`` at 0 for k = 1..K, by K nested forward-mode derivatives."""
    order = len(series[0])

    def g(t):
        args = [
            x0 + sum(s[k] * t ** (k + 1) / factorial(k + 1) for k in range(order)) for x0, s in zip(primals, series)
        ]
        return f(*args)

    out, h = [], g
    for _ in range(order):
        h = (lambda h: lambda t: fjax.jvp(h, (t,), (jnp.ones_like(t),))[1])(h)
        out.append(np.asarray(h(np.float64(0.0))))
    return np.asarray(g(np.float64(0.0))), out


def _check_against_jvp(f, primals, series, rtol=1e-7, atol=1e-9):
    p_ref, d_ref = _path_derivs(f, primals, series)
    p, terms = jet(f, tuple(primals), tuple(tuple(s) for s in series))
    np.testing.assert_allclose(np.asarray(p), p_ref, rtol=rtol, atol=atol)
    assert len(terms) == len(series[0])
    for k, (a, b) in enumerate(zip(terms, d_ref)):
        scale = max(1.0, float(np.max(np.abs(b))))
        np.testing.assert_allclose(np.asarray(a), b, rtol=rtol, atol=atol * scale, err_msg=f"term {k + 1}")


def _rand(seed, lo, hi, shape=(3,)):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


# (name, function, domain of the primal)
UNARY = [
    ("sin", jnp.sin, (-2, 2)),
    ("cos", jnp.cos, (-2, 2)),
    ("tan", jnp.tan, (-1, 1)),
    ("sinh", jnp.sinh, (-2, 2)),
    ("cosh", jnp.cosh, (-2, 2)),
    ("tanh", jnp.tanh, (-2, 2)),
    ("exp", jnp.exp, (-2, 2)),
    ("exp2", jnp.exp2, (-2, 2)),
    ("expm1", jnp.expm1, (-2, 2)),
    ("log", jnp.log, (0.5, 3)),
    ("log1p", jnp.log1p, (-0.5, 2)),
    ("sqrt", jnp.sqrt, (0.5, 3)),
    ("rsqrt", lax.rsqrt, (0.5, 3)),
    ("cbrt", jnp.cbrt, (-3, -0.5)),
    ("square", jnp.square, (-2, 2)),
    ("logistic", lax.logistic, (-3, 3)),
    ("erf", lax.erf, (-2, 2)),
    ("erfc", lax.erfc, (-2, 2)),
    ("erf_inv", lax.erf_inv, (-0.8, 0.8)),
    ("asin", jnp.arcsin, (-0.8, 0.8)),
    ("acos", jnp.arccos, (-0.8, 0.8)),
    ("atan", jnp.arctan, (-2, 2)),
    ("asinh", jnp.arcsinh, (-2, 2)),
    ("acosh", jnp.arccosh, (1.5, 3)),
    ("atanh", jnp.arctanh, (-0.8, 0.8)),
    ("lgamma", lax.lgamma, (0.5, 4)),
    ("digamma", lax.digamma, (0.5, 4)),
    ("abs", jnp.abs, (0.2, 2)),
    ("neg_abs", lambda x: jnp.abs(-x), (0.2, 2)),
    ("cube", lambda x: x**3, (-2, 2)),
    ("inv_square", lambda x: x**-2, (0.5, 2)),
    ("pow_const", lambda x: x**2.5, (0.5, 2)),
    ("reciprocal", lambda x: 1.0 / x, (0.5, 2)),
    ("relu_pos", fjax.nn.relu, (0.2, 2)),
    ("softplus", fjax.nn.softplus, (-2, 2)),
    ("sort", lambda x: jnp.sort(x) * jnp.arange(1.0, 4.0), (-2, 2)),
    ("top_k", lambda x: lax.top_k(jnp.sin(x), 2)[0], (-2, 2)),
]


@pytest.mark.parametrize("name,fn,dom", UNARY, ids=[u[0] for u in UNARY])
@settings(max_examples=4)
@given(seed=st.integers(0, 2**31), order=st.integers(1, 4))
def test_unary_rules_match_nested_jvp(name, fn, dom, seed, order):
    with fjax.enable_x64():
        x = _rand(seed, *dom)
        s = [_rand(seed + k + 1, -1, 1) for k in range(order)]
        _check_against_jvp(fn, [x], [s])


BINARY = [
    ("mul", lambda x, y: x * y, (-2, 2), (-2, 2)),
    ("div", lambda x, y: x / y, (-2, 2), (0.5, 2)),
    ("pow", lambda x, y: x**y, (0.5, 2), (-2, 2)),
    ("atan2", jnp.arctan2, (-2, 2), (-2, 2)),
    ("max", jnp.maximum, (-2, 2), (-2, 2)),
    ("min", jnp.minimum, (-2, 2), (-2, 2)),
    ("rem", jnp.fmod, (2, 5), (0.7, 1.3)),
    ("sub_add", lambda x, y: (x - y) + 2 * y, (-2, 2), (-2, 2)),
    ("clamp", lambda x, y: lax.clamp(-0.5, x, y), (-2, 2), (0, 1)),
    ("polygamma", lambda x, y: lax.polygamma(jnp.ones_like(x), x) * y, (0.5, 3), (-1, 1)),
]


@pytest.mark.parametrize("name,fn,dx,dy", BINARY, ids=[b[0] for b in BINARY])
@settings(max_examples=4)
@given(seed=st.integers(0, 2**31), order=st.integers(1, 4))
def test_binary_rules_match_nested_jvp(name, fn, dx, dy, seed, order):
    with fjax.enable_x64():
        x, y = _rand(seed, *dx), _rand(seed + 99, *dy)
        sx = [_rand(seed + k + 1, -1, 1) for k in range(order)]
        sy = [_rand(seed + k + 50, -1, 1) for k in range(order)]
        _check_against_jvp(fn, [x, y], [sx, sy])


def _structural(x, w):
    """Exercises the linear, indexing and reduction rules."""
    a = jnp.reshape(x, (2, 3)) @ w  # dot_general (2, 4)
    b = jnp.concatenate([a, jnp.pad(a[:, 1:3], ((0, 0), (1, 1)))], axis=1).T  # (8, 2)
    c = jnp.cumsum(b, axis=0) + jnp.cumprod(1 + 0.1 * b, axis=0) + lax.cummax(b, axis=0)
    d = c[jnp.array([0, 3, 5])]  # gather
    e = lax.dynamic_update_slice(c, d[:2] * 2, (1, 0))
    f = e.at[jnp.array([1, 1, 6])].add(d)  # scatter-add
    g = jnp.where(f > 0, jnp.sin(f), f**2) + jnp.clip(f, -0.5, 0.5)
    h = lax.dynamic_slice(g, (2, 0), (4, 2))
    return jnp.sum(h, axis=0) + jnp.max(g, axis=0) * jnp.prod(1 + 0.1 * g[::-1][:3], axis=0) + jnp.mean(g**2)


@settings(max_examples=6)
@given(seed=st.integers(0, 2**31), order=st.integers(1, 4))
def test_structural_rules_match_nested_jvp(seed, order):
    with fjax.enable_x64():
        x, w = _rand(seed, -1, 1, (6,)), _rand(seed + 7, -1, 1, (3, 4))
        sx = [_rand(seed + k + 1, -1, 1, (6,)) for k in range(order)]
        sw = [_rand(seed + k + 30, -1, 1, (3, 4)) for k in range(order)]
        _check_against_jvp(_structural, [x, w], [sx, sw])


def _structural2(x, k):
    """conv, the other cumulative ops and reductions, scatter and squeeze."""
    y = lax.conv_general_dilated(x[None, None], k[None, None], (1,), "SAME")[0, 0]  # (6,)
    z = lax.cumlogsumexp(y) + lax.cummin(y, reverse=True) + jnp.min(jnp.reshape(y, (2, 3)), axis=1).repeat(3)
    z = z.at[jnp.array([0, 4])].set(jnp.tanh(y[:2]))  # scatter
    w = jnp.squeeze(jnp.expand_dims(z, 0), 0)
    return jnp.sum(w * lax.rsqrt(1.0 + y * y)) + lax.reduce_precision(w, 11, 52)


@settings(max_examples=4)
@given(seed=st.integers(0, 2**31), order=st.integers(1, 4))
def test_more_structural_rules_match_nested_jvp(seed, order):
    with fjax.enable_x64():
        x, k = _rand(seed, -1, 1, (6,)), _rand(seed + 7, -1, 1, (3,))
        sx = [_rand(seed + k + 1, -1, 1, (6,)) for k in range(order)]
        sk = [_rand(seed + k + 30, -1, 1, (3,)) for k in range(order)]
        _check_against_jvp(_structural2, [x, k], [sx, sk])


def _mlp(params, x):
    h = x
    for w, b in params[:-1]:
        h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    return fjax.nn.log_softmax(h @ w + b)


@settings(max_examples=4)
@given(seed=st.integers(0, 2**31), order=st.integers(1, 4))
def test_mlp_matches_nested_jvp(seed, order):
    rng = np.random.default_rng(seed)
    with fjax.enable_x64():
        params = [(rng.normal(size=(4, 5)) * 0.5, rng.normal(size=5)), (rng.normal(size=(5, 3)) * 0.5, np.zeros(3))]
        x = rng.normal(size=(2, 4))
        s = [rng.normal(size=(2, 4)) for _ in range(order)]
        _check_against_jvp(lambda x: _mlp(params, x), [x], [s])


# ---- closed forms (numpy) --------------------------------------------------------------------


@settings(max_examples=8)
@given(seed=st.integers(0, 2**31), order=st.integers(1, 4))
def test_closed_forms_on_a_line(seed, order):
    # along x(t) = x0 + v t the k-th derivative of f is f^(k)(x0) v^k
    x0, v = _rand(seed, 0.5, 2), _rand(seed + 1, -1, 1)
    series = [v] + [np.zeros(3)] * (order - 1)
    with fjax.enable_x64():
        checks = [
            (jnp.exp, lambda k: np.exp(x0)),
            (jnp.sin, lambda k: np.sin(x0 + k * np.pi / 2)),
            (jnp.log, lambda k: (-1.0) ** (k - 1) * factorial(k - 1) / x0**k),
            (lambda x: x**3.5, lambda k: np.prod([3.5 - i for i in range(k)]) * x0 ** (3.5 - k)),
        ]
        for f, deriv in checks:
            _, terms = jet(f, (x0,), (series,))
            for k, t in enumerate(terms, 1):
                np.testing.assert_allclose(np.asarray(t), deriv(k) * v**k, rtol=1e-10, atol=1e-12)


def test_unscaled_coefficients_jet2():
    with fjax.enable_x64():
        x0 = np.array([0.3, -0.4])
        # exp(x0 + t) = exp(x0) sum t^k / k!
        _, terms = jet2(jnp.exp, (x0,), ([np.ones(2), np.zeros(2), np.zeros(2)],))
        for k, t in enumerate(terms, 1):
            np.testing.assert_allclose(np.asarray(t), np.exp(x0) / factorial(k), rtol=1e-12)
        # the two conventions agree up to the factorials
        _, scaled = jet(jnp.tanh, (x0,), ([np.ones(2), np.full(2, 2.0)],))
        _, raw = jet2(jnp.tanh, (x0,), ([np.ones(2), np.ones(2)],))
        np.testing.assert_allclose(np.asarray(scaled[1]), 2 * np.asarray(raw[1]), rtol=1e-12)


# ---- values recorded from JAX 0.10.2 -----------------------------------------------------------
# made on /tmp/jaxenv with ``from jax.experimental.jet import jet`` and float32 inputs, e.g.
# ``jet(jnp.sin, (0.5,), ((1., 0., 0.),))``; printed with repr and copied here.


def test_values_recorded_from_jax():
    p, t = jet(jnp.sin, (0.5,), ((1.0, 0.0, 0.0),))
    np.testing.assert_allclose(np.asarray(p), 0.47942555, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(t), [0.87758255, -0.47942567, -0.8775833], rtol=2e-6)
    assert t[0].dtype == np.float32 and t[0].weak_type
    # the docstring example of JAX: sin(z^3) at z = 0.5
    h0, h1, h2 = 0.5**3.0, 3.0 * 0.5**2.0, 6.0 * 0.5
    f0, (f1, f2) = jet(jnp.sin, (h0,), ((h1, h2),))
    np.testing.assert_allclose([float(f0), float(f1), float(f2)], [0.12467473, 0.74414825, 2.9064636], rtol=2e-6)
    p, t = jet(jnp.exp, (0.5,), ((1.0, 0.0, 0.0, 0.0),), factorial_scaled=False)
    np.testing.assert_allclose(np.asarray(t), [1.6487212, 0.8243606, 0.2747869, 0.06869672], rtol=2e-6)
    np.testing.assert_allclose([float(fact(k)) for k in range(1, 6)], [1, 2, 6, 24, 120], rtol=2e-6)
    # compositions, order 3 and 4, float32
    f = lambda x: jnp.tanh(x) * jnp.log1p(x**2) / (1 + jnp.exp(-x))  # noqa: E731
    p, t = jet(f, (0.3,), ((0.7, -0.2, 0.5, 0.1),))
    np.testing.assert_allclose(float(p), 0.01442118, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(t), [0.10048862, 0.42441168, 0.50478935, -2.0863743], rtol=1e-5)
    g = lambda x, y: jnp.arctan2(x, y) + jnp.sqrt(x * x + y * y) * jnp.maximum(x, y)  # noqa: E731
    p, t = jet(g, (0.3, -0.6), ((0.7, -0.2, 0.5), (0.1, 0.4, -0.3)))
    np.testing.assert_allclose(float(p), 2.8791912, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(t), [-0.46334368, 0.91263443, -0.51617867], rtol=1e-5)
    x = jnp.array([0.1, 0.5, -0.3])
    s = (jnp.array([1.0, 0.0, -1.0]), jnp.array([0.5, 0.5, 0.5]), jnp.zeros(3))
    p, t = jet(lambda x: jnp.sum(fjax.nn.softmax(x) ** 2), (x,), (s,))
    np.testing.assert_allclose(float(p), 0.36751792, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(t), [0.03350985, 0.1695526, 0.02804794], rtol=1e-5)
    # as JAX: lax.mul of a float16 primal and a float32 term is refused
    with pytest.raises(TypeError):
        jet(lambda x: x * x, (jnp.float16(1),), ((1.0,),))


def test_pytree_outputs_and_constants():
    out, terms = jet(lambda x: {"a": x, "b": (x * 2,)}, (1.0,), ((1.0, 2.0),))
    assert set(out) == {"a", "b"} and isinstance(terms["b"], tuple)
    np.testing.assert_allclose([float(v) for v in terms["b"][0]], [2.0, 4.0])
    np.testing.assert_allclose([float(v) for v in terms["a"]], [1.0, 2.0])
    # an output that does not depend on the input gets zero terms (JAX returns the value as is)
    p, t = jet(lambda x: 3.0, (1.0,), ((1.0, 2.0),))
    assert p == 3.0 and [float(v) for v in t] == [0.0, 0.0]
    # integer-valued outputs (comparisons, argmax) carry no series
    p, t = jet(lambda x: jnp.argmax(x), (jnp.array([1.0, 3.0, 2.0]),), ((jnp.ones(3),),))
    assert int(p) == 1 and float(t[0]) == 0.0


def test_ties_abs_and_reduce_max_follow_jax():
    # JAX's jet averages the terms of tied maxima and takes abs' slope as +1 at 0
    _, t = jet(jnp.maximum, (1.0, 1.0), ((2.0,), (4.0,)))
    assert float(t[0]) == 3.0
    _, t = jet(jnp.abs, (0.0,), ((-2.0,),))
    assert float(t[0]) == -2.0
    x = jnp.array([1.0, 3.0, 3.0])
    _, t = jet(jnp.max, (x,), ((jnp.array([5.0, 1.0, 2.0]),),))
    assert float(t[0]) == 1.5


# ---- composition with jit, grad, vmap and the call-like primitives -----------------------------


def _f(x):
    return jnp.sin(x) * jnp.exp(-x * x)


def test_jit_of_jet_and_jet_of_jit():
    x = jnp.array([0.3, -0.7])
    s = ([jnp.ones(2), jnp.zeros(2), jnp.ones(2)],)
    p_ref, t_ref = jet(_f, (x,), s)
    p1, t1 = fjax.jit(lambda x, a, b, c: jet(_f, (x,), ([a, b, c],)))(x, *s[0])
    p2, t2 = jet(fjax.jit(_f), (x,), s)
    for p, t in [(p1, t1), (p2, t2)]:
        np.testing.assert_allclose(np.asarray(p), np.asarray(p_ref), rtol=1e-6)
        for a, b in zip(t, t_ref):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=1e-6)


def test_grad_through_jet_and_jet_of_grad():
    with fjax.enable_x64():
        x0 = np.float64(0.4)
        # d/dx of the second derivative of f is f'''(x)
        third = fjax.grad(lambda x: jet(_f, (x,), ((1.0, 0.0),))[1][1])(x0)
        _, d = _path_derivs(_f, [x0], [[1.0, 0.0, 0.0]])
        np.testing.assert_allclose(float(third), d[2], rtol=1e-9)
        # jet of grad: the terms are the derivatives of f'
        _, t = jet(fjax.grad(_f), (x0,), ((1.0, 0.0),))
        np.testing.assert_allclose([float(v) for v in t], d[1:3], rtol=1e-9)


def test_vmap_of_jet_and_jet_of_vmap():
    xs = jnp.array([0.1, 0.5, -0.3])
    p, t = fjax.vmap(lambda x: jet(_f, (x,), ((1.0, 0.0),)))(xs)
    p2, t2 = jet(fjax.vmap(_f), (xs,), ((jnp.ones(3), jnp.zeros(3)),))
    for a, b in zip(t, t2):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    for i in range(3):
        _, ti = jet(_f, (xs[i],), ((1.0, 0.0),))
        np.testing.assert_allclose(float(t[1][i]), float(ti[1]), rtol=1e-5)


@fjax.custom_jvp
def _softclip(x):
    return jnp.tanh(x) * 2.0


_softclip.defjvp(lambda primals, tangents: (_softclip(primals[0]), 123.0 * tangents[0]))


@fjax.custom_vjp
def _cvjp(x):
    return jnp.sin(x)


_cvjp.defvjp(lambda x: (jnp.sin(x), x), lambda r, g: (g * 0.0,))


@settings(max_examples=3)
@given(seed=st.integers(0, 2**31), order=st.integers(1, 3))
def test_call_like_primitives(seed, order):
    # checkpoint, custom_jvp/custom_vjp (their primal functions, as JAX's jet) and control flow
    def f(x):
        y = fjax.checkpoint(lambda z: jnp.sin(z) * z)(x)
        y = y + _softclip(x) + _cvjp(x)
        y = lax.cond(jnp.sum(x) > 0, lambda z: jnp.exp(z) * 0.5, lambda z: jnp.cos(z), y)
        c, ys = lax.scan(lambda c, a: (c * jnp.tanh(a), c + a), jnp.ones_like(x), jnp.stack([x, y]))
        w = lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) + x, y)
        return c + jnp.sum(ys, axis=0) + w

    def f_ref(x):  # the same without the call-like primitives
        y = jnp.sin(x) * x + jnp.tanh(x) * 2.0 + jnp.sin(x)
        y = jnp.exp(y) * 0.5 if float(jnp.sum(x)) > 0 else jnp.cos(y)
        c = jnp.ones_like(x) * jnp.tanh(x) * jnp.tanh(y)
        ys = jnp.ones_like(x) + x + jnp.tanh(x) + y
        w = y
        for _ in range(3):
            w = jnp.sin(w) + x
        return c + ys + w

    with fjax.enable_x64():
        x = _rand(seed, -1, 1)
        s = [_rand(seed + k + 1, -1, 1) for k in range(order)]
        p, t = jet(f, (x,), (s,))
        p_ref, t_ref = jet(f_ref, (x,), (s,))
        np.testing.assert_allclose(np.asarray(p), np.asarray(p_ref), rtol=1e-10)
        for a, b in zip(t, t_ref):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-11)
        _check_against_jvp(f_ref, [x], [s])


def test_nested_jet_and_low_precision_dtypes():
    # the inner jet's first term is cos; the outer one differentiates it
    p, t = jet(lambda x: jet(jnp.sin, (x,), ((1.0,),))[1][0], (0.3,), ((1.0,),))
    np.testing.assert_allclose([float(p), float(t[0])], [np.cos(0.3), -np.sin(0.3)], rtol=1e-6)
    for dt, tol in [(jnp.float16, 2e-3), (jnp.bfloat16, 2e-2)]:
        p, t = jet(jnp.sin, (jnp.asarray(0.5, dt),), ((1.0, 0.0),))
        assert p.dtype == dt and all(v.dtype == dt for v in t)
        np.testing.assert_allclose([float(v) for v in t], [np.cos(0.5), -np.sin(0.5)], rtol=tol)


def test_while_loop_with_integer_counter():
    p, t = jet(
        lambda x: lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] * x, c[1] + 1), (x, 0)),
        (2.0,),
        ((1.0, 0.0, 0.0),),
    )
    assert float(p[0]) == 16.0 and int(p[1]) == 3
    np.testing.assert_allclose([float(v) for v in t[0]], [32.0, 48.0, 48.0])  # x^4


# ---- errors and the module's names -----------------------------------------------------------


def test_argument_errors_as_jax():
    with pytest.raises(ValueError, match="jet terms have inconsistent lengths for different arguments"):
        jet(lambda x, y: x * y, (1.0, 2.0), ((1.0, 0.0), (1.0,)))
    with pytest.raises(ValueError, match="inconsistent lengths"):
        jet(jnp.sin, (0.5,), ())
    with pytest.raises(ValueError, match="primal value at position 0 is not an array"):
        jet(jnp.sin, ((0.5,),), (((1.0,),),))
    with pytest.raises(ValueError, match="term 1 for argument 0 is not an array"):
        jet(jnp.sin, (0.5,), ((1.0, (0.0,)),))
    with pytest.raises(TypeError):
        jet(jnp.sin, (1.0,), (1.0,))
    with pytest.raises(TypeError, match="2 primal arguments but series for 1"):
        jet(lambda x, y: x, (1.0, 2.0), ((1.0,),))
    with pytest.raises(TypeError, match="incompatible shapes"):
        jet(jnp.sin, (jnp.ones(3),), ((jnp.ones(2),),))


def test_missing_rule_raises_not_implemented_and_key_error():
    with pytest.raises(NotImplementedError, match="Jet rule for 'bessel_i0e' not implemented"):
        jet(lax.bessel_i0e, (jnp.array([2.0, 1.0]),), ((jnp.ones(2),),))
    with pytest.raises(KeyError):  # what JAX raises
        jet(lax.bessel_i0e, (jnp.array([2.0, 1.0]),), ((jnp.ones(2),),))
    # without a perturbation no rule is needed
    y = jnp.array([2.0, 1.0])
    p, t = jet(lambda x: lax.bessel_i0e(y) + x, (1.0,), ((1.0,),))
    np.testing.assert_allclose(np.asarray(t[0]), [1.0, 1.0])


def test_public_names():
    for name in ["jet", "jet2", "fact", "jet_rules", "zero_series", "zero_term", "JetTrace", "JetTracer"]:
        assert hasattr(jet_module, name)
    assert lax.sin_p in jet_rules and lax.mul_p in jet_rules
    assert float(fact(3)) == pytest.approx(6.0, rel=1e-6)
