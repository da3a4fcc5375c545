"""The CUDA C op table: a scalar ``kernel_ir.Op`` -> a CUDA C expression (``CUDA_OPS``), C type
names, constants, and the device prelude every generated translation unit starts with.

Every expression is cast to its result type explicitly: generated kernels run as cupy RawKernels,
which do no type promotion, and C's integer promotions (``short * short`` is ``int``) and signed
overflow (undefined in C) must not leak into results. Signed integer add/sub/mul/neg/shift-left are
therefore computed in the unsigned type of the same width (wrapping, as XLA and numpy do).

Transcendental functions use CUDA's device math library. Its documented maximum errors (CUDA C++
Programming Guide, "Mathematical Functions" appendix, full range unless noted; ulp):

    function    float32 (...f)   float64
    exp         2                1
    exp2        2                1
    expm1       1                1
    log         1                1
    log1p       1                1
    sin, cos    2                2
    tan         4                2
    asin, acos  2                2
    atan        2                2
    atan2       3                2
    sinh        3                2
    cosh        2                1
    tanh        2                1
    asinh       3                3
    acosh       4                3
    atanh       3                2
    erf         2                2
    erfc        4                5
    lgamma      6 (outside [-10.0001, -2.264]; larger inside)   4 (outside [-11.0001, -2.2637])
    cbrt        1                1
    pow         4                2
    sqrt        0 (IEEE, nvcc's default -prec-sqrt=true)       0
    fmod, rint, floor, ceil, fabs: exact

The numba backend's vector math is within ~1-2 ulp of correctly rounded, so the CUDA and CPU results
of a chain of transcendental ops agree to float tolerance, not bit for bit; integer ops (threefry)
and IEEE-exact ops (+ - * / sqrt, comparisons, casts) agree bit for bit (with ``--fmad=false``; the
default ``--fmad=true`` may contract ``a * b + c`` into an fma, which rounds once instead of twice).

This module imports only numpy and the IR, so the emulator and tests can use it without cupy.
"""

from __future__ import annotations

from typing import Callable

import ml_dtypes
import numpy as np

from fjax.backends import kernel_ir as ir
from fjax.backends.cuda import complex_ops

CTYPE = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "signed char",
    np.dtype(np.int16): "short",
    np.dtype(np.int32): "int",
    np.dtype(np.int64): "long long",
    np.dtype(np.uint8): "unsigned char",
    np.dtype(np.uint16): "unsigned short",
    np.dtype(np.uint32): "unsigned int",
    np.dtype(np.uint64): "unsigned long long",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
}

# the unsigned type of each integer's width (wrapping arithmetic of signed integers)
_UTYPE = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}


# 16-bit floats: stored as their bits (``unsigned short`` buffers), loaded into ``float``, every op
# computed in float and rounded back to the 16-bit format (as XLA's GPU backend computes them:
# float32 arithmetic with a rounding at each op's result); name tag of the prelude's conversions
LOW_FLOATS = {np.dtype(np.float16): "f16", np.dtype(ml_dtypes.bfloat16): "bf16"}
_F32 = np.dtype(np.float32)


def value_dtype(dt: object) -> np.dtype:
    """The dtype a kernel computes values of ``dt`` in (float32 for the 16-bit floats)."""
    d = np.dtype(dt)
    return _F32 if d in LOW_FLOATS else d


def stype(dt: object) -> str:
    """The C type of a buffer element of dtype ``dt`` (``unsigned short`` for 16-bit floats)."""
    d = np.dtype(dt)
    return "unsigned short" if d in LOW_FLOATS else ctype(d)


def load_expr(dt: object, e: str) -> str:
    """The value of the buffer element ``e`` of dtype ``dt`` (16-bit floats widened to float)."""
    tag = LOW_FLOATS.get(np.dtype(dt))
    return f"fj_{tag}_f32({e})" if tag else e


def store_expr(dt: object, e: str) -> str:
    """The buffer element of dtype ``dt`` holding the value ``e`` (16-bit floats: rounded)."""
    tag = LOW_FLOATS.get(np.dtype(dt))
    return f"fj_f32_{tag}({e})" if tag else e


def ctype(dt: object) -> str:
    """The C type of a value of a numpy dtype (``float`` for 16-bit floats; their buffers are
    ``stype``); NotImplementedError for dtypes kernels cannot hold."""
    d = np.dtype(dt)
    if d in LOW_FLOATS:
        return "float"
    t = CTYPE.get(d) or complex_ops.CTYPES.get(d)
    if t is None:
        raise NotImplementedError(f"CUDA backend: no CUDA C type for dtype {d.name}")
    return t


def utype(dt: object) -> str:
    return _UTYPE[np.dtype(dt).itemsize]


def const_expr(value: object, dt: object) -> str:
    """A constant of dtype ``dt`` as a CUDA C expression of exactly that type."""
    d = np.dtype(dt)
    if d in LOW_FLOATS:
        return const_expr(np.float32(d.type(value)), _F32)
    if d == np.bool_:
        return "true" if bool(value) else "false"
    if d.kind == "c":
        return complex_ops.const_expr(value, d, const_expr)
    if d.kind == "f":
        v = d.type(value)
        bits = np.asarray(v).view(np.uint32 if d == np.float32 else np.uint64).item()
        if not np.isfinite(v):
            # no literal spells inf/NaN: build it from its bits
            if d == np.float32:
                return f"__int_as_float({np.int32(np.uint32(bits).view(np.int32)).item()})"
            return f"__longlong_as_double({np.int64(np.uint64(bits).view(np.int64)).item()}LL)"
        h = float(v).hex()
        return f"{h}f" if d == np.float32 else h
    if d.kind == "u":
        return f"(({ctype(d)}){int(value)}ULL)"
    iv = int(value)
    if d.itemsize == 8 and iv == -(1 << 63):
        return "((long long)(-9223372036854775807LL - 1))"
    return f"(({ctype(d)}){iv}LL)"


def ident_expr(kind: str, dt: object) -> str:
    """The identity of reduction ``kind`` in dtype ``dt``."""
    d = value_dtype(dt)
    if d.kind == "c":
        return complex_ops.ident_expr(kind, d, const_expr)
    if kind == "sum":
        return const_expr(0, d)
    if kind == "prod":
        return const_expr(1, d)
    if kind in ("max", "min"):
        big = kind == "min"
        if d == np.bool_:
            return "true" if big else "false"
        if d.kind == "f":
            return const_expr(np.inf if big else -np.inf, d)
        info = np.iinfo(d)
        return const_expr(info.max if big else info.min, d)
    if kind == "and":
        return "true"
    if kind == "or":
        return "false"
    raise NotImplementedError(f"CUDA backend: reduction {kind!r}")


def combine_expr(kind: str, acc: str, v: str, dt: object) -> str:
    """``acc (kind) v`` in dtype ``dt`` (NaN-propagating max/min for floats, as the numba backend)."""
    d = value_dtype(dt)
    if d.kind == "c":
        return complex_ops.combine_expr(kind, acc, v, d)
    T = ctype(d)
    if kind == "sum":
        if d.kind == "f":
            return f"({acc} + {v})"
        if d == np.bool_:
            return f"({acc} || {v})"
        return f"(({T})(({utype(d)}){acc} + ({utype(d)}){v}))"
    if kind == "prod":
        if d.kind == "f":
            return f"({acc} * {v})"
        if d == np.bool_:
            return f"({acc} && {v})"
        return f"(({T})(({utype(d)}){acc} * ({utype(d)}){v}))"
    if kind in ("max", "min"):
        if d == np.bool_:
            return f"({acc} || {v})" if kind == "max" else f"({acc} && {v})"
        if d.kind == "f":
            return f"fj_f{kind}({acc}, {v})"
        return f"fj_i{kind}({acc}, {v})"
    if kind == "and":
        return f"({acc} && {v})" if d == np.bool_ else f"(({T})({acc} & {v}))"
    if kind == "or":
        return f"({acc} || {v})" if d == np.bool_ else f"(({T})({acc} | {v}))"
    raise NotImplementedError(f"CUDA backend: reduction {kind!r}")


def _ipow(x: str, y: int, mul: Callable[[str, str], str]) -> str:
    """x**y (y >= 1) by binary exponentiation (the numba renderer's order of products)."""
    if y == 1:
        return x
    half = _ipow(x, y // 2, mul)
    sq = mul(half, half) if y // 2 > 1 else mul(x, x)
    return mul(sq, x) if y % 2 else sq


# float math: op name -> (float32 function, float64 function)
_MATH = {
    "exp": ("expf", "exp"),
    "log": ("logf", "log"),
    "log1p": ("log1pf", "log1p"),
    "expm1": ("expm1f", "expm1"),
    "tanh": ("tanhf", "tanh"),
    "sin": ("sinf", "sin"),
    "cos": ("cosf", "cos"),
    "tan": ("tanf", "tan"),
    "erf": ("erff", "erf"),
    "erfc": ("erfcf", "erfc"),
    "exp2": ("exp2f", "exp2"),
    "sqrt": ("sqrtf", "sqrt"),
    "cbrt": ("cbrtf", "cbrt"),
    "asin": ("asinf", "asin"),
    "acos": ("acosf", "acos"),
    "atan": ("atanf", "atan"),
    "sinh": ("sinhf", "sinh"),
    "cosh": ("coshf", "cosh"),
    "asinh": ("asinhf", "asinh"),
    "acosh": ("acoshf", "acosh"),
    "atanh": ("atanhf", "atanh"),
    "lgamma": ("lgammaf", "lgamma"),
    "floor": ("floorf", "floor"),
    "ceil": ("ceilf", "ceil"),
}
_MATH2 = {"pow": ("powf", "pow"), "atan2": ("atan2f", "atan2"), "rem": ("fmodf", "fmod")}


def _f2i(x: str, dst: np.dtype) -> str:
    """A float value converted to integer dtype ``dst`` as XLA converts (saturating, NaN -> 0)."""
    lo, hi = ir.f2i_bounds(dst)
    return f"(({ctype(dst)})fj_f2i((double)({x}), {lo.hex()}, {hi.hex()}))"


def _float_only(op: ir.Op, dt: np.dtype) -> None:
    if dt.kind != "f":
        raise NotImplementedError(f"CUDA backend: op {op.op} on dtype {dt.name}")


def render_op(a: list, op: ir.Op) -> str:
    """The CUDA C expression of ``op`` applied to the C expressions ``a`` (already of the op's
    input types), cast to the op's output type. NotImplementedError names an op it cannot render."""
    fn = CUDA_OPS.get(op.op)
    if fn is None:
        raise NotImplementedError(f"CUDA backend: no CUDA rendering of elementwise op {op.op!r}")
    low = op.dtype in LOW_FLOATS
    if op.dtype.kind == "c" or any(np.dtype(d).kind == "c" for d in op.in_dtypes):
        if op.op == "convert_element_type" and (low or np.dtype(op.in_dtypes[0]) in LOW_FLOATS):
            return _convert_low_complex(a[0], np.dtype(op.in_dtypes[0]), np.dtype(op.dtype))
        if low or any(np.dtype(d) in LOW_FLOATS for d in op.in_dtypes):
            names = [np.dtype(d).name for d in (op.dtype, *op.in_dtypes)]
            raise NotImplementedError(f"CUDA backend: op {op.op} mixing complex and 16-bit float dtypes {names}")
        e = complex_ops.render_op(a, op, ctype, _f2i)
        if e is not None:
            return e
    if low or any(np.dtype(d) in LOW_FLOATS for d in op.in_dtypes):
        return _render_low(fn, a, op, low)
    return fn(a, op)


def _convert_low_complex(x: str, src: np.dtype, dst: np.dtype) -> str:
    """A 16-bit float (its float value) as complex, or a complex value's real part rounded once to
    a 16-bit float (from complex128 through double, as numpy / ml_dtypes convert)."""
    if dst.kind == "c":
        P = "float" if dst == np.complex64 else "double"
        return f"{ctype(dst)}(({P})({x}), ({P})0)"
    tag = LOW_FLOATS[dst]
    return f"fj_r{tag}_d({x}.re)" if src == np.complex128 else f"fj_r{tag}({x}.re)"


# ops whose float32 result of 16-bit inputs is already a 16-bit value (no rounding needed)
_EXACT = frozenset({"neg", "abs", "max", "min", "select_n", "clamp", "sign", "floor", "ceil", "round"})
# ops on the bits or the spacing of a format: not computable in float32
_BITWISE = frozenset({"nextafter", "reduce_precision", "bitcast_convert_type", "population_count", "clz"})


def _render_low(fn: Callable, a: list, op: ir.Op, low: bool) -> str:
    """``op`` with 16-bit float operands or result: the float32 op, then (for a 16-bit result)
    a rounding to the result's format: one rounding per op, as XLA computes 16-bit floats."""
    if op.op in _BITWISE:
        raise NotImplementedError(f"CUDA backend: op {op.op} on dtype {op.dtype.name}")
    ins = tuple(value_dtype(d) for d in op.in_dtypes)
    proxy = ir.Op(op.out, op.op, op.args, value_dtype(op.dtype), ins, op.params, op.comment)
    if op.op == "convert_element_type" and op.dtype == np.float16 and np.dtype(op.in_dtypes[0]).kind in "fiu":
        src = np.dtype(op.in_dtypes[0])
        if src == np.float64 or (src.kind in "iu" and src.itemsize >= 4):
            # one rounding from the wide value, as numpy converts to float16 (round to odd in
            # float, then to nearest even); bfloat16 goes through float32 as ml_dtypes does
            return f"fj_rf16_d((double)({a[0]}))"
    e = fn(a, proxy)
    if not low or (op.op in _EXACT and all(np.dtype(d) == op.dtype for d in op.in_dtypes[-1:])):
        return e
    if op.op == "convert_element_type" and np.dtype(op.in_dtypes[0]) == op.dtype:
        return e
    return f"fj_r{LOW_FLOATS[op.dtype]}({e})"


def _build_table() -> dict:
    def T(op: ir.Op) -> str:
        return ctype(op.dtype)

    def cast(e: str, op: ir.Op) -> str:
        return f"(({T(op)})({e}))"

    def wrap(sym: str) -> Callable:
        # + - * : floats plain, integers wrap through the unsigned type, bools (add=or, mul=and)
        def r(a: list, op: ir.Op) -> str:
            d = op.dtype
            if d.kind == "f":
                return cast(f"{a[0]} {sym} {a[1]}", op)
            if d == np.bool_:
                logical = {"+": "||", "*": "&&", "-": "!="}[sym]
                return f"({a[0]} {logical} {a[1]})"
            u = utype(d)
            return cast(f"({u})(({u}){a[0]} {sym} ({u}){a[1]})", op)

        return r

    def cmp(sym: str) -> Callable:
        return lambda a, op: f"({a[0]} {sym} {a[1]})"

    def math1(name: str) -> Callable:
        f32, f64 = _MATH[name]

        def r(a: list, op: ir.Op) -> str:
            _float_only(op, op.dtype)
            return cast(f"{f32 if op.dtype == np.float32 else f64}({a[0]})", op)

        return r

    def math2(name: str) -> Callable:
        f32, f64 = _MATH2[name]

        def r(a: list, op: ir.Op) -> str:
            _float_only(op, op.dtype)
            return cast(f"{f32 if op.dtype == np.float32 else f64}({a[0]}, {a[1]})", op)

        return r

    def div(a: list, op: ir.Op) -> str:
        d = op.dtype
        if d.kind == "f":
            return cast(f"{a[0]} / {a[1]}", op)
        if d == np.bool_:
            raise NotImplementedError("CUDA backend: op div on dtype bool")
        return f"fj_idiv<{T(op)}, {utype(d)}>({a[0]}, {a[1]})"

    def rem(a: list, op: ir.Op) -> str:
        d = op.dtype
        if d.kind == "f":
            return math2("rem")(a, op)
        if d == np.bool_:
            raise NotImplementedError("CUDA backend: op rem on dtype bool")
        return f"fj_irem<{T(op)}, {utype(d)}>({a[0]}, {a[1]})"

    def minmax(kind: str) -> Callable:
        def r(a: list, op: ir.Op) -> str:
            return combine_expr(kind, a[0], a[1], op.dtype)

        return r

    def bitop(sym: str, logical: str) -> Callable:
        def r(a: list, op: ir.Op) -> str:
            if op.dtype == np.bool_:
                return f"({a[0]} {logical} {a[1]})"
            if op.dtype.kind == "f":
                raise NotImplementedError(f"CUDA backend: op {op.op} on dtype {op.dtype.name}")
            return cast(f"{a[0]} {sym} {a[1]}", op)

        return r

    def not_(a: list, op: ir.Op) -> str:
        if op.dtype == np.bool_:
            return f"(!{a[0]})"
        if op.dtype.kind == "f":
            raise NotImplementedError(f"CUDA backend: op not on dtype {op.dtype.name}")
        return cast(f"~{a[0]}", op)

    def neg(a: list, op: ir.Op) -> str:
        d = op.dtype
        if d.kind == "f":
            return cast(f"-{a[0]}", op)
        if d == np.bool_:
            return a[0]
        u = utype(d)
        return cast(f"({u})(({u})0 - ({u}){a[0]})", op)

    def sign(a: list, op: ir.Op) -> str:
        d = op.dtype
        if d.kind == "f":
            return f"fj_fsign({a[0]})"
        if d.kind == "u" or d == np.bool_:
            return cast(f"{a[0]} > 0", op)
        return cast(f"({a[0]} > 0) - ({a[0]} < 0)", op)

    def abs_(a: list, op: ir.Op) -> str:
        d = op.dtype
        if d.kind == "f":
            return cast(f"{'fabsf' if d == np.float32 else 'fabs'}({a[0]})", op)
        if d.kind == "u" or d == np.bool_:
            return a[0]
        u = utype(d)
        return cast(f"{a[0]} < 0 ? ({u})(({u})0 - ({u}){a[0]}) : ({u}){a[0]}", op)

    def round_(a: list, op: ir.Op) -> str:
        _float_only(op, op.dtype)
        f = "f" if op.dtype == np.float32 else ""
        if int(op.params.get("rounding_method", 0)) == 1:
            return cast(f"rint{f}({a[0]})", op)
        half = const_expr(0.5, op.dtype)
        return cast(f"fj_fsign({a[0]}) * floor{f}(fabs{f}({a[0]}) + {half})", op)

    def is_finite(a: list, op: ir.Op) -> str:
        return f"((bool)isfinite({a[0]}))"

    def logistic(a: list, op: ir.Op) -> str:
        _float_only(op, op.dtype)
        return f"fj_logistic({a[0]})"

    def rsqrt(a: list, op: ir.Op) -> str:
        _float_only(op, op.dtype)
        one = const_expr(1, op.dtype)
        return cast(f"{one} / {'sqrtf' if op.dtype == np.float32 else 'sqrt'}({a[0]})", op)

    def square(a: list, op: ir.Op) -> str:
        return wrap("*")([a[0], a[0]], op)

    def integer_pow(a: list, op: ir.Op) -> str:
        y = int(op.params["y"])
        d = op.dtype
        one = const_expr(1, d)
        if y == 0:
            return one
        if d.kind == "f":
            e = _ipow(a[0], abs(y), lambda p, q: f"({p} * {q})")
            return cast(f"{one} / {e}" if y < 0 else e, op)
        if d == np.bool_ or y < 0:
            raise NotImplementedError(f"CUDA backend: op integer_pow[y={y}] on dtype {d.name}")
        u = utype(d)
        e = _ipow(f"(({u}){a[0]})", y, lambda p, q: f"(({u})({p} * {q}))")
        return cast(e, op)

    def convert(a: list, op: ir.Op) -> str:
        src, dst = np.dtype(op.in_dtypes[0]), op.dtype
        ctype(src)
        if dst == np.bool_:
            return f"({a[0]} != 0)" if src != np.bool_ else a[0]
        if src.kind == "f" and dst.kind in "iu":
            return _f2i(a[0], dst)
        return cast(a[0], op)

    def select_n(a: list, op: ir.Op) -> str:
        w, cases = a[0], a[1:]
        if len(cases) == 1:
            return cases[0]
        if np.dtype(op.in_dtypes[0]) == np.bool_:
            return f"({w} ? {cases[1]} : {cases[0]})"
        e = cases[-1]
        for i in range(len(cases) - 2, -1, -1):
            e = f"({w} == {i} ? {cases[i]} : {e})"
        return e

    def clamp(a: list, op: ir.Op) -> str:
        lo, x, hi = a
        d = op.dtype
        if d.kind == "f":
            return f"fj_fmin(fj_fmax({x}, {lo}), {hi})"
        if d == np.bool_:
            return f"(({x} || {lo}) && {hi})"
        return f"fj_imin(fj_imax({x}, {lo}), {hi})"

    def shift(kind: str) -> Callable:
        def r(a: list, op: ir.Op) -> str:
            d = op.dtype
            if d.kind not in "iu":
                raise NotImplementedError(f"CUDA backend: op {op.op} on dtype {d.name}")
            bits = d.itemsize * 8
            u = utype(d)
            s = f"({u}){a[1]}"
            ok = f"((unsigned long long)(long long){a[1]} < {bits}ULL)" if d.kind == "i" else f"({a[1]} < {bits})"
            if kind == "left":
                return cast(f"{ok} ? ({u})(({u}){a[0]} << {s}) : ({u})0", op)
            if kind == "logical":
                return cast(f"{ok} ? ({u})(({u}){a[0]} >> {s}) : ({u})0", op)
            # arithmetic: the bit pattern shifted as signed (XLA: unsigned operands too)
            st = {1: "signed char", 2: "short", 4: "int", 8: "long long"}[d.itemsize]
            x = f"(({st}){a[0]})"
            return cast(f"{ok} ? ({st})({x} >> {s}) : ({st})({x} < 0 ? -1 : 0)", op)

        return r

    table: dict[str, Callable] = {
        "add": wrap("+"),
        "sub": wrap("-"),
        "mul": wrap("*"),
        "div": div,
        "rem": rem,
        "pow": math2("pow"),
        "atan2": math2("atan2"),
        "max": minmax("max"),
        "min": minmax("min"),
        "eq": cmp("=="),
        "ne": cmp("!="),
        "lt": cmp("<"),
        "le": cmp("<="),
        "gt": cmp(">"),
        "ge": cmp(">="),
        "and": bitop("&", "&&"),
        "or": bitop("|", "||"),
        "xor": lambda a, op: f"({a[0]} != {a[1]})" if op.dtype == np.bool_ else bitop("^", "")(a, op),
        "not": not_,
        "shift_left": shift("left"),
        "shift_right_arithmetic": shift("arith"),
        "shift_right_logical": shift("logical"),
        "neg": neg,
        "sign": sign,
        "round": round_,
        "is_finite": is_finite,
        "abs": abs_,
        "logistic": logistic,
        "rsqrt": rsqrt,
        "square": square,
        "integer_pow": integer_pow,
        "convert_element_type": convert,
        "select_n": select_n,
        "clamp": clamp,
    }
    for name in _MATH:
        table[name] = math1(name)

    def complex_only(a: list, op: ir.Op) -> str:  # complex operands take complex_ops' path first
        raise NotImplementedError(f"CUDA backend: op {op.op} on dtype {op.dtype.name}")

    for name in ("real", "imag", "conj"):
        table[name] = complex_only
    return table


CUDA_OPS: dict[str, Callable] = _build_table()
# a float32 GEMM operand as a fast compute mode reads it, ``drop`` low mantissa bits rounded away
# (fj_keep_bits below): the products of a matrix-vector product fused into a row kernel
# (matvec_rows.py), as the cuBLAS GEMM it replaces would read them
CUDA_OPS["gemm_operand"] = lambda a, op: f"fj_keep_bits({a[0]}, {int(op.params['drop'])}u)"


# the device helpers every translation unit defines once (guarded, so sources concatenate)
PRELUDE = r"""#ifndef FJAX_CUDA_PRELUDE
#define FJAX_CUDA_PRELUDE
// fjax CUDA prelude: XLA's semantics where C's differ (NaN-propagating min/max, integer division
// by zero, saturating float->int conversion), and warp shuffles of every kernel dtype.
#ifdef FJAX_EMULATE
#include "cuda_emu.h"
#endif
// NVRTC compiles without <math.h>: C's INFINITY and NAN as CUDA's math_constants.h spells them
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
template <typename T> __device__ __forceinline__ T fj_fmax(T a, T b) { return (a > b || a != a) ? a : b; }
template <typename T> __device__ __forceinline__ T fj_fmin(T a, T b) { return (a < b || a != a) ? a : b; }
template <typename T> __device__ __forceinline__ T fj_imax(T a, T b) { return a > b ? a : b; }
template <typename T> __device__ __forceinline__ T fj_imin(T a, T b) { return a < b ? a : b; }
template <typename T> __device__ __forceinline__ T fj_fsign(T x) {
  return x > (T)0 ? (T)1 : (x < (T)0 ? (T)-1 : x * (T)1);
}
__device__ __forceinline__ float fj_logistic(float x) {
  float e = expf(-fabsf(x)); float d = 1.0f + e; return x >= 0.0f ? 1.0f / d : e / d;
}
__device__ __forceinline__ double fj_logistic(double x) {
  double e = exp(-fabs(x)); double d = 1.0 + e; return x >= 0.0 ? 1.0 / d : e / d;
}
// x / 0 = all ones (-1; the maximum of an unsigned type), INT_MIN / -1 = INT_MIN, else toward zero
template <typename T, typename U> __device__ __forceinline__ T fj_idiv(T x, T y) {
  if (y == (T)0) return (T)(U)~(U)0;
  if ((T)(y + (T)1) == (T)0 && (T)-1 < (T)0) return (T)(U)((U)0 - (U)x);
  return (T)(x / y);
}
// x % 0 = x, INT_MIN % -1 = 0, else with the dividend's sign
template <typename T, typename U> __device__ __forceinline__ T fj_irem(T x, T y) {
  if (y == (T)0) return x;
  if ((T)(y + (T)1) == (T)0 && (T)-1 < (T)0) return (T)0;
  return (T)(x % y);
}
// float -> integer as XLA: NaN -> 0, truncate, saturate to [lo, hi]
__device__ __forceinline__ double fj_f2i(double x, double lo, double hi) {
  if (x != x) return 0.0;
  double t = trunc(x);
  return t <= lo ? lo : (t >= hi ? hi : t);
}
// a float32 GEMM operand as a fast compute mode reads it (TF32/float16: 13 low mantissa bits
// dropped, bfloat16: 16), rounded to nearest even; infinities and NaN as they are
__device__ __forceinline__ float fj_keep_bits(float x, unsigned int drop) {
  unsigned int u = __float_as_uint(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;
  u = (u + ((1u << (drop - 1u)) - 1u) + ((u >> drop) & 1u)) & ~((1u << drop) - 1u);
  return __uint_as_float(u);
}
// 16-bit floats: buffers hold the bits, kernels compute in float and round each op's result back
// (round to nearest even; NaN stays NaN, overflow goes to infinity, float16 subnormals kept)
__device__ __forceinline__ float fj_bf16_f32(unsigned short h) { return __uint_as_float((unsigned int)h << 16); }
__device__ __forceinline__ unsigned short fj_f32_bf16(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
__device__ __forceinline__ float fj_f16_f32(unsigned short h) {
  const unsigned int s = ((unsigned int)h & 0x8000u) << 16, e = ((unsigned int)h >> 10) & 0x1fu;
  const unsigned int m = (unsigned int)h & 0x3ffu;
  if (e == 0u) {
    const float v = (float)m * 5.9604644775390625e-8f;  // m * 2^-24
    return s ? -v : v;
  }
  if (e == 31u) return __uint_as_float(s | 0x7f800000u | (m << 13));
  return __uint_as_float(s | ((e + 112u) << 23) | (m << 13));
}
__device__ __forceinline__ unsigned short fj_f32_f16(float f) {
  const unsigned int u = __float_as_uint(f), s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (unsigned short)(s | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) return (unsigned short)(s | 0x7c00u);  // 65520 and up: infinity
  if (a < 0x38800000u) {  // below 2^-14: a subnormal, m * 2^-24
    return (unsigned short)(s | (unsigned int)rintf(__uint_as_float(a) * 16777216.0f));
  }
  unsigned int r = a - 0x38000000u;
  r += 0xfffu + ((r >> 13) & 1u);
  return (unsigned short)(s | (r >> 13));
}
__device__ __forceinline__ float fj_rbf16(float f) { return fj_bf16_f32(fj_f32_bf16(f)); }
// scatter-add of a 16-bit float: a compare-and-swap loop on the aligned 32-bit word holding it
#define FJ_ATOMIC_ADD_16(TAG)                                                                    \
  __device__ __forceinline__ void fj_atomic_add_##TAG(unsigned short* p, float v) {              \
    unsigned int* w = (unsigned int*)((unsigned long long)p & ~3ull);                            \
    const unsigned int sh = ((unsigned long long)p & 2ull) ? 16u : 0u;                           \
    unsigned int old = *w, assumed;                                                              \
    do {                                                                                         \
      assumed = old;                                                                             \
      const float f = fj_##TAG##_f32((unsigned short)(assumed >> sh)) + v;                       \
      const unsigned int r = (unsigned int)fj_f32_##TAG(f);                                      \
      old = atomicCAS(w, assumed, (assumed & ~(0xffffu << sh)) | (r << sh));                     \
    } while (old != assumed);                                                                    \
  }
__device__ __forceinline__ float fj_rf16(float f) { return fj_f16_f32(fj_f32_f16(f)); }
FJ_ATOMIC_ADD_16(bf16)
FJ_ATOMIC_ADD_16(f16)
// a double rounded once to a 16-bit float: to float rounding to odd (no double rounding), then
// to nearest even
__device__ __forceinline__ float fj_d2f_odd(double x) {
  float f = (float)x;
  if ((double)f != x && x == x) {
    unsigned int u = __float_as_uint(f);
    if (fabs((double)f) > fabs(x)) u -= 1u;
    f = __uint_as_float(u | 1u);
  }
  return f;
}
__device__ __forceinline__ float fj_rbf16_d(double x) { return fj_rbf16(fj_d2f_odd(x)); }
// a * b + c of 16-bit floats rounded once (the CPU impl's algorithm: the product is exact in
// double; a double sum landing exactly on a midpoint of the 16-bit format is nudged towards the
// exact value); ``drop``: the double mantissa bits below the format's
__device__ __forceinline__ double fj_fma16(float a, float b, float c, int drop) {
  const double x = (double)a * (double)b, z = (double)c, s = x + z, bv = s - x;
  const double err = (x - (s - bv)) + (z - bv);
  const unsigned long long low = (unsigned long long)__double_as_longlong(s) & ((1ull << drop) - 1ull);
  if (low == (1ull << (drop - 1)) && err != 0.0 && isfinite(err)) {
    return nextafter(s, __longlong_as_double(err > 0.0 ? 0x7ff0000000000000LL : (long long)0xfff0000000000000ULL));
  }
  return s;
}
__device__ __forceinline__ float fj_rf16_d(double x) { return fj_rf16(fj_d2f_odd(x)); }
template <typename T> __device__ __forceinline__ T fj_shfl_down(T v, int d) {
  return __shfl_down_sync(0xffffffffu, v, d);
}
template <> __device__ __forceinline__ bool fj_shfl_down<bool>(bool v, int d) {
  return (bool)__shfl_down_sync(0xffffffffu, (int)v, d);
}
template <> __device__ __forceinline__ signed char fj_shfl_down<signed char>(signed char v, int d) {
  return (signed char)__shfl_down_sync(0xffffffffu, (int)v, d);
}
template <> __device__ __forceinline__ short fj_shfl_down<short>(short v, int d) {
  return (short)__shfl_down_sync(0xffffffffu, (int)v, d);
}
template <> __device__ __forceinline__ unsigned char fj_shfl_down<unsigned char>(unsigned char v, int d) {
  return (unsigned char)__shfl_down_sync(0xffffffffu, (unsigned int)v, d);
}
template <> __device__ __forceinline__ unsigned short fj_shfl_down<unsigned short>(unsigned short v, int d) {
  return (unsigned short)__shfl_down_sync(0xffffffffu, (unsigned int)v, d);
}
#endif  // FJAX_CUDA_PRELUDE
"""
