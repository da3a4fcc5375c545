"""Elementwise primitives behind ``fjax.scipy.special`` for functions lax has no primitive for.

Each evaluates scipy.special in float64 (complex128 for ``wofz``) and rounds to the operand
dtype; its derivative is a closed form written with fjax ops (so it composes to any order where
the formula's own pieces are differentiable). Arguments JAX does not differentiate (orders,
shape parameters of hypergeometric functions) raise NotImplementedError when differentiated.
Batching is elementwise; under ``jit`` these run as host steps, except ``betaln``, which ``jit``
compiles from lgamma, logs and a Stirling series (numpyro's Beta and Binomial densities use it in
sampler loops).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from fjax import lax
from fjax.core import Primitive, ShapedArray
from fjax.dtypes import kind as _dkind
from fjax.interpreters import ad, batching, mlir
from fjax.lax.lax import _const, standard_naryop
from fjax.lax.special import _scipy, _via_f64

_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)


def _not_differentiable(prim: str, arg: str) -> Callable:
    def rule(g: Any, *args: Any, **params: Any) -> Any:
        raise NotImplementedError(f"Differentiation rule for '{prim}' with respect to {arg} is not implemented")

    return rule


def _prim(name: str, fn: Callable, kinds: str = "f") -> Any:
    return standard_naryop(name, _via_f64(fn) if kinds == "f" else _via_c128(fn), kinds)


def _via_c128(fn: Callable) -> Callable:
    def impl(*args: np.ndarray) -> np.ndarray:
        dt = np.result_type(*args)
        with np.errstate(all="ignore"):
            out = fn(*(np.asarray(a, np.complex128) for a in args))
        return np.asarray(out).astype(dt)

    return impl


def _c(x: Any, v: float) -> Any:
    return _const(x, v)


# erfcx(x) = exp(x^2) erfc(x); d/dx = 2 x erfcx(x) - 2/sqrt(pi)
erfcx_p = _prim("erfcx", _scipy("erfcx"))
ad.defjvp2(erfcx_p, lambda g, ans, x: lax.mul(g, lax.sub(lax.mul(lax.mul(_c(x, 2), x), ans), _c(x, 2 / _SQRT_PI))))

# Dawson's integral; d/dx = 1 - 2 x F(x)
dawsn_p = _prim("dawsn", _scipy("dawsn"))
ad.defjvp2(dawsn_p, lambda g, ans, x: lax.mul(g, lax.sub(_c(x, 1), lax.mul(lax.mul(_c(x, 2), x), ans))))

# exponential integrals: E1' = -exp(-x)/x, Ei' = exp(x)/x, En' = -E_{n-1}
exp1_p = _prim("exp1", _scipy("exp1"))
ad.defjvp(exp1_p, lambda g, x: lax.mul(g, lax.neg(lax.div(lax.exp(lax.neg(x)), x))))
expi_p = _prim("expi", _scipy("expi"))
ad.defjvp(expi_p, lambda g, x: lax.mul(g, lax.div(lax.exp(x), x)))
expn_p = _prim("expn", _scipy("expn"))


def _expn_jvp_x(g: Any, n: Any, x: Any) -> Any:
    # E_0(x) = exp(-x) / x
    nm1 = lax.sub(n, _c(n, 1))
    e0 = lax.div(lax.exp(lax.neg(x)), x)
    prev = lax.select(lax.le(nm1, _c(n, 0)), e0, expn(lax.max(nm1, _c(n, 0)), x))
    return lax.mul(g, lax.neg(prev))


ad.defjvp(expn_p, _not_differentiable("expn", "n"), _expn_jvp_x)

# Spence's function (scipy's convention): d/dz = log(z) / (1 - z)
spence_p = _prim("spence", _scipy("spence"))


def _spence_jvp(g: Any, x: Any) -> Any:
    one = _c(x, 1)
    at_one = lax.eq(x, one)
    safe = lax.select(at_one, lax.full_like(x, 2.0), x)
    d = lax.div(lax.log(safe), lax.sub(one, safe))
    return lax.mul(g, lax.select(at_one, lax.full_like(x, -1.0), d))


ad.defjvp(spence_p, _spence_jvp)

# Fresnel integrals S(x), C(x): S' = sin(pi x^2 / 2), C' = cos(pi x^2 / 2)
fresnel_s_p = _prim("fresnel_s", lambda x: _scipy("fresnel")(x)[0])
fresnel_c_p = _prim("fresnel_c", lambda x: _scipy("fresnel")(x)[1])
ad.defjvp(fresnel_s_p, lambda g, x: lax.mul(g, lax.sin(lax.mul(_c(x, math.pi / 2), lax.mul(x, x)))))
ad.defjvp(fresnel_c_p, lambda g, x: lax.mul(g, lax.cos(lax.mul(_c(x, math.pi / 2), lax.mul(x, x)))))

# sine and cosine integrals: Si' = sin(x)/x (1 at 0), Ci' = cos(x)/x
si_p = _prim("sici_si", lambda x: _scipy("sici")(x)[0])
ci_p = _prim("sici_ci", lambda x: _scipy("sici")(x)[1])


def _sinc_like(x: Any) -> Any:
    zero = lax.eq(x, _c(x, 0))
    safe = lax.select(zero, lax.full_like(x, 1.0), x)
    return lax.select(zero, lax.full_like(x, 1.0), lax.div(lax.sin(safe), safe))


ad.defjvp(si_p, lambda g, x: lax.mul(g, _sinc_like(x)))
ad.defjvp(ci_p, lambda g, x: lax.mul(g, lax.div(lax.cos(x), x)))

# confluent and Gauss hypergeometric functions, differentiable in x
hyp1f1_p = _prim("hyp1f1", _scipy("hyp1f1"))
ad.defjvp(
    hyp1f1_p,
    _not_differentiable("hyp1f1", "a"),
    _not_differentiable("hyp1f1", "b"),
    lambda g, a, b, x: lax.mul(g, lax.mul(lax.div(a, b), hyp1f1(lax.add(a, _c(a, 1)), lax.add(b, _c(b, 1)), x))),
)
hyp2f1_p = _prim("hyp2f1", _scipy("hyp2f1"))
ad.defjvp(
    hyp2f1_p,
    _not_differentiable("hyp2f1", "a"),
    _not_differentiable("hyp2f1", "b"),
    _not_differentiable("hyp2f1", "c"),
    lambda g, a, b, c, x: lax.mul(
        g,
        lax.mul(
            lax.div(lax.mul(a, b), c),
            hyp2f1(lax.add(a, _c(a, 1)), lax.add(b, _c(b, 1)), lax.add(c, _c(c, 1)), x),
        ),
    ),
)

# Owen's T function: dT/dh = -phi(h) erf(a h / sqrt 2) / 2, dT/da = exp(-h^2 (1 + a^2) / 2) / (2 pi (1 + a^2))
owens_t_p = _prim("owens_t", _scipy("owens_t"))


def _owens_t_dh(g: Any, h: Any, a: Any) -> Any:
    phi = lax.div(lax.exp(lax.mul(_c(h, -0.5), lax.mul(h, h))), _c(h, _SQRT_2PI))
    return lax.mul(g, lax.mul(lax.mul(_c(h, -0.5), phi), lax.erf(lax.div(lax.mul(a, h), _c(h, math.sqrt(2))))))


def _owens_t_da(g: Any, h: Any, a: Any) -> Any:
    one_a2 = lax.add(_c(a, 1), lax.mul(a, a))
    num = lax.exp(lax.mul(lax.mul(_c(h, -0.5), lax.mul(h, h)), one_a2))
    return lax.mul(g, lax.div(num, lax.mul(_c(a, 2 * math.pi), one_a2)))


ad.defjvp(owens_t_p, _owens_t_dh, _owens_t_da)

# Bessel functions of the first kind J_v (integer order v as a float operand): J_v' = (J_{v-1} - J_{v+1}) / 2
jv_p = _prim("bessel_jv", _scipy("jv"))
ad.defjvp(
    jv_p,
    _not_differentiable("bessel_jv", "v"),
    lambda g, v, x: lax.mul(
        g,
        lax.mul(_c(x, 0.5), lax.sub(jv(lax.sub(v, _c(v, 1)), x), jv(lax.add(v, _c(v, 1)), x))),
    ),
)

# standard normal quantile and log CDF (accurate in the tails, unlike erf_inv/erfc forms)
ndtri_p = _prim("ndtri", _scipy("ndtri"))
ad.defjvp2(
    ndtri_p, lambda g, ans, p: lax.mul(g, lax.mul(_c(p, _SQRT_2PI), lax.exp(lax.mul(_c(p, 0.5), lax.mul(ans, ans)))))
)
log_ndtr_p = _prim("log_ndtr", _scipy("log_ndtr"))
ad.defjvp2(
    log_ndtr_p,
    lambda g, ans, x: lax.mul(
        g, lax.exp(lax.sub(lax.sub(lax.mul(_c(x, -0.5), lax.mul(x, x)), ans), _c(x, math.log(_SQRT_2PI))))
    ),
)

# log|B(a, b)|, accurate for large arguments; d/da = psi(a) - psi(a + b)
betaln_p = _prim("betaln", _scipy("betaln"))
ad.defjvp(
    betaln_p,
    lambda g, a, b: lax.mul(g, lax.sub(lax.digamma(a), lax.digamma(lax.add(a, b)))),
    lambda g, a, b: lax.mul(g, lax.sub(lax.digamma(b), lax.digamma(lax.add(a, b)))),
)


def _stirling_delta(x: Any) -> Any:
    """lgamma(x) - ((x - 1/2) log x - x + log(2 pi)/2) for x >= 10 (the Stirling series; its
    first omitted term is under 2e-14 there)."""
    r = lax.div(_c(x, 1.0), x)
    r2 = lax.mul(r, r)
    poly = _c(x, 1 / 1188)
    for coef in (-1 / 1680, 1 / 1260, -1 / 360, 1 / 12):
        poly = lax.add(lax.mul(poly, r2), _c(x, coef))
    return lax.mul(poly, r)


def _betaln_composed(a: Any, b: Any) -> Any:
    """betaln as ``jit`` compiles it: with a = min, b = max of the two, the Stirling form when both
    are at least 10, lgamma(a) + (lgamma(b) - lgamma(a + b)) written stably when only b (and a + b)
    are, else lgamma(a) + lgamma(b) - lgamma(a + b), whose terms are moderate there."""
    a, b = lax.min(a, b), lax.max(a, b)
    s = lax.add(a, b)
    ten = _c(a, 10.0)
    log_s = lax.log(s)
    l1p = lax.log1p(lax.div(a, b))  # log((a + b) / b)
    d_b, d_s = _stirling_delta(lax.max(b, ten)), _stirling_delta(lax.max(s, ten))
    # both large: (a - 1/2) log(a / s) + (b - 1/2) log(b / s) - log(s) / 2 + log(2 pi) / 2 + deltas
    half = _c(a, 0.5)
    both = lax.add(
        lax.sub(
            lax.sub(
                lax.mul(lax.sub(a, half), lax.sub(lax.log(lax.max(a, ten)), log_s)), lax.mul(lax.sub(b, half), l1p)
            ),
            lax.mul(half, log_s),
        ),
        lax.add(_c(a, 0.5 * math.log(2 * math.pi)), lax.sub(lax.add(_stirling_delta(lax.max(a, ten)), d_b), d_s)),
    )
    # b large: lgamma(b) - lgamma(s) = -(b - 1/2) log1p(a / b) - a log(s) + a + delta(b) - delta(s)
    algdiv = lax.add(lax.sub(lax.add(lax.neg(lax.mul(lax.sub(b, half), l1p)), a), lax.mul(a, log_s)), lax.sub(d_b, d_s))
    one_large = lax.add(lax.lgamma(a), algdiv)
    direct = lax.sub(lax.add(lax.lgamma(a), lax.lgamma(b)), lax.lgamma(s))
    large_b = lax.bitwise_and(lax.ge(b, ten), lax.ge(s, ten))
    return lax.select(lax.ge(a, ten), both, lax.select(large_b, one_large, direct))


mlir.register_lowering(betaln_p, mlir.lower_fun(_betaln_composed, multiple_results=False))

# sign of the gamma function (piecewise constant); a symbolic zero tangent, so that
# gamma = sign * exp(lgamma) differentiates to inf (not 0 * inf = NaN) where Gamma overflows
gammasgn_p = _prim("gammasgn", _scipy("gammasgn"))
ad.defzero(gammasgn_p)

# Faddeeva function w(z) = exp(-z^2) erfc(-i z) (complex, holomorphic): w' = -2 z w + 2i / sqrt(pi)
wofz_p = _prim("wofz", _scipy("wofz"), "c")
ad.defjvp2(
    wofz_p,
    lambda g, ans, z: lax.mul(g, lax.add(lax.mul(lax.mul(_c(z, -2), z), ans), _c(z, 2j / _SQRT_PI))),
)

# spherical harmonics Y_n^m(theta, phi) (scipy >= 1.15 convention): real operands of one dtype,
# complex result; not differentiated (as the order arguments are integers)


def _sph_impl(n: np.ndarray, m: np.ndarray, theta: np.ndarray, phi: np.ndarray) -> np.ndarray:
    out_dt = np.result_type(theta.dtype, np.complex64)
    with np.errstate(all="ignore"):
        out = _scipy("sph_harm_y")(
            n.astype(np.int64), m.astype(np.int64), theta.astype(np.float64), phi.astype(np.float64)
        )
    return np.asarray(out).astype(out_dt)


def _sph_abstract(n: Any, m: Any, theta: Any, phi: Any) -> ShapedArray:
    shapes = {a.shape for a in (n, m, theta, phi) if a.shape}
    if len(shapes) > 1 or _dkind(theta.dtype) != "f" or phi.dtype != theta.dtype:
        raise TypeError(
            "sph_harm_y requires real theta and phi of one dtype and operands of one shape, got "
            + ", ".join(f"{a.dtype.name}{list(a.shape)}" for a in (n, m, theta, phi))
        )
    return ShapedArray(shapes.pop() if shapes else (), np.result_type(theta.dtype, np.complex64), False)


sph_harm_y_p = Primitive("sph_harm_y")
sph_harm_y_p.def_impl(_sph_impl)
sph_harm_y_p.def_abstract_eval(_sph_abstract)
batching.defbroadcasting(sph_harm_y_p)
ad.defjvp(sph_harm_y_p, *(_not_differentiable("sph_harm_y", a) for a in ("n", "m", "theta", "phi")))


def _bind(p: Any, *args: Any) -> Any:
    return p.bind(*args)


def erfcx(x: Any) -> Any:
    return _bind(erfcx_p, x)


def expn(n: Any, x: Any) -> Any:
    return _bind(expn_p, n, x)


def hyp1f1(a: Any, b: Any, x: Any) -> Any:
    return _bind(hyp1f1_p, a, b, x)


def hyp2f1(a: Any, b: Any, c: Any, x: Any) -> Any:
    return _bind(hyp2f1_p, a, b, c, x)


def jv(v: Any, x: Any) -> Any:
    return _bind(jv_p, v, x)
