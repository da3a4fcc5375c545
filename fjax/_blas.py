"""How many threads numpy's OpenBLAS may use for one GEMM, chosen by the GEMM's size.

OpenBLAS parallelizes a GEMM over its whole thread team once it has more than ~262k
multiply-adds (m*n*k), and its worker threads busy-wait for each other. A small or medium GEMM
gains little from that on an idle machine, and on a loaded one (other processes on the cores)
it loses badly: the step waits for a descheduled worker. Measured here (2 cores, two other busy
processes), the digits MLP + Adam train step (64-128-64-10, batch 64, 8 GEMMs of ~0.5M
multiply-adds) took 25 ms with OpenBLAS's default team of 2 and 0.75 ms with one thread.

So fjax runs the GEMMs it issues through numpy (``jit``'s ``Dot`` steps, eager ``dot_general``)
single-threaded below ``PARALLEL_MACS`` multiply-adds, and above it with the library's default
team unless the load average says other processes occupy the cores (``threads_for``). The count
is set through the library's own ``openblas_set_num_threads`` (found by symbol name in the
OpenBLAS that numpy has loaded, located through /proc/self/maps or numpy's wheel directory) and
put back when fjax's call returns (``restore``). When no OpenBLAS is found (another BLAS, a
platform without /proc), nothing is changed.
"""

from __future__ import annotations

import ctypes
import glob
import importlib.util
import os
import time
from typing import Any, Callable

import numpy as np

# below this many multiply-adds OpenBLAS itself runs single-threaded: nothing to choose
SERIAL_MACS = 1 << 18
# from this many multiply-adds (256^3) a GEMM uses the library's default thread team
PARALLEL_MACS = 1 << 24

# (set, get) symbol names: numpy's wheels (scipy-openblas, ILP64 suffix), scipy's, plain OpenBLAS
_SYMBOLS = (
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
)


def _candidate_libs() -> list[str]:
    """Paths of the OpenBLAS libraries loaded in this process, numpy's own first."""
    paths: list[str] = []
    try:
        with open("/proc/self/maps") as f:
            for ln in f:
                p = ln.split()[-1] if ln.strip() else ""
                if "openblas" in os.path.basename(p).lower() and p not in paths:
                    paths.append(p)
    except OSError:
        pass
    libs = os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs")
    for p in sorted(glob.glob(os.path.join(libs, "*openblas*"))):
        p = os.path.realpath(p)
        if p not in paths:
            paths.append(p)
    numpy_dir = os.path.realpath(os.path.join(os.path.dirname(np.__file__), ".."))
    return sorted(paths, key=lambda p: not os.path.realpath(p).startswith(numpy_dir))


def _bind(path: str) -> tuple[Callable | None, Callable | None]:
    """(set_num_threads, get_num_threads) of the OpenBLAS at ``path``, or (None, None)."""
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return None, None
    for set_name, get_name in _SYMBOLS:
        s, g = getattr(lib, set_name, None), getattr(lib, get_name, None)
        if s is not None and g is not None:
            s.argtypes, s.restype = [ctypes.c_int], None
            g.argtypes, g.restype = [], ctypes.c_int
            return s, g
    return None, None


def _find() -> tuple[Callable | None, Callable | None, str | None]:
    for path in _candidate_libs():
        s, g = _bind(path)
        if s is not None:
            return s, g, os.path.basename(path)
    return None, None, None


_set, _get, LIBRARY = _find()
DEFAULT = max(1, int(_get())) if _get is not None else 1  # the team size numpy's BLAS starts with
_current = DEFAULT
# other OpenBLAS libraries whose thread count follows numpy's: (set, get, default team size)
_others: list = []
_scipy_looked = [False]


def include_scipy() -> None:
    """Also set the thread count of scipy's OpenBLAS (the one numba's ``np.dot`` calls, e.g. in
    the compiled conv kernels), found in scipy's wheel directory without importing scipy."""
    if _scipy_looked[0]:
        return
    _scipy_looked[0] = True
    try:
        spec = importlib.util.find_spec("scipy")
    except (ImportError, ValueError):
        return
    for d in list(spec.submodule_search_locations or []) if spec is not None else []:
        for path in sorted(glob.glob(os.path.join(d, "..", "scipy.libs", "*openblas*"))):
            if os.path.basename(path) == LIBRARY:
                continue
            s, g = _bind(path)
            if s is not None:
                default = max(1, int(g()))
                if _current != default:
                    s(int(_current))
                _others.append((s, g, default))
                return


_load = [0.0, -1.0]  # (1-minute load average, when it was read)


def machine_busy(now: float | None = None) -> bool:
    """Whether other work keeps the cores busy: the 1-minute load average exceeds the core count
    by more than half a core (this process's own GEMM team counts for up to the core count). Read
    at most once a second."""
    now = time.monotonic() if now is None else now
    if now - _load[1] >= 1.0:
        try:
            _load[0] = os.getloadavg()[0]
        except OSError:
            _load[0] = 0.0
        _load[1] = now
    return _load[0] > (os.cpu_count() or 1) + 0.5


def threads_for(macs: int, max_threads: int | None = None, busy: bool | None = None) -> int:
    """Threads for a GEMM of ``macs`` multiply-adds (m*n*k, times the batch): one below
    ``PARALLEL_MACS`` or while the machine is busy (``machine_busy``: a team then waits for
    descheduled workers -- 256x784 @ 784x512 took 26 ms with 2 threads, 3.6 ms with one, beside
    other sessions' work here), else ``max_threads`` (the library's default team)."""
    max_threads = DEFAULT if max_threads is None else max_threads
    if macs < PARALLEL_MACS:
        return 1
    busy = machine_busy() if busy is None else busy
    return 1 if busy else max_threads


def use(n: int) -> None:
    """Let numpy's OpenBLAS (and scipy's, after ``include_scipy``) use ``n`` threads (a no-op
    when they already do, or without one)."""
    global _current
    if n != _current and _set is not None:
        _set(int(n))
        for s, _, _ in _others:
            s(int(n))
        _current = n


def for_gemm(macs: int) -> None:
    """Set the thread count for a GEMM of ``macs`` multiply-adds (``threads_for``)."""
    use(threads_for(macs))


def restore() -> None:
    """Give numpy's OpenBLAS (and the others) back their default thread counts (after fjax's GEMMs)."""
    if _current != DEFAULT:
        use(DEFAULT)
        for s, _, default in _others:
            if default != DEFAULT:
                s(default)


def matmul(x: np.ndarray, y: np.ndarray, macs: int) -> Any:
    """``np.matmul(x, y)`` with the thread count for its size, restored afterwards."""
    if macs <= SERIAL_MACS or DEFAULT <= 1:
        return np.matmul(x, y)
    for_gemm(macs)
    try:
        return np.matmul(x, y)
    finally:
        restore()
