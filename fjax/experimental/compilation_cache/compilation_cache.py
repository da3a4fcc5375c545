"""``jax.experimental.compilation_cache.compilation_cache``: ``set_cache_dir`` and ``reset_cache``
mapped onto fjax's on-disk kernel cache.

fjax's jit keeps compiled kernels (and tiering's program records) under
``config.fjax_cache_dir`` (environment: ``FJAX_CACHE_DIR``); ``fjax_disk_cache`` turns the disk
cache off. The directory is read each time a program is compiled, so a new one takes effect for
the next compilation (numba's own cache directory for fjax's helper kernels is chosen once, at
import). JAX's other cache settings (minimum compile time, minimum entry size, ...) have no fjax
counterpart.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["reset_cache", "set_cache_dir"]


def set_cache_dir(path: Any) -> None:
    """Set the persistent compilation cache directory (``config.fjax_cache_dir``): programs
    jit compiles from now on are saved there and looked up there before compiling.

    As in JAX, the cache is trusted: do not use a directory others can write to (a writer could
    make this process run arbitrary code)."""
    from fjax.config import config  # noqa: PLC0415

    config.update("fjax_cache_dir", os.fspath(path))


def reset_cache() -> None:
    """Return to the pristine state: forget which cache directories were found usable, so the
    next compilation checks the configured directory again. Cached files are kept (as in JAX)."""
    disk_cache = sys.modules.get("fjax.backends.numba.disk_cache")
    usable = getattr(disk_cache, "_usable_dirs", None)
    if isinstance(usable, dict):
        usable.clear()
