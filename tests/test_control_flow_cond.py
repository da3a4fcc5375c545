"""lax.cond / lax.switch: values, every transform and their compositions, against Python code."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax.lax.control_flow import cond, fori_loop, switch
from fjax.test_util import check_grads

floats = st.floats(-2.0, 2.0, allow_nan=False, width=32)
vec3 = st.lists(floats, min_size=3, max_size=3).map(lambda v: np.array(v, np.float32))


def t_fun(x, y):
    return jnp.sin(x) * y, x * 2.0


def f_fun(x, y):
    return x * x + jnp.cos(y), jnp.exp(x * 0.5)


def np_t(x, y):
    return np.sin(x) * y, x * 2.0


def np_f(x, y):
    return x * x + np.cos(y), np.exp(x * 0.5)


def c(p, x, y):
    return cond(p, t_fun, f_fun, x, y)


def close(a, b, tol=1e-5):
    la, lb = fjax.tree_util.tree_leaves(a), fjax.tree_util.tree_leaves(b)
    if len(la) != len(lb):
        la, lb = [np.asarray(a)], [np.asarray(b)]
    for u, v in zip(la, lb):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=tol, atol=tol)


@given(st.booleans(), vec3, vec3)
def test_cond_values_eager_and_jit(p, x, y):
    want = np_t(x, y) if p else np_f(x, y)
    close(c(p, x, y), want)
    close(fjax.jit(c)(p, x, y), want)
    close(fjax.jit(c)(jnp.array(p), x, y), want)


@given(st.integers(-3, 6), vec3)
def test_cond_int_and_float_predicates(p, x):
    want = np.sin(x) if p != 0 else np.cos(x)
    close(cond(p, jnp.sin, jnp.cos, x), want)
    close(cond(float(p), jnp.sin, jnp.cos, x), want)
    close(fjax.jit(lambda p, x: cond(p, jnp.sin, jnp.cos, x))(np.int32(p), x), want)


def test_cond_pytrees_and_operand_keyword():
    ops = {"a": jnp.ones(2), "b": (jnp.float32(3.0), jnp.int32(2))}

    def t(d):
        return {"out": d["a"] * d["b"][0], "n": d["b"][1] + 1}

    def f(d):
        return {"out": d["a"] - d["b"][0], "n": d["b"][1] * 3}

    r = cond(True, t, f, ops)
    close(r["out"], [3.0, 3.0])
    assert int(r["n"]) == 3
    r = cond(False, t, f, operand=ops)
    close(r["out"], [-2.0, -2.0])
    assert int(r["n"]) == 6
    assert cond(True, lambda: 1.0, lambda: 2.0) == 1.0


def test_cond_traces_both_branches_and_prints_primitive():
    calls = []

    def t(x):
        calls.append("t")
        return x + 1.0

    def f(x):
        calls.append("f")
        return x - 1.0

    assert float(cond(True, t, f, 1.0)) == 2.0
    assert sorted(calls) == ["f", "t"]
    s = str(fjax.make_jaxpr(lambda p, x: cond(p, t, f, x))(True, 1.0))
    assert "cond[" in s and "branches=(" in s and "convert_element_type" in s
    assert "add" in s and "sub" in s


@settings(max_examples=6)  # order-2 gradient checks are slow
@given(st.booleans(), vec3, vec3)
def test_cond_grads_both_branches(p, x, y):
    check_grads(lambda x, y: c(p, x, y), (x, y), order=2, modes=("fwd", "rev"))
    g = fjax.grad(lambda x, y: jnp.sum(c(p, x, y)[0]), argnums=(0, 1))(x, y)
    want = (np.cos(x) * y, np.sin(x)) if p else (2 * x, -np.sin(y))
    close(g, want, 1e-5)


@given(st.booleans(), floats)
def test_cond_jvp_matches_python(p, x):
    x = np.float32(x)
    (out,), (tan,) = fjax.jvp(lambda x: (cond(p, jnp.sin, lambda v: v * v * v, x),), (x,), (np.float32(1.0),))
    want, dwant = (np.sin(x), np.cos(x)) if p else (x**3, 3 * x * x)
    close(out, want)
    close(tan, dwant, 1e-4)


@given(st.booleans(), floats, floats)
def test_cond_grad_of_closed_over_values(p, a, x):
    # the branches close over a differentiated value: it becomes a constant operand of cond
    def f(a, x):
        return cond(p, lambda v: v * a, lambda v: jnp.sin(a) + v, x)

    check_grads(f, (np.float32(a), np.float32(x)), order=2, modes=("fwd", "rev"))


@settings(max_examples=6)  # order-2 gradient checks are slow
@given(st.booleans(), vec3)
def test_cond_mixed_int_outputs_and_residual_counts(p, x):
    # one branch is linear (no residuals), the other not; an integer output rides along
    def f(x):
        out, n = cond(p, lambda v: (v * 3.0, jnp.int32(1)), lambda v: (jnp.tanh(v) * v, jnp.int32(2)), x)
        return jnp.sum(out) + n.astype(jnp.float32)

    check_grads(f, (x,), order=2, modes=("fwd", "rev"))
    want = np.full(3, 3.0) if p else (1 - np.tanh(x) ** 2) * x + np.tanh(x)
    close(fjax.grad(f)(x), want, 1e-5)


@given(st.booleans(), vec3)
def test_grad_of_jit_of_cond_and_jit_of_grad(p, x):
    def f(x):
        return jnp.sum(cond(p, lambda v: jnp.sin(v) * v, lambda v: jnp.exp(v), x))

    want = np.cos(x) * x + np.sin(x) if p else np.exp(x)
    close(fjax.grad(fjax.jit(f))(x), want, 1e-5)
    close(fjax.jit(fjax.grad(f))(x), want, 1e-5)
    # the predicate is traced by jit: the nested cond is split by partial_eval_jaxpr
    g = fjax.jit(lambda p, x: jnp.sum(cond(p, lambda v: jnp.sin(v) * v, lambda v: jnp.exp(v), x)))
    close(fjax.grad(g, 1)(p, x), want, 1e-5)
    check_grads(lambda x: g(p, x), (x,), order=1, modes=("fwd", "rev"))


@settings(max_examples=6)  # order-2 gradient checks are slow
@given(st.booleans(), vec3)
def test_nested_cond_grad(p, x):
    def f(x):
        inner = lambda v: cond(not p, jnp.sin, jnp.cos, v) * v  # noqa: E731
        return jnp.sum(cond(p, inner, lambda v: v * v, x))

    check_grads(f, (x,), order=2, modes=("fwd", "rev"))


@given(st.lists(st.booleans(), min_size=3, max_size=3), vec3, vec3)
def test_vmap_batched_predicate(ps, x, y):
    ps = np.array(ps)
    out = fjax.vmap(c)(ps, x, y)
    for k in range(3):
        want = np_t(x[k], y[k]) if ps[k] else np_f(x[k], y[k])
        close([o[k] for o in out], want)
    # batched predicate with unbatched operands
    out = fjax.vmap(c, (0, None, None))(ps, x, y)
    for k in range(3):
        close([o[k] for o in out], np_t(x, y) if ps[k] else np_f(x, y))
    # jit of vmap
    out = fjax.jit(fjax.vmap(c))(ps, x, y)
    close(out[0], [np_t(x[k], y[k])[0] if ps[k] else np_f(x[k], y[k])[0] for k in range(3)])


@given(st.booleans(), vec3, vec3)
def test_vmap_unbatched_predicate(p, x, y):
    out = fjax.vmap(c, (None, 0, 0))(p, x, y)
    close(out, np_t(x, y) if p else np_f(x, y))
    out = fjax.vmap(c, (None, 0, None))(p, x, y[0])
    close(out, np_t(x, y[0]) if p else np_f(x, y[0]))
    # a branch returning an unbatched value while the other's output is batched
    out = fjax.vmap(lambda v: cond(p, lambda u: u * 2.0, lambda u: jnp.float32(7.0), v))(x)
    close(out, x * 2 if p else np.full(3, 7.0))


@given(st.lists(st.booleans(), min_size=3, max_size=3), vec3, vec3)
def test_vmap_of_grad_and_grad_of_vmap(ps, x, y):
    ps = np.array(ps)
    g = fjax.vmap(fjax.grad(lambda p, x, y: c(p, x, y)[0], argnums=(1, 2)))(ps, x, y)
    for k in range(3):
        want = (np.cos(x[k]) * y[k], np.sin(x[k])) if ps[k] else (2 * x[k], -np.sin(y[k]))
        close((g[0][k], g[1][k]), want, 1e-5)
    h = fjax.grad(lambda x: jnp.sum(fjax.vmap(c)(ps, x, y)[0]))(x)
    close(h, np.where(ps, np.cos(x) * y, 2 * x), 1e-5)
    check_grads(lambda x, y: fjax.vmap(c)(ps, x, y), (x, y), order=1, modes=("fwd", "rev"))


def _branches():
    return [lambda x: x * 2.0, lambda x: jnp.sin(x) * x, lambda x: jnp.exp(x) - x]


def _np_branches():
    return [lambda x: x * 2.0, lambda x: np.sin(x) * x, lambda x: np.exp(x) - x]


@given(st.integers(-2, 5), vec3)
def test_switch_values_clamped(i, x):
    want = _np_branches()[min(max(i, 0), 2)](x)
    close(switch(i, _branches(), x), want)
    close(fjax.jit(lambda i, x: switch(i, _branches(), x))(i, x), want)
    close(switch(np.uint8(max(i, 0)), _branches(), x), _np_branches()[min(max(i, 0), 2)](x))


@settings(max_examples=6)  # order-2 gradient checks are slow
@given(st.integers(-1, 3), vec3)
def test_switch_grads(i, x):
    check_grads(lambda x: switch(i, _branches(), x), (x,), order=2, modes=("fwd", "rev"))
    check_grads(fjax.jit(lambda x: switch(i, _branches(), x)), (x,), order=1, modes=("fwd", "rev"))


@given(st.lists(st.integers(-1, 3), min_size=3, max_size=3), vec3)
def test_switch_vmap(idx, x):
    idx = np.array(idx, np.int32)
    out = fjax.vmap(lambda i, x: switch(i, _branches(), x))(idx, x)
    want = [_np_branches()[min(max(int(i), 0), 2)](v) for i, v in zip(idx, x)]
    close(out, want)
    g = fjax.vmap(fjax.grad(lambda i, x: switch(i, _branches(), x), 1))(idx, x)
    assert g.shape == (3,)
    out = fjax.vmap(lambda x: switch(1, _branches(), x))(x)
    close(out, np.sin(x) * x)


def test_switch_single_branch_and_errors():
    assert float(switch(3, [lambda x: x + 1.0], 1.0)) == 2.0
    with pytest.raises(ValueError, match="Empty branch sequence"):
        switch(0, [], 1.0)
    with pytest.raises(TypeError, match="Index type must be an integer"):
        switch(1.0, _branches(), 1.0)
    with pytest.raises(TypeError, match="Branch index must be scalar"):
        switch(jnp.array([0, 1]), _branches(), 1.0)
    with pytest.raises(TypeError, match="branch 0.*branch2"):
        switch(0, [lambda x: x, lambda x: x, lambda x: x.astype(jnp.int32)], jnp.float32(1.0))


def test_cond_errors():
    with pytest.raises(TypeError, match="Pred must be a scalar"):
        cond(jnp.array([True, False]), lambda x: x, lambda x: x, 1.0)
    with pytest.raises(TypeError, match="Pred must be a scalar"):
        cond([True], lambda x: x, lambda x: x, 1.0)
    with pytest.raises(TypeError, match="Pred type must be either boolean or number"):
        cond(jnp.complex64(1.0), lambda x: x, lambda x: x, 1.0)
    with pytest.raises(TypeError, match="cond predicate is None"):
        cond(None, lambda x: x, lambda x: x, 1.0)
    with pytest.raises(TypeError) as e:
        cond(True, lambda x: (x, x), lambda x: x, jnp.float32(1.0))
    assert "same pytree structure" in str(e.value) and "true_fun" in str(e.value)
    with pytest.raises(TypeError) as e:
        cond(True, lambda x: {"a": x}, lambda x: {"a": x.astype(jnp.int32)}, jnp.float32(1.0))
    msg = str(e.value)
    assert "true_fun" in msg and "false_fun" in msg and "['a']" in msg
    assert "float32[]" in msg and "int32[]" in msg and "dtypes do not match" in msg
    with pytest.raises(TypeError, match="shapes do not match"):
        cond(True, lambda x: x, lambda x: jnp.stack([x, x]), jnp.float32(1.0))


def test_cond_under_jit_with_traced_pred_and_closure():
    a = jnp.arange(3.0)

    @fjax.jit
    def f(p, x):
        return cond(p > 0, lambda v: v + a, lambda v: v * a, x)

    close(f(1, jnp.ones(3)), [1.0, 2.0, 3.0])
    close(f(0, jnp.ones(3)), [0.0, 1.0, 2.0])
    close(fjax.vmap(f)(jnp.array([1, 0]), jnp.ones((2, 3))), [[1.0, 2.0, 3.0], [0.0, 1.0, 2.0]])


def test_cond_linearize_and_vjp():
    x = np.array([0.3, -0.7], np.float32)
    for p in (True, False):
        y, f_jvp = fjax.linearize(lambda x: cond(p, jnp.sin, jnp.cos, x), x)
        close(f_jvp(np.ones(2, np.float32)), np.cos(x) if p else -np.sin(x), 1e-6)
        y, f_vjp = fjax.vjp(lambda x: cond(p, jnp.sin, jnp.cos, x), x)
        close(f_vjp(np.ones(2, np.float32))[0], np.cos(x) if p else -np.sin(x), 1e-6)


@given(st.lists(st.booleans(), min_size=4, max_size=4), vec3)
def test_nested_vmap_closures_and_loops_in_branches(ps, x):
    P = np.array(ps).reshape(2, 2)
    X = np.arange(4.0, dtype=np.float32).reshape(2, 2) * 0.3
    out = fjax.vmap(fjax.vmap(lambda p, v: cond(p, jnp.sin, jnp.cos, v)))(P, X)
    close(out, np.where(P, np.sin(X), np.cos(X)))
    # branches closing over a batched value
    out = fjax.vmap(lambda a, p: cond(p, lambda: a * 2.0, lambda: a - 1.0))(x, np.array(ps[:3]))
    close(out, np.where(ps[:3], x * 2, x - 1))

    # a loop (with a cond inside) in a branch, under vmap with a batched predicate and grad
    def k(p, v):
        inner = lambda i, u: cond(i % 2 == 0, lambda w: w * 2.0, lambda w: jnp.sin(w), u)  # noqa: E731
        return cond(p, lambda v: fori_loop(0, 3, inner, v), lambda v: v * v, v)

    def k_py(p, v):
        if not p:
            return v * v
        for i in range(3):
            v = v * 2 if i % 2 == 0 else np.sin(v)
        return v

    close(fjax.vmap(k)(np.array(ps[:3]), x), [k_py(p, v) for p, v in zip(ps[:3], x)], 1e-5)
    check_grads(lambda v: fjax.vmap(k)(np.array(ps[:3]), v), (x,), order=1, modes=("fwd", "rev"))
