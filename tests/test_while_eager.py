"""Eager ``lax.while_loop`` evaluates its cond and body on numpy arrays with each primitive's
impl (no abstract evaluation per step), as an eager scan does: results must be those of the
primitive-by-primitive evaluator it replaced (still used for PRNG keys, constants, and while an
eager check such as ``jax_debug_nans`` is on)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.lax.control_flow.loops as loops
import fjax.numpy as jnp
from fjax import lax


def _slow(fn):
    """``fn`` with the numpy fast path switched off."""

    def run(*args):
        orig = loops._numpy_evaluator
        loops._numpy_evaluator = lambda closed: None
        try:
            return fn(*args)
        finally:
            loops._numpy_evaluator = orig

    return run


def _same(a, b):
    for x, y in zip(fjax.tree.leaves(a), fjax.tree.leaves(b)):
        assert x.dtype == y.dtype and x.shape == y.shape and x.weak_type == y.weak_type
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def _mixed(n):
    def cond(c):
        i, x, flag, v = c
        return jnp.logical_and(i < n, flag)

    def body(c):
        i, x, flag, v = c
        x = lax.cond(x > 2.0, lambda y: y * 0.5, lambda y: y + 1.25, x)
        _, ys = lax.scan(lambda s, e: (s + e, s * e), x, v)
        v = v + ys.astype(v.dtype)
        return i + 1, x, jnp.sum(v) < 1e6, jnp.flip(v)

    return lambda x0, v0: lax.while_loop(cond, body, (jnp.int32(0), x0, jnp.bool_(True), v0))


@given(st.integers(0, 12), st.floats(-3, 3, width=32), st.sampled_from([np.float32, np.int32]))
def test_fast_path_matches_slow(n, x0, vdt):
    v0 = np.arange(4).astype(vdt)
    f = _mixed(n)
    _same(f(np.float32(x0), v0), _slow(f)(np.float32(x0), v0))


def test_fast_path_is_taken_and_falls_back():
    def cond(c):
        return c[0] < 5

    def body(c):
        return c[0] + 1, c[1] * 2.0

    closed = fjax.make_jaxpr(lambda c: lax.while_loop(cond, body, c))((0, 1.0))
    eqn = closed.jaxpr.eqns[0]
    assert loops._numpy_evaluator(eqn.params["body_jaxpr"]) is not None
    _same(lax.while_loop(cond, body, (0, 1.0)), _slow(lambda c: lax.while_loop(cond, body, c))((0, 1.0)))
    # PRNG keys in the carry: the evaluator does not apply; the loop still runs
    key = fjax.random.key(0)
    k, i = lax.while_loop(lambda c: c[1] < 3, lambda c: (fjax.random.split(c[0])[0], c[1] + 1), (key, 0))
    want = key
    for _ in range(3):
        want = fjax.random.split(want)[0]
    assert int(i) == 3 and np.array_equal(fjax.random.key_data(k), fjax.random.key_data(want))


def test_debug_nans_still_checks_inside_eager_while():
    with fjax.debug_nans(True):
        with pytest.raises(FloatingPointError):
            lax.while_loop(lambda c: c < 3.0, lambda c: c + jnp.log(c - 2.0), jnp.float32(1.0))
