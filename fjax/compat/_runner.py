"""Command-line runner: install the ``import jax`` hook, then run a script or module as ``python`` would."""

from __future__ import annotations

import os
import runpy
import sys
import types

from fjax.compat import install

_USAGE = "usage: python -m fjax.compat [-m module | -c code | - | script.py] [args...]"


def main(argv: list[str] | None = None) -> int:
    """Run ``script.py args``, ``-m module args``, ``-c code`` or ``-`` (code from stdin) with fjax
    standing in for jax; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(_USAGE, file=sys.stderr if not args else sys.stdout)
        return 2 if not args else 0
    install()
    if args[0] == "-m":
        if len(args) < 2:
            print(_USAGE, file=sys.stderr)
            return 2
        sys.argv = args[1:]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    elif args[0] in ("-", "-c"):
        if args[0] == "-c" and len(args) < 2:
            print(_USAGE, file=sys.stderr)
            return 2
        code = sys.stdin.read() if args[0] == "-" else args[1]
        sys.argv = ["-c", *args[2:]] if args[0] == "-c" else ["-", *args[1:]]
        sys.path.insert(0, "")
        main_mod = types.ModuleType("__main__")
        sys.modules["__main__"] = main_mod
        exec(compile(code, "<stdin>" if args[0] == "-" else "<string>", "exec"), main_mod.__dict__)
    else:
        sys.argv = args
        sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
        runpy.run_path(args[0], run_name="__main__")
    return 0
