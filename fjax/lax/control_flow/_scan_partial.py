"""Partial evaluation of ``scan`` (linearize/grad): the body is split with
``pe.partial_eval_jaxpr`` into a known scan, run now, whose per-step residuals come out as extra
stacked ``ys``, and an unknown (tangent) scan staged to consume them (see ``scan.py``'s docstring).
Registers ``pe.partial_eval_rules`` and ``pe.partial_eval_jaxpr_rules`` for ``scan_p``."""

from __future__ import annotations

from fjax import core
from fjax.core import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from fjax.interpreters import partial_eval as pe
from fjax.lax.control_flow.scan import _bind, _stacked, scan_p


class _Split:
    """How a scan splits for given unknown inputs (see ``_split_scan``)."""

    __slots__ = (
        "carry_uk",
        "out_uk",
        "known_jaxpr",
        "known_num_consts",
        "known_num_carry",
        "num_known_outs",
        "unknown_jaxpr",
        "unknown_num_consts",
        "unknown_num_carry",
        "const_res",
        "ext_res",
        "res_avals",
        "known_const_keep",
        "known_runs",
    )


@core.cache_in_context(maxsize=1024)
def _split_scan(jaxpr: ClosedJaxpr, num_consts: int, num_carry: int, unknowns: tuple) -> _Split:
    """Split the body for the unknown inputs ``unknowns``.

    The known scan takes the known ``consts, carry, xs`` and returns the known carries and ys
    followed by the stacked residuals. The unknown scan takes ``const_res + unknown consts``,
    the unknown carries and ``ext_res + unknown xs``. ``const_res`` lists operand indices (known
    consts used as residuals); ``ext_res`` lists ``("in", operand index)`` (a known xs used as
    residual) or ``("out", k)`` (the k-th stacked residual output of the known scan).
    """
    body = jaxpr.jaxpr
    n_in = len(body.invars)
    const_uk = list(unknowns[:num_consts])
    carry_uk = list(unknowns[num_consts : num_consts + num_carry])
    xs_uk = list(unknowns[num_consts + num_carry :])
    n_ys = len(body.outvars) - num_carry
    for _ in range(num_carry + 1):
        in_uk = const_uk + carry_uk + xs_uk
        jk, ju, out_uk, num_res = pe.partial_eval_jaxpr(body, in_uk, instantiate=carry_uk + [False] * n_ys)
        new = [a or b for a, b in zip(carry_uk, out_uk[:num_carry])]
        if new == carry_uk:
            break
        carry_uk = new
    known_idx = [i for i in range(n_in) if not in_uk[i]]
    pos_of_known_invar = {v: known_idx[j] for j, v in enumerate(jk.invars)}
    n_known_outs = len(jk.outvars) - num_res
    res_out_vars = jk.outvars[n_known_outs:]
    res_in_vars = ju.invars[:num_res]
    # loop-invariant residuals (computed from known consts only) are recomputed in the unknown
    # body from the consts instead of being stacked once per step
    invariant = {v for v, pos in pos_of_known_invar.items() if pos < num_consts}
    producer: dict = {}
    for e in jk.eqns:
        if all(type(x) is not Var or x in invariant for x in e.invars):
            invariant.update(e.outvars)
            for o in e.outvars:
                producer[o] = e
    const_res, const_res_vars = [], []
    const_var_of: dict = {}  # known const invar of jk -> its binder in the unknown body
    ext_res, ext_res_vars, stacked_outs = [], [], []
    recompute: dict = {}  # invariant residual var of jk -> its binder in the unknown body
    for rv, rin in zip(res_out_vars, res_in_vars):
        pos = pos_of_known_invar.get(rv) if type(rv) is Var else None
        if pos is not None and pos < num_consts:
            const_res.append(pos)
            const_res_vars.append(rin)
            const_var_of[rv] = rin
        elif pos is not None and pos >= num_consts + num_carry:
            ext_res.append(("in", pos))
            ext_res_vars.append(rin)
        elif rv in producer:
            recompute[rv] = rin
        else:
            ext_res.append(("out", len(stacked_outs)))
            ext_res_vars.append(rin)
            stacked_outs.append(rv)
    pre_eqns: list = []
    if recompute:
        needed: set = set(recompute)
        chain = []
        for e in reversed(jk.eqns):
            if any(o in needed for o in e.outvars) and e is producer.get(e.outvars[0]):
                chain.append(e)
                needed.update(x for x in e.invars if type(x) is Var)
        chain.reverse()
        sub = dict(recompute)
        for v in needed:
            pos = pos_of_known_invar.get(v)
            if pos is not None and v not in sub:
                if v not in const_var_of:
                    nv = Var(v.aval)
                    const_res.append(pos)
                    const_res_vars.append(nv)
                    const_var_of[v] = nv
                sub[v] = const_var_of[v]
        for e in chain:
            outs = []
            for o in e.outvars:
                if o not in sub:
                    sub[o] = Var(o.aval)
                outs.append(sub[o])
            ins = [sub.get(x, x) if type(x) is Var else x for x in e.invars]
            pre_eqns.append(e.replace(invars=ins, outvars=outs))
    known = Jaxpr([], jk.invars, jk.outvars[:n_known_outs] + stacked_outs, jk.eqns)
    known = pe.dce_jaxpr(known, keep_inputs=True)
    # known consts the known body no longer reads (a forwarded carry turned constant, or one
    # only the tangent side used) are not passed: JAX's known scan takes only the consts its
    # body uses (what its hoisting of the known body's consts leaves)
    n_kc = num_consts - sum(const_uk)
    read = {x for e in known.eqns for x in e.invars if type(x) is Var}
    read.update(x for x in known.outvars if type(x) is Var)
    known_const_keep = tuple(v in read for v in known.invars[:n_kc])
    if not all(known_const_keep):
        kept = [v for v, k in zip(known.invars[:n_kc], known_const_keep) if k]
        known = Jaxpr([], kept + list(known.invars[n_kc:]), known.outvars, known.eqns)
    core.check_jaxpr(known)
    uk_ins = ju.invars[num_res:]
    n_uc = sum(const_uk)
    n_ucarry = sum(carry_uk)
    uk_consts, uk_carry, uk_xs = uk_ins[:n_uc], uk_ins[n_uc : n_uc + n_ucarry], uk_ins[n_uc + n_ucarry :]
    unknown = Jaxpr([], const_res_vars + uk_consts + uk_carry + ext_res_vars + uk_xs, ju.outvars, pre_eqns + ju.eqns)
    unknown = pe.dce_jaxpr(unknown, keep_inputs=True)
    core.check_jaxpr(unknown)
    s = _Split()
    s.carry_uk = tuple(carry_uk)
    s.out_uk = tuple(out_uk)
    s.known_jaxpr = ClosedJaxpr(known, [])
    s.known_num_consts = sum(known_const_keep)
    s.known_const_keep = known_const_keep
    # a known scan with no outputs and no effects is not run (JAX binds none: "Run the known
    # part of the scan (if it has any outputs or effects)"), so grad of a scan whose outputs
    # are all forwarded leaves no empty scan behind
    s.known_runs = bool(known.outvars) or pe.jaxpr_has_effects(known)
    s.known_num_carry = num_carry - n_ucarry
    s.num_known_outs = n_known_outs
    s.unknown_jaxpr = ClosedJaxpr(unknown, [])
    s.unknown_num_consts = len(const_res) + n_uc
    s.unknown_num_carry = n_ucarry
    s.const_res = tuple(const_res)
    s.ext_res = tuple(ext_res)
    s.res_avals = tuple(v.aval for v in stacked_outs)
    return s


def _known_operands(s: _Split, operands: list, in_uk: list, num_consts: int) -> list:
    """The operands of the known scan: the known consts its body reads, known carries, known xs."""
    keep = iter(s.known_const_keep)
    return [x for i, (x, u) in enumerate(zip(operands, in_uk)) if not u and (i >= num_consts or next(keep))]


def _unknown_operands(s: _Split, operands: list, stacked_res: list, unknowns: list, num_consts: int, num_carry: int):
    """The operands of the unknown scan: ``const_res, unknown consts, unknown carries (those with
    carry_uk), ext_res, unknown xs``."""
    n = len(operands)
    uk_consts = [operands[i] for i in range(num_consts) if unknowns[i]]
    uk_carry = [operands[num_consts + j] for j in range(num_carry) if s.carry_uk[j]]
    uk_xs = [operands[i] for i in range(num_consts + num_carry, n) if unknowns[i]]
    const_res = [operands[i] for i in s.const_res]
    ext = [operands[k] if kind == "in" else stacked_res[k] for kind, k in s.ext_res]
    return [*const_res, *uk_consts, *uk_carry, *ext, *uk_xs]


def _part_params(jaxpr, num_consts: int, num_carry: int, length: int, reverse: bool, unroll) -> dict:  # noqa: ANN001
    """The params of one part (known or unknown) of a scan split by partial evaluation: its own
    body and counts, the original's length, direction and unrolling (nothing else: ``linear`` and
    the like describe the original's operands)."""
    return dict(jaxpr=jaxpr, length=length, num_carry=num_carry, num_consts=num_consts, reverse=reverse, unroll=unroll)


def _scan_partial_eval(
    trace: pe.StagingTrace,
    tracers: list,
    *,
    jaxpr: ClosedJaxpr,
    length: int,
    num_carry: int,
    num_consts: int,
    reverse: bool,
    unroll: int,
) -> list:
    unknowns = [not pe.is_known(t) for t in tracers]
    params = dict(length=length, reverse=reverse, unroll=unroll)
    if not any(unknowns):
        return _bind([t.const for t in tracers], jaxpr=jaxpr, num_carry=num_carry, num_consts=num_consts, **params)
    s = _split_scan(jaxpr, num_consts, num_carry, tuple(unknowns))
    in_uk = list(unknowns)
    in_uk[num_consts : num_consts + num_carry] = s.carry_uk
    known_vals = [t.const for t in _known_operands(s, list(tracers), in_uk, num_consts)]
    known_outs = (
        _bind(known_vals, jaxpr=s.known_jaxpr, num_carry=s.known_num_carry, num_consts=s.known_num_consts, **params)
        if s.known_runs
        else []
    )
    stacked = [trace.get_or_make_const_tracer(r) for r in known_outs[s.num_known_outs :]]
    uk_ops = _unknown_operands(s, list(tracers), stacked, unknowns, num_consts, num_carry)
    uk_ops = [pe.instantiate_const(trace, t) for t in uk_ops]
    n_uk_out = sum(s.out_uk)
    if n_uk_out:
        uk_outs = trace.default_process_primitive(
            scan_p,
            uk_ops,
            _part_params(s.unknown_jaxpr, s.unknown_num_consts, s.unknown_num_carry, length, reverse, unroll),
        )
    else:
        uk_outs = []
    ki, ui = iter(known_outs[: s.num_known_outs]), iter(uk_outs)
    return [next(ui) if u else next(ki) for u in s.out_uk]


pe.partial_eval_rules[scan_p] = _scan_partial_eval


def _scan_partial_eval_jaxpr(eqn: JaxprEqn, unknowns: list) -> tuple:
    """Split a scan equation nested in a jaxpr being partially evaluated."""
    p = eqn.params
    num_consts, num_carry = p["num_consts"], p["num_carry"]
    how = (p["length"], p["reverse"], p["unroll"])
    s = _split_scan(p["jaxpr"], num_consts, num_carry, tuple(unknowns))
    in_uk = list(unknowns)
    in_uk[num_consts : num_consts + num_carry] = s.carry_uk
    known_ins = _known_operands(s, list(eqn.invars), in_uk, num_consts)
    known_outs = [v for v, u in zip(eqn.outvars, s.out_uk) if not u]
    res = [Var(_stacked(a, p["length"])) for a in s.res_avals]
    eqn_known = (
        None
        if not s.known_runs
        else core.JaxprEqn(
            scan_p,
            known_ins,
            known_outs + res,
            _part_params(s.known_jaxpr, s.known_num_consts, s.known_num_carry, *how),
        )
    )
    uk_ins = _unknown_operands(s, list(eqn.invars), res, unknowns, num_consts, num_carry)
    uk_outs = [v for v, u in zip(eqn.outvars, s.out_uk) if u]
    eqn_unknown = None
    if uk_outs:
        eqn_unknown = core.JaxprEqn(
            scan_p,
            uk_ins,
            uk_outs,
            _part_params(s.unknown_jaxpr, s.unknown_num_consts, s.unknown_num_carry, *how),
        )
    return eqn_known, eqn_unknown, list(s.out_uk)


pe.partial_eval_jaxpr_rules[scan_p] = _scan_partial_eval_jaxpr
