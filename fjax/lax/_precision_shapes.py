"""``lax.reduce_precision`` and the convolution shape helpers (``conv_shape_tuple``,
``conv_general_shape_tuple``, ``conv_transpose_shape_tuple``) of ``jax.lax``.

``reduce_precision`` rounds floats to a narrower (exponent, mantissa) format and back, bit for bit
as XLA's ReducePrecision: round to nearest even in the mantissa, values beyond the narrower
exponent range become +-inf, values at or below its smallest normal exponent flush to +-0 (XLA
does not round into denormals), NaN stays NaN when any mantissa bit is kept. It is linear (its
jvp and transpose apply it to the tangent/cotangent, as JAX's ``deflinear``), elementwise under
vmap, and runs as a host step under jit.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from fjax import core, dtypes
from fjax.interpreters import ad, batching
from fjax.lax.convolution import ConvDimensionNumbers, _conv_transpose_padding, conv_dimension_numbers, padtype_to_pads

__all__ = [
    "conv_general_permutations",
    "conv_general_shape_tuple",
    "conv_shape_tuple",
    "conv_transpose_shape_tuple",
    "reduce_precision",
    "reduce_precision_p",
]

# (unsigned int type, exponent bits, mantissa bits) of each float format fjax has
_FORMATS = {
    np.dtype(np.float16): (np.uint16, 5, 10),
    np.dtype(dtypes.bfloat16): (np.uint16, 8, 7),
    np.dtype(np.float32): (np.uint32, 8, 23),
    np.dtype(np.float64): (np.uint64, 11, 52),
}


def _reduce_precision_real(x: np.ndarray, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    utype, src_exp, src_man = _FORMATS[x.dtype]
    nbits = 8 * x.dtype.itemsize
    u = utype
    bits = np.ascontiguousarray(x).view(utype).copy()
    if mantissa_bits < src_man:
        shift = src_man - mantissa_bits
        last_bit = u(1) << u(shift)
        base_bias = (last_bit >> u(1)) - u(1)
        bias = ((bits & last_bit) >> u(shift)) + base_bias
        with np.errstate(over="ignore"):
            bits = (bits + bias) & ~(last_bit - u(1))
    if exponent_bits < src_exp:
        sign_mask = u(1) << u(nbits - 1)
        exp_mask = ((u(1) << u(src_exp)) - u(1)) << u(src_man)
        bias_src = (1 << (src_exp - 1)) - 1
        bias_dst = (1 << (exponent_bits - 1)) - 1
        max_exp = u(bias_src + bias_dst) << u(src_man)
        min_exp = u(bias_src - bias_dst) << u(src_man)
        exponent = bits & exp_mask
        signed_zero = bits & sign_mask
        bits = np.where(exponent > max_exp, signed_zero | exp_mask, bits)
        bits = np.where(exponent <= min_exp, signed_zero, bits).astype(utype)
    out = bits.view(x.dtype)
    if mantissa_bits > 0:
        out = np.where(np.isnan(x), x, out)
    return np.asarray(out, x.dtype)


def _reduce_precision_impl(x: np.ndarray, *, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    x = np.asarray(x)
    if dtypes.kind(x.dtype) == "c":
        re = _reduce_precision_real(np.ascontiguousarray(x.real), exponent_bits, mantissa_bits)
        im = _reduce_precision_real(np.ascontiguousarray(x.imag), exponent_bits, mantissa_bits)
        return (re + 1j * im).astype(x.dtype)
    return _reduce_precision_real(x, exponent_bits, mantissa_bits)


def _reduce_precision_abstract(x: core.ShapedArray, *, exponent_bits: int, mantissa_bits: int) -> core.ShapedArray:
    if dtypes.kind(np.dtype(x.dtype)) not in "fc":
        raise TypeError(f"reduce_precision does not accept dtype {x.dtype}. Accepted dtypes are subtypes of floating.")
    return x


reduce_precision_p = core.Primitive("reduce_precision")
reduce_precision_p.def_impl(_reduce_precision_impl)
reduce_precision_p.def_abstract_eval(_reduce_precision_abstract)
ad.deflinear2(reduce_precision_p, lambda ct, x, **params: [reduce_precision_p.bind(ct, **params)])
batching.defvectorized(reduce_precision_p)


def reduce_precision(operand: Any, exponent_bits: int, mantissa_bits: int) -> Any:
    """Round ``operand`` to a float format with ``exponent_bits`` exponent and ``mantissa_bits``
    mantissa bits, keeping its dtype (as ``jax.lax.reduce_precision``); e.g. ``exponent_bits=8,
    mantissa_bits=7`` rounds float32 values to bfloat16 values."""
    from fjax.numpy import _util  # noqa: PLC0415  (jnp imports lax)

    # (JAX's contexts for a traced count)
    ctx = "{} argument of lax.reduce_precision"
    exponent_bits = operator.index(core.concrete_or_error(exponent_bits, ctx.format("exponent_bits")))
    mantissa_bits = operator.index(core.concrete_or_error(mantissa_bits, ctx.format("mantissa_bits")))
    if exponent_bits < 1:
        raise ValueError(f"reduce_precision: exponent_bits must be positive; got {exponent_bits}")
    if mantissa_bits < 0:
        raise ValueError(f"reduce_precision: mantissa_bits must be non-negative; got {mantissa_bits}")
    x = _util.to_fjax(operand, "reduce_precision")
    return reduce_precision_p.bind(x, exponent_bits=exponent_bits, mantissa_bits=mantissa_bits)


# ---------------------------------------------------------------------------------------------
# convolution shape helpers (shapes in, shape tuple out; no arrays)


def conv_shape_tuple(
    lhs_shape: Sequence[int],
    rhs_shape: Sequence[int],
    strides: Sequence[int],
    pads: str | Sequence[tuple[int, int]],
    batch_group_count: int = 1,
) -> tuple[int, ...]:
    """Output shape of a convolution with operands in canonical (N, C, spatial...) /
    (O, I, spatial...) order, ``pads`` explicit (low, high) pairs or a padding string."""
    lhs_shape, rhs_shape = tuple(lhs_shape), tuple(rhs_shape)
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(
            f"Wrong number of explicit pads for convolution: expected {len(lhs_shape) - 2}, got {len(pads)}."
        )
    padded = np.add(lhs_shape[2:], np.sum(np.array(pads, dtype=np.int64).reshape(-1, 2), axis=1))
    if np.any(padded < 0):
        raise ValueError(
            f"Negative padding is larger than the size of the corresponding dimension: got padding={pads} "
            f"for lhs_shape[2:]={lhs_shape[2:]}"
        )
    out_space = [max(0, (int(p) - k) // s + 1) for p, k, s in zip(padded, rhs_shape[2:], strides)]
    n = lhs_shape[0]
    if batch_group_count > 1:
        if n % batch_group_count:
            raise ValueError(f"lhs batch dimension {n} is not divisible by batch_group_count {batch_group_count}")
        n //= batch_group_count
    return (n, rhs_shape[0], *out_space)


def conv_general_permutations(dimension_numbers: tuple[str, str, str]) -> tuple[tuple[int, ...], ...]:
    """The (lhs, rhs, out) permutations to canonical (N, C, spatial...) / (O, I, spatial...)
    order for three spec strings such as ``('NHWC', 'HWIO', 'NHWC')``; spatial dims in rhs order."""
    from fjax.lax.convolution import _spec_from_strings  # noqa: PLC0415

    if len(dimension_numbers) != 3 or not all(isinstance(s, str) for s in dimension_numbers):
        raise TypeError(f"conv_general_permutations: expected three spec strings, got {dimension_numbers!r}")
    nd = len(dimension_numbers[0])
    return tuple(_spec_from_strings((0,) * nd, (0,) * nd, dimension_numbers))


def _perms(lhs_shape: Sequence[int], rhs_shape: Sequence[int], dimension_numbers: Any) -> ConvDimensionNumbers:
    return conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)


def conv_general_shape_tuple(
    lhs_shape: Sequence[int],
    rhs_shape: Sequence[int],
    window_strides: Sequence[int],
    padding: str | Sequence[tuple[int, int]],
    dimension_numbers: Any,
) -> tuple[int, ...]:
    """Output shape of ``conv_general_dilated`` (no dilation) for operands laid out by
    ``dimension_numbers`` (three spec strings, a ``ConvDimensionNumbers`` or None)."""
    dn = _perms(lhs_shape, rhs_shape, dimension_numbers)
    lhs_t = tuple(np.take(lhs_shape, dn.lhs_spec))
    rhs_t = tuple(np.take(rhs_shape, dn.rhs_spec))
    out_t = conv_shape_tuple(lhs_t, rhs_t, window_strides, padding)
    return tuple(int(d) for d in np.take(out_t, np.argsort(dn.out_spec)))


def conv_transpose_shape_tuple(
    lhs_shape: Sequence[int],
    rhs_shape: Sequence[int],
    window_strides: Sequence[int],
    padding: str | Sequence[tuple[int, int]],
    dimension_numbers: Any,
) -> tuple[int, ...]:
    """Output shape of ``conv_transpose`` for operands laid out by ``dimension_numbers``."""
    dn = _perms(lhs_shape, rhs_shape, dimension_numbers)
    lhs_t = tuple(np.take(lhs_shape, dn.lhs_spec))
    rhs_t = tuple(np.take(rhs_shape, dn.rhs_spec))
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(int(k), int(s), padding) for k, s in zip(rhs_t[2:], window_strides)]
    total = [int(np.sum(p)) for p in padding]
    unpadded = [(i - 1) * s - k + 2 for i, k, s in zip(lhs_t[2:], rhs_t[2:], window_strides)]
    out_t = (lhs_t[0], rhs_t[0], *(u + p for u, p in zip(unpadded, total)))
    return tuple(int(d) for d in np.take(out_t, np.argsort(dn.out_spec)))
