"""The threefry2x32 hash and the random bits built on it: split from ``fjax/random.py`` for size
(``fjax.random`` re-exports every name defined here). See the "Bits" part of ``fjax.random``'s
docstring for the counters hashed; an eager hash of a large shape runs as one compiled loop
(``fjax._random_kernels``) that gives the same bits.
"""

from __future__ import annotations

import math
from typing import Any

from fjax import _random_kernels as _kernels
from fjax import core, lax
from fjax._random_arith import _U32, _UINT_DTYPES, _c, _full
from fjax.core import Array

# ---------------------------------------------------------------------------------------------
# threefry2x32


def _rotl(x: Any, d: int) -> Any:
    return lax.bitwise_or(lax.shift_left(x, _c(d, _U32)), lax.shift_right_logical(x, _c(32 - d, _U32)))


_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry2x32(k1: Any, k2: Any, x1: Any, x2: Any) -> tuple[Any, Any]:
    """The threefry2x32 hash of the counter pairs ``(x1, x2)`` under key ``(k1, k2)`` (uint32;
    keys rank 0, counters of one shape). A pure composition of lax ops."""
    if (
        all(isinstance(v, Array) for v in (k1, k2, x1, x2))
        and type(core.find_top_trace([k1, k2, x1, x2])) is core.EvalTrace
        and core.get_aval(x1).size >= _kernels.MIN_SIZE
    ):
        # eager and large: one compiled loop instead of ~100 numpy passes (same bits)
        o1, o2 = _kernels.threefry2x32(k1._value, k2._value, x1._value, x2._value)
        return Array(o1, False), Array(o2, False)
    ks = (k1, k2, lax.bitwise_xor(lax.bitwise_xor(k1, k2), _c(0x1BD11BDA, _U32)))
    x1 = lax.add(x1, k1)
    x2 = lax.add(x2, k2)
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x1 = lax.add(x1, x2)
            x2 = lax.bitwise_xor(x1, _rotl(x2, r))
        x1 = lax.add(x1, ks[(i + 1) % 3])
        x2 = lax.add(lax.add(x2, ks[(i + 2) % 3]), _c(i + 1, _U32))
    return x1, x2


def _key_halves(key: Any) -> tuple[Any, Any]:
    k1 = lax.reshape(lax.slice_in_dim(key, 0, 1, axis=0), ())
    k2 = lax.reshape(lax.slice_in_dim(key, 1, 2, axis=0), ())
    return k1, k2


def _counters(shape: tuple) -> tuple[Any, Any]:
    """The 64-bit iota over ``shape`` as (hi, lo) uint32 arrays."""
    n = math.prod(shape)
    if n >= 2**32:
        raise NotImplementedError(f"fjax.random: samples of more than 2**32 elements (got shape {shape})")
    lo = lax.reshape(lax.iota(_U32, n), shape) if shape else _full((), 0, _U32)
    return _full(shape, 0, _U32), lo


def _hash_shape(key: Any, shape: tuple) -> tuple[Any, Any]:
    k1, k2 = _key_halves(key)
    hi, lo = _counters(shape)
    return threefry2x32(k1, k2, hi, lo)


def _stack_last(a: Any, b: Any) -> Any:
    nd = core.get_aval(a).ndim
    return lax.concatenate([lax.expand_dims(a, (nd,)), lax.expand_dims(b, (nd,))], nd)


def _random_bits(key: Any, bit_width: int, shape: tuple) -> Any:
    b1, b2 = _hash_shape(key, shape)
    if bit_width == 64:
        u64 = _UINT_DTYPES[64]
        hi = lax.convert_element_type(b1, u64)
        return lax.bitwise_or(lax.shift_left(hi, _c(32, u64)), lax.convert_element_type(b2, u64))
    out = lax.bitwise_xor(b1, b2)
    return out if bit_width == 32 else lax.convert_element_type(out, _UINT_DTYPES[bit_width])
