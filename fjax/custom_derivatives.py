"""``custom_jvp`` and ``custom_vjp``: user-defined derivative rules, as in ``jax.custom_jvp`` /
``jax.custom_vjp``.

Both are higher-order primitives carrying the traced primal function (``call_jaxpr``) and the
user's rules as Python callables:

* ``custom_jvp_call[name call_jaxpr jvp num_consts symbolic_zeros]``: evaluated, staged and
  batched as its primal jaxpr; its JVP rule calls the user's jvp rule instead. Under
  ``linearize``/``grad`` the jvp rule runs with known primals and staged tangents, so the rule is
  linearized and then transposed (it must be linear in the tangents, as in JAX). Batching
  batches the primal jaxpr and wraps the jvp rule in ``vmap`` so ``jvp`` of ``vmap`` still uses
  the custom rule.
* ``custom_vjp_call[name bwd call_jaxpr fwd num_consts symbolic_zeros]``: its JVP rule runs
  ``fwd`` on the primals (residuals are computed eagerly) and emits the linear primitive
  ``custom_lin[bwd ...]`` on the tangents; the transpose of ``custom_lin`` calls ``bwd``.
  Evaluating ``custom_lin`` (plain forward mode) raises ``TypeError`` as JAX does.

When the innermost transform is the eager evaluator or a JVP trace, a decorated function is
processed without tracing its primal function into a jaxpr (as JAX does), so Python control
flow on concrete values keeps working under ``grad``/``jvp``.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from fjax import _tree_lifted as tu
from fjax import core, dtypes
from fjax._core_values import long_str
from fjax._custom_common import (
    CustomVJPPrimal,
    SymbolicZero,
    _as_value,
    _batch_closed,
    _fun_name,
    _inline_partial_eval,
    _inline_transpose,
    _is_eval,
    _jaxpr_abstract,
    _jaxpr_impl,
    _nondiff_from_names,
    _resolve_kwargs,
    _top_trace,
    _trace_closed,
    _ty_tree,
    _unbatched_zero,
    _wrap_jvp_outs,
    _zero_tangent_of,
)
from fjax._custom_vjp import (
    CustomVJPException,
    custom_lin_p,
    custom_vjp,
    custom_vjp_call_p,
    custom_vjp_primal_tree_values,
    zero_from_primal,
)
from fjax._linear_call import linear_call, linear_call_p
from fjax.core import ClosedJaxpr
from fjax.interpreters import ad, batching
from fjax.interpreters import partial_eval as pe
from fjax.interpreters.ad import Zero

__all__ = [
    "CustomVJPException",
    "CustomVJPPrimal",
    "SymbolicZero",
    "custom_jvp",
    "custom_jvp_call_p",
    "custom_lin_p",
    "custom_vjp",
    "custom_vjp_call_p",
    "custom_vjp_primal_tree_values",
    "linear_call",
    "linear_call_p",
    "zero_from_primal",
]


# ---------------------------------------------------------------------------------------------
# custom_jvp


custom_jvp_call_p = core.Primitive("custom_jvp_call")
custom_jvp_call_p.multiple_results = True
custom_jvp_call_p.def_impl(_jaxpr_impl)
custom_jvp_call_p.def_abstract_eval(_jaxpr_abstract)


def _custom_jvp_process(
    fun: Callable, jvp: Callable, lead: list, primals: list, tangents: list, symbolic_zeros: bool
) -> tuple[list, list]:
    """The JVP of a custom_jvp function: ``fun(*lead, *primals)`` is the primal function (used
    when no tangent is perturbed); ``jvp(lead, primals, tangents)`` the flat user rule. The
    leading (non-differentiable) inputs get no tangent (stop_gradient semantics)."""
    if all(type(t) is Zero for t in tangents):
        outs = fun(*lead, *primals)
        return outs, [_zero_tangent_of(o) for o in outs]
    if symbolic_zeros:
        tans = [SymbolicZero(t.aval) if type(t) is Zero else t for t in tangents]
    else:
        tans = [ad.instantiate_zeros(t) for t in tangents]
    primals_out, tangents_out = jvp(lead, primals, tans)
    touts = []
    for p, t in zip(primals_out, tangents_out):
        if t is None or type(t) is SymbolicZero or type(t) is Zero:
            touts.append(_zero_tangent_of(p))
        elif ad.tangent_aval(core.get_aval(p)).dtype == dtypes.float0:
            touts.append(_zero_tangent_of(p))
        else:
            touts.append(t)
    return list(primals_out), touts


def _custom_jvp_call_jvp(
    primals: list,
    tangents: list,
    *,
    name: str,
    call_jaxpr: ClosedJaxpr,
    jvp: Callable,
    num_consts: int,
    symbolic_zeros: bool,
) -> tuple[list, list]:
    params = dict(name=name, call_jaxpr=call_jaxpr, jvp=jvp, num_consts=num_consts, symbolic_zeros=symbolic_zeros)
    lead, prims = primals[:num_consts], primals[num_consts:]

    def fun(*xs: Any) -> list:
        return core.bind(custom_jvp_call_p, xs, params)

    return _custom_jvp_process(fun, jvp, list(lead), list(prims), list(tangents[num_consts:]), symbolic_zeros)


ad.primitive_jvps[custom_jvp_call_p] = _custom_jvp_call_jvp


def _batch_jvp_fn(jvp: Callable, n_drop: int, lead_dims: list, prim_dims: list, size: int) -> Callable:
    """``jvp`` vmapped: lead/primal inputs at the given dims, tangents at their primals' dims,
    every output at axis 0. The first ``n_drop`` leading inputs are dropped (new consts)."""

    def batched(lead: list, primals: list, tangents: list) -> tuple[list, list]:
        lead = list(lead[n_drop:])
        nl, npr = len(lead), len(primals)
        nz = [type(t) is not SymbolicZero for t in tangents]
        zeros = [t for t in tangents if type(t) is SymbolicZero]
        args = lead + list(primals) + [t for t, z in zip(tangents, nz) if z]
        dims = list(lead_dims) + list(prim_dims) + [d for d, z in zip(prim_dims, nz) if z]
        n_out: list = []

        def f(*xs: Any) -> list:
            ld, pr, tz = list(xs[:nl]), list(xs[nl : nl + npr]), iter(xs[nl + npr :])
            zi = iter(zeros)
            ts = [next(tz) if z else _unbatched_zero(next(zi), d) for z, d in zip(nz, prim_dims)]
            po, to = jvp(ld, pr, ts)
            n_out.append(len(po))
            to = [
                ad.instantiate_zeros(_zero_tangent_of(p)) if (t is None or type(t) in (Zero, SymbolicZero)) else t
                for p, t in zip(po, to)
            ]
            return list(po) + list(to)

        outs = batching.vmap_flat(f, size, dims, args, lambda n: [0] * n)
        k = n_out[0]
        return outs[:k], outs[k:]

    batched.__name__ = getattr(jvp, "__name__", "jvp")
    return batched


@batching.wants_axis_size
def _custom_jvp_call_batch(
    vals: list,
    dims: list,
    *,
    name: str,
    call_jaxpr: ClosedJaxpr,
    jvp: Callable,
    num_consts: int,
    symbolic_zeros: bool,
    axis_size: int,
) -> tuple[list, list]:
    new_jaxpr, consts = _batch_closed(call_jaxpr, dims, axis_size)
    new_jvp = _batch_jvp_fn(jvp, len(consts), list(dims[:num_consts]), list(dims[num_consts:]), axis_size)
    outs = core.bind(
        custom_jvp_call_p,
        [*consts, *vals],
        dict(
            name=name,
            call_jaxpr=new_jaxpr,
            jvp=new_jvp,
            num_consts=len(consts) + num_consts,
            symbolic_zeros=symbolic_zeros,
        ),
    )
    return outs, [0] * len(outs)


batching.primitive_batchers[custom_jvp_call_p] = _custom_jvp_call_batch
pe.partial_eval_rules[custom_jvp_call_p] = _inline_partial_eval
ad.primitive_transposes[custom_jvp_call_p] = _inline_transpose


def _sum_tangents(*ts: Any) -> Any:
    out = None
    for t in ts:
        if t is None or type(t) in (Zero, SymbolicZero):
            continue
        out = t if out is None else ad._add_any(out, t)
    return out


class custom_jvp:
    """Set up a JAX-transformable function for a custom JVP rule definition.

    Use as a decorator, then attach the rule with ``defjvp`` (one rule taking
    ``(primals, tangents)`` and returning ``(primal_out, tangent_out)``) or ``defjvps`` (one
    function per argument). Arguments listed in ``nondiff_argnums`` are passed to the jvp rule
    first, unperturbed, and receive no tangent.
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = (), nondiff_argnames: Sequence[str] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _nondiff_from_names(fun, nondiff_argnums, nondiff_argnames)
        self.jvp: Callable | None = None
        self.symbolic_zeros = False

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """Define the JVP rule ``jvp(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)``."""
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """One function per argument: ``jvps[i](t_i, primal_out, *primals)`` is the tangent
        contribution of argument i (``None`` for an argument with no contribution)."""
        if self.nondiff_argnums:
            raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

        def jvp(primals: tuple, tangents: tuple) -> tuple:
            primal_out = self(*primals)
            contribs = [f(t, primal_out, *primals) for t, f in zip(tangents, jvps) if f is not None]
            if not contribs:
                t_out = tu.tree_map(lambda p: ad.instantiate_zeros(_zero_tangent_of(p)), primal_out)
            else:
                t_out = tu.tree_map(_sum_tangents, *contribs)
                t_out = tu.tree_map(
                    lambda p, t: ad.instantiate_zeros(_zero_tangent_of(p)) if t is None else t,
                    primal_out,
                    t_out,
                    is_leaf=lambda x: x is None,
                )
            return primal_out, t_out

        jvp.__name__ = f"{_fun_name(self.fun)}_jvps"
        self.defjvp(jvp)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        primal_name = _fun_name(self.fun)
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {primal_name} using defjvp.")
        args = _resolve_kwargs(self.fun, args, kwargs, "custom_jvp")
        nd = set(self.nondiff_argnums)
        for i in nd:
            if i >= len(args):
                raise TypeError(
                    f"custom_jvp {primal_name}: nondiff_argnums {self.nondiff_argnums} out of range for "
                    f"{len(args)} arguments"
                )
        # non-differentiable arguments: array leaves are passed as (tangent-free) inputs, other
        # leaves stay static Python objects
        nd_specs = []
        nd_leaves: list = []
        for i in sorted(nd):
            leaves, tree = tu.tree_flatten(args[i])
            is_arr = [isinstance(x, (core.Tracer, core.Array)) for x in leaves]
            nd_specs.append((i, tree, leaves, is_arr))
            nd_leaves.extend(x for x, a in zip(leaves, is_arr) if a)
        n_nd = len(nd_leaves)
        dyn_args = tuple(a for i, a in enumerate(args) if i not in nd)
        flat, in_tree = tu.tree_flatten(dyn_args)
        trace = _top_trace([x for x in nd_leaves + flat if isinstance(x, core.Tracer)])
        if _is_eval(trace):
            return self.fun(*args)
        flat = [_as_value(x, f"custom_jvp {primal_name}") for x in flat]
        user_jvp = self.jvp
        jvp_name = _fun_name(user_jvp)
        out_store: list = []  # (out_tree, primal avals) of the primal function once it ran

        def rebuild_nondiff(nd_vals: list) -> list:
            it = iter(nd_vals)
            return [
                tu.tree_unflatten(tree, [next(it) if a else x for x, a in zip(leaves, is_arr)])
                for _, tree, leaves, is_arr in nd_specs
            ]

        def rebuild_args(nd_vals: list, dyn: Any) -> list:
            ndi, dit = iter(rebuild_nondiff(nd_vals)), iter(dyn)
            return [next(ndi) if i in nd else next(dit) for i in range(len(args))]

        def fun_flat(*xs: Any) -> list:
            ndv, dyn = list(xs[:n_nd]), list(xs[n_nd:])
            out = self.fun(*rebuild_args(ndv, tu.tree_unflatten(in_tree, dyn)))
            o_flat, o_tree = tu.tree_flatten(out)
            o_flat = [_as_value(o, f"custom_jvp {primal_name} output") for o in o_flat]
            out_store.append((o_tree, [core.get_aval(o) for o in o_flat]))
            return o_flat

        def jvp_flat(lead: list, primals: list, tangents: list) -> tuple[list, list]:
            static_args = rebuild_nondiff(list(lead[len(lead) - n_nd :]) if n_nd else [])
            py_p = tu.tree_unflatten(in_tree, list(primals))
            py_t = tu.tree_unflatten(in_tree, list(tangents))
            pair = user_jvp(*static_args, py_p, py_t)
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise TypeError(
                    f"Custom JVP rule {jvp_name} for function {primal_name} must produce a pair (list or tuple of "
                    f"length two) representing primal and tangent outputs, but got {pair}."
                )
            p_out, p_tree = tu.tree_flatten(pair[0])
            t_out, t_tree = tu.tree_flatten(pair[1])  # (None is an empty subtree, as in JAX)
            if p_tree != t_tree:
                raise TypeError(
                    f"Custom JVP rule {jvp_name} for function {primal_name} must produce primal and tangent outputs "
                    f"with equal container (pytree) structures, but got {p_tree} and {t_tree} respectively."
                )
            p_out = [_as_value(p, f"custom_jvp {jvp_name} primal output") for p in p_out]
            t_what = f"custom_jvp {jvp_name} tangent output"
            t_out = [t if type(t) is SymbolicZero else _as_value(t, t_what) for t in t_out]
            p_avals = [core.get_aval(p) for p in p_out]
            if out_store:
                o_tree, o_avals = out_store[0]
                if o_tree != p_tree:
                    raise TypeError(
                        f"Custom JVP rule {jvp_name} for function {primal_name} must produce a pair (list or tuple of "
                        "length two) where the first element represents the primal output (equal in value to the "
                        f"output of the custom_jvp-decorated function {primal_name}, and in particular of the same "
                        f"container/pytree structure), but instead the JVP rule output's first element had "
                        f"container/pytree structure:\n    {_ty_tree(p_tree, p_avals)}\nwhile the custom_jvp-decorated "
                        f"function {primal_name} had output container/pytree structure:\n    "
                        f"{_ty_tree(o_tree, o_avals)}."
                    )
                if not all(core.typematch(a, b) for a, b in zip(p_avals, o_avals)):
                    raise TypeError(
                        f"Custom JVP rule {jvp_name} for function {primal_name} must produce a pair (list or tuple of "
                        "length two) where the first element represents the primal output (equal in value to the "
                        f"output of the custom_jvp-decorated function {primal_name}, and in particular with leaves of "
                        f"the same shape/dtype), but instead the JVP rule output's first element had shapes/dtypes "
                        f"of:\n    {_ty_tree(p_tree, p_avals)}\nwhile the custom_jvp-decorated function {primal_name} "
                        f"had output shapes/dtypes of:\n    {_ty_tree(o_tree, o_avals)}"
                    )
            else:
                out_store.append((p_tree, p_avals))
            _check_tangent_avals(p_avals, t_out)
            return p_out, t_out

        jvp_flat.__name__ = jvp_name
        out_flat = _custom_jvp_bind(trace, fun_flat, jvp_flat, nd_leaves, flat, self.symbolic_zeros, primal_name)
        return tu.tree_unflatten(out_store[0][0], out_flat)


def _check_tangent_avals(p_avals: list, t_out: list) -> None:
    exp, got, pr = [], [], []
    for pa, t in zip(p_avals, t_out):
        if t is None:
            continue
        ta = t.aval if type(t) is SymbolicZero else core.get_aval(t)
        e = ad.tangent_aval(pa).strip_weak_type()
        ta = ta.strip_weak_type()
        if e.dtype == dtypes.float0 and ta.shape == e.shape:
            continue  # integer outputs: any zero tangent is accepted and dropped
        if not core.typematch(e, ta):
            exp.append(e)
            got.append(ta)
            pr.append(pa.strip_weak_type())
    if not exp:
        return
    if len(p_avals) == 1:
        raise TypeError(
            "Custom JVP rule must produce primal and tangent outputs with corresponding shapes and dtypes. Expected "
            f"{long_str(exp[0])} (tangent type of {long_str(pr[0])}) but got {long_str(got[0])}."
        )
    lines = "\n".join(
        f"  primal {long_str(p)} with tangent {long_str(g)}, expecting tangent {long_str(e)}"
        for p, e, g in zip(pr, exp, got)
    )
    raise TypeError(
        "Custom JVP rule must produce primal and tangent outputs with corresponding shapes and dtypes, but "
        f"got:\n{lines}"
    )


def _custom_jvp_bind(
    trace: core.Trace, fun_flat: Callable, jvp_flat: Callable, lead: list, flat: list, symbolic_zeros: bool, name: str
) -> list:
    """Apply a custom_jvp function (flat form) under ``trace``, the innermost transform."""
    args = list(lead) + list(flat)
    if _is_eval(trace):
        return fun_flat(*args)
    if isinstance(trace, ad.JVPTrace):
        tracers = [core.full_raise(trace, a) for a in args]
        primals = [t.primal for t in tracers]
        tangents = [t.tangent for t in tracers]
        nl = len(lead)

        def fun_lower(*xs: Any) -> list:
            return _custom_jvp_bind(
                _top_trace(xs), fun_flat, jvp_flat, list(xs[:nl]), list(xs[nl:]), symbolic_zeros, name
            )

        po, to = _custom_jvp_process(fun_lower, jvp_flat, primals[:nl], primals[nl:], tangents[nl:], symbolic_zeros)
        return _wrap_jvp_outs(trace, po, to)
    # any other transform: stage the primal function as a jaxpr and bind the primitive
    in_avals = [core.get_aval(a) for a in args]
    closed, consts = _trace_closed(fun_flat, in_avals, f"custom_jvp({name})")
    n_consts = len(consts)

    def jvp_c(ld: list, primals: list, tangents: list) -> tuple[list, list]:
        return jvp_flat(list(ld[n_consts:]), primals, tangents)

    jvp_c.__name__ = jvp_flat.__name__
    return core.bind(
        custom_jvp_call_p,
        [*consts, *args],
        dict(name=name, call_jaxpr=closed, jvp=jvp_c, num_consts=n_consts + len(lead), symbolic_zeros=symbolic_zeros),
    )


def __getattr__(name: str) -> Any:
    # jax.custom_derivatives also exports these two; they live in fjax._api_more (which imports
    # this module), so they are looked up on first use
    if name in ("closure_convert", "custom_gradient"):
        from fjax import _api_more  # noqa: PLC0415

        return getattr(_api_more, name)
    raise AttributeError(f"module 'fjax.custom_derivatives' has no attribute {name!r}")
