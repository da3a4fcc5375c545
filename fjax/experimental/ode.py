"""``jax.experimental.ode``: adaptive Dormand-Prince (RK45) integration with adjoint gradients.

``odeint(func, y0, t, *args)`` integrates ``dy/dt = func(y, t, *args)`` from ``t[0]`` and returns
the solution at every time in ``t``. Steps are chosen by the embedded 4th/5th order error estimate
(Hairer, Norsett & Wanner, *Solving ODEs I*, II.4 for the first step) and outputs between steps are
read off a 4th-order polynomial fitted to each accepted step (Shampine's dense output for DOPRI5).
Reverse mode runs the adjoint system backwards in time (Chen et al. 2018, arXiv:1806.07366, App. C),
so ``grad`` never differentiates through the step-size control.

The state is carried as one flat vector (``fjax.flatten_util.ravel_pytree``); the stepping loop
is a ``lax.while_loop`` per output time inside a ``lax.scan``, all under one ``jit``.
"""

from __future__ import annotations

import functools
import operator
import threading
from collections import OrderedDict
from typing import Any, Callable

import numpy as np

import fjax
import fjax.numpy as jnp
from fjax import _tree_lifted as tu
from fjax import core, lax
from fjax.custom_derivatives import custom_vjp
from fjax.flatten_util import ravel_pytree

__all__ = [
    "abs2",
    "fit_4th_order_polynomial",
    "initial_step_size",
    "interp_fit_dopri",
    "mean_error_ratio",
    "odeint",
    "optimal_step_size",
    "runge_kutta_step",
]

# Dormand-Prince 5(4) tableau: nodes, stage weights (row i gives stage i+1), the 5th-order
# solution weights and the difference between the 5th- and 4th-order weights
_NODES = (1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0, 0.0)
_STAGES = (
    (1 / 5, 0, 0, 0, 0, 0, 0),
    (3 / 40, 9 / 40, 0, 0, 0, 0, 0),
    (44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0),
    (35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0),
)
_B5 = (35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0)
_B4 = (1951 / 21600, 0, 22642 / 50085, 451 / 720, -12231 / 42400, 649 / 6300, 1 / 60)
_BERR = tuple(a - b for a, b in zip(_B5, _B4))
# weights giving y at the middle of a step (Shampine 1986), halved as they act on dt/2
_MID = (
    6025192743 / 30085553152 / 2,
    0,
    51252292925 / 65400821598 / 2,
    -2691868925 / 45128329728 / 2,
    187940372067 / 1594534317056 / 2,
    -1776094331 / 19743644256 / 2,
    11237099 / 235043384 / 2,
)


def _hdot(a: Any, b: Any) -> Any:
    return jnp.dot(a, b, precision=lax.Precision.HIGHEST)


def fit_4th_order_polynomial(y0: Any, y1: Any, y_mid: Any, dy0: Any, dy1: Any, dt: Any) -> tuple:
    """Coefficients (highest power first) of the quartic in s = (t - t0) / dt through y0, y_mid,
    y1 with slopes dy0, dy1 at the ends."""
    h = dt.astype(y0.dtype)
    a = 2.0 * h * (dy1 - dy0) - 8.0 * (y0 + y1) + 16.0 * y_mid
    b = h * (5.0 * dy0 - 3.0 * dy1) + 18.0 * y0 + 14.0 * y1 - 32.0 * y_mid
    c = h * (dy1 - 4.0 * dy0) - 11.0 * y0 - 5.0 * y1 + 16.0 * y_mid
    return a, b, c, h * dy0, y0


def interp_fit_dopri(y0: Any, y1: Any, k: Any, dt: Any) -> Any:
    """The (5, n) quartic interpolating one Dormand-Prince step from its stages ``k`` (7, n)."""
    mid = jnp.asarray(_MID, dtype=y0.dtype)
    y_mid = y0 + dt.astype(y0.dtype) * _hdot(mid, k)
    return jnp.stack(fit_4th_order_polynomial(y0, y1, y_mid, k[0], k[-1], dt))


def _inexact(x: Any) -> Any:
    x = jnp.asarray(x)
    return x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype(jnp.result_type(x.dtype, float))


def initial_step_size(fun: Callable, t0: Any, y0: Any, order: int, rtol: Any, atol: Any, f0: Any) -> Any:
    """First step size as in Hairer, Norsett & Wanner, Sec. II.4."""
    y0, f0 = _inexact(y0), _inexact(f0)
    dtype = jnp.result_type(y0, f0)
    y0, f0 = y0.astype(dtype), f0.astype(dtype)
    scale = (atol + jnp.abs(y0) * rtol).astype(dtype)
    d0 = jnp.linalg.norm(y0 / scale)
    d1 = jnp.linalg.norm(f0 / scale)
    tiny = (d0 < 1e-5) | (d1 < 1e-5)
    h0 = jnp.where(tiny, 1e-6, 0.01 * d0 / d1)
    f1 = fun(y0 + h0.astype(dtype) * f0, t0 + h0)
    d2 = jnp.linalg.norm((f1 - f0) / scale) / h0
    flat = (d1 <= 1e-15) & (d2 <= 1e-15)
    h1 = jnp.where(flat, jnp.maximum(1e-6, h0 * 1e-3), (0.01 / jnp.maximum(d1, d2)) ** (1.0 / (order + 1.0)))
    return jnp.minimum(100.0 * h0, h1)


def runge_kutta_step(func: Callable, y0: Any, f0: Any, t0: Any, dt: Any) -> tuple:
    """One Dormand-Prince step: ``(y1, f1, error_estimate, k)`` with ``k`` the (7, n) stage slopes."""
    nodes = jnp.asarray(_NODES, dtype=dt.dtype)
    stages = jnp.asarray(_STAGES, dtype=f0.dtype)
    h = dt.astype(f0.dtype)

    def stage(i: Any, k: Any) -> Any:
        y_i = y0 + h * _hdot(stages[i - 1], k)
        return k.at[i].set(func(y_i, t0 + dt * nodes[i - 1]))

    k = jnp.zeros((7, f0.shape[0]), f0.dtype).at[0].set(f0)
    k = lax.fori_loop(1, 7, stage, k)
    y1 = h * _hdot(jnp.asarray(_B5, dtype=f0.dtype), k) + y0
    err = h * _hdot(jnp.asarray(_BERR, dtype=f0.dtype), k)
    return y1, k[-1], err, k


def abs2(x: Any) -> Any:
    """``|x|**2`` (real for complex ``x``)."""
    if jnp.iscomplexobj(x):
        return x.real**2 + x.imag**2
    return x**2


def mean_error_ratio(error_estimate: Any, rtol: Any, atol: Any, y0: Any, y1: Any) -> Any:
    """RMS of the error estimate over the mixed tolerance ``atol + rtol max(|y0|, |y1|)``."""
    tol = atol + rtol * jnp.maximum(jnp.abs(y0), jnp.abs(y1))
    return jnp.sqrt(jnp.mean(abs2(error_estimate / tol.astype(error_estimate.dtype))))


def optimal_step_size(
    last_step: Any,
    mean_error_ratio: Any,
    safety: float = 0.9,
    ifactor: float = 10.0,
    dfactor: float = 0.2,
    order: float = 5.0,
) -> Any:
    """Next step size from the error ratio: grows by at most ``ifactor``, and shrinks by at most
    ``dfactor`` after a rejected step (never shrinks after an accepted one)."""
    lower = jnp.where(mean_error_ratio < 1, 1.0, dfactor)
    factor = jnp.minimum(ifactor, jnp.maximum(safety * mean_error_ratio ** (-1.0 / order), lower))
    return jnp.where(mean_error_ratio == 0, last_step * ifactor, last_step * factor)


def _horner(coeffs: Any, s: Any) -> Any:
    # starting from 0 (not coeffs[0]) keeps JAX's polyval's nan for an infinite s
    out = jnp.zeros_like(coeffs[0])
    for c in range(coeffs.shape[0]):
        out = out * s + coeffs[c]
    return out


@functools.partial(custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
def _solve(func: Callable, rtol: float, atol: float, mxstep: Any, hmax: Any, y0: Any, ts: Any, *args: Any) -> Any:
    rhs = lambda y, t: func(y, t, *args)  # noqa: E731

    def to_target(carry: list, target: Any) -> tuple:
        def more(state: list) -> Any:
            i, _, _, t, dt, _, _ = state
            return (t < target) & (i < mxstep) & (dt > 0)

        def step(state: list) -> list:
            i, y, f, t, dt, last_t, coeffs = state
            y1, f1, err, k = runge_kutta_step(rhs, y, f, t, dt)
            ratio = mean_error_ratio(err, rtol, atol, y, y1)
            new_coeffs = interp_fit_dopri(y, y1, k, dt)
            dt_next = jnp.clip(optimal_step_size(dt, ratio), min=0.0, max=hmax)
            ok = ratio <= 1.0
            accepted = [y1, f1, t + dt, t, new_coeffs]
            kept = [y, f, t, last_t, coeffs]
            y, f, t, last_t, coeffs = [jnp.where(ok, a, b) for a, b in zip(accepted, kept)]
            return [i + 1, y, f, t, dt_next, last_t, coeffs]

        _, *carry = lax.while_loop(more, step, [0, *carry])
        _, _, t, _, last_t, coeffs = carry
        s = (target - last_t) / (t - last_t)
        return carry, _horner(coeffs, s.astype(coeffs.dtype))

    f0 = rhs(y0, ts[0])
    dt0 = jnp.clip(initial_step_size(rhs, ts[0], y0, 4, rtol, atol, f0), min=0.0, max=hmax)
    coeffs0 = jnp.stack([y0] * 5)
    _, ys = lax.scan(to_target, [y0, f0, ts[0], dt0, ts[0], coeffs0], ts[1:])
    return jnp.concatenate([y0[None], ys])


def _solve_fwd(func: Callable, rtol: float, atol: float, mxstep: Any, hmax: Any, y0: Any, ts: Any, *args: Any) -> tuple:
    ys = _solve(func, rtol, atol, mxstep, hmax, y0, ts, *args)
    return ys, (ys, ts, args)


def _solve_bwd(func: Callable, rtol: float, atol: float, mxstep: Any, hmax: Any, res: tuple, g: Any) -> tuple:
    ys, ts, args = res

    def adjoint_rhs(state: tuple, s: Any, *args: Any) -> tuple:
        # integrated in reversed time s = -t: y runs backwards and the adjoints pick up the
        # vector-Jacobian products a^T df/dy, a^T df/dt, a^T df/dargs
        y, a = state[0], state[1]
        dy, pullback = fjax.vjp(func, y, -s, *args)
        return (-dy, *pullback(a))

    def back_one(carry: tuple, i: Any) -> tuple:
        a, t0_bar, args_bar = carry
        # moving the output time t_i moves y(t_i) along f
        t_bar = jnp.dot(func(ys[i], ts[i], *args), g[i]).real
        t0_bar = t0_bar - t_bar
        state = (ys[i], a, t0_bar, args_bar)
        out = odeint(
            adjoint_rhs,
            state,
            jnp.stack([-ts[i], -ts[i - 1]]),
            *args,
            rtol=rtol,
            atol=atol,
            mxstep=mxstep,
            hmax=hmax,
        )
        _, a, t0_bar, args_bar = tu.tree_map(operator.itemgetter(1), out)
        return (a + g[i - 1], t0_bar, args_bar), t_bar

    init = (g[-1], jnp.zeros((), ts.dtype), tu.tree_map(jnp.zeros_like, args))
    (y_bar, t0_bar, args_bar), ts_bar_rev = lax.scan(back_one, init, jnp.arange(len(ts) - 1, 0, -1))
    ts_bar = jnp.concatenate([t0_bar[None].astype(ts_bar_rev.dtype), ts_bar_rev[::-1]])
    return (y_bar, ts_bar, *args_bar)


_solve.defvjp(_solve_fwd, _solve_bwd)


def _raveled(func: Callable, unravel: Callable) -> Callable:
    def flat_func(y: Any, t: Any, *args: Any) -> Any:
        return ravel_pytree(func(unravel(y), t, *args))[0]

    return flat_func


@functools.partial(fjax.jit, static_argnums=(0, 1, 2, 3, 4))
def _odeint_jit(func: Callable, rtol: float, atol: float, mxstep: Any, hmax: Any, y0: Any, ts: Any, *args: Any) -> Any:
    y0_flat, unravel = ravel_pytree(y0)
    ys = _solve(_raveled(func, unravel), rtol, atol, mxstep, hmax, y0_flat, ts, *args)
    return fjax.vmap(unravel)(ys)


def _value_key(i: int, c: Any) -> tuple:
    try:
        a = np.asarray(c)
        return (i, a.dtype.str, a.shape, a.tobytes())
    except Exception:  # e.g. typed PRNG keys: equal only to themselves
        return (i, "id", id(c))


class _Converted:
    """``func`` as a jaxpr with its floating-point closure hoisted into trailing arguments.
    Equal (and equally hashed) when the programs are, so ``jit``'s cache is reused by a
    closure that ``odeint`` converts again on every call."""

    def __init__(self, jaxpr: Any, kept: list, hoisted_at: list, in_tree: Any, out_tree: Any):
        self.jaxpr, self.kept, self.hoisted_at = jaxpr, kept, hoisted_at
        self.in_tree, self.out_tree = in_tree, out_tree
        self._key = (str(jaxpr), tuple(_value_key(i, c) for i, c in kept), tuple(hoisted_at), in_tree, out_tree)
        self._hash = hash(self._key)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Converted) and self._key == other._key

    def __call__(self, *args_and_consts: Any) -> Any:
        n = len(self.hoisted_at)
        args, hoisted = args_and_consts[: len(args_and_consts) - n], args_and_consts[len(args_and_consts) - n :]
        flat = tu.tree_leaves(args)
        consts: list = [None] * (len(self.kept) + n)
        for i, c in self.kept:
            consts[i] = c
        for i, c in zip(self.hoisted_at, hoisted):
            consts[i] = c
        return tu.tree_unflatten(self.out_tree, core.eval_jaxpr(self.jaxpr, consts, *flat))


def _convert(func: Callable, *example_args: Any) -> tuple[_Converted, list]:
    closed, out_shape = fjax.make_jaxpr(func, return_shape=True)(*example_args)
    hoisted_at, hoisted, kept = [], [], []
    for i, c in enumerate(closed.consts):
        # tracers of an enclosing transform must be arguments; concrete float arrays are hoisted
        # too so that a closure over changing values reuses one compiled program
        if isinstance(c, core.Tracer) or jnp.issubdtype(core.get_aval(c).dtype, jnp.inexact):
            hoisted_at.append(i)
            hoisted.append(c)
        else:
            kept.append((i, c))
    in_tree = tu.tree_structure(example_args)
    conv = _Converted(closed.jaxpr, kept, hoisted_at, in_tree, tu.tree_structure(out_shape))
    return _interned(conv), hoisted


_converted: OrderedDict = OrderedDict()
_converted_lock = threading.Lock()


def _interned(conv: _Converted) -> _Converted:
    # the first equal program stands for all: jit's cache entry is keyed by it (bounded LRU)
    with _converted_lock:
        hit = _converted.get(conv)
        if hit is not None:
            _converted.move_to_end(conv)
            return hit
        _converted[conv] = conv
        if len(_converted) > 128:
            _converted.popitem(last=False)
        return conv


def _is_jaxtype(x: Any) -> bool:
    if isinstance(x, (core.Tracer, core.Array, np.ndarray, np.generic)):
        return np.dtype(x.dtype).kind in "biufc" or str(x.dtype).startswith(("bfloat16", "float8", "key"))
    return isinstance(x, (bool, int, float, complex))


def odeint(
    func: Callable,
    y0: Any,
    t: Any,
    *args: Any,
    rtol: float = 1.4e-8,
    atol: float = 1.4e-8,
    mxstep: Any = jnp.inf,
    hmax: Any = jnp.inf,
) -> Any:
    """Solve ``dy/dt = func(y, t, *args)`` from ``y(t[0]) = y0`` with adaptive Dormand-Prince steps.

    ``y0`` is an array or pytree of arrays; ``t`` a 1-D array of increasing float times. Returns
    the solution at each time in ``t`` (the pytree of ``y0`` with a leading axis ``len(t)``).
    ``rtol``/``atol`` bound the local error, ``mxstep`` the steps per output time and ``hmax`` the
    step size. Differentiable in ``y0``, ``t`` and ``args`` by the adjoint method.
    """
    for leaf in tu.tree_leaves(args):
        if not _is_jaxtype(leaf):
            raise TypeError(f"The contents of odeint *args must be arrays or scalars, but got {leaf}.")
    if not hasattr(t, "dtype"):
        t = jnp.asarray(t)
    if not jnp.issubdtype(t.dtype, jnp.floating):
        raise TypeError(f"t must be an array of floats, but got {t}.")
    if np.ndim(t) != 1:
        raise ValueError(f"odeint: t must be a 1-D array of times, got shape {np.shape(t)}")
    for leaf in tu.tree_leaves(y0):
        dt = jnp.result_type(leaf)
        if not jnp.issubdtype(dt, jnp.inexact):
            raise TypeError(f"odeint: y0 must hold floating-point or complex arrays, but got dtype {dt}")
    converted, consts = _convert(func, y0, t[0], *args)
    return _odeint_jit(converted, rtol, atol, mxstep, hmax, y0, t, *args, *consts)
