"""Collectives across processes: MPI ``Allreduce``, ``Allgather``, ``Alltoall``,
``Reduce_scatter_block`` and point-to-point
``Isend``/``Irecv`` (for ``ppermute``) as primitives.

The collective rules of ``fjax.lax.parallel`` finish with these when a named axis spans
processes (multi-process ``pmap``). Each is a primitive with every rule (abstract eval, jvp,
transpose, batching); it has no numba lowering, so under ``jit`` it runs as a host step between
compiled kernels, on the contiguous numpy buffer of its operand (``np.ascontiguousarray`` copies
only when the operand is not already contiguous; the result buffer is the output array).

Before each call the ranks compare a fingerprint of the operand's shape and dtype (one 8-byte
``Allgather``), so a collective called with different shapes on different ranks raises a
``ValueError`` naming every rank's shape instead of corrupting memory or hanging;
``fjax.config.update("fjax_mpi_check_shapes", False)`` turns this off. The check runs on every
call: remembering which shapes were checked would not be safe, since a rank that skips the check
while another one runs it calls a different collective (MPICH then hangs in it), and two ranks
that both skip it with different shapes make the reduction itself fail ("Message truncated") on
one rank only. What is remembered is each rank's own fingerprint and buffers for a shape, so a
check costs the 8-byte exchange and little Python around it.
"""

from __future__ import annotations

import math
import sys
import zlib
from typing import Any

import numpy as np

from fjax import core
from fjax import distributed as _distributed
from fjax.config import config as _config
from fjax.interpreters import ad, batching
from fjax.interpreters.ad import Zero


def _contiguous(x: np.ndarray) -> np.ndarray:
    # (numpy.ascontiguousarray would turn a 0-d array into shape (1,))
    x = np.asarray(x)
    return x if x.flags.c_contiguous else np.array(x, order="C")


__all__ = ["allgather", "allreduce", "alltoall", "ppermute", "reduce_scatter"]

# Result buffers of 1 MB and more are recycled: a fresh multi-megabyte numpy buffer is fresh
# pages from the OS (glibc mmaps it), and touching them costs as much as a third of the
# allreduce itself at 16-64 MB. A pooled buffer is handed out again only when nothing but the
# pool refers to it (every numpy view of it holds a reference to it as its base), so no live
# array can see its contents change.
_POOL: list = []
_POOL_MIN_BYTES = 1 << 20
_POOL_MAX = 8
_POOL_MAX_BYTES = 256 << 20


def _empty(shape: tuple, dtype: Any, nbytes: int = -1) -> np.ndarray:
    dtype = np.dtype(dtype)
    if nbytes < 0:
        nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < _POOL_MIN_BYTES:
        return np.empty(shape, dtype)
    for i in range(len(_POOL)):
        # references: the pool's list, getrefcount's argument (no loop name: enumerate's cached
        # tuple would hold one more)
        if _POOL[i].nbytes == nbytes and sys.getrefcount(_POOL[i]) == 2:
            buf = _POOL.pop(i)
            _POOL.append(buf)  # most recently used last
            return buf.view(dtype).reshape(shape)
    buf = np.empty(nbytes, np.uint8)
    _POOL.append(buf)
    while len(_POOL) > 1 and (len(_POOL) > _POOL_MAX or sum(b.nbytes for b in _POOL) > _POOL_MAX_BYTES):
        del _POOL[0]  # the least recently used: the pool only forgets it, live arrays keep their memory
    return buf.view(dtype).reshape(shape)


def _guard(what: str) -> Any:
    return _distributed.collective(what)


def _comm() -> Any:
    comm = _distributed.state.comm
    if comm is None:
        raise RuntimeError("an MPI collective was called but fjax.distributed.initialize() has not run")
    return comm


# (what, shape, dtype, number of processes) -> (this rank's fingerprint, the Allgather's receive buffer,
# the bytes it holds when every rank has the same fingerprint): only this rank's own values,
# so the cache cannot make ranks disagree about whether to check
_FP: dict = {}
_FP_MAX = 4096


def _check_same(comm: Any, what: str, x: np.ndarray) -> None:
    if not _config.fjax_mpi_check_shapes:
        return
    n = comm.Get_size()
    key = (what, x.shape, x.dtype, n)
    entry = _FP.get(key)
    if entry is None:
        fp = np.array([zlib.crc32(repr((what, x.shape, x.dtype.str)).encode())], dtype=np.int64)
        if len(_FP) >= _FP_MAX:
            _FP.clear()
        entry = _FP[key] = (fp, np.empty(n, dtype=np.int64), fp.tobytes() * n)
    fp, allfp, same = entry
    comm.Allgather(fp, allfp)
    if allfp.tobytes() != same:
        shapes = comm.allgather((x.shape, x.dtype.name))
        desc = ", ".join(f"rank {r}: {s}{tuple(sh)}" for r, (sh, s) in enumerate(shapes))
        raise ValueError(f"{what}: the operands differ in shape or dtype across processes ({desc})")


_OPS: dict = {}


def _mpi_op(kind: str) -> Any:
    if not _OPS:
        from mpi4py import MPI  # noqa: PLC0415

        _OPS.update(sum=MPI.SUM, max=MPI.MAX, min=MPI.MIN)
    return _OPS[kind]


# ---------------------------------------------------------------------------------------------
# Allreduce

mpi_allreduce_p = core.Primitive("mpi_allreduce")


_ALLREDUCE_WHAT = {op: f"psum/pmax/pmin across processes (op={op})" for op in ("sum", "max", "min")}


def _allreduce_impl(x: np.ndarray, *, op: str) -> np.ndarray:
    # the hot path of data-parallel training (every gradient bucket): the watchdog mark is made
    # here rather than with ``collective`` (a context manager costs a few microseconds more)
    comm = _distributed.state.comm
    if comm is None:
        _comm()  # (raises)
    if type(x) is not np.ndarray or not x.flags.c_contiguous:
        x = _contiguous(x)
    what = _ALLREDUCE_WHAT.get(op) or f"psum/pmax/pmin across processes (op={op})"
    w = _distributed.state.watchdog
    if w is not None:
        w.enter(what)
    try:
        _check_same(comm, what, x)
        if x.dtype == np.bool_:
            # MPI has no bool sum; reduce as uint8 (sum of bools saturates to True, as a logical or)
            tmp = np.empty(x.shape, np.uint8)
            comm.Allreduce(x.view(np.uint8), tmp, op=_mpi_op("max" if op == "sum" else op))
            return tmp.astype(np.bool_)
        out = _empty(x.shape, x.dtype, x.nbytes)
        comm.Allreduce(x, out, op=_OPS[op] if _OPS else _mpi_op(op))
    finally:
        if w is not None:
            w.leave()
    return out


mpi_allreduce_p.def_impl(_allreduce_impl)
mpi_allreduce_p.def_abstract_eval(lambda x, *, op: core.ShapedArray(x.shape, x.dtype, x.weak_type))


def _allreduce_jvp(primals: list, tangents: list, *, op: str) -> tuple:
    (x,), (t,) = primals, tangents
    out = mpi_allreduce_p.bind(x, op=op)
    if type(t) is Zero:
        return out, Zero(ad.tangent_aval(core.get_aval(out)))
    if op == "sum":
        return out, mpi_allreduce_p.bind(t, op="sum")
    from fjax.lax import lax as L  # noqa: PLC0415

    hit = L.convert_element_type(L.eq(x, out), core.get_aval(t).dtype)
    num = mpi_allreduce_p.bind(L.mul(hit, t), op="sum")
    return out, L.div(num, mpi_allreduce_p.bind(hit, op="sum"))


def _allreduce_transpose(ct: Any, x: Any, *, op: str) -> list:
    if op != "sum":
        raise NotImplementedError(f"transpose of mpi_allreduce with op={op!r} (it is not linear)")
    if type(ct) is Zero:
        return [None]
    return [mpi_allreduce_p.bind(ct, op="sum")]


ad.primitive_jvps[mpi_allreduce_p] = _allreduce_jvp
ad.primitive_transposes[mpi_allreduce_p] = _allreduce_transpose


def _allreduce_batch(vals: list, dims: list, *, op: str) -> tuple:
    (x,), (d,) = vals, dims
    return mpi_allreduce_p.bind(x, op=op), d


batching.primitive_batchers[mpi_allreduce_p] = _allreduce_batch


def allreduce(x: Any, op: str = "sum") -> Any:
    """The elementwise ``op`` ("sum", "max", "min") of ``x`` over every process (MPI Allreduce)."""
    return mpi_allreduce_p.bind(x, op=op)


# ---------------------------------------------------------------------------------------------
# Allgather (concatenates along axis 0, rank-major)

mpi_allgather_p = core.Primitive("mpi_allgather")


def _allgather_impl(x: np.ndarray, *, nprocs: int) -> np.ndarray:
    comm = _comm()
    x = _contiguous(x)
    with _guard("all_gather across processes"):
        _check_same(comm, "all_gather across processes", x)
        out = _empty((nprocs * x.shape[0],) + x.shape[1:], x.dtype)
        comm.Allgather(x, out)
    return out


def _allgather_abstract(x: core.ShapedArray, *, nprocs: int) -> core.ShapedArray:
    if x.ndim == 0:
        raise TypeError("mpi_allgather: the operand must have a leading axis")
    return core.ShapedArray((x.shape[0] * nprocs,) + x.shape[1:], x.dtype, x.weak_type)


mpi_allgather_p.def_impl(_allgather_impl)
mpi_allgather_p.def_abstract_eval(_allgather_abstract)


def _allgather_transpose(ct: Any, x: Any, *, nprocs: int) -> list:
    if type(ct) is Zero:
        return [None]
    from fjax import distributed  # noqa: PLC0415
    from fjax.lax import lax as L  # noqa: PLC0415
    from fjax.lax import slicing  # noqa: PLC0415

    del distributed, L, slicing
    return [mpi_reduce_scatter_p.bind(ct, nprocs=nprocs)]


ad.deflinear2(mpi_allgather_p, _allgather_transpose)


def _allgather_batch(vals: list, dims: list, *, nprocs: int) -> tuple:
    (x,), (d,) = vals, dims
    if d == 0:
        x = batching.moveaxis(x, 0, 1)
        d = 1
    return mpi_allgather_p.bind(x, nprocs=nprocs), d


batching.primitive_batchers[mpi_allgather_p] = _allgather_batch


def allgather(x: Any) -> Any:
    """Every process's ``x`` concatenated along axis 0 in rank order (MPI Allgather)."""
    from fjax import distributed  # noqa: PLC0415

    return mpi_allgather_p.bind(x, nprocs=distributed.state.num_processes)


# ---------------------------------------------------------------------------------------------
# Alltoall (block p of axis 0 goes to rank p; block q of the result came from rank q)

mpi_alltoall_p = core.Primitive("mpi_alltoall")


def _alltoall_impl(x: np.ndarray) -> np.ndarray:
    comm = _comm()
    x = _contiguous(x)
    with _guard("all_to_all across processes"):
        _check_same(comm, "all_to_all across processes", x)
        if x.shape[0] != comm.Get_size():
            raise ValueError(f"mpi_alltoall: axis 0 of shape {x.shape} must equal the number of processes")
        out = _empty(x.shape, x.dtype)
        comm.Alltoall(x, out)
    return out


mpi_alltoall_p.def_impl(_alltoall_impl)
mpi_alltoall_p.def_abstract_eval(lambda x: core.ShapedArray(x.shape, x.dtype, x.weak_type))
# the exchange is a transposition of (rank, block): its own inverse and adjoint
ad.deflinear2(mpi_alltoall_p, lambda ct, x: [None if type(ct) is Zero else mpi_alltoall_p.bind(ct)])


def _alltoall_batch(vals: list, dims: list) -> tuple:
    (x,), (d,) = vals, dims
    if d == 0:
        x = batching.moveaxis(x, 0, 1)
        d = 1
    return mpi_alltoall_p.bind(x), d


batching.primitive_batchers[mpi_alltoall_p] = _alltoall_batch


def alltoall(x: Any) -> Any:
    """Send block ``p`` of axis 0 of ``x`` to rank ``p`` (MPI Alltoall)."""
    return mpi_alltoall_p.bind(x)


# ---------------------------------------------------------------------------------------------
# point-to-point permutation (row i of the result came from global member src_of[i]; ppermute)

mpi_ppermute_p = core.Primitive("mpi_ppermute")


def _ppermute_impl(x: np.ndarray, *, perm: tuple, local_size: int) -> np.ndarray:
    comm = _comm()
    x = _contiguous(x)
    rank, L = comm.Get_rank(), local_size
    out = np.zeros_like(x)
    reqs = []
    with _guard("ppermute across processes"):
        _check_same(comm, "ppermute across processes", x)
        # receives first (non-blocking), then sends: matching Isend/Irecv pairs never deadlock
        for src, dst in perm:
            if dst // L == rank and src // L != rank:
                reqs.append(comm.Irecv(out[dst - rank * L], source=src // L, tag=dst))
        for src, dst in perm:
            if src // L == rank:
                if dst // L == rank:
                    out[dst - rank * L] = x[src - rank * L]
                else:
                    reqs.append(comm.Isend(x[src - rank * L], dest=dst // L, tag=dst))
        if reqs:
            from mpi4py import MPI  # noqa: PLC0415

            MPI.Request.Waitall(reqs)
    return out


mpi_ppermute_p.def_impl(_ppermute_impl)
mpi_ppermute_p.def_abstract_eval(lambda x, *, perm, local_size: core.ShapedArray(x.shape, x.dtype, x.weak_type))
ad.deflinear2(
    mpi_ppermute_p,
    lambda ct, x, *, perm, local_size: [
        None
        if type(ct) is Zero
        else mpi_ppermute_p.bind(ct, perm=tuple((d, s) for s, d in perm), local_size=local_size)
    ],
)


def _ppermute_batch(vals: list, dims: list, *, perm: tuple, local_size: int) -> tuple:
    (x,), (d,) = vals, dims
    if d == 0:
        x = batching.moveaxis(x, 0, 1)
        d = 1
    return mpi_ppermute_p.bind(x, perm=perm, local_size=local_size), d


batching.primitive_batchers[mpi_ppermute_p] = _ppermute_batch


def ppermute(x: Any, perm: tuple, local_size: int) -> Any:
    """Rows of ``x`` are this process's ``local_size`` members of a global axis; member ``dst``
    of the result holds member ``src``'s row for each ``(src, dst)`` in ``perm`` (zeros where
    nothing arrives). Rows that cross processes move with MPI ``Isend``/``Irecv``."""
    return mpi_ppermute_p.bind(x, perm=tuple(perm), local_size=int(local_size))


# ---------------------------------------------------------------------------------------------
# Reduce_scatter (sum; block p of axis 0 of the sum goes to rank p)

mpi_reduce_scatter_p = core.Primitive("mpi_reduce_scatter")


def _reduce_scatter_impl(x: np.ndarray, *, nprocs: int) -> np.ndarray:
    comm = _comm()
    x = _contiguous(x)
    with _guard("psum_scatter across processes"):
        _check_same(comm, "psum_scatter across processes", x)
        out = _empty((x.shape[0] // nprocs,) + x.shape[1:], x.dtype)
        comm.Reduce_scatter_block(x, out, op=_mpi_op("sum"))
    return out


def _reduce_scatter_abstract(x: core.ShapedArray, *, nprocs: int) -> core.ShapedArray:
    if x.ndim == 0 or x.shape[0] % nprocs:
        raise TypeError(f"mpi_reduce_scatter: axis 0 of shape {x.shape} must be divisible by {nprocs} processes")
    return core.ShapedArray((x.shape[0] // nprocs,) + x.shape[1:], x.dtype, x.weak_type)


mpi_reduce_scatter_p.def_impl(_reduce_scatter_impl)
mpi_reduce_scatter_p.def_abstract_eval(_reduce_scatter_abstract)
ad.deflinear2(
    mpi_reduce_scatter_p,
    lambda ct, x, *, nprocs: [None if type(ct) is Zero else mpi_allgather_p.bind(ct, nprocs=nprocs)],
)


def _reduce_scatter_batch(vals: list, dims: list, *, nprocs: int) -> tuple:
    (x,), (d,) = vals, dims
    if d == 0:
        x = batching.moveaxis(x, 0, 1)
        d = 1
    return mpi_reduce_scatter_p.bind(x, nprocs=nprocs), d


batching.primitive_batchers[mpi_reduce_scatter_p] = _reduce_scatter_batch


def reduce_scatter(x: Any) -> Any:
    """The sum of ``x`` over every process, of which rank ``p`` keeps block ``p`` of axis 0 (MPI
    ``Reduce_scatter_block``)."""
    from fjax import distributed  # noqa: PLC0415

    return mpi_reduce_scatter_p.bind(x, nprocs=distributed.state.num_processes)


# ---------------------------------------------------------------------------------------------
# the global view of multi-process shard_map: every process holds the whole (replicated) value;
# these move between it and the process's own blocks with the adjoints that view needs (a
# replicated value's cotangent is the same on every process, not a per-process share)

mpi_local_block_p = core.Primitive("mpi_local_block")
mpi_gather_replicated_p = core.Primitive("mpi_gather_replicated")
mpi_replicated_p = core.Primitive("mpi_replicated")


def _local_block_impl(x: np.ndarray, *, nprocs: int, rank: int) -> np.ndarray:
    k = x.shape[0] // nprocs
    return x[rank * k : (rank + 1) * k]


def _local_block_abstract(x: core.ShapedArray, *, nprocs: int, rank: int) -> core.ShapedArray:
    if x.ndim == 0 or x.shape[0] % nprocs:
        raise TypeError(f"mpi_local_block: axis 0 of shape {x.shape} must be divisible by {nprocs} processes")
    return core.ShapedArray((x.shape[0] // nprocs,) + x.shape[1:], x.dtype, x.weak_type)


mpi_local_block_p.def_impl(_local_block_impl)
mpi_local_block_p.def_abstract_eval(_local_block_abstract)
# the blocks of a replicated value: its cotangent gathers every process's block cotangents
ad.deflinear2(
    mpi_local_block_p,
    lambda ct, x, *, nprocs, rank: [None if type(ct) is Zero else mpi_gather_replicated_p.bind(ct, nprocs=nprocs)],
)

mpi_gather_replicated_p.def_impl(lambda x, *, nprocs: _allgather_impl(x, nprocs=nprocs))
mpi_gather_replicated_p.def_abstract_eval(_allgather_abstract)


def _gather_replicated_transpose(ct: Any, x: Any, *, nprocs: int) -> list:
    from fjax import distributed  # noqa: PLC0415

    if type(ct) is Zero:
        return [None]
    return [mpi_local_block_p.bind(ct, nprocs=nprocs, rank=distributed.state.process_id)]


ad.deflinear2(mpi_gather_replicated_p, _gather_replicated_transpose)

mpi_replicated_p.def_impl(lambda x, *, nprocs: x)
mpi_replicated_p.def_abstract_eval(lambda x, *, nprocs: core.ShapedArray(x.shape, x.dtype, x.weak_type))


def _replicated_transpose(ct: Any, x: Any, *, nprocs: int) -> list:
    # every process holds the same cotangent of a replicated output; the collectives that made
    # it (psum: its transpose sums over processes) count each process's share once
    if type(ct) is Zero:
        return [None]
    from fjax.lax import lax as L  # noqa: PLC0415

    return [L.div(ct, L.convert_element_type(nprocs, core.get_aval(ct).dtype))]


ad.deflinear2(mpi_replicated_p, _replicated_transpose)


def _front_batch(prim: core.Primitive):  # noqa: ANN202
    def rule(vals: list, dims: list, **params: Any) -> tuple:
        (x,), (d,) = vals, dims
        if d == 0:
            x = batching.moveaxis(x, 0, 1)
            d = 1
        return prim.bind(x, **params), d

    return rule


batching.primitive_batchers[mpi_local_block_p] = _front_batch(mpi_local_block_p)
batching.primitive_batchers[mpi_gather_replicated_p] = _front_batch(mpi_gather_replicated_p)
batching.primitive_batchers[mpi_replicated_p] = lambda vals, dims, *, nprocs: (
    mpi_replicated_p.bind(vals[0], nprocs=nprocs),
    dims[0],
)
