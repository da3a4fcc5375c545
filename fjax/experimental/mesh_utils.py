"""``jax.experimental.mesh_utils``: arrays of devices shaped for ``jax.sharding.Mesh``.

fjax's devices are CPU devices and CUDA GPUs (``fjax._devices``), which have no physical torus to
respect: as JAX does for these platforms, ``create_device_mesh`` reshapes the devices in order
(GPUs sorted by id). ``device_kind_handler_dict`` maps a ``device_kind`` to a function
``(mesh_shape, devices, *, contiguous_submeshes)`` that may return a mesh first (JAX fills it for
TPU kinds; fjax has none, so it starts empty). ``create_hybrid_device_mesh`` tiles per-granule
meshes (granules are processes with ``process_is_granule=True``; fjax devices have no
``slice_index``, so the default raises as JAX does on CPU).
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["create_device_mesh", "create_hybrid_device_mesh", "device_kind_handler_dict"]

device_kind_handler_dict: dict[str, Callable[..., np.ndarray | None]] = {}


def _axis_sizes(mesh_shape: Sequence[int]) -> tuple[int, ...] | None:
    sizes = []
    for s in mesh_shape:  # a non-iterable raises TypeError, as in JAX
        try:
            sizes.append(int(s))
        except (TypeError, ValueError):
            return None
    return tuple(sizes)


def _all_devices() -> list:
    import fjax  # noqa: PLC0415

    return fjax.devices()


def create_device_mesh(
    mesh_shape: Sequence[int],
    devices: Sequence[Any] | None = None,
    *,
    contiguous_submeshes: bool = False,
    allow_split_physical_axes: bool = False,
) -> np.ndarray:
    """A numpy array of ``devices`` (default ``fjax.devices()``) of shape ``mesh_shape``; raises
    ValueError when the device count is not the product of ``mesh_shape``."""
    del allow_split_physical_axes  # no physical axes to split on CPU/GPU
    if devices is None:
        devices = _all_devices()
    shape = _axis_sizes(mesh_shape)
    if shape is None:
        raise ValueError(f"`mesh_shape` passed to `create_device_mesh` should be a sequence of ints. Got {mesh_shape}")
    devices = list(devices)
    if math.prod(shape) != len(devices):
        raise ValueError(f"Number of devices {len(devices)} must equal the product of mesh_shape {shape}")
    last = devices[-1]
    handler = device_kind_handler_dict.get(getattr(last, "device_kind", None))
    if handler is not None:
        out = handler(shape, devices, contiguous_submeshes=contiguous_submeshes)
        if out is not None:
            return out
    if getattr(last, "platform", None) == "gpu":
        devices = sorted(devices, key=lambda d: d.id)
    out = np.empty(len(devices), dtype=object)
    out[:] = devices  # element by element: a device is never unpacked as a sequence
    return out.reshape(shape)


def create_hybrid_device_mesh(
    mesh_shape: Sequence[int],
    dcn_mesh_shape: Sequence[int],
    devices: Sequence[Any] | None = None,
    *,
    process_is_granule: bool = False,
    should_sort_granules_by_key: bool = True,
    allow_split_physical_axes: bool = False,
) -> np.ndarray:
    """A device mesh for two-level parallelism: one ``mesh_shape`` mesh per granule (slice, or
    process with ``process_is_granule``), the granules laid out as ``dcn_mesh_shape``; the result
    has shape ``mesh_shape * dcn_mesh_shape`` elementwise."""
    if devices is None:
        devices = _all_devices()
    devices = list(devices)
    attr = "process_index" if process_is_granule else "slice_index"
    if not hasattr(devices[0], attr):
        raise ValueError(f"Device {devices[0]} does not have attribute {attr}. See `process_is_granule` option.")
    by_key: dict[Any, list] = collections.defaultdict(list)
    for d in devices:
        by_key[getattr(d, attr)].append(d)
    granules = [by_key[k] for k in sorted(by_key)] if should_sort_granules_by_key else list(by_key.values())
    if math.prod(dcn_mesh_shape) != len(granules):
        raise ValueError(f"Number of slices {len(granules)} must equal the product of dcn_mesh_shape {dcn_mesh_shape}")
    meshes = [create_device_mesh(mesh_shape, g, allow_split_physical_axes=allow_split_physical_axes) for g in granules]
    layout = np.arange(len(granules)).reshape(tuple(dcn_mesh_shape))
    blocks = np.empty(layout.shape, dtype=object)
    for pos, i in np.ndenumerate(layout):
        blocks[pos] = meshes[i]
    return np.block(blocks.tolist())
