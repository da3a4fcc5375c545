"""Behaviours chex's own test suite relies on (``bench/chex_suite.py``), checked against JAX 0.10.2's
documented or observed behaviour, without importing chex or jax."""

from __future__ import annotations

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax.experimental import checkify


def _positive(x):
    checkify.check(x > 0, "bad {x} {y}", x=x, y={"a": x})
    return x


def test_checkify_error_is_a_value_error_with_jax_wording():
    # chex's chexify catches ValueError; JAX's checkify.JaxRuntimeError is one, not jax.errors'
    assert issubclass(checkify.JaxRuntimeError, ValueError)
    assert not issubclass(checkify.JaxRuntimeError, fjax.errors.JaxRuntimeError)
    err, _ = checkify.checkify(_positive)(jnp.float32(-1.0))
    # payloads format as Arrays (a pytree payload shows Array(...)), user checks end so
    assert err.get() == "bad -1.0 {'a': Array(-1., dtype=float32)} (`check` failed)"
    with pytest.raises(checkify.JaxRuntimeError, match=r"bad -1\.0"):
        err.throw()
    with pytest.raises(ValueError, match="`check` failed"):
        _positive(jnp.float32(-1.0))
    assert checkify.checkify(lambda x: checkify.check(x > 0, "v={:.2f}", x))(-1.0)[0].get() == (
        "v=-1.00 (`check` failed)"
    )


def test_checkify_of_vmap_reports_one_example_without_index():
    # a check batched inside checkify reports the last failing example, as JAX's does
    xs = jnp.array([1.0, -2.0, -3.0])
    for f in (checkify.checkify(fjax.vmap(_positive)), fjax.jit(checkify.checkify(fjax.vmap(_positive)))):
        err, _ = f(xs)
        assert err.get() == "bad -3.0 {'a': Array(-3., dtype=float32)} (`check` failed)"
    # an unbatched format argument beside a batched predicate
    g = checkify.checkify(fjax.vmap(fjax.vmap(lambda x: checkify.check(x > 0, "bad {} {}", x, 7))))
    assert g(jnp.array([[1.0, -2.0], [-3.0, 4.0]]))[0].get() == "bad -3.0 7 (`check` failed)"
    assert checkify.checkify(fjax.vmap(_positive))(jnp.ones(3))[0].get() is None


def test_vmap_of_checkify_lists_every_failing_example():
    err, _ = fjax.vmap(fjax.vmap(checkify.checkify(_positive)))(jnp.array([[1.0, -2.0], [3.0, -4.0]]))
    assert err.get() == (
        "at mapped index 0, 1: bad -2.0 {'a': Array(-2., dtype=float32)} (`check` failed)\n"
        "at mapped index 1, 1: bad -4.0 {'a': Array(-4., dtype=float32)} (`check` failed)"
    )


def test_checkify_div_checks_float_division_not_rem():
    div = checkify.checkify(lambda x, y: x / y, errors=checkify.div_checks)
    assert div(jnp.ones(2), 0.0)[0].get() == "division by zero"
    assert div(jnp.ones(2), jnp.array([1.0, 2.0]))[0].get() is None
    rem = checkify.checkify(lambda x, y: fjax.lax.rem(x, y), errors=checkify.div_checks)
    assert rem(jnp.ones(2, jnp.int32), 0)[0].get() is None
    assert checkify.checkify(lambda x, y: x // y, errors=checkify.div_checks)(1, 0)[0].get() == "division by zero"


def test_typed_keys_compare_equal_in_jnp():
    k1 = fjax.random.split(fjax.random.key(1))
    k2 = fjax.random.split(fjax.random.key(2))
    np.testing.assert_array_equal(jnp.equal(k1, k2), [False, False])
    np.testing.assert_array_equal(jnp.not_equal(k1, k2), [True, True])
    assert bool(jnp.array_equal(k1, k1)) and not bool(jnp.array_equal(k1, k2))
    np.testing.assert_array_equal(fjax.jit(jnp.equal)(k1, k1), [True, True])
    np.testing.assert_array_equal(fjax.vmap(jnp.not_equal)(k1, k2), [True, True])
    with pytest.raises(TypeError):
        jnp.less(k1, k2)


def test_jitted_function_signature_repr_and_type_name_as_jax():
    import inspect

    def f(a, b=1):
        return a

    jf = fjax.jit(f)
    # chex's fake_pmap reads the signature without following __wrapped__
    assert str(inspect.signature(jf, follow_wrapped=False)) == "(a, b=1)"
    # chex's is_traceable (assert_max_traces refuses to wrap a jitted function) matches these texts
    assert repr(jf) == f"<PjitFunction of {f!r}>"
    assert "PjitFunction" in str(type(jf))


def test_typed_keys_are_never_nan_or_inf():
    # JAX's isnan is x != x (False for keys), isinf/isfinite constant for non-float dtypes;
    # array_equal(keys, keys, equal_nan=True) (chex's jittable assert_trees_all_equal) relies on it
    k = fjax.random.split(fjax.random.key(1), 3)
    np.testing.assert_array_equal(jnp.isnan(k), [False] * 3)
    np.testing.assert_array_equal(jnp.isinf(k), [False] * 3)
    np.testing.assert_array_equal(jnp.isfinite(k), [True] * 3)
    assert bool(jnp.array_equal(k, k, equal_nan=True))
    assert bool(fjax.jit(lambda a, b: jnp.array_equal(a, b, equal_nan=True))(k, k))


def test_numpy_rank_promotion_option():
    # chex's test mains set jax_numpy_rank_promotion='raise'; JAX's wording, and what counts
    import warnings

    x, y = jnp.ones(3), jnp.ones((2, 3))
    msg = r"Operands could not be broadcast together for add on shapes \(3,\) \(2, 3\) and with the config"
    with fjax.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match=msg):
            x + y
        with pytest.raises(ValueError, match="for logical_and on shapes"):
            jnp.logical_and(x > 0, y > 0)
        with pytest.raises(ValueError, match="for maximum on shapes"):
            jnp.clip(y, x, 2.0)
        with pytest.raises(ValueError, match="for subtract on shapes"):
            fjax.jit(lambda a, b: a - b)(x, y)
        # a scalar, equal ranks (size-1 dims) and where are not rank promotion
        assert (x * 2.0).shape == (3,) and (jnp.ones(()) + y).shape == (2, 3)
        assert (jnp.ones((1, 3)) + y).shape == (2, 3) and jnp.where(x > 0, y, 0.0).shape == (2, 3)
    with fjax.numpy_rank_promotion("warn"), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert (x + y).shape == (2, 3)
    assert "Following NumPy automatic rank promotion for add on shapes (3,) (2, 3)" in str(w[0].message)
    with pytest.raises(ValueError, match=r"must be in \['allow', 'warn', 'raise'\], got foo"):
        fjax.config.update("jax_numpy_rank_promotion", "foo")
    # jit keys its traces on the option: traced under 'allow', called under 'raise' retraces
    g = fjax.jit(lambda a, b: a + b)
    assert g(x, y).shape == (2, 3)
    with fjax.numpy_rank_promotion("raise"), pytest.raises(ValueError):
        g(x, y)
    assert fjax.config.jax_numpy_rank_promotion == "allow"
