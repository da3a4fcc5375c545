"""Transposition rules build the equations JAX's do (texts printed by JAX 0.10.2, CPU, x64 off;
``np.int64(1)`` read as ``1``), and their values are unchanged."""

import numpy as np

import fjax
from fjax import lax


def test_squeeze_cotangent_is_expand_dims():
    x = np.ones((1, 3, 1), np.float32)
    got = str(fjax.make_jaxpr(fjax.grad(lambda x: lax.squeeze(x, (0, 2)).sum()))(x))
    assert got == (
        "{ lambda ; a:f32[1,3,1]. let\n"
        "    b:f32[3] = squeeze[dimensions=(0, 2)] a\n"
        "    _:f32[] = reduce_sum[axes=(0,) out_sharding=None] b\n"
        "    c:f32[3] = broadcast_in_dim 1.0:f32[]\n"
        "    d:f32[1,3,1] = broadcast_in_dim[broadcast_dimensions=(1,)] c\n"
        "  in (d,) }"
    )
    got = str(
        fjax.make_jaxpr(fjax.vmap(fjax.grad(lambda x: lax.squeeze(x, (0, 2)).sum())))(np.ones((2, 1, 3, 1), np.float32))
    )
    assert got == (
        "{ lambda ; a:f32[2,1,3,1]. let\n"
        "    b:f32[2,3] = squeeze[dimensions=(1, 3)] a\n"
        "    _:f32[2] = reduce_sum[axes=(1,) out_sharding=None] b\n"
        "    c:f32[3] = broadcast_in_dim 1.0:f32[]\n"
        "    d:f32[1,3,1] = broadcast_in_dim[broadcast_dimensions=(1,)] c\n"
        "    e:f32[2,1,3,1] = broadcast_in_dim[broadcast_dimensions=(1, 2, 3)] d\n"
        "  in (e,) }"
    )
    w = np.arange(3.0, dtype=np.float32)
    g = fjax.grad(lambda x: (lax.squeeze(x, (0, 2)) * w).sum())(x)
    np.testing.assert_array_equal(g, w.reshape(1, 3, 1))
    np.testing.assert_array_equal(fjax.jit(fjax.grad(lambda x: (lax.squeeze(x, (0, 2)) * w).sum()))(x), g)
