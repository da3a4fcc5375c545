"""The CUDA backend: the same kernel IR rendered to CUDA C and run through cupy RawKernels.

- ``ops``: the op table (scalar IR ops -> CUDA C expressions, with CUDA's documented ULP bounds) and
  the device prelude;
- ``render``: loop nests -> ``__global__`` kernels (grid-stride elementwise loops; reductions with
  warp shuffles, shared memory and a deterministic second pass);
- ``host_ops``: kernels for the steps that do not fuse (cumulative ops, arg-reductions, indexed
  updates, random_fma);
- ``plan``: a program -> one translation unit + the host-side launch plan (launches, cuBLAS GEMMs,
  loops and branches with sub-plans) and its executor;
- ``backend``: ``CudaBackend`` (``source``, ``plan``, ``compile(program, runtime)``);
- ``runtime``: the cupy runtime (imported lazily; needs a GPU); ``emulate``: the same runtime API on
  the CPU (the generated source compiled with g++ against ``cuda_emu.h``), for verification.

Nothing here imports cupy at import time, so lowering to CUDA text works on machines without a GPU.
"""
