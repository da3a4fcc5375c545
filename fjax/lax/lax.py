"""Elementwise, structural and reduction primitives, and dot_general.

One block per primitive: its definition, then its rules (jvp, transpose, batching) right under
it. Eager semantics are numpy ``impl`` functions; rule families come from the interpreters'
helpers (``ad.defjvp``, ``ad.deflinear``, ``batching.defvectorized``, ...).
"""

# ruff: noqa: F405 - the reduction and wrapper parts come back through star imports
from __future__ import annotations

import functools  # noqa: F401 - used by lax_reductions / lax_wrappers
import math
from enum import IntEnum
from typing import Any, Callable, Sequence

import numpy as np

from fjax import _blas, core, dtypes  # noqa: F401 - also used by lax_reductions / lax_wrappers
from fjax.backends.registry import (  # noqa: F401 - LIBRARY/REDUCTION: used by lax_reductions
    ELEMENTWISE,
    INDEXING,
    ITERATION,
    LAYOUT,
    LIBRARY,
    REDUCTION,
    register_lowering,
)
from fjax.core import Primitive, ShapedArray
from fjax.dtypes import kind as _dkind
from fjax.interpreters import ad, batching
from fjax.interpreters.ad import Zero, is_undefined_primal
from fjax.lax import _special

_bind = core.bind1

# ---------------------------------------------------------------------------------------------
# dtype kinds and the standard abstract-eval rules

_float = "f"
_complex = "c"
_fc = "fc"
_int = "iu"
_intb = "iub"
_num = "iufc"
_any = "biufc"

_kind_names = {
    "f": "floating",
    "fc": "floating or complex",
    "iu": "integer",
    "iub": "integer or boolean",
    "iufc": "numeric",
    "biufc": "any",
    "c": "complex",
    "b": "boolean",
}


def _check_kind(name: str, aval: Any, kinds: str) -> None:
    if _dkind(aval.dtype) not in kinds:
        raise TypeError(
            f"{name} does not accept dtype {aval.dtype.name}; it requires a {_kind_names.get(kinds, kinds)} "
            f"argument (got {core.short_dtype_name(aval.dtype)}{list(aval.shape)})."
        )


def _unop_abstract(name: str, kinds: str, result_dtype: Callable | None = None) -> Callable:
    def rule(x: Any, **params: Any) -> ShapedArray:
        _check_kind(name, x, kinds)
        dt = x.dtype if result_dtype is None else result_dtype(x.dtype)
        return ShapedArray(x.shape, dt, x.weak_type and result_dtype is None)

    return rule


def _broadcast_shapes_rule(name: str, avals: Sequence[Any]) -> tuple[int, ...]:
    shape: tuple[int, ...] | None = None
    for a in avals:
        s = a.shape
        if not s:
            continue
        if shape is None:
            shape = s
        elif s != shape:
            shapes = ", ".join(str(tuple(b.shape)) for b in avals)
            raise TypeError(f"{name} got incompatible shapes for broadcasting: {shapes}.")
    return () if shape is None else shape


def _naryop_abstract(name: str, kinds: str, out_bool: bool = False) -> Callable:
    def rule(*avals: Any, **params: Any) -> ShapedArray:
        dt = avals[0].dtype
        for a in avals:
            _check_kind(name, a, kinds)
            if a.dtype != dt:
                dts = ", ".join(b.dtype.name for b in avals)
                raise TypeError(
                    f"lax.{name} requires arguments to have the same dtypes, got {dts}. "
                    f"(Tip: jnp.{_jnp_names.get(name, name)} is a similar function that does automatic type "
                    "promotion on inputs)."
                )
        shape = _broadcast_shapes_rule(name, avals)
        weak = all(a.weak_type for a in avals)
        return ShapedArray(shape, np.dtype(np.bool_) if out_bool else dt, weak and not out_bool)

    return rule


_jnp_names = {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "div": "divide",
    "rem": "remainder",
    "max": "maximum",
    "min": "minimum",
    "pow": "power",
    "eq": "equal",
    "ne": "not_equal",
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
}


def standard_unop(name: str, impl: Callable, kinds: str, result_dtype: Callable | None = None) -> Primitive:
    p = Primitive(name)
    p.def_impl(impl)
    p.def_abstract_eval(_unop_abstract(name, kinds, result_dtype))
    batching.defvectorized(p)
    return p


def standard_naryop(name: str, impl: Callable, kinds: str, out_bool: bool = False) -> Primitive:
    p = Primitive(name)
    p.def_impl(impl)
    p.def_abstract_eval(_naryop_abstract(name, kinds, out_bool))
    batching.defbroadcasting(p)
    return p


def _errstate(fn: Callable) -> Callable:
    """Mark an impl whose numpy call may hit invalid/overflow/divide cases.

    Those warnings are silenced for fjax's modules by a warnings filter (fjax/lax/__init__.py)
    rather than an ``np.errstate`` block per call, which would cost ~1 us on every eager op.
    """
    return fn


def _const(example: Any, val: Any) -> Any:
    """A weakly typed scalar of ``example``'s dtype (inserted as a literal when staged)."""
    dt = core.get_aval(example).dtype
    return core.Array(np.array(val, dtype=dt), True)


# ---------------------------------------------------------------------------------------------
# unary elementwise


def _real_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dt == np.complex64 else (np.dtype(np.float64) if dt == np.complex128 else dt)


neg_p = standard_unop("neg", np.negative, _num)
register_lowering(neg_p, ELEMENTWISE)
ad.deflinear(neg_p, lambda ct, x: [neg(ct)])


def _sign_impl(x: np.ndarray) -> np.ndarray:
    if _dkind(x.dtype) in "fc":
        return np.where(x == 0, x, np.sign(x)).astype(x.dtype)  # sign(-0.0) is -0.0, as XLA
    return np.sign(x)


sign_p = standard_unop("sign", _errstate(_sign_impl), _num)
register_lowering(sign_p, ELEMENTWISE)
ad.defzero(sign_p)

floor_p = standard_unop("floor", np.floor, _float)
register_lowering(floor_p, ELEMENTWISE)
ad.defzero(floor_p)

ceil_p = standard_unop("ceil", np.ceil, _float)
register_lowering(ceil_p, ELEMENTWISE)
ad.defzero(ceil_p)


class RoundingMethod(IntEnum):
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def _round_impl(x: np.ndarray, rounding_method: int = 0) -> np.ndarray:
    if int(rounding_method) == RoundingMethod.TO_NEAREST_EVEN:
        return np.round(x)
    # halfway cases away from zero; x - trunc(x) is exact, so no double rounding (floor(x + 0.5)
    # is wrong for 0.49999997 and odd integers above 2**23 in float32); keeps the sign of zero
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= np.asarray(0.5, x.dtype), t + np.sign(x), t).astype(x.dtype)


round_p = standard_unop("round", _errstate(_round_impl), _float)
register_lowering(round_p, ELEMENTWISE)
ad.defzero(round_p)

is_finite_p = standard_unop("is_finite", np.isfinite, _float, lambda dt: np.dtype(np.bool_))
register_lowering(is_finite_p, ELEMENTWISE)
ad.defzero(is_finite_p)

abs_p = standard_unop("abs", np.abs, _num, _real_dtype)
register_lowering(abs_p, ELEMENTWISE)
ad.defjvp(abs_p, lambda g, x: _abs_jvp(g, x))


def _abs_jvp(g: Any, x: Any) -> Any:
    if _dkind(core.get_aval(x).dtype) == "c":
        # d|z| = Re(conj(z) dz) / |z|, taken as 0 at z == 0 (as JAX)
        ans = abs(x)
        safe = select(eq(ans, _const(ans, 0)), full_like(ans, 1), ans)
        return div(real(mul(g, conj(x))), safe)
    return select(ge(x, _const(x, 0)), g, neg(g))  # derivative 1 at x == 0, as JAX


exp_p = standard_unop("exp", _errstate(np.exp), _fc)
register_lowering(exp_p, ELEMENTWISE)
ad.defjvp2(exp_p, lambda g, ans, x: mul(g, ans))


def _exp2_impl(x: np.ndarray) -> np.ndarray:
    # numpy's float32 exp2 is off by an ulp at some integers (2**-k, 2**126); through float64 it is
    # exact there, as XLA's and the compiled kernels' (frexp/ldexp rely on it)
    if x.dtype == np.float32:
        return np.exp2(x.astype(np.float64)).astype(np.float32)
    return np.exp2(x)


exp2_p = standard_unop("exp2", _errstate(_exp2_impl), _fc)
register_lowering(exp2_p, ELEMENTWISE)
ad.defjvp2(exp2_p, lambda g, ans, x: mul(g, mul(ans, _const(x, math.log(2.0)))))

log_p = standard_unop("log", _errstate(np.log), _fc)
register_lowering(log_p, ELEMENTWISE)
ad.defjvp(log_p, lambda g, x: div(g, x))

log1p_p = standard_unop("log1p", _errstate(np.log1p), _fc)
register_lowering(log1p_p, ELEMENTWISE)
ad.defjvp(log1p_p, lambda g, x: div(g, add(x, _const(x, 1))))

expm1_p = standard_unop("expm1", _errstate(np.expm1), _fc)
register_lowering(expm1_p, ELEMENTWISE)
ad.defjvp2(expm1_p, lambda g, ans, x: mul(g, add(ans, _const(ans, 1))))

sqrt_p = standard_unop("sqrt", _errstate(np.sqrt), _fc)
register_lowering(sqrt_p, ELEMENTWISE)
ad.defjvp2(sqrt_p, lambda g, ans, x: div(g, mul(ans, _const(ans, 2))))


def _rsqrt_impl(x: np.ndarray) -> np.ndarray:
    return np.asarray(1, x.dtype) / np.sqrt(x)


rsqrt_p = standard_unop("rsqrt", _errstate(_rsqrt_impl), _fc)
register_lowering(rsqrt_p, ELEMENTWISE)
ad.defjvp2(rsqrt_p, lambda g, ans, x: mul(g, mul(_const(x, -0.5), div(ans, x))))

cbrt_p = standard_unop("cbrt", np.cbrt, _float)
register_lowering(cbrt_p, ELEMENTWISE)
ad.defjvp2(cbrt_p, lambda g, ans, x: mul(g, mul(_const(x, 1.0 / 3.0), integer_pow(ans, -2))))

sin_p = standard_unop("sin", _errstate(np.sin), _fc)
register_lowering(sin_p, ELEMENTWISE)
ad.defjvp(sin_p, lambda g, x: mul(g, cos(x)))

cos_p = standard_unop("cos", _errstate(np.cos), _fc)
register_lowering(cos_p, ELEMENTWISE)
ad.defjvp(cos_p, lambda g, x: neg(mul(g, sin(x))))

tan_p = standard_unop("tan", _errstate(np.tan), _fc)
register_lowering(tan_p, ELEMENTWISE)
ad.defjvp2(tan_p, lambda g, ans, x: mul(g, add(_const(x, 1), mul(ans, ans))))

asin_p = standard_unop("asin", _errstate(np.arcsin), _fc)
register_lowering(asin_p, ELEMENTWISE)
ad.defjvp(asin_p, lambda g, x: mul(g, rsqrt(sub(_const(x, 1), mul(x, x)))))

acos_p = standard_unop("acos", _errstate(np.arccos), _fc)
register_lowering(acos_p, ELEMENTWISE)
ad.defjvp(acos_p, lambda g, x: neg(mul(g, rsqrt(sub(_const(x, 1), mul(x, x))))))

atan_p = standard_unop("atan", _errstate(np.arctan), _fc)
register_lowering(atan_p, ELEMENTWISE)
ad.defjvp(atan_p, lambda g, x: div(g, add(_const(x, 1), mul(x, x))))

sinh_p = standard_unop("sinh", _errstate(np.sinh), _fc)
register_lowering(sinh_p, ELEMENTWISE)
ad.defjvp(sinh_p, lambda g, x: mul(g, cosh(x)))

cosh_p = standard_unop("cosh", _errstate(np.cosh), _fc)
register_lowering(cosh_p, ELEMENTWISE)
ad.defjvp(cosh_p, lambda g, x: mul(g, sinh(x)))

tanh_p = standard_unop("tanh", np.tanh, _fc)
register_lowering(tanh_p, ELEMENTWISE)
ad.defjvp2(tanh_p, lambda g, ans, x: mul(g, sub(_const(x, 1), mul(ans, ans))))

asinh_p = standard_unop("asinh", _errstate(np.arcsinh), _fc)
register_lowering(asinh_p, ELEMENTWISE)
ad.defjvp(asinh_p, lambda g, x: mul(g, rsqrt(add(mul(x, x), _const(x, 1)))))

acosh_p = standard_unop("acosh", _errstate(np.arccosh), _fc)
register_lowering(acosh_p, ELEMENTWISE)
ad.defjvp(acosh_p, lambda g, x: mul(g, rsqrt(mul(sub(x, _const(x, 1)), add(x, _const(x, 1))))))

atanh_p = standard_unop("atanh", _errstate(np.arctanh), _fc)
register_lowering(atanh_p, ELEMENTWISE)
ad.defjvp(atanh_p, lambda g, x: div(g, sub(_const(x, 1), mul(x, x))))


def _logistic_impl(x: np.ndarray) -> np.ndarray:
    # stable on both tails: exp of a non-positive number only
    e = np.exp(-np.abs(x))
    one = np.asarray(1, x.dtype)
    return np.where(x >= 0, one / (one + e), e / (one + e)).astype(x.dtype)


logistic_p = standard_unop("logistic", _errstate(_logistic_impl), _fc)
register_lowering(logistic_p, ELEMENTWISE)
ad.defjvp2(logistic_p, lambda g, ans, x: mul(g, mul(ans, sub(_const(ans, 1), ans))))

erf_p = standard_unop("erf", _special.erf, _float)
register_lowering(erf_p, ELEMENTWISE)
ad.defjvp(erf_p, lambda g, x: mul(g, mul(_const(x, 2.0 / math.sqrt(math.pi)), exp(neg(mul(x, x))))))

erfc_p = standard_unop("erfc", _special.erfc, _float)
register_lowering(erfc_p, ELEMENTWISE)
ad.defjvp(erfc_p, lambda g, x: mul(g, mul(_const(x, -2.0 / math.sqrt(math.pi)), exp(neg(mul(x, x))))))

erf_inv_p = standard_unop("erf_inv", _special.erf_inv, _float)
ad.defjvp2(erf_inv_p, lambda g, ans, x: mul(g, mul(_const(x, math.sqrt(math.pi) / 2.0), exp(mul(ans, ans)))))

lgamma_p = standard_unop("lgamma", _special.lgamma, _float)
register_lowering(lgamma_p, ELEMENTWISE)
ad.defjvp(lgamma_p, lambda g, x: mul(g, digamma(x)))

digamma_p = standard_unop("digamma", _special.digamma, _float)


ad.defjvp(digamma_p, lambda g, x: mul(g, polygamma(full_like(x, 1), x)))

polygamma_p = standard_naryop("polygamma", _special.polygamma, _float)


def _polygamma_jvp_m(g: Any, m: Any, x: Any) -> Any:
    raise NotImplementedError("Differentiation rule for 'polygamma' with respect to the order m not implemented")


ad.defjvp(polygamma_p, _polygamma_jvp_m, lambda g, m, x: mul(g, polygamma(add(m, _const(m, 1)), x)))


def _integer_pow_impl(x: np.ndarray, y: int) -> np.ndarray:
    if y < 0 and _dkind(x.dtype) in "iu":
        return np.power(x.astype(np.float64), y).astype(x.dtype)
    if y == 0:
        return np.ones_like(x)
    return np.power(x, y)


def _integer_pow_abstract(x: Any, y: int) -> ShapedArray:
    _check_kind("integer_pow", x, _num)
    if not isinstance(y, (int, np.integer)):
        raise TypeError(f"integer_pow: exponent must be a Python int, got {type(y).__name__}")
    if y < 0 and _dkind(x.dtype) in "iu":
        shape = ",".join(map(str, x.shape))
        raise TypeError(f"Integers cannot be raised to negative powers, got integer_pow({x.dtype.name}[{shape}], {y})")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


integer_pow_p = Primitive("integer_pow")
integer_pow_p.def_impl(_errstate(_integer_pow_impl))
integer_pow_p.def_abstract_eval(_integer_pow_abstract)


def _integer_pow_lowering_check(eqn: core.JaxprEqn) -> str | None:
    if eqn.params["y"] < 0 and _dkind(eqn.invars[0].aval.dtype) in "iu":
        return "integer_pow with a negative exponent on integers"
    return None


register_lowering(integer_pow_p, ELEMENTWISE, check=_integer_pow_lowering_check)
batching.defvectorized(integer_pow_p)


def _integer_pow_jvp(g: Any, x: Any, *, y: int) -> Any:
    if y == 0:
        return mul(g, full_like(x, 0))
    return mul(g, mul(_const(x, y), integer_pow(x, y - 1) if y - 1 != 1 else x))


ad.defjvp(integer_pow_p, _integer_pow_jvp)

square_p = standard_unop("square", np.square, _num)
register_lowering(square_p, ELEMENTWISE)
ad.defjvp(square_p, lambda g, x: mul(g, mul(x, _const(x, 2))))

real_p = standard_unop("real", np.real, _complex, _real_dtype)
ad.deflinear(real_p, lambda ct, x: [convert_element_type(ct, x.aval.dtype)])

imag_p = standard_unop("imag", np.imag, _complex, _real_dtype)
ad.deflinear(
    imag_p,
    lambda ct, x: [mul(convert_element_type(ct, x.aval.dtype), _const(core.Array(np.zeros((), x.aval.dtype)), -1j))],
)


def _complex_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.complex128) if dt == np.float64 else (np.dtype(np.complex64) if dt == np.float32 else dt)


# as JAX: conj of a real (float32/float64) array is complex
conj_p = standard_unop("conj", lambda x: np.conj(x).astype(_complex_dtype(x.dtype)), _fc, _complex_dtype)
ad.deflinear(conj_p, lambda ct, x: [conj(ct) if _dkind(x.aval.dtype) == "c" else real(ct)])

# ---------------------------------------------------------------------------------------------
# binary elementwise


def _unbroadcast(aval: ShapedArray, x: Any) -> Any:
    """Sum a cotangent of the broadcast shape back to a rank-0 operand's shape."""
    xs = core.get_aval(x).shape
    if xs == aval.shape:
        return x
    if aval.shape == ():
        return reduce_sum(x, tuple(range(len(xs))))
    raise AssertionError(f"unbroadcast {xs} -> {aval.shape}")


def _aval_of(x: Any) -> ShapedArray:
    return x.aval if is_undefined_primal(x) else core.get_aval(x)


def _add_transpose(ct: Any, x: Any, y: Any) -> list:
    return [
        _unbroadcast(_aval_of(x), ct) if is_undefined_primal(x) else None,
        _unbroadcast(_aval_of(y), ct) if is_undefined_primal(y) else None,
    ]


def _sub_transpose(ct: Any, x: Any, y: Any) -> list:
    return [
        _unbroadcast(_aval_of(x), ct) if is_undefined_primal(x) else None,
        _unbroadcast(_aval_of(y), neg(ct)) if is_undefined_primal(y) else None,
    ]


def _linear_binop_jvp(prim: Primitive, neg_rhs: bool) -> Callable:
    def jvp(primals: list, tangents: list) -> tuple:
        x, y = primals
        tx, ty = tangents
        out = prim.bind(x, y)
        out_aval = core.get_aval(out)
        if type(tx) is Zero and type(ty) is Zero:
            return out, Zero(ad.tangent_aval(out_aval))
        if type(tx) is Zero:
            t = neg(ty) if neg_rhs else ty
            return out, _bcast_to(t, out_aval.shape)
        if type(ty) is Zero:
            return out, _bcast_to(tx, out_aval.shape)
        return out, prim.bind(tx, ty)

    return jvp


def _bcast_to(x: Any, shape: tuple) -> Any:
    xs = core.get_aval(x).shape
    if xs == shape:
        return x
    return broadcast_in_dim(x, shape, ())


add_p = standard_naryop("add", np.add, _num)
register_lowering(add_p, ELEMENTWISE)
ad.primitive_jvps[add_p] = _linear_binop_jvp(add_p, False)
ad.primitive_transposes[add_p] = _add_transpose

sub_p = standard_naryop("sub", np.subtract, _num)
register_lowering(sub_p, ELEMENTWISE)
ad.primitive_jvps[sub_p] = _linear_binop_jvp(sub_p, True)
ad.primitive_transposes[sub_p] = _sub_transpose

mul_p = standard_naryop("mul", np.multiply, _num)
register_lowering(mul_p, ELEMENTWISE)


def _mul_transpose_lhs(ct: Any, x: Any, y: Any) -> Any:
    return _unbroadcast(x.aval, mul(ct, y))


def _mul_transpose_rhs(ct: Any, x: Any, y: Any) -> Any:
    return _unbroadcast(y.aval, mul(x, ct))


ad.defbilinear(mul_p, _mul_transpose_lhs, _mul_transpose_rhs)


def _div_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if _dkind(x.dtype) in "iu":
        # integer division rounds toward zero (C semantics, as XLA); x/0 gives -1 like XLA on CPU.
        # floor division then a correction (not |x| // |y|, which overflows for INT_MIN)
        safe_y = np.where(y == 0, 1, y).astype(x.dtype)
        q = np.floor_divide(x, safe_y)
        fix = (np.remainder(x, safe_y) != 0) & ((x < 0) != (safe_y < 0))
        q = (q + fix.astype(x.dtype)).astype(x.dtype)
        return np.where(y == 0, np.array(-1).astype(x.dtype), q)
    return np.true_divide(x, y)


div_p = standard_naryop("div", _errstate(_div_impl), _num)
register_lowering(div_p, ELEMENTWISE)


def _div_jvp(primals: list, tangents: list) -> tuple:
    x, y = primals
    tx, ty = tangents
    out = div(x, y)
    aval = core.get_aval(out)
    t: Any = None
    if type(tx) is not Zero:
        t = _bcast_to(div(tx, y), aval.shape)
    if type(ty) is not Zero:
        c = _bcast_to(neg(div(mul(ty, out), y)), aval.shape)
        t = c if t is None else add(t, c)
    return out, (Zero(ad.tangent_aval(aval)) if t is None else t)


def _div_transpose(ct: Any, x: Any, y: Any) -> list:
    if is_undefined_primal(y):
        raise ValueError("div is not linear in its divisor (internal error in transposition)")
    return [_unbroadcast(x.aval, div(ct, y)), None]


ad.primitive_jvps[div_p] = _div_jvp
ad.primitive_transposes[div_p] = _div_transpose


def _rem_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if _dkind(x.dtype) in "iu":
        safe_y = np.where(y == 0, 1, y)
        return np.where(y == 0, x, np.fmod(x, safe_y)).astype(x.dtype)
    return np.fmod(x, y)


rem_p = standard_naryop("rem", _errstate(_rem_impl), _num)
register_lowering(rem_p, ELEMENTWISE)
ad.defjvp(
    rem_p,
    lambda g, x, y: _bcast_to(g, _broadcast_shapes_rule("rem", [core.get_aval(x), core.get_aval(y)])),
    lambda g, x, y: mul(neg(g), mul(sign(div(x, y)), floor(abs(div(x, y))))),
)


def _pow_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if _dkind(y.dtype) in "iu":  # an integer exponent: the result keeps x's dtype (numpy would widen)
        return np.power(x, y.astype(x.dtype)).astype(x.dtype, copy=False)
    out = np.power(x, y)
    if _dkind(out.dtype) == "f" and np.size(y) == 1 and np.asarray(y).flat[0] == 0.5:
        # numpy's fast path for a single exponent 0.5 is sqrt(x): NaN at -inf and -0 at -0, where
        # C's pow (and XLA, and fjax's compiled code) give +inf and +0
        out = np.where(np.isneginf(x), np.inf, out) + out.dtype.type(0)
    return out


def _pow_abstract(x: Any, y: Any) -> ShapedArray:
    # as JAX: an inexact base, and an exponent of the base's dtype or of any integer dtype
    if _dkind(x.dtype) not in "fc" or _dkind(y.dtype) not in "iufc" or (_dkind(y.dtype) in "fc" and x.dtype != y.dtype):
        raise TypeError(
            "the first argument to pow must have an inexact dtype (float or complex), and the second "
            "argument must have an inexact or integer dtype, and two inexact dtypes must match, but got "
            f"{x.dtype.name} and {y.dtype.name}."
        )
    shape = _broadcast_shapes_rule("pow", [x, y])
    return ShapedArray(shape, x.dtype, x.weak_type and y.weak_type)


pow_p = Primitive("pow")
pow_p.def_impl(_errstate(_pow_impl))
pow_p.def_abstract_eval(_pow_abstract)
batching.defbroadcasting(pow_p)
register_lowering(pow_p, ELEMENTWISE)


def _pow_jvp_lhs(g: Any, x: Any, y: Any) -> Any:
    # y * x**(y-1), as JAX does for floating y. (Selecting 0 where y == 0 would zero the
    # derivative of this jacobian with respect to y there, so second derivatives came out wrong.)
    ydt = core.get_aval(y).dtype
    if _dkind(ydt) in "iu":  # no derivative in y to keep: 0 where y == 0 (0 * x**-1 is NaN at x = 0)
        xdt = core.get_aval(x).dtype
        jac = mul(convert_element_type(y, xdt), pow(x, sub(y, _const(y, 1))))
        jac = select(eq(_bcast_to(y, core.get_aval(jac).shape), _const(y, 0)), full_like(jac, 0), jac)
        return mul(g, jac)
    return mul(g, mul(y, pow(x, sub(y, _const(y, 1)))))


def _pow_jvp_rhs(g: Any, ans: Any, x: Any, y: Any) -> Any:
    xs = _bcast_to(x, core.get_aval(ans).shape)
    safe_x = select(eq(xs, _const(x, 0)), full_like(xs, 1), xs)
    return mul(g, mul(log(safe_x), ans))


def _pow_jvp(primals: list, tangents: list) -> tuple:
    x, y = primals
    tx, ty = tangents
    ans = pow(x, y)
    aval = core.get_aval(ans)
    t: Any = None
    if type(tx) is not Zero:
        t = _bcast_to(_pow_jvp_lhs(tx, x, y), aval.shape)
    if type(ty) is not Zero and _dkind(core.get_aval(y).dtype) not in "iu":
        c = _bcast_to(_pow_jvp_rhs(ty, ans, x, y), aval.shape)
        t = c if t is None else add(t, c)
    return ans, (Zero(ad.tangent_aval(aval)) if t is None else t)


ad.primitive_jvps[pow_p] = _pow_jvp


def _minmax_jvp(op: Callable, cmp: Callable) -> Callable:
    # ties split the tangent equally between the operands, as JAX does
    def jvp(primals: list, tangents: list) -> tuple:
        x, y = primals
        tx, ty = tangents
        ans = op(x, y)
        aval = core.get_aval(ans)
        half = _const(ans, 0.5)
        t: Any = None
        for g, a, b in ((tx, x, y), (ty, y, x)):
            if type(g) is Zero:
                continue
            win = select(cmp(a, b), full_like(ans, 1), select(eq(a, b), _bcast_to(half, aval.shape), full_like(ans, 0)))
            c = mul(_bcast_to(g, aval.shape), win)
            t = c if t is None else add(t, c)
        return ans, (Zero(ad.tangent_aval(aval)) if t is None else t)

    return jvp


max_p = standard_naryop("max", np.maximum, _any)
register_lowering(max_p, ELEMENTWISE)
min_p = standard_naryop("min", np.minimum, _any)
register_lowering(min_p, ELEMENTWISE)

atan2_p = standard_naryop("atan2", _errstate(np.arctan2), _float)
register_lowering(atan2_p, ELEMENTWISE)
ad.defjvp(
    atan2_p,
    lambda g, x, y: mul(g, div(y, add(mul(x, x), mul(y, y)))),
    lambda g, x, y: mul(g, div(neg(x), add(mul(x, x), mul(y, y)))),
)

nextafter_p = standard_naryop("nextafter", np.nextafter, _float)
ad.defzero(nextafter_p)

# comparisons
eq_p = standard_naryop("eq", np.equal, _any, out_bool=True)
register_lowering(eq_p, ELEMENTWISE)
ne_p = standard_naryop("ne", np.not_equal, _any, out_bool=True)
register_lowering(ne_p, ELEMENTWISE)
lt_p = standard_naryop("lt", np.less, _any, out_bool=True)
register_lowering(lt_p, ELEMENTWISE)
le_p = standard_naryop("le", np.less_equal, _any, out_bool=True)
register_lowering(le_p, ELEMENTWISE)
gt_p = standard_naryop("gt", np.greater, _any, out_bool=True)
register_lowering(gt_p, ELEMENTWISE)
ge_p = standard_naryop("ge", np.greater_equal, _any, out_bool=True)
register_lowering(ge_p, ELEMENTWISE)
for _p in (eq_p, ne_p, lt_p, le_p, gt_p, ge_p):
    ad.defzero(_p)

ad.primitive_jvps[max_p] = _minmax_jvp(lambda a, b: max(a, b), lambda a, b: gt(a, b))
ad.primitive_jvps[min_p] = _minmax_jvp(lambda a, b: min(a, b), lambda a, b: lt(a, b))

# logical / bitwise (on booleans these are logical)
and_p = standard_naryop("and", np.bitwise_and, _intb)
register_lowering(and_p, ELEMENTWISE)
or_p = standard_naryop("or", np.bitwise_or, _intb)
register_lowering(or_p, ELEMENTWISE)
xor_p = standard_naryop("xor", np.bitwise_xor, _intb)
register_lowering(xor_p, ELEMENTWISE)
not_p = standard_unop("not", np.invert, _intb)
register_lowering(not_p, ELEMENTWISE)
for _p in (and_p, or_p, xor_p, not_p):
    ad.defzero(_p)


def _shift_impl(kind: str) -> Callable:
    def impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        bits = x.dtype.itemsize * 8
        big = (y < 0) | (y >= bits)
        ys = np.where(big, 0, y).astype(x.dtype)
        if kind == "left":
            out = np.left_shift(x, ys)
            return np.where(big, np.zeros((), x.dtype), out).astype(x.dtype)
        if kind == "arith":
            # unsigned operands shift their bit pattern as signed (XLA): the top bit fills
            xs = x.view(np.dtype(f"int{bits}")) if _dkind(x.dtype) == "u" else x
            out = np.right_shift(xs, ys.astype(xs.dtype))
            fill = np.where(xs < 0, np.array(-1).astype(xs.dtype), np.zeros((), xs.dtype))
            return np.where(big, fill, out).astype(xs.dtype).view(x.dtype)
        udt = np.dtype(f"uint{bits}")
        out = np.right_shift(x.view(udt) if x.ndim else x.astype(udt), ys.astype(udt)).astype(x.dtype)
        return np.where(big, np.zeros((), x.dtype), out).astype(x.dtype)

    return impl


shift_left_p = standard_naryop("shift_left", _shift_impl("left"), _int)
register_lowering(shift_left_p, ELEMENTWISE)
shift_right_arithmetic_p = standard_naryop("shift_right_arithmetic", _shift_impl("arith"), _int)
register_lowering(shift_right_arithmetic_p, ELEMENTWISE)
shift_right_logical_p = standard_naryop("shift_right_logical", _shift_impl("logical"), _int)
register_lowering(shift_right_logical_p, ELEMENTWISE)
for _p in (shift_left_p, shift_right_arithmetic_p, shift_right_logical_p):
    ad.defzero(_p)


# ---------------------------------------------------------------------------------------------
# select_n and clamp


def _select_n_impl(which: np.ndarray, *cases: np.ndarray) -> np.ndarray:
    if len(cases) == 1:
        return np.broadcast_to(cases[0], np.broadcast_shapes(which.shape, cases[0].shape))
    if which.dtype == np.bool_:
        return np.where(which, cases[1], cases[0])
    return np.choose(which.astype(np.intp), np.broadcast_arrays(*cases, which)[: len(cases)])


def _select_n_abstract(which: Any, *cases: Any) -> ShapedArray:
    if not cases:
        raise TypeError("select_n requires at least one case")
    if which.dtype != np.bool_ and _dkind(which.dtype) not in "iu":
        raise TypeError(f"select_n: `which` must be boolean or integer, got {which.dtype.name}")
    if which.dtype == np.bool_ and len(cases) > 2:
        raise TypeError("select_n: a boolean `which` selects between at most two cases")
    dt = cases[0].dtype
    for c in cases:
        if c.dtype != dt:
            raise TypeError(f"select_n: cases must have the same dtype, got {[c.dtype.name for c in cases]}")
        if c.shape != cases[0].shape:
            raise TypeError(f"select_n: cases must have the same shape, got {[c.shape for c in cases]}")
    if which.shape and which.shape != cases[0].shape:
        raise TypeError(
            f"select_n: `which` must be scalar or have the shape of the cases, got {which.shape} and {cases[0].shape}"
        )
    return ShapedArray(cases[0].shape, dt, all(c.weak_type for c in cases))


select_n_p = Primitive("select_n")
select_n_p.def_impl(_select_n_impl)
select_n_p.def_abstract_eval(_select_n_abstract)
register_lowering(select_n_p, ELEMENTWISE)


def _select_n_jvp(primals: list, tangents: list) -> tuple:
    which, *cases = primals
    out = select_n(which, *cases)
    ts = tangents[1:]
    if all(type(t) is Zero for t in ts):
        return out, Zero(ad.tangent_aval(core.get_aval(out)))
    ts = [ad.instantiate_zeros(t) for t in ts]
    return out, select_n(which, *ts)


def _select_n_transpose(ct: Any, which: Any, *cases: Any) -> list:
    if is_undefined_primal(which):
        raise ValueError("select_n is not linear in its predicate")
    if type(ct) is Zero:
        return [None] + [None] * len(cases)
    zeros = full_like(ct, 0)
    outs: list = [None]
    for i, c in enumerate(cases):
        if is_undefined_primal(c):
            outs.append(select_n(which, *[ct if j == i else zeros for j in range(len(cases))]))
        else:
            outs.append(None)
    return outs


def _select_n_batch(vals: list, dims: list, axis_size: int) -> tuple:
    which, *cases = vals
    wd, *cds = dims
    case_aval = next(core.get_aval(c) for c, d in zip(cases, cds))
    # unbatched case shape
    cshape = core.get_aval(cases[0]).shape
    if cds[0] is not None:
        cshape = cshape[: cds[0]] + cshape[cds[0] + 1 :]
    del case_aval
    if all(d is None for d in cds) and wd is not None and core.get_aval(which).ndim == 1 and cshape:
        # batched scalar predicate over unbatched cases: broadcast the predicate
        which = broadcast_in_dim(which, (axis_size,) + cshape, (0,))
        cases = [batching.bdim_at_front(c, None, axis_size) for c in cases]
        return select_n(which, *cases), 0
    cases = [batching.bdim_at_front(c, d, axis_size) for c, d in zip(cases, cds)]
    if wd is None:
        if core.get_aval(which).ndim:
            which = batching.bdim_at_front(which, None, axis_size)
    else:
        which = batching.bdim_at_front(which, wd, axis_size)
        if core.get_aval(which).ndim == 1 and cshape:
            which = broadcast_in_dim(which, (axis_size,) + cshape, (0,))
    return select_n(which, *cases), 0


ad.primitive_jvps[select_n_p] = _select_n_jvp
ad.primitive_transposes[select_n_p] = _select_n_transpose
batching.primitive_batchers[select_n_p] = batching.wants_axis_size(_select_n_batch)


def _clamp_abstract(lo: Any, x: Any, hi: Any) -> ShapedArray:
    for name, a in (("min", lo), ("max", hi)):
        if a.dtype != x.dtype:
            raise TypeError(f"clamp: {name} has dtype {a.dtype.name} but operand has dtype {x.dtype.name}")
        if a.shape and a.shape != x.shape:
            raise TypeError(f"clamp: {name} shape {a.shape} must be () or match operand shape {x.shape}")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


clamp_p = Primitive("clamp")
clamp_p.def_impl(lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi))
clamp_p.def_abstract_eval(_clamp_abstract)
register_lowering(clamp_p, ELEMENTWISE)
ad.defjvp(
    clamp_p,
    lambda g, lo, x, hi: mul(
        _bcast_to(g, core.get_aval(x).shape),
        convert_element_type(bitwise_and(gt(lo, x), lt(lo, hi)), core.get_aval(x).dtype),
    ),
    lambda g, lo, x, hi: mul(g, convert_element_type(bitwise_and(gt(x, lo), lt(x, hi)), core.get_aval(x).dtype)),
    lambda g, lo, x, hi: mul(
        _bcast_to(g, core.get_aval(x).shape), convert_element_type(lt(hi, x), core.get_aval(x).dtype)
    ),
)


def _clamp_batch(vals: list, dims: list, axis_size: int) -> tuple:
    # the operand fixes the shape (not defbroadcasting: an unbatched rank-0 operand with a batched
    # bound would stay rank 0 there); bounds stay rank 0 only when unbatched
    lo, x, hi = vals
    dlo, dx, dhi = dims
    x = batching.bdim_at_front(x, dx, axis_size)
    shape = core.get_aval(x).shape

    def bound(b: Any, d: int | None) -> Any:
        if d is None:
            return b if core.get_aval(b).ndim == 0 else batching.bdim_at_front(b, None, axis_size)
        b = batching.moveaxis(b, d, 0)
        return b if core.get_aval(b).ndim == len(shape) else broadcast_in_dim(b, shape, (0,))

    return clamp(bound(lo, dlo), x, bound(hi, dhi)), 0


batching.primitive_batchers[clamp_p] = batching.wants_axis_size(_clamp_batch)

# ---------------------------------------------------------------------------------------------
# convert_element_type


def _convert_impl(x: np.ndarray, new_dtype: np.dtype, weak_type: bool = False) -> np.ndarray:
    if _dkind(x.dtype) == "c" and _dkind(new_dtype) != "c":
        x = x.real
    if new_dtype == np.bool_:
        return x != 0
    if _dkind(x.dtype) in "fc" and _dkind(new_dtype) in "iu":
        # float -> int: truncate, NaN -> 0, saturate at the limits (as XLA does)
        info = np.iinfo(new_dtype)
        with np.errstate(all="ignore"):
            y = np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0))
            y = np.clip(y, info.min, info.max)
        return y.astype(new_dtype)
    with np.errstate(all="ignore"):
        return x.astype(new_dtype)


def _convert_abstract(x: Any, new_dtype: np.dtype, weak_type: bool = False) -> ShapedArray:
    return ShapedArray(x.shape, new_dtype, weak_type)


convert_element_type_p = Primitive("convert_element_type")
convert_element_type_p.def_impl(_convert_impl)
convert_element_type_p.def_abstract_eval(_convert_abstract)
register_lowering(convert_element_type_p, ELEMENTWISE)
batching.defvectorized(convert_element_type_p)


def _convert_jvp(primals: list, tangents: list, new_dtype: np.dtype, weak_type: bool) -> tuple:
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if type(t) is Zero or _dkind(new_dtype) not in "fc" or _dkind(core.get_aval(x).dtype) not in "fc":
        return out, Zero(ad.tangent_aval(core.get_aval(out)))
    if _dkind(new_dtype) != "c" and _dkind(core.get_aval(x).dtype) == "c":
        return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_transpose(ct: Any, x: Any, new_dtype: np.dtype, weak_type: bool) -> list:
    old = x.aval
    if type(ct) is Zero:
        return [None]
    return [convert_element_type_p.bind(ct, new_dtype=old.dtype, weak_type=old.weak_type)]


ad.primitive_jvps[convert_element_type_p] = _convert_jvp
ad.primitive_transposes[convert_element_type_p] = _convert_transpose

# ---------------------------------------------------------------------------------------------
# structural: broadcast_in_dim, reshape, transpose, squeeze, rev


def _broadcast_in_dim_abstract(x: Any, shape: tuple, broadcast_dimensions: tuple) -> ShapedArray:
    if len(broadcast_dimensions) != x.ndim:
        raise TypeError(
            f"broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} must have one entry per operand "
            f"dimension (operand shape {x.shape})"
        )
    for i, d in enumerate(broadcast_dimensions):
        if not 0 <= d < len(shape) or (x.shape[i] != 1 and x.shape[i] != shape[d]):
            raise TypeError(
                f"broadcast_in_dim: operand shape {x.shape} cannot be broadcast to {shape} with "
                f"broadcast_dimensions={broadcast_dimensions}"
            )
    if list(broadcast_dimensions) != sorted(set(broadcast_dimensions)):
        raise TypeError(
            f"broadcast_in_dim: broadcast_dimensions must be strictly increasing, got {broadcast_dimensions}"
        )
    return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_impl(x: np.ndarray, shape: tuple, broadcast_dimensions: tuple) -> np.ndarray:
    inshape = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        inshape[d] = x.shape[i]
    return np.broadcast_to(x.reshape(inshape), shape)


broadcast_in_dim_p = Primitive("broadcast_in_dim")
broadcast_in_dim_p.def_impl(_broadcast_in_dim_impl)
broadcast_in_dim_p.def_abstract_eval(_broadcast_in_dim_abstract)
register_lowering(broadcast_in_dim_p, LAYOUT)


def _broadcast_in_dim_transpose(ct: Any, x: Any, shape: tuple, broadcast_dimensions: tuple) -> list:
    in_shape = x.aval.shape
    new_dims = tuple(i for i in range(len(shape)) if i not in broadcast_dimensions)
    expanded = tuple(d for i, d in enumerate(broadcast_dimensions) if in_shape[i] == 1 and shape[d] != 1)
    summed = reduce_sum(ct, tuple(sorted(new_dims + expanded)))
    if expanded:
        summed = reshape(summed, in_shape)
    return [summed]


def _broadcast_in_dim_batch(vals: list, dims: list, shape: tuple, broadcast_dimensions: tuple) -> tuple:
    (x,), (d,) = vals, dims
    size = core.get_aval(x).shape[d]
    # keep the batch axis where it is: it maps to output position new_d
    new_d = sum(1 for i in range(d) if True)  # operand dims before d map in order
    before = broadcast_dimensions[:d]
    out_pos = (before[-1] + 1) if before else 0
    new_d = out_pos
    new_shape = shape[:new_d] + (size,) + shape[new_d:]
    new_bdims = tuple(b if b < new_d else b + 1 for b in broadcast_dimensions)
    new_bdims = new_bdims[:d] + (new_d,) + new_bdims[d:]
    return broadcast_in_dim_p.bind(x, shape=new_shape, broadcast_dimensions=new_bdims), new_d


ad.deflinear(broadcast_in_dim_p, _broadcast_in_dim_transpose)
batching.primitive_batchers[broadcast_in_dim_p] = _broadcast_in_dim_batch


def _reshape_abstract(x: Any, new_sizes: tuple, dimensions: tuple | None = None) -> ShapedArray:
    if math.prod(new_sizes) != math.prod(x.shape) or any(s < 0 for s in new_sizes):
        raise TypeError(
            f"reshape total size must be unchanged, got new_sizes {new_sizes} (size {math.prod(new_sizes)}) for "
            f"shape {x.shape} (size {math.prod(x.shape)})."
        )
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


def _reshape_impl(x: np.ndarray, new_sizes: tuple, dimensions: tuple | None = None) -> np.ndarray:
    if dimensions is not None:
        x = np.transpose(x, dimensions)
    return np.reshape(x, new_sizes)


reshape_p = Primitive("reshape")
reshape_p.def_impl(_reshape_impl)
reshape_p.def_abstract_eval(_reshape_abstract)
register_lowering(reshape_p, LAYOUT)


def _reshape_transpose(ct: Any, x: Any, new_sizes: tuple, dimensions: tuple | None) -> list:
    if dimensions is not None:
        raise NotImplementedError("transpose of reshape with dimensions")
    return [reshape(ct, x.aval.shape)]


def _reshape_batch(vals: list, dims: list, new_sizes: tuple, dimensions: tuple | None) -> tuple:
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0)
    size = core.get_aval(x).shape[0]
    if dimensions is not None:  # the per-example transpose, with the batch axis kept in front
        x = transpose(x, (0,) + tuple(i + 1 for i in dimensions))
    return reshape_p.bind(x, new_sizes=(size,) + tuple(new_sizes), dimensions=None), 0


ad.deflinear(reshape_p, _reshape_transpose)
batching.primitive_batchers[reshape_p] = _reshape_batch


def _transpose_abstract(x: Any, permutation: tuple) -> ShapedArray:
    if sorted(permutation) != list(range(x.ndim)):
        raise TypeError(
            f"transpose permutation isn't a permutation of operand dimensions, got "
            f"permutation {permutation} for operand shape {x.shape}."
        )
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


transpose_p = Primitive("transpose")
transpose_p.def_impl(lambda x, permutation: np.transpose(x, permutation))
transpose_p.def_abstract_eval(_transpose_abstract)
register_lowering(transpose_p, LAYOUT)


def _transpose_transpose(ct: Any, x: Any, permutation: tuple) -> list:
    return [transpose(ct, tuple(np.argsort(permutation).tolist()))]


def _transpose_batch(vals: list, dims: list, permutation: tuple) -> tuple:
    (x,), (d,) = vals, dims
    perm = [p if p < d else p + 1 for p in permutation]
    perm.insert(d, d)
    return transpose_p.bind(x, permutation=tuple(perm)), d


ad.deflinear(transpose_p, _transpose_transpose)
batching.primitive_batchers[transpose_p] = _transpose_batch


def _squeeze_abstract(x: Any, dimensions: tuple) -> ShapedArray:
    for d in dimensions:
        if not 0 <= d < x.ndim or x.shape[d] != 1:
            raise TypeError(f"squeeze: cannot squeeze dimension {d} of shape {x.shape} (it must have size 1)")
    return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i not in dimensions), x.dtype, x.weak_type)


squeeze_p = Primitive("squeeze")
squeeze_p.def_impl(lambda x, dimensions: np.squeeze(x, dimensions) if dimensions else x)
squeeze_p.def_abstract_eval(_squeeze_abstract)
register_lowering(squeeze_p, LAYOUT)


def _squeeze_batch(vals: list, dims: list, dimensions: tuple) -> tuple:
    (x,), (d,) = vals, dims
    new_dims = tuple(a if a < d else a + 1 for a in dimensions)
    out_d = d - sum(1 for a in dimensions if a < d)
    return squeeze_p.bind(x, dimensions=new_dims), out_d


ad.deflinear(squeeze_p, lambda ct, x, dimensions: [reshape(ct, x.aval.shape)])
batching.primitive_batchers[squeeze_p] = _squeeze_batch


def _rev_abstract(x: Any, dimensions: tuple) -> ShapedArray:
    for d in dimensions:
        if not 0 <= d < x.ndim:
            raise TypeError(f"rev: dimension {d} out of range for shape {x.shape}")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


rev_p = Primitive("rev")
rev_p.def_impl(lambda x, dimensions: np.flip(x, dimensions) if dimensions else x)
rev_p.def_abstract_eval(_rev_abstract)
register_lowering(rev_p, INDEXING)
ad.deflinear(rev_p, lambda ct, x, dimensions: [rev(ct, dimensions)])
batching.primitive_batchers[rev_p] = lambda vals, dims, dimensions: (
    rev_p.bind(vals[0], dimensions=tuple(a if a < dims[0] else a + 1 for a in dimensions)),
    dims[0],
)

# ---------------------------------------------------------------------------------------------
# iota


def _iota_abstract(*, dtype: np.dtype, shape: tuple, dimension: int) -> ShapedArray:
    if not 0 <= dimension < len(shape):
        raise TypeError(f"iota: dimension {dimension} out of range for shape {shape}")
    return ShapedArray(shape, dtype, False)


def _iota_impl(*, dtype: np.dtype, shape: tuple, dimension: int) -> np.ndarray:
    r = np.arange(shape[dimension], dtype=dtype)
    s = [1] * len(shape)
    s[dimension] = shape[dimension]
    return np.broadcast_to(r.reshape(s), shape)


iota_p = Primitive("iota")
iota_p.def_impl(_iota_impl)
iota_p.def_abstract_eval(_iota_abstract)
register_lowering(iota_p, ITERATION)
ad.defzero(iota_p)

# ---------------------------------------------------------------------------------------------
# reductions and dot_general: fjax/lax/lax_reductions.py
from fjax.lax.lax_reductions import *  # noqa: E402,F403
from fjax.lax.lax_reductions import (  # noqa: E402,F401
    _WIDER_ACC,
    _arg_abstract,
    _argmax_impl,
    _argmin_impl,
    _canon_dnums,
    _dot_general_abstract,
    _dot_general_batch,
    _dot_general_impl,
    _dot_general_lowering_check,
    _dot_plan,
    _dot_transpose_lhs,
    _dot_transpose_rhs,
    _empty_reduce,
    _max_ident,
    _min_ident,
    _ranges_like,
    _reduce_abstract,
    _reduce_chooser_jvp,
    _reduce_prod_jvp,
    _reduce_sum_impl,
    _reduce_sum_transpose,
    _reducer,
    _remaining,
)

# ---------------------------------------------------------------------------------------------
# stop_gradient

stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.def_impl(lambda x: x)
stop_gradient_p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype, x.weak_type))
register_lowering(stop_gradient_p, ELEMENTWISE)
ad.defzero(stop_gradient_p)
batching.defvectorized(stop_gradient_p)

# ---------------------------------------------------------------------------------------------
# public wrappers (lax API): fjax/lax/lax_wrappers.py

from fjax.lax.lax_wrappers import *  # noqa: E402,F403 - the public wrappers (split for size)
from fjax.lax.lax_wrappers import (  # noqa: E402
    _add_any,
    _broadcast_new_axis,
    _moveaxis,
    _zeros_of_aval,
)


# lax_reductions and lax_wrappers are parts of this module split off for size: each sees every
# name of it (their rules call wrappers and each other's primitives at call time)
def _share_namespace() -> None:
    from fjax.lax import lax_reductions, lax_wrappers  # noqa: PLC0415

    g = globals()
    for part in (lax_reductions, lax_wrappers):
        for k, v in vars(part).items():  # private helpers too (other modules import them from here)
            if not (k.startswith("__") and k.endswith("__")):
                g.setdefault(k, v)
    for part in (lax_reductions, lax_wrappers):
        for k, v in list(g.items()):
            if not (k.startswith("__") and k.endswith("__")):
                part.__dict__.setdefault(k, v)


_share_namespace()

# hooks the interpreters use for the few array ops their generic code needs
ad._add_any = _add_any
ad._zeros_like = _zeros_of_aval
batching._moveaxis = _moveaxis
batching._broadcast = _broadcast_new_axis
batching._broadcast_in_dim = broadcast_in_dim
