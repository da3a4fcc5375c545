"""``fjax.scipy.ndimage``: ``map_coordinates`` with nearest (order 0) and linear (order 1)
interpolation, as ``jax.scipy.ndimage`` (whose ``'constant'`` and ``'wrap'`` modes are scipy's
``'grid-constant'`` and ``'grid-wrap'``)."""

from __future__ import annotations

import functools
import itertools
import operator
from typing import Any, Callable, Sequence

import numpy as np

from fjax import lax
from fjax import numpy as jnp
from fjax.dtypes import kind as _dkind

__all__ = ["map_coordinates"]


def _mirror(index: Any, size: int) -> Any:
    s = size - 1  # half period of the triangle wave
    if s == 0:
        return jnp.zeros_like(index)
    return jnp.abs((index + s) % (2 * s) - s)


def _reflect(index: Any, size: int) -> Any:
    return jnp.floor_divide(_mirror(2 * index + 1, 2 * size + 1) - 1, 2)


_FIXERS: dict[str, Callable] = {
    "constant": lambda i, n: i,
    "nearest": lambda i, n: jnp.clip(i, 0, n - 1),
    "wrap": lambda i, n: i % n,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _nearest(c: Any) -> list:
    idx = c if _dkind(c.dtype) in "iu" else lax.round(c)
    return [(idx.astype(np.int32), None)]


def _linear(c: Any) -> list:
    lo = jnp.floor(c)
    w_hi = c - lo
    i = lo.astype(np.int32)
    return [(i, 1 - w_hi), (i + 1, w_hi)]


def map_coordinates(
    input: Any,  # noqa: A002
    coordinates: Sequence[Any],
    order: int,
    mode: str = "constant",
    cval: Any = 0.0,
) -> Any:
    """Values of ``input`` interpolated at ``coordinates`` (one array per input dimension)."""
    arr = jnp.asarray(input)
    coords = [jnp.asarray(c) for c in coordinates]
    if len(coords) != arr.ndim:
        raise ValueError(f"coordinates must be a sequence of length input.ndim, but {len(coords)} != {arr.ndim}")
    fixer = _FIXERS.get(mode)
    if fixer is None:
        raise NotImplementedError(
            f"fjax.scipy.ndimage.map_coordinates does not yet support mode {mode}. "
            f"Currently supported modes are {set(_FIXERS)}."
        )
    if order == 0:
        nodes_of = _nearest
    elif order == 1:
        nodes_of = _linear
    else:
        raise NotImplementedError("jax.scipy.ndimage.map_coordinates currently requires order<=1")
    if coords and _dkind(coords[0].dtype) not in "fc" and order == 1:
        coords = [c.astype(jnp.result_type(float)) for c in coords]
    cval = jnp.asarray(cval, arr.dtype)
    per_dim = []
    for c, n in zip(coords, arr.shape):
        items = []
        for idx, w in nodes_of(c):
            valid = ((idx >= 0) & (idx < n)) if mode == "constant" else None
            items.append((jnp.clip(fixer(idx, n), 0, max(n - 1, 0)), valid, w))
        per_dim.append(items)
    out = None
    for combo in itertools.product(*per_dim):
        idxs = tuple(i for i, _, _ in combo)
        vals = arr[idxs]
        valids = [v for _, v, _ in combo if v is not None]
        if valids:
            vals = jnp.where(functools.reduce(operator.and_, valids), vals, cval)
        weights = [w for _, _, w in combo if w is not None]
        term = functools.reduce(operator.mul, weights) * vals if weights else vals
        out = term if out is None else out + term
    if _dkind(arr.dtype) in "iu":
        out = lax.round(out) if _dkind(out.dtype) == "f" else out
    return out.astype(arr.dtype)
