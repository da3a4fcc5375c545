"""Where arrays live and where computations run: GPU-resident arrays, committed and uncommitted
arrays, and dispatch by device, with JAX's semantics.

- ``GpuArray``: an ``fjax.Array`` whose buffer is in GPU memory (a cupy array, reached only through
  ``fjax.backends.cuda.runtime``). ``np.asarray(x)``, printing, ``float(x)``, ``x.tolist()`` copy
  it to the host (once; the copy is kept, the array being immutable). Its shape, dtype, devices
  and sharding are read without copying.
- Committed arrays (``device_put(x, device)``) pin computations to their device: a computation
  whose inputs include committed arrays runs on their device, moves its uncommitted inputs there
  and returns committed arrays; inputs committed to different devices raise JAX's ValueError
  ("Received incompatible devices for jitted computation"). A computation on uncommitted inputs
  only runs on the default device (``fjax.default_device``, ``jax_default_device``, else the
  default backend's first device) and returns uncommitted arrays. CPU devices follow the same
  rules (``ShardedArray`` with a ``SingleDeviceSharding``).
- On a GPU, ``jit`` hands the jaxpr to the backend registered as ``"cuda"``
  (``fjax.backends.dispatch.compile_for_device``) with the device buffers of its inputs and wraps
  the device buffers it returns; an eager primitive runs the same way, as a jitted jaxpr of that
  one primitive (as JAX does). Nothing falls back to the host: a primitive without a CUDA lowering
  raises the backend's NotImplementedError.

Plain (``type(x) is Array``) arrays are numpy-backed and uncommitted: they report the default
device, and a computation on the GPU uploads them (each immutable plain array once, kept in a
small cache). Multi-device shardings (``NamedSharding``, ``PmapSharding``) keep fjax's host
semantics: they take no part in placement.

``core.placement_hook`` is None while nothing is placed and the default device is the host's
first CPU device, so the CPU-only path costs one check per primitive; the first eager primitive,
``device_put`` onto a device, a ``default_device`` block or a change of ``jax_platforms`` /
``jax_default_device`` re-arms it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Sequence

import numpy as np

from fjax import _devices, core
from fjax.config import config
from fjax.core import Array
from fjax.dtypes import float0
from fjax.interpreters import mlir

__all__ = ["GpuArray", "put", "rearm"]


def runtime() -> Any:
    """The CUDA runtime module (``fjax.backends.cuda.runtime``; tests stand a double in by patching
    its functions). Imported on first use (a CPU-only process never imports it), then kept: an
    import statement costs a few hundred ns on every call of a GPU dispatch."""
    rt = _runtime_module[0]
    if rt is None:
        from fjax.backends.cuda import runtime as rt  # noqa: PLC0415

        _runtime_module[0] = rt
    return rt


_runtime_module: list = [None]


def _dispatch() -> Any:
    """``fjax.backends.dispatch`` (imported on first use, then kept)."""
    d = _dispatch_module[0]
    if d is None:
        from fjax.backends import dispatch as d  # noqa: PLC0415

        _dispatch_module[0] = d
    return d


_dispatch_module: list = [None]


# ---------------------------------------------------------------------------------------------
# arrays in GPU memory


class GpuArray(Array):
    """An array whose buffer is in the memory of a GPU (``_buf``, a cupy array).

    Reading values (``np.asarray``, ``repr``, ``float``, ``item``, indexing with Python ints in
    numpy code) copies the buffer to the host once; computations never do (they run on the GPU)."""

    __slots__ = ("_buf", "_device", "_committed", "_host", "_dtype")

    def __init__(self, buf: Any, weak_type: bool, device: Any, committed: bool, dtype: Any = None):
        # Array.__init__ would freeze a numpy value; the buffer is device memory (a bfloat16
        # array's buffer holds its bits as uint16: cupy has no bfloat16)
        self._buf = buf
        self.weak_type = bool(weak_type)
        self._device = device
        self._committed = bool(committed)
        self._host = None
        self._dtype = np.dtype(buf.dtype if dtype is None else dtype)

    @property
    def _value(self) -> np.ndarray:  # type: ignore[override]
        """The host copy of the buffer (made on first read, then kept, read-only)."""
        h = self._host
        if h is None:
            with runtime().device(self._device.local_hardware_id):
                h = np.asarray(runtime().to_host(self._buf))
            if h.dtype != self._dtype:
                h = h.view(self._dtype)
            if h.flags.writeable:
                h.flags.writeable = False
            self._host = h
        return h

    # metadata, read from the device buffer without a copy
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._buf.shape)

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self._buf.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self._buf.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def aval(self) -> core.ShapedArray:
        return core.ShapedArray(self.shape, self.dtype, self.weak_type)

    # placement
    @property
    def committed(self) -> bool:
        return self._committed

    @property
    def sharding(self) -> Any:
        return _devices.sharding_for(self._device)

    def devices(self) -> set:
        return {self._device}

    @property
    def device(self) -> Any:
        return self._device

    def platform(self) -> str:
        return self._device.platform

    @property
    def addressable_shards(self) -> list:
        from fjax.sharding import Shard  # noqa: PLC0415

        return [Shard(self._device, tuple(slice(None) for _ in self.shape), self)]

    global_shards = addressable_shards

    def block_until_ready(self) -> GpuArray:
        with runtime().device(self._device.local_hardware_id):
            runtime().synchronize()
        return self

    def is_ready(self) -> bool:
        return True

    def copy(self) -> GpuArray:
        # immutable: a copy may share the buffer
        return GpuArray(self._buf, self.weak_type, self._device, self._committed, self._dtype)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        # rows are sliced on the device (x[i] is a primitive like any other)
        return (self[i] for i in range(self.shape[0]))

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    @property
    def __cuda_array_interface__(self) -> dict:
        # zero-copy interop (cupy.asarray(x), numba.cuda, torch.as_tensor) as JAX's GPU arrays
        return self._buf.__cuda_array_interface__

    def __reduce__(self) -> tuple:
        # pickles as a host array (unpickled onto the host, as JAX unpickles onto the default device)
        return (core._rebuild_array, (np.array(self._value), self.weak_type))


_FLOAT0 = np.dtype(float0)


def _c_order(a: np.ndarray) -> np.ndarray:
    # not np.ascontiguousarray: it turns a 0-d array into a 1-d one
    a = np.asarray(a)
    return a if a.flags.c_contiguous else np.array(a, order="C")


def _to_gpu(arr: Array, device: Any) -> Any:
    """A device buffer on ``device`` with the value of ``arr`` (no copy if it is already there);
    a float0 value (no data) stays a host array of its shape."""
    if np.dtype(arr.dtype) == _FLOAT0:
        return np.zeros(np.shape(arr), _FLOAT0)
    if isinstance(arr, GpuArray):
        if arr._device == device:
            return arr._buf
        host = arr._value  # another GPU: through the host (peer copies are not wired)
    else:
        host = arr._value
    rt = runtime()
    with rt.device(device.local_hardware_id):
        return rt.to_device(_c_order(host))


def put(arr: Array, device: Any, committed: bool) -> Array:
    """``arr`` placed on ``device`` (``device_put``): a ``GpuArray`` for a GPU, a ``ShardedArray``
    with a ``SingleDeviceSharding`` for a committed CPU device."""
    _note_placed()
    if device.platform == "gpu":
        return GpuArray(_to_gpu(arr, device), arr.weak_type, device, committed, arr.dtype)
    from fjax.sharding import ShardedArray  # noqa: PLC0415

    return ShardedArray(arr._value, arr.weak_type, _devices.sharding_for(device), committed)


# ---------------------------------------------------------------------------------------------
# which device a computation runs on


def _placement_of(x: Any) -> tuple | None:
    """(device, committed) of an argument that is placed; None for plain values."""
    t = type(x)
    if t is Array:
        return None
    if t is GpuArray:
        return (x._device, x._committed)
    sh = getattr(x, "_sharding", None) if isinstance(x, Array) else None
    if isinstance(sh, _devices.SingleDeviceSharding):
        return (sh._device, x._committed)
    return None


def _describe(name: str, i: int, x: Any, d: Any) -> str:
    aval = core.get_aval(x)
    return (
        f"argument {i} of {name} with shape {aval.str_short()} and device ids [{d.id}] on platform {d.platform.upper()}"
    )


def target_device(args: Sequence[Any], name: str) -> tuple | None:
    """(device, committed) a computation on ``args`` runs on; None for the host's default case
    (nothing committed and the default device is the host's first CPU device)."""
    committed_dev = None
    first = -1
    for i, x in enumerate(args):
        p = _placement_of(x)
        if p is None or not p[1]:
            continue
        if committed_dev is None:
            committed_dev, first = p[0], i
        elif p[0] is not committed_dev and p[0] != committed_dev:
            raise ValueError(
                "Received incompatible devices for jitted computation. Got "
                f"{_describe(name, first, args[first], committed_dev)} and {_describe(name, i, x, p[0])}"
            )
    if committed_dev is not None:
        return committed_dev, True
    d = _devices.get_default_device()
    if d is _devices.host_default_device() or (d.platform == "cpu" and d.id == _devices.host_default_device().id):
        return None
    return d, False


# ---------------------------------------------------------------------------------------------
# the hook: eager primitives and jit calls


_state = {"placed": False}


def _note_placed() -> None:
    _state["placed"] = True
    core.placement_hook = _hook


def rearm(*_: Any) -> None:
    """Route computations through ``_hook`` again (the default device may have changed)."""
    core.placement_hook = _hook


def _on_config(name: str, value: Any) -> None:
    if name in ("jax_platforms", "jax_default_device"):
        rearm()


if _on_config not in config._listeners:
    config._listeners.append(_on_config)


_on_host = threading.local()  # .active: this thread is computing on a CPU device for the hook


def _hook(prim: core.Primitive, args: Sequence[Any], params: dict) -> Any:
    """Run ``prim`` where its arguments are placed; ``NOT_HANDLED`` for the plain host case."""
    if getattr(_on_host, "active", False):
        # inside a computation placed on a CPU device: its inner primitives (host steps of the
        # compiled program, eager evaluation of its jaxpr) stay there, whatever the default device
        return core.NOT_HANDLED
    name = params["name"] if prim.name == "jit" else prim.name
    target = target_device(args, name)
    if target is None:
        if not _state["placed"] and not _default_stack_active():
            # nothing placed anywhere and the host is the default: stop asking until that changes
            core.placement_hook = None
        return core.NOT_HANDLED
    device, committed = target
    if device.platform == "gpu":
        return _run_on_gpu(prim, args, params, device, committed)
    # a CPU device: compute on the host, place the results on it
    _on_host.active = True
    try:
        out = core.eval_primitive(prim, args, params)
    finally:
        _on_host.active = False
    from fjax.sharding import ShardedArray  # noqa: PLC0415

    sh = _devices.sharding_for(device)
    if prim.multiple_results:
        return [ShardedArray(o._value, o.weak_type, sh, committed) for o in out]
    return ShardedArray(out._value, out.weak_type, sh, committed)


def _default_stack_active() -> bool:
    # any thread's default_device block, not only this one's: the hook is global
    return _devices._default_blocks[0] > 0 or config.jax_default_device is not None


# ---------------------------------------------------------------------------------------------
# running on a GPU

# eager primitives as one-primitive jaxprs: (prim, avals, params, x64) -> (closed, consts)
_prim_jaxprs: OrderedDict = OrderedDict()
_MAX_PRIM_JAXPRS = 4096
_lock = threading.Lock()


def _freeze(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(a) for a in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(a)) for k, a in v.items()))
    hash(v)
    return v


def _prim_jaxpr(prim: core.Primitive, args: Sequence[Any], params: dict) -> tuple:
    avals = tuple(core.get_aval(x) for x in args)
    try:
        key = (prim, avals, _freeze(params), config.jax_enable_x64)
    except TypeError:  # an unhashable parameter (an array): trace without caching
        key = None
    if key is not None:
        hit = _prim_jaxprs.get(key)
        if hit is not None:
            return hit
    from fjax.jit import trace_flat  # noqa: PLC0415

    def one(*xs: Any) -> list:
        out = prim.bind(*xs, **params)
        return list(out) if prim.multiple_results else [out]

    entry = trace_flat(one, list(avals), prim.name)
    if key is not None:
        with _lock:
            _prim_jaxprs[key] = entry
            if len(_prim_jaxprs) > _MAX_PRIM_JAXPRS:
                _prim_jaxprs.popitem(last=False)
    return entry


# host arrays uploaded for a GPU: id -> (array, device, buffer); plain Arrays are immutable, so an
# entry stays right while it holds the array (jit constants and closed-over values upload once)
_uploads: OrderedDict = OrderedDict()
_MAX_UPLOAD_BYTES = 1 << 20  # values up to this size are kept: constants, scalars, closed-over biases
_MAX_UPLOADS_TOTAL = 64 << 20  # the cache holds at most this much device memory
_upload_bytes = [0]


def _buffer_for(x: Any, device: Any) -> Any:
    if type(x) is GpuArray and (x._device is device or x._device == device):
        return x._buf
    if type(x) is Array and x._value.nbytes <= _MAX_UPLOAD_BYTES:
        hit = _uploads.get(id(x))
        if hit is not None and hit[0] is x and hit[1] == device:
            _uploads.move_to_end(id(x))
            return hit[2]
        buf = _to_gpu(x, device)
        with _lock:
            old = _uploads.pop(id(x), None)
            if old is not None:
                _upload_bytes[0] -= old[0]._value.nbytes
            _uploads[id(x)] = (x, device, buf)
            _upload_bytes[0] += x._value.nbytes
            while _upload_bytes[0] > _MAX_UPLOADS_TOTAL and _uploads:
                _upload_bytes[0] -= _uploads.popitem(last=False)[1][0]._value.nbytes
        return buf
    arr = x if isinstance(x, Array) else core.to_array(x)
    return _to_gpu(arr, device)


def _run_on_gpu(prim: core.Primitive, args: Sequence[Any], params: dict, device: Any, committed: bool) -> Any:
    if prim.name == "jit":
        closed, consts = params["jaxpr"], ()
    else:
        closed, consts = _prim_jaxpr(prim, args, params)
    # primitives with a ``mlir.lower_fun`` rule (libraries' own, ``complex_p``) run as their jaxprs
    closed = mlir.expand(closed, own=False)
    rt = runtime()
    with rt.device(device.local_hardware_id):
        bufs = [_buffer_for(x, device) for x in consts]
        bufs += [_buffer_for(x, device) for x in args]
        fn = _dispatch().compile_for_device(closed, "cuda", rt)
        outs = fn(*bufs) if fn is not None else _trivial(closed.jaxpr, bufs, device)
    # float0 values (the tangent/cotangent type of integers and bools) hold no data: host numpy
    # zeros, as JAX returns them, never device buffers (cupy has no such dtype)
    res = [
        np.zeros(a.shape, _FLOAT0)
        if a.dtype.kind == "V" and a.dtype == _FLOAT0
        else GpuArray(b, a.weak_type, device, committed, a.dtype)
        for b, a in zip(outs, closed.out_avals)
    ]
    if prim.name != "jit" and not prim.multiple_results:
        return res[0]
    return res


def _trivial(jaxpr: core.Jaxpr, bufs: list, device: Any) -> list:
    """The outputs of a jaxpr that computes nothing (each is an input, a literal, or one of those
    passed through nested ``jit``/``remat``): no kernel, buffers shared (arrays are immutable)."""
    env = dict(zip(list(jaxpr.constvars) + list(jaxpr.invars), bufs))

    def read(v: Any) -> Any:
        if isinstance(v, core.Literal):
            return _to_gpu(core.to_array(np.asarray(v.val, dtype=v.aval.dtype)), device)
        return env[v]

    for eqn in jaxpr.eqns:
        inner = eqn.params.get("jaxpr")
        if eqn.primitive.name not in ("jit", "remat2") or inner is None:
            raise NotImplementedError(f"fjax GPU dispatch: {eqn.primitive.name} was not compiled by the CUDA backend")
        inner_jaxpr = inner.jaxpr if isinstance(inner, core.ClosedJaxpr) else inner
        inner_consts = list(inner.consts) if isinstance(inner, core.ClosedJaxpr) else []
        ins = [_to_gpu(core.to_array(c), device) for c in inner_consts] + [read(v) for v in eqn.invars]
        for v, b in zip(eqn.outvars, _trivial(inner_jaxpr, ins, device)):
            env[v] = b
    return [read(v) for v in jaxpr.outvars]


def _clear(disk: bool = False) -> None:
    with _lock:
        _prim_jaxprs.clear()
        _uploads.clear()
        _upload_bytes[0] = 0


def _install() -> None:
    import importlib  # noqa: PLC0415

    jit_mod = importlib.import_module("fjax.jit")  # fjax.jit the module, not the function

    if _clear not in jit_mod.cache_clearers:
        jit_mod.cache_clearers.append(_clear)
    # the first eager primitive resolves the platforms (probing for a GPU) and disarms the hook
    # when the host is the default and nothing is placed
    core.placement_hook = _hook


_install()
