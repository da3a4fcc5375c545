"""Random samplers that need linear algebra (re-exported by ``fjax.random``):
``multivariate_normal`` (cholesky, eigh or svd factor of the covariance, as JAX) and
``orthogonal`` (QR of a normal matrix with the sign of R's diagonal folded in, as JAX), so the
same key gives the same samples as JAX's algorithms."""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from fjax import lax
from fjax import numpy as jnp
from fjax import random as _random
from fjax.dtypes import kind as _dkind

__all__ = ["multivariate_normal", "orthogonal"]


def multivariate_normal(
    key: Any,
    mean: Any,
    cov: Any,
    shape: Sequence[int] | None = None,
    dtype: Any = None,
    method: str = "cholesky",
) -> Any:
    """Samples of ``N(mean, cov)``: ``mean + factor @ z`` with ``z`` standard normal and ``factor``
    the Cholesky factor of ``cov`` (``method='eigh'``: ``v sqrt(w)``, ``'svd'``: ``u sqrt(s)``).
    ``shape`` is the batch shape (broadcast-compatible with ``mean.shape[:-1]`` and
    ``cov.shape[:-2]``); the result has shape ``shape + mean.shape[-1:]``."""
    if method not in {"svd", "eigh", "cholesky"}:
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    key = _random._check_key("multivariate_normal", key)
    dt = _random._user_dtype(dtype, float)
    if _dkind(dt) != "f":
        raise ValueError(f"dtype argument to `multivariate_normal` must be a float dtype, got {dt}")
    mean = jnp.asarray(mean).astype(dt)
    cov = jnp.asarray(cov).astype(dt)
    if mean.ndim < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {mean.ndim}")
    if cov.ndim < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {cov.ndim}")
    n = mean.shape[-1]
    if tuple(cov.shape[-2:]) != (n, n):
        raise ValueError(
            f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but got cov.shape == {cov.shape}."
        )
    if shape is None:
        shape = tuple(np.broadcast_shapes(tuple(mean.shape[:-1]), tuple(cov.shape[:-2])))
    else:
        shape = _random._canonicalize_shape(shape, "multivariate_normal")
        _random._check_shape("normal", shape, tuple(mean.shape[:-1]), tuple(cov.shape[:-2]))
    if method == "svd":
        u, s, _ = jnp.linalg.svd(cov)
        factor = u * jnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = jnp.linalg.eigh(cov)
        factor = v * jnp.sqrt(w[..., None, :])
    else:
        factor = jnp.linalg.cholesky(cov)
    z = _random.normal(key, shape + (n,), dt)
    return mean + jnp.einsum("...ij,...j->...i", factor, z)


def orthogonal(key: Any, n: int, shape: Sequence[int] = (), dtype: Any = None, m: int | None = None) -> Any:
    """Samples from the Haar measure on ``n x m`` matrices with orthonormal columns (rows when
    ``n < m``): the QR of a standard normal matrix, each column of Q multiplied by the sign of
    R's diagonal."""
    key = _random._check_key("orthogonal", key)
    shape = _random._canonicalize_shape(shape, "orthogonal")
    dt = _random._user_dtype(dtype, float)
    n = operator.index(n)
    m = n if m is None else operator.index(m)
    z = _random.normal(key, (*shape, max(n, m), min(n, m)), dt)
    q, r = jnp.linalg.qr(z)
    d = jnp.linalg.diagonal(r)
    x = q * jnp.expand_dims(lax.sign(d), -2)
    if n < m:
        x = jnp.matrix_transpose(x)
    return x
