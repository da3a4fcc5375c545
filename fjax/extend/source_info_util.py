"""``jax.extend.source_info_util``: where in the user's code an equation came from.

fjax records no source information on equations and filters no frames from tracebacks, so these
keep what libraries register (flax adds its files to the excluded set) and answer from the
Python stack when asked.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator
from typing import NamedTuple

_exclude_paths: list[str] = []


def register_exclusion(path: str) -> None:
    """Record ``path`` as a library's own: its frames are not the user's."""
    _exclude_paths.append(path)


class Frame(NamedTuple):
    file_name: str
    function_name: str
    start_line: int
    start_column: int = 0
    end_line: int = 0
    end_column: int = 0


class SourceInfo(NamedTuple):
    traceback: list[Frame] | None = None
    name_stack: tuple[str, ...] = ()


def _is_user_frame(f: types.FrameType) -> bool:
    name = f.f_code.co_filename
    return not any(name.startswith(p) for p in _exclude_paths) and "/fjax/" not in name


def user_frame(source_info: SourceInfo | None = None) -> Frame | None:
    """The innermost frame of ``source_info`` (or of the current stack) outside fjax and the
    registered libraries."""
    if source_info is not None and source_info.traceback:
        return source_info.traceback[0]
    f = sys._getframe(1)
    while f is not None:
        if _is_user_frame(f):
            return Frame(f.f_code.co_filename, f.f_code.co_name, f.f_lineno)
        f = f.f_back
    return None


def current() -> SourceInfo:
    """The current source information: the user's frame on the Python stack."""
    fr = user_frame()
    return SourceInfo([fr] if fr is not None else None)


def summarize(source_info: SourceInfo, num_frames: int = 1) -> str:
    fr = user_frame(source_info)
    return f"{fr.file_name}:{fr.start_line} ({fr.function_name})" if fr is not None else "unknown"


@contextlib.contextmanager
def extend_name_stack(name: str) -> Iterator[None]:
    """Accepted for compatibility: fjax keeps no name stack on equations."""
    yield


@contextlib.contextmanager
def user_context(c: object, *, name_stack: object = None) -> Iterator[None]:
    yield
