"""``jax.profiler``: host wall-clock traces of annotated regions, written as Chrome trace JSON.

fjax has no device profiler (no XLA/TSL profiler, no xplane protobuf). While a trace runs
(``with jax.profiler.trace(log_dir):`` or ``start_trace``/``stop_trace``) fjax records host
spans: each ``TraceAnnotation`` / ``StepTraceAnnotation`` block, each call of a function wrapped
by ``annotate_function``, and each duration recorded with
``jax.monitoring.record_event_duration_secs`` (a span ending when it was recorded, named by the
event). fjax does not record its own ``jit`` calls or compilations. ``stop_trace`` writes them in the Chrome trace
event format (which Perfetto and ``chrome://tracing`` open) to
``log_dir/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json.gz``, where JAX writes its own
trace next to an ``.xplane.pb``; ``create_perfetto_trace=True`` also writes
``perfetto_trace.json.gz`` there. Things that need JAX's profiler runtime (a profiler server,
device memory profiles, ``ProfileData``) raise ``NotImplementedError`` naming themselves.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from fjax import monitoring

__all__ = [
    "ProfileData",
    "ProfileEvent",
    "ProfileOptions",
    "ProfilePlane",
    "StepTraceAnnotation",
    "TraceAnnotation",
    "annotate_function",
    "device_memory_profile",
    "register_subprocess",
    "save_device_memory_profile",
    "start_server",
    "start_trace",
    "stop_server",
    "stop_trace",
    "trace",
]


class ProfileOptions:
    """Options of a trace (``jax.profiler.ProfileOptions``); fjax records host spans only, so the
    levels are kept but change nothing."""

    def __init__(self) -> None:
        self.host_tracer_level = 2
        self.python_tracer_level = 0
        self.enable_hlo_proto = True
        self.start_timestamp_ns = 0
        self.duration_ms = 0
        self.repository_path = ""
        self.raise_error_on_start_failure = False
        self.advanced_configuration: dict = {}


class _Session:
    """The trace in progress: its log directory and the events recorded so far."""

    def __init__(self, log_dir: str, create_perfetto_link: bool, create_perfetto_trace: bool) -> None:
        self.log_dir = log_dir
        self.create_perfetto_link = create_perfetto_link
        self.create_perfetto_trace = create_perfetto_trace
        self.events: list[dict] = []
        self.lock = threading.Lock()
        self.t0_ns = time.perf_counter_ns()

    def add(self, name: str, start_ns: int, end_ns: int, args: dict) -> None:
        ev = {
            "name": name,
            "ph": "X",
            "ts": (start_ns - self.t0_ns) / 1e3,
            "dur": (end_ns - start_ns) / 1e3,
            "pid": os.getpid(),
            "tid": threading.get_ident(),
        }
        if args:
            ev["args"] = {k: str(v) for k, v in args.items()}
        with self.lock:
            self.events.append(ev)


_state_lock = threading.Lock()
_session: _Session | None = None


def _duration_listener(event: str, duration: float, **kwargs: Any) -> None:
    s = _session
    if s is not None:
        end = time.perf_counter_ns()
        s.add(event, end - int(duration * 1e9), end, kwargs)


def start_trace(
    log_dir: os.PathLike | str,
    create_perfetto_link: bool = False,
    create_perfetto_trace: bool = False,
    profiler_options: ProfileOptions | None = None,
) -> None:
    """Start recording host spans; ``stop_trace`` writes them under ``log_dir`` (see the module
    docstring). RuntimeError if a trace is already running."""
    global _session
    with _state_lock:
        if _session is not None:
            raise RuntimeError("Profile has already been started. Only one profile may be run at a time.")
        _session = _Session(os.fspath(log_dir), create_perfetto_link, create_perfetto_trace)
    monitoring.register_event_duration_secs_listener(_duration_listener)


def stop_trace() -> None:
    """Stop the trace and write it (RuntimeError "No profile started" without one)."""
    global _session
    with _state_lock:
        s = _session
        if s is None:
            raise RuntimeError("No profile started")
        _session = None
    with contextlib.suppress(AssertionError):
        monitoring.unregister_event_duration_listener(_duration_listener)
    run = os.path.join(s.log_dir, "plugins", "profile", time.strftime("%Y_%m_%d_%H_%M_%S"))
    os.makedirs(run, exist_ok=True)
    host = socket.gethostname() or "localhost"
    meta = [
        {"name": "process_name", "ph": "M", "pid": os.getpid(), "args": {"name": f"{host} (fjax host)"}},
    ]
    doc = {"displayTimeUnit": "ns", "traceEvents": meta + sorted(s.events, key=lambda e: e["ts"])}
    data = gzip.compress(json.dumps(doc).encode())
    names = [f"{host}.trace.json.gz"] + (["perfetto_trace.json.gz"] if s.create_perfetto_trace else [])
    for name in names:
        path = os.path.join(run, name)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    if s.create_perfetto_link:
        print(f"fjax: trace written to {os.path.join(run, names[-1])}; open it at https://ui.perfetto.dev")


@contextlib.contextmanager
def trace(
    log_dir: os.PathLike | str,
    create_perfetto_link: bool = False,
    create_perfetto_trace: bool = False,
    profiler_options: ProfileOptions | None = None,
) -> Iterator[None]:
    """Context manager: ``start_trace`` on entry, ``stop_trace`` on exit."""
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
    try:
        yield
    finally:
        stop_trace()


class TraceAnnotation:
    """A named span in the trace (``with TraceAnnotation("name", key=value): ...``); keyword
    arguments become the event's ``args``. Costs a time read when no trace runs."""

    def __init__(self, name: str, **kwargs: Any) -> None:
        self.name = name
        self.kwargs = kwargs
        self._start: list[int] = []

    def __enter__(self) -> TraceAnnotation:
        self._start.append(time.perf_counter_ns())
        return self

    def __exit__(self, *exc: Any) -> None:
        start = self._start.pop()
        s = _session
        if s is not None:
            s.add(self.name, start, time.perf_counter_ns(), self.kwargs)


class StepTraceAnnotation(TraceAnnotation):
    """A training-step span: ``StepTraceAnnotation("train", step_num=i)``."""

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)


def annotate_function(func: Callable, name: str | None = None, **decorator_kwargs: Any) -> Callable:
    """``func`` with each call recorded as a span named ``name`` (default: its qualified name)."""
    label = name if name is not None else getattr(func, "__qualname__", getattr(func, "__name__", repr(func)))

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with TraceAnnotation(label, **decorator_kwargs):
            return func(*args, **kwargs)

    return wrapper


def _unsupported(what: str) -> NotImplementedError:
    return NotImplementedError(f"jax.profiler.{what} is not implemented in fjax (it has no device profiler runtime)")


def start_server(port: int, requires_backend: bool = True) -> Any:
    """Not implemented: fjax has no profiler server to connect TensorBoard or Perfetto to."""
    raise _unsupported("start_server")


def stop_server() -> None:
    """Not implemented (see ``start_server``)."""
    raise _unsupported("stop_server")


def register_subprocess(pid: int, port: int) -> Callable[[], None]:
    """Not implemented (there is no profiler server)."""
    raise _unsupported("register_subprocess")


def device_memory_profile(backend: str | None = None) -> bytes:
    """Not implemented: fjax cannot produce JAX's pprof device memory profile."""
    raise _unsupported("device_memory_profile")


def save_device_memory_profile(filename: Any, backend: str | None = None) -> None:
    """Not implemented (see ``device_memory_profile``)."""
    raise _unsupported("save_device_memory_profile")


class ProfileData:
    """Not implemented: JAX's reader of xplane profiles (fjax writes Chrome trace JSON)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise _unsupported("ProfileData")

    @classmethod
    def from_file(cls, path: str) -> ProfileData:
        raise _unsupported("ProfileData.from_file")

    @classmethod
    def from_serialized_xspace(cls, data: bytes) -> ProfileData:
        raise _unsupported("ProfileData.from_serialized_xspace")


class ProfilePlane:
    """Not implemented (a plane of a ``ProfileData``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise _unsupported("ProfilePlane")


class ProfileEvent:
    """Not implemented (an event of a ``ProfileData``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise _unsupported("ProfileEvent")
