"""``while_loop`` and ``fori_loop``: the higher-order primitive ``while``, as in JAX.

``while_p.bind(*cond_consts, *body_consts, *init, cond_jaxpr=..., body_jaxpr=..., cond_nconsts=...,
body_nconsts=...)``; ``cond_jaxpr: cond_consts + carry -> bool[]`` and
``body_jaxpr: body_consts + carry -> carry`` are ClosedJaxprs without constants. Rules:

* impl: a Python loop evaluating the jaxprs; abstract eval: the carry types;
* JVP: carry the tangents alongside (which carries get a nonzero tangent is a fixed point);
* batching: the carries batched is a fixed point; with a batched predicate the loop runs while
  any member is still active and finished members keep their carry (``select_n``);
* partial eval: carries that stay known run in a known loop; the unknown ones are computed by
  the whole loop staged. Its transpose raises JAX's error: reverse mode needs ``scan`` (or
  ``fori_loop`` with static bounds, which lowers to scan).
"""

from __future__ import annotations

import functools
import operator
from typing import Any, Callable

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core, dtypes
from fjax.config import config
from fjax.core import ClosedJaxpr, Jaxpr, JaxprEqn, ShapedArray, Var
from fjax.dtypes import kind as _dkind
from fjax.interpreters import ad, batching
from fjax.interpreters import partial_eval as pe
from fjax.interpreters.ad import Zero
from fjax.lax import lax
from fjax.lax.control_flow import _while_inplace, common

__all__ = ["fori_loop", "while_loop", "while_p"]

while_p = core.Primitive("while")
while_p.multiple_results = True

_REVERSE_MSG = (
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic start/stop "
    "values. Try using lax.scan, or using fori_loop with static start/stop."
)


def _params(cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr, cond_nconsts: int, body_nconsts: int) -> dict:
    # JAX prints params sorted by name
    return dict(body_jaxpr=body_jaxpr, body_nconsts=body_nconsts, cond_jaxpr=cond_jaxpr, cond_nconsts=cond_nconsts)


def _bind_while(args: list, cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr, cond_nconsts: int, body_nconsts: int):
    return core.bind(while_p, args, _params(cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts))


@functools.lru_cache(maxsize=1024)
def _numpy_evaluator(closed: ClosedJaxpr) -> Callable | None:
    """The jaxpr evaluated on numpy arrays with each primitive's ``impl`` (scan's evaluator: no
    abstract evaluation per step), or ``None`` where it does not apply (constants, non-numpy
    dtypes such as PRNG keys, primitives without an ``impl``)."""
    from fjax.lax.control_flow.scan import _numpy_body  # noqa: PLC0415

    j = closed.jaxpr
    if closed.consts or j.constvars:
        return None

    def plain(v: Any) -> bool:  # numpy dtypes only (not float0, PRNG keys)
        dt = v.aval.dtype
        return isinstance(dt, np.dtype) and dt.kind != "V"

    for eqn in j.eqns:
        if eqn.primitive.impl is None or not all(plain(v) for v in eqn.outvars):
            return None
    if not all(plain(v) for v in j.invars):
        return None
    return _numpy_body(closed)


def _while_impl(*args: np.ndarray, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts) -> list:
    guard = core.loop_guard
    # eager checks (jax_debug_nans, ...) wrap the primitive-by-primitive evaluator: keep to it then
    fast = not core._eval_wrappers
    cond_np = _numpy_evaluator(cond_jaxpr) if fast else None
    body_np = _numpy_evaluator(body_jaxpr) if cond_np is not None else None
    if cond_np is not None and body_np is not None:
        # the types were checked when the loop was built: evaluate the impls on numpy arrays
        vals = [np.asarray(a) for a in args]
        cc = vals[:cond_nconsts]
        bc = vals[cond_nconsts : cond_nconsts + body_nconsts]
        carry = vals[cond_nconsts + body_nconsts :]
        while bool(cond_np(*cc, *carry)[0]):
            if guard is not None:
                guard()
            carry = body_np(*bc, *carry)
        return [c if type(c) is np.ndarray else np.asarray(c) for c in carry]
    avals = body_jaxpr.in_avals
    cavals = cond_jaxpr.in_avals
    cc = [core.Array(np.asarray(a), av.weak_type) for a, av in zip(args[:cond_nconsts], cavals)]
    bc_vals = args[cond_nconsts : cond_nconsts + body_nconsts]
    bc = [core.Array(np.asarray(a), av.weak_type) for a, av in zip(bc_vals, avals)]
    carry = [
        core.Array(np.asarray(a), av.weak_type)
        for a, av in zip(args[cond_nconsts + body_nconsts :], avals[body_nconsts:])
    ]
    while bool(common.eval_closed(cond_jaxpr, *cc, *carry)[0]):
        if guard is not None:
            guard()
        carry = common.eval_closed(body_jaxpr, *bc, *carry)
    return [o._value if isinstance(o, core.Array) else np.asarray(o) for o in carry]


def _while_abstract(*avals: ShapedArray, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts) -> list:
    cc = avals[:cond_nconsts]
    bc = avals[cond_nconsts : cond_nconsts + body_nconsts]
    carry = avals[cond_nconsts + body_nconsts :]
    for what, got, want in (
        ("cond_jaxpr", list(cc) + list(carry), cond_jaxpr.in_avals),
        ("body_jaxpr", list(bc) + list(carry), body_jaxpr.in_avals),
    ):
        if len(got) != len(want) or not all(core.typematch(a, b) for a, b in zip(got, want)):
            raise TypeError(
                f"while: {what} expects {[a.str_short() for a in want]} but got {[a.str_short() for a in got]}"
            )
    outs = cond_jaxpr.out_avals
    if len(outs) != 1 or outs[0].shape != () or outs[0].dtype != np.bool_:
        raise TypeError(f"while: cond_jaxpr must return a boolean scalar, got {[a.str_short() for a in outs]}")
    if not all(core.typematch(a, b) for a, b in zip(body_jaxpr.out_avals, carry)) or len(carry) != len(
        body_jaxpr.out_avals
    ):
        raise TypeError("while: body_jaxpr must return the carry types")
    return list(body_jaxpr.out_avals)


while_p.def_impl(_while_impl)
while_p.def_abstract_eval(_while_abstract)


def _pad_invars(closed: ClosedJaxpr, extra: list[ShapedArray], at: int) -> ClosedJaxpr:
    """``closed`` with ignored inputs of types ``extra`` inserted at position ``at``."""
    j = closed.jaxpr
    invars = j.invars[:at] + [Var(a) for a in extra] + j.invars[at:]
    return ClosedJaxpr(Jaxpr([], invars, j.outvars, j.eqns), [])


# ---- JVP -------------------------------------------------------------------------------------


def _while_jvp(primals: list, tangents: list, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts) -> tuple:
    nc, nb = cond_nconsts, body_nconsts
    cc, bc, init = primals[:nc], primals[nc : nc + nb], primals[nc + nb :]
    bc_t, init_t = tangents[nc : nc + nb], tangents[nc + nb :]
    avals = body_jaxpr.in_avals
    bc_nz = [type(t) is not Zero and common.is_float(a) for t, a in zip(bc_t, avals[:nb])]
    carry_avals = avals[nb:]
    carry_nz = [type(t) is not Zero and common.is_float(a) for t, a in zip(init_t, carry_avals)]
    while True:
        _, _, out_nz = common.jvp_jaxpr(body_jaxpr, bc_nz + carry_nz, [False] * len(carry_nz))
        new = [a or b for a, b in zip(carry_nz, out_nz)]
        if new == carry_nz:
            break
        carry_nz = new
    if not any(carry_nz):
        outs = _bind_while(list(primals), cond_jaxpr, body_jaxpr, nc, nb)
        return outs, [Zero(ad.tangent_aval(a)) for a in carry_avals]
    # jvp body: (jconsts, bc, carry, bc_t, carry_t) -> (carry, carry_t); reorder so the loop
    # carry is (carry, carry_t) and the body consts are (jconsts, bc, bc_t)
    jvp_body, jconsts, _ = common.jvp_jaxpr(body_jaxpr, bc_nz + carry_nz, carry_nz)
    j = jvp_body.jaxpr
    nj = len(jconsts)
    n_bct = sum(bc_nz)
    n_c = len(carry_avals)
    iv = j.invars
    v_jc, v_bc, v_carry = iv[:nj], iv[nj : nj + nb], iv[nj + nb : nj + nb + n_c]
    v_bct, v_ct = iv[nj + nb + n_c : nj + nb + n_c + n_bct], iv[nj + nb + n_c + n_bct :]
    new_body = ClosedJaxpr(Jaxpr([], v_jc + v_bc + v_bct + v_carry + v_ct, j.outvars, j.eqns), [])
    t_avals = [ad.tangent_aval(a) for a, nz in zip(carry_avals, carry_nz) if nz]
    new_cond = _pad_invars(cond_jaxpr, t_avals, len(cond_jaxpr.in_avals))
    bc_tans = [t for t, nz in zip(bc_t, bc_nz) if nz]
    init_tans = [ad.instantiate_zeros(t) for t, nz in zip(init_t, carry_nz) if nz]
    args = [*cc, *jconsts, *bc, *bc_tans, *init, *init_tans]
    outs = _bind_while(args, new_cond, new_body, nc, nj + nb + n_bct)
    it = iter(outs[n_c:])
    t_out = [next(it) if nz else Zero(ad.tangent_aval(a)) for a, nz in zip(carry_avals, carry_nz)]
    return outs[:n_c], t_out


ad.primitive_jvps[while_p] = _while_jvp


# ---- batching --------------------------------------------------------------------------------


@batching.wants_axis_size
def _while_batch(vals: list, dims: list, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts, axis_size) -> tuple:
    nc, nb = cond_nconsts, body_nconsts
    size = axis_size
    # every batched operand at axis 0
    vals = [batching.bdim_at_front(v, d, size) if d is not None else v for v, d in zip(vals, dims)]
    dims = [0 if d is not None else None for d in dims]
    cc_d, bc_d, init_d = dims[:nc], dims[nc : nc + nb], dims[nc + nb :]
    n_c = len(init_d)
    carry_b = [d is not None for d in init_d]
    while True:
        _, _, out_b = common.batch_jaxpr(body_jaxpr, bc_d + [0 if b else None for b in carry_b], size, carry_b)
        new = [a or b for a, b in zip(carry_b, out_b)]
        if new == carry_b:
            break
        carry_b = new
    _, _, (pred_b,) = common.batch_jaxpr(cond_jaxpr, cc_d + [0 if b else None for b in carry_b], size, [False])
    if pred_b:
        carry_b = [True] * n_c
    carry_d = [0 if b else None for b in carry_b]
    body_b, body_consts, _ = common.batch_jaxpr(body_jaxpr, bc_d + carry_d, size, carry_b)
    cond_b, cond_consts, _ = common.batch_jaxpr(cond_jaxpr, cc_d + carry_d, size, [pred_b])
    cc, bc, init = vals[:nc], vals[nc : nc + nb], vals[nc + nb :]
    init = [batching.bdim_at_front(x, d, size) if b and d is None else x for x, d, b in zip(init, init_d, carry_b)]
    if not pred_b:
        outs = _bind_while(
            [*cond_consts, *cc, *body_consts, *bc, *init],
            cond_b,
            body_b,
            len(cond_consts) + nc,
            len(body_consts) + nb,
        )
        return outs, carry_d
    # batched predicate: loop while any member is active, freezing the finished ones
    cc_avals = [core.get_aval(x) for x in [*cond_consts, *cc]]
    bc_avals = [core.get_aval(x) for x in [*body_consts, *bc]]
    carry_avals = [core.get_aval(x) for x in init]
    ncc, nbc = len(cc_avals), len(bc_avals)

    def new_cond(*xs: Any) -> list:
        pred = common.eval_closed(cond_b, *xs)[0]
        return [lax.reduce_or(pred, (0,))]

    # (carries the body updates in place keep the update in place: _while_inplace)
    new_body = _while_inplace.batched_pred_body(body_b, cond_b, ncc, nbc, size, common.eval_closed)

    cj, cj_consts = common.trace_flat(new_cond, cc_avals + carry_avals, "while_cond(vmap)")
    bj, bj_consts = common.trace_flat(new_body, cc_avals + bc_avals + carry_avals, "while_body(vmap)")
    cconsts_all = [*cj_consts, *cond_consts, *cc]
    bconsts_all = [*bj_consts, *cond_consts, *cc, *body_consts, *bc]
    outs = _bind_while([*cconsts_all, *bconsts_all, *init], cj, bj, len(cconsts_all), len(bconsts_all))
    return outs, [0] * n_c


batching.primitive_batchers[while_p] = _while_batch


# ---- partial evaluation and transpose --------------------------------------------------------


def _carry_unknowns(body_jaxpr: ClosedJaxpr, bc_uk: list, carry_uk: list) -> list:
    while True:
        _, _, out_uk, _ = pe.partial_eval_jaxpr(body_jaxpr.jaxpr, bc_uk + carry_uk)
        new = [a or b for a, b in zip(carry_uk, out_uk)]
        if new == carry_uk:
            return carry_uk
        carry_uk = new


@core.cache_in_context(maxsize=1024)
def _while_pe_split(cond_jaxpr, body_jaxpr, nc: int, nb: int, unknowns: tuple) -> tuple | None:
    """The known loop (on the carries that stay known), or None if the predicate is unknown.

    Returns ``(cond_known, body_known, carry_unknowns)``; the known loop takes the known cond
    consts, known body consts and known carries.
    """
    cc_uk, bc_uk, init_uk = list(unknowns[:nc]), list(unknowns[nc : nc + nb]), list(unknowns[nc + nb :])
    carry_uk = _carry_unknowns(body_jaxpr, bc_uk, init_uk)
    _, _, (pred_uk,), _ = pe.partial_eval_jaxpr(cond_jaxpr.jaxpr, cc_uk + carry_uk)
    if pred_uk:
        return None
    jk, _, _, _ = pe.partial_eval_jaxpr(body_jaxpr.jaxpr, bc_uk + carry_uk)
    n_known = carry_uk.count(False)
    body_known = pe.dce_jaxpr(Jaxpr([], jk.invars, jk.outvars[:n_known], jk.eqns))
    cj = pe.dce_jaxpr(cond_jaxpr.jaxpr)
    keep = [not u for u in cc_uk + carry_uk]
    cond_known = Jaxpr([], [v for v, k in zip(cj.invars, keep) if k], cj.outvars, cj.eqns)
    core.check_jaxpr(cond_known)
    return ClosedJaxpr(cond_known, []), ClosedJaxpr(body_known, []), carry_uk


def _while_partial_eval(trace: pe.StagingTrace, tracers: list, **params: Any) -> list:
    nc, nb = params["cond_nconsts"], params["body_nconsts"]
    unknowns = [not pe.is_known(t) for t in tracers]
    if not any(unknowns):
        return _bind_while([t.const for t in tracers], **_unparams(params))
    split = _while_pe_split(params["cond_jaxpr"], params["body_jaxpr"], nc, nb, tuple(unknowns))
    staged = trace.default_process_primitive(while_p, tracers, params)
    if split is None:
        return staged
    cond_known, body_known, carry_uk = split
    ki = [t.const for t, u in zip(tracers, unknowns) if not u]
    cc_k = [t.const for t, u in zip(tracers[:nc], unknowns[:nc]) if not u]
    bc_k = [t.const for t, u in zip(tracers[nc : nc + nb], unknowns[nc : nc + nb]) if not u]
    init_k = [t.const for t, u in zip(tracers[nc + nb :], carry_uk) if not u]
    del ki
    known_outs = _bind_while([*cc_k, *bc_k, *init_k], cond_known, body_known, len(cc_k), len(bc_k))
    it = iter(known_outs)
    return [s if u else next(it) for s, u in zip(staged, carry_uk)]


def _unparams(params: dict) -> dict:
    return dict(
        cond_jaxpr=params["cond_jaxpr"],
        body_jaxpr=params["body_jaxpr"],
        cond_nconsts=params["cond_nconsts"],
        body_nconsts=params["body_nconsts"],
    )


pe.partial_eval_rules[while_p] = _while_partial_eval


def _while_partial_eval_jaxpr(eqn: JaxprEqn, unknowns: list) -> tuple:
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    split = _while_pe_split(p["cond_jaxpr"], p["body_jaxpr"], nc, nb, tuple(unknowns))
    if split is None:
        return None, eqn, [True] * len(eqn.outvars)
    cond_known, body_known, carry_uk = split
    ins = eqn.invars
    cc_k = [x for x, u in zip(ins[:nc], unknowns[:nc]) if not u]
    bc_k = [x for x, u in zip(ins[nc : nc + nb], unknowns[nc : nc + nb]) if not u]
    init_k = [x for x, u in zip(ins[nc + nb :], carry_uk) if not u]
    known_outs = [v for v, u in zip(eqn.outvars, carry_uk) if not u]
    eqn_known = JaxprEqn(
        while_p, [*cc_k, *bc_k, *init_k], known_outs, _params(cond_known, body_known, len(cc_k), len(bc_k))
    )
    # the whole loop, staged, computes the unknown carries (its known outputs are dropped)
    outs = [v if u else core.DropVar(v.aval) for v, u in zip(eqn.outvars, carry_uk)]
    eqn_unknown = eqn.replace(outvars=outs)
    return eqn_known, eqn_unknown, carry_uk


pe.partial_eval_jaxpr_rules[while_p] = _while_partial_eval_jaxpr


def _while_transpose(cts: list, *args: Any, **params: Any) -> list:
    raise ValueError(_REVERSE_MSG)


ad.primitive_transposes[while_p] = _while_transpose


# ---- the user-facing functions ---------------------------------------------------------------


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any, *, _body_key: tuple | None = None) -> Any:
    try:
        return _while_loop(cond_fun, body_fun, init_val, _body_key=_body_key)
    except NotImplementedError as e:
        from fjax import ref  # noqa: PLC0415

        if ref.outer_ref_of(e) is None:
            raise
        # the functions use refs created outside the loop: they become extra carries (fjax.ref)
        return ref.thread_while(_while_loop, e, cond_fun, body_fun, init_val)


def _while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any, *, _body_key: tuple | None = None) -> Any:
    """Run ``val = body_fun(val)`` while ``cond_fun(val)``, as ``jax.lax.while_loop``.

    ``body_fun`` must return the carry with the same pytree structure, shapes and dtypes as
    ``init_val`` (a weakly typed initial leaf takes the body's output type). Works under jit,
    vmap (members run until all are done; finished ones keep their value) and forward-mode
    differentiation; reverse mode is not supported (use ``scan`` or ``fori_loop`` with static
    bounds).
    """
    if not callable(cond_fun) or not callable(body_fun):
        raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")
    if config.jax_disable_jit:
        try:
            val = tu.tree_map(lambda x: common.as_value(x, "while_loop"), init_val)
            while cond_fun(val):
                val = body_fun(val)
            return val
        except core.ConcretizationTypeError:
            pass
    leaves, tree = tu.tree_flatten(init_val)
    leaves = [common.as_value(x, "while_loop") for x in leaves]
    avals = [core.get_aval(x) for x in leaves]
    in_tree = tu.tree_structure((init_val,))
    # ``_body_key``: the user functions a wrapper ``body_fun`` made anew each call stands for
    cond_key, body_key = (cond_fun,), _body_key if _body_key is not None else (body_fun,)
    for _ in range(3):
        # each traced once per (function, avals, tree, trace context), as JAX's (common.trace_cache)
        cond_j, cond_consts, cond_tree = common.trace_fn_to_jaxpr_cached(
            cond_fun, in_tree, avals, "while_loop cond_fun", key_funs=cond_key
        )
        body_j, body_consts, body_tree = common.trace_fn_to_jaxpr_cached(
            body_fun, in_tree, avals, "while_loop body_fun", key_funs=body_key
        )
        if cond_tree.num_leaves != 1:
            raise TypeError(f"cond_fun must return a boolean scalar, but got pytree {cond_tree}.")
        pa = cond_j.out_avals[0]
        if pa.shape != () or pa.dtype != np.bool_:
            raise TypeError(f"cond_fun must return a boolean scalar, but got output type(s) [{pa!r}].")
        what = functools.partial(common.carry_name, body_fun)
        common.check_tree_match("while_loop body", what, tree, body_tree, avals)
        leaves2, avals2, changed = common.promote_weak_carry(leaves, avals, body_j.out_avals)
        if not changed:
            break
        leaves, avals = leaves2, avals2
    common.check_carry_match("while_loop body", what, avals, body_j.out_avals, tree)
    outs = _bind_while([*cond_consts, *body_consts, *leaves], cond_j, body_j, len(cond_consts), len(body_consts))
    return tu.tree_unflatten(tree, outs)


def _fori_int(x: Any) -> int | None:
    try:
        return operator.index(x) if not isinstance(x, core.Tracer) else int(x)
    except (TypeError, core.ConcretizationTypeError):
        return None


def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any, *, unroll: int | bool | None = None) -> Any:
    """``for i in range(lower, upper): val = body_fun(i, val)``, as ``jax.lax.fori_loop``.

    With concrete bounds it is a ``scan`` over the counter (so reverse-mode differentiation
    works); with traced bounds a ``while_loop``.
    """
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    ld = dtypes.dtype(lower, canonicalize=True)
    ud = dtypes.dtype(upper, canonicalize=True)
    dt = ld
    if ld != ud:
        dt = None
        if _dkind(ld) == "i" and _dkind(ud) == "i":
            lw, uw = dtypes.is_weakly_typed(lower), dtypes.is_weakly_typed(upper)
            if lw and not uw:
                dt = ud
            elif uw and not lw:
                dt = ld
        if dt is None:
            raise TypeError(
                f"lower and upper arguments to fori_loop must have equal types, got {ld.name} and {ud.name}"
            )
    lo, hi = _fori_int(lower), _fori_int(upper)
    scan = None
    if lo is not None and hi is not None:
        try:
            from fjax.lax.control_flow.scan import scan  # noqa: PLC0415
        except ImportError:  # scan not available: fall back to while_loop
            scan = None
    if scan is not None:
        length = max(hi - lo, 0)
        if config.jax_disable_jit and length == 0:
            return init_val
        counter = lo

        def scanned(loop_carry: Any, _: Any) -> Any:  # the name JAX's errors show
            i, x = loop_carry
            return (lax.add(i, lax.full_like(i, 1)), body_fun(i, x)), None

        # ``scanned`` is new each call: its trace is cached under ``body_fun`` (as JAX's
        # weakly cached ``_fori_scan_body_fun``)
        (_, result), _ = scan(
            scanned,
            (counter, init_val),
            None,
            length=length,
            unroll=unroll or False,
            _trace_key=((body_fun,), "fori_loop"),
        )
        return result
    if lo is None or hi is None:
        if unroll is not None and unroll is not False and unroll != 1:
            raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are statically known.")
    lower = common.as_value(lower, "fori_loop")
    upper = common.as_value(upper, "fori_loop")
    if ld != dt:
        lower = lax.convert_element_type(lower, dt)
    if ud != dt:
        upper = lax.convert_element_type(upper, dt)

    def body(c: Any) -> Any:
        i, u, x = c
        return lax.add(i, lax.full_like(i, 1)), u, body_fun(i, x)

    _, _, result = while_loop(_fori_cond, body, (lower, upper, init_val), _body_key=(body_fun, _fori_cond))
    return result


def _fori_cond(c: Any) -> Any:
    i, u, _ = c
    return lax.lt(i, u)


while_loop.__doc__ = _while_loop.__doc__
