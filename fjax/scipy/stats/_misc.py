"""``jax.scipy.stats`` functions that are not distributions (``mode``, ``rankdata``, ``sem``)
and ``gaussian_kde``."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from fjax import dtypes
from fjax import numpy as jnp
from fjax.dtypes import kind as _dkind
from fjax.scipy import special as sp


class ModeResult(NamedTuple):
    mode: Any
    count: Any


def _check_nan_policy(name: str, nan_policy: str) -> None:
    if nan_policy not in ("propagate", "omit", "raise"):
        raise ValueError(f"{name}: illegal nan_policy value {nan_policy!r}")
    if nan_policy != "propagate":
        raise NotImplementedError(f"{name}: nan_policy={nan_policy!r} is not supported (only 'propagate')")


def mode(a: Any, axis: int | None = 0, nan_policy: str = "propagate", keepdims: bool = False) -> ModeResult:
    """The most common value along ``axis`` (the smallest of ties) and its count."""
    _check_nan_policy("mode", nan_policy)
    x = jnp.asarray(a)
    if axis is None:
        x = x.ravel()
        axis = 0
    if x.ndim == 0:
        x = x.reshape(1)
    axis = axis % x.ndim
    xm = jnp.moveaxis(x, axis, -1)
    if xm.shape[-1] == 0:
        raise ValueError("mode: cannot compute the mode along an axis of size 0")
    counts = jnp.sum(xm[..., :, None] == xm[..., None, :], axis=-1)
    best = jnp.max(counts, axis=-1, keepdims=True)
    # above every element: inf, or the largest value where the dtype has no inf (float8_e4m3fn, int4)
    big = jnp.asarray(dtypes._extremes(xm.dtype)[1], xm.dtype)
    m = jnp.min(jnp.where(counts == best, xm, big), axis=-1)
    c = best[..., 0]
    if _dkind(xm.dtype) == "f":
        has_nan = jnp.any(jnp.isnan(xm), axis=-1)
        m = jnp.where(has_nan, np.nan, m)
        c = jnp.where(has_nan, jnp.sum(jnp.isnan(xm), axis=-1), c)
    if keepdims:
        m, c = jnp.expand_dims(m, axis), jnp.expand_dims(c, axis)
    return ModeResult(m, c)


def rankdata(a: Any, method: str = "average", *, axis: int | None = None, nan_policy: str = "propagate") -> Any:
    """Ranks of ``a`` (1-based) with ties resolved by ``method`` ('average', 'min', 'max',
    'dense' or 'ordinal'). Ties are found by comparing all pairs along the axis (O(n^2))."""
    _check_nan_policy("rankdata", nan_policy)
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"unknown method '{method}'")
    x = jnp.asarray(a)
    if axis is None:
        x = x.ravel()
        axis = 0
    axis = axis % max(x.ndim, 1)
    xm = jnp.moveaxis(x, axis, -1)
    xi, xj = xm[..., :, None], xm[..., None, :]
    if method == "ordinal":
        r = jnp.argsort(jnp.argsort(xm, axis=-1, stable=True), axis=-1, stable=True) + 1
    else:
        less = jnp.sum(xj < xi, axis=-1)
        equal = jnp.sum(xj == xi, axis=-1)
        if method == "average":
            r = less + (equal + 1) / 2
        elif method == "min":
            r = less + 1
        elif method == "max":
            r = less + equal
        else:
            eq_j = jnp.sum(xm[..., :, None] == xm[..., None, :], axis=-2)  # multiplicity of each x_j
            r = jnp.sum(jnp.where(xj < xi, 1.0 / eq_j[..., None, :], 0.0), axis=-1)
            r = jnp.round(r).astype(jnp.result_type(int)) + 1
    if method == "average" and _dkind(xm.dtype) == "f":
        r = jnp.where(jnp.any(jnp.isnan(xm), axis=-1, keepdims=True), np.nan, r)
    return jnp.moveaxis(r, -1, axis)


def sem(a: Any, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *, keepdims: bool = False) -> Any:
    """Standard error of the mean: std(a, ddof) / sqrt(n)."""
    _check_nan_policy("sem", nan_policy)
    x = jnp.asarray(a)
    if _dkind(x.dtype) not in "fc":
        x = x.astype(jnp.result_type(float))
    if axis is None:
        x = x.ravel()
        axis = 0
    n = x.shape[axis]
    return jnp.std(x, axis=axis, ddof=ddof, keepdims=keepdims) / math.sqrt(n)


class gaussian_kde:  # noqa: N801
    """Gaussian kernel density estimate of a ``(d, n)`` (or ``(n,)``) dataset, as
    ``jax.scipy.stats.gaussian_kde``. Multivariate data (d > 1) needs
    ``fjax.numpy.linalg.cholesky``."""

    def __init__(self, dataset: Any, bw_method: Any = None, weights: Any = None):
        data = jnp.atleast_2d(jnp.asarray(dataset))
        if _dkind(data.dtype) not in "f":
            data = data.astype(jnp.result_type(float))
        d, n = data.shape
        if n < 2:
            raise ValueError("`dataset` input should have multiple elements.")
        if weights is None:
            w = jnp.full((n,), 1.0 / n, data.dtype)
        else:
            w = jnp.asarray(weights, data.dtype)
            if w.ndim != 1 or w.shape[0] != n:
                raise ValueError("`weights` input should be one-dimensional and of the size of the dataset.")
            w = w / jnp.sum(w)
        self.dataset, self.weights, self.d, self.n = data, w, d, n
        self.neff = 1.0 / jnp.sum(w * w)
        if bw_method is None or bw_method == "scott":
            self.factor = self.neff ** (-1.0 / (d + 4))
        elif bw_method == "silverman":
            self.factor = (self.neff * (d + 2) / 4.0) ** (-1.0 / (d + 4))
        elif callable(bw_method):
            self.factor = bw_method(self)
        elif np.isscalar(bw_method):
            self.factor = jnp.asarray(bw_method, data.dtype)
        else:
            raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar or a callable.")
        mean = jnp.sum(data * w, axis=1, keepdims=True)
        centered = data - mean
        data_cov = (centered * w) @ centered.T / (1 - jnp.sum(w * w))
        self.covariance = data_cov * self.factor**2
        self._mean = mean

    def _chol(self) -> Any:
        if self.d == 1:
            return jnp.sqrt(self.covariance)
        try:
            from fjax.numpy.linalg import cholesky  # noqa: PLC0415
        except ImportError:
            raise NotImplementedError(
                "gaussian_kde with multivariate data needs fjax.numpy.linalg.cholesky, which this build lacks"
            ) from None
        return cholesky(self.covariance)

    def logpdf(self, x: Any) -> Any:
        """Log density at the points ``x`` (shape ``(d, m)``, or ``(m,)`` when d == 1)."""
        pts = jnp.atleast_2d(jnp.asarray(x, self.dataset.dtype))
        if pts.shape[0] != self.d:
            if pts.shape == (1, self.d) or pts.shape[1] == self.d and pts.ndim == 2 and self.d > 1:
                pts = pts.T
            else:
                raise ValueError(f"points have dimension {pts.shape[0]}, dataset has dimension {self.d}")
        chol = self._chol()
        if self.d == 1:
            inv = 1.0 / chol[0, 0]
            diff = (pts[:, :, None] - self.dataset[:, None, :]) * inv  # (1, m, n)
            log_det = jnp.log(chol[0, 0])
        else:
            from fjax.scipy.linalg import solve_triangular  # noqa: PLC0415

            diff = pts[:, :, None] - self.dataset[:, None, :]
            diff = solve_triangular(chol, diff.reshape(self.d, -1), lower=True).reshape(diff.shape)
            log_det = jnp.sum(jnp.log(jnp.diagonal(chol)))
        energy = 0.5 * jnp.sum(diff * diff, axis=0)  # (m, n)
        norm = log_det + 0.5 * self.d * math.log(2 * math.pi)
        return sp.logsumexp(-energy, axis=1, b=self.weights[None, :]) - norm

    def evaluate(self, points: Any) -> Any:
        """Density at ``points``."""
        return jnp.exp(self.logpdf(points))

    __call__ = evaluate
    pdf = evaluate

    def integrate_box_1d(self, low: Any, high: Any) -> Any:
        """Probability mass in [low, high] (1-D data only)."""
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        sd = jnp.sqrt(self.covariance[0, 0])
        lo = (low - self.dataset[0]) / sd
        hi = (high - self.dataset[0]) / sd
        return jnp.sum(self.weights * (sp.ndtr(hi) - sp.ndtr(lo)))

    def resample(self, key: Any, shape: tuple = ()) -> Any:
        """Samples of shape ``(d, *shape)`` from the estimate."""
        from fjax import random  # noqa: PLC0415

        k1, k2 = random.split(key)
        ind = random.choice(k1, self.n, shape=tuple(shape), p=self.weights)
        eps = random.normal(k2, (self.d, *shape), dtype=self.dataset.dtype)
        chol = self._chol()
        noise = chol @ eps.reshape(self.d, -1) if self.d > 1 else chol[0, 0] * eps.reshape(1, -1)
        return self.dataset[:, ind] + noise.reshape((self.d, *shape))
