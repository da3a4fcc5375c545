"""The ``jax.random`` distributions beyond the basic samplers of ``fjax.random``: gamma and
its relatives (loggamma, beta, dirichlet, t, chisquare, f, generalized_normal, ball), discrete
samplers (poisson, binomial, multinomial, geometric, rademacher) and the closed-form ones
(cauchy, logistic, pareto, lognormal, weibull_min, rayleigh, wald, triangular, maxwell,
double_sided_maxwell).

Each follows JAX 0.10's algorithm step by step (key splits, loop structure, arithmetic order)
so that one key gives JAX's samples: gamma is Marsaglia and Tsang's rejection method run per
element with its own key from ``split(key, a.size)`` (alpha < 1 boosted to alpha + 1), poisson
is Knuth's product method below lambda = 10 and Hormann's transformed rejection above, binomial
the inversion method below n*p = 10 and BTRS above. In float32 the transcendental functions
that decide the samples are XLA's polynomial approximations (``fjax.random._log`` etc.), and
multiply-adds that XLA's CPU backend contracts are fused, so most samplers reproduce JAX's bits
exactly; the rest (through ``exp``, ``pow``, ``tan``) agree to an ulp or two (see
tests/test_random_dists.py for what is checked bit for bit).

Gamma samples come from the primitive ``random_gamma_p`` (as in JAX): its impl runs the
composite sampler compiled by ``jit`` (a host step inside other jitted code), its batching rule
gives each example its own key, and its JVP is JAX's implicit reparameterization gradient with
respect to ``a`` (``lax.random_gamma_grad``), so beta, dirichlet, chisquare, t and f
are differentiable in their parameters too. Everything is written with lax ops and control
flow, so it runs under ``jit``, ``vmap`` and ``scan``.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from fjax import core, dtypes, lax
from fjax import numpy as jnp
from fjax import random as _r
from fjax.core import Primitive, ShapedArray
from fjax.dtypes import finfo as _finfo
from fjax.dtypes import kind as _dkind
from fjax.interpreters import ad, batching
from fjax.jit import jit
from fjax.lax.special import random_gamma_grad
from fjax.random import (
    _asarray,
    _bcast,
    _c,
    _canonicalize_shape,
    _check_key,
    _check_shape,
    _fma,
    _full,
    _log,
    _log1p,
    _user_dtype,
    bernoulli,
    exponential,
    normal,
    split,
    uniform,
)

__all__ = [
    "ball",
    "beta",
    "binomial",
    "cauchy",
    "chisquare",
    "dirichlet",
    "double_sided_maxwell",
    "f",
    "gamma",
    "generalized_normal",
    "geometric",
    "loggamma",
    "logistic",
    "lognormal",
    "maxwell",
    "multinomial",
    "pareto",
    "poisson",
    "rademacher",
    "rayleigh",
    "t",
    "triangular",
    "wald",
    "weibull_min",
]


def _float_dtype(name: str, dtype: Any) -> np.dtype:
    dt = _user_dtype(dtype, float)
    if _dkind(dt) != "f":
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dt}")
    return dt


def _shape_of(x: Any) -> tuple:
    return tuple(core.get_aval(x).shape) if not isinstance(x, (int, float, bool)) else ()


def _broadcast_shape(name: str, shape: Any, *args: Any) -> tuple:
    arg_shapes = [_shape_of(a) for a in args]
    if shape is None:
        return tuple(np.broadcast_shapes(*arg_shapes)) if arg_shapes else ()
    shape = _canonicalize_shape(shape, name)
    _check_shape(name, shape, *arg_shapes)
    return shape


def _to(x: Any, dtype: np.dtype) -> Any:
    x = _asarray(x)
    return x if x.dtype == dtype else lax.convert_element_type(x, dtype)


def _key_at(keys: Any, i: int) -> Any:
    return lax.reshape(lax.slice_in_dim(keys, i, i + 1, axis=0), (2,))


def _split_n(key: Any, n: int) -> list:
    ks = split(key, n)
    return [_key_at(ks, i) for i in range(n)]


def _k(x: Any, v: Any) -> Any:
    """A constant of ``x``'s dtype."""
    return _c(v, core.get_aval(x).dtype)


# ---------------------------------------------------------------------------------------------
# gamma: Marsaglia and Tsang, one element per key


def _gamma_one(key: Any, alpha: Any, log_space: bool) -> Any:
    dt = core.get_aval(alpha).dtype
    zero, one, minus_one, two = _c(0, dt), _c(1, dt), _c(-1, dt), _c(2, dt)
    half, third, squeeze = _c(0.5, dt), _c(1.0 / 3.0, dt), _c(0.0331, dt)
    boost_mask = lax.ge(alpha, one)
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
    d = lax.sub(alpha, third)
    c = lax.div(third, lax.sqrt(d))

    def cond_fn(kxvu: tuple) -> Any:
        _, x, v, u = kxvu
        # XLA contracts 1 - 0.0331 * X^2 into one fused multiply-add
        squeeze_ok = lax.ge(u, _fma(lax.neg(squeeze), lax.mul(x, x), one))
        rhs = _fma(x, half, lax.mul(d, lax.add(lax.sub(one, v), _log(v))))
        return lax.bitwise_and(squeeze_ok, lax.ge(_log(u), rhs))

    def body_fn(kxvu: tuple) -> tuple:
        def next_kxv(kxv: tuple) -> tuple:
            k, subkey = _split_n(kxv[0], 2)
            x = normal(subkey, (), dtype=dt)
            return k, x, _fma(x, c, one)

        k, x_key, u_key = _split_n(kxvu[0], 3)
        _, x, v = lax.while_loop(lambda kxv: lax.le(kxv[2], zero), next_kxv, (x_key, zero, minus_one))
        return k, lax.mul(x, x), lax.mul(lax.mul(v, v), v), uniform(u_key, (), dtype=dt)

    key, subkey = _split_n(key, 2)
    _, _, v, _ = lax.while_loop(cond_fn, body_fn, (key, zero, one, two))
    if log_space:
        log_samples = lax.neg(exponential(subkey, (), dtype=dt))
        no_boost = lax.bitwise_or(boost_mask, lax.eq(log_samples, zero))
        log_boost = lax.select(no_boost, zero, lax.mul(log_samples, lax.div(one, alpha_orig)))
        return lax.add(lax.add(_log(d), _log(v)), log_boost)
    samples = lax.sub(one, uniform(subkey, (), dtype=dt))
    boost = lax.select(boost_mask, one, lax.pow(samples, lax.div(one, alpha_orig)))
    return lax.mul(lax.mul(d, v), boost)


def _gamma_composite(key: Any, a: Any, log_space: bool) -> Any:
    """Samples for ``a`` with one key per element: ``split(k, m)`` for each key ``k`` of a batch
    of keys (shape ``(*b, 2)``, m the size of ``a.shape[len(b):]``), as JAX's impl does."""
    from fjax.api import vmap  # noqa: PLC0415

    shape = core.get_aval(a).shape
    nb = core.get_aval(key).ndim - 1
    n = math.prod(shape)
    if n == 0:
        return lax.mul(a, _k(a, 0))
    m = math.prod(shape[nb:])
    keys = lax.reshape(key, (math.prod(shape[:nb]), 2))
    keys = lax.reshape(vmap(lambda k: split(k, m))(keys), (n, 2))
    alphas = lax.reshape(a, (n,))
    samples = vmap(partial(_gamma_one, log_space=log_space))(keys, alphas)
    return lax.reshape(samples, shape)


_gamma_compiled = {log_space: jit(partial(_gamma_composite, log_space=log_space)) for log_space in (False, True)}


def _random_gamma_impl(key: np.ndarray, a: np.ndarray, *, log_space: bool) -> np.ndarray:
    # float32: a numba loop that reproduces the composite bit for bit (one scalar loop per
    # sample); other dtypes run the composite under jit. Either is a host step inside jit.
    if a.dtype == np.float32:
        from fjax import _random_gamma_kernel  # noqa: PLC0415

        return _random_gamma_kernel.sample_f32(np.asarray(key), np.asarray(a), log_space)
    return np.asarray(_gamma_compiled[log_space](key, a))


def _random_gamma_abstract(key: Any, a: Any, *, log_space: bool) -> ShapedArray:
    if key.dtype != np.uint32 or key.ndim < 1 or key.shape[-1] != 2 or tuple(key.shape[:-1]) != a.shape[: key.ndim - 1]:
        raise TypeError(
            f"random_gamma: expected uint32 keys of shape (*batch, 2) matching the leading dimensions of a, "
            f"got keys {key.dtype.name}{list(key.shape)} and a {a.dtype.name}{list(a.shape)}"
        )
    if _dkind(a.dtype) != "f":
        raise TypeError(f"random_gamma: a must be floating, got {a.dtype.name}{list(a.shape)}")
    return ShapedArray(a.shape, a.dtype, False)


def _gamma_grad(sample: Any, a: Any, log_space: bool) -> Any:
    if log_space:
        # d log(x) / da = (dx / da) / x; an x that underflows to 0 is taken as the smallest float
        x = lax.exp(sample)
        dt = core.get_aval(x).dtype
        x = lax.select(lax.eq(x, _c(0, dt)), lax.full_like(x, float(_finfo(dt).tiny)), x)
        return lax.div(random_gamma_grad(a, x), x)
    return random_gamma_grad(a, sample)


def _random_gamma_batch(vals: list, dims: list, *, log_space: bool) -> tuple:
    key, a = vals
    bk, ba = dims
    size = next(core.get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not batching.not_mapped)
    key = batching.bdim_at_front(key, bk, size)
    a = batching.bdim_at_front(a, ba, size)
    # keys (B, *b, 2) and a (B, *b, ...): each example keeps its own key, as unbatched
    return random_gamma_p.bind(key, a, log_space=log_space), 0


random_gamma_p = Primitive("random_gamma")
random_gamma_p.def_impl(_random_gamma_impl)
random_gamma_p.def_abstract_eval(_random_gamma_abstract)
ad.defjvp2(
    random_gamma_p,
    None,
    lambda g, ans, key, a, *, log_space: lax.mul(g, _gamma_grad(ans, a, log_space)),
)
batching.primitive_batchers[random_gamma_p] = _random_gamma_batch


@partial(jit, static_argnames=("shape", "dtype", "log_space"))
def _gamma(key: Any, a: Any, shape: Any, dtype: Any, log_space: bool = False) -> Any:
    if shape is None:
        shape = _shape_of(a)
    else:
        _check_shape("gamma", shape, _shape_of(a))
    a = _bcast(_to(a, dtype), shape)
    return random_gamma_p.bind(key, a, log_space=log_space)


def gamma(key: Any, a: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Standard gamma samples with shape parameter ``a`` (unit scale), differentiable in ``a``."""
    key = _check_key("gamma", key)
    dt = _float_dtype("gamma", dtype)
    if shape is not None:
        shape = _canonicalize_shape(shape, "gamma")
    return _gamma(key, a, shape, dt)


def loggamma(key: Any, a: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Logs of standard gamma samples, computed in log space (accurate for small ``a``):
    ``exp(loggamma(k, a))`` equals ``gamma(k, a)`` to rounding."""
    key = _check_key("loggamma", key)
    dt = _float_dtype("gamma", dtype)
    if shape is not None:
        shape = _canonicalize_shape(shape, "loggamma")
    return _gamma(key, a, shape, dt, log_space=True)


def beta(key: Any, a: Any, b: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Beta(a, b) samples (from two log-gamma samples), differentiable in ``a`` and ``b``."""
    key = _check_key("beta", key)
    dt = _float_dtype("beta", dtype)
    shape = _broadcast_shape("beta", shape, a, b)
    return _beta(key, a, b, shape, dt)


@partial(jit, static_argnums=(3, 4))
def _beta(key: Any, a: Any, b: Any, shape: tuple, dtype: np.dtype) -> Any:
    key_a, key_b = _split_n(key, 2)
    a = _bcast(_to(a, dtype), shape)
    b = _bcast(_to(b, dtype), shape)
    log_gamma_a = loggamma(key_a, a, shape, dtype)
    log_gamma_b = loggamma(key_b, b, shape, dtype)
    log_max = lax.max(log_gamma_a, log_gamma_b)
    ga = lax.exp(lax.sub(log_gamma_a, log_max))
    gb = lax.exp(lax.sub(log_gamma_b, log_max))
    return lax.div(ga, lax.add(ga, gb))


def dirichlet(key: Any, alpha: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Dirichlet samples with concentrations ``alpha`` (last axis), differentiable in ``alpha``."""
    key = _check_key("dirichlet", key)
    dt = _float_dtype("dirichlet", dtype)
    if shape is not None:
        shape = _canonicalize_shape(shape, "dirichlet")
    return _dirichlet(key, alpha, shape, dt)


@partial(jit, static_argnums=(2, 3))
def _dirichlet(key: Any, alpha: Any, shape: Any, dtype: np.dtype) -> Any:
    from fjax.nn import softmax  # noqa: PLC0415

    ashape = _shape_of(alpha)
    if not len(ashape) >= 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {len(ashape)}")
    if shape is None:
        shape = ashape[:-1]
    else:
        _check_shape("dirichlet", shape, ashape[:-1])
    alpha = _to(alpha, dtype)
    log_gamma_samples = loggamma(key, alpha, tuple(shape) + ashape[-1:], dtype)
    return softmax(log_gamma_samples, -1)


def t(key: Any, df: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Student's t samples with ``df`` degrees of freedom."""
    key = _check_key("t", key)
    dt = _float_dtype("t", dtype)
    shape = _broadcast_shape("t", shape, df)
    return _t(key, df, shape, dt)


@partial(jit, static_argnums=(2, 3))
def _t(key: Any, df: Any, shape: tuple, dtype: np.dtype) -> Any:
    df = _to(df, dtype)
    key_n, key_g = _split_n(key, 2)
    n = normal(key_n, shape, dtype)
    half_df = lax.div(df, _c(2, dtype))
    g = gamma(key_g, half_df, shape, dtype)
    return lax.mul(n, lax.sqrt(lax.div(_bcast(half_df, shape), g)))


def chisquare(key: Any, df: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Chi-square samples with ``df`` degrees of freedom (``2 * exp(loggamma(df / 2))``)."""
    key = _check_key("chisquare", key)
    dt = _float_dtype("chisquare", dtype)
    shape = _broadcast_shape("chisquare", shape, df)
    return _chisquare(key, df, shape, dt)


@partial(jit, static_argnums=(2, 3))
def _chisquare(key: Any, df: Any, shape: tuple, dtype: np.dtype) -> Any:
    half_df = lax.div(_to(df, dtype), _c(2, dtype))
    log_g = loggamma(key, half_df, shape, dtype)
    return lax.mul(lax.exp(log_g), _c(2, dtype))


def f(key: Any, dfnum: Any, dfden: Any, shape: Any = None, dtype: Any = None) -> Any:
    """F-distribution samples (ratio of scaled chi-squares)."""
    key = _check_key("f", key)
    dt = _float_dtype("f", dtype)
    shape = _broadcast_shape("f", shape, dfnum, dfden)
    return _f(key, dfnum, dfden, shape, dt)


@partial(jit, static_argnums=(3, 4))
def _f(key: Any, dfnum: Any, dfden: Any, shape: tuple, dtype: np.dtype) -> Any:
    dfden = _to(dfden, dtype)
    dfnum = _to(dfnum, dtype)
    key_dfd, key_dfn = _split_n(key, 2)
    chi2_dfn = chisquare(key_dfn, dfnum, shape, dtype)
    chi2_dfd = chisquare(key_dfd, dfden, shape, dtype)
    return lax.div(lax.div(chi2_dfn, dfnum), lax.div(chi2_dfd, dfden))


def generalized_normal(key: Any, p: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Generalized normal samples with density proportional to ``exp(-|x|^p)``."""
    shape = _canonicalize_shape(shape, "generalized_normal")
    key = _check_key("generalized_normal", key)
    dt = _float_dtype("generalized_normal", dtype)
    _check_shape("generalized_normal", shape)
    return _generalized_normal(key, p, shape, dt)


@partial(jit, static_argnums=(2, 3))
def _generalized_normal(key: Any, p: Any, shape: tuple, dtype: np.dtype) -> Any:
    k0, k1 = _split_n(key, 2)
    inv_p = jnp.divide(1, _asarray(p))
    g = gamma(k0, inv_p, shape, dtype)
    r = rademacher(k1, shape, dtype)
    return jnp.multiply(r, jnp.power(g, inv_p).astype(dtype))


def ball(key: Any, d: int, p: float = 2, shape: Any = (), dtype: Any = None) -> Any:
    """Samples uniform in the unit ``p``-norm ball of dimension ``d``."""
    shape = _canonicalize_shape(shape, "ball")
    key = _check_key("ball", key)
    dt = _float_dtype("ball", dtype)
    _check_shape("ball", shape)
    d = int(core.concrete_or_error(d, "The error occurred in jax.random.ball()"))
    return _ball(key, p, d, shape, dt)


@partial(jit, static_argnums=(2, 3, 4))
def _ball(key: Any, p: Any, d: int, shape: tuple, dtype: np.dtype) -> Any:
    k1, k2 = _split_n(key, 2)
    g = generalized_normal(k1, p, (*shape, d), dtype)
    e = exponential(k2, shape, dtype)
    norm = jnp.power(jnp.sum(jnp.power(jnp.abs(g), p), axis=-1) + e, jnp.divide(1, _asarray(p)))
    return (g / norm[..., None]).astype(dtype)


# ---------------------------------------------------------------------------------------------
# closed-form transforms of uniform and normal samples


def _simple(name: str, key: Any, shape: Any, dtype: Any) -> tuple:
    key = _check_key(name, key)
    dt = _float_dtype(name, dtype)
    return key, _canonicalize_shape(shape, name), dt


def cauchy(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Standard Cauchy samples, ``tan(pi * (u - 1/2))``."""
    key, shape, dt = _simple("cauchy", key, shape, dtype)
    return _cauchy(key, shape, dt)


@partial(jit, static_argnums=(1, 2))
def _cauchy(key: Any, shape: tuple, dtype: np.dtype) -> Any:
    u = uniform(key, shape, dtype, minval=float(_finfo(dtype).eps), maxval=1.0)
    return lax.tan(lax.mul(_c(np.pi, dtype), lax.sub(u, _c(0.5, dtype))))


def logistic(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Standard logistic samples, ``log(u) - log1p(-u)``."""
    key, shape, dt = _simple("logistic", key, shape, dtype)
    return _logistic(key, shape, dt)


@partial(jit, static_argnums=(1, 2))
def _logistic(key: Any, shape: tuple, dtype: np.dtype) -> Any:
    x = uniform(key, shape, dtype, minval=float(_finfo(dtype).tiny), maxval=1.0)
    return lax.sub(_log(x), _log1p(lax.neg(x)))


def pareto(key: Any, b: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Pareto samples with shape ``b`` (density ``b / x^(b+1)`` on ``x >= 1``)."""
    key = _check_key("pareto", key)
    dt = _float_dtype("pareto", dtype)
    shape = _broadcast_shape("pareto", shape, b)
    return _pareto(key, b, shape, dt)


@partial(jit, static_argnums=(2, 3))
def _pareto(key: Any, b: Any, shape: tuple, dtype: np.dtype) -> Any:
    e = exponential(key, shape, dtype)
    return lax.exp(lax.div(e, _bcast(_to(b, dtype), shape)))


def lognormal(key: Any, sigma: Any = np.float32(1), shape: Any = None, dtype: Any = None) -> Any:
    """Log-normal samples, ``exp(sigma * normal)``."""
    key = _check_key("lognormal", key)
    dt = _user_dtype(dtype, float)
    if _dkind(dt) not in "fc":
        raise ValueError(f"dtype argument to `lognormal` must be a float or complex dtype, got {dt}")
    shape = _broadcast_shape("lognormal", shape, sigma)
    return _lognormal(key, sigma, shape, dt)


@partial(jit, static_argnums=(2, 3))
def _lognormal(key: Any, sigma: Any, shape: tuple, dtype: np.dtype) -> Any:
    return lax.exp(lax.mul(normal(key, shape, dtype), _bcast(_to(sigma, dtype), shape)))


def weibull_min(key: Any, scale: Any, concentration: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Weibull samples by the inverse CDF, ``scale * (-log1p(-u))^(1/concentration)``."""
    key, shape, dt = _simple("weibull_min", key, shape, dtype)
    return _weibull_min(key, scale, concentration, shape, dt)


@partial(jit, static_argnums=(3, 4))
def _weibull_min(key: Any, scale: Any, concentration: Any, shape: tuple, dtype: np.dtype) -> Any:
    u = uniform(key, shape, dtype, 0.0, 1.0)
    e = lax.neg(_log1p(lax.neg(u)))
    return jnp.multiply(jnp.power(e, jnp.divide(1.0, _asarray(concentration))), _asarray(scale))


def rayleigh(key: Any, scale: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Rayleigh samples, ``scale * sqrt(-2 log u)``."""
    key = _check_key("rayleigh", key)
    dt = _float_dtype("rayleigh", dtype)
    shape = _broadcast_shape("rayleigh", shape, scale)
    return _rayleigh(key, scale, shape, dt)


@partial(jit, static_argnums=(2, 3))
def _rayleigh(key: Any, scale: Any, shape: tuple, dtype: np.dtype) -> Any:
    u = uniform(key, shape, dtype)
    scale = _bcast(_to(scale, dtype), shape)
    return lax.mul(scale, lax.sqrt(lax.mul(_log(u), _c(-2, dtype))))


def wald(key: Any, mean: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Wald (inverse Gaussian) samples with ``mean`` and unit shape."""
    key = _check_key("wald", key)
    dt = _float_dtype("wald", dtype)
    shape = _broadcast_shape("wald", shape, mean)
    return _wald(key, mean, shape, dt)


@partial(jit, static_argnums=(2, 3))
def _wald(key: Any, mean: Any, shape: tuple, dtype: np.dtype) -> Any:
    k1, k2 = _split_n(key, 2)
    mean = _bcast(_to(mean, dtype), shape)
    v = normal(k1, shape, dtype)
    z = uniform(k2, shape, dtype)
    y = lax.integer_pow(v, 2)
    y_sq = lax.integer_pow(y, 2)
    mean_sq = lax.integer_pow(mean, 2)
    # XLA's CPU backend (LLVM) fuses a multiply into the add or subtract that consumes it,
    # the left operand first when both are products
    sqrt_term = lax.sqrt(_fma(lax.mul(_c(4, dtype), mean), y, lax.mul(mean_sq, y_sq)))
    x = lax.add(mean, lax.div(lax.mul(mean_sq, y), _c(2, dtype)))
    x = _fma(lax.neg(lax.div(mean, _c(2, dtype))), sqrt_term, x)
    return lax.select(lax.le(z, lax.div(mean, lax.add(mean, x))), x, lax.div(mean_sq, x))


def triangular(key: Any, left: Any, mode: Any, right: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Triangular samples on ``[left, right]`` peaking at ``mode``."""
    key = _check_key("triangular", key)
    dt = _float_dtype("triangular", dtype)
    shape = _broadcast_shape("triangular", shape, left, mode, right)
    return _triangular(key, left, mode, right, shape, dt)


@partial(jit, static_argnums=(4, 5))
def _triangular(key: Any, left: Any, mode: Any, right: Any, shape: tuple, dtype: np.dtype) -> Any:
    left = _bcast(_to(left, dtype), shape)
    right = _bcast(_to(right, dtype), shape)
    mode = _bcast(_to(mode, dtype), shape)
    fc = lax.div(lax.sub(mode, left), lax.sub(right, left))
    u = uniform(key, shape, dtype)
    out1 = lax.add(left, lax.sqrt(lax.mul(lax.mul(u, lax.sub(right, left)), lax.sub(mode, left))))
    one_m_u = lax.sub(_c(1, dtype), u)
    out2 = lax.sub(right, lax.sqrt(lax.mul(lax.mul(one_m_u, lax.sub(right, left)), lax.sub(right, mode))))
    return lax.select(lax.lt(u, fc), out1, out2)


def rademacher(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Samples of -1 and +1 with equal probability (integer dtype by default)."""
    key = _check_key("rademacher", key)
    dt = _user_dtype(dtype, int)
    shape = _canonicalize_shape(shape, "rademacher")
    return _rademacher(key, shape, dt)


@partial(jit, static_argnums=(1, 2))
def _rademacher(key: Any, shape: tuple, dtype: np.dtype) -> Any:
    b = lax.convert_element_type(bernoulli(key, 0.5, shape), dtype)
    return lax.sub(lax.mul(_c(2, dtype), b), _c(1, dtype))


def maxwell(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Maxwell samples: the norm of a standard normal 3-vector."""
    key, shape, dt = _simple("maxwell", key, shape, dtype)
    return _maxwell(key, shape, dt)


@partial(jit, static_argnums=(1, 2))
def _maxwell(key: Any, shape: tuple, dtype: np.dtype) -> Any:
    n = normal(key, (*shape, 3), dtype)
    return lax.sqrt(lax.reduce_sum(lax.mul(n, n), (len(shape),)))


def double_sided_maxwell(key: Any, loc: Any, scale: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Double-sided Maxwell samples: a random sign times a Maxwell sample, scaled and shifted
    (the result has shape ``shape + broadcast(loc, scale).shape``, as in JAX)."""
    key, shape, dt = _simple("double_sided_maxwell", key, shape, dtype)
    return _double_sided_maxwell(key, loc, scale, shape, dt)


@partial(jit, static_argnums=(3, 4))
def _double_sided_maxwell(key: Any, loc: Any, scale: Any, shape: tuple, dtype: np.dtype) -> Any:
    params_shape = tuple(np.broadcast_shapes(_shape_of(loc), _shape_of(scale)))
    if not shape:
        shape = params_shape
    shape = tuple(shape) + params_shape
    maxwell_key, rademacher_key = _split_n(key, 2)
    m = maxwell(maxwell_key, shape, dtype)
    s = rademacher(rademacher_key, shape, dtype)
    return jnp.add(jnp.multiply(jnp.multiply(s, m), _asarray(scale)), _asarray(loc)).astype(dtype)


def geometric(key: Any, p: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Geometric samples: the number of Bernoulli(p) trials up to the first success (>= 1)."""
    key = _check_key("geometric", key)
    dt = _user_dtype(dtype, int)
    if _dkind(dt) not in "iu":
        raise ValueError(f"dtype argument to `geometric` must be an int dtype, got {dt}")
    shape = _broadcast_shape("geometric", shape, p)
    return _geometric(key, p, shape, dt)


@partial(jit, static_argnums=(2, 3))
def _geometric(key: Any, p: Any, shape: tuple, dtype: np.dtype) -> Any:
    p = _asarray(p)
    if _dkind(p.dtype) not in "fc":
        p = lax.convert_element_type(p, dtypes.default_float_dtype())
    fdt = p.dtype
    u = uniform(key, shape, fdt)
    u = lax.select(lax.eq(u, _c(0, fdt)), lax.full_like(u, 1), u)
    log_one_minus_p = _bcast(_log1p(lax.neg(p)), shape)
    g = lax.add(lax.floor(lax.div(_log(u), log_one_minus_p)), _c(1, fdt))
    return lax.convert_element_type(g, dtype)


# ---------------------------------------------------------------------------------------------
# poisson


def _poisson_knuth(key: Any, lam: Any, shape: tuple, dtype: np.dtype, max_iters: int) -> Any:
    f32 = np.dtype(np.float32)

    def body_fn(carry: tuple) -> tuple:
        i, k, rng, log_prod = carry
        rng, subkey = _split_n(rng, 2)
        k = lax.select(lax.gt(log_prod, lax.neg(lam)), lax.add(k, _c(1, dtype)), k)
        u = uniform(subkey, shape, f32)
        return lax.add(i, _c(1, dtypes.default_int_dtype())), k, rng, lax.add(log_prod, _log(u))

    def cond_fn(carry: tuple) -> Any:
        i, log_prod = carry[0], carry[3]
        more = lax.reduce_or(lax.gt(log_prod, lax.neg(lam)), tuple(range(len(shape))))
        return lax.bitwise_and(more, lax.lt(i, _c(max_iters, dtypes.default_int_dtype())))

    init = (_c(0, dtypes.default_int_dtype()), _full(shape, 0, dtype), key, _full(shape, 0, f32))
    k = lax.while_loop(cond_fn, body_fn, init)[1]
    return lax.sub(k, _c(1, dtype))


def _poisson_rejection(key: Any, lam: Any, shape: tuple, dtype: np.dtype, max_iters: int) -> Any:
    f32 = np.dtype(np.float32)
    log_lam = _log(lam)
    b = _fma(_c(2.53, f32), lax.sqrt(lam), _c(0.931, f32))
    a = _fma(_c(0.02483, f32), b, _c(-0.059, f32))
    inv_alpha = lax.add(_c(1.1239, f32), lax.div(_c(1.1328, f32), lax.sub(b, _c(3.4, f32))))
    v_r = lax.sub(_c(0.9277, f32), lax.div(_c(3.6224, f32), lax.sub(b, _c(2, f32))))

    def body_fn(carry: tuple) -> tuple:
        i, k_out, accepted, rng = carry
        rng, sk0, sk1 = _split_n(rng, 3)
        u = lax.sub(uniform(sk0, shape, f32), _c(0.5, f32))
        v = uniform(sk1, shape, f32)
        us = lax.sub(_c(0.5, f32), lax.abs(u))
        two_a = lax.mul(_c(2, f32), a)
        k = lax.floor(lax.add(_fma(lax.add(lax.div(two_a, us), b), u, lam), _c(0.43, f32)))
        s = _log(lax.div(lax.mul(v, inv_alpha), lax.add(lax.div(a, lax.mul(us, us)), b)))
        t = lax.sub(_fma(k, log_lam, lax.neg(lam)), lax.lgamma(lax.add(k, _c(1, f32))))
        accept1 = lax.bitwise_and(lax.ge(us, _c(0.07, f32)), lax.le(v, v_r))
        reject = lax.bitwise_or(lax.lt(k, _c(0, f32)), lax.bitwise_and(lax.lt(us, _c(0.013, f32)), lax.gt(v, us)))
        accept2 = lax.le(s, t)
        accept = lax.bitwise_or(accept1, lax.bitwise_and(lax.bitwise_not(reject), accept2))
        k_out = lax.select(accept, k, k_out)
        return lax.add(i, _c(1, dtypes.default_int_dtype())), k_out, lax.bitwise_or(accepted, accept), rng

    def cond_fn(carry: tuple) -> Any:
        i, _, accepted, _ = carry
        more = lax.reduce_or(lax.bitwise_not(accepted), tuple(range(len(shape))))
        return lax.bitwise_and(more, lax.lt(i, _c(max_iters, dtypes.default_int_dtype())))

    init = (_c(0, dtypes.default_int_dtype()), _full(shape, -1, f32), _full(shape, False, np.bool_), key)
    k = lax.while_loop(cond_fn, body_fn, init)[1]
    return lax.convert_element_type(k, dtype)


@partial(jit, static_argnums=(2, 3))
def _poisson(key: Any, lam: Any, shape: tuple, dtype: np.dtype) -> Any:
    use_knuth = lax.bitwise_or(lax.ne(lam, lam), lax.lt(lam, _c(10, np.float32)))
    lam_knuth = lax.select(use_knuth, lam, lax.full_like(lam, 0.0))
    lam_rejection = lax.select(use_knuth, lax.full_like(lam, 1e5), lam)
    info = dtypes.iinfo(dtype)  # (ml_dtypes': numpy's knows no int4/int2/int1)
    max_iters = int(info.max) if info.bits <= 32 else int(np.iinfo(np.int32).max)
    result = lax.select(
        use_knuth,
        _poisson_knuth(key, lam_knuth, shape, dtype, max_iters),
        _poisson_rejection(key, lam_rejection, shape, dtype, max_iters),
    )
    return lax.select(lax.eq(lam, _c(0, np.float32)), lax.full_like(result, 0), result)


def _random_poisson_impl(key: np.ndarray, lam: np.ndarray, *, dtype: np.dtype) -> np.ndarray:
    # a numba loop per lane, equal to the composite ``_poisson`` (whose compiled while loops take
    # tens of seconds to compile for each shape)
    from fjax import _random_gamma_kernel  # noqa: PLC0415

    return _random_gamma_kernel.sample_poisson(np.asarray(key), np.asarray(lam), dtype)


def _random_poisson_abstract(key: Any, lam: Any, *, dtype: np.dtype) -> ShapedArray:
    if key.dtype != np.uint32 or key.shape[-1:] != (2,) or tuple(key.shape[:-1]) != lam.shape[: key.ndim - 1]:
        raise TypeError(
            f"random_poisson: expected uint32 keys of shape (*batch, 2) matching the leading dimensions of lam, "
            f"got keys {key.dtype.name}{list(key.shape)} and lam {lam.dtype.name}{list(lam.shape)}"
        )
    if lam.dtype != np.float32:
        raise TypeError(f"random_poisson: lam must be float32, got {lam.dtype.name}")
    return ShapedArray(lam.shape, np.dtype(dtype), False)


def _random_poisson_batch(vals: list, dims: list, *, dtype: np.dtype) -> tuple:
    key, lam = vals
    size = next(core.get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not batching.not_mapped)
    key = batching.bdim_at_front(key, dims[0], size)
    lam = batching.bdim_at_front(lam, dims[1], size)
    return random_poisson_p.bind(key, lam, dtype=dtype), 0


random_poisson_p = Primitive("random_poisson")
random_poisson_p.def_impl(_random_poisson_impl)
random_poisson_p.def_abstract_eval(_random_poisson_abstract)
batching.primitive_batchers[random_poisson_p] = _random_poisson_batch
ad.defzero(random_poisson_p)


def poisson(key: Any, lam: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Poisson samples with rate ``lam`` (integer dtype; the rate is taken in float32, as JAX does)."""
    key = _check_key("poisson", key)
    dt = _user_dtype(dtype, int)
    if _dkind(dt) not in "iu":
        raise ValueError(f"dtype argument to `poisson` must be an int dtype, got {dt}")
    shape = _shape_of(lam) if shape is None else _canonicalize_shape(shape, "poisson")
    lam = _bcast(_to(lam, np.dtype(np.float32)), shape)
    return random_poisson_p.bind(key, lam, dtype=dt)


# ---------------------------------------------------------------------------------------------
# binomial and multinomial

_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                  0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                  0.00925546218271273, 0.00833056343336287)  # fmt: skip


def _stirling_approx_tail(k: Any) -> Any:
    dt = core.get_aval(k).dtype
    table = jnp.array(_STIRLING_TAIL, dtype=dt)
    use_table = lax.le(k, _c(9, dt))
    k = lax.clamp(_c(0, dt), k, _c(9, dt))
    kp1 = lax.add(k, _c(1, dt))
    kp1sq = lax.mul(kp1, kp1)
    inner = lax.sub(_c(1.0 / 360, dt), lax.div(_c(1.0 / 1260, dt), kp1sq))
    approx = lax.div(lax.sub(_c(1.0 / 12, dt), lax.div(inner, kp1sq)), kp1)
    idx = lax.convert_element_type(lax.floor(k), np.int32)
    return lax.select(use_table, jnp.take(table, idx), approx)


def _binomial_inversion(key: Any, count: Any, prob: Any, shape: tuple, max_iters: Any) -> Any:
    dt = core.get_aval(prob).dtype
    log1minusprob = _log1p(lax.neg(prob))
    idt = dtypes.default_int_dtype()

    def body_fn(carry: tuple) -> tuple:
        i, num_geom, geom_sum, rng = carry
        subkey, rng = _split_n(rng, 2)
        num_geom_out = lax.select(lax.le(geom_sum, count), lax.add(num_geom, _c(1, dt)), num_geom)
        u = uniform(subkey, shape, dt)
        geom = lax.ceil(lax.div(_log(u), log1minusprob))
        return lax.add(i, _c(1, idt)), num_geom_out, lax.add(geom_sum, geom), rng

    def cond_fn(carry: tuple) -> Any:
        i, geom_sum = carry[0], carry[2]
        more = lax.reduce_or(lax.le(geom_sum, count), tuple(range(len(shape))))
        return lax.bitwise_and(more, lax.lt(lax.convert_element_type(i, dt), max_iters))

    init = (_c(0, idt), _full(shape, 0, dt), _full(shape, 0, dt), key)
    k = lax.while_loop(cond_fn, body_fn, init)[1]
    return lax.sub(k, _c(1, dt))


def _btrs(key: Any, count: Any, prob: Any, shape: tuple, max_iters: Any) -> Any:
    dt = core.get_aval(prob).dtype
    idt = dtypes.default_int_dtype()

    def k_(v: float) -> Any:
        return _c(v, dt)

    one = k_(1)
    stddev = lax.sqrt(lax.mul(lax.mul(count, prob), lax.sub(one, prob)))
    b = _fma(k_(2.53), stddev, k_(1.15))
    a = _fma(k_(0.01), prob, _fma(k_(0.0248), b, k_(-0.0873)))
    c = _fma(count, prob, k_(0.5))
    v_r = lax.sub(k_(0.92), lax.div(k_(4.2), b))
    r = lax.div(prob, lax.sub(one, prob))
    alpha = lax.mul(lax.add(k_(2.83), lax.div(k_(5.1), b)), stddev)
    m = lax.floor(lax.mul(lax.add(count, one), prob))

    def body_fn(carry: tuple) -> tuple:
        i, k_out, accepted, rng = carry
        rng, sk0, sk1 = _split_n(rng, 3)
        u = uniform(sk0, shape, dt)
        v = uniform(sk1, shape, dt)
        u = lax.sub(u, k_(0.5))
        us = lax.sub(k_(0.5), lax.abs(u))
        accept1 = lax.bitwise_and(lax.ge(us, k_(0.07)), lax.le(v, v_r))
        k = lax.floor(_fma(lax.add(lax.div(lax.mul(k_(2), a), us), b), u, c))
        reject = lax.bitwise_or(lax.lt(k, k_(0)), lax.gt(k, count))
        v = _log(lax.div(lax.mul(v, alpha), lax.add(lax.div(a, lax.mul(us, us)), b)))
        cm1 = lax.add(lax.sub(count, m), one)
        ck1 = lax.add(lax.sub(count, k), one)
        ub = _fma(
            lax.add(m, k_(0.5)),
            _log(lax.div(lax.add(m, one), lax.mul(r, cm1))),
            lax.mul(lax.add(count, one), _log(lax.div(cm1, ck1))),
        )
        ub = _fma(lax.add(k, k_(0.5)), _log(lax.div(lax.mul(r, ck1), lax.add(k, one))), ub)
        ub = lax.add(ub, _stirling_approx_tail(m))
        ub = lax.add(ub, _stirling_approx_tail(lax.sub(count, m)))
        ub = lax.sub(ub, _stirling_approx_tail(k))
        ub = lax.sub(ub, _stirling_approx_tail(lax.sub(count, k)))
        accept2 = lax.le(v, ub)
        accept = lax.bitwise_or(accept1, lax.bitwise_and(lax.bitwise_not(reject), accept2))
        k_out = lax.select(accept, k, k_out)
        return lax.add(i, _c(1, idt)), k_out, lax.bitwise_or(accepted, accept), rng

    def cond_fn(carry: tuple) -> Any:
        i, accepted = carry[0], carry[2]
        more = lax.reduce_or(lax.bitwise_not(accepted), tuple(range(len(shape))))
        return lax.bitwise_and(more, lax.lt(lax.convert_element_type(i, dt), max_iters))

    init = (_c(0, idt), _full(shape, -1, dt), _full(shape, False, np.bool_), key)
    return lax.while_loop(cond_fn, body_fn, init)[1]


@partial(jit, static_argnums=(3, 4))
def _binomial(key: Any, count: Any, prob: Any, shape: Any, dtype: np.dtype) -> Any:
    if shape is None:
        shape = tuple(np.broadcast_shapes(_shape_of(count), _shape_of(prob)))
    else:
        _check_shape("binomial", shape, _shape_of(count), _shape_of(prob))
    prob = _asarray(prob)
    if _dkind(prob.dtype) not in "fc":
        prob = lax.convert_element_type(prob, dtypes.default_float_dtype())
    pdt = prob.dtype
    count = _bcast(_to(count, pdt), shape)
    prob = _bcast(prob, shape)
    p_lt_half = lax.lt(prob, _c(0.5, pdt))
    q = lax.select(p_lt_half, prob, lax.sub(_c(1, pdt), prob))
    count_nan_or_neg = lax.bitwise_or(lax.ne(count, count), lax.lt(count, _c(0, pdt)))
    count_inf = lax.eq(lax.abs(count), _c(np.inf, pdt))
    q_is_nan = lax.ne(q, q)
    q_l_0 = lax.lt(q, _c(0, pdt))
    q = lax.select(lax.bitwise_or(q_is_nan, q_l_0), lax.full_like(q, 0.01), q)
    use_inversion = lax.bitwise_or(count_nan_or_neg, lax.le(lax.mul(count, q), _c(10, pdt)))
    count = lax.floor(count)
    count_inv = lax.select(use_inversion, count, lax.full_like(count, 0.0))
    count_btrs = lax.select(use_inversion, lax.full_like(count, 1e4), count)
    q_btrs = lax.select(use_inversion, lax.full_like(q, 0.5), q)
    max_iters = _c(_finfo(dtype).max, pdt) if _finfo(dtype).bits <= _finfo(pdt).bits else _c(np.inf, pdt)
    samples = lax.select(
        use_inversion,
        _binomial_inversion(key, count_inv, q, shape, max_iters),
        _btrs(key, count_btrs, q_btrs, shape, max_iters),
    )
    samples = lax.convert_element_type(samples, dtype)
    invalid = lax.bitwise_or(lax.bitwise_or(q_l_0, q_is_nan), count_nan_or_neg)
    samples = lax.select(invalid, lax.full_like(samples, np.nan), samples)
    samples = lax.select(lax.bitwise_and(count_inf, lax.bitwise_not(invalid)), lax.full_like(samples, np.inf), samples)
    keep = lax.bitwise_or(lax.bitwise_or(p_lt_half, count_nan_or_neg), lax.bitwise_or(q_is_nan, count_inf))
    return lax.select(keep, samples, lax.sub(lax.convert_element_type(count, dtype), samples))


def _random_binomial_impl(key: np.ndarray, count: np.ndarray, prob: np.ndarray) -> np.ndarray:
    # a numba loop per lane, equal to the float32 composite ``_binomial`` (whose compiled while
    # loops take tens of seconds to compile for each shape)
    from fjax import _random_gamma_kernel  # noqa: PLC0415

    return _random_gamma_kernel.sample_binomial(np.asarray(key), np.asarray(count), np.asarray(prob))


def _random_binomial_abstract(key: Any, count: Any, prob: Any) -> ShapedArray:
    if (
        key.dtype != np.uint32
        or key.shape[-1:] != (2,)
        or count.shape != prob.shape
        or tuple(key.shape[:-1]) != prob.shape[: key.ndim - 1]
        or count.dtype != np.float32
        or prob.dtype != np.float32
    ):
        raise TypeError(
            "random_binomial: expected uint32 keys of shape (*batch, 2) leading float32 count and prob of one "
            f"shape, got keys {key.dtype.name}{list(key.shape)}, count {count.dtype.name}{list(count.shape)} "
            f"and prob {prob.dtype.name}{list(prob.shape)}"
        )
    return ShapedArray(prob.shape, np.dtype(np.float32), False)


def _random_binomial_batch(vals: list, dims: list) -> tuple:
    size = next(core.get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not batching.not_mapped)
    vals = [batching.bdim_at_front(v, d, size) for v, d in zip(vals, dims)]
    return random_binomial_p.bind(*vals), 0


random_binomial_p = Primitive("random_binomial")
random_binomial_p.def_impl(_random_binomial_impl)
random_binomial_p.def_abstract_eval(_random_binomial_abstract)
batching.primitive_batchers[random_binomial_p] = _random_binomial_batch
ad.defzero(random_binomial_p)


def binomial(key: Any, n: Any, p: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Binomial(n, p) samples (float dtype), by inversion for n*p <= 10 and BTRS above."""
    key = _check_key("binomial", key)
    dt = _float_dtype("binomial", dtype)
    if shape is not None:
        shape = _canonicalize_shape(shape, "binomial")
    pdt = _asarray(p).dtype
    if pdt.kind not in "fc":
        pdt = dtypes.default_float_dtype()
    if dt == np.float32 and pdt == np.float32:
        # float32: one compiled loop per lane (``random_binomial`` primitive), the same numbers
        if shape is None:
            shape = tuple(np.broadcast_shapes(_shape_of(n), _shape_of(p)))
        else:
            _check_shape("binomial", shape, _shape_of(n), _shape_of(p))
        count = _bcast(_to(n, np.dtype(np.float32)), shape)
        prob = _bcast(_to(p, np.dtype(np.float32)), shape)
        return random_binomial_p.bind(key, count, prob)
    return _binomial(key, n, p, shape, dt)


def multinomial(key: Any, n: Any, p: Any, *, shape: Any = None, dtype: Any = None, unroll: Any = 1) -> Any:
    """Multinomial counts of ``n`` trials over the outcomes on the last axis of ``p`` (a scan of
    conditional binomials, one key per outcome)."""
    key = _check_key("multinomial", key)
    dt = _float_dtype("multinomial", dtype)
    n, p = jnp.asarray(n), jnp.asarray(p)
    common = jnp.result_type(n.dtype, p.dtype)
    if _dkind(common) not in "fc":
        common = dtypes.default_float_dtype()
    n, p = n.astype(common), p.astype(common)
    shape = tuple(p.shape) if shape is None else _canonicalize_shape(shape, "multinomial")
    n = jnp.broadcast_to(n, shape[:-1])
    p = jnp.broadcast_to(p, shape)

    def step(remainder: Any, ratio_key: tuple) -> tuple:
        ratio, k = ratio_key
        count = binomial(k, remainder, jnp.clip(ratio, 0, 1), dtype=remainder.dtype)
        return remainder - count, count

    p = jnp.moveaxis(p, -1, 0)
    remaining = jnp.flip(jnp.cumsum(jnp.flip(p, 0), axis=0), 0)
    ratios = p / jnp.where(remaining == 0, 1, remaining)
    keys = split(key, ratios.shape[0])
    _, counts = lax.scan(step, n, (ratios, keys), unroll=unroll)
    return jnp.moveaxis(counts, 0, -1).astype(dt)


del _r
