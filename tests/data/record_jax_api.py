"""Record JAX's public names per module into jax_public_api.json (run with JAX installed, never in CI).

Made with: ``python3 -m venv /tmp/jaxvenv && /tmp/jaxvenv/bin/pip install jax`` (jax 0.10.2, CPU),
then ``/tmp/jaxvenv/bin/python tests/data/record_jax_api.py``. A public name is an entry of
``dir(module)`` not starting with ``_``, leaving out modules that are not part of the API
(re-exported helper modules such as ``np`` or ``functools`` that ``dir`` shows).
"""

import importlib
import json
import os
import types

import jax

MODULES = [
    "jax",
    "jax.numpy",
    "jax.numpy.linalg",
    "jax.numpy.fft",
    "jax.lax",
    "jax.nn",
    "jax.nn.initializers",
    "jax.random",
    "jax.tree_util",
    "jax.tree",
    "jax.typing",
    "jax.errors",
    "jax.flatten_util",
    "jax.ops",
    "jax.dtypes",
    "jax.debug",
    "jax.test_util",
    "jax.stages",
    "jax.custom_derivatives",
    "jax.ad_checkpoint",
    "jax.experimental",
    "jax.experimental.checkify",
    "jax.extend",
    "jax.extend.core",
    "jax.extend.linear_util",
    "jax.example_libraries.stax",
    "jax.example_libraries.optimizers",
    "jax.image",
    "jax.scipy.special",
    "jax.scipy.stats",
    "jax.scipy.stats.norm",
    "jax.scipy.linalg",
    "jax.scipy.signal",
    "jax.scipy.optimize",
    "jax.scipy.integrate",
    "jax.scipy.ndimage",
    "jax.scipy.fft",
    "jax.scipy.cluster",
    "jax.scipy.interpolate",
    "jax.scipy.spatial.transform",
    "jax.sharding",
    "jax.profiler",
    "jax.monitoring",
    "jax.export",
    "jax.custom_batching",
    "jax.dlpack",
    "jax.scipy.stats.multivariate_normal",
    "jax.scipy.stats.gamma",
    "jax.scipy.stats.beta",
    "jax.scipy.stats.t",
    "jax.scipy.stats.poisson",
    "jax.experimental.ode",
    "jax.experimental.jet",
    "jax.experimental.sparse",
    "jax.experimental.mesh_utils",
    "jax.experimental.multihost_utils",
    "jax.scipy.sparse",
    "jax.scipy.sparse.linalg",
    "jax.lax.linalg",
]


def public_names(mod: types.ModuleType) -> list[str]:
    out = []
    for name in dir(mod):
        if name.startswith("_"):
            continue
        val = getattr(mod, name)
        if isinstance(val, types.ModuleType) and not val.__name__.startswith(mod.__name__ + "."):
            continue  # e.g. ``np`` re-exported by accident
        out.append(name)
    return sorted(out)


def main() -> None:
    data = {"jax_version": jax.__version__, "modules": {}}
    for m in MODULES:
        data["modules"][m] = public_names(importlib.import_module(m))
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_public_api.json")
    with open(path, "w") as f:
        json.dump(data, f, indent=0, sort_keys=True)
        f.write("\n")
    print({m: len(v) for m, v in data["modules"].items()})


if __name__ == "__main__":
    main()
