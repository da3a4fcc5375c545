"""The public transforms' API: pytrees, argnums, has_aux, in_axes/out_axes, errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fjax
from fjax import dtypes, lax


def arr(x, dtype=np.float32):
    return fjax.Array(np.asarray(x, dtype))


def total(x):
    return lax.reduce_sum(x, tuple(range(x.ndim)))


# ---- grad --------------------------------------------------------------------------------


def test_grad_over_nested_dict_params():
    params = {"w": arr([[1.0, 2.0], [3.0, 4.0]]), "b": arr([0.5, -0.5]), "extra": (arr(2.0),)}

    def loss(p, x):
        h = lax.add(lax.dot_general(x, p["w"], (((0,), (0,)), ((), ()))), p["b"])
        return lax.mul(total(lax.mul(h, h)), p["extra"][0])

    x = arr([1.0, -1.0])
    g = fjax.grad(loss)(params, x)
    assert set(g) == {"w", "b", "extra"} and isinstance(g["extra"], tuple)
    w, b, s = np.asarray(params["w"]), np.asarray(params["b"]), 2.0
    h = np.asarray(x) @ w + b
    np.testing.assert_allclose(g["b"], 2 * s * h, rtol=1e-6)
    np.testing.assert_allclose(g["w"], 2 * s * np.outer(np.asarray(x), h), rtol=1e-6)
    np.testing.assert_allclose(g["extra"][0], np.sum(h * h), rtol=1e-6)


def test_argnums_tuple_and_has_aux():
    def f(x, y, z):
        return lax.mul(lax.mul(x, y), z), {"aux": lax.add(x, 1.0)}

    (gx, gz), aux = fjax.grad(f, argnums=(0, 2), has_aux=True)(2.0, 3.0, 4.0)
    assert float(gx) == 12.0 and float(gz) == 6.0
    assert float(aux["aux"]) == 3.0
    (val, aux2), g = fjax.value_and_grad(f, has_aux=True)(2.0, 3.0, 4.0)
    assert float(val) == 24.0 and float(g) == 12.0 and float(aux2["aux"]) == 3.0


def test_grad_weak_type_and_dtype_preserved():
    g = fjax.grad(lambda x: lax.mul(x, x))(3.0)
    assert g.dtype == np.float32 and g.weak_type
    g2 = fjax.grad(lambda x: lax.mul(x, x))(arr(3.0))
    assert g2.dtype == np.float32 and not g2.weak_type


def test_allow_int_gives_float0():
    g = fjax.grad(lambda x, n: lax.mul(x, lax.convert_element_type(n, np.float32)), argnums=(0, 1), allow_int=True)(
        2.0, fjax.Array(np.array(3, np.int32))
    )
    assert float(g[0]) == 3.0
    assert g[1].dtype == dtypes.float0


def test_argnums_out_of_range():
    with pytest.raises(TypeError, match="argnums"):
        fjax.grad(lambda x: x, argnums=2)(1.0)


def test_vjp_structure_and_errors():
    out, f_vjp = fjax.vjp(lambda x, y: (lax.mul(x, y), lax.sin(x)), arr([1.0, 2.0]), arr([3.0, 4.0]))
    cx, cy = f_vjp((arr([1.0, 1.0]), arr([0.0, 0.0])))
    np.testing.assert_allclose(cx, [3.0, 4.0])
    np.testing.assert_allclose(cy, [1.0, 2.0])
    with pytest.raises(ValueError, match=r"^unexpected tree structure\.\n"):  # JAX raises ValueError, in these words
        f_vjp(arr([1.0, 1.0]))
    with pytest.raises(ValueError, match="shape"):
        f_vjp((arr([1.0]), arr([0.0, 0.0])))


def test_jvp_errors():
    with pytest.raises(TypeError, match="tuples or lists"):
        fjax.jvp(lax.sin, arr(1.0), arr(1.0))
    with pytest.raises(ValueError, match="shape"):
        fjax.jvp(lax.sin, (arr([1.0, 2.0]),), (arr([1.0]),))
    with pytest.raises(TypeError, match="dtype"):
        fjax.jvp(lax.sin, (arr([1.0]),), (arr([1.0], np.float16),))


def test_linearize_matches_jvp():
    x = arr([0.1, 0.7])
    f = lambda v: lax.mul(lax.exp(v), lax.sin(v))  # noqa: E731
    y, f_jvp = fjax.linearize(f, x)
    t = arr([1.0, -2.0])
    np.testing.assert_allclose(f_jvp(t), fjax.jvp(f, (x,), (t,))[1], rtol=1e-6)
    np.testing.assert_allclose(y, f(x))


def test_jacobian_shapes_as_jax():
    x = arr(np.ones((2, 3)))
    y = arr(np.ones(4))

    def f(x, y):
        return {"a": lax.reduce_sum(x, (1,)), "b": lax.mul(y, 2.0)}

    jf = fjax.jacfwd(f, argnums=(0, 1))(x, y)
    jr = fjax.jacrev(f, argnums=(0, 1))(x, y)
    for j in (jf, jr):
        assert j["a"][0].shape == (2, 2, 3) and j["a"][1].shape == (2, 4)
        assert j["b"][0].shape == (4, 2, 3) and j["b"][1].shape == (4, 4)
    np.testing.assert_allclose(jf["b"][1], 2 * np.eye(4))
    np.testing.assert_allclose(jr["a"][0], jf["a"][0])


# ---- vmap --------------------------------------------------------------------------------


@given(st.sampled_from([0, 1, -1, -2]), st.sampled_from([0, 1, -1]))
def test_vmap_axes(in_axis, out_axis):
    x = np.random.RandomState(0).randn(3, 4).astype(np.float32)
    f = lambda v: lax.mul(lax.sin(v), 2.0)  # noqa: E731
    out = fjax.vmap(f, in_axes=in_axis, out_axes=out_axis)(arr(x))
    xs = np.moveaxis(x, in_axis, 0)
    expected = np.moveaxis(np.stack([np.sin(r) * 2 for r in xs]), 0, out_axis)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_vmap_pytree_prefix_in_axes_and_kwargs():
    p = {"w": arr(np.ones(3)), "b": arr(np.arange(4.0))}
    xs = arr(np.arange(12.0).reshape(4, 3))

    def f(p, x, scale=1.0):
        return lax.mul(lax.add(total(lax.mul(p["w"], x)), p["b"]), scale)

    out = fjax.vmap(f, in_axes=({"w": None, "b": 0}, 0))(p, xs)
    np.testing.assert_allclose(out, np.arange(12.0).reshape(4, 3).sum(1) + np.arange(4.0))
    out_kw = fjax.vmap(f, in_axes=({"w": None, "b": 0}, 0))(p, xs, scale=arr(np.full(4, 2.0)))
    np.testing.assert_allclose(out_kw, 2 * np.asarray(out))


def test_vmap_out_axes_none_and_axis_size():
    out = fjax.vmap(lambda x: (x, lax.mul(x, 2.0)), in_axes=None, out_axes=(None, 0), axis_size=3)(arr(1.0))
    assert out[0].shape == () and out[1].shape == (3,)
    with pytest.raises(ValueError, match="out_axes"):
        fjax.vmap(lambda x: x, out_axes=None)(arr([1.0, 2.0]))


def test_nested_vmap():
    x = np.random.RandomState(1).randn(2, 3, 4).astype(np.float32)
    out = fjax.vmap(fjax.vmap(lambda v: lax.reduce_max(v, (0,))), in_axes=1)(arr(x))
    np.testing.assert_allclose(out, np.max(x, axis=2).T)


def test_vmap_errors():
    with pytest.raises(ValueError, match="inconsistent sizes") as e:
        fjax.vmap(lax.add)(arr(np.ones(3)), arr(np.ones(4)))
    assert "size 3" in str(e.value) and "size 4" in str(e.value)
    with pytest.raises(ValueError, match="axis 2"):
        fjax.vmap(lax.sin, in_axes=2)(arr(np.ones((3, 4))))
    with pytest.raises(ValueError, match="in_axes"):
        fjax.vmap(lax.add, in_axes=(0,))(arr(np.ones(3)), arr(np.ones(3)))
    with pytest.raises(ValueError, match="prefix"):
        fjax.vmap(lambda d: d["a"], in_axes=({"b": 0},))({"a": arr(np.ones(3))})


def test_vmap_grad_per_example():
    w = arr([0.3, -0.2, 0.1])
    xs = arr(np.random.RandomState(2).randn(6, 3))
    ys = arr(np.random.RandomState(3).randn(6))

    def loss(w, x, y):
        r = lax.sub(total(lax.mul(w, x)), y)
        return lax.mul(r, r)

    g = fjax.vmap(fjax.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)
    xn, yn, wn = np.asarray(xs), np.asarray(ys), np.asarray(w)
    expected = 2 * ((xn @ wn) - yn)[:, None] * xn
    np.testing.assert_allclose(g, expected, rtol=1e-5)
    hs = fjax.vmap(fjax.hessian(lambda v: total(lax.mul(lax.sin(v), v))))(xs)
    assert hs.shape == (6, 3, 3)


def test_eval_shape_and_shape_dtype_struct():
    s = fjax.eval_shape(lambda x: lax.reduce_sum(x, (0,)), fjax.ShapeDtypeStruct((3, 4), np.float32))
    assert s.shape == (4,) and s.dtype == np.float32
