"""Dispatch: the compile cache behind ``fjax.jit`` and the hook that installs it.

``compile_jaxpr`` lowers a closed jaxpr (``fjax.backends.lowering``) and compiles it with the
backend; the result is cached by the jaxpr's identity (inside the backend, kernels are cached
again by their generated source's hash, in memory and on disk).
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


def get_backend(name: str = "numba") -> Backend:
    """The backend called ``name`` (created on first use: importing numba takes a while)."""
    b = _backends.get(name)
    if b is None:
        if name == "numba":
            from fjax.backends.numba.backend import NumbaBackend  # noqa: PLC0415

            b = _backends[name] = NumbaBackend()
        elif name == "cuda":
            from fjax.backends.cuda.backend import CudaBackend  # noqa: PLC0415

            b = _backends[name] = CudaBackend()
        else:
            raise NotImplementedError(f"fjax has no backend named {name!r} (available: 'numba', 'cuda')")
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


def compile_jaxpr(closed: ClosedJaxpr) -> Callable | None:
    """A callable on numpy arrays returning a list of numpy arrays, or None to evaluate eagerly.

    Kept on ``closed`` itself (so it is freed with the jaxpr); inside the backend, kernels are
    cached by the hash of their generated source."""
    entry = closed.compiled
    if entry is not None and entry[0] == _generation[0] and entry[2] == 0:
        _stats["hits"] += 1
        return entry[1]
    return _compile_locked(closed)


# a program whose compile failed is retried on later calls, this many times in all, so a
# transient failure (a race, a full disk) never leaves a function evaluating eagerly for good
_MAX_ATTEMPTS = 3


def _compile_locked(closed: ClosedJaxpr) -> Callable | None:
    key = id(closed)
    with _compiling_lock:
        lock = _compiling.setdefault(key, threading.Lock())
    with lock:
        try:
            entry = closed.compiled
            attempts = 0
            if entry is not None and entry[0] == _generation[0]:
                attempts = entry[2]
                if attempts == 0 or attempts >= _MAX_ATTEMPTS:
                    _stats["hits"] += 1
                    return entry[1]
            fn, failed = _compile_uncached(closed, warn=attempts == 0)
            _stats["compiles"] += 1
            # failed: count the attempt (the eager fallback keeps working meanwhile)
            closed.compiled = (_generation[0], fn, attempts + 1 if failed else 0)
            return fn
        finally:
            with _compiling_lock:
                if _compiling.get(key) is lock:
                    del _compiling[key]


def _compile_uncached(closed: ClosedJaxpr, warn: bool = True) -> tuple[Callable | None, bool]:
    """(callable or None, whether compiling failed). None without a failure: nothing to compile."""
    try:
        return _compile(_backend(), closed), False
    except Exception as e:  # a lowering bug must never break jit: fall back to eager evaluation
        if config.fjax_lowering_strict:
            raise
        log.debug("lowering traceback", exc_info=True)
        fn = None
        if config.fjax_compile_loops and _has_control_flow(closed.jaxpr):
            # keep the rest compiled: the loops run on the host, calling their compiled bodies
            try:
                fn = _compile(_backend(), closed, loops=False)
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


def source_for(closed: ClosedJaxpr, backend: str = "numba") -> str:
    """The generated source of ``closed`` for ``backend`` (kernels, and the host steps as comments)."""
    b = get_backend(backend)
    prog = lower(closed, b)
    if prog is None:
        return "# nothing to compile: evaluated eagerly\n"
    return b.source(prog)


def ir_text(closed: ClosedJaxpr, backend: str = "numba") -> str:
    """The kernel IR program of ``closed`` as text (``Program.as_text``), after ``backend``'s
    passes (so it shows the schedule the backend renders)."""
    b = get_backend(backend)
    prog = lower(closed, b)
    if prog is None:
        return "# nothing to compile: evaluated eagerly\n"
    return b.prepare(prog).as_text()


def clear_cache(disk: bool = False) -> None:
    """Forget compiled callables; ``disk=True`` also empties the on-disk kernel cache."""
    _generation[0] += 1
    _backend().clear_cache()
    if disk:
        _backend().clear_disk_cache()
