"""``fjax.scipy.cluster.vq``: assign observations to their nearest code (``jax.scipy.cluster.vq``)."""

from __future__ import annotations

from typing import Any

import fjax.numpy as jnp
from fjax.numpy import _util

__all__ = ["vq"]


def vq(obs: Any, code_book: Any, check_finite: bool = True) -> tuple[Any, Any]:
    """The index of the nearest row of ``code_book`` (K, N) for each row of ``obs`` (M, N), and
    the Euclidean distance to it, as ``scipy.cluster.vq.vq`` (1-D inputs are length-1 vectors).
    Returns ``(code, dist)``: int32 (M,) and float (M,); ``check_finite`` is unused, as in JAX.
    Differentiable in ``obs`` and ``code_book`` through ``dist``."""
    _util.check_arraylike("vq", obs, code_book)
    obs, code_book = _util.promote_dtypes_inexact("vq", obs, code_book)
    if obs.ndim != code_book.ndim:
        raise ValueError("Observation and code_book should have the same rank")
    if obs.ndim == 1:
        obs, code_book = obs[:, None], code_book[:, None]
    if obs.ndim != 2:
        raise ValueError(f"vq: obs and code_book must be 1-D or 2-D, got shapes {obs.shape} and {code_book.shape}")
    if obs.shape[1] != code_book.shape[1]:
        raise ValueError(
            f"vq: observations have {obs.shape[1]} features but codes have {code_book.shape[1]} "
            f"(obs shape {obs.shape}, code_book shape {code_book.shape})"
        )
    d2 = jnp.sum((obs[:, None, :] - code_book[None, :, :]) ** 2, axis=-1)
    code = jnp.argmin(d2, axis=1)
    # the distance is recomputed from the chosen code so its gradient is that of a norm
    diff = obs - code_book[code]
    return code.astype(jnp.int32), jnp.sqrt(jnp.sum(diff * diff, axis=-1))
