"""``jax.monitoring``: a registry of listeners for events, durations, time spans and scalars.

Code records events (``record_event("/my/event", tag="x")``) and every registered listener of
that kind is called with the event name and the keyword metadata. Unlike JAX, fjax records no
events of its own (no compile or tracing durations); ``jax.profiler`` turns the durations
recorded here while a trace runs into spans.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = [
    "clear_event_listeners",
    "record_event",
    "record_event_duration_secs",
    "record_event_time_span",
    "record_scalar",
    "register_event_duration_secs_listener",
    "register_event_listener",
    "register_event_time_span_listener",
    "register_scalar_listener",
    "unregister_event_duration_listener",
    "unregister_event_listener",
    "unregister_event_time_span_listener",
    "unregister_scalar_listener",
]

_lock = threading.Lock()
_event_listeners: list[Callable[..., None]] = []
_duration_listeners: list[Callable[..., None]] = []
_time_span_listeners: list[Callable[..., None]] = []
_scalar_listeners: list[Callable[..., None]] = []


def _check_event(fn: str, event: Any) -> None:
    if not isinstance(event, str):
        raise TypeError(f"{fn}: the event name must be a str, got {type(event).__name__}")


def record_event(event: str, **kwargs: str | int) -> None:
    """Call every event listener with ``(event, **kwargs)``."""
    _check_event("record_event", event)
    for fn in list(_event_listeners):
        fn(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs: str | int) -> None:
    """Call every duration listener with ``(event, duration, **kwargs)`` (duration in seconds)."""
    _check_event("record_event_duration_secs", event)
    for fn in list(_duration_listeners):
        fn(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float, **kwargs: str | int) -> None:
    """Call every time-span listener with ``(event, start_time, end_time, **kwargs)``."""
    _check_event("record_event_time_span", event)
    for fn in list(_time_span_listeners):
        fn(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs: str | int) -> None:
    """Call every scalar listener with ``(event, value, **kwargs)``."""
    _check_event("record_scalar", event)
    for fn in list(_scalar_listeners):
        fn(event, value, **kwargs)


def _register(registry: list, callback: Callable[..., None], fn: str) -> None:
    if not callable(callback):
        raise TypeError(f"{fn}: the listener must be callable, got {type(callback).__name__}")
    with _lock:
        registry.append(callback)


def _unregister(registry: list, callback: Callable[..., None], fn: str) -> None:
    with _lock:
        if callback not in registry:
            raise AssertionError(f"{fn}: callback {callback!r} is not registered.")
        registry.remove(callback)


def register_event_listener(callback: Callable[..., None]) -> None:
    """Register ``callback(event, **kwargs)``, called by :func:`record_event`."""
    _register(_event_listeners, callback, "register_event_listener")


def register_event_duration_secs_listener(callback: Callable[..., None]) -> None:
    """Register ``callback(event, duration_secs, **kwargs)``, called by :func:`record_event_duration_secs`."""
    _register(_duration_listeners, callback, "register_event_duration_secs_listener")


def register_event_time_span_listener(callback: Callable[..., None]) -> None:
    """Register ``callback(event, start_time, end_time, **kwargs)``, called by :func:`record_event_time_span`."""
    _register(_time_span_listeners, callback, "register_event_time_span_listener")


def register_scalar_listener(callback: Callable[..., None]) -> None:
    """Register ``callback(event, value, **kwargs)``, called by :func:`record_scalar`."""
    _register(_scalar_listeners, callback, "register_scalar_listener")


def unregister_event_listener(callback: Callable[..., None]) -> None:
    """Remove an event listener (AssertionError if it is not registered)."""
    _unregister(_event_listeners, callback, "unregister_event_listener")


def unregister_event_duration_listener(callback: Callable[..., None]) -> None:
    """Remove a duration listener (AssertionError if it is not registered)."""
    _unregister(_duration_listeners, callback, "unregister_event_duration_listener")


def unregister_event_time_span_listener(callback: Callable[..., None]) -> None:
    """Remove a time-span listener (AssertionError if it is not registered)."""
    _unregister(_time_span_listeners, callback, "unregister_event_time_span_listener")


def unregister_scalar_listener(callback: Callable[..., None]) -> None:
    """Remove a scalar listener (AssertionError if it is not registered)."""
    _unregister(_scalar_listeners, callback, "unregister_scalar_listener")


def clear_event_listeners() -> None:
    """Remove every listener of every kind."""
    with _lock:
        _event_listeners.clear()
        _duration_listeners.clear()
        _time_span_listeners.clear()
        _scalar_listeners.clear()


def _get_event_listeners() -> list[Callable[..., None]]:
    return list(_event_listeners)


def _get_event_duration_listeners() -> list[Callable[..., None]]:
    return list(_duration_listeners)
