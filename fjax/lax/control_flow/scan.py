"""``lax.scan`` and ``lax.map``: the ``scan`` higher-order primitive and its rules.

``scan_p`` is bound as ``scan[jaxpr length num_carry num_consts reverse unroll] *consts *init *xs``
(JAX 0.10's parameters). ``jaxpr`` is a ``ClosedJaxpr`` without constants whose inputs are
``consts + carry + x`` (one slice of each ``xs`` leaf) and whose outputs are ``carry + y``; the
primitive returns the final carry followed by the ``ys`` stacked along a new leading axis.

Rules:

* impl: a Python loop evaluating the body's equations directly with their numpy ``impl`` (no
  per-equation abstract evaluation), writing each ``y`` into a preallocated stacked array; with
  the compiling jit backend the body is compiled once and called per step;
* JVP: a scan of the JVP body (``ad.jvp_jaxpr``, inputs and outputs regrouped per consts, carry
  and xs), with a fixed point over which carries have nonzero tangents;
* partial evaluation (linearize/grad; in ``_scan_partial.py``): the body is split with
  ``pe.partial_eval_jaxpr`` into a known scan, run now, whose per-step residuals come out as extra
  stacked ``ys``, and an unknown (tangent) scan staged to consume them; carries whose tangents
  are unknown go to the unknown side (fixed point). Residuals that are loop-invariant inputs
  (consts) are passed as consts and residuals that are known ``xs`` are passed through, not
  re-stacked. The same split serves ``pe.partial_eval_jaxpr_rules`` (a scan nested in a jaxpr,
  e.g. inside jit, under grad);
* transpose: a scan in the opposite direction over the transposed body, accumulating the
  cotangents of linear consts as carries and producing those of linear ``xs`` as ``ys``;
* batching: batched consts/carries/xs (the batch axis of ``xs`` is moved to 1, the scanned axis
  stays 0), with a fixed point over which carries are batched;
* DCE: unused outputs are pruned (with a fixed point over carries that feed used ones).
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable, Sequence

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core
from fjax.config import config
from fjax.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, ShapedArray, Var
from fjax.interpreters import ad, batching
from fjax.interpreters import partial_eval as pe
from fjax.interpreters.ad import UndefinedPrimal, Zero, is_undefined_primal
from fjax.lax.control_flow import common
from fjax.lax.control_flow._scan_forwarding import scan_forwarding

__all__ = ["map", "scan", "scan_p"]

scan_p = core.Primitive("scan")
scan_p.multiple_results = True


def _bind(
    args: Sequence[Any],
    *,
    jaxpr: ClosedJaxpr,
    length: int,
    num_carry: int,
    num_consts: int,
    reverse: bool,
    unroll: int,
) -> list:
    # params in JAX's (alphabetical) order, so the equation prints as JAX prints it
    params = dict(
        jaxpr=jaxpr, length=length, num_carry=num_carry, num_consts=num_consts, reverse=reverse, unroll=unroll
    )
    return core.bind(scan_p, list(args), params)


def _stacked(aval: ShapedArray, length: int) -> ShapedArray:
    return ShapedArray((length, *aval.shape), aval.dtype, aval.weak_type)


def _unstacked(aval: ShapedArray) -> ShapedArray:
    return ShapedArray(aval.shape[1:], aval.dtype, aval.weak_type)


def _trace(fun: Callable, in_avals: Sequence[ShapedArray], name: str) -> tuple[ClosedJaxpr, list]:
    """Trace a flat function to a ClosedJaxpr whose constants are hoisted into leading inputs."""
    jaxpr, consts, _ = pe.trace_to_jaxpr(fun, list(in_avals), name)
    return ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), []), list(consts)


# ---------------------------------------------------------------------------------------------
# impl


class _NumpyBody:
    """A jaxpr evaluated on numpy arrays with each primitive's ``impl`` (the types were checked
    when the jaxpr was built, so no abstract evaluation per step)."""

    def __init__(self, jaxpr: Jaxpr):
        slot: dict[Var, int] = {}
        consts: list = []

        def ref(x: Any) -> int:
            if type(x) is Literal:
                consts.append(np.asarray(x.val, dtype=x.aval.dtype))
                return -len(consts)
            return slot[x]

        n = 0
        for v in jaxpr.invars:
            slot[v] = n
            n += 1
        steps = []
        for eqn in jaxpr.eqns:
            ins = [ref(x) for x in eqn.invars]
            outs = []
            for v in eqn.outvars:
                slot[v] = n
                outs.append((n, v.aval.dtype))
                n += 1
            steps.append((eqn.primitive.impl, ins, eqn.params, eqn.primitive.multiple_results, outs))
        self.n_in = len(jaxpr.invars)
        self.n_slots = n
        self.consts = consts
        self.steps = steps
        self.outs = [ref(x) for x in jaxpr.outvars]

    def __call__(self, *args: Any) -> list:
        env: list = list(args) + [None] * (self.n_slots - self.n_in)
        consts = self.consts

        def rd(i: int) -> Any:
            return env[i] if i >= 0 else consts[-i - 1]

        for impl, ins, params, multi, outs in self.steps:
            res = impl(*[rd(i) for i in ins], **params)
            if not multi:
                res = (res,)
            for (i, dt), r in zip(outs, res):
                if type(r) is not np.ndarray or r.dtype != dt:
                    r = np.asarray(r, dtype=dt)
                env[i] = r
        return [rd(i) for i in self.outs]


@functools.lru_cache(maxsize=1024)
def _numpy_body(jaxpr: ClosedJaxpr) -> _NumpyBody:
    return _NumpyBody(jaxpr.jaxpr)


def _body_callable(jaxpr: ClosedJaxpr) -> Callable:
    # ``fjax.jit`` names the function re-exported by fjax: reach the module for its hook
    jit_mod = sys.modules.get("fjax.jit")
    hook = getattr(jit_mod, "compile_hook", None)
    if hook is not None and not config.jax_disable_jit:
        # the compiled body skips the dot_general impl's check: refuse a precision the CPU does
        # not compute (TF32_TF32_F32, ...) as jit does, before compiling
        check = getattr(jit_mod, "cpu_precision_check", None)
        if check is not None:
            check(jaxpr)
        # the lower_fun rules and loop-body forms apply as in jit (a body whose nested loop held a
        # Cholesky factorization ran that loop on the host, once per step)
        expander = getattr(jit_mod, "lowering_expander", None)
        if expander is not None:
            jaxpr = expander(jaxpr)
        # compiled now, not tiered: an eager scan calls its body once per step
        fn = hook(jaxpr, tiered=False)
        if fn is not None:
            return fn
    return _numpy_body(jaxpr)


def _scan_impl(
    *args: Any, jaxpr: ClosedJaxpr, length: int, num_carry: int, num_consts: int, reverse: bool, unroll: int
) -> list:
    consts = list(args[:num_consts])
    carry = list(args[num_consts : num_consts + num_carry])
    xs = args[num_consts + num_carry :]
    y_avals = jaxpr.out_avals[num_carry:]
    ys = [np.empty((length, *a.shape), a.dtype) for a in y_avals]
    body = _body_callable(jaxpr)
    for step in range(length):
        i = length - 1 - step if reverse else step
        outs = body(*consts, *carry, *[x[i, ...] for x in xs])
        carry = outs[:num_carry]
        for y, o in zip(ys, outs[num_carry:]):
            y[i, ...] = o
    carry = [c if type(c) is np.ndarray else np.asarray(c) for c in carry]
    return carry + ys


def _scan_abstract(
    *avals: Any, jaxpr: ClosedJaxpr, length: int, num_carry: int, num_consts: int, reverse: bool, unroll: int
) -> list:
    in_avals = jaxpr.in_avals
    if len(avals) != len(in_avals):
        raise TypeError(f"scan: the body takes {len(in_avals)} inputs but {len(avals)} operands were given")
    for i, (a, b) in enumerate(zip(avals, in_avals)):
        if i >= num_consts + num_carry:
            if not a.shape or a.shape[0] != length:
                raise TypeError(
                    f"scan: scanned operand {i} has type {a.str_short()}, expected a leading axis of length {length}"
                )
            a = _unstacked(a)
        if not core.typematch(a, b):
            raise TypeError(f"scan: operand {i} has type {a.str_short()} where the body expects {b.str_short()}")
    outs = jaxpr.out_avals
    return list(outs[:num_carry]) + [_stacked(a, length) for a in outs[num_carry:]]


scan_p.def_impl(_scan_impl)
scan_p.def_abstract_eval(_scan_abstract)


# ---------------------------------------------------------------------------------------------
# JVP


@core.cache_in_context(maxsize=1024)
def _jvp_body(jaxpr: ClosedJaxpr, num_consts: int, num_carry: int, nonzeros: tuple, carry_nz: tuple) -> tuple:
    """The JVP of the body (``ad.jvp_jaxpr``, carry tangents instantiated for ``carry_nz``) with its
    inputs reordered to ``hoisted, consts, consts_dot, carry, carry_dot, xs, xs_dot`` (only the
    nonzero tangents) and its outputs to ``carry, carry_dot, ys, ys_dot`` (present tangents).
    Returns ``(closed, hoisted_consts, carry_out_nz, ys_nz)``; ``carry_out_nz`` covers ``carry_nz``
    (a fixed point when equal to it). Cached, so a scan's JVP body is one jaxpr object."""
    n = len(jaxpr.in_avals)
    n_out = len(jaxpr.out_avals)
    nz = list(nonzeros)
    nz[num_consts : num_consts + num_carry] = carry_nz
    inst = list(carry_nz) + [False] * (n_out - num_carry)
    closed, consts, out_nz = ad.jvp_jaxpr(jaxpr, nz, inst, name="jvp(scan)")
    j = closed.jaxpr
    h = len(consts)
    primals, tangents = j.invars[h : h + n], iter(j.invars[h + n :])
    invars = list(j.invars[:h])
    for lo, hi in ((0, num_consts), (num_consts, num_consts + num_carry), (num_consts + num_carry, n)):
        invars += primals[lo:hi]
        invars += [next(tangents) for i in range(lo, hi) if nz[i]]
    outs = j.outvars
    t_out = iter(outs[n_out:])
    c_dot = [next(t_out) for z in out_nz[:num_carry] if z]
    y_dot = [next(t_out) for z in out_nz[num_carry:] if z]
    outvars = outs[:num_carry] + c_dot + outs[num_carry:n_out] + y_dot
    body = ClosedJaxpr(Jaxpr([], invars, outvars, j.eqns), [])
    return body, consts, tuple(out_nz[:num_carry]), tuple(out_nz[num_carry:])


def _scan_jvp(
    primals: list,
    tangents: list,
    *,
    jaxpr: ClosedJaxpr,
    length: int,
    num_carry: int,
    num_consts: int,
    reverse: bool,
    unroll: int,
) -> tuple[list, list]:
    nonzeros = tuple(type(t) is not Zero for t in tangents)
    carry_nz = nonzeros[num_consts : num_consts + num_carry]
    for _ in range(num_carry + 1):
        closed, hoisted, c_out_nz, y_nz = _jvp_body(jaxpr, num_consts, num_carry, nonzeros, carry_nz)
        new = tuple(a or b for a, b in zip(carry_nz, c_out_nz))
        if new == carry_nz:
            break
        carry_nz = new
    # with tangents in but none out, JAX still binds the JVP scan (taking the tangents); only
    # all-zero tangents skip it. Under grad its split then runs no empty known scan.
    if not any(nonzeros):
        outs = _bind(
            primals,
            jaxpr=jaxpr,
            length=length,
            num_carry=num_carry,
            num_consts=num_consts,
            reverse=reverse,
            unroll=unroll,
        )
        return outs, [Zero(ad.tangent_aval(core.get_aval(o))) for o in outs]
    consts, init, xs = core.split_list(primals, [num_consts, num_carry])
    c_dot, init_dot, xs_dot = core.split_list(tangents, [num_consts, num_carry])
    c_dot = [t for t in c_dot if type(t) is not Zero]
    xs_dot = [t for t in xs_dot if type(t) is not Zero]
    init_dot = [ad.instantiate_zeros(t) for t, z in zip(init_dot, carry_nz) if z]
    n_cdot = len(init_dot)
    outs = _bind(
        [*hoisted, *consts, *c_dot, *init, *init_dot, *xs, *xs_dot],
        jaxpr=closed,
        length=length,
        num_carry=num_carry + n_cdot,
        num_consts=len(hoisted) + num_consts + len(c_dot),
        reverse=reverse,
        unroll=unroll,
    )
    carry_out, carry_dot, ys, ys_dot = core.split_list(outs, [num_carry, n_cdot, len(y_nz)])
    cd, yd = iter(carry_dot), iter(ys_dot)
    t_carry = [next(cd) if z else Zero(ad.tangent_aval(core.get_aval(c))) for c, z in zip(carry_out, carry_nz)]
    t_ys = [next(yd) if z else Zero(ad.tangent_aval(core.get_aval(y))) for y, z in zip(ys, y_nz)]
    return [*carry_out, *ys], [*t_carry, *t_ys]


ad.primitive_jvps[scan_p] = _scan_jvp


# ---------------------------------------------------------------------------------------------
# transpose


@core.cache_in_context(maxsize=1024)
def _transpose_body(
    jaxpr: ClosedJaxpr, num_consts: int, num_carry: int, const_lin: tuple, xs_lin: tuple, ys_ct_nz: tuple
) -> tuple[ClosedJaxpr, list]:
    """The transposed body: ``res_consts; ct_consts_acc, ct_carry; ct_ys (nonzero), res_xs`` ->
    ``ct_consts_acc', ct_carry_in; ct_xs (linear xs)`` (JAX's order of the scanned inputs)."""
    in_avals = jaxpr.in_avals
    const_avals = in_avals[:num_consts]
    carry_avals = in_avals[num_consts : num_consts + num_carry]
    x_avals = in_avals[num_consts + num_carry :]
    out_avals = jaxpr.out_avals
    y_avals = out_avals[num_carry:]
    res_c_avals = [a for a, lin in zip(const_avals, const_lin) if not lin]
    lin_c_avals = [ad.tangent_aval(a) for a, lin in zip(const_avals, const_lin) if lin]
    ct_carry_avals = [ad.tangent_aval(a) for a in out_avals[:num_carry]]
    res_x_avals = [a for a, lin in zip(x_avals, xs_lin) if not lin]
    ct_y_avals = [ad.tangent_aval(a) for a, z in zip(y_avals, ys_ct_nz) if z]
    sizes = [len(res_c_avals), len(lin_c_avals), len(ct_carry_avals), len(ct_y_avals)]

    def f(*args: Any) -> list:
        res_c, acc, ct_carry, ct_y, res_x = core.split_list(list(args), sizes)
        rc, rx = iter(res_c), iter(res_x)
        full = (
            [UndefinedPrimal(a) if lin else next(rc) for a, lin in zip(const_avals, const_lin)]
            + [UndefinedPrimal(a) for a in carry_avals]
            + [UndefinedPrimal(a) if lin else next(rx) for a, lin in zip(x_avals, xs_lin)]
        )
        cy = iter(ct_y)
        cts = list(ct_carry) + [next(cy) if z else Zero(ad.tangent_aval(a)) for a, z in zip(y_avals, ys_ct_nz)]
        # the accumulators seed the consts' cotangents, so each contribution is added where it
        # arrives (JAX's order of equations in the transposed body)
        it_acc = iter(acc)
        seeds = [next(it_acc) if lin else None for lin in const_lin] + [None] * (len(full) - num_consts)
        res = ad.backward_pass(jaxpr.jaxpr, [], full, cts, seeds)
        ct_c, ct_init, ct_x = core.split_list(res, [num_consts, num_carry])
        ct_c_lin = [c for c, lin in zip(ct_c, const_lin) if lin]
        new_acc = [ad.instantiate_zeros(_nonone(c, a)) for a, c in zip(acc, ct_c_lin)]
        ct_init = [
            ad.instantiate_zeros(Zero(ad.tangent_aval(a)) if c is None else c) for c, a in zip(ct_init, carry_avals)
        ]
        ct_x_lin = [
            ad.instantiate_zeros(Zero(ad.tangent_aval(a)) if c is None else c)
            for c, a, lin in zip(ct_x, x_avals, xs_lin)
            if lin
        ]
        return [*new_acc, *ct_init, *ct_x_lin]

    return _trace(f, res_c_avals + lin_c_avals + ct_carry_avals + ct_y_avals + res_x_avals, "transpose(scan)")


def _nonone(c: Any, like: Any) -> Any:
    return Zero(core.get_aval(like)) if c is None else c


def _scan_transpose(
    cts: list,
    *args: Any,
    jaxpr: ClosedJaxpr,
    length: int,
    num_carry: int,
    num_consts: int,
    reverse: bool,
    unroll: int,
) -> list:
    consts, init, xs = core.split_list(list(args), [num_consts, num_carry])
    const_lin = tuple(is_undefined_primal(c) for c in consts)
    xs_lin = tuple(is_undefined_primal(x) for x in xs)
    ct_carry, ct_ys = cts[:num_carry], cts[num_carry:]
    if all(type(c) is Zero for c in cts):
        return [Zero(a.aval) if is_undefined_primal(a) else None for a in args]
    ct_carry = [
        ad.instantiate_zeros(Zero(ad.tangent_aval(a)) if type(c) is Zero else c)
        for c, a in zip(ct_carry, jaxpr.out_avals[:num_carry])
    ]
    ys_ct_nz = tuple(type(c) is not Zero for c in ct_ys)
    ct_ys = [c for c in ct_ys if type(c) is not Zero]
    res_c = [c for c in consts if not is_undefined_primal(c)]
    res_x = [x for x in xs if not is_undefined_primal(x)]
    acc0 = [ad.instantiate_zeros(Zero(ad.tangent_aval(c.aval))) for c in consts if is_undefined_primal(c)]
    closed, hoisted = _transpose_body(jaxpr, num_consts, num_carry, const_lin, xs_lin, ys_ct_nz)
    outs = _bind(
        [*hoisted, *res_c, *acc0, *ct_carry, *ct_ys, *res_x],
        jaxpr=closed,
        length=length,
        num_carry=len(acc0) + num_carry,
        num_consts=len(hoisted) + len(res_c),
        reverse=not reverse,
        unroll=unroll,
    )
    ct_consts, ct_init, ct_xs = core.split_list(outs, [len(acc0), num_carry])
    cc, cx = iter(ct_consts), iter(ct_xs)
    return (
        [next(cc) if lin else None for lin in const_lin]
        + [c if is_undefined_primal(a) else None for c, a in zip(ct_init, init)]
        + [next(cx) if lin else None for lin in xs_lin]
    )


ad.primitive_transposes[scan_p] = _scan_transpose


# ---------------------------------------------------------------------------------------------
# batching


@core.cache_in_context(maxsize=1024)
def _batch_body(
    jaxpr: ClosedJaxpr, num_carry: int, in_batched: tuple, carry_batched: tuple, size: int, axis_key: tuple = ()
) -> tuple:
    """The body batched at axis 0 for the inputs ``in_batched``; carries in ``carry_batched`` are
    forced batched on output; other outputs are batched only if they vary. Returns
    ``(closed, hoisted_consts, out_batched)``."""
    dims = tuple(0 if b else None for b in in_batched)
    inst = tuple(carry_batched) + (False,) * (len(jaxpr.out_avals) - num_carry)
    closed, hoisted, out_b = batching.batch_jaxpr(jaxpr, dims, size, inst, name="vmap(scan)")
    return closed, hoisted, tuple(out_b)


@batching.wants_axis_size
def _scan_batch(
    vals: list,
    dims: list,
    *,
    jaxpr: ClosedJaxpr,
    length: int,
    num_carry: int,
    num_consts: int,
    reverse: bool,
    unroll: int,
    axis_size: int,
) -> tuple[list, list]:
    batched = [d is not None for d in dims]
    const_b = tuple(batched[:num_consts])
    carry_b = tuple(batched[num_consts : num_consts + num_carry])
    xs_b = tuple(batched[num_consts + num_carry :])
    for _ in range(num_carry + 1):
        closed, hoisted, out_b = _batch_body(
            jaxpr, num_carry, const_b + carry_b + xs_b, carry_b, axis_size, batching.current_axis_key()
        )
        new = tuple(a or b for a, b in zip(carry_b, out_b[:num_carry]))
        if new == carry_b:
            break
        carry_b = new
    consts, init, xs = core.split_list(vals, [num_consts, num_carry])
    cd, idims, xd = core.split_list(dims, [num_consts, num_carry])
    consts = [batching.bdim_at_front(c, d, axis_size) if d is not None else c for c, d in zip(consts, cd)]
    init = [batching.bdim_at_front(c, d, axis_size) if b else c for c, d, b in zip(init, idims, carry_b)]
    xs = [batching.moveaxis(x, d, 1) if d is not None else x for x, d in zip(xs, xd)]
    outs = _bind(
        [*hoisted, *consts, *init, *xs],
        jaxpr=closed,
        length=length,
        num_carry=num_carry,
        num_consts=len(hoisted) + num_consts,
        reverse=reverse,
        unroll=unroll,
    )
    out_dims = [0 if b else None for b in carry_b] + [1 if b else None for b in out_b[num_carry:]]
    return outs, out_dims


batching.primitive_batchers[scan_p] = _scan_batch


# ---------------------------------------------------------------------------------------------
# dead-code elimination


def _scan_dce(used_outputs: list, eqn: JaxprEqn) -> tuple[list, JaxprEqn | None]:
    if not any(used_outputs):
        return [False] * len(eqn.invars), None
    p = eqn.params
    num_consts, num_carry = p["num_consts"], p["num_carry"]
    body = p["jaxpr"].jaxpr
    used_carry = list(used_outputs[:num_carry])
    used_ys = list(used_outputs[num_carry:])
    for _ in range(num_carry + 1):
        new = pe.dce_jaxpr(body, used_carry + used_ys, keep_inputs=True)
        live = {x for e in new.eqns for x in e.invars if type(x) is Var}
        live.update(x for x in new.outvars if type(x) is Var)
        used_in = [v in live for v in body.invars]
        nxt = [a or b for a, b in zip(used_carry, used_in[num_consts : num_consts + num_carry])]
        if nxt == used_carry:
            break
        used_carry = nxt
    used_in[num_consts : num_consts + num_carry] = used_carry
    if all(used_in) and all(used_outputs[:num_carry]) and len(new.outvars) == len(body.outvars):
        return [True] * len(eqn.invars), eqn
    new_body = Jaxpr([], [v for v, u in zip(body.invars, used_in) if u], new.outvars, new.eqns)
    used_outs_full = used_carry + used_ys
    new_eqn = eqn.replace(
        invars=[x for x, u in zip(eqn.invars, used_in) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_outs_full) if u],
        params=dict(
            p,
            jaxpr=ClosedJaxpr(new_body, []),
            num_consts=sum(used_in[:num_consts]),
            num_carry=sum(used_carry),
        ),
    )
    return used_in, new_eqn


pe.dce_rules[scan_p] = _scan_dce


# ---------------------------------------------------------------------------------------------
# the user-facing functions


def _leaf_paths(tree: Any, prefix: str) -> list[str]:
    try:
        return [prefix + tu.keystr(p) for p, _ in tu.tree_flatten_with_path(tree)[0]]
    except Exception:  # custom nodes without keys
        n = len(tu.tree_leaves(tree))
        return [f"{prefix}[<flat index {i}>]" for i in range(n)]


def _scan_length(xs: Any, xs_flat: list, length: Any) -> int:
    paths = _leaf_paths(xs, "xs")
    no_axis = [p for p, x in zip(paths, xs_flat) if not core.get_aval(x).shape]
    if no_axis:
        raise ValueError(
            "scan got value with no leading axis to scan over: "
            + ", ".join(f"{p} of shape {core.get_aval(x).shape}" for p, x in zip(paths, xs_flat) if p in no_axis)
            + "."
        )
    lengths = [core.get_aval(x).shape[0] for x in xs_flat]
    if length is not None:
        try:
            length = int(length)
        except core.ConcretizationTypeError:
            raise core.ConcretizationTypeError(
                length,
                "The `length` argument to `scan` expects a concrete `int` value. For scan-like iteration with a "
                "dynamic length, use `while_loop` or `fori_loop`.",
            ) from None
        if not all(length == n for n in lengths):
            raise ValueError(
                f"scan got `length` argument of {length} which disagrees with leading axis sizes {lengths}."
            )
        return length
    unique = set(lengths)
    if len(unique) > 1:
        raise ValueError(
            "scan got values with different leading axis sizes: " + ", ".join(str(n) for n in lengths) + "."
        )
    if not unique:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    return lengths[0]


def scan(
    f: Callable,
    init: Any,
    xs: Any = None,
    length: int | None = None,
    reverse: bool = False,
    unroll: int | bool = 1,
    _split_transpose: bool = False,
    _trace_key: tuple | None = None,
) -> tuple[Any, Any]:
    kw = dict(length=length, reverse=reverse, unroll=unroll, _split_transpose=_split_transpose)
    try:
        return _scan(f, init, xs, **kw, _trace_key=_trace_key)
    except NotImplementedError as e:
        from fjax import ref  # noqa: PLC0415

        if ref.outer_ref_of(e) is None:
            raise
        # the body uses refs created outside it: they become extra carries (fjax.ref)
        return ref.thread_scan(_scan, e, f, init, xs, **kw)


def _scan(
    f: Callable,
    init: Any,
    xs: Any = None,
    length: int | None = None,
    reverse: bool = False,
    unroll: int | bool = 1,
    _split_transpose: bool = False,
    _trace_key: tuple | None = None,
) -> tuple[Any, Any]:
    """Scan ``f`` over leading array axes while carrying along state.

    Semantically (for array ``xs``/``ys``)::

        def scan(f, init, xs, length=None):
            if xs is None:
                xs = [None] * length
            carry = init
            ys = []
            for x in xs:
                carry, y = f(carry, x)
                ys.append(y)
            return carry, np.stack(ys)

    ``init``, ``xs`` and the ``ys`` may be pytrees; ``f`` is traced once into the body of the
    ``scan`` primitive, and that trace is reused by later calls with the same function object,
    carry and ``xs`` types and structures (as JAX's). The carry returned by ``f`` must have the
    same structure, shapes and dtypes as ``init`` (weakly typed initial values such as Python scalars take the body's
    output type). ``reverse=True`` scans from the end (outputs are still stacked in the original
    order). ``unroll`` is accepted for compatibility (it does not change results).
    """
    if not callable(f):
        raise TypeError("scan: f argument should be a callable.")
    fname = getattr(f, "__name__", type(f).__name__)
    xs_flat, xs_tree = tu.tree_flatten(xs)
    xs_flat = [common.as_value(x, "scan") for x in xs_flat]
    length = _scan_length(xs, xs_flat, length)
    unroll = core.concrete_or_error(unroll, "The `unroll` argument to `scan` expects a concrete `int` or `bool`")
    if isinstance(unroll, (bool, np.bool_)):
        unroll = max(length, 1) if unroll else 1
    unroll = int(unroll)
    if unroll < 0:
        raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
    init_flat, init_tree = tu.tree_flatten(init)
    init_flat = [common.as_value(x, "scan") for x in init_flat]
    init_avals = [core.get_aval(x) for x in init_flat]
    x_avals = [_unstacked(core.get_aval(x)) for x in xs_flat]
    num_carry = len(init_flat)

    def body(carry: Any, x: Any) -> tuple:
        out = f(carry, x)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            shown = tu.tree_map(lambda v: common.AvalText(core.get_aval(v)), out)
            raise TypeError(f"scan body output must be a pair, got {shown}.")
        return tuple(out)

    body.__name__ = fname
    key_funs, tag = (f,), "scan"
    if _trace_key is not None:
        key_funs, tag = _trace_key

    in_tree = tu.treedef_tuple([init_tree, xs_tree])

    def trace(avals: list) -> tuple:
        # traced once per (f, avals, trees, trace context), as JAX's scan (common.trace_cache);
        # ``body`` is a new closure each call, so the key is ``f`` (or the caller's _trace_key)
        closed, consts, out_tree = common.trace_fn_to_jaxpr_cached(
            body, in_tree, list(avals) + x_avals, fname, key_funs=key_funs, tag=tag
        )
        carry_tree, ys_tree = tu.treedef_children(out_tree)
        return closed, consts, carry_tree, ys_tree

    closed, consts, carry_tree, ys_tree = trace(init_avals)
    n_hoisted = len(consts)
    carry_out_avals = closed.out_avals[: carry_tree.num_leaves]
    if carry_tree == init_tree:
        init_flat, new_avals, changed = common.promote_weak_carry(init_flat, init_avals, carry_out_avals)
        if changed:
            init_avals = new_avals
            closed, consts, carry_tree, ys_tree = trace(init_avals)
            n_hoisted = len(consts)
            carry_out_avals = closed.out_avals[: carry_tree.num_leaves]
    common.check_carry_match(
        "scan body",
        functools.partial(common.carry_name, f),
        init_avals,
        carry_out_avals,
        init_tree,
        out_tree=carry_tree,
    )
    fwd = scan_forwarding(closed, n_hoisted, num_carry)
    if fwd is None:
        outs = _bind(
            [*consts, *init_flat, *xs_flat],
            jaxpr=closed,
            length=length,
            num_carry=num_carry,
            num_consts=n_hoisted,
            reverse=bool(reverse),
            unroll=unroll,
        )
        return tu.tree_unflatten(carry_tree, outs[:num_carry]), tu.tree_unflatten(ys_tree, outs[num_carry:])
    # JAX's forwarding: passed-through carries become constants, ys that are xs are xs
    moved = [v for v, m in zip(init_flat, fwd.move) if m]
    kept = [v for v, m in zip(init_flat, fwd.move) if not m]
    outs = _bind(
        [*moved, *consts, *kept, *xs_flat],
        jaxpr=fwd.jaxpr,
        length=length,
        num_carry=len(kept),
        num_consts=len(moved) + n_hoisted,
        reverse=bool(reverse),
        unroll=unroll,
    )
    carry_it, ys_it, moved_it = iter(outs[: len(kept)]), iter(outs[len(kept) :]), iter(moved)
    carry_out = [next(moved_it) if m else next(carry_it) for m in fwd.move]
    ys_out = [next(ys_it) if f is None else xs_flat[f] for f in fwd.ys_from_xs]
    return tu.tree_unflatten(carry_tree, carry_out), tu.tree_unflatten(ys_tree, ys_out)


def _batch_and_remainder(x: Any, batch_size: int) -> tuple[Any, Any]:
    from fjax.lax import lax, slicing  # noqa: PLC0415

    leaves, treedef = tu.tree_flatten(x)
    if not leaves:
        return x, None
    leaves = [common.as_value(v, "map") for v in leaves]
    n = core.get_aval(leaves[0]).shape[0]
    if batch_size == 0:
        num_batches, remainder = 0, n
    else:
        num_batches, remainder = divmod(n, batch_size)
    batch_elems = num_batches * batch_size

    def scan_leaf(v: Any) -> Any:
        shape = core.get_aval(v).shape
        v = slicing.slice_in_dim(v, 0, batch_elems, axis=0) if batch_elems != shape[0] else v
        return lax.reshape(v, (num_batches, batch_size, *shape[1:]))

    def rem_leaf(v: Any) -> Any:
        return slicing.slice_in_dim(v, batch_elems, None, axis=0)

    if num_batches == 0:
        return None, tu.tree_unflatten(treedef, [rem_leaf(v) for v in leaves])
    if remainder:
        return (
            tu.tree_unflatten(treedef, [scan_leaf(v) for v in leaves]),
            tu.tree_unflatten(treedef, [rem_leaf(v) for v in leaves]),
        )
    return tu.tree_unflatten(treedef, [scan_leaf(v) for v in leaves]), None


def map(f: Callable, xs: Any, *, batch_size: int | None = None) -> Any:  # noqa: A001
    """Map ``f`` over the leading axis of ``xs`` (pytrees allowed), as ``np.stack([f(x) for x in
    xs])``, with ``f`` traced once into a ``scan``.

    With ``batch_size``, ``f`` is ``vmap``-ed over chunks of that many elements (a remainder
    chunk is mapped separately and concatenated); ``batch_size=0`` is a plain ``vmap``.
    """
    from fjax import api  # noqa: PLC0415
    from fjax.lax import lax  # noqa: PLC0415

    if batch_size is not None:
        if batch_size < 0:
            raise ValueError(f"lax.map: batch_size must be nonnegative, got {batch_size}")
        scan_xs, remainder_xs = _batch_and_remainder(xs, batch_size)
        if scan_xs is not None:
            _, scan_ys = scan(lambda _, x: ((), api.vmap(f)(x)), (), scan_xs)
        else:
            scan_ys = None

        def flatten(v: Any) -> Any:
            s = core.get_aval(v).shape
            return lax.reshape(v, (s[0] * s[1], *s[2:]))

        if scan_ys is None:
            return api.vmap(f)(remainder_xs)
        if remainder_xs is not None:
            remainder_ys = api.vmap(f)(remainder_xs)
            return tu.tree_map(lambda a, b: lax.concatenate([flatten(a), b], 0), scan_ys, remainder_ys)
        return tu.tree_map(flatten, scan_ys)
    _, ys = scan(lambda _, x: ((), f(x)), (), xs)
    return ys


scan.__doc__ = _scan.__doc__


# the partial-evaluation rules (linearize/grad) are registered by their own module
from fjax.lax.control_flow import _scan_partial as _scan_partial  # noqa: E402
