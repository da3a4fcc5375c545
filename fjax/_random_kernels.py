"""Compiled eager kernels for ``fjax.random``: threefry2x32 over counter arrays and the
correctly rounded float32/float64 fused multiply-adds that the samplers' polynomials use.

Eagerly, these primitives otherwise run as chains of numpy ops with float64 temporaries
(a 5000x5000 ``random.normal`` took ~28 s); one compiled loop each does the same arithmetic,
bit for bit. Only used for concrete inputs outside any trace and above a size where numba's
call overhead does not matter; compiled on first use and cached on disk by numba.

Importing this module (as ``fjax.random`` does) imports neither numba nor the numba backend: the
kernels below are plain Python functions until the first call of a wrapper (``threefry2x32``,
``fma_f32``, ``fma_f64``), which imports the backend and replaces each with its ``njit``
dispatcher in this module's globals (where numba, compiling one kernel, finds the others).

A call must not wait for numba: with ``fjax_tiered_compile`` on (the default, "auto"),
``threefry2x32`` and ``fma_f32`` run the same arithmetic as numpy expressions until one
background thread has compiled the kernels (``in_background``, also used by
fjax/_random_eager.py for whole samplers); with it off they compile on first use, as jit does.
``fma_f64`` has no numpy equivalent and always compiles on first use.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import itertools
import logging
import os
import sys
import threading
from typing import Any, Callable, Hashable, Iterator

import numpy as np

#: arrays at least this large use the compiled kernels
MIN_SIZE = 1 << 16

_KERNELS: list[Callable] = []  # compiled by ``_compile`` on first use, in definition order
_compiled = False
_compile_lock = threading.Lock()
_hw_fma: Any = None  # ``fjax.backends.numba.runtime.fma`` (LLVM's fma), set by ``_compile``
_ready = False  # threefry2x32_flat and fma_f32_flat are compiled (or loaded) for the one
# signature each that the wrappers call them with (read-only inputs, a writable output)

log = logging.getLogger("fjax.random")


def _kernel(fn: Callable) -> Callable:
    """Mark ``fn`` as a numba kernel of this module (``njit(cache=True, nogil=True)`` on first use)."""
    _KERNELS.append(fn)
    return fn


def _compile() -> None:
    global _compiled, _hw_fma
    with _compile_lock:
        if _compiled:
            return
        from numba import njit  # noqa: PLC0415

        # importing the backend package first gives numba a writable cache directory even for a
        # read-only install without HOME; its disk_cache seals the object code of these kernels
        from fjax.backends.numba import disk_cache  # noqa: PLC0415
        from fjax.backends.numba.runtime import fma  # noqa: PLC0415

        _hw_fma = fma
        g = globals()
        for fn in _KERNELS:
            g[fn.__name__] = njit(cache=True, nogil=True)(fn)
        disk_cache.guard_module_caches([sys.modules[__name__]])
        _compiled = True


# ---- one background thread that compiles for fjax.random (these kernels, eager samplers) -------

_bg_lock = threading.Lock()
_bg_wake = threading.Condition(_bg_lock)
_bg_queue: list = []  # heap of (priority, sequence, key, job)
_bg_pending: set = set()  # keys queued or running
_bg_thread: list = []
_bg_seq = itertools.count()
bg_stats = {"queued": 0, "done": 0, "failed": 0}


def in_background(key: Hashable, job: Callable[[], None], priority: int = 0) -> bool:
    """Run ``job`` on the compile thread unless ``key`` is queued or running already (True when
    queued). Lower ``priority`` runs first; a job that raises is logged and counted, nothing else."""
    with _bg_lock:
        if key in _bg_pending:
            return False
        _bg_pending.add(key)
        heapq.heappush(_bg_queue, (priority, next(_bg_seq), key, job))
        bg_stats["queued"] += 1
        if not _bg_thread:
            t = threading.Thread(target=_bg_loop, name="fjax-random-compile", daemon=True)
            _bg_thread.append(t)
            t.start()
        _bg_wake.notify()
    return True


def is_pending(key: Hashable) -> bool:
    """Whether ``key``'s job is queued or running."""
    return key in _bg_pending


def _bg_loop() -> None:
    while True:
        with _bg_lock:
            while not _bg_queue:
                _bg_wake.wait()
            _, _, key, job = heapq.heappop(_bg_queue)
        try:
            job()
            bg_stats["done"] += 1
        except Exception:  # noqa: BLE001 - the callers keep evaluating with numpy
            bg_stats["failed"] += 1
            log.warning("fjax.random: compiling in the background failed; numpy keeps serving", exc_info=True)
        finally:
            with _bg_lock:
                _bg_pending.discard(key)
                _bg_wake.notify_all()


def wait_background(timeout: float | None = None) -> bool:
    """Block until the compile thread has no work left; False on timeout."""
    import time  # noqa: PLC0415

    end = None if timeout is None else time.monotonic() + timeout
    with _bg_lock:
        while _bg_pending:
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return False
            _bg_wake.wait(left)
    return True


def _after_fork() -> None:
    # the child has no compile thread: forget the parent's (queued jobs are dropped; their callers
    # queue them again on their next call)
    global _bg_lock, _bg_wake
    _bg_lock = threading.Lock()
    _bg_wake = threading.Condition(_bg_lock)
    _bg_queue.clear()
    _bg_pending.clear()
    _bg_thread.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _warm() -> None:
    """Compile (or load from numba's cache) the kernels the size-gated wrappers call."""
    global _ready
    if _ready:
        return
    _compile()
    u = _readonly(np.zeros(1, np.uint32))
    threefry2x32_flat(np.uint32(0), np.uint32(0), u, u, np.empty(1, np.uint32), np.empty(1, np.uint32))
    f = _readonly(np.zeros(1, np.float32))
    fma_f32_flat(f, f, f, np.empty(1, np.float32))
    _ready = True
    try:  # later processes load them instead of going through numpy first (a hint: see _marker)
        path = _marker()
        if path is not None and not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w"):
                pass
    except OSError:
        pass


def _marker() -> str | None:
    """A file saying that a process compiled these kernels into numba's cache (keyed as numba keys
    it: this file's path and stamp; where the cache lives). Stale, it costs a compile, never a
    wrong result: numba checks its cache itself."""
    from fjax.config import config  # noqa: PLC0415

    if not config.fjax_disk_cache:
        return None
    st = os.stat(__file__)
    stamp = f"{os.path.abspath(__file__)}|{st.st_mtime_ns}|{st.st_size}|{os.environ.get('NUMBA_CACHE_DIR', '')}"
    name = "random_kernels-" + hashlib.sha1(f"{stamp}|{sys.version}".encode()).hexdigest()[:24]
    return os.path.join(os.path.expanduser(str(config.fjax_cache_dir)), "programs", name)


def _on_disk() -> bool:
    try:
        path = _marker()
        return path is not None and os.path.exists(path)
    except OSError:
        return False


#: from this size the numpy evaluation of a sampler without these kernels (~0.2 s for a normal
#: of 2**18 samples, its fma steps in float64) costs about what importing numba and loading them does
LOAD_MIN_SIZE = 1 << 18


def available(size: int = 0) -> bool:
    """Whether ``threefry2x32`` and ``fma_f32`` should run compiled now (for ``size`` elements).

    Compiled in this process: yes. With ``fjax_tiered_compile`` off they compile now (yes). With
    it "auto", they load now when a process compiled them into numba's cache before and loading
    is cheap next to the numpy evaluation (numba already imported, or ``size >= LOAD_MIN_SIZE``).
    Else their compile is queued on the background thread and the caller evaluates with numpy
    meanwhile (no)."""
    if _ready:
        return True
    from fjax.backends import tiering  # noqa: PLC0415

    mode = tiering.mode()
    if mode == "off" or threading.current_thread() in _bg_thread:
        _warm()
        return True
    if mode == "auto" and ("numba" in sys.modules or size >= LOAD_MIN_SIZE) and _on_disk():
        _warm()
        return True
    if getattr(_deferring, "on", False):
        _deferring.wanted = True
    else:
        in_background("random_kernels", _warm, priority=-1)
    return False


_deferring = threading.local()


@contextlib.contextmanager
def compile_after() -> Iterator[None]:
    """Inside, ``available()`` notes that the kernels should compile instead of queueing their
    compile; it is queued on leaving (so the compile thread does not start during an op-by-op
    call made inside, sharing the GIL with it, and runs the jobs queued inside first)."""
    if getattr(_deferring, "on", False):
        yield
        return
    _deferring.on, _deferring.wanted = True, False
    try:
        yield
    finally:
        _deferring.on = False
        if _deferring.wanted and not _ready:
            # first in line: a second or so cold, and it makes the op-by-op evaluation of the
            # calls made while the samplers compile ~10x faster
            in_background("random_kernels", _warm, priority=-1)


def _readonly(x: np.ndarray) -> np.ndarray:
    """A read-only view: numba types read-only and writable arrays apart, so giving the kernels
    read-only inputs always keeps one compiled signature per kernel."""
    v = x.view()
    v.flags.writeable = False
    return v


@_kernel
def _rotl(x: np.uint32, d: int) -> np.uint32:
    return np.uint32((x << np.uint32(d)) | (x >> np.uint32(32 - d)))


@_kernel
def threefry2x32_flat(
    k1: np.uint32, k2: np.uint32, x1: np.ndarray, x2: np.ndarray, o1: np.ndarray, o2: np.ndarray
) -> None:
    """threefry2x32 (20 rounds) of the counter pairs ``(x1[i], x2[i])`` into ``(o1[i], o2[i])``."""
    k3 = np.uint32(k1 ^ k2 ^ np.uint32(0x1BD11BDA))
    ks = (k1, k2, k3)
    for i in range(x1.size):
        a = np.uint32(x1[i] + k1)
        b = np.uint32(x2[i] + k2)
        for rnd in range(5):
            if rnd % 2 == 0:
                a = np.uint32(a + b)
                b = a ^ _rotl(b, 13)
                a = np.uint32(a + b)
                b = a ^ _rotl(b, 15)
                a = np.uint32(a + b)
                b = a ^ _rotl(b, 26)
                a = np.uint32(a + b)
                b = a ^ _rotl(b, 6)
            else:
                a = np.uint32(a + b)
                b = a ^ _rotl(b, 17)
                a = np.uint32(a + b)
                b = a ^ _rotl(b, 29)
                a = np.uint32(a + b)
                b = a ^ _rotl(b, 16)
                a = np.uint32(a + b)
                b = a ^ _rotl(b, 24)
            a = np.uint32(a + ks[(rnd + 1) % 3])
            b = np.uint32(b + ks[(rnd + 2) % 3] + np.uint32(rnd + 1))
        o1[i] = a
        o2[i] = b


@_kernel
def fma_f32_flat(a: np.ndarray, b: np.ndarray, c: np.ndarray, out: np.ndarray) -> None:
    """``a*b + c`` rounded once to float32: the product is exact in float64; a float64 sum that
    lands exactly halfway between two float32 values is resolved by the sum's rounding error."""
    for i in range(out.size):
        x = np.float64(a[i]) * np.float64(b[i])
        z = np.float64(c[i])
        s = x + z
        bv = s - x
        err = (x - (s - bv)) + (z - bv)
        r64 = np.float64(np.float32(s))
        o = 2.0 * s - r64
        # s is a tie between the float32 values r64 and o (never true for non-finite s): round
        # towards the exact value s + err; written branch-free so the loop vectorizes
        tie = (err != 0.0) & (o != r64) & (np.float64(np.float32(o)) == o)
        pick = max(r64, o) if err > 0.0 else min(r64, o)
        r = np.float32(pick if tie else r64)
        out[i] = r


@_kernel
def fma_f64_flat(a: np.ndarray, b: np.ndarray, c: np.ndarray, out: np.ndarray) -> None:
    """``a*b + c`` rounded once in float64 (LLVM's fma, as jit lowers the primitive)."""
    for i in range(out.size):
        out[i] = _hw_fma(a[i], b[i], c[i])


def _rotl_np(x: np.ndarray, d: int) -> np.ndarray:
    return (x << np.uint32(d)) | (x >> np.uint32(32 - d))


def _threefry2x32_numpy(k1: np.uint32, k2: np.uint32, x1: np.ndarray, x2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``threefry2x32_flat`` as numpy expressions (uint32 arithmetic wraps alike: the same bits)."""
    ks = (k1, k2, np.uint32(k1 ^ k2 ^ np.uint32(0x1BD11BDA)))
    a = x1 + k1
    b = x2 + k2
    for rnd in range(5):
        for r in (13, 15, 26, 6) if rnd % 2 == 0 else (17, 29, 16, 24):
            a += b
            b = a ^ _rotl_np(b, r)
        a += ks[(rnd + 1) % 3]
        b += np.uint32((int(ks[(rnd + 2) % 3]) + rnd + 1) & 0xFFFFFFFF)
    return a, b


def _fma_f32_numpy(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``fma_f32_flat`` as numpy expressions (each step the same IEEE operation: the same bits)."""
    with np.errstate(all="ignore"):
        x = a.astype(np.float64) * b.astype(np.float64)
        z = c.astype(np.float64)
        s = x + z
        bv = s - x
        err = (x - (s - bv)) + (z - bv)
        r64 = s.astype(np.float32).astype(np.float64)
        o = 2.0 * s - r64
        tie = (err != 0.0) & (o != r64) & (o.astype(np.float32).astype(np.float64) == o)
        pick = np.where(err > 0.0, np.maximum(r64, o), np.minimum(r64, o))
        return np.where(tie, pick, r64).astype(np.float32)


def threefry2x32(k1: np.ndarray, k2: np.ndarray, x1: np.ndarray, x2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """numpy in, numpy out: the threefry2x32 hash (keys rank 0, counters of one shape); compiled
    when ``available()``, else numpy expressions (the same bits)."""
    k1, k2 = np.uint32(k1), np.uint32(k2)
    x1 = np.ascontiguousarray(x1, np.uint32)
    x2 = np.ascontiguousarray(x2, np.uint32)
    if not available(x1.size):
        return _threefry2x32_numpy(k1, k2, x1, x2)
    o1 = np.empty_like(x1)
    o2 = np.empty_like(x2)
    threefry2x32_flat(k1, k2, _readonly(x1.reshape(-1)), _readonly(x2.reshape(-1)), o1.reshape(-1), o2.reshape(-1))
    return o1, o2


def fma_f32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """numpy in, numpy out: float32 ``a*b + c`` with one rounding (broadcasting the operands);
    compiled when ``available()``, else numpy expressions (the same bits)."""
    a, b, c = (np.ascontiguousarray(v, np.float32) for v in np.broadcast_arrays(a, b, c))
    if not available(a.size):
        return _fma_f32_numpy(a, b, c)
    out = np.empty(a.shape, np.float32)
    fma_f32_flat(_readonly(a.reshape(-1)), _readonly(b.reshape(-1)), _readonly(c.reshape(-1)), out.reshape(-1))
    return out


def fma_f64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """numpy in, numpy out: float64 ``a*b + c`` with one rounding (broadcasting the operands)."""
    if not _compiled:
        _compile()
    a, b, c = np.broadcast_arrays(a, b, c)
    shape = a.shape  # (ascontiguousarray makes a 0-d array 1-d)
    a, b, c = (np.ascontiguousarray(v, np.float64).reshape(-1) for v in (a, b, c))
    out = np.empty(a.shape, np.float64)
    if out.size:
        fma_f64_flat(a, b, c, out)
    return out.reshape(shape)
