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
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable

import numpy as np

#: arrays at least this large use the compiled kernels
MIN_SIZE = 1 << 16

_KERNELS: list[Callable] = []  # compiled by ``_compile`` on first use, in definition order
_compiled = False
_compile_lock = threading.Lock()
_hw_fma: Any = None  # ``fjax.backends.numba.runtime.fma`` (LLVM's fma), set by ``_compile``


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


def threefry2x32(k1: np.ndarray, k2: np.ndarray, x1: np.ndarray, x2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """numpy in, numpy out: the threefry2x32 hash (keys rank 0, counters of one shape)."""
    if not _compiled:
        _compile()
    x1 = np.ascontiguousarray(x1, np.uint32)
    x2 = np.ascontiguousarray(x2, np.uint32)
    o1 = np.empty_like(x1)
    o2 = np.empty_like(x2)
    threefry2x32_flat(np.uint32(k1), np.uint32(k2), x1.reshape(-1), x2.reshape(-1), o1.reshape(-1), o2.reshape(-1))
    return o1, o2


def fma_f32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """numpy in, numpy out: float32 ``a*b + c`` with one rounding (broadcasting the operands)."""
    if not _compiled:
        _compile()
    a, b, c = (np.ascontiguousarray(v, np.float32) for v in np.broadcast_arrays(a, b, c))
    out = np.empty(a.shape, np.float32)
    fma_f32_flat(a.reshape(-1), b.reshape(-1), c.reshape(-1), out.reshape(-1))
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
