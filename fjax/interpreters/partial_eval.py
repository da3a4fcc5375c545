"""Staging: tracing Python functions into jaxprs, partial evaluation and dead-code elimination.

``StagingTrace`` records every primitive applied to its tracers as a jaxpr equation. Used as
the *dynamic* trace (``make_jaxpr``, ``jit``) it stages everything. Pushed as an ordinary level
under a JVP trace (``linearize``/``vjp``) it stages only what touches its tracers -- the tangent
computation -- while operations on known primal values run eagerly below it. That is partial
evaluation: known values are computed now, unknown ones become a jaxpr whose constants are the
residuals. Higher-order primitives (jit, cond, scan) whose inputs are partly known split their
inner jaxprs with ``partial_eval_jaxpr`` through ``partial_eval_rules``.
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable, Sequence

import numpy as np

from fjax import core, dtypes
from fjax.core import (
    Array,
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Literal,
    ShapedArray,
    Tracer,
    Var,
)
from fjax.dtypes import kind as _dkind

# rules for higher-order primitives whose inputs are partly known while linearizing:
#   rule(trace, tracers, **params) -> out tracers
partial_eval_rules: dict[core.Primitive, Callable] = {}
# rules splitting one equation of a higher-order primitive inside ``partial_eval_jaxpr``:
#   rule(eqn, unknowns_in) -> (known_eqn | None, unknown_eqn, out_unknowns)
# the known equation's extra outputs (residuals) are read by the unknown equation
partial_eval_jaxpr_rules: dict[core.Primitive, Callable] = {}
# dead-code elimination rules for higher-order primitives:
#   rule(used_outputs, eqn) -> (used_inputs, new_eqn or None)
dce_rules: dict[core.Primitive, Callable] = {}


_no_const = object()


class StagingTracer(Tracer):
    __slots__ = ("_aval", "const")
    jax_name = "DynamicJaxprTracer"  # (as JAX's errors name it)

    def __init__(self, trace: StagingTrace, aval: ShapedArray, const: Any = _no_const):
        self._trace = trace
        self._aval = aval
        self.const = const  # the known value, for tracers made from constants

    def to_concrete_value(self) -> Any:
        c = self.const
        if c is _no_const or self._trace.main is core.dynamic_main():
            return None
        if isinstance(c, Tracer):
            return c.to_concrete_value()
        return c._value if isinstance(c, Array) else np.asarray(c)

    @property
    def aval(self) -> ShapedArray:
        return self._aval

    def __repr__(self) -> str:
        return f"JitTracer({self._aval})"  # JAX's name for a tracer of a staged (jit) trace

    def _origin_msg(self) -> str:
        from fjax import _trace_origin  # noqa: PLC0415 (only when an error is being raised)

        return _trace_origin.origin_msg(self)


class JaxprBuilder:
    """Collects equations and constants while a function is traced."""

    def __init__(self) -> None:
        self.eqns: list[JaxprEqn] = []
        self.tracer_to_var: dict[int, Var] = {}
        self.const_tracers: dict[int, StagingTracer] = {}
        self.constvals: dict[Var, Any] = {}
        self.tracers: list[StagingTracer] = []
        self.in_tracers: Sequence[StagingTracer] = ()  # the traced function's (flat) arguments
        self.traced_src: str | None = None  # ``f at file:line`` of the user function traced, if known

    def new_tracer(self, trace: StagingTrace, aval: ShapedArray) -> StagingTracer:
        t = StagingTracer(trace, aval)
        self.tracers.append(t)
        return t

    def add_var(self, tracer: StagingTracer) -> Var:
        assert id(tracer) not in self.tracer_to_var
        v = self.tracer_to_var[id(tracer)] = Var(tracer.aval)
        return v

    def getvar(self, tracer: StagingTracer) -> Var:
        v = self.tracer_to_var.get(id(tracer))
        if v is None:
            raise core.UnexpectedTracerError(
                f"tracer {tracer.aval.str_short()} is not part of the function being traced"
            )
        return v

    def add_const(self, tracer: StagingTracer, val: Any) -> Var:
        v = self.add_var(tracer)
        self.constvals[v] = val
        return v

    def build(
        self, in_tracers: Sequence[StagingTracer], out_tracers: Sequence[Any], dce: bool = True
    ) -> tuple[Jaxpr, list]:
        invars = [self.getvar(t) for t in in_tracers]
        outvars = [self.getvar(t) for t in out_tracers]
        constvars, constvals = list(self.constvals.keys()), list(self.constvals.values())
        jaxpr = Jaxpr(constvars, invars, outvars, self.eqns)
        jaxpr, constvals = inline_literals(jaxpr, constvals)
        if dce:
            jaxpr = dce_jaxpr(jaxpr, keep_inputs=True)
        jaxpr, constvals = prune_consts(jaxpr, constvals)
        core.check_jaxpr(jaxpr)
        return jaxpr, constvals


def _is_literalable(val: Any) -> bool:
    if type(val) is Array:
        return val.ndim == 0 and _dkind(val.dtype) in "biufc"  # never float0
    return type(val) in (bool, int, float, complex)


def inline_literals(jaxpr: Jaxpr, consts: list) -> tuple[Jaxpr, list]:
    """Turn scalar non-traced constants into inline literals, as JAX prints them."""
    lits: dict[Var, Literal] = {}
    constvars, constvals = [], []
    for v, c in zip(jaxpr.constvars, consts):
        if _is_literalable(c):
            lits[v] = Literal(c._value.item() if type(c) is Array else c, v.aval)
        else:
            constvars.append(v)
            constvals.append(c)
    if not lits:
        return jaxpr, consts

    def lit(x: Any) -> Any:
        return lits.get(x, x) if type(x) is Var else x

    eqns = [e.replace(invars=[lit(x) for x in e.invars]) for e in jaxpr.eqns]
    return Jaxpr(constvars, jaxpr.invars, [lit(x) for x in jaxpr.outvars], eqns), constvals


def prune_consts(jaxpr: Jaxpr, consts: list) -> tuple[Jaxpr, list]:
    """Drop unused constvars and order the rest by first use, as JAX's constvars are ordered (a
    known input forwarded around a jit as a residual is lifted before it is used)."""
    used = set()
    for e in jaxpr.eqns:
        used.update(x for x in e.invars if type(x) is not Literal)
    used.update(x for x in jaxpr.outvars if type(x) is not Literal)
    order: dict = {}
    for e in jaxpr.eqns:
        for x in e.invars:
            order.setdefault(x, len(order))
    for x in jaxpr.outvars:
        order.setdefault(x, len(order))
    keep = [(v, c) for v, c in zip(jaxpr.constvars, consts) if v in used]
    keep.sort(key=lambda vc: order[vc[0]])
    if [v for v, _ in keep] == list(jaxpr.constvars):
        return jaxpr, consts
    return Jaxpr([v for v, _ in keep], jaxpr.invars, jaxpr.outvars, jaxpr.eqns), [c for _, c in keep]


class StagingTrace(core.Trace):
    """Records primitives applied to its tracers into the builder held by its main trace."""

    @property
    def builder(self) -> JaxprBuilder:
        return self.main.global_data

    def new_arg(self, aval: ShapedArray) -> StagingTracer:
        t = self.builder.new_tracer(self, aval)
        self.builder.add_var(t)
        return t

    def get_or_make_const_tracer(self, val: Any) -> StagingTracer:
        b = self.builder
        t = b.const_tracers.get(id(val))
        if t is None:
            aval = core.get_aval(val)
            t = b.new_tracer(self, aval)
            t.const = val
            b.add_const(t, val)
            b.const_tracers[id(val)] = t
        return t

    pure = lift = get_or_make_const_tracer

    def process_primitive(self, primitive: core.Primitive, tracers: list, params: dict) -> Any:
        rule = partial_eval_rules.get(primitive)
        if rule is not None and self.main is not core.dynamic_main():
            return rule(self, tracers, **params)
        return self.default_process_primitive(primitive, tracers, params)

    def default_process_primitive(self, primitive: core.Primitive, tracers: list, params: dict) -> Any:
        avals_in = [t.aval for t in tracers]
        out = primitive.abstract_eval(*avals_in, **params)
        avals_out = out if primitive.multiple_results else [out]
        b = self.builder
        out_tracers = [b.new_tracer(self, a) for a in avals_out]
        invars = [b.getvar(t) for t in tracers]
        outvars = [b.add_var(t) for t in out_tracers]
        b.eqns.append(JaxprEqn(primitive, invars, outvars, params))
        return out_tracers if primitive.multiple_results else out_tracers[0]


def trace_to_jaxpr(
    fun: Callable, in_avals: Sequence[ShapedArray], debug_info: str = "", dce: bool = True
) -> tuple[Jaxpr, list, list]:
    """Trace ``fun`` (flat list of arrays -> flat list) on abstract inputs, staging everything.

    Returns (jaxpr, consts, outputs) where outputs are the raw results (for out avals).
    ``dce=False`` keeps equations whose outputs are unused (``make_jaxpr`` shows them, as JAX's
    does); programs that run (jit, loop bodies) drop them.
    """
    builder = JaxprBuilder()
    from fjax import _trace_origin  # noqa: PLC0415

    builder.traced_src = _trace_origin.caller_function_src(sys._getframe(1))
    with core.new_main(StagingTrace, builder, debug_info) as main:
        with core.new_dynamic(main):
            trace = StagingTrace(main)
            tracers_in = builder.in_tracers = [trace.new_arg(a) for a in in_avals]
            outs = fun(*tracers_in)
            tracers_out = [trace.get_or_make_const_tracer(o) if not _is_own(o, main) else o for o in outs]
            tracers_out = [core.full_raise(trace, t) for t in tracers_out]
        jaxpr, consts = builder.build(tracers_in, tracers_out, dce)
    return jaxpr, consts, tracers_out


def _is_own(x: Any, main: core.MainTrace) -> bool:
    return isinstance(x, StagingTracer) and x._trace.main is main


# ---------------------------------------------------------------------------------------------
# dead-code elimination


def eqn_has_effects(eqn: JaxprEqn) -> bool:
    """Whether ``eqn`` must run even when its outputs are unused: its primitive is effectful
    (``Primitive.effectful``, e.g. ``debug_callback``) or one of its sub-jaxprs holds such an equation."""
    if eqn.primitive.effectful:
        return True
    for v in eqn.params.values():
        if isinstance(v, (Jaxpr, ClosedJaxpr)):
            if jaxpr_has_effects(v):
                return True
        elif isinstance(v, tuple) and any(isinstance(e, (Jaxpr, ClosedJaxpr)) and jaxpr_has_effects(e) for e in v):
            return True
    return False


@functools.lru_cache(maxsize=4096)
def jaxpr_has_effects(jaxpr: Jaxpr | ClosedJaxpr) -> bool:
    """Whether ``jaxpr`` (or a sub-jaxpr of it) holds an effectful equation."""
    j = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
    return any(eqn_has_effects(e) for e in j.eqns)


def dce_jaxpr(jaxpr: Jaxpr, used_outputs: Sequence[bool] | None = None, keep_inputs: bool = True) -> Jaxpr:
    """Drop equations whose outputs are unused, except effectful ones (``eqn_has_effects``):
    those are kept whole, so each runs once per execution of the jaxpr."""
    outvars = jaxpr.outvars
    if used_outputs is not None:
        outvars = [v for v, u in zip(outvars, used_outputs) if u]
    live = {v for v in outvars if type(v) is Var}
    new_eqns = []
    for eqn in reversed(jaxpr.eqns):
        if eqn_has_effects(eqn):
            live.update(v for v in eqn.invars if type(v) is Var)
            new_eqns.append(eqn)
        elif any(v in live for v in eqn.outvars):
            rule = dce_rules.get(eqn.primitive)
            if rule is not None:
                used_outs = [v in live for v in eqn.outvars]
                # the rule returns the pruned equation (only used inputs and outputs kept)
                _, eqn = rule(used_outs, eqn)
                if eqn is None:
                    continue
                live.update(v for v in eqn.invars if type(v) is Var)
            else:
                live.update(v for v in eqn.invars if type(v) is Var)
            new_eqns.append(eqn)
    new_eqns.reverse()
    invars = jaxpr.invars if keep_inputs else [v for v in jaxpr.invars if v in live]
    return Jaxpr(jaxpr.constvars, invars, outvars, new_eqns)


# ---------------------------------------------------------------------------------------------
# partial evaluation of a jaxpr (used by rules of higher-order primitives)


def partial_eval_jaxpr(
    jaxpr: Jaxpr, in_unknowns: Sequence[bool], instantiate: bool | Sequence[bool] = False
) -> tuple[Jaxpr, Jaxpr, list[bool], int]:
    """Split ``jaxpr`` (no constvars) into a known part and an unknown part.

    Returns ``(jaxpr_known, jaxpr_unknown, out_unknowns, num_res)``:
    ``jaxpr_known: known_ins -> known_outs + residuals`` and
    ``jaxpr_unknown: residuals + unknown_ins -> unknown_outs``.
    """
    if jaxpr.constvars:
        raise ValueError("partial_eval_jaxpr expects a jaxpr without constvars (close over them first)")
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(jaxpr.outvars)
    unknown: set = {v for v, uk in zip(jaxpr.invars, in_unknowns) if uk}
    known_eqns, unknown_eqns = [], []
    for eqn in jaxpr.eqns:
        uks = [type(x) is Var and x in unknown for x in eqn.invars]
        if not any(uks):
            known_eqns.append(eqn)
            continue
        rule = partial_eval_jaxpr_rules.get(eqn.primitive)
        if rule is None:
            unknown_eqns.append(eqn)
            unknown.update(eqn.outvars)
            continue
        eqn_known, eqn_unknown, out_uks = rule(eqn, uks)
        if eqn_known is not None:
            known_eqns.append(eqn_known)
        if eqn_unknown is not None:
            unknown_eqns.append(eqn_unknown)
        unknown.update(v for v, u in zip(eqn.outvars, out_uks) if u)
    out_unknowns = [(type(v) is Var and v in unknown) or bool(inst) for v, inst in zip(jaxpr.outvars, instantiate)]
    # residuals: known vars read by unknown eqns or needed as instantiated outputs
    defined_known = {v for v, uk in zip(jaxpr.invars, in_unknowns) if not uk}
    for e in known_eqns:
        defined_known.update(e.outvars)
    residuals: list[Var] = []
    seen: set = set()

    def note_res(x: Any) -> None:
        if type(x) is Var and x in defined_known and x not in seen:
            seen.add(x)
            residuals.append(x)

    for e in unknown_eqns:
        for x in e.invars:
            note_res(x)
    for v, uk in zip(jaxpr.outvars, out_unknowns):
        if uk:
            note_res(v)
    known_ins = [v for v, uk in zip(jaxpr.invars, in_unknowns) if not uk]
    known_outs = [v for v, uk in zip(jaxpr.outvars, out_unknowns) if not uk]
    jaxpr_known = Jaxpr([], known_ins, known_outs + residuals, known_eqns)
    jaxpr_known = dce_jaxpr(jaxpr_known)
    # the unknown jaxpr gets fresh binders for residuals
    res_vars = [Var(r.aval) for r in residuals]
    sub = dict(zip(residuals, res_vars))

    def rn(x: Any) -> Any:
        return sub.get(x, x) if type(x) is Var else x

    unknown_ins = [v for v, uk in zip(jaxpr.invars, in_unknowns) if uk]
    un_eqns = [e.replace(invars=[rn(x) for x in e.invars]) for e in unknown_eqns]
    unknown_outs = [rn(v) for v, uk in zip(jaxpr.outvars, out_unknowns) if uk]
    jaxpr_unknown = Jaxpr([], res_vars + unknown_ins, unknown_outs, un_eqns)
    jaxpr_unknown = dce_jaxpr(jaxpr_unknown)
    core.check_jaxpr(jaxpr_known)
    core.check_jaxpr(jaxpr_unknown)
    return jaxpr_known, jaxpr_unknown, out_unknowns, len(residuals)


def convert_constvars_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    return Jaxpr([], jaxpr.constvars + jaxpr.invars, jaxpr.outvars, jaxpr.eqns)


def instantiate_const(trace: StagingTrace, x: Any) -> StagingTracer:
    if isinstance(x, StagingTracer) and x._trace.main is trace.main:
        return x
    return trace.get_or_make_const_tracer(x)


def is_known(x: StagingTracer) -> bool:
    """Whether a tracer of a linearize-time staging trace stands for a known constant."""
    return x.const is not _no_const


# ---------------------------------------------------------------------------------------------
# JAX's partial-value interface (``pe.PartialVal``, ``pe.trace_to_jaxpr_nounits``), for libraries
# that split a function into what is known now and what is not (flax's ``lazy_init``, ``nn.scan``)


class PartialVal(tuple):
    """A value that is known (``(None, const)``) or only abstract (``(aval, None)``)."""

    def __new__(cls, xs: tuple[Any, Any]) -> PartialVal:
        return tuple.__new__(cls, xs)

    @classmethod
    def known(cls, const: Any) -> PartialVal:
        return cls((None, const))

    @classmethod
    def unknown(cls, aval: ShapedArray) -> PartialVal:
        return cls((aval, None))

    def is_known(self) -> bool:
        return self[0] is None

    def get_known(self) -> Any:
        """The known value, or None."""
        return self[1] if self[0] is None else None

    def get_aval(self) -> ShapedArray:
        return core.get_aval(self[1]) if self[0] is None else self[0]


def trace_to_jaxpr_nounits(
    fun: Any, pvals: Sequence[PartialVal], instantiate: bool | Sequence[bool] = False
) -> tuple[Jaxpr, list[PartialVal], list]:
    """Run ``fun`` (a ``WrappedFun`` or callable of flat arguments) with the known ``pvals`` as
    values and the unknown ones abstract: what depends only on known values is computed now, the
    rest is staged. Returns ``(jaxpr, out_pvals, consts)``; the jaxpr takes the unknown inputs
    (after ``consts``) and gives the unknown outputs (and those ``instantiate`` forces)."""
    call = fun.call_wrapped if hasattr(fun, "call_wrapped") else fun
    builder = JaxprBuilder()
    with core.new_main(StagingTrace, builder, "trace_to_jaxpr_nounits") as main:
        trace = StagingTrace(main)
        from fjax._prng import PRNGKeyArray  # key arrays are staged as their uint32 data

        args, in_tracers = [], []
        for pv in pvals:
            if pv.is_known():
                args.append(pv.get_known())
            elif isinstance(pv[0].dtype, dtypes.KeyDtype):
                t = trace.new_arg(ShapedArray((*pv[0].shape, 2), np.uint32))
                in_tracers.append(t)
                args.append(PRNGKeyArray(t))
            else:
                t = trace.new_arg(pv[0])
                in_tracers.append(t)
                args.append(t)
        outs = list(call(*args))
        insts = [instantiate] * len(outs) if isinstance(instantiate, bool) else list(instantiate)
        out_pvals, out_tracers = [], []
        for o, inst in core.safe_zip(outs, insts):
            key = isinstance(o, PRNGKeyArray)
            x = o._base if key else o
            own = _is_own(x, main)
            if own and is_known(x) and not inst:
                out_pvals.append(PartialVal.known(PRNGKeyArray(x.const) if key else x.const))
            elif own or inst:
                t = instantiate_const(trace, x)
                out_tracers.append(t)
                out_pvals.append(PartialVal.unknown(o.aval if key else t.aval))
            else:
                out_pvals.append(PartialVal.known(o))
        jaxpr, consts = builder.build(in_tracers, out_tracers)
    return jaxpr, out_pvals, consts
