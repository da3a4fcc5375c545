"""Record ``transform_differential.json``: the results under real JAX of the transform calls in
``transform_differential_cases.py`` (grad, jacfwd/jacrev, jvp, vjp, hessian and vmap of
jnp/lax/nn/scipy functions at awkward points, and the error types of invalid transforms), for
``tests/test_transform_differential.py``.

Run it under JAX, never from the test suite (which does not import jax)::

    env -u OPENBLAS_CORETYPE /tmp/jaxenv/bin/python tests/data/make_transform_differential.py [PREFIX ...]

With key prefixes (``float32:cf:``, ...) only the cases whose keys start with one of them, and the
cases new since the file was written, are run again; the other results are kept.

Recorded with JAX 0.10.2 on CPU: the ``float32:`` cases with x64 off, then the ``float64:`` cases
with ``jax_enable_x64`` on. Each entry is ``{"ok": encoded result}`` (see
``jnp_differential_cases.encode``; tuples as lists, dicts as ``{"dict": [values in key order]}``)
or ``{"err": exception type name}``.
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
import jax.numpy  # noqa: E402, F401
import jax.scipy.linalg  # noqa: E402, F401
import jax.scipy.special  # noqa: E402, F401
from transform_differential_cases import all_cases, run  # noqa: E402


def main(prefixes: list[str]) -> None:
    path = os.path.join(HERE, "transform_differential.json")
    old = {}
    if prefixes:  # re-record only these keys, keep the others (JAX's eager calls take ~15 minutes)
        with open(path) as f:
            old = json.load(f)["results"]

    def record(dt: str) -> dict:
        cases = all_cases(jax, dt)
        keep = {k: old[k] for k in cases if k in old and not k.startswith(tuple(prefixes))}
        return {**keep, **{k: run(fn) for k, fn in cases.items() if k not in keep}}

    results = record("float32")
    jax.config.update("jax_enable_x64", True)
    try:
        results.update(record("float64"))
    finally:
        jax.config.update("jax_enable_x64", False)
    out = {"jax_version": jax.__version__, "results": results}
    with open(path + ".tmp", "w") as f:
        json.dump(out, f, separators=(",", ":"), sort_keys=True)
    os.replace(path + ".tmp", path)
    print(f"{len(results)} results -> {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main(sys.argv[1:])
