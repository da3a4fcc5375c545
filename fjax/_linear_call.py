"""``jax.custom_derivatives.linear_call`` (a linear function with a custom transpose) and
``jax.fwd_and_bwd`` (the forward and backward passes of ``vjp`` as two reusable functions).

``linear_call(fun, fun_transpose, residual_args, linear_args)`` binds the higher-order primitive
``linear_call[callee transpose_thunk num_callee_consts num_res]``: ``callee`` is the traced ``fun`` (a
closed jaxpr whose closed-over values arrive as leading arguments), ``transpose_thunk`` a thunk that
traces ``fun_transpose`` on first use. Its JVP applies the call to the tangents (the function is
linear in ``linear_args``; residuals must not be differentiated), its transpose is a
``linear_call`` of ``fun_transpose`` whose own transpose is ``fun`` again, and it batches by
vmapping both functions. Under ``jit`` the call has no compiled lowering: it runs as a host step
that evaluates ``fun``'s jaxpr between compiled kernels.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core
from fjax._custom_common import _as_value, _eval_closed, _trace_closed
from fjax.core import ClosedJaxpr
from fjax.interpreters import ad, batching
from fjax.interpreters.ad import Zero

__all__ = ["fwd_and_bwd", "linear_call", "linear_call_p"]


class _TransposeThunk:
    """Traces ``fun_transpose(res, ct)`` once (on first transposition) into a closed jaxpr."""

    def __init__(self, fun: Callable, res_tree: Any, res_avals: list, ct_tree: Any, ct_avals: list, lin_tree: Any):
        self.fun, self.res_tree, self.res_avals = fun, res_tree, res_avals
        self.ct_tree, self.ct_avals, self.lin_tree = ct_tree, ct_avals, lin_tree
        self._traced: tuple | None = None

    def __call__(self) -> tuple:
        if self._traced is None:
            self._traced = _trace_linear(
                self.fun, self.res_tree, self.res_avals, self.ct_tree, self.ct_avals, "linear_call fun_transpose"
            )
            closed, consts, out_tree = self._traced
            if out_tree != self.lin_tree:
                raise TypeError(
                    "transpose output pytree structure must match that of linear inputs, got output structure "
                    f"{out_tree} and input structure {self.lin_tree}."
                )
        closed, consts, _ = self._traced
        return closed, consts


class _Known:
    """A transpose thunk that already holds its jaxpr (the transpose of a transpose)."""

    def __init__(self, closed: ClosedJaxpr, consts: list):
        self.closed, self.consts = closed, consts

    def __call__(self) -> tuple:
        return self.closed, self.consts


def _trace_linear(fun: Callable, res_tree: Any, res_avals: list, lin_tree: Any, lin_avals: list, what: str) -> tuple:
    n_res = len(res_avals)
    out_box: list = []

    def flat(*xs: Any) -> list:
        res = tu.tree_unflatten(res_tree, list(xs[:n_res]))
        lin = tu.tree_unflatten(lin_tree, list(xs[n_res:]))
        out = fun(res, lin)
        leaves, tree = tu.tree_flatten(out)
        out_box.append(tree)
        return [_as_value(o, what) for o in leaves]

    closed, consts = _trace_closed(flat, [*res_avals, *lin_avals], what)
    return closed, consts, out_box[0]


linear_call_p = core.Primitive("linear_call")
linear_call_p.multiple_results = True


def _impl(*args: Any, callee: ClosedJaxpr, **_: Any) -> list:
    ins = [core.Array(np.asarray(a), av.weak_type) for a, av in zip(args, callee.in_avals)]
    outs = _eval_closed(callee, *ins)
    return [o._value if isinstance(o, core.Array) else np.asarray(o) for o in outs]


def _abstract(*avals: Any, callee: ClosedJaxpr, **_: Any) -> list:
    return list(callee.out_avals)


linear_call_p.def_impl(_impl)
linear_call_p.def_abstract_eval(_abstract)


def _bind(args: Sequence[Any], callee: ClosedJaxpr, transpose: Any, n_consts: int, n_res: int) -> list:
    params = dict(callee=callee, transpose_thunk=transpose, num_callee_consts=n_consts, num_res=n_res)
    return core.bind(linear_call_p, list(args), params)


def _jvp(
    primals: list, tangents: list, *, callee: ClosedJaxpr, transpose_thunk: Any, num_callee_consts: int, num_res: int
):
    k = num_callee_consts + num_res
    if any(type(t) is not Zero for t in tangents[:k]):
        raise TypeError(
            "linear_call: the residual arguments (and values closed over by fun) cannot be differentiated; "
            "the function is only linear in its linear arguments"
        )
    outs = _bind(primals, callee, transpose_thunk, num_callee_consts, num_res)
    lin_t = tangents[k:]
    if all(type(t) is Zero for t in lin_t):
        return outs, [Zero(ad.tangent_aval(core.get_aval(o))) for o in outs]
    lin_t = [ad.instantiate_zeros(t) for t in lin_t]
    touts = _bind([*primals[:k], *lin_t], callee, transpose_thunk, num_callee_consts, num_res)
    return outs, touts


def _transpose(cts: list, *args: Any, callee: ClosedJaxpr, transpose_thunk: Any, num_callee_consts: int, num_res: int):
    t_closed, t_consts = transpose_thunk()
    f_consts = list(args[:num_callee_consts])
    res = list(args[num_callee_consts : num_callee_consts + num_res])
    lin = args[num_callee_consts + num_res :]
    if any(ad.is_undefined_primal(r) for r in [*f_consts, *res]):
        raise TypeError("linear_call: cannot transpose with respect to the residual arguments")
    ct_avals = t_closed.in_avals[len(t_consts) + num_res :]
    cts = [ad.instantiate_zeros(c) if type(c) is Zero else c for c in cts]
    cts = [ad._zeros_like(a) if c is None else c for c, a in zip(cts, ct_avals)]
    outs = _bind([*t_consts, *res, *cts], t_closed, _Known(callee, f_consts), len(t_consts), num_res)
    lin_cts = [o if ad.is_undefined_primal(a) else None for o, a in zip(outs, lin)]
    return [None] * (num_callee_consts + num_res) + lin_cts


ad.primitive_jvps[linear_call_p] = _jvp
ad.primitive_transposes[linear_call_p] = _transpose


class _BatchedThunk:
    """The transpose thunk vmapped like the call it belongs to: residuals at their dims, the
    cotangents (the call's outputs) at axis 0, every output at axis 0."""

    def __init__(self, inner: Any, res_dims: list, size: int):
        self.inner, self.res_dims, self.size = inner, res_dims, size
        self._out: tuple | None = None

    def __call__(self) -> tuple:
        if self._out is None:
            t_closed, t_consts = self.inner()
            n_ct = len(t_closed.in_avals) - len(t_consts) - len(self.res_dims)
            dims = [None] * len(t_consts) + list(self.res_dims) + [0] * n_ct
            new, consts, _ = batching.batch_jaxpr(t_closed, dims, self.size, True)
            self._out = (new, [*consts, *t_consts])
        return self._out


@batching.wants_axis_size
def _batch(
    vals: list,
    dims: list,
    *,
    callee: ClosedJaxpr,
    transpose_thunk: Any,
    num_callee_consts: int,
    num_res: int,
    axis_size: int,
):
    vals = [v if d is None else batching.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    dims = [None if d is None else 0 for d in dims]
    new, consts, _ = batching.batch_jaxpr(callee, dims, axis_size, True)
    res_dims = dims[num_callee_consts : num_callee_consts + num_res]
    thunk = _BatchedThunk(transpose_thunk, res_dims, axis_size)
    outs = _bind([*consts, *vals], new, thunk, len(consts) + num_callee_consts, num_res)
    return outs, [0] * len(outs)


batching.primitive_batchers[linear_call_p] = _batch


def linear_call(fun: Callable, fun_transpose: Callable, residual_args: Any, linear_args: Any) -> Any:
    """Call ``fun(residual_args, linear_args)``, a function linear in ``linear_args``, with
    ``fun_transpose(residual_args, ct)`` as its transpose (JAX's
    ``jax.custom_derivatives.linear_call``).

    ``fun :: r -> a -o b`` and ``fun_transpose :: r -> b -o a``: transposing the call (under
    ``vjp``/``grad``/``linear_transpose``) calls ``fun_transpose``, and transposing that calls
    ``fun`` again. Forward mode applies ``fun`` to the tangents of ``linear_args``. The residual
    arguments are not differentiated (a tangent for them raises a TypeError).
    """
    r_leaves, r_tree = tu.tree_flatten(residual_args)
    l_leaves, l_tree = tu.tree_flatten(linear_args)
    r_leaves = [_as_value(x, "linear_call") for x in r_leaves]
    l_leaves = [_as_value(x, "linear_call") for x in l_leaves]
    r_avals = [core.get_aval(x) for x in r_leaves]
    l_avals = [core.get_aval(x) for x in l_leaves]
    callee, f_consts, out_tree = _trace_linear(fun, r_tree, r_avals, l_tree, l_avals, "linear_call fun")
    out_avals = list(callee.out_avals)
    thunk = _TransposeThunk(fun_transpose, r_tree, r_avals, out_tree, out_avals, l_tree)
    outs = _bind([*f_consts, *r_leaves, *l_leaves], callee, thunk, len(f_consts), len(r_leaves))
    return tu.tree_unflatten(out_tree, outs)


def fwd_and_bwd(
    fun: Callable, argnums: int | Sequence[int], has_aux: bool = False, jitted: bool = True
) -> tuple[Callable, Callable]:
    """The forward and backward passes of ``fun`` as two functions (JAX's ``jax.fwd_and_bwd``).

    ``fwd(*args)`` returns ``(fun(*args), residuals)`` (``(out, residuals, aux)`` with
    ``has_aux=True``), differentiating with respect to the positional arguments ``argnums``;
    ``residuals`` is the ``vjp`` function, a pytree of arrays. ``bwd(residuals, ct)`` returns the
    cotangents of those arguments (one value for an integer ``argnums``, else a tuple). With
    ``jitted=True`` (default) both are ``jit``-ted, so ``bwd`` is compiled once and reused for the
    residuals of every call of the (compiled) ``fwd``. Keyword arguments of ``fwd`` are passed to
    ``fun`` and not differentiated.
    """
    from fjax.api import vjp  # noqa: PLC0415

    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun!r}")
    nums = (operator.index(argnums),) if not isinstance(argnums, (tuple, list)) else tuple(argnums)
    nums = tuple(operator.index(i) for i in nums)

    def fwd(*args: Any, **kwargs: Any) -> Any:
        n = len(args)
        for i in nums:
            if not -n <= i < n:
                raise TypeError(
                    f"differentiating with respect to argnums={argnums} requires at least {max(nums) + 1} positional "
                    f"arguments to be passed by the caller, but got only {n} positional arguments."
                )
        pos = [i % n for i in nums]

        def partial_fun(*dyn: Any) -> Any:
            full = list(args)
            for p, d in zip(pos, dyn):
                full[p] = d
            return fun(*full, **kwargs)

        return vjp(partial_fun, *(args[p] for p in pos), has_aux=has_aux)

    def bwd(f_vjp: Any, outgrad: Any) -> Any:
        g = f_vjp(outgrad)
        return g[0] if isinstance(argnums, int) else g

    if jitted:
        from fjax.jit import jit  # noqa: PLC0415

        return jit(fwd), jit(bwd)
    return fwd, bwd
