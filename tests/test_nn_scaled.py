"""fjax.nn.scaled_matmul / scaled_dot_general / get_scaled_dot_general_config: the block-scaled
math of JAX's docstring, and quantization equal to JAX's quantizer (values recorded with jax
0.10.2's ``jax._src.cudnn.scaled_matmul_stablehlo.quantize``, the product taken in numpy: JAX has no
CPU kernel for ``scaled_matmul``)."""

from __future__ import annotations

import numpy as np
import pytest

import fjax
from fjax import nn


def test_scaled_matmul_is_the_documented_einsum() -> None:
    # JAX's docstring example: scaled_matmul([1,2,3], [4,5,6], 0.5, 0.5) == [[[8.]]]
    a, b = np.array([1, 2, 3]).reshape(1, 1, 3), np.array([4, 5, 6]).reshape(1, 1, 3)
    s = np.array([0.5]).reshape(1, 1, 1)
    out = nn.scaled_matmul(a, b, s, s)
    assert out.dtype == np.float32 and out.tolist() == [[[8.0]]]
    rng = np.random.RandomState(0)
    lhs, rhs = rng.randn(2, 4, 64).astype(np.float32), rng.randn(2, 3, 64).astype(np.float32)
    ls, rs = rng.rand(2, 4, 2).astype(np.float32), rng.rand(2, 3, 4).astype(np.float32)
    want = np.einsum("bmk,bnk->bmn", lhs * np.repeat(ls, 32, -1), rhs * np.repeat(rs, 16, -1))
    np.testing.assert_allclose(np.asarray(nn.scaled_matmul(lhs, rhs, ls, rs)), want, rtol=1e-5, atol=1e-5)
    assert nn.scaled_matmul(lhs, rhs, ls, rs, preferred_element_type=np.float16).dtype == np.float16
    with pytest.raises(ValueError, match="rhs_scales shape"):
        nn.scaled_matmul(lhs, rhs, ls, rng.rand(2, 3, 3).astype(np.float32))
    g = fjax.grad(lambda x: nn.scaled_matmul(x, rhs, ls, rs).sum())(lhs)
    np.testing.assert_allclose(
        np.asarray(g), np.repeat(ls, 32, -1) * (rhs * np.repeat(rs, 16, -1)).sum(1)[:, None], rtol=1e-4
    )


def test_configs() -> None:
    c = nn.get_scaled_dot_general_config("mxfp8")
    assert (c.mode, c.block_size, c.global_scale, c.infer_only) == ("mxfp8", 32, None, False)
    assert np.dtype(c.data_type).name == "float8_e4m3fn" and np.dtype(c.scale_type).name == "float8_e8m0fnu"
    c = nn.get_scaled_dot_general_config("nvfp4", np.array([0.5], np.float32))
    assert c.block_size == 16 and np.dtype(c.data_type).name == "float4_e2m1fn"
    with pytest.raises(ValueError, match="Unsupported mode: foo"):
        nn.get_scaled_dot_general_config("foo")


def test_scaled_dot_general_matches_jax_quantizer() -> None:
    rng = np.random.RandomState(0)
    lhs, rhs = (rng.randn(2, 4, 64) * 3).astype(np.float32), rng.randn(2, 3, 64).astype(np.float32)
    dn = (((2,), (2,)), ((0,), (0,)))
    # row [0, 0] of the product of JAX's quantized-and-dequantized operands (see the module doc)
    want = {
        "mxfp8": [-33.97184753417969, -46.50750732421875, -6.4322509765625],
        "nvfp4": [-33.86328125, -46.5556640625, -1.953125],
    }
    for mode, gs in (("mxfp8", None), ("nvfp4", np.array([0.5], np.float32))):
        cfg = nn.get_scaled_dot_general_config(mode, gs)
        out = nn.scaled_dot_general(lhs, rhs, dn, configs=[cfg] * 3)
        assert out.shape == (2, 4, 3) and out.dtype == np.float32
        np.testing.assert_allclose(np.asarray(out)[0, 0], want[mode], rtol=1e-6)
    exact = np.einsum("bmk,bnk->bmn", lhs, rhs)
    np.testing.assert_allclose(np.asarray(nn.scaled_dot_general(lhs, rhs, dn)), exact, rtol=1e-5, atol=1e-4)
    # other layouts: contracting dim first, no batch; the result is laid out as dot_general's
    cfg = nn.get_scaled_dot_general_config("mxfp8")
    out = nn.scaled_dot_general(lhs[0].T, rhs[0], (((0,), (1,)), ((), ())), configs=[cfg] * 3)
    np.testing.assert_allclose(np.asarray(out), exact[0], rtol=0.1, atol=0.5)
    # straight-through gradient: that of the product of the quantized operands
    g = fjax.grad(lambda x: nn.scaled_dot_general(x, rhs, dn, configs=[cfg] * 3).sum())(lhs)
    assert g.shape == lhs.shape and np.abs(np.asarray(g) - rhs.sum(1)[:, None, :]).max() < 0.2
