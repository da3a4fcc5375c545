"""``jax.experimental.jet``: Taylor-mode (higher-order forward) differentiation.

``jet(f, primals, series)`` pushes a truncated Taylor polynomial through ``f``. It is a trace
like the JVP's: each ``JetTracer`` carries a primal and its Taylor terms (or the symbolic
``zero_series``), and every primitive has a rule in ``jet_rules`` that propagates the terms
(the rules live in ``_jet_rules``). Inside the trace the terms are plain Taylor coefficients
(``jet2``); ``jet`` scales them by factorials on the way in and out, so its terms are
derivatives, as JAX's. Call-like primitives (``jit``, ``checkpoint``, control flow) get the jet
of their jaxpr; ``custom_jvp``/``custom_vjp`` functions are expanded to their primal function.
Since rules are written with fjax operations, ``jit``, ``grad`` and ``vmap`` compose with
``jet`` in any order.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, Callable, Sequence

from fjax import core, dtypes, lax
from fjax import numpy as jnp
from fjax.core import Array, Tracer
from fjax.interpreters import ad
from fjax.tree_util import tree_flatten, tree_structure, tree_unflatten, treedef_is_leaf

__all__ = ["jet", "jet2", "fact", "jet_rules", "zero_series", "zero_term", "JetTrace", "JetTracer"]


class ZeroTerm:
    """A symbolic zero Taylor term."""

    def __repr__(self) -> str:
        return "zero_term"


class ZeroSeries:
    """A symbolic all-zero Taylor series (the value does not depend on the perturbation)."""

    def __repr__(self) -> str:
        return "zero_series"


zero_term = ZeroTerm()
zero_series = ZeroSeries()

# rule(primals_in, series_in, **params) -> (primal_out, series_out); for a multiple-results
# primitive, (list of primals, list of series). series_out may be ``zero_series``.
jet_rules: dict[core.Primitive, Callable] = {}
# rules that accept ``None`` for an input whose series is zero (the others get zeros)
_accepts_none: set[core.Primitive] = set()


class JetRuleNotImplementedError(NotImplementedError, KeyError):
    """No jet rule for a primitive. A ``KeyError`` too, as JAX raises from its rule table."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def fact(n: Any) -> Any:
    """``n!`` as a float array, computed as JAX's ``fact``: ``exp(lgamma(n + 1))``."""
    return lax.exp(lax.lgamma(n + 1.0))


def _zeros_like(x: Any) -> Any:
    return jnp.zeros_like(x)


def instantiate_series(x: Any, s: Any, order: int) -> list:
    """The terms of ``s`` as values (zeros where symbolic), ``order`` of them."""
    if s is None or s is zero_series:
        z = _zeros_like(x)
        return [z] * order
    return [_zeros_like(x) if t is zero_term else t for t in s]


class JetTracer(Tracer):
    """A value under ``jet``: its primal and its Taylor terms (a list, or ``zero_series``)."""

    __slots__ = ("primal", "terms")

    def __init__(self, trace: JetTrace, primal: Any, terms: Any):
        self._trace = trace
        self.primal = primal
        self.terms = terms

    @property
    def aval(self) -> core.ShapedArray:
        return core.get_aval(self.primal)

    def full_lower(self) -> Any:
        if self.terms is zero_series:
            return core.full_lower(self.primal)
        return self

    def to_concrete_value(self) -> Any:
        p = self.primal
        if isinstance(p, Tracer):
            return p.to_concrete_value()
        return p._value if isinstance(p, Array) else p


class JetTrace(core.Trace):
    """Propagates truncated Taylor series; ``main.global_data`` is the order."""

    def pure(self, val: Any) -> JetTracer:
        return JetTracer(self, val, zero_series)

    lift = pure

    def process_primitive(self, primitive: core.Primitive, tracers: list, params: dict) -> Any:
        order = self.main.global_data
        primals = [t.primal for t in tracers]
        series = [t.terms for t in tracers]
        if all(s is zero_series for s in series):
            out = primitive.bind(*primals, **params)
            if primitive.multiple_results:
                return [JetTracer(self, o, zero_series) for o in out]
            return JetTracer(self, out, zero_series)
        rule = jet_rules.get(primitive)
        if rule is None:
            raise JetRuleNotImplementedError(f"Jet rule for '{primitive.name}' not implemented")
        if primitive in _accepts_none:
            series = [None if s is zero_series else instantiate_series(p, s, order) for p, s in zip(primals, series)]
        else:
            series = [instantiate_series(p, s, order) for p, s in zip(primals, series)]
        primal_out, series_out = rule(primals, series, **params)
        if primitive.multiple_results:
            if series_out is zero_series:
                series_out = [zero_series] * len(primal_out)
            return [JetTracer(self, p, _check_terms(s, order)) for p, s in core.safe_zip(primal_out, series_out)]
        return JetTracer(self, primal_out, _check_terms(series_out, order))


def _check_terms(s: Any, order: int) -> Any:
    if s is zero_series or s is None:
        return zero_series
    s = list(s)
    if len(s) != order:
        raise AssertionError(f"jet rule returned {len(s)} terms where {order} were expected (internal error)")
    return s


def jet_flat(fun: Callable, primals: Sequence[Any], series: Sequence[Any], order: int) -> tuple[list, list]:
    """Taylor-mode on flat lists, with unscaled coefficients: ``series[i]`` is a list of
    ``order`` terms, or ``None``/``zero_series`` for an unperturbed input. Returns the primal
    outputs and, per output, a list of terms or ``zero_series``."""
    if order == 0:
        outs = list(fun(*primals))
        return outs, [[] for _ in outs]
    with core.new_main(JetTrace, order, debug_info="jet") as main:
        trace = JetTrace(main)
        tracers = [
            JetTracer(trace, p, zero_series if s is None or s is zero_series else list(s))
            for p, s in core.safe_zip(primals, series)
        ]
        outs = fun(*tracers)
        p_out, s_out = [], []
        for o in outs:
            if isinstance(o, JetTracer) and o._trace.main is main:
                p_out.append(o.primal)
                s_out.append(o.terms)
            else:
                if isinstance(o, Tracer) and o._trace.main.level > main.level:
                    core.full_raise(trace, o)  # raises the escaped-tracer error
                p_out.append(o)
                s_out.append(zero_series)
    return p_out, s_out


def jet_fn(fun: Callable, primals: Sequence[Any], series: Sequence[Any]) -> tuple[Any, list]:
    """The (unscaled) jet of a one-output ``fun``; the output series is instantiated. For use
    inside rules: the order is the length of the given series."""
    order = max((len(s) for s in series if s is not None and s is not zero_series), default=0)
    p_out, s_out = jet_flat(lambda *xs: [fun(*xs)], primals, series, order)
    return p_out[0], instantiate_series(p_out[0], s_out[0], order)


def _as_value(x: Any) -> Any:
    if isinstance(x, (Tracer, Array)):
        return x
    return core.to_array(x, "jet")


def jet(fun: Callable, primals: Sequence[Any], series: Sequence[Any], factorial_scaled: bool = True, **_: Any) -> tuple:
    """Taylor-mode higher-order differentiation of ``fun`` at ``primals``.

    ``series[i]`` holds the Taylor terms of argument ``i`` (all the same length, the order).
    With ``factorial_scaled`` (default) term ``k`` is the ``k``-th derivative along the path;
    otherwise it is the plain coefficient of ``t**k``. Returns ``(primals_out, series_out)``
    with ``series_out`` a list of terms per output leaf.
    """
    try:
        (order,) = set(map(len, series))
    except ValueError:
        raise ValueError("jet terms have inconsistent lengths for different arguments") from None
    for i, (x, terms) in enumerate(zip(primals, series)):
        if not treedef_is_leaf(tree_structure(x)):
            raise ValueError(f"primal value at position {i} is not an array")
        for j, t in enumerate(terms):
            if not treedef_is_leaf(tree_structure(t)):
                raise ValueError(f"term {j} for argument {i} is not an array")
    if len(primals) != len(series):
        raise TypeError(f"jet: got {len(primals)} primal arguments but series for {len(series)} arguments")
    primals = [_as_value(x) for x in primals]
    if factorial_scaled:
        series = [[_as_value(t) / float(math.factorial(k + 1)) for k, t in enumerate(ts)] for ts in series]
    else:
        series = [[_as_value(t) for t in ts] for ts in series]
    box: list = []

    def flat_fun(*args: Any) -> list:
        leaves, tree = tree_flatten(fun(*args))
        box.append(tree)
        return leaves

    p_out, s_out = jet_flat(flat_fun, primals, series, order)
    terms_out = [instantiate_series(p, s, order) if s is zero_series else list(s) for p, s in zip(p_out, s_out)]
    if factorial_scaled:
        terms_out = [[t * float(math.factorial(k + 1)) for k, t in enumerate(ts)] for ts in terms_out]
    tree = box[0]
    return tree_unflatten(tree, p_out), tree_unflatten(tree, terms_out)


jet2 = partial(jet, factorial_scaled=False)


# ---------------------------------------------------------------------------------------------
# call-like primitives: the jet of their jaxpr


def _series_key(series: Sequence[Any]) -> tuple:
    return tuple(None if s is None else tuple(core.get_aval(t) for t in s) for s in series)


def _match(t: Any, aval: core.ShapedArray) -> Any:
    """``t`` with exactly the type ``aval`` (loop carries and cond branches must agree)."""
    ta = core.get_aval(t)
    if ta.dtype != aval.dtype or ta.weak_type != aval.weak_type:
        t = lax.convert_element_type_p.bind(t, new_dtype=aval.dtype, weak_type=aval.weak_type)
    if tuple(ta.shape) != tuple(aval.shape):
        t = jnp.broadcast_to(t, aval.shape)
    return t


@core.cache_in_context(maxsize=1024)
def _jet_jaxpr(closed: Any, order: int, series_avals: tuple, out_mask: tuple | None, name: str) -> tuple:
    """The jet of ``closed`` as a jaxpr ``(consts, primals, present series terms) -> (primal
    outs, terms of the outputs in out_mask (all when None), each typed as its primal)``, and
    its hoisted constants' values. ``closed`` may be an open ``Jaxpr`` without constants (so
    the cache keys on the equation's own jaxpr)."""
    if isinstance(closed, core.Jaxpr):
        closed = core.ClosedJaxpr(closed, [])
    n = len(closed.in_avals)
    flat_avals = [a for s in series_avals if s is not None for a in s]
    out_avals = closed.out_avals
    mask = (True,) * len(out_avals) if out_mask is None else out_mask

    def f(*args: Any) -> list:
        prims, rest = list(args[:n]), iter(args[n:])
        ser = [None if s is None else [next(rest) for _ in s] for s in series_avals]
        po, so = jet_flat(lambda *xs: core.eval_jaxpr(closed.jaxpr, closed.consts, *xs), prims, ser, order)
        flat = [
            _match(t, av) for p, s, av, m in zip(po, so, out_avals, mask) if m for t in instantiate_series(p, s, order)
        ]
        return [_as_value(p) for p in po] + flat

    return ad._trace_closed(f, list(closed.in_avals) + flat_avals, name)


def call_jaxpr_jet(
    closed: Any, primals: Sequence[Any], series: Sequence[Any], bind: Callable, name: str
) -> tuple[list, list]:
    """Jet of a call-like equation: ``bind(new_closed, args)`` applies the primitive to the jet
    jaxpr; returns (primal outputs, per-output lists of terms)."""
    order = max(len(s) for s in series if s is not None)
    new, consts = _jet_jaxpr(closed, order, _series_key(series), None, name)
    flat = [t for s in series if s is not None for t in s]
    outs = bind(new, [*consts, *primals, *flat])
    n_out = len(closed.outvars if isinstance(closed, core.Jaxpr) else closed.out_avals)
    return list(outs[:n_out]), _split_terms(outs[n_out:], [True] * n_out, order)


def _split_terms(flat: Sequence[Any], mask: Sequence[bool], order: int) -> list:
    it = iter(flat)
    return [[next(it) for _ in range(order)] if m else zero_series for m in mask]


def _jit_rule(primals: list, series: list, *, jaxpr: core.ClosedJaxpr, name: str) -> tuple:
    from fjax.jit import jit_p

    def bind(new: core.ClosedJaxpr, args: list) -> list:
        return jit_p.bind(*args, jaxpr=new, name=f"jet({name})")

    return call_jaxpr_jet(jaxpr, primals, series, bind, f"jet({name})")


def _remat_rule(primals: list, series: list, *, jaxpr: core.Jaxpr, **params: Any) -> tuple:
    from fjax.checkpoint import remat_p

    def bind(new: core.ClosedJaxpr, args: list) -> list:
        return remat_p.bind(*args, jaxpr=new.jaxpr, **params)

    return call_jaxpr_jet(jaxpr, primals, series, bind, "jet(checkpoint)")


def _inline_call_rule(primals: list, series: list, *, call_jaxpr: core.ClosedJaxpr, **_: Any) -> tuple:
    # as JAX's jet: a custom_jvp/custom_vjp function contributes its primal function only
    order = max(len(s) for s in series if s is not None)
    po, so = jet_flat(lambda *xs: core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *xs), primals, series, order)
    return po, so


# ---------------------------------------------------------------------------------------------
# control flow: the jet of the branches and bodies (series of float carries always present)


def _permuted(closed: core.ClosedJaxpr, ins: Sequence[int], outs: Sequence[int], extra: Sequence = ()) -> Any:
    j = closed.jaxpr
    invars = [j.invars[i] for i in ins] + [core.Var(a) for a in extra]
    return core.ClosedJaxpr(core.Jaxpr(j.constvars, invars, [j.outvars[i] for i in outs], j.eqns), closed.consts)


def _typed_series(primals: Sequence[Any], series: Sequence[Any], avals: Sequence[Any], present: Sequence[bool]) -> list:
    order = max(len(s) for s in series if s is not None)
    return [
        [_match(t, a) for t in instantiate_series(p, s, order)] if m else None
        for p, s, a, m in zip(primals, series, avals, present)
    ]


def _is_float(aval: core.ShapedArray) -> bool:
    return dtypes.kind(aval.dtype) in "fc"


def _cond_rule(primals: list, series: list, *, branches: tuple) -> tuple:
    from fjax.lax.control_flow.common import merge_consts
    from fjax.lax.control_flow.conditionals import cond_p

    index, *args = primals
    ser = series[1:]
    order = max(len(s) for s in ser if s is not None)
    key = _series_key(ser)
    new_branches, consts = merge_consts([_jet_jaxpr(br, order, key, None, "jet(cond)") for br in branches])
    flat = [t for s in ser if s is not None for t in s]
    outs = core.bind(cond_p, [index, *consts, *args, *flat], dict(branches=new_branches))
    n_out = len(branches[0].out_avals)
    return list(outs[:n_out]), _split_terms(outs[n_out:], [True] * n_out, order)


def _scan_rule(
    primals: list,
    series: list,
    *,
    jaxpr: core.ClosedJaxpr,
    length: int,
    num_carry: int,
    num_consts: int,
    reverse: bool,
    unroll: int,
) -> tuple:
    from fjax.lax.control_flow.scan import scan_p

    nc, ncar = num_consts, num_carry
    n_in, n_out = len(primals), len(jaxpr.out_avals)
    in_avals = jaxpr.in_avals
    order = max(len(s) for s in series if s is not None)
    present = [s is not None or (nc <= i < nc + ncar and _is_float(in_avals[i])) for i, s in enumerate(series)]
    outer = [a if i < nc + ncar else core.get_aval(p) for i, (a, p) in enumerate(zip(in_avals, primals))]
    ser = _typed_series(primals, series, outer, present)
    key = tuple(None if s is None else (in_avals[i],) * order for i, s in enumerate(ser))
    carry_mask = tuple(present[nc : nc + ncar]) + (True,) * (n_out - ncar)
    body, hoisted = _jet_jaxpr(jaxpr, order, key, carry_mask, "jet(scan)")
    h = len(hoisted)
    # series inputs, grouped: consts, carry, xs (each in input order, order terms apiece)
    pos, groups = h + n_in, ([], [], [])
    for i, s in enumerate(ser):
        if s is not None:
            g = groups[0 if i < nc else 1 if i < nc + ncar else 2]
            g.extend(range(pos, pos + order))
            pos += order
    prim_idx = list(range(h, h + n_in))
    ins = list(range(h)) + prim_idx[:nc] + groups[0] + prim_idx[nc : nc + ncar] + groups[1]
    ins += prim_idx[nc + ncar :] + groups[2]
    n_cs = order * sum(present[nc : nc + ncar])
    outs_order = list(range(ncar)) + list(range(n_out, n_out + n_cs)) + list(range(ncar, n_out))
    outs_order += list(range(n_out + n_cs, n_out + n_cs + order * (n_out - ncar)))
    body = _permuted(body, ins, outs_order)
    flat = {0: [], 1: [], 2: []}
    for i, s in enumerate(ser):
        if s is not None:
            flat[0 if i < nc else 1 if i < nc + ncar else 2].extend(s)
    args = [*hoisted, *primals[:nc], *flat[0], *primals[nc : nc + ncar], *flat[1], *primals[nc + ncar :], *flat[2]]
    params = dict(
        jaxpr=body,
        length=length,
        num_carry=ncar + n_cs,
        num_consts=h + nc + len(flat[0]),
        reverse=reverse,
        unroll=unroll,
    )
    outs = core.bind(scan_p, args, params)
    carry, carry_s = outs[:ncar], outs[ncar : ncar + n_cs]
    ys, ys_s = outs[ncar + n_cs : ncar + n_cs + n_out - ncar], outs[ncar + n_cs + n_out - ncar :]
    terms = _split_terms(carry_s, present[nc : nc + ncar], order) + _split_terms(ys_s, [True] * (n_out - ncar), order)
    return list(carry) + list(ys), terms


def _while_rule(
    primals: list,
    series: list,
    *,
    cond_jaxpr: core.ClosedJaxpr,
    body_jaxpr: core.ClosedJaxpr,
    cond_nconsts: int,
    body_nconsts: int,
) -> tuple:
    from fjax.lax.control_flow.loops import while_p

    ncc, nbc = cond_nconsts, body_nconsts
    cc, bprims = primals[:ncc], primals[ncc:]
    bser = series[ncc:]
    in_avals = body_jaxpr.in_avals
    ncar = len(in_avals) - nbc
    order = max(len(s) for s in series if s is not None)
    present = [s is not None or (i >= nbc and _is_float(in_avals[i])) for i, s in enumerate(bser)]
    if not any(present[nbc:]):
        # nothing the loop carries is perturbed: it runs on the primals alone
        return core.bind(
            while_p, primals, dict(cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr, cond_nconsts=ncc, body_nconsts=nbc)
        ), zero_series
    ser = _typed_series(bprims, bser, in_avals, present)
    key = tuple(None if s is None else (in_avals[i],) * order for i, s in enumerate(ser))
    body, hoisted = _jet_jaxpr(body_jaxpr, order, key, tuple(present[nbc:]), "jet(while)")
    h, nb_s = len(hoisted), order * sum(1 for s in ser[:nbc] if s is not None)
    n_cs = order * sum(present[nbc:])
    base = h + nbc + ncar
    ins = list(range(h + nbc)) + list(range(base, base + nb_s)) + list(range(h + nbc, base))
    ins += list(range(base + nb_s, base + nb_s + n_cs))
    body = _permuted(body, ins, list(range(ncar + n_cs)))
    carry_s_avals = [in_avals[nbc + i] for i in range(ncar) if present[nbc + i] for _ in range(order)]
    cond = _permuted(cond_jaxpr, range(len(cond_jaxpr.in_avals)), range(len(cond_jaxpr.out_avals)), carry_s_avals)
    b_flat = [t for s in ser[:nbc] if s is not None for t in s]
    c_flat = [t for s in ser[nbc:] if s is not None for t in s]
    args = [*cc, *hoisted, *bprims[:nbc], *b_flat, *bprims[nbc:], *c_flat]
    params = dict(cond_jaxpr=cond, body_jaxpr=body, cond_nconsts=ncc, body_nconsts=h + nbc + len(b_flat))
    outs = core.bind(while_p, args, params)
    return list(outs[:ncar]), _split_terms(outs[ncar:], present[nbc:], order)


def _register_calls() -> None:
    from fjax._custom_vjp import custom_vjp_call_p
    from fjax.checkpoint import remat_p
    from fjax.custom_derivatives import custom_jvp_call_p
    from fjax.jit import jit_p
    from fjax.lax.control_flow.conditionals import cond_p
    from fjax.lax.control_flow.loops import while_p
    from fjax.lax.control_flow.scan import scan_p

    for prim, rule in [
        (cond_p, _cond_rule),
        (scan_p, _scan_rule),
        (while_p, _while_rule),
        (jit_p, _jit_rule),
        (remat_p, _remat_rule),
        (custom_jvp_call_p, _inline_call_rule),
        (custom_vjp_call_p, _inline_call_rule),
    ]:
        jet_rules[prim] = rule
        _accepts_none.add(prim)


_register_calls()

from fjax.experimental import _jet_rules  # noqa: E402,F401  (registers the primitive rules)
from fjax.experimental._jet_rules import (  # noqa: E402
    def_comp,
    def_deriv,
    deflinear,
    defzero,
    deriv_prop,
    linear_prop,
    zero_prop,
)

__all__ += ["def_comp", "def_deriv", "deflinear", "defzero", "deriv_prop", "linear_prop", "zero_prop"]
