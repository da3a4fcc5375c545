"""Records ``str(jax.make_jaxpr(f)(*args))`` for every case of ``jaxpr_cases_s16.py`` into
``jaxpr_printing_s16.json`` (read by ``tests/test_jaxpr_printing_s16.py``).

Run with JAX installed (never imported by the test suite): python tests/data/make_jaxpr_printing_s16.py
It was run with JAX 0.10.2 on CPU, x64 off.
"""

import json
import pathlib
import sys

import jax
import jax.numpy as jnp
from jax import lax

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import jaxpr_cases_s16  # noqa: E402


def main():
    out = {"jax_version": jax.__version__, "cases": {}}
    for name, (fn, args) in jaxpr_cases_s16.cases(jax, jnp, lax).items():
        out["cases"][name] = str(jax.make_jaxpr(fn)(*args))
    path = pathlib.Path(__file__).with_name("jaxpr_printing_s16.json")
    path.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
