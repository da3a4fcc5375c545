"""``io_callback``: a host callback with side effects (never dropped as dead code, never
duplicated), as ``jax.experimental.io_callback``.

Its primitive reuses ``pure_callback``'s impl and result checking and is marked effectful, so
dead-code elimination keeps it under ``jit`` and inside loop bodies. Under ``vmap`` it is
called once per example in order (JAX allows unordered callbacks under vmap only; an ordered
one raises there, as here). It cannot be differentiated (JAX raises too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fjax import _tree_lifted as tu
from fjax import core
from fjax._callback import (
    FlatCallback,
    _pure_callback_abstract,
    _pure_callback_impl,
    _PureCallback,
    _result_aval,
    split_args,
)
from fjax.interpreters import ad, batching

__all__ = ["io_callback"]

io_callback_p = core.Primitive("io_callback")
io_callback_p.multiple_results = True
io_callback_p.effectful = True


def _impl(*args: Any, callback: _PureCallback, result_avals: tuple, ordered: bool) -> list:
    return _pure_callback_impl(*args, callback=callback, result_avals=result_avals, vmap_method=None)


def _abstract(*avals: Any, callback: _PureCallback, result_avals: tuple, ordered: bool) -> list:
    return _pure_callback_abstract(*avals, callback=callback, result_avals=result_avals, vmap_method=None)


io_callback_p.def_impl(_impl)
io_callback_p.def_abstract_eval(_abstract)


def _jvp(primals: list, tangents: list, **params: Any) -> tuple[list, list]:
    if all(type(t) is ad.Zero for t in tangents):
        outs = io_callback_p.bind(*primals, **params)
        return outs, [ad.Zero(ad.tangent_aval(a)) for a in params["result_avals"]]
    raise ValueError("IO callbacks do not support JVP.")


def _transpose(cts: Any, *args: Any, **params: Any) -> list:
    raise ValueError("IO callbacks do not support transpose.")


@batching.wants_axis_size
def _batch(vals: list, dims: list, *, axis_size: int, callback: Any, result_avals: tuple, ordered: bool) -> tuple:
    from fjax import lax  # noqa: PLC0415 - fjax.lax imports the interpreters, not this module

    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback.")
    is_b = [d is not batching.not_mapped for d in dims]
    vals = [batching.moveaxis(v, d, 0) if b else v for v, d, b in zip(vals, dims, is_b)]
    unb = [v for v, b in zip(vals, is_b) if not b]
    bat = [v for v, b in zip(vals, is_b) if b]
    params = dict(callback=callback, result_avals=result_avals, ordered=ordered)

    def body(carry: tuple, xs: list) -> tuple:
        ui, bi = iter(unb), iter(xs)
        ex = [next(bi) if b else next(ui) for b in is_b]
        return carry, io_callback_p.bind(*ex, **params)

    _, outs = lax.scan(body, (), bat, length=axis_size)
    return list(outs), [0] * len(outs)


ad.primitive_jvps[io_callback_p] = _jvp
ad.primitive_transposes[io_callback_p] = _transpose
batching.primitive_batchers[io_callback_p] = _batch


def io_callback(
    callback: Callable[..., Any],
    result_shape_dtypes: Any,
    *args: Any,
    sharding: Any = None,
    ordered: bool = False,
    **kwargs: Any,
) -> Any:
    """Call ``callback(*args, **kwargs)`` on the host for its side effects; works under ``jit``,
    ``vmap`` (unordered only) and control flow, and is never removed when its result is unused.

    The callback returns a pytree matching ``result_shape_dtypes`` (``None`` for no result);
    shapes and dtypes are checked on every call. fjax runs one program at a time on one
    device, so callbacks always run in program order (``ordered`` only changes vmap).
    """
    if not callable(callback):
        raise TypeError(f"io_callback: the callback must be callable, got {callback!r}")
    res_leaves, out_tree = tu.tree_flatten(result_shape_dtypes)
    result_avals = tuple(_result_aval(x) for x in res_leaves)
    tree, dyn, static = split_args(args, kwargs)
    flat = _PureCallback(FlatCallback(callback, tree, static), out_tree)
    outs = io_callback_p.bind(*dyn, callback=flat, result_avals=result_avals, ordered=bool(ordered))
    return tu.tree_unflatten(out_tree, outs)
