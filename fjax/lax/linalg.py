"""``fjax.lax.linalg``: matrix factorizations and solvers as primitives (``jax.lax.linalg``).

Each primitive works on the last two axes and is batched over the leading ones. The eager
``impl`` calls LAPACK through numpy/scipy (numpy's batched gufuncs where they exist, a loop of
one LAPACK call per matrix otherwise); stacks of matrices for ``cholesky``, ``triangular_solve``
and ``lu`` go through a compiled loop of LAPACK calls (``fjax.backends.numba.linalg_kernels``).
There is no numba lowering: under ``jit`` each one runs as a host step between the compiled
kernels (one LAPACK call per matrix, never per element).
JVP rules follow JAX's (``symmetrize_input``, the eigenvector and singular-vector gauges), are
written with fjax primitives and so compose to any order; ``triangular_solve`` and
``tridiagonal_solve`` are linear in their right-hand side and carry transpose rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fjax import core
from fjax._lazy import LazyModule
from fjax.core import Primitive, ShapedArray
from fjax.dtypes import finfo as _finfo
from fjax.dtypes import kind as _dkind
from fjax.interpreters import ad, batching
from fjax.interpreters.ad import Zero
from fjax.lax import _linalg_gaps as _gaps
from fjax.lax import _linalg_util as u
from fjax.lax import lax, slicing

__all__ = [
    "EigImplementation",
    "EighImplementation",
    "SvdAlgorithm",
    "cholesky",
    "cholesky_p",
    "cholesky_update",
    "eig",
    "eig_p",
    "eigh",
    "eigh_p",
    "hessenberg",
    "hessenberg_p",
    "householder_product",
    "householder_product_p",
    "lu",
    "lu_p",
    "lu_pivots_to_permutation",
    "lu_pivots_to_permutation_p",
    "ormqr",
    "qdwh",
    "qr",
    "qr_p",
    "schur",
    "schur_p",
    "svd",
    "svd_p",
    "symmetric_product",
    "triangular_solve",
    "triangular_solve_p",
    "tridiagonal",
    "tridiagonal_solve",
    "tridiagonal_solve_p",
]


sla = LazyModule("scipy.linalg")


def _desc(x: Any) -> str:
    return f"{core.short_dtype_name(x.dtype)}{list(x.shape)}"


_INEXACT = (np.float32, np.float64, np.complex64, np.complex128)


def _check_inexact(name: str, aval: Any) -> None:
    if aval.dtype not in [np.dtype(t) for t in _INEXACT]:
        raise TypeError(
            f"{name} requires a float32, float64, complex64 or complex128 operand, got "
            f"{core.short_dtype_name(aval.dtype)}{list(aval.shape)}"
        )


def _check_rank2(name: str, aval: Any, i: int = 0) -> None:
    if len(aval.shape) < 2:
        raise TypeError(f"Input {i} to {name} must have rank at least 2, but got shape={tuple(aval.shape)}")


# JAX's shape rules word the square check per primitive; the rest say "The input to ..."
_SQUARE_MSG = {
    "eigh": "Argument to symmetric eigendecomposition must have shape [..., n, n], got shape {shape}",
    "hessenberg": "Argument to Hessenberg reduction must have shape [..., n, n], got shape {shape}",
}


def _check_square(name: str, aval: Any) -> int:
    """JAX's linalg shape rule: a rank below 2 is a TypeError, a non-square matrix a ValueError."""
    _check_rank2(name, aval)
    s = tuple(aval.shape[-2:])  # JAX's shape rules name the matrix shape, not the batch
    if s[-1] != s[-2]:
        msg = _SQUARE_MSG.get(name, "The input to {name} must be a square matrix. Got shape {shape}.")
        raise ValueError(msg.format(name=name, shape=s))
    return s[-1]


def check_symmetrizable(shape: tuple) -> None:
    """The errors JAX raises where ``symmetrize_input`` forms ``(x + x^H) / 2`` of a matrix that is
    not square (its transpose of a rank-1 operand, its add of (m, n) and (n, m))."""
    shape = tuple(shape)
    nd = len(shape)
    if nd < 2:
        perm = (*range(nd - 2), nd - 1, nd - 2)
        raise TypeError(
            f"transpose permutation isn't a permutation of operand dimensions, got permutation {perm} for "
            f"operand shape {shape}."
        )
    if shape[-1] != shape[-2]:
        raise TypeError(
            f"add got incompatible shapes for broadcasting: {shape}, {shape[:-2] + (shape[-1], shape[-2])}."
        )


def _real_dtype(dt: Any) -> np.dtype:
    return _finfo(np.dtype(dt)).dtype


def _complex_dtype(dt: Any) -> np.dtype:
    return np.result_type(np.dtype(dt), np.complex64)


def _batch_front(prim: Primitive) -> None:
    """Batching for primitives that treat all leading dims as batch: move the vmapped axis (of
    every operand; unmapped ones are broadcast) to the front and bind once."""

    def rule(vals: list, dims: list, axis_size: int, **params: Any) -> tuple:
        vals = [batching.bdim_at_front(v, d, axis_size) for v, d in zip(vals, dims)]
        out = prim.bind(*vals, **params)
        if prim.multiple_results:
            return out, [0] * len(out)
        return out, 0

    batching.primitive_batchers[prim] = batching.wants_axis_size(rule)


_linalg_kernels: Any = None  # ``fjax.backends.numba.linalg_kernels`` once ``_batched_kernel`` loaded it


def _batched_kernel(name: str, x: np.ndarray) -> Any:
    """The compiled batch loop for primitive ``name`` (``fjax.backends.numba.linalg_kernels``, one
    LAPACK call per matrix without Python in between) when ``x`` is a stack of several matrices
    (or, for cholesky and triangular_solve, one large matrix: ``linalg_kernels.is_batched``), else
    None. Loaded on first use (never at import: it imports numba and registers scipy's LAPACK
    symbols with it), then kept in a module global."""
    global _linalg_kernels
    if x.ndim < 2 or (x.ndim < 3 and max(x.shape) < 128):  # 128: linalg_kernels.SINGLE_MIN
        return None
    lk = _linalg_kernels
    if lk is None:
        from fjax.backends.numba import linalg_kernels as lk  # noqa: PLC0415

        _linalg_kernels = lk
    return getattr(lk, name) if lk.is_batched(x.shape, name) else None


def _zeros_tangents(outs: list) -> list:
    return [Zero(ad.tangent_aval(core.get_aval(o))) for o in outs]


# ---------------------------------------------------------------------------------------------
# cholesky


def _cholesky_impl(x: np.ndarray, *, symmetrize_input: bool = False, upper: bool = False) -> np.ndarray:
    if x.size == 0:
        return np.zeros_like(x)
    fast = _batched_kernel("cholesky", x)
    r = None if fast is None else fast(x, symmetrize_input=symmetrize_input, upper=upper)
    if r is not None:
        return r
    if symmetrize_input:
        x = (x + np.conj(np.swapaxes(x, -1, -2))) / np.asarray(2, x.dtype)
    # one LAPACK potrf per matrix: measured faster than numpy's batched cholesky gufunc here
    # (256 float32 64x64: ~4-12 ms against ~30 ms)
    (potrf,) = sla.get_lapack_funcs(("potrf",), (x,))

    def one(a: np.ndarray) -> tuple:
        c, info = potrf(a, lower=1, clean=1)
        # as JAX: a matrix that is not positive definite gives a NaN factor; the others are fine
        return (c if info == 0 else u.nan_like(a.shape, a.dtype),)

    L = u.batch_apply(one, [x], [2], [(x.shape[-2:], x.dtype)])[0]
    return np.ascontiguousarray(np.conj(np.swapaxes(L, -1, -2))) if upper else L


def _cholesky_abstract(x: ShapedArray, *, symmetrize_input: bool = False, upper: bool = False) -> ShapedArray:
    _check_square("cholesky", x)
    _check_inexact("cholesky", x)
    return ShapedArray(x.shape, x.dtype)


# params (both optional, so ``cholesky_p.bind(x)`` is JAX's primitive): ``symmetrize_input``
# factors ``(x + x^H) / 2`` (formed inside the batched LAPACK loop, per matrix, instead of as
# separate elementwise passes under jit); ``upper`` returns ``L^H`` (LAPACK writes it directly,
# no transposing pass). Without them only ``x``'s lower triangle is read and ``L`` is returned.
cholesky_p = Primitive("cholesky")
cholesky_p.def_impl(_cholesky_impl)
cholesky_p.def_abstract_eval(_cholesky_abstract)


def _cholesky_params(symmetrize_input: bool, upper: bool) -> dict:
    """The non-default params of a ``cholesky_p`` equation (none: JAX's plain primitive)."""
    return {k: True for k, v in (("symmetrize_input", symmetrize_input), ("upper", upper)) if v}


def _cholesky_jvp(primals: list, tangents: list, *, symmetrize_input: bool = False, upper: bool = False) -> tuple:
    # forward rule of Murray, arXiv:1602.07527: L_dot = L phi(L^-1 sigma_dot L^-H)
    (x,), (sigma_dot,) = primals, tangents
    out = cholesky_p.bind(x, **_cholesky_params(symmetrize_input, upper))
    if type(sigma_dot) is Zero:
        return out, Zero(ad.tangent_aval(core.get_aval(out)))
    if symmetrize_input:
        sigma_dot = u.symmetrize(sigma_dot)
    L = u.H(out) if upper else out
    n = u.shape(x)[-1]
    nd = len(u.shape(x))
    tmp = triangular_solve(L, sigma_dot, left_side=False, transpose_a=True, conjugate_a=True, lower=True)
    inner = triangular_solve(L, tmp, left_side=True, transpose_a=False, lower=True)
    half = np.tril(np.ones((n, n))) / (1.0 + np.eye(n))
    phi = u.mul(inner, core.Array(half.astype(u.dtype(inner)).reshape((1,) * (nd - 2) + (n, n)), False))
    L_dot = u.mm(L, phi)
    return out, u.H(L_dot) if upper else L_dot


ad.primitive_jvps[cholesky_p] = _cholesky_jvp
_batch_front(cholesky_p)


def cholesky(x: Any, *, symmetrize_input: bool = True) -> Any:
    """Lower Cholesky factor ``L`` of Hermitian positive-definite ``x`` (``x = L L^H``).

    With ``symmetrize_input`` (default), ``(x + x^H)/2`` is factored, which makes the derivative
    a symmetric one. A matrix that is not positive definite gives a factor full of NaN.
    """
    return cholesky_factor(x, symmetrize_input=symmetrize_input)


def cholesky_factor(x: Any, *, upper: bool = False, symmetrize_input: bool = True) -> Any:
    """``cholesky(x)``, or with ``upper`` its conjugate transpose ``U = L^H`` (``x = U^H U``),
    computed by LAPACK in that form (fjax's own entry point for ``cho_factor`` and friends)."""
    x = core.to_array(x, "cholesky") if not isinstance(x, (core.Array, core.Tracer)) else x
    if symmetrize_input:
        check_symmetrizable(core.get_aval(x).shape)
    _check_square("cholesky", core.get_aval(x))
    return cholesky_p.bind(x, **_cholesky_params(symmetrize_input, upper))


# ---------------------------------------------------------------------------------------------
# eigh


def _eigh_impl(x: np.ndarray, *, lower: bool, sort_eigenvalues: bool, subset_by_index: Any) -> list:
    n = x.shape[-1]
    rdt = _real_dtype(x.dtype)
    if x.size == 0:
        v, w = np.zeros_like(x), np.zeros(x.shape[:-1], rdt)
    else:
        # scipy's LAPACK (syevd/heevd, one call per matrix): measured ~2x faster here than
        # numpy's linalg for 512x512 (a different OpenBLAS build)
        (evd,) = sla.get_lapack_funcs(("heevd" if _dkind(x.dtype) == "c" else "syevd",), (x,))
        lo_flag = int(lower)

        def one(a: np.ndarray) -> tuple:
            if not np.all(np.isfinite(a)):
                return u.nan_like(a.shape, a.dtype), u.nan_like((n,), rdt)
            wi, vi, info = evd(a, compute_v=1, lower=lo_flag)
            if info != 0:
                return u.nan_like(a.shape, a.dtype), u.nan_like((n,), rdt)
            return vi, wi

        v, w = u.batch_apply(one, [x], [2], [((n, n), x.dtype), ((n,), rdt)])
    if subset_by_index is not None:
        lo, hi = subset_by_index
        v, w = v[..., lo:hi], w[..., lo:hi]
    return [np.ascontiguousarray(v, dtype=x.dtype), np.ascontiguousarray(w, dtype=rdt)]


def _subset_size(n: int, subset_by_index: Any, name: str) -> int:
    if subset_by_index is None:
        return n
    lo, hi = subset_by_index
    if not 0 <= lo <= hi <= n:
        raise ValueError(f"{name}: subset_by_index={subset_by_index} out of range for n={n}")
    return hi - lo


def _eigh_abstract(x: ShapedArray, *, lower: bool, sort_eigenvalues: bool, subset_by_index: Any) -> list:
    _check_inexact("eigh", x)
    n = _check_square("eigh", x)
    k = _subset_size(n, subset_by_index, "eigh")
    return [
        ShapedArray(x.shape[:-1] + (k,), x.dtype),
        ShapedArray(x.shape[:-2] + (k,), _real_dtype(x.dtype)),
    ]


eigh_p = Primitive("eigh")
eigh_p.multiple_results = True
eigh_p.def_impl(_eigh_impl)
eigh_p.def_abstract_eval(_eigh_abstract)


def _eigh_jvp(primals: list, tangents: list, *, lower: bool, sort_eigenvalues: bool, subset_by_index: Any) -> tuple:
    (a,), (a_dot,) = primals, tangents
    v, w_real = eigh_p.bind(a, lower=lower, sort_eigenvalues=sort_eigenvalues, subset_by_index=subset_by_index)
    if type(a_dot) is Zero:
        return [v, w_real], _zeros_tangents([v, w_real])
    n = u.shape(a)[-1]
    if subset_by_index is not None and tuple(subset_by_index) != (0, n):
        raise NotImplementedError("Derivatives of eigh with subset_by_index are not implemented")
    nd = len(u.shape(a))
    dt = u.dtype(a)
    w = u.astype(w_real, dt)
    eye = u.eye(n, dt, nd)
    # 1/(w_j - w_i) off the diagonal, 0 on it, without dividing by zero on the diagonal
    diff = u.sub(lax.expand_dims(w, (nd - 2,)), lax.expand_dims(w, (nd - 1,)))
    fmat = u.sub(lax.integer_pow(u.add(diff, eye), -1), eye)
    vdag_adot_v = u.mm(u.mm(u.H(v), a_dot), v)
    dv = u.mm(v, u.mul(fmat, vdag_adot_v))
    dw = u.real(u.diag(vdag_adot_v))
    return [v, w_real], [dv, dw]


ad.primitive_jvps[eigh_p] = _eigh_jvp
_batch_front(eigh_p)


def eigh(
    x: Any,
    *,
    lower: bool = True,
    symmetrize_input: bool = True,
    sort_eigenvalues: bool = True,
    subset_by_index: tuple[int, int] | None = None,
    implementation: Any = None,
) -> tuple[Any, Any]:
    """Eigendecomposition of a Hermitian matrix: returns ``(v, w)``, eigenvectors as the columns of
    ``v`` and eigenvalues ``w`` in ascending order. Only the ``lower`` (or upper) triangle is read
    unless ``symmetrize_input``, which decomposes ``(x + x^H)/2``. ``implementation``: LAPACK's
    driver for ``None``/``EighImplementation.QR``; QDWH and JACOBI raise NotImplementedError as
    on JAX's CPU."""
    _gaps.check_eigh_implementation(implementation)
    if symmetrize_input:
        check_symmetrizable(u.shape(x))
        x = u.symmetrize(x)
    sub = None if subset_by_index is None else (int(subset_by_index[0]), int(subset_by_index[1]))
    v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues), subset_by_index=sub)
    return v, w


# ---------------------------------------------------------------------------------------------
# eig (general, host only as in JAX)


def _eig_impl(x: np.ndarray, *, compute_left_eigenvectors: bool, compute_right_eigenvectors: bool) -> list:
    n = x.shape[-1]
    cdt = _complex_dtype(x.dtype)
    shapes = [((n,), cdt)]
    if compute_left_eigenvectors:
        shapes.append(((n, n), cdt))
    if compute_right_eigenvectors:
        shapes.append(((n, n), cdt))

    def one(a: np.ndarray) -> tuple:
        if not np.all(np.isfinite(a)):
            return tuple(u.nan_like(s, d) for s, d in shapes)
        try:
            if compute_left_eigenvectors:
                w, vl, vr = sla.eig(a, left=True, right=True, check_finite=False)
            else:
                w, vr = np.linalg.eig(a)
                vl = None
        except (np.linalg.LinAlgError, sla.LinAlgError):
            return tuple(u.nan_like(s, d) for s, d in shapes)
        out = [w]
        if compute_left_eigenvectors:
            out.append(vl)
        if compute_right_eigenvectors:
            out.append(vr)
        return tuple(out)

    return u.batch_apply(one, [x], [2], shapes)


def _eig_abstract(x: ShapedArray, *, compute_left_eigenvectors: bool, compute_right_eigenvectors: bool) -> list:
    _check_square("eig", x)
    _check_inexact("eig", x)
    cdt = _complex_dtype(x.dtype)
    outs = [ShapedArray(x.shape[:-1], cdt)]
    outs += [ShapedArray(x.shape, cdt)] * (int(compute_left_eigenvectors) + int(compute_right_eigenvectors))
    return outs


eig_p = Primitive("eig")
eig_p.multiple_results = True
eig_p.def_impl(_eig_impl)
eig_p.def_abstract_eval(_eig_abstract)


def _eig_jvp(
    primals: list, tangents: list, *, compute_left_eigenvectors: bool, compute_right_eigenvectors: bool
) -> tuple:
    if compute_left_eigenvectors or compute_right_eigenvectors:
        raise NotImplementedError(
            "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the input that "
            "JAX cannot check (see the enable_eigvec_derivs argument to jax.lax.linalg.eig). Pass "
            "enable_eigvec_derivs=True to jax.lax.linalg.eig to opt in. See "
            "https://github.com/jax-ml/jax/issues/2748 for discussion."
        )
    # dw = diag(V^-1 dA V) (Giles, eq. 4.60 of arXiv:1701.00392)
    (a,), (da,) = primals, tangents
    w, vr = eig_p.bind(a, compute_left_eigenvectors=False, compute_right_eigenvectors=True)
    if type(da) is Zero:
        return [w], _zeros_tangents([w])
    from fjax.lax.linalg_more import _lu_solve_general  # noqa: PLC0415

    da_c = u.astype(da, u.dtype(vr))
    return [w], [u.diag(u.mm(_lu_solve_general(vr, da_c), vr))]


ad.primitive_jvps[eig_p] = _eig_jvp
_batch_front(eig_p)


def eig(
    x: Any,
    *,
    compute_left_eigenvectors: bool = True,
    compute_right_eigenvectors: bool = True,
    enable_eigvec_derivs: bool = False,
    implementation: Any = None,
    use_magma: Any = None,
) -> list:
    """Eigendecomposition of a general square matrix: ``[w, vl, vr]`` (the vectors present as
    requested), complex, with unit-norm eigenvectors as LAPACK's geev returns them
    (``a @ vr = vr * w``, ``vl^H @ a = w * vl^H``). Eigenvalues are differentiable, eigenvectors
    only with ``enable_eigvec_derivs`` (valid for nondegenerate eigenvalues). fjax runs LAPACK on
    every backend: ``implementation`` other than ``EigImplementation.LAPACK`` raises ValueError."""
    del use_magma
    _gaps.check_eig_implementation(implementation)
    left, right = bool(compute_left_eigenvectors), bool(compute_right_eigenvectors)
    if enable_eigvec_derivs and (left or right):
        return _gaps.eig_vec_derivs(x, left, right)
    return eig_p.bind(x, compute_left_eigenvectors=left, compute_right_eigenvectors=right)


# ---------------------------------------------------------------------------------------------
# svd


def _svd_impl(x: np.ndarray, *, full_matrices: bool, compute_uv: bool, subset_by_index: Any, algorithm: Any) -> list:
    m, n = x.shape[-2:]
    k = min(m, n)
    rdt = _real_dtype(x.dtype)
    um, vn = (m, n) if full_matrices else (k, k)
    shapes = [((k,), rdt)]
    if compute_uv:
        shapes += [((m, um), x.dtype), ((vn, n), x.dtype)]
    if x.size == 0:
        bs = x.shape[:-2]
        outs = [np.zeros(bs + s, d) for s, d in shapes]
        if compute_uv and k == 0:
            # the identity completes an empty factorization
            outs[1] = np.broadcast_to(np.eye(m, um, dtype=x.dtype), bs + (m, um)).copy()
            outs[2] = np.broadcast_to(np.eye(vn, n, dtype=x.dtype), bs + (vn, n)).copy()
    else:
        # scipy's LAPACK gesdd, one call per matrix (~2x faster here than numpy's linalg); gesvd
        # for SvdAlgorithm.QR
        (gesdd,) = sla.get_lapack_funcs(("gesvd" if algorithm == "gesvd" else "gesdd",), (x,))

        def one(a: np.ndarray) -> tuple:
            if not np.all(np.isfinite(a)):
                return tuple(u.nan_like(s, d) for s, d in shapes)
            uu, s, vh, info = gesdd(a, compute_uv=int(compute_uv), full_matrices=int(full_matrices))
            if info != 0:
                return tuple(u.nan_like(s, d) for s, d in shapes)
            return (s, uu, vh) if compute_uv else (s,)

        outs = u.batch_apply(one, [x], [2], shapes)
    outs = [np.ascontiguousarray(o, dtype=d) for o, (_, d) in zip(outs, shapes)]
    if subset_by_index is not None:
        lo, hi = subset_by_index
        outs[0] = outs[0][..., lo:hi]
        if compute_uv:
            outs[1] = outs[1][..., lo:hi]
            outs[2] = outs[2][..., lo:hi, :]
    return outs


def _svd_abstract(
    x: ShapedArray, *, full_matrices: bool, compute_uv: bool, subset_by_index: Any, algorithm: Any
) -> list:
    _check_rank2("svd", x)
    _check_inexact("svd", x)
    m, n = x.shape[-2:]
    k = min(m, n)
    bs = x.shape[:-2]
    um, vn = (m, n) if full_matrices else (k, k)
    if subset_by_index is not None:
        if full_matrices and tuple(subset_by_index) != (0, k):
            raise ValueError("svd: full_matrices and subset_by_index cannot both be set")
        k = um = vn = _subset_size(k, subset_by_index, "svd")
    outs = [ShapedArray(bs + (k,), _real_dtype(x.dtype))]
    if compute_uv:
        outs += [ShapedArray(bs + (m, um), x.dtype), ShapedArray(bs + (vn, n), x.dtype)]
    return outs


svd_p = Primitive("svd")
svd_p.multiple_results = True
svd_p.def_impl(_svd_impl)
svd_p.def_abstract_eval(_svd_abstract)


def _svd_jvp(
    primals: list, tangents: list, *, full_matrices: bool, compute_uv: bool, subset_by_index: Any, algorithm: Any
) -> tuple:
    (A,), (dA,) = primals, tangents
    m, n = u.shape(A)[-2:]
    if subset_by_index is not None and tuple(subset_by_index) != (0, min(m, n)):
        raise NotImplementedError("Singular value decomposition JVP not implemented for subset_by_index")
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError("Singular value decomposition JVP not implemented for full matrices")
    s, U, Vt = svd_p.bind(A, full_matrices=False, compute_uv=True, subset_by_index=None, algorithm=algorithm)
    outs = [s, U, Vt] if compute_uv else [s]
    if type(dA) is Zero:
        return outs, _zeros_tangents(outs)
    dt = u.dtype(A)
    nd = len(u.shape(A))
    k = min(m, n)
    Ut, V = u.H(U), u.H(Vt)
    s_dim = lax.expand_dims(s, (nd - 2,))
    dS = u.mm(u.mm(Ut, dA), V)
    ds = u.real(u.diag(dS))
    if not compute_uv:
        return [s], [ds]
    s_col = u.T(s_dim)
    s_diffs = u.mul(u.add(s_dim, s_col), u.sub(s_dim, s_col))
    eye_r = u.eye(k, u.dtype(s), nd)
    F = u.sub(lax.integer_pow(u.add(s_diffs, eye_r), -1), eye_r)
    s_dim_c = u.astype(s_dim, dt)
    dSS = u.mul(s_dim_c, dS)
    SdS = u.mul(u.T(s_dim_c), dS)
    s_zeros = lax.convert_element_type(lax.eq(s, u.const(s, 0)), u.dtype(s))
    s_inv = u.sub(lax.div(u.const(s, 1), lax.add(s, s_zeros)), s_zeros)
    s_inv_mat = u.diag_embed(s_inv)
    half = u.const(dS, 0.5)
    dUdV_diag = u.mul(lax.mul(half, lax.sub(dS, u.H(dS))), u.astype(s_inv_mat, dt))
    Fc = u.astype(F, dt)
    dU = u.mm(U, lax.add(u.mul(Fc, lax.add(dSS, u.H(dSS))), dUdV_diag))
    dV = u.mm(V, u.mul(Fc, lax.add(SdS, u.H(SdS))))
    if m > n:
        dAV = u.mm(dA, V)
        dU = lax.add(dU, u.div(lax.sub(dAV, u.mm(U, u.mm(Ut, dAV))), s_dim_c))
    if n > m:
        dAHU = u.mm(u.H(dA), U)
        dV = lax.add(dV, u.div(lax.sub(dAHU, u.mm(V, u.mm(Vt, dAHU))), s_dim_c))
    return [s, U, Vt], [ds, dU, u.H(dV)]


ad.primitive_jvps[svd_p] = _svd_jvp
_batch_front(svd_p)


def svd(
    x: Any,
    *,
    full_matrices: bool = True,
    compute_uv: bool = True,
    subset_by_index: tuple[int, int] | None = None,
    algorithm: Any = None,
) -> Any:
    """Singular value decomposition ``x = u @ diag(s) @ vh``: returns ``(u, s, vh)`` with ``s``
    descending, or ``s`` alone when not ``compute_uv``. ``algorithm`` (``SvdAlgorithm``): LAPACK
    gesdd for ``None``/``DEFAULT``/``DIVIDE_AND_CONQUER``, gesvd for ``QR``; JACOBI and POLAR
    raise NotImplementedError as on JAX's CPU."""
    driver = _gaps.svd_algorithm(algorithm)
    sub = None if subset_by_index is None else (int(subset_by_index[0]), int(subset_by_index[1]))
    outs = svd_p.bind(
        x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv), subset_by_index=sub, algorithm=driver
    )
    if compute_uv:
        s, uu, vh = outs
        return uu, s, vh
    return outs[0]


# ---------------------------------------------------------------------------------------------
# qr


def _qr_impl(x: np.ndarray, *, pivoting: bool, full_matrices: bool) -> list:
    m, n = x.shape[-2:]
    k = min(m, n)
    qc = m if full_matrices else k
    rr = m if full_matrices else k
    shapes = [((m, qc), x.dtype), ((rr, n), x.dtype)]
    if pivoting:
        shapes.append(((n,), np.dtype(np.int32)))
    if x.size == 0:
        bs = x.shape[:-2]
        outs = [np.zeros(bs + s, d) for s, d in shapes]
        outs[0] = np.broadcast_to(np.eye(m, qc, dtype=x.dtype), bs + (m, qc)).copy()
        if pivoting:
            outs[2] = np.broadcast_to(np.arange(n, dtype=np.int32), bs + (n,)).copy()
        return outs
    if not pivoting:
        q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
        return [np.ascontiguousarray(q, x.dtype), np.ascontiguousarray(r, x.dtype)]

    def one(a: np.ndarray) -> tuple:
        q, r, p = sla.qr(a, mode="full" if full_matrices else "economic", pivoting=True, check_finite=False)
        return q, r, p

    return u.batch_apply(one, [x], [2], shapes)


def _qr_abstract(x: ShapedArray, *, pivoting: bool, full_matrices: bool) -> list:
    _check_rank2("qr", x)
    _check_inexact("qr", x)
    m, n = x.shape[-2:]
    k = min(m, n)
    bs = x.shape[:-2]
    q_cols = m if full_matrices else k
    outs = [ShapedArray(bs + (m, q_cols), x.dtype), ShapedArray(bs + (q_cols, n), x.dtype)]
    if pivoting:
        outs.append(ShapedArray(bs + (n,), np.dtype(np.int32)))
    return outs


qr_p = Primitive("qr")
qr_p.multiple_results = True
qr_p.def_impl(_qr_impl)
qr_p.def_abstract_eval(_qr_abstract)


def _qr_jvp(primals: list, tangents: list, *, pivoting: bool, full_matrices: bool) -> tuple:
    # derivation: j-towns.github.io/papers/qr-derivative.pdf (the rule JAX uses)
    (x,), (dx,) = primals, tangents
    m, n = u.shape(x)[-2:]
    if m < n or (full_matrices and m != n):
        raise NotImplementedError("Unimplemented case of QR decomposition derivative")
    outs = qr_p.bind(x, pivoting=pivoting, full_matrices=False)
    if type(dx) is Zero:
        return outs, _zeros_tangents(outs)
    q, r = outs[0], outs[1]
    if pivoting:
        dx = u.mm(dx, u.T(u.perm_matrix(outs[2], u.dtype(dx))))
    dx_rinv = triangular_solve(r, dx)
    qt_dx_rinv = u.mm(u.H(q), dx_rinv)
    lower = u.tril(qt_dx_rinv, -1)
    do = lax.sub(lower, u.H(lower))
    if _dkind(u.dtype(x)) == "c":
        eye = u.eye(n, u.dtype(x), len(u.shape(x)))
        do = lax.add(do, u.mul(eye, lax.sub(qt_dx_rinv, u.astype(u.real(qt_dx_rinv), u.dtype(x)))))
    dq = lax.add(u.mm(q, lax.sub(do, qt_dx_rinv)), dx_rinv)
    dr = u.mm(lax.sub(qt_dx_rinv, do), r)
    touts = [dq, dr] + ([Zero(ad.tangent_aval(core.get_aval(outs[2])))] if pivoting else [])
    return outs, touts


ad.primitive_jvps[qr_p] = _qr_jvp
_batch_front(qr_p)


def qr(x: Any, *, pivoting: bool = False, full_matrices: bool = True, use_magma: Any = None) -> Any:
    """QR decomposition ``x = q @ r`` (``x[:, p] = q @ r`` with column ``pivoting``): returns
    ``(q, r)`` or ``(q, r, p)``; ``full_matrices`` gives a square ``q``."""
    del use_magma
    outs = qr_p.bind(x, pivoting=bool(pivoting), full_matrices=bool(full_matrices))
    return tuple(outs)


# ---------------------------------------------------------------------------------------------
# lu and its pivots


def _pivots_to_perm_np(piv: np.ndarray, m: int) -> np.ndarray:
    bs = piv.shape[:-1]
    k = piv.shape[-1]
    perm = np.broadcast_to(np.arange(m, dtype=np.int32), bs + (m,)).copy()
    flat = perm.reshape(-1, m)
    fp = piv.reshape(-1, k)
    if flat.shape[0] <= 16:  # a few matrices: swaps on Python lists (fancy indexing costs ~8 us a pivot)
        for r in range(flat.shape[0]):
            p = flat[r].tolist()
            for i, j in enumerate(fp[r].tolist()):
                p[i], p[j] = p[j], p[i]
            flat[r] = p
        return flat.reshape(bs + (m,))
    rows = np.arange(flat.shape[0])
    for i in range(k):
        j = fp[:, i]
        a, b = flat[rows, i].copy(), flat[rows, j].copy()
        flat[rows, i], flat[rows, j] = b, a
    return flat.reshape(bs + (m,))


def _lu_impl(x: np.ndarray) -> list:
    m, n = x.shape[-2:]
    k = min(m, n)
    shapes = [((m, n), x.dtype), ((k,), np.dtype(np.int32))]
    if x.size == 0:
        bs = x.shape[:-2]
        outs = [np.zeros(bs + s, d) for s, d in shapes]
        return outs + [np.broadcast_to(np.arange(m, dtype=np.int32), bs + (m,)).copy()]
    fast = _batched_kernel("lu", x)
    r = None if fast is None else fast(x)
    if r is not None:
        return r
    (getrf,) = sla.get_lapack_funcs(("getrf",), (x,))

    def one(a: np.ndarray) -> tuple:
        lu_, piv, _ = getrf(a, overwrite_a=False)
        return lu_, piv[:k]

    lu_, piv = u.batch_apply(one, [x], [2], shapes)
    return [lu_, piv, _pivots_to_perm_np(piv, m)]


def _lu_abstract(x: ShapedArray) -> list:
    _check_rank2("lu", x)
    _check_inexact("lu", x)
    m, n = x.shape[-2:]
    bs = x.shape[:-2]
    i32 = np.dtype(np.int32)
    return [ShapedArray(x.shape, x.dtype), ShapedArray(bs + (min(m, n),), i32), ShapedArray(bs + (m,), i32)]


lu_p = Primitive("lu")
lu_p.multiple_results = True
lu_p.def_impl(_lu_impl)
lu_p.def_abstract_eval(_lu_abstract)


def _lu_jvp(primals: list, tangents: list) -> tuple:
    (a,), (a_dot,) = primals, tangents
    lu_, pivots, perm = lu_p.bind(a)
    outs = [lu_, pivots, perm]
    if type(a_dot) is Zero:
        return outs, _zeros_tangents(outs)
    s = u.shape(a)
    nd = len(s)
    m, n = s[-2:]
    k = min(m, n)
    dt = u.dtype(a)
    x = u.mm(u.perm_matrix(perm, dt), a_dot)
    zero = u.const(lu_, 0)
    pad_l = [(0, 0, 0)] * nd
    pad_l[-1] = (0, m - k, 0)
    l_ = slicing.pad(u.tril(slicing.slice(lu_, (0,) * nd, s[:-1] + (k,)), -1), zero, pad_l)
    l_ = u.add(l_, u.eye(m, dt, nd))
    u_eye = np.zeros((n, n), dt)
    u_eye[k:, k:] = np.eye(n - k, dtype=dt)
    pad_u = [(0, 0, 0)] * nd
    pad_u[-2] = (0, n - k, 0)
    u_ = u.add(
        slicing.pad(u.triu(slicing.slice(lu_, (0,) * nd, s[:-2] + (k, n))), zero, pad_u),
        core.Array(u_eye.reshape((1,) * (nd - 2) + (n, n)), False),
    )
    la = triangular_solve(l_, x, left_side=True, transpose_a=False, lower=True, unit_diagonal=True)
    lau = triangular_solve(u_, la, left_side=False, transpose_a=False, lower=False)
    l_dot = u.mm(l_, u.tril(lau, -1))
    u_dot = u.mm(u.triu(lau), u_)
    lu_dot = lax.add(l_dot, u_dot)
    return outs, [lu_dot, *_zeros_tangents([pivots, perm])]


ad.primitive_jvps[lu_p] = _lu_jvp
_batch_front(lu_p)


def lu(x: Any) -> tuple[Any, Any, Any]:
    """LU decomposition with partial pivoting: ``(lu, pivots, permutation)``. ``lu`` packs the unit
    lower ``L`` (below the diagonal) and ``U``; ``pivots[i]`` is the row swapped with row ``i``;
    ``x[permutation] == L @ U``. ``pivots`` and ``permutation`` are int32."""
    lu_, piv, perm = lu_p.bind(x)
    return lu_, piv, perm


def _l2p_impl(pivots: np.ndarray, *, permutation_size: int) -> np.ndarray:
    return _pivots_to_perm_np(pivots.astype(np.int64), permutation_size).astype(pivots.dtype)


def _l2p_abstract(pivots: ShapedArray, *, permutation_size: int) -> ShapedArray:
    if _dkind(pivots.dtype) not in "iu" or pivots.ndim < 1:
        raise TypeError(f"lu_pivots_to_permutation requires integer pivots [..., k], got {_desc(pivots)}")
    if pivots.shape[-1] > permutation_size:
        raise ValueError(
            f"lu_pivots_to_permutation: permutation_size {permutation_size} is smaller than the "
            f"number of pivots {pivots.shape[-1]}"
        )
    return ShapedArray(pivots.shape[:-1] + (permutation_size,), pivots.dtype)


lu_pivots_to_permutation_p = Primitive("lu_pivots_to_permutation")
lu_pivots_to_permutation_p.def_impl(_l2p_impl)
lu_pivots_to_permutation_p.def_abstract_eval(_l2p_abstract)
ad.defzero(lu_pivots_to_permutation_p)
_batch_front(lu_pivots_to_permutation_p)


def lu_pivots_to_permutation(pivots: Any, permutation_size: int) -> Any:
    """The permutation that the sequence of row swaps ``pivots`` applies to ``arange(size)``."""
    return lu_pivots_to_permutation_p.bind(pivots, permutation_size=int(permutation_size))


# ---------------------------------------------------------------------------------------------
# triangular_solve


def _triangular_solve_impl(
    a: np.ndarray,
    b: np.ndarray,
    *,
    left_side: bool,
    lower: bool,
    transpose_a: bool,
    conjugate_a: bool,
    unit_diagonal: bool,
) -> np.ndarray:
    if b.size == 0 or a.shape[-1] == 0:
        return np.zeros_like(b)
    fast = _batched_kernel("triangular_solve", b)
    params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a, conjugate_a=conjugate_a)
    r = None if fast is None else fast(a, b, unit_diagonal=unit_diagonal, **params)
    if r is not None:
        return r
    # BLAS trsm: no finiteness or singularity checks, so a zero pivot gives inf/NaN as in JAX
    (trsm,) = sla.get_blas_funcs(("trsm",), (a, b))
    conj_only = conjugate_a and not transpose_a
    trans = (2 if conjugate_a else 1) if transpose_a else 0
    rhs = np.conj(b) if conj_only else b
    side, lo, diag = int(not left_side), int(lower), int(unit_diagonal)

    def one(A: np.ndarray, B: np.ndarray) -> tuple:
        return (trsm(1.0, A, B, side=side, lower=lo, trans_a=trans, diag=diag),)

    out = u.batch_apply(one, [a, rhs], [2, 2], [(b.shape[-2:], b.dtype)])[0]
    return np.conj(out) if conj_only else out


def _triangular_solve_abstract(
    a: ShapedArray, b: ShapedArray, *, left_side: bool, lower: bool, transpose_a: bool, conjugate_a: bool,
    unit_diagonal: bool,
) -> ShapedArray:  # fmt: skip
    # JAX's shape rule, in its order and words: ranks, a square, equal batch counts, then the
    # core shapes (a batch mismatch also names only those)
    _check_rank2("triangular_solve", a, 0)
    _check_rank2("triangular_solve", b, 1)
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(
            f"The first input to triangular_solve must be a square matrix. Got shape {tuple(a.shape[-2:])}."
        )
    if b.ndim != a.ndim:
        raise TypeError(
            "All inputs to triangular_solve must have the same number of batch dimensions, but got "
            f"{[a.ndim - 2, b.ndim - 2]} batch dimensions for the inputs."
        )
    common = b.shape[-2] if left_side else b.shape[-1]
    if common != a.shape[-1] or a.shape[:-2] != b.shape[:-2]:
        raise ValueError(
            f"Incompatible shapes for arguments to triangular_solve: {tuple(a.shape[-2:])} and {tuple(b.shape[-2:])}."
        )
    _check_inexact("triangular_solve", a)
    if a.dtype != b.dtype:
        raise TypeError(f"triangular_solve requires operands of the same dtype, got {_desc(a)} and {_desc(b)}")
    return ShapedArray(b.shape, b.dtype)


triangular_solve_p = Primitive("triangular_solve")
triangular_solve_p.def_impl(_triangular_solve_impl)
triangular_solve_p.def_abstract_eval(_triangular_solve_abstract)


def _trsolve_jvp_a(
    g_a: Any, ans: Any, a: Any, b: Any, *, left_side: bool, lower: bool, transpose_a: bool, conjugate_a: bool,
    unit_diagonal: bool,
) -> Any:  # fmt: skip
    m, n = u.shape(b)[-2:]
    k = 1 if unit_diagonal else 0
    g_a = u.tril(g_a, -k) if lower else u.triu(g_a, k)
    g_a = lax.neg(g_a)
    g_a = u.T(g_a) if transpose_a else g_a
    g_a = u.conj(g_a) if conjugate_a else g_a
    params = dict(
        left_side=left_side, lower=lower, transpose_a=transpose_a, conjugate_a=conjugate_a, unit_diagonal=unit_diagonal
    )

    def a_inverse(rhs: Any) -> Any:
        return triangular_solve_p.bind(a, rhs, **params)

    # order the products by cost (a solve and a matmul cost about the same per column)
    if left_side:
        return a_inverse(u.mm(g_a, ans)) if m > n else u.mm(a_inverse(g_a), ans)
    return a_inverse(u.mm(ans, g_a)) if m < n else u.mm(ans, a_inverse(g_a))


def _trsolve_jvp_b(g_b: Any, ans: Any, a: Any, b: Any, **params: Any) -> Any:
    return triangular_solve_p.bind(a, g_b, **params)


def _triangular_solve_transpose(
    ct: Any, a: Any, b: Any, *, left_side: bool, lower: bool, transpose_a: bool, conjugate_a: bool,
    unit_diagonal: bool,
) -> list:  # fmt: skip
    if ad.is_undefined_primal(a):
        raise NotImplementedError("triangular_solve is not linear in its first argument (a); cannot transpose")
    if type(ct) is Zero:
        return [None, Zero(b.aval)]
    ct_b = triangular_solve_p.bind(
        a,
        ct,
        left_side=left_side,
        lower=lower,
        transpose_a=not transpose_a,
        conjugate_a=conjugate_a,
        unit_diagonal=unit_diagonal,
    )
    return [None, ct_b]


ad.defjvp2(triangular_solve_p, _trsolve_jvp_a, _trsolve_jvp_b)
ad.primitive_transposes[triangular_solve_p] = _triangular_solve_transpose
_batch_front(triangular_solve_p)


def triangular_solve(
    a: Any,
    b: Any,
    *,
    left_side: bool = False,
    lower: bool = False,
    transpose_a: bool = False,
    conjugate_a: bool = False,
    unit_diagonal: bool = False,
) -> Any:
    """Solve ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b`` for triangular ``a``, where
    ``op`` transposes and/or conjugates as asked. Only the ``lower`` (or upper) triangle of ``a``
    is read; with ``unit_diagonal`` its diagonal is taken to be ones. As in JAX the default is a
    right-side solve with an upper-triangular ``a``."""
    return triangular_solve_p.bind(
        a,
        b,
        left_side=bool(left_side),
        lower=bool(lower),
        transpose_a=bool(transpose_a),
        conjugate_a=bool(conjugate_a),
        unit_diagonal=bool(unit_diagonal),
    )


# the rest of the primitives live in linalg_more (kept apart to keep modules short)
from fjax.lax._linalg_gaps import (  # noqa: E402, F401
    EighImplementation,
    EigImplementation,
    SvdAlgorithm,
    ormqr,
    tridiagonal,
)
from fjax.lax.linalg_extra import cholesky_update, qdwh, symmetric_product  # noqa: E402, F401
from fjax.lax.linalg_more import (  # noqa: E402, F401
    hessenberg,
    hessenberg_p,
    householder_product,
    householder_product_p,
    schur,
    schur_p,
    tridiagonal_solve,
    tridiagonal_solve_p,
)
