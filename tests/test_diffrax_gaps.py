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


def _assert_compiled(f, *args):
    ir = f.lower(*args).as_text("ir")
    assert "host" not in ir and "nothing to compile" not in ir, ir


def _special_values(dt):
    fi = np.finfo(dt)
    v = [0.0, -0.0, 1.0, -1.0, fi.tiny, -fi.tiny, fi.smallest_subnormal, -fi.smallest_subnormal, fi.max, -fi.max]
    return np.array(v + [np.inf, -np.inf, np.nan, 2.5, -3.75, 1e-30], dt)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_nextafter_compiles_and_matches_numpy_bit_for_bit(dt):
    # diffrax calls eqxi.nextafter in each solver step: a host step made its whole loop run eagerly
    sp = _special_values(dt)
    x, y = (a.ravel() for a in np.meshgrid(sp, sp))
    with fjax.enable_x64(dt == np.float64):
        f = fjax.jit(lax.nextafter)
        _assert_compiled(f, jnp.asarray(x), jnp.asarray(y))
        got = np.asarray(f(jnp.asarray(x), jnp.asarray(y)))
        loop = fjax.jit(lambda a, b: lax.fori_loop(0, 2, lambda i, c: lax.nextafter(c, b), a))
        _assert_compiled(loop, jnp.asarray(x), jnp.asarray(y))
        got2 = np.asarray(loop(jnp.asarray(x), jnp.asarray(y)))
    with np.errstate(all="ignore"):
        want = np.nextafter(x, y)
        want2 = np.nextafter(want, y)
    it = np.int64 if dt == np.float64 else np.int32
    for g, w in ((got, want), (got2, want2)):
        assert g.dtype == dt
        same = (g.view(it) == w.view(it)) | (np.isnan(g) & np.isnan(w))
        assert same.all(), (x[~same], y[~same], g[~same], w[~same])


def test_float64_erf_inv_compiles_with_the_host_values():
    import scipy.special

    x = np.concatenate([np.linspace(-1, 1, 401), [-1.5, 2.0, np.nan, 1 - 1e-16, -1 + 1e-16, 1e-300, 0.0, -0.0]])
    with fjax.enable_x64(True):
        xs = jnp.asarray(x)
        f = fjax.jit(lax.erf_inv)
        _assert_compiled(f, xs)
        got, eager = np.asarray(f(xs)), np.asarray(lax.erf_inv(xs))
        # inside a loop body (diffrax's VirtualBrownianTree draws float64 normals in its bisection loop)
        g = fjax.jit(lambda v: lax.fori_loop(0, 2, lambda i, c: lax.erf_inv(c * 0.5), v))
        _assert_compiled(g, xs)
        got2, eager2 = np.asarray(g(xs)), np.asarray(lax.erf_inv(lax.erf_inv(xs * 0.5) * 0.5))
    assert got.dtype == np.float64
    # the same algorithm; exp/log may round differently from numpy's by an ulp
    np.testing.assert_allclose(got, eager, rtol=5e-16, atol=0)
    np.testing.assert_allclose(got2, eager2, rtol=1e-15, atol=0)
    with np.errstate(all="ignore"):
        ref = scipy.special.erfinv(x)
    # (within 1e-15 of +-1 the host algorithm itself is off: erf(r) rounds to 1 before r is right)
    tail = np.abs(x) > 1 - 1e-15
    np.testing.assert_allclose(got[~tail], ref[~tail], rtol=1e-13, atol=1e-300)
