"""``jax.dlpack``: exchange arrays with other libraries through the DLPack protocol.

``from_dlpack(x)`` imports any object with ``__dlpack__``/``__dlpack_device__`` (numpy, PyTorch
CPU tensors, cupy ...) through numpy's DLPack support; fjax arrays export themselves the same
way (``np.from_dlpack(fjax_array)``, ``torch.from_dlpack(fjax_array)``): this module gives
``fjax.Array`` the ``__dlpack__`` and ``__dlpack_device__`` methods, which hand out the
array's (read-only) buffer. JAX 0.10 has no ``to_dlpack``; neither has fjax.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fjax import core, dtypes

__all__ = ["from_dlpack", "is_supported_dtype"]


def is_supported_dtype(dtype: dtypes.DTypeLike) -> bool:
    """Whether arrays of ``dtype`` can be exchanged through DLPack (fjax's array dtypes)."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return False
    return dt in dtypes.supported_dtypes


def from_dlpack(external_array: Any, device: Any = None, copy: bool | None = None) -> core.Array:
    """An fjax array holding the values of a DLPack-capable array (canonicalized as ``jnp.asarray``
    does: a float64 input becomes float32 unless x64 is on). ``device``: where to put it (as
    ``device_put``); ``copy=False`` is refused when a copy is needed (a dtype change)."""
    if not (hasattr(external_array, "__dlpack__") and hasattr(external_array, "__dlpack_device__")):
        raise TypeError("The array passed to from_dlpack must have __dlpack__ and __dlpack_device__ methods.")
    host = np.from_dlpack(external_array)
    if host.dtype not in dtypes.supported_dtypes:
        raise TypeError(f"from_dlpack: fjax does not support arrays of dtype {host.dtype}")
    dt = dtypes.canonicalize_dtype(host.dtype)
    if copy is False and dt != host.dtype:
        raise ValueError(f"from_dlpack: copy=False, but a {host.dtype} array must be copied to {dt}")
    value = np.array(host, dtype=dt, copy=True)  # fjax arrays own immutable buffers
    value.flags.writeable = False
    out = core.Array(value, False)
    if device is not None:
        from fjax._devices import device_put  # noqa: PLC0415

        out = device_put(out, device)
    return out


def _array_dlpack(self: core.Array, *, stream: Any = None, **kwargs: Any) -> Any:
    value = self._value
    if not isinstance(value, np.ndarray) and hasattr(value, "__dlpack__"):
        return value.__dlpack__(stream=stream, **kwargs)  # e.g. a cupy buffer of a GPU array
    return np.asarray(value).__dlpack__(stream=stream, **kwargs)


def _array_dlpack_device(self: core.Array) -> tuple:
    value = self._value
    if not isinstance(value, np.ndarray) and hasattr(value, "__dlpack_device__"):
        return value.__dlpack_device__()
    return np.asarray(value).__dlpack_device__()


core.Array.__dlpack__ = _array_dlpack  # type: ignore[attr-defined]
core.Array.__dlpack_device__ = _array_dlpack_device  # type: ignore[attr-defined]
