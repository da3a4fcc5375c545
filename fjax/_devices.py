"""Devices and host transfer: ``fjax.devices``, ``device_put``, ``device_get``, ``block_until_ready``.

fjax computes on the host CPU with numpy and numba, synchronously. There is one CPU device per
process unless ``jax.config.update("jax_num_cpu_devices", N)`` asks for N before first use; a job
of several MPI processes (``fjax.distributed``) sees every process's devices in ``devices()``.
With cupy installed and a CUDA GPU present, the GPUs form the ``"gpu"`` platform (``CudaDevice``),
which is then the default backend, as in JAX; ``jax_platforms="cpu"`` (or ``JAX_PLATFORMS=cpu``)
keeps fjax on the CPU and never imports cupy. Where arrays live and where computations run
(committed and uncommitted arrays) is ``fjax._placement``.
Unsharded arrays live on the default device; sharded ones (``fjax.sharding``) carry their
sharding. These functions exist so code written for JAX runs unchanged; they follow JAX's
signatures and return values. ``Array.devices()``, ``Array.device`` and ``Array.sharding`` are attached here (as
``fjax.numpy`` attaches the array methods), so ``fjax.core`` needs no knowledge of devices.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from fjax import _tree_lifted as tu
from fjax import core, dtypes
from fjax.core import Array

__all__ = [
    "Device",
    "CudaDevice",
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
        return isinstance(other, Device) and other.platform == self.platform and other.id == self.id

    def __hash__(self) -> int:
        return hash(("fjax.Device", self.platform, self.id))

    def __reduce__(self) -> tuple:
        return (Device, (self.id, self.process_index))

    def memory_stats(self) -> None:
        return None


class CudaDevice(Device):
    """A CUDA GPU (``repr`` is ``CudaDevice(id=N)``, ``str`` is ``cuda:N``, platform ``"gpu"``,
    ``device_kind`` the GPU's name as cupy reports it)."""

    __slots__ = ("_kind", "_local")
    platform = "gpu"

    def __init__(self, id: int = 0, process_index: int = 0, kind: str = "gpu", local_id: int | None = None):  # noqa: A002
        super().__init__(id, process_index)
        self._kind = kind
        self._local = self.id if local_id is None else int(local_id)

    @property
    def device_kind(self) -> str:  # type: ignore[override]
        return self._kind

    @property
    def local_hardware_id(self) -> int:
        return self._local

    def __repr__(self) -> str:
        return f"CudaDevice(id={self.id})"

    def __str__(self) -> str:
        return f"cuda:{self.id}"

    def __reduce__(self) -> tuple:
        return (CudaDevice, (self.id, self.process_index, self._kind, self._local))

    def memory_stats(self) -> dict | None:
        from fjax.backends.cuda import runtime  # noqa: PLC0415

        return runtime.memory_stats(self._local)


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
    global _topology
    _topology = None
    _reset_platforms()


def _on_config(name: str, value: Any) -> None:
    if name in ("jax_default_device", "jax_platforms", "jax_num_cpu_devices"):
        _default_cache[0] = None
    if name == "jax_default_device":
        if value is not None and not isinstance(value, (Device, str)):
            raise ValueError(f"jax_default_device must be a Device, a platform name or None, got {value!r}")
        return
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


# ---------------------------------------------------------------------------------------------
# platforms: "gpu" (CUDA through cupy) when present, and always "cpu"

# the GPUs of the job, probed on first use (None: not yet)
_gpus: list[CudaDevice] | None = None
# (jax_platforms value, platforms present, default first)
_platforms_cache: tuple | None = None
_ALIASES = {"cpu": "cpu", "gpu": "gpu", "cuda": "gpu"}


def _reset_platforms() -> None:
    """Probe the GPUs and resolve ``jax_platforms`` again on next use (tests; topology changes)."""
    global _gpus, _platforms_cache
    _gpus = None
    _platforms_cache = None
    _default_cache[0] = None
    _shardings.clear()


def _gpu_devices() -> list[CudaDevice]:
    """The job's GPUs (each process is assumed to see as many as this one); empty without cupy or
    a GPU. Asking imports cupy (``fjax.backends.cuda.runtime``), so only ``jax_platforms`` naming
    no GPU keeps cupy unimported."""
    global _gpus
    if _gpus is None:
        from fjax.backends.cuda import runtime  # noqa: PLC0415

        if not runtime.available():
            _gpus = []
        else:
            n = runtime.device_count()
            _, _, _, n_proc = _get_topology()
            kinds = [runtime.device_kind(k) for k in range(n)]
            _gpus = [CudaDevice(q * n + k, q, kinds[k], k) for q in range(n_proc) for k in range(n)]
    return _gpus


def _platforms() -> tuple[str, ...]:
    """The platforms present, the default first: ``("gpu", "cpu")`` or ``("cpu",)``."""
    global _platforms_cache
    from fjax.config import config  # noqa: PLC0415

    val = config.jax_platforms
    cached = _platforms_cache
    if cached is not None and cached[0] == val:
        return cached[1]
    names = [n.strip().lower() for n in str(val).split(",") if n.strip()] if val else []
    if not names:
        plats: tuple[str, ...] = ("gpu", "cpu") if _gpu_devices() else ("cpu",)
    else:
        out: list[str] = []
        for n in names:
            p = _ALIASES.get(n)
            if p is None:
                raise RuntimeError(
                    f"Unable to initialize backend '{n}': fjax knows the platforms 'cpu' and 'cuda' (gpu) "
                    f"(jax_platforms={val!r})"
                )
            if p == "gpu" and not _gpu_devices():
                from fjax.backends.cuda import runtime  # noqa: PLC0415

                raise RuntimeError(
                    f"Unable to initialize backend '{n}': {runtime.unavailable_reason()} (you may need to install "
                    "fjax's gpu extra, or set JAX_PLATFORMS=cpu / jax.config.update('jax_platforms', 'cpu') to use "
                    "the CPU)"
                )
            if p not in out:
                out.append(p)
        if "cpu" not in out:
            out.append("cpu")  # host steps always run on the CPU, so it is always there
        plats = tuple(out)
    _platforms_cache = (val, plats)
    return plats


def _platform_of(backend: Any) -> str:
    """``"cpu"`` or ``"gpu"`` for a backend name or device (None: the default backend); the
    RuntimeError JAX raises for one that is not present."""
    plats = _platforms()
    if backend is None:
        return plats[0]
    name = backend if isinstance(backend, str) else getattr(backend, "platform", backend)
    p = _ALIASES.get(str(name).lower())
    if p is None or p not in plats:
        present = ", ".join("cuda" if q == "gpu" else q for q in plats)
        raise RuntimeError(
            f"Unknown backend: '{name}' requested, but no platforms that are instances of {name} are present. "
            f"Platforms present are: {present}"
        )
    return p


def _platform_devices(platform: str) -> list[Device]:
    return list(_gpu_devices()) if platform == "gpu" else list(_get_topology()[0])


def _check_backend(backend: Any) -> None:
    if backend is not None:
        _platform_of(backend)


def devices(backend: str | None = None) -> list[Device]:
    """All devices of the job (every process's) of ``backend`` (default: the default backend,
    the GPUs when cupy finds one), ordered by id."""
    return _platform_devices(_platform_of(backend))


def local_devices(
    process_index: int | None = None, backend: str | None = None, host_id: int | None = None
) -> list[Device]:
    """The devices of ``backend`` (default: the default backend) attached to process
    ``process_index`` (default: this process)."""
    platform = _platform_of(backend)
    _, _, me, n_proc = _get_topology()
    idx = process_index if process_index is not None else (host_id if host_id is not None else me)
    if not 0 <= idx < n_proc:
        raise ValueError(f"Unknown process_index {idx}: this job has {n_proc} process(es)")
    return [d for d in _platform_devices(platform) if d.process_index == idx]


def default_backend() -> str:
    """The platform name of the default backend: ``"gpu"`` when cupy finds a CUDA GPU (and
    ``jax_platforms`` allows it), else ``"cpu"``."""
    return _platforms()[0]


def device_count(backend: str | None = None) -> int:
    """The number of devices of the job (all processes) of ``backend`` (default: the default one)."""
    return len(devices(backend))


def local_device_count(backend: str | None = None) -> int:
    """The number of devices of ``backend`` attached to this process (CPU: ``jax_num_cpu_devices``,
    default 1)."""
    return len(local_devices(backend=backend))


def process_index(backend: str | None = None) -> int:
    """The index of this process in the job (0 unless launched by MPI and initialized)."""
    _check_backend(backend)
    return _get_topology()[2]


def process_count(backend: str | None = None) -> int:
    """The number of processes of the job."""
    _check_backend(backend)
    return _get_topology()[3]


# ---------------------------------------------------------------------------------------------
# the default device: ``fjax.default_device(d)`` blocks, then ``jax_default_device``, then the
# default backend's first local device


class _DefaultDeviceStack(threading.local):
    def __init__(self) -> None:
        self.stack: list = []


_default_stack = _DefaultDeviceStack()
# ``default_device`` blocks open in any thread (the placement hook stays armed while one is)
_default_blocks = [0]
_default_blocks_lock = threading.Lock()


def _enter_default_block(device: Any) -> None:
    with _default_blocks_lock:
        _default_blocks[0] += 1
    _default_stack.stack.append(device)


def _exit_default_block() -> None:
    _default_stack.stack.pop()
    with _default_blocks_lock:
        _default_blocks[0] -= 1


def _resolve_device(d: Any) -> Device:
    if isinstance(d, Device):
        return d
    if isinstance(d, str):
        return local_devices(backend=d)[0]
    raise TypeError(f"default_device: expected a Device or a platform name, got {d!r}")


# the default device outside ``default_device`` blocks (None: resolve again); reset whenever what
# decides it changes (jax_platforms, jax_default_device, the topology), so the placement check of
# every eager primitive reads one list item
_default_cache: list = [None]


def get_default_device() -> Device:
    """The device computations on uncommitted arrays run on, and plain arrays report."""
    st = _default_stack.stack
    if st:
        d = st[-1]
        return _system_default_device() if d is None else _resolve_device(d)
    d = _default_cache[0]
    if d is None:
        from fjax.config import config  # noqa: PLC0415

        c = config.jax_default_device
        d = _default_cache[0] = _system_default_device() if c is None else _resolve_device(c)
    return d


def _system_default_device() -> Device:
    """The default backend's first local device."""
    if _platforms()[0] == "gpu":
        me = _get_topology()[2]
        for g in _gpu_devices():
            if g.process_index == me:
                return g
    return _get_topology()[1][0]


def host_default_device() -> Device:
    """This process's first CPU device (where plain numpy-backed arrays are computed)."""
    return _get_topology()[1][0]


_default_device = get_default_device


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


def is_equivalent_to(a: Any, b: Any, ndim: int) -> bool:
    """Whether shardings ``a`` and ``b`` place every piece of an ``ndim``-dimensional array on the
    same devices (``Sharding.is_equivalent_to``): their device-to-index maps agree, compared on a
    shape every mesh divides, and so do their memory kinds."""
    if a.memory_kind != b.memory_kind:
        return False
    n = max(len(a.device_set), len(b.device_set))
    shape = (n,) * ndim

    def canon(sh: Any) -> dict:
        return {d: tuple(s.indices(n) for s in idx) for d, idx in sh.devices_indices_map(shape).items()}

    try:
        return canon(a) == canon(b)
    except (ValueError, NotImplementedError):
        return False


SingleDeviceSharding.is_equivalent_to = is_equivalent_to  # type: ignore[attr-defined]

# one SingleDeviceSharding per device (what plain arrays report)
_shardings: dict = {}


def sharding_for(device: Device) -> SingleDeviceSharding:
    """The (shared) ``SingleDeviceSharding`` of ``device``."""
    sh = _shardings.get(device)
    if sh is None:
        sh = _shardings[device] = SingleDeviceSharding(device)
    return sh


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


def _device_put_array(x: Any) -> Array:
    """``x`` as an Array, refused with JAX 0.10.2's device_put messages."""
    # numpy calls bfloat16 and ml_dtypes' other types void ("V"), as it does structured dtypes
    if isinstance(x, (np.ndarray, np.generic)) and (
        x.dtype.kind in "OUSMm"
        or (x.dtype.kind == "V" and x.dtype not in dtypes._ML_KINDS and x.dtype != dtypes.float0)
    ):
        raise TypeError(
            f"Dtype {x.dtype} is not a valid JAX array type. Only arrays of numeric types are supported by JAX."
        )
    if isinstance(x, str):
        raise TypeError(f"Argument {x!r} of type {type(x)} is not a valid JAX type")
    if not (core.is_arraylike(x) or core.array_method(x) is not None or hasattr(x, "__array__")):
        raise TypeError(
            f"Cannot interpret value of type {type(x)} as an abstract array; it does not have a dtype attribute"
        )
    return core.to_array(x, "device_put")


def _put_leaf(x: Any, device: Any = None) -> Any:
    if isinstance(x, core.Tracer):
        return x
    from fjax import _placement  # noqa: PLC0415

    if device is None:
        # uncommitted, on the default device; an array already placed keeps its placement (as JAX)
        if isinstance(x, Array):
            return x
        arr = _device_put_array(x)
        d = get_default_device()
        return _placement.put(arr, d, committed=False) if d.platform != "cpu" else arr
    arr = x if isinstance(x, Array) else _device_put_array(x)
    if isinstance(device, Device):
        device = sharding_for(device)
    if isinstance(device, SingleDeviceSharding):
        # an explicit device commits the array to it: computations on it run there
        return _placement.put(arr, device._device, committed=True)
    from fjax import sharding  # noqa: PLC0415

    return sharding.shard_array(arr, device)


def device_get(x: Any) -> Any:
    """A pytree of arrays copied to the host: ``fjax.Array`` leaves become numpy arrays
    (read-only views, as JAX's); other leaves (Python scalars, numpy arrays, ...) are returned
    unchanged. Traced values are returned as they are (as JAX's: there is nothing to copy yet)."""
    return tu.tree_map(_get_leaf, x)


def _get_leaf(x: Any) -> Any:
    if isinstance(x, Array):
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
    """The array's sharding: the whole array on the default device unless it is placed or sharded."""
    sh = getattr(self, "_sharding", None)
    if sh is not None:
        return sh
    return sharding_for(get_default_device())


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


def _default_sharding() -> SingleDeviceSharding:
    return sharding_for(get_default_device())


Array._committed = property(lambda self: False)
core.default_sharding = _default_sharding
