"""``lax.linalg.cholesky_update``, ``symmetric_product`` and ``qdwh``, written with fjax
primitives (as JAX lowers them), so jvp, vmap and jit come from the primitives they use.

- ``cholesky_update``: JAX's Givens-rotation rank-1 update of an upper Cholesky factor (unrolled
  over the rows, as JAX lowers it). Differentiable here (JAX has no rule for it).
- ``symmetric_product``: ``alpha * a @ a.T + beta * c``, optionally symmetrized from the lower
  triangle.
- ``qdwh``: the QR-based dynamically weighted Halley iteration for the polar decomposition
  (Nakatsukasa, Bai and Gygi 2010; the coefficient schedule, QR / Cholesky steps, Halley tail and
  Newton-Schulz refinement of JAX's ``jax._src.tpu.linalg.qdwh``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fjax import core

__all__ = ["cholesky_update", "qdwh", "symmetric_product"]


def _jnp() -> Any:
    import fjax.numpy as jnp  # noqa: PLC0415

    return jnp


def _float_operand(name: str, x: Any) -> Any:
    jnp = _jnp()
    x = jnp.asarray(x)
    if x.dtype.kind != "f":
        raise TypeError(f"{name} requires floating-point operands, got {core.short_dtype_name(x.dtype)}{list(x.shape)}")
    return x


def cholesky_update(r_matrix: Any, w_vector: Any) -> Any:
    """Cholesky rank-1 update: given upper-triangular ``R`` with ``A = R^T R`` and a vector ``w``,
    the upper Cholesky factor of ``A + w w^T`` in O(n^2) (Givens rotations, as JAX)."""
    jnp = _jnp()
    R = _float_operand("cholesky_update", r_matrix)
    z = _float_operand("cholesky_update", w_vector)
    if R.ndim != 2 or z.ndim != 1 or R.shape[0] != R.shape[1] or z.shape[0] != R.shape[1]:
        raise ValueError(
            "Rank-1 update to Cholesky decomposition takes a square matrix and a vector of the same size as "
            f"input. Got shapes {tuple(R.shape)} and {tuple(z.shape)} instead"
        )
    dt = jnp.result_type(R.dtype, z.dtype)
    R, z = R.astype(dt), z.astype(dt)

    def step(k: int, R: Any, z: Any) -> tuple:
        x, y = R[k, k], z[k]
        ax, ay = jnp.abs(x), jnp.abs(y)
        y_zero = y == 0
        den = jnp.where(y_zero, jnp.ones_like(ax), jnp.where(ax > ay, ax, ay))  # guarded: no 0/0 in any branch
        xs, ys = x / den, y / den
        rh = 1 / jnp.sqrt(xs * xs + ys * ys)
        c = jnp.where(y_zero, jnp.ones_like(x), xs * rh)
        s = jnp.where(y_zero, jnp.zeros_like(x), -ys * rh)
        row = R[k, :]
        R = R.at[k, :].set(c * row - s * z)
        return R, c * z + s * row

    # unrolled over the (static) rows, as JAX lowers it: eagerly a few numpy ops per row
    for k in range(R.shape[0]):
        R, z = step(k, R, z)
    return R


def symmetric_product(
    a_matrix: Any, c_matrix: Any, *, alpha: float = 1.0, beta: float = 0.0, symmetrize_output: bool = False
) -> Any:
    """``alpha * A @ A^T + beta * C`` for ``A[..., m, n]`` and symmetric ``C[..., m, m]``. Only the
    lower triangle is guaranteed by JAX; here the whole product is computed, and with
    ``symmetrize_output`` the upper triangle is the transpose of the lower one."""
    jnp = _jnp()
    a = _float_operand("symmetric_product", a_matrix)
    c = _float_operand("symmetric_product", c_matrix)
    if a.ndim < 2 or c.ndim < 2 or a.shape[-2] != c.shape[-1] or c.shape[-2] != c.shape[-1]:
        raise ValueError(
            "symmetric_update expects a rectangular matrix of shape (m, n) and a square matrix of shape (n, n). "
            f"Got shapes {tuple(a.shape)} and {tuple(c.shape)}."
        )
    if a.shape[:-2] != c.shape[:-2]:
        raise ValueError(
            f"symmetric_product: batch dimensions must be equal, got shapes {tuple(a.shape)} and {tuple(c.shape)}"
        )
    dt = jnp.result_type(a.dtype, c.dtype)
    a, c = a.astype(dt), c.astype(dt)
    out = alpha * jnp.matmul(a, jnp.swapaxes(a, -1, -2)) + beta * c
    out = out.astype(dt)
    if symmetrize_output:
        out = jnp.tril(out) + jnp.swapaxes(jnp.tril(out, -1), -1, -2)
    return out


def _qdwh_coefficients(eps: float, max_iterations: int) -> tuple[list, list]:
    """The static (a, b, c) schedule of the weighted iterations: QR steps while ``c`` is large,
    Cholesky steps after (JAX's cutoff 100)."""
    tol_l = 10.0 * eps / 2.0
    lo = eps
    qr_coefs, chol_coefs = [], []
    k = 0
    while lo + tol_l < 1 and k < max_iterations:
        k += 1
        l2 = lo * lo
        dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
        sqd = (1.0 + dd) ** (1 / 2)
        a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** (1 / 2)
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        lo = lo * (a + b * l2) / (1 + c * l2)
        e = b / c
        if c > 100:
            qr_coefs.append(((a - e) / c ** (1 / 2), c ** (1 / 2), e))
        else:
            chol_coefs.append((a - e, c, e))
    return qr_coefs, chol_coefs


def qdwh(
    x: Any,
    *,
    is_hermitian: bool = False,
    max_iterations: int | None = None,
    eps: float | None = None,
    dynamic_shape: tuple[int, int] | None = None,
) -> tuple[Any, Any, Any, Any]:
    """Polar decomposition ``x = u @ h`` of a full-rank ``x[M, N]`` (``M >= N``) by the QR-based
    dynamically weighted Halley iteration: ``(u, h, num_iters, is_converged)``.

    ``is_hermitian`` is accepted and unused (as in JAX). ``dynamic_shape`` (a padded input's true
    shape) is not supported unless it is the full shape."""
    from fjax.lax import linalg as lax_linalg  # noqa: PLC0415
    from fjax.lax.control_flow import while_loop  # noqa: PLC0415

    jnp = _jnp()
    x = jnp.asarray(x)
    if x.dtype.kind not in "fc":
        raise TypeError(f"qdwh requires a floating or complex matrix, got {core.short_dtype_name(x.dtype)}")
    if x.ndim != 2:
        raise ValueError(f"qdwh: expected a matrix, got shape {tuple(x.shape)}")
    M, N = x.shape
    if M < N:
        raise ValueError("The input matrix of shape M x N must have M >= N.")
    if dynamic_shape is not None and tuple(dynamic_shape) != (M, N):
        raise NotImplementedError("qdwh: dynamic_shape (a padded input) is not supported")
    max_iterations = 10 if max_iterations is None else int(max_iterations)
    eps = float(np.finfo(x.dtype).eps) if eps is None else float(eps)
    dt = x.dtype
    eye = jnp.eye(N, dtype=dt)

    one_norm = jnp.linalg.norm(x, ord=1)
    inf_norm = jnp.linalg.norm(x, ord=np.inf)
    alpha_inverse = jnp.where(one_norm == 0, 1, 1 / jnp.sqrt(one_norm) / jnp.sqrt(inf_norm))
    u = x * alpha_inverse.astype(dt)
    tol_norm = float(np.cbrt(10.0 * eps / 2.0))
    qr_coefs, chol_coefs = _qdwh_coefficients(eps, max_iterations)

    def qr_step(u: Any, p: Any) -> Any:
        a_minus_e_by_sqrt_c, sqrt_c, e = p[0], p[1], p[2]
        q, _ = lax_linalg.qr(jnp.concatenate([sqrt_c * u, eye], axis=0), full_matrices=False)
        return e * u + a_minus_e_by_sqrt_c * (q[:M] @ jnp.conj(q[M:]).T)

    def chol_step(u: Any, p: Any) -> Any:
        a_minus_e, c, e = p[0], p[1], p[2]
        y = lax_linalg.cholesky(c * (jnp.conj(u).T @ u) + eye, symmetrize_input=False)
        z = jnp.conj(lax_linalg.triangular_solve(y, u.T, left_side=True, lower=True, conjugate_a=True))
        z = lax_linalg.triangular_solve(y, z, left_side=True, lower=True, transpose_a=True, conjugate_a=True)
        return e * u + a_minus_e * jnp.conj(z).T

    # the weighted steps (a static schedule of a few) unrolled; the Halley tail is a while loop
    for p in qr_coefs:
        u = qr_step(u, jnp.asarray(p, dtype=dt))
    not_converged = jnp.array(True)
    for p in chol_coefs:
        new = chol_step(u, jnp.asarray(p, dtype=dt))
        u, not_converged = new, jnp.linalg.norm(new - u) > tol_norm

    halley = jnp.asarray([2.0, 3.0, 1.0 / 3.0], dtype=dt)  # (a - e, c, e) at a, b, c = 3, 1, 3

    def h_cond(carry: tuple) -> Any:
        k, _, nc = carry
        return jnp.logical_and(nc, k < max_iterations)

    def h_body(carry: tuple) -> tuple:
        k, u, _ = carry
        new = chol_step(u, halley)
        return k + 1, new, jnp.linalg.norm(new - u) > tol_norm

    start = jnp.asarray(len(qr_coefs) + len(chol_coefs), dtype=np.int32)
    num_iters, u, not_converged = while_loop(h_cond, h_body, (start, u, not_converged))
    u = 1.5 * u - 0.5 * u @ (jnp.conj(u).T @ u)  # Newton-Schulz refinement
    h = jnp.conj(u).T @ x
    h = (h + jnp.conj(h).T) / 2
    return u.astype(dt), h.astype(dt), num_iters, jnp.logical_not(not_converged)
