"""Host callbacks: ``fjax.pure_callback`` and the effectful ``debug_callback`` primitive.

Both primitives call Python on the host. Neither has a lowering rule, so inside ``jit`` they run
as host calls between compiled kernels (``fjax.backends.lowering``); in a ``scan``/``while``/``cond``
body the numba backend calls them from the compiled loop (``fjax.backends.numba.loops``,
``CALLBACK_OPS``), in program order.

* ``pure_callback_p`` is pure: it may be dead-code eliminated when its results are unused, and
  ``vmap`` calls it as its ``vmap_method`` says. It is not differentiable (as JAX).
* ``debug_callback_p`` has no outputs and is marked ``effectful``: dead-code elimination keeps it
  (and every higher-order equation whose sub-jaxpr holds one), so it runs once per execution.
  Under ``jvp``/``grad`` it sees primal values only; under ``vmap`` it is unrolled over the
  mapped axis (one call per example, as JAX).

Callbacks receive ``fjax.Array`` values (copies, so a callback may keep them) as JAX passes
``jax.Array`` values; non-array arguments (strings, ``None``, ...) are passed through unchanged.
"""

from __future__ import annotations

import traceback
from typing import Any, Callable

import numpy as np

from fjax import _numba_interop, core, dtypes
from fjax import _tree_lifted as tu
from fjax.core import Array, ShapedArray
from fjax.dtypes import kind as _dkind
from fjax.interpreters import ad, batching
from fjax.interpreters.ad import Zero

__all__ = ["debug_callback_p", "pure_callback", "pure_callback_p"]


# ---------------------------------------------------------------------------------------------
# arguments: array leaves are traced (dynamic), everything else is passed through (static)


def _is_dynamic(x: Any) -> bool:
    if isinstance(x, (core.Tracer, Array)):
        return True
    try:
        core.get_aval(x)
    except TypeError:
        return False
    return True


def split_args(args: tuple, kwargs: dict) -> tuple[tu.PyTreeDef, list, dict[int, Any]]:
    """Flatten ``(args, kwargs)``: ``(tree, dynamic leaves, {position: static leaf})``."""
    leaves, tree = tu.tree_flatten((args, kwargs))
    dyn, static = [], {}
    for i, x in enumerate(leaves):
        if _is_dynamic(x):
            dyn.append(x)
        else:
            static[i] = x
    return tree, dyn, static


def _host_array(v: Any) -> Array:
    # a copy: inside jit the value may live in a buffer the compiled program reuses, and the
    # callback may keep it
    return Array(np.array(v), False)


def _runtime_error(e: Exception) -> Exception:
    """What an exception raised by a host callback becomes, as in JAX: a ``JaxRuntimeError``
    (a ``RuntimeError``) whose message holds the callback's traceback (chained to the original)."""
    from fjax.errors import JaxRuntimeError  # noqa: PLC0415 - errors imports core

    if isinstance(e, JaxRuntimeError):
        return e
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    return JaxRuntimeError(f"INTERNAL: CpuCallback error calling callback: {tb}")


class FlatCallback:
    """Calls ``fn(*args, **kwargs)`` from the flat dynamic values (numpy arrays) of a bind."""

    __slots__ = ("fn", "tree", "static", "label", "printed")

    def __init__(
        self,
        fn: Callable,
        tree: tu.PyTreeDef,
        static: dict[int, Any],
        label: str | None = None,
        printed: tuple[str, list] | None = None,
    ):
        self.fn = fn
        self.tree = tree
        self.static = static
        self.label = label
        # (name, [(param, value)]) an equation calling it prints as (``debug_print[...]``, as JAX)
        self.printed = printed

    def __call__(self, *flat: Any) -> Any:
        it = iter(flat)
        n = len(flat) + len(self.static)
        leaves = [self.static[i] if i in self.static else _host_array(next(it)) for i in range(n)]
        args, kwargs = tu.tree_unflatten(self.tree, leaves)
        if not _numba_interop._done:
            _numba_interop.register()  # numba-compiled callbacks take fjax arrays, as JAX's take its
        try:
            return self.fn(*args, **kwargs)
        except Exception as e:
            raise _runtime_error(e) from e

    def __repr__(self) -> str:
        if self.label is not None:
            return self.label
        return getattr(self.fn, "__name__", None) or type(self.fn).__name__


# ---------------------------------------------------------------------------------------------
# debug_callback: no outputs, effectful


debug_callback_p = core.Primitive("debug_callback")
debug_callback_p.multiple_results = True
# read by dead-code elimination: an equation of an effectful primitive is never dropped
debug_callback_p.effectful = True


def _debug_callback_impl(*args: Any, callback: FlatCallback) -> list:
    callback(*args)
    return []


def _debug_callback_abstract(*avals: Any, callback: FlatCallback) -> list:
    return []


debug_callback_p.def_impl(_debug_callback_impl)
debug_callback_p.def_abstract_eval(_debug_callback_abstract)


def _debug_callback_jvp(primals: list, tangents: list, **params: Any) -> tuple[list, list]:
    # primal values only: tangents never flow into (or out of) the callback
    debug_callback_p.bind(*primals, **params)
    return [], []


def _debug_callback_transpose(cts: list, *args: Any, **params: Any) -> list:
    return [None] * len(args)


@batching.wants_axis_size
def _debug_callback_batch(vals: list, dims: list, *, axis_size: int, **params: Any) -> tuple[list, list]:
    # unrolled over the mapped axis: the callback sees one example at a time (as JAX)
    from fjax import lax  # noqa: PLC0415 - fjax.lax imports the interpreters, not this module

    for i in range(axis_size):
        ex = [v if d is batching.not_mapped else lax.index_in_dim(v, i, d, keepdims=False) for v, d in zip(vals, dims)]
        debug_callback_p.bind(*ex, **params)
    return [], []


ad.primitive_jvps[debug_callback_p] = _debug_callback_jvp
ad.primitive_transposes[debug_callback_p] = _debug_callback_transpose
batching.primitive_batchers[debug_callback_p] = _debug_callback_batch


def bind_debug_callback(
    fn: Callable[..., Any],
    args: tuple,
    kwargs: dict,
    label: str | None = None,
    printed: Callable[[tu.PyTreeDef, dict], tuple[str, list]] | None = None,
) -> None:
    """Stage (or run) ``fn(*args, **kwargs)`` as one ``debug_callback`` equation. ``printed(tree,
    static)`` gives the name and parameters the equation prints with (``debug.print``'s are JAX's
    ``debug_print`` ones); the primitive stays ``debug_callback``, which every backend runs."""
    tree, dyn, static = split_args(args, kwargs)

    def call(*a: Any, **k: Any) -> None:
        fn(*a, **k)

    shown = None if printed is None else printed(tree, static)
    debug_callback_p.bind(*dyn, callback=FlatCallback(call, tree, static, label or _name(fn), shown))


def _name(fn: Any) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


# ---------------------------------------------------------------------------------------------
# pure_callback


pure_callback_p = core.Primitive("pure_callback")
pure_callback_p.multiple_results = True

_VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized", None)


class _PureCallback:
    """The user callback of a ``pure_callback`` bind; returns the flat leaves of its result."""

    __slots__ = ("flat", "out_tree")

    def __init__(self, flat: FlatCallback, out_tree: tu.PyTreeDef):
        self.flat = flat
        self.out_tree = out_tree

    def __call__(self, *args: Any) -> list:
        out = self.flat(*args)
        leaves, tree = tu.tree_flatten(out)
        if tree != self.out_tree:
            raise RuntimeError(
                f"pure_callback: the callback {self.flat!r} returned a value with tree structure {tree}, but "
                f"result_shape_dtypes has tree structure {self.out_tree}"
            )
        return leaves

    def __repr__(self) -> str:
        return repr(self.flat)


def _pure_callback_impl(*args: Any, callback: _PureCallback, result_avals: tuple, vmap_method: str | None) -> list:
    from fjax.errors import JaxRuntimeError  # noqa: PLC0415 - errors imports core; JAX raises this class

    outs = callback(*args)
    res = []
    for i, (o, aval) in enumerate(zip(outs, result_avals)):
        o = np.asarray(o)
        if o.shape != aval.shape:
            raise JaxRuntimeError(
                f"pure_callback: incorrect output shape for return value #{i}: "
                f"Expected: {aval.shape}, Actual: {o.shape}"
            )
        if _dkind(o.dtype) in "OUSVMm":
            raise JaxRuntimeError(
                f"pure_callback: incorrect output dtype for return value #{i}: "
                f"Expected: {aval.dtype.name}, Actual: {o.dtype}"
            )
        dt = dtypes.canonicalize_dtype(o.dtype)
        if dt != aval.dtype:
            raise JaxRuntimeError(
                f"pure_callback: incorrect output dtype for return value #{i}: "
                f"Expected: {aval.dtype.name}, Actual: {dt.name}"
            )
        res.append(np.asarray(o, dtype=aval.dtype))
    return res


def _pure_callback_abstract(*avals: Any, callback: _PureCallback, result_avals: tuple, vmap_method: str | None) -> list:
    return list(result_avals)


pure_callback_p.def_impl(_pure_callback_impl)
pure_callback_p.def_abstract_eval(_pure_callback_abstract)


def _pure_callback_jvp(primals: list, tangents: list, **params: Any) -> tuple[list, list]:
    if all(type(t) is Zero for t in tangents):
        # nothing is differentiated through the callback (JAX never calls the rule then)
        outs = pure_callback_p.bind(*primals, **params)
        return outs, [Zero(ad.tangent_aval(a)) for a in params["result_avals"]]
    raise ValueError(
        "Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use callbacks while taking gradients."
    )


def _pure_callback_transpose(cts: Any, *args: Any, **params: Any) -> list:
    raise ValueError(
        "Pure callbacks do not support transpose. Please use `jax.custom_vjp` to use callbacks while taking gradients."
    )


@batching.wants_axis_size
def _pure_callback_batch(
    vals: list, dims: list, *, axis_size: int, callback: _PureCallback, result_avals: tuple, vmap_method: str | None
) -> tuple[list, list]:
    from fjax import lax  # noqa: PLC0415 - fjax.lax imports the interpreters, not this module

    size = axis_size
    vals = [v if d is batching.not_mapped else batching.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    batched_avals = tuple(ShapedArray((size, *a.shape), a.dtype, a.weak_type) for a in result_avals)
    params = dict(callback=callback, vmap_method=vmap_method)
    if vmap_method == "legacy_vectorized":
        outs = pure_callback_p.bind(*vals, result_avals=batched_avals, **params)
    elif vmap_method in ("expand_dims", "broadcast_all"):
        n = size if vmap_method == "broadcast_all" else 1
        args = [lax.broadcast(v, (n,)) if d is batching.not_mapped else v for v, d in zip(vals, dims)]
        outs = pure_callback_p.bind(*args, result_avals=batched_avals, **params)
    elif vmap_method == "sequential_unrolled":
        per = []
        for i in range(size):
            ex = [v if d is None else lax.index_in_dim(v, i, 0, keepdims=False) for v, d in zip(vals, dims)]
            per.append(pure_callback_p.bind(*ex, result_avals=result_avals, **params))
        if per:
            outs = [lax.concatenate([lax.broadcast(o, (1,)) for o in col], 0) for col in zip(*per)]
        else:
            outs = [lax.full(a.shape, 0, a.dtype) for a in batched_avals]
    elif vmap_method == "sequential":
        is_b = [d is not batching.not_mapped for d in dims]
        unb = [v for v, b in zip(vals, is_b) if not b]
        bat = [v for v, b in zip(vals, is_b) if b]

        def body(carry: tuple, xs: list) -> tuple:
            ui, bi = iter(unb), iter(xs)
            ex = [next(bi) if b else next(ui) for b in is_b]
            return carry, pure_callback_p.bind(*ex, result_avals=result_avals, **params)

        _, outs = lax.scan(body, (), bat)
    else:
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one of 'sequential', "
            "'sequential_unrolled', 'expand_dims', 'broadcast_all', or 'legacy_vectorized'. "
            f"Got vmap_method={vmap_method!r}."
        )
    return list(outs), [0] * len(outs)


ad.primitive_jvps[pure_callback_p] = _pure_callback_jvp
ad.primitive_transposes[pure_callback_p] = _pure_callback_transpose
batching.primitive_batchers[pure_callback_p] = _pure_callback_batch


def _result_aval(x: Any) -> ShapedArray:
    if not (hasattr(x, "shape") and hasattr(x, "dtype")):
        raise TypeError(
            "pure_callback: every leaf of result_shape_dtypes must have `shape` and `dtype` attributes "
            f"(e.g. a fjax.ShapeDtypeStruct or an array), got {x!r} of type {type(x).__name__}"
        )
    dt = np.dtype(x.dtype)
    if dtypes.canonicalize_dtype(dt) != dt:
        raise ValueError("result_shape_dtypes cannot specify 64-bit types when `jax_enable_x64` is disabled")
    return ShapedArray(tuple(int(d) for d in x.shape), dt, False)


def pure_callback(
    callback: Callable[..., Any],
    result_shape_dtypes: Any,
    *args: Any,
    sharding: Any = None,
    vmap_method: str | None = None,
    **kwargs: Any,
) -> Any:
    """Call a pure Python function on the host; works under ``jit``, ``vmap`` and control flow.

    ``callback(*args, **kwargs)`` receives ``fjax.Array`` values and must return a pytree of
    arrays matching ``result_shape_dtypes`` (a pytree of objects with ``shape`` and ``dtype``,
    e.g. ``fjax.ShapeDtypeStruct``); shapes and (canonicalized) dtypes are checked on every
    call and a mismatch raises a ``RuntimeError`` naming the offending output.

    The callback is treated as pure: it may be skipped when its results are unused, or called
    several times. Under ``vmap`` the behaviour follows ``vmap_method``:

    * ``None`` (the default): ``vmap`` raises ``NotImplementedError``;
    * ``"sequential"``: one call per example, in a ``lax.scan``;
    * ``"sequential_unrolled"``: one call per example, unrolled;
    * ``"expand_dims"``: one call; unbatched arguments get a new leading axis of size 1;
    * ``"broadcast_all"``: one call; unbatched arguments are broadcast to the batch size;
    * ``"legacy_vectorized"``: one call; unbatched arguments are passed unchanged.

    With the batching methods that make one call, the callback must return results with the
    batch as leading axis. ``jvp``/``grad`` through the callback raise ``ValueError`` (wrap it
    in ``custom_jvp``/``custom_vjp``). ``sharding`` is accepted for compatibility and ignored
    (fjax has one CPU device).
    """
    if not callable(callback):
        raise TypeError(f"pure_callback: the callback must be callable, got {callback!r}")
    if vmap_method not in _VMAP_METHODS:
        allowed = list(_VMAP_METHODS)
        raise ValueError(f"vmap_method must be one of the allowed methods {allowed}, but got: {vmap_method}")
    res_leaves, out_tree = tu.tree_flatten(result_shape_dtypes)
    result_avals = tuple(_result_aval(x) for x in res_leaves)
    tree, dyn, static = split_args(args, kwargs)
    flat = _PureCallback(FlatCallback(callback, tree, static), out_tree)
    outs = pure_callback_p.bind(*dyn, callback=flat, result_avals=result_avals, vmap_method=vmap_method)
    return tu.tree_unflatten(out_tree, outs)
