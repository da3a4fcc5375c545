"""``jax.api_util``: the helpers JAX's own transforms are built from, for libraries that build
theirs the same way (flax's ``lazy_init`` and ``nn.scan`` flatten a ``WrappedFun`` and trace it
with ``partial_eval.trace_to_jaxpr_nounits``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from fjax import core
from fjax import tree_util as tu
from fjax.extend import linear_util as lu

__all__ = [
    "argnums_partial",
    "debug_info",
    "donation_vector",
    "flatten_axes",
    "flatten_fun",
    "flatten_fun_nokwargs",
    "rebase_donate_argnums",
    "safe_map",
    "shaped_abstractify",
]

safe_map = core.safe_map


class DebugInfo(NamedTuple):
    """What a traced function is, for error messages: the transform, the function's name and
    source, its argument names and (once known) its result paths."""

    traced_for: str
    func_src_info: str
    arg_names: tuple[str, ...]
    result_paths: tuple[str, ...] | None = None

    @property
    def func_name(self) -> str:
        return self.func_src_info.split(" ")[0]


def _src_info(fun: Callable) -> str:
    name = getattr(fun, "__name__", None) or type(fun).__name__
    try:
        file = inspect.getsourcefile(fun)
        line = inspect.getsourcelines(fun)[1]
        return f"{name} at {file}:{line}"
    except (TypeError, OSError):
        return name


def debug_info(
    traced_for: str,
    fun: Callable,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    *,
    static_argnums: Sequence[int] = (),
    static_argnames: Sequence[str] = (),
    result_paths_thunk: Any = None,
    sourceinfo: str | None = None,
    signature: inspect.Signature | None = None,
) -> DebugInfo:
    """Debugging information about ``fun`` traced for ``traced_for`` with ``args``/``kwargs``:
    its name and source location and the names of its (non-static) arguments."""
    src = sourceinfo if sourceinfo is not None else _src_info(fun)
    names: list[str] = []
    try:
        sig = signature if signature is not None else inspect.signature(fun)
        bound = sig.bind_partial(*args, **kwargs)
        for name, val in bound.arguments.items():
            if name in static_argnames:
                continue
            names.extend(f"{name}{tu.keystr(p)}" for p, _ in tu.tree_flatten_with_path(val)[0])
    except (TypeError, ValueError):
        for i, a in enumerate(args):
            if i not in static_argnums:
                names.extend(f"args[{i}]{tu.keystr(p)}" for p, _ in tu.tree_flatten_with_path(a)[0])
    return DebugInfo(traced_for, src, tuple(names))


@lu.transformation_with_aux2
def flatten_fun(f: Callable, store: Any, in_tree: tu.PyTreeDef, *args_flat: Any) -> list:
    """``fun`` of (args, kwargs) as a function of their flat leaves (``in_tree`` is the tree of
    ``(args, kwargs)``); the thunk gives the tree of the output."""
    py_args, py_kwargs = tu.tree_unflatten(in_tree, args_flat)
    ans = f(*py_args, **py_kwargs)
    leaves, tree = tu.tree_flatten(ans)
    store.store(tree)
    return leaves


@lu.transformation_with_aux2
def flatten_fun_nokwargs(f: Callable, store: Any, in_tree: tu.PyTreeDef, *args_flat: Any) -> list:
    """``fun`` of positional arguments (``in_tree`` is their tuple's tree) as a function of flat
    leaves; the thunk gives the tree of the output."""
    py_args = tu.tree_unflatten(in_tree, args_flat)
    ans = f(*py_args)
    leaves, tree = tu.tree_flatten(ans)
    store.store(tree)
    return leaves


@lu.transformation2
def _argnums_partial(f: Callable, dyn_argnums: tuple, fixed: tuple, *dyn_args: Any, **kwargs: Any) -> Any:
    args = [None if a is _FIXED else a for a in fixed]
    it = iter(dyn_args)
    for i in dyn_argnums:
        args[i] = next(it)
    for i, a in enumerate(fixed):
        if a is not _FIXED:
            args[i] = a.val
    return f(*args, **kwargs)


_FIXED = object()


class _Hashable:
    __slots__ = ("val",)

    def __init__(self, val: Any) -> None:
        self.val = val

    def __hash__(self) -> int:
        return id(self.val)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Hashable) and other.val is self.val


def argnums_partial(
    f: lu.WrappedFun, dyn_argnums: int | Sequence[int], args: Sequence[Any], require_static_args_hashable: bool = True
) -> tuple[lu.WrappedFun, tuple]:
    """``f`` of only the arguments at ``dyn_argnums`` (the others fixed to ``args``' values), and
    those dynamic arguments."""
    dyn = (dyn_argnums,) if isinstance(dyn_argnums, int) else tuple(dyn_argnums)
    dyn = tuple(i % len(args) for i in dyn)
    fixed = tuple(_FIXED if i in dyn else _Hashable(a) for i, a in enumerate(args))
    return _argnums_partial(f, dyn, fixed), tuple(args[i] for i in dyn)


def flatten_axes(
    name: str, treedef: tu.PyTreeDef, axis_tree: Any, *, kws: bool = False, tupled_args: bool = False
) -> list:
    """Broadcast the prefix tree ``axis_tree`` (``in_axes``-like, ``None`` leaves allowed) to the
    leaves of ``treedef``; ``ValueError`` naming ``name`` when it is not a prefix."""
    from fjax.api import _flatten_axes

    try:
        return _flatten_axes(name, treedef, axis_tree, kws)
    except ValueError as e:
        raise ValueError(f"{name} specification must be a tree prefix of the corresponding value: {e}") from None


def donation_vector(
    donate_argnums: Sequence[int], donate_argnames: Sequence[str], in_tree: tu.PyTreeDef
) -> tuple[bool, ...]:
    """One flag per leaf of ``in_tree`` (the tree of ``(args, kwargs)``): whether it is donated."""
    args_tree, kwargs_tree = in_tree.children()
    res: list[bool] = []
    for i, arg in enumerate(args_tree.children()):
        res.extend([i in donate_argnums] * arg.num_leaves)
    kw_names = tu.tree_unflatten(kwargs_tree, [0] * kwargs_tree.num_leaves)
    for name in kw_names:
        res.extend([name in donate_argnames] * len(tu.tree_leaves(kw_names[name], is_leaf=lambda x: x is None) or [0]))
    return tuple(res)


def rebase_donate_argnums(donate_argnums: Sequence[int], static_argnums: Sequence[int]) -> tuple[int, ...]:
    """The donated positions counted among the non-static arguments only."""
    if set(donate_argnums) & set(static_argnums):
        raise ValueError(
            f"`static_argnums` {tuple(static_argnums)} and `donate_argnums` {tuple(donate_argnums)} cannot intersect."
        )
    static = sorted(static_argnums)
    return tuple(i - sum(1 for s in static if s < i) for i in sorted(donate_argnums))


def shaped_abstractify(x: Any) -> core.ShapedArray:
    """The abstract value (``ShapedArray``) of an array, tracer, scalar or ``ShapeDtypeStruct``."""
    if (
        hasattr(x, "shape")
        and hasattr(x, "dtype")
        and not isinstance(x, (core.Array, core.Tracer, np.ndarray, np.generic))
    ):
        return core.ShapedArray(tuple(x.shape), np.dtype(x.dtype), getattr(x, "weak_type", False))
    return core.get_aval(x)
