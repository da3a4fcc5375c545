"""Record ``jnp_differential.json``: the results under real JAX of the calls in
``jnp_differential_cases.py`` (jnp unary/binary functions over many dtypes and special values,
Python-scalar operands, a few keyword-argument cases), for ``tests/test_jnp_differential.py``.

Run it under JAX, never from the test suite (which does not import jax)::

    env -u OPENBLAS_CORETYPE /tmp/jaxenv/bin/python tests/data/make_jnp_differential.py

Recorded with JAX 0.10.2 on CPU, x64 off. Each entry is ``{"ok": {dtype, shape, weak, values}}``
(a list of those for tuple results) or ``{"err": exception type name}``.
"""

from __future__ import annotations

import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jax.scipy.special  # noqa: E402, F401
from jnp_differential_cases import all_cases, run  # noqa: E402


def main() -> None:
    out = {"jax_version": jax.__version__, "results": {k: run(fn) for k, fn in all_cases(jax, jnp).items()}}
    path = os.path.join(HERE, "jnp_differential.json")
    with open(path + ".tmp", "w") as f:
        json.dump(out, f, separators=(",", ":"), sort_keys=True)
    os.replace(path + ".tmp", path)
    print(f"{len(out['results'])} results -> {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
