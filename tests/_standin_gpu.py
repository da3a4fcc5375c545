"""Shared by the tests that run the CUDA backend's kernels on the cupy stand-in (the emulator):
``installed()`` puts the stand-in in place of cupy (a GPU device appears) and restores the
platforms after; ``both(f, *xs)`` runs ``jit(f)`` on the GPU and on the CPU."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import numpy as np

import fjax


@contextlib.contextmanager
def installed() -> Iterator[Any]:
    from fjax.backends.cuda import cupy_standin

    old = fjax.config.jax_platforms
    fjax.config.update("jax_platforms", None)
    cupy_standin.install(compute=True)
    try:
        yield cupy_standin
    finally:
        cupy_standin.uninstall()
        fjax.config.update("jax_platforms", old)


def both(f: Callable, *xs: Any, x64: bool = False) -> tuple:
    """``jit(f)`` on the (stand-in) GPU and on the CPU, as numpy arrays (pytrees as pytrees); the
    GPU results are checked to live on the GPU."""
    ctx = fjax.enable_x64() if x64 else contextlib.nullcontext()
    with ctx:
        g = fjax.jit(f)
        gpu, cpu = fjax.devices("gpu")[0], fjax.devices("cpu")[0]
        got = g(*[fjax.device_put(np.asarray(x), gpu) for x in xs])
        assert all(next(iter(a.devices())).platform == "gpu" for a in fjax.tree_util.tree_leaves(got))
        want = g(*[fjax.device_put(np.asarray(x), cpu) for x in xs])
        return fjax.tree_util.tree_map(np.asarray, got), fjax.tree_util.tree_map(np.asarray, want)
