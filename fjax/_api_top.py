"""Top-level names of ``jax`` for configuration states and arrays assembled from pieces:
``numpy_dtype_promotion``, ``enable_checks``, ``check_tracer_leaks``/``checking_leaks``,
``debug_key_reuse``, ``default_prng_impl``, ``threefry_partitionable``, ``transfer_guard*``,
``make_array_from_callback``, ``make_array_from_single_device_arrays``, ``live_arrays`` and
``copy_to_host_async``.

What the configuration states do in fjax:

- ``numpy_dtype_promotion("strict")``: implicit promotion between different dtypes raises
  ``jax.dtypes.TypePromotionError`` (fjax/dtypes.py); traced ``jit`` functions are retraced.
- ``enable_checks``: accepted; fjax type-checks every jaxpr it builds whatever its value.
- ``check_tracer_leaks`` / ``checking_leaks`` and ``debug_key_reuse``: accepted, but fjax does
  not perform these checks, so turning one on warns (a leaked tracer still raises
  ``UnexpectedTracerError`` when it is used).
- ``default_prng_impl`` / ``threefry_partitionable``: only the values fjax implements
  (``"threefry2x32"``, partitionable threefry); others raise NotImplementedError.
- ``transfer_guard*``: only ``"allow"`` (fjax does not watch transfers); others raise
  NotImplementedError.
- ``no_tracing``: ``jit`` raises RuntimeError where it would trace (a signature it has not traced,
  or a call under a transform, as JAX); fjax's eager ops trace nothing and run, while JAX's (each
  a jitted computation) raise on a signature not seen before; ``make_jaxpr`` and ``eval_shape`` of
  a plain function still trace in fjax.
- ``no_execution``: running a jitted function or an eager op raises RuntimeError (``jit(name)``);
  tracing, lowering and compiling do not.
- ``allow_f16_reductions(False)``: ``lax.reduce_sum`` of float16/bfloat16 along an axis longer
  than 1 raises ValueError (``jnp.sum`` sums them in float32 and is unaffected).
"""

from __future__ import annotations

import functools
import gc
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fjax import core, dtypes
from fjax._api_more import _ConfigContext
from fjax.config import config

__all__ = [
    "allow_f16_reductions",
    "check_tracer_leaks",
    "checking_leaks",
    "copy_to_host_async",
    "debug_key_reuse",
    "default_prng_impl",
    "enable_checks",
    "live_arrays",
    "make_array_from_callback",
    "make_array_from_single_device_arrays",
    "no_execution",
    "no_tracing",
    "numpy_dtype_promotion",
    "threefry_partitionable",
    "transfer_guard",
    "transfer_guard_device_to_device",
    "transfer_guard_device_to_host",
    "transfer_guard_host_to_device",
]

_GUARDS = (
    "jax_transfer_guard",
    "jax_transfer_guard_host_to_device",
    "jax_transfer_guard_device_to_host",
    "jax_transfer_guard_device_to_device",
)
_GUARD_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")


def _validate(name: str, value: Any) -> None:
    """Config listener: refuse the values fjax cannot honour, warn for checks it does not do."""
    if name in ("jax_check_tracer_leaks", "jax_debug_key_reuse") and value:
        what = "tracer leaks" if name == "jax_check_tracer_leaks" else "PRNG key reuse"
        warnings.warn(f"{name}: fjax does not check for {what}; the option is accepted and does nothing", stacklevel=4)
    elif name == "jax_default_prng_impl" and value != "threefry2x32":
        if value in ("rbg", "unsafe_rbg"):
            raise NotImplementedError(f"jax_default_prng_impl={value!r}: fjax implements only 'threefry2x32'")
        raise ValueError(f"jax_default_prng_impl: unknown PRNG implementation {value!r}")
    elif name == "jax_threefry_partitionable" and not value:
        raise NotImplementedError("jax_threefry_partitionable=False: fjax implements only partitionable threefry")
    elif name in _GUARDS and value not in (None, "allow"):
        if value not in _GUARD_LEVELS:
            raise ValueError(f"{name}: expected one of {_GUARD_LEVELS}, got {value!r}")
        raise NotImplementedError(f"{name}={value!r}: fjax does not watch device transfers; only 'allow' is supported")


config._validators.append(_validate)  # for config.update and the context managers alike

numpy_dtype_promotion = _ConfigContext("jax_numpy_dtype_promotion")
enable_checks = _ConfigContext("jax_enable_checks")
check_tracer_leaks = _ConfigContext("jax_check_tracer_leaks")
checking_leaks = functools.partial(check_tracer_leaks, True)
debug_key_reuse = _ConfigContext("jax_debug_key_reuse")
default_prng_impl = _ConfigContext("jax_default_prng_impl")
threefry_partitionable = _ConfigContext("jax_threefry_partitionable")
transfer_guard_host_to_device = _ConfigContext("jax_transfer_guard_host_to_device")
transfer_guard_device_to_host = _ConfigContext("jax_transfer_guard_device_to_host")
transfer_guard_device_to_device = _ConfigContext("jax_transfer_guard_device_to_device")
transfer_guard = _ConfigContext("jax_transfer_guard")
no_tracing = _ConfigContext("jax_no_tracing")
no_execution = _ConfigContext("jax_no_execution")
allow_f16_reductions = _ConfigContext("jax_allow_f16_reductions")


def _index_shape(index: tuple, shape: tuple) -> tuple:
    return tuple(len(range(*s.indices(n))) for s, n in zip(index, shape))


def _assemble(fn: str, shape: tuple, sharding: Any, pieces: list, dtype: Any) -> core.Array:
    """The global array of ``shape`` from ``[(index, piece)]`` laid out by ``sharding``."""
    from fjax.sharding import shard_array  # noqa: PLC0415

    first = pieces[0][1]
    dt = dtypes.canonicalize_dtype(np.dtype(dtype) if dtype is not None else np.asarray(first).dtype)
    out = np.zeros(shape, dtype=dt)
    for index, piece in pieces:
        want = _index_shape(index, shape)
        got = np.shape(piece)
        if tuple(got) != want:
            raise ValueError(
                f"{fn}: the piece for index {index} has shape {tuple(got)}, expected {want} for a global shape {shape} "
                f"with sharding {sharding!r}"
            )
        out[index] = np.asarray(piece)
    out.flags.writeable = False
    return shard_array(core.Array(out, False), sharding)


def make_array_from_callback(
    shape: Sequence[int], sharding: Any, data_callback: Callable[[Any], Any], dtype: Any = None
) -> core.Array:
    """An array of ``shape`` laid out by ``sharding`` whose shard at ``index`` (a tuple of slices)
    is ``data_callback(index)``; called once per distinct index of this process's devices."""
    shape = tuple(int(d) for d in shape)
    pieces: dict = {}
    for index in sharding.addressable_devices_indices_map(shape).values():
        key = tuple((s.start, s.stop, s.step) if isinstance(s, slice) else s for s in index)
        if key not in pieces:
            pieces[key] = (index, data_callback(index))
    if not pieces:
        raise ValueError(f"make_array_from_callback: sharding {sharding!r} has no devices in this process")
    return _assemble("make_array_from_callback", shape, sharding, list(pieces.values()), dtype)


def make_array_from_single_device_arrays(
    shape: Sequence[int], sharding: Any, arrays: Sequence[Any], *, dtype: Any = None
) -> core.Array:
    """An array of ``shape`` laid out by ``sharding`` from one array per addressable device, in
    the order of ``sharding.addressable_devices_indices_map(shape)`` (arrays placed on a device
    of the sharding are matched to it instead)."""
    shape = tuple(int(d) for d in shape)
    imap = sharding.addressable_devices_indices_map(shape)
    arrays = list(arrays)
    if len(arrays) != len(imap):
        raise ValueError(
            f"make_array_from_single_device_arrays: got {len(arrays)} arrays for a sharding with {len(imap)} "
            "addressable devices"
        )
    by_device: dict = {}
    for a in arrays:
        dev = getattr(a, "committed", False) and next(iter(a.devices()), None)
        if dev is None or dev is False or dev not in imap or dev in by_device:
            by_device = {}
            break
        by_device[dev] = a
    if len(by_device) != len(arrays):
        by_device = dict(zip(imap, arrays))
    pieces = []
    for dev, index in imap.items():
        a = by_device[dev]
        pieces.append((index, np.asarray(a._value if isinstance(a, core.Array) else a)))
    return _assemble("make_array_from_single_device_arrays", shape, sharding, pieces, dtype)


def live_arrays(platform: str | None = None) -> list[core.Array]:
    """The fjax arrays alive in this process (found through the garbage collector), those on
    ``platform``'s devices when given. Includes arrays fjax holds itself (cached constants)."""
    from fjax import _devices  # noqa: PLC0415

    plat = _devices._platform_of(platform) if platform is not None else None
    out = []
    for o in gc.get_objects():
        try:
            if not isinstance(o, core.Array):
                continue
        except ReferenceError:  # a weakref.proxy whose referent is gone
            continue
        if plat is None or any(d.platform == plat for d in o.devices()):
            out.append(o)
    return out


def copy_to_host_async(x: Any) -> Any:
    """Start copying ``x`` to the host and return it; fjax arrays already live in host memory
    (GPU arrays are copied when read), so there is nothing to start."""
    return x
