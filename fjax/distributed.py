"""Many processes over MPI: ``fjax.distributed.initialize`` / ``shutdown`` (``jax.distributed``).

fjax does not ship its own distributed runtime: processes are launched by MPI (``mpiexec -n 2
python train.py``) and talk through mpi4py. ``initialize()`` detects an MPI launch from the
launcher's environment (MPICH/Hydra ``PMI_*``, Open MPI ``OMPI_COMM_WORLD_*``, PMIx) or is told
with ``cluster_detection_method="mpi4py"``; it then gives each process its index and count
(``fjax.process_index()``, ``process_count()``), and the global device list (``fjax.devices()``)
spans every process's local devices. Collectives whose named axis spans processes (multi-process
``pmap``) run as MPI calls on contiguous host buffers (``fjax.lax.parallel_mpi``).

Failure behaviour (no rank waits forever, none computes with a missing peer's data):

- an exception that escapes the main program of any rank prints its traceback prefixed by the
  rank and calls ``MPI.Abort``, so the other ranks exit instead of waiting in a collective;
- a rank that exits normally (end of its script, ``sys.exit``) tells the others first (a small
  message on a private communicator); a rank waiting for it in a collective, or entering one
  later, stops with an error naming the rank that left and the collective (a collective called
  after a peer left raises ``RuntimeError`` on the caller; one already waiting aborts the job);
- a collective that waits longer than ``fjax_mpi_timeout`` seconds (default 1800, 0 for no
  limit; for a peer that hangs) aborts the job with an error naming the collective;
- a rank killed by a signal or ``os._exit`` cannot say anything: the MPI launcher (Hydra,
  ``mpirun``) sees it die and kills the others, so the job ends with the launcher's non-zero
  status and no rank returns a result.

The watchdog behind the last three is a daemon thread per process that polls the private
communicator every 50 ms (MPI's ``THREAD_MULTIPLE`` level, mpi4py's default); collectives run on
the calling thread at full speed and only mark when they start and end.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
import traceback
from typing import Any

import numpy as np

__all__ = ["initialize", "is_initialized", "shutdown"]


class _State:
    comm: Any = None
    process_id: int = 0
    num_processes: int = 1
    initialized: bool = False
    prev_excepthook: Any = None
    watchdog: Any = None
    # jax.thread_guard: the id of the thread that holds it, else None (fjax/_flag_states.py)
    thread_guard: Any = None


state = _State()

_MPI_ENV = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALRANKID")


def mpi_launched() -> bool:
    """Whether this process was started by an MPI launcher (mpiexec/mpirun/srun with PMI)."""
    return any(k in os.environ for k in _MPI_ENV)


def _import_mpi(timeout: float) -> Any:
    """``mpi4py.MPI`` (importing it runs ``MPI_Init``), failing after ``timeout`` seconds."""
    box: list = []

    def work() -> None:
        try:
            from mpi4py import MPI  # noqa: PLC0415

            box.append(MPI)
        except BaseException as e:  # noqa: BLE001
            box.append(e)

    t = threading.Thread(target=work, daemon=True)
    t.start()
    t.join(timeout)
    if not box:
        # the thread stays blocked inside MPI_Init and would also block interpreter exit: leave now,
        # so the launcher ends the job instead of every rank hanging
        sys.stderr.write(
            f"fjax.distributed.initialize: MPI_Init did not finish within initialization_timeout={timeout} s "
            "(another process of the job never started or never called initialize); exiting\n"
        )
        sys.stderr.flush()
        os._exit(1)
    if isinstance(box[0], BaseException):
        if isinstance(box[0], ImportError):
            raise RuntimeError(
                "fjax.distributed.initialize: this process was launched by MPI but mpi4py is not installed "
                "(pip install mpi4py mpich)"
            ) from box[0]
        raise box[0]
    return box[0]


_EXIT_TAG = 7301
# seconds after a peer's exit notice before a collective still waiting is given up
_EXIT_GRACE_S = float(os.environ.get("FJAX_MPI_EXIT_GRACE", "10"))


class _Watchdog:
    """Watches the collectives of this process for peers that left or hang (see the module
    docstring). ``ctrl`` is a duplicate of the job's communicator, so its messages never match the
    program's own."""

    def __init__(self, comm: Any, MPI: Any) -> None:
        self.MPI = MPI
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.ctrl = comm.Dup()
        self.gone: dict = {}  # rank -> monotonic time its exit notice arrived
        self.current: tuple | None = None  # (what, start time) of the collective in progress
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.buf = np.zeros(2, np.int64)
        self.req = self.ctrl.Irecv(self.buf, source=MPI.ANY_SOURCE, tag=_EXIT_TAG)
        self.thread = threading.Thread(target=self._run, name="fjax-mpi-watchdog", daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        with self.lock:
            while self.req is not None and self.req.Test():
                self.gone[int(self.buf[0])] = time.monotonic()
                self.req = self.ctrl.Irecv(self.buf, source=self.MPI.ANY_SOURCE, tag=_EXIT_TAG)

    def _run(self) -> None:
        from fjax.config import config  # noqa: PLC0415

        while not self.stop.wait(0.05):
            self._poll()
            cur = self.current
            if cur is None:
                continue
            what, t0 = cur
            if self.gone and time.monotonic() - min(self.gone.values()) > _EXIT_GRACE_S:
                # (the grace: a peer may leave right after the collective this process is still
                # returning from)
                self._abort(
                    f"{what}: {_ranks(self.gone)} of the {self.size} processes {_has(self.gone)} exited while this "
                    "process waits for it in this collective (did the ranks run a different number of steps?)"
                )
            limit = float(config.fjax_mpi_timeout or 0)
            if limit > 0 and time.monotonic() - t0 > limit:
                self._abort(
                    f"{what}: still waiting for the other processes after fjax_mpi_timeout={limit:g} s (a process "
                    "hangs, or is not calling the same collective)"
                )

    def _abort(self, msg: str) -> None:
        _abort_job(self.comm, f"[fjax rank {self.rank}] {msg}; aborting all {self.size} processes (MPI_Abort)\n")

    def enter(self, what: str) -> None:
        # (no MPI call here: the thread has received any exit notice within 50 ms)
        if self.gone:
            raise RuntimeError(
                f"{what}: {_ranks(self.gone)} of the {self.size} processes {_has(self.gone)} already exited, so this "
                "collective across processes cannot complete (did the ranks run a different number of steps?)"
            )
        self.current = (what, time.monotonic())

    def leave(self) -> None:
        self.current = None

    def announce_exit(self) -> None:
        """Tell every other process that this one is leaving (at interpreter exit)."""
        msg = np.array([self.rank, 0], np.int64)
        reqs = [self.ctrl.Isend(msg, dest=r, tag=_EXIT_TAG) for r in range(self.size) if r != self.rank]
        self.MPI.Request.Waitall(reqs)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        with self.lock:
            if self.req is not None:
                self.req.Cancel()
                self.req.Wait()
                self.req = None


def _has(gone: dict) -> str:
    return "has" if len(gone) == 1 else "have"


def _ranks(gone: dict) -> str:
    rs = sorted(gone)
    return "rank " + ", ".join(map(str, rs)) if len(rs) == 1 else "ranks " + ", ".join(map(str, rs))


class collective:  # noqa: N801
    """``with collective("psum across processes"):`` around a blocking MPI call: the watchdog
    knows what this process waits in (a no-op without the watchdog)."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> None:
        g = state.thread_guard
        if g is not None and g != threading.get_ident():
            from fjax.errors import JaxRuntimeError  # noqa: PLC0415

            raise JaxRuntimeError(
                f"A multi-process JAX operation was called from thread {threading.get_ident()}. This is not "
                f"allowed because the thread guard was set in thread {g}."
            )
        w = state.watchdog
        if w is not None:
            w.enter(self.what)

    def __exit__(self, *exc: Any) -> None:
        w = state.watchdog
        if w is not None:
            w.leave()


def _at_exit() -> None:
    w = state.watchdog
    if w is None or w.MPI.Is_finalized():  # (the program may have finalized MPI itself)
        return
    state.watchdog = None
    try:
        w.announce_exit()
    finally:
        w.close()


def _barrier(comm: Any, timeout: float) -> None:
    """A barrier that gives up (aborting every rank) after ``timeout`` seconds, so a rank that died
    or never called ``initialize`` does not hang the others."""
    req = comm.Ibarrier()
    deadline = time.monotonic() + timeout
    delay = 1e-4
    while not req.Test():
        if time.monotonic() > deadline:
            _abort_job(
                comm,
                f"[fjax rank {comm.Get_rank()}] fjax.distributed.initialize: not every one of the "
                f"{comm.Get_size()} processes arrived within initialization_timeout={timeout} s; aborting\n",
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _excepthook(exc_type: type, exc: BaseException, tb: Any) -> None:
    rank = state.process_id
    text = "".join(traceback.format_exception(exc_type, exc, tb))
    _abort_job(
        state.comm,
        "".join(f"[fjax rank {rank}] {line}\n" for line in text.rstrip().splitlines())
        + f"[fjax rank {rank}] aborting all {state.num_processes} processes (MPI_Abort) after an uncaught "
        f"{exc_type.__name__} on rank {rank}\n",
    )


# seconds between writing why the job ends and MPI_Abort: the launcher kills every process (and
# its output forwarding) on the abort, and a message still in the pipe to it can be lost
_ABORT_FLUSH_S = float(os.environ.get("FJAX_MPI_ABORT_FLUSH", "0.5"))


def _unread_bytes(fd: int) -> int | None:
    """Bytes written to the pipe ``fd`` that its reader (the MPI launcher) has not read yet; None
    where the OS cannot say (not a pipe, no FIONREAD)."""
    try:
        import fcntl  # noqa: PLC0415
        import termios  # noqa: PLC0415

        buf = bytearray(4)
        fcntl.ioctl(fd, termios.FIONREAD, buf)
        return int.from_bytes(buf, sys.byteorder)
    except Exception:  # noqa: BLE001 - a terminal, a file, another OS
        return None


def _wait_until_read(fds: tuple, budget: float) -> None:
    """Wait until the launcher has read what this process wrote to the pipes ``fds`` (at most
    ``budget`` seconds), then a moment for it to pass it on; a fixed wait where the OS cannot tell."""
    t0 = time.monotonic()
    known = [fd for fd in fds if _unread_bytes(fd) is not None]
    if len(known) < len(fds):
        time.sleep(_ABORT_FLUSH_S)
    while any(_unread_bytes(fd) for fd in known) and time.monotonic() < t0 + budget:
        time.sleep(0.005)
    time.sleep(0.05)


def _abort_job(comm: Any, text: str) -> None:
    """Say why (on stderr, flushed, and read by the launcher before the abort), then end every
    process. What the program printed to stdout before is flushed first, so it is not lost."""
    try:
        try:
            sys.stdout.flush()
        except Exception:  # noqa: BLE001, S110 - a closed or broken stdout must not stop the abort
            pass
        sys.stderr.write(text)
        sys.stderr.flush()
        _wait_until_read((1, 2), max(_ABORT_FLUSH_S, 2.0))
    finally:
        try:
            comm.Abort(1)
        finally:  # Abort does not return; if it does, exit anyway
            os._exit(1)


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    local_device_ids: Any = None,
    cluster_detection_method: str | None = None,
    initialization_timeout: int = 300,
    coordinator_bind_address: str | None = None,
    **kwargs: Any,
) -> None:
    """Join the processes of this job (``jax.distributed.initialize``).

    Under an MPI launch (or with ``cluster_detection_method="mpi4py"``) ranks and sizes come
    from ``MPI.COMM_WORLD``; ``num_processes``/``process_id``, when given, must agree with it.
    Without MPI, only a single process is possible (``num_processes=1``); other values raise a
    ``ValueError`` (fjax has no coordinator service: ``coordinator_address`` is accepted for JAX
    compatibility and ignored). ``initialization_timeout`` (seconds) bounds MPI_Init and the
    barrier that waits for every process. Calling it twice raises ``RuntimeError``, as JAX.
    """
    del coordinator_address, local_device_ids, coordinator_bind_address, kwargs
    if state.initialized:
        raise RuntimeError("distributed.initialize should only be called once.")
    methods = (None, "mpi4py", "deactivate")
    if cluster_detection_method not in methods:
        raise ValueError(
            f"fjax.distributed.initialize: unsupported cluster_detection_method {cluster_detection_method!r} "
            "(fjax detects MPI launches: use 'mpi4py', or launch with mpiexec)"
        )
    from fjax import _devices  # noqa: PLC0415

    use_mpi = cluster_detection_method == "mpi4py" or (cluster_detection_method is None and mpi_launched())
    if use_mpi:
        MPI = _import_mpi(float(initialization_timeout))
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        if num_processes is not None and int(num_processes) != size:
            raise ValueError(f"fjax.distributed.initialize: num_processes={num_processes} but MPI has {size} ranks")
        if process_id is not None and int(process_id) != rank:
            raise ValueError(f"fjax.distributed.initialize: process_id={process_id} but this MPI rank is {rank}")
        _barrier(comm, float(initialization_timeout))
        state.comm, state.process_id, state.num_processes = comm, rank, size
        if size > 1:
            state.prev_excepthook = sys.excepthook
            sys.excepthook = _excepthook
            if MPI.Query_thread() >= MPI.THREAD_MULTIPLE:
                state.watchdog = _Watchdog(comm, MPI)
                # registered after mpi4py's own exit handler (MPI_Finalize), so it runs before it
                atexit.register(_at_exit)
    else:
        if num_processes is None and process_id is None:
            raise ValueError(
                "fjax.distributed.initialize: no MPI launch detected (run under mpiexec, or pass "
                "cluster_detection_method='mpi4py'); coordinator_address should be defined otherwise, and fjax "
                "only supports MPI"
            )
        if int(num_processes if num_processes is not None else 1) != 1 or int(process_id or 0) != 0:
            raise ValueError(
                "fjax.distributed.initialize: more than one process needs an MPI launch (mpiexec -n N ...); "
                f"got num_processes={num_processes}, process_id={process_id}"
            )
    state.initialized = True
    _devices._topology_changed()


def is_initialized() -> bool:
    """Whether ``initialize`` has been called (and ``shutdown`` not since)."""
    return state.initialized


def shutdown() -> None:
    """Leave the job: a barrier across processes, then back to a single process view."""
    if not state.initialized:
        return
    if state.comm is not None and state.num_processes > 1:
        with collective("fjax.distributed.shutdown (barrier)"):
            state.comm.Barrier()
        w, state.watchdog = state.watchdog, None
        if w is not None:
            w.close()
            w.ctrl.Free()
    if state.prev_excepthook is not None:
        sys.excepthook = state.prev_excepthook
        state.prev_excepthook = None
    state.comm, state.process_id, state.num_processes = None, 0, 1
    state.initialized = False
    from fjax import _devices  # noqa: PLC0415

    _devices._topology_changed()


def comm() -> Any:
    """The MPI communicator of the job (``None`` in a single process)."""
    return state.comm
