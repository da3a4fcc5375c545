"""The primitive rules of ``fjax.experimental.jet``.

A rule maps the primal inputs and their Taylor terms (plain coefficients ``u[1..K]`` of
``u(t) = u[0] + u[1] t + ... + u[K] t**K``) to the output's. Most nonlinear rules use the
recurrence that follows from an ODE the function satisfies: for ``v = g(u)`` with
``v' = c u'``, matching the coefficients of ``t v'(t) = c(t) * t u'(t)`` gives
``v[k] = (1/k) sum_{j=1..k} j u[j] c[k-j]``, where ``c`` needs only ``K - 1`` terms.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

import numpy as np

from fjax import core, dtypes, lax
from fjax import numpy as jnp
from fjax.experimental.jet import _accepts_none, jet_fn, jet_rules, zero_series

# ---------------------------------------------------------------------------------------------
# rule families


def zero_prop(prim: core.Primitive, primals_in: list, series_in: list, **params: Any) -> tuple:
    """A piecewise-constant primitive: no Taylor terms."""
    return prim.bind(*primals_in, **params), zero_series


def defzero(prim: core.Primitive) -> None:
    """Register ``prim`` as piecewise constant (its outputs carry no series)."""
    jet_rules[prim] = partial(zero_prop, prim)


def linear_prop(prim: core.Primitive, primals_in: list, series_in: list, **params: Any) -> tuple:
    """A primitive linear in all its inputs: applied to each order's terms."""
    out = prim.bind(*primals_in, **params)
    terms = [prim.bind(*ts, **params) for ts in zip(*series_in)]
    if prim.multiple_results:
        terms = [list(t) for t in zip(*terms)] if terms else [[] for _ in out]
    return out, terms


def deflinear(prim: core.Primitive) -> None:
    """Register ``prim`` as linear: each order's terms go through ``prim`` itself."""
    jet_rules[prim] = partial(linear_prop, prim)


def _chain(u: list, c: list, k: int) -> Any:
    """``(1/k) sum_{j=1..k} j u[j] c[k-j]``: term k of ``v`` where ``v' = c u'``."""
    acc = None
    for j in range(1, k + 1):
        term = u[j] * c[k - j] if j == k else (j / k) * u[j] * c[k - j]
        acc = term if acc is None else acc + term
    return acc


def _cauchy(a: list, b: list, k: int, start: int = 0) -> Any:
    """``sum_{j=start..k} a[j] b[k-j]``."""
    acc = None
    for j in range(start, k + 1):
        term = a[j] * b[k - j]
        acc = term if acc is None else acc + term
    return acc


def deriv_prop(prim: core.Primitive, deriv: Callable, primals_in: list, series_in: list, **params: Any) -> tuple:
    """A unary primitive with derivative ``deriv`` (an fjax function, jetted to order K-1)."""
    (x,), (series,) = primals_in, series_in
    order = len(series)
    out = prim.bind(x, **params)
    c0, cs = jet_fn(deriv, [x], [series[:-1]])
    c, u = [c0] + cs, [x] + list(series)
    return out, [_chain(u, c, k) for k in range(1, order + 1)]


def def_deriv(prim: core.Primitive, deriv: Callable) -> None:
    """Register a unary ``prim`` by its first derivative ``deriv`` (an fjax function)."""
    jet_rules[prim] = partial(deriv_prop, prim, deriv)


def def_comp(prim: core.Primitive, comp: Callable) -> None:
    """A primitive expressed as a composition of primitives that have rules."""

    def rule(primals_in: list, series_in: list, **_: Any) -> tuple:
        return jet_fn(comp, primals_in, series_in)

    jet_rules[prim] = rule


def _ode_rule(prim: core.Primitive, c_next: Callable, primals_in: list, series_in: list, **params: Any) -> tuple:
    """``v = g(u)`` with ``v' = c u'`` where ``c`` is a function of ``v`` (and ``u[0]``):
    ``c_next(v, u, c, k)`` gives ``c[k]`` from ``v[0..k]``."""
    (x,), (series,) = primals_in, series_in
    order = len(series)
    u = [x] + list(series)
    v = [prim.bind(x, **params)]
    c = [c_next(v, u, [], 0)]
    for k in range(1, order + 1):
        v.append(_chain(u, c, k))
        if k < order:
            c.append(c_next(v, u, c, k))
    return v[0], v[1:]


def def_ode(prim: core.Primitive, c_next: Callable) -> None:
    """Register a unary ``prim`` whose derivative is a function of its value (see ``_ode_rule``)."""
    jet_rules[prim] = partial(_ode_rule, prim, c_next)


# ---------------------------------------------------------------------------------------------
# zero and linear rules

for _p in [
    lax.eq_p,
    lax.ne_p,
    lax.lt_p,
    lax.le_p,
    lax.gt_p,
    lax.ge_p,
    lax.not_p,
    lax.and_p,
    lax.or_p,
    lax.xor_p,
    lax.floor_p,
    lax.ceil_p,
    lax.round_p,
    lax.sign_p,
    lax.stop_gradient_p,
    lax.is_finite_p,
    lax.shift_left_p,
    lax.shift_right_arithmetic_p,
    lax.shift_right_logical_p,
    lax.argmax_p,
    lax.argmin_p,
    lax.population_count_p,
    lax.clz_p,
    lax.reduce_and_p,
    lax.reduce_or_p,
    lax.reduce_xor_p,
]:
    defzero(_p)

for _p in [
    lax.neg_p,
    lax.real_p,
    lax.imag_p,
    lax.conj_p,
    lax.add_p,
    lax.add_any_p,
    lax.sub_p,
    lax.broadcast_in_dim_p,
    lax.concatenate_p,
    lax.pad_p,
    lax.reshape_p,
    lax.squeeze_p,
    lax.rev_p,
    lax.transpose_p,
    lax.slice_p,
    lax.reduce_sum_p,
    lax.cumsum_p,
    lax.fft_p,
    lax.reduce_precision_p,
]:
    deflinear(_p)


def _register_name() -> None:
    from fjax.checkpoint import name_p

    deflinear(name_p)


_register_name()


def _convert_rule(primals_in: list, series_in: list, *, new_dtype: Any, **params: Any) -> tuple:
    (x,), (series,) = primals_in, series_in
    out = lax.convert_element_type_p.bind(x, new_dtype=new_dtype, **params)
    if dtypes.kind(np.dtype(new_dtype)) not in "fc":
        return out, zero_series  # rounding to integers or booleans is piecewise constant
    return out, [lax.convert_element_type_p.bind(t, new_dtype=new_dtype, **params) for t in series]


jet_rules[lax.convert_element_type_p] = _convert_rule


def _operand_linear(prim: core.Primitive, linear: tuple[int, ...]) -> Callable:
    """Linear in the inputs at positions ``linear``; the others (indices) are constants."""

    def rule(primals_in: list, series_in: list, **params: Any) -> tuple:
        out = prim.bind(*primals_in, **params)
        order = len(series_in[linear[0]])
        terms = []
        for k in range(order):
            args = [series_in[i][k] if i in linear else p for i, p in enumerate(primals_in)]
            terms.append(prim.bind(*args, **params))
        return out, terms

    return rule


jet_rules[lax.dynamic_slice_p] = _operand_linear(lax.dynamic_slice_p, (0,))
jet_rules[lax.dynamic_update_slice_p] = _operand_linear(lax.dynamic_update_slice_p, (0, 1))
jet_rules[lax.gather_p] = _operand_linear(lax.gather_p, (0,))
jet_rules[lax.scatter_add_p] = _operand_linear(lax.scatter_add_p, (0, 2))
jet_rules[lax.scatter_p] = _operand_linear(lax.scatter_p, (0, 2))


def _select_n_rule(primals_in: list, series_in: list) -> tuple:
    pred, *cases = primals_in
    out = lax.select_n(pred, *cases)
    return out, [lax.select_n(pred, *ts) for ts in zip(*series_in[1:])]


jet_rules[lax.select_n_p] = _select_n_rule

# ---------------------------------------------------------------------------------------------
# bilinear: mul, dot_general, conv


def _bilinear(prim: core.Primitive) -> Callable:
    def rule(primals_in: list, series_in: list, **params: Any) -> tuple:
        x, y = primals_in
        sx, sy = series_in
        op = partial(prim.bind, **params)
        out = op(x, y)
        if sy is None:
            return out, [op(t, y) for t in sx]
        if sx is None:
            return out, [op(x, t) for t in sy]
        u, w = [x] + sx, [y] + sy
        terms = []
        for k in range(1, len(u)):
            acc = None
            for j in range(k + 1):
                term = op(u[j], w[k - j])
                acc = term if acc is None else acc + term
            terms.append(acc)
        return out, terms

    return rule


for _p in [lax.mul_p, lax.dot_general_p, lax.conv_general_dilated_p]:
    jet_rules[_p] = _bilinear(_p)
    _accepts_none.add(_p)


def _div_rule(primals_in: list, series_in: list) -> tuple:
    x, y = primals_in
    sx, sy = series_in
    out = lax.div(x, y)
    if sy is None:
        return out, [lax.div(t, y) for t in sx]
    order = len(sy)
    u = [x] + (sx if sx is not None else [None] * order)
    w = [y] + sy
    v = [out]
    for k in range(1, order + 1):
        acc = None
        for j in range(k):
            term = v[j] * w[k - j]
            acc = term if acc is None else acc + term
        num = -acc if u[k] is None else u[k] - acc
        v.append(lax.div(num, y))
    return out, v[1:]


jet_rules[lax.div_p] = _div_rule
_accepts_none.add(lax.div_p)

# ---------------------------------------------------------------------------------------------
# powers


def _pow_series(u: list, v0: Any, a: Any, order: int) -> list:
    """Terms of ``v = u**a`` for a constant ``a``: ``k u0 v[k] = sum (a j - (k-j)) u[j] v[k-j]``."""
    v = [v0]
    for k in range(1, order + 1):
        acc = None
        for j in range(1, k + 1):
            term = (a * j - (k - j)) * u[j] * v[k - j]
            acc = term if acc is None else acc + term
        v.append(acc / (k * u[0]))
    return v[1:]


def _integer_pow_rule(primals_in: list, series_in: list, *, y: int) -> tuple:
    (x,), (series,) = primals_in, series_in
    out = lax.integer_pow(x, y)
    if y == 0:
        return out, zero_series

    def by_squaring(z: Any, n: int) -> Any:
        if n < 0:
            return by_squaring(1 / z, -n)
        acc, base = None, z
        while n:
            if n & 1:
                acc = base if acc is None else acc * base
            n >>= 1
            if n:
                base = base * base
        return acc

    _, terms = jet_fn(lambda z: by_squaring(z, y), [x], [series])
    return out, terms


jet_rules[lax.integer_pow_p] = _integer_pow_rule


def _exp_of(w: list, v0: Any, order: int) -> list:
    """Terms of ``exp(w)`` given its primal ``v0``."""
    v = [v0]
    for k in range(1, order + 1):
        v.append(_chain(w, v, k))
    return v[1:]


def _pow_rule(primals_in: list, series_in: list) -> tuple:
    x, y = primals_in
    sx, sy = series_in
    out = lax.pow(x, y)
    if sy is None:
        return out, _pow_series([x] + sx, out, y, len(sx))
    w0, ws = jet_fn(lambda a, b: b * lax.log(a), [x, y], [sx, sy])
    return out, _exp_of([w0] + ws, out, len(sy))


jet_rules[lax.pow_p] = _pow_rule
_accepts_none.add(lax.pow_p)


def _root_rule(prim: core.Primitive, a: float) -> Callable:
    def rule(primals_in: list, series_in: list, **params: Any) -> tuple:
        (x,), (series,) = primals_in, series_in
        out = prim.bind(x, **params)
        return out, _pow_series([x] + series, out, a, len(series))

    return rule


jet_rules[lax.sqrt_p] = _root_rule(lax.sqrt_p, 0.5)
jet_rules[lax.rsqrt_p] = _root_rule(lax.rsqrt_p, -0.5)
jet_rules[lax.cbrt_p] = _root_rule(lax.cbrt_p, 1.0 / 3.0)


def _square_rule(primals_in: list, series_in: list, **params: Any) -> tuple:
    (x,), (series,) = primals_in, series_in
    u = [x] + series
    return lax.square(x), [_cauchy(u, u, k) for k in range(1, len(u))]


jet_rules[lax.square_p] = _square_rule

# ---------------------------------------------------------------------------------------------
# exponentials and logarithms


def _exp_rule(primals_in: list, series_in: list, **params: Any) -> tuple:
    (x,), (series,) = primals_in, series_in
    out = lax.exp_p.bind(x, **params)
    return out, _exp_of([x] + series, out, len(series))


jet_rules[lax.exp_p] = _exp_rule


def _exp2_rule(primals_in: list, series_in: list, **params: Any) -> tuple:
    (x,), (series,) = primals_in, series_in
    out = lax.exp2_p.bind(x, **params)
    ln2 = float(np.log(2.0))
    return out, _exp_of([x] + [ln2 * t for t in series], out, len(series))


jet_rules[lax.exp2_p] = _exp2_rule

# expm1: v' = (v + 1) u'
def_ode(lax.expm1_p, lambda v, u, c, k: v[0] + 1 if k == 0 else v[k])


def _log_like(prim: core.Primitive, shift: float) -> Callable:
    """``v = log(u + shift)``: ``(u0 + shift) v[k] = u[k] - (1/k) sum_{j<k} j v[j] u[k-j]``."""

    def rule(primals_in: list, series_in: list, **params: Any) -> tuple:
        (x,), (series,) = primals_in, series_in
        u = [x] + series
        w0 = x + shift if shift else x
        v = [prim.bind(x, **params)]
        for k in range(1, len(u)):
            acc = None
            for j in range(1, k):
                term = (j / k) * v[j] * u[k - j]
                acc = term if acc is None else acc + term
            v.append((u[k] if acc is None else u[k] - acc) / w0)
        return v[0], v[1:]

    return rule


jet_rules[lax.log_p] = _log_like(lax.log_p, 0.0)
jet_rules[lax.log1p_p] = _log_like(lax.log1p_p, 1.0)

# ---------------------------------------------------------------------------------------------
# trigonometric and hyperbolic


def _sincos(sign: int, s_prim: core.Primitive, c_prim: core.Primitive, want: int) -> Callable:
    def rule(primals_in: list, series_in: list, **params: Any) -> tuple:
        (x,), (series,) = primals_in, series_in
        u = [x] + series
        s, c = [s_prim.bind(x, **params)], [c_prim.bind(x, **params)]
        for k in range(1, len(u)):
            s_k, c_k = _chain(u, c, k), _chain(u, s, k)
            s.append(s_k)
            c.append(c_k if sign > 0 else -c_k)
        v = s if want == 0 else c
        return v[0], v[1:]

    return rule


jet_rules[lax.sin_p] = _sincos(-1, lax.sin_p, lax.cos_p, 0)
jet_rules[lax.cos_p] = _sincos(-1, lax.sin_p, lax.cos_p, 1)
jet_rules[lax.sinh_p] = _sincos(1, lax.sinh_p, lax.cosh_p, 0)
jet_rules[lax.cosh_p] = _sincos(1, lax.sinh_p, lax.cosh_p, 1)


def _square_term(v: list, k: int) -> Any:
    return _cauchy(v, v, k)


# tan: v' = (1 + v^2) u'; tanh: v' = (1 - v^2) u'; logistic: v' = (v - v^2) u'
def_ode(lax.tan_p, lambda v, u, c, k: 1 + v[0] * v[0] if k == 0 else _square_term(v, k))
def_ode(lax.tanh_p, lambda v, u, c, k: 1 - v[0] * v[0] if k == 0 else -_square_term(v, k))
def_ode(lax.logistic_p, lambda v, u, c, k: v[0] - v[0] * v[0] if k == 0 else v[k] - _square_term(v, k))


def _erf_inv_c(v: list, u: list, c: list, k: int) -> Any:
    # c = (sqrt(pi)/2) exp(v^2): c' = 2 v v' c, i.e. c[k] = (1/k) sum j s[j] c[k-j] with s = v^2
    if k == 0:
        return (float(np.sqrt(np.pi)) / 2) * lax.exp(v[0] * v[0])
    s = [None] + [_square_term(v, j) for j in range(1, k + 1)]
    return _chain(s, c, k)


def_ode(lax.erf_inv_p, _erf_inv_c)

_TWO_OVER_SQRT_PI = float(2.0 / np.sqrt(np.pi))
def_deriv(lax.erf_p, lambda x: _TWO_OVER_SQRT_PI * lax.exp(-(x * x)))
def_deriv(lax.erfc_p, lambda x: -_TWO_OVER_SQRT_PI * lax.exp(-(x * x)))
def_deriv(lax.asin_p, lambda x: lax.rsqrt(1 - x * x))
def_deriv(lax.acos_p, lambda x: -lax.rsqrt(1 - x * x))
def_deriv(lax.atan_p, lambda x: 1 / (1 + x * x))
def_deriv(lax.asinh_p, lambda x: lax.rsqrt(x * x + 1))
def_deriv(lax.acosh_p, lambda x: lax.rsqrt(x - 1) * lax.rsqrt(x + 1))
def_deriv(lax.atanh_p, lambda x: 1 / (1 - x * x))
def_deriv(lax.lgamma_p, lax.digamma)
def_deriv(lax.digamma_p, lambda x: lax.polygamma(jnp.ones_like(x), x))


def _polygamma_rule(primals_in: list, series_in: list) -> tuple:
    m, x = primals_in
    sm, sx = series_in
    if sm is not None:
        raise NotImplementedError("jet of polygamma(m, x) with a Taylor series on the order m is not implemented")
    out = lax.polygamma(m, x)
    c0, cs = jet_fn(lambda z: lax.polygamma(m + 1, z), [x], [sx[:-1]])
    u = [x] + list(sx)
    return out, [_chain(u, [c0] + cs, k) for k in range(1, len(u))]


jet_rules[lax.polygamma_p] = _polygamma_rule
_accepts_none.add(lax.polygamma_p)


def _atan2_rule(primals_in: list, series_in: list) -> tuple:
    # v = atan2(x, y): t v' = (y (t x') - x (t y')) / (x^2 + y^2)
    x, y = primals_in
    sx, sy = series_in
    out = lax.atan2(x, y)
    order = len(sx)
    a, b = [x] + sx, [y] + sy
    da = [None] + [j * a[j] for j in range(1, order + 1)]
    db = [None] + [j * b[j] for j in range(1, order + 1)]
    r = [_cauchy(a, a, k) + _cauchy(b, b, k) for k in range(order + 1)]
    q: list = [None]
    for k in range(1, order + 1):
        num = None
        for j in range(0, k):
            term = b[j] * da[k - j] - a[j] * db[k - j]
            num = term if num is None else num + term
        for j in range(1, k):
            num = num - q[j] * r[k - j]
        q.append(num / r[0])
    return out, [q[k] / k for k in range(1, order + 1)]


jet_rules[lax.atan2_p] = _atan2_rule

# ---------------------------------------------------------------------------------------------
# piecewise rules: abs, max/min, reductions, rem, clamp


def _abs_rule(primals_in: list, series_in: list, **params: Any) -> tuple:
    (x,), (series,) = primals_in, series_in
    out = lax.abs_p.bind(x, **params)
    neg = lax.lt(x, lax.full_like(x, 0))
    return out, [lax.select(neg, -t, t) for t in series]


jet_rules[lax.abs_p] = _abs_rule


def _minmax_rule(prim: core.Primitive, better: Callable) -> Callable:
    # where the two are equal the terms are averaged, as JAX's jet does
    def rule(primals_in: list, series_in: list) -> tuple:
        x, y = jnp.broadcast_arrays(*primals_in)
        wins, tie = better(x, y), lax.eq(x, y)
        out = prim.bind(*primals_in)
        terms = []
        for tx, ty in zip(*series_in):
            tx, ty = jnp.broadcast_arrays(tx, ty)
            terms.append(lax.select(tie, (tx + ty) / 2, lax.select(wins, tx, ty)))
        return out, terms

    return rule


jet_rules[lax.max_p] = _minmax_rule(lax.max_p, lax.gt)
jet_rules[lax.min_p] = _minmax_rule(lax.min_p, lax.lt)


def _reduce_chooser_rule(prim: core.Primitive) -> Callable:
    # the terms of the chosen elements, averaged over ties
    def rule(primals_in: list, series_in: list, *, axes: tuple, **params: Any) -> tuple:
        (x,), (series,) = primals_in, series_in
        out = prim.bind(x, axes=axes, **params)
        keep = [1 if i in axes else d for i, d in enumerate(x.shape)]
        hit = lax.convert_element_type(lax.eq(x, lax.reshape(out, tuple(keep))), series[0].dtype)
        counts = lax.reduce_sum_p.bind(hit, axes=axes)
        return out, [lax.reduce_sum_p.bind(t * hit, axes=axes) / counts for t in series]

    return rule


jet_rules[lax.reduce_max_p] = _reduce_chooser_rule(lax.reduce_max_p)
jet_rules[lax.reduce_min_p] = _reduce_chooser_rule(lax.reduce_min_p)


def _rem_rule(primals_in: list, series_in: list) -> tuple:
    # rem(x, y) = x - q y with q = trunc(x / y) locally constant
    x, y = primals_in
    sx, sy = series_in
    out = lax.rem(x, y)
    if sy is None:
        return out, list(sx)
    q = lax.round((x - out) / y)
    if sx is None:
        return out, [-q * t for t in sy]
    return out, [a - q * b for a, b in zip(sx, sy)]


jet_rules[lax.rem_p] = _rem_rule
_accepts_none.add(lax.rem_p)

def_comp(lax.clamp_p, lambda lo, x, hi: lax.min(lax.max(lo, x), hi))


def _reduce_prod_rule(primals_in: list, series_in: list, *, axes: tuple) -> tuple:
    (x,), (series,) = primals_in, series_in

    def prod(z: Any) -> Any:
        rest = [i for i in range(z.ndim) if i not in axes]
        z = lax.transpose(z, tuple(axes) + tuple(rest))
        n = int(np.prod([x.shape[i] for i in axes], dtype=np.int64))
        z = lax.reshape(z, (n,) + tuple(x.shape[i] for i in rest))
        if n == 0:
            return lax.reduce_prod_p.bind(z, axes=(0,))
        while n > 1:  # pairwise products: log2(n) multiplications of halves
            if n % 2:
                z = lax.pad(z, lax.full_like(z, 1, shape=()), [(0, 1, 0)] + [(0, 0, 0)] * (z.ndim - 1))
                n += 1
            z = lax.slice_in_dim(z, 0, n // 2) * lax.slice_in_dim(z, n // 2, n)
            n //= 2
        return lax.reshape(z, z.shape[1:])

    out = lax.reduce_prod_p.bind(x, axes=axes)
    _, terms = jet_fn(prod, [x], [series])
    return out, terms


jet_rules[lax.reduce_prod_p] = _reduce_prod_rule


def _cumulative(combine: Callable) -> Callable:
    # the jet of the parallel prefix scan, which is built from differentiable primitives
    def rule(primals_in: list, series_in: list, *, axis: int, reverse: bool) -> tuple:
        fn = partial(lax.associative_scan, combine, axis=axis, reverse=reverse)
        return jet_fn(fn, primals_in, series_in)

    return rule


jet_rules[lax.cumprod_p] = _cumulative(lax.mul)
jet_rules[lax.cummax_p] = _cumulative(lax.max)
jet_rules[lax.cummin_p] = _cumulative(lax.min)
jet_rules[lax.cumlogsumexp_p] = _cumulative(jnp.logaddexp)


def _sort_rule(primals_in: list, series_in: list, *, dimension: int, is_stable: bool, num_keys: int) -> tuple:
    # the terms follow the (locally constant) permutation of the primal sort
    iota = lax.broadcasted_iota(np.int32, primals_in[0].shape, dimension)
    *outs, perm = lax.sort_p.bind(*primals_in, iota, dimension=dimension, is_stable=is_stable, num_keys=num_keys)
    terms = [[jnp.take_along_axis(t, perm, axis=dimension) for t in ts] for ts in series_in]
    return outs, terms


jet_rules[lax.sort_p] = _sort_rule


def _top_k_rule(primals_in: list, series_in: list, **params: Any) -> tuple:
    (x,), (series,) = primals_in, series_in
    values, idx = lax.top_k_p.bind(x, **params)
    axis = params.get("axis", -1)
    return [values, idx], [[jnp.take_along_axis(t, idx, axis=axis) for t in series], zero_series]


jet_rules[lax.top_k_p] = _top_k_rule
