"""``fjax.lax.lax``'s elementwise primitives: the unary ones (``neg``, ``exp``, ``sin``, ...,
``integer_pow``, ``round``, ``is_finite``, ...) and the binary ones (``add``, ``mul``, ``div``,
``pow``, ``atan2``, the comparisons, the bitwise ops and shifts), each with its rules.

Split from ``fjax/lax/lax.py`` for size; ``lax.py`` re-exports every name defined here.
"""

# ruff: noqa: F405 - names come from fjax.lax.lax (star import: this module is a part of it)
from __future__ import annotations

from enum import IntEnum

from fjax.lax import _complex_ref, _special
from fjax.lax.lax import *  # noqa: F403 - the shared rules, helpers and imports
from fjax.lax.lax import (  # noqa: F401
    _any,
    _broadcast_shapes_rule,
    _check_kind,
    _complex,
    _const,
    _dkind,
    _errstate,
    _fc,
    _float,
    _int,
    _intb,
    _num,
)

# ---------------------------------------------------------------------------------------------
# unary elementwise


def _real_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dt == np.complex64 else (np.dtype(np.float64) if dt == np.complex128 else dt)


neg_p = standard_unop("neg", np.negative, _num)
register_lowering(neg_p, ELEMENTWISE)
ad.deflinear2(neg_p, lambda ct, x: [neg(ct)])


def _sign_impl(x: np.ndarray) -> np.ndarray:
    if _dkind(x.dtype) == "c":
        # x / |x| part by part, as XLA (numpy's complex division gives nan+nanj for inf-2j; XLA nan-0j)
        a = np.abs(x)
        safe = np.where(a == 0, np.ones((), a.dtype), a)
        return np.where(a == 0, x, _complex_ref._compose(np.real(x) / safe, np.imag(x) / safe, x.dtype))
    if _dkind(x.dtype) == "f":
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


def _exp_impl(x: np.ndarray) -> np.ndarray:
    return _complex_ref.complex_exp(x) if _dkind(x.dtype) == "c" else np.exp(x)


exp_p = standard_unop("exp", _errstate(_exp_impl), _fc)
register_lowering(exp_p, ELEMENTWISE)
ad.defjvp2(exp_p, lambda g, ans, x: mul(g, ans))


def _exp2_impl(x: np.ndarray) -> np.ndarray:
    # numpy's float32 exp2 is off by an ulp at some integers (2**-k, 2**126); through float64 it is
    # exact there, as XLA's and the compiled kernels' (frexp/ldexp rely on it)
    if x.dtype == np.float32:
        return np.exp2(x.astype(np.float64)).astype(np.float32)
    if _dkind(x.dtype) == "c":
        return _complex_ref.complex_exp2(x)
    return np.exp2(x)


exp2_p = standard_unop("exp2", _errstate(_exp2_impl), _fc)
register_lowering(exp2_p, ELEMENTWISE)
ad.defjvp2(exp2_p, lambda g, ans, x: mul(log(_const(x, 2)), mul(g, ans)))  # as JAX's (log 2 staged)

log_p = standard_unop("log", _errstate(np.log), _fc)
register_lowering(log_p, ELEMENTWISE)
ad.defjvp(log_p, lambda g, x: div(g, x))

log1p_p = standard_unop("log1p", _errstate(np.log1p), _fc)
register_lowering(log1p_p, ELEMENTWISE)
ad.defjvp(log1p_p, lambda g, x: div(g, add(x, _const(x, 1))))


def _expm1_impl(x: np.ndarray) -> np.ndarray:
    return _complex_ref.complex_expm1(x) if _dkind(x.dtype) == "c" else np.expm1(x)


expm1_p = standard_unop("expm1", _errstate(_expm1_impl), _fc)
register_lowering(expm1_p, ELEMENTWISE)
ad.defjvp2(expm1_p, lambda g, ans, x: mul(g, add(ans, _const(ans, 1))))

sqrt_p = standard_unop("sqrt", _errstate(np.sqrt), _fc)
register_lowering(sqrt_p, ELEMENTWISE)
ad.defjvp2(sqrt_p, lambda g, ans, x: mul(g, div(_const(x, 0.5), ans)))  # JAX's form (and jaxpr)


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
# JAX's form, g (1 + ans) (1 - ans): its jaxprs (and those of grad) read the same
ad.defjvp2(tanh_p, lambda g, ans, x: mul(add(g, mul(g, ans)), sub(_const(x, 1), ans)))

asinh_p = standard_unop("asinh", _errstate(np.arcsinh), _fc)
register_lowering(asinh_p, ELEMENTWISE)
ad.defjvp(asinh_p, lambda g, x: mul(g, rsqrt(add(mul(x, x), _const(x, 1)))))

acosh_p = standard_unop("acosh", _errstate(np.arccosh), _fc)
register_lowering(acosh_p, ELEMENTWISE)
# 1/sqrt(x*x - 1) as JAX writes it: with (x-1)*(x+1) the second derivative at x = 1 is 0 * inf = NaN
ad.defjvp(acosh_p, lambda g, x: mul(g, rsqrt(sub(mul(x, x), _const(x, 1)))))

atanh_p = standard_unop("atanh", _errstate(np.arctanh), _fc)
register_lowering(atanh_p, ELEMENTWISE)
ad.defjvp(atanh_p, lambda g, x: div(g, sub(_const(x, 1), mul(x, x))))


def _logistic_impl(x: np.ndarray) -> np.ndarray:
    if _dkind(x.dtype) == "c":
        # 1 / (1 + exp(-x)) (complex values have no order, so no tail split)
        one = np.ones((), x.dtype)
        return _complex_ref.complex_div(one, one + _complex_ref.complex_exp(-x))
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


def _mul_pow(x: np.ndarray, y: int) -> np.ndarray:
    """x ** y for y >= 1 by binary exponentiation (as XLA: numpy's complex power turns -0 into 0)."""
    acc = None
    while y > 0:
        if y & 1:
            acc = x if acc is None else acc * x
        y >>= 1
        if y > 0:
            x = x * x
    return acc


def _integer_pow_impl(x: np.ndarray, y: int) -> np.ndarray:
    if y < 0 and _dkind(x.dtype) in "iu":
        return np.power(x.astype(np.float64), y).astype(x.dtype)
    if y < 0 and _dkind(x.dtype) == "c":
        # 1 / x**|y| with XLA's complex division (1 / 0j is inf+nanj, as JAX)
        return _complex_ref.complex_div(np.ones_like(x), _mul_pow(x, -y))
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
    if y == 1:
        return g
    return mul(g, mul(_const(x, y), integer_pow(x, y - 1) if y - 1 != 1 else x))


ad.defjvp(integer_pow_p, _integer_pow_jvp)

square_p = standard_unop("square", np.square, _num)
register_lowering(square_p, ELEMENTWISE)
ad.defjvp(square_p, lambda g, x: mul(g, mul(_const(x, 2), x)))

real_p = standard_unop("real", np.real, _complex, _real_dtype)
register_lowering(real_p, ELEMENTWISE)  # real/imag/conj: backends holding complex dtypes (CUDA)
ad.deflinear2(real_p, lambda ct, x: [convert_element_type(ct, x.aval.dtype)])

imag_p = standard_unop("imag", np.imag, _complex, _real_dtype)
register_lowering(imag_p, ELEMENTWISE)
ad.deflinear2(
    imag_p,
    lambda ct, x: [mul(convert_element_type(ct, x.aval.dtype), _const(core.Array(np.zeros((), x.aval.dtype)), -1j))],
)


def _complex_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.complex128) if dt == np.float64 else (np.dtype(np.complex64) if dt == np.float32 else dt)


# as JAX: conj of a real (float32/float64) array is complex
conj_p = standard_unop("conj", lambda x: np.conj(x).astype(_complex_dtype(x.dtype)), _fc, _complex_dtype)
register_lowering(conj_p, ELEMENTWISE)
ad.deflinear2(conj_p, lambda ct, x: [conj(ct) if _dkind(x.aval.dtype) == "c" else real(ct)])

# ---------------------------------------------------------------------------------------------
# binary elementwise


def _unbroadcast(aval: ShapedArray, x: Any) -> Any:
    """Sum a cotangent of the broadcast shape back to the operand's shape (rank 0, or size-1 dims)."""
    xs = core.get_aval(x).shape
    if xs == aval.shape:
        return x
    if aval.shape == ():
        return reduce_sum(x, tuple(range(len(xs))))
    if len(xs) != len(aval.shape):
        raise AssertionError(f"unbroadcast {xs} -> {aval.shape}")
    dims = tuple(i for i, (a, b) in enumerate(zip(aval.shape, xs)) if a == 1 and b != 1)
    return reshape(reduce_sum(x, dims), aval.shape) if dims else x


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
    """``x`` (rank 0, or of ``shape``'s rank with size-1 dims) broadcast to ``shape``."""
    xs = core.get_aval(x).shape
    if xs == shape:
        return x
    # as JAX: the broadcast size-1 dims are reshaped away first
    kept = tuple(i for i, (a, b) in enumerate(zip(xs, shape)) if a == b)
    if len(kept) != len(xs):
        x = reshape(x, tuple(xs[i] for i in kept))
    return broadcast_in_dim(x, shape, kept)


add_p = standard_naryop("add", np.add, _num)
register_lowering(add_p, ELEMENTWISE)
ad.primitive_jvps[add_p] = _linear_binop_jvp(add_p, False)
ad.primitive_transposes[add_p] = _add_transpose

# add_any: the sum of two tangents or cotangents (JAX's ``ad_util.add_jaxvals_p``, printed
# ``add_any``): what JVP rules and the transpose bind where contributions meet. Unlike ``add`` its
# operands have one type (no scalar broadcasting) and its result has the first operand's aval.


def _add_any_abstract(x: ShapedArray, y: ShapedArray) -> ShapedArray:
    if x.shape != y.shape or x.dtype != y.dtype:
        tx, ty = (ShapedArray(a.shape, a.dtype).str_short() for a in (x, y))
        raise TypeError(f"add_any requires operands of one type, got {tx} and {ty}")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def _add_any_batch(vals: list, dims: list) -> tuple:
    # the result is mapped where y is (where x is when y is not): the other operand is moved or
    # broadcast there, as JAX's rule does (so the jaxprs vmap builds print alike)
    (x, y), (dx, dy) = vals, dims
    nm = batching.not_mapped
    if dx == dy:
        return add_any_p.bind(x, y), dx
    if dy is nm:
        return add_any_p.bind(x, _broadcast_new_axis(y, core.get_aval(x).shape[dx], dx)), dx
    if dx is nm:
        x = _broadcast_new_axis(x, core.get_aval(y).shape[dy], dy)
    else:
        x = _moveaxis(x, dx, dy)
    return add_any_p.bind(x, y), dy


add_any_p = Primitive("add_any")
add_any_p.def_impl(np.add)
add_any_p.def_abstract_eval(_add_any_abstract)
register_lowering(add_any_p, ELEMENTWISE, op="add")
ad.primitive_jvps[add_any_p] = _linear_binop_jvp(add_any_p, False)
ad.primitive_transposes[add_any_p] = _add_transpose
batching.primitive_batchers[add_any_p] = _add_any_batch

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
    if _dkind(x.dtype) == "c":
        return _complex_ref.complex_div(x, y)
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
        t = c if t is None else _add_any(t, c)
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


rem_p = standard_naryop("rem", _errstate(_rem_impl), "iuf")  # no complex remainder, as JAX
register_lowering(rem_p, ELEMENTWISE)
ad.defjvp(
    rem_p,
    lambda g, x, y: _bcast_to(g, _broadcast_shapes_rule("rem", [core.get_aval(x), core.get_aval(y)])),
    lambda g, x, y: mul(neg(g), mul(sign(div(x, y)), floor(abs(div(x, y))))),
)


def _pow_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if _dkind(x.dtype) == "c":  # XLA's polar form (its values at zeros and infinities differ from numpy's)
        return _complex_ref.complex_pow(x, y.astype(x.dtype))
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
    _check_kind("pow", x, _fc, 0)
    _check_kind("pow", y, _num, 1)
    if _dkind(y.dtype) in "fc" and x.dtype != y.dtype:
        raise TypeError(
            "the first argument to pow must have an inexact dtype (float or complex), and the second "
            "argument must have an inexact or integer dtype, and two inexact dtypes must match, but got "
            f"{x.dtype.name} and {y.dtype.name} respectively."
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
    # as JAX: both in the result dtype first (a weak-typed operand shows a convert_element_type)
    x = convert_element_type(x, core.get_aval(x).dtype)
    y = convert_element_type(y, core.get_aval(y).dtype)
    return mul(g, mul(y, pow(x, sub(y, full_like(y, 1)))))


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
        t = c if t is None else _add_any(t, c)
    return ans, (Zero(ad.tangent_aval(aval)) if t is None else t)


ad.primitive_jvps[pow_p] = _pow_jvp


def _balanced_eq(a: Any, ans: Any, b: Any) -> Any:
    # 1 where ``a`` is the result, 1/2 where ``b`` is too (a tie splits the tangent equally), else 0:
    # JAX's form (NaN results give 0, as comparisons with NaN are false)
    one, two = full_like(ans, 1), full_like(ans, 2)
    return div(select(eq(a, ans), one, full_like(ans, 0)), select(eq(b, ans), two, one))


def _minmax_jvp(op: Callable) -> Callable:
    def jvp(primals: list, tangents: list) -> tuple:
        x, y = primals
        tx, ty = tangents
        ans = op(x, y)
        aval = core.get_aval(ans)
        t: Any = None
        for g, a, b in ((tx, x, y), (ty, y, x)):
            if type(g) is Zero:
                continue
            c = _bcast_to(mul(g, _balanced_eq(a, ans, b)), aval.shape)
            t = c if t is None else _add_any(t, c)
        return ans, (Zero(ad.tangent_aval(aval)) if t is None else t)

    return jvp


def _max_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return _complex_ref.complex_max(x, y) if _dkind(x.dtype) == "c" else np.maximum(x, y)


def _min_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return _complex_ref.complex_min(x, y) if _dkind(x.dtype) == "c" else np.minimum(x, y)


max_p = standard_naryop("max", _max_impl, _any)
register_lowering(max_p, ELEMENTWISE)
min_p = standard_naryop("min", _min_impl, _any)
register_lowering(min_p, ELEMENTWISE)


def _atan2_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if _dkind(x.dtype) == "c":
        # XLA's complex atan2: -i log((y + i x) / sqrt(y^2 + x^2))
        return (-1j * np.log((y + 1j * x) / np.sqrt(y * y + x * x))).astype(x.dtype)
    return np.arctan2(x, y)


atan2_p = standard_naryop("atan2", _errstate(_atan2_impl), _fc)
register_lowering(atan2_p, ELEMENTWISE)
ad.defjvp(
    atan2_p,
    lambda g, x, y: mul(g, div(y, add(mul(x, x), mul(y, y)))),
    lambda g, x, y: mul(g, div(neg(x), add(mul(x, x), mul(y, y)))),
)

nextafter_p = standard_naryop("nextafter", np.nextafter, _float)
# no derivative rule, as in JAX: differentiating nextafter raises NotImplementedError

# comparisons
eq_p = standard_naryop("eq", np.equal, _any, out_bool=True)
register_lowering(eq_p, ELEMENTWISE)
ne_p = standard_naryop("ne", np.not_equal, _any, out_bool=True)
register_lowering(ne_p, ELEMENTWISE)


def _ordered(op: Callable, strict: Callable) -> Callable:
    """numpy's comparison ``op``; on complex operands JAX's lexicographic order: the imaginary
    parts compared where the real parts are equal, else the real parts by ``strict`` (so a NaN
    imaginary part does not decide when the real parts differ, unlike numpy's)."""

    def impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        if x.dtype.kind == "c" or y.dtype.kind == "c":  # (operands are numpy arrays or scalars)
            with np.errstate(invalid="ignore"):
                return np.where(x.real == y.real, op(x.imag, y.imag), strict(x.real, y.real))
        return op(x, y)

    return impl


lt_p = standard_naryop("lt", _ordered(np.less, np.less), _any, out_bool=True)
register_lowering(lt_p, ELEMENTWISE)
le_p = standard_naryop("le", _ordered(np.less_equal, np.less), _any, out_bool=True)
register_lowering(le_p, ELEMENTWISE)
gt_p = standard_naryop("gt", _ordered(np.greater, np.greater), _any, out_bool=True)
register_lowering(gt_p, ELEMENTWISE)
ge_p = standard_naryop("ge", _ordered(np.greater_equal, np.greater), _any, out_bool=True)
register_lowering(ge_p, ELEMENTWISE)
for _p in (eq_p, ne_p, lt_p, le_p, gt_p, ge_p):
    ad.defzero(_p)

ad.primitive_jvps[max_p] = _minmax_jvp(lambda a, b: max(a, b))
ad.primitive_jvps[min_p] = _minmax_jvp(lambda a, b: min(a, b))

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
