"""Small differentiable matrix helpers for the linear-algebra rules (written with lax primitives,
so every rule built on them composes with every transform), plus the host-side helpers the
``impl`` rules share (batch loops over LAPACK calls, NaN-filled failures)."""

from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence

import numpy as np

from fjax import core
from fjax.core import Array
from fjax.dtypes import kind as _dkind
from fjax.lax import lax, slicing


def shape(x: Any) -> tuple[int, ...]:
    return tuple(core.get_aval(x).shape)


def dtype(x: Any) -> np.dtype:
    return core.get_aval(x).dtype


def const(x: Any, v: Any, dt: Any = None) -> Array:
    return Array(np.array(v, dtype=dt if dt is not None else dtype(x)), False)


def T(x: Any) -> Any:
    """Swap the last two axes."""
    nd = len(shape(x))
    perm = tuple(range(nd - 2)) + (nd - 1, nd - 2)
    return lax.transpose(x, perm)


def conj(x: Any) -> Any:
    return lax.conj(x) if _dkind(dtype(x)) == "c" else x


def H(x: Any) -> Any:
    """Conjugate transpose of the last two axes."""
    return conj(T(x))


def real(x: Any) -> Any:
    return lax.real(x) if _dkind(dtype(x)) == "c" else x


def astype(x: Any, dt: Any) -> Any:
    dt = np.dtype(dt)
    if dtype(x) == dt:
        return x
    if _dkind(dtype(x)) == "c" and _dkind(dt) != "c":
        x = lax.real(x)
    return lax.convert_element_type(x, dt)


def mm(a: Any, b: Any) -> Any:
    """Batched matrix product over equal leading dims: ``a[..., m, k] @ b[..., k, n]``."""
    sa, sb = shape(a), shape(b)
    nd = len(sa)
    if len(sb) != nd or sa[:-2] != sb[:-2]:
        raise ValueError(f"batched matmul: incompatible shapes {sa} and {sb}")
    if dtype(a) != dtype(b):
        dt = np.promote_types(dtype(a), dtype(b))
        a, b = astype(a, dt), astype(b, dt)
    batch = tuple(range(nd - 2))
    return lax.dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)))


def bcast(x: Any, shp: Sequence[int]) -> Any:
    """Broadcast ``x`` (rank equal to ``len(shp)``, size-1 dims allowed) to ``shp``."""
    shp = tuple(shp)
    if shape(x) == shp:
        return x
    return lax.broadcast_in_dim(x, shp, tuple(range(len(shp))))


def _bshape(sa: Sequence[int], sb: Sequence[int]) -> tuple[int, ...]:
    return tuple(p if q == 1 else q for p, q in zip(sa, sb))


def mul(a: Any, b: Any) -> Any:
    """Elementwise product with numpy broadcasting over equal ranks."""
    sa, sb = shape(a), shape(b)
    if len(sa) < len(sb):
        a = lax.reshape(a, (1,) * (len(sb) - len(sa)) + sa)
    elif len(sb) < len(sa):
        b = lax.reshape(b, (1,) * (len(sa) - len(sb)) + sb)
    out = _bshape(shape(a), shape(b))
    if dtype(a) != dtype(b):
        dt = np.promote_types(dtype(a), dtype(b))
        a, b = astype(a, dt), astype(b, dt)
    return lax.mul(bcast(a, out), bcast(b, out))


def add(a: Any, b: Any) -> Any:
    sa, sb = shape(a), shape(b)
    out = _bshape(sa, sb)
    return lax.add(bcast(a, out), bcast(b, out))


def sub(a: Any, b: Any) -> Any:
    sa, sb = shape(a), shape(b)
    out = _bshape(sa, sb)
    return lax.sub(bcast(a, out), bcast(b, out))


def div(a: Any, b: Any) -> Any:
    sa, sb = shape(a), shape(b)
    out = _bshape(sa, sb)
    if dtype(a) != dtype(b):
        dt = np.promote_types(dtype(a), dtype(b))
        a, b = astype(a, dt), astype(b, dt)
    return lax.div(bcast(a, out), bcast(b, out))


def tri_mask(m: int, n: int, k: int, lower: bool) -> Array:
    r = np.arange(m)[:, None]
    c = np.arange(n)[None, :]
    return Array(c - r <= k if lower else c - r >= k, False)


def tril(x: Any, k: int = 0) -> Any:
    s = shape(x)
    mask = bcast(lax.reshape(tri_mask(s[-2], s[-1], k, True), (1,) * (len(s) - 2) + s[-2:]), s)
    return lax.select(mask, x, lax.full(s, 0, dtype(x)))


def triu(x: Any, k: int = 0) -> Any:
    s = shape(x)
    mask = bcast(lax.reshape(tri_mask(s[-2], s[-1], k, False), (1,) * (len(s) - 2) + s[-2:]), s)
    return lax.select(mask, x, lax.full(s, 0, dtype(x)))


def eye(n: int, dt: Any, ndim: int = 2) -> Array:
    return Array(np.eye(n, dtype=dt).reshape((1,) * (ndim - 2) + (n, n)), False)


def diag(x: Any) -> Any:
    """The diagonal of the last two (square) axes."""
    s = shape(x)
    n = min(s[-2], s[-1])
    if s[-2] != s[-1]:
        x = slicing.slice(x, (0,) * len(s), s[:-2] + (n, n))
    return lax.reduce_sum(mul(x, eye(n, dtype(x), len(s))), (len(s) - 1,))


def diag_embed(v: Any) -> Any:
    """``v[..., n]`` -> diagonal matrices ``[..., n, n]``."""
    s = shape(v)
    n = s[-1]
    return mul(lax.expand_dims(v, (len(s) - 1,)), eye(n, dtype(v), len(s) + 1))


def symmetrize(x: Any) -> Any:
    """``(x + x^H) / 2``, the input symmetrization JAX applies before cholesky and eigh."""
    return lax.div(lax.add(x, H(x)), const(x, 2))


# ---------------------------------------------------------------------------------------------
# host helpers for the impl rules


def batch_apply(fn: Callable, arrays: Sequence[np.ndarray], core_ndims: Sequence[int], outs: Sequence[tuple]) -> list:
    """Apply ``fn`` (one problem -> tuple of arrays) over the common leading batch dims.

    ``outs`` gives each output's (core shape, dtype) so empty batches and failures have a shape.
    """
    bshape = arrays[0].shape[: arrays[0].ndim - core_ndims[0]]
    nb = int(np.prod(bshape)) if bshape else 1
    if nb == 1:
        # one problem: no copies into a batch buffer
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fn(*[a.reshape(a.shape[a.ndim - c :]) for a, c in zip(arrays, core_ndims)])
        return [np.asarray(v, dtype=dt).reshape(bshape + tuple(s)) for v, (s, dt) in zip(r, outs)]
    flat = [a.reshape((nb,) + a.shape[a.ndim - c :]) for a, c in zip(arrays, core_ndims)]
    res = [np.empty((nb,) + tuple(s), dtype=dt) for s, dt in outs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(nb):
            r = fn(*[f[i] for f in flat])
            for dst, v in zip(res, r):
                dst[i] = v
    return [r.reshape(bshape + r.shape[1:]) for r in res]


def nan_like(shape: tuple, dt: Any) -> np.ndarray:
    dt = np.dtype(dt)
    if _dkind(dt) in "iub":
        return np.zeros(shape, dt)
    return np.full(shape, np.nan, dt)


def perm_matrix(perm: Any, dt: Any) -> Any:
    """One-hot ``P[..., i, j] = (perm[..., i] == j)``, so ``P @ x == x[..., perm, :]`` and
    ``x @ P^T == x[..., :, perm]`` (differentiable in ``x``, integer ``perm`` is a constant)."""
    s = shape(perm)
    m = s[-1]
    nd = len(s)
    p = lax.broadcast_in_dim(perm, s + (m,), tuple(range(nd)))
    iota = lax.broadcasted_iota(dtype(perm), s + (m,), nd)
    return lax.convert_element_type(lax.eq(p, iota), dt)
