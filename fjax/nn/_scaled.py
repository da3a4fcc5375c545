"""Block-scaled matrix products of ``jax.nn``: ``scaled_matmul``, ``scaled_dot_general`` and
``get_scaled_dot_general_config`` (the mxfp8 / nvfp4 recipes).

fjax arrays have no float8 / float4 dtypes, so everything is computed in float32 with the
low-precision formats emulated: quantizing to float8_e4m3fn / float4_e2m1fn rounds to the
nearest representable value (ties to even, subnormals kept, clipped to the format's max), and
an e8m0 block scale is the power of two at or above ``amax / max``, as JAX's quantizer. The
products themselves are exact float32 sums of the dequantized values (JAX computes them with
cuDNN on a GPU and has no CPU implementation of ``scaled_matmul``). Inputs already in an
ml_dtypes float8 type are converted to float32 first.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import fjax.numpy as jnp
from fjax import lax

__all__ = ["get_scaled_dot_general_config", "scaled_dot_general", "scaled_matmul"]

# format -> (mantissa bits, smallest normal exponent, largest finite value)
_FORMATS = {
    "float8_e4m3fn": (3, -6, 448.0),
    "float4_e2m1fn": (1, 0, 6.0),
    "float8_e8m0fnu": (0, -127, 2.0**127),
}


@dataclasses.dataclass
class BlockScaleConfig:
    """How ``scaled_dot_general`` quantizes an operand: blocks of ``block_size`` along the
    contracting dimension stored as ``data_type`` with one ``scale_type`` scale per block (and
    an optional float32 ``global_scale``, nvfp4)."""

    mode: str
    block_size: int
    data_type: Any
    scale_type: Any
    global_scale: Any
    infer_only: bool


def _ml_dtype(name: str) -> Any:
    try:
        import ml_dtypes  # noqa: PLC0415 - optional: only names the formats

        return getattr(ml_dtypes, name)
    except (ImportError, AttributeError):
        return name


def _format_name(t: Any) -> str:
    return t if isinstance(t, str) else np.dtype(t).name


def get_scaled_dot_general_config(mode: str, global_scale: Any = None) -> BlockScaleConfig:
    """The quantization config of ``mode``: ``'mxfp8'`` (blocks of 32 float8_e4m3fn values,
    float8_e8m0fnu power-of-two scales) or ``'nvfp4'`` (blocks of 16 float4_e2m1fn values,
    float8_e4m3fn scales, a float32 ``global_scale``, default 1)."""
    if mode == "mxfp8":
        return BlockScaleConfig("mxfp8", 32, _ml_dtype("float8_e4m3fn"), _ml_dtype("float8_e8m0fnu"), None, False)
    if mode == "nvfp4":
        gs = jnp.array([1.0], jnp.float32) if global_scale is None else jnp.asarray(global_scale, jnp.float32)
        return BlockScaleConfig("nvfp4", 16, _ml_dtype("float4_e2m1fn"), _ml_dtype("float8_e4m3fn"), gs, False)
    raise ValueError(f"Unsupported mode: {mode}")


def _as_f32(x: Any) -> Any:
    if isinstance(x, np.ndarray) and x.dtype.kind == "V" or type(getattr(x, "dtype", None)).__module__ == "ml_dtypes":
        x = np.asarray(x, np.float32)
    return jnp.asarray(x).astype(jnp.float32)


def _round_to_format(x: Any, fmt: str) -> Any:
    """``x`` rounded to the nearest value of the float format ``fmt`` (ties to even), clipped."""
    mbits, emin, fmax = _FORMATS[fmt]
    x = jnp.clip(x, -fmax, fmax)
    mag = jnp.abs(x)
    e = jnp.floor(jnp.log2(jnp.where(mag > 0, mag, 1.0)))
    quantum = jnp.exp2(jnp.maximum(e, emin) - mbits)
    return jnp.round(x / quantum) * quantum


def _quantize(x: Any, cfg: BlockScaleConfig) -> tuple[Any, Any]:
    """(values, scales) of ``x`` (..., K) in blocks of ``cfg.block_size`` along K, both float32
    holding values of the config's formats."""
    k = x.shape[-1]
    bs = cfg.block_size
    if k % bs:
        raise ValueError(f"scaled_dot_general: the contracting size {k} must be a multiple of the block size {bs}")
    data_fmt, scale_fmt = _format_name(cfg.data_type), _format_name(cfg.scale_type)
    blocks = x.reshape(x.shape[:-1] + (k // bs, bs))
    dmax = _FORMATS[data_fmt][2]
    if cfg.mode == "nvfp4":
        blocks = blocks / cfg.global_scale.reshape(())
    amax = jnp.max(jnp.abs(blocks), axis=-1, keepdims=True) / dmax
    if scale_fmt == "float8_e8m0fnu":  # a power of two, rounded up so no value overflows
        scales = jnp.exp2(jnp.ceil(jnp.log2(jnp.where(amax > 0, amax, 2.0**-127))))
    else:
        scales = _round_to_format(amax, scale_fmt)
    safe = jnp.where(scales > 0, scales, 1.0)
    values = _round_to_format(blocks / safe, data_fmt)
    if cfg.mode == "nvfp4":
        scales = scales * cfg.global_scale.reshape(())
    return values.reshape(x.shape), scales[..., 0]


def scaled_matmul(
    lhs: Any, rhs: Any, lhs_scales: Any, rhs_scales: Any, preferred_element_type: Any = jnp.float32
) -> Any:
    """Block-scaled batched matmul (``jax.nn.scaled_matmul``): ``lhs`` (B, M, K), ``rhs``
    (B, N, K), ``lhs_scales`` (B, M, K // block) and ``rhs_scales`` (B, N, K // block'); each
    scale multiplies its block of K, then ``einsum('BMK,BNK->BMN')`` in float32, cast to
    ``preferred_element_type``."""
    a, b = _as_f32(lhs), _as_f32(rhs)
    sa, sb = _as_f32(lhs_scales), _as_f32(rhs_scales)
    for name, x in (("lhs", a), ("rhs", b), ("lhs_scales", sa), ("rhs_scales", sb)):
        if x.ndim != 3:
            raise ValueError(f"scaled_matmul: {name} must be 3-D (B, rows, K), got shape {x.shape}")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[2]:
        raise ValueError(f"scaled_matmul: lhs {a.shape} and rhs {b.shape} must share B and K")
    for x, s, name in ((a, sa, "lhs"), (b, sb, "rhs")):
        if s.shape[:2] != x.shape[:2] or s.shape[2] == 0 or x.shape[2] % s.shape[2]:
            raise ValueError(
                f"scaled_matmul: {name}_scales shape {s.shape} must be ({x.shape[0]}, {x.shape[1]}, K_s) with K_s "
                f"dividing K = {x.shape[2]}"
            )
    a = a * jnp.repeat(sa, a.shape[2] // sa.shape[2], axis=-1)
    b = b * jnp.repeat(sb, b.shape[2] // sb.shape[2], axis=-1)
    out = lax.dot_general(a, b, (((2,), (2,)), ((0,), (0,))), preferred_element_type=jnp.float32)
    return out.astype(preferred_element_type)


def _to_bmk(x: Any, contract: Sequence[int], batch: Sequence[int]) -> tuple[Any, tuple[int, ...]]:
    free = [d for d in range(x.ndim) if d not in contract and d not in batch]
    xt = lax.transpose(x, (*batch, *free, *contract))
    b = math.prod(x.shape[d] for d in batch)
    m = math.prod(x.shape[d] for d in free)
    k = math.prod(x.shape[d] for d in contract)
    return xt.reshape(b, m, k), tuple(x.shape[d] for d in free)


def scaled_dot_general(
    lhs: Any,
    rhs: Any,
    dimension_numbers: Any,
    preferred_element_type: Any = jnp.float32,
    configs: list[BlockScaleConfig] | None = None,
    implementation: str | None = None,
) -> Any:
    """``dot_general`` of block-quantized operands (``jax.nn.scaled_dot_general``): each operand
    is quantized along its contracting dims with ``configs[0]`` / ``configs[1]`` (from
    ``get_scaled_dot_general_config``), then multiplied with ``scaled_matmul``; the result is
    laid out as ``dot_general``'s (batch, lhs free, rhs free). ``configs=None`` is a plain
    ``dot_general``. Gradients are straight-through: the derivative of the product of the
    quantized operands (JAX's backward also quantizes the cotangent with ``configs[2]``; fjax's
    does not)."""
    (lc, rc), (lb, rb) = dimension_numbers
    lhs, rhs = jnp.asarray(lhs), jnp.asarray(rhs)
    if configs is None:
        return lax.dot_general(lhs, rhs, dimension_numbers, preferred_element_type=preferred_element_type)
    if len(configs) < 2:
        raise ValueError(f"scaled_dot_general: configs needs a config for lhs and rhs, got {len(configs)}")
    a, lfree = _to_bmk(lhs.astype(jnp.float32), tuple(lc), tuple(lb))
    b, rfree = _to_bmk(rhs.astype(jnp.float32), tuple(rc), tuple(rb))
    qa, sa = _quantize(a, configs[0])
    qb, sb = _quantize(b, configs[1])
    # straight-through: the forward value is the quantized one, the derivative that of a and b
    da = jnp.repeat(sa, configs[0].block_size, axis=-1) * qa
    db = jnp.repeat(sb, configs[1].block_size, axis=-1) * qb
    a = a + lax.stop_gradient(da - a)
    b = b + lax.stop_gradient(db - b)
    ones_a = jnp.ones(a.shape[:2] + (1,), jnp.float32)
    ones_b = jnp.ones(b.shape[:2] + (1,), jnp.float32)
    out = scaled_matmul(a, b, ones_a, ones_b, preferred_element_type)
    batch_shape = tuple(lhs.shape[d] for d in lb)
    return out.reshape(batch_shape + lfree + rfree)
