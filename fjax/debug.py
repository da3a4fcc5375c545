"""``fjax.debug``: print and call back from inside transformed (``jit``, ``vmap``, ``grad``,
``lax.scan`` ...) functions, as ``jax.debug``.

Both stage one ``debug_callback`` equation (``fjax._callback``), which is never dead-code
eliminated and runs once each time the surrounding program runs: under ``jit`` at every call
(not at trace time), inside ``lax.scan``/``while_loop`` at every iteration, under ``vmap`` once
per example, under ``jvp``/``grad`` on primal values only.
"""

from __future__ import annotations

import string
import sys
from typing import Any, Callable

import numpy as np

from fjax._callback import bind_debug_callback

__all__ = ["callback", "print"]


def callback(
    callback: Callable[..., None] | None = None,
    *args: Any,
    ordered: bool = False,
    partitioned: bool = False,
    **kwargs: Any,
) -> Callable[..., None] | None:
    """Call ``callback(*args, **kwargs)`` on the host when the program runs (``jax.debug.callback``).

    Array arguments (pytrees of them) are passed as ``fjax.Array`` values holding the runtime
    values; other arguments are passed unchanged. The callback's return value is ignored.

    Two forms, as JAX: ``callback(fn, *args, **kwargs)`` and ``callback(ordered=True)(fn, *args,
    **kwargs)``. fjax runs callbacks in program order whatever ``ordered`` says; ``partitioned``
    is accepted and ignored (one device).
    """
    del ordered, partitioned

    def _debug_callback(fn: Callable[..., None], *c_args: Any, **c_kwargs: Any) -> None:
        if not callable(fn):
            raise TypeError(
                f"first argument to jax.debug.callback must be callable, but got an object of type {type(fn)}"
            )
        bind_debug_callback(fn, c_args, c_kwargs)

    if callback is not None:
        _debug_callback(callback, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError(f"debug_callback received unexpected arguments in the two-call form: {args=} {kwargs=}")
    return _debug_callback


class _FormatChecker(string.Formatter):
    """Checks a format string against its arguments without formatting anything (as JAX)."""

    def format_field(self, value: Any, format_spec: str) -> str:
        return ""

    def check_unused_args(self, used_args: Any, args: Any, kwargs: Any) -> None:
        unused_args = [a for i, a in enumerate(args) if i not in used_args]
        unused_kwargs = [k for k in kwargs if k not in used_args]
        if unused_args:
            raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused_args}")
        if unused_kwargs:
            raise ValueError(
                f"Unused keyword arguments to `jax.debug.print`: {unused_kwargs}. You may be passing an f-string "
                '(i.e, `f"{x}"`) into `jax.debug.print` and instead should pass in a regular string.'
            )


_checker = _FormatChecker()


class _Printer:
    """The host side of one ``debug.print``: formats with ``str.format`` and writes a line."""

    def __init__(self, fmt: str, has_placeholders: bool, printoptions: dict):
        self.fmt = fmt
        self.has_placeholders = has_placeholders
        self.printoptions = printoptions

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        if self.has_placeholders:
            with np.printoptions(**self.printoptions):
                msg = self.fmt.format(*args, **kwargs)
        else:
            msg = " ".join((self.fmt, *(str(a) for a in args)))
        sys.stdout.write(msg + "\n")


def print(  # noqa: A001 - the public name is jax.debug.print
    fmt: str | None = None,
    *args: Any,
    ordered: bool = False,
    partitioned: bool = False,
    skip_format_check: bool = False,
    **kwargs: Any,
) -> Callable[..., None] | None:
    """Print ``fmt.format(*args, **kwargs)`` when the program runs (``jax.debug.print``).

    Formatting happens on the host with the runtime values (``fjax.Array`` values, formatted as
    ``str.format`` does, under the numpy print options in effect at the call), so it works inside
    ``jit``, ``vmap``, ``grad`` and loops. Do not pass an f-string: write
    ``debug.print("x={x}", x=x)``. Arguments not used by ``fmt`` raise ``ValueError`` unless
    ``skip_format_check=True`` (then a format without placeholders prints the arguments after
    it, separated by spaces).

    Two forms, as JAX: ``print(fmt, *args, **kwargs)`` and ``print(ordered=True)(fmt, ...)``.
    fjax prints in program order whatever ``ordered`` says; ``partitioned`` is ignored.
    """
    del ordered, partitioned

    def _debug_print(fmt: str, *c_args: Any, **c_kwargs: Any) -> None:
        if not isinstance(fmt, str):
            raise TypeError(f"jax.debug.print: the format must be a str, got {type(fmt).__name__}")
        if not skip_format_check:
            _checker.format(fmt, *c_args, **c_kwargs)
        has_placeholders = False
        if fmt:
            _, field_name, *_ = next(iter(string.Formatter().parse(fmt)))
            has_placeholders = field_name is not None
        printer = _Printer(fmt, has_placeholders, dict(np.get_printoptions()))
        bind_debug_callback(printer, c_args, c_kwargs, label=f"print({fmt!r})")

    if fmt is not None:
        _debug_print(fmt, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError(f"debug_print received unexpected arguments in the two-call form: {args=} {kwargs=}")
    return _debug_print
