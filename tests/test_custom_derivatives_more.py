"""fjax.custom_derivatives.zero_from_primal and custom_vjp_primal_tree_values, and the names this
module shares with the top level (custom_gradient, closure_convert)."""

from __future__ import annotations

import numpy as np

import fjax
import fjax.numpy as jnp
from fjax import custom_derivatives as cd


def test_zero_from_primal() -> None:
    z = cd.zero_from_primal({"a": jnp.ones(2), "b": 1.0})
    np.testing.assert_array_equal(np.asarray(z["a"]), [0.0, 0.0])
    assert z["a"].dtype == np.float32 and float(z["b"]) == 0.0
    assert cd.zero_from_primal(jnp.ones(2, "int32")).dtype == fjax.dtypes.float0  # as JAX: float0 tangents
    s = cd.zero_from_primal(jnp.ones((2, 3)), symbolic_zeros=True)
    assert isinstance(s, cd.SymbolicZero) and s.shape == (2, 3)


def test_primal_tree_values_in_a_symbolic_zeros_fwd() -> None:
    seen = []

    @fjax.custom_vjp
    def f(x, y):
        return x * y

    def fwd(x, y):
        xv, yv = cd.custom_vjp_primal_tree_values((x, y))
        seen.append((x.perturbed, y.perturbed))
        return xv * yv, (xv, yv)

    def bwd(res, g):
        xv, yv = res
        return g * yv * 10.0, g * xv

    f.defvjp(fwd, bwd, symbolic_zeros=True)
    g = fjax.grad(f)(2.0, 3.0)
    assert float(g) == 30.0 and seen[-1] == (True, False)
    assert cd.custom_vjp_primal_tree_values([1, {"k": cd.CustomVJPPrimal(2.0, True)}]) == [1, {"k": 2.0}]


def test_top_level_names_are_exported() -> None:
    assert cd.custom_gradient is fjax.custom_gradient and cd.closure_convert is fjax.closure_convert
