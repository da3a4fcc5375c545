"""jnp/lax shape and indexing functions on typed key arrays (``random.key``), as in JAX: each
behaves as numpy's function applied to each uint32 word of the keys."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
import fjax.numpy as jnp
from fjax import lax, random


def _keys(shape):
    n = int(np.prod(shape, dtype=np.int64))
    return random.split(random.key(7), max(n, 1))[:n].reshape(shape)


def _words(k):
    return np.asarray(random.key_data(k))


def _numpy_on_words(fn, k, *args, **kw):
    d = _words(k)
    a, b = fn(d[..., 0], *args, **kw), fn(d[..., 1], *args, **kw)
    if isinstance(a, list):
        return [np.stack([x, y], -1) for x, y in zip(a, b)]
    return np.stack([a, b], -1)


CASES = [
    ("reshape", ((3, 4),), {}),
    ("reshape", ((-1,),), {}),
    ("expand_dims", (-1,), {}),
    ("expand_dims", ((0, 2),), {}),
    ("squeeze", (), {}),
    ("broadcast_to", ((5, 4, 3),), {}),
    ("take", (np.array([2, 0, 2]),), {"axis": -1}),
    ("take", (np.array([5, 1]),), {}),
    ("swapaxes", (0, -1), {}),
    ("moveaxis", (0, -1), {}),
    ("transpose", (), {}),
    ("flip", (), {}),
    ("flip", (-1,), {}),
    ("fliplr", (), {}),
    ("roll", (2,), {}),
    ("roll", (1,), {"axis": -1}),
    ("tile", ((2, 1),), {}),
    ("repeat", (2,), {"axis": 0}),
    ("repeat", (3,), {}),
    ("atleast_3d", (), {}),
    ("split", (2,), {"axis": 0}),
    ("array_split", (2,), {"axis": 1}),
    ("rot90", (), {}),
    ("diagonal", (), {}),
]


@pytest.mark.parametrize("name, args, kw", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_jnp_functions_on_keys_act_on_each_word(name, args, kw):
    k = _keys((4, 3))
    got = getattr(jnp, name)(k, *args, **kw)
    want = _numpy_on_words(getattr(np, name), k, *args, **kw)
    if isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.dtype == k.dtype
            np.testing.assert_array_equal(_words(g), w)
    else:
        assert got.dtype == k.dtype and got.shape == want.shape[:-1]
        np.testing.assert_array_equal(_words(got), want)


@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    data=st.data(),
)
def test_axis_functions_on_keys_hypothesis(shape, data):
    k = _keys(tuple(shape))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    for name, args in [("flip", (axis,)), ("roll", (1, axis)), ("expand_dims", (axis,)), ("repeat", (2, axis))]:
        got = getattr(jnp, name)(k, *args)
        np.testing.assert_array_equal(_words(got), _numpy_on_words(getattr(np, name), k, *args))


def test_lax_functions_and_methods_on_keys():
    k = _keys((4, 3))
    d = _words(k)
    np.testing.assert_array_equal(_words(lax.dynamic_index_in_dim(k, 2, keepdims=False)), d[2])
    np.testing.assert_array_equal(_words(lax.dynamic_slice(k, (1, 0), (2, 3))), d[1:3])
    np.testing.assert_array_equal(_words(lax.rev(k, (1,))), d[:, ::-1])
    np.testing.assert_array_equal(_words(lax.squeeze(k[None], (0,))), d)
    np.testing.assert_array_equal(_words(k.T), d.transpose(1, 0, 2))
    np.testing.assert_array_equal(_words(k.swapaxes(0, 1)), d.transpose(1, 0, 2))
    np.testing.assert_array_equal(_words(k.take(np.array([1, 3]), axis=0)), d[[1, 3]])
    new = random.key(123)
    upd = k.at[1, 2].set(new)
    want = d.copy()
    want[1, 2] = _words(new)
    np.testing.assert_array_equal(_words(upd), want)
    np.testing.assert_array_equal(_words(k.at[0].get()), d[0])
    with pytest.raises(TypeError, match="key array"):
        k.at[0].set(np.zeros(3, np.uint32))


def test_key_shape_functions_under_jit_vmap_and_scan():
    k = _keys((5, 2))
    d = _words(k)
    got = fjax.jit(lambda k: jnp.flip(jnp.swapaxes(k, 0, 1), -1))(k)
    np.testing.assert_array_equal(_words(got), d.transpose(1, 0, 2)[:, ::-1])
    # per row: the reversed row's keys draw the same numbers as the row's keys reversed
    rows = fjax.vmap(lambda kk: jax_normal(jnp.flip(kk)))(k)
    want = np.stack([np.asarray(jax_normal(jnp.flip(k[i]))) for i in range(5)])
    np.testing.assert_allclose(np.asarray(rows), want, rtol=1e-6)

    def body(c, kk):
        return c, random.uniform(jnp.reshape(kk, ()))

    _, ys = lax.scan(body, 0.0, jnp.expand_dims(k[:, 0], -1))
    np.testing.assert_allclose(np.asarray(ys), [float(random.uniform(k[i, 0])) for i in range(5)], rtol=1e-6)


def jax_normal(keys):
    return fjax.vmap(random.normal)(keys)


def test_plain_arrays_unchanged():
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(np.asarray(jnp.flip(x, -1)), np.flip(x, -1))
    assert jnp.reshape.__name__ == "reshape" and jnp.reshape.__doc__ == jnp.reshape.__wrapped__.__doc__


def test_jit_eval_shape_and_lower_take_key_shape_dtype_structs():
    kd = random.key(0).dtype
    f = fjax.jit(lambda k, x: (random.split(k[0]), random.normal(k[1], x.shape) + x))
    spec = (fjax.ShapeDtypeStruct((3,), kd), fjax.ShapeDtypeStruct((4,), np.float32))
    keys_out, x_out = f.eval_shape(*spec)
    assert keys_out.shape == (2,) and keys_out.dtype == kd
    assert x_out.shape == (4,) and x_out.dtype == np.float32
    assert f.eval_shape(random.split(random.key(1), 3), np.ones(4, np.float32))[0].dtype == kd
    assert "program" in f.trace(*spec).lower().as_text()
