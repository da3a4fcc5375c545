"""``python -m fjax.compat [-m module | script.py] [args...]``: run a program with ``import jax`` -> fjax."""

from fjax.compat._runner import main

if __name__ == "__main__":
    raise SystemExit(main())
