"""``fjax.scipy.interpolate``: ``RegularGridInterpolator`` (linear and nearest), as
``jax.scipy.interpolate``."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

import fjax.numpy as jnp
from fjax.numpy import _util

__all__ = ["RegularGridInterpolator"]


class RegularGridInterpolator:
    """Interpolate on a regular (rectilinear) grid in any number of dimensions, as
    ``scipy.interpolate.RegularGridInterpolator`` / ``jax.scipy.interpolate.RegularGridInterpolator``.

    ``points``: one strictly increasing 1-D array of coordinates per dimension (as in JAX, a
    decreasing axis is not detected); ``values``: shape ``(len(points[0]), ..., *trailing)``;
    ``method``: ``"linear"`` or ``"nearest"`` (ties go to the lower grid point, as scipy);
    ``fill_value``: returned outside the grid (NaN by default), or None to extrapolate from the
    edge cells. ``bounds_error=True`` raises NotImplementedError, as in JAX. Integer values are
    interpolated as floats. Differentiable in ``values`` and in the query points (linear)."""

    def __init__(
        self,
        points: Sequence[Any],
        values: Any,
        method: str = "linear",
        bounds_error: bool = False,
        fill_value: Any = np.nan,
    ):
        if method not in ("linear", "nearest"):
            raise ValueError(f"method {method!r} is not defined")
        if bounds_error:
            raise NotImplementedError("`bounds_error` takes no effect under JIT")
        self.method = method
        self.bounds_error = bounds_error
        _util.check_arraylike("RegularGridInterpolator", values)
        (values,) = _util.promote_dtypes_inexact("RegularGridInterpolator", values)
        grid = tuple(_util.promote_dtypes_inexact("RegularGridInterpolator", p)[0] for p in points)
        if len(grid) > values.ndim:
            raise ValueError(f"there are {len(grid)} point arrays, but values has {values.ndim} dimensions")
        for i, g in enumerate(grid):
            if g.ndim != 1:
                raise ValueError(f"the points in dimension {i} must be 1-dimensional, got shape {g.shape}")
            if g.shape[0] != values.shape[i]:
                raise ValueError(
                    f"there are {g.shape[0]} points and {values.shape[i]} values in dimension {i} "
                    f"(values shape {values.shape})"
                )
            if g.shape[0] < 2 and method == "linear":
                raise ValueError(f"linear interpolation needs at least 2 points in dimension {i}, got {g.shape[0]}")
        if fill_value is not None:
            (fill_value,) = _util.promote_dtypes_inexact("RegularGridInterpolator", fill_value)
        self.grid = grid
        self.values = values
        self.fill_value = fill_value

    def _query_points(self, xi: Any) -> tuple[Any, tuple[int, ...]]:
        ndim = len(self.grid)
        if isinstance(xi, (tuple, list)) and len(xi) == ndim and not np.isscalar(xi[0]):
            xi = jnp.stack(jnp.broadcast_arrays(*[jnp.asarray(x) for x in xi]), axis=-1)
        _util.check_arraylike("RegularGridInterpolator", xi)
        (xi,) = _util.promote_dtypes_inexact("RegularGridInterpolator", xi)
        if xi.ndim == 0 or xi.shape[-1] != ndim:
            got = xi.shape[-1] if xi.ndim else 0
            raise ValueError(
                f"the requested sample points xi have dimension {got}, but this RegularGridInterpolator has "
                f"dimension {ndim}"
            )
        lead = xi.shape[:-1] if xi.ndim > 1 else (1,)  # one point of shape (ndim,) gives (1,), as JAX
        return xi.reshape(-1, ndim), lead

    def __call__(self, xi: Any, method: str | None = None) -> Any:
        """Interpolated values at ``xi`` (shape ``(..., ndim)``, or a tuple of ``ndim`` arrays
        that broadcast together): shape ``(..., *values.shape[ndim:])``."""
        method = self.method if method is None else method
        if method not in ("linear", "nearest"):
            raise ValueError(f"method {method!r} is not defined")
        xi, lead = self._query_points(xi)
        idx, frac, outside = [], [], jnp.zeros(xi.shape[:1], bool)
        for d, g in enumerate(self.grid):
            x = xi[:, d]
            n = g.shape[0]
            i = jnp.clip(jnp.searchsorted(g, x, side="left") - 1, 0, max(n - 2, 0))
            lo, hi = g[i], g[jnp.minimum(i + 1, n - 1)]
            t = (x - lo) / jnp.where(hi == lo, 1, hi - lo)
            idx.append(i)
            frac.append(t)
            outside = outside | (x < g[0]) | (x > g[-1])
        tail = self.values.shape[len(self.grid) :]
        if method == "nearest":
            nearest = tuple(jnp.where(t <= 0.5, i, i + 1) for i, t in zip(idx, frac))
            out = self.values[nearest]
        else:
            out = 0
            for corner in itertools.product((0, 1), repeat=len(self.grid)):
                w = 1
                for c, t in zip(corner, frac):
                    w = w * (t if c else 1 - t)
                w = w.reshape(w.shape + (1,) * len(tail))
                out = out + w * self.values[tuple(i + c for i, c in zip(idx, corner))]
        if self.fill_value is not None:
            out = jnp.where(outside.reshape(outside.shape + (1,) * len(tail)), self.fill_value, out)
        return out.reshape(lead + tail)
