"""``lu``, ``cholesky``, ``triangular_solve`` and ``lu_pivots_to_permutation`` of small matrices,
compiled.

Their implementations call LAPACK/BLAS (``getrf``, ``trsm``) as host steps. A host step inside a
``while``/``scan``/``cond`` body keeps the whole loop on the host, run equation by equation: an
implicit ODE solver (diffrax's Kvaerno5: a Newton solve with an LU factorization in every step)
ran ~800x slower than JAX. Inside loop and branch bodies ``jit`` therefore rewrites
(``mlir.register_rewrite(..., bodies_only=True)``) these equations, for real float32/float64
matrices of static side <= ``MAX_N``, into lax operations the backends compile:

- ``lu``: LAPACK's ``getf2`` (unblocked partial pivoting, what ``getrf`` does for such sizes): at
  step ``k`` the pivot row is the first row ``>= k`` of largest ``|a[i, k]|`` (``idamax``), rows
  ``k`` and ``p`` are swapped, the column below the pivot is scaled by the pivot's reciprocal
  (left as it is for a zero pivot, as LAPACK does) and the trailing block gets the rank-1 update.
  Pivots and permutation are LAPACK's wherever the pivot choice has no ties; the factors agree
  to rounding (the update order within a step differs from the blocked LAPACK code).
- ``cholesky``: right-looking, one column a step (``potf2``'s order of operations): the column
  below the diagonal is divided by the square root of the pivot, the trailing block gets the
  rank-1 update. A matrix with a pivot that is not positive (or NaN) gives a NaN factor, as the
  LAPACK path (and JAX) does; ``symmetrize_input`` and ``upper`` as the primitive's. blackjax's
  NUTS window adaptation factors its mass matrix inside the sampler's loops.
- ``triangular_solve``: every combination of ``left_side``/``lower``/``transpose_a``/
  ``conjugate_a``/``unit_diagonal`` reduced to a left-side solve with a lower or upper matrix
  (a transposed side or matrix is a transposed operand), by column-oriented substitution.
- ``lu_pivots_to_permutation``: the swaps applied to ``iota``.

One step per pivot (row): unrolled up to ``UNROLL`` steps, a ``fori_loop`` beyond (nested loops
compile; fewer kernels to build, ~2x slower to run). A step is one elementwise pass over the
matrix whose reads are slices (the pivot row at a dynamic index) and selects against ``iota``, so
the backend fuses it into one kernel; an ``lu`` step adds the two reductions of the pivot search
(4 kernels a step). Pivots that differ along leading batch dimensions are read by a masked sum.
Complex matrices, other dtypes and larger sides keep their LAPACK host step.

Measured on the 2-core CI machine (float32, ``fori_loop`` of 10 ``lu_factor`` + ``lu_solve``):
n=2 13 us, n=4 21 us, n=12 160 us, n=32 660 us a call, against 600-800 us with the loop on the
host (where every other operation of a body runs op by op too). Outside loop bodies LAPACK stays:
there the forms (as ``fori_loop``s) ran a jitted 4x4 ``lu_factor`` + ``lu_solve`` in 19 us against
70 us (n <= 16 faster, n=32 equal), but a cold first ``jit(jnp.linalg.solve)`` took 7.1 s against
2.0 s (numba compiles the loops; LAPACK needs nothing compiled).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fjax import core
from fjax.interpreters import mlir
from fjax.lax import linalg as lax_linalg

#: the largest static matrix side rewritten (beyond it LAPACK's blocked code is the better form)
MAX_N = 64
#: steps up to this many are unrolled in the jaxpr; more run as a ``fori_loop``
UNROLL = 8

_REAL = (np.dtype(np.float32), np.dtype(np.float64))


def _lax() -> Any:
    from fjax import lax  # noqa: PLC0415 - (fjax.lax imports this module)

    return lax


def _steps(count: int, step: Callable[[Any, Any], Any], state: Any, reverse: bool = False) -> Any:
    """``state`` after ``step(k, state)`` for ``k`` in ``range(count)`` (descending when
    ``reverse``): unrolled (``k`` a Python int) for few steps, else a ``fori_loop`` (``k`` an int32
    scalar)."""
    lax = _lax()
    if count <= UNROLL:
        for k in reversed(range(count)) if reverse else range(count):
            state = step(k, state)
        return state

    def body(i: Any, st: Any) -> Any:
        i = lax.convert_element_type(i, np.int32)
        return step(lax.sub(np.int32(count - 1), i) if reverse else i, st)

    return lax.fori_loop(0, count, body, state)


def _iota(shape: tuple, dim: int) -> Any:
    return _lax().broadcasted_iota(np.int32, shape, dim % len(shape))


def _like(k: Any, x: Any) -> Any:
    """``k`` (a Python int, a scalar, or an array of ``x``'s leading dimensions) broadcast to ``x``."""
    lax = _lax()
    if isinstance(k, int):
        return lax.full_like(x, k)
    if k.dtype != x.dtype:
        k = lax.convert_element_type(k, x.dtype)
    return lax.broadcast_in_dim(k, x.shape, tuple(range(k.ndim)))


def _along(v: Any, shape: tuple, axis: int) -> Any:
    """``v`` (``shape`` without ``axis``) broadcast back along ``axis``."""
    nd = len(shape)
    axis %= nd
    return _lax().broadcast_in_dim(v, shape, tuple(d for d in range(nd) if d != axis))


def _pick(mask: Any, x: Any, axis: int) -> Any:
    """``x`` where ``mask`` holds (once along ``axis``), ``axis`` reduced away: a select and a sum
    (exact, the other terms are zeros). For indices that differ along leading batch dimensions."""
    lax = _lax()
    return lax.reduce_sum(lax.select(mask, x, lax.full_like(x, 0)), (axis % x.ndim,))


def _at(x: Any, k: Any, axis: int, idx: Any = None) -> Any:
    """``x``'s entries ``k`` along ``axis``, ``axis`` dropped: a slice (a Python int, or a scalar:
    both index loads the backends fuse), or, for ``k`` per leading batch element, a ``_pick``
    against ``idx`` (the iota along ``axis``)."""
    lax = _lax()
    axis %= x.ndim
    if isinstance(k, int):
        return lax.index_in_dim(x, k, axis, keepdims=False)
    if k.ndim == 0:
        return lax.dynamic_index_in_dim(x, k, axis, keepdims=False, allow_negative_indices=False)
    return _pick(lax.eq(idx, _like(k, idx)), x, axis)


def _swap(x: Any, idx: Any, i: Any, j: Any, axis: int) -> Any:
    """``x`` with its entries ``i`` and ``j`` along ``axis`` exchanged (``idx``: the iota along it)."""
    lax = _lax()
    at_i, at_j = lax.eq(idx, _like(i, idx)), lax.eq(idx, _like(j, idx))
    xi, xj = _along(_at(x, i, axis, idx), x.shape, axis), _along(_at(x, j, axis, idx), x.shape, axis)
    return lax.select(at_i, xj, lax.select(at_j, xi, x))


# ---- lu -----------------------------------------------------------------------------------------


def _lu_form(a: Any) -> list:
    """``lu``'s three outputs by ``getf2``'s steps (see the module docstring)."""
    lax = _lax()
    shape = a.shape
    m, n = shape[-2:]
    bs = shape[:-2]
    rows, cols = _iota(shape, -2), _iota(shape, -1)
    rows1 = _iota(bs + (m,), -1)  # one column's row numbers (and the permutation's iota)
    kidx = _iota(bs + (min(m, n),), -1)

    def step(k: Any, state: tuple) -> tuple:
        a, piv, perm = state
        col = _at(a, k, -1)  # a[..., :, k]
        cand = lax.ge(rows1, _like(k, rows1))
        mag = lax.select(cand, lax.abs(col), lax.full_like(col, -1))
        best = _along(lax.reduce_max(mag, (len(bs),)), mag.shape, -1)
        # the first row of largest magnitude (idamax); all NaN: the first candidate, row k
        hit = lax.bitwise_or(lax.eq(mag, best), lax.bitwise_and(cand, lax.ne(best, best)))
        p = lax.reduce_min(lax.select(hit, rows1, lax.full_like(rows1, m)), (len(bs),))
        # everything else is one elementwise pass over the matrix (its reads are views of ``a``)
        row_p, row_k = _at(a, p, -2, rows), _at(a, k, -2)  # the pivot row is row k of U
        a_pk, a_kk = _at(row_p, k, -1), _at(row_k, k, -1)
        nz = lax.ne(a_pk, lax.full_like(a_pk, 0))
        recip = lax.div(lax.full_like(a_pk, 1), lax.select(nz, a_pk, lax.full_like(a_pk, 1)))
        is_k, is_p = lax.eq(rows, _like(k, rows)), lax.eq(rows, _like(p, rows))
        swapped = lax.select(is_k, _along(row_p, shape, -2), lax.select(is_p, _along(row_k, shape, -2), a))
        swcol = lax.select(is_k, _like(a_pk, a), lax.select(is_p, _like(a_kk, a), _along(col, shape, -1)))
        # a zero pivot leaves its column as it is (LAPACK's getf2 skips the scaling)
        lcol = lax.select(_like(nz, is_k), lax.mul(swcol, _like(recip, a)), swcol)
        below = lax.gt(rows, _like(k, rows))
        upd = lax.sub(swapped, lax.mul(lcol, _along(row_p, shape, -2)))
        a = lax.select(lax.bitwise_and(below, lax.gt(cols, _like(k, cols))), upd,
                       lax.select(lax.bitwise_and(below, lax.eq(cols, _like(k, cols))), lcol, swapped))  # fmt: skip
        piv = lax.select(lax.eq(kidx, _like(k, kidx)), _like(p, piv), piv)
        perm = _swap(perm, rows1, k, p, -1)
        return a, piv, perm

    # (a last step on the last row changes nothing: its pivot is itself, nothing lies below)
    a, piv, perm = _steps(min(m - 1, n), step, (a, kidx, rows1))
    return [a, piv, perm]


def _lu_rewrite(eqn: core.JaxprEqn) -> Callable | None:
    aval = eqn.invars[0].aval
    m, n = aval.shape[-2:]
    if aval.dtype not in _REAL or not (1 <= m <= MAX_N and 1 <= n <= MAX_N):
        return None
    return _lu_form


# ---- cholesky -----------------------------------------------------------------------------------


def _cholesky_form(x: Any, *, symmetrize_input: bool = False, upper: bool = False) -> Any:
    """``cholesky``'s factor by ``potf2``'s steps (see the module docstring)."""
    lax = _lax()
    if symmetrize_input:
        sw = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
        x = lax.mul(lax.add(x, lax.transpose(x, sw)), lax.full_like(x, 0.5))
    shape = x.shape
    n = shape[-1]
    bs = shape[:-2]
    rows, cols = _iota(shape, -2), _iota(shape, -1)
    rows1 = _iota(bs + (n,), -1)

    def step(k: Any, state: tuple) -> tuple:
        a, bad = state
        col = _at(a, k, -1)  # a[..., :, k]: its rows >= k are the trailing block's first column
        akk = _at(col, k, -1)
        pos = lax.gt(akk, lax.full_like(akk, 0))  # (False for NaN)
        d = lax.sqrt(lax.select(pos, akk, lax.full_like(akk, 1)))
        scaled = lax.div(col, _along(d, col.shape, -1))
        lcol = lax.select(
            lax.gt(rows1, _like(k, rows1)), scaled,
            lax.select(lax.eq(rows1, _like(k, rows1)), _along(d, col.shape, -1), lax.full_like(col, 0)),
        )  # fmt: skip
        trailing = lax.bitwise_and(lax.gt(rows, _like(k, rows)), lax.gt(cols, _like(k, cols)))
        upd = lax.sub(a, lax.mul(_along(lcol, shape, -1), _along(lcol, shape, -2)))
        a = lax.select(lax.eq(cols, _like(k, cols)), _along(lcol, shape, -1), lax.select(trailing, upd, a))
        return a, lax.bitwise_or(bad, lax.bitwise_not(pos))

    a, bad = _steps(n, step, (x, lax.full(bs, False, np.bool_)))
    low = lax.select(lax.ge(rows, cols), a, lax.full_like(a, 0))
    out = lax.select(lax.broadcast_in_dim(bad, shape, tuple(range(len(bs)))), lax.full_like(a, np.nan), low)
    if upper:
        out = lax.transpose(out, tuple(range(len(bs))) + (len(bs) + 1, len(bs)))
    return out


def _cholesky_rewrite(eqn: core.JaxprEqn) -> Callable | None:
    aval = eqn.invars[0].aval
    if aval.dtype not in _REAL or not 1 <= aval.shape[-1] <= MAX_N:
        return None
    return _cholesky_form


# ---- triangular_solve ---------------------------------------------------------------------------


def _trsolve_form(
    a: Any, b: Any, *, left_side: bool, lower: bool, transpose_a: bool, conjugate_a: bool, unit_diagonal: bool
) -> Any:
    """``op(a) x = b`` (``x op(a) = b`` unless ``left_side``) for real ``a``: as the left-side
    solve ``t x' = b'`` with ``t`` lower or upper (a right side is the transposed problem)."""
    del conjugate_a  # (real matrices)
    lax = _lax()
    nd = a.ndim
    sw = tuple(range(nd - 2)) + (nd - 1, nd - 2)
    flip = bool(transpose_a) != (not left_side)  # t = a^T: its lower part is a's upper part
    t = lax.transpose(a, sw) if flip else a
    lo = bool(lower) != flip
    if not left_side:
        b = lax.transpose(b, sw)
    shape = b.shape
    m = shape[-2]
    rows = _iota(shape, -2)

    def step(j: Any, x: Any) -> Any:
        at_j = lax.eq(rows, _like(j, rows))
        xj = _at(x, j, -2)  # the rows before (after) j are final: x[j] is b[j] less their terms
        tcol = _at(t, j, -1)  # t[..., :, j]
        if not unit_diagonal:
            xj = lax.div(xj, _along(_at(tcol, j, -1), xj.shape, -1))
        rest = (lax.gt if lo else lax.lt)(rows, _like(j, rows))
        upd = lax.sub(x, lax.mul(_along(tcol, shape, -1), _along(xj, shape, -2)))
        return lax.select(at_j, _along(xj, shape, -2), lax.select(rest, upd, x))

    x = _steps(m, step, b, reverse=not lo)
    return lax.transpose(x, sw) if not left_side else x


def _trsolve_rewrite(eqn: core.JaxprEqn) -> Callable | None:
    a = eqn.invars[0].aval
    if a.dtype not in _REAL or not 1 <= a.shape[-1] <= MAX_N or 0 in eqn.invars[1].aval.shape:
        return None
    return _trsolve_form


# ---- lu_pivots_to_permutation -------------------------------------------------------------------


def _l2p_form(pivots: Any, *, permutation_size: int) -> Any:
    """The swaps ``pivots`` applied in order to ``arange(permutation_size)``."""
    lax = _lax()
    bs = pivots.shape[:-1]
    perm0 = lax.convert_element_type(_iota(bs + (permutation_size,), -1), pivots.dtype)
    idx = lax.convert_element_type(_iota(bs + (permutation_size,), -1), pivots.dtype)

    def step(i: Any, perm: Any) -> Any:
        return _swap(perm, idx, i, _at(pivots, i, -1), -1)

    return _steps(pivots.shape[-1], step, perm0)


def _l2p_rewrite(eqn: core.JaxprEqn) -> Callable | None:
    piv = eqn.invars[0].aval
    if not 1 <= piv.shape[-1] <= MAX_N or eqn.params["permutation_size"] > 4 * MAX_N:
        return None
    return _l2p_form


mlir.register_rewrite(lax_linalg.lu_p, _lu_rewrite, bodies_only=True)
mlir.register_rewrite(lax_linalg.cholesky_p, _cholesky_rewrite, bodies_only=True)
mlir.register_rewrite(lax_linalg.triangular_solve_p, _trsolve_rewrite, bodies_only=True)
mlir.register_rewrite(lax_linalg.lu_pivots_to_permutation_p, _l2p_rewrite, bodies_only=True)
