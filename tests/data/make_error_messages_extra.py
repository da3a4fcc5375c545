"""Records what JAX raises on each call of error_messages_extra_cases.py into
error_messages_extra.json.

Run with JAX installed (NOT part of the test suite; the tests never import jax):
    python tests/data/make_error_messages_extra.py
It was run with JAX 0.10.2 on the CPU backend, x64 disabled (the default).
"""

import json
import pathlib
import sys
import warnings

import jax

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from error_messages_extra_cases import CASES, namespace, run  # noqa: E402


def main():
    ns = namespace(jax)
    out = {"jax_version": jax.__version__, "cases": {}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key, expr in CASES.items():
            out["cases"][key] = run(expr, ns)
    path = pathlib.Path(__file__).with_name("error_messages_extra.json")
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"{len(out['cases'])} cases recorded under JAX {jax.__version__}")


if __name__ == "__main__":
    main()
