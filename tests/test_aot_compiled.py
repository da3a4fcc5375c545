"""``jit(f).lower(*args).compile()`` returns a ``jax.stages.Compiled`` called with ``f``'s arguments
(static ones left out), checking structure and types with JAX's errors; ``Traced``/``Lowered``
carry the call's signature. Expected texts recorded from JAX 0.10.2 (same calls)."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import stages


def _f(d, y):
    return {"s": d["a"] * y, "t": d["b"].sum()}


ARGS = ({"a": np.ones(3, np.float32), "b": np.arange(4.0, dtype=np.float32)}, 2.0)


def test_compiled_call_and_signature():
    lowered = fjax.jit(_f).lower(*ARGS)
    c = lowered.compile()
    assert isinstance(c, stages.Compiled)
    out = c(*ARGS)
    np.testing.assert_array_equal(out["s"], [2, 2, 2])
    assert float(out["t"]) == 6.0
    assert str(c.in_tree) == "PyTreeDef((({'a': *, 'b': *}, *), {}))" == str(lowered.in_tree)
    assert str(c.out_tree) == "PyTreeDef({'s': *, 't': *})"
    assert repr(c.args_info) == (
        "(({'a': ArgInfo(_aval=ShapedArray(float32[3]), donated=False), 'b': ArgInfo(_aval=ShapedArray(float32[4]), "
        "donated=False)}, ArgInfo(_aval=ShapedArray(float32[], weak_type=True), donated=False)), {})"
    )
    assert (
        repr(c.out_info)
        == "{'s': ShapeDtypeStruct(shape=(3,), dtype=float32), 't': ShapeDtypeStruct(shape=(), dtype=float32)}"
    )
    assert c.input_shardings[0][1].device_set == {fjax.devices()[0]}


def test_compiled_errors_as_jax():
    c = fjax.jit(_f).lower(*ARGS).compile()
    with pytest.raises(TypeError) as e:
        c(jnp.ones(3), 2.0)
    assert str(e.value) == (
        "Function compiled with input pytree does not match the input pytree it was called with. There are 1 "
        "mismatches, including:\n    * at args[0], seen <class 'dict'> but now given pytree leaf, so their "
        "Python types differ"
    )
    with pytest.raises(TypeError) as e:
        c({"a": jnp.ones(4), "b": jnp.arange(4.0)}, 2.0)
    assert str(e.value).endswith(
        "AOT compiled? The mismatches are:\nArgument 'd['a']' compiled with float32[3] and called with float32[4]"
    )
    with pytest.raises(TypeError, match=r"Argument 'y' compiled with float32\[\] and called with int32\[\]"):
        c(ARGS[0], 2)
    with pytest.raises(TypeError, match="Cannot apply JAX transformations to a function lowered and compiled"):
        fjax.grad(lambda a: c({"a": a, "b": ARGS[0]["b"]}, 2.0)["t"])(ARGS[0]["a"])


def test_static_and_keyword_arguments():
    @partial(fjax.jit, static_argnums=1)
    def g(x, n, *, scale=1.0):
        return x * n * scale

    lowered = g.lower(jnp.ones(3), 2, scale=3.0)
    assert str(lowered.in_tree) == "PyTreeDef(((*,), {'scale': *}))" and lowered.donate_argnums == ()
    c = lowered.compile()
    np.testing.assert_array_equal(c(jnp.ones(3), scale=3.0), [6, 6, 6])
    np.testing.assert_array_equal(c(jnp.ones(3), scale=jnp.float32(2.0)), [4, 4, 4])  # weak type may differ
    with pytest.raises(TypeError) as e:
        c(jnp.ones(3), 2, scale=3.0)
    assert str(e.value).endswith(
        "* at args, seen tuple of length 1 but now given tuple of length 2, so the lengths do not match"
    )
    with pytest.raises(TypeError) as e:
        c(jnp.ones(3))
    assert str(e.value).endswith(
        "* at kwargs, seen <class 'dict'> with 1 child but now given <class 'dict'> with 0 child, so the numbers of "
        "children do not match, with the symmetric difference of key sets: {'scale'}"
    )


def test_donation_trace_and_analyses():
    h = fjax.jit(lambda x, y: x + y, donate_argnums=0)
    lowered = h.lower(jnp.ones(2), jnp.ones(2))
    assert lowered.donate_argnums == (0,) and [a.donated for a in lowered.args_info[0]] == [True, False]
    t = fjax.jit(lambda x: x * 2).trace(jnp.ones(2))
    assert repr(t.out_info) == "ShapeDtypeStruct(shape=(2,), dtype=float32)" and t.fun_name == "<lambda>"
    mem = t.lower().compile().memory_analysis()
    assert mem.argument_size_in_bytes == 8 and mem.output_size_in_bytes == 8
    cost = fjax.jit(lambda a, b: jnp.exp(a @ b)).lower(jnp.ones((4, 5)), jnp.ones((5, 3))).cost_analysis()
    assert cost["flops"] == 2 * 4 * 3 * 5 + 12 and cost["transcendentals"] == 12
    assert cost["bytes accessed"] == 4 * (20 + 15 + 12)
    with pytest.raises(NotImplementedError, match="compiler_options"):
        t.lower().compile({"xla_cpu_enable_fast_math": True})


@settings(max_examples=8, deadline=None)
@given(shape=st.lists(st.integers(1, 4), max_size=3), seed=st.integers(0, 2**31 - 1))
def test_compiled_matches_jit(shape, seed):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)

    def f(x):
        return jnp.tanh(x) * 2 + jnp.sum(x)

    c = fjax.jit(f).lower(x).compile()
    np.testing.assert_allclose(np.asarray(c(x)), np.asarray(fjax.jit(f)(x)), rtol=1e-6)
    assert str(fjax.core.ShapedArray(x.shape, np.float32, True)) == "~float32[" + ",".join(map(str, shape)) + "]"
