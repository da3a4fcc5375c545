"""``jnp.i0``, ``jnp.kaiser``, ``jnp.polyfit`` and ``jnp.roots``, following JAX's definitions.

``i0`` is ``exp(|x|) * bessel_i0e(|x|)`` with the derivative ``exp(|x|) * bessel_i1e(x)`` (a
custom JVP, as JAX, so it is exact at 0 and composes to any order); ``polyfit`` is a scaled
least-squares fit of the Vandermonde matrix; ``roots`` are the eigenvalues of the companion
matrix (``strip_zeros=False`` works under jit: roots that belong to leading zeros become NaN).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fjax import core, dtypes, lax
from fjax.custom_derivatives import custom_jvp
from fjax.numpy import _creation as C
from fjax.numpy import _ufuncs as U
from fjax.numpy import _util

__all__ = ["i0", "kaiser", "place", "polyfit", "put", "roots", "spacing"]


@custom_jvp
def _i0(x: Any) -> Any:
    ax = lax.abs(x)
    return lax.mul(lax.exp(ax), lax.bessel_i0e(ax))


@_i0.defjvp
def _i0_jvp(primals: tuple, tangents: tuple) -> tuple:
    (x,), (t,) = primals, tangents
    return _i0(x), t * lax.mul(lax.exp(lax.abs(x)), lax.bessel_i1e(x))


def i0(x: Any) -> Any:
    """Modified Bessel function of the first kind, order 0, elementwise (as ``jnp.i0``)."""
    _util.check_arraylike("i0", x)
    (x,) = _util.promote_dtypes_inexact("i0", x)
    if dtypes.kind(np.dtype(x.dtype)) == "c":
        raise ValueError("i0 does not support complex-valued inputs.")
    return _i0(x)


def kaiser(M: int, beta: Any) -> Any:
    """The Kaiser window of ``M`` points with shape parameter ``beta`` (as ``jnp.kaiser``)."""
    M = int(core.concrete_or_error(M, "M argument of jnp.kaiser"))
    dt = dtypes.default_float_dtype()
    if M <= 1:
        return C.ones(max(M, 0), dt)
    n = C.arange(0, M, dtype=dt)
    alpha = 0.5 * (M - 1)
    beta = C.asarray(beta, dt)
    return i0(beta * U.sqrt(1 - ((n - alpha) / alpha) ** 2)) / i0(beta)


def polyfit(
    x: Any, y: Any, deg: int, rcond: float | None = None, full: bool = False, w: Any = None, cov: Any = False
) -> Any:
    """Least-squares fit of a polynomial of degree ``deg`` to points ``(x, y)`` (as ``jnp.polyfit``):
    coefficients highest power first; ``y`` may be 2-D (one fit per column)."""
    import fjax.numpy as jnp  # noqa: PLC0415  (this module is part of it)
    from fjax.numpy import linalg  # noqa: PLC0415

    _util.check_arraylike("polyfit", x, y)
    deg = int(core.concrete_or_error(deg, "deg must be int"))
    order = deg + 1
    if deg < 0:
        raise ValueError("expected deg >= 0")
    x, y = _util.promote_dtypes_inexact("polyfit", x, y)
    if x.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if x.size == 0:
        raise TypeError("expected non-empty vector for x")
    if y.ndim < 1 or y.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if x.shape[0] != y.shape[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = len(x) * float(dtypes.finfo(x.dtype).eps)
    rcond = float(core.concrete_or_error(rcond, "rcond must be float"))
    lhs = jnp.vander(x, order)
    rhs = y
    if w is not None:
        _util.check_arraylike("polyfit", w)
        (w,) = _util.promote_dtypes_inexact("polyfit", w)
        if w.ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if w.shape[0] != y.shape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = lhs * w[:, None]
        rhs = rhs * (w[:, None] if rhs.ndim == 2 else w)
    # scale the columns to improve the condition number, as numpy and JAX do
    scale = U.sqrt((lhs * lhs).sum(axis=0))
    lhs = lhs / scale[None, :]
    c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
    c = (c.T / scale).T
    if full:
        return c, resids, rank, s, C.asarray(rcond)
    if cov:
        vbase = linalg.inv(lhs.T @ lhs) / (scale[:, None] * scale[None, :])
        if cov == "unscaled":
            fac: Any = 1
        else:
            if len(x) <= order:
                raise ValueError("the number of data points must exceed order to scale the covariance matrix")
            fac = (resids / (len(x) - order))[0]
        return (c, vbase * fac) if y.ndim == 1 else (c, vbase[:, :, None] * fac)
    return c


def _complex_dtype(dt: np.dtype) -> np.dtype:
    return dtypes.result_type(dt, np.complex64)


def _roots_no_zeros(p: Any) -> Any:
    from fjax.numpy import linalg  # noqa: PLC0415

    if p.size < 2:
        return C.asarray(np.array([], _complex_dtype(p.dtype)))
    a = C.diag(C.ones((p.size - 2,), p.dtype), -1)
    a = a.at[0, :].set(-p[1:] / p[0])
    return linalg.eigvals(a)


def roots(p: Any, *, strip_zeros: bool = True) -> Any:
    """Roots of the polynomial with coefficients ``p`` (highest power first), as ``jnp.roots``:
    the eigenvalues of its companion matrix, complex. ``strip_zeros=False`` keeps the output
    size fixed (usable under jit): the roots belonging to leading zeros are NaN."""
    import fjax.numpy as jnp  # noqa: PLC0415  (this module is part of it)

    _util.check_arraylike("roots", p)
    (p_arr,) = _util.promote_dtypes_inexact("roots", p)
    p_arr = jnp.atleast_1d(p_arr)
    if p_arr.ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    if p_arr.size < 2:
        return C.asarray(np.array([], _complex_dtype(p_arr.dtype)))
    is_zero = U.equal(p_arr, 0)
    lead = U.where(jnp.all(is_zero), len(p_arr), jnp.argmin(is_zero))
    if strip_zeros:
        lead = int(
            core.concrete_or_error(
                lead,
                "The error occurred in the jnp.roots() function. To use this within a JIT-compiled context, "
                "pass strip_zeros=False, but be aware that leading zeros will result in some returned roots "
                "being set to NaN.",
            )
        )
        return _roots_no_zeros(p_arr[lead:])
    p_arr = U.where(len(p_arr) == lead, C.ones_like(p_arr), p_arr)  # an all-zero p would make LAPACK fail
    r = _roots_no_zeros(jnp.roll(p_arr, -lead))
    r = lax.sort_key_val(U.equal(r, 0), r)[1]  # the zero roots (from the rolled-in zeros) go last
    nan = np.array(complex(np.nan, np.nan), r.dtype)
    return U.where(C.arange(r.size) < r.size - lead, r, nan)


def spacing(x: Any, /) -> Any:
    """Distance from ``x`` to the adjacent float away from zero, step for step as ``jnp.spacing``
    (float16 always steps toward +inf, as JAX does to follow numpy)."""
    (arr,) = _util.promote_dtypes_inexact("spacing", x)
    if dtypes.kind(np.dtype(arr.dtype)) == "c":
        raise ValueError("jnp.spacing is not defined for complex inputs.")
    inf = C.full_like(arr, np.inf)
    if arr.dtype == np.float16:
        return lax.sub(lax.nextafter(arr, inf), arr)
    result = lax.sub(lax.nextafter(arr, U.copysign(inf, arr)), arr)
    tiny = C.full_like(arr, dtypes.finfo(arr.dtype).smallest_subnormal)
    return U.where(U.equal(result, 0), U.copysign(tiny, arr), result)


def _tile_to_size(v: Any, n: int) -> Any:
    import fjax.numpy as jnp  # noqa: PLC0415

    reps = -(-n // v.size) if v.size else 0
    return jnp.tile(v, reps)[:n] if reps > 1 else v[:n]


def place(arr: Any, mask: Any, vals: Any, *, inplace: bool = True) -> Any:
    """``arr`` with its entries where ``mask`` is true replaced by ``vals`` (repeated as needed),
    as ``jnp.place``; JAX arrays are immutable, so ``inplace=False`` is required."""
    import fjax.numpy as jnp  # noqa: PLC0415

    _util.check_arraylike("place", arr, mask, vals)
    data, mask_arr, vals_arr = jnp.asarray(arr), jnp.asarray(mask).astype(bool), jnp.ravel(jnp.asarray(vals))
    if inplace:
        raise ValueError(
            "jax.numpy.place cannot modify arrays in-place, because JAX arrays are immutable. "
            "Pass inplace=False to instead return an updated array."
        )
    if data.size == 0 or vals_arr.size == 0:
        return data
    if mask_arr.shape != data.shape:
        raise ValueError(f"place: mask of shape {mask_arr.shape} does not match arr of shape {data.shape}")
    indices = jnp.where(mask_arr.ravel(), size=mask_arr.size, fill_value=mask_arr.size)[0]
    vals_arr = _tile_to_size(vals_arr.astype(data.dtype), indices.size)
    return data.ravel().at[indices].set(vals_arr, mode="drop").reshape(data.shape)


def put(a: Any, ind: Any, v: Any, mode: str | None = None, *, inplace: bool = True) -> Any:
    """``a`` with the flat positions ``ind`` set to ``v`` (repeated as needed), as ``jnp.put``;
    ``inplace=False`` is required."""
    import fjax.numpy as jnp  # noqa: PLC0415

    _util.check_arraylike("put", a, ind, v)
    arr, ind_arr, v_arr = jnp.asarray(a), jnp.ravel(jnp.asarray(ind)), jnp.ravel(jnp.asarray(v))
    if inplace:
        raise ValueError(
            "jax.numpy.put cannot modify arrays in-place, because JAX arrays are immutable. "
            "Pass inplace=False to instead return an updated array."
        )
    if mode is None:
        scatter_mode = "drop"
    elif mode == "clip":
        ind_arr, scatter_mode = U.clip(ind_arr, 0, arr.size - 1), "promise_in_bounds"
    elif mode == "wrap":
        ind_arr, scatter_mode = ind_arr % arr.size, "promise_in_bounds"
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
    else:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got {mode=}")
    if ind_arr.size == 0 or v_arr.size == 0:
        return arr
    v_arr = _tile_to_size(v_arr.astype(arr.dtype), ind_arr.size)
    return arr.ravel().at[ind_arr].set(v_arr, mode=scatter_mode).reshape(arr.shape)
