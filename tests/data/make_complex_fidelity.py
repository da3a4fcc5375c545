"""Record ``complex_fidelity.json``: the results under real JAX of the calls in
``complex_fidelity_cases.py`` (jnp/lax on complex64/complex128 and mixed real/complex operands,
with x64 off and on), for ``tests/test_complex_fidelity.py``.

Run it under JAX, never from the test suite (which does not import jax)::

    env -u OPENBLAS_CORETYPE /tmp/jaxenv/bin/python tests/data/make_complex_fidelity.py

Recorded with JAX 0.10.2 on CPU. Each entry is ``{"ok": {dtype, shape, weak, values}, "warn": [...]}``
(a list of records for tuple results) or ``{"err": type name, "msg": first line, "warn": [...]}``.
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import jax  # noqa: E402
import jax.numpy  # noqa: E402, F401
import jax.scipy.special  # noqa: E402, F401
from complex_fidelity_cases import all_cases, run  # noqa: E402


def main() -> None:
    out = {"jax_version": jax.__version__, "results": {k: run(fn) for k, fn in all_cases(jax).items()}}
    path = os.path.join(HERE, "complex_fidelity.json")
    with open(path + ".tmp", "w") as f:
        json.dump(out, f, separators=(",", ":"), sort_keys=True, indent=0)
    os.replace(path + ".tmp", path)
    print(f"{len(out['results'])} results -> {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
