"""``fjax.scipy.linalg.solve_sylvester``, ``funm`` and the generalized ``eigh(a, b)``.

- ``solve_sylvester``: a primitive (``solve_sylvester``) whose impl is LAPACK's Bartels-Stewart
  (``scipy.linalg.solve_sylvester``: Schur forms and ``trsyl``) per matrix, NaN where two
  eigenvalues of ``A`` and ``-B`` are within ``tol`` (as JAX). It is linear in ``C`` (transpose:
  the adjoint equation ``A^H Y + Y B^H = ct``) and its JVP is another Sylvester solve,
  ``A dX + dX B = dC - dA X - X dB``, so it differentiates to any order and batches over leading
  dimensions.
- ``funm``: JAX's algorithm (complex Schur form, ``func`` on its diagonal, Parlett's recurrence,
  Golub and Van Loan algorithm 11.1.1). Not differentiable (the Schur decomposition has no
  derivative, as in JAX).
- ``eigh(a, b, type=1|2|3)``: reduction to a standard problem through the Cholesky factor of ``b``
  (``b = L L^H``; LAPACK's sygst scheme), so eigenvectors are ``b``-orthonormal as scipy's. JAX
  raises NotImplementedError for ``b``; this follows scipy. Differentiable through its parts.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fjax import core
from fjax._lazy import LazyModule
from fjax.core import Primitive, ShapedArray
from fjax.interpreters import ad
from fjax.interpreters.ad import Zero
from fjax.lax import _linalg_util as u
from fjax.lax import lax
from fjax.lax import linalg as lax_linalg
from fjax.lax.linalg import _batch_front, _check_inexact, _desc
from fjax.numpy import _util

sla = LazyModule("scipy.linalg")


def _jnp() -> Any:
    import fjax.numpy as jnp  # noqa: PLC0415

    return jnp


# ---------------------------------------------------------------------------------------------
# solve_sylvester


def _sylvester_impl(a: np.ndarray, b: np.ndarray, c: np.ndarray, *, tol: float) -> np.ndarray:
    m, n = c.shape[-2:]
    out = np.empty(c.shape, c.dtype)
    if c.size == 0:
        return out
    bs = c.shape[:-2]
    af, bf, cf, of = (x.reshape((-1,) + x.shape[-2:]) for x in (a, b, c, out))
    for i in range(cf.shape[0]):
        ea = np.linalg.eigvals(af[i])
        eb = np.linalg.eigvals(bf[i])
        if m and n and np.min(np.abs(ea[:, None] + eb[None, :])) < tol:
            of[i] = np.nan
            continue
        with np.errstate(all="ignore"):
            of[i] = sla.solve_sylvester(af[i], bf[i], cf[i])
    return out.reshape(bs + (m, n))


def _sylvester_abstract(a: ShapedArray, b: ShapedArray, c: ShapedArray, *, tol: float) -> ShapedArray:
    for x in (a, b, c):
        _check_inexact("solve_sylvester", x)
    if len({a.dtype, b.dtype, c.dtype}) != 1:
        raise TypeError(f"solve_sylvester: operands must have one dtype, got {_desc(a)}, {_desc(b)}, {_desc(c)}")
    if c.ndim < 2 or a.shape[-2:] != (c.shape[-2],) * 2 or b.shape[-2:] != (c.shape[-1],) * 2:
        raise ValueError(f"Incompatible shapes for Sylvester equation:\nA: {a.shape}\nB: {b.shape}\nC: {c.shape}")
    if not (a.shape[:-2] == b.shape[:-2] == c.shape[:-2]):
        raise ValueError(f"solve_sylvester: batch dimensions differ: {a.shape}, {b.shape}, {c.shape}")
    return ShapedArray(c.shape, c.dtype)


solve_sylvester_p = Primitive("solve_sylvester")
solve_sylvester_p.def_impl(_sylvester_impl)
solve_sylvester_p.def_abstract_eval(_sylvester_abstract)
_batch_front(solve_sylvester_p)


def _sylvester_jvp(primals: list, tangents: list, *, tol: float) -> tuple:
    a, b, c = primals
    da, db, dc = tangents
    x = solve_sylvester_p.bind(a, b, c, tol=tol)
    rhs = None if type(dc) is Zero else dc
    if type(da) is not Zero:
        t = lax.neg(u.mm(da, x))
        rhs = t if rhs is None else lax.add(rhs, t)
    if type(db) is not Zero:
        t = lax.neg(u.mm(x, db))
        rhs = t if rhs is None else lax.add(rhs, t)
    if rhs is None:
        return x, Zero(ad.tangent_aval(core.get_aval(x)))
    return x, solve_sylvester_p.bind(a, b, rhs, tol=tol)


def _sylvester_transpose(ct: Any, a: Any, b: Any, c: Any, *, tol: float) -> list:
    if ad.is_undefined_primal(a) or ad.is_undefined_primal(b):
        raise NotImplementedError("solve_sylvester is linear only in C; cannot transpose with respect to A or B")
    if type(ct) is Zero:
        return [None, None, Zero(c.aval)]
    return [None, None, solve_sylvester_p.bind(u.H(a), u.H(b), ct, tol=tol)]


ad.primitive_jvps[solve_sylvester_p] = _sylvester_jvp
ad.primitive_transposes[solve_sylvester_p] = _sylvester_transpose


def solve_sylvester(A: Any, B: Any, C: Any, *, method: str = "schur", tol: float = 1e-8) -> Any:
    """Solve ``A X + X B = C`` for ``A[..., m, m]``, ``B[..., n, n]``, ``C[..., m, n]`` (batch
    dimensions broadcast). Where an eigenvalue of ``A`` plus one of ``B`` is within ``tol`` of
    zero the result is NaN (as JAX). Both ``method`` values ('schur', 'eigen') solve by LAPACK's
    Bartels-Stewart here (the more accurate of JAX's two)."""
    if method not in ("schur", "eigen"):
        raise ValueError(f'Unrecognized method {method}. The two valid methods are either "schur" or "eigen".')
    _util.check_arraylike("solve_sylvester", A, B, C)
    a, b, c = _util.promote_dtypes_inexact("solve_sylvester", *[_util.to_fjax(x, "solve_sylvester") for x in (A, B, C)])
    if a.ndim < 2 or b.ndim < 2 or c.ndim < 2:
        raise ValueError(f"Incompatible shapes for Sylvester equation:\nA: {a.shape}\nB: {b.shape}\nC: {c.shape}")
    m, n = c.shape[-2:]
    if a.shape[-2:] != (m, m) or b.shape[-2:] != (n, n):
        raise ValueError(f"Incompatible shapes for Sylvester equation:\nA: {a.shape}\nB: {b.shape}\nC: {c.shape}")
    jnp = _jnp()
    bs = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2], c.shape[:-2]))
    a = jnp.broadcast_to(a, bs + a.shape[-2:])
    b = jnp.broadcast_to(b, bs + b.shape[-2:])
    c = jnp.broadcast_to(c, bs + c.shape[-2:])
    return solve_sylvester_p.bind(a, b, c, tol=float(tol))


# ---------------------------------------------------------------------------------------------
# funm


def funm(A: Any, func: Callable[[Any], Any], disp: bool = True) -> Any:
    """``func`` of the square matrix ``A`` through its complex Schur form and Parlett's recurrence
    (complex result, as JAX). With ``disp=False``: ``(F, err)``, an estimate of the relative error."""
    from fjax.lax.control_flow import fori_loop  # noqa: PLC0415

    jnp = _jnp()
    a = jnp.asarray(A)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError("expected square array_like input")
    if a.dtype.kind not in "fc":
        a = a.astype(jnp.result_type(a.dtype, float))
    a = a.astype(jnp.result_type(a.dtype, np.complex64))
    T, Z = lax_linalg.schur(a)
    n = a.shape[0]
    F = jnp.diag(func(jnp.diagonal(T))).astype(T.dtype)
    idx = jnp.arange(n)

    def inner(i: Any, carry: tuple) -> tuple:
        p, F, minden = carry
        j = i + p
        s = T[i - 1, j - 1] * (F[j - 1, j - 1] - F[i - 1, i - 1])
        ind = (idx >= i) & (idx < j - 1)
        s = s + (jnp.where(ind, T[i - 1], 0) @ jnp.where(ind, F[:, j - 1], 0)
                 - jnp.where(ind, F[i - 1], 0) @ jnp.where(ind, T[:, j - 1], 0))  # fmt: skip
        den = T[j - 1, j - 1] - T[i - 1, i - 1]
        s = jnp.where(den != 0, s / jnp.where(den != 0, den, 1), s)
        F = F.at[i - 1, j - 1].set(s)
        return p, F, jnp.minimum(minden, jnp.abs(den))

    def outer(p: Any, carry: tuple) -> tuple:
        F, minden = carry
        _, F, minden = fori_loop(1, n - p + 1, inner, (p, F, minden))
        return F, minden

    minden = jnp.abs(T[0, 0]) if n else jnp.zeros((), jnp.real(T).dtype)
    F, minden = fori_loop(1, n, outer, (F, minden))
    F = Z @ F @ jnp.conj(Z).T
    if disp:
        return F
    tol = float(np.finfo(F.dtype).eps)
    minden = jnp.where(minden == 0.0, tol, minden)
    err = jnp.where(
        jnp.any(jnp.isinf(F)),
        np.inf,
        jnp.minimum(1, jnp.maximum(tol, (tol / minden) * jnp.linalg.norm(jnp.triu(T, 1), 1))),
    )
    return F, err


# ---------------------------------------------------------------------------------------------
# generalized eigh


def generalized_eigh(a: Any, b: Any, lower: bool, eigvals_only: bool, subset: Any, type_: int) -> Any:
    """``eigh(a, b)``: ``a v = w b v`` (type 1), ``a b v = w v`` (2), ``b a v = w v`` (3), for
    Hermitian ``a`` and Hermitian positive-definite ``b`` (the ``lower`` triangles read)."""
    jnp = _jnp()
    if type_ not in (1, 2, 3):
        raise ValueError(f"eigh: type must be 1, 2 or 3, got {type_!r}")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2] or b.shape != a.shape:
        raise ValueError(
            f"eigh: a and b must be square matrices of one shape, got {tuple(a.shape)} and {tuple(b.shape)}"
        )

    def full(x: Any) -> Any:  # the Hermitian matrix of x's given triangle
        tri = jnp.tril(x) if lower else jnp.triu(x)
        return tri + u.H(jnp.tril(x, -1) if lower else jnp.triu(x, 1))

    a, b = full(a), full(b)
    L = lax_linalg.cholesky(b, symmetrize_input=False)
    if type_ == 1:
        t = lax_linalg.triangular_solve(L, a, left_side=True, lower=True)  # L^-1 a
        c = lax_linalg.triangular_solve(L, t, left_side=False, lower=True, transpose_a=True, conjugate_a=True)
    else:
        c = u.mm(u.mm(u.H(L), a), L)  # L^H a L
    y, w = lax_linalg.eigh(c, lower=True, symmetrize_input=True, subset_by_index=subset)
    if eigvals_only:
        return w
    if type_ == 3:
        v = u.mm(L, y)
    else:
        v = lax_linalg.triangular_solve(L, y, left_side=True, lower=True, transpose_a=True, conjugate_a=True)
    return w, v
