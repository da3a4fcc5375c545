"""What the library check scripts (``_flax_checks.py``, ``_haiku_checks.py``, ``_equinox_checks.py``,
and the timed ones: ``_diffrax_checks.py``, ``_numpyro_checks.py``, ``_blackjax_checks.py``,
``_jaxopt_checks.py``) share. They run under ``python -m fjax.compat`` (``import jax`` is fjax),
which puts their folder on ``sys.path`` as plain ``python script.py`` does (the same scripts run
under JAX too)."""

from __future__ import annotations

import os
import sys
import time
import traceback
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


def timed_checker(only: list[str]) -> tuple[Callable, list, list]:
    """``(check, results, failures)`` for the timed scripts: ``@check(name)`` runs the decorated
    function now (when ``only`` is empty or one of its strings is in ``name``), prints ``ok`` with
    its time or ``FAIL`` with the traceback, and records ``name`` in ``results`` or ``failures``."""
    results: list[str] = []
    failures: list[str] = []

    def check(name: str) -> Callable:
        def deco(f: Callable) -> Callable:
            if only and not any(o in name for o in only):
                return f
            t0 = time.perf_counter()
            try:
                f()
            except Exception:  # noqa: BLE001 - report every failing check, not only the first
                failures.append(name)
                print(f"FAIL {name}\n{traceback.format_exc()}", flush=True)
            else:
                results.append(name)
                print(f"ok   {name} ({time.perf_counter() - t0:.1f} s)", flush=True)
            return f

        return deco

    return check, results, failures


def finish(library: str, results: list, failures: list) -> None:
    """The timed scripts' last lines: the count of passed checks, then ``ALL OK`` or the failures
    (exit status 1)."""
    print(f"{library} checks passed: {len(results)}")
    if failures:
        print("FAILED:", failures)
        sys.exit(1)
    print("ALL OK")


def close_rel(a: Any, b: Any, rtol: float, atol: float = 0.0) -> None:
    """``a`` and ``b`` (as float64) within ``rtol`` (and ``atol``, none unless given)."""
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=rtol, atol=atol)


def close(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=rtol, atol=atol)


def randn_from(rng: np.random.Generator) -> Callable:
    """``randn(*shape)``: float32 standard normals from ``rng``."""
    return lambda *shape: rng.standard_normal(shape).astype(np.float32)


def np_params(tree: Any) -> Any:
    """A parameter tree as float64 numpy arrays."""
    import jax  # noqa: PLC0415 - (fjax under python -m fjax.compat)

    return jax.tree.map(lambda a: np.asarray(a, np.float64), tree)
