"""``jax.shard_map``: run a function on each block of a mesh-partitioned array, with collectives
over the mesh axes.

fjax runs ``shard_map(f, mesh=mesh, in_specs=..., out_specs=...)`` as nested ``vmap``s, one per
mesh axis (the first mesh axis outermost), each named after its axis: every argument is reshaped
so that the blocks its ``PartitionSpec`` assigns to the devices of a mesh axis form a leading
axis of that size (arguments not split along an axis are broadcast along it), and the outputs are
reassembled from their blocks by ``out_specs``. The computation is one program over all blocks,
so it composes with ``jit``, ``grad`` and ``vmap`` like any function. A gradient taken inside
the body follows JAX's varying-manual-axes rules with ``check_vma=True`` (``fjax._shard_map_vjp``:
gradients for replicated inputs come out summed over the instances) and ``pmap``'s per-instance
rules with ``check_vma=False``. ``auto=`` (mesh axes left automatic) is the complement of
``axis_names=``: the body sees those axes unsplit.

An output whose spec omits a mesh axis must not vary along it (with ``check_vma=True``, the
default, a varying one raises ``ValueError``, as JAX's check; with ``check_vma=False`` the block
of the first device along that axis is returned).

Several processes: a mesh whose first axis spans the processes (``make_mesh((process_count() *
k, ...), ...)`` over ``fjax.devices()``) runs each process's blocks only; collectives along that
axis go through MPI, and outputs split along it are gathered from every process (arrays hold
their global value in each process, e.g. from ``make_array_from_process_local_data``).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core
from fjax.interpreters import batching
from fjax.sharding import Mesh, PartitionSpec

__all__ = ["shard_map"]


def _is_spec(x: Any) -> bool:
    return x is None or isinstance(x, PartitionSpec)


def _flat_specs(what: str, tree: Any, specs: Any) -> list:
    """Broadcast a prefix tree of PartitionSpecs to the leaves of ``tree``."""
    proxy = tu.tree_unflatten(tree, list(range(tree.num_leaves)))
    out: list = [None] * tree.num_leaves

    def assign(spec: Any, sub: Any) -> None:
        for i in tu.tree_leaves(sub):
            out[i] = spec

    try:
        tu.tree_map(assign, specs, proxy, is_leaf=_is_spec)
    except (ValueError, TypeError) as e:
        raise ValueError(f"shard_map {what} must be a tree prefix of the corresponding value ({e})") from None
    return out


def _current_mesh() -> Mesh | None:
    from fjax.sharding import current_mesh  # noqa: PLC0415

    return current_mesh()


def shard_map(
    f: Callable | None = None,
    /,
    mesh: Mesh | None = None,
    in_specs: Any = None,
    out_specs: Any = None,
    *,
    axis_names: Any = frozenset(),
    check_vma: bool = True,
    check_rep: bool | None = None,
    auto: Any = frozenset(),
) -> Any:
    """Map ``f`` over the blocks of its arguments laid out on ``mesh`` by ``in_specs``; the results
    are assembled by ``out_specs`` (``jax.shard_map``; also callable positionally as
    ``jax.experimental.shard_map.shard_map(f, mesh, in_specs, out_specs)``)."""
    if f is None:
        return lambda g: shard_map(
            g, mesh, in_specs, out_specs, axis_names=axis_names, check_vma=check_vma, check_rep=check_rep, auto=auto
        )
    if out_specs is None:
        raise TypeError("shard_map() missing required keyword argument: 'out_specs'")
    check = check_vma if check_rep is None else bool(check_rep)

    @functools.wraps(f, updated=())
    def wrapped(*args: Any) -> Any:
        m = mesh if mesh is not None else _current_mesh()
        if m is None:
            raise ValueError("shard_map requires a mesh: pass mesh= or call it inside `with mesh:`")

        sizes = m.shape
        names = list(m.axis_names)
        if auto:
            # the older spelling of axis_names: the mesh axes left automatic; fjax's arrays hold their
            # global value, so an automatic axis is one the body sees unsplit (no vmap over it)
            unknown = set(auto) - set(names)
            if unknown:
                raise ValueError(f"shard_map: auto names {sorted(map(str, unknown))} are not axes of the mesh {names}")
            if axis_names and set(axis_names) & set(auto):
                raise ValueError("shard_map: an axis cannot be both in axis_names and in auto")
            names = [n for n in names if n not in set(auto)]
        if axis_names:
            names = [n for n in names if n in set(axis_names)]
        nprocs, rank, k_local = _process_layout(m, names)
        flat, tree = tu.tree_flatten(args)
        specs = _flat_specs("in_specs", tree, in_specs if in_specs is not None else PartitionSpec())
        blocks, dims_per_axis = [], []
        for x, spec in zip(flat, specs):
            b, used = _to_blocks(x, spec or PartitionSpec(), names, sizes)
            if nprocs > 1 and names[0] in used:  # this process runs its own devices' blocks
                from fjax.lax import parallel_mpi  # noqa: PLC0415

                b = parallel_mpi.mpi_local_block_p.bind(b, nprocs=nprocs, rank=rank)
            blocks.append(b)
            dims_per_axis.append(used)
        out_box: list = []

        def body(*leaves: Any) -> list:
            out = f(*tu.tree_unflatten(tree, list(leaves)))
            o_flat, o_tree = tu.tree_flatten(out)
            out_box.append(o_tree)
            return o_flat

        fn = body
        # innermost axis first: vmap over the last mesh axis wraps the body
        for k in reversed(range(len(names))):
            spans = nprocs > 1 and k == 0
            fn = _vmap_axis(
                fn,
                names[k],
                k_local if spans else sizes[names[k]],
                [names[k] in used for used in dims_per_axis],
                out_box,
                out_specs,
                names,
                check,
                (nprocs, rank) if spans else (1, 0),
            )
        outs = fn(*blocks)
        o_specs = _flat_specs("out_specs", out_box[0], out_specs)
        if nprocs > 1:  # outputs split along the axis that spans processes: gather every process's blocks
            from fjax.lax import parallel_mpi  # noqa: PLC0415

            outs = [
                parallel_mpi.mpi_gather_replicated_p.bind(o, nprocs=nprocs)
                if (not check or (sp and names[0] in _spec_axes(sp)))
                else parallel_mpi.mpi_replicated_p.bind(o, nprocs=nprocs)
                for o, sp in zip(outs, o_specs)
            ]
        res = [_from_blocks(o, s or PartitionSpec(), names, sizes, check) for o, s in zip(outs, o_specs)]
        return tu.tree_unflatten(out_box[0], res)

    return wrapped


def _spec_axes(spec: PartitionSpec) -> set:
    return {a for p in spec._normalized(len(spec)) for a in p}


def _process_layout(m: Mesh, names: list) -> tuple[int, int, int]:
    """``(nprocs, rank, local size of the first mesh axis)`` for a mesh over several processes.

    Supported layout (what ``make_mesh`` gives when the first axis is a multiple of the process
    count): the first mesh axis spans the processes, each owning a contiguous run of it, and the
    other axes stay within a process."""
    from fjax import _devices  # noqa: PLC0415

    me = _devices.process_index()
    procs = {d.process_index for d in m.devices.flat}
    if procs == {me}:
        return 1, 0, 0
    n = _devices.process_count()
    size0 = m.devices.shape[0]
    ok = names and names[0] == m.axis_names[0] and len(procs) == n and size0 % n == 0
    if ok:
        k = size0 // n
        ok = all(m.devices[idx].process_index == idx[0] // k for idx in np.ndindex(*m.devices.shape))
    if not ok:
        raise NotImplementedError(
            "shard_map over a mesh spanning several processes: fjax supports meshes whose first axis spans the "
            "processes (each process owning a contiguous run of it, as make_mesh((process_count() * k, ...)) lays "
            f"them out); got {m!r}"
        )
    return n, me, size0 // n


def _vmap_axis(
    fn: Callable,
    name: str,
    size: int,
    mapped: list,
    out_box: list,
    out_specs: Any,
    names: list,
    check: bool,
    procs: tuple = (1, 0),
) -> Callable:
    def run(*xs: Any) -> list:
        def out_dims(n: int) -> list:
            specs = _flat_specs("out_specs", out_box[0], out_specs)
            dims = []
            for s in specs:
                used = {a for p in s._normalized(len(s)) for a in p} if s else set()
                dims.append(0 if (name in used or not check) else None)
            return dims

        from fjax._shard_map_vjp import VmaAxisData  # noqa: PLC0415

        data = (VmaAxisData if check else batching.AxisData)(size, name, None, procs[0], procs[1])
        try:
            return batching.vmap_flat(fn, size, [0 if m else None for m in mapped], list(xs), out_dims, axis_data=data)
        except ValueError as e:
            if "out_axes is None" in str(e):
                raise ValueError(
                    f"shard_map applied to the function '{getattr(fn, '__name__', 'f')}' was given out_specs which "
                    f"require replication which can't be statically inferred given the mesh: an output varies along "
                    f"mesh axis '{name}' but its out_specs entry does not mention it (add '{name}' to the spec, "
                    "reduce with a collective such as psum, or pass check_vma=False)"
                ) from None
            raise

    return run


def _to_blocks(x: Any, spec: PartitionSpec, names: list, sizes: dict) -> tuple[Any, set]:
    """``x`` reshaped to ``(*[size of each mesh axis that splits it, in mesh order], *block)``."""
    from fjax.lax import lax as L  # noqa: PLC0415

    x = x if isinstance(x, (core.Array, core.Tracer)) else core.to_array(x, "shard_map")
    shape = core.get_aval(x).shape
    parts = spec._normalized(len(shape))
    new_shape, axis_pos, block_pos = [], {}, []
    for dim, p in zip(shape, parts):
        k = math.prod(sizes[a] for a in p) if p else 1
        if dim % k:
            raise ValueError(
                f"shard_map: an argument of shape {shape} with spec {spec!r}: dimension of size {dim} is not "
                f"divisible by the {k} devices of mesh axes {p}"
            )
        for a in p:
            if a not in sizes:
                raise ValueError(f"shard_map: spec {spec!r} names {a!r}, which is not an axis of the mesh {names}")
            if a not in names:
                raise NotImplementedError(
                    f"shard_map: spec {spec!r} splits an argument along mesh axis {a!r}, which is automatic here "
                    f"(not in axis_names, or in auto); fjax supports specs over the manual axes {names} only"
                )
            axis_pos[a] = len(new_shape)
            new_shape.append(sizes[a])
        block_pos.append(len(new_shape))
        new_shape.append(dim // k)
    y = L.reshape(x, tuple(new_shape))
    used = [a for a in names if a in axis_pos]
    perm = [axis_pos[a] for a in used] + block_pos
    if perm != list(range(len(perm))):
        y = L.transpose(y, tuple(perm))
    return y, set(used)


def _from_blocks(y: Any, spec: PartitionSpec, names: list, sizes: dict, check: bool) -> Any:
    """Inverse of ``_to_blocks`` for an output with leading mesh axes (those in ``spec``, or all
    of them without ``check``), dropping the first block of axes the spec omits."""
    from fjax.lax import lax as L  # noqa: PLC0415
    from fjax.lax import slicing  # noqa: PLC0415

    shape = core.get_aval(y).shape
    if check:
        lead = [a for a in names if spec and any(a in p for p in spec._normalized(len(spec)))]
    else:
        lead = list(names)
    block_nd = len(shape) - len(lead)
    parts = spec._normalized(block_nd)
    used_in_spec = {a for p in parts for a in p}
    # drop axes the spec omits (check_vma=False: take the first device's block)
    for a in reversed([a for a in lead if a not in used_in_spec]):
        i = lead.index(a)
        y = slicing.index_in_dim(y, 0, axis=i, keepdims=False)
        lead.remove(a)
    # interleave: for each block dim, its mesh axes (in spec order) then the block
    perm, out_shape = [], []
    bshape = core.get_aval(y).shape[len(lead) :]
    for j, p in enumerate(parts):
        for a in p:
            perm.append(lead.index(a))
        perm.append(len(lead) + j)
        out_shape.append(math.prod(sizes[a] for a in p) * bshape[j])
    if perm != list(range(len(perm))):
        y = L.transpose(y, tuple(perm))
    return L.reshape(y, tuple(out_shape))
