"""Differences from JAX 0.10.2 fixed in session 16: vmap's pytree-prefix checks of ``in_axes`` /
``out_axes`` (list vs tuple, JAX's leaf class name, numpy-integer axes), ``jnp.pad``'s refusal of
float pad widths, and the jaxprs of ``grad`` through a scan whose outputs are all forwarded (the
error-message families of session 16 are in tests/test_jax_fidelity_s16_messages.py).

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


# ---------------------------------------------------------------------------------------------
# grad through a scan whose outputs are forwarded: JAX's JVP scan takes the nonzero tangents even
# when no tangent comes out, and its partial evaluation runs no known scan that has no outputs
# and no effects, and passes the known scan only the consts its body reads


def _carry_fwd(c, xs):
    c2, _ = fjax.lax.scan(lambda c, x: (c, None), c, xs)
    return c2 * 3.0


def _ys_from_xs(c, xs):
    _, ys = fjax.lax.scan(lambda c, x: (c, x), c, xs)
    return jnp.sum(ys * 2.0)


def _both_fwd(c, xs):
    c2, ys = fjax.lax.scan(lambda c, x: (c, x), c, xs)
    return jnp.sum(ys * c2)


def _mixed(c, xs):
    (a, b), ys = fjax.lax.scan(lambda c, x: ((c[0], c[1] * x), x), (c, c), xs)
    return a + b + jnp.sum(ys)


def _two_carries_fwd(c, xs):
    c2, ys = fjax.lax.scan(lambda c, x: ((c[0], c[1]), x), (c, c * 2), xs)
    return c2[0] * c2[1] + jnp.sum(ys)


def _effect_fwd(c, xs):
    def body(c, x):
        fjax.debug.callback(lambda v: None, x)
        return c, x

    c2, ys = fjax.lax.scan(body, c, xs)
    return c2 * jnp.sum(ys)


_C0, _XS = jnp.float32(2.0), jnp.arange(3.0)

SCAN_GRAD_CASES = {
    "grad carry_fwd": lambda: fjax.make_jaxpr(fjax.grad(_carry_fwd))(_C0, _XS),
    "grad ys_from_xs argnums=1": lambda: fjax.make_jaxpr(fjax.grad(_ys_from_xs, 1))(_C0, _XS),
    "vjp both_fwd": lambda: fjax.make_jaxpr(lambda c, xs: fjax.vjp(_both_fwd, c, xs)[1](jnp.float32(1.0)))(_C0, _XS),
    "grad mixed": lambda: fjax.make_jaxpr(fjax.grad(_mixed))(_C0, _XS),
    "grad two_carries_fwd argnums=(0,1)": lambda: fjax.make_jaxpr(fjax.grad(_two_carries_fwd, (0, 1)))(_C0, _XS),
    "jvp carry_fwd": lambda: fjax.make_jaxpr(lambda c, xs: fjax.jvp(_carry_fwd, (c, xs), (c, xs)))(_C0, _XS),
    "linearize carry_fwd": lambda: fjax.make_jaxpr(lambda c, xs: fjax.linearize(_carry_fwd, c, xs)[1](c, xs))(_C0, _XS),
    "vmap grad mixed": lambda: fjax.make_jaxpr(fjax.vmap(fjax.grad(_mixed), (0, None)))(_XS, _XS),
}

# str(jax.make_jaxpr(...)) of the same calls under JAX 0.10.2 (jax.lax.scan for fjax.lax.scan)
SCAN_GRAD_JAXPRS = {
    "grad carry_fwd": (
        "{ lambda ; a:f32[] b:f32[3]. let\n"
        "    _:f32[] = mul a 3.0:f32[]\n"
        "    c:f32[] = mul 1.0:f32[] 3.0:f32[]\n"
        "  in (c,) }"
    ),
    "grad ys_from_xs argnums=1": (
        "{ lambda ; a:f32[] b:f32[3]. let\n"
        "    c:f32[3] = mul b 2.0:f32[]\n"
        "    _:f32[] = reduce_sum[axes=(0,) out_sharding=None] c\n"
        "    d:f32[3] = broadcast_in_dim 1.0:f32[]\n"
        "    e:f32[3] = mul d 2.0:f32[]\n"
        "  in (e,) }"
    ),
    "vjp both_fwd": (
        "{ lambda ; a:f32[] b:f32[3]. let\n"
        "    c:f32[3] = mul b a\n"
        "    _:f32[] = reduce_sum[axes=(0,) out_sharding=None] c\n"
        "    d:f32[3] = broadcast_in_dim 1.0:f32[]\n"
        "    e:f32[3] = mul b d\n"
        "    f:f32[] = reduce_sum[axes=(0,) out_sharding=None] e\n"
        "    g:f32[3] = mul d a\n"
        "  in (f, g) }"
    ),
    "grad mixed": (
        "{ lambda ; a:f32[] b:f32[3]. let\n"
        "    c:f32[] = scan[\n"
        "      jaxpr={ lambda ; d:f32[] e:f32[]. let f:f32[] = mul d e in (f,) }\n"
        "      length=3\n"
        "      num_carry=1\n"
        "      num_consts=0\n"
        "      reverse=False\n"
        "      unroll=1\n"
        "    ] a b\n"
        "    g:f32[] = add a c\n"
        "    h:f32[] = reduce_sum[axes=(0,) out_sharding=None] b\n"
        "    _:f32[] = add g h\n"
        "    i:f32[] = scan[\n"
        "      jaxpr={ lambda ; j:f32[] k:f32[]. let l:f32[] = mul j k in (l,) }\n"
        "      length=3\n"
        "      num_carry=1\n"
        "      num_consts=0\n"
        "      reverse=True\n"
        "      unroll=1\n"
        "    ] 1.0:f32[] b\n"
        "    m:f32[] = add_any 1.0:f32[] i\n"
        "  in (m,) }"
    ),
    "grad two_carries_fwd argnums=(0,1)": (
        "{ lambda ; a:f32[] b:f32[3]. let\n"
        "    c:f32[] = mul a 2.0:f32[]\n"
        "    d:f32[] = mul a c\n"
        "    e:f32[] = reduce_sum[axes=(0,) out_sharding=None] b\n"
        "    _:f32[] = add d e\n"
        "    f:f32[3] = broadcast_in_dim 1.0:f32[]\n"
        "    g:f32[] = mul a 1.0:f32[]\n"
        "    h:f32[] = mul 1.0:f32[] c\n"
        "    i:f32[] = mul g 2.0:f32[]\n"
        "    j:f32[] = add_any h i\n"
        "  in (j, f) }"
    ),
    "jvp carry_fwd": (
        "{ lambda ; a:f32[] b:f32[3]. let\n"
        "    scan[\n"
        "      jaxpr={ lambda ; c:f32[] d:f32[] e:f32[] f:f32[]. let  in () }\n"
        "      length=3\n"
        "      num_carry=0\n"
        "      num_consts=2\n"
        "      reverse=False\n"
        "      unroll=1\n"
        "    ] a a b b\n"
        "    g:f32[] = mul a 3.0:f32[]\n"
        "    h:f32[] = mul a 3.0:f32[]\n"
        "  in (g, h) }"
    ),
    "linearize carry_fwd": (
        "{ lambda ; a:f32[] b:f32[3]. let\n    _:f32[] = mul a 3.0:f32[]\n    c:f32[] = mul a 3.0:f32[]\n  in (c,) }"
    ),
    "vmap grad mixed": (
        "{ lambda ; a:f32[3] b:f32[3]. let\n"
        "    c:f32[3] = scan[\n"
        "      jaxpr={ lambda ; d:f32[3] e:f32[]. let f:f32[3] = mul d e in (f,) }\n"
        "      length=3\n"
        "      num_carry=1\n"
        "      num_consts=0\n"
        "      reverse=False\n"
        "      unroll=1\n"
        "    ] a b\n"
        "    g:f32[3] = add a c\n"
        "    h:f32[] = reduce_sum[axes=(0,) out_sharding=None] b\n"
        "    _:f32[3] = add g h\n"
        "    i:f32[] = scan[\n"
        "      jaxpr={ lambda ; j:f32[] k:f32[]. let l:f32[] = mul j k in (l,) }\n"
        "      length=3\n"
        "      num_carry=1\n"
        "      num_consts=0\n"
        "      reverse=True\n"
        "      unroll=1\n"
        "    ] 1.0:f32[] b\n"
        "    m:f32[] = add_any 1.0:f32[] i\n"
        "    n:f32[3] = broadcast_in_dim m\n"
        "  in (n,) }"
    ),
}


@pytest.mark.parametrize("name", sorted(SCAN_GRAD_CASES))
def test_grad_of_forwarded_scan_prints_as_jaxs(name: str) -> None:
    assert str(SCAN_GRAD_CASES[name]()) == SCAN_GRAD_JAXPRS[name]


def test_grad_of_forwarded_scan_runs_no_empty_scan() -> None:
    for name in ("grad carry_fwd", "grad ys_from_xs argnums=1", "vjp both_fwd", "linearize carry_fwd"):
        assert "scan[" not in str(SCAN_GRAD_CASES[name]()), name


def test_effectful_forwarded_scan_is_kept_under_grad() -> None:
    # the known scan has no outputs but a callback: it still runs, once per step
    calls = []

    def f(c, xs):
        def body(c, x):
            fjax.debug.callback(lambda v: calls.append(float(v)), x)
            return c, None

        c2, _ = fjax.lax.scan(body, c, xs)
        return c2 * 3.0

    assert "scan[" in str(fjax.make_jaxpr(fjax.grad(f))(_C0, _XS))
    calls.clear()
    assert float(fjax.grad(f)(_C0, _XS)) == 3.0
    assert calls == [0.0, 1.0, 2.0]


def _fd_grad(f, c: float, xs: np.ndarray, eps: float = 1e-3) -> tuple[float, np.ndarray]:
    """Central differences in float64 of ``f`` (a numpy function of the scalar ``c`` and ``xs``)."""
    gc = (f(c + eps, xs) - f(c - eps, xs)) / (2 * eps)
    gx = np.array([(f(c, xs + eps * e) - f(c, xs - eps * e)) / (2 * eps) for e in np.eye(len(xs))])
    return gc, gx


_NUMPY_REFS = {
    _carry_fwd: lambda c, xs: c * 3.0,
    _ys_from_xs: lambda c, xs: np.sum(xs * 2.0),
    _both_fwd: lambda c, xs: np.sum(xs * c),
    _mixed: lambda c, xs: c + c * np.prod(xs) + np.sum(xs),
    _two_carries_fwd: lambda c, xs: c * (2 * c) + np.sum(xs),
    _effect_fwd: lambda c, xs: c * np.sum(xs),
}


@pytest.mark.parametrize("f", list(_NUMPY_REFS), ids=lambda f: f.__name__)
@given(c=st.floats(-2.0, 2.0), xs=st.lists(st.floats(-2.0, 2.0), min_size=1, max_size=4))
def test_grad_of_forwarded_scan_matches_finite_differences(f, c: float, xs: list) -> None:
    xs64 = np.asarray(xs, np.float64)
    gc, gx = fjax.grad(f, (0, 1))(jnp.float32(c), jnp.asarray(xs64, jnp.float32))
    want_c, want_x = _fd_grad(_NUMPY_REFS[f], c, xs64)
    np.testing.assert_allclose(float(gc), want_c, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(np.asarray(gx), want_x, rtol=2e-3, atol=2e-3)
    # the same under jit (the scan nested in a jaxpr, split by partial_eval_jaxpr)
    gc_j, gx_j = fjax.jit(fjax.grad(f, (0, 1)))(jnp.float32(c), jnp.asarray(xs64, jnp.float32))
    np.testing.assert_allclose(float(gc_j), float(gc), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(gx_j), np.asarray(gx), rtol=1e-6)
