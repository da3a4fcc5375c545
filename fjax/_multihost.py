"""Host-level helpers for multi-process programs: ``jax.make_array_from_process_local_data`` and
the functions of ``jax.experimental.multihost_utils``.

They work on host (numpy) data between compiled programs and call mpi4py directly; in a single
process they are the identity (or a stack of one). fjax arrays hold their global value in each
process, so an array made from process-local data gathers every process's part (``Allgatherv``).
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from fjax import _devices, core, distributed
from fjax import _tree_lifted as tu


def _contiguous(x: np.ndarray) -> np.ndarray:
    # (numpy.ascontiguousarray would turn a 0-d array into shape (1,))
    return x if x.flags.c_contiguous else np.array(x, order="C")


__all__ = [
    "assert_equal",
    "broadcast_one_to_all",
    "global_array_to_host_local_array",
    "host_local_array_to_global_array",
    "make_array_from_process_local_data",
    "process_allgather",
    "reached_preemption_sync_point",
    "sync_global_devices",
]


def _np(x: Any) -> np.ndarray:
    if isinstance(x, core.Tracer):
        raise TypeError("multihost_utils functions take concrete arrays, not traced values (call them outside jit)")
    return _contiguous(np.asarray(x))


def _multi() -> bool:
    return distributed.state.comm is not None and distributed.state.num_processes > 1


def _allgather_rows(x: np.ndarray) -> np.ndarray:
    """Every process's ``x`` concatenated along axis 0 (row counts may differ)."""
    comm = distributed.state.comm
    with distributed.collective("process_allgather / make_array_from_process_local_data"):
        return _allgather_rows_guarded(comm, x)


def _allgather_rows_guarded(comm: Any, x: np.ndarray) -> np.ndarray:
    shapes = comm.allgather((x.shape, x.dtype.str))
    tails = {(s[1:], d) for s, d in shapes}
    if len(tails) != 1:
        desc = ", ".join(f"rank {r}: {np.dtype(d).name}{tuple(s)}" for r, (s, d) in enumerate(shapes))
        raise ValueError(f"process-local data differ in trailing shape or dtype across processes ({desc})")
    rows = [s[0] if s else 1 for s, _ in shapes]
    per_row = int(np.prod(x.shape[1:], dtype=np.int64))
    out = np.empty((sum(rows),) + x.shape[1:], x.dtype)
    counts = [r * per_row for r in rows]
    displs = np.concatenate([[0], np.cumsum(counts)[:-1]]).tolist()
    comm.Allgatherv(x, [out, counts, displs, None])
    return out


def make_array_from_process_local_data(sharding: Any, local_data: Any, global_shape: tuple | None = None) -> Any:
    """A global array laid out by ``sharding`` from each process's ``local_data``: the processes'
    parts are concatenated along axis 0 in process order (the usual data-parallel batch split).
    ``global_shape``, when given, must match the result."""
    from fjax import sharding as sh  # noqa: PLC0415

    x = _np(local_data)
    if _multi():
        if x.ndim == 0:
            raise ValueError("make_array_from_process_local_data: process-local data must have a leading axis")
        x = _allgather_rows(x)
    if global_shape is not None and tuple(global_shape) != x.shape:
        raise ValueError(
            f"make_array_from_process_local_data: global_shape {tuple(global_shape)} does not match the "
            f"{_devices.process_count()} processes' data, which form shape {x.shape}"
        )
    return sh.shard_array(core.to_array(x, "make_array_from_process_local_data"), sharding)


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Gather every leaf of ``in_tree`` from all processes as numpy arrays: stacked on a new axis
    0 (``tiled=True``: concatenated along axis 0)."""

    def one(leaf: Any) -> np.ndarray:
        x = _np(leaf)
        if not _multi():
            return x if tiled else x[None]
        if tiled:
            return _allgather_rows(x if x.ndim else x[None])
        return _allgather_rows(x[None])

    return tu.tree_map(one, in_tree)


def broadcast_one_to_all(in_tree: Any, is_source: bool | None = None) -> Any:
    """Every leaf of ``in_tree`` as held by the source process (default: process 0), on every
    process. Exactly one process may be the source."""
    if not _multi():
        return tu.tree_map(lambda v: core.to_array(_np(v), "broadcast_one_to_all"), in_tree)
    comm = distributed.state.comm
    src = distributed.state.process_id == 0 if is_source is None else bool(is_source)
    with distributed.collective("broadcast_one_to_all"):
        sources = [r for r, s in enumerate(comm.allgather(src)) if s]
    if len(sources) != 1:
        raise ValueError(f"broadcast_one_to_all: exactly one process must be the source, got processes {sources}")
    root = sources[0]

    def one(leaf: Any) -> Any:
        x = _np(leaf)
        with distributed.collective("broadcast_one_to_all"):
            meta = comm.bcast((x.shape, x.dtype.str), root=root)
            buf = x if distributed.state.process_id == root else np.empty(meta[0], np.dtype(meta[1]))
            comm.Bcast(buf, root=root)
        return core.to_array(buf, "broadcast_one_to_all")

    return tu.tree_map(one, in_tree)


def sync_global_devices(name: str) -> None:
    """A barrier across all processes; raises if processes reach it with different ``name``s."""
    if not _multi():
        return
    comm = distributed.state.comm
    with distributed.collective(f"sync_global_devices({name!r})"):
        names = comm.allgather(zlib.crc32(str(name).encode()))
        if len(set(names)) != 1:
            raise AssertionError(f"sync_global_devices name mismatch ('{name}'): processes reached different barriers")
        comm.Barrier()


def assert_equal(in_tree: Any, fail_message: str = "") -> None:
    """Raise ``AssertionError`` unless every leaf of ``in_tree`` is equal on all processes."""
    gathered = process_allgather(in_tree)
    for g in tu.tree_leaves(gathered):
        if not all(np.array_equal(g[0], g[i]) for i in range(1, g.shape[0])):
            raise AssertionError(f"{fail_message} Expected equal values on all processes")


def _blocks(mesh: Any, spec: Any, ndim: int, fn: str) -> tuple[list[int], list[tuple[int, int]]]:
    """Per array dim of an ``ndim``-d array laid out by ``spec`` over ``mesh``: the number of blocks
    along it, and the range [lo, hi) of blocks this process's devices hold (one contiguous run, as
    a host-local array is the concatenation of the process's shards)."""
    from fjax import sharding as sh  # noqa: PLC0415

    spec = spec if isinstance(spec, sh.PartitionSpec) else sh.PartitionSpec(*spec)
    sh.NamedSharding(mesh, spec)  # JAX's errors for axes the mesh lacks
    if len(spec) > ndim:
        raise ValueError(f"{fn}: {spec!r} has {len(spec)} entries for an array of rank {ndim}")
    names = list(mesh.axis_names)
    devs = np.asarray(mesh.devices)
    me = distributed.state.process_id if _multi() else _devices.process_index()
    counts, ranges = [], []
    for d in range(ndim):
        entry = spec[d] if d < len(spec) else None
        axes = () if entry is None else (entry if isinstance(entry, tuple) else (entry,))
        sizes = [devs.shape[names.index(a)] for a in axes]
        n = int(np.prod(sizes, dtype=np.int64)) if sizes else 1
        held = set()
        for coord in np.ndindex(*devs.shape):
            if devs[coord].process_index == me:
                held.add(int(np.ravel_multi_index([coord[names.index(a)] for a in axes], sizes)) if axes else 0)
        if not held:
            raise ValueError(f"{fn}: the mesh has no device of process {me}")
        lo, hi = min(held), max(held) + 1
        if len(held) != hi - lo:
            raise ValueError(
                f"{fn}: process {me}'s devices hold blocks {sorted(held)} of dimension {d}, which are not "
                "contiguous; its host-local array cannot be one slice of the global array"
            )
        counts.append(n)
        ranges.append((lo, hi))
    return counts, ranges


def host_local_array_to_global_array(local_inputs: Any, global_mesh: Any, pspecs: Any) -> Any:
    """Global arrays laid out by ``pspecs`` over ``global_mesh`` from each process's host-local
    arrays (the concatenation of the shards its devices hold): along a dimension sharded over mesh
    axes that span processes the processes' parts are put side by side in mesh order; along
    replicated ones every process must hold the same values. ``pspecs`` is one ``PartitionSpec``
    for every leaf or a pytree prefix of ``local_inputs``."""
    from fjax import sharding as sh  # noqa: PLC0415

    fn = "host_local_array_to_global_array"

    def one(spec: Any, leaf: Any) -> Any:
        if isinstance(leaf, core.Tracer):
            raise TypeError(f"{fn} takes concrete arrays, not traced values (call it outside jit)")
        x = _contiguous(np.asarray(leaf))
        counts, ranges = _blocks(global_mesh, spec, x.ndim, fn)
        block = []
        for d, (lo, hi) in enumerate(ranges):
            if x.shape[d] % (hi - lo):
                raise ValueError(
                    f"{fn}: dimension {d} of the host-local {x.dtype.name}{x.shape} does not split into the "
                    f"{hi - lo} shards this process holds"
                )
            block.append(x.shape[d] // (hi - lo))
        gshape = tuple(b * n for b, n in zip(block, counts))
        if _multi():
            comm = distributed.state.comm
            with distributed.collective(fn):
                metas = comm.allgather((x.shape, x.dtype.str, ranges))
                if len({(s, dt) for s, dt, _ in metas}) != 1:
                    desc = ", ".join(f"rank {r}: {np.dtype(dt).name}{tuple(s)}" for r, (s, dt, _) in enumerate(metas))
                    raise ValueError(f"{fn}: host-local arrays differ in shape or dtype across processes ({desc})")
                parts = np.empty((len(metas),) + x.shape, x.dtype)
                comm.Allgather(x, parts)
            out = np.empty(gshape, x.dtype)
            for part, (_, _, rng) in zip(parts, metas):
                out[tuple(slice(lo * b, hi * b) for (lo, hi), b in zip(rng, block))] = part
        else:
            out = x
        return sh.shard_array(core.to_array(out, fn), sh.NamedSharding(global_mesh, spec))

    return _map_specs(one, pspecs, local_inputs)


def global_array_to_host_local_array(global_inputs: Any, global_mesh: Any, pspecs: Any) -> Any:
    """The inverse of :func:`host_local_array_to_global_array`: each process's host-local part (the
    slice its devices hold) of global arrays laid out by ``pspecs`` over ``global_mesh``."""
    fn = "global_array_to_host_local_array"

    def one(spec: Any, leaf: Any) -> Any:
        if isinstance(leaf, core.Tracer):
            raise TypeError(f"{fn} takes concrete arrays, not traced values (call it outside jit)")
        x = np.asarray(leaf)
        counts, ranges = _blocks(global_mesh, spec, x.ndim, fn)
        idx = []
        for d, ((lo, hi), n) in enumerate(zip(ranges, counts)):
            if x.shape[d] % n:
                raise ValueError(f"{fn}: dimension {d} of {x.dtype.name}{x.shape} does not split into {n} shards")
            b = x.shape[d] // n
            idx.append(slice(lo * b, hi * b))
        return core.to_array(_contiguous(x[tuple(idx)]), fn)

    return _map_specs(one, pspecs, global_inputs)


def _map_specs(one: Any, pspecs: Any, tree: Any) -> Any:
    """``one(spec, leaf)`` over ``tree`` with ``pspecs`` a single PartitionSpec or a pytree prefix."""
    from fjax import sharding as sh  # noqa: PLC0415

    is_spec = lambda s: isinstance(s, sh.PartitionSpec)  # noqa: E731
    if is_spec(pspecs):
        return tu.tree_map(lambda leaf: one(pspecs, leaf), tree)
    flat_specs, spec_tree = tu.tree_flatten(pspecs, is_leaf=is_spec)
    subtrees = spec_tree.flatten_up_to(tree)
    outs = [tu.tree_map(lambda leaf, s=s: one(s, leaf), sub) for s, sub in zip(flat_specs, subtrees)]
    return tu.tree_unflatten(spec_tree, outs)


_preempt = {"installed": False, "noticed": False}


def reached_preemption_sync_point(step_id: int) -> bool:
    """Whether the processes should stop at step ``step_id`` (save a checkpoint and exit) because
    one of them was sent SIGTERM (a preemption notice). Collective in a multi-process job: every
    process calls it at the same steps and all get the same answer. The first call installs the
    SIGTERM handler that records the notice. In a single process there is no preemption service
    and it returns False, as JAX's does without ``jax.distributed``."""
    if not _multi():
        return False
    if not _preempt["installed"]:
        import signal  # noqa: PLC0415

        prev = signal.getsignal(signal.SIGTERM)

        def _on_term(signum: int, frame: Any) -> None:
            _preempt["noticed"] = True
            if callable(prev) and prev not in (signal.SIG_DFL, signal.SIG_IGN):
                prev(signum, frame)

        try:
            signal.signal(signal.SIGTERM, _on_term)
        except ValueError:  # not the main thread: no handler, so no notice can be recorded
            pass
        else:
            _preempt["installed"] = True
    comm = distributed.state.comm
    from mpi4py import MPI  # noqa: PLC0415

    with distributed.collective(f"reached_preemption_sync_point({int(step_id)})"):
        return bool(comm.allreduce(int(_preempt["noticed"]), op=MPI.MAX))
