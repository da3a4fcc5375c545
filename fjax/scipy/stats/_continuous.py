"""Continuous distributions of ``jax.scipy.stats`` (one namespace class per family; the public
modules are built from them in ``__init__``). Formulas follow scipy's parameterization with
``loc``/``scale``; everything is written with fjax ops, so it is differentiable in ``x`` and the
parameters wherever the underlying special functions are."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fjax import lax
from fjax import numpy as jnp
from fjax.scipy import special as sp
from fjax.scipy.special import _args

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _std(name: str, x: Any, *params: Any) -> list:
    return _args(name, x, *params)


def _log_or_neginf(x: Any) -> Any:
    return jnp.log(x)


class norm:  # noqa: N801
    """Normal distribution."""

    @staticmethod
    def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("norm.logpdf", x, loc, scale)
        z = (x - loc) / scale
        return -0.5 * z * z - jnp.log(scale) - _LOG_SQRT_2PI

    @staticmethod
    def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.exp(norm.logpdf(x, loc, scale))

    @staticmethod
    def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("norm.cdf", x, loc, scale)
        return sp.ndtr((x - loc) / scale)

    @staticmethod
    def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("norm.logcdf", x, loc, scale)
        return sp.log_ndtr((x - loc) / scale)

    @staticmethod
    def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("norm.sf", x, loc, scale)
        return sp.ndtr((loc - x) / scale)

    @staticmethod
    def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("norm.logsf", x, loc, scale)
        return sp.log_ndtr((loc - x) / scale)

    @staticmethod
    def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
        q, loc, scale = _std("norm.ppf", q, loc, scale)
        return sp.ndtri(q) * scale + loc

    @staticmethod
    def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
        q, loc, scale = _std("norm.isf", q, loc, scale)
        return loc - sp.ndtri(q) * scale


class uniform:  # noqa: N801
    """Uniform distribution on [loc, loc + scale]."""

    @staticmethod
    def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("uniform.logpdf", x, loc, scale)
        inside = (x >= loc) & (x <= loc + scale)
        return jnp.where(inside, -jnp.log(scale), -np.inf)

    @staticmethod
    def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.exp(uniform.logpdf(x, loc, scale))

    @staticmethod
    def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("uniform.cdf", x, loc, scale)
        return jnp.clip((x - loc) / scale, 0, 1)

    @staticmethod
    def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
        q, loc, scale = _std("uniform.ppf", q, loc, scale)
        return jnp.where((q >= 0) & (q <= 1), loc + q * scale, np.nan)


class expon:  # noqa: N801
    """Exponential distribution."""

    @staticmethod
    def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("expon.logpdf", x, loc, scale)
        z = (x - loc) / scale
        return jnp.where(z < 0, -np.inf, -z - jnp.log(scale))

    @staticmethod
    def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.exp(expon.logpdf(x, loc, scale))

    @staticmethod
    def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("expon.cdf", x, loc, scale)
        z = (x - loc) / scale
        return jnp.where(z < 0, 0.0, -jnp.expm1(-jnp.maximum(z, 0)))

    @staticmethod
    def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("expon.logcdf", x, loc, scale)
        z = (x - loc) / scale
        return jnp.where(z < 0, -np.inf, jnp.log(-jnp.expm1(-jnp.maximum(z, 0))))

    @staticmethod
    def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("expon.sf", x, loc, scale)
        z = (x - loc) / scale
        return jnp.where(z < 0, 1.0, jnp.exp(-jnp.maximum(z, 0)))

    @staticmethod
    def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("expon.logsf", x, loc, scale)
        z = (x - loc) / scale
        return jnp.where(z < 0, 0.0, -z)

    @staticmethod
    def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
        q, loc, scale = _std("expon.ppf", q, loc, scale)
        return jnp.where((q >= 0) & (q <= 1), -jnp.log1p(-q) * scale + loc, np.nan)


class laplace:  # noqa: N801
    """Laplace distribution."""

    @staticmethod
    def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("laplace.logpdf", x, loc, scale)
        return -jnp.abs((x - loc) / scale) - jnp.log(2 * scale)

    @staticmethod
    def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.exp(laplace.logpdf(x, loc, scale))

    @staticmethod
    def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("laplace.cdf", x, loc, scale)
        z = (x - loc) / scale
        return jnp.where(z < 0, 0.5 * jnp.exp(jnp.minimum(z, 0)), 1 - 0.5 * jnp.exp(-jnp.maximum(z, 0)))


class logistic:  # noqa: N801
    """Logistic distribution."""

    @staticmethod
    def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("logistic.logpdf", x, loc, scale)
        z = jnp.abs((x - loc) / scale)
        return -z - 2 * jnp.log1p(jnp.exp(-z)) - jnp.log(scale)

    @staticmethod
    def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.exp(logistic.logpdf(x, loc, scale))

    @staticmethod
    def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("logistic.cdf", x, loc, scale)
        return sp.expit((x - loc) / scale)

    @staticmethod
    def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("logistic.sf", x, loc, scale)
        return sp.expit((loc - x) / scale)

    @staticmethod
    def ppf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("logistic.ppf", x, loc, scale)
        return sp.logit(x) * scale + loc

    @staticmethod
    def isf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("logistic.isf", x, loc, scale)
        return loc - sp.logit(x) * scale


class cauchy:  # noqa: N801
    """Cauchy distribution."""

    @staticmethod
    def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("cauchy.logpdf", x, loc, scale)
        z = (x - loc) / scale
        return -math.log(math.pi) - jnp.log(scale) - jnp.log1p(z * z)

    @staticmethod
    def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.exp(cauchy.logpdf(x, loc, scale))

    @staticmethod
    def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("cauchy.cdf", x, loc, scale)
        z = (x - loc) / scale
        # for z < 0, atan(1/|z|)/pi keeps the lower tail accurate
        return jnp.where(z < 0, jnp.arctan2(1.0, -z) / math.pi, 0.5 + jnp.arctan(z) / math.pi)

    @staticmethod
    def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.log(cauchy.cdf(x, loc, scale))

    @staticmethod
    def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("cauchy.sf", x, loc, scale)
        return cauchy.cdf(-x, -loc, scale)

    @staticmethod
    def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.log(cauchy.sf(x, loc, scale))

    @staticmethod
    def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
        q, loc, scale = _std("cauchy.ppf", q, loc, scale)
        return loc + scale * jnp.tan(math.pi * (q - 0.5))

    @staticmethod
    def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
        q, loc, scale = _std("cauchy.isf", q, loc, scale)
        return loc + scale * jnp.tan(math.pi * (0.5 - q))


class gumbel_r:  # noqa: N801
    """Right-skewed Gumbel distribution."""

    @staticmethod
    def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("gumbel_r.logpdf", x, loc, scale)
        z = (x - loc) / scale
        return -z - jnp.exp(-z) - jnp.log(scale)

    @staticmethod
    def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.exp(gumbel_r.logpdf(x, loc, scale))

    @staticmethod
    def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("gumbel_r.logcdf", x, loc, scale)
        return -jnp.exp(-(x - loc) / scale)

    @staticmethod
    def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.exp(gumbel_r.logcdf(x, loc, scale))

    @staticmethod
    def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return -jnp.expm1(gumbel_r.logcdf(x, loc, scale))

    @staticmethod
    def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.log(gumbel_r.sf(x, loc, scale))

    @staticmethod
    def ppf(p: Any, loc: Any = 0, scale: Any = 1) -> Any:
        p, loc, scale = _std("gumbel_r.ppf", p, loc, scale)
        return jnp.where((p >= 0) & (p <= 1), loc - scale * jnp.log(-jnp.log(p)), np.nan)


class gumbel_l:  # noqa: N801
    """Left-skewed Gumbel distribution."""

    @staticmethod
    def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("gumbel_l.logpdf", x, loc, scale)
        z = (x - loc) / scale
        return z - jnp.exp(z) - jnp.log(scale)

    @staticmethod
    def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.exp(gumbel_l.logpdf(x, loc, scale))

    @staticmethod
    def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, loc, scale = _std("gumbel_l.logsf", x, loc, scale)
        return -jnp.exp((x - loc) / scale)

    @staticmethod
    def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.exp(gumbel_l.logsf(x, loc, scale))

    @staticmethod
    def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return -jnp.expm1(gumbel_l.logsf(x, loc, scale))

    @staticmethod
    def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.log(gumbel_l.cdf(x, loc, scale))

    @staticmethod
    def ppf(p: Any, loc: Any = 0, scale: Any = 1) -> Any:
        p, loc, scale = _std("gumbel_l.ppf", p, loc, scale)
        return jnp.where((p >= 0) & (p <= 1), loc + scale * jnp.log(-jnp.log1p(-p)), np.nan)


class gamma:  # noqa: N801
    """Gamma distribution with shape ``a``."""

    @staticmethod
    def logpdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, a, loc, scale = _std("gamma.logpdf", x, a, loc, scale)
        y = (x - loc) / scale
        safe_y = jnp.where(y < 0, 1.0, y)
        out = sp.xlogy(a - 1, safe_y) - safe_y - lax.lgamma(a) - jnp.log(scale)
        return jnp.where(y < 0, -np.inf, out)

    @staticmethod
    def pdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.exp(gamma.logpdf(x, a, loc, scale))

    @staticmethod
    def cdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, a, loc, scale = _std("gamma.cdf", x, a, loc, scale)
        return sp.gammainc(a, jnp.maximum((x - loc) / scale, 0))

    @staticmethod
    def logcdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.log(gamma.cdf(x, a, loc, scale))

    @staticmethod
    def sf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, a, loc, scale = _std("gamma.sf", x, a, loc, scale)
        return sp.gammaincc(a, jnp.maximum((x - loc) / scale, 0))

    @staticmethod
    def logsf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.log(gamma.sf(x, a, loc, scale))


class chi2:  # noqa: N801
    """Chi-square distribution with ``df`` degrees of freedom (gamma with a = df/2, scale 2)."""

    @staticmethod
    def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, df, loc, scale = _std("chi2.logpdf", x, df, loc, scale)
        return gamma.logpdf(x, df / 2, loc, 2 * scale)

    @staticmethod
    def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.exp(chi2.logpdf(x, df, loc, scale))

    @staticmethod
    def cdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, df, loc, scale = _std("chi2.cdf", x, df, loc, scale)
        return gamma.cdf(x, df / 2, loc, 2 * scale)

    @staticmethod
    def logcdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.log(chi2.cdf(x, df, loc, scale))

    @staticmethod
    def sf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, df, loc, scale = _std("chi2.sf", x, df, loc, scale)
        return gamma.sf(x, df / 2, loc, 2 * scale)

    @staticmethod
    def logsf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.log(chi2.sf(x, df, loc, scale))


class beta:  # noqa: N801
    """Beta distribution on [loc, loc + scale]."""

    @staticmethod
    def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, a, b, loc, scale = _std("beta.logpdf", x, a, b, loc, scale)
        y = (x - loc) / scale
        inside = (y >= 0) & (y <= 1)
        sy = jnp.where(inside, y, 0.5)
        out = sp.xlogy(a - 1, sy) + sp.xlog1py(b - 1, -sy) - sp.betaln(a, b) - jnp.log(scale)
        return jnp.where(inside, out, -np.inf)

    @staticmethod
    def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.exp(beta.logpdf(x, a, b, loc, scale))

    @staticmethod
    def cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, a, b, loc, scale = _std("beta.cdf", x, a, b, loc, scale)
        return sp.betainc(a, b, jnp.clip((x - loc) / scale, 0, 1))

    @staticmethod
    def logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.log(beta.cdf(x, a, b, loc, scale))

    @staticmethod
    def sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, a, b, loc, scale = _std("beta.sf", x, a, b, loc, scale)
        return sp.betainc(b, a, 1 - jnp.clip((x - loc) / scale, 0, 1))

    @staticmethod
    def logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.log(beta.sf(x, a, b, loc, scale))


class t:  # noqa: N801
    """Student's t distribution."""

    @staticmethod
    def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, df, loc, scale = _std("t.logpdf", x, df, loc, scale)
        z = (x - loc) / scale
        norm_const = lax.lgamma((df + 1) / 2) - lax.lgamma(df / 2) - 0.5 * jnp.log(df * math.pi)
        return norm_const - jnp.log(scale) - (df + 1) / 2 * jnp.log1p(z * z / df)

    @staticmethod
    def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.exp(t.logpdf(x, df, loc, scale))


class pareto:  # noqa: N801
    """Pareto distribution with shape ``b`` (support y = (x - loc) / scale >= 1)."""

    @staticmethod
    def logpdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, b, loc, scale = _std("pareto.logpdf", x, b, loc, scale)
        y = (x - loc) / scale
        sy = jnp.where(y >= 1, y, 1.0)
        return jnp.where(y >= 1, jnp.log(b) - jnp.log(scale) - (b + 1) * jnp.log(sy), -np.inf)

    @staticmethod
    def pdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.exp(pareto.logpdf(x, b, loc, scale))

    @staticmethod
    def logsf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, b, loc, scale = _std("pareto.logsf", x, b, loc, scale)
        y = (x - loc) / scale
        return jnp.where(y >= 1, -b * jnp.log(jnp.where(y >= 1, y, 1.0)), 0.0)

    @staticmethod
    def sf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.exp(pareto.logsf(x, b, loc, scale))

    @staticmethod
    def cdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return -jnp.expm1(pareto.logsf(x, b, loc, scale))

    @staticmethod
    def logcdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.log(pareto.cdf(x, b, loc, scale))

    @staticmethod
    def ppf(q: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
        q, b, loc, scale = _std("pareto.ppf", q, b, loc, scale)
        return jnp.where((q >= 0) & (q <= 1), scale * jnp.exp(-jnp.log1p(-q) / b) + loc, np.nan)


class vonmises:  # noqa: N801
    """von Mises distribution (circular, concentration ``kappa``)."""

    @staticmethod
    def logpdf(x: Any, kappa: Any) -> Any:
        x, kappa = _std("vonmises.logpdf", x, kappa)
        return kappa * (jnp.cos(x) - 1) - math.log(2 * math.pi) - jnp.log(lax.bessel_i0e(kappa))

    @staticmethod
    def pdf(x: Any, kappa: Any) -> Any:
        return jnp.exp(vonmises.logpdf(x, kappa))


class wrapcauchy:  # noqa: N801
    """Wrapped Cauchy distribution on [0, 2 pi] with shape 0 < c < 1."""

    @staticmethod
    def logpdf(x: Any, c: Any) -> Any:
        x, c = _std("wrapcauchy.logpdf", x, c)
        val = jnp.log1p(-c * c) - math.log(2 * math.pi) - jnp.log1p(c * c - 2 * c * jnp.cos(x))
        val = jnp.where((x >= 0) & (x <= 2 * math.pi), val, -np.inf)
        return jnp.where((c > 0) & (c < 1), val, np.nan)

    @staticmethod
    def pdf(x: Any, c: Any) -> Any:
        return jnp.exp(wrapcauchy.logpdf(x, c))


class gennorm:  # noqa: N801
    """Generalized normal distribution with shape ``beta`` (density ~ exp(-|x|^beta))."""

    @staticmethod
    def logpdf(x: Any, beta: Any) -> Any:
        x, beta = _std("gennorm.logpdf", x, beta)
        return jnp.log(0.5 * beta) - lax.lgamma(1 / beta) - jnp.abs(x) ** beta

    @staticmethod
    def pdf(x: Any, beta: Any) -> Any:
        return jnp.exp(gennorm.logpdf(x, beta))

    @staticmethod
    def cdf(x: Any, beta: Any) -> Any:
        x, beta = _std("gennorm.cdf", x, beta)
        return 0.5 * (1 + jnp.sign(x) * sp.gammainc(1 / beta, jnp.abs(x) ** beta))


def _log_ndtr_diff(hi: Any, lo: Any) -> Any:
    """log(ndtr(hi) - ndtr(lo)) for hi >= lo, stable in both tails (mirror to the lower tail)."""
    flip = lo > 0
    a = jnp.where(flip, -hi, lo)
    b = jnp.where(flip, -lo, hi)
    lb = sp.log_ndtr(b)
    la = sp.log_ndtr(a)
    return lb + jnp.log1p(-jnp.exp(la - lb))


class truncnorm:  # noqa: N801
    """Normal distribution truncated to [a, b] (in standard units)."""

    @staticmethod
    def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, a, b, loc, scale = _std("truncnorm.logpdf", x, a, b, loc, scale)
        z = (x - loc) / scale
        val = -0.5 * z * z - _LOG_SQRT_2PI - jnp.log(scale) - _log_ndtr_diff(b, a)
        return jnp.where((z >= a) & (z <= b), val, -np.inf)

    @staticmethod
    def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.exp(truncnorm.logpdf(x, a, b, loc, scale))

    @staticmethod
    def logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, a, b, loc, scale = _std("truncnorm.logcdf", x, a, b, loc, scale)
        z = jnp.clip((x - loc) / scale, a, b)
        val = _log_ndtr_diff(z, a) - _log_ndtr_diff(b, a)
        return jnp.where(z <= a, -np.inf, jnp.where(z >= b, 0.0, val))

    @staticmethod
    def cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.exp(truncnorm.logcdf(x, a, b, loc, scale))

    @staticmethod
    def logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
        x, a, b, loc, scale = _std("truncnorm.logsf", x, a, b, loc, scale)
        z = jnp.clip((x - loc) / scale, a, b)
        val = _log_ndtr_diff(b, z) - _log_ndtr_diff(b, a)
        return jnp.where(z >= b, -np.inf, jnp.where(z <= a, 0.0, val))

    @staticmethod
    def sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
        return jnp.exp(truncnorm.logsf(x, a, b, loc, scale))


class dirichlet:  # noqa: N801
    """Dirichlet distribution; ``x`` has the categories on its first axis (as scipy)."""

    @staticmethod
    def logpdf(x: Any, alpha: Any) -> Any:
        x, alpha = jnp.asarray(x), jnp.asarray(alpha)
        (x,) = _args("dirichlet.logpdf", x)
        alpha = alpha.astype(x.dtype)
        if alpha.ndim != 1:
            raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
        if x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
            raise ValueError(
                "`x` must have either the same number of entries as `alpha` or one entry fewer; "
                f"got x.shape={x.shape}, alpha.shape={alpha.shape}"
            )
        if x.shape[0] != alpha.shape[0]:
            x = jnp.concatenate([x, (1 - jnp.sum(x, axis=0))[None]], axis=0)
        a = alpha.reshape(alpha.shape + (1,) * (x.ndim - 1))
        normalize = jnp.sum(lax.lgamma(alpha)) - lax.lgamma(jnp.sum(alpha))
        val = jnp.sum(sp.xlogy(a - 1, x), axis=0) - normalize
        ok = jnp.all(x >= 0, axis=0) & (jnp.abs(jnp.sum(x, axis=0) - 1) < 10 * jnp.finfo(x.dtype).eps * x.shape[0])
        return jnp.where(ok, val, -np.inf)

    @staticmethod
    def pdf(x: Any, alpha: Any) -> Any:
        return jnp.exp(dirichlet.logpdf(x, alpha))


class multivariate_normal:  # noqa: N801
    """Multivariate normal distribution (logpdf/pdf; needs ``fjax.numpy.linalg.cholesky`` and
    ``fjax.scipy.linalg.solve_triangular``)."""

    @staticmethod
    def logpdf(x: Any, mean: Any, cov: Any, allow_singular: None = None) -> Any:
        if allow_singular is not None:
            raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
        x, mean, cov = (jnp.asarray(v) for v in promote_all("multivariate_normal.logpdf", x, mean, cov))
        if not mean.shape:
            return -0.5 * (x - mean) ** 2 / cov - 0.5 * (jnp.log(2 * math.pi) + jnp.log(cov))
        n = mean.shape[-1]
        if not jnp.shape(cov):
            y = x - mean
            return -0.5 * jnp.sum(y * y, axis=-1) / cov - 0.5 * n * (math.log(2 * math.pi) + jnp.log(cov))
        if cov.ndim < 2 or cov.shape[-2:] != (n, n):
            raise ValueError("multivariate_normal.logpdf got incompatible shapes")
        try:
            from fjax.numpy.linalg import cholesky  # noqa: PLC0415
            from fjax.scipy.linalg import solve_triangular  # noqa: PLC0415
        except ImportError:
            raise NotImplementedError(
                "multivariate_normal.logpdf with a matrix covariance needs fjax.numpy.linalg.cholesky and "
                "fjax.scipy.linalg.solve_triangular, which this build of fjax does not have"
            ) from None
        if cov.ndim != 2:
            raise NotImplementedError("multivariate_normal.logpdf with a batch of covariance matrices")
        L = cholesky(cov)  # noqa: N806
        d = jnp.broadcast_to(x - mean, jnp.broadcast_shapes(x.shape, mean.shape))
        y = solve_triangular(L, d.reshape(-1, n).T, lower=True)
        quad = jnp.sum(y * y, axis=0).reshape(d.shape[:-1])
        half_logdet = jnp.sum(jnp.log(jnp.abs(jnp.diagonal(L))))
        return -0.5 * quad - half_logdet - 0.5 * n * math.log(2 * math.pi)

    @staticmethod
    def pdf(x: Any, mean: Any, cov: Any) -> Any:
        return jnp.exp(multivariate_normal.logpdf(x, mean, cov))


def promote_all(name: str, *xs: Any) -> list:
    from fjax.numpy._util import promote_dtypes_inexact  # noqa: PLC0415

    return promote_dtypes_inexact(name, *xs)
