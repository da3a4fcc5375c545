"""Discrete distributions of ``jax.scipy.stats`` (pmf/logpmf/cdf where JAX has them), written
with fjax ops: differentiable in their continuous parameters."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fjax import lax
from fjax import numpy as jnp
from fjax.scipy import special as sp
from fjax.scipy.special import _args


class bernoulli:  # noqa: N801
    """Bernoulli distribution."""

    @staticmethod
    def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
        k, p, loc = _args("bernoulli.logpmf", k, p, loc)
        y = k - loc
        return jnp.where(y == 0, jnp.log1p(-p), jnp.where(y == 1, jnp.log(p), -np.inf))

    @staticmethod
    def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
        return jnp.exp(bernoulli.logpmf(k, p, loc))

    @staticmethod
    def cdf(k: Any, p: Any) -> Any:
        k, p = _args("bernoulli.cdf", k, p)
        bad = jnp.isnan(k) | jnp.isnan(p) | (p < 0) | (p > 1)
        return jnp.where(bad, np.nan, jnp.where(k < 0, 0.0, jnp.where(k < 1, 1 - p, 1.0)))

    @staticmethod
    def ppf(q: Any, p: Any) -> Any:
        q, p = _args("bernoulli.ppf", q, p)
        bad = jnp.isnan(q) | jnp.isnan(p) | (p < 0) | (p > 1) | (q < 0) | (q > 1)
        return jnp.where(bad, np.nan, jnp.where(q <= 1 - p, 0.0, 1.0))


class binom:  # noqa: N801
    """Binomial distribution."""

    @staticmethod
    def logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
        k, n, p, loc = _args("binom.logpmf", k, n, p, loc)
        y = k - loc
        ok = (y >= 0) & (y <= n) & (y == jnp.floor(y))
        sy = jnp.where(ok, y, 0.0)
        comb = lax.lgamma(n + 1) - lax.lgamma(sy + 1) - lax.lgamma(n - sy + 1)
        val = comb + sp.xlogy(sy, p) + sp.xlog1py(n - sy, -p)
        return jnp.where(ok, val, -np.inf)

    @staticmethod
    def pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
        return jnp.exp(binom.logpmf(k, n, p, loc))


class nbinom:  # noqa: N801
    """Negative binomial distribution (failures before the n-th success)."""

    @staticmethod
    def logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
        k, n, p, loc = _args("nbinom.logpmf", k, n, p, loc)
        y = k - loc
        ok = y >= 0
        sy = jnp.where(ok, y, 0.0)
        comb = lax.lgamma(n + sy) - lax.lgamma(sy + 1) - lax.lgamma(n)
        val = comb + n * jnp.log(p) + sp.xlog1py(sy, -p)
        return jnp.where(ok, val, -np.inf)

    @staticmethod
    def pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
        return jnp.exp(nbinom.logpmf(k, n, p, loc))


class geom:  # noqa: N801
    """Geometric distribution (trials up to the first success, support k >= 1)."""

    @staticmethod
    def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
        k, p, loc = _args("geom.logpmf", k, p, loc)
        y = k - loc
        ok = y >= 1
        sy = jnp.where(ok, y, 1.0)
        return jnp.where(ok, sp.xlog1py(sy - 1, -p) + jnp.log(p), -np.inf)

    @staticmethod
    def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
        return jnp.exp(geom.logpmf(k, p, loc))


class poisson:  # noqa: N801
    """Poisson distribution with mean ``mu``."""

    @staticmethod
    def logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
        k, mu, loc = _args("poisson.logpmf", k, mu, loc)
        y = k - loc
        ok = (y >= 0) & (y == jnp.floor(y))
        sy = jnp.where(ok, y, 0.0)
        return jnp.where(ok, sp.xlogy(sy, mu) - lax.lgamma(sy + 1) - mu, -np.inf)

    @staticmethod
    def pmf(k: Any, mu: Any, loc: Any = 0) -> Any:
        return jnp.exp(poisson.logpmf(k, mu, loc))

    @staticmethod
    def cdf(k: Any, mu: Any, loc: Any = 0) -> Any:
        k, mu, loc = _args("poisson.cdf", k, mu, loc)
        y = jnp.floor(k - loc)
        return jnp.where(y < 0, 0.0, sp.gammaincc(jnp.maximum(y, 0) + 1, mu))

    @staticmethod
    def entropy(mu: Any, loc: Any = 0) -> Any:
        """Shannon entropy: the sum over the support for mu < 100 (k < 400 covers it), the
        asymptotic expansion 0.5 log(2 pi e mu) - 1/(12 mu) - 1/(24 mu^2) above."""
        mu, loc = _args("poisson.entropy", mu, loc)
        ks = jnp.arange(400, dtype=mu.dtype).reshape((400,) + (1,) * mu.ndim)
        small_mu = jnp.where(mu < 100, mu, 1.0)
        logp = sp.xlogy(ks, small_mu) - lax.lgamma(ks + 1) - small_mu
        direct = -jnp.sum(jnp.exp(logp) * logp, axis=0)
        big = jnp.where(mu >= 100, mu, 100.0)
        asym = 0.5 * jnp.log(2 * math.pi * math.e * big) - 1 / (12 * big) - 1 / (24 * big * big)
        out = jnp.where(mu < 100, direct, asym)
        return jnp.where(mu == 0, 0.0, jnp.where(mu < 0, np.nan, out))


class betabinom:  # noqa: N801
    """Beta-binomial distribution."""

    @staticmethod
    def logpmf(k: Any, n: Any, a: Any, b: Any, loc: Any = 0) -> Any:
        k, n, a, b, loc = _args("betabinom.logpmf", k, n, a, b, loc)
        y = k - loc
        ok = (y >= 0) & (y <= n) & (y == jnp.floor(y))
        sy = jnp.where(ok, y, 0.0)
        comb = -jnp.log(n + 1) - sp.betaln(n - sy + 1, sy + 1)
        val = comb + sp.betaln(sy + a, n - sy + b) - sp.betaln(a, b)
        out = jnp.where(ok, val, -np.inf)
        return jnp.where((a > 0) & (b > 0) & (n >= 0), out, np.nan)

    @staticmethod
    def pmf(k: Any, n: Any, a: Any, b: Any, loc: Any = 0) -> Any:
        return jnp.exp(betabinom.logpmf(k, n, a, b, loc))


class multinomial:  # noqa: N801
    """Multinomial distribution (categories on the last axis)."""

    @staticmethod
    def logpmf(x: Any, n: Any, p: Any) -> Any:
        x, p = _args("multinomial.logpmf", x, p)
        (n,) = _args("multinomial.logpmf", n)
        n = n.astype(x.dtype)
        val = lax.lgamma(n + 1) + jnp.sum(sp.xlogy(x, p) - lax.lgamma(x + 1), axis=-1)
        return jnp.where(jnp.sum(x, axis=-1) == n, val, -np.inf)

    @staticmethod
    def pmf(x: Any, n: Any, p: Any) -> Any:
        return jnp.exp(multinomial.logpmf(x, n, p))
