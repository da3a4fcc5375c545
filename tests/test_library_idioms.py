"""Idioms of libraries built on JAX (equinox) that fjax follows JAX on: unhashable static
arguments to ``checkpoint``, ``None`` tangents of ``None`` outputs in custom_jvp rules, Python
scalars among custom_vjp residuals, and the ``jax`` view's version attributes."""

from __future__ import annotations

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax.custom_derivatives import SymbolicZero


def test_checkpoint_static_argument_may_be_unhashable():
    calls = []

    def f(static, x):
        calls.append(static)
        return jnp.sin(x) * static["scale"]

    g = fjax.grad(lambda x: fjax.checkpoint(f, static_argnums=(0,))({"scale": [2.0][0]}, x))(1.0)
    np.testing.assert_allclose(float(g), 2 * np.cos(1.0), rtol=1e-6)
    assert all(isinstance(c, dict) for c in calls)


def test_checkpoint_static_argnums_errors_as_jax():
    with pytest.raises(TypeError, match="must be an int, tuple of ints or, bool, but got value \\[0\\]"):
        fjax.checkpoint(lambda x: x, static_argnums=[0])
    with pytest.raises(ValueError, match="greater than or equal to `-len\\(args\\)`.*`len\\(args\\)` = 1"):
        fjax.checkpoint(lambda x: x, static_argnums=(3,))(1.0)


def test_custom_jvp_none_tangent_for_none_output():
    @fjax.custom_jvp
    def f(t):
        return t

    seen = []

    def f_jvp(primals, tangents):
        (p,), (t,) = primals, tangents
        seen.append([type(x) for x in t[1:]])
        return p, t

    f.defjvp(f_jvp, symbolic_zeros=True)
    x = (None, jnp.float32(2.0), jnp.float32(3.0))
    out, tan = fjax.jvp(lambda a: f((None, a, x[2])), (jnp.float32(2.0),), (jnp.float32(1.0),))
    assert out[0] is None and float(out[1]) == 2.0
    assert float(tan[1]) == 1.0 and float(tan[2]) == 0.0
    assert seen[-1][1] is SymbolicZero  # the unperturbed input's tangent is a symbolic zero
    # a None tangent where the primal output is an array is still a structure mismatch
    g = fjax.custom_jvp(lambda a: a)
    g.defjvp(lambda p, t: (p[0], None))
    with pytest.raises(TypeError, match="equal container"):
        fjax.jvp(g, (1.0,), (1.0,))


def test_custom_vjp_python_scalar_residuals_reach_bwd_unchanged():
    got = []

    @fjax.custom_vjp
    def f(x):
        return x * 2

    def fwd(x):
        return x * 2, (x, True, 3)

    def bwd(res, ct):
        x, flag, n = res
        got.append((type(flag), type(n)))
        return (ct * n if flag else ct,)

    f.defvjp(fwd, bwd)
    assert float(fjax.grad(f)(1.5)) == 3.0
    assert float(fjax.jit(fjax.grad(f))(1.5)) == 3.0
    assert got and all(g == (bool, int) for g in got)


def test_jax_view_version_info():
    from fjax import compat

    compat.install()
    try:
        import jax  # noqa: PLC0415 - resolved by fjax.compat to fjax

        assert jax.__version_info__ == tuple(int(p) for p in jax.__version__.split("."))
        assert "__version_info__" in dir(jax)
    finally:
        compat.uninstall()


def test_jit_float0_outputs_are_numpy_and_bfloat16_outputs_are_arrays():
    from ml_dtypes import bfloat16

    f = fjax.jit(lambda x, i: fjax.vjp(lambda x, i: x * i, x, i)[1](1.0))
    gx, gi = f(1.5, 2)
    assert float(gx) == 2.0
    assert type(gi) is np.ndarray and gi.dtype == fjax.dtypes.float0 and (gi == gi).all()
    out = fjax.jit(lambda x: x * 2)(bfloat16(1.5))  # bfloat16's numpy kind is "V" too
    assert isinstance(out, fjax.Array) and out.dtype == jnp.bfloat16 and float(out) == 3.0


def test_load_restores_bfloat16(tmp_path):
    x = jnp.arange(4, dtype=jnp.bfloat16)
    jnp.save(tmp_path / "x.npy", x)
    y = jnp.load(tmp_path / "x.npy")
    assert isinstance(y, fjax.Array) and y.dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.asarray(y, np.float32), np.arange(4))
