"""``jax._src.traceback_util``: JAX's traceback filtering, which libraries register with.

JAX hides its own frames from the tracebacks of errors raised inside transforms; libraries built
on JAX (equinox) add their files to the hidden set and wrap their entry points in
``api_boundary``. fjax does not filter tracebacks: these record what is registered and change
nothing, so every frame stays visible.
"""

from __future__ import annotations

import functools
import types
from typing import Any, Callable

_exclude_paths: list[str] = []


def register_exclusion(path: str) -> None:
    """Record ``path`` as a library's (JAX would hide its frames; fjax shows every frame)."""
    _exclude_paths.append(path)


def include_frame(f: types.FrameType) -> bool:
    """Whether a traceback filter would keep frame ``f``: not in a registered path."""
    return not any(f.f_code.co_filename.startswith(p) for p in _exclude_paths)


def api_boundary(fun: Callable | None = None, *, repro_api_name: str | None = None, **kwargs: Any) -> Any:
    """``fun`` unchanged (JAX filters tracebacks at such boundaries; fjax does not)."""
    if fun is None:
        return functools.partial(api_boundary, repro_api_name=repro_api_name, **kwargs)
    return fun


def filter_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    return tb
