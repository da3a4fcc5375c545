"""``fjax.scipy.special``: JAX's 53 ``jax.scipy.special`` functions.

Built on lax primitives (``lgamma``, ``digamma``, ``igamma``, ``betainc``, ``zeta``, the Bessel
``i0e``/``i1e``, ``erf``...) where JAX composes them, and on the scipy-backed primitives of
``fjax.scipy._special_prims`` for the functions lax has none for (``erfcx``, ``dawsn``, ``exp1``,
``expi``, ``expn``, ``spence``, ``fresnel``, ``sici``, ``hyp1f1``, ``hyp2f1``, ``owens_t``,
``ndtri``, ``log_ndtr``, ``betaln``, ``wofz``, ``sph_harm_y``, ``bessel_jn``). Arguments are
promoted to a common inexact dtype and broadcast, as JAX does. Derivatives exist wherever JAX
defines them (and a few more, each a closed form); ``xlogy``/``xlog1py``/``entr`` carry JAX's
custom JVPs so they are finite at ``x = 0``.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from fjax import core, lax
from fjax import numpy as jnp
from fjax.custom_derivatives import custom_jvp
from fjax.dtypes import kind as _dkind
from fjax.numpy._ufuncs_promote import broadcast_lax_style
from fjax.numpy._util import broadcast_arrays, promote_dtypes_inexact
from fjax.scipy import _special_prims as P

__all__ = [
    "bernoulli", "bessel_jn", "beta", "betainc", "betaln", "boxcox", "boxcox1p", "comb", "dawsn",
    "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp1", "expi", "expit", "expn", "factorial",
    "fresnel", "gamma", "gammainc", "gammaincc", "gammaln", "gammasgn", "hyp1f1", "hyp2f1", "i0", "i0e",
    "i1", "i1e", "kl_div", "log_ndtr", "log_softmax", "loggamma", "logit", "logsumexp", "multigammaln",
    "ndtr", "ndtri", "owens_t", "poch", "polygamma", "rel_entr", "sici", "softmax", "spence",
    "sph_harm_y", "wofz", "xlog1py", "xlogy", "zeta",
]  # fmt: skip


def _args(name: str, *args: Any) -> list:
    """Promote to one inexact dtype and broadcast to one shape."""
    xs = promote_dtypes_inexact(name, *args)
    return broadcast_lax_style(name, *xs) if len(xs) > 1 else xs


# a complex argument: the TypeError JAX 0.10.2 raises (from the lax primitive's dtype rule, or the
# function's own check) where it is not the ValueError below
_FLOATING = "does not accept dtype {}. Accepted dtypes are subtypes of floating."
_DOCSTRING = "x.dtype={} is not supported, see docstring for supported types."
_COMPLEX_ERRORS = {
    "erf": "erf " + _FLOATING,
    "erfc": "erfc " + _FLOATING,
    "erfinv": "erf_inv " + _FLOATING,
    "gammaln": "lgamma " + _FLOATING,
    "betaln": "lgamma " + _FLOATING,
    "digamma": "digamma " + _FLOATING,
    "i0e": "bessel_i0e " + _FLOATING,
    "i1e": "bessel_i1e " + _FLOATING,
    "ndtri": _DOCSTRING,
    "spence": _DOCSTRING,
    "zeta": "zeta does not accept dtype {} at position 0. Accepted dtypes at position 0 are subtypes of floating.",
}


def _real(name: str, *args: Any) -> list:
    xs = _args(name, *args)
    if _dkind(xs[0].dtype) == "c":
        msg = _COMPLEX_ERRORS.get(name)
        if msg is not None:
            raise TypeError(msg.format(xs[0].dtype))
        raise ValueError(f"{name} does not support complex-valued inputs.")
    return xs


# ---------------------------------------------------------------------------------------------
# gamma family


def gammaln(x: Any) -> Any:
    """log|Gamma(x)|."""
    (x,) = _real("gammaln", x)
    return lax.lgamma(x)


def gammasgn(x: Any) -> Any:
    """The sign of Gamma(x) (NaN at the poles, as scipy)."""
    (x,) = _real("gammasgn", x)
    return P.gammasgn_p.bind(x)


def gamma(x: Any) -> Any:
    """Gamma(x) = sign * exp(log|Gamma(x)|)."""
    (x,) = _real("gamma", x)
    return P.gammasgn_p.bind(x) * lax.exp(lax.lgamma(x))


def loggamma(x: Any) -> Any:
    """log Gamma(x) for real x > 0 (NaN for x <= 0, as scipy's real loggamma)."""
    (x,) = _real("loggamma", x)
    return jnp.where(x > 0, lax.lgamma(x), np.nan)


def digamma(x: Any) -> Any:
    """psi(x) = d/dx log Gamma(x)."""
    (x,) = _real("digamma", x)
    return lax.digamma(x)


def polygamma(n: Any, x: Any) -> Any:
    """psi^(n)(x), the n-th derivative of digamma (n a non-negative integer)."""
    n_arr = jnp.asarray(n)
    if _dkind(n_arr.dtype) not in "iub" and not isinstance(n, core.Tracer):
        nv = np.asarray(core.concrete_or_error(n, "polygamma order"))
        if not np.all(nv == np.floor(nv)):
            raise ValueError(f"polygamma: n must be integer-valued, got {nv}")
    n, x = _real("polygamma", n, x)
    return lax.polygamma(n, x)


def gammainc(a: Any, x: Any) -> Any:
    """Regularized lower incomplete gamma P(a, x); differentiable in ``a`` and ``x``."""
    a, x = _real("gammainc", a, x)
    return lax.igamma(a, x)


def gammaincc(a: Any, x: Any) -> Any:
    """Regularized upper incomplete gamma Q(a, x) = 1 - P(a, x)."""
    a, x = _real("gammaincc", a, x)
    return lax.igammac(a, x)


def multigammaln(a: Any, d: Any) -> Any:
    """Log of the multivariate gamma function of dimension ``d`` (a static integer)."""
    d = int(core.concrete_or_error(d, "d argument of multigammaln"))
    (a,) = _real("multigammaln", a)
    const = 0.25 * d * (d - 1) * math.log(math.pi)
    b = jnp.arange(d, dtype=a.dtype) / 2
    res = jnp.sum(lax.lgamma(jnp.expand_dims(a, -1) - b), axis=-1)
    return res + jnp.asarray(const, a.dtype)


def factorial(n: Any, exact: bool = False) -> Any:
    """n! as Gamma(n + 1) (0 for negative n)."""
    if exact:
        raise NotImplementedError("factorial with exact=True")
    (n,) = _real("factorial", n)
    return jnp.where(n < 0, 0, lax.exp(lax.lgamma(n + 1)))


def comb(N: Any, k: Any, *, repetition: bool = False) -> Any:  # noqa: N803
    """Binomial coefficient C(N, k) through log-gamma (0 outside 0 <= k <= N)."""
    N, k = _real("comb", N, k)  # noqa: N806
    if repetition:
        cond = (k == 0) & (N >= 0)
        return jnp.where(cond, 1.0, comb(N + k - 1, k)).astype(N.dtype)
    cond = (k <= N) & (N >= 0) & (k >= 0)
    safe_n = jnp.where(cond, N, 0.0)
    safe_k = jnp.where(cond, k, 0.0)
    res = lax.exp(lax.lgamma(safe_n + 1) - lax.lgamma(safe_k + 1) - lax.lgamma(safe_n + 1 - safe_k))
    return jnp.where(cond, res, 0.0)


def poch(z: Any, m: Any) -> Any:
    """Pochhammer symbol (z)_m = Gamma(z + m) / Gamma(z)."""
    z, m = _real("poch", z, m)
    return jnp.where(m == 0.0, jnp.ones_like(z), gamma(z + m) / gamma(z))


def betaln(a: Any, b: Any) -> Any:
    """log|B(a, b)|, accurate for large arguments; differentiable in both."""
    a, b = _real("betaln", a, b)
    return P.betaln_p.bind(a, b)


def beta(a: Any, b: Any) -> Any:
    """The beta function B(a, b)."""
    a, b = _real("beta", a, b)
    sign = P.gammasgn_p.bind(a) * P.gammasgn_p.bind(b) * P.gammasgn_p.bind(a + b)
    return sign * lax.exp(P.betaln_p.bind(a, b))


def betainc(a: Any, b: Any, x: Any) -> Any:
    """Regularized incomplete beta I_x(a, b); differentiable in ``x``."""
    a, b, x = _real("betainc", a, b, x)
    return lax.betainc(a, b, x)


def bernoulli(n: int) -> Any:
    """The Bernoulli numbers B_0 ... B_n (B_1 = -1/2)."""
    n = operator.index(core.concrete_or_error(n, "Argument n of bernoulli"))
    if n < 0:
        raise ValueError("n must be a non-negative integer.")
    from fractions import Fraction  # noqa: PLC0415

    # exact rationals by the Akiyama-Tanigawa algorithm, then rounded once
    out = []
    a = [Fraction(0)] * (n + 1)
    for m in range(n + 1):
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        out.append(a[0])
    if n >= 1:
        out[1] = -out[1]  # the B_1 = -1/2 convention
    return jnp.asarray(np.array([float(v) for v in out]), dtype=jnp.result_type(float))


# ---------------------------------------------------------------------------------------------
# error function family and the normal distribution


def erf(x: Any) -> Any:
    """The error function."""
    (x,) = _real("erf", x)
    return lax.erf(x)


def erfc(x: Any) -> Any:
    """The complementary error function 1 - erf(x)."""
    (x,) = _real("erfc", x)
    return lax.erfc(x)


def erfinv(x: Any) -> Any:
    """The inverse error function."""
    (x,) = _real("erfinv", x)
    return lax.erf_inv(x)


def erfcx(x: Any) -> Any:
    """The scaled complementary error function exp(x^2) erfc(x)."""
    (x,) = _real("erfcx", x)
    return P.erfcx_p.bind(x)


def dawsn(x: Any) -> Any:
    """Dawson's integral exp(-x^2) int_0^x exp(t^2) dt."""
    (x,) = _real("dawsn", x)
    return P.dawsn_p.bind(x)


def ndtr(x: Any) -> Any:
    """The standard normal CDF."""
    x = jnp.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"x.dtype={x.dtype} is not supported, see docstring for supported types.")
    half_sqrt2 = jnp.asarray(0.5 * math.sqrt(2), x.dtype)
    z = x * half_sqrt2
    y = jnp.where(jnp.abs(z) < half_sqrt2, 1.0 + lax.erf(z), jnp.where(z > 0, 2.0 - lax.erfc(z), lax.erfc(-z)))
    return (0.5 * y).astype(x.dtype)


def ndtri(p: Any) -> Any:
    """The standard normal quantile (inverse of :func:`ndtr`)."""
    (p,) = _real("ndtri", p)
    return P.ndtri_p.bind(p)


def log_ndtr(x: Any, series_order: int = 3) -> Any:
    """log of the standard normal CDF, accurate far into the lower tail."""
    if not isinstance(series_order, int) or series_order < 0 or series_order > 30:
        raise ValueError(f"series_order must be a non-negative int at most 30, got {series_order!r}.")
    x = jnp.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"x.dtype={x.dtype} is not supported.")  # (JAX 0.10.2's words for log_ndtr)
    return P.log_ndtr_p.bind(x)


# ---------------------------------------------------------------------------------------------
# logs, entropies, logistic


@custom_jvp
def _xlogx(x: Any) -> Any:
    return jnp.where(x == 0, jnp.zeros_like(x), x * lax.log(jnp.where(x == 0, jnp.ones_like(x), x)))


@_xlogx.defjvp
def _xlogx_jvp(primals: tuple, tangents: tuple) -> tuple:
    (x,), (t,) = primals, tangents
    return _xlogx(x), t * (lax.log(x) + 1)


@custom_jvp
def xlogy(x: Any, y: Any) -> Any:
    """x * log(y), 0 where x == 0 (even for y == 0); a NaN y gives NaN, as JAX and scipy."""
    x, y = _args("xlogy", x, y)
    return jnp.where((x != 0) | jnp.isnan(y), x * lax.log(y), jnp.zeros_like(x))


@xlogy.defjvp
def _xlogy_jvp(primals: tuple, tangents: tuple) -> tuple:
    x, y = primals
    xt, yt = tangents
    out = xlogy(x, y)
    # lax.log(y) keeps y's weak type (as JAX: grad(xlogy)(0.0) is weakly typed)
    return out, (xt * lax.log(y) + yt * x / y).astype(out.dtype)


@custom_jvp
def xlog1py(x: Any, y: Any) -> Any:
    """x * log1p(y), 0 where x == 0; a NaN y gives NaN, as JAX and scipy."""
    x, y = _args("xlog1py", x, y)
    return jnp.where((x != 0) | jnp.isnan(y), x * lax.log1p(y), jnp.zeros_like(x))


@xlog1py.defjvp
def _xlog1py_jvp(primals: tuple, tangents: tuple) -> tuple:
    x, y = primals
    xt, yt = tangents
    out = xlog1py(x, y)
    return out, (xt * lax.log1p(y) + yt * x / (1 + y)).astype(out.dtype)


def entr(x: Any) -> Any:
    """Elementwise entropy -x log x (0 at 0, -inf for x < 0)."""
    (x,) = _real("entr", x)
    return jnp.where(x < 0, -np.inf, -_xlogx(x))


def rel_entr(p: Any, q: Any) -> Any:
    """Relative entropy p log(p / q) (0 for p == 0 <= q, inf otherwise outside p, q > 0)."""
    p, q = _real("rel_entr", p, q)
    both = (p > 0) & (q > 0)
    one_zero = (p == 0) & (q >= 0)
    sp = jnp.where(both, p, 1)
    sq = jnp.where(both, q, 1)
    val = _xlogx(sp) - xlogy(sp, sq)
    return jnp.where(both, val, jnp.where(one_zero, jnp.zeros_like(p), np.inf))


def kl_div(p: Any, q: Any) -> Any:
    """Kullback-Leibler term p log(p / q) - p + q (q for p == 0 <= q, inf otherwise)."""
    p, q = _real("kl_div", p, q)
    both = (p > 0) & (q > 0)
    one_zero = (p == 0) & (q >= 0)
    sp = jnp.where(both, p, 1)
    sq = jnp.where(both, q, 1)
    val = _xlogx(sp) - xlogy(sp, sq) + sq - sp
    return jnp.where(both, val, jnp.where(one_zero, q, np.inf))


def logit(x: Any) -> Any:
    """log(x / (1 - x)); its derivative is 1 / (x (1 - x)), as JAX's (-0 at the infinities)."""
    (x,) = _args("logit", x)
    return _logit(x)


@custom_jvp
def _logit(x: Any) -> Any:
    return lax.log(lax.div(x, lax.sub(jnp.ones_like(x), x)))


@_logit.defjvp
def _logit_jvp(primals: tuple, tangents: tuple) -> tuple:
    (x,), (g,) = primals, tangents
    return _logit(x), lax.div(g, lax.mul(x, lax.sub(jnp.ones_like(x), x)))


def expit(x: Any) -> Any:
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    (x,) = _args("expit", x)
    return lax.logistic(x)


def boxcox(x: Any, lmbda: Any) -> Any:
    """Box-Cox transform (x^l - 1) / l (log x at l = 0)."""
    x, lmbda = _real("boxcox", x, lmbda)
    zero = lmbda == 0
    sl = jnp.where(zero, jnp.ones_like(lmbda), lmbda)
    lx = jnp.log(x)
    return jnp.where(zero, lx, jnp.expm1(sl * lx) / sl)


def boxcox1p(x: Any, lmbda: Any) -> Any:
    """Box-Cox transform of 1 + x."""
    x, lmbda = _real("boxcox1p", x, lmbda)
    zero = lmbda == 0
    sl = jnp.where(zero, jnp.ones_like(lmbda), lmbda)
    lx = jnp.log1p(x)
    return jnp.where(zero, lx, jnp.expm1(sl * lx) / sl)


def _axes(axis: Any, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    axis = (axis,) if isinstance(axis, int) else tuple(axis)
    for a in axis:
        if not -ndim <= a < ndim:  # ValueError, as JAX raises
            raise ValueError(f"axis {a} is out of bounds for array of dimension {ndim}")
    return tuple(a % ndim if ndim else a for a in axis)


def _as_dtype(x: Any, dt: Any) -> Any:
    return x if x.dtype == dt else lax.convert_element_type(x, dt)


def logsumexp(
    a: Any, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False, where: Any = None
) -> Any:
    """log(sum(b * exp(a))) over ``axis`` without overflow; with ``return_sign`` also the sign of
    the sum (for negative ``b``), else NaN where the sum is negative."""
    if b is not None:  # broadcast by the where, as JAX's (its ValueError names the three shapes)
        a, b = promote_dtypes_inexact("logsumexp", a, b)
        a = jnp.where(b != 0, a, -np.inf)
    else:
        (a,) = _args("logsumexp", a)
    if where is not None:
        a = jnp.where(where, a, -np.inf)
    axes = _axes(axis, a.ndim)
    # JAX's steps (its jaxpr): the max (initial -inf: an empty axis gives -inf) made finite and
    # stopped, kept with the reduced dims only to shift ``a``; the sum reduced as the result is
    # (of a complex ``a``, the max of the real parts, as JAX)
    amax = jnp.max(jnp.real(a), axis=axes, keepdims=keepdims, initial=-np.inf)
    amax = lax.stop_gradient(lax.select(jnp.isfinite(amax), amax, lax.full_like(amax, 0)))
    amax_dims = amax if keepdims else lax.expand_dims(amax, axes)
    e = lax.exp(lax.sub(a, _as_dtype(amax_dims, a.dtype)))
    if b is not None:
        e = lax.mul(e, b)
    s = jnp.sum(e, axis=axes, keepdims=keepdims)
    sign = lax.sign(s)
    if return_sign or _dkind(a.dtype) != "c":
        s = lax.abs(s)
    out = lax.add(lax.log(s), _as_dtype(amax, s.dtype))
    if return_sign:
        return out, sign
    if b is not None and _dkind(a.dtype) != "c":
        out = jnp.where(sign < 0, np.nan, out)
    return out


def softmax(x: Any, /, *, axis: Any = None) -> Any:
    """exp(x) / sum(exp(x)) over ``axis`` (all axes by default)."""
    (x,) = _args("softmax", x)
    axes = _axes(axis, x.ndim)
    m = lax.stop_gradient(jnp.max(x, axis=axes, keepdims=True))
    e = jnp.exp(x - m)
    return e / jnp.sum(e, axis=axes, keepdims=True)


def log_softmax(x: Any, /, *, axis: Any = None) -> Any:
    """x - logsumexp(x) over ``axis`` (all axes by default)."""
    (x,) = _args("log_softmax", x)
    axes = _axes(axis, x.ndim)
    shifted = x - lax.stop_gradient(jnp.max(x, axis=axes, keepdims=True))
    return shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=axes, keepdims=True))


# ---------------------------------------------------------------------------------------------
# Bessel, zeta, integrals, hypergeometric


def i0e(x: Any) -> Any:
    """exp(-|x|) I0(x)."""
    (x,) = _real("i0e", x)
    return lax.bessel_i0e(x)


def i0(x: Any) -> Any:
    """Modified Bessel function of order 0."""
    (x,) = _real("i0", x)
    return lax.exp(lax.abs(x)) * lax.bessel_i0e(x)


def i1e(x: Any) -> Any:
    """exp(-|x|) I1(x)."""
    (x,) = _real("i1e", x)
    return lax.bessel_i1e(x)


def i1(x: Any) -> Any:
    """Modified Bessel function of order 1."""
    (x,) = _real("i1", x)
    return lax.exp(lax.abs(x)) * lax.bessel_i1e(x)


def bessel_jn(z: Any, *, v: int, n_iter: int = 50) -> Any:
    """Bessel functions of the first kind J_0 ... J_v at ``z``, stacked on a new leading axis."""
    v = operator.index(core.concrete_or_error(v, "v argument of bessel_jn"))
    if v < 0:
        raise ValueError(f"bessel_jn: v must be a non-negative integer, got {v}")
    (z,) = _real("bessel_jn", z)
    return jnp.stack([P.jv(jnp.full_like(z, k), z) for k in range(v + 1)])


def zeta(x: Any, q: Any | None = None) -> Any:
    """Hurwitz zeta function sum_n (n + q)^-x (pass ``q``; as JAX, q=None is not implemented)."""
    if q is None:
        raise NotImplementedError(
            "Riemann zeta function not implemented; pass q != None to compute the Hurwitz Zeta function."
        )
    x, q = _real("zeta", x, q)
    return lax.zeta(x, q)


def exp1(x: Any) -> Any:
    """Exponential integral E1(x)."""
    (x,) = _real("exp1", x)
    return P.exp1_p.bind(x)


def expi(x: Any) -> Any:
    """Exponential integral Ei(x)."""
    (x,) = _real("expi", x)
    return P.expi_p.bind(x)


def expn(n: Any, x: Any) -> Any:
    """Generalized exponential integral E_n(x) (n a non-negative integer)."""
    n, x = _real("expn", n, x)
    return P.expn(n, x)


def spence(x: Any) -> Any:
    """Spence's function (dilogarithm in scipy's convention), x >= 0."""
    (x,) = _real("spence", x)
    return P.spence_p.bind(x)


def fresnel(x: Any) -> tuple:
    """Fresnel integrals (S(x), C(x))."""
    (x,) = _real("fresnel", x)
    return P.fresnel_s_p.bind(x), P.fresnel_c_p.bind(x)


def sici(x: Any) -> tuple:
    """Sine and cosine integrals (Si(x), Ci(x))."""
    (x,) = _real("sici", x)
    return P.si_p.bind(x), P.ci_p.bind(x)


def hyp1f1(a: Any, b: Any, x: Any) -> Any:
    """Confluent hypergeometric function 1F1(a; b; x); differentiable in ``x``."""
    a, b, x = _real("hyp1f1", a, b, x)
    return P.hyp1f1(a, b, x)


def hyp2f1(a: Any, b: Any, c: Any, x: Any) -> Any:
    """Gauss hypergeometric function 2F1(a, b; c; x); differentiable in ``x``."""
    a, b, c, x = _real("hyp2f1", a, b, c, x)
    return P.hyp2f1(a, b, c, x)


def owens_t(h: Any, a: Any) -> Any:
    """Owen's T function T(h, a); differentiable in both."""
    h, a = _real("owens_t", h, a)
    return P.owens_t_p.bind(h, a)


def wofz(z: Any) -> Any:
    """The Faddeeva function exp(-z^2) erfc(-i z) (complex)."""
    z = jnp.asarray(z)
    if _dkind(z.dtype) != "c":
        z = z.astype(jnp.result_type(z.dtype, np.complex64))
    return P.wofz_p.bind(z)


def sph_harm_y(n: Any, m: Any, theta: Any, phi: Any, diff_n: int | None = None, n_max: int | None = None) -> Any:
    """Spherical harmonics Y_n^m(theta, phi) (theta the polar angle), as scipy.special.sph_harm_y."""
    if diff_n not in (None, 0):
        raise NotImplementedError("sph_harm_y: derivatives (diff_n > 0) are not implemented")
    theta, phi = _real("sph_harm_y", theta, phi)
    n, m, theta, phi = broadcast_arrays("sph_harm_y", jnp.asarray(n), jnp.asarray(m), theta, phi)
    if n_max is not None and not isinstance(n, core.Tracer) and np.any(np.asarray(n) > n_max):
        raise ValueError(f"sph_harm_y: n exceeds n_max={n_max}")
    return P.sph_harm_y_p.bind(n.astype(theta.dtype), m.astype(theta.dtype), theta, phi)


# eager calls of composites run compiled once a call signature repeats (fjax/_eager_compile.py)
from fjax import _eager_compile as _ec  # noqa: E402

_ec.install(globals(), _ec.SPECIAL)
del _ec
