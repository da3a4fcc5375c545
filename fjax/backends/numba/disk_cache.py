"""The numba backend's on-disk kernel cache: generated sources written to
``config.fjax_cache_dir/kernels`` (``k_<hash>.py`` kernels, ``p_<hash>.py`` programs) and imported
from there, so numba's own ``cache=True`` can key compiled code by file.

``_RT_VERSION`` (a hash of the backend's modules) is written into every kernel's source: numba
keys a cached kernel by its file only, so without it a changed helper would be served stale.
Loading compiled code from numba's cache without numba's registry refresh is ``warm_load``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import sys
import tempfile
from typing import Any

from fjax.config import config

log = logging.getLogger("fjax.lowering")


def _runtime_version() -> str:
    """Hash of the modules generated kernels import or inline (``vm``, ``rt``, ``lp``, ...), part of
    every kernel's source: numba's disk cache keys a kernel by its own file only, so without it a
    changed helper would be served stale from the cache."""
    h = hashlib.sha1()
    here = os.path.dirname(os.path.abspath(__file__))  # fjax/backends/numba
    # this backend's modules and the backend-neutral lowering/IR modules above it
    for d in (here, os.path.dirname(here)):
        try:
            names = sorted(f for f in os.listdir(d) if f.endswith(".py"))
        except OSError:
            names = []
        for f in names:
            try:
                with open(os.path.join(d, f), "rb") as fh:
                    h.update(fh.read())
            except OSError:
                pass
    return h.hexdigest()[:12]


_RT_VERSION = _runtime_version()
_by_hash: dict[str, Any] = {}
_tmpdir: str | None = None


def _kernel_dir() -> tuple[str, bool]:
    global _tmpdir
    if config.fjax_disk_cache:
        d = os.path.join(os.path.expanduser(str(config.fjax_cache_dir)), "kernels")
        try:
            os.makedirs(d, exist_ok=True)
            return d, True
        except OSError:
            log.warning("fjax: cannot create cache dir %s; compiling without the disk cache", d)
    if _tmpdir is None:
        _tmpdir = tempfile.mkdtemp(prefix="fjax_kernels_")
    return _tmpdir, False


def load_kernel(src: str, name: str) -> Any:
    """Write ``src`` to ``<cache>/k_<hash>.py`` (once), import it and return its ``name``."""
    disk = bool(config.fjax_disk_cache)
    key = hashlib.sha1(src.encode()).hexdigest()[:24]
    hit = _by_hash.get((key, disk))
    if hit is not None:
        return hit
    d, disk = _kernel_dir()
    modname = f"fjax_k_{key}"
    path = os.path.join(d, f"k_{key}.py")
    text = src
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)  # atomic: never rewrite an existing file (its mtime keys numba's cache)
    spec = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    spec.loader.exec_module(mod)
    fn = getattr(mod, name)
    fn.__fjax_source__ = text
    fn.__fjax_path__ = path
    _by_hash[(key, disk)] = fn
    return fn


def write_program(src: str) -> str:
    """Write a program's source to ``<cache>/p_<hash>.py`` (once; tracebacks and debuggers show
    it) and return the path."""
    key = hashlib.sha1(src.encode()).hexdigest()[:24]
    d, _ = _kernel_dir()
    path = os.path.join(d, f"p_{key}.py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            fh.write(src)
        os.replace(tmp, path)
    return path


def clear_cache() -> None:
    """Forget loaded kernels in this process (the files on disk stay)."""
    _by_hash.clear()
