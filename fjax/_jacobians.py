"""Jacobians and Hessians: ``jacfwd`` (vmap of jvp over the input basis), ``jacrev`` (vmap of vjp
over the output basis) and ``hessian``, built on the transformations of :mod:`fjax.api`."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core, dtypes
from fjax.api import _argnums_tuple, _check_arg, _ct_out, jvp, vjp, vmap
from fjax.core import ShapedArray
from fjax.dtypes import kind as _dkind
from fjax.interpreters.ad import Zero


def _std_basis(flat: list) -> tuple[Any, list]:
    """An identity basis stacked along a new leading axis for the flat inputs."""
    sizes = [int(np.prod(core.get_aval(x).shape)) for x in flat]
    n = sum(sizes)
    dt = dtypes.result_type(*[core.get_aval(x).dtype for x in flat]) if flat else np.float32
    eye = np.eye(n, dtype=dt)
    outs, start = [], 0
    for x, s in zip(flat, sizes):
        a = core.get_aval(x)
        outs.append(core.Array(np.ascontiguousarray(eye[:, start : start + s]).reshape((n,) + a.shape).astype(a.dtype)))
        start += s
    return n, outs


def _jac_argnums_check(args: tuple, nums: tuple) -> None:
    for i in nums:
        if not -len(args) <= i < len(args):
            raise TypeError(f"jacobian: argnums {nums} out of range for {len(args)} positional arguments")


def jacfwd(
    fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False
) -> Callable:
    """Jacobian of ``fun`` by forward mode (vmap of jvp over the standard basis)."""
    nums = _argnums_tuple(argnums)

    def jacfun(*args: Any, **kwargs: Any) -> Any:
        _jac_argnums_check(args, nums)
        idx = [i % len(args) for i in nums]
        dyn = [args[i] for i in idx]
        flat, tree = tu.tree_flatten(dyn)
        flat = [_check_arg(x, "jacfwd") for x in flat]
        for x in flat:
            dt = core.get_aval(x).dtype
            if holomorphic and _dkind(dt) != "c":
                raise TypeError(f"jacfwd with holomorphic=True requires inputs with complex dtype, but got {dt.name}.")
            if not holomorphic and _dkind(dt) != "f":
                raise TypeError(
                    f"jacfwd requires real-valued inputs (input dtype that is a sub-dtype of np.floating), but got "
                    f"{dt.name}. For holomorphic differentiation, pass holomorphic=True. For differentiation of "
                    "non-holomorphic functions involving complex inputs or integer inputs, use jax.jvp directly."
                )

        def f_flat(*leaves: Any) -> Any:
            full = list(args)
            for i, a in zip(idx, tu.tree_unflatten(tree, list(leaves))):
                full[i] = a
            return fun(*full, **kwargs)

        n, basis = _std_basis(flat)

        def push(*tangent: Any) -> Any:
            if has_aux:
                out, t, aux = jvp(f_flat, tuple(flat), tuple(tangent), has_aux=True)
                return out, t, aux
            out, t = jvp(f_flat, tuple(flat), tuple(tangent))
            return out, t

        res = _vmap_jvp(push, basis, has_aux)
        t_stacked = res[1]
        for y in tu.tree_leaves(res[0]) if holomorphic else ():
            if _dkind(core.get_aval(y).dtype) != "c":
                raise TypeError(
                    "jacfwd with holomorphic=True requires outputs with complex dtype, but got "
                    f"{core.get_aval(y).dtype.name}."
                )
        # t_stacked leaves: out.shape + (n,) -> split n into the input leaves' shapes
        in_avals = [core.get_aval(x) for x in flat]

        def split(t: Any) -> Any:
            from fjax.lax import lax  # noqa: PLC0415

            ta = core.get_aval(t)
            oshape = ta.shape[:-1]
            pieces, start = [], 0
            for a in in_avals:
                s = int(np.prod(a.shape))
                piece = lax.slice_in_dim(t, start, start + s, axis=ta.ndim - 1) if s != ta.shape[-1] else t
                pieces.append(lax.reshape(piece, oshape + a.shape))
                start += s
            tree_pieces = tu.tree_unflatten(tree, pieces)
            return tree_pieces[0] if isinstance(argnums, int) else tuple(tree_pieces)

        # each block takes the dtype and weak type of its output leaf, as JAX's jacfwd
        jac = tu.tree_map(lambda y, t: tu.tree_map(lambda b: _like(b, core.get_aval(y)), split(t)), res[0], t_stacked)
        if has_aux:
            return jac, res[2]
        return jac

    return jacfun


def _like(x: Any, example: ShapedArray) -> Any:
    """``x`` with ``example``'s dtype and weak type (the real part for a real example), as JAX's
    jacobians cast their blocks."""
    from fjax.lax import lax  # noqa: PLC0415
    from fjax.lax.lax_wrappers import _convert_element_type_weak  # noqa: PLC0415

    xa = core.get_aval(x)
    if xa.dtype == example.dtype and xa.weak_type == example.weak_type:
        return x
    if xa.dtype == dtypes.float0:  # an int/bool output's block: zeros of its dtype, as JAX's
        return lax.full(xa.shape, 0, example.dtype)
    if _dkind(xa.dtype) == "c" and _dkind(example.dtype) != "c":
        x = lax.real(x)
    return _convert_element_type_weak(x, example.dtype, example.weak_type)


def _vmap_jvp(push: Callable, basis: list, has_aux: bool) -> Any:
    out_axes = (None, -1, None) if has_aux else (None, -1)
    return vmap(push, in_axes=0, out_axes=out_axes)(*basis)


def _check_jacrev_output(dt: np.dtype, holomorphic: bool) -> None:
    # JAX's output dtype checks for jacrev
    k = _dkind(dt)
    if holomorphic:
        if k != "c":
            raise TypeError(f"jacrev with holomorphic=True requires outputs with complex dtype, but got {dt.name}.")
    elif k == "c":
        raise TypeError(
            f"jacrev requires real-valued outputs (output dtype that is a sub-dtype of np.floating), but got "
            f"{dt.name}. For holomorphic differentiation, pass holomorphic=True. For differentiation "
            "of non-holomorphic functions involving complex outputs, use jax.vjp directly."
        )
    elif k != "f":
        raise TypeError(
            f"jacrev requires real-valued outputs (output dtype that is a sub-dtype of np.floating), but got "
            f"{dt.name}. For differentiation of functions with integer outputs, use jax.vjp directly."
        )


def jacrev(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
) -> Callable:
    """Jacobian of ``fun`` by reverse mode (vmap of vjp over the output basis)."""
    nums = _argnums_tuple(argnums)

    def jacfun(*args: Any, **kwargs: Any) -> Any:
        _jac_argnums_check(args, nums)
        idx = [i % len(args) for i in nums]
        dyn = tuple(args[i] for i in idx)

        def f_dyn(*d: Any) -> Any:
            full = list(args)
            for i, a in zip(idx, d):
                full[i] = a
            return fun(*full, **kwargs)

        for x in tu.tree_leaves(dyn):
            if holomorphic and _dkind(core.get_aval(_check_arg(x, "jacrev")).dtype) != "c":  # inputs first, as JAX
                raise TypeError(
                    "jacrev with holomorphic=True requires inputs with complex dtype, but got "
                    f"{core.get_aval(_check_arg(x, 'jacrev')).dtype.name}."
                )
            if _dkind(core.get_aval(_check_arg(x, "jacrev")).dtype) not in "fc" and not allow_int:
                raise TypeError(
                    f"jacrev requires real- or complex-valued inputs (input dtype that is a sub-dtype of "
                    f"np.inexact), but got {core.get_aval(_check_arg(x, 'jacrev')).dtype.name}. If you want to use "
                    "Boolean- or integer-valued inputs, use vjp or set allow_int to True."
                )
        if has_aux:
            out, f_vjp, aux = vjp(f_dyn, *dyn, has_aux=True)
        else:
            out, f_vjp = vjp(f_dyn, *dyn)
        o_flat, o_tree = tu.tree_flatten(out)
        o_flat = [_check_arg(o, "jacrev", "output") for o in o_flat]
        for o in o_flat:
            _check_jacrev_output(core.get_aval(o).dtype, holomorphic)
        n, basis = _std_basis(o_flat)

        def pull(*ct_leaves: Any) -> Any:
            return f_vjp(tu.tree_unflatten(o_tree, list(ct_leaves)))

        cts = vmap(pull)(*basis)  # tuple over dyn args, leaves with leading n
        from fjax.lax import lax  # noqa: PLC0415

        o_avals = [core.get_aval(o) for o in o_flat]
        # per output leaf k: slice rows, reshape to out_shape + in_shape
        per_out = []
        start = 0
        for a in o_avals:
            s = int(np.prod(a.shape))

            def take(c: Any, start: int = start, s: int = s, a: ShapedArray = a) -> Any:
                c = _ct_out(c, core.get_aval(c)) if type(c) is Zero else c
                ca = core.get_aval(c)
                piece = lax.slice_in_dim(c, start, start + s, axis=0) if s != ca.shape[0] else c
                return lax.reshape(piece, a.shape + ca.shape[1:])

            # each block takes the dtype and weak type of its input leaf, as JAX's jacrev
            sel = tu.tree_map(lambda c, x: _like(take(c), core.get_aval(x)), cts, dyn)
            per_out.append(sel[0] if isinstance(argnums, int) else tuple(sel))
            start += s
        jac = tu.tree_unflatten(o_tree, per_out)
        if has_aux:
            return jac, aux
        return jac

    return jacfun


def hessian(
    fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False
) -> Callable:
    """Hessian of scalar ``fun``: ``jacfwd(jacrev(fun))``."""
    return jacfwd(
        jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic),
        argnums,
        has_aux=has_aux,
        holomorphic=holomorphic,
    )
