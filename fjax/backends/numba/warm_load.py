"""Loading compiled kernels (loop nests, control-flow loops) from numba's on-disk cache, without
numba's target refresh.

On a cache hit, ``Dispatcher.compile(sig)`` first calls ``target_context.refresh()``. The first
refresh in a process imports and installs every numba implementation registry (~250 of them; one,
``numba.np.arraymath``, imports ``scipy.linalg`` to check for BLAS): ~0.3 s on this machine, which
was most of the first call of a jitted MLP train step in a new process with a warm kernel cache.

A cached fjax kernel needs none of those registries to be loaded: its object code is
self-contained (the ``vmath``/runtime helpers are inlined at numba IR level or linked into the
cached library; environments of numba's own helpers import their module on rebuild), numba's C helpers
are registered with LLVM when the target context is created, and the only runtime it needs is
NRT (initialized here, as the refresh would). So ``load_cached`` does what ``Dispatcher.compile``
does on a hit -- read the index and data file, rebuild the compile result, install the overload --
and skips the refresh. Anything unexpected (another numba version's internals, a cache miss, a
corrupt file) returns False and the caller compiles through the public path, which refreshes.
Later compiles in the process still refresh first, as numba always does.

``ensure_compiled`` is the load-or-compile step for a module-level ``njit(cache=True)`` function
(the host kernels of ``host_kernels`` / ``conv``) whose argument types its caller knows before
the first call. Such a dispatcher stays open to further compiles, and an open dispatcher matches a
call only to an overload of exactly the call's argument types (it compiles a new one rather than
convert a writable array to a read-only overload's type), so its callers pass arrays of exactly
the types they installed: ``array_type`` describes one, ``readonly`` makes an input array match a
read-only ``array_type`` (a read-only view, no copy).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

log = logging.getLogger("fjax.lowering")


def load_cached(fn: Any, sig: tuple) -> bool:
    """Install the overload of numba dispatcher ``fn`` for ``sig`` from its disk cache.

    True when it was loaded (``fn.stats.cache_hits`` counts it, as ``fn.compile`` would); False when
    the cache has no entry for ``sig`` or loading failed, so the caller must ``fn.compile(sig)``."""
    cache = getattr(fn, "_cache", None)
    load = getattr(cache, "_load_overload", None)  # absent on NullCache (cache=False)
    if load is None:
        return False
    try:
        from numba.core.compiler_lock import global_compiler_lock  # noqa: PLC0415
        from numba.core.runtime.nrt import rtsys  # noqa: PLC0415

        ctx = fn.targetctx
        with global_compiler_lock:
            if tuple(sig) in fn.overloads:
                return True
            rtsys.initialize(ctx)
            cres = load(sig, ctx)
            if cres is None or cres.objectmode:
                return False
            ctx.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
            fn.add_overload(cres)
            fn._cache_hits[sig] += 1
        return True
    except Exception as e:  # noqa: BLE001 - any failure here only costs the normal (slower) load path
        log.debug("fjax: loading %s from numba's cache without refresh failed (%s: %s)", fn, type(e).__name__, e)
        return False


def ensure_compiled(fn: Any, sig: tuple) -> None:
    """Install ``fn``'s overload for ``sig``: from the disk cache (``load_cached``, no refresh) or,
    when it is not there, by compiling it (which refreshes and saves it to the cache)."""
    sig = tuple(sig)
    if sig not in fn.overloads and not load_cached(fn, sig):
        fn.compile(sig)


def array_type(dtype: Any, ndim: int, readonly: bool = False) -> Any:
    """numba's type of an aligned C-contiguous ``ndim``-d array of ``dtype``."""
    from numba import from_dtype, types  # noqa: PLC0415

    return types.Array(from_dtype(np.dtype(dtype)), ndim, "C", readonly=readonly)


def readonly(a: np.ndarray) -> np.ndarray:
    """``a`` if it is read-only, else a read-only view of it (for an argument typed ``readonly=True``)."""
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a
