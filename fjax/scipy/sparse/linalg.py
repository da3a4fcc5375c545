"""``jax.scipy.sparse.linalg``: Krylov solvers ``cg``, ``bicgstab`` and ``gmres``.

``A`` is a square matrix, anything with ``@``, or a linear function; ``b`` (and ``x0``) any pytree
of arrays. Each solver is a ``lax.while_loop`` wrapped in ``lax.custom_linear_solve``, so
gradients come from a second solve of the transposed system (implicit differentiation), never by
differentiating through the iterations. Tolerances follow scipy's non-legacy rule,
``norm(residual) <= max(tol * norm(b), atol)``. As in JAX, ``cg`` and ``bicgstab`` return
``info=None`` and ``gmres`` returns ``info`` = -1 when the solution holds a NaN, else 0.
"""

from __future__ import annotations

import functools
import operator
from typing import Any, Callable

import numpy as np

import fjax
import fjax.numpy as jnp
from fjax import lax
from fjax.scipy import linalg as _dense
from fjax.tree_util import tree_leaves, tree_map, tree_structure

__all__ = ["bicgstab", "cg", "gmres"]

_HI = lax.Precision.HIGHEST


def _dot(a: Any, b: Any) -> Any:
    return jnp.dot(a, b, precision=_HI)


def _vdot_real(x: Any, y: Any) -> Any:
    # Re <x, y> for the Hermitian forms z^H M z the solvers use: the imaginary cross terms
    # are dropped, so the result is real (and the same as JAX's)
    out = jnp.vdot(x.real, y.real, precision=_HI)
    if jnp.iscomplexobj(x) or jnp.iscomplexobj(y):
        out = out + jnp.vdot(x.imag, y.imag, precision=_HI)
    return out


def _vdot_real_tree(x: Any, y: Any) -> Any:
    return sum(tree_leaves(tree_map(_vdot_real, x, y)))


def _vdot_tree(x: Any, y: Any) -> Any:
    return sum(tree_leaves(tree_map(functools.partial(jnp.vdot, precision=_HI), x, y)))


def _norm(x: Any) -> Any:
    return jnp.sqrt(sum(_vdot_real(leaf, leaf) for leaf in tree_leaves(x)))


def _scale(c: Any, tree: Any) -> Any:
    return tree_map(lambda v: c * v, tree)


def _add(x: Any, y: Any) -> Any:
    return tree_map(operator.add, x, y)


def _sub(x: Any, y: Any) -> Any:
    return tree_map(operator.sub, x, y)


def _identity(x: Any) -> Any:
    return x


def _dtype_of(tree: Any) -> Any:
    return jnp.result_type(*tree_leaves(tree))


def _as_operator(f: Any, what: str = "linear operator") -> Callable:
    """A matvec function from a function, a square matrix or a ``@``-capable object."""
    if callable(f) and not hasattr(f, "shape"):
        return f
    if isinstance(f, (np.ndarray, fjax.Array)) or (hasattr(f, "shape") and hasattr(f, "dtype")):
        if np.ndim(f) != 2 or f.shape[0] != f.shape[1]:
            raise ValueError(f"{what} must be a square matrix, but has shape: {tuple(np.shape(f))}")
        return functools.partial(_dot, f)
    if hasattr(f, "__matmul__"):
        if hasattr(f, "shape") and (len(f.shape) != 2 or f.shape[0] != f.shape[1]):
            raise ValueError(f"{what} must be a square matrix, but has shape: {f.shape}")
        return functools.partial(operator.matmul, f)
    raise TypeError(f"{what} must be either a function or ndarray: {f}")


def _check_x0(x0: Any, b: Any, shapes: bool) -> None:
    if tree_structure(x0) != tree_structure(b):
        raise ValueError(f"x0 and b must have matching tree structure: {tree_structure(x0)} vs {tree_structure(b)}")
    if shapes:
        sx, sb = [np.shape(v) for v in tree_leaves(x0)], [np.shape(v) for v in tree_leaves(b)]
        if sx != sb:
            raise ValueError(f"arrays in x0 and b must have matching shapes: {sx} vs {sb}")


# ----------------------------------------------------------------------------- CG and BiCGSTAB


def _cg_solve(A: Callable, b: Any, x0: Any, *, maxiter: int, tol: Any, atol: Any, M: Callable) -> Any:
    # preconditioned conjugate gradients; stops on |r|^2 <= max(tol^2 |b|^2, atol^2)
    limit = jnp.maximum(jnp.square(tol) * _vdot_real_tree(b, b), jnp.square(atol))
    r0 = _sub(b, A(x0))
    z0 = M(r0)
    dtype = _dtype_of(z0)
    gamma0 = _vdot_real_tree(r0, z0).astype(dtype)

    def more(state: tuple) -> Any:
        _, r, gamma, _, k = state
        # without a preconditioner gamma is already r.r
        rr = gamma.real if M is _identity else _vdot_real_tree(r, r)
        return (rr > limit) & (k < maxiter)

    def step(state: tuple) -> tuple:
        x, r, gamma, p, k = state
        ap = A(p)
        alpha = gamma / _vdot_real_tree(p, ap).astype(dtype)
        x = _add(x, _scale(alpha, p))
        r = _sub(r, _scale(alpha, ap))
        z = M(r)
        gamma_next = _vdot_real_tree(r, z).astype(dtype)
        p = _add(z, _scale(gamma_next / gamma, p))
        return x, r, gamma_next, p, k + 1

    return lax.while_loop(more, step, (x0, r0, gamma0, z0, 0))[0]


def _bicgstab_solve(A: Callable, b: Any, x0: Any, *, maxiter: int, tol: Any, atol: Any, M: Callable) -> Any:
    # preconditioned BiCGSTAB (van der Vorst); k turns negative on breakdown (-10: rho = 0,
    # -11: alpha or omega = 0), which stops the loop as in JAX
    limit = jnp.maximum(jnp.square(tol) * _vdot_real_tree(b, b), jnp.square(atol))
    dtype = _dtype_of(b)
    one = jnp.ones((), dtype)
    r0 = _sub(b, A(x0))

    def more(state: tuple) -> Any:
        r, k = state[1], state[-1]
        return (_vdot_real_tree(r, r) > limit) & (k < maxiter) & (k >= 0)

    def step(state: tuple) -> tuple:
        x, r, rhat, alpha, omega, rho, p, q, k = state
        rho_next = _vdot_tree(rhat, r).astype(dtype)
        beta = rho_next / rho * alpha / omega
        p = _add(r, _scale(beta, _sub(p, _scale(omega, q))))
        phat = M(p)
        q = A(phat)
        alpha = (rho_next / _vdot_tree(rhat, q)).astype(dtype)
        s = _sub(r, _scale(alpha, q))
        done_half = _vdot_real_tree(s, s) < limit
        shat = M(s)
        t = A(shat)
        omega = (_vdot_tree(t, s) / _vdot_tree(t, t)).astype(dtype)
        x_half = _add(x, _scale(alpha, phat))
        x_full = _add(x, _add(_scale(alpha, phat), _scale(omega, shat)))
        x = tree_map(functools.partial(jnp.where, done_half), x_half, x_full)
        r = tree_map(functools.partial(jnp.where, done_half), s, _sub(s, _scale(omega, t)))
        k = jnp.where((omega == 0) | (alpha == 0), -11, k + 1)
        k = jnp.where(rho_next == 0, -10, k)
        return x, r, rhat, alpha, omega, rho_next, p, q, k

    init = (x0, r0, r0, one, one, one, r0, r0, jnp.asarray(0))
    return lax.while_loop(more, step, init)[0]


def _isolve(
    solver: Callable,
    A: Any,
    b: Any,
    x0: Any,
    *,
    tol: Any,
    atol: Any,
    maxiter: int | None,
    M: Any,
    check_symmetric: bool = False,
) -> tuple[Any, None]:
    if x0 is None:
        x0 = tree_map(jnp.zeros_like, b)
    b, x0 = fjax.device_put((b, x0))
    if maxiter is None:
        maxiter = 10 * sum(int(np.size(v)) for v in tree_leaves(b))  # scipy's default
    A = _as_operator(A)
    M = _identity if M is None else _as_operator(M, "preconditioner")
    _check_x0(x0, b, shapes=True)
    solve = functools.partial(solver, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
    # a real positive-definite operator is symmetric, so the transpose solve reuses A
    symmetric = check_symmetric and not any(jnp.iscomplexobj(v) for v in tree_leaves(b))
    x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve, symmetric=symmetric)
    return x, None


def cg(
    A: Any, b: Any, x0: Any = None, *, tol: Any = 1e-5, atol: Any = 0.0, maxiter: int | None = None, M: Any = None
) -> tuple[Any, None]:
    """Solve ``A x = b`` for Hermitian positive-definite ``A`` by conjugate gradients.

    ``A`` (and the preconditioner ``M``, approximating ``A^-1``) is a matrix or a linear function;
    ``b``/``x0`` pytrees. Stops when ``norm(r) <= max(tol * norm(b), atol)`` or after ``maxiter``
    steps (default ``10 * size``). Returns ``(x, None)``; gradients solve again with ``cg``.
    """
    return _isolve(_cg_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M, check_symmetric=True)


def bicgstab(
    A: Any, b: Any, x0: Any = None, *, tol: Any = 1e-5, atol: Any = 0.0, maxiter: int | None = None, M: Any = None
) -> tuple[Any, None]:
    """Solve ``A x = b`` for a general ``A`` by stabilized bi-conjugate gradients (BiCGSTAB).

    Arguments as for :func:`cg`. Returns ``(x, None)``; gradients solve again with ``bicgstab``.
    """
    return _isolve(_bicgstab_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M)


# ----------------------------------------------------------------------------------------- GMRES


def _safe_normalize(x: Any, thresh: Any = None) -> tuple[Any, Any]:
    """``(x / |x|, |x|)``, or ``(0, 0)`` when ``|x| <= thresh`` (default: machine epsilon)."""
    norm = _norm(x)
    dtype = _dtype_of(x)
    if thresh is None:
        thresh = jnp.finfo(norm.dtype).eps
    thresh = jnp.asarray(thresh).astype(dtype).real
    big = norm > thresh
    n = norm.astype(dtype)
    unit = tree_map(lambda v: jnp.where(big, v / n, 0.0).astype(v.dtype), x)
    return unit, jnp.where(big, norm, 0.0)


def _overlaps(Q: Any, v: Any) -> Any:
    # Q^H v with the Krylov vectors along Q's last axis
    parts = tree_map(lambda X, y: jnp.einsum("...n,...->n", X.conj(), y, precision=_HI), Q, v)
    return functools.reduce(operator.add, tree_leaves(parts))


def _arnoldi_step(k: Any, A: Callable, M: Callable, V: Any, H: Any) -> tuple[Any, Any, Any]:
    """Extend the Krylov basis ``V`` by ``M(A(V[..., k]))`` orthonormalized, and write its
    coefficients into row ``k`` of ``H``; a new vector below eps times its norm is a breakdown."""
    dtype = _dtype_of(V)
    v = M(A(tree_map(lambda X: X[..., k], V)))
    _, norm0 = _safe_normalize(v)
    # one pass of classical Gram-Schmidt: JAX's loop is written for two, but its condition
    # never admits the second
    h = _overlaps(V, v)
    v = _sub(v, tree_map(lambda X: _dot(X, h), V))
    unit, norm1 = _safe_normalize(v, thresh=jnp.finfo(dtype).eps * norm0)
    V = tree_map(lambda X, u: X.at[..., k + 1].set(u), V, unit)
    H = H.at[k, :].set(h.at[k + 1].set(norm1.astype(dtype)))
    return V, H, norm1 == 0.0


def _rotate(v: Any, i: Any, cs: Any, sn: Any) -> Any:
    a, b = v[i], v[i + 1]
    return v.at[i].set(cs.conj() * a - sn.conj() * b).at[i + 1].set(sn * a + cs * b)


def _givens(a: Any, b: Any) -> tuple[Any, Any]:
    # the rotation zeroing b against a, dividing by the larger of the two
    b_zero = jnp.abs(b) == 0
    swap = jnp.abs(a) < jnp.abs(b)
    t = -jnp.where(swap, a, b) / jnp.where(swap, b, a)
    r = lax.rsqrt(1 + jnp.abs(t) ** 2).astype(t.dtype)
    cs = jnp.where(b_zero, 1, jnp.where(swap, r * t, r))
    sn = jnp.where(b_zero, 0, jnp.where(swap, r, r * t))
    return cs, sn


def _krylov_basis(unit_residual: Any, restart: int) -> Any:
    return tree_map(lambda v: jnp.pad(v[..., None], ((0, 0),) * v.ndim + ((0, restart),)), unit_residual)


def _finish_cycle(A: Callable, b: Any, x0: Any, V: Any, y: Any, M: Callable) -> tuple:
    x = _add(x0, tree_map(lambda X: _dot(X[..., :-1], y), V))
    unit, norm = _safe_normalize(M(_sub(b, A(x))))
    return x, unit, norm


def _gmres_incremental(
    A: Callable, b: Any, x0: Any, unit_residual: Any, residual_norm: Any, ptol: Any, restart: int, M: Callable
) -> tuple:
    """One GMRES cycle that QR-factors the Hessenberg matrix with Givens rotations as it grows,
    stopping early once the rotated residual estimate is below ``ptol``."""
    V = _krylov_basis(unit_residual, restart)
    dtype = _dtype_of(b)
    R = jnp.eye(restart, restart + 1, dtype=dtype)  # identity rows keep an early stop solvable
    rotations = jnp.zeros((restart, 2), dtype=dtype)
    beta = jnp.zeros(restart + 1, dtype=dtype).at[0].set(residual_norm.astype(dtype))

    def more(state: tuple) -> Any:
        k, err = state[0], state[1]
        return (k < restart) & (err > ptol)

    def step(state: tuple) -> tuple:
        k, _, V, R, beta, rotations = state
        V, H, _ = _arnoldi_step(k, A, M, V, R)
        row = lax.fori_loop(0, k, lambda i, row: _rotate(row, i, rotations[i, 0], rotations[i, 1]), H[k, :])
        cs, sn = _givens(row[k], row[k + 1])
        rotations = rotations.at[k].set(jnp.stack([cs, sn]))
        R = R.at[k, :].set(_rotate(row, k, cs, sn))
        beta = _rotate(beta, k, cs, sn)
        return k + 1, jnp.abs(beta[k + 1]), V, R, beta, rotations

    _, _, V, R, beta, _ = lax.while_loop(more, step, (0, residual_norm, V, R, beta, rotations))
    y = _dense.solve_triangular(R[:, :-1].T, beta[:-1])
    return _finish_cycle(A, b, x0, V, y, M)


def _gmres_batched(
    A: Callable, b: Any, x0: Any, unit_residual: Any, residual_norm: Any, ptol: Any, restart: int, M: Callable
) -> tuple:
    """One GMRES cycle that builds the whole Krylov basis (up to a breakdown) and then solves
    the small least-squares problem through its normal equations."""
    del ptol
    V = _krylov_basis(unit_residual, restart)
    dtype = _dtype_of(b)
    H = jnp.eye(restart, restart + 1, dtype=dtype)

    def more(state: tuple) -> Any:
        _, _, breakdown, k = state
        return (k < restart) & ~breakdown

    def step(state: tuple) -> tuple:
        V, H, _, k = state
        V, H, breakdown = _arnoldi_step(k, A, M, V, H)
        return V, H, breakdown, k + 1

    V, H, _, _ = lax.while_loop(more, step, (V, H, jnp.asarray(False), 0))
    beta = jnp.zeros(restart + 1, dtype=dtype).at[0].set(residual_norm.astype(dtype))
    Ht = H.T
    y = _dense.solve(_dot(Ht.T.conj(), Ht), _dot(Ht.T.conj(), beta), assume_a="pos")
    return _finish_cycle(A, b, x0, V, y, M)


def _gmres_solve(
    A: Callable, b: Any, x0: Any, atol: Any, ptol: Any, restart: int, maxiter: int, M: Callable, cycle: Callable
) -> Any:
    # restart cycles from the last solution until the preconditioned residual is below atol
    unit, norm = _safe_normalize(M(_sub(b, A(x0))))

    def more(state: tuple) -> Any:
        _, k, _, norm = state
        return (k < maxiter) & (norm > atol)

    def step(state: tuple) -> tuple:
        x, k, unit, norm = state
        x, unit, norm = cycle(A, b, x, unit, norm, ptol, restart, M)
        return x, k + 1, unit, norm

    return lax.while_loop(more, step, (x0, 0, unit, norm))[0]


def gmres(
    A: Any,
    b: Any,
    x0: Any = None,
    *,
    tol: Any = 1e-5,
    atol: Any = 0.0,
    restart: int = 20,
    maxiter: int | None = None,
    M: Any = None,
    solve_method: str = "batched",
) -> tuple[Any, Any]:
    """Solve ``A x = b`` for a general ``A`` by restarted GMRES.

    Each of at most ``maxiter`` cycles (default ``10 * size``) builds a Krylov space of dimension
    ``restart`` (at most the size of ``b``). ``solve_method='incremental'`` QR-factors it with
    Givens rotations as it goes and may stop a cycle early; ``'batched'`` solves the
    least-squares problem at the end of each cycle. Returns ``(x, info)``, ``info`` -1 when ``x``
    holds NaN, else 0; gradients solve again with ``gmres``.
    """
    if x0 is None:
        x0 = tree_map(jnp.zeros_like, b)
    M = _identity if M is None else _as_operator(M, "preconditioner")
    A = _as_operator(A)
    b, x0 = fjax.device_put((b, x0))
    size = sum(int(np.size(v)) for v in tree_leaves(b))
    if maxiter is None:
        maxiter = 10 * size  # scipy's default
    restart = min(restart, size)
    _check_x0(x0, b, shapes=False)
    if solve_method == "incremental":
        cycle = _gmres_incremental
    elif solve_method == "batched":
        cycle = _gmres_batched
    else:
        raise ValueError(f"invalid solve_method {solve_method}, must be either 'incremental' or 'batched'")
    b_norm = _norm(b)
    atol = jnp.maximum(tol * b_norm, atol)
    ptol = _norm(M(b)) * jnp.minimum(1.0, atol / b_norm)

    def solve(A: Callable, b: Any) -> Any:
        return _gmres_solve(A, b, x0, atol, ptol, restart, maxiter, M, cycle)

    x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve)
    info = jnp.where(jnp.isnan(_norm(x)), -1, 0)
    return x, info
