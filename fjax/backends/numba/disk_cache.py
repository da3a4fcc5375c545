"""The numba backend's kernel cache: generated sources on disk under ``config.fjax_cache_dir/kernels``
(``k_<hash>.py`` kernels, ``p_<hash>.py`` programs), numba's compiled object code beside them
(``cache=True``), and the loaded kernels in memory.

Nothing on disk is trusted:

- a kernel is always compiled from the source fjax generated in this process (held in memory);
  the file on disk only gives numba a path to key its cache by. A file whose content differs from
  that source (cut, edited, unreadable) is discarded with numba's object code for it, and
  rewritten;
- numba's object code (``.nbi`` index, ``.nbc`` data) is sealed after each successful compile by a
  checksum file written atomically (``k_<hash>.sum``); before numba may load anything for a kernel,
  the files are checked against it. Missing, partial, corrupt or tampered object code is deleted
  and compiled again: never loaded;
- every write is atomic (a temp file in the same directory, then ``os.replace``); a per-kernel
  lock (a thread lock, and ``flock`` on ``<kernel>.lock`` across processes) makes racing threads
  and processes compile a kernel once;
- a cache directory that cannot be created or written (read-only, full disk, no HOME) means the
  kernels compile in memory (``cache=False``) at full speed, said once; nothing falls back to
  eager evaluation because of the cache.

The cache is bounded: on disk by ``fjax_cache_max_mb`` (least recently used kernels evicted; env
``FJAX_CACHE_MAX_MB``), in memory by ``fjax_kernel_cache_entries``. ``_RT_VERSION`` (a hash of the
backend's modules) is written into every kernel's source: numba keys a cached kernel by its file
only, so without it a changed helper would be served stale. Loading compiled code from numba's
cache without numba's registry refresh is ``warm_load``.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import logging
import os
import sys
import tempfile
import threading
import types
from collections import OrderedDict
from typing import Any, Iterator

from fjax.config import config

log = logging.getLogger("fjax.lowering")

try:
    import fcntl
except ImportError:  # not POSIX: threads are still serialized, processes may compile twice
    fcntl = None


# backend modules that decide when and where programs compile, not what a kernel's source is: a
# change to them leaves every cached kernel valid
_NOT_IN_KERNELS = frozenset({"dispatch.py", "tiering.py"})


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
            if f in _NOT_IN_KERNELS:
                continue
            try:
                with open(os.path.join(d, f), "rb") as fh:
                    h.update(fh.read())
            except OSError:
                pass
    return h.hexdigest()[:12]


_RT_VERSION = _runtime_version()

# key -> loaded numba dispatcher, least recently used first
_by_hash: OrderedDict[str, Any] = OrderedDict()
_locks: dict[str, threading.RLock] = {}
_locks_lock = threading.Lock()
_said: set[str] = set()
_writes = [0]
_EVICT_EVERY = 64


def _say_once(what: str, msg: str) -> None:
    """Report a problem with the cache once per process (logged as a warning on ``fjax.lowering``)."""
    if what not in _said:
        _said.add(what)
        log.warning(msg)


# ---------------------------------------------------------------------------------------------
# the directory


_usable_dirs: dict[str, str | None] = {}  # dir -> None if usable, else the reason it is not


def _kernel_dir() -> str | None:
    """The kernel cache directory, or None when kernels compile in memory (disk cache off, or the
    directory cannot be created or written)."""
    if not config.fjax_disk_cache:
        return None
    d = os.path.join(os.path.expanduser(str(config.fjax_cache_dir)), "kernels")
    if d not in _usable_dirs:
        _usable_dirs[d] = _probe(d)
    reason = _usable_dirs[d]
    if reason is not None:
        _say_once(
            "dir:" + d,
            f"fjax: the kernel cache {d} cannot be used ({reason}); jitted functions compile in memory at full "
            "speed, but every new process compiles them again (set fjax_cache_dir or FJAX_CACHE_DIR to a "
            "writable directory)",
        )
        return None
    return d


def _probe(d: str) -> str | None:
    try:
        os.makedirs(os.path.join(d, "__pycache__"), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".probe.")
        try:
            os.write(fd, b"ok")
        finally:
            os.close(fd)
            os.unlink(tmp)
        return None
    except OSError as e:
        return f"{type(e).__name__}: {e}"


def _mark_unusable(d: str, e: BaseException) -> None:
    _usable_dirs[d] = f"{type(e).__name__}: {e}"


def _atomic_write(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: readers see the old file or the whole new one."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


# ---------------------------------------------------------------------------------------------
# locks


@contextlib.contextmanager
def _kernel_lock(key: str, d: str | None) -> Iterator[None]:
    """Hold the lock of kernel ``key``: threads of this process, then (``flock``) other processes."""
    with _locks_lock:
        lock = _locks.setdefault(key, threading.RLock())
    with lock:
        fh = None
        if d is not None and fcntl is not None:
            try:
                fh = open(os.path.join(d, f"k_{key}.lock"), "a")  # noqa: SIM115 - closed below
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            except OSError:
                if fh is not None:
                    fh.close()
                fh = None
        try:
            yield
        finally:
            if fh is not None:
                with contextlib.suppress(OSError):
                    fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
                fh.close()


# ---------------------------------------------------------------------------------------------
# numba's object code for a kernel, sealed by a checksum file


def _object_files(fn: Any, key: str) -> tuple[str, list[str]] | None:
    """(checksum file path, numba's cache files of every function of kernel module ``key``), or
    None if ``fn`` is not disk-cached. A module may hold several njit functions (a compiled loop
    and its loop nests): they are sealed and checked together."""
    cache_path = getattr(getattr(fn, "_cache", None), "_cache_path", None)
    if cache_path is None:
        return None
    base = os.path.join(cache_path, f"k_{key}.")
    files = sorted(f for f in glob.glob(glob.escape(base) + "*") if f.endswith((".nbi", ".nbc")))
    return os.path.join(cache_path, f"k_{key}.sum"), files


def _digest(paths: list[str]) -> dict[str, str] | None:
    out = {}
    for p in paths:
        data = _read(p)
        if data is None:
            return None
        out[os.path.basename(p)] = hashlib.sha256(data).hexdigest()
    return out


def _sealed_files(key: str, sealed: bytes | None) -> dict[str, str] | None:
    """The checksum file's ``{basename: sha256}`` when it is well formed (names of this kernel's
    files only), else None."""
    if sealed is None:
        return None
    try:
        names = json.loads(sealed)
    except ValueError:
        return None
    prefix = f"k_{key}."
    if not isinstance(names, dict) or not names:
        return None
    for n, h in names.items():
        if not (isinstance(n, str) and isinstance(h, str) and n.startswith(prefix) and os.path.basename(n) == n):
            return None
        if not n.endswith((".nbi", ".nbc")):
            return None
    return names


def _verify(fn: Any, key: str) -> dict[str, str] | None:
    """Delete numba's cached object code of ``fn`` unless its checksum file vouches for every byte.

    A sealed kernel is checked through the files its checksum file names (numba loads only what
    its sealed index file points to), without listing the cache directory: a listing costs ~50 ms
    in a cache of 60,000 files, per kernel. Only a kernel without a valid seal lists it, to find
    (and delete) unsealed object code. Returns the verified seal (None: nothing was sealed)."""
    cache_path = getattr(getattr(fn, "_cache", None), "_cache_path", None)
    if cache_path is None:
        return None
    sum_path = os.path.join(cache_path, f"k_{key}.sum")
    names = _sealed_files(key, _read(sum_path))
    if names is not None and _digest([os.path.join(cache_path, n) for n in sorted(names)]) == names:
        with contextlib.suppress(OSError):
            os.utime(sum_path)  # recently used: evicted last
        return names
    found = _object_files(fn, key)
    if found is None:
        return None
    files = found[1]
    if not files:
        return None
    _say_once(
        "objcode:" + key,
        f"fjax: discarded damaged compiled code in the kernel cache ({os.path.basename(files[0])}); compiling it again",
    )
    for p in [*files, sum_path]:
        with contextlib.suppress(OSError):
            os.unlink(p)


def _unchanged(fn: Any, verified: dict[str, str] | None) -> bool:
    """Whether the sealed files still hold what the seal says (numba loaded the kernel from them and
    wrote nothing: no new seal, and no directory listing, is needed)."""
    cache_path = getattr(getattr(fn, "_cache", None), "_cache_path", None)
    if verified is None or cache_path is None:
        return False
    return _digest([os.path.join(cache_path, n) for n in sorted(verified)]) == verified


def _seal(fn: Any, key: str) -> None:
    """Record the checksums of ``fn``'s object code after numba wrote it."""
    found = _object_files(fn, key)
    if found is None:
        return
    sum_path, files = found
    digest = _digest(files)
    if digest:
        _atomic_write(sum_path, json.dumps(digest, sort_keys=True).encode())


# ---------------------------------------------------------------------------------------------
# loading kernels


def _exec_module(src: str, key: str, filename: str) -> types.ModuleType:
    modname = f"fjax_k_{key}"
    mod = types.ModuleType(modname)
    mod.__file__ = filename
    sys.modules[modname] = mod
    try:
        exec(compile(src, filename, "exec"), mod.__dict__)  # noqa: S102 - generated by fjax
    except BaseException:
        sys.modules.pop(modname, None)
        raise
    return mod


def _in_memory(src: str, key: str, name: str) -> Any:
    src = src.replace("cache=True", "cache=False")
    return getattr(_exec_module(src, key, f"<fjax kernel {key}>"), name)


def _ensure_source(d: str, key: str, src: str) -> str:
    """The path of kernel ``key``'s source in ``d``, holding exactly ``src`` (rewritten if damaged)."""
    path = os.path.join(d, f"k_{key}.py")
    data = src.encode()
    on_disk = _read(path)
    if on_disk == data:
        return path
    if on_disk is not None:
        _say_once(
            "src:" + key,
            f"fjax: discarded a damaged kernel source in the cache ({os.path.basename(path)}); writing it again",
        )
        for p in glob.glob(os.path.join(d, "__pycache__", glob.escape(f"k_{key}") + ".*")):
            with contextlib.suppress(OSError):
                os.unlink(p)
    _atomic_write(path, data)
    _count_write(d)
    return path


def _install(fn: Any, sig: tuple, reenable: bool) -> None:
    from fjax.backends.numba import warm_load  # noqa: PLC0415

    if sig in fn.overloads or warm_load.load_cached(fn, sig):
        return
    if reenable:
        fn.disable_compile(False)
    fn.compile(sig)


def load_kernel(src: str, name: str) -> Any:
    """The numba dispatcher ``name`` defined by ``src`` (always compiled from ``src`` itself; the
    file in the cache is checked against it and rewritten if it differs), with no overload
    installed by this call."""
    key = hashlib.sha1(src.encode()).hexdigest()[:24]
    fn = _by_hash.get(key)
    if fn is not None:
        _by_hash.move_to_end(key)
        return fn
    d = _kernel_dir()
    with _kernel_lock(key, d):
        fn = _by_hash.get(key)
        if fn is None:
            fn = _load_dispatcher(src, key, name, d)
            fn.__fjax_key__ = key
            _remember(key, fn)
    return fn


def load_compiled(src: str, name: str, sig: tuple, reenable: bool = False) -> Any:
    """The numba dispatcher ``name`` defined by ``src`` with its overload for ``sig`` installed:
    from memory, from the verified disk cache, or compiled (and then sealed in the cache).
    ``reenable``: the dispatcher may already have been closed to new signatures by another program
    sharing its source; open it again to compile ``sig``."""
    fn = load_kernel(src, name)
    if sig in fn.overloads:
        return fn
    key = fn.__fjax_key__
    d = _kernel_dir() if fn.__fjax_path__ else None
    with _kernel_lock(key, d):
        if sig not in fn.overloads:
            on_disk = fn.__fjax_path__ is not None
            verified = _verify(fn, key) if on_disk else None
            try:
                _install(fn, sig, reenable)
            except OSError as e:
                # numba could not write its cache (a full disk): from now on kernels compile in memory
                if not on_disk or d is None:
                    raise
                _mark_unusable(d, e)
                _by_hash.pop(key, None)
                on_disk = False
            if sig not in fn.overloads:
                return load_compiled(src, name, sig, reenable)
            if on_disk and not _unchanged(fn, verified):
                try:
                    _seal(fn, key)
                except OSError as e:  # unsealed object code is never trusted: the next process recompiles
                    _say_once("seal", f"fjax: could not write to the kernel cache ({e})")
        fn.disable_compile()  # writable arrays convert to the read-only signature; never respecialize
    return fn


def _load_dispatcher(src: str, key: str, name: str, d: str | None) -> Any:
    if d is not None and "cache=True" in src:
        try:
            path = _ensure_source(d, key, src)
            fn = getattr(_exec_module(src, key, path), name)
            _tolerate_failed_saves(fn, d)
            fn.__fjax_source__ = src
            fn.__fjax_path__ = path
            return fn
        except OSError as e:
            _mark_unusable(d, e)
            _kernel_dir()  # says once that kernels now compile in memory
        except RuntimeError as e:  # numba found no writable place for its cache files
            _say_once("locator", f"fjax: numba cannot cache kernels here ({e}); compiling in memory")
    fn = _in_memory(src, key, name)
    fn.__fjax_source__ = src
    fn.__fjax_path__ = None
    return fn


def _tolerate_failed_saves(fn: Any, d: str) -> None:
    """numba installs a compiled overload before saving it to its cache: when the save fails (a
    full disk), keep the overload, leave it unsealed (never trusted later) and compile later
    kernels in memory."""
    cache = getattr(fn, "_cache", None)
    save = getattr(cache, "save_overload", None)
    if save is None:
        return

    def save_or_give_up(sig: Any, data: Any) -> None:
        try:
            save(sig, data)
        except OSError as e:
            _mark_unusable(d, e)

    cache.save_overload = save_or_give_up


def _remember(key: str, fn: Any) -> None:
    _by_hash[key] = fn
    _by_hash.move_to_end(key)
    limit = max(16, int(config.fjax_kernel_cache_entries))
    while len(_by_hash) > limit:
        old, _ = _by_hash.popitem(last=False)
        sys.modules.pop(f"fjax_k_{old}", None)


def write_program(src: str) -> str:
    """Write a program's source to ``<cache>/p_<hash>.py`` (once; tracebacks and debuggers show
    it) and return the path (a pseudo-path when the cache cannot be written: the program itself is
    compiled from memory either way)."""
    key = hashlib.sha1(src.encode()).hexdigest()[:24]
    d = _kernel_dir()
    if d is None:
        return f"<fjax program {key}>"
    path = os.path.join(d, f"p_{key}.py")
    data = src.encode()
    if _read(path) != data:
        try:
            _atomic_write(path, data)
            _count_write(d)
        except OSError as e:
            _mark_unusable(d, e)
            return f"<fjax program {key}>"
    return path


# ---------------------------------------------------------------------------------------------
# size bound and clearing


def _count_write(d: str) -> None:
    _writes[0] += 1
    if _writes[0] % _EVICT_EVERY == 1:
        evict(d)


def _groups(d: str) -> dict[str, list[str]]:
    """Files of the cache grouped by kernel/program key."""
    groups: dict[str, list[str]] = {}
    for p in glob.glob(os.path.join(d, "*.py")) + glob.glob(os.path.join(d, "__pycache__", "*")):
        base = os.path.basename(p)
        if base[:2] in ("k_", "p_"):
            groups.setdefault(base.split(".", 1)[0], []).append(p)
    for p in glob.glob(os.path.join(d, "k_*.lock")):
        groups.setdefault(os.path.basename(p).split(".", 1)[0], []).append(p)
    return groups


def evict(d: str | None = None, max_bytes: int | None = None) -> int:
    """Delete least recently used kernels until the cache holds at most ``max_bytes`` (default
    ``fjax_cache_max_mb``); returns the number of bytes freed."""
    d = d or _kernel_dir()
    if d is None:
        return 0
    if max_bytes is None:
        max_bytes = int(float(config.fjax_cache_max_mb) * 2**20)
    sized = []
    total = 0
    for files in _groups(d).values():
        size, used = 0, 0.0
        for p in files:
            try:
                st = os.stat(p)
            except OSError:
                continue
            size += st.st_size
            used = max(used, st.st_mtime)
        sized.append((used, size, files))
        total += size
    freed = 0
    for _, size, files in sorted(sized, key=lambda t: t[0]):
        if total - freed <= max_bytes:
            break
        for p in files:
            with contextlib.suppress(OSError):
                os.unlink(p)
        freed += size
    return freed


def clear_cache() -> None:
    """Forget loaded kernels in this process (the files on disk stay)."""
    _by_hash.clear()


def clear_disk_cache() -> None:
    """Delete every kernel and program of the on-disk cache."""
    d = _kernel_dir()
    if d is not None:
        evict(d, max_bytes=0)


# ---------------------------------------------------------------------------------------------
# numba's object code of the backend's own module-level helpers (``loops``, ``host_kernels``, ...)
#
# numba caches it beside the package (or in the user's cache); it is loaded on a helper's first
# use. The same rule holds: a seal per module (``fjax_<module>.sum``), checked when the backend is
# imported (damaged or unsealed files are deleted and compiled again on first use) and written
# again right after numba saves new object code for one of the module's helpers.

_guarded: dict[str, tuple[str, str]] = {}  # seal path -> (cache dir, module stem)


def guard_module_caches(modules: list[types.ModuleType]) -> None:
    """Check numba's cached object code of the ``cache=True`` functions of ``modules`` against
    their seals before anything loads it, and seal what numba saves from now on."""
    for mod in modules:
        stem = os.path.splitext(os.path.basename(getattr(mod, "__file__", "") or ""))[0]
        for v in vars(mod).values():
            cache = getattr(v, "_cache", None)
            path = getattr(cache, "_cache_path", None)
            py_func = getattr(v, "py_func", None)
            if path is None or py_func is None or py_func.__module__ != mod.__name__:
                continue
            seal = os.path.join(path, f"fjax_{stem}.sum")
            if seal not in _guarded:
                _guarded[seal] = (path, stem)
                _check_module_seal(seal, path, stem)
            _seal_after_save(cache, seal, path, stem)


def _seal_after_save(cache: Any, seal: str, d: str, stem: str) -> None:
    save = cache.save_overload
    if getattr(save, "__fjax_sealing__", False):
        return

    def save_and_seal(sig: Any, data: Any) -> None:
        try:
            save(sig, data)
        except OSError as e:  # numba installed the overload before saving it: it runs from memory
            _say_once("helpers:" + d, f"fjax: could not write numba's cache of {stem} helpers in {d} ({e})")
            return
        with _locks_lock:  # one seal writer at a time in this process
            _write_module_seal(seal, d, stem)

    save_and_seal.__fjax_sealing__ = True
    cache.save_overload = save_and_seal


def _module_files(d: str, stem: str) -> list[str]:
    return sorted(f for f in glob.glob(os.path.join(d, glob.escape(stem) + ".*")) if f.endswith((".nbi", ".nbc")))


def _check_module_seal(seal: str, d: str, stem: str) -> None:
    files = _module_files(d, stem)
    if not files:
        return
    try:
        sealed = json.loads(_read(seal) or b"{}")
    except ValueError:
        sealed = {}
    damaged, unsealed = [], []
    for f in files:
        data = _read(f)
        want = sealed.get(os.path.basename(f))
        if want is None:
            unsealed.append(f)  # written by a process that died before sealing it, or by an old fjax
        elif data is None or want != hashlib.sha256(data).hexdigest():
            damaged.append(f)
    if damaged:
        _say_once(
            "module:" + seal,
            f"fjax: discarded {len(damaged)} damaged compiled helpers of {stem} in numba's cache {d}; "
            "compiling them again",
        )
    for f in damaged + unsealed:
        with contextlib.suppress(OSError):
            os.unlink(f)
    if damaged or unsealed:
        with contextlib.suppress(OSError):
            _write_module_seal(seal, d, stem)


def _write_module_seal(seal: str, d: str, stem: str) -> None:
    digest = _digest(_module_files(d, stem))
    if digest is not None:
        with contextlib.suppress(OSError):
            _atomic_write(seal, json.dumps(digest, sort_keys=True).encode())
