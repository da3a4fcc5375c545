"""``jax._src.xla_bridge``: only ``_backends``, the platforms whose devices are initialized.

JAX fills ``_backends`` on first use of a device; fjax fixes its device topology at the same
moment (``fjax._devices``), so ``_backends`` is ``{}`` before that and ``{"cpu": ...}`` after.
"""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "_backends":
        from fjax import _devices  # noqa: PLC0415

        if _devices._topology is None:
            return {}
        return {"cpu": _devices.local_devices(backend="cpu")}
    raise AttributeError(f"module 'jax._src.xla_bridge' (fjax) has no attribute {name!r}")
