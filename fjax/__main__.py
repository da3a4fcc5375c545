"""``python -m fjax run [-m module | script.py] [args...]``: run a JAX program on fjax."""

import sys

from fjax.compat._runner import main

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "run":
        print("usage: python -m fjax run [-m module | script.py] [args...]", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(main(sys.argv[2:]))
