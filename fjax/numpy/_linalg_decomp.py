"""Decompositions and solvers of ``fjax.numpy.linalg`` (numpy/JAX semantics) on ``lax.linalg``:
cholesky, eig(vals), eigh/eigvalsh, svd/svdvals, qr, det, slogdet, solve, inv, lstsq, pinv,
matrix_power, matrix_rank, cond, multi_dot, tensorinv, tensorsolve, diagonal.

Leading dimensions are batch dimensions (broadcast between the operands of ``solve``).
Derivatives come from the primitives' rules; ``pinv`` has JAX's Golub-Pereyra JVP.
"""

from __future__ import annotations

import math
import operator
from typing import Any, NamedTuple, Sequence

import numpy as np

from fjax import core
from fjax.core import Array
from fjax.custom_derivatives import custom_jvp
from fjax.dtypes import finfo as _finfo
from fjax.dtypes import kind as _dkind
from fjax.lax import _linalg_util as u
from fjax.lax import lax
from fjax.lax import linalg as lax_linalg
from fjax.numpy import _util

__all__ = [
    "EighResult",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "cholesky",
    "cond",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "lstsq",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensorinv",
    "tensorsolve",
]


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


def _jnp() -> Any:
    import fjax.numpy as jnp  # noqa: PLC0415

    return jnp


def _prep(fn: str, *xs: Any) -> list:
    _util.check_arraylike(fn, *xs)
    ys = [_util.to_fjax(x, fn) for x in xs]
    return _util.promote_dtypes_inexact(fn, *ys)


# JAX's wrappers word the square-matrix check per function (det names its private _det)
_ARG_SHAPE = {
    "inv": "Argument to inv must have shape [..., n, n], got {}.",
    "det": "Argument to _det() must have shape [..., n, n], got {}",
    "slogdet": "Argument to slogdet() must have shape [..., n, n], got {}",
}


def _square(fn: str, a: Any) -> None:
    """JAX's error for a non-square (or rank < 2) ``a`` given to ``fn``: its wrapper's own check
    (inv, det, slogdet), the lax shape rule's (eig), numpy's words (matrix_power), or what its
    symmetrizing ``(a + a^H) / 2`` raises first (cholesky, eigh)."""
    shape = tuple(a.shape)
    if fn in _ARG_SHAPE:
        if len(shape) < 2 or shape[-1] != shape[-2]:
            raise ValueError(_ARG_SHAPE[fn].format(shape))
    elif fn in ("cholesky", "eigh"):
        lax_linalg.check_symmetrizable(shape)
    elif fn == "matrix_power":
        if len(shape) < 2:
            raise TypeError(f"{len(shape)}-dimensional array given. Array must be at least two-dimensional")
        if shape[-1] != shape[-2]:
            raise TypeError("Last 2 dimensions of the array must be square")
    elif fn == "eig":
        lax_linalg._check_square("eig", a)
    elif len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"{fn}: argument must be a square matrix or stack of square matrices, got shape {shape}")


def _atleast2(fn: str, a: Any) -> None:
    # svd/qr: the lax shape rule's TypeError; pinv: the unpacking of ``a.shape[-2:]`` into m, n
    if a.ndim < 2:
        if fn == "pinv":
            raise ValueError(f"not enough values to unpack (expected 2, got {a.ndim})")
        if fn == "cond":
            raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got arr.shape={a.shape}")
        lax_linalg._check_rank2(fn, a)


def _bcast_batch(a: Any, b: Any) -> tuple[Any, Any]:
    """Broadcast the batch dims (all but the last two) of ``a`` and ``b``."""
    ba, bb = tuple(a.shape[:-2]), tuple(b.shape[:-2])
    bs = _util.broadcast_shapes("linalg", ba, bb)
    return (
        _util.broadcast_to_shape(a, bs + tuple(a.shape[-2:])),
        _util.broadcast_to_shape(b, bs + tuple(b.shape[-2:])),
    )


def cholesky(a: Any, *, upper: bool = False, symmetrize_input: bool = True) -> Any:
    """Cholesky factor of Hermitian positive-definite ``a``: lower ``L`` with ``a = L L^H``
    (``upper=True``: ``U = L^H``). Not positive definite: NaN."""
    (a,) = _prep("cholesky", a)
    _square("cholesky", a)
    L = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return u.H(L) if upper else L


def eigh(a: Any, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of Hermitian ``a``, reading the ``UPLO`` triangle."""
    (a,) = _prep("eigh", a)
    if symmetrize_input:
        _square("eigh", a)
    if UPLO is None or UPLO == "L":
        lower = True
    elif UPLO == "U":
        lower = False
    else:
        raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO!r}")
    v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a: Any, UPLO: str | None = "L", *, symmetrize_input: bool = True) -> Any:
    """Eigenvalues (ascending) of Hermitian ``a``."""
    return eigh(a, UPLO, symmetrize_input).eigenvalues


def eig(a: Any) -> tuple[Any, Any]:
    """Eigenvalues and right eigenvectors (unit columns) of a general square ``a`` (complex)."""
    (a,) = _prep("eig", a)
    _square("eig", a)
    w, v = lax_linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=True)
    return w, v


def eigvals(a: Any) -> Any:
    """Eigenvalues of a general square ``a`` (complex; differentiable)."""
    (a,) = _prep("eigvals", a)
    _square("eig", a)
    return lax_linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


def svd(
    a: Any,
    full_matrices: bool = True,
    compute_uv: bool = True,
    hermitian: bool = False,
    subset_by_index: tuple[int, int] | None = None,
) -> Any:
    """Singular value decomposition: ``SVDResult(U, S, Vh)`` with ``a = U @ diag(S) @ Vh``, or ``S``
    alone. ``hermitian`` computes it from an eigendecomposition (as JAX)."""
    (a,) = _prep("svd", a)
    _atleast2("svd", a)
    if hermitian:
        jnp = _jnp()
        v, w = lax_linalg.eigh(a, subset_by_index=subset_by_index)
        s = jnp.abs(w)
        if not compute_uv:
            return -jnp.sort(-s, axis=-1)
        order = jnp.argsort(-s, axis=-1)
        s = jnp.take_along_axis(s, order, axis=-1)
        sign = jnp.take_along_axis(jnp.sign(w), order, axis=-1)
        v = jnp.take_along_axis(v, jnp.expand_dims(order, -2), axis=-1)
        vh = u.H(v * jnp.expand_dims(sign.astype(v.dtype), -2))
        return SVDResult(v, s, vh)
    out = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv, subset_by_index=subset_by_index)
    if compute_uv:
        return SVDResult(*out)
    return out


def svdvals(x: Any, /) -> Any:
    """Singular values, descending."""
    return svd(x, compute_uv=False)


def qr(a: Any, mode: str = "reduced") -> Any:
    """QR decomposition: ``QRResult(Q, R)`` (``mode`` 'reduced' or 'complete'), ``R`` for 'r';
    'raw' gives LAPACK geqrf's packed reflectors (transposed) and scales."""
    (a,) = _prep("qr", a)
    _atleast2("qr", a)
    if mode in ("reduced", "r"):
        full = False
    elif mode == "complete":
        full = True
    elif mode == "raw":  # LAPACK geqrf's reflectors, transposed as JAX returns them
        from fjax.lax._linalg_gaps import geqrf  # noqa: PLC0415

        h, taus = geqrf(a)
        return QRResult(u.T(h), taus)
    else:
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    q, r = lax_linalg.qr(a, full_matrices=full)
    return r if mode == "r" else QRResult(q, r)


def _lu_parity(pivots: Any) -> Any:
    """(-1)^(number of row swaps), as an int32 0/1 parity."""
    k = pivots.shape[-1]
    iota = lax.broadcasted_iota(pivots.dtype, tuple(pivots.shape), pivots.ndim - 1)
    swaps = lax.convert_element_type(lax.ne(pivots, iota), np.int32)
    del k
    return lax.rem(lax.reduce_sum(swaps, (pivots.ndim - 1,)), Array(np.int32(2), False))


def slogdet(a: Any, *, method: str | None = None) -> SlogdetResult:
    """Sign and log of the absolute value of the determinant (via LU)."""
    (a,) = _prep("slogdet", a)
    _square("slogdet", a)
    if method not in (None, "lu"):
        raise ValueError(f"slogdet: unknown method {method!r}")
    jnp = _jnp()
    n = a.shape[-1]
    if n == 0:
        rdt = _finfo(a.dtype).dtype
        return SlogdetResult(jnp.ones(a.shape[:-2], a.dtype), jnp.zeros(a.shape[:-2], rdt))
    lu_, piv, _ = lax_linalg.lu(a)
    d = u.diag(lu_)
    absd = jnp.abs(d)
    logdet = jnp.sum(jnp.log(absd), axis=-1)
    parity = _lu_parity(piv)
    sign0 = jnp.where(parity == 1, -1, 1).astype(a.dtype)
    if _dkind(a.dtype) == "c":
        ph = jnp.prod(d / jnp.where(absd == 0, 1, absd).astype(a.dtype), axis=-1)
    else:
        ph = jnp.prod(jnp.sign(d), axis=-1)
    zero = jnp.any(d == 0, axis=-1)
    sign = jnp.where(zero, jnp.zeros((), a.dtype), sign0 * ph)
    logdet = jnp.where(zero, -jnp.inf, logdet)
    return SlogdetResult(sign, logdet)


def det(a: Any) -> Any:
    """Determinant: the cofactor expansion up to 3x3 matrices (as JAX), else via LU (the
    product of U's diagonal times the permutation's sign). Its derivative is the adjugate, well
    defined at singular matrices too (0 where the rank is below n-1)."""
    (a,) = _prep("det", a)
    _square("det", a)
    jnp = _jnp()
    n = a.shape[-1]
    if n == 0:
        return jnp.ones(a.shape[:-2], a.dtype)

    def e(i: int, j: int) -> Any:
        return a[..., i, j]

    if n == 1:
        return e(0, 0)
    if n == 2:
        return e(0, 0) * e(1, 1) - e(0, 1) * e(1, 0)
    if n == 3:
        return (
            e(0, 0) * e(1, 1) * e(2, 2)
            + e(0, 1) * e(1, 2) * e(2, 0)
            + e(0, 2) * e(1, 0) * e(2, 1)
            - e(0, 2) * e(1, 1) * e(2, 0)
            - e(0, 0) * e(1, 2) * e(2, 1)
            - e(0, 1) * e(1, 0) * e(2, 2)
        )
    return _det_lu(a)


def _det_from_lu(lu_: Any, piv: Any) -> tuple[Any, Any]:
    """(the permutation's sign, the cumulative products of U's diagonal times it)."""
    jnp = _jnp()
    sign = jnp.where(_lu_parity(piv) == 1, -1, 1).astype(lu_.dtype)
    return sign, jnp.cumprod(u.diag(lu_), axis=-1) * sign[..., None]


@custom_jvp
def _det_lu(a: Any) -> Any:
    lu_, piv, _ = lax_linalg.lu(a)
    return _det_from_lu(lu_, piv)[1][..., -1]


@_det_lu.defjvp
def _det_lu_jvp(primals: tuple, tangents: tuple) -> tuple:
    (x,), (g,) = primals, tangents
    y, z = _adjugate_solve(x, g)
    return y, _jnp().trace(z, axis1=-1, axis2=-2)


def _adjugate_solve(a: Any, b: Any) -> tuple[Any, Any]:
    """``(det(a), adj(a) @ b)`` for square ``a[..., n, n]`` (n >= 4) and ``b`` of its shape, also
    for singular ``a``: with ``a[perm] = L U``, ``adj(a) @ b = det(a) U^-1 L^-1 b[perm]``. Scaling
    the first n-1 entries of ``L^-1 b[perm]`` by det(a) and replacing ``U[n-1, n-1]`` by the
    inverse of the signed product of the other pivots gives it without dividing by U's last pivot,
    so a rank n-1 matrix whose zero pivot comes last (as partial pivoting leaves it) is exact; a
    zero among the other pivots means rank < n-1, where the adjugate is 0."""
    jnp = _jnp()
    lu_, piv, perm = lax_linalg.lu(a)
    _, partial = _det_from_lu(lu_, piv)
    lu_ = lu_.at[..., -1, -1].set(1.0 / partial[..., -2])
    # a pivot other than the last is 0 (rank < n-1) exactly when solving with U gives inf/NaN
    probe = lax_linalg.triangular_solve(lu_, jnp.ones(a.shape[:-1] + (1,), a.dtype), left_side=True, lower=False)
    low_rank = jnp.any(~jnp.isfinite(probe[..., 0]), axis=-1)[..., None, None]
    x = jnp.where(low_rank, jnp.zeros_like(b), b)
    x = jnp.take_along_axis(x, jnp.expand_dims(perm, -1), axis=-2)
    x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
    x = jnp.concatenate([x[..., :-1, :] * partial[..., -1, None, None], x[..., -1:, :]], axis=-2)
    x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=False)
    return partial[..., -1], jnp.where(low_rank, jnp.zeros_like(x), x)


def _lu_solve(lu_: Any, perm: Any, b: Any, trans: int = 0) -> Any:
    """Solve with a packed LU factorization ``a[perm] = L U``; ``b[..., n, k]``, equal batch dims."""
    jnp = _jnp()
    if trans == 0:
        x = jnp.take_along_axis(b, jnp.expand_dims(perm, -1), axis=-2)
        x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
        return lax_linalg.triangular_solve(lu_, x, left_side=True, lower=False)
    conj = trans == 2
    x = lax_linalg.triangular_solve(lu_, b, left_side=True, lower=False, transpose_a=True, conjugate_a=conj)
    x = lax_linalg.triangular_solve(
        lu_, x, left_side=True, lower=True, unit_diagonal=True, transpose_a=True, conjugate_a=conj
    )
    inv_perm = jnp.argsort(perm, axis=-1)
    return jnp.take_along_axis(x, jnp.expand_dims(inv_perm, -1), axis=-2)


def solve(a: Any, b: Any) -> Any:
    """Solve ``a @ x = b``; ``b`` is a vector when 1-D, otherwise a stack of matrices ``[..., n, k]``
    (numpy 2 semantics); batch dims broadcast. Singular ``a`` gives inf/NaN as LAPACK does."""
    a, b = _prep("solve", a, b)
    if a.ndim < 2:
        raise ValueError(f"left hand array must be at least two dimensional; got a.shape={a.shape}")
    if b.ndim > 1 and a.ndim == b.ndim + 1 and a.shape[-1] == b.shape[-1] and a.shape[-1] != b.shape[-2]:
        raise ValueError(
            f"Invalid shapes for solve: {a.shape}, {b.shape}. Prior to JAX v0.5.0, this would have been treated "
            "as a batched 1-dimensional solve. To recover this behavior, use solve(a, b[..., None]).squeeze(-1)."
        )
    vec = b.ndim == 1
    sig = "(m,m),(m)->(m)" if vec else "(m,m),(m,n)->(m,n)"
    from fjax.numpy._more2 import check_core_dims  # noqa: PLC0415 - _more2 imports this module's package

    check_core_dims([a.shape, b.shape], [("m", "m"), ("m",) if vec else ("m", "n")], frozenset(), sig)
    bb = lax.expand_dims(b, (1,)) if vec else b
    a2, b2 = _bcast_batch(a, bb)
    if a.shape[-1] == 0 or b2.size == 0:
        x = _jnp().zeros(b2.shape, b2.dtype)
    else:
        lu_, _, perm = lax_linalg.lu(a2)
        x = _lu_solve(lu_, perm, b2)
    return x[..., 0] if vec else x


def inv(a: Any) -> Any:
    """Inverse of square ``a`` (stacks too)."""
    (a,) = _prep("inv", a)
    _square("inv", a)
    jnp = _jnp()
    eye = jnp.broadcast_to(jnp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    return solve(a, eye)


def lstsq(a: Any, b: Any, rcond: float | None = None, *, numpy_resid: bool = False) -> tuple:
    """Least-squares solution of ``a @ x = b`` through the SVD: ``(x, resid, rank, s)``. Singular
    values below ``rcond * s[0]`` are dropped (default ``eps * max(m, n)``)."""
    a, b = _prep("lstsq", a, b)
    jnp = _jnp()
    if a.ndim != 2:
        raise TypeError(f"{a.ndim}-dimensional array given. Array must be two-dimensional")
    if b.ndim not in (1, 2):
        raise TypeError(f"{b.ndim}-dimensional array given. Array must be one or two-dimensional")
    m, n = a.shape
    b_orig_ndim = b.ndim
    if b.ndim == 1:
        b = b[:, None]
    if b.shape[0] != m:
        raise ValueError("Leading dimensions of input arrays must match")
    dt = a.dtype
    if rcond is None:
        rcond = float(_finfo(dt).eps * max(n, m))
    elif rcond < 0:
        rcond = float(_finfo(dt).eps)
    uu, s, vt = svd(a, full_matrices=False)
    if s.shape[0] == 0:
        mask = s > 0
    else:
        mask = s >= rcond * s[0]
    rank = jnp.sum(mask)
    safe_s = jnp.where(mask, s, 1).astype(dt)
    s_inv = jnp.where(mask, 1 / safe_s, 0)[:, None]
    uTb = u.H(uu) @ b
    x = u.H(vt) @ (s_inv * uTb)
    if numpy_resid and (int(rank) < n or m <= n):
        resid = jnp.asarray([], dtype=s.dtype)
    else:
        r = b - a @ x
        resid = jnp.sum(jnp.real(r * jnp.conj(r)), axis=0)
    if b_orig_ndim == 1:
        x = x.ravel()
    return x, resid, rank, s


def _pinv_impl(a: Any, rtol: Any, hermitian: bool) -> Any:
    jnp = _jnp()
    m, n = a.shape[-2:]
    if m == 0 or n == 0:
        return jnp.zeros(a.shape[:-2] + (n, m), a.dtype)
    uu, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
    if rtol is None:
        rtol = max(m, n) * float(_finfo(s.dtype).eps)
    cutoff = jnp.asarray(rtol, dtype=s.dtype)[..., None] * s[..., :1]
    s = jnp.where(s > cutoff, s, jnp.inf).astype(uu.dtype)
    return u.H(vh) @ (u.H(uu) / s[..., :, None])


def pinv(a: Any, rtol: Any = None, hermitian: bool = False, *, rcond: Any = None) -> Any:
    """Moore-Penrose pseudo-inverse via the SVD (singular values at most ``rtol * s_max`` are
    treated as zero; default ``max(m, n) * eps``). Its derivative is the Golub-Pereyra formula."""
    (a,) = _prep("pinv", a)
    _atleast2("pinv", a)
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: only one of rtol and rcond may be specified")
        rtol = rcond
    rtol_c = rtol if rtol is None or isinstance(rtol, (int, float)) else rtol

    @custom_jvp
    def _pinv(x: Any) -> Any:
        return _pinv_impl(x, rtol_c, hermitian)

    @_pinv.defjvp
    def _pinv_jvp(primals: tuple, tangents: tuple) -> tuple:
        (x,), (x_dot,) = primals, tangents
        p = _pinv(x)
        if hermitian:
            x, x_dot = u.symmetrize(x), u.symmetrize(x_dot)
        m, n = x.shape[-2:]
        H = u.H
        if m >= n:
            s = (p @ H(p)) @ H(x_dot)
            t = (H(x_dot) @ H(p)) @ p
            p_dot = -(p @ x_dot) @ p + s - (s @ x) @ p + t - (p @ x) @ t
        else:
            s = p @ (H(p) @ H(x_dot))
            t = H(x_dot) @ (H(p) @ p)
            p_dot = -p @ (x_dot @ p) + s - s @ (x @ p) + t - p @ (x @ t)
        return p, p_dot

    return _pinv(a)


def matrix_power(a: Any, n: int) -> Any:
    """``a`` raised to the integer power ``n`` by repeated squaring (``n < 0`` inverts first)."""
    _util.check_arraylike("matrix_power", a)
    a = _util.to_fjax(a, "matrix_power")
    _square("matrix_power", a)
    try:
        n = operator.index(n)
    except TypeError as err:
        raise TypeError(f"exponent must be an integer, got {n}") from err
    jnp = _jnp()
    if n == 0:
        return jnp.broadcast_to(jnp.eye(a.shape[-2], dtype=a.dtype), a.shape)
    if n < 0:
        a = inv(a)
        n = -n
    if n == 1:
        return a
    z = result = None
    while n > 0:
        z = a if z is None else (z @ z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else (result @ z)
    return result


def matrix_rank(M: Any, rtol: Any = None, *, hermitian: bool = False, tol: Any = None) -> Any:
    """Number of singular values above ``rtol * s_max`` (default ``max(m, n) * eps``); ``hermitian``:
    ``M`` is Hermitian, its singular values are the absolute eigenvalues (``eigvalsh``)."""
    (M,) = _prep("matrix_rank", M)
    jnp = _jnp()
    if tol is not None:
        if rtol is not None:
            raise ValueError("matrix_rank: only one of rtol and tol may be specified")
        rtol = tol
    if M.ndim < 2:
        return jnp.any(M != 0).astype(np.int32)
    S = svd(M, full_matrices=False, compute_uv=False, hermitian=hermitian)
    if rtol is None:
        thresh = jnp.max(S, axis=-1, initial=0.0) * (max(M.shape[-2:]) * _finfo(S.dtype).eps)
    elif tol is not None:
        thresh = jnp.asarray(rtol, dtype=S.dtype)
    else:
        thresh = jnp.max(S, axis=-1, initial=0.0) * jnp.asarray(rtol, dtype=S.dtype)
    return jnp.sum(S > jnp.expand_dims(thresh, -1), axis=-1)


def cond(x: Any, p: Any = None) -> Any:
    """Condition number in the ``p`` norm (None/2: the ratio of extreme singular values)."""
    (x,) = _prep("cond", x)
    _atleast2("cond", x)
    jnp = _jnp()
    if p is None or p == 2:
        s = svdvals(x)
        return s[..., 0] / s[..., -1]
    if p == -2:
        s = svdvals(x)
        r = s[..., -1] / s[..., 0]
    else:
        _square("cond", x)
        from fjax.numpy.linalg import norm  # noqa: PLC0415

        r = norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))
    # a singular matrix has infinite condition number (NaN from inv) unless x itself has NaN
    nan_x = jnp.any(jnp.isnan(x), axis=(-2, -1))
    return jnp.where(jnp.isnan(r) & ~nan_x, jnp.inf, r)


def multi_dot(arrays: Sequence[Any], *, precision: Any = None) -> Any:
    """Chained matrix product; a 1-D first (last) array is a row (column) vector."""
    arrs = list(arrays)
    if len(arrs) < 2:
        raise ValueError(f"multi_dot requires at least two arrays, got {len(arrs)}")
    jnp = _jnp()
    arrs = [jnp.asarray(x) for x in arrs]
    for i, x in enumerate(arrs):
        ok = x.ndim in (1, 2) if i in (0, len(arrs) - 1) else x.ndim == 2
        if not ok:
            raise ValueError(f"multi_dot: array {i} has invalid shape {x.shape}")
    # cheapest parenthesization by the classic dynamic programme (numpy's order)
    dims = [arrs[0].shape[0] if arrs[0].ndim == 2 else 1] + [x.shape[-1] if x.ndim == 2 else 1 for x in arrs]
    mats = [x.reshape(1, -1) if (i == 0 and x.ndim == 1) else x for i, x in enumerate(arrs)]
    if arrs[-1].ndim == 1:
        mats[-1] = arrs[-1].reshape(-1, 1)
    dims = [mats[0].shape[0]] + [x.shape[1] for x in mats]
    k = len(mats)
    cost = [[0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for ln in range(1, k):
        for i in range(k - ln):
            j = i + ln
            cost[i][j] = math.inf
            for s_ in range(i, j):
                c = cost[i][s_] + cost[s_ + 1][j] + dims[i] * dims[s_ + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, s_

    def prod(i: int, j: int) -> Any:
        if i == j:
            return mats[i]
        s_ = split[i][j]
        return jnp.matmul(prod(i, s_), prod(s_ + 1, j), precision=precision)

    out = prod(0, k - 1)
    if arrs[0].ndim == 1:
        out = out[0]
    if arrs[-1].ndim == 1:
        out = out[..., 0]
    return out


def tensorinv(a: Any, ind: int = 2) -> Any:
    """Inverse of ``a`` as a linear map from its last ``a.ndim - ind`` axes to its first ``ind``."""
    (a,) = _prep("tensorinv", a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"ind must be a positive integer, got {ind}")
    out_shape = a.shape[ind:] + a.shape[:ind]
    m = math.prod(a.shape[:ind])
    n = math.prod(a.shape[ind:])
    if m != n:
        raise ValueError(f"tensorinv: the first {ind} axes ({m} elements) and the rest ({n}) must have equal sizes")
    return inv(a.reshape(m, n)).reshape(out_shape)


def tensorsolve(a: Any, b: Any, axes: tuple[int, ...] | None = None) -> Any:
    """Solve ``tensordot(a, x, axes=x.ndim) = b`` for ``x``."""
    a, b = _prep("tensorsolve", a, b)
    jnp = _jnp()
    if axes is not None:
        a = jnp.moveaxis(a, axes, [a.ndim - len(axes) + i for i in range(len(axes))])
    out_shape = a.shape[b.ndim :]
    m = math.prod(b.shape)
    n = math.prod(out_shape)
    if a.size != m * n or m != n:
        raise ValueError(f"tensorsolve: shapes a {a.shape} and b {b.shape} are incompatible")
    return solve(a.reshape(m, n), b.reshape(m)).reshape(out_shape)


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """Diagonals of the last two axes (array API ``linalg.diagonal``)."""
    return _jnp().diagonal(x, offset=offset, axis1=-2, axis2=-1)


_ = core
