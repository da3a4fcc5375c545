"""Steps the CUDA backend runs on the host on purpose: the user's own Python functions
(``jax.pure_callback``, ``jax.experimental.io_callback``, ``jax.debug.callback`` and so
``jax.debug.print``), and ``eig`` (general eigenproblems: LAPACK's ``geev`` on the host, which is what
JAX's GPU ``eig`` runs when it does not use MAGMA, its default where MAGMA is not installed), and
the collectives across processes of multi-process ``pmap``/``shard_map`` (``mpi_allreduce`` and the
other ``fjax.lax.parallel_mpi`` primitives): MPI on host buffers, since the MPI from PyPI is not
CUDA-aware (JAX uses NCCL between GPUs instead; fjax has no NCCL path).

Each is a ``HostCallback`` record (``records.py``): the operands are copied to the host, the
primitive's impl runs there (the same function the CPU backend calls: the callback, or LAPACK), and
its results are copied back into device buffers. These copies are what the program asks for, so
they are the only host round trips a CUDA plan makes; every other step is kernels or cuBLAS/cuFFT
calls, or a ``NotImplementedError`` naming it. A plan holding a host call (also inside a scan
body) is not captured as a CUDA graph: the function must run on every call, in order with the
launches around it. Callbacks run in program order (the runtime's stream is synchronous with
respect to the copies), once per call of the compiled function, and once per iteration inside a
``scan``/``while`` body, as on the CPU and in JAX.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fjax.backends.cuda.records import HostCallback

__all__ = ["NAMES", "render"]

# the primitives rendered as a host call (the callbacks: the user's functions; eig: host LAPACK)
NAMES = frozenset({"pure_callback", "io_callback", "debug_callback", "eig"})
# collectives across processes (``fjax.lax.parallel_mpi``: multi-process pmap/shard_map): MPI
# calls on host buffers, since the MPI from PyPI (mpich) is not CUDA-aware
_MPI = {
    "mpi_allreduce",
    "mpi_allgather",
    "mpi_alltoall",
    "mpi_ppermute",
    "mpi_reduce_scatter",
    "mpi_gather_replicated",
    "mpi_local_block",
    "mpi_replicated",
}
NAMES = NAMES | _MPI
_WHY = {
    "eig": "LAPACK geev on the host, as JAX's GPU eig without MAGMA",
    **{n: "MPI across processes on host buffers (the MPI from PyPI is not CUDA-aware)" for n in _MPI},
}


def _label(name: str, params: dict) -> str:
    cb = params.get("callback")
    if cb is None:
        return name
    return f"{name}[{cb!r}]"


def render(prim: Any, params: dict, in_avals: list, out_avals: list, ins: list, outs: list) -> list:
    """The one ``HostCallback`` record computing ``prim`` (one of ``NAMES``) on the host."""
    impl = prim.impl
    if impl is None:
        raise NotImplementedError(f"CUDA backend: {prim.name} has no host implementation")
    many = bool(getattr(prim, "multiple_results", False))
    kw = dict(params)

    def fn(*xs: np.ndarray) -> list:
        res = impl(*xs, **kw)
        return list(res) if many else [res]

    comment = f"{prim.name}: {_WHY[prim.name]}" if prim.name in _WHY else prim.name
    return [
        HostCallback(
            fn,
            list(ins),
            list(outs),
            [(tuple(a.shape), np.dtype(a.dtype)) for a in in_avals],
            [(tuple(a.shape), np.dtype(a.dtype)) for a in out_avals],
            _label(prim.name, params),
            comment,
        )
    ]
