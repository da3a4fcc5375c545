"""Shared helpers for the ``run(quick)`` entry points of the bench modules (bench/run_all.py).

A module's ``run(quick: bool = False) -> list[Row]`` measures its workloads with fjax and, when
jax is importable, with JAX in the same process, sampled round-robin (``pair``) so that the load
of a shared machine hits both alike. fjax itself never imports jax.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable


@dataclass
class Row:
    """One figure: fjax's and JAX's seconds (median of rounds; ``jax`` None when not installed),
    or a plain ``value`` with its ``unit`` (e.g. the loaded/quiet ratio)."""

    name: str
    fjax: float | None = None
    jax: float | None = None
    value: float | None = None
    unit: str = ""
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.fjax is None or self.jax is None or self.jax <= 0:
            return None
        return self.fjax / self.jax


def jax_or_none() -> Any:
    """The jax module, or None when it is not installed."""
    try:
        import jax  # noqa: PLC0415

        return jax
    except ImportError:
        return None


def pair(fns: dict[str, Callable | None], quick: bool, seconds: float = 0.6) -> dict[str, float]:
    """Median seconds per call of each function (None entries skipped), sampled round-robin in
    rounds of enough calls to take ~``seconds`` / rounds each."""
    fns = {k: f for k, f in fns.items() if f is not None}
    per: dict[str, float] = {}
    for k, f in fns.items():  # warm up (compile), then estimate a call's cost
        f()
        f()  # fjax's tiered first call is evaluated eagerly: the second one waits for the compile
        t0 = time.perf_counter()
        f()
        per[k] = max(time.perf_counter() - t0, 1e-7)
    rounds = 5 if quick else 15
    if max(per.values()) * rounds > 4 * seconds:  # slow calls: fewer rounds (at least 3)
        rounds = max(3, int(4 * seconds / max(per.values())))
    budget = (seconds / 3 if quick else seconds) / rounds
    number = {k: max(1, min(2000, int(budget / per[k]))) for k in fns}
    ts: dict[str, list] = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            t0 = time.perf_counter()
            for _ in range(number[k]):
                f()
            ts[k].append((time.perf_counter() - t0) / number[k])
    return {k: sorted(v)[len(v) // 2] for k, v in ts.items()}


def row(name: str, fj: Callable, jx: Callable | None, quick: bool, note: str = "", seconds: float = 0.6) -> Row:
    """Measure fjax's ``fj`` and JAX's ``jx`` (None: JAX not installed) side by side."""
    res = pair({"fjax": fj, "jax": jx}, quick, seconds)
    return Row(name, res["fjax"], res.get("jax"), note=note)
