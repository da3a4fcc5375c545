"""``cond`` and ``switch``: the higher-order primitive ``cond[branches=(...)]``, as in JAX.

``cond_p.bind(index, *args, branches=(jaxpr_0, ..., jaxpr_n))``: ``index`` is an int32 scalar
(clamped into range), every branch is a ClosedJaxpr without constants taking all of ``args``
(the branches' closed-over constants come first among them). ``cond(pred, t, f)`` has
``branches=(f, t)`` and index ``int32(pred)``. Rules:

* impl: evaluate the chosen branch; abstract eval: the branches' output types;
* JVP: a cond of the branches' JVP jaxprs, with the same tangent pattern in every branch;
* batching: batched index -> run every branch and pick with ``select_n``; otherwise a cond of
  the batched branches;
* partial eval (linearize/grad): each branch is split with ``partial_eval_jaxpr``; the known
  cond outputs the union of all branches' residuals (zeros where a branch has none), the staged
  cond reads them with the index;
* transpose: a cond of the transposed branches (index and residuals are non-linear).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core, dtypes
from fjax.config import config
from fjax.core import ClosedJaxpr, Jaxpr, JaxprEqn, ShapedArray, Var
from fjax.dtypes import kind as _dkind
from fjax.interpreters import ad, batching
from fjax.interpreters import partial_eval as pe
from fjax.interpreters.ad import UndefinedPrimal, Zero, is_undefined_primal
from fjax.lax import lax
from fjax.lax.control_flow import common

__all__ = ["cond", "cond_p", "switch"]

cond_p = core.Primitive("cond")
cond_p.multiple_results = True


def _cond_impl(index: np.ndarray, *args: np.ndarray, branches: tuple) -> list:
    i = int(np.clip(int(index), 0, len(branches) - 1))
    br = branches[i]
    ins = [core.Array(np.asarray(a), av.weak_type) for a, av in zip(args, br.in_avals)]
    outs = common.eval_closed(br, *ins)
    return [o._value if isinstance(o, core.Array) else np.asarray(o) for o in outs]


def _cond_abstract(index: ShapedArray, *avals: ShapedArray, branches: tuple) -> list:
    if index.shape != () or index.dtype != np.int32:
        raise TypeError(f"cond: the branch index must be an int32 scalar, got {index.str_short()}")
    if not branches:
        raise TypeError("cond: no branches")
    for k, br in enumerate(branches):
        if len(br.in_avals) != len(avals):
            raise TypeError(f"cond: branch {k} takes {len(br.in_avals)} operands but {len(avals)} were given")
        for a, b in zip(avals, br.in_avals):
            if not core.typematch(a, b):
                raise TypeError(f"cond: operand of type {a.str_short()} where branch {k} expects {b.str_short()}")
        if len(br.out_avals) != len(branches[0].out_avals) or not all(
            core.typematch(a, b) for a, b in zip(br.out_avals, branches[0].out_avals)
        ):
            raise TypeError("cond: branches must have equal output types")
    return list(branches[0].out_avals)


cond_p.def_impl(_cond_impl)
cond_p.def_abstract_eval(_cond_abstract)


def _bind_cond(index: Any, args: Sequence[Any], branches: Sequence[ClosedJaxpr]) -> list:
    return core.bind(cond_p, [index, *args], dict(branches=tuple(branches)))


# ---- JVP -------------------------------------------------------------------------------------


def _cond_jvp(primals: list, tangents: list, *, branches: tuple) -> tuple:
    index, *args = primals
    avals = branches[0].in_avals
    nonzeros = [type(t) is not Zero and common.is_float(a) for t, a in zip(tangents[1:], avals)]
    n_out = len(branches[0].out_avals)
    if not any(nonzeros):
        outs = _bind_cond(index, args, branches)
        return outs, [Zero(ad.tangent_aval(a)) for a in branches[0].out_avals]
    out_nz = [False] * n_out
    for br in branches:
        _, _, nz = common.jvp_jaxpr(br, nonzeros, [False] * n_out)
        out_nz = [a or b for a, b in zip(out_nz, nz)]
    traced = []
    for br in branches:
        new, consts, _ = common.jvp_jaxpr(br, nonzeros, out_nz)
        traced.append((new, consts))
    new_branches, consts = common.merge_consts(traced)
    nz_tans = [t for t, nz in zip(tangents[1:], nonzeros) if nz]
    outs = _bind_cond(index, [*consts, *args, *nz_tans], new_branches)
    it = iter(outs[n_out:])
    t_out = [next(it) if nz else Zero(ad.tangent_aval(a)) for a, nz in zip(branches[0].out_avals, out_nz)]
    return outs[:n_out], t_out


ad.primitive_jvps[cond_p] = _cond_jvp


# ---- batching --------------------------------------------------------------------------------


@batching.wants_axis_size
def _cond_batch(vals: list, dims: list, *, branches: tuple, axis_size: int) -> tuple:
    index, *args = vals
    idim, *adims = dims
    n_out = len(branches[0].out_avals)
    if idim is not None:
        # a batched predicate: run every branch, then pick each member's result
        index = batching.bdim_at_front(index, idim, axis_size)
        index = lax.clamp(np.int32(0), index, np.int32(len(branches) - 1))
        results = []
        for br in branches:
            new, consts, _ = common.batch_jaxpr(br, adims, axis_size, [True] * n_out)
            results.append(common.eval_closed(new, *consts, *args))
        outs = []
        for k in range(n_out):
            cases = [r[k] for r in results]
            shape = core.get_aval(cases[0]).shape
            which = lax.broadcast_in_dim(index, shape, (0,)) if len(shape) > 1 else index
            outs.append(lax.select_n(which, *cases))
        return outs, [0] * n_out
    out_b = [False] * n_out
    for br in branches:
        _, _, b = common.batch_jaxpr(br, adims, axis_size, [False] * n_out)
        out_b = [x or y for x, y in zip(out_b, b)]
    traced = []
    for br in branches:
        new, consts, _ = common.batch_jaxpr(br, adims, axis_size, out_b)
        traced.append((new, consts))
    new_branches, consts = common.merge_consts(traced)
    outs = _bind_cond(index, [*consts, *args], new_branches)
    return outs, [0 if b else None for b in out_b]


batching.primitive_batchers[cond_p] = _cond_batch


# ---- transpose -------------------------------------------------------------------------------


def _cond_transpose(cts: list, index: Any, *args: Any, branches: tuple) -> list:
    if is_undefined_primal(index):
        raise ValueError("cond: the branch index is not linear")
    undef = [is_undefined_primal(a) for a in args]
    defined = [a for a in args if not is_undefined_primal(a)]
    ct_avals = [ad.tangent_aval(a) for a in branches[0].out_avals]
    cts = [ad._zeros_like(a) if type(c) is Zero else c for c, a in zip(cts, ct_avals)]
    nd = len(defined)
    in_avals = [core.get_aval(d) for d in defined] + [core.get_aval(c) for c in cts]

    def transposed(br: ClosedJaxpr) -> Callable:
        def f(*xs: Any) -> list:
            it = iter(xs[:nd])
            full = [UndefinedPrimal(a.aval) if u else next(it) for a, u in zip(args, undef)]
            res = ad.backward_pass(br.jaxpr, br.consts, full, list(xs[nd:]))
            return [ad.instantiate_zeros(r) for r, u in zip(res, undef) if u]

        return f

    traced = [common.trace_flat(transposed(br), in_avals, "transpose(cond)") for br in branches]
    new_branches, consts = common.merge_consts(traced)
    outs = _bind_cond(index, [*consts, *defined, *cts], new_branches)
    it = iter(outs)
    return [None] + [next(it) if u else None for u in undef]


ad.primitive_transposes[cond_p] = _cond_transpose


# ---- partial evaluation ----------------------------------------------------------------------


def _zeros_eqn(aval: ShapedArray) -> tuple[JaxprEqn, Var]:
    """An equation making zeros of ``aval`` (a broadcast literal), for a residual a branch lacks."""
    out = Var(aval)
    lit = core.Literal(core.Array(np.zeros((), aval.dtype), False), ShapedArray((), aval.dtype))
    eqn = JaxprEqn(lax.broadcast_in_dim_p, [lit], [out], dict(shape=aval.shape, broadcast_dimensions=()))
    return eqn, out


@core.cache_in_context(maxsize=2048)
def _cond_pe_split(branches: tuple, unknowns: tuple) -> tuple:
    """Split every branch given which operands are unknown.

    Returns ``(known_branches, unknown_branches, out_unknowns, res_avals)`` with
    ``known_k: known_args -> known_outs + all_res`` and
    ``unknown_k: all_res + unknown_args -> unknown_outs``; branch k computes its own slot of the
    residuals and fills the other branches' slots with zeros.
    """
    n_out = len(branches[0].out_avals)
    out_uk = [False] * n_out
    for br in branches:
        _, _, uk, _ = pe.partial_eval_jaxpr(br.jaxpr, list(unknowns))
        out_uk = [a or b for a, b in zip(out_uk, uk)]
    splits = [pe.partial_eval_jaxpr(br.jaxpr, list(unknowns), instantiate=out_uk) for br in branches]
    res_avals_per = [[v.aval for v in jk.outvars[len(jk.outvars) - nres :]] for jk, _, _, nres in splits]
    all_res = [a for ra in res_avals_per for a in ra]
    n_known_out = n_out - sum(out_uk)
    known, unknown = [], []
    start = 0
    for jk, ju, _, nres in splits:
        # known side: own residuals in its slot, zeros elsewhere
        eqns = list(jk.eqns)
        outs = list(jk.outvars[:n_known_out])
        own = jk.outvars[n_known_out:]
        for i, a in enumerate(all_res):
            if start <= i < start + nres:
                outs.append(own[i - start])
            else:
                e, v = _zeros_eqn(a)
                eqns.append(e)
                outs.append(v)
        known.append(ClosedJaxpr(Jaxpr([], jk.invars, outs, eqns), []))
        # unknown side: reads only its own slot
        res_in = [Var(a) for a in all_res[:start]] + ju.invars[:nres] + [Var(a) for a in all_res[start + nres :]]
        unknown.append(ClosedJaxpr(Jaxpr([], res_in + ju.invars[nres:], ju.outvars, ju.eqns), []))
        start += nres
    return tuple(known), tuple(unknown), out_uk, all_res


def _cond_partial_eval(trace: pe.StagingTrace, tracers: list, *, branches: tuple) -> list:
    unknowns = [not pe.is_known(t) for t in tracers]
    if not any(unknowns):
        return _bind_cond(tracers[0].const, [t.const for t in tracers[1:]], branches)
    if unknowns[0]:
        return trace.default_process_primitive(cond_p, tracers, dict(branches=branches))
    jk, ju, out_uk, res_avals = _cond_pe_split(branches, tuple(unknowns[1:]))
    index = tracers[0].const
    known_vals = [t.const for t, u in zip(tracers[1:], unknowns[1:]) if not u]
    known_outs = _bind_cond(index, known_vals, jk)
    n_known = len(known_outs) - len(res_avals)
    res = known_outs[n_known:]
    idx_tracer = trace.get_or_make_const_tracer(index)
    res_tracers = [trace.get_or_make_const_tracer(r) for r in res]
    un_tracers = [t for t, u in zip(tracers[1:], unknowns[1:]) if u]
    un_outs = trace.default_process_primitive(cond_p, [idx_tracer, *res_tracers, *un_tracers], dict(branches=ju))
    ki, ui = iter(known_outs[:n_known]), iter(un_outs)
    return [next(ui) if u else next(ki) for u in out_uk]


pe.partial_eval_rules[cond_p] = _cond_partial_eval


def _cond_partial_eval_jaxpr(eqn: JaxprEqn, unknowns: list) -> tuple:
    branches = eqn.params["branches"]
    if unknowns[0]:
        return None, eqn, [True] * len(eqn.outvars)
    jk, ju, out_uk, res_avals = _cond_pe_split(branches, tuple(unknowns[1:]))
    index, *args = eqn.invars
    known_ins = [x for x, u in zip(args, unknowns[1:]) if not u]
    unknown_ins = [x for x, u in zip(args, unknowns[1:]) if u]
    known_outs = [v for v, u in zip(eqn.outvars, out_uk) if not u]
    unknown_outs = [v for v, u in zip(eqn.outvars, out_uk) if u]
    res = [Var(a) for a in res_avals]
    eqn_known = JaxprEqn(cond_p, [index, *known_ins], known_outs + res, dict(branches=jk))
    eqn_unknown = JaxprEqn(cond_p, [index, *res, *unknown_ins], unknown_outs, dict(branches=ju))
    return eqn_known, eqn_unknown, out_uk


pe.partial_eval_jaxpr_rules[cond_p] = _cond_partial_eval_jaxpr


def _cond_dce(used_outputs: list, eqn: JaxprEqn) -> tuple:
    if not any(used_outputs):
        return [False] * len(eqn.invars), None
    branches = eqn.params["branches"]
    pruned = [pe.dce_jaxpr(br.jaxpr, used_outputs, keep_inputs=True) for br in branches]
    used = [False] * len(branches[0].in_avals)
    for j in pruned:
        live = {x for e in j.eqns for x in e.invars if type(x) is Var} | {x for x in j.outvars if type(x) is Var}
        used = [u or v in live for u, v in zip(used, j.invars)]
    new_branches = tuple(
        ClosedJaxpr(Jaxpr([], [v for v, u in zip(j.invars, used) if u], j.outvars, j.eqns), []) for j in pruned
    )
    new_eqn = eqn.replace(
        invars=[eqn.invars[0]] + [x for x, u in zip(eqn.invars[1:], used) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
        params=dict(eqn.params, branches=new_branches),
    )
    return [True, *used], new_eqn


pe.dce_rules[cond_p] = _cond_dce


# ---- the user-facing functions ---------------------------------------------------------------


def _fun_sourceinfo(f: Callable) -> str:
    from fjax.jit import _fun_sourceinfo  # noqa: PLC0415

    return _fun_sourceinfo(f)


def _check_branch_outputs(
    api: str, name1: str, name2: str, f1: Callable, f2: Callable, tree1: Any, avals1: list, tree2: Any, avals2: list
) -> None:
    """Raise TypeError, in JAX 0.10's words, if two branches' outputs differ in structure or type."""
    info = f"{name1} is {_fun_sourceinfo(f1)}\n{name2} is {_fun_sourceinfo(f2)}\n\n"
    try:
        paths = common._paths(tree1)
    except Exception:
        paths = [""] * len(avals1)

    def at(p: str) -> str:
        return f" at path {p}" if p else ""

    if tree1 != tree2:
        diffs = [
            f"{name1} output{at(p)} is a {a} but {name2} output{at(p)} is a {b}, so {why}"
            for p, a, b, why in common.structure_diffs(
                tree1, tree2, [common.PytreeLeaf()] * tree1.num_leaves, [common.PytreeLeaf()] * tree2.num_leaves
            )
        ]
        if not diffs:
            return  # the trees differ in aux data only (as JAX)
        raise TypeError(
            f"{api} branch outputs must have the same pytree structure, but they differ:\n\n{info}"
            f"{common._join_diffs(diffs, loop_style=True, capitalize=False)}\n"
            f"Revise {name1} and/or {name2} so that they have the same pytree structure."
        )
    diffs = [
        f"the output of {name1}{at(p)} has type {common.aval_str(a)} but the corresponding "
        f"output of {name2} has type {common.aval_str(b)}{common._mismatch_extra(a, b)}"
        for p, a, b in zip(paths, avals1, avals2)
        if not core.typematch(a, b)
    ]
    if diffs:
        raise TypeError(
            f"{api} branches must have equal output types but they differ.\n\n{info}{common._join_diffs(diffs)}\n"
            f"Revise {name1} and/or {name2} so that all output types match."
        )


def _trace_branches(funs: Sequence[Callable], names: Sequence[str], in_tree: Any, avals: list, api: str) -> tuple:
    """Trace the branches (a function given for several is traced once, as JAX's), check their
    outputs agree, and forward outputs that are the same operand in every branch.

    Returns ``(branches, consts, out_tree, in_fwd)``: the branches take ``consts + operands``
    and give the outputs ``in_fwd`` marks ``None``; an output with ``in_fwd[k] = i`` is input
    ``i`` itself (JAX's pass-through pruning: it is left out of the ``cond``)."""
    first: dict[int, int] = {}
    which = [first.setdefault(id(f), len(first)) for f in funs]
    unique: list = []
    for k, (f, name) in enumerate(zip(funs, names)):
        if which[k] == len(unique):
            unique.append(common.trace_fn_to_jaxpr(f, in_tree, avals, f"{api}({name})"))
    traced = [(unique[i][0], unique[i][1]) for i in which]
    trees = [unique[i][2] for i in which]
    # report mismatches against the first reported branch (true_fun for cond, branch 0 for switch)
    ref = len(funs) - 1 if api == "cond" else 0
    for k in range(len(funs)):
        if k != ref:
            _check_branch_outputs(
                api,
                names[ref],
                names[k],
                funs[ref],
                funs[k],
                trees[ref],
                traced[ref][0].out_avals,
                trees[k],
                traced[k][0].out_avals,
            )
    merged, consts = common.merge_consts([(closed, cs) for closed, cs, _ in unique])
    merged, consts = common.dedup_consts(merged, consts)
    fwds = [common.forwarded_outputs(m.jaxpr) for m in merged]
    in_fwd = [f[0] if len(set(f)) == 1 else None for f in zip(*fwds)]
    if any(f is not None for f in in_fwd):
        merged = tuple(
            ClosedJaxpr(
                Jaxpr([], m.jaxpr.invars, [v for v, f in zip(m.jaxpr.outvars, in_fwd) if f is None], m.jaxpr.eqns), []
            )
            for m in merged
        )
    return tuple(merged[i] for i in which), consts, trees[0], in_fwd


def _cond_internal(index: Any, funs: Sequence[Callable], names: Sequence[str], operands: tuple, api: str) -> Any:
    leaves, in_tree = tu.tree_flatten(operands)
    leaves = [common.as_value(x, api) for x in leaves]
    avals = [core.get_aval(x) for x in leaves]
    # traced once per (functions, avals, tree, trace context), as JAX's (common.trace_cache)
    branches, consts, out_tree, in_fwd = common.trace_cache.get(
        tuple(funs),
        (api, tuple(names), in_tree, tuple(avals)),
        lambda: _trace_branches(funs, names, in_tree, avals, api),
    )
    outs = iter(_bind_cond(index, [*consts, *leaves], branches))
    inputs = [*consts, *leaves]
    return tu.tree_unflatten(out_tree, [next(outs) if f is None else inputs[f] for f in in_fwd])


_no_operand = object()


def _concrete(x: Any) -> Any:
    if isinstance(x, core.Tracer):
        return x.to_concrete_value()
    return np.asarray(x._value if isinstance(x, core.Array) else x)


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any, operand: Any = _no_operand) -> Any:
    """Apply ``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, as ``jax.lax.cond``.

    Both branches are traced (to jaxprs) and must return the same pytree of arrays with equal
    shapes and dtypes; the result is staged as the ``cond`` primitive, so it works under jit,
    vmap (a batched predicate runs both branches and selects) and differentiation. ``pred`` is a
    scalar boolean or number (nonzero means true).
    """
    if operand is not _no_operand:
        if operands:
            raise TypeError(
                "if 'operand' keyword is passed then no positional operands can be passed, got "
                f"operand={operand!r} and positional operands {operands}"
            )
        operands = (operand,)
    if not callable(true_fun) or not callable(false_fun):
        # JAX's old form ``cond(pred, true_operand, true_fun, false_operand, false_fun)``, which it
        # still accepts (numpyro calls it)
        if callable(false_fun) and len(operands) == 2 and callable(operands[1]):
            x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
            return cond(pred, lambda x, _: f_true(x), lambda _, x: f_false(x), x_true, x_false)
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    if pred is None:
        raise TypeError("cond predicate is None")
    if isinstance(pred, Sequence) or np.ndim(pred) != 0:
        raise TypeError(
            f"Pred must be a scalar, got {pred} of "
            + (f"type {type(pred)}" if isinstance(pred, Sequence) else f"shape {np.shape(pred)}.")
        )
    try:
        pred_dtype = dtypes.result_type(pred)
    except TypeError as err:
        raise TypeError(f"Pred type must be either boolean or number, got {pred}.") from err
    if _dkind(pred_dtype) != "b":
        if _dkind(pred_dtype) in "iuf":
            if type(pred) in (int, float):
                pred = pred != 0
            else:
                pred = lax.ne(pred, lax.full_like(pred, 0))
        else:
            raise TypeError(f"Pred type must be either boolean or number, got {pred_dtype}.")
    if config.jax_disable_jit:
        v = _concrete(pred)
        if v is not None:
            return true_fun(*operands) if bool(v) else false_fun(*operands)
    index = lax.convert_element_type(pred, np.int32)
    return _cond_threading_refs(index, (false_fun, true_fun), ("false_fun", "true_fun"), operands, "cond")


def _cond_threading_refs(index: Any, branches: tuple, names: tuple, operands: tuple, what: str) -> Any:
    try:
        return _cond_internal(index, branches, names, operands, what)
    except NotImplementedError as e:
        from fjax import ref  # noqa: PLC0415

        if ref.outer_ref_of(e) is None:
            raise
        # the branches use refs created outside: their values go in as operands and come back out
        return ref.thread_branches(lambda brs, ops: _cond_internal(index, brs, names, ops, what), e, branches, operands)


def switch(index: Any, branches: Sequence[Callable], *operands: Any, operand: Any = _no_operand) -> Any:
    """Apply ``branches[index](*operands)``, as ``jax.lax.switch``; ``index`` is clamped into
    ``[0, len(branches) - 1]``. All branches are traced and must return the same types."""
    branches = tuple(branches)
    if not all(callable(b) for b in branches):
        raise TypeError("lax.switch: branches argument should be a sequence of callables.")
    if operand is not _no_operand:
        if operands:
            raise TypeError(
                "if 'operand' keyword is passed then no positional operands can be passed, got "
                f"operand={operand!r} and positional operands {operands}"
            )
        operands = (operand,)
    if isinstance(index, (list, tuple)) or np.ndim(index) != 0:
        raise TypeError(f"Branch index must be scalar, got {index} of shape {np.shape(index)}.")
    try:
        index_dtype = dtypes.result_type(index)
    except TypeError as err:
        raise TypeError(f"Index type must be an integer, got {index}.") from err
    if _dkind(index_dtype) not in "iu":
        raise TypeError(f"Index type must be an integer, got {index} as {index_dtype}")
    if len(branches) == 0:
        raise ValueError("Empty branch sequence")
    if len(branches) == 1:
        return branches[0](*operands)
    index = lax.convert_element_type(index, np.int32)
    index = lax.clamp(np.int32(0), index, np.int32(len(branches) - 1))
    if config.jax_disable_jit:
        v = _concrete(index)
        if v is not None:
            return branches[int(v)](*operands)
    # JAX 0.10 names the first "branch 0" and the others "branch1", "branch2", ... in its errors
    names = ["branch 0"] + [f"branch{k}" for k in range(1, len(branches))]
    return _cond_threading_refs(index, branches, names, operands, "switch")
