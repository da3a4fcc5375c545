"""``jax.custom_batching``: functions with a custom ``vmap`` rule (``custom_vmap``) and
``sequential_vmap`` (a function vmapped as a loop over the batch).

A ``custom_vmap`` function binds one ``custom_vmap_call`` equation holding the traced function
and the user's rule. Evaluated or staged (``jit``) it computes ``fun``; under ``vmap`` (also
``vmap`` of a ``jit`` that staged it) the rule replaces it. Under ``jvp``/``grad`` the primal
output keeps the rule (so ``vmap(jvp(f))`` batches the primal with it) and the tangent is that
of ``fun``. Differences from JAX: JAX differentiates a custom_vmap function in forward mode only
and, under ``vmap`` of ``jvp``, uses the rule's derivative for the tangents; fjax also allows
reverse mode and always differentiates ``fun``. Under ``jit`` the equation runs as a host step
(its body is evaluated between the compiled kernels).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core
from fjax.core import ClosedJaxpr
from fjax.interpreters import ad, batching
from fjax.interpreters import partial_eval as pe

__all__ = ["custom_vmap", "sequential_vmap"]

custom_vmap_call_p = core.Primitive("custom_vmap_call")
custom_vmap_call_p.multiple_results = True


def _impl(*args: Any, call_jaxpr: ClosedJaxpr, **_: Any) -> list:
    ins = [core.Array(a, av.weak_type) for a, av in zip(args, call_jaxpr.in_avals)]
    outs = core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *ins)
    return [o._value if isinstance(o, core.Array) else np.asarray(o) for o in outs]


def _abstract(*avals: Any, call_jaxpr: ClosedJaxpr, name: str, **_: Any) -> list:
    if len(avals) != len(call_jaxpr.in_avals):
        raise TypeError(f"custom_vmap({name}): expected {len(call_jaxpr.in_avals)} arguments, got {len(avals)}")
    return list(call_jaxpr.out_avals)


custom_vmap_call_p.def_impl(_impl)
custom_vmap_call_p.def_abstract_eval(_abstract)


def _batch(vals: list, dims: list, *, call_jaxpr: ClosedJaxpr, name: str, rule: Callable | None, in_tree: Any,
           out_tree: Any, num_consts: int, axis_size: int) -> tuple[list, list]:  # fmt: skip
    if rule is None:
        raise AttributeError(f"No batching rule defined for custom_vmap function {name} using def_vmap.")
    if any(d is not None for d in dims[:num_consts]):
        raise NotImplementedError(
            f"custom_vmap({name}): the function closes over a value batched by vmap; pass it as an argument"
        )
    vals, dims = vals[num_consts:], dims[num_consts:]
    args = [batching.bdim_at_front(v, d, axis_size) if d is not None else v for v, d in zip(vals, dims)]
    in_batched = tu.tree_unflatten(in_tree, [d is not None for d in dims])
    rule_name = _fun_name(rule)
    out, out_batched = rule(axis_size, list(in_batched), *tu.tree_unflatten(in_tree, args))
    out_flat, o_tree = tu.tree_flatten(out)
    ob_flat, ob_tree = tu.tree_flatten(out_batched)
    if o_tree != ob_tree:
        raise ValueError(
            f"structure of output value and output batching specification returned by custom vmap rule ({rule_name}) "
            f"do not match.\nOutput values: {o_tree}\nBatching spec: {ob_tree}"
        )
    if o_tree != out_tree:
        raise ValueError(
            f"structure of output returned by custom vmap rule ({rule_name}) does not match that of original "
            f"custom-vmapped function ({name}).\nOriginal output: {out_tree}\nRule output: {o_tree}"
        )
    outs, out_dims = [], []
    for o, b, aval in zip(out_flat, ob_flat, call_jaxpr.out_avals):
        o = o if isinstance(o, core.Tracer) else core.to_array(o, f"custom_vmap({name})")
        want = (axis_size, *aval.shape) if b else tuple(aval.shape)
        if tuple(o.shape) != want or o.dtype != aval.dtype:
            raise ValueError(
                f"custom vmap rule ({rule_name}) returned an output of type {core.get_aval(o).str_short()} where "
                f"{'a batched ' if b else ''}{aval.str_short()} was expected (axis size {axis_size})"
            )
        outs.append(o)
        out_dims.append(0 if b else None)
    return outs, out_dims


batching.primitive_batchers[custom_vmap_call_p] = batching.wants_axis_size(_batch)


def _jvp(primals: list, tangents: list, **params: Any) -> tuple[list, list]:
    # the primal keeps the custom rule; the tangent is fun's (see the module docstring)
    primals_out = core.bind(custom_vmap_call_p, primals, params)
    closed = params["call_jaxpr"]
    _, tangents_out = ad.jvp_flat(lambda *xs: core.eval_jaxpr(closed.jaxpr, closed.consts, *xs), primals, tangents)
    return list(primals_out), list(tangents_out)


ad.primitive_jvps[custom_vmap_call_p] = _jvp


def _partial_eval(trace: pe.StagingTrace, tracers: list, *, call_jaxpr: ClosedJaxpr, **_: Any) -> list:
    ins = [t.const if pe.is_known(t) else t for t in tracers]
    return core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *ins)


def _transpose(cts: list, *args: Any, call_jaxpr: ClosedJaxpr, **_: Any) -> list:
    res = ad.backward_pass(call_jaxpr.jaxpr, call_jaxpr.consts, list(args), list(cts))
    return [r if ad.is_undefined_primal(a) else None for r, a in zip(res, args)]


pe.partial_eval_rules[custom_vmap_call_p] = _partial_eval
ad.primitive_transposes[custom_vmap_call_p] = _transpose


def _fun_name(f: Any) -> str:
    return getattr(f, "__name__", type(f).__name__)


class custom_vmap:  # noqa: N801 - the public name is jax.custom_batching.custom_vmap
    """A function whose behaviour under ``vmap`` is given by a rule (``jax.custom_batching.custom_vmap``).

    ::

        @custom_vmap
        def f(x, y): ...

        @f.def_vmap
        def f_vmap_rule(axis_size, in_batched, x, y):
            # in_batched: a list (one entry per argument) of pytrees of bools; batched arguments
            # have the batch axis first. Returns (out, out_batched), out_batched a pytree of bools
            # with out's structure.
            ...
    """

    def __init__(self, fun: Callable[..., Any]) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule: Callable | None = None

    def def_vmap(self, vmap_rule: Callable[..., tuple[Any, Any]]) -> Callable[..., tuple[Any, Any]]:
        """Set the batching rule ``vmap_rule(axis_size, in_batched, *args) -> (out, out_batched)``."""
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = _fun_name(self.fun)
        if kwargs:
            import inspect  # noqa: PLC0415

            try:
                bound = inspect.signature(self.fun).bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"custom_vmap({name}): {e}") from None
            bound.apply_defaults()
            args = bound.args
        flat, in_tree = tu.tree_flatten(args)
        flat = [x if isinstance(x, core.Tracer) else core.to_array(x, f"custom_vmap({name})") for x in flat]
        avals = [core.get_aval(x) for x in flat]
        out_tree_box: list = []

        def flat_fun(*xs: Any) -> list:
            out = self.fun(*tu.tree_unflatten(in_tree, list(xs)))
            o_flat, o_tree = tu.tree_flatten(out)
            out_tree_box.append(o_tree)
            return o_flat

        jaxpr, consts, _ = pe.trace_to_jaxpr(flat_fun, avals, f"custom_vmap({name})")
        # closed-over values (maybe tracers of enclosing transforms) become leading arguments
        closed = ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), [])
        params = dict(
            call_jaxpr=closed,
            name=name,
            rule=self.vmap_rule,
            in_tree=in_tree,
            out_tree=out_tree_box[0],
            num_consts=len(consts),
        )
        outs = core.bind(custom_vmap_call_p, [*consts, *flat], params)
        return tu.tree_unflatten(out_tree_box[0], list(outs))


def sequential_vmap(f: Callable[..., Any]) -> custom_vmap:
    """``f`` as a ``custom_vmap`` whose batching rule loops over the batch with ``lax.map``
    (one call of ``f`` per example; unbatched arguments are passed as they are)."""
    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size: int, in_batched: list, *args: Any) -> tuple[Any, Any]:
        from fjax import lax  # noqa: PLC0415

        batched_flat, tree = tu.tree_flatten(in_batched)
        args_flat, _ = tu.tree_flatten(args)
        mapped = [a for a, b in zip(args_flat, batched_flat) if b]

        def one(xs: list) -> Any:
            it = iter(xs)
            full = [next(it) if b else a for a, b in zip(args_flat, batched_flat)]
            return f.fun(*tu.tree_unflatten(tree, full))

        out = lax.map(one, mapped)
        return out, tu.tree_map(lambda _: True, out)

    return f
