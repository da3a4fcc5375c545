"""``checkpoint`` / ``remat``: trade compute for memory in reverse mode, as ``jax.checkpoint``.

``checkpoint(f)`` stages ``f`` into the higher-order primitive ``remat2[jaxpr prevent_cse
differentiated policy]`` (JAX's name and parameters). Its rules:

* impl / abstract eval: evaluate / type its jaxpr; batching: batch the jaxpr;
* JVP: ``remat2`` of the JVP jaxpr;
* partial evaluation (under ``linearize``/``grad``): the known (primal) part runs now, but only
  values the ``policy`` allows (default: none) are kept as residuals -- plus the inputs; every
  other primal value the tangent computation needs is *recomputed* inside the staged ``remat2``
  of the linear jaxpr. ``ad.backward_pass`` evaluates those non-linear equations in its forward
  sweep, i.e. during the backward pass;
* transpose: ``backward_pass`` on the inner jaxpr, staged as another ``remat2``.

Policies are called as ``policy(primitive, *in_avals, **params) -> bool`` (True = saveable).
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core
from fjax.core import Jaxpr, JaxprEqn, ShapedArray, Var
from fjax.interpreters import ad, batching
from fjax.interpreters import partial_eval as pe
from fjax.interpreters.ad import UndefinedPrimal, Zero, is_undefined_primal

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "remat", "remat_p", "name_p"]


# ---------------------------------------------------------------------------------------------
# policies


def everything_saveable(*_: Any, **__: Any) -> bool:
    """Save every intermediate (as if checkpoint were not used)."""
    return True


def nothing_saveable(*_: Any, **__: Any) -> bool:
    """Save nothing: recompute every intermediate on the backward pass (the default)."""
    return False


@dataclass(frozen=True)
class DotsSaveable:
    """Save the outputs of matrix multiplications (and convolutions); recompute the rest."""

    only_if_no_batch_dims: bool

    def __call__(self, prim: core.Primitive, *args: Any, **params: Any) -> bool:
        if self.only_if_no_batch_dims:
            if prim.name == "dot_general":
                (_, _), (lb, rb) = params["dimension_numbers"]
                return not lb and not rb
            return False
        return prim.name in ("dot_general", "conv_general_dilated")


checkpoint_dots = dots_saveable = DotsSaveable(False)
checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable = DotsSaveable(True)


@dataclass(frozen=True)
class SaveOnlyTheseNames:
    saveable_names: frozenset

    def __call__(self, prim: core.Primitive, *_: Any, **params: Any) -> bool:
        return prim is name_p and params["name"] in self.saveable_names


@dataclass(frozen=True)
class SaveAnyNamesButThese:
    names: frozenset

    def __call__(self, prim: core.Primitive, *_: Any, **params: Any) -> bool:
        return prim is name_p and params["name"] not in self.names


@dataclass(frozen=True)
class SaveAnythingExceptTheseNames:
    names: frozenset

    def __call__(self, prim: core.Primitive, *_: Any, **params: Any) -> bool:
        return not (prim is name_p and params["name"] in self.names)


@dataclass(frozen=True)
class SaveFromBothPolicies:
    policy_1: Callable
    policy_2: Callable

    def __call__(self, prim: core.Primitive, *args: Any, **params: Any) -> bool:
        return bool(self.policy_1(prim, *args, **params)) or bool(self.policy_2(prim, *args, **params))


def save_only_these_names(*names: str) -> Callable:
    """Save only values named (with ``checkpoint_name``) by one of ``names``."""
    return SaveOnlyTheseNames(frozenset(names))


def save_any_names_but_these(*names: str) -> Callable:
    """Save only named values, excluding ``names``."""
    return SaveAnyNamesButThese(frozenset(names))


def save_anything_except_these_names(*names: str) -> Callable:
    """Save any value except those named by one of ``names``."""
    return SaveAnythingExceptTheseNames(frozenset(names))


def save_from_both_policies(policy_1: Callable, policy_2: Callable) -> Callable:
    """Save a value if either policy saves it."""
    return SaveFromBothPolicies(policy_1, policy_2)


class _Policies:
    """The namespace ``fjax.checkpoint_policies``."""

    everything_saveable = staticmethod(everything_saveable)
    nothing_saveable = staticmethod(nothing_saveable)
    dots_saveable = dots_saveable
    checkpoint_dots = checkpoint_dots
    dots_with_no_batch_dims_saveable = dots_with_no_batch_dims_saveable
    checkpoint_dots_with_no_batch_dims = checkpoint_dots_with_no_batch_dims
    save_only_these_names = staticmethod(save_only_these_names)
    save_any_names_but_these = staticmethod(save_any_names_but_these)
    save_anything_except_these_names = staticmethod(save_anything_except_these_names)
    save_from_both_policies = staticmethod(save_from_both_policies)


checkpoint_policies = _Policies()


# ---------------------------------------------------------------------------------------------
# checkpoint_name: an identity primitive that names a value for the policies


name_p = core.Primitive("name")
name_p.def_impl(lambda x, *, name: x)
name_p.def_abstract_eval(lambda x, *, name: x)


def _name_jvp(primals: list, tangents: list, *, name: str) -> tuple:
    (x,), (t,) = primals, tangents
    return name_p.bind(x, name=name), t


ad.primitive_jvps[name_p] = _name_jvp
ad.primitive_transposes[name_p] = lambda ct, x, *, name: [ct]
batching.defvectorized(name_p)


def checkpoint_name(x: Any, name: str) -> Any:
    """Identity on the pytree ``x`` that tags its values with ``name`` for checkpoint policies."""
    return tu.tree_map(lambda v: name_p.bind(v, name=name), x)


# ---------------------------------------------------------------------------------------------
# the remat primitive


remat_p = core.Primitive("remat2")
remat_p.multiple_results = True
checkpoint_p = remat_p


def _remat_impl(*args: Any, jaxpr: Jaxpr, prevent_cse: Any, differentiated: bool, policy: Any) -> list:
    ins = [core.Array(a, v.aval.weak_type) for a, v in zip(args, jaxpr.invars)]
    outs = core.eval_jaxpr(jaxpr, [], *ins)
    return [o._value if isinstance(o, core.Array) else np.asarray(o) for o in outs]


def _remat_abstract(*avals: Any, jaxpr: Jaxpr, prevent_cse: Any, differentiated: bool, policy: Any) -> list:
    if len(avals) != len(jaxpr.invars):
        raise TypeError(f"checkpoint: expected {len(jaxpr.invars)} arguments, got {len(avals)}")
    for a, v in zip(avals, jaxpr.invars):
        if not core.typematch(a, v.aval):
            raise TypeError(f"checkpoint: argument of type {a.str_short()} where {v.aval.str_short()} was traced")
    return jaxpr.out_avals


remat_p.def_impl(_remat_impl)
remat_p.def_abstract_eval(_remat_abstract)


def _trace(fun: Callable, in_avals: Sequence[ShapedArray], name: str) -> tuple[Jaxpr, list]:
    """Trace ``fun`` to a jaxpr whose constants are hoisted into leading inputs."""
    jaxpr, consts, _ = pe.trace_to_jaxpr(fun, in_avals, name)
    return pe.convert_constvars_jaxpr(jaxpr), consts


def _bind(args: Sequence[Any], jaxpr: Jaxpr, prevent_cse: Any, differentiated: bool, policy: Any) -> list:
    return core.bind(
        remat_p, list(args), dict(differentiated=differentiated, jaxpr=jaxpr, policy=policy, prevent_cse=prevent_cse)
    )


@core.cache_in_context(maxsize=1024)
def _jvp_jaxpr(jaxpr: Jaxpr, nonzeros: tuple) -> tuple[Jaxpr, list]:
    # cached here by the (open) jaxpr of the remat equation; the JVP itself is ad's
    new, consts, _ = ad.jvp_jaxpr(core.ClosedJaxpr(jaxpr, []), nonzeros, True, name="jvp(checkpoint)")
    return new.jaxpr, consts


def _remat_jvp(
    primals: list, tangents: list, *, jaxpr: Jaxpr, prevent_cse: Any, differentiated: bool, policy: Any
) -> tuple[list, list]:
    nonzeros = tuple(type(t) is not Zero for t in tangents)
    n_out = len(jaxpr.outvars)
    if not any(nonzeros):
        outs = _bind(primals, jaxpr, prevent_cse, differentiated, policy)
        return outs, [Zero(ad.tangent_aval(core.get_aval(o))) for o in outs]
    jvp_jaxpr, consts = _jvp_jaxpr(jaxpr, nonzeros)
    nz = [t for t in tangents if type(t) is not Zero]
    dyn = core.dynamic_main()
    if any(isinstance(t, pe.StagingTracer) and t._trace.main is dyn for t in nz):
        # Being staged into a jaxpr (e.g. jit's JVP): emit the primal and the tangent computation
        # as two remat equations, so that a later (equation-level) partial evaluation keeps the
        # primal outputs known and the tangent one recomputes the primal values it needs.
        p_out = _bind(primals, jaxpr, prevent_cse, differentiated, policy)
        t_jaxpr = pe.dce_jaxpr(jvp_jaxpr, [False] * n_out + [True] * n_out, keep_inputs=True)
        t_out = _bind([*consts, *primals, *nz], t_jaxpr, prevent_cse, differentiated, policy)
        return p_out, t_out
    outs = _bind([*consts, *primals, *nz], jvp_jaxpr, prevent_cse, differentiated, policy)
    return outs[:n_out], outs[n_out:]


ad.primitive_jvps[remat_p] = _remat_jvp


@core.cache_in_context(maxsize=1024)
def _batch_jaxpr(jaxpr: Jaxpr, dims: tuple, size: int, axis_key: tuple = ()) -> tuple[Jaxpr, list]:
    # axis_key (the enclosing named axes) is part of this cache's key; batching.batch_jaxpr keys by it too
    new, consts, _ = batching.batch_jaxpr(core.ClosedJaxpr(jaxpr, []), dims, size, True, name="vmap(checkpoint)")
    return new.jaxpr, consts


@batching.wants_axis_size
def _remat_batch(
    vals: list, dims: list, *, jaxpr: Jaxpr, prevent_cse: Any, differentiated: bool, policy: Any, axis_size: int
) -> tuple[list, list]:
    new, consts = _batch_jaxpr(jaxpr, tuple(dims), axis_size, batching.current_axis_key())
    outs = _bind([*consts, *vals], new, prevent_cse, differentiated, policy)
    return outs, [0] * len(outs)


batching.primitive_batchers[remat_p] = _remat_batch


def _remat_transpose(cts: list, *args: Any, jaxpr: Jaxpr, prevent_cse: Any, differentiated: bool, policy: Any) -> list:
    undef = [is_undefined_primal(a) for a in args]
    defined = [a for a in args if not is_undefined_primal(a)]
    cts = [ad.instantiate_zeros(c) for c in cts]
    nd = len(defined)

    def f(*xs: Any) -> list:
        it = iter(xs[:nd])
        full = [UndefinedPrimal(a.aval) if u else next(it) for a, u in zip(args, undef)]
        res = ad.backward_pass(jaxpr, [], full, list(xs[nd:]))
        return [ad.instantiate_zeros(r) for r, u in zip(res, undef) if u]

    in_avals = [core.get_aval(d) for d in defined] + [core.get_aval(c) for c in cts]
    new, consts = _trace(f, in_avals, "transpose(checkpoint)")
    outs = _bind([*consts, *defined, *cts], new, prevent_cse, True, policy)
    it = iter(outs)
    return [next(it) if u else None for u in undef]


ad.primitive_transposes[remat_p] = _remat_transpose


def _saveable(policy: Any, eqn: JaxprEqn) -> bool:
    if policy is None:
        return False
    return bool(policy(eqn.primitive, *[x.aval for x in eqn.invars], **eqn.params))


@core.cache_in_context(maxsize=1024)
def partial_eval_jaxpr_policy(jaxpr: Jaxpr, in_unknowns: tuple, policy: Any) -> tuple[Jaxpr, Jaxpr, list, int]:
    """Split ``jaxpr`` like ``pe.partial_eval_jaxpr``, but only outputs of equations ``policy``
    allows (and known inputs) become residuals; other known values the unknown side needs are
    recomputed there. Returns ``(jaxpr_known, jaxpr_staged, out_unknowns, num_res)`` with
    ``jaxpr_known: known_ins -> known_outs + res`` and ``jaxpr_staged: res + unknown_ins -> unknown_outs``.
    """
    unknown = {v for v, uk in zip(jaxpr.invars, in_unknowns) if uk}
    eqn_unknown = []
    for eqn in jaxpr.eqns:
        uk = any(type(x) is Var and x in unknown for x in eqn.invars)
        eqn_unknown.append(uk)
        if uk:
            unknown.update(eqn.outvars)
    out_unknowns = [type(v) is Var and v in unknown for v in jaxpr.outvars]
    need = {v for v, uk in zip(jaxpr.outvars, out_unknowns) if uk}
    staged = list(eqn_unknown)
    saved: set = set()
    for i in range(len(jaxpr.eqns) - 1, -1, -1):
        eqn = jaxpr.eqns[i]
        if eqn_unknown[i]:
            need.update(x for x in eqn.invars if type(x) is Var)
        elif any(o in need for o in eqn.outvars):
            if _saveable(policy, eqn):
                saved.update(o for o in eqn.outvars if o in need)
            else:
                staged[i] = True
                need.update(x for x in eqn.invars if type(x) is Var)
    known_in = [v for v, uk in zip(jaxpr.invars, in_unknowns) if not uk]
    residuals = [v for v in known_in if v in need]
    for i, eqn in enumerate(jaxpr.eqns):
        if not eqn_unknown[i]:
            residuals.extend(o for o in eqn.outvars if o in saved)
    known_eqns = [e for e, uk in zip(jaxpr.eqns, eqn_unknown) if not uk]
    known_outs = [v for v, uk in zip(jaxpr.outvars, out_unknowns) if not uk]
    jaxpr_known = pe.dce_jaxpr(Jaxpr([], known_in, known_outs + residuals, known_eqns))
    res_vars = [Var(r.aval) for r in residuals]
    sub = dict(zip(residuals, res_vars))

    def rn(x: Any) -> Any:
        return sub.get(x, x) if type(x) is Var else x

    st_eqns = [e.replace(invars=[rn(x) for x in e.invars]) for e, s in zip(jaxpr.eqns, staged) if s]
    unknown_in = [v for v, uk in zip(jaxpr.invars, in_unknowns) if uk]
    st_outs = [rn(v) for v, uk in zip(jaxpr.outvars, out_unknowns) if uk]
    jaxpr_staged = pe.dce_jaxpr(Jaxpr([], res_vars + unknown_in, st_outs, st_eqns))
    core.check_jaxpr(jaxpr_known)
    core.check_jaxpr(jaxpr_staged)
    return jaxpr_known, jaxpr_staged, out_unknowns, len(residuals)


def _remat_partial_eval(
    trace: pe.StagingTrace, tracers: list, *, jaxpr: Jaxpr, prevent_cse: Any, differentiated: bool, policy: Any
) -> list:
    unknowns = tuple(not pe.is_known(t) for t in tracers)
    if not any(unknowns):
        return _bind([t.const for t in tracers], jaxpr, prevent_cse, differentiated, policy)
    jk, js, out_uk, num_res = partial_eval_jaxpr_policy(jaxpr, unknowns, policy)
    known_vals = [t.const for t, u in zip(tracers, unknowns) if not u]
    # the known part runs now, outside the remat (as JAX hoists it)
    known_outs = core.eval_jaxpr(jk, [], *known_vals)
    n_known = len(known_outs) - num_res
    res = known_outs[n_known:]
    res_tracers = [trace.get_or_make_const_tracer(r) for r in res]
    un_tracers = [t for t, u in zip(tracers, unknowns) if u]
    st_outs = trace.default_process_primitive(
        remat_p, res_tracers + un_tracers, dict(differentiated=True, jaxpr=js, policy=policy, prevent_cse=prevent_cse)
    )
    ki, ui = iter(known_outs[:n_known]), iter(st_outs)
    return [next(ui) if u else next(ki) for u in out_uk]


pe.partial_eval_rules[remat_p] = _remat_partial_eval


def _remat_partial_eval_jaxpr(eqn: JaxprEqn, unknowns: list) -> tuple:
    """Split a remat equation nested in a jaxpr being partially evaluated (``grad(jit(f))``):
    the known part saves what the policy allows, the staged part recomputes the rest."""
    p = eqn.params
    jk, js, out_uk, num_res = partial_eval_jaxpr_policy(p["jaxpr"], tuple(unknowns), p["policy"])
    known_outs = [v for v, u in zip(eqn.outvars, out_uk) if not u]
    unknown_outs = [v for v, u in zip(eqn.outvars, out_uk) if u]
    res = [Var(v.aval) for v in jk.outvars[len(known_outs) :]]
    known_ins = [x for x, u in zip(eqn.invars, unknowns) if not u]
    unknown_ins = [x for x, u in zip(eqn.invars, unknowns) if u]
    eqn_known = JaxprEqn(remat_p, known_ins, known_outs + res, dict(p, jaxpr=jk))
    eqn_staged = JaxprEqn(remat_p, res + unknown_ins, unknown_outs, dict(p, jaxpr=js, differentiated=True))
    return eqn_known, eqn_staged, out_uk


pe.partial_eval_jaxpr_rules[remat_p] = _remat_partial_eval_jaxpr


def _remat_dce(used_outputs: list, eqn: JaxprEqn) -> tuple[list, JaxprEqn | None]:
    if not any(used_outputs):
        return [False] * len(eqn.invars), None
    jaxpr = eqn.params["jaxpr"]
    new = pe.dce_jaxpr(jaxpr, used_outputs, keep_inputs=False)
    kept = set(new.invars)
    used_in = [v in kept for v in jaxpr.invars]
    new_eqn = eqn.replace(
        invars=[x for x, u in zip(eqn.invars, used_in) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
        params=dict(eqn.params, jaxpr=new),
    )
    return used_in, new_eqn


pe.dce_rules[remat_p] = _remat_dce


# ---------------------------------------------------------------------------------------------
# the user-facing wrapper


class _DeprecatedArg:
    """The default of ``checkpoint``'s removed ``concrete`` option (JAX's ``DeprecatedArg``)."""

    def __repr__(self) -> str:
        return "Deprecated"


_DEPRECATED = _DeprecatedArg()


def checkpoint(
    fun: Callable | None = None,
    *,
    prevent_cse: bool = True,
    policy: Callable | None = None,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    concrete: Any = _DEPRECATED,
) -> Callable:
    """Make ``fun`` recompute its internal values on the backward pass instead of storing them.

    Under reverse-mode differentiation only the inputs (plus whatever ``policy`` marks
    saveable, e.g. ``checkpoint_policies.dots_saveable``) are kept as residuals; the rest of the
    forward computation is re-run during the backward pass. Arguments at ``static_argnums``, and
    those named in ``static_argnames`` (by keyword or position), are passed as they are (Python
    values, hashable or not). ``concrete`` was removed in JAX 0.10: passing it raises, as there.
    ``remat`` is an alias.
    """
    if concrete is not _DEPRECATED:
        raise NotImplementedError(
            "The `concrete` option to `jax.checkpoint` was deprecated in JAX v0.8.2, and removed in JAX v0.10.0. "
            "In its place please use `static_argnums`; for details refer to "
            "https://docs.jax.dev/en/latest/jep/11830-new-remat-checkpoint.html."
        )
    if fun is None:
        return lambda f: checkpoint(
            f, prevent_cse=prevent_cse, policy=policy, static_argnums=static_argnums, static_argnames=static_argnames
        )
    if not callable(fun):
        raise TypeError(f"checkpoint: expected a function, got {fun!r} of type {type(fun).__name__}")
    if type(static_argnums) is int:
        static: tuple = (static_argnums,)
    elif type(static_argnums) is tuple and all(type(d) is int for d in static_argnums):
        static = static_argnums
    else:
        raise TypeError(
            "the `static_argnums` argument to `jax.checkpoint` / `jax.remat` must be an int, tuple of ints or, "
            f"bool, but got value {static_argnums}"
        )
    name = getattr(fun, "__name__", type(fun).__name__)
    static_names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    if static_names:  # a name of a positional parameter makes its position static too
        try:
            params = list(inspect.signature(fun).parameters.values())
        except (TypeError, ValueError):
            params = []
        kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        name_pos = {i for i, p in enumerate(params) if p.kind in kinds and p.name in static_names}
    else:
        name_pos = set()

    @functools.wraps(fun)
    def fun_remat(*args: Any, **kwargs: Any) -> Any:
        static_kw = {k: kwargs.pop(k) for k in [k for k in kwargs if k in static_names]}
        nargs = len(args)
        if not all(-nargs <= d < nargs for d in static):
            raise ValueError(
                "the `static_argnums` argument to `jax.checkpoint` / `jax.remat` can only take integer values "
                f"greater than or equal to `-len(args)` and less than `len(args)`, but got {static}, while "
                f"`len(args)` = {nargs}"
            )
        # static arguments are passed to ``fun`` as they are, hashable or not (as JAX's)
        st = {i % nargs for i in static} | {i for i in name_pos if i < nargs}
        dyn = tuple(a for i, a in enumerate(args) if i not in st)
        flat, in_tree = tu.tree_flatten((dyn, kwargs))
        flat = [_as_value(x) for x in flat]
        out_tree_box: list = []

        def flat_fun(*leaves: Any) -> list:
            d, kw = tu.tree_unflatten(in_tree, list(leaves))
            it = iter(d)
            full = [args[i] if i in st else next(it) for i in range(nargs)]
            out = fun(*full, **kw, **static_kw)
            o_flat, o_tree = tu.tree_flatten(out)
            out_tree_box.append(o_tree)
            return [_as_value(o) for o in o_flat]

        jaxpr, consts = _trace(flat_fun, [core.get_aval(x) for x in flat], f"checkpoint({name})")
        outs = _bind([*consts, *flat], jaxpr, prevent_cse, False, policy)
        return tu.tree_unflatten(out_tree_box[0], outs)

    return fun_remat


remat = checkpoint


def _as_value(x: Any) -> Any:
    if isinstance(x, (core.Tracer, core.Array)):
        return x
    if type(x) in (bool, int, float, complex) or isinstance(x, (np.ndarray, np.generic)):
        return core.to_array(x, "checkpoint")
    raise TypeError(
        f"checkpoint: value {x!r} of type {type(x).__name__} is not a valid JAX type; mark non-array arguments "
        "with static_argnums"
    )
