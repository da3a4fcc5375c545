"""What the library check scripts (``_flax_checks.py``, ``_haiku_checks.py``, ``_equinox_checks.py``)
share. They run under ``python -m fjax.compat`` (``import jax`` is fjax), which puts their folder on
``sys.path`` as plain ``python script.py`` does (the same scripts run under JAX too)."""

from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np


def checker(keep_going_env: str | None = None) -> tuple[Callable, list, list]:
    """``(check, results, failures)``: ``@check(name)`` runs the decorated function now and records
    ``name`` in ``results``; with the environment variable ``keep_going_env`` set to 1 a failing
    check is printed and recorded in ``failures`` instead of stopping the script."""
    results: list[str] = []
    failures: list[str] = []
    keep_going = keep_going_env is not None and os.environ.get(keep_going_env) == "1"

    def check(name: str) -> Callable:
        def deco(f: Callable) -> Callable:
            if keep_going:
                try:
                    f()
                except Exception as e:  # noqa: BLE001 - report every failing check, not only the first
                    failures.append(name)
                    print(f"FAILED: {name}: {type(e).__name__}: {str(e)[:1500]}")
                    return f
            else:
                f()
            results.append(name)
            return f

        return deco

    return check, results, failures


def close(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=rtol, atol=atol)


def randn_from(rng: np.random.Generator) -> Callable:
    """``randn(*shape)``: float32 standard normals from ``rng``."""
    return lambda *shape: rng.standard_normal(shape).astype(np.float32)


def np_params(tree: Any) -> Any:
    """A parameter tree as float64 numpy arrays."""
    import jax  # noqa: PLC0415 - (fjax under python -m fjax.compat)

    return jax.tree.map(lambda a: np.asarray(a, np.float64), tree)
