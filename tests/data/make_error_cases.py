"""Records what JAX raises on each invalid call of error_cases.py into error_cases.json.

Run with JAX installed (NOT part of the test suite; the tests never import jax):
    python tests/data/make_error_cases.py
It was run with JAX 0.10.2 on the CPU backend, x64 disabled (the default). For each case it stores
the exception class name, the names along its MRO (so that subclass relations such as
TracerBoolConversionError < ConcretizationTypeError < TypeError can be checked) and the message, or
``null`` when JAX raised nothing. Results are blocked on, so errors raised at run time count too.
"""

import json
import pathlib
import sys
import warnings

import jax

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from error_cases import all_cases, run  # noqa: E402


def main():
    out = {"jax_version": jax.__version__, "cases": {}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key, thunk in all_cases(jax).items():
            out["cases"][key] = run(thunk, jax.block_until_ready)
    path = pathlib.Path(__file__).with_name("error_cases.json")
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    n = sum(v is not None for v in out["cases"].values())
    print(f"{len(out['cases'])} cases, {n} raise under JAX {jax.__version__}")


if __name__ == "__main__":
    main()
