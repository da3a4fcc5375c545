"""``fjax.debug``: print and call back from inside transformed (``jit``, ``vmap``, ``grad``,
``lax.scan`` ...) functions, as ``jax.debug``.

Both stage one ``debug_callback`` equation (``fjax._callback``), which is never dead-code
eliminated and runs once each time the surrounding program runs: under ``jit`` at every call
(not at trace time), inside ``lax.scan``/``while_loop`` at every iteration, under ``vmap`` once
per example, under ``jvp``/``grad`` on primal values only.
"""

from __future__ import annotations

import functools
import logging
import string
import sys
from typing import Any, Callable, Sequence

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core
from fjax._callback import _name, bind_debug_callback
from fjax._debugger import breakpoint  # noqa: A004 - the public name is jax.debug.breakpoint

_logger = logging.getLogger("jax._src.debugging")  # JAX's logger name, so handlers set for JAX see it

__all__ = [
    "breakpoint",
    "callback",
    "inspect_array_sharding",
    "log",
    "print",
    "visualize_array_sharding",
    "visualize_sharding",
]


class _Shown:
    """A parameter value that prints as ``repr`` of what it holds (a function prints by its
    ``__name__`` otherwise)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)

    __str__ = __repr__


def debug_callback(
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
    is accepted and ignored (one device). The staged equation prints as JAX 0.10.2's
    ``debug_callback[callback=<function debug_callback.<locals>._debug_callback.<locals>._flat_callback
    at 0xXXXXXXXXXXXX> effect=Debug partitioned=False]`` (``effect=OrderedDebug`` when ordered).
    """
    effect = "OrderedDebug" if ordered else "Debug"

    def _debug_callback(fn: Callable[..., None], *c_args: Any, **c_kwargs: Any) -> None:
        if not callable(fn):
            raise TypeError(
                f"first argument to jax.debug.callback must be callable, but got an object of type {type(fn)}"
            )

        def _flat_callback(*a: Any, **k: Any) -> None:  # (named, and nested, as JAX's)
            fn(*a, **k)

        def printed(tree: Any, static: dict) -> tuple[str, list]:
            return "debug_callback", [
                ("callback", _Shown(_flat_callback)),
                ("effect", effect),
                ("partitioned", partitioned),
            ]

        bind_debug_callback(_flat_callback, c_args, c_kwargs, label=_name(fn), printed=printed)

    if callback is not None:
        _debug_callback(callback, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError(f"debug_callback received unexpected arguments in the two-call form: {args=} {kwargs=}")
    return _debug_callback


callback = debug_callback  # (jax.debug.callback is JAX's debug_callback)


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

    def __init__(self, fmt: str, has_placeholders: bool, printoptions: dict, use_logging: bool = False):
        self.fmt = fmt
        self.has_placeholders = has_placeholders
        self.printoptions = printoptions
        self.use_logging = use_logging

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        if self.has_placeholders:
            with np.printoptions(**self.printoptions):
                msg = self.fmt.format(*args, **kwargs)
        else:
            msg = " ".join((self.fmt, *(str(a) for a in args)))
        if self.use_logging:
            _logger.info(msg)
        else:
            sys.stdout.write(msg + "\n")


def print(  # noqa: A001 - the public name is jax.debug.print
    fmt: str | None = None,
    *args: Any,
    ordered: bool = False,
    partitioned: bool = False,
    skip_format_check: bool = False,
    _use_logging: bool = False,
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
    fjax prints in program order whatever ``ordered`` says; ``partitioned`` is ignored. The staged
    equation prints as JAX's ``debug_print[fmt=... ordered=... static_args=...]``.
    """

    def _debug_print(fmt: str, *c_args: Any, _depth: int = 1, **c_kwargs: Any) -> None:
        if not isinstance(fmt, str):
            raise TypeError(f"jax.debug.print: the format must be a str, got {type(fmt).__name__}")
        if not skip_format_check:
            _checker.format(fmt, *c_args, **c_kwargs)
        has_placeholders = False
        if fmt:
            _, field_name, *_ = next(iter(string.Formatter().parse(fmt)))
            has_placeholders = field_name is not None
        printoptions = dict(np.get_printoptions())
        printer = _Printer(fmt, has_placeholders, printoptions, _use_logging)
        record = _log_record(sys._getframe(_depth)) if _use_logging else None

        def printed(tree: Any, static: dict) -> tuple[str, list]:
            return "debug_print", [
                ("fmt", fmt),
                ("has_placeholders", has_placeholders),
                ("in_tree", tree),
                ("logging_record", record),
                ("np_printoptions", tuple(printoptions.items())),
                ("ordered", ordered),
                ("partitioned", partitioned),
                ("static_args", tuple(sorted(static.items()))),
            ]

        bind_debug_callback(printer, c_args, c_kwargs, label=f"print({fmt!r})", printed=printed)

    if fmt is not None:
        _debug_print(fmt, *args, _depth=2, **kwargs)
        return None
    if args or kwargs:
        raise TypeError(f"debug_print received unexpected arguments in the two-call form: {args=} {kwargs=}")
    return _debug_print


def _log_record(frame: Any) -> logging.LogRecord:
    """The record JAX's ``debug.log`` keeps in its equation (shown as ``logging_record``): the
    caller's file and line, at INFO on JAX's logger."""
    code = frame.f_code
    return logging.LogRecord(_logger.name, logging.INFO, code.co_filename, frame.f_lineno, "", None, None, code.co_name)


#: ``debug.print`` that logs the message at INFO level on the ``jax._src.debugging`` logger
#: instead of writing it to stdout (``jax.debug.log``)
log = functools.partial(print, _use_logging=True)


def _sharding_of(x: Any) -> Any:
    if isinstance(x, core.Tracer):
        # inside a transform fjax computes on the whole value on the host: one device
        from fjax._devices import get_default_device, sharding_for  # noqa: PLC0415

        return sharding_for(get_default_device())
    return x.sharding


def inspect_array_sharding(value: Any, *, callback: Callable[[Any], None]) -> None:
    """Call ``callback(sharding)`` for each array leaf of ``value`` (``jax.debug.inspect_array_sharding``).

    Eagerly it is the array's ``.sharding``. Inside ``jit`` (at trace time, as JAX does at
    compile time) fjax does not track layouts of traced values and computes on the whole value
    on one device, so the callback gets that device's ``SingleDeviceSharding``.
    """
    for leaf in tu.tree_leaves(value):
        if isinstance(leaf, (core.Array, core.Tracer)):
            callback(_sharding_of(leaf))


def _label(devs: list) -> str:
    plat = devs[0].platform.upper()
    return f"{plat} " + ",".join(str(d.id) for d in sorted(devs, key=lambda d: d.id))


def visualize_sharding(
    shape: Sequence[int],
    sharding: Any,
    *,
    use_color: bool = True,
    scale: float = 1.0,
    min_width: int = 9,
    max_width: int = 80,
    color_map: Any = None,
) -> None:
    """Print a plain-text grid of the shards of an array of ``shape`` (rank 1 or 2) laid out by
    ``sharding``: one box per shard, labelled with its devices (``jax.debug.visualize_sharding``,
    which draws with ``rich``; fjax draws with characters and ignores the color options)."""
    shape = tuple(int(d) for d in shape)
    if len(shape) not in (1, 2):
        raise ValueError(f"Unsupported tensor shape: {shape}. Only rank 1 and rank 2 tensors are supported.")
    shape2 = shape if len(shape) == 2 else (1, shape[0])
    cells: dict = {}
    for dev, idx in sharding.devices_indices_map(shape).items():
        idx2 = idx if len(shape) == 2 else (slice(None), *idx)
        key = tuple(s.indices(n)[:2] for s, n in zip(idx2, shape2))
        cells.setdefault(key, []).append(dev)
    rows = sorted({k[0] for k in cells})
    cols = sorted({k[1] for k in cells})
    width = max(min_width, min(max_width // max(len(cols), 1), max(len(_label(v)) for v in cells.values()) + 2))
    line = "+" + "+".join("-" * width for _ in cols) + "+"
    out = [line]
    for r in rows:
        out.append("|" + "|".join(_label(cells[(r, c)]).center(width) for c in cols) + "|")
        out.append(line)
    sys.stdout.write("\n".join(out) + "\n")


def visualize_array_sharding(arr: Any, **kwargs: Any) -> None:
    """``visualize_sharding(arr.shape, sharding of arr)`` (see ``inspect_array_sharding``)."""
    inspect_array_sharding(arr, callback=lambda s: visualize_sharding(arr.shape, s, **kwargs))
