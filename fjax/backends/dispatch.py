"""Dispatch: the compile cache behind ``fjax.jit`` and the hook that installs it.

``compile_jaxpr`` lowers a closed jaxpr (``fjax.backends.lowering``) and compiles it with a
backend; the result is cached per (backend, program): on the jaxpr itself (``ClosedJaxpr.compiled``,
a dict keyed by backend name, so the entry dies with the jaxpr), and inside each backend kernels
are cached again by their generated source's hash, in memory and on disk.

Backends are created on first use from factories registered by name (``register_backend``), so a
CPU-only process never imports another backend's modules.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

from fjax.backends.backend import Backend
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
_factories: dict[str, Callable[[], Backend]] = {}
_backends_lock = threading.Lock()

DEFAULT_BACKEND = "numba"


def register_backend(name: str, factory: Callable[[], Backend]) -> None:
    """Make the backend ``name`` available; ``factory()`` builds it on first use."""
    _factories[name] = factory
    _backends.pop(name, None)


def _numba_backend() -> Backend:
    from fjax.backends.numba.backend import NumbaBackend  # noqa: PLC0415 - numba loads on first use

    return NumbaBackend()


register_backend("numba", _numba_backend)


def get_backend(name: str = DEFAULT_BACKEND) -> Backend:
    """The backend called ``name`` (created on first use: importing numba takes a while)."""
    b = _backends.get(name)
    if b is None:
        factory = _factories.get(name)
        if factory is None:
            raise NotImplementedError(f"fjax has no backend named {name!r} (available: {sorted(_factories)})")
        with _backends_lock:
            b = _backends.get(name)
            if b is None:
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


def compile_jaxpr(closed: ClosedJaxpr, backend: str = DEFAULT_BACKEND) -> Callable | None:
    """A callable on the backend's arrays (numpy for numba) returning a list of them, or None to
    evaluate eagerly.

    Cached per (backend, program) on ``closed`` itself (so it is freed with the jaxpr); inside the
    backend, kernels are cached by the hash of their generated source."""
    cache = closed.compiled
    entry = cache.get(backend) if cache is not None else None
    if entry is not None and entry[0] == _generation[0] and entry[2] == 0:
        _stats["hits"] += 1
        return entry[1]
    return _compile_locked(closed, backend)


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
