"""The numba CPU backend: renders the kernel IR to Python/numba source and compiles it.

- ``program``: the program emitter (one Python function per jaxpr, memory planning);
- ``render``: the loop-nest renderer (one njit kernel per fused loop nest) and its scheduling;
- ``runtime``: scalar helpers the generated kernels call (``rt.``);
- ``loops``: compiled control flow (``lp.``);
- ``vmath``: vectorizable float32/float64 math (``vm.``);
- ``host_kernels`` and ``conv``: compiled host kernels (argmax, cumsum, scatter-add, convolution);
- ``disk_cache``: generated sources on disk, keyed by hash; ``warm_load``: loading numba's cached
  object code without its registry refresh.
"""

import os as _os
import tempfile as _tempfile

# numba's OpenMP threading layer (libgomp) lets its workers spin ~300,000 times after each parallel
# loop before sleeping. fjax runs many short parallel kernels between BLAS calls and the compiled
# convolution's own thread pool, so the spinning workers took the cores those needed (and, with
# another busy process on a 2-core machine, stalled every parallel kernel for a 4 ms scheduler
# tick). Spin briefly instead, unless the user chose a policy. libgomp reads this when numba first
# loads it (the first parallel kernel), so it is set before anything here imports numba.
if "GOMP_SPINCOUNT" not in _os.environ and "OMP_WAIT_POLICY" not in _os.environ:
    _os.environ["GOMP_SPINCOUNT"] = "1000"


def _writable(d: str) -> bool:
    try:
        _os.makedirs(d, exist_ok=True)
        fd, tmp = _tempfile.mkstemp(dir=d, prefix=".probe.")
        _os.close(fd)
        _os.unlink(tmp)
        return True
    except OSError:
        return False


def _ensure_numba_cache_dir() -> None:
    """Give numba a writable place for the object code of this package's ``cache=True`` helpers.

    numba caches them beside the package (``__pycache__``) or in the user's cache directory; when
    neither can be written (a read-only install and an unwritable or missing HOME), decorating
    them would raise "no locator available" and no jitted function could compile. Then their
    cache goes to fjax's kernel cache directory, or a temporary one."""
    import numba  # noqa: PLC0415

    if numba.config.CACHE_DIR or _writable(_os.path.join(_os.path.dirname(__file__), "__pycache__")):
        return
    try:
        from numba.misc.appdirs import AppDirs  # noqa: PLC0415

        if _writable(AppDirs(appname="numba", appauthor=False).user_cache_dir):
            return
    except Exception:  # noqa: BLE001 - numba internals moved: fall through to a directory of ours
        pass
    from fjax.config import config  # noqa: PLC0415

    d = _os.path.join(_os.path.expanduser(str(config.fjax_cache_dir)), "numba")
    if not _writable(d):
        d = _tempfile.mkdtemp(prefix="fjax_numba_")
    numba.config.CACHE_DIR = d


_ensure_numba_cache_dir()
