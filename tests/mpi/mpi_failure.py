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
print(f"finished {r}", flush=True)
