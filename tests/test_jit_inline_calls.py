"""Under jit, custom_jvp/custom_vjp calls lower inline into the fused kernels, and dot_generals with
a small contraction (outer products, per-example-gradient dots) become fused elementwise code.

Checked on the lowered kernel IR (``lower(...).as_text(dialect="ir")``: no host step, no ``dot``)
and numerically against eager evaluation and numpy."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax, nn
from fjax.backends.lowering import dot_fuses
from fjax.custom_derivatives import custom_vjp

fjax.config.update("fjax_jit_backend", "numba")


def _logistic_loss(w, b, x, y):
    z = jnp.dot(x, w) + b
    return -(y * nn.log_sigmoid(z) + (1 - y) * nn.log_sigmoid(-z))


_per_example = fjax.vmap(fjax.grad(_logistic_loss, argnums=(0, 1)), in_axes=(None, None, 0, 0))
_per_example_jit = fjax.jit(_per_example)


def _data(n=64, d=10, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, d).astype(np.float32)
    y = (rng.rand(n) > 0.5).astype(np.float32)
    w = (rng.randn(d) * 0.5).astype(np.float32)
    return w, np.float32(0.1), x, y


def test_per_example_grads_have_no_host_step_or_degenerate_dot():
    w, b, x, y = _data()
    ir = _per_example_jit.lower(w, b, x, y).as_text(dialect="ir")
    assert "custom_jvp_call" not in ir  # log_sigmoid's logaddexp ran as a host step before
    assert "host" not in ir
    # the [n,1,1]x[n,1,d] dot of the backward pass is a fused multiply; only x @ w is a GEMM
    dots = [ln for ln in ir.splitlines() if "= dot(" in ln]
    assert len(dots) == 1 and "(((1,), (0,)), ((), ()))" in dots[0], ir
    assert ir.count("kernel") == 1, ir


def test_per_example_grads_match_eager_and_numpy():
    w, b, x, y = _data()
    gw, gb = _per_example_jit(w, b, x, y)
    ew, eb = _per_example(w, b, x, y)
    np.testing.assert_allclose(np.asarray(gw), np.asarray(ew), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(gb), np.asarray(eb), rtol=1e-5, atol=1e-6)
    z = x @ w + b
    p = 1 / (1 + np.exp(-z))
    np.testing.assert_allclose(np.asarray(gw), (p - y)[:, None] * x, rtol=2e-3, atol=1e-5)
    np.testing.assert_allclose(np.asarray(gb), p - y, rtol=2e-3, atol=1e-5)


@custom_vjp
def _clip_grad(x):
    return jnp.tanh(x) * 2.0


_clip_grad.defvjp(lambda x: (_clip_grad(x), x), lambda x, g: (jnp.clip(g, -0.5, 0.5),))
_vjp_fn = fjax.jit(lambda x: jnp.sum(_clip_grad(x) * x))
_vjp_grad = fjax.jit(fjax.grad(lambda x: jnp.sum(_clip_grad(x) * x)))


def test_custom_vjp_call_inlined():
    x = np.linspace(-2, 2, 11).astype(np.float32)
    ir = _vjp_fn.lower(x).as_text(dialect="ir")
    assert "custom_vjp_call" not in ir and "host" not in ir, ir
    np.testing.assert_allclose(np.asarray(_vjp_fn(x)), np.sum(np.tanh(x) * 2 * x), rtol=1e-5)
    # the custom rule is still what differentiates it
    ref = np.clip(x, -0.5, 0.5) + np.tanh(x) * 2
    np.testing.assert_allclose(np.asarray(_vjp_grad(x)), ref, rtol=1e-5, atol=1e-6)


_DNUMS = {
    "outer": ((3,), (5,), ((), ()), ((), ())),
    "k1": ((3, 1), (1, 5), ((1,), (0,)), ((), ())),
    "k3": ((3, 3), (3, 4), ((1,), (0,)), ((), ())),
    "batched_k1": ((4, 1, 1), (4, 1, 5), ((2,), (1,)), ((0,), (0,))),
    "batched_3x3": ((6, 3, 3), (6, 3, 3), ((2,), (1,)), ((0,), (0,))),
    "lhs_contract_first": ((2, 3), (2, 4), ((0,), (0,)), ((), ())),
    "two_contract": ((2, 2, 3), (2, 2, 4), ((0, 1), (0, 1)), ((), ())),
}


def _dot(a, b, c, bt):
    return lax.dot_general(a, b, (c, bt))


_dot_jit = fjax.jit(_dot, static_argnums=(2, 3))


@given(case=st.sampled_from(sorted(_DNUMS)), seed=st.integers(0, 2**16))
def test_small_contraction_dots_fuse_and_match_numpy(case, seed):
    lshape, rshape, c, bt = _DNUMS[case]
    rng = np.random.RandomState(seed)
    a = rng.randn(*lshape).astype(np.float32)
    b = rng.randn(*rshape).astype(np.float32)
    assert dot_fuses(a.shape, b.shape, (c, bt))
    ir = _dot_jit.lower(a, b, c, bt).as_text(dialect="ir")
    assert "= dot(" not in ir, ir
    got = np.asarray(_dot_jit(a, b, c, bt))
    want = np.asarray(lax.dot_general(a, b, (c, bt)))  # eager: numpy's matmul
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)  # a few float32 roundings apart


def test_large_contraction_stays_a_gemm():
    a = np.ones((8, 16), np.float32)
    assert not dot_fuses(a.shape, a.T.shape, (((1,), (0,)), ((), ())))
    assert "= dot(" in _dot_jit.lower(a, a.T.copy(), ((1,), (0,)), ((), ())).as_text(dialect="ir")


def test_fused_dot_with_empty_contraction():
    f = fjax.jit(lambda a, b: jnp.dot(a, b) + 1.0)
    a, b = np.ones((3, 0), np.float32), np.ones((0, 4), np.float32)
    assert "= dot(" not in f.lower(a, b).as_text(dialect="ir")
    np.testing.assert_array_equal(np.asarray(f(a, b)), np.ones((3, 4), np.float32))
