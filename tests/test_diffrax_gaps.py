"""fjax behaviours diffrax, lineax and optimistix rely on (found running them through
``fjax.compat``, tests/compat/test_diffrax.py): each against numpy or JAX's documented behaviour."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax


@given(
    deg=st.integers(1, 5),
    pshape=st.sampled_from([(), (2,), (3, 2), (1, 4)]),
    xshape=st.sampled_from([(), (2,), (3, 1), (5, 3, 2)]),
    seed=st.integers(0, 100),
)
def test_polyval_coefficients_of_rank_above_one_broadcast_like_numpy(deg, pshape, xshape, seed):
    # diffrax's local interpolation evaluates one polynomial per state entry: p has shape (deg, *state)
    rng = np.random.default_rng(seed)
    p = rng.standard_normal((deg, *pshape))
    x = rng.standard_normal(xshape)
    try:
        want = np.polyval(p, x)
    except ValueError:
        with pytest.raises((ValueError, TypeError)):
            jnp.polyval(p, x)
        return
    got = jnp.polyval(p, x)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_polyval_scalar_coefficients_raise():
    with pytest.raises(ValueError):
        jnp.polyval(jnp.array(1.0), 2.0)


def test_eval_shape_of_a_function_returning_shape_dtype_structs():
    # lineax compares structures with ``eval_shape(lambda: struct)``
    s = fjax.ShapeDtypeStruct((2, 3), jnp.float32)
    assert fjax.eval_shape(lambda: s) == s
    out = fjax.eval_shape(lambda x: {"a": x * 2, "b": s}, jnp.ones(4, jnp.int32))
    assert out["b"] == s and out["a"].shape == (4,) and out["a"].dtype == jnp.int32
    w = fjax.ShapeDtypeStruct((), jnp.float32, weak_type=True)
    assert fjax.eval_shape(lambda: w).weak_type
    closed = fjax.make_jaxpr(lambda: (s, 1.0))()
    assert [v.aval.shape for v in closed.jaxpr.outvars] == [(2, 3), ()]


def test_jit_returning_a_shape_dtype_struct_raises_type_error():
    with pytest.raises(TypeError):
        fjax.jit(lambda: fjax.ShapeDtypeStruct((2,), jnp.float32))()


@given(m=st.integers(1, 4), n=st.integers(1, 4), seed=st.integers(0, 100))
def test_linear_transpose_takes_shape_dtype_structs_for_primals(m, n, seed):
    # lineax: ``jax.linear_transpose(fn, operator.in_structure())``
    a = np.random.default_rng(seed).standard_normal((m, n)).astype(np.float32)
    ct = np.random.default_rng(seed + 1).standard_normal(m).astype(np.float32)
    t = fjax.linear_transpose(lambda x: jnp.asarray(a) @ x, fjax.ShapeDtypeStruct((n,), jnp.float32))
    (got,) = t(jnp.asarray(ct))
    np.testing.assert_allclose(np.asarray(got), a.T @ ct, rtol=1e-5, atol=1e-5)


def test_jax_src_ad_util_stop_gradient_p_is_fjax_primitive():
    from fjax.compat._shims._src import ad_util

    jaxpr = fjax.make_jaxpr(lax.stop_gradient)(jnp.ones(2))
    assert jaxpr.jaxpr.eqns[0].primitive is ad_util.stop_gradient_p
