"""``method="inverted_cdf"`` of ``jnp.quantile`` / ``percentile`` / ``nanquantile`` / ``nanpercentile``,
the one method that takes ``weights=`` (numpy 2, JAX 0.10).

The quantile ``q`` of values with weights ``w`` (ones when none are given) is the smallest sorted value
whose cumulative weight reaches ``q * total weight``. As JAX: a negative or NaN weight makes the result
NaN; a NaN value makes it NaN (``quantile``) or is left out (its weight counts as zero: ``nanquantile``,
NaN only when every value is NaN).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import fjax.lax as lax
from fjax.dtypes import kind as _dkind
from fjax.numpy._util import canonicalize_axis, promote_dtypes_inexact


def _const(x: Any, v: Any) -> Any:
    return lax.full((), v, x.dtype)


def check_weights(a: Any, weights: Any, axis: Any, method: str) -> Any:
    """``weights`` checked as JAX does and broadcast to ``a``'s shape (``a`` already inexact)."""
    if _dkind(weights.dtype) == "c":
        raise ValueError("Weights cannot be complex types.")
    if method != "inverted_cdf":
        raise NotImplementedError(f"{method} doesn't support weights. Only method 'inverted_cdf' supports weights.")
    if weights.shape == a.shape:
        return weights
    if axis is None:
        raise ValueError("Weights shape must match 'a' shape when axis is None.")
    axes = tuple(canonicalize_axis(ax, a.ndim, "quantile") for ax in (axis if isinstance(axis, tuple) else (axis,)))
    want = tuple(a.shape[ax] for ax in axes)
    if weights.shape != want:
        raise ValueError(f"Weights shape {weights.shape} must match reduction axes {want}")
    order = sorted(range(len(axes)), key=lambda i: axes[i])
    if order != list(range(len(axes))):
        weights = lax.transpose(weights, order)
    return lax.broadcast_in_dim(weights, a.shape, tuple(sorted(axes)))


def promote_with_weights(name: str, a: Any, weights: Any) -> tuple[Any, Any]:
    """``a`` and ``weights`` promoted to one inexact dtype (as JAX's quantile does)."""
    return tuple(promote_dtypes_inexact(name, a, weights))  # type: ignore[return-value]


def inverted_cdf(x: Any, w: Any | None, q: Any, ignore_nan: bool) -> Any:
    """The inverted-CDF quantiles of ``x`` (shape ``lead + (n,)``: the reduced axes flattened last)
    with weights ``w`` (same shape, or None), for ``q`` (rank <= 1): shape ``q.shape + lead``."""
    n = x.shape[-1]
    lead = x.shape[:-1]
    last = x.ndim - 1
    if w is None:
        w = lax.full(x.shape, 1, x.dtype)
    if w.dtype != x.dtype:
        w = lax.convert_element_type(w, x.dtype)
    xs, ws = lax.sort((x, w), dimension=last, num_keys=1)  # (NaNs sort last)
    nan_x = lax.ne(xs, xs)
    bad_w = lax.bitwise_or(lax.lt(ws, _const(ws, 0)), lax.ne(ws, ws))
    clean = lax.select(lax.bitwise_or(bad_w, nan_x), lax.full_like(ws, 0), ws)
    cum = lax.cumsum(clean, axis=last)
    total = lax.slice_in_dim(cum, n - 1, n, axis=last)  # lead + (1,)
    qn = q.ndim
    full = q.shape + lead + (n,)
    qb = lax.broadcast_in_dim(lax.convert_element_type(q, x.dtype), full, tuple(range(qn)))
    target = lax.mul(qb, lax.broadcast_in_dim(total, full, tuple(range(qn, len(full)))))
    cumb = lax.broadcast_in_dim(cum, full, tuple(range(qn, len(full))))
    idx = lax.reduce_sum(lax.convert_element_type(lax.lt(cumb, target), np.int32), (len(full) - 1,))
    if ignore_nan:
        valid = lax.reduce_sum(lax.convert_element_type(lax.bitwise_not(nan_x), np.int32), (last,))
    else:
        valid = lax.full(lead, n, np.int32)
    validb = lax.broadcast_in_dim(valid, idx.shape, tuple(range(qn, idx.ndim)))
    idx = lax.max(lax.min(idx, lax.sub(validb, lax.full((), 1, np.int32))), lax.full((), 0, np.int32))
    # the value at idx, per quantile and leading position (a one-hot sum: NaNs elsewhere do not leak)
    hit = lax.eq(
        lax.broadcast_in_dim(idx, full, tuple(range(idx.ndim))), lax.broadcasted_iota(np.int32, full, len(full) - 1)
    )
    xb = lax.broadcast_in_dim(xs, full, tuple(range(qn, len(full))))
    res = lax.reduce_sum(lax.select(hit, xb, lax.full_like(xb, 0)), (len(full) - 1,))
    force = lax.reduce_or(bad_w, (last,))
    if ignore_nan:
        force = lax.bitwise_or(force, lax.eq(valid, lax.full((), 0, np.int32)))
    else:
        force = lax.bitwise_or(force, lax.reduce_or(nan_x, (last,)))
    force = lax.broadcast_in_dim(force, res.shape, tuple(range(qn, res.ndim)))
    return lax.select(force, lax.full_like(res, np.nan), res)
