"""``fjax.scipy.optimize``: ``minimize`` with ``method="BFGS"``, as ``jax.scipy.optimize``.

BFGS (Nocedal and Wright, algorithm 6.1) with the inverse-Hessian update, gradients from
``value_and_grad``, all inside ``lax.while_loop`` so that ``minimize`` runs under ``jit``. The line
search is a backtracking search for the strong Wolfe conditions (sufficient decrease c1 = 1e-4,
curvature c2 = 0.9): it halves the step until the decrease holds, and a step whose curvature
condition fails is still taken but leaves the inverse Hessian unchanged when s.y <= 0. JAX uses a
zoom line search, so iterates and counts can differ from JAX's while converging to the same
minimum (JAX documents that results may differ from scipy for the same reason).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple

import numpy as np

from fjax import lax
from fjax import numpy as jnp
from fjax.api import value_and_grad
from fjax.dtypes import kind as _dkind

__all__ = ["OptimizeResults", "minimize"]


class OptimizeResults(NamedTuple):
    """Result of :func:`minimize`: ``x`` the solution, ``success`` whether it converged,
    ``status`` (0 converged, 1 maximum iterations, 3 line search failed), ``fun``/``jac`` the value
    and gradient at ``x``, ``hess_inv`` the inverse Hessian estimate, and the counts of function
    and gradient evaluations and iterations."""

    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


def _norm(g: Any, ord: Any) -> Any:  # noqa: A002
    if ord == np.inf:
        return jnp.max(jnp.abs(g))
    return jnp.sum(jnp.abs(g) ** ord) ** (1.0 / ord)


def _line_search(vg: Callable, x: Any, p: Any, f: Any, g: Any, maxiter: int) -> tuple:
    """Backtracking search along ``p``: (step, f, g, evaluations, failed)."""
    c1 = 1e-4
    slope = jnp.dot(g, p)

    def cond(state: tuple) -> Any:
        i, a, fa, ga, ok = state
        return (~ok) & (i < maxiter)

    def body(state: tuple) -> tuple:
        i, a, _, _, _ = state
        a = jnp.where(i == 0, a, a * 0.5)
        fa, ga = vg(x + a * p)
        ok = jnp.isfinite(fa) & (fa <= f + c1 * a * slope)
        return i + 1, a, fa, ga, ok

    one = jnp.ones((), x.dtype)
    init = (jnp.zeros((), jnp.int32), one, f, g, jnp.zeros((), bool))
    n, a, fa, ga, ok = lax.while_loop(cond, body, init)
    failed = ~ok | (slope >= 0)
    return a, fa, ga, n, failed


def _minimize_bfgs(
    fun: Callable, x0: Any, maxiter: int | None = None, norm: Any = np.inf, gtol: float = 1e-5,
    line_search_maxiter: int = 10,
) -> OptimizeResults:  # fmt: skip
    x0 = jnp.asarray(x0)
    if x0.ndim != 1:
        raise ValueError(f"minimize: x0 must be one-dimensional, got shape {x0.shape}")
    if _dkind(x0.dtype) != "f":
        x0 = x0.astype(jnp.result_type(float))
    if maxiter is None:
        maxiter = int(np.size(x0)) * 200
    d = x0.shape[0]
    vg = value_and_grad(fun)
    f0, g0 = vg(x0)
    eye = jnp.eye(d, dtype=x0.dtype)
    i32 = jnp.int32

    def cond(s: tuple) -> Any:
        k, x, f, g, h, nfev, converged, failed = s
        return (~converged) & (~failed) & (k < maxiter)

    def body(s: tuple) -> tuple:
        k, x, f, g, h, nfev, converged, failed = s
        p = -(h @ g)
        a, f1, g1, n, ls_failed = _line_search(vg, x, p, f, g, line_search_maxiter)
        step = a * p
        y = g1 - g
        sy = jnp.dot(step, y)
        rho = jnp.where(sy > 0, 1.0 / jnp.where(sy > 0, sy, 1.0), 0.0).astype(x.dtype)
        w = eye - rho * jnp.outer(step, y)
        h1 = w @ h @ w.T + rho * jnp.outer(step, step)
        h1 = jnp.where(sy > 0, h1, h)
        x1 = jnp.where(ls_failed, x, x + step)
        f1 = jnp.where(ls_failed, f, f1)
        g1 = jnp.where(ls_failed, g, g1)
        conv = _norm(g1, norm) < gtol
        return k + 1, x1, f1, g1, h1, nfev + n, conv, ls_failed

    init = (jnp.zeros((), i32), x0, f0, g0, eye, jnp.ones((), i32), _norm(g0, norm) < gtol, jnp.zeros((), bool))
    k, x, f, g, h, nfev, converged, failed = lax.while_loop(cond, body, init)
    status = jnp.where(converged, 0, jnp.where(k >= maxiter, 1, jnp.where(failed, 3, -1)))
    return OptimizeResults(
        x=x, success=converged & ~failed, status=status, fun=f, jac=g, hess_inv=h, nfev=nfev, njev=nfev, nit=k
    )


def minimize(
    fun: Callable,
    x0: Any,
    args: tuple = (),
    *,
    method: str,
    tol: float | None = None,
    options: Mapping[str, Any] | None = None,
) -> OptimizeResults:
    """Minimize ``fun(x, *args)`` over a 1-D ``x`` from ``x0``; ``method`` must be ``"BFGS"``.
    ``options``: ``maxiter``, ``norm``, ``gtol``, ``line_search_maxiter``; ``tol`` sets ``gtol``
    unless ``options`` does."""
    options = dict(options or {})
    if not isinstance(args, tuple):
        raise TypeError(f"args argument to jax.scipy.optimize.minimize must be a tuple, got {args}")
    if tol is not None:
        options.setdefault("gtol", tol)
    fun_with_args = lambda x: fun(x, *args)  # noqa: E731
    if method.lower() == "bfgs":
        return _minimize_bfgs(fun_with_args, x0, **options)
    if method.lower() == "l-bfgs-experimental-do-not-rely-on-this":
        raise NotImplementedError("minimize: method 'l-bfgs-experimental-do-not-rely-on-this' is not implemented")
    raise ValueError(f"Method {method} not recognized")
