"""``custom_vjp`` (``fjax.custom_derivatives``): the ``custom_vjp_call`` and ``custom_lin``
primitives, the decorator, and the helpers for rules with symbolic zeros."""

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
from fjax.core import ClosedJaxpr
from fjax.dtypes import kind as _dkind
from fjax.interpreters import ad, batching
from fjax.interpreters import partial_eval as pe
from fjax.interpreters.ad import Zero

# ---------------------------------------------------------------------------------------------
# custom_vjp


def _raise_custom_vjp_error_on_jvp(*_: Any, **__: Any) -> Any:
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


custom_lin_p = core.Primitive("custom_lin")
custom_lin_p.multiple_results = True

_PY_SCALARS = (bool, int, float, complex)
custom_lin_p.def_impl(_raise_custom_vjp_error_on_jvp)


def _custom_lin_abstract(
    *avals: Any, num_res: int, bwd: Callable, out_avals: tuple, in_zeros: tuple, in_avals: tuple, symbolic_zeros: bool
) -> list:
    return list(out_avals)


custom_lin_p.def_abstract_eval(_custom_lin_abstract)
ad.primitive_jvps[custom_lin_p] = _raise_custom_vjp_error_on_jvp
batching.primitive_batchers[custom_lin_p] = _raise_custom_vjp_error_on_jvp


def _custom_lin_transpose(
    cts: list,
    *invals: Any,
    num_res: int,
    bwd: Callable,
    out_avals: tuple,
    in_zeros: tuple,
    in_avals: tuple,
    symbolic_zeros: bool,
) -> list:
    res = list(invals[:num_res])
    if symbolic_zeros:
        cts = [SymbolicZero(ad.tangent_aval(a)) if type(c) is Zero else c for c, a in zip(cts, out_avals)]
    else:
        cts = [ad.instantiate_zeros(c) for c in cts]
    cts_in = bwd(res, cts)
    out: list = [None] * num_res
    for ct, z in zip(cts_in, in_zeros):
        if not z:
            out.append(ct)
    return out


ad.primitive_transposes[custom_lin_p] = _custom_lin_transpose


custom_vjp_call_p = core.Primitive("custom_vjp_call")
custom_vjp_call_p.multiple_results = True
custom_vjp_call_p.def_impl(_jaxpr_impl)
custom_vjp_call_p.def_abstract_eval(_jaxpr_abstract)


def _custom_vjp_process(
    fun: Callable, fwd: Callable, bwd: Callable, primals: list, tangents: list, symbolic_zeros: bool
) -> tuple[list, list]:
    """JVP of a custom_vjp function (inputs all differentiable; consts are closed over by the
    rules). ``fwd(primals, perturbed) -> (res, outs)``, ``bwd(res, cts) -> cts_in``."""
    if all(type(t) is Zero for t in tangents):
        outs = fun(*primals)
        return outs, [_zero_tangent_of(o) for o in outs]
    perturbed = [type(t) is not Zero for t in tangents]
    res, primals_out = fwd(primals, perturbed)
    out_avals = tuple(ad.tangent_aval(core.get_aval(p)) for p in primals_out)
    in_zeros = tuple(not p for p in perturbed)
    nz = [t for t in tangents if type(t) is not Zero]
    touts = core.bind(
        custom_lin_p,
        [*res, *nz],
        dict(
            num_res=len(res),
            bwd=bwd,
            out_avals=out_avals,
            in_zeros=in_zeros,
            in_avals=tuple(ad.tangent_aval(core.get_aval(p)) for p in primals),
            symbolic_zeros=symbolic_zeros,
        ),
    )
    touts = [Zero(a) if a.dtype == dtypes.float0 else t for t, a in zip(touts, out_avals)]
    return list(primals_out), touts


def _custom_vjp_call_jvp(
    primals: list,
    tangents: list,
    *,
    name: str,
    bwd: Callable,
    call_jaxpr: ClosedJaxpr,
    fwd: Callable,
    num_consts: int,
    symbolic_zeros: bool,
) -> tuple[list, list]:
    params = dict(
        name=name, bwd=bwd, call_jaxpr=call_jaxpr, fwd=fwd, num_consts=num_consts, symbolic_zeros=symbolic_zeros
    )
    consts, prims = list(primals[:num_consts]), list(primals[num_consts:])
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise CustomVJPException()

    def fun(*xs: Any) -> list:
        return core.bind(custom_vjp_call_p, [*consts, *xs], params)

    def fwd_c(ps: list, perturbed: list) -> tuple[list, list]:
        return fwd(consts, ps, perturbed)

    def bwd_c(res: list, cts: list) -> list:
        return bwd(res, cts)

    return _custom_vjp_process(fun, fwd_c, bwd_c, prims, list(tangents[num_consts:]), symbolic_zeros)


ad.primitive_jvps[custom_vjp_call_p] = _custom_vjp_call_jvp


@batching.wants_axis_size
def _custom_vjp_call_batch(
    vals: list,
    dims: list,
    *,
    name: str,
    bwd: Callable,
    call_jaxpr: ClosedJaxpr,
    fwd: Callable,
    num_consts: int,
    symbolic_zeros: bool,
    axis_size: int,
) -> tuple:
    size = axis_size
    new_jaxpr, new_consts = _batch_closed(call_jaxpr, dims, size)
    c_dims, p_dims = list(dims[:num_consts]), list(dims[num_consts:])
    p_avals = [core.get_aval(v) for v in vals[num_consts:]]
    n_new = len(new_consts)
    res_count: list = []

    def bfwd(consts: list, primals: list, perturbed: list) -> tuple[list, list]:
        consts = list(consts[n_new:])
        nc = len(consts)

        def f(*xs: Any) -> list:
            res, outs = fwd(list(xs[:nc]), list(xs[nc:]), perturbed)
            res_count.append(len(res))
            return list(res) + list(outs)

        outs = batching.vmap_flat(f, size, c_dims + p_dims, consts + list(primals), lambda n: [0] * n)
        k = res_count[-1]
        return outs[:k], outs[k:]

    def bbwd(res: list, cts: list) -> list:
        nr = len(res)
        nz = [type(c) is not SymbolicZero for c in cts]
        zs = [c for c in cts if type(c) is SymbolicZero]
        args = list(res) + [c for c, z in zip(cts, nz) if z]
        out_zero: list = []

        def f(*xs: Any) -> list:
            r, ci = list(xs[:nr]), iter(xs[nr:])
            zi = iter(zs)
            cs = [next(ci) if z else _unbatched_zero(next(zi), 0) for z in nz]
            cts_in = bwd(r, cs)
            out_zero.append([type(c) is Zero for c in cts_in])
            return [ad.instantiate_zeros(c) for c in cts_in]

        outs = batching.vmap_flat(f, size, [0] * len(args), args, lambda n: [0] * n)
        zeros = out_zero[-1]
        result = []
        for o, d, z, pa in zip(outs, p_dims, zeros, p_avals):
            if z:
                result.append(Zero(ad.tangent_aval(pa)))
            elif d is None:
                from fjax import lax  # noqa: PLC0415

                result.append(lax.reduce_sum(o, (0,)))
            else:
                result.append(batching.moveaxis(o, 0, d))
        return result

    bfwd.__name__ = getattr(fwd, "__name__", "fwd")
    bbwd.__name__ = getattr(bwd, "__name__", "bwd")
    outs = core.bind(
        custom_vjp_call_p,
        [*new_consts, *vals],
        dict(
            name=name,
            bwd=bbwd,
            call_jaxpr=new_jaxpr,
            fwd=bfwd,
            num_consts=n_new + num_consts,
            symbolic_zeros=symbolic_zeros,
        ),
    )
    return outs, [0] * len(outs)


batching.primitive_batchers[custom_vjp_call_p] = _custom_vjp_call_batch
pe.partial_eval_rules[custom_vjp_call_p] = _inline_partial_eval
ad.primitive_transposes[custom_vjp_call_p] = _inline_transpose


class CustomVJPException(Exception):
    """A custom_vjp function was differentiated with respect to a value it closes over."""

    def __init__(self) -> None:
        super().__init__(
            "Detected differentiation of a custom_vjp function with respect to a closed-over value. That isn't "
            "supported because the custom VJP rule only specifies how to differentiate the custom_vjp function with "
            "respect to explicit input parameters. Pass the value as an explicit argument instead."
        )


def _check_for_tracers(x: Any) -> None:
    for leaf in tu.tree_leaves(x):
        if isinstance(leaf, core.Tracer):
            raise core.UnexpectedTracerError(
                "Found a JAX Tracer object passed as an argument to a custom_vjp function in a position indicated by "
                "nondiff_argnums as non-differentiable. Tracers cannot be passed as non-differentiable arguments to "
                "custom_vjp functions; instead, nondiff_argnums should only be used for arguments that can't be or "
                "contain JAX tracers, e.g. function-valued arguments. In particular, array-valued arguments should "
                "typically not be indicated as nondiff_argnums."
            )


class custom_vjp:
    """Set up a JAX-transformable function for a custom VJP rule definition.

    Attach the rule with ``defvjp(fwd, bwd)``: ``fwd(*args) -> (out, residuals)`` and
    ``bwd(*nondiff_args, residuals, out_cotangent) -> tuple`` of one cotangent per
    differentiable argument (``None`` for a zero cotangent). Forward mode is not supported.
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = (), nondiff_argnames: Sequence[str] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _nondiff_from_names(fun, nondiff_argnums, nondiff_argnames)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        self.symbolic_zeros = False

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False, optimize_remat: bool = False) -> None:
        """Define the forward pass ``fwd`` (returns ``(out, residuals)``) and backward pass ``bwd``."""
        self.fwd = fwd
        self.bwd = bwd
        self.symbolic_zeros = symbolic_zeros

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        primal_name = _fun_name(self.fun)
        if self.fwd is None or self.bwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {primal_name} using defvjp.")
        args = _resolve_kwargs(self.fun, args, kwargs, "custom_vjp")
        nd = set(self.nondiff_argnums)
        for i in nd:
            if i >= len(args):
                raise TypeError(
                    f"custom_vjp {primal_name}: nondiff_argnums {self.nondiff_argnums} out of range for "
                    f"{len(args)} arguments"
                )
            _check_for_tracers(args[i])
        dyn_args = tuple(a for i, a in enumerate(args) if i not in nd)
        flat, in_tree = tu.tree_flatten(dyn_args)
        trace = _top_trace([x for x in flat if isinstance(x, core.Tracer)])
        if _is_eval(trace):
            return self.fun(*args)
        flat = [_as_value(x, f"custom_vjp {primal_name}") for x in flat]
        in_avals = [core.get_aval(x) for x in flat]
        static_args = [args[i] for i in sorted(nd)]
        user_fwd, user_bwd = self.fwd, self.bwd
        fwd_name, bwd_name = _fun_name(user_fwd), _fun_name(user_bwd)
        symbolic_zeros = self.symbolic_zeros
        out_store: list = []
        res_store: list = []

        def full_args(dyn: list) -> list:
            dit = iter(tu.tree_unflatten(in_tree, dyn))
            return [args[i] if i in nd else next(dit) for i in range(len(args))]

        def fun_flat(*xs: Any) -> list:
            out = self.fun(*full_args(list(xs)))
            o_flat, o_tree = tu.tree_flatten(out)
            o_flat = [_as_value(o, f"custom_vjp {primal_name} output") for o in o_flat]
            out_store.append((o_tree, [core.get_aval(o) for o in o_flat]))
            return o_flat

        def fwd_flat(primals: list, perturbed: list) -> tuple[list, list]:
            if symbolic_zeros:
                primals = [CustomVJPPrimal(p, z) for p, z in zip(primals, perturbed)]
            pair = user_fwd(*full_args(list(primals)))
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise TypeError(
                    f"Custom VJP fwd rule {fwd_name} for function {primal_name} must produce a pair (list or tuple of "
                    "length two) where the first element represents the primal output (equal to those of the "
                    f"custom_vjp-decorated function {primal_name}) and the second element represents residuals (i.e. "
                    "values stored from the forward pass for use on the backward pass), but instead of a pair the fwd "
                    f"rule {fwd_name} produced {pair}."
                )
            p_out, p_tree = tu.tree_flatten(pair[0])
            p_out = [_as_value(p, f"custom_vjp {fwd_name} primal output") for p in p_out]
            res, res_tree = tu.tree_flatten(pair[1])
            # Python scalars (a flag such as equinox's ``perturbed``) reach bwd as they are, as in JAX
            # (where they stay literals of the linear jaxpr); only arrays are residual values
            scalars = {i: r for i, r in enumerate(res) if type(r) in _PY_SCALARS}
            res = [_as_value(r, f"custom_vjp {fwd_name} residual") for r in res if type(r) not in _PY_SCALARS]
            p_avals = [core.get_aval(p) for p in p_out]
            if out_store:
                o_tree, o_avals = out_store[0]
                if o_tree != p_tree:
                    raise TypeError(
                        f"Custom VJP fwd rule {fwd_name} for function {primal_name} must produce a pair (list or tuple "
                        "of length two) where the first element represents the primal output (equal to the output of "
                        f"the custom_vjp-decorated function {primal_name}) and the second element represents "
                        "residuals (i.e. values stored from the forward pass for use on the backward pass), but "
                        "instead the fwd rule output's first element had container/pytree structure:\n    "
                        f"{_ty_tree(p_tree, p_avals)}\nwhile the custom_vjp-decorated function {primal_name} had "
                        f"output container/pytree structure:\n    {_ty_tree(o_tree, o_avals)}."
                    )
                if not all(core.typematch(a, b) for a, b in zip(p_avals, o_avals)):
                    raise TypeError(
                        f"Custom VJP fwd rule {fwd_name} for function {primal_name} must produce a pair (list or tuple "
                        "of length two) where the first element represents the primal output (equal to the output of "
                        f"the custom_vjp-decorated function {primal_name}) and the second element represents "
                        "residuals (i.e. values stored from the forward pass for use on the backward pass), but "
                        "instead the fwd rule output's first element had shapes/dtypes of:\n    "
                        f"{_ty_tree(p_tree, p_avals)}\nwhile the custom_vjp-decorated function {primal_name} had "
                        f"output shapes/dtypes of:\n    {_ty_tree(o_tree, o_avals)}"
                    )
            else:
                out_store.append((p_tree, p_avals))
            res_store.append((res_tree, scalars))
            return res, p_out

        def bwd_flat(res: list, cts: list) -> list:
            res_tree, scalars = res_store[-1]
            o_tree = out_store[0][0]
            if scalars:
                it = iter(res)
                res = [scalars[i] if i in scalars else next(it) for i in range(len(res) + len(scalars))]
            py_res = tu.tree_unflatten(res_tree, list(res))
            py_cts = tu.tree_unflatten(o_tree, list(cts))
            cts_in = user_bwd(*static_args, py_res, py_cts)
            return _flatten_bwd_out(cts_in, in_tree, in_avals, bwd_name)

        fwd_flat.__name__ = fwd_name
        bwd_flat.__name__ = bwd_name
        out_flat = _custom_vjp_bind(trace, fun_flat, fwd_flat, bwd_flat, flat, symbolic_zeros, primal_name)
        return tu.tree_unflatten(out_store[0][0], out_flat)


def _flatten_bwd_out(cts_in: Any, in_tree: Any, in_avals: list, bwd_name: str) -> list:
    n_args = len(tu.treedef_children(in_tree)) if hasattr(tu, "treedef_children") else None
    if isinstance(cts_in, list) and n_args is not None and len(cts_in) == n_args:
        cts_in = tuple(cts_in)
    zero = object()
    dummy = tu.tree_unflatten(in_tree, [object()] * in_tree.num_leaves)
    flat: list = []

    def append(x: Any, d: Any) -> Any:
        n = len(tu.tree_leaves(d))
        if x is None and d is not None:
            flat.extend([zero] * n)
        elif x is not None:
            flat.extend([x] * n)
        return x

    try:
        if not isinstance(cts_in, tuple):
            raise ValueError
        tu.tree_map(append, cts_in, dummy, is_leaf=lambda x: x is None)
    except (ValueError, TypeError):
        _, tree2 = tu.tree_flatten(cts_in)
        raise TypeError(
            "Custom VJP bwd rule must produce an output with the same container (pytree) structure as the args tuple "
            "of the primal function, and in particular must produce a tuple of length equal to the number of "
            f"arguments to the primal function, but got bwd output structure {tree2} for primal input structure "
            f"{in_tree}."
        ) from None
    paths = tu.leaf_paths(dummy)
    results = []
    for kp, a, ct in zip(paths, in_avals, flat):
        ct_aval = ad.tangent_aval(a)
        if ct is zero or ct_aval.dtype == dtypes.float0:
            results.append(Zero(ct_aval))
        elif type(ct) is SymbolicZero:
            if not core.typematch(ct_aval, ct.aval):
                raise ValueError(
                    "Custom VJP bwd rule produced a SymbolicZero with a shape/dtype that does not match the "
                    f"corresponding input tangent shape/dtype: at output{kp} the SymbolicZero had shape/dtype "
                    f"{long_str(ct.aval)} while the corresponding input had shape/dtype {long_str(a)}. Consider "
                    "just returning a None here instead of a SymbolicZero object."
                )
            results.append(Zero(ct_aval))
        else:
            ct = _as_value(ct, f"custom_vjp bwd rule {bwd_name}")
            ca = core.get_aval(ct)
            if ca.shape != ct_aval.shape:
                raise ValueError(
                    "Custom VJP bwd rule must produce an output with the same type as the args tuple of the primal "
                    f"function, but at output{kp} the bwd rule produced an output of type {long_str(ca)} "
                    f"corresponding to an input of type {long_str(a)}, so the shapes do not match"
                )
            if ca.dtype != ct_aval.dtype:
                if _dkind(ca.dtype) in "fc" and _dkind(ct_aval.dtype) in "fc":
                    from fjax import lax  # noqa: PLC0415

                    ct = lax.convert_element_type(ct, ct_aval.dtype)
                else:
                    raise ValueError(
                        "Custom VJP bwd rule must produce an output with the same type as the args tuple of the "
                        f"primal function, but at output{kp} the bwd rule produced an output of type {long_str(ca)} "
                        f"corresponding to an input of type {long_str(a)}"
                    )
            results.append(ct)
    return results


def _custom_vjp_bind(
    trace: core.Trace,
    fun_flat: Callable,
    fwd_flat: Callable,
    bwd_flat: Callable,
    flat: list,
    symbolic_zeros: bool,
    name: str,
) -> list:
    if _is_eval(trace):
        return fun_flat(*flat)
    if isinstance(trace, ad.JVPTrace):
        tracers = [core.full_raise(trace, a) for a in flat]
        primals = [t.primal for t in tracers]
        tangents = [t.tangent for t in tracers]

        def fun_lower(*xs: Any) -> list:
            return _custom_vjp_bind(_top_trace(xs), fun_flat, fwd_flat, bwd_flat, list(xs), symbolic_zeros, name)

        po, to = _custom_vjp_process(fun_lower, fwd_flat, bwd_flat, primals, tangents, symbolic_zeros)
        return _wrap_jvp_outs(trace, po, to)
    closed, consts = _trace_closed(fun_flat, [core.get_aval(a) for a in flat], f"custom_vjp({name})")

    def fwd_c(cs: list, primals: list, perturbed: list) -> tuple[list, list]:
        return fwd_flat(primals, perturbed)

    fwd_c.__name__ = fwd_flat.__name__
    return core.bind(
        custom_vjp_call_p,
        [*consts, *flat],
        dict(
            name=name, bwd=bwd_flat, call_jaxpr=closed, fwd=fwd_c, num_consts=len(consts), symbolic_zeros=symbolic_zeros
        ),
    )


def zero_from_primal(val: Any, symbolic_zeros: bool = False) -> Any:
    """The zero tangent of each leaf of ``val`` (float0 zeros for integer leaves), as
    ``SymbolicZero``s when ``symbolic_zeros``; what a custom rule returns for an unperturbed input."""

    def zero(x: Any) -> Any:
        aval = ad.tangent_aval(core.get_aval(_as_value(x, "zero_from_primal")))
        return SymbolicZero(aval) if symbolic_zeros else ad._zeros_like(aval)

    return tu.tree_map(zero, val)


def custom_vjp_primal_tree_values(tree: Any) -> Any:
    """``tree`` with each ``CustomVJPPrimal`` leaf (what a ``symbolic_zeros=True`` fwd rule
    receives) replaced by its ``value``."""
    return tu.tree_map(
        lambda x: x.value if isinstance(x, CustomVJPPrimal) else x,
        tree,
        is_leaf=lambda x: isinstance(x, CustomVJPPrimal),
    )
