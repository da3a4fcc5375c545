"""``jax._src.compiler``: the one name libraries patch, ``backend_compile_and_load``.

JAX calls ``backend_compile_and_load(backend, module, ...)`` for every XLA compilation; chex's
``restrict_backends`` wraps it to refuse compiling for some platforms. fjax compiles without XLA,
so this module's function compiles nothing: fjax's ``jit`` calls it (through
``fjax.jit.compile_listeners``) each time it compiles a function for a new signature, with a
backend object whose ``platform`` is ``jit``'s ``backend=`` or the default backend, looking the
name up in this module at that moment so that a patched function is the one called. An exception
it raises aborts that compile. Eager operations compile nothing in fjax (they run numpy), so they
are not restricted.
"""

from __future__ import annotations

import importlib
from typing import Any

# the module (``import fjax.jit as m`` would give the function fjax.jit)
_jit = importlib.import_module("fjax.jit")


class Backend:
    """What ``backend_compile_and_load`` receives: the platform compiled for (``"cpu"``, ``"gpu"``)."""

    def __init__(self, platform: str) -> None:
        self.platform = platform

    def __repr__(self) -> str:
        return f"Backend(platform={self.platform!r})"


def backend_compile_and_load(backend: Backend, module: Any = None, *args: Any, **kwargs: Any) -> None:
    """Called before fjax's jit compiles ``module`` (the function's name) for ``backend``; returns
    None (fjax's backends compile the program)."""
    return None


def _on_compile(platform: str, name: str) -> None:
    globals()["backend_compile_and_load"](Backend(platform), name)


if _on_compile not in _jit.compile_listeners:
    _jit.compile_listeners.append(_on_compile)
