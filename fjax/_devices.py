"""Devices and host transfer: ``fjax.devices``, ``device_put``, ``device_get``, ``block_until_ready``.

fjax computes on the host CPU with numpy and numba, synchronously: there is exactly one device,
``CpuDevice(id=0)``, every ``fjax.Array`` lives on it and is ready as soon as it exists. These
functions exist so code written for JAX runs unchanged; they follow JAX's signatures and return
values. ``Array.devices()``, ``Array.device`` and ``Array.sharding`` are attached here (as
``fjax.numpy`` attaches the array methods), so ``fjax.core`` needs no knowledge of devices.
"""

from __future__ import annotations

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
    """The host CPU: fjax's only device (``jax.Device``; ``repr`` is ``CpuDevice(id=0)``)."""

    __slots__ = ()
    id = 0
    platform = "cpu"
    device_kind = "cpu"
    process_index = 0
    host_id = 0
    local_hardware_id = 0
    client = None

    def __repr__(self) -> str:
        return f"CpuDevice(id={self.id})"

    def __str__(self) -> str:
        return f"{self.platform}:{self.id}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self) -> int:
        return hash(("fjax.Device", self.platform, self.id))

    def __reduce__(self) -> tuple:
        return (_cpu_device, ())

    def memory_stats(self) -> None:
        return None


CPU_DEVICE = Device()


def _cpu_device() -> Device:
    return CPU_DEVICE


class SingleDeviceSharding:
    """The sharding of every fjax array: the whole array on ``CpuDevice(id=0)``."""

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
        return True

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
    """All devices of ``backend`` (default: the default backend): ``[CpuDevice(id=0)]``."""
    _check_backend(backend)
    return [CPU_DEVICE]


def local_devices(
    process_index: int | None = None, backend: str | None = None, host_id: int | None = None
) -> list[Device]:
    """The devices attached to this process: ``[CpuDevice(id=0)]``."""
    _check_backend(backend)
    idx = process_index if process_index is not None else (host_id if host_id is not None else 0)
    if idx != 0:
        raise ValueError(f"Unknown process_index {idx}: fjax runs in a single process (index 0)")
    return [CPU_DEVICE]


def default_backend() -> str:
    """The platform name of the default backend: ``"cpu"``."""
    return "cpu"


def device_count(backend: str | None = None) -> int:
    """The number of devices (always 1)."""
    _check_backend(backend)
    return 1


def local_device_count(backend: str | None = None) -> int:
    """The number of devices attached to this process (always 1)."""
    _check_backend(backend)
    return 1


def process_index(backend: str | None = None) -> int:
    """The index of this process (always 0)."""
    _check_backend(backend)
    return 0


def process_count(backend: str | None = None) -> int:
    """The number of processes (always 1)."""
    _check_backend(backend)
    return 1


# ---------------------------------------------------------------------------------------------
# transfers


def _check_device(device: Any) -> None:
    if device is None or isinstance(device, (Device, SingleDeviceSharding)):
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
    if device is None or isinstance(device, (Device, SingleDeviceSharding)):
        _check_device(device)
        return tu.tree_map(_put_leaf, x)
    # a pytree of devices, a prefix of x
    tu.tree_map(_check_device, device)
    return tu.tree_map(lambda _, leaf: tu.tree_map(_put_leaf, leaf), device, x)


def _put_leaf(x: Any) -> Any:
    if isinstance(x, (Array, core.Tracer)):
        return x
    return core.to_array(x, "device_put")


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
    """The set of devices the array lives on: ``{CpuDevice(id=0)}``."""
    return {CPU_DEVICE}


def _array_device(self: Array) -> Device:
    """The device the array lives on: ``CpuDevice(id=0)``."""
    return CPU_DEVICE


def _array_sharding(self: Array) -> SingleDeviceSharding:
    """The array's sharding: the whole array on ``CpuDevice(id=0)``."""
    return _SHARDING


Array.devices = _array_devices
Array.device = property(_array_device)
Array.sharding = property(_array_sharding)
