"""Automatic differentiation: forward mode by dual numbers, linearization and transposition.

* ``JVPTrace``: each ``JVPTracer`` carries (primal, tangent); the tangent may be a symbolic
  ``Zero`` so unperturbed inputs cost nothing. Rules live in ``primitive_jvps``.
* ``linearize``: a JVP trace over a partial-evaluation (staging) level, so primal values are
  computed eagerly while the tangent computation is recorded as a linear jaxpr whose constants
  are the residuals.
* ``backward_pass``: transposes a linear jaxpr with the rules in ``primitive_transposes``.

Every rule is written with fjax primitives, so reverse-over-reverse, forward-over-reverse and
reverse-over-forward all work to any order.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from fjax import core, dtypes
from fjax.core import Array, ShapedArray, Tracer
from fjax.dtypes import kind as _dkind
from fjax.interpreters import partial_eval as pe

# rule(primals, tangents, **params) -> (primal_out, tangent_out)
primitive_jvps: dict[core.Primitive, Callable] = {}
# rule(cts, *invals, **params) -> list of cts for each input (None or Zero where not linear)
primitive_transposes: dict[core.Primitive, Callable] = {}

# hooks filled in by fjax.lax (the interpreters never import lax)
_add_any: Callable | None = None  # add two tangents of the same aval
_zeros_like: Callable | None = None  # zeros of an aval, as an fjax value


class Zero:
    """A symbolic zero tangent or cotangent of the given aval."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Zero({self.aval.str_short()})"

    @staticmethod
    def from_value(x: Any) -> Zero:
        return Zero(tangent_aval(core.get_aval(x)))


def tangent_dtype(dtype: np.dtype) -> np.dtype:
    if _dkind(dtype) in "fc":
        return dtype
    return dtypes.float0


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    td = tangent_dtype(aval.dtype)
    if td is aval.dtype or td == aval.dtype:
        return aval
    return ShapedArray(aval.shape, td, False)


def instantiate_zeros(t: Any) -> Any:
    if type(t) is Zero:
        return _zeros_like(t.aval)
    return t


def add_tangents(a: Any, b: Any) -> Any:
    if type(a) is Zero:
        return b
    if type(b) is Zero:
        return a
    return _add_any(a, b)


class UndefinedPrimal:
    """Marks a linear input of an equation during transposition."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined_primal(x: Any) -> bool:
    return type(x) is UndefinedPrimal


# ---------------------------------------------------------------------------------------------
# the JVP interpreter


class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent")

    def __init__(self, trace: JVPTrace, primal: Any, tangent: Any):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self) -> ShapedArray:
        return core.get_aval(self.primal)

    def full_lower(self) -> Any:
        if type(self.tangent) is Zero:
            return core.full_lower(self.primal)
        return self

    def to_concrete_value(self) -> Any:
        p = self.primal
        if isinstance(p, Tracer):
            return p.to_concrete_value()
        return p._value if isinstance(p, Array) else np.asarray(p)


class JVPTrace(core.Trace):
    def pure(self, val: Any) -> JVPTracer:
        return JVPTracer(self, val, Zero.from_value(val))

    lift = pure

    def process_primitive(self, primitive: core.Primitive, tracers: list, params: dict) -> Any:
        primals = [t.primal for t in tracers]
        tangents = [t.tangent for t in tracers]
        for t in tangents:
            if type(t) is not Zero:
                break
        else:
            # nothing to differentiate: the rule is skipped, as in JAX (rules of libraries'
            # primitives may assume a perturbed input; some primitives have none)
            out = primitive.bind(*primals, **params)
            if primitive.multiple_results:
                return [JVPTracer(self, o, Zero.from_value(o)) for o in out]
            return JVPTracer(self, out, Zero.from_value(out))
        rule = primitive_jvps.get(primitive)
        if rule is None:
            raise NotImplementedError(f"Differentiation rule for '{primitive.name}' not implemented")
        primal_out, tangent_out = rule(primals, tangents, **params)
        if primitive.multiple_results:
            return [JVPTracer(self, p, t) for p, t in zip(primal_out, tangent_out)]
        return JVPTracer(self, primal_out, tangent_out)


def jvp_flat(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[list, list]:
    """Forward-mode: ``fun`` maps a flat list to a flat list. Tangents may be ``Zero``."""
    with core.new_main(JVPTrace, debug_info="jvp") as main:
        trace = JVPTrace(main)
        tracers_in = [JVPTracer(trace, p, t) for p, t in zip(primals, tangents)]
        outs = fun(*tracers_in)
        tracers_out = [core.full_raise(trace, o) for o in outs]
        primals_out = [t.primal for t in tracers_out]
        tangents_out = [t.tangent for t in tracers_out]
    return primals_out, tangents_out


# ---------------------------------------------------------------------------------------------
# linearize and vjp


def linearize_flat(
    fun: Callable, primals: Sequence[Any], debug_info: str = "linearize"
) -> tuple[list, core.Jaxpr, list, list[bool]]:
    """Evaluate ``fun`` at ``primals`` and record its linear (tangent) map as a jaxpr.

    Returns ``(primals_out, linear_jaxpr, consts, diff_mask)``; the linear jaxpr takes one
    tangent per input with ``diff_mask`` True (floating inputs) and returns one per output.
    """
    builder = pe.JaxprBuilder()
    with core.new_main(pe.StagingTrace, builder, debug_info) as pe_main:
        pe_trace = pe.StagingTrace(pe_main)
        avals = [core.get_aval(p) for p in primals]
        diff_mask = [_dkind(a.dtype) in "fc" for a in avals]
        tangent_tracers = [pe_trace.new_arg(tangent_aval(a)) for a, d in zip(avals, diff_mask) if d]
        it = iter(tangent_tracers)
        tangents = [next(it) if d else Zero(tangent_aval(a)) for a, d in zip(avals, diff_mask)]
        primals_out, tangents_out = jvp_flat(fun, primals, tangents)
        for p in primals_out:
            if isinstance(p, pe.StagingTracer) and p._trace.main is pe_main:
                raise AssertionError("linearize: a primal output depends on the tangents (internal error)")
        out_tracers = []
        for t in tangents_out:
            if type(t) is Zero:
                t = _zeros_like(t.aval)
            out_tracers.append(pe.instantiate_const(pe_trace, t))
        jaxpr, consts = builder.build(tangent_tracers, out_tracers)
    return primals_out, jaxpr, consts, diff_mask


def backward_pass(
    jaxpr: core.Jaxpr,
    consts: Sequence[Any],
    args: Sequence[Any],
    cts: Sequence[Any],
    ct_seeds: Sequence[Any] | None = None,
) -> list:
    """Transpose ``jaxpr`` with respect to the inputs given as ``UndefinedPrimal``.

    ``cts`` are the output cotangents (``Zero`` allowed); returns one cotangent per input
    (``Zero`` where none flows, ``None`` for defined, non-linear inputs). ``ct_seeds`` (one per
    input, ``None`` for none) start an input's cotangent at a value that each contribution is
    added to as it arrives (JAX's seeded ``ValAccum``: a scan's const-cotangent accumulator).
    """
    primal_env: dict = {}
    ct_env: dict = {}
    if ct_seeds is not None:
        for v, seed in core.safe_zip(jaxpr.invars, ct_seeds):
            if seed is not None:
                ct_env[v] = seed

    def read_primal(v: Any) -> Any:
        if type(v) is core.Literal:
            return v.as_array()
        return primal_env.get(v, UndefinedPrimal(v.aval))

    def write_primal(v: Any, val: Any) -> None:
        if not is_undefined_primal(val):
            primal_env[v] = val

    def read_ct(v: Any) -> Any:
        ct = ct_env.pop(v, None)
        return Zero(tangent_aval(v.aval)) if ct is None else ct

    def write_ct(v: Any, ct: Any) -> None:
        if type(v) is core.Literal or ct is None or type(ct) is Zero:
            return
        prev = ct_env.get(v)
        ct_env[v] = ct if prev is None else _add_any(prev, ct)

    for v, c in zip(jaxpr.constvars, consts):
        write_primal(v, c)
    for v, a in core.safe_zip(jaxpr.invars, args):
        write_primal(v, a)
    # forward pass: equations that touch no linear input are evaluated now
    linear_eqns = []
    for eqn in jaxpr.eqns:
        ins = [read_primal(x) for x in eqn.invars]
        if any(is_undefined_primal(x) for x in ins):
            linear_eqns.append(eqn)
        else:
            outs = core.bind(eqn.primitive, ins, eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
            for v, o in zip(eqn.outvars, outs):
                write_primal(v, o)
    for v, ct in core.safe_zip(jaxpr.outvars, cts):
        write_ct(v, ct)
    for eqn in reversed(linear_eqns):
        cts_in = [read_ct(v) for v in eqn.outvars]
        if all(type(c) is Zero for c in cts_in):
            continue
        primals_in = [read_primal(x) for x in eqn.invars]
        rule = primitive_transposes.get(eqn.primitive)
        if rule is None:
            raise NotImplementedError(
                f"Transpose rule (for reverse-mode differentiation) for '{eqn.primitive.name}' not implemented"
            )
        cts_out = rule(cts_in if eqn.primitive.multiple_results else cts_in[0], *primals_in, **eqn.params)
        for x, ct in core.safe_zip(eqn.invars, cts_out):
            if type(x) is not core.Literal and is_undefined_primal(read_primal(x)):
                write_ct(x, ct)
    out = []
    for v, a in zip(jaxpr.invars, args):
        if is_undefined_primal(a):
            out.append(read_ct(v))
        else:
            out.append(None)
    return out


def vjp_flat(fun: Callable, primals: Sequence[Any], debug_info: str = "vjp") -> tuple[list, Callable]:
    """Reverse mode on flat lists; the returned function maps output cotangents to input ones."""
    primals_out, jaxpr, consts, diff_mask = linearize_flat(fun, primals, debug_info)
    in_avals = [tangent_aval(core.get_aval(p)) for p in primals]

    def f_vjp(*cts: Any) -> list:
        undefined = [UndefinedPrimal(v.aval) for v in jaxpr.invars]
        cts_lin = backward_pass(jaxpr, consts, undefined, list(cts))
        it = iter(cts_lin)
        out = []
        for aval, d in zip(in_avals, diff_mask):
            out.append(next(it) if d else Zero(aval))
        return out

    return primals_out, f_vjp


# ---------------------------------------------------------------------------------------------
# helpers for writing rules


def defjvp(prim: core.Primitive, *jvp_fns: Callable | None) -> None:
    """Per-input JVP: ``jvp_fns[i](g, *primals, **params)`` is the tangent from input i.

    ``None`` marks an input that is not differentiable. Zero tangents are skipped.
    """

    def rule(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
        primal_out = prim.bind(*primals, **params)
        t_out: Any = None
        for f, t in zip(jvp_fns, tangents):
            if f is None or type(t) is Zero:
                continue
            contrib = f(t, *primals, **params)
            t_out = contrib if t_out is None else _add_any(t_out, contrib)
        if t_out is None:
            t_out = Zero(tangent_aval(core.get_aval(primal_out)))
        return primal_out, t_out

    primitive_jvps[prim] = rule


def defjvp2(prim: core.Primitive, *jvp_fns: Callable | None) -> None:
    """Like ``defjvp`` but each function also gets the primal output: ``f(g, ans, *primals)``."""

    def rule(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
        ans = prim.bind(*primals, **params)
        t_out: Any = None
        for f, t in zip(jvp_fns, tangents):
            if f is None or type(t) is Zero:
                continue
            contrib = f(t, ans, *primals, **params)
            t_out = contrib if t_out is None else _add_any(t_out, contrib)
        if t_out is None:
            t_out = Zero(tangent_aval(core.get_aval(ans)))
        return ans, t_out

    primitive_jvps[prim] = rule


def defzero(prim: core.Primitive) -> None:
    """A primitive whose output does not depend differentiably on its inputs."""

    def rule(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
        out = prim.bind(*primals, **params)
        if prim.multiple_results:
            return out, [Zero(tangent_aval(core.get_aval(o))) for o in out]
        return out, Zero(tangent_aval(core.get_aval(out)))

    primitive_jvps[prim] = rule


def deflinear(prim: core.Primitive, transpose_rule: Callable) -> None:
    """A primitive linear in all of its (array) inputs: its JVP applies it to the tangents.

    As JAX's: ``transpose_rule(ct, **params)`` returns cotangents for every input (it is not given
    the inputs; ``deflinear2``'s rule is). A symbolic-zero cotangent gives zero cotangents.
    """

    def transpose(ct: Any, *invals: Any, **params: Any) -> Any:
        if type(ct) is Zero:
            return [Zero(tangent_aval(x.aval)) if is_undefined_primal(x) else None for x in invals]
        return transpose_rule(ct, **params)

    deflinear2(prim, transpose)


def deflinear2(prim: core.Primitive, transpose_rule: Callable) -> None:
    """A primitive linear in all of its (array) inputs: its JVP applies it to the tangents.

    ``transpose_rule(ct, *invals, **params)`` returns cotangents for every input (as JAX's
    ``deflinear2``; the inputs being transposed are ``UndefinedPrimal``s carrying their avals).
    """

    def jvp(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
        out = prim.bind(*primals, **params)
        if all(type(t) is Zero for t in tangents):
            if prim.multiple_results:
                return out, [Zero(tangent_aval(core.get_aval(o))) for o in out]
            return out, Zero(tangent_aval(core.get_aval(out)))
        t_out = prim.bind(*[instantiate_zeros(t) for t in tangents], **params)
        return out, t_out

    primitive_jvps[prim] = jvp
    primitive_transposes[prim] = transpose_rule


def defbilinear(prim: core.Primitive, lhs_rule: Callable, rhs_rule: Callable) -> None:
    """A primitive linear in each of its two inputs separately (mul, dot_general, conv).

    ``lhs_rule(ct, x, y, **params)`` is the cotangent for x when x is the linear input
    (``x`` is then an UndefinedPrimal carrying its aval); likewise ``rhs_rule`` for y.
    """

    def jvp(primals: list, tangents: list, **params: Any) -> tuple[Any, Any]:
        x, y = primals
        tx, ty = tangents
        out = prim.bind(x, y, **params)
        t_out: Any = None
        if type(tx) is not Zero:
            t_out = prim.bind(tx, y, **params)
        if type(ty) is not Zero:
            c = prim.bind(x, ty, **params)
            t_out = c if t_out is None else _add_any(t_out, c)
        if t_out is None:
            t_out = Zero(tangent_aval(core.get_aval(out)))
        return out, t_out

    def transpose(ct: Any, x: Any, y: Any, **params: Any) -> list:
        if type(ct) is Zero:
            return [None, None]
        cx = lhs_rule(ct, x, y, **params) if is_undefined_primal(x) else None
        cy = rhs_rule(ct, x, y, **params) if is_undefined_primal(y) else None
        return [cx, cy]

    primitive_jvps[prim] = jvp
    primitive_transposes[prim] = transpose


# ---------------------------------------------------------------------------------------------
# JVP of a jaxpr (the one implementation behind jit, checkpoint and the control-flow primitives)


def _as_value(x: Any, name: str) -> Any:
    if isinstance(x, (Tracer, Array)):
        return x
    return core.to_array(x, name)


def _trace_closed(fun: Callable, in_avals: Sequence[ShapedArray], name: str) -> tuple[core.ClosedJaxpr, list]:
    """Trace ``fun`` (flat list -> flat list) to a ClosedJaxpr whose constants are hoisted into
    leading inputs (returned as the second element)."""
    jaxpr, consts, _ = pe.trace_to_jaxpr(lambda *xs: [_as_value(o, name) for o in fun(*xs)], list(in_avals), name)
    return core.ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), []), list(consts)


def jvp_jaxpr(
    closed: core.ClosedJaxpr, nonzeros: Sequence[bool], instantiate: bool | Sequence[bool], name: str = "jvp"
) -> tuple[core.ClosedJaxpr, list, list[bool]]:
    """The JVP of ``closed`` as a jaxpr ``(consts + primals + nonzero tangents) -> (primal outs +
    present tangents)``; ``consts`` are the values its hoisted constants take.

    Returns ``(jvp_closed, consts, out_nonzeros)``: output ``i``'s tangent is present where
    ``out_nonzeros[i]``: where ``instantiate`` (True: every output) asks for it, or where it is
    nonzero on a float output. Cached by (jaxpr, nonzeros, instantiate, name)."""
    n_out = len(closed.out_avals)
    inst = (True,) * n_out if instantiate is True else (False,) * n_out if instantiate is False else tuple(instantiate)
    return _jvp_jaxpr(closed, tuple(bool(z) for z in nonzeros), tuple(bool(i) for i in inst), name)


@core.cache_in_context(maxsize=4096)
def _jvp_jaxpr(closed: core.ClosedJaxpr, nonzeros: tuple, instantiate: tuple, name: str) -> tuple:
    avals = closed.in_avals
    n = len(avals)
    t_avals = [tangent_aval(a) for a, nz in zip(avals, nonzeros) if nz]
    box: list = []

    def f(*args: Any) -> list:
        it = iter(args[n:])
        tans = [next(it) if nz else Zero(tangent_aval(a)) for a, nz in zip(avals, nonzeros)]
        po, to = jvp_flat(lambda *xs: core.eval_jaxpr(closed.jaxpr, closed.consts, *xs), list(args[:n]), tans)
        out_nz = [
            inst or (type(t) is not Zero and _dkind(core.get_aval(p).dtype) in "fc")
            for p, t, inst in zip(po, to, instantiate)
        ]
        box.append(out_nz)
        return list(po) + [instantiate_zeros(t) for t, nz in zip(to, out_nz) if nz]

    new, consts = _trace_closed(f, list(avals) + t_avals, name)
    return new, consts, box[0]
