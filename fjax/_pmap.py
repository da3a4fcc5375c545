"""``jax.pmap``: map a function over devices, with collectives over the mapped axis.

fjax's devices are CPU devices of the host, so ``pmap(f, axis_name='i')`` runs as a compiled
``vmap`` over the mapped axis: ``jit(vmap(f, axis_name='i'))``. The collectives of ``f`` become
array operations along the batched axis inside one compiled program (no per-device threads, no
copies between "devices"), which on CPU is faster than running one program per device. The result
is a sharded ``Array`` whose entry ``i`` lives on ``devices[i]`` (a ``NamedSharding`` over the
mapped devices, as JAX 0.10's: ``_out_sharding``).

Several processes (``fjax.distributed.initialize()`` under ``mpiexec``): as in JAX, each process
maps over its local devices and the named axis spans every process's devices (size
``process_count() * local_device_count()``); collectives along it finish with MPI calls (host steps
of the compiled program, see ``fjax.lax.parallel_mpi``).

This module also lets the higher-order primitives (scan, while, cond, remat, custom_jvp/vjp)
carry collectives in their bodies to the trace of their named axis.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from fjax import _devices, core
from fjax import _tree_lifted as tu
from fjax.interpreters import batching

__all__ = ["pmap"]


def _register_higher_order() -> None:
    from fjax.checkpoint import remat_p  # noqa: PLC0415
    from fjax.custom_derivatives import custom_jvp_call_p, custom_vjp_call_p  # noqa: PLC0415
    from fjax.lax.control_flow.conditionals import cond_p  # noqa: PLC0415
    from fjax.lax.control_flow.loops import while_p  # noqa: PLC0415
    from fjax.lax.control_flow.scan import scan_p  # noqa: PLC0415

    for p in (
        scan_p,
        while_p,
        cond_p,
        remat_p,
        custom_jvp_call_p,
        custom_vjp_call_p,
    ):
        batching.register_higher_order(p)


_register_higher_order()


def _flatten_axes(what: str, tree: Any, axes: Any) -> list:
    from fjax.api import _flatten_axes as fa  # noqa: PLC0415

    return fa(what, tree, axes)


def pmap(
    fun: Callable,
    axis_name: Any = None,
    *,
    in_axes: Any = 0,
    out_axes: Any = 0,
    static_broadcasted_argnums: int | Sequence[int] = (),
    devices: Sequence[Any] | None = None,
    backend: str | None = None,
    axis_size: int | None = None,
    donate_argnums: int | Sequence[int] = (),
    global_arg_shapes: Any = None,
) -> Callable:
    """Map ``fun`` over the leading (``in_axes``) axis of its arguments, one entry per device,
    with the collectives of ``fjax.lax`` available over ``axis_name`` (``jax.pmap``).

    The mapped size must not exceed the number of local devices (``jax_num_cpu_devices``).
    ``static_broadcasted_argnums`` arguments are passed unmapped and must be hashable; each new
    value retraces. ``donate_argnums`` and ``global_arg_shapes`` are accepted and ignored.
    """
    del donate_argnums, global_arg_shapes
    _devices._check_backend(backend)
    if isinstance(static_broadcasted_argnums, int):
        static_broadcasted_argnums = (static_broadcasted_argnums,)
    static_nums = tuple(static_broadcasted_argnums)
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    name = getattr(fun, "__name__", type(fun).__name__)
    cache: dict = {}
    # the repeat calls of a training loop: (argument tree, leaf shapes) -> what a call with those
    # needs once the first call checked them (see _fast_call)
    fast: dict = {}

    @functools.wraps(fun, updated=())
    def pmap_f(*args: Any, **kwargs: Any) -> Any:
        if not kwargs and not static_nums:
            flat, tree = tu.tree_flatten(args)
            key = _fast_key(tree, flat)
            if key is not None:
                hit = fast.get(key)
                devs_now = list(devices) if devices is not None else _devices.local_devices()
                nprocs_now = _devices.process_count()
                if hit is not None and hit[0] == devs_now and hit[1] == nprocs_now:
                    return _fast_call(hit, flat)
                out, made = slow(args, kwargs)
                fast[key] = _fast_entry(cache, made, devs_now, nprocs_now)
                return out
        return slow(args, kwargs)[0]

    def slow(args: tuple, kwargs: dict) -> tuple:
        nargs = len(args)
        static_idx = sorted({i % nargs for i in static_nums if -nargs <= i < nargs})
        for i in static_nums:
            if not -nargs <= i < nargs:
                raise ValueError(
                    f"pmap: static_broadcasted_argnums {static_nums} out of range for {nargs} positional arguments"
                )
        static_vals = tuple(args[i] for i in static_idx)
        try:
            hash(static_vals)
        except TypeError as e:
            raise ValueError(f"pmap({name}): static_broadcasted_argnums arguments must be hashable ({e})") from None
        dyn = tuple(a for i, a in enumerate(args) if i not in static_idx)
        dyn_in_axes = in_axes
        if isinstance(in_axes, tuple):
            if len(in_axes) != nargs:
                raise ValueError(
                    f"pmap in_axes must be an int, None, or a tuple of entries corresponding to the positional "
                    f"arguments passed to the function, but got len(in_axes)={len(in_axes)}, len(args)={nargs}"
                )
            dyn_in_axes = tuple(a for i, a in enumerate(in_axes) if i not in static_idx)
        flat, tree = tu.tree_flatten((dyn, kwargs))
        axes_flat = _flatten_axes("pmap in_axes", tree, (dyn_in_axes, 0))
        dims = []
        for x, ax in zip(flat, axes_flat):
            if ax is None:
                dims.append(None)
                continue
            nd = core.get_aval(x).ndim
            if not -nd <= ax < nd:
                raise ValueError(
                    f"pmap was requested to map its argument along axis {ax}, which implies that its rank should be "
                    f"at least {ax + 1 if ax >= 0 else -ax}, but is only {nd} (its shape is {core.get_aval(x).shape})"
                )
            dims.append(ax % nd)
        sizes = {core.get_aval(x).shape[d] for x, d in zip(flat, dims) if d is not None}
        if axis_size is not None:
            sizes.add(int(axis_size))
        if not sizes:
            raise ValueError("pmap requires at least one argument with a mapped axis (or axis_size)")
        if len(sizes) > 1:
            raise ValueError(f"pmap got inconsistent sizes for array axes to be mapped: {sorted(sizes)}")
        n = sizes.pop()
        devs = list(devices) if devices is not None else _devices.local_devices()
        n_avail = len(devs) if devices is not None else _devices.local_device_count()
        if n > n_avail:
            raise ValueError(
                f"compiling computation that requires {n} logical devices, but only {n_avail} XLA devices are "
                f"available (num_replicas={n})"
            )
        nprocs, rank = 1, 0
        if devices is None and _devices.process_count() > 1:
            nprocs, rank = _devices.process_count(), _devices.process_index()
        key = (tree, tuple(dims), tuple(static_idx), static_vals, n, nprocs)
        entry = cache.get(key)
        if entry is None:
            entry = cache[key] = _build(fun, name, args, static_idx, tree, dims, n, axis_name, nprocs, rank, out_axes)
        jitted, out_box = entry
        outs = jitted(*flat)
        out_tree, out_dims = out_box
        mapped_devs = devs[:n]
        res = [_wrap(o, d, mapped_devs) for o, d in zip(outs, out_dims)]
        return tu.tree_unflatten(out_tree, res), (key, mapped_devs)

    return pmap_f


_FAST_LEAVES: tuple = ()


def _fast_key(tree: Any, flat: list) -> tuple | None:
    """``(tree, leaf shapes)`` when every leaf is a concrete array (no tracer, no Python
    scalar), else None: with the same tree and shapes a call maps the same axes to the same size,
    so the checks of the first call hold for it."""
    global _FAST_LEAVES
    if not _FAST_LEAVES:
        import numpy as np  # noqa: PLC0415

        from fjax import sharding  # noqa: PLC0415

        _FAST_LEAVES = (core.Array, sharding.ShardedArray, np.ndarray)
    shapes = []
    for x in flat:
        if type(x) not in _FAST_LEAVES:
            return None
        shapes.append(x.shape)
    return tree, tuple(shapes)


def _fast_entry(cache: dict, made: tuple, devs: list, nprocs: int) -> tuple:
    """What ``_fast_call`` needs, from the call the slow path just made: ``made`` is its cache
    key and the devices it mapped over; ``devs`` and ``nprocs`` are what the devices and number
    of processes were (a later call with others takes the slow path)."""
    from fjax import sharding  # noqa: PLC0415

    slow_key, mapped_devs = made
    jitted, out_box = cache[slow_key]
    out_tree, out_dims = out_box
    # one sharding object per output axis, shared by the results of every call (it is immutable)
    shardings = {d: _out_sharding(mapped_devs, d) for d in set(out_dims) if d is not None}
    return devs, nprocs, jitted, out_tree, [shardings.get(d) for d in out_dims], sharding.ShardedArray


def _fast_call(hit: tuple, flat: list) -> Any:
    _, _, jitted, out_tree, out_shardings, sharded = hit
    outs = jitted(*flat)
    res = [
        o if s is None or not isinstance(o, core.Array) else sharded(o._value, o.weak_type, s)
        for o, s in zip(outs, out_shardings)
    ]
    return tu.tree_unflatten(out_tree, res)


def _build(
    fun: Callable,
    name: str,
    args: tuple,
    static_idx: list,
    tree: Any,
    dims: list,
    n: int,
    axis_name: Any,
    nprocs: int,
    rank: int,
    out_axes: Any,
) -> tuple:
    from fjax.jit import jit  # noqa: PLC0415

    out_box: list = []
    static_args = {i: args[i] for i in static_idx}
    nargs = len(args)

    def per_device(*leaves: Any) -> list:
        dyn, kwargs = tu.tree_unflatten(tree, list(leaves))
        it = iter(dyn)
        full = [static_args[i] if i in static_args else next(it) for i in range(nargs)]
        out = fun(*full, **kwargs)
        o_flat, o_tree = tu.tree_flatten(out)
        if not out_box:
            out_box.append(o_tree)
        return o_flat

    def out_dims_thunk(k: int) -> list:
        return _flatten_axes("pmap out_axes", out_box[0], out_axes)

    def mapped(*flat: Any) -> list:
        data = batching.AxisData(n, axis_name, None, nprocs, rank)
        return batching.vmap_flat(per_device, n, dims, list(flat), out_dims_thunk, axis_data=data)

    mapped.__name__ = f"pmap_{name}"
    return jit(mapped), _OutInfo(out_box, out_axes)


class _OutInfo:
    """The output tree and flat out_axes of a pmapped function, known once it has been traced."""

    def __init__(self, out_box: list, out_axes: Any):
        self._box, self._axes, self._dims = out_box, out_axes, None

    def __iter__(self):  # noqa: ANN204
        if self._dims is None:
            self._dims = _flatten_axes("pmap out_axes", self._box[0], self._axes)
        yield self._box[0]
        yield self._dims


_PMAP_AXIS = "_internal_pmap_axis_name"


def _out_sharding(devs: list, d: int) -> Any:
    """A pmap result's sharding, as JAX 0.10's: a ``NamedSharding`` over a one-axis mesh of the
    mapped devices named ``_internal_pmap_axis_name``, output axis ``d`` split along it (so shard
    ``i`` is ``x[i:i+1]``, keeping the axis; chex's pmap variant reads ``shard.data[0]``)."""
    from fjax import sharding  # noqa: PLC0415

    mesh = sharding.Mesh(np.array(list(devs), dtype=object), (_PMAP_AXIS,))
    return sharding.NamedSharding(mesh, sharding.PartitionSpec(*([None] * d), _PMAP_AXIS))


def _wrap(o: Any, d: int | None, devs: list) -> Any:
    from fjax import sharding  # noqa: PLC0415

    if d is None or not isinstance(o, core.Array):
        return o
    return sharding.ShardedArray(o._value, o.weak_type, _out_sharding(devs, d))
