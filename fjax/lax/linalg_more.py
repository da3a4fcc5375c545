"""More ``lax.linalg`` primitives: ``tridiagonal_solve`` (with JVP, transpose and batching),
``schur``, ``hessenberg`` and ``householder_product`` (LAPACK gees/gehrd/orgqr, not
differentiable, as in JAX), plus a differentiable general LU solve used by other rules."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fjax import core
from fjax._lazy import LazyModule
from fjax.core import Primitive, ShapedArray
from fjax.dtypes import kind as _dkind
from fjax.interpreters import ad
from fjax.interpreters.ad import Zero
from fjax.lax import _linalg_util as u
from fjax.lax import lax, slicing
from fjax.lax.linalg import (
    _batch_front,
    _check_inexact,
    _check_square,
    _desc,
    lu,
    triangular_solve,
)

__all__ = [
    "hessenberg",
    "hessenberg_p",
    "householder_product",
    "householder_product_p",
    "schur",
    "schur_p",
    "tridiagonal_solve",
    "tridiagonal_solve_p",
]


sla = LazyModule("scipy.linalg")


def _no_jvp(name: str) -> Callable:
    def rule(primals: list, tangents: list, **params: Any) -> tuple:
        raise NotImplementedError(f"Differentiation of {name} is not implemented (as in JAX)")

    return rule


# ---------------------------------------------------------------------------------------------
# tridiagonal_solve


def _tridiagonal_solve_impl(dl: np.ndarray, d: np.ndarray, du: np.ndarray, b: np.ndarray) -> np.ndarray:
    if b.size == 0:
        return np.zeros_like(b)
    (gtsv,) = sla.get_lapack_funcs(("gtsv",), (d, b))

    def one(dl_: np.ndarray, d_: np.ndarray, du_: np.ndarray, b_: np.ndarray) -> tuple:
        if d_.shape[0] == 1:  # gtsv rejects empty off-diagonals
            return (b_ / d_[0],)
        *_, x, info = gtsv(dl_[1:], d_, du_[:-1], b_)
        if info != 0:
            return (u.nan_like(b_.shape, b_.dtype),)
        return (x,)

    return u.batch_apply(one, [dl, d, du, b], [1, 1, 1, 2], [(b.shape[-2:], b.dtype)])[0]


def _tridiagonal_solve_abstract(dl: ShapedArray, d: ShapedArray, du: ShapedArray, b: ShapedArray) -> ShapedArray:
    for x in (dl, d, du, b):
        _check_inexact("tridiagonal_solve", x)
    if not (dl.dtype == d.dtype == du.dtype == b.dtype):
        raise TypeError(
            "tridiagonal_solve: dl, d, du and b must have the same dtype, got "
            f"{_desc(dl)}, {_desc(d)}, {_desc(du)}, {_desc(b)}"
        )
    if b.ndim < 2 or not (dl.shape == d.shape == du.shape == b.shape[:-1]):
        raise ValueError(
            "tridiagonal_solve: dl, d and du must have shape [..., m] and b shape [..., m, n]; got "
            f"{tuple(dl.shape)}, {tuple(d.shape)}, {tuple(du.shape)} and {tuple(b.shape)}"
        )
    return ShapedArray(b.shape, b.dtype)


tridiagonal_solve_p = Primitive("tridiagonal_solve")
tridiagonal_solve_p.def_impl(_tridiagonal_solve_impl)
tridiagonal_solve_p.def_abstract_eval(_tridiagonal_solve_abstract)


def _shift(x: Any, down: bool) -> Any:
    """Rows of ``x[..., m, n]`` moved one down (``x[i-1]``, zero first) or up (``x[i+1]``)."""
    s = u.shape(x)
    nd = len(s)
    if s[-2] == 0:
        return x
    zero = lax.full(s[:-2] + (1, s[-1]), 0, u.dtype(x))
    if down:
        body = slicing.slice(x, (0,) * nd, s[:-2] + (s[-2] - 1, s[-1]))
        return slicing.concatenate([zero, body], nd - 2)
    body = slicing.slice(x, (0,) * (nd - 2) + (1, 0), s)
    return slicing.concatenate([body, zero], nd - 2)


def _tridiagonal_solve_jvp(primals: list, tangents: list) -> tuple:
    dl, d, du, b = primals
    gdl, gd, gdu, gb = tangents
    x = tridiagonal_solve_p.bind(dl, d, du, b)
    nd = len(u.shape(b))
    # A x = b  =>  A dx = db - dA x
    rhs = None if type(gb) is Zero else gb
    for g, xx in ((gdl, _shift(x, True)), (gd, x), (gdu, _shift(x, False))):
        if type(g) is Zero:
            continue
        term = u.mul(lax.expand_dims(g, (nd - 1,)), xx)
        rhs = lax.neg(term) if rhs is None else lax.sub(rhs, term)
    if rhs is None:
        return x, Zero(ad.tangent_aval(core.get_aval(x)))
    return x, tridiagonal_solve_p.bind(dl, d, du, rhs)


def _tridiagonal_solve_transpose(ct: Any, dl: Any, d: Any, du: Any, b: Any) -> list:
    if any(ad.is_undefined_primal(z) for z in (dl, d, du)):
        raise NotImplementedError("tridiagonal_solve is linear only in b; cannot transpose with respect to dl, d, du")
    if type(ct) is Zero:
        return [None, None, None, Zero(b.aval)]
    # the transpose of a tridiagonal matrix swaps its sub- and super-diagonals (shifted by one)
    s = u.shape(du)
    nd = len(s)
    m = s[-1]
    if m == 0:
        return [None, None, None, ct]
    zero = lax.full(s[:-1] + (1,), 0, u.dtype(du))
    dl_t = slicing.concatenate([zero, slicing.slice(du, (0,) * nd, s[:-1] + (m - 1,))], nd - 1)
    du_t = slicing.concatenate([slicing.slice(dl, (0,) * (nd - 1) + (1,), s), zero], nd - 1)
    return [None, None, None, tridiagonal_solve_p.bind(dl_t, d, du_t, ct)]


ad.primitive_jvps[tridiagonal_solve_p] = _tridiagonal_solve_jvp
ad.primitive_transposes[tridiagonal_solve_p] = _tridiagonal_solve_transpose
_batch_front(tridiagonal_solve_p)


def tridiagonal_solve(dl: Any, d: Any, du: Any, b: Any) -> Any:
    """Solve the tridiagonal systems ``A x = b``: ``d[..., m]`` is the diagonal, ``dl`` the
    sub-diagonal (``dl[..., 0]`` unused, must be 0 in JAX), ``du`` the super-diagonal
    (``du[..., m-1]`` unused), ``b[..., m, n]``. A singular system gives NaN."""
    return tridiagonal_solve_p.bind(dl, d, du, b)


# ---------------------------------------------------------------------------------------------
# schur


def _schur_impl(x: np.ndarray, *, compute_schur_vectors: bool, sort_eig_vals: bool, select_callable: Any) -> list:
    n = x.shape[-1]
    output = "complex" if _dkind(x.dtype) == "c" else "real"
    shapes = [((n, n), x.dtype)] + ([((n, n), x.dtype)] if compute_schur_vectors else [])

    def one(a: np.ndarray) -> tuple:
        if not np.all(np.isfinite(a)):
            return tuple(u.nan_like(s, d) for s, d in shapes)
        sort = select_callable if sort_eig_vals else None
        res = sla.schur(a, output=output, sort=sort, check_finite=False)
        t, z = res[0], res[1]
        return (t, z) if compute_schur_vectors else (t,)

    return u.batch_apply(one, [x], [2], shapes)


def _schur_abstract(x: ShapedArray, *, compute_schur_vectors: bool, sort_eig_vals: bool, select_callable: Any) -> list:
    _check_inexact("schur", x)
    _check_square("schur", x)
    return [ShapedArray(x.shape, x.dtype)] * (2 if compute_schur_vectors else 1)


schur_p = Primitive("schur")
schur_p.multiple_results = True
schur_p.def_impl(_schur_impl)
schur_p.def_abstract_eval(_schur_abstract)
ad.primitive_jvps[schur_p] = _no_jvp("schur")
_batch_front(schur_p)


def schur(
    x: Any, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False, select_callable: Any = None
) -> tuple:
    """Schur decomposition ``x = vs @ t @ vs^H``: returns ``(t, vs)`` (``(t,)`` without vectors).
    Real input gives the real (quasi-triangular) form. ``select_callable`` with ``sort_eig_vals``
    orders the selected eigenvalues first (scipy's ``sort=``)."""
    return tuple(
        schur_p.bind(
            x,
            compute_schur_vectors=bool(compute_schur_vectors),
            sort_eig_vals=bool(sort_eig_vals),
            select_callable=select_callable,
        )
    )


# ---------------------------------------------------------------------------------------------
# hessenberg and householder_product


def _hessenberg_impl(x: np.ndarray) -> list:
    n = x.shape[-1]
    shapes = [((n, n), x.dtype), ((max(n - 1, 0),), x.dtype)]
    if x.size == 0 or n == 0:
        return [np.zeros(x.shape[:-2] + s, d) for s, d in shapes]
    (gehrd,) = sla.get_lapack_funcs(("gehrd",), (x,))

    def one(a: np.ndarray) -> tuple:
        h, tau, _ = gehrd(a)
        return h, tau[: n - 1]

    return u.batch_apply(one, [x], [2], shapes)


def _hessenberg_abstract(x: ShapedArray) -> list:
    _check_inexact("hessenberg", x)
    n = _check_square("hessenberg", x)
    return [ShapedArray(x.shape, x.dtype), ShapedArray(x.shape[:-2] + (max(n - 1, 0),), x.dtype)]


hessenberg_p = Primitive("hessenberg")
hessenberg_p.multiple_results = True
hessenberg_p.def_impl(_hessenberg_impl)
hessenberg_p.def_abstract_eval(_hessenberg_abstract)
ad.primitive_jvps[hessenberg_p] = _no_jvp("hessenberg")
_batch_front(hessenberg_p)


def hessenberg(a: Any) -> tuple[Any, Any]:
    """Reduce ``a`` to upper Hessenberg form: ``(a_out, taus)`` as LAPACK gehrd packs them (the
    Hessenberg matrix on and above the first subdiagonal, Householder vectors below it)."""
    h, taus = hessenberg_p.bind(a)
    return h, taus


def _householder_product_impl(a: np.ndarray, taus: np.ndarray) -> np.ndarray:
    m, n = a.shape[-2:]
    if a.size == 0:
        return np.broadcast_to(np.eye(m, n, dtype=a.dtype), a.shape).copy()
    name = "ungqr" if _dkind(a.dtype) == "c" else "orgqr"
    (orgqr,) = sla.get_lapack_funcs((name,), (a,))
    k = taus.shape[-1]

    def one(a_: np.ndarray, t_: np.ndarray) -> tuple:
        if k == 0:
            return (np.eye(m, n, dtype=a.dtype),)
        q, _, _ = orgqr(a_, t_)
        return (q,)

    return u.batch_apply(one, [a, taus], [2, 1], [((m, n), a.dtype)])[0]


def _householder_product_abstract(a: ShapedArray, taus: ShapedArray) -> ShapedArray:
    _check_inexact("householder_product", a)
    if a.ndim < 2 or a.shape[-2] < a.shape[-1] or taus.shape[:-1] != a.shape[:-2] or taus.shape[-1] > a.shape[-1]:
        raise ValueError(
            f"householder_product: a must be [..., m, n] with m >= n and taus [..., k] with k <= n; got "
            f"{tuple(a.shape)} and {tuple(taus.shape)}"
        )
    if a.dtype != taus.dtype:
        raise TypeError(f"householder_product: dtypes differ: {_desc(a)} and {_desc(taus)}")
    return ShapedArray(a.shape, a.dtype)


householder_product_p = Primitive("householder_product")
householder_product_p.def_impl(_householder_product_impl)
householder_product_p.def_abstract_eval(_householder_product_abstract)
ad.primitive_jvps[householder_product_p] = _no_jvp("householder_product")
_batch_front(householder_product_p)


def householder_product(a: Any, taus: Any) -> Any:
    """The product of the Householder reflectors stored in ``a`` and ``taus`` (LAPACK orgqr)."""
    return householder_product_p.bind(a, taus)


# ---------------------------------------------------------------------------------------------
# a differentiable general solve (used by the eig rule and by the numpy/scipy wrappers)


def _lu_solve_general(a: Any, b: Any) -> Any:
    """Solve ``a @ x = b`` for square ``a[..., n, n]`` and ``b[..., n, k]`` (equal batch dims)
    through the LU factorization; differentiable through the lu and triangular_solve rules."""
    lu_, _, perm = lu(a)
    return lu_solve_factored(lu_, perm, b)


def lu_solve_factored(lu_: Any, perm: Any, b: Any, trans: int = 0) -> Any:
    """Solve with a packed LU factorization (``a[perm] = L U``): ``trans`` 0 solves ``a x = b``,
    1 ``a^T x = b``, 2 ``a^H x = b``."""
    if trans == 0:
        x = u.mm(u.perm_matrix(perm, u.dtype(b)), b)
        x = triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
        return triangular_solve(lu_, x, left_side=True, lower=False)
    conj = trans == 2
    x = triangular_solve(lu_, b, left_side=True, lower=False, transpose_a=True, conjugate_a=conj)
    x = triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True, transpose_a=True, conjugate_a=conj)
    # undo the row permutation: x_out[perm] = x, i.e. x_out = P^T x
    return u.mm(u.T(u.perm_matrix(perm, u.dtype(b))), x)
