"""Dispatch: the compile cache behind ``fjax.jit`` and the hook that installs it.

``compile_jaxpr`` lowers a closed jaxpr (``fjax.backends.lowering``) and compiles it with a
backend; the result is cached per (backend, program): on the jaxpr itself (``ClosedJaxpr.compiled``,
a dict keyed by backend name, so the entry dies with the jaxpr), and inside each backend kernels
are cached again by their generated source's hash, in memory and on disk.

Backends are created on first use from factories registered by name (``register_backend``), so a
CPU-only process never imports another backend's modules.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import math
import threading
import time
import weakref
from typing import Any, Callable

from fjax import core
from fjax.backends import tiering
from fjax.backends.backend import Backend, Capabilities
from fjax.backends.kernel_ir import Program
from fjax.backends.lowering import _has_control_flow, build_program
from fjax.config import config
from fjax.core import ClosedJaxpr

log = logging.getLogger("fjax.lowering")


_stats = {"compiles": 0, "hits": 0}
# bumped by ``clear_cache``: a program compiled under an older generation is compiled again
_generation = [0]
# one compile per program when threads race for it: a lock per jaxpr being compiled
_compiling: dict[int, threading.Lock] = {}
_compiling_lock = threading.Lock()


_backends: dict[str, Backend] = {}
# how each backend is made on first use: "module:Class" (imported then, so nothing CUDA is imported
# on a machine that never asks for a GPU) or a callable returning the backend
_factories: dict[str, Any] = {
    "numba": "fjax.backends.numba.backend:NumbaBackend",
    "cuda": "fjax.backends.cuda.backend:CudaBackend",
}
_backends_lock = threading.Lock()

DEFAULT_BACKEND = "numba"


def register_backend(name: str, backend: Backend | Callable[[], Backend] | str) -> None:
    """Make ``get_backend(name)`` return ``backend`` (a ``Backend``, a factory, or ``"module:Class"``),
    replacing any backend of that name and forgetting what it compiled."""
    with _backends_lock:
        _backends.pop(name, None)
        if isinstance(backend, Backend):
            _backends[name] = backend
        else:
            _factories[name] = backend
    _generation[0] += 1


def get_backend(name: str = DEFAULT_BACKEND) -> Backend:
    """The backend called ``name`` (created on first use: importing numba, or cupy, takes a while)."""
    b = _backends.get(name)
    if b is None:
        factory = _factories.get(name)
        if factory is None:
            raise NotImplementedError(f"fjax has no backend named {name!r} (known: {', '.join(sorted(_factories))})")
        with _backends_lock:
            b = _backends.get(name)
            if b is None:
                if isinstance(factory, str):
                    mod_name, cls_name = factory.split(":")
                    try:
                        factory = getattr(importlib.import_module(mod_name), cls_name)
                    except (ImportError, AttributeError) as e:
                        raise NotImplementedError(f"fjax's {name!r} backend is not available: {e}") from e
                b = _backends[name] = factory()
    return b


def _backend() -> Backend:
    return get_backend()


def lower(closed: ClosedJaxpr, backend: Backend | None = None, loops: bool = True) -> Program | None:
    """``closed`` lowered to a kernel IR ``Program`` for ``backend`` (default: numba); None when
    nothing in it would be compiled (jit then evaluates the jaxpr eagerly)."""
    b = backend or _backend()
    return build_program(closed, b.capabilities, loops=loops)


def _compile(b: Backend, closed: ClosedJaxpr, loops: bool = True) -> Callable | None:
    prog = lower(closed, b, loops=loops)
    return None if prog is None else b.compile(prog)


def compile_jaxpr(
    closed: ClosedJaxpr, backend: str = DEFAULT_BACKEND, tiered: bool | str | None = None
) -> Callable | None:
    """A callable on the backend's arrays (numpy for numba) returning a list of them, or None to
    evaluate eagerly.

    Cached per (backend, program) on ``closed`` itself (so it is freed with the jaxpr); inside the
    backend, kernels are cached by the hash of their generated source.

    Tiered (``tiered``, default the ``fjax_tiered_compile`` option): a program not compiled yet is
    handed to a background thread and its first call evaluates the jaxpr primitive by primitive
    (numpy); a call made while it still compiles waits for it, then runs the compiled program.
    ``"auto"`` (the option's default) tiers only the programs ``tiering.worth_tiering`` picks."""
    cache = closed.compiled
    entry = cache.get(backend) if cache is not None else None
    if entry is not None and entry[0] == _generation[0] and entry[2] == 0:
        _stats["hits"] += 1
        return entry[1]
    if getattr(_tier, "depth", 0):
        return None  # nested in a program evaluated eagerly while it compiles: that compiles it all
    mode = tiering.mode(tiered)
    if mode != "off":
        if entry is not None and entry[0] == _generation[0] and entry[2] >= _MAX_ATTEMPTS:
            return entry[1]  # compiling failed for good: eager
        return _tiered(closed, backend, mode == "auto")
    return _compile_locked(closed, backend)


def _settled(closed: ClosedJaxpr, backend: str = DEFAULT_BACKEND) -> tuple[bool, Callable | None]:
    """(True, what ``compile_jaxpr`` returns for ``closed``) once that is final for this generation
    of the cache: compiled (or nothing to compile), no background compile or retry pending; else
    (False, None). ``fjax.jit`` keeps such a callable per call signature and runs it directly
    while ``_generation`` (``compile_jaxpr.generation``) is unchanged."""
    cache = closed.compiled
    entry = cache.get(backend) if cache is not None else None
    if entry is not None and entry[0] == _generation[0] and entry[2] == 0:
        return True, entry[1]
    return False, None


compile_jaxpr.settled = _settled  # type: ignore[attr-defined]
compile_jaxpr.generation = _generation  # type: ignore[attr-defined]


# ---- tiered compilation: evaluate eagerly while a background thread compiles --------------------

_tier = threading.local()  # .depth: inside an eager evaluation standing in for a program compiling
_tier_lock = threading.Lock()
_tier_pending: dict[tuple, "_FirstCall"] = {}  # programs whose first call or compile is pending
_tier_queue: list = []  # (closed, backend, generation), compiled in order by one worker thread
_tier_wake = threading.Condition(_tier_lock)
_tier_worker: list = []
_tier_stats = {"queued": 0, "compiled": 0, "eager_calls": 0, "eager_timeouts": 0}


def _tiered(closed: ClosedJaxpr, backend: str, auto: bool = False) -> Callable | None:
    if threading.current_thread() in _tier_worker:
        return _compile_locked(closed, backend)
    key = (id(closed), backend)
    deadline = math.inf
    if auto and key not in _tier_pending:
        deadline = tiering.tier_deadline(closed, backend)
        if deadline is None:
            return _compile_locked(closed, backend)  # costly to interpret, or its kernels are on disk
    with _tier_lock:
        if key in _tier_pending:
            # a later call while it compiles: wait for the compiled program (one eager call per
            # program, so a loop of calls does not keep the interpreter holding the GIL against
            # the compiling thread)
            while key in _tier_pending:
                # a first call handed out but not made (its caller dropped it or failed before
                # calling it) would never queue the compile: queue it now instead of waiting forever
                _tier_pending[key]._queue_unstarted()
                _tier_wake.wait()
        else:
            # later calls wait for the compile, which is queued when this first call returns (so
            # the eager evaluation does not share the GIL with the compiling thread)
            first = _tier_pending[key] = _FirstCall(closed, backend, _generation[0], deadline)
            return first
    cache = closed.compiled or {}
    entry = cache.get(backend)
    return entry[1] if entry is not None else None


class _TierTimeout(BaseException):
    """Raised inside an eager first call that passed its deadline (a BaseException, so that no
    ``except Exception`` on the way turns it into an error)."""


def _loop_guard() -> None:
    end = getattr(_tier, "deadline", None)
    if end is not None and time.monotonic() > end:
        raise _TierTimeout


core.loop_guard = _loop_guard


class _FirstCall:
    """A program's first call under tiering: evaluated eagerly, then its compile is queued. With a
    finite ``limit`` (a program with while loops) the eager evaluation stops after ``limit``
    seconds and the call compiles the program and runs it instead."""

    __slots__ = ("closed", "backend", "gen", "queued", "limit", "started")

    def __init__(self, closed: ClosedJaxpr, backend: str, gen: int, limit: float = math.inf) -> None:
        self.closed, self.backend, self.gen, self.queued, self.limit = closed, backend, gen, False, limit
        self.started = False

    def __call__(self, *args: Any) -> list:
        self.started = True
        try:
            if math.isinf(self.limit):
                return _eager_call(self.closed, *args)
            try:
                return _eager_call(self.closed, *args, deadline=time.monotonic() + self.limit)
            except _TierTimeout:
                _tier_stats["eager_timeouts"] += 1
                fn = _compile_locked(self.closed, self.backend)
                return fn(*args) if fn is not None else _eager_call(self.closed, *args)
        finally:
            self._queue()

    def _queue(self) -> None:
        with _tier_lock:
            self._queue_locked()

    def _queue_unstarted(self) -> None:
        """Queue the compile of a first call nobody has made yet (``_tier_lock`` held)."""
        if not self.started:
            self._queue_locked()

    def _queue_locked(self) -> None:
        if not self.queued:
            self.queued = True
            _tier_queue.append((self.closed, self.backend, self.gen))
            _tier_stats["queued"] += 1
            if not _tier_worker:
                t = threading.Thread(target=_tier_loop, name="fjax-compile", daemon=True)
                _tier_worker.append(t)
                t.start()
            _tier_wake.notify_all()  # the worker, not only a thread waiting for this program


def _eager_call(closed: ClosedJaxpr, *args: Any, deadline: float | None = None) -> list:
    """``closed`` evaluated primitive by primitive on numpy arrays (what ``fjax_jit_backend =
    "interpret"`` runs), marking the thread so nested programs do not queue compiles of their own.
    ``deadline`` (``time.monotonic()``): its while loops raise ``_TierTimeout`` past it."""
    import numpy as np  # noqa: PLC0415

    _tier_stats["eager_calls"] += 1
    _tier.depth = getattr(_tier, "depth", 0) + 1
    outer = getattr(_tier, "deadline", None)
    if deadline is not None:
        _tier.deadline = deadline if outer is None else min(outer, deadline)
    try:
        ins = [core.Array(a, av.weak_type) for a, av in zip(args, closed.in_avals)]
        outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *ins)
        return [o._value if isinstance(o, core.Array) else np.asarray(o) for o in outs]
    finally:
        _tier.depth -= 1
        _tier.deadline = outer


def _tier_loop() -> None:
    while True:
        with _tier_lock:
            while not _tier_queue:
                _tier_wake.wait()
            closed, backend, gen = _tier_queue.pop(0)
        try:
            if gen == _generation[0]:
                _compile_locked(closed, backend)
                _tier_stats["compiled"] += 1
        except Exception:  # noqa: BLE001 - a failed compile leaves the program evaluating eagerly
            # (e.g. the backend's import racing another thread's import of numba): one failed
            # attempt, so a later call queues the compile again, up to _MAX_ATTEMPTS in all
            cache = closed.compiled if closed.compiled is not None else {}
            closed.compiled = cache
            entry = cache.get(backend)
            attempts = entry[2] + 1 if entry is not None and entry[0] == _generation[0] else 1
            cache[backend] = (_generation[0], None, attempts)
            log.warning(
                "fjax: compiling in the background failed (attempt %d of %d); the program runs eagerly%s",
                attempts,
                _MAX_ATTEMPTS,
                " for good" if attempts >= _MAX_ATTEMPTS else " until a later call compiles it",
                exc_info=True,
            )
        finally:
            with _tier_lock:
                _tier_pending.pop((id(closed), backend), None)
                _tier_wake.notify_all()


def wait_compiled(timeout: float | None = None) -> bool:
    """Block until the background compiler has no work left (tiered compilation); False on timeout."""
    import time  # noqa: PLC0415

    end = None if timeout is None else time.monotonic() + timeout
    with _tier_lock:
        while _tier_pending:
            for first in list(_tier_pending.values()):
                first._queue_unstarted()
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return False
            _tier_wake.wait(left)
    return True


# a program whose compile failed is retried on later calls, this many times in all, so a
# transient failure (a race, a full disk) never leaves a function evaluating eagerly for good
_MAX_ATTEMPTS = 3


def _compile_locked(closed: ClosedJaxpr, backend: str) -> Callable | None:
    key = (id(closed), backend)
    with _compiling_lock:
        lock = _compiling.setdefault(key, threading.Lock())
    with lock:
        try:
            cache = closed.compiled
            if cache is None:
                cache = closed.compiled = {}
            entry = cache.get(backend)
            attempts = 0
            if entry is not None and entry[0] == _generation[0]:
                attempts = entry[2]
                if attempts == 0 or attempts >= _MAX_ATTEMPTS:
                    _stats["hits"] += 1
                    return entry[1]
            fn, failed = _compile_uncached(closed, get_backend(backend), warn=attempts == 0)
            _stats["compiles"] += 1
            # failed: count the attempt (the eager fallback keeps working meanwhile)
            cache[backend] = (_generation[0], fn, attempts + 1 if failed else 0)
            if fn is not None and not failed and tiering.mode() == "auto":
                tiering.note_compiled(closed, backend)  # later processes load it instead of tiering
            return fn
        finally:
            with _compiling_lock:
                if _compiling.get(key) is lock:
                    del _compiling[key]


def _compile_uncached(closed: ClosedJaxpr, b: Backend, warn: bool = True) -> tuple[Callable | None, bool]:
    """(callable or None, whether compiling failed). None without a failure: nothing to compile."""
    try:
        return _compile(b, closed), False
    except Exception as e:  # a lowering bug must never break jit: fall back to eager evaluation
        if config.fjax_lowering_strict:
            raise
        log.debug("lowering traceback", exc_info=True)
        fn = None
        if config.fjax_compile_loops and _has_control_flow(closed.jaxpr):
            # keep the rest compiled: the loops run on the host, calling their compiled bodies
            try:
                fn = _compile(b, closed, loops=False)
                if warn:
                    log.warning(
                        "fjax.jit: compiling a loop failed (%s: %s); its loops run on the host", type(e).__name__, e
                    )
            except Exception:  # noqa: BLE001 - reported below with the first error
                fn = None
        if fn is None and warn:
            log.warning(
                "fjax.jit: lowering failed (%s: %s); evaluating the jaxpr eagerly (compiling is retried on "
                "the next calls)",
                type(e).__name__,
                e,
            )
        return fn, True


class _AnyName:
    """A container holding every primitive name."""

    def __contains__(self, name: object) -> bool:
        return True


_ANY = _AnyName()
_DEVICE = ("device",)  # the last device program's entry in ``ClosedJaxpr.compiled``: ((generation, backend), fn)
# programs compiled for device backends: closed jaxpr (weakly) -> {(generation, backend): callable or None}
_device_compiled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_device_lock = threading.Lock()


def compile_for_device(closed: ClosedJaxpr, backend_name: str, runtime: Any) -> Callable | None:
    """``closed`` compiled by the device backend ``backend_name`` (``"cuda"``) against ``runtime``:
    a callable on device buffers returning a list of device buffers, cached on the jaxpr. None
    when the jaxpr computes nothing (every output is an input or a literal).

    Nothing falls back to the host here: every equation is handed to the backend (host steps
    included), and a primitive it cannot run raises its NotImplementedError to the caller."""
    key = (_generation[0], backend_name)
    # the per-call lookup: on the jaxpr's own compile cache (a plain dict; a WeakKeyDictionary
    # lookup makes a weak reference each time), under a key no compile_jaxpr backend name uses
    comp = closed.compiled
    hit = comp.get(_DEVICE) if comp is not None else None
    if hit is not None and hit[0] == key:
        _stats["hits"] += 1
        return hit[1]
    per = _device_compiled.get(closed)
    if per is not None and key in per:
        _stats["hits"] += 1
        if closed.compiled is None:
            closed.compiled = {}
        closed.compiled[_DEVICE] = (key, per[key])
        return per[key]
    b = get_backend(backend_name)
    # every host step counts as compiled, so only a jaxpr without any work lowers to None
    c = b.capabilities
    try:
        caps = dataclasses.replace(c, host_kernels=_ANY)
    except TypeError:  # capabilities given as another object with the same fields
        caps = Capabilities(ops=c.ops, loop_ops=c.loop_ops, loop_op_reason=c.loop_op_reason, host_kernels=_ANY)
    prog = build_program(closed, caps)
    fn = None if prog is None else b.compile(prog, runtime=runtime)
    _stats["compiles"] += 1
    with _device_lock:
        per = _device_compiled.get(closed)
        if per is None:
            per = _device_compiled[closed] = {}
        per[key] = fn
        if closed.compiled is None:
            closed.compiled = {}
        closed.compiled[_DEVICE] = (key, fn)
    return fn


def source_for(closed: ClosedJaxpr, backend: str = DEFAULT_BACKEND) -> str:
    """The generated source of ``closed`` (kernels, and the host steps as comments)."""
    b = get_backend(backend)
    prog = lower(closed, b)
    if prog is None:
        return "# nothing to compile: evaluated eagerly\n"
    return b.source(prog)


def ir_text(closed: ClosedJaxpr, backend: str = DEFAULT_BACKEND) -> str:
    """The kernel IR program of ``closed`` as text (``Program.as_text``), after the backend's
    passes (so it shows the schedule the backend renders)."""
    b = get_backend(backend)
    prog = lower(closed, b)
    if prog is None:
        return "# nothing to compile: evaluated eagerly\n"
    return b.prepare(prog).as_text()


def clear_cache(disk: bool = False) -> None:
    """Forget compiled callables (of every backend created so far); ``disk=True`` also empties
    their on-disk kernel caches."""
    _generation[0] += 1
    if disk:
        get_backend()  # the default backend's disk cache exists even before its first compile
    for b in list(_backends.values()):
        b.clear_cache()
        if disk:
            b.clear_disk_cache()
