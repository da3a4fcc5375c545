"""``jax.sharding``: meshes of devices, partition specs and the shardings of arrays.

A ``Mesh`` arranges devices in a named n-d grid; ``PartitionSpec`` says, per array dimension,
which mesh axes split it; ``NamedSharding(mesh, spec)`` is that layout. fjax computes on the
host, so a sharded ``Array`` keeps its global value in one numpy buffer and carries its sharding:
``.sharding``, ``.addressable_shards`` (``Shard`` views of the buffer, one per device, with the
device, the index into the global array and the data) and ``.devices()`` follow JAX. Shard data
are views, not copies. Computations on sharded arrays (``jit``, eager ops) see the global value.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Sequence

import numpy as np

from fjax import core
from fjax._devices import Device, SingleDeviceSharding, _get_topology

__all__ = [
    "Mesh",
    "NamedSharding",
    "PartitionSpec",
    "PmapSharding",
    "Shard",
    "Sharding",
    "SingleDeviceSharding",
]


class Sharding:
    """Base class of the shardings of a mesh (``NamedSharding``, ``PmapSharding``)."""

    def devices_indices_map(self, global_shape: tuple) -> dict:
        raise NotImplementedError

    @property
    def device_set(self) -> set[Device]:
        raise NotImplementedError

    @property
    def num_devices(self) -> int:
        return len(self.device_set)

    @property
    def addressable_devices(self) -> set[Device]:
        me = _get_topology()[2]
        return {d for d in self.device_set if d.process_index == me}

    @property
    def is_fully_addressable(self) -> bool:
        return len(self.addressable_devices) == len(self.device_set)

    @property
    def memory_kind(self) -> str:
        return "device"

    def shard_shape(self, global_shape: tuple) -> tuple:
        idx = next(iter(self.devices_indices_map(tuple(global_shape)).values()))
        return tuple(len(range(*s.indices(n))) for s, n in zip(idx, global_shape))

    def addressable_devices_indices_map(self, global_shape: tuple) -> dict:
        me = _get_topology()[2]
        return {d: i for d, i in self.devices_indices_map(global_shape).items() if d.process_index == me}


class PartitionSpec(tuple):
    """How each array dimension is split over mesh axes: ``P('x', None, ('y', 'z'))``.

    An entry is ``None`` (not split), a mesh axis name, or a tuple of names (split over their
    product, the first major). Trailing dimensions not named are not split.
    """

    def __new__(cls, *partitions: Any) -> PartitionSpec:
        parts = tuple(tuple(p) if isinstance(p, list) else p for p in partitions)
        return super().__new__(cls, parts)

    def __repr__(self) -> str:
        return "PartitionSpec(" + ", ".join(repr(p) for p in self) + ")"

    def __reduce__(self) -> tuple:
        return (PartitionSpec, tuple(self))

    def _normalized(self, ndim: int) -> tuple:
        if len(self) > ndim:
            raise ValueError(f"PartitionSpec {self!r} has {len(self)} entries for an array of rank {ndim}")
        out = []
        for p in tuple(self) + (None,) * (ndim - len(self)):
            out.append(() if p is None else (p if isinstance(p, tuple) else (p,)))
        return tuple(out)


P = PartitionSpec


class _MeshCtx(threading.local):
    """The meshes entered with ``with mesh:`` in this thread (innermost last)."""

    def __init__(self) -> None:
        self.stack: list = []


_mesh_ctx = _MeshCtx()


def current_mesh() -> Mesh | None:
    """The innermost mesh entered with ``with mesh:`` in this thread, or None."""
    return _mesh_ctx.stack[-1] if _mesh_ctx.stack else None


class Mesh:
    """Devices in a grid with named axes (``jax.sharding.Mesh(devices, axis_names)``); usable as a
    context manager (``with mesh:``) as JAX's."""

    def __init__(self, devices: Any, axis_names: Sequence[str] | str, *, axis_types: Any = None):
        devs = np.asarray(devices, dtype=object)
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        axis_names = tuple(axis_names)
        if devs.ndim != len(axis_names):
            raise ValueError(
                f"Mesh requires the ndim of its first argument (`devices`) to equal the length of its second "
                f"argument (`axis_names`), but got devices.ndim == {devs.ndim} and len(axis_names) == "
                f"{len(axis_names)}."
            )
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"Mesh axis names must be unique, got {axis_names}")
        for d in devs.flat:
            if not isinstance(d, Device):
                raise TypeError(f"Mesh: expected fjax devices, got {d!r}")
        self.devices = devs
        self.axis_names = axis_names
        self.axis_types = axis_types

    @property
    def shape(self) -> dict:
        return dict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple:
        return tuple(self.devices.shape)

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @property
    def local_devices(self) -> list[Device]:
        me = _get_topology()[2]
        return [d for d in self.devices.flat if d.process_index == me]

    @property
    def empty(self) -> bool:
        return self.devices.size == 0

    def __enter__(self) -> Mesh:
        _mesh_ctx.stack.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _mesh_ctx.stack.pop()

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Mesh)
            and self.axis_names == other.axis_names
            and self.devices.shape == other.devices.shape
            and all(a == b for a, b in zip(self.devices.flat, other.devices.flat))
        )

    def __hash__(self) -> int:
        return hash((self.axis_names, self.devices.shape, tuple(d.id for d in self.devices.flat)))

    def __repr__(self) -> str:
        shape = ", ".join(f"'{n}': {s}" for n, s in self.shape.items())
        return f"Mesh(axis_sizes=({', '.join(map(str, self.axis_sizes))}), axis_names={self.axis_names}) # {{{shape}}}"


def make_mesh(
    axis_shapes: Sequence[int],
    axis_names: Sequence[str],
    *,
    devices: Sequence[Device] | None = None,
    axis_types: Any = None,
) -> Mesh:
    """A mesh of ``axis_shapes`` named ``axis_names`` over ``devices`` (default: all devices;
    their count must equal the mesh size), as ``jax.make_mesh``."""
    from fjax import _devices  # noqa: PLC0415

    devs = list(devices) if devices is not None else _devices.devices()
    n = math.prod(axis_shapes)
    if n != len(devs):
        raise ValueError(f"Number of devices {len(devs)} must equal the product of mesh_shape {tuple(axis_shapes)}")
    arr = np.empty(len(devs), dtype=object)
    for i, d in enumerate(devs):
        arr[i] = d
    return Mesh(arr.reshape(tuple(axis_shapes)), tuple(axis_names), axis_types=axis_types)


class NamedSharding(Sharding):
    """The layout ``spec`` of an array over ``mesh`` (``jax.sharding.NamedSharding``)."""

    def __init__(self, mesh: Mesh, spec: PartitionSpec = PartitionSpec(), *, memory_kind: str | None = None):
        if not isinstance(mesh, Mesh):
            raise TypeError(f"NamedSharding: expected a Mesh, got {type(mesh).__name__}")
        if not isinstance(spec, PartitionSpec):
            spec = PartitionSpec(*spec) if isinstance(spec, (tuple, list)) else spec
        used: list = []
        for p in spec:
            for name in () if p is None else (p if isinstance(p, tuple) else (p,)):
                if name not in mesh.axis_names:
                    raise ValueError(
                        f"Resource axis: {name} of {spec!r} is not found in mesh: {tuple(mesh.axis_names)}."
                    )
                if name in used:
                    raise ValueError(
                        f"A single NamedSharding spec specification can map every mesh axis to at most "
                        f"one positional dimension, but {spec!r} has duplicate entries for `{name}`"
                    )
                used.append(name)
        self.mesh = mesh
        self.spec = spec

    @property
    def device_set(self) -> set[Device]:
        return set(self.mesh.devices.flat)

    @property
    def is_fully_replicated(self) -> bool:
        return all(p is None or p == () for p in self.spec)

    def devices_indices_map(self, global_shape: tuple) -> dict:
        global_shape = tuple(global_shape)
        parts = self.spec._normalized(len(global_shape))
        sizes = self.mesh.shape
        out = {}
        for coord in np.ndindex(*self.mesh.devices.shape):
            pos = dict(zip(self.mesh.axis_names, coord))
            idx = []
            for dim, names in zip(global_shape, parts):
                if not names:
                    idx.append(slice(None))
                    continue
                k = math.prod(sizes[n] for n in names)
                if dim % k:
                    raise ValueError(
                        f"One of device_put args was given the sharding of {self!r}, which implies that the global "
                        f"size of its dimension is divisible by {k}, but it is equal to {dim} (full shape: "
                        f"{global_shape})"
                    )
                b = 0
                for n in names:
                    b = b * sizes[n] + pos[n]
                step = dim // k
                idx.append(slice(b * step, (b + 1) * step))
            out[self.mesh.devices[coord]] = tuple(idx)
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NamedSharding) and self.mesh == other.mesh and tuple(self.spec) == tuple(other.spec)

    def __hash__(self) -> int:
        return hash((self.mesh, tuple(self.spec)))

    def __repr__(self) -> str:
        return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r}, memory_kind=device)"


class PmapSharding(Sharding):
    """The sharding of a ``pmap`` result: entry ``i`` of the mapped axis on ``devices[i]``."""

    def __init__(self, devices: Sequence[Device], axis: int = 0):
        self.devices = np.asarray(list(devices), dtype=object)
        self.axis = axis

    @property
    def device_set(self) -> set[Device]:
        return set(self.devices.flat)

    @property
    def is_fully_replicated(self) -> bool:
        return False

    def devices_indices_map(self, global_shape: tuple) -> dict:
        out = {}
        for i, d in enumerate(self.devices.flat):
            idx = [slice(None)] * len(global_shape)
            idx[self.axis] = i
            out[d] = tuple(idx)
        return out

    def shard_shape(self, global_shape: tuple) -> tuple:
        s = list(global_shape)
        del s[self.axis]
        return tuple(s)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, PmapSharding)
            and self.axis == other.axis
            and list(self.devices.flat) == list(other.devices.flat)
        )

    def __hash__(self) -> int:
        return hash((tuple(self.devices.flat), self.axis))

    def __repr__(self) -> str:
        return f"PmapSharding(devices={list(self.devices.flat)!r}, axis={self.axis})"


class ShardedArray(core.Array):
    """An ``Array`` with a sharding (its value is the global array, kept in one buffer).

    ``_committed``: placed explicitly (``device_put`` with a device or sharding), so computations
    on it run on its device(s), as JAX's committed arrays; False for a result placed on a
    ``fjax.default_device`` that is not the host's first device."""

    __slots__ = ("_sharding", "_committed")

    def __init__(self, value: np.ndarray, weak_type: bool, sharding: Any, committed: bool = True):
        super().__init__(value, weak_type)
        self._sharding = sharding
        self._committed = committed

    @property
    def committed(self) -> bool:
        return self._committed

    def __reduce__(self) -> tuple:
        return (ShardedArray, (np.asarray(self._value), self.weak_type, self._sharding, self._committed))


class Shard:
    """One device's piece of an array: ``device``, ``index`` (into the global array), ``data``."""

    __slots__ = ("device", "index", "data", "replica_id")

    def __init__(self, device: Device, index: tuple, data: Any, replica_id: int = 0):
        self.device = device
        self.index = index
        self.data = data
        self.replica_id = replica_id

    def __repr__(self) -> str:
        return f"Shard(device={self.device!r}, index={self.index}, replica_id={self.replica_id}, data={self.data})"


def shard_array(arr: core.Array, sharding: Any) -> core.Array:
    """``arr`` laid out with ``sharding`` (checks the shape divides as the sharding requires)."""
    if isinstance(sharding, SingleDeviceSharding):
        return ShardedArray(arr._value, arr.weak_type, sharding)
    sharding.devices_indices_map(arr.shape)  # validates divisibility
    return ShardedArray(arr._value, arr.weak_type, sharding)


def addressable_shards(arr: core.Array) -> list[Shard]:
    """The ``Shard``s of ``arr`` on this process's devices (views of its buffer)."""
    sh = arr.sharding
    me = _get_topology()[2]
    seen: dict = {}
    out = []
    for d, idx in sh.devices_indices_map(arr.shape).items():
        key = tuple((s.start, s.stop) if isinstance(s, slice) else s for s in idx)
        rid = seen.get(key, 0)
        seen[key] = rid + 1
        if d.process_index != me:
            continue
        out.append(Shard(d, idx, core.Array(arr._value[idx]), rid))
    return out


# ---------------------------------------------------------------------------------------------
# jit(in_shardings=, out_shardings=)


def _is_sharding_leaf(x: Any) -> bool:
    return x is None or isinstance(x, (Sharding, PartitionSpec))


def _resolve(fn: str, s: Any) -> Any:
    """A sharding from a ``jit`` sharding leaf: a bare ``PartitionSpec`` needs the mesh of a
    surrounding ``with mesh:`` (as JAX's ``jit`` does)."""
    if isinstance(s, PartitionSpec):
        mesh = current_mesh()
        if mesh is None:
            raise RuntimeError(
                f"{fn}: a PartitionSpec was passed as a sharding without a mesh; use NamedSharding(mesh, spec) or "
                "call it inside `with mesh:`"
            )
        return NamedSharding(mesh, s)
    return s


def _apply(fn: str, what: str, tree: Any, shardings: Any) -> Any:
    """``tree`` with each leaf laid out by the sharding of its position in the prefix tree
    ``shardings`` (``None`` leaves: left as they are); traced leaves pass unchanged."""
    from fjax import _tree_lifted as tu  # noqa: PLC0415
    from fjax._devices import device_put  # noqa: PLC0415

    def put(s: Any, sub: Any) -> Any:
        if s is None:
            return sub
        s = _resolve(fn, s)
        return device_put(sub, s)

    if _is_sharding_leaf(shardings):
        return put(shardings, tree)
    try:
        return tu.tree_map(put, shardings, tree, is_leaf=_is_sharding_leaf)
    except ValueError as e:
        if "divisible" in str(e):
            raise
        raise ValueError(f"{fn}: {what} must be a tree prefix of the corresponding values ({e})") from None


def jit_with_shardings(jitted: Any, in_shardings: Any, out_shardings: Any) -> Any:
    """``jit(f, in_shardings=, out_shardings=)``: the arguments are laid out by ``in_shardings``
    (a tree prefix of the positional, non-static arguments; divisibility is checked as JAX does)
    and the results by ``out_shardings``.

    fjax's arrays hold their global value and a compiled program computes on it whole, so the
    shardings change where the results say they live (``.sharding``, ``.addressable_shards``),
    not the numbers; with several processes every process computes the whole program on the
    global value (no per-device partitioning of the work)."""
    import functools  # noqa: PLC0415

    name = getattr(jitted, "name", "jit")
    fn = f"jit({name})"

    @functools.wraps(jitted, updated=())
    def call(*args: Any, **kwargs: Any) -> Any:
        if in_shardings is not None:
            if kwargs:
                raise ValueError(f"{fn}: keyword arguments are not supported when in_shardings is specified")
            static = {i % len(args) for i in jitted.static_argnums if -len(args) <= i < len(args)}
            dyn = [a for i, a in enumerate(args) if i not in static]
            spec = in_shardings
            if isinstance(spec, list):
                spec = tuple(spec)
            if not _is_sharding_leaf(spec) and isinstance(spec, tuple) and len(spec) != len(dyn):
                raise ValueError(
                    f"{fn}: in_shardings has {len(spec)} entries but the function was called with {len(dyn)} "
                    "positional (non-static) arguments"
                )
            laid = iter(_apply(fn, "in_shardings", tuple(dyn), spec))
            args = tuple(a if i in static else next(laid) for i, a in enumerate(args))
        out = jitted(*args, **kwargs)
        if out_shardings is not None:
            out = _apply(fn, "out_shardings", out, out_shardings)
        return out

    for attr in ("lower", "trace", "eval_shape", "clear_cache", "fun", "static_argnums", "static_argnames"):
        if hasattr(jitted, attr):
            setattr(call, attr, getattr(jitted, attr))
    call._fjax_jitted = jitted  # noqa: SLF001
    return call
