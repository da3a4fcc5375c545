"""``fjax.scipy.linalg``: scipy.linalg's API (as ``jax.scipy.linalg`` has it) on ``lax.linalg``.

Factorizations call the LAPACK-backed primitives; ``expm`` is Pade-13 scaling and squaring with
a custom JVP given by its Frechet derivative (Al-Mohy and Higham's algorithm, linear in the
direction, so reverse mode transposes it); ``sqrtm`` uses the complex Schur form (not
differentiable, as in JAX); ``polar`` uses the SVD. ``overwrite_*`` and ``check_finite`` are
accepted and ignored, as in JAX.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from fjax import core
from fjax.custom_derivatives import custom_jvp
from fjax.dtypes import kind as _dkind
from fjax.lax import _linalg_util as u
from fjax.lax import linalg as lax_linalg
from fjax.numpy import _linalg_decomp as nla
from fjax.numpy import _util

__all__ = [
    "block_diag",
    "cho_factor",
    "cho_solve",
    "cholesky",
    "det",
    "eigh",
    "eigh_tridiagonal",
    "expm",
    "expm_frechet",
    "funm",
    "hessenberg",
    "hilbert",
    "inv",
    "lu",
    "lu_factor",
    "lu_solve",
    "polar",
    "qr",
    "schur",
    "solve",
    "solve_sylvester",
    "solve_triangular",
    "sqrtm",
    "svd",
    "toeplitz",
]


def _jnp() -> Any:
    import fjax.numpy as jnp  # noqa: PLC0415

    return jnp


def _prep(fn: str, *xs: Any) -> list:
    _util.check_arraylike(fn, *xs)
    return _util.promote_dtypes_inexact(fn, *[_util.to_fjax(x, fn) for x in xs])


def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """Cholesky factor of a Hermitian positive-definite matrix; upper (``U^H U``) by default."""
    return nla.cholesky(a, upper=not lower)


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> tuple:
    """``(c, lower)`` for cho_solve: the Cholesky factor (the other triangle is zero). The upper
    factor (the default) comes from LAPACK in that form, not as a transposed lower one."""
    (a,) = nla._prep("cholesky", a)
    nla._square("cholesky", a)
    return lax_linalg.cholesky_factor(a, upper=not lower), lower


def _vec_rhs(b: Any) -> tuple[Any, bool]:
    if b.ndim == 1:
        return b[:, None], True
    return b, False


def _core_dims(a: Any, b: Any) -> None:
    # JAX vectorizes these solves over a gufunc signature; mismatched operands raise its words
    from fjax.numpy._more2 import check_core_dims  # noqa: PLC0415

    sig = "(n,n),(n)->(n)" if b.ndim == 1 else "(n,n),(n,k)->(n,k)"
    check_core_dims([a.shape, b.shape], [("n", "n"), ("n",) if b.ndim == 1 else ("n", "k")], frozenset(), sig)


def cho_solve(c_and_lower: tuple, b: Any, overwrite_b: bool = False, check_finite: bool = True) -> Any:
    """Solve ``a x = b`` given ``cho_factor(a)``."""
    c, lower = c_and_lower
    c, b = _prep("cho_solve", c, b)
    _core_dims(c, b)
    b2, vec = _vec_rhs(b)
    c2, b2 = nla._bcast_batch(c, b2)
    if lower:
        y = lax_linalg.triangular_solve(c2, b2, left_side=True, lower=True)
        x = lax_linalg.triangular_solve(c2, y, left_side=True, lower=True, transpose_a=True, conjugate_a=True)
    else:
        y = lax_linalg.triangular_solve(c2, b2, left_side=True, lower=False, transpose_a=True, conjugate_a=True)
        x = lax_linalg.triangular_solve(c2, y, left_side=True, lower=False)
    return x[..., 0] if vec else x


def solve_triangular(
    a: Any,
    b: Any,
    trans: int | str = 0,
    lower: bool = False,
    unit_diagonal: bool = False,
    overwrite_b: bool = False,
    debug: Any = None,
    check_finite: bool = True,
) -> Any:
    """Solve ``op(a) x = b`` for triangular ``a``; ``trans`` 0/'N', 1/'T' or 2/'C'."""
    a, b = _prep("solve_triangular", a, b)
    t = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}.get(trans)
    if t is None:
        raise ValueError(f"Invalid 'trans' value {trans!r}")
    _core_dims(a, b)
    b2, vec = _vec_rhs(b)
    a2, b2 = nla._bcast_batch(a, b2)
    x = lax_linalg.triangular_solve(
        a2, b2, left_side=True, lower=lower, transpose_a=t > 0, conjugate_a=t == 2, unit_diagonal=unit_diagonal
    )
    return x[..., 0] if vec else x


def det(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """Determinant."""
    return nla.det(a)


def inv(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """Matrix inverse."""
    return nla.inv(a)


def solve(
    a: Any,
    b: Any,
    lower: bool = False,
    overwrite_a: bool = False,
    overwrite_b: bool = False,
    debug: bool = False,
    check_finite: bool = True,
    assume_a: str = "gen",
) -> Any:
    """Solve ``a x = b``; ``assume_a='pos'`` uses a Cholesky factorization, 'sym'/'her'/'gen' LU."""
    if assume_a not in ("gen", "sym", "her", "pos", "general", "symmetric", "hermitian", "positive definite"):
        raise ValueError(f"solve: unknown assume_a={assume_a!r}")
    a, b = _prep("solve", a, b)
    if assume_a in ("pos", "positive definite"):
        # only the given triangle is read: symmetrize from it
        jnp = _jnp()
        tri = jnp.tril(a) if lower else jnp.triu(a)
        full = tri + u.H(tri) - jnp.eye(a.shape[-1], dtype=a.dtype) * jnp.diagonal(a, axis1=-2, axis2=-1)[..., None, :]
        c = nla.cholesky(full, symmetrize_input=False)
        return cho_solve((c, True), b)
    return nla.solve(a, b)


def lu_factor(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> tuple:
    """``(lu, piv)``: packed LU factors and 0-based int32 pivot indices (LAPACK getrf)."""
    (a,) = _prep("lu_factor", a)
    lu_, piv, _ = lax_linalg.lu(a)
    return lu_, piv


def lu_solve(lu_and_piv: tuple, b: Any, trans: int = 0, overwrite_b: bool = False, check_finite: bool = True) -> Any:
    """Solve ``a x = b`` (``trans`` 1: ``a^T``, 2: ``a^H``) given ``lu_factor(a)``."""
    lu_, piv = lu_and_piv
    lu_, b = _prep("lu_solve", lu_, b)
    if trans not in (0, 1, 2):
        raise ValueError(f"lu_solve: trans must be 0, 1 or 2, got {trans!r}")
    m = lu_.shape[-1]
    perm = lax_linalg.lu_pivots_to_permutation(piv, m)
    b2, vec = _vec_rhs(b)
    lu2, b2 = nla._bcast_batch(lu_, b2)
    perm = _jnp().broadcast_to(perm, lu2.shape[:-1])
    x = nla._lu_solve(lu2, perm, b2, trans)
    return x[..., 0] if vec else x


def lu(a: Any, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> tuple:
    """``(p, l, u)`` with ``a = p @ l @ u`` (``(p @ l, u)`` with ``permute_l``)."""
    (a,) = _prep("lu", a)
    jnp = _jnp()
    lu_, _, perm = lax_linalg.lu(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    l_ = jnp.tril(lu_[..., :, :k], -1) + jnp.eye(m, k, dtype=a.dtype)
    u_ = jnp.triu(lu_[..., :k, :])
    # p[perm[i], i] = 1, so that p @ (l @ u) undoes the row permutation
    p = jnp.swapaxes(u.perm_matrix(perm, a.dtype), -1, -2)
    if permute_l:
        return p @ l_, u_
    return p, l_, u_


def eigh(
    a: Any,
    b: Any = None,
    lower: bool = True,
    eigvals_only: bool = False,
    overwrite_a: bool = False,
    overwrite_b: bool = False,
    turbo: bool = True,
    eigvals: Any = None,
    type: int = 1,  # noqa: A002
    check_finite: bool = True,
) -> Any:
    """Eigenvalues (ascending) and eigenvectors of a Hermitian matrix (``w`` or ``(w, v)``).
    ``eigvals=(lo, hi)`` selects eigenvalues by (inclusive) index. With ``b`` (Hermitian positive
    definite): the generalized problem of ``type`` 1 (``a v = w b v``), 2 (``a b v = w v``) or 3
    (``b a v = w v``), eigenvectors normalized as scipy's (``v^H b v = I`` for types 1 and 2)."""
    sub = None if eigvals is None else (int(eigvals[0]), int(eigvals[1]) + 1)
    if b is not None:
        # generalized problem (JAX raises NotImplementedError here; scipy's semantics)
        a, b = _prep("eigh", a, b)
        return _linalg_extra.generalized_eigh(a, b, lower, eigvals_only, sub, type)
    if type != 1:
        raise ValueError(f"eigh: type={type} needs b (type 1 is the standard problem)")
    (a,) = _prep("eigh", a)
    v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=False, subset_by_index=sub)
    return w if eigvals_only else (w, v)


def eigh_tridiagonal(
    d: Any, e: Any, *, eigvals_only: bool = False, select: str = "a", select_range: Any = None, tol: Any = None
) -> Any:
    """Eigenvalues of the symmetric tridiagonal matrix with diagonal ``d`` and off-diagonal ``e``
    (JAX supports only ``eigvals_only=True``; here the vectors are returned too when asked)."""
    d, e = _prep("eigh_tridiagonal", d, e)
    jnp = _jnp()
    n = d.shape[-1]
    if e.shape[-1] != max(n - 1, 0):
        raise ValueError(f"eigh_tridiagonal: e must have {n - 1} elements, got shape {e.shape}")
    t = jnp.diag(d) + jnp.diag(e, 1) + jnp.diag(jnp.conj(e), -1)
    sub = None
    if select == "i":
        sub = (int(select_range[0]), int(select_range[1]) + 1)
    elif select != "a":
        raise NotImplementedError(f"eigh_tridiagonal: select={select!r} is not supported (use 'a' or 'i')")
    v, w = lax_linalg.eigh(t, symmetrize_input=False, subset_by_index=sub)
    return w if eigvals_only else (w, v)


def svd(
    a: Any,
    full_matrices: bool = True,
    compute_uv: bool = True,
    overwrite_a: bool = False,
    check_finite: bool = True,
    lapack_driver: str = "gesdd",
) -> Any:
    """``(U, s, Vh)`` (or ``s``) with ``a = U @ diag(s) @ Vh``."""
    out = nla.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    return tuple(out) if compute_uv else out


def qr(
    a: Any, overwrite_a: bool = False, lwork: Any = None, mode: str = "full", pivoting: bool = False,
    check_finite: bool = True,
) -> tuple:  # fmt: skip
    """QR decomposition; ``mode`` 'full', 'economic' or 'r' (``(r,)``), ``pivoting`` appends ``p``."""
    (a,) = _prep("qr", a)
    if mode not in ("full", "economic", "r"):
        raise ValueError(f"Unsupported QR decomposition mode {mode!r}")  # JAX's error, also for 'raw'
    outs = lax_linalg.qr(a, pivoting=pivoting, full_matrices=mode == "full")
    q, r = outs[0], outs[1]
    if mode == "r":
        return (r, outs[2]) if pivoting else (r,)
    return (q, r, outs[2]) if pivoting else (q, r)


def schur(a: Any, output: str = "real") -> tuple:
    """Schur decomposition ``a = z @ t @ z^H``: ``(t, z)``; ``output='complex'`` for the triangular form."""
    (a,) = _prep("schur", a)
    if output not in ("real", "complex"):
        raise ValueError(f"schur: output must be 'real' or 'complex', got {output!r}")
    if output == "complex" and _dkind(a.dtype) != "c":
        a = a.astype(np.result_type(a.dtype, np.complex64))
    t, z = lax_linalg.schur(a)
    return t, z


def hessenberg(
    a: Any, *, calc_q: bool = False, overwrite_a: bool = False, check_finite: bool = True
) -> Any:  # fmt: skip
    """Upper Hessenberg form ``h`` of ``a`` (and unitary ``q`` with ``a = q h q^H``)."""
    (a,) = _prep("hessenberg", a)
    jnp = _jnp()
    packed, taus = lax_linalg.hessenberg(a)
    h = jnp.triu(packed, -1)
    if not calc_q:
        return h
    n = a.shape[-1]
    if n <= 1:
        return h, jnp.broadcast_to(jnp.eye(n, dtype=a.dtype), a.shape)
    q = lax_linalg.householder_product(packed[..., 1:, :-1], taus)
    bs = a.shape[:-2]
    top = jnp.concatenate([jnp.ones(bs + (1, 1), a.dtype), jnp.zeros(bs + (1, n - 1), a.dtype)], axis=-1)
    rest = jnp.concatenate([jnp.zeros(bs + (n - 1, 1), a.dtype), q], axis=-1)
    return h, jnp.concatenate([top, rest], axis=-2)


# ---------------------------------------------------------------------------------------------
# expm and its Frechet derivative

_B13 = (
    64764752532480000.0,
    32382376266240000.0,
    7771770303897600.0,
    1187353796428800.0,
    129060195264000.0,
    10559470521600.0,
    670442572800.0,
    33522128640.0,
    1323241920.0,
    40840800.0,
    960960.0,
    16380.0,
    182.0,
    1.0,
)
_THETA13 = 5.371920351148152


def _num_squarings(A: Any, max_squarings: int) -> Any:
    jnp = _jnp()
    norm1 = jnp.max(jnp.sum(jnp.abs(A), axis=-2), axis=-1)
    s = jnp.ceil(jnp.log2(jnp.maximum(norm1, 1e-300) / _THETA13))
    return jnp.clip(jnp.where(jnp.isfinite(s), s, 0), 0, max_squarings).astype(np.int32)


def _pade13(A: Any, E: Any | None) -> tuple:
    """U, V (and their directional derivatives along ``E``) of the degree-13 Pade approximant."""
    jnp = _jnp()
    b = _B13
    ident = jnp.broadcast_to(jnp.eye(A.shape[-1], dtype=A.dtype), A.shape)
    A2 = A @ A
    A4 = A2 @ A2
    A6 = A2 @ A4
    W1 = b[13] * A6 + b[11] * A4 + b[9] * A2
    W2 = b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * ident
    Z1 = b[12] * A6 + b[10] * A4 + b[8] * A2
    Z2 = b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * ident
    W = A6 @ W1 + W2
    U = A @ W
    V = A6 @ Z1 + Z2
    if E is None:
        return U, V, None, None
    M2 = A @ E + E @ A
    M4 = A2 @ M2 + M2 @ A2
    M6 = A4 @ M2 + M4 @ A2
    Lw1 = b[13] * M6 + b[11] * M4 + b[9] * M2
    Lw2 = b[7] * M6 + b[5] * M4 + b[3] * M2
    Lz1 = b[12] * M6 + b[10] * M4 + b[8] * M2
    Lz2 = b[6] * M6 + b[4] * M4 + b[2] * M2
    Lw = A6 @ Lw1 + M6 @ W1 + Lw2
    Lu = A @ Lw + E @ W
    Lv = A6 @ Lz1 + M6 @ Z1 + Lz2
    return U, V, Lu, Lv


def _expm_frechet_impl(A: Any, E: Any | None, max_squarings: int = 16) -> tuple:
    jnp = _jnp()
    s = _num_squarings(A, max_squarings)
    concrete = not isinstance(s, core.Tracer)
    scale = (2.0 ** -s.astype(A.real.dtype)).astype(A.dtype)[..., None, None]
    A = A * scale
    if E is not None:
        E = E * scale
    U, V, Lu, Lv = _pade13(A, E)
    lu_, _, perm = lax_linalg.lu(V - U)
    R = nla._lu_solve(lu_, perm, U + V)
    L = None if E is None else nla._lu_solve(lu_, perm, Lu + Lv + (Lu - Lv) @ R)
    if concrete:
        for k in range(int(np.max(np.asarray(s))) if np.asarray(s).size else 0):
            on = (np.asarray(s) > k)[..., None, None]
            if L is not None:
                L = jnp.where(on, R @ L + L @ R, L)
            R = jnp.where(on, R @ R, R)
    else:
        for k in range(max_squarings):
            on = (s > k)[..., None, None]
            if L is not None:
                L = jnp.where(on, R @ L + L @ R, L)
            R = jnp.where(on, R @ R, R)
    return R, L


def _expm_core(A: Any, max_squarings: int) -> Any:
    @custom_jvp
    def _expm(x: Any) -> Any:
        return _expm_frechet_impl(x, None, max_squarings)[0]

    @_expm.defjvp
    def _expm_jvp(primals: tuple, tangents: tuple) -> tuple:
        (x,), (dx,) = primals, tangents
        r, l_ = _expm_frechet_impl(x, dx, max_squarings)
        return r, l_

    return _expm(A)


def expm(A: Any, *, upper_triangular: bool = False, max_squarings: int = 16) -> Any:
    """Matrix exponential (Pade-13 scaling and squaring, Higham 2005); its derivative is the
    Frechet derivative (``expm_frechet``). Batched over leading dimensions."""
    (A,) = _prep("expm", A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"Expected A to be a (batched) square matrix, got A.shape={A.shape}.")
    if A.shape[-1] == 0:
        return A
    return _expm_core(A, int(max_squarings))


def expm_frechet(A: Any, E: Any, *, method: str | None = None, compute_expm: bool = True) -> Any:
    """Frechet derivative of expm at ``A`` in direction ``E`` (Al-Mohy and Higham 2009):
    ``(expm(A), L)`` or ``L`` alone. ``L`` is linear in ``E``, so it transposes."""
    if method not in (None, "SPS", "blockEnlarge"):
        raise ValueError(f"expm_frechet: unknown method {method!r}")
    A, E = _prep("expm_frechet", A, E)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or E.shape != A.shape:
        raise ValueError(f"expected A and E to be square matrices of the same shape, got {A.shape} and {E.shape}")
    r, l_ = _expm_frechet_impl(A, E)
    return (r, l_) if compute_expm else l_


# ---------------------------------------------------------------------------------------------
# sqrtm, polar and structured matrices


def _sqrtm_triu(T: Any) -> Any:
    """Square root of an upper triangular matrix by the column recurrence of Bjorck and Hammarling."""
    jnp = _jnp()
    n = T.shape[-1]
    diag = jnp.sqrt(jnp.diagonal(T))
    R = jnp.diag(diag)
    for j in range(1, n):
        for i in range(j - 1, -1, -1):
            s = R[i, i + 1 : j] @ R[i + 1 : j, j] if j - i > 1 else 0
            R = R.at[i, j].set((T[i, j] - s) / (R[i, i] + R[j, j]))
    return R


def sqrtm(A: Any, blocksize: int = 1) -> Any:
    """Principal matrix square root, through the complex Schur form (complex result, as JAX)."""
    if blocksize > 1:
        raise NotImplementedError("sqrtm: blocked algorithm (blocksize > 1) is not implemented")
    (A,) = _prep("sqrtm", A)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"sqrtm: expected a square matrix, got shape {A.shape}")
    T, Z = schur(A, output="complex")
    R = _sqrtm_triu(T)
    return Z @ R @ u.H(Z)


def polar(a: Any, side: str = "right", *, method: str = "svd", eps: Any = None, max_iterations: Any = None) -> tuple:
    """Polar decomposition ``a = u p`` (``side='right'``) or ``a = p u`` (``'left'``), via the SVD
    (``method='qdwh'`` is computed the same way)."""
    if side not in ("right", "left"):
        raise ValueError(f"polar: side must be 'right' or 'left', got {side!r}")
    if method not in ("svd", "qdwh"):
        raise ValueError(f"polar: unknown method {method!r}")
    (a,) = _prep("polar", a)
    jnp = _jnp()
    U, s, Vh = nla.svd(a, full_matrices=False)
    unitary = U @ Vh
    sc = s.astype(a.dtype)
    if side == "right":
        p = (u.H(Vh) * sc[..., None, :]) @ Vh
    else:
        p = (U * sc[..., None, :]) @ u.H(U)
    del jnp
    return unitary, p


def block_diag(*arrs: Any) -> Any:
    """Block-diagonal matrix of the given (up to 2-D) arrays."""
    jnp = _jnp()
    if not arrs:
        return jnp.zeros((1, 0))
    mats = [jnp.atleast_2d(jnp.asarray(a)) for a in arrs]
    for a in mats:
        if a.ndim != 2:
            raise ValueError(f"block_diag: arguments must have 2 or fewer dimensions, got shape {a.shape}")
    dt = np.result_type(*[a.dtype for a in mats])
    rows = sum(a.shape[0] for a in mats)
    cols = sum(a.shape[1] for a in mats)
    out = jnp.zeros((rows, cols), dt)
    r = c = 0
    for a in mats:
        out = out.at[r : r + a.shape[0], c : c + a.shape[1]].set(a.astype(dt))
        r += a.shape[0]
        c += a.shape[1]
    return out


def toeplitz(c: Any, r: Any = None) -> Any:
    """Toeplitz matrix with first column ``c`` and first row ``r`` (default ``conj(c)``);
    ``r[0]`` is ignored. Leading dimensions batch (as JAX)."""
    jnp = _jnp()
    c = jnp.asarray(c)
    if r is None:
        r = jnp.conj(c)
    else:
        r = jnp.asarray(r)
    c, r = _util.promote_dtypes("toeplitz", c, r) if c.dtype != r.dtype else (c, r)
    if c.ndim == 0:
        c = c[None]
    if r.ndim == 0:
        r = r[None]
    m, n = c.shape[-1], r.shape[-1]
    bs = _util.broadcast_shapes("toeplitz", tuple(c.shape[:-1]), tuple(r.shape[:-1]))
    c = jnp.broadcast_to(c, bs + (m,))
    r = jnp.broadcast_to(r, bs + (n,))
    # all diagonals in one vector: reversed column, then the row without its first element
    vals = jnp.concatenate([jnp.flip(c, -1), r[..., 1:]], axis=-1)
    idx = (m - 1) - np.arange(m)[:, None] + np.arange(n)[None, :]
    return vals[..., idx]


def hilbert(n: int) -> Any:
    """The ``n x n`` Hilbert matrix ``1 / (i + j + 1)``."""
    n = operator.index(n)
    jnp = _jnp()
    a = np.arange(n)
    return jnp.asarray(1.0 / (a[:, None] + a[None, :] + 1.0), dtype=jnp.zeros(()).dtype)


from fjax.scipy import _linalg_extra  # noqa: E402
from fjax.scipy._linalg_extra import funm, solve_sylvester  # noqa: E402, F401
from fjax.scipy._linalg_special_matrices import __all__ as _special_names  # noqa: E402
from fjax.scipy._linalg_special_matrices import (  # noqa: E402, F401
    circulant,
    companion,
    convolution_matrix,
    dft,
    fiedler,
    fiedler_companion,
    hadamard,
    hankel,
    helmert,
    invhilbert,
    invpascal,
    leslie,
    pascal,
    qr_multiply,
    rsf2csf,
)

__all__ += _special_names
