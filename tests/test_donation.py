"""Buffer donation (``jit(..., donate_argnums=...)``) and ``Array.delete``, as JAX: a donated
argument that an output of the same shape and dtype can take over is deleted after the call
(reading it raises ``RuntimeError``); the others are kept and named once in JAX's warning."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp


def test_delete_and_deleted_array_errors():
    x = jnp.arange(3.0)
    assert not x.is_deleted() and isinstance(x.unsafe_buffer_pointer(), int)
    x.delete()
    assert x.is_deleted() and x.shape == (3,) and x.dtype == np.float32
    for use in (
        lambda: x + 1,
        lambda: repr(x),
        lambda: np.asarray(x),
        lambda: jnp.sum(x),
        lambda: fjax.jit(jnp.sin)(x),
    ):
        with pytest.raises(RuntimeError, match=r"Array has been deleted with shape=float32\[3\]\."):
            use()
    x.delete()  # (again: nothing)


def test_donated_arguments_are_deleted_when_usable():
    f = fjax.jit(lambda x, y: x + y.sum(), donate_argnums=(0, 1))
    x, y = jnp.ones(3), jnp.ones(10)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = f(x, y)
        f(jnp.ones(3), jnp.ones(10))  # the warning is once per program
    msgs = [str(m.message) for m in w if "donated" in str(m.message)]
    assert msgs == [
        "Some donated buffers were not usable: float32[10].\n"
        "See an explanation at https://docs.jax.dev/en/latest/faq.html#buffer-donation."
    ]
    np.testing.assert_array_equal(np.asarray(out), [11.0, 11.0, 11.0])
    assert x.is_deleted() and not y.is_deleted()
    np.testing.assert_array_equal(np.asarray(y), np.ones(10))


def test_donation_in_a_training_loop_and_pytrees():
    step = fjax.jit(lambda p, g: fjax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g), donate_argnums=0)
    params = {"w": jnp.ones((2, 2)), "b": jnp.zeros(2)}
    grads = {"w": jnp.ones((2, 2)), "b": jnp.ones(2)}
    old = params
    for _ in range(3):
        params = step(params, grads)
    assert old["w"].is_deleted() and old["b"].is_deleted()
    assert not grads["w"].is_deleted()
    np.testing.assert_allclose(np.asarray(params["w"]), np.full((2, 2), 0.7), rtol=1e-6)
    # numpy inputs are copied in, so nothing of the caller's is deleted
    a = np.ones(2, np.float32)
    fjax.jit(lambda a: a * 2, donate_argnums=0)(a)
    assert a.sum() == 2


def test_no_donation_without_donate_argnums():
    x = jnp.ones(3)
    fjax.jit(lambda x: x * 2)(x)
    assert not x.is_deleted()
