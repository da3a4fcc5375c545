"""GEMMs on all cores by work sharing, without OpenBLAS's thread team (``jit``'s large ``Dot`` steps).

OpenBLAS parallelizes one GEMM over a team whose threads busy-wait for each other between its
phases. On an idle machine that runs 256x784 @ 784x512 in 0.47 ms on this 2-core machine (0.87 ms on
one thread), but when another process holds a core the team waits a scheduler tick for its
descheduled member: the same GEMM took 8-24 ms, and the MLP train step 13 ms instead of 3.
``fjax._blas`` guarded against that with the 1-minute load average, which lags by minutes.

Here a GEMM ``o = op(a) @ op(b)`` is cut into a few blocks of output columns (or rows, whichever
copies less: each block packs the other operand whole) and every block is one single-threaded
call of the same OpenBLAS. The calling thread and one helper thread per extra core claim blocks
from a shared counter, so nobody ever waits for a block nobody has started: with the helper on
the other core the blocks run two at a time (the splits cost 2-5%), with the helper descheduled,
asleep or absent the caller runs them all, and the GEMM takes its one-thread time. The only wait
is for a block already running to finish. While the load average says other processes hold the
cores but the caller's (``cores_busy``: the kernel's count of runnable threads now) a GEMM is one
call on the calling thread: waking the helper then lets the scheduler put it on the caller's core.

The helper is a thread running a compiled loop (no GIL): after each job it spins ~50 us, then
yields the core (``sched_yield``) a few hundred times, then sleeps on a futex that the next job's
caller wakes (elsewhere than Linux it polls asleep every 0.2 ms), so the GEMMs of a training step
find it awake while an idle process costs nothing. Jobs are published through a small int64
control block with atomic operations:

- ``SEQ``: the job number, stored last when a job is published;
- ``NEXT``: ``job << 32 | nblocks << 16 | next block``: the caller claims blocks with fetch-add,
  a helper with compare-and-swap on the job number it read the parameters for, so a helper that
  read a later job's half-written parameters never claims a block with them (the caller writes
  a job's parameters only after every block of the previous one was claimed and finished);
- ``DONE``: blocks finished; the caller returns when all are;
- ``OWNER``: one caller at a time (another thread's GEMM meanwhile runs alone, single-threaded);
- ``WAKE``: 1 while the helper sleeps (or is about to); ``HELPED``: blocks the helper ran.

Correctness never depends on the helper: without it (no ``sched_yield``/``usleep`` symbols, after
``fork``, ``FJAX_GEMM_THREADS=1``) the caller runs every block. The helper stops at exit.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import platform
import sys
import threading
import time

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import make_array

from fjax import _blas
from fjax.backends.numba import loops

__all__ = ["MIN_PAR_MACS", "available", "gemm", "run", "threads"]

# control block slots (int64; the hot words on separate 64-byte lines)
SEQ, NEXT, DONE, STOP, OWNER, WAKE, HELPED, PARAMS = 0, 8, 16, 24, 32, 40, 48, 56
_TIMEOUT = 50  # a futex wait's timespec (seconds, nanoseconds): a sleeping helper looks every 1 s
_NPARAMS = 24
_CTL_SIZE = PARAMS + _NPARAMS
_MASK16 = 0xFFFF
_JOB_MASK = 0x7FFFFFFF
# GEMMs of fewer multiply-adds run in one call on the calling thread: below this the split's cost
# and the helper's wake-up are not repaid (256x512 @ 512x10 is 1.3M; the MLP's large ones 67-103M)
MIN_PAR_MACS = 1 << 22
# block boundaries are multiples of this many elements (the SIMD kernels' widths)
_ALIGN = 16
# the idle helper: ~50 us of pause-spins (25 ns each here), then up to ~0.1-0.3 ms of sched_yield
# calls (other runnable threads get the core), then asleep on a futex until the next job: the GEMMs
# of a training step (50-200 us apart) find it awake, and an idle process costs nothing
_SPINS, _YIELDS = 2000, 300
_WAIT_SPINS = 80000


# ---- atomics and libc calls for compiled code ----------------------------------------------------


def _slot_ptr(context, builder, arrty, arr, idx):  # noqa: ANN001, ANN202
    ary = make_array(arrty)(context, builder, arr)
    return builder.gep(ary.data, [idx])


@intrinsic
def _load(typingctx, arr, idx):  # noqa: ANN001, ANN201, ARG001
    def codegen(context, builder, sig, args):  # noqa: ANN001, ANN202
        return builder.load_atomic(_slot_ptr(context, builder, sig.args[0], args[0], args[1]), "seq_cst", 8)

    return types.int64(arr, idx), codegen


@intrinsic
def _store(typingctx, arr, idx, val):  # noqa: ANN001, ANN201, ARG001
    def codegen(context, builder, sig, args):  # noqa: ANN001, ANN202
        v = context.cast(builder, args[2], sig.args[2], types.int64)
        builder.store_atomic(v, _slot_ptr(context, builder, sig.args[0], args[0], args[1]), "seq_cst", 8)
        return context.get_dummy_value()

    return types.none(arr, idx, val), codegen


@intrinsic
def _fetch_add(typingctx, arr, idx, val):  # noqa: ANN001, ANN201, ARG001
    def codegen(context, builder, sig, args):  # noqa: ANN001, ANN202
        v = context.cast(builder, args[2], sig.args[2], types.int64)
        return builder.atomic_rmw("add", _slot_ptr(context, builder, sig.args[0], args[0], args[1]), v, "seq_cst")

    return types.int64(arr, idx, val), codegen


@intrinsic
def _cas(typingctx, arr, idx, old, new):  # noqa: ANN001, ANN201, ARG001
    def codegen(context, builder, sig, args):  # noqa: ANN001, ANN202
        o = context.cast(builder, args[2], sig.args[2], types.int64)
        n = context.cast(builder, args[3], sig.args[3], types.int64)
        res = builder.cmpxchg(_slot_ptr(context, builder, sig.args[0], args[0], args[1]), o, n, "seq_cst", "seq_cst")
        return builder.extract_value(res, 1)

    return types.boolean(arr, idx, old, new), codegen


_X86 = platform.machine().lower() in ("x86_64", "amd64", "i686", "x86")


@intrinsic
def _pause(typingctx):  # noqa: ANN001, ANN201, ARG001
    """The spin-wait hint (x86 ``pause``; nothing elsewhere)."""

    def codegen(context, builder, sig, args):  # noqa: ANN001, ANN202
        if _X86:
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse2.pause"
            )
            builder.call(fn, [])
        return context.get_dummy_value()

    return types.none(), codegen


# futex(2) through libc's syscall(): the system call number by architecture (Linux); elsewhere the
# idle helper polls every 0.2 ms asleep (usleep)
_SYS_FUTEX = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98}.get(platform.machine().lower(), -1)
_FUTEX_WAIT, _FUTEX_WAKE = 128, 129  # the _PRIVATE forms
_FUTEX = _SYS_FUTEX > 0 and sys.platform.startswith("linux")


def _register_libc() -> bool:
    try:
        import llvmlite.binding as llvm  # noqa: PLC0415

        libc = ctypes.CDLL(None)
        for name in ("sched_yield", "usleep", "syscall"):
            llvm.add_symbol("fjax_" + name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)
        return True
    except (OSError, AttributeError, TypeError):
        return False


_LIBC = _register_libc()
_yield = types.ExternalFunction("fjax_sched_yield", types.int32())
_usleep = types.ExternalFunction("fjax_usleep", types.int32(types.uint32))
_syscall = types.ExternalFunction("fjax_syscall", types.int64(*[types.int64] * 6))


@njit(cache=True, nogil=True)
def _sleep(ctl):  # noqa: ANN001, ANN201
    """Block the helper until ``_wake`` (or a timeout) while ``ctl[WAKE]`` is 1."""
    if _FUTEX:
        _syscall(_SYS_FUTEX, ctl.ctypes.data + WAKE * 8, _FUTEX_WAIT, 1, ctl.ctypes.data + _TIMEOUT * 8, 0)
    else:
        _usleep(200)


@njit(cache=True, nogil=True)
def _wake(ctl):  # noqa: ANN001, ANN201
    """Wake the helper if it sleeps (or is about to: it re-checks ``SEQ`` after setting ``WAKE``)."""
    if _load(ctl, WAKE) != 0:
        _store(ctl, WAKE, 0)
        if _FUTEX:
            _syscall(_SYS_FUTEX, ctl.ctypes.data + WAKE * 8, _FUTEX_WAKE, 1, 0, 0)


_i32, _i64 = types.int32, types.int64


def _gemm_sig(t: types.Type) -> types.Signature:
    # cblas_?gemm(layout, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc), 64-bit ints,
    # the operand pointers as integers (passed in the same registers as pointers)
    return types.void(_i32, _i32, _i32, _i64, _i64, _i64, t, _i64, _i64, _i64, _i64, t, _i64, _i64)


_sgemm = types.ExternalFunction("fjax_sgemm64", _gemm_sig(types.float32))
_dgemm = types.ExternalFunction("fjax_dgemm64", _gemm_sig(types.float64))

# ---- the compiled parts --------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _block(p, lo, hi):  # noqa: ANN001, ANN201
    """Output columns (or rows) ``lo:hi`` of the job whose parameters are ``p``."""
    pa, pb, po, m, n, k, lda, ldb, ldc, ta, tb, isz, along_n = (
        p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11], p[12],
    )  # fmt: skip
    if along_n:
        pb += (lo * ldb if tb else lo) * isz
        po += lo * isz
        n = hi - lo
    else:
        pa += (lo if ta else lo * lda) * isz
        po += lo * ldc * isz
        m = hi - lo
    t_a, t_b = (112 if ta else 111), (112 if tb else 111)
    if isz == 4:
        _sgemm(101, t_a, t_b, m, n, k, np.float32(1), pa, lda, pb, ldb, np.float32(0), po, ldc)
    else:
        _dgemm(101, t_a, t_b, m, n, k, 1.0, pa, lda, pb, ldb, 0.0, po, ldc)


@njit(cache=True, nogil=True)
def _worker(ctl):  # noqa: ANN001, ANN201
    """The helper thread's loop: run blocks of published jobs until ``STOP``."""
    p = np.empty(_NPARAMS, np.int64)
    seen = _load(ctl, SEQ)
    idle = 0
    while _load(ctl, STOP) == 0:
        s = _load(ctl, SEQ)
        if s == seen:
            idle += 1
            if idle < _SPINS:
                _pause()
            elif idle < _SPINS + _YIELDS:
                _yield()
            else:
                # announce the sleep, then look once more: a job published meanwhile either sees
                # WAKE == 1 (and wakes us) or is seen here (seq_cst on both sides)
                _store(ctl, WAKE, 1)
                if _load(ctl, SEQ) == seen and _load(ctl, STOP) == 0:
                    _sleep(ctl)
                _store(ctl, WAKE, 0)
                idle = _SPINS  # awake: yield-spin again before the next sleep
            continue
        seen, idle = s, 0
        for i in range(_NPARAMS):
            p[i] = ctl[PARAMS + i]
        while True:
            v = _load(ctl, NEXT)
            c, nb = v & _MASK16, (v >> 16) & _MASK16
            if (v >> 32) != s or c >= nb:
                break
            if _cas(ctl, NEXT, v, v + 1):
                _block(p, p[16 + c], p[17 + c])
                _fetch_add(ctl, HELPED, 1)
                _fetch_add(ctl, DONE, 1)


@njit(cache=True, nogil=True)
def _gemm(ctl, a, b, o, ta, tb):  # noqa: ANN001, ANN201
    """``o = op(a) @ op(b)`` (row-major, C-contiguous 2-D ``a`` and ``b`` as stored), blocks shared
    with the helper when the pool is free and the GEMM is large enough."""
    m, n = o.shape
    k = a.shape[0] if ta else a.shape[1]
    if m == 0 or n == 0:
        return
    if k == 0:
        o[...] = 0
        return
    along_n = n >= m
    ext = n if along_n else m
    nb = (4 if ext >= 16 * _ALIGN else 2 if ext >= 2 * _ALIGN else 1) if m * n * k >= MIN_PAR_MACS else 1
    owned = nb > 1 and _cas(ctl, OWNER, 0, 1)
    p = ctl[PARAMS : PARAMS + _NPARAMS] if owned else np.empty(_NPARAMS, np.int64)
    p[0], p[1], p[2] = a.ctypes.data, b.ctypes.data, o.ctypes.data
    p[3], p[4], p[5] = m, n, k
    p[6], p[7], p[8] = max(1, a.shape[1]), max(1, b.shape[1]), max(1, n)
    p[9], p[10], p[11], p[12] = ta, tb, o.itemsize, along_n
    if not owned:
        _block(p, 0, n if along_n else m)
        return
    # two big blocks and two small ones (35/35/15/15%): with both threads busy the big ones run
    # side by side, and a late helper leaves the caller at most a small block to wait for
    for i in range(nb + 1):
        pct = (35 * i if i <= 2 else 85) if nb == 4 else 50 * i
        p[16 + i] = min(ext, (ext * pct // 100 + _ALIGN // 2) // _ALIGN * _ALIGN) if i < nb else ext
    s = (_load(ctl, SEQ) + 1) & _JOB_MASK
    _store(ctl, DONE, 0)
    _store(ctl, NEXT, (s << 32) | (nb << 16))
    _store(ctl, SEQ, s)
    _wake(ctl)
    while True:
        c = _fetch_add(ctl, NEXT, 1) & _MASK16
        if c >= nb:
            break
        _block(p, p[16 + c], p[17 + c])
        _fetch_add(ctl, DONE, 1)
    # wait for the helper's block: pause-spins only for ~2 ms (a yield on a busy core hands it to
    # another process for a whole time slice, 3-4 ms here), then yield
    spins = 0
    while _load(ctl, DONE) < nb:
        spins += 1
        if spins < _WAIT_SPINS:
            _pause()
        else:
            _yield()
    _store(ctl, OWNER, 0)


# ---- the pool ------------------------------------------------------------------------------------


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _want_threads() -> int:
    env = os.environ.get("FJAX_GEMM_THREADS")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            pass
    return _cores()


def _new_ctl() -> np.ndarray:
    buf = np.zeros(_CTL_SIZE + 8, np.int64)
    off = (-buf.ctypes.data % 64) // 8  # slot 0 at a cache line's start
    ctl = buf[off : off + _CTL_SIZE]
    ctl[_TIMEOUT] = 1
    return ctl


class _Pool:
    def __init__(self) -> None:
        self.ctl = _new_ctl()
        self.threads: list = []
        self.started = False
        self.lock = threading.Lock()

    def start(self) -> None:
        with self.lock:
            if self.started:
                return
            self.started = True
            # one helper (the blocks are cut for two threads; more helpers would only add claims)
            if _LIBC and loops.BLAS and _want_threads() > 1:
                _install(np.dtype(np.float32))  # (and the helper's loop, before its thread runs it)
                t = threading.Thread(target=_worker, args=(self.ctl,), name="fjax-gemm", daemon=True)
                t.start()
                self.threads.append(t)

    def stop(self) -> None:
        self.ctl[STOP] = 1
        if self.threads and _FUTEX:
            try:  # wake a sleeping helper (a plain call: compiling ``_wake`` at exit would be slow)
                ctypes.CDLL(None).syscall(
                    ctypes.c_long(_SYS_FUTEX),
                    ctypes.c_void_p(self.ctl.ctypes.data + WAKE * 8),
                    ctypes.c_long(_FUTEX_WAKE),
                    ctypes.c_long(1),
                    ctypes.c_void_p(0),
                    ctypes.c_long(0),
                )
            except (OSError, AttributeError):
                pass
        for t in self.threads:
            t.join(timeout=1.0)
        self.threads = []

    def reset_after_fork(self) -> None:
        # the helper does not exist in a child; a job the parent had in flight left OWNER taken
        self.ctl = _new_ctl()
        self.threads, self.started, self.lock = [], False, threading.Lock()


_pool = _Pool()
_SOLO = _new_ctl()  # a control block whose OWNER is always taken: its GEMMs run in one call
_SOLO[OWNER] = 1
atexit.register(_pool.stop)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_pool.reset_after_fork)


def available() -> bool:
    """Whether ``gemm`` calls a BLAS (numpy's OpenBLAS was found)."""
    return loops.BLAS is not None


def threads() -> int:
    """How many threads run a large GEMM's blocks: the caller plus the running helpers."""
    return 1 + sum(t.is_alive() for t in _pool.threads)


_CTL_T = types.Array(types.int64, 1, "C")
_ready: set = set()  # the dtypes whose ``_gemm`` overload is installed
_install_lock = threading.Lock()


def _install(dt: np.dtype) -> None:
    """Install ``_gemm``'s one overload for ``dt`` (read-only inputs: writable arrays convert to it)
    and ``_worker``'s, from numba's disk cache without its target refresh (``warm_load``) when they
    are there, then close both dispatchers to further signatures."""
    from fjax.backends.numba.warm_load import array_type, ensure_compiled  # noqa: PLC0415

    with _install_lock:
        if dt in _ready:
            return
        ro, rw = array_type(dt, 2, readonly=True), array_type(dt, 2)
        for fn, sig in ((_gemm, (_CTL_T, ro, ro, rw, types.boolean, types.boolean)), (_worker, (_CTL_T,))):
            fn.disable_compile(False)
            try:
                ensure_compiled(fn, sig)
            finally:
                fn.disable_compile()
        _ready.add(dt)


def run(ctl: np.ndarray, a: np.ndarray, b: np.ndarray, o: np.ndarray, ta: bool, tb: bool) -> None:
    """``gemm`` on the control block ``ctl`` (``_pool.ctl``, or another one for tests: a block no
    helper reads has its caller run every block)."""
    dt = o.dtype
    if not (
        a.flags.c_contiguous
        and b.flags.c_contiguous
        and o.flags.c_contiguous
        and a.dtype == dt == b.dtype
        and (dt == np.float32 or dt == np.float64)
        and loops.BLAS
    ):
        o[...] = np.dot(a.T if ta else a, b.T if tb else b)
        return
    if dt not in _ready:
        _install(dt)
    _blas.use(1)  # each block on one thread (``_blas.restore`` gives numpy its team back)
    _gemm(ctl, a, b, o, ta, tb)


def gemm(a: np.ndarray, b: np.ndarray, o: np.ndarray, ta: bool, tb: bool) -> None:
    """``o[...] = op(a) @ op(b)`` for C-contiguous 2-D float32/float64 arrays (``op`` transposes
    when ``ta``/``tb``), OpenBLAS single-threaded per block, blocks shared with the helper thread
    (started on the first call). Other arrays go to ``np.dot``."""
    if not _pool.started:
        _pool.start()
    # while other threads take every other core, one call on this thread: waking the helper then
    # lets the scheduler put it on this thread's core, where it preempts the caller; 5 MLP GEMMs
    # took 8 ms that way against 3.9 ms in single calls (load average 5). (And without a helper
    # thread: blocks would only cost their 2-5%.)
    run(_SOLO if not _pool.threads or cores_busy() else _pool.ctl, a, b, o, ta, tb)


_NCPU = _cores()
_busy = [-1.0, False]  # (when last decided, the decision)
_loadavg: list = []  # an open descriptor of /proc/loadavg, or None where there is none
BUSY_RECHECK_S = 0.005


def others_running(text: bytes, mine: int) -> int:
    """Runnable threads of other processes in /proc/loadavg's text (its 4th field is
    ``running/total``, the kernel's count now), less ``mine`` of this process."""
    return int(text.split()[3].split(b"/")[0]) - mine


def cores_busy(now: float | None = None) -> bool:
    """Whether other threads take every core but the caller's right now: the kernel's count of
    runnable threads (/proc/loadavg), less this thread and a spinning helper, read at most every
    ``BUSY_RECHECK_S``. The 1-minute load average (``fjax._blas.machine_busy``) lags by a minute:
    at load 2.8 with a core free for moments JAX's step took 3.6 ms and fjax's single calls 4.4 ms.
    Where /proc/loadavg is missing, that load average decides."""
    now = time.monotonic() if now is None else now
    if now - _busy[0] < BUSY_RECHECK_S:
        return _busy[1]
    _busy[0] = now
    if not _loadavg:
        try:
            _loadavg.append(os.open("/proc/loadavg", os.O_RDONLY))
        except OSError:
            _loadavg.append(None)
    fd = _loadavg[0]
    try:
        if fd is None:
            raise OSError
        mine = 1 + (len(_pool.threads) if _pool.ctl[WAKE] == 0 else 0)  # a sleeping helper does not run
        _busy[1] = others_running(os.pread(fd, 64, 0), mine) >= _NCPU - 1
    except (OSError, ValueError, IndexError):
        _busy[1] = _blas.machine_busy(now)
    return _busy[1]
