"""Allreduce of gradient-sized buffers through fjax against raw mpi4py, and the data-parallel
train step time, across MPI processes.

    mpiexec -n 2 python bench/bench_allreduce.py [--repeat 20] [--max-mb 64]

For float32 buffers of 1 KB .. 64 MB it times, as the median over ``--repeat`` calls after a
barrier (each call's time is the maximum over ranks):

- ``mpi4py``: ``comm.Allreduce(x, out, op=SUM)`` on preallocated numpy buffers (the floor);
- ``prim``: fjax's ``mpi_allreduce`` primitive called eagerly (``fjax.lax.parallel_mpi.allreduce``),
  which adds the shape fingerprint check (an 8-byte Allgather) and the output allocation;
- ``prim-nocheck``: the same with ``fjax_mpi_check_shapes`` off;
- ``pmap``: ``pmap(lambda g: lax.psum(g, 'i'))`` on this process's ``(1, n)`` slice, the
  way a data-parallel program calls it (jit dispatch, the compiled program around the host step,
  and the result wrapped as a sharded array).

Then the data-parallel step of the digits MLP (``examples/digits_dp.py``'s ``make_dp_step``,
global batch 64) is timed per call; run it with ``-n 1`` and ``-n 2`` to compare.
The machine's cores are shared, so run it when the machine is otherwise idle.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))

import fjax  # noqa: E402

if fjax.distributed.mpi_launched():
    fjax.distributed.initialize()

import fjax.numpy as jnp  # noqa: E402
from fjax import lax  # noqa: E402
from fjax.lax import parallel_mpi  # noqa: E402


def timed(fn, repeat: int, comm) -> float:
    """Median over ``repeat`` calls of the slowest rank's time, in ms."""
    fn()  # warm up (compiles)
    ts = []
    for _ in range(repeat):
        if comm is not None:
            comm.Barrier()
        t = time.perf_counter()
        fn()
        dt = time.perf_counter() - t
        ts.append(comm.allreduce(dt, op=_max()) if comm is not None else dt)
    return 1e3 * float(np.median(ts))


def timed_interleaved(fns: list, repeat: int, comm) -> list:
    """Median (ms) of each of ``fns`` over ``repeat`` rounds, each round calling every function
    once in turn (each call's time is the slowest rank's): load from other processes on a shared
    machine then falls on all of them alike instead of on whichever ran during a busy spell.
    Round ``r`` starts with function ``r mod len(fns)``, so none is always the one that follows
    the others (whose buffers then fill the caches)."""
    for fn in fns:
        fn()  # warm up (compiles, first-touch of buffers)
    ts: list = [[] for _ in fns]
    for r in range(repeat):
        for j in range(len(fns)):
            k = (r + j) % len(fns)
            fn = fns[k]
            comm.Barrier()
            t = time.perf_counter()
            fn()
            dt = time.perf_counter() - t
            ts[k].append(comm.allreduce(dt, op=_max()))
    return [1e3 * float(np.median(t)) for t in ts]


def _max():
    from mpi4py import MPI  # noqa: PLC0415

    return MPI.MAX


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--max-mb", type=float, default=64)
    p.add_argument("--no-step", action="store_true")
    args = p.parse_args()
    comm = fjax.distributed.comm()
    rank, nproc = fjax.process_index(), fjax.process_count()
    say = print if rank == 0 else (lambda *a, **k: None)
    say(f"fjax allreduce across {nproc} process(es), float32, median of {args.repeat} (ms)")
    if comm is not None:
        say(f"{'size':>8} {'mpi4py':>9} {'prim':>9} {'nocheck':>9} {'pmap':>9} {'prim/mpi4py':>12} {'pmap/mpi4py':>12}")
        psum = fjax.pmap(lambda g: lax.psum(g, "i"), axis_name="i")
        size = 1024
        while size <= args.max_mb * 2**20:
            n = size // 4
            x = np.random.default_rng(rank).standard_normal(n).astype(np.float32)
            out = np.empty_like(x)
            xa = jnp.asarray(x)
            xb = jnp.asarray(x[None])
            reps = args.repeat if size < 2**24 else max(10, args.repeat // 2)

            def prim_check():
                fjax.config.update("fjax_mpi_check_shapes", True)
                parallel_mpi.allreduce(xa, "sum")

            def prim_nocheck():
                fjax.config.update("fjax_mpi_check_shapes", False)
                parallel_mpi.allreduce(xa, "sum")
                fjax.config.update("fjax_mpi_check_shapes", True)

            t_raw, t_prim, t_nochk, t_pmap = timed_interleaved(
                [lambda: comm.Allreduce(x, out), prim_check, prim_nocheck, lambda: psum(xb)], reps, comm
            )
            label = f"{size // 1024} KB" if size < 2**20 else f"{size // 2**20} MB"
            say(
                f"{label:>8} {t_raw:9.3f} {t_prim:9.3f} {t_nochk:9.3f} {t_pmap:9.3f} {t_prim / t_raw:12.2f} "
                f"{t_pmap / t_raw:12.2f}"
            )
            size *= 4
    if not args.no_step:
        from digits_dp import make_dp_step  # noqa: PLC0415
        from digits_mlp import init_model, make_optimizer  # noqa: PLC0415

        model = init_model(fjax.random.PRNGKey(0))
        opt = make_optimizer()
        state = opt.init(model)
        step = make_dp_step(opt, 1e-4)
        per = 64 // nproc
        xb = jnp.asarray(np.random.default_rng(rank).standard_normal((1, per, 64)).astype(np.float32))
        yb = jnp.asarray(np.random.default_rng(rank).integers(0, 10, (1, per)).astype(np.int32))
        for bucket in (0.0, 25.0):
            fjax.config.update("fjax_allreduce_bucket_mb", bucket)
            step = make_dp_step(opt, 1e-4)
            t = timed(lambda: step(model, state, xb, yb)[2].block_until_ready(), args.repeat * 5, comm)
            how = "per-leaf allreduce" if not bucket else f"{bucket:g} MB buckets"
            say(
                f"digits MLP data-parallel step (global batch 64, {per} per process, {how}): {t:.2f} ms with "
                f"{nproc} process(es)"
            )
        # the gradient exchange alone: the MLP's 6 gradient leaves (69 KB), per leaf vs one bucket
        if comm is not None:
            grads = fjax.tree_util.tree_map(lambda v: jnp.asarray(np.asarray(v)[None]), model)
            for bucket in (0.0, 25.0):
                fjax.config.update("fjax_allreduce_bucket_mb", bucket)
                pm = fjax.pmap(lambda g: lax.pmean(g, "i"), axis_name="i")
                t = timed(lambda: pm(grads), args.repeat * 5, comm)
                how = "per-leaf" if not bucket else "bucketed"
                say(f"pmean of the MLP's 6 gradient leaves, {how}: {t:.3f} ms")
        fjax.config.update("fjax_allreduce_bucket_mb", 25.0)


if __name__ == "__main__":
    main()
