"""``fjax.scipy``: the ``jax.scipy`` namespaces (linear algebra, signal processing, special functions,
statistics, optimize, integrate, ndimage, fft, interpolate, spatial.transform, cluster.vq,
sparse.linalg) on top of ``fjax.lax`` and ``fjax.numpy``.

The submodules load on first use (``fjax.scipy.signal`` and ``fjax.scipy.stats`` pull in parts of
scipy that take a second to import): ``import fjax.scipy`` then ``fjax.scipy.special.erf`` works as
in JAX, and so does ``from fjax.scipy import special``."""

from __future__ import annotations

import importlib
from typing import Any

_SUBMODULES = (
    "cluster",
    "fft",
    "integrate",
    "interpolate",
    "linalg",
    "ndimage",
    "optimize",
    "signal",
    "sparse",
    "spatial",
    "special",
    "stats",
)
__all__ = list(_SUBMODULES)


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        mod = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = mod
        return mod
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_SUBMODULES))
