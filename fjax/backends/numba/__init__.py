"""The numba CPU backend: renders the kernel IR to Python/numba source and compiles it.

- ``program``: the program emitter (one Python function per jaxpr, memory planning);
- ``render``: the loop-nest renderer (one njit kernel per fused loop nest) and its scheduling;
- ``runtime``: scalar helpers the generated kernels call (``rt.``);
- ``loops``: compiled control flow (``lp.``);
- ``vmath``: vectorizable float32/float64 math (``vm.``);
- ``host_kernels`` and ``conv``: compiled host kernels (argmax, cumsum, scatter-add, convolution);
- ``disk_cache``: generated sources on disk, keyed by hash; ``warm_load``: loading numba's cached
  object code without its registry refresh.
"""
