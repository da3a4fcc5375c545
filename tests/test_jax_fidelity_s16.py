"""Differences from JAX 0.10.2 fixed in session 16: vmap's pytree-prefix checks of ``in_axes`` /
``out_axes`` (list vs tuple, JAX's leaf class name, numpy-integer axes), ``jnp.pad``'s refusal of
float pad widths, and the jaxprs of ``grad`` through a scan whose outputs are all forwarded.

Every expected message and jaxpr here was printed by JAX 0.10.2 (CPU, x64 off, numpy 2.4) in a
separate virtual environment (``pip install jax``), running the same call; the suite never
imports jax.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp

X = jnp.ones(3)


def _raises(fn) -> tuple[str, str]:
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value).__name__, str(info.value)


def _prefix_msg(what: str, path: str, prefix_t: str, full_t: str) -> str:
    # JAX 0.10.2's wording for one "different types" prefix mismatch of vmap's in_axes/out_axes
    return (
        f"vmap {what} specification must be a tree prefix of the corresponding value; \n"
        "  Mismatch details (1 found):\n"
        "  pytree structure error: different types at key path\n"
        f"    vmap {what}{path}\n"
        f"At that key path, the prefix pytree vmap {what} has a subtree of type\n"
        f"    <class '{prefix_t}'>\n"
        "but at the same key path the full pytree has a subtree of different type\n"
        f"    <class '{full_t}'>."
    )


_LEAF = "jax._src.api_util.PytreeLeaf"

# (call, (JAX's exception type, JAX's message)) for each invalid prefix, as JAX 0.10.2 printed it
PREFIX_CASES = {
    "out_axes tuple for list output": (
        lambda: fjax.vmap(lambda x: [x], out_axes=(0,))(X),
        _prefix_msg("out_axes", "", "tuple", "list"),
    ),
    "out_axes list for tuple output": (
        lambda: fjax.vmap(lambda x: (x,), out_axes=[0])(X),
        _prefix_msg("out_axes", "", "list", "tuple"),
    ),
    "out_axes tuple for dict output": (
        lambda: fjax.vmap(lambda x: {"a": x}, out_axes=(0,))(X),
        _prefix_msg("out_axes", "", "tuple", "dict"),
    ),
    "in_axes list for tuple argument": (
        lambda: fjax.vmap(lambda x: x, in_axes=([0, 0],))((X, X)),
        _prefix_msg("in_axes", "[0]", "list", "tuple"),
    ),
    "in_axes tuple for list argument": (
        lambda: fjax.vmap(lambda x: x, in_axes=((0, 0),))([X, X]),
        _prefix_msg("in_axes", "[0]", "tuple", "list"),
    ),
    "in_axes tuple for array argument": (
        lambda: fjax.vmap(lambda x: x, in_axes=((0, 0),))(X),
        _prefix_msg("in_axes", "[0]", "tuple", _LEAF),
    ),
    "in_axes dict for array argument": (
        lambda: fjax.vmap(lambda x: x, in_axes=({"a": 0},))(X),
        _prefix_msg("in_axes", "[0]", "dict", _LEAF),
    ),
    "out_axes tuple for array output": (
        lambda: fjax.vmap(lambda x: x, out_axes=(0, 0))(X),
        _prefix_msg("out_axes", "", "tuple", _LEAF),
    ),
    "out_axes nested tuple for array in tuple output": (
        lambda: fjax.vmap(lambda x: (x, x), out_axes=((0,), 0))(X),
        _prefix_msg("out_axes", "[0]", "tuple", _LEAF),
    ),
    "out_axes list of wrong length": (
        lambda: fjax.vmap(lambda x: [x, x], out_axes=[0])(X),
        "vmap out_axes specification must be a tree prefix of the corresponding value; \n"
        "  Mismatch details (1 found):\n"
        "  pytree structure error: different lengths of list at key path\n"
        "    vmap out_axes\n"
        "At that key path, the prefix pytree vmap out_axes has a subtree of type list of length 1, but the full "
        "pytree has a subtree of the same type but of length 2.",
    ),
}


@pytest.mark.parametrize("name", sorted(PREFIX_CASES))
def test_vmap_prefix_mismatch_is_jaxs(name: str) -> None:
    fn, want = PREFIX_CASES[name]
    assert _raises(fn) == ("ValueError", want)


def test_vmap_matching_containers_still_map() -> None:
    x = jnp.arange(6.0).reshape(2, 3)
    out = fjax.vmap(lambda a: [a, a * 2], out_axes=[0, 1])(x)
    np.testing.assert_array_equal(out[0], np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(out[1], 2 * np.arange(6.0).reshape(2, 3).T)
    out = fjax.vmap(lambda p: p[0] + p[1], in_axes=([0, 1],))([x, x.T])
    np.testing.assert_array_equal(out, 2 * np.arange(6.0).reshape(2, 3))
    # a top-level list in_axes stands for the tuple of positional arguments (as in JAX)
    out = fjax.vmap(lambda a, b: a + b, in_axes=[0, None])(x, jnp.ones(3))
    np.testing.assert_array_equal(out, np.arange(6.0).reshape(2, 3) + 1)


# JAX checks for Python ints: a numpy integer axis is refused when vmap is called (JAX 0.10.2's messages)
NUMPY_INT_AXES = {
    "in_axes tuple leaf": (
        lambda: fjax.vmap(lambda x, y: x + y, in_axes=(np.int64(0), 0)),
        "vmap in_axes must be an int, None, or (nested) container with those types as leaves, but got "
        "(np.int64(0), 0).",
    ),
    "in_axes scalar": (
        lambda: fjax.vmap(lambda x, y: x + y, in_axes=np.int64(0)),
        "vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional arguments "
        "passed to the function, but got 0.",
    ),
    "out_axes scalar": (
        lambda: fjax.vmap(lambda x: [x, x], out_axes=np.int64(0)),
        "vmap out_axes must be an int, None, or (nested) container with those types as leaves, but got 0.",
    ),
    "out_axes list leaf": (
        lambda: fjax.vmap(lambda x: [x, x], out_axes=[np.int64(0), 0]),
        "vmap out_axes must be an int, None, or (nested) container with those types as leaves, but got "
        "[np.int64(0), 0].",
    ),
}


@pytest.mark.parametrize("name", sorted(NUMPY_INT_AXES))
def test_vmap_numpy_integer_axes_refused_as_in_jax(name: str) -> None:
    fn, want = NUMPY_INT_AXES[name]
    assert _raises(fn) == ("TypeError", want)


# ---------------------------------------------------------------------------------------------
# jnp.pad: JAX 0.10.2 raises TypeError("`pad_width` must be of integral type.") for every
# non-integer pad_width with entries (integer-valued floats, bools, complex), in every mode

_PAD_MSG = ("TypeError", "`pad_width` must be of integral type.")


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap", "mean"])
@pytest.mark.parametrize("pw", [1.0, (1.0, 2.0), ((1.0, 2.0),), (1, 2.0), np.array([1.0]), -1.0, True, 1j], ids=repr)
def test_pad_refuses_non_integer_widths(pw, mode: str) -> None:
    assert _raises(lambda: jnp.pad(X, pw, mode=mode)) == _PAD_MSG


def test_pad_refuses_float_array_widths_under_jit() -> None:
    assert _raises(lambda: fjax.jit(lambda x: jnp.pad(x, jnp.array(1.0)))(X)) == _PAD_MSG


@given(
    before=st.integers(0, 3),
    after=st.integers(0, 3),
    int_type=st.sampled_from([int, np.int32, np.uint8, np.int64]),
)
def test_pad_integer_widths_match_numpy(before: int, after: int, int_type) -> None:
    x = np.arange(4.0, dtype=np.float32)
    pw = (int_type(before), int_type(after))
    np.testing.assert_array_equal(jnp.pad(jnp.asarray(x), pw), np.pad(x, (before, after)))
    with pytest.raises(TypeError, match="must be of integral type"):
        jnp.pad(jnp.asarray(x), (float(before), float(after)))


def test_pad_empty_float_widths_of_a_scalar_pass() -> None:
    # JAX 0.10.2: jnp.pad(jnp.float32(1), np.zeros((0, 2))) returns 1.0 (no entries, nothing to check)
    assert float(jnp.pad(jnp.float32(1), np.zeros((0, 2)))) == 1.0
