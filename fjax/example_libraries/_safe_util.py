"""``safe_map``, ``safe_zip`` and ``unzip2``: the length-checked ``map``/``zip`` that
``jax.example_libraries.optimizers`` re-exports (as ``map``/``zip`` too); both return lists."""

from __future__ import annotations

from typing import Any, Callable, Iterable


def safe_map(f: Callable[..., Any], *args: Iterable) -> list:
    """``list(map(f, *args))``, raising ValueError if the arguments differ in length."""
    seqs = [list(a) for a in args]
    if not seqs:
        raise TypeError("safe_map requires at least 2 arguments")
    n = len(seqs[0])
    for i, s in enumerate(seqs[1:], start=2):
        if len(s) != n:
            rel = "longer" if len(s) > n else "shorter"
            raise ValueError(f"safe_map() argument {i} is {rel} than argument 1")
    return list(map(f, *seqs))


def safe_zip(*args: Iterable) -> list:
    """``list(zip(*args))``, raising ValueError if the arguments differ in length."""
    seqs = [list(a) for a in args]
    if not seqs:
        raise TypeError("safe_zip requires at least 1 argument")
    n = len(seqs[0])
    for i, s in enumerate(seqs[1:], start=1):
        if len(s) != n:
            lengths = tuple(len(x) for x in seqs)
            raise ValueError(
                f"safe_zip() argument {i} has length {len(s)} but argument 0 has length {n}. All lengths: {lengths}"
            )
    return list(zip(*seqs))


def unzip2(xys: Iterable) -> tuple[tuple, tuple]:
    """Unzip sequence of length-2 tuples into two tuples."""
    xs, ys = [], []
    for x, y in xys:
        xs.append(x)
        ys.append(y)
    return tuple(xs), tuple(ys)
