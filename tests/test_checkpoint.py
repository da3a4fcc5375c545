"""Tests for fjax.checkpoint (remat): values, gradients, residuals and recomputation."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
from fjax import lax
from fjax.checkpoint import checkpoint, checkpoint_name, checkpoint_policies, remat
from fjax.interpreters import ad
from fjax.lax import lax as lax_impl
from fjax.test_util import check_grads


def _sum(x):
    return lax.reduce_sum(x, tuple(range(np.ndim(x))))


def sin2(x):
    return lax.sin(lax.sin(x))


def mlp(W, x):
    return lax.sin(lax.dot(W, lax.sin(lax.dot(W, x))))


W = (np.arange(9, dtype=np.float32).reshape(3, 3) - 4) / 10
X = np.array([0.5, -1.0, 2.0], np.float32)


@pytest.fixture
def sin_counter(monkeypatch):
    count = [0]
    orig = lax_impl.sin_p.impl

    def counting(*a, **k):
        count[0] += 1
        return orig(*a, **k)

    monkeypatch.setattr(lax_impl.sin_p, "impl", counting)
    return count


def test_values_and_grads_match():
    assert remat is checkpoint
    x = np.float32(0.3)
    assert np.allclose(checkpoint(sin2)(x), np.sin(np.sin(x)))
    g = fjax.grad(checkpoint(sin2))(x)
    assert np.allclose(g, np.cos(np.sin(x)) * np.cos(x), rtol=1e-6)
    f = lambda W, x: _sum(mlp(W, x))  # noqa: E731
    fc = lambda W, x: _sum(checkpoint(mlp)(W, x))  # noqa: E731
    for pol in [
        None,
        checkpoint_policies.dots_saveable,
        checkpoint_policies.everything_saveable,
        checkpoint_policies.nothing_saveable,
        checkpoint_policies.dots_with_no_batch_dims_saveable,
    ]:
        fp = lambda W, x, pol=pol: _sum(checkpoint(mlp, policy=pol)(W, x))  # noqa: E731
        for a, b in zip(fjax.grad(fp, (0, 1))(W, X), fjax.grad(f, (0, 1))(W, X)):
            assert np.allclose(a, b, rtol=1e-5, atol=1e-6)
    for a, b in zip(fjax.jit(fjax.grad(fc, (0, 1)))(W, X), fjax.grad(f, (0, 1))(W, X)):
        assert np.allclose(a, b, rtol=1e-5, atol=1e-6)
    for a, b in zip(fjax.grad(fjax.jit(fc), (0, 1))(W, X), fjax.grad(f, (0, 1))(W, X)):
        assert np.allclose(a, b, rtol=1e-5, atol=1e-6)


def test_recomputes_on_backward(sin_counter):
    fjax.grad(sin2)(1.0)
    plain = sin_counter[0]
    sin_counter[0] = 0
    fjax.grad(checkpoint(sin2))(1.0)
    assert plain == 2 and sin_counter[0] == 3  # the inner sin runs again on the backward pass
    sin_counter[0] = 0
    fjax.grad(checkpoint(sin2, policy=checkpoint_policies.everything_saveable))(1.0)
    assert sin_counter[0] == 2


def _num_residuals(f, *args):
    _, _, consts, _ = ad.linearize_flat(lambda *xs: [f(*xs)], [np.asarray(a) for a in args])
    return sorted(tuple(np.shape(c)) for c in consts)


def test_residuals_follow_policy():
    # nothing saveable: the residuals are just the inputs
    assert _num_residuals(checkpoint(mlp), W, X) == [(3,), (3, 3)]
    # dots saveable: plus the two dot outputs
    assert _num_residuals(checkpoint(mlp, policy=checkpoint_policies.dots_saveable), W, X) == [(3,), (3,), (3,), (3, 3)]
    assert _num_residuals(checkpoint(mlp, policy=checkpoint_policies.checkpoint_dots), W, X) == [
        (3,),
        (3,),
        (3,),
        (3, 3),
    ]
    # everything saveable: every intermediate the tangent map needs (W, sin(x1), cos(x1), cos(x2)... )
    assert len(_num_residuals(checkpoint(mlp, policy=checkpoint_policies.everything_saveable), W, X)) == 5


def test_named_policies():
    def f(x):
        a = checkpoint_name(lax.sin(x), "a")
        b = checkpoint_name(lax.sin(a), "b")
        return lax.sin(b)

    x = np.linspace(0, 1, 4, dtype=np.float32)
    only_a = checkpoint(f, policy=checkpoint_policies.save_only_these_names("a"))
    assert len(_num_residuals(only_a, x)) == 2  # x and a
    assert np.allclose(fjax.grad(lambda v: _sum(only_a(v)))(x), fjax.grad(lambda v: _sum(f(v)))(x), rtol=1e-6)


def test_jvp_vmap_and_higher_order():
    x = np.float32(0.7)
    y, t = fjax.jvp(checkpoint(sin2), (x,), (np.float32(2.0),))
    assert np.allclose(y, np.sin(np.sin(x))) and np.allclose(t, 2 * np.cos(np.sin(x)) * np.cos(x))
    xs = np.linspace(-1, 1, 5, dtype=np.float32)
    assert np.allclose(fjax.vmap(checkpoint(sin2))(xs), np.sin(np.sin(xs)))
    assert np.allclose(fjax.vmap(fjax.grad(checkpoint(sin2)))(xs), fjax.vmap(fjax.grad(sin2))(xs), rtol=1e-6)
    assert np.allclose(fjax.grad(fjax.grad(checkpoint(sin2)))(x), fjax.grad(fjax.grad(sin2))(x), rtol=1e-5)
    assert np.allclose(
        fjax.grad(lambda v: _sum(fjax.vmap(checkpoint(sin2))(v)))(xs), np.cos(np.sin(xs)) * np.cos(xs), rtol=1e-6
    )


@given(st.floats(-3.0, 3.0, allow_nan=False, width=32))
def test_check_grads(x):
    check_grads(checkpoint(sin2), (np.float32(x),), order=2, modes=("fwd", "rev"))


def test_static_argnums_and_pytrees():
    def f(x, n):
        for _ in range(n):
            x = {"v": lax.sin(x["v"])}
        return x

    fc = checkpoint(f, static_argnums=(1,))
    g = fjax.grad(lambda x: fc({"v": x}, 2)["v"])(0.5)
    assert np.allclose(g, np.cos(np.sin(0.5)) * np.cos(0.5), rtol=1e-6)


def test_make_jaxpr_prints_remat():
    s = str(fjax.make_jaxpr(checkpoint(sin2))(1.0))
    assert "remat2[" in s and "prevent_cse=True" in s and "policy=None" in s and "differentiated=False" in s
    s = str(fjax.make_jaxpr(fjax.grad(checkpoint(sin2)))(1.0))
    assert "differentiated=True" in s


def test_policy_holds_in_grad_of_jit_and_remat_compiles_inline():
    """``grad(jit(f))`` splits the checkpoint inside the jit by its policy (the saved dot is not
    recomputed in the backward program), and compiled programs run remat bodies inline."""
    import fjax.numpy as jnp
    from fjax import checkpoint_policies as cp

    def make(policy):
        def f(x):
            g = fjax.checkpoint(lambda x: jnp.sin(jnp.sin(x) @ jnp.ones((3, 3))), policy=policy)
            return jnp.sum(g(x))

        return f

    x = jnp.asarray(np.random.RandomState(0).randn(2, 3).astype(np.float32))

    def staged_remat_dots(f):
        jaxpr = fjax.make_jaxpr(fjax.grad(fjax.jit(f)))(x).jaxpr
        bwd = [e for e in jaxpr.eqns if e.primitive.name == "jit"][-1]  # the backward one (named f, as JAX)
        (remat,) = [e for e in bwd.params["jaxpr"].jaxpr.eqns if e.primitive.name == "remat2"]
        return sum(e.primitive.name == "dot_general" for e in remat.params["jaxpr"].eqns)

    assert staged_remat_dots(make(cp.dots_saveable)) == 1  # only the transposed dot; the forward one is saved
    assert staged_remat_dots(make(cp.nothing_saveable)) == 2  # the forward dot is recomputed too
    for policy in (cp.dots_saveable, cp.nothing_saveable, None):
        f = make(policy)
        jg = fjax.jit(fjax.grad(fjax.jit(f)))
        assert "# host:" not in jg.lower(x).as_text()
        np.testing.assert_allclose(np.asarray(jg(x)), np.asarray(fjax.grad(f)(x)), rtol=1e-5)


def test_triply_nested_jit_compiles_inline():
    import fjax.numpy as jnp

    f = fjax.jit(fjax.jit(fjax.jit(lambda x: jnp.sin(x) * 2)))
    x = jnp.linspace(0.0, 1.0, 5)
    assert "# host:" not in fjax.jit(f).lower(x).as_text()
    np.testing.assert_allclose(np.asarray(f(x)), np.sin(np.linspace(0.0, 1.0, 5)) * 2, rtol=1e-6)
