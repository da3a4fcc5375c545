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
    "make_array_from_process_local_data",
    "process_allgather",
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
