"""``jax._src.dispatch``: ``wait_for_tokens`` (equinox registers it with ``atexit``).

JAX waits there for the runtime tokens of ordered effects still in flight. fjax runs effects in
order as each call returns, so there is nothing to wait for.
"""

from __future__ import annotations


def wait_for_tokens() -> None:
    """Nothing is in flight in fjax at any time (effects complete within their call)."""
