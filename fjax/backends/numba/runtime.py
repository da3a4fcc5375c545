"""Runtime helpers that generated numba kernels call (as ``rt.<name>``).

Scalar helpers with XLA's semantics where numba's differ (NaN-propagating min/max, integer
division by zero, float->int saturation, out-of-range shifts), and ``wide_vectors``, which asks
LLVM for wider vectors in the function it is called from. They are ``inline="always"`` so a
kernel's object code does not depend on them at run time; ``disk_cache.runtime_version`` hashes
this file into every kernel's source so editing a helper recompiles the kernels that inline it.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import from_dtype, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

_opts = dict(nogil=True, cache=True, error_model="numpy", inline="always")


@intrinsic(prefer_literal=True)
def wide_vectors(typingctx, bits):  # noqa: ARG001
    """``wide_vectors(512)``: no code; marks the LLVM function it is called from with
    ``"prefer-vector-width"="512"`` (what clang's ``-mprefer-vector-width`` sets). Kernels call it
    first thing in every function body numba compiles separately (an outlined ``prange`` body is
    one), with ``VECTOR_WIDTH`` written into their source (so it is part of the cache key)."""
    if not isinstance(bits, types.IntegerLiteral):
        return None

    def codegen(context, builder, signature, args):  # noqa: ARG001
        # llvmlite's FunctionAttributes only accepts enum attributes; a string one is written verbatim
        set.add(builder.function.attributes, f'"prefer-vector-width"="{int(bits.literal_value)}"')
        return context.get_dummy_value()

    return types.none(bits), codegen


@intrinsic
def fma(typingctx, a, b, c):  # noqa: ARG001
    """``a * b + c`` rounded once (LLVM's ``llvm.fma``: the FMA instruction, or libm's ``fma``)
    for float32/float64 operands of one type: the private ``random_fma`` primitive."""
    if not (isinstance(a, types.Float) and a == b == c):
        return None

    def codegen(context, builder, signature, args):  # noqa: ARG001
        t = args[0].type
        name = "llvm.fma.f32" if a.bitwidth == 32 else "llvm.fma.f64"
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(t, [t, t, t]), name)
        return builder.call(fn, args)

    return a(a, b, c), codegen


@intrinsic(prefer_literal=True)
def bitcast(typingctx, x, dtype_name):  # noqa: ARG001
    """``x``'s bits as the same-width scalar type named by the literal ``dtype_name`` (the private
    ``random_bitcast`` primitive)."""
    if not isinstance(dtype_name, types.StringLiteral) or not isinstance(x, (types.Float, types.Integer)):
        return None
    dst = from_dtype(np.dtype(dtype_name.literal_value))
    if np.dtype(dtype_name.literal_value).itemsize * 8 != x.bitwidth:
        return None

    def codegen(context, builder, signature, args):  # noqa: ARG001
        return builder.bitcast(args[0], context.get_value_type(dst))

    return dst(x, dtype_name), codegen


# ---------------------------------------------------------------------------------------------
# runtime helpers the generated code calls (as ``rt.<name>``)


@njit(**_opts)
def fmax(a, b):
    """NaN-propagating maximum (np.maximum)."""
    return a if (a > b or a != a) else b


@njit(**_opts)
def fmin(a, b):
    """NaN-propagating minimum (np.minimum)."""
    return a if (a < b or a != a) else b


@njit(**_opts)
def fsign(x):
    """np.sign of a float: +-1 (also for +-inf), signed zeros and NaN passed through."""
    if x > 0:
        return 1.0
    if x < 0:
        return -1.0
    return x * 1.0


@njit(**_opts)
def idiv(x, y):
    """Integer division rounding toward zero as XLA on CPU: x / 0 = -1 (all ones, so the max of an
    unsigned type) and INT_MIN / -1 = INT_MIN. No integer literal enters the arithmetic: numba
    types uint64 op int64 as float64, and float -> unsigned casts of negatives are undefined."""
    if y == 0:
        return ~(x - x)
    if y == -1:
        return x - x - x  # wraps for INT_MIN, where x // y overflows
    q = x // y
    if q < 0 and q * y != x:
        q = q - ~(x - x)  # q + 1
    return q


@njit(**_opts)
def irem(x, y):
    """Integer remainder with the dividend's sign (C fmod); x % 0 = x, INT_MIN % -1 = 0."""
    if y == 0:
        return x
    if y == -1:
        return x - x
    return x - y * idiv(x, y)


@njit(**_opts)
def f2i(x, lo, hi):
    """float -> integer as XLA: truncate, NaN -> 0, saturate to [lo, hi] (as float64 bounds)."""
    if x != x:
        return 0.0
    t = np.trunc(x)
    return lo if t <= lo else (hi if t >= hi else t)


@njit(**_opts)
def shl(x, y, bits):
    return x << y if (y >= 0 and y < bits) else x - x


@njit(**_opts)
def shra(x, y, bits):
    if y >= 0 and y < bits:
        return x >> y
    return x - x - 1 if x < 0 else x - x
