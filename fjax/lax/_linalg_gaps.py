"""``jax.lax.linalg`` names built from fjax's existing ops (no new primitives): ``ormqr``,
``tridiagonal``, the algorithm enums ``EigImplementation``, ``EighImplementation`` and
``SvdAlgorithm`` with the checks ``eig``/``eigh``/``svd`` apply to them, and the eigenvector
derivatives of ``eig`` behind ``enable_eigvec_derivs``.

``ormqr`` applies the Householder reflectors one by one (a ``fori_loop`` over them, each step a
rank-1 update of ``c``), so Q is never formed. ``tridiagonal`` is LAPACK's unblocked sytd2/hetd2
written with masked full-matrix updates in a ``fori_loop`` (same reflectors, same sign
conventions, so the packed output matches ``?sytrd``/``?hetrd`` to rounding). Both are plain
compositions, so they run eagerly, under ``jit`` and ``vmap`` on every backend; they are even
differentiable, where JAX's primitives have no JVP rule and raise.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from fjax import core

__all__ = ["EigImplementation", "EighImplementation", "SvdAlgorithm", "ormqr", "tridiagonal"]


class EigImplementation(enum.Enum):
    """Implementations of ``eig``: fjax computes it with LAPACK (geev) on every backend."""

    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


class EighImplementation(enum.Enum):
    """Implementations of ``eigh``: fjax computes it with LAPACK (the QR-type driver)."""

    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


class SvdAlgorithm(enum.Enum):
    """Algorithms of ``svd``: ``DEFAULT`` and ``DIVIDE_AND_CONQUER`` run LAPACK gesdd, ``QR`` gesvd."""

    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


def check_eig_implementation(implementation: Any) -> None:
    """Raise as JAX's CPU eig does for any implementation but LAPACK (fjax's eig is LAPACK
    geev on the host whatever the backend)."""
    if implementation and implementation != EigImplementation.LAPACK:
        raise ValueError("Only the lapack implementation is supported on CPU.")


def check_eigh_implementation(implementation: Any) -> None:
    """Raise as JAX's CPU eigh does for QDWH and JACOBI; other values select LAPACK."""
    if implementation == EighImplementation.QDWH:
        raise NotImplementedError("QDWH implementation is only supported on TPU")
    if implementation == EighImplementation.JACOBI:
        raise NotImplementedError("Jacobi implementation is not supported on CPU")


def svd_algorithm(algorithm: Any) -> str | None:
    """The LAPACK driver for ``algorithm`` (``"gesvd"`` for QR, None for the default gesdd);
    JACOBI, POLAR and anything else raise NotImplementedError as JAX on CPU."""
    if algorithm is None or algorithm in (SvdAlgorithm.DEFAULT, SvdAlgorithm.DIVIDE_AND_CONQUER):
        return None
    if algorithm == SvdAlgorithm.QR:
        return "gesvd"
    raise NotImplementedError("The SVD Jacobi and Polar algorithms are not implemented on CPU.")


def _jnp() -> Any:
    import fjax.numpy as jnp  # noqa: PLC0415  (fjax.numpy imports fjax.lax)

    return jnp


def _lax() -> Any:
    from fjax import lax  # noqa: PLC0415

    return lax


def _loop(n: int, body: Any, init: Any) -> Any:
    """``fori_loop(0, n, body, init)`` while a jaxpr is being staged (jit, make_jaxpr, a loop body:
    one compact loop in the jaxpr); otherwise, eagerly and under grad or vmap too, a Python loop of
    the same body (a few numpy ops per step instead of compiling the loop body)."""
    if not core.is_eager():
        return _lax().fori_loop(0, n, body, init)
    for i in range(n):
        init = body(np.int32(i), init)
    return init


def _check_rank(name: str, pos: int, x: Any, rank: int) -> None:
    if x.ndim < rank:
        raise TypeError(f"Input {pos} to {name} must have rank at least {rank}, but got shape={tuple(x.shape)}")


def _check_inexact(name: str, pos: int, x: Any) -> None:
    if np.dtype(x.dtype).kind not in "fc":
        raise TypeError(
            f"{name} does not accept dtype {np.dtype(x.dtype).name} at position {pos}. Accepted dtypes "
            f"at position {pos} are subtypes of floating, complexfloating."
        )


# ---------------------------------------------------------------------------------------------
# ormqr


def ormqr(a: Any, taus: Any, c: Any, *, left: bool = True, transpose: bool = False) -> Any:
    """Multiply ``c`` by the Q of a QR factorization held as Householder reflectors (LAPACK
    ormqr/unmqr): ``Q @ c`` (``left``), ``c @ Q`` (not ``left``), with ``Q^T`` (``Q^H`` for
    complex) when ``transpose``. ``a[..., m, n]`` holds the reflectors below its diagonal, as
    ``geqrf`` packs them, ``taus[..., k]`` their scales; the result has ``c``'s shape."""
    jnp, lax = _jnp(), _lax()
    a, taus, c = jnp.asarray(a), jnp.asarray(taus), jnp.asarray(c)
    for pos, (x, r) in enumerate(((a, 2), (taus, 1), (c, 2))):
        _check_inexact("ormqr", pos, x)
        _check_rank("ormqr", pos, x, r)
    if not (a.dtype == taus.dtype == c.dtype):
        names = ", ".join(np.dtype(x.dtype).name for x in (a, taus, c))
        raise TypeError(f"lax.ormqr requires arguments to have the same dtypes, got {names}.")
    nb = (a.ndim - 2, taus.ndim - 1, c.ndim - 2)
    if len(set(nb)) != 1:
        raise TypeError(
            f"All inputs to ormqr must have the same number of batch dimensions, but got {list(nb)} batch "
            "dimensions for the inputs."
        )
    if not (a.shape[:-2] == taus.shape[:-1] == c.shape[:-2]):
        raise ValueError(
            f"ormqr: batch dimensions must be equal, got shapes {tuple(a.shape)}, {tuple(taus.shape)} and "
            f"{tuple(c.shape)}"
        )
    m, n = a.shape[-2:]
    k = taus.shape[-1]
    if left and c.shape[-2] != m:
        raise ValueError(
            "ormqr with left=True expects c to have the same number of rows as the Householder matrix a. "
            f"Got a shape {tuple(a.shape[-2:])} and c shape {tuple(c.shape[-2:])}."
        )
    if not left and c.shape[-1] != m:
        raise ValueError(
            "ormqr with left=False expects c to have the same number of columns as the Householder matrix a "
            f"has rows. Got a shape {tuple(a.shape[-2:])} and c shape {tuple(c.shape[-2:])}."
        )
    if k > min(m, n):
        # LAPACK would read reflectors past the end of a
        raise ValueError(f"ormqr: taus has {k} reflectors but a of shape {tuple(a.shape)} holds at most {min(m, n)}")
    if k == 0 or c.size == 0:
        return c
    cplx = np.dtype(a.dtype).kind == "c"
    # the reflectors as columns: below the diagonal of a, an implicit 1 on it
    rows = lax.broadcasted_iota(np.int32, (m, k), 0)
    cols = lax.broadcasted_iota(np.int32, (m, k), 1)
    V = jnp.where(rows > cols, a[..., :, :k], jnp.where(rows == cols, jnp.ones((), a.dtype), jnp.zeros((), a.dtype)))
    t = jnp.conj(taus) if (transpose and cplx) else taus
    # Q = H_0 ... H_{k-1}: Q c and c Q^H apply the last reflector first
    backwards = left != transpose

    def body(s: Any, c: Any) -> Any:
        i = (k - 1 - s) if backwards else s
        v = lax.dynamic_index_in_dim(V, i, axis=-1, keepdims=False)  # [..., m]
        tau = lax.dynamic_index_in_dim(t, i, axis=-1, keepdims=True)[..., None]  # [..., 1, 1]
        if left:  # c - tau v (v^H c)
            w = jnp.sum(jnp.conj(v)[..., :, None] * c, axis=-2)  # [..., ncols]
            return c - tau * (v[..., :, None] * w[..., None, :])
        w = jnp.sum(c * v[..., None, :], axis=-1)  # c v: [..., nrows]
        return c - tau * (w[..., :, None] * jnp.conj(v)[..., None, :])

    return _loop(k, body, c)


# ---------------------------------------------------------------------------------------------
# geqrf (Householder QR, for jnp.linalg.qr(mode="raw"))


def _larfg(alpha: Any, x: Any) -> tuple:
    """LAPACK larfg for ``alpha`` and the rest ``x`` of the column (zero where not part of it):
    ``(beta, tau, x / (alpha - beta))``; ``tau = 0`` (H = I) when ``x`` is 0 and ``alpha`` real."""
    jnp = _jnp()
    dt = x.dtype
    xnorm2 = jnp.sum(jnp.real(x * jnp.conj(x)), axis=-1)
    ar, ai = jnp.real(alpha), jnp.imag(alpha)
    keep = (xnorm2 == 0) & (ai == 0)
    beta = -jnp.where(ar >= 0, 1.0, -1.0).astype(ar.dtype) * jnp.sqrt(ar * ar + ai * ai + xnorm2)
    beta = jnp.where(keep, ar, beta)
    tau = jnp.where(keep, jnp.zeros((), dt), ((beta - alpha) / jnp.where(keep, jnp.ones_like(beta), beta)).astype(dt))
    vtail = x / jnp.where(keep, jnp.ones_like(alpha), alpha - beta)[..., None]
    return beta, tau, vtail


def geqrf(a: Any) -> tuple[Any, Any]:
    """Householder QR as LAPACK geqrf packs it: ``(r_and_reflectors, taus)`` for ``a[..., m, n]``
    (R on and above the diagonal, the reflectors' tails below it, ``min(m, n)`` scales)."""
    jnp, lax = _jnp(), _lax()
    a = jnp.asarray(a)
    _check_inexact("geqrf", 0, a)
    _check_rank("geqrf", 0, a, 2)
    m, n = a.shape[-2:]
    k = min(m, n)
    dt = a.dtype
    r = lax.broadcasted_iota(np.int32, (m, n), 0)
    cc = lax.broadcasted_iota(np.int32, (m, n), 1)
    rows, cols = lax.iota(np.int32, m), lax.iota(np.int32, n)
    zero = jnp.zeros((), dt)

    def body(i: Any, state: tuple) -> tuple:
        a, taus = state
        col = lax.dynamic_index_in_dim(a, i, axis=-1, keepdims=False)  # [..., m]
        alpha = lax.dynamic_index_in_dim(col, i, axis=-1, keepdims=False)
        beta, tau, vtail = _larfg(alpha, jnp.where(rows > i, col, zero))
        v = jnp.where(rows == i, jnp.ones((), dt), vtail)
        # H^H = I - conj(tau) v v^H applied to the columns right of i
        w = jnp.where(cols > i, jnp.sum(jnp.conj(v)[..., :, None] * a, axis=-2), zero)
        a = a - (jnp.conj(tau)[..., None, None] * v[..., :, None]) * w[..., None, :]
        stored = jnp.where(rows == i, beta.astype(dt)[..., None], vtail)
        a = jnp.where((cc == i) & (r >= i), stored[..., :, None], a)
        taus = jnp.where(lax.iota(np.int32, k) == i, tau[..., None], taus)
        return a, taus

    return _loop(k, body, (a, jnp.zeros(a.shape[:-2] + (k,), dt)))


# ---------------------------------------------------------------------------------------------
# tridiagonal


def _tridiagonal_lower(a: Any) -> tuple:
    """hetd2/sytd2 with ``uplo='L'`` on ``a[..., n, n]`` (only its lower triangle read). As in
    LAPACK, step ``i`` leaves its reflector in column ``i`` of the working matrix (``beta`` on the
    subdiagonal, the vector's tail below) and updates only the trailing block."""
    jnp, lax = _jnp(), _lax()
    n = a.shape[-1]
    dt = a.dtype
    r = lax.broadcasted_iota(np.int32, (n, n), 0)
    cc = lax.broadcasted_iota(np.int32, (n, n), 1)
    low = jnp.tril(a, -1)
    diag = jnp.real(jnp.diagonal(a, axis1=-2, axis2=-1)).astype(dt)  # hetrd ignores Im(a_ii)
    work = low + jnp.conj(jnp.swapaxes(low, -1, -2)) + diag[..., :, None] * (r == cc)
    idx = lax.iota(np.int32, n)
    zero = jnp.zeros((), dt)
    taus0 = jnp.zeros(a.shape[:-2] + (n - 1,), dt)

    def body(i: Any, state: tuple) -> tuple:
        work, taus = state
        col = lax.dynamic_index_in_dim(work, i, axis=-1, keepdims=False)  # [..., n]
        alpha = lax.dynamic_index_in_dim(col, i + 1, axis=-1, keepdims=False)
        below = idx > i + 1
        beta, tau, vtail = _larfg(alpha, jnp.where(below, col, zero))
        v = jnp.where(idx == i + 1, jnp.ones((), dt), vtail)  # [..., n], zero above i + 1
        # trailing block -= v w^H + w v^H with w = y - tau/2 (y^H v) v, y = tau A v (v vanishes
        # on the leading rows, so A v reads the trailing columns only; w is cut to the trailing rows)
        y = tau[..., None] * jnp.matmul(work, v[..., :, None])[..., 0]
        w = y + (-0.5 * tau * jnp.sum(jnp.conj(y) * v, axis=-1))[..., None] * v
        w = jnp.where(idx > i, w, zero)
        work = work - (v[..., :, None] * jnp.conj(w)[..., None, :] + w[..., :, None] * jnp.conj(v)[..., None, :])
        stored = jnp.where(idx == i + 1, beta.astype(dt)[..., None], vtail)
        work = jnp.where((cc == i) & (r > i), stored[..., :, None], work)
        taus = jnp.where(idx[: n - 1] == i, tau[..., None], taus)
        return work, taus

    work, taus = _loop(n - 1, body, (work, taus0))
    d = jnp.real(jnp.diagonal(work, axis1=-2, axis2=-1))
    e = jnp.real(jnp.diagonal(work, offset=-1, axis1=-2, axis2=-1))
    arr = jnp.where(r < cc, a, jnp.where(r == cc, d.astype(dt)[..., :, None], work))
    return arr, d, e, taus


def tridiagonal(a: Any, *, lower: bool = True) -> tuple[Any, Any, Any, Any]:
    """Reduce a symmetric/Hermitian matrix to tridiagonal form, as LAPACK sytrd/hetrd: returns
    ``(arr, d, e, taus)``. With ``lower``, only the lower triangle of ``a`` is read; ``arr`` holds
    the diagonal ``d``, the subdiagonal ``e`` and below it the Householder reflectors (scales
    ``taus``), and the untouched strict upper triangle of ``a``; ``lower=False`` mirrors this."""
    jnp = _jnp()
    a = jnp.asarray(a)
    _check_inexact("tridiagonal", 0, a)
    _check_rank("tridiagonal", 0, a, 2)
    if a.shape[-1] != a.shape[-2] or a.shape[-1] == 0:
        raise ValueError(f"The input to tridiagonal must be a square matrix. Got shape {tuple(a.shape[-2:])}.")
    if lower:
        return _tridiagonal_lower(a)
    # the upper reduction is the lower one of the matrix flipped on both axes, read backwards
    flip = a[..., ::-1, ::-1]
    arr, d, e, taus = _tridiagonal_lower(flip)
    return arr[..., ::-1, ::-1], d[..., ::-1], e[..., ::-1], taus[..., ::-1]


# ---------------------------------------------------------------------------------------------
# eig with eigenvector derivatives (enable_eigvec_derivs=True)


def _eigvec_tangent(w: Any, v: Any, da: Any) -> tuple:
    """First-order perturbation of a nondegenerate eigensystem ``a v = v diag(w)`` along ``da``:
    ``(dw, dv)``, with ``dv`` in LAPACK geev's gauge (unit 2-norm columns whose largest-magnitude
    entry is real), so it is the derivative of what ``eig`` returns."""
    from fjax.lax.linalg_more import _lu_solve_general  # noqa: PLC0415

    jnp, lax = _jnp(), _lax()
    n = w.shape[-1]
    p = jnp.matmul(_lu_solve_general(v, da), v)  # v^-1 da v
    dw = jnp.diagonal(p, axis1=-2, axis2=-1)
    eye = jnp.eye(n, dtype=w.dtype)
    gaps = w[..., None, :] - w[..., :, None] + eye  # w_j - w_i off the diagonal
    f = 1 / gaps - eye
    du = jnp.matmul(v, f * p)
    # dv_j = du_j + c_j v_j: Re c_j keeps |v_j| = 1, Im c_j keeps v[k_j, j] real (k_j its largest entry)
    k = jnp.argmax(jnp.abs(v), axis=-2)
    onehot = (lax.broadcasted_iota(np.int32, v.shape, v.ndim - 2) == k[..., None, :]).astype(v.dtype)
    vk = jnp.sum(onehot * v, axis=-2)
    duk = jnp.sum(onehot * du, axis=-2)
    c_re = -jnp.real(jnp.sum(jnp.conj(v) * du, axis=-2))
    c_im = -jnp.imag(duk) / jnp.real(vk)
    c = lax.complex(c_re, c_im)  # (complex_p is linear in both parts: this tangent transposes)
    return dw, du + v * c[..., None, :]


def _make_eig_vec_derivs() -> Any:
    from fjax.custom_derivatives import custom_jvp  # noqa: PLC0415
    from fjax.lax.linalg import eig_p  # noqa: PLC0415

    def bind(x: Any, left: bool, right: bool) -> list:
        return eig_p.bind(x, compute_left_eigenvectors=left, compute_right_eigenvectors=right)

    fn = custom_jvp(lambda x, left, right: tuple(bind(x, left, right)), nondiff_argnums=(1, 2))

    @fn.defjvp
    def _jvp(left: bool, right: bool, primals: tuple, tangents: tuple) -> tuple:
        jnp = _jnp()
        (x,), (dx,) = primals, tangents
        outs = bind(x, left, True)
        w, vr = outs[0], outs[-1]
        da = jnp.asarray(dx).astype(vr.dtype)
        dw, dvr = _eigvec_tangent(w, vr, da)
        prim, tan = [w], [dw]
        if left:  # left eigenvectors of a: right ones of a^H, eigenvalues conj(w)
            _, dvl = _eigvec_tangent(jnp.conj(w), outs[1], jnp.conj(jnp.swapaxes(da, -1, -2)))
            prim.append(outs[1])
            tan.append(dvl)
        if right:
            prim.append(vr)
            tan.append(dvr)
        return tuple(prim), tuple(tan)

    return fn


_eig_vec_derivs: Any = None


def eig_vec_derivs(x: Any, left: bool, right: bool) -> list:
    """``eig`` whose eigenvectors are differentiable (``enable_eigvec_derivs=True``)."""
    global _eig_vec_derivs
    if _eig_vec_derivs is None:
        _eig_vec_derivs = _make_eig_vec_derivs()
    return list(_eig_vec_derivs(x, left, right))
