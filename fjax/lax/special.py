"""Special-function primitives of ``jax.lax`` beyond the elementary ones in ``lax.py``:
incomplete gamma and beta functions, the Hurwitz zeta function, exponentially scaled modified
Bessel functions, and the derivatives JAX exposes as primitives (``igamma_grad_a``,
``random_gamma_grad``).

Eager semantics call scipy.special in float64 and round to the operand dtype, except
``igamma_grad_a``/``random_gamma_grad``, which scipy lacks: they are computed here by
forward-mode differentiation (with respect to ``a``) of the power series of P(a, x) and of
Legendre's continued fraction for Q(a, x), in float64. Under ``jit`` they run as host steps.

Derivatives follow JAX: ``igamma``/``igammac`` in both arguments (``a`` through
``igamma_grad_a``), ``regularized_incomplete_beta`` in ``x`` only, ``zeta`` in both (in x by a
series, as JAX's ``jax.scipy.special.zeta``; its ``lax.zeta`` has no rule), the Bessel functions
in ``x``. ``igamma_grad_a`` is also differentiable in ``x`` here (JAX has no
rule for it); its derivative in ``a`` and that of ``random_gamma_grad`` raise NotImplementedError,
as in JAX.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fjax.interpreters import ad
from fjax.lax import lax as _lax
from fjax.lax.lax import (
    _bind,
    _const,
    add,
    digamma,
    div,
    exp,
    full_like,
    lgamma,
    log,
    log1p,
    mul,
    neg,
    select,
    sign,
    standard_naryop,
    sub,
)

__all__ = [
    "bessel_i0e",
    "bessel_i1e",
    "betainc",
    "igamma",
    "igamma_grad_a",
    "igammac",
    "random_gamma_grad",
    "zeta",
    "bessel_i0e_p",
    "bessel_i1e_p",
    "igamma_grad_a_p",
    "igamma_p",
    "igammac_p",
    "random_gamma_grad_p",
    "regularized_incomplete_beta_p",
    "zeta_p",
]

_float = "f"


def _scipy(name: str) -> Any:
    """scipy.special.<name>, imported on first use (importing scipy.special costs ~0.4 s)."""

    def call(*args: Any) -> Any:
        import scipy.special  # noqa: PLC0415

        return getattr(scipy.special, name)(*args)

    call.__name__ = name
    return call


def _via_f64(fn: Any) -> Any:
    """An impl evaluating ``fn`` on float64 copies of the operands, rounded to their dtype."""

    def impl(*args: np.ndarray) -> np.ndarray:
        dt = np.result_type(*args)
        with np.errstate(all="ignore"):
            out = fn(*(np.asarray(a, np.float64) for a in args))
        return np.asarray(out).astype(dt)

    impl.__name__ = getattr(fn, "__name__", "impl")
    return impl


# ---------------------------------------------------------------------------------------------
# d/da of the regularized incomplete gamma function, in float64 numpy

_TINY = 1e-300
_MAX_ITERS = 20000


def _series_terms(a: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """S and dS/da of P(a, x) = x^a e^-x / Gamma(a+1) * S, S = sum_n x^n / ((a+1)...(a+n))."""
    t = np.ones_like(a)
    dt = np.zeros_like(a)
    s = t.copy()
    ds = dt.copy()
    active = np.ones(a.shape, bool)
    for n in range(1, _MAX_ITERS):
        r = x / (a + n)
        dt = np.where(active, dt * r - t * r / (a + n), dt)
        t = np.where(active, t * r, t)
        s = s + np.where(active, t, 0.0)
        ds = ds + np.where(active, dt, 0.0)
        active &= (np.abs(t) > 1e-17 * np.abs(s)) | (np.abs(dt) > 1e-17 * np.abs(ds))
        if not active.any():
            break
    return s, ds


def _cf_terms(a: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """h and dh/da of Q(a, x) = x^a e^-x / Gamma(a) * h, h Legendre's continued fraction
    evaluated by the modified Lentz method, differentiated step by step."""
    b = x + 1.0 - a
    db = -1.0
    c = np.full_like(a, 1.0 / _TINY)
    dc = np.zeros_like(a)
    d = 1.0 / b
    dd = 1.0 / (b * b)
    h = d.copy()
    dh = dd.copy()
    active = np.ones(a.shape, bool)
    for i in range(1, _MAX_ITERS):
        an = -i * (i - a)
        dan = float(i)
        b = b + 2.0
        dpre = an * d + b
        ddpre = dan * d + an * dd + db
        dpre = np.where(np.abs(dpre) < _TINY, _TINY, dpre)
        cn = b + an / c
        dcn = db + dan / c - an * dc / (c * c)
        cn = np.where(np.abs(cn) < _TINY, _TINY, cn)
        d_new = 1.0 / dpre
        dd_new = -ddpre / (dpre * dpre)
        delta = d_new * cn
        ddelta = dd_new * cn + d_new * dcn
        h_new = h * delta
        dh_new = dh * delta + h * ddelta
        c = np.where(active, cn, c)
        dc = np.where(active, dcn, dc)
        d = np.where(active, d_new, d)
        dd = np.where(active, dd_new, dd)
        h = np.where(active, h_new, h)
        dh = np.where(active, dh_new, dh)
        active &= (np.abs(delta - 1.0) > 1e-16) | (np.abs(ddelta) > 1e-16 * np.abs(dh / np.where(h == 0, 1, h)))
        if not active.any():
            break
    return h, dh


def _igamma_derivs(a: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dP/da, dP/da divided by the density x^(a-1) e^-x / Gamma(a)) elementwise, float64."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    dpda = np.zeros(a.shape)
    ratio = np.zeros(a.shape)
    bad = ~(a > 0) | ~(x >= 0) | np.isnan(a) | np.isnan(x)
    edge = ~bad & ((x == 0) | np.isinf(x) | np.isinf(a))
    ok = ~bad & ~edge
    use_series = ok & ((x < a + 1.0) | (x < 1.0))
    use_cf = ok & ~use_series
    with np.errstate(all="ignore"):
        if use_series.any():
            aa, xx = a[use_series], x[use_series]
            s, ds = _series_terms(aa, xx)
            dlp = np.log(xx) - _scipy("digamma")(aa + 1.0)
            inner = dlp * s + ds  # d/da of S * prefactor, over the prefactor
            pref = np.exp(aa * np.log(xx) - xx - _scipy("gammaln")(aa + 1.0))
            dpda[use_series] = pref * inner
            ratio[use_series] = inner * xx / aa
        if use_cf.any():
            aa, xx = a[use_cf], x[use_cf]
            h, dh = _cf_terms(aa, xx)
            dlp = np.log(xx) - _scipy("digamma")(aa)
            inner = dlp * h + dh  # dQ/da over the prefactor x^a e^-x / Gamma(a)
            pref = np.exp(aa * np.log(xx) - xx - _scipy("gammaln")(aa))
            dpda[use_cf] = -pref * inner
            ratio[use_cf] = -inner * xx
    dpda[bad] = np.nan
    ratio[bad] = np.nan
    return dpda, ratio


def _igamma_grad_a_f64(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    return _igamma_derivs(a, x)[0]


def _random_gamma_grad_f64(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    # implicit reparameterization: dx/da = -(dP/da) / (dP/dx) at P(a, x) = u fixed
    return -_igamma_derivs(a, x)[1]


# ---------------------------------------------------------------------------------------------
# primitives


def _gamma_density(a: Any, x: Any) -> Any:
    """x^(a-1) e^-x / Gamma(a), the x-derivative of igamma (written with lax ops)."""
    return exp(sub(sub(mul(sub(a, _const(a, 1)), log(x)), x), lgamma(a)))


igamma_p = standard_naryop("igamma", _via_f64(_scipy("gammainc")), _float)
igammac_p = standard_naryop("igammac", _via_f64(_scipy("gammaincc")), _float)
igamma_grad_a_p = standard_naryop("igamma_grad_a", _via_f64(_igamma_grad_a_f64), _float)
random_gamma_grad_p = standard_naryop("random_gamma_grad", _via_f64(_random_gamma_grad_f64), _float)

ad.defjvp(
    igamma_p,
    lambda g, a, x: mul(g, igamma_grad_a(a, x)),
    lambda g, a, x: mul(g, _gamma_density(a, x)),
)
ad.defjvp(
    igammac_p,
    lambda g, a, x: mul(g, neg(igamma_grad_a(a, x))),
    lambda g, a, x: mul(g, neg(_gamma_density(a, x))),
)


def _igamma_grad_a_jvp_a(g: Any, a: Any, x: Any) -> Any:
    raise NotImplementedError("Differentiation rule for 'igamma_grad_a' with respect to a is not implemented")


ad.defjvp(
    igamma_grad_a_p,
    _igamma_grad_a_jvp_a,
    # d/dx dP/da = d/da dP/dx = density * (log x - digamma(a))
    lambda g, a, x: mul(g, mul(_gamma_density(a, x), sub(log(x), digamma(a)))),
)


def _random_gamma_grad_jvp(g: Any, a: Any, x: Any) -> Any:
    raise NotImplementedError("Differentiation rule for 'random_gamma_grad' is not implemented")


ad.defjvp(random_gamma_grad_p, _random_gamma_grad_jvp, _random_gamma_grad_jvp)

regularized_incomplete_beta_p = standard_naryop("regularized_incomplete_beta", _via_f64(_scipy("betainc")), _float)


def _betainc_grad_not_implemented(g: Any, a: Any, b: Any, x: Any) -> Any:
    raise ValueError("Betainc gradient with respect to a and b not supported.")


def _betainc_gradx(g: Any, a: Any, b: Any, x: Any) -> Any:
    one = _const(a, 1)
    lbeta = sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
    partial_x = exp(sub(add(mul(sub(b, one), log1p(neg(x))), mul(sub(a, one), log(x))), lbeta))
    return mul(partial_x, g)


ad.defjvp(regularized_incomplete_beta_p, _betainc_grad_not_implemented, _betainc_grad_not_implemented, _betainc_gradx)

zeta_p = standard_naryop("zeta", _via_f64(_scipy("zeta")), _float)


def _zeta_dx(x: Any, q: Any, terms: int = 16) -> Any:
    """d/dx zeta(x, q) = -sum_n log(n + q) (n + q)^-x: the first ``terms`` summands directly, the
    rest by Euler-Maclaurin on g(u) = log(u) u^-x from u = q + terms (the integral, g/2 and the
    g'/12 correction; the next one, with g's third derivative, is below 1e-7 relative for x > 1)."""
    one = _const(x, 1)
    total = full_like(x, 0)
    for n in range(terms):
        u = add(q, _const(q, n))
        total = add(total, mul(log(u), _lax.pow(u, neg(x))))
    u = add(q, _const(q, terms))
    lu, xm1 = log(u), sub(x, one)
    # integral of log(t) t^-x over [u, inf) = u^(1-x) (log(u) / (x-1) + 1 / (x-1)^2)
    tail = mul(_lax.pow(u, neg(xm1)), add(div(lu, xm1), div(one, mul(xm1, xm1))))
    g_u = mul(lu, _lax.pow(u, neg(x)))
    dg_u = mul(_lax.pow(u, neg(add(x, one))), sub(one, mul(x, lu)))
    total = add(add(total, tail), sub(mul(g_u, _const(x, 0.5)), div(dg_u, _const(x, 12))))
    return neg(total)


def _zeta_jvp_x(g: Any, x: Any, q: Any) -> Any:
    # JAX's jax.scipy.special.zeta differentiates in x through a series as well
    return mul(g, _zeta_dx(x, q))


ad.defjvp(zeta_p, _zeta_jvp_x, lambda g, x, q: mul(g, mul(neg(x), zeta(add(x, _const(x, 1)), q))))

bessel_i0e_p = _lax.standard_unop("bessel_i0e", _via_f64(_scipy("i0e")), _float)
bessel_i1e_p = _lax.standard_unop("bessel_i1e", _via_f64(_scipy("i1e")), _float)

# d/dx i0e(x) = i1e(x) - sign(x) i0e(x)
ad.defjvp2(bessel_i0e_p, lambda g, ans, x: mul(g, sub(bessel_i1e(x), mul(sign(x), ans))))


def _bessel_i1e_jvp(g: Any, ans: Any, x: Any) -> Any:
    # d/dx i1e(x) = i0e(x) - i1e(x) (sign(x) + 1/x); the limit at x = 0 is 1/2, taken (as JAX) for
    # every x that is not above eps in magnitude, NaN included
    eps = _const(x, float(np.finfo(x.dtype).eps))
    big = _lax.gt(_lax.abs(x), eps)
    safe_x = select(big, x, full_like(x, eps))
    d = sub(bessel_i0e(safe_x), mul(ans, add(sign(safe_x), div(_const(x, 1), safe_x))))
    return mul(g, select(big, d, full_like(x, 0.5)))


ad.defjvp2(bessel_i1e_p, _bessel_i1e_jvp)


# ---------------------------------------------------------------------------------------------
# public wrappers


def igamma(a: Any, x: Any) -> Any:
    """Regularized lower incomplete gamma function P(a, x) (elementwise, same float dtype)."""
    return _bind(igamma_p, a, x)


def igammac(a: Any, x: Any) -> Any:
    """Regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return _bind(igammac_p, a, x)


def igamma_grad_a(a: Any, x: Any) -> Any:
    """Derivative of :func:`igamma` with respect to ``a``."""
    return _bind(igamma_grad_a_p, a, x)


def random_gamma_grad(a: Any, x: Any) -> Any:
    """Derivative of a standard gamma sample ``x`` with respect to its shape ``a`` (implicit
    reparameterization: ``-(dP/da) / (dP/dx)`` at fixed P(a, x))."""
    return _bind(random_gamma_grad_p, a, x)


def regularized_incomplete_beta(a: Any, b: Any, x: Any) -> Any:
    """Regularized incomplete beta function I_x(a, b)."""
    return _bind(regularized_incomplete_beta_p, a, b, x)


betainc = regularized_incomplete_beta


def zeta(x: Any, q: Any) -> Any:
    """Hurwitz zeta function sum_n (n + q)^-x."""
    return _bind(zeta_p, x, q)


def bessel_i0e(x: Any) -> Any:
    """Exponentially scaled modified Bessel function of order 0: exp(-|x|) I0(x)."""
    return _bind(bessel_i0e_p, x)


def bessel_i1e(x: Any) -> Any:
    """Exponentially scaled modified Bessel function of order 1: exp(-|x|) I1(x)."""
    return _bind(bessel_i1e_p, x)
