"""The configuration states ``jax.legacy_prng_key``, ``jax.enable_custom_prng`` (what they do to
``fjax.random``) and ``jax.thread_guard``.

- ``legacy_prng_key``: ``"allow"`` (default), ``"warn"`` or ``"error"`` when a raw uint32 key
  array (``PRNGKey``'s) is passed to a ``fjax.random`` function, as JAX (typed keys from
  ``key``/``wrap_key_data`` are always fine; ``wrap_key_data`` takes raw data by design).
- ``enable_custom_prng``: ``PRNGKey`` returns a typed key, ``split``/``fold_in`` of a raw key
  return typed keys, and raw keys warn with a ``FutureWarning`` (under ``legacy_prng_key("allow")``).

- ``thread_guard``: ``with thread_guard(True):`` makes the calling thread the only one allowed to
  run multi-process operations (fjax's MPI collectives, ``fjax.distributed``) until the block ends:
  another thread's collective raises RuntimeError before it communicates. A second thread entering
  it while the first holds it raises ``JaxRuntimeError``, as JAX.

The random checks are made once per call of a public function (a thread-local depth skips the calls the
samplers make to each other), and cost one option read per call while both states are default.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from fjax._api_more import _ConfigContext
from fjax.config import LegacyPrngKeyState, config

__all__ = ["LegacyPrngKeyState", "enable_custom_prng", "install_random_guards", "legacy_prng_key", "thread_guard"]


legacy_prng_key = _ConfigContext("jax_legacy_prng_key")
enable_custom_prng = _ConfigContext("jax_enable_custom_prng")

_LEGACY_MSG = (
    "Legacy uint32 key array passed as key to jax.random function. Please create keys using "
    'jax.random.key(). If use of a raw key array was intended, set jax_legacy_prng_key="allow".'
)


class _Depth(threading.local):
    n = 0


_depth = _Depth()

# fjax.random's functions that take a key first (wrap_key_data takes raw data by design)
_KEY_FUNCS_EXCLUDED = {"PRNGKey", "key", "key_dtype", "wrap_key_data", "clone", "random_gamma_p"}
_RETURN_KEYS = {"split", "fold_in"}


def _guard(name: str, fn: Callable, ns: dict) -> Callable:
    first = next(iter(inspect.signature(fn).parameters))

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        mode = config.jax_legacy_prng_key
        custom = config.jax_enable_custom_prng
        if (mode == "allow" and not custom) or _depth.n:
            return fn(*args, **kwargs)
        key = args[0] if args else kwargs.get(first)
        raw = not isinstance(key, ns["PRNGKeyArray"])
        if raw:
            ns["_check_key"](name, key, allow_batched=True)  # an invalid key raises first, as JAX
            if mode == "error":
                raise ValueError(_LEGACY_MSG)
            if mode == "warn":
                warnings.warn(_LEGACY_MSG, UserWarning, stacklevel=2)
            elif custom:
                warnings.warn(
                    "Raw arrays as random keys to jax.random functions are deprecated. Assuming valid "
                    "threefry2x32 key for now.",
                    FutureWarning,
                    stacklevel=2,
                )
        _depth.n += 1
        try:
            out = fn(*args, **kwargs)
        finally:
            _depth.n -= 1
        if custom and raw and name in _RETURN_KEYS:
            out = ns["PRNGKeyArray"](out)
        return out

    return wrapped


def _prng_key(fn: Callable, ns: dict) -> Callable:
    @functools.wraps(fn)
    def wrapped(seed: Any, *, impl: Any = None) -> Any:
        out = fn(seed, impl=impl)
        return ns["PRNGKeyArray"](out) if config.jax_enable_custom_prng else out

    return wrapped


def install_random_guards(ns: dict) -> None:
    """Wrap the public functions of ``fjax.random`` (its module namespace ``ns``) with the checks."""
    for name in ns["__all__"]:
        fn = ns.get(name)
        if name in _KEY_FUNCS_EXCLUDED or not inspect.isfunction(fn):
            continue
        ns[name] = _guard(name, fn, ns)
    ns["PRNGKey"] = _prng_key(ns["PRNGKey"], ns)


class _ThreadGuard:
    """``jax.thread_guard``: ``with thread_guard(True):`` (``.value`` reads the calling thread's
    setting)."""

    _lock = threading.Lock()

    @property
    def value(self) -> bool:
        return bool(config.jax_thread_guard)

    @contextlib.contextmanager
    def __call__(self, new_val: Any = True) -> Iterator[None]:
        from fjax import distributed  # noqa: PLC0415
        from fjax.errors import JaxRuntimeError  # noqa: PLC0415

        me = threading.get_ident()
        with self._lock:
            prev = distributed.state.thread_guard
            if new_val and prev is not None and prev != me:
                raise JaxRuntimeError(
                    "FAILED_PRECONDITION: The thread guard's global thread ID is already set. Nested thread "
                    "guards in different threads are not supported."
                )
            distributed.state.thread_guard = me if new_val else None
        try:
            with config.override("jax_thread_guard", bool(new_val) if new_val is not None else None):
                yield
        finally:
            with self._lock:
                distributed.state.thread_guard = prev


thread_guard = _ThreadGuard()
