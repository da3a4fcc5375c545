"""``jnp.fromfile``: deliberately unimplemented, as in JAX (reading a file is not a pure function)."""

from __future__ import annotations

from typing import Any

__all__ = ["fromfile"]


def fromfile(*args: Any, **kwargs: Any) -> Any:
    """Unimplemented wrapper for ``jnp.fromfile`` (as in JAX): reading a file may be non-pure
    and thus unsafe under ``jit`` and other transformations. Use ``jnp.asarray(np.fromfile(...))``
    instead, outside transformed functions."""
    raise NotImplementedError(
        "jnp.fromfile() is not implemented because it may be non-pure and thus unsafe for use with JIT and other "
        "JAX transformations. Consider using jnp.asarray(np.fromfile(...)) instead, although care should be taken "
        "if np.fromfile is used within a jax transformations because of its potential side-effect of consuming the "
        "file object; for more information see "
        "https://docs.jax.dev/en/latest/notebooks/Common_Gotchas_in_JAX.html#pure-functions"
    )
