"""Implicit differentiation: ``lax.custom_linear_solve`` and ``lax.custom_root``.

``custom_linear_solve`` is a higher-order primitive carrying four jaxprs (matvec, vecmat, solve,
transpose_solve, each with its constants hoisted into leading inputs), as in JAX: its JVP solves
again for ``db - dA x`` and its transpose calls ``transpose_solve`` on ``vecmat``, so the solver
itself is never differentiated. ``custom_root`` is a ``custom_jvp`` function whose tangent is
``-(df/dx)^-1 (df/dparams) dparams``, computed with the user's ``tangent_solve``.
Under ``jit`` the solve runs as a host step (no numba lowering), evaluating its jaxpr.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core
from fjax.core import ClosedJaxpr
from fjax.custom_derivatives import _batch_closed, custom_jvp
from fjax.interpreters import ad, batching
from fjax.interpreters.ad import UndefinedPrimal, Zero
from fjax.lax import lax
from fjax.lax.control_flow.common import abstractify, trace_fn_to_jaxpr

__all__ = ["custom_linear_solve", "custom_root"]

# order of the four sub-problems in ``const_lengths`` and ``jaxprs``
_MATVEC, _VECMAT, _SOLVE, _TSOLVE = range(4)


def _eval(closed: ClosedJaxpr, *args: Any) -> list:
    return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)


def _split(args: list, const_lengths: tuple) -> tuple[list, list]:
    consts, i = [], 0
    for n in const_lengths:
        consts.append(list(args[i : i + n]))
        i += n
    return consts, list(args[i:])


def _transposed(const_lengths: tuple, jaxprs: tuple, consts: list) -> tuple:
    order = (_VECMAT, _MATVEC, _TSOLVE, _SOLVE)
    return tuple(const_lengths[i] for i in order), tuple(jaxprs[i] for i in order), [consts[i] for i in order]


def _flat(consts: list) -> list:
    return [c for cs in consts for c in cs]


def _impl(*args: np.ndarray, const_lengths: tuple, jaxprs: tuple, num_b: int) -> list:
    consts, b = _split(list(args), const_lengths)
    solve = jaxprs[_SOLVE]
    ins = [core.Array(a, av.weak_type) for a, av in zip(consts[_SOLVE] + b, solve.in_avals)]
    outs = _eval(solve, *ins)
    return [o._value if isinstance(o, core.Array) else np.asarray(o) for o in outs]


def _abstract(*avals: Any, const_lengths: tuple, jaxprs: tuple, num_b: int) -> list:
    return list(jaxprs[_SOLVE].out_avals)


linear_solve_p = core.Primitive("custom_linear_solve")
linear_solve_p.multiple_results = True
linear_solve_p.def_impl(_impl)
linear_solve_p.def_abstract_eval(_abstract)


def _jvp(primals: list, tangents: list, *, const_lengths: tuple, jaxprs: tuple, num_b: int) -> tuple:
    # A x = b  =>  dA x + A dx = db  =>  dx = A^-1 (db - dA x)
    params = dict(const_lengths=const_lengths, jaxprs=jaxprs, num_b=num_b)
    outs = linear_solve_p.bind(*primals, **params)
    x = outs[:num_b]
    consts, _ = _split(list(primals), const_lengths)
    consts_dot, b_dot = _split(list(tangents), const_lengths)
    rhs = [ad.instantiate_zeros(t) for t in b_dot]
    mv_dot = consts_dot[_MATVEC]
    if not all(type(t) is Zero for t in mv_dot):
        x_zero = [Zero(ad.tangent_aval(core.get_aval(v))) for v in x]
        _, dax = ad.jvp_flat(lambda *a: _eval(jaxprs[_MATVEC], *a), consts[_MATVEC] + list(x), list(mv_dot) + x_zero)
        rhs = [lax.sub(r, ad.instantiate_zeros(t)) for r, t in zip(rhs, dax)]
    if all(type(t) is Zero for t in b_dot) and all(type(t) is Zero for t in mv_dot):
        return outs, [Zero(ad.tangent_aval(core.get_aval(o))) for o in outs]
    x_dot = linear_solve_p.bind(*_flat(consts), *rhs, **params)
    aux_zero = [Zero(ad.tangent_aval(core.get_aval(o))) for o in outs[num_b:]]
    return outs, x_dot[:num_b] + aux_zero


def _transpose(cts: list, *primals: Any, const_lengths: tuple, jaxprs: tuple, num_b: int) -> list:
    if jaxprs[_TSOLVE] is None:
        raise TypeError("transpose_solve required for backwards mode automatic differentiation of custom_linear_solve")
    consts, b = _split(list(primals), const_lengths)
    if not all(ad.is_undefined_primal(x) for x in b) or any(ad.is_undefined_primal(c) for c in _flat(consts)):
        raise NotImplementedError("custom_linear_solve: transpose is only defined with respect to b")
    ct_x = [ad.instantiate_zeros(c) for c in cts[:num_b]]
    t_lengths, t_jaxprs, t_consts = _transposed(const_lengths, jaxprs, consts)
    ct_b = linear_solve_p.bind(*_flat(t_consts), *ct_x, const_lengths=t_lengths, jaxprs=t_jaxprs, num_b=num_b)
    return [None] * sum(const_lengths) + list(ct_b[:num_b])


def _batch(vals: list, dims: list, *, const_lengths: tuple, jaxprs: tuple, num_b: int, axis_size: int) -> tuple:
    # every input batched at axis 0 (the simple, always-correct choice): each jaxpr is vmapped
    # over all of its inputs, with its outputs batched at 0
    vals = [batching.bdim_at_front(v, d, axis_size) for v, d in zip(vals, dims)]
    new = tuple(None if j is None else _batch_closed(j, [0] * len(j.in_avals), axis_size) for j in jaxprs)
    new_jaxprs, new_lengths, extra = [], [], []
    consts, b = _split(vals, const_lengths)
    for k, item in enumerate(new):
        if item is None:
            new_jaxprs.append(None)
            new_lengths.append(const_lengths[k])
            extra.append(consts[k])
            continue
        closed, hoisted = item
        # hoisted constants of the batched jaxpr come first, then the original constants
        new_jaxprs.append(closed)
        new_lengths.append(len(hoisted) + const_lengths[k])
        extra.append(list(hoisted) + consts[k])
    outs = linear_solve_p.bind(
        *_flat(extra), *b, const_lengths=tuple(new_lengths), jaxprs=tuple(new_jaxprs), num_b=num_b
    )
    return outs, [0] * len(outs)


ad.primitive_jvps[linear_solve_p] = _jvp
ad.primitive_transposes[linear_solve_p] = _transpose
batching.primitive_batchers[linear_solve_p] = batching.wants_axis_size(_batch)


def _check_tree(what: str, tree: Any, expected: Any) -> None:
    if tree != expected:
        raise TypeError(f"custom_linear_solve: {what} output must have the structure of b ({expected}), got {tree}")


def custom_linear_solve(
    matvec: Callable,
    b: Any,
    solve: Callable,
    transpose_solve: Callable | None = None,
    symmetric: bool = False,
    has_aux: bool = False,
) -> Any:
    """Solve ``matvec(x) == b`` with ``solve(matvec, b)``, differentiated implicitly.

    Derivatives never go through ``solve``: forward mode calls it again on ``db - dmatvec(x)``
    and reverse mode calls ``transpose_solve(vecmat, ct)`` (``vecmat`` is the transpose of the
    linear ``matvec``, or ``matvec`` itself when ``symmetric``). With ``has_aux`` the solvers
    return ``(x, aux)`` and the result is ``(x, aux)``.
    """
    b_flat, b_tree = tu.tree_flatten(b)
    b_avals = [abstractify(x, "custom_linear_solve") for x in b_flat]
    args_tree = tu.tree_structure((b,))

    def _solver_out(out: Any, what: str) -> Any:
        x = out[0] if has_aux else out
        _check_tree(what, tu.tree_structure(x), b_tree)
        return out

    mv_jaxpr, mv_consts, mv_tree = trace_fn_to_jaxpr(matvec, args_tree, b_avals, "matvec")
    _check_tree("matvec", mv_tree, b_tree)

    def mv(x: Any) -> Any:
        return tu.tree_unflatten(b_tree, _eval(mv_jaxpr, *mv_consts, *tu.tree_leaves(x)))

    sv_jaxpr, sv_consts, out_tree = trace_fn_to_jaxpr(
        lambda x: _solver_out(solve(mv, x), "solve"), args_tree, b_avals, "solve"
    )
    jaxprs: list = [mv_jaxpr, None, sv_jaxpr, None]
    consts: list = [mv_consts, [], sv_consts, []]
    if transpose_solve is not None:
        if symmetric:
            jaxprs[_VECMAT], consts[_VECMAT] = mv_jaxpr, mv_consts
            vm = mv
        else:

            def vm(ct: Any) -> Any:
                undefined = [UndefinedPrimal(a) for a in b_avals]
                res = ad.backward_pass(mv_jaxpr.jaxpr, [], list(mv_consts) + undefined, tu.tree_leaves(ct))
                out = [ad.instantiate_zeros(r) for r in res[len(mv_consts) :]]
                return tu.tree_unflatten(b_tree, out)

            vm_jaxpr, vm_consts, _ = trace_fn_to_jaxpr(vm, args_tree, b_avals, "vecmat")
            jaxprs[_VECMAT], consts[_VECMAT] = vm_jaxpr, vm_consts
        ts_jaxpr, ts_consts, _ = trace_fn_to_jaxpr(
            lambda x: _solver_out(transpose_solve(vm, x), "transpose_solve"), args_tree, b_avals, "transpose_solve"
        )
        jaxprs[_TSOLVE], consts[_TSOLVE] = ts_jaxpr, ts_consts
    const_lengths = tuple(len(c) for c in consts)
    outs = linear_solve_p.bind(
        *_flat(consts), *b_flat, const_lengths=const_lengths, jaxprs=tuple(jaxprs), num_b=len(b_flat)
    )
    return tu.tree_unflatten(out_tree, outs)


def custom_root(
    f: Callable, initial_guess: Any, solve: Callable, tangent_solve: Callable, has_aux: bool = False
) -> Any:
    """Find a root of ``f`` with ``solve(f, initial_guess)``, differentiated implicitly.

    The derivative with respect to values ``f`` closes over is ``-J^-1 (df/dparams)``, where
    ``J = df/dx`` at the solution and ``tangent_solve(g, y)`` solves the linear ``g(x) = y``
    (for a scalar: ``lambda g, y: y / g(1.0)``). The initial guess gets no derivative.
    """
    g_flat, g_tree = tu.tree_flatten(initial_guess)
    g_avals = [abstractify(x, "custom_root") for x in g_flat]
    f_jaxpr, f_consts, f_tree = trace_fn_to_jaxpr(f, tu.tree_structure((initial_guess,)), g_avals, "f")
    if f_tree != g_tree:
        raise TypeError(f"custom_root: f output must have the structure of initial_guess ({g_tree}), got {f_tree}")

    def f_at(consts: list) -> Callable:
        def fx(x: Any) -> Any:
            return tu.tree_unflatten(g_tree, _eval(f_jaxpr, *consts, *tu.tree_leaves(x)))

        return fx

    @custom_jvp
    def _root(consts: list, guess: Any) -> Any:
        return solve(f_at(consts), guess)

    @_root.defjvp
    def _root_jvp(primals: tuple, tangents: tuple) -> tuple:
        consts, guess = primals
        consts_dot, _ = tangents
        out = _root(consts, guess)
        sol = out[0] if has_aux else out
        from fjax import api  # noqa: PLC0415

        _, rhs = api.jvp(lambda c: f_at(c)(sol), (list(consts),), (list(consts_dot),))
        fc = f_at(list(consts))

        def lin(x: Any) -> Any:
            return api.jvp(fc, (sol,), (x,))[1]

        sol_dot = tu.tree_map(lax.neg, tangent_solve(lin, rhs))
        if has_aux:
            aux_dot = tu.tree_map(lambda a: lax.full_like(a, 0), out[1])
            return out, (sol_dot, aux_dot)
        return out, sol_dot

    return _root(list(f_consts), initial_guess)
