"""Sparse-aware ``grad``/``value_and_grad``/``jacfwd``/``jacrev``: derivatives w.r.t. a sparse
argument are taken w.r.t. its stored values and returned as a sparse array with the same indices."""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import fjax
from fjax import tree_util
from fjax.experimental.sparse._base import JAXSparse


def _is_sparse(x: Any) -> bool:
    return isinstance(x, JAXSparse)


def _argnums_tuple(argnums: int | Sequence[int]) -> tuple[int, ...]:
    return (int(argnums),) if isinstance(argnums, int) else tuple(int(a) for a in argnums)


def _prepare(fun: Callable, argnums: int | Sequence[int], args: tuple) -> tuple[Callable, tuple, Callable]:
    """``fun`` over arguments where each sparse array in ``argnums`` is replaced by its data, the
    new arguments, and a function mapping derivatives back onto sparse arrays."""
    nums = _argnums_tuple(argnums)
    if any(not -len(args) <= i < len(args) for i in nums):
        raise ValueError(f"argnums {argnums} out of range for {len(args)} positional arguments")
    nums = tuple(i % len(args) for i in nums)
    structure = {}
    new_args = list(args)
    for i in nums:
        leaves, tree = tree_util.tree_flatten(args[i], is_leaf=_is_sparse)
        structure[i] = (tree, leaves)
        new_args[i] = tree_util.tree_unflatten(tree, [x.data if _is_sparse(x) else x for x in leaves])

    def inner(*dargs: Any, **kwargs: Any) -> Any:
        real = list(dargs)
        for i in nums:
            tree, leaves = structure[i]
            vals = tree_util.tree_leaves(dargs[i])
            rebuilt = [_rebuild(orig, v) if _is_sparse(orig) else v for orig, v in zip(leaves, vals)]
            real[i] = tree_util.tree_unflatten(tree, rebuilt)
        return fun(*real, **kwargs)

    def post(derivs: Any) -> Any:
        per_arg = (derivs,) if isinstance(argnums, int) else derivs
        out = []
        for i, d in zip(nums, per_arg):
            tree, leaves = structure[i]
            vals = tree_util.tree_leaves(d)
            out.append(
                tree_util.tree_unflatten(
                    tree, [_rebuild_derivative(o, v) if _is_sparse(o) else v for o, v in zip(leaves, vals)]
                )
            )
        return out[0] if isinstance(argnums, int) else tuple(out)

    return inner, tuple(new_args), post


def _rebuild(orig: JAXSparse, data: Any) -> JAXSparse:
    bufs, tree = tree_util.tree_flatten(orig)
    return tree_util.tree_unflatten(tree, [data, *bufs[1:]])


def _rebuild_derivative(orig: JAXSparse, d: Any) -> JAXSparse:
    """A derivative of the data (with extra leading axes for a Jacobian) as a sparse array."""
    f = functools.partial(_rebuild, orig)
    for _ in range(d.ndim - orig.data.ndim):
        f = fjax.vmap(f)
    return f(d)


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, **kwargs: Any) -> Callable:
    """``jax.value_and_grad`` where the gradient w.r.t. a sparse argument keeps its sparsity pattern."""

    @functools.wraps(fun)
    def wrapped(*args: Any, **kw: Any) -> Any:
        inner, new_args, post = _prepare(fun, argnums, args)
        val, g = fjax.value_and_grad(inner, argnums=argnums, has_aux=has_aux, **kwargs)(*new_args, **kw)
        return val, post(g)

    return wrapped


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, **kwargs: Any) -> Callable:
    """``jax.grad`` where the gradient w.r.t. a sparse argument keeps its sparsity pattern."""

    @functools.wraps(fun)
    def wrapped(*args: Any, **kw: Any) -> Any:
        inner, new_args, post = _prepare(fun, argnums, args)
        out = fjax.grad(inner, argnums=argnums, has_aux=has_aux, **kwargs)(*new_args, **kw)
        return (post(out[0]), out[1]) if has_aux else post(out)

    return wrapped


def _jac(jac_fn: Callable) -> Callable:
    def make(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, **kwargs: Any) -> Callable:
        @functools.wraps(fun)
        def wrapped(*args: Any, **kw: Any) -> Any:
            inner, new_args, post = _prepare(fun, argnums, args)
            out = jac_fn(inner, argnums=argnums, has_aux=has_aux, **kwargs)(*new_args, **kw)
            if has_aux:
                return post(out[0]), out[1]
            return post(out)

        return wrapped

    return make


jacfwd = _jac(fjax.jacfwd)
jacrev = _jac(fjax.jacrev)
jacobian = jacrev
