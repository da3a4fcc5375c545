"""Devices and host transfer: ``fjax.devices``, ``device_put``, ``device_get``, ``block_until_ready``.

fjax computes on the host CPU with numpy and numba, synchronously. There is one CPU device per
process unless ``jax.config.update("jax_num_cpu_devices", N)`` asks for N before first use; a job
of several MPI processes (``fjax.distributed``) sees every process's devices in ``devices()``.
Unsharded arrays live on the first local device; sharded ones (``fjax.sharding``) carry their
sharding. These
functions exist so code written for JAX runs unchanged; they follow JAX's signatures and return
values. ``Array.devices()``, ``Array.device`` and ``Array.sharding`` are attached here (as
``fjax.numpy`` attaches the array methods), so ``fjax.core`` needs no knowledge of devices.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from fjax import core
from fjax import tree_util as tu
from fjax.core import Array

__all__ = [
    "Device",
    "SingleDeviceSharding",
    "block_until_ready",
    "default_backend",
    "device_count",
    "device_get",
    "device_put",
    "devices",
    "local_device_count",
    "local_devices",
    "process_count",
    "process_index",
]


class Device:
    """A CPU device (``jax.Device``; ``repr`` is ``CpuDevice(id=N)``). Process ``p`` of a job with
    ``L`` local devices per process owns the global ids ``p*L .. p*L+L-1``."""

    __slots__ = ("id", "process_index")
    platform = "cpu"
    device_kind = "cpu"
    client = None

    def __init__(self, id: int = 0, process_index: int = 0):  # noqa: A002
        self.id = int(id)
        self.process_index = int(process_index)

    @property
    def host_id(self) -> int:
        return self.process_index

    @property
    def local_hardware_id(self) -> int:
        return self.id - self.process_index * local_device_count()

    def __repr__(self) -> str:
        return f"CpuDevice(id={self.id})"

    def __str__(self) -> str:
        return f"{self.platform}:{self.id}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self) -> int:
        return hash(("fjax.Device", self.platform, self.id))

    def __reduce__(self) -> tuple:
        return (Device, (self.id, self.process_index))

    def memory_stats(self) -> None:
        return None


CPU_DEVICE = Device(0, 0)


def _cpu_device() -> Device:
    return CPU_DEVICE


# the topology is fixed at first use (as JAX's backends): jax_num_cpu_devices must be set before
_topology: tuple | None = None


def _num_local_from_config() -> int:
    from fjax.config import config  # noqa: PLC0415

    n = config.jax_num_cpu_devices
    try:
        n = int(n)
    except (TypeError, ValueError):
        raise ValueError(f"jax_num_cpu_devices must be an integer, got {n!r}") from None
    if n == -1:
        # XLA's older spelling, honoured as JAX does
        for flag in os.environ.get("XLA_FLAGS", "").split():
            if flag.startswith("--xla_force_host_platform_device_count="):
                n = int(flag.split("=", 1)[1])
    return 1 if n == -1 else n


def _get_topology() -> tuple[list[Device], list[Device], int, int]:
    """``(global devices, local devices, process index, process count)``, fixed at first use."""
    global _topology
    if _topology is None:
        from fjax import distributed  # noqa: PLC0415

        n_local = _num_local_from_config()
        if n_local < 1:
            raise ValueError(f"jax_num_cpu_devices must be positive (or -1), got {n_local}")
        p, n_proc = distributed.state.process_id, distributed.state.num_processes
        glob = [Device(q * n_local + k, q) for q in range(n_proc) for k in range(n_local)]
        _topology = (glob, glob[p * n_local : (p + 1) * n_local], p, n_proc)
    return _topology


def _topology_changed() -> None:
    global _topology, _SHARDING
    _topology = None
    _SHARDING = SingleDeviceSharding(_default_device())


def _default_device() -> Device:
    return _get_topology()[1][0]


def _on_config(name: str, value: Any) -> None:
    if name != "jax_num_cpu_devices" or _topology is None:
        return
    from fjax.config import config  # noqa: PLC0415

    if int(value) != int(config.jax_num_cpu_devices):
        raise RuntimeError(
            "jax_num_cpu_devices config should be updated before backends are initialized (before the first "
            "call to fjax.devices(), device_put, pmap or any other use of devices)"
        )


def _register_config_listener() -> None:
    from fjax.config import config  # noqa: PLC0415

    if _on_config not in config._listeners:
        config._listeners.append(_on_config)


_register_config_listener()


class SingleDeviceSharding:
    """The whole array on one device (the sharding of every unsharded fjax array)."""

    __slots__ = ("_device",)

    def __init__(self, device: Device = CPU_DEVICE, *, memory_kind: str | None = None):
        if not isinstance(device, Device):
            raise TypeError(f"SingleDeviceSharding: expected a fjax Device, got {device!r}")
        self._device = device

    @property
    def device_set(self) -> set[Device]:
        return {self._device}

    @property
    def memory_kind(self) -> str:
        return "device"

    @property
    def is_fully_replicated(self) -> bool:
        return True

    @property
    def is_fully_addressable(self) -> bool:
        return self._device.process_index == _get_topology()[2]

    @property
    def num_devices(self) -> int:
        return 1

    def devices_indices_map(self, global_shape: tuple) -> dict:
        return {self._device: tuple(slice(None) for _ in global_shape)}

    def shard_shape(self, global_shape: tuple) -> tuple:
        return tuple(global_shape)

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind=device)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SingleDeviceSharding) and other._device == self._device

    def __hash__(self) -> int:
        return hash(("SingleDeviceSharding", self._device))


_SHARDING = SingleDeviceSharding(CPU_DEVICE)


def _check_backend(backend: Any) -> None:
    if backend is None:
        return
    name = backend if isinstance(backend, str) else getattr(backend, "platform", backend)
    if name != "cpu":
        raise RuntimeError(
            f"Unknown backend: '{name}' requested, but no platforms that are instances of {name} are present. "
            "Platforms present are: cpu"
        )


def devices(backend: str | None = None) -> list[Device]:
    """All devices of the job (every process's), ordered by id."""
    _check_backend(backend)
    return list(_get_topology()[0])


def local_devices(
    process_index: int | None = None, backend: str | None = None, host_id: int | None = None
) -> list[Device]:
    """The devices attached to process ``process_index`` (default: this process)."""
    _check_backend(backend)
    glob, local, me, n_proc = _get_topology()
    idx = process_index if process_index is not None else (host_id if host_id is not None else me)
    if not 0 <= idx < n_proc:
        raise ValueError(f"Unknown process_index {idx}: this job has {n_proc} process(es)")
    return [d for d in glob if d.process_index == idx]


def default_backend() -> str:
    """The platform name of the default backend: ``"cpu"``."""
    return "cpu"


def device_count(backend: str | None = None) -> int:
    """The number of devices of the job (all processes)."""
    _check_backend(backend)
    return len(_get_topology()[0])


def local_device_count(backend: str | None = None) -> int:
    """The number of devices attached to this process (``jax_num_cpu_devices``, default 1)."""
    _check_backend(backend)
    return len(_get_topology()[1])


def process_index(backend: str | None = None) -> int:
    """The index of this process in the job (0 unless launched by MPI and initialized)."""
    _check_backend(backend)
    return _get_topology()[2]


def process_count(backend: str | None = None) -> int:
    """The number of processes of the job."""
    _check_backend(backend)
    return _get_topology()[3]


# ---------------------------------------------------------------------------------------------
# transfers


def _is_sharding(x: Any) -> bool:
    from fjax import sharding  # noqa: PLC0415

    return isinstance(x, (SingleDeviceSharding, sharding.Sharding))


def _check_device(device: Any) -> None:
    if device is None or isinstance(device, Device) or _is_sharding(device):
        return
    raise ValueError(
        "`jax.device_put` only accepts `None`, `jax.sharding.Sharding`, `jax.Device` or a pytree of these "
        f"values. Received invalid value: {device}"
    )


def device_put(x: Any, device: Any = None, *, src: Any = None, donate: bool = False, may_alias: Any = None) -> Any:
    """Put a pytree of arrays on ``device`` (fjax's only device): leaves become ``fjax.Array``.

    numpy arrays and numpy scalars become arrays of their (canonicalized) dtype, Python scalars
    weakly typed arrays; fjax arrays and traced values are returned as they are. ``device`` may
    be ``None``, a ``Device``, a sharding, or a pytree of these matching a prefix of ``x``.
    """
    del src, donate, may_alias
    if device is None or isinstance(device, Device) or _is_sharding(device):
        _check_device(device)
        return tu.tree_map(lambda leaf: _put_leaf(leaf, device), x)
    # a pytree of devices, a prefix of x
    tu.tree_map(_check_device, device, is_leaf=lambda d: d is None or isinstance(d, Device) or _is_sharding(d))
    return tu.tree_map(
        lambda d, leaf: tu.tree_map(lambda v: _put_leaf(v, d), leaf),
        device,
        x,
        is_leaf=lambda d: d is None or isinstance(d, Device) or _is_sharding(d),
    )


def _put_leaf(x: Any, device: Any = None) -> Any:
    if isinstance(x, core.Tracer):
        return x
    arr = x if isinstance(x, Array) else core.to_array(x, "device_put")
    if device is None:
        return arr
    from fjax import sharding  # noqa: PLC0415

    if isinstance(device, Device):
        device = SingleDeviceSharding(device)
    if isinstance(device, SingleDeviceSharding) and device._device == _default_device():
        return Array(arr._value, arr.weak_type) if type(arr) is not Array else arr
    return sharding.shard_array(arr, device)


def device_get(x: Any) -> Any:
    """A pytree of arrays copied to the host: ``fjax.Array`` leaves become numpy arrays
    (read-only views, as JAX's); other leaves (Python scalars, numpy arrays, ...) are returned
    unchanged. Traced values raise ``TracerArrayConversionError``."""
    return tu.tree_map(_get_leaf, x)


def _get_leaf(x: Any) -> Any:
    if isinstance(x, (Array, core.Tracer)):
        return np.asarray(x)
    return x


def block_until_ready(x: Any) -> Any:
    """Wait until every array in the pytree ``x`` is computed; returns ``x``.

    fjax computes synchronously, so arrays are always ready; leaves with a
    ``block_until_ready`` method are still asked, for JAX compatibility."""
    for leaf in tu.tree_leaves(x):
        f = getattr(leaf, "block_until_ready", None)
        if f is not None and not isinstance(leaf, type):
            f()
    return x


# ---------------------------------------------------------------------------------------------
# Array methods


def _array_devices(self: Array) -> set[Device]:
    """The set of devices the array lives on (the first local device unless it is sharded)."""
    return set(self.sharding.device_set)


def _array_device(self: Array) -> Device:
    """The device the array lives on (an error for an array sharded over several devices)."""
    ds = self.sharding.device_set
    if len(ds) != 1:
        raise ValueError(f"Array.device: the array is sharded over {len(ds)} devices; use Array.devices()")
    return next(iter(ds))


def _array_sharding(self: Array) -> Any:
    """The array's sharding: the whole array on the first local device unless it is sharded."""
    sh = getattr(self, "_sharding", None)
    if sh is not None:
        return sh
    _get_topology()
    return _SHARDING


def _array_addressable_shards(self: Array) -> list:
    """The shards of the array on this process's devices (``jax.Shard`` objects)."""
    from fjax import sharding  # noqa: PLC0415

    return sharding.addressable_shards(self)


def _array_is_fully_replicated(self: Array) -> bool:
    return bool(self.sharding.is_fully_replicated)


Array.devices = _array_devices
Array.device = property(_array_device)
Array.sharding = property(_array_sharding)
Array.addressable_shards = property(_array_addressable_shards)
Array.global_shards = property(_array_addressable_shards)
Array.is_fully_replicated = property(_array_is_fully_replicated)
Array.is_fully_addressable = property(lambda self: True)


core.default_sharding = SingleDeviceSharding
