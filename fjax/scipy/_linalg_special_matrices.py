"""Special matrices and two small factorization helpers of ``jax.scipy.linalg``.

Matrices built from array arguments (``circulant``, ``companion``, ``convolution_matrix``,
``fiedler``, ``fiedler_companion``, ``hankel``, ``leslie``) are gathers and scatters of their
inputs with static index patterns, so they work under ``jit``, ``vmap`` and ``grad``; leading
dimensions of their array arguments are batch dimensions (as in JAX and SciPy >= 1.11).
Matrices defined by a size alone (``dft``, ``hadamard``, ``helmert``, ``invhilbert``,
``pascal``, ``invpascal``) are computed on the host (exactly, in integer arithmetic, where the
entries are integers) and returned as constants. ``qr_multiply`` is ``qr`` followed by a matrix
product and ``rsf2csf`` is written with ``jnp`` operations (a loop of Givens rotations of static
length), so both are differentiable.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from fjax import core, dtypes
from fjax.numpy import _util

__all__ = [
    "circulant",
    "companion",
    "convolution_matrix",
    "dft",
    "fiedler",
    "fiedler_companion",
    "hadamard",
    "hankel",
    "helmert",
    "invhilbert",
    "invpascal",
    "leslie",
    "pascal",
    "qr_multiply",
    "rsf2csf",
]


def _jnp() -> Any:
    import fjax.numpy as jnp  # noqa: PLC0415

    return jnp


def _arr(name: str, x: Any) -> Any:
    _util.check_arraylike(name, x)
    return _util.to_fjax(x, name)


def _is_concrete(x: Any) -> bool:
    return not isinstance(x, core.Tracer)


def _size(name: str, n: Any, least: int | None = 0) -> int:
    """``n`` as an int: TypeError for a non-integer, ValueError below ``least`` (0 or 1; None: no check)."""
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"{name}: n must be an integer, got {n!r}") from None
    if least is not None and n < least:
        kind = "non-negative" if least == 0 else "positive"
        raise ValueError(f"{name}: n must be a {kind} integer, got {n}")
    return n


def _float_dtype() -> np.dtype:
    return dtypes.canonicalize_dtype(np.float64)


# ---------------------------------------------------------------------------------------------
# matrices built from arrays


def circulant(c: Any) -> Any:
    """Circulant matrix whose first column is ``c``: ``C[..., i, j] = c[..., (i - j) % n]``.

    ``c`` has shape ``(..., n)``; the result has shape ``(..., n, n)`` and ``c``'s dtype.
    """
    c = _arr("circulant", c)
    if c.ndim == 0:
        c = c[None]
    n = c.shape[-1]
    idx = (np.arange(n)[:, None] - np.arange(n)[None, :]) % max(n, 1)
    return c[..., idx]


def hankel(c: Any, r: Any = None) -> Any:
    """Hankel matrix with first column ``c`` and last row ``r``: ``H[..., i, j] = v[..., i + j]``
    where ``v = concatenate([c, r[..., 1:]])`` (so ``r[..., 0]`` is ignored).

    ``c`` has shape ``(..., m)`` and ``r`` (default ``zeros_like(c)``) shape ``(..., n)`` with
    broadcast-compatible leading dimensions; the result has shape ``(..., m, n)``.
    """
    jnp = _jnp()
    c = _arr("hankel", c)
    r = jnp.zeros_like(c) if r is None else _arr("hankel", r)
    c, r = _util.promote_dtypes("hankel", c, r)
    if c.ndim == 0:
        c = c[None]
    if r.ndim == 0:
        r = r[None]
    m, n = c.shape[-1], r.shape[-1]
    bs = _util.broadcast_shapes("hankel", tuple(c.shape[:-1]), tuple(r.shape[:-1]))
    c = jnp.broadcast_to(c, bs + (m,))
    r = jnp.broadcast_to(r, bs + (n,))
    vals = jnp.concatenate([c, r[..., 1:]], axis=-1)
    if n == 0:
        return jnp.zeros(bs + (m, 0), c.dtype)
    idx = np.arange(m)[:, None] + np.arange(n)[None, :]
    return vals[..., idx]


def fiedler(a: Any) -> Any:
    """Fiedler matrix of ``a``: ``F[..., i, j] = |a[..., i] - a[..., j]|`` (symmetric, zero diagonal).

    ``a`` has shape ``(..., n)``; the result has shape ``(..., n, n)``.
    """
    a = _arr("fiedler", a)
    jnp = _jnp()
    if a.ndim == 0:
        a = a[None]
    return jnp.abs(a[..., :, None] - a[..., None, :])


def _poly_coeffs(name: str, a: Any) -> Any:
    a = _arr(name, a)
    (a,) = _util.promote_dtypes_inexact(name, a)
    if a.ndim == 0 or a.shape[-1] < 2:
        raise ValueError(f"{name}: the length of `a` along the last axis must be at least 2.")
    if _is_concrete(a) and np.any(np.asarray(a)[..., 0] == 0):
        raise ValueError(f"{name}: the first coefficient(s) of `a` (i.e. elements of `a[..., 0]`) must not be zero.")
    return a


def companion(a: Any) -> Any:
    """Companion matrix of the polynomial with coefficients ``a`` (highest degree first).

    For ``a`` of shape ``(..., n)`` the result has shape ``(..., n - 1, n - 1)``: its first row is
    ``-a[..., 1:] / a[..., 0]`` and its first subdiagonal is ones; its eigenvalues are the roots
    of the polynomial. Integer input is promoted to the default float dtype. ``ValueError`` if
    ``n < 2`` or (for concrete ``a``) if a leading coefficient is zero.
    """
    jnp = _jnp()
    a = _poly_coeffs("companion", a)
    n = a.shape[-1] - 1
    first = -a[..., 1:] / a[..., :1]
    out = jnp.zeros(tuple(a.shape[:-1]) + (n, n), a.dtype)
    out = out.at[..., 0, :].set(first)
    if n > 1:
        i = np.arange(1, n)
        out = out.at[..., i, i - 1].set(jnp.ones((), a.dtype))
    return out


def fiedler_companion(a: Any) -> Any:
    """Fiedler companion matrix of the polynomial with coefficients ``a`` (highest degree first).

    A pentadiagonal matrix with the same characteristic polynomial as ``companion(a)`` (Fiedler,
    2003), built from ``b = a / a[..., 0]``: shape ``(..., n - 1, n - 1)`` for ``a`` of shape
    ``(..., n)``. Integer input is promoted to the default float dtype.
    """
    jnp = _jnp()
    a = _poly_coeffs("fiedler_companion", a)
    b = a / a[..., :1]
    n = a.shape[-1] - 1
    rows_b, cols_b, coef = [0], [0], [1]  # M[i, j] = -b[k]
    rows_1, cols_1 = [], []  # M[i, j] = 1
    for i in range(n):
        if i % 2 == 0:
            if i + 1 < n:
                rows_b.append(i)
                cols_b.append(i + 1)
                coef.append(i + 2)
            if i + 2 < n:
                rows_1.append(i)
                cols_1.append(i + 2)
            if i >= 2:
                rows_b.append(i)
                cols_b.append(i - 1)
                coef.append(i + 1)
        else:
            rows_1.append(i)
            cols_1.append(max(i - 2, 0))
    out = jnp.zeros(tuple(a.shape[:-1]) + (n, n), a.dtype)
    out = out.at[..., np.array(rows_b), np.array(cols_b)].set(-b[..., np.array(coef)])
    if rows_1:
        out = out.at[..., np.array(rows_1), np.array(cols_1)].set(jnp.ones((), a.dtype))
    return out


def leslie(f: Any, s: Any) -> Any:
    """Leslie matrix with fecundity coefficients ``f`` (first row) and survival coefficients ``s``
    (first subdiagonal).

    ``f`` has shape ``(..., n)`` and ``s`` shape ``(..., n - 1)``, ``n >= 2``, with broadcast-compatible
    leading dimensions; the result has shape ``(..., n, n)`` and the dtype of ``f[0] + s[0]``.
    """
    jnp = _jnp()
    f, s = _arr("leslie", f), _arr("leslie", s)
    f, s = _util.promote_dtypes("leslie", f, s)
    if s.ndim == 0 or s.shape[-1] < 1:
        raise ValueError("leslie: the length of s must be at least 1.")
    if f.ndim == 0:
        raise ValueError("leslie: f must have at least one dimension.")
    if s.shape[-1] != f.shape[-1] - 1:
        raise ValueError(
            f"leslie: the last axis of s must have length f.shape[-1] - 1 = {f.shape[-1] - 1}; "
            f"got shapes f: {tuple(f.shape)}, s: {tuple(s.shape)}"
        )
    n = f.shape[-1]
    bs = _util.broadcast_shapes("leslie", tuple(f.shape[:-1]), tuple(s.shape[:-1]))
    out = jnp.zeros(bs + (n, n), f.dtype)
    out = out.at[..., 0, :].set(jnp.broadcast_to(f, bs + (n,)))
    i = np.arange(1, n)
    out = out.at[..., i, i - 1].set(jnp.broadcast_to(s, bs + (n - 1,)))
    return out


def convolution_matrix(a: Any, n: int, mode: str = "full") -> Any:
    """Matrix ``A`` with ``A @ v == numpy.convolve(a, v, mode)`` for every ``v`` of length ``n``.

    ``a`` has shape ``(..., m)``; ``mode`` is ``'full'`` (``m + n - 1`` rows), ``'valid'``
    (``max(m, n) - min(m, n) + 1`` rows) or ``'same'`` (``max(m, n)`` rows); ``n`` columns.
    """
    jnp = _jnp()
    a = _arr("convolution_matrix", a)
    n = _size("convolution_matrix", n, least=1)
    if a.ndim == 0 or a.shape[-1] == 0:
        raise ValueError("convolution_matrix: len(a) must be at least 1.")
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"convolution_matrix: mode must be 'full', 'valid' or 'same', got {mode!r}")
    m = a.shape[-1]
    rows = np.arange(m + n - 1)[:, None] - np.arange(n)[None, :]  # full[i, j] = a[i - j]
    if mode == "valid":
        lo, hi = min(m, n) - 1, max(m, n)
    elif mode == "same":
        trim = min(m, n) - 1
        lo, hi = trim // 2, m + n - 1 - (trim - trim // 2)
    else:
        lo, hi = 0, m + n - 1
    rows = rows[lo:hi]
    inside = (rows >= 0) & (rows < m)
    padded = jnp.concatenate([a, jnp.zeros(tuple(a.shape[:-1]) + (1,), a.dtype)], axis=-1)
    return padded[..., np.where(inside, rows, m)]


# ---------------------------------------------------------------------------------------------
# matrices defined by their size


def dft(n: int, scale: str | None = None) -> Any:
    """The ``n x n`` discrete Fourier transform matrix ``exp(-2j pi j k / n)`` (complex dtype).

    ``scale`` is ``None`` (no scaling), ``'sqrtn'`` (divide by ``sqrt(n)``, a unitary matrix) or
    ``'n'`` (divide by ``n``).
    """
    n = _size("dft", n)
    if scale not in (None, "sqrtn", "n"):
        raise ValueError(f"dft: scale must be None, 'sqrtn', or 'n'; {scale!r} is not valid.")
    jk = np.outer(np.arange(n), np.arange(n)) % max(n, 1)  # exact phases
    m = np.exp(-2j * np.pi * jk / max(n, 1))
    if scale == "sqrtn":
        m = m / math.sqrt(n)
    elif scale == "n":
        m = m / n
    return _jnp().asarray(m, dtype=dtypes.canonicalize_dtype(np.complex128))


def hadamard(n: int, dtype: Any = int) -> Any:
    """The ``n x n`` Hadamard matrix (Sylvester's construction); ``n`` must be a power of 2.

    ``dtype`` (default ``int``, i.e. the default integer dtype) is the dtype of the result.
    """
    n = _size("hadamard", n, least=None)
    if n < 1 or n & (n - 1):
        raise ValueError("hadamard: n must be a positive integer, and n must be a power of 2")
    h = np.ones((1, 1), np.int64)
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return _jnp().asarray(h, dtype=dtype)


def helmert(n: int, full: bool = False) -> Any:
    """The Helmert matrix of order ``n`` (default float dtype): orthogonal rows, the first (kept
    only when ``full``) constant ``1 / sqrt(n)``; shape ``(n - 1, n)``, or ``(n, n)`` if ``full``."""
    n = _size("helmert", n)
    h = np.tril(np.ones((n, n)), -1) - np.diag(np.arange(n, dtype=np.float64))
    d = np.arange(n) * np.arange(1, n + 1)
    if n:
        h[0] = 1.0
        d[0] = n
    h = h / np.sqrt(np.maximum(d, 1))[:, None]
    return _jnp().asarray(h if full else h[1:], dtype=_float_dtype())


def _exact_ints(name: str, vals: list[list[int]], unsigned: bool) -> Any:
    dt = dtypes.canonicalize_dtype(np.uint64 if unsigned else np.int64)
    info = np.iinfo(dt)
    flat = [v for row in vals for v in row]
    if flat and (min(flat) < info.min or max(flat) > info.max):
        raise ValueError(
            f"{name}: with exact=True the entries do not fit in {dt.name}"
            + ("" if dt.itemsize == 8 else " (enable jax_enable_x64 for 64-bit integers)")
            + "; use exact=False for a floating-point result"
        )
    return _jnp().asarray(np.array(vals, dtype=dt).reshape(len(vals), len(vals)), dtype=dt)


def _to_float(v: int) -> float:
    try:
        return float(v)
    except OverflowError:  # beyond float64: inf, as a floating-point computation would give
        return math.copysign(math.inf, v)


def _floats(vals: list[list[int]]) -> Any:
    n = len(vals)
    host = np.array([[_to_float(v) for v in row] for row in vals]).reshape(n, n)
    with np.errstate(over="ignore"):
        host = host.astype(_float_dtype())
    return _jnp().asarray(host)


def invhilbert(n: int, exact: bool = False) -> Any:
    """Inverse of the ``n x n`` Hilbert matrix, computed exactly in integer arithmetic.

    ``exact=False`` (default) returns it in the default float dtype (entries grow very fast: they
    overflow float32 from ``n = 13`` or so); ``exact=True`` returns the integers in the default
    integer dtype (int32, or int64 with ``jax_enable_x64``) and raises ``ValueError`` when they do
    not fit (SciPy falls back to an object array, which has no JAX counterpart).
    """
    n = _size("invhilbert", n)
    comb = math.comb
    vals = [
        [
            (-1) ** (i + j) * (i + j + 1) * comb(n + i, n - j - 1) * comb(n + j, n - i - 1) * comb(i + j, i) ** 2
            for j in range(n)
        ]
        for i in range(n)
    ]
    return _exact_ints("invhilbert", vals, False) if exact else _floats(vals)


def _check_kind(name: str, kind: str) -> None:
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"{name}: kind must be 'symmetric', 'lower', or 'upper'; got {kind!r}")


def pascal(n: int, kind: str = "symmetric", exact: bool = True) -> Any:
    """The ``n x n`` Pascal matrix of binomial coefficients.

    ``kind='symmetric'``: ``C(i + j, i)``; ``'lower'``: ``C(i, j)``; ``'upper'``: its transpose.
    ``exact=True`` (default) gives the exact integers as the default unsigned dtype (uint32, or
    uint64 with ``jax_enable_x64``; ``ValueError`` if they do not fit); ``exact=False`` gives the
    default float dtype.
    """
    _check_kind("pascal", kind)
    n = _size("pascal", n)
    comb = math.comb
    if kind == "symmetric":
        vals = [[comb(i + j, i) for j in range(n)] for i in range(n)]
    elif kind == "lower":
        vals = [[comb(i, j) for j in range(n)] for i in range(n)]
    else:
        vals = [[comb(j, i) for j in range(n)] for i in range(n)]
    return _exact_ints("pascal", vals, True) if exact else _floats(vals)


def invpascal(n: int, kind: str = "symmetric", exact: bool = True) -> Any:
    """Inverse of ``pascal(n, kind)``, computed exactly in integer arithmetic.

    ``exact=True`` (default) gives the (signed) integers in the default integer dtype (int32, or
    int64 with ``jax_enable_x64``; ``ValueError`` if they do not fit); ``exact=False`` gives the
    default float dtype.
    """
    _check_kind("invpascal", kind)
    n = _size("invpascal", n)
    comb = math.comb
    # inverse of the lower Pascal matrix: (-1)**(i + j) C(i, j)
    low = [[(-1) ** (i + j) * comb(i, j) for j in range(n)] for i in range(n)]
    if kind == "lower":
        vals = low
    elif kind == "upper":
        vals = [[low[j][i] for j in range(n)] for i in range(n)]
    else:
        # pascal(n) = L @ L.T, so its inverse is inv(L).T @ inv(L)
        vals = [[sum(low[k][i] * low[k][j] for k in range(max(i, j), n)) for j in range(n)] for i in range(n)]
    return _exact_ints("invpascal", vals, False) if exact else _floats(vals)


# ---------------------------------------------------------------------------------------------
# factorization helpers


def qr_multiply(
    a: Any,
    c: Any,
    mode: str = "right",
    pivoting: bool = False,
    conjugate: bool = False,
    overwrite_a: bool = False,
    overwrite_c: bool = False,
) -> tuple:
    """QR-decompose ``a`` (economic mode) and multiply its ``Q`` with ``c``.

    ``mode='left'`` returns ``Q @ c`` (``c`` of shape ``(min(M, N), K)`` or ``(min(M, N),)``),
    ``mode='right'`` returns ``c @ Q`` (``c`` of shape ``(K, M)`` or ``(M,)``); ``conjugate``
    uses ``conj(Q)``. Returns ``(CQ, R)``, or ``(CQ, R, P)`` with ``pivoting``. ``overwrite_*``
    are accepted and ignored. Differentiable through ``qr`` (without pivoting).
    """
    from fjax.scipy import linalg as L  # noqa: PLC0415

    jnp = _jnp()
    if mode not in ("left", "right"):
        raise ValueError(f"qr_multiply: mode must be 'left' or 'right', got {mode!r}")
    a, c = _arr("qr_multiply", a), _arr("qr_multiply", c)
    a, c = _util.promote_dtypes_inexact("qr_multiply", a, c)
    if a.ndim != 2:
        raise ValueError(f"qr_multiply: a must be a 2-D array, got shape {tuple(a.shape)}")
    if c.ndim not in (1, 2):
        raise ValueError(f"qr_multiply: c must be a 1-D or 2-D array, got shape {tuple(c.shape)}")
    out = L.qr(a, mode="economic", pivoting=pivoting)
    q, r = out[0], out[1]
    if conjugate:
        q = jnp.conj(q)
    k = min(a.shape)
    if mode == "left":
        if c.shape[0] != k:
            raise ValueError(
                f"qr_multiply: array shapes are not compatible for Q @ c: {tuple(q.shape)} vs {tuple(c.shape)}"
            )
        cq = q @ c
    else:
        if c.shape[-1] != a.shape[0]:
            raise ValueError(
                f"qr_multiply: array shapes are not compatible for c @ Q: {tuple(c.shape)} vs {tuple(q.shape)}"
            )
        cq = c @ q
    return (cq, r, out[2]) if pivoting else (cq, r)


def _abs2(z: Any) -> Any:
    jnp = _jnp()
    return jnp.real(z) * jnp.real(z) + jnp.imag(z) * jnp.imag(z)


def rsf2csf(T: Any, Z: Any, check_finite: bool = True) -> tuple:
    """Convert a real Schur form ``(T, Z)`` (as from ``schur(a)``) to the complex Schur form.

    Each nonzero subdiagonal entry ``T[m, m-1]`` (a 2x2 block of a complex-conjugate eigenvalue
    pair) is removed by a complex Givens rotation applied to ``T`` from both sides and to ``Z``
    from the right, as SciPy does; the result is ``(T2, Z2)`` in the complex dtype with
    ``T2`` upper triangular and ``Z2 @ T2 @ Z2^H == Z @ T @ Z^H``. Written with ``jnp``
    operations (one rotation step per subdiagonal position, a no-op where the entry is negligible),
    so it runs under ``jit`` and ``vmap``; leading dimensions batch. ``check_finite`` is ignored.
    """
    jnp = _jnp()
    T, Z = _arr("rsf2csf", T), _arr("rsf2csf", Z)
    for name, x in (("T", T), ("Z", Z)):
        if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
            raise ValueError(f"rsf2csf: input '{name}' must be square, got shape {tuple(x.shape)}.")
    if T.shape[-1] != Z.shape[-1]:
        raise ValueError(f"rsf2csf: input array shapes must match: Z: {tuple(Z.shape)} vs. T: {tuple(T.shape)}")
    T, Z = _util.promote_dtypes_inexact("rsf2csf", T, Z)
    cdt = dtypes.canonicalize_dtype(np.result_type(T.dtype, np.complex64))
    T, Z = T.astype(cdt), Z.astype(cdt)
    bs = _util.broadcast_shapes("rsf2csf", tuple(T.shape[:-2]), tuple(Z.shape[:-2]))
    n = T.shape[-1]
    T = jnp.broadcast_to(T, bs + (n, n))
    Z = jnp.broadcast_to(Z, bs + (n, n))
    eps = float(np.finfo(cdt).eps)
    for m in range(n - 1, 0, -1):
        a11, a12 = T[..., m - 1, m - 1], T[..., m - 1, m]
        a21, a22 = T[..., m, m - 1], T[..., m, m]
        big = jnp.abs(a21) > eps * (jnp.abs(a11) + jnp.abs(a22))
        # the eigenvalue of the 2x2 block with non-negative imaginary part, less a22; every
        # intermediate is kept finite (and away from sqrt's branch point) where the step is a
        # no-op, so that reverse mode gets no NaNs from the unselected branch
        one = jnp.ones_like(a21)
        half = 0.5 * (a11 - a22)
        root = jnp.sqrt(jnp.where(big, half * half + a12 * a21, one))
        mu = jnp.where(big, half + jnp.where(jnp.imag(root) < 0, -root, root), one)
        sub = jnp.where(big, a21, jnp.zeros_like(a21))
        r = jnp.sqrt(_abs2(mu) + _abs2(sub)).astype(cdt)
        c = mu / r
        s = sub / r
        g = jnp.stack([jnp.stack([jnp.conj(c), s], -1), jnp.stack([-s, c], -1)], -2)
        gh = jnp.conj(jnp.swapaxes(g, -1, -2))
        T = T.at[..., m - 1 : m + 1, m - 1 :].set(g @ T[..., m - 1 : m + 1, m - 1 :])
        T = T.at[..., : m + 1, m - 1 : m + 1].set(T[..., : m + 1, m - 1 : m + 1] @ gh)
        Z = Z.at[..., :, m - 1 : m + 1].set(Z[..., :, m - 1 : m + 1] @ gh)
        T = T.at[..., m, m - 1].set(jnp.zeros((), cdt))
    return T, Z
