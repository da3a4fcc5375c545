"""Run under ``mpiexec -n 2`` by tests/test_distributed.py: one rank fails in the way argv[1] names;
the job must end promptly with an error naming the rank, not hang."""

import os
import sys
import time

import fjax

mode = sys.argv[1]
rank_env = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
if mode == "init_timeout" and rank_env == 1:
    time.sleep(2.5)  # arrives long after the others gave up
fjax.distributed.initialize(initialization_timeout=1 if mode == "init_timeout" else 60)

import fjax.numpy as jnp  # noqa: E402
from fjax import lax  # noqa: E402

r = fjax.process_index()
f = fjax.pmap(lambda x: lax.psum(x, "i"), axis_name="i")
if mode == "raise":
    if r == 1:
        raise RuntimeError("boom on purpose")
    f(jnp.ones((1, 3)))
elif mode == "die":
    if r == 1:
        os._exit(3)
    f(jnp.ones((1, 3)))
elif mode == "shape":
    f(jnp.ones((1, 3 + r)))
elif mode == "shape_seen":  # both shapes ran on every rank first (fingerprints and pmap's fast path cached)
    for n in (3, 4, 3, 4):
        f(jnp.ones((1, n)))
    f(jnp.ones((1, 3 + r)))
elif mode == "exit_before":  # rank 1 leaves normally; rank 0 calls a collective after that
    if r == 1:
        sys.exit(0)
    time.sleep(1.5)
    f(jnp.ones((1, 3)))
elif mode == "exit_during":  # rank 0 is already waiting in the collective when rank 1 leaves
    f(jnp.ones((1, 3)))  # both ranks once: compiled, so rank 0's next call enters the collective at once
    if r == 1:
        time.sleep(2.0)  # (0.5 s raced rank 0's first compile on a loaded machine: "already exited")
        sys.exit(0)
    f(jnp.ones((1, 3)))
elif mode == "hang":  # rank 1 never arrives: rank 0 gives up after fjax_mpi_timeout
    if r == 1:
        time.sleep(60)
    print(f"started {r}")  # not flushed: the abort must flush it (stdout is a pipe, block-buffered)
    fjax.config.update("fjax_mpi_timeout", 1.0)
    f(jnp.ones((1, 3)))
elif mode == "ok":  # every rank ends normally after its collectives: no false alarm at exit
    print(f"sum {r}", f(jnp.ones((1, 3)) * (r + 1)).tolist(), flush=True)
print(f"finished {r}", flush=True)
