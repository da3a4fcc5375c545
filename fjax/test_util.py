"""Gradient checking, with the semantics of ``jax.test_util.check_grads``.

``check_grads(f, args, order, modes=("fwd", "rev"))`` checks forward mode against central
differences, reverse mode against forward mode through the transposition identity
``<u, J v> = <J^T u, v>``, and recurses to higher orders by differentiating the derivative
functions themselves.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable, Sequence

import numpy as np

from fjax import api, core
from fjax import tree_util as tu
from fjax.dtypes import kind as _dkind

EPS = 1e-4

default_gradient_tolerance = {
    np.dtype(np.float16): 1e-2,
    np.dtype(np.float32): 2e-3,
    np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 1e-3,
    np.dtype(np.complex128): 1e-5,
}


def _dtype(x: Any) -> np.dtype:
    return np.dtype(getattr(x, "dtype", np.asarray(x).dtype))


def _tol(tol: float | dict | None, leaves: Sequence[Any]) -> float:
    if isinstance(tol, (int, float)):
        return float(tol)
    table = dict(default_gradient_tolerance)
    if isinstance(tol, dict):
        table.update({np.dtype(k): v for k, v in tol.items()})
    vals = [table.get(_dtype(x), 1e-5) for x in leaves if _dkind(_dtype(x)) in "fc"]
    return max(vals) if vals else 1e-5


def _np(x: Any) -> np.ndarray:
    return np.asarray(x)


def _allclose(name: str, x: Any, y: Any, atol: float, rtol: float, err_msg: str) -> None:
    xl, xt = tu.tree_flatten(x)
    yl, yt = tu.tree_flatten(y)
    if xt != yt:
        raise AssertionError(f"{err_msg}: {name} tree structures differ: {xt} vs {yt}")
    for a, b in zip(xl, yl):
        a, b = _np(a), _np(b)
        if _dkind(a.dtype) == "V" or _dkind(b.dtype) == "V":  # float0
            continue
        if a.shape != b.shape:
            raise AssertionError(f"{err_msg}: {name} shapes differ: {a.shape} vs {b.shape}")
        np.testing.assert_allclose(
            a.astype(np.complex128 if _dkind(a.dtype) == "c" else np.float64),
            b.astype(np.complex128 if _dkind(b.dtype) == "c" else np.float64),
            atol=atol,
            rtol=rtol,
            err_msg=f"{err_msg}: {name} mismatch",
        )


def _rand_like(rng: np.random.RandomState, x: Any) -> Any:
    a = _np(x)
    if _dkind(a.dtype) not in "fc":
        return np.zeros(a.shape, dtype=np.dtype([("float0", np.void, 0)]))
    r = rng.randn(*a.shape)
    if _dkind(a.dtype) == "c":
        r = r + 1j * rng.randn(*a.shape)
    return core.to_array(np.asarray(r, dtype=a.dtype))


def _scale_add(x: Any, t: Any, eps: float) -> Any:
    a = _np(x)
    if _dkind(a.dtype) not in "fc":
        return x
    return core.to_array(np.asarray(a + eps * _np(t), dtype=a.dtype))


def numerical_jvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any], eps: float = EPS) -> Any:
    """Central-difference directional derivative of ``f`` at ``primals`` along ``tangents``."""
    plus = tu.tree_map(partial(_scale_add, eps=eps), list(primals), list(tangents))
    minus = tu.tree_map(partial(_scale_add, eps=-eps), list(primals), list(tangents))
    f_pos = f(*plus)
    f_neg = f(*minus)

    def diff(a: Any, b: Any) -> Any:
        a, b = _np(a), _np(b)
        if _dkind(a.dtype) not in "fc":
            return np.zeros(a.shape, np.dtype([("float0", np.void, 0)]))
        return (a.astype(np.float64 if _dkind(a.dtype) == "f" else np.complex128) - b) / (2 * eps)

    return tu.tree_map(diff, f_pos, f_neg)


def _vdot(x: Any, y: Any) -> complex:
    total = 0.0
    for a, b in zip(tu.tree_leaves(x), tu.tree_leaves(y)):
        a, b = _np(a), _np(b)
        if _dkind(a.dtype) == "V" or _dkind(b.dtype) == "V":
            continue
        total = total + np.vdot(a.astype(np.complex128).ravel(), b.astype(np.complex128).ravel())
    # JAX compares real parts: for complex inputs/outputs the pairing <u, J v> is real-linear
    return np.real(total)


def _conj_tree(x: Any) -> Any:
    def c(a: Any) -> Any:
        if getattr(a, "dtype", None) is not None and _dkind(np.dtype(a.dtype)) == "c":
            return core.to_array(np.conj(_np(a)))
        return a

    return tu.tree_map(c, x)


def check_jvp(
    f: Callable,
    f_jvp: Callable,
    args: Sequence[Any],
    atol: Any = None,
    rtol: Any = None,
    eps: float = EPS,
    err_msg: str = "",
) -> None:
    """Check ``f_jvp(args, tangents)`` against central differences of ``f``."""
    rng = np.random.RandomState(0)
    leaves = tu.tree_leaves(args)
    atol = _tol(atol, leaves)
    rtol = _tol(rtol, leaves)
    tangents = tu.tree_map(partial(_rand_like, rng), list(args))
    v_out, t_out = f_jvp(tuple(args), tuple(tangents))
    v_expected = f(*args)
    _allclose("primal output", v_out, v_expected, atol, rtol, err_msg or "JVP")
    t_num = numerical_jvp(f, args, tangents, eps)
    _allclose("tangent", t_out, t_num, atol, rtol, err_msg or "JVP")


def check_vjp(
    f: Callable,
    f_vjp: Callable,
    args: Sequence[Any],
    atol: Any = None,
    rtol: Any = None,
    eps: float = EPS,
    err_msg: str = "",
) -> None:
    """Check ``f_vjp`` against forward differences through ``<u, J v> = <J^T u, v>``."""
    rng = np.random.RandomState(1)
    leaves = tu.tree_leaves(args)
    atol = _tol(atol, leaves)
    rtol = _tol(rtol, leaves)
    v_out, vjp_fn = f_vjp(*args)
    _allclose("primal output", v_out, f(*args), atol, rtol, err_msg or "VJP")
    tangents = tu.tree_map(partial(_rand_like, rng), list(args))
    cts = tu.tree_map(partial(_rand_like, rng), v_out)
    # JAX's convention: a VJP maps conjugated cotangents (vjp(conj(u)) is conj(J^H u)), so the
    # pairing conjugates on the way in and out, as jax.test_util.check_vjp does
    cts_in = _conj_tree(vjp_fn(_conj_tree(cts)))
    t_num = numerical_jvp(f, args, tangents, eps)
    ip = _vdot(cts_in, tangents)
    ip_expected = _vdot(cts, t_num)
    np.testing.assert_allclose(
        complex(ip), complex(ip_expected), atol=atol, rtol=rtol, err_msg=f"{err_msg or 'VJP'}: <J^T u, v> != <u, J v>"
    )


def check_grads(
    f: Callable,
    args: Sequence[Any],
    order: int,
    modes: Sequence[str] = ("fwd", "rev"),
    atol: Any = None,
    rtol: Any = None,
    eps: float | None = None,
) -> None:
    """Check ``f``'s derivatives up to ``order`` in the given modes (JAX's semantics).

    ``f`` takes ``*args`` (pytrees of floating arrays); tolerances default per dtype
    (float32 2e-3, float64 1e-5).
    """
    if eps is None:
        # central differences in float32 lose about eps_mach/eps of relative accuracy: use a
        # wider step for 32-bit and narrower inputs (JAX's EPS=1e-4 is meant for float64)
        low = any(
            _dkind(_dtype(x)) in "fc" and _dtype(x).itemsize <= 4 + 4 * (_dkind(_dtype(x)) == "c")
            for x in tu.tree_leaves(args)
        )
        eps = 1e-3 if low else EPS
    for m in modes:
        if m not in ("fwd", "rev"):
            raise ValueError(f"check_grads: unknown mode {m!r}; use 'fwd' and/or 'rev'")
    args = tuple(args)

    def _check(f: Callable, args: tuple, order: int, err_msg: str = "") -> None:
        if "fwd" in modes:
            msg = f"JVP of {err_msg}" if err_msg else "JVP"
            check_jvp(f, partial(api.jvp, f), args, atol, rtol, eps, msg)
            if order > 1:
                _check(partial(api.jvp, f), (args, args), order - 1, msg)
        if "rev" in modes:
            msg = f"VJP of {err_msg}" if err_msg else "VJP"
            check_vjp(f, partial(api.vjp, f), args, atol, rtol, eps, msg)
            if order > 1:

                def f_vjp(*a: Any) -> Any:
                    out, vjp_fn = api.vjp(f, *a)
                    return vjp_fn(out)

                _check(f_vjp, args, order - 1, msg)

    _check(f, args, order)
