"""lax's n-ary elementwise ops broadcast size-1 dimensions, as JAX 0.10.2's do: ``lax.add`` of
f32[4,1] and f32[1,5] is f32[4,5] (operands of different ranks are still a TypeError; rank-0
operands broadcast as before). Checked eagerly, under jit (numba, and the CUDA source on the CPU
emulator), through grad (cotangents summed back to the size-1 dims) and vmap.

Expected jaxpr texts were printed by JAX 0.10.2 (CPU, x64 off) for the same functions.
"""

import numpy as np
import pytest

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.backends.cuda import emulate

rng = np.random.default_rng(0)
A = rng.standard_normal((4, 1)).astype(np.float32)
B = rng.standard_normal((1, 5)).astype(np.float32)
C = rng.standard_normal((4, 5)).astype(np.float32)


def _f(a, b, c):
    s = lax.sin(a)
    loop = lax.fori_loop(0, 3, lambda i, v: lax.add(v, lax.mul(a, b)), c)
    return (
        lax.mul(lax.add(s, b), c) + lax.max(a, c),
        lax.div(c, b),
        lax.sub(a, b),
        lax.atan2(a, b),
        lax.pow(c * c, b),
        lax.lt(a, b),
        loop,
    )


def _ref(a, b, c):
    return (
        (np.sin(a) + b) * c + np.maximum(a, c),
        c / b,
        a - b,
        np.arctan2(a, b),
        np.power(c * c, b),
        a < b,
        c + 3 * (a * b),
    )


def _close(got, want, **tol):
    for g, w in zip(got, want, strict=True):
        g = np.asarray(g)
        assert g.shape == np.shape(w) and g.dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, **tol)


def test_shapes_and_errors_as_jax():
    assert lax.add(A, B).shape == (4, 5)
    assert lax.add(C, np.float32(1)).shape == (4, 5)
    assert lax.mul(np.ones((2, 1, 3), np.int32), np.ones((1, 4, 1), np.int32)).shape == (2, 4, 3)
    with pytest.raises(TypeError, match=r"^add: arrays must have the same number of dimensions, got \{1, 2\}$"):
        lax.add(C, np.ones(5, np.float32))
    with pytest.raises(TypeError, match=r"add got incompatible shapes for broadcasting: \(3,\), \(2,\)"):
        lax.add(np.ones(3, np.float32), np.ones(2, np.float32))
    with pytest.raises(TypeError, match="incompatible shapes"):
        lax.add(np.ones((4, 2), np.float32), B)


def test_eager_and_jit_values():
    want = _ref(A, B, C)
    _close(_f(A, B, C), want, rtol=2e-6, atol=1e-6)
    _close(fjax.jit(_f)(A, B, C), want, rtol=2e-6, atol=1e-6)


@pytest.mark.skipif(emulate.compiler() is None, reason="no C++ compiler")
def test_cuda_source_on_the_emulator():
    lowered = fjax.jit(_f).trace(A, B, C).lower(lowering_platforms=("cuda",))
    got = emulate.run_lowered(lowered, A, B, C)
    _close(got, [np.asarray(w) for w in fjax.jit(_f)(A, B, C)], rtol=2e-5, atol=1e-6)


def _loss(a, b, c):
    return sum(jnp.sum(o * o) for o in _f(a, b, c)[:5])


def test_grad_sums_back_to_size1_dims():
    g = fjax.grad(_loss, argnums=(0, 1, 2))(A, B, C)
    assert [x.shape for x in g] == [(4, 1), (1, 5), (4, 5)]
    # the same function of explicitly broadcast operands, its gradients summed by hand
    full = fjax.grad(_loss, argnums=(0, 1, 2))(np.broadcast_to(A, (4, 5)), np.broadcast_to(B, (4, 5)), C)
    np.testing.assert_allclose(g[0], np.asarray(full[0]).sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(g[1], np.asarray(full[1]).sum(0, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(g[2], full[2], rtol=1e-5)
    gj = fjax.jit(fjax.grad(_loss, argnums=(0, 1, 2)))(A, B, C)
    for x, y in zip(g, gj):
        np.testing.assert_allclose(x, y, rtol=1e-5)


def test_vmap():
    out = fjax.vmap(_f, in_axes=(0, None, 0))(np.stack([A, 2 * A]), B, np.stack([C, C]))
    want = _ref(2 * A, B, C)
    _close([o[1] for o in out], want, rtol=2e-6, atol=1e-6)
    # the size-1 operand mapped, the other not
    out = fjax.vmap(lambda a: lax.add(a, C), in_axes=2)(np.stack([A, -A], 2))
    assert out.shape == (2, 4, 5)
    np.testing.assert_allclose(out[1], -A + C, rtol=1e-6)


def test_grad_and_jvp_jaxprs_print_like_jax():
    a, b = np.ones((4, 1), np.float32), np.ones((1, 5), np.float32)
    got = str(fjax.make_jaxpr(fjax.grad(lambda a, b: lax.sub(a, b).sum(), argnums=(0, 1)))(a, b))
    assert got == (
        "{ lambda ; a:f32[4,1] b:f32[1,5]. let\n"
        "    c:f32[4,5] = sub a b\n"
        "    _:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] c\n"
        "    d:f32[4,5] = broadcast_in_dim 1.0:f32[]\n"
        "    e:f32[4] = reduce_sum[axes=(1,) out_sharding=None] d\n"
        "    f:f32[4,1] = reshape[dimensions=None new_sizes=(4, 1) sharding=None] e\n"
        "    g:f32[4,5] = neg d\n"
        "    h:f32[5] = reduce_sum[axes=(0,) out_sharding=None] g\n"
        "    i:f32[1,5] = reshape[dimensions=None new_sizes=(1, 5) sharding=None] h\n"
        "  in (f, i) }"
    )
    got = str(fjax.make_jaxpr(lambda a, b: fjax.jvp(lambda x: lax.add(x, b), (a,), (a,))[1])(a, b))
    assert got == (
        "{ lambda ; a:f32[4,1] b:f32[1,5]. let\n"
        "    _:f32[4,5] = add a b\n"
        "    c:f32[4] = reshape[dimensions=None new_sizes=(4,) sharding=None] a\n"
        "    d:f32[4,5] = broadcast_in_dim[broadcast_dimensions=(0,)] c\n"
        "  in (d,) }"
    )


# jnp's binary functions: operands of one rank go to lax as they are; a lower rank gets leading
# size-1 dims (JAX's promote_shapes), so the jaxpr has JAX's equations


@pytest.mark.parametrize(
    "fn,ref",
    [
        (jnp.add, np.add),
        (jnp.subtract, np.subtract),
        (jnp.multiply, np.multiply),
        (jnp.divide, np.divide),
        (jnp.maximum, np.maximum),
        (jnp.minimum, np.minimum),
        (jnp.less, np.less),
        (jnp.equal, np.equal),
    ],
)
def test_jnp_binary_shapes(fn, ref):
    for xs, ys in [((4, 1), (1, 5)), ((4, 5), (5,)), ((3,), (2, 1, 3)), ((2, 1, 3), (1, 4, 1)), ((), (3, 1))]:
        x = rng.standard_normal(xs).astype(np.float32)
        y = rng.standard_normal(ys).astype(np.float32) + 3.0
        want = ref(x, y)
        _close([fn(x, y), fjax.jit(fn)(x, y)], [want, want], rtol=1e-6)
    x, y = A, np.array([[1, -2, 3, 4, 5]], np.int32)  # with dtype promotion too
    _close([fn(x, y)], [ref(x, y.astype(np.float32))], rtol=1e-6)


def test_jnp_binary_jaxprs_and_errors_as_jax():
    got = str(fjax.make_jaxpr(jnp.subtract)(np.ones((2, 3), np.float32), np.ones((2, 1), np.float32)))
    assert got == "{ lambda ; a:f32[2,3] b:f32[2,1]. let c:f32[2,3] = sub a b in (c,) }"
    got = str(fjax.make_jaxpr(jnp.multiply)(np.ones((2, 3), np.float32), np.ones((1,), np.float32)))
    assert got == (
        "{ lambda ; a:f32[2,3] b:f32[1]. let\n"
        "    c:f32[1,1] = broadcast_in_dim[broadcast_dimensions=(1,)] b\n"
        "    d:f32[2,3] = mul a c\n"
        "  in (d,) }"
    )
    # JAX 0.10.2: lax's TypeError for one rank, numpy broadcasting's ValueError for two
    with pytest.raises(TypeError, match=r"add got incompatible shapes for broadcasting: \(3,\), \(2,\)"):
        jnp.add(np.ones(3, np.float32), np.ones(2, np.float32))
    with pytest.raises(ValueError, match=r"^Incompatible shapes for broadcasting: shapes=\[\(2, 3\), \(4,\)\]$"):
        jnp.add(np.ones((2, 3), np.float32), np.ones(4, np.float32))


def test_jnp_grads_through_size1_operands():
    def loss(x, m):
        return jnp.sum(jnp.exp(x - m) / jnp.sum(jnp.exp(x - m), axis=1, keepdims=True) * x)

    x = rng.standard_normal((3, 4)).astype(np.float32)
    m = rng.standard_normal((3, 1)).astype(np.float32)
    g = fjax.grad(loss, argnums=(0, 1))(x, m)
    full = fjax.grad(loss, argnums=(0, 1))(x, np.broadcast_to(m, (3, 4)))
    np.testing.assert_allclose(g[0], full[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g[1], np.asarray(full[1]).sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    gj = fjax.jit(fjax.grad(loss, argnums=(0, 1)))(x, m)
    np.testing.assert_allclose(gj[1], g[1], rtol=1e-5, atol=1e-6)


def test_outer_as_jax():
    a, b = rng.standard_normal(5).astype(np.float32), rng.standard_normal((2, 2)).astype(np.float32)
    np.testing.assert_array_equal(jnp.outer(a, b), np.outer(a, b))
    np.testing.assert_array_equal(fjax.jit(jnp.outer)(a, b), np.outer(a, b))
    np.testing.assert_array_equal(jnp.outer(np.array([True, False]), np.array([True, True])), [[1, 1], [0, 0]])
    assert jnp.outer(np.array([1, 2], np.int8), np.array([3.0, 4.0], np.float32)).dtype == np.float32
    assert jnp.outer(np.zeros(0, np.float32), np.ones(3, np.float32)).shape == (0, 3)
