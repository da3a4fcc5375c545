"""``jax.sharding``: meshes of devices, partition specs and the shardings of arrays.

A ``Mesh`` arranges devices in a named n-d grid; ``PartitionSpec`` says, per array dimension,
which mesh axes split it; ``NamedSharding(mesh, spec)`` is that layout. fjax computes on the
host, so a sharded ``Array`` keeps its global value in one numpy buffer and carries its sharding:
``.sharding``, ``.addressable_shards`` (``Shard`` views of the buffer, one per device, with the
device, the index into the global array and the data) and ``.devices()`` follow JAX. Shard data
are views, not copies. Computations on sharded arrays (``jit``, eager ops) see the global value.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import math
import operator
import threading
from collections.abc import Callable, Iterator
from typing import Any, Sequence

import numpy as np

from fjax import core
from fjax._devices import Device, SingleDeviceSharding, _get_topology

__all__ = [
    "AbstractDevice",
    "AbstractMesh",
    "AxisType",
    "ManualAxisType",
    "Mesh",
    "NamedSharding",
    "PartitionSpec",
    "PmapSharding",
    "Shard",
    "Sharding",
    "SingleDeviceSharding",
    "auto_axes",
    "explicit_axes",
    "get_abstract_mesh",
    "get_mesh",
    "make_single_device_sharding",
    "reshard",
    "set_mesh",
    "use_abstract_mesh",
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

    def is_equivalent_to(self, other: Any, ndim: int) -> bool:
        """Whether ``other`` places every piece of an ``ndim``-dimensional array as this does."""
        from fjax import _devices  # noqa: PLC0415

        return _devices.is_equivalent_to(self, other, ndim)

    def shard_shape(self, global_shape: tuple) -> tuple:
        idx = next(iter(self.devices_indices_map(tuple(global_shape)).values()))
        return tuple(len(range(*s.indices(n))) for s, n in zip(idx, global_shape))

    def addressable_devices_indices_map(self, global_shape: tuple) -> dict:
        me = _get_topology()[2]
        return {d: i for d, i in self.devices_indices_map(global_shape).items() if d.process_index == me}


class _UnconstrainedPartition:
    """``P.UNCONSTRAINED``: the dimension's partitioning is left to the compiler (fjax keeps the
    dimension whole, as ``None``)."""

    _instance = None

    def __new__(cls) -> _UnconstrainedPartition:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNCONSTRAINED"

    def __reduce__(self) -> tuple:
        return (_UnconstrainedPartition, ())


_UNCONSTRAINED = _UnconstrainedPartition()


class PartitionSpec(tuple):
    """How each array dimension is split over mesh axes: ``P('x', None, ('y', 'z'))``.

    An entry is ``None`` (not split), a mesh axis name, or a tuple of names (split over their
    product, the first major). Trailing dimensions not named are not split.
    """

    def __new__(cls, *partitions: Any) -> PartitionSpec:
        parts = tuple(tuple(p) if isinstance(p, list) else p for p in partitions)
        return super().__new__(cls, parts)

    UNCONSTRAINED = _UNCONSTRAINED

    def __repr__(self) -> str:
        # JAX 0.10 prints a spec as its tuple after ``P``: P('x',), P('x', None), P()
        return "P" + tuple.__repr__(tuple(self))

    def __reduce__(self) -> tuple:
        return (PartitionSpec, tuple(self))

    def _normalized(self, ndim: int) -> tuple:
        if len(self) > ndim:
            raise ValueError(f"PartitionSpec {self!r} has {len(self)} entries for an array of rank {ndim}")
        out = []
        for p in tuple(self) + (None,) * (ndim - len(self)):
            out.append(() if p is None or p is _UNCONSTRAINED else (p if isinstance(p, tuple) else (p,)))
        return tuple(out)


P = PartitionSpec


class _MeshCtx(threading.local):
    """The meshes entered with ``with mesh:`` in this thread (innermost last)."""

    def __init__(self) -> None:
        self.stack: list = []


_mesh_ctx = _MeshCtx()


def current_mesh() -> Mesh | None:
    """The innermost mesh entered with ``with mesh:`` in this thread, else the mesh set with
    ``jax.set_mesh``, or None."""
    if _mesh_ctx.stack:
        return _mesh_ctx.stack[-1]
    return _set_mesh_state[0]


class _AxisTypeQueries:
    """``are_all_axes_auto/explicit/manual`` of a mesh with ``axis_types``."""

    axis_types: tuple

    @property
    def are_all_axes_auto(self) -> bool:
        return all(t == AxisType.Auto for t in self.axis_types)

    @property
    def are_all_axes_explicit(self) -> bool:
        return all(t == AxisType.Explicit for t in self.axis_types)

    @property
    def are_all_axes_manual(self) -> bool:
        return all(t == AxisType.Manual for t in self.axis_types)

    @property
    def _are_all_axes_auto_or_manual(self) -> bool:
        return all(t in (AxisType.Auto, AxisType.Manual) for t in self.axis_types)

    @property
    def _are_all_axes_explicit_or_manual(self) -> bool:
        return all(t in (AxisType.Explicit, AxisType.Manual) for t in self.axis_types)


class Mesh(_AxisTypeQueries):
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
        self.axis_types = _axis_types("Mesh", axis_types, len(axis_names))  # (default: all Auto, as JAX)

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
        return self.devices.ndim == 0 or self.devices.size == 0

    @property
    def abstract_mesh(self) -> AbstractMesh:
        """The mesh's axis names, sizes and types without its devices."""
        d = next(iter(self.devices.flat), None)
        dev = AbstractDevice(d.device_kind, None, d.platform) if d is not None else None
        return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types, abstract_device=dev)

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
        return f"Mesh(axis_sizes={self.axis_sizes!r}, axis_names={self.axis_names!r}, axis_types={self.axis_types!r})"

    def __str__(self) -> str:  # JAX's short form, as NamedSharding's repr shows a mesh
        axes = ", ".join(f"{n!r}: {s}" for n, s in zip(self.axis_names, self.axis_sizes))
        return f"Mesh({axes}, axis_types={self.axis_types!r})"


def make_mesh(
    axis_shapes: Sequence[int],
    axis_names: Sequence[str],
    axis_types: Any = None,
    *,
    devices: Sequence[Device] | None = None,
) -> Mesh:
    """A mesh of ``axis_shapes`` named ``axis_names`` over the first ``prod(axis_shapes)`` of
    ``devices`` (default: all devices), as ``jax.make_mesh``: its axes are ``Explicit`` unless
    ``axis_types`` says otherwise (``jax.sharding.Mesh``'s default is ``Auto``)."""
    from fjax import _devices  # noqa: PLC0415

    devs = list(devices) if devices is not None else _devices.devices()
    try:
        axis_shapes = tuple(int(operator.index(s)) for s in axis_shapes)
    except TypeError:
        raise ValueError(
            f"`axis_shapes` passed to `make_mesh` should be a sequence of ints. Got {axis_shapes}"
        ) from None
    n = math.prod(axis_shapes)
    if n > len(devs):
        raise ValueError(f"Number of devices {len(devs)} must be >= the product of mesh_shape {axis_shapes}")
    devs = devs[:n]
    arr = np.empty(len(devs), dtype=object)
    for i, d in enumerate(devs):
        arr[i] = d
    if axis_types is None:
        axis_types = (AxisType.Explicit,) * len(tuple(axis_names))
    return Mesh(arr.reshape(tuple(axis_shapes)), tuple(axis_names), axis_types=axis_types)


class NamedSharding(Sharding):
    """The layout ``spec`` of an array over ``mesh`` (``jax.sharding.NamedSharding``)."""

    def __init__(self, mesh: Mesh, spec: PartitionSpec = PartitionSpec(), *, memory_kind: str | None = None):
        if not isinstance(mesh, (Mesh, AbstractMesh)):
            raise TypeError(f"NamedSharding: expected a Mesh or AbstractMesh, got {type(mesh).__name__}")
        if not isinstance(spec, PartitionSpec):
            spec = PartitionSpec(*spec) if isinstance(spec, (tuple, list)) else spec
        used: list = []
        for p in spec:
            for name in () if p is None or p is _UNCONSTRAINED else (p if isinstance(p, tuple) else (p,)):
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

    def update(self, **kwargs: Any) -> NamedSharding:
        """This sharding with ``mesh``, ``spec`` or ``memory_kind`` replaced."""
        bad = set(kwargs) - {"mesh", "spec", "memory_kind"}
        if bad:
            raise TypeError(f"NamedSharding.update: unexpected arguments {sorted(bad)}")
        return NamedSharding(kwargs.get("mesh", self.mesh), kwargs.get("spec", self.spec))

    @property
    def device_set(self) -> set[Device]:
        if isinstance(self.mesh, AbstractMesh):
            raise ValueError("NamedSharding over an AbstractMesh has no devices")
        return set(self.mesh.devices.flat)

    @property
    def is_fully_replicated(self) -> bool:
        return all(p is None or p == () or p is _UNCONSTRAINED for p in self.spec)

    def check_shape(self, global_shape: tuple) -> None:
        """ValueError unless each dimension of ``global_shape`` divides by the mesh axes that
        split it (a mesh without devices, ``AbstractMesh``, too)."""
        global_shape = tuple(global_shape)
        parts = self.spec._normalized(len(global_shape))
        sizes = self.mesh.shape
        for dim, names in zip(global_shape, parts):
            k = math.prod(sizes[n] for n in names)
            if names and dim % k:
                raise ValueError(
                    f"One of device_put args was given the sharding of {self!r}, which implies that the global "
                    f"size of its dimension is divisible by {k}, but it is equal to {dim} (full shape: "
                    f"{global_shape})"
                )

    def devices_indices_map(self, global_shape: tuple) -> dict:
        global_shape = tuple(global_shape)
        if isinstance(self.mesh, AbstractMesh):
            raise ValueError(f"devices_indices_map: {self!r} is over an AbstractMesh, which has no devices")
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
        if isinstance(self.mesh, AbstractMesh):  # no memory: JAX prints no memory kind
            return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r})"
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r}, memory_kind=device)"


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


# ---------------------------------------------------------------------------------------------
# axis types, abstract meshes, the current mesh (jax.set_mesh) and reshard
#
# fjax arrays hold their global value and computations see it whole, so axis types (JAX's
# sharding-in-types) change no result: they are recorded on meshes, and ``reshard``,
# ``auto_axes`` and ``explicit_axes`` lay values out eagerly (under ``jit`` they pass values
# unchanged, as the layout of a traced value is not tracked).


class AxisType(enum.Enum):
    """How a mesh axis takes part in sharding (``jax.sharding.AxisType``)."""

    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self) -> str:
        return self.name


class ManualAxisType:
    """The manual-axis facts of a value inside ``shard_map`` (varying, unreduced and reduced axes)."""

    def __init__(self, *, varying: Any = frozenset(), unreduced: Any = frozenset(), reduced: Any = frozenset()):
        self.varying = frozenset(varying)
        self.unreduced = frozenset(unreduced)
        self.reduced = frozenset(reduced)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ManualAxisType) and (self.varying, self.unreduced, self.reduced) == (
            other.varying,
            other.unreduced,
            other.reduced,
        )

    def __hash__(self) -> int:
        return hash((self.varying, self.unreduced, self.reduced))

    def __repr__(self) -> str:
        sets = {"varying": self.varying, "unreduced": self.unreduced, "reduced": self.reduced}
        return "ManualAxisType(" + ", ".join(f"{k}={set(v) or {}}" for k, v in sets.items()) + ")"


class AbstractDevice:
    """The kind of the devices of a mesh (``jax.sharding.AbstractDevice``)."""

    def __init__(self, device_kind: str, num_cores: int | None, platform: str) -> None:
        self.device_kind = device_kind
        self.num_cores = num_cores
        self.platform = platform

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbstractDevice) and (self.device_kind, self.num_cores, self.platform) == (
            other.device_kind,
            other.num_cores,
            other.platform,
        )

    def __hash__(self) -> int:
        return hash((self.device_kind, self.num_cores, self.platform))

    def __repr__(self) -> str:
        return f"AbstractDevice(device_kind={self.device_kind}, num_cores={self.num_cores}, platform={self.platform})"


def _axis_types(fn: str, axis_types: Any, n: int) -> tuple:
    if axis_types is None:
        return (AxisType.Auto,) * n
    if isinstance(axis_types, AxisType):
        return (axis_types,) * n
    out = tuple(axis_types)
    if len(out) != n or not all(isinstance(t, AxisType) for t in out):
        raise ValueError(f"{fn}: axis_types must be {n} AxisType values, got {axis_types!r}")
    return out


class AbstractMesh(_AxisTypeQueries):
    """Axis names, sizes and types of a mesh, without devices (``jax.sharding.AbstractMesh``)."""

    def __init__(
        self,
        axis_sizes: tuple[int, ...],
        axis_names: tuple[str, ...],
        axis_types: AxisType | tuple[AxisType, ...] | None = None,
        *,
        abstract_device: AbstractDevice | None = None,
    ) -> None:
        self.axis_sizes = tuple(int(s) for s in axis_sizes)
        self.axis_names = tuple(axis_names)
        if len(self.axis_sizes) != len(self.axis_names):
            raise ValueError(f"AbstractMesh: {len(self.axis_sizes)} axis sizes but {len(self.axis_names)} axis names")
        self.axis_types = _axis_types("AbstractMesh", axis_types, len(self.axis_names))
        self.abstract_device = abstract_device

    @property
    def shape(self) -> dict:
        return dict(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self) -> int:
        return math.prod(self.axis_sizes)

    @property
    def empty(self) -> bool:
        return not self.axis_names

    @property
    def shape_tuple(self) -> tuple:
        return tuple(zip(self.axis_names, self.axis_sizes))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbstractMesh) and (self.axis_sizes, self.axis_names, self.axis_types) == (
            other.axis_sizes,
            other.axis_names,
            other.axis_types,
        )

    def __hash__(self) -> int:
        return hash((self.axis_sizes, self.axis_names, self.axis_types))

    def __repr__(self) -> str:
        if self.empty:
            return "AbstractMesh((), axis_types=())"
        shape = ", ".join(f"'{n}': {s}" for n, s in zip(self.axis_names, self.axis_sizes))
        types = "(" + ", ".join(t.name for t in self.axis_types) + ("," if len(self.axis_types) == 1 else "") + ")"
        dev = ""
        if self.abstract_device is not None:
            d = self.abstract_device
            dev = f", device_kind={d.device_kind}, num_cores={d.num_cores}, platform={d.platform}"
        return f"AbstractMesh({shape}, axis_types={types}{dev})"


_EMPTY_ABSTRACT_MESH = AbstractMesh((), ())


def _aval_sharding(ndim: int) -> NamedSharding:
    # the sharding in an abstract value's type, as JAX's: nothing sharded over an empty mesh
    s = _aval_shardings.get(ndim)
    if s is None:
        s = _aval_shardings[ndim] = NamedSharding(_EMPTY_ABSTRACT_MESH, PartitionSpec(*[None] * ndim))
    return s


_aval_shardings: dict[int, NamedSharding] = {}
core.aval_sharding = _aval_sharding
# [mesh set with jax.set_mesh (process-wide, as JAX's set_mesh called as a function)]
_set_mesh_state: list = [None]


class _AbstractMeshCtx(threading.local):
    def __init__(self) -> None:
        self.stack: list = []


_abstract_ctx = _AbstractMeshCtx()


def _empty_mesh() -> Mesh:
    m = object.__new__(Mesh)
    m.devices = np.empty((), dtype=object)
    m.axis_names = ()
    m.axis_types = ()
    return m


def get_mesh() -> Mesh:
    """The concrete mesh set with ``jax.set_mesh`` (or entered with ``with mesh:``); an empty
    mesh (``axis_sizes=()``) when there is none."""
    m = current_mesh()
    return m if m is not None else _empty_mesh()


def get_abstract_mesh() -> AbstractMesh:
    """The abstract mesh in effect: the innermost ``use_abstract_mesh``, else that of the current
    mesh, else an empty ``AbstractMesh``."""
    if _abstract_ctx.stack:
        return _abstract_ctx.stack[-1]
    m = current_mesh()
    return m.abstract_mesh if m is not None else _EMPTY_ABSTRACT_MESH


class set_mesh:  # noqa: N801 - the public name is jax.set_mesh / jax.sharding.set_mesh
    """Make ``mesh`` the current mesh: called, it stays set (process-wide); used as
    ``with jax.set_mesh(mesh):`` it is restored on exit. ``None`` unsets it. Bare
    ``PartitionSpec``s (``reshard``, ``jit`` shardings) then refer to it."""

    def __init__(self, mesh: Mesh | None) -> None:
        if mesh is not None and not isinstance(mesh, Mesh):
            raise ValueError(f"Expected mesh of type `jax.sharding.Mesh`. Got {type(mesh)}")
        self.mesh = mesh
        self.prev = _set_mesh_state[0]
        _set_mesh_state[0] = mesh

    def __enter__(self) -> Mesh | None:
        return self.mesh

    def __exit__(self, *exc: Any) -> None:
        _set_mesh_state[0] = self.prev


@contextlib.contextmanager
def use_abstract_mesh(mesh: AbstractMesh) -> Iterator[AbstractMesh]:
    """Make ``mesh`` the abstract mesh for the block (its size must equal the current one's)."""
    if not isinstance(mesh, AbstractMesh):
        raise ValueError(f"Expected mesh of type `jax.sharding.AbstractMesh`. Got {type(mesh)}")
    prev = get_abstract_mesh()
    if not prev.empty and prev.size != mesh.size:
        raise ValueError(
            f"use_abstract_mesh cannot change the size of the mesh. Got new mesh: {mesh!r} with size={mesh.size} "
            f"and prev mesh: {prev!r} with size={prev.size}"
        )
    _abstract_ctx.stack.append(mesh)
    try:
        yield mesh
    finally:
        _abstract_ctx.stack.pop()


def make_single_device_sharding(device: Device, *, memory_kind: str | None = None) -> SingleDeviceSharding:
    """The sharding placing a whole array on ``device``."""
    return SingleDeviceSharding(device, memory_kind=memory_kind)


def _reshard_leaf(x: Any, s: Any) -> Any:
    from fjax._devices import device_put  # noqa: PLC0415

    if s is None:
        return x
    if isinstance(s, PartitionSpec):
        mesh = current_mesh()
        if mesh is None or mesh.empty:
            raise ValueError(
                f"reshard: the PartitionSpec {s!r} needs a mesh; call it under jax.set_mesh(mesh) or pass "
                "NamedSharding(mesh, spec)"
            )
        s = NamedSharding(mesh, s)
    elif not isinstance(s, (Sharding, SingleDeviceSharding)):
        raise TypeError(f"reshard: out_shardings leaves must be Sharding or PartitionSpec, got {type(s).__name__}")
    if isinstance(x, core.Tracer):
        s.devices_indices_map(tuple(x.shape)) if isinstance(s, NamedSharding) else None  # divisibility
        return x
    return device_put(x, s)


def reshard(xs: Any, out_shardings: Any) -> Any:
    """``xs`` (a pytree) laid out with ``out_shardings`` (a tree prefix of shardings or
    ``PartitionSpec``s, the latter over the current mesh). Values are unchanged; traced values
    (inside ``jit``) pass through after the shapes are checked against the shardings."""
    from fjax import _tree_lifted as tu  # noqa: PLC0415

    if _is_sharding_leaf(out_shardings):
        return tu.tree_map(lambda x: _reshard_leaf(x, out_shardings), xs)
    return tu.tree_map(lambda s, sub: tu.tree_map(lambda x: _reshard_leaf(x, s), sub), out_shardings, xs,
                       is_leaf=_is_sharding_leaf)  # fmt: skip


def _axes_wrapper(f: Callable | None, axes: Any, layout: Callable) -> Any:
    if axes is not None:
        names = (axes,) if isinstance(axes, str) else tuple(axes)
        mesh = current_mesh()
        missing = [n for n in names if mesh is None or n not in mesh.axis_names]
        if missing:
            raise ValueError(f"axes {missing} are not axes of the current mesh (use jax.set_mesh(mesh))")

    def wrap(fun: Callable) -> Callable:
        @functools.wraps(fun)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            return layout(fun, args, kwargs)

        return wrapped

    return wrap if f is None else wrap(f)


def auto_axes(
    f: Callable | None = None, /, *, axes: str | tuple[str, ...] | None = None, out_sharding: Any = None
) -> Any:
    """``f`` run with ``axes`` of the mesh as Auto axes; its outputs laid out with ``out_sharding``
    (``reshard``). fjax has no sharding-in-types, so inside ``f`` nothing changes."""
    if out_sharding is None:
        raise TypeError("auto_axes: out_sharding must be given")

    def layout(fun: Callable, args: tuple, kwargs: dict) -> Any:
        return reshard(fun(*args, **kwargs), out_sharding)

    return _axes_wrapper(f, axes, layout)


def explicit_axes(
    f: Callable | None = None, /, *, axes: str | tuple[str, ...] | None = None, in_sharding: Any = None
) -> Any:
    """``f`` run with ``axes`` of the mesh as Explicit axes; its positional arguments laid out
    with ``in_sharding`` first (``reshard``). fjax has no sharding-in-types, so inside ``f``
    nothing else changes."""
    if in_sharding is None:
        raise TypeError("explicit_axes: in_sharding must be given")

    def layout(fun: Callable, args: tuple, kwargs: dict) -> Any:
        return fun(*reshard(args, tuple(in_sharding) if isinstance(in_sharding, list) else in_sharding), **kwargs)

    return _axes_wrapper(f, axes, layout)
