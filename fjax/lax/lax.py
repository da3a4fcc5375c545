"""Elementwise, structural and reduction primitives, and dot_general.

One block per primitive: its definition, then its rules (jvp, transpose, batching) right under
it. Eager semantics are numpy ``impl`` functions; rule families come from the interpreters'
helpers (``ad.defjvp``, ``ad.deflinear``, ``batching.defvectorized``, ...).
"""

from __future__ import annotations

import functools
import math
from enum import IntEnum
from typing import Any, Callable, Sequence

import numpy as np

from fjax import _blas, core, dtypes
from fjax.backends.registry import ELEMENTWISE, INDEXING, ITERATION, LAYOUT, LIBRARY, REDUCTION, register_lowering
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
    out = np.power(x, y)
    if _dkind(out.dtype) == "f" and np.size(y) == 1 and np.asarray(y).flat[0] == 0.5:
        # numpy's fast path for a single exponent 0.5 is sqrt(x): NaN at -inf and -0 at -0, where
        # C's pow (and XLA, and fjax's compiled code) give +inf and +0
        out = np.where(np.isneginf(x), np.inf, out) + out.dtype.type(0)
    return out


pow_p = standard_naryop("pow", _errstate(_pow_impl), _fc)
register_lowering(pow_p, ELEMENTWISE)


def _pow_jvp_lhs(g: Any, x: Any, y: Any) -> Any:
    # y * x**(y-1), as JAX does for floating y. (Selecting 0 where y == 0 would zero the
    # derivative of this jacobian with respect to y there, so second derivatives came out wrong.)
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
    if type(ty) is not Zero:
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
# reductions


def _reduce_abstract(name: str, kinds: str, keep_weak: bool = True) -> Callable:
    def rule(x: Any, *, axes: tuple, **params: Any) -> ShapedArray:
        _check_kind(name, x, kinds)
        for a in axes:
            if not 0 <= a < x.ndim:
                raise TypeError(f"{name}: axis {a} is out of bounds for an array of shape {x.shape}")
        if len(set(axes)) != len(axes):
            raise TypeError(f"{name}: duplicate axes {axes}")
        shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
        return ShapedArray(shape, x.dtype, x.weak_type and keep_weak)

    return rule


def _reducer(name: str, impl: Callable, kinds: str) -> Primitive:
    p = Primitive(name)
    p.def_impl(impl)
    p.def_abstract_eval(_reduce_abstract(name, kinds))
    batching.defreducer(p)
    return p


_WIDER_ACC = {np.dtype(np.float16): np.float64, np.dtype(np.float32): np.float64, np.dtype(np.complex64): np.complex128}


def _reduce_sum_impl(x: np.ndarray, axes: tuple, out_sharding: Any = None) -> np.ndarray:
    if not axes:
        return x
    if x.dtype == dtypes.bfloat16:  # numpy would accumulate in bfloat16 (8 bits): XLA adds in float32
        return np.sum(x, axis=axes, dtype=np.float32).astype(x.dtype)
    acc = _WIDER_ACC.get(x.dtype)
    if acc is not None and tuple(sorted(axes)) != tuple(range(x.ndim - len(axes), x.ndim)):
        # numpy sums non-trailing axes by plain accumulation (error ~ n * eps), not pairwise as
        # it does along contiguous ones; accumulate in double so eager matches jit's accuracy
        return np.sum(x, axis=axes, dtype=acc).astype(x.dtype)
    return np.sum(x, axis=axes, dtype=x.dtype)


reduce_sum_p = _reducer("reduce_sum", _reduce_sum_impl, _num)
register_lowering(reduce_sum_p, REDUCTION, monoid="sum")


def _reduce_sum_transpose(ct: Any, x: Any, axes: tuple, out_sharding: Any = None) -> list:
    shape = x.aval.shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return [broadcast_in_dim(ct, shape, kept)]


ad.deflinear(reduce_sum_p, _reduce_sum_transpose)


def _empty_reduce(fn: Callable, ident_fn: Callable) -> Callable:
    def impl(x: np.ndarray, axes: tuple, **params: Any) -> np.ndarray:
        if not axes:
            return x
        if x.size == 0:
            shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
            return np.full(shape, ident_fn(x.dtype), x.dtype)
        return fn(x, axis=axes)

    return impl


def _max_ident(dt: np.dtype) -> Any:
    if dt == np.bool_:
        return False
    return -np.inf if _dkind(dt) == "f" else np.iinfo(dt).min


def _min_ident(dt: np.dtype) -> Any:
    if dt == np.bool_:
        return True
    return np.inf if _dkind(dt) == "f" else np.iinfo(dt).max


reduce_max_p = _reducer("reduce_max", _empty_reduce(np.max, _max_ident), _any)
register_lowering(reduce_max_p, REDUCTION, monoid="max")
reduce_min_p = _reducer("reduce_min", _empty_reduce(np.min, _min_ident), _any)
register_lowering(reduce_min_p, REDUCTION, monoid="min")


def _reduce_chooser_jvp(prim: Primitive) -> Callable:
    def jvp(primals: list, tangents: list, axes: tuple) -> tuple:
        (x,), (g,) = primals, tangents
        ans = prim.bind(x, axes=axes)
        if type(g) is Zero:
            return ans, Zero(ad.tangent_aval(core.get_aval(ans)))
        shape = core.get_aval(x).shape
        kept = tuple(i for i in range(len(shape)) if i not in axes)
        loc = convert_element_type(eq(x, broadcast_in_dim(ans, shape, kept)), core.get_aval(g).dtype)
        counts = reduce_sum(loc, axes)
        return ans, div(reduce_sum(mul(g, loc), axes), counts)

    return jvp


ad.primitive_jvps[reduce_max_p] = _reduce_chooser_jvp(reduce_max_p)
ad.primitive_jvps[reduce_min_p] = _reduce_chooser_jvp(reduce_min_p)

reduce_prod_p = _reducer("reduce_prod", lambda x, axes: np.prod(x, axis=axes, dtype=x.dtype) if axes else x, _num)
register_lowering(reduce_prod_p, REDUCTION, monoid="prod")


def _reduce_prod_jvp(primals: list, tangents: list, axes: tuple) -> tuple:
    (x,), (g,) = primals, tangents
    ans = reduce_prod(x, axes)
    if type(g) is Zero:
        return ans, Zero(ad.tangent_aval(core.get_aval(ans)))
    # d prod = sum_i g_i * prod_{j != i} x_j, with the exclusive products from a forward and a
    # reverse cumulative product, so zeros in x are handled exactly
    from fjax.lax.other import cumprod  # noqa: PLC0415 (sibling module, defined later)

    shape = core.get_aval(x).shape
    kept = [i for i in range(len(shape)) if i not in axes]
    perm = tuple(kept + list(axes))
    n = math.prod(shape[a] for a in axes)
    kept_shape = tuple(shape[i] for i in kept)
    xt = reshape(transpose(x, perm), kept_shape + (n,))
    gt_ = reshape(transpose(g, perm), kept_shape + (n,))
    last = len(kept_shape)
    ones = full_like(slice_in_dim(xt, 0, 1, axis=last), 1) if n else xt
    if n == 0:
        return ans, reduce_sum(gt_, (last,))
    left = concatenate([ones, slice_in_dim(cumprod(xt, axis=last), 0, n - 1, axis=last)], last)
    right = concatenate([slice_in_dim(cumprod(xt, axis=last, reverse=True), 1, n, axis=last), ones], last)
    return ans, reduce_sum(mul(gt_, mul(left, right)), (last,))


ad.primitive_jvps[reduce_prod_p] = _reduce_prod_jvp

reduce_and_p = _reducer("reduce_and", _empty_reduce(np.all, lambda dt: True), "b")
register_lowering(reduce_and_p, REDUCTION, monoid="and")
reduce_or_p = _reducer("reduce_or", _empty_reduce(np.any, lambda dt: False), "b")
register_lowering(reduce_or_p, REDUCTION, monoid="or")
reduce_xor_p = _reducer("reduce_xor", lambda x, axes: np.logical_xor.reduce(x, axis=axes) if axes else x, "b")
for _p in (reduce_and_p, reduce_or_p, reduce_xor_p):
    ad.defzero(_p)


def _arg_abstract(name: str) -> Callable:
    def rule(x: Any, *, axes: tuple, index_dtype: np.dtype) -> ShapedArray:
        _check_kind(name, x, _any)
        if len(axes) != 1 or not 0 <= axes[0] < x.ndim:
            raise TypeError(f"{name}: axes must be a single in-range axis, got {axes} for shape {x.shape}")
        if x.shape[axes[0]] == 0:
            raise ValueError(f"{name}: attempt to get {name} of an empty sequence (axis {axes[0]} of shape {x.shape})")
        if _dkind(np.dtype(index_dtype)) not in "iu":
            raise TypeError(f"{name}: index_dtype must be an integer type, got {index_dtype}")
        return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i != axes[0]), index_dtype, False)

    return rule


def _argmax_impl(x: np.ndarray, axes: tuple, index_dtype: np.dtype) -> np.ndarray:
    # NaN counts as the maximum (first NaN wins), as JAX
    if _dkind(x.dtype) == "f":
        isn = np.isnan(x)
        if isn.any():
            r = np.argmax(np.where(isn, np.inf, x), axis=axes[0])
            anynan = isn.any(axis=axes[0])
            return np.where(anynan, np.argmax(isn, axis=axes[0]), r).astype(index_dtype)
    return np.argmax(x, axis=axes[0]).astype(index_dtype)


def _argmin_impl(x: np.ndarray, axes: tuple, index_dtype: np.dtype) -> np.ndarray:
    if _dkind(x.dtype) == "f":
        isn = np.isnan(x)
        if isn.any():
            r = np.argmin(np.where(isn, -np.inf, x), axis=axes[0])
            anynan = isn.any(axis=axes[0])
            return np.where(anynan, np.argmax(isn, axis=axes[0]), r).astype(index_dtype)
    return np.argmin(x, axis=axes[0]).astype(index_dtype)


argmax_p = _reducer("argmax", _argmax_impl, _any)
argmax_p.def_abstract_eval(_arg_abstract("argmax"))
argmin_p = _reducer("argmin", _argmin_impl, _any)
argmin_p.def_abstract_eval(_arg_abstract("argmin"))
ad.defzero(argmax_p)
ad.defzero(argmin_p)

# ---------------------------------------------------------------------------------------------
# dot_general


def _canon_dnums(dimension_numbers: Any) -> tuple:
    (lc, rc), (lb, rb) = dimension_numbers
    return (
        (tuple(int(i) for i in lc), tuple(int(i) for i in rc)),
        (tuple(int(i) for i in lb), tuple(int(i) for i in rb)),
    )


def _dot_general_abstract(
    x: Any, y: Any, *, dimension_numbers: tuple, precision: Any = None, preferred_element_type: Any = None
) -> ShapedArray:
    (lc, rc), (lb, rb) = dimension_numbers
    _check_kind("dot_general", x, _num + "b")
    if preferred_element_type is None and x.dtype != y.dtype:
        raise TypeError(
            f"dot_general requires operands of the same dtype, got {x.dtype.name} and {y.dtype.name} "
            "(jnp.dot/jnp.matmul promote types first)"
        )
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError(f"dot_general: contracting/batch dims must come in pairs, got {dimension_numbers}")
    for a, b in list(zip(lc, rc)) + list(zip(lb, rb)):
        if not (0 <= a < x.ndim and 0 <= b < y.ndim) or x.shape[a] != y.shape[b]:
            raise TypeError(
                f"dot_general requires contracting and batch dimensions to have the same size, got "
                f"lhs shape {x.shape}, rhs shape {y.shape}, dimension_numbers {dimension_numbers}"
            )
    if len(set(lc + lb)) != len(lc + lb) or len(set(rc + rb)) != len(rc + rb):
        raise TypeError(f"dot_general: repeated dimensions in {dimension_numbers}")
    batch = tuple(x.shape[i] for i in lb)
    lfree = tuple(s for i, s in enumerate(x.shape) if i not in lc and i not in lb)
    rfree = tuple(s for i, s in enumerate(y.shape) if i not in rc and i not in rb)
    dt = np.dtype(preferred_element_type) if preferred_element_type is not None else x.dtype
    return ShapedArray(batch + lfree + rfree, dt, x.weak_type and y.weak_type)


@functools.lru_cache(maxsize=2048)
def _dot_plan(xshape: tuple, yshape: tuple, dimension_numbers: tuple) -> tuple:
    """Transposes and 3-D shapes that turn a dot_general into one (batched) matmul."""
    (lc, rc), (lb, rb) = dimension_numbers
    xnd, ynd = len(xshape), len(yshape)
    lfree = [i for i in range(xnd) if i not in lc and i not in lb]
    rfree = [i for i in range(ynd) if i not in rc and i not in rb]
    xperm = tuple(list(lb) + lfree + list(lc))
    yperm = tuple(list(rb) + list(rc) + rfree)
    nb = math.prod(xshape[i] for i in lb)
    nk = math.prod(xshape[i] for i in lc)
    nl = math.prod(xshape[i] for i in lfree)
    nr = math.prod(yshape[i] for i in rfree)
    out_shape = tuple(xshape[i] for i in lb) + tuple(xshape[i] for i in lfree) + tuple(yshape[i] for i in rfree)
    xperm = None if xperm == tuple(range(xnd)) else xperm
    yperm = None if yperm == tuple(range(ynd)) else yperm
    if nb == 1:
        return xperm, yperm, (nl, nk), (nk, nr), out_shape
    return xperm, yperm, (nb, nl, nk), (nb, nk, nr), out_shape


def _dot_general_impl(
    x: np.ndarray, y: np.ndarray, *, dimension_numbers: tuple, precision: Any = None, preferred_element_type: Any = None
) -> np.ndarray:
    dt = x.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    if dt != x.dtype:
        x = x.astype(dt)
    if dt != y.dtype:
        y = y.astype(dt)
    xperm, yperm, xs3, ys3, out_shape = _dot_plan(x.shape, y.shape, dimension_numbers)
    if xperm is not None:
        x = x.transpose(xperm)
    if yperm is not None:
        y = y.transpose(yperm)
    out = _blas.matmul(x.reshape(xs3), y.reshape(ys3), math.prod(xs3) * ys3[-1])
    return out.reshape(out_shape)


dot_general_p = Primitive("dot_general")
dot_general_p.def_impl(_dot_general_impl)
dot_general_p.def_abstract_eval(_dot_general_abstract)


def _dot_general_lowering_check(eqn: core.JaxprEqn) -> str | None:
    dt = eqn.outvars[0].aval.dtype
    if _dkind(dt) != "f" or any(v.aval.dtype != dt for v in eqn.invars):
        return f"dot_general on {[v.aval.dtype.name for v in eqn.invars]} -> {dt.name} (BLAS is float only)"
    return None


register_lowering(dot_general_p, LIBRARY, check=_dot_general_lowering_check)


def _ranges_like(*xs: Sequence) -> list[list[int]]:
    start, out = 0, []
    for x in xs:
        out.append(list(range(start, start + len(x))))
        start += len(x)
    return out


def _remaining(n: int, *removed: Sequence[int]) -> list[int]:
    rm = set(i for r in removed for i in r)
    return [i for i in range(n) if i not in rm]


def _dot_transpose_lhs(
    ct: Any,
    x: Any,
    y: Any,
    *,
    dimension_numbers: tuple,
    precision: Any = None,
    preferred_element_type: Any = None,
    swap_ans: bool = False,
) -> Any:
    # ct has dims (batch, x_free, y_free) (or (batch, y_free, x_free) when swapped); contract it
    # with y over y's free dims to get (batch, x_free, y_contract-ordered) then permute into x
    (xc, yc), (xb, yb) = dimension_numbers
    x_aval = x.aval if is_undefined_primal(x) else core.get_aval(x)
    y_aval = y.aval if is_undefined_primal(y) else core.get_aval(y)
    x_kept = _remaining(x_aval.ndim, xc, xb)
    y_kept = _remaining(y_aval.ndim, yc, yb)
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(xb, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(xb, x_kept, y_kept)
    dims = ((tuple(ans_y), tuple(y_kept)), (tuple(ans_batch), tuple(yb)))
    xc_by_y = [xc[i] for i in np.argsort(yc)]
    out_axes = np.argsort(list(xb) + x_kept + xc_by_y)
    res = dot_general(ct, y, dims, preferred_element_type=preferred_element_type)
    res = transpose(res, tuple(int(i) for i in out_axes))
    if core.get_aval(res).dtype != x_aval.dtype:
        res = convert_element_type(res, x_aval.dtype)
    return res


def _dot_transpose_rhs(
    ct: Any, x: Any, y: Any, *, dimension_numbers: tuple, precision: Any = None, preferred_element_type: Any = None
) -> Any:
    (xc, yc), (xb, yb) = dimension_numbers
    swapped = ((yc, xc), (yb, xb))
    return _dot_transpose_lhs(
        ct,
        y,
        x,
        dimension_numbers=swapped,
        precision=precision,
        preferred_element_type=preferred_element_type,
        swap_ans=True,
    )


ad.defbilinear(dot_general_p, _dot_transpose_lhs, _dot_transpose_rhs)


def _dot_general_batch(
    vals: list, dims: list, *, dimension_numbers: tuple, precision: Any = None, preferred_element_type: Any = None
) -> tuple:
    x, y = vals
    dx, dy = dims
    (xc, yc), (xb, yb) = dimension_numbers
    if dx is not None and dy is not None:
        # both batched: the vmapped axis becomes a new (leading) batch dimension
        x = batching.moveaxis(x, dx, 0)
        y = batching.moveaxis(y, dy, 0)
        sh = lambda t: tuple(i + 1 for i in t)  # noqa: E731
        dn = ((sh(xc), sh(yc)), ((0,) + sh(xb), (0,) + sh(yb)))
        return dot_general(x, y, dn, precision, preferred_element_type), 0
    if dx is not None:
        # free dim of x: keep it in place; it lands among x's free dims in the output
        sh = lambda t: tuple(i + 1 if i >= dx else i for i in t)  # noqa: E731
        dn = ((sh(xc), yc), (sh(xb), yb))
        x_ndim = core.get_aval(x).ndim
        x_free = _remaining(x_ndim, dn[0][0], dn[1][0])
        out_d = len(xb) + x_free.index(dx)
        return dot_general(x, y, dn, precision, preferred_element_type), out_d
    sh = lambda t: tuple(i + 1 if i >= dy else i for i in t)  # noqa: E731
    dn = ((xc, sh(yc)), (xb, sh(yb)))
    x_ndim = core.get_aval(x).ndim
    y_ndim = core.get_aval(y).ndim
    y_free = _remaining(y_ndim, dn[0][1], dn[1][1])
    x_free = _remaining(x_ndim, xc, xb)
    out_d = len(xb) + len(x_free) + y_free.index(dy)
    return dot_general(x, y, dn, precision, preferred_element_type), out_d


batching.primitive_batchers[dot_general_p] = _dot_general_batch

# ---------------------------------------------------------------------------------------------
# stop_gradient

stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.def_impl(lambda x: x)
stop_gradient_p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype, x.weak_type))
register_lowering(stop_gradient_p, ELEMENTWISE)
ad.defzero(stop_gradient_p)
batching.defvectorized(stop_gradient_p)

# ---------------------------------------------------------------------------------------------
# public wrappers (lax API)


def neg(x: Any) -> Any:
    """Elementwise negation: -x."""
    return _bind(neg_p, x)


def sign(x: Any) -> Any:
    """Elementwise sign."""
    return _bind(sign_p, x)


def floor(x: Any) -> Any:
    """Elementwise floor."""
    return _bind(floor_p, x)


def ceil(x: Any) -> Any:
    """Elementwise ceiling."""
    return _bind(ceil_p, x)


def round(x: Any, rounding_method: int = RoundingMethod.AWAY_FROM_ZERO) -> Any:  # noqa: A001
    """Elementwise round (halfway cases away from zero by default, as JAX's lax.round)."""
    return _bind(round_p, x, rounding_method=int(rounding_method))


def is_finite(x: Any) -> Any:
    """Elementwise: is x neither infinite nor NaN."""
    return _bind(is_finite_p, x)


def abs(x: Any) -> Any:  # noqa: A001
    """Elementwise absolute value."""
    return _bind(abs_p, x)


def _mk_unary(prim: Primitive, doc: str) -> Callable:
    def f(x: Any) -> Any:
        return _bind(prim, x)

    f.__name__ = prim.name
    f.__doc__ = doc
    return f


exp = _mk_unary(exp_p, "Elementwise exponential e**x.")
exp2 = _mk_unary(exp2_p, "Elementwise base-2 exponential 2**x.")
log = _mk_unary(log_p, "Elementwise natural logarithm.")
log1p = _mk_unary(log1p_p, "Elementwise log(1 + x), accurate near 0.")
expm1 = _mk_unary(expm1_p, "Elementwise e**x - 1, accurate near 0.")
sqrt = _mk_unary(sqrt_p, "Elementwise square root.")
rsqrt = _mk_unary(rsqrt_p, "Elementwise reciprocal square root.")
cbrt = _mk_unary(cbrt_p, "Elementwise cube root.")
sin = _mk_unary(sin_p, "Elementwise sine.")
cos = _mk_unary(cos_p, "Elementwise cosine.")
tan = _mk_unary(tan_p, "Elementwise tangent.")
asin = _mk_unary(asin_p, "Elementwise arcsine.")
acos = _mk_unary(acos_p, "Elementwise arccosine.")
atan = _mk_unary(atan_p, "Elementwise arctangent.")
sinh = _mk_unary(sinh_p, "Elementwise hyperbolic sine.")
cosh = _mk_unary(cosh_p, "Elementwise hyperbolic cosine.")
tanh = _mk_unary(tanh_p, "Elementwise hyperbolic tangent.")
asinh = _mk_unary(asinh_p, "Elementwise inverse hyperbolic sine.")
acosh = _mk_unary(acosh_p, "Elementwise inverse hyperbolic cosine.")
atanh = _mk_unary(atanh_p, "Elementwise inverse hyperbolic tangent.")
logistic = _mk_unary(logistic_p, "Elementwise logistic sigmoid 1 / (1 + e**-x).")
erf = _mk_unary(erf_p, "Elementwise error function.")
erfc = _mk_unary(erfc_p, "Elementwise complementary error function.")
erf_inv = _mk_unary(erf_inv_p, "Elementwise inverse error function.")
lgamma = _mk_unary(lgamma_p, "Elementwise log of the absolute value of the gamma function.")
digamma = _mk_unary(digamma_p, "Elementwise digamma (derivative of lgamma).")


def polygamma(m: Any, x: Any) -> Any:
    """Elementwise polygamma function psi^(m)(x), m a non-negative integer (as a float array)."""
    return _bind(polygamma_p, m, x)


square = _mk_unary(square_p, "Elementwise square.")
real = _mk_unary(real_p, "Real part of a complex array.")
imag = _mk_unary(imag_p, "Imaginary part of a complex array.")
conj = _mk_unary(conj_p, "Complex conjugate.")
bitwise_not = _mk_unary(not_p, "Elementwise NOT (logical for booleans).")
stop_gradient_raw = _mk_unary(stop_gradient_p, "Identity whose derivative is zero.")


def integer_pow(x: Any, y: int) -> Any:
    """Elementwise x**y for a static Python integer y."""
    return _bind(integer_pow_p, x, y=int(y))


def _mk_binary(prim: Primitive, doc: str) -> Callable:
    def f(x: Any, y: Any) -> Any:
        return _bind(prim, x, y)

    f.__name__ = prim.name
    f.__doc__ = doc
    return f


add = _mk_binary(add_p, "Elementwise addition x + y.")
sub = _mk_binary(sub_p, "Elementwise subtraction x - y.")
mul = _mk_binary(mul_p, "Elementwise multiplication x * y.")
div = _mk_binary(div_p, "Elementwise division x / y (integer division rounds toward zero).")
rem = _mk_binary(rem_p, "Elementwise remainder with the sign of the dividend (C fmod).")
pow = _mk_binary(pow_p, "Elementwise power x**y.")  # noqa: A001
max = _mk_binary(max_p, "Elementwise maximum (NaN-propagating).")  # noqa: A001
min = _mk_binary(min_p, "Elementwise minimum (NaN-propagating).")  # noqa: A001
atan2 = _mk_binary(atan2_p, "Elementwise arctangent of x / y, in the right quadrant.")
nextafter = _mk_binary(nextafter_p, "Next representable value after x in the direction of y.")
eq = _mk_binary(eq_p, "Elementwise x == y.")
ne = _mk_binary(ne_p, "Elementwise x != y.")
lt = _mk_binary(lt_p, "Elementwise x < y.")
le = _mk_binary(le_p, "Elementwise x <= y.")
gt = _mk_binary(gt_p, "Elementwise x > y.")
ge = _mk_binary(ge_p, "Elementwise x >= y.")
bitwise_and = _mk_binary(and_p, "Elementwise AND (logical for booleans).")
bitwise_or = _mk_binary(or_p, "Elementwise OR (logical for booleans).")
bitwise_xor = _mk_binary(xor_p, "Elementwise XOR (logical for booleans).")
shift_left = _mk_binary(shift_left_p, "Elementwise x << y.")
shift_right_arithmetic = _mk_binary(shift_right_arithmetic_p, "Elementwise arithmetic x >> y.")
shift_right_logical = _mk_binary(shift_right_logical_p, "Elementwise logical x >> y.")


def select_n(which: Any, *cases: Any) -> Any:
    """Pick, elementwise, ``cases[which]`` (``which`` boolean for two cases, or integer)."""
    return core.bind(select_n_p, (which,) + cases, {})


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """Elementwise ``on_true if pred else on_false``."""
    return core.bind(select_n_p, (pred, on_false, on_true), {})


def clamp(min: Any, x: Any, max: Any) -> Any:  # noqa: A002
    """Elementwise min(max(x, min), max)."""
    return _bind(clamp_p, min, x, max)


def convert_element_type(operand: Any, new_dtype: Any) -> Any:
    """Cast ``operand`` to ``new_dtype`` (canonicalized; the result is not weakly typed)."""
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    if not isinstance(operand, core.Tracer) and not isinstance(operand, core.Array):
        operand = core.to_array(operand, "convert_element_type")
    aval = core.get_aval(operand)
    if aval.dtype == new_dtype and not aval.weak_type:
        return operand
    return _bind(convert_element_type_p, operand, new_dtype=new_dtype, weak_type=False)


def _convert_element_type_weak(operand: Any, new_dtype: Any, weak_type: bool) -> Any:
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    aval = core.get_aval(operand)
    if aval.dtype == new_dtype and aval.weak_type == weak_type:
        return operand
    return _bind(convert_element_type_p, operand, new_dtype=new_dtype, weak_type=weak_type)


def broadcast_in_dim(operand: Any, shape: Sequence[int], broadcast_dimensions: Sequence[int]) -> Any:
    """Broadcast ``operand`` to ``shape``, operand dim i going to ``broadcast_dimensions[i]``."""
    shape = tuple(int(s) for s in shape)
    bd = tuple(int(d) for d in broadcast_dimensions)
    if core.get_aval(operand).shape == shape and bd == tuple(range(len(shape))):
        return operand
    return _bind(broadcast_in_dim_p, operand, shape=shape, broadcast_dimensions=bd)


def broadcast(operand: Any, sizes: Sequence[int]) -> Any:
    """Add leading dimensions of the given sizes."""
    nd = core.get_aval(operand).ndim
    sizes = tuple(sizes)
    return broadcast_in_dim(operand, sizes + core.get_aval(operand).shape, tuple(range(len(sizes), len(sizes) + nd)))


def broadcast_to_rank(x: Any, rank: int) -> Any:
    nd = core.get_aval(x).ndim
    return x if nd == rank else broadcast(x, (1,) * (rank - nd))


def reshape(operand: Any, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None) -> Any:
    """Reshape (after transposing by ``dimensions`` if given)."""
    new_sizes = tuple(int(s) for s in new_sizes)
    aval = core.get_aval(operand)
    dims = None if dimensions is None or tuple(dimensions) == tuple(range(aval.ndim)) else tuple(dimensions)
    if aval.shape == new_sizes and dims is None:
        return operand
    return _bind(reshape_p, operand, new_sizes=new_sizes, dimensions=dims)


def transpose(operand: Any, permutation: Sequence[int]) -> Any:
    """Permute the dimensions of ``operand``."""
    perm = tuple(int(p) for p in permutation)
    if perm == tuple(range(len(perm))) and len(perm) == core.get_aval(operand).ndim:
        return operand
    return _bind(transpose_p, operand, permutation=perm)


def squeeze(array: Any, dimensions: Sequence[int]) -> Any:
    """Remove the given size-1 dimensions."""
    nd = core.get_aval(array).ndim
    dims = tuple(sorted(int(d) % nd if nd else int(d) for d in dimensions))
    if not dims:
        return array
    return _bind(squeeze_p, array, dimensions=dims)


def expand_dims(array: Any, dimensions: Sequence[int]) -> Any:
    """Insert size-1 dimensions at the given positions (of the result)."""
    aval = core.get_aval(array)
    nd_out = aval.ndim + len(dimensions)
    dims = sorted(int(d) % nd_out for d in dimensions)
    shape = list(aval.shape)
    for d in dims:
        shape.insert(d, 1)
    kept = [i for i in range(nd_out) if i not in dims]
    return broadcast_in_dim(array, tuple(shape), tuple(kept))


def rev(operand: Any, dimensions: Sequence[int]) -> Any:
    """Reverse the order of elements along the given dimensions."""
    return _bind(rev_p, operand, dimensions=tuple(int(d) for d in dimensions))


def iota(dtype: Any, size: int) -> Any:
    """[0, 1, ..., size-1] of the given dtype."""
    return broadcasted_iota(dtype, (int(size),), 0)


def broadcasted_iota(dtype: Any, shape: Sequence[int], dimension: int) -> Any:
    """An array of ``shape`` whose values count along ``dimension``."""
    return core.bind(
        iota_p,
        (),
        dict(dtype=dtypes.canonicalize_dtype(dtype), shape=tuple(int(s) for s in shape), dimension=int(dimension)),
    )


def reduce_sum(operand: Any, axes: Sequence[int]) -> Any:
    """Sum over ``axes``."""
    return _bind(reduce_sum_p, operand, axes=tuple(int(a) for a in axes))


def reduce_max(operand: Any, axes: Sequence[int]) -> Any:
    """Maximum over ``axes``."""
    return _bind(reduce_max_p, operand, axes=tuple(int(a) for a in axes))


def reduce_min(operand: Any, axes: Sequence[int]) -> Any:
    """Minimum over ``axes``."""
    return _bind(reduce_min_p, operand, axes=tuple(int(a) for a in axes))


def reduce_prod(operand: Any, axes: Sequence[int]) -> Any:
    """Product over ``axes``."""
    return _bind(reduce_prod_p, operand, axes=tuple(int(a) for a in axes))


def reduce_and(operand: Any, axes: Sequence[int]) -> Any:
    """Logical AND over ``axes``."""
    return _bind(reduce_and_p, operand, axes=tuple(int(a) for a in axes))


def reduce_or(operand: Any, axes: Sequence[int]) -> Any:
    """Logical OR over ``axes``."""
    return _bind(reduce_or_p, operand, axes=tuple(int(a) for a in axes))


def reduce_xor(operand: Any, axes: Sequence[int]) -> Any:
    """Logical XOR over ``axes``."""
    return _bind(reduce_xor_p, operand, axes=tuple(int(a) for a in axes))


def argmax(operand: Any, axis: int, index_dtype: Any) -> Any:
    """Index of the maximum along ``axis`` (first occurrence; NaN counts as maximal)."""
    return _bind(argmax_p, operand, axes=(int(axis),), index_dtype=dtypes.canonicalize_dtype(index_dtype))


def argmin(operand: Any, axis: int, index_dtype: Any) -> Any:
    """Index of the minimum along ``axis`` (first occurrence; NaN counts as minimal)."""
    return _bind(argmin_p, operand, axes=(int(axis),), index_dtype=dtypes.canonicalize_dtype(index_dtype))


def dot_general(
    lhs: Any, rhs: Any, dimension_numbers: Any, precision: Any = None, preferred_element_type: Any = None
) -> Any:
    """General tensor contraction: ``dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))``.

    The output has the batch dims, then lhs free dims, then rhs free dims.
    """
    pet = None if preferred_element_type is None else dtypes.canonicalize_dtype(preferred_element_type)
    return _bind(
        dot_general_p,
        lhs,
        rhs,
        dimension_numbers=_canon_dnums(dimension_numbers),
        precision=None,
        preferred_element_type=pet,
    )


def dot(lhs: Any, rhs: Any, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Vector/matrix dot product (contracting lhs's last dim with rhs's first)."""
    la, ra = core.get_aval(lhs), core.get_aval(rhs)
    if la.ndim not in (1, 2) or ra.ndim not in (1, 2):
        raise TypeError(f"lax.dot requires 1-D or 2-D operands, got shapes {la.shape} and {ra.shape}")
    return dot_general(lhs, rhs, (((la.ndim - 1,), (0,)), ((), ())), precision, preferred_element_type)


def stop_gradient(x: Any) -> Any:
    """The identity whose derivative is zero; works on pytrees."""
    from fjax import tree_util  # noqa: PLC0415

    def stop(v: Any) -> Any:
        aval = core.get_aval(v)
        if _dkind(aval.dtype) not in "fc":
            return v
        return _bind(stop_gradient_p, v)

    return tree_util.tree_map(stop, x)


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None) -> Any:
    """An array of ``shape`` filled with ``fill_value``."""
    shape = tuple(int(s) for s in shape)
    if dtype is None:
        fv = fill_value if isinstance(fill_value, (core.Tracer, core.Array)) else core.to_array(fill_value, "lax.full")
        weak = core.get_aval(fv).weak_type
        dt = core.get_aval(fv).dtype
    else:
        dt = dtypes.canonicalize_dtype(dtype)
        weak = False
        fv = fill_value
    if isinstance(fv, core.Tracer):
        v = _convert_element_type_weak(fv, dt, weak)
        return broadcast_in_dim(v, shape, ())
    val = np.asarray(core.concrete_or_error(fv)).astype(dt)
    if val.ndim:
        raise TypeError(f"full: fill_value must be a scalar, got shape {val.shape}")
    return broadcast_in_dim(core.Array(val, weak), shape, ())


def full_like(x: Any, fill_value: Any, dtype: Any = None, shape: Sequence[int] | None = None) -> Any:
    """An array like ``x`` (shape and dtype, weak type kept) filled with ``fill_value``."""
    aval = core.get_aval(x)
    dt = aval.dtype if dtype is None else dtypes.canonicalize_dtype(dtype)
    shp = aval.shape if shape is None else tuple(shape)
    val = core.Array(
        np.asarray(fill_value, dtype=dt) if not isinstance(fill_value, core.Array) else fill_value._value.astype(dt),
        aval.weak_type and dtype is None,
    )
    return broadcast_in_dim(val, shp, ())


def zeros_like_array(x: Any) -> Any:
    return full_like(x, 0)


def _zeros_of_aval(aval: ShapedArray) -> Any:
    if aval.dtype == dtypes.float0:
        return core.Array(np.zeros(aval.shape, dtypes.float0), False)
    return broadcast_in_dim(core.Array(np.zeros((), aval.dtype), aval.weak_type), aval.shape, ())


def _add_any(x: Any, y: Any) -> Any:
    ax = core.get_aval(x)
    if ax.dtype == dtypes.float0:
        return x
    return add(x, y)


def _moveaxis(x: Any, src: int, dst: int) -> Any:
    nd = core.get_aval(x).ndim
    perm = [i for i in range(nd) if i != src]
    perm.insert(dst, src)
    return transpose(x, perm)


def _broadcast_new_axis(x: Any, size: int, axis: int) -> Any:
    aval = core.get_aval(x)
    shape = list(aval.shape)
    shape.insert(axis, size)
    dims = [i for i in range(len(shape)) if i != axis]
    return broadcast_in_dim(x, tuple(shape), tuple(dims))


def slice_in_dim(operand: Any, start_index: int, limit_index: int, stride: int = 1, axis: int = 0) -> Any:
    from fjax.lax.slicing import slice_in_dim as _sid  # noqa: PLC0415

    return _sid(operand, start_index, limit_index, stride, axis)


def concatenate(operands: Sequence[Any], dimension: int) -> Any:
    from fjax.lax.slicing import concatenate as _cat  # noqa: PLC0415

    return _cat(operands, dimension)


# hooks the interpreters use for the few array ops their generic code needs
ad._add_any = _add_any
ad._zeros_like = _zeros_of_aval
batching._moveaxis = _moveaxis
batching._broadcast = _broadcast_new_axis
batching._broadcast_in_dim = broadcast_in_dim
