"""Public-API coverage: fjax's modules against JAX 0.10's public names (tests/data/jax_public_api.json).

Each fjax module (``jax.X`` -> ``fjax.X``) must provide at least the number of JAX's public names
recorded in ``MINIMUM`` below; a regression fails. Raise a minimum when you add names
(``python tests/test_api_coverage.py`` prints the table the README shows and the current counts).
"""

from __future__ import annotations

import importlib
import json
import os
import sys

import pytest

_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "jax_public_api.json")

# names of JAX's public API present in fjax, per module; CI fails if one drops
MINIMUM: dict[str, int] = {
    "jax": 122,
    "jax.ad_checkpoint": 6,
    "jax.custom_batching": 2,
    "jax.custom_derivatives": 11,
    "jax.debug": 7,
    "jax.dlpack": 2,
    "jax.dtypes": 12,
    "jax.errors": 12,
    "jax.example_libraries.optimizers": 43,
    "jax.example_libraries.stax": 48,
    "jax.experimental": 2,
    "jax.experimental.checkify": 15,
    "jax.experimental.jet": 24,
    "jax.experimental.mesh_utils": 3,
    "jax.experimental.multihost_utils": 7,
    "jax.experimental.ode": 10,
    "jax.experimental.sparse": 63,
    "jax.export": 13,
    "jax.extend": 3,
    "jax.extend.core": 35,
    "jax.extend.linear_util": 10,
    "jax.flatten_util": 1,
    "jax.image": 3,
    "jax.lax": 341,
    "jax.lax.linalg": 32,
    "jax.monitoring": 13,
    "jax.nn": 36,
    "jax.nn.initializers": 20,
    "jax.numpy": 416,
    "jax.numpy.fft": 18,
    "jax.numpy.linalg": 31,
    "jax.ops": 4,
    "jax.profiler": 15,
    "jax.random": 48,
    "jax.scipy.cluster": 1,
    "jax.scipy.fft": 4,
    "jax.scipy.integrate": 1,
    "jax.scipy.interpolate": 1,
    "jax.scipy.linalg": 40,
    "jax.scipy.ndimage": 1,
    "jax.scipy.optimize": 2,
    "jax.scipy.signal": 10,
    "jax.scipy.sparse": 1,
    "jax.scipy.sparse.linalg": 3,
    "jax.scipy.spatial.transform": 2,
    "jax.scipy.special": 53,
    "jax.scipy.stats": 30,
    "jax.scipy.stats.beta": 6,
    "jax.scipy.stats.gamma": 6,
    "jax.scipy.stats.multivariate_normal": 2,
    "jax.scipy.stats.norm": 8,
    "jax.scipy.stats.poisson": 4,
    "jax.scipy.stats.t": 2,
    "jax.sharding": 17,
    "jax.stages": 6,
    "jax.test_util": 3,
    "jax.tree": 14,
    "jax.tree_util": 36,
    "jax.typing": 2,
}


def _load() -> dict[str, list[str]]:
    with open(_DATA) as f:
        return json.load(f)["modules"]


def coverage(jax_module: str, names: list[str]) -> tuple[int, list[str]]:
    """How many of ``names`` the fjax module for ``jax_module`` has, and the missing ones."""
    fjax_name = "fjax" + jax_module[3:]
    try:
        mod = importlib.import_module(fjax_name)
    except ImportError:
        return 0, list(names)
    missing = [n for n in names if not hasattr(mod, n)]
    return len(names) - len(missing), missing


@pytest.mark.parametrize("module", sorted(_load()))
def test_coverage_does_not_drop(module: str) -> None:
    names = _load()[module]
    have, missing = coverage(module, names)
    assert have >= MINIMUM.get(module, 0), (
        f"{module}: {have} of {len(names)} JAX public names present, below the recorded {MINIMUM[module]}; "
        f"missing: {missing}"
    )


def _table() -> str:
    rows = ["| module | names | in fjax | coverage |", "|---|---:|---:|---:|"]
    tot = tot_have = 0
    for module, names in _load().items():
        have, _ = coverage(module, names)
        tot += len(names)
        tot_have += have
        rows.append(f"| `{module}` | {len(names)} | {have} | {100 * have / len(names):.0f}% |")
    rows.append(f"| total | {tot} | {tot_have} | {100 * tot_have / tot:.0f}% |")
    return "\n".join(rows)


if __name__ == "__main__":
    if "--missing" in sys.argv:
        for module, names in _load().items():
            print(module, coverage(module, names)[1])
    elif "--counts" in sys.argv:
        print({m: coverage(m, n)[0] for m, n in _load().items()})
    else:
        print(_table())
