"""``jax.debug.breakpoint``: a pdb-like debugger (``(jdb)`` prompt) that stops where it is called,
eagerly and inside transformed code (``jit``, ``vmap``, ``grad``, loops).

At the call (trace time under ``jit``) the Python frames of the caller are captured: their
source position and locals. The array locals (pytrees holding ``Array``s or tracers) become the
arguments of one ``debug_callback`` equation, so when the program runs the debugger shows their
runtime values; other locals are shown as they were at the call. The debugger itself runs on the
host when the callback fires. Commands, as JAX's CLI debugger: ``p``/``pp`` EXPR (print an
expression evaluated in the current frame; a bare expression works too), ``u``/``up``,
``d``/``down``, ``l``/``list``, ``ll``/``longlist``, ``w``/``where``, ``c``/``continue``,
``q``/``quit``/``exit`` (raises SystemExit, as JAX's).

Backends are looked up in ``_debugger_backends`` (``"cli"`` is the only one); tests and tools
may register their own, called as ``backend(frames, **kwargs)``.
"""

from __future__ import annotations

import cmd
import linecache
import os
import pprint
import sys
import traceback
from collections.abc import Callable
from typing import Any, TextIO

from fjax import _tree_lifted as tu
from fjax import core
from fjax._callback import bind_debug_callback

__all__ = ["breakpoint"]

_FJAX_DIR = os.path.dirname(os.path.abspath(__file__))


class DebuggerFrame:
    """One captured frame: file, line, function name, source lines, locals and globals."""

    def __init__(self, filename: str, lineno: int, name: str, locals_: dict, globals_: dict) -> None:
        self.filename = filename
        self.lineno = lineno
        self.name = name
        self.locals = locals_
        self.globals = globals_

    def source_lines(self) -> list[str]:
        return linecache.getlines(self.filename)


class CliDebugger(cmd.Cmd):
    """The ``(jdb)`` command loop over captured frames (innermost first)."""

    prompt = "(jdb) "

    def __init__(self, frames: list[DebuggerFrame], stdin: TextIO | None = None, stdout: TextIO | None = None):
        super().__init__(stdin=stdin, stdout=stdout)
        self.use_rawinput = stdin is None
        self.frames = frames
        self.frame_index = 0

    @property
    def frame(self) -> DebuggerFrame:
        return self.frames[self.frame_index]

    def _eval(self, expr: str) -> Any:
        return eval(expr, dict(self.frame.globals), dict(self.frame.locals))  # noqa: S307 - a debugger

    def _error(self) -> None:
        etype, value, _ = sys.exc_info()
        name = etype.__name__ if etype is not None else "Error"
        print(f"*** {name}: {value}", file=self.stdout)

    def default(self, line: str) -> None:
        try:
            print(repr(self._eval(line)), file=self.stdout)
        except Exception:
            self._error()

    def emptyline(self) -> bool:
        return False

    def do_p(self, arg: str) -> None:
        """p expression: print the value of the expression."""
        self.default(arg)

    def do_pp(self, arg: str) -> None:
        """pp expression: pretty-print the value of the expression."""
        try:
            print(pprint.pformat(self._eval(arg)), file=self.stdout)
        except Exception:
            self._error()

    def _show(self, context: int | None) -> None:
        f = self.frame
        print(f"> {f.filename}({f.lineno})", file=self.stdout)
        lines = f.source_lines()
        lo, hi = (0, len(lines)) if context is None else (max(f.lineno - 1 - context, 0), f.lineno + context)
        for i in range(lo, min(hi, len(lines))):
            mark = "->  " if i == f.lineno - 1 else "    "
            print(mark + lines[i].rstrip("\n"), file=self.stdout)

    def do_l(self, arg: str) -> None:
        """l: list source lines around the current line."""
        self._show(5)

    do_list = do_l

    def do_ll(self, arg: str) -> None:
        """ll: list the whole source file of the current frame."""
        self._show(None)

    do_longlist = do_ll

    def do_u(self, arg: str) -> None:
        """u: move to the calling frame."""
        if self.frame_index == len(self.frames) - 1:
            print("At topmost frame.", file=self.stdout)
        else:
            self.frame_index += 1
        self._show(2)

    do_up = do_u

    def do_d(self, arg: str) -> None:
        """d: move to the called frame."""
        if self.frame_index == 0:
            print("At bottommost frame.", file=self.stdout)
        else:
            self.frame_index -= 1
        self._show(2)

    do_down = do_d

    def do_w(self, arg: str) -> None:
        """w: print the stack trace."""
        print("Traceback:", file=self.stdout)
        for f in reversed(self.frames):
            print(f'  File "{f.filename}", line {f.lineno}', file=self.stdout)
            line = linecache.getline(f.filename, f.lineno).strip()
            if line:
                print(f"    {line}", file=self.stdout)

    do_where = do_w

    def do_c(self, arg: str) -> bool:
        """c: continue the program."""
        return True

    do_cont = do_continue = do_c

    def do_q(self, arg: str) -> None:
        """q: quit the program (SystemExit)."""
        sys.exit(0)

    do_quit = do_exit = do_q

    def do_EOF(self, arg: str) -> None:  # noqa: N802 - cmd.Cmd's name for end of input
        sys.exit(0)

    def run(self) -> None:
        print("Entering jdb:", file=self.stdout)
        self.cmdloop()


def _cli_backend(frames: list[DebuggerFrame], stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
    CliDebugger(frames, stdin=stdin, stdout=stdout).run()


_debugger_backends: dict[str, Callable[..., None]] = {"cli": _cli_backend}


def _has_arrays(value: Any) -> bool:
    try:
        leaves = tu.tree_leaves(value)
    except Exception:
        return False
    return bool(leaves) and any(isinstance(x, (core.Array, core.Tracer)) for x in leaves)


def breakpoint(  # noqa: A001 - the public name is jax.debug.breakpoint
    *,
    backend: str | None = None,
    filter_frames: bool = True,
    num_frames: int | None = None,
    ordered: bool = False,
    token: Any = None,
    **kwargs: Any,
) -> Any:
    """Stop the program here in a debugger when it runs (``jax.debug.breakpoint``; see the module
    docstring). ``filter_frames`` drops fjax's own frames; ``num_frames`` keeps only that many of
    the innermost frames; ``kwargs`` go to the debugger backend (the CLI one takes ``stdin`` and
    ``stdout``). ``ordered``/``token`` are accepted (fjax's callbacks always run in order)."""
    name = backend or "cli"
    if name not in _debugger_backends:
        raise ValueError(f"Debugger backend {name!r} is not available; available: {sorted(_debugger_backends)}")
    frame = sys._getframe(1)
    captured: list[tuple[Any, dict, dict]] = []  # (frame info, array locals, other locals)
    while frame is not None:
        fn = os.path.abspath(frame.f_code.co_filename)
        internal = fn.startswith(_FJAX_DIR + os.sep) or "importlib" in fn
        if not (filter_frames and internal):
            arrays = {k: v for k, v in frame.f_locals.items() if _has_arrays(v)}
            others = {k: v for k, v in frame.f_locals.items() if k not in arrays}
            info = (fn, frame.f_lineno, frame.f_code.co_name, frame.f_globals)
            captured.append((info, arrays, others))
        frame = frame.f_back
    if num_frames is not None:
        captured = captured[:num_frames]
    array_args = [arrays for _, arrays, _ in captured]

    def run_debugger(*values: Any) -> None:
        frames = []
        for (info, _, others), arrays in zip(captured, values):
            filename, lineno, fname, globs = info
            frames.append(DebuggerFrame(filename, lineno, fname, {**others, **arrays}, globs))
        try:
            _debugger_backends[name](frames, **kwargs)
        except SystemExit:
            raise
        except Exception:
            traceback.print_exc()

    bind_debug_callback(run_debugger, tuple(array_args), {}, label="breakpoint")
    return token
