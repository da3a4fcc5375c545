"""Top-level names of ``jax`` beyond the core transforms: ``jacobian``, ``linear_transpose``,
``typeof``, ``closure_convert``, ``custom_gradient``, ``named_call``/``named_scope``,
``effects_barrier``, ``default_device``, configuration context managers (``enable_x64``,
``debug_nans``, ...), ``float0`` and host/process queries.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core, dtypes
from fjax.api import ShapeDtypeStruct, jacrev, make_jaxpr, vjp
from fjax.config import config
from fjax.dtypes import kind as _dkind

__all__ = [
    "closure_convert",
    "custom_gradient",
    "debug_nans",
    "default_device",
    "default_matmul_precision",
    "effects_barrier",
    "enable_x64",
    "explain_cache_misses",
    "float0",
    "host_count",
    "host_id",
    "host_ids",
    "jacobian",
    "linear_transpose",
    "log_compiles",
    "named_call",
    "named_scope",
    "numpy_rank_promotion",
    "print_environment_info",
    "process_indices",
    "typeof",
]

jacobian = jacrev
float0 = dtypes.float0


def typeof(x: Any) -> core.AbstractValue:
    """The abstract value (shape, dtype, weak type) of ``x``, e.g. ``float32[3]``; a key array's
    is ``key<fry>[...]``, a ref's ``Ref{float32[3]}``."""
    if not isinstance(x, (core.Array, core.Tracer)):
        aval = getattr(type(x), "aval", None)
        if isinstance(aval, property):  # key arrays, refs
            return x.aval
    return core.get_aval(x)


def _like(x: Any) -> ShapeDtypeStruct:
    aval = core.get_aval(x)
    return ShapeDtypeStruct(aval.shape, aval.dtype, weak_type=aval.weak_type)


ShapeDtypeStruct.like = staticmethod(_like)  # type: ignore[attr-defined]


def linear_transpose(fun: Callable, *primals: Any, reduce_axes: tuple = ()) -> Callable:
    """The transpose of the linear function ``fun`` at inputs shaped like ``primals``.

    The returned function maps an output cotangent to a tuple of input cotangents.
    """
    leaves, tree = tu.tree_flatten(primals)
    # only the primals' shapes matter: ShapeDtypeStructs stand for them, as in JAX
    avals = [
        core.ShapedArray(x.shape, x.dtype, x.weak_type) if isinstance(x, ShapeDtypeStruct) else core.get_aval(x)
        for x in leaves
    ]
    for a in avals:
        if _dkind(a.dtype) not in "fc":
            raise TypeError(f"linear_transpose only supports [float or complex] -> [float or complex], got {a.dtype}")
    zeros = tu.tree_unflatten(tree, [core.Array(np.zeros(a.shape, a.dtype), a.weak_type) for a in avals])
    out, f_vjp = vjp(fun, *zeros)
    out_leaves, out_tree = tu.tree_flatten(out)
    out_avals = [core.get_aval(o) for o in out_leaves]

    def transposed(out_ct: Any) -> tuple:
        ct_leaves, ct_tree = tu.tree_flatten(out_ct)
        if ct_tree != out_tree:
            raise TypeError(f"cotangent tree does not match function output, expected {out_tree} but got {ct_tree}")
        for c, a in zip(ct_leaves, out_avals):
            ca = core.get_aval(c)
            if ca.shape != a.shape or ca.dtype != a.dtype:
                raise TypeError(
                    f"cotangent type does not match function output, expected {a.str_short()} but got {ca.str_short()}"
                )
        return f_vjp(out_ct)

    return transposed


def closure_convert(fun: Callable, *example_args: Any) -> tuple[Callable, list[Any]]:
    """``fun`` with the floating-point values it closes over (e.g. tracers of an enclosing
    transform) hoisted out: returns ``(converted, consts)`` with ``converted(*args, *consts)``
    equal to ``fun(*args)``. Used to pass closures to ``custom_vjp`` rules and solvers."""
    closed, out_shape = make_jaxpr(fun, return_shape=True)(*example_args)
    jaxpr, consts = closed.jaxpr, list(closed.consts)
    hoist = [i for i, c in enumerate(consts) if _dkind(np.dtype(core.get_aval(c).dtype)) in "fc"]
    kept = {i: c for i, c in enumerate(consts) if i not in set(hoist)}
    hoisted = [consts[i] for i in hoist]
    _, in_tree = tu.tree_flatten(example_args)
    out_tree = tu.tree_structure(out_shape)
    n_args = in_tree.num_leaves

    def converted(*args_and_consts: Any) -> Any:
        args, hc = (
            args_and_consts[: len(args_and_consts) - len(hoist)],
            args_and_consts[len(args_and_consts) - len(hoist) :],
        )
        flat, tree = tu.tree_flatten(args)
        if tree != in_tree or len(flat) != n_args:
            raise TypeError(f"closure_convert: arguments must have structure {in_tree}, got {tree}")
        full = dict(kept)
        full.update(zip(hoist, hc))
        outs = core.eval_jaxpr(jaxpr, [full[i] for i in range(len(consts))], *flat)
        return tu.tree_unflatten(out_tree, outs)

    return converted, hoisted


def _apply_converted(converted: Callable, n_consts: int, *consts_and_ct: Any) -> Any:
    *consts, ct = consts_and_ct
    return converted(ct, *consts)


def custom_gradient(fun: Callable) -> Callable:
    """Define a function and its gradient together: ``fun(*args)`` returns ``(value, vjp_fn)``
    where ``vjp_fn(ct)`` gives one cotangent per argument (a tuple, or one value for one argument).
    """
    from fjax.custom_derivatives import custom_vjp

    @custom_vjp
    def wrapped(*args: Any) -> Any:
        return fun(*args)[0]

    def fwd(*args: Any) -> tuple[Any, Any]:
        ans, rule = fun(*args)
        ct_example = tu.tree_map(lambda x: core.Array(np.zeros(np.shape(x), dtypes.dtype(x)), False), ans)
        converted, consts = closure_convert(rule, ct_example)
        return ans, tu.Partial(functools.partial(_apply_converted, converted, len(consts)), *consts)

    def bwd(res: Any, ct: Any) -> tuple:
        out = res(ct)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)

    wrapped.defvjp(fwd, bwd)
    return functools.wraps(fun)(lambda *args: wrapped(*args))


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
    """``fun`` itself: JAX uses the name to label the computation in profiles; fjax has no profiler."""
    return fun


@contextlib.contextmanager
def named_scope(name: str) -> Iterator[None]:
    """A context naming the operations staged inside it (for profiles; fjax keeps no names)."""
    if not isinstance(name, str):
        raise TypeError("named_scope name argument must be a string.")
    yield


def effects_barrier() -> None:
    """Wait for pending effects (callbacks); fjax runs them synchronously, so there are none."""


class _NoDefault:
    def __repr__(self) -> str:
        return "<NoDefault>"


_NO_DEFAULT = _NoDefault()


def default_device(new_val: Any = _NO_DEFAULT) -> contextlib.AbstractContextManager:
    """Context in which computations on uncommitted arrays (and new arrays) go to ``new_val`` (a
    ``Device``, a platform name such as ``"cpu"``, or None for the default backend's first
    device), as ``jax.default_device``; per thread, overriding ``jax_default_device``. The value
    is required (JAX's TypeError without one)."""
    if new_val is _NO_DEFAULT:
        raise TypeError(
            "Context manager for jax_default_device config option requires an argument representing the new "
            "value for the config option."
        )
    return _default_device(new_val)


@contextlib.contextmanager
def _default_device(device: Any) -> Iterator[None]:
    from fjax import _devices, _placement

    if device is not None and not isinstance(device, (_devices.Device, str)):
        raise TypeError(f"default_device: expected a Device or a platform name, got {device!r}")
    if isinstance(device, str):
        _devices.local_devices(backend=device)  # an absent platform raises JAX's RuntimeError here
    _devices._enter_default_block(device)
    _placement.rearm()
    try:
        with config.override("jax_default_device", device):  # what config.jax_default_device reads here
            yield
    finally:
        _devices._exit_default_block()


class _ConfigContext:
    """A JAX configuration state: ``with jax.enable_x64(True): ...`` sets it for the block in the
    calling thread only (``config.update`` sets the global value); ``.value`` reads the calling
    thread's value."""

    def __init__(self, option: str, allowed: Callable[[Any], bool] | None = None, what: str = "") -> None:
        self.option = option
        self.allowed = allowed
        self.what = what

    @property
    def value(self) -> Any:
        return getattr(config, self.option) if self.option in config._defaults else None

    @contextlib.contextmanager
    def __call__(self, new_val: Any = True) -> Iterator[None]:
        if self.allowed is not None and not self.allowed(new_val):
            raise NotImplementedError(f"{self.what}: fjax does not implement the value {new_val!r}")
        if self.option not in config._defaults:
            yield
            return
        with config.override(self.option, new_val):  # the calling thread only, as in JAX
            yield


enable_x64 = _ConfigContext("jax_enable_x64")
debug_nans = _ConfigContext("jax_debug_nans")
explain_cache_misses = _ConfigContext("jax_explain_cache_misses")
log_compiles = _ConfigContext("jax_log_compiles")
# the precision dot_general / conv_general_dilated equations traced in the block carry when called
# with precision=None (the CPU computes every one at full precision; a GPU backend reads it)
default_matmul_precision = _ConfigContext("jax_default_matmul_precision")
# "allow", "warn" or "raise" implicit rank promotion in jnp's elementwise functions (fjax/numpy/_util.py)
numpy_rank_promotion = _ConfigContext("jax_numpy_rank_promotion")


def host_count(backend: str | None = None) -> int:
    """Number of processes (1)."""
    return 1


def host_id(backend: str | None = None) -> int:
    """Index of this process (0)."""
    return 0


def host_ids(backend: str | None = None) -> list[int]:
    """Indices of the processes ([0])."""
    return [0]


def process_indices(backend: str | None = None) -> list[int]:
    """Indices of the processes ([0])."""
    return [0]


def print_environment_info(return_string: bool = False) -> str | None:
    """Versions of fjax, numpy, numba and Python."""
    import platform
    import sys

    import numba

    import fjax

    info = (
        f"fjax:    {fjax.__version__}\nnumpy:   {np.__version__}\nnumba:   {numba.__version__}\n"
        f"python:  {sys.version}\nplatform: {platform.platform()}\n"
    )
    if return_string:
        return info
    print(info)
    return None
