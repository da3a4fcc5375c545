"""Command-line runner: install the ``import jax`` hook, then run a script or module as ``python`` would."""

from __future__ import annotations

import runpy
import sys

from fjax.compat import install

_USAGE = "usage: python -m fjax.compat [-m module | script.py] [args...]"


def main(argv: list[str] | None = None) -> int:
    """Run ``script.py args`` or ``-m module args`` with fjax standing in for jax; returns the exit code."""
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
    else:
        sys.argv = args
        sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(args[0])))
        runpy.run_path(args[0], run_name="__main__")
    return 0
