"""Batched LAPACK/BLAS kernels for ``cholesky``, ``triangular_solve`` and ``lu``: one numba loop
over the batch calling the factorization for each matrix, instead of one Python-level scipy call
per matrix (256 float32 64x64 Choleskys: ~3 ms against ~10-30 ms through scipy's wrappers).

The LAPACK/BLAS routines are scipy's (``scipy.linalg.cython_lapack`` / ``cython_blas``), reached
from numba as external C symbols (``types.ExternalFunction``) that this module registers with
LLVM under ``fjax_<routine>`` names on import. Symbols resolved by name keep the kernels cacheable
on disk (a ctypes function pointer baked into object code would not survive a new process).

Arrays stay C-ordered: a C matrix is the transpose of the Fortran matrix over the same buffer, so a
lower Cholesky in C is LAPACK's upper one (``A^T = U^H U`` gives ``A = L L^H`` with ``L = U^T``),
and a left-side triangular solve in C is a right-side one in Fortran with the triangle flipped.
``getrf`` pivots rows, so each matrix is copied into a transposed scratch first.

Results match the primitives' ``impl`` semantics: a matrix that is not positive definite gives a
NaN factor (JAX's convention); a singular ``U`` is returned as LAPACK leaves it; pivots are 0-based
int32 and the permutation is computed in the same loop. Entry points (``cholesky``,
``triangular_solve``, ``lu``) take numpy arrays and return None for what they do not handle (zero
sizes, dtypes other than float32/64 and complex64/128), so the caller falls back to its own path.
``is_batched(shape)`` says which stacks take this path, eagerly (the impls) and under jit;
``host_kernel(node)`` is the jit host-step builder (``host_kernels.HOST_KERNELS``).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Callable, Iterator

import numpy as np
from llvmlite import binding as llvm
from numba import njit, types
from numba.extending import get_cython_function_address

# importing the backend package first gives numba a writable cache directory even for a
# read-only install without HOME; its disk_cache seals the object code of these kernels
from fjax import _blas
from fjax.backends.numba import disk_cache
from fjax.backends.numba.warm_load import array_type, ensure_compiled, readonly

_PREFIX = {np.dtype(t): p for t, p in ((np.float32, "s"), (np.float64, "d"), (np.complex64, "c"), (np.complex128, "z"))}
_NARGS = {"potrf": 5, "getrf": 6, "trsm": 11, "trsv": 8}


def _register_symbols() -> None:
    for p in _PREFIX.values():
        for name in _NARGS:
            mod = "scipy.linalg.cython_blas" if name in ("trsm", "trsv") else "scipy.linalg.cython_lapack"
            llvm.add_symbol(f"fjax_{p}{name}", get_cython_function_address(mod, p + name))


_register_symbols()


def _ext(name: str) -> Any:
    return types.ExternalFunction(f"fjax_{name}", types.void(*([types.voidptr] * _NARGS[name[1:]])))


_spotrf, _dpotrf, _cpotrf, _zpotrf = (_ext(p + "potrf") for p in "sdcz")
_sgetrf, _dgetrf, _cgetrf, _zgetrf = (_ext(p + "getrf") for p in "sdcz")
_strsm, _dtrsm, _ctrsm, _ztrsm = (_ext(p + "trsm") for p in "sdcz")
_strsv, _dtrsv = (_ext(p + "trsv") for p in "sd")

_opts = dict(cache=True, nogil=True)
# up to this size a lower Cholesky factor is computed as LAPACK's "L" in a scratch and transposed
_VIA_L_MAX = 256


@njit(**_opts)
def _potrf(kind, uplo, n, a, lda, info):  # pragma: no cover - numba
    if kind == 0:
        _spotrf(uplo.ctypes, n.ctypes, a.ctypes, lda.ctypes, info.ctypes)
    elif kind == 1:
        _dpotrf(uplo.ctypes, n.ctypes, a.ctypes, lda.ctypes, info.ctypes)
    elif kind == 2:
        _cpotrf(uplo.ctypes, n.ctypes, a.ctypes, lda.ctypes, info.ctypes)
    else:
        _zpotrf(uplo.ctypes, n.ctypes, a.ctypes, lda.ctypes, info.ctypes)


@njit(**_opts)
def _getrf(kind, m, n, a, lda, ipiv, info):  # pragma: no cover - numba
    if kind == 0:
        _sgetrf(m.ctypes, n.ctypes, a.ctypes, lda.ctypes, ipiv.ctypes, info.ctypes)
    elif kind == 1:
        _dgetrf(m.ctypes, n.ctypes, a.ctypes, lda.ctypes, ipiv.ctypes, info.ctypes)
    elif kind == 2:
        _cgetrf(m.ctypes, n.ctypes, a.ctypes, lda.ctypes, ipiv.ctypes, info.ctypes)
    else:
        _zgetrf(m.ctypes, n.ctypes, a.ctypes, lda.ctypes, ipiv.ctypes, info.ctypes)


@njit(**_opts)
def _trsm(kind, flags, m, n, alpha, a, lda, b, ldb):  # pragma: no cover - numba
    s, u, t, d = flags[0:1], flags[1:2], flags[2:3], flags[3:4]
    al, ldb_ = alpha.ctypes, ldb.ctypes
    if kind == 0:
        _strsm(s.ctypes, u.ctypes, t.ctypes, d.ctypes, m.ctypes, n.ctypes, al, a.ctypes, lda.ctypes, b.ctypes, ldb_)
    elif kind == 1:
        _dtrsm(s.ctypes, u.ctypes, t.ctypes, d.ctypes, m.ctypes, n.ctypes, al, a.ctypes, lda.ctypes, b.ctypes, ldb_)
    elif kind == 2:
        _ctrsm(s.ctypes, u.ctypes, t.ctypes, d.ctypes, m.ctypes, n.ctypes, al, a.ctypes, lda.ctypes, b.ctypes, ldb_)
    else:
        _ztrsm(s.ctypes, u.ctypes, t.ctypes, d.ctypes, m.ctypes, n.ctypes, al, a.ctypes, lda.ctypes, b.ctypes, ldb_)


@njit(**_opts)
def _trsv(kind, flags, n, a, lda, x, incx):  # pragma: no cover - numba
    u, t, d = flags[0:1], flags[1:2], flags[2:3]
    if kind == 0:
        _strsv(u.ctypes, t.ctypes, d.ctypes, n.ctypes, a.ctypes, lda.ctypes, x.ctypes, incx.ctypes)
    else:
        _dtrsv(u.ctypes, t.ctypes, d.ctypes, n.ctypes, a.ctypes, lda.ctypes, x.ctypes, incx.ctypes)


@njit(**_opts)
def _cholesky_batch(x, out, kind, sym, upper):  # pragma: no cover - numba
    """``out[i]`` = Cholesky factor of ``x[i]`` (lower, or its conjugate transpose with ``upper``),
    NaN if it fails. Only ``x[i]``'s lower triangle is read, or with ``sym`` (real dtypes only)
    that of ``(x[i] + x[i]^T) / 2``, formed here per matrix instead of as a separate pass.

    The factorization is LAPACK's lower one (``uplo="L"``, as scipy's ``potrf(lower=1)`` on a
    Fortran copy): a C upper triangle is Fortran's lower one of ``conj(x)``, whose factor seen
    from C is ``L^H``. An upper result is written in place; a lower one of a small matrix is
    factored in a scratch and conjugate-transposed into ``out`` (in cache; OpenBLAS's "L" is
    ~25% faster than its "U" here), a large one is factored in place as Fortran's "U"."""
    nb, n, _ = x.shape
    via_l = upper or n <= _VIA_L_MAX
    uplo = np.array([76 if via_l else 85], np.uint8)  # "L" / "U"
    nn = np.array([n], np.int32)
    info = np.zeros(1, np.int32)
    scratch = np.empty((n, n) if via_l and not upper else (0, 0), out.dtype)
    for b in range(nb):
        xb = x[b]
        if via_l:
            w = out[b] if upper else scratch
            for i in range(n):
                for j in range(i):
                    w[i, j] = 0
                for j in range(i, n):
                    if sym:
                        w[i, j] = (xb[j, i] + xb[i, j]) / 2
                    else:
                        w[i, j] = np.conj(xb[j, i])
            _potrf(kind, uplo, nn, w, nn, info)
            if info[0] != 0:
                out[b, :, :] = np.nan
            elif not upper:
                o = out[b]
                for i in range(n):
                    for j in range(i + 1):
                        o[i, j] = np.conj(w[j, i])
                    for j in range(i + 1, n):
                        o[i, j] = 0
        else:
            o = out[b]
            for i in range(n):
                for j in range(i + 1):
                    if sym:
                        o[i, j] = (xb[i, j] + xb[j, i]) / 2
                    else:
                        o[i, j] = xb[i, j]
                for j in range(i + 1, n):
                    o[i, j] = 0
            _potrf(kind, uplo, nn, o, nn, info)
            if info[0] != 0:
                o[:, :] = np.nan


@njit(**_opts)
def _trsm_batch(a, out, kind, flags, alpha):  # pragma: no cover - numba
    """In place on ``out`` (holding the right-hand sides), as C-ordered Fortran ``trsm`` calls."""
    nb, r, c = out.shape
    mf = np.array([c], np.int32)  # the Fortran view of a C (r, c) matrix is (c, r)
    nf = np.array([r], np.int32)
    lda = np.array([a.shape[2]], np.int32)
    for b in range(nb):
        _trsm(kind, flags, mf, nf, alpha, a[b], lda, out[b], mf)


@njit(**_opts)
def _trsv_batch(a, out, kind, flags):  # pragma: no cover - numba
    """In place on ``out``, whose matrices are single (contiguous) vectors: one Fortran ``trsv``
    per matrix (real dtypes), cheaper than a one-column ``trsm``."""
    n = np.array([a.shape[2]], np.int32)
    inc = np.array([1], np.int32)
    for b in range(out.shape[0]):
        _trsv(kind, flags, n, a[b], n, out[b], inc)


@njit(**_opts)
def _lu_batch(x, lu, piv, perm, kind):  # pragma: no cover - numba
    nb, m, n = x.shape
    k = min(m, n)
    scratch = np.empty((n, m), x.dtype)  # C (n, m) = the Fortran (m, n) matrix x[b]
    ipiv = np.empty(k, np.int32)
    mm = np.array([m], np.int32)
    nn = np.array([n], np.int32)
    lda = np.array([max(m, 1)], np.int32)
    info = np.zeros(1, np.int32)
    for b in range(nb):
        for i in range(m):
            for j in range(n):
                scratch[j, i] = x[b, i, j]
        _getrf(kind, mm, nn, scratch, lda, ipiv, info)
        for i in range(m):
            for j in range(n):
                lu[b, i, j] = scratch[j, i]
        for i in range(m):
            perm[b, i] = i
        for i in range(k):
            p = ipiv[i] - 1
            piv[b, i] = p
            t = perm[b, i]
            perm[b, i] = perm[b, p]
            perm[b, p] = t


# per-call work (multiply-adds) from which a loop's LAPACK/BLAS calls may use OpenBLAS's thread
# team (``fjax._blas.threads_for``: unless the machine is busy); below it they run on one thread
PARALLEL_MACS = 1 << 32


@contextlib.contextmanager
def _blas_threads(macs: int) -> Iterator[None]:
    """Run the loop's LAPACK/BLAS calls (scipy's OpenBLAS) on one thread unless each call has at
    least ``PARALLEL_MACS`` multiply-adds (about a 1600x1600 triangular solve). OpenBLAS's team
    busy-waits, and beside numpy's OpenBLAS team (after a GEMM) and numba's threads it loses on
    2 cores: the GP marginal likelihood + gradient (n = 1000) took 165-175 ms with scipy's
    OpenBLAS at its default 2 threads and 111-114 ms with one (JAX: 116-118 ms), and a 2-thread
    potrf of a 256x256 matrix took 264 ms against 0.5 ms at load ~3."""
    _blas.include_scipy()
    _blas.use(1 if macs < PARALLEL_MACS else _blas.threads_for(macs))
    try:
        yield
    finally:
        _blas.restore()


def _kind(dt: np.dtype) -> int | None:
    return {"s": 0, "d": 1, "c": 2, "z": 3}[_PREFIX[dt]] if dt in _PREFIX else None


_installed: set = set()


def _install(kernel: Any, name: str, dt: np.dtype) -> None:
    """Load (or compile) ``kernel``'s overload for dtype ``dt`` once per process."""
    if (name, dt) in _installed:
        return
    ro, rw, i32 = array_type(dt, 3, readonly=True), array_type(dt, 3), array_type(np.int32, 2)
    sig = {
        "cholesky": (ro, rw, types.int64, types.boolean, types.boolean),
        "trsm": (ro, rw, types.int64, array_type(np.uint8, 1), array_type(dt, 1)),
        "trsv": (ro, rw, types.int64, array_type(np.uint8, 1)),
        "lu": (ro, rw, i32, i32, types.int64),
    }[name]
    ensure_compiled(kernel, sig)
    _installed.add((name, dt))


def _flat(x: np.ndarray) -> np.ndarray:
    """``x`` as a read-only C-contiguous (batch, m, n) array."""
    return readonly(np.ascontiguousarray(x).reshape((-1,) + x.shape[-2:]))


def cholesky(x: np.ndarray, *, symmetrize_input: bool = False, upper: bool = False) -> np.ndarray | None:
    """Cholesky factors of the stack ``x[..., n, n]``: lower ``L`` (``upper``: ``L^H``), from the
    lower triangles of ``x`` or, with ``symmetrize_input``, of ``(x + x^H) / 2``; a matrix that is
    not positive definite gives NaN. None when not handled here."""
    dt = x.dtype
    kind = _kind(dt)
    if kind is None or x.size == 0:
        return None
    _install(_cholesky_batch, "cholesky", dt)
    sym = bool(symmetrize_input)
    if sym and kind >= 2:  # complex: symmetrize here (the kernel's in-loop form is for reals)
        x = (x + np.conj(np.swapaxes(x, -1, -2))) / np.asarray(2, dt)
        sym = False
    xf = _flat(x)
    out = np.empty(xf.shape, dt)
    n = xf.shape[-1]
    with _blas_threads(n * n * n // 3):
        _cholesky_batch(xf, out, kind, sym, bool(upper))
    return out.reshape(x.shape)


def triangular_solve(
    a: np.ndarray,
    b: np.ndarray,
    *,
    left_side: bool,
    lower: bool,
    transpose_a: bool,
    conjugate_a: bool,
    unit_diagonal: bool,
) -> np.ndarray | None:
    """``triangular_solve``'s result for equal batch dims (see ``fjax.lax.linalg``), or None."""
    dt = b.dtype
    kind = _kind(dt)
    if kind is None or a.dtype != dt or b.size == 0 or a.shape[-1] == 0 or a.shape[:-2] != b.shape[:-2]:
        return None
    _install(_trsm_batch, "trsm", dt)
    at = np.swapaxes(a, -1, -2)
    if not a.flags.c_contiguous and at.flags.c_contiguous:
        # a transposed view (an upper factor L^H, say): solve with the buffer it views, whose
        # transpose flips both the triangle and op(a), instead of copying it
        a, lower, transpose_a = at, not lower, not transpose_a
    vector = (b.shape[-1] == 1) if left_side else (b.shape[-2] == 1)
    if vector and kind < 2:
        # one right-hand side, real: trsv. A C matrix is the transpose of its Fortran buffer, so a
        # left-side op(a) x = b is trsv with the triangle flipped and op toggled; a right-side
        # x op(a) = b is op(a)^T x^T = b^T, the same without the toggle
        _install(_trsv_batch, "trsv", dt)
        t = transpose_a if left_side else not transpose_a
        codes = ("U" if lower else "L") + ("N" if t else "T") + ("U" if unit_diagonal else "N")
        flags = np.frombuffer(codes.encode(), np.uint8).copy()
        out = np.array(b.reshape((-1,) + b.shape[-2:]), dtype=dt, order="C", copy=True)
        with _blas_threads(a.shape[-1] ** 2):
            _trsv_batch(_flat(a), out, kind, flags)
        return out.reshape(b.shape)
    conj_only = conjugate_a and not transpose_a
    trans = ("C" if conjugate_a else "T") if transpose_a else "N"
    # C left side = Fortran right side; C lower = Fortran upper
    codes = ("R" if left_side else "L") + ("U" if lower else "L") + trans + ("U" if unit_diagonal else "N")
    flags = np.frombuffer(codes.encode(), np.uint8).copy()
    out = np.array(b.reshape((-1,) + b.shape[-2:]), dtype=dt, order="C", copy=True)
    if conj_only:
        np.conjugate(out, out=out)
    with _blas_threads(a.shape[-1] * out.shape[-1] * out.shape[-2]):
        _trsm_batch(_flat(a), out, kind, flags, np.ones(1, dt))
    if conj_only:
        np.conjugate(out, out=out)
    return out.reshape(b.shape)


def lu(x: np.ndarray) -> list | None:
    """``[lu, pivots, permutation]`` of the stack ``x[..., m, n]`` (as ``lax.linalg.lu``), or None."""
    dt = x.dtype
    kind = _kind(dt)
    if kind is None or x.size == 0:
        return None
    _install(_lu_batch, "lu", dt)
    xf = _flat(x)
    nb, m, n = xf.shape
    lu_ = np.empty(xf.shape, dt)
    piv = np.empty((nb, min(m, n)), np.int32)
    perm = np.empty((nb, m), np.int32)
    with _blas_threads(m * n * min(m, n)):
        _lu_batch(xf, lu_, piv, perm, kind)
    bs = x.shape[:-2]
    return [lu_.reshape(x.shape), piv.reshape(bs + piv.shape[1:]), perm.reshape(bs + (m,))]


# a single matrix at least this large also takes the compiled path (cholesky, triangular_solve):
# it calls LAPACK on the C buffer as is, where scipy's wrappers copy each operand to Fortran order
SINGLE_MIN = 128


def is_batched(shape: tuple, name: str = "lu") -> bool:
    """Whether a stack of this shape goes through these kernels, eagerly (the impls) and under jit
    alike: more than one matrix, or for ``cholesky`` / ``triangular_solve`` one matrix with a
    side of ``SINGLE_MIN`` or more (a small single matrix gains little and stays on scipy's
    wrapper; so does a single ``lu``, whose kernel copies through a transposed scratch anyway)."""
    if len(shape) >= 3 and int(np.prod(shape[:-2])) > 1:
        return True
    return name != "lu" and len(shape) >= 2 and max(shape[-2:]) >= SINGLE_MIN


_ENTRY: dict[str, Callable] = {"cholesky": cholesky, "triangular_solve": triangular_solve, "lu": lu}


def host_kernel(step: Any) -> Callable | None:
    """The jit host step of a ``cholesky`` / ``triangular_solve`` / ``lu`` step node
    (``kernel_ir.HostCall``: the primitive, its params and operand avals), or None for the impl."""
    in_avals = step.in_avals
    if any(np.dtype(av.dtype) not in _PREFIX for av in in_avals) or any(0 in av.shape for av in in_avals):
        return None
    prim = step.prim
    # the right-hand side's shape decides for triangular_solve (as its impl does)
    if not is_batched(in_avals[-1].shape, prim.name):
        return None  # one small matrix: the impl's scipy call (the same numbers eagerly and under jit)
    fast, impl, params = _ENTRY[prim.name], prim.impl, dict(step.params)

    def run(*args: np.ndarray) -> Any:
        r = fast(*args, **params)
        return impl(*args, **params) if r is None else r

    return run


disk_cache.guard_module_caches([sys.modules[__name__]])
